//! Tasks: futures the loop drives to completion (asyncio's `Task`).
//!
//! # Life of a task
//! `create_task(fut)` boxes the future into a [`TaskCell`], inserts it into the loop's task
//! table (the loop holds it strongly until it finishes) and queues its first step with the same
//! ready queue `call_soon` uses. A step ([`Steppable::step`]) polls the future once with the
//! task's waker; this is `Task.__step` in asyncio. The future returns `Pending` after arranging
//! for that waker to be woken (a promise stores it, a timer stores it, a socket stores it); the
//! wake pushes the task's key onto the ready queue again (`Task.__wakeup`), and so on until the
//! future returns `Ready`. Then the task finishes: its result is stored for the [`Task`] handle,
//! the handle's waker is woken, done callbacks are scheduled with `call_soon`, and the loop lets
//! go of it.
//!
//! # Invariant (CPython's, restated for wakers)
//! A task is either in the ready queue exactly once (its waker's `notified` flag is set) or it is
//! waiting and some waker clone is stored where its future is waiting; never both, never
//! neither (except while it is being stepped).
//!
//! # Cancellation
//! `cancel()` sets a flag and wakes the task. Its next step does not poll: it drops the future,
//! so its destructors run as the cleanup (Rust's counterpart of `CancelledError` unwinding
//! through `try/finally`). A cancel made while the task runs takes effect at its next step; a
//! task that completes in the same step it was cancelled in ends cancelled, as in asyncio.
//!
//! # Failures
//! A panic inside a step is caught; the task ends `Failed` and its awaiter gets
//! [`TaskError::Panicked`]. A failure nobody observes (the handle was dropped, or dropped
//! without being awaited) goes to the exception handler, once.
//!
//! # The `task/` folder (layer 2)
//! Tasks (this file), promises (`promise`) and time (`time`: `sleep`, `timeout`, `yield_now`):
//! the futures the loop drives, built on `event_loop/` only. `io/`, `sync/` and `os/` build on them.

pub(crate) mod promise;
pub(crate) mod time;

use std::any::Any;
use std::cell::{Cell, RefCell};
use std::fmt;
use std::future::Future;
use std::panic::{catch_unwind, AssertUnwindSafe, Location};
use std::pin::Pin;
use std::rc::{Rc, Weak};
use std::sync::Arc;
use std::task::{Context, Poll, Waker};
use std::time::Instant;

use crate::event_loop::error::{LoopError, LoopErrorKind, Panic, RunError, TaskError};
use crate::event_loop::handle::{CallbackId, HandleKind, OnceCallback};
use crate::event_loop::slab::Key;
use crate::event_loop::trace::{
    fmt_duration, note_awaiting, note_awaiting_label, take_awaiting, take_awaiting_label, Awaiting,
};
use crate::event_loop::waker::TaskWaker;
use crate::event_loop::{
    with_running, Builder, EventLoop, ExceptionContext, ExceptionKind, LoopHandle, LoopInner, Ready, Steppable,
};

/// Where a task is in its life.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum TaskState {
    /// Not finished, not running: waiting for a wake, or queued for its next step.
    Pending,
    /// Its future is being polled right now.
    Running,
    /// Finished with a value.
    Done,
    /// Cancelled: its future was dropped before completing.
    Cancelled,
    /// Its future panicked.
    Failed,
}

impl TaskState {
    /// Finished in any way.
    pub fn is_finished(self) -> bool {
        matches!(self, TaskState::Done | TaskState::Cancelled | TaskState::Failed)
    }

    fn as_str(self) -> &'static str {
        match self {
            TaskState::Pending => "pending",
            TaskState::Running => "running",
            TaskState::Done => "finished",
            TaskState::Cancelled => "cancelled",
            TaskState::Failed => "failed",
        }
    }
}

type DoneCallback = Box<dyn FnOnce(&TaskRef)>;

