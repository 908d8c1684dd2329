//! [`Fiber`], the public handle of a fiber (greenlet's `greenlet` object): creating one, the
//! running and the main fiber, `switch`, `throw`, the parent, and what a fiber is. It counts
//! itself in its `Core`'s `handles` when its brand is the fiber's own (an [`Unscoped`] handle to
//! a fiber made by a [`scope`](crate::fiber::scope) is not counted); dropping the last counted
//! handle of a suspended fiber unwinds it (`transfer::kill`).

use std::fmt;
use std::marker::PhantomData;
use std::rc::Rc;

use crate::fiber::fibers::{Core, FIBERS, Message, current_core, trace};
use crate::fiber::switch::State;
use crate::fiber::transfer::{drop_body, kill, receive, throw_message, transfer};
use crate::fiber::{Brand, Builder, FiberError, FiberExit, Unscoped, Value};

/// A handle to a fiber (greenlet's `greenlet` object). Cloning gives another handle to the same
/// fiber; when the last handle of a suspended fiber goes, the fiber is unwound (see
/// [`Fiber::throw`]), so a fiber is never leaked with its destructors pending.
///
/// A fiber that keeps a way back to its parent or to a sibling while it is suspended should
/// hold a [`WeakFiber`](crate::fiber::WeakFiber) ([`Fiber::downgrade`]) or call
/// [`Fiber::switch_to_parent`]: a strong handle held by a suspended fiber keeps its target
/// alive, and two suspended fibers holding strong handles to each other are never unwound.
///
/// Unlike greenlet, a child's link to its parent is not a handle: a parent whose last handle is
/// dropped is unwound even if a child of it is still suspended (the child's result then goes to
/// the nearest live ancestor). Python's garbage collector can free a parent and a child that
/// refer to each other; reference counting cannot, and the common case (a fiber holding handles
/// to the children it started) would otherwise leak both.
///
/// Two suspended fibers whose stacks hold strong handles to each other cannot be unwound by
/// anything (which stack holds which handle is not something a running program can know), so
/// for code that wants the guarantee, [`fiber::scope`](crate::fiber::scope) makes such a cycle
/// impossible to build: its fibers' handles are `Fiber<Scoped<'s>>`
/// ([`Scoped`](crate::fiber::Scoped)), which no fiber body, switch value or `'static` place can
/// hold. `Fiber` alone means `Fiber<Unscoped>`, the handle of a fiber made by [`Fiber::new`].
/// The rule that keeps the guarantee: an `Unscoped` handle to a scoped fiber (from
/// [`Fiber::current`], [`Fiber::parent`] or [`WeakFiber::upgrade`](crate::fiber::WeakFiber::upgrade)
/// inside it) does not keep it alive: it switches to it while it lives and sees it dead after.
///
/// Fibers belong to the thread that created them (`Fiber` is neither `Send` nor `Sync`):
///
/// ```compile_fail
/// let f = evloop::fiber::Fiber::new(|_| ());
/// std::thread::spawn(move || f.switch(())); // error: `Rc<...>` cannot be sent between threads
/// ```
pub struct Fiber<B: Brand = Unscoped> {
    pub(super) core: Rc<Core>,
    brand: PhantomData<B>,
}

impl<B: Brand> Fiber<B> {
    /// A new handle to `core`, counted in its `handles` when the brand is the fiber's own: a
    /// scoped fiber counts only `Scoped` handles, which only its scope's frames can hold.
    pub(super) fn from_core(core: Rc<Core>) -> Fiber<B> {
        if B::SCOPED == core.scoped {
            core.handles.set(core.handles.get() + 1);
        }
        Fiber {
            core,
            brand: PhantomData,
        }
    }
}

impl Fiber {
    /// A fiber that will run `f` with the value of the first switch to it, as a child of the
    /// running fiber (greenlet's `greenlet(run)`). Nothing runs, and no stack is allocated,
    /// until the first switch.
    ///
    /// ```
    /// use evloop::fiber::Fiber;
    ///
    /// let f = Fiber::new(|v| v.downcast::<u32>().unwrap() * 2); // nothing runs yet
    /// assert!(!f.is_active());
    /// let out = f.switch(21u32).unwrap(); // starts it with 21; its result comes back
    /// assert_eq!(out.downcast::<u32>().ok(), Some(42));
    /// ```
    pub fn new<F, R>(f: F) -> Fiber
    where
        F: FnOnce(Value) -> R + 'static,
        R: 'static,
    {
        Builder::new().build(f)
    }

