//! tokio 1.54's tests/task_join_set.rs against `evloop::task::JoinSet`: 12 of its 25 tests run.
//! Not ported: try_join_next_with_id (tokio's unstable task ids) and the 12 of `mod spawn_local`,
//! which test tokio's `LocalSet`/`LocalRuntime` and `spawn_local` outside them: every evloop loop
//! runs `!Send` futures, so `JoinSet::spawn` is tokio's `spawn_local` and there is no `LocalSet`.
//! Beyond imports: `spawn_on(fut, handle)` is `insert(TaskBuilder::new().spawn_on(..)?)`;
//! futures' `now_or_never` and `ArcWake` are the harness's; tokio's static `Semaphore` is an `Rc`.

use evloop::event_loop::EventLoop;
use evloop::sync::oneshot;
use evloop::task::{JoinSet, TaskBuilder};
use std::time::Duration;

use crate::task;

fn rt() -> EventLoop {
    EventLoop::new().unwrap()
}

#[evloop::test(start_paused = true)]
async fn test_with_sleep() {
    let mut set = JoinSet::new();

    for i in 0..10 {
        set.spawn(async move { i });
        assert_eq!(set.len(), 1 + i);
    }
    set.detach_all();
    assert_eq!(set.len(), 0);

    assert!(set.join_next().await.is_none());

    for i in 0..10 {
        set.spawn(async move {
            evloop::time::sleep(Duration::from_secs(i as u64)).await;
            i
        });
        assert_eq!(set.len(), 1 + i);
    }

    let mut seen = [false; 10];
    while let Some(res) = set.join_next().await.transpose().unwrap() {
        seen[res] = true;
    }

    for was_seen in &seen {
        assert!(was_seen);
    }
    assert!(set.join_next().await.is_none());

    // Do it again.
    for i in 0..10 {
        set.spawn(async move {
            evloop::time::sleep(Duration::from_secs(i as u64)).await;
            i
        });
    }

    let mut seen = [false; 10];
    while let Some(res) = set.join_next().await.transpose().unwrap() {
        seen[res] = true;
    }

    for was_seen in &seen {
        assert!(was_seen);
    }
    assert!(set.join_next().await.is_none());
}

#[evloop::test]
async fn test_abort_on_drop() {
    let mut set = JoinSet::new();

    let mut recvs = Vec::new();

    for _ in 0..16 {
        let (send, recv) = oneshot::channel::<()>();
        recvs.push(recv);

        set.spawn(async {
            // This task will never complete on its own.
            std::future::pending::<()>().await;
            drop(send);
        });
    }

    drop(set);

    for recv in recvs {
        // The task is aborted soon and we will receive an error.
        assert!(recv.await.is_err());
    }
}

#[evloop::test]
async fn alternating() {
    let mut set = JoinSet::new();

    assert_eq!(set.len(), 0);
    set.spawn(async {});
    assert_eq!(set.len(), 1);
    set.spawn(async {});
    assert_eq!(set.len(), 2);

    for _ in 0..16 {
        let () = set.join_next().await.unwrap().unwrap();
        assert_eq!(set.len(), 1);
        set.spawn(async {});
        assert_eq!(set.len(), 2);
    }
}

#[evloop::test(start_paused = true)]
async fn abort_tasks() {
    let mut set = JoinSet::new();
    let mut num_canceled = 0;
    let mut num_completed = 0;
    for i in 0..16 {
        let abort = set.spawn(async move {
            evloop::time::sleep(Duration::from_secs(i as u64)).await;
            i
        });

        if i % 2 != 0 {
            // abort odd-numbered tasks.
            abort.abort();
        }
    }
    loop {
        match set.join_next().await {
            Some(Ok(res)) => {
                num_completed += 1;
                assert_eq!(res % 2, 0);
            }
            Some(Err(e)) => {
                assert!(e.is_cancelled());
                num_canceled += 1;
            }
            None => break,
        }
    }

    assert_eq!(num_canceled, 8);
    assert_eq!(num_completed, 8);
}

// tokio's `set.spawn_on(fut, rt.handle())` is `set.insert(TaskBuilder::new().spawn_on(..))`:
// evloop's spawn on a given loop says when that loop is closed, where tokio's cannot.
#[test]
fn runtime_gone() {
    let mut set = JoinSet::new();
    {
        let rt = rt();
        set.insert(TaskBuilder::new().spawn_on(&rt.handle(), async { 1 }).unwrap());
        drop(rt);
    }

    // `run_until_complete` takes a `'static` future: the set moves in.
    assert!(
        rt().run_until_complete(async move { set.join_next().await })
            .unwrap()
            .unwrap()
            .unwrap_err()
            .is_cancelled()
    );
}

#[evloop::test]
async fn join_all() {
    let mut set: JoinSet<i32> = JoinSet::new();

    for _ in 0..5 {
        set.spawn(async { 1 });
    }
    let res: Vec<i32> = set.join_all().await;

    assert_eq!(res.len(), 5);
    for itm in res.into_iter() {
        assert_eq!(itm, 1)
    }
}

