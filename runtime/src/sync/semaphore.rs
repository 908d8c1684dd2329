//! [`Semaphore`] (asyncio's and tokio's at once) and the future of its `acquire`: a counted
//! permit pool with a fair queue, which can be closed. Its permits are in `semaphore_permit`,
//! the owned ones (`acquire_owned`) in `semaphore_owned`, [`BoundedSemaphore`](crate::sync::BoundedSemaphore)
//! in `bounded_semaphore`.
//!
//! Every acquire is a wait for `n` permits in the pool's line (`pool`): served first come,
//! first served, each once its whole request is free, so a big request at the head holds back
//! the smaller ones behind it (tokio's `acquire_many`).

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use crate::sync::error::SyncError;
use crate::sync::ops::WaitOp;
use crate::sync::pool::{Closed, PermitsWaiter, Pool};
use crate::sync::semaphore_permit::SemaphorePermit;

/// A counter of permits, FIFO-fair and cancellation-safe: asyncio's `Semaphore` (`acquire`,
/// `release`, `locked`) and tokio's (`acquire_many`, `try_acquire`, `close`, `forget_permits`,
/// owned permits).
///
/// [`acquire`](Semaphore::acquire) waits for a permit and gives a [`SemaphorePermit`] that
/// returns it when dropped. [`add_permits`](Semaphore::add_permits) (or
/// [`release`](Semaphore::release), one at a time) adds permits, for instance to give back one
/// that was kept with [`SemaphorePermit::forget`]; the count may not exceed
/// [`MAX_PERMITS`](Semaphore::MAX_PERMITS) (see [`BoundedSemaphore`](crate::sync::BoundedSemaphore)
/// for a bound of your own).
///
/// # Panics
/// As tokio's: [`new`](Semaphore::new) with more than `MAX_PERMITS` permits, and
/// [`add_permits`](Semaphore::add_permits) past it. Nothing else panics (a closed semaphore is an
/// error value).
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
    /// The most permits a semaphore may hold (tokio's value: `usize::MAX >> 3`).
    ///
    /// ```
    /// use evloop::sync::Semaphore;
    ///
    /// let sem = Semaphore::new(Semaphore::MAX_PERMITS); // the most it may hold
    /// assert_eq!(sem.available_permits(), usize::MAX >> 3);
    /// ```
    pub const MAX_PERMITS: usize = usize::MAX >> 3;

    /// A semaphore with `permits` permits available.
    ///
    /// # Panics
    /// If `permits` exceeds [`MAX_PERMITS`](Semaphore::MAX_PERMITS) (tokio's contract).
    ///
    /// ```
    /// let sem = evloop::sync::Semaphore::new(3);
    /// assert_eq!(sem.available_permits(), 3);
    /// assert!(!sem.locked());
    /// ```
    #[track_caller]
    pub fn new(permits: usize) -> Semaphore {
        assert!(
            permits <= Semaphore::MAX_PERMITS,
            "a semaphore may not have more than MAX_PERMITS permits ({})",
            Semaphore::MAX_PERMITS
        );
        Semaphore::unchecked(permits)
    }

    /// No bound check: the pool of a [`BoundedSemaphore`](crate::sync::BoundedSemaphore), whose
    /// own bound is the caller's.
    pub(crate) fn unchecked(permits: usize) -> Semaphore {
        Semaphore {
            pool: Pool::new(permits),
        }
    }

    /// A semaphore any loop's tasks may wait on (an [`RwLock`](crate::sync::RwLock)'s, bound to
    /// no loop as a [`Mutex`](crate::sync::Mutex) is).
    pub(crate) fn unbound(permits: usize) -> Semaphore {
        Semaphore {
            pool: Pool::unbound(permits),
        }
    }

    /// Waits for a permit; waiters are served in arrival order.
    ///
    /// # Errors
    /// [`SyncError::Closed`] once the semaphore is [closed](Semaphore::close) (tokio's
    /// `AcquireError`), [`SyncError::WrongLoop`] when a task of another loop than the one it is
    /// bound to would have to wait, as for [`Lock::acquire`](crate::sync::Lock::acquire).
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
        self.acquire_as(WaitOp::SemaphoreAcquire, 1)
    }

    /// Waits for `n` permits at once (tokio's `acquire_many`). The request keeps its place in
    /// the line until all `n` are free: later, smaller requests wait behind it.
    ///
    /// # Errors
    /// As [`acquire`](Semaphore::acquire).
    ///
    /// # Panics
    /// If `n` exceeds [`MAX_PERMITS`](Semaphore::MAX_PERMITS) (possible on 32-bit targets only).
    ///
    /// ```
    /// evloop::run(async {
    ///     let sem = evloop::sync::Semaphore::new(5);
    ///     let permit = sem.acquire_many(3).await.unwrap();
    ///     assert_eq!(permit.num_permits(), 3);
    ///     assert_eq!(sem.available_permits(), 2);
    /// })?;
    /// # Ok::<(), evloop::task::RunError>(())
    /// ```
    #[track_caller]
    pub fn acquire_many(&self, n: u32) -> SemaphoreAcquire<'_> {
        self.acquire_as(WaitOp::SemaphoreAcquire, check_many(n))
    }

    pub(crate) fn acquire_as(&self, what: WaitOp, n: u32) -> SemaphoreAcquire<'_> {
        SemaphoreAcquire {
            sem: self,
            what,
            permits: n,
            waiter: self.pool.waiter_many(n),
        }
    }

    /// Takes a permit if that needs no wait: one is available and nobody is queued.
    ///
    /// # Errors
    /// [`TryAcquireError::Closed`] once the semaphore is closed, [`TryAcquireError::NoPermits`]
    /// when it would have to wait.
    ///
    /// ```
    /// let sem = evloop::sync::Semaphore::new(1);
    /// let permit = sem.try_acquire().expect("one permit is free");
    /// assert!(sem.try_acquire().is_err());
    /// drop(permit);
    /// assert!(sem.try_acquire().is_ok());
    /// ```
    pub fn try_acquire(&self) -> Result<SemaphorePermit<'_>, TryAcquireError> {
        self.try_acquire_many(1)
    }

    /// Takes `n` permits if that needs no wait: as many are available and nobody is queued.
    ///
    /// # Errors
    /// As [`try_acquire`](Semaphore::try_acquire).
    ///
    /// # Panics
    /// If `n` exceeds [`MAX_PERMITS`](Semaphore::MAX_PERMITS) (possible on 32-bit targets only).
    ///
    /// ```
    /// use evloop::sync::{Semaphore, TryAcquireError};
    ///
    /// let sem = Semaphore::new(4);
    /// let three = sem.try_acquire_many(3).unwrap();
    /// assert_eq!(sem.try_acquire_many(2).unwrap_err(), TryAcquireError::NoPermits);
    /// drop(three);
    /// assert_eq!(sem.try_acquire_many(4).unwrap().num_permits(), 4);
    /// ```
    #[track_caller]
    pub fn try_acquire_many(&self, n: u32) -> Result<SemaphorePermit<'_>, TryAcquireError> {
        self.pool
            .try_take_many(check_many(n))
            .map_err(TryAcquireError::from_closed)?;
        Ok(SemaphorePermit::new(self, n as usize))
    }

    /// Permits nobody holds or has been handed (asyncio's `_value`). A queued `acquire_many`
    /// that waits for more does not hold the ones that are free meanwhile (tokio's does, and
    /// counts them out of this number).
    ///
    /// ```
    /// let sem = evloop::sync::Semaphore::new(2);
    /// let _a = sem.try_acquire();
    /// assert_eq!(sem.available_permits(), 1);
    /// ```
    pub fn available_permits(&self) -> usize {
        self.pool.available()
    }

    /// Whether an acquire of one permit would have to wait (asyncio's `locked()`).
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

    /// How many tasks are queued for permits.
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

    /// Adds `n` permits, handing them to the first waiters. A closed semaphore takes them too
    /// (tokio's), though it hands none out.
    ///
    /// # Panics
    /// If the free permits would exceed [`MAX_PERMITS`](Semaphore::MAX_PERMITS) (tokio's
    /// contract; counted before the waiters take theirs).
    ///
    /// ```
    /// let sem = evloop::sync::Semaphore::new(0);
    /// assert!(sem.try_acquire().is_err());
    /// sem.add_permits(2);
    /// assert_eq!(sem.available_permits(), 2);
    /// ```
    #[track_caller]
    pub fn add_permits(&self, n: usize) {
        let free = self.pool.available();
        if free.checked_add(n).is_none_or(|total| total > Semaphore::MAX_PERMITS) {
            panic!(
                "number of added permits ({n}) would overflow MAX_PERMITS ({})",
                Semaphore::MAX_PERMITS
            );
        }
        self.pool.put_back(n);
    }

    /// Adds one permit (asyncio's `release()`), as `add_permits(1)`.
    ///
    /// ```
    /// let sem = evloop::sync::Semaphore::new(1);
    /// sem.try_acquire().expect("free").forget(); // asyncio's `acquire()` without `async with`
    /// assert_eq!(sem.available_permits(), 0);
    /// sem.release();
    /// assert_eq!(sem.available_permits(), 1);
    /// ```
    #[track_caller]
    pub fn release(&self) {
        self.add_permits(1);
    }

    /// Takes up to `n` free permits away for good (tokio's `forget_permits`); returns how many
    /// it took. Permits held by guards are not touched.
    ///
    /// ```
    /// let sem = evloop::sync::Semaphore::new(3);
    /// assert_eq!(sem.forget_permits(2), 2);
    /// assert_eq!(sem.forget_permits(5), 1); // only one was left
    /// assert_eq!(sem.available_permits(), 0);
    /// ```
    pub fn forget_permits(&self, n: usize) -> usize {
        self.pool.forget_free(n)
    }

    /// Closes the semaphore (tokio's `close`): every queued acquire ends with
    /// [`SyncError::Closed`], and so does every acquire from now on; `try_acquire` answers
    /// [`TryAcquireError::Closed`]. Permits already held stay valid and come back when dropped.
    ///
    /// ```
    /// let sem = evloop::sync::Semaphore::new(1);
    /// sem.close();
    /// assert!(sem.is_closed());
    /// assert_eq!(sem.try_acquire().unwrap_err(), evloop::sync::TryAcquireError::Closed);
    /// ```
    pub fn close(&self) {
        self.pool.close();
    }

    /// Whether [`close`](Semaphore::close) was called.
    ///
    /// ```
    /// let sem = evloop::sync::Semaphore::new(1);
    /// assert!(!sem.is_closed());
    /// sem.close();
    /// assert!(sem.is_closed());
    /// ```
    pub fn is_closed(&self) -> bool {
        self.pool.is_closed()
    }
}

