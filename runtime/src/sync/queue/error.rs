//! The queue's errors: [`QueueShutDown`] (asyncio's), [`TryPutError`] and [`TryGetError`] for the
//! `*_nowait` operations, and [`TaskDoneError`] for a `task_done` too many.

use std::error::Error;
use std::fmt;

/// The queue was shut down (asyncio's `QueueShutDown`).
///
/// From [`Queue::put`](crate::sync::queue::Queue::put) it carries the item that was not put
/// (`QueueShutDown<T>`); from [`Queue::get`](crate::sync::queue::Queue::get) it carries nothing
/// (`QueueShutDown<()>`, the default).
///
/// ```
/// use evloop::sync::queue::{Queue, QueueShutDown};
///
/// evloop::run(async {
///     let q = Queue::new(0);
///     q.put("queued").await.expect("open");
///     q.shutdown(false);
///     // `put` gives the item back; `get` drains what is queued, then fails.
///     assert_eq!(q.put("late").await, Err(QueueShutDown("late")));
///     assert_eq!(q.get().await, Ok("queued"));
///     assert_eq!(q.get().await, Err(QueueShutDown(())));
/// })?;
/// # Ok::<(), evloop::task::RunError>(())
/// ```
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct QueueShutDown<T = ()>(pub T);

impl<T> QueueShutDown<T> {
    /// The item that was not put.
    ///
    /// ```
    /// evloop::run(async {
    ///     let q = evloop::sync::queue::Queue::new(0);
    ///     q.shutdown(false);
    ///     let refused = q.put(String::from("job")).await.unwrap_err();
    ///     assert_eq!(refused.into_inner(), "job");
    /// })?;
    /// # Ok::<(), evloop::task::RunError>(())
    /// ```
    pub fn into_inner(self) -> T {
        self.0
    }
}

impl<T> fmt::Debug for QueueShutDown<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("QueueShutDown(..)")
    }
}

impl<T> fmt::Display for QueueShutDown<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("the queue was shut down")
    }
}

impl<T> Error for QueueShutDown<T> {}

/// Why [`Queue::put_nowait`](crate::sync::queue::Queue::put_nowait) failed; both variants give the item back.
///
/// ```
/// use evloop::sync::queue::{Queue, TryPutError};
///
/// let q = Queue::new(1);
/// q.put_nowait(1).expect("room for one");
/// assert_eq!(q.put_nowait(2), Err(TryPutError::Full(2))); // asyncio's QueueFull
/// q.shutdown(false);
/// assert_eq!(q.put_nowait(3), Err(TryPutError::ShutDown(3)));
/// ```
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum TryPutError<T> {
    /// No free slot (asyncio's `QueueFull`). A slot granted to a waiting putter that has not run
    /// yet is not free.
    Full(T),
    /// The queue was shut down (asyncio's `QueueShutDown`).
    ShutDown(T),
}

impl<T> TryPutError<T> {
    /// The item that was not put.
    ///
    /// ```
    /// let q = evloop::sync::queue::Queue::new(1);
    /// q.put_nowait('a').expect("room for one");
    /// let err = q.put_nowait('b').unwrap_err();
    /// assert_eq!(err.into_inner(), 'b');
    /// ```
    pub fn into_inner(self) -> T {
        match self {
            TryPutError::Full(t) | TryPutError::ShutDown(t) => t,
        }
    }

    /// Whether the queue was full (rather than shut down).
    ///
    /// ```
    /// let q = evloop::sync::queue::Queue::new(1);
    /// q.put_nowait(1).expect("room for one");
    /// assert!(q.put_nowait(2).unwrap_err().is_full());
    /// q.shutdown(false);
    /// assert!(!q.put_nowait(3).unwrap_err().is_full());
    /// ```
    pub fn is_full(&self) -> bool {
        matches!(self, TryPutError::Full(_))
    }
}

impl<T> fmt::Debug for TryPutError<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TryPutError::Full(_) => f.write_str("Full(..)"),
            TryPutError::ShutDown(_) => f.write_str("ShutDown(..)"),
        }
    }
}

impl<T> fmt::Display for TryPutError<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TryPutError::Full(_) => f.write_str("Queue::put_nowait: the queue is full"),
            TryPutError::ShutDown(_) => f.write_str("Queue::put_nowait: the queue was shut down"),
        }
    }
}

impl<T> Error for TryPutError<T> {}

/// Why [`Queue::get_nowait`](crate::sync::queue::Queue::get_nowait) failed.
///
/// ```
/// use evloop::sync::queue::{Queue, TryGetError};
///
/// let q = Queue::<u32>::new(0);
/// assert_eq!(q.get_nowait(), Err(TryGetError::Empty)); // asyncio's QueueEmpty
/// q.shutdown(false);
/// assert_eq!(q.get_nowait(), Err(TryGetError::ShutDown));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TryGetError {
    /// No item is available (asyncio's `QueueEmpty`). Items already handed to waiting getters
    /// are not available.
    Empty,
    /// The queue was shut down and has no items left (asyncio's `QueueShutDown`).
    ShutDown,
}

impl fmt::Display for TryGetError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TryGetError::Empty => f.write_str("Queue::get_nowait: the queue is empty"),
            TryGetError::ShutDown => f.write_str("Queue::get_nowait: the queue was shut down and is empty"),
        }
    }
}

impl Error for TryGetError {}

/// [`Queue::task_done`](crate::sync::queue::Queue::task_done) was called more times than items were put
/// (asyncio's `ValueError`).
///
/// ```
/// use evloop::sync::queue::{Queue, TaskDoneError};
///
/// let q = Queue::new(0);
/// q.put_nowait(1).expect("unbounded");
/// assert_eq!(q.get_nowait(), Ok(1));
/// assert_eq!(q.task_done(), Ok(()));
/// assert_eq!(q.task_done(), Err(TaskDoneError)); // one item, two task_done calls
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct TaskDoneError;

impl fmt::Display for TaskDoneError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Queue::task_done: called more times than there were items put")
    }
}

impl Error for TaskDoneError {}
