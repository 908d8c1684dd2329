//! The task contract (docs/design.md, "Task"), plus the regressions of "Failures of the runtimes we
//! learn from" that concern tasks:
//!
//! - Its first step is scheduled with `call_soon` (an eager start is an explicit opt-in).
//! - A task is polled only after a wake; many wakes before a poll give one poll; spurious wakes
//!   are harmless; a wake from another thread works.
//! - The loop holds every task until it finishes: dropping the `Task` handle detaches it, never
//!   kills it (CPython #117379, #88831).
//! - `cancel()` drops the task's future at its next step, so its destructors run as cleanup;
//!   awaiting the task then gives `Err(Cancelled)`. A panic inside a task gives `Err(Panicked)` to
//!   its awaiter; a failure that nobody observes reaches the exception handler, once (and an
//!   observed one never does: python/asyncio #397).
//! - Tasks have names (`Task-1`, ... unless named), done callbacks, `current_task()`, `all_tasks()`.
//! - A task that is always ready does not monopolise the loop (smol #171, tokio's budget).

use std::cell::{Cell, RefCell};
use std::future::Future;
use std::io::{Read, Write};
use std::os::fd::AsRawFd;
use std::os::unix::net::UnixStream;
use std::pin::Pin;
use std::rc::Rc;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

use evloop::{
    event_loop::{Builder, EventLoop, ExceptionKind, LoopErrorKind, LoopHandle, get_running_loop},
    spawn,
    task::{Promise, RunError, Task, TaskBuilder, TaskError, TaskRef, TaskState, current_task, yield_now},
    time::sleep,
};
use evloop_tests::watchdog::Watchdog;
// The built-in `#[test]` in this binary; the `sim` binary's runs the body on the simulated
// kernel (sim/contracts.rs).
use crate::contract_test as test;
use evloop_tests::{DropFlag, Log, entries, flag, log, push, record_exceptions_with, run_bounded, run_one};

/// What the exception handler saw: (kind, task name, panic message).
type Reports = Log<(ExceptionKind, Option<String>, Option<String>)>;

/// Installs an exception handler that records the kind, task and panic message of each report.
fn record_reports(lp: &LoopHandle) -> Reports {
    record_exceptions_with(lp, |_, ctx| {
        (
            ctx.kind,
            ctx.task.clone(),
            ctx.panic.as_ref().map(|p| p.message().to_string()),
        )
    })
}

/// A hand-made future: counts its polls, keeps the latest waker, completes when told.
#[derive(Clone, Default)]
struct Probe {
    polls: Rc<Cell<u32>>,
    waker: Rc<RefCell<Option<Waker>>>,
    ready: Rc<Cell<bool>>,
}

impl Probe {
    fn future(&self) -> ProbeFuture {
        ProbeFuture(self.clone())
    }

    fn wake(&self) {
        self.waker
            .borrow()
            .as_ref()
            .expect("polled at least once")
            .wake_by_ref();
    }
}

struct ProbeFuture(Probe);

impl Future for ProbeFuture {
    type Output = u32;
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<u32> {
        let p = &self.0;
        p.polls.set(p.polls.get() + 1);
        *p.waker.borrow_mut() = Some(cx.waker().clone());
        if p.ready.get() {
            Poll::Ready(p.polls.get())
        } else {
            Poll::Pending
        }
    }
}

// ---------------------------------------------------------------------------------------------
// The first step.

#[test]
fn task_first_step_is_scheduled_with_call_soon() {
    let lp = EventLoop::new().unwrap();
    let log = log();
    let l = log.clone();
    lp.call_soon(move || push(&l, "soon-before")).unwrap();
    let l = log.clone();
    let t = lp
        .create_task(async move {
            push(&l, "task-step-1");
            yield_now().await;
            push(&l, "task-step-2");
        })
        .unwrap();
    assert!(entries(&log).is_empty(), "nothing runs inside create_task");
    assert_eq!(t.state(), TaskState::Pending);
    let l = log.clone();
    lp.call_soon(move || push(&l, "soon-after")).unwrap();
    run_one(&lp);
    assert_eq!(
        entries(&log),
        ["soon-before", "task-step-1", "soon-after"],
        "the first step sits in the ready queue like a call_soon callback"
    );
    run_one(&lp);
    assert_eq!(entries(&log).last().unwrap(), "task-step-2");
    assert!(t.done());
}

#[test]
fn task_created_inside_a_running_loop_does_not_run_inside_create_task() {
    let lp = EventLoop::new().unwrap();
    let log = log();
    let l = log.clone();
    let h = lp.handle();
    run_bounded(&lp, async move {
        let l2 = l.clone();
        let t = spawn(async move { push(&l2, "spawned") });
        let l3 = l.clone();
        let u = h.create_task(async move { push(&l3, "created") }).unwrap();
        push(&l, "after-create");
        let l4 = l.clone();
        h.call_soon(move || push(&l4, "soon")).unwrap();
        t.await.unwrap();
        u.await.unwrap();
    });
    assert_eq!(entries(&log), ["after-create", "spawned", "created", "soon"]);
}

#[test]
fn task_eager_start_runs_the_first_step_inside_create_task() {
    let lp = EventLoop::new().unwrap();
    let h = lp.handle();
    let log = log();
    let l = log.clone();
    let (done_at_return, state_at_return, value, suspended_done, suspended_value) = run_bounded(&lp, async move {
        let l1 = l.clone();
        let eager = TaskBuilder::new()
            .eager(true)
            .spawn_on(&h, async move {
                push(&l1, "eager-body");
                5
            })
            .unwrap();
        push(&l, "create-returned");
        let done_at_return = eager.done();
        let state_at_return = eager.state();
        let value = eager.await.unwrap();

        // An eager task that suspends continues later like any task.
        let p: Promise<u8> = h.create_future();
        let p2 = p.clone();
        let l2 = l.clone();
        let suspending = TaskBuilder::new()
            .eager(true)
            .spawn(async move {
                push(&l2, "suspending-first");
                let v = p2.await.unwrap();
                push(&l2, "suspending-second");
                v
            })
            .unwrap();
        push(&l, "create2-returned");
        let suspended_done = suspending.done();
        p.set_result(8).unwrap();
        let suspended_value = suspending.await.unwrap();
        (done_at_return, state_at_return, value, suspended_done, suspended_value)
    });
    assert!(
        done_at_return,
        "a task that completes in its eager step is done when create_task returns"
    );
    assert_eq!(state_at_return, TaskState::Done);
    assert_eq!(value, 5);
    assert!(!suspended_done);
    assert_eq!(suspended_value, 8);
    assert_eq!(
        entries(&log),
        [
            "eager-body",
            "create-returned",
            "suspending-first",
            "create2-returned",
            "suspending-second"
        ]
    );
}

