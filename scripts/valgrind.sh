#!/usr/bin/env bash
# make valgrind: every test binary of the workspace under valgrind's memcheck. A binary fails
# on any memcheck error (invalid read or write, use of uninitialised memory, bad free, ...) and
# on any definitely lost block (--errors-for-leak-kinds=definite); "possibly lost" and
# "still reachable" blocks are process-wide tables that live until exit and are not errors.
#
# Binaries run in parallel (VALGRIND_JOBS, default: the number of CPUs), each with the package
# directory as its working directory, as `cargo test` would run it. Child processes the tests
# start (sh, cat, and the test binaries re-run as children) run natively: valgrind does not
# follow them. Logs go to target/valgrind/<binary>.log; a failure prints its log.
#
# What is skipped, and why (the only skips):
# - valgrind 3.19 does not know pidfd_open (syscall 434) and fails it with ENOSYS: the runtime
#   then watches children with a waiter thread each (runtime/src/os/process/watcher.rs), so the
#   tests that spawn children through the runtime run here too, on that path. Skipped: the
#   syscall layer's `processes`, the tests of the pidfd wrappers themselves (pidfd_open,
#   waitid(P_PIDFD), pidfd_send_signal), which cannot be called here at all; the same layer's
#   `processes_by_pid` runs the waiter thread's calls (waitid(P_PID), kill) under memcheck.
# - valgrind 3.19 does not know epoll_pwait2 (syscall 441) either: under valgrind the loop takes
#   its epoll_wait fallback, as it does on kernels before 5.11 (the warning in the logs).
# - book_traces: its programs run as child processes, outside valgrind and under strace, so
#   valgrind checks nothing there; and the descriptor valgrind keeps open is inherited by them,
#   which shifts every fd number in the quoted traces.
# - fiber::switch::tests::valgrind_requests_are_no_ops_natively asserts what it says: natively.
# - In the `sim` binary, the stream suites it reruns on the simulated kernel (net_streams.rs and
#   io/{tcp,stream_closing,prop_stream_reader}.rs, modules contract_streams, contract_tcp,
#   contract_stream_closing, contract_prop_stream_reader): the same tests run under memcheck in
#   their own binaries (net_streams, io), and under memcheck the sim binary spends 9 of its 10
#   minutes in them; the behaviour contracts and every simulation test of the binary still run.
set -euo pipefail
cd "$(dirname "$0")/.."

CARGO=${CARGO:-cargo}
JOBS=${VALGRIND_JOBS:-$(nproc)}

command -v valgrind >/dev/null || {
    echo "valgrind: not installed (apt-get install valgrind); nothing was run" >&2
    exit 1
}

# target name -> skipped tests (exact names, space-separated), or "*" for the whole binary.
declare -A SKIP=(
    [processes]="*"
    [book_traces]="*"
    [evloop]="fiber::switch::tests::valgrind_requests_are_no_ops_natively"
)
# target name -> skipped tests by name part (libtest's --skip without --exact), for a binary
# with no exact skips.
declare -A SKIP_LIKE=(
    [sim]="contract_streams:: contract_tcp:: contract_stream_closing:: contract_prop_stream_reader::"
)
out=${CARGO_TARGET_DIR:-target}
case $out in /*) ;; *) out="$PWD/$out" ;; esac
out="$out/valgrind"
rm -rf "$out"
mkdir -p "$out"

echo "valgrind: building the test binaries"
$CARGO test --workspace --tests --no-run --message-format=json 2>"$out/build.stderr" >"$out/build.json" || {
    cat "$out/build.stderr" >&2
    exit 1
}
# One line per test binary: its package directory, target name and path.
grep '"reason":"compiler-artifact"' "$out/build.json" | grep '"test":true' | grep '"executable":"' |
    sed -E 's/.*"manifest_path":"([^"]*)\/Cargo.toml".*"target":\{[^}]*"name":"([^"]*)".*"executable":"([^"]*)".*/\1 \2 \3/' |
    sort -u >"$out/binaries"

# As `cargo test` does: proc-macro crates' test binaries link the toolchain's libstd dynamically.
export LD_LIBRARY_PATH="$(rustc --print target-libdir)${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"

run_one() {
    local dir=$1 name=$2 exe=$3
    local args=() skip=${SKIP[$name]:-}
    if [ "$skip" = "*" ]; then
        echo "skip $name (whole binary, see scripts/valgrind.sh)" >"$out/$name.result"
        return 0
    fi
    for t in $skip; do args+=(--skip "$t"); done
    [ ${#args[@]} = 0 ] || args+=(--exact)
    for t in ${SKIP_LIKE[$name]:-}; do args+=(--skip "$t"); done
    local start end rc=0
    start=$(date +%s)
    (cd "$dir" && valgrind --tool=memcheck --error-exitcode=99 --leak-check=full \
        --show-leak-kinds=definite --errors-for-leak-kinds=definite \
        --log-file="$out/$name.log" "$exe" ${args[@]+"${args[@]}"} >"$out/$name.out" 2>&1) || rc=$?
    end=$(date +%s)
    if [ $rc = 0 ]; then
        echo "ok   $name $((end - start)) s" >"$out/$name.result"
    else
        echo "FAIL $name $((end - start)) s (exit $rc: $([ $rc = 99 ] && echo memcheck errors || echo tests failed))" >"$out/$name.result"
    fi
}

started=$(date +%s)
running=0
while read -r dir name exe; do
    run_one "$dir" "$name" "$exe" &
    running=$((running + 1))
    if [ $running -ge "$JOBS" ]; then
        wait -n || true
        running=$((running - 1))
    fi
done <"$out/binaries"
wait

status=0
cat "$out"/*.result | sort -k1,1 -k2,2
for r in "$out"/*.result; do
    if grep -q '^FAIL' "$r"; then
        status=1
        name=$(basename "$r" .result)
        echo "=== $name: test output (tail)"
        tail -n 40 "$out/$name.out"
        echo "=== $name: valgrind log"
        grep -v 'unhandled amd64-linux syscall\|write your own handler\|README_MISSING_SYSCALL\|Nevertheless we consider\|valgrind.org/support' "$out/$name.log" | head -n 200
    fi
done
count() { cat "$out"/*.result | grep -c "^$1" || true; }
echo "valgrind: $(count ok) binaries clean, $(count skip) skipped, $(count FAIL) failed, in $(($(date +%s) - started)) s"
exit $status
