//! The small programs behind the traces of chapter 2 of the book (docs/02-the-reactor.md), one
//! per subcommand:
//!
//! - `edge`: a pipe registered edge-triggered, read one byte at a time with pauses: readiness
//!   stays set until a read says `EAGAIN` (run it under `strace -e trace=read,write,epoll_ctl,epoll_pwait2`).
//! - `stale`: the mistake generations protect against: an fd closed before its reader is
//!   removed, while a `dup` keeps its pipe open, and the number reused by a new pipe.
//! - `counts [TRIPS]`: the system calls of 10,000 (or TRIPS) round trips on one connection, for a protocol, a
//!   streams and a sock server, each on its own thread so its counters see only the server.
//! - `counts50`: the protocol server with 50 connections doing 400 round trips each.
//! - `emfile`: a protocol server that runs out of file descriptors with connections waiting to
//!   be accepted: it backs off and serves them when fds come back, and sheds them with its spare
//!   fd only when the shortage outlasts its retry delay; it keeps serving.

use std::cell::{Cell, RefCell};
use std::error::Error;
use std::io;
use std::net::SocketAddr;
use std::os::fd::{AsFd, AsRawFd};
use std::rc::Rc;
use std::time::Duration;

use evloop::net::{Domain, SockAddr, SockType, Socket, TcpStream};
use evloop::{
    io::{AsyncFd, AsyncReadExt, AsyncWriteExt, Interest},
    protocol::{Protocol, Transport},
};
use evloop_syscalls as sys;
use evloop_syscalls::counters::{self, Counts};

async fn edge() -> Result<(), Box<dyn Error>> {
    let (r, w) = sys::pipe2()?;
    let r = AsyncFd::new(r)?; // epoll_ctl(ADD, EPOLLIN|EPOLLOUT|EPOLLRDHUP|EPOLLET)
    sys::write(w.as_fd(), b"abc")?; // one write: one edge
    let lp = evloop::event_loop::get_running_loop()?;
    lp.call_later(Duration::from_millis(50), move || drop(sys::write(w.as_fd(), b"d")))?;
    for _ in 0..4 {
        let mut byte = [0u8; 1];
        r.io(Interest::Read, |fd| sys::read(fd.as_fd(), &mut byte)).await?;
        println!("read {:?}", byte[0] as char);
        evloop::time::sleep(Duration::from_millis(1)).await; // stop early: no EAGAIN yet
    }
    Ok(())
}

fn stale() -> Result<(), Box<dyn Error>> {
    let ev = evloop::event_loop::EventLoop::new()?;
    let lp = ev.handle();
    let (old, old_w) = sys::pipe2()?;
    let keep = sys::dup(old.as_fd())?; // a second fd for the same pipe
    let n = old.as_raw_fd();
    lp.add_reader(n, || println!("old reader"))?;
    sys::write(old_w.as_fd(), b"x")?; // the old pipe is readable from now on
    drop(old); // close(n) BEFORE remove_reader: the mistake
    println!("remove_reader({n}) -> {}", lp.remove_reader(n));
    let (new, _new_w) = sys::pipe2()?; // the lowest free number: n again
    println!("new pipe's read end is fd {}", new.as_raw_fd());
    lp.add_reader(new.as_raw_fd(), || println!("new reader (its pipe is empty!)"))?;
    lp.run_once()?;
    lp.run_once()?;
    drop(keep); // the old pipe's last fd: the kernel forgets the registration
    lp.call_later(Duration::from_millis(10), || println!("10 ms timer"))?;
    lp.run_once()?;
    lp.remove_reader(new.as_raw_fd());
    lp.close()?;
    Ok(())
}

/// What a counted server measures: the server thread's system calls from the moment the last
/// of its connections started until the last one ended.
struct Window {
    conns: usize,
    started: Cell<usize>,
    ended: Cell<usize>,
    since: RefCell<Option<Counts>>,
    label: String,
}

impl Window {
    fn connection_started(&self) {
        self.started.set(self.started.get() + 1);
        if self.started.get() == self.conns {
            *self.since.borrow_mut() = Some(counters::snapshot());
        }
    }

    /// Prints the counts when the last connection ends; `true` then.
    fn connection_ended(&self) -> bool {
        self.ended.set(self.ended.get() + 1);
        if self.ended.get() < self.conns {
            return false;
        }
        if let Some(since) = self.since.borrow().as_ref() {
            println!("{}: {}", self.label, counters::snapshot().since(since));
        }
        true
    }
}

