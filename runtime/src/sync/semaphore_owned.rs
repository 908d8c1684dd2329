//! [`Semaphore::acquire_owned`] and its [`OwnedSemaphorePermit`] (tokio's): permits that own
//! an `Rc` of their semaphore, so they have no lifetime and move into a spawned task (tokio's
//! `Arc<Semaphore>`; evloop's primitives are single-threaded, so `Rc`).
//!
//! The wait is the semaphore's own line of the wait queue (the permit pool's), reached through
//! the `Rc`: the same FIFO fairness, cancellation safety, closing and loop binding as `acquire`.

use std::fmt;
use std::future::poll_fn;
use std::ops::Deref;
use std::rc::Rc;

use crate::sync::error::SyncError;
use crate::sync::ops::WaitOp;
use crate::sync::pool::{Closed, ManyPermits, PoolState};
use crate::sync::semaphore::{Semaphore, TryAcquireError, check_many};
use crate::sync::semaphore_permit::merged;
use crate::sync::wait_queue::Waiter;

/// An `Rc<Semaphore>` seen as its pool's state, for the owned waiter.
struct SemaphoreRef(Rc<Semaphore>);

impl Deref for SemaphoreRef {
    type Target = std::cell::RefCell<PoolState>;
    fn deref(&self) -> &Self::Target {
        self.0.pool.state()
    }
}

impl Semaphore {
    /// [`acquire`](Semaphore::acquire) for a semaphore in an `Rc`: the permit owns a clone of
    /// the `Rc`, so it can move into a spawned task (tokio's `acquire_owned` on an `Arc`). Fails
    /// as `acquire` does ([`SyncError::Closed`], [`SyncError::WrongLoop`]).
    ///
    /// ```
    /// use std::rc::Rc;
    /// use evloop::sync::Semaphore;
    ///
    /// evloop::run(async {
    ///     let limit = Rc::new(Semaphore::new(2)); // at most two jobs at a time
    ///     let mut jobs = Vec::new();
    ///     for i in 0..5 {
    ///         let permit = limit.clone().acquire_owned().await.unwrap();
    ///         jobs.push(evloop::spawn(async move {
    ///             let _permit = permit; // released when the job ends
    ///             i * 10
    ///         }));
    ///     }
    ///     for j in jobs {
    ///         j.await.unwrap();
    ///     }
    ///     assert_eq!(limit.available_permits(), 2);
    /// })?;
    /// # Ok::<(), evloop::task::RunError>(())
    /// ```
    pub async fn acquire_owned(self: Rc<Self>) -> Result<OwnedSemaphorePermit, SyncError> {
        self.acquire_many_owned(1).await
    }

    /// [`acquire_many`](Semaphore::acquire_many) for a semaphore in an `Rc` (tokio's
    /// `acquire_many_owned`).
    ///
    /// # Panics
    /// As `acquire_many`: `n` above [`MAX_PERMITS`](Semaphore::MAX_PERMITS) (32-bit targets).
    ///
    /// ```
    /// use std::rc::Rc;
    ///
    /// evloop::run(async {
    ///     let sem = Rc::new(evloop::sync::Semaphore::new(4));
    ///     let permit = sem.clone().acquire_many_owned(3).await.unwrap();
    ///     assert_eq!(permit.num_permits(), 3);
    ///     assert_eq!(sem.available_permits(), 1);
    /// })?;
    /// # Ok::<(), evloop::task::RunError>(())
    /// ```
    pub async fn acquire_many_owned(self: Rc<Self>, n: u32) -> Result<OwnedSemaphorePermit, SyncError> {
        let n = check_many(n);
        let mut waiter: Waiter<SemaphoreRef, ManyPermits> = Waiter::new(SemaphoreRef(self.clone()), n);
        match poll_fn(|cx| waiter.poll_wait(cx, WaitOp::SemaphoreAcquire)).await {
            Ok(Ok(())) => Ok(OwnedSemaphorePermit {
                sem: self,
                permits: n as usize,
            }),
            Ok(Err(Closed)) => Err(SyncError::Closed),
            Err(e) => Err(SyncError::WrongLoop(e)),
        }
    }

    /// [`try_acquire`](Semaphore::try_acquire) for a semaphore in an `Rc`: an owned permit if
    /// one is free and nobody waits.
    ///
    /// # Errors
    /// As `try_acquire`.
    ///
    /// ```
    /// use std::rc::Rc;
    ///
    /// let sem = Rc::new(evloop::sync::Semaphore::new(1));
    /// let permit = sem.clone().try_acquire_owned().expect("free");
    /// assert!(sem.clone().try_acquire_owned().is_err());
    /// drop(permit);
    /// assert_eq!(sem.available_permits(), 1);
    /// ```
    pub fn try_acquire_owned(self: Rc<Self>) -> Result<OwnedSemaphorePermit, TryAcquireError> {
        self.try_acquire_many_owned(1)
    }

