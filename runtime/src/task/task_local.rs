//! Task-local values: tokio's `task_local!`, [`LocalKey`] and [`TaskLocalFuture`].
//!
//! A key is a thread-local slot (`RefCell<Option<T>>`) that `task_local!` declares. A value
//! belongs to a future, not to a thread: [`LocalKey::scope`] wraps a future so that, around each
//! of its polls (and its drop), the value is swapped into the slot and swapped back out after. So
//! the value is there whenever that future's code runs, on whatever task polls it, and never while
//! another task runs on the same thread. Scopes nest: the swap keeps the outer value aside while
//! the inner one is in, and puts it back. The wrapped future lives in a box, so that the wrapper
//! needs no pin projection (no `unsafe`): one allocation per scope, where tokio has none.

use std::cell::RefCell;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

/// Declares task-local keys (tokio's `task_local!`): `static NAME: Type;`, one or more, each a
/// [`LocalKey`] whose value is set for a future by [`LocalKey::scope`].
///
/// ```
/// evloop::task_local! {
///     static REQUEST_ID: u64;
/// }
///
/// let seen = evloop::run(REQUEST_ID.scope(7, async {
///     evloop::task::yield_now().await; // other tasks run: the value stays with this future
///     REQUEST_ID.get()
/// }))?;
/// assert_eq!(seen, 7);
/// # Ok::<(), evloop::task::RunError>(())
/// ```
#[macro_export]
macro_rules! task_local {
    () => {};
    ($(#[$attr:meta])* $vis:vis static $name:ident: $t:ty; $($rest:tt)*) => {
        $crate::__task_local_inner!($(#[$attr])* $vis $name, $t);
        $crate::task_local!($($rest)*);
    };
    ($(#[$attr:meta])* $vis:vis static $name:ident: $t:ty) => {
        $crate::__task_local_inner!($(#[$attr])* $vis $name, $t);
    };
}

/// One key of `task_local!`: a `static` holding the thread-local slot.
#[doc(hidden)]
#[macro_export]
macro_rules! __task_local_inner {
    ($(#[$attr:meta])* $vis:vis $name:ident, $t:ty) => {
        $(#[$attr])*
        $vis static $name: $crate::task::LocalKey<$t> = {
            ::std::thread_local! {
                static __EVLOOP_TASK_LOCAL: ::std::cell::RefCell<::core::option::Option<$t>> =
                    const { ::std::cell::RefCell::new(::core::option::Option::None) };
            }
            $crate::task::LocalKey::__new(__EVLOOP_TASK_LOCAL)
        };
    };
}

/// A task-local key, declared by [`task_local!`](crate::task_local) (tokio's `LocalKey`).
///
/// ```
/// evloop::task_local! {
///     static USER: String;
/// }
///
/// evloop::run(async {
///     USER.scope("ada".to_string(), async {
///         assert_eq!(USER.with(|u| u.len()), 3);
///     })
///     .await;
///     assert!(USER.try_with(|_| ()).is_err()); // out of the scope: not set
/// })?;
/// # Ok::<(), evloop::task::RunError>(())
/// ```
pub struct LocalKey<T: 'static> {
    inner: std::thread::LocalKey<RefCell<Option<T>>>,
}

/// The error of [`LocalKey::try_with`] and [`LocalKey::try_get`]: the value is not set (outside
/// any scope of the key, or the thread is ending). tokio's `task::AccessError`.
///
/// ```
/// evloop::task_local! { static N: u8; }
/// let err = N.try_get().unwrap_err();
/// assert_eq!(err.to_string(), "task-local value not set");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AccessError {
    _private: (),
}

impl fmt::Display for AccessError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("task-local value not set")
    }
}

impl std::error::Error for AccessError {}

impl<T: 'static> LocalKey<T> {
    /// For `task_local!` only.
    #[doc(hidden)]
    pub const fn __new(inner: std::thread::LocalKey<RefCell<Option<T>>>) -> Self {
        LocalKey { inner }
    }

    /// Wraps `f` so that the key's value is `value` whenever `f` runs (its polls and its drop).
    ///
    /// ```
    /// evloop::task_local! { static DEPTH: u32; }
    ///
    /// let inner = evloop::run(DEPTH.scope(1, async {
    ///     let inner = DEPTH.scope(2, async { DEPTH.get() }).await; // nested: 2 inside
    ///     (inner, DEPTH.get()) // and 1 again after
    /// }))?;
    /// assert_eq!(inner, (2, 1));
    /// # Ok::<(), evloop::task::RunError>(())
    /// ```
    pub fn scope<F: Future>(&'static self, value: T, f: F) -> TaskLocalFuture<T, F> {
        TaskLocalFuture {
            key: self,
            slot: Some(value),
            fut: Some(Box::pin(f)),
        }
    }

    /// Runs `f` with the key's value set to `value` (tokio's `sync_scope`).
    ///
    /// # Panics
    /// If the key's value is borrowed (inside `with` for this key), as tokio's.
    ///
    /// ```
    /// evloop::task_local! { static N: u32; }
    /// assert_eq!(N.sync_scope(5, || N.get() * 2), 10);
    /// ```
    #[track_caller]
    pub fn sync_scope<F: FnOnce() -> R, R>(&'static self, value: T, f: F) -> R {
        let mut slot = Some(value);
        let entered = Enter::new(self, &mut slot);
        let out = f();
        drop(entered);
        out
    }

    /// Calls `f` with a reference to the value.
    ///
    /// # Panics
    /// Outside any scope of the key (tokio's); [`try_with`](LocalKey::try_with) does not.
    ///
    /// ```
    /// evloop::task_local! { static NAME: &'static str; }
    /// assert_eq!(NAME.sync_scope("x", || NAME.with(|n| n.len())), 1);
    /// ```
    #[track_caller]
    pub fn with<F: FnOnce(&T) -> R, R>(&'static self, f: F) -> R {
        match self.try_with(f) {
            Ok(r) => r,
            Err(_) => panic!("cannot access a task-local storage value without setting it first"),
        }
    }

    /// Calls `f` with a reference to the value, or says it is not set.
    ///
    /// ```
    /// evloop::task_local! { static N: u32; }
    /// assert!(N.try_with(|n| *n).is_err());
    /// assert_eq!(N.sync_scope(1, || N.try_with(|n| *n)), Ok(1));
    /// ```
    pub fn try_with<F: FnOnce(&T) -> R, R>(&'static self, f: F) -> Result<R, AccessError> {
        let f = self.inner.try_with(|cell| {
            let value = cell.try_borrow().ok()?;
            Some(f(value.as_ref()?))
        });
        f.ok().flatten().ok_or(AccessError { _private: () })
    }

    /// A copy of the value.
    ///
    /// # Panics
    /// Outside any scope of the key (tokio's); [`try_get`](LocalKey::try_get) does not.
    ///
    /// ```
    /// evloop::task_local! { static N: u32; }
    /// assert_eq!(N.sync_scope(3, || N.get()), 3);
    /// ```
    #[track_caller]
    pub fn get(&'static self) -> T
    where
        T: Clone,
    {
        self.with(T::clone)
    }

    /// A copy of the value, or says it is not set.
    ///
    /// ```
    /// evloop::task_local! { static N: u32; }
    /// assert!(N.try_get().is_err());
    /// ```
    pub fn try_get(&'static self) -> Result<T, AccessError>
    where
        T: Clone,
    {
        self.try_with(T::clone)
    }
}

impl<T: 'static> fmt::Debug for LocalKey<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad("LocalKey { .. }")
    }
}

/// The value swapped in for as long as this lives (a poll, a drop, a `sync_scope`), then swapped
/// back out to the scope's slot, panic or not.
struct Enter<'a, T: 'static> {
    key: &'static LocalKey<T>,
    slot: &'a mut Option<T>,
}

impl<'a, T: 'static> Enter<'a, T> {
    #[track_caller]
    fn new(key: &'static LocalKey<T>, slot: &'a mut Option<T>) -> Self {
        key.inner.with(|cell| match cell.try_borrow_mut() {
            Ok(mut current) => std::mem::swap(slot, &mut *current),
            Err(_) => panic!("cannot enter a task-local scope while the task-local storage is borrowed"),
        });
        Enter { key, slot }
    }
}

impl<T: 'static> Drop for Enter<'_, T> {
    fn drop(&mut self) {
        // The thread's locals are alive (we are running on it); a borrow cannot be held across
        // the end of an `Enter`, which always ends after what it wrapped returned.
        let _ = self.key.inner.try_with(|cell| {
            if let Ok(mut current) = cell.try_borrow_mut() {
                std::mem::swap(self.slot, &mut *current);
            }
        });
    }
}

/// A future with a task-local value: see [`LocalKey::scope`] (tokio's `TaskLocalFuture`).
///
/// ```
/// evloop::task_local! { static N: u32; }
///
/// let mut fut = Box::pin(N.scope(1, async {}));
/// assert_eq!(fut.as_mut().take_value(), Some(1)); // the future runs without it now
/// ```
#[must_use = "futures do nothing unless you `.await` or poll them"]
pub struct TaskLocalFuture<T: 'static, F> {
    key: &'static LocalKey<T>,
    slot: Option<T>,
    fut: Option<Pin<Box<F>>>,
}

// Nothing in it is pinned: the future is in a box, and the value is only ever moved.
impl<T: 'static, F> Unpin for TaskLocalFuture<T, F> {}

impl<T: 'static, F> TaskLocalFuture<T, F> {
    /// Takes the value out: the future runs without it from now on (`None` if taken already).
    ///
    /// ```
    /// evloop::task_local! { static N: u32; }
    /// let mut fut = Box::pin(N.scope(1, async {}));
    /// fut.as_mut().take_value();
    /// assert_eq!(fut.as_mut().take_value(), None);
    /// ```
    pub fn take_value(self: Pin<&mut Self>) -> Option<T> {
        self.get_mut().slot.take()
    }
}

