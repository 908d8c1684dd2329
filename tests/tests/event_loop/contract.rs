//! The loop part of evloop's behaviour contract (`docs/design.md`, "Behaviour contract / Loop"): the
//! ready queue, timers, handles and their cancellation, `stop` / `run_*`, `close`, the exception
//! handler and `get_running_loop`. One `#[test]` per contract line, named after it.
//!
//! File descriptors are in `fds.rs`, threads (remote handles, the executor) in `threads.rs`, the
//! virtual clock, trace and debug modes in `modes.rs` (modules of this binary).
//!
//! No test depends on the machine being fast: timing assertions are "never early" plus generous
//! upper bounds, and `run_once` is only called when something is ready (it blocks otherwise).

use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::time::{Duration, Instant};

use evloop::sys::{Syscall, counters};
use evloop::{
    event_loop::{
        EventLoop, ExceptionContext, ExceptionKind, Handle, LoopError, LoopErrorKind, LoopHandle, TimerHandle,
        get_running_loop,
    },
    task::{Promise, RunError, TaskState},
    time::sleep,
};
// The built-in `#[test]` in this binary; the `sim` binary's runs the body on the simulated
// kernel (sim/contracts.rs).
use crate::contract_test as test;
// The shared log helpers under this file's names: `new_log()` for a log of any element type,
// `taken(&log)` for what it holds so far.
use evloop_tests::{Log, entries as taken, log as new_log, record_exceptions_with, spin_once};

// ---------------------------------------------------------------------------------------------
// Helpers (this file only).

/// A callback that appends `v` to `log`.
fn pusher<T: 'static>(log: &Log<T>, v: T) -> impl FnOnce() + 'static + use<T> {
    let log = log.clone();
    move || log.borrow_mut().push(v)
}

/// Counts its drops: put one in a closure or future to see when the loop drops it.
struct DropCounter(Rc<Cell<u32>>);

impl Drop for DropCounter {
    fn drop(&mut self) {
        self.0.set(self.0.get() + 1);
    }
}

/// What the recording exception handler saw.
#[derive(Debug, Clone)]
struct Seen {
    kind: ExceptionKind,
    message: String,
    handle: Option<String>,
    panic: Option<String>,
    same_loop: bool,
}

/// Installs an exception handler that records every context it is given.
fn record_seen(lp: &LoopHandle) -> Log<Seen> {
    let me = lp.clone();
    record_exceptions_with(lp, move |h, ctx| Seen {
        kind: ctx.kind,
        message: ctx.message.clone(),
        handle: ctx.handle.clone(),
        panic: ctx.panic.as_ref().map(|p| p.message().to_string()),
        same_loop: h.same_loop(&me),
    })
}

fn loop_kind<T: std::fmt::Debug>(r: Result<T, RunError>) -> LoopErrorKind {
    match r {
        Err(RunError::Loop(e)) => e.kind(),
        other => panic!("expected a loop error, got {other:?}"),
    }
}

// ---------------------------------------------------------------------------------------------
// call_soon and the ready queue.

#[test]
fn call_soon_callbacks_run_in_fifo_order() {
    let lp = EventLoop::new().unwrap();
    let log = new_log();
    for i in 0..100 {
        lp.call_soon(pusher(&log, i)).unwrap();
    }
    lp.run_once().unwrap();
    assert_eq!(taken(&log), (0..100).collect::<Vec<_>>());
    assert_eq!(lp.stats().ready, 0);
}

#[test]
fn call_soon_from_a_running_callback_runs_in_the_next_iteration() {
    let lp = EventLoop::new().unwrap();
    let log: Log<(&str, u64)> = new_log();
    let (h, l) = (lp.handle(), log.clone());
    lp.call_soon(move || {
        l.borrow_mut().push(("parent", h.stats().iterations));
        let (h2, l2) = (h.clone(), l.clone());
        h.call_soon(move || l2.borrow_mut().push(("child", h2.stats().iterations)))
            .unwrap();
    })
    .unwrap();
    let (h, l) = (lp.handle(), log.clone());
    lp.call_soon(move || l.borrow_mut().push(("sibling", h.stats().iterations)))
        .unwrap();

    let start = lp.stats().iterations;
    lp.run_once().unwrap();
    // The sibling, scheduled before the loop ran, still runs in the first iteration; the child
    // scheduled by a running callback does not.
    assert_eq!(taken(&log), vec![("parent", start + 1), ("sibling", start + 1)]);
    assert_eq!(lp.stats().ready, 1);
    lp.run_once().unwrap();
    assert_eq!(
        taken(&log),
        vec![("parent", start + 1), ("sibling", start + 1), ("child", start + 2)]
    );
}

#[test]
fn a_callback_that_keeps_rescheduling_itself_runs_once_per_iteration() {
    fn again(h: LoopHandle, n: Rc<Cell<u32>>) {
        n.set(n.get() + 1);
        let h2 = h.clone();
        h.call_soon(move || again(h2, n)).unwrap();
    }
    let lp = EventLoop::new().unwrap();
    let n = Rc::new(Cell::new(0));
    let (h, n2) = (lp.handle(), n.clone());
    lp.call_soon(move || again(h, n2)).unwrap();
    for i in 1..=5 {
        lp.run_once().unwrap();
        assert_eq!(n.get(), i, "iteration {i} must run the callback exactly once");
    }
}

#[test]
fn run_once_runs_exactly_the_handles_ready_when_phase_5_began() {
    let lp = EventLoop::new().unwrap();
    let log = new_log();
    let (h, l) = (lp.handle(), log.clone());
    lp.call_soon(move || {
        l.borrow_mut().push("a");
        h.call_soon(pusher(&l, "c")).unwrap();
        h.call_later(Duration::ZERO, pusher(&l, "timer-from-a")).unwrap();
    })
    .unwrap();
    // An already-expired timer moves to the ready queue in phase 4, so it is part of phase 5.
    lp.call_at(Instant::now(), pusher(&log, "expired")).unwrap();
    lp.call_soon(pusher(&log, "b")).unwrap();

    lp.run_once().unwrap();
    assert_eq!(taken(&log), vec!["a", "b", "expired"]);
    assert_eq!(lp.stats().ready, 1, "only `c` waits in the ready queue");

    lp.run_once().unwrap();
    assert_eq!(taken(&log), vec!["a", "b", "expired", "c", "timer-from-a"]);
}

// ---------------------------------------------------------------------------------------------
// call_later / call_at.