/// A registered done callback: id, the closure's type name and where it was added.
type DoneEntry = (CallbackId, &'static str, &'static Location<'static>, DoneCallback);

/// A task's non-generic state (everything but the future and its output).
pub(crate) struct TaskCore {
    lp: Weak<LoopInner>,
    /// The task's slot in the loop's task table.
    key: Key,
    /// Its wake handle. After the task finishes, the loop may recycle this `Arc` for a new task
    /// (when no waker clone is left anywhere); a finished task never wakes or steps again, so
    /// the shared `Arc` is never used on this task's behalf afterwards.
    waker: Arc<TaskWaker>,
    number: u64,
    state: Cell<TaskState>,
    cancel_requested: Cell<bool>,
    /// The `Task` handle was dropped: nobody can observe the result.
    detached: Cell<bool>,
    /// The result was taken or a failure was reported.
    observed: Cell<bool>,
    join_waker: Cell<Option<Waker>>,
    extra: RefCell<Option<Box<TaskExtra>>>,
    awaiting: Cell<Awaiting>,
    site: &'static Location<'static>,
}

impl TaskCore {
    fn key(&self) -> Key {
        self.key
    }

    fn label(&self) -> String {
        match self.extra.borrow().as_ref().and_then(|e| e.name.as_deref()) {
            Some(n) => n.to_string(),
            None => format!("Task-{}", self.number),
        }
    }

    fn take_callbacks(&self) -> Vec<DoneEntry> {
        match self.extra.borrow_mut().as_mut() {
            Some(e) => std::mem::take(&mut e.callbacks),
            None => Vec::new(),
        }
    }
}

/// What most tasks never use, allocated on first use: a custom name and done callbacks.
#[derive(Default)]
struct TaskExtra {
    name: Option<Box<str>>,
    callbacks: Vec<DoneEntry>,
    next_callback: u64,
}

/// How a task ended without a value, stored compactly; it becomes a [`TaskError`] (which names
/// the task) only when someone takes it.
enum Failure {
    Cancelled,
    Panicked(Box<Panic>),
}

impl Failure {
    fn into_error(self, task: String) -> TaskError {
        match self {
            Failure::Cancelled => TaskError::Cancelled { task },
            Failure::Panicked(panic) => TaskError::Panicked { task, panic: *panic },
        }
    }
}

enum Stage<T> {
    Running(Pin<Box<dyn Future<Output = T>>>),
    Finished(Result<T, Failure>),
    Taken,
}

/// The task itself: state plus the future (later its output).
pub(crate) struct TaskCell<T> {
    core: TaskCore,
    stage: RefCell<Stage<T>>,
}

fn drop_guarded<X>(value: X) -> Result<(), Panic> {
    catch_unwind(AssertUnwindSafe(move || drop(value))).map_err(Panic::from_payload)
}

impl<T: 'static> TaskCell<T> {
    /// Takes the future out of the stage and drops it; a panicking destructor is reported.
    fn drop_future(&self, lp: Option<&Rc<LoopInner>>) {
        let old = std::mem::replace(&mut *self.stage.borrow_mut(), Stage::Taken);
        if let Err(p) = drop_guarded(old) {
            if let Some(lp) = lp {
                lp.report(ExceptionContext {
                    kind: ExceptionKind::DestructorPanicked,
                    message: format!(
                        "{}: a destructor panicked while its future was dropped",
                        self.core.label()
                    ),
                    panic: Some(p),
                    task: Some(self.core.label()),
                    handle: None,
                });
            }
        }
    }

    /// Stores the outcome and does everything that follows completion.
    fn finish(self: &Rc<Self>, lp: &Rc<LoopInner>, outcome: Result<T, Failure>) {
        let core = &self.core;
        if core.state.get().is_finished() {
            // Finished already, by an abort made from one of its own destructors while its
            // future was being dropped: once is enough.
            drop(outcome);
            return;
        }
        let state = match &outcome {
            Ok(_) => TaskState::Done,
            Err(Failure::Cancelled) => TaskState::Cancelled,
            Err(Failure::Panicked(_)) => TaskState::Failed,
        };
        core.state.set(state);
        lp.trace(|| match &outcome {
            Ok(_) => format!("  {} -> done", core.label()),
            Err(Failure::Cancelled) => format!("  {} -> cancelled (future dropped)", core.label()),
            Err(Failure::Panicked(p)) => format!("  {} -> {p}", core.label()),
        });
        let failed_unobserved = state == TaskState::Failed && core.detached.get();
        let keep = !core.detached.get() || failed_unobserved;
        let discarded = if keep {
            *self.stage.borrow_mut() = Stage::Finished(outcome);
            None
        } else {
            Some(outcome)
        };
        // The loop lets go of a finished task; the handle (if any) keeps the cell alive.
        let removed = lp.tasks.borrow_mut().remove(core.key());
        drop(removed);
        lp.recycle_waker(&core.waker);
        if let Some(w) = core.join_waker.take() {
            w.wake();
        }
        let callbacks = core.take_callbacks();
        if !callbacks.is_empty() {
            let me: Rc<dyn Steppable> = self.clone();
            for (_, name, site, cb) in callbacks {
                let task = TaskRef { task: me.clone() };
                let f = move || cb(&task);
                lp.push_ready(Ready::Callback(OnceCallback::named_rc(
                    HandleKind::DoneCallback,
                    site,
                    name,
                    f,
                )));
            }
        }
        if failed_unobserved {
            self.report_unobserved(lp);
        }
        if let Some(outcome) = discarded {
            if let Err(p) = drop_guarded(outcome) {
                lp.report(ExceptionContext {
                    kind: ExceptionKind::DestructorPanicked,
                    message: format!("{}: dropping its unobserved result panicked", core.label()),
                    panic: Some(p),
                    task: Some(core.label()),
                    handle: None,
                });
            }
        }
    }

    /// Hands a failure nobody observed to the exception handler (once).
    fn report_unobserved(&self, lp: &Rc<LoopInner>) {
        let core = &self.core;
        if core.observed.replace(true) {
            return;
        }
        let old = std::mem::replace(&mut *self.stage.borrow_mut(), Stage::Taken);
        let panic = match old {
            Stage::Finished(Err(Failure::Panicked(p))) => Some(*p),
            other => {
                drop(other);
                None
            }
        };
        lp.report(ExceptionContext {
            kind: ExceptionKind::TaskFailureUnobserved,
            message: format!(
                "{} failed and its failure was never observed (created at {})",
                core.label(),
                core.site
            ),
            panic,
            task: Some(core.label()),
            handle: None,
        });
    }
}