#[test]
fn task_eager_start_restores_the_current_task_of_its_creator() {
    let lp = EventLoop::new().unwrap();
    let h = lp.handle();
    let (outer, inside, after) = run_bounded(&lp, async move {
        let outer = current_task().map(|t| t.name());
        let inside = Rc::new(RefCell::new(None));
        let i = inside.clone();
        let t = TaskBuilder::new()
            .name("eager-child")
            .eager(true)
            .spawn_on(&h, async move {
                *i.borrow_mut() = current_task().map(|t| t.name());
            })
            .unwrap();
        assert!(t.done());
        let after = current_task().map(|t| t.name());
        let inside = inside.borrow().clone();
        (outer, inside, after)
    });
    assert!(outer.is_some());
    assert_eq!(
        inside.as_deref(),
        Some("eager-child"),
        "inside the eager step it is the child"
    );
    assert_eq!(after, outer, "after create_task returns it is the creator again");
}

#[test]
fn task_eager_start_is_lazy_when_the_loop_is_not_running() {
    let lp = EventLoop::new().unwrap();
    let ran = flag();
    let r = ran.clone();
    let t = TaskBuilder::new()
        .eager(true)
        .spawn_on(&lp, async move { r.set(true) })
        .unwrap();
    assert!(!ran.get(), "no loop running: the first step is scheduled instead");
    assert!(!t.done());
    run_bounded(&lp, t).unwrap();
    assert!(ran.get());
}

#[test]
fn task_builder_eager_tasks_makes_every_task_start_eagerly() {
    let lp = Builder::new().eager_tasks(true).build().unwrap();
    let h = lp.handle();
    let (created_done, spawned_done, lazy_done) = run_bounded(&lp, async move {
        let a = h.create_task(async { 1 }).unwrap();
        let b = spawn(async { 2 });
        let c = TaskBuilder::new().eager(false).spawn(async { 3 }).unwrap();
        let flags = (a.done(), b.done(), c.done());
        assert_eq!((a.await.unwrap(), b.await.unwrap(), c.await.unwrap()), (1, 2, 3));
        flags
    });
    assert!(created_done, "create_task starts eagerly on an eager loop");
    assert!(spawned_done, "spawn starts eagerly on an eager loop");
    assert!(!lazy_done, "TaskBuilder::eager(false) opts out");
}

// ---------------------------------------------------------------------------------------------
// Wakes.

#[test]
fn task_is_polled_only_after_a_wake() {
    let lp = EventLoop::new().unwrap();
    let probe = Probe::default();
    let t = lp.create_task(probe.future()).unwrap();
    run_one(&lp);
    assert_eq!(probe.polls.get(), 1, "the first step polls once");
    for _ in 0..5 {
        lp.call_soon(|| {}).unwrap();
        run_one(&lp);
    }
    assert_eq!(probe.polls.get(), 1, "no wake, no poll");
    let p = probe.clone();
    lp.call_soon(move || p.wake()).unwrap();
    run_one(&lp);
    assert_eq!(probe.polls.get(), 1, "the wake queues the step for the next iteration");
    run_one(&lp);
    assert_eq!(probe.polls.get(), 2, "woken once, polled once");
    assert!(!t.done());
}

#[test]
fn task_many_wakes_before_a_poll_give_one_poll() {
    let lp = EventLoop::new().unwrap();
    let probe = Probe::default();
    let t = lp.create_task(probe.future()).unwrap();
    run_one(&lp);
    assert_eq!(probe.polls.get(), 1);
    let p = probe.clone();
    lp.call_soon(move || {
        for _ in 0..100 {
            p.wake();
        }
    })
    .unwrap();
    run_one(&lp);
    assert_eq!(lp.stats().ready, 1, "100 wakes queued the task once");
    run_one(&lp);
    assert_eq!(probe.polls.get(), 2, "100 wakes before a poll give one poll");
    assert_eq!(lp.stats().ready, 0, "and nothing else is queued");
    for _ in 0..3 {
        lp.call_soon(|| {}).unwrap();
        run_one(&lp);
    }
    assert_eq!(probe.polls.get(), 2);
    // Wakes by value (consuming clones) are absorbed the same way.
    let p = probe.clone();
    lp.call_soon(move || {
        let w = p.waker.borrow().clone().unwrap();
        let clones: Vec<Waker> = (0..100).map(|_| w.clone()).collect();
        for c in clones {
            c.wake();
        }
    })
    .unwrap();
    run_one(&lp);
    run_one(&lp);
    assert_eq!(probe.polls.get(), 3);
    assert_eq!(lp.stats().ready, 0);
    probe.ready.set(true);
    probe.wake();
    assert_eq!(run_bounded(&lp, t).unwrap(), 4);
}

#[test]
fn task_spurious_wakes_are_harmless() {
    let lp = EventLoop::new().unwrap();
    let h = lp.handle();
    let p: Promise<u32> = lp.create_future();
    let polls = Rc::new(Cell::new(0u32));
    let waker: Rc<RefCell<Option<Waker>>> = Rc::default();
    let (p2, polls2, waker2) = (p.clone(), polls.clone(), waker.clone());
    let t = lp
        .create_task(async move {
            let w = std::future::poll_fn(|cx| Poll::Ready(cx.waker().clone())).await;
            *waker2.borrow_mut() = Some(w);
            // Count every poll of the promise while waiting for it.
            let mut fut = std::pin::pin!(p2.wait());
            std::future::poll_fn(|cx| {
                polls2.set(polls2.get() + 1);
                fut.as_mut().poll(cx)
            })
            .await
        })
        .unwrap();
    run_one(&lp);
    assert_eq!(polls.get(), 1);
    let w = waker.borrow().clone().unwrap();
    for _ in 0..3 {
        w.wake_by_ref(); // spurious: the promise is still pending
        lp.call_soon(|| {}).unwrap();
        run_one(&lp);
    }
    assert_eq!(polls.get(), 4, "each spurious wake gives one harmless poll");
    assert!(!t.done(), "a spurious wake does not complete anything");
    p.set_result(12).unwrap();
    assert_eq!(run_bounded(&lp, t).unwrap(), Ok(12));

    // A wake for a finished task is harmless too, even once its slot is reused by a new task.
    let probe = Probe::default();
    let fresh = h.create_task(probe.future()).unwrap();
    run_one(&lp);
    assert_eq!(probe.polls.get(), 1);
    w.wake_by_ref();
    w.wake_by_ref();
    lp.call_soon(|| {}).unwrap();
    run_one(&lp);
    lp.call_soon(|| {}).unwrap();
    run_one(&lp);
    assert_eq!(probe.polls.get(), 1, "a stale waker never reaches another task");
    assert!(!fresh.done());
    fresh.cancel();
    assert!(run_bounded(&lp, fresh).unwrap_err().is_cancelled());
}

