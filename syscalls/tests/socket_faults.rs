//! Fault injection on the socket, file and resolver wrappers: injected
//! errors come back unchanged and counted, and injected `EINTR`s follow the
//! crate's policy (retried by `accept4`, the sends and receives, `sendfile`
//! and `open`; turned into `EINPROGRESS`, not retried, by `connect`).
#![cfg(feature = "fault-injection")]

mod common;

use std::io::{ErrorKind, IoSlice};
use std::net::{Ipv4Addr, SocketAddr};

use evloop_syscalls::*;

use common::{Clean, delta};

/// Waits up to 10 s for `fd` to report `interest`.
fn wait(fd: BorrowedFd<'_>, interest: EpollFlags) {
    let ep = epoll_create1().unwrap();
    epoll_ctl_add(ep.as_fd(), fd.as_raw_fd(), interest, 0).unwrap();
    let mut ev = [EpollEvent::zeroed(); 1];
    assert_eq!(epoll_wait(ep.as_fd(), &mut ev, 10_000).unwrap(), 1, "timed out");
}

/// A loopback listener with one connection queued, and the client end.
fn listener_with_pending_connection() -> (OwnedFd, OwnedFd) {
    let l = socket(Domain::Inet, SockType::Stream).unwrap();
    bind(l.as_fd(), &SocketAddr::from((Ipv4Addr::LOCALHOST, 0)).into()).unwrap();
    listen(l.as_fd(), 8).unwrap();
    let addr = local_addr(l.as_fd()).unwrap();
    let c = socket(Domain::Inet, SockType::Stream).unwrap();
    match connect(c.as_fd(), &addr) {
        Ok(()) => {}
        Err(e) => assert_eq!(e.raw_os_error(), Some(errno::EINPROGRESS), "{e}"),
    }
    wait(l.as_fd(), EpollFlags::IN);
    (l, c)
}

#[test]
fn injected_emfile_on_accept4_is_returned_and_the_connection_stays_queued() {
    let _c = Clean::new();
    let (l, _client) = listener_with_pending_connection();
    fault::fail_nth(Syscall::Accept4, 1, libc::EMFILE);
    let (r, c) = delta(|| accept4(l.as_fd()));
    assert_eq!(r.unwrap_err().raw_os_error(), Some(errno::EMFILE));
    assert_eq!(c.get(Syscall::Accept4), 1, "counted, not retried: {c}");
    let (fd, _peer) = accept4(l.as_fd()).expect("the connection is still queued");
    drop(fd);
}

#[test]
fn injected_econnaborted_on_accept4_passes_through() {
    let _c = Clean::new();
    let (l, _client) = listener_with_pending_connection();
    fault::fail_nth(Syscall::Accept4, 1, libc::ECONNABORTED);
    let e = accept4(l.as_fd()).unwrap_err();
    assert_eq!(e.raw_os_error(), Some(errno::ECONNABORTED));
    assert_eq!(e.kind(), ErrorKind::ConnectionAborted);
    assert!(accept4(l.as_fd()).is_ok());
}

#[test]
fn injected_eintr_on_accept4_is_retried() {
    let _c = Clean::new();
    let (l, _client) = listener_with_pending_connection();
    fault::fail_times(Syscall::Accept4, 1, 2, libc::EINTR);
    let (r, c) = delta(|| accept4(l.as_fd()));
    assert!(r.is_ok());
    assert_eq!(
        c.get(Syscall::Accept4),
        3,
        "two interrupted attempts and the real one: {c}"
    );
}

#[test]
fn injected_eintr_on_connect_becomes_einprogress_without_retry() {
    let _c = Clean::new();
    let l = socket(Domain::Inet, SockType::Stream).unwrap();
    bind(l.as_fd(), &SocketAddr::from((Ipv4Addr::LOCALHOST, 0)).into()).unwrap();
    listen(l.as_fd(), 8).unwrap();
    let addr = local_addr(l.as_fd()).unwrap();
    let s = socket(Domain::Inet, SockType::Stream).unwrap();
    fault::fail_nth(Syscall::Connect, 1, libc::EINTR);
    let (r, c) = delta(|| connect(s.as_fd(), &addr));
    assert_eq!(r.unwrap_err().raw_os_error(), Some(errno::EINPROGRESS));
    assert_eq!(c.get(Syscall::Connect), 1, "EINTR from connect is not retried: {c}");
    assert_eq!(c.total_syscalls(), 1, "{c}");
    // Other injected errors pass through unchanged.
    fault::fail_nth(Syscall::Connect, 1, libc::ENETUNREACH);
    assert_eq!(
        connect(s.as_fd(), &addr).unwrap_err().raw_os_error(),
        Some(errno::ENETUNREACH)
    );
}

