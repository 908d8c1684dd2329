//! Cancellation and time: what a cancel does to a task's future, where it can take effect, and
//! the time limits built on it (`timeout`, `timeout_at`) and around it (`shield`,
//! `shield_future`). Chapter 3 of the book (`docs/03-cancellation.md`) explains the mechanisms.
//!
//! - Cancelling a task drops its future at the task's next step: the destructors of everything
//!   alive at the await point where it was parked run (nested futures included, innermost first),
//!   nothing after that await point runs, and a pending sleep's timer leaves the heap.
//! - A task awaiting another task does not cancel it when it is cancelled (dropping a handle
//!   detaches), unless the inner task is a child of a `TaskGroup` that the cancelled task owns.
//! - Cancelling a finished task returns false. A cancel made while a task runs takes effect at
//!   its next suspension (an `.await` that returns `Pending`), not at the cancel call.
//! - `timeout(d, fut)` / `timeout_at(when, fut)`: the inner future is dropped on expiry,
//!   `Elapsed::after` says how long, a zero limit still polls once, nesting works, never early.
//! - `shield(task)` / `shield_future(fut)`: the awaiter can give up (timeout, cancel) while the
//!   shielded work runs to completion.
//!
//! Plus ports of CPython's `test_asyncio/test_tasks.py` and `test_timeouts.py` cases that make
//! sense in this API (each says which one it ports).

use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::time::Duration;

use evloop::{
    event_loop::{EventLoop, LoopHandle},
    task::{Task, TaskError, TaskGroup, TaskRef, TaskState, current_task, shield, shield_future, yield_now},
    time::{Elapsed, sleep, timeout, timeout_at},
};
use evloop_tests::{
    CountPolls, DropFlag, DropLog, Log, entries, flag, log, push, run_bounded, run_one, spin_once, virtual_loop,
};

/// Waits (sleeping 1 ms at a time) until the task `r` has finished.
async fn until_done(r: TaskRef) {
    while !r.done() {
        sleep(Duration::from_millis(1)).await;
    }
}

/// Runs a few non-blocking iterations (so phase 1 removes cancelled timers) and returns how
/// many timers are left in the heap.
fn settle_timers(lp: &LoopHandle) -> usize {
    for _ in 0..4 {
        spin_once(lp);
    }
    lp.stats().timers
}

// ---------------------------------------------------------------------------------------------
// Cancelling drops the future.

async fn leaf(log: Log) {
    let _g = DropLog::new("leaf", &log);
    sleep(Duration::from_secs(100)).await;
    push(&log, "leaf after its sleep");
}

async fn middle(log: Log) {
    let _g = DropLog::new("middle", &log);
    leaf(log.clone()).await;
    push(&log, "middle after leaf");
}

#[test]
fn cancel_drops_the_future_at_the_next_step_innermost_destructor_first() {
    let lp = EventLoop::new().unwrap();
    let log = log();
    let l = log.clone();
    let t = lp
        .create_task(async move {
            let _g = DropLog::new("outer", &l);
            yield_now().await;
            push(&l, "outer step 2");
            middle(l.clone()).await;
            push(&l, "outer after middle");
        })
        .unwrap();
    run_one(&lp);
    run_one(&lp);
    assert_eq!(entries(&log), ["outer step 2"]);
    assert_eq!(lp.stats().timers, 1, "the leaf's sleep is in the heap");
    assert!(t.cancel());
    assert_eq!(entries(&log), ["outer step 2"], "cancel() itself drops nothing");
    assert_eq!(t.state(), TaskState::Pending, "still pending until its next step");
    run_one(&lp);
    assert_eq!(
        entries(&log),
        ["outer step 2", "drop leaf", "drop middle", "drop outer"],
        "the next step dropped the whole chain, innermost first, and ran no code after an await"
    );
    assert_eq!(t.state(), TaskState::Cancelled);
    assert_eq!(
        lp.stats().timers,
        1,
        "the cancelled timer is still counted until the next iteration's phase 1"
    );
    spin_once(&lp);
    assert_eq!(lp.stats().timers, 0, "phase 1 removed the sleep's timer from the heap");
    assert_eq!(lp.stats().tasks, 0);
}

