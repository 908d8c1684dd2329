//! The simulated kernel against Linux: each scenario runs once on the real kernel and once on a
//! simulated one, through the same wrappers, and must log the same outcomes.
//!
//! The simulated run replays an empty tape (every decision 0: no latency, no faults, the
//! kernel's own order of events), which is the run closest to loopback on a real machine. The
//! scenarios log what the contract fixes (results, errnos, readiness bits) and nothing that
//! differs by design (descriptor numbers, ephemeral port numbers).
#![cfg(feature = "simulation")]

use std::io::{self, IoSlice};
use std::net::SocketAddr;

use evloop_syscalls::sim::{Config, Kernel, Tape};
use evloop_syscalls::*;

/// Runs `scenario` on Linux and on the simulation and compares the logs.
fn both(scenario: impl Fn(&mut Vec<String>)) {
    let mut real = Vec::new();
    scenario(&mut real);
    let kernel = Kernel::with_config(1, Config::default().replay(Tape::new()));
    let mut sim = Vec::new();
    {
        let _on = kernel.enter();
        scenario(&mut sim);
    }
    assert_eq!(
        real,
        sim,
        "left: Linux, right: the simulation\nsimulated trace:\n{}",
        kernel.trace()
    );
}

fn errno_name(e: &io::Error) -> String {
    let names = [
        (libc::EAGAIN, "EAGAIN"),
        (libc::EPIPE, "EPIPE"),
        (libc::ECONNRESET, "ECONNRESET"),
        (libc::ECONNREFUSED, "ECONNREFUSED"),
        (libc::EINPROGRESS, "EINPROGRESS"),
        (libc::EISCONN, "EISCONN"),
        (libc::EALREADY, "EALREADY"),
        (libc::ENOTCONN, "ENOTCONN"),
        (libc::EINVAL, "EINVAL"),
        (libc::EBADF, "EBADF"),
        (libc::ENOENT, "ENOENT"),
        (libc::EEXIST, "EEXIST"),
        (libc::EPERM, "EPERM"),
        (libc::EADDRINUSE, "EADDRINUSE"),
        (libc::EOPNOTSUPP, "EOPNOTSUPP"),
        (libc::ENOPROTOOPT, "ENOPROTOOPT"),
        (libc::EDESTADDRREQ, "EDESTADDRREQ"),
        (libc::ENOTSOCK, "ENOTSOCK"),
        (libc::EMSGSIZE, "EMSGSIZE"),
    ];
    match e.raw_os_error() {
        Some(n) => names
            .iter()
            .find(|(c, _)| *c == n)
            .map_or_else(|| format!("errno {n}"), |(_, s)| s.to_string()),
        None => format!("{:?}", e.kind()),
    }
}

fn out<T: std::fmt::Debug>(r: io::Result<T>) -> String {
    match r {
        Ok(v) => format!("ok {v:?}"),
        Err(e) => errno_name(&e),
    }
}

fn flags(f: EpollFlags) -> String {
    format!("{f:?}")
}

/// One wait (`ms`: the real kernel's bound; the simulation does not take it in real time),
/// events sorted by data.
fn wait(ep: &OwnedFd, ms: i32) -> Vec<(u64, String)> {
    let mut events = [EpollEvent::zeroed(); 16];
    let n = epoll_wait(ep.as_fd(), &mut events, ms).unwrap();
    let mut v: Vec<(u64, String)> = events[..n].iter().map(|e| (e.data(), flags(e.flags()))).collect();
    v.sort();
    v
}

fn loopback() -> SockAddr {
    SockAddr::Inet("127.0.0.1:0".parse::<SocketAddr>().unwrap())
}