impl<T: 'static> Steppable for TaskCell<T> {
    fn step(self: Rc<Self>, lp: &Rc<LoopInner>) {
        let core = &self.core;
        if core.state.get().is_finished() {
            // Unreachable today (finished tasks leave the task table), and checked before the
            // flag is touched: a finished task's waker may already serve another task.
            return;
        }
        core.waker.clear();
        if core.cancel_requested.get() {
            lp.trace(|| format!("  {} step: cancel requested, dropping its future", core.label()));
            // The destructors are the task's cleanup code: they run as the current task, as
            // asyncio's `finally` blocks run inside their task.
            let previous = lp.current_task.replace(Some(core.key()));
            self.drop_future(Some(lp));
            lp.current_task.set(previous);
            self.finish(lp, Err(Failure::Cancelled));
            return;
        }
        let previous = lp.current_task.replace(Some(core.key()));
        core.state.set(TaskState::Running);
        lp.trace(|| format!("  {} step", core.label()));
        let started = lp.debug().then(Instant::now);
        let polled = {
            // The waker lives only for the poll, so a task that finishes here leaves no clone
            // behind and its waker can be recycled.
            let waker = Waker::from(core.waker.clone());
            let mut cx = Context::from_waker(&waker);
            let mut stage = self.stage.borrow_mut();
            match &mut *stage {
                Stage::Running(fut) => catch_unwind(AssertUnwindSafe(|| fut.as_mut().poll(&mut cx))),
                _ => Ok(Poll::Pending),
            }
        };
        lp.current_task.set(previous);
        let awaiting = take_awaiting();
        let awaited_label = take_awaiting_label();
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
                core.state.set(TaskState::Pending);
                core.awaiting.set(awaiting);
                lp.trace(|| {
                    let what = match (awaiting, awaited_label) {
                        (Awaiting::Task(_), Some(name)) => name,
                        (other, _) => other.to_string(),
                    };
                    format!("  {} -> pending on {what}", core.label())
                });
            }
            Ok(Poll::Ready(value)) => {
                let previous = lp.current_task.replace(Some(core.key()));
                self.drop_future(Some(lp));
                lp.current_task.set(previous);
                if core.cancel_requested.get() {
                    // Cancelled during the step that completed it: asyncio's rule is that the
                    // task ends cancelled and the value is discarded.
                    let _ = drop_guarded(value);
                    self.finish(lp, Err(Failure::Cancelled));
                } else {
                    self.finish(lp, Ok(value));
                }
            }
            Err(payload) => {
                let previous = lp.current_task.replace(Some(core.key()));
                self.drop_future(Some(lp));
                lp.current_task.set(previous);
                let panic = Panic::from_payload(payload);
                self.finish(lp, Err(Failure::Panicked(Box::new(panic))));
            }
        }
    }

    fn abort_now(self: Rc<Self>, lp: &Rc<LoopInner>) {
        let core = &self.core;
        if core.state.get().is_finished() {
            return;
        }
        core.cancel_requested.set(true);
        match self.stage.try_borrow_mut() {
            Err(_) => {
                // It is being polled (we are inside it, or inside a task it started eagerly):
                // the request takes effect at its next step.
                Waker::from(core.waker.clone()).wake();
                return;
            }
            // Its future is already gone: this abort comes from one of its own destructors,
            // run by whoever is finishing it.
            Ok(stage) if matches!(*stage, Stage::Taken) => return,
            Ok(_) => {}
        }
        lp.trace(|| format!("  {} aborted: dropping its future now", core.label()));
        let previous = lp.current_task.replace(Some(core.key()));
        self.drop_future(Some(lp));
        lp.current_task.set(previous);
        self.finish(lp, Err(Failure::Cancelled));
    }

    fn shutdown(&self) {
        let core = &self.core;
        if core.state.get().is_finished() {
            return;
        }
        self.drop_future(None);
        core.state.set(TaskState::Cancelled);
        *self.stage.borrow_mut() = Stage::Finished(Err(Failure::Cancelled));
        if let Some(w) = core.join_waker.take() {
            w.wake();
        }
        let callbacks = core.take_callbacks();
        drop(callbacks);
    }

    fn label(&self) -> String {
        self.core.label()
    }

    fn core(&self) -> &dyn Any {
        &self.core
    }
}