/// Completes once another thread sets its flag; that thread wakes the task after a delay.
struct WokenFromThread {
    flag: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
    delay: Duration,
}

impl Future for WokenFromThread {
    type Output = ();
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        if self.flag.load(Ordering::SeqCst) {
            if let Some(th) = self.thread.take() {
                th.join().unwrap();
            }
            return Poll::Ready(());
        }
        if self.thread.is_none() {
            let (flag, waker, delay) = (self.flag.clone(), cx.waker().clone(), self.delay);
            self.thread = Some(std::thread::spawn(move || {
                std::thread::sleep(delay);
                flag.store(true, Ordering::SeqCst);
                waker.wake();
            }));
        }
        Poll::Pending
    }
}

#[test]
fn task_wake_from_another_thread_wakes_a_loop_blocked_in_poll() {
    let lp = EventLoop::new().unwrap();
    // Watchdog: if the cross-thread wake never reaches the loop, stop it instead of hanging.
    let watchdog = Watchdog::start(lp.remote(), Duration::from_secs(20));
    let t = lp
        .create_task(WokenFromThread {
            flag: Arc::new(AtomicBool::new(false)),
            thread: None,
            delay: Duration::from_millis(50),
        })
        .unwrap();
    let before = lp.stats().iterations;
    let started = Instant::now();
    let ran = lp.run_until_complete(t);
    let took = started.elapsed();
    let iterations = lp.stats().iterations - before;
    watchdog.finish();
    ran.expect("the wake from another thread reached the loop (the watchdog did not have to stop it)")
        .unwrap();
    assert!(
        took >= Duration::from_millis(50),
        "woken by the thread, not before: {took:?}"
    );
    assert!(took < Duration::from_secs(15), "woken promptly: {took:?}");
    assert!(
        iterations <= 6,
        "the loop slept in one blocking poll instead of spinning: {iterations} iterations"
    );
}

#[test]
fn task_wakes_from_many_threads_all_arrive() {
    let lp = EventLoop::new().unwrap();
    let h = lp.handle();
    let n = run_bounded(&lp, async move {
        let tasks: Vec<_> = (0..8u64)
            .map(|i| {
                h.create_task(WokenFromThread {
                    flag: Arc::new(AtomicBool::new(false)),
                    thread: None,
                    delay: Duration::from_millis(1 + i % 3),
                })
                .unwrap()
            })
            .collect();
        let mut n = 0;
        for t in tasks {
            t.await.unwrap();
            n += 1;
        }
        n
    });
    assert_eq!(n, 8);
}

// ---------------------------------------------------------------------------------------------
// Fairness: smol #171 / tokio's budget.

#[test]
fn task_that_wakes_itself_runs_again_only_in_the_next_iteration() {
    let lp = EventLoop::new().unwrap();
    let h = lp.handle();
    let seen = run_bounded(&lp, async move {
        let mut seen = Vec::new();
        for _ in 0..50 {
            seen.push(h.stats().iterations);
            yield_now().await;
        }
        seen
    });
    for pair in seen.windows(2) {
        assert_eq!(pair[1], pair[0] + 1, "one step per iteration: {seen:?}");
    }
}

#[test]
fn task_busy_task_does_not_starve_call_soon_callbacks_or_other_tasks() {
    let lp = EventLoop::new().unwrap();
    let h = lp.handle();
    let busy_steps = Rc::new(Cell::new(0u32));
    let other_steps = Rc::new(Cell::new(0u32));
    let callback_runs = Rc::new(Cell::new(0u32));
    let max_gap = Rc::new(Cell::new(0u32));

    // A callback that re-schedules itself with call_soon: runs once per iteration.
    fn chain(h: LoopHandle, runs: Rc<Cell<u32>>, left: u32) {
        runs.set(runs.get() + 1);
        if left > 0 {
            let h2 = h.clone();
            h.call_soon(move || chain(h2, runs, left - 1)).unwrap();
        }
    }
    let (h2, cr) = (h.clone(), callback_runs.clone());
    lp.call_soon(move || chain(h2, cr, 1_000)).unwrap();

    let (b, o, c, g) = (
        busy_steps.clone(),
        other_steps.clone(),
        callback_runs.clone(),
        max_gap.clone(),
    );
    let busy = lp
        .create_task(async move {
            for _ in 0..200 {
                b.set(b.get() + 1);
                g.set(g.get().max(b.get().abs_diff(o.get())).max(b.get().abs_diff(c.get())));
                yield_now().await;
            }
        })
        .unwrap();
    let o2 = other_steps.clone();
    let other = lp
        .create_task(async move {
            for _ in 0..200 {
                o2.set(o2.get() + 1);
                yield_now().await;
            }
        })
        .unwrap();
    run_bounded(&lp, async move {
        busy.await.unwrap();
        other.await.unwrap();
    });
    drop(h);
    assert_eq!(busy_steps.get(), 200);
    assert_eq!(other_steps.get(), 200);
    assert!(
        callback_runs.get() >= 200,
        "the callback chain kept running: {}",
        callback_runs.get()
    );
    assert!(
        max_gap.get() <= 1,
        "the busy task, the other task and the callback chain advance in lockstep (max gap {})",
        max_gap.get()
    );
}

