//! Inside a running loop, letting other work happen before the test looks: a number of
//! iterations ([`settle`]), a stretch of time ([`settle_for`]), or until a condition holds
//! ([`yield_until`], one iteration per check; [`wait_until`], a millisecond's sleep per check
//! and a bound).

use std::time::{Duration, Instant};

use evloop::{task::yield_now, time::sleep};

use crate::loops::HANG;

/// Lets the other ready tasks run: `n` yields, each one loop iteration (asyncio's `await
/// asyncio.sleep(0)`, `n` times).
pub async fn settle(n: usize) {
    for _ in 0..n {
        yield_now().await;
    }
}

/// Lets the loop run for `d` (so that anything wrongly scheduled in the meantime would show).
pub async fn settle_for(d: Duration) {
    sleep(d).await;
}

/// Yields (one loop iteration each time) until `cond` holds. Unbounded: run it under
/// [`run_bounded`](crate::run_bounded) or a watchdog.
pub async fn yield_until(mut cond: impl FnMut() -> bool) {
    while !cond() {
        yield_now().await;
    }
}

/// Sleeps 1 ms at a time until `cond` holds, so timers and I/O make progress in between; panics
/// naming `what` if that takes longer than [`HANG`].
pub async fn wait_until(what: &str, mut cond: impl FnMut() -> bool) {
    let deadline = Instant::now() + HANG;
    while !cond() {
        assert!(Instant::now() < deadline, "timed out waiting for: {what}");
        sleep(Duration::from_millis(1)).await;
    }
}
