//! tokio 1.54's tests/sync_semaphore_owned.rs against `evloop::sync::Semaphore`'s owned permits:
//! all 13 of its tests are ported, 11 run here (the two `acquire_many_owned_*exceeds_maxpermits`
//! keep tokio's `target_pointer_width = "32"` gate: they run on 32-bit targets only). Beyond
//! imports: `Arc` is `Rc` (the semaphore belongs to one thread; `acquire_owned` takes
//! `self: Rc<Semaphore>`); `#[tokio::test]` is `#[evloop::test]`, `tokio::sync::oneshot` is
//! evloop's. They needed the owned `_many` forms, `Result`s from `try_acquire_owned`, and owned
//! permits that count (`merge`, `split`, `num_permits`).

use evloop::sync::Semaphore;

use std::rc::Rc as Arc;

#[test]
fn try_acquire() {
    let sem = Arc::new(Semaphore::new(1));
    {
        let p1 = sem.clone().try_acquire_owned();
        assert!(p1.is_ok());
        let p2 = sem.clone().try_acquire_owned();
        assert!(p2.is_err());
    }
    let p3 = sem.try_acquire_owned();
    assert!(p3.is_ok());
}

#[test]
fn try_acquire_many() {
    let sem = Arc::new(Semaphore::new(42));
    {
        let p1 = sem.clone().try_acquire_many_owned(42);
        assert!(p1.is_ok());
        let p2 = sem.clone().try_acquire_owned();
        assert!(p2.is_err());
    }
    let p3 = sem.clone().try_acquire_many_owned(32);
    assert!(p3.is_ok());
    let p4 = sem.clone().try_acquire_many_owned(10);
    assert!(p4.is_ok());
    assert!(sem.try_acquire_owned().is_err());
}

#[evloop::test]
async fn acquire() {
    let sem = Arc::new(Semaphore::new(1));
    let p1 = sem.clone().try_acquire_owned().unwrap();
    let sem_clone = sem.clone();
    let j = evloop::spawn(async move {
        let _p2 = sem_clone.acquire_owned().await;
    });
    drop(p1);
    j.await.unwrap();
}

#[evloop::test]
async fn acquire_many() {
    let semaphore = Arc::new(Semaphore::new(42));
    let permit32 = semaphore.clone().try_acquire_many_owned(32).unwrap();
    let (sender, receiver) = evloop::sync::oneshot::channel();
    let join_handle = evloop::spawn(async move {
        let _permit10 = semaphore.clone().acquire_many_owned(10).await.unwrap();
        sender.send(()).unwrap();
        let _permit32 = semaphore.acquire_many_owned(32).await.unwrap();
    });
    receiver.await.unwrap();
    drop(permit32);
    join_handle.await.unwrap();
}

#[evloop::test]
async fn add_permits() {
    let sem = Arc::new(Semaphore::new(0));
    let sem_clone = sem.clone();
    let j = evloop::spawn(async move {
        let _p2 = sem_clone.acquire_owned().await;
    });
    sem.add_permits(1);
    j.await.unwrap();
}

#[test]
fn forget() {
    let sem = Arc::new(Semaphore::new(1));
    {
        let p = sem.clone().try_acquire_owned().unwrap();
        assert_eq!(sem.available_permits(), 0);
        p.forget();
        assert_eq!(sem.available_permits(), 0);
    }
    assert_eq!(sem.available_permits(), 0);
    assert!(sem.try_acquire_owned().is_err());
}

#[test]
fn merge() {
    let sem = Arc::new(Semaphore::new(3));
    {
        let mut p1 = sem.clone().try_acquire_owned().unwrap();
        assert_eq!(sem.available_permits(), 2);
        let p2 = sem.clone().try_acquire_many_owned(2).unwrap();
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
    let mut p1 = sem1.try_acquire_owned().unwrap();
    let p2 = sem2.try_acquire_owned().unwrap();
    p1.merge(p2)
}

#[cfg(target_pointer_width = "32")]
#[test]
#[should_panic(expected = "a semaphore may not have more than MAX_PERMITS permits")]
fn acquire_many_owned_exceeds_maxpermits() {
    let s = Arc::new(Semaphore::new(0));
    let _ = crate::task::spawn(s.acquire_many_owned((Semaphore::MAX_PERMITS as u32) + 1)).poll();
}

#[cfg(target_pointer_width = "32")]
#[test]
#[should_panic(expected = "a semaphore may not have more than MAX_PERMITS permits")]
fn acquire_many_owned_top_bit_exceeds_maxpermits() {
    let s = Arc::new(Semaphore::new(0));
    let _ = crate::task::spawn(s.acquire_many_owned(1_u32 << 31)).poll();
}

#[test]
fn split() {
    let sem = Arc::new(Semaphore::new(5));
    let mut p1 = sem.clone().try_acquire_many_owned(3).unwrap();
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

#[evloop::test]
async fn stress_test() {
    let sem = Arc::new(Semaphore::new(5));
    let mut join_handles = Vec::new();
    for _ in 0..1000 {
        let sem_clone = sem.clone();
        join_handles.push(evloop::spawn(async move {
            let _p = sem_clone.acquire_owned().await;
        }));
    }
    for j in join_handles {
        j.await.unwrap();
    }
    // there should be exactly 5 semaphores available now
    let _p1 = sem.clone().try_acquire_owned().unwrap();
    let _p2 = sem.clone().try_acquire_owned().unwrap();
    let _p3 = sem.clone().try_acquire_owned().unwrap();
    let _p4 = sem.clone().try_acquire_owned().unwrap();
    let _p5 = sem.clone().try_acquire_owned().unwrap();
    assert!(sem.try_acquire_owned().is_err());
}

#[test]
#[cfg(target_pointer_width = "64")]
fn merge_many_permits_owned() {
    let sem = Arc::new(Semaphore::new(6_000_000_000));
    let mut a = sem.clone().try_acquire_many_owned(3_000_000_000).unwrap();
    let b = sem.clone().try_acquire_many_owned(3_000_000_000).unwrap();
    assert_eq!(a.num_permits(), 3_000_000_000);
    assert_eq!(b.num_permits(), 3_000_000_000);
    assert_eq!(sem.available_permits(), 0);

    a.merge(b);
    assert_eq!(a.num_permits(), 6_000_000_000);
    assert_eq!(sem.available_permits(), 0);

    drop(a);
    assert_eq!(sem.available_permits(), 6_000_000_000);
}