/// A listener on 127.0.0.1 and a connected client/server pair.
fn tcp_pair(log: &mut Vec<String>) -> (OwnedFd, OwnedFd, OwnedFd) {
    let l = socket(Domain::Inet, SockType::Stream).unwrap();
    bind(l.as_fd(), &loopback()).unwrap();
    listen(l.as_fd(), 8).unwrap();
    let addr = local_addr(l.as_fd()).unwrap();
    let c = socket(Domain::Inet, SockType::Stream).unwrap();
    log.push(format!("connect: {}", out(connect(c.as_fd(), &addr))));
    let ep = epoll_create1().unwrap();
    epoll_ctl_add(ep.as_fd(), c.as_raw_fd(), EpollFlags::OUT, 1).unwrap();
    log.push(format!("connected: {:?}", wait(&ep, 1000)));
    log.push(format!(
        "SO_ERROR: {:?}",
        take_socket_error(c.as_fd()).unwrap().map(|e| errno_name(&e))
    ));
    epoll_ctl_add(ep.as_fd(), l.as_raw_fd(), EpollFlags::IN, 2).unwrap();
    log.push(format!("listener: {:?}", wait(&ep, 1000)));
    let (s, peer) = accept4(l.as_fd()).unwrap();
    log.push(format!(
        "peer is the client: {}",
        peer.as_inet() == local_addr(c.as_fd()).unwrap().as_inet()
    ));
    log.push(format!("second accept: {}", out(accept4(l.as_fd()).map(|_| ()))));
    (l, c, s)
}

#[test]
fn pipes() {
    both(|log| {
        let (r, w) = pipe2().unwrap();
        let mut buf = [0u8; 100];
        log.push(format!("empty read: {}", out(read(r.as_fd(), &mut buf))));
        log.push(format!("write: {}", out(write(w.as_fd(), b"hello"))));
        log.push(format!("read: {}", out(read(r.as_fd(), &mut buf))));
        let big = vec![7u8; 70_000];
        log.push(format!("fill: {}", out(write(w.as_fd(), &big))));
        log.push(format!("full, small write: {}", out(write(w.as_fd(), b"x"))));
        let mut sink = vec![0u8; 100];
        log.push(format!("take 100: {}", out(read(r.as_fd(), &mut sink))));
        log.push(format!(
            "atomic 200 in 100 free: {}",
            out(write(w.as_fd(), &[1u8; 200]))
        ));
        let mut all = vec![0u8; 70_000];
        log.push(format!("drain: {}", out(read(r.as_fd(), &mut all))));
        drop(w);
        log.push(format!("eof: {}", out(read(r.as_fd(), &mut buf))));
        let (r2, w2) = pipe2().unwrap();
        drop(r2);
        log.push(format!("no reader: {}", out(write_nosigpipe(w2.as_fd(), b"x"))));
        log.push(format!(
            "writev: {}",
            out(pipe2().and_then(|(_r, w)| writev(w.as_fd(), &[IoSlice::new(b"ab"), IoSlice::new(b"cd")])))
        ));
    });
}

#[test]
fn eventfd_counter() {
    both(|log| {
        let e = eventfd(0).unwrap();
        log.push(format!("read 0: {}", out(eventfd_read(e.as_fd()))));
        eventfd_write(e.as_fd(), 3).unwrap();
        eventfd_write(e.as_fd(), 4).unwrap();
        log.push(format!("read: {}", out(eventfd_read(e.as_fd()))));
        log.push(format!("write max: {}", out(eventfd_write(e.as_fd(), u64::MAX))));
        eventfd_write(e.as_fd(), u64::MAX - 1).unwrap();
        log.push(format!("overflow: {}", out(eventfd_write(e.as_fd(), 1))));
        let e1 = eventfd(5).unwrap();
        log.push(format!("initial: {}", out(eventfd_read(e1.as_fd()))));
    });
}