#[test]
fn injected_eintr_on_sends_and_receives_is_retried() {
    let _c = Clean::new();
    let (a, b) = socketpair(Domain::Unix, SockType::Stream).unwrap();

    fault::fail_nth(Syscall::Send, 1, libc::EINTR);
    let (n, c) = delta(|| send(a.as_fd(), b"hello"));
    assert_eq!(n.unwrap(), 5);
    assert_eq!(c.get(Syscall::Send), 2, "{c}");

    fault::fail_nth(Syscall::Sendmsg, 1, libc::EINTR);
    let (n, c) = delta(|| send_vectored(a.as_fd(), &[IoSlice::new(b"!")]));
    assert_eq!(n.unwrap(), 1);
    assert_eq!(c.get(Syscall::Sendmsg), 2, "{c}");

    fault::fail_nth(Syscall::Recv, 1, libc::EINTR);
    let mut buf = [0u8; 3];
    let (n, c) = delta(|| recv_peek(b.as_fd(), &mut buf));
    assert_eq!(n.unwrap(), 3);
    assert_eq!(c.get(Syscall::Recv), 2, "{c}");

    fault::fail_times(Syscall::Recv, 1, 3, libc::EINTR);
    let mut buf = [0u8; 16];
    let (n, c) = delta(|| recv(b.as_fd(), &mut buf));
    assert_eq!(n.unwrap(), 6);
    assert_eq!(&buf[..6], b"hello!");
    assert_eq!(c.get(Syscall::Recv), 4, "{c}");

    let (x, y) = socketpair(Domain::Unix, SockType::Datagram).unwrap();
    fault::fail_nth(Syscall::Sendto, 1, libc::EINTR);
    let (n, c) = delta(|| send_to(x.as_fd(), b"dg", &SockAddr::Unix(UnixAddr::Unnamed)));
    // A connected datagram socket: Linux ignores or refuses the address; in
    // either case the EINTR was retried (two attempts).
    assert_eq!(c.get(Syscall::Sendto), 2, "{c} {n:?}");
    if n.is_err() {
        send(x.as_fd(), b"dg").unwrap();
    }
    fault::fail_nth(Syscall::Recvfrom, 1, libc::EINTR);
    let (r, c) = delta(|| recv_from(y.as_fd(), &mut buf));
    assert_eq!(r.unwrap(), (2, SockAddr::Unix(UnixAddr::Unnamed)));
    assert_eq!(c.get(Syscall::Recvfrom), 2, "{c}");
}

#[test]
fn injected_eintr_on_sendfile_and_open_is_retried() {
    let _c = Clean::new();
    let exe = std::env::current_exe().unwrap();
    fault::fail_nth(Syscall::Open, 1, libc::EINTR);
    let (f, c) = delta(|| open_readonly(&exe));
    let f = f.unwrap();
    assert_eq!(c.get(Syscall::Open), 2, "{c}");

    let (a, b) = socketpair_stream().unwrap();
    fault::fail_nth(Syscall::Sendfile, 1, libc::EINTR);
    let mut off = 1;
    let (n, c) = delta(|| sendfile(a.as_fd(), f.as_fd(), &mut off, 3));
    assert_eq!(n.unwrap(), 3);
    assert_eq!(off, 4);
    assert_eq!(c.get(Syscall::Sendfile), 2, "{c}");
    let mut buf = [0u8; 3];
    assert_eq!(recv(b.as_fd(), &mut buf).unwrap(), 3);
    assert_eq!(&buf, b"ELF");

    // Injected "not supported here" surfaces, for the caller's fallback.
    fault::fail_nth(Syscall::Sendfile, 1, libc::ENOSYS);
    let mut off = 0;
    let e = sendfile(a.as_fd(), f.as_fd(), &mut off, 3).unwrap_err();
    assert_eq!(e.raw_os_error(), Some(errno::ENOSYS));
    assert_eq!(off, 0, "offset unchanged on error");
}

