// Standalone binary: it counts the process's fds (`open_fd_count`), which tests in parallel threads would disturb.
//! Bad input and failures on loopback sockets: refused connections, addresses in use, a peer
//! that resets or half-closes mid-stream, writes to a closed peer (an error, never a SIGPIPE:
//! mio #577), zero-byte reads and writes, and syscall failures injected with
//! `evloop_syscalls::fault` (EINTR retried, ECONNRESET / EMFILE / ENOMEM reported, nothing leaked).
//!
//! SIGPIPE: Rust's runtime ignores SIGPIPE in every Rust program (a test binary re-run as a child
//! ignores it again at start-up), so "the process did not die" proves nothing, and an ignored
//! signal is discarded before it could be seen pending. A ptraced process is different: the
//! kernel reports even an ignored signal to the tracer. So the SIGPIPE test re-runs its scenario
//! in a child under `strace -e signal=SIGPIPE` and counts the reported signals; a control run
//! that writes with plain `write(2)` proves the method sees a SIGPIPE when one is raised.

use std::cell::RefCell;
use std::io::{self, IoSlice};
use std::net::SocketAddr;
use std::os::fd::AsFd;
use std::process::Command;
use std::rc::Rc;
use std::time::Duration;

use evloop::net::{Domain, SockAddr, SockType, Socket, TcpListener, TcpStream, UdpSocket, UnixAddr};
use evloop::net::{UnixListener, UnixStream};
use evloop::sys::counters;
use evloop::sys::{Syscall, fault};
use evloop::{
    event_loop::LoopHandle,
    io::{AsyncReadExt, AsyncWriteExt},
    protocol::{Protocol, Transport},
    time::sleep,
};
use evloop_syscalls as sys;
use evloop_tests::net::loopback_v4;
use evloop_tests::{child, run_bounded, serial, warm_loop, yield_until};

// ---------------------------------------------------------------------------------------------
// Helpers (this file only). Every test holds `serial()`: one of them counts the process's open
// fds, which every other test running at the same time would disturb.

/// An address on loopback where nothing listens: bound once (so the port was free), then closed.
fn closed_port(lp: &LoopHandle) -> SocketAddr {
    run_bounded(lp, async {
        let l = TcpListener::bind(loopback_v4()).await.unwrap();
        l.local_addr().unwrap()
    })
}

/// A connected TCP pair on loopback: (client, accepted).
async fn tcp_pair() -> (TcpStream, TcpStream) {
    let listener = TcpListener::bind(loopback_v4()).await.unwrap();
    let addr = listener.local_addr().unwrap();
    let accept = evloop::spawn(async move { listener.accept().await.unwrap().0 });
    let c = TcpStream::connect(addr).await.unwrap();
    (c, accept.await.unwrap())
}

fn is_closed_peer_error(e: &io::Error) -> bool {
    matches!(e.kind(), io::ErrorKind::BrokenPipe | io::ErrorKind::ConnectionReset)
}

/// Writes to `w` until it fails (the peer is gone), at most 200 times with a short sleep in
/// between (the peer's RST needs a moment to arrive). Returns the error.
async fn write_until_error<W: evloop::io::AsyncWrite + Unpin>(w: &mut W) -> io::Error {
    for _ in 0..200 {
        match w.write(b"are you there?").await {
            Ok(_) => sleep(Duration::from_millis(2)).await,
            Err(e) => return e,
        }
    }
    panic!("200 writes to a closed peer all succeeded");
}

// ---------------------------------------------------------------------------------------------
// Refused connections and addresses in use.

#[test]
fn connection_refused_is_econnrefused_naming_the_address() {
    let _serial = serial();
    let lp = warm_loop();
    let addr = closed_port(&lp);
    let h = lp.handle();
    run_bounded(&lp, async move {
        let e = TcpStream::connect(addr).await.unwrap_err();
        println!("TcpStream::connect: {e}");
        assert_eq!(e.kind(), io::ErrorKind::ConnectionRefused);
        assert!(e.to_string().contains(&addr.to_string()), "{e}");

        let sock = Socket::new(Domain::Inet, SockType::Stream).unwrap();
        let e = h.sock_connect(&sock, &SockAddr::Inet(addr)).await.unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::ConnectionRefused);
        assert!(e.to_string().contains(&addr.to_string()), "{e}");

        struct Nothing;
        impl Protocol for Nothing {
            fn data_received(&mut self, _: &[u8]) {}
        }
        let e = h
            .create_connection(Nothing, "127.0.0.1", addr.port())
            .await
            .unwrap_err();
        println!("create_connection: {e}");
        assert_eq!(e.kind(), io::ErrorKind::ConnectionRefused);
        assert!(e.to_string().contains(&addr.to_string()), "{e}");
    });
}

