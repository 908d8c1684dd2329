//! Fibers: greenlet's stackful coroutines, and blocking-style code on evloop's loop.
//!
//! A [`Fiber`] is a function running on a stack of its own. [`Fiber::switch`] stops the
//! current fiber where it is (in the middle of any call chain, which is what "stackful" means)
//! and resumes another one, handing it a [`Value`]; the value the current fiber gets back is
//! whatever is handed to it when something switches back to it. The model and the names are
//! greenlet's (gevent's coroutines; source note 004):
//!
//! * every thread has a **main fiber**, the thread's own stack ([`Fiber::main`]); the fiber
//!   running now is [`Fiber::current`];
//! * a new fiber's **parent** is the fiber that created it ([`Fiber::parent`],
//!   [`Fiber::set_parent`], which refuses cycles); when a fiber's function returns, its value
//!   is switched to its parent (to the nearest one still alive), and a switch to a dead fiber
//!   goes to its parent too;
//! * a **panic** inside a fiber is caught at the bottom of its stack and delivered to its
//!   parent as [`FiberError::Panicked`], the return value of the parent's pending `switch`;
//!   no panic ever unwinds from one stack into another;
//! * [`Fiber::throw`] makes a suspended fiber's pending `switch` unwind with [`FiberExit`]
//!   (greenlet's `GreenletExit`): its destructors run, and its parent receives a
//!   `Value` holding `FiberExit`; dropping the last handle of a suspended fiber does the same,
//!   so a fiber is never leaked with its stack and its destructors pending.
//!
//! ```
//! use evloop::fiber::Fiber;
//!
//! let child = Fiber::new(|first| {
//!     let first = first.downcast::<u64>().unwrap();
//!     // Back to the parent (main) with a value; resumed by the next switch to us.
//!     let second = Fiber::main().switch(first + 1).unwrap().downcast::<u64>().unwrap();
//!     first + second // returning switches to the parent
//! });
//! assert_eq!(child.switch(1u64).unwrap().downcast::<u64>().ok(), Some(2));
//! assert_eq!(child.switch(10u64).unwrap().downcast::<u64>().ok(), Some(11));
//! assert!(child.is_dead());
//! ```
//!
//! # On the loop (gevent's hub)
//! [`spawn`] runs a function in a fiber driven by the running loop, as a task: the task's
//! future switches into the fiber each time it is polled. Inside, [`block_on`] polls any evloop
//! future with the task's waker; while it is pending it switches back out, so the task's poll
//! returns `Pending`, and the task's next wake switches in again. Blocking-style code
//! ([`sleep`], [`accept`], [`read`], [`write_all`], ...) and async tasks share one loop, with the
//! loop's wakers, cancellation and trace mode.
//!
//! # How data flows
//! `mod.rs` (this file) keeps the fibers of a thread: which one runs (`FIBERS`), their parent
//! links and states, and hands every switch a message (a value, a throw, or an error) through
//! the target's inbox. `switch.rs` does the switch itself in assembly (the only `unsafe` code of
//! this folder), `stack.rs` maps, guards, labels and recycles the stacks, `value.rs` is the
//! [`Value`] type, and `hub.rs` is the loop integration. In trace mode (`EVLOOP_TRACE=1`) every
//! switch and every fiber's end is a trace line: `Fiber-2 switch -> main (7u64)`,
//! `Fiber-1 -> dead, 42u64 to main`.
//!
//! # The `fiber/` folder (layer 4)
//! A sibling of `os/`: it builds on `task/` (tasks, `sleep`), `io/` (sockets for the blocking
//! helpers) and `event_loop/` (the trace hook), and nothing imports it.

mod hub;
pub(crate) mod stack;
// The register switch: the one module of this folder allowed to use `unsafe` (DESIGN.md,
// ground rules; tests/tests/workspace_rules.rs checks this exact line).
#[allow(unsafe_code)]
mod switch;
mod value;

use std::cell::{Cell, OnceCell, RefCell};
use std::fmt;
use std::io;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::rc::Rc;

use crate::event_loop::error::{LoopError, Panic};
use crate::event_loop::{running_loop_traces, with_running};

