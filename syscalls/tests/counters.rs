//! Per-thread call counters: every wrapper bumps exactly its own counter,
//! once per call, and only on the calling thread.

use std::io::{IoSlice, IoSliceMut};

use evloop_syscalls::counters::{self, Counts};
use evloop_syscalls::*;

/// Runs `f` and returns its result with the calls it made on this thread.
fn delta<T>(f: impl FnOnce() -> T) -> (T, Counts) {
    let before = counters::snapshot();
    let out = f();
    (out, counters::snapshot().since(&before))
}

/// Asserts that `counts` holds exactly `n` calls of `s` and nothing else.
#[track_caller]
fn assert_only(counts: &Counts, s: Syscall, n: u64) {
    assert_eq!(counts.iter().collect::<Vec<_>>(), vec![(s, n)], "counts: {counts}");
}

#[test]
fn each_wrapper_bumps_exactly_its_own_counter() {
    let (ep, c) = delta(|| epoll_create1().unwrap());
    assert_only(&c, Syscall::EpollCreate1, 1);

    let (efd, c) = delta(|| eventfd(0).unwrap());
    assert_only(&c, Syscall::Eventfd, 1);

    let (_, c) = delta(|| epoll_ctl_add(ep.as_fd(), efd.as_raw_fd(), EpollFlags::IN, 7).unwrap());
    assert_only(&c, Syscall::EpollCtl, 1);
    let (_, c) = delta(|| epoll_ctl_mod(ep.as_fd(), efd.as_raw_fd(), EpollFlags::IN, 8).unwrap());
    assert_only(&c, Syscall::EpollCtl, 1);

    let (_, c) = delta(|| eventfd_write(efd.as_fd(), 1).unwrap());
    assert_only(&c, Syscall::Write, 1);

    let mut events = [EpollEvent::zeroed(); 4];
    let (n, c) = delta(|| epoll_pwait2(ep.as_fd(), &mut events, Some(Duration::ZERO)));
    assert_only(&c, Syscall::EpollPwait2, 1);
    if let Err(e) = n {
        eprintln!("epoll_pwait2 unavailable here ({e}); its count was still checked");
    }
    let (n, c) = delta(|| epoll_wait(ep.as_fd(), &mut events, 0).unwrap());
    assert_only(&c, Syscall::EpollWait, 1);
    assert_eq!(n, 1);

    let (v, c) = delta(|| eventfd_read(efd.as_fd()).unwrap());
    assert_only(&c, Syscall::Read, 1);
    assert_eq!(v, 1);

    let (_, c) = delta(|| epoll_ctl_del(ep.as_fd(), efd.as_raw_fd()).unwrap());
    assert_only(&c, Syscall::EpollCtl, 1);

    let (_, c) = delta(clock_monotonic);
    assert_only(&c, Syscall::ClockGettime, 1);
    let (_, c) = delta(|| clock_gettime(Clock::Realtime).unwrap());
    assert_only(&c, Syscall::ClockGettime, 1);

    let ((r, w), c) = delta(|| pipe2().unwrap());
    assert_only(&c, Syscall::Pipe2, 1);
    let ((a, b), c) = delta(|| socketpair_stream().unwrap());
    assert_only(&c, Syscall::Socketpair, 1);

    let (_, c) = delta(|| write(w.as_fd(), b"ab").unwrap());
    assert_only(&c, Syscall::Write, 1);
    let (_, c) = delta(|| read(r.as_fd(), &mut [0u8; 8]).unwrap());
    assert_only(&c, Syscall::Read, 1);
    let (_, c) = delta(|| writev(a.as_fd(), &[IoSlice::new(b"x"), IoSlice::new(b"y")]).unwrap());
    assert_only(&c, Syscall::Writev, 1);
    let mut buf = [0u8; 2];
    let (_, c) = delta(|| readv(b.as_fd(), &mut [IoSliceMut::new(&mut buf)]).unwrap());
    assert_only(&c, Syscall::Readv, 1);

    let (open, c) = delta(|| fd_is_open(r.as_raw_fd()));
    assert_only(&c, Syscall::Fcntl, 1);
    assert!(open);
    // Already non-blocking: only F_GETFL is needed.
    let (_, c) = delta(|| set_nonblocking(r.as_fd(), true).unwrap());
    assert_only(&c, Syscall::Fcntl, 1);
    // A change needs F_GETFL + F_SETFL.
    let (_, c) = delta(|| set_nonblocking(r.as_fd(), false).unwrap());
    assert_only(&c, Syscall::Fcntl, 2);

    let (slack, c) = delta(|| timer_slack().unwrap());
    assert_only(&c, Syscall::Prctl, 1);
    let (_, c) = delta(|| set_timer_slack(slack).unwrap());
    assert_only(&c, Syscall::Prctl, 1);

    let (tfd, c) = delta(|| timerfd_create().unwrap());
    assert_only(&c, Syscall::TimerfdCreate, 1);
    let (_, c) = delta(|| timerfd_set_abs(tfd.as_fd(), None).unwrap());
    assert_only(&c, Syscall::TimerfdSettime, 1);
    let (e, c) = delta(|| timerfd_read(tfd.as_fd()).unwrap_err());
    assert_only(&c, Syscall::Read, 1);
    assert_eq!(e.kind(), std::io::ErrorKind::WouldBlock);

    for fd in [ep, efd, r, w, a, b, tfd] {
        let (_, c) = delta(|| close(fd).unwrap());
        assert_only(&c, Syscall::Close, 1);
    }
}

