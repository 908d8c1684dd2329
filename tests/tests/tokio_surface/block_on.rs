//! `block_on`: a future that borrows runs to completion on a new loop (or a runner's), with
//! `run`'s teardown, and a panic unwinds into the caller.

use std::time::Duration;

use evloop::event_loop::{Builder, EventLoop, LoopErrorKind};
use evloop::task::{RunError, Runner, block_on};

#[test]
fn a_borrowing_future_runs_to_completion_and_sees_the_loop() {
    let mut log = Vec::new();
    let n = block_on(async {
        log.push("start");
        evloop::time::sleep(Duration::from_millis(2)).await;
        let t = evloop::spawn(async { 40 });
        log.push("spawned");
        t.await.unwrap() + 2
    })
    .unwrap();
    assert_eq!((n, log), (42, vec!["start", "spawned"]));
}

#[test]
fn leftover_tasks_are_cancelled_and_the_loop_closed_as_after_run() {
    let dropped = std::rc::Rc::new(std::cell::Cell::new(false));
    struct OnDrop(std::rc::Rc<std::cell::Cell<bool>>);
    impl Drop for OnDrop {
        fn drop(&mut self) {
            self.0.set(true);
        }
    }
    let d = OnDrop(dropped.clone());
    block_on(async move {
        evloop::spawn(async move {
            let _d = d;
            std::future::pending::<()>().await;
        });
        evloop::task::yield_now().await;
    })
    .unwrap();
    assert!(dropped.get());
}

#[test]
fn a_panic_unwinds_into_the_caller_and_the_loop_stays_usable() {
    let lp = EventLoop::new().unwrap();
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        lp.block_on(async { panic!("in block_on") })
    }));
    assert!(r.is_err());
    assert_eq!(lp.block_on(async { 5 }).unwrap(), 5);
    assert_eq!(lp.run_until_complete(async { 6 }).unwrap(), 6);
}

#[test]
fn inside_a_running_loop_it_is_an_error_not_a_deadlock() {
    let err = evloop::run(async { block_on(async { 1 }).unwrap_err() }).unwrap();
    match err {
        RunError::Loop(e) => assert_eq!(e.kind(), LoopErrorKind::AnotherLoopRunning),
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_virtual_hour_passes_at_once_and_a_runner_keeps_its_loop() {
    let wall = std::time::Instant::now();
    Builder::new()
        .virtual_clock(true)
        .block_on(evloop::time::sleep(Duration::from_secs(3600)))
        .unwrap();
    assert!(wall.elapsed() < Duration::from_secs(5));
    let runner = Runner::new().unwrap();
    let mut state = 0;
    runner.block_on(async { state += 1 }).unwrap();
    runner.block_on(async { state += 1 }).unwrap();
    assert_eq!(state, 2);
}

#[test]
fn a_wake_from_another_thread_ends_the_wait() {
    let (tx, mut rx) = evloop::sync::threadsafe::channel::<u32>();
    let sender = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(20));
        tx.send(9).unwrap();
    });
    assert_eq!(block_on(rx.recv()).unwrap(), Some(9));
    sender.join().unwrap();
}
