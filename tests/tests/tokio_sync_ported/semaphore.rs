//! tokio 1.54's tests/sync_semaphore.rs against `evloop::sync::Semaphore`: 23 of its 35 tests
//! run (25 are ported: the two `acquire_many_*exceeds_maxpermits` keep tokio's
//! `target_pointer_width = "32"` gate, so they compile and run on 32-bit targets only).
//! Beyond imports: `Arc` is `Rc` where the test shares the semaphore (it belongs to one thread);
//! `#[tokio::test]` is `#[evloop::test]`; the wakers that hold a permit or add one when woken are
//! `task::local_waker`s (futures' `ArcWake` wants `Send`), the counting one std's `Wake`.
//!
//! Not ported, the ten `blocking_acquire*` tests: tokio's `blocking_acquire` blocks the thread
//! until a permit comes from another thread. evloop's semaphore belongs to one thread (`!Send`),
//! so a thread blocked on it could only be woken by itself: a `blocking_acquire` could only
//! succeed at once or hang, and evloop does not offer one (the porting guide's single-threaded
//! primitives).
//!
//! They needed `try_acquire` to return a `Result` (`TryAcquireError`), `close`/`is_closed`,
//! `forget_permits`, `acquire_many`/`try_acquire_many`, permits that count (`merge`, `split`,
//! `num_permits`, `semaphore`), `MAX_PERMITS` with tokio's panics, and a close that grants
//! every waiter an error and wakes them after the state is released.

use evloop::sync::Semaphore;

use std::rc::Rc as Arc;

#[test]
fn no_permits() {
    // this should not panic
    Semaphore::new(0);
}

#[test]
fn try_acquire() {
    let sem = Semaphore::new(1);
    {
        let p1 = sem.try_acquire();
        assert!(p1.is_ok());
        let p2 = sem.try_acquire();
        assert!(p2.is_err());
    }
    let p3 = sem.try_acquire();
    assert!(p3.is_ok());
}

#[evloop::test]
async fn acquire() {
    let sem = Arc::new(Semaphore::new(1));
    let p1 = sem.try_acquire().unwrap();
    let sem_clone = sem.clone();
    let j = evloop::spawn(async move {
        let _p2 = sem_clone.acquire().await;
    });
    drop(p1);
    j.await.unwrap();
}

#[evloop::test]
async fn add_permits() {
    let sem = Arc::new(Semaphore::new(0));
    let sem_clone = sem.clone();
    let j = evloop::spawn(async move {
        let _p2 = sem_clone.acquire().await;
    });
    sem.add_permits(1);
    j.await.unwrap();
}

#[test]
fn add_permits_open() {
    for size in 0..4 {
        for add in 0..4 {
            let sem = Arc::new(Semaphore::new(size));
            sem.add_permits(add);
            assert_eq!(sem.available_permits(), size + add);
            assert!(!sem.is_closed());
        }
    }
}

#[test]
fn add_permits_closed() {
    for size in 0..4 {
        for add in 0..4 {
            let sem = Arc::new(Semaphore::new(size));
            sem.close();
            sem.add_permits(add);
            assert_eq!(sem.available_permits(), size + add);
            assert!(sem.is_closed());
        }
    }
}

#[test]
fn close_drops_wakers_outside_lock() {
    use crate::task::{LocalWake, local_waker};
    use evloop::sync::OwnedSemaphorePermit;
    use std::future::Future;
    use std::task::Context;

    struct ReleaseOnDrop {
        _permit: OwnedSemaphorePermit,
    }

    impl LocalWake for ReleaseOnDrop {
        fn wake_by_ref(&self) {}
    }

    let sem = Arc::new(Semaphore::new(1));

    let mut fut = Box::pin(async {
        let _ = sem.acquire().await;
    });

    let waker = local_waker(Arc::new(ReleaseOnDrop {
        _permit: sem.clone().try_acquire_owned().unwrap(),
    }));
    let mut cx = Context::from_waker(&waker);
    assert!(fut.as_mut().poll(&mut cx).is_pending());
    drop(waker);

    // Waking the waiter drops the last reference to the waker, which releases
    // a permit. This shouldn't deadlock.
    sem.close();
    assert_eq!(sem.available_permits(), 1);
}

