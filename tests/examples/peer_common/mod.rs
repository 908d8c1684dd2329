//! What every Rust benchmark peer shares: the command line, the exit statuses, the echo servers'
//! banner and stdin watcher, and the measuring helpers (clocks and counters read from /proc, the
//! fixed-seed timer delays, percentiles, the JSON lines). The interface they implement is in
//! tests/bench/README.md; tests/examples/bench/ parses what they print.
//!
//! Each peer includes this file as its own private module:
//!
//! ```text
//! #[path = "peer_common/mod.rs"]
//! mod common;
//! ```
//!
//! It is not an example itself: cargo builds `examples/*.rs` and `examples/*/main.rs` as examples,
//! and this directory has no `main.rs`.
//!
//! peer_evloop.rs, peer_tokio.rs and peer_smol.rs use all three parts; peer_raw.rs measures
//! nothing but echo, so it uses only the first two ([`peer_main`], [`print_na`], [`announce`],
//! [`exit_at_stdin_eof`]) and allows the measuring part to be dead code.

use std::error::Error;
use std::process::ExitCode;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

// ---------------------------------------------------------------------------------------------
// The command line, and the line for a case a peer cannot run

/// What `main` was asked to do: one subcommand with its options, defaults filled in.
#[allow(dead_code)] // not every peer reads every field (no variants, no call_soon)
pub enum Cmd {
    /// A TCP echo server on 127.0.0.1:`port` (0: any free port); `variant` as given, if given.
    Echo { variant: Option<String>, port: u16 },
    /// `tasks` sleepers, each with a delay in [0, `spread_ms`) ms.
    /// `from_spawn`: each deadline is fixed when its task is spawned (`--deadline spawn`), not
    /// when it first runs (the default, `--deadline first-run`).
    Timers {
        tasks: usize,
        spread_ms: u64,
        from_spawn: bool,
    },
    /// Spawn, run and join `n` trivial tasks.
    Spawn { n: usize },
    /// `n` `call_soon` callbacks run by one loop iteration.
    CallSoon { n: usize },
    /// `n` rounds of create, set and await a one-shot future.
    PromiseChain { n: usize },
    /// `n` round trips from another OS thread into the loop.
    Threadsafe { n: usize },
    /// One task sleeping [`TIMER_WAKE_DELAY`] `n` times.
    TimerWake { n: usize },
    /// One task parked `n` times, each time woken by another OS thread ([`ThreadWake`]).
    ThreadWake { n: usize },
    /// RSS growth per parked task over a second batch of `n`.
    IdleTasks { n: usize },
}

/// The subcommands and their defaults, printed by `--help` and after a bad command line.
const USAGE: &str = "subcommands (one thread each):
  echo [--variant V] [--port P]          TCP echo server on 127.0.0.1:P (0: any free port)
  timers [--tasks N] [--spread-ms S] [--deadline first-run|spawn]
                                         N tasks sleeping a random [0, S) ms (100000, 100); the
                                         deadline is fixed when a task first runs, or at its spawn
  spawn [--n N]                          spawn + run + join N trivial tasks (1000000)
  call_soon [--n N]                      N call_soon callbacks (1000000)
  promise_chain [--n N]                  N create/set/await rounds of a one-shot future (1000000)
  threadsafe [--n N]                     N round trips from another thread into the loop (10000)
  timer_wake [--n N]                     one task sleeping 1 ms, N times (1000)
  thread_wake [--n N]                    one task parked N times, woken by another thread (10000)
  idle_tasks [--n N]                     RSS per parked task, second batch of N (100000)";

