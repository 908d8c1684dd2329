//! Benchmark peer: evloop itself, for `make bench`'s side-by-side runs (tests/examples/bench/main.rs
//! drives it; the interface is in tests/bench/README.md, the same for every peer).
//!
//! ```text
//! cargo build --release -p evloop-tests --no-default-features --examples
//! target/release/examples/peer_evloop echo --variant protocol --port 0   # streams | protocol | sock
//!                                                                        # | lines | tcpstream
//! target/release/examples/peer_evloop timers --tasks 100000 --spread-ms 100
//! target/release/examples/peer_evloop spawn --n 1000000     # also call_soon, promise_chain,
//! target/release/examples/peer_evloop threadsafe --n 10000  # idle_tasks, timer_wake,
//!                                                            # thread_wake
//! ```
//!
//! One thread, one `EventLoop` with default options.
//! Echo variants: `streams` (start_server, `reader.read(64 KiB)` / `writer.write` + `drain`, a
//! task per connection), `protocol` (create_server + a `Protocol` writing back what it gets; the
//! default, also for `--variant default`), `sock` (a raw `Socket`, `sock_accept`, then a task per
//! connection looping on `sock_recv_into` into its own 64 KiB buffer + `sock_sendall`),
//! `tcpstream` (a `TcpListener`, then a task per connection: `read` into its own 64 KiB buffer +
//! `write_all` of what came), `lines` (streams answering line by line: `readline`, then `write`
//! and `drain` per line, the shape of a request/response server; with pipelined requests, all
//! the replies to one read are written in one task step).
//!
//! Known unfairness: the `sock` variant uses `sock_recv_into` rather than `sock_recv(65536)`,
//! which would allocate and zero 64 KiB per receive (asyncio has `sock_recv_into` too). The
//! protocol and streams paths read into one 64 KiB buffer per loop (tokio and smol peers have one
//! per connection). promise_chain sets the promise from a `call_soon` callback (asyncio's way);
//! the tokio and smol peers must spawn a task per round instead, which costs them more.

/// The command line, the echo server's banner and stdin watcher, and the measuring helpers (/proc
/// readers, the timers case's delays, the idle_tasks protocol, the JSON lines): the same for every
/// Rust peer.
#[path = "peer_common/mod.rs"]
mod common;

use std::cell::Cell;
use std::error::Error;
use std::process::ExitCode;
use std::rc::Rc;
use std::time::{Duration, Instant};

use evloop::net::{Domain, SockAddr, SockType, Socket, TcpListener, TcpStream};
use evloop::{
    event_loop::{EventLoop, LoopHandle},
    io::{AsyncReadExt, AsyncWriteExt},
    protocol::{Protocol, Transport},
    streams::{StreamReader, StreamWriter},
};

use common::{
    Cmd, Delays, TIMER_WAKE_DELAY, ThreadWake, announce, check_idle_started, cpu_seconds, exit_at_stdin_eof, idle_task,
    lateness_ms, measure_idle_tasks, peer_main, print_per_sec, print_rtts, print_spawn, print_timers,
};

const READ_SIZE: usize = 64 * 1024;

fn main() -> ExitCode {
    peer_main(
        "peer_evloop",
        &["streams", "protocol", "sock", "lines", "tcpstream", "default"],
        |cmd| match cmd {
            Cmd::Echo { variant, port } => echo(variant.as_deref().unwrap_or("protocol"), port),
            Cmd::Timers {
                tasks,
                spread_ms,
                from_spawn,
            } => timers(tasks, spread_ms, from_spawn),
            Cmd::Spawn { n } => spawn(n),
            Cmd::CallSoon { n } => call_soon(n),
            Cmd::PromiseChain { n } => promise_chain(n),
            Cmd::Threadsafe { n } => threadsafe(n),
            Cmd::IdleTasks { n } => idle_tasks(n),
            Cmd::TimerWake { n } => timer_wake(n),
            Cmd::ThreadWake { n } => thread_wake(n),
        },
    )
}

// ---------------------------------------------------------------------------------------------
// echo

/// The protocol variant: whatever arrives goes straight back in one `Transport::write`.
struct Echo {
    transport: Option<Transport>,
}

impl Protocol for Echo {
    fn connection_made(&mut self, transport: Transport) {
        self.transport = Some(transport); // the server already set TCP_NODELAY on it
    }

    fn data_received(&mut self, data: &[u8]) {
        if let Some(t) = &self.transport {
            t.write(data);
        }
    }

    fn connection_lost(&mut self, _error: Option<std::io::Error>) {
        self.transport = None;
    }
}

/// The streams variant's `client_connected_cb`.
async fn echo_stream(reader: StreamReader, writer: StreamWriter) {
    loop {
        let data = match reader.read(READ_SIZE).await {
            Ok(data) if data.is_empty() => return, // end of stream
            Ok(data) => data,
            Err(_) => return, // a reset: the connection is gone
        };
        writer.write(&data);
        if writer.drain().await.is_err() {
            return;
        }
    }
}

