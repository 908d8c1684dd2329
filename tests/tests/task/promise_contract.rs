//! The promise contract (docs/design.md, "Promise"): asyncio's `Future` as `loop.create_future()`.
//!
//! - States pending / finished / cancelled. Setting a result twice is an `InvalidState` error,
//!   not a panic.
//! - Done callbacks are scheduled with `call_soon` in registration order when it completes, never
//!   run inline; adding one to a done promise schedules it with `call_soon`;
//!   `remove_done_callback` returns how many it removed.
//! - `cancel()` returns false if already done. Awaiting gives the result or `Cancelled`; many
//!   awaiters are allowed.

use std::cell::Cell;
use std::rc::Rc;
use std::time::Duration;

use evloop::{
    event_loop::EventLoop,
    task::{Promise, PromiseError, Task, yield_now},
    time::{sleep, timeout},
};
use evloop_tests::{entries, log, push, run_bounded, run_one};
// The built-in `#[test]` in this binary; the `sim` binary's runs the body on the simulated
// kernel (sim/contracts.rs).
use crate::contract_test as test;

// ---------------------------------------------------------------------------------------------
// States.

#[test]
fn promise_states_pending_finished_cancelled() {
    let lp = EventLoop::new().unwrap();

    let p: Promise<u32> = lp.create_future();
    assert!(!p.done(), "a new promise is pending");
    assert!(!p.cancelled());
    match p.result() {
        Err(PromiseError::Pending { promise }) => assert_eq!(promise, format!("Promise#{}", p.id())),
        other => panic!("result() of a pending promise: expected Pending, got {other:?}"),
    }
    assert!(!p.result().unwrap_err().is_cancelled());

    p.set_result(7).unwrap();
    assert!(p.done(), "finished is done");
    assert!(!p.cancelled(), "finished is not cancelled");
    assert_eq!(p.result(), Ok(7));
    assert_eq!(p.result(), Ok(7), "result() can be read again");

    let q: Promise<u32> = lp.create_future();
    assert_ne!(p.id(), q.id(), "each promise has its own number");
    assert!(q.cancel(), "cancelling a pending promise returns true");
    assert!(q.done(), "cancelled is done");
    assert!(q.cancelled());
    match q.result() {
        Err(e @ PromiseError::Cancelled { .. }) => {
            assert!(e.is_cancelled());
            assert!(e.to_string().contains(&format!("Promise#{}", q.id())), "{e}");
            assert!(e.to_string().contains("cancelled"), "{e}");
        }
        other => panic!("result() of a cancelled promise: expected Cancelled, got {other:?}"),
    }
}

#[test]
fn promise_set_result_twice_is_an_invalid_state_error_not_a_panic() {
    let lp = EventLoop::new().unwrap();
    let p: Promise<&'static str> = lp.create_future();
    p.set_result("first").unwrap();
    let err = p.set_result("second").unwrap_err();
    assert_eq!(err.operation(), "set_result");
    assert_eq!(err.state(), "finished");
    let msg = err.to_string();
    assert!(
        msg.contains(&format!("Promise#{}", p.id())),
        "the message names the promise: {msg}"
    );
    assert!(msg.contains("finished"), "the message names its state: {msg}");
    assert!(msg.contains("set_result"), "the message names the operation: {msg}");
    assert_eq!(p.result(), Ok("first"), "the first value stays");
    // It converts into io::Error for code with one error type.
    let io: std::io::Error = err.into();
    assert!(io.to_string().contains("finished"));
}

#[test]
fn promise_set_result_after_cancel_is_an_invalid_state_error() {
    let lp = EventLoop::new().unwrap();
    let p: Promise<u8> = lp.create_future();
    assert!(p.cancel());
    let err = p.set_result(1).unwrap_err();
    assert_eq!(err.operation(), "set_result");
    assert_eq!(err.state(), "cancelled");
    assert!(err.to_string().contains(&format!("Promise#{}", p.id())), "{err}");
    assert!(err.to_string().contains("cancelled"), "{err}");
    assert!(p.cancelled(), "still cancelled");
    assert!(p.result().unwrap_err().is_cancelled());
}

#[test]
fn promise_cancel_returns_false_if_already_done() {
    let lp = EventLoop::new().unwrap();
    let finished: Promise<u8> = lp.create_future();
    finished.set_result(3).unwrap();
    assert!(!finished.cancel(), "cancel() of a finished promise returns false");
    assert!(!finished.cancelled(), "and leaves it finished");
    assert_eq!(finished.result(), Ok(3));

    let cancelled: Promise<u8> = lp.create_future();
    assert!(cancelled.cancel());
    assert!(!cancelled.cancel(), "cancel() of a cancelled promise returns false");
    assert!(cancelled.cancelled());
}

// ---------------------------------------------------------------------------------------------
// Done callbacks.

