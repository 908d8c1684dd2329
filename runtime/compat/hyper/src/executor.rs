//! [`EvloopExecutor`]: hyper's `Executor` as `evloop::spawn` on the running loop. hyper hands it
//! the background futures of a connection (HTTP/2's streams and its connection driver); they
//! need not be `Send` because they never leave the loop's thread.

use std::future::Future;

/// Spawns hyper's background futures as tasks of the running loop (no `Send` bound).
///
/// It holds nothing, so it is `Send + Sync + Copy`; `execute` must be called on a thread whose
/// loop is running (hyper calls it from the connection's own task), and panics elsewhere, as
/// `evloop::spawn` does.
///
/// ```
/// use hyper::rt::Executor;
/// use evloop_hyper::EvloopExecutor;
///
/// evloop::run(async {
///     let (tx, rx) = evloop::sync::oneshot::channel();
///     let not_send = std::rc::Rc::new(5); // an `Rc` in the future: fine here
///     EvloopExecutor.execute(async move {
///         let _ = tx.send(*not_send);
///     });
///     assert_eq!(rx.await.ok(), Some(5));
/// })?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, Copy, Default)]
pub struct EvloopExecutor;

impl EvloopExecutor {
    /// The executor (a unit value: `EvloopExecutor` itself works the same; `new` is spelled as
    /// hyper-util's `TokioExecutor::new()`, so a port changes only its imports).
    ///
    /// ```
    /// let exec = evloop_hyper::EvloopExecutor::new();
    /// let _builder = hyper::server::conn::http2::Builder::new(exec);
    /// ```
    pub const fn new() -> EvloopExecutor {
        EvloopExecutor
    }
}

impl<F> hyper::rt::Executor<F> for EvloopExecutor
where
    F: Future + 'static,
    F::Output: 'static,
{
    fn execute(&self, fut: F) {
        // Dropping the task handle detaches it: the loop keeps the task until it ends.
        drop(evloop::spawn(fut));
    }
}
