//! Syscall-level networking tests: exact or tightly bounded call counts of a steady-state echo,
//! read from the per-thread counters of `evloop-syscalls`, and one outside check with `strace`.
//!
//! Per-side counts must be clean, and the counters only see the loop's thread. So each test puts
//! the evloop side under test (protocol server, task server, task client, protocol client) on the
//! test thread's loop, and its peer in another thread with plain blocking `std::net` sockets,
//! whose calls no counter of this thread sees. The counting window is opened and closed from
//! inside the evloop side itself (after the warm-up round trips, and right after the last echo),
//! so nothing else (no timer, no polling helper task) runs in it.
//!
//! Derivation of the expected counts, per round trip, for every evloop side:
//! - one `epoll_pwait2` returns the socket's edge (the peer's message arrived);
//! - one `recv` reads the message: it is shorter than the buffer, so the queue is drained and
//!   readiness is cleared without a second `recv` that would say EAGAIN;
//! - one `send` writes the reply (writability was seen once at the start and is never lost);
//! - no `epoll_ctl`: the registration made at connect/accept stays for the socket's life.
//!
//! So `recv == send == N` exactly, and polls are N plus at most a few spurious wake-ups (a pure
//! ACK can raise an edge); the bound allows 5%.

use std::cell::{Cell, RefCell};
use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpListener as StdListener, TcpStream as StdStream};
use std::process::Command;
use std::rc::Rc;
use std::thread::{self, JoinHandle};
use std::time::Duration;

use evloop::net::{TcpListener, TcpStream};
use evloop::sys::Syscall;
use evloop::{
    event_loop::{EventLoop, LoopHandle},
    io::{AsyncReadExt, AsyncWriteExt},
    protocol::{Protocol, Transport},
    task::Promise,
};
use evloop_syscalls::counters::{self, Counts};
use evloop_tests::{child, polls, run_bounded, spin_once};

const WARMUP: usize = 20;
const ROUND_TRIPS: usize = 1000;
const MSG: usize = 64;

// ---------------------------------------------------------------------------------------------
// Helpers (this file only).

/// Asserts the steady-state counts derived in the module docs for `n` round trips of one side.
fn assert_one_recv_one_send_per_round_trip(side: &str, c: &Counts, n: usize) {
    let n = n as u64;
    println!(
        "{side}: {n} round trips: {c}\n  per round trip: poll {:.3}, recv {:.3}, send {:.3}, epoll_ctl {}",
        polls(c) as f64 / n as f64,
        c[Syscall::Recv] as f64 / n as f64,
        c[Syscall::Send] as f64 / n as f64,
        c[Syscall::EpollCtl]
    );
    assert_eq!(c[Syscall::EpollCtl], 0, "{side}: no epoll_ctl in steady state: {c}");
    assert_eq!(c[Syscall::Recv], n, "{side}: exactly one recv per round trip: {c}");
    assert_eq!(c[Syscall::Send], n, "{side}: exactly one send per round trip: {c}");
    assert!(
        polls(c) >= n && polls(c) <= n + n / 20,
        "{side}: about one poll per round trip (at most 5% spurious): {c}"
    );
    let others = c.total_syscalls() - polls(c) - c[Syscall::Recv] - c[Syscall::Send];
    assert_eq!(others, 0, "{side}: nothing but poll, recv and send: {c}");
}

/// A blocking echo client in another thread: `warmup + n` round trips of `MSG` bytes.
fn std_client(addr: SocketAddr, rounds: usize) -> JoinHandle<io::Result<()>> {
    thread::spawn(move || {
        let mut s = StdStream::connect(addr)?;
        s.set_nodelay(true)?;
        s.set_read_timeout(Some(Duration::from_secs(30)))?;
        let mut msg = [0u8; MSG];
        let mut back = [0u8; MSG];
        for i in 0..rounds {
            msg.fill(i as u8);
            s.write_all(&msg)?;
            s.read_exact(&mut back)?;
            if back != msg {
                return Err(io::Error::other(format!("round trip {i}: wrong echo")));
            }
        }
        Ok(())
    })
}

