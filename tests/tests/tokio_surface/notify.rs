//! `Notify` with tokio's semantics, and `Semaphore::acquire_owned`.

use std::cell::RefCell;
use std::pin::pin;
use std::rc::Rc;
use std::time::Duration;

use evloop::event_loop::Builder;
use evloop::sync::{Notify, Semaphore};
use evloop::time::timeout;

fn virtual_run<T: 'static>(fut: impl Future<Output = T> + 'static) -> T {
    Builder::new().virtual_clock(true).run(fut).unwrap()
}

#[test]
fn notify_one_wakes_waiters_first_come_first_served() {
    let order = virtual_run(async {
        let notify = Rc::new(Notify::new());
        let log = Rc::new(RefCell::new(Vec::new()));
        let tasks: Vec<_> = (0..3)
            .map(|i| {
                let (n, log) = (notify.clone(), log.clone());
                evloop::spawn(async move {
                    n.notified().await;
                    log.borrow_mut().push(i);
                })
            })
            .collect();
        evloop::task::yield_now().await;
        for _ in 0..3 {
            notify.notify_one();
            evloop::task::yield_now().await;
        }
        for t in tasks {
            t.await.unwrap();
        }
        log.take()
    });
    assert_eq!(order, [0, 1, 2]);
}

#[test]
fn notify_one_with_nobody_waiting_stores_one_permit() {
    virtual_run(async {
        let notify = Notify::new();
        notify.notify_one();
        notify.notify_one();
        notify.notified().await;
        assert!(timeout(Duration::from_secs(1), notify.notified()).await.is_err());
    });
}

#[test]
fn notify_waiters_wakes_all_stores_nothing_and_reaches_futures_created_before() {
    virtual_run(async {
        let notify = Rc::new(Notify::new());
        let tasks: Vec<_> = (0..3)
            .map(|_| {
                let n = notify.clone();
                evloop::spawn(async move { n.notified().await })
            })
            .collect();
        let created_before = notify.notified();
        evloop::task::yield_now().await;
        notify.notify_waiters();
        for t in tasks {
            t.await.unwrap();
        }
        created_before.await;
        assert!(
            timeout(Duration::from_secs(1), notify.notified()).await.is_err(),
            "no permit stored"
        );
    });
}

#[test]
fn a_notified_dropped_after_notify_one_chose_it_passes_the_notification_on() {
    virtual_run(async {
        let notify = Rc::new(Notify::new());
        let mut first = Box::pin(notify.notified());
        assert!(!first.as_mut().enable());
        let n = notify.clone();
        let second = evloop::spawn(async move { n.notified().await });
        evloop::task::yield_now().await;
        notify.notify_one(); // chooses `first`
        drop(first); // never saw it: `second` gets it
        timeout(Duration::from_secs(1), second).await.unwrap().unwrap();
    });
}

#[test]
fn enable_queues_a_waiter_before_it_is_awaited() {
    virtual_run(async {
        let notify = Notify::new();
        let mut wait = pin!(notify.notified());
        wait.as_mut().enable();
        notify.notify_one();
        let other = notify.notified();
        wait.await; // the enabled one took it
        assert!(timeout(Duration::from_secs(1), other).await.is_err());
    });
}

#[test]
fn owned_permits_move_into_tasks_and_limit_concurrency() {
    let peak = virtual_run(async {
        let sem = Rc::new(Semaphore::new(2));
        let running = Rc::new(std::cell::Cell::new(0));
        let peak = Rc::new(std::cell::Cell::new(0));
        let mut tasks = Vec::new();
        for _ in 0..6 {
            let permit = sem.clone().acquire_owned().await.unwrap();
            let (running, peak) = (running.clone(), peak.clone());
            tasks.push(evloop::spawn(async move {
                let _permit = permit;
                running.set(running.get() + 1);
                peak.set(peak.get().max(running.get()));
                evloop::time::sleep(Duration::from_secs(1)).await;
                running.set(running.get() - 1);
            }));
        }
        for t in tasks {
            t.await.unwrap();
        }
        assert_eq!(sem.available_permits(), 2);
        let forgotten = sem.clone().acquire_owned().await.unwrap();
        forgotten.forget();
        assert_eq!(sem.available_permits(), 1);
        assert_eq!(Rc::strong_count(&sem), 1, "a forgotten permit does not leak the Rc");
        peak.get()
    });
    assert_eq!(peak, 2);
}

#[test]
fn a_cancelled_acquire_owned_passes_its_permit_on() {
    virtual_run(async {
        let sem = Rc::new(Semaphore::new(1));
        let held = sem.clone().try_acquire_owned().unwrap();
        let waiting = evloop::spawn(sem.clone().acquire_owned());
        let s = sem.clone();
        let next = evloop::spawn(async move { s.acquire_owned().await.map(drop) });
        evloop::task::yield_now().await;
        drop(held); // granted to `waiting` ...
        waiting.cancel(); // ... which is cancelled before it runs
        timeout(Duration::from_secs(1), next).await.unwrap().unwrap().unwrap();
        assert_eq!(sem.available_permits(), 1);
    });
}

#[test]
fn a_failed_try_acquire_owned_gives_nothing_back() {
    let sem = Rc::new(Semaphore::new(1));
    let held = sem.clone().try_acquire_owned().unwrap();
    assert!(sem.clone().try_acquire_owned().is_err());
    assert_eq!(sem.available_permits(), 0);
    drop(held);
    assert_eq!(sem.available_permits(), 1);
}
