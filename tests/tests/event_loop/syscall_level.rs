//! Syscall-level tests of the loop: exact counts of the calls the loop makes (read from the
//! per-thread counters of `evloop-syscalls`), fault injection on those calls, and one outside
//! check with `strace`.
//!
//! Tests that need process-wide state live in binaries of their own: `tests/tests/syscall_fds.rs`
//! (the fd table of the process) and `tests/tests/syscall_fallback.rs` (the forced `epoll_wait`
//! fallback).
//!
//! Rules these tests keep: nothing depends on wall-clock speed (timers are checked for "never
//! early" and generous upper bounds only), and everything that could hang runs under a watchdog
//! that stops the loop from another thread and makes the test fail.

use std::cell::{Cell, RefCell};
use std::fs;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::rc::Rc;
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use evloop::event_loop::{EventLoop, LoopErrorKind, LoopHandle};
use evloop_syscalls::counters::{self};
use evloop_syscalls::{Syscall, fault};
use evloop_tests::watchdog::Watchdog;
use evloop_tests::{Rng, polls, procfs, spin_once};

// ---------------------------------------------------------------------------------------------
// Helpers (this file only).

/// The syscall this process polls with: `epoll_pwait2` unless the probe found it missing.
fn poll_syscall() -> Syscall {
    match evloop_syscalls::epoll_pwait2_available() {
        Some(false) => Syscall::EpollWait,
        _ => Syscall::EpollPwait2,
    }
}

/// The kernel thread id of the calling thread.
fn gettid() -> libc::pid_t {
    // SAFETY: gettid takes no arguments, touches no memory and cannot fail.
    unsafe { libc::gettid() }
}

/// What `/proc/self/task/<tid>/syscall` says about a thread blocked in the loop's poll.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Blocked {
    /// Blocked in the poll; `no_timeout` is true when the timeout argument means "forever"
    /// (a NULL timespec for epoll_pwait2, -1 for epoll_wait).
    InPoll { no_timeout: bool },
    /// `/proc` cannot tell (unreadable here): the caller falls back to a plain sleep.
    Unknown,
}

/// Waits (up to `limit`) until thread `tid` of this process is blocked in `epoll_pwait2` or
/// `epoll_wait`. `Err` if it never was within `limit` (the loop spins or blocks elsewhere).
fn wait_until_blocked_in_poll(tid: libc::pid_t, limit: Duration) -> Result<Blocked, String> {
    let path = procfs::syscall_path(tid);
    let start = Instant::now();
    let mut last = String::new();
    while start.elapsed() < limit {
        let text = match fs::read_to_string(&path) {
            Ok(t) => t,
            Err(e) => {
                println!("note: cannot read {path} ({e}); falling back to a 50 ms sleep");
                return Ok(Blocked::Unknown);
            }
        };
        if let Some(procfs::InPoll { no_timeout }) = procfs::parse_poll(&text) {
            return Ok(Blocked::InPoll { no_timeout });
        }
        last = text;
        thread::sleep(Duration::from_millis(1));
    }
    Err(format!(
        "thread {tid} was never seen blocked in the poll within {limit:?}; last /proc syscall line: {last:?}"
    ))
}

// ---------------------------------------------------------------------------------------------
// 1. An idle loop sleeps in exactly one poll.

#[test]
fn idle_loop_with_one_far_timer_makes_exactly_one_poll() {
    let lp = EventLoop::new().unwrap();
    spin_once(&lp);
    let fired_at: Rc<Cell<Option<(Instant, Instant)>>> = Rc::new(Cell::new(None));
    let (f, h) = (fired_at.clone(), lp.handle());
    let timer = lp
        .call_later(Duration::from_millis(300), move || {
            f.set(Some((h.time(), Instant::now())));
            h.stop();
        })
        .unwrap();
    let dog = Watchdog::start(lp.remote(), Duration::from_secs(10));

    counters::reset();
    lp.run_forever().unwrap();
    let c = counters::snapshot();
    assert!(!dog.finish(), "the watchdog had to stop the loop");

    // The polls this run makes, derived from the five phases:
    // iteration 1: nothing ready, no stop pending, one timer at +300 ms, so phase 2 computes a
    //   timeout of (deadline - now) and phase 3 blocks in ONE poll for that long. epoll_pwait2
    //   never returns before its timeout, so in phase 4 the timer is due; phase 5 runs it and
    //   it calls stop(); run_forever checks `stopping` after the iteration and returns.
    // There is no second iteration, hence no second poll: exactly one poll, and nothing else
    // enters the kernel (clock_gettime is a vDSO call, excluded from total_syscalls).
    println!("observed (far timer, stop in its callback): {c}");
    assert_eq!(polls(&c), 1, "expected exactly one poll, got {c}");
    assert_eq!(c[poll_syscall()], 1, "the one poll must be {}: {c}", poll_syscall());
    assert_eq!(
        c.total_syscalls(),
        1,
        "an idle loop makes no syscall besides its poll: {c}"
    );

    let (loop_t, wall_t) = fired_at.get().expect("the timer never ran");
    assert!(loop_t >= timer.when(), "timer ran early on the loop clock");
    assert!(wall_t >= timer.when(), "timer ran early on the wall clock");
}

