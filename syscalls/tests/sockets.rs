//! Sockets on loopback only (127.0.0.1, ::1, abstract and temp-dir Unix
//! sockets): TCP connect/accept/send/recv/shutdown, refused and reset
//! connections (errors, never `SIGPIPE`), UDP, Unix pathname, abstract and
//! unnamed addresses, `sendfile`, socket options, and descriptor flags.

use std::io::{ErrorKind, IoSlice};
use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};

use evloop_syscalls::counters;
use evloop_syscalls::*;

/// How long any wait in these tests may take before it counts as a hang.
const TIMEOUT: Duration = Duration::from_secs(10);

fn v4_any_port() -> SockAddr {
    SocketAddr::from((Ipv4Addr::LOCALHOST, 0)).into()
}

fn v6_any_port() -> SockAddr {
    SocketAddr::from((Ipv6Addr::LOCALHOST, 0)).into()
}

/// Waits until `fd` reports something of `interest` (or ERR/HUP, which are
/// always reported); panics after [`TIMEOUT`].
fn wait(fd: BorrowedFd<'_>, interest: EpollFlags) -> EpollFlags {
    let ep = epoll_create1().unwrap();
    epoll_ctl_add(ep.as_fd(), fd.as_raw_fd(), interest, 0).unwrap();
    let mut ev = [EpollEvent::zeroed(); 1];
    let deadline = clock_monotonic() + TIMEOUT;
    loop {
        let now = clock_monotonic();
        assert!(now < deadline, "timed out waiting for {interest:?}");
        if epoll_wait_timeout(ep.as_fd(), &mut ev, Some(deadline - now)).unwrap() == 1 {
            return ev[0].flags();
        }
    }
}

/// A listening TCP socket on `addr` and the address it got.
fn tcp_listener(addr: &SockAddr) -> (OwnedFd, SockAddr) {
    let l = socket(addr.domain(), SockType::Stream).unwrap();
    set_reuseaddr(l.as_fd(), true).unwrap();
    bind(l.as_fd(), addr).unwrap();
    listen(l.as_fd(), 16).unwrap();
    let bound = local_addr(l.as_fd()).unwrap();
    (l, bound)
}

/// Connects the non-blocking `fd` to `addr` the way the loop does:
/// `EINPROGRESS` (or, on loopback, immediate success), then writability and
/// no pending error. Returns whether the connect was in progress.
fn connect_and_wait(fd: BorrowedFd<'_>, addr: &SockAddr) -> bool {
    let in_progress = match connect(fd, addr) {
        Ok(()) => false,
        Err(e) => {
            assert_eq!(e.raw_os_error(), Some(errno::EINPROGRESS), "{e}");
            true
        }
    };
    let f = wait(fd, EpollFlags::OUT);
    assert!(f.contains(EpollFlags::OUT), "{f:?}");
    assert!(take_socket_error(fd).unwrap().is_none());
    in_progress
}

/// Accepts one connection, waiting for it if needed.
fn accept_one(l: BorrowedFd<'_>) -> (OwnedFd, SockAddr) {
    let deadline = clock_monotonic() + TIMEOUT;
    loop {
        match accept4(l) {
            Ok(x) => return x,
            Err(e) if e.kind() == ErrorKind::WouldBlock && clock_monotonic() < deadline => {
                wait(l, EpollFlags::IN);
            }
            Err(e) => panic!("accept4: {e}"),
        }
    }
}

/// Receives exactly `n` bytes from the non-blocking stream `fd`.
fn recv_exact(fd: BorrowedFd<'_>, n: usize) -> Vec<u8> {
    let mut out = vec![0u8; n];
    let mut got = 0;
    while got < n {
        match recv(fd, &mut out[got..]) {
            Ok(0) => panic!("EOF after {got} of {n} bytes"),
            Ok(k) => got += k,
            Err(e) if e.kind() == ErrorKind::WouldBlock => {
                wait(fd, EpollFlags::IN);
            }
            Err(e) => panic!("recv: {e}"),
        }
    }
    out
}

/// A connected TCP pair on 127.0.0.1: (client, server side).
fn tcp_pair() -> (OwnedFd, OwnedFd) {
    let (l, addr) = tcp_listener(&v4_any_port());
    let c = socket(Domain::Inet, SockType::Stream).unwrap();
    connect_and_wait(c.as_fd(), &addr);
    let (s, _) = accept_one(l.as_fd());
    (c, s)
}

/// `true` when this machine can bind a socket to `[::1]`.
fn ipv6_loopback_available() -> bool {
    let Ok(s) = socket(Domain::Inet6, SockType::Datagram) else {
        return false;
    };
    bind(s.as_fd(), &v6_any_port()).is_ok()
}

/// A unique name for this process and call, for abstract sockets and temp
/// dirs, so parallel tests (and parallel test runs) never collide.
fn unique(tag: &str) -> String {
    static N: AtomicU32 = AtomicU32::new(0);
    format!(
        "evloop-sys-{}-{}-{tag}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    )
}

/// A fresh directory under the system temp dir, removed on drop.
struct TempDir(PathBuf);

impl TempDir {
    fn new(tag: &str) -> Self {
        let p = std::env::temp_dir().join(unique(tag));
        std::fs::create_dir(&p).unwrap();
        TempDir(p)
    }
    fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// (`FD_CLOEXEC` set, `O_NONBLOCK` set) for `fd`, read with raw `fcntl`.
fn cloexec_nonblock(fd: BorrowedFd<'_>) -> (bool, bool) {
    // SAFETY: F_GETFD takes no third argument and reads no user memory;
    // `fd` is a live borrowed descriptor.
    let fd_flags = unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_GETFD) };
    // SAFETY: as above, for F_GETFL.
    let fl_flags = unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_GETFL) };
    assert!(fd_flags >= 0 && fl_flags >= 0, "fcntl failed on a live fd");
    (fd_flags & libc::FD_CLOEXEC != 0, fl_flags & libc::O_NONBLOCK != 0)
}

