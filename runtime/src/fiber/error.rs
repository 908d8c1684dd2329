//! What the fiber layer reports: [`FiberExit`], the unwind a thrown-into fiber dies of (and the
//! value its parent then receives), and [`FiberError`], every error of a fiber operation, with
//! its message and its conversion to `io::Error` for the blocking-style helpers.

use std::fmt;
use std::io;

use crate::event_loop::error::{LoopError, Panic};

/// greenlet's `GreenletExit`: the panic payload [`Fiber::throw`](crate::fiber::Fiber::throw)
/// (and dropping the last handle of a suspended fiber) unwinds a fiber with, and the value its
/// parent receives when the fiber dies of it.
///
/// Code that catches panics inside a fiber (`catch_unwind`) should let it continue
/// (`std::panic::resume_unwind`): a fiber that swallows it and switches away cannot be
/// stopped; when its last handle goes it stays suspended, with its stack (and a warning on
/// stderr), until something switches to it again.
///
/// ```
/// use evloop::fiber::{Fiber, FiberExit};
///
/// let child = Fiber::new(|_| {
///     let _ = Fiber::main().switch(()); // suspended here ...
///     "never reached"
/// });
/// child.switch(()).unwrap();
/// let back = child.throw().unwrap(); // ... and unwound from here: the parent receives FiberExit
/// assert_eq!(back.downcast::<FiberExit>().ok(), Some(FiberExit));
/// assert!(child.is_dead());
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct FiberExit;

impl fmt::Display for FiberExit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("FiberExit")
    }
}

/// What went wrong with a fiber operation. Messages name the fiber (`main`, `Fiber-3` or the
/// name it was given) and the operation.
///
/// ```
/// use evloop::fiber::{Fiber, FiberError};
///
/// let parent = Fiber::new(|_| ());
/// let child = Fiber::builder().parent(&parent).build(|_| ());
/// // Making `parent` a child of its own child would be a cycle: refused, nothing changes.
/// let err = parent.set_parent(&child).unwrap_err();
/// assert!(matches!(err, FiberError::ParentCycle { .. }));
/// assert!(matches!(Fiber::main().throw(), Err(FiberError::ThrowToMain)));
/// ```
#[derive(Debug)]
#[non_exhaustive]
pub enum FiberError {
    /// A fiber panicked; its parent receives the panic from its pending `switch` (or, for a
    /// fiber run with [`spawn`](crate::fiber::spawn), its task ends with `TaskError::Panicked`).
    Panicked {
        /// The fiber that panicked.
        fiber: String,
        /// The caught panic (with its payload, for `resume_unwind`).
        panic: Panic,
    },
    /// The fiber's stack could not be allocated (out of memory or address space, or out of
    /// memory mappings: see the message).
    Stack {
        /// The fiber that needed it.
        fiber: String,
        /// The operating system's error, with what to change.
        error: io::Error,
    },
    /// `set_parent` would make a fiber its own ancestor.
    ParentCycle {
        /// The fiber being re-parented.
        fiber: String,
        /// The parent refused.
        parent: String,
    },
    /// The main fiber has no parent and cannot be given one.
    MainHasNoParent,
    /// `throw` into the main fiber, which would unwind the thread's own stack.
    ThrowToMain,
    /// [`block_on`](crate::fiber::block_on) (or a helper built on it) outside a fiber run by
    /// the loop: on the loop's own stack it would wait for itself forever.
    NotInLoopFiber {
        /// The operation, e.g. `"fiber::block_on"`.
        op: &'static str,
        /// The fiber it was called from (`main` for the thread's own stack).
        fiber: String,
    },
    /// [`block_on`](crate::fiber::block_on) in a fiber that is being unwound (its task was
    /// cancelled, or it was thrown out): it can no longer wait.
    Cancelled {
        /// The fiber.
        fiber: String,
    },
    /// The loop refused to run the fiber's task (none running, or it is closed).
    Loop(LoopError),
    /// The thread is exiting: its fibers can no longer be switched.
    ThreadExiting,
}

impl FiberError {
    /// The caught panic, for [`FiberError::Panicked`].
    ///
    /// ```
    /// use evloop::fiber::Fiber;
    ///
    /// let child = Fiber::new(|_| {
    ///     panic!("boom");
    /// });
    /// let err = child.switch(()).unwrap_err(); // the panic is delivered to the parent
    /// assert_eq!(err.panic().map(|p| p.message()), Some("boom"));
    /// assert!(child.is_dead());
    /// ```
    pub fn panic(&self) -> Option<&Panic> {
        match self {
            FiberError::Panicked { panic, .. } => Some(panic),
            _ => None,
        }
    }

    /// True for [`FiberError::Panicked`].
    ///
    /// ```
    /// use evloop::fiber::Fiber;
    ///
    /// let child = Fiber::new(|_| {
    ///     panic!("caught at the bottom of the fiber's stack");
    /// });
    /// assert!(child.switch(()).unwrap_err().is_panic());
    /// ```
    pub fn is_panic(&self) -> bool {
        matches!(self, FiberError::Panicked { .. })
    }
}

impl fmt::Display for FiberError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FiberError::Panicked { fiber, panic } => write!(f, "fiber '{fiber}' {panic}"),
            FiberError::Stack { fiber, error } => write!(f, "fiber '{fiber}': cannot allocate its stack: {error}"),
            FiberError::ParentCycle { fiber, parent } => write!(
                f,
                "set_parent: fiber '{parent}' cannot be the parent of '{fiber}': it descends from it (cyclic parent chain)"
            ),
            FiberError::MainHasNoParent => f.write_str("set_parent: the main fiber has no parent and cannot get one"),
            FiberError::ThrowToMain => f.write_str("throw: cannot throw into the main fiber (the thread's own stack)"),
            FiberError::NotInLoopFiber { op, fiber } => write!(
                f,
                "{op}: called in '{fiber}', which is not a fiber run by the loop (start one with fiber::spawn; \
                 on the loop's own stack, await the future instead: waiting here would deadlock)"
            ),
            FiberError::Cancelled { fiber } => {
                write!(
                    f,
                    "fiber '{fiber}' is being unwound (cancelled or thrown out) and can no longer wait"
                )
            }
            FiberError::Loop(e) => write!(f, "fiber::spawn: {e}"),
            FiberError::ThreadExiting => f.write_str("fiber: the thread is exiting; its fibers can no longer run"),
        }
    }
}

impl std::error::Error for FiberError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            FiberError::Stack { error, .. } => Some(error),
            FiberError::Loop(e) => Some(e),
            _ => None,
        }
    }
}

impl From<FiberError> for io::Error {
    fn from(e: FiberError) -> io::Error {
        let kind = match &e {
            FiberError::Stack { error, .. } => error.kind(),
            FiberError::Cancelled { .. } => io::ErrorKind::Interrupted,
            FiberError::NotInLoopFiber { .. } => io::ErrorKind::Unsupported,
            _ => io::ErrorKind::Other,
        };
        // The panic payload is not `Sync`: only the message crosses over.
        io::Error::new(kind, e.to_string())
    }
}
