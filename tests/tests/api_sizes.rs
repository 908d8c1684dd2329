// Standalone binary: a regression here aborts the process (a failed huge allocation), ending every test in it.
//! No size argument makes a public API panic or abort: a size is a bound on the result, never
//! an allocation made up front. (`sock_recv(usize::MAX)` used to panic with "capacity
//! overflow", `sock_recv(1 << 40)` to abort the process on the failed allocation.)

use std::os::fd::AsFd;

use evloop::net::{Domain, SockAddr, SockType, Socket, TcpListener};
use evloop::{event_loop::EventLoop, io::AsyncWriteExt};
use evloop_syscalls as sys;
use evloop_tests::net::abstract_name;
use evloop_tests::run_bounded;

/// Sizes asyncio would try to allocate in full.
const HUGE: [usize; 3] = [usize::MAX, 1 << 40, (1 << 20) + 1];

#[test]
fn sock_recv_with_any_size_returns_what_arrived_without_reserving_the_size() {
    let lp = EventLoop::new().unwrap();
    let h = lp.handle();
    run_bounded(&lp, async move {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let sock = Socket::new(Domain::Inet, SockType::Stream).unwrap();
        h.sock_connect(&sock, &SockAddr::Inet(addr)).await.unwrap();
        let (mut peer, _) = listener.accept().await.unwrap();
        for n in HUGE {
            peer.write_all(b"hello").await.unwrap();
            let got = h.sock_recv(&sock, n).await.unwrap();
            assert_eq!(got, b"hello", "sock_recv({n})");
            assert!(got.capacity() <= 4096, "sock_recv({n}) kept {} bytes", got.capacity());
        }
        // A large read of a large amount still comes in big pieces.
        let big = vec![7u8; 600_000];
        let writer = evloop::spawn(async move {
            peer.write_all(&big).await.unwrap();
            peer
        });
        let mut total = 0;
        while total < 600_000 {
            let got = h.sock_recv(&sock, usize::MAX).await.unwrap();
            assert!(!got.is_empty());
            assert!(got.len() <= 256 * 1024, "{}", got.len());
            total += got.len();
        }
        drop(writer.await.unwrap());
        assert!(
            h.sock_recv(&sock, usize::MAX).await.unwrap().is_empty(),
            "end of stream"
        );
    });
}

#[test]
fn sock_recvfrom_with_any_size_returns_the_whole_datagram() {
    let lp = EventLoop::new().unwrap();
    let h = lp.handle();
    run_bounded(&lp, async move {
        let udp = Socket::new(Domain::Inet, SockType::Datagram).unwrap();
        udp.bind(&SockAddr::Inet("127.0.0.1:0".parse().unwrap())).unwrap();
        let to = udp.local_addr().unwrap();
        let sender = Socket::new(Domain::Inet, SockType::Datagram).unwrap();
        sender.bind(&SockAddr::Inet("127.0.0.1:0".parse().unwrap())).unwrap();
        for n in HUGE {
            h.sock_sendto(&sender, &[1u8; 1500], &to).await.unwrap();
            let (got, from) = h.sock_recvfrom(&udp, n).await.unwrap();
            assert_eq!(got.len(), 1500, "sock_recvfrom({n})");
            assert_eq!(from, sender.local_addr().unwrap());
            assert!(
                got.capacity() < 4096,
                "sock_recvfrom({n}) kept {} bytes",
                got.capacity()
            );
        }
        // asyncio's truncation to `n` stays.
        h.sock_sendto(&sender, &[2u8; 100], &to).await.unwrap();
        assert_eq!(h.sock_recvfrom(&udp, 10).await.unwrap().0, [2u8; 10]);
        // An empty datagram is an empty result, not end of stream.
        h.sock_sendto(&sender, b"", &to).await.unwrap();
        assert!(h.sock_recvfrom(&udp, usize::MAX).await.unwrap().0.is_empty());

        // A Unix datagram larger than the 256 KiB a stream read would get is not cut short.
        let addr = abstract_name("api-sizes");
        let rx = Socket::new(Domain::Unix, SockType::Datagram).unwrap();
        rx.bind(&SockAddr::Unix(addr.clone())).unwrap();
        let tx = Socket::new(Domain::Unix, SockType::Datagram).unwrap();
        sys::set_send_buffer_size(tx.as_fd(), 1 << 20).unwrap();
        let len = sys::send_buffer_size(tx.as_fd()).unwrap().min(400_000) - 1024;
        assert!(len > 256 * 1024, "the send buffer allows only {len} bytes");
        let big = vec![3u8; len];
        h.sock_sendto(&tx, &big, &SockAddr::Unix(addr)).await.unwrap();
        let (got, _) = h.sock_recvfrom(&rx, usize::MAX).await.unwrap();
        assert_eq!(got.len(), len, "the whole datagram");
    });
}