#[test]
fn epoll_level_edge_and_oneshot() {
    both(|log| {
        let ep = epoll_create1().unwrap();
        let (r1, w1) = pipe2().unwrap();
        let (r2, w2) = pipe2().unwrap();
        let (r3, w3) = pipe2().unwrap();
        epoll_ctl_add(ep.as_fd(), r1.as_raw_fd(), EpollFlags::IN, 1).unwrap();
        epoll_ctl_add(ep.as_fd(), r2.as_raw_fd(), EpollFlags::IN | EpollFlags::ET, 2).unwrap();
        epoll_ctl_add(ep.as_fd(), r3.as_raw_fd(), EpollFlags::IN | EpollFlags::ONESHOT, 3).unwrap();
        log.push(format!("nothing: {:?}", wait(&ep, 0)));
        for w in [&w1, &w2, &w3] {
            write(w.as_fd(), b"a").unwrap();
        }
        log.push(format!("all three: {:?}", wait(&ep, 1000)));
        log.push(format!("level stays, edge and oneshot do not: {:?}", wait(&ep, 0)));
        for w in [&w1, &w2, &w3] {
            write(w.as_fd(), b"b").unwrap();
        }
        log.push(format!("new data is a new edge: {:?}", wait(&ep, 1000)));
        epoll_ctl_mod(ep.as_fd(), r3.as_raw_fd(), EpollFlags::IN | EpollFlags::ONESHOT, 33).unwrap();
        log.push(format!("oneshot re-armed: {:?}", wait(&ep, 1000)));
        let mut buf = [0u8; 8];
        read(r1.as_fd(), &mut buf).unwrap();
        log.push(format!("drained level: {:?}", wait(&ep, 0)));
        drop(w2);
        log.push(format!("hang-up of the edge pipe: {:?}", wait(&ep, 1000)));
        log.push(format!(
            "add twice: {}",
            out(epoll_ctl_add(ep.as_fd(), r1.as_raw_fd(), EpollFlags::IN, 9))
        ));
        log.push(format!(
            "mod unregistered: {}",
            out(epoll_ctl_mod(ep.as_fd(), w1.as_raw_fd(), EpollFlags::IN, 9))
        ));
        log.push(format!("del: {}", out(epoll_ctl_del(ep.as_fd(), r1.as_raw_fd()))));
        log.push(format!("del again: {}", out(epoll_ctl_del(ep.as_fd(), r1.as_raw_fd()))));
        log.push(format!(
            "add itself: {}",
            out(epoll_ctl_add(ep.as_fd(), ep.as_raw_fd(), EpollFlags::IN, 9))
        ));
    });
}

#[test]
fn epoll_registrations_belong_to_the_file() {
    both(|log| {
        let ep = epoll_create1().unwrap();
        let (r, w) = pipe2().unwrap();
        let copy = dup(r.as_fd()).unwrap();
        epoll_ctl_add(ep.as_fd(), r.as_raw_fd(), EpollFlags::IN, 7).unwrap();
        let number = r.as_raw_fd();
        drop(r);
        write(w.as_fd(), b"x").unwrap();
        log.push(format!("the dup keeps it reporting: {:?}", wait(&ep, 1000)));
        // EBADF, or ENOENT when another test's thread got the number meanwhile.
        let gone = epoll_ctl_mod(ep.as_fd(), number, EpollFlags::IN, 8)
            .is_err_and(|e| matches!(e.raw_os_error(), Some(libc::EBADF | libc::ENOENT)));
        log.push(format!("but the number is closed: {gone}"));
        drop(copy);
        log.push(format!("the file closed, the registration went: {:?}", wait(&ep, 0)));
        let e = eventfd(1).unwrap();
        epoll_ctl_add(ep.as_fd(), e.as_raw_fd(), EpollFlags::IN, 9).unwrap();
        close(e).unwrap();
        log.push(format!("closed through the wrapper: {:?}", wait(&ep, 0)));
    });
}

