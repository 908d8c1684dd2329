//! tokio 1.54's tests/time_sleep.rs against `evloop::time::{sleep, sleep_until, Sleep}`: 23 of its 24 tests run
//! (the one left asserts tokio's panic when a sleep is made outside a
//! runtime; see there). Beyond imports: futures' `noop_waker_ref` is std's `Waker::noop`, its
//! `ArcWake` the harness's `LocalWake`. They needed `Sleep::reset` and `Sleep::is_elapsed`.

use std::future::Future;
use std::task::{Context, Waker};

use evloop::time::{self, Instant};
use std::time::Duration;

use crate::task;

fn noop_waker_ref() -> &'static Waker {
    Waker::noop()
}

#[evloop::test(start_paused = true)]
async fn immediate_sleep() {
    let now = Instant::now();

    let sleep = time::sleep_until(now);

    evloop::pin!(sleep);

    assert!(!sleep.is_elapsed());

    sleep.as_mut().await;
    assert_elapsed!(now, ms(0));
    assert!(sleep.is_elapsed());
}

#[evloop::test]
async fn is_elapsed() {
    time::pause();

    let sleep = time::sleep(Duration::from_millis(10));

    evloop::pin!(sleep);

    assert!(!sleep.is_elapsed());

    assert!(poll!(sleep.as_mut()).is_pending());

    assert!(!sleep.is_elapsed());

    sleep.as_mut().await;

    assert!(sleep.is_elapsed());
}

#[evloop::test]
async fn delayed_sleep_level_0() {
    time::pause();

    for &i in &[1, 10, 60] {
        let now = Instant::now();
        let dur = ms(i);

        time::sleep_until(now + dur).await;

        assert_elapsed!(now, dur);
    }
}

#[evloop::test]
async fn sub_ms_delayed_sleep() {
    time::pause();

    for _ in 0..5 {
        let now = Instant::now();
        let deadline = now + ms(1) + Duration::new(0, 1);

        time::sleep_until(deadline).await;

        assert_elapsed!(now, ms(1));
    }
}

#[evloop::test]
async fn delayed_sleep_wrapping_level_0() {
    time::pause();

    time::sleep(ms(5)).await;

    let now = Instant::now();
    time::sleep_until(now + ms(60)).await;

    assert_elapsed!(now, ms(60));
}

#[evloop::test]
async fn reset_future_sleep_before_fire() {
    time::pause();

    let now = Instant::now();

    let mut sleep = task::spawn(Box::pin(time::sleep_until(now + ms(100))));
    assert_pending!(sleep.poll());

    let mut sleep = sleep.into_inner();

    sleep.as_mut().reset(Instant::now() + ms(200));
    sleep.await;

    assert_elapsed!(now, ms(200));
}

#[evloop::test]
async fn reset_past_sleep_before_turn() {
    time::pause();

    let now = Instant::now();

    let mut sleep = task::spawn(Box::pin(time::sleep_until(now + ms(100))));
    assert_pending!(sleep.poll());

    let mut sleep = sleep.into_inner();

    sleep.as_mut().reset(now + ms(80));
    sleep.await;

    assert_elapsed!(now, ms(80));
}

#[evloop::test]
async fn reset_past_sleep_before_fire() {
    time::pause();

    let now = Instant::now();

    let mut sleep = task::spawn(Box::pin(time::sleep_until(now + ms(100))));
    assert_pending!(sleep.poll());

    let mut sleep = sleep.into_inner();

    time::sleep(ms(10)).await;

    sleep.as_mut().reset(now + ms(80));
    sleep.await;

    assert_elapsed!(now, ms(80));
}

#[evloop::test]
async fn reset_future_sleep_after_fire() {
    time::pause();

    let now = Instant::now();
    let mut sleep = Box::pin(time::sleep_until(now + ms(100)));

    sleep.as_mut().await;
    assert_elapsed!(now, ms(100));

    sleep.as_mut().reset(now + ms(110));
    sleep.await;
    assert_elapsed!(now, ms(110));
}