#[test]
fn connecting_to_a_closed_port_on_other_loopback_addresses_and_port_zero_fails_promptly() {
    let _serial = serial();
    let lp = warm_loop();
    let closed = closed_port(&lp);
    run_bounded(&lp, async move {
        let mut targets: Vec<SocketAddr> = vec![
            SocketAddr::new("127.0.0.2".parse().unwrap(), closed.port()),
            "127.0.0.1:0".parse().unwrap(),
        ];
        if TcpListener::bind("[::1]:0").await.is_ok() {
            targets.push(SocketAddr::new("::1".parse().unwrap(), closed.port()));
        } else {
            println!("note: ::1 not available, IPv6 target skipped");
        }
        for t in targets {
            let started = std::time::Instant::now();
            let r = evloop::time::timeout(Duration::from_secs(10), TcpStream::connect(t)).await;
            let e = match r {
                Ok(Ok(_)) => panic!("connecting to {t} succeeded"),
                Ok(Err(e)) => e,
                Err(_) => panic!("connecting to {t} hung for 10 s"),
            };
            println!("connect to {t}: {e} (after {:?})", started.elapsed());
            assert!(
                matches!(
                    e.kind(),
                    io::ErrorKind::ConnectionRefused
                        | io::ErrorKind::AddrNotAvailable
                        | io::ErrorKind::NetworkUnreachable
                ),
                "{t}: {e}"
            );
            assert!(e.to_string().contains(&t.to_string()), "the error names {t}: {e}");
        }
    });
}

#[test]
fn connecting_to_a_unix_path_that_does_not_exist_names_the_path() {
    let _serial = serial();
    let lp = warm_loop();
    run_bounded(&lp, async {
        let path = std::env::temp_dir().join(format!("evloop-no-such-{}.sock", std::process::id()));
        let e = UnixStream::connect(&UnixAddr::pathname(&path).unwrap())
            .await
            .unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::NotFound, "{e}");
        assert!(e.to_string().contains(&path.display().to_string()), "{e}");
    });
}

#[test]
fn binding_an_address_in_use_is_addr_in_use_naming_the_address() {
    let _serial = serial();
    let lp = warm_loop();
    let h = lp.handle();
    run_bounded(&lp, async move {
        let first = TcpListener::bind(loopback_v4()).await.unwrap();
        let addr = first.local_addr().unwrap();
        let e = TcpListener::bind(addr).await.unwrap_err();
        println!("TcpListener::bind twice: {e}");
        assert_eq!(e.kind(), io::ErrorKind::AddrInUse);
        assert!(e.to_string().contains(&addr.to_string()), "{e}");

        let e = h
            .create_server(evloop_tests::net::Echo::new, "127.0.0.1", addr.port())
            .await
            .unwrap_err();
        println!("create_server on a port in use: {e}");
        assert_eq!(e.kind(), io::ErrorKind::AddrInUse);
        assert!(e.to_string().contains(&addr.to_string()), "{e}");

        let u = UdpSocket::bind(loopback_v4()).await.unwrap();
        let uaddr = u.local_addr().unwrap();
        let e = UdpSocket::bind(uaddr).await.unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::AddrInUse);
        assert!(e.to_string().contains(&uaddr.to_string()), "{e}");

        // A Unix socket file left behind by a closed listener still blocks the path.
        let path = std::env::temp_dir().join(format!("evloop-inuse-{}.sock", std::process::id()));
        let _ = std::fs::remove_file(&path);
        let ua = UnixAddr::pathname(&path).unwrap();
        drop(UnixListener::bind(&ua).unwrap());
        let e = UnixListener::bind(&ua).unwrap_err();
        let _ = std::fs::remove_file(&path);
        assert_eq!(e.kind(), io::ErrorKind::AddrInUse);
        assert!(e.to_string().contains(&path.display().to_string()), "{e}");
        drop(first);
    });
}

// ---------------------------------------------------------------------------------------------
// A peer that resets or half-closes.