/// The lines variant's `client_connected_cb`: one reply per request line.
async fn echo_lines(reader: StreamReader, writer: StreamWriter) {
    loop {
        let line = match reader.readline().await {
            Ok(line) if !line.is_empty() => line,
            _ => return, // end of stream, or a reset
        };
        writer.write(&line);
        if writer.drain().await.is_err() {
            return;
        }
    }
}

/// The tcpstream variant's task per connection.
async fn echo_tcpstream(mut conn: TcpStream) -> std::io::Result<()> {
    let mut buf = vec![0u8; READ_SIZE];
    loop {
        let n = conn.read(&mut buf).await?;
        if n == 0 {
            return Ok(());
        }
        conn.write_all(&buf[..n]).await?;
    }
}

/// The sock variant's task per connection.
async fn echo_sock(lp: LoopHandle, conn: Socket) -> std::io::Result<()> {
    let mut buf = vec![0u8; READ_SIZE];
    loop {
        let n = lp.sock_recv_into(&conn, &mut buf).await?;
        if n == 0 {
            return Ok(());
        }
        lp.sock_sendall(&conn, &buf[..n]).await?;
    }
}

fn echo(variant: &str, port: u16) -> Result<(), Box<dyn Error>> {
    exit_at_stdin_eof();
    let variant = if variant == "default" { "protocol" } else { variant };
    let variant = variant.to_string();
    evloop::run(async move {
        let lp = evloop::event_loop::get_running_loop()?;
        match variant.as_str() {
            "streams" => {
                let server = evloop::streams::start_server(echo_stream, "127.0.0.1", port).await?;
                announce(server.local_addr())?;
                std::future::pending::<()>().await;
            }
            "lines" => {
                let server = evloop::streams::start_server(echo_lines, "127.0.0.1", port).await?;
                announce(server.local_addr())?;
                std::future::pending::<()>().await;
            }
            "tcpstream" => {
                let listener = TcpListener::bind(("127.0.0.1", port)).await?;
                announce(listener.local_addr()?)?;
                loop {
                    let conn = match listener.accept().await {
                        Ok((conn, _peer)) => conn,
                        Err(e) => {
                            eprintln!("accept: {e}; retrying in 100 ms");
                            evloop::time::sleep(Duration::from_millis(100)).await;
                            continue;
                        }
                    };
                    let _ = conn.set_nodelay(true);
                    evloop::spawn(echo_tcpstream(conn)).detach();
                }
            }
            "protocol" => {
                let server = lp.create_server(|| Echo { transport: None }, "127.0.0.1", port).await?;
                announce(server.local_addr())?;
                std::future::pending::<()>().await;
            }
            _ => {
                let listener = Socket::new(Domain::Inet, SockType::Stream)?;
                listener.set_reuseaddr(true)?;
                listener.bind(&SockAddr::Inet(([127, 0, 0, 1], port).into()))?;
                listener.listen(1024)?;
                let addr = listener.local_addr()?;
                announce(addr.as_inet().ok_or("sock: no TCP address")?)?;
                loop {
                    let conn = match lp.sock_accept(&listener).await {
                        Ok((conn, _peer)) => conn,
                        Err(e) => {
                            eprintln!("accept: {e}; retrying in 100 ms");
                            evloop::time::sleep(Duration::from_millis(100)).await;
                            continue;
                        }
                    };
                    let _ = conn.set_nodelay(true);
                    evloop::spawn(echo_sock(lp.clone(), conn)).detach();
                }
            }
        }
        Ok::<(), Box<dyn Error>>(())
    })?
}

// ---------------------------------------------------------------------------------------------
// timers, spawn, call_soon, promise_chain, threadsafe, idle_tasks, timer_wake, thread_wake

fn timers(tasks: usize, spread_ms: u64, from_spawn: bool) -> Result<(), Box<dyn Error>> {
    let lp = EventLoop::new()?;
    let h = lp.handle();
    let (cpu0, wall0) = (cpu_seconds(), Instant::now());
    let late = lp.run_until_complete(async move {
        let mut delays = Delays::new(spread_ms);
        let sleepers: Vec<_> = (0..tasks)
            .map(|_| {
                let (delay, lp) = (delays.next_delay(), h.clone());
                let at_spawn = from_spawn.then(|| h.time() + delay);
                evloop::spawn(async move {
                    // What `evloop::time::sleep(delay)` does, with the deadline kept to measure against
                    // (the loop's clock, CLOCK_MONOTONIC): fixed now, or when it was spawned.
                    let deadline = at_spawn.unwrap_or_else(|| lp.time() + delay);
                    evloop::time::sleep_until(deadline).await;
                    lateness_ms(Instant::now(), deadline)
                })
            })
            .collect();
        let mut late = Vec::with_capacity(tasks);
        for s in sleepers {
            late.push(s.await?);
        }
        Ok::<_, evloop::task::TaskError>(late)
    })??;
    let (cpu_s, wall_s) = (cpu_seconds() - cpu0, wall0.elapsed().as_secs_f64());
    print_timers(late, cpu_s, wall_s);
    Ok(())
}