#[evloop::test]
async fn reset_sleep_to_past() {
    time::pause();

    let now = Instant::now();

    let mut sleep = task::spawn(Box::pin(time::sleep_until(now + ms(100))));
    assert_pending!(sleep.poll());

    time::sleep(ms(50)).await;

    assert!(!sleep.is_woken());

    sleep.as_mut().reset(now + ms(40));

    // TODO: is this required?
    //assert!(sleep.is_woken());

    assert_ready!(sleep.poll());
}

// Not ported: creating_sleep_outside_of_context asserts that tokio panics when a sleep is
// created outside a runtime. evloop's sleep made outside a loop resolves its deadline against
// the loop that first polls it (documented on `Sleep`), and polling it outside a loop panics.

#[evloop::test]
async fn greater_than_max() {
    const YR_5: u64 = 5 * 365 * 24 * 60 * 60 * 1000;

    time::pause();
    time::sleep_until(Instant::now() + ms(YR_5)).await;
}

#[evloop::test]
async fn short_sleeps() {
    for _ in 0..1000 {
        evloop::time::sleep(std::time::Duration::from_millis(0)).await;
    }
}

#[evloop::test]
async fn multi_long_sleeps() {
    evloop::time::pause();

    for _ in 0..5u32 {
        evloop::time::sleep(Duration::from_secs(
            // about a year
            365 * 24 * 3600,
        ))
        .await;
    }

    let deadline = evloop::time::Instant::now()
        + Duration::from_secs(
            // about 10 years
            10 * 365 * 24 * 3600,
        );

    evloop::time::sleep_until(deadline).await;

    assert!(evloop::time::Instant::now() >= deadline);
}

#[evloop::test]
async fn long_sleeps() {
    evloop::time::pause();

    let deadline = evloop::time::Instant::now()
        + Duration::from_secs(
            // about 10 years
            10 * 365 * 24 * 3600,
        );

    evloop::time::sleep_until(deadline).await;

    assert!(evloop::time::Instant::now() >= deadline);
    assert!(evloop::time::Instant::now() <= deadline + Duration::from_millis(1));
}

#[evloop::test]
async fn reset_after_firing() {
    let timer = evloop::time::sleep(std::time::Duration::from_millis(1));
    evloop::pin!(timer);

    let deadline = timer.deadline();

    timer.as_mut().await;
    assert_ready!(timer.as_mut().poll(&mut Context::from_waker(noop_waker_ref())));
    timer
        .as_mut()
        .reset(evloop::time::Instant::now() + std::time::Duration::from_secs(600));

    assert_ne!(deadline, timer.deadline());

    assert_pending!(timer.as_mut().poll(&mut Context::from_waker(noop_waker_ref())));
    assert_pending!(timer.as_mut().poll(&mut Context::from_waker(noop_waker_ref())));
}

#[evloop::test]
async fn exactly_max() {
    time::pause();
    time::sleep(Duration::MAX).await;
}

#[evloop::test]
async fn issue_5183() {
    time::pause();

    let big = std::time::Duration::from_secs(u64::MAX / 10);
    // This is a workaround since awaiting sleep(big) will never finish.
    #[rustfmt::skip]
    evloop::select! {
	biased;
        _ = evloop::time::sleep(big) => {}
        _ = evloop::time::sleep(std::time::Duration::from_nanos(1)) => {}
    }
}

#[evloop::test]
async fn no_out_of_bounds_close_to_max() {
    time::pause();
    time::sleep(Duration::MAX - Duration::from_millis(1)).await;
}

#[evloop::test(start_paused = true)]
async fn long_wait_sleep_does_not_break_other_timers() {
    evloop::spawn(time::sleep(ms(10 << 36)));

    time::advance(ms((1 << 30) - 1)).await;

    let start = Instant::now();
    time::sleep(ms(10)).await;
    assert_elapsed!(start, ms(10));
}

