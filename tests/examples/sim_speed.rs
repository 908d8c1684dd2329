//! How fast the simulated kernel runs the real loop (issue 22, item 5): simulated seconds per
//! wall second on a timer-heavy workload, and simulated echo round trips per wall second.
//!
//! `cargo run --release -p evloop-tests --example sim_speed [-- --quick] [--echo|--timers]
//! [--recording]`
//!
//! Both workloads run the unchanged evloop loop on a kernel that keeps only the trace digest
//! and no tape (a test that needs the trace of a failing seed replays it with the full trace);
//! `--recording` keeps the default trace (the last 200,000 records) and the tape, as a test
//! run does.
//! Printed per workload: wall time, simulated time, the rate, and per operation the simulated
//! calls, timeline events and real system calls the simulation made, which is where the time
//! goes.

use std::cell::Cell;
use std::rc::Rc;
use std::time::{Duration, Instant};

use evloop::io::{AsyncReadExt, AsyncWriteExt};
use evloop::net::{TcpListener, TcpStream};
use evloop_syscalls::sim::{Config, Kernel, TraceMode};

fn config() -> Config {
    if std::env::args().any(|a| a == "--recording") {
        Config::default()
    } else {
        Config::default().trace(TraceMode::Digest).record_tape(false)
    }
}

/// `timers` tasks, each sleeping its own period (1 to 10 s) over and over, for `hours`
/// simulated hours. Returns (wall, simulated, wake-ups).
fn timer_heavy(timers: u64, hours: u64) -> (Duration, Duration, u64, Kernel) {
    let kernel = Kernel::with_config(1, config());
    let wakeups = Rc::new(Cell::new(0u64));
    let started = Instant::now();
    {
        let _on = kernel.enter();
        let w = wakeups.clone();
        evloop::run(async move {
            let end = Duration::from_secs(hours * 3600);
            let mut tasks = Vec::new();
            for i in 0..timers {
                let w = w.clone();
                tasks.push(evloop::spawn(async move {
                    let period = Duration::from_millis(1000 + (i * 7919) % 9000);
                    let mut slept = Duration::ZERO;
                    while slept + period <= end {
                        evloop::time::sleep(period).await;
                        slept += period;
                        w.set(w.get() + 1);
                    }
                }));
            }
            for t in tasks {
                let _ = t.await;
            }
        })
        .unwrap();
    }
    (started.elapsed(), kernel.elapsed(), wakeups.get(), kernel)
}

/// `conns` clients, each making `trips` request/response round trips of 64 bytes with a
/// TcpStream echo server. Returns (wall, simulated, round trips).
fn echo(conns: u64, trips: u64) -> (Duration, Duration, u64, Kernel) {
    let kernel = Kernel::with_config(2, config());
    let started = Instant::now();
    {
        let _on = kernel.enter();
        evloop::run(async move {
            let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
            let addr = listener.local_addr().unwrap();
            evloop::spawn(async move {
                loop {
                    let Ok((mut s, _)) = listener.accept().await else {
                        return;
                    };
                    evloop::spawn(async move {
                        let mut buf = [0u8; 64];
                        while let Ok(n) = s.read(&mut buf).await {
                            if n == 0 || s.write_all(&buf[..n]).await.is_err() {
                                return;
                            }
                        }
                    });
                }
            });
            let mut clients = Vec::new();
            for _ in 0..conns {
                clients.push(evloop::spawn(async move {
                    let mut c = TcpStream::connect(addr).await.unwrap();
                    let msg = [7u8; 64];
                    let mut buf = [0u8; 64];
                    for _ in 0..trips {
                        c.write_all(&msg).await.unwrap();
                        c.read_exact(&mut buf).await.unwrap();
                    }
                }));
            }
            for c in clients {
                c.await.unwrap();
            }
        })
        .unwrap();
    }
    (started.elapsed(), kernel.elapsed(), conns * trips, kernel)
}

fn report(name: &str, unit: &str, (wall, sim, ops, kernel): (Duration, Duration, u64, Kernel)) {
    let s = kernel.stats();
    let per = |n: u64| n as f64 / ops.max(1) as f64;
    println!("{name}");
    println!(
        "  wall {:.3} s, simulated {:.1} s: {:.0} simulated s per wall s",
        wall.as_secs_f64(),
        sim.as_secs_f64(),
        sim.as_secs_f64() / wall.as_secs_f64()
    );
    println!(
        "  {ops} {unit}: {:.0} per wall s, {:.2} us each",
        ops as f64 / wall.as_secs_f64(),
        wall.as_secs_f64() * 1e6 / ops as f64
    );
    println!(
        "  per {}: {:.2} simulated calls, {:.2} timeline events, {:.2} clock jumps, {:.2} real syscalls, {:.2} trace records",
        unit.trim_end_matches('s'),
        per(s.calls),
        per(s.events),
        per(s.time_jumps),
        per(s.real_calls),
        per(kernel.records())
    );
}

fn main() {
    let quick = std::env::args().any(|a| a == "--quick");
    // `--echo` or `--timers` runs one of the two (for profiling).
    let only = |name: &str| {
        let picked: Vec<String> = std::env::args().filter(|a| a == "--echo" || a == "--timers").collect();
        picked.is_empty() || picked.iter().any(|a| a == name)
    };
    let (timers, hours) = if quick { (200, 1) } else { (1000, 6) };
    if only("--timers") {
        report(
            &format!("timer-heavy: {timers} sleeping tasks (periods 1-10 s) for {hours} simulated hours"),
            "wake-ups",
            timer_heavy(timers, hours),
        );
    }
    if !only("--echo") {
        return;
    }
    let trips = if quick { 20_000 } else { 200_000 };
    report(
        &format!("echo: 1 TcpStream client, {trips} round trips of 64 bytes"),
        "round trips",
        echo(1, trips),
    );
    report(
        &format!("echo: 50 TcpStream clients, {} round trips each", trips / 50),
        "round trips",
        echo(50, trips / 50),
    );
}