#[test]
fn a_peer_reset_mid_stream_gives_the_reader_connection_reset() {
    let _serial = serial();
    let lp = warm_loop();
    run_bounded(&lp, async {
        let (mut c, mut s) = tcp_pair().await;
        s.write_all(&[1u8; 1000]).await.unwrap();
        let mut buf = [0u8; 1000];
        c.read_exact(&mut buf).await.unwrap();
        sys::set_linger_zero(s.socket().as_fd()).unwrap();
        drop(s);
        let e = c.read(&mut buf).await.unwrap_err();
        println!("read after the peer's RST: {e}");
        assert_eq!(e.kind(), io::ErrorKind::ConnectionReset, "{e}");
        // And writing is an error too (never a SIGPIPE).
        let e = write_until_error(&mut c).await;
        assert!(is_closed_peer_error(&e), "{e}");
    });
}

/// A protocol that records its callbacks and what it received; optionally answers EOF with a
/// summary and a close.
#[derive(Clone, Default)]
struct Seen {
    log: Rc<RefCell<Vec<String>>>,
    data: Rc<RefCell<Vec<u8>>>,
    transport: Rc<RefCell<Option<Transport>>>,
    lost: Rc<RefCell<Option<Option<io::ErrorKind>>>>,
    lost_message: Rc<RefCell<String>>,
    answer_eof: bool,
    /// Return `true` from `eof_received` (keep the transport open for writing).
    keep_open_on_eof: bool,
}

struct Watcher(Seen);

impl Protocol for Watcher {
    fn connection_made(&mut self, t: Transport) {
        self.0.log.borrow_mut().push("made".into());
        *self.0.transport.borrow_mut() = Some(t);
    }
    fn data_received(&mut self, data: &[u8]) {
        self.0.log.borrow_mut().push("data".into());
        self.0.data.borrow_mut().extend_from_slice(data);
    }
    fn eof_received(&mut self) -> bool {
        self.0.log.borrow_mut().push("eof".into());
        if self.0.answer_eof {
            let t = self.0.transport.borrow().clone().unwrap();
            t.write(format!("got {} bytes", self.0.data.borrow().len()).as_bytes());
            t.close();
            return true;
        }
        self.0.keep_open_on_eof
    }
    fn connection_lost(&mut self, error: Option<io::Error>) {
        self.0.log.borrow_mut().push("lost".into());
        *self.0.lost_message.borrow_mut() = error.as_ref().map(|e| e.to_string()).unwrap_or_default();
        *self.0.lost.borrow_mut() = Some(error.map(|e| e.kind()));
    }
}

#[test]
fn a_peer_reset_gives_the_protocol_connection_lost_with_the_error() {
    let _serial = serial();
    let lp = warm_loop();
    let h = lp.handle();
    let seen = Seen::default();
    let s2 = seen.clone();
    run_bounded(&lp, async move {
        let server = h
            .create_server(move || Watcher(s2.clone()), "127.0.0.1", 0)
            .await
            .unwrap();
        let mut c = TcpStream::connect(server.local_addr()).await.unwrap();
        c.write_all(b"hello").await.unwrap();
        yield_until(|| seen.data.borrow().len() == 5).await;
        sys::set_linger_zero(c.socket().as_fd()).unwrap();
        drop(c);
        yield_until(|| seen.lost.borrow().is_some()).await;
        println!("server protocol: connection_lost({})", seen.lost_message.borrow());
        assert_eq!(*seen.lost.borrow(), Some(Some(io::ErrorKind::ConnectionReset)));
        assert_eq!(*seen.log.borrow(), ["made", "data", "lost"]);
        yield_until(|| server.active_connections() == 0).await;

        // The same for a client-side transport whose server resets.
        let listener = TcpListener::bind(loopback_v4()).await.unwrap();
        let addr = listener.local_addr().unwrap();
        let client_seen = Seen::default();
        let t = h
            .create_connection(Watcher(client_seen.clone()), "127.0.0.1", addr.port())
            .await
            .unwrap();
        let (s, _) = listener.accept().await.unwrap();
        yield_until(|| client_seen.transport.borrow().is_some()).await;
        sys::set_linger_zero(s.socket().as_fd()).unwrap();
        drop(s);
        yield_until(|| client_seen.lost.borrow().is_some()).await;
        assert_eq!(*client_seen.lost.borrow(), Some(Some(io::ErrorKind::ConnectionReset)));
        assert!(t.is_closing());
        server.close();
    });
}

