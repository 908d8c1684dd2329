//! Readiness that was observed before an operation started never completes that operation.
//!
//! evloop registers a socket once, edge-triggered, as soon as it is created, and keeps the
//! readiness bits each event brings until a syscall proves them stale. A fresh, unconnected TCP
//! or Unix stream socket reports `EPOLLOUT|EPOLLHUP` at once: after one loop iteration its
//! registration says "writable, hung up". Those bits describe the socket *before* `connect(2)`
//! and say nothing about the connection `connect` starts; trusting them made `connect` report
//! success before the handshake (the peer's accept queue was full, the SYN dropped), and made a
//! later read spin on `EAGAIN` because the stale hang-up bit kept saying "readable".

use std::net::SocketAddr;
use std::os::fd::AsFd;
use std::sync::mpsc;
use std::time::Duration;

use evloop::net::{Domain, SockAddr, SockType, Socket};
use evloop::{event_loop::EventLoop, io::Interest, task::yield_now, time::timeout};
use evloop_syscalls as sys;
use evloop_tests::net::abstract_name;
use evloop_tests::run_bounded;

/// A TCP listener on loopback whose accept queue is full: `listen(0)` allows one queued
/// connection, which the returned client fills. The kernel drops further SYNs, so a new
/// connect stays in `SYN_SENT` (retransmitting after 1 s, 3 s, ...).
fn full_listener() -> (sys::OwnedFd, std::net::TcpStream, SocketAddr) {
    let fd = sys::socket(Domain::Inet, SockType::Stream).unwrap();
    sys::bind(fd.as_fd(), &SockAddr::Inet("127.0.0.1:0".parse().unwrap())).unwrap();
    sys::listen(fd.as_fd(), 0).unwrap();
    let addr = match sys::local_addr(fd.as_fd()).unwrap() {
        SockAddr::Inet(a) => a,
        other => panic!("not an IP address: {other}"),
    };
    // A blocking connect on loopback completes in the kernel without an accept.
    let filler = std::net::TcpStream::connect(addr).unwrap();
    (fd, filler, addr)
}

#[test]
fn connect_to_a_full_listener_waits_even_when_the_socket_already_looked_writable() {
    let lp = EventLoop::new().unwrap();
    run_bounded(&lp, async {
        let (_listener, _filler, addr) = full_listener();
        let sock = Socket::new(Domain::Inet, SockType::Stream).unwrap();
        // Let the loop poll once: the fresh socket's EPOLLOUT|EPOLLHUP reaches its registration.
        yield_now().await;
        yield_now().await;
        assert!(
            sock.async_fd().is_ready(Interest::Write),
            "precondition: an unconnected socket reports itself writable"
        );
        match timeout(Duration::from_millis(300), sock.connect(&SockAddr::Inet(addr))).await {
            // Still in SYN_SENT: the connect waits for the handshake, as it must.
            Err(_elapsed) => {}
            Ok(Ok(())) => {
                let peer = sock.peer_addr();
                panic!("connect reported success before the handshake (getpeername: {peer:?})");
            }
            Ok(Err(e)) => panic!("connect failed: {e}"),
        }
    });
}

#[test]
fn connect_completed_after_stale_readiness_is_really_connected() {
    // The same stale readiness, but the listener accepts: connect completes, and only once the
    // socket is connected (its peer address is known).
    let lp = EventLoop::new().unwrap();
    run_bounded(&lp, async {
        let listener = evloop::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let sock = Socket::new(Domain::Inet, SockType::Stream).unwrap();
        yield_now().await;
        yield_now().await;
        sock.connect(&SockAddr::Inet(addr)).await.unwrap();
        assert_eq!(sock.peer_addr().unwrap(), SockAddr::Inet(addr));
        let (_accepted, _) = listener.accept().await.unwrap();
    });
}

/// Runs `scenario` on its own thread and fails (instead of hanging) if it does not finish
/// within 10 s: a task that spins inside one poll never lets the loop's timers fire, so only
/// another thread can notice.
fn finishes_within_10s(what: &str, scenario: impl FnOnce() + Send + 'static) {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        scenario();
        let _ = tx.send(());
    });
    match rx.recv_timeout(Duration::from_secs(10)) {
        Ok(()) => {}
        Err(mpsc::RecvTimeoutError::Disconnected) => panic!("{what}: the scenario panicked"),
        Err(mpsc::RecvTimeoutError::Timeout) => panic!("{what}: still running after 10 s (it spins)"),
    }
}

#[test]
fn a_read_after_eagain_waits_even_when_a_stale_hangup_was_seen_before_connecting() {
    finishes_within_10s("read on a socket that hung up before it was connected", || {
        let lp = EventLoop::new().unwrap();
        run_bounded(&lp, async {
            let addr = abstract_name("stale-hup");
            let listener = evloop::net::UnixListener::bind(&addr).unwrap();
            let sock = Socket::new(Domain::Unix, SockType::Stream).unwrap();
            // The unconnected Unix socket reports EPOLLHUP: its registration now says "read
            // side closed" as well as "writable".
            yield_now().await;
            yield_now().await;
            assert!(sock.async_fd().is_read_closed(), "precondition: the hang-up was seen");
            // Connected behind evloop's back (a Unix connect completes at once): nothing tells
            // the registration that the hang-up is over, except the EAGAIN of the next read.
            sys::connect(sock.as_fd(), &SockAddr::Unix(addr.clone())).unwrap();
            let (_peer, _) = listener.accept().await.unwrap();
            let mut buf = [0u8; 16];
            let r = timeout(Duration::from_millis(100), sock.recv(&mut buf)).await;
            assert!(r.is_err(), "nothing was sent, so the read must wait: {r:?}");
        });
    });
}
