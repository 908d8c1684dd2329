#!/usr/bin/env python3
"""Benchmark peer: Python's asyncio (or uvloop with --uvloop), for `make bench`'s side-by-side runs.

tests/examples/bench/ drives it; the interface, the same for every peer, is in
tests/bench/README.md:

    python3 tests/bench/peer_asyncio.py [--uvloop] echo [--port P]
    python3 tests/bench/peer_asyncio.py [--uvloop] timers [--tasks N] [--spread-ms S] [--deadline first-run|spawn]
    python3 tests/bench/peer_asyncio.py [--uvloop] spawn|call_soon|promise_chain|threadsafe|idle_tasks [--n N]

One thread, one loop: `asyncio.new_event_loop()` (the selector loop on epoll) or
`uvloop.new_event_loop()`. With --uvloop and no uvloop installed it prints
`n/a: uvloop not installed (...)` and exits with status 3.

Echo is the fastest asyncio path: `loop.create_server` with an `asyncio.Protocol` whose
`data_received` calls `transport.write(data)`, TCP_NODELAY set explicitly (asyncio sets it too).

Known unfairness and surprises:
- asyncio's selector transport reads `max_size` (256 KiB) per recv; this peer sets it to 64 KiB
  like the other peers (a private class attribute). uvloop reads into one loop-wide 256 KiB
  buffer and cannot be changed; the buffer is reused, so that costs it nothing.
- timers: each task reads `loop.time()`, adds its delay and waits on `loop.call_at(deadline,
  ...)` and a future: what `asyncio.sleep` does with `call_later`, with the deadline kept. asyncio rounds its epoll
  timeout to whole milliseconds (late by up to 1 ms); uvloop's `loop.time()` is libuv's cached,
  millisecond-truncated clock, so its timers can fire before the deadline as read from
  `time.monotonic()` (counted in "early"; docs/design.md cites up to 1.4 ms).
- cpu_s comes from `resource.getrusage` (microseconds); the Rust peers read /proc/self/stat
  (10 ms ticks).
- idle_tasks keeps every task in a list (8 bytes each; asyncio holds tasks only weakly, and a
  parked task with no strong reference may be collected), and exits with os._exit so that 2N
  pending tasks are not destroyed one warning at a time. future_bytes is null.
- threadsafe: both threads need the GIL; the other thread waits on a `queue.SimpleQueue`.
"""

import asyncio
import json
import os
import queue
import resource
import signal
import socket
import stat
import sys
import threading
import time

USAGE = """usage: peer_asyncio.py [--uvloop] SUBCOMMAND [OPTIONS]
subcommands (one thread each):
  echo [--variant default] [--port P]    TCP echo server on 127.0.0.1:P (0: any free port)
  timers [--tasks N] [--spread-ms S] [--deadline first-run|spawn]
                                         N tasks sleeping a random [0, S) ms (100000, 100); the
                                         deadline is fixed when a task first runs, or at its spawn
  spawn [--n N]                          spawn + run + join N trivial tasks (1000000)
  call_soon [--n N]                      N call_soon callbacks (1000000)
  promise_chain [--n N]                  N create/set/await rounds of a future (1000000)
  threadsafe [--n N]                     N round trips from another thread into the loop (10000)
  idle_tasks [--n N]                     RSS per parked task, second batch of N (100000)"""

READ_SIZE = 64 * 1024
MASK64 = (1 << 64) - 1


class UsageError(Exception):
    pass


def parse_args(args):
    if not args:
        raise UsageError("missing subcommand")
    sub, rest = args[0], args[1:]
    allowed = {
        "echo": ("--variant", "--port"),
        "timers": ("--tasks", "--spread-ms", "--deadline"),
        "spawn": ("--n",),
        "call_soon": ("--n",),
        "promise_chain": ("--n",),
        "threadsafe": ("--n",),
        "idle_tasks": ("--n",),
    }.get(sub)
    if allowed is None:
        raise UsageError(f"unknown subcommand {sub!r}")
    flags = {}
    i = 0
    while i < len(rest):
        name = rest[i]
        if name not in allowed:
            raise UsageError(f"{sub}: unknown argument {name!r} (allowed: {', '.join(allowed)})")
        if i + 1 >= len(rest):
            raise UsageError(f"{sub}: {name} needs a value")
        flags[name] = rest[i + 1]
        i += 2

    def number(name, default, minimum, maximum=None):
        if name not in flags:
            return default
        try:
            n = int(flags[name])
        except ValueError:
            raise UsageError(f"{name} {flags[name]!r}: not an integer") from None
        if n < minimum or (maximum is not None and n > maximum):
            raise UsageError(f"{name} {n}: out of range")
        return n

    if sub == "echo":
        variant = flags.get("--variant", "default")
        if variant != "default":
            raise UsageError(f"echo: unknown --variant {variant!r} (allowed: default)")
        return sub, {"port": number("--port", 0, 0, 65535)}
    if sub == "timers":
        deadline = flags.get("--deadline", "first-run")
        if deadline not in ("first-run", "spawn"):
            raise UsageError(f"timers: --deadline {deadline!r} (allowed: first-run, spawn)")
        return sub, {
            "tasks": number("--tasks", 100_000, 1),
            "spread_ms": number("--spread-ms", 100, 1),
            "from_spawn": deadline == "spawn",
        }
    default_n = {"threadsafe": 10_000, "idle_tasks": 100_000}.get(sub, 1_000_000)
    return sub, {"n": number("--n", default_n, 1)}


