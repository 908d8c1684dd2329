#!/usr/bin/env bash
# make doc-coverage: rustdoc's own count of the evloop crate's public items that are documented
# and that carry an example (`--show-coverage`, a nightly-only rustdoc flag), printed as rustdoc
# prints it. Fails when fewer than MIN_EXAMPLES percent of the items rustdoc expects an example on
# have one. Installs a nightly toolchain through rustup when it is missing.
set -euo pipefail
cd "$(dirname "$0")/.."
MIN_EXAMPLES=${MIN_EXAMPLES:-90}
CARGO=${CARGO:-cargo}
TARGET=${CARGO_TARGET_DIR:-target}

if ! rustup run nightly rustdoc --version >/dev/null 2>&1; then
    echo "doc-coverage: installing a nightly toolchain (rustdoc --show-coverage is nightly-only)"
    rustup toolchain install nightly --profile minimal
fi

rm -f "$TARGET/doc/evloop.txt"
out=$("$CARGO" +nightly rustdoc -q -p evloop -- -Z unstable-options --show-coverage 2>&1)
# Newer rustdoc writes the table to target/doc/<crate>.txt, older ones print it.
if [ -f "$TARGET/doc/evloop.txt" ]; then
    table=$(cat "$TARGET/doc/evloop.txt")
else
    table=$out
fi
echo "$table"

# The Total row: | Total | documented | pct | examples | pct |. A file whose items need no example
# (only fields, variants, constants) shows 0/0 as 0.0%; the total is the honest ratio.
total=$(echo "$table" | awk -F'|' '$2 ~ /Total/ { gsub(/[ %]/, "", $6); print $6 }')
if [ -z "$total" ]; then
    echo "doc-coverage: no Total row in rustdoc's output" >&2
    echo "$out" >&2
    exit 1
fi
if awk -v t="$total" -v m="$MIN_EXAMPLES" 'BEGIN { exit !(t + 0 < m + 0) }'; then
    echo "doc-coverage: $total% of the items rustdoc counts have an example; at least $MIN_EXAMPLES% required" >&2
    exit 1
fi
echo "doc-coverage: $total% of the items rustdoc counts have an example (at least $MIN_EXAMPLES% required)"