#[test]
fn promise_done_callbacks_are_scheduled_with_call_soon_in_registration_order_never_inline() {
    let lp = EventLoop::new().unwrap();
    let log = log();
    let p: Promise<u32> = lp.create_future();
    for name in ["cb1", "cb2", "cb3"] {
        let l = log.clone();
        p.add_done_callback(move |p: &Promise<u32>| push(&l, format!("{name}={:?}", p.result())));
    }
    let l = log.clone();
    lp.call_soon(move || push(&l, "soon-before")).unwrap();

    p.set_result(5).unwrap();
    assert!(
        entries(&log).is_empty(),
        "no done callback ran inside set_result: {:?}",
        entries(&log)
    );
    assert_eq!(
        lp.stats().ready,
        4,
        "three done callbacks were queued after the call_soon"
    );

    let l = log.clone();
    lp.call_soon(move || push(&l, "soon-after")).unwrap();
    run_one(&lp);
    assert_eq!(
        entries(&log),
        ["soon-before", "cb1=Ok(5)", "cb2=Ok(5)", "cb3=Ok(5)", "soon-after"],
        "done callbacks run like call_soon callbacks queued at completion, in registration order"
    );
}

#[test]
fn promise_done_callbacks_of_a_promise_completed_by_a_callback_run_in_the_next_iteration() {
    let lp = EventLoop::new().unwrap();
    let p: Promise<()> = lp.create_future();
    let ran_in = Rc::new(Cell::new(0u64));
    let (r, h) = (ran_in.clone(), lp.handle());
    p.add_done_callback(move |_| r.set(h.stats().iterations));
    let set_in = Rc::new(Cell::new(0u64));
    let (s, h, p2) = (set_in.clone(), lp.handle(), p.clone());
    lp.call_soon(move || {
        p2.set_result(()).unwrap();
        s.set(h.stats().iterations);
    })
    .unwrap();
    run_one(&lp);
    assert_ne!(set_in.get(), 0);
    assert_eq!(
        ran_in.get(),
        0,
        "the done callback did not run inline or in the same iteration"
    );
    run_one(&lp);
    assert_eq!(
        ran_in.get(),
        set_in.get() + 1,
        "the done callback runs in the next iteration"
    );
}

#[test]
fn promise_cancel_schedules_the_done_callbacks_too() {
    let lp = EventLoop::new().unwrap();
    let log = log();
    let p: Promise<u32> = lp.create_future();
    let l = log.clone();
    p.add_done_callback(move |p: &Promise<u32>| push(&l, format!("cancelled={}", p.cancelled())));
    assert!(p.cancel());
    assert!(entries(&log).is_empty(), "not inline on cancel either");
    run_one(&lp);
    assert_eq!(entries(&log), ["cancelled=true"]);
}

#[test]
fn promise_done_callback_added_to_a_done_promise_is_scheduled_not_run_inline() {
    let lp = EventLoop::new().unwrap();
    let log = log();
    let p: Promise<u32> = lp.create_future();
    p.set_result(9).unwrap();
    let l = log.clone();
    lp.call_soon(move || push(&l, "soon-before")).unwrap();
    let l = log.clone();
    p.add_done_callback(move |p: &Promise<u32>| push(&l, format!("late={:?}", p.result())));
    assert!(
        entries(&log).is_empty(),
        "adding to a done promise does not run the callback inline"
    );
    let l = log.clone();
    lp.call_soon(move || push(&l, "soon-after")).unwrap();
    run_one(&lp);
    assert_eq!(entries(&log), ["soon-before", "late=Ok(9)", "soon-after"]);
}

#[test]
fn promise_remove_done_callback_returns_how_many_it_removed() {
    let lp = EventLoop::new().unwrap();
    let log = log();
    let p: Promise<u32> = lp.create_future();
    let l = log.clone();
    let keep = p.add_done_callback(move |_| push(&l, "kept"));
    let l = log.clone();
    let gone = p.add_done_callback(move |_| push(&l, "removed"));
    assert_ne!(keep, gone, "each callback has its own id");
    assert_eq!(p.remove_done_callback(gone), 1, "the first remove finds it");
    assert_eq!(p.remove_done_callback(gone), 0, "the second finds nothing");
    p.set_result(1).unwrap();
    run_one(&lp);
    assert_eq!(entries(&log), ["kept"], "a removed callback never runs");
    assert_eq!(
        p.remove_done_callback(keep),
        0,
        "a callback already scheduled (and run) can no longer be removed"
    );
}

// ---------------------------------------------------------------------------------------------
// Awaiting.

#[test]
fn promise_await_gives_the_result() {
    let lp = EventLoop::new().unwrap();
    let p: Promise<String> = lp.create_future();
    let p2 = p.clone();
    lp.call_later(Duration::from_millis(2), move || {
        p2.set_result("hello".to_string()).unwrap()
    })
    .unwrap();
    let got = run_bounded(&lp, async move { p.await });
    assert_eq!(got, Ok("hello".to_string()));
}

#[test]
fn promise_await_of_a_finished_promise_does_not_suspend() {
    let lp = EventLoop::new().unwrap();
    let p: Promise<u8> = lp.create_future();
    p.set_result(4).unwrap();
    let h = lp.handle();
    let (value, iterations) = run_bounded(&lp, async move {
        let before = h.stats().iterations;
        let v = (&p).await;
        (v, h.stats().iterations - before)
    });
    assert_eq!(value, Ok(4));
    assert_eq!(iterations, 0, "awaiting a finished promise completes in the same step");
}