pub use hub::{accept, accept_unix, block_on, connect, read, read_exact, sleep, spawn, write, write_all, yield_now};
pub use stack::{GuardKind, StackStats};
pub use value::Value;

use switch::{Context, Finish};

/// greenlet's `GreenletExit`: the panic payload [`Fiber::throw`] (and dropping the last handle
/// of a suspended fiber) unwinds a fiber with, and the value its parent receives when the fiber
/// dies of it.
///
/// Code that catches panics inside a fiber (`catch_unwind`) should let it continue
/// (`std::panic::resume_unwind`): a fiber that swallows it and keeps running cannot be
/// stopped, and is leaked (with a warning on stderr) when its last handle goes.
///
/// ```
/// use evloop::fiber::{Fiber, FiberExit};
///
/// let child = Fiber::new(|_| {
///     let _ = Fiber::main().switch(()); // suspended here ...
///     "never reached"
/// });
/// child.switch(()).unwrap();
/// let back = child.throw().unwrap(); // ... and unwound from here: the parent receives FiberExit
/// assert_eq!(back.downcast::<FiberExit>().ok(), Some(FiberExit));
/// assert!(child.is_dead());
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct FiberExit;

impl fmt::Display for FiberExit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("FiberExit")
    }
}

/// What went wrong with a fiber operation. Messages name the fiber (`main`, `Fiber-3` or the
/// name it was given) and the operation.
///
/// ```
/// use evloop::fiber::{Fiber, FiberError};
///
/// let parent = Fiber::new(|_| ());
/// let child = Fiber::builder().parent(&parent).build(|_| ());
/// // Making `parent` a child of its own child would be a cycle: refused, nothing changes.
/// let err = parent.set_parent(&child).unwrap_err();
/// assert!(matches!(err, FiberError::ParentCycle { .. }));
/// assert!(matches!(Fiber::main().throw(), Err(FiberError::ThrowToMain)));
/// ```
#[derive(Debug)]
#[non_exhaustive]
pub enum FiberError {
    /// A fiber panicked; its parent receives the panic from its pending `switch` (or, for a
    /// fiber run with [`spawn`], its task ends with `TaskError::Panicked`).
    Panicked {
        /// The fiber that panicked.
        fiber: String,
        /// The caught panic (with its payload, for `resume_unwind`).
        panic: Panic,
    },
    /// The fiber's stack could not be allocated (out of memory or address space, or out of
    /// memory mappings: see the message).
    Stack {
        /// The fiber that needed it.
        fiber: String,
        /// The operating system's error, with what to change.
        error: io::Error,
    },
    /// `set_parent` would make a fiber its own ancestor.
    ParentCycle {
        /// The fiber being re-parented.
        fiber: String,
        /// The parent refused.
        parent: String,
    },
    /// The main fiber has no parent and cannot be given one.
    MainHasNoParent,
    /// `throw` into the main fiber, which would unwind the thread's own stack.
    ThrowToMain,
    /// [`block_on`] (or a helper built on it) outside a fiber run by the loop: on the loop's own
    /// stack it would wait for itself forever.
    NotInLoopFiber {
        /// The operation, e.g. `"fiber::block_on"`.
        op: &'static str,
        /// The fiber it was called from (`main` for the thread's own stack).
        fiber: String,
    },
    /// [`block_on`] in a fiber that is being unwound (its task was cancelled, or it was
    /// thrown out): it can no longer wait.
    Cancelled {
        /// The fiber.
        fiber: String,
    },
    /// The loop refused to run the fiber's task (none running, or it is closed).
    Loop(LoopError),
    /// The thread is exiting: its fibers can no longer be switched.
    ThreadExiting,
}

impl FiberError {
    /// The caught panic, for [`FiberError::Panicked`].
    ///
    /// ```
    /// use evloop::fiber::Fiber;
    ///
    /// let child = Fiber::new(|_| {
    ///     panic!("boom");
    /// });
    /// let err = child.switch(()).unwrap_err(); // the panic is delivered to the parent
    /// assert_eq!(err.panic().map(|p| p.message()), Some("boom"));
    /// assert!(child.is_dead());
    /// ```
    pub fn panic(&self) -> Option<&Panic> {
        match self {
            FiberError::Panicked { panic, .. } => Some(panic),
            _ => None,
        }
    }