    /// A builder for a fiber with a name, a stack size or another parent.
    ///
    /// ```
    /// use evloop::fiber::Fiber;
    ///
    /// let f = Fiber::builder().name("parser").build(|_| ());
    /// assert_eq!(f.name(), "parser");
    /// ```
    pub fn builder() -> Builder {
        Builder::new()
    }

    /// The running fiber (greenlet's `getcurrent()`): the thread's main fiber outside any other.
    ///
    /// # Panics
    /// While the thread's locals are being destroyed (like `std::thread::current`).
    ///
    /// ```
    /// use evloop::fiber::Fiber;
    ///
    /// assert!(Fiber::current().is_main()); // on the thread's own stack
    /// let f = Fiber::new(|_| Fiber::current().name());
    /// let name = f.switch(()).unwrap().downcast::<String>().unwrap();
    /// assert_eq!(name, f.name());
    /// ```
    pub fn current() -> Fiber {
        match current_core() {
            Some(c) => Fiber::from_core(c),
            None => panic!("fiber::Fiber::current: the thread's locals have been destroyed"),
        }
    }

    /// The thread's main fiber (its own stack), the root of every parent chain.
    ///
    /// # Panics
    /// While the thread's locals are being destroyed.
    ///
    /// ```
    /// use evloop::fiber::Fiber;
    ///
    /// let main = Fiber::main();
    /// assert!(main.is_main() && main.parent().is_none());
    /// let f = Fiber::new(|_| Fiber::main().is_current());
    /// assert_eq!(f.switch(()).unwrap().downcast::<bool>().ok(), Some(false)); // inside `f`
    /// ```
    pub fn main() -> Fiber {
        let _ = current_core();
        match FIBERS.try_with(|f| {
            let main = f.main.take();
            let out = main.clone();
            f.main.set(main);
            out
        }) {
            Ok(Some(c)) => Fiber::from_core(c),
            _ => panic!("fiber::Fiber::main: the thread's locals have been destroyed"),
        }
    }
}

