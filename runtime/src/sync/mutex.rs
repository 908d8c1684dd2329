//! [`Mutex`]: a value behind a [`Lock`], its guard and the future of `lock`.

use std::cell::{RefCell, RefMut};
use std::fmt;
use std::future::Future;
use std::ops::{Deref, DerefMut};
use std::pin::Pin;
use std::task::{Context, Poll};

use crate::sync::lock::{Lock, LockAcquire, LockGuard};
use crate::sync::ops::WaitOp;

/// A value behind a [`Lock`]: [`lock`](Mutex::lock) waits for the lock and gives a
/// [`MutexGuard`] through which the value can be read and changed.
///
/// ```
/// use std::rc::Rc;
/// use evloop::sync::Mutex;
///
/// let total = evloop::run(async {
///     let counter = Rc::new(Mutex::new(0));
///     let tasks: Vec<_> = (0..3)
///         .map(|_| {
///             let counter = counter.clone();
///             evloop::spawn(async move {
///                 let mut n = counter.lock().await;
///                 let seen = *n;
///                 evloop::task::yield_now().await; // nobody else can change the value meanwhile
///                 *n = seen + 1;
///             })
///         })
///         .collect();
///     for t in tasks {
///         t.await?;
///     }
///     let total = *counter.lock().await;
///     Ok::<_, evloop::task::TaskError>(total)
/// })??;
/// assert_eq!(total, 3);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct Mutex<T: ?Sized> {
    lock: Lock,
    // Borrowed (mutably) only by the one `MutexGuard`, which exists only while the lock is
    // held, so the borrow can never conflict.
    value: RefCell<T>,
}

impl<T> Mutex<T> {
    /// An unlocked mutex holding `value`.
    ///
    /// ```
    /// let m = evloop::sync::Mutex::new(5);
    /// assert!(!m.locked());
    /// assert_eq!(*m.try_lock().expect("unlocked"), 5);
    /// ```
    pub fn new(value: T) -> Mutex<T> {
        Mutex {
            lock: Lock::unbound(),
            value: RefCell::new(value),
        }
    }

    /// The value (no lock needed: the mutex is consumed).
    ///
    /// ```
    /// let m = evloop::sync::Mutex::new(String::from("a"));
    /// m.try_lock().expect("unlocked").push('b');
    /// assert_eq!(m.into_inner(), "ab");
    /// ```
    pub fn into_inner(self) -> T {
        self.value.into_inner()
    }
}

impl<T: ?Sized> Mutex<T> {
    /// Waits for the lock, FIFO-fair and cancellation-safe like [`Lock::acquire`].
    ///
    /// Unlike [`Lock::acquire`] it cannot fail: as tokio's `Mutex::lock`, it returns the guard.
    /// A mutex is bound to no loop (its waiters are woken through their wakers, which reach a
    /// task of any loop), so tasks of several loops may share one.
    ///
    /// ```
    /// let v = evloop::run(async {
    ///     let m = evloop::sync::Mutex::new(Vec::new());
    ///     m.lock().await.push(1); // the guard is dropped at the end of the statement
    ///     m.lock().await.push(2);
    ///     let v = m.lock().await.clone();
    ///     v
    /// })?;
    /// assert_eq!(v, [1, 2]);
    /// # Ok::<(), evloop::task::RunError>(())
    /// ```
    pub fn lock(&self) -> MutexLock<'_, T> {
        MutexLock {
            mutex: self,
            acquire: self.lock.acquire_as(WaitOp::MutexLock),
        }
    }

    /// Takes the lock if that needs no wait; [`TryLockError`] if it is held (or handed to a
    /// waiter that has not run yet), as tokio's `try_lock`.
    ///
    /// ```
    /// let m = evloop::sync::Mutex::new(0);
    /// let mut guard = m.try_lock().expect("unlocked");
    /// *guard += 1;
    /// assert!(m.try_lock().is_err()); // held by `guard`
    /// drop(guard);
    /// assert_eq!(*m.try_lock().expect("unlocked"), 1);
    /// ```
    pub fn try_lock(&self) -> Result<MutexGuard<'_, T>, TryLockError> {
        self.lock
            .try_acquire()
            .map(|guard| self.guard(guard))
            .ok_or(TryLockError("the mutex is locked"))
    }

    /// Whether a `lock()` would have to wait.
    ///
    /// ```
    /// let m = evloop::sync::Mutex::new(());
    /// let guard = m.try_lock();
    /// assert!(m.locked());
    /// drop(guard);
    /// assert!(!m.locked());
    /// ```
    pub fn locked(&self) -> bool {
        self.lock.locked()
    }

    /// The value, through a unique reference (no lock needed: no guard can exist).
    ///
    /// ```
    /// let mut m = evloop::sync::Mutex::new(1);
    /// *m.get_mut() += 1; // `&mut Mutex`: no guard can exist, so no lock is needed
    /// assert_eq!(m.into_inner(), 2);
    /// ```
    pub fn get_mut(&mut self) -> &mut T {
        self.value.get_mut()
    }

    fn guard<'a>(&'a self, guard: LockGuard<'a>) -> MutexGuard<'a, T> {
        MutexGuard {
            // Cannot fail: the only other borrow is a guard's, and we hold the lock.
            value: self.value.borrow_mut(),
            _lock: guard,
        }
    }
}