// ---------------------------------------------------------------------------
// SIGPIPE detection
// ---------------------------------------------------------------------------

/// Blocks `SIGPIPE` for the current thread while alive. A blocked signal is
/// never discarded (even though Rust ignores `SIGPIPE`): it stays pending on
/// the thread that raised it, where [`SigpipeBlocked::take_pending`] finds
/// it. That proves whether a call raised `SIGPIPE`, without `strace` and
/// without disturbing other test threads (the signal a send raises is
/// directed at the calling thread).
struct SigpipeBlocked {
    old: libc::sigset_t,
}

fn sigpipe_set() -> libc::sigset_t {
    // SAFETY: sigset_t is a plain bit array; all-zero is a valid (empty)
    // value, and sigemptyset/sigaddset only write the local `set`.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, libc::SIGPIPE);
        set
    }
}

impl SigpipeBlocked {
    fn new() -> Self {
        let set = sigpipe_set();
        // SAFETY: as in `sigpipe_set`, all-zero is a valid sigset_t.
        let mut old: libc::sigset_t = unsafe { std::mem::zeroed() };
        // SAFETY: pthread_sigmask reads `set` and writes the previous mask to
        // `old`, both live locals of type sigset_t.
        let rc = unsafe { libc::pthread_sigmask(libc::SIG_BLOCK, &set, &mut old) };
        assert_eq!(rc, 0);
        let guard = SigpipeBlocked { old };
        guard.take_pending(); // start clean
        guard
    }

    /// `true` if a `SIGPIPE` was pending for this thread (or the process);
    /// consumes it.
    fn take_pending(&self) -> bool {
        let set = sigpipe_set();
        let zero = libc::timespec { tv_sec: 0, tv_nsec: 0 };
        // SAFETY: sigtimedwait reads `set` and `zero` (live locals) and, with
        // a NULL info pointer, writes nothing; a zero timeout never blocks.
        let sig = unsafe { libc::sigtimedwait(&set, std::ptr::null_mut(), &zero) };
        sig == libc::SIGPIPE
    }
}

impl Drop for SigpipeBlocked {
    fn drop(&mut self) {
        self.take_pending();
        // SAFETY: restores the mask saved in `self.old`, a live sigset_t; the
        // previous-mask pointer is NULL, so nothing is written.
        unsafe { libc::pthread_sigmask(libc::SIG_SETMASK, &self.old, std::ptr::null_mut()) };
    }
}

// ---------------------------------------------------------------------------
// TCP
// ---------------------------------------------------------------------------

#[test]
fn tcp_connect_accept_send_recv_and_half_close() {
    let (l, laddr) = tcp_listener(&v4_any_port());
    let SockAddr::Inet(sa) = &laddr else {
        panic!("{laddr:?}")
    };
    assert_eq!(sa.ip(), Ipv4Addr::LOCALHOST);
    assert_ne!(sa.port(), 0, "the kernel picked a port");
    assert_eq!(socket_type(l.as_fd()).unwrap(), SockType::Stream);

    let c = socket(Domain::Inet, SockType::Stream).unwrap();
    if !connect_and_wait(c.as_fd(), &laddr) {
        eprintln!("note: loopback connect completed inside connect() (no EINPROGRESS)");
    }
    let (s, peer) = accept_one(l.as_fd());
    assert_eq!(
        peer,
        local_addr(c.as_fd()).unwrap(),
        "accept4 reports the client's address"
    );
    assert_eq!(peer_addr(c.as_fd()).unwrap(), laddr);
    assert_eq!(local_addr(s.as_fd()).unwrap(), laddr);
    assert_eq!(peer_addr(s.as_fd()).unwrap(), peer);
    assert_eq!(laddr.to_string(), format!("127.0.0.1:{}", sa.port()));

    let mut buf = [0u8; 16];
    assert_eq!(recv(s.as_fd(), &mut buf).unwrap_err().kind(), ErrorKind::WouldBlock);
    assert_eq!(send(c.as_fd(), b"hello").unwrap(), 5);
    assert_eq!(recv_exact(s.as_fd(), 5), b"hello");

    // MSG_PEEK leaves the data queued.
    assert_eq!(send(s.as_fd(), b"peek").unwrap(), 4);
    wait(c.as_fd(), EpollFlags::IN);
    let n = recv_peek(c.as_fd(), &mut buf).unwrap();
    assert!(n > 0 && n <= 4 && buf[..n] == b"peek"[..n]);
    assert_eq!(recv_exact(c.as_fd(), 4), b"peek");

    // Half-close: the server reads EOF, and can still send back.
    shutdown(c.as_fd(), Shutdown::Write).unwrap();
    let f = wait(s.as_fd(), EpollFlags::IN | EpollFlags::RDHUP);
    assert!(f.contains(EpollFlags::RDHUP), "{f:?}");
    assert_eq!(recv(s.as_fd(), &mut buf).unwrap(), 0, "EOF after shutdown(Write)");
    assert_eq!(recv(s.as_fd(), &mut buf).unwrap(), 0, "and it stays EOF");
    assert_eq!(send(s.as_fd(), b"back").unwrap(), 4);
    assert_eq!(recv_exact(c.as_fd(), 4), b"back");
    assert_eq!(
        send(c.as_fd(), b"x").unwrap_err().kind(),
        ErrorKind::BrokenPipe,
        "no sending after shutdown(Write)"
    );
}

