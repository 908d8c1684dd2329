//! Moving control between fibers: `transfer` (every switch: the message into the target's
//! inbox, the register switch, the answer out of the caller's inbox), the start and the end of a
//! fiber's stack (`fiber_main`, `die`: its outcome to its nearest live parent), and the two ways
//! of unwinding one (`throw_message`, `kill`). The fiber states this reads are its context's;
//! the register switch (`switch.rs`) is what changes them.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::rc::Rc;

use crate::event_loop::error::Panic;
use crate::fiber::fibers::{Body, Core, FIBERS, Fibers, Message, current_core, describe, make_main, put, trace};
use crate::fiber::switch::{self, Finish, State};
use crate::fiber::value::Value;
use crate::fiber::{FiberError, FiberExit, stack};

/// `t`, or its nearest ancestor that is not dead (greenlet switches to a dead greenlet's
/// parent). The main fiber never dies, so the walk ends.
fn live_target(t: &Rc<Core>) -> Rc<Core> {
    let mut t = t.clone();
    while t.state() == State::Dead {
        match t.parent_core() {
            Some(p) => t = p,
            None => break,
        }
    }
    t
}

/// Gives a fresh fiber's context its stack (greenlet allocates at the first switch too).
pub(super) fn ensure_context(core: &Core) -> Result<(), FiberError> {
    if core.ctx.has_stack() {
        return Ok(());
    }
    let stack = stack::allocate(core.stack_size, &core.label()).map_err(|error| FiberError::Stack {
        fiber: core.label(),
        error,
    })?;
    core.ctx.give_stack(stack);
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
pub(super) fn transfer(target: &Rc<Core>, msg: Message) -> Message {
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
    let target = if target.state() == State::Dead {
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
    if target.state() == State::Fresh {
        if let Err(e) = ensure_context(&target) {
            drop(target.inbox.take());
            put(&me.inbox, Some(Message::Error(Box::new(e))));
            fibers.current.set(Some(me.clone()));
            return Some(me);
        }
    }
    trace(|| {
        let msg = target.inbox.take();
        let what = msg.as_ref().map_or_else(|| "()".to_string(), describe);
        target.inbox.set(msg);
        format!("  {} switch -> {} ({what})", me.label(), target.label())
    });
    // The switch makes `me` Suspended and `target` Running (their contexts hold the state).
    fibers.current.set(Some(target.clone()));
    if me.handles.get() == 0 && !me.is_main() {
        // Its last handle went while it ran: once suspended nothing can switch back to it, so
        // the target unwinds it when it gets control (`after_resume`).
        put(&fibers.previous, Some(me.clone()));
    }
    switch::switch(&me.ctx, &target.ctx, 0);
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
    if prev.state() == State::Suspended && prev.handles.get() == 0 && !prev.is_main() && !prev.killing.get() {
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
pub(super) fn throw_message(target: &Core) -> Message {
    if target.killing.get() {
        Message::Value(Value::new(FiberExit))
    } else {
        Message::Throw
    }
}

/// What a resumed `switch` returns: a value, a failure, or (for `throw`) an unwind.
#[inline]
pub(super) fn receive(msg: Message) -> Result<Value, FiberError> {
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
pub(super) fn fiber_main(_arg: usize) -> Finish {
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

pub(super) fn drop_body(body: Option<Body>) {
    if let Some(body) = body {
        let _ = catch_unwind(AssertUnwindSafe(move || drop(body)));
    }
}

/// The end of a fiber: delivers `outcome` to its nearest live ancestor and returns the switch
/// that goes there (the fiber's last references leave with it); that switch marks it dead.
fn die(me: Rc<Core>, outcome: Message) -> Finish {
    me.killing.set(false);
    let mut outcome = outcome;
    let mut target = me.parent_core().map(|p| live_target(&p));
    // A parent that never ran starts now with the outcome (greenlet's rule); one that cannot
    // get a stack passes the failure up instead.
    while let Some(t) = target.clone() {
        if t.state() != State::Fresh {
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
    let to = target.ctx.clone();
    let _ = FIBERS.try_with(|f| f.hand_over(target));
    // Not the last reference: `previous` holds one until the target has switched stacks.
    drop(me);
    Finish { to, arg: 0 }
}

/// Unwinds `target` now: a fresh fiber just dies (its closure is dropped); a suspended one is
/// thrown into with its parent temporarily set to the running fiber, so that its death comes
/// back here (greenlet's dealloc does the same). Problems are reported on stderr, since no
/// caller can receive them (this runs in destructors).
pub(super) fn kill(target: &Rc<Core>) {
    match target.state() {
        State::Fresh => {
            target.ctx.abandon();
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
            if target.state() != State::Dead {
                // Not "leaked": it may yet end, if it is switched to again (through a weak
                // handle, or as a parent) and returns.
                eprintln!(
                    "evloop: fiber '{}' was unwound with FiberExit but switched away instead of ending \
                     (it caught FiberExit, or a destructor switched); it stays suspended, with its stack, \
                     until something switches to it",
                    target.label()
                );
            }
        }
        State::Running | State::Dead => {}
    }
}