#[test]
fn promise_await_of_a_cancelled_promise_gives_cancelled() {
    let lp = EventLoop::new().unwrap();
    let p: Promise<u32> = lp.create_future();
    let p2 = p.clone();
    lp.call_later(Duration::from_millis(2), move || assert!(p2.cancel()))
        .unwrap();
    let id = p.id();
    let got = run_bounded(&lp, async move { p.wait().await });
    assert_eq!(
        got,
        Err(PromiseError::Cancelled {
            promise: format!("Promise#{id}")
        })
    );
}

#[test]
fn promise_many_awaiters_all_get_the_value() {
    let lp = EventLoop::new().unwrap();
    let p: Promise<Rc<str>> = lp.create_future();
    let tasks: Vec<Task<Result<Rc<str>, PromiseError>>> = (0..3)
        .map(|_| {
            let p = p.clone();
            lp.create_task(async move { p.await }).unwrap()
        })
        .collect();
    // Every awaiter is waiting before the value arrives.
    run_one(&lp);
    assert!(tasks.iter().all(|t| !t.done()));
    p.set_result(Rc::from("shared")).unwrap();
    let results = run_bounded(&lp, async move {
        let mut out = Vec::new();
        for t in tasks {
            out.push(t.await);
        }
        out
    });
    assert_eq!(results.len(), 3);
    for r in results {
        assert_eq!(&*r.unwrap().unwrap(), "shared");
    }
}

#[test]
fn promise_set_result_while_the_loop_is_stopped_wakes_the_awaiter_on_the_next_run() {
    let lp = EventLoop::new().unwrap();
    let p: Promise<u32> = lp.create_future();
    let p2 = p.clone();
    let t = lp.create_task(async move { p2.await }).unwrap();
    run_one(&lp);
    assert!(!t.done(), "the task waits on the promise");
    p.set_result(11).unwrap(); // the loop is not running: the wake takes the remote path
    let got = run_bounded(&lp, t);
    assert_eq!(got.unwrap(), Ok(11));
}

#[test]
fn promise_awaiter_dropped_while_waiting_does_not_break_later_awaiters() {
    let lp = EventLoop::new().unwrap();
    let p: Promise<u32> = lp.create_future();
    let h = lp.handle();
    let log = log();
    let l = log.clone();
    let (results, first) = run_bounded(&lp, async move {
        // A registers first and stays; B registers second and is dropped by its timeout; C and D
        // register around B's drop. The slot B leaves behind must not hide anyone.
        let spawn_awaiter = |name: &'static str| {
            let p = p.clone();
            let l = l.clone();
            h.create_task(async move {
                let v = p.wait().await;
                push(&l, name);
                v
            })
            .unwrap()
        };
        let a = spawn_awaiter("a");
        yield_now().await;
        let pb = p.clone();
        let b = h
            .create_task(async move { timeout(Duration::from_millis(5), pb.wait()).await })
            .unwrap();
        yield_now().await;
        let c = spawn_awaiter("c");
        let b_result = b.await.unwrap();
        let d = spawn_awaiter("d");
        yield_now().await;
        // And one awaiter dropped while last in line.
        let pe = p.clone();
        let e = h
            .create_task(async move { timeout(Duration::from_millis(1), pe.wait()).await })
            .unwrap();
        let e_result = e.await.unwrap();
        sleep(Duration::from_millis(1)).await;
        p.set_result(99).unwrap();
        let mut out = Vec::new();
        for t in [a, c, d] {
            out.push(t.await.unwrap());
        }
        (out, (b_result.is_err(), e_result.is_err()))
    });
    assert_eq!(
        first,
        (true, true),
        "B and E timed out, dropping their awaiting futures"
    );
    assert_eq!(results, [Ok(99), Ok(99), Ok(99)]);
    let mut woke = entries(&log);
    woke.sort();
    assert_eq!(woke, ["a", "c", "d"]);
}

#[test]
fn promise_awaiter_dropped_then_promise_cancelled_still_wakes_the_others() {
    let lp = EventLoop::new().unwrap();
    let p: Promise<u32> = lp.create_future();
    let h = lp.handle();
    let results = run_bounded(&lp, async move {
        let pa = p.clone();
        let a = h.create_task(async move { pa.await }).unwrap();
        let pb = p.clone();
        let b = h
            .create_task(async move { timeout(Duration::from_millis(2), pb.wait()).await })
            .unwrap();
        let pc = p.clone();
        let c = h.create_task(async move { pc.await }).unwrap();
        let b_timed_out = b.await.unwrap().is_err();
        assert!(p.cancel());
        (b_timed_out, a.await.unwrap(), c.await.unwrap())
    });
    assert!(results.0);
    assert!(results.1.unwrap_err().is_cancelled());
    assert!(results.2.unwrap_err().is_cancelled());
}
