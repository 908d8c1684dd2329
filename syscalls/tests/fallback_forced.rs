//! `force_epoll_wait_fallback`: the process-wide test hook that pretends
//! `epoll_pwait2` is missing. Its own test binary because the switch is
//! process-wide; the tests here serialise on a mutex.
#![cfg(feature = "fault-injection")]

use std::sync::Mutex;

use evloop_syscalls::counters;
use evloop_syscalls::*;

static SWITCH: Mutex<()> = Mutex::new(());

#[test]
fn forced_fallback_uses_epoll_wait_and_rounds_up() {
    let _g = SWITCH.lock().unwrap_or_else(|p| p.into_inner());
    fault::clear();
    force_epoll_wait_fallback(true);
    let ep = epoll_create1().unwrap();
    let mut events = [EpollEvent::zeroed(); 2];
    let timeout = Duration::from_micros(1_200);
    for _ in 0..2 {
        let before = counters::snapshot();
        let start = clock_monotonic();
        let n = epoll_wait_timeout(ep.as_fd(), &mut events, Some(timeout));
        let elapsed = clock_monotonic().saturating_sub(start);
        let c = counters::snapshot().since(&before);
        assert_eq!(n.unwrap(), 0);
        assert_eq!(c.get(Syscall::EpollPwait2), 0, "{c}");
        assert_eq!(c.get(Syscall::EpollWait), 1, "{c}");
        assert!(elapsed >= timeout, "woke early: {elapsed:?}");
        assert!(elapsed >= Duration::from_millis(2), "not rounded up: {elapsed:?}");
    }
    force_epoll_wait_fallback(false);
}

#[test]
fn lifting_the_force_goes_back_to_pwait2() {
    let _g = SWITCH.lock().unwrap_or_else(|p| p.into_inner());
    force_epoll_wait_fallback(true);
    force_epoll_wait_fallback(false);
    let ep = epoll_create1().unwrap();
    let mut events = [EpollEvent::zeroed(); 2];
    let before = counters::snapshot();
    epoll_wait_timeout(ep.as_fd(), &mut events, Some(Duration::ZERO)).unwrap();
    let c = counters::snapshot().since(&before);
    if epoll_pwait2_available() == Some(false) {
        eprintln!("skipping: epoll_pwait2 is really unavailable here ({c})");
        return;
    }
    assert_eq!(epoll_pwait2_available(), Some(true));
    assert_eq!(c.get(Syscall::EpollPwait2), 1, "{c}");
    assert_eq!(c.get(Syscall::EpollWait), 0, "{c}");
}