# ---------------------------------------------------------------------------------------------
# Measuring helpers (the same definitions as the Rust peers').


def percentile(sorted_values, p):
    """The value at fraction p (the lower nearest rank, as the Rust peers do)."""
    return sorted_values[int((len(sorted_values) - 1) * p)]


def cpu_seconds():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def status_kib(key):
    """A /proc/self/status field in KiB (VmRSS, VmHWM)."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith(key + ":"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def delays_ns(n, spread_ms):
    """xorshift64 (13, 7, 17) from the Rust peers' seed; `seed % spread` in ns."""
    seed = 0x2545F4914F6CDD1D
    spread = spread_ms * 1_000_000
    out = []
    for _ in range(n):
        seed ^= (seed << 13) & MASK64
        seed ^= seed >> 7
        seed ^= (seed << 17) & MASK64
        out.append(seed % spread)
    return out


def emit(obj):
    print(json.dumps(obj, separators=(",", ":")), flush=True)


# ---------------------------------------------------------------------------------------------
# echo


class Echo(asyncio.Protocol):
    def connection_made(self, transport):
        self.transport = transport
        sock = transport.get_extra_info("socket")
        if sock is not None:
            try:
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            except OSError:
                pass

    def data_received(self, data):
        self.transport.write(data)


def stdin_watchable():
    """A pipe, socket or terminal: EOF means whoever started us has gone. /dev/null or a file
    would read EOF at once (and epoll refuses them)."""
    try:
        mode = os.fstat(0).st_mode
    except OSError:
        return False
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode) or os.isatty(0)


async def echo_server(loop, port, uvloop_in_use):
    if not uvloop_in_use:
        # asyncio reads max_size bytes per recv (256 KiB); 64 KiB as for every peer.
        from asyncio import selector_events

        if hasattr(selector_events._SelectorSocketTransport, "max_size"):
            selector_events._SelectorSocketTransport.max_size = READ_SIZE
    server = await loop.create_server(Echo, "127.0.0.1", port)
    bound = server.sockets[0].getsockname()
    print(f"listening on {bound[0]}:{bound[1]}", flush=True)
    done = loop.create_future()
    if stdin_watchable():

        def on_stdin():
            try:
                data = os.read(0, 512)
            except BlockingIOError:
                return
            except OSError:
                data = b""
            if not data:
                loop.remove_reader(0)
                if not done.done():
                    done.set_result(None)

        try:
            loop.add_reader(0, on_stdin)
        except (OSError, ValueError) as e:
            print(f"not watching stdin ({e}): stop with SIGTERM or SIGINT", file=sys.stderr)
    else:
        print("not watching stdin (not a pipe, socket or terminal): stop with SIGTERM or SIGINT", file=sys.stderr)
    await done
    server.close()


# ---------------------------------------------------------------------------------------------
# timers, spawn, call_soon, promise_chain, threadsafe, idle_tasks


def timers(loop, tasks, spread_ms, from_spawn=False):
    delays = delays_ns(tasks, spread_ms)

    async def sleeper(delay, deadline):
        # What asyncio.sleep(delay) does (call_later(delay, set_result) + await a future), with
        # the deadline kept to measure against: fixed when the task first runs, or (from_spawn)
        # when it was created.
        if deadline is None:
            deadline = loop.time() + delay  # the loop's clock
        fut = loop.create_future()
        loop.call_at(deadline, fut.set_result, None)
        await fut
        return (time.monotonic() - deadline) * 1e3

    async def main():
        sleepers = [
            loop.create_task(sleeper(d / 1e9, loop.time() + d / 1e9 if from_spawn else None)) for d in delays
        ]
        return [await s for s in sleepers]

    cpu0, wall0 = cpu_seconds(), time.perf_counter()
    late = loop.run_until_complete(main())
    cpu_s, wall_s = cpu_seconds() - cpu0, time.perf_counter() - wall0
    late.sort()
    emit(
        {
            "lateness_p50_ms": round(percentile(late, 0.5), 4),
            "lateness_p99_ms": round(percentile(late, 0.99), 4),
            "lateness_max_ms": round(late[-1], 4),
            "early": sum(1 for x in late if x < 0),
            "cpu_s": round(cpu_s, 3),
            "wall_s": round(wall_s, 4),
            "peak_rss_kib": status_kib("VmHWM"),
        }
    )