/// A blocking echo server in another thread, for one connection.
fn std_server() -> (SocketAddr, JoinHandle<io::Result<u64>>) {
    let l = StdListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    let h = thread::spawn(move || {
        let (mut s, _) = l.accept()?;
        s.set_nodelay(true)?;
        s.set_read_timeout(Some(Duration::from_secs(30)))?;
        let mut buf = [0u8; 4096];
        let mut total = 0u64;
        loop {
            let n = s.read(&mut buf)?;
            if n == 0 {
                return Ok(total);
            }
            s.write_all(&buf[..n])?;
            total += n as u64;
        }
    });
    (addr, h)
}

/// The counting window: opened after `WARMUP` messages, closed after `WARMUP + ROUND_TRIPS`.
struct Window {
    seen: usize,
    counts: Rc<RefCell<Option<Counts>>>,
    done: Promise<()>,
}

impl Window {
    fn new(lp: &LoopHandle) -> (Window, Rc<RefCell<Option<Counts>>>, Promise<()>) {
        let counts = Rc::new(RefCell::new(None));
        let done = lp.create_future();
        (
            Window {
                seen: 0,
                counts: counts.clone(),
                done: done.clone(),
            },
            counts,
            done,
        )
    }

    /// Called after each message's reply was written.
    fn message_done(&mut self) {
        self.seen += 1;
        if self.seen == WARMUP {
            counters::reset();
        } else if self.seen == WARMUP + ROUND_TRIPS {
            *self.counts.borrow_mut() = Some(counters::snapshot());
            let _ = self.done.set_result(());
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Steady-state echo, each side alone on the counted thread.

/// An echo protocol that opens and closes the counting window.
struct CountingEcho {
    transport: Option<Transport>,
    window: Window,
}

impl Protocol for CountingEcho {
    fn connection_made(&mut self, t: Transport) {
        self.transport = Some(t);
    }
    fn data_received(&mut self, data: &[u8]) {
        assert_eq!(data.len(), MSG, "one message per read");
        if let Some(t) = &self.transport {
            t.write(data);
        }
        self.window.message_done();
    }
}

#[test]
fn protocol_server_steady_state_echo_makes_no_epoll_ctl_and_one_recv_and_one_send_per_round_trip() {
    let lp = EventLoop::new().unwrap();
    spin_once(&lp);
    let h = lp.handle();
    let (window, counts, done) = Window::new(&h);
    let window = RefCell::new(Some(window));
    let c = run_bounded(&lp, async move {
        let server = h
            .create_server(
                move || CountingEcho {
                    transport: None,
                    window: window.borrow_mut().take().expect("one connection"),
                },
                "127.0.0.1",
                0,
            )
            .await
            .unwrap();
        let client = std_client(server.local_addr(), WARMUP + ROUND_TRIPS);
        done.await.unwrap();
        client.join().unwrap().unwrap();
        server.close();
        counts.borrow_mut().take().unwrap()
    });
    assert_one_recv_one_send_per_round_trip("protocol server", &c, ROUND_TRIPS);
}

#[test]
fn task_server_steady_state_echo_makes_no_epoll_ctl_and_one_recv_and_one_send_per_round_trip() {
    let lp = EventLoop::new().unwrap();
    spin_once(&lp);
    let h = lp.handle();
    let c = run_bounded(&lp, async move {
        let (mut window, counts, _done) = Window::new(&h);
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let client = std_client(listener.local_addr().unwrap(), WARMUP + ROUND_TRIPS);
        let (mut s, _) = listener.accept().await.unwrap();
        let mut buf = [0u8; 4096];
        loop {
            let n = s.read(&mut buf).await.unwrap();
            if n == 0 {
                break;
            }
            assert_eq!(n, MSG, "one message per read");
            s.write_all(&buf[..n]).await.unwrap();
            window.message_done();
        }
        client.join().unwrap().unwrap();

        counts.borrow_mut().take().unwrap()
    });
    assert_one_recv_one_send_per_round_trip("task server (TcpStream)", &c, ROUND_TRIPS);
}

#[test]
fn task_client_steady_state_echo_makes_no_epoll_ctl_and_one_recv_and_one_send_per_round_trip() {
    let lp = EventLoop::new().unwrap();
    spin_once(&lp);
    let h = lp.handle();
    let (addr, server) = std_server();
    let c = run_bounded(&lp, async move {
        let (mut window, counts, _done) = Window::new(&h);
        let mut s = TcpStream::connect(addr).await.unwrap();
        let mut buf = [0u8; 4096];
        for i in 0..WARMUP + ROUND_TRIPS {
            s.write_all(&[i as u8; MSG]).await.unwrap();
            let n = s.read(&mut buf).await.unwrap();
            assert_eq!(&buf[..n], &[i as u8; MSG][..], "one whole echo per read");
            window.message_done();
        }

        counts.borrow_mut().take().unwrap()
    });
    assert_eq!(server.join().unwrap().unwrap(), ((WARMUP + ROUND_TRIPS) * MSG) as u64);
    assert_one_recv_one_send_per_round_trip("task client (TcpStream)", &c, ROUND_TRIPS);
}

/// A protocol client that sends the next message when the previous echo is back, and closes
/// when the last echo is in (so no reply is left in flight: that would make the peer's kernel
/// answer with a reset).
struct PingClient {
    transport: Option<Transport>,
    window: Window,
    sent: usize,
    received: usize,
    /// Resolved by `connection_lost`: the test keeps the loop running until then, so the client
    /// closes only after it read the last echo. Dropping the loop earlier would close a socket
    /// with that echo unread in its receive queue, and the kernel answers such a close with a
    /// reset, which the peer's next `read` reports as ECONNRESET.
    lost: Promise<()>,
}

/// Messages the protocol client sends: the window closes after the reply that follows echo
/// number `WARMUP + ROUND_TRIPS`, so one more message goes out.
const PING_TOTAL: usize = WARMUP + ROUND_TRIPS + 1;

impl Protocol for PingClient {
    fn connection_made(&mut self, t: Transport) {
        t.write(&[0u8; MSG]);
        self.sent = 1;
        self.transport = Some(t);
    }
    fn data_received(&mut self, data: &[u8]) {
        assert_eq!(data.len(), MSG, "one whole echo per read");
        assert_eq!(data[0], self.received as u8);
        self.received += 1;
        let t = self.transport.clone().unwrap();
        if self.sent < PING_TOTAL {
            t.write(&[self.sent as u8; MSG]);
            self.sent += 1;
        }
        if self.received <= WARMUP + ROUND_TRIPS {
            self.window.message_done();
        }
        if self.received == PING_TOTAL {
            t.close();
        }
    }
    fn connection_lost(&mut self, _: Option<io::Error>) {
        let _ = self.lost.set_result(());
    }
}

#[test]
fn protocol_client_steady_state_echo_makes_no_epoll_ctl_and_one_recv_and_one_send_per_round_trip() {
    let lp = EventLoop::new().unwrap();
    spin_once(&lp);
    let h = lp.handle();
    let (addr, server) = std_server();
    let c = run_bounded(&lp, async move {
        let (window, counts, done) = Window::new(&h);
        let lost = h.create_future();
        let client = PingClient {
            transport: None,
            window,
            sent: 0,
            received: 0,
            lost: lost.clone(),
        };
        let _t = h.create_connection(client, "127.0.0.1", addr.port()).await.unwrap();
        done.await.unwrap();
        let c = counts.borrow_mut().take().unwrap();
        // The window is closed; run on until the client read the last echo and closed.
        lost.await.unwrap();
        c
    });
    drop(lp);
    assert_eq!(server.join().unwrap().unwrap(), (PING_TOTAL * MSG) as u64);
    assert_one_recv_one_send_per_round_trip("protocol client", &c, ROUND_TRIPS);
}

// ---------------------------------------------------------------------------------------------
// epoll_ctl per connection lifetime.

/// A protocol that snapshots the counters when the connection is lost.
struct LifeWatch {
    /// Echo what arrives (server side) or just take it (client side).
    echo: bool,
    transport: Option<Transport>,
    at_lost: Rc<RefCell<Option<Counts>>>,
    done: Promise<()>,
    /// Bytes received so far.
    received: Rc<Cell<usize>>,
}

impl Protocol for LifeWatch {
    fn connection_made(&mut self, t: Transport) {
        self.transport = Some(t);
    }
    fn data_received(&mut self, data: &[u8]) {
        self.received.set(self.received.get() + data.len());
        if let Some(t) = self.transport.as_ref().filter(|_| self.echo) {
            t.write(data);
        }
    }
    fn connection_lost(&mut self, _: Option<io::Error>) {
        *self.at_lost.borrow_mut() = Some(counters::snapshot());
        let _ = self.done.set_result(());
    }
}

#[test]
fn a_server_side_transport_makes_exactly_two_epoll_ctl_calls_in_its_lifetime() {
    let lp = EventLoop::new().unwrap();
    spin_once(&lp);
    let h = lp.handle();
    let at_lost = Rc::new(RefCell::new(None));
    let done: Promise<()> = h.create_future();
    let (a, d) = (at_lost.clone(), done.clone());
    let c = run_bounded(&lp, async move {
        let server = h
            .create_server(
                move || LifeWatch {
                    echo: true,
                    transport: None,
                    at_lost: a.clone(),
                    done: d.clone(),
                    received: Rc::default(),
                },
                "127.0.0.1",
                0,
            )
            .await
            .unwrap();
        counters::reset();
        let client = std_client(server.local_addr(), 100);
        done.await.unwrap();
        client.join().unwrap().unwrap();
        server.close();

        at_lost.borrow_mut().take().unwrap()
    });
    println!("one accepted connection, 100 round trips, closed by the peer: {c}");
    assert_eq!(c[Syscall::EpollCtl], 2, "ADD at accept, DEL at close: {c}");
    assert_eq!(c[Syscall::Accept4], 2, "one accept and one EAGAIN: {c}");
}

#[test]
fn a_client_side_transport_makes_exactly_two_epoll_ctl_calls_in_its_lifetime() {
    let lp = EventLoop::new().unwrap();
    spin_once(&lp);
    let h = lp.handle();
    let (addr, server) = std_server();
    let at_lost = Rc::new(RefCell::new(None));
    let done: Promise<()> = h.create_future();
    let (a, d) = (at_lost.clone(), done.clone());
    let received: Rc<Cell<usize>> = Rc::default();
    let r = received.clone();
    let c = run_bounded(&lp, async move {
        counters::reset();
        let t = h
            .create_connection(
                LifeWatch {
                    echo: false,
                    transport: None,
                    at_lost: a,
                    done: d,
                    received: r,
                },
                "127.0.0.1",
                addr.port(),
            )
            .await
            .unwrap();
        t.write(b"one message");
        // Close once the echo is back (closing before, with the echo on its way, would make the
        // kernel answer it with a reset, which the echo server reports as an error).
        while received.get() < b"one message".len() {
            evloop::time::sleep(Duration::from_millis(1)).await;
        }
        t.close();
        done.await.unwrap();

        at_lost.borrow_mut().take().unwrap()
    });
    server.join().unwrap().unwrap();
    println!("one create_connection transport, closed: {c}");
    assert_eq!(c[Syscall::EpollCtl], 2, "ADD at connect, DEL at close: {c}");
}

#[test]
fn a_tcp_stream_makes_exactly_two_epoll_ctl_calls_in_its_lifetime() {
    let lp = EventLoop::new().unwrap();
    spin_once(&lp);
    let (addr, server) = std_server();
    let c = run_bounded(&lp, async move {
        counters::reset();
        let mut s = TcpStream::connect(addr).await.unwrap();
        for _ in 0..10 {
            s.write_all(b"ping").await.unwrap();
            let mut buf = [0u8; 4];
            s.read_exact(&mut buf).await.unwrap();
        }
        drop(s);
        counters::snapshot()
    });
    server.join().unwrap().unwrap();
    println!("one TcpStream, connect + 10 round trips + drop: {c}");
    assert_eq!(c[Syscall::EpollCtl], 2, "ADD at creation, DEL at drop: {c}");
}

// ---------------------------------------------------------------------------------------------
// The outside check: strace sees the same.

const STRACE_CHILD: &str = "EVLOOP_NET_SYSCALLS_STRACE_CHILD";
const STRACE_ROUNDS: &str = "EVLOOP_NET_SYSCALLS_ROUNDS";

/// The child's scenario: a protocol echo server and a task client in one loop, `rounds`
/// round trips.
fn same_thread_echo(rounds: usize) {
    let lp = EventLoop::new().unwrap();
    let h = lp.handle();
    run_bounded(&lp, async move {
        let server = h
            .create_server(evloop_tests::net::Echo::new, "127.0.0.1", 0)
            .await
            .unwrap();
        let mut s = TcpStream::connect(server.local_addr()).await.unwrap();
        let mut buf = [0u8; 4096];
        for i in 0..rounds {
            s.write_all(&[i as u8; MSG]).await.unwrap();
            let n = s.read(&mut buf).await.unwrap();
            assert_eq!(n, MSG);
        }
        drop(s);
        server.close();
        server.wait_closed().await;
    });
}

/// Runs the child under `strace -f` for `rounds` round trips; the count of each traced
/// syscall, or `None` (reason printed) when strace cannot run here.
fn strace_counts(rounds: usize) -> Option<std::collections::HashMap<String, usize>> {
    let name =
        evloop_tests::test_name!("strace_sees_no_epoll_ctl_in_steady_state_and_two_sends_and_two_recvs_per_round_trip");
    let out_file = std::env::temp_dir().join(format!("evloop-strace-echo-{}-{rounds}.txt", std::process::id()));
    let _ = std::fs::remove_file(&out_file);
    let run = Command::new("strace")
        .args([
            "-f",
            "-qq",
            "-e",
            "trace=epoll_ctl,sendto,recvfrom,epoll_pwait2,epoll_wait",
            "-o",
        ])
        .arg(&out_file)
        .arg(std::env::current_exe().unwrap())
        .args(["--exact", &name, "--nocapture", "--test-threads=1"])
        .env(STRACE_CHILD, "1")
        .env(STRACE_ROUNDS, rounds.to_string())
        .output();
    let out = match run {
        Ok(o) => o,
        Err(e) => {
            println!("skipped: cannot run strace ({e})");
            return None;
        }
    };
    let trace = std::fs::read_to_string(&out_file).unwrap_or_default();
    let _ = std::fs::remove_file(&out_file);
    let stderr = String::from_utf8_lossy(&out.stderr);
    if stderr.contains("Operation not permitted") {
        println!("skipped: ptrace is not permitted here ({stderr})");
        return None;
    }
    child::assert_success(&format!("echo child, {rounds} round trips, under strace"), &out);
    let mut counts = std::collections::HashMap::new();
    for line in trace.lines() {
        // `<pid> name(args) = result`, or a resumed call: `<pid> <... name resumed> ...`.
        let rest = line.split_once(' ').map_or(line, |(_, r)| r).trim_start();
        let name = if let Some(r) = rest.strip_prefix("<... ") {
            r.split_whitespace().next().unwrap_or("")
        } else {
            rest.split('(').next().unwrap_or("")
        };
        if line.contains("resumed>") || !line.contains("<unfinished") {
            *counts.entry(name.to_string()).or_insert(0) += 1;
        }
    }
    Some(counts)
}

#[test]
fn strace_sees_no_epoll_ctl_in_steady_state_and_two_sends_and_two_recvs_per_round_trip() {
    if child::is_child(STRACE_CHILD) {
        let rounds = std::env::var(STRACE_ROUNDS)
            .ok()
            .and_then(|r| r.parse().ok())
            .unwrap_or(10);
        same_thread_echo(rounds);
        return;
    }
    let Some(short) = strace_counts(10) else { return };
    let Some(long) = strace_counts(10 + ROUND_TRIPS) else {
        return;
    };
    let get = |m: &std::collections::HashMap<String, usize>, k: &str| m.get(k).copied().unwrap_or(0);
    println!("strace, 10 round trips: {short:?}");
    println!("strace, {} round trips: {long:?}", 10 + ROUND_TRIPS);
    assert!(get(&short, "epoll_ctl") > 0, "strace saw the registrations");
    assert_eq!(
        get(&long, "epoll_ctl"),
        get(&short, "epoll_ctl"),
        "{ROUND_TRIPS} more round trips must not add a single epoll_ctl"
    );
    // Both sides live in the child: each round trip is two sends and two receives.
    let more_sends = get(&long, "sendto") - get(&short, "sendto");
    let more_recvs = get(&long, "recvfrom") - get(&short, "recvfrom");
    assert_eq!(more_sends, 2 * ROUND_TRIPS, "two sendto per round trip");
    assert_eq!(more_recvs, 2 * ROUND_TRIPS, "two recvfrom per round trip");
}
