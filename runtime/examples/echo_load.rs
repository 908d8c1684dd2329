//! A load client for the seed 001 echo servers (`seed001_echo_*`), running on evloop itself.
//!
//! `--addr HOST:PORT` (required), `--conns C` (50), `--size M` (64), `--seconds D` (3): C
//! connections, each a task that sends a request of M bytes (lower-case letters and a final
//! newline, so the line servers answer it) and waits for the M-byte reply, over and over for D
//! seconds. Every reply must be the request upper-cased (the seed 001 servers), or with `--plain`
//! equal to the request (plain echo servers: the benchmark peers). Prints the round trips per
//! second and the p50 / p99 round-trip latency, and exits with status 1 if any connection failed.
//! `--json` prints instead one JSON line,
//! `{"round_trips":N,"per_sec":R,"p50_us":A,"p99_us":B}`, for `make bench` to read.
//!
//! `--pipeline P` (1) sends P requests in one write and waits for the P replies: a round counts
//! as P round trips (requests), so servers are compared per request.
//!
//! `--round-trips N` makes the work exact instead of timed: each connection does N rounds and
//! stops (N x C rounds in all; a run longer than two minutes fails). Two runs that differ only
//! in N give a server exactly the same connections, set-up and teardown, so the difference of
//! what it spent (instructions under callgrind: `make bench-instr`) is the cost of the extra
//! round trips alone.
//!
//! `--lines N` instead sends N short lines on one connection and prints each reply.
//!
//! Before connecting, the client raises its own `RLIMIT_NOFILE` soft limit toward the hard limit
//! when `--conns` needs more descriptors than the soft limit allows.
//!
//! ```text
//! cargo run --release -p evloop --example echo_load -- --addr 127.0.0.1:8888 --conns 50
//! ```

use std::error::Error;
use std::io;
use std::net::SocketAddr;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use evloop::io::{AsyncReadExt, AsyncWriteExt};
use evloop::net::TcpStream;

struct Args {
    addr: SocketAddr,
    conns: usize,
    size: usize,
    seconds: Duration,
    /// Rounds per connection, instead of running for `seconds`.
    round_trips: Option<u64>,
    lines: Option<usize>,
    /// Requests per write.
    pipeline: usize,
    /// The reply must equal the request (a plain echo server), not its upper-cased form.
    plain: bool,
    /// Print one JSON line instead of the sentence.
    json: bool,
}

/// `size` bytes: `abc...` and a newline at the end.
fn request(size: usize) -> Vec<u8> {
    (0..size)
        .map(|i| if i + 1 == size { b'\n' } else { b'a' + (i % 26) as u8 })
        .collect()
}

fn bad_reply(sent: &[u8], got: &[u8]) -> io::Error {
    let (sent, got) = (String::from_utf8_lossy(sent), String::from_utf8_lossy(got));
    io::Error::new(io::ErrorKind::InvalidData, format!("sent {sent:?}, got {got:?}"))
}

/// When a connection's ping-pong ends.
#[derive(Clone, Copy)]
enum Stop {
    At(Instant),
    After(u64),
}

/// One connection's ping-pong until `stop`; returns each round trip's duration in ns (one entry
/// per request: `pipeline` requests leave in one write and share a round's duration).
async fn ping_pong(mut conn: TcpStream, size: usize, pipeline: usize, stop: Stop, plain: bool) -> io::Result<Vec<u32>> {
    let req = request(size).repeat(pipeline);
    let want = if plain { req.clone() } else { req.to_ascii_uppercase() };
    let mut reply = vec![0; req.len()];
    let mut rtts = match stop {
        Stop::After(rounds) => Vec::with_capacity(usize::try_from(rounds).unwrap_or(0).saturating_mul(pipeline)),
        Stop::At(_) => Vec::with_capacity(1 << 16),
    };
    let mut started = Instant::now();
    let mut rounds = 0u64;
    loop {
        conn.write_all(&req).await?; // one send(2) for a small request
        conn.read_exact(&mut reply).await?; // recv(2), parking on EAGAIN until the reply's edge
        if reply != want {
            return Err(bad_reply(&req, &reply));
        }
        let now = Instant::now(); // one clock read per round trip: this end is the next start
        let rtt = u32::try_from((now - started).as_nanos()).unwrap_or(u32::MAX);
        rtts.extend(std::iter::repeat_n(rtt, pipeline));
        started = now;
        rounds += 1;
        let done = match stop {
            Stop::At(until) => now >= until,
            Stop::After(n) => rounds >= n,
        };
        if done {
            return Ok(rtts);
        }
    }
}

/// Raises the soft `RLIMIT_NOFILE` toward the hard limit when `conns` connections (plus a few
/// descriptors for the loop itself) do not fit under it. Best effort: a limit that cannot be raised
/// shows up as the connect error that follows.
fn raise_nofile_limit(conns: usize) {
    let need = conns as u64 + 64;
    if let Ok((soft, hard)) = evloop_syscalls::nofile_limit() {
        if soft < need {
            let _ = evloop_syscalls::set_nofile_limit(need.min(hard), hard);
        }
    }
}

