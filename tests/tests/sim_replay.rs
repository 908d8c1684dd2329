//! A failing `#[evloop::test(simulate)]` seed replays exactly: the report's `EVLOOP_SEED` reruns
//! the same shrunk schedule with the same trace.
//!
//! A binary of its own: it starts child processes, and a process that forks while a simulation
//! runs in another thread lends the child its descriptors until the child's `exec`, which can
//! delay when a simulated close is seen (as it would delay a real FIN), so the determinism check
//! of the simulated tests must not share a process with it.
#![cfg(feature = "simulation")]

#[path = "sim/support.rs"]
mod sim_support;

use evloop_tests::child;

#[evloop::test(simulate(seeds = 200))]
#[ignore = "fails on purpose: run in a child process by a_reported_seed_replays_exactly"]
async fn ordering_bug_for_the_replay_test() {
    sim_support::first_come_first_heard().await;
}

/// The report of a failed child run: its seed, and the shrunk run's trace.
fn report(out: &std::process::Output) -> (u64, String) {
    let stderr = String::from_utf8_lossy(&out.stderr);
    let seed = stderr
        .split("failed with seed ")
        .nth(1)
        .and_then(|rest| rest.split(':').next())
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or_else(|| panic!("no seed in the child's report:\n{stderr}"));
    let trace = stderr
        .split("trace of the shrunk run")
        .nth(1)
        .unwrap_or_else(|| panic!("no trace in the child's report:\n{stderr}"))
        .to_string();
    assert!(stderr.contains("EVLOOP_TAPE='"), "{stderr}");
    (seed, trace)
}

#[test]
fn a_reported_seed_replays_exactly() {
    const KEY: &str = "EVLOOP_SIM_ATTRIBUTE_CHILD";
    if child::is_child(KEY) {
        return;
    }
    let test = "ordering_bug_for_the_replay_test";
    let first = child::run(test, KEY);
    assert!(!first.status.success(), "the buggy test passed every seed");
    let (seed, trace) = report(&first);
    let mut cmd = child::command(test, KEY);
    let replay = cmd.env("EVLOOP_SEED", seed.to_string()).output().unwrap();
    let (again, replayed) = report(&replay);
    assert_eq!(again, seed);
    assert_eq!(replayed, trace, "the replayed seed took another path");
}