impl<T: Default> Default for Mutex<T> {
    fn default() -> Self {
        Mutex::new(T::default())
    }
}

impl<T: ?Sized + fmt::Debug> fmt::Debug for Mutex<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // tokio's format: `Mutex { data: .. }`, `<locked>` while a guard holds it.
        let mut d = f.debug_struct("Mutex");
        match self.try_lock() {
            Ok(guard) => d.field("data", &&*guard),
            Err(_) => d.field("data", &format_args!("<locked>")),
        };
        d.finish()
    }
}

/// [`Mutex::try_lock`] found the mutex locked, or [`RwLock::try_read`](crate::sync::RwLock::try_read) /
/// [`try_write`](crate::sync::RwLock::try_write) the `RwLock` (tokio's `sync::TryLockError`).
///
/// ```
/// use evloop::sync::{Mutex, TryLockError};
///
/// let m = Mutex::new(());
/// let _held = m.try_lock().unwrap();
/// let err: TryLockError = m.try_lock().unwrap_err();
/// assert_eq!(err.to_string(), "operation would block: the mutex is locked");
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TryLockError(pub(crate) &'static str);

impl fmt::Display for TryLockError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // The reason names the lock (also an `RwLock`'s, as tokio's one `TryLockError`).
        write!(f, "operation would block: {}", self.0)
    }
}

impl std::error::Error for TryLockError {}

/// Access to a [`Mutex`]'s value while its lock is held; dropping it releases the lock.
///
/// ```
/// let m = evloop::sync::Mutex::new(vec![1, 2]);
/// {
///     let mut guard = m.try_lock().expect("unlocked");
///     guard.push(3); // `DerefMut` to the value
///     assert_eq!(guard.len(), 3);
/// } // unlocked here
/// assert!(!m.locked());
/// assert_eq!(m.into_inner(), [1, 2, 3]);
/// ```
#[must_use = "if unused the guard is dropped at once and releases what it holds"]
pub struct MutexGuard<'a, T: ?Sized> {
    // Declared first so that it is dropped before the lock is released.
    value: RefMut<'a, T>,
    _lock: LockGuard<'a>,
}

impl<T: ?Sized> Deref for MutexGuard<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.value
    }
}

impl<T: ?Sized> DerefMut for MutexGuard<'_, T> {
    fn deref_mut(&mut self) -> &mut T {
        &mut self.value
    }
}

impl<T: ?Sized + fmt::Debug> fmt::Debug for MutexGuard<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&*self.value, f)
    }
}

/// The future of [`Mutex::lock`].
///
/// ```
/// use std::rc::Rc;
///
/// let n = evloop::run(async {
///     let m = Rc::new(evloop::sync::Mutex::new(0));
///     let guard = m.lock().await;
///     let adder = {
///         let m = m.clone();
///         evloop::spawn(async move { *m.lock().await += 1 })
///     };
///     evloop::task::yield_now().await;
///     assert!(!adder.done()); // its `MutexLock` waits for `guard`
///     drop(guard);
///     adder.await?;
///     let n = *m.lock().await;
///     Ok::<_, evloop::task::TaskError>(n)
/// })??;
/// assert_eq!(n, 1);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[must_use = "futures do nothing unless you `.await` or poll them"]
pub struct MutexLock<'a, T: ?Sized> {
    mutex: &'a Mutex<T>,
    acquire: LockAcquire<'a>,
}

impl<'a, T: ?Sized> Future for MutexLock<'a, T> {
    type Output = MutexGuard<'a, T>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<MutexGuard<'a, T>> {
        let this = self.get_mut();
        let mutex = this.mutex;
        Pin::new(&mut this.acquire).poll(cx).map(|r| match r {
            Ok(guard) => mutex.guard(guard),
            // The mutex's lock is bound to no loop, so its wait never meets the wrong one.
            Err(e) => unreachable!("{e}"),
        })
    }
}

impl<T: ?Sized> fmt::Debug for MutexLock<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MutexLock")
            .field("queued", &self.acquire.is_queued())
            .finish()
    }
}
