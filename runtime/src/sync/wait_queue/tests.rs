use super::*;
use crate::sync::ops::WaitOp;
use crate::sync::pool::Pool;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::task::Wake;

struct Count(AtomicUsize);

impl Wake for Count {
    fn wake(self: Arc<Self>) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

fn counting_waker() -> (Arc<Count>, Waker) {
    let c = Arc::new(Count(AtomicUsize::new(0)));
    (c.clone(), Waker::from(c))
}

/// Grants go to waiting entries front to back; granted entries have left the line; keys find
/// entries, and a key whose entry is gone misses.
#[test]
fn queue_grants_in_fifo_order_and_keys_find_entries() {
    let (count, w) = counting_waker();
    let mut q = WaitQueue::<u32>::new();
    let keys: Vec<Key> = (0..4).map(|_| q.push(&w, 1)).collect();
    let mut wakers = WakeList::default();
    assert!(q.grant_first(11, &mut wakers).is_ok());
    assert_eq!(q.waiting(), 3);
    let mut next = 20;
    let granted = q.grant_while(
        || {
            next += 1;
            (next <= 22).then_some(next)
        },
        &mut wakers,
    );
    assert_eq!(granted, 2);
    wakers.wake();
    assert_eq!(count.0.load(Ordering::SeqCst), 3);
    assert!(matches!(q.poll_entry(keys[0], &w), Polled::Granted(11)));
    assert!(matches!(q.poll_entry(keys[2], &w), Polled::Granted(22)));
    assert!(matches!(q.poll_entry(keys[1], &w), Polled::Granted(21)));
    assert!(matches!(q.poll_entry(keys[3], &w), Polled::Waiting(None)));
    assert!(matches!(q.poll_entry(keys[0], &w), Polled::Missing));
    assert!(matches!(q.remove(keys[3]), Some(Slot::Waiting(_))));
    assert!(q.is_empty());
    assert_eq!(q.waiting(), 0);
    assert_eq!(
        q.grant_first(5, &mut WakeList::default()),
        Err(5),
        "nobody waits: the value comes back"
    );
}

/// An entry leaves the line from anywhere; the others keep their order, and a granted entry
/// still counts as queued (`is_empty`) until its owner takes the grant.
#[test]
fn queue_removes_from_the_middle_and_keeps_the_order() {
    let (_, w) = counting_waker();
    let mut q = WaitQueue::<char>::new();
    let a = q.push(&w, 1);
    let b = q.push(&w, 1);
    let c = q.push(&w, 1);
    assert!(matches!(q.remove(b), Some(Slot::Waiting(_))));
    assert_eq!(q.waiting(), 2);
    let mut wakers = WakeList::default();
    assert!(q.grant_first('a', &mut wakers).is_ok());
    let d = q.push(&w, 1);
    q.grant_while(|| Some('x'), &mut wakers);
    assert_eq!(q.waiting(), 0);
    assert!(!q.is_empty(), "granted entries wait for their owners");
    assert!(matches!(q.remove(a), Some(Slot::Granted('a'))));
    assert!(matches!(q.remove(c), Some(Slot::Granted('x'))));
    assert!(matches!(q.remove(d), Some(Slot::Granted('x'))));
    assert!(q.remove(b).is_none(), "a stale key misses");
    assert!(q.is_empty());
}

/// A waiter polled by another task keeps the newer waker and hands back the one it replaced.
#[test]
fn queue_keeps_the_waker_of_the_last_poll() {
    let (first, w1) = counting_waker();
    let (second, w2) = counting_waker();
    let mut q = WaitQueue::<()>::new();
    let k = q.push(&w1, 1);
    assert!(matches!(q.poll_entry(k, &w1), Polled::Waiting(None)));
    assert!(matches!(q.poll_entry(k, &w2), Polled::Waiting(Some(_))));
    let mut wakers = WakeList::default();
    assert!(q.grant_first((), &mut wakers).is_ok());
    wakers.wake();
    assert_eq!(first.0.load(Ordering::SeqCst), 0);
    assert_eq!(second.0.load(Ordering::SeqCst), 1);
}

/// A shutdown can change grants that wait to be taken, and only those.
#[test]
fn for_each_grant_visits_granted_entries_only() {
    let (_, w) = counting_waker();
    let mut q = WaitQueue::<u32>::new();
    let keys: Vec<Key> = (0..3).map(|_| q.push(&w, 1)).collect();
    q.grant_while(|| Some(1), &mut WakeList::default());
    let k = q.push(&w, 1);
    let mut seen = 0;
    q.for_each_grant(|g| {
        seen += 1;
        *g = 7;
    });
    assert_eq!(seen, 3);
    assert!(matches!(q.poll_entry(keys[1], &w), Polled::Granted(7)));
    assert!(matches!(q.poll_entry(k, &w), Polled::Waiting(None)));
}

/// A granted permit whose waiter is dropped goes to the next waiter.
#[test]
fn dropped_granted_waiter_passes_its_permit_on() {
    let (count, w) = counting_waker();
    let mut cx = Context::from_waker(&w);
    let pool = Pool::new(0);
    let mut a = pool.waiter();
    let mut b = pool.waiter();
    let what = WaitOp::SemaphoreAcquire;
    assert!(a.poll_wait(&mut cx, what).is_pending());
    assert!(b.poll_wait(&mut cx, what).is_pending());
    pool.put_back(1);
    assert_eq!(count.0.load(Ordering::SeqCst), 1);
    drop(a);
    assert_eq!(count.0.load(Ordering::SeqCst), 2);
    assert!(b.poll_wait(&mut cx, what).is_ready());
    assert_eq!(pool.available(), 0);
    drop(b);
    pool.put_back(1);
    assert_eq!(pool.available(), 1);
}
