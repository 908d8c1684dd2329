//! [`Lock`]: asyncio's `Lock`, a permit pool of one; its guard and the future of `acquire`.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use crate::sync::error::SyncError;
use crate::sync::ops::WaitOp;
use crate::sync::pool::{PermitWaiter, Pool};

/// A mutual-exclusion lock for tasks (asyncio's `Lock`), FIFO-fair and cancellation-safe.
///
/// [`acquire`](Lock::acquire) gives a [`LockGuard`] that releases the lock when dropped. To
/// protect a value, [`Mutex`](crate::sync::Mutex) puts it behind the lock.
///
/// ```
/// use std::cell::RefCell;
/// use std::rc::Rc;
/// use evloop::sync::Lock;
///
/// let log = evloop::run(async {
///     let lock = Rc::new(Lock::new());
///     let log = Rc::new(RefCell::new(Vec::new()));
///     let tasks: Vec<_> = ["a", "b"]
///         .into_iter()
///         .map(|name| {
///             let (lock, log) = (lock.clone(), log.clone());
///             evloop::spawn(async move {
///                 let _guard = lock.acquire().await.unwrap(); // `async with lock:`
///                 log.borrow_mut().push(format!("{name} in"));
///                 evloop::task::yield_now().await; // the other task cannot enter meanwhile
///                 log.borrow_mut().push(format!("{name} out"));
///             })
///         })
///         .collect();
///     for t in tasks {
///         t.await?;
///     }
///     Ok::<_, evloop::task::TaskError>(log.take())
/// })??;
/// assert_eq!(log, ["a in", "a out", "b in", "b out"]);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct Lock {
    pub(crate) pool: Pool,
}

impl Lock {
    /// An unlocked lock.
    ///
    /// ```
    /// let lock = evloop::sync::Lock::new();
    /// assert!(!lock.locked());
    /// assert_eq!(lock.waiters(), 0);
    /// ```
    pub fn new() -> Lock {
        Lock { pool: Pool::new(1) }
    }

    /// A lock any loop's tasks may wait on (the [`Mutex`](crate::sync::Mutex)'s).
    pub(crate) fn unbound() -> Lock {
        Lock { pool: Pool::unbound(1) }
    }

    /// Waits for the lock (asyncio's `await lock.acquire()` / `async with lock`). Waiters are
    /// served in arrival order; dropping the future gives up its place (or passes the lock on, if
    /// it had just been handed over).
    ///
    /// # Errors
    /// [`SyncError::WrongLoop`] when a task of another loop than the one the lock is bound to
    /// would have to wait (see "Bound to one loop" in the [module documentation](crate::sync)):
    /// it would wait forever.
    ///
    /// ```
    /// evloop::run(async {
    ///     let lock = evloop::sync::Lock::new();
    ///     let guard = lock.acquire().await.unwrap();
    ///     assert!(lock.locked());
    ///     drop(guard); // the guard releases the lock
    ///     assert!(!lock.locked());
    /// })?;
    /// # Ok::<(), evloop::task::RunError>(())
    /// ```
    pub fn acquire(&self) -> LockAcquire<'_> {
        self.acquire_as(WaitOp::LockAcquire)
    }

    pub(crate) fn acquire_as(&self, what: WaitOp) -> LockAcquire<'_> {
        LockAcquire {
            lock: self,
            what,
            waiter: self.pool.waiter(),
        }
    }

    /// Takes the lock if that needs no wait: it is free and nobody is queued for it.
    ///
    /// ```
    /// let lock = evloop::sync::Lock::new();
    /// let guard = lock.try_acquire().expect("the lock is free");
    /// assert!(lock.try_acquire().is_none()); // held: taking it would need a wait
    /// drop(guard);
    /// assert!(lock.try_acquire().is_some());
    /// ```
    pub fn try_acquire(&self) -> Option<LockGuard<'_>> {
        self.pool.try_take().then(|| LockGuard { lock: self })
    }

    /// Whether an acquire would have to wait: the lock is held, or handed to a waiter that has
    /// not run yet.
    ///
    /// ```
    /// let lock = evloop::sync::Lock::new();
    /// assert!(!lock.locked());
    /// let _guard = lock.try_acquire();
    /// assert!(lock.locked());
    /// ```
    pub fn locked(&self) -> bool {
        self.pool.locked()
    }

    /// How many tasks are queued for the lock.
    ///
    /// ```
    /// use std::rc::Rc;
    ///
    /// evloop::run(async {
    ///     let lock = Rc::new(evloop::sync::Lock::new());
    ///     let guard = lock.acquire().await.unwrap();
    ///     let waiter = {
    ///         let lock = lock.clone();
    ///         evloop::spawn(async move { drop(lock.acquire().await.unwrap()) })
    ///     };
    ///     evloop::task::yield_now().await; // the task runs and queues up for the lock
    ///     assert_eq!(lock.waiters(), 1);
    ///     drop(guard); // hands the lock to the waiter
    ///     waiter.await?;
    ///     assert_eq!(lock.waiters(), 0);
    ///     Ok::<(), evloop::task::TaskError>(())
    /// })??;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn waiters(&self) -> usize {
        self.pool.waiting()
    }
}

