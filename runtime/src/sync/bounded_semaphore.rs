//! [`BoundedSemaphore`] (asyncio's): a [`Semaphore`] whose `release` cannot take the count past
//! its initial number of permits. It wraps a `Semaphore` (its pool, its waits and its permits)
//! and keeps the bound; `release` gives back only a permit that was forgotten.

use std::fmt;

use crate::sync::error::SyncError;
use crate::sync::ops::WaitOp;
use crate::sync::semaphore::{Semaphore, SemaphoreAcquire};
use crate::sync::semaphore_permit::SemaphorePermit;

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
    /// Never closed, and its count never raised but by `release`.
    sem: Semaphore,
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
            // Any count is accepted (asyncio's): `Semaphore::MAX_PERMITS` is tokio's limit.
            sem: Semaphore::unchecked(permits),
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
        self.sem.acquire_as(WaitOp::BoundedSemaphoreAcquire, 1)
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
        self.sem.try_acquire().ok()
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
        self.sem.available_permits()
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
        self.sem.locked()
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
        self.sem.waiters()
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
        if self.sem.pool.give_back_forgotten() {
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
