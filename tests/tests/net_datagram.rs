// Standalone binary: it compares `/proc/self/fd` before and after, which tests in parallel threads would disturb.
//! Datagram endpoints (`create_datagram_endpoint`, `create_unix_datagram_endpoint`): echo with
//! datagram boundaries, explicit vs connected destinations, ICMP errors, closing, the write
//! queue, the fd table when the loop closes under open endpoints, and the syscalls of steady
//! state.
//!
//! The fd table is process-wide and the tests of one binary run in parallel threads, so every
//! test takes the `serial()` lock for its whole duration (one of them compares `/proc/self/fd`
//! before and after). Everything runs on loopback (127.0.0.1, ::1 when the machine has it) or on
//! abstract Unix names made unique with the process id (`net::abstract_name`).

use std::cell::{Cell, RefCell};
use std::fs;
use std::io;
use std::net::{SocketAddr, UdpSocket};
use std::os::fd::AsFd;
use std::rc::Rc;
use std::time::{Duration, Instant};

use evloop::net::{SockAddr, UnixAddr};
use evloop::{
    event_loop::LoopHandle,
    protocol::{DEFAULT_DATAGRAM_QUEUE_LIMIT, DatagramDropped, DatagramProtocol, DatagramTransport},
};
use evloop_syscalls::{self as sys, Syscall, counters};
use evloop_tests::fds::fd_table;
use evloop_tests::net::{abstract_name, loopback_v4};
use evloop_tests::{DropFlag, flag, new_loop, run_bounded, serial, settle_for, wait_until};

/// `[::1]:0`, or `None` (with the reason printed) when this machine has no IPv6 loopback.
fn v6() -> Option<SocketAddr> {
    let addr: SocketAddr = "[::1]:0".parse().unwrap();
    match UdpSocket::bind(addr) {
        Ok(_) => Some(addr),
        Err(e) => {
            println!("skipping the ::1 case: cannot bind a UDP socket to [::1]:0 ({e})");
            None
        }
    }
}

// ---------------------------------------------------------------------------------------------
// A protocol that records everything.

#[derive(Default)]
struct Seen {
    made: Cell<usize>,
    transport: RefCell<Option<DatagramTransport>>,
    datagrams: RefCell<Vec<(Vec<u8>, SockAddr)>>,
    errors: RefCell<Vec<io::Error>>,
    lost: RefCell<Vec<Option<io::Error>>>,
}

impl Seen {
    fn count(&self) -> usize {
        self.datagrams.borrow().len()
    }
    fn errors(&self) -> usize {
        self.errors.borrow().len()
    }
    fn lost(&self) -> usize {
        self.lost.borrow().len()
    }
}

/// Records every callback; echoes each datagram back to its sender when `echo` is set. Holds
/// its transport (the protocol <-> transport cycle every real protocol has) and a drop flag.
struct Recorder {
    seen: Rc<Seen>,
    echo: bool,
    _dropped: DropFlag,
}

fn recorder(echo: bool) -> (Recorder, Rc<Seen>, Rc<Cell<bool>>) {
    let seen = Rc::new(Seen::default());
    let dropped = flag();
    (
        Recorder {
            seen: seen.clone(),
            echo,
            _dropped: DropFlag(dropped.clone()),
        },
        seen,
        dropped,
    )
}

impl DatagramProtocol for Recorder {
    fn connection_made(&mut self, transport: DatagramTransport) {
        self.seen.made.set(self.seen.made.get() + 1);
        *self.seen.transport.borrow_mut() = Some(transport);
    }

    fn datagram_received(&mut self, data: &[u8], addr: SockAddr) {
        if self.echo {
            let t = self.seen.transport.borrow().clone().expect("connection_made ran first");
            t.sendto(data, Some(&addr)).expect("echo sendto");
        }
        self.seen.datagrams.borrow_mut().push((data.to_vec(), addr));
    }

    fn error_received(&mut self, error: io::Error) {
        self.seen.errors.borrow_mut().push(error);
    }

    fn connection_lost(&mut self, error: Option<io::Error>) {
        self.seen.lost.borrow_mut().push(error);
        // Break the cycle the way a real protocol would (the transport drops us anyway).
        self.seen.transport.borrow_mut().take();
    }
}

// ---------------------------------------------------------------------------------------------
// A windowed pinger: keeps `window` datagrams in flight to an echo server and checks every
// reply against what was sent.

/// Datagram `i`: its index (4 bytes) and a body whose length and bytes depend on `i`, so a
/// merged, split or mixed-up datagram fails the comparison.
fn payload(i: usize) -> Vec<u8> {
    let body = (i * 37) % 1200;
    let mut v = (i as u32).to_be_bytes().to_vec();
    v.extend((0..body).map(|j| (i + j) as u8));
    v
}

#[derive(Default)]
struct PingState {
    transport: Option<DatagramTransport>,
    total: usize,
    window: usize,
    sent: usize,
    received: usize,
    seen: Vec<bool>,
    failures: Vec<String>,
    errors: Vec<String>,
}

type Ping = Rc<RefCell<PingState>>;

