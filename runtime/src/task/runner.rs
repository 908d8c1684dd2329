//! [`Runner`]: asyncio 3.11's `asyncio.Runner`, one loop for several top-level `run` calls.
//!
//! [`run`](crate::run) is `asyncio.run`: a new loop for one future, torn down after it. A
//! `Runner` keeps its loop between calls, so state that lives in the loop (tasks started by an
//! earlier call and still running, servers, a warm executor, a virtual clock's time) carries
//! over from one `run` to the next; [`Runner::close`], or dropping the runner, does the
//! teardown `evloop::run` does after its one future: cancel the tasks that are left (running
//! the loop until their futures are dropped), wait for the executor's jobs, close the loop.
//!
//! Unlike asyncio's `Runner`, it does not install a `SIGINT` handler that cancels the main
//! task (signals are a layer above tasks here): race the future with `signal::ctrl_c()` in a
//! `select!` for that.

use std::fmt;
use std::future::Future;

use crate::event_loop::error::{LoopError, LoopErrorKind};
use crate::event_loop::{Builder, EventLoop, LoopHandle};
use crate::task::cancel_leftover_tasks;
use crate::task::error::RunError;

/// One event loop for several top-level [`Runner::run`] calls, then closed (`asyncio.Runner`).
///
/// ```
/// use std::time::Duration;
///
/// // A virtual clock: the seconds below pass at once, and the count is exact.
/// let mut runner = evloop::event_loop::Builder::new().virtual_clock(true).runner()?;
/// // A task started by the first run keeps running during the second.
/// let ticks = std::rc::Rc::new(std::cell::Cell::new(0));
/// let t = ticks.clone();
/// runner.run(async move {
///     evloop::spawn(async move {
///         loop {
///             evloop::time::sleep(Duration::from_secs(1)).await;
///             t.set(t.get() + 1);
///         }
///     });
/// })?;
/// assert_eq!(ticks.get(), 0);
/// runner.run(evloop::time::sleep(Duration::from_millis(3500)))?;
/// assert_eq!(ticks.get(), 3, "the background task ran during the second run");
/// runner.close()?; // cancels the background task and closes the loop
/// assert!(runner.run(async {}).is_err(), "a closed runner runs nothing");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct Runner {
    /// `None` once closed.
    lp: Option<EventLoop>,
}

// The loop layer's `Builder` makes runners here, where they exist.
impl Builder {
    /// A [`Runner`] whose loop this builder makes (trace mode, a virtual clock, debug mode: the
    /// options asyncio's `Runner(debug=..., loop_factory=...)` takes).
    ///
    /// ```
    /// use std::time::Duration;
    ///
    /// let runner = evloop::event_loop::Builder::new().virtual_clock(true).runner()?;
    /// runner.run(evloop::time::sleep(Duration::from_secs(60)))?; // a virtual minute
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn runner(self) -> Result<Runner, LoopError> {
        Ok(Runner {
            lp: Some(self.build()?),
        })
    }
}

impl Runner {
    /// A runner with a default loop.
    ///
    /// ```
    /// let runner = evloop::task::Runner::new()?; // with asyncio.Runner() as runner:
    /// assert_eq!(runner.run(async { 1 })?, 1);
    /// assert_eq!(runner.run(async { 2 })?, 2); // the same loop both times
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn new() -> Result<Runner, LoopError> {
        Builder::new().runner()
    }

    /// Runs `fut` on the runner's loop until it completes and returns its output, as
    /// [`LoopHandle::run_until_complete`] does. Tasks it started and did not finish stay in
    /// the loop and run again during the next call. Errors: the runner is closed, the loop is
    /// already running on this thread (a `run` from inside a `run`), or the future's task
    /// panicked or was cancelled.
    ///
    /// ```
    /// let runner = evloop::task::Runner::new()?;
    /// let lp = runner.event_loop()?;
    /// let p = lp.create_future::<u8>();
    /// let waiter = runner.run({
    ///     let p = p.clone();
    ///     async move { evloop::spawn(p.wait()) } // a task that outlives this run
    /// })?;
    /// p.set_result(4).expect("pending");
    /// assert_eq!(runner.run(waiter)??, Ok(4)); // finished during the second run
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[track_caller]
    pub fn run<F>(&self, fut: F) -> Result<F::Output, RunError>
    where
        F: Future + 'static,
        F::Output: 'static,
    {
        match &self.lp {
            Some(lp) => lp.run_until_complete(fut),
            None => Err(RunError::Loop(LoopError::new(LoopErrorKind::Closed, "Runner::run"))),
        }
    }

    /// The runner's loop (asyncio's `Runner.event_loop()`); an error once the runner is closed.
    ///
    /// ```
    /// let mut runner = evloop::task::Runner::new()?;
    /// let lp = runner.event_loop()?;
    /// assert!(!lp.is_closed());
    /// runner.close()?;
    /// assert!(lp.is_closed());
    /// assert!(runner.event_loop().is_err());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn event_loop(&self) -> Result<LoopHandle, LoopError> {
        match &self.lp {
            Some(lp) => Ok(lp.handle()),
            None => Err(LoopError::new(LoopErrorKind::Closed, "Runner::event_loop")),
        }
    }

    /// Whether [`Runner::close`] ran.
    ///
    /// ```
    /// let mut runner = evloop::task::Runner::new()?;
    /// assert!(!runner.is_closed());
    /// runner.close()?;
    /// assert!(runner.is_closed());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn is_closed(&self) -> bool {
        self.lp.is_none()
    }

    /// Cancels the tasks still in the loop and runs it until their futures are dropped, waits
    /// for the executor's running jobs, and closes the loop (what [`run`](crate::run) does after
    /// its future). Idempotent. An error if called while the loop runs (from inside `run`) or
    /// if closing the loop's descriptors failed; the runner is closed either way except in the
    /// first case.
    ///
    /// ```
    /// let mut runner = evloop::task::Runner::new()?;
    /// let left = runner.run(async { evloop::spawn(std::future::pending::<()>()).task_ref() })?;
    /// runner.close()?; // cancels what is left, then closes the loop
    /// assert!(left.cancelled());
    /// runner.close()?; // idempotent
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn close(&mut self) -> Result<(), LoopError> {
        let Some(lp) = &self.lp else {
            return Ok(());
        };
        if lp.is_running() {
            return Err(LoopError::new(LoopErrorKind::Running, "Runner::close"));
        }
        cancel_leftover_tasks(lp);
        lp.shutdown_default_executor();
        let closed = lp.close();
        self.lp = None;
        closed
    }
}

impl Drop for Runner {
    /// Closes the runner as [`Runner::close`] does (errors are dropped).
    fn drop(&mut self) {
        let _ = self.close();
    }
}

impl fmt::Debug for Runner {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.lp {
            Some(lp) => write!(f, "Runner({lp:?})"),
            None => f.write_str("Runner(closed)"),
        }
    }
}
