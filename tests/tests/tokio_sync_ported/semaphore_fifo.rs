//! evloop's own tests of what tokio's semaphore files leave to its loom models: `acquire_many`
//! keeps its place in the line (a big request at the head holds back smaller later ones, tokio's
//! fairness), a big request that gives up lets the ones behind it through, and a close reaches
//! waiters that were already granted permits.

use evloop::sync::{Semaphore, SyncError, TryAcquireError};

use crate::task::{now_or_never, spawn};

#[test]
fn a_big_request_at_the_head_holds_back_smaller_ones() {
    let sem = Semaphore::new(2);
    let mut big = spawn(sem.acquire_many(3));
    let mut small = spawn(sem.acquire());
    assert_pending!(big.poll());
    assert_pending!(small.poll());
    // Two permits are free, but the head wants three: nobody barges past it.
    assert_eq!(sem.try_acquire().unwrap_err(), TryAcquireError::NoPermits);
    sem.add_permits(1);
    assert!(big.is_woken());
    assert!(!small.is_woken());
    let three = assert_ready_ok!(big.poll());
    assert_eq!(three.num_permits(), 3);
    assert_pending!(small.poll());
    drop(three);
    assert!(small.is_woken());
    assert_eq!(assert_ready_ok!(small.poll()).num_permits(), 1);
}

#[test]
fn a_big_request_that_gives_up_lets_the_next_through() {
    let sem = Semaphore::new(1);
    let mut big = spawn(sem.acquire_many(2));
    let mut small = spawn(sem.acquire());
    assert_pending!(big.poll());
    assert_pending!(small.poll());
    drop(big);
    assert!(small.is_woken());
    let _permit = assert_ready_ok!(small.poll());
}

#[test]
fn a_close_after_the_grant_gives_the_permits_back() {
    let sem = Semaphore::new(0);
    let mut waiter = spawn(sem.acquire_many(2));
    assert_pending!(waiter.poll());
    sem.add_permits(2); // granted, not yet taken
    assert_eq!(sem.available_permits(), 0);
    sem.close();
    assert_eq!(assert_ready_err!(waiter.poll()), SyncError::Closed);
    assert_eq!(sem.available_permits(), 2);
    let later = now_or_never(sem.acquire()).expect("a closed semaphore answers at once");
    assert_eq!(later.map(drop), Err(SyncError::Closed));
}

#[test]
fn acquiring_nothing_never_waits() {
    let sem = Semaphore::new(0);
    let mut waiter = spawn(sem.acquire());
    assert_pending!(waiter.poll());
    assert_eq!(sem.try_acquire_many(0).unwrap().num_permits(), 0);
    assert_eq!(assert_ready_ok!(spawn(sem.acquire_many(0)).poll()).num_permits(), 0);
}
