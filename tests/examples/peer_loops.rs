//! The multi-loop benchmarks' servers and imbalance probe (issue 20, `make bench`'s "loops"
//! section, tests/examples/bench/loops.rs):
//!
//! ```text
//! peer_loops evloop N POLICY ADDR     # evloop::runtime, N loops, reuseport|cpu|least
//! peer_loops tokio-mt N ADDR          # tokio's multi-thread runtime, N workers
//! peer_loops tokio-ct N ADDR          # N tokio current-thread runtimes on SO_REUSEPORT
//! peer_loops imbalance N POLICY CONNS # evloop: CONNS short connections, per-loop counts
//! peer_loops calibrate                # the work's block count (EVLOOP_WORK_BLOCKS)
//! ```
//!
//! Every server runs the same CPU-bound HTTP/1.1 keep-alive handler: read a request head, do
//! about 200 us of CPU work (a fixed count of arithmetic blocks, calibrated at start-up), answer `200 OK` with a two-byte body; each prints
//! `listening on ADDR` once it accepts.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::os::fd::AsFd;
use std::time::{Duration, Instant};

/// The work each request costs the server.
const WORK: Duration = Duration::from_micros(200);
const RESPONSE: &[u8] = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Type: text/plain\r\n\r\nok";

/// One block of the work: 64 dependent multiply-adds.
#[inline(never)]
fn block(x: u64) -> u64 {
    let mut x = x;
    for i in 0..64u64 {
        x = std::hint::black_box(x.wrapping_mul(6364136223846793005).wrapping_add(i));
    }
    x
}

/// How many blocks make `WORK` of CPU time, measured once: the fastest of 30 timed batches, so
/// that a batch cut by preemption (other load on the machine) does not count. A fixed count of
/// blocks, unlike spinning until the wall clock says 200 us, costs the same CPU whether or not
/// the thread is preempted meanwhile: under load, a wall-clock spin would do less work per
/// request for whichever server happens to be preempted more.
///
/// `EVLOOP_WORK_BLOCKS=N` in the environment skips the measurement: the bench measures once
/// (`peer_loops calibrate`) and gives every server the same count, so that each does the same
/// work per request. Calibrated in each process, the count varied from one start to the next
/// with what else ran meanwhile, and so did each server's CPU per request.
fn blocks_per_request() -> u64 {
    static BLOCKS: std::sync::OnceLock<u64> = std::sync::OnceLock::new();
    *BLOCKS.get_or_init(|| {
        if let Some(n) = std::env::var("EVLOOP_WORK_BLOCKS").ok().and_then(|v| v.parse().ok()) {
            return n;
        }
        const BATCH: u64 = 2_000;
        let mut best = Duration::MAX;
        let mut x = 1u64;
        for _ in 0..30 {
            let start = Instant::now();
            for _ in 0..BATCH {
                x = block(x);
            }
            best = best.min(start.elapsed());
        }
        std::hint::black_box(x);
        let per_block = best.as_nanos().max(1) as f64 / BATCH as f64;
        ((WORK.as_nanos() as f64 / per_block) as u64).max(1)
    })
}

/// About 200 us of CPU: the server's work per request.
fn work() {
    let mut x = 0u64;
    for _ in 0..blocks_per_request() {
        x = block(x);
    }
    std::hint::black_box(x);
}

/// Where a request head ends in `buf`, if it does.
fn head_end(buf: &[u8]) -> Option<usize> {
    buf.windows(4).position(|w| w == b"\r\n\r\n").map(|i| i + 4)
}

/// Does the work of every complete request in `buf` and puts their responses in `out` (cleared
/// first): a pipelined batch, all the requests one read brought, is answered with one write
/// after every request's work, as HTTP/1.1 servers do (the responses keep the requests' order).
fn answer(buf: &mut Vec<u8>, out: &mut Vec<u8>) {
    out.clear();
    let mut done = 0;
    while let Some(end) = head_end(&buf[done..]) {
        done += end;
        work();
        out.extend_from_slice(RESPONSE);
    }
    buf.drain(..done);
}

async fn evloop_conn(mut conn: evloop::net::TcpStream) {
    use evloop::io::{AsyncReadExt, AsyncWriteExt};
    let _ = conn.set_nodelay(true);
    let mut buf = Vec::with_capacity(4096);
    let mut out = Vec::with_capacity(4 * RESPONSE.len());
    let mut chunk = [0u8; 4096];
    loop {
        answer(&mut buf, &mut out);
        if !out.is_empty() && conn.write_all(&out).await.is_err() {
            return;
        }
        match conn.read(&mut chunk).await {
            Ok(0) | Err(_) => return,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
        }
    }
}