#[cfg(panic = "unwind")]
#[evloop::test(start_paused = true)]
async fn task_panics() {
    let mut set: JoinSet<()> = JoinSet::new();

    let (tx, mut rx) = oneshot::channel();
    assert_eq!(set.len(), 0);

    set.spawn(async move {
        evloop::time::sleep(Duration::from_secs(2)).await;
        tx.send(()).unwrap();
    });
    assert_eq!(set.len(), 1);

    set.spawn(async {
        evloop::time::sleep(Duration::from_secs(1)).await;
        panic!();
    });
    assert_eq!(set.len(), 2);

    let panic = evloop::spawn(set.join_all()).await.unwrap_err();
    assert!(rx.try_recv().is_err());
    assert!(panic.is_panic());
}

#[evloop::test(start_paused = true)]
async fn abort_all() {
    let mut set: JoinSet<()> = JoinSet::new();

    for _ in 0..5 {
        set.spawn(std::future::pending());
    }
    for _ in 0..5 {
        set.spawn(async {
            evloop::time::sleep(Duration::from_secs(1)).await;
        });
    }

    // The join set will now have 5 pending tasks and 5 ready tasks.
    evloop::time::sleep(Duration::from_secs(2)).await;

    set.abort_all();
    assert_eq!(set.len(), 10);

    let mut count = 0;
    while let Some(res) = set.join_next().await {
        if let Err(err) = res {
            assert!(err.is_cancelled());
        }
        count += 1;
    }
    assert_eq!(count, 10);
    assert_eq!(set.len(), 0);
}

// This ensures that `join_next` works correctly when the coop budget is
// exhausted.
#[evloop::test(flavor = "current_thread")]
async fn join_set_coop() {
    // Large enough to trigger coop.
    const TASK_NUM: u32 = 1000;

    // tokio's `static SEM: Semaphore = Semaphore::const_new(0)` is an `Rc` here: evloop's
    // primitives belong to their thread.
    let sem = std::rc::Rc::new(evloop::sync::Semaphore::new(0));

    let mut set = JoinSet::new();

    for _ in 0..TASK_NUM {
        let sem = sem.clone();
        set.spawn(async move {
            sem.add_permits(1);
        });
    }

    // Wait for all tasks to complete.
    //
    // Since this is a `current_thread` runtime, there's no race condition
    // between the last permit being added and the task completing.
    let _ = sem.acquire_many(TASK_NUM).await.unwrap();

    let mut count = 0;
    let mut coop_count = 0;
    loop {
        match task::now_or_never(set.join_next()) {
            Some(Some(Ok(()))) => {}
            Some(Some(Err(err))) => panic!("failed: {err}"),
            None => {
                coop_count += 1;
                evloop::task::yield_now().await;
                continue;
            }
            Some(None) => break,
        }

        count += 1;
    }
    assert!(coop_count >= 1);
    assert_eq!(count, TASK_NUM);
}

#[evloop::test(flavor = "current_thread")]
async fn try_join_next() {
    const TASK_NUM: u32 = 1000;

    let (send, recv) = evloop::sync::watch::channel(());

    let mut set = JoinSet::new();

    for _ in 0..TASK_NUM {
        let mut recv = recv.clone();
        set.spawn(async move { recv.changed().await.unwrap() });
    }
    drop(recv);

    assert!(set.try_join_next().is_none());

    send.send_replace(());
    send.closed().await;

    let mut count = 0;
    loop {
        match set.try_join_next() {
            Some(Ok(())) => {
                count += 1;
            }
            Some(Err(err)) => panic!("failed: {err}"),
            None => {
                break;
            }
        }
    }

    assert_eq!(count, TASK_NUM);
}

// Not ported: try_join_next_with_id (tokio_unstable; evloop's tasks have numbers, not tokio's
// `task::Id`, and no `*_with_id` calls).

#[evloop::test]
async fn extend() {
    let mut set: JoinSet<_> = (0..5).map(|i| async move { i }).collect();

    set.extend((5..10).map(|i| async move { i }));

    let mut seen = [false; 10];
    while let Some(res) = set.join_next().await {
        let idx = res.unwrap();
        seen[idx] = true;
    }

    for s in &seen {
        assert!(s);
    }
}

#[test]
fn replace_parent_waker_drops_outside_lock() {
    use std::task::{Context, Waker};

    // std's `Wake` needs `Send + Sync`, which an `EventLoop` is not: the harness's `LocalWake`.
    struct DriveOnDrop(EventLoop);

    impl task::LocalWake for DriveOnDrop {
        fn wake_by_ref(&self) {}
    }

    impl Drop for DriveOnDrop {
        fn drop(&mut self) {
            let _ = self.0.run_until_complete(evloop::task::yield_now());
        }
    }

    let rt = rt();
    let mut set = JoinSet::new();
    set.insert(TaskBuilder::new().spawn_on(&rt.handle(), async { 42 }).unwrap());

    let waker = task::local_waker(std::rc::Rc::new(DriveOnDrop(rt)));
    assert!(set.poll_join_next(&mut Context::from_waker(&waker)).is_pending());
    drop(waker);

    assert!(set.poll_join_next(&mut Context::from_waker(Waker::noop())).is_pending());
    assert_eq!(set.try_join_next().unwrap().unwrap(), 42);
}
