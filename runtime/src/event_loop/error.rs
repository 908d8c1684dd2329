//! The loop layer's errors: [`LoopError`] (with its [`LoopErrorKind`]) for a loop operation the
//! loop refused or the OS failed, [`Panic`] for a panic the loop caught, [`WrongLoopError`] for a
//! wait on an object of another loop, and `FdError`, the context of the loop's own fd calls.
//!
//! Every failure the runtime can report is a value, never a panic. Each message names the
//! operation and the object involved, so a log line alone says what went wrong where, and each
//! converts into `std::io::Error` for code that wants a single error type. The layers above
//! keep their own errors (`task/error.rs`, `io/error.rs`, `sync/error.rs`, ...) and wrap these.

use std::any::Any;
use std::fmt;
use std::io;
use std::os::fd::RawFd;
use std::sync::{Mutex, PoisonError};

/// What went wrong with a loop operation; see [`LoopError`].
///
/// ```
/// use evloop::event_loop::LoopErrorKind;
///
/// let lp = evloop::event_loop::EventLoop::new()?;
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
    /// A configuration value is out of its range (a [`Builder`](crate::event_loop::Builder) option).
    InvalidConfig,
}

/// An error from an [`EventLoop`](crate::event_loop::EventLoop) operation.
///
/// The message names the operation (`"call_soon"`, `"run_forever"`, ...) and, for I/O errors, the
/// fd and the underlying OS error.
///
/// ```
/// let err = evloop::event_loop::get_running_loop().unwrap_err();
/// assert_eq!(err.operation(), "get_running_loop");
/// assert!(err.to_string().contains("get_running_loop"), "{err}"); // the message names the call
///
/// fn needs_a_loop() -> std::io::Result<()> {
///     let _lp = evloop::event_loop::get_running_loop()?; // a LoopError converts into an io::Error
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
    /// use evloop::event_loop::LoopErrorKind;
    ///
    /// let lp = evloop::event_loop::EventLoop::new()?;
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
    /// let lp = evloop::event_loop::EventLoop::new()?;
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
    /// let err = evloop::event_loop::get_running_loop().unwrap_err();
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
/// `Send + Sync`, like every error of the crate (so the errors that carry it convert with `?`
/// into a `Box<dyn Error + Send + Sync>`): the payload is only `Send`, so it sits behind a
/// mutex that only [`take_payload`](Panic::take_payload) reaches, through `&mut self`.
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
    payload: Mutex<Option<Box<dyn Any + Send>>>,
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
            payload: Mutex::new(Some(payload)),
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
    /// # Ok::<(), evloop::task::RunError>(())
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
    /// # Ok::<(), evloop::task::RunError>(())
    /// ```
    pub fn take_payload(&mut self) -> Option<Box<dyn Any + Send>> {
        // Never locked elsewhere, so never poisoned; `get_mut` takes no lock at all.
        self.payload.get_mut().unwrap_or_else(PoisonError::into_inner).take()
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

/// An object that belongs to one event loop was awaited from a task of another: asyncio's
/// `RuntimeError` ("Task got Future attached to a different loop", "... is bound to a
/// different event loop").
///
/// Two loops can live on one thread, but only one runs at a time: a task of the running loop
/// that waited for something only the other loop can complete (a promise whose result the
/// other loop's callbacks set, a lock its tasks hold, a socket its reactor polls) would wait
/// until that loop runs again, which while this one runs is never. So the wait fails at once,
/// naming both loops. See [`LoopHandle::id`](crate::event_loop::LoopHandle::id) and the book's "What
/// belongs to a loop" (docs/01-the-event-loop.md) for what is bound and what is not.
///
/// ```
/// use evloop::{event_loop::EventLoop, task::PromiseError};
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
    op: &'static str,
    object: String,
    bound: u64,
    running: u64,
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
            Some(running) if running != bound => Err(Self::new(op, object, bound, running)),
            _ => Ok(()),
        }
    }

    /// The error for a wait of a task of loop `running` on `object`, which belongs to loop
    /// `bound` (for the callers that applied the rule themselves: the sync layer's binding).
    #[cold]
    #[inline(never)]
    pub(crate) fn new(op: &'static str, object: impl FnOnce() -> String, bound: u64, running: u64) -> WrongLoopError {
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
            "{}: {} belongs to event loop #{} and cannot be awaited from a task of event loop #{} \
             (only its own loop can complete it, and that loop is not running)",
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

/// An OS error of one of the loop's own fd calls (`add_reader`, `add_writer`, the edge-triggered
/// registration of sockets and `AsyncFd`), with the operation and the fd:
/// `add_reader(fd 7): Bad file descriptor (os error 9)`. The layers above give their own calls
/// `io`'s `OpError`; `os_error` finds the errno behind either.
#[derive(Debug)]
pub(crate) struct FdError {
    op: &'static str,
    fd: RawFd,
    source: io::Error,
}

impl FdError {
    /// Wraps `e`, the error of `op` on `fd`, keeping its kind.
    pub(crate) fn wrap(op: &'static str, fd: RawFd, e: io::Error) -> io::Error {
        io::Error::new(e.kind(), FdError { op, fd, source: e })
    }

    /// The underlying error.
    pub(crate) fn io_error(&self) -> &io::Error {
        &self.source
    }
}

impl fmt::Display for FdError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}(fd {}): {}", self.op, self.fd, self.source)
    }
}

impl std::error::Error for FdError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.source)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_wrong_loop_message_names_the_operation_the_object_and_both_loops() {
        let e = WrongLoopError::new("await", || "Promise#3".to_string(), 1, 2);
        assert_eq!(
            e.to_string(),
            "await: Promise#3 belongs to event loop #1 and cannot be awaited from a task of event loop #2 \
             (only its own loop can complete it, and that loop is not running)"
        );
        assert_eq!(
            (e.operation(), e.object(), e.bound_loop(), e.running_loop()),
            ("await", "Promise#3", 1, 2)
        );
    }

    #[test]
    fn an_fd_error_keeps_kind_and_errno_and_names_the_call_and_the_fd() {
        let e = FdError::wrap("add_reader", 7, io::Error::from_raw_os_error(9));
        assert_eq!(e.kind(), io::Error::from_raw_os_error(9).kind());
        assert!(e.to_string().starts_with("add_reader(fd 7): "), "{e}");
        let inner = e
            .get_ref()
            .and_then(|e| e.downcast_ref::<FdError>())
            .expect("the context");
        assert_eq!(inner.io_error().raw_os_error(), Some(9));
    }
}
