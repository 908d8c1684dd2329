#!/usr/bin/env bash
# make minimal-versions: the declared minimum of every dependency, and the declared rust-version,
# must be true. A user whose lockfile already holds an older libc than ours builds against that
# one; `libc = "0.2"` once let 0.2.153 in, which lacks `SI_USER` (issue 19 item 13).
#
# 1. A copy of the workspace (sources and manifests, without target/ and .git/) in
#    target/minimal-versions/src, so the repository's Cargo.lock is never touched.
# 2. There `cargo +nightly update -Z direct-minimal-versions` resolves every dependency the
#    manifests name to the lowest version they allow (their own dependencies stay at the newest
#    compatible, as a user's resolver would pick them); then every crate is checked with every
#    feature and every target: the runtime crates (evloop-syscalls, evloop-timers, evloop-macros,
#    evloop) and the tests crate, whose dev-dependencies (tokio, smol, proptest) are declared
#    with true minimums too.
# 3. The runtime crates are checked with the declared rust-version (the workspace's
#    `rust-version`, read from Cargo.toml) against the repository's own lockfile.
# The nightly and the rust-version toolchains install through rustup when missing.
set -euo pipefail
cd "$(dirname "$0")/.."

CARGO=${CARGO:-cargo}
ROOT=$(pwd)
WORK=${CARGO_TARGET_DIR:-$ROOT/target}/minimal-versions
MSRV=$(sed -n 's/^rust-version = "\(.*\)"/\1/p' Cargo.toml | head -n 1)
RUNTIME_CRATES=(-p evloop-syscalls -p evloop-timers -p evloop-macros -p evloop)

have_toolchain() { rustup run "$1" cargo --version >/dev/null 2>&1; }
have_toolchain nightly || rustup toolchain install nightly --profile minimal
have_toolchain "$MSRV" || rustup toolchain install "$MSRV" --profile minimal

echo "minimal-versions: copying the workspace to $WORK/src"
rm -rf "$WORK/src"
mkdir -p "$WORK/src"
tar -c --exclude=./target --exclude=./.git --exclude=./.bench-venv . | tar -x -C "$WORK/src"

cd "$WORK/src"
echo "minimal-versions: resolving every direct dependency to its declared minimum"
"$CARGO" +nightly update -Z direct-minimal-versions
grep -A1 -E '^name = "(libc|static_assertions|tokio|smol|proptest)"$' Cargo.lock | grep -v '^--$' | paste - - \
    | sed 's/name = "\(.*\)"\tversion = "\(.*\)"/minimal-versions:   \1 \2/'
CARGO_TARGET_DIR="$WORK/target" "$CARGO" check --workspace --all-targets --all-features
echo "minimal-versions: every crate builds with its dependencies at their declared minimums"

cd "$ROOT"
echo "minimal-versions: the runtime crates with Rust $MSRV (the declared rust-version)"
CARGO_TARGET_DIR="$WORK/target-msrv" "$CARGO" "+$MSRV" check "${RUNTIME_CRATES[@]}" --all-features --lib
echo "minimal-versions: the runtime crates build with Rust $MSRV"
