//! Building loops and running them without hanging. Each constructor says what it builds, so a
//! test reads the same loop under the same name in every file: [`new_loop`] (the defaults),
//! [`warm_loop`] (the defaults, one iteration already run), [`virtual_loop`] (a virtual clock),
//! [`loop_with`] (any other options). The runners turn a hang into a failure.

use std::future::Future;
use std::time::Duration;

use evloop::{
    event_loop::{Builder, EventLoop, LoopHandle},
    time::timeout,
};

use crate::host::under_valgrind;

/// Generous bound for anything that should finish at once: a hang fails the test instead.
pub const HANG: Duration = Duration::from_secs(30);

/// A loop with the default options.
///
/// Panics if the loop cannot be created (out of fds, say).
pub fn new_loop() -> EventLoop {
    EventLoop::new().expect("a new loop")
}

/// A loop with the default options that has already run one non-blocking iteration
/// ([`spin_once`]): its one-time work (the `epoll_pwait2` probe, buffers) is done, so syscall
/// counts and fault injections that follow see only what the test does.
pub fn warm_loop() -> EventLoop {
    let lp = new_loop();
    spin_once(&lp);
    lp
}

/// A loop on a virtual clock: time moves only when the loop is idle, straight to the next
/// deadline, so timeouts expire at once and in deadline order however slow the machine is.
pub fn virtual_loop() -> EventLoop {
    loop_with(Builder::new().virtual_clock(true))
}

/// A loop built with the options of `builder` (e.g. `Builder::new().accept_retry_delay(..)`).
///
/// Panics if the builder refuses its options.
pub fn loop_with(builder: Builder) -> EventLoop {
    builder.build().expect("the loop's options are valid")
}

/// `run_until_complete` with a generous bound ([`HANG`], ten times that under valgrind, which
/// runs code tens of times slower), so a bug is a failure and not a hang.
///
/// Panics if the loop fails to run the future or the future does not complete within the bound.
pub fn run_bounded<F>(lp: &LoopHandle, fut: F) -> F::Output
where
    F: Future + 'static,
    F::Output: 'static,
{
    let bound = if under_valgrind() { HANG * 10 } else { HANG };
    lp.run_until_complete(timeout(bound, fut))
        .expect("the loop ran the future")
        .expect("the future completed within the hang bound")
}

/// Runs `fut` on a [`new_loop`] with [`run_bounded`]; the loop is dropped afterwards.
pub fn run_on_new_loop<F>(fut: F) -> F::Output
where
    F: Future + 'static,
    F::Output: 'static,
{
    let lp = new_loop();
    run_bounded(&lp, fut)
}

/// One loop iteration, refusing to block forever when nothing is ready.
///
/// Panics (instead of hanging) when the loop has neither a ready callback, nor a timer, nor
/// work waiting in its remote queue.
pub fn run_one(lp: &LoopHandle) {
    let s = lp.stats();
    assert!(
        s.ready > 0 || s.timers > 0 || s.remote_pending,
        "run_one would block forever: nothing ready, no timers, no remote work ({s:?})"
    );
    lp.run_once().unwrap();
}

/// Runs one iteration without blocking: a no-op callback keeps the poll timeout at zero.
///
/// Also the warm-up before counting syscalls: the loop's one-time work (the `epoll_pwait2`
/// probe, buffer allocation) is done by the first iteration.
pub fn spin_once(lp: &LoopHandle) {
    lp.call_soon(|| {}).unwrap();
    lp.run_once().unwrap();
}
