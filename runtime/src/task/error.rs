//! The task layer's errors: why a task gave no value ([`TaskError`]), why `run_until_complete`
//! returned no output ([`RunError`]: the loop's [`LoopError`] or the task's [`TaskError`]), and
//! the promise's two ([`PromiseError`] when awaiting or reading one, [`InvalidStateError`] when
//! completing one twice).
//!
//! The task handle, `run_until_complete` and the promise build them; callers match on them or
//! convert them into an `std::io::Error`. Each message names the task or promise involved; the
//! loop's own failures inside them ([`LoopError`], [`Panic`], [`WrongLoopError`]) are the loop
//! layer's types, wrapped as they are.

use std::fmt;
use std::io;

use crate::event_loop::error::{LoopError, Panic, WrongLoopError};

/// Why a task gave no value: it was cancelled, or it panicked.
///
/// ```
/// use evloop::task::TaskError;
///
/// evloop::run(async {
///     let t = evloop::spawn(std::future::pending::<()>());
///     t.cancel();
///     match t.await {
///         Err(TaskError::Cancelled { task }) => assert!(task.starts_with("Task-")),
///         other => unreachable!("{other:?}"),
///     }
/// })?;
/// # Ok::<(), evloop::task::RunError>(())
/// ```
#[derive(Debug)]
#[non_exhaustive]
pub enum TaskError {
    /// The task was cancelled: its future was dropped before it completed.
    Cancelled {
        /// The task's name, e.g. `Task-3`.
        task: String,
    },
    /// The task's future panicked; the panic was caught and stored here.
    Panicked {
        /// The task's name.
        task: String,
        /// The caught panic.
        panic: Panic,
    },
    /// The task's result was already taken by an earlier await or `try_result()`.
    ResultTaken {
        /// The task's name.
        task: String,
    },
    /// A task awaited its own handle, which could never complete.
    AwaitedItself {
        /// The task's name.
        task: String,
    },
    /// The task belongs to another event loop than the task that awaited it.
    WrongLoop(WrongLoopError),
}

impl TaskError {
    /// True for [`TaskError::Cancelled`].
    ///
    /// ```
    /// evloop::run(async {
    ///     let t = evloop::spawn(std::future::pending::<()>());
    ///     t.abort();
    ///     assert!(t.await.unwrap_err().is_cancelled()); // asyncio's CancelledError
    /// })?;
    /// # Ok::<(), evloop::task::RunError>(())
    /// ```
    pub fn is_cancelled(&self) -> bool {
        matches!(self, TaskError::Cancelled { .. })
    }

    /// True for [`TaskError::Panicked`].
    ///
    /// ```
    /// evloop::run(async {
    ///     let err = evloop::spawn(async { panic!("boom") }).await.unwrap_err();
    ///     assert!(err.is_panic() && !err.is_cancelled());
    /// })?;
    /// # Ok::<(), evloop::task::RunError>(())
    /// ```
    pub fn is_panic(&self) -> bool {
        matches!(self, TaskError::Panicked { .. })
    }

    /// The caught panic, for [`TaskError::Panicked`].
    ///
    /// ```
    /// evloop::run(async {
    ///     let err = evloop::spawn(async { panic!("boom") }).await.unwrap_err();
    ///     assert_eq!(err.panic().map(|p| p.message()), Some("boom"));
    /// })?;
    /// # Ok::<(), evloop::task::RunError>(())
    /// ```
    pub fn panic(&self) -> Option<&Panic> {
        match self {
            TaskError::Panicked { panic, .. } => Some(panic),
            _ => None,
        }
    }

    /// Consumes the error and returns the caught panic, for [`TaskError::Panicked`].
    ///
    /// ```
    /// evloop::run(async {
    ///     let err = evloop::spawn(async { panic!("owned") }).await.unwrap_err();
    ///     let panic = err.into_panic().expect("it panicked");
    ///     assert_eq!(panic.message(), "owned"); // e.g. to re-raise: resume_unwind(panic.take_payload()...)
    /// })?;
    /// # Ok::<(), evloop::task::RunError>(())
    /// ```
    pub fn into_panic(self) -> Option<Panic> {
        match self {
            TaskError::Panicked { panic, .. } => Some(panic),
            _ => None,
        }
    }
}

impl fmt::Display for TaskError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TaskError::Cancelled { task } => write!(f, "{task} was cancelled"),
            TaskError::Panicked { task, panic } => write!(f, "{task} {panic}"),
            TaskError::ResultTaken { task } => write!(f, "{task}: its result was already taken"),
            TaskError::AwaitedItself { task } => {
                write!(f, "{task} awaited its own handle (a task cannot await itself)")
            }
            TaskError::WrongLoop(e) => e.fmt(f),
        }
    }
}

impl std::error::Error for TaskError {}

impl From<TaskError> for io::Error {
    fn from(e: TaskError) -> io::Error {
        let kind = if e.is_cancelled() {
            io::ErrorKind::Interrupted
        } else {
            io::ErrorKind::Other
        };
        // Only the message crosses over: the payload stays with the caller's `TaskError`.
        io::Error::new(kind, e.to_string())
    }
}

