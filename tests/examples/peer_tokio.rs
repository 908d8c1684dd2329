//! Benchmark peer: tokio 1.x on a `current_thread` runtime, for `make bench`'s side-by-side runs
//! (tests/examples/bench/main.rs drives it; the interface is in tests/bench/README.md, the same for
//! every peer).
//!
//! ```text
//! cargo build --release -p evloop-tests --no-default-features --examples
//! target/release/examples/peer_tokio echo --port 0
//! target/release/examples/peer_tokio timers --tasks 100000 --spread-ms 100
//! target/release/examples/peer_tokio spawn --n 1000000     # also promise_chain, threadsafe,
//! target/release/examples/peer_tokio idle_tasks --n 100000 # call_soon (n/a), timer_wake,
//!                                                          # thread_wake
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

/// The command line, the echo server's banner and stdin watcher, and the measuring helpers (/proc
/// readers, the timers case's delays, the idle_tasks protocol, the JSON lines): the same for every
/// Rust peer.
#[path = "peer_common/mod.rs"]
mod common;

use std::error::Error;
use std::process::ExitCode;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::runtime::Runtime;

use common::{
    Cmd, Delays, STARTED, TIMER_WAKE_DELAY, ThreadWake, announce, check_idle_started, cpu_seconds, exit_at_stdin_eof,
    idle_task, lateness_ms, measure_idle_tasks, peer_main, print_na, print_per_sec, print_rtts, print_spawn,
    print_timers,
};

const READ_SIZE: usize = 64 * 1024;

fn main() -> ExitCode {
    peer_main("peer_tokio", &["default"], |cmd| match cmd {
        Cmd::Echo { port, .. } => echo(port),
        Cmd::Timers {
            tasks,
            spread_ms,
            from_spawn,
        } => timers(tasks, spread_ms, from_spawn),
        Cmd::Spawn { n } => spawn(n),
        Cmd::CallSoon { .. } => {
            print_na("no call_soon in tokio");
            Ok(())
        }
        Cmd::PromiseChain { n } => promise_chain(n),
        Cmd::Threadsafe { n } => threadsafe(n),
        Cmd::IdleTasks { n } => idle_tasks(n),
        Cmd::TimerWake { n } => timer_wake(n),
        Cmd::ThreadWake { n } => thread_wake(n),
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
// timers, spawn, promise_chain, threadsafe, idle_tasks, timer_wake, thread_wake

fn timers(tasks: usize, spread_ms: u64, from_spawn: bool) -> Result<(), Box<dyn Error>> {
    let rt = runtime()?;
    let (cpu0, wall0) = (cpu_seconds(), Instant::now());
    let late = rt.block_on(async move {
        let mut delays = Delays::new(spread_ms);
        let sleepers: Vec<_> = (0..tasks)
            .map(|_| {
                let delay = delays.next_delay();
                let at_spawn = from_spawn.then(|| tokio::time::Instant::now() + delay);
                tokio::spawn(async move {
                    // What `tokio::time::sleep(delay)` does, with the deadline kept (the
                    // runtime's clock): fixed now, or when it was spawned.
                    let deadline = at_spawn.unwrap_or_else(|| tokio::time::Instant::now() + delay);
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
    print_spawn(n, sum, ms)
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
    print_per_sec(n, started.elapsed().as_secs_f64());
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
    // Each task's join handle is kept (as a program that may await or abort its tasks keeps
    // them), in a vector reserved up front so that its growth is not counted. `yield_now` until
    // every task has run once (and parked).
    let mut handles = Vec::with_capacity(2 * n);
    measure_idle_tasks(n, |target| {
        rt.block_on(async {
            for _ in 0..n {
                handles.push(tokio::spawn(idle_task()));
            }
            while STARTED.load(Ordering::Relaxed) < target {
                tokio::task::yield_now().await;
            }
        });
        check_idle_started(target)
    })
}

/// One spawned task: `tokio::time::sleep(TIMER_WAKE_DELAY)` N times (each rounded up to the
/// timer wheel's next millisecond tick).
fn timer_wake(n: usize) -> Result<(), Box<dyn Error>> {
    let rt = runtime()?;
    let started = Instant::now();
    rt.block_on(async move {
        tokio::spawn(async move {
            for _ in 0..n {
                tokio::time::sleep(TIMER_WAKE_DELAY).await;
            }
        })
        .await
    })?;
    print_per_sec(n, started.elapsed().as_secs_f64());
    Ok(())
}

/// One spawned task parked N times, each time woken by another thread's `Waker::wake`.
fn thread_wake(n: usize) -> Result<(), Box<dyn Error>> {
    let rt = runtime()?;
    let wake = ThreadWake::default();
    let started = Instant::now();
    let waker = wake.start_waker_thread(n);
    rt.block_on(async move {
        tokio::spawn(async move {
            for _ in 0..n {
                wake.parked().await;
            }
        })
        .await
    })?;
    waker.join().map_err(|_| "the waker thread panicked")?;
    print_per_sec(n, started.elapsed().as_secs_f64());
    Ok(())
}
