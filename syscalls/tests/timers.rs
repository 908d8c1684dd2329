//! Clocks, timer slack and timerfd.

use std::io::ErrorKind;

use evloop_syscalls::*;

#[test]
fn monotonic_clock_never_goes_backwards() {
    let mut prev = clock_monotonic();
    assert!(prev > Duration::ZERO);
    for _ in 0..1000 {
        let now = clock_monotonic();
        assert!(now >= prev, "{now:?} < {prev:?}");
        prev = now;
    }
    assert_eq!(
        clock_gettime(Clock::Monotonic).unwrap().as_secs() / 3600 / 24 / 365 / 1000,
        0
    );
    // Boottime includes suspended time, so it is never behind monotonic.
    let m = clock_monotonic();
    let b = clock_gettime(Clock::Boottime).unwrap();
    assert!(b >= m, "boottime {b:?} < monotonic {m:?}");
    // Realtime is after 2020-01-01.
    assert!(clock_gettime(Clock::Realtime).unwrap() > Duration::from_secs(1_577_836_800));
}

#[test]
fn timer_slack_set_get_round_trip() {
    let original = timer_slack().unwrap();
    assert!(original > 0, "a normal thread has a non-zero slack");

    set_timer_slack(1).unwrap();
    assert_eq!(timer_slack().unwrap(), 1);
    set_timer_slack(123_456).unwrap();
    assert_eq!(timer_slack().unwrap(), 123_456);
    // 0 resets to the thread's default, which is non-zero.
    set_timer_slack(0).unwrap();
    assert!(timer_slack().unwrap() > 0);
    // Out-of-range values are clamped so they can be read back.
    set_timer_slack(u64::MAX).unwrap();
    assert_eq!(timer_slack().unwrap(), i64::MAX as u64);

    set_timer_slack(original).unwrap();
    assert_eq!(timer_slack().unwrap(), original);
}

#[test]
fn timer_slack_is_per_thread() {
    let original = timer_slack().unwrap();
    let other = std::thread::spawn(|| {
        set_timer_slack(4_321).unwrap();
        timer_slack().unwrap()
    })
    .join()
    .unwrap();
    assert_eq!(other, 4_321);
    assert_eq!(timer_slack().unwrap(), original);
}

#[test]
fn timerfd_fires_at_absolute_deadline_not_early() {
    let ep = epoll_create1().unwrap();
    let tfd = timerfd_create().unwrap();
    epoll_ctl_add(ep.as_fd(), tfd.as_raw_fd(), EpollFlags::IN, 42).unwrap();
    let deadline = clock_monotonic() + Duration::from_millis(20);
    timerfd_set_abs(tfd.as_fd(), Some(deadline)).unwrap();
    assert_eq!(timerfd_read(tfd.as_fd()).unwrap_err().kind(), ErrorKind::WouldBlock);

    let mut events = [EpollEvent::zeroed(); 2];
    let limit = clock_monotonic() + Duration::from_secs(30);
    let n = loop {
        // Waits may end with Ok(0) on a signal; loop until it fires.
        let n = epoll_wait_timeout(ep.as_fd(), &mut events, Some(Duration::from_secs(30))).unwrap();
        if n > 0 || clock_monotonic() > limit {
            break n;
        }
    };
    let woke = clock_monotonic();
    assert_eq!(n, 1, "timerfd never fired");
    assert_eq!(events[0].data(), 42);
    assert!(woke >= deadline, "fired early: woke at {woke:?}, deadline {deadline:?}");
    assert_eq!(timerfd_read(tfd.as_fd()).unwrap(), 1);
    assert_eq!(timerfd_read(tfd.as_fd()).unwrap_err().kind(), ErrorKind::WouldBlock);
}

#[test]
fn timerfd_past_and_zero_deadlines_fire_immediately() {
    let tfd = timerfd_create().unwrap();
    let ep = epoll_create1().unwrap();
    epoll_ctl_add(ep.as_fd(), tfd.as_raw_fd(), EpollFlags::IN, 0).unwrap();
    let mut events = [EpollEvent::zeroed(); 1];
    for deadline in [Duration::ZERO, Duration::from_nanos(1), clock_monotonic()] {
        timerfd_set_abs(tfd.as_fd(), Some(deadline)).unwrap();
        let n = epoll_wait_timeout(ep.as_fd(), &mut events, Some(Duration::from_secs(10))).unwrap();
        assert_eq!(n, 1, "deadline {deadline:?} did not fire");
        assert_eq!(timerfd_read(tfd.as_fd()).unwrap(), 1);
    }
}

#[test]
fn timerfd_none_disarms() {
    let tfd = timerfd_create().unwrap();
    timerfd_set_abs(tfd.as_fd(), Some(clock_monotonic() + Duration::from_millis(5))).unwrap();
    timerfd_set_abs(tfd.as_fd(), None).unwrap();
    let ep = epoll_create1().unwrap();
    epoll_ctl_add(ep.as_fd(), tfd.as_raw_fd(), EpollFlags::IN, 0).unwrap();
    let mut events = [EpollEvent::zeroed(); 1];
    assert_eq!(
        epoll_wait_timeout(ep.as_fd(), &mut events, Some(Duration::from_millis(20))).unwrap(),
        0
    );
    // A far-future deadline saturates instead of failing.
    timerfd_set_abs(tfd.as_fd(), Some(Duration::MAX)).unwrap();
    assert_eq!(timerfd_read(tfd.as_fd()).unwrap_err().kind(), ErrorKind::WouldBlock);
}