// ---------------------------------------------------------------------------------------------
// Public handles.

/// An untyped reference to a task: what `current_task()`, `all_tasks()` and done callbacks give.
/// It can inspect, name and cancel the task, but not take its result.
#[derive(Clone)]
pub struct TaskRef {
    task: Rc<dyn Steppable>,
}

impl TaskRef {
    fn core(&self) -> &TaskCore {
        match self.task.core().downcast_ref::<TaskCore>() {
            Some(c) => c,
            None => unreachable!("every Steppable in evloop is a task::TaskCell"),
        }
    }

    /// The task's name: `Task-N` (N counts the loop's tasks from 1) unless it was named.
    pub fn name(&self) -> String {
        self.core().label()
    }

    /// Renames the task.
    pub fn set_name(&self, name: impl Into<String>) {
        let name = name.into().into_boxed_str();
        self.core().extra.borrow_mut().get_or_insert_with(Default::default).name = Some(name);
    }

    /// The task's number in its loop (the N of `Task-N`).
    pub fn number(&self) -> u64 {
        self.core().number
    }

    /// Where it is in its life.
    pub fn state(&self) -> TaskState {
        self.core().state.get()
    }

    /// Finished in any way (done, cancelled or failed).
    pub fn done(&self) -> bool {
        self.state().is_finished()
    }

    /// Finished by cancellation.
    pub fn cancelled(&self) -> bool {
        self.state() == TaskState::Cancelled
    }

    /// What the task waits on, as noted by the future it last returned `Pending` from.
    pub fn awaiting(&self) -> Awaiting {
        self.core().awaiting.get()
    }

    /// Where the task was created.
    pub fn created_at(&self) -> &'static Location<'static> {
        self.core().site
    }

    /// Requests cancellation: the task's next step drops its future instead of polling it.
    /// Returns false if the task already finished. A cancel made while the task runs takes effect
    /// at its next step (its next await).
    pub fn cancel(&self) -> bool {
        let core = self.core();
        if core.state.get().is_finished() {
            return false;
        }
        if !core.cancel_requested.replace(true) {
            if let Some(lp) = core.lp.upgrade() {
                lp.trace(|| format!("  cancel {} requested", core.label()));
            }
        }
        Waker::from(core.waker.clone()).wake();
        true
    }

    /// Cancels the task now: its future is dropped before this returns (unless the task is
    /// running right now, when it happens at its next step). Returns false if it had finished.
    pub fn abort(&self) -> bool {
        if self.done() {
            return false;
        }
        if let Some(lp) = self.core().lp.upgrade() {
            self.task.clone().abort_now(&lp);
        }
        true
    }

    /// Whether `cancel()` was called and the task has not finished yet.
    pub fn cancelling(&self) -> bool {
        let core = self.core();
        core.cancel_requested.get() && !core.state.get().is_finished()
    }