#[test]
fn injected_errors_on_creation_options_and_limits_are_returned() {
    let _c = Clean::new();
    fault::fail_nth(Syscall::Socket, 1, libc::EMFILE);
    assert_eq!(
        socket(Domain::Inet, SockType::Stream).unwrap_err().raw_os_error(),
        Some(errno::EMFILE)
    );
    fault::fail_nth(Syscall::Socketpair, 1, libc::ENFILE);
    assert_eq!(
        socketpair(Domain::Unix, SockType::Datagram).unwrap_err().raw_os_error(),
        Some(errno::ENFILE)
    );
    fault::fail_nth(Syscall::Open, 1, libc::EMFILE);
    assert_eq!(open_dev_null().unwrap_err().raw_os_error(), Some(errno::EMFILE));

    let s = socket(Domain::Inet, SockType::Stream).unwrap();
    fault::fail_nth(Syscall::Fcntl, 1, libc::EMFILE);
    assert_eq!(dup(s.as_fd()).unwrap_err().raw_os_error(), Some(errno::EMFILE));
    fault::fail_nth(Syscall::Bind, 1, libc::EADDRINUSE);
    let any: SockAddr = SocketAddr::from((Ipv4Addr::LOCALHOST, 0)).into();
    assert_eq!(bind(s.as_fd(), &any).unwrap_err().kind(), ErrorKind::AddrInUse);
    fault::fail_nth(Syscall::Listen, 1, libc::EOPNOTSUPP);
    assert!(listen(s.as_fd(), 1).is_err());
    fault::fail_nth(Syscall::Getsockopt, 1, libc::EBADF);
    assert_eq!(
        take_socket_error(s.as_fd()).unwrap_err().raw_os_error(),
        Some(errno::EBADF)
    );
    fault::fail_nth(Syscall::Setsockopt, 1, libc::ENOPROTOOPT);
    assert!(set_nodelay(s.as_fd(), true).is_err());
    fault::fail_nth(Syscall::Getsockname, 1, libc::ENOBUFS);
    assert!(local_addr(s.as_fd()).is_err());
    fault::fail_nth(Syscall::Getpeername, 1, libc::ENOTCONN);
    assert!(peer_addr(s.as_fd()).is_err());
    fault::fail_nth(Syscall::Shutdown, 1, libc::ENOTCONN);
    assert!(shutdown(s.as_fd(), Shutdown::Both).is_err());
    fault::fail_nth(Syscall::Getrlimit, 1, libc::EPERM);
    assert_eq!(nofile_limit().unwrap_err().raw_os_error(), Some(errno::EPERM));
    fault::fail_nth(Syscall::Setrlimit, 1, libc::EPERM);
    assert_eq!(set_nofile_limit(1, 1).unwrap_err().raw_os_error(), Some(errno::EPERM));
    assert_eq!(fault::pending(), 0);
}

#[test]
fn injected_errors_on_resolver_calls_skip_the_c_library() {
    let _c = Clean::new();
    let numeric = AddrHints {
        numeric_host: true,
        ..AddrHints::default()
    };
    fault::fail_nth(Syscall::Getaddrinfo, 1, libc::EAGAIN);
    let (r, c) = delta(|| getaddrinfo("127.0.0.1", 1, numeric));
    assert_eq!(r.unwrap_err().raw_os_error(), Some(errno::EAGAIN));
    assert_eq!(c.get(Syscall::Getaddrinfo), 1);
    fault::fail_nth(Syscall::Getnameinfo, 1, libc::ENOMEM);
    let e = getnameinfo(&"127.0.0.1:1".parse().unwrap(), true).unwrap_err();
    assert_eq!(e.raw_os_error(), Some(errno::ENOMEM));
    assert!(
        getaddrinfo("127.0.0.1", 1, numeric).is_ok(),
        "only the first call fails"
    );
}