    /// True for [`FiberError::Panicked`].
    ///
    /// ```
    /// use evloop::fiber::Fiber;
    ///
    /// let child = Fiber::new(|_| {
    ///     panic!("caught at the bottom of the fiber's stack");
    /// });
    /// assert!(child.switch(()).unwrap_err().is_panic());
    /// ```
    pub fn is_panic(&self) -> bool {
        matches!(self, FiberError::Panicked { .. })
    }
}

impl fmt::Display for FiberError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FiberError::Panicked { fiber, panic } => write!(f, "fiber '{fiber}' {panic}"),
            FiberError::Stack { fiber, error } => write!(f, "fiber '{fiber}': cannot allocate its stack: {error}"),
            FiberError::ParentCycle { fiber, parent } => write!(
                f,
                "set_parent: fiber '{parent}' cannot be the parent of '{fiber}': it descends from it (cyclic parent chain)"
            ),
            FiberError::MainHasNoParent => f.write_str("set_parent: the main fiber has no parent and cannot get one"),
            FiberError::ThrowToMain => f.write_str("throw: cannot throw into the main fiber (the thread's own stack)"),
            FiberError::NotInLoopFiber { op, fiber } => write!(
                f,
                "{op}: called in '{fiber}', which is not a fiber run by the loop (start one with fiber::spawn; \
                 on the loop's own stack, await the future instead: waiting here would deadlock)"
            ),
            FiberError::Cancelled { fiber } => {
                write!(
                    f,
                    "fiber '{fiber}' is being unwound (cancelled or thrown out) and can no longer wait"
                )
            }
            FiberError::Loop(e) => write!(f, "fiber::spawn: {e}"),
            FiberError::ThreadExiting => f.write_str("fiber: the thread is exiting; its fibers can no longer run"),
        }
    }
}

impl std::error::Error for FiberError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            FiberError::Stack { error, .. } => Some(error),
            FiberError::Loop(e) => Some(e),
            _ => None,
        }
    }
}

impl From<FiberError> for io::Error {
    fn from(e: FiberError) -> io::Error {
        let kind = match &e {
            FiberError::Stack { error, .. } => error.kind(),
            FiberError::Cancelled { .. } => io::ErrorKind::Interrupted,
            FiberError::NotInLoopFiber { .. } => io::ErrorKind::Unsupported,
            _ => io::ErrorKind::Other,
        };
        // The panic payload is not `Sync`: only the message crosses over.
        io::Error::new(kind, e.to_string())
    }
}

// ---------------------------------------------------------------------------------------------
// Per-fiber state.

#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum State {
    /// Created, never switched to: no stack yet.
    Fresh,
    /// Running now (one per thread).
    Running,
    /// Stopped in a `switch`.
    Suspended,
    /// Its function returned, panicked, or it was thrown out.
    Dead,
}

/// What a switch hands over, through the target's inbox.
enum Message {
    /// `switch(value)`, or a child's return value.
    Value(Value),
    /// `throw()`: unwind with `FiberExit`.
    Throw,
    /// A child's failure (a panic), delivered to its parent. Boxed: a message crosses every
    /// switch, and the common ones (values) are three words.
    Error(Box<FiberError>),
}

type Body = Box<dyn FnOnce(Value) -> Value>;

/// A fiber, shared by its handles, its children (as their parent) and, while it runs or is
/// suspended, its own stack.
///
/// Invariants: exactly one fiber of the thread is `Running`, and it is `FIBERS.current`; a
/// `Suspended` fiber is stopped inside `transfer` (or `fiber_main` has not started yet for a
/// `Fresh` one) and its stack holds a reference to this `Core`, so the `Core` outlives its
/// frames; `handles` counts the `Fiber` values (including parent links) and reaching zero on a
/// suspended fiber kills it.
struct Core {
    /// 0 for the main fiber; `Fiber-N` otherwise unless named.
    number: u64,
    name: Option<Box<str>>,
    state: Cell<State>,
    handles: Cell<usize>,
    /// The execution context: the thread's for main, made with the stack at the first switch
    /// for the others.
    ctx: OnceCell<Rc<Context>>,
    body: Cell<Option<Body>>,
    /// Where its result goes; `None` only for the main fiber. Not a handle: a parent link
    /// does not keep a suspended parent from being unwound when its last handle goes.
    parent: RefCell<Option<Rc<Core>>>,
    inbox: Cell<Option<Message>>,
    stack_size: usize,
    /// A throw is unwinding it: `block_on` refuses to wait.
    killing: Cell<bool>,
    /// Loop state, for fibers run by `spawn`.
    hub: Option<hub::HubState>,
}