#[test]
fn tcp_over_ipv6_loopback() {
    if !ipv6_loopback_available() {
        eprintln!("skipping: IPv6 loopback [::1] is unavailable on this machine");
        return;
    }
    let (l, laddr) = tcp_listener(&v6_any_port());
    assert!(laddr.to_string().starts_with("[::1]:"), "{laddr}");
    let c = socket(Domain::Inet6, SockType::Stream).unwrap();
    connect_and_wait(c.as_fd(), &laddr);
    let (s, peer) = accept_one(l.as_fd());
    assert_eq!(peer.domain(), Domain::Inet6);
    assert_eq!(send(s.as_fd(), b"six").unwrap(), 3);
    assert_eq!(recv_exact(c.as_fd(), 3), b"six");
}

#[test]
fn connect_to_a_closed_port_is_refused() {
    // A bound but not listening socket holds the port, so nothing else can
    // take it meanwhile, and the kernel answers SYNs to it with RST.
    let holder = socket(Domain::Inet, SockType::Stream).unwrap();
    bind(holder.as_fd(), &v4_any_port()).unwrap();
    let addr = local_addr(holder.as_fd()).unwrap();

    let c = socket(Domain::Inet, SockType::Stream).unwrap();
    match connect(c.as_fd(), &addr) {
        Err(e) if e.raw_os_error() == Some(errno::EINPROGRESS) => {
            let f = wait(c.as_fd(), EpollFlags::OUT);
            assert!(f.intersects(EpollFlags::ERR | EpollFlags::HUP), "{f:?}");
            let err = take_socket_error(c.as_fd()).unwrap().expect("a pending error");
            assert_eq!(err.raw_os_error(), Some(errno::ECONNREFUSED), "{err}");
            assert_eq!(err.kind(), ErrorKind::ConnectionRefused);
            assert!(
                take_socket_error(c.as_fd()).unwrap().is_none(),
                "reading SO_ERROR clears it"
            );
        }
        Err(e) => {
            eprintln!("note: loopback refused inside connect()");
            assert_eq!(e.raw_os_error(), Some(errno::ECONNREFUSED), "{e}");
        }
        Ok(()) => panic!("connected to a port nobody listens on"),
    }
    assert_eq!(peer_addr(c.as_fd()).unwrap_err().raw_os_error(), Some(errno::ENOTCONN));
}

#[test]
fn send_after_reset_is_an_error_and_never_sigpipe() {
    let (c, s) = tcp_pair();
    // Close with linger {1, 0}: RST instead of FIN.
    set_linger_zero(s.as_fd()).unwrap();
    drop(s);
    wait(c.as_fd(), EpollFlags::IN);

    let guard = SigpipeBlocked::new();
    // The first send reports the reset (ECONNRESET), the next ones EPIPE;
    // with MSG_NOSIGNAL none of them raises SIGPIPE.
    let mut kinds = Vec::new();
    for _ in 0..3 {
        let e = send(c.as_fd(), b"x").expect_err("send after RST must fail");
        assert!(
            matches!(e.kind(), ErrorKind::BrokenPipe | ErrorKind::ConnectionReset),
            "{e}"
        );
        kinds.push(e.kind());
    }
    let e = send_vectored(c.as_fd(), &[IoSlice::new(b"y")]).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::BrokenPipe, "{e}");
    assert!(!guard.take_pending(), "send/sendmsg raised SIGPIPE: {kinds:?}");
    assert!(kinds.contains(&ErrorKind::BrokenPipe), "{kinds:?}");

    // Control: write(2) on the same socket does raise it, so the check above
    // would have seen a missing MSG_NOSIGNAL.
    assert_eq!(write(c.as_fd(), b"z").unwrap_err().kind(), ErrorKind::BrokenPipe);
    assert!(guard.take_pending(), "write(2) to a reset socket should raise SIGPIPE");
}

#[test]
fn send_to_a_closed_unix_peer_is_epipe_without_sigpipe() {
    let (a, b) = socketpair(Domain::Unix, SockType::Stream).unwrap();
    drop(b);
    let guard = SigpipeBlocked::new();
    let e = send(a.as_fd(), b"x").unwrap_err();
    assert_eq!(e.raw_os_error(), Some(errno::EPIPE), "{e}");
    assert_eq!(e.kind(), ErrorKind::BrokenPipe);
    assert_eq!(
        send_vectored(a.as_fd(), &[IoSlice::new(b"x")]).unwrap_err().kind(),
        ErrorKind::BrokenPipe
    );
    assert!(!guard.take_pending(), "send raised SIGPIPE");
    assert!(write(a.as_fd(), b"x").is_err());
    assert!(guard.take_pending(), "control: write(2) raises SIGPIPE");
}

