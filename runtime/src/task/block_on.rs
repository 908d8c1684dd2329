//! [`block_on`]: `run` for a future that borrows (tokio's `Runtime::block_on`), for blocking
//! facades over async code: a new loop polls the future on the caller's stack
//! ([`LoopHandle::block_on`](crate::event_loop::LoopHandle::block_on)) until it completes, then is
//! torn down as `run` tears its loop down. `Builder::block_on` and `Runner::block_on` are the
//! same for a configured loop and for a loop kept between calls.

use std::future::Future;

use crate::event_loop::{Builder, EventLoop};
use crate::task::cancel_leftover_tasks;
use crate::task::error::RunError;
use crate::task::runner::Runner;

/// Runs `fut` to completion on a new loop on this thread and returns its output, like
/// [`run`](crate::run), but `fut` need not be `'static`: it may borrow the caller's locals.
///
/// How it differs from `run`: `fut` is not a task but is polled on the caller's stack, so a
/// panic in it unwinds into the caller (with `run` it is caught and returned as
/// `TaskError::Panicked`), and it has no task name or entry in `all_tasks()`. The teardown is
/// `run`'s: the tasks it left are cancelled, the executor joined, the loop closed. The error is
/// a loop error only (`RunError::Loop`: the loop could not be created, or its poll failed).
///
/// Called while a loop runs on this thread (a blocking facade called from async code), it
/// returns `LoopErrorKind::AnotherLoopRunning` rather than block that loop; it panics only if
/// `fut` does.
///
/// ```
/// /// A blocking facade: an async function's caller needs no loop of its own.
/// fn word_count(text: &str) -> usize {
///     evloop::task::block_on(async {
///         evloop::task::yield_now().await;
///         text.split_whitespace().count() // `text` is borrowed: no 'static bound
///     })
///     .expect("a new loop")
/// }
///
/// assert_eq!(word_count("one two three"), 3);
/// ```
pub fn block_on<F: Future>(fut: F) -> Result<F::Output, RunError> {
    Builder::new().block_on(fut)
}

// The loop layer's `Builder` gets its `block_on` here, beside its `run`.
impl Builder {
    /// [`block_on`] with a configured loop (a virtual clock, trace mode, ...).
    ///
    /// ```
    /// use std::time::Duration;
    ///
    /// let mut slept = false;
    /// evloop::event_loop::Builder::new().virtual_clock(true).block_on(async {
    ///     evloop::time::sleep(Duration::from_secs(60)).await;
    ///     slept = true;
    /// })?;
    /// assert!(slept);
    /// # Ok::<(), evloop::task::RunError>(())
    /// ```
    pub fn block_on<F: Future>(self, fut: F) -> Result<F::Output, RunError> {
        let lp: EventLoop = self.build()?;
        let result = lp.block_on(fut);
        cancel_leftover_tasks(&lp);
        lp.shutdown_default_executor();
        lp.close()?;
        Ok(result?)
    }
}

impl Runner {
    /// [`block_on`] on the runner's loop, kept between calls (tokio's `Runtime::block_on`):
    /// a blocking facade keeps a `Runner` and blocks on each call's future.
    ///
    /// ```
    /// struct Client {
    ///     runner: evloop::task::Runner,
    ///     sent: Vec<String>,
    /// }
    ///
    /// impl Client {
    ///     fn send(&mut self, msg: &str) -> usize {
    ///         let sent = &mut self.sent; // borrowed by the future
    ///         self.runner
    ///             .block_on(async {
    ///                 evloop::task::yield_now().await;
    ///                 sent.push(msg.to_string());
    ///                 sent.len()
    ///             })
    ///             .expect("the runner is open")
    ///     }
    /// }
    ///
    /// let mut c = Client { runner: evloop::task::Runner::new()?, sent: Vec::new() };
    /// assert_eq!(c.send("a"), 1);
    /// assert_eq!(c.send("b"), 2);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn block_on<F: Future>(&self, fut: F) -> Result<F::Output, RunError> {
        Ok(self.event_loop()?.block_on(fut)?)
    }
}
