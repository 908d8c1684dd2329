//! One wrong-loop error: every wait from a task of another loop reports the loop layer's
//! `WrongLoopError`, whose message is written once. The errors of the layers above wrap it
//! (`PromiseError::WrongLoop`, `TaskError::WrongLoop`, `SyncError::WrongLoop`,
//! `oneshot::RecvError::WrongLoop`), and a wait whose output has no room for an error (the
//! queue's) fails its task with the same message as a panic. Each test pins the exact text.

use std::cell::Cell;
use std::future::Future;
use std::rc::Rc;
use std::time::Duration;

use evloop::sync::oneshot;
use evloop::{
    event_loop::{EventLoop, LoopHandle},
    sync::{Condition, Lock, SyncError, queue::Queue},
    task::{PromiseError, RunError, TaskError, yield_now},
};

/// The one message, for `op` on `object` bound to loop `a` and awaited from a task of loop `b`.
fn message(op: &str, object: &str, a: &LoopHandle, b: &LoopHandle) -> String {
    format!(
        "{op}: {object} belongs to event loop #{} and cannot be awaited from a task of event loop #{} \
         (only its own loop can complete it, and that loop is not running)",
        a.id(),
        b.id()
    )
}

/// Loop A runs the tasks `bind` creates until `bound()` holds (the subject is bound to A), then
/// loop B runs `wait`: both loops and B's result.
fn from_another_loop<T: 'static>(
    bind: impl FnOnce(&LoopHandle),
    bound: impl Fn() -> bool + 'static,
    wait: impl Future<Output = T> + 'static,
) -> (EventLoop, EventLoop, Result<T, RunError>) {
    let (a, b) = (EventLoop::new().unwrap(), EventLoop::new().unwrap());
    bind(&a);
    a.run_until_complete(async move {
        let started = std::time::Instant::now();
        while !bound() {
            assert!(
                started.elapsed() < Duration::from_secs(5),
                "the subject was never bound"
            );
            yield_now().await;
        }
    })
    .unwrap();
    let out = b.run_until_complete(wait);
    (a, b, out)
}

#[test]
fn a_promise_of_another_loop_gives_the_one_message() {
    let (a, b) = (EventLoop::new().unwrap(), EventLoop::new().unwrap());
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
    let (a, b) = (EventLoop::new().unwrap(), EventLoop::new().unwrap());
    let t = a.create_task(std::future::pending::<()>()).unwrap();
    let name = t.name();
    match b.run_until_complete(t).unwrap() {
        Err(TaskError::WrongLoop(e)) => assert_eq!(e.to_string(), message("await", &name, &a, &b)),
        other => panic!("expected TaskError::WrongLoop, got {other:?}"),
    }
}

#[test]
fn a_condition_bound_to_another_loop_gives_the_one_message_in_sync_error() {
    let cond = Rc::new(Condition::new());
    let (mine, seen, theirs) = (cond.clone(), cond.clone(), cond);
    let (a, b, out) = from_another_loop(
        move |a| {
            a.create_task(async move {
                let g = mine.acquire().await.unwrap();
                let _ = mine.wait(g).await;
            })
            .unwrap()
            .detach()
        },
        move || seen.waiters() == 1,
        async move { theirs.wait(theirs.acquire().await.unwrap()).await.map(drop) },
    );
    match out.unwrap() {
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
    let (_tx, rx) = oneshot::channel::<u8>();
    let rx = Rc::new(Cell::new(Some(rx)));
    let (mine, theirs) = (rx.clone(), rx);
    let given_up = Rc::new(Cell::new(false));
    let g = given_up.clone();
    let (a, b, out) = from_another_loop(
        // A first wait on loop A, given up after 1 ms, binds the receiver to A.
        move |a| {
            a.create_task(async move {
                let mut rx = mine.take().unwrap();
                let _ = evloop::time::timeout(Duration::from_millis(1), &mut rx).await;
                mine.set(Some(rx));
                g.set(true);
            })
            .unwrap()
            .detach()
        },
        move || given_up.get(),
        async move { theirs.take().unwrap().await },
    );
    match out.unwrap() {
        Err(oneshot::RecvError::WrongLoop(e)) => {
            let expected = message("oneshot::Receiver", "the oneshot channel", &a, &b);
            assert_eq!(e.to_string(), expected);
            assert_eq!(oneshot::RecvError::WrongLoop(e).to_string(), expected);
        }
        other => panic!("expected RecvError::WrongLoop, got {other:?}"),
    }
}

#[test]
fn a_lock_bound_to_another_loop_gives_the_one_message_in_sync_error() {
    let lock = Rc::new(Lock::new());
    let (holder, waiter, theirs) = (lock.clone(), lock.clone(), lock);
    let waited = Rc::new(Cell::new(false));
    let w = waited.clone();
    // Loop A holds the lock in one task and waits for it in another: the lock is bound to A.
    let (a, b, out) = from_another_loop(
        move |a| {
            a.create_task(async move {
                let _g = holder.acquire().await.unwrap();
                std::future::pending::<()>().await;
            })
            .unwrap()
            .detach();
            a.create_task(async move {
                w.set(true);
                drop(waiter.acquire().await.unwrap());
            })
            .unwrap()
            .detach();
        },
        move || waited.get(),
        async move { theirs.acquire().await.map(drop) },
    );
    match out.unwrap() {
        Err(e @ SyncError::WrongLoop(_)) => {
            assert_eq!(e.to_string(), message("Lock.acquire()", "the Lock", &a, &b));
        }
        other => panic!("expected SyncError::WrongLoop, got {other:?}"),
    }
}

#[test]
fn a_wait_with_no_room_for_an_error_fails_its_task_with_the_one_message() {
    let q: Queue<u8> = Queue::new(1);
    let (mine, theirs) = (q.clone(), q);
    let waited = Rc::new(Cell::new(false));
    let w = waited.clone();
    // A getter of loop A waits on the empty queue: the queue is bound to A.
    let (a, b, out) = from_another_loop(
        move |a| {
            a.create_task(async move {
                w.set(true);
                let _ = mine.get().await;
            })
            .unwrap()
            .detach();
        },
        move || waited.get(),
        async move {
            let _ = theirs.get().await;
        },
    );
    match out {
        Err(RunError::Task(TaskError::Panicked { panic, .. })) => {
            assert_eq!(panic.message(), message("Queue::get", "the Queue", &a, &b));
        }
        other => panic!("expected the waiting task to fail, got {other:?}"),
    }
}