#[test]
fn recv_after_reset_is_connection_reset() {
    let (c, s) = tcp_pair();
    set_linger_zero(s.as_fd()).unwrap();
    drop(s);
    wait(c.as_fd(), EpollFlags::IN);
    let e = recv(c.as_fd(), &mut [0u8; 4]).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::ConnectionReset, "{e}");
}

#[test]
fn send_vectored_round_trip_and_iov_max_clamp() {
    let (c, s) = tcp_pair();
    let n = send_vectored(
        c.as_fd(),
        &[IoSlice::new(b"ab"), IoSlice::new(b""), IoSlice::new(b"cde")],
    )
    .unwrap();
    assert_eq!(n, 5);
    assert_eq!(recv_exact(s.as_fd(), 5), b"abcde");
    assert_eq!(send_vectored(c.as_fd(), &[]).unwrap(), 0);

    // More buffers than IOV_MAX: clamped to a short send, not EMSGSIZE.
    let (a, b) = socketpair(Domain::Unix, SockType::Stream).unwrap();
    let one = [7u8];
    let bufs: Vec<IoSlice<'_>> = (0..IOV_MAX + 10).map(|_| IoSlice::new(&one)).collect();
    assert_eq!(send_vectored(a.as_fd(), &bufs).unwrap(), IOV_MAX);
    assert_eq!(recv_exact(b.as_fd(), IOV_MAX), vec![7u8; IOV_MAX]);
}

// ---------------------------------------------------------------------------
// UDP
// ---------------------------------------------------------------------------

fn udp_round_trip(any_port: &SockAddr) {
    let domain = any_port.domain();
    let a = socket(domain, SockType::Datagram).unwrap();
    let b = socket(domain, SockType::Datagram).unwrap();
    bind(a.as_fd(), any_port).unwrap();
    bind(b.as_fd(), any_port).unwrap();
    let (a_addr, b_addr) = (local_addr(a.as_fd()).unwrap(), local_addr(b.as_fd()).unwrap());
    assert_eq!(socket_type(a.as_fd()).unwrap(), SockType::Datagram);

    let mut buf = [0u8; 16];
    assert_eq!(
        recv_from(a.as_fd(), &mut buf).unwrap_err().kind(),
        ErrorKind::WouldBlock
    );
    assert_eq!(send_to(b.as_fd(), b"ping", &a_addr).unwrap(), 4);
    assert_eq!(send_to(b.as_fd(), b"pong!", &a_addr).unwrap(), 5);
    wait(a.as_fd(), EpollFlags::IN);
    // Boundaries are kept: two datagrams, two receives.
    assert_eq!(recv_from(a.as_fd(), &mut buf).unwrap(), (4, b_addr.clone()));
    assert_eq!(&buf[..4], b"ping");
    assert_eq!(recv_from(a.as_fd(), &mut buf).unwrap(), (5, b_addr.clone()));
    assert_eq!(&buf[..5], b"pong!");

    // A datagram longer than the buffer is truncated, the rest dropped.
    assert_eq!(send_to(a.as_fd(), b"0123456789", &b_addr).unwrap(), 10);
    wait(b.as_fd(), EpollFlags::IN);
    let mut small = [0u8; 4];
    assert_eq!(recv_from(b.as_fd(), &mut small).unwrap(), (4, a_addr.clone()));
    assert_eq!(&small, b"0123");
    assert_eq!(recv(b.as_fd(), &mut buf).unwrap_err().kind(), ErrorKind::WouldBlock);

    // A connected datagram socket uses send/recv.
    connect(b.as_fd(), &a_addr).unwrap();
    assert_eq!(peer_addr(b.as_fd()).unwrap(), a_addr);
    assert_eq!(send(b.as_fd(), b"c").unwrap(), 1);
    wait(a.as_fd(), EpollFlags::IN);
    assert_eq!(recv(a.as_fd(), &mut buf).unwrap(), 1);
}

#[test]
fn udp_send_to_recv_from_ipv4() {
    udp_round_trip(&v4_any_port());
}

#[test]
fn udp_send_to_recv_from_ipv6() {
    if !ipv6_loopback_available() {
        eprintln!("skipping: IPv6 loopback [::1] is unavailable on this machine");
        return;
    }
    udp_round_trip(&v6_any_port());
}

// ---------------------------------------------------------------------------
// Unix sockets
// ---------------------------------------------------------------------------

/// Listener on `addr`, one client connection, address checks, data both
/// ways.
fn unix_stream_round_trip(addr: &SockAddr) {
    let l = socket(Domain::Unix, SockType::Stream).unwrap();
    bind(l.as_fd(), addr).unwrap();
    listen(l.as_fd(), 4).unwrap();
    assert_eq!(&local_addr(l.as_fd()).unwrap(), addr);

    let c = socket(Domain::Unix, SockType::Stream).unwrap();
    // A Unix connect completes at once (never EINPROGRESS).
    connect(c.as_fd(), addr).unwrap();
    assert_eq!(&peer_addr(c.as_fd()).unwrap(), addr);
    assert_eq!(local_addr(c.as_fd()).unwrap(), SockAddr::Unix(UnixAddr::Unnamed));

    let (s, peer) = accept_one(l.as_fd());
    assert_eq!(peer, SockAddr::Unix(UnixAddr::Unnamed), "the client never bound");
    assert_eq!(&local_addr(s.as_fd()).unwrap(), addr);

    assert_eq!(send(c.as_fd(), b"to server").unwrap(), 9);
    assert_eq!(recv_exact(s.as_fd(), 9), b"to server");
    assert_eq!(send(s.as_fd(), b"to client").unwrap(), 9);
    assert_eq!(recv_exact(c.as_fd(), 9), b"to client");
    shutdown(s.as_fd(), Shutdown::Both).unwrap();
    wait(c.as_fd(), EpollFlags::IN);
    assert_eq!(recv(c.as_fd(), &mut [0u8; 4]).unwrap(), 0);
}