#[test]
fn a_peer_half_close_gives_eof_while_the_reader_can_still_write_back() {
    let _serial = serial();
    let lp = warm_loop();
    run_bounded(&lp, async {
        let (mut c, mut s) = tcp_pair().await;
        c.write_all(b"request").await.unwrap();
        c.shutdown().await.unwrap();
        let mut req = Vec::new();
        s.read_to_end(&mut req).await.unwrap();
        assert_eq!(req, b"request", "data, then EOF");
        // EOF again on every later read.
        let mut buf = [0u8; 8];
        assert_eq!(s.read(&mut buf).await.unwrap(), 0);
        s.write_all(b"response after your EOF").await.unwrap();
        s.shutdown().await.unwrap();
        let mut resp = Vec::new();
        c.read_to_end(&mut resp).await.unwrap();
        assert_eq!(resp, b"response after your EOF");
    });
}

#[test]
fn a_protocol_that_keeps_the_transport_open_on_eof_can_still_write_back() {
    let _serial = serial();
    let lp = warm_loop();
    let h = lp.handle();
    let seen = Seen {
        answer_eof: true,
        ..Seen::default()
    };
    let s2 = seen.clone();
    run_bounded(&lp, async move {
        let server = h
            .create_server(move || Watcher(s2.clone()), "127.0.0.1", 0)
            .await
            .unwrap();
        let mut c = TcpStream::connect(server.local_addr()).await.unwrap();
        c.write_all(&[0u8; 12_345]).await.unwrap();
        c.shutdown().await.unwrap();
        let mut resp = Vec::new();
        c.read_to_end(&mut resp).await.unwrap();
        assert_eq!(resp, b"got 12345 bytes");
        yield_until(|| seen.lost.borrow().is_some()).await;
        assert_eq!(*seen.lost.borrow(), Some(None));
        let log = seen.log.borrow().clone();
        assert_eq!(log.first().map(String::as_str), Some("made"));
        assert_eq!(&log[log.len() - 2..], ["eof", "lost"]);
        server.close();
    });
}

// ---------------------------------------------------------------------------------------------
// Writing to a closed peer: an error, never SIGPIPE.

/// Every way evloop writes to a stream socket, each to a peer that has gone away; each must
/// fail with EPIPE or ECONNRESET. Run in-process by the test below and, under strace, in a child.
fn write_to_closed_peers_scenario() {
    let lp = warm_loop();
    let h = lp.handle();
    run_bounded(&lp, async move {
        // Unix stream: the peer's close makes the next send EPIPE at once.
        let (mut a, b) = UnixStream::pair().unwrap();
        drop(b);
        let e = a.write(b"x").await.unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::BrokenPipe, "{e}");
        let e = a
            .write_vectored(&[IoSlice::new(b"x"), IoSlice::new(b"y")])
            .await
            .unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::BrokenPipe, "{e}");
        let (_r, mut w) = a.into_split();
        let e = w.write_all(b"half").await.unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::BrokenPipe, "{e}");

        // TCP: the first write after the peer's close may still be accepted (the peer answers
        // it with RST); later ones fail.
        let (mut c, s) = tcp_pair().await;
        drop(s);
        let e = write_until_error(&mut c).await;
        println!("TCP write to a closed peer: {e}");
        assert!(is_closed_peer_error(&e), "{e}");

        // sock_sendall on a Socket.
        let (c2, s2) = tcp_pair().await;
        drop(s2);
        let sock = c2.socket();
        let mut err = None;
        for _ in 0..200 {
            if let Err(e) = h.sock_sendall(sock, b"ping").await {
                err = Some(e);
                break;
            }
            sleep(Duration::from_millis(2)).await;
        }
        let e = err.expect("sock_sendall to a closed peer kept succeeding");
        assert!(is_closed_peer_error(&e), "{e}");

        // A transport (kept open by its protocol when the peer's EOF arrives, so its writes
        // reach the socket): the write error closes it with connection_lost(Some(EPIPE or
        // ECONNRESET)).
        let listener = TcpListener::bind(loopback_v4()).await.unwrap();
        let addr = listener.local_addr().unwrap();
        let seen = Seen {
            keep_open_on_eof: true,
            ..Seen::default()
        };
        let t = h
            .create_connection(Watcher(seen.clone()), "127.0.0.1", addr.port())
            .await
            .unwrap();
        let (s3, _) = listener.accept().await.unwrap();
        drop(s3);
        for _ in 0..200 {
            if seen.lost.borrow().is_some() {
                break;
            }
            t.write(b"into the void");
            sleep(Duration::from_millis(2)).await;
        }
        let lost = (*seen.lost.borrow()).expect("connection_lost after writing to a closed peer");
        println!("transport: connection_lost({})", seen.lost_message.borrow());
        let kind = lost.expect("the transport failed with an error");
        assert!(
            matches!(kind, io::ErrorKind::BrokenPipe | io::ErrorKind::ConnectionReset),
            "{kind:?}"
        );

        // A Unix stream transport: EPIPE at the first write after the peer left.
        let unix_seen = Seen {
            keep_open_on_eof: true,
            ..Seen::default()
        };
        let path = std::env::temp_dir().join(format!("evloop-sigpipe-{}.sock", std::process::id()));
        let _ = std::fs::remove_file(&path);
        let uaddr = UnixAddr::pathname(&path).unwrap();
        let ul = UnixListener::bind(&uaddr).unwrap();
        let ut = h
            .create_unix_connection(Watcher(unix_seen.clone()), &uaddr)
            .await
            .unwrap();
        let (peer, _) = ul.accept().await.unwrap();
        drop(peer);
        drop(ul);
        let _ = std::fs::remove_file(&path);
        yield_until(|| unix_seen.transport.borrow().is_some()).await;
        yield_until(|| unix_seen.log.borrow().iter().any(|e| e == "eof")).await;
        ut.write(b"x");
        yield_until(|| unix_seen.lost.borrow().is_some()).await;
        println!("unix transport: connection_lost({})", unix_seen.lost_message.borrow());
        assert_eq!(*unix_seen.lost.borrow(), Some(Some(io::ErrorKind::BrokenPipe)));
    });
}