#[test]
fn far_timer_and_remote_stop_cost_one_eventfd_write_there_and_one_read_here() {
    let lp = EventLoop::new().unwrap();
    spin_once(&lp);
    let ran = Rc::new(Cell::new(false));
    let r = ran.clone();
    let timer = lp.call_later(Duration::from_secs(10), move || r.set(true)).unwrap();
    let remote = lp.remote();
    let tid = gettid();
    let stopper = thread::spawn(move || {
        thread::sleep(Duration::from_millis(50));
        let blocked = wait_until_blocked_in_poll(tid, Duration::from_secs(5));
        if blocked == Ok(Blocked::Unknown) {
            thread::sleep(Duration::from_millis(50));
        }
        counters::reset();
        let stopped = remote.stop();
        (blocked, stopped.is_ok(), counters::snapshot())
    });
    let dog = Watchdog::start(lp.remote(), Duration::from_secs(10));

    counters::reset();
    lp.run_forever().unwrap();
    let c = counters::snapshot();
    let (blocked, stopped, remote_c) = stopper.join().unwrap();
    assert!(!dog.finish(), "the watchdog had to stop the loop");
    assert!(stopped, "RemoteHandle::stop failed");
    let blocked = blocked.unwrap();

    println!("observed (remote stop) loop thread: {c}; stopping thread: {remote_c}");
    // The stopping thread: the loop was asleep, so the push writes the eventfd once.
    assert_eq!(remote_c[Syscall::Write], 1, "stopping thread: {remote_c}");
    assert_eq!(remote_c.total_syscalls(), 1, "stopping thread: {remote_c}");
    if blocked != Blocked::Unknown {
        assert_eq!(
            blocked,
            Blocked::InPoll { no_timeout: false },
            "the 10 s timer bounds the poll"
        );
        // The loop thread: one poll (blocked, then woken by the eventfd), one eventfd read in
        // phase 3 to reset it, the Stop item ends the loop after this iteration.
        assert_eq!(polls(&c), 1, "loop thread: {c}");
        assert_eq!(c[Syscall::Read], 1, "loop thread: {c}");
        assert_eq!(c.total_syscalls(), 2, "loop thread: {c}");
    }
    assert_eq!(
        c[Syscall::Write],
        0,
        "the loop thread never writes its own eventfd: {c}"
    );
    assert!(!ran.get(), "the 10 s timer cannot have run");
    timer.cancel();
    lp.close().unwrap();
}

// ---------------------------------------------------------------------------------------------
// 2. call_soon_threadsafe wakes a loop that blocks with no timeout.

