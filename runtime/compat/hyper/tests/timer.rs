//! `EvloopTimer` as hyper uses it: sleeps end at their deadline on the loop's clock (virtual
//! too), a reset moves the deadline, a dropped sleep's timer is cancelled (the loop goes idle,
//! not awake for it), and a sleep sent to and polled on another thread still ends.

use std::time::{Duration, Instant};

use hyper::rt::Timer;

use evloop_hyper::EvloopTimer;

fn assert_send_sync<T: Send + Sync + 'static>() {}

#[test]
fn the_timer_and_its_sleep_are_send_and_sync() {
    assert_send_sync::<EvloopTimer>();
    assert_send_sync::<evloop_hyper::EvloopSleep>();
    assert_send_sync::<evloop_hyper::EvloopExecutor>();
}

#[evloop::test(virtual_clock)]
async fn an_hour_passes_at_once_on_the_virtual_clock() {
    let timer = EvloopTimer::new();
    let start = timer.now();
    let wall = Instant::now();
    timer.sleep(Duration::from_secs(3600)).await;
    assert!(timer.now() - start >= Duration::from_secs(3600));
    assert!(wall.elapsed() < Duration::from_secs(5));
}

#[evloop::test]
async fn reset_moves_the_deadline_and_a_dropped_sleep_is_cancelled() {
    let timer = EvloopTimer::new();
    let mut long = timer.sleep(Duration::from_secs(3600));
    // Armed by one poll, then reset to 1 ms: the hour-long timer is cancelled.
    assert!(
        evloop::time::timeout(Duration::from_millis(1), long.as_mut())
            .await
            .is_err()
    );
    timer.reset(&mut long, timer.now() + Duration::from_millis(1));
    long.await;
    let mut dropped = timer.sleep(Duration::from_secs(3600));
    assert!(
        evloop::time::timeout(Duration::from_millis(1), dropped.as_mut())
            .await
            .is_err()
    );
    drop(dropped);
    let lp = evloop::event_loop::get_running_loop().unwrap();
    evloop::task::yield_now().await;
    assert_eq!(lp.stats().timers, 0, "the cancelled timers left the heap");
}

#[test]
fn a_sleep_polled_on_another_thread_ends() {
    let lp = evloop::event_loop::EventLoop::new().unwrap();
    let timer = EvloopTimer::for_loop(&lp.handle());
    let sleep = timer.sleep(Duration::from_millis(5));
    let remote = lp.remote();
    let waiter = std::thread::spawn(move || {
        // A tiny block_on: park until the loop's timer wakes this thread.
        let thread = std::thread::current();
        let waker = std::task::Waker::from(std::sync::Arc::new(Unpark(thread)));
        let mut cx = std::task::Context::from_waker(&waker);
        let mut sleep = sleep;
        while sleep.as_mut().poll(&mut cx).is_pending() {
            std::thread::park_timeout(Duration::from_secs(5));
        }
        remote.stop().unwrap();
    });
    lp.run_forever().unwrap();
    waiter.join().unwrap();
}

struct Unpark(std::thread::Thread);

impl std::task::Wake for Unpark {
    fn wake(self: std::sync::Arc<Self>) {
        self.0.unpark();
    }
}
