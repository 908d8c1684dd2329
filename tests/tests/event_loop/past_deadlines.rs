//! Deadlines in the past keep their order: a timer set for an earlier instant runs first,
//! even when both instants lie before the loop was created (they used to collapse to one
//! instant, the loop's creation, and run in scheduling order instead).

use std::time::{Duration, Instant};

use evloop::{event_loop::EventLoop, time::sleep_until};
use evloop_tests::{entries, log, push, run_bounded};

#[test]
fn call_at_deadlines_before_the_loop_existed_run_earliest_first() {
    let before = Instant::now();
    std::thread::sleep(Duration::from_millis(2));
    let lp = EventLoop::new().unwrap();
    let now = lp.time();
    let order = log();
    for (name, when) in [
        ("now-1s", now - Duration::from_secs(1)),
        ("now-2s", now - Duration::from_secs(2)),
        ("before the loop", before),
        ("now-3s", now - Duration::from_secs(3)),
        ("now-2s again", now - Duration::from_secs(2)),
        ("now", now),
    ] {
        let o = order.clone();
        let h = lp.call_at(when, move || push(&o, name)).unwrap();
        assert_eq!(h.when(), when, "when() gives back the instant asked for");
    }
    run_bounded(&lp, evloop::time::sleep(Duration::from_millis(1)));
    assert_eq!(
        entries(&order),
        ["now-3s", "now-2s", "now-2s again", "now-1s", "before the loop", "now"],
        "earliest deadline first, equal deadlines in scheduling order"
    );
}

#[test]
fn a_sleep_until_a_past_instant_keeps_that_instant_as_its_deadline() {
    let lp = EventLoop::new().unwrap();
    run_bounded(&lp, async {
        let now = Instant::now();
        for ago in [
            Duration::from_millis(1),
            Duration::from_secs(2),
            Duration::from_secs(3600),
        ] {
            let when = now - ago;
            let s = sleep_until(when);
            assert_eq!(s.deadline(), Some(when), "{ago:?} ago");
            s.await;
        }
    });
}

#[test]
fn a_deadline_far_in_the_past_or_future_is_accepted() {
    let lp = EventLoop::new().unwrap();
    let now = lp.time();
    let order = log();
    let far_past = now.checked_sub(Duration::from_secs(50 * 365 * 86_400)).unwrap_or(now);
    let o = order.clone();
    lp.call_at(far_past, move || push(&o, "far past")).unwrap();
    let o = order.clone();
    let never = lp
        .call_at(now + Duration::from_secs(400 * 365 * 86_400), move || push(&o, "never"))
        .unwrap();
    let o = order.clone();
    lp.call_later(Duration::MAX, move || push(&o, "never either")).unwrap();
    let o = order.clone();
    lp.call_at(now - Duration::from_millis(1), move || push(&o, "just past"))
        .unwrap();
    run_bounded(&lp, evloop::time::sleep(Duration::from_millis(1)));
    assert_eq!(entries(&order), ["far past", "just past"]);
    never.cancel();
}