/// Sends while the window has room and datagrams remain.
fn kick(st: &Ping) {
    loop {
        let (t, i) = {
            let mut s = st.borrow_mut();
            let Some(t) = s.transport.clone() else { return };
            if s.sent >= s.total || s.sent - s.received >= s.window {
                return;
            }
            let i = s.sent;
            s.sent += 1;
            (t, i)
        };
        if let Err(e) = t.sendto(&payload(i), None) {
            st.borrow_mut().failures.push(format!("sendto {i}: {e}"));
            return;
        }
    }
}

fn ping_done(st: &Ping) -> bool {
    let s = st.borrow();
    !s.failures.is_empty() || s.received >= s.total
}

struct Pinger(Ping);

impl DatagramProtocol for Pinger {
    fn connection_made(&mut self, transport: DatagramTransport) {
        self.0.borrow_mut().transport = Some(transport);
        kick(&self.0);
    }

    fn datagram_received(&mut self, data: &[u8], _addr: SockAddr) {
        {
            let mut s = self.0.borrow_mut();
            match data
                .get(..4)
                .map(|h| u32::from_be_bytes(h.try_into().unwrap()) as usize)
            {
                Some(i) if i < s.sent && data == payload(i).as_slice() => {
                    if s.seen.len() <= i {
                        s.seen.resize(i + 1, false);
                    }
                    if std::mem::replace(&mut s.seen[i], true) {
                        s.failures.push(format!("datagram {i} received twice"));
                    }
                    s.received += 1;
                }
                _ => {
                    let head = &data[..data.len().min(8)];
                    s.failures
                        .push(format!("unexpected datagram of {} bytes starting {head:?}", data.len()));
                }
            }
        }
        kick(&self.0);
    }

    fn error_received(&mut self, error: io::Error) {
        self.0.borrow_mut().errors.push(error.to_string());
    }

    fn connection_lost(&mut self, _error: Option<io::Error>) {
        self.0.borrow_mut().transport.take();
    }
}

fn pinger(total: usize, window: usize) -> (Pinger, Ping) {
    let st = Rc::new(RefCell::new(PingState {
        total,
        window,
        ..Default::default()
    }));
    (Pinger(st.clone()), st)
}

fn assert_ping_ok(st: &Ping, total: usize) {
    let s = st.borrow();
    assert!(s.failures.is_empty(), "pinger failures: {:?}", s.failures);
    assert!(s.errors.is_empty(), "pinger errors: {:?}", s.errors);
    assert_eq!(s.received, total);
    assert_eq!(s.seen.iter().filter(|b| **b).count(), total);
}

/// An echo server at `local` and a pinger connected to it exchanging `total` datagrams.
fn echo_exchange(local: SocketAddr, total: usize) {
    let lp = new_loop();
    let (server, server_seen, _) = recorder(true);
    let st = lp.create_datagram_endpoint(server, Some(local), None).open().unwrap();
    let server_addr = st.local_addr().and_then(|a| a.as_inet()).expect("a bound address");
    assert_ne!(server_addr.port(), 0);
    assert!(st.peer_addr().is_none());
    let (client, ping) = pinger(total, 16);
    let ct = lp
        .create_datagram_endpoint(client, None, Some(server_addr))
        .open()
        .unwrap();
    assert_eq!(ct.peer_addr(), Some(&SockAddr::Inet(server_addr)));
    let p = ping.clone();
    run_bounded(
        &lp,
        async move { wait_until("the echo exchange", || ping_done(&p)).await },
    );
    assert_ping_ok(&ping, total);
    assert_eq!(server_seen.count(), total);
    assert_eq!(server_seen.errors(), 0);
    // Every datagram came from the client's address.
    let client_addr = ct.local_addr().cloned().unwrap();
    assert!(server_seen.datagrams.borrow().iter().all(|(_, a)| *a == client_addr));
}

// ---------------------------------------------------------------------------------------------
// The tests.

#[test]
fn echo_1000_datagrams_keeps_boundaries_ipv4() {
    let _g = serial();
    echo_exchange(loopback_v4(), 1000);
}

#[test]
fn echo_1000_datagrams_keeps_boundaries_ipv6() {
    let _g = serial();
    let Some(addr) = v6() else { return };
    echo_exchange(addr, 1000);
}

#[test]
fn create_datagram_endpoint_needs_an_address_of_one_family() {
    let _g = serial();
    let lp = new_loop();
    let (p, _, dropped) = recorder(false);
    let e = lp.create_datagram_endpoint(p, None, None).open().unwrap_err();
    assert_eq!(e.kind(), io::ErrorKind::InvalidInput);
    assert!(e.to_string().contains("create_datagram_endpoint"), "{e}");
    assert!(dropped.get(), "the protocol of a failed endpoint is dropped");

    let (p, _, _) = recorder(false);
    let v6: SocketAddr = "[::1]:9".parse().unwrap();
    let e = lp
        .create_datagram_endpoint(p, Some(loopback_v4()), Some(v6))
        .open()
        .unwrap_err();
    assert_eq!(e.kind(), io::ErrorKind::InvalidInput);
    assert!(e.to_string().contains("different families"), "{e}");

    // A bind failure names the call and the address.
    let taken = UdpSocket::bind(loopback_v4()).unwrap();
    let addr = taken.local_addr().unwrap();
    let (p, _, _) = recorder(false);
    let e = lp.create_datagram_endpoint(p, Some(addr), None).open().unwrap_err();
    assert_eq!(e.kind(), io::ErrorKind::AddrInUse);
    assert!(e.to_string().contains(&format!("bind({addr})")), "{e}");

    // A closed loop refuses.
    lp.close().unwrap();
    let (p, _, _) = recorder(false);
    assert!(
        lp.create_datagram_endpoint(p, Some(loopback_v4()), None)
            .open()
            .is_err()
    );
    let (p, _, _) = recorder(false);
    assert!(
        lp.create_unix_datagram_endpoint(p, Some(&abstract_name("dgram-closed")), None)
            .is_err()
    );
}