#[test]
fn tcp_connect_transfer_half_close() {
    both(|log| {
        let (_l, c, s) = tcp_pair(log);
        let ep = epoll_create1().unwrap();
        let et = EpollFlags::IN | EpollFlags::OUT | EpollFlags::RDHUP | EpollFlags::ET;
        epoll_ctl_add(ep.as_fd(), s.as_raw_fd(), et, 1).unwrap();
        epoll_ctl_add(ep.as_fd(), c.as_raw_fd(), et, 2).unwrap();
        log.push(format!("both writable: {:?}", wait(&ep, 1000)));
        log.push(format!("send: {}", out(send(c.as_fd(), b"hello world"))));
        log.push(format!("server readable: {:?}", wait(&ep, 1000)));
        let mut buf = [0u8; 64];
        log.push(format!("peek: {}", out(recv_peek(s.as_fd(), &mut buf[..5]))));
        log.push(format!("recv: {}", out(recv(s.as_fd(), &mut buf))));
        log.push(format!("recv empty: {}", out(recv(s.as_fd(), &mut buf))));
        log.push(format!(
            "sendmsg: {}",
            out(send_vectored(s.as_fd(), &[IoSlice::new(b"ab"), IoSlice::new(b"cde")]))
        ));
        log.push(format!("client readable: {:?}", wait(&ep, 1000)));
        log.push(format!("client recv: {}", out(recv(c.as_fd(), &mut buf))));
        log.push(format!("half-close: {}", out(shutdown(c.as_fd(), Shutdown::Write))));
        log.push(format!("server sees RDHUP: {:?}", wait(&ep, 1000)));
        log.push(format!("server reads eof: {}", out(recv(s.as_fd(), &mut buf))));
        log.push(format!("client send after SHUT_WR: {}", out(send(c.as_fd(), b"x"))));
        log.push(format!("server still sends: {}", out(send(s.as_fd(), b"late"))));
        log.push(format!("client gets it: {:?}", wait(&ep, 1000)));
        log.push(format!("client recv: {}", out(recv(c.as_fd(), &mut buf))));
        drop(s);
        log.push(format!("client sees the FIN: {:?}", wait(&ep, 1000)));
        log.push(format!("client eof: {}", out(recv(c.as_fd(), &mut buf))));
        log.push(format!("getpeername: {}", out(peer_addr(c.as_fd()).map(|_| ()))));
    });
}

#[test]
fn tcp_resets() {
    both(|log| {
        let (_l, c, s) = tcp_pair(log);
        let ep = epoll_create1().unwrap();
        epoll_ctl_add(
            ep.as_fd(),
            c.as_raw_fd(),
            EpollFlags::IN | EpollFlags::RDHUP | EpollFlags::ET,
            1,
        )
        .unwrap();
        send(c.as_fd(), b"unread").unwrap();
        send(s.as_fd(), b"for the client").unwrap();
        log.push(format!("data: {:?}", wait(&ep, 1000)));
        // Closing with unread data sends a RST, not a FIN.
        epoll_ctl_add(ep.as_fd(), s.as_raw_fd(), EpollFlags::IN, 2).unwrap();
        let mut buf = [0u8; 4];
        let _ = recv(s.as_fd(), &mut [0u8; 0]);
        drop(s);
        log.push(format!("reset seen: {:?}", wait(&ep, 1000)));
        log.push(format!("queued data first: {}", out(recv(c.as_fd(), &mut buf))));
        let mut rest = [0u8; 64];
        log.push(format!("the rest: {}", out(recv(c.as_fd(), &mut rest))));
        log.push(format!("then the reset: {}", out(recv(c.as_fd(), &mut rest))));
        log.push(format!("then eof: {}", out(recv(c.as_fd(), &mut rest))));
        log.push(format!("send: {}", out(send(c.as_fd(), b"x"))));
        log.push(format!(
            "SO_ERROR: {:?}",
            take_socket_error(c.as_fd()).unwrap().map(|e| errno_name(&e))
        ));
    });
}