#[test]
fn call_soon_threadsafe_wakes_a_loop_blocked_with_no_timeout() {
    let lp = EventLoop::new().unwrap();
    spin_once(&lp);
    let remote = lp.remote();
    let tid = gettid();
    let ran_on = Arc::new(std::sync::Mutex::new(None));
    let ran_on2 = ran_on.clone();
    let caller = thread::spawn(move || {
        thread::sleep(Duration::from_millis(50));
        let blocked = wait_until_blocked_in_poll(tid, Duration::from_secs(5));
        counters::reset();
        let sent = remote.call_soon_threadsafe(move || {
            *ran_on2.lock().unwrap() = Some(gettid());
            evloop::event_loop::get_running_loop().unwrap().stop();
        });
        (blocked, sent.is_ok(), counters::snapshot())
    });
    let dog = Watchdog::start(lp.remote(), Duration::from_secs(10));

    counters::reset();
    let started = Instant::now();
    lp.run_forever().unwrap();
    let took = started.elapsed();
    let c = counters::snapshot();
    let (blocked, sent, remote_c) = caller.join().unwrap();
    assert!(!dog.finish(), "the watchdog had to stop the loop: the wake was lost");
    assert!(sent, "call_soon_threadsafe failed");
    assert_eq!(
        *ran_on.lock().unwrap(),
        Some(tid),
        "the callback must run on the loop thread"
    );

    println!("observed (call_soon_threadsafe wake) loop thread: {c}; caller: {remote_c}; took {took:?}");
    match blocked.unwrap() {
        Blocked::InPoll { no_timeout } => assert!(no_timeout, "with nothing scheduled the poll must block forever"),
        Blocked::Unknown => {}
    }
    assert_eq!(c[Syscall::Read], 1, "exactly one eventfd read for the wake: {c}");
    assert!(polls(&c) <= 2, "at most 2 polls: {c}");
    assert!(polls(&c) >= 1, "{c}");
    assert_eq!(
        c.total_syscalls(),
        polls(&c) + 1,
        "nothing but polls and the one read: {c}"
    );
    assert_eq!(
        remote_c[Syscall::Write],
        1,
        "one eventfd write by the caller: {remote_c}"
    );
    assert!(took < Duration::from_secs(9), "woken only by the watchdog");
    lp.close().unwrap();
}

// ---------------------------------------------------------------------------------------------
// 3. Same-thread work stays in user space.

const CALLBACKS: u32 = 10_000;
const YIELDS: u32 = 10_000;
const ROUND_TRIPS: u32 = 1_000;

fn chain(h: LoopHandle, count: Rc<Cell<u32>>, done: evloop::task::Promise<()>) {
    count.set(count.get() + 1);
    if count.get() == CALLBACKS {
        done.set_result(()).unwrap();
    } else {
        let h2 = h.clone();
        h.call_soon(move || chain(h2, count, done)).unwrap();
    }
}

#[test]
fn same_thread_work_makes_no_syscalls() {
    let lp = EventLoop::new().unwrap();
    spin_once(&lp);
    let dog = Watchdog::start(lp.remote(), Duration::from_secs(20));
    let h = lp.handle();
    let calls = Rc::new(Cell::new(0u32));
    let yields = Rc::new(Cell::new(0u32));
    let trips = Rc::new(Cell::new(0u32));
    let (c1, y1, t1) = (calls.clone(), yields.clone(), trips.clone());
    let iterations_before = lp.stats().iterations;

    counters::reset();
    lp.run_until_complete(async move {
        // 10,000 call_soon callbacks, each scheduled by the one before.
        let chain_done: evloop::task::Promise<()> = h.create_future();
        let (h2, d2) = (h.clone(), chain_done.clone());
        h.call_soon(move || chain(h2, c1, d2)).unwrap();
        // 10,000 same-thread task wakes.
        let yielder = h
            .create_task(async move {
                for _ in 0..YIELDS {
                    evloop::task::yield_now().await;
                    y1.set(y1.get() + 1);
                }
            })
            .unwrap();
        // 1,000 promise round trips: a callback sets the value, the task awaits it.
        let h3 = h.clone();
        let tripper = h
            .create_task(async move {
                for i in 0..ROUND_TRIPS {
                    let p: evloop::task::Promise<u32> = h3.create_future();
                    let p2 = p.clone();
                    h3.call_soon(move || p2.set_result(i).unwrap()).unwrap();
                    assert_eq!(p.await.unwrap(), i);
                    t1.set(t1.get() + 1);
                }
            })
            .unwrap();
        yielder.await.unwrap();
        tripper.await.unwrap();
        chain_done.await.unwrap();
    })
    .unwrap();
    let c = counters::snapshot();
    let iterations = lp.stats().iterations - iterations_before;
    assert!(!dog.finish(), "the watchdog had to stop the loop");

    assert_eq!(
        (calls.get(), yields.get(), trips.get()),
        (CALLBACKS, YIELDS, ROUND_TRIPS)
    );
    println!("observed (same-thread work, {iterations} iterations): {c}");
    assert!(polls(&c) > 0, "{c}");
    assert_eq!(polls(&c), iterations, "one poll per iteration: {c}");
    assert_eq!(c.total_syscalls(), polls(&c), "nothing but zero-timeout polls: {c}");
    for s in [Syscall::Write, Syscall::Read, Syscall::EpollCtl] {
        assert_eq!(c[s], 0, "{s}: {c}");
    }
    lp.close().unwrap();
}