#[test]
fn call_later_never_runs_early() {
    let lp = EventLoop::new().unwrap();
    let checked = Rc::new(Cell::new(0u32));
    let last = Rc::new(Cell::new(Duration::ZERO));
    // Sub-millisecond and odd delays: an implementation that rounds to milliseconds, or that
    // compares a truncated clock, fires some of these early.
    let delays: Vec<Duration> = (0..40u64).map(|i| Duration::from_micros(i * 373 + 50)).collect();
    for &d in &delays {
        let before = Instant::now();
        let when = Rc::new(Cell::new(None::<Instant>));
        let (h, w, c) = (lp.handle(), when.clone(), checked.clone());
        let th = lp
            .call_later(d, move || {
                let now = Instant::now();
                let loop_now = h.time();
                let when = w.get().expect("when recorded");
                assert!(loop_now >= when, "loop time {loop_now:?} < deadline {when:?} for {d:?}");
                assert!(now >= before + d, "ran {:?} early for {d:?}", (before + d) - now);
                c.set(c.get() + 1);
            })
            .unwrap();
        when.set(Some(th.when()));
        last.set(last.get().max(d));
    }
    let h = lp.handle();
    lp.call_later(last.get() + Duration::from_millis(1), move || h.stop())
        .unwrap();
    lp.run_forever().unwrap();
    assert_eq!(checked.get() as usize, delays.len());
    assert_eq!(lp.stats().timers, 0);
}

#[test]
fn call_at_never_runs_early() {
    let lp = EventLoop::new().unwrap();
    let base = Instant::now();
    let ran = Rc::new(Cell::new(0u32));
    for i in 0..30u64 {
        let when = base + Duration::from_nanos(i * 517_003 + 1);
        let (h, r) = (lp.handle(), ran.clone());
        lp.call_at(when, move || {
            assert!(Instant::now() >= when, "call_at ran before its Instant");
            assert!(h.time() >= when, "loop time at run is before `when`");
            r.set(r.get() + 1);
        })
        .unwrap();
    }
    let h = lp.handle();
    lp.call_at(base + Duration::from_millis(20), move || h.stop()).unwrap();
    lp.run_forever().unwrap();
    assert_eq!(ran.get(), 30);
}

#[test]
fn timers_run_in_deadline_order_not_scheduling_order() {
    let lp = EventLoop::new().unwrap();
    let log = new_log();
    let base = Instant::now() + Duration::from_millis(2);
    for i in [5u64, 1, 4, 2, 3, 0] {
        lp.call_at(base + Duration::from_micros(i * 300), pusher(&log, i))
            .unwrap();
    }
    let h = lp.handle();
    lp.call_at(base + Duration::from_millis(3), move || h.stop()).unwrap();
    lp.run_forever().unwrap();
    assert_eq!(taken(&log), vec![0, 1, 2, 3, 4, 5]);
}

#[test]
fn equal_deadlines_run_in_scheduling_order() {
    let lp = EventLoop::new().unwrap();
    let log = new_log();
    let when = Instant::now() + Duration::from_millis(2);
    for i in 0..50 {
        lp.call_at(when, pusher(&log, i)).unwrap();
    }
    let h = lp.handle();
    lp.call_at(when, move || h.stop()).unwrap();
    lp.run_forever().unwrap();
    assert_eq!(taken(&log), (0..50).collect::<Vec<_>>());

    // Same with call_later(ZERO) scheduled back to back inside one callback: their deadlines
    // may or may not be equal, and either way the order is the scheduling order.
    let log2 = new_log();
    let (h, l) = (lp.handle(), log2.clone());
    lp.call_soon(move || {
        for i in 0..20 {
            h.call_later(Duration::ZERO, pusher(&l, i)).unwrap();
        }
    })
    .unwrap();
    lp.run_once().unwrap();
    lp.run_once().unwrap();
    assert_eq!(taken(&log2), (0..20).collect::<Vec<_>>());
}

#[test]
fn zero_and_negative_delays_run_in_the_next_iteration_after_already_ready_handles() {
    let lp = EventLoop::new().unwrap();
    let log = new_log();
    let past = Instant::now()
        .checked_sub(Duration::from_secs(1))
        .unwrap_or_else(Instant::now);
    lp.call_soon(pusher(&log, "ready-1")).unwrap();
    lp.call_later(Duration::ZERO, pusher(&log, "zero")).unwrap();
    lp.call_at(past, pusher(&log, "negative")).unwrap();
    lp.call_soon(pusher(&log, "ready-2")).unwrap();

    let start = lp.stats().iterations;
    lp.run_once().unwrap();
    // Both timers are due in the first iteration, after the handles that were already ready;
    // the earlier deadline (the one in the past) first.
    assert_eq!(taken(&log), vec!["ready-1", "ready-2", "negative", "zero"]);
    assert_eq!(lp.stats().iterations, start + 1);
    assert_eq!(lp.stats().timers, 0);
}

#[test]
fn zero_delay_timer_scheduled_by_a_callback_waits_for_the_next_iteration() {
    let lp = EventLoop::new().unwrap();
    let log = new_log();
    let (h, l) = (lp.handle(), log.clone());
    lp.call_soon(move || {
        h.call_later(Duration::ZERO, pusher(&l, "zero")).unwrap();
        h.call_at(Instant::now() - Duration::from_millis(1), pusher(&l, "negative"))
            .unwrap();
        h.call_soon(pusher(&l, "soon")).unwrap();
        l.borrow_mut().push("first");
    })
    .unwrap();
    lp.run_once().unwrap();
    assert_eq!(
        taken(&log),
        vec!["first"],
        "nothing scheduled by a callback runs in its iteration"
    );
    lp.run_once().unwrap();
    assert_eq!(taken(&log), vec!["first", "soon", "negative", "zero"]);
}

