//! [`RwLock`] (tokio's): a value behind a [`Semaphore`] of `max_readers` permits, where a read
//! takes one permit and a write takes them all; its futures are the semaphore's waits, so it is
//! as fair as the semaphore: first come, first served, and a waiting writer holds back the
//! readers that come after it. The value is a `RefCell`; the guards hold its `Ref` / `RefMut`
//! beside their permits, so the borrows can never conflict. Its guards are in `rwlock_guard`.

use std::cell::RefCell;
use std::fmt;

use crate::sync::mutex::TryLockError;
use crate::sync::ops::WaitOp;
use crate::sync::rwlock_guard::{RwLockReadGuard, RwLockWriteGuard};
use crate::sync::semaphore::Semaphore;
use crate::sync::semaphore_permit::SemaphorePermit;

/// A reader-writer lock (tokio's `RwLock`): any number of [`read`](RwLock::read) guards at a
/// time (up to `max_readers`), or one [`write`](RwLock::write) guard.
///
/// Fair, as tokio's: tasks get the lock in the order they asked, and a writer that waits for the
/// readers to leave holds back the readers that come after it, so readers cannot starve it.
/// Bound to no loop (as [`Mutex`](crate::sync::Mutex)): tasks of several loops may share one.
///
/// ```
/// use std::rc::Rc;
/// use evloop::sync::RwLock;
///
/// let total = evloop::run(async {
///     let config = Rc::new(RwLock::new(vec![1, 2]));
///     {
///         let r1 = config.read().await;
///         let r2 = config.read().await; // readers share the lock
///         assert_eq!(r1.len() + r2.len(), 4);
///     }
///     config.write().await.push(3); // a writer has it alone
///     let total: i32 = config.read().await.iter().sum();
///     total
/// })?;
/// assert_eq!(total, 6);
/// # Ok::<(), evloop::task::RunError>(())
/// ```
pub struct RwLock<T: ?Sized> {
    /// `max_readers` permits: one per reader, all of them for a writer.
    sem: Semaphore,
    max_readers: u32,
    // Borrowed only by guards, which exist only while their permits are held: a `RefMut` only
    // with all of them, so the borrows never conflict.
    value: RefCell<T>,
}

/// tokio's limit on `max_readers`.
const MAX_READS: u32 = u32::MAX >> 3;

impl<T> RwLock<T> {
    /// An unlocked `RwLock` holding `value`, for up to `u32::MAX >> 3` readers at a time
    /// (tokio's).
    ///
    /// ```
    /// let lock = evloop::sync::RwLock::new(5);
    /// assert_eq!(*lock.try_read().unwrap(), 5);
    /// ```
    pub fn new(value: T) -> RwLock<T> {
        RwLock::with_max_readers(value, MAX_READS)
    }

    /// An unlocked `RwLock` that lets at most `max_reads` readers in at a time; one more waits
    /// for one of them to leave.
    ///
    /// # Panics
    /// If `max_reads` is 0 or above `u32::MAX >> 3` (tokio's contract).
    ///
    /// ```
    /// let lock = evloop::sync::RwLock::with_max_readers((), 2);
    /// let (_a, _b) = (lock.try_read().unwrap(), lock.try_read().unwrap());
    /// assert!(lock.try_read().is_err()); // a third reader would wait
    /// ```
    #[track_caller]
    pub fn with_max_readers(value: T, max_reads: u32) -> RwLock<T> {
        assert!(max_reads != 0, "a RwLock may not be created with 0 readers");
        assert!(
            max_reads <= MAX_READS,
            "a RwLock may not be created with more than {MAX_READS} readers"
        );
        RwLock {
            sem: Semaphore::unbound(max_reads as usize),
            max_readers: max_reads,
            value: RefCell::new(value),
        }
    }

    /// The value (no lock needed: the lock is consumed).
    ///
    /// ```
    /// let lock = evloop::sync::RwLock::new(String::from("a"));
    /// lock.try_write().unwrap().push('b');
    /// assert_eq!(lock.into_inner(), "ab");
    /// ```
    pub fn into_inner(self) -> T {
        self.value.into_inner()
    }
}