// ---------------------------------------------------------------------------------------------
// 4. Timers never fire early.

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let idx = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[idx.min(sorted.len() - 1)]
}

#[test]
fn timers_never_fire_early_1000_random() {
    let lp = EventLoop::new().unwrap();
    spin_once(&lp);
    let mut rng = Rng::xorshift64(0x9E37_79B9_7F4A_7C15);
    // (index, loop time at run, Instant::now() at run)
    let log: Rc<RefCell<Vec<(usize, Instant, Instant)>>> = Rc::new(RefCell::new(Vec::new()));
    let mut whens: Vec<Instant> = Vec::new();
    let h = lp.handle();
    let mut schedule = |when_of: &mut dyn FnMut(usize, Box<dyn FnOnce()>) -> Instant| {
        let i = whens.len();
        let (l, h) = (log.clone(), h.clone());
        let w = when_of(i, Box::new(move || l.borrow_mut().push((i, h.time(), Instant::now()))));
        whens.push(w);
    };
    // A few groups of timers with exactly equal deadlines (call_at with a shared Instant), so
    // FIFO among equal deadlines is exercised: 10 instants, 20 timers each, interleaved.
    let base = Instant::now() + Duration::from_millis(10);
    let tied: Vec<Instant> = (0..10).map(|k| base + Duration::from_millis(3 * k)).collect();
    let mut tie_plan: Vec<usize> = (0..200).map(|i| i % 10).collect();
    for i in (1..tie_plan.len()).rev() {
        tie_plan.swap(i, rng.below(i as u64 + 1) as usize);
    }
    let mut ties = tie_plan.into_iter();
    for n in 0..1_200 {
        if n % 6 == 5 {
            let at = tied[ties.next().unwrap()];
            schedule(&mut |_, f| lp.call_at(at, f).unwrap().when());
        } else {
            let delay = Duration::from_nanos(rng.below(50_000_000));
            schedule(&mut |_, f| lp.call_later(delay, f).unwrap().when());
        }
    }
    let total = whens.len();
    assert_eq!(total, 1_200);
    // The stop timer is scheduled last with the longest delay, so every other deadline is
    // earlier and has run by the iteration that runs it, whatever the machine's speed.
    let h2 = lp.handle();
    lp.call_later(Duration::from_millis(60), move || h2.stop()).unwrap();
    let dog = Watchdog::start(lp.remote(), Duration::from_secs(10));
    lp.run_forever().unwrap();
    assert!(!dog.finish(), "the watchdog had to stop the loop");

    let log = log.borrow();
    assert_eq!(log.len(), total, "every timer runs exactly once");
    let mut late = Vec::with_capacity(total);
    for &(i, loop_t, wall_t) in log.iter() {
        assert!(
            loop_t >= whens[i],
            "timer {i} ran early on the loop clock by {:?}",
            whens[i] - loop_t
        );
        assert!(
            wall_t >= whens[i],
            "timer {i} ran early on the wall clock by {:?}",
            whens[i] - wall_t
        );
        late.push(wall_t - whens[i]);
    }
    // Deadline order, FIFO (scheduling order) among equal deadlines.
    let mut expected: Vec<usize> = (0..total).collect();
    expected.sort_by_key(|&i| (whens[i], i));
    let ran: Vec<usize> = log.iter().map(|e| e.0).collect();
    if let Some(pos) = ran.iter().zip(&expected).position(|(a, b)| a != b) {
        panic!(
            "timers ran out of deadline order at position {pos}: ran {} (when {:?}), expected {} (when {:?})",
            ran[pos], whens[ran[pos]], expected[pos], whens[expected[pos]]
        );
    }
    let tied_groups = whens.iter().filter(|w| tied.contains(w)).count();
    assert_eq!(tied_groups, 200, "the tied deadlines must really be equal");
    late.sort();
    println!(
        "lateness of {total} timers: p50 {:?}, p99 {:?}, max {:?} (printed, not asserted)",
        percentile(&late, 0.50),
        percentile(&late, 0.99),
        late[total - 1]
    );
}

// ---------------------------------------------------------------------------------------------
// 6. The poll is epoll_pwait2 where the kernel has it.