/// The error of [`EventLoop::run_until_complete`](crate::event_loop::LoopHandle::run_until_complete) and
/// [`run`](crate::run): the loop could not run the future, or the future's task failed.
///
/// ```
/// use evloop::task::RunError;
///
/// match evloop::run(async { panic!("main failed") }) {
///     Err(RunError::Task(e)) => assert!(e.is_panic()), // the future's task failed
///     Err(RunError::Loop(e)) => unreachable!("the loop itself ran: {e}"),
///     other => unreachable!("{other:?}"),
/// }
/// ```
#[derive(Debug)]
#[non_exhaustive]
pub enum RunError {
    /// The loop refused or stopped (closed, already running, stopped early, OS error).
    Loop(LoopError),
    /// The future's task was cancelled or panicked.
    Task(TaskError),
}

impl RunError {
    /// The loop error, if that is what this is.
    ///
    /// ```
    /// use evloop::event_loop::LoopErrorKind;
    ///
    /// let lp = evloop::event_loop::EventLoop::new()?;
    /// lp.close()?;
    /// let err = lp.run_until_complete(async {}).unwrap_err();
    /// assert_eq!(err.as_loop_error().map(|e| e.kind()), Some(LoopErrorKind::Closed));
    /// assert!(err.as_task_error().is_none());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn as_loop_error(&self) -> Option<&LoopError> {
        match self {
            RunError::Loop(e) => Some(e),
            RunError::Task(_) => None,
        }
    }

    /// The task error, if that is what this is.
    ///
    /// ```
    /// let err = evloop::run(async { panic!("boom") }).unwrap_err();
    /// assert!(err.as_task_error().is_some_and(|e| e.is_panic()));
    /// ```
    pub fn as_task_error(&self) -> Option<&TaskError> {
        match self {
            RunError::Task(e) => Some(e),
            RunError::Loop(_) => None,
        }
    }
}

impl fmt::Display for RunError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RunError::Loop(e) => e.fmt(f),
            RunError::Task(e) => e.fmt(f),
        }
    }
}

impl std::error::Error for RunError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            RunError::Loop(e) => Some(e),
            RunError::Task(e) => Some(e),
        }
    }
}

impl From<LoopError> for RunError {
    fn from(e: LoopError) -> Self {
        RunError::Loop(e)
    }
}

impl From<TaskError> for RunError {
    fn from(e: TaskError) -> Self {
        RunError::Task(e)
    }
}

impl From<RunError> for io::Error {
    fn from(e: RunError) -> io::Error {
        match e {
            RunError::Loop(e) => e.into(),
            RunError::Task(e) => e.into(),
        }
    }
}

/// A promise operation that its state does not allow, such as setting a result twice
/// (asyncio's `InvalidStateError`).
///
/// ```
/// let lp = evloop::event_loop::EventLoop::new()?;
/// let p = lp.create_future::<()>();
/// p.cancel();
/// let err = p.set_result(()).unwrap_err(); // asyncio's InvalidStateError
/// assert_eq!((err.operation(), err.state()), ("set_result", "cancelled"));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InvalidStateError {
    pub(crate) op: &'static str,
    pub(crate) object: String,
    pub(crate) state: &'static str,
}

impl InvalidStateError {
    /// The operation that was refused, e.g. `"set_result"`.
    pub fn operation(&self) -> &'static str {
        self.op
    }

    /// The state the object was in: `"finished"`, `"cancelled"` or `"pending"`.
    pub fn state(&self) -> &'static str {
        self.state
    }
}

impl fmt::Display for InvalidStateError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {} is already {}", self.op, self.object, self.state)
    }
}

impl std::error::Error for InvalidStateError {}

impl From<InvalidStateError> for io::Error {
    fn from(e: InvalidStateError) -> io::Error {
        io::Error::other(e)
    }
}

/// Awaiting a promise that was cancelled (asyncio's `CancelledError`), or reading the result of
/// one that is not done yet.
///
/// ```
/// use evloop::task::PromiseError;
///
/// let lp = evloop::event_loop::EventLoop::new()?;
/// let p = lp.create_future::<u8>();
/// assert!(matches!(p.result(), Err(PromiseError::Pending { .. })));
/// p.cancel();
/// assert!(p.result().unwrap_err().is_cancelled());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum PromiseError {
    /// The promise was cancelled.
    Cancelled {
        /// The promise, e.g. `Promise#4`.
        promise: String,
    },
    /// `result()` on a promise that has no result yet.
    Pending {
        /// The promise, e.g. `Promise#4`.
        promise: String,
    },
    /// The promise belongs to another event loop than the task that awaited it.
    WrongLoop(WrongLoopError),
}

impl PromiseError {
    /// True for [`PromiseError::Cancelled`].
    pub fn is_cancelled(&self) -> bool {
        matches!(self, PromiseError::Cancelled { .. })
    }
}

impl fmt::Display for PromiseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PromiseError::Cancelled { promise } => write!(f, "{promise} was cancelled"),
            PromiseError::Pending { promise } => write!(f, "{promise} has no result yet"),
            PromiseError::WrongLoop(e) => e.fmt(f),
        }
    }
}

impl std::error::Error for PromiseError {}

impl From<PromiseError> for io::Error {
    fn from(e: PromiseError) -> io::Error {
        let kind = match &e {
            PromiseError::Cancelled { .. } => io::ErrorKind::Interrupted,
            PromiseError::Pending { .. } => io::ErrorKind::WouldBlock,
            PromiseError::WrongLoop(_) => io::ErrorKind::Other,
        };
        io::Error::new(kind, e)
    }
}
