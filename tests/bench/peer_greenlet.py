#!/usr/bin/env python3
"""Benchmark peer: greenlet (gevent's stackful coroutines), beside evloop's fibers
(tests/examples/peer_fiber.rs) in the fibers section of `make bench`
(tests/examples/bench/fibers.rs drives both).

    .bench-venv/bin/python tests/bench/peer_greenlet.py switch --n 1000000
    .bench-venv/bin/python tests/bench/peer_greenlet.py suspended --n 100000

- `switch`: two greenlets, A and B, switch to each other N times each, carrying an int, as
  peer_fiber's `switch` does; prints `{"ns_per_switch": .., "switches": 2N}`.
- `suspended`: N greenlets started and suspended in a switch back to the main greenlet; the
  growth of the resident set (VmRSS) per greenlet, the time to create them, and the memory
  mappings they added; prints `{"bytes_per_fiber": .., "create_ms": .., "maps": .., "rss_mib": ..,
  "n": N}`.

Without greenlet installed (`make bench-venv` installs it), every subcommand prints
`n/a: greenlet not installed (...)` and exits with status 3, like the asyncio peer without uvloop.

greenlet keeps only the part of a suspended greenlet's C stack that lies above the running one:
when another greenlet needs that part of the stack, the slice is copied to the heap (stack
slicing, source note 004). Its memory per suspended greenlet is therefore that heap copy plus the
Python frame objects; evloop's is the touched pages of a separate stack.
"""

import sys
import time


def fail(msg: str, status: int = 1) -> None:
    print(msg, file=sys.stderr)
    sys.exit(status)


try:
    import greenlet
except Exception as e:  # noqa: BLE001 - any import failure means "not available"
    print(f"n/a: greenlet not installed ({e!r})")
    sys.exit(3)


def status_kib(key: str) -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1])
    return 0


def maps_count() -> int:
    with open("/proc/self/maps") as f:
        return sum(1 for _ in f)


def switch(n: int) -> None:
    b_box = []

    def a_run():
        b = b_box[0]
        total = 0
        for i in range(n):
            total += b.switch(i)
        return total

    def b_run(v):
        while True:
            v = a.switch(v + 1)

    a = greenlet.greenlet(a_run)
    b = greenlet.greenlet(b_run)
    b_box.append(b)
    started = time.perf_counter()
    total = a.switch()
    secs = time.perf_counter() - started
    expect = n * (n + 1) // 2
    if total != expect:
        fail(f"switch: sum {total}, expected {expect}")
    b.throw()  # let B go
    print(f'{{"ns_per_switch":{secs * 1e9 / (2 * n):.3f},"switches":{2 * n}}}')


def suspended(n: int) -> None:
    main = greenlet.getcurrent()

    def run():
        main.switch()

    glets = []
    maps_before = maps_count()
    rss_before = status_kib("VmRSS")
    started = time.perf_counter()
    for _ in range(n):
        g = greenlet.greenlet(run)
        g.switch()
        glets.append(g)
    create_ms = (time.perf_counter() - started) * 1e3
    rss_after = status_kib("VmRSS")
    maps = max(0, maps_count() - maps_before)
    print(
        f'{{"bytes_per_fiber":{(rss_after - rss_before) * 1024 / n:.1f},"create_ms":{create_ms:.2f},'
        f'"maps":{maps},"rss_mib":{rss_after / 1024:.1f},"n":{n}}}'
    )
    sys.stdout.flush()
    # Unwinding N greenlets takes time and proves nothing here.
    import os

    os._exit(0)


def main() -> None:
    args = sys.argv[1:]
    if not args or args[0] in ("-h", "--help"):
        print(__doc__)
        return
    sub, rest = args[0], args[1:]
    n = None
    it = iter(rest)
    for name in it:
        if name == "--n":
            try:
                n = int(next(it))
            except (StopIteration, ValueError):
                fail("--n needs a number", 2)
        else:
            fail(f"{sub}: unknown argument {name!r}", 2)
    if sub == "switch":
        switch(n or 1_000_000)
    elif sub == "suspended":
        suspended(n or 100_000)
    else:
        fail(f"unknown subcommand {sub!r}", 2)


if __name__ == "__main__":
    main()