#[test]
fn task_busy_task_does_not_starve_io_or_timers() {
    let lp = EventLoop::new().unwrap();
    let (mut writer, reader) = UnixStream::pair().unwrap();
    reader.set_nonblocking(true).unwrap();
    let fd = reader.as_raw_fd();
    let read_at = Rc::new(Cell::new(None::<u32>));
    let timer_at = Rc::new(Cell::new(None::<u32>));
    let steps = Rc::new(Cell::new(0u32));

    let (ra, s) = (read_at.clone(), steps.clone());
    let reader = RefCell::new(reader);
    lp.add_reader(fd, move || {
        let mut buf = [0u8; 16];
        if let Ok(n) = reader.borrow_mut().read(&mut buf) {
            if n > 0 && ra.get().is_none() {
                ra.set(Some(s.get()));
            }
        }
    })
    .unwrap();
    let (ta, s) = (timer_at.clone(), steps.clone());
    lp.call_later(Duration::from_millis(5), move || ta.set(Some(s.get())))
        .unwrap();

    let (ra, ta, s) = (read_at.clone(), timer_at.clone(), steps.clone());
    let mut w = Some(writer.try_clone().unwrap());
    let busy = lp
        .create_task(async move {
            // Data arrives while the task is busy; the reader must get its turn.
            loop {
                s.set(s.get() + 1);
                if s.get() == 3 {
                    w.take().unwrap().write_all(b"x").unwrap();
                }
                if (ra.get().is_some() && ta.get().is_some()) || s.get() > 5_000_000 {
                    return s.get();
                }
                yield_now().await;
            }
        })
        .unwrap();
    let total = run_bounded(&lp, busy).unwrap();
    lp.remove_reader(fd);
    writer.flush().unwrap();
    let read_step = read_at.get().expect("the reader callback ran while the task was busy");
    assert!(timer_at.get().is_some(), "the timer fired while the task was busy");
    assert!(
        read_step <= 4,
        "the reader ran in the iteration after the data arrived (task step {read_step})"
    );
    assert!(
        total < 5_000_000,
        "the busy task stopped because both ran ({total} steps)"
    );
}

// ---------------------------------------------------------------------------------------------
// The loop holds tasks: CPython #117379.

#[test]
fn task_dropping_the_handle_detaches_never_kills() {
    let lp = EventLoop::new().unwrap();
    let h = lp.handle();
    let side_effect = flag();
    let cleanup = flag();
    let (se, cl) = (side_effect.clone(), cleanup.clone());
    let still_listed = run_bounded(&lp, async move {
        let finished: Promise<()> = h.create_future();
        let f2 = finished.clone();
        let t = spawn(async move {
            let _guard = DropFlag(cl);
            sleep(Duration::from_millis(2)).await;
            yield_now().await;
            se.set(true);
            f2.set_result(()).unwrap();
        });
        let name = t.name();
        drop(t); // no reference to the task is left anywhere but the loop
        yield_now().await;
        let still_listed = evloop::event_loop::get_running_loop()
            .map(|lp| lp.all_tasks())
            .unwrap_or_default()
            .iter()
            .any(|t| t.name() == name);
        finished.await.unwrap();
        still_listed
    });
    assert!(still_listed, "the loop still holds the detached task");
    assert!(side_effect.get(), "the detached task ran to completion");
    assert!(cleanup.get(), "and its future was dropped once finished");
    assert_eq!(lp.stats().tasks, 0);
}

#[test]
fn task_detached_before_the_loop_runs_still_completes() {
    let lp = EventLoop::new().unwrap();
    let done = flag();
    let d = done.clone();
    lp.create_task(async move {
        for _ in 0..3 {
            yield_now().await;
        }
        d.set(true);
    })
    .unwrap()
    .detach();
    let d = done.clone();
    run_bounded(&lp, async move {
        while !d.get() {
            sleep(Duration::from_millis(1)).await;
        }
    });
    assert!(done.get());
}

// ---------------------------------------------------------------------------------------------
// Cancellation.

#[test]
fn task_cancel_drops_the_future_at_its_next_step_and_awaiting_gives_cancelled() {
    let lp = EventLoop::new().unwrap();
    let dropped = flag();
    let d = dropped.clone();
    let t = lp
        .create_task(async move {
            let _guard = DropFlag(d);
            sleep(Duration::from_secs(100)).await;
            1
        })
        .unwrap();
    run_one(&lp);
    assert_eq!(t.state(), TaskState::Pending);
    assert_eq!(lp.stats().timers, 1);
    assert!(t.cancel(), "cancelling a pending task returns true");
    assert!(!dropped.get(), "cancel() does not drop the future inline");
    assert_eq!(t.cancelling(), 1);
    assert!(!t.done());
    let r = t.task_ref();
    let result = run_bounded(&lp, t);
    assert!(dropped.get(), "the future's destructors ran");
    match result {
        Err(e @ TaskError::Cancelled { .. }) => assert!(e.is_cancelled()),
        other => panic!("expected Err(Cancelled), got {other:?}"),
    }
    assert_eq!(r.state(), TaskState::Cancelled);
    assert!(r.cancelled());
    assert!(r.done());
    assert_eq!(
        r.cancelling(),
        1,
        "the count stays once the task has finished (asyncio)"
    );
    assert!(!r.cancel(), "cancelling a finished task returns false");
    assert_eq!(r.cancelling(), 1, "and is not counted");
    lp.call_soon(|| {}).unwrap();
    run_one(&lp);
    assert_eq!(lp.stats().timers, 0, "the sleep's timer went with the future");
}

#[test]
fn task_cancel_before_the_first_step_never_polls_the_future() {
    let lp = EventLoop::new().unwrap();
    let polled = flag();
    let dropped = flag();
    let (p, d) = (polled.clone(), dropped.clone());
    let guard = DropFlag(d);
    let t = lp
        .create_task(async move {
            let _guard = guard;
            p.set(true);
        })
        .unwrap();
    assert!(t.cancel());
    let result = run_bounded(&lp, t);
    assert!(result.unwrap_err().is_cancelled());
    assert!(!polled.get(), "the future was never polled");
    assert!(dropped.get(), "but it was dropped");
}

#[test]
fn task_cancelling_a_finished_task_returns_false() {
    let lp = EventLoop::new().unwrap();
    let mut t = lp.create_task(async { 3 }).unwrap();
    run_one(&lp);
    assert_eq!(t.state(), TaskState::Done);
    assert!(!t.cancel());
    assert_eq!(t.state(), TaskState::Done, "still done, not cancelled");
    assert_eq!(t.try_result().unwrap().unwrap(), 3);
}

