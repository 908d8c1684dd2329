//! The futures of a queue's waiting operations: [`Get`], [`Put`] and [`Join`].

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use crate::event_loop::slab::Key;
use crate::event_loop::trace::{Awaiting, QueueOp, note_awaiting};
use crate::sync::queue::core::{GetSlot, JoinSlot, PutSlot, SharedCore, refresh, wake_opt};
use crate::sync::queue::error::{QueueShutDown, TryGetError, TryPutError};

/// The future of [`Queue::get`](crate::Queue::get): an item, or [`QueueShutDown`](crate::QueueShutDown) once the queue is shut down and
/// empty. Cancellation-safe (see the module documentation). Polled again after it completed, it
/// starts another get.
///
/// ```
/// use std::time::Duration;
/// use evloop::{Builder, Queue};
///
/// evloop::run_with(Builder::new().virtual_clock(true), async {
///     let q = Queue::new(0);
///     // A `Get` dropped by a timeout loses nothing and leaves no waiter behind.
///     assert!(evloop::timeout(Duration::from_secs(1), q.get()).await.is_err());
///     q.put_nowait(5).expect("unbounded");
///     assert_eq!(q.get().await, Ok(5));
/// })?;
/// # Ok::<(), evloop::RunError>(())
/// ```
#[must_use = "futures do nothing unless awaited"]
pub struct Get<T> {
    core: SharedCore<T>,
    key: Option<Key>,
}

impl<T> Get<T> {
    pub(crate) fn new_on(core: &SharedCore<T>) -> Self {
        Get {
            core: core.clone(),
            key: None,
        }
    }

    /// One poll, shared with the channels (which name the operation in traces).
    pub(crate) fn poll_get(&mut self, cx: &mut Context<'_>, op: QueueOp) -> Poll<Result<T, QueueShutDown>> {
        let mut core = self.core.borrow_mut();
        if let Some(key) = self.key {
            let stale = match core.getters.state_mut(key) {
                Some(GetSlot::Waiting(w)) => refresh(w, cx),
                Some(_) => {
                    self.key = None;
                    let got = core.getters.remove(key);
                    return match got {
                        Some(GetSlot::Handed(_, item)) => {
                            core.handed -= 1;
                            let woken = core.release_slot();
                            drop(core);
                            wake_opt(woken);
                            Poll::Ready(Ok(item))
                        }
                        _ => Poll::Ready(Err(QueueShutDown(()))),
                    };
                }
                None => {
                    // Unreachable: the node lives until this future removes it.
                    self.key = None;
                    return Poll::Ready(Err(QueueShutDown(())));
                }
            };
            drop(core);
            drop(stale);
            note_awaiting(Awaiting::Queue(op));
            return Poll::Pending;
        }
        match core.try_get() {
            Ok((item, woken)) => {
                drop(core);
                wake_opt(woken);
                Poll::Ready(Ok(item))
            }
            Err(TryGetError::ShutDown) => Poll::Ready(Err(QueueShutDown(()))),
            Err(TryGetError::Empty) => {
                if let Err(wrong) = core.binding.bind() {
                    drop(core);
                    wrong.fail(op);
                }
                self.key = Some(core.register_getter(cx.waker()));
                drop(core);
                note_awaiting(Awaiting::Queue(op));
                Poll::Pending
            }
        }
    }
}

impl<T> Future for Get<T> {
    type Output = Result<T, QueueShutDown>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        self.get_mut().poll_get(cx, QueueOp::QueueGet)
    }
}

impl<T> Drop for Get<T> {
    fn drop(&mut self) {
        let Some(key) = self.key.take() else { return };
        let Ok(mut core) = self.core.try_borrow_mut() else {
            // Unreachable: no queue code runs foreign code while it holds the borrow.
            return;
        };
        let mut woken = None;
        let mut stale = None;
        match core.getters.remove(key) {
            Some(GetSlot::Handed(seq, item)) => {
                // The item was promised to us: pass it on to the next getter, or put it back.
                core.handed -= 1;
                woken = core.hand_or_store(seq, item, true);
            }
            Some(GetSlot::Waiting(w)) => stale = Some(w),
            _ => {}
        }
        drop(core);
        drop(stale);
        wake_opt(woken);
    }
}

impl<T> fmt::Debug for Get<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(if self.key.is_some() { "Get(waiting)" } else { "Get" })
    }
}

/// The future of [`Queue::put`](crate::Queue::put): `Ok(())` once the item is in the queue, or the item back in
/// [`QueueShutDown`]. Cancellation-safe (see the module documentation).
///
/// ```
/// use std::time::Duration;
/// use evloop::{Builder, Queue};
///
/// evloop::run_with(Builder::new().virtual_clock(true), async {
///     let q = Queue::new(1);
///     q.put(1).await.expect("room");
///     // The queue stays full: the timeout drops the `Put`, and item 2 is not put.
///     assert!(evloop::timeout(Duration::from_secs(1), q.put(2)).await.is_err());
///     assert_eq!(q.qsize(), 1);
/// })?;
/// # Ok::<(), evloop::RunError>(())
/// ```
#[must_use = "futures do nothing unless awaited"]
pub struct Put<T> {
    core: SharedCore<T>,
    item: Option<T>,
    key: Option<Key>,
}