#[test]
fn the_poll_uses_epoll_pwait2_where_the_kernel_has_it() {
    let lp = EventLoop::new().unwrap();
    counters::reset();
    lp.run_until_complete(evloop::time::sleep(Duration::from_millis(1)))
        .unwrap();
    let c = counters::snapshot();
    match evloop_syscalls::epoll_pwait2_available() {
        Some(false) => {
            println!("skipped: this kernel (or a seccomp filter) refuses epoll_pwait2; counts {c}");
            assert!(c[Syscall::EpollWait] > 0, "{c}");
        }
        None => panic!("the loop ran, so epoll_pwait2 must have been probed"),
        Some(true) => {
            println!("observed (sleep 1 ms): {c}");
            assert!(c[Syscall::EpollPwait2] > 0, "{c}");
            assert_eq!(c[Syscall::EpollWait], 0, "{c}");
        }
    }
    lp.close().unwrap();
}

// ---------------------------------------------------------------------------------------------
// 8. Fault injection.

#[test]
fn injected_eintr_on_the_poll_breaks_nothing_and_timers_never_fire_early() {
    fault::clear();
    let lp = EventLoop::new().unwrap();
    spin_once(&lp);
    let mut rng = Rng::xorshift64(42);
    let log: Rc<RefCell<Vec<(usize, Instant)>>> = Rc::new(RefCell::new(Vec::new()));
    let mut whens = Vec::new();
    for i in 0..50 {
        let (l, h) = (log.clone(), lp.handle());
        let delay = Duration::from_micros(500 + rng.below(20_000));
        let t = lp
            .call_later(delay, move || l.borrow_mut().push((i, h.time())))
            .unwrap();
        whens.push(t.when());
    }
    let dog = Watchdog::start(lp.remote(), Duration::from_secs(10));
    // Three interrupted polls in a row, starting with the very next one.
    fault::fail_times(poll_syscall(), 1, 3, libc::EINTR);
    counters::reset();
    let out = lp
        .run_until_complete(async {
            evloop::time::sleep(Duration::from_millis(25)).await;
            7
        })
        .unwrap();
    let c = counters::snapshot();
    assert!(!dog.finish(), "the watchdog had to stop the loop");
    assert_eq!(out, 7);
    assert_eq!(fault::pending(), 0, "all three EINTRs must have been injected");
    assert!(polls(&c) >= 4, "3 interrupted polls and at least one real one: {c}");
    let log = log.borrow();
    assert_eq!(log.len(), 50, "every timer fired");
    for &(i, t) in log.iter() {
        assert!(t >= whens[i], "timer {i} fired early after EINTR");
    }
    let mut expected: Vec<usize> = (0..50).collect();
    expected.sort_by_key(|&i| (whens[i], i));
    assert_eq!(log.iter().map(|e| e.0).collect::<Vec<_>>(), expected);
    fault::clear();
}

#[test]
fn injected_ebadf_or_enomem_on_the_poll_makes_run_forever_fail_naming_the_poll() {
    fault::clear();
    for errno in [libc::EBADF, libc::ENOMEM] {
        let lp = EventLoop::new().unwrap();
        spin_once(&lp);
        // A bound in case the error were swallowed: the loop would then stop here.
        let h = lp.handle();
        let bound = lp.call_later(Duration::from_millis(20), move || h.stop()).unwrap();
        let dog = Watchdog::start(lp.remote(), Duration::from_secs(10));
        fault::fail_nth(poll_syscall(), 1, errno);
        counters::reset();
        let r = lp.run_forever();
        let c = counters::snapshot();
        assert!(!dog.finish(), "the watchdog had to stop the loop");
        let err = r.expect_err("run_forever must report the failed poll");
        let msg = err.to_string();
        println!("errno {errno}: {msg}; counts {c}");
        assert_eq!(err.kind(), LoopErrorKind::Io, "{msg}");
        assert!(msg.contains("poll"), "the error must name the poll: {msg}");
        assert_eq!(err.io_error().and_then(|e| e.raw_os_error()), Some(errno), "{msg}");
        assert_eq!(polls(&c), 1, "no spinning: one failed poll, then return: {c}");
        assert!(!lp.is_running());
        // The bound must not stop the next run (on a loaded machine its 20 ms may be over).
        bound.cancel();

        // The loop runs again afterwards.
        let out = lp
            .run_until_complete(async {
                evloop::time::sleep(Duration::from_millis(1)).await;
                5
            })
            .unwrap();
        assert_eq!(out, 5);
        lp.close().unwrap();
    }
    fault::clear();
}

