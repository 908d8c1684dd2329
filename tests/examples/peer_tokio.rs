//! Benchmark peer: tokio 1.x on a `current_thread` runtime, for `make bench`'s side-by-side runs
//! (tests/examples/bench.rs drives it; the interface is in tests/bench/README.md, the same for
//! every peer).
//!
//! ```text
//! cargo build --release -p evloop-tests --no-default-features --examples
//! target/release/examples/peer_tokio echo --port 0
//! target/release/examples/peer_tokio timers --tasks 100000 --spread-ms 100
//! target/release/examples/peer_tokio spawn --n 1000000     # also promise_chain, threadsafe,
//! target/release/examples/peer_tokio idle_tasks --n 100000 # call_soon (n/a)
//! ```
//!
//! One thread: `Builder::new_current_thread().enable_all()`, tasks with `tokio::spawn`.
//! Echo: `TcpListener`, a task per connection, `read` into its own 64 KiB buffer + `write_all`.
//!
//! Known unfairness: tokio's timer wheel is 1 ms-granular and rounds deadlines up to the next
//! millisecond tick (tokio #970, #1566), so timer lateness is ~0.5-1 ms by construction. tokio
//! has no `call_soon` (reported as n/a). promise_chain uses `tokio::sync::oneshot` set from a
//! spawned task, one task per round, where evloop and asyncio set the promise from a plain
//! callback. threadsafe uses `Handle::spawn` of a trivial task from the other thread (the
//! runtime's inject queue + its eventfd waker). tokio's cooperative budget and its LIFO slot do
//! not apply to a current_thread runtime the same way as to the multi-thread one.

use std::error::Error;
use std::process::ExitCode;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::runtime::Runtime;

const READ_SIZE: usize = 64 * 1024;

fn main() -> ExitCode {
    peer_main("peer_tokio", &["default"], |cmd| match cmd {
        Cmd::Echo { port, .. } => echo(port),
        Cmd::Timers { tasks, spread_ms } => timers(tasks, spread_ms),
        Cmd::Spawn { n } => spawn(n),
        Cmd::CallSoon { .. } => {
            println!("{{\"na\":\"no call_soon in tokio\"}}");
            Ok(())
        }
        Cmd::PromiseChain { n } => promise_chain(n),
        Cmd::Threadsafe { n } => threadsafe(n),
        Cmd::IdleTasks { n } => idle_tasks(n),
    })
}

fn runtime() -> std::io::Result<Runtime> {
    tokio::runtime::Builder::new_current_thread().enable_all().build()
}

// ---------------------------------------------------------------------------------------------
// echo

async fn echo_conn(mut conn: TcpStream) {
    let mut buf = vec![0u8; READ_SIZE];
    loop {
        let n = match conn.read(&mut buf).await {
            Ok(0) | Err(_) => return,
            Ok(n) => n,
        };
        if conn.write_all(&buf[..n]).await.is_err() {
            return;
        }
    }
}

fn echo(port: u16) -> Result<(), Box<dyn Error>> {
    exit_at_stdin_eof();
    runtime()?.block_on(async move {
        let listener = TcpListener::bind(("127.0.0.1", port)).await?;
        announce(listener.local_addr()?)?;
        loop {
            let conn = match listener.accept().await {
                Ok((conn, _peer)) => conn,
                Err(e) => {
                    eprintln!("accept: {e}; retrying in 100 ms");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    continue;
                }
            };
            let _ = conn.set_nodelay(true);
            tokio::spawn(echo_conn(conn));
        }
    })
}

// ---------------------------------------------------------------------------------------------
// timers, spawn, promise_chain, threadsafe, idle_tasks

fn timers(tasks: usize, spread_ms: u64) -> Result<(), Box<dyn Error>> {
    let rt = runtime()?;
    let (cpu0, wall0) = (cpu_seconds(), Instant::now());
    let late = rt.block_on(async move {
        let mut delays = Delays::new(spread_ms);
        let sleepers: Vec<_> = (0..tasks)
            .map(|_| {
                let delay = delays.next_delay();
                tokio::spawn(async move {
                    // What `tokio::time::sleep(delay)` does, with the deadline kept.
                    let deadline = tokio::time::Instant::now() + delay; // the runtime's clock
                    tokio::time::sleep_until(deadline).await;
                    lateness_ms(Instant::now(), deadline.into_std())
                })
            })
            .collect();
        let mut late = Vec::with_capacity(tasks);
        for s in sleepers {
            late.push(s.await?);
        }
        Ok::<_, tokio::task::JoinError>(late)
    })?;
    let (cpu_s, wall_s) = (cpu_seconds() - cpu0, wall0.elapsed().as_secs_f64());
    print_timers(late, cpu_s, wall_s);
    Ok(())
}