    /// Adds a callback run (with `call_soon`, never inline) when the task finishes. On a
    /// finished task it is scheduled at once.
    #[track_caller]
    pub fn add_done_callback<F: FnOnce(&TaskRef) + 'static>(&self, f: F) -> CallbackId {
        let core = self.core();
        let id = {
            let mut extra = core.extra.borrow_mut();
            let extra = extra.get_or_insert_with(Default::default);
            extra.next_callback += 1;
            CallbackId(extra.next_callback)
        };
        if core.state.get().is_finished() {
            if let Some(lp) = core.lp.upgrade() {
                if !lp.is_closed() {
                    let me = self.clone();
                    let name = std::any::type_name::<F>();
                    let cb = OnceCallback::named_rc(HandleKind::DoneCallback, Location::caller(), name, move || f(&me));
                    lp.push_ready(Ready::Callback(cb));
                }
            }
        } else if let Some(extra) = core.extra.borrow_mut().as_mut() {
            extra
                .callbacks
                .push((id, std::any::type_name::<F>(), Location::caller(), Box::new(f)));
        }
        id
    }

    /// Removes a done callback that has not been scheduled yet; returns how many were removed.
    pub fn remove_done_callback(&self, id: CallbackId) -> usize {
        let removed: Vec<DoneEntry> = {
            let mut extra = self.core().extra.borrow_mut();
            let Some(extra) = extra.as_mut() else { return 0 };
            let (gone, kept) = std::mem::take(&mut extra.callbacks)
                .into_iter()
                .partition(|(cid, ..)| *cid == id);
            extra.callbacks = kept;
            gone
        };
        // Dropped after the borrow: a closure's destructor may touch this task.
        removed.len()
    }

    /// Whether both refer to the same task.
    pub fn ptr_eq(&self, other: &TaskRef) -> bool {
        Rc::ptr_eq(&self.task, &other.task)
    }
}

impl fmt::Debug for TaskRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let core = self.core();
        let state = core.state.get();
        write!(f, "<Task {} name='{}'", state.as_str(), core.label())?;
        if state == TaskState::Pending {
            write!(f, " awaiting={}", core.awaiting.get())?;
        }
        write!(f, " created at {}>", core.site)
    }
}

/// A handle to a task's result (asyncio's `Task` as an awaitable; Rust's join handle).
///
/// Awaiting it gives `Ok(value)`, or `Err(TaskError)` if the task was cancelled or panicked.
/// Dropping it detaches the task (it keeps running: the loop holds it) and never cancels it.
/// It dereferences to [`TaskRef`] for the name, state, cancel and done callbacks.
pub struct Task<T> {
    r: TaskRef,
    cell: Rc<TaskCell<T>>,
}

impl<T: 'static> Task<T> {
    /// The result if the task finished (taking it), `None` if it has not.
    pub fn try_result(&mut self) -> Option<Result<T, TaskError>> {
        let core = &self.cell.core;
        let mut stage = self.cell.stage.try_borrow_mut().ok()?;
        match &*stage {
            Stage::Running(_) => None,
            Stage::Taken => Some(Err(TaskError::ResultTaken { task: core.label() })),
            Stage::Finished(_) => match std::mem::replace(&mut *stage, Stage::Taken) {
                Stage::Finished(r) => {
                    core.observed.set(true);
                    Some(r.map_err(|f| f.into_error(core.label())))
                }
                _ => None,
            },
        }
    }

    /// An untyped reference to the task, to keep beside (or after) the handle.
    pub fn task_ref(&self) -> TaskRef {
        self.r.clone()
    }

    /// `Ready` once the task has finished in any way, without taking its result (for `wait`,
    /// `as_completed` and task groups, which own the handles they watch).
    pub fn poll_done(&mut self, cx: &mut Context<'_>) -> Poll<()> {
        if self.r.done() {
            return Poll::Ready(());
        }
        let core = &self.cell.core;
        let waker = match core.join_waker.take() {
            Some(w) if w.will_wake(cx.waker()) => w,
            _ => cx.waker().clone(),
        };
        core.join_waker.set(Some(waker));
        self.note_awaited();
        Poll::Pending
    }

    /// Cancels the task now: its future is dropped before this returns (unless the task is
    /// running right now, when it happens at its next step). Returns false if it had finished.
    pub fn abort(&self) -> bool {
        self.r.abort()
    }

    /// Drops the handle, leaving the task running (the same as `drop`, said out loud).
    pub fn detach(self) {}

    /// Tells the awaiting task's step what it now waits on.
    fn note_awaited(&self) {
        let core = &self.cell.core;
        note_awaiting(Awaiting::Task(core.number));
        if core.lp.upgrade().is_some_and(|lp| lp.tracing()) {
            note_awaiting_label(core.label());
        }
    }
}

