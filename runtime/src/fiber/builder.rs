//! [`Builder`]: the options of a new fiber (a name, the stack size, the parent) and `make_core`,
//! where every fiber's `Core` is created, not started: its context has no stack until the first
//! switch to it (`fiber::spawn`, in `hub.rs`, and `Scope::fiber`, in `scope.rs`, also build
//! through here).

use std::cell::{Cell, RefCell};
use std::fmt;
use std::rc::Rc;

use crate::fiber::fibers::{Body, Core, FIBERS, current_core};
use crate::fiber::switch::Context;
use crate::fiber::transfer::fiber_main;
use crate::fiber::{Brand, Fiber, Scope, Scoped, Value, hub, stack};

/// Options for a new fiber: a name, the stack size, the parent.
///
/// ```
/// use evloop::fiber::{Builder, Fiber};
///
/// let f = Builder::new().name("worker").stack_size(64 * 1024).build(|_| "done");
/// assert_eq!(f.name(), "worker");
/// assert_eq!(f.switch(()).unwrap().downcast::<&str>().ok(), Some("done"));
/// ```
#[derive(Default)]
#[must_use = "builders do nothing until they are built, run or awaited"]
pub struct Builder {
    name: Option<String>,
    stack_size: Option<usize>,
    parent: Option<Fiber>,
}

impl fmt::Debug for Builder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Builder")
            .field("name", &self.name)
            .field("stack_size", &self.stack_size)
            .field("parent", &self.parent)
            .finish()
    }
}

impl Builder {
    /// Default options: `Fiber-N`, a 256 KiB stack, the running fiber as parent.
    ///
    /// ```
    /// use evloop::fiber::Builder;
    ///
    /// let f = Builder::new().build(|_| 1u8); // the defaults: Fiber-N, 256 KiB, the running fiber as parent
    /// assert!(f.parent().is_some_and(|p| p.is_main()));
    /// assert_eq!(f.switch(()).unwrap().downcast::<u8>().ok(), Some(1));
    /// ```
    pub fn new() -> Builder {
        Builder::default()
    }

    /// Names the fiber (in trace lines, errors and the overflow message).
    ///
    /// ```
    /// use evloop::fiber::Builder;
    ///
    /// let f = Builder::new().name("reader").build(|_| ());
    /// assert_eq!(f.name(), "reader");
    /// assert_eq!(format!("{f:?}"), "Fiber(reader, not started)");
    /// ```
    pub fn name(mut self, name: impl Into<String>) -> Builder {
        self.name = Some(name.into());
        self
    }

    /// The usable stack size in bytes, rounded up to whole pages, at least 16 KiB and at most
    /// 1 GiB (default 256 KiB). Only touched pages take memory.
    ///
    /// ```
    /// use evloop::fiber::Builder;
    ///
    /// fn depth(n: u32) -> u32 {
    ///     if n == 0 { 0 } else { 1 + depth(n - 1) }
    /// }
    ///
    /// // Deep recursion needs a bigger stack than the default 256 KiB.
    /// let f = Builder::new().stack_size(8 << 20).build(|_| depth(10_000));
    /// assert_eq!(f.switch(()).unwrap().downcast::<u32>().ok(), Some(10_000));
    /// ```
    pub fn stack_size(mut self, bytes: usize) -> Builder {
        self.stack_size = Some(bytes);
        self
    }

    /// The parent (default: the fiber running when the fiber is built). The builder holds a
    /// handle to it, not counted if it is a scoped fiber (as every parent link).
    ///
    /// ```
    /// use evloop::fiber::{Builder, Fiber};
    ///
    /// let parent = Fiber::new(|_| ());
    /// let child = Builder::new().parent(&parent).build(|_| ());
    /// assert!(child.parent().is_some_and(|p| p.ptr_eq(&parent)));
    /// ```
    pub fn parent<B: Brand>(mut self, parent: &Fiber<B>) -> Builder {
        self.parent = Some(Fiber::from_core(parent.core.clone()));
        self
    }

    /// The fiber, not started: it runs `f` at the first switch to it.
    ///
    /// ```
    /// use evloop::fiber::Builder;
    ///
    /// let f = Builder::new().name("adder").build(|v| v.downcast::<(u32, u32)>().map(|(a, b)| a + b).unwrap_or(0));
    /// assert_eq!(f.switch((2u32, 3u32)).unwrap().downcast::<u32>().ok(), Some(5));
    /// ```
    pub fn build<F, R>(self, f: F) -> Fiber
    where
        F: FnOnce(Value) -> R + 'static,
        R: 'static,
    {
        self.make(Box::new(move |v| Value::new(f(v))), None)
    }

    /// Fibers of a [`Scope`]: [`build`](Builder::build) in `scope`, which unwinds the fiber when
    /// it ends if it is still suspended or not started; the handle cannot leave the scope.
    ///
    /// ```
    /// use evloop::fiber::{self, Builder};
    ///
    /// fiber::scope(|s| {
    ///     let f = Builder::new().name("scoped").stack_size(64 * 1024).build_in(s, |_| 7u8);
    ///     assert_eq!(f.name(), "scoped");
    ///     assert_eq!(f.switch(()).unwrap().downcast::<u8>().ok(), Some(7));
    /// });
    /// ```
    pub fn build_in<'s, F, R>(self, scope: &'s Scope<'s>, f: F) -> Fiber<Scoped<'s>>
    where
        F: FnOnce(Value) -> R + 'static,
        R: 'static,
    {
        let core = self.make_core(Box::new(move |v| Value::new(f(v))), None, true);
        scope.adopt(&core);
        Fiber::from_core(core)
    }

    pub(super) fn make(self, body: Body, hub: Option<hub::HubState>) -> Fiber {
        Fiber::from_core(self.make_core(body, hub, false))
    }

    fn make_core(self, body: Body, hub: Option<hub::HubState>, scoped: bool) -> Rc<Core> {
        let parent = match self.parent {
            Some(p) => Some(p.core.clone()),
            None => current_core(),
        };
        let number = FIBERS
            .try_with(|f| {
                let v = f.next_number.get();
                f.next_number.set(v + 1);
                v
            })
            .unwrap_or(u64::MAX);
        Rc::new(Core {
            number,
            name: self.name.map(String::into_boxed_str),
            handles: Cell::new(0),
            scoped,
            ctx: Context::new(fiber_main),
            body: Cell::new(Some(body)),
            parent: RefCell::new(parent),
            inbox: Cell::new(None),
            stack_size: self.stack_size.unwrap_or(stack::DEFAULT_STACK_SIZE),
            killing: Cell::new(false),
            hub,
        })
    }
}