#[test]
fn sendto_explicit_address_vs_connected_remote() {
    let _g = serial();
    let lp = new_loop();
    let (a, a_seen, _) = recorder(false);
    let (b, b_seen, _) = recorder(false);
    let at = lp
        .create_datagram_endpoint(a, Some(loopback_v4()), None)
        .open()
        .unwrap();
    let bt = lp
        .create_datagram_endpoint(b, Some(loopback_v4()), None)
        .open()
        .unwrap();
    let a_addr = at.local_addr().cloned().unwrap();
    let b_addr = bt.local_addr().cloned().unwrap();
    let (c, c_seen, _) = recorder(false);
    let ct = lp
        .create_datagram_endpoint(c, None, Some(b_addr.as_inet().unwrap()))
        .open()
        .unwrap();
    let c_addr = ct.local_addr().cloned().unwrap();

    // Unconnected: an explicit address is required.
    at.sendto(b"a->b", Some(&b_addr)).unwrap();
    let e = at.sendto(b"nowhere", None).unwrap_err();
    assert_eq!(e.kind(), io::ErrorKind::InvalidInput);
    assert!(e.to_string().contains("not connected"), "{e}");
    // Connected: None, or the peer's own address; any other address is refused.
    ct.sendto(b"c->b (none)", None).unwrap();
    ct.sendto(b"c->b (peer)", Some(&b_addr)).unwrap();
    ct.sendto(b"", None).unwrap();
    let e = ct.sendto(b"c->a", Some(&a_addr)).unwrap_err();
    assert_eq!(e.kind(), io::ErrorKind::InvalidInput);
    assert!(e.to_string().contains("connected to"), "{e}");
    // The connected endpoint hears only its peer.
    at.sendto(b"a->c", Some(&c_addr)).unwrap();
    bt.sendto(b"b->c", Some(&c_addr)).unwrap();

    let (bs, cs) = (b_seen.clone(), c_seen.clone());
    run_bounded(&lp, async move {
        wait_until("b gets 4 datagrams, c gets 1", || bs.count() == 4 && cs.count() == 1).await;
        settle_for(Duration::from_millis(50)).await;
    });
    let got: Vec<(Vec<u8>, SockAddr)> = b_seen.datagrams.borrow().clone();
    assert_eq!(
        got,
        vec![
            (b"a->b".to_vec(), a_addr.clone()),
            (b"c->b (none)".to_vec(), c_addr.clone()),
            (b"c->b (peer)".to_vec(), c_addr.clone()),
            (Vec::new(), c_addr.clone()),
        ]
    );
    assert_eq!(*c_seen.datagrams.borrow(), vec![(b"b->c".to_vec(), b_addr.clone())]);
    assert_eq!(a_seen.count(), 0);
    for s in [&a_seen, &b_seen, &c_seen] {
        assert_eq!(s.made.get(), 1);
        assert_eq!(s.errors(), 0);
        assert_eq!(s.lost(), 0);
    }
}

#[test]
fn connected_endpoint_to_closed_port_gets_econnrefused_and_keeps_working() {
    let _g = serial();
    let lp = new_loop();
    let dead = UdpSocket::bind(loopback_v4()).unwrap();
    let dead_addr = dead.local_addr().unwrap();
    drop(dead);
    let (p, seen, _) = recorder(false);
    let t = lp.create_datagram_endpoint(p, None, Some(dead_addr)).open().unwrap();
    let (s, tt) = (seen.clone(), t.clone());
    run_bounded(&lp, async move {
        tt.sendto(b"ping 1", None).unwrap();
        wait_until("the first ECONNREFUSED", || s.errors() >= 1).await;
        tt.sendto(b"ping 2", None).unwrap();
        wait_until("the second ECONNREFUSED", || s.errors() >= 2).await;
    });
    for e in seen.errors.borrow().iter() {
        assert_eq!(e.kind(), io::ErrorKind::ConnectionRefused, "{e}");
        assert!(e.to_string().contains(&dead_addr.to_string()), "names the peer: {e}");
    }
    assert!(!t.is_closing());
    assert_eq!(seen.lost(), 0);
    assert!(t.fd().is_some());

    // Still working: once something listens on that port, datagrams flow both ways.
    let revived = match UdpSocket::bind(dead_addr) {
        Ok(s) => s,
        Err(e) => {
            println!(
                "skipping the second half: port {} was taken meanwhile ({e})",
                dead_addr.port()
            );
            return;
        }
    };
    revived.set_nonblocking(true).unwrap();
    let my_addr = t.local_addr().and_then(|a| a.as_inet()).unwrap();
    let (s, tt) = (seen.clone(), t.clone());
    run_bounded(&lp, async move {
        tt.sendto(b"again", None).unwrap();
        let mut buf = [0u8; 64];
        let mut got = None;
        wait_until("the revived port receives", || match revived.recv_from(&mut buf) {
            Ok((n, from)) => {
                got = Some((buf[..n].to_vec(), from));
                true
            }
            Err(_) => false,
        })
        .await;
        assert_eq!(got, Some((b"again".to_vec(), my_addr)));
        revived.send_to(b"pong", my_addr).unwrap();
        wait_until("the reply", || s.count() == 1).await;
    });
    assert_eq!(
        seen.datagrams.borrow()[0],
        (b"pong".to_vec(), SockAddr::Inet(dead_addr))
    );
    assert_eq!(seen.errors(), 2);
    assert!(!t.is_closing());
}

