//! The `epoll_pwait2` -> `epoll_wait` fallback, discovered through an
//! injected `ENOSYS`. Its own test binary (= process), because the verdict
//! is process-wide and permanent.
#![cfg(feature = "fault-injection")]

use evloop_syscalls::counters;
use evloop_syscalls::*;

#[test]
fn enosys_from_pwait2_switches_to_epoll_wait_rounding_up_and_sticks() {
    fault::clear();
    let ep = epoll_create1().unwrap();
    let mut events = [EpollEvent::zeroed(); 4];
    let timeout = Duration::from_micros(1_200);

    fault::fail_nth(Syscall::EpollPwait2, 1, libc::ENOSYS);
    let before = counters::snapshot();
    let start = clock_monotonic();
    let n = epoll_wait_timeout(ep.as_fd(), &mut events, Some(timeout)).unwrap();
    let elapsed = clock_monotonic().saturating_sub(start);
    let c = counters::snapshot().since(&before);
    assert_eq!(n, 0);
    assert_eq!(c.get(Syscall::EpollPwait2), 1, "the probe is counted: {c}");
    assert_eq!(c.get(Syscall::EpollWait), 1, "the same call falls back: {c}");
    assert!(elapsed >= timeout, "woke early: {elapsed:?} < {timeout:?}");
    // epoll_wait got ceil(1.2 ms) = 2 ms, and never wakes before that.
    assert!(
        elapsed >= Duration::from_millis(2),
        "timeout was not rounded up: {elapsed:?}"
    );
    assert_eq!(epoll_pwait2_available(), Some(false));

    // Later calls go straight to epoll_wait, still rounding up.
    let before = counters::snapshot();
    let start = clock_monotonic();
    let n = epoll_wait_timeout(ep.as_fd(), &mut events, Some(Duration::from_nanos(1))).unwrap();
    let elapsed = clock_monotonic().saturating_sub(start);
    let c = counters::snapshot().since(&before);
    assert_eq!(n, 0);
    assert_eq!(c.get(Syscall::EpollPwait2), 0, "{c}");
    assert_eq!(c.get(Syscall::EpollWait), 1, "{c}");
    assert!(
        elapsed >= Duration::from_millis(1),
        "1 ns must round up to 1 ms: {elapsed:?}"
    );

    // The fallback still reports events and data.
    let efd = eventfd(1).unwrap();
    epoll_ctl_add(ep.as_fd(), efd.as_raw_fd(), EpollFlags::IN, 77).unwrap();
    assert_eq!(epoll_wait_timeout(ep.as_fd(), &mut events, None).unwrap(), 1);
    assert_eq!(events[0].data(), 77);
    assert_eq!(fault::pending(), 0);
}