#[test]
fn task_cancel_requested_while_the_task_runs_takes_effect_at_its_next_step() {
    let lp = EventLoop::new().unwrap();
    let after_cancel = flag();
    let after_await = flag();
    let dropped = flag();
    let (ac, aa, d) = (after_cancel.clone(), after_await.clone(), dropped.clone());
    let t = lp
        .create_task(async move {
            let _guard = DropFlag(d);
            let me = current_task().unwrap();
            assert!(me.cancel(), "a running task can cancel itself");
            assert_eq!(me.cancelling(), 1);
            ac.set(true); // the rest of this step still runs
            yield_now().await;
            aa.set(true);
        })
        .unwrap();
    let result = run_bounded(&lp, t);
    assert!(
        after_cancel.get(),
        "the step that requested the cancel ran to its await"
    );
    assert!(
        !after_await.get(),
        "the next step dropped the future instead of polling it"
    );
    assert!(dropped.get());
    assert!(result.unwrap_err().is_cancelled());
}

#[test]
fn task_cancelled_in_the_same_step_it_completes_ends_cancelled() {
    let lp = EventLoop::new().unwrap();
    let t = lp
        .create_task(async {
            current_task().unwrap().cancel();
            42
        })
        .unwrap();
    let r = t.task_ref();
    let result = run_bounded(&lp, t);
    assert!(
        matches!(result, Err(TaskError::Cancelled { .. })),
        "the value is discarded: {result:?}"
    );
    assert_eq!(r.state(), TaskState::Cancelled);
}

#[test]
fn task_state_transitions_pending_running_done_cancelled_failed() {
    let lp = EventLoop::new().unwrap();
    let h = lp.handle();
    let seen_inside = Rc::new(Cell::new(None::<TaskState>));
    let p: Promise<()> = lp.create_future();
    let (s, p2) = (seen_inside.clone(), p.clone());
    let done = lp
        .create_task(async move {
            s.set(Some(current_task().unwrap().state()));
            p2.await.unwrap();
        })
        .unwrap();
    let cancelled = lp.create_task(sleep(Duration::from_secs(100))).unwrap();
    let failed = lp.create_task(async { panic!("state test") }).unwrap();
    let _reports = record_reports(&h);
    for t in [done.task_ref(), cancelled.task_ref(), failed.task_ref()] {
        assert_eq!(t.state(), TaskState::Pending, "a new task is pending");
        assert!(!t.state().is_finished());
    }
    run_one(&lp);
    assert_eq!(
        seen_inside.get(),
        Some(TaskState::Running),
        "running while it is polled"
    );
    assert_eq!(done.state(), TaskState::Pending, "pending again while it waits");
    assert_eq!(failed.state(), TaskState::Failed);
    assert!(failed.done());
    assert!(!failed.cancelled());
    cancelled.cancel();
    p.set_result(()).unwrap();
    let (d, c, f) = run_bounded(&lp, async move { (done.await, cancelled.await, failed.await) });
    assert!(d.is_ok());
    assert!(c.unwrap_err().is_cancelled());
    assert!(f.unwrap_err().is_panic());
    for (state, finished) in [
        (TaskState::Pending, false),
        (TaskState::Running, false),
        (TaskState::Done, true),
        (TaskState::Cancelled, true),
        (TaskState::Failed, true),
    ] {
        assert_eq!(state.is_finished(), finished, "{state:?}");
    }
}

#[test]
fn task_state_done_after_completion() {
    let lp = EventLoop::new().unwrap();
    let t = lp.create_task(async { "v" }).unwrap();
    let r = t.task_ref();
    assert_eq!(run_bounded(&lp, t).unwrap(), "v");
    assert_eq!(r.state(), TaskState::Done);
    assert!(r.done() && !r.cancelled());
}

#[test]
fn task_cancel_with_a_panicking_destructor_is_reported_and_still_ends_cancelled() {
    struct PanicOnDrop;
    impl Drop for PanicOnDrop {
        fn drop(&mut self) {
            panic!("destructor boom");
        }
    }
    let lp = EventLoop::new().unwrap();
    let reports = record_reports(&lp);
    let t = TaskBuilder::new()
        .name("bad-drop")
        .spawn_on(&lp, async {
            let _p = PanicOnDrop;
            sleep(Duration::from_secs(100)).await;
        })
        .unwrap();
    run_one(&lp);
    t.cancel();
    let r = run_bounded(&lp, t);
    assert!(r.unwrap_err().is_cancelled(), "still cancelled, not failed");
    assert_eq!(
        *reports.borrow(),
        [(
            ExceptionKind::DestructorPanicked,
            Some("bad-drop".to_string()),
            Some("destructor boom".to_string())
        )]
    );
    assert_eq!(run_bounded(&lp, async { 1 }), 1, "the loop keeps running");
}

#[test]
fn task_cancelling_an_awaiter_detaches_the_awaited_task() {
    // Dropping a `Task` handle detaches (never kills), and that includes the drop that happens
    // when the task awaiting it is cancelled.
    let lp = EventLoop::new().unwrap();
    let h = lp.handle();
    let inner_done = flag();
    let i = inner_done.clone();
    let inner_name = run_bounded(&lp, async move {
        let inner = h
            .create_task(async move {
                sleep(Duration::from_millis(5)).await;
                i.set(true);
            })
            .unwrap();
        let name = inner.name();
        let outer = h.create_task(inner).unwrap(); // the outer task awaits the inner handle
        yield_now().await;
        outer.cancel();
        assert!(outer.await.unwrap_err().is_cancelled());
        name
    });
    assert!(!inner_name.is_empty());
    run_bounded(&lp, sleep(Duration::from_millis(20)));
    assert!(inner_done.get(), "the awaited task was detached, not cancelled");
}

#[test]
fn task_result_can_be_taken_once() {
    let lp = EventLoop::new().unwrap();
    let t = lp.create_task(async { 9 }).unwrap();
    let (first, second) = run_bounded(&lp, async move {
        let mut t = t;
        let first = (&mut t).await;
        let second = (&mut t).await;
        (first, second)
    });
    assert_eq!(first.unwrap(), 9);
    assert!(matches!(second, Err(TaskError::ResultTaken { .. })), "{second:?}");
}

// ---------------------------------------------------------------------------------------------
// Failures.

