//! asyncio 3.11's cancel accounting (runtime/src/task/handle.rs, timeouts.rs): `cancelling()`
//! counts the cancel requests not yet taken back with `uncancel()`; a `Timeout` counts its own
//! expiry as one (asyncio's timeout cancels the task it runs in), takes it back when it reports
//! `Elapsed`, and so tells its own cancellation from one made outside: a `cancel()` and a
//! deadline in the same iteration end the task cancelled whichever comes first.
//!
//! Plus ports of CPython's `test_tasks.py` (`test_cancelling`, `test_uncancel_basic`),
//! `test_timeouts.py` and `test_taskgroups.py` cases that apply (each says which one it ports).

use std::cell::{Cell, RefCell};
use std::future::Future;
use std::rc::Rc;
use std::time::Duration;

use evloop::{
    spawn,
    task::{TaskError, TaskRef, TaskState, current_task, yield_now},
    time::{Timeout, sleep},
};
use evloop_tests::{run_bounded, virtual_loop};

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

/// What a task running `body` (bounded by timeouts due in 10 ms) ends with when a callback due at
/// the same instant cancels it, the callback scheduled before (`cancel_first`) or after the
/// timeouts' timers; and what that `cancel()` returned.
fn cancel_and_deadline_together<T: 'static>(
    cancel_first: bool,
    body: impl Future<Output = T> + 'static,
) -> (Result<T, TaskError>, Option<bool>) {
    let lp = virtual_loop();
    let h = lp.handle();
    run_bounded(&lp, async move {
        let target: Rc<RefCell<Option<TaskRef>>> = Rc::default();
        let returned = Rc::new(Cell::new(None));
        let schedule_cancel = || {
            let (target, returned) = (target.clone(), returned.clone());
            h.call_later(ms(10), move || {
                returned.set(target.borrow().as_ref().map(TaskRef::cancel))
            })
            .unwrap();
        };
        if cancel_first {
            schedule_cancel();
        }
        let t = spawn(body);
        *target.borrow_mut() = Some(t.task_ref());
        yield_now().await; // its first step arms the timeouts' timers, due at the same instant
        if !cancel_first {
            schedule_cancel();
        }
        (t.await, returned.get())
    })
}

#[test]
fn a_cancel_and_a_timeouts_deadline_in_the_same_iteration_end_the_task_cancelled_in_both_orders() {
    // asyncio: the timeout's callback cancels the task (cancelling() == 1), the outside cancel
    // makes it 2, and the timeout's __aexit__ sees uncancel() > its entry count: CancelledError.
    for cancel_first in [true, false] {
        let body = Timeout::after(ms(10)).run(std::future::pending::<()>());
        let (out, returned) = cancel_and_deadline_together(cancel_first, body);
        assert_eq!(
            returned,
            Some(true),
            "cancel_first={cancel_first}: the task had not finished"
        );
        assert!(
            matches!(out, Err(ref e) if e.is_cancelled()),
            "cancel_first={cancel_first}: {out:?}"
        );
    }
}

#[test]
fn the_timeouts_own_request_is_counted_until_the_task_steps_and_taken_back_when_it_reports() {
    // Between the deadline's callback and the task's step, the task has one request pending
    // (asyncio: the timeout called task.cancel()); once the timeout reported, none is left.
    let lp = virtual_loop();
    let h = lp.handle();
    let (seen, after, out) = run_bounded(&lp, async move {
        let t = spawn(async { Timeout::after(ms(10)).run(std::future::pending::<()>()).await });
        let r = t.task_ref();
        yield_now().await;
        let seen = Rc::new(Cell::new(None));
        let (s, r2) = (seen.clone(), r.clone());
        h.call_later(ms(10), move || s.set(Some((r2.cancelling(), r2.state()))))
            .unwrap();
        let out = t.await;
        (seen.get(), r.cancelling(), out)
    });
    assert_eq!(seen, Some((1, TaskState::Pending)));
    assert_eq!(after, 0);
    assert!(matches!(out, Ok(Err(e)) if e.after() == ms(10)), "{out:?}");
}

#[test]
fn cancelling_counts_each_request_and_cancel_returns_false_once_done() {
    // CPython test_tasks.py test_cancelling: each cancel() of an unfinished task counts and
    // returns true; a finished task's cancel() returns false and does not count.
    let lp = virtual_loop();
    let (counts, out, after) = run_bounded(&lp, async {
        let t = spawn(sleep(Duration::from_secs(10)));
        yield_now().await;
        let before = t.cancelling();
        let (a, b) = (t.cancel(), t.cancel());
        let counts = (before, a, b, t.cancelling());
        let r = t.task_ref();
        let out = t.await;
        (counts, out, (r.cancel(), r.cancelling(), r.state()))
    });
    assert_eq!(counts, (0, true, true, 2));
    assert!(matches!(out, Err(ref e) if e.is_cancelled()), "{out:?}");
    assert_eq!(after, (false, 2, TaskState::Cancelled));
}