impl Default for Lock {
    fn default() -> Self {
        Lock::new()
    }
}

impl fmt::Debug for Lock {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Lock")
            .field("locked", &self.locked())
            .field("waiters", &self.waiters())
            .finish()
    }
}

/// Proof that the task holds a [`Lock`]; dropping it releases the lock (handing it to the first
/// waiter, if any).
///
/// ```
/// let lock = evloop::sync::Lock::new();
/// {
///     let _guard = lock.try_acquire().expect("free");
///     assert!(lock.locked());
/// } // `_guard` is dropped here, and the lock released
/// assert!(!lock.locked());
/// ```
#[must_use = "if unused the guard is dropped at once and releases what it holds"]
pub struct LockGuard<'a> {
    pub(crate) lock: &'a Lock,
}

impl<'a> LockGuard<'a> {
    /// The lock this guard holds.
    ///
    /// ```
    /// let lock = evloop::sync::Lock::new();
    /// let guard = lock.try_acquire().expect("free");
    /// assert!(std::ptr::eq(guard.lock(), &lock));
    /// ```
    pub fn lock(&self) -> &'a Lock {
        self.lock
    }
}

impl Drop for LockGuard<'_> {
    fn drop(&mut self) {
        self.lock.pool.put_back(1);
    }
}

impl fmt::Debug for LockGuard<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("LockGuard")
    }
}

/// The future of [`Lock::acquire`](crate::sync::Lock::acquire) (and
/// [`Condition::acquire`](crate::sync::Condition::acquire)).
///
/// ```
/// use std::time::Duration;
/// use evloop::{event_loop::Builder, sync::Lock};
///
/// Builder::new().virtual_clock(true).run(async {
///     let lock = Lock::new();
///     let _held = lock.acquire().await.unwrap();
///     // The timeout drops the waiting `LockAcquire`, which gives up its place in the queue.
///     let r = evloop::time::timeout(Duration::from_secs(1), lock.acquire()).await;
///     assert!(r.is_err());
///     assert_eq!(lock.waiters(), 0);
/// })?;
/// # Ok::<(), evloop::task::RunError>(())
/// ```
#[must_use = "futures do nothing unless you `.await` or poll them"]
pub struct LockAcquire<'a> {
    lock: &'a Lock,
    /// For trace mode, the task dump and the wrong-loop error.
    what: WaitOp,
    waiter: PermitWaiter<'a>,
}

impl<'a> Future for LockAcquire<'a> {
    type Output = Result<LockGuard<'a>, SyncError>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.get_mut();
        let (lock, what) = (this.lock, this.what);
        this.waiter
            .poll_wait(cx, what)
            .map(|r| r.map(|()| LockGuard { lock }).map_err(SyncError::WrongLoop))
    }
}

impl LockAcquire<'_> {
    pub(crate) fn is_queued(&self) -> bool {
        self.waiter.is_queued()
    }
}

impl fmt::Debug for LockAcquire<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LockAcquire")
            .field("queued", &self.waiter.is_queued())
            .finish()
    }
}