fn spawn(n: usize) -> Result<(), Box<dyn Error>> {
    let rt = runtime()?;
    let started = Instant::now();
    let sum = rt.block_on(async move {
        let tasks: Vec<_> = (0..n).map(|i| tokio::spawn(async move { i })).collect();
        let mut sum = 0usize;
        for t in tasks {
            sum += t.await?;
        }
        Ok::<_, tokio::task::JoinError>(sum)
    })?;
    let ms = started.elapsed().as_secs_f64() * 1e3;
    if sum != n * (n - 1) / 2 {
        return Err(format!("spawn: sum {sum}, expected {}", n * (n - 1) / 2).into());
    }
    println!("{{\"ms\":{ms:.3}}}");
    Ok(())
}

/// `tokio::sync::oneshot::channel`, the sender used by a spawned task, the receiver awaited.
fn promise_chain(n: usize) -> Result<(), Box<dyn Error>> {
    let rt = runtime()?;
    let started = Instant::now();
    rt.block_on(async move {
        for i in 0..n {
            let (tx, rx) = tokio::sync::oneshot::channel::<usize>();
            tokio::spawn(async move {
                let _ = tx.send(i);
            });
            let got = rx.await?;
            if got != i {
                return Err(format!("promise_chain: got {got}, expected {i}").into());
            }
        }
        Ok::<(), Box<dyn Error>>(())
    })?;
    println!("{{\"per_sec\":{:.0}}}", n as f64 / started.elapsed().as_secs_f64());
    Ok(())
}

/// Another thread: `Handle::spawn` of a task that replies on a std channel. The main thread sits
/// in `block_on` (which drives the runtime) until the pinger says it is done.
fn threadsafe(n: usize) -> Result<(), Box<dyn Error>> {
    let rt = runtime()?;
    let handle = rt.handle().clone();
    let (done_tx, done_rx) = tokio::sync::oneshot::channel::<()>();
    let pinger = std::thread::spawn(move || -> Result<Vec<f64>, String> {
        let (tx, rx) = std::sync::mpsc::channel::<()>();
        let mut rtts = Vec::with_capacity(n);
        let mut outcome = Ok(());
        for _ in 0..n {
            let sent = Instant::now();
            let tx = tx.clone();
            drop(handle.spawn(async move {
                let _ = tx.send(());
            }));
            if rx.recv().is_err() {
                outcome = Err("the runtime dropped the reply".to_string());
                break;
            }
            rtts.push(sent.elapsed().as_secs_f64() * 1e6);
        }
        let _ = done_tx.send(());
        outcome.map(|()| rtts)
    });
    let _ = rt.block_on(done_rx);
    let rtts = pinger.join().map_err(|_| "the pinger thread panicked")??;
    print_rtts(rtts);
    Ok(())
}

fn idle_tasks(n: usize) -> Result<(), Box<dyn Error>> {
    let rt = runtime()?;
    let future_bytes = std::mem::size_of_val(&idle_task());
    // A warm-up batch, then the measured one. Join handles are dropped: the runtime alone holds
    // the tasks. `yield_now` until every task has run once (and parked).
    let batch = |target: usize| {
        rt.block_on(async move {
            for _ in 0..n {
                drop(tokio::spawn(idle_task()));
            }
            while STARTED.load(Ordering::Relaxed) < target {
                tokio::task::yield_now().await;
            }
        })
    };
    batch(n);
    let before = status_kib("VmRSS");
    batch(2 * n);
    let after = status_kib("VmRSS");
    print_idle(before, after, n, future_bytes);
    // Dropping 2N parked tasks takes time and proves nothing here.
    std::process::exit(0)
}

// ---------------------------------------------------------------------------------------------
// Shared by every Rust peer (the same text in peer_evloop.rs, peer_tokio.rs and peer_smol.rs, so
// that each stays one self-contained example; peer_raw.rs has the command-line half): the command
// line, then the clocks and counters read from /proc, the fixed-seed delays, and the JSON lines.

/// What `main` was asked to do.
#[allow(dead_code)] // not every peer reads every field (no variants, no call_soon)
enum Cmd {
    Echo { variant: Option<String>, port: u16 },
    Timers { tasks: usize, spread_ms: u64 },
    Spawn { n: usize },
    CallSoon { n: usize },
    PromiseChain { n: usize },
    Threadsafe { n: usize },
    IdleTasks { n: usize },
}

const USAGE: &str = "subcommands (one thread each):
  echo [--variant V] [--port P]          TCP echo server on 127.0.0.1:P (0: any free port)
  timers [--tasks N] [--spread-ms S]     N tasks sleeping a random [0, S) ms (100000, 100)
  spawn [--n N]                          spawn + run + join N trivial tasks (1000000)
  call_soon [--n N]                      N call_soon callbacks (1000000)
  promise_chain [--n N]                  N create/set/await rounds of a one-shot future (1000000)
  threadsafe [--n N]                     N round trips from another thread into the loop (10000)
  idle_tasks [--n N]                     RSS per parked task, second batch of N (100000)";

