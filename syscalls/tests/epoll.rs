//! epoll behaviour through the wrappers: readiness and data, deletion,
//! kernel error codes, timeouts that never end early, and the
//! `epoll_pwait2` availability probe.
//!
//! No test here touches the process-wide fallback switch, so the probe
//! result seen here is the real kernel's.

use std::io::ErrorKind;

use evloop_syscalls::*;

/// An fd number that is certainly not open in this process.
const CLOSED_FD: RawFd = RawFd::MAX - 7;

fn pwait2_missing(e: &std::io::Error) -> bool {
    matches!(e.raw_os_error(), Some(libc::ENOSYS | libc::EPERM))
}

#[test]
fn written_eventfd_is_reported_readable_with_its_data() {
    let ep = epoll_create1().unwrap();
    let efd = eventfd(0).unwrap();
    epoll_ctl_add(ep.as_fd(), efd.as_raw_fd(), EpollFlags::IN, 0xDEAD_BEEF_0000_0001).unwrap();

    let mut events = [EpollEvent::zeroed(); 8];
    assert_eq!(
        epoll_wait_timeout(ep.as_fd(), &mut events, Some(Duration::ZERO)).unwrap(),
        0
    );

    eventfd_write(efd.as_fd(), 3).unwrap();
    let n = epoll_wait_timeout(ep.as_fd(), &mut events, Some(Duration::from_secs(10))).unwrap();
    assert_eq!(n, 1);
    assert!(events[0].flags().contains(EpollFlags::IN), "{:?}", events[0]);
    assert_eq!(events[0].data(), 0xDEAD_BEEF_0000_0001);
    assert_eq!(eventfd_read(efd.as_fd()).unwrap(), 3);
    assert_eq!(eventfd_read(efd.as_fd()).unwrap_err().kind(), ErrorKind::WouldBlock);
}

#[test]
fn ctl_mod_changes_the_reported_data() {
    let ep = epoll_create1().unwrap();
    let efd = eventfd(1).unwrap();
    epoll_ctl_add(ep.as_fd(), efd.as_raw_fd(), EpollFlags::IN, 1).unwrap();
    epoll_ctl_mod(ep.as_fd(), efd.as_raw_fd(), EpollFlags::IN | EpollFlags::OUT, 2).unwrap();
    let mut events = [EpollEvent::zeroed(); 2];
    let n = epoll_wait(ep.as_fd(), &mut events, 1000).unwrap();
    assert_eq!(n, 1);
    assert_eq!(events[0].data(), 2);
    assert!(events[0].flags().contains(EpollFlags::IN | EpollFlags::OUT));
}

#[test]
fn ctl_del_stops_reports() {
    let ep = epoll_create1().unwrap();
    let efd = eventfd(1).unwrap();
    epoll_ctl_add(ep.as_fd(), efd.as_raw_fd(), EpollFlags::IN, 5).unwrap();
    let mut events = [EpollEvent::zeroed(); 2];
    assert_eq!(
        epoll_wait_timeout(ep.as_fd(), &mut events, Some(Duration::ZERO)).unwrap(),
        1
    );
    epoll_ctl_del(ep.as_fd(), efd.as_raw_fd()).unwrap();
    // Still readable, but no longer watched.
    assert_eq!(
        epoll_wait_timeout(ep.as_fd(), &mut events, Some(Duration::ZERO)).unwrap(),
        0
    );
    assert_eq!(epoll_wait(ep.as_fd(), &mut events, 0).unwrap(), 0);
}

#[test]
fn ctl_add_of_a_closed_fd_is_ebadf() {
    let ep = epoll_create1().unwrap();
    let e = epoll_ctl_add(ep.as_fd(), CLOSED_FD, EpollFlags::IN, 0).unwrap_err();
    assert_eq!(e.raw_os_error(), Some(libc::EBADF), "{e}");
    let e = epoll_ctl_add(ep.as_fd(), -1, EpollFlags::IN, 0).unwrap_err();
    assert_eq!(e.raw_os_error(), Some(libc::EBADF), "{e}");
}

#[test]
fn ctl_add_twice_is_eexist() {
    let ep = epoll_create1().unwrap();
    let efd = eventfd(0).unwrap();
    epoll_ctl_add(ep.as_fd(), efd.as_raw_fd(), EpollFlags::IN, 0).unwrap();
    let e = epoll_ctl_add(ep.as_fd(), efd.as_raw_fd(), EpollFlags::IN, 0).unwrap_err();
    assert_eq!(e.raw_os_error(), Some(libc::EEXIST), "{e}");
}

#[test]
fn ctl_mod_and_del_of_an_unregistered_fd_are_enoent() {
    let ep = epoll_create1().unwrap();
    let efd = eventfd(0).unwrap();
    let e = epoll_ctl_mod(ep.as_fd(), efd.as_raw_fd(), EpollFlags::IN, 0).unwrap_err();
    assert_eq!(e.raw_os_error(), Some(libc::ENOENT), "{e}");
    let e = epoll_ctl_del(ep.as_fd(), efd.as_raw_fd()).unwrap_err();
    assert_eq!(e.raw_os_error(), Some(libc::ENOENT), "{e}");
}

#[test]
fn wait_with_empty_event_buffer_is_einval() {
    let ep = epoll_create1().unwrap();
    let e = epoll_wait(ep.as_fd(), &mut [], 0).unwrap_err();
    assert_eq!(e.raw_os_error(), Some(libc::EINVAL), "{e}");
    let e = epoll_wait_timeout(ep.as_fd(), &mut [], Some(Duration::ZERO)).unwrap_err();
    assert_eq!(e.raw_os_error(), Some(libc::EINVAL), "{e}");
}

