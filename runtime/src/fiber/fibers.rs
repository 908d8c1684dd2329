//! The fibers of a thread as the fiber layer keeps them: `Core`, one per fiber (its name, its
//! handles, its parent, its inbox, its context, whose state is the fiber's), `Message`, what a
//! switch hands over through the target's inbox, and `FIBERS`, the thread's running fiber, main
//! fiber and the one that just switched away. `transfer.rs` moves control between them;
//! `handle.rs` is the public face.

use std::cell::{Cell, RefCell};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::rc::Rc;

use crate::event_loop::{running_loop_traces, with_running};
use crate::fiber::FiberError;
use crate::fiber::hub;
use crate::fiber::switch::{Context, State};
use crate::fiber::value::Value;

/// What a switch hands over, through the target's inbox.
pub(super) enum Message {
    /// `switch(value)`, or a child's return value.
    Value(Value),
    /// `throw()`: unwind with `FiberExit`.
    Throw,
    /// A child's failure (a panic), delivered to its parent. Boxed: a message crosses every
    /// switch, and the common ones (values) are three words.
    Error(Box<FiberError>),
}

pub(super) type Body = Box<dyn FnOnce(Value) -> Value>;

/// A fiber, shared by its handles, its children (as their parent) and, while it runs or is
/// suspended, its own stack.
///
/// Invariants: exactly one fiber of the thread is `Running`, and it is `FIBERS.current`; a
/// `Suspended` fiber is stopped inside `transfer` (or `fiber_main` has not started yet for a
/// `Fresh` one) and its stack holds a reference to this `Core`, so the `Core` outlives its
/// frames; `handles` counts the `Fiber` values whose brand is the fiber's own (not parent links)
/// and reaching zero on a suspended fiber kills it. The fiber's state is its context's (`switch::State`), not a copy.
pub(super) struct Core {
    /// 0 for the main fiber; `Fiber-N` otherwise unless named.
    pub(super) number: u64,
    pub(super) name: Option<Box<str>>,
    pub(super) handles: Cell<usize>,
    /// Made by a `fiber::scope`: only `Fiber<Scoped>` handles count in `handles` (see
    /// `scope.rs`), so no handle that can outlive the scope keeps it alive.
    pub(super) scoped: bool,
    /// The execution context: the thread's for main; for the others, made with the fiber and
    /// given its stack at the first switch (`transfer::ensure_context`).
    pub(super) ctx: Rc<Context>,
    pub(super) body: Cell<Option<Body>>,
    /// Where its result goes; `None` only for the main fiber. Not a handle: a parent link
    /// does not keep a suspended parent from being unwound when its last handle goes.
    pub(super) parent: RefCell<Option<Rc<Core>>>,
    pub(super) inbox: Cell<Option<Message>>,
    pub(super) stack_size: usize,
    /// A throw is unwinding it: `block_on` refuses to wait.
    pub(super) killing: Cell<bool>,
    /// Loop state, for fibers run by `spawn`.
    pub(super) hub: Option<hub::HubState>,
}

impl Core {
    /// Where the fiber is in its life: its context's state, the only copy.
    #[inline]
    pub(super) fn state(&self) -> State {
        self.ctx.state()
    }

    pub(super) fn is_main(&self) -> bool {
        self.number == 0
    }

    pub(super) fn label(&self) -> String {
        match (&self.name, self.number) {
            (Some(n), _) => n.to_string(),
            (None, 0) => "main".to_string(),
            (None, n) => format!("Fiber-{n}"),
        }
    }

    pub(super) fn parent_core(&self) -> Option<Rc<Core>> {
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
pub(super) struct Fibers {
    /// The running fiber (`None` until the first fiber operation of the thread).
    pub(super) current: Cell<Option<Rc<Core>>>,
    /// A fiber that switched to the current one and must be looked at by it once the stacks
    /// have switched: one that died (its last reference, dropped on the other stack) or one that
    /// nobody can reach any more (killed then).
    pub(super) previous: Cell<Option<Rc<Core>>>,
    /// The main fiber, kept alive while other fibers run.
    pub(super) main: Cell<Option<Rc<Core>>>,
    pub(super) next_number: Cell<u64>,
}

thread_local! {
    pub(super) static FIBERS: Fibers = const {
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
    pub(super) fn current(&self) -> Option<Rc<Core>> {
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
    pub(super) fn hand_over(&self, target: Rc<Core>) {
        let leaving = self.current.replace(Some(target));
        put(&self.previous, leaving);
    }
}

/// Stores `value` in a slot that is empty on this path; dropping the old `None` through the
/// generic drop glue costs a call on every switch, so it is only done when there is something.
#[inline(always)]
pub(super) fn put<T>(slot: &Cell<Option<T>>, value: Option<T>) {
    let old = slot.replace(value);
    if old.is_some() {
        drop(old);
    } else {
        std::mem::forget(old);
    }
}

/// The running fiber; the first call on a thread creates the thread's main fiber. `None` while
/// the thread's locals are being destroyed.
pub(super) fn current_core() -> Option<Rc<Core>> {
    FIBERS.try_with(Fibers::current).ok().flatten()
}

pub(super) fn make_main(fibers: &Fibers) -> Option<Rc<Core>> {
    let ctx = Context::for_thread()?;
    let core = Rc::new(Core {
        number: 0,
        name: None,
        handles: Cell::new(0),
        scoped: false,
        ctx,
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
pub(super) fn trace(line: impl FnOnce() -> String) {
    if running_loop_traces() {
        with_running(|lp| lp.trace(line));
    }
}

pub(super) fn describe(msg: &Message) -> String {
    match msg {
        Message::Value(v) if v.is::<hub::Blocked>() => "blocked".to_string(),
        Message::Value(v) => format!("{v:?}"),
        Message::Throw => "throw FiberExit".to_string(),
        Message::Error(e) => format!("error: {e}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn core_stays_small() {
        // Every suspended fiber pays for it, next to its stack pages.
        assert!(std::mem::size_of::<Core>() <= 200, "{}", std::mem::size_of::<Core>());
    }
}