#[test]
fn send_error_goes_to_error_received_and_the_endpoint_keeps_working() {
    let _g = serial();
    let lp = new_loop();
    let (a, a_seen, _) = recorder(false);
    let (b, b_seen, _) = recorder(false);
    let at = lp
        .create_datagram_endpoint(a, Some(loopback_v4()), None)
        .open()
        .unwrap();
    let bt = lp
        .create_datagram_endpoint(b, Some(loopback_v4()), None)
        .open()
        .unwrap();
    let b_addr = bt.local_addr().cloned().unwrap();
    // Larger than any UDP datagram: EMSGSIZE, reported in the next iteration, not by sendto.
    at.sendto(&vec![7u8; 70_000], Some(&b_addr)).unwrap();
    assert_eq!(a_seen.errors(), 0, "sendto never calls the protocol");
    at.sendto(b"small", Some(&b_addr)).unwrap();
    let (s, r) = (a_seen.clone(), b_seen.clone());
    run_bounded(&lp, async move {
        wait_until("the error and the datagram", || s.errors() == 1 && r.count() == 1).await
    });
    let e = &a_seen.errors.borrow()[0];
    assert!(e.to_string().contains("sendto(fd"), "{e}");
    assert!(e.to_string().contains(&b_addr.to_string()), "{e}");
    assert!(
        e.to_string().contains(&format!("os error {}", 90)) || e.to_string().contains("too long"),
        "EMSGSIZE: {e}"
    );
    assert_eq!(b_seen.datagrams.borrow()[0].0, b"small");
    assert!(!at.is_closing());
}

#[test]
fn close_delivers_connection_lost_once_and_later_sendto_is_dropped() {
    let _g = serial();
    let lp = new_loop();
    let (a, a_seen, a_dropped) = recorder(false);
    let (b, b_seen, _) = recorder(false);
    let at = lp
        .create_datagram_endpoint(a, Some(loopback_v4()), None)
        .open()
        .unwrap();
    let bt = lp
        .create_datagram_endpoint(b, Some(loopback_v4()), None)
        .open()
        .unwrap();
    let b_addr = bt.local_addr().cloned().unwrap();
    let (s, tt, addr) = (a_seen.clone(), at.clone(), b_addr.clone());
    run_bounded(&lp, async move {
        wait_until("connection_made", || s.made.get() == 1).await;
        tt.close();
        assert!(tt.is_closing());
        tt.close();
        tt.abort();
        tt.sendto(b"after close", Some(&addr)).unwrap();
        wait_until("connection_lost", || s.lost() == 1).await;
        tt.sendto(b"after connection_lost", Some(&addr)).unwrap();
        tt.close();
        tt.abort();
        settle_for(Duration::from_millis(50)).await;
    });
    assert_eq!(a_seen.lost(), 1, "connection_lost exactly once");
    assert!(a_seen.lost.borrow()[0].is_none(), "a normal close: None");
    assert!(a_dropped.get(), "the protocol is dropped after connection_lost");
    assert_eq!(b_seen.count(), 0, "nothing sent after close");
    assert!(at.is_closing());
    assert_eq!(at.fd(), None);
    assert_eq!(at.write_buffer_size(), 0);
    assert!(format!("{at:?}").contains("closed"));
    // The peer is unaffected.
    assert!(!bt.is_closing());
}

#[test]
fn close_sends_queued_datagrams_first() {
    let _g = serial();
    let lp = new_loop();
    let name = abstract_name("dgram-queue");
    let (r, r_seen, _) = recorder(false);
    let _rt = lp.create_unix_datagram_endpoint(r, Some(&name), None).unwrap();
    let (s, s_seen, _) = recorder(false);
    let st = lp.create_unix_datagram_endpoint(s, None, Some(&name)).unwrap();
    const N: usize = 1000;
    let msg = |i: usize| format!("datagram {i:04} {}", "x".repeat(80)).into_bytes();
    // The receiver reads only when the loop runs: the kernel takes a few, the rest queue.
    for i in 0..N {
        st.sendto(&msg(i), None).unwrap();
    }
    let queued = st.write_buffer_size();
    assert!(queued > 0, "the kernel took every datagram; nothing to test");
    st.close();
    assert!(st.is_closing());
    assert_eq!(st.write_buffer_size(), queued, "close keeps the queue");
    st.sendto(b"after close", None).unwrap();
    let (rs, ss) = (r_seen.clone(), s_seen.clone());
    run_bounded(&lp, async move {
        wait_until("all datagrams and connection_lost", || {
            rs.count() == N && ss.lost() == 1
        })
        .await
    });
    let got = r_seen.datagrams.borrow();
    for (i, (d, from)) in got.iter().enumerate() {
        assert_eq!(d, &msg(i), "datagram {i} in order and whole");
        assert_eq!(from, &SockAddr::Unix(UnixAddr::Unnamed));
    }
    assert_eq!(s_seen.errors(), 0);
    assert!(s_seen.lost.borrow()[0].is_none());
    assert_eq!(st.write_buffer_size(), 0);
    assert_eq!(st.dropped_datagrams(), 0);
}