#[test]
fn close_wakes_waiters_outside_lock() {
    use crate::task::{LocalWake, local_waker};
    use std::future::Future;
    use std::task::Context;

    struct ReleaseOnWake(Arc<Semaphore>);

    impl LocalWake for ReleaseOnWake {
        fn wake_by_ref(&self) {
            self.0.add_permits(1);
        }
    }

    let sem = Arc::new(Semaphore::new(0));

    let mut fut = Box::pin(async {
        let _ = sem.acquire().await;
    });

    let waker = local_waker(Arc::new(ReleaseOnWake(sem.clone())));
    let mut cx = Context::from_waker(&waker);
    assert!(fut.as_mut().poll(&mut cx).is_pending());

    // The waker releases a permit when it is woken. This shouldn't deadlock.
    sem.close();
    assert_eq!(sem.available_permits(), 1);
}

#[test]
fn close_wakes_all_waiters() {
    use std::future::Future;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
    use std::task::{Context, Poll, Wake};

    // More waiters than are woken in one batch.
    const WAITERS: usize = 100;

    struct CountWakes(AtomicUsize);

    impl Wake for CountWakes {
        fn wake(self: Arc<Self>) {
            self.wake_by_ref();
        }
        fn wake_by_ref(self: &Arc<Self>) {
            self.0.fetch_add(1, SeqCst);
        }
    }

    let sem = Semaphore::new(0);
    let wakes = Arc::new(CountWakes(AtomicUsize::new(0)));
    let waker = std::task::Waker::from(wakes.clone());
    let mut cx = Context::from_waker(&waker);

    let mut acquires: Vec<_> = (0..WAITERS).map(|_| Box::pin(sem.acquire())).collect();
    for acquire in &mut acquires {
        assert!(acquire.as_mut().poll(&mut cx).is_pending());
    }

    sem.close();
    assert_eq!(wakes.0.load(SeqCst), WAITERS);

    for acquire in &mut acquires {
        assert!(matches!(acquire.as_mut().poll(&mut cx), Poll::Ready(Err(_))));
    }
}

#[test]
fn forget() {
    let sem = Arc::new(Semaphore::new(1));
    {
        let p = sem.try_acquire().unwrap();
        assert_eq!(sem.available_permits(), 0);
        p.forget();
        assert_eq!(sem.available_permits(), 0);
    }
    assert_eq!(sem.available_permits(), 0);
    assert!(sem.try_acquire().is_err());
}

#[test]
fn forget_open() {
    for size in 0..4 {
        for sub in 0..4 {
            let sem = Arc::new(Semaphore::new(size));
            let actual_sub = sem.forget_permits(sub);
            let expected = size.saturating_sub(sub);
            assert_eq!(sem.available_permits(), expected, "case: {size}-{sub}");
            assert_eq!(actual_sub, size - expected);
            assert!(!sem.is_closed());
        }
    }
}

#[test]
fn forget_closed() {
    for size in 0..4 {
        for sub in 0..4 {
            let sem = Arc::new(Semaphore::new(size));
            sem.close();
            let actual_sub = sem.forget_permits(sub);
            let expected = size.saturating_sub(sub);
            assert_eq!(sem.available_permits(), expected, "case: {size}-{sub}");
            assert_eq!(actual_sub, size - expected);
            assert!(sem.is_closed());
        }
    }
}

#[test]
fn merge() {
    let sem = Arc::new(Semaphore::new(3));
    {
        let mut p1 = sem.try_acquire().unwrap();
        assert_eq!(sem.available_permits(), 2);
        let p2 = sem.try_acquire_many(2).unwrap();
        assert_eq!(sem.available_permits(), 0);
        p1.merge(p2);
        assert_eq!(sem.available_permits(), 0);
    }
    assert_eq!(sem.available_permits(), 3);
}

#[test]
#[should_panic]
fn merge_unrelated_permits() {
    let sem1 = Arc::new(Semaphore::new(3));
    let sem2 = Arc::new(Semaphore::new(3));
    let mut p1 = sem1.try_acquire().unwrap();
    let p2 = sem2.try_acquire().unwrap();
    p1.merge(p2);
}