#[test]
fn timer_handle_when_returns_the_deadline() {
    let lp = EventLoop::new().unwrap();
    let at = Instant::now() + Duration::from_millis(1234);
    let th = lp.call_at(at, || {}).unwrap();
    assert_eq!(th.when(), at, "call_at keeps the exact Instant");

    let d = Duration::from_millis(750);
    let before = Instant::now();
    let th2 = lp.call_later(d, || {}).unwrap();
    let after = Instant::now();
    assert!(th2.when() <= after + d, "{:?} > {:?}", th2.when(), after + d);
    assert!(th2.when() + Duration::from_millis(1) >= before + d);

    // when() agrees with the time the loop runs it: loop time at run >= when().
    let when = Rc::new(Cell::new(None::<Instant>));
    let seen = Rc::new(Cell::new(None::<Instant>));
    let (h, s) = (lp.handle(), seen.clone());
    let th3 = lp
        .call_later(Duration::from_millis(2), move || {
            s.set(Some(h.time()));
            h.stop();
        })
        .unwrap();
    when.set(Some(th3.when()));
    th.cancel();
    th2.cancel();
    lp.run_forever().unwrap();
    assert!(seen.get().expect("timer ran") >= when.get().unwrap());
}

#[test]

fn timer_handle_when_of_a_past_deadline_is_the_instant_given() {
    let past = Instant::now()
        .checked_sub(Duration::from_secs(1))
        .unwrap_or_else(Instant::now);
    std::thread::sleep(Duration::from_millis(2));
    let lp = EventLoop::new().unwrap();
    let th = lp.call_at(past, || {}).unwrap();
    assert_eq!(th.when(), past);
}

#[test]
fn huge_delays_do_not_panic() {
    let lp = EventLoop::new().unwrap();
    let ran = Rc::new(Cell::new(false));
    let r = ran.clone();
    let max = lp.call_later(Duration::MAX, move || r.set(true)).unwrap();
    let _ = max.when(); // saturates, must not panic
    let far = Instant::now() + Duration::from_secs(200 * 365 * 86_400);
    let r = ran.clone();
    let far_h = lp.call_at(far, move || r.set(true)).unwrap();
    assert_eq!(far_h.when(), far);
    // A sleeping task with a huge delay, too.
    let task = lp
        .create_task(async {
            sleep(Duration::MAX).await;
        })
        .unwrap();
    assert_eq!(lp.stats().timers, 2);

    // The loop still runs promptly while those timers are pending (a poll timeout computed
    // from them must not overflow, and must not block: something is ready).
    let t0 = Instant::now();
    let h = lp.handle();
    lp.call_soon(move || h.stop()).unwrap();
    lp.run_forever().unwrap();
    spin_once(&lp);
    assert!(t0.elapsed() < Duration::from_secs(5));
    assert!(!ran.get());
    assert_eq!(lp.stats().timers, 3, "the two timers and the sleeping task's timer");

    max.cancel();
    far_h.cancel();
    task.cancel();
    spin_once(&lp);
    spin_once(&lp);
    assert_eq!(lp.stats().timers, 0, "{:?}", lp.stats());
    assert_eq!(lp.stats().tasks, 0);
}

#[test]
fn loop_time_is_monotonic_and_never_ahead_of_instant_now() {
    let lp = EventLoop::new().unwrap();
    let mut prev = lp.time();
    for _ in 0..10_000 {
        let t = lp.time();
        let now = Instant::now();
        assert!(t >= prev, "loop time went backwards");
        assert!(t <= now, "loop time leads Instant::now()");
        prev = t;
    }
}

// ---------------------------------------------------------------------------------------------
// Handle::cancel and TimerHandle::cancel.

#[test]
fn cancelled_handle_never_runs() {
    let lp = EventLoop::new().unwrap();
    let log = new_log();
    lp.call_soon(pusher(&log, 1)).unwrap();
    let h = lp.call_soon(pusher(&log, 2)).unwrap();
    lp.call_soon(pusher(&log, 3)).unwrap();
    assert!(!h.cancelled());
    h.cancel();
    assert!(h.cancelled());
    lp.run_once().unwrap();
    spin_once(&lp);
    assert_eq!(taken(&log), vec![1, 3]);
}

#[test]
fn a_cancelled_callback_is_released_not_leaked() {
    // The closure of a cancelled handle is released once the loop skips it (not leaked).
    let lp = EventLoop::new().unwrap();
    let drops = Rc::new(Cell::new(0));
    let guard = DropCounter(drops.clone());
    let h = lp
        .call_soon(move || {
            let _g = &guard;
            panic!("a cancelled handle ran");
        })
        .unwrap();
    h.cancel();
    lp.run_once().unwrap();
    drop(h);
    assert_eq!(drops.get(), 1, "the cancelled callback's closure was not dropped");
}

#[test]
fn handle_cancel_is_idempotent() {
    let lp = EventLoop::new().unwrap();
    let log = new_log();
    let h = lp.call_soon(pusher(&log, "x")).unwrap();
    let h2 = h.clone();
    h.cancel();
    h.cancel();
    h2.cancel();
    assert!(h.cancelled() && h2.cancelled());
    lp.call_soon(pusher(&log, "y")).unwrap();
    lp.run_once().unwrap();
    assert_eq!(taken(&log), vec!["y"]);
}

#[test]
fn cancelling_a_handle_that_ran_is_a_no_op() {
    let lp = EventLoop::new().unwrap();
    let n = Rc::new(Cell::new(0));
    let n2 = n.clone();
    let h = lp.call_soon(move || n2.set(n2.get() + 1)).unwrap();
    lp.run_once().unwrap();
    assert_eq!(n.get(), 1);
    h.cancel();
    h.cancel();
    spin_once(&lp);
    assert_eq!(n.get(), 1);
    // The loop is unaffected.
    let n3 = n.clone();
    lp.call_soon(move || n3.set(n3.get() + 10)).unwrap();
    lp.run_once().unwrap();
    assert_eq!(n.get(), 11);
}

#[test]
fn a_callback_can_cancel_a_handle_ready_in_the_same_iteration() {
    let lp = EventLoop::new().unwrap();
    let log = new_log();
    let victim: Rc<RefCell<Option<Handle>>> = Rc::new(RefCell::new(None));
    let v = victim.clone();
    let l = log.clone();
    lp.call_soon(move || {
        l.borrow_mut().push("killer");
        v.borrow().as_ref().unwrap().cancel();
    })
    .unwrap();
    *victim.borrow_mut() = Some(lp.call_soon(pusher(&log, "victim")).unwrap());
    lp.call_soon(pusher(&log, "after")).unwrap();
    lp.run_once().unwrap();
    assert_eq!(taken(&log), vec!["killer", "after"]);
}