#[test]
fn a_full_write_queue_drops_datagrams_and_reports_each() {
    let _g = serial();
    let lp = new_loop();
    let name = abstract_name("dgram-limit");
    let (r, r_seen, _) = recorder(false);
    let _rt = lp.create_unix_datagram_endpoint(r, Some(&name), None).unwrap();
    let (s, s_seen, _) = recorder(false);
    let st = lp.create_unix_datagram_endpoint(s, None, Some(&name)).unwrap();
    assert_eq!(st.write_queue_limit(), DEFAULT_DATAGRAM_QUEUE_LIMIT);
    // Room for exactly 10 queued datagrams of 100 bytes (each counts 64 bytes more).
    st.set_write_queue_limit(10 * (100 + 64));
    const N: usize = 1000;
    for i in 0..N {
        let mut d = vec![b'.'; 100];
        d[..4].copy_from_slice(&(i as u32).to_be_bytes());
        st.sendto(&d, None).unwrap();
    }
    assert_eq!(st.write_buffer_size(), 10 * 100);
    let dropped = st.dropped_datagrams() as usize;
    assert!(dropped > 0 && dropped < N - 10, "dropped {dropped}");
    let (rs, ss) = (r_seen.clone(), s_seen.clone());
    run_bounded(&lp, async move {
        wait_until("the rest delivered and every drop reported", || {
            rs.count() == N - dropped && ss.errors() == dropped
        })
        .await;
    });
    for e in s_seen.errors.borrow().iter() {
        let d = e
            .get_ref()
            .and_then(|e| e.downcast_ref::<DatagramDropped>())
            .unwrap_or_else(|| panic!("a DatagramDropped error: {e}"));
        assert_eq!(d.size(), 100);
        assert_eq!(d.queued(), 10);
        assert!(d.addr().is_none());
        assert!(e.to_string().contains("write queue full"), "{e}");
    }
    // The datagrams that arrived are in order (the ones sent at once, then the queued ones).
    let idx: Vec<u32> = r_seen
        .datagrams
        .borrow()
        .iter()
        .map(|(d, _)| u32::from_be_bytes(d[..4].try_into().unwrap()))
        .collect();
    assert!(idx.windows(2).all(|w| w[0] < w[1]), "in order: {idx:?}");
    // The transport keeps working.
    st.sendto(b"still here", None).unwrap();
    let rs = r_seen.clone();
    run_bounded(&lp, async move {
        wait_until("one more", || rs.count() == N - dropped + 1).await
    });
    assert_eq!(r_seen.datagrams.borrow().last().unwrap().0, b"still here");
    assert_eq!(s_seen.lost(), 0);
}

#[test]
fn unix_datagram_endpoints_with_abstract_names() {
    let _g = serial();
    let lp = new_loop();
    let server_name = abstract_name("dgram-server");
    let client_name = abstract_name("dgram-client");
    let (server, server_seen, _) = recorder(true);
    let st = lp
        .create_unix_datagram_endpoint(server, Some(&server_name), None)
        .unwrap();
    assert_eq!(st.local_addr(), Some(&SockAddr::Unix(server_name.clone())));
    assert!(st.peer_addr().is_none());
    let (client, ping) = pinger(1000, 16);
    let ct = lp
        .create_unix_datagram_endpoint(client, Some(&client_name), Some(&server_name))
        .unwrap();
    assert_eq!(ct.local_addr(), Some(&SockAddr::Unix(client_name.clone())));
    assert_eq!(ct.peer_addr(), Some(&SockAddr::Unix(server_name.clone())));
    let p = ping.clone();
    run_bounded(&lp, async move {
        wait_until("the unix echo exchange", || ping_done(&p)).await
    });
    assert_ping_ok(&ping, 1000);
    assert!(
        server_seen
            .datagrams
            .borrow()
            .iter()
            .all(|(_, a)| *a == SockAddr::Unix(client_name.clone()))
    );

    // Connecting to a name nobody bound fails at once.
    let (p, _, _) = recorder(false);
    let e = lp
        .create_unix_datagram_endpoint(p, None, Some(&abstract_name("dgram-nobody")))
        .unwrap_err();
    assert_eq!(e.kind(), io::ErrorKind::ConnectionRefused, "{e}");
    assert!(e.to_string().contains("connect(@evloop-dgram-"), "{e}");
}