impl<T> std::ops::Deref for Task<T> {
    type Target = TaskRef;
    fn deref(&self) -> &TaskRef {
        &self.r
    }
}

impl<T: 'static> Future for Task<T> {
    type Output = Result<T, TaskError>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.get_mut();
        let core = &this.cell.core;
        let stage = this.cell.stage.try_borrow_mut();
        let Ok(mut stage) = stage else {
            // The stage is borrowed only while the task is being stepped: either we are inside
            // it (it awaits itself) or inside a task it started eagerly.
            let me = core.lp.upgrade().and_then(|lp| lp.current_task.get());
            if me == Some(core.key()) {
                return Poll::Ready(Err(TaskError::AwaitedItself { task: core.label() }));
            }
            core.join_waker.set(Some(cx.waker().clone()));
            this.note_awaited();
            return Poll::Pending;
        };
        match &*stage {
            Stage::Finished(_) => match std::mem::replace(&mut *stage, Stage::Taken) {
                Stage::Finished(r) => {
                    core.observed.set(true);
                    Poll::Ready(r.map_err(|f| f.into_error(core.label())))
                }
                _ => Poll::Pending,
            },
            Stage::Taken => Poll::Ready(Err(TaskError::ResultTaken { task: core.label() })),
            Stage::Running(_) => {
                let waker = match core.join_waker.take() {
                    Some(w) if w.will_wake(cx.waker()) => w,
                    _ => cx.waker().clone(),
                };
                core.join_waker.set(Some(waker));
                this.note_awaited();
                Poll::Pending
            }
        }
    }
}

impl<T> Drop for Task<T> {
    fn drop(&mut self) {
        let core = &self.cell.core;
        core.detached.set(true);
        // Nobody awaits the handle any more: forget the awaiter's waker, or the task's
        // completion would wake a task that has moved on.
        drop(core.join_waker.take());
        if core.state.get() == TaskState::Failed && !core.observed.get() {
            // Reported through the cell so the report happens once; with the loop gone, the
            // default handler (stderr) still gets it.
            report_failed_on_drop(&self.cell, core.lp.upgrade().as_ref());
        }
    }
}

fn report_failed_on_drop<T>(cell: &Rc<TaskCell<T>>, lp: Option<&Rc<LoopInner>>) {
    let core = &cell.core;
    if core.observed.replace(true) {
        return;
    }
    let old = std::mem::replace(&mut *cell.stage.borrow_mut(), Stage::Taken);
    let panic = match old {
        Stage::Finished(Err(Failure::Panicked(p))) => Some(*p),
        other => {
            drop(other);
            None
        }
    };
    let ctx = ExceptionContext {
        kind: ExceptionKind::TaskFailureUnobserved,
        message: format!(
            "{} failed and its handle was dropped without observing it (created at {})",
            core.label(),
            core.site
        ),
        panic,
        task: Some(core.label()),
        handle: None,
    };
    match lp {
        Some(lp) => lp.report(ctx),
        None => crate::event_loop::default_exception_handler(&ctx),
    }
}

impl<T> fmt::Debug for Task<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.r.fmt(f)
    }
}

// ---------------------------------------------------------------------------------------------
// Creating tasks.

/// Options for one task: a name, and whether it starts eagerly.
#[derive(Default, Debug, Clone)]
pub struct TaskBuilder {
    name: Option<String>,
    eager: Option<bool>,
}

impl TaskBuilder {
    /// No name (`Task-N`), lazy start unless the loop was built with eager tasks.
    pub fn new() -> TaskBuilder {
        TaskBuilder::default()
    }