/// The echo of seed 001, as a protocol (no upper-casing: the counts are the point here).
struct CountedEcho {
    t: Option<Transport>,
    window: Rc<Window>,
    done: evloop::task::Promise<()>,
}

impl Protocol for CountedEcho {
    fn connection_made(&mut self, t: Transport) {
        self.t = Some(t);
        self.window.connection_started(); // after the epoll_ctl(ADD)
    }

    fn data_received(&mut self, data: &[u8]) {
        if let Some(t) = &self.t {
            t.write(data);
        }
    }

    fn connection_lost(&mut self, _: Option<io::Error>) {
        // After the EPOLL_CTL_DEL and the close.
        if self.window.connection_ended() {
            let _ = self.done.set_result(());
        }
    }
}

async fn serve_counted(
    kind: String,
    window: Rc<Window>,
    addr_out: std::sync::mpsc::Sender<SocketAddr>,
) -> io::Result<()> {
    let lp = evloop::event_loop::get_running_loop()?;
    let done = lp.create_future::<()>();
    match kind.as_str() {
        "protocol" => {
            let (w, d) = (window.clone(), done.clone());
            let factory = move || CountedEcho {
                t: None,
                window: w.clone(),
                done: d.clone(),
            };
            let server = lp.create_server(factory, "127.0.0.1", 0).await?;
            let _ = addr_out.send(server.local_addr());
            let _ = done.wait().await;
        }
        "streams" => {
            let (w, d) = (window.clone(), done.clone());
            let handler = move |reader: evloop::streams::StreamReader, writer: evloop::streams::StreamWriter| {
                let (w, d) = (w.clone(), d.clone());
                async move {
                    w.connection_started();
                    while let Ok(line) = reader.readline().await {
                        if line.is_empty() {
                            break;
                        }
                        writer.write(&line);
                        if writer.drain().await.is_err() {
                            break;
                        }
                    }
                    if w.connection_ended() {
                        let _ = d.set_result(());
                    }
                }
            };
            let server = evloop::streams::start_server(handler, "127.0.0.1", 0).await?;
            let _ = addr_out.send(server.local_addr());
            let _ = done.wait().await;
        }
        _ => {
            let listener = Socket::new(Domain::Inet, SockType::Stream)?;
            listener.bind(&SockAddr::Inet(([127, 0, 0, 1], 0).into()))?;
            listener.listen(1024)?;
            if let SockAddr::Inet(a) = listener.local_addr()? {
                let _ = addr_out.send(a);
            }
            for _ in 0..window.conns {
                let (conn, _) = lp.sock_accept(&listener).await?;
                let (l, w, d) = (lp.clone(), window.clone(), done.clone());
                evloop::spawn(async move {
                    w.connection_started();
                    while let Ok(data) = l.sock_recv(&conn, 4096).await {
                        if data.is_empty() || l.sock_sendall(&conn, &data).await.is_err() {
                            break;
                        }
                    }
                    if w.connection_ended() {
                        let _ = d.set_result(());
                    }
                });
            }
            let _ = done.wait().await;
        }
    }
    Ok(())
}

/// `conns` connections, each doing `trips` round trips of a 64-byte line after a 100 ms pause
/// (so that the server has started every connection before the first line arrives).
async fn client(addr: SocketAddr, conns: usize, trips: usize) -> io::Result<()> {
    let mut streams = Vec::new();
    for _ in 0..conns {
        streams.push(TcpStream::connect(addr).await?);
    }
    evloop::time::sleep(Duration::from_millis(100)).await;
    let tasks: Vec<_> = streams
        .into_iter()
        .map(|mut s| {
            evloop::spawn(async move {
                let line = [b'x'; 63].iter().copied().chain([b'\n']).collect::<Vec<u8>>();
                let mut reply = [0u8; 64];
                for _ in 0..trips {
                    s.write_all(&line).await?;
                    s.read_exact(&mut reply).await?;
                }
                Ok::<(), io::Error>(())
            })
        })
        .collect();
    for t in tasks {
        t.await.map_err(|e| io::Error::other(e.to_string()))??;
    }
    Ok(())
}

fn counts(kind: &str, label: &str, conns: usize, trips: usize) -> Result<(), Box<dyn Error>> {
    let (tx, rx) = std::sync::mpsc::channel();
    let (kind, label) = (kind.to_string(), label.to_string());
    let server = std::thread::spawn(move || {
        let window = Rc::new(Window {
            conns,
            started: Cell::new(0),
            ended: Cell::new(0),
            since: RefCell::new(None),
            label,
        });
        evloop::run(serve_counted(kind, window, tx))
    });
    let addr = rx.recv()?;
    evloop::run(client(addr, conns, trips))??;
    server.join().map_err(|_| "the server thread panicked")???;
    Ok(())
}

