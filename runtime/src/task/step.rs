//! The step of a task (asyncio's `Task.__step`) and what follows its end: the loop takes a task
//! off its ready queue and calls [`step`] (through `HOOKS`); the step polls the cell's future
//! once, or drops it when cancellation was requested, and on the last step [`finish`] records
//! the outcome, wakes the handle's awaiter, schedules the done callbacks and lets the loop's
//! table go of the task. `abort_now` and the loop's `shutdown` end a task without a step.
//! Every state change goes through `Core`'s transitions (`state.rs`).

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::rc::Rc;
use std::task::{Context, Poll};
use std::time::Instant;

use crate::event_loop::error::Panic;
use crate::event_loop::handle::{HandleKind, OnceCallback};
use crate::event_loop::raw_task::TaskPtr;
use crate::event_loop::trace::{fmt_duration, take_awaiting, take_awaiting_label};
use crate::event_loop::{ExceptionContext, ExceptionKind, LoopInner, Ready, TaskHooks};
use crate::task::handle::AWAITED_TASK;
use crate::task::state::{CancelRequest, Core, Finishing, StepStart, TaskState};

/// How a task ended.
pub(super) enum Outcome {
    /// Its future completed; the output is in the cell.
    Done,
    Cancelled,
    Failed(Panic),
}

impl Outcome {
    fn state(&self) -> TaskState {
        match self {
            Outcome::Done => TaskState::Done,
            Outcome::Cancelled => TaskState::Cancelled,
            Outcome::Failed(_) => TaskState::Failed,
        }
    }
}

/// What the loop calls to run this layer's tasks (see `event_loop::TaskHooks`).
pub(super) static HOOKS: TaskHooks = TaskHooks { step, shutdown };

fn report_destructor_panic(lp: &Rc<LoopInner>, task: &TaskPtr, what: &str, p: Panic) {
    let label = Core(task.header()).label();
    lp.report(ExceptionContext {
        kind: ExceptionKind::DestructorPanicked,
        message: format!("{label}: {what}"),
        panic: Some(p),
        task: Some(label),
        handle: None,
    });
}

/// Drops the future as the current task (its destructors are the task's cleanup code and run
/// inside it, as asyncio's `finally` blocks do); a panicking destructor is reported.
fn drop_future_as_current(lp: &Rc<LoopInner>, task: &TaskPtr) {
    if let Err(p) = lp.current.enter(task, || task.drop_future()) {
        report_destructor_panic(lp, task, "a destructor panicked while its future was dropped", p);
    }
}

/// One step (asyncio's `Task.__step`): poll the future once, or finish a cancellation.
pub(super) fn step(lp: &Rc<LoopInner>, task: TaskPtr) {
    let core = Core(task.header());
    let start = core.begin_step();
    if start == StepStart::Stale {
        return;
    }
    task.clear_notified();
    if start == StepStart::Cancel {
        lp.trace(|| format!("  {} step: cancel requested, dropping its future", core.label()));
        drop_future_as_current(lp, &task);
        finish(lp, &task, Outcome::Cancelled);
        return;
    }
    lp.trace(|| format!("  {} step", core.label()));
    let started = lp.debug().then(Instant::now);
    let polled = lp.current.enter(&task, || {
        let waker = task.waker_ref();
        let mut cx = Context::from_waker(&waker);
        catch_unwind(AssertUnwindSafe(|| task.poll(&mut cx)))
    });
    let awaiting = take_awaiting();
    // The awaited task's name is noted only in trace mode (names cost an allocation).
    let awaited_label = if lp.tracing() { take_awaiting_label() } else { None };
    if let Some(started) = started {
        let took = started.elapsed();
        if took >= lp.slow_callback() {
            eprintln!(
                "evloop: warning: a step of {} took {}",
                core.label(),
                fmt_duration(took)
            );
        }
    }
    match polled {
        Ok(Poll::Pending) => {
            core.end_poll();
            task.header().set_awaiting(awaiting.pack());
            lp.trace(|| {
                let what = match (awaiting, awaited_label) {
                    (awaiting, Some(name)) if awaiting.object_of(&AWAITED_TASK).is_some() => name,
                    (other, _) => other.to_string(),
                };
                format!("  {} -> pending on {what}", core.label())
            });
        }
        Ok(Poll::Ready(destructor)) => {
            if let Some(p) = destructor {
                report_destructor_panic(lp, &task, "a destructor panicked while its future was dropped", p);
            }
            if core.cancel_requested() {
                // Cancelled during the step that completed it: asyncio's rule is that the task
                // ends cancelled and the value is discarded.
                let _ = task.drop_output();
                finish(lp, &task, Outcome::Cancelled);
            } else {
                finish(lp, &task, Outcome::Done);
            }
        }
        Err(payload) => {
            drop_future_as_current(lp, &task);
            finish(lp, &task, Outcome::Failed(Panic::from_payload(payload)));
        }
    }
}