#[test]
fn tcp_write_to_a_closed_peer() {
    both(|log| {
        let (_l, c, s) = tcp_pair(log);
        drop(s);
        let ep = epoll_create1().unwrap();
        epoll_ctl_add(ep.as_fd(), c.as_raw_fd(), EpollFlags::IN | EpollFlags::RDHUP, 1).unwrap();
        log.push(format!("fin: {:?}", wait(&ep, 1000)));
        log.push(format!(
            "first send still works: {}",
            out(send(c.as_fd(), b"into the void"))
        ));
        log.push(format!("the peer's RST: {:?}", wait(&ep, 1000)));
        log.push(format!("second send: {}", out(send(c.as_fd(), b"x"))));
        log.push(format!("third send: {}", out(send(c.as_fd(), b"x"))));
    });
}

#[test]
fn tcp_refused_and_state_errors() {
    both(|log| {
        let bound = socket(Domain::Inet, SockType::Stream).unwrap();
        bind(bound.as_fd(), &loopback()).unwrap();
        let addr = local_addr(bound.as_fd()).unwrap();
        let c = socket(Domain::Inet, SockType::Stream).unwrap();
        log.push(format!("connect: {}", out(connect(c.as_fd(), &addr))));
        let ep = epoll_create1().unwrap();
        epoll_ctl_add(ep.as_fd(), c.as_raw_fd(), EpollFlags::IN | EpollFlags::OUT, 1).unwrap();
        log.push(format!("refused: {:?}", wait(&ep, 1000)));
        log.push(format!(
            "SO_ERROR: {:?}",
            take_socket_error(c.as_fd()).unwrap().map(|e| errno_name(&e))
        ));
        log.push(format!(
            "SO_ERROR again: {:?}",
            take_socket_error(c.as_fd()).unwrap().is_some()
        ));

        let fresh = socket(Domain::Inet, SockType::Stream).unwrap();
        let mut buf = [0u8; 4];
        log.push(format!("recv unconnected: {}", out(recv(fresh.as_fd(), &mut buf))));
        log.push(format!("send unconnected: {}", out(send(fresh.as_fd(), b"x"))));
        log.push(format!(
            "shutdown unconnected: {}",
            out(shutdown(fresh.as_fd(), Shutdown::Both))
        ));
        log.push(format!("getpeername: {}", out(peer_addr(fresh.as_fd()).map(|_| ()))));
        log.push(format!(
            "accept, not listening: {}",
            out(accept4(fresh.as_fd()).map(|_| ()))
        ));
        log.push(format!("bind twice: {}", out(bind(bound.as_fd(), &loopback()))));
        let other = socket(Domain::Inet, SockType::Stream).unwrap();
        log.push(format!("bind in use: {}", out(bind(other.as_fd(), &addr))));
        log.push(format!("SO_TYPE: {}", out(socket_type(other.as_fd()))));
        log.push(format!("nodelay: {}", out(set_nodelay(other.as_fd(), true))));
        log.push(format!("nodelay on: {}", out(nodelay(other.as_fd()))));
        log.push(format!("v6only on IPv4: {}", out(set_v6only(other.as_fd(), true))));
        let udp = socket(Domain::Inet, SockType::Datagram).unwrap();
        log.push(format!("listen on UDP: {}", out(listen(udp.as_fd(), 1))));
        let unix = socket(Domain::Unix, SockType::Stream).unwrap();
        log.push(format!("nodelay on Unix: {}", out(set_nodelay(unix.as_fd(), true))));
        log.push(format!("fresh poll: {:?}", {
            let ep = epoll_create1().unwrap();
            epoll_ctl_add(ep.as_fd(), other.as_raw_fd(), EpollFlags::IN | EpollFlags::OUT, 5).unwrap();
            wait(&ep, 0)
        }));
    });
}

