//! What the simulation tests share: running a program on a simulated kernel, and a mixed
//! workload that touches every transport the loop has (the protocol transport, asyncio streams,
//! `TcpStream`, UDP, timers, a cross-thread wake-up) and logs what it sees in the order it sees
//! it, so that two runs can be compared by their logs as well as by their traces.

#![cfg(feature = "simulation")]
#![allow(dead_code)] // sim_replay.rs uses part of it

use std::cell::RefCell;
use std::io;
use std::rc::Rc;
use std::time::Duration;

use evloop::io::{AsyncReadExt, AsyncWriteExt};
use evloop::net::{TcpListener, TcpStream, UdpSocket};
use evloop_syscalls::sim::{Config, Kernel, Tape};
use evloop_tests::net::{Echo, echo_stream};

/// What one run produced.
pub struct Run {
    pub seed: u64,
    pub log: Vec<String>,
    pub trace: String,
    pub digest: u64,
    pub records: u64,
    pub tape: Tape,
    pub kernel: Kernel,
}

/// Runs `program` on a new kernel (seed, config) on this thread, and collects the results.
pub fn on_kernel<T>(seed: u64, cfg: Config, program: impl FnOnce(&Kernel) -> T) -> (T, Kernel) {
    let kernel = Kernel::with_config(seed, cfg);
    let out = {
        let _on = kernel.enter();
        program(&kernel)
    };
    (out, kernel)
}

type Log = Rc<RefCell<Vec<String>>>;

/// A task's failure (a panic, a cancellation) as an `io::Error`.
fn task_err(e: impl std::fmt::Display) -> io::Error {
    io::Error::other(e.to_string())
}

fn push(log: &Log, s: impl Into<String>) {
    log.borrow_mut().push(s.into());
}

/// The mixed workload (see the module docs), run on the current loop-less thread.
pub fn mixed(kernel: &Kernel) -> Vec<String> {
    let log: Log = Rc::new(RefCell::new(Vec::new()));
    let l = log.clone();
    let k = kernel.clone();
    // Bounded in simulated time: under faults a connection may fail, and a task waiting for
    // it would otherwise wait forever (a stall).
    let result = evloop::run(evloop::time::timeout(Duration::from_secs(600), async move {
        mixed_body(&k, l).await
    }));
    match result {
        Err(e) => push(&log, format!("run: {e}")),
        Ok(Err(_)) => push(&log, "timed out"),
        Ok(Ok(Err(e))) => push(&log, format!("failed: {e}")),
        Ok(Ok(Ok(()))) => {}
    }
    log.borrow().clone()
}

async fn mixed_body(kernel: &Kernel, log: Log) -> io::Result<()> {
    let lp = evloop::event_loop::get_running_loop().map_err(io::Error::other)?;

    // A cross-thread wake-up: a simulated thread schedules a callback on the loop.
    let remote = lp.remote();
    let (tx, rx) = std::sync::mpsc::channel::<()>();
    let worker = kernel.spawn(move || {
        evloop::sys::sim::sleep(Duration::from_millis(3));
        let _ = remote.call_soon_threadsafe(move || {
            let _ = tx.send(());
        });
    });
    // The worker is joined however the rest ends: a simulated thread still running after the
    // program returned would race with whoever reads the trace.
    let result = transports(&lp, log, rx).await;
    let _ = worker.join();
    result
}