#[test]
fn cancelled_timer_never_runs() {
    let lp = EventLoop::new().unwrap();
    let log = new_log();
    let t1 = lp
        .call_later(Duration::from_millis(1), pusher(&log, "cancelled"))
        .unwrap();
    lp.call_later(Duration::from_millis(2), pusher(&log, "kept")).unwrap();
    t1.cancel();
    assert!(t1.cancelled());
    let h = lp.handle();
    lp.call_later(Duration::from_millis(5), move || h.stop()).unwrap();
    lp.run_forever().unwrap();
    assert_eq!(taken(&log), vec!["kept"]);
}

#[test]
fn timer_cancel_removes_the_timer_from_the_heap_by_the_next_iteration() {
    let lp = EventLoop::new().unwrap();
    let drops = Rc::new(Cell::new(0));
    let g = DropCounter(drops.clone());
    let th = lp
        .call_later(Duration::from_secs(3600), move || {
            let _g = &g;
        })
        .unwrap();
    assert_eq!(lp.stats().timers, 1);
    th.cancel();
    spin_once(&lp);
    assert_eq!(lp.stats().timers, 0, "a cancelled timer is garbage in the heap");
    drop(th);
    assert_eq!(drops.get(), 1, "the cancelled timer's closure was not released");
}

#[test]
fn timer_cancel_is_idempotent() {
    let lp = EventLoop::new().unwrap();
    let log = new_log();
    let th = lp.call_later(Duration::from_millis(1), pusher(&log, "x")).unwrap();
    th.cancel();
    th.cancel();
    th.cancel();
    assert!(th.cancelled());
    let h = lp.handle();
    lp.call_later(Duration::from_millis(3), move || h.stop()).unwrap();
    lp.run_forever().unwrap();
    assert!(log.borrow().is_empty());
    assert_eq!(lp.stats().timers, 0);
}

#[test]
fn cancelling_a_timer_that_ran_is_a_no_op_and_cancels_no_other_timer() {
    let lp = EventLoop::new().unwrap();
    let log = new_log();
    let first = lp.call_later(Duration::ZERO, pusher(&log, "first")).unwrap();
    spin_once(&lp);
    assert_eq!(taken(&log), vec!["first"]);
    // A new timer may reuse the heap slot of the one that ran; the stale handle's cancel must
    // not reach it.
    lp.call_later(Duration::from_millis(1), pusher(&log, "second")).unwrap();
    first.cancel();
    first.cancel();
    let h = lp.handle();
    lp.call_later(Duration::from_millis(4), move || h.stop()).unwrap();
    lp.run_forever().unwrap();
    assert_eq!(taken(&log), vec!["first", "second"]);
    assert_eq!(lp.stats().timers, 0);
}

#[test]
fn a_timer_cancelled_after_it_expired_in_the_same_iteration_does_not_run() {
    let lp = EventLoop::new().unwrap();
    let log = new_log();
    let when = Instant::now();
    let victim: Rc<RefCell<Option<TimerHandle>>> = Rc::new(RefCell::new(None));
    let (v, l) = (victim.clone(), log.clone());
    lp.call_at(when, move || {
        l.borrow_mut().push("killer");
        v.borrow().as_ref().unwrap().cancel();
    })
    .unwrap();
    *victim.borrow_mut() = Some(lp.call_at(when, pusher(&log, "victim")).unwrap());
    lp.call_at(when, pusher(&log, "after")).unwrap();
    lp.run_once().unwrap();
    spin_once(&lp);
    assert_eq!(taken(&log), vec!["killer", "after"]);
    assert_eq!(lp.stats().timers, 0);
}

#[test]
fn cancelling_many_timers_leaves_no_garbage() {
    let lp = EventLoop::new().unwrap();
    let handles: Vec<TimerHandle> = (0..1000u64)
        .map(|i| lp.call_later(Duration::from_secs(100 + i), || {}).unwrap())
        .collect();
    let keep = lp.call_later(Duration::from_secs(50), || {}).unwrap();
    assert_eq!(lp.stats().timers, 1001);
    for h in handles.iter().step_by(2) {
        h.cancel();
    }
    spin_once(&lp);
    assert_eq!(lp.stats().timers, 501);
    for h in &handles {
        h.cancel(); // again for half of them: idempotent
    }
    spin_once(&lp);
    assert_eq!(lp.stats().timers, 1);
    keep.cancel();
    spin_once(&lp);
    assert_eq!(lp.stats().timers, 0);
}

// ---------------------------------------------------------------------------------------------
// stop, run_forever, run_until_complete, re-entrancy.

#[test]
fn stop_makes_run_forever_return_after_the_current_iteration() {
    let lp = EventLoop::new().unwrap();
    let log = new_log();
    let (h, l) = (lp.handle(), log.clone());
    lp.call_soon(move || {
        l.borrow_mut().push("stopper");
        h.stop();
        h.call_soon(pusher(&l, "next-iteration")).unwrap();
    })
    .unwrap();
    lp.call_soon(pusher(&log, "same-iteration")).unwrap();
    let start = lp.stats().iterations;
    lp.run_forever().unwrap();
    assert_eq!(taken(&log), vec!["stopper", "same-iteration"]);
    assert_eq!(lp.stats().iterations, start + 1);
    assert!(!lp.is_running());
    // The work scheduled for the next iteration is still there.
    assert_eq!(lp.stats().ready, 1);
    lp.run_once().unwrap();
    assert_eq!(taken(&log), vec!["stopper", "same-iteration", "next-iteration"]);
}

#[test]
fn stop_from_a_timer_makes_run_forever_return() {
    let lp = EventLoop::new().unwrap();
    let h = lp.handle();
    let t0 = Instant::now();
    lp.call_later(Duration::from_millis(10), move || h.stop()).unwrap();
    lp.run_forever().unwrap();
    assert!(t0.elapsed() >= Duration::from_millis(10));
    assert!(t0.elapsed() < Duration::from_secs(10));
}

#[test]
fn stop_before_run_forever_runs_exactly_one_iteration() {
    let lp = EventLoop::new().unwrap();
    let log = new_log();
    let (h, l) = (lp.handle(), log.clone());
    lp.call_soon(move || {
        l.borrow_mut().push(1);
        h.call_soon(pusher(&l, 2)).unwrap();
    })
    .unwrap();
    lp.stop();
    let start = lp.stats().iterations;
    let t0 = Instant::now();
    lp.run_forever().unwrap();
    assert_eq!(lp.stats().iterations, start + 1);
    assert_eq!(taken(&log), vec![1]);
    assert!(t0.elapsed() < Duration::from_secs(5), "the iteration must not block");

    // Also with nothing to do at all: one non-blocking iteration, then return.
    let lp = EventLoop::new().unwrap();
    lp.stop();
    lp.run_forever().unwrap();
    assert_eq!(lp.stats().iterations, 1);
}

