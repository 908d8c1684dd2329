//! The guards of an [`RwLock`](crate::sync::RwLock) (tokio's): [`RwLockReadGuard`],
//! [`RwLockWriteGuard`] and the [`RwLockMappedWriteGuard`] of a mapped write. Each holds the
//! value's `Ref` / `RefMut` beside the lock's permits (one for a reader, all for a writer);
//! dropping it ends the borrow, then gives the permits back. `map` narrows the borrow
//! (`Ref::map`); `downgrade` trades the `RefMut` for a `Ref` and gives back all permits but one,
//! which lets the readers queued behind the writer in.

use std::cell::{Ref, RefCell, RefMut};
use std::fmt;
use std::ops::{Deref, DerefMut};

use crate::sync::semaphore_permit::SemaphorePermit;

// ---------------------------------------------------------------------------------------------
// Read guard.

/// A share of an [`RwLock`](crate::sync::RwLock): `Deref` to the value; dropping it leaves.
///
/// ```
/// let lock = evloop::sync::RwLock::new(vec![1, 2]);
/// let guard = lock.try_read().unwrap();
/// assert_eq!(guard.len(), 2);
/// ```
#[must_use = "if unused the guard is dropped at once and releases what it holds"]
pub struct RwLockReadGuard<'a, T: ?Sized> {
    // Declared first so that the borrow ends before the permit goes back.
    value: Ref<'a, T>,
    permit: SemaphorePermit<'a>,
}

impl<'a, T: ?Sized> RwLockReadGuard<'a, T> {
    pub(crate) fn new(value: Ref<'a, T>, permit: SemaphorePermit<'a>) -> Self {
        RwLockReadGuard { value, permit }
    }

    /// A guard of a part of the value (tokio's `RwLockReadGuard::map`; an associated function,
    /// so as not to hide a method of `T`).
    ///
    /// ```
    /// use evloop::sync::{RwLock, RwLockReadGuard};
    ///
    /// let lock = RwLock::new((1, "one"));
    /// let name = RwLockReadGuard::map(lock.try_read().unwrap(), |pair| &pair.1);
    /// assert_eq!(*name, "one");
    /// ```
    pub fn map<U: ?Sized, F: FnOnce(&T) -> &U>(this: Self, f: F) -> RwLockReadGuard<'a, U> {
        let RwLockReadGuard { value, permit } = this;
        RwLockReadGuard {
            value: Ref::map(value, f),
            permit,
        }
    }

    /// [`map`](Self::map) to a part that may not be there: the original guard back if `f`
    /// gives `None`.
    ///
    /// ```
    /// use evloop::sync::{RwLock, RwLockReadGuard};
    ///
    /// let lock = RwLock::new(vec![1]);
    /// let guard = lock.try_read().unwrap();
    /// let guard = RwLockReadGuard::try_map(guard, |v| v.get(3)).unwrap_err(); // no such item
    /// let first = RwLockReadGuard::try_map(guard, |v| v.first()).unwrap();
    /// assert_eq!(*first, 1);
    /// ```
    pub fn try_map<U: ?Sized, F: FnOnce(&T) -> Option<&U>>(this: Self, f: F) -> Result<RwLockReadGuard<'a, U>, Self> {
        let RwLockReadGuard { value, permit } = this;
        match Ref::filter_map(value, f) {
            Ok(value) => Ok(RwLockReadGuard { value, permit }),
            Err(value) => Err(RwLockReadGuard { value, permit }),
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Write guard.

/// The whole of an [`RwLock`](crate::sync::RwLock): `Deref` and `DerefMut` to the value;
/// dropping it unlocks.
///
/// ```
/// let lock = evloop::sync::RwLock::new(vec![1]);
/// lock.try_write().unwrap().push(2);
/// assert_eq!(*lock.try_read().unwrap(), [1, 2]);
/// ```
#[must_use = "if unused the guard is dropped at once and releases what it holds"]
pub struct RwLockWriteGuard<'a, T: ?Sized> {
    // Declared first so that the borrow ends before the permits go back.
    value: RefMut<'a, T>,
    /// All the lock's permits.
    permit: SemaphorePermit<'a>,
    /// For `downgrade`, which borrows the value anew.
    cell: &'a RefCell<T>,
}

impl<'a, T: ?Sized> RwLockWriteGuard<'a, T> {
    pub(crate) fn new(cell: &'a RefCell<T>, permit: SemaphorePermit<'a>) -> Self {
        RwLockWriteGuard {
            value: cell.borrow_mut(),
            permit,
            cell,
        }
    }

