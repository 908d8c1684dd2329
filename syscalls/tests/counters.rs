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

#[test]
fn each_socket_and_file_wrapper_bumps_exactly_its_own_counter() {
    use std::net::{Ipv4Addr, SocketAddr};

    let any: SockAddr = SocketAddr::from((Ipv4Addr::LOCALHOST, 0)).into();
    let (l, c) = delta(|| socket(Domain::Inet, SockType::Stream).unwrap());
    assert_only(&c, Syscall::Socket, 1);
    let (_, c) = delta(|| set_reuseaddr(l.as_fd(), true).unwrap());
    assert_only(&c, Syscall::Setsockopt, 1);
    let (_, c) = delta(|| bind(l.as_fd(), &any).unwrap());
    assert_only(&c, Syscall::Bind, 1);
    let (_, c) = delta(|| listen(l.as_fd(), 8).unwrap());
    assert_only(&c, Syscall::Listen, 1);
    let (addr, c) = delta(|| local_addr(l.as_fd()).unwrap());
    assert_only(&c, Syscall::Getsockname, 1);

    let client = socket(Domain::Inet, SockType::Stream).unwrap();
    let (r, c) = delta(|| connect(client.as_fd(), &addr));
    assert_only(&c, Syscall::Connect, 1);
    if let Err(e) = r {
        assert_eq!(e.raw_os_error(), Some(errno::EINPROGRESS), "{e}");
    }
    // Wait (uncounted here) until the connection is queued and established.
    let ep = epoll_create1().unwrap();
    epoll_ctl_add(ep.as_fd(), l.as_raw_fd(), EpollFlags::IN, 0).unwrap();
    epoll_ctl_add(ep.as_fd(), client.as_raw_fd(), EpollFlags::OUT, 1).unwrap();
    let mut events = [EpollEvent::zeroed(); 2];
    let mut ready = 0;
    while ready < 2 {
        ready += epoll_wait(ep.as_fd(), &mut events, 10_000).unwrap();
    }
    let (err, c) = delta(|| take_socket_error(client.as_fd()).unwrap());
    assert_only(&c, Syscall::Getsockopt, 1);
    assert!(err.is_none());
    let ((server, _), c) = delta(|| accept4(l.as_fd()).unwrap());
    assert_only(&c, Syscall::Accept4, 1);
    let (_, c) = delta(|| peer_addr(server.as_fd()).unwrap());
    assert_only(&c, Syscall::Getpeername, 1);
    let (_, c) = delta(|| nodelay(server.as_fd()).unwrap());
    assert_only(&c, Syscall::Getsockopt, 1);
    let (_, c) = delta(|| set_linger_zero(server.as_fd()).unwrap());
    assert_only(&c, Syscall::Setsockopt, 1);

    let ((a, b), c) = delta(|| socketpair(Domain::Unix, SockType::Stream).unwrap());
    assert_only(&c, Syscall::Socketpair, 1);
    let (_, c) = delta(|| send(a.as_fd(), b"abc").unwrap());
    assert_only(&c, Syscall::Send, 1);
    let (_, c) = delta(|| recv_peek(b.as_fd(), &mut [0u8; 1]).unwrap());
    assert_only(&c, Syscall::Recv, 1);
    let (_, c) = delta(|| recv(b.as_fd(), &mut [0u8; 8]).unwrap());
    assert_only(&c, Syscall::Recv, 1);
    let (_, c) = delta(|| send_vectored(a.as_fd(), &[IoSlice::new(b"v")]).unwrap());
    assert_only(&c, Syscall::Sendmsg, 1);
    let (_, c) = delta(|| shutdown(a.as_fd(), Shutdown::Both).unwrap());
    assert_only(&c, Syscall::Shutdown, 1);

    let (da, db) = socketpair(Domain::Unix, SockType::Datagram).unwrap();
    let (_, c) = delta(|| send_to(da.as_fd(), b"d", &SockAddr::Unix(UnixAddr::Unnamed)));
    assert_only(&c, Syscall::Sendto, 1);
    send(da.as_fd(), b"d").unwrap();
    let (_, c) = delta(|| recv_from(db.as_fd(), &mut [0u8; 4]).unwrap());
    assert_only(&c, Syscall::Recvfrom, 1);

    let exe = std::env::current_exe().unwrap();
    let (file, c) = delta(|| open_readonly(&exe).unwrap());
    assert_only(&c, Syscall::Open, 1);
    let (_, c) = delta(|| open_dev_null().unwrap());
    assert_only(&c, Syscall::Open, 1);
    let (_, c) = delta(|| dup(file.as_fd()).unwrap());
    assert_only(&c, Syscall::Fcntl, 1);
    let (x, y) = socketpair_stream().unwrap();
    let mut off = 0;
    let (_, c) = delta(|| sendfile(x.as_fd(), file.as_fd(), &mut off, 16).unwrap());
    // sendfile has no MSG_NOSIGNAL: the wrapper blocks SIGPIPE around it (and restores the
    // mask), checking first whether one is already pending and consuming one it raised.
    assert_eq!(
        c.iter().collect::<Vec<_>>(),
        vec![
            (Syscall::Sendfile, 1),
            (Syscall::Sigprocmask, 2),
            (Syscall::Sigpending, 1),
            (Syscall::Sigtimedwait, 1)
        ],
        "counts: {c}"
    );
    drop(y);

    let (_, c) = delta(|| nofile_limit().unwrap());
    assert_only(&c, Syscall::Getrlimit, 1);
    // The limit is process-wide: only a call the kernel rejects (soft >
    // hard) is made here, so the other tests of this process are unaffected.
    let (r, c) = delta(|| set_nofile_limit(10, 5));
    assert_eq!(r.unwrap_err().raw_os_error(), Some(errno::EINVAL));
    assert_only(&c, Syscall::Setrlimit, 1);

    let numeric = AddrHints {
        numeric_host: true,
        ..AddrHints::default()
    };
    let (_, c) = delta(|| getaddrinfo("127.0.0.1", 80, numeric).unwrap());
    assert_only(&c, Syscall::Getaddrinfo, 1);
    assert_eq!(c.total_syscalls(), 0, "a library call: {c}");
    let (_, c) = delta(|| getnameinfo(&"127.0.0.1:80".parse().unwrap(), true).unwrap());
    assert_only(&c, Syscall::Getnameinfo, 1);
    assert_eq!(c.total_syscalls(), 0, "a library call: {c}");
}