async fn transports(
    lp: &evloop::event_loop::LoopHandle,
    log: Log,
    rx: std::sync::mpsc::Receiver<()>,
) -> io::Result<()> {
    let start = lp.time();

    // Timers.
    let t = log.clone();
    lp.call_later(Duration::from_millis(2), move || push(&t, "timer 2ms"))
        .map_err(io::Error::other)?;
    let timers = evloop::spawn({
        let log = log.clone();
        async move {
            evloop::time::sleep(Duration::from_millis(5)).await;
            push(&log, "slept 5ms");
        }
    });

    // The protocol transport: an echo server, three asyncio-stream clients.
    let server = lp.create_server(Echo::new, "127.0.0.1", 0).await?;
    let port = server.local_addr().port();
    let mut clients = Vec::new();
    for i in 0..3 {
        let log = log.clone();
        clients.push(evloop::spawn(async move {
            let (r, w) = evloop::streams::open_connection("127.0.0.1", port).await?;
            for j in 0..3 {
                w.write(format!("client {i} line {j}\n").as_bytes());
                w.drain().await?;
                let line = r.readline().await.map_err(task_err)?;
                push(&log, String::from_utf8_lossy(&line).trim_end().to_string());
            }
            w.close();
            Ok::<_, io::Error>(())
        }));
    }

    // TcpStream: a task-based echo server and two clients moving 20 KB each.
    let listener = TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?;
    let echo = evloop::spawn(async move {
        let mut tasks = Vec::new();
        for _ in 0..2 {
            let (mut s, _) = listener.accept().await?;
            tasks.push(evloop::spawn(async move { echo_stream(&mut s).await }));
        }
        let mut total = 0;
        for t in tasks {
            total += t.await.map_err(task_err)??;
        }
        Ok::<u64, io::Error>(total)
    });
    let mut bulk = Vec::new();
    for i in 0..2u8 {
        let log = log.clone();
        bulk.push(evloop::spawn(async move {
            let mut c = TcpStream::connect(addr).await?;
            let data: Vec<u8> = (0..20_000u32).map(|n| (n as u8).wrapping_add(i)).collect();
            let (mut rd, mut wr) = c.split();
            let send = async {
                wr.write_all(&data).await?;
                wr.shutdown().await
            };
            let mut back = Vec::new();
            let recv = rd.read_to_end(&mut back);
            let (s, r) = evloop::join!(send, recv);
            s?;
            r?;
            push(
                &log,
                format!("bulk {i}: {} bytes back, intact: {}", back.len(), back == data),
            );
            Ok::<_, io::Error>(())
        }));
    }

    // UDP both ways.
    let a = UdpSocket::bind("127.0.0.1:0").await?;
    let b = UdpSocket::bind("127.0.0.1:0").await?;
    let (aa, ba) = (a.local_addr()?, b.local_addr()?);
    for n in 0..4u8 {
        a.send_to(&[b'a', n], ba).await?;
        b.send_to(&[b'b', n], aa).await?;
    }
    let mut got = Vec::new();
    let mut buf = [0u8; 8];
    // A datagram may be lost (a fault): wait for each one a simulated second at most.
    for _ in 0..4 {
        for sock in [&b, &a] {
            match evloop::time::timeout(Duration::from_secs(1), sock.recv_from(&mut buf)).await {
                Ok(r) => {
                    let (n, _) = r?;
                    got.push(format!("{}{}", buf[0] as char, buf[n - 1]));
                }
                Err(_) => got.push("lost".to_string()),
            }
        }
    }
    push(&log, format!("udp {}", got.join(" ")));

    for c in clients {
        if let Err(e) = bounded(c).await {
            push(&log, format!("client: {e}"));
        }
    }
    for b in bulk {
        if let Err(e) = bounded(b).await {
            push(&log, format!("bulk: {e}"));
        }
    }
    match bounded(echo).await {
        Ok(total) => push(&log, format!("echoed {total} bytes")),
        Err(e) => push(&log, format!("echo server: {e}")),
    }
    timers.await.map_err(task_err)?;
    // The remote callback has run by now, or runs during this wait (the loop polls).
    let mut waited = 0;
    while rx.try_recv().is_err() && waited < 1000 {
        evloop::time::sleep(Duration::from_millis(1)).await;
        waited += 1;
    }
    push(
        &log,
        if waited < 1000 {
            "remote wake-up arrived"
        } else {
            "remote wake-up lost"
        },
    );
    server.close();
    push(&log, format!("took {:?} of loop time", lp.time() - start));
    Ok(())
}

/// A task's result within a minute of simulated time (a fault may leave it waiting forever
/// for a connection that will never come).
async fn bounded<T: 'static>(task: evloop::task::Task<io::Result<T>>) -> io::Result<T> {
    match evloop::time::timeout(Duration::from_secs(60), task).await {
        Ok(r) => r.map_err(task_err)?,
        Err(_) => Err(io::Error::new(io::ErrorKind::TimedOut, "no answer within a minute")),
    }
}

/// A `TcpStream` echo server for one connection on a free loopback port: its address, and the
/// task that ends with the number of bytes it echoed.
pub async fn one_echo_server() -> io::Result<(std::net::SocketAddr, evloop::task::Task<io::Result<u64>>)> {
    let listener = TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?;
    let task = evloop::spawn(async move {
        let (mut s, _) = listener.accept().await?;
        echo_stream(&mut s).await
    });
    Ok((addr, task))
}

/// One run of the mixed workload.
pub fn run_mixed(seed: u64, cfg: Config) -> Run {
    let (log, kernel) = on_kernel(seed, cfg, mixed);
    Run {
        seed,
        log,
        trace: kernel.trace(),
        digest: kernel.digest(),
        records: kernel.records(),
        tape: kernel.tape(),
        kernel,
    }
}

/// A program with an ordering bug: it assumes the client that connects first is heard first
/// (`sim_attribute.rs` finds the bug, `sim_replay.rs` replays a failing seed of it).
pub async fn first_come_first_heard() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let heard = Rc::new(RefCell::new(Vec::new()));
    let h = heard.clone();
    let server = evloop::spawn(async move {
        let mut tasks = Vec::new();
        for _ in 0..2 {
            let (mut s, _) = listener.accept().await.unwrap();
            let h = h.clone();
            tasks.push(evloop::spawn(async move {
                let mut b = [0u8; 1];
                s.read_exact(&mut b).await.unwrap();
                h.borrow_mut().push(b[0]);
            }));
        }
        for t in tasks {
            t.await.unwrap();
        }
    });
    let mut a = TcpStream::connect(addr).await.unwrap();
    let mut b = TcpStream::connect(addr).await.unwrap();
    b.write_all(b"b").await.unwrap();
    a.write_all(b"a").await.unwrap();
    server.await.unwrap();
    assert_eq!(
        *heard.borrow(),
        b"ab",
        "the messages arrived in the order {:?}",
        heard.borrow()
    );
}