impl<B: Brand> Fiber<B> {
    /// Switches to this fiber, handing it `value`; returns what is handed back when something
    /// switches to the calling fiber again (greenlet's `g.switch(value)`).
    ///
    /// If this fiber has not started, it starts with `value` as its function's argument; if it
    /// is dead, the switch goes to its nearest live ancestor; if it is the running fiber, `value`
    /// comes straight back. Errors: a child of the caller panicked ([`FiberError::Panicked`],
    /// delivered here because the caller is its parent), or the fiber's stack could not be
    /// allocated ([`FiberError::Stack`]).
    ///
    /// ```
    /// use evloop::fiber::Fiber;
    ///
    /// // A generator: each switch into it gives the next value back to main.
    /// let counter = Fiber::new(|_| {
    ///     for i in 1..=3u32 {
    ///         let _ = Fiber::main().switch(i);
    ///     }
    ///     0u32 // the end
    /// });
    /// let got: Vec<u32> = (0..4).map(|_| counter.switch(()).unwrap().downcast::<u32>().unwrap()).collect();
    /// assert_eq!(got, [1, 2, 3, 0]);
    /// assert!(counter.is_dead());
    /// ```
    pub fn switch<T: 'static>(&self, value: T) -> Result<Value, FiberError> {
        receive(transfer(&self.core, Message::Value(Value::new(value))))
    }

    /// Unwinds this fiber (greenlet's `g.throw()`): its pending `switch` panics with
    /// [`FiberExit`], its stack unwinds running its destructors, and its parent receives a
    /// [`Value`] holding `FiberExit`. Returns what is switched back to the caller (that value,
    /// when the caller is the parent).
    ///
    /// A fiber that has not started dies without running (its closure is dropped) and its parent
    /// receives `FiberExit` (a parent that has not started either starts with `()`, as greenlet
    /// starts it with no argument); a dead fiber gives `FiberExit` back at once. Throwing into the
    /// running fiber unwinds it from here; throwing into the main fiber is
    /// [`FiberError::ThrowToMain`].
    ///
    /// ```
    /// use std::cell::Cell;
    /// use std::rc::Rc;
    /// use evloop::fiber::{Fiber, FiberExit};
    ///
    /// struct Cleanup(Rc<Cell<bool>>);
    /// impl Drop for Cleanup {
    ///     fn drop(&mut self) {
    ///         self.0.set(true);
    ///     }
    /// }
    ///
    /// let cleaned = Rc::new(Cell::new(false));
    /// let flag = cleaned.clone();
    /// let worker = Fiber::new(move |_| {
    ///     let _guard = Cleanup(flag);
    ///     let _ = Fiber::main().switch(()); // suspended with `_guard` alive
    /// });
    /// worker.switch(()).unwrap();
    /// let back = worker.throw().unwrap(); // greenlet's g.throw(): the stack unwinds
    /// assert!(back.is::<FiberExit>());
    /// assert!(cleaned.get()); // its destructors ran
    /// ```
    pub fn throw(&self) -> Result<Value, FiberError> {
        let core = &self.core;
        match core.state() {
            State::Dead => Ok(Value::new(FiberExit)),
            State::Running if core.is_main() => Err(FiberError::ThrowToMain),
            State::Running => {
                core.killing.set(true);
                std::panic::resume_unwind(Box::new(FiberExit))
            }
            State::Suspended if core.is_main() => Err(FiberError::ThrowToMain),
            State::Suspended => receive(transfer(core, throw_message(core))),
            State::Fresh => {
                core.ctx.abandon();
                drop_body(core.body.take());
                trace(|| format!("  {} -> dead (thrown out before it ran)", core.label()));
                match core.parent_core() {
                    // greenlet starts a parent that has not started either with no argument:
                    // the unit value, not `FiberExit`, which it did not die of.
                    Some(p) if p.state() == State::Fresh => receive(transfer(&p, Message::Value(Value::unit()))),
                    Some(p) => receive(transfer(&p, Message::Value(Value::new(FiberExit)))),
                    None => Ok(Value::new(FiberExit)),
                }
            }
        }
    }

    /// The parent: where the fiber's result (or panic) goes when it ends. `None` for the main
    /// fiber.
    ///
    /// ```
    /// use evloop::fiber::Fiber;
    ///
    /// let child = Fiber::new(|_| ());
    /// assert!(child.parent().is_some_and(|p| p.is_main())); // created by main
    /// assert!(Fiber::main().parent().is_none());
    /// ```
    pub fn parent(&self) -> Option<Fiber> {
        self.core.parent_core().map(Fiber::from_core)
    }

    /// Makes `parent` this fiber's parent. Refused, leaving everything as it was, when it
    /// would make a cycle ([`FiberError::ParentCycle`]: `parent` is this fiber or one of its
    /// descendants) or when this is the main fiber ([`FiberError::MainHasNoParent`]).
    ///
    /// ```
    /// use evloop::fiber::Fiber;
    ///
    /// let worker = Fiber::new(|_| "result");
    /// let logger = Fiber::new(|v| format!("logged {}", v.downcast::<&str>().unwrap()));
    /// worker.set_parent(&logger).unwrap(); // the worker's result goes to `logger` now
    /// // The worker returns "result" to `logger`, which starts with it, and returns to main.
    /// let out = worker.switch(()).unwrap();
    /// assert_eq!(out.downcast::<String>().ok().as_deref(), Some("logged result"));
    /// ```
    pub fn set_parent<P: Brand>(&self, parent: &Fiber<P>) -> Result<(), FiberError> {
        if self.core.is_main() {
            return Err(FiberError::MainHasNoParent);
        }
        let mut p = Some(parent.core.clone());
        while let Some(c) = p {
            if Rc::ptr_eq(&c, &self.core) {
                return Err(FiberError::ParentCycle {
                    fiber: self.core.label(),
                    parent: parent.core.label(),
                });
            }
            p = c.parent_core();
        }
        let old = self.core.parent.replace(Some(parent.core.clone()));
        drop(old);
        Ok(())
    }

    /// Whether its function has returned, panicked, or it was thrown out (greenlet's `dead`).
    ///
    /// ```
    /// use evloop::fiber::Fiber;
    ///
    /// let f = Fiber::new(|_| ());
    /// assert!(!f.is_dead());
    /// f.switch(()).unwrap(); // it runs to the end
    /// assert!(f.is_dead());
    /// ```
    pub fn is_dead(&self) -> bool {
        self.core.state() == State::Dead
    }

    /// Whether it has started and is not dead (greenlet's `bool(g)`): running or suspended.
    ///
    /// ```
    /// use evloop::fiber::Fiber;
    ///
    /// let f = Fiber::new(|_| {
    ///     let _ = Fiber::main().switch(());
    /// });
    /// assert!(!f.is_active()); // not started
    /// f.switch(()).unwrap();
    /// assert!(f.is_active()); // suspended in the middle
    /// f.switch(()).unwrap();
    /// assert!(!f.is_active()); // dead
    /// ```
    pub fn is_active(&self) -> bool {
        matches!(self.core.state(), State::Running | State::Suspended)
    }

    /// Whether it is the fiber running now.
    ///
    /// ```
    /// use evloop::fiber::Fiber;
    ///
    /// assert!(Fiber::main().is_current());
    /// let f = Fiber::new(|_| Fiber::current().is_current() && !Fiber::main().is_current());
    /// assert_eq!(f.switch(()).unwrap().downcast::<bool>().ok(), Some(true));
    /// ```
    pub fn is_current(&self) -> bool {
        self.core.state() == State::Running
    }

    /// Whether it is a thread's main fiber.
    ///
    /// ```
    /// use evloop::fiber::Fiber;
    ///
    /// assert!(Fiber::current().is_main());
    /// assert!(!Fiber::new(|_| ()).is_main());
    /// ```
    pub fn is_main(&self) -> bool {
        self.core.is_main()
    }

    /// Its name: `main`, `Fiber-N` (N counts the thread's fibers from 1), or the builder's.
    ///
    /// ```
    /// use evloop::fiber::Fiber;
    ///
    /// assert_eq!(Fiber::main().name(), "main");
    /// assert!(Fiber::new(|_| ()).name().starts_with("Fiber-"));
    /// assert_eq!(Fiber::builder().name("io").build(|_| ()).name(), "io");
    /// ```
    pub fn name(&self) -> String {
        self.core.label()
    }

    /// Whether two handles are the same fiber.
    ///
    /// ```
    /// use evloop::fiber::Fiber;
    ///
    /// let f = Fiber::new(|_| ());
    /// assert!(f.ptr_eq(&f.clone())); // handles to one fiber
    /// assert!(!f.ptr_eq(&Fiber::new(|_| ())));
    /// ```
    pub fn ptr_eq<O: Brand>(&self, other: &Fiber<O>) -> bool {
        Rc::ptr_eq(&self.core, &other.core)
    }
}

