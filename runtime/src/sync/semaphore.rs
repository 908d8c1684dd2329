//! [`Semaphore`] and [`BoundedSemaphore`] (asyncio's), their [`SemaphorePermit`] and the future
//! of `acquire`: counted permit pools with a fair queue.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use crate::sync::error::SyncError;
use crate::sync::ops::WaitOp;
use crate::sync::pool::{PermitWaiter, Pool};

/// A counter of permits (asyncio's `Semaphore`), FIFO-fair and cancellation-safe.
///
/// [`acquire`](Semaphore::acquire) waits for a permit and gives a [`SemaphorePermit`] that
/// returns it when dropped. [`add_permits`](Semaphore::add_permits) (or
/// [`release`](Semaphore::release), one at a time) adds permits, for instance to give back one
/// that was kept with [`SemaphorePermit::forget`]; there is no upper bound (see
/// [`BoundedSemaphore`] for one).
///
/// ```
/// use std::cell::Cell;
/// use std::rc::Rc;
/// use evloop::sync::Semaphore;
///
/// let peak = evloop::run(async {
///     let sem = Rc::new(Semaphore::new(2)); // at most two tasks at a time
///     let (running, peak) = (Rc::new(Cell::new(0)), Rc::new(Cell::new(0)));
///     let tasks: Vec<_> = (0..5)
///         .map(|_| {
///             let (sem, running, peak) = (sem.clone(), running.clone(), peak.clone());
///             evloop::spawn(async move {
///                 let _permit = sem.acquire().await.unwrap(); // `async with sem:`
///                 running.set(running.get() + 1);
///                 peak.set(peak.get().max(running.get()));
///                 evloop::task::yield_now().await;
///                 running.set(running.get() - 1);
///             })
///         })
///         .collect();
///     for t in tasks {
///         t.await?;
///     }
///     Ok::<_, evloop::task::TaskError>(peak.get())
/// })??;
/// assert_eq!(peak, 2);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct Semaphore {
    pub(super) pool: Pool,
}

impl Semaphore {
    /// A semaphore with `permits` permits available.
    ///
    /// ```
    /// let sem = evloop::sync::Semaphore::new(3);
    /// assert_eq!(sem.available_permits(), 3);
    /// assert!(!sem.locked());
    /// ```
    pub fn new(permits: usize) -> Semaphore {
        Semaphore {
            pool: Pool::new(permits),
        }
    }