    /// A guard of a part of the value, which can no longer be downgraded (tokio's
    /// `RwLockWriteGuard::map`).
    ///
    /// ```
    /// use evloop::sync::{RwLock, RwLockWriteGuard};
    ///
    /// let lock = RwLock::new((1, 2));
    /// *RwLockWriteGuard::map(lock.try_write().unwrap(), |pair| &mut pair.1) = 5;
    /// assert_eq!(*lock.try_read().unwrap(), (1, 5));
    /// ```
    pub fn map<U: ?Sized, F: FnOnce(&mut T) -> &mut U>(this: Self, f: F) -> RwLockMappedWriteGuard<'a, U> {
        RwLockMappedWriteGuard::map(RwLockWriteGuard::into_mapped(this), f)
    }

    /// [`map`](Self::map) to a part that may not be there: the original guard back if `f`
    /// gives `None`.
    ///
    /// ```
    /// use evloop::sync::{RwLock, RwLockWriteGuard};
    ///
    /// let lock = RwLock::new(vec![1]);
    /// let guard = lock.try_write().unwrap();
    /// let guard = RwLockWriteGuard::try_map(guard, |v| v.get_mut(3)).unwrap_err();
    /// *RwLockWriteGuard::try_map(guard, |v| v.first_mut()).unwrap() = 9;
    /// assert_eq!(*lock.try_read().unwrap(), [9]);
    /// ```
    pub fn try_map<U: ?Sized, F: FnOnce(&mut T) -> Option<&mut U>>(
        this: Self,
        f: F,
    ) -> Result<RwLockMappedWriteGuard<'a, U>, Self> {
        let RwLockWriteGuard { value, permit, cell } = this;
        match RefMut::filter_map(value, f) {
            Ok(value) => Ok(RwLockMappedWriteGuard { value, permit }),
            Err(value) => Err(RwLockWriteGuard { value, permit, cell }),
        }
    }

    /// The same guard as a mapped one (tokio's `into_mapped`).
    ///
    /// ```
    /// use evloop::sync::{RwLock, RwLockWriteGuard};
    ///
    /// let lock = RwLock::new(1);
    /// let mut mapped = RwLockWriteGuard::into_mapped(lock.try_write().unwrap());
    /// *mapped += 1;
    /// drop(mapped);
    /// assert_eq!(*lock.try_read().unwrap(), 2);
    /// ```
    pub fn into_mapped(this: Self) -> RwLockMappedWriteGuard<'a, T> {
        let RwLockWriteGuard { value, permit, .. } = this;
        RwLockMappedWriteGuard { value, permit }
    }

    /// Turns the write guard into a read guard without unlocking: no writer can get in
    /// between, and the readers waiting behind this writer get in at once (tokio's
    /// `downgrade`).
    ///
    /// ```
    /// let lock = evloop::sync::RwLock::new(1);
    /// let mut w = lock.try_write().unwrap();
    /// *w += 1;
    /// let r = w.downgrade();
    /// assert_eq!(*lock.try_read().unwrap(), 2); // other readers may come in now
    /// assert!(lock.try_write().is_err());
    /// drop(r);
    /// ```
    pub fn downgrade(self) -> RwLockReadGuard<'a, T> {
        RwLockWriteGuard::downgrade_map(self, |v| v)
    }

    /// [`downgrade`](Self::downgrade) to a part of the value: `f` runs while the lock is
    /// still held whole (tokio's `downgrade_map`).
    ///
    /// ```
    /// use evloop::sync::{RwLock, RwLockWriteGuard};
    ///
    /// let lock = RwLock::new((1, "one"));
    /// let name = RwLockWriteGuard::downgrade_map(lock.try_write().unwrap(), |pair| &pair.1);
    /// assert_eq!(*name, "one");
    /// assert!(lock.try_read().is_ok());
    /// ```
    pub fn downgrade_map<U: ?Sized, F: FnOnce(&T) -> &U>(this: Self, f: F) -> RwLockReadGuard<'a, U> {
        let RwLockWriteGuard { value, permit, cell } = this;
        drop(value);
        // The permits are all still held: nobody can borrow in between.
        let value = Ref::map(cell.borrow(), f);
        RwLockReadGuard {
            value,
            permit: keep_one(permit),
        }
    }

    /// [`downgrade_map`](Self::downgrade_map) to a part that may not be there: the write guard
    /// back, still locked, if `f` gives `None` (tokio's `try_downgrade_map`).
    ///
    /// ```
    /// use evloop::sync::{RwLock, RwLockWriteGuard};
    ///
    /// let lock = RwLock::new(vec![1]);
    /// let w = lock.try_write().unwrap();
    /// let w = RwLockWriteGuard::try_downgrade_map(w, |v| v.get(3)).unwrap_err();
    /// assert!(lock.try_read().is_err()); // still write-locked
    /// let first = RwLockWriteGuard::try_downgrade_map(w, |v| v.first()).unwrap();
    /// assert_eq!(*first, 1);
    /// ```
    pub fn try_downgrade_map<U: ?Sized, F: FnOnce(&T) -> Option<&U>>(
        this: Self,
        f: F,
    ) -> Result<RwLockReadGuard<'a, U>, Self> {
        let RwLockWriteGuard { value, permit, cell } = this;
        drop(value);
        match Ref::filter_map(cell.borrow(), f) {
            Ok(value) => Ok(RwLockReadGuard {
                value,
                permit: keep_one(permit),
            }),
            Err(read) => {
                drop(read);
                Err(RwLockWriteGuard {
                    value: cell.borrow_mut(),
                    permit,
                    cell,
                })
            }
        }
    }
}