    /// Names the task (asyncio's `create_task(coro, name=...)`).
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.name = Some(name.into());
        self
    }

    /// Eager start (asyncio 3.12's `eager_start`): if the loop is running, the first step runs
    /// inside `spawn`, before it returns. A task that completes there never enters the ready queue.
    pub fn eager(mut self, on: bool) -> Self {
        self.eager = Some(on);
        self
    }

    /// Creates the task on `lp`.
    #[track_caller]
    pub fn spawn_on<F>(self, lp: &LoopHandle, fut: F) -> Result<Task<F::Output>, LoopError>
    where
        F: Future + 'static,
        F::Output: 'static,
    {
        lp.spawn_task(fut, self.name, self.eager, Location::caller())
    }

    /// `spawn_on` with the creation site given (for wrappers such as `TaskGroup::spawn`).
    pub(crate) fn spawn_on_at<F>(
        self,
        lp: &LoopHandle,
        fut: F,
        site: &'static Location<'static>,
    ) -> Result<Task<F::Output>, LoopError>
    where
        F: Future + 'static,
        F::Output: 'static,
    {
        lp.spawn_task(fut, self.name, self.eager, site)
    }

    /// Creates the task on the loop running on this thread.
    #[track_caller]
    pub fn spawn<F>(self, fut: F) -> Result<Task<F::Output>, LoopError>
    where
        F: Future + 'static,
        F::Output: 'static,
    {
        let lp = crate::event_loop::get_running_loop()
            .map_err(|_| LoopError::new(LoopErrorKind::NoRunningLoop, "TaskBuilder::spawn"))?;
        lp.spawn_task(fut, self.name, self.eager, Location::caller())
    }
}

impl LoopHandle {
    /// Wraps `fut` in a task and schedules its first step (asyncio's `create_task`).
    #[track_caller]
    pub fn create_task<F>(&self, fut: F) -> Result<Task<F::Output>, LoopError>
    where
        F: Future + 'static,
        F::Output: 'static,
    {
        self.spawn_task(fut, None, None, Location::caller())
    }

    pub(crate) fn spawn_task<F>(
        &self,
        fut: F,
        name: Option<String>,
        eager: Option<bool>,
        site: &'static Location<'static>,
    ) -> Result<Task<F::Output>, LoopError>
    where
        F: Future + 'static,
        F::Output: 'static,
    {
        let lp = &self.inner;
        if lp.is_closed() {
            return Err(LoopError::new(LoopErrorKind::Closed, "create_task"));
        }
        let number = lp.next_task_number.get();
        lp.next_task_number.set(number + 1);
        let cell = {
            let mut tasks = lp.tasks.borrow_mut();
            let key = tasks.next_key();
            let cell = Rc::new(TaskCell {
                core: TaskCore {
                    lp: Rc::downgrade(lp),
                    key,
                    waker: lp.task_waker(key),
                    number,

                    state: Cell::new(TaskState::Pending),
                    cancel_requested: Cell::new(false),
                    detached: Cell::new(false),
                    observed: Cell::new(false),
                    join_waker: Cell::new(None),
                    extra: RefCell::new(name.map(|n| {
                        Box::new(TaskExtra {
                            name: Some(n.into_boxed_str()),
                            ..Default::default()
                        })
                    })),
                    awaiting: Cell::new(Awaiting::Unknown),
                    site,
                },
                stage: RefCell::new(Stage::Running(Box::pin(fut))),
            });
            let inserted = tasks.insert(cell.clone() as Rc<dyn Steppable>);
            debug_assert_eq!(inserted, key);
            cell
        };
        let eager = eager.unwrap_or(lp.eager_tasks) && self.is_running();
        lp.trace(|| {
            let how = if eager {
                "eager: first step now"
            } else {
                "first step scheduled"
            };
            format!("  create {} at {site} ({how})", cell.core.label())
        });
        if eager {
            cell.clone().step(lp);
        } else {
            lp.push_ready(Ready::Task(cell.core.key()));
        }
        Ok(Task {
            r: TaskRef { task: cell.clone() },
            cell,
        })
    }

    /// Every task of this loop that has not finished (asyncio's `all_tasks()`).
    pub fn all_tasks(&self) -> Vec<TaskRef> {
        self.inner
            .tasks
            .borrow()
            .iter()
            .map(|(_, t)| TaskRef { task: t.clone() })
            .collect()
    }

    /// The task being stepped right now, if any (asyncio's `current_task()`).
    pub fn current_task(&self) -> Option<TaskRef> {
        let key = self.inner.current_task.get()?;
        let task = self.inner.tasks.borrow().get(key).cloned()?;
        Some(TaskRef { task })
    }

    /// A multi-line dump of every live task: name, state, what it awaits, where it was created.
    pub fn dump_tasks(&self) -> String {
        let tasks = self.all_tasks();
        let names: std::collections::HashMap<u64, String> = tasks.iter().map(|t| (t.number(), t.name())).collect();
        let mut out = String::new();
        for t in &tasks {
            let core = t.core();
            let state = core.state.get();
            out += &format!("{} [{}]", t.name(), state.as_str());
            if state == TaskState::Pending {
                let what = match core.awaiting.get() {
                    Awaiting::Task(n) => names
                        .get(&n)
                        .cloned()
                        .unwrap_or_else(|| format!("a finished task (#{n})")),
                    other => other.to_string(),
                };
                out += &format!(" awaiting {what}");
            }
            out += &format!(" (created at {})\n", core.site);
        }
        out
    }