/// Parses the arguments after the program name. `variants` are the names `echo --variant`
/// accepts. A flag given twice takes its last value; the error is the message for stderr.
fn parse_args(args: &[String], variants: &[&str]) -> Result<Cmd, String> {
    let Some((sub, rest)) = args.split_first() else {
        return Err("missing subcommand".into());
    };
    let allowed: &[&str] = match sub.as_str() {
        "echo" => &["--variant", "--port"],
        "timers" => &["--tasks", "--spread-ms", "--deadline"],
        "spawn" | "call_soon" | "promise_chain" | "threadsafe" | "idle_tasks" | "timer_wake" | "thread_wake" => {
            &["--n"]
        }
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
                    ));
                }
                v => v.map(str::to_string),
            },
            port: number("--port", get("--port"), 0, 0)?,
        },
        "timers" => Cmd::Timers {
            tasks: number("--tasks", get("--tasks"), 100_000, 1)?,
            spread_ms: number("--spread-ms", get("--spread-ms"), 100, 1)?,
            from_spawn: match get("--deadline").unwrap_or("first-run") {
                "first-run" => false,
                "spawn" => true,
                other => return Err(format!("timers: --deadline {other:?} (allowed: first-run, spawn)")),
            },
        },
        "spawn" => Cmd::Spawn { n: n(1_000_000)? },
        "call_soon" => Cmd::CallSoon { n: n(1_000_000)? },
        "promise_chain" => Cmd::PromiseChain { n: n(1_000_000)? },
        "threadsafe" => Cmd::Threadsafe { n: n(10_000)? },
        "timer_wake" => Cmd::TimerWake { n: n(1_000)? },
        "thread_wake" => Cmd::ThreadWake { n: n(10_000)? },
        _ => Cmd::IdleTasks { n: n(100_000)? },
    })
}

/// A peer's `main`: parses the command line (`name` is the program name for messages, `variants`
/// the echo variants it accepts) and runs `run`. `-h`/`--help` prints the usage on stdout; the
/// exit status is 2 for a bad command line (message and usage on stderr), 1 for a failure (the
/// error on stderr), 0 otherwise.
pub fn peer_main(name: &str, variants: &[&str], run: impl FnOnce(Cmd) -> Result<(), Box<dyn Error>>) -> ExitCode {
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

/// The JSON line of a case this peer has no equivalent for: `{"na":"<reason>"}` (`reason` needs
/// no JSON escaping).
#[allow(dead_code)] // peer_evloop.rs has an equivalent for every case
pub fn print_na(reason: &str) {
    println!("{{\"na\":\"{reason}\"}}");
}

// ---------------------------------------------------------------------------------------------
// The echo servers

/// Prints `listening on ADDR` and flushes, so the harness reading our stdout gets it now.
pub fn announce(addr: std::net::SocketAddr) -> std::io::Result<()> {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    writeln!(out, "listening on {addr}")?;
    out.flush()
}

/// Exits the process (status 0) when stdin reaches end of file, so a harness that dies or
/// closes our stdin never leaves a server behind. A plain thread blocked in read(2): it costs
/// the loop nothing. Stdin that is not a pipe, socket or terminal (/dev/null, a file) would read
/// EOF at once, so it is not watched.
pub fn exit_at_stdin_eof() {
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

// ---------------------------------------------------------------------------------------------
// The measuring part (unused by peer_raw.rs, which measures nothing but echo)

/// The timers case's delays: xorshift64 (13, 7, 17) from a fixed seed, `seed % spread` in ns;
/// peer_asyncio.py draws the same sequence.
pub struct Delays {
    seed: u64,
    spread_ns: u64,
}

impl Delays {
    /// The sequence from its first value, for delays in [0, `spread_ms`) ms.
    pub fn new(spread_ms: u64) -> Delays {
        Delays {
            seed: 0x2545_f491_4f6c_dd1d,
            spread_ns: spread_ms.saturating_mul(1_000_000),
        }
    }

    /// The next delay of the sequence.
    pub fn next_delay(&mut self) -> Duration {
        self.seed ^= self.seed << 13;
        self.seed ^= self.seed >> 7;
        self.seed ^= self.seed << 17;
        Duration::from_nanos(self.seed % self.spread_ns)
    }
}

/// `woke - deadline` in ms, negative when the wake came before the deadline.
pub fn lateness_ms(woke: Instant, deadline: Instant) -> f64 {
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
pub fn cpu_seconds() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    // Fields after the command name, which is in parentheses and may contain spaces: state is
    // field 3, utime field 14, stime field 15.
    let after = stat.rsplit_once(')').map_or("", |(_, rest)| rest);
    let fields: Vec<&str> = after.split_whitespace().collect();
    let tick = |i: usize| fields.get(i).and_then(|f| f.parse::<u64>().ok()).unwrap_or(0);
    (tick(11) + tick(12)) as f64 / 100.0
}

/// A `/proc/self/status` field in KiB (`VmRSS`, `VmHWM`).
pub fn status_kib(key: &str) -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix(key)?.strip_prefix(':'))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap_or(0)
}

