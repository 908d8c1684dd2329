//! Benchmark peer: smol 2.x (async-executor's `LocalExecutor` + async-io's reactor), for
//! `make bench`'s side-by-side runs (tests/examples/bench/main.rs drives it; the interface is in
//! tests/bench/README.md, the same for every peer).
//!
//! ```text
//! cargo build --release -p evloop-tests --no-default-features --examples
//! target/release/examples/peer_smol echo --port 0
//! target/release/examples/peer_smol timers --tasks 100000 --spread-ms 100
//! target/release/examples/peer_smol spawn --n 1000000     # also promise_chain, threadsafe,
//! target/release/examples/peer_smol idle_tasks --n 100000 # call_soon (n/a), timer_wake,
//!                                                         # thread_wake
//! ```
//!
//! One executor thread: a `LocalExecutor` run under `smol::block_on` (async-io's `block_on`,
//! which polls the reactor on this thread when the executor is idle). Echo:
//! `Async<TcpListener>`, a task per connection, `read` into its own 64 KiB buffer + `write_all`.
//!
//! Known unfairness: async-io also starts its fallback "async-io" thread the first time the
//! reactor is used; it drives the reactor when no `block_on` is (it backs off from 50 us to
//! 10 ms while one is) and can take I/O and timer events when this thread is busy, so smol is
//! not strictly one thread (its CPU counts in this process's rusage). smol has no `call_soon`
//! (reported as n/a). promise_chain uses `smol::channel::bounded(1)` (async-channel) sent from a
//! spawned task, one task per round, where evloop and asyncio set a promise from a plain
//! callback. threadsafe sends on an unbounded `smol::channel` from the other thread to a loop
//! task that replies on a std channel.

/// The command line, the echo server's banner and stdin watcher, and the measuring helpers (/proc
/// readers, the timers case's delays, the idle_tasks protocol, the JSON lines): the same for every
/// Rust peer.
#[path = "peer_common/mod.rs"]
mod common;

use std::error::Error;
use std::net::TcpListener;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use smol::io::{AsyncReadExt, AsyncWriteExt};
use smol::{Async, LocalExecutor, Timer};

use common::{
    Cmd, Delays, TIMER_WAKE_DELAY, ThreadWake, announce, check_idle_started, cpu_seconds, exit_at_stdin_eof, idle_task,
    lateness_ms, measure_idle_tasks, peer_main, print_na, print_per_sec, print_rtts, print_spawn, print_timers,
};

const READ_SIZE: usize = 64 * 1024;

fn main() -> ExitCode {
    peer_main("peer_smol", &["default"], |cmd| match cmd {
        Cmd::Echo { port, .. } => echo(port),
        Cmd::Timers {
            tasks,
            spread_ms,
            from_spawn,
        } => timers(tasks, spread_ms, from_spawn),
        Cmd::Spawn { n } => spawn(n),
        Cmd::CallSoon { .. } => {
            print_na("no call_soon in smol");
            Ok(())
        }
        Cmd::PromiseChain { n } => promise_chain(n),
        Cmd::Threadsafe { n } => threadsafe(n),
        Cmd::IdleTasks { n } => idle_tasks(n),
        Cmd::TimerWake { n } => timer_wake(n),
        Cmd::ThreadWake { n } => thread_wake(n),
    })
}

// ---------------------------------------------------------------------------------------------
// echo

async fn echo_conn(mut conn: Async<std::net::TcpStream>) {
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
    let ex = LocalExecutor::new();
    smol::block_on(ex.run(async {
        let listener = Async::<TcpListener>::bind(([127, 0, 0, 1], port))?;
        announce(listener.get_ref().local_addr()?)?;
        loop {
            let conn = match listener.accept().await {
                Ok((conn, _peer)) => conn,
                Err(e) => {
                    eprintln!("accept: {e}; retrying in 100 ms");
                    Timer::after(Duration::from_millis(100)).await;
                    continue;
                }
            };
            let _ = conn.get_ref().set_nodelay(true);
            ex.spawn(echo_conn(conn)).detach();
        }
    }))
}

// ---------------------------------------------------------------------------------------------
// timers, spawn, promise_chain, threadsafe, idle_tasks, timer_wake, thread_wake

fn timers(tasks: usize, spread_ms: u64, from_spawn: bool) -> Result<(), Box<dyn Error>> {
    let ex = LocalExecutor::new();
    let (cpu0, wall0) = (cpu_seconds(), Instant::now());
    let late = smol::block_on(ex.run(async {
        let mut delays = Delays::new(spread_ms);
        let sleepers: Vec<_> = (0..tasks)
            .map(|_| {
                let delay = delays.next_delay();
                let at_spawn = from_spawn.then(|| Instant::now() + delay);
                ex.spawn(async move {
                    // What `Timer::after(delay)` does, with the deadline kept (async-io's timers
                    // take std `Instant`s): fixed now, or when it was spawned.
                    let deadline = at_spawn.unwrap_or_else(|| Instant::now() + delay);
                    Timer::at(deadline).await;
                    lateness_ms(Instant::now(), deadline)
                })
            })
            .collect();
        let mut late = Vec::with_capacity(tasks);
        for s in sleepers {
            late.push(s.await);
        }
        late
    }));
    let (cpu_s, wall_s) = (cpu_seconds() - cpu0, wall0.elapsed().as_secs_f64());
    print_timers(late, cpu_s, wall_s);
    Ok(())
}

