// Standalone binary: it counts the process's fds and raises its `RLIMIT_NOFILE`.
//! Many connections through echo servers on loopback, task-based (`TcpListener`/`TcpStream`)
//! and protocol-based (`create_server`): 10,000 sequential connections and 1,000 concurrent ones
//! (all open at the same time), each exchanging one message. Afterwards the process's fd table
//! (`/proc/self/fd`) is back to its starting size and the loop holds no registration.
//!
//! The fd counts are process-wide, so the tests of this binary run one at a time (`serial()`).
//! Each stays well under 30 s in debug builds; the bound of every run is generous
//! ([`run_bounded`]) and nothing depends on the machine's speed.

use std::cell::Cell;
use std::io;
use std::rc::Rc;
use std::time::Instant;

use evloop::net::{TcpListener, TcpStream};
use evloop::{
    event_loop::LoopHandle,
    io::{AsyncReadExt, AsyncWriteExt},
    protocol::{Protocol, Transport},
    task::Promise,
};
use evloop_tests::fds::{open_fd_count, open_fds};
use evloop_tests::net::{Echo, echo_stream};
use evloop_tests::{run_bounded, serial, warm_loop, yield_until};

const SEQUENTIAL: usize = 10_000;
const CONCURRENT: usize = 1_000;

/// Makes sure `extra` more fds fit under the soft limit, raising it toward the hard limit if
/// needed; `Err(reason)` when even the hard limit is too low.
fn ensure_fd_room(extra: usize) -> Result<(), String> {
    let (soft, hard) = evloop_syscalls::nofile_limit().map_err(|e| format!("getrlimit: {e}"))?;
    let highest = open_fds().last().copied().unwrap_or(0) as u64;
    let needed = highest + extra as u64 + 64;
    if soft >= needed {
        return Ok(());
    }
    if hard < needed {
        return Err(format!(
            "{extra} more fds are needed but RLIMIT_NOFILE is soft {soft}, hard {hard}"
        ));
    }
    evloop_syscalls::set_nofile_limit(needed, hard).map_err(|e| format!("setrlimit({needed}, {hard}): {e}"))?;
    println!("raised the soft fd limit from {soft} to {needed} (hard {hard})");
    Ok(())
}

/// The message of connection `i`: its number, so a crossed-over reply would be noticed.
fn message(i: usize) -> [u8; 32] {
    let mut m = [0u8; 32];
    m[..8].copy_from_slice(&(i as u64).to_be_bytes());
    m[8..].fill(b'.');
    m
}

/// Connects, sends connection `i`'s message, reads the echo back.
async fn exchange(addr: std::net::SocketAddr, i: usize) -> io::Result<TcpStream> {
    let mut c = TcpStream::connect(addr).await?;
    let msg = message(i);
    c.write_all(&msg).await?;
    let mut back = [0u8; 32];
    c.read_exact(&mut back).await?;
    if back != msg {
        return Err(io::Error::other(format!("connection {i}: wrong echo")));
    }
    Ok(c)
}

/// A task-based echo server: accepts until the listener's task is dropped, one task per
/// connection; counts the connections that are open.
fn task_server(listener: TcpListener, open: Rc<Cell<usize>>) -> evloop::task::Task<()> {
    evloop::spawn(async move {
        loop {
            let (mut s, _) = listener.accept().await.unwrap();
            open.set(open.get() + 1);
            let o = open.clone();
            evloop::spawn(async move {
                let _ = echo_stream(&mut s).await;
                drop(s);
                o.set(o.get() - 1);
            })
            .detach();
        }
    })
}

/// Prints the calls this thread made per connection since the counters were reset (client and
/// server together: both live on this thread).
fn print_per_connection(what: &str, n: usize) {
    let c = evloop::sys::counters::snapshot();
    let per: Vec<String> = c
        .iter()
        .filter(|(s, _)| s.is_syscall())
        .map(|(s, k)| format!("{}={:.2}", s.name(), k as f64 / n as f64))
        .collect();
    println!("{what}: syscalls per connection (client and server): {}", per.join(" "));
}

/// How many of this process's fds are sockets.
fn open_socket_count() -> usize {
    open_fds()
        .into_iter()
        .filter(|fd| {
            std::fs::read_link(format!("/proc/self/fd/{fd}")).is_ok_and(|t| t.to_string_lossy().starts_with("socket:"))
        })
        .count()
}

/// Runs `body` on a fresh loop, then closes the loop and checks that the fd table is back to
/// where it started.
fn with_fd_check(what: &str, body: impl FnOnce(&LoopHandle)) {
    let before = open_fd_count();
    let started = Instant::now();
    {
        let lp = warm_loop();
        body(&lp);
        let s = lp.stats();
        assert_eq!(s.io_registrations, 0, "{what}: registrations left: {s:?}");
        lp.close().unwrap();
    }
    let after = open_fd_count();
    println!("{what}: {:?}, fds before {before}, after {after}", started.elapsed());
    assert_eq!(
        after, before,
        "{what}: the fd table did not return to its starting size"
    );
}

// ---------------------------------------------------------------------------------------------
// Sequential.

#[test]
fn ten_thousand_sequential_connections_through_a_task_echo_server() {
    let _g = serial();
    with_fd_check("10,000 sequential, task server", |lp| {
        run_bounded(lp, async {
            let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
            let addr = listener.local_addr().unwrap();
            let open = Rc::new(Cell::new(0));
            let server = task_server(listener, open.clone());
            evloop::sys::counters::reset();
            for i in 0..SEQUENTIAL {
                let c = exchange(addr, i).await.unwrap();
                drop(c);
            }
            yield_until(|| open.get() == 0).await;
            print_per_connection("task server", SEQUENTIAL);
            server.cancel();
            let _ = server.await;
        });
    });
}