impl Core {
    fn is_main(&self) -> bool {
        self.number == 0
    }

    fn label(&self) -> String {
        match (&self.name, self.number) {
            (Some(n), _) => n.to_string(),
            (None, 0) => "main".to_string(),
            (None, n) => format!("Fiber-{n}"),
        }
    }

    fn parent_core(&self) -> Option<Rc<Core>> {
        self.parent.borrow().clone()
    }
}

impl Drop for Core {
    fn drop(&mut self) {
        // The closure of a fiber that never ran: its captured values are dropped here, and a
        // panicking destructor must not unwind into whoever dropped the last reference.
        if let Some(body) = self.body.take() {
            let _ = catch_unwind(AssertUnwindSafe(move || drop(body)));
        }
    }
}

/// The fibers of one thread: one thread-local, so that a switch touches thread-local storage
/// once.
struct Fibers {
    /// The running fiber (`None` until the first fiber operation of the thread).
    current: Cell<Option<Rc<Core>>>,
    /// A fiber that switched to the current one and must be looked at by it once the stacks
    /// have switched: one that died (its last reference, dropped on the other stack) or one that
    /// nobody can reach any more (killed then).
    previous: Cell<Option<Rc<Core>>>,
    /// The main fiber, kept alive while other fibers run.
    main: Cell<Option<Rc<Core>>>,
    next_number: Cell<u64>,
}

thread_local! {
    static FIBERS: Fibers = const {
        Fibers {
            current: Cell::new(None),
            previous: Cell::new(None),
            main: Cell::new(None),
            next_number: Cell::new(1),
        }
    };
}

impl Fibers {
    /// The running fiber; the first call on a thread creates the thread's main fiber.
    #[inline]
    fn current(&self) -> Option<Rc<Core>> {
        let cur = match self.current.take() {
            Some(cur) => cur,
            None => make_main(self)?,
        };
        let out = cur.clone();
        self.current.set(Some(cur));
        Some(out)
    }

    /// Makes `target` the running fiber; the one it replaces waits in `previous` for the
    /// target to look at it (`after_resume`) once the stacks have switched.
    #[inline]
    fn hand_over(&self, target: Rc<Core>) {
        let leaving = self.current.replace(Some(target));
        put(&self.previous, leaving);
    }
}

/// Stores `value` in a slot that is empty on this path; dropping the old `None` through the
/// generic drop glue costs a call on every switch, so it is only done when there is something.
#[inline(always)]
fn put<T>(slot: &Cell<Option<T>>, value: Option<T>) {
    let old = slot.replace(value);
    if old.is_some() {
        drop(old);
    } else {
        std::mem::forget(old);
    }
}

/// The running fiber; the first call on a thread creates the thread's main fiber. `None` while
/// the thread's locals are being destroyed.
fn current_core() -> Option<Rc<Core>> {
    FIBERS.try_with(Fibers::current).ok().flatten()
}

fn make_main(fibers: &Fibers) -> Option<Rc<Core>> {
    let ctx = Context::for_thread()?;
    let core = Rc::new(Core {
        number: 0,
        name: None,
        state: Cell::new(State::Running),
        handles: Cell::new(0),
        ctx: OnceCell::from(ctx),
        body: Cell::new(None),
        parent: RefCell::new(None),
        inbox: Cell::new(None),
        stack_size: 0,
        killing: Cell::new(false),
        hub: None,
    });
    fibers.main.set(Some(core.clone()));
    Some(core)
}

/// Emits a trace line on the loop running on this thread, if it is in trace mode (one
/// thread-local load when it is not: this is on every switch).
#[inline]
fn trace(line: impl FnOnce() -> String) {
    if running_loop_traces() {
        with_running(|lp| lp.trace(line));
    }
}

