//! [`Queue`]: the public handle to a queue (asyncio's `Queue`, `LifoQueue`, `PriorityQueue`).

use std::cell::RefCell;
use std::collections::VecDeque;
use std::fmt;
use std::rc::Rc;

use crate::sync::queue::core::{Core, SharedCore, with_core};
use crate::sync::queue::error::{TaskDoneError, TryGetError, TryPutError};
use crate::sync::queue::futures::{Get, Join, Put};
use crate::sync::queue::store::{Heap, Store};

/// asyncio's `Queue` (and `LifoQueue`, `PriorityQueue`): see the [module
/// documentation](crate::sync::queue).
///
/// Cloning gives another handle to the same queue.
///
/// ```
/// use evloop::sync::queue::Queue;
///
/// let done = evloop::run(async {
///     let q = Queue::new(0);
///     let worker = {
///         let q = q.clone(); // another handle to the same queue
///         evloop::spawn(async move {
///             let mut done = Vec::new();
///             while let Ok(job) = q.get().await {
///                 done.push(job * 10);
///                 q.task_done().expect("one per get");
///             }
///             done
///         })
///     };
///     for job in 1..=3 {
///         q.put(job).await.expect("open");
///     }
///     q.join().await; // every job was marked done
///     q.shutdown(false); // the worker's next get fails: it returns
///     worker.await
/// })??;
/// assert_eq!(done, [10, 20, 30]);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct Queue<T> {
    core: SharedCore<T>,
}

impl<T> Clone for Queue<T> {
    fn clone(&self) -> Self {
        Queue {
            core: self.core.clone(),
        }
    }
}

impl<T> Queue<T> {
    fn with_store(store: Store<T>, maxsize: usize) -> Self {
        Queue {
            core: Rc::new(RefCell::new(Core::new(store, maxsize))),
        }
    }

    /// A FIFO queue holding at most `maxsize` items; 0 means no bound (asyncio's `Queue`).
    ///
    /// ```
    /// let q = evloop::sync::queue::Queue::new(2);
    /// q.put_nowait("a").expect("room");
    /// q.put_nowait("b").expect("room");
    /// assert!(q.full());
    /// assert_eq!(q.get_nowait(), Ok("a")); // first in, first out
    /// ```
    pub fn new(maxsize: usize) -> Self {
        Queue::with_store(Store::Fifo(VecDeque::new()), maxsize)
    }

    /// A LIFO queue: the most recently put item comes out first (asyncio's `LifoQueue`).
    ///
    /// ```
    /// let q = evloop::sync::queue::Queue::lifo(0);
    /// for i in 1..=3 {
    ///     q.put_nowait(i).expect("unbounded");
    /// }
    /// assert_eq!(q.get_nowait(), Ok(3)); // last in, first out
    /// assert_eq!(q.get_nowait(), Ok(2));
    /// ```
    pub fn lifo(maxsize: usize) -> Self {
        Queue::with_store(Store::Lifo(VecDeque::new()), maxsize)
    }

    /// A priority queue: the smallest item comes out first, equal items in the order they were
    /// put (asyncio's `PriorityQueue`, with the `(priority, count, item)` tie-break built in).
    ///
    /// ```
    /// let q = evloop::sync::queue::Queue::priority(0);
    /// q.put_nowait((2, "low")).expect("unbounded");
    /// q.put_nowait((1, "high")).expect("unbounded");
    /// q.put_nowait((2, "low, later")).expect("unbounded");
    /// assert_eq!(q.get_nowait(), Ok((1, "high"))); // smallest first
    /// assert_eq!(q.get_nowait(), Ok((2, "low")));
    /// assert_eq!(q.get_nowait(), Ok((2, "low, later")));
    /// ```
    pub fn priority(maxsize: usize) -> Self
    where
        T: Ord,
    {
        Queue::with_store(
            Store::Priority(Heap {
                items: Vec::new(),
                cmp: T::cmp,
            }),
            maxsize,
        )
    }

