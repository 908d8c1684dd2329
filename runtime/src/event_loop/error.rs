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
///
/// ```
/// use evloop::LoopErrorKind;
///
/// let lp = evloop::EventLoop::new()?;
/// lp.close()?;
/// let err = lp.run_until_complete(async {}).unwrap_err();
/// assert_eq!(err.as_loop_error().map(|e| e.kind()), Some(LoopErrorKind::Closed));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
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
///
/// ```
/// let err = evloop::get_running_loop().unwrap_err();
/// assert_eq!(err.operation(), "get_running_loop");
/// assert!(err.to_string().contains("get_running_loop"), "{err}"); // the message names the call
///
/// fn needs_a_loop() -> std::io::Result<()> {
///     let _lp = evloop::get_running_loop()?; // a LoopError converts into an io::Error
///     Ok(())
/// }
/// assert!(needs_a_loop().is_err());
/// ```
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
    ///
    /// ```
    /// use evloop::LoopErrorKind;
    ///
    /// let lp = evloop::EventLoop::new()?;
    /// let h = lp.handle();
    /// let nested = lp.run_until_complete(async move { h.run_forever() })?; // a run inside the run
    /// assert_eq!(nested.unwrap_err().kind(), LoopErrorKind::AlreadyRunning); // an error, not a hang
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn kind(&self) -> LoopErrorKind {
        self.kind
    }

    /// The loop operation that failed, e.g. `"call_soon"`.
    ///
    /// ```
    /// let lp = evloop::EventLoop::new()?;
    /// lp.close()?;
    /// assert_eq!(lp.call_soon(|| ()).unwrap_err().operation(), "call_soon");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn operation(&self) -> &'static str {
        self.op
    }

    /// The OS error behind a [`LoopErrorKind::Io`] failure.
    ///
    /// ```
    /// let err = evloop::get_running_loop().unwrap_err();
    /// assert!(err.io_error().is_none()); // only for LoopErrorKind::Io
    /// ```
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
///
/// ```
/// let err = evloop::run(async { panic!("inside a task") }).unwrap_err();
/// let panic = err.as_task_error().and_then(|e| e.panic()).expect("a panic");
/// assert_eq!(panic.message(), "inside a task");
/// ```
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
    ///
    /// ```
    /// let r = evloop::run(async {
    ///     let t = evloop::spawn(async { panic!("code {}", 42) });
    ///     t.await.unwrap_err().into_panic()
    /// })?;
    /// assert_eq!(r.map(|p| p.message().to_string()).as_deref(), Some("code 42"));
    /// # Ok::<(), evloop::RunError>(())
    /// ```
    pub fn message(&self) -> &str {
        &self.message
    }

    /// Takes the original payload, e.g. to re-raise it with `std::panic::resume_unwind`.
    ///
    /// ```
    /// let mut panic = evloop::run(async {
    ///     evloop::spawn(async { std::panic::panic_any(7u32) }).await.unwrap_err().into_panic()
    /// })?
    /// .expect("a panic");
    /// let payload = panic.take_payload().expect("kept"); // resume_unwind(payload) would re-raise it
    /// assert_eq!(payload.downcast_ref::<u32>(), Some(&7));
    /// assert!(panic.take_payload().is_none()); // taken once
    /// # Ok::<(), evloop::RunError>(())
    /// ```
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
///
/// ```
/// use evloop::TaskError;
///
/// evloop::run(async {
///     let t = evloop::spawn(std::future::pending::<()>());
///     t.cancel();
///     match t.await {
///         Err(TaskError::Cancelled { task }) => assert!(task.starts_with("Task-")),
///         other => unreachable!("{other:?}"),
///     }
/// })?;
/// # Ok::<(), evloop::RunError>(())
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
    /// # Ok::<(), evloop::RunError>(())
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
    /// # Ok::<(), evloop::RunError>(())
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
    /// # Ok::<(), evloop::RunError>(())
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
    /// # Ok::<(), evloop::RunError>(())
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
        // The panic payload is `Send` but not `Sync`, so only the message crosses over.
        io::Error::new(kind, e.to_string())
    }
}