/// The control: a plain `write(2)` on a socket whose peer is gone raises SIGPIPE (ignored by
/// the Rust runtime, but visible to a tracer).
fn raise_one_sigpipe_with_plain_write() {
    let (a, b) = sys::socketpair(Domain::Unix, SockType::Stream).unwrap();
    drop(b);
    let e = sys::write(a.as_fd(), b"x").unwrap_err();
    assert_eq!(e.raw_os_error(), Some(sys::errno::EPIPE));
}

#[test]
fn writing_to_a_closed_peer_is_an_error() {
    let _serial = serial();
    write_to_closed_peers_scenario();
}

const SIGPIPE_CHILD: &str = "EVLOOP_NET_FAULTS_SIGPIPE_CHILD";
const SIGPIPE_MODE: &str = "EVLOOP_NET_FAULTS_SIGPIPE_MODE";

/// Runs test `name` of this binary as a child under `strace -f -e signal=SIGPIPE` with
/// `mode` in its environment; returns the number of SIGPIPEs strace saw, or `None` (with the
/// reason printed) when strace cannot trace here.
fn sigpipes_seen_by_strace(name: &str, mode: &str) -> Option<usize> {
    let out_file = std::env::temp_dir().join(format!("evloop-strace-{}-{mode}.txt", std::process::id()));
    let _ = std::fs::remove_file(&out_file);
    let exe = std::env::current_exe().unwrap();
    let run = Command::new("strace")
        .args(["-f", "-qq", "-e", "trace=none", "-e", "signal=SIGPIPE", "-o"])
        .arg(&out_file)
        .arg(&exe)
        .args(["--exact", name, "--nocapture", "--test-threads=1", "--include-ignored"])
        .env(SIGPIPE_CHILD, "1")
        .env(SIGPIPE_MODE, mode)
        .output();
    let out = match run {
        Ok(o) => o,
        Err(e) => {
            println!("skipped the strace check: cannot run strace ({e})");
            return None;
        }
    };
    let trace = std::fs::read_to_string(&out_file).unwrap_or_default();
    let _ = std::fs::remove_file(&out_file);
    let stderr = String::from_utf8_lossy(&out.stderr);
    if stderr.contains("ptrace") && stderr.contains("Operation not permitted") {
        println!("skipped the strace check: ptrace is not permitted here ({stderr})");
        return None;
    }
    child::assert_success(&format!("SIGPIPE child ({mode}) under strace"), &out);
    Some(trace.lines().filter(|l| l.contains("SIGPIPE")).count())
}