impl<T: ?Sized> RwLock<T> {
    /// Waits for a share of the lock: at once unless a writer holds it or waits for it (or
    /// `max_readers` readers hold it). Cancellation-safe: dropping the future gives up its place.
    ///
    /// ```
    /// evloop::run(async {
    ///     let lock = evloop::sync::RwLock::new(1);
    ///     let a = lock.read().await;
    ///     let b = lock.read().await;
    ///     assert_eq!(*a + *b, 2);
    /// })?;
    /// # Ok::<(), evloop::task::RunError>(())
    /// ```
    pub async fn read(&self) -> RwLockReadGuard<'_, T> {
        let permit = granted(self.sem.acquire_as(WaitOp::RwLockRead, 1).await);
        self.read_guard(permit)
    }

    /// Waits for the whole lock: until every reader and writer before it has left.
    /// Cancellation-safe: dropping the future gives up its place (and lets the readers held
    /// back behind it through).
    ///
    /// ```
    /// evloop::run(async {
    ///     let lock = evloop::sync::RwLock::new(1);
    ///     *lock.write().await += 1;
    ///     assert_eq!(*lock.read().await, 2);
    /// })?;
    /// # Ok::<(), evloop::task::RunError>(())
    /// ```
    pub async fn write(&self) -> RwLockWriteGuard<'_, T> {
        let permit = granted(self.sem.acquire_as(WaitOp::RwLockWrite, self.max_readers).await);
        self.write_guard(permit)
    }

    /// A share of the lock if that needs no wait; [`TryLockError`] if a writer holds it or
    /// waits for it (or `max_readers` readers hold it).
    ///
    /// ```
    /// let lock = evloop::sync::RwLock::new(0);
    /// let r = lock.try_read().unwrap();
    /// assert!(lock.try_write().is_err());
    /// assert!(lock.try_read().is_ok()); // readers share
    /// drop(r);
    /// ```
    pub fn try_read(&self) -> Result<RwLockReadGuard<'_, T>, TryLockError> {
        match self.sem.try_acquire() {
            Ok(permit) => Ok(self.read_guard(permit)),
            Err(_) => Err(TryLockError("the RwLock is locked for writing")),
        }
    }

    /// The whole lock if that needs no wait; [`TryLockError`] if anybody holds it or waits.
    ///
    /// ```
    /// let lock = evloop::sync::RwLock::new(0);
    /// *lock.try_write().unwrap() = 7;
    /// let r = lock.try_read().unwrap();
    /// assert_eq!(lock.try_write().unwrap_err().to_string(), "operation would block: the RwLock is locked");
    /// assert_eq!(*r, 7);
    /// ```
    pub fn try_write(&self) -> Result<RwLockWriteGuard<'_, T>, TryLockError> {
        match self.sem.try_acquire_many(self.max_readers) {
            Ok(permit) => Ok(self.write_guard(permit)),
            Err(_) => Err(TryLockError("the RwLock is locked")),
        }
    }

    /// The value, through a unique reference (no lock needed: no guard can exist).
    ///
    /// ```
    /// let mut lock = evloop::sync::RwLock::new(1);
    /// *lock.get_mut() += 1;
    /// assert_eq!(lock.into_inner(), 2);
    /// ```
    pub fn get_mut(&mut self) -> &mut T {
        self.value.get_mut()
    }

    fn read_guard<'a>(&'a self, permit: SemaphorePermit<'a>) -> RwLockReadGuard<'a, T> {
        // Cannot fail: a `RefMut` exists only with every permit, and we hold one.
        RwLockReadGuard::new(self.value.borrow(), permit)
    }

    fn write_guard<'a>(&'a self, permit: SemaphorePermit<'a>) -> RwLockWriteGuard<'a, T> {
        // Cannot fail: we hold every permit, so no other guard exists.
        RwLockWriteGuard::new(&self.value, permit)
    }
}

/// The permits of an acquire that cannot fail: the semaphore is never closed and bound to no
/// loop.
fn granted<'a>(r: Result<SemaphorePermit<'a>, crate::sync::SyncError>) -> SemaphorePermit<'a> {
    match r {
        Ok(permit) => permit,
        Err(e) => unreachable!("{e}"),
    }
}

impl<T: Default> Default for RwLock<T> {
    fn default() -> Self {
        RwLock::new(T::default())
    }
}

impl<T> From<T> for RwLock<T> {
    fn from(value: T) -> Self {
        RwLock::new(value)
    }
}

impl<T: ?Sized + fmt::Debug> fmt::Debug for RwLock<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // tokio's format: `RwLock { data: .. }`, `<locked>` while a writer holds it or waits.
        let mut d = f.debug_struct("RwLock");
        match self.try_read() {
            Ok(guard) => d.field("data", &&*guard),
            Err(_) => d.field("data", &format_args!("<locked>")),
        };
        d.finish()
    }
}
