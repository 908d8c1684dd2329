#!/usr/bin/env bash
# The body of `make demo`: the seed programs (Rust versions of the short Python asyncio programs in the
# study notes evloop's design was worked out from) run in trace mode, then two OS-integration
# programs (children connected through the loop, a clean shutdown on Ctrl-C), then seed 001's echo
# server driven by a client and put under a few seconds of load (without trace).
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

echo "evloop demo: each seed program below is the Rust version of a short Python asyncio program from"
echo "the study notes evloop's design was worked out from (docs/01-the-event-loop.md"
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
# OS integration (docs/04-signals-and-processes.md): two child processes connected through the
# loop, and a server that shuts down on a signal. No trace mode: the pipeline's trace is long
# (run it yourself with EVLOOP_TRACE=1); the programs' own lines say what happened.
# ------------------------------------------------------------------------------------------------

# banner TITLE LINE...: the same banner run_example prints.
banner() {
    echo
    echo "=================================================================================="
    local line
    for line in "$@"; do
        echo "== $line"
    done
    echo "=================================================================================="
}

# run_untraced NAME ARGS...: runs the example without trace mode (at most 10 s) and fails the demo
# if it does not exit with status 0.
run_untraced() {
    local name="$1"
    shift
    local bin="$examples_dir/$name"
    if [[ ! -x "$bin" ]]; then
        echo "demo: $bin is missing; build it with: cargo build --release -p evloop --examples" >&2
        exit 1
    fi
    local rc=0
    timeout 10 "$bin" "$@" </dev/null 2>&1 || rc=$?
    echo "($name exited with status $rc)"
    if [[ $rc -ne 0 ]]; then
        echo "demo: $name failed" >&2
        exit 1
    fi
}

banner "pipeline_ls_sort runtime/src" \
    "The shell's 'ls -1 runtime/src | sort -r' with evloop as the pipe in the middle: each child" \
    "has its own pipes to this process; one task copies ls's stdout into sort's stdin and closes" \
    "it at end of file, another reads sort's stdout. Each child is watched through a pidfd and" \
    "reaped with one waitid: no SIGCHLD handler, no thread per child." \
    "Look for: the file names in reverse order, and both children's 'exit code 0'."
run_untraced pipeline_ls_sort runtime/src

banner "graceful_shutdown --self-test" \
    "An echo server that stops on Ctrl-C (SIGINT) or SIGTERM, whichever comes first. The signal" \
    "handler only writes to an eventfd that the loop polls; the task awaiting the signal wakes." \
    "--self-test plays the outside world: a client echoes a line, then the process sends itself" \
    "SIGINT after 200 ms." \
    "Look for: 'SIGINT (Ctrl-C) received', the new connection refused (the listener is closed)," \
    "the open connection finishing within the grace period, and exit status 0."
run_untraced graceful_shutdown --self-test

# ------------------------------------------------------------------------------------------------
# Seed 001's upper-casing echo server, written three ways, driven by the echo_load client.
#
# No trace mode here: a server under load would print millions of lines. Each server runs in the
# background on a free port with its stdin on a fifo that this script holds open; closing the fifo
# is how the script asks it to exit (the servers stop at end of stdin), `--seconds` bounds each one
# even if this script is killed, and the EXIT trap kills whatever is still running.
# ------------------------------------------------------------------------------------------------

tmp="$(mktemp -d "${TMPDIR:-/tmp}/evloop-demo.XXXXXX")"
server_pid=""
server_stdin=""

stop_server() {
    if [[ -n "$server_stdin" ]]; then
        exec {server_stdin}>&-
        server_stdin=""
    fi
    if [[ -n "$server_pid" ]]; then
        local i
        for i in $(seq 40); do
            kill -0 "$server_pid" 2>/dev/null || break
            sleep 0.05
        done
        kill "$server_pid" 2>/dev/null || true
        wait "$server_pid" 2>/dev/null || true
        server_pid=""
    fi
}