#[test]
fn udp_datagrams() {
    both(|log| {
        let a = socket(Domain::Inet, SockType::Datagram).unwrap();
        let b = socket(Domain::Inet, SockType::Datagram).unwrap();
        bind(a.as_fd(), &loopback()).unwrap();
        bind(b.as_fd(), &loopback()).unwrap();
        let (aa, ba) = (local_addr(a.as_fd()).unwrap(), local_addr(b.as_fd()).unwrap());
        let ep = epoll_create1().unwrap();
        epoll_ctl_add(ep.as_fd(), b.as_raw_fd(), EpollFlags::IN, 1).unwrap();
        log.push(format!("send: {}", out(send_to(a.as_fd(), b"first datagram", &ba))));
        log.push(format!("send: {}", out(send_to(a.as_fd(), b"second", &ba))));
        log.push(format!("send empty: {}", out(send_to(a.as_fd(), b"", &ba))));
        log.push(format!("readable: {:?}", wait(&ep, 1000)));
        log.push(format!("length: {}", out(peek_datagram_len(b.as_fd()))));
        let mut small = [0u8; 5];
        let (n, from) = recv_from(b.as_fd(), &mut small).unwrap();
        log.push(format!("truncated: {n} {:?} from a: {}", &small[..n], from == aa));
        let mut buf = [0u8; 64];
        log.push(format!("next: {}", out(recv(b.as_fd(), &mut buf))));
        log.push(format!("empty one: {}", out(recv(b.as_fd(), &mut buf))));
        log.push(format!("none: {}", out(recv(b.as_fd(), &mut buf))));
        log.push(format!("send unconnected: {}", out(send(a.as_fd(), b"x"))));

        // A connected socket hears of an unreachable port.
        let gone = socket(Domain::Inet, SockType::Datagram).unwrap();
        bind(gone.as_fd(), &loopback()).unwrap();
        let gone_addr = local_addr(gone.as_fd()).unwrap();
        drop(gone);
        let c = socket(Domain::Inet, SockType::Datagram).unwrap();
        connect(c.as_fd(), &gone_addr).unwrap();
        log.push(format!("send into nowhere: {}", out(send(c.as_fd(), b"ping"))));
        epoll_ctl_add(ep.as_fd(), c.as_raw_fd(), EpollFlags::IN, 2).unwrap();
        log.push(format!("error: {:?}", wait(&ep, 1000)));
        log.push(format!("recv: {}", out(recv(c.as_fd(), &mut buf))));
        log.push(format!("recv again: {}", out(recv(c.as_fd(), &mut buf))));
    });
}

#[test]
fn unix_streams_and_datagrams() {
    both(|log| {
        let name = format!("evloop-sim-vs-linux-{}", std::process::id());
        let l = socket(Domain::Unix, SockType::Stream).unwrap();
        let addr = SockAddr::Unix(UnixAddr::abstract_name(name.as_bytes()).unwrap());
        bind(l.as_fd(), &addr).unwrap();
        listen(l.as_fd(), 4).unwrap();
        let l2 = socket(Domain::Unix, SockType::Stream).unwrap();
        log.push(format!("same name: {}", out(bind(l2.as_fd(), &addr))));
        let c = socket(Domain::Unix, SockType::Stream).unwrap();
        log.push(format!("connect: {}", out(connect(c.as_fd(), &addr))));
        let (s, peer) = accept4(l.as_fd()).unwrap();
        log.push(format!("peer: {peer:?}"));
        log.push(format!("local: {:?}", local_addr(s.as_fd()).map(|a| a == addr)));
        send(c.as_fd(), b"to the server").unwrap();
        drop(s);
        let mut buf = [0u8; 64];
        log.push(format!(
            "after close with unread data: {}",
            out(recv(c.as_fd(), &mut buf))
        ));
        log.push(format!("then: {}", out(recv(c.as_fd(), &mut buf))));
        log.push(format!("send: {}", out(send(c.as_fd(), b"x"))));
        let missing = SockAddr::Unix(UnixAddr::abstract_name(b"evloop-sim-vs-linux-nobody").unwrap());
        let c2 = socket(Domain::Unix, SockType::Stream).unwrap();
        log.push(format!("nobody: {}", out(connect(c2.as_fd(), &missing))));

        let (x, y) = socketpair(Domain::Unix, SockType::Stream).unwrap();
        shutdown(x.as_fd(), Shutdown::Write).unwrap();
        let ep = epoll_create1().unwrap();
        epoll_ctl_add(
            ep.as_fd(),
            y.as_raw_fd(),
            EpollFlags::IN | EpollFlags::RDHUP | EpollFlags::OUT,
            1,
        )
        .unwrap();
        log.push(format!("pair half-closed: {:?}", wait(&ep, 1000)));
        log.push(format!("eof: {}", out(recv(y.as_fd(), &mut buf))));
        log.push(format!("other way: {}", out(send(y.as_fd(), b"back"))));
        log.push(format!("read back: {}", out(recv(x.as_fd(), &mut buf))));

        let (p, q) = socketpair(Domain::Unix, SockType::Datagram).unwrap();
        let mut sent = 0;
        let last = loop {
            match send(p.as_fd(), b"dgram") {
                Ok(_) => sent += 1,
                Err(e) => break errno_name(&e),
            }
            if sent > 100 {
                break "no limit".to_string();
            }
        };
        log.push(format!("queue limit: {sent} then {last}"));
        log.push(format!("recv: {}", out(recv(q.as_fd(), &mut buf))));
        drop(q);
        log.push(format!("peer gone: {}", out(send(p.as_fd(), b"x"))));
    });
}