async fn load(a: &Args) -> Result<(), Box<dyn Error>> {
    // Connect everyone first, so the clock measures echoing, not connecting.
    let mut conns = Vec::with_capacity(a.conns);
    for i in 0..a.conns {
        let conn = TcpStream::connect(a.addr).await;
        conns.push(conn.map_err(|e| format!("connection {i}: {e}"))?);
    }
    let start = Instant::now();
    // A server that stops answering fails the run.
    let (stop, limit) = match a.round_trips {
        Some(n) => (Stop::After(n), Duration::from_secs(120)),
        None => (Stop::At(start + a.seconds), a.seconds + Duration::from_secs(5)),
    };
    let tasks: Vec<_> = conns
        .into_iter()
        .map(|c| {
            evloop::spawn(evloop::time::timeout(
                limit,
                ping_pong(c, a.size, a.pipeline, stop, a.plain),
            ))
        })
        .collect();
    let (mut rtts, mut failed) = (Vec::new(), 0);
    for (i, task) in tasks.into_iter().enumerate() {
        let error = match task.await {
            Ok(Ok(Ok(mine))) => {
                rtts.extend(mine);
                continue;
            }
            Ok(Ok(Err(e))) => e.to_string(),
            Ok(Err(e)) => format!("the server stopped answering: {e}"),
            Err(e) => e.to_string(),
        };
        eprintln!("connection {i}: {error}");
        failed += 1;
    }
    let elapsed = start.elapsed().as_secs_f64();
    rtts.sort_unstable();
    let pct = |p: usize| {
        rtts.get((rtts.len() * p / 100).min(rtts.len().saturating_sub(1)))
            .copied()
    };
    let us = |ns: Option<u32>| ns.map_or("-".to_string(), |ns| format!("{:.1}", f64::from(ns) / 1e3));
    if a.json {
        let json_us = |ns: Option<u32>| ns.map_or("null".to_string(), |ns| format!("{:.3}", f64::from(ns) / 1e3));
        println!(
            "{{\"round_trips\":{},\"per_sec\":{:.1},\"p50_us\":{},\"p99_us\":{}}}",
            rtts.len(),
            rtts.len() as f64 / elapsed,
            json_us(pct(50)),
            json_us(pct(99)),
        );
    } else {
        println!(
            "{}: {} connections x {} B for {elapsed:.2} s: {} round trips, {:.0} round trips/s, latency p50 {} us, p99 {} us",
            a.addr,
            a.conns,
            a.size,
            rtts.len(),
            rtts.len() as f64 / elapsed,
            us(pct(50)),
            us(pct(99)),
        );
    }
    if failed > 0 {
        return Err(format!("{failed} of {} connections failed", a.conns).into());
    }
    Ok(())
}

async fn lines(a: &Args, n: usize) -> Result<(), Box<dyn Error>> {
    let mut conn = TcpStream::connect(a.addr).await?;
    // Let the server accept and start reading before the first line arrives, so that what it
    // does (a trace, its system-call counts) is the same from run to run.
    evloop::time::sleep(Duration::from_millis(50)).await;
    for i in 1..=n {
        let line = format!("hello from evloop, line {i} of {n}\n");
        conn.write_all(line.as_bytes()).await?;
        let mut reply = vec![0; line.len()];
        conn.read_exact(&mut reply).await?;
        print!("sent {line}got  {}", String::from_utf8_lossy(&reply));
        let want = if a.plain {
            line.clone()
        } else {
            line.to_ascii_uppercase()
        };
        if reply != want.as_bytes() {
            return Err(bad_reply(line.as_bytes(), &reply).into());
        }
    }
    Ok(())
}

fn args() -> Result<Args, String> {
    let mut a = Args {
        addr: SocketAddr::from(([127, 0, 0, 1], 0)),
        conns: 50,
        size: 64,
        seconds: Duration::from_secs(3),
        round_trips: None,
        lines: None,
        pipeline: 1,
        plain: false,
        json: false,
    };
    let mut it = std::env::args().skip(1);
    while let Some(name) = it.next() {
        match name.as_str() {
            "--plain" => {
                a.plain = true;
                continue;
            }
            "--json" => {
                a.json = true;
                continue;
            }
            _ => {}
        }
        let value = it.next().ok_or(format!("{name} needs a value"))?;
        let bad = |e: &dyn std::fmt::Display| format!("{name} {value}: {e}");
        match name.as_str() {
            "--addr" => a.addr = value.parse().map_err(|e| bad(&e))?,
            "--conns" => a.conns = value.parse().map_err(|e| bad(&e))?,
            "--size" => a.size = value.parse().map_err(|e| bad(&e))?,
            "--seconds" => {
                let s: f64 = value.parse().map_err(|e| bad(&e))?;
                a.seconds = Duration::try_from_secs_f64(s).map_err(|e| bad(&e))?;
            }
            "--round-trips" => a.round_trips = Some(value.parse().map_err(|e| bad(&e))?),
            "--lines" => a.lines = Some(value.parse().map_err(|e| bad(&e))?),
            "--pipeline" => a.pipeline = value.parse().map_err(|e| bad(&e))?,
            _ => return Err(format!("unknown argument {name}")),
        }
    }
    if a.addr.port() == 0 || a.conns == 0 || a.size == 0 || a.pipeline == 0 || a.round_trips == Some(0) {
        return Err("need --addr HOST:PORT, and --conns, --size, --pipeline and --round-trips of at least 1".into());
    }
    Ok(a)
}

fn main() -> ExitCode {
    let usage = "usage: echo_load --addr HOST:PORT [--conns C] [--size M] [--seconds D | --round-trips N] [--pipeline P] [--lines N] [--plain] [--json]";
    let a = match args() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("echo_load: {e}\n{usage}");
            return ExitCode::from(2);
        }
    };
    if a.lines.is_none() {
        raise_nofile_limit(a.conns);
    }
    let outcome = evloop::run(async move {
        match a.lines {
            Some(n) => lines(&a, n).await,
            None => load(&a).await,
        }
    });
    match outcome {
        Ok(Ok(())) => ExitCode::SUCCESS,
        Ok(Err(e)) => {
            eprintln!("echo_load: {e}");
            ExitCode::FAILURE
        }
        Err(e) => {
            eprintln!("echo_load: {e}");
            ExitCode::FAILURE
        }
    }
}