async fn tokio_conn(mut conn: tokio::net::TcpStream) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let _ = conn.set_nodelay(true);
    let mut buf = Vec::with_capacity(4096);
    let mut out = Vec::with_capacity(4 * RESPONSE.len());
    let mut chunk = [0u8; 4096];
    loop {
        answer(&mut buf, &mut out);
        if !out.is_empty() && conn.write_all(&out).await.is_err() {
            return;
        }
        match conn.read(&mut chunk).await {
            Ok(0) | Err(_) => return,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
        }
    }
}

fn policy(name: &str) -> evloop::runtime::Policy {
    use evloop::runtime::Policy;
    match name {
        "reuseport" => Policy::ReusePort,
        "cpu" => Policy::ReusePortCpu,
        "least" => Policy::LeastConnections,
        other => panic!("unknown policy {other}: reuseport, cpu or least"),
    }
}

fn evloop_server(loops: usize, pol: &str, addr: SocketAddr) {
    use evloop::runtime::{Builder, TcpListeners};
    let p = policy(pol);
    let rt = Builder::new()
        .loops(loops)
        .pin_to_cpus(p == evloop::runtime::Policy::ReusePortCpu)
        .shutdown_on_signals(true)
        .build()
        .expect("runtime");
    let l = TcpListeners::bind(rt.handle(), addr, p).expect("bind");
    println!("listening on {}", l.local_addr());
    rt.spawn_on_each(move |_| {
        let l = l.clone();
        async move { l.serve(|conn, _| evloop_conn(conn)).await }
    });
    rt.wait().expect("runtime");
}

fn tokio_mt_server(workers: usize, addr: SocketAddr) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(workers)
        .enable_all()
        .build()
        .expect("tokio");
    rt.block_on(async {
        let listener = tokio::net::TcpListener::bind(addr).await.expect("bind");
        println!("listening on {}", listener.local_addr().unwrap());
        loop {
            if let Ok((conn, _)) = listener.accept().await {
                tokio::spawn(tokio_conn(conn));
            }
        }
    });
}

/// A `SO_REUSEPORT` listener of the group on `addr`.
fn reuseport_listener(addr: SocketAddr) -> std::net::TcpListener {
    use evloop_syscalls as sys;
    let fd = sys::socket(sys::Domain::Inet, sys::SockType::Stream).expect("socket");
    sys::set_reuseaddr(fd.as_fd(), true).unwrap();
    sys::set_reuseport(fd.as_fd(), true).unwrap();
    sys::bind(fd.as_fd(), &sys::SockAddr::Inet(addr)).expect("bind");
    sys::listen(fd.as_fd(), 1024).expect("listen");
    std::net::TcpListener::from(fd)
}

fn tokio_ct_servers(n: usize, addr: SocketAddr) {
    let first = reuseport_listener(addr);
    let addr = first.local_addr().unwrap();
    let mut listeners = vec![first];
    for _ in 1..n {
        listeners.push(reuseport_listener(addr));
    }
    println!("listening on {addr}");
    let threads: Vec<_> = listeners
        .into_iter()
        .map(|l| {
            std::thread::spawn(move || {
                let rt = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .unwrap();
                rt.block_on(async move {
                    let listener = tokio::net::TcpListener::from_std(l).unwrap();
                    loop {
                        if let Ok((conn, _)) = listener.accept().await {
                            tokio::spawn(tokio_conn(conn));
                        }
                    }
                });
            })
        })
        .collect();
    for t in threads {
        let _ = t.join();
    }
}