#[test]
fn writing_to_closed_peers_never_raises_sigpipe() {
    let _serial = serial();
    if child::is_child(SIGPIPE_CHILD) {
        if std::env::var(SIGPIPE_MODE).as_deref() == Ok("control") {
            raise_one_sigpipe_with_plain_write();
        } else {
            write_to_closed_peers_scenario();
        }
        return;
    }
    let name = "writing_to_closed_peers_never_raises_sigpipe";
    let Some(control) = sigpipes_seen_by_strace(name, "control") else {
        // Without a tracer the scenario still must not kill the child.
        child::assert_success("SIGPIPE child", &child::run(name, SIGPIPE_CHILD));
        return;
    };
    assert!(control >= 1, "the control write(2) must show a SIGPIPE under strace");
    let seen = sigpipes_seen_by_strace(name, "evloop").expect("strace worked for the control run");
    println!("SIGPIPEs seen by strace: control {control}, evloop's writes {seen}");
    assert_eq!(seen, 0, "evloop raised SIGPIPE while writing to closed peers");
}

#[test]
fn sock_sendfile_to_a_closed_peer_raises_no_sigpipe() {
    let _serial = serial();
    if child::is_child(SIGPIPE_CHILD) {
        let path = std::env::temp_dir().join(format!("evloop-sendfile-sigpipe-{}.bin", std::process::id()));
        std::fs::write(&path, vec![3u8; 1 << 20]).unwrap();
        let file = std::fs::File::open(&path).unwrap();
        let _ = std::fs::remove_file(&path);
        let lp = warm_loop();
        let h = lp.handle();
        run_bounded(&lp, async move {
            let (c, s) = tcp_pair().await;
            drop(s);
            let mut err = None;
            for _ in 0..200 {
                match h.sock_sendfile(c.socket(), &file, 0, Some(1 << 20)).await {
                    Ok(_) => sleep(Duration::from_millis(2)).await,
                    Err(e) => {
                        err = Some(e);
                        break;
                    }
                }
            }
            let e = err.expect("sendfile to a closed peer kept succeeding");
            assert!(is_closed_peer_error(&e), "{e}");
        });
        return;
    }
    let name = "sock_sendfile_to_a_closed_peer_raises_no_sigpipe";
    let Some(seen) = sigpipes_seen_by_strace(name, "evloop") else {
        return;
    };
    assert_eq!(seen, 0, "sock_sendfile raised {seen} SIGPIPE(s)");
}

// ---------------------------------------------------------------------------------------------
// Zero-byte reads and writes.

#[test]
fn a_zero_byte_read_into_an_empty_buffer_is_ok_0_and_makes_no_syscall() {
    let _serial = serial();
    let lp = warm_loop();
    let h = lp.handle();
    run_bounded(&lp, async move {
        let (mut c, mut s) = tcp_pair().await;
        s.write_all(b"pending").await.unwrap();
        sleep(Duration::from_millis(5)).await;
        counters::reset();
        assert_eq!(c.read(&mut []).await.unwrap(), 0);
        c.read_exact(&mut []).await.unwrap();
        assert_eq!(h.sock_recv(c.socket(), 0).await.unwrap(), Vec::<u8>::new());
        assert_eq!(h.sock_recv_into(c.socket(), &mut []).await.unwrap(), 0);
        let (mut rd, wr) = c.into_split();
        assert_eq!(rd.read(&mut []).await.unwrap(), 0);
        let cnt = counters::snapshot();
        println!("five empty reads: {cnt}");
        assert_eq!(cnt.total_syscalls(), 0, "an empty read makes no syscall: {cnt}");
        // The data is still there, untouched.
        let mut buf = [0u8; 16];
        let n = rd.read(&mut buf).await.unwrap();
        assert_eq!(&buf[..n], b"pending");
        drop(wr);
    });
}

#[test]
fn a_zero_byte_write_is_ok_0_and_makes_no_syscall() {
    let _serial = serial();
    let lp = warm_loop();
    let h = lp.handle();
    run_bounded(&lp, async move {
        let (mut c, mut s) = tcp_pair().await;
        counters::reset();
        assert_eq!(c.write(b"").await.unwrap(), 0);
        c.write_all(b"").await.unwrap();
        assert_eq!(c.write_vectored(&[]).await.unwrap(), 0);
        assert_eq!(
            c.write_vectored(&[IoSlice::new(b""), IoSlice::new(b"")]).await.unwrap(),
            0
        );
        h.sock_sendall(c.socket(), b"").await.unwrap();
        let cnt = counters::snapshot();
        println!("five empty writes: {cnt}");
        assert_eq!(cnt.total_syscalls(), 0, "an empty write makes no syscall: {cnt}");
        // The peer sees nothing until a real write.
        c.write_all(b"real").await.unwrap();
        c.shutdown().await.unwrap();
        let mut got = Vec::new();
        s.read_to_end(&mut got).await.unwrap();
        assert_eq!(got, b"real");
    });
}