#[test]
fn cancel_at_each_await_point_drops_exactly_the_guards_alive_there() {
    // A task with four await points. Cancelled while parked at point k, exactly the guards
    // alive at point k are dropped (in reverse order of creation), and no code after point k
    // runs.
    let expected: [&[&str]; 4] = [
        &["drop a"],
        &["drop b", "drop a"],
        &["drop scoped", "drop c", "drop b", "drop a"],
        &["drop c", "drop b", "drop a"],
    ];
    for (k, expected) in expected.iter().enumerate() {
        let lp = EventLoop::new().unwrap();
        let log = log();
        let l = log.clone();
        let t = lp
            .create_task(async move {
                let _a = DropLog::new("a", &l);
                yield_now().await; // point 0
                push(&l, "past 0");
                let _b = DropLog::new("b", &l);
                sleep(Duration::from_millis(1)).await; // point 1
                push(&l, "past 1");
                let _c = DropLog::new("c", &l);
                {
                    let _scoped = DropLog::new("scoped", &l);
                    yield_now().await; // point 2
                    push(&l, "past 2");
                }
                sleep(Duration::from_millis(1)).await; // point 3
                push(&l, "past 3");
            })
            .unwrap();
        let past = |log: &Log| log.borrow().iter().filter(|e| e.starts_with("past")).count();
        run_one(&lp); // parked at point 0
        while past(&log) < k {
            run_one(&lp);
        }
        // Parked at point k now: its step ended with that await returning Pending.
        let before = entries(&log);
        assert!(t.cancel());
        run_bounded(&lp, async {});
        let after = entries(&log)[before.len()..].to_vec();
        assert_eq!(after, *expected, "cancelled at point {k}");
        assert_eq!(past(&log), k, "nothing after point {k} ran");
        assert_eq!(t.state(), TaskState::Cancelled);
    }
}

#[test]
fn cancel_of_a_task_parked_in_a_sleep_removes_the_timer_from_the_heap() {
    let lp = EventLoop::new().unwrap();
    let dropped = flag();
    let d = dropped.clone();
    let t = lp
        .create_task(async move {
            let _g = DropFlag(d);
            sleep(Duration::from_secs(3600)).await;
        })
        .unwrap();
    run_one(&lp);
    assert_eq!(lp.stats().timers, 1);
    t.cancel();
    assert_eq!(settle_timers(&lp), 0, "no timer is left for the cancelled sleep");
    assert!(dropped.get());
    assert_eq!(t.state(), TaskState::Cancelled);
}

#[test]
fn cancel_destructors_run_as_the_current_task() {
    struct NoteCurrent(Rc<RefCell<Option<String>>>);
    impl Drop for NoteCurrent {
        fn drop(&mut self) {
            *self.0.borrow_mut() = current_task().map(|t| t.name());
        }
    }
    let lp = EventLoop::new().unwrap();
    let seen = Rc::new(RefCell::new(None));
    let s = seen.clone();
    let t = evloop::task::TaskBuilder::new()
        .name("cleaner")
        .spawn_on(&lp, async move {
            let _n = NoteCurrent(s);
            sleep(Duration::from_secs(100)).await;
        })
        .unwrap();
    run_one(&lp);
    t.cancel();
    run_one(&lp);
    assert_eq!(
        seen.borrow().as_deref(),
        Some("cleaner"),
        "the destructor ran inside the cancelled task, like a finally block"
    );
}

#[test]
fn cancel_cleanup_that_must_await_is_spawned_from_a_destructor() {
    // There is no `except CancelledError: await cleanup()`: a destructor cannot await. Cleanup
    // that needs the loop is spawned as a task from the destructor, and runs to completion.
    struct AsyncCleanup(Log);
    impl Drop for AsyncCleanup {
        fn drop(&mut self) {
            let l = self.0.clone();
            evloop::spawn(async move {
                push(&l, "cleanup started");
                sleep(Duration::from_millis(2)).await;
                push(&l, "cleanup finished");
            })
            .detach();
        }
    }
    let lp = virtual_loop();
    let log = log();
    let l = log.clone();
    let t = lp
        .create_task(async move {
            let _c = AsyncCleanup(l.clone());
            sleep(Duration::from_secs(100)).await;
            push(&l, "never");
        })
        .unwrap();
    run_one(&lp);
    t.cancel();
    assert!(run_bounded(&lp, t).unwrap_err().is_cancelled());
    let left = lp.all_tasks();
    assert_eq!(left.len(), 1, "the cleanup task runs on its own");
    run_bounded(&lp, until_done(left[0].clone()));
    assert_eq!(entries(&log), ["cleanup started", "cleanup finished"]);
}

#[test]
fn cancel_is_idempotent_and_the_destructors_run_once() {
    let lp = EventLoop::new().unwrap();
    let log = log();
    let l = log.clone();
    let t = lp
        .create_task(async move {
            let _g = DropLog::new("g", &l);
            sleep(Duration::from_secs(100)).await;
        })
        .unwrap();
    run_one(&lp);
    assert!(t.cancel());
    assert!(t.cancel(), "still pending: a second request returns true as well");
    assert_eq!(t.cancelling(), 2, "each request counts (asyncio 3.11)");
    assert!(run_bounded(&lp, t).unwrap_err().is_cancelled());
    assert_eq!(entries(&log), ["drop g"]);
}

#[test]
fn cancel_before_the_first_step_drops_a_future_that_never_ran() {
    let lp = EventLoop::new().unwrap();
    let log = log();
    let g = DropLog::new("captured", &log);
    let l = log.clone();
    let t = lp
        .create_task(async move {
            let _g = g;
            push(&l, "body ran");
        })
        .unwrap();
    assert!(t.cancel());
    assert!(run_bounded(&lp, t).unwrap_err().is_cancelled());
    assert_eq!(
        entries(&log),
        ["drop captured"],
        "captured values are dropped; the body never ran"
    );
}

