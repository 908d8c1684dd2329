//! The futures of a queue's waiting operations, [`Get`], [`Put`] and [`Join`]: each a
//! [`Waiter`] in one of the queue's lines (`core.rs` has their rules), which gives it its
//! cancellation safety; `mpsc` wraps the first two and names its own operations.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use crate::sync::binding::fail;
use crate::sync::ops::WaitOp;
use crate::sync::queue::core::{Getters, Joiners, Putters, SharedCore};
use crate::sync::queue::error::QueueShutDown;
use crate::sync::wait_queue::Waiter;

/// The future of [`Queue::get`](crate::sync::queue::Queue::get): an item, or [`QueueShutDown`] once the queue
/// is shut down and empty. Cancellation-safe (see the [`queue`](crate::sync::queue) module
/// documentation). Polled again after it completed, it starts another get.
///
/// ```
/// use std::time::Duration;
/// use evloop::{event_loop::Builder, sync::queue::Queue};
///
/// Builder::new().virtual_clock(true).run(async {
///     let q = Queue::new(0);
///     // A `Get` dropped by a timeout loses nothing and leaves no waiter behind.
///     assert!(evloop::time::timeout(Duration::from_secs(1), q.get()).await.is_err());
///     q.put_nowait(5).expect("unbounded");
///     assert_eq!(q.get().await, Ok(5));
/// })?;
/// # Ok::<(), evloop::task::RunError>(())
/// ```
#[must_use = "futures do nothing unless you `.await` or poll them"]
pub struct Get<T> {
    waiter: Waiter<SharedCore<T>, Getters<T>>,
}

impl<T> Get<T> {
    pub(crate) fn new_on(core: &SharedCore<T>) -> Self {
        Get {
            waiter: Waiter::new(core.clone(), ()),
        }
    }

    /// One poll, shared with the channels (which name the operation in traces).
    pub(crate) fn poll_get(&mut self, cx: &mut Context<'_>, op: WaitOp) -> Poll<Result<T, QueueShutDown>> {
        self.waiter
            .poll_wait(cx, op)
            .map(|r| r.unwrap_or_else(|wrong| fail(wrong)))
    }
}

impl<T> Future for Get<T> {
    type Output = Result<T, QueueShutDown>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        self.get_mut().poll_get(cx, WaitOp::QueueGet)
    }
}

impl<T> fmt::Debug for Get<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(if self.waiter.is_queued() { "Get(waiting)" } else { "Get" })
    }
}

/// The future of [`Queue::put`](crate::sync::queue::Queue::put): `Ok(())` once the item is in the queue, or the
/// item back in [`QueueShutDown`]. Cancellation-safe (see the [`queue`](crate::sync::queue) module
/// documentation).
///
/// ```
/// use std::time::Duration;
/// use evloop::{event_loop::Builder, sync::queue::Queue};
///
/// Builder::new().virtual_clock(true).run(async {
///     let q = Queue::new(1);
///     q.put(1).await.expect("room");
///     // The queue stays full: the timeout drops the `Put`, and item 2 is not put.
///     assert!(evloop::time::timeout(Duration::from_secs(1), q.put(2)).await.is_err());
///     assert_eq!(q.qsize(), 1);
/// })?;
/// # Ok::<(), evloop::task::RunError>(())
/// ```
#[must_use = "futures do nothing unless you `.await` or poll them"]
pub struct Put<T> {
    waiter: Waiter<SharedCore<T>, Putters<T>>,
}

// The item is moved in and out by value and never pinned in place.
impl<T> Unpin for Put<T> {}

impl<T> Put<T> {
    pub(crate) fn new_on(core: &SharedCore<T>, item: T) -> Self {
        Put {
            waiter: Waiter::new(core.clone(), Some(item)),
        }
    }

    pub(crate) fn poll_put(&mut self, cx: &mut Context<'_>, op: WaitOp) -> Poll<Result<(), QueueShutDown<T>>> {
        self.waiter.poll_wait(cx, op).map(|r| {
            r.unwrap_or_else(|wrong| {
                // The item was not put: it goes before the task fails.
                drop(self.waiter.carry_mut().take());
                fail(wrong)
            })
        })
    }
}

impl<T> Future for Put<T> {
    type Output = Result<(), QueueShutDown<T>>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        self.get_mut().poll_put(cx, WaitOp::QueuePut)
    }
}

impl<T> fmt::Debug for Put<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(if self.waiter.is_queued() { "Put(waiting)" } else { "Put" })
    }
}

/// The future of [`Queue::join`](crate::sync::queue::Queue::join): completes when every item put has been marked
/// done. Woken by the `task_done` that brought the count to zero, it completes even if more items
/// were put before its task ran (as asyncio's `Event` works).
///
/// ```
/// evloop::run(async {
///     let q = evloop::sync::queue::Queue::new(0);
///     q.put_nowait("a").expect("unbounded");
///     let joiner = {
///         let q = q.clone();
///         evloop::spawn(async move { q.join().await })
///     };
///     evloop::task::yield_now().await;
///     assert!(!joiner.done()); // one item is not marked done
///     q.get_nowait().expect("queued");
///     q.task_done().expect("one item was put");
///     joiner.await?;
///     Ok::<(), evloop::task::TaskError>(())
/// })??;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[must_use = "futures do nothing unless you `.await` or poll them"]
pub struct Join<T> {
    waiter: Waiter<SharedCore<T>, Joiners<T>>,
}

impl<T> Join<T> {
    pub(crate) fn new_on(core: &SharedCore<T>) -> Self {
        Join {
            waiter: Waiter::new(core.clone(), ()),
        }
    }
}

impl<T> Future for Join<T> {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let op = WaitOp::QueueJoin;
        self.get_mut()
            .waiter
            .poll_wait(cx, op)
            .map(|r| r.unwrap_or_else(|wrong| fail(wrong)))
    }
}

impl<T> fmt::Debug for Join<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(if self.waiter.is_queued() {
            "Join(waiting)"
        } else {
            "Join"
        })
    }
}
