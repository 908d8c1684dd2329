//! Pausing the running loop's clock from inside it: tokio's `time::pause`, `time::resume` and
//! `time::advance` (tokio's `test-util`), over the loop's virtual clock.
//!
//! A loop built with a virtual clock (`Builder::virtual_clock`, `#[evloop::test(virtual_clock)]`,
//! or tokio's spelling `start_paused = true`) starts paused. [`pause`] freezes a real clock where it
//! stands; from then on loop time moves only by [`advance`], or by itself to the next timer's
//! deadline when the loop has nothing else to do (which is what makes an hour of sleeps run at
//! once). [`resume`] returns to the real clock, continuing from the paused time. The clock
//! (`event_loop/clock.rs`) does the arithmetic; this file is the public face, with tokio's
//! signatures and tokio's panics (these are test utilities whose misuse is a bug in the test).

use std::time::Duration;

use crate::event_loop::clock::duration_to_ns;
use crate::event_loop::with_running;

/// Freezes the running loop's clock where it stands (tokio's `time::pause`): from now on loop
/// time, [`Instant::now`](crate::time::Instant::now) and every timer of this loop move only when
/// [`advance`] says so, or when the loop is idle (it then jumps to the next timer's deadline).
///
/// Panics, as tokio's does, if the clock is already paused or if no evloop loop runs on this
/// thread. Each loop has its own clock, so on a multi-loop runtime this pauses the calling
/// loop's only (tokio refuses to pause its multi-thread runtime).
///
/// ```
/// use std::time::Duration;
/// use evloop::time::{self, Instant};
///
/// evloop::run(async {
///     time::pause();
///     let start = Instant::now();
///     time::sleep(Duration::from_secs(3600)).await; // idle: the clock jumps an hour at once
///     assert_eq!(start.elapsed(), Duration::from_secs(3600));
/// })?;
/// # Ok::<(), evloop::task::RunError>(())
/// ```
#[track_caller]
pub fn pause() {
    match with_running(|lp| lp.clock.pause()) {
        Some(true) => {}
        Some(false) => panic!("evloop::time::pause: the loop's clock is already paused (time is already frozen)"),
        None => panic!("evloop::time::pause: no evloop loop is running on this thread"),
    }
}

/// Unfreezes the running loop's clock (tokio's `time::resume`): loop time follows
/// CLOCK_MONOTONIC again, continuing from the paused time (it never goes back, so time that was
/// [`advance`]d stays ahead of CLOCK_MONOTONIC).
///
/// Panics, as tokio's does, if the clock is not paused or if no evloop loop runs on this thread.
///
/// ```
/// use std::time::Duration;
/// use evloop::time::{self, Instant};
///
/// evloop::run(async {
///     time::pause();
///     let start = Instant::now();
///     time::advance(Duration::from_secs(60)).await;
///     time::resume();
///     assert!(start.elapsed() >= Duration::from_secs(60)); // and counting, in real time
/// })?;
/// # Ok::<(), evloop::task::RunError>(())
/// ```
#[track_caller]
pub fn resume() {
    match with_running(|lp| lp.clock.resume()) {
        Some(true) => {}
        Some(false) => panic!("evloop::time::resume: the loop's clock is not paused (time is not frozen)"),
        None => panic!("evloop::time::resume: no evloop loop is running on this thread"),
    }
}

/// Moves the paused clock forward by `duration`, then yields once, so that the timers that fell
/// due have fired (their tasks are woken) when it returns (tokio's `time::advance`).
///
/// Exact: `Instant::now()` is `duration` later afterwards, to the nanosecond. Panics, as tokio's
/// does, if the clock is not paused or if no evloop loop runs on this thread.
///
/// ```
/// use std::time::Duration;
/// use evloop::time::{self, Instant};
///
/// let woke = evloop::event_loop::Builder::new().virtual_clock(true).run(async {
///     let sleeper = evloop::spawn(time::sleep(Duration::from_millis(10)));
///     let start = Instant::now();
///     time::advance(Duration::from_millis(4)).await;
///     assert_eq!(start.elapsed(), Duration::from_millis(4));
///     assert!(!sleeper.done());
///     time::advance(Duration::from_millis(6)).await;
///     sleeper.await.is_ok()
/// })?;
/// assert!(woke);
/// # Ok::<(), evloop::task::RunError>(())
/// ```
pub async fn advance(duration: Duration) {
    let moved = with_running(|lp| {
        if !lp.clock.is_virtual() {
            return false;
        }
        lp.clock
            .advance_to(lp.clock.now().saturating_add(duration_to_ns(duration)));
        true
    });
    match moved {
        Some(true) => {}
        Some(false) => panic!(
            "evloop::time::advance: the loop's clock is not paused (call evloop::time::pause() first, or run the \
             loop with a virtual clock: #[evloop::test(start_paused = true)])"
        ),
        None => panic!("evloop::time::advance: no evloop loop is running on this thread"),
    }
    // The next iteration expires the timers now due before this task runs again.
    crate::task::yield_now().await;
}