#[test]
fn split() {
    let sem = Semaphore::new(5);
    let mut p1 = sem.try_acquire_many(3).unwrap();
    assert_eq!(sem.available_permits(), 2);
    assert_eq!(p1.num_permits(), 3);
    let mut p2 = p1.split(1).unwrap();
    assert_eq!(sem.available_permits(), 2);
    assert_eq!(p1.num_permits(), 2);
    assert_eq!(p2.num_permits(), 1);
    let p3 = p1.split(0).unwrap();
    assert_eq!(p3.num_permits(), 0);
    drop(p1);
    assert_eq!(sem.available_permits(), 4);
    let p4 = p2.split(1).unwrap();
    assert_eq!(p2.num_permits(), 0);
    assert_eq!(p4.num_permits(), 1);
    assert!(p2.split(1).is_none());
    drop(p2);
    assert_eq!(sem.available_permits(), 4);
    drop(p3);
    assert_eq!(sem.available_permits(), 4);
    drop(p4);
    assert_eq!(sem.available_permits(), 5);
}

#[test]
fn permit_semaphore() {
    let sem = Semaphore::new(1);
    let permit = sem.try_acquire().unwrap();

    assert!(std::ptr::eq(permit.semaphore(), &sem));
}

#[evloop::test]
async fn stress_test() {
    let sem = Arc::new(Semaphore::new(5));
    let mut join_handles = Vec::new();
    for _ in 0..1000 {
        let sem_clone = sem.clone();
        join_handles.push(evloop::spawn(async move {
            let _p = sem_clone.acquire().await;
        }));
    }
    for j in join_handles {
        j.await.unwrap();
    }
    // there should be exactly 5 semaphores available now
    let _p1 = sem.try_acquire().unwrap();
    let _p2 = sem.try_acquire().unwrap();
    let _p3 = sem.try_acquire().unwrap();
    let _p4 = sem.try_acquire().unwrap();
    let _p5 = sem.try_acquire().unwrap();
    assert!(sem.try_acquire().is_err());
}

#[test]
fn add_max_amount_permits() {
    let s = evloop::sync::Semaphore::new(0);
    s.add_permits(evloop::sync::Semaphore::MAX_PERMITS);
    assert_eq!(s.available_permits(), evloop::sync::Semaphore::MAX_PERMITS);
}

#[test]
#[should_panic]
fn add_more_than_max_amount_permits1() {
    let s = evloop::sync::Semaphore::new(1);
    s.add_permits(evloop::sync::Semaphore::MAX_PERMITS);
}

#[test]
#[should_panic]
fn add_more_than_max_amount_permits2() {
    let s = Semaphore::new(Semaphore::MAX_PERMITS - 1);
    s.add_permits(1);
    s.add_permits(1);
}

#[test]
#[should_panic]
fn panic_when_exceeds_maxpermits() {
    let _ = Semaphore::new(Semaphore::MAX_PERMITS + 1);
}

#[cfg(target_pointer_width = "32")]
#[test]
#[should_panic(expected = "a semaphore may not have more than MAX_PERMITS permits")]
fn acquire_many_exceeds_maxpermits() {
    let s = Semaphore::new(0);
    let _ = crate::task::spawn(s.acquire_many((Semaphore::MAX_PERMITS as u32) + 1)).poll();
}

#[cfg(target_pointer_width = "32")]
#[test]
#[should_panic(expected = "a semaphore may not have more than MAX_PERMITS permits")]
fn acquire_many_top_bit_exceeds_maxpermits() {
    let s = Semaphore::new(0);
    let _ = crate::task::spawn(s.acquire_many(1_u32 << 31)).poll();
}

#[test]
fn no_panic_at_maxpermits() {
    let _ = Semaphore::new(Semaphore::MAX_PERMITS);
    let s = Semaphore::new(Semaphore::MAX_PERMITS - 1);
    s.add_permits(1);
}

#[test]
#[cfg(target_pointer_width = "64")]
fn merge_many_permits() {
    let sem = Arc::new(Semaphore::new(6_000_000_000));
    let mut a = sem.try_acquire_many(3_000_000_000).unwrap();
    let b = sem.try_acquire_many(3_000_000_000).unwrap();
    assert_eq!(a.num_permits(), 3_000_000_000);
    assert_eq!(b.num_permits(), 3_000_000_000);
    assert_eq!(sem.available_permits(), 0);

    a.merge(b);
    assert_eq!(a.num_permits(), 6_000_000_000);
    assert_eq!(sem.available_permits(), 0);

    drop(a);
    assert_eq!(sem.available_permits(), 6_000_000_000);
}
