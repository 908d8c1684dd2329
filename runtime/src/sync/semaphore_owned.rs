//! [`Semaphore::acquire_owned`] and its [`OwnedSemaphorePermit`] (tokio's): a permit that owns
//! an `Rc` of its semaphore, so it has no lifetime and moves into a spawned task (tokio's
//! `Arc<Semaphore>`; evloop's primitives are single-threaded, so `Rc`).
//!
//! The wait is the semaphore's own line of the wait queue (the permit pool's), reached through
//! the `Rc`: the same FIFO fairness, cancellation safety and loop binding as `acquire`.

use std::fmt;
use std::future::poll_fn;
use std::ops::Deref;
use std::rc::Rc;

use crate::sync::error::SyncError;
use crate::sync::ops::WaitOp;
use crate::sync::pool::PoolState;
use crate::sync::semaphore::Semaphore;
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
    /// only as `acquire` does ([`SyncError::WrongLoop`]).
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
        let mut waiter: Waiter<SemaphoreRef, PoolState> = Waiter::new(SemaphoreRef(self.clone()), ());
        poll_fn(|cx| waiter.poll_wait(cx, WaitOp::SemaphoreAcquire))
            .await
            .map_err(SyncError::WrongLoop)?;
        Ok(OwnedSemaphorePermit {
            sem: self,
            forgotten: false,
        })
    }

    /// [`try_acquire`](Semaphore::try_acquire) for a semaphore in an `Rc`: an owned permit if
    /// one is free and nobody waits.
    ///
    /// ```
    /// use std::rc::Rc;
    ///
    /// let sem = Rc::new(evloop::sync::Semaphore::new(1));
    /// let permit = sem.clone().try_acquire_owned().expect("free");
    /// assert!(sem.clone().try_acquire_owned().is_none());
    /// drop(permit);
    /// assert_eq!(sem.available_permits(), 1);
    /// ```
    pub fn try_acquire_owned(self: Rc<Self>) -> Option<OwnedSemaphorePermit> {
        // Lazily (`then`, not `then_some`): a permit built and dropped would give one back.
        self.pool.try_take().then(|| OwnedSemaphorePermit {
            sem: self,
            forgotten: false,
        })
    }
}

/// A permit of a [`Semaphore`] that owns an `Rc` of it (tokio's `OwnedSemaphorePermit`);
/// dropping it gives the permit back.
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
    /// Set by `forget`: the drop then gives nothing back.
    forgotten: bool,
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

    /// Keeps the permit out of the semaphore for good (as [`SemaphorePermit::forget`](crate::sync::SemaphorePermit::forget)).
    ///
    /// ```
    /// use std::rc::Rc;
    ///
    /// let sem = Rc::new(evloop::sync::Semaphore::new(1));
    /// sem.clone().try_acquire_owned().unwrap().forget();
    /// assert_eq!(sem.available_permits(), 0);
    /// ```
    pub fn forget(mut self) {
        self.forgotten = true;
        self.sem.pool.forget_one();
    }
}

impl Drop for OwnedSemaphorePermit {
    fn drop(&mut self) {
        if !self.forgotten {
            self.sem.pool.put_back(1);
        }
    }
}

impl fmt::Debug for OwnedSemaphorePermit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("OwnedSemaphorePermit")
    }
}