fn describe(msg: &Message) -> String {
    match msg {
        Message::Value(v) if v.is::<hub::Blocked>() => "blocked".to_string(),
        Message::Value(v) => format!("{v:?}"),
        Message::Throw => "throw FiberExit".to_string(),
        Message::Error(e) => format!("error: {e}"),
    }
}

/// `t`, or its nearest ancestor that is not dead (greenlet switches to a dead greenlet's
/// parent). The main fiber never dies, so the walk ends.
fn live_target(t: &Rc<Core>) -> Rc<Core> {
    let mut t = t.clone();
    while t.state.get() == State::Dead {
        match t.parent_core() {
            Some(p) => t = p,
            None => break,
        }
    }
    t
}

/// Gives a fresh fiber its stack and context (greenlet allocates at the first switch too).
fn ensure_context(core: &Core) -> Result<(), FiberError> {
    if core.ctx.get().is_some() {
        return Ok(());
    }
    let stack = stack::allocate(core.stack_size, &core.label()).map_err(|error| FiberError::Stack {
        fiber: core.label(),
        error,
    })?;
    let _ = core.ctx.set(Context::new(stack, fiber_main));
    Ok(())
}

/// Switches from the running fiber to `target` (or its nearest live ancestor) carrying `msg`;
/// returns the message the running fiber is resumed with (a failure to switch, such as a stack
/// that cannot be allocated, comes back as an error message without switching).
///
/// The message goes through the target's inbox and the answer through the caller's: written
/// and read here, in the caller's frame, so that a value is not copied through the out-of-line
/// part with loads wider than the stores that wrote it (a store-forwarding stall on every
/// switch, measured at about a third of its cost).
#[inline(always)]
fn transfer(target: &Rc<Core>, msg: Message) -> Message {
    put(&target.inbox, Some(msg));
    match FIBERS.try_with(|fibers| transfer_in(fibers, target)) {
        Ok(Some(me)) => me.inbox.take().unwrap_or_else(|| Message::Value(Value::unit())),
        _ => {
            drop(target.inbox.take());
            Message::Error(Box::new(FiberError::ThreadExiting))
        }
    }
}

/// The switch itself, with the message already in `target`'s inbox. Returns the running fiber
/// once it is resumed (or at once, when there is nothing to switch to), its inbox holding the
/// message it was resumed with.
fn transfer_in(fibers: &Fibers, target: &Rc<Core>) -> Option<Rc<Core>> {
    // The running fiber's reference leaves `current` for the switch: this frame holds it while
    // the fiber is suspended, and whoever resumes the fiber puts a new one back.
    let me = match fibers.current.take() {
        Some(me) => me,
        None => make_main(fibers)?,
    };
    let target = if target.state.get() == State::Dead {
        let live = live_target(target);
        put(&live.inbox, target.inbox.take());
        live
    } else {
        target.clone()
    };
    if Rc::ptr_eq(&target, &me) {
        // The message is in our own inbox: it comes straight back.
        fibers.current.set(Some(me.clone()));
        return Some(me);
    }
    if target.state.get() == State::Fresh {
        if let Err(e) = ensure_context(&target) {
            drop(target.inbox.take());
            put(&me.inbox, Some(Message::Error(Box::new(e))));
            fibers.current.set(Some(me.clone()));
            return Some(me);
        }
    }
    let (Some(my_ctx), Some(to_ctx)) = (me.ctx.get(), target.ctx.get()) else {
        drop(target.inbox.take());
        put(&me.inbox, Some(Message::Error(Box::new(FiberError::ThreadExiting))));
        fibers.current.set(Some(me.clone()));
        return Some(me);
    };
    trace(|| {
        let msg = target.inbox.take();
        let what = msg.as_ref().map_or_else(|| "()".to_string(), describe);
        target.inbox.set(msg);
        format!("  {} switch -> {} ({what})", me.label(), target.label())
    });
    me.state.set(State::Suspended);
    target.state.set(State::Running);
    fibers.current.set(Some(target.clone()));
    if me.handles.get() == 0 && !me.is_main() {
        // Its last handle went while it ran: once suspended nothing can switch back to it, so
        // the target unwinds it when it gets control (`after_resume`).
        put(&fibers.previous, Some(me.clone()));
    }
    switch::switch(my_ctx, to_ctx, 0);
    // Resumed: whoever switched here made `me` current again and left a message in its inbox.
    after_resume_in(fibers, Some(&me));
    Some(me)
}