/// A writer's permits, all given back but one (a reader's): the readers queued behind it get in.
fn keep_one(mut permit: SemaphorePermit<'_>) -> SemaphorePermit<'_> {
    let others = permit.num_permits().saturating_sub(1);
    drop(permit.split(others));
    permit
}

// ---------------------------------------------------------------------------------------------
// Mapped write guard.

/// A write guard narrowed to a part of the value by [`RwLockWriteGuard::map`]; it cannot be
/// downgraded (tokio's `RwLockMappedWriteGuard`).
///
/// ```
/// use evloop::sync::{RwLock, RwLockWriteGuard};
///
/// let lock = RwLock::new(vec![1, 2]);
/// let mut last = RwLockWriteGuard::map(lock.try_write().unwrap(), |v| v.last_mut().unwrap());
/// *last = 20;
/// drop(last);
/// assert_eq!(*lock.try_read().unwrap(), [1, 20]);
/// ```
#[must_use = "if unused the guard is dropped at once and releases what it holds"]
pub struct RwLockMappedWriteGuard<'a, T: ?Sized> {
    value: RefMut<'a, T>,
    permit: SemaphorePermit<'a>,
}

impl<'a, T: ?Sized> RwLockMappedWriteGuard<'a, T> {
    /// Narrows the guard further.
    ///
    /// ```
    /// use evloop::sync::{RwLock, RwLockMappedWriteGuard, RwLockWriteGuard};
    ///
    /// let lock = RwLock::new(((1, 2), 3));
    /// let inner = RwLockWriteGuard::map(lock.try_write().unwrap(), |v| &mut v.0);
    /// *RwLockMappedWriteGuard::map(inner, |p| &mut p.1) = 9;
    /// assert_eq!(*lock.try_read().unwrap(), ((1, 9), 3));
    /// ```
    pub fn map<U: ?Sized, F: FnOnce(&mut T) -> &mut U>(this: Self, f: F) -> RwLockMappedWriteGuard<'a, U> {
        let RwLockMappedWriteGuard { value, permit } = this;
        RwLockMappedWriteGuard {
            value: RefMut::map(value, f),
            permit,
        }
    }

    /// Narrows the guard to a part that may not be there: the guard back if `f` gives `None`.
    ///
    /// ```
    /// use evloop::sync::{RwLock, RwLockMappedWriteGuard, RwLockWriteGuard};
    ///
    /// let lock = RwLock::new(vec![1]);
    /// let all = RwLockWriteGuard::into_mapped(lock.try_write().unwrap());
    /// let all = RwLockMappedWriteGuard::try_map(all, |v| v.get_mut(2)).unwrap_err();
    /// assert_eq!(all.len(), 1);
    /// ```
    pub fn try_map<U: ?Sized, F: FnOnce(&mut T) -> Option<&mut U>>(
        this: Self,
        f: F,
    ) -> Result<RwLockMappedWriteGuard<'a, U>, Self> {
        let RwLockMappedWriteGuard { value, permit } = this;
        match RefMut::filter_map(value, f) {
            Ok(value) => Ok(RwLockMappedWriteGuard { value, permit }),
            Err(value) => Err(RwLockMappedWriteGuard { value, permit }),
        }
    }
}

// ---------------------------------------------------------------------------------------------
// What every guard does.

/// `Deref` (and, with `mut`, `DerefMut`) to the value, and `Debug` and `Display` as the value's,
/// for each guard (tokio's guards have the same).
macro_rules! to_the_value {
    ($guard:ident) => {
        impl<T: ?Sized> Deref for $guard<'_, T> {
            type Target = T;
            fn deref(&self) -> &T {
                &self.value
            }
        }

        impl<T: ?Sized + fmt::Debug> fmt::Debug for $guard<'_, T> {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                fmt::Debug::fmt(&*self.value, f)
            }
        }

        impl<T: ?Sized + fmt::Display> fmt::Display for $guard<'_, T> {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                fmt::Display::fmt(&*self.value, f)
            }
        }
    };
    ($guard:ident, mut) => {
        to_the_value!($guard);

        impl<T: ?Sized> DerefMut for $guard<'_, T> {
            fn deref_mut(&mut self) -> &mut T {
                &mut self.value
            }
        }
    };
}

to_the_value!(RwLockReadGuard);
to_the_value!(RwLockWriteGuard, mut);
to_the_value!(RwLockMappedWriteGuard, mut);