#[test]
fn a_stopped_loop_can_run_again() {
    let lp = EventLoop::new().unwrap();
    let h = lp.handle();
    lp.call_soon(move || h.stop()).unwrap();
    lp.run_forever().unwrap();
    // The stop was consumed: the next run_forever runs until the next stop (three iterations
    // of a self-rescheduling chain here), not just one iteration.
    let n = Rc::new(Cell::new(0));
    fn chain(h: LoopHandle, n: Rc<Cell<u32>>) {
        n.set(n.get() + 1);
        if n.get() == 3 {
            h.stop();
        } else {
            let h2 = h.clone();
            h.call_soon(move || chain(h2, n)).unwrap();
        }
    }
    let (h, n2) = (lp.handle(), n.clone());
    lp.call_soon(move || chain(h, n2)).unwrap();
    let start = lp.stats().iterations;
    lp.run_forever().unwrap();
    assert_eq!(n.get(), 3);
    assert_eq!(lp.stats().iterations, start + 3);
}

#[test]
fn run_until_complete_returns_the_futures_output() {
    let lp = EventLoop::new().unwrap();
    assert_eq!(lp.run_until_complete(async { 42 }).unwrap(), 42);
    let s = lp
        .run_until_complete(async {
            sleep(Duration::from_millis(2)).await;
            String::from("done")
        })
        .unwrap();
    assert_eq!(s, "done");
    // A future that waits on a promise resolved by a callback.
    let p: Promise<Vec<u8>> = lp.create_future();
    let p2 = p.clone();
    lp.call_later(Duration::from_millis(1), move || p2.set_result(vec![1, 2, 3]).unwrap())
        .unwrap();
    assert_eq!(lp.run_until_complete(p.wait()).unwrap().unwrap(), vec![1, 2, 3]);
    // The loop is not left running, and the task is gone.
    assert!(!lp.is_running());
    assert_eq!(lp.stats().tasks, 0);
}

#[test]
fn run_until_complete_of_a_panicking_future_is_a_task_error() {
    let lp = EventLoop::new().unwrap();
    let r = lp.run_until_complete(async {
        if true {
            panic!("future boom");
        }
    });
    match r {
        Err(RunError::Task(e)) => {
            assert!(e.is_panic());
            assert_eq!(e.panic().unwrap().message(), "future boom");
        }
        other => panic!("expected a task panic, got {other:?}"),
    }
    // The loop survives.
    assert_eq!(lp.run_until_complete(async { 1 }).unwrap(), 1);
}

#[test]
fn stop_inside_run_until_complete_before_the_future_completes_is_a_stopped_error() {
    let lp = EventLoop::new().unwrap();
    let p: Promise<u32> = lp.create_future();
    let p2 = p.clone();
    let h = lp.handle();
    lp.call_soon(move || h.stop()).unwrap();
    let r = lp.run_until_complete(async move { p2.await.unwrap() });
    match r {
        Err(RunError::Loop(e)) => {
            assert_eq!(e.kind(), LoopErrorKind::Stopped);
            assert!(e.to_string().contains("run_until_complete"), "{e}");
        }
        other => panic!("expected Stopped, got {other:?}"),
    }
    assert!(!lp.is_running());
    // The task stays in the loop (asyncio's behaviour); the loop still works.
    assert_eq!(lp.stats().tasks, 1);
    p.set_result(7).unwrap();
    assert_eq!(lp.run_until_complete(async { 8 }).unwrap(), 8);
    assert_eq!(
        lp.stats().tasks,
        0,
        "the detached task finished once the promise resolved"
    );
}

#[test]
fn running_a_loop_that_is_already_running_on_this_thread_is_an_error_not_a_hang() {
    let lp = EventLoop::new().unwrap();
    let kinds: Log<(&str, LoopErrorKind)> = new_log();
    let (h, k) = (lp.handle(), kinds.clone());
    lp.call_soon(move || {
        k.borrow_mut()
            .push(("run_forever", h.run_forever().unwrap_err().kind()));
        k.borrow_mut().push(("run_once", h.run_once().unwrap_err().kind()));
        k.borrow_mut()
            .push(("run_until_complete", loop_kind(h.run_until_complete(async { 1 }))));
        let e = h.run_forever().unwrap_err();
        assert!(e.to_string().contains("run_forever"), "{e}");
        assert_eq!(e.operation(), "run_forever");
    })
    .unwrap();
    // Inside a task too (run_until_complete nested in run_until_complete).
    let h = lp.handle();
    let t = lp
        .create_task(async move { loop_kind(h.run_until_complete(async { 2 })) })
        .unwrap();
    let from_task = lp.run_until_complete(t).unwrap().unwrap();
    assert_eq!(from_task, LoopErrorKind::AlreadyRunning);
    assert_eq!(
        taken(&kinds),
        vec![
            ("run_forever", LoopErrorKind::AlreadyRunning),
            ("run_once", LoopErrorKind::AlreadyRunning),
            ("run_until_complete", LoopErrorKind::AlreadyRunning),
        ]
    );
    // The refused nested run_until_complete did not leave a task behind, and the loop works.
    assert_eq!(lp.stats().tasks, 0);
    assert!(!lp.is_running());
    assert_eq!(lp.run_until_complete(async { 3 }).unwrap(), 3);
}

#[test]
fn running_a_second_loop_while_one_runs_on_this_thread_is_an_error() {
    let lp = EventLoop::new().unwrap();
    let other = EventLoop::new().unwrap();
    let other_h = other.handle();
    let kinds: Log<LoopErrorKind> = new_log();
    let k = kinds.clone();
    lp.call_soon(move || {
        k.borrow_mut().push(other_h.run_forever().unwrap_err().kind());
        k.borrow_mut().push(other_h.run_once().unwrap_err().kind());
        k.borrow_mut().push(loop_kind(other_h.run_until_complete(async { 1 })));
        let e = other_h.run_forever().unwrap_err();
        assert!(e.to_string().contains("run_forever"), "{e}");
        // It is not running and not broken, just refused.
        assert!(!other_h.is_running());
    })
    .unwrap();
    lp.run_once().unwrap();
    assert_eq!(taken(&kinds), vec![LoopErrorKind::AnotherLoopRunning; 3]);
    assert_eq!(
        other.stats().tasks,
        0,
        "the refused run_until_complete left a task behind"
    );
    // Once the first loop returned, the second one runs normally.
    assert_eq!(other.run_until_complete(async { 5 }).unwrap(), 5);
}

