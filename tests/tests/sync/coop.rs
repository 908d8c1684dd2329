//! A task that loops on a sync wait which is always ready at once still lets the rest of its
//! loop run: every wait of the sync layer spends the task's budget (128 ready operations per
//! step, as sockets do, tokio's coop), and with the budget spent a wait that would complete
//! yields once. Each test races such a loop against `yield_now` with `biased;` on the loop's
//! side: before the budget, the loop never returned and the test hung (the harness's hang bound
//! turns that into a failure).

use std::cell::Cell;
use std::rc::Rc;

use evloop::sync::queue::Queue;
use evloop::sync::{Event, Lock, Notify, Semaphore, mpsc};
use evloop::task::yield_now;
use evloop_tests::run_on_new_loop;

/// Runs `body` (an endless loop of ready waits) against a `yield_now` and returns how many
/// turns the loop made before `yield_now`'s task got its turn.
fn turns_before_a_yield_wins<F>(body: impl FnOnce(Rc<Cell<u32>>) -> F + 'static) -> u32
where
    F: Future<Output = ()> + 'static,
{
    run_on_new_loop(async move {
        let turns = Rc::new(Cell::new(0));
        let looping = body(turns.clone());
        evloop::select! {
            biased;
            () = looping => unreachable!("the loop never ends"),
            () = yield_now() => {}
        }
        turns.get()
    })
}

#[test]
fn an_mpsc_receiver_that_never_finds_the_channel_empty_yields() {
    let turns = turns_before_a_yield_wins(|turns| async move {
        let (tx, mut rx) = mpsc::channel(4);
        loop {
            tx.try_send(1u8).unwrap();
            rx.recv().await.unwrap();
            turns.set(turns.get() + 1);
        }
    });
    assert!(
        (1..=256).contains(&turns),
        "at most two steps of the budget (128) before yield_now (which needs two polls) wins: {turns}"
    );
}

#[test]
fn a_semaphore_with_free_permits_acquired_in_a_loop_yields() {
    let turns = turns_before_a_yield_wins(|turns| async move {
        let sem = Semaphore::new(1);
        loop {
            drop(sem.acquire().await.unwrap());
            turns.set(turns.get() + 1);
        }
    });
    assert!(
        (1..=256).contains(&turns),
        "at most two steps of the budget (128) before yield_now (which needs two polls) wins: {turns}"
    );
}

#[test]
fn a_free_lock_taken_in_a_loop_yields() {
    let turns = turns_before_a_yield_wins(|turns| async move {
        let lock = Lock::new();
        loop {
            drop(lock.acquire().await.unwrap());
            turns.set(turns.get() + 1);
        }
    });
    assert!(
        (1..=256).contains(&turns),
        "at most two steps of the budget (128) before yield_now (which needs two polls) wins: {turns}"
    );
}

#[test]
fn a_set_event_waited_in_a_loop_yields() {
    let turns = turns_before_a_yield_wins(|turns| async move {
        let ev = Event::new();
        ev.set();
        loop {
            ev.wait().await.unwrap();
            turns.set(turns.get() + 1);
        }
    });
    assert!(
        (1..=256).contains(&turns),
        "at most two steps of the budget (128) before yield_now (which needs two polls) wins: {turns}"
    );
}

#[test]
fn a_notify_refilled_before_every_wait_yields() {
    let turns = turns_before_a_yield_wins(|turns| async move {
        let notify = Notify::new();
        loop {
            notify.notify_one();
            notify.notified().await;
            turns.set(turns.get() + 1);
        }
    });
    assert!(
        (1..=256).contains(&turns),
        "at most two steps of the budget (128) before yield_now (which needs two polls) wins: {turns}"
    );
}

#[test]
fn a_queue_that_is_never_empty_yields() {
    let turns = turns_before_a_yield_wins(|turns| async move {
        let q = Queue::new(0);
        loop {
            q.put_nowait(1u8).unwrap();
            q.get().await.unwrap();
            turns.set(turns.get() + 1);
        }
    });
    assert!(
        (1..=256).contains(&turns),
        "at most two steps of the budget (128) before yield_now (which needs two polls) wins: {turns}"
    );
}