fn parse_args(args: &[String], variants: &[&str]) -> Result<Cmd, String> {
    let Some((sub, rest)) = args.split_first() else {
        return Err("missing subcommand".into());
    };
    let allowed: &[&str] = match sub.as_str() {
        "echo" => &["--variant", "--port"],
        "timers" => &["--tasks", "--spread-ms"],
        "spawn" | "call_soon" | "promise_chain" | "threadsafe" | "idle_tasks" => &["--n"],
        other => return Err(format!("unknown subcommand {other:?}")),
    };
    let mut flags: Vec<(&str, &str)> = Vec::new();
    let mut it = rest.iter();
    while let Some(name) = it.next() {
        if !allowed.contains(&name.as_str()) {
            return Err(format!(
                "{sub}: unknown argument {name:?} (allowed: {})",
                allowed.join(", ")
            ));
        }
        let value = it.next().ok_or(format!("{sub}: {name} needs a value"))?;
        flags.push((name.as_str(), value.as_str()));
    }
    let get = |name: &str| flags.iter().rev().find(|(n, _)| *n == name).map(|(_, v)| *v);
    fn number<T>(name: &str, value: Option<&str>, default: T, min: T) -> Result<T, String>
    where
        T: std::str::FromStr + PartialOrd + std::fmt::Display,
        T::Err: std::fmt::Display,
    {
        let Some(v) = value else { return Ok(default) };
        let n: T = v.parse().map_err(|e| format!("{name} {v:?}: {e}"))?;
        if n < min {
            return Err(format!("{name} {v}: must be at least {min}"));
        }
        Ok(n)
    }
    let n = |default: usize| number("--n", get("--n"), default, 1);
    Ok(match sub.as_str() {
        "echo" => Cmd::Echo {
            variant: match get("--variant") {
                Some(v) if !variants.contains(&v) => {
                    return Err(format!(
                        "echo: unknown --variant {v:?} (allowed: {})",
                        variants.join(", ")
                    ))
                }
                v => v.map(str::to_string),
            },
            port: number("--port", get("--port"), 0, 0)?,
        },
        "timers" => Cmd::Timers {
            tasks: number("--tasks", get("--tasks"), 100_000, 1)?,
            spread_ms: number("--spread-ms", get("--spread-ms"), 100, 1)?,
        },
        "spawn" => Cmd::Spawn { n: n(1_000_000)? },
        "call_soon" => Cmd::CallSoon { n: n(1_000_000)? },
        "promise_chain" => Cmd::PromiseChain { n: n(1_000_000)? },
        "threadsafe" => Cmd::Threadsafe { n: n(10_000)? },
        _ => Cmd::IdleTasks { n: n(100_000)? },
    })
}

/// Parses the command line and runs `run`: exit status 2 for a bad command line, 1 for a
/// failure (the error on stderr), 0 otherwise.
fn peer_main(name: &str, variants: &[&str], run: impl FnOnce(Cmd) -> Result<(), Box<dyn Error>>) -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if matches!(args.first().map(String::as_str), Some("-h" | "--help")) {
        println!("usage: {name} SUBCOMMAND [OPTIONS]\n{USAGE}");
        return ExitCode::SUCCESS;
    }
    let cmd = match parse_args(&args, variants) {
        Ok(cmd) => cmd,
        Err(e) => {
            eprintln!("{name}: {e}\nusage: {name} SUBCOMMAND [OPTIONS]\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    match run(cmd) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("{name}: {e}");
            ExitCode::FAILURE
        }
    }
}

/// Prints `listening on ADDR` and flushes, so the harness reading our stdout gets it now.
fn announce(addr: std::net::SocketAddr) -> std::io::Result<()> {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    writeln!(out, "listening on {addr}")?;
    out.flush()
}

/// Exits the process (status 0) when stdin reaches end of file, so a harness that dies or
/// closes our stdin never leaves a server behind. A plain thread blocked in read(2): it costs
/// the loop nothing. Stdin that is not a pipe, socket or terminal (/dev/null, a file) would read
/// EOF at once, so it is not watched.
fn exit_at_stdin_eof() {
    use std::io::{IsTerminal, Read};
    use std::os::unix::fs::FileTypeExt;
    let watchable = std::io::stdin().is_terminal()
        || std::fs::metadata("/proc/self/fd/0")
            .map(|m| m.file_type().is_fifo() || m.file_type().is_socket())
            .unwrap_or(false);
    if !watchable {
        eprintln!("not watching stdin (not a pipe, socket or terminal): stop with SIGTERM or SIGINT");
        return;
    }
    let spawned = std::thread::Builder::new().name("stdin-eof".into()).spawn(|| {
        let mut stdin = std::io::stdin().lock();
        let mut sink = [0u8; 512];
        loop {
            match stdin.read(&mut sink) {
                Ok(0) => break,
                Ok(_) => {}
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(_) => break,
            }
        }
        std::process::exit(0);
    });
    if let Err(e) = spawned {
        eprintln!("not watching stdin ({e}): stop with SIGTERM or SIGINT");
    }
}