#[test]
fn failed_calls_are_counted_too() {
    let ep = epoll_create1().unwrap();
    let (r, c) = delta(|| epoll_ctl_del(ep.as_fd(), RawFd::MAX - 7));
    assert!(r.is_err());
    assert_only(&c, Syscall::EpollCtl, 1);
    let (open, c) = delta(|| fd_is_open(-1));
    assert!(!open);
    assert_only(&c, Syscall::Fcntl, 1);
}

#[test]
fn reset_zeroes_this_threads_counters() {
    let _ = clock_monotonic();
    let _ = fd_is_open(0);
    assert!(!counters::snapshot().is_empty());
    counters::reset();
    let s = counters::snapshot();
    assert!(s.is_empty(), "{s}");
    assert_eq!(s, Counts::default());
    let _ = clock_monotonic();
    assert_only(&counters::snapshot(), Syscall::ClockGettime, 1);
}

#[test]
fn since_is_the_saturating_difference() {
    let a = counters::snapshot();
    let _ = clock_monotonic();
    let _ = clock_monotonic();
    let _ = fd_is_open(0);
    let b = counters::snapshot();
    let d = b.since(&a);
    assert_eq!(d.get(Syscall::ClockGettime), 2);
    assert_eq!(d[Syscall::Fcntl], 1);
    assert_eq!(d.total_syscalls(), 1, "clock_gettime is vDSO and not a syscall");
    assert_eq!(d.total_calls(), 3);
    assert!(a.since(&b).is_empty(), "a negative difference saturates at zero");
}

#[test]
fn counters_are_per_thread() {
    let before = counters::snapshot();
    let in_thread = std::thread::spawn(|| {
        let before = counters::snapshot();
        let fd = eventfd(0).unwrap();
        let _ = clock_monotonic();
        drop(fd);
        counters::snapshot().since(&before)
    })
    .join()
    .unwrap();
    assert_eq!(in_thread.get(Syscall::Eventfd), 1);
    assert_eq!(in_thread.get(Syscall::ClockGettime), 1);
    let here = counters::snapshot().since(&before);
    assert!(here.is_empty(), "another thread's calls leaked here: {here}");
}

#[test]
fn display_lists_nonzero_entries_in_order() {
    counters::reset();
    assert_eq!(counters::snapshot().to_string(), "(none)");
    let ep = epoll_create1().unwrap();
    let mut ev = [EpollEvent::zeroed(); 1];
    let _ = epoll_pwait2(ep.as_fd(), &mut ev, Some(Duration::ZERO));
    for _ in 0..3 {
        let _ = clock_monotonic();
    }
    let d = counters::snapshot();
    assert_eq!(d.to_string(), "epoll_create1=1 epoll_pwait2=1 clock_gettime=3");
    assert_eq!(Syscall::EpollCtl.to_string(), "epoll_ctl");
}