/// The timers case's JSON line, from each task's lateness.
pub fn print_timers(mut late: Vec<f64>, cpu_s: f64, wall_s: f64) {
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

/// The spawn case's JSON line, `ms` being spawn + run + join, once the joined tasks' `sum` of
/// their indices proves that all `n` ran.
pub fn print_spawn(n: usize, sum: usize, ms: f64) -> Result<(), Box<dyn Error>> {
    if sum != n * (n - 1) / 2 {
        return Err(format!("spawn: sum {sum}, expected {}", n * (n - 1) / 2).into());
    }
    println!("{{\"ms\":{ms:.3}}}");
    Ok(())
}

/// The JSON line of a case measured as a rate (call_soon, promise_chain): `n` in `secs`.
pub fn print_per_sec(n: usize, secs: f64) {
    println!("{{\"per_sec\":{:.0}}}", n as f64 / secs);
}

/// The threadsafe case's JSON line, from each round trip in us.
pub fn print_rtts(mut rtts: Vec<f64>) {
    rtts.sort_by(|a, b| a.total_cmp(b));
    println!(
        "{{\"rtt_p50_us\":{:.2},\"rtt_p99_us\":{:.2}}}",
        percentile(&rtts, 0.5),
        percentile(&rtts, 0.99)
    );
}

/// How many idle tasks have run once, in all (see [`idle_task`]).
pub static STARTED: AtomicUsize = AtomicUsize::new(0);

/// Each idle task's body: count that it ran once, then wait for ever. The counter is a static,
/// so the future captures nothing and is the same size in every Rust peer.
pub async fn idle_task() {
    STARTED.fetch_add(1, Ordering::Relaxed);
    std::future::pending::<()>().await
}

/// Checks, after a batch of idle tasks, that `target` of them have run in all.
pub fn check_idle_started(target: usize) -> Result<(), Box<dyn Error>> {
    match STARTED.load(Ordering::Relaxed) {
        started if started == target => Ok(()),
        started => Err(format!("idle_tasks: {started} of {target} tasks ran").into()),
    }
}

/// The idle_tasks case around a peer's `batch(target)`, which spawns `n` more [`idle_task`]s,
/// runs each once (so that `target` have run in all) and leaves them parked: a warm-up batch
/// fills the allocator and the runtime's tables, then VmRSS is read before and after the
/// measured second batch and the JSON line printed. Then the process exits (status 0): tearing
/// down 2N parked tasks takes time and proves nothing here.
pub fn measure_idle_tasks(
    n: usize,
    mut batch: impl FnMut(usize) -> Result<(), Box<dyn Error>>,
) -> Result<(), Box<dyn Error>> {
    let future_bytes = std::mem::size_of_val(&idle_task());
    batch(n)?;
    let before = status_kib("VmRSS");
    batch(2 * n)?;
    let after = status_kib("VmRSS");
    print_idle(before, after, n, future_bytes);
    std::process::exit(0)
}

/// The idle_tasks case's JSON line: RSS growth over the second batch, per task (the task's
/// future included; `future_bytes` is that future's own size).
fn print_idle(rss_before_kib: u64, rss_after_kib: u64, n: usize, future_bytes: usize) {
    let per_task = rss_after_kib.saturating_sub(rss_before_kib) as f64 * 1024.0 / n as f64;
    println!("{{\"bytes_per_task\":{per_task:.1},\"future_bytes\":{future_bytes}}}");
}

/// The delay of each sleep in the timer_wake case: long enough that the deadline is still ahead
/// when the sleep is first polled, even under valgrind, which runs a program some 50 times
/// slower (with 1 µs, evloop's sleep found its deadline passed at its first poll and returned
/// at once, never reaching the timer queue); so every sleep is one trip through the timer queue,
/// a poll that blocks until the deadline, and a wake. tokio rounds it up to its next
/// millisecond tick.
pub const TIMER_WAKE_DELAY: Duration = Duration::from_millis(1);

/// The thread_wake case, written against `std::task` alone so that every runtime runs the same
/// code: a task awaits [`ThreadWake::parked`] `n` times, and each time another OS thread
/// ([`ThreadWake::start_waker_thread`]) waits until the task has parked (its waker is stored),
/// then wakes it. What differs between runtimes is only what `Waker::wake` from a foreign
/// thread costs them (a remote queue and an eventfd write, in each of them) and how the parked
/// loop gets back to the task.
#[derive(Clone, Default)]
pub struct ThreadWake {
    shared: std::sync::Arc<(std::sync::Mutex<WakeState>, std::sync::Condvar)>,
}

#[derive(Default)]
struct WakeState {
    /// The parked task's waker; taken by the thread that wakes it.
    waker: Option<std::task::Waker>,
    /// Set with the wake, cleared by the poll that sees it.
    woken: bool,
}

impl ThreadWake {
    /// A future that is pending until the other thread wakes it (once).
    pub fn parked(&self) -> impl std::future::Future<Output = ()> + '_ {
        std::future::poll_fn(move |cx| {
            let (lock, parked) = &*self.shared;
            let mut st = lock.lock().unwrap_or_else(|e| e.into_inner());
            if st.woken {
                st.woken = false;
                return std::task::Poll::Ready(());
            }
            st.waker = Some(cx.waker().clone());
            drop(st); // unlock first, so that the waking thread does not find the lock held
            parked.notify_one();
            std::task::Poll::Pending
        })
    }

    /// The other thread: `n` times, wait until the task has parked and the loop's thread sleeps
    /// in its poll, then wake the task.
    pub fn start_waker_thread(&self, n: usize) -> std::thread::JoinHandle<()> {
        let me = self.clone();
        std::thread::spawn(move || {
            let (lock, parked) = &*me.shared;
            for _ in 0..n {
                let mut st = lock.lock().unwrap_or_else(|e| e.into_inner());
                while st.waker.is_none() {
                    st = parked.wait(st).unwrap_or_else(|e| e.into_inner());
                }
                st.woken = true;
                let waker = st.waker.take();
                drop(st); // wake outside the lock: the loop thread may poll at once
                wait_until_loop_sleeps();
                if let Some(w) = waker {
                    w.wake();
                }
            }
        })
    }
}