// ---------------------------------------------------------------------------------------------
// Awaiting a task does not cancel it; a TaskGroup's children do.

#[test]
fn cancelling_a_task_that_awaits_another_task_does_not_cancel_the_inner_one() {
    let lp = virtual_loop();
    let log = log();
    let l = log.clone();
    let inner = lp
        .create_task(async move {
            let _g = DropLog::new("inner", &l);
            sleep(Duration::from_millis(5)).await;
            push(&l, "inner finished its work");
            7
        })
        .unwrap();
    let inner_ref = inner.task_ref();
    let watch = inner.task_ref();
    let l = log.clone();
    let outer = lp
        .create_task(async move {
            let _g = DropLog::new("outer", &l);
            let v = inner.await;
            push(&l, format!("outer got {v:?}"));
        })
        .unwrap();
    run_one(&lp);
    assert!(outer.cancel());
    let outer_result = run_bounded(&lp, outer);
    assert!(outer_result.unwrap_err().is_cancelled());
    assert_eq!(entries(&log), ["drop outer"], "only the outer future was dropped");
    assert!(!inner_ref.done(), "the inner task is still running, detached");
    run_bounded(&lp, until_done(watch));
    assert_eq!(entries(&log), ["drop outer", "inner finished its work", "drop inner"]);
    assert_eq!(inner_ref.state(), TaskState::Done, "it completed, it was not cancelled");
}

#[test]
fn cancelling_the_task_awaiting_group_join_drops_every_childs_future() {
    let lp = EventLoop::new().unwrap();
    let h = lp.handle();
    let log = log();
    let l = log.clone();
    let children = Rc::new(RefCell::new(Vec::new()));
    let c = children.clone();
    let owner = lp
        .create_task(async move {
            let mut group = TaskGroup::<(), ()>::new().unwrap();
            for name in ["child-a", "child-b", "child-c"] {
                let l = l.clone();
                let r = group
                    .spawn_named(name, async move {
                        let _g = DropLog::new(name, &l);
                        sleep(Duration::from_secs(100)).await;
                        push(&l, format!("{name} finished"));
                        Ok(())
                    })
                    .unwrap();
                c.borrow_mut().push(r);
            }
            group.join().await
        })
        .unwrap();
    run_one(&lp); // the owner spawns the children and parks in join
    run_one(&lp); // the children park in their sleeps
    assert_eq!(h.all_tasks().len(), 4);
    assert!(owner.cancel());
    run_one(&lp); // the owner's next step drops join, which drops the group
    let mut dropped = entries(&log);
    dropped.sort();
    assert_eq!(dropped, ["drop child-a", "drop child-b", "drop child-c"]);
    assert!(
        h.all_tasks().is_empty(),
        "no child outlives the group: {}",
        h.dump_tasks()
    );
    for r in children.borrow().iter() {
        assert_eq!(r.state(), TaskState::Cancelled, "{}", r.name());
    }
    assert!(run_bounded(&lp, owner).unwrap_err().is_cancelled());
    assert_eq!(settle_timers(&lp), 0, "the children's sleeps left the heap");
}

// ---------------------------------------------------------------------------------------------
// Finished tasks, and cancels made while a task runs.

#[test]
fn cancelling_a_finished_task_returns_false() {
    let lp = EventLoop::new().unwrap();
    let _reports = evloop_tests::record_exceptions_with(&lp, |_, _| ());
    let done = lp.create_task(async { 1 }).unwrap();
    let cancelled = lp.create_task(sleep(Duration::from_secs(100))).unwrap();
    let failed = lp.create_task(async { panic!("boom") }).unwrap();
    run_one(&lp);
    cancelled.cancel();
    run_one(&lp);
    for t in [done.task_ref(), cancelled.task_ref(), failed.task_ref()] {
        assert!(t.done(), "{t:?}");
        let before = t.state();
        let count = t.cancelling();
        assert!(!t.cancel(), "cancel() on a finished task returns false: {t:?}");
        assert_eq!(t.cancelling(), count, "and is not counted");
        assert_eq!(t.state(), before, "and changes nothing");
    }
    assert!(!done.abort(), "abort() on a finished task returns false too");
    assert_eq!(done.state(), TaskState::Done);
}