/// `conns` short connections (connect, one byte each way, close) from 4 client threads;
/// prints one line: policy, accepted per loop, busy per loop, both imbalances.
fn imbalance(loops: usize, pol: &str, conns: usize) {
    use evloop::io::{AsyncReadExt, AsyncWriteExt};
    use evloop::runtime::{Builder, TcpListeners};
    let p = policy(pol);
    let rt = Builder::new()
        .loops(loops)
        .pin_to_cpus(p == evloop::runtime::Policy::ReusePortCpu)
        .build()
        .expect("runtime");
    let l = TcpListeners::bind(rt.handle(), "127.0.0.1:0".parse().unwrap(), p).expect("bind");
    let addr = l.local_addr();
    rt.spawn_on_each(move |_| {
        let l = l.clone();
        async move {
            l.serve(|mut c, _| async move {
                let mut b = [0; 1];
                if c.read_exact(&mut b).await.is_ok() {
                    work(); // each connection costs the same work, so busy time follows the spread
                    let _ = c.write_all(&b).await;
                }
            })
            .await
        }
    });
    let clients: Vec<_> = (0..4)
        .map(|c| {
            std::thread::spawn(move || {
                for _ in (c..conns).step_by(4) {
                    let mut s = TcpStream::connect(addr).expect("connect");
                    s.write_all(b"x").unwrap();
                    let mut b = [0; 1];
                    s.read_exact(&mut b).unwrap();
                }
            })
        })
        .collect();
    for c in clients {
        c.join().unwrap();
    }
    let stats = rt.handle().stats();
    let cpu = loop_cpu_ns(loops);
    rt.shutdown().expect("runtime");
    let accepted: Vec<u64> = stats.loops().iter().map(|l| l.accepted).collect();
    let busy: Vec<String> = stats
        .loops()
        .iter()
        .map(|l| format!("{:.0}", l.busy.as_secs_f64() * 1e3))
        .collect();
    let (lo, hi) = (
        cpu.iter().min().copied().unwrap_or(0),
        cpu.iter().max().copied().unwrap_or(0),
    );
    println!(
        "policy={pol} accepted={} busy_ms={} cpu_ms={} accepted_imbalance={:.3} busy_imbalance={:.3} cpu_imbalance={:.3}",
        accepted.iter().map(u64::to_string).collect::<Vec<_>>().join(","),
        busy.join(","),
        cpu.iter()
            .map(|ns| format!("{:.0}", *ns as f64 / 1e6))
            .collect::<Vec<_>>()
            .join(","),
        stats.accepted_imbalance().unwrap_or(f64::INFINITY),
        stats.busy_imbalance().unwrap_or(f64::INFINITY),
        if lo > 0 { hi as f64 / lo as f64 } else { f64::INFINITY },
    );
}

/// Each loop thread's CPU time so far (ns, from `/proc/self/task/TID/schedstat`), by loop index
/// (threads named `evloop-loop-N`). Unlike the loop's busy time (wall time of its iterations
/// less the poll's wait), it does not grow while the thread is preempted: on a machine shared
/// with other work it is the steadier measure of where the work went.
fn loop_cpu_ns(loops: usize) -> Vec<u64> {
    let mut cpu = vec![0u64; loops];
    for entry in std::fs::read_dir("/proc/self/task").into_iter().flatten().flatten() {
        let comm = std::fs::read_to_string(entry.path().join("comm")).unwrap_or_default();
        let Some(i) = comm
            .trim()
            .strip_prefix("evloop-loop-")
            .and_then(|i| i.parse::<usize>().ok())
        else {
            continue;
        };
        let stat = std::fs::read_to_string(entry.path().join("schedstat")).unwrap_or_default();
        if let (Some(slot), Some(ns)) = (
            cpu.get_mut(i),
            stat.split_whitespace().next().and_then(|v| v.parse().ok()),
        ) {
            *slot = ns;
        }
    }
    cpu
}

fn main() {
    // Calibrated before any server thread starts (a few milliseconds).
    let _ = blocks_per_request();
    let args: Vec<String> = std::env::args().skip(1).collect();
    let arg = |i: usize| args.get(i).map(String::as_str).unwrap_or_default();
    let addr = |i: usize| -> SocketAddr { args.get(i).map_or("127.0.0.1:0", String::as_str).parse().expect("addr") };
    let n: usize = arg(1).parse().unwrap_or(2);
    match arg(0) {
        "evloop" => evloop_server(n, arg(2), addr(3)),
        "tokio-mt" => tokio_mt_server(n, addr(2)),
        "tokio-ct" => tokio_ct_servers(n, addr(2)),
        "imbalance" => imbalance(n, arg(2), arg(3).parse().unwrap_or(10_000)),
        "calibrate" => println!("{}", blocks_per_request()),
        _ => eprintln!(
            "usage: peer_loops evloop N POLICY ADDR | tokio-mt N ADDR | tokio-ct N ADDR | imbalance N POLICY CONNS | calibrate"
        ),
    }
}
