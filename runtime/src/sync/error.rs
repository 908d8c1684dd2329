//! [`SyncError`]: the one error type of the primitives' misuse (an over-released bounded
//! semaphore, a broken barrier, a foreign lock guard, a wait from the wrong loop, a closed
//! semaphore). The primitives build it; callers match on it or convert it into an `io::Error`.

use std::fmt;
use std::io;

use crate::event_loop::error::WrongLoopError;

/// Misuse of a synchronisation primitive (asyncio's `ValueError`, `BrokenBarrierError`,
/// `RuntimeError`). The message names the primitive and the operation.
///
/// ```
/// use evloop::sync::{BoundedSemaphore, SyncError};
///
/// let sem = BoundedSemaphore::new(1);
/// // No permit was forgotten, so releasing one would take the count past its bound.
/// let err = sem.release().unwrap_err();
/// assert_eq!(err, SyncError::OverReleased { bound: 1 });
/// assert!(err.to_string().starts_with("BoundedSemaphore.release"));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum SyncError {
    /// [`BoundedSemaphore::release`](crate::sync::BoundedSemaphore::release) with no forgotten permit to
    /// give back: releasing it would take the count past its initial value (asyncio's
    /// `ValueError`).
    OverReleased {
        /// The semaphore's initial (and maximum) number of permits.
        bound: usize,
    },
    /// [`Barrier::wait`](crate::sync::Barrier::wait) on a barrier that was aborted, or that was aborted
    /// or reset while the task waited (asyncio's `BrokenBarrierError`).
    BrokenBarrier {
        /// The barrier's number of parties.
        parties: usize,
    },
    /// [`Condition::wait`](crate::sync::Condition::wait) was given the guard of a lock that is not the
    /// condition's.
    ForeignLockGuard,
    /// The primitive is bound to another event loop than the task that waited on it (asyncio's
    /// `RuntimeError: ... is bound to a different event loop`): see "Bound to one loop" in the
    /// [module documentation](crate::sync). The error names the operation (e.g.
    /// `Condition.wait()`) and both loops.
    WrongLoop(WrongLoopError),
    /// [`Semaphore::acquire`](crate::sync::Semaphore::acquire) (or `acquire_many`, or an owned
    /// form) on a semaphore that was [closed](crate::sync::Semaphore::close), or closed while
    /// the task waited (tokio's `AcquireError`).
    Closed,
}

impl fmt::Display for SyncError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SyncError::OverReleased { bound } => write!(
                f,
                "BoundedSemaphore.release: released too many times (the semaphore was created with \
                 {bound} permit{} and none of them was forgotten to be given back)",
                if *bound == 1 { "" } else { "s" }
            ),
            SyncError::BrokenBarrier { parties } => write!(
                f,
                "Barrier.wait: the barrier ({parties} parties) is broken: it was aborted, or reset \
                 while this task waited"
            ),
            SyncError::ForeignLockGuard => {
                f.write_str("Condition.wait: the guard belongs to another lock than this condition's")
            }
            SyncError::WrongLoop(e) => e.fmt(f),
            SyncError::Closed => f.write_str("Semaphore.acquire: the semaphore is closed"),
        }
    }
}

impl std::error::Error for SyncError {}

impl From<SyncError> for io::Error {
    fn from(e: SyncError) -> io::Error {
        let kind = match e {
            SyncError::OverReleased { .. } | SyncError::ForeignLockGuard => io::ErrorKind::InvalidInput,
            _ => io::ErrorKind::Other,
        };
        io::Error::new(kind, e)
    }
}
