//! Sockets and protocols on loopback: TCP over IPv4 and IPv6, UDP, Unix stream and datagram
//! sockets (pathname and abstract), asyncio's `sock_*` API (with `sock_sendfile` and its
//! read/send fallback), vectored writes, and the protocol/transport layer (callback order,
//! `write_eof`, `close` vs `abort`, flow control in both directions, Unix-socket servers).
//!
//! Every loop run is bounded ([`run_bounded`]); every temp path lives in a [`TempDir`] that is
//! removed when the test ends, pass or fail.

use std::cell::{Cell, RefCell};
use std::io::{self, IoSlice, Write as _};
use std::net::SocketAddr;
use std::os::fd::AsFd;
use std::path::PathBuf;
use std::rc::Rc;
use std::time::Duration;

use evloop::net::{Domain, SockAddr, SockType, Socket, TcpListener, TcpStream, UdpSocket, UnixAddr};
use evloop::net::{UnixDatagram, UnixListener, UnixStream};
use evloop::sys::counters;
use evloop::sys::{Syscall, fault};
use evloop::{
    event_loop::LoopHandle,
    io::{AsyncReadExt, AsyncWriteExt},
    protocol::{Protocol, Transport},
    task::yield_now,
    time::sleep,
};
use evloop_syscalls as sys;
use evloop_tests::net::{Echo, abstract_name, echo_stream, loopback_v4};
use evloop_tests::{Log, entries, log, pattern, push, run_bounded, warm_loop, yield_until};

// This file's `#[test]` is its binary root's `contract_test`: the built-in one in the `io`
// binary, the simulated kernel's in the `sim` binary, which includes this file too.
use crate::contract_test as test;

// ---------------------------------------------------------------------------------------------
// Helpers (this file only).

/// A fresh directory under the system temp dir, removed (with its contents) on drop.
struct TempDir(PathBuf);