#[test]
fn cancel_requested_while_the_task_runs_takes_effect_at_its_next_await() {
    let lp = EventLoop::new().unwrap();
    let log = log();
    let l = log.clone();
    let t = lp
        .create_task(async move {
            let _g = DropLog::new("task", &l);
            let me = current_task().unwrap();
            assert!(me.cancel(), "the task cancels itself");
            let mut sum = 0u64;
            for i in 0..1000 {
                sum += i;
            }
            push(&l, format!("kept running synchronously: {sum}"));
            // An await that is ready at once is not a suspension: the step goes on.
            sleep(Duration::ZERO).await;
            push(&l, "after a ready await");
            async { 5 }.await;
            push(&l, "after another ready await");
            // The first await that returns Pending ends the step; the next step drops the future.
            yield_now().await;
            push(&l, "never: the future was dropped at the step after the cancel");
        })
        .unwrap();
    run_one(&lp);
    assert_eq!(
        entries(&log),
        [
            "kept running synchronously: 499500",
            "after a ready await",
            "after another ready await"
        ]
    );
    assert_eq!(t.state(), TaskState::Pending);
    assert_eq!(t.cancelling(), 1);
    run_one(&lp);
    assert_eq!(entries(&log).last().unwrap(), "drop task");
    assert_eq!(t.state(), TaskState::Cancelled);
}

#[test]
fn abort_drops_the_future_before_it_returns() {
    let lp = EventLoop::new().unwrap();
    let log = log();
    let l = log.clone();
    let t = lp
        .create_task(async move {
            let _g = DropLog::new("aborted", &l);
            sleep(Duration::from_secs(100)).await;
        })
        .unwrap();
    run_one(&lp);
    assert!(t.abort());
    assert_eq!(
        entries(&log),
        ["drop aborted"],
        "dropped inside abort(), not at a later step"
    );
    assert_eq!(t.state(), TaskState::Cancelled);
    assert!(lp.all_tasks().is_empty(), "the loop let go of it at once");
    assert!(!t.abort(), "a second abort finds it finished");
    assert_eq!(settle_timers(&lp), 0);
    assert!(run_bounded(&lp, t).unwrap_err().is_cancelled());
}

#[test]
fn abort_of_the_running_task_itself_takes_effect_at_its_next_step() {
    let lp = EventLoop::new().unwrap();
    let log = log();
    let slot: Rc<RefCell<Option<Task<()>>>> = Rc::new(RefCell::new(None));
    let (l, s) = (log.clone(), slot.clone());
    let t = lp
        .create_task(async move {
            let _g = DropLog::new("self-aborted", &l);
            yield_now().await;
            let me = s.borrow_mut().take().expect("the handle was stored");
            assert!(me.abort(), "abort on a running task is a cancel request");
            push(&l, "still running after abort()");
            drop(me);
            yield_now().await;
            push(&l, "never");
        })
        .unwrap();
    let r = t.task_ref();
    *slot.borrow_mut() = Some(t);
    run_one(&lp);
    run_one(&lp);
    assert_eq!(entries(&log), ["still running after abort()"]);
    run_one(&lp);
    assert_eq!(entries(&log), ["still running after abort()", "drop self-aborted"]);
    assert_eq!(r.state(), TaskState::Cancelled);
}

#[test]
fn cancel_of_a_task_awaiting_a_promise_leaves_the_promise_pending() {
    // asyncio's Task.cancel() also cancels the future the task waits on (`_fut_waiter`). Here
    // the awaiter's drop only unregisters its waker: the promise stays pending and usable.
    let lp = EventLoop::new().unwrap();
    let p = lp.create_future::<u32>();
    let p2 = p.clone();
    let t = lp.create_task(async move { p2.await }).unwrap();
    run_one(&lp);
    t.cancel();
    // A wake from outside the running loop goes through the remote queue, which `run_one`'s
    // check does not see: run one non-blocking iteration instead.
    spin_once(&lp);
    assert_eq!(t.state(), TaskState::Cancelled);
    assert!(!p.done() && !p.cancelled(), "the promise is untouched");
    p.set_result(4).unwrap();
    assert_eq!(p.result().unwrap(), 4);
}

// ---------------------------------------------------------------------------------------------
// timeout and timeout_at.

#[test]
fn timeout_drops_the_inner_future_on_expiry() {
    let lp = EventLoop::new().unwrap();
    let log = log();
    let l = log.clone();
    let h = lp.handle();
    let (out, log_at_return) = run_bounded(&lp, async move {
        let l2 = l.clone();
        let out = timeout(Duration::from_millis(5), async move {
            let _g = DropLog::new("inner", &l2);
            yield_now().await;
            push(&l2, "inner step 2");
            sleep(Duration::from_secs(100)).await;
            push(&l2, "never");
        })
        .await;
        (out, entries(&l))
    });
    assert_eq!(out.unwrap_err().after(), Duration::from_millis(5));
    assert_eq!(
        log_at_return,
        ["inner step 2", "drop inner"],
        "dropped before timeout() returned, in the awaiting task's own step"
    );
    assert_eq!(
        settle_timers(&h),
        0,
        "both the limit's and the inner sleep's timers are gone"
    );
}