    /// Waits for a permit; waiters are served in arrival order.
    ///
    /// # Errors
    /// [`SyncError::WrongLoop`](crate::sync::SyncError::WrongLoop) when a task of another loop
    /// than the one it is bound to would have to wait, as for
    /// [`Lock::acquire`](crate::sync::Lock::acquire).
    ///
    /// ```
    /// evloop::run(async {
    ///     let sem = evloop::sync::Semaphore::new(1);
    ///     let permit = sem.acquire().await.unwrap();
    ///     assert_eq!(sem.available_permits(), 0);
    ///     drop(permit); // gives the permit back
    ///     assert_eq!(sem.available_permits(), 1);
    /// })?;
    /// # Ok::<(), evloop::task::RunError>(())
    /// ```
    pub fn acquire(&self) -> SemaphoreAcquire<'_> {
        SemaphoreAcquire {
            pool: &self.pool,
            what: WaitOp::SemaphoreAcquire,
            waiter: self.pool.waiter(),
        }
    }

    /// Takes a permit if that needs no wait: one is available and nobody is queued.
    ///
    /// ```
    /// let sem = evloop::sync::Semaphore::new(1);
    /// let permit = sem.try_acquire().expect("one permit is free");
    /// assert!(sem.try_acquire().is_none());
    /// drop(permit);
    /// assert!(sem.try_acquire().is_some());
    /// ```
    pub fn try_acquire(&self) -> Option<SemaphorePermit<'_>> {
        self.pool.try_take().then(|| SemaphorePermit { pool: &self.pool })
    }

    /// Permits nobody holds or has been handed (asyncio's `_value`).
    ///
    /// ```
    /// let sem = evloop::sync::Semaphore::new(2);
    /// let _a = sem.try_acquire();
    /// assert_eq!(sem.available_permits(), 1);
    /// ```
    pub fn available_permits(&self) -> usize {
        self.pool.available()
    }

    /// Whether an acquire would have to wait (asyncio's `locked()`).
    ///
    /// ```
    /// let sem = evloop::sync::Semaphore::new(1);
    /// assert!(!sem.locked());
    /// let _permit = sem.try_acquire();
    /// assert!(sem.locked()); // an acquire would wait
    /// ```
    pub fn locked(&self) -> bool {
        self.pool.locked()
    }

    /// How many tasks are queued for a permit.
    ///
    /// ```
    /// use std::rc::Rc;
    ///
    /// evloop::run(async {
    ///     let sem = Rc::new(evloop::sync::Semaphore::new(0));
    ///     let waiter = {
    ///         let sem = sem.clone();
    ///         evloop::spawn(async move { sem.acquire().await.unwrap().forget() })
    ///     };
    ///     evloop::task::yield_now().await; // the task queues up for a permit
    ///     assert_eq!(sem.waiters(), 1);
    ///     sem.release();
    ///     waiter.await?;
    ///     assert_eq!(sem.waiters(), 0);
    ///     Ok::<(), evloop::task::TaskError>(())
    /// })??;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn waiters(&self) -> usize {
        self.pool.waiting()
    }

    /// Adds `n` permits, handing them to the first waiters (the count saturates at
    /// `usize::MAX`).
    ///
    /// ```
    /// let sem = evloop::sync::Semaphore::new(0);
    /// assert!(sem.try_acquire().is_none());
    /// sem.add_permits(2);
    /// assert_eq!(sem.available_permits(), 2);
    /// ```
    pub fn add_permits(&self, n: usize) {
        self.pool.put_back(n);
    }

    /// Adds one permit (asyncio's `release()`).
    ///
    /// ```
    /// let sem = evloop::sync::Semaphore::new(1);
    /// sem.try_acquire().expect("free").forget(); // asyncio's `acquire()` without `async with`
    /// assert_eq!(sem.available_permits(), 0);
    /// sem.release();
    /// assert_eq!(sem.available_permits(), 1);
    /// ```
    pub fn release(&self) {
        self.add_permits(1);
    }
}

impl fmt::Debug for Semaphore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Semaphore")
            .field("available", &self.available_permits())
            .field("waiters", &self.waiters())
            .finish()
    }
}

/// A [`Semaphore`] that cannot be released beyond its initial number of permits (asyncio's
/// `BoundedSemaphore`): [`release`](BoundedSemaphore::release) gives back a permit kept with
/// [`SemaphorePermit::forget`], and is a [`SyncError::OverReleased`] when there is none.
///
/// ```
/// use evloop::sync::{BoundedSemaphore, SyncError};
///
/// let sem = BoundedSemaphore::new(1);
/// sem.try_acquire().expect("free").forget();
/// assert_eq!(sem.release(), Ok(())); // gives the forgotten permit back
/// // A second release would push the count past its bound: refused, nothing changes.
/// assert_eq!(sem.release(), Err(SyncError::OverReleased { bound: 1 }));
/// assert_eq!(sem.available_permits(), 1);
/// ```
pub struct BoundedSemaphore {
    pool: Pool,
    bound: usize,
}

impl BoundedSemaphore {
    /// A semaphore with `permits` permits, which is also its maximum.
    ///
    /// ```
    /// let sem = evloop::sync::BoundedSemaphore::new(2);
    /// assert_eq!(sem.available_permits(), 2);
    /// assert_eq!(sem.bound(), 2);
    /// ```
    pub fn new(permits: usize) -> BoundedSemaphore {
        BoundedSemaphore {
            pool: Pool::new(permits),
            bound: permits,
        }
    }