#[test]
fn unix_names_and_datagram_queues() {
    both(|log| {
        let dir = std::env::temp_dir().join(format!("evloop-sim-vs-linux-{}", std::process::id()));
        let _ = std::fs::create_dir(&dir);
        let path = dir.join("listener.sock");
        let _ = std::fs::remove_file(&path);
        let addr = SockAddr::Unix(UnixAddr::pathname(&path).unwrap());
        let l = socket(Domain::Unix, SockType::Stream).unwrap();
        log.push(format!("bind: {}", out(bind(l.as_fd(), &addr))));
        log.push(format!("the file exists: {}", path.exists()));
        listen(l.as_fd(), 4).unwrap();
        let again = socket(Domain::Unix, SockType::Stream).unwrap();
        log.push(format!("bind again: {}", out(bind(again.as_fd(), &addr))));
        drop(l);
        let c = socket(Domain::Unix, SockType::Stream).unwrap();
        log.push(format!("stale file: {}", out(connect(c.as_fd(), &addr))));
        std::fs::remove_file(&path).unwrap();
        let c = socket(Domain::Unix, SockType::Stream).unwrap();
        log.push(format!("no file: {}", out(connect(c.as_fd(), &addr))));
        let l = socket(Domain::Unix, SockType::Stream).unwrap();
        log.push(format!("bind after unlink: {}", out(bind(l.as_fd(), &addr))));
        drop(l);
        let _ = std::fs::remove_file(&path);
        let _ = std::fs::remove_dir(&dir);

        let name = format!("evloop-sim-vs-linux-dgram-{}", std::process::id());
        let r = socket(Domain::Unix, SockType::Datagram).unwrap();
        let raddr = SockAddr::Unix(UnixAddr::abstract_name(name.as_bytes()).unwrap());
        bind(r.as_fd(), &raddr).unwrap();
        let s = socket(Domain::Unix, SockType::Datagram).unwrap();
        let mut sent = 0;
        let last = loop {
            match send_to(s.as_fd(), b"d", &raddr) {
                Ok(_) => sent += 1,
                Err(e) => break errno_name(&e),
            }
            if sent > 100 {
                break "no limit".to_string();
            }
        };
        log.push(format!("named receiver's queue: {sent} then {last}"));
        let mut buf = [0u8; 8];
        let (n, from) = recv_from(r.as_fd(), &mut buf).unwrap();
        log.push(format!("from an unbound sender: {n} {from:?}"));
        log.push(format!(
            "to nobody: {}",
            out(send_to(
                s.as_fd(),
                b"d",
                &SockAddr::Unix(UnixAddr::abstract_name(b"evloop-nobody-here").unwrap())
            ))
        ));
    });
}
