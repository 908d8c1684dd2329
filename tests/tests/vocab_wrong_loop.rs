//! One wrong-loop error: every wait from a task of another loop reports the loop layer's
//! `WrongLoopError`, whose message is written once. The errors of the layers above wrap it
//! (`PromiseError::WrongLoop`, `TaskError::WrongLoop`, `SyncError::WrongLoop`,
//! `oneshot::RecvError::WrongLoop`), and a wait whose output has no room for an error fails its
//! task with the same message as a panic. Each test pins the exact text.

use std::rc::Rc;
use std::time::Duration;

use evloop::channel::oneshot;
use evloop::{Condition, EventLoop, Lock, LoopHandle, PromiseError, RunError, SyncError, TaskError, yield_now};

/// The one message, for `op` on `object` bound to loop `a` and awaited from a task of loop `b`.
fn message(op: &str, object: &str, a: &LoopHandle, b: &LoopHandle) -> String {
    format!(
        "{op}: {object} belongs to event loop #{} and cannot be awaited from a task of event loop #{} \
         (only its own loop can complete it, and that loop is not running)",
        a.id(),
        b.id()
    )
}

fn two_loops() -> (EventLoop, EventLoop) {
    (EventLoop::new().unwrap(), EventLoop::new().unwrap())
}

/// Runs loop `lp` until a task of it waits where `cond` can see it.
fn run_until(lp: &LoopHandle, cond: impl Fn() -> bool + 'static) {
    lp.run_until_complete(async move {
        for _ in 0..100 {
            if cond() {
                return;
            }
            yield_now().await;
        }
        panic!("the condition never held");
    })
    .unwrap();
}

#[test]
fn a_promise_of_another_loop_gives_the_one_message() {
    let (a, b) = two_loops();
    let p = a.create_future::<u8>();
    match b.run_until_complete(p.wait()).unwrap() {
        Err(PromiseError::WrongLoop(e)) => {
            assert_eq!(e.to_string(), message("await", &format!("Promise#{}", p.id()), &a, &b));
            assert_eq!(PromiseError::WrongLoop(e.clone()).to_string(), e.to_string());
        }
        other => panic!("expected PromiseError::WrongLoop, got {other:?}"),
    }
}

#[test]
fn a_task_of_another_loop_gives_the_one_message() {
    let (a, b) = two_loops();
    let t = a.create_task(std::future::pending::<()>()).unwrap();
    let name = t.name();
    match b.run_until_complete(t).unwrap() {
        Err(TaskError::WrongLoop(e)) => assert_eq!(e.to_string(), message("await", &name, &a, &b)),
        other => panic!("expected TaskError::WrongLoop, got {other:?}"),
    }
}

#[test]
fn a_condition_bound_to_another_loop_gives_the_one_message_in_sync_error() {
    let (a, b) = two_loops();
    let cond = Rc::new(Condition::new());
    let c = cond.clone();
    let _waiter = a
        .create_task(async move {
            let g = c.acquire().await;
            let _ = c.wait(g).await;
        })
        .unwrap();
    let c = cond.clone();
    run_until(&a, move || c.waiters() == 1);
    let c = cond.clone();
    let out = b
        .run_until_complete(async move {
            let g = c.acquire().await;
            c.wait(g).await.map(drop)
        })
        .unwrap();
    match out {
        Err(SyncError::WrongLoop(e)) => {
            let expected = message("Condition.wait()", "the Condition", &a, &b);
            assert_eq!(e.to_string(), expected);
            assert_eq!(SyncError::WrongLoop(e).to_string(), expected);
        }
        other => panic!("expected SyncError::WrongLoop, got {other:?}"),
    }
}

#[test]
fn a_oneshot_receiver_bound_to_another_loop_gives_the_one_message_in_recv_error() {
    let (a, b) = two_loops();
    let (_tx, rx) = oneshot::channel::<u8>();
    let rx = Rc::new(std::cell::Cell::new(Some(rx)));
    let r = rx.clone();
    // A first wait on loop A binds the receiver to A.
    a.run_until_complete(async move {
        let mut rx = r.take().unwrap();
        let _ = evloop::timeout(Duration::from_millis(1), &mut rx).await;
        r.set(Some(rx));
    })
    .unwrap();
    let r = rx.clone();
    match b.run_until_complete(async move { r.take().unwrap().await }).unwrap() {
        Err(oneshot::RecvError::WrongLoop(e)) => {
            let expected = message("oneshot::Receiver", "the oneshot channel", &a, &b);
            assert_eq!(e.to_string(), expected);
            assert_eq!(oneshot::RecvError::WrongLoop(e).to_string(), expected);
        }
        other => panic!("expected RecvError::WrongLoop, got {other:?}"),
    }
}

#[test]
fn a_wait_with_no_room_for_an_error_fails_its_task_with_the_one_message() {
    let (a, b) = two_loops();
    let lock = Rc::new(Lock::new());
    let l = lock.clone();
    // Loop A holds the lock in one task and waits for it in another: the lock is bound to A.
    let _holder = a
        .create_task(async move {
            let _g = l.acquire().await;
            std::future::pending::<()>().await;
        })
        .unwrap();
    let l = lock.clone();
    let _waiter = a.create_task(async move { drop(l.acquire().await) }).unwrap();
    let l = lock.clone();
    run_until(&a, move || l.locked());
    a.run_until_complete(yield_now()).unwrap();
    let l = lock.clone();
    match b.run_until_complete(async move { drop(l.acquire().await) }) {
        Err(RunError::Task(TaskError::Panicked { panic, .. })) => {
            assert_eq!(panic.message(), message("Lock.acquire()", "the Lock", &a, &b));
        }
        other => panic!("expected the waiting task to fail, got {other:?}"),
    }
}
