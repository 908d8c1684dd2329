//! [`scope`] and [`Scope`]: fibers whose handles cannot outlive the call that made them, so that
//! no two of them can keep each other alive (issue 19 item 1), and the brands that tell a scoped
//! handle ([`Scoped`]) from an ordinary one ([`Unscoped`]).
//!
//! Data flow: `scope` makes a `Scope` on its own stack and lends it to the closure; every
//! [`Scope::fiber`] (or [`Builder::build_in`](crate::fiber::Builder::build_in)) builds a `Core`
//! marked `scoped` and records a weak reference to it here; the handle it returns is a
//! `Fiber<Scoped<'s>>`, the only kind counted in a scoped fiber's `handles` (`handle.rs`). When
//! the closure returns or unwinds, a drop guard unwinds every recorded fiber still fresh or
//! suspended (`transfer::kill`), newest first.
//!
//! Why no cycle can be built: a fiber body and a switch value are `'static`, and so is anything
//! stored in a thread-local or behind an `Rc` that one of them can reach; `Fiber<Scoped<'s>>` is
//! not (`'s` is the closure's own lifetime, invariant), so the only holders of a scoped fiber's
//! counted handles are frames of the scope's closure, on the stack that opened the scope. The
//! `Unscoped` handles a scoped fiber can still be reached through (`Fiber::current`, `parent`,
//! `WeakFiber::upgrade`) are not counted, so they keep nothing alive.

use std::cell::RefCell;
use std::fmt;
use std::marker::PhantomData;
use std::rc::{Rc, Weak};

use crate::fiber::fibers::Core;
use crate::fiber::switch::State;
use crate::fiber::transfer::kill;
use crate::fiber::{Builder, Fiber, Value};

mod sealed {
    /// Only this module's brands are brands: the counting rule depends on there being two.
    pub trait Sealed {}
}

/// What kind of handle a [`Fiber`] is: [`Unscoped`] (the default, `Fiber` alone) or
/// [`Scoped<'s>`](Scoped), a handle made by a [`Scope`] that cannot leave it. Sealed: these two
/// are the only brands.
///
/// ```
/// use evloop::fiber::{self, Brand, Fiber};
///
/// // Code that takes either kind of handle.
/// fn label<B: Brand>(f: &Fiber<B>) -> String {
///     format!("{} ({})", f.name(), if f.is_dead() { "dead" } else { "alive" })
/// }
/// assert_eq!(label(&Fiber::main()), "main (alive)");
/// fiber::scope(|s| assert!(label(&s.fiber(|_| ())).ends_with("(alive)")));
/// ```
pub trait Brand: sealed::Sealed {
    /// Whether handles of this brand are the counted ones of a scoped fiber.
    #[doc(hidden)]
    const SCOPED: bool;
}

/// The brand of an ordinary handle (`Fiber` is `Fiber<Unscoped>`): `'static`, it can go
/// anywhere, and it keeps a fiber made by [`Fiber::new`] alive. To a fiber made by a [`Scope`]
/// it is not counted: it switches to the fiber while it lives and sees it dead after.
///
/// ```
/// use evloop::fiber::{Fiber, Unscoped};
///
/// let f: Fiber<Unscoped> = Fiber::new(|_| ()); // the same type as `Fiber`
/// let same: Fiber = f.clone();
/// assert_eq!(f, same);
/// ```
#[derive(Debug)]
pub enum Unscoped {}

impl sealed::Sealed for Unscoped {}

impl Brand for Unscoped {
    const SCOPED: bool = false;
}

/// The brand of a handle made by a [`Scope`] (`Fiber<Scoped<'s>>`): it lives no longer than the
/// scope's closure, so no fiber body, switch value or `'static` place can hold one. Zero-sized
/// and invariant in `'s`, so the handles of two scopes do not mix.
///
/// ```
/// use evloop::fiber::{self, Fiber, Scoped};
///
/// fiber::scope(|s| {
///     let f: Fiber<Scoped<'_>> = s.fiber(|_| 1u8);
///     assert_eq!(f.switch(()).unwrap().downcast::<u8>().ok(), Some(1));
/// });
/// ```
pub struct Scoped<'s>(PhantomData<fn(&'s ()) -> &'s ()>);

impl sealed::Sealed for Scoped<'_> {}

impl Brand for Scoped<'_> {
    const SCOPED: bool = true;
}

impl fmt::Debug for Scoped<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Scoped")
    }
}

