//! [`WeakFiber`], a handle that does not keep its fiber alive (greenlet's weak references), and
//! the switch to one's parent without a handle ([`Fiber::switch_to_parent`]): the two ways for a
//! fiber to refer back to its parent or to a sibling while it is suspended without making a
//! cycle of handles that nothing outside could break.
//!
//! A weak handle holds the fiber's `Core` (its name, parent link and inbox: a few words; the
//! stack is freed when the fiber dies whatever holds the `Core`) but is not counted in its
//! `handles`, so the last strong [`Fiber`] going still unwinds a suspended fiber
//! (`transfer::kill`). A switch through it is an ordinary `transfer`.

use std::fmt;
use std::rc::Rc;

use crate::fiber::fibers::{Core, Message, current_core};
use crate::fiber::switch::State;
use crate::fiber::transfer::{receive, transfer};
use crate::fiber::{Brand, Fiber, FiberError, Value};

/// A handle to a fiber that does not keep it alive: when the last [`Fiber`] handle of a
/// suspended fiber goes, the fiber is unwound even if weak handles to it remain (greenlet's
/// `weakref.ref(g)`). Made by [`Fiber::downgrade`].
///
/// Hold a weak handle where a fiber keeps a handle to its parent or to a sibling across its own
/// suspension: two fibers holding strong handles to each other can never be unwound, since
/// neither handle goes before its holder does.
///
/// ```
/// use evloop::fiber::Fiber;
///
/// let worker = Fiber::new(|_| {
///     let _ = Fiber::main().switch(1u32);
/// });
/// let weak = worker.downgrade();
/// assert_eq!(weak.switch(()).unwrap().downcast::<u32>().ok(), Some(1)); // switches as a handle does
/// drop(worker); // the last handle: the suspended worker is unwound
/// assert!(weak.is_dead() && weak.upgrade().is_none());
/// ```
#[derive(Clone)]
pub struct WeakFiber {
    core: Rc<Core>,
}

impl WeakFiber {
    /// A handle to the fiber, or `None` once it has ended (returned, panicked, or unwound). For
    /// a fiber made by a [`scope`](crate::fiber::scope) the handle is not counted: it does not
    /// keep the fiber from being unwound when its scope ends.
    ///
    /// ```
    /// use evloop::fiber::Fiber;
    ///
    /// let f = Fiber::new(|_| ());
    /// let weak = f.downgrade();
    /// assert!(weak.upgrade().is_some_and(|g| g.ptr_eq(&f)));
    /// f.switch(()).unwrap(); // it runs to its end
    /// assert!(weak.upgrade().is_none());
    /// ```
    pub fn upgrade(&self) -> Option<Fiber> {
        (self.core.state() != State::Dead).then(|| Fiber::from_core(self.core.clone()))
    }

    /// [`Fiber::switch`] through the weak handle: while the calling fiber is suspended in it, it
    /// holds no handle to the target. A fiber that has ended passes the switch to its nearest
    /// live ancestor, as for a strong handle.
    ///
    /// ```
    /// use evloop::fiber::Fiber;
    ///
    /// let doubler = Fiber::new(|v| v.downcast::<u32>().unwrap() * 2);
    /// let out = doubler.downgrade().switch(21u32).unwrap();
    /// assert_eq!(out.downcast::<u32>().ok(), Some(42));
    /// ```
    pub fn switch<T: 'static>(&self, value: T) -> Result<Value, FiberError> {
        receive(transfer(&self.core, Message::Value(Value::new(value))))
    }

    /// Whether the fiber has ended.
    ///
    /// ```
    /// use evloop::fiber::Fiber;
    ///
    /// let f = Fiber::new(|_| ());
    /// let weak = f.downgrade();
    /// drop(f); // a fiber that never ran dies with its last handle
    /// assert!(weak.is_dead());
    /// ```
    pub fn is_dead(&self) -> bool {
        self.core.state() == State::Dead
    }

    /// The fiber's name ([`Fiber::name`]).
    ///
    /// ```
    /// use evloop::fiber::Fiber;
    ///
    /// let f = Fiber::builder().name("reader").build(|_| ());
    /// assert_eq!(f.downgrade().name(), "reader");
    /// ```
    pub fn name(&self) -> String {
        self.core.label()
    }
}

impl fmt::Debug for WeakFiber {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "WeakFiber({})", self.core.label())
    }
}

impl<B: Brand> Fiber<B> {
    /// A [`WeakFiber`] to this fiber: it switches to the fiber like a handle but does not keep
    /// it from being unwound when its last handle goes.
    ///
    /// ```
    /// use evloop::fiber::Fiber;
    ///
    /// let f = Fiber::new(|_| ());
    /// let weak = f.downgrade();
    /// assert_eq!(weak.name(), f.name());
    /// ```
    pub fn downgrade(&self) -> WeakFiber {
        WeakFiber {
            core: self.core.clone(),
        }
    }
}

impl Fiber {
    /// Switches to the running fiber's parent (greenlet's `getcurrent().parent.switch(value)`)
    /// without taking a handle to it: suspended here, the fiber keeps nothing that stops its
    /// parent from being unwound when the parent's last handle goes. Returns what is switched
    /// back, as [`Fiber::switch`]; from the main fiber, [`FiberError::MainHasNoParent`].
    ///
    /// ```
    /// use evloop::fiber::Fiber;
    ///
    /// let child = Fiber::new(|_| {
    ///     let again = Fiber::switch_to_parent(1u32).unwrap(); // back to main, which created us
    ///     again.downcast::<u32>().unwrap() + 1
    /// });
    /// assert_eq!(child.switch(()).unwrap().downcast::<u32>().ok(), Some(1));
    /// assert_eq!(child.switch(5u32).unwrap().downcast::<u32>().ok(), Some(6));
    /// assert!(Fiber::switch_to_parent(()).is_err()); // main has no parent
    /// ```
    pub fn switch_to_parent<T: 'static>(value: T) -> Result<Value, FiberError> {
        let parent = match current_core() {
            Some(me) => me.parent_core(),
            None => return Err(FiberError::ThreadExiting),
        };
        match parent {
            Some(p) => receive(transfer(&p, Message::Value(Value::new(value)))),
            None => Err(FiberError::MainHasNoParent),
        }
    }
}