#[test]
fn unix_stream_pathname_round_trip() {
    let dir = TempDir::new("unix-path");
    let path = dir.path().join("s.sock");
    let addr = SockAddr::Unix(UnixAddr::pathname(&path).unwrap());
    assert_eq!(addr.to_string(), path.display().to_string());
    unix_stream_round_trip(&addr);

    // The socket file outlives the socket: binding again is EADDRINUSE
    // until it is removed.
    assert!(path.exists(), "bind created the socket file");
    let again = socket(Domain::Unix, SockType::Stream).unwrap();
    assert_eq!(
        bind(again.as_fd(), &addr).unwrap_err().raw_os_error(),
        Some(errno::EADDRINUSE)
    );
    std::fs::remove_file(&path).unwrap();
    bind(again.as_fd(), &addr).unwrap();
    drop(again);
    drop(dir);
    assert!(!path.exists(), "temp dir cleaned up");
}

#[test]
fn unix_stream_abstract_round_trip() {
    let name = unique("abstract-stream");
    let addr = SockAddr::Unix(UnixAddr::abstract_name(name.as_bytes()).unwrap());
    assert_eq!(addr.to_string(), format!("@{name}"));
    unix_stream_round_trip(&addr);
    // Abstract names vanish with their socket: binding again works at once.
    let again = socket(Domain::Unix, SockType::Stream).unwrap();
    bind(again.as_fd(), &addr).unwrap();
}

#[test]
fn abstract_names_are_exact_bytes_not_c_strings() {
    let base = unique("exact");
    let plain = UnixAddr::abstract_name(base.as_bytes()).unwrap();
    let mut with_nul = base.clone().into_bytes();
    with_nul.extend_from_slice(b"\0tail");
    let nul = UnixAddr::abstract_name(&with_nul).unwrap();
    let a = socket(Domain::Unix, SockType::Datagram).unwrap();
    let b = socket(Domain::Unix, SockType::Datagram).unwrap();
    bind(a.as_fd(), &plain.clone().into()).unwrap();
    // A different name (NUL and all), so no EADDRINUSE.
    bind(b.as_fd(), &nul.clone().into()).unwrap();
    assert_eq!(local_addr(a.as_fd()).unwrap(), SockAddr::Unix(plain));
    assert_eq!(local_addr(b.as_fd()).unwrap(), SockAddr::Unix(nul));
}

#[test]
fn unix_datagram_unnamed_and_named_senders() {
    let rx_addr = SockAddr::Unix(UnixAddr::abstract_name(unique("dgram-rx").as_bytes()).unwrap());
    let rx = socket(Domain::Unix, SockType::Datagram).unwrap();
    bind(rx.as_fd(), &rx_addr).unwrap();
    let mut buf = [0u8; 16];

    let unnamed = socket(Domain::Unix, SockType::Datagram).unwrap();
    assert_eq!(send_to(unnamed.as_fd(), b"anon", &rx_addr).unwrap(), 4);
    wait(rx.as_fd(), EpollFlags::IN);
    let (n, from) = recv_from(rx.as_fd(), &mut buf).unwrap();
    assert_eq!((n, &buf[..n]), (4, &b"anon"[..]));
    assert_eq!(from, SockAddr::Unix(UnixAddr::Unnamed));
    assert_eq!(from.to_string(), "(unnamed)");

    let named_addr = SockAddr::Unix(UnixAddr::abstract_name(unique("dgram-tx").as_bytes()).unwrap());
    let named = socket(Domain::Unix, SockType::Datagram).unwrap();
    bind(named.as_fd(), &named_addr).unwrap();
    send_to(named.as_fd(), b"me", &rx_addr).unwrap();
    wait(rx.as_fd(), EpollFlags::IN);
    assert_eq!(recv_from(rx.as_fd(), &mut buf).unwrap(), (2, named_addr));
}

#[test]
fn binding_unnamed_autobinds_an_abstract_name() {
    let s = socket(Domain::Unix, SockType::Datagram).unwrap();
    assert_eq!(local_addr(s.as_fd()).unwrap(), SockAddr::Unix(UnixAddr::Unnamed));
    bind(s.as_fd(), &SockAddr::Unix(UnixAddr::Unnamed)).unwrap();
    match local_addr(s.as_fd()).unwrap() {
        SockAddr::Unix(UnixAddr::Abstract(name)) => {
            assert_eq!(name.len(), 5, "five hex digits: {name:?}");
        }
        other => panic!("expected an autobound abstract name, got {other:?}"),
    }
}