#[test]
fn injected_ebadf_on_the_poll_makes_run_until_complete_fail_with_the_loop_error() {
    fault::clear();
    let lp = EventLoop::new().unwrap();
    spin_once(&lp);
    fault::fail_nth(poll_syscall(), 2, libc::EBADF);
    let dog = Watchdog::start(lp.remote(), Duration::from_secs(10));
    let r = lp.run_until_complete(evloop::time::sleep(Duration::from_millis(50)));
    assert!(!dog.finish());
    let err = r.expect_err("the poll failed");
    let le = err.as_loop_error().expect("a loop error, not a task error");
    assert_eq!(le.kind(), LoopErrorKind::Io, "{err}");
    assert!(err.to_string().contains("poll"), "{err}");
    assert_eq!(fault::pending(), 0);
    assert_eq!(lp.run_until_complete(async { 3 }).unwrap(), 3);
    fault::clear();
}

#[test]
fn injected_emfile_on_eventfd_makes_event_loop_new_fail_with_an_io_error() {
    fault::clear();
    fault::fail_nth(Syscall::Eventfd, 1, libc::EMFILE);
    counters::reset();
    let err = EventLoop::new().expect_err("eventfd failed, so the loop cannot exist");
    let c = counters::snapshot();
    let msg = err.to_string();
    println!("{msg}; counts {c}");
    assert_eq!(err.kind(), LoopErrorKind::Io, "{msg}");
    assert!(msg.contains("eventfd"), "the error must name eventfd: {msg}");
    assert_eq!(err.io_error().and_then(|e| e.raw_os_error()), Some(libc::EMFILE));
    assert_eq!(c[Syscall::EpollCreate1], 1, "the epoll fd is created first: {c}");
    assert_eq!(c[Syscall::Eventfd], 1, "{c}");
    assert_eq!(c[Syscall::EpollCtl], 0, "nothing to register: {c}");
    assert_eq!(fault::pending(), 0);
    // (That the epoll fd was closed again is checked against /proc/self/fd in tests/tests/syscall_fds.rs.)
    let lp = EventLoop::new().expect("the next loop works");
    assert_eq!(lp.run_until_complete(async { 1 }).unwrap(), 1);
}

#[test]
fn injected_ebadf_on_epoll_ctl_makes_add_reader_fail_and_the_loop_keeps_working() {
    fault::clear();
    let lp = EventLoop::new().unwrap();
    spin_once(&lp);
    let (r, w) = evloop_syscalls::pipe2().unwrap();
    let rfd = evloop_syscalls::AsRawFd::as_raw_fd(&r);

    fault::fail_nth(Syscall::EpollCtl, 1, libc::EBADF);
    let err = lp.add_reader(rfd, || {}).expect_err("epoll_ctl failed");
    let msg = err.to_string();
    println!("add_reader error: {msg}");
    assert!(msg.contains("add_reader"), "{msg}");
    assert!(msg.contains(&format!("fd {rfd}")), "the error must name the fd: {msg}");
    assert_eq!(lp.stats().fds, 0, "a failed add_reader registers nothing");
    assert!(!lp.remove_reader(rfd), "nothing to remove after a failed add_reader");

    // The loop keeps working: the same fd can be watched, and its callback runs.
    let got = Rc::new(RefCell::new(Vec::new()));
    let (g, h) = (got.clone(), lp.handle());
    let r2 = r.try_clone().unwrap();
    lp.add_reader(rfd, move || {
        let mut buf = [0u8; 8];
        let n = evloop_syscalls::read(std::os::fd::AsFd::as_fd(&r2), &mut buf).unwrap();
        g.borrow_mut().extend_from_slice(&buf[..n]);
        h.stop();
    })
    .unwrap();
    assert_eq!(lp.stats().fds, 1);
    evloop_syscalls::write(std::os::fd::AsFd::as_fd(&w), b"x").unwrap();
    let dog = Watchdog::start(lp.remote(), Duration::from_secs(10));
    lp.run_forever().unwrap();
    assert!(!dog.finish(), "the reader never ran");
    assert_eq!(*got.borrow(), b"x");
    assert!(lp.remove_reader(rfd));
    let t = lp.call_later(Duration::from_millis(1), || {}).unwrap();
    lp.run_until_complete(evloop::time::sleep(Duration::from_millis(2)))
        .unwrap();
    assert!(t.when() <= lp.time());
    lp.close().unwrap();
    drop((r, w));
}

