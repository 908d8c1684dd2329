//! [`SemaphorePermit`]: permits taken from a [`Semaphore`] (or a
//! [`BoundedSemaphore`](crate::sync::BoundedSemaphore)), given back when the permit is dropped.
//! A permit holds a count, so it can be [merged](SemaphorePermit::merge) with another of the same
//! semaphore, [split](SemaphorePermit::split) in two, or [forgotten](SemaphorePermit::forget)
//! (tokio's).

use std::fmt;

use crate::sync::semaphore::Semaphore;

/// Permits of a [`Semaphore`] or [`BoundedSemaphore`](crate::sync::BoundedSemaphore); dropping
/// it returns them (to the first waiters, if any).
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
    sem: &'a Semaphore,
    /// What the drop gives back (0 once forgotten, merged into another or split off).
    permits: usize,
}

impl<'a> SemaphorePermit<'a> {
    pub(crate) fn new(sem: &'a Semaphore, permits: usize) -> SemaphorePermit<'a> {
        SemaphorePermit { sem, permits }
    }

    /// Keeps the permits out of the semaphore without a guard (asyncio's `acquire()` without a
    /// matching `release()`): give them back later with [`Semaphore::release`] /
    /// [`Semaphore::add_permits`], or [`BoundedSemaphore::release`](crate::sync::BoundedSemaphore::release).
    ///
    /// ```
    /// let sem = evloop::sync::Semaphore::new(2);
    /// sem.try_acquire().expect("free").forget();
    /// assert_eq!(sem.available_permits(), 1); // still taken, with no guard to give it back
    /// sem.release(); // asyncio's `sem.release()`
    /// assert_eq!(sem.available_permits(), 2);
    /// ```
    pub fn forget(mut self) {
        self.sem.pool.forget(std::mem::take(&mut self.permits));
    }

    /// Takes `other`'s permits into this one, to be given back together (tokio's `merge`).
    ///
    /// # Panics
    /// If `other` comes from another semaphore (tokio's contract).
    ///
    /// ```
    /// let sem = evloop::sync::Semaphore::new(3);
    /// let mut permit = sem.try_acquire().unwrap();
    /// permit.merge(sem.try_acquire_many(2).unwrap());
    /// assert_eq!(permit.num_permits(), 3);
    /// drop(permit);
    /// assert_eq!(sem.available_permits(), 3);
    /// ```
    #[track_caller]
    pub fn merge(&mut self, mut other: SemaphorePermit<'a>) {
        assert!(
            std::ptr::eq(self.sem, other.sem),
            "merging permits from different semaphore instances"
        );
        self.permits = merged(self.permits, std::mem::take(&mut other.permits));
    }

    /// Moves `n` of its permits into a new permit; `None` (and nothing changes) if it holds
    /// fewer than `n` (tokio's `split`).
    ///
    /// ```
    /// let sem = evloop::sync::Semaphore::new(3);
    /// let mut p1 = sem.try_acquire_many(3).unwrap();
    /// let p2 = p1.split(1).unwrap();
    /// assert_eq!((p1.num_permits(), p2.num_permits()), (2, 1));
    /// assert!(p1.split(5).is_none());
    /// ```
    pub fn split(&mut self, n: usize) -> Option<SemaphorePermit<'a>> {
        self.permits = self.permits.checked_sub(n)?;
        Some(SemaphorePermit::new(self.sem, n))
    }

    /// The semaphore the permits belong to (for a [`BoundedSemaphore`](crate::sync::BoundedSemaphore)'s
    /// permit, the pool inside it).
    ///
    /// ```
    /// let sem = evloop::sync::Semaphore::new(1);
    /// let permit = sem.try_acquire().unwrap();
    /// assert!(std::ptr::eq(permit.semaphore(), &sem));
    /// ```
    pub fn semaphore(&self) -> &'a Semaphore {
        self.sem
    }

    /// How many permits it holds.
    ///
    /// ```
    /// let sem = evloop::sync::Semaphore::new(5);
    /// assert_eq!(sem.try_acquire_many(4).unwrap().num_permits(), 4);
    /// ```
    pub fn num_permits(&self) -> usize {
        self.permits
    }
}

/// The count of two merged permits (tokio's panic when it overflows).
#[track_caller]
pub(crate) fn merged(a: usize, b: usize) -> usize {
    a.checked_add(b).expect("number of permits overflowed")
}

impl Drop for SemaphorePermit<'_> {
    fn drop(&mut self) {
        if self.permits > 0 {
            self.sem.pool.put_back(self.permits);
        }
    }
}

impl fmt::Debug for SemaphorePermit<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SemaphorePermit")
            .field("permits", &self.permits)
            .finish()
    }
}
