//! [`LoopHandle::block_on`]: runs the loop until a future that may borrow from the caller's
//! stack completes, the mechanism under `evloop::task::block_on` and `Runner::block_on`.
//!
//! `run_until_complete` makes its future a task, and a task lives in the loop's task table, so
//! its future must be `'static`. `block_on` keeps the future on the caller's stack and polls it
//! there, between iterations, with the loop marked running (so `sleep`, `spawn` and every
//! `get_running_loop` inside it find this loop). Its waker sets a flag and schedules an empty
//! callback through the loop's remote queue: on the loop's own thread that is a `call_soon`,
//! from another thread an eventfd write; either way the next iteration does not block, and
//! the future is polled again after it.

use std::future::Future;
use std::pin::pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll, Wake, Waker};

use crate::event_loop::error::LoopError;
use crate::event_loop::loop_handle::LoopHandle;
use crate::event_loop::remote::RemoteHandle;
use crate::event_loop::running::RunGuard;

/// The waker of a `block_on` future.
struct BlockOnWaker {
    woken: AtomicBool,
    remote: RemoteHandle,
}

impl Wake for BlockOnWaker {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        if !self.woken.swap(true, Ordering::AcqRel) {
            // Only to keep the next iteration from blocking; a closed loop has nothing to run.
            let _ = self.remote.call_soon_threadsafe(|| ());
        }
    }
}

impl LoopHandle {
    /// Runs the loop until `fut` completes and returns its output; `fut` need not be
    /// `'static` (it may borrow locals), unlike
    /// [`run_until_complete`](LoopHandle::run_until_complete)'s, because it is not made a
    /// task: it is polled here, on the caller's stack, between iterations.
    ///
    /// What differs from `run_until_complete` follows from that: a panic in `fut` unwinds
    /// into the caller (the loop stays usable), `fut` is not in `all_tasks()` and has no task
    /// name, and `stop()` does not end the wait. Tasks `fut` spawned and left running stay on
    /// the loop, as after `run_until_complete`.
    ///
    /// ```
    /// let lp = evloop::event_loop::EventLoop::new()?;
    /// let mut total = 0; // borrowed by the future: no `'static` needed
    /// lp.block_on(async {
    ///     for i in 1..=3 {
    ///         total += evloop::spawn(async move { i }).await.unwrap();
    ///     }
    /// })?;
    /// assert_eq!(total, 6);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn block_on<F: Future>(&self, fut: F) -> Result<F::Output, LoopError> {
        let _running = RunGuard::enter(&self.inner, "block_on")?;
        let state = Arc::new(BlockOnWaker {
            woken: AtomicBool::new(true),
            remote: self.remote(),
        });
        let waker = Waker::from(state.clone());
        let mut cx = Context::from_waker(&waker);
        let mut fut = pin!(fut);
        loop {
            if state.woken.swap(false, Ordering::AcqRel) {
                if let Poll::Ready(out) = fut.as_mut().poll(&mut cx) {
                    return Ok(out);
                }
            }
            self.inner.run_once()?;
            // A `stop()` is for `run_forever`; it does not end this wait, and is not kept.
            self.inner.stopping.set(false);
        }
    }
}