#[test]
fn socketpair_ends_are_unnamed_and_datagram_pairs_keep_boundaries() {
    let (a, b) = socketpair(Domain::Unix, SockType::Datagram).unwrap();
    assert_eq!(local_addr(a.as_fd()).unwrap(), SockAddr::Unix(UnixAddr::Unnamed));
    assert_eq!(peer_addr(a.as_fd()).unwrap(), SockAddr::Unix(UnixAddr::Unnamed));
    send(a.as_fd(), b"one").unwrap();
    send(a.as_fd(), b"two").unwrap();
    let mut buf = [0u8; 16];
    assert_eq!(recv(b.as_fd(), &mut buf).unwrap(), 3);
    assert_eq!(recv(b.as_fd(), &mut buf).unwrap(), 3);
    assert_eq!(socket_type(b.as_fd()).unwrap(), SockType::Datagram);
    assert!(
        socketpair(Domain::Inet, SockType::Stream).is_err(),
        "Internet socket pairs do not exist"
    );
}

#[test]
fn unix_addr_constructors_reject_what_does_not_fit() {
    let kind = |r: std::io::Result<UnixAddr>| r.map(|_| ()).unwrap_err().kind();
    assert!(UnixAddr::pathname("p".repeat(UnixAddr::MAX_PATHNAME_LEN)).is_ok());
    assert_eq!(kind(UnixAddr::pathname("p".repeat(108))), ErrorKind::InvalidInput);
    assert_eq!(kind(UnixAddr::pathname("a\0b")), ErrorKind::InvalidInput);
    assert_eq!(kind(UnixAddr::pathname("")), ErrorKind::InvalidInput);
    assert!(UnixAddr::abstract_name(&[0xff; UnixAddr::MAX_ABSTRACT_LEN]).is_ok());
    assert!(UnixAddr::abstract_name(b"").is_ok());
    assert_eq!(kind(UnixAddr::abstract_name(&[1; 108])), ErrorKind::InvalidInput);

    // Built from the variants directly, the check happens at use, before
    // any system call.
    let s = socket(Domain::Unix, SockType::Stream).unwrap();
    let bad: SockAddr = UnixAddr::Pathname(PathBuf::from("p".repeat(200))).into();
    let before = counters::snapshot();
    assert_eq!(bind(s.as_fd(), &bad).unwrap_err().kind(), ErrorKind::InvalidInput);
    assert_eq!(connect(s.as_fd(), &bad).unwrap_err().kind(), ErrorKind::InvalidInput);
    assert_eq!(
        send_to(s.as_fd(), b"", &bad).unwrap_err().kind(),
        ErrorKind::InvalidInput
    );
    let c = counters::snapshot().since(&before);
    assert!(c.is_empty(), "rejected arguments make no call: {c}");
}

// ---------------------------------------------------------------------------
// sendfile
// ---------------------------------------------------------------------------

#[test]
fn sendfile_honours_offset_and_count() {
    let dir = TempDir::new("sendfile");
    let path = dir.path().join("data.bin");
    let data: Vec<u8> = (0..1000u32).map(|i| (i % 251) as u8).collect();
    std::fs::write(&path, &data).unwrap();
    let file = open_readonly(&path).unwrap();
    let (a, b) = socketpair(Domain::Unix, SockType::Stream).unwrap();

    let mut off = 100u64;
    let n = sendfile(a.as_fd(), file.as_fd(), &mut off, 300).unwrap();
    assert_eq!(n, 300);
    assert_eq!(off, 400, "offset advanced by the count");
    assert_eq!(recv_exact(b.as_fd(), 300), &data[100..400]);

    // Count beyond the end: a short transfer up to EOF, then 0 at EOF.
    let mut off = 900u64;
    assert_eq!(sendfile(a.as_fd(), file.as_fd(), &mut off, 500).unwrap(), 100);
    assert_eq!(off, 1000);
    assert_eq!(recv_exact(b.as_fd(), 100), &data[900..]);
    assert_eq!(sendfile(a.as_fd(), file.as_fd(), &mut off, 10).unwrap(), 0);
    assert_eq!(off, 1000);

    // The file's own position was never used nor moved.
    let mut head = [0u8; 10];
    assert_eq!(read(file.as_fd(), &mut head).unwrap(), 10);
    assert_eq!(head, data[..10]);

    // An offset that is not a valid off_t: EINVAL, no call made.
    let mut off = u64::MAX;
    let before = counters::snapshot();
    let e = sendfile(a.as_fd(), file.as_fd(), &mut off, 1).unwrap_err();
    assert_eq!(e.raw_os_error(), Some(errno::EINVAL));
    assert!(counters::snapshot().since(&before).is_empty());
    assert_eq!(off, u64::MAX, "unchanged on error");
}

#[test]
fn sendfile_to_a_tcp_socket() {
    let dir = TempDir::new("sendfile-tcp");
    let path = dir.path().join("f");
    std::fs::write(&path, b"over tcp via sendfile").unwrap();
    let file = open_readonly(&path).unwrap();
    let (c, s) = tcp_pair();
    let mut off = 5;
    assert_eq!(sendfile(c.as_fd(), file.as_fd(), &mut off, 3).unwrap(), 3);
    assert_eq!(recv_exact(s.as_fd(), 3), b"tcp");
}

// ---------------------------------------------------------------------------
// Options and flags
// ---------------------------------------------------------------------------