#[test]
fn is_running_is_true_only_while_the_loop_runs() {
    let lp = EventLoop::new().unwrap();
    assert!(!lp.is_running());
    let seen = Rc::new(Cell::new(false));
    let (h, s) = (lp.handle(), seen.clone());
    lp.call_soon(move || s.set(h.is_running())).unwrap();
    lp.run_once().unwrap();
    assert!(seen.get());
    assert!(!lp.is_running());
    // Also after a run that ended with a panic inside a callback.
    let h = lp.handle();
    let _seen = record_seen(&lp);
    lp.call_soon(|| panic!("boom")).unwrap();
    lp.call_soon(move || h.stop()).unwrap();
    lp.run_forever().unwrap();
    assert!(!lp.is_running());
    assert!(!lp.is_closed());
}

// ---------------------------------------------------------------------------------------------
// close.

#[test]
fn close_on_a_running_loop_is_an_error() {
    let lp = EventLoop::new().unwrap();
    let got: Rc<RefCell<Option<LoopError>>> = Rc::new(RefCell::new(None));
    let (h, g) = (lp.handle(), got.clone());
    lp.call_soon(move || *g.borrow_mut() = h.close().err()).unwrap();
    lp.run_once().unwrap();
    let e = got.borrow_mut().take().expect("close() inside the loop succeeded");
    assert_eq!(e.kind(), LoopErrorKind::Running);
    assert!(e.to_string().contains("close"), "{e}");
    // Not closed by the failed attempt.
    assert!(!lp.is_closed());
    assert_eq!(lp.run_until_complete(async { 1 }).unwrap(), 1);
}

#[test]
fn close_is_idempotent() {
    let lp = EventLoop::new().unwrap();
    assert!(!lp.is_closed());
    lp.close().unwrap();
    assert!(lp.is_closed());
    lp.close().unwrap();
    lp.close().unwrap();
    assert!(lp.is_closed());
    assert_eq!(lp.epoll_fd(), None);
}

#[test]
fn a_closed_loop_refuses_new_work_with_an_error_naming_the_operation() {
    let lp = EventLoop::new().unwrap();
    let (r, w) = evloop_syscalls::pipe2().unwrap();
    lp.close().unwrap();
    let drops = Rc::new(Cell::new(0));

    fn check(e: &LoopError, op: &str) {
        assert_eq!(e.kind(), LoopErrorKind::Closed, "{op}: {e}");
        assert!(e.to_string().contains(op), "the error of {op} does not name it: {e}");
    }
    let g = DropCounter(drops.clone());
    check(&lp.call_soon(move || drop(g)).unwrap_err(), "call_soon");
    let g = DropCounter(drops.clone());
    check(
        &lp.call_later(Duration::ZERO, move || drop(g)).unwrap_err(),
        "call_later",
    );
    let g = DropCounter(drops.clone());
    check(&lp.call_at(Instant::now(), move || drop(g)).unwrap_err(), "call_at");
    let g = DropCounter(drops.clone());
    check(&lp.create_task(async move { drop(g) }).unwrap_err(), "create_task");
    check(&lp.run_forever().unwrap_err(), "run_forever");
    check(&lp.run_once().unwrap_err(), "run_once");
    let g = DropCounter(drops.clone());
    match lp.run_until_complete(async move { drop(g) }) {
        Err(RunError::Loop(e)) => check(&e, "run_until_complete"),
        other => panic!("run_until_complete on a closed loop: {other:?}"),
    }
    check(&lp.run_in_executor(|| 1).unwrap_err(), "run_in_executor");
    check(&lp.call_soon_threadsafe(|| {}).unwrap_err(), "call_soon_threadsafe");

    use std::os::fd::AsRawFd;
    for (op, e) in [
        ("add_reader", lp.add_reader(r.as_raw_fd(), || {}).unwrap_err()),
        ("add_writer", lp.add_writer(w.as_raw_fd(), || {}).unwrap_err()),
    ] {
        assert!(e.to_string().contains(op), "the error of {op} does not name it: {e}");
        let inner = e.get_ref().and_then(|i| i.downcast_ref::<LoopError>());
        assert_eq!(inner.map(LoopError::kind), Some(LoopErrorKind::Closed), "{op}: {e}");
    }
    assert!(!lp.remove_reader(r.as_raw_fd()));
    assert!(!lp.remove_writer(w.as_raw_fd()));
    // The refused work was dropped, not kept (every closure and future given above).
    assert_eq!(drops.get(), 5);
    assert_eq!(lp.stats().ready, 0);
    assert_eq!(lp.stats().tasks, 0);
    assert_eq!(lp.stats().timers, 0);
}

#[test]
fn closing_drops_pending_tasks_futures_and_callbacks() {
    let lp = EventLoop::new().unwrap();
    let (r, _w) = evloop_syscalls::pipe2().unwrap();
    let drops = Rc::new(Cell::new(0));

    // A task that has started and is suspended on a promise (the guard lives in its state).
    let p: Promise<()> = lp.create_future();
    let (g, p2) = (DropCounter(drops.clone()), p.clone());
    let mut started = lp
        .create_task(async move {
            let _g = g;
            let _ = p2.await;
        })
        .unwrap();
    spin_once(&lp);
    assert_eq!(started.state(), TaskState::Pending);
    // A task that never ran.
    let g = DropCounter(drops.clone());
    let mut never_ran = lp.create_task(async move { drop(g) }).unwrap();
    // A detached, suspended task.
    let g = DropCounter(drops.clone());
    lp.create_task(async move {
        let _g = g;
        sleep(Duration::from_secs(3600)).await;
    })
    .unwrap()
    .detach();
    // Callbacks: ready, timer, fd.
    let g = DropCounter(drops.clone());
    lp.call_soon(move || drop(g)).unwrap();
    let g = DropCounter(drops.clone());
    lp.call_later(Duration::from_secs(3600), move || drop(g)).unwrap();
    let g = DropCounter(drops.clone());
    use std::os::fd::AsRawFd;
    lp.add_reader(r.as_raw_fd(), move || {
        let _g = &g;
    })
    .unwrap();

    assert_eq!(drops.get(), 0);
    let stats = lp.stats();
    assert_eq!((stats.tasks, stats.fds), (3, 1), "{stats:?}");
    lp.close().unwrap();
    assert_eq!(
        drops.get(),
        6,
        "every pending future and callback is dropped by close()"
    );
    let stats = lp.stats();
    assert_eq!(
        (stats.ready, stats.timers, stats.tasks, stats.fds),
        (0, 0, 0, 0),
        "{stats:?}"
    );
    // Their handles report them cancelled.
    assert!(started.done() && never_ran.done());
    assert!(started.try_result().unwrap().unwrap_err().is_cancelled());
    assert!(never_ran.try_result().unwrap().unwrap_err().is_cancelled());
}