/// The error of [`EventLoop::run_until_complete`](crate::LoopHandle::run_until_complete) and
/// [`run`](crate::run): the loop could not run the future, or the future's task failed.
///
/// ```
/// use evloop::RunError;
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
    /// use evloop::LoopErrorKind;
    ///
    /// let lp = evloop::EventLoop::new()?;
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
///
/// ```
/// use evloop::{EventLoop, PromiseError};
///
/// let (a, b) = (EventLoop::new()?, EventLoop::new()?);
/// let p = a.create_future::<u8>(); // bound to loop `a`
/// let r = b.run_until_complete(p.wait())?; // awaited from a task of `b`
/// match r {
///     Err(PromiseError::WrongLoop(e)) => {
///         assert_eq!((e.bound_loop(), e.running_loop()), (a.id(), b.id()));
///     }
///     other => unreachable!("{other:?}"),
/// }
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct WrongLoopError {
    pub(crate) op: &'static str,
    pub(crate) object: String,
    pub(crate) bound: u64,
    pub(crate) running: u64,
}

impl WrongLoopError {
    /// The one wrong-loop rule: `Err` when a loop other than `bound` runs on this thread (no
    /// running loop is fine: nothing can wait then). `object` names what was waited on; it is
    /// only formatted for the error.
    /// (Inlined into every parking path, the error built out of line: the check itself is a
    /// thread-local load and a compare, on the hot path of every stream read and write.)
    #[inline(always)]
    pub(crate) fn check(bound: u64, op: &'static str, object: impl FnOnce() -> String) -> Result<(), WrongLoopError> {
        match crate::event_loop::running_loop_id() {
            Some(running) if running != bound => Err(Self::refused(op, object, bound, running)),
            _ => Ok(()),
        }
    }

    #[cold]
    #[inline(never)]
    fn refused(op: &'static str, object: impl FnOnce() -> String, bound: u64, running: u64) -> WrongLoopError {
        WrongLoopError {
            op,
            object: object(),
            bound,
            running,
        }
    }

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
///
/// ```
/// let lp = evloop::EventLoop::new()?;
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
/// use evloop::PromiseError;
///
/// let lp = evloop::EventLoop::new()?;
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

/// An OS error together with the operation and object it concerns, e.g.
/// `connect(127.0.0.1:9): Connection refused (os error 111)`.
///
/// evloop returns it inside an `io::Error` of the same [`io::ErrorKind`], so `?` and `kind()`
/// work as usual; [`os_error`] digs the errno back out.
///
/// ```
/// use std::net::SocketAddr;
/// use evloop::net::{Domain, SockAddr, SockType, Socket, TcpStream};
/// use evloop::OpError;
///
/// evloop::run(async {
///     // A port that is bound but not listening refuses connections.
///     let not_listening = Socket::new(Domain::Inet, SockType::Stream)?;
///     not_listening.bind(&SockAddr::Inet(SocketAddr::from(([127, 0, 0, 1], 0))))?;
///     let addr = not_listening.local_addr()?.as_inet().expect("an IP address");
///     let err = TcpStream::connect(addr).await.unwrap_err();
///     assert_eq!(err.kind(), std::io::ErrorKind::ConnectionRefused); // kind() as usual
///     let op = err.get_ref().and_then(|e| e.downcast_ref::<OpError>()).expect("with context");
///     assert_eq!(op.context(), format!("connect({addr})"));
///     assert_eq!(op.io_error().raw_os_error(), Some(111)); // ECONNREFUSED
///     Ok::<(), std::io::Error>(())
/// })??;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub struct OpError {
    context: String,
    source: io::Error,
}

impl OpError {
    /// The operation and object, e.g. `connect(127.0.0.1:9)`.
    ///
    /// ```
    /// use evloop::net::UdpSocket;
    /// use evloop::OpError;
    ///
    /// evloop::run(async {
    ///     let first = UdpSocket::bind("127.0.0.1:0").await?;
    ///     let taken = first.local_addr()?;
    ///     let err = UdpSocket::bind(taken).await.unwrap_err();
    ///     let op = err.get_ref().and_then(|e| e.downcast_ref::<OpError>()).expect("with context");
    ///     assert_eq!(op.context(), format!("bind({taken})")); // the call and its address
    ///     Ok::<(), std::io::Error>(())
    /// })??;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
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
///
/// ```
/// use evloop::net::UdpSocket;
///
/// evloop::run(async {
///     let first = UdpSocket::bind("127.0.0.1:0").await?;
///     let err = UdpSocket::bind(first.local_addr()?).await.unwrap_err(); // the port is taken
///     assert_eq!(evloop::os_error(&err), Some(98)); // EADDRINUSE, through the added context
///     Ok::<(), std::io::Error>(())
/// })??;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
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