#[test]
fn timeout_at_drops_the_inner_future_on_expiry() {
    let lp = EventLoop::new().unwrap();
    let h = lp.handle();
    let dropped = flag();
    let d = dropped.clone();
    let (out, dropped_at_return) = run_bounded(&lp, async move {
        let deadline = h.time() + Duration::from_millis(5);
        let d2 = d.clone();
        let out = timeout_at(deadline, async move {
            let _g = DropFlag(d2);
            sleep(Duration::from_secs(100)).await;
        })
        .await;
        (out, d.get())
    });
    assert!(out.is_err());
    assert!(dropped_at_return);
}

#[test]
fn timeout_elapsed_says_how_long() {
    let lp = EventLoop::new().unwrap();
    let h = lp.handle();
    let (by_duration, by_deadline) = run_bounded(&lp, async move {
        let a = timeout(Duration::from_millis(3), sleep(Duration::from_secs(100))).await;
        let deadline = h.time() + Duration::from_millis(200);
        let b = timeout_at(deadline, sleep(Duration::from_secs(100))).await;
        (a.unwrap_err(), b.unwrap_err())
    });
    assert_eq!(by_duration.after(), Duration::from_millis(3));
    assert_eq!(by_duration.to_string(), "timed out after 3ms");
    // timeout_at measures from its first poll to the deadline: at most the 200 ms asked for,
    // less whatever passed between computing the deadline and that poll (next to nothing).
    assert!(by_deadline.after() <= Duration::from_millis(200), "{by_deadline:?}");
    assert!(by_deadline.after() >= Duration::from_millis(100), "{by_deadline:?}");
    let e: Box<dyn std::error::Error> = Box::new(by_duration);
    assert!(e.to_string().contains("3ms"));
}

#[test]

fn timeout_at_elapsed_is_measured_in_loop_time_under_a_virtual_clock() {
    let lp = virtual_loop();
    let h = lp.handle();
    let err = lp
        .run_until_complete(async move {
            sleep(Duration::from_secs(3600)).await; // virtual: an hour passes at once
            let deadline = h.time() + Duration::from_millis(10);
            timeout_at(deadline, sleep(Duration::from_secs(100))).await.unwrap_err()
        })
        .unwrap();
    assert_eq!(err.after(), Duration::from_millis(10), "{err:?}");
}

#[test]
fn timeout_of_zero_still_polls_once_and_a_ready_future_wins() {
    let lp = EventLoop::new().unwrap();
    let h = lp.handle();
    let polls = Rc::new(Cell::new(0));
    let p = polls.clone();
    let (ready, ready_at, pending_at) = run_bounded(&lp, async move {
        let ready = timeout(Duration::ZERO, async { "ready" }).await;
        let now = h.time();
        let ready_at = timeout_at(now, async { "ready at" }).await;
        let pending_at = timeout_at(now, CountPolls(p)).await;
        (ready, ready_at, pending_at)
    });
    assert_eq!(ready, Ok("ready"));
    assert_eq!(ready_at, Ok("ready at"), "a deadline of now still polls once");
    assert!(pending_at.is_err());
    assert_eq!(polls.get(), 1, "the pending future was polled exactly once");
}

#[test]
fn timeout_at_a_deadline_in_the_past_polls_once_then_elapses_with_zero() {
    let lp = EventLoop::new().unwrap();
    let h = lp.handle();
    let polls = Rc::new(Cell::new(0));
    let p = polls.clone();
    let (ready, pending) = run_bounded(&lp, async move {
        sleep(Duration::from_millis(2)).await;
        let past = h.time() - Duration::from_millis(1);
        let ready = timeout_at(past, async { 9 }).await;
        let pending = timeout_at(past, CountPolls(p)).await;
        (ready, pending)
    });
    assert_eq!(ready, Ok(9));
    assert_eq!(pending.unwrap_err().after(), Duration::ZERO);
    assert_eq!(polls.get(), 1);
}

#[test]
fn timeout_nested_inner_shorter_fires_the_inner_one() {
    let lp = virtual_loop();
    let h = lp.handle();
    let out = run_bounded(&lp, async move {
        let far = h.time() + Duration::from_secs(10);
        timeout_at(far, timeout(Duration::from_millis(4), sleep(Duration::from_secs(100)))).await
    });
    let inner = out.expect("the outer timeout_at did not fire");
    assert_eq!(inner.unwrap_err().after(), Duration::from_millis(4));
}

#[test]
fn timeout_nested_outer_shorter_fires_the_outer_one_and_drops_everything_inside() {
    let lp = EventLoop::new().unwrap();
    let h = lp.handle();
    let log = log();
    let l = log.clone();
    let out = run_bounded(&lp, async move {
        let near = h.time() + Duration::from_millis(4);
        timeout_at(
            near,
            timeout(Duration::from_secs(10), async move {
                let _g = DropLog::new("innermost", &l);
                sleep(Duration::from_secs(100)).await;
            }),
        )
        .await
    });
    assert!(out.is_err(), "the outer one fired");
    assert_eq!(entries(&log), ["drop innermost"]);
    assert_eq!(settle_timers(&lp), 0, "three timers, all gone");
}