impl<B: Brand> Clone for Fiber<B> {
    fn clone(&self) -> Fiber<B> {
        Fiber::from_core(self.core.clone())
    }
}

impl<B: Brand> PartialEq for Fiber<B> {
    fn eq(&self, other: &Fiber<B>) -> bool {
        self.ptr_eq(other)
    }
}

impl<B: Brand> Eq for Fiber<B> {}

impl<B: Brand> Drop for Fiber<B> {
    fn drop(&mut self) {
        if B::SCOPED != self.core.scoped {
            return; // not counted: it never keeps the fiber alive
        }
        let n = self.core.handles.get().saturating_sub(1);
        self.core.handles.set(n);
        if n == 0 && !self.core.is_main() && matches!(self.core.state(), State::Suspended | State::Fresh) {
            kill(&self.core);
        }
    }
}

impl<B: Brand> fmt::Debug for Fiber<B> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = match self.core.state() {
            State::Fresh => "not started",
            State::Running => "running",
            State::Suspended => "suspended",
            State::Dead => "dead",
        };
        write!(f, "Fiber({}, {state})", self.core.label())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_running_fiber_is_main_at_first() {
        let m = Fiber::current();
        assert!(m.is_main() && m.is_current() && m.is_active() && !m.is_dead());
        assert_eq!(m.name(), "main");
        assert!(m.parent().is_none());
        assert_eq!(m, Fiber::main());
        assert_eq!(format!("{m:?}"), "Fiber(main, running)");
    }

    #[test]
    fn a_switch_to_self_returns_the_value() {
        let v = Fiber::current().switch(5u32).unwrap();
        assert_eq!(v.downcast::<u32>().ok(), Some(5));
    }
}