    /// Puts `item` into the queue, waiting while it is full. Fails with the item if the queue is
    /// (or while waiting becomes) shut down. Dropping the future before it completes means the
    /// item was not put, and it is dropped with the future.
    ///
    /// # Panics
    /// When a task of another loop than the one the queue is bound to (the loop of its first
    /// waiter) would have to wait: see "Bound to one loop" in the [`sync`](crate::sync) module.
    ///
    /// ```
    /// evloop::run(async {
    ///     let q = evloop::sync::queue::Queue::new(1);
    ///     q.put(1).await.expect("room: returns at once");
    ///     let putter = {
    ///         let q = q.clone();
    ///         evloop::spawn(async move { q.put(2).await }) // waits: the queue is full
    ///     };
    ///     evloop::task::yield_now().await;
    ///     assert!(!putter.done());
    ///     assert_eq!(q.get().await, Ok(1)); // frees the slot for the waiting put
    ///     putter.await?.expect("open");
    ///     assert_eq!(q.get().await, Ok(2));
    ///     Ok::<(), Box<dyn std::error::Error>>(())
    /// })??;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn put(&self, item: T) -> Put<T> {
        Put::new_on(&self.core, item)
    }

    /// Takes an item, waiting while the queue is empty. After a shutdown it returns the items
    /// still queued, then fails with [`QueueShutDown`](crate::sync::queue::QueueShutDown). Dropping the future
    /// never loses an item.
    ///
    /// # Panics
    /// Like [`Queue::put`], when a task of another loop would have to wait.
    ///
    /// ```
    /// evloop::run(async {
    ///     let q = evloop::sync::queue::Queue::new(0);
    ///     let getter = {
    ///         let q = q.clone();
    ///         evloop::spawn(async move { q.get().await }) // waits: the queue is empty
    ///     };
    ///     evloop::task::yield_now().await;
    ///     q.put("item").await.expect("open");
    ///     assert_eq!(getter.await?, Ok("item"));
    ///     Ok::<(), evloop::task::TaskError>(())
    /// })??;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn get(&self) -> Get<T> {
        Get::new_on(&self.core)
    }

    /// Puts `item` without waiting: [`TryPutError::Full`] if no slot is free,
    /// [`TryPutError::ShutDown`] after a shutdown, each with the item.
    ///
    /// ```
    /// use evloop::sync::queue::{Queue, TryPutError};
    ///
    /// let q = Queue::new(1);
    /// assert_eq!(q.put_nowait(1), Ok(()));
    /// assert_eq!(q.put_nowait(2), Err(TryPutError::Full(2)));
    /// ```
    pub fn put_nowait(&self, item: T) -> Result<(), TryPutError<T>> {
        with_core(&self.core, |c, wakers| c.try_put(item, wakers))
    }

    /// Takes an item without waiting: [`TryGetError::Empty`] if none is available,
    /// [`TryGetError::ShutDown`] if the queue was shut down and is empty.
    ///
    /// ```
    /// use evloop::sync::queue::{Queue, TryGetError};
    ///
    /// let q = Queue::new(0);
    /// q.put_nowait(7).expect("unbounded");
    /// assert_eq!(q.get_nowait(), Ok(7));
    /// assert_eq!(q.get_nowait(), Err(TryGetError::Empty));
    /// ```
    pub fn get_nowait(&self) -> Result<T, TryGetError> {
        with_core(&self.core, |c, wakers| c.try_get(wakers))
    }

    /// The number of items in the queue, counting items handed to getters that have not run yet.
    ///
    /// ```
    /// let q = evloop::sync::queue::Queue::new(0);
    /// q.put_nowait(1).expect("unbounded");
    /// q.put_nowait(2).expect("unbounded");
    /// assert_eq!(q.qsize(), 2);
    /// ```
    pub fn qsize(&self) -> usize {
        self.core.borrow().qsize()
    }

    /// `qsize() == 0`.
    ///
    /// ```
    /// let q = evloop::sync::queue::Queue::new(0);
    /// assert!(q.empty());
    /// q.put_nowait(()).expect("unbounded");
    /// assert!(!q.empty());
    /// ```
    pub fn empty(&self) -> bool {
        self.qsize() == 0
    }

    /// Whether `put_nowait` would find no free slot: `maxsize` items are queued or promised to
    /// putters that were granted a slot. Never true for an unbounded queue.
    ///
    /// ```
    /// let q = evloop::sync::queue::Queue::new(1);
    /// assert!(!q.full());
    /// q.put_nowait(1).expect("room");
    /// assert!(q.full());
    /// assert!(!evloop::sync::queue::Queue::<u8>::new(0).full()); // unbounded: never full
    /// ```
    pub fn full(&self) -> bool {
        !self.core.borrow().has_room()
    }

    /// The bound given at creation (0: unbounded).
    ///
    /// ```
    /// assert_eq!(evloop::sync::queue::Queue::<u8>::new(8).maxsize(), 8);
    /// assert_eq!(evloop::sync::queue::Queue::<u8>::new(0).maxsize(), 0); // unbounded
    /// ```
    pub fn maxsize(&self) -> usize {
        self.core.borrow().maxsize
    }

    /// Whether [`shutdown`](Queue::shutdown) was called.
    ///
    /// ```
    /// let q = evloop::sync::queue::Queue::<u8>::new(0);
    /// assert!(!q.is_shut_down());
    /// q.shutdown(false);
    /// assert!(q.is_shut_down());
    /// ```
    pub fn is_shut_down(&self) -> bool {
        self.core.borrow().shut_down
    }

    /// Marks one item taken from the queue as processed. When every item ever put has been
    /// marked, every [`join`](Queue::join) waiter is woken. A [`TaskDoneError`] if called more
    /// times than items were put.
    ///
    /// ```
    /// evloop::run(async {
    ///     let q = evloop::sync::queue::Queue::new(0);
    ///     q.put_nowait("job").expect("unbounded");
    ///     let job = q.get().await.expect("queued");
    ///     assert_eq!(job, "job");
    ///     q.task_done().expect("one item was put"); // the item is processed
    ///     q.join().await; // returns at once: nothing is pending
    /// })?;
    /// # Ok::<(), evloop::task::RunError>(())
    /// ```
    pub fn task_done(&self) -> Result<(), TaskDoneError> {
        with_core(&self.core, |c, wakers| c.task_done(wakers))
    }

    /// Waits until every item put has been marked with [`task_done`](Queue::task_done) (at once
    /// if none is pending).
    ///
    /// # Panics
    /// Like [`Queue::put`], when a task of another loop would have to wait.
    ///
    /// ```
    /// use std::cell::Cell;
    /// use std::rc::Rc;
    ///
    /// evloop::run(async {
    ///     let q = evloop::sync::queue::Queue::new(0);
    ///     for job in 1..=3 {
    ///         q.put_nowait(job).expect("unbounded");
    ///     }
    ///     let processed = Rc::new(Cell::new(0));
    ///     let worker = {
    ///         let (q, processed) = (q.clone(), processed.clone());
    ///         evloop::spawn(async move {
    ///             while let Ok(job) = q.get().await {
    ///                 evloop::task::yield_now().await; // the work
    ///                 processed.set(processed.get() + job);
    ///                 q.task_done().expect("one per item");
    ///             }
    ///         })
    ///     };
    ///     q.join().await; // until every item was marked done
    ///     assert_eq!(processed.get(), 6);
    ///     q.shutdown(false); // ends the worker's loop
    ///     worker.await?;
    ///     Ok::<(), evloop::task::TaskError>(())
    /// })??;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn join(&self) -> Join<T> {
        Join::new_on(&self.core)
    }

    /// Shuts the queue down (Python 3.13): puts fail from now on and waiting putters are woken
    /// with [`QueueShutDown`](crate::sync::queue::QueueShutDown); gets drain the remaining items, then fail, and
    /// waiting getters are woken with `QueueShutDown`. With `immediate`, the remaining items
    /// (including those handed to getters that have not run yet) are discarded, with a `task_done`
    /// counted for each. Calling it again is allowed (`shutdown(true)` after `shutdown(false)`
    /// discards the rest).
    ///
    /// ```
    /// use evloop::sync::queue::{Queue, TryGetError};
    ///
    /// let q = Queue::new(0);
    /// q.put_nowait(1).expect("unbounded");
    /// q.put_nowait(2).expect("unbounded");
    /// q.shutdown(false); // puts fail, the items already queued can still be taken
    /// assert_eq!(q.get_nowait(), Ok(1));
    /// q.shutdown(true); // discards the rest
    /// assert_eq!(q.get_nowait(), Err(TryGetError::ShutDown));
    /// ```
    pub fn shutdown(&self, immediate: bool) {
        let discarded = with_core(&self.core, |c, wakers| c.shutdown(immediate, wakers));
        drop(discarded);
    }

    /// Whether two handles refer to the same queue.
    ///
    /// ```
    /// let q = evloop::sync::queue::Queue::<u8>::new(0);
    /// assert!(q.same_queue(&q.clone()));
    /// assert!(!q.same_queue(&evloop::sync::queue::Queue::new(0)));
    /// ```
    pub fn same_queue(&self, other: &Queue<T>) -> bool {
        Rc::ptr_eq(&self.core, &other.core)
    }
}

impl<T> fmt::Debug for Queue<T> {
    /// `<Queue maxsize=2 qsize=1 getters=0 putters=1 tasks=3 shutdown>` (asyncio's `_format`).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let Ok(c) = self.core.try_borrow() else {
            return f.write_str("<Queue (busy)>");
        };
        write!(f, "<{} maxsize={} qsize={}", c.store.kind(), c.maxsize, c.qsize())?;
        if c.getters.waiting() > 0 {
            write!(f, " getters={}", c.getters.waiting())?;
        }
        if c.putters.waiting() > 0 {
            write!(f, " putters={}", c.putters.waiting())?;
        }
        if c.unfinished > 0 {
            write!(f, " tasks={}", c.unfinished)?;
        }
        if c.shut_down {
            f.write_str(" shutdown")?;
        }
        f.write_str(">")
    }
}