#[test]
fn timeout_never_fires_early() {
    let lp = EventLoop::new().unwrap();
    let h = lp.handle();
    let limits = [
        Duration::from_micros(50),
        Duration::from_micros(300),
        Duration::from_millis(1),
        Duration::from_millis(3),
        Duration::from_millis(7),
    ];
    let results = run_bounded(&lp, async move {
        let mut out = Vec::new();
        for limit in limits {
            let start = h.time();
            let r = timeout(limit, sleep(Duration::from_secs(100))).await;
            out.push(("timeout", limit, r.is_err(), h.time() - start >= limit));
            let deadline = h.time() + limit;
            let r = timeout_at(deadline, sleep(Duration::from_secs(100))).await;
            out.push(("timeout_at", limit, r.is_err(), h.time() >= deadline));
        }
        out
    });
    for (which, limit, elapsed, not_early) in results {
        assert!(elapsed, "{which} {limit:?}");
        assert!(not_early, "{which} {limit:?} fired early");
    }
}

#[test]
fn timeout_ok_leaves_no_timer_behind() {
    let lp = EventLoop::new().unwrap();
    let h = lp.handle();
    let out = run_bounded(&lp, async move {
        let a = timeout(Duration::from_secs(100), sleep(Duration::from_millis(1))).await;
        let b = timeout_at(h.time() + Duration::from_secs(100), async { 2 }).await;
        (a, b)
    });
    assert_eq!(out, (Ok(()), Ok(2)));
    assert_eq!(settle_timers(&lp), 0);
}

#[test]
fn timeout_on_a_task_handle_gives_up_waiting_but_does_not_cancel_the_task() {
    // asyncio's wait_for cancels the task it times out; here the handle is dropped, which
    // detaches. To cancel, cancel it (or time out the future itself instead of a task).
    let lp = virtual_loop();
    let finished = flag();
    let f = finished.clone();
    let (out, state) = run_bounded(&lp, async move {
        let task = evloop::spawn(async move {
            sleep(Duration::from_millis(10)).await;
            f.set(true);
        });
        let r = task.task_ref();
        let out = timeout(Duration::from_millis(1), task).await;
        let state = r.state();
        until_done(r).await;
        (out, state)
    });
    assert!(out.is_err());
    assert_eq!(state, TaskState::Pending, "still running after the timeout");
    assert!(finished.get(), "and it finished its work");
}

#[test]
fn timeout_by_reference_keeps_the_task_so_it_can_be_awaited_again() {
    let lp = virtual_loop();
    let (first, second) = run_bounded(&lp, async move {
        let mut task = evloop::spawn(async {
            sleep(Duration::from_millis(10)).await;
            "late"
        });
        let first = timeout(Duration::from_millis(1), &mut task).await;
        let second = task.await;
        (first, second)
    });
    assert!(first.is_err());
    assert_eq!(second.unwrap(), "late");
}

#[test]
fn timeout_inside_a_cancelled_task_drops_the_inner_future_and_the_limit() {
    // CPython test_tasks.py test_cancel_wait_for: cancelling the task that awaits wait_for.
    let lp = EventLoop::new().unwrap();
    let log = log();
    let l = log.clone();
    let t = lp
        .create_task(async move {
            let l2 = l.clone();
            let r = timeout(Duration::from_secs(50), async move {
                let _g = DropLog::new("inner", &l2);
                sleep(Duration::from_secs(100)).await;
            })
            .await;
            push(&l, format!("never: {r:?}"));
        })
        .unwrap();
    run_one(&lp);
    assert_eq!(lp.stats().timers, 2, "the limit and the inner sleep");
    t.cancel();
    assert!(run_bounded(&lp, t).unwrap_err().is_cancelled());
    assert_eq!(entries(&log), ["drop inner"]);
    assert_eq!(settle_timers(&lp), 0);
}

#[test]
fn timeout_when_the_future_and_the_deadline_are_ready_in_the_same_step_the_future_wins() {
    // CPython test_tasks.py test_wait_for_race_condition: the future completes in the same
    // iteration as the timeout fires; the result is not lost. On a virtual clock, so that the
    // deadline cannot pass before the task's first step however slowly it runs (valgrind).
    let lp = virtual_loop();
    let h = lp.handle();
    let out = run_bounded(&lp, async move {
        let deadline = h.time() + Duration::from_millis(3);
        let p = h.create_future::<&'static str>();
        let p2 = p.clone();
        // Scheduled before timeout_at's own timer: at the deadline this callback runs first and
        // completes the promise, then the task steps with both the promise and the timer ready.
        h.call_at(deadline, move || p2.set_result("result").unwrap()).unwrap();
        timeout_at(deadline, p.wait()).await
    });
    assert_eq!(out, Ok(Ok("result")));
}