#[test]
fn destructors_run_by_close_find_the_loop_closed_instead_of_panicking() {
    struct CallsBack {
        h: LoopHandle,
        out: Rc<RefCell<Vec<Option<LoopErrorKind>>>>,
    }
    impl Drop for CallsBack {
        fn drop(&mut self) {
            let r = self.h.call_soon(|| {});
            self.out.borrow_mut().push(r.err().map(|e| e.kind()));
            let r = self.h.call_later(Duration::ZERO, || {});
            self.out.borrow_mut().push(r.err().map(|e| e.kind()));
            let r = self.h.create_task(async {});
            self.out.borrow_mut().push(r.err().map(|e| e.kind()));
            let _ = self.h.stats();
            let _ = self.h.remove_reader(0);
        }
    }
    let lp = EventLoop::new().unwrap();
    let out = Rc::new(RefCell::new(Vec::new()));
    let g = CallsBack {
        h: lp.handle(),
        out: out.clone(),
    };
    lp.create_task(async move {
        let _g = g;
        std::future::pending::<()>().await;
    })
    .unwrap()
    .detach();
    spin_once(&lp);
    let g = CallsBack {
        h: lp.handle(),
        out: out.clone(),
    };
    lp.call_later(Duration::from_secs(60), move || drop(g)).unwrap();
    lp.close().unwrap();
    assert_eq!(*out.borrow(), vec![Some(LoopErrorKind::Closed); 6]);
}

#[test]
fn closing_releases_every_fd_the_loop_opened() {
    use std::os::fd::{AsFd, AsRawFd};
    let before = counters::snapshot();
    let lp = EventLoop::new().unwrap();
    let built = counters::snapshot().since(&before);
    let opened = built.get(Syscall::EpollCreate1)
        + built.get(Syscall::Eventfd)
        + built.get(Syscall::TimerfdCreate)
        + 2 * (built.get(Syscall::Pipe2) + built.get(Syscall::Socketpair));
    assert!(opened >= 1, "the loop opened no fd? {built}");
    let epfd = lp.epoll_fd().expect("an open loop has an epoll fd");
    assert!(evloop_syscalls::fd_is_open(epfd));

    // Use the loop a little: fds of the user's and a timer.
    let (r, w) = evloop_syscalls::pipe2().unwrap();
    lp.add_reader(r.as_raw_fd(), || {}).unwrap();
    lp.add_writer(w.as_raw_fd(), || {}).unwrap();
    lp.call_later(Duration::from_secs(60), || {}).unwrap();
    spin_once(&lp);
    assert_eq!(lp.stats().fds, 2);

    let before_close = counters::snapshot();
    lp.close().unwrap();
    let closing = counters::snapshot().since(&before_close);
    assert_eq!(
        closing.get(Syscall::Close),
        opened,
        "close() must close exactly the fds the loop opened ({built}; at close: {closing})"
    );
    assert_eq!(lp.epoll_fd(), None);
    assert_eq!(lp.stats().fds, 0);
    // The user's fds are the user's: still open and usable.
    assert_eq!(evloop_syscalls::write(w.as_fd(), b"x").unwrap(), 1);
    let mut buf = [0u8; 4];
    assert_eq!(evloop_syscalls::read(r.as_fd(), &mut buf).unwrap(), 1);
}

#[test]
fn dropping_the_event_loop_closes_it() {
    let lp = EventLoop::new().unwrap();
    let h = lp.handle();
    let remote = lp.remote();
    let drops = Rc::new(Cell::new(0));
    let g = DropCounter(drops.clone());
    lp.call_soon(move || drop(g)).unwrap();
    drop(lp);
    assert!(h.is_closed());
    assert!(remote.is_closed());
    assert_eq!(drops.get(), 1);
    assert_eq!(h.call_soon(|| {}).unwrap_err().kind(), LoopErrorKind::Closed);
    assert!(remote.call_soon_threadsafe(|| {}).is_err());
}

// ---------------------------------------------------------------------------------------------
// The exception handler.

#[test]
fn a_panicking_callback_is_reported_to_the_exception_handler_and_the_loop_keeps_running() {
    let lp = EventLoop::new().unwrap();
    let seen = record_seen(&lp);
    let log = new_log();
    lp.call_soon(pusher(&log, "before")).unwrap();
    lp.call_soon(|| panic!("callback boom")).unwrap();
    lp.call_soon(pusher(&log, "after, same iteration")).unwrap();
    lp.run_once().unwrap();
    assert_eq!(taken(&log), vec!["before", "after, same iteration"]);

    let seen_now = taken(&seen);
    assert_eq!(seen_now.len(), 1, "{seen_now:?}");
    let s = &seen_now[0];
    assert_eq!(s.kind, ExceptionKind::CallbackPanicked);
    assert_eq!(s.panic.as_deref(), Some("callback boom"));
    assert!(
        s.message.contains("call_soon"),
        "the message does not name the callback: {}",
        s.message
    );
    assert!(
        s.message.contains(file!()),
        "the message does not locate the callback: {}",
        s.message
    );
    let handle = s.handle.as_deref().expect("the context names the handle");
    assert!(handle.contains("call_soon") && handle.contains(file!()), "{handle}");
    assert!(s.same_loop, "the handler got a handle to another loop");

    // Later iterations still run.
    assert_eq!(lp.run_until_complete(async { "alive" }).unwrap(), "alive");
}

