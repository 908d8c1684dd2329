//! Error types of the loop, tasks and promises.
//!
//! Every failure the runtime can report is a value, never a panic: a closed loop refuses work with
//! a [`LoopError`], awaiting a task that was cancelled or panicked gives a [`TaskError`], setting a
//! promise twice gives an [`InvalidStateError`], and [`RunError`] joins the first two for
//! `run_until_complete`. Each message names the operation and the object involved, so a log line
//! alone says what went wrong where. All of them convert into `std::io::Error` for code that wants
//! a single error type.

use std::any::Any;
use std::fmt;
use std::io;

/// What went wrong with a loop operation; see [`LoopError`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum LoopErrorKind {
    /// The loop was closed: it accepts no new work.
    Closed,
    /// This loop is already running (a nested `run_*` call would hang or corrupt its state).
    AlreadyRunning,
    /// Another event loop is running on this thread.
    AnotherLoopRunning,
    /// The operation needs a stopped loop (`close()` on a running loop).
    Running,
    /// `run_until_complete` returned because the loop was stopped before the future completed.
    Stopped,
    /// A free function such as `get_running_loop()` was called with no loop running on this thread.
    NoRunningLoop,
    /// An operating-system call failed (creating the loop, polling, registering an fd).
    Io,
    /// A configuration value is out of its range (a [`Builder`](crate::Builder) option).
    InvalidConfig,
}

/// An error from an [`EventLoop`](crate::EventLoop) operation.
///
/// The message names the operation (`"call_soon"`, `"run_forever"`, ...) and, for I/O errors, the
/// fd and the underlying OS error.
#[derive(Debug)]
pub struct LoopError {
    kind: LoopErrorKind,
    op: &'static str,
    io: Option<io::Error>,
}

impl LoopError {
    pub(crate) fn new(kind: LoopErrorKind, op: &'static str) -> Self {
        LoopError { kind, op, io: None }
    }

    pub(crate) fn io(op: &'static str, err: io::Error) -> Self {
        LoopError {
            kind: LoopErrorKind::Io,
            op,
            io: Some(err),
        }
    }

    /// A configuration error: `detail` says which value and why.
    pub(crate) fn invalid_config(op: &'static str, detail: String) -> Self {
        LoopError {
            kind: LoopErrorKind::InvalidConfig,
            op,
            io: Some(io::Error::new(io::ErrorKind::InvalidInput, detail)),
        }
    }

    /// What kind of failure this is.
    pub fn kind(&self) -> LoopErrorKind {
        self.kind
    }

    /// The loop operation that failed, e.g. `"call_soon"`.
    pub fn operation(&self) -> &'static str {
        self.op
    }

    /// The OS error behind a [`LoopErrorKind::Io`] failure.
    pub fn io_error(&self) -> Option<&io::Error> {
        self.io.as_ref()
    }
}

impl fmt::Display for LoopError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let what = match self.kind {
            LoopErrorKind::Closed => "the event loop is closed",
            LoopErrorKind::AlreadyRunning => "this event loop is already running",
            LoopErrorKind::AnotherLoopRunning => "another event loop is running on this thread",
            LoopErrorKind::Running => "cannot do this while the event loop is running",
            LoopErrorKind::Stopped => "the event loop stopped before the future completed",
            LoopErrorKind::NoRunningLoop => "no event loop is running on this thread",
            LoopErrorKind::Io => "operating-system error",
            LoopErrorKind::InvalidConfig => "invalid configuration",
        };
        match &self.io {
            Some(e) => write!(f, "{}: {what}: {e}", self.op),
            None => write!(f, "{}: {what}", self.op),
        }
    }
}

impl std::error::Error for LoopError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.io.as_ref().map(|e| e as _)
    }
}

impl From<LoopError> for io::Error {
    fn from(e: LoopError) -> io::Error {
        let kind = match e.kind {
            LoopErrorKind::Io | LoopErrorKind::InvalidConfig => {
                e.io.as_ref().map_or(io::ErrorKind::Other, |e| e.kind())
            }
            _ => io::ErrorKind::Other,
        };
        io::Error::new(kind, e)
    }
}

/// A panic caught by the loop: its message and, when it is still there, the original payload.
///
/// The payload can be re-raised with [`std::panic::resume_unwind`] by code that wants the panic
/// to continue past the loop.
pub struct Panic {
    message: String,
    payload: Option<Box<dyn Any + Send>>,
}

impl Panic {
    pub(crate) fn from_payload(payload: Box<dyn Any + Send>) -> Self {
        let message = if let Some(s) = payload.downcast_ref::<&'static str>() {
            (*s).to_string()
        } else if let Some(s) = payload.downcast_ref::<String>() {
            s.clone()
        } else {
            "a panic with a non-string payload".to_string()
        };
        Panic {
            message,
            payload: Some(payload),
        }
    }

    /// The panic message (`panic!("...")`'s text).
    pub fn message(&self) -> &str {
        &self.message
    }

    /// Takes the original payload, e.g. to re-raise it with `std::panic::resume_unwind`.
    pub fn take_payload(&mut self) -> Option<Box<dyn Any + Send>> {
        self.payload.take()
    }
}

