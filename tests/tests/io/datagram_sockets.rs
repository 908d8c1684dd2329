//! Raw datagram sockets (`evloop::net::Socket` and the loop's `sock_*` calls on UDP and Unix
//! datagram sockets): a datagram is a message, not a run of bytes. A receive shorter than the
//! buffer says nothing about the queue (the next datagram may be waiting), and an empty send is
//! an empty datagram the peer receives. Loopback and socket pairs only.

use std::os::unix::net::UnixDatagram;
use std::time::Duration;

use evloop::net::{Domain, SockAddr, SockType, Socket};
use evloop::sys::{Syscall, counters};
use evloop::{event_loop::EventLoop, time::sleep};
use evloop_tests::run_bounded;

/// A datagram pair: the evloop side and a std side to send from.
fn pair() -> (Socket, UnixDatagram) {
    let (a, b) = UnixDatagram::pair().expect("socketpair");
    (Socket::from_fd(a.into()).expect("register"), b)
}

#[test]
fn every_queued_datagram_is_received_after_a_short_one() {
    let lp = EventLoop::new().unwrap();
    let h = lp.handle();
    let got = run_bounded(&h, async move {
        let (sock, peer) = pair();
        // Make the socket known readable first, then queue three datagrams at once: they raise
        // no further edge, so the receives must not wait for one.
        sleep(Duration::from_millis(1)).await;
        for m in [&b"one"[..], b"two", b"three"] {
            peer.send(m).unwrap();
        }
        let mut got = Vec::new();
        let mut buf = [0u8; 64];
        for _ in 0..3 {
            let n = sock.recv(&mut buf).await.unwrap();
            got.push(buf[..n].to_vec());
        }
        got
    });
    assert_eq!(got, vec![b"one".to_vec(), b"two".to_vec(), b"three".to_vec()]);
}

#[test]
fn sock_recv_on_udp_takes_one_datagram_per_call_until_the_queue_is_empty() {
    let lp = EventLoop::new().unwrap();
    let h = lp.handle();
    let h2 = h.clone();
    let got = run_bounded(&h, async move {
        let recv = Socket::new(Domain::Inet, SockType::Datagram).unwrap();
        recv.bind(&SockAddr::Inet(([127, 0, 0, 1], 0).into())).unwrap();
        let to = recv.local_addr().unwrap();
        let send = Socket::new(Domain::Inet, SockType::Datagram).unwrap();
        for i in 0..5u8 {
            h2.sock_sendto(&send, &[i; 10], &to).await.unwrap();
        }
        let mut got = Vec::new();
        for _ in 0..5 {
            got.push(h2.sock_recv(&recv, 1024).await.unwrap());
        }
        got
    });
    let want: Vec<Vec<u8>> = (0..5u8).map(|i| vec![i; 10]).collect();
    assert_eq!(got, want);
}

#[test]
fn an_empty_send_on_a_datagram_socket_is_an_empty_datagram() {
    let lp = EventLoop::new().unwrap();
    let h = lp.handle();
    let h2 = h.clone();
    let (sent, syscalls) = run_bounded(&h, async move {
        let (sock, peer) = pair();
        let before = counters::snapshot();
        let sent = sock.send(b"").await.unwrap();
        let syscalls = counters::snapshot().since(&before).get(Syscall::Send);
        h2.sock_sendall(&sock, b"").await.unwrap();
        peer.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        let mut buf = [0u8; 8];
        assert_eq!(peer.recv(&mut buf).unwrap(), 0, "the first empty datagram");
        assert_eq!(peer.recv(&mut buf).unwrap(), 0, "sock_sendall's empty datagram");
        (sent, syscalls)
    });
    assert_eq!(sent, 0);
    assert_eq!(syscalls, 1, "an empty datagram is one send(2)");
}

#[test]
fn an_empty_send_on_a_stream_socket_makes_no_syscall() {
    let lp = EventLoop::new().unwrap();
    let h = lp.handle();
    let syscalls = run_bounded(&h, async move {
        let (a, _b) = std::os::unix::net::UnixStream::pair().unwrap();
        let sock = Socket::from_fd(a.into()).unwrap();
        let before = counters::snapshot();
        assert_eq!(sock.send(b"").await.unwrap(), 0);
        counters::snapshot().since(&before).get(Syscall::Send)
    });
    assert_eq!(syscalls, 0);
}