/// The fibers made inside one [`scope`] call: lent to its closure, which makes fibers with
/// [`Scope::fiber`] or [`Builder::build_in`]. When the closure returns or panics, every fiber it
/// made that is still suspended or not started is unwound (its destructors run, its stack goes
/// back), newest first, whatever became of its handles (even one given to `mem::forget`).
///
/// A scoped fiber's handles (`Fiber<Scoped<'s>>`) cannot be captured by a fiber's body, sent
/// as a switch value, stored in a thread-local or returned from the closure, so no two scoped
/// fibers can hold each other: a cycle of suspended fibers that nothing could unwind cannot be
/// built. An [`Unscoped`] handle to a scoped fiber ([`Fiber::current`] or [`Fiber::parent`]
/// inside another fiber, [`WeakFiber::upgrade`](crate::fiber::WeakFiber::upgrade)) does not
/// keep it alive. The guarantee covers scoped fibers; a scoped fiber that holds a `Fiber` handle
/// to an unscoped one (say, the fiber that opened the scope) can still close a cycle through it:
/// hold a [`WeakFiber`](crate::fiber::WeakFiber) there, or make that fiber in a scope too.
///
/// Each of these fails to compile. A fiber body capturing a scoped handle (bodies are
/// `'static`; error: borrowed data escapes the closure):
///
/// ```compile_fail
/// evloop::fiber::scope(|s| {
///     let a = s.fiber(|_| ());
///     let _b = s.fiber(move |_| a.switch(()));
/// });
/// ```
///
/// A scoped handle as a switch value (values are `'static`; error: borrowed data escapes the
/// closure):
///
/// ```compile_fail
/// evloop::fiber::scope(|s| {
///     let a = s.fiber(|_| ());
///     let b = s.fiber(|_| ());
///     b.switch(a.clone());
/// });
/// ```
///
/// A scoped handle kept in a thread-local (a `'static` place; error: borrowed data escapes the
/// closure):
///
/// ```compile_fail
/// use std::cell::RefCell;
/// use evloop::fiber::{self, Fiber, Scoped};
///
/// thread_local! {
///     static KEPT: RefCell<Vec<Fiber<Scoped<'static>>>> = const { RefCell::new(Vec::new()) };
/// }
/// fiber::scope(|s| {
///     let a = s.fiber(|_| ());
///     KEPT.with(|k| k.borrow_mut().push(a));
/// });
/// ```
///
/// A scoped handle returned out of the scope (error: lifetime may not live long enough):
///
/// ```compile_fail
/// let a = evloop::fiber::scope(|s| s.fiber(|_| ()));
/// ```
///
/// And the scope cleaning up:
///
/// ```
/// use evloop::fiber::{self, Fiber};
///
/// let weak = fiber::scope(|s| {
///     let worker = s.fiber(|_| {
///         let _ = Fiber::switch_to_parent("paused");
///     });
///     worker.switch(()).unwrap(); // suspended, its handle still in this closure
///     worker.downgrade()
/// });
/// assert!(weak.is_dead()); // unwound when the scope ended
/// ```
pub struct Scope<'s> {
    /// Every fiber made here, weakly: a dead fiber's `Core` goes when its handles do.
    fibers: RefCell<Vec<Weak<Core>>>,
    brand: PhantomData<Scoped<'s>>,
}

impl<'s> Scope<'s> {
    /// A fiber of this scope that will run `f` with the value of the first switch to it, as a
    /// child of the running fiber ([`Fiber::new`] in the scope). Its handle cannot leave the
    /// scope, and the fiber is unwound at the scope's end if it has not ended.
    ///
    /// ```
    /// use evloop::fiber;
    ///
    /// let sum = fiber::scope(|s| {
    ///     let double = s.fiber(|v| v.downcast::<u32>().unwrap() * 2);
    ///     double.switch(21u32).unwrap().downcast::<u32>().unwrap()
    /// });
    /// assert_eq!(sum, 42);
    /// ```
    pub fn fiber<F, R>(&'s self, f: F) -> Fiber<Scoped<'s>>
    where
        F: FnOnce(Value) -> R + 'static,
        R: 'static,
    {
        Builder::new().build_in(self, f)
    }

    /// Records a fiber made in this scope. Entries of fibers that have ended are dropped when
    /// the list would grow, so a long scope that makes many short fibers stays small.
    pub(super) fn adopt(&self, core: &Rc<Core>) {
        let mut fibers = self.fibers.borrow_mut();
        if fibers.len() == fibers.capacity() && fibers.len() >= 8 {
            fibers.retain(|w| w.upgrade().is_some_and(|c| c.state() != State::Dead));
        }
        fibers.push(Rc::downgrade(core));
    }

    /// The scope's end: unwinds, newest first, every fiber it made that is not started or
    /// suspended. None of them can be running: this runs on the stack that opened the scope,
    /// where the closure has just finished (`kill` leaves a running fiber alone anyway).
    fn end(&self) {
        let fibers = self.fibers.take();
        for core in fibers.iter().rev().filter_map(Weak::upgrade) {
            if matches!(core.state(), State::Fresh | State::Suspended) {
                kill(&core);
            }
        }
    }
}

impl fmt::Debug for Scope<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Scope")
            .field("fibers", &self.fibers.borrow().len())
            .finish()
    }
}

/// Ends the scope when dropped: after the closure returns, and while it unwinds.
struct End<'a, 's>(&'a Scope<'s>);

impl Drop for End<'_, '_> {
    fn drop(&mut self) {
        self.0.end();
    }
}

/// Runs `f` with a [`Scope`] in which it makes fibers whose handles cannot leave `f`; when `f`
/// returns or panics, every fiber it made that is suspended or not started is unwound (newest
/// first), and a panic goes on. No two scoped fibers can keep each other alive (see [`Scope`]).
///
/// ```
/// use std::cell::Cell;
/// use std::rc::Rc;
/// use evloop::fiber::{self, Fiber};
///
/// struct Count(Rc<Cell<u32>>);
/// impl Drop for Count {
///     fn drop(&mut self) {
///         self.0.set(self.0.get() + 1);
///     }
/// }
///
/// let unwound = Rc::new(Cell::new(0));
/// fiber::scope(|s| {
///     for _ in 0..2 {
///         let count = Count(unwound.clone());
///         let f = s.fiber(move |_| {
///             let _count = count;
///             let _ = Fiber::switch_to_parent(()); // suspended, never resumed
///         });
///         f.switch(()).unwrap();
///     }
/// });
/// assert_eq!(unwound.get(), 2); // both were unwound
/// ```
pub fn scope<T>(f: impl for<'s> FnOnce(&'s Scope<'s>) -> T) -> T {
    let scope = Scope {
        fibers: RefCell::new(Vec::new()),
        brand: PhantomData,
    };
    let _end = End(&scope);
    f(&scope)
}