/// Waits (up to 100 ms) until the main thread, which runs the loop, sleeps: blocked in an epoll
/// wait (evloop, tokio), or in a futex wait (smol's `block_on` parks there while async-io's
/// helper thread polls). A wake that finds the loop still running takes a cheaper path in every
/// runtime (no eventfd write, or one more pass of the ready queue), so without this the
/// thread_wake case would measure a mix of the two that depends on timing. `make bench-instr`
/// leaves this function out of its count (`valgrind --toggle-collect`): its polling of /proc is
/// not part of a wake.
#[inline(never)]
pub fn wait_until_loop_sleeps() {
    #[cfg(target_arch = "x86_64")]
    const SLEEPS: [libc::c_long; 4] = [
        libc::SYS_epoll_wait,
        libc::SYS_epoll_pwait,
        libc::SYS_epoll_pwait2,
        libc::SYS_futex,
    ];
    #[cfg(not(target_arch = "x86_64"))]
    const SLEEPS: [libc::c_long; 3] = [libc::SYS_epoll_pwait, libc::SYS_epoll_pwait2, libc::SYS_futex];
    // The main thread's id is the process id; the file holds the number of the system call the
    // thread is blocked in, or "running".
    let path = format!("/proc/self/task/{}/syscall", std::process::id());
    let deadline = Instant::now() + Duration::from_millis(100);
    while Instant::now() < deadline {
        let text = std::fs::read_to_string(&path).unwrap_or_default();
        let nr = text
            .split_whitespace()
            .next()
            .and_then(|v| v.parse::<libc::c_long>().ok());
        if nr.is_some_and(|nr| SLEEPS.contains(&nr)) {
            return;
        }
        std::thread::yield_now();
    }
}