#[test]
fn timeout_inner_future_errors_pass_through_unchanged() {
    // CPython test_timeouts.py test_foreign_exception_passed.
    let lp = EventLoop::new().unwrap();
    let out = run_bounded(&lp, async {
        timeout(Duration::from_secs(10), async { Err::<(), _>("inner failure") }).await
    });
    assert_eq!(out, Ok(Err("inner failure")));
}

#[test]
fn timeout_expiring_does_not_cancel_the_awaiting_task() {
    // CPython test_timeouts.py test_outer_task_is_not_cancelled: the task that awaited the
    // timeout goes on, and can await again.
    let lp = EventLoop::new().unwrap();
    let out = run_bounded(&lp, async {
        let first: Result<(), Elapsed> = timeout(Duration::from_millis(1), sleep(Duration::from_secs(10))).await;
        let me = current_task().unwrap();
        sleep(Duration::from_millis(1)).await;
        (
            first.is_err(),
            me.cancelling(),
            timeout(Duration::from_secs(10), async { 3 }).await,
        )
    });
    assert_eq!(out, (true, 0, Ok(3)));
}

#[test]
fn timeout_concurrent_nested_timeouts_in_many_tasks_each_fire_their_own() {
    // CPython test_timeouts.py test_nested_timeouts_concurrent.
    let lp = virtual_loop();
    let results = run_bounded(&lp, async {
        let tasks: Vec<_> = (1..=5u64)
            .map(|i| {
                evloop::spawn(async move {
                    let inner = Duration::from_millis(i);
                    timeout(Duration::from_secs(10), timeout(inner, sleep(Duration::from_secs(100)))).await
                })
            })
            .collect();
        let mut out = Vec::new();
        for t in tasks {
            out.push(t.await.unwrap());
        }
        out
    });
    for (i, r) in results.into_iter().enumerate() {
        let inner = r.expect("the outer limit never fires");
        assert_eq!(inner.unwrap_err().after(), Duration::from_millis(i as u64 + 1));
    }
}

// ---------------------------------------------------------------------------------------------
// shield and shield_future.

#[test]
fn shield_lets_the_awaiter_time_out_without_cancelling_the_task() {
    let lp = virtual_loop();
    let log = log();
    let l = log.clone();
    let (out, r) = run_bounded(&lp, async move {
        let task = evloop::spawn(async move {
            sleep(Duration::from_millis(10)).await;
            push(&l, "side effect");
            5
        });
        let r = task.task_ref();
        (timeout(Duration::from_millis(1), shield(task)).await, r)
    });
    assert!(out.is_err());
    assert!(!r.done(), "the shielded task runs on");
    run_bounded(&lp, until_done(r.clone()));
    assert_eq!(entries(&log), ["side effect"]);
    assert_eq!(r.state(), TaskState::Done);
}

#[test]
fn shield_lets_the_awaiting_task_be_cancelled_without_cancelling_the_task() {
    // CPython test_tasks.py test_shield_cancel_outer.
    let lp = virtual_loop();
    let log = log();
    let l = log.clone();
    let inner = lp
        .create_task(async move {
            sleep(Duration::from_millis(5)).await;
            push(&l, "inner done");
            "value"
        })
        .unwrap();
    let inner_ref = inner.task_ref();
    let outer = lp.create_task(async move { shield(inner).await }).unwrap();
    run_one(&lp);
    outer.cancel();
    assert!(run_bounded(&lp, outer).unwrap_err().is_cancelled());
    assert!(!inner_ref.done());
    run_bounded(&lp, sleep(Duration::from_millis(20)));
    assert_eq!(entries(&log), ["inner done"]);
    assert_eq!(inner_ref.state(), TaskState::Done);
}

#[test]
fn shield_future_keeps_running_when_the_awaiter_times_out() {
    let lp = virtual_loop();
    let log = log();
    let l = log.clone();
    let (out, r) = run_bounded(&lp, async move {
        let shielded = shield_future(async move {
            let _g = DropLog::new("shielded work", &l);
            sleep(Duration::from_millis(10)).await;
            push(&l, "shielded side effect");
        });
        let r = shielded.task().task_ref();
        (timeout(Duration::from_millis(1), shielded).await, r)
    });
    assert!(out.is_err());
    assert!(entries(&log).is_empty(), "the work was not dropped at the timeout");
    run_bounded(&lp, until_done(r));
    assert_eq!(entries(&log), ["shielded side effect", "drop shielded work"]);
}

#[test]
fn shield_future_versus_a_plain_future_under_the_same_timeout() {
    let lp = virtual_loop();
    let log = log();
    let l = log.clone();
    run_bounded(&lp, async move {
        let work = |name: &'static str, l: Log| async move {
            let _g = DropLog::new(name, &l);
            sleep(Duration::from_millis(5)).await;
            push(&l, format!("{name} completed"));
        };
        let _ = timeout(Duration::from_millis(1), work("plain", l.clone())).await;
        let _ = timeout(Duration::from_millis(1), shield_future(work("shielded", l.clone()))).await;
        sleep(Duration::from_millis(20)).await;
    });
    assert_eq!(
        entries(&log),
        ["drop plain", "shielded completed", "drop shielded"],
        "the plain future was dropped at the timeout; the shielded one completed"
    );
}