#[test]
fn a_transport_write_of_nothing_makes_no_syscall() {
    let _serial = serial();
    let lp = warm_loop();
    let h = lp.handle();
    let seen = Seen::default();
    let s2 = seen.clone();
    run_bounded(&lp, async move {
        let server = h
            .create_server(move || Watcher(s2.clone()), "127.0.0.1", 0)
            .await
            .unwrap();
        let c = TcpStream::connect(server.local_addr()).await.unwrap();
        yield_until(|| seen.transport.borrow().is_some()).await;
        let t = seen.transport.borrow().clone().unwrap();
        counters::reset();
        t.write(b"");
        t.writelines([&b""[..], b""]);
        let cnt = counters::snapshot();
        assert_eq!(cnt.total_syscalls(), 0, "{cnt}");
        assert_eq!(t.write_buffer_size(), 0);
        drop(c);
        server.close();
    });
}

// ---------------------------------------------------------------------------------------------
// Injected syscall failures.

#[test]
fn eintr_on_send_recv_and_accept_is_retried_transparently() {
    let _serial = serial();
    let lp = warm_loop();
    run_bounded(&lp, async {
        let listener = TcpListener::bind(loopback_v4()).await.unwrap();
        let addr = listener.local_addr().unwrap();
        let mut c = TcpStream::connect(addr).await.unwrap();
        listener.socket().async_fd().readable().await.unwrap();
        counters::reset();
        fault::fail_nth(Syscall::Accept4, 1, sys::errno::EINTR);
        let (mut s, _) = listener.accept().await.unwrap();
        assert_eq!(counters::snapshot()[Syscall::Accept4], 2, "accept4 retried after EINTR");

        c.socket().async_fd().writable().await.unwrap();
        counters::reset();
        fault::fail_nth(Syscall::Send, 1, sys::errno::EINTR);
        c.write_all(b"through EINTR").await.unwrap();
        assert_eq!(counters::snapshot()[Syscall::Send], 2, "send retried after EINTR");

        s.socket().async_fd().readable().await.unwrap();
        counters::reset();
        fault::fail_nth(Syscall::Recv, 1, sys::errno::EINTR);
        let mut buf = [0u8; 64];
        let n = s.read(&mut buf).await.unwrap();
        assert_eq!(&buf[..n], b"through EINTR");
        assert_eq!(counters::snapshot()[Syscall::Recv], 2, "recv retried after EINTR");
        assert_eq!(fault::pending(), 0);
    });
}

#[test]
fn an_injected_econnreset_on_recv_reaches_the_reader_and_the_protocol() {
    let _serial = serial();
    let lp = warm_loop();
    let h = lp.handle();
    let seen = Seen::default();
    let s2 = seen.clone();
    run_bounded(&lp, async move {
        let (mut c, mut s) = tcp_pair().await;
        c.write_all(b"x").await.unwrap();
        s.socket().async_fd().readable().await.unwrap();
        fault::fail_nth(Syscall::Recv, 1, sys::errno::ECONNRESET);
        let e = s.read(&mut [0u8; 8]).await.unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::ConnectionReset);
        // The data is still in the kernel: the next read gets it (nothing was consumed).
        let mut buf = [0u8; 8];
        assert_eq!(s.read(&mut buf).await.unwrap(), 1);

        let server = h
            .create_server(move || Watcher(s2.clone()), "127.0.0.1", 0)
            .await
            .unwrap();
        let mut c = TcpStream::connect(server.local_addr()).await.unwrap();
        yield_until(|| seen.transport.borrow().is_some()).await;
        // The transport's next recv fails.
        fault::fail_nth(Syscall::Recv, 1, sys::errno::ECONNRESET);
        c.write_all(b"boom").await.unwrap();
        yield_until(|| seen.lost.borrow().is_some()).await;
        fault::clear();
        assert_eq!(*seen.lost.borrow(), Some(Some(io::ErrorKind::ConnectionReset)));
        assert!(seen.data.borrow().is_empty());
        // The transport closed its socket: the client sees the end of the stream.
        let mut rest = Vec::new();
        let r = c.read_to_end(&mut rest).await;
        assert!(r.is_ok() || r.as_ref().is_err_and(|e| e.kind() == io::ErrorKind::ConnectionReset));
        server.close();
    });
}

