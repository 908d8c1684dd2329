//! Fault injection and the EINTR policy it lets us prove: `read`-like calls
//! retry an (injected) EINTR, waits turn it into `Ok(0)`, `close` reports it
//! as success, and other errnos come back unchanged.
#![cfg(feature = "fault-injection")]

mod common;

use std::io::{ErrorKind, IoSlice, IoSliceMut};

use evloop_syscalls::*;

use common::{Clean, delta};

#[test]
fn injected_eintr_on_read_is_retried() {
    let _c = Clean::new();
    let (r, w) = pipe2().unwrap();
    write(w.as_fd(), b"hello").unwrap();
    fault::fail_nth(Syscall::Read, 1, libc::EINTR);
    let mut buf = [0u8; 8];
    let (n, c) = delta(|| read(r.as_fd(), &mut buf));
    assert_eq!(n.unwrap(), 5);
    assert_eq!(&buf[..5], b"hello");
    assert_eq!(c.get(Syscall::Read), 2, "the interrupted attempt and the retry: {c}");
    assert_eq!(fault::pending(), 0);
}

#[test]
fn injected_eintr_is_retried_by_every_io_wrapper() {
    let _c = Clean::new();
    let (a, b) = socketpair_stream().unwrap();
    let efd = eventfd(0).unwrap();

    fault::fail_times(Syscall::Write, 1, 3, libc::EINTR);
    let (n, c) = delta(|| write(a.as_fd(), b"xy"));
    assert_eq!(n.unwrap(), 2);
    assert_eq!(c.get(Syscall::Write), 4);

    fault::fail_nth(Syscall::Writev, 1, libc::EINTR);
    let (n, c) = delta(|| writev(a.as_fd(), &[IoSlice::new(b"z")]));
    assert_eq!(n.unwrap(), 1);
    assert_eq!(c.get(Syscall::Writev), 2);

    fault::fail_nth(Syscall::Readv, 1, libc::EINTR);
    let mut buf = [0u8; 3];
    let (n, c) = delta(|| readv(b.as_fd(), &mut [IoSliceMut::new(&mut buf)]));
    assert_eq!(n.unwrap(), 3);
    assert_eq!(&buf, b"xyz");
    assert_eq!(c.get(Syscall::Readv), 2);

    fault::fail_nth(Syscall::Write, 1, libc::EINTR);
    let (r, c) = delta(|| eventfd_write(efd.as_fd(), 4));
    r.unwrap();
    assert_eq!(c.get(Syscall::Write), 2);

    fault::fail_nth(Syscall::Read, 1, libc::EINTR);
    let (v, c) = delta(|| eventfd_read(efd.as_fd()));
    assert_eq!(v.unwrap(), 4);
    assert_eq!(c.get(Syscall::Read), 2);
}

#[test]
fn injected_eintr_on_waits_returns_no_events() {
    let _c = Clean::new();
    let ep = epoll_create1().unwrap();
    let efd = eventfd(1).unwrap();
    epoll_ctl_add(ep.as_fd(), efd.as_raw_fd(), EpollFlags::IN, 1).unwrap();
    let mut events = [EpollEvent::zeroed(); 2];

    // The wait the loop uses. Inject on both underlying calls, because
    // another test binary decides which one is active; the event is ready,
    // so only the injected EINTR can make this return 0.
    fault::fail_nth(Syscall::EpollPwait2, 1, libc::EINTR);
    fault::fail_nth(Syscall::EpollWait, 1, libc::EINTR);
    let (n, c) = delta(|| epoll_wait_timeout(ep.as_fd(), &mut events, Some(Duration::from_secs(5))));
    assert_eq!(n.unwrap(), 0);
    assert_eq!(c.total_syscalls(), 1, "EINTR must not be retried: {c}");
    fault::clear();

    fault::fail_nth(Syscall::EpollPwait2, 1, libc::EINTR);
    let (n, c) = delta(|| epoll_pwait2(ep.as_fd(), &mut events, None));
    assert_eq!(n.unwrap(), 0);
    assert_eq!(c.get(Syscall::EpollPwait2), 1);

    fault::fail_nth(Syscall::EpollWait, 1, libc::EINTR);
    let (n, c) = delta(|| epoll_wait(ep.as_fd(), &mut events, -1));
    assert_eq!(n.unwrap(), 0);
    assert_eq!(c.get(Syscall::EpollWait), 1);

    // Without injection the ready event is reported.
    assert_eq!(epoll_wait(ep.as_fd(), &mut events, -1).unwrap(), 1);
}

#[test]
fn injected_emfile_on_eventfd_is_returned() {
    let _c = Clean::new();
    fault::fail_nth(Syscall::Eventfd, 1, libc::EMFILE);
    let (r, c) = delta(|| eventfd(0));
    let e = r.unwrap_err();
    assert_eq!(e.raw_os_error(), Some(libc::EMFILE));
    assert_eq!(c.get(Syscall::Eventfd), 1, "an injected failure is still counted");
    assert!(eventfd(0).is_ok(), "only the first call fails");
}