fn spawn(n: usize) -> Result<(), Box<dyn Error>> {
    let ex = LocalExecutor::new();
    let started = Instant::now();
    let sum = smol::block_on(ex.run(async {
        let tasks: Vec<_> = (0..n).map(|i| ex.spawn(async move { i })).collect();
        let mut sum = 0usize;
        for t in tasks {
            sum += t.await;
        }
        sum
    }));
    let ms = started.elapsed().as_secs_f64() * 1e3;
    print_spawn(n, sum, ms)
}

/// `smol::channel::bounded(1)` (async-channel): a spawned task sends, this one receives.
fn promise_chain(n: usize) -> Result<(), Box<dyn Error>> {
    let ex = LocalExecutor::new();
    let started = Instant::now();
    smol::block_on(ex.run(async {
        for i in 0..n {
            let (tx, rx) = smol::channel::bounded::<usize>(1);
            ex.spawn(async move {
                let _ = tx.send(i).await;
            })
            .detach();
            let got = rx.recv().await?;
            if got != i {
                return Err(format!("promise_chain: got {got}, expected {i}").into());
            }
        }
        Ok::<(), Box<dyn Error>>(())
    }))?;
    print_per_sec(n, started.elapsed().as_secs_f64());
    Ok(())
}

/// Another thread sends on an unbounded `smol::channel`; a loop task receives and replies on a
/// std channel. The pinger dropping its sender ends the loop task and the run.
fn threadsafe(n: usize) -> Result<(), Box<dyn Error>> {
    let ex = LocalExecutor::new();
    let (ping_tx, ping_rx) = smol::channel::unbounded::<()>();
    let (pong_tx, pong_rx) = std::sync::mpsc::channel::<()>();
    let pinger = std::thread::spawn(move || -> Result<Vec<f64>, String> {
        let mut rtts = Vec::with_capacity(n);
        for _ in 0..n {
            let sent = Instant::now();
            ping_tx.try_send(()).map_err(|e| format!("send: {e}"))?;
            pong_rx
                .recv()
                .map_err(|_| "the loop task dropped the reply".to_string())?;
            rtts.push(sent.elapsed().as_secs_f64() * 1e6);
        }
        Ok(rtts) // dropping ping_tx closes the channel
    });
    let replier = ex.spawn(async move {
        while ping_rx.recv().await.is_ok() {
            let _ = pong_tx.send(());
        }
    });
    smol::block_on(ex.run(replier));
    let rtts = pinger.join().map_err(|_| "the pinger thread panicked")??;
    print_rtts(rtts);
    Ok(())
}

fn idle_tasks(n: usize) -> Result<(), Box<dyn Error>> {
    let ex = LocalExecutor::new();
    // Each task's handle is kept (as a program that may await or cancel its tasks keeps them),
    // in a vector reserved up front so that its growth is not counted. `try_tick` until the
    // queue is empty runs each task once (and parks it).
    let mut handles = Vec::with_capacity(2 * n);
    measure_idle_tasks(n, |target| {
        for _ in 0..n {
            handles.push(ex.spawn(idle_task()));
        }
        while ex.try_tick() {}
        check_idle_started(target)
    })
}

/// One spawned task: `Timer::after(TIMER_WAKE_DELAY)` N times.
fn timer_wake(n: usize) -> Result<(), Box<dyn Error>> {
    let ex = LocalExecutor::new();
    let started = Instant::now();
    let sleeper = ex.spawn(async move {
        for _ in 0..n {
            Timer::after(TIMER_WAKE_DELAY).await;
        }
    });
    smol::block_on(ex.run(sleeper));
    print_per_sec(n, started.elapsed().as_secs_f64());
    Ok(())
}

/// One spawned task parked N times, each time woken by another thread's `Waker::wake`.
fn thread_wake(n: usize) -> Result<(), Box<dyn Error>> {
    let ex = LocalExecutor::new();
    let wake = ThreadWake::default();
    let started = Instant::now();
    let waker = wake.start_waker_thread(n);
    let parked = ex.spawn(async move {
        for _ in 0..n {
            wake.parked().await;
        }
    });
    smol::block_on(ex.run(parked));
    waker.join().map_err(|_| "the waker thread panicked")?;
    print_per_sec(n, started.elapsed().as_secs_f64());
    Ok(())
}