/// `acquire_many`'s bound: tokio's panic for a request no semaphore could ever grant.
#[track_caller]
pub(crate) fn check_many(n: u32) -> u32 {
    assert!(
        n as usize <= Semaphore::MAX_PERMITS,
        "a semaphore may not have more than MAX_PERMITS permits ({})",
        Semaphore::MAX_PERMITS
    );
    n
}

impl fmt::Debug for Semaphore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Semaphore")
            .field("available", &self.available_permits())
            .field("waiters", &self.waiters())
            .field("closed", &self.is_closed())
            .finish()
    }
}

/// Why [`Semaphore::try_acquire`] (and its `_many` and owned forms) gave no permit (tokio's
/// `TryAcquireError`).
///
/// ```
/// use evloop::sync::{Semaphore, TryAcquireError};
///
/// let sem = Semaphore::new(0);
/// assert_eq!(sem.try_acquire().unwrap_err(), TryAcquireError::NoPermits);
/// sem.close();
/// assert_eq!(sem.try_acquire().unwrap_err().to_string(), "semaphore closed");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TryAcquireError {
    /// The semaphore was [closed](Semaphore::close).
    Closed,
    /// Not enough permits are free, or other tasks wait first.
    NoPermits,
}

impl TryAcquireError {
    /// The pool's refusal: `true` when it is closed.
    pub(crate) fn from_closed(closed: bool) -> TryAcquireError {
        if closed {
            TryAcquireError::Closed
        } else {
            TryAcquireError::NoPermits
        }
    }
}