#[test]
fn task_panic_gives_panicked_to_its_awaiter_and_the_loop_keeps_running() {
    let lp = EventLoop::new().unwrap();
    let reports = record_reports(&lp);
    let t = TaskBuilder::new()
        .name("boomer")
        .spawn_on(&lp, async {
            yield_now().await;
            panic!("boom 42");
        })
        .unwrap();
    let r: Result<(), TaskError> = run_bounded(&lp, t);
    let err = r.unwrap_err();
    assert!(err.is_panic());
    assert_eq!(err.panic().unwrap().message(), "boom 42");
    let msg = err.to_string();
    assert!(msg.contains("boomer") && msg.contains("boom 42"), "{msg}");
    let mut panic = err.into_panic().unwrap();
    assert!(panic.take_payload().is_some(), "the payload is kept for resume_unwind");
    // The loop survived and runs more work.
    assert_eq!(run_bounded(&lp, async { 5 }), 5);
    assert!(
        reports.borrow().is_empty(),
        "an awaited failure is not reported: {:?}",
        reports.borrow()
    );
}

#[test]
fn task_unobserved_failure_with_the_handle_dropped_before_it_fails_is_reported_once() {
    let lp = EventLoop::new().unwrap();
    let reports = record_reports(&lp);
    let t = lp
        .create_task(async {
            yield_now().await;
            panic!("nobody is listening");
        })
        .unwrap();
    let name = t.name();
    drop(t);
    run_bounded(&lp, async {
        for _ in 0..5 {
            yield_now().await;
        }
    });
    assert_eq!(
        *reports.borrow(),
        [(
            ExceptionKind::TaskFailureUnobserved,
            Some(name.clone()),
            Some("nobody is listening".to_string())
        )]
    );
    run_bounded(&lp, sleep(Duration::from_millis(1)));
    lp.close().unwrap();
    assert_eq!(reports.borrow().len(), 1, "reported exactly once");
}

#[test]
fn task_unobserved_failure_with_the_handle_dropped_after_it_failed_is_reported_once() {
    let lp = EventLoop::new().unwrap();
    let reports = record_reports(&lp);
    let t = lp.create_task(async { panic!("failed early") }).unwrap();
    let name = t.name();
    run_bounded(&lp, yield_now());
    assert_eq!(t.state(), TaskState::Failed);
    assert!(
        reports.borrow().is_empty(),
        "not reported while the handle could still observe it"
    );
    drop(t);
    assert_eq!(
        *reports.borrow(),
        [(
            ExceptionKind::TaskFailureUnobserved,
            Some(name),
            Some("failed early".to_string())
        )],
        "dropping the handle of an unobserved failure reports it"
    );
    run_bounded(&lp, sleep(Duration::from_millis(1)));
    lp.close().unwrap();
    assert_eq!(reports.borrow().len(), 1, "reported exactly once");
}

#[test]
fn task_awaited_failure_is_not_reported() {
    // python/asyncio #397: a kept reference must not make a failure vanish, and an observed
    // failure must not be reported as unobserved either.
    let lp = EventLoop::new().unwrap();
    let reports = record_reports(&lp);
    let t = lp.create_task(async { panic!("observed") }).unwrap();
    let r = t.task_ref();
    let h = lp.handle();
    let got = run_bounded(&lp, async move {
        let got = t.await; // observed here; the handle is dropped right after
        for _ in 0..3 {
            yield_now().await;
        }
        got
    });
    assert!(got.unwrap_err().is_panic());
    // try_result() observes too.
    let mut u = h.create_task(async { panic!("observed by try_result") }).unwrap();
    run_bounded(&lp, yield_now());
    assert!(u.try_result().unwrap().unwrap_err().is_panic());
    assert!(
        matches!(u.try_result(), Some(Err(TaskError::ResultTaken { .. }))),
        "the result can be taken once"
    );
    drop(u);
    drop(r);
    lp.close().unwrap();
    assert!(reports.borrow().is_empty(), "{:?}", reports.borrow());
}

#[test]
fn task_cancelled_task_is_not_reported_as_a_failure() {
    let lp = EventLoop::new().unwrap();
    let reports = record_reports(&lp);
    let detached = lp.create_task(sleep(Duration::from_secs(100))).unwrap();
    detached.cancel();
    drop(detached);
    let kept = lp.create_task(sleep(Duration::from_secs(100))).unwrap();
    kept.cancel();
    run_bounded(&lp, async {
        for _ in 0..3 {
            yield_now().await;
        }
    });
    assert!(kept.cancelled());
    drop(kept);
    lp.close().unwrap();
    assert!(reports.borrow().is_empty(), "{:?}", reports.borrow());
}

// ---------------------------------------------------------------------------------------------
// Names, current_task, all_tasks, done callbacks.

#[test]
fn task_names_count_from_task_1_in_creation_order_per_loop() {
    let lp = EventLoop::new().unwrap();
    let t1 = lp.create_task(async {}).unwrap();
    let t2 = lp.create_task(async {}).unwrap();
    let named = TaskBuilder::new().name("n1").spawn_on(&lp, async {}).unwrap();
    let t4 = lp.create_task(async {}).unwrap();
    assert_eq!(t1.name(), "Task-1");
    assert_eq!(t2.name(), "Task-2");
    assert_eq!(named.name(), "n1");
    assert_eq!(named.number(), 3, "a named task still takes its number");
    assert_eq!(t4.name(), "Task-4");
    assert_eq!((t1.number(), t2.number(), t4.number()), (1, 2, 4));
    t2.set_name("renamed");
    assert_eq!(t2.name(), "renamed");
    assert_eq!(t2.number(), 2);

    let other = EventLoop::new().unwrap();
    let o1 = other.create_task(async {}).unwrap();
    assert_eq!(o1.name(), "Task-1", "numbering is per loop");
}

#[test]
fn task_current_task_is_the_task_inside_it_and_none_in_a_plain_callback() {
    let lp = EventLoop::new().unwrap();
    let inside: Rc<RefCell<Option<TaskRef>>> = Rc::default();
    let in_callback = Rc::new(Cell::new(None::<bool>));
    let i = inside.clone();
    let t = lp
        .create_task(async move {
            *i.borrow_mut() = current_task();
            let child = spawn(async { current_task().map(|t| t.name()) });
            let child_name = child.name();
            assert_eq!(child.await.unwrap(), Some(child_name));
            assert_eq!(current_task().map(|t| t.name()), i.borrow().as_ref().map(|t| t.name()));
        })
        .unwrap();
    let c = in_callback.clone();
    lp.call_soon(move || c.set(Some(current_task().is_none()))).unwrap();
    assert!(current_task().is_none(), "no loop running, no current task");
    let tr = t.task_ref();
    run_bounded(&lp, t).unwrap();
    let seen = inside.borrow().clone().expect("current_task() inside a task is Some");
    assert!(seen.ptr_eq(&tr), "current_task() is that task");
    assert_eq!(
        in_callback.get(),
        Some(true),
        "current_task() in a plain callback is None"
    );
    assert!(evloop::task::current_task().is_none());
}

