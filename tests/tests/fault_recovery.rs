// Standalone binary: one test switches on the process-wide `epoll_wait` fallback (syscall counts see it).
//! Failures the fault matrix (`tests/tests/fault_matrix.rs`) found, each pinned by its own test:
//! the loop recovers from a system call that fails once, and when the failure reaches the
//! caller, the error names the operation and the fd.
#![cfg(feature = "fault-injection")]

use std::io;
use std::sync::mpsc;
use std::time::Duration;

use evloop::net::{Domain, SockAddr, SockType, Socket, TcpListener, TcpStream};
use evloop::sys::{Syscall, fault};
use evloop::{
    event_loop::EventLoop,
    io::{AsyncReadExt, AsyncWriteExt, os_error},
};
use evloop_syscalls as sys;
use evloop_tests::run_bounded;
use evloop_tests::watchdog::Watchdog;

#[test]
fn a_connect_whose_first_call_left_no_attempt_behind_still_connects() {
    // `connect` answered `EINTR` (reported as `EINPROGRESS`) without starting anything: the only
    // wake-up is the unconnected socket's own stale one, after which connect asks the kernel
    // again instead of waiting for an edge that never comes.
    let lp = EventLoop::new().unwrap();
    run_bounded(&lp, async {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let accept = evloop::spawn(async move { listener.accept().await.map(|_| ()) });
        fault::fail_nth(Syscall::Connect, 1, sys::errno::EINTR);
        let connected = evloop::time::timeout(Duration::from_secs(5), TcpStream::connect(addr)).await;
        fault::clear();
        let s = connected.expect("connect waited forever").unwrap();
        assert_eq!(s.peer_addr().unwrap(), addr);
        accept.await.unwrap().unwrap();
    });
}

#[test]
fn socket_and_pipe_io_errors_name_the_operation_and_the_fd() {
    let lp = EventLoop::new().unwrap();
    let h = lp.handle();
    run_bounded(&lp, async move {
        // TCP read.
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let mut c = TcpStream::connect(addr).await.unwrap();
        let (mut s, _) = listener.accept().await.unwrap();
        c.write_all(b"x").await.unwrap();
        fault::fail_nth(Syscall::Recv, 1, sys::errno::ECONNRESET);
        let mut buf = [0u8; 4];
        let e = s.read(&mut buf).await.unwrap_err();
        let fd = std::os::fd::AsRawFd::as_raw_fd(s.socket());
        println!("{e}");
        assert_eq!(e.kind(), io::ErrorKind::ConnectionReset);
        assert_eq!(os_error(&e), Some(sys::errno::ECONNRESET), "the errno is still there");
        assert!(e.to_string().starts_with(&format!("recv(fd {fd}): ")), "{e}");
        // TCP vectored write.
        fault::fail_nth(Syscall::Sendmsg, 1, sys::errno::EPIPE);
        let e = c
            .write_vectored(&[io::IoSlice::new(b"a"), io::IoSlice::new(b"b")])
            .await
            .unwrap_err();
        assert!(e.to_string().starts_with("sendmsg(fd "), "{e}");
        // UDP.
        let u = Socket::new(Domain::Inet, SockType::Datagram).unwrap();
        u.bind(&SockAddr::Inet("127.0.0.1:0".parse().unwrap())).unwrap();
        let to = u.local_addr().unwrap();
        h.sock_sendto(&u, b"d", &to).await.unwrap();
        fault::fail_nth(Syscall::Recvfrom, 1, sys::errno::ENOMEM);
        let e = h.sock_recvfrom(&u, 16).await.unwrap_err();
        assert!(e.to_string().starts_with("recvfrom(fd "), "{e}");
        // Pipes.
        let (mut r, mut w) = evloop::pipe::pipe().unwrap();
        fault::fail_nth(Syscall::Write, 1, sys::errno::EIO);
        let e = w.write_all(b"p").await.unwrap_err();
        assert!(e.to_string().starts_with("write(fd "), "{e}");
        w.write_all(b"p").await.unwrap();
        fault::fail_nth(Syscall::Read, 1, sys::errno::EIO);
        let e = r.read(&mut buf).await.unwrap_err();
        assert!(e.to_string().starts_with("read(fd "), "{e}");
        assert_eq!(fault::pending(), 0);
    });
}

#[test]
fn a_failed_poll_names_the_call_that_failed_epoll_wait_in_the_fallback() {
    let lp = EventLoop::new().unwrap();
    sys::force_epoll_wait_fallback(true);
    fault::fail_nth(Syscall::EpollWait, 1, sys::errno::EBADF);
    let r = lp.run_until_complete(async {});
    fault::clear();
    sys::force_epoll_wait_fallback(false);
    let e = r.unwrap_err();
    println!("{e}");
    assert!(e.to_string().starts_with("poll (epoll_wait): "), "{e}");
    // The loop runs again.
    assert_eq!(lp.run_until_complete(async { 7 }).unwrap(), 7);
}

#[test]
fn a_failed_wake_up_write_never_loses_the_wake_up() {
    // The thread that wakes the blocked loop finds its eventfd write failing once: the write is
    // tried again, and in any case the eventfd is not left "armed", which made every later
    // cross-thread push skip the write and the loop sleep forever.
    let lp = EventLoop::new().unwrap();
    let remote = lp.remote();
    let (go_tx, go_rx) = mpsc::channel::<()>();
    let waker = std::thread::spawn(move || {
        let _ = go_rx.recv();
        std::thread::sleep(Duration::from_millis(20));
        fault::fail_nth(Syscall::Write, 1, sys::errno::EINVAL);
        remote.call_soon_threadsafe(|| {}).unwrap();
        let fired = fault::pending() == 0;
        fault::clear();
        remote.stop().unwrap();
        fired
    });
    let dog = Watchdog::start(lp.remote(), Duration::from_secs(5));
    // A backstop: should the wake-up be lost, this timer ends the poll (after the watchdog has
    // fired, so the test fails rather than hangs).
    let backstop = lp.call_later(Duration::from_secs(10), || {}).unwrap();
    lp.call_soon(move || go_tx.send(()).unwrap()).unwrap();
    lp.run_forever().unwrap();
    backstop.cancel();
    assert!(!dog.finish(), "the loop slept through the wake-up");
    assert!(waker.join().unwrap(), "the injected failure fired");
}