def spawn(loop, n):
    async def trivial(i):
        return i

    async def main():
        tasks = [loop.create_task(trivial(i)) for i in range(n)]
        total = 0
        for t in tasks:
            total += await t
        return total

    started = time.perf_counter()
    total = loop.run_until_complete(main())
    ms = (time.perf_counter() - started) * 1e3
    if total != n * (n - 1) // 2:
        raise RuntimeError(f"spawn: sum {total}, expected {n * (n - 1) // 2}")
    emit({"ms": round(ms, 3)})


def call_soon(loop, n):
    count = 0

    def cb():
        nonlocal count
        count += 1

    started = time.perf_counter()
    for _ in range(n):
        loop.call_soon(cb)
    loop.call_soon(loop.stop)  # run_forever runs one iteration: every ready callback, then stops
    loop.run_forever()
    secs = time.perf_counter() - started
    if count != n:
        raise RuntimeError(f"call_soon: {count} of {n} callbacks ran")
    emit({"per_sec": round(n / secs)})


def promise_chain(loop, n):
    """loop.create_future() + call_soon(fut.set_result, i) + await, N times in one task."""

    async def main():
        for i in range(n):
            fut = loop.create_future()
            loop.call_soon(fut.set_result, i)
            got = await fut
            if got != i:
                raise RuntimeError(f"promise_chain: got {got}, expected {i}")

    started = time.perf_counter()
    loop.run_until_complete(main())
    emit({"per_sec": round(n / (time.perf_counter() - started))})


def threadsafe(loop, n):
    """Another thread: call_soon_threadsafe(replies.put, None), then waits on the queue."""
    rtts = []
    failure = []

    def pinger():
        replies = queue.SimpleQueue()
        try:
            for _ in range(n):
                sent = time.perf_counter()
                loop.call_soon_threadsafe(replies.put, None)
                replies.get()
                rtts.append((time.perf_counter() - sent) * 1e6)
        except Exception as e:  # report it from the main thread
            failure.append(e)
        finally:
            loop.call_soon_threadsafe(loop.stop)

    thread = threading.Thread(target=pinger, name="pinger")
    thread.start()
    loop.run_forever()
    thread.join()
    if failure:
        raise failure[0]
    rtts.sort()
    emit({"rtt_p50_us": round(percentile(rtts, 0.5), 2), "rtt_p99_us": round(percentile(rtts, 0.99), 2)})


def idle_tasks(loop, n):
    keep = []
    started = 0

    async def idle():
        nonlocal started
        started += 1
        await loop.create_future()  # never set

    async def batch(target):
        for _ in range(n):
            keep.append(loop.create_task(idle()))
        await asyncio.sleep(0)  # every task's first step was scheduled before this wake-up
        if started != target:
            raise RuntimeError(f"idle_tasks: {started} of {target} tasks ran")

    loop.run_until_complete(batch(n))  # warm-up
    before = status_kib("VmRSS")
    loop.run_until_complete(batch(2 * n))
    after = status_kib("VmRSS")
    emit({"bytes_per_task": round(max(after - before, 0) * 1024 / n, 1), "future_bytes": None})
    os._exit(0)  # 2N pending tasks: skip destroying them (and a warning for each)


# ---------------------------------------------------------------------------------------------


def main(argv):
    if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
        signal.signal(signal.SIGINT, signal.SIG_DFL)  # die on SIGINT like the Rust peers, no traceback
    args = list(argv)
    use_uvloop = "--uvloop" in args
    args = [a for a in args if a != "--uvloop"]
    if args[:1] in (["-h"], ["--help"]):
        print(USAGE)
        return 0
    try:
        sub, opts = parse_args(args)
    except UsageError as e:
        print(f"peer_asyncio.py: {e}\n{USAGE}", file=sys.stderr)
        return 2
    if use_uvloop:
        try:
            import uvloop
        except Exception as e:  # ImportError, or a broken build
            print(f"n/a: uvloop not installed ({e})", flush=True)
            return 3
        loop = uvloop.new_event_loop()
    else:
        loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    try:
        if sub == "echo":
            loop.run_until_complete(echo_server(loop, opts["port"], use_uvloop))
        elif sub == "timers":
            timers(loop, opts["tasks"], opts["spread_ms"], opts["from_spawn"])
        elif sub == "spawn":
            spawn(loop, opts["n"])
        elif sub == "call_soon":
            call_soon(loop, opts["n"])
        elif sub == "promise_chain":
            promise_chain(loop, opts["n"])
        elif sub == "threadsafe":
            threadsafe(loop, opts["n"])
        else:
            idle_tasks(loop, opts["n"])
    except Exception as e:
        print(f"peer_asyncio.py: {sub}: {type(e).__name__}: {e}", file=sys.stderr)
        return 1
    finally:
        if not loop.is_closed() and not loop.is_running():
            loop.close()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