impl fmt::Display for TryAcquireError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            TryAcquireError::Closed => "semaphore closed",
            TryAcquireError::NoPermits => "no permits available",
        })
    }
}

impl std::error::Error for TryAcquireError {}

/// The future of [`Semaphore::acquire`], [`Semaphore::acquire_many`] and
/// [`BoundedSemaphore::acquire`](crate::sync::BoundedSemaphore::acquire).
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
///     assert!(sem.try_acquire().is_err()); // ... so a newcomer cannot take it
///     first.await?;
///     Ok::<(), evloop::task::TaskError>(())
/// })??;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[must_use = "futures do nothing unless you `.await` or poll them"]
pub struct SemaphoreAcquire<'a> {
    sem: &'a Semaphore,
    /// For trace mode, the task dump and the wrong-loop error.
    what: WaitOp,
    permits: u32,
    waiter: PermitsWaiter<'a>,
}

impl<'a> Future for SemaphoreAcquire<'a> {
    type Output = Result<SemaphorePermit<'a>, SyncError>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.get_mut();
        let (sem, n) = (this.sem, this.permits as usize);
        this.waiter.poll_wait(cx, this.what).map(|r| match r {
            Ok(Ok(())) => Ok(SemaphorePermit::new(sem, n)),
            Ok(Err(Closed)) => Err(SyncError::Closed),
            Err(e) => Err(SyncError::WrongLoop(e)),
        })
    }
}

impl fmt::Debug for SemaphoreAcquire<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SemaphoreAcquire")
            .field("permits", &self.permits)
            .field("queued", &self.waiter.is_queued())
            .finish()
    }
}