#[evloop::test(start_paused = true)]
async fn long_wait_sleep_does_not_corrupt_wheel() {
    evloop::spawn(time::sleep(ms(10 << 36)));

    time::advance(ms((1 << 30) - 1)).await;

    let mut first = Box::pin(time::sleep(ms(10)));
    assert_pending!(poll!(first.as_mut()));
    let mut second = Box::pin(time::sleep(ms(20)));
    assert_pending!(poll!(second.as_mut()));

    time::advance(ms(30)).await;

    drop(first);

    time::advance(ms(1 << 31)).await;

    drop(second);
}

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

#[evloop::test]
async fn drop_after_reschedule_at_new_scheduled_time() {
    evloop::time::pause();

    let start = evloop::time::Instant::now();

    let mut a = Box::pin(evloop::time::sleep(Duration::from_millis(5)));
    let mut b = Box::pin(evloop::time::sleep(Duration::from_millis(5)));
    let mut c = Box::pin(evloop::time::sleep(Duration::from_millis(10)));

    let _ = poll!(&mut a);
    let _ = poll!(&mut b);
    let _ = poll!(&mut c);

    b.as_mut().reset(start + Duration::from_millis(10));
    a.await;

    drop(b);
}

#[evloop::test]
// `Arc` kept as tokio wrote it, though a `Sleep` makes it neither `Send` nor `Sync` here.
#[allow(clippy::arc_with_non_send_sync)]
async fn drop_from_wake() {
    use std::future::Future;
    use std::pin::Pin;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::{Arc, Mutex};
    use std::task::Context;

    let panicked = Arc::new(AtomicBool::new(false));
    let list: Arc<Mutex<Vec<Pin<Box<evloop::time::Sleep>>>>> = Arc::new(Mutex::new(Vec::new()));

    // futures' `ArcWake` becomes the harness's `LocalWake`: the list holds `Sleep`s, which
    // belong to this thread, so std's `Wake` (`Send + Sync`) cannot hold it.
    let arc_wake = std::rc::Rc::new(DropWaker(panicked.clone(), list.clone()));
    let arc_wake = task::local_waker(arc_wake);

    evloop::time::pause();

    {
        let mut lock = list.lock().unwrap();

        for _ in 0..100 {
            let mut timer = Box::pin(evloop::time::sleep(Duration::from_millis(10)));

            let _ = timer.as_mut().poll(&mut Context::from_waker(&arc_wake));

            lock.push(timer);
        }
    }

    evloop::time::sleep(Duration::from_millis(11)).await;

    assert!(!panicked.load(Ordering::SeqCst), "panicked when dropping timers");

    #[derive(Clone)]
    struct DropWaker(Arc<AtomicBool>, Arc<Mutex<Vec<Pin<Box<evloop::time::Sleep>>>>>);

    impl task::LocalWake for DropWaker {
        fn wake_by_ref(&self) {
            let arc_self = self;
            let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                *arc_self.1.lock().expect("panic in lock") = Vec::new()
            }));

            if result.is_err() {
                arc_self.0.store(true, Ordering::SeqCst);
            }
        }
    }
}

#[evloop::test]
async fn drop_from_waker_drop() {
    use evloop::time::Sleep;
    use std::cell::RefCell;
    use std::pin::Pin;
    use std::task::Context;

    // std's `Wake` needs `Send + Sync`, which a `Sleep` is not: the harness's `LocalWake`.
    struct TimerOwner {
        secondary: RefCell<Option<Pin<Box<Sleep>>>>,
    }

    impl task::LocalWake for TimerOwner {
        fn wake_by_ref(&self) {}
    }

    impl Drop for TimerOwner {
        fn drop(&mut self) {
            drop(self.secondary.borrow_mut().take());
        }
    }

    let mut secondary = Box::pin(evloop::time::sleep(Duration::from_secs(3600)));
    assert_pending!(secondary.as_mut().poll(&mut Context::from_waker(noop_waker_ref())));

    let waker = task::local_waker(std::rc::Rc::new(TimerOwner {
        secondary: RefCell::new(Some(secondary)),
    }));
    let mut primary = Box::pin(evloop::time::sleep(Duration::from_secs(3600)));
    assert_pending!(primary.as_mut().poll(&mut Context::from_waker(&waker)));

    drop(waker);
    drop(primary);
}