/// Seed 001's echo as a protocol, for `emfile`.
struct Echo(Option<Transport>);

impl Protocol for Echo {
    fn connection_made(&mut self, t: Transport) {
        self.0 = Some(t);
    }

    fn data_received(&mut self, data: &[u8]) {
        if let Some(t) = &self.0 {
            t.write(data);
        }
    }
}

async fn emfile() -> Result<(), Box<dyn Error>> {
    let lp = evloop::event_loop::get_running_loop()?;
    let server = lp.create_server(|| Echo(None), "127.0.0.1", 0).await?; // the listener and its spare fd
    server.set_accept_retry_delay(Duration::from_millis(200))?;
    let addr = server.local_addr();
    // Six clients connect while the loop is busy with this step: the kernel completes each
    // handshake and queues the connection on the listener; none is accepted yet.
    let mut clients = Vec::new();
    for _ in 0..6 {
        clients.push(std::net::TcpStream::connect(addr)?);
    }
    // Room for exactly three more fds: the server can accept three connections.
    let probe = sys::dup(std::io::stdin().as_fd())?;
    let lowest_free = probe.as_raw_fd() as u64;
    drop(probe);
    let (_, hard) = sys::nofile_limit()?;
    sys::set_nofile_limit(lowest_free + 3, hard)?;
    println!("fd limit lowered: room for 3 more fds, 6 connections waiting");
    // A brief shortage: the first three finish and close, the retry finds fds for the rest.
    report(round_trips(clients, 0, 100)).await?;
    // A lasting one: three connections stay open while three more wait.
    let mut held = Vec::new();
    for _ in 0..3 {
        let mut c = TcpStream::connect(addr).await?;
        c.write_all(b"hello\n").await?;
        c.read_exact(&mut [0u8; 6]).await?;
        held.push(c);
    }
    let mut waiting = Vec::new();
    for _ in 0..3 {
        waiting.push(std::net::TcpStream::connect(addr)?);
    }
    println!("3 connections held open, 3 more waiting");
    report(round_trips(waiting, 6, 1)).await?;
    drop(held);
    evloop::time::sleep(Duration::from_millis(50)).await;
    let mut late = TcpStream::connect(addr).await?;
    late.write_all(b"a new client\n").await?;
    let mut reply = [0u8; 13];
    late.read_exact(&mut reply).await?;
    println!("a new client afterwards: {:?}", String::from_utf8_lossy(&reply));
    server.close();
    Ok(())
}

/// One task per client, numbered from `first`, each making `trips` round trips.
fn round_trips(
    clients: Vec<std::net::TcpStream>,
    first: usize,
    trips: usize,
) -> Vec<evloop::task::Task<io::Result<(usize, usize)>>> {
    clients
        .into_iter()
        .enumerate()
        .map(|(i, c)| {
            let i = first + i;
            evloop::spawn(async move {
                let mut s = TcpStream::from_std(c)?;
                let mut reply = [0u8; 6];
                for _ in 0..trips {
                    s.write_all(b"hello\n").await?;
                    s.read_exact(&mut reply)
                        .await
                        .map_err(|e| io::Error::new(e.kind(), format!("connection {i}: {e}")))?;
                }
                Ok::<(usize, usize), io::Error>((i, trips))
            })
        })
        .collect()
}

/// Prints how each client fared, in order.
async fn report(tasks: Vec<evloop::task::Task<io::Result<(usize, usize)>>>) -> Result<(), Box<dyn Error>> {
    for t in tasks {
        match t.await? {
            Ok((i, trips)) => println!("connection {i}: {trips} round trips"),
            Err(e) => println!("{e}"),
        }
    }
    Ok(())
}

fn main() -> Result<(), Box<dyn Error>> {
    let which = std::env::args().nth(1).unwrap_or_default();
    match which.as_str() {
        "edge" => evloop::run(edge())?,
        "stale" => stale(),
        "counts" => {
            let trips = std::env::args().nth(2).map_or(Ok(10_000), |n| n.parse())?;
            counts("protocol", "protocol server", 1, trips)?;
            counts("streams", "streams server (until the handler returns)", 1, trips)?;
            counts("sock", "sock server (before the socket is dropped)", 1, trips)
        }
        "counts50" => counts("protocol", "server thread", 50, 400),
        "emfile" => evloop::run(emfile())?,
        _ => Err("usage: book_reactor edge | stale | counts [TRIPS] | counts50 | emfile".into()),
    }
}