impl fmt::Debug for Panic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Panic").field("message", &self.message).finish()
    }
}

impl fmt::Display for Panic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "panicked: {}", self.message)
    }
}

/// Why a task gave no value: it was cancelled, or it panicked.
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
    pub fn is_cancelled(&self) -> bool {
        matches!(self, TaskError::Cancelled { .. })
    }

    /// True for [`TaskError::Panicked`].
    pub fn is_panic(&self) -> bool {
        matches!(self, TaskError::Panicked { .. })
    }

    /// The caught panic, for [`TaskError::Panicked`].
    pub fn panic(&self) -> Option<&Panic> {
        match self {
            TaskError::Panicked { panic, .. } => Some(panic),
            _ => None,
        }
    }

    /// Consumes the error and returns the caught panic, for [`TaskError::Panicked`].
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
        // The panic payload is `Send` but not `Sync`, so only the message crosses over.
        io::Error::new(kind, e.to_string())
    }
}

/// The error of [`EventLoop::run_until_complete`](crate::LoopHandle::run_until_complete) and
/// [`run`](crate::run): the loop could not run the future, or the future's task failed.
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
    pub fn as_loop_error(&self) -> Option<&LoopError> {
        match self {
            RunError::Loop(e) => Some(e),
            RunError::Task(_) => None,
        }
    }

    /// The task error, if that is what this is.
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

/// An object that belongs to one event loop was awaited from a task of another: asyncio's
/// `RuntimeError` ("Task got Future attached to a different loop", "... is bound to a
/// different event loop").
///
/// Two loops can live on one thread, but only one runs at a time: a task of the running loop
/// that waited for something only the other loop can complete (a promise whose result the
/// other loop's callbacks set, a lock its tasks hold, a socket its reactor polls) would wait
/// until that loop runs again, which while this one runs is never. So the wait fails at once,
/// naming both loops. See [`LoopHandle::id`](crate::LoopHandle::id) and the book's "What
/// belongs to a loop" (docs/01-the-event-loop.md) for what is bound and what is not.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct WrongLoopError {
    pub(crate) op: &'static str,
    pub(crate) object: String,
    pub(crate) bound: u64,
    pub(crate) running: u64,
}

impl WrongLoopError {
    /// The operation that was refused, e.g. `"await"`.
    pub fn operation(&self) -> &'static str {
        self.op
    }

    /// The object, e.g. `Promise#3` or `Task-2`.
    pub fn object(&self) -> &str {
        &self.object
    }

    /// The id of the loop the object belongs to.
    pub fn bound_loop(&self) -> u64 {
        self.bound
    }

    /// The id of the loop whose task tried to wait for it.
    pub fn running_loop(&self) -> u64 {
        self.running
    }
}

impl fmt::Display for WrongLoopError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}: {} belongs to event loop #{} and cannot be awaited from a task of event loop #{}              (only its own loop can complete it, and that loop is not running)",
            self.op, self.object, self.bound, self.running
        )
    }
}

impl std::error::Error for WrongLoopError {}

impl From<WrongLoopError> for io::Error {
    fn from(e: WrongLoopError) -> io::Error {
        io::Error::other(e)
    }
}

/// A promise operation that its state does not allow, such as setting a result twice
/// (asyncio's `InvalidStateError`).
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

/// An OS error together with the operation and object it concerns, e.g.
/// `connect(127.0.0.1:9): Connection refused (os error 111)`.
///
/// evloop returns it inside an `io::Error` of the same [`io::ErrorKind`], so `?` and `kind()`
/// work as usual; [`os_error`] digs the errno back out.
#[derive(Debug)]
pub struct OpError {
    context: String,
    source: io::Error,
}

impl OpError {
    /// The operation and object, e.g. `connect(127.0.0.1:9)`.
    pub fn context(&self) -> &str {
        &self.context
    }

    /// The underlying error.
    pub fn io_error(&self) -> &io::Error {
        &self.source
    }
}

impl fmt::Display for OpError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.context, self.source)
    }
}

impl std::error::Error for OpError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.source)
    }
}

/// Wraps `e` with `context` (the operation and what it was applied to), keeping its kind.
pub(crate) fn with_context(context: String, e: io::Error) -> io::Error {
    io::Error::new(e.kind(), OpError { context, source: e })
}

/// The errno behind `e`, looking through evloop's [`OpError`] context (which `raw_os_error()`
/// alone cannot see).
pub fn os_error(e: &io::Error) -> Option<i32> {
    if let Some(code) = e.raw_os_error() {
        return Some(code);
    }
    let inner = e.get_ref()?.downcast_ref::<OpError>()?;
    os_error(&inner.source)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn context_keeps_kind_and_errno_and_names_the_operation() {
        let e = with_context("connect(127.0.0.1:9)".into(), io::Error::from_raw_os_error(111));
        assert_eq!(e.kind(), io::ErrorKind::ConnectionRefused);
        assert_eq!(os_error(&e), Some(111));
        assert!(e.to_string().starts_with("connect(127.0.0.1:9): "), "{e}");
        let twice = with_context("open_connection(localhost)".into(), e);
        assert_eq!(os_error(&twice), Some(111));
        assert_eq!(os_error(&io::Error::other("no errno")), None);
    }
}