#[test]
fn epoll_pwait2_with_2ms_timeout_returns_no_events_and_not_early() {
    let ep = epoll_create1().unwrap();
    let mut events = [EpollEvent::zeroed(); 4];
    let timeout = Duration::from_millis(2);
    let start = clock_monotonic();
    let r = epoll_pwait2(ep.as_fd(), &mut events, Some(timeout));
    let elapsed = clock_monotonic().saturating_sub(start);
    match r {
        Err(e) if pwait2_missing(&e) => {
            eprintln!("skipping: epoll_pwait2 is not available here ({e})");
        }
        r => {
            assert_eq!(r.unwrap(), 0);
            assert!(elapsed >= timeout, "woke early: {elapsed:?} < {timeout:?}");
            assert!(elapsed < Duration::from_secs(30), "absurdly late: {elapsed:?}");
        }
    }
}

#[test]
fn epoll_wait_timeout_sub_millisecond_is_not_early() {
    let ep = epoll_create1().unwrap();
    let mut events = [EpollEvent::zeroed(); 4];
    for timeout in [Duration::from_micros(300), Duration::from_micros(1_200)] {
        let start = clock_monotonic();
        let n = epoll_wait_timeout(ep.as_fd(), &mut events, Some(timeout)).unwrap();
        let elapsed = clock_monotonic().saturating_sub(start);
        assert_eq!(n, 0);
        assert!(elapsed >= timeout, "woke early: {elapsed:?} < {timeout:?}");
    }
}

#[test]
fn epoll_wait_ms_timeout_is_not_early() {
    let ep = epoll_create1().unwrap();
    let mut events = [EpollEvent::zeroed(); 4];
    let start = clock_monotonic();
    assert_eq!(epoll_wait(ep.as_fd(), &mut events, 3).unwrap(), 0);
    let elapsed = clock_monotonic().saturating_sub(start);
    assert!(elapsed >= Duration::from_millis(3), "woke early: {elapsed:?}");
}

#[test]
fn huge_timeout_saturates_instead_of_failing() {
    let ep = epoll_create1().unwrap();
    let efd = eventfd(1).unwrap();
    epoll_ctl_add(ep.as_fd(), efd.as_raw_fd(), EpollFlags::IN, 9).unwrap();
    let mut events = [EpollEvent::zeroed(); 1];
    // The eventfd is already readable, so these return at once; what is
    // checked is that Duration::MAX is not rejected as EINVAL.
    assert_eq!(
        epoll_wait_timeout(ep.as_fd(), &mut events, Some(Duration::MAX)).unwrap(),
        1
    );
    assert_eq!(epoll_wait_timeout(ep.as_fd(), &mut events, None).unwrap(), 1);
    match epoll_pwait2(ep.as_fd(), &mut events, Some(Duration::MAX)) {
        Err(e) if pwait2_missing(&e) => eprintln!("skipping pwait2 part: {e}"),
        r => assert_eq!(r.unwrap(), 1),
    }
}

#[test]
fn epoll_pwait2_is_available_after_a_wait() {
    let ep = epoll_create1().unwrap();
    let mut events = [EpollEvent::zeroed(); 1];
    epoll_wait_timeout(ep.as_fd(), &mut events, Some(Duration::ZERO)).unwrap();
    let probed = epoll_pwait2_available();
    assert!(probed.is_some(), "a wait must settle the probe");
    if probed == Some(false) {
        let why = epoll_pwait2(ep.as_fd(), &mut events, Some(Duration::ZERO)).unwrap_err();
        eprintln!("skipping: epoll_pwait2 is unavailable on this kernel/sandbox ({why})");
        return;
    }
    assert_eq!(probed, Some(true));
}

#[test]
fn ready_events_fill_only_the_buffer() {
    let ep = epoll_create1().unwrap();
    let fds: Vec<OwnedFd> = (0..5).map(|_| eventfd(1).unwrap()).collect();
    for (i, fd) in fds.iter().enumerate() {
        epoll_ctl_add(ep.as_fd(), fd.as_raw_fd(), EpollFlags::IN, i as u64).unwrap();
    }
    let mut events = [EpollEvent::zeroed(); 3];
    assert_eq!(
        epoll_wait_timeout(ep.as_fd(), &mut events, Some(Duration::ZERO)).unwrap(),
        3
    );
    let mut big = [EpollEvent::zeroed(); 16];
    assert_eq!(
        epoll_wait_timeout(ep.as_fd(), &mut big, Some(Duration::ZERO)).unwrap(),
        5
    );
    let mut seen: Vec<u64> = big[..5].iter().map(|e| e.data()).collect();
    seen.sort_unstable();
    assert_eq!(seen, [0, 1, 2, 3, 4]);
}

#[test]
fn edge_triggered_reports_once_per_change() {
    let ep = epoll_create1().unwrap();
    let efd = eventfd(0).unwrap();
    epoll_ctl_add(ep.as_fd(), efd.as_raw_fd(), EpollFlags::IN | EpollFlags::ET, 1).unwrap();
    let mut events = [EpollEvent::zeroed(); 2];
    eventfd_write(efd.as_fd(), 1).unwrap();
    assert_eq!(
        epoll_wait_timeout(ep.as_fd(), &mut events, Some(Duration::ZERO)).unwrap(),
        1
    );
    assert_eq!(
        epoll_wait_timeout(ep.as_fd(), &mut events, Some(Duration::ZERO)).unwrap(),
        0
    );
}