#[test]
fn task_all_tasks_lists_unfinished_tasks_only() {
    let lp = EventLoop::new().unwrap();
    let p: Promise<()> = lp.create_future();
    let quick = TaskBuilder::new().name("quick").spawn_on(&lp, async {}).unwrap();
    let p2 = p.clone();
    let waiting = TaskBuilder::new()
        .name("waiting")
        .spawn_on(&lp, async move { p2.await.unwrap() })
        .unwrap();
    let sleeping = TaskBuilder::new()
        .name("sleeping")
        .spawn_on(&lp, sleep(Duration::from_secs(100)))
        .unwrap();
    let mut before: Vec<String> = lp.all_tasks().iter().map(|t| t.name()).collect();
    before.sort();
    assert_eq!(
        before,
        ["quick", "sleeping", "waiting"],
        "unstarted tasks are unfinished"
    );
    run_one(&lp);
    assert!(quick.done());
    let mut names: Vec<String> = lp.all_tasks().iter().map(|t| t.name()).collect();
    names.sort();
    assert_eq!(names, ["sleeping", "waiting"]);
    assert_eq!(lp.stats().tasks, 2);
    let inside = run_bounded(&lp, async move {
        let mut names: Vec<String> = evloop::event_loop::get_running_loop()
            .map(|lp| lp.all_tasks())
            .unwrap_or_default()
            .iter()
            .map(|t| t.name())
            .collect();
        names.sort();
        names
    });
    assert_eq!(inside.len(), 3, "inside: the two plus the running one: {inside:?}");
    assert!(inside.contains(&"sleeping".to_string()) && inside.contains(&"waiting".to_string()));
    p.set_result(()).unwrap();
    sleeping.cancel();
    run_bounded(&lp, async move {
        waiting.await.unwrap();
        assert!(sleeping.await.is_err());
    });
    assert!(lp.all_tasks().is_empty());
    assert!(
        evloop::event_loop::get_running_loop()
            .map(|lp| lp.all_tasks())
            .unwrap_or_default()
            .is_empty(),
        "no loop running: empty"
    );
}

#[test]
fn task_done_callbacks_run_via_call_soon_after_completion_in_order_with_the_task_ref() {
    let lp = EventLoop::new().unwrap();
    let log = log();
    let t = TaskBuilder::new().name("cb-task").spawn_on(&lp, async { 1 }).unwrap();
    for name in ["first", "second", "third"] {
        let l = log.clone();
        t.add_done_callback(move |tr: &TaskRef| push(&l, format!("{name}:{}:{:?}", tr.name(), tr.state())));
    }
    let l = log.clone();
    let removed = t.add_done_callback(move |_| push(&l, "removed"));
    assert_eq!(t.remove_done_callback(removed), 1);
    assert_eq!(t.remove_done_callback(removed), 0);
    run_one(&lp);
    assert!(t.done());
    assert!(
        entries(&log).is_empty(),
        "done callbacks are not run inline at completion: {:?}",
        entries(&log)
    );
    run_one(&lp);
    assert_eq!(
        entries(&log),
        ["first:cb-task:Done", "second:cb-task:Done", "third:cb-task:Done"]
    );
    // Added to a finished task: scheduled, not inline.
    let l = log.clone();
    let tr = t.task_ref();
    t.add_done_callback(move |r: &TaskRef| {
        assert!(r.ptr_eq(&tr));
        push(&l, "late")
    });
    assert_eq!(entries(&log).len(), 3);
    run_one(&lp);
    assert_eq!(entries(&log).last().unwrap(), "late");
}

#[test]
fn task_done_callbacks_run_for_cancelled_and_failed_tasks() {
    let lp = EventLoop::new().unwrap();
    let _reports = record_reports(&lp);
    let log = log();
    let c = lp.create_task(sleep(Duration::from_secs(100))).unwrap();
    let f = lp.create_task(async { panic!("cb on failure") }).unwrap();
    for t in [c.task_ref(), f.task_ref()] {
        let l = log.clone();
        t.add_done_callback(move |r: &TaskRef| push(&l, format!("{:?}", r.state())));
    }
    c.cancel();
    run_bounded(&lp, async move {
        let _ = c.await;
        let _ = f.await;
        yield_now().await;
    });
    let mut seen = entries(&log);
    seen.sort();
    assert_eq!(seen, ["Cancelled", "Failed"]);
}

#[test]
fn task_awaiting_a_cancelled_task_gives_a_clear_error() {
    let lp = EventLoop::new().unwrap();
    let t = TaskBuilder::new()
        .name("worker-7")
        .spawn_on(&lp, sleep(Duration::from_secs(100)))
        .unwrap();
    t.cancel();
    let err = run_bounded(&lp, t).unwrap_err();
    let msg = err.to_string();
    assert!(msg.contains("worker-7"), "the message names the task: {msg}");
    assert!(msg.contains("cancelled"), "and says it was cancelled: {msg}");
    assert!(matches!(&err, TaskError::Cancelled { task } if task == "worker-7"));
    let io: std::io::Error = err.into();
    assert_eq!(io.kind(), std::io::ErrorKind::Interrupted);
}

#[test]
fn task_awaiting_its_own_handle_gives_awaited_itself_instead_of_hanging() {
    let lp = EventLoop::new().unwrap();
    let slot: Rc<RefCell<Option<Task<bool>>>> = Rc::default();
    let seen: Rc<RefCell<Option<(bool, String)>>> = Rc::default();
    let (s, out) = (slot.clone(), seen.clone());
    let t = TaskBuilder::new()
        .name("ouroboros")
        .spawn_on(&lp, async move {
            yield_now().await; // the handle is in the slot by now
            let mut me = s.borrow_mut().take().expect("the handle was handed over");
            let r = (&mut me).await;
            let is_itself = matches!(&r, Err(TaskError::AwaitedItself { task }) if task == "ouroboros");
            let msg = match r {
                Ok(_) => "Ok".to_string(),
                Err(e) => e.to_string(),
            };
            *out.borrow_mut() = Some((is_itself, msg));
            is_itself
        })
        .unwrap();
    let tr = t.task_ref();
    *slot.borrow_mut() = Some(t);
    run_bounded(&lp, async move {
        while !tr.done() {
            yield_now().await;
        }
    });
    let (is_itself, msg) = seen.borrow().clone().expect("the task finished");
    assert!(is_itself, "Err(TaskError::AwaitedItself) naming the task, got: {msg}");
    assert!(msg.contains("ouroboros") && msg.contains("itself"), "{msg}");
}

