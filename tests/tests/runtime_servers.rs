//! asyncio's servers on N loops (`evloop::runtime`, issue 20): `Handle::start_server`,
//! `create_server` and their Unix twins. Under connection churn every policy serves every
//! connection exactly once; a shutdown under load loses no accepted connection (each client
//! sees its full reply, or nothing at all: never part of one); `Servers::close` stops every
//! loop and `wait_closed` waits for the connections; starting and stopping many times leaves
//! no fd and no thread; the reuse-port policies on a Unix address give the typed error.
//! Loopback and abstract or temporary Unix addresses only; every test is bounded (seconds).
//!
//! The tests of this file take one lock: the fd and thread counts must not see another
//! test's sockets and threads.

use std::io::{ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::os::linux::net::SocketAddrExt;
use std::os::unix::net::UnixStream;
use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use evloop::net::UnixAddr;
use evloop::protocol::{Protocol, Transport};
use evloop::runtime::{Builder, Policy, Runtime, Servers, UnixListeners, UnsupportedPolicy};
use evloop::streams::{StreamReader, StreamWriter};

static SERIAL: Mutex<()> = Mutex::new(());

fn serial() -> MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|p| p.into_inner())
}

fn count(dir: &str) -> usize {
    std::fs::read_dir(dir).unwrap().count()
}

/// Waits (briefly) for a count to come down to `expected`: a joined thread's task entry, or
/// a socket the peer's loop is closing, may linger a moment.
/// `dir`'s entries (`/proc/self/fd`), or for `/proc/self/task` evloop's threads by name (libtest's
/// threads for this file's other tests, waiting on its lock, come and go meanwhile).
fn measure(dir: &str) -> usize {
    if dir == "/proc/self/task" {
        evloop_tests::procfs::threads_named("evloop-")
    } else {
        count(dir)
    }
}