#[test]
fn socket_options_round_trip() {
    let (c, _s) = tcp_pair();
    let fd = c.as_fd();
    set_nodelay(fd, true).unwrap();
    assert!(nodelay(fd).unwrap());
    set_nodelay(fd, false).unwrap();
    assert!(!nodelay(fd).unwrap());
    set_keepalive(fd, true).unwrap();
    assert!(take_socket_error(fd).unwrap().is_none());

    set_recv_buffer_size(fd, 64 * 1024).unwrap();
    let r = recv_buffer_size(fd).unwrap();
    assert!(r >= 64 * 1024, "Linux doubles the request: {r}");
    set_send_buffer_size(fd, 64 * 1024).unwrap();
    let w = send_buffer_size(fd).unwrap();
    assert!(w >= 64 * 1024, "Linux doubles the request: {w}");
    // Out-of-range sizes are clamped, never an error or a panic.
    set_recv_buffer_size(fd, usize::MAX).unwrap();

    let l = socket(Domain::Inet, SockType::Stream).unwrap();
    set_reuseaddr(l.as_fd(), true).unwrap();
    set_reuseport(l.as_fd(), true).unwrap();
    let u = socket(Domain::Inet, SockType::Datagram).unwrap();
    set_broadcast(u.as_fd(), true).unwrap();
    if let Ok(s6) = socket(Domain::Inet6, SockType::Stream) {
        set_v6only(s6.as_fd(), true).unwrap();
    }
    // Not an option of Unix sockets: an error, not a panic.
    let (a, _b) = socketpair_stream().unwrap();
    let e = set_nodelay(a.as_fd(), true).unwrap_err();
    assert_eq!(e.raw_os_error(), Some(errno::EOPNOTSUPP), "{e}");
    assert!(nodelay(a.as_fd()).is_err());
    let v4 = socket(Domain::Inet, SockType::Stream).unwrap();
    let e = set_v6only(v4.as_fd(), true).unwrap_err();
    assert_eq!(e.raw_os_error(), Some(errno::ENOPROTOOPT), "{e}");
    // Not a socket at all.
    let (r, _w) = pipe2().unwrap();
    assert_eq!(
        socket_type(r.as_fd()).unwrap_err().raw_os_error(),
        Some(errno::ENOTSOCK)
    );
    assert_eq!(local_addr(r.as_fd()).unwrap_err().raw_os_error(), Some(errno::ENOTSOCK));
}

#[test]
fn every_created_socket_is_cloexec_and_nonblocking() {
    let mut fds: Vec<(String, OwnedFd)> = Vec::new();
    for domain in [Domain::Inet, Domain::Inet6, Domain::Unix] {
        for ty in [SockType::Stream, SockType::Datagram] {
            match socket(domain, ty) {
                Ok(fd) => fds.push((format!("socket({domain:?}, {ty:?})"), fd)),
                Err(e) if domain == Domain::Inet6 => eprintln!("skipping IPv6 socket: {e}"),
                Err(e) => panic!("socket({domain:?}, {ty:?}): {e}"),
            }
        }
    }
    for ty in [SockType::Stream, SockType::Datagram] {
        let (a, b) = socketpair(Domain::Unix, ty).unwrap();
        fds.push((format!("socketpair({ty:?}) a"), a));
        fds.push((format!("socketpair({ty:?}) b"), b));
    }
    let (l, addr) = tcp_listener(&v4_any_port());
    let c = socket(Domain::Inet, SockType::Stream).unwrap();
    connect_and_wait(c.as_fd(), &addr);
    let (accepted, _) = accept_one(l.as_fd());
    fds.push(("accept4".into(), accepted));
    fds.push(("open_dev_null".into(), open_dev_null().unwrap()));
    for (name, fd) in &fds {
        assert_eq!(cloexec_nonblock(fd.as_fd()), (true, true), "{name}");
    }
}

#[test]
fn odd_inputs_are_errors_or_edge_results_never_panics() {
    let s = socket(Domain::Inet, SockType::Stream).unwrap();
    assert_eq!(
        accept4(s.as_fd()).unwrap_err().raw_os_error(),
        Some(errno::EINVAL),
        "not listening"
    );
    assert_eq!(
        shutdown(s.as_fd(), Shutdown::Read).unwrap_err().raw_os_error(),
        Some(errno::ENOTCONN)
    );
    assert_eq!(
        send(s.as_fd(), b"x").unwrap_err().kind(),
        ErrorKind::BrokenPipe,
        "never connected"
    );
    // A negative backlog is capped by the kernel, not rejected.
    listen(s.as_fd(), -1).unwrap();
    set_send_buffer_size(s.as_fd(), 0).unwrap();
    assert!(
        send_buffer_size(s.as_fd()).unwrap() > 0,
        "the kernel enforces a minimum"
    );

    let (a, b) = socketpair_stream().unwrap();
    assert_eq!(send(a.as_fd(), b"").unwrap(), 0);
    // An empty buffer: EAGAIN while nothing is queued, 0 (not EOF) after.
    assert_eq!(recv(b.as_fd(), &mut []).unwrap_err().kind(), ErrorKind::WouldBlock);
    send(a.as_fd(), b"z").unwrap();
    assert_eq!(recv(b.as_fd(), &mut []).unwrap(), 0);
    assert_eq!(send_vectored(a.as_fd(), &[IoSlice::new(b"")]).unwrap(), 0);

    let (r, _w) = pipe2().unwrap();
    for e in [
        bind(r.as_fd(), &v4_any_port()).unwrap_err(),
        listen(r.as_fd(), 1).unwrap_err(),
        connect(r.as_fd(), &v4_any_port()).unwrap_err(),
        recv(r.as_fd(), &mut [0u8; 1]).unwrap_err(),
        recv_from(r.as_fd(), &mut [0u8; 1]).unwrap_err(),
        take_socket_error(r.as_fd()).unwrap_err(),
    ] {
        assert_eq!(e.raw_os_error(), Some(errno::ENOTSOCK), "{e}");
    }

    // sendfile with a huge count from an empty file: 0, offset unchanged.
    let null = open_dev_null().unwrap();
    let mut off = 0;
    match sendfile(a.as_fd(), null.as_fd(), &mut off, usize::MAX) {
        Ok(n) => assert_eq!((n, off), (0, 0)),
        // /dev/null cannot be a sendfile source on some kernels.
        Err(e) => assert_eq!(e.raw_os_error(), Some(errno::EINVAL), "{e}"),
    }
    // The wrong domain for an address is the kernel's error to report.
    let u = socket(Domain::Unix, SockType::Datagram).unwrap();
    assert!(bind(u.as_fd(), &v4_any_port()).is_err());
}