/// Looks at the fiber that just switched to us: if it is suspended and nothing can reach it
/// any more (no handle, not a parent), it can never run again, so it is killed now (greenlet
/// does the same when the garbage collector finds such a greenlet).
fn after_resume() {
    let _ = FIBERS.try_with(|f| after_resume_in(f, None));
}

/// `after_resume` for a fiber resumed in `transfer_in`: `me`'s inbox holds the message it was
/// resumed with, which killing an orphan must not overwrite (the orphan's death is reported to
/// its killer, `me`, through the same inbox).
#[inline(always)]
fn after_resume_in(fibers: &Fibers, me: Option<&Core>) {
    let Some(prev) = fibers.previous.take() else {
        return;
    };
    after_resume_slow(prev, me);
}

/// The rare part of `after_resume_in`: a fiber was handed over.
#[inline(never)]
fn after_resume_slow(prev: Rc<Core>, me: Option<&Core>) {
    // A fiber that is already unwinding (it switched here from a destructor) has a killer
    // waiting for it; throwing again would be a panic inside a destructor during cleanup.
    if prev.state.get() == State::Suspended && prev.handles.get() == 0 && !prev.is_main() && !prev.killing.get() {
        let resumed_with = me.and_then(|m| m.inbox.take());
        kill(&prev);
        if let Some(m) = me {
            put(&m.inbox, resumed_with);
        }
    }
    drop(prev);
}

/// How to throw into `target`: with an unwind, or, if it is unwinding already (stopped in a
/// switch made by one of its destructors), by resuming it with `FiberExit` as a value, so that
/// its unwinding goes on (a second panic during cleanup would abort the process).
fn throw_message(target: &Core) -> Message {
    if target.killing.get() {
        Message::Value(Value::new(FiberExit))
    } else {
        Message::Throw
    }
}

/// What a resumed `switch` returns: a value, a failure, or (for `throw`) an unwind.
#[inline]
fn receive(msg: Message) -> Result<Value, FiberError> {
    match msg {
        Message::Value(v) => Ok(v),
        Message::Error(e) => Err(*e),
        Message::Throw => {
            if let Some(me) = current_core() {
                me.killing.set(true);
            }
            std::panic::resume_unwind(Box::new(FiberExit))
        }
    }
}

/// The body of every fiber stack: runs the fiber's function, then hands its outcome to the
/// parent and tells the switch where to go.
fn fiber_main(_arg: usize) -> Finish {
    let Some(me) = current_core() else {
        // Unreachable: the switch into a fresh fiber made it current first.
        eprintln!("evloop: fatal: a fiber started with no current fiber");
        std::process::abort();
    };
    let msg = me.inbox.take();
    after_resume();
    let body = me.body.take();
    let outcome = match msg {
        Some(Message::Value(v)) => run(&me, body, v),
        None => run(&me, body, Value::unit()),
        Some(Message::Throw) => {
            drop_body(body);
            Message::Value(Value::new(FiberExit))
        }
        // A failure delivered to a fiber that had not started (its child died first): it never
        // runs and passes the failure on, as greenlet raises it at the greenlet's start.
        Some(Message::Error(e)) => {
            drop_body(body);
            Message::Error(e)
        }
    };
    die(me, outcome)
}

fn run(me: &Core, body: Option<Body>, v: Value) -> Message {
    let Some(body) = body else {
        return Message::Value(Value::unit());
    };
    match catch_unwind(AssertUnwindSafe(move || body(v))) {
        Ok(v) => Message::Value(v),
        Err(p) if p.is::<FiberExit>() => Message::Value(Value::new(FiberExit)),
        Err(p) => Message::Error(Box::new(FiberError::Panicked {
            fiber: me.label(),
            panic: Panic::from_payload(p),
        })),
    }
}

fn drop_body(body: Option<Body>) {
    if let Some(body) = body {
        let _ = catch_unwind(AssertUnwindSafe(move || drop(body)));
    }
}