// ---------------------------------------------------------------------------------------------
// evloop::run.

#[test]
fn task_run_returns_the_output() {
    let out = evloop::run(async {
        sleep(Duration::from_millis(1)).await;
        let t = spawn(async { 20 });
        t.await.unwrap() + 1
    });
    assert_eq!(out.unwrap(), 21);
}

#[test]
fn task_run_cancels_leftover_tasks_and_closes_the_loop() {
    let dropped = flag();
    let never = flag();
    let handle: Rc<RefCell<Option<LoopHandle>>> = Rc::default();
    let (d, n, h) = (dropped.clone(), never.clone(), handle.clone());
    let out = evloop::run(async move {
        *h.borrow_mut() = Some(get_running_loop().unwrap());
        spawn(async move {
            let _guard = DropFlag(d);
            sleep(Duration::from_secs(100)).await;
            n.set(true);
        })
        .detach();
        yield_now().await;
        "main done"
    });
    assert_eq!(out.unwrap(), "main done");
    assert!(dropped.get(), "the leftover task was cancelled: its destructors ran");
    assert!(!never.get());
    let lp = handle.borrow().clone().unwrap();
    assert!(lp.is_closed(), "run closes its loop");
    assert!(lp.all_tasks().is_empty());
    assert!(lp.call_soon(|| {}).is_err(), "a closed loop refuses work");
}

#[test]
fn task_run_inside_a_running_loop_is_an_error() {
    let out = evloop::run(async {
        let inner = evloop::run(async { 1 });
        match inner {
            Err(RunError::Loop(e)) => Some(e.kind()),
            _ => None,
        }
    });
    assert_eq!(out.unwrap(), Some(LoopErrorKind::AnotherLoopRunning));

    let lp = EventLoop::new().unwrap();
    let h = lp.handle();
    let nested = run_bounded(&lp, async move {
        h.run_until_complete(async { 1 }).err().map(|e| e.to_string())
    });
    let msg = nested.expect("run_until_complete inside the running loop fails");
    assert!(msg.contains("already running"), "{msg}");
}

#[test]
fn task_run_reports_a_panicking_main_as_a_task_error_and_still_cancels_leftovers() {
    let dropped = flag();
    let d = dropped.clone();
    let out: Result<(), RunError> = evloop::run(async move {
        spawn(async move {
            let _guard = DropFlag(d);
            sleep(Duration::from_secs(100)).await;
        })
        .detach();
        yield_now().await;
        panic!("main failed")
    });
    match out {
        Err(RunError::Task(e)) => assert_eq!(e.panic().unwrap().message(), "main failed"),
        other => panic!("expected RunError::Task(Panicked), got {other:?}"),
    }
    assert!(dropped.get(), "the leftover task was cancelled even though main failed");
}

#[test]
fn task_create_task_on_a_closed_loop_or_spawn_without_a_loop_is_an_error() {
    let err = TaskBuilder::new().spawn(async {}).unwrap_err();
    assert_eq!(err.kind(), LoopErrorKind::NoRunningLoop);
    let lp = EventLoop::new().unwrap();
    lp.close().unwrap();
    let err = lp.create_task(async {}).unwrap_err();
    assert_eq!(err.kind(), LoopErrorKind::Closed);
    assert!(err.to_string().contains("create_task"), "{err}");
}

#[test]
fn task_wake_after_the_loop_closed_is_harmless() {
    let lp = EventLoop::new().unwrap();
    let probe = Probe::default();
    let mut t = lp.create_task(probe.future()).unwrap();
    run_one(&lp);
    let waker = probe.waker.borrow().clone().unwrap();
    lp.close().unwrap();
    waker.wake_by_ref();
    std::thread::spawn(move || waker.wake()).join().unwrap();
    assert_eq!(t.state(), TaskState::Cancelled, "close() cancels unfinished tasks");
    assert!(t.try_result().unwrap().unwrap_err().is_cancelled());
    assert_eq!(probe.polls.get(), 1);
}

#[test]
fn get_loop_of_a_task_is_its_loop_until_the_loop_is_gone() {
    let lp = EventLoop::new().unwrap();
    let other = EventLoop::new().unwrap();
    let t = lp.create_task(async {}).unwrap();
    assert!(t.event_loop().is_some_and(|l| l.same_loop(&lp)));
    assert!(!t.event_loop().unwrap().same_loop(&other));
    lp.close().unwrap();
    assert!(t.event_loop().is_some_and(|l| l.is_closed()), "closed, still there");
    drop(lp);
    assert!(t.event_loop().is_none(), "the loop is gone");
}

#[test]
fn a_waker_outlives_its_task_and_its_loop_and_wakes_harmlessly_from_any_thread() {
    use std::sync::mpsc;
    let (tx, rx) = mpsc::channel::<std::task::Waker>();
    {
        let lp = EventLoop::new().unwrap();
        let task = lp
            .create_task(std::future::poll_fn(move |cx| {
                let _ = tx.send(cx.waker().clone());
                std::task::Poll::Ready(7)
            }))
            .unwrap();
        assert_eq!(lp.run_until_complete(task).unwrap().unwrap(), 7);
        let waker = rx.recv().unwrap();
        // The task has finished: a wake on this thread queues nothing that runs.
        waker.wake_by_ref();
        assert_eq!(lp.stats().tasks, 0);
        let kept = waker.clone();
        lp.close().unwrap();
        drop(lp);
        // The loop is gone: wakes from this thread and another one find nothing and free
        // the task's memory when the last waker goes.
        kept.wake_by_ref();
        std::thread::spawn(move || {
            waker.wake_by_ref();
            waker.wake();
        })
        .join()
        .unwrap();
        kept.wake();
    }
}