#[test]
fn unix_pathname_endpoint_removes_its_socket_file_on_close() {
    let _g = serial();
    let lp = new_loop();
    let path = std::env::temp_dir().join(format!("evloop-dgram-{}.sock", std::process::id()));
    let _ = fs::remove_file(&path);
    let addr = UnixAddr::pathname(&path).unwrap();
    let (p, seen, _) = recorder(false);
    let t = lp.create_unix_datagram_endpoint(p, Some(&addr), None).unwrap();
    assert!(path.exists());
    // A second bind to the same path fails (the file exists).
    let (p2, _, _) = recorder(false);
    let e = lp.create_unix_datagram_endpoint(p2, Some(&addr), None).unwrap_err();
    assert_eq!(e.kind(), io::ErrorKind::AddrInUse, "{e}");
    assert!(path.exists(), "the failed bind leaves the first endpoint's file alone");
    let s = seen.clone();
    run_bounded(&lp, async move {
        t.close();
        wait_until("connection_lost", || s.lost() == 1).await;
    });
    assert!(!path.exists(), "close removes the socket file");
}

#[test]
fn datagram_larger_than_the_receive_buffer_is_truncated_without_error() {
    let _g = serial();
    let lp = new_loop();
    let name = abstract_name("dgram-big");
    let (r, seen, _) = recorder(false);
    let _rt = lp.create_unix_datagram_endpoint(r, Some(&name), None).unwrap();
    // Unix datagrams may exceed 64 KiB (UDP ones cannot), so send one with a plain socket.
    let sender = sys::socket(sys::Domain::Unix, sys::SockType::Datagram).unwrap();
    let big: Vec<u8> = (0..100_000u32).map(|i| (i % 251) as u8).collect();
    let to = SockAddr::Unix(name.clone());
    assert_eq!(sys::send_to(sender.as_fd(), &big, &to).unwrap(), big.len());
    sys::send_to(sender.as_fd(), b"after", &to).unwrap();
    let s = seen.clone();
    run_bounded(&lp, async move {
        wait_until("both datagrams", || s.count() == 2).await;
        settle_for(Duration::from_millis(20)).await;
    });
    let got = seen.datagrams.borrow();
    assert_eq!(got[0].0.len(), 64 * 1024, "truncated to the 64 KiB buffer");
    assert_eq!(got[0].0[..], big[..64 * 1024]);
    assert_eq!(got[1].0, b"after", "the next datagram is whole");
    assert_eq!(seen.errors(), 0, "truncation is not an error");
    assert_eq!(seen.lost(), 0);
}

#[test]
fn reuse_port_and_allow_broadcast_options() {
    let _g = serial();
    let lp = new_loop();
    // SO_REUSEPORT: two endpoints on one port; without it the second bind fails.
    let (p1, _, _) = recorder(false);
    let t1 = lp
        .create_datagram_endpoint(p1, Some(loopback_v4()), None)
        .reuse_port(true)
        .open()
        .unwrap();
    let addr = t1.local_addr().and_then(|a| a.as_inet()).unwrap();
    let (p2, _, _) = recorder(false);
    let t2 = lp
        .create_datagram_endpoint(p2, Some(addr), None)
        .reuse_port(true)
        .open()
        .unwrap();
    assert_eq!(t2.local_addr().and_then(|a| a.as_inet()), Some(addr));
    let (p3, _, _) = recorder(false);
    let e = lp.create_datagram_endpoint(p3, Some(addr), None).open().unwrap_err();
    assert_eq!(e.kind(), io::ErrorKind::AddrInUse, "{e}");

    // SO_BROADCAST: sending to the loopback broadcast address is EACCES without it.
    let bcast = SockAddr::Inet("127.255.255.255:9".parse().unwrap());
    let (plain, plain_seen, _) = recorder(false);
    let pt = lp
        .create_datagram_endpoint(plain, Some(loopback_v4()), None)
        .open()
        .unwrap();
    let (bc, bc_seen, _) = recorder(false);
    let bt = lp
        .create_datagram_endpoint(bc, Some(loopback_v4()), None)
        .allow_broadcast(true)
        .open()
        .unwrap();
    let (sink, sink_seen, _) = recorder(false);
    let sink_t = lp
        .create_datagram_endpoint(sink, Some(loopback_v4()), None)
        .open()
        .unwrap();
    let sink_addr = sink_t.local_addr().cloned().unwrap();
    pt.sendto(b"broadcast?", Some(&bcast)).unwrap();
    bt.sendto(b"broadcast!", Some(&bcast)).unwrap();
    bt.sendto(b"marker", Some(&sink_addr)).unwrap();
    let (ps, ss) = (plain_seen.clone(), sink_seen.clone());
    run_bounded(&lp, async move {
        wait_until("the marker", || ss.count() == 1).await;
        let deadline = Instant::now() + Duration::from_millis(300);
        wait_until("the EACCES (or a short wait)", || {
            ps.errors() > 0 || Instant::now() > deadline
        })
        .await;
    });
    assert_eq!(bc_seen.errors(), 0, "with SO_BROADCAST the broadcast is sent");
    match plain_seen.errors.borrow().first() {
        Some(e) => assert_eq!(e.kind(), io::ErrorKind::PermissionDenied, "{e}"),
        None => println!("this kernel does not route 127.255.255.255 as broadcast: EACCES not checked"),
    }
    assert!(!pt.is_closing());
}

