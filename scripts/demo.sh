#!/usr/bin/env bash
# The body of `make demo`: the source documents' programs, run in trace mode.
#
# The Makefile builds the examples first (`cargo build --release -p evloop --examples`); this script
# only runs them. Each run merges the trace (stderr) with the program's own prints (stdout) in the
# order they happen, so a `print` shows up between the task steps that produced it.
# Needs no terminal and no stdin: it runs the same under CI=true.
set -euo pipefail

cd "$(dirname "$0")/.."
examples_dir="${CARGO_TARGET_DIR:-target}/release/examples"

# run_example NAME BANNER_LINE...: prints the banner, then runs the example with EVLOOP_TRACE=1.
run_example() {
    local name="$1"
    shift
    local bin="$examples_dir/$name"
    if [[ ! -x "$bin" ]]; then
        echo "demo: $bin is missing; build it with: cargo build --release -p evloop --examples" >&2
        exit 1
    fi
    echo
    echo "=================================================================================="
    echo "== $name"
    local line
    for line in "$@"; do
        echo "== $line"
    done
    echo "=================================================================================="
    EVLOOP_TRACE=1 "$bin" </dev/null 2>&1
}

echo "evloop demo: each program below mirrors one from the source notes (docs/01-the-event-loop.md"
echo "walks through these traces). '[iter N]' lines are loop iterations: phases 1-4 in one line,"
echo "then indented lines for what happened and what phase 5 ran, then '[iter N] end' with the time"
echo "the iteration was busy. Unindented lines are the program's own output."

run_example seed000_run \
    "Seed 000's asyncio.run(f()): f sleeps (500 ms here), then returns 10." \
    "Look for: Task-1's first step parking on a timer, one blocking poll with a nanosecond" \
    "timeout, '[iter 2] ... expired 1 timer -> wake Task-1', then the step that returns 10."

run_example seed002_wait \
    "Seed 002's opening program: tasks n1 and n2 sleep 100/200 ms; main waits for both." \
    "Look for: 'Task-1 -> pending on Promise#1' (wait_all's waiter), each 'run done callback'" \
    "one iteration after its task is done, and the last one's 'Promise#1 set_result' waking Task-1."

run_example seed002_await_task \
    "Seed 002 section 6, 'await task': main awaits the task Task-func, which returns 1." \
    "Look for: 'Task-1 -> pending on Task-func', then 'Task-func -> done'" \
    "followed at once by 'wake Task-1', and Task-1's next step printing 'Result: 1'."

run_example seed002_await_coro \
    "Seed 002 section 6, 'await coro': main awaits intermediate(), which awaits Task-func." \
    "Look for: the same trace as await_task. intermediate() never appears: awaiting a plain" \
    "async fn runs its body inside Task-1's step, so Task-1 itself parks on Task-func."

run_example seed002_await_future \
    "Seed 002 section 6, 'await future': main awaits a promise that Task-set_after resolves." \
    "Look for: 'Task-1 -> pending on Promise#1', then inside Task-set_after's step" \
    "'wake Task-1' and 'Promise#1 set_result -> woke 1 awaiter', and Task-1 printing '... world'."

# ------------------------------------------------------------------------------------------------
# TODO(echo server under load): the seed 001 echo server, driven by a load client, goes here.
# ------------------------------------------------------------------------------------------------

echo
echo "demo: done"