#[test]
fn uncancel_takes_a_request_back_and_at_zero_withdraws_a_cancel_not_yet_taken_effect() {
    // CPython test_tasks.py test_uncancel_basic, for a model where a cancel is a drop (nothing
    // to catch): uncancel() before the task's next step withdraws the cancel (asyncio 3.13
    // clears _must_cancel at zero), a second cancel ends it, and after the task finished
    // uncancel() changes the count only.
    let lp = virtual_loop();
    let (steps, out, late) = run_bounded(&lp, async {
        let steps = Rc::new(Cell::new(0));
        let s = steps.clone();
        let t = spawn(async move {
            loop {
                s.set(s.get() + 1);
                sleep(ms(10)).await;
            }
        });
        let r = t.task_ref();
        yield_now().await;
        assert!(r.cancel());
        assert_eq!(r.cancelling(), 1);
        assert_eq!(r.uncancel(), 0);
        assert_eq!(r.uncancel(), 0, "never below zero");
        sleep(ms(25)).await; // it kept running: two more steps
        let steps_then = steps.get();
        assert!(r.cancel());
        assert!(r.cancel());
        assert_eq!(r.uncancel(), 1, "one request left: the cancel stands");
        let out = t.await;
        (steps_then, out, (r.uncancel(), r.cancelling(), r.cancelled()))
    });
    assert_eq!(steps, 3);
    assert!(matches!(out, Err(ref e) if e.is_cancelled()), "{out:?}");
    assert_eq!(late, (0, 0, true), "a finished task stays cancelled");
}

#[test]
fn a_timeout_that_expired_leaves_the_task_not_cancelled_and_its_count_where_it_was() {
    // CPython test_timeouts.py test_outer_task_is_not_cancelled, plus the count: the timeout
    // took its own request back.
    let lp = virtual_loop();
    let (out, count, state) = run_bounded(&lp, async {
        let t = spawn(async {
            let me = current_task().unwrap();
            let r = Timeout::after(ms(1)).run(sleep(Duration::from_secs(10))).await;
            (r.is_err(), me.cancelling())
        });
        let r = t.task_ref();
        let out = t.await;
        (out, r.cancelling(), r.state())
    });
    assert_eq!(out.unwrap(), (true, 0));
    assert_eq!((count, state), (0, TaskState::Done));
}

#[test]
fn an_outside_cancel_of_a_timeout_that_did_not_expire_is_a_cancel() {
    // CPython test_timeouts.py test_foreign_cancel_doesnt_timeout_if_not_expired.
    let lp = virtual_loop();
    let (out, expired) = run_bounded(&lp, async {
        let t = Timeout::after(Duration::from_secs(10));
        let cm = t.handle();
        let task = spawn(t.run(async {
            current_task().unwrap().cancel();
            sleep(Duration::from_secs(10)).await;
        }));
        (task.await, cm.expired())
    });
    assert!(matches!(out, Err(ref e) if e.is_cancelled()), "{out:?}");
    assert!(!expired);
}

#[test]
fn reschedule_to_none_then_cancel_is_a_cancel_not_a_timeout() {
    // CPython test_timeouts.py test_reschedule.
    let lp = virtual_loop();
    let (when1, when2, out, expired) = run_bounded(&lp, async {
        let lp = evloop::event_loop::get_running_loop().unwrap();
        let deadline1 = lp.time() + Duration::from_secs(10);
        let deadline2 = deadline1 + Duration::from_secs(20);
        let t = Timeout::at(Some(deadline1));
        let cm = t.handle();
        let task = spawn(t.run(sleep(Duration::from_secs(50))));
        yield_now().await;
        assert_eq!(cm.when(), Some(deadline1));
        cm.reschedule(Some(deadline2)).unwrap();
        let when2 = cm.when();
        cm.reschedule(None).unwrap();
        task.cancel();
        (Some(deadline2), when2, task.await, cm.expired())
    });
    assert_eq!(when1, when2);
    assert!(matches!(out, Err(ref e) if e.is_cancelled()), "{out:?}");
    assert!(!expired);
}

#[test]
fn nested_timeouts_on_one_deadline_and_an_outside_cancel_in_the_same_iteration_end_cancelled() {
    // Three requests (two timeouts, one cancel): the inner timeout takes its own back as the
    // outer drops it, the outer takes its own back and finds one left, not its own.
    for cancel_first in [true, false] {
        let inner = Timeout::after(ms(10)); // made outside the loop: 10 ms from its first poll
        let inner_h = inner.handle();
        let body = Timeout::after(ms(10)).run(inner.run(std::future::pending::<()>()));
        let (out, returned) = cancel_and_deadline_together(cancel_first, body);
        assert_eq!(returned, Some(true), "cancel_first={cancel_first}");
        assert!(
            matches!(out, Err(ref e) if e.is_cancelled()),
            "cancel_first={cancel_first}: {out:?}"
        );
        assert!(inner_h.expired(), "cancel_first={cancel_first}");
    }
}

#[test]
fn a_failing_task_group_leaves_the_owners_cancel_count_at_zero() {
    // CPython test_taskgroups.py test_cancelling_level_preserved: asyncio's group cancels its
    // owner and takes it back; evloop's never cancels the owner, so there is nothing to take
    // back, and the count is zero too.
    let lp = virtual_loop();
    let (failed, count) = run_bounded(&lp, async {
        let mut g = evloop::task::TaskGroup::<(), &str>::new().unwrap();
        g.spawn(async {
            sleep(Duration::ZERO).await;
            Err("boom")
        })
        .unwrap();
        let failed = g.join().await.is_err();
        (failed, current_task().unwrap().cancelling())
    });
    assert!(failed);
    assert_eq!(count, 0);
}
