//! `evloop::time::Instant` follows the loop's clock, and `interval` keeps tokio's missed-tick
//! behaviours; all on the virtual clock, where an hour passes at once and without spinning.

use std::time::Duration;

use evloop::event_loop::{Builder, get_running_loop};
use evloop::time::{Instant, MissedTickBehavior, interval, interval_at, sleep, sleep_until, timeout, timeout_at};

fn virtual_run<T: 'static>(fut: impl Future<Output = T> + 'static) -> T {
    Builder::new().virtual_clock(true).run(fut).unwrap()
}

#[test]
fn a_one_hour_expiry_runs_at_once_and_does_not_spin() {
    let wall = std::time::Instant::now();
    let iterations = virtual_run(async {
        // A key-value store's expiry, stamped with the loop's Instant.
        let expires_at = Instant::now() + Duration::from_secs(3600);
        let mut checks = 0;
        while Instant::now() < expires_at {
            checks += 1;
            sleep_until(expires_at).await;
        }
        assert_eq!(checks, 1, "one sleep reaches the deadline");
        assert!(expires_at.elapsed() < Duration::from_millis(1));
        get_running_loop().unwrap().stats().iterations
    });
    assert!(iterations < 10, "the loop spun: {iterations} iterations");
    assert!(wall.elapsed() < Duration::from_secs(5), "it waited in real time");
}

#[test]
fn instant_now_is_the_loop_time_inside_and_the_monotonic_clock_outside() {
    let before = std::time::Instant::now();
    let outside = Instant::now();
    assert!(outside.into_std() >= before && outside.into_std() <= std::time::Instant::now());
    virtual_run(async {
        let lp = get_running_loop().unwrap();
        assert_eq!(Instant::now().into_std(), lp.time());
        sleep(Duration::from_secs(86_400)).await;
        assert_eq!(Instant::now().into_std(), lp.time());
        assert!(
            Instant::now().into_std() > std::time::Instant::now(),
            "a day ahead of real time"
        );
    });
}

#[test]
fn timeout_at_and_sleep_until_take_either_instant() {
    virtual_run(async {
        let lp = get_running_loop().unwrap();
        let deadline = Instant::now() + Duration::from_secs(10);
        assert!(timeout_at(deadline, sleep(Duration::from_secs(11))).await.is_err());
        assert_eq!(Instant::now(), deadline);
        assert!(timeout_at(lp.time() + Duration::from_secs(1), async {}).await.is_ok());
        sleep_until(lp.time() + Duration::from_secs(1)).await;
        assert!(
            timeout(Duration::from_secs(3600), sleep(Duration::from_secs(3599)))
                .await
                .is_ok()
        );
    });
}

/// The instants `tick()` returns and when they return, relative to the first, with the task
/// busy (sleeping) for `busy` after the first tick.
fn ticks(behavior: MissedTickBehavior, busy: Duration, n: usize) -> Vec<(Duration, Duration)> {
    virtual_run(async move {
        let mut iv = interval(Duration::from_secs(1));
        iv.set_missed_tick_behavior(behavior);
        let start = iv.tick().await;
        sleep(busy).await;
        let mut out = Vec::new();
        for _ in 0..n {
            let t = iv.tick().await;
            out.push((t - start, Instant::now() - start));
        }
        out
    })
}

fn s(ms: u64) -> Duration {
    Duration::from_millis(ms)
}

#[test]
fn burst_catches_up_at_once_then_keeps_the_schedule() {
    assert_eq!(
        ticks(MissedTickBehavior::Burst, s(2500), 4),
        [
            (s(1000), s(2500)),
            (s(2000), s(2500)),
            (s(3000), s(3000)),
            (s(4000), s(4000))
        ]
    );
}

#[test]
fn delay_restarts_the_schedule_from_the_late_tick() {
    assert_eq!(
        ticks(MissedTickBehavior::Delay, s(2500), 3),
        [(s(1000), s(2500)), (s(3500), s(3500)), (s(4500), s(4500))]
    );
}

#[test]
fn skip_drops_the_missed_ticks_and_keeps_the_phase() {
    assert_eq!(
        ticks(MissedTickBehavior::Skip, s(2500), 3),
        [(s(1000), s(2500)), (s(3000), s(3000)), (s(4000), s(4000))]
    );
}

#[test]
fn a_tick_less_than_5ms_late_is_on_time() {
    assert_eq!(
        ticks(MissedTickBehavior::Delay, s(1004), 2),
        [(s(1000), s(1004)), (s(2000), s(2000))]
    );
}

#[test]
fn a_thousand_hourly_ticks_take_a_few_iterations_each_and_no_real_time() {
    let wall = std::time::Instant::now();
    let iterations = virtual_run(async {
        let start = Instant::now() + Duration::from_secs(3600);
        let mut iv = interval_at(start, Duration::from_secs(3600));
        for i in 0..1000u32 {
            assert_eq!(iv.tick().await, start + Duration::from_secs(3600) * i);
        }
        get_running_loop().unwrap().stats().iterations
    });
    assert!(iterations <= 3000, "{iterations} iterations for 1000 ticks");
    assert!(wall.elapsed() < Duration::from_secs(5));
}

#[test]
#[should_panic(expected = "`period` must be non-zero.")]
fn a_zero_period_panics_as_in_tokio() {
    let _ = interval(Duration::ZERO);
}