/// The end of a fiber: marks it dead, delivers `outcome` to its nearest live ancestor and
/// returns the switch that goes there (the fiber's last references leave with it).
fn die(me: Rc<Core>, outcome: Message) -> Finish {
    me.state.set(State::Dead);
    me.killing.set(false);
    let mut outcome = outcome;
    let mut target = me.parent_core().map(|p| live_target(&p));
    // A parent that never ran starts now with the outcome (greenlet's rule); one that cannot
    // get a stack passes the failure up instead.
    while let Some(t) = target.clone() {
        if t.state.get() != State::Fresh {
            break;
        }
        match ensure_context(&t) {
            Ok(()) => break,
            Err(e) => {
                outcome = Message::Error(Box::new(e));
                target = t.parent_core().map(|p| live_target(&p));
            }
        }
    }
    let target = match target {
        Some(t) => t,
        None => {
            // Unreachable: every fiber but main has a parent, and main never dies.
            eprintln!("evloop: fatal: fiber '{}' ended with nowhere to go", me.label());
            std::process::abort();
        }
    };
    trace(|| match &outcome {
        Message::Value(v) if v.is::<FiberExit>() => {
            format!(
                "  {} -> dead (thrown out, stack unwound), FiberExit to {}",
                me.label(),
                target.label()
            )
        }
        Message::Value(v) => format!("  {} -> dead, {v:?} to {}", me.label(), target.label()),
        Message::Error(e) => format!("  {} -> dead: {e}; delivered to {}", me.label(), target.label()),
        Message::Throw => format!("  {} -> dead", me.label()),
    });
    put(&target.inbox, Some(outcome));
    target.state.set(State::Running);
    let Some(to) = target.ctx.get().cloned() else {
        eprintln!("evloop: fatal: fiber '{}' has no context to return to", target.label());
        std::process::abort();
    };
    let _ = FIBERS.try_with(|f| f.hand_over(target));
    // Not the last reference: `previous` holds one until the target has switched stacks.
    drop(me);
    Finish { to, arg: 0 }
}

/// Unwinds `target` now: a fresh fiber just dies (its closure is dropped); a suspended one is
/// thrown into with its parent temporarily set to the running fiber, so that its death comes
/// back here (greenlet's dealloc does the same). Problems are reported on stderr, since no
/// caller can receive them (this runs in destructors).
fn kill(target: &Rc<Core>) {
    match target.state.get() {
        State::Fresh => {
            target.state.set(State::Dead);
            drop_body(target.body.take());
            trace(|| format!("  {} -> dead (dropped before it ran)", target.label()));
        }
        State::Suspended => {
            let Some(me) = current_core() else {
                // The thread is exiting: the fiber cannot run again; its stack stays mapped.
                return;
            };
            let old = target.parent.replace(Some(me));
            let result = transfer(target, throw_message(target));
            let ours = target.parent.replace(old);
            drop(ours);
            if let Message::Error(e) = result {
                eprintln!("evloop: while fiber '{}' was being unwound: {e}", target.label());
            }
            if target.state.get() != State::Dead {
                eprintln!(
                    "evloop: fiber '{}' caught FiberExit and kept running; it cannot be stopped and is leaked",
                    target.label()
                );
            }
        }
        State::Running | State::Dead => {}
    }
}

// ---------------------------------------------------------------------------------------------
// The public handle.

/// A handle to a fiber (greenlet's `greenlet` object). Cloning gives another handle to the same
/// fiber; when the last handle of a suspended fiber goes, the fiber is unwound (see
/// [`Fiber::throw`]), so a fiber is never leaked with its destructors pending.
///
/// Unlike greenlet, a child's link to its parent is not a handle: a parent whose last handle is
/// dropped is unwound even if a child of it is still suspended (the child's result then goes to
/// the nearest live ancestor). Python's garbage collector can free a parent and a child that
/// refer to each other; reference counting cannot, and the common case (a fiber holding handles
/// to the children it started) would otherwise leak both.
///
/// Fibers belong to the thread that created them (`Fiber` is neither `Send` nor `Sync`):
///
/// ```compile_fail
/// let f = evloop::fiber::Fiber::new(|_| ());
/// std::thread::spawn(move || f.switch(())); // error: `Rc<...>` cannot be sent between threads
/// ```
pub struct Fiber {
    core: Rc<Core>,
}