fn spawn(n: usize) -> Result<(), Box<dyn Error>> {
    let lp = EventLoop::new()?;
    let started = Instant::now();
    let sum = lp.run_until_complete(async move {
        let tasks: Vec<_> = (0..n).map(|i| evloop::spawn(async move { i })).collect();
        let mut sum = 0usize;
        for t in tasks {
            sum += t.await?;
        }
        Ok::<_, evloop::task::TaskError>(sum)
    })??;
    let ms = started.elapsed().as_secs_f64() * 1e3;
    print_spawn(n, sum, ms)
}

fn call_soon(n: usize) -> Result<(), Box<dyn Error>> {
    let lp = EventLoop::new()?;
    let count = Rc::new(Cell::new(0usize));
    let started = Instant::now();
    for _ in 0..n {
        let c = count.clone();
        lp.call_soon(move || c.set(c.get() + 1))?;
    }
    lp.run_once()?; // one iteration runs exactly the callbacks that were ready
    let secs = started.elapsed().as_secs_f64();
    if count.get() != n {
        return Err(format!("call_soon: {} of {n} callbacks ran", count.get()).into());
    }
    print_per_sec(n, secs);
    Ok(())
}

/// `create_future` + `call_soon(set_result)` + await, N times in one task.
fn promise_chain(n: usize) -> Result<(), Box<dyn Error>> {
    let lp = EventLoop::new()?;
    let h = lp.handle();
    let started = Instant::now();
    lp.run_until_complete(async move {
        for i in 0..n {
            let p = h.create_future::<usize>();
            let setter = p.clone();
            h.call_soon(move || {
                let _ = setter.set_result(i);
            })?;
            let got = p.await?;
            if got != i {
                return Err(format!("promise_chain: got {got}, expected {i}").into());
            }
        }
        Ok::<(), Box<dyn Error>>(())
    })??;
    print_per_sec(n, started.elapsed().as_secs_f64());
    Ok(())
}

/// Another thread: `remote().call_soon_threadsafe(reply)`, then waits for the reply on a std
/// channel; the loop runs `run_forever` on the main thread until the pinger stops it.
fn threadsafe(n: usize) -> Result<(), Box<dyn Error>> {
    let lp = EventLoop::new()?;
    let remote = lp.remote();
    let pinger = std::thread::spawn(move || -> Result<Vec<f64>, String> {
        let (tx, rx) = std::sync::mpsc::channel::<()>();
        let mut rtts = Vec::with_capacity(n);
        let mut outcome = Ok(());
        for _ in 0..n {
            let sent = Instant::now();
            let tx = tx.clone();
            if let Err(e) = remote.call_soon_threadsafe(move || {
                let _ = tx.send(());
            }) {
                outcome = Err(format!("call_soon_threadsafe: {e}"));
                break;
            }
            if rx.recv().is_err() {
                outcome = Err("the loop dropped the reply".to_string());
                break;
            }
            rtts.push(sent.elapsed().as_secs_f64() * 1e6);
        }
        let _ = remote.stop();
        outcome.map(|()| rtts)
    });
    lp.run_forever()?;
    let rtts = pinger.join().map_err(|_| "the pinger thread panicked")??;
    print_rtts(rtts);
    Ok(())
}

fn idle_tasks(n: usize) -> Result<(), Box<dyn Error>> {
    let lp = EventLoop::new()?;
    // Each task's handle is kept (as a program that may await or cancel its tasks keeps them),
    // in a vector reserved up front so that its growth is not counted. One iteration runs each
    // task once.
    let mut handles = Vec::with_capacity(2 * n);
    measure_idle_tasks(n, |target| {
        for _ in 0..n {
            handles.push(lp.create_task(idle_task())?);
        }
        lp.run_once()?;
        check_idle_started(target)
    })
}

/// One spawned task: `evloop::time::sleep(TIMER_WAKE_DELAY)` N times.
fn timer_wake(n: usize) -> Result<(), Box<dyn Error>> {
    let lp = EventLoop::new()?;
    let started = Instant::now();
    lp.run_until_complete(async move {
        evloop::spawn(async move {
            for _ in 0..n {
                evloop::time::sleep(TIMER_WAKE_DELAY).await;
            }
        })
        .await
    })??;
    print_per_sec(n, started.elapsed().as_secs_f64());
    Ok(())
}

/// One spawned task parked N times, each time woken by another thread's `Waker::wake`.
fn thread_wake(n: usize) -> Result<(), Box<dyn Error>> {
    let lp = EventLoop::new()?;
    let wake = ThreadWake::default();
    let started = Instant::now();
    let waker = wake.start_waker_thread(n);
    lp.run_until_complete(async move {
        evloop::spawn(async move {
            for _ in 0..n {
                wake.parked().await;
            }
        })
        .await
    })??;
    waker.join().map_err(|_| "the waker thread panicked")?;
    print_per_sec(n, started.elapsed().as_secs_f64());
    Ok(())
}
