//! Loop options out of their range are configuration errors naming the option, refused by
//! `Builder::build` before the loop exists (a `Duration::MAX` timer slack used to be accepted
//! and made a 10 ms sleep never finish).

use std::time::Duration;

use evloop::event_loop::{Builder, LoopErrorKind, MAX_TIMER_SLACK};
use evloop_syscalls as sys;
use evloop_tests::run_bounded;

#[test]
fn a_timer_slack_beyond_the_maximum_is_refused_naming_the_option() {
    let slack_before = sys::timer_slack().unwrap();
    for slack in [
        Duration::MAX,
        MAX_TIMER_SLACK + Duration::from_nanos(1),
        Duration::from_secs(3600),
    ] {
        let e = Builder::new().timer_slack(Some(slack)).build().unwrap_err();
        println!("{e}");
        assert_eq!(e.kind(), LoopErrorKind::InvalidConfig, "{e}");
        assert!(e.to_string().contains("timer_slack"), "{e}");
        assert!(e.to_string().contains(&format!("{slack:?}")), "{e}");
    }
    assert_eq!(
        sys::timer_slack().unwrap(),
        slack_before,
        "a refused build changed nothing"
    );
}

#[test]
fn the_largest_accepted_timer_slack_still_lets_a_short_sleep_finish() {
    for slack in [
        Some(MAX_TIMER_SLACK),
        Some(Duration::ZERO),
        Some(Duration::from_micros(50)),
        None,
    ] {
        let lp = Builder::new().timer_slack(slack).build().unwrap();
        run_bounded(&lp, evloop::time::sleep(Duration::from_millis(10)));
    }
}