#[test]
fn steady_state_exchange_makes_no_epoll_ctl_calls() {
    let _g = serial();
    let lp = new_loop();
    let (server, _, _) = recorder(true);
    let st = lp
        .create_datagram_endpoint(server, Some(loopback_v4()), None)
        .open()
        .unwrap();
    let server_addr = st.local_addr().and_then(|a| a.as_inet()).unwrap();
    let (client, ping) = pinger(50, 8);
    let _ct = lp
        .create_datagram_endpoint(client, None, Some(server_addr))
        .open()
        .unwrap();
    let p = ping.clone();
    run_bounded(&lp, async move { wait_until("warm-up", || ping_done(&p)).await });
    assert_ping_ok(&ping, 50);

    // Steady state: 500 more round trips.
    let (p, lp2) = (ping.clone(), lp.handle());
    let counts = run_bounded(&lp, async move {
        let before = counters::snapshot();
        p.borrow_mut().total = 550;
        kick(&p);
        wait_until("500 more round trips", || ping_done(&p)).await;
        let _ = lp2;
        counters::snapshot().since(&before)
    });
    assert_ping_ok(&ping, 550);
    assert_eq!(
        counts.get(Syscall::EpollCtl),
        0,
        "no epoll_ctl in steady state: {counts:?}"
    );
    // One send per datagram each way: the client's are send(2) (connected), the server's sendto.
    assert_eq!(counts.get(Syscall::Send), 500, "{counts:?}");
    assert_eq!(counts.get(Syscall::Sendto), 500, "{counts:?}");
    assert!(counts.get(Syscall::Recvfrom) >= 1000, "{counts:?}");
}

// ---------------------------------------------------------------------------------------------
// The fd table.

#[test]
fn loop_closing_under_open_endpoints_leaves_the_fd_table_as_it_was() {
    let _g = serial();
    let before = fd_table();
    let mut flags = Vec::new();
    let mut transports: Vec<DatagramTransport> = Vec::new();
    {
        let lp = new_loop();
        let h: LoopHandle = lp.handle();
        // A UDP echo pair that has exchanged traffic.
        let (server, _, f) = recorder(true);
        flags.push(f);
        let st = h
            .create_datagram_endpoint(server, Some(loopback_v4()), None)
            .open()
            .unwrap();
        let (client, ping) = pinger(20, 4);
        let ct = h
            .create_datagram_endpoint(client, None, st.local_addr().and_then(|a| a.as_inet()))
            .open()
            .unwrap();
        let p = ping.clone();
        run_bounded(&h, async move { wait_until("traffic", || ping_done(&p)).await });
        assert_ping_ok(&ping, 20);
        // A Unix sender with datagrams still queued, and one whose connection_made never ran.
        let name = abstract_name("dgram-fds");
        let (r, _, f) = recorder(false);
        flags.push(f);
        let rt = h.create_unix_datagram_endpoint(r, Some(&name), None).unwrap();
        let (s, _, f) = recorder(false);
        flags.push(f);
        let qt = h.create_unix_datagram_endpoint(s, None, Some(&name)).unwrap();
        for _ in 0..100 {
            qt.sendto(&[1u8; 100], None).unwrap();
        }
        assert!(qt.write_buffer_size() > 0);
        // One closed just before the loop: its connection_lost never runs, yet the protocol
        // (which holds its transport) is dropped.
        let (c, c_seen, f) = recorder(false);
        flags.push(f);
        let closing = h.create_datagram_endpoint(c, Some(loopback_v4()), None).open().unwrap();
        run_bounded(&h, {
            let s = c_seen.clone();
            async move { wait_until("connection_made", || s.made.get() == 1).await }
        });
        closing.close();
        assert_eq!(closing.fd(), None);
        transports.extend([st, ct, rt, qt]);
        assert!(transports.iter().all(|t| t.fd().is_some()));
        transports.push(closing);
        h.close().unwrap();
        assert_eq!(c_seen.lost(), 0);
        assert!(h.is_closed());
    }
    assert!(
        flags.iter().all(|f| f.get()),
        "every protocol was dropped (no cycle kept it)"
    );
    for t in &transports {
        assert!(t.is_closing());
        assert_eq!(t.fd(), None);
        assert_eq!(t.write_buffer_size(), 0);
        // Using a transport of a closed loop is harmless.
        t.sendto(b"late", t.peer_addr().or(Some(&SockAddr::Inet(loopback_v4()))))
            .unwrap();
        t.close();
        t.abort();
    }
    drop(transports);
    let after = fd_table();
    assert_eq!(before, after, "/proc/self/fd differs after the loop closed");
}

