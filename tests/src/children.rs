//! The calling thread's child processes as `/proc/thread-self/children` lists them (zombies
//! included, until they are reaped): for the tests that check that no zombie is left behind.

use std::collections::HashSet;
use std::time::{Duration, Instant};

/// The pids of the calling thread's children that are not reaped yet (zombies included).
pub fn my_children() -> HashSet<u32> {
    let text = std::fs::read_to_string("/proc/thread-self/children").expect("/proc/thread-self/children");
    text.split_whitespace().filter_map(|p| p.parse().ok()).collect()
}

/// Waits up to 10 s (without a loop) for `pid` to leave this thread's children: reaped.
pub fn wait_reaped(pid: u32) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while my_children().contains(&pid) {
        assert!(Instant::now() < deadline, "child {pid} was never reaped (zombie left)");
        std::thread::sleep(Duration::from_millis(5));
    }
}
