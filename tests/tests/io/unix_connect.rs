//! Issue 19 item 11: a Unix-socket connect that meets a full backlog (`EAGAIN`) waits until the
//! listener has room instead of failing, as a blocking connect does; the connection it makes is
//! a real one (the listener accepts it and bytes pass).

use std::io::Read as _;
use std::os::fd::AsFd;
use std::time::Duration;

use evloop::io::AsyncWriteExt;
use evloop::net::{Domain, SockAddr, SockType, Socket, UnixStream};
use evloop_syscalls as sys;
use evloop_tests::net::abstract_name;
use evloop_tests::run_on_new_loop;

/// A listener with a backlog of 0, and the clients that fill it: non-blocking connects until one
/// says `EAGAIN`.
fn full_listener(addr: &SockAddr) -> (Socket, Vec<Socket>) {
    let listener = Socket::new(Domain::Unix, SockType::Stream).unwrap();
    listener.bind(addr).unwrap();
    listener.listen(0).unwrap();
    let mut fillers = Vec::new();
    loop {
        let s = Socket::new(Domain::Unix, SockType::Stream).unwrap();
        match sys::connect(s.as_fd(), addr) {
            Ok(()) => fillers.push(s),
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => return (listener, fillers),
            Err(e) => panic!("filling the backlog: {e}"),
        }
        assert!(fillers.len() < 64, "the backlog never filled");
    }
}

#[test]
fn a_unix_connect_to_a_full_backlog_waits_for_room() {
    run_on_new_loop(async {
        let name = abstract_name("full-backlog");
        let addr = SockAddr::Unix(name.clone());
        let (listener, fillers) = full_listener(&addr);
        assert!(!fillers.is_empty());
        let connecting = evloop::spawn(async move { UnixStream::connect(&name).await });
        evloop::time::sleep(Duration::from_millis(20)).await;
        assert!(
            !connecting.done(),
            "the connect waits while the backlog is full (it used to fail with EAGAIN)"
        );
        // Room in the backlog: accept every filler, then the waiting client's connection.
        for _ in &fillers {
            listener.accept().await.unwrap();
        }
        let mut client = connecting
            .await
            .unwrap()
            .expect("the connect completes once there is room");
        let (fd, _) = listener.accept().await.unwrap();
        client.write_all(b"through").await.unwrap();
        let mut server_side = std::os::unix::net::UnixStream::from(fd);
        server_side.set_nonblocking(false).unwrap();
        let mut got = [0; 7];
        server_side.read_exact(&mut got).unwrap();
        assert_eq!(&got, b"through");
    });
}

#[test]
fn a_unix_connect_waiting_on_a_full_backlog_fails_when_the_listener_closes() {
    run_on_new_loop(async {
        let name = abstract_name("full-backlog-closed");
        let addr = SockAddr::Unix(name.clone());
        let (listener, _fillers) = full_listener(&addr);
        let connecting = evloop::spawn(async move { UnixStream::connect(&name).await });
        evloop::time::sleep(Duration::from_millis(5)).await;
        drop(listener);
        let err = connecting.await.unwrap().unwrap_err();
        assert_eq!(err.kind(), std::io::ErrorKind::ConnectionRefused, "{err}");
    });
}