// ---------------------------------------------------------------------------------------------
// 9. The outside check: strace.

fn example_binary() -> Option<PathBuf> {
    // This test binary is target/<profile>/deps/event_loop-<hash>; the example is
    // target/<profile>/examples/seed000_run.
    let exe = std::env::current_exe().ok()?;
    let profile_dir = exe.parent()?.parent()?;
    let p = profile_dir.join("examples").join("seed000_run");
    p.is_file().then_some(p)
}

/// Parses `strace -c` output into (syscall name, calls).
fn parse_strace_summary(text: &str) -> Vec<(String, u64)> {
    let mut out = Vec::new();
    for line in text.lines() {
        let tokens: Vec<&str> = line.split_whitespace().collect();
        // "% time  seconds  usecs/call  calls  [errors]  syscall"
        if tokens.len() < 5 || tokens[0].parse::<f64>().is_err() {
            continue;
        }
        let name = tokens[tokens.len() - 1];
        if name == "total" {
            continue;
        }
        if let Ok(calls) = tokens[3].parse::<u64>() {
            out.push((name.to_string(), calls));
        }
    }
    out
}

#[test]
fn strace_sees_epoll_pwait2_and_a_single_epoll_ctl_for_the_eventfd() {
    // Skip conditions, each printed: no strace on PATH, the example not built, ptrace refused.
    let Ok(v) = Command::new("strace").arg("-V").output() else {
        println!("skipped: strace is not on PATH");
        return;
    };
    if !v.status.success() {
        println!("skipped: `strace -V` failed");
        return;
    }
    let Some(bin) = example_binary() else {
        println!(
            "skipped: target/debug/examples/seed000_run is not built (cargo build -p evloop --example seed000_run)"
        );
        return;
    };
    let out_file = std::env::temp_dir().join(format!("evloop-strace-{}.txt", std::process::id()));
    let mut child = Command::new("strace")
        .arg("-f")
        .arg("-c")
        .arg("-o")
        .arg(&out_file)
        .arg(&bin)
        .env_remove("EVLOOP_TRACE")
        .env_remove("EVLOOP_DEBUG")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawning strace");
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        if child.try_wait().unwrap().is_some() {
            break;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("strace {} did not finish within 20 s", bin.display());
        }
        thread::sleep(Duration::from_millis(20));
    }
    let output = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    let summary = fs::read_to_string(&out_file).unwrap_or_default();
    let _ = fs::remove_file(&out_file);
    if !output.status.success() {
        if stderr.contains("ptrace") || stderr.contains("Operation not permitted") {
            println!("skipped: strace cannot trace here: {stderr}");
            return;
        }
        panic!(
            "strace of {} failed: {}\n{stderr}\n{summary}",
            bin.display(),
            output.status
        );
    }
    assert_eq!(String::from_utf8_lossy(&output.stdout), "10\n", "the example's output");
    let calls = parse_strace_summary(&summary);
    let count = |name: &str| calls.iter().find(|(n, _)| n == name).map(|&(_, c)| c);
    println!(
        "strace -c of seed000_run: epoll_pwait2={:?} epoll_wait={:?} epoll_ctl={:?} eventfd2={:?} epoll_create1={:?}",
        count("epoll_pwait2"),
        count("epoll_wait"),
        count("epoll_ctl"),
        count("eventfd2"),
        count("epoll_create1")
    );
    assert!(!calls.is_empty(), "could not parse the strace summary:\n{summary}");
    assert!(
        count("epoll_pwait2").unwrap_or(0) >= 1,
        "the summary must list epoll_pwait2:\n{summary}"
    );
    assert_eq!(
        count("epoll_wait"),
        None,
        "no epoll_wait fallback on this kernel:\n{summary}"
    );
    assert_eq!(
        count("epoll_ctl"),
        Some(1),
        "one epoll_ctl: the registration of the eventfd:\n{summary}"
    );
    assert_eq!(count("eventfd2"), Some(1), "{summary}");
    assert_eq!(count("epoll_create1"), Some(1), "{summary}");
}