// The item is moved in and out by value and never pinned in place.
impl<T> Unpin for Put<T> {}

impl<T> Put<T> {
    pub(crate) fn new_on(core: &SharedCore<T>, item: T) -> Self {
        Put {
            core: core.clone(),
            item: Some(item),
            key: None,
        }
    }

    pub(crate) fn poll_put(&mut self, cx: &mut Context<'_>, op: QueueOp) -> Poll<Result<(), QueueShutDown<T>>> {
        let Some(item) = self.item.take() else {
            // Polled again after it completed.
            return Poll::Ready(Ok(()));
        };
        let mut core = self.core.borrow_mut();
        if let Some(key) = self.key {
            let stale = match core.putters.state_mut(key) {
                Some(PutSlot::Waiting(w)) => refresh(w, cx),
                Some(_) => {
                    self.key = None;
                    return match core.putters.remove(key) {
                        Some(PutSlot::Granted) => {
                            core.reserved -= 1;
                            let woken = core.insert(item);
                            drop(core);
                            wake_opt(woken);
                            Poll::Ready(Ok(()))
                        }
                        _ => Poll::Ready(Err(QueueShutDown(item))),
                    };
                }
                None => {
                    self.key = None;
                    return Poll::Ready(Err(QueueShutDown(item)));
                }
            };
            drop(core);
            self.item = Some(item);
            drop(stale);
            note_awaiting(Awaiting::Queue(op));
            return Poll::Pending;
        }
        match core.try_put(item) {
            Ok(woken) => {
                drop(core);
                wake_opt(woken);
                Poll::Ready(Ok(()))
            }
            Err(TryPutError::ShutDown(item)) => Poll::Ready(Err(QueueShutDown(item))),
            Err(TryPutError::Full(item)) => {
                if let Err(wrong) = core.binding.bind() {
                    drop(core);
                    drop(item);
                    wrong.fail(op);
                }
                self.key = Some(core.register_putter(cx.waker()));
                drop(core);
                self.item = Some(item);
                note_awaiting(Awaiting::Queue(op));
                Poll::Pending
            }
        }
    }
}

impl<T> Future for Put<T> {
    type Output = Result<(), QueueShutDown<T>>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        self.get_mut().poll_put(cx, QueueOp::QueuePut)
    }
}

impl<T> Drop for Put<T> {
    fn drop(&mut self) {
        // The item (if any) is dropped after this, with the field, outside any borrow.
        let Some(key) = self.key.take() else { return };
        let Ok(mut core) = self.core.try_borrow_mut() else {
            return;
        };
        let mut woken = None;
        let mut stale = None;
        match core.putters.remove(key) {
            Some(PutSlot::Granted) => {
                // The slot reserved for us goes to the next putter in line.
                core.reserved -= 1;
                woken = core.release_slot();
            }
            Some(PutSlot::Waiting(w)) => stale = Some(w),
            _ => {}
        }
        drop(core);
        drop(stale);
        wake_opt(woken);
    }
}

impl<T> fmt::Debug for Put<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(if self.key.is_some() { "Put(waiting)" } else { "Put" })
    }
}

/// The future of [`Queue::join`](crate::Queue::join): completes when every item put has been marked done. Woken by
/// the `task_done` that brought the count to zero, it completes even if more items were put
/// before its task ran (as asyncio's `Event` works).
///
/// ```
/// evloop::run(async {
///     let q = evloop::Queue::new(0);
///     q.put_nowait("a").expect("unbounded");
///     let joiner = {
///         let q = q.clone();
///         evloop::spawn(async move { q.join().await })
///     };
///     evloop::yield_now().await;
///     assert!(!joiner.done()); // one item is not marked done
///     q.get_nowait().expect("queued");
///     q.task_done().expect("one item was put");
///     joiner.await?;
///     Ok::<(), evloop::TaskError>(())
/// })??;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[must_use = "futures do nothing unless awaited"]
pub struct Join<T> {
    pub(crate) core: SharedCore<T>,
    pub(crate) key: Option<Key>,
}

impl<T> Future for Join<T> {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let this = self.get_mut();
        let mut core = this.core.borrow_mut();
        let stale = match this.key {
            Some(key) => match core.joiners.state_mut(key) {
                Some(JoinSlot::Waiting(w)) => refresh(w, cx),
                _ => {
                    this.key = None;
                    core.joiners.remove(key);
                    return Poll::Ready(());
                }
            },
            None => {
                if core.unfinished == 0 {
                    return Poll::Ready(());
                }
                if let Err(wrong) = core.binding.bind() {
                    drop(core);
                    wrong.fail(QueueOp::QueueJoin);
                }
                this.key = Some(core.joiners.push_back(JoinSlot::Waiting(cx.waker().clone())));
                None
            }
        };
        drop(core);
        drop(stale);
        note_awaiting(Awaiting::Queue(QueueOp::QueueJoin));
        Poll::Pending
    }
}

impl<T> Drop for Join<T> {
    fn drop(&mut self) {
        let Some(key) = self.key.take() else { return };
        let removed = match self.core.try_borrow_mut() {
            Ok(mut core) => core.joiners.remove(key),
            Err(_) => None,
        };
        drop(removed);
    }
}

impl<T> fmt::Debug for Join<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(if self.key.is_some() { "Join(waiting)" } else { "Join" })
    }
}