#[test]
fn an_injected_emfile_on_accept_is_returned_and_the_next_accept_works() {
    let _serial = serial();
    let lp = warm_loop();
    run_bounded(&lp, async {
        let listener = TcpListener::bind(loopback_v4()).await.unwrap();
        let addr = listener.local_addr().unwrap();
        let _c1 = TcpStream::connect(addr).await.unwrap();
        listener.socket().async_fd().readable().await.unwrap();
        fault::fail_nth(Syscall::Accept4, 1, sys::errno::EMFILE);
        let e = listener.accept().await.unwrap_err();
        assert_eq!(evloop::io::os_error(&e), Some(sys::errno::EMFILE), "{e}");
        assert!(
            e.to_string().starts_with("accept4(fd "),
            "the error names the call and the fd: {e}"
        );
        // The pending connection is still queued and the listener still works.
        let (s, peer) = listener.accept().await.unwrap();
        assert_eq!(s.peer_addr().unwrap(), peer);
    });
}

#[test]
fn injected_failures_while_creating_a_socket_leave_no_fd_behind() {
    let _serial = serial();
    let lp = warm_loop();
    let h = lp.handle();
    let addr = closed_port(&lp);
    run_bounded(&lp, async move {
        let listener = TcpListener::bind(loopback_v4()).await.unwrap();
        let live = listener.local_addr().unwrap();
        let before = evloop_tests::fds::open_fd_count();

        fault::fail_nth(Syscall::Socket, 1, sys::errno::EMFILE);
        let e = TcpStream::connect(live).await.unwrap_err();
        assert_eq!(e.raw_os_error(), Some(sys::errno::EMFILE), "{e}");

        // The socket exists but cannot be registered: the error names the fd, and the socket
        // is closed again.
        fault::fail_nth(Syscall::EpollCtl, 1, sys::errno::ENOMEM);
        let e = TcpStream::connect(live).await.unwrap_err();
        println!("epoll_ctl failing with ENOMEM: {e}");
        assert_eq!(e.kind(), io::ErrorKind::OutOfMemory, "{e}");
        assert!(e.to_string().contains("fd "), "{e}");

        fault::fail_nth(Syscall::Connect, 1, sys::errno::ENETUNREACH);
        let e = TcpStream::connect(addr).await.unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::NetworkUnreachable, "{e}");
        assert!(e.to_string().contains(&addr.to_string()), "{e}");

        fault::fail_nth(Syscall::EpollCtl, 1, sys::errno::ENOMEM);
        struct Nothing;
        impl Protocol for Nothing {
            fn data_received(&mut self, _: &[u8]) {}
        }
        let e = h
            .create_connection(Nothing, "127.0.0.1", live.port())
            .await
            .unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::OutOfMemory, "{e}");
        fault::clear();

        // No fd leaked by the failures (the accept queue holds the half-made connections, but
        // they are the listener's, not fds of this process).
        let after = evloop_tests::fds::open_fd_count();
        assert_eq!(after, before, "fds leaked by failed connects");
        drop(listener);
    });
}

/// Regression: EPOLLERR (an ICMP "port unreachable" on a connected UDP socket) set a readiness
/// bit that EAGAIN never cleared, so the receive after the error spun on EAGAIN forever and
/// hung the loop. Now the error is returned once and the next receive waits.
#[test]
fn a_udp_receive_after_an_icmp_error_waits_instead_of_spinning() {
    let _serial = serial();
    let lp = warm_loop();
    run_bounded(&lp, async move {
        // A port nobody listens on: bind it, note it, close it.
        let closed_port = {
            let s = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
            s.local_addr().unwrap()
        };
        let udp = UdpSocket::bind("127.0.0.1:0").await.unwrap();
        udp.connect(closed_port).await.unwrap();
        udp.send(b"anyone?").await.unwrap();
        let mut buf = [0u8; 16];
        let first = evloop::time::timeout(Duration::from_secs(5), udp.recv(&mut buf)).await;
        let err = first.expect("the ICMP error arrives").unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::ConnectionRefused, "{err}");
        // Nothing more is coming: the next receive must park (and time out), not spin.
        let before = counters::snapshot();
        let second = evloop::time::timeout(Duration::from_millis(50), udp.recv(&mut buf)).await;
        assert!(second.is_err(), "nothing to receive: {second:?}");
        let recvs = counters::snapshot().since(&before)[Syscall::Recv];
        assert!(recvs <= 2, "the receive spun: {recvs} recv calls in 50 ms");
    });
}