/// Records the outcome and does everything that follows completion.
fn finish(lp: &Rc<LoopInner>, task: &TaskPtr, outcome: Outcome) {
    let core = Core(task.header());
    let state = outcome.state();
    let Finishing::Now { detached } = core.finish(state) else {
        return;
    };
    lp.trace(|| match &outcome {
        Outcome::Done => format!("  {} -> done", core.label()),
        Outcome::Cancelled => format!("  {} -> cancelled (future dropped)", core.label()),
        Outcome::Failed(p) => format!("  {} -> {p}", core.label()),
    });
    let failed_unobserved = state == TaskState::Failed && detached;
    if let Outcome::Failed(p) = outcome {
        task.header().extra_mut(|e| e.panic = Some(p));
    }
    // The loop lets go of a finished task; the handle (if any) keeps the cell alive.
    let removed = lp.tasks.borrow_mut().remove(task);
    drop(removed);
    // Most tasks have no extra part: nobody awaited them before they finished, and they have
    // no name and no done callback.
    if task.header().has_extra() {
        if let Some(w) = core.take_join_waker() {
            w.wake();
        }
        let callbacks = core.take_callbacks();
        for (_, name, site, cb) in callbacks {
            let me = task.clone();
            let f = move || cb(&me);
            lp.push_ready(Ready::Callback(OnceCallback::named_rc(
                HandleKind::DoneCallback,
                site,
                name,
                f,
            )));
        }
        if failed_unobserved {
            report_unobserved(lp, task);
        }
        core.recycle_extra(lp);
    }
    if detached {
        // Nobody can take the output any more.
        if let Err(p) = task.drop_output() {
            report_destructor_panic(lp, task, "dropping its unobserved result panicked", p);
        }
    }
}

/// Hands a failure nobody observed to the exception handler (once).
fn report_unobserved(lp: &Rc<LoopInner>, task: &TaskPtr) {
    let core = Core(task.header());
    if !core.observe() {
        return;
    }
    lp.report(ExceptionContext {
        kind: ExceptionKind::TaskFailureUnobserved,
        message: format!(
            "{} failed and its failure was never observed (created at {})",
            core.label(),
            core.site()
        ),
        panic: core.take_panic(),
        task: Some(core.label()),
        handle: None,
    });
}

/// The loop is closing: drop the future without scheduling anything.
fn shutdown(_lp: &Rc<LoopInner>, task: TaskPtr) {
    let core = Core(task.header());
    if core.state().is_finished() {
        return;
    }
    let _ = task.drop_future();
    if core.finish(TaskState::Cancelled) == Finishing::Already {
        return;
    }
    if let Some(w) = core.take_join_waker() {
        w.wake();
    }
    let callbacks = core.take_callbacks();
    drop(callbacks);
}

/// Cancels now rather than at the next step: drops the future and finishes the task (a
/// `TaskGroup` tearing down its children). A task that is running right now only gets the
/// cancel request.
pub(super) fn abort_now(lp: &Rc<LoopInner>, task: &TaskPtr) {
    let core = Core(task.header());
    if core.request_cancel() == CancelRequest::Finished {
        return;
    }
    if core.state() == TaskState::Running {
        // It is being polled (we are inside it, or inside a task it started eagerly): the
        // request takes effect at its next step.
        task.wake();
        return;
    }
    if !task.header().has_future() {
        // Its future is already gone: this abort comes from one of its own destructors, run by
        // whoever is finishing it.
        return;
    }
    lp.trace(|| format!("  {} aborted: dropping its future now", core.label()));
    drop_future_as_current(lp, task);
    finish(lp, task, Outcome::Cancelled);
}