    /// Waits for a permit; waiters are served in arrival order.
    ///
    /// # Errors
    /// [`SyncError::WrongLoop`](crate::sync::SyncError::WrongLoop) when a task of another loop
    /// than the one it is bound to would have to wait, as for
    /// [`Lock::acquire`](crate::sync::Lock::acquire).
    ///
    /// ```
    /// evloop::run(async {
    ///     let sem = evloop::sync::BoundedSemaphore::new(1);
    ///     let permit = sem.acquire().await.unwrap();
    ///     assert!(sem.locked());
    ///     drop(permit);
    ///     assert_eq!(sem.available_permits(), 1);
    /// })?;
    /// # Ok::<(), evloop::task::RunError>(())
    /// ```
    pub fn acquire(&self) -> SemaphoreAcquire<'_> {
        SemaphoreAcquire {
            pool: &self.pool,
            what: WaitOp::BoundedSemaphoreAcquire,
            waiter: self.pool.waiter(),
        }
    }

    /// Takes a permit if that needs no wait.
    ///
    /// ```
    /// let sem = evloop::sync::BoundedSemaphore::new(1);
    /// let permit = sem.try_acquire().expect("one permit is free");
    /// assert!(sem.try_acquire().is_none());
    /// drop(permit);
    /// assert!(sem.try_acquire().is_some());
    /// ```
    pub fn try_acquire(&self) -> Option<SemaphorePermit<'_>> {
        self.pool.try_take().then(|| SemaphorePermit { pool: &self.pool })
    }

    /// Permits nobody holds or has been handed.
    ///
    /// ```
    /// let sem = evloop::sync::BoundedSemaphore::new(3);
    /// let _a = sem.try_acquire();
    /// let _b = sem.try_acquire();
    /// assert_eq!(sem.available_permits(), 1);
    /// ```
    pub fn available_permits(&self) -> usize {
        self.pool.available()
    }

    /// The initial number of permits, which the count never exceeds.
    ///
    /// ```
    /// let sem = evloop::sync::BoundedSemaphore::new(2);
    /// let _permit = sem.try_acquire();
    /// assert_eq!(sem.bound(), 2); // the bound does not move with the count
    /// assert_eq!(sem.available_permits(), 1);
    /// ```
    pub fn bound(&self) -> usize {
        self.bound
    }

    /// Whether an acquire would have to wait.
    ///
    /// ```
    /// let sem = evloop::sync::BoundedSemaphore::new(1);
    /// let permit = sem.try_acquire();
    /// assert!(sem.locked());
    /// drop(permit);
    /// assert!(!sem.locked());
    /// ```
    pub fn locked(&self) -> bool {
        self.pool.locked()
    }

    /// How many tasks are queued for a permit.
    ///
    /// ```
    /// use std::rc::Rc;
    ///
    /// evloop::run(async {
    ///     let sem = Rc::new(evloop::sync::BoundedSemaphore::new(1));
    ///     let permit = sem.acquire().await.unwrap();
    ///     let waiter = {
    ///         let sem = sem.clone();
    ///         evloop::spawn(async move { drop(sem.acquire().await.unwrap()) })
    ///     };
    ///     evloop::task::yield_now().await;
    ///     assert_eq!(sem.waiters(), 1);
    ///     drop(permit); // handed to the waiter
    ///     waiter.await?;
    ///     assert_eq!(sem.waiters(), 0);
    ///     Ok::<(), evloop::task::TaskError>(())
    /// })??;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn waiters(&self) -> usize {
        self.pool.waiting()
    }

    /// Gives back one permit that was kept with [`SemaphorePermit::forget`]. With none to give
    /// back, the count would exceed its initial value: [`SyncError::OverReleased`], and nothing
    /// changes.
    ///
    /// ```
    /// use evloop::sync::{BoundedSemaphore, SyncError};
    ///
    /// let sem = BoundedSemaphore::new(2);
    /// let permit = sem.try_acquire().expect("free");
    /// permit.forget();
    /// assert_eq!(sem.available_permits(), 1);
    /// assert_eq!(sem.release(), Ok(()));
    /// assert_eq!(sem.available_permits(), 2);
    /// assert_eq!(sem.release(), Err(SyncError::OverReleased { bound: 2 }));
    /// ```
    pub fn release(&self) -> Result<(), SyncError> {
        if self.pool.give_back_forgotten() {
            Ok(())
        } else {
            Err(SyncError::OverReleased { bound: self.bound })
        }
    }
}