#[test]
fn ten_thousand_sequential_connections_through_a_protocol_echo_server() {
    let _g = serial();
    with_fd_check("10,000 sequential, protocol server", |lp| {
        let h = lp.clone();
        run_bounded(lp, async move {
            let server = h.create_server(Echo::new, "127.0.0.1", 0).await.unwrap();
            let addr = server.local_addr();
            evloop::sys::counters::reset();
            for i in 0..SEQUENTIAL {
                let c = exchange(addr, i).await.unwrap();
                drop(c);
            }
            yield_until(|| server.active_connections() == 0).await;
            print_per_connection("protocol server", SEQUENTIAL);
            server.close();
            server.wait_closed().await;
        });
    });
}

// ---------------------------------------------------------------------------------------------
// Concurrent: every connection stays open until all have exchanged their message.

/// Counts finished exchanges; completes `all_done` when the last one is in. The connections
/// close when the test completes `release` (after it has looked at the fd table).
#[derive(Clone)]
struct Barrier {
    done: Rc<Cell<usize>>,
    all_done: Promise<()>,
    release: Promise<()>,
}

impl Barrier {
    fn new(lp: &LoopHandle) -> Barrier {
        Barrier {
            done: Rc::new(Cell::new(0)),
            all_done: lp.create_future(),
            release: lp.create_future(),
        }
    }
    fn arrive(&self) {
        self.done.set(self.done.get() + 1);
        if self.done.get() == CONCURRENT {
            let _ = self.all_done.set_result(());
        }
    }
}

#[test]
fn thousand_concurrent_connections_through_a_task_echo_server() {
    let _g = serial();
    if let Err(reason) = ensure_fd_room(2 * CONCURRENT) {
        println!("skipped: {reason}");
        return;
    }
    with_fd_check("1,000 concurrent, task server", |lp| {
        let h = lp.clone();
        run_bounded(lp, async move {
            let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
            let addr = listener.local_addr().unwrap();
            let open = Rc::new(Cell::new(0));
            let server = task_server(listener, open.clone());
            let base = open_socket_count();
            let barrier = Barrier::new(&h);
            let mut clients = Vec::new();
            for i in 0..CONCURRENT {
                let b = barrier.clone();
                clients.push(evloop::spawn(async move {
                    let c = exchange(addr, i).await.unwrap();
                    b.arrive();
                    b.release.wait().await.unwrap();
                    drop(c);
                }));
            }
            barrier.all_done.wait().await.unwrap();
            let peak = open_socket_count();
            println!(
                "all {CONCURRENT} connections open at once: {} more sockets, server side open {}",
                peak - base,
                open.get()
            );
            assert!(
                peak >= base + 2 * CONCURRENT,
                "both ends of every connection were open together"
            );
            assert_eq!(open.get(), CONCURRENT);
            barrier.release.set_result(()).unwrap();
            for c in clients {
                c.await.unwrap();
            }
            yield_until(|| open.get() == 0).await;
            server.cancel();
            let _ = server.await;
        });
    });
}

/// A protocol client: sends its message, checks the echo, reports to the barrier, and closes
/// when everybody is done.
struct PingOnce {
    i: usize,
    got: Vec<u8>,
    transport: Option<Transport>,
    barrier: Barrier,
    lost: Rc<Cell<usize>>,
}

impl Protocol for PingOnce {
    fn connection_made(&mut self, t: Transport) {
        t.write(&message(self.i));
        let t2 = t.clone();
        self.barrier.release.add_done_callback(move |_| t2.close());
        self.transport = Some(t);
    }
    fn data_received(&mut self, data: &[u8]) {
        self.got.extend_from_slice(data);
        if self.got.len() == 32 {
            assert_eq!(self.got, message(self.i), "connection {}: wrong echo", self.i);
            self.barrier.arrive();
        }
    }
    fn connection_lost(&mut self, error: Option<io::Error>) {
        assert!(error.is_none(), "connection {}: {error:?}", self.i);
        self.transport = None;
        self.lost.set(self.lost.get() + 1);
    }
}

#[test]
fn thousand_concurrent_connections_through_a_protocol_echo_server() {
    let _g = serial();
    if let Err(reason) = ensure_fd_room(2 * CONCURRENT) {
        println!("skipped: {reason}");
        return;
    }
    with_fd_check("1,000 concurrent, protocol server and clients", |lp| {
        let h = lp.clone();
        run_bounded(lp, async move {
            let server = h.create_server(Echo::new, "127.0.0.1", 0).await.unwrap();
            let port = server.local_addr().port();
            let base = open_socket_count();
            let barrier = Barrier::new(&h);
            let lost = Rc::new(Cell::new(0));
            let mut connects = Vec::new();
            for i in 0..CONCURRENT {
                let p = PingOnce {
                    i,
                    got: Vec::new(),
                    transport: None,
                    barrier: barrier.clone(),
                    lost: lost.clone(),
                };
                connects.push(evloop::spawn(h.create_connection(p, "127.0.0.1", port)));
            }
            for c in connects {
                c.await.unwrap().unwrap();
            }
            barrier.all_done.wait().await.unwrap();
            let peak = open_socket_count();
            println!(
                "all {CONCURRENT} connections open at once: {} more sockets",
                peak - base
            );
            assert!(peak >= base + 2 * CONCURRENT);
            assert_eq!(server.active_connections(), CONCURRENT);
            barrier.release.set_result(()).unwrap();
            yield_until(|| lost.get() == CONCURRENT && server.active_connections() == 0).await;
            server.close();
            server.wait_closed().await;
        });
    });
}