// The measuring half (not in peer_raw.rs, which measures nothing but echo).

/// The timers case's delays: xorshift64 (13, 7, 17) from a fixed seed, `seed % spread` in ns;
/// peer_asyncio.py draws the same sequence.
struct Delays {
    seed: u64,
    spread_ns: u64,
}

impl Delays {
    fn new(spread_ms: u64) -> Delays {
        Delays {
            seed: 0x2545_f491_4f6c_dd1d,
            spread_ns: spread_ms.saturating_mul(1_000_000),
        }
    }

    fn next_delay(&mut self) -> Duration {
        self.seed ^= self.seed << 13;
        self.seed ^= self.seed >> 7;
        self.seed ^= self.seed << 17;
        Duration::from_nanos(self.seed % self.spread_ns)
    }
}

/// `woke - deadline` in ms, negative when the wake came before the deadline.
fn lateness_ms(woke: Instant, deadline: Instant) -> f64 {
    match woke.checked_duration_since(deadline) {
        Some(late) => late.as_secs_f64() * 1e3,
        None => -(deadline - woke).as_secs_f64() * 1e3,
    }
}

/// The value at fraction `p` of sorted `v` (the lower nearest rank, as peer_asyncio.py does).
fn percentile(sorted: &[f64], p: f64) -> f64 {
    sorted[((sorted.len() - 1) as f64 * p) as usize]
}

/// User + system CPU time of the whole process, from /proc/self/stat (clock ticks of 10 ms:
/// USER_HZ is 100 on Linux).
fn cpu_seconds() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    // Fields after the command name, which is in parentheses and may contain spaces: state is
    // field 3, utime field 14, stime field 15.
    let after = stat.rsplit_once(')').map_or("", |(_, rest)| rest);
    let fields: Vec<&str> = after.split_whitespace().collect();
    let tick = |i: usize| fields.get(i).and_then(|f| f.parse::<u64>().ok()).unwrap_or(0);
    (tick(11) + tick(12)) as f64 / 100.0
}

/// A `/proc/self/status` field in KiB (`VmRSS`, `VmHWM`).
fn status_kib(key: &str) -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix(key)?.strip_prefix(':'))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap_or(0)
}

/// The timers case's JSON line, from each task's lateness.
fn print_timers(mut late: Vec<f64>, cpu_s: f64, wall_s: f64) {
    late.sort_by(|a, b| a.total_cmp(b));
    let early = late.iter().filter(|&&l| l < 0.0).count();
    println!(
        "{{\"lateness_p50_ms\":{:.4},\"lateness_p99_ms\":{:.4},\"lateness_max_ms\":{:.4},\"early\":{early},\"cpu_s\":{cpu_s:.3},\"wall_s\":{wall_s:.4},\"peak_rss_kib\":{}}}",
        percentile(&late, 0.5),
        percentile(&late, 0.99),
        late[late.len() - 1],
        status_kib("VmHWM"),
    );
}

/// The threadsafe case's JSON line, from each round trip in us.
fn print_rtts(mut rtts: Vec<f64>) {
    rtts.sort_by(|a, b| a.total_cmp(b));
    println!(
        "{{\"rtt_p50_us\":{:.2},\"rtt_p99_us\":{:.2}}}",
        percentile(&rtts, 0.5),
        percentile(&rtts, 0.99)
    );
}

/// Each idle task's body: count that it ran once, then wait for ever. The counter is a static,
/// so the future captures nothing and is the same size in every Rust peer.
static STARTED: AtomicUsize = AtomicUsize::new(0);

async fn idle_task() {
    STARTED.fetch_add(1, Ordering::Relaxed);
    std::future::pending::<()>().await
}

/// The idle_tasks case's JSON line: RSS growth over the second batch, per task (the task's
/// future included; `future_bytes` is that future's own size).
fn print_idle(rss_before_kib: u64, rss_after_kib: u64, n: usize, future_bytes: usize) {
    let per_task = rss_after_kib.saturating_sub(rss_before_kib) as f64 * 1024.0 / n as f64;
    println!("{{\"bytes_per_task\":{per_task:.1},\"future_bytes\":{future_bytes}}}");
}