impl fmt::Debug for BoundedSemaphore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BoundedSemaphore")
            .field("available", &self.available_permits())
            .field("bound", &self.bound)
            .field("waiters", &self.waiters())
            .finish()
    }
}

/// A permit of a [`Semaphore`] or [`BoundedSemaphore`]; dropping it returns the permit (to the
/// first waiter, if any).
///
/// ```
/// let sem = evloop::sync::Semaphore::new(1);
/// {
///     let _permit = sem.try_acquire().expect("free");
///     assert_eq!(sem.available_permits(), 0);
/// } // the permit goes back here
/// assert_eq!(sem.available_permits(), 1);
/// ```
#[must_use = "if unused the guard is dropped at once and releases what it holds"]
pub struct SemaphorePermit<'a> {
    pool: &'a Pool,
}

impl SemaphorePermit<'_> {
    /// Keeps the permit out of the semaphore without a guard (asyncio's `acquire()` without a
    /// matching `release()`): give it back later with [`Semaphore::release`] /
    /// [`Semaphore::add_permits`], or [`BoundedSemaphore::release`].
    ///
    /// ```
    /// let sem = evloop::sync::Semaphore::new(2);
    /// sem.try_acquire().expect("free").forget();
    /// assert_eq!(sem.available_permits(), 1); // still taken, with no guard to give it back
    /// sem.release(); // asyncio's `sem.release()`
    /// assert_eq!(sem.available_permits(), 2);
    /// ```
    pub fn forget(self) {
        let pool = self.pool;
        std::mem::forget(self);
        pool.forget_one();
    }
}

impl Drop for SemaphorePermit<'_> {
    fn drop(&mut self) {
        self.pool.put_back(1);
    }
}

impl fmt::Debug for SemaphorePermit<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("SemaphorePermit")
    }
}

/// The future of [`Semaphore::acquire`] and [`BoundedSemaphore::acquire`].
///
/// ```
/// use std::rc::Rc;
///
/// evloop::run(async {
///     let sem = Rc::new(evloop::sync::Semaphore::new(0));
///     let first = {
///         let sem = sem.clone();
///         evloop::spawn(async move { sem.acquire().await.unwrap().forget() })
///     };
///     evloop::task::yield_now().await; // `first` waits in line
///     sem.release(); // the permit is handed to `first` ...
///     assert!(sem.try_acquire().is_none()); // ... so a newcomer cannot take it
///     first.await?;
///     Ok::<(), evloop::task::TaskError>(())
/// })??;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[must_use = "futures do nothing unless you `.await` or poll them"]
pub struct SemaphoreAcquire<'a> {
    pool: &'a Pool,
    /// For trace mode, the task dump and the wrong-loop error.
    what: WaitOp,
    waiter: PermitWaiter<'a>,
}

impl<'a> Future for SemaphoreAcquire<'a> {
    type Output = Result<SemaphorePermit<'a>, SyncError>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.get_mut();
        let (pool, what) = (this.pool, this.what);
        this.waiter
            .poll_wait(cx, what)
            .map(|r| r.map(|()| SemaphorePermit { pool }).map_err(SyncError::WrongLoop))
    }
}

impl fmt::Debug for SemaphoreAcquire<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SemaphoreAcquire")
            .field("queued", &self.waiter.is_queued())
            .finish()
    }
}