impl<T: 'static, F: Future> Future for TaskLocalFuture<T, F> {
    type Output = F::Output;

    #[track_caller]
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        let this = self.get_mut();
        let Some(fut) = this.fut.as_mut() else {
            panic!("`TaskLocalFuture` polled after completion");
        };
        let polled = {
            let _in = Enter::new(this.key, &mut this.slot);
            fut.as_mut().poll(cx)
        };
        if polled.is_ready() {
            // Dropped with the value in, as every drop of the future.
            let done = this.fut.take();
            let _in = Enter::new(this.key, &mut this.slot);
            drop(done);
        }
        polled
    }
}

impl<T: 'static, F> Drop for TaskLocalFuture<T, F> {
    /// The wrapped future is dropped with the value in (tokio's rule: its destructors may read it).
    fn drop(&mut self) {
        if let Some(fut) = self.fut.take() {
            let in_scope = self
                .key
                .inner
                .try_with(|cell| cell.try_borrow_mut().is_ok())
                .unwrap_or(false);
            if in_scope {
                let _in = Enter::new(self.key, &mut self.slot);
                drop(fut);
            }
        }
    }
}

impl<T: 'static + fmt::Debug, F> fmt::Debug for TaskLocalFuture<T, F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TaskLocalFuture").field("value", &self.slot).finish()
    }
}