#[test]
fn shield_gives_the_result_and_passes_a_panic_through() {
    // CPython test_tasks.py test_shield_result and test_shield_exception.
    let lp = EventLoop::new().unwrap();
    let _reports = evloop_tests::record_exceptions_with(&lp, |_, _| ());
    let (ok, panicked) = run_bounded(&lp, async {
        let ok = shield(evloop::spawn(async { 11 })).await;
        let panicked = shield(evloop::spawn(async { panic!("inner panic") })).await;
        (ok, panicked)
    });
    assert_eq!(ok.unwrap(), 11);
    let err = panicked.unwrap_err();
    assert_eq!(err.panic().unwrap().message(), "inner panic");
}

#[test]
fn shield_of_a_cancelled_task_gives_cancelled_to_the_awaiter() {
    // CPython test_tasks.py test_shield_cancel_inner.
    let lp = EventLoop::new().unwrap();
    let out = run_bounded(&lp, async {
        let task = evloop::spawn(sleep(Duration::from_secs(100)));
        let s = shield(task);
        assert!(s.task().cancel());
        s.await
    });
    assert!(matches!(out, Err(TaskError::Cancelled { .. })), "{out:?}");
}

#[test]
fn shield_of_a_finished_task_returns_at_once() {
    // CPython test_tasks.py test_shield_shortcut.
    let lp = EventLoop::new().unwrap();
    let h = lp.handle();
    let out = run_bounded(&lp, async move {
        let task = evloop::spawn(async { "early" });
        yield_now().await;
        assert!(task.done());
        let before = h.stats().iterations;
        let v = shield(task).await;
        (v.unwrap(), h.stats().iterations - before)
    });
    assert_eq!(out, ("early", 0), "no iteration passed: the result was there");
}

#[test]
fn shield_a_shielded_task_failing_after_its_awaiter_gave_up_is_reported() {
    // Nobody observes the shielded task's outcome any more: a failure goes to the exception
    // handler (asyncio logs "exception was never retrieved" for a shielded task the same way).
    let lp = virtual_loop();
    let reports = evloop_tests::record_exceptions_with(&lp, |_, ctx| (ctx.kind, ctx.task.clone()));
    let r = run_bounded(&lp, async {
        let task = evloop::task::TaskBuilder::new()
            .name("shielded")
            .spawn(async {
                sleep(Duration::from_millis(5)).await;
                panic!("late failure");
            })
            .unwrap();
        let r = task.task_ref();
        assert!(timeout(Duration::from_millis(1), shield(task)).await.is_err());
        r
    });
    run_bounded(&lp, until_done(r));
    assert_eq!(
        *reports.borrow(),
        [(
            evloop::event_loop::ExceptionKind::TaskFailureUnobserved,
            Some("shielded".to_string())
        )]
    );
}

#[test]
fn timeout_a_panicking_destructor_of_the_inner_future_fails_the_awaiting_task() {
    // CPython test_tasks.py test_wait_for_reraises_exception_during_cancellation: cleanup that
    // fails while wait_for cancels the inner task raises in the awaiter. Here the inner future is
    // dropped inside the awaiting task's step, so its destructor's panic is that task's panic.
    struct PanicOnDrop;
    impl Drop for PanicOnDrop {
        fn drop(&mut self) {
            panic!("cleanup failed");
        }
    }
    let lp = virtual_loop();
    let _reports = evloop_tests::record_exceptions_with(&lp, |_, _| ());
    let t = lp
        .create_task(async {
            let _ = timeout(Duration::from_millis(1), async {
                let _p = PanicOnDrop;
                sleep(Duration::from_secs(100)).await;
            })
            .await;
            "not reached"
        })
        .unwrap();
    let err = run_bounded(&lp, t).unwrap_err();
    assert_eq!(err.panic().unwrap().message(), "cleanup failed");
}

#[test]
fn cancelling_a_promise_gives_its_awaiter_an_error_value_not_a_cancellation() {
    // CPython test_tasks.py test_cancel_inner_future: cancelling the future a task awaits
    // raises CancelledError in the task, which is then cancelled. Here the awaiter gets
    // `Err(PromiseError::Cancelled)` as a value and decides what to do; the task goes on.
    let lp = virtual_loop();
    let h = lp.handle();
    let (got, state) = run_bounded(&lp, async move {
        let p = h.create_future::<u8>();
        let p2 = p.clone();
        let t = evloop::spawn(async move {
            let r = p2.wait().await;
            (r.is_err(), "kept running")
        });
        let r = t.task_ref();
        yield_now().await;
        assert!(p.cancel());
        let got = t.await.unwrap();
        (got, r.state())
    });
    assert_eq!(got, (true, "kept running"));
    assert_eq!(state, TaskState::Done, "the awaiting task was not cancelled");
}