fn settle(dir: &str, expected: usize) -> usize {
    for _ in 0..400 {
        if measure(dir) <= expected {
            break;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    measure(dir)
}

fn abstract_addr(tag: &str) -> UnixAddr {
    UnixAddr::abstract_name(format!("evloop-test-servers-{}-{tag}", std::process::id()).as_bytes()).unwrap()
}

/// A client connection to either kind of address.
enum Target {
    Tcp(SocketAddr),
    Unix(UnixAddr),
}

trait Conn: Read + Write {}
impl<T: Read + Write> Conn for T {}

impl Target {
    fn connect(&self) -> std::io::Result<Box<dyn Conn>> {
        let conn: Box<dyn Conn> = match self {
            Target::Tcp(a) => Box::new(TcpStream::connect(a)?),
            Target::Unix(a) => {
                let s = match a.as_abstract_name() {
                    Some(name) => UnixStream::connect_addr(&std::os::unix::net::SocketAddr::from_abstract_name(name)?)?,
                    None => UnixStream::connect(a.as_pathname().unwrap())?,
                };
                s.set_read_timeout(Some(Duration::from_secs(5)))?;
                Box::new(s)
            }
        };
        Ok(conn)
    }
}

// ---- the two kinds of server: a stream handler and a protocol ----

/// Reads a connection's 4-byte number, counts it in `served`, sends it back.
fn echo_handler(
    served: Arc<Vec<AtomicUsize>>,
) -> impl Fn(StreamReader, StreamWriter) -> std::pin::Pin<Box<dyn Future<Output = ()>>> + Send + Sync + 'static {
    move |reader, writer| {
        let served = served.clone();
        Box::pin(async move {
            if let Ok(id) = reader.readexactly(4).await {
                served[u32::from_le_bytes(id[..4].try_into().unwrap()) as usize].fetch_add(1, SeqCst);
                writer.write(&id);
                let _ = writer.drain().await;
            }
            writer.close();
        })
    }
}

/// The same as a protocol: buffers the 4 bytes, counts, echoes, closes.
struct EchoId {
    served: Arc<Vec<AtomicUsize>>,
    transport: Option<Transport>,
    buf: Vec<u8>,
}

impl Protocol for EchoId {
    fn connection_made(&mut self, t: Transport) {
        self.transport = Some(t);
    }
    fn data_received(&mut self, data: &[u8]) {
        self.buf.extend_from_slice(data);
        if self.buf.len() >= 4 {
            let id = u32::from_le_bytes(self.buf[..4].try_into().unwrap());
            self.served[id as usize].fetch_add(1, SeqCst);
            if let Some(t) = self.transport.take() {
                t.write(&self.buf[..4]);
                t.close();
            }
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Kind {
    Streams,
    Protocol,
}

fn start_tcp(rt: &Runtime, kind: Kind, policy: Policy, served: &Arc<Vec<AtomicUsize>>) -> Servers {
    let addr = "127.0.0.1:0".parse().unwrap();
    match kind {
        Kind::Streams => rt.handle().start_server(policy, addr, echo_handler(served.clone())),
        Kind::Protocol => {
            let served = served.clone();
            rt.handle().create_server(policy, addr, move || EchoId {
                served: served.clone(),
                transport: None,
                buf: Vec::new(),
            })
        }
    }
    .unwrap()
}

fn start_unix(rt: &Runtime, kind: Kind, addr: &UnixAddr, served: &Arc<Vec<AtomicUsize>>) -> Servers<UnixAddr> {
    let policy = Policy::LeastConnections;
    match kind {
        Kind::Streams => rt
            .handle()
            .start_unix_server(policy, addr, echo_handler(served.clone())),
        Kind::Protocol => {
            let served = served.clone();
            rt.handle().create_unix_server(policy, addr, move || EchoId {
                served: served.clone(),
                transport: None,
                buf: Vec::new(),
            })
        }
    }
    .unwrap()
}

/// `n` connections from 4 client threads; each sends its number and reads it back.
fn churn(target: Arc<Target>, n: usize) -> usize {
    let ok = Arc::new(AtomicUsize::new(0));
    let clients: Vec<_> = (0..4)
        .map(|c| {
            let (ok, target) = (ok.clone(), target.clone());
            std::thread::spawn(move || {
                for k in (c..n).step_by(4) {
                    let mut s = target.connect().unwrap();
                    s.write_all(&(k as u32).to_le_bytes()).unwrap();
                    let mut back = [0; 4];
                    s.read_exact(&mut back).unwrap();
                    assert_eq!(u32::from_le_bytes(back), k as u32);
                    ok.fetch_add(1, SeqCst);
                }
            })
        })
        .collect();
    for c in clients {
        c.join().unwrap();
    }
    ok.load(SeqCst)
}

const N: usize = 1500;

/// Churn against servers started by `start`; every connection served exactly once, and each
/// one counted in its loop's statistics.
fn churn_servers(loops_pinned: bool, label: &str, start: impl FnOnce(&Runtime, &Arc<Vec<AtomicUsize>>) -> Target) {
    let _g = serial();
    let rt = Builder::new().loops(2).pin_to_cpus(loops_pinned).build().unwrap();
    let served: Arc<Vec<AtomicUsize>> = Arc::new((0..N).map(|_| AtomicUsize::new(0)).collect());
    let target = Arc::new(start(&rt, &served));
    assert_eq!(churn(target, N), N, "{label}");
    let stats = rt.handle().stats();
    rt.shutdown().unwrap();
    assert!(
        served.iter().all(|c| c.load(SeqCst) == 1),
        "{label}: every connection served exactly once"
    );
    let accepted: Vec<u64> = stats.loops().iter().map(|l| l.accepted).collect();
    assert_eq!(
        accepted.iter().sum::<u64>(),
        N as u64,
        "{label}: each counted in its loop"
    );
    eprintln!("{label}: accepted per loop {accepted:?}");
}

fn churn_tcp(kind: Kind, policy: Policy) {
    churn_servers(
        policy == Policy::ReusePortCpu,
        &format!("{kind:?} {policy:?}"),
        |rt, served| Target::Tcp(start_tcp(rt, kind, policy, served).local_addr()),
    );
}

#[test]
fn start_server_reuse_port_serves_every_connection_once() {
    churn_tcp(Kind::Streams, Policy::ReusePort);
}

#[test]
fn start_server_reuse_port_cpu_serves_every_connection_once() {
    churn_tcp(Kind::Streams, Policy::ReusePortCpu);
}

#[test]
fn start_server_least_connections_serves_every_connection_once() {
    churn_tcp(Kind::Streams, Policy::LeastConnections);
}

#[test]
fn create_server_reuse_port_serves_every_connection_once() {
    churn_tcp(Kind::Protocol, Policy::ReusePort);
}

#[test]
fn create_server_reuse_port_cpu_serves_every_connection_once() {
    churn_tcp(Kind::Protocol, Policy::ReusePortCpu);
}

#[test]
fn create_server_least_connections_serves_every_connection_once() {
    churn_tcp(Kind::Protocol, Policy::LeastConnections);
}

#[test]
fn unix_servers_acceptor_serves_every_connection_once() {
    for kind in [Kind::Streams, Kind::Protocol] {
        churn_servers(false, &format!("unix {kind:?}"), |rt, served| {
            let addr = abstract_addr(&format!("churn-{kind:?}"));
            Target::Unix(start_unix(rt, kind, &addr, served).local_addr())
        });
    }
}

#[test]
fn unix_listeners_acceptor_serves_every_connection_once() {
    use evloop::io::{AsyncReadExt, AsyncWriteExt};
    churn_servers(false, "UnixListeners", |rt, served| {
        let addr = abstract_addr("listeners");
        let l = UnixListeners::bind(rt.handle(), &addr, Policy::LeastConnections).unwrap();
        let served = served.clone();
        rt.spawn_on_each(move |_| {
            let (l, served) = (l.clone(), served.clone());
            async move {
                l.serve(move |mut conn, _| {
                    let served = served.clone();
                    async move {
                        let mut id = [0; 4];
                        if conn.read_exact(&mut id).await.is_ok() {
                            served[u32::from_le_bytes(id) as usize].fetch_add(1, SeqCst);
                            let _ = conn.write_all(&id).await;
                        }
                    }
                })
                .await
            }
        });
        Target::Unix(addr)
    });
}

// ---- the typed refusal on Unix addresses ----

#[test]
fn reuse_port_policies_on_a_unix_address_give_the_typed_error() {
    let _g = serial();
    let rt = Builder::new().loops(2).build().unwrap();
    let h = rt.handle();
    let path = std::env::temp_dir().join(format!("evloop-test-servers-{}-refused.sock", std::process::id()));
    for addr in [abstract_addr("refused"), UnixAddr::pathname(&path).unwrap()] {
        for policy in [Policy::ReusePort, Policy::ReusePortCpu] {
            let errors = [
                UnixListeners::bind(h, &addr, policy).map(drop),
                h.start_unix_server(policy, &addr, |_r, _w| async {}).map(drop),
                h.create_unix_server(policy, &addr, || EchoId {
                    served: Arc::new(Vec::new()),
                    transport: None,
                    buf: Vec::new(),
                })
                .map(drop),
            ];
            for err in errors {
                let err = err.unwrap_err();
                assert_eq!(err.kind(), ErrorKind::Unsupported);
                let typed = err.get_ref().and_then(|e| e.downcast_ref::<UnsupportedPolicy>());
                assert_eq!(typed.map(|e| e.policy()), Some(policy), "{err}");
            }
        }
    }
    assert!(!path.exists(), "nothing was bound");
    // The acceptor is accepted on the same addresses.
    let s = h
        .start_unix_server(
            Policy::LeastConnections,
            &UnixAddr::pathname(&path).unwrap(),
            |_r, _w| async {},
        )
        .unwrap();
    assert!(path.exists());
    s.close();
    assert!(!path.exists(), "close removes the socket file");
    rt.shutdown().unwrap();
}

// ---- close, wait_closed ----

#[test]
fn close_stops_every_loop_and_wait_closed_waits_for_the_connections() {
    let _g = serial();
    for policy in [Policy::ReusePort, Policy::LeastConnections] {
        let rt = Builder::new().loops(2).build().unwrap();
        // Each connection is held open until the client sends its byte.
        let s = rt
            .handle()
            .start_server(policy, "127.0.0.1:0".parse().unwrap(), |reader, writer| async move {
                let got = reader.readexactly(1).await.unwrap_or_default();
                writer.write(&got);
            })
            .unwrap();
        let addr = s.local_addr();
        let mut open: Vec<TcpStream> = (0..6).map(|_| TcpStream::connect(addr).unwrap()).collect();
        let deadline = Instant::now() + Duration::from_secs(5);
        while s.active_connections() < 6 && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(2));
        }
        assert_eq!(s.active_connections(), 6);
        let (tx, rx) = std::sync::mpsc::channel();
        let waiter = s.clone();
        rt.handle()
            .spawn_on(1, move || async move {
                waiter.wait_closed().await;
                let _ = tx.send(());
            })
            .unwrap();
        s.close();
        assert!(!s.is_serving());
        // Each loop closes its socket when it next runs (a connection that comes meanwhile is
        // served): soon nobody listens any more, on either loop.
        let deadline = Instant::now() + Duration::from_secs(2);
        while TcpStream::connect(addr).is_ok() {
            assert!(Instant::now() < deadline, "{policy:?}: still accepting after close");
            std::thread::sleep(Duration::from_millis(1));
        }
        for _ in 0..8 {
            assert!(
                TcpStream::connect(addr).is_err(),
                "{policy:?}: accepting again after close"
            );
        }
        // The open connections still work.
        assert!(
            rx.recv_timeout(Duration::from_millis(50)).is_err(),
            "wait_closed before the connections end"
        );
        for c in &mut open {
            c.write_all(b"z").unwrap();
            let mut b = [0; 1];
            c.read_exact(&mut b).unwrap();
            assert_eq!(&b, b"z");
        }
        rx.recv_timeout(Duration::from_secs(5))
            .expect("wait_closed completes once every connection has closed");
        assert_eq!(s.active_connections(), 0);
        rt.shutdown().unwrap();
    }
}

// ---- shutdown under load ----

const REPLY: usize = 256 * 1024;

/// What the clients saw: full replies, nothing at all (not accepted, or closed before the
/// request was read), and partial replies (the failure this test is about).
#[derive(Default, Debug)]
struct Outcomes {
    full: AtomicUsize,
    nothing: AtomicUsize,
    partial: AtomicUsize,
}

fn shutdown_under_load(kind: Kind, policy: Policy) {
    let rt = Builder::new()
        .loops(2)
        .grace_period(Duration::from_secs(3))
        .build()
        .unwrap();
    let started = Arc::new(AtomicUsize::new(0));
    let st = started.clone();
    let addr = "127.0.0.1:0".parse().unwrap();
    let servers = match kind {
        Kind::Streams => rt.handle().start_server(policy, addr, move |reader, writer| {
            let st = st.clone();
            async move {
                if reader.readexactly(1).await.is_ok() {
                    st.fetch_add(1, SeqCst);
                    evloop::time::sleep(Duration::from_millis(20)).await; // in flight at the stop
                    writer.write(&vec![7u8; REPLY]);
                    let _ = writer.drain().await;
                }
                writer.close();
            }
        }),
        Kind::Protocol => rt.handle().create_server(policy, addr, move || SlowReply {
            started: st.clone(),
            transport: None,
        }),
    }
    .unwrap();
    let addr = servers.local_addr();
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let out = Arc::new(Outcomes::default());
    // Enough clients that a dozen requests are in flight when the stop comes.
    let clients: Vec<_> = (0..12)
        .map(|_| {
            let (stop, out) = (stop.clone(), out.clone());
            std::thread::spawn(move || {
                while !stop.load(SeqCst) {
                    let Ok(mut s) = TcpStream::connect(addr) else { continue };
                    let _ = s.set_read_timeout(Some(Duration::from_secs(5)));
                    let _ = s.write_all(b"x");
                    let mut got = 0;
                    let mut buf = [0; 16384];
                    loop {
                        match s.read(&mut buf) {
                            Ok(0) | Err(_) => break,
                            Ok(n) => got += n,
                        }
                    }
                    match got {
                        REPLY => out.full.fetch_add(1, SeqCst),
                        0 => out.nothing.fetch_add(1, SeqCst),
                        _ => out.partial.fetch_add(1, SeqCst),
                    };
                }
            })
        })
        .collect();
    std::thread::sleep(Duration::from_millis(150));
    rt.shutdown().unwrap();
    stop.store(true, SeqCst);
    for c in clients {
        c.join().unwrap();
    }
    let label = format!("{kind:?} {policy:?}");
    eprintln!("{label}: {out:?}, handlers started {}", started.load(SeqCst));
    assert_eq!(out.partial.load(SeqCst), 0, "{label}: a reply cut short");
    assert!(out.full.load(SeqCst) > 0, "{label}: served under load");
    assert_eq!(
        out.full.load(SeqCst),
        started.load(SeqCst),
        "{label}: every request the servers read got its full reply"
    );
}

/// `create_server`'s slow reply: after the request's byte, 20 ms, then the whole reply.
struct SlowReply {
    started: Arc<AtomicUsize>,
    transport: Option<Transport>,
}

impl Protocol for SlowReply {
    fn connection_made(&mut self, t: Transport) {
        self.transport = Some(t);
    }
    fn data_received(&mut self, _data: &[u8]) {
        if let Some(t) = self.transport.take() {
            self.started.fetch_add(1, SeqCst);
            evloop::spawn(async move {
                evloop::time::sleep(Duration::from_millis(20)).await;
                t.write(&vec![7u8; REPLY]);
                t.close();
            })
            .detach();
        }
    }
}

#[test]
fn shutdown_under_load_loses_no_accepted_connection() {
    let _g = serial();
    for kind in [Kind::Streams, Kind::Protocol] {
        for policy in [Policy::ReusePort, Policy::LeastConnections] {
            shutdown_under_load(kind, policy);
        }
    }
}

// ---- nothing left behind ----

#[test]
fn start_and_stop_many_times_leaves_no_fd_and_no_thread() {
    let _g = serial();
    // One warm-up run: lazily opened process-wide fds (none expected) are made here.
    Builder::new().loops(2).build().unwrap().shutdown().unwrap();
    let (fds, tasks) = (count("/proc/self/fd"), settle("/proc/self/task", 0));
    let path = std::env::temp_dir().join(format!("evloop-test-servers-{}-rounds.sock", std::process::id()));
    for round in 0..16 {
        let rt = Builder::new().loops(1 + round % 3).build().unwrap();
        let served: Arc<Vec<AtomicUsize>> = Arc::new((0..4).map(|_| AtomicUsize::new(0)).collect());
        let policy = [Policy::ReusePort, Policy::LeastConnections][round % 2];
        let tcp = start_tcp(&rt, [Kind::Streams, Kind::Protocol][round / 2 % 2], policy, &served);
        let unix_addr = if round % 4 < 2 {
            abstract_addr("rounds")
        } else {
            UnixAddr::pathname(&path).unwrap()
        };
        let unix = start_unix(&rt, [Kind::Protocol, Kind::Streams][round / 2 % 2], &unix_addr, &served);
        for (i, target) in [Target::Tcp(tcp.local_addr()), Target::Unix(unix_addr)]
            .iter()
            .enumerate()
        {
            let mut c = target.connect().unwrap();
            c.write_all(&(i as u32).to_le_bytes()).unwrap();
            let mut back = [0; 4];
            c.read_exact(&mut back).unwrap();
        }
        if round % 3 == 0 {
            tcp.close();
            unix.close();
        }
        rt.shutdown().unwrap();
        assert!(!path.exists(), "round {round}: the socket file is removed");
    }
    assert_eq!(settle("/proc/self/fd", fds), fds, "fds left behind");
    assert_eq!(settle("/proc/self/task", tasks), tasks, "threads left behind");
}

/// Never answers, never closes: only the runtime's stop ends its connection.
struct Silent;

impl Protocol for Silent {
    fn data_received(&mut self, _data: &[u8]) {}
}

#[test]
fn connections_cut_by_the_grace_period_still_end_the_count_and_wait_closed() {
    let _g = serial();
    for kind in [Kind::Streams, Kind::Protocol] {
        let rt = Builder::new()
            .loops(2)
            .grace_period(Duration::from_millis(50))
            .build()
            .unwrap();
        let addr = "127.0.0.1:0".parse().unwrap();
        let policy = Policy::LeastConnections;
        let s = match kind {
            Kind::Streams => rt.handle().start_server(policy, addr, |reader, _writer| async move {
                let _ = reader.read_to_end().await; // until the client closes: never, here
            }),
            Kind::Protocol => rt.handle().create_server(policy, addr, || Silent),
        }
        .unwrap();
        let _held: Vec<TcpStream> = (0..3).map(|_| TcpStream::connect(s.local_addr()).unwrap()).collect();
        let deadline = Instant::now() + Duration::from_secs(5);
        while s.active_connections() < 3 && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(2));
        }
        assert_eq!(s.active_connections(), 3);
        rt.shutdown().unwrap();
        assert_eq!(
            s.active_connections(),
            0,
            "{kind:?}: the loop's close ended the connections"
        );
        // Awaited on another runtime's loop: done, not hung.
        let other = Builder::new().loops(1).build().unwrap();
        let done = other
            .block_on(move || async move { evloop::time::timeout(Duration::from_secs(5), s.wait_closed()).await })
            .unwrap();
        assert!(done.is_ok(), "{kind:?}: wait_closed after the runtime stopped");
    }
}