cleanup() {
    stop_server
    rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# start_server NAME ARGS...: starts the example in the background and waits (up to 5 s) for its
# `listening on 127.0.0.1:PORT` line; sets $port and $server_pid.
start_server() {
    local name="$1"
    shift
    local bin="$examples_dir/$name"
    if [[ ! -x "$bin" ]]; then
        echo "demo: $bin is missing; build it with: cargo build --release -p evloop --examples" >&2
        exit 1
    fi
    rm -f "$tmp/stdin" "$tmp/out"
    mkfifo "$tmp/stdin"
    "$bin" "$@" <"$tmp/stdin" >"$tmp/out" &
    server_pid=$!
    exec {server_stdin}>"$tmp/stdin" # the server's open of the fifo returns once we open it too
    port=""
    local i
    for i in $(seq 100); do
        port="$(sed -n 's/^listening on 127\.0\.0\.1:\([0-9][0-9]*\)$/\1/p' "$tmp/out")"
        [[ -n "$port" ]] && return 0
        if ! kill -0 "$server_pid" 2>/dev/null; then
            break
        fi
        sleep 0.05
    done
    echo "demo: $name did not print 'listening on 127.0.0.1:PORT'" >&2
    exit 1
}

# cpu_us PID: user + system CPU time the process has used so far, in microseconds.
cpu_us() {
    local stat
    stat="$(<"/proc/$1/stat")"
    stat="${stat##*) }" # fields from the 3rd on (the command name may contain spaces)
    local -a f
    read -r -a f <<<"$stat"
    echo $(((f[11] + f[12]) * 1000000 / $(getconf CLK_TCK)))
}

load="$examples_dir/echo_load"
if [[ ! -x "$load" ]]; then
    echo "demo: $load is missing; build it with: cargo build --release -p evloop --examples" >&2
    exit 1
fi

echo
echo "=================================================================================="
echo "== seed001_echo_streams --once, and echo_load --lines 3"
echo "== Seed 001's program: a TCP server that upper-cases each line it reads and sends it"
echo "== back, here on asyncio's streams (start_server, readline, write, drain)."
echo "== Look for: each line coming back upper-cased, and the server exiting on its own once"
echo "== its one client has gone (--once)."
echo "=================================================================================="
start_server seed001_echo_streams --once --seconds 20
cat "$tmp/out"
"$load" --addr "127.0.0.1:$port" --lines 3
for i in $(seq 40); do
    kill -0 "$server_pid" 2>/dev/null || break
    sleep 0.05
done
if kill -0 "$server_pid" 2>/dev/null; then
    echo "demo: seed001_echo_streams --once did not exit after its client left" >&2
    exit 1
fi
status=0
wait "$server_pid" || status=$?
echo "(the server exited with status $status)"
server_pid=""
exec {server_stdin}>&-
server_stdin=""

conns=50
size=64
seconds=3
echo
echo "=================================================================================="
echo "== The same server three ways under load: echo_load with $conns connections, each"
echo "== sending a $size-byte line and waiting for the reply, for $seconds s."
echo "== streams: a task per connection, readline + write + drain (asyncio.start_server)."
echo "== protocol: no tasks, a Protocol's data_received called from the reactor's events"
echo "==           (loop.create_server)."
echo "== sock: a task per connection on a raw socket, sock_recv + sock_sendall (the seed's shape)."
echo "== Look for: round trips/s, and the server's CPU time per round trip (read from"
echo "== /proc/PID/stat, in clock ticks). Client and server share this machine and most of a"
echo "== round trip is the kernel's loopback TCP, so the three land close together; the CPU"
echo "== figure does not depend on how fast the client is. docs/02-the-reactor.md counts the"
echo "== system calls behind each round trip."
echo "=================================================================================="
summary=()
for kind in streams protocol sock; do
    start_server "seed001_echo_$kind" --seconds 30
    before="$(cpu_us "$server_pid")"
    result="$("$load" --addr "127.0.0.1:$port" --conns "$conns" --size "$size" --seconds "$seconds")"
    after="$(cpu_us "$server_pid")"
    stop_server
    echo "$kind: $result"
    trips="$(sed -n 's/.* \([0-9][0-9]*\) round trips, .*/\1/p' <<<"$result")"
    rate="$(sed -n 's/.* \([0-9][0-9]*\) round trips\/s.*/\1/p' <<<"$result")"
    p50="$(sed -n 's/.*p50 \([0-9.]*\) us.*/\1/p' <<<"$result")"
    p99="$(sed -n 's/.*p99 \([0-9.]*\) us.*/\1/p' <<<"$result")"
    per_trip="$(awk -v c="$((after - before))" -v n="$trips" 'BEGIN { printf "%.2f", (n > 0 ? c / n : 0) }')"
    summary+=("$(printf '%-10s %14s %20s us %12s us %9s us' "$kind" "$rate" "$per_trip" "$p50" "$p99")")
done
echo
printf '%-10s %14s %23s %15s %12s\n' "server" "round trips/s" "server CPU/round trip" "latency p50" "p99"
printf '%s\n' "${summary[@]}"
echo
echo "demo: done"
echo
echo "The book explains what you just watched, one mechanism per chapter, with the code and traces of"
echo "these programs: start at docs/README.md (plain Markdown), or run 'make book' to read it as HTML"
echo "(with mdBook, if installed). Every trace it quotes is rerun and checked by 'make test'."