impl Fiber {
    fn from_core(core: Rc<Core>) -> Fiber {
        core.handles.set(core.handles.get() + 1);
        Fiber { core }
    }

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
    /// receives `FiberExit`; a dead fiber gives `FiberExit` back at once. Throwing into the
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
        match core.state.get() {
            State::Dead => Ok(Value::new(FiberExit)),
            State::Running if core.is_main() => Err(FiberError::ThrowToMain),
            State::Running => {
                core.killing.set(true);
                std::panic::resume_unwind(Box::new(FiberExit))
            }
            State::Suspended if core.is_main() => Err(FiberError::ThrowToMain),
            State::Suspended => receive(transfer(core, throw_message(core))),
            State::Fresh => {
                core.state.set(State::Dead);
                drop_body(core.body.take());
                trace(|| format!("  {} -> dead (thrown out before it ran)", core.label()));
                match core.parent_core() {
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
    pub fn set_parent(&self, parent: &Fiber) -> Result<(), FiberError> {
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
        self.core.state.get() == State::Dead
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
        matches!(self.core.state.get(), State::Running | State::Suspended)
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
        self.core.state.get() == State::Running
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
    pub fn ptr_eq(&self, other: &Fiber) -> bool {
        Rc::ptr_eq(&self.core, &other.core)
    }
}

impl Clone for Fiber {
    fn clone(&self) -> Fiber {
        Fiber::from_core(self.core.clone())
    }
}

impl PartialEq for Fiber {
    fn eq(&self, other: &Fiber) -> bool {
        self.ptr_eq(other)
    }
}

impl Eq for Fiber {}

impl Drop for Fiber {
    fn drop(&mut self) {
        let n = self.core.handles.get().saturating_sub(1);
        self.core.handles.set(n);
        if n == 0 && !self.core.is_main() && matches!(self.core.state.get(), State::Suspended | State::Fresh) {
            kill(&self.core);
        }
    }
}

impl fmt::Debug for Fiber {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = match self.core.state.get() {
            State::Fresh => "not started",
            State::Running => "running",
            State::Suspended => "suspended",
            State::Dead => "dead",
        };
        write!(f, "Fiber({}, {state})", self.core.label())
    }
}

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

    /// The parent (default: the fiber running when the fiber is built).
    ///
    /// ```
    /// use evloop::fiber::{Builder, Fiber};
    ///
    /// let parent = Fiber::new(|_| ());
    /// let child = Builder::new().parent(&parent).build(|_| ());
    /// assert!(child.parent().is_some_and(|p| p.ptr_eq(&parent)));
    /// ```
    pub fn parent(mut self, parent: &Fiber) -> Builder {
        self.parent = Some(parent.clone());
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

    fn make(self, body: Body, hub: Option<hub::HubState>) -> Fiber {
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
        Fiber::from_core(Rc::new(Core {
            number,
            name: self.name.map(String::into_boxed_str),
            state: Cell::new(State::Fresh),
            handles: Cell::new(0),
            ctx: OnceCell::new(),
            body: Cell::new(Some(body)),
            parent: RefCell::new(parent),
            inbox: Cell::new(None),
            stack_size: self.stack_size.unwrap_or(stack::DEFAULT_STACK_SIZE),
            killing: Cell::new(false),
            hub,
        }))
    }
}

/// The calling thread's fiber stacks: in use, free in its pool, mapped; and how this process
/// installs guard pages.
///
/// ```
/// use evloop::fiber::{stack_stats, Fiber};
///
/// let before = stack_stats().in_use;
/// let f = Fiber::new(|_| {
///     let _ = Fiber::main().switch(());
/// });
/// f.switch(()).unwrap(); // started: it owns a stack now
/// assert_eq!(stack_stats().in_use, before + 1);
/// drop(f); // unwound, its stack back in the pool
/// assert_eq!(stack_stats().in_use, before);
/// ```
pub fn stack_stats() -> StackStats {
    stack::stats()
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

    #[test]
    fn core_stays_small() {
        // Every suspended fiber pays for it, next to its stack pages.
        assert!(std::mem::size_of::<Core>() <= 200, "{}", std::mem::size_of::<Core>());
    }
}