/// `sendfile(2)` has no `MSG_NOSIGNAL`: the wrapper blocks SIGPIPE around the call, consumes the
/// one an `EPIPE` raised, and restores the thread's mask. (That no SIGPIPE is *delivered* is
/// checked from outside with strace by the runtime's network fault tests.)
#[test]
fn sendfile_to_a_closed_peer_is_epipe_leaves_no_sigpipe_pending_and_restores_the_mask() {
    let exe = std::env::current_exe().unwrap();
    let file = open_readonly(&exe).unwrap();
    let (a, b) = socketpair_stream().unwrap();
    drop(b);
    let mut off = 0;
    let err = sendfile(a.as_fd(), file.as_fd(), &mut off, 4096).unwrap_err();
    assert_eq!(err.raw_os_error(), Some(libc::EPIPE), "{err}");
    let status = std::fs::read_to_string("/proc/thread-self/status").unwrap();
    let field = |key: &str| {
        status
            .lines()
            .find(|l| l.starts_with(key))
            .and_then(|l| u64::from_str_radix(l.split_whitespace().nth(1).unwrap_or("0"), 16).ok())
            .unwrap_or(0)
    };
    let sigpipe_bit = 1u64 << (libc::SIGPIPE - 1);
    assert_eq!(field("SigPnd:") & sigpipe_bit, 0, "a SIGPIPE is pending on the thread");
    assert_eq!(field("SigBlk:") & sigpipe_bit, 0, "the wrapper left SIGPIPE blocked");
}

#[test]
fn peek_datagram_len_gives_the_next_datagrams_real_length_and_leaves_it_queued() {
    let rx = socket(Domain::Inet, SockType::Datagram).unwrap();
    bind(rx.as_fd(), &v4_any_port()).unwrap();
    let to = local_addr(rx.as_fd()).unwrap();
    let tx = socket(Domain::Inet, SockType::Datagram).unwrap();
    assert_eq!(
        peek_datagram_len(rx.as_fd()).unwrap_err().kind(),
        ErrorKind::WouldBlock,
        "nothing queued"
    );
    send_to(tx.as_fd(), &[9u8; 3000], &to).unwrap();
    send_to(tx.as_fd(), b"", &to).unwrap();
    wait(rx.as_fd(), EpollFlags::IN);
    counters::reset();
    assert_eq!(
        peek_datagram_len(rx.as_fd()).unwrap(),
        3000,
        "longer than the 1-byte buffer"
    );
    assert_eq!(counters::snapshot().get(Syscall::Recv), 1);
    let mut buf = vec![0u8; 4000];
    assert_eq!(recv(rx.as_fd(), &mut buf).unwrap(), 3000, "still queued");
    assert_eq!(peek_datagram_len(rx.as_fd()).unwrap(), 0, "an empty datagram");
    assert_eq!(recv(rx.as_fd(), &mut buf).unwrap(), 0);
}

/// `SO_LINGER` with a timeout and `IP_TTL`: the values read back, the kernel's range checks, and
/// the errors of an option the socket's level does not have.
#[test]
fn linger_and_ttl_round_trip_with_the_kernels_errors() {
    use std::time::Duration;
    let (a, _b) = tcp_pair();
    assert_eq!(linger(a.as_fd()).unwrap(), None);
    set_linger(a.as_fd(), Some(Duration::from_millis(2500))).unwrap();
    assert_eq!(
        linger(a.as_fd()).unwrap(),
        Some(Duration::from_secs(2)),
        "whole seconds"
    );
    set_linger_zero(a.as_fd()).unwrap();
    assert_eq!(linger(a.as_fd()).unwrap(), Some(Duration::ZERO));
    set_linger(a.as_fd(), None).unwrap();
    assert_eq!(linger(a.as_fd()).unwrap(), None);

    assert_eq!(ttl(a.as_fd()).unwrap(), 64, "net.ipv4.ip_default_ttl");
    set_ttl(a.as_fd(), 9).unwrap();
    assert_eq!(ttl(a.as_fd()).unwrap(), 9);
    for bad in [0, 256, u32::MAX / 2] {
        let e = set_ttl(a.as_fd(), bad).unwrap_err();
        assert_eq!(e.raw_os_error(), Some(libc::EINVAL), "ttl {bad}");
    }
    let unix = socket(Domain::Unix, SockType::Stream).unwrap();
    assert_eq!(
        set_ttl(unix.as_fd(), 9).unwrap_err().raw_os_error(),
        Some(libc::EOPNOTSUPP)
    );
    assert_eq!(ttl(unix.as_fd()).unwrap_err().raw_os_error(), Some(libc::EOPNOTSUPP));
}