impl TempDir {
    fn new(tag: &str) -> TempDir {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.subsec_nanos())
            .unwrap_or(0);
        let p = std::env::temp_dir().join(format!("evloop-{tag}-{}-{nanos}", std::process::id()));
        std::fs::create_dir_all(&p).unwrap();
        TempDir(p)
    }
    fn path(&self, name: &str) -> PathBuf {
        self.0.join(name)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A TCP echo server task on `listener` for exactly `n` connections.
fn serve_echo(listener: TcpListener, n: usize) -> evloop::task::Task<()> {
    evloop::spawn(async move {
        for _ in 0..n {
            let (mut s, _) = listener.accept().await.unwrap();
            evloop::spawn(async move {
                echo_stream(&mut s).await.unwrap();
                s.shutdown().await.unwrap();
            })
            .detach();
        }
    })
}

/// One echo round over a connected stream: writes `msg`, half-closes, reads everything back.
async fn echo_round<S: evloop::io::AsyncRead + evloop::io::AsyncWrite + Unpin>(s: &mut S, msg: &[u8]) -> Vec<u8> {
    s.write_all(msg).await.unwrap();
    s.shutdown().await.unwrap();
    let mut back = Vec::new();
    s.read_to_end(&mut back).await.unwrap();
    back
}

// ---------------------------------------------------------------------------------------------
// TCP streams.

fn tcp_echo_on(lp: &LoopHandle, bind: SocketAddr) {
    run_bounded(lp, async move {
        let listener = TcpListener::bind(bind).await.unwrap();
        let addr = listener.local_addr().unwrap();
        assert_eq!(addr.ip(), bind.ip());
        assert_ne!(addr.port(), 0, "port 0 picks a free port");
        let server = evloop::spawn(async move {
            let (mut s, peer) = listener.accept().await.unwrap();
            assert_eq!(s.peer_addr().unwrap(), peer);
            assert_eq!(s.local_addr().unwrap(), addr);
            echo_stream(&mut s).await.unwrap();
            s.shutdown().await.unwrap();
            peer
        });
        let mut c = TcpStream::connect(addr).await.unwrap();
        assert_eq!(c.peer_addr().unwrap(), addr);
        let local = c.local_addr().unwrap();
        let msg = pattern(100_000);
        assert_eq!(echo_round(&mut c, &msg).await, msg);
        assert_eq!(
            server.await.unwrap(),
            local,
            "the server saw the client's local address"
        );
    });
}

#[test]
fn tcp_connect_accept_read_write_on_ipv4_loopback() {
    let lp = warm_loop();
    tcp_echo_on(&lp, loopback_v4());
}

#[test]
fn tcp_connect_accept_read_write_on_ipv6_loopback() {
    let lp = warm_loop();
    let bind: SocketAddr = "[::1]:0".parse().unwrap();
    let probe = run_bounded(&lp, async move { TcpListener::bind(bind).await.map(|_| ()) });
    if let Err(e) = probe {
        println!("skipped: ::1 is not available here ({e})");
        return;
    }
    tcp_echo_on(&lp, bind);
}

#[test]
fn nodelay_is_on_for_connected_and_accepted_streams_and_can_be_turned_off() {
    let lp = warm_loop();
    run_bounded(&lp, async {
        let listener = TcpListener::bind(loopback_v4()).await.unwrap();
        let addr = listener.local_addr().unwrap();
        let accept = evloop::spawn(async move { listener.accept().await.unwrap().0 });
        let c = TcpStream::connect(addr).await.unwrap();
        let s = accept.await.unwrap();
        assert!(c.nodelay().unwrap(), "connected streams start with TCP_NODELAY");
        assert!(s.nodelay().unwrap(), "accepted streams start with TCP_NODELAY");
        c.set_nodelay(false).unwrap();
        assert!(!c.nodelay().unwrap());
        c.set_nodelay(true).unwrap();
        assert!(c.nodelay().unwrap());
    });
}

#[test]
fn split_halves_of_a_tcp_stream_read_and_write_from_two_tasks_at_once() {
    let lp = warm_loop();
    run_bounded(&lp, async {
        let listener = TcpListener::bind(loopback_v4()).await.unwrap();
        let addr = listener.local_addr().unwrap();
        let server = serve_echo(listener, 1);
        let c = TcpStream::connect(addr).await.unwrap();
        let (mut rd, mut wr) = c.into_split();
        // 4 MiB is more than the socket buffers hold: writing and reading must overlap.
        let msg = Rc::new(pattern(4 << 20));
        let m = msg.clone();
        let writer = evloop::spawn(async move {
            for chunk in m.chunks(8192) {
                wr.write_all(chunk).await.unwrap();
            }
            wr.shutdown().await.unwrap();
            wr
        });
        let reader = evloop::spawn(async move {
            let mut back = Vec::new();
            rd.read_to_end(&mut back).await.unwrap();
            (back, rd)
        });
        let (back, rd) = reader.await.unwrap();
        let wr = writer.await.unwrap();
        assert_eq!(back.len(), msg.len());
        assert!(back == *msg, "the echo differs from what was written");
        assert!(std::ptr::eq(rd.socket(), wr.socket()), "both halves share one socket");
        server.await.unwrap();
    });
}

#[test]
fn write_vectored_goes_out_in_one_sendmsg() {
    let lp = warm_loop();
    run_bounded(&lp, async {
        let listener = TcpListener::bind(loopback_v4()).await.unwrap();
        let addr = listener.local_addr().unwrap();
        let accept = evloop::spawn(async move { listener.accept().await.unwrap().0 });
        let mut c = TcpStream::connect(addr).await.unwrap();
        let mut s = accept.await.unwrap();
        c.socket().async_fd().writable().await.unwrap();

        counters::reset();
        let bufs = [
            IoSlice::new(b"head"),
            IoSlice::new(b""),
            IoSlice::new(b"-"),
            IoSlice::new(b"tail"),
        ];
        let n = c.write_vectored(&bufs).await.unwrap();
        let cnt = counters::snapshot();
        println!("write_vectored of 4 slices: {cnt}");
        assert_eq!(n, 9);
        assert_eq!(cnt[Syscall::Sendmsg], 1, "{cnt}");
        assert_eq!(
            cnt[Syscall::Send] + cnt[Syscall::Writev] + cnt[Syscall::Write],
            0,
            "{cnt}"
        );
        let mut buf = [0u8; 16];
        let mut got = 0;
        while got < 9 {
            got += s.read(&mut buf[got..]).await.unwrap();
        }
        assert_eq!(&buf[..9], b"head-tail");

        // The same through a split write half and a Unix stream.
        let (_rd, mut wr) = c.into_split();
        counters::reset();
        assert_eq!(
            wr.write_vectored(&[IoSlice::new(b"a"), IoSlice::new(b"b")])
                .await
                .unwrap(),
            2
        );
        assert_eq!(counters::snapshot()[Syscall::Sendmsg], 1);
        let (mut u1, mut u2) = UnixStream::pair().unwrap();
        u1.socket().async_fd().writable().await.unwrap();
        counters::reset();
        assert_eq!(
            u1.write_vectored(&[IoSlice::new(b"x"), IoSlice::new(b"yz")])
                .await
                .unwrap(),
            3
        );
        assert_eq!(counters::snapshot()[Syscall::Sendmsg], 1);
        let mut ubuf = [0u8; 8];
        let n = u2.read(&mut ubuf).await.unwrap();
        assert_eq!(&ubuf[..n], b"xyz");
    });
}

// ---------------------------------------------------------------------------------------------
// UDP.

#[test]
fn udp_send_to_recv_from_and_connect() {
    let lp = warm_loop();
    run_bounded(&lp, async {
        let a = UdpSocket::bind(loopback_v4()).await.unwrap();
        let b = UdpSocket::bind(loopback_v4()).await.unwrap();
        let (aa, ba) = (a.local_addr().unwrap(), b.local_addr().unwrap());
        assert_eq!(a.send_to(b"ping", ba).await.unwrap(), 4);
        let mut buf = [0u8; 64];
        let (n, from) = b.recv_from(&mut buf).await.unwrap();
        assert_eq!((&buf[..n], from), (&b"ping"[..], aa));
        b.send_to(b"pong", from).await.unwrap();
        let (n, from) = a.recv_from(&mut buf).await.unwrap();
        assert_eq!((&buf[..n], from), (&b"pong"[..], ba));

        // A datagram longer than the buffer is truncated, and the rest is gone.
        a.send_to(&[5u8; 100], ba).await.unwrap();
        a.send_to(b"next", ba).await.unwrap();
        let mut small = [0u8; 10];
        let (n, _) = b.recv_from(&mut small).await.unwrap();
        assert_eq!(n, 10);
        let (n, _) = b.recv_from(&mut buf).await.unwrap();
        assert_eq!(&buf[..n], b"next", "one datagram per receive");

        // connect: a default destination, and only that peer's datagrams arrive.
        a.connect(ba).await.unwrap();
        assert_eq!(a.peer_addr().unwrap(), ba);
        let c = UdpSocket::bind(loopback_v4()).await.unwrap();
        c.send_to(b"from a stranger", aa).await.unwrap();
        a.send(b"hello").await.unwrap();
        let (n, from) = b.recv_from(&mut buf).await.unwrap();
        assert_eq!((&buf[..n], from), (&b"hello"[..], aa));
        b.send_to(b"reply", aa).await.unwrap();
        let n = a.recv(&mut buf).await.unwrap();
        assert_eq!(&buf[..n], b"reply", "the stranger's datagram was filtered out");
        // An empty datagram is a real datagram.
        a.send(b"").await.unwrap();
        let (n, _) = b.recv_from(&mut buf).await.unwrap();
        assert_eq!(n, 0);
    });
}

// ---------------------------------------------------------------------------------------------
// Unix sockets.

#[test]
fn unix_stream_listener_on_a_temp_path_serves_and_the_path_is_removed_afterwards() {
    let dir = TempDir::new("unix-stream");
    let path = dir.path("echo.sock");
    let lp = warm_loop();
    let p = path.clone();
    run_bounded(&lp, async move {
        let addr = UnixAddr::pathname(&p).unwrap();
        let listener = UnixListener::bind(&addr).unwrap();
        assert!(p.exists(), "binding a pathname creates the socket file");
        assert_eq!(listener.local_addr().unwrap(), addr);
        let server = evloop::spawn(async move {
            let (mut s, peer) = listener.accept().await.unwrap();
            assert!(peer.is_unnamed(), "an unbound client has no name: {peer}");
            assert_eq!(s.local_addr().unwrap().as_pathname(), Some(&*p));
            echo_stream(&mut s).await.unwrap();
            s.shutdown().await.unwrap();
        });
        let mut c = UnixStream::connect(&addr).await.unwrap();
        assert_eq!(c.peer_addr().unwrap(), addr);
        assert!(c.local_addr().unwrap().is_unnamed());
        let msg = pattern(300_000);
        assert_eq!(echo_round(&mut c, &msg).await, msg);
        server.await.unwrap();
    });
    assert!(
        path.exists(),
        "closing a listener leaves its socket file (the caller removes it)"
    );
    std::fs::remove_file(&path).unwrap();
    let root = dir.0.clone();
    drop(dir);
    assert!(!root.exists(), "the temp dir is removed");
}

#[test]
fn unix_stream_on_an_abstract_name_leaves_no_file() {
    let lp = warm_loop();
    run_bounded(&lp, async {
        let addr = abstract_name("test-stream");
        let listener = UnixListener::bind(&addr).unwrap();
        assert_eq!(listener.local_addr().unwrap(), addr);
        assert!(addr.as_abstract_name().is_some());
        let server = evloop::spawn(async move {
            let (mut s, _) = listener.accept().await.unwrap();
            echo_stream(&mut s).await.unwrap();
            s.shutdown().await.unwrap();
        });
        let mut c = UnixStream::connect(&addr).await.unwrap();
        assert_eq!(c.peer_addr().unwrap(), addr);
        assert_eq!(echo_round(&mut c, b"abstract").await, b"abstract");
        server.await.unwrap();
        // The name goes away with its last socket: connecting again is refused.
        let again = UnixStream::connect(&addr).await.unwrap_err();
        assert_eq!(again.kind(), io::ErrorKind::ConnectionRefused, "{again}");
    });
}

#[test]
fn unix_datagram_send_to_recv_from_on_paths_unbound_senders_and_pairs() {
    let dir = TempDir::new("unix-dgram");
    let (pa, pb) = (dir.path("a.sock"), dir.path("b.sock"));
    let lp = warm_loop();
    let (aa, ba) = (UnixAddr::pathname(&pa).unwrap(), UnixAddr::pathname(&pb).unwrap());
    run_bounded(&lp, async move {
        let a = UnixDatagram::bind(&aa).unwrap();
        let b = UnixDatagram::bind(&ba).unwrap();
        assert_eq!(b.local_addr().unwrap(), ba);
        assert_eq!(a.send_to(b"from a", &ba).await.unwrap(), 6);
        let mut buf = [0u8; 64];
        let (n, from) = b.recv_from(&mut buf).await.unwrap();
        assert_eq!((&buf[..n], &from), (&b"from a"[..], &aa));
        b.send_to(b"to a", &from).await.unwrap();
        let (n, _) = a.recv_from(&mut buf).await.unwrap();
        assert_eq!(&buf[..n], b"to a");

        let u = UnixDatagram::unbound().unwrap();
        u.send_to(b"anon", &ba).await.unwrap();
        let (n, from) = b.recv_from(&mut buf).await.unwrap();
        assert_eq!(&buf[..n], b"anon");
        assert!(from.is_unnamed(), "an unbound sender is unnamed: {from}");

        let (x, y) = UnixDatagram::pair().unwrap();
        x.send(b"one").await.unwrap();
        x.send(b"two").await.unwrap();
        assert_eq!(y.recv(&mut buf).await.unwrap(), 3);
        assert_eq!(&buf[..3], b"one");
        assert_eq!(y.recv(&mut buf).await.unwrap(), 3);
        assert_eq!(&buf[..3], b"two");
        // An empty datagram is a real datagram here too.
        assert_eq!(x.send(b"").await.unwrap(), 0);
        x.send(b"after").await.unwrap();
        assert_eq!(y.recv(&mut buf).await.unwrap(), 0, "the empty datagram arrives first");
        assert_eq!(y.recv(&mut buf).await.unwrap(), 5);
    });
    assert!(pa.exists() && pb.exists());
    drop(dir);
    assert!(
        !pa.exists() && !pb.exists(),
        "the temp dir and its socket files are gone"
    );
}

#[test]
fn unix_datagram_on_an_abstract_name() {
    let lp = warm_loop();
    run_bounded(&lp, async {
        let addr = abstract_name("test-dgram");
        let a = UnixDatagram::bind(&addr).unwrap();
        let u = UnixDatagram::unbound().unwrap();
        u.send_to(b"hi", &addr).await.unwrap();
        let mut buf = [0u8; 8];
        let (n, _) = a.recv_from(&mut buf).await.unwrap();
        assert_eq!(&buf[..n], b"hi");
    });
}

// ---------------------------------------------------------------------------------------------
// asyncio's sock_* API.

/// A listening TCP `Socket` on 127.0.0.1 and its address.
fn listening_socket() -> (Socket, SockAddr) {
    let l = Socket::new(Domain::Inet, SockType::Stream).unwrap();
    l.set_reuseaddr(true).unwrap();
    l.bind(&SockAddr::Inet(loopback_v4())).unwrap();
    l.listen(16).unwrap();
    let addr = l.local_addr().unwrap();
    (l, addr)
}

/// A connected pair of TCP `Socket`s through the `sock_*` API: (client, accepted).
async fn sock_pair(lp: &LoopHandle) -> (Socket, Socket) {
    let (l, addr) = listening_socket();
    let h = lp.clone();
    let accept = evloop::spawn(async move {
        let (s, peer) = h.sock_accept(&l).await.unwrap();
        assert!(peer.as_inet().is_some());
        s
    });
    let c = Socket::new(Domain::Inet, SockType::Stream).unwrap();
    lp.sock_connect(&c, &addr).await.unwrap();
    let s = accept.await.unwrap();
    assert_eq!(c.peer_addr().unwrap(), addr);
    assert_eq!(s.peer_addr().unwrap(), c.local_addr().unwrap());
    (c, s)
}

/// Receives with `sock_recv` until end of stream.
async fn sock_recv_all(lp: &LoopHandle, s: &Socket) -> Vec<u8> {
    let mut out = Vec::new();
    loop {
        let chunk = lp.sock_recv(s, 32 * 1024).await.unwrap();
        if chunk.is_empty() {
            return out;
        }
        out.extend_from_slice(&chunk);
    }
}

#[test]
fn sock_accept_connect_sendall_recv_and_recv_into() {
    let lp = warm_loop();
    let h = lp.handle();
    run_bounded(&lp, async move {
        let (c, s) = sock_pair(&h).await;
        let s = Rc::new(s);
        let msg = Rc::new(pattern(1 << 20));
        let (hh, ss, m) = (h.clone(), s.clone(), msg.clone());
        // The peer echoes with sock_recv_into + sock_sendall, concurrently with the sender.
        let echo = evloop::spawn(async move {
            let mut buf = vec![0u8; 16 * 1024];
            let mut total = 0;
            loop {
                let n = hh.sock_recv_into(&ss, &mut buf).await.unwrap();
                if n == 0 {
                    break;
                }
                hh.sock_sendall(&ss, &buf[..n]).await.unwrap();
                total += n;
            }
            ss.shutdown(evloop::net::Shutdown::Write).unwrap();
            assert_eq!(total, m.len());
        });
        let c = Rc::new(c);
        let (hh, cc, m) = (h.clone(), c.clone(), msg.clone());
        let sender = evloop::spawn(async move {
            hh.sock_sendall(&cc, &m).await.unwrap();
            cc.shutdown(evloop::net::Shutdown::Write).unwrap();
        });
        let back = sock_recv_all(&h, &c).await;
        sender.await.unwrap();
        echo.await.unwrap();
        assert!(
            back == *msg,
            "sock_* echo differs ({} of {} bytes)",
            back.len(),
            msg.len()
        );
        // At end of stream sock_recv gives an empty vector, and keeps giving it.
        assert!(h.sock_recv(&c, 10).await.unwrap().is_empty());
    });
}

#[test]
fn sock_recvfrom_and_sock_sendto_on_udp_sockets() {
    let lp = warm_loop();
    let h = lp.handle();
    run_bounded(&lp, async move {
        let a = Socket::new(Domain::Inet, SockType::Datagram).unwrap();
        let b = Socket::new(Domain::Inet, SockType::Datagram).unwrap();
        a.bind(&SockAddr::Inet(loopback_v4())).unwrap();
        b.bind(&SockAddr::Inet(loopback_v4())).unwrap();
        let (aa, ba) = (a.local_addr().unwrap(), b.local_addr().unwrap());
        assert_eq!(h.sock_sendto(&a, b"dgram", &ba).await.unwrap(), 5);
        let (data, from) = h.sock_recvfrom(&b, 100).await.unwrap();
        assert_eq!((data.as_slice(), &from), (&b"dgram"[..], &aa));
        h.sock_sendto(&b, b"back", &from).await.unwrap();
        let (data, from) = h.sock_recvfrom(&a, 2).await.unwrap();
        assert_eq!(data, b"ba", "truncated to the size asked for");
        assert_eq!(from, ba);
    });
}

/// A temp file holding `pattern(len)`.
fn pattern_file(dir: &TempDir, len: usize) -> (PathBuf, std::fs::File) {
    let p = dir.path("data.bin");
    let mut f = std::fs::File::create(&p).unwrap();
    f.write_all(&pattern(len)).unwrap();
    drop(f);
    (p.clone(), std::fs::File::open(&p).unwrap())
}

/// Sends `file[offset..offset+count]` with sock_sendfile over a fresh connection and returns
/// (what sock_sendfile said, what the peer received, the counters of the sending side's calls).
async fn sendfile_over_tcp(
    h: &LoopHandle,
    file: Rc<std::fs::File>,
    offset: u64,
    count: Option<usize>,
    inject: Option<i32>,
) -> (u64, Vec<u8>, counters::Counts) {
    let (c, s) = sock_pair(h).await;
    let hh = h.clone();
    // The receiver runs on the same thread; only the sender uses sendfile and send, so those
    // two counters belong to the sender alone.
    let receiver = evloop::spawn(async move { sock_recv_all(&hh, &s).await });
    counters::reset();
    if let Some(errno) = inject {
        fault::fail_nth(Syscall::Sendfile, 1, errno);
    }
    let sent = h.sock_sendfile(&c, &file, offset, count).await.unwrap();
    let cnt = counters::snapshot();
    fault::clear();
    c.shutdown(evloop::net::Shutdown::Write).unwrap();
    let got = receiver.await.unwrap();
    (sent, got, cnt)
}

#[test]
fn sock_sendfile_sends_count_bytes_of_a_temp_file_from_an_offset() {
    let dir = TempDir::new("sendfile");
    let len = 3 << 20;
    let (path, file) = pattern_file(&dir, len);
    let file = Rc::new(file);
    let all = pattern(len);
    let lp = warm_loop();
    let h = lp.handle();
    run_bounded(&lp, async move {
        let (sent, got, cnt) = sendfile_over_tcp(&h, file.clone(), 1000, Some(2_000_000), None).await;
        println!("sendfile of 2,000,000 bytes at offset 1000: {cnt}");
        assert_eq!(sent, 2_000_000);
        assert!(got == all[1000..2_001_000], "wrong bytes ({} received)", got.len());
        assert!(cnt[Syscall::Sendfile] >= 1, "{cnt}");
        assert_eq!(cnt[Syscall::Send], 0, "no user-space copy while sendfile works: {cnt}");

        // count None: to the end of the file.
        let (sent, got, _) = sendfile_over_tcp(&h, file.clone(), 12_345, None, None).await;
        assert_eq!(sent as usize, len - 12_345);
        assert!(got == all[12_345..]);

        // An offset at or past the end sends nothing.
        let (sent, got, _) = sendfile_over_tcp(&h, file.clone(), len as u64 + 10, Some(100), None).await;
        assert_eq!((sent, got.len()), (0, 0));
        // A count past the end stops at the end.
        let (sent, got, _) = sendfile_over_tcp(&h, file, len as u64 - 5, Some(100), None).await;
        assert_eq!(sent, 5);
        assert_eq!(got, &all[len - 5..]);
    });
    assert!(path.exists());
    drop(dir);
    assert!(!path.exists(), "the temp file is removed");
}

#[test]
fn sock_sendfile_falls_back_to_read_and_send_when_sendfile_fails_with_einval_or_enosys() {
    let dir = TempDir::new("sendfile-fallback");
    let len = 1 << 20;
    let (_path, file) = pattern_file(&dir, len);
    let file = Rc::new(file);
    let all = pattern(len);
    let lp = warm_loop();
    let h = lp.handle();
    run_bounded(&lp, async move {
        for errno in [sys::errno::EINVAL, sys::errno::ENOSYS] {
            let (sent, got, cnt) = sendfile_over_tcp(&h, file.clone(), 777, Some(500_000), Some(errno)).await;
            println!("sendfile failing with errno {errno}, fallback: {cnt}");
            assert_eq!(sent, 500_000);
            assert!(got == all[777..500_777], "fallback sent wrong bytes ({})", got.len());
            assert_eq!(
                cnt[Syscall::Sendfile],
                1,
                "sendfile is not retried after {errno}: {cnt}"
            );
            assert!(cnt[Syscall::Send] >= 1, "the fallback sends with send(2): {cnt}");
            assert_eq!(fault::pending(), 0);
        }
        // Other errors are errors, not a fallback.
        let (c, _s) = sock_pair(&h).await;
        fault::fail_nth(Syscall::Sendfile, 1, sys::errno::ENOMEM);
        let e = h.sock_sendfile(&c, &file, 0, Some(10)).await.unwrap_err();
        fault::clear();
        assert_eq!(e.raw_os_error(), Some(sys::errno::ENOMEM), "{e}");
    });
}

// ---------------------------------------------------------------------------------------------
// Protocols and transports.

/// What a [`Client`] runs in `connection_made`.
type OnMade = Box<dyn FnOnce(&Transport)>;
/// Where a protocol keeps its transport for the test to use.
type TransportSlot = Rc<RefCell<Option<Transport>>>;
/// What a protocol received.
type Bytes = Rc<RefCell<Vec<u8>>>;

/// A client-side protocol that records its callbacks in a log and runs a closure on each
/// chunk of data.
struct Client {
    log: Log,
    transport: TransportSlot,
    received: Bytes,
    keep_open_on_eof: bool,
    on_made: Option<OnMade>,
}

impl Client {
    fn new(log: &Log) -> (Client, TransportSlot, Bytes) {
        let t = Rc::new(RefCell::new(None));
        let r = Rc::new(RefCell::new(Vec::new()));
        (
            Client {
                log: log.clone(),
                transport: t.clone(),
                received: r.clone(),
                keep_open_on_eof: false,
                on_made: None,
            },
            t,
            r,
        )
    }
}

impl Protocol for Client {
    fn connection_made(&mut self, transport: Transport) {
        push(&self.log, "made");
        if let Some(f) = self.on_made.take() {
            f(&transport);
        }
        *self.transport.borrow_mut() = Some(transport);
    }
    fn data_received(&mut self, data: &[u8]) {
        push(&self.log, format!("data {}", String::from_utf8_lossy(data)));
        self.received.borrow_mut().extend_from_slice(data);
    }
    fn eof_received(&mut self) -> bool {
        push(&self.log, "eof");
        self.keep_open_on_eof
    }
    fn connection_lost(&mut self, error: Option<io::Error>) {
        push(&self.log, format!("lost {:?}", error.map(|e| e.kind())));
        self.transport.borrow_mut().take();
    }
}

/// A server-side protocol that echoes and logs its callbacks.
struct LoggingEcho {
    log: Log,
    transport: Option<Transport>,
}

impl Protocol for LoggingEcho {
    fn connection_made(&mut self, transport: Transport) {
        push(&self.log, "made");
        self.transport = Some(transport);
    }
    fn data_received(&mut self, data: &[u8]) {
        push(&self.log, format!("data {}", String::from_utf8_lossy(data)));
        if let Some(t) = &self.transport {
            t.write(data);
        }
    }
    fn eof_received(&mut self) -> bool {
        push(&self.log, "eof");
        false
    }
    fn connection_lost(&mut self, error: Option<io::Error>) {
        push(&self.log, format!("lost {:?}", error.map(|e| e.kind())));
        self.transport = None;
    }
}

#[test]
fn protocol_echo_calls_made_data_eof_lost_in_order_on_both_sides() {
    let lp = warm_loop();
    let h = lp.handle();
    let (slog, clog) = (log(), log());
    let (sl, cl, sl2) = (slog.clone(), clog.clone(), slog.clone());
    run_bounded(&lp, async move {
        let server = h
            .create_server(
                move || LoggingEcho {
                    log: sl2.clone(),
                    transport: None,
                },
                "127.0.0.1",
                0,
            )
            .await
            .unwrap();
        let addr = server.local_addr();
        let (client, slot, received) = Client::new(&cl);
        let t = h.create_connection(client, "127.0.0.1", addr.port()).await.unwrap();
        assert!(
            entries(&cl).is_empty(),
            "connection_made is scheduled with call_soon, not run inline"
        );
        assert_eq!(t.peer_addr().and_then(|a| a.as_inet()), Some(addr));
        assert!(t.local_addr().is_some());
        yield_until(|| slot.borrow().is_some()).await;
        t.write(b"hello");
        yield_until(|| received.borrow().len() == 5).await;
        t.write_eof();
        yield_until(|| entries(&cl).iter().any(|e| e.starts_with("lost"))).await;
        yield_until(|| entries(&sl).iter().any(|e| e.starts_with("lost"))).await;
        assert_eq!(server.active_connections(), 0);
        server.close();
        server.wait_closed().await;
    });
    assert_eq!(entries(&slog), ["made", "data hello", "eof", "lost None"]);
    assert_eq!(entries(&clog), ["made", "data hello", "eof", "lost None"]);
}

#[test]
fn write_eof_lets_the_peer_see_eof_while_the_transport_can_still_receive() {
    let lp = warm_loop();
    let h = lp.handle();
    let slog = log();
    let (sl, sl2) = (slog.clone(), slog.clone());
    let server_received = Rc::new(RefCell::new(Vec::new()));
    let sr = server_received.clone();
    run_bounded(&lp, async move {
        let server = h
            .create_server(
                move || {
                    let (mut p, _, _) = Client::new(&sl);
                    p.received = sr.clone();
                    p.on_made = Some(Box::new(|t: &Transport| {
                        assert!(t.can_write_eof());
                        t.write(b"greeting");
                        t.write_eof();
                        t.write(b"dropped after write_eof");
                    }));
                    p
                },
                "127.0.0.1",
                0,
            )
            .await
            .unwrap();
        let mut c = TcpStream::connect(server.local_addr()).await.unwrap();
        let mut got = Vec::new();
        c.read_to_end(&mut got).await.unwrap();
        assert_eq!(got, b"greeting", "the peer sees the data, then EOF");
        // The server's transport still receives after its write_eof.
        c.write_all(b"reply after eof").await.unwrap();
        yield_until(|| server_received.borrow().as_slice() == b"reply after eof").await;
        c.shutdown().await.unwrap();
        yield_until(|| entries(&sl2).iter().any(|e| e.starts_with("lost"))).await;
        server.close();
    });
    assert_eq!(entries(&slog), ["made", "data reply after eof", "eof", "lost None"]);
}

/// A server protocol that writes `total` bytes in `connection_made`, then closes or aborts;
/// records the write buffer size at that moment.
struct Blaster {
    total: usize,
    abort: bool,
    queued_at_close: Rc<Cell<Option<usize>>>,
    lost: Rc<Cell<bool>>,
}

impl Protocol for Blaster {
    fn connection_made(&mut self, t: Transport) {
        t.write(&pattern(self.total));
        self.queued_at_close.set(Some(t.write_buffer_size()));
        if self.abort {
            t.abort();
        } else {
            t.close();
        }
        assert!(t.is_closing());
    }
    fn data_received(&mut self, _: &[u8]) {}
    fn connection_lost(&mut self, error: Option<io::Error>) {
        assert!(error.is_none(), "{error:?}");
        self.lost.set(true);
    }
}

fn close_or_abort(abort: bool) -> (usize, usize) {
    const TOTAL: usize = 16 << 20;
    let lp = warm_loop();
    let h = lp.handle();
    let queued = Rc::new(Cell::new(None));
    let lost = Rc::new(Cell::new(false));
    let (q, l) = (queued.clone(), lost.clone());
    let got = run_bounded(&lp, async move {
        let server = h
            .create_server(
                move || Blaster {
                    total: TOTAL,
                    abort,
                    queued_at_close: q.clone(),
                    lost: l.clone(),
                },
                "127.0.0.1",
                0,
            )
            .await
            .unwrap();
        let mut c = TcpStream::connect(server.local_addr()).await.unwrap();
        // Let the server fill the connection before reading anything.
        sleep(Duration::from_millis(50)).await;
        let mut got = Vec::new();
        c.read_to_end(&mut got).await.unwrap();
        server.close();
        got
    });
    let queued = queued.get().expect("connection_made ran");
    assert!(lost.get(), "connection_lost ran");
    assert!(
        got == pattern(TOTAL)[..got.len()],
        "the received bytes are a prefix of what was written"
    );
    println!(
        "{}: {} bytes queued in the transport at close, peer received {}",
        if abort { "abort" } else { "close" },
        queued,
        got.len()
    );
    (queued, got.len())
}

#[test]
fn transport_close_flushes_the_queued_data_before_closing() {
    let (queued, received) = close_or_abort(false);
    assert!(queued > 0, "the test needs data queued in the transport at close");
    assert_eq!(received, 16 << 20, "close() sends everything first");
}

#[test]
fn transport_abort_drops_the_queued_data_and_closes_at_once() {
    let (queued, received) = close_or_abort(true);
    assert!(queued > 0, "the test needs data queued in the transport at abort");
    assert_eq!(
        received,
        (16 << 20) - queued,
        "abort() drops exactly what was still queued in the transport"
    );
}

#[test]
fn pause_reading_holds_data_received_until_resume_reading_delivers_what_arrived_meanwhile() {
    let lp = warm_loop();
    let h = lp.handle();
    let slog = log();
    let sl = slog.clone();
    let slot: Rc<RefCell<Option<Transport>>> = Rc::default();
    let st = slot.clone();
    let received = Rc::new(RefCell::new(Vec::new()));
    let sr = received.clone();
    run_bounded(&lp, async move {
        let server = h
            .create_server(
                move || {
                    let (mut p, _, _) = Client::new(&sl);
                    p.transport = st.clone();
                    p.received = sr.clone();
                    p.on_made = Some(Box::new(|t: &Transport| {
                        t.pause_reading();
                        assert!(!t.is_reading());
                    }));
                    p
                },
                "127.0.0.1",
                0,
            )
            .await
            .unwrap();
        let mut c = TcpStream::connect(server.local_addr()).await.unwrap();
        yield_until(|| slot.borrow().is_some()).await;
        c.write_all(b"one ").await.unwrap();
        sleep(Duration::from_millis(20)).await;
        c.write_all(b"two").await.unwrap();
        sleep(Duration::from_millis(50)).await;
        assert!(
            received.borrow().is_empty(),
            "data_received ran while reading was paused"
        );
        assert_eq!(entries(&slog), ["made"]);

        let t = slot.borrow().clone().unwrap();
        t.resume_reading();
        assert!(t.is_reading());
        yield_until(|| received.borrow().len() == 7).await;
        assert_eq!(received.borrow().as_slice(), b"one two");

        // Pausing again works the same way.
        t.pause_reading();
        c.write_all(b"three").await.unwrap();
        sleep(Duration::from_millis(30)).await;
        assert_eq!(received.borrow().len(), 7);
        t.resume_reading();
        yield_until(|| received.borrow().len() == 12).await;
        drop(c);
        yield_until(|| entries(&slog).iter().any(|e| e.starts_with("lost"))).await;
        server.close();
    });
}

/// Flow-control state shared between the producing protocol and the test.
#[derive(Default)]
struct Flow {
    paused: Cell<bool>,
    pauses: Cell<u32>,
    resumes: Cell<u32>,
    written: Cell<usize>,
    max_buffered: Cell<usize>,
    /// The smallest buffer size seen when pause_writing ran, the largest when resume_writing ran.
    min_at_pause: Cell<usize>,
    max_at_resume: Cell<usize>,
    done: Cell<bool>,
}

thread_local! {
    /// The producer's data, made once (`pattern(8 MiB)`).
    static PATTERN: Rc<Vec<u8>> = Rc::new(pattern(8 << 20));
}

/// Writes `total` bytes in `chunk`-sized writes, one per loop iteration, honouring
/// pause_writing / resume_writing.
struct Producer {
    lp: LoopHandle,
    flow: Rc<Flow>,
    transport: Option<Transport>,
    total: usize,
    chunk: usize,
    high: usize,
    low: usize,
}

impl Producer {
    fn schedule(&self) {
        let (lp, flow, total, chunk) = (self.lp.clone(), self.flow.clone(), self.total, self.chunk);
        let t = self.transport.clone().expect("connection made");
        let lp2 = lp.clone();
        lp.call_soon(move || produce(lp2, t, flow, total, chunk)).unwrap();
    }
}

fn produce(lp: LoopHandle, t: Transport, flow: Rc<Flow>, total: usize, chunk: usize) {
    if flow.paused.get() || flow.done.get() {
        // resume_writing schedules the next write.
        return;
    }
    let start = flow.written.get();
    let n = chunk.min(total - start);
    let data = PATTERN.with(|p| p.clone());
    t.write(&data[start..start + n]);
    flow.written.set(start + n);
    flow.max_buffered
        .set(flow.max_buffered.get().max(t.write_buffer_size()));
    if start + n == total {
        flow.done.set(true);
        t.close();
        return;
    }
    let lp2 = lp.clone();
    lp.call_soon(move || produce(lp2, t, flow, total, chunk)).unwrap();
}

impl Protocol for Producer {
    fn connection_made(&mut self, t: Transport) {
        t.set_write_buffer_limits(Some(self.high), Some(self.low));
        assert_eq!(t.write_buffer_limits(), (self.high, self.low));
        self.transport = Some(t);
        self.flow.min_at_pause.set(usize::MAX);
        self.schedule();
    }
    fn data_received(&mut self, _: &[u8]) {}
    fn pause_writing(&mut self) {
        assert!(!self.flow.paused.replace(true), "pause_writing twice in a row");
        self.flow.pauses.set(self.flow.pauses.get() + 1);
        let size = self.transport.as_ref().map_or(0, |t| t.write_buffer_size());
        self.flow.min_at_pause.set(self.flow.min_at_pause.get().min(size));
    }
    fn resume_writing(&mut self) {
        assert!(self.flow.paused.replace(false), "resume_writing without pause_writing");
        self.flow.resumes.set(self.flow.resumes.get() + 1);
        let size = self.transport.as_ref().map_or(0, |t| t.write_buffer_size());
        self.flow.max_at_resume.set(self.flow.max_at_resume.get().max(size));
        self.schedule();
    }
}

#[test]
fn a_protocol_writing_8_mib_to_a_slow_reader_is_paused_and_resumed_at_the_water_marks() {
    const TOTAL: usize = 8 << 20;
    const CHUNK: usize = 32 * 1024;
    const HIGH: usize = 256 * 1024;
    const LOW: usize = 64 * 1024;
    let lp = warm_loop();
    let h = lp.handle();
    let flow = Rc::new(Flow::default());
    let f = flow.clone();
    let hh = h.clone();
    let got = run_bounded(&lp, async move {
        let server = h
            .create_server(
                move || Producer {
                    lp: hh.clone(),
                    flow: f.clone(),
                    transport: None,
                    total: TOTAL,
                    chunk: CHUNK,
                    high: HIGH,
                    low: LOW,
                },
                "127.0.0.1",
                0,
            )
            .await
            .unwrap();
        // A slow reader with a small receive buffer (so the kernel cannot absorb the 8 MiB):
        // 64 KiB every 2 ms.
        let sock = Socket::new(Domain::Inet, SockType::Stream).unwrap();
        sys::set_recv_buffer_size(sock.as_fd(), 16 * 1024).unwrap();
        sock.connect(&SockAddr::Inet(server.local_addr())).await.unwrap();
        let mut c = TcpStream::from_std(std::net::TcpStream::from(sock.into_fd())).unwrap();
        let mut got = Vec::with_capacity(TOTAL);
        let mut buf = vec![0u8; 64 * 1024];
        loop {
            let n = c.read(&mut buf).await.unwrap();
            if n == 0 {
                break;
            }
            got.extend_from_slice(&buf[..n]);
            sleep(Duration::from_millis(2)).await;
        }
        server.close();
        got
    });
    println!(
        "pauses {} resumes {} max buffered {} (high {HIGH}, chunk {CHUNK})",
        flow.pauses.get(),
        flow.resumes.get(),
        flow.max_buffered.get()
    );
    assert_eq!(got.len(), TOTAL);
    assert!(got == pattern(TOTAL), "the data arrived corrupted");
    assert!(flow.pauses.get() >= 1, "pause_writing was never called");
    assert!(flow.resumes.get() >= 1, "resume_writing was never called");
    assert!(
        flow.min_at_pause.get() > HIGH,
        "pause_writing came before the buffer passed the high-water mark: {}",
        flow.min_at_pause.get()
    );
    assert!(
        flow.max_at_resume.get() <= LOW,
        "resume_writing came before the buffer fell to the low-water mark: {}",
        flow.max_at_resume.get()
    );
    assert!(
        flow.max_buffered.get() <= HIGH + CHUNK,
        "the buffer grew past the high-water mark plus one chunk: {}",
        flow.max_buffered.get()
    );
}

#[test]
fn writes_of_one_iteration_leave_in_one_send_in_order_and_the_buffer_counts_them_until_then() {
    let lp = warm_loop();
    let h = lp.handle();
    let slot: Rc<RefCell<Option<Transport>>> = Rc::default();
    let st = slot.clone();
    run_bounded(&lp, async move {
        let server = h
            .create_server(
                move || {
                    let (mut p, _, _) = Client::new(&log());
                    p.transport = st.clone();
                    p
                },
                "127.0.0.1",
                0,
            )
            .await
            .unwrap();
        let mut c = TcpStream::connect(server.local_addr()).await.unwrap();
        yield_until(|| slot.borrow().is_some()).await;
        let t = slot.borrow().clone().unwrap();
        counters::reset();
        t.writelines([&b"one "[..], b"two "]);
        t.write(b"three");
        assert_eq!(
            t.write_buffer_size(),
            13,
            "write-behind: the bytes wait in the transport until the iteration's callbacks ran"
        );
        assert_eq!(counters::snapshot()[Syscall::Send], 0, "no send yet");
        yield_now().await;
        assert_eq!(t.write_buffer_size(), 0, "flushed at the end of the iteration");
        assert_eq!(counters::snapshot()[Syscall::Send], 1, "three writes, one send");
        let mut buf = [0u8; 32];
        let mut got = Vec::new();
        while got.len() < 13 {
            let n = c.read(&mut buf).await.unwrap();
            got.extend_from_slice(&buf[..n]);
        }
        assert_eq!(got, b"one two three");

        let big = pattern(16 << 20);
        t.write(&big);
        let queued = t.write_buffer_size();
        assert!(queued > 0 && queued < big.len(), "queued {queued}");
        let mut total = 0usize;
        let mut chunk = vec![0u8; 256 * 1024];
        while total < big.len() {
            total += c.read(&mut chunk).await.unwrap();
        }
        yield_until(|| t.write_buffer_size() == 0).await;
        t.close();
        let n = c.read(&mut chunk).await.unwrap();
        assert_eq!(n, 0);
        server.close();
    });
}

#[test]
fn a_unix_socket_server_serves_protocols_and_close_removes_its_path() {
    let dir = TempDir::new("unix-server");
    let path = dir.path("srv.sock");
    let lp = warm_loop();
    let h = lp.handle();
    let clog = log();
    let cl = clog.clone();
    let p = path.clone();
    run_bounded(&lp, async move {
        let addr = UnixAddr::pathname(&p).unwrap();
        let server = h.create_unix_server(Echo::new, &addr).unwrap();
        assert_eq!(server.addresses(), vec![SockAddr::Unix(addr.clone())]);
        assert_eq!(server.local_addr(), addr, "a Unix server reports its Unix address");
        // A protocol client and a stream client at the same time.
        let (client, slot, received) = Client::new(&cl);
        let t = h.create_unix_connection(client, &addr).await.unwrap();
        let mut s = UnixStream::connect(&addr).await.unwrap();
        yield_until(|| slot.borrow().is_some()).await;
        t.write(b"via protocol");
        assert_eq!(echo_round(&mut s, b"via stream").await, b"via stream");
        yield_until(|| received.borrow().as_slice() == b"via protocol").await;
        yield_until(|| server.active_connections() == 1).await;
        t.close();
        yield_until(|| server.active_connections() == 0).await;
        server.close();
        server.wait_closed().await;
        assert!(!server.is_serving());
        assert!(!p.exists(), "Server::close removes the socket file");
    });
    assert_eq!(entries(&clog), ["made", "data via protocol", "lost None"]);
    drop(dir);
    assert!(!path.exists());
}

#[test]
fn create_server_on_port_zero_reports_its_port_and_wait_closed_waits_for_connections() {
    let lp = warm_loop();
    let h = lp.handle();
    run_bounded(&lp, async move {
        let server = h.create_server(Echo::new, "127.0.0.1", 0).await.unwrap();
        assert!(server.is_serving());
        let addr = server.local_addr();
        let mut c = TcpStream::connect(addr).await.unwrap();
        c.write_all(b"x").await.unwrap();
        let mut one = [0u8; 1];
        c.read_exact(&mut one).await.unwrap();
        server.close();
        assert!(!server.is_serving());
        // Open connections survive close(); wait_closed waits for them.
        let done = Rc::new(Cell::new(false));
        let (s2, d) = (server.clone(), done.clone());
        let waiter = evloop::spawn(async move {
            s2.wait_closed().await;
            d.set(true);
        });
        sleep(Duration::from_millis(20)).await;
        assert!(!done.get(), "wait_closed returned with a connection still open");
        c.write_all(b"y").await.unwrap();
        c.read_exact(&mut one).await.unwrap();
        assert_eq!(&one, b"y", "the connection still works after close()");
        drop(c);
        waiter.await.unwrap();
        assert!(done.get());
        // A new connection is refused now.
        let e = TcpStream::connect(addr).await.unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::ConnectionRefused);
    });
}