#[test]
fn a_burst_larger_than_the_read_budget_is_read_without_a_new_edge() {
    let _g = serial();
    let lp = new_loop();
    let (r, seen, _) = recorder(false);
    let rt = lp
        .create_datagram_endpoint(r, Some(loopback_v4()), None)
        .open()
        .unwrap();
    let to = rt.local_addr().and_then(|a| a.as_inet()).unwrap();
    // 100 datagrams wait in the kernel before the loop first polls: one edge, and the handler
    // reads 32 per run, so it must come back by itself for the rest.
    let sender = UdpSocket::bind(loopback_v4()).unwrap();
    for i in 0..100u32 {
        sender.send_to(&i.to_be_bytes(), to).unwrap();
    }
    let s = seen.clone();
    run_bounded(&lp, async move {
        wait_until("all 100 datagrams", || s.count() == 100).await
    });
    let idx: Vec<u32> = seen
        .datagrams
        .borrow()
        .iter()
        .map(|(d, _)| u32::from_be_bytes(d[..].try_into().unwrap()))
        .collect();
    assert_eq!(idx, (0..100).collect::<Vec<u32>>());
}

#[test]
fn a_send_that_finds_a_pending_icmp_error_is_retried() {
    let _g = serial();
    let lp = new_loop();
    let dead = UdpSocket::bind(loopback_v4()).unwrap();
    let dead_addr = dead.local_addr().unwrap();
    drop(dead);
    let (p, seen, _) = recorder(false);
    let t = lp.create_datagram_endpoint(p, None, Some(dead_addr)).open().unwrap();
    // The loop does not run meanwhile, so the ICMP error stays pending on the socket.
    t.sendto(b"refused", None).unwrap();
    std::thread::sleep(Duration::from_millis(50));
    let revived = match UdpSocket::bind(dead_addr) {
        Ok(s) => s,
        Err(e) => {
            println!("skipped: port {} was taken meanwhile ({e})", dead_addr.port());
            return;
        }
    };
    revived.set_nonblocking(true).unwrap();
    // This send fails with the earlier datagram's ECONNREFUSED; it is reported and retried.
    t.sendto(b"delivered", None).unwrap();
    let s = seen.clone();
    let got = run_bounded(&lp, async move {
        let mut buf = [0u8; 64];
        let mut got = Vec::new();
        wait_until("the retried datagram and the error", || {
            if let Ok((n, _)) = revived.recv_from(&mut buf) {
                got.push(buf[..n].to_vec());
            }
            !got.is_empty() && s.errors() >= 1
        })
        .await;
        settle_for(Duration::from_millis(20)).await;
        got
    });
    assert_eq!(got, vec![b"delivered".to_vec()]);
    assert_eq!(seen.errors(), 1, "{:?}", seen.errors.borrow());
    assert_eq!(seen.errors.borrow()[0].kind(), io::ErrorKind::ConnectionRefused);
    assert!(!t.is_closing());
}

#[test]
fn injected_faults_per_datagram_errors_vs_a_dead_socket() {
    use evloop_syscalls::{errno, fault};
    let _g = serial();
    fault::clear();
    let lp = new_loop();
    let (r, seen, r_dropped) = recorder(false);
    let rt = lp
        .create_datagram_endpoint(r, Some(loopback_v4()), None)
        .open()
        .unwrap();
    let to = rt.local_addr().and_then(|a| a.as_inet()).unwrap();
    let sender = UdpSocket::bind(loopback_v4()).unwrap();

    // A failing recvfrom is one datagram's problem: reported, and the reading goes on.
    sender.send_to(b"one", to).unwrap();
    sender.send_to(b"two", to).unwrap();
    fault::fail_nth(Syscall::Recvfrom, 1, errno::ENOMEM);
    let s = seen.clone();
    run_bounded(
        &lp,
        async move { wait_until("both datagrams", || s.count() == 2).await },
    );
    assert_eq!(seen.errors(), 1);
    let e = &seen.errors.borrow()[0];
    assert_eq!(e.kind(), io::ErrorKind::OutOfMemory, "{e}");
    assert!(e.to_string().contains("recvfrom(fd"), "{e}");
    assert!(!rt.is_closing());

    // EBADF says the socket itself is gone: the transport closes with the error.
    fault::fail_nth(Syscall::Recvfrom, 1, errno::EBADF);
    sender.send_to(b"three", to).unwrap();
    let s = seen.clone();
    run_bounded(
        &lp,
        async move { wait_until("connection_lost", || s.lost() == 1).await },
    );
    let lost = seen.lost.borrow_mut().pop().unwrap().expect("lost with an error");
    assert!(lost.to_string().contains("recvfrom(fd"), "{lost}");
    assert!(rt.is_closing());
    assert_eq!(rt.fd(), None);
    assert!(r_dropped.get());

    // Likewise for a send: sendto returns Ok, the transport closes, connection_lost says why.
    let (p, s_seen, _) = recorder(false);
    let st = lp
        .create_datagram_endpoint(p, Some(loopback_v4()), None)
        .open()
        .unwrap();
    fault::fail_nth(Syscall::Sendto, 1, errno::ENOTSOCK);
    st.sendto(b"x", Some(&SockAddr::Inet(to))).unwrap();
    assert!(st.is_closing());
    let s = s_seen.clone();
    run_bounded(
        &lp,
        async move { wait_until("connection_lost", || s.lost() == 1).await },
    );
    assert!(
        s_seen.lost.borrow()[0]
            .as_ref()
            .is_some_and(|e| e.to_string().contains("sendto(fd"))
    );
    assert_eq!(s_seen.errors(), 0);
    assert_eq!(fault::pending(), 0);
}
