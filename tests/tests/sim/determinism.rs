//! The real loop, reactor, transports and streams on the simulated kernel: one seed gives one
//! run, byte for byte, and different seeds give different interleavings.
//!
//! The workload (`support/sim.rs`) uses the protocol transport, asyncio streams, `TcpStream`,
//! UDP, timers and a wake-up from another simulated thread. Nothing here depends on how fast
//! the machine is: simulated time only moves when every simulated thread waits.
#![cfg(feature = "simulation")]

use crate::support as sim_support;

use std::collections::BTreeSet;
use std::time::Duration;

use evloop_syscalls::sim::{Config, Faults, Tape};
use sim_support::{Run, run_mixed};

fn cfg() -> Config {
    Config::default().latency(Duration::from_micros(500))
}

fn completed(run: &Run) {
    let log = &run.log;
    for needed in [
        "bulk 0: 20000 bytes back, intact: true",
        "bulk 1: 20000 bytes back, intact: true",
        "echoed 40000 bytes",
        "timer 2ms",
        "slept 5ms",
        "remote wake-up arrived",
    ] {
        assert!(
            log.iter().any(|l| l == needed),
            "seed {}: no {needed:?} in {log:#?}",
            run.seed
        );
    }
    let lines = log.iter().filter(|l| l.starts_with("client ")).count();
    assert_eq!(lines, 9, "seed {}: {log:#?}", run.seed);
}

fn without_fd_numbers(log: &[String]) -> Vec<String> {
    log.iter()
        .map(|l| {
            let mut out = String::new();
            let mut rest = l.as_str();
            while let Some(i) = rest.find("fd ") {
                out.push_str(&rest[..i + 3]);
                rest = rest[i + 3..].trim_start_matches(|c: char| c.is_ascii_digit());
                out.push('N');
            }
            out.push_str(rest);
            out
        })
        .collect()
}

#[test]
fn a_seed_gives_the_same_run_byte_for_byte() {
    for seed in [1, 2, 3] {
        let a = run_mixed(seed, cfg());
        let b = run_mixed(seed, cfg());
        completed(&a);
        assert_eq!(without_fd_numbers(&a.log), without_fd_numbers(&b.log), "seed {seed}");
        assert_eq!(a.records, b.records, "seed {seed}");
        assert_eq!(a.digest, b.digest, "seed {seed}");
        assert!(a.trace == b.trace, "seed {seed}: the traces differ");
        assert!(a.trace.contains("switch -> T1"), "the worker thread never ran");
    }
}

#[test]
fn different_seeds_give_different_interleavings() {
    let runs: Vec<Run> = (10..30).map(|s| run_mixed(s, cfg())).collect();
    for r in &runs {
        completed(r);
    }
    let digests: BTreeSet<u64> = runs.iter().map(|r| r.digest).collect();
    assert!(digests.len() >= 15, "{} distinct traces in 20 seeds", digests.len());
    // The order in which the clients' lines and the datagrams arrive is the interleaving
    // the program can see.
    let orders: BTreeSet<Vec<String>> = runs.iter().map(|r| r.log.clone()).collect();
    assert!(orders.len() >= 5, "{} distinct logs in 20 seeds", orders.len());
}

#[test]
fn a_tape_replays_its_run_and_the_empty_tape_is_the_plainest_run() {
    let cfg = || cfg().faults(Faults::swarm());
    for seed in [5, 6] {
        let a = run_mixed(seed, cfg());
        let again = run_mixed(999, cfg().replay(a.tape.clone()));
        assert_eq!(a.digest, again.digest, "seed {seed}");
        // Descriptor numbers are real ones, so they differ between runs: an error message
        // that quotes one is the only text that may.
        assert_eq!(without_fd_numbers(&a.log), without_fd_numbers(&again.log));
    }
    // No faults, no delays, the kernel's order: everything completes.
    let plain = run_mixed(0, cfg().replay(Tape::new()));
    completed(&plain);
    assert_eq!(plain.tape.nonzero(), 0);
}

/// Descriptor numbers are the process's: another thread opening and closing files changes
/// which numbers the simulated kernel's backing pipes get. A seed's run must not depend on
/// that (it did: a file dropped without the wrapper was seen closed when its number came
/// back from `pipe2`, so the trace depended on the tests running beside it).
#[test]
fn a_seed_replays_while_other_threads_open_and_close_descriptors() {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};
    let cfg = || cfg().faults(Faults::swarm());
    let stop = Arc::new(AtomicBool::new(false));
    let churn = std::thread::spawn({
        let stop = stop.clone();
        move || {
            let mut held = Vec::new();
            let mut n = 0u64;
            while !stop.load(Ordering::Relaxed) {
                // Take a few numbers and give them back, in a varying pattern.
                held.push(std::fs::File::open("/dev/null").unwrap());
                n += 1;
                if n % 3 == 0 {
                    held.clear();
                }
                std::thread::yield_now();
            }
        }
    });
    let first = run_mixed(6, cfg());
    let mut differing = 0;
    for _ in 0..150 {
        if run_mixed(6, cfg()).digest != first.digest {
            differing += 1;
        }
    }
    stop.store(true, Ordering::Relaxed);
    churn.join().unwrap();
    assert_eq!(differing, 0, "{differing} of 150 runs of seed 6 took another path");
}