    /// Runs the loop until `fut` completes and returns its output (asyncio's
    /// `run_until_complete`). The future runs as a task; `stop()` before it completes makes this
    /// return [`LoopErrorKind::Stopped`] (the task stays in the loop).
    #[track_caller]
    pub fn run_until_complete<F>(&self, fut: F) -> Result<F::Output, RunError>
    where
        F: Future + 'static,
        F::Output: 'static,
    {
        let site = Location::caller();
        self.check_can_run("run_until_complete")?;
        let mut task = self.spawn_task(fut, None, None, site)?;
        let lp = self.clone();
        let stopper = task.add_done_callback(move |_| lp.stop());
        let ran = self.run_forever();
        task.remove_done_callback(stopper);
        ran?;
        match task.try_result() {
            Some(r) => r.map_err(RunError::Task),
            None => Err(RunError::Loop(LoopError::new(
                LoopErrorKind::Stopped,
                "run_until_complete",
            ))),
        }
    }
}

/// Spawns `fut` on the loop running on this thread (`asyncio.create_task`).
///
/// # Panics
/// If no evloop loop is running on this thread, or it is closing; use
/// [`LoopHandle::create_task`] or [`TaskBuilder::spawn`] to get an error instead.
#[track_caller]
pub fn spawn<F>(fut: F) -> Task<F::Output>
where
    F: Future + 'static,
    F::Output: 'static,
{
    let site = Location::caller();
    match with_running(|lp| LoopHandle { inner: lp.clone() }) {
        Some(lp) => match lp.spawn_task(fut, None, None, site) {
            Ok(t) => t,
            Err(e) => panic!("evloop::spawn at {site}: {e}"),
        },
        None => panic!("evloop::spawn at {site}: no event loop is running on this thread"),
    }
}

/// The task running right now on this thread's loop (`asyncio.current_task()`).
pub fn current_task() -> Option<TaskRef> {
    with_running(|lp| LoopHandle { inner: lp.clone() }.current_task()).flatten()
}

/// The unfinished tasks of the loop running on this thread (`asyncio.all_tasks()`); empty when
/// no loop runs.
pub fn all_tasks() -> Vec<TaskRef> {
    with_running(|lp| LoopHandle { inner: lp.clone() }.all_tasks()).unwrap_or_default()
}

/// asyncio's `asyncio.run(main)`: a new loop, run `fut` to completion, cancel the tasks left
/// over (running the loop until their futures are dropped), wait for executor jobs, close.
#[track_caller]
pub fn run<F>(fut: F) -> Result<F::Output, RunError>
where
    F: Future + 'static,
    F::Output: 'static,
{
    run_with(Builder::new(), fut)
}

/// [`run`] with a configured loop (trace mode, a virtual clock, ...).
#[track_caller]
pub fn run_with<F>(builder: Builder, fut: F) -> Result<F::Output, RunError>
where
    F: Future + 'static,
    F::Output: 'static,
{
    let lp: EventLoop = builder.build()?;
    let result = lp.run_until_complete(fut);
    cancel_leftover_tasks(&lp);
    lp.shutdown_default_executor();
    lp.close()?;
    result
}

/// Cancels every unfinished task and runs the loop until their futures are dropped (a few
/// iterations; destructors that start new tasks get those cancelled too, up to a bound).
fn cancel_leftover_tasks(lp: &LoopHandle) {
    for _ in 0..16 {
        let tasks = lp.all_tasks();
        if tasks.is_empty() {
            return;
        }
        lp.trace(|| format!("[run] cancelling {} leftover task(s)", tasks.len()));
        for t in &tasks {
            t.cancel();
        }
        lp.stop();
        if lp.run_forever().is_err() {
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The per-task bookkeeping stays small: every task pays for it, and idle tasks are what
    /// servers have most of (docs/ explains what safe Rust costs on top of this cell).
    #[test]
    fn task_cell_stays_compact() {
        assert!(
            std::mem::size_of::<TaskCore>() <= 96,
            "TaskCore is {} bytes",
            std::mem::size_of::<TaskCore>()
        );
        assert!(
            std::mem::size_of::<Stage<()>>() <= 24,
            "Stage<()> is {} bytes",
            std::mem::size_of::<Stage<()>>()
        );
    }
}