#[test]
fn injected_errors_are_not_retried_except_eintr() {
    let _c = Clean::new();
    let (r, _w) = pipe2().unwrap();
    fault::fail_nth(Syscall::Read, 1, libc::EIO);
    let (res, c) = delta(|| read(r.as_fd(), &mut [0u8; 4]));
    assert_eq!(res.unwrap_err().raw_os_error(), Some(libc::EIO));
    assert_eq!(c.get(Syscall::Read), 1);

    fault::fail_nth(Syscall::Read, 1, libc::EAGAIN);
    let e = read(r.as_fd(), &mut [0u8; 4]).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::WouldBlock);
}

#[test]
fn fail_nth_counts_from_now_and_fires_once() {
    let _c = Clean::new();
    let _ = clock_monotonic(); // calls before registration do not count
    fault::fail_nth(Syscall::ClockGettime, 3, libc::EINVAL);
    assert_eq!(fault::pending(), 1);
    assert!(clock_gettime(Clock::Monotonic).is_ok());
    assert!(clock_gettime(Clock::Monotonic).is_ok());
    let e = clock_gettime(Clock::Monotonic).unwrap_err();
    assert_eq!(e.raw_os_error(), Some(libc::EINVAL));
    assert_eq!(fault::pending(), 0);
    assert!(clock_gettime(Clock::Monotonic).is_ok());
    // clock_monotonic cannot fail; an injected failure reads as zero.
    fault::fail_nth(Syscall::ClockGettime, 1, libc::EINVAL);
    assert_eq!(clock_monotonic(), Duration::ZERO);
}

#[test]
fn fail_times_fails_consecutive_calls() {
    let _c = Clean::new();
    fault::fail_times(Syscall::Fcntl, 2, 3, libc::EBADF);
    let results: Vec<bool> = (0..6).map(|_| fd_is_open(0)).collect();
    assert_eq!(results, [true, false, false, false, true, true]);
    assert_eq!(fault::pending(), 0);
}

#[test]
fn pending_and_clear() {
    let _c = Clean::new();
    assert_eq!(fault::pending(), 0);
    fault::fail_nth(Syscall::Pipe2, 1, libc::ENFILE);
    fault::fail_times(Syscall::Socketpair, 1, 2, libc::ENFILE);
    assert_eq!(fault::pending(), 2);
    assert_eq!(pipe2().unwrap_err().raw_os_error(), Some(libc::ENFILE));
    assert_eq!(fault::pending(), 1);
    assert!(socketpair_stream().is_err());
    assert_eq!(fault::pending(), 1, "still one failure to go");
    fault::clear();
    assert_eq!(fault::pending(), 0);
    assert!(socketpair_stream().is_ok());
}

#[test]
fn injections_are_per_thread() {
    let _c = Clean::new();
    fault::fail_nth(Syscall::Eventfd, 1, libc::EMFILE);
    let other = std::thread::spawn(|| (eventfd(0).is_ok(), fault::pending()))
        .join()
        .unwrap();
    assert_eq!(other, (true, 0));
    assert_eq!(fault::pending(), 1);
    assert!(eventfd(0).is_err());
}

#[test]
fn injected_close_error_is_reported_and_eintr_is_ok() {
    let _c = Clean::new();
    fault::fail_nth(Syscall::Close, 1, libc::EINTR);
    let (r, c) = delta(|| close(eventfd(0).unwrap()));
    assert!(r.is_ok(), "EINTR from close is success");
    assert_eq!(c.get(Syscall::Close), 1, "close is never retried");

    fault::fail_nth(Syscall::Close, 1, libc::EIO);
    let e = close(eventfd(0).unwrap()).unwrap_err();
    assert_eq!(e.raw_os_error(), Some(libc::EIO));
}

#[test]
fn injected_prctl_and_timerfd_errors_are_returned() {
    let _c = Clean::new();
    fault::fail_nth(Syscall::Prctl, 1, libc::EINVAL);
    assert_eq!(timer_slack().unwrap_err().raw_os_error(), Some(libc::EINVAL));
    fault::fail_nth(Syscall::TimerfdCreate, 1, libc::EMFILE);
    assert_eq!(timerfd_create().unwrap_err().raw_os_error(), Some(libc::EMFILE));
    let tfd = timerfd_create().unwrap();
    fault::fail_nth(Syscall::TimerfdSettime, 1, libc::EINVAL);
    assert!(timerfd_set_abs(tfd.as_fd(), None).is_err());
    fault::fail_nth(Syscall::EpollCreate1, 1, libc::ENOMEM);
    assert_eq!(epoll_create1().unwrap_err().raw_os_error(), Some(libc::ENOMEM));
    let ep = epoll_create1().unwrap();
    fault::fail_nth(Syscall::EpollCtl, 1, libc::ENOSPC);
    let e = epoll_ctl_add(ep.as_fd(), tfd.as_raw_fd(), EpollFlags::IN, 0).unwrap_err();
    assert_eq!(e.raw_os_error(), Some(libc::ENOSPC));
}