#[test]
fn a_panicking_timer_callback_is_reported_naming_call_later() {
    let lp = EventLoop::new().unwrap();
    let seen = record_seen(&lp);
    let log = new_log();
    lp.call_later(Duration::from_millis(1), || panic!("timer boom"))
        .unwrap();
    lp.call_at(Instant::now() + Duration::from_millis(1), || panic!("call_at boom"))
        .unwrap();
    lp.call_later(Duration::from_millis(2), pusher(&log, "later timer"))
        .unwrap();
    let h = lp.handle();
    lp.call_later(Duration::from_millis(3), move || h.stop()).unwrap();
    lp.run_forever().unwrap();
    assert_eq!(taken(&log), vec!["later timer"]);
    let seen = taken(&seen);
    assert_eq!(seen.len(), 2, "{seen:?}");
    for s in &seen {
        assert_eq!(s.kind, ExceptionKind::CallbackPanicked);
        assert!(s.message.contains("call_later"), "{}", s.message);
    }
    let mut msgs: Vec<_> = seen.iter().filter_map(|s| s.panic.clone()).collect();
    msgs.sort();
    assert_eq!(msgs, vec!["call_at boom", "timer boom"]);
}

#[test]
fn a_panic_with_a_non_string_payload_is_reported_too() {
    let lp = EventLoop::new().unwrap();
    let seen = record_seen(&lp);
    lp.call_soon(|| std::panic::panic_any(42u64)).unwrap();
    lp.run_once().unwrap();
    let seen = taken(&seen);
    assert_eq!(seen.len(), 1);
    assert_eq!(seen[0].kind, ExceptionKind::CallbackPanicked);
    assert!(seen[0].panic.is_some());
}

#[test]
fn a_panicking_exception_handler_does_not_kill_the_loop() {
    let lp = EventLoop::new().unwrap();
    let calls = Rc::new(Cell::new(0));
    let c = calls.clone();
    lp.set_exception_handler(Some(Box::new(move |_: &LoopHandle, _: &ExceptionContext| {
        c.set(c.get() + 1);
        panic!("handler boom");
    })));
    let log = new_log();
    lp.call_soon(|| panic!("first")).unwrap();
    lp.call_soon(pusher(&log, 1)).unwrap();
    lp.run_once().unwrap();
    lp.call_soon(|| panic!("second")).unwrap();
    lp.call_soon(pusher(&log, 2)).unwrap();
    lp.run_once().unwrap();
    assert_eq!(taken(&log), vec![1, 2]);
    assert_eq!(calls.get(), 2, "the handler stays installed after it panicked");
    assert!(!lp.is_running());
    assert_eq!(lp.run_until_complete(async { 9 }).unwrap(), 9);
}

#[test]
fn set_exception_handler_none_restores_the_default() {
    let lp = EventLoop::new().unwrap();
    let seen = record_seen(&lp);
    lp.call_soon(|| panic!("to the recorder")).unwrap();
    lp.run_once().unwrap();
    assert_eq!(seen.borrow().len(), 1);

    lp.set_exception_handler(None);
    let log = new_log();
    lp.call_soon(|| panic!("to the default handler (stderr)")).unwrap();
    lp.call_soon(pusher(&log, "still running")).unwrap();
    lp.run_once().unwrap();
    assert_eq!(seen.borrow().len(), 1, "the replaced handler was still called");
    assert_eq!(taken(&log), vec!["still running"]);
}

#[test]
fn call_exception_handler_passes_the_context_to_the_handler() {
    let lp = EventLoop::new().unwrap();
    let seen = record_seen(&lp);
    lp.call_exception_handler(ExceptionContext {
        kind: ExceptionKind::TaskFailureUnobserved,
        message: "custom problem".into(),
        panic: None,
        task: Some("Task-99".into()),
        handle: None,
    });
    let seen = taken(&seen);
    assert_eq!(seen.len(), 1);
    assert_eq!(seen[0].kind, ExceptionKind::TaskFailureUnobserved);
    assert_eq!(seen[0].message, "custom problem");
    assert!(seen[0].same_loop);
}

#[test]
fn the_exception_handler_may_use_the_loop() {
    // The handler is called with no loop state borrowed: it can schedule work and stop the loop.
    let lp = EventLoop::new().unwrap();
    let log = new_log();
    let l = log.clone();
    lp.set_exception_handler(Some(Box::new(move |h: &LoopHandle, ctx: &ExceptionContext| {
        let msg = ctx.panic.as_ref().map(|p| p.message().to_string()).unwrap_or_default();
        h.call_soon(pusher(&l, msg)).unwrap();
        h.stop();
    })));
    lp.call_soon(|| panic!("handled")).unwrap();
    lp.run_forever().unwrap();
    spin_once(&lp);
    assert_eq!(taken(&log), vec!["handled".to_string()]);
}

// ---------------------------------------------------------------------------------------------
// get_running_loop.

#[test]
fn get_running_loop_inside_a_callback_returns_the_same_loop() {
    let lp = EventLoop::new().unwrap();
    let other = EventLoop::new().unwrap();
    let results = new_log();
    let (h, o, r) = (lp.handle(), other.handle(), results.clone());
    lp.call_soon(move || {
        let running = get_running_loop().expect("a loop is running");
        r.borrow_mut().push(running.same_loop(&h));
        r.borrow_mut().push(running.same_loop(&o));
    })
    .unwrap();
    lp.run_once().unwrap();
    assert_eq!(taken(&results), vec![true, false]);

    // And inside a task.
    let h = lp.handle();
    let same = lp
        .run_until_complete(async move { get_running_loop().map(|r| r.same_loop(&h)) })
        .unwrap()
        .unwrap();
    assert!(same);
}

#[test]
fn get_running_loop_outside_a_running_loop_is_an_error() {
    let e = get_running_loop().unwrap_err();
    assert_eq!(e.kind(), LoopErrorKind::NoRunningLoop);
    assert!(e.to_string().contains("get_running_loop"), "{e}");
    let lp = EventLoop::new().unwrap();
    // A loop that exists but is not running does not count.
    assert_eq!(get_running_loop().unwrap_err().kind(), LoopErrorKind::NoRunningLoop);
    lp.run_until_complete(async {}).unwrap();
    // Nor one that has returned.
    assert_eq!(get_running_loop().unwrap_err().kind(), LoopErrorKind::NoRunningLoop);
}

#[test]

fn closing_drops_the_exception_handler() {
    let lp = EventLoop::new().unwrap();
    let drops = Rc::new(Cell::new(0));
    let g = DropCounter(drops.clone());
    let me = lp.handle();
    lp.set_exception_handler(Some(Box::new(move |_: &LoopHandle, _: &ExceptionContext| {
        let _ = (&g, &me);
    })));
    lp.close().unwrap();
    assert_eq!(drops.get(), 1, "the handler (and the loop it holds) outlives close()");
}