    /// [`try_acquire_many`](Semaphore::try_acquire_many) for a semaphore in an `Rc`.
    ///
    /// # Errors
    /// As `try_acquire`.
    ///
    /// # Panics
    /// As `try_acquire_many`: `n` above [`MAX_PERMITS`](Semaphore::MAX_PERMITS) (32-bit targets).
    ///
    /// ```
    /// use std::rc::Rc;
    ///
    /// let sem = Rc::new(evloop::sync::Semaphore::new(3));
    /// let permit = sem.clone().try_acquire_many_owned(2).unwrap();
    /// assert!(sem.clone().try_acquire_many_owned(2).is_err());
    /// assert_eq!(permit.num_permits(), 2);
    /// ```
    #[track_caller]
    pub fn try_acquire_many_owned(self: Rc<Self>, n: u32) -> Result<OwnedSemaphorePermit, TryAcquireError> {
        self.pool
            .try_take_many(check_many(n))
            .map_err(TryAcquireError::from_closed)?;
        Ok(OwnedSemaphorePermit {
            sem: self,
            permits: n as usize,
        })
    }
}

/// Permits of a [`Semaphore`] that own an `Rc` of it (tokio's `OwnedSemaphorePermit`);
/// dropping it gives the permits back.
///
/// ```
/// use std::rc::Rc;
///
/// let sem = Rc::new(evloop::sync::Semaphore::new(1));
/// let permit = sem.clone().try_acquire_owned().unwrap();
/// assert!(Rc::ptr_eq(permit.semaphore(), &sem));
/// assert_eq!(sem.available_permits(), 0);
/// drop(permit);
/// assert_eq!(sem.available_permits(), 1);
/// ```
#[must_use = "if unused the guard is dropped at once and releases what it holds"]
pub struct OwnedSemaphorePermit {
    sem: Rc<Semaphore>,
    /// What the drop gives back (0 once forgotten, merged into another or split off).
    permits: usize,
}

impl OwnedSemaphorePermit {
    /// The semaphore it belongs to.
    ///
    /// ```
    /// use std::rc::Rc;
    ///
    /// let sem = Rc::new(evloop::sync::Semaphore::new(1));
    /// let permit = sem.clone().try_acquire_owned().unwrap();
    /// assert_eq!(permit.semaphore().available_permits(), 0);
    /// ```
    pub fn semaphore(&self) -> &Rc<Semaphore> {
        &self.sem
    }

    /// Keeps the permits out of the semaphore for good (as [`SemaphorePermit::forget`](crate::sync::SemaphorePermit::forget)).
    ///
    /// ```
    /// use std::rc::Rc;
    ///
    /// let sem = Rc::new(evloop::sync::Semaphore::new(1));
    /// sem.clone().try_acquire_owned().unwrap().forget();
    /// assert_eq!(sem.available_permits(), 0);
    /// ```
    pub fn forget(mut self) {
        self.sem.pool.forget(std::mem::take(&mut self.permits));
    }

    /// Takes `other`'s permits into this one (as [`SemaphorePermit::merge`](crate::sync::SemaphorePermit::merge)).
    ///
    /// # Panics
    /// If `other` comes from another semaphore (tokio's contract).
    ///
    /// ```
    /// use std::rc::Rc;
    ///
    /// let sem = Rc::new(evloop::sync::Semaphore::new(2));
    /// let mut permit = sem.clone().try_acquire_owned().unwrap();
    /// permit.merge(sem.clone().try_acquire_owned().unwrap());
    /// assert_eq!(permit.num_permits(), 2);
    /// ```
    #[track_caller]
    pub fn merge(&mut self, mut other: OwnedSemaphorePermit) {
        assert!(
            Rc::ptr_eq(&self.sem, &other.sem),
            "merging permits from different semaphore instances"
        );
        self.permits = merged(self.permits, std::mem::take(&mut other.permits));
    }

    /// Moves `n` of its permits into a new permit; `None` if it holds fewer (as
    /// [`SemaphorePermit::split`](crate::sync::SemaphorePermit::split)).
    ///
    /// ```
    /// use std::rc::Rc;
    ///
    /// let sem = Rc::new(evloop::sync::Semaphore::new(3));
    /// let mut p1 = sem.clone().try_acquire_many_owned(3).unwrap();
    /// let p2 = p1.split(2).unwrap();
    /// assert_eq!((p1.num_permits(), p2.num_permits()), (1, 2));
    /// ```
    pub fn split(&mut self, n: usize) -> Option<OwnedSemaphorePermit> {
        self.permits = self.permits.checked_sub(n)?;
        Some(OwnedSemaphorePermit {
            sem: self.sem.clone(),
            permits: n,
        })
    }

    /// How many permits it holds.
    ///
    /// ```
    /// use std::rc::Rc;
    ///
    /// let sem = Rc::new(evloop::sync::Semaphore::new(3));
    /// assert_eq!(sem.try_acquire_many_owned(3).unwrap().num_permits(), 3);
    /// ```
    pub fn num_permits(&self) -> usize {
        self.permits
    }
}

impl Drop for OwnedSemaphorePermit {
    fn drop(&mut self) {
        if self.permits > 0 {
            self.sem.pool.put_back(self.permits);
        }
    }
}

impl fmt::Debug for OwnedSemaphorePermit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OwnedSemaphorePermit")
            .field("permits", &self.permits)
            .finish()
    }
}
