//! Tasks: futures the loop drives to completion (asyncio's `Task`).
//!
//! # Life of a task
//! `create_task(fut)` moves the future into a raw task cell (`event_loop::raw_task`: one
//! allocation holding a small header and the future), inserts it into the loop's task table (the
//! loop holds it strongly until it finishes) and queues its first step with the same ready queue
//! `call_soon` uses. A step ([`step`]) polls the future once with the task's waker; this is
//! `Task.__step` in asyncio. The future returns `Pending` after arranging for that waker to be
//! woken (a promise stores it, a timer stores it, a socket stores it); the wake pushes the task
//! onto the ready queue again (`Task.__wakeup`), and so on until the future returns `Ready`. Then
//! the task finishes: its output stays in the cell for the [`Task`] handle, the handle's waker is
//! woken, done callbacks are scheduled with `call_soon`, and the loop lets go of it.
//!
//! This file holds the policy (states, results, cancellation, failures, done callbacks); the
//! cell's memory, reference count and waker are the mechanism in `raw_task`, which this file
//! reaches only through its safe API.
//!
//! # Invariant (CPython's, restated for wakers)
//! A task is either in the ready queue exactly once (its cell's `NOTIFIED` bit is set) or it is
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
//! Tasks (this file), promises (`promise`), time (`time`: `sleep`, `timeout`, `yield_now`),
//! asyncio's timeout object (`timeouts`: `Timeout`, `TimeoutHandle`), `Runner` (`runner`) and the
//! task tree (`tree`: who awaits whom, deadlocks):
//! the futures the loop drives, built on `event_loop/` only. `io/`, `sync/` and `os/` build on them.

pub(crate) mod promise;
pub(crate) mod runner;
pub(crate) mod time;
pub(crate) mod timeouts;
pub(crate) mod tree;

use std::fmt;
use std::future::Future;
use std::marker::PhantomData;
use std::panic::{AssertUnwindSafe, Location, catch_unwind};
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll};
use std::time::Instant;

use crate::event_loop::error::{LoopError, LoopErrorKind, Panic, RunError, TaskError, WrongLoopError};
use crate::event_loop::handle::{CallbackId, HandleKind, OnceCallback};
use crate::event_loop::raw_task::{DoneEntry, Header, Init, TaskPtr};
use crate::event_loop::trace::{
    Awaiting, fmt_duration, note_awaiting, note_awaiting_label, take_awaiting, take_awaiting_label,
};
use crate::event_loop::waker::LoopScheduler;
use crate::event_loop::{
    Builder, EventLoop, ExceptionContext, ExceptionKind, LoopHandle, LoopInner, Ready, SPARE_EXTRAS, TaskHooks,
    default_exception_handler, local_loop, running_loop_traces, sites, with_running,
};

/// Where a task is in its life.
///
/// ```
/// use evloop::TaskState;
///
/// evloop::run(async {
///     let t = evloop::spawn(async { evloop::current_task().map(|me| me.state()) });
///     assert_eq!(t.state(), TaskState::Pending); // scheduled with call_soon, not run yet
///     let watch = t.task_ref();
///     assert_eq!(t.await?, Some(TaskState::Running)); // what it saw while it ran
///     assert_eq!(watch.state(), TaskState::Done);
///
///     let stuck = evloop::spawn(std::future::pending::<()>());
///     stuck.cancel();
///     evloop::yield_now().await; // its next step drops the future
///     assert_eq!(stuck.state(), TaskState::Cancelled);
///     Ok::<(), evloop::TaskError>(())
/// })??;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
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
    ///
    /// ```
    /// use evloop::TaskState;
    ///
    /// assert!(TaskState::Done.is_finished());
    /// assert!(TaskState::Cancelled.is_finished() && TaskState::Failed.is_finished());
    /// assert!(!TaskState::Pending.is_finished() && !TaskState::Running.is_finished());
    /// ```
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

    fn bits(self) -> u32 {
        match self {
            TaskState::Pending => 0,
            TaskState::Running => 1,
            TaskState::Done => 2,
            TaskState::Cancelled => 3,
            TaskState::Failed => 4,
        }
    }

    fn from_bits(bits: u32) -> TaskState {
        match bits & STATE_MASK {
            1 => TaskState::Running,
            2 => TaskState::Done,
            3 => TaskState::Cancelled,
            4 => TaskState::Failed,
            _ => TaskState::Pending,
        }
    }
}

// The task's flags, kept in its header (10 bits; see `raw_task`).
const STATE_MASK: u32 = 0b111;
/// `cancel()` was called: the next step drops the future instead of polling it.
const CANCEL_REQUESTED: u32 = 1 << 3;
/// The `Task` handle was dropped: nobody can observe the result.
const DETACHED: u32 = 1 << 4;
/// The outcome was taken (awaited, `try_result`) or a failure was reported.
const OBSERVED: u32 = 1 << 5;

/// The task-level view of a header: its state and flags.
struct Core<'a>(&'a Header);

impl Core<'_> {
    fn state(&self) -> TaskState {
        TaskState::from_bits(self.0.flags())
    }

    fn set_state(&self, state: TaskState) {
        self.0.set_flags((self.0.flags() & !STATE_MASK) | state.bits());
    }

    fn has(&self, flag: u32) -> bool {
        self.0.flags() & flag != 0
    }

    /// Sets `flag`; returns whether it was already set.
    fn set(&self, flag: u32) -> bool {
        let flags = self.0.flags();
        self.0.set_flags(flags | flag);
        flags & flag != 0
    }

    fn number(&self) -> u64 {
        u64::from(self.0.number())
    }

    fn site(&self) -> &'static Location<'static> {
        sites::lookup(self.0.site())
    }

    fn awaiting(&self) -> Awaiting {
        Awaiting::unpack(self.0.awaiting())
    }

    fn label(&self) -> String {
        self.0.label()
    }

    /// Takes the done callbacks (to schedule or drop them outside the header).
    fn take_callbacks(&self) -> Vec<DoneEntry> {
        self.0
            .with_extra(|e| e.map(|e| std::mem::take(&mut e.callbacks)).unwrap_or_default())
    }

    fn take_join_waker(&self) -> Option<std::task::Waker> {
        self.0.with_extra(|e| e.and_then(|e| e.join_waker.take()))
    }

    /// Remembers the awaiter's waker (keeping the stored one if it wakes the same task). The
    /// extra part comes from the loop's spares when there is one: awaiting a running task is
    /// the common case and must not cost an allocation per task.
    fn set_join_waker(&self, waker: &std::task::Waker) {
        let spare = || {
            local_loop(self.0.owner())
                .and_then(|lp| lp.spare_extras.borrow_mut().pop())
                .unwrap_or_default()
        };
        self.0.extra_mut_from(spare, |e| match &e.join_waker {
            Some(w) if w.will_wake(waker) => {}
            _ => e.join_waker = Some(waker.clone()),
        });
    }

    /// Gives an emptied extra part back to the loop for the next task.
    fn recycle_extra(&self, lp: &LoopInner) {
        if let Some(extra) = self.0.take_empty_extra() {
            let mut spares = lp.spare_extras.borrow_mut();
            if spares.len() < SPARE_EXTRAS {
                let mut extra = extra;
                extra.next_callback = 0;
                spares.push(extra);
            }
        }
    }

    fn take_panic(&self) -> Option<Panic> {
        self.0.with_extra(|e| e.and_then(|e| e.panic.take()))
    }

    /// The task's loop, if it still exists.
    fn event_loop(&self) -> Option<Rc<LoopInner>> {
        local_loop(self.0.owner())
    }
}

/// How a task ended.
enum Outcome {
    /// Its future completed; the output is in the cell.
    Done,
    Cancelled,
    Failed(Panic),
}

/// What the loop calls to run this module's tasks (see `event_loop::TaskHooks`).
static HOOKS: TaskHooks = TaskHooks { step, shutdown };

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
fn step(lp: &Rc<LoopInner>, task: TaskPtr) {
    let core = Core(task.header());
    let state = core.state();
    if state.is_finished() || state == TaskState::Running {
        // A stale wake of a finished task, or a wake of a task that is polling right now (its
        // own eager child woke it): nothing to do; a wake during the poll requeued it anyway.
        return;
    }
    task.clear_notified();
    if core.has(CANCEL_REQUESTED) || !task.header().has_future() {
        lp.trace(|| format!("  {} step: cancel requested, dropping its future", core.label()));
        drop_future_as_current(lp, &task);
        finish(lp, &task, Outcome::Cancelled);
        return;
    }
    core.set_state(TaskState::Running);
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
            core.set_state(TaskState::Pending);
            task.header().set_awaiting(awaiting.pack());
            lp.trace(|| {
                let what = match (awaiting, awaited_label) {
                    (Awaiting::Task(_), Some(name)) => name,
                    (other, _) => other.to_string(),
                };
                format!("  {} -> pending on {what}", core.label())
            });
        }
        Ok(Poll::Ready(destructor)) => {
            if let Some(p) = destructor {
                report_destructor_panic(lp, &task, "a destructor panicked while its future was dropped", p);
            }
            if core.has(CANCEL_REQUESTED) {
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
    if core.state().is_finished() {
        // Finished already, by an abort made from one of its own destructors while its future
        // was being dropped: once is enough.
        return;
    }
    let state = match &outcome {
        Outcome::Done => TaskState::Done,
        Outcome::Cancelled => TaskState::Cancelled,
        Outcome::Failed(_) => TaskState::Failed,
    };
    core.set_state(state);
    lp.trace(|| match &outcome {
        Outcome::Done => format!("  {} -> done", core.label()),
        Outcome::Cancelled => format!("  {} -> cancelled (future dropped)", core.label()),
        Outcome::Failed(p) => format!("  {} -> {p}", core.label()),
    });
    let detached = core.has(DETACHED);
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
    if core.set(OBSERVED) {
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
    core.set_state(TaskState::Cancelled);
    if let Some(w) = core.take_join_waker() {
        w.wake();
    }
    let callbacks = core.take_callbacks();
    drop(callbacks);
}

/// Cancels now rather than at the next step: drops the future and finishes the task (a
/// `TaskGroup` tearing down its children). A task that is running right now only gets the
/// cancel request.
fn abort_now(lp: &Rc<LoopInner>, task: &TaskPtr) {
    let core = Core(task.header());
    if core.state().is_finished() {
        return;
    }
    core.set(CANCEL_REQUESTED);
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

// ---------------------------------------------------------------------------------------------
// Public handles.

/// An untyped reference to a task: what `current_task()`, `all_tasks()` and done callbacks give.
/// It can inspect, name and cancel the task, but not take its result.
///
/// ```
/// evloop::run(async {
///     let me = evloop::current_task().expect("run's future runs as a task");
///     let other = evloop::spawn(async {});
///     let names: Vec<String> = evloop::all_tasks().iter().map(|t| t.name()).collect();
///     assert!(names.contains(&me.name()) && names.contains(&other.name()));
///     other.await?;
///     Ok::<(), evloop::TaskError>(())
/// })??;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone)]
pub struct TaskRef {
    ptr: TaskPtr,
}

impl TaskRef {
    fn core(&self) -> Core<'_> {
        Core(self.ptr.header())
    }

    /// The task's name: `Task-N` (N counts the loop's tasks from 1) unless it was named.
    ///
    /// ```
    /// evloop::run(async {
    ///     let t = evloop::spawn(async {});
    ///     assert!(t.name().starts_with("Task-"));
    ///     let named = evloop::TaskBuilder::new().name("fetch").spawn(async {})?;
    ///     assert_eq!(named.name(), "fetch");
    ///     Ok::<(), evloop::LoopError>(())
    /// })??;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn name(&self) -> String {
        self.core().label()
    }

    /// Renames the task.
    ///
    /// ```
    /// evloop::run(async {
    ///     let t = evloop::spawn(async {});
    ///     t.set_name("renamed"); // asyncio's Task.set_name
    ///     assert_eq!(t.name(), "renamed");
    /// })?;
    /// # Ok::<(), evloop::RunError>(())
    /// ```
    pub fn set_name(&self, name: impl Into<String>) {
        let name = name.into().into_boxed_str();
        self.ptr.header().extra_mut(|e| e.name = Some(name));
    }

    /// The task's number in its loop (the N of `Task-N`; it wraps after 2^32 tasks of one loop).
    ///
    /// ```
    /// evloop::run(async {
    ///     let t = evloop::spawn(async {});
    ///     assert_eq!(t.name(), format!("Task-{}", t.number()));
    /// })?;
    /// # Ok::<(), evloop::RunError>(())
    /// ```
    pub fn number(&self) -> u64 {
        self.core().number()
    }

    /// Where it is in its life.
    ///
    /// ```
    /// use evloop::TaskState;
    ///
    /// evloop::run(async {
    ///     let t = evloop::spawn(async {});
    ///     let r = t.task_ref();
    ///     assert_eq!(r.state(), TaskState::Pending);
    ///     t.await?;
    ///     assert_eq!(r.state(), TaskState::Done);
    ///     Ok::<(), evloop::TaskError>(())
    /// })??;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn state(&self) -> TaskState {
        self.core().state()
    }

    /// Finished in any way (done, cancelled or failed).
    ///
    /// ```
    /// evloop::run(async {
    ///     let t = evloop::spawn(async {});
    ///     assert!(!t.done());
    ///     evloop::yield_now().await; // the task takes its one step
    ///     assert!(t.done());
    /// })?;
    /// # Ok::<(), evloop::RunError>(())
    /// ```
    pub fn done(&self) -> bool {
        self.state().is_finished()
    }

    /// Finished by cancellation.
    ///
    /// ```
    /// evloop::run(async {
    ///     let t = evloop::spawn(std::future::pending::<()>());
    ///     t.cancel();
    ///     assert!(!t.cancelled()); // requested: it takes effect at the task's next step
    ///     evloop::yield_now().await;
    ///     assert!(t.cancelled());
    /// })?;
    /// # Ok::<(), evloop::RunError>(())
    /// ```
    pub fn cancelled(&self) -> bool {
        self.state() == TaskState::Cancelled
    }

    /// What the task waits on, as noted by the future it last returned `Pending` from.
    ///
    /// ```
    /// use std::time::Duration;
    /// use evloop::{Awaiting, Builder};
    ///
    /// evloop::run_with(Builder::new().virtual_clock(true), async {
    ///     let t = evloop::spawn(evloop::sleep(Duration::from_secs(10)));
    ///     evloop::yield_now().await; // its first step starts the timer
    ///     assert!(matches!(t.awaiting(), Awaiting::Sleep(_)));
    ///     t.abort();
    /// })?;
    /// # Ok::<(), evloop::RunError>(())
    /// ```
    pub fn awaiting(&self) -> Awaiting {
        self.core().awaiting()
    }

    /// Where the task was created.
    ///
    /// ```
    /// evloop::run(async {
    ///     let line = line!();
    ///     let t = evloop::spawn(async {}); // the caller's location, kept for traces and task dumps
    ///     assert_eq!(t.created_at().line(), line + 1);
    /// })?;
    /// # Ok::<(), evloop::RunError>(())
    /// ```
    pub fn created_at(&self) -> &'static Location<'static> {
        self.core().site()
    }

    /// Requests cancellation: the task's next step drops its future instead of polling it.
    /// Returns false if the task already finished. A cancel made while the task runs takes effect
    /// at its next step (its next await).
    ///
    /// ```
    /// use std::cell::Cell;
    /// use std::rc::Rc;
    ///
    /// struct Cleanup(Rc<Cell<bool>>);
    /// impl Drop for Cleanup {
    ///     fn drop(&mut self) {
    ///         self.0.set(true); // the `finally:` of the cancelled task
    ///     }
    /// }
    ///
    /// evloop::run(async {
    ///     let cleaned = Rc::new(Cell::new(false));
    ///     let guard = Cleanup(cleaned.clone());
    ///     let t = evloop::spawn(async move {
    ///         let _guard = guard;
    ///         std::future::pending::<()>().await;
    ///     });
    ///     evloop::yield_now().await;
    ///     assert!(t.cancel());
    ///     assert!(t.await.unwrap_err().is_cancelled()); // asyncio's CancelledError
    ///     assert!(cleaned.get());
    /// })?;
    /// # Ok::<(), evloop::RunError>(())
    /// ```
    pub fn cancel(&self) -> bool {
        let core = self.core();
        if core.state().is_finished() {
            return false;
        }
        if !core.set(CANCEL_REQUESTED) {
            if let Some(lp) = core.event_loop() {
                lp.trace(|| format!("  cancel {} requested", core.label()));
            }
        }
        self.ptr.wake();
        true
    }

    /// Cancels the task now: its future is dropped before this returns (unless the task is
    /// running right now, when it happens at its next step). Returns false if it had finished.
    ///
    /// ```
    /// use std::cell::Cell;
    /// use std::rc::Rc;
    ///
    /// evloop::run(async {
    ///     let alive = Rc::new(Cell::new(true));
    ///     let flag = alive.clone();
    ///     struct Clear(Rc<Cell<bool>>);
    ///     impl Drop for Clear {
    ///         fn drop(&mut self) {
    ///             self.0.set(false);
    ///         }
    ///     }
    ///     let t = evloop::spawn(async move {
    ///         let _c = Clear(flag);
    ///         std::future::pending::<()>().await;
    ///     });
    ///     evloop::yield_now().await;
    ///     let r = t.task_ref();
    ///     assert!(r.abort());
    ///     assert!(!alive.get()); // dropped before `abort` returned, not at the next step
    ///     assert!(r.cancelled());
    ///     assert!(!r.abort()); // already finished
    /// })?;
    /// # Ok::<(), evloop::RunError>(())
    /// ```
    pub fn abort(&self) -> bool {
        if self.done() {
            return false;
        }
        if let Some(lp) = self.core().event_loop() {
            abort_now(&lp, &self.ptr);
        }
        true
    }

    /// Whether `cancel()` was called and the task has not finished yet.
    ///
    /// ```
    /// evloop::run(async {
    ///     let t = evloop::spawn(std::future::pending::<()>());
    ///     assert!(!t.cancelling());
    ///     t.cancel();
    ///     assert!(t.cancelling()); // requested, not yet done
    ///     evloop::yield_now().await;
    ///     assert!(!t.cancelling() && t.cancelled());
    /// })?;
    /// # Ok::<(), evloop::RunError>(())
    /// ```
    pub fn cancelling(&self) -> bool {
        let core = self.core();
        core.has(CANCEL_REQUESTED) && !core.state().is_finished()
    }

    /// Adds a callback run (with `call_soon`, never inline) when the task finishes. On a
    /// finished task it is scheduled at once.
    ///
    /// ```
    /// use std::cell::RefCell;
    /// use std::rc::Rc;
    ///
    /// evloop::run(async {
    ///     let log = Rc::new(RefCell::new(Vec::new()));
    ///     let t = evloop::spawn(async { 7 });
    ///     let l = log.clone();
    ///     t.add_done_callback(move |task| l.borrow_mut().push(format!("{:?}", task.state())));
    ///     t.await?;
    ///     assert!(log.borrow().is_empty()); // scheduled with call_soon, never run inline
    ///     evloop::yield_now().await;
    ///     assert_eq!(*log.borrow(), ["Done"]);
    ///     Ok::<(), evloop::TaskError>(())
    /// })??;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[track_caller]
    pub fn add_done_callback<F: FnOnce(&TaskRef) + 'static>(&self, f: F) -> CallbackId {
        let header = self.ptr.header();
        let id = header.extra_mut(|e| {
            e.next_callback += 1;
            CallbackId(e.next_callback)
        });
        let name = std::any::type_name::<F>();
        let site = Location::caller();
        if self.core().state().is_finished() {
            if let Some(lp) = self.core().event_loop() {
                if !lp.is_closed() {
                    let me = self.clone();
                    let cb = OnceCallback::named_rc(HandleKind::DoneCallback, site, name, move || f(&me));
                    lp.push_ready(Ready::Callback(cb));
                }
            }
        } else {
            let cb: Box<dyn FnOnce(&TaskPtr)> = Box::new(move |ptr: &TaskPtr| f(&TaskRef { ptr: ptr.clone() }));
            header.extra_mut(|e| e.callbacks.push((id, name, site, cb)));
        }
        id
    }

    /// Removes a done callback that has not been scheduled yet; returns how many were removed.
    ///
    /// ```
    /// evloop::run(async {
    ///     let t = evloop::spawn(async {});
    ///     let id = t.add_done_callback(|_| unreachable!("removed before the task finished"));
    ///     assert_eq!(t.remove_done_callback(id), 1);
    ///     assert_eq!(t.remove_done_callback(id), 0);
    ///     t.await
    /// })??;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn remove_done_callback(&self, id: CallbackId) -> usize {
        let removed: Vec<DoneEntry> = self.ptr.header().with_extra(|e| {
            let Some(e) = e else { return Vec::new() };
            let (gone, kept) = std::mem::take(&mut e.callbacks)
                .into_iter()
                .partition(|(cid, ..)| *cid == id);
            e.callbacks = kept;
            gone
        });
        // Dropped after the header is back in place: a closure's destructor may touch this task.
        removed.len()
    }

    /// The loop the task belongs to (asyncio's `Task.get_loop()`); `None` once that loop is
    /// gone. A closed loop is still returned while something holds it.
    ///
    /// ```
    /// evloop::run(async {
    ///     let t = evloop::spawn(async {});
    ///     let lp = evloop::get_running_loop().unwrap();
    ///     assert!(t.get_loop().is_some_and(|l| l.same_loop(&lp)));
    /// })
    /// .unwrap();
    /// ```
    pub fn get_loop(&self) -> Option<LoopHandle> {
        self.core().event_loop().map(|inner| LoopHandle { inner })
    }

    /// Whether both refer to the same task.
    ///
    /// ```
    /// evloop::run(async {
    ///     let t = evloop::spawn(async { evloop::current_task() });
    ///     let r = t.task_ref();
    ///     let seen = t.await?.expect("a task was running");
    ///     assert!(seen.ptr_eq(&r)); // the task saw itself
    ///     Ok::<(), evloop::TaskError>(())
    /// })??;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn ptr_eq(&self, other: &TaskRef) -> bool {
        self.ptr.ptr_eq(&other.ptr)
    }
}

impl fmt::Debug for TaskRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let core = self.core();
        let state = core.state();
        write!(f, "<Task {} name='{}'", state.as_str(), core.label())?;
        if state == TaskState::Pending {
            write!(f, " awaiting={}", core.awaiting())?;
        }
        write!(f, " created at {}>", core.site())
    }
}

/// A handle to a task's result (asyncio's `Task` as an awaitable; Rust's join handle).
///
/// Awaiting it gives `Ok(value)`, or `Err(TaskError)` if the task was cancelled or panicked.
/// Dropping it detaches the task (it keeps running: the loop holds it) and never cancels it.
/// It dereferences to [`TaskRef`] for the name, state, cancel and done callbacks.
///
/// ```
/// use std::cell::Cell;
/// use std::rc::Rc;
///
/// let finished = evloop::run(async {
///     let t = evloop::spawn(async { 6 * 7 }); // asyncio.create_task(...)
///     assert_eq!(t.await?, 42); // await task
///
///     // Dropping a handle detaches the task; it is not cancelled.
///     let flag = Rc::new(Cell::new(false));
///     let f = flag.clone();
///     drop(evloop::spawn(async move {
///         evloop::yield_now().await;
///         f.set(true);
///     }));
///     evloop::yield_now().await;
///     evloop::yield_now().await;
///     Ok::<_, evloop::TaskError>(flag.get())
/// })??;
/// assert!(finished);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct Task<T> {
    r: TaskRef,
    _output: PhantomData<fn() -> T>,
}

impl<T: 'static> Task<T> {
    /// Takes the outcome of a finished task (once); `None` while it runs.
    fn take_outcome(&mut self) -> Option<Result<T, TaskError>> {
        let core = self.r.core();
        let state = core.state();
        if !state.is_finished() {
            return None;
        }
        if core.set(OBSERVED) {
            return Some(Err(TaskError::ResultTaken { task: core.label() }));
        }
        Some(match state {
            TaskState::Done => match self.r.ptr.take_output::<T>() {
                Some(v) => Ok(v),
                None => Err(TaskError::ResultTaken { task: core.label() }),
            },
            TaskState::Failed => match core.take_panic() {
                Some(panic) => Err(TaskError::Panicked {
                    task: core.label(),
                    panic,
                }),
                None => Err(TaskError::ResultTaken { task: core.label() }),
            },
            _ => Err(TaskError::Cancelled { task: core.label() }),
        })
    }

    /// The result if the task finished (taking it), `None` if it has not.
    ///
    /// ```
    /// evloop::run(async {
    ///     let mut t = evloop::spawn(async { "result" });
    ///     assert!(t.try_result().is_none()); // still running
    ///     evloop::yield_now().await;
    ///     assert_eq!(t.try_result().map(Result::ok), Some(Some("result")));
    /// })?;
    /// # Ok::<(), evloop::RunError>(())
    /// ```
    pub fn try_result(&mut self) -> Option<Result<T, TaskError>> {
        self.take_outcome()
    }

    /// An untyped reference to the task, to keep beside (or after) the handle.
    ///
    /// ```
    /// evloop::run(async {
    ///     let t = evloop::spawn(async {});
    ///     let r = t.task_ref(); // outlives the handle
    ///     t.await?;
    ///     assert!(r.done());
    ///     Ok::<(), evloop::TaskError>(())
    /// })??;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn task_ref(&self) -> TaskRef {
        self.r.clone()
    }

    /// `Ready` once the task has finished in any way, without taking its result (for `wait`,
    /// `as_completed` and task groups, which own the handles they watch).
    ///
    /// ```
    /// use std::future::poll_fn;
    ///
    /// evloop::run(async {
    ///     let mut t = evloop::spawn(async { 1 });
    ///     poll_fn(|cx| t.poll_done(cx)).await; // finished, result not taken
    ///     assert_eq!(t.await?, 1);
    ///     Ok::<(), evloop::TaskError>(())
    /// })??;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn poll_done(&mut self, cx: &mut Context<'_>) -> Poll<()> {
        if self.r.done() {
            return Poll::Ready(());
        }
        self.r.core().set_join_waker(cx.waker());
        self.note_awaited();
        Poll::Pending
    }

    /// Cancels the task now: its future is dropped before this returns (unless the task is
    /// running right now, when it happens at its next step). Returns false if it had finished.
    ///
    /// ```
    /// evloop::run(async {
    ///     let t = evloop::spawn(std::future::pending::<()>());
    ///     assert!(t.abort()); // the future is dropped now
    ///     assert!(t.await.unwrap_err().is_cancelled());
    /// })?;
    /// # Ok::<(), evloop::RunError>(())
    /// ```
    pub fn abort(&self) -> bool {
        self.r.abort()
    }

    /// Drops the handle, leaving the task running (the same as `drop`, said out loud).
    ///
    /// ```
    /// use std::cell::Cell;
    /// use std::rc::Rc;
    ///
    /// evloop::run(async {
    ///     let ran = Rc::new(Cell::new(false));
    ///     let r = ran.clone();
    ///     evloop::spawn(async move { r.set(true) }).detach(); // fire and forget
    ///     evloop::yield_now().await;
    ///     assert!(ran.get());
    /// })?;
    /// # Ok::<(), evloop::RunError>(())
    /// ```
    pub fn detach(self) {}

    /// Tells the awaiting task's step what it now waits on.
    fn note_awaited(&self) {
        let core = self.r.core();
        note_awaiting(Awaiting::Task(core.number()));
        if running_loop_traces() {
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
        let core = this.r.core();
        if core.state() == TaskState::Running {
            // It is being stepped: either we are inside it (it awaits itself) or inside a task
            // it started eagerly.
            let me = core.event_loop().is_some_and(|lp| lp.current.is(&this.r.ptr));
            if me {
                return Poll::Ready(Err(TaskError::AwaitedItself { task: core.label() }));
            }
        }
        if let Some(outcome) = this.take_outcome() {
            return Poll::Ready(outcome);
        }
        if let Some(e) = wrong_loop(&this.r.core()) {
            return Poll::Ready(Err(TaskError::WrongLoop(e)));
        }
        this.r.core().set_join_waker(cx.waker());
        this.note_awaited();
        Poll::Pending
    }
}

impl<T> Drop for Task<T> {
    fn drop(&mut self) {
        let core = self.r.core();
        core.set(DETACHED);
        // Nobody awaits the handle any more: forget the awaiter's waker, or the task's
        // completion would wake a task that has moved on.
        if self.r.ptr.header().has_extra() {
            drop(core.take_join_waker());
        }
        match core.state() {
            TaskState::Failed if !core.has(OBSERVED) => report_failed_on_drop(&self.r),
            // Nobody else can take the output: it goes with the handle.
            TaskState::Done => drop(self.r.ptr.drop_output()),
            _ => {}
        }
    }
}

/// The error for awaiting `core`'s task from a task of another loop, which would wait while
/// the task's own loop cannot run (asyncio: "Task got Future attached to a different loop").
fn wrong_loop(core: &Core<'_>) -> Option<WrongLoopError> {
    WrongLoopError::check(u64::from(core.0.owner()), "await", || core.label()).err()
}

fn report_failed_on_drop(task: &TaskRef) {
    let core = task.core();
    if core.set(OBSERVED) {
        return;
    }
    let ctx = ExceptionContext {
        kind: ExceptionKind::TaskFailureUnobserved,
        message: format!(
            "{} failed and its handle was dropped without observing it (created at {})",
            core.label(),
            core.site()
        ),
        panic: core.take_panic(),
        task: Some(core.label()),
        handle: None,
    };
    match core.event_loop() {
        Some(lp) => lp.report(ctx),
        None => default_exception_handler(&ctx),
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
///
/// ```
/// evloop::run(async {
///     let t = evloop::TaskBuilder::new().name("worker").eager(true).spawn(async { 1 })?;
///     assert_eq!(t.name(), "worker");
///     assert!(t.done()); // eager: it ran to completion inside spawn
///     Ok::<(), evloop::LoopError>(())
/// })??;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Default, Debug, Clone)]
pub struct TaskBuilder {
    name: Option<String>,
    eager: Option<bool>,
}

impl TaskBuilder {
    /// No name (`Task-N`), lazy start unless the loop was built with eager tasks.
    ///
    /// ```
    /// evloop::run(async {
    ///     let t = evloop::TaskBuilder::new().spawn(async {})?; // like evloop::spawn, with an error
    ///     assert!(t.name().starts_with("Task-") && !t.done());
    ///     Ok::<(), evloop::LoopError>(())
    /// })??;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn new() -> TaskBuilder {
        TaskBuilder::default()
    }

    /// Names the task (asyncio's `create_task(coro, name=...)`).
    ///
    /// ```
    /// evloop::run(async {
    ///     let t = evloop::TaskBuilder::new().name("poller").spawn(async {})?; // create_task(coro, name="poller")
    ///     assert_eq!(t.name(), "poller");
    ///     Ok::<(), evloop::LoopError>(())
    /// })??;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.name = Some(name.into());
        self
    }

    /// Eager start (asyncio 3.12's `eager_start`): if the loop is running, the first step runs
    /// inside `spawn`, before it returns. A task that completes there never enters the ready queue.
    ///
    /// ```
    /// evloop::run(async {
    ///     let lazy = evloop::TaskBuilder::new().spawn(async { evloop::yield_now().await })?;
    ///     let eager = evloop::TaskBuilder::new().eager(true).spawn(async { evloop::yield_now().await })?;
    ///     use evloop::Awaiting;
    ///     assert_eq!(lazy.awaiting(), Awaiting::Unknown); // not run yet
    ///     assert_eq!(eager.awaiting(), Awaiting::Yield); // its first step already ran
    ///     Ok::<(), evloop::LoopError>(())
    /// })??;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn eager(mut self, on: bool) -> Self {
        self.eager = Some(on);
        self
    }

    /// Creates the task on `lp`.
    ///
    /// ```
    /// let lp = evloop::EventLoop::new()?;
    /// let t = evloop::TaskBuilder::new().name("early").spawn_on(&lp, async { 5 })?; // before it runs
    /// assert_eq!(lp.run_until_complete(t)??, 5);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
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
    ///
    /// ```
    /// use evloop::{LoopErrorKind, TaskBuilder};
    ///
    /// let err = TaskBuilder::new().spawn(async {}).unwrap_err(); // an error, where spawn() panics
    /// assert_eq!(err.kind(), LoopErrorKind::NoRunningLoop);
    /// evloop::run(async {
    ///     let t = TaskBuilder::new().spawn(async { 2 })?;
    ///     assert_eq!(t.await.ok(), Some(2));
    ///     Ok::<(), evloop::LoopError>(())
    /// })??;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
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
    ///
    /// ```
    /// let lp = evloop::EventLoop::new()?;
    /// let t = lp.create_task(async { "made before the loop ran" })?; // loop.create_task(coro)
    /// assert_eq!(lp.run_until_complete(t)??, "made before the loop ran");
    /// lp.close()?;
    /// assert!(lp.create_task(async {}).is_err()); // a closed loop refuses new work
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
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
        spawn_on(&self.inner, fut, name, eager, site)
    }

    /// Every task of this loop that has not finished (asyncio's `all_tasks()`).
    ///
    /// ```
    /// let lp = evloop::EventLoop::new()?;
    /// let t = lp.create_task(async {})?;
    /// assert_eq!(lp.all_tasks().len(), 1);
    /// lp.run_until_complete(t)??;
    /// assert!(lp.all_tasks().is_empty()); // finished tasks leave
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn all_tasks(&self) -> Vec<TaskRef> {
        self.inner
            .tasks
            .borrow()
            .iter()
            .map(|t| TaskRef { ptr: t.clone() })
            .collect()
    }

    /// The task being stepped right now, if any (asyncio's `current_task()`).
    ///
    /// ```
    /// let lp = evloop::EventLoop::new()?;
    /// assert!(lp.current_task().is_none()); // nothing is being stepped
    /// let h = lp.handle();
    /// let name = lp.run_until_complete(async move { h.current_task().map(|t| t.name()) })?;
    /// assert!(name.is_some_and(|n| n.starts_with("Task-")));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn current_task(&self) -> Option<TaskRef> {
        self.inner.current.get().map(|ptr| TaskRef { ptr })
    }

    /// A multi-line dump of every live task: name, state, what it awaits, where it was created.
    ///
    /// ```
    /// let lp = evloop::EventLoop::new()?;
    /// evloop::TaskBuilder::new().name("idle").spawn_on(&lp, std::future::pending::<()>())?;
    /// let dump = lp.dump_tasks();
    /// assert!(dump.starts_with("idle [pending]"), "{dump}");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn dump_tasks(&self) -> String {
        let tasks = self.all_tasks();
        let names: std::collections::HashMap<u64, String> = tasks.iter().map(|t| (t.number(), t.name())).collect();
        let mut out = String::new();
        for t in &tasks {
            let state = t.state();
            out += &format!("{} [{}]", t.name(), state.as_str());
            if state == TaskState::Pending {
                let what = match t.awaiting() {
                    Awaiting::Task(n) => names
                        .get(&n)
                        .cloned()
                        .unwrap_or_else(|| format!("a finished task (#{n})")),
                    other => other.to_string(),
                };
                out += &format!(" awaiting {what}");
            }
            out += &format!(" (created at {})\n", t.created_at());
        }
        out
    }

    /// Runs the loop until `fut` completes and returns its output (asyncio's
    /// `run_until_complete`). The future runs as a task; `stop()` before it completes makes this
    /// return [`LoopErrorKind::Stopped`] (the task stays in the loop).
    ///
    /// ```
    /// use std::time::Duration;
    ///
    /// let lp = evloop::EventLoop::builder().virtual_clock(true).build()?;
    /// let out = lp.run_until_complete(async {
    ///     evloop::sleep(Duration::from_secs(1)).await;
    ///     "done"
    /// })?;
    /// assert_eq!(out, "done");
    /// // The loop stays open for more runs, unlike `evloop::run`.
    /// assert_eq!(lp.run_until_complete(async { 2 })?, 2);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
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

/// Creates a task on `lp` (the work of `create_task`, `spawn` and `TaskBuilder`).
fn spawn_on<F>(
    lp: &Rc<LoopInner>,
    fut: F,
    name: Option<String>,
    eager: Option<bool>,
    site: &'static Location<'static>,
) -> Result<Task<F::Output>, LoopError>
where
    F: Future + 'static,
    F::Output: 'static,
{
    if lp.is_closed() {
        return Err(LoopError::new(LoopErrorKind::Closed, "create_task"));
    }
    let number = lp.next_task_number.get();
    lp.next_task_number.set(number.wrapping_add(1));
    let init = Init {
        owner: lp.id,
        number: number as u32,
        site: lp.site_id(site),
        flags: TaskState::Pending.bits(),
    };
    let task = TaskPtr::new::<F, LoopScheduler>(fut, init);
    if let Some(name) = name {
        task.header().extra_mut(|e| e.name = Some(name.into_boxed_str()));
    }
    if lp.task_hooks.get().is_none() {
        lp.task_hooks.set(Some(&HOOKS));
    }
    lp.tasks.borrow_mut().insert(task.clone());
    let eager = eager.unwrap_or(lp.eager_tasks) && lp.running.get();
    lp.trace(|| {
        let how = if eager {
            "eager: first step now"
        } else {
            "first step scheduled"
        };
        format!("  create {} at {site} ({how})", Core(task.header()).label())
    });
    if eager {
        step(lp, task.clone());
    } else {
        lp.push_ready(Ready::Task(task.clone()));
    }
    Ok(Task {
        r: TaskRef { ptr: task },
        _output: PhantomData,
    })
}

/// Spawns `fut` on the loop running on this thread (`asyncio.create_task`).
///
/// # Panics
/// If no evloop loop is running on this thread, or it is closing; use
/// [`LoopHandle::create_task`] or [`TaskBuilder::spawn`] to get an error instead.
///
/// ```
/// use std::time::Duration;
/// use evloop::Builder;
///
/// let total = evloop::run_with(Builder::new().virtual_clock(true), async {
///     // Three tasks run concurrently: the whole takes 3 s of loop time, not 6.
///     let tasks: Vec<_> = (1..=3u64)
///         .map(|s| {
///             evloop::spawn(async move {
///                 evloop::sleep(Duration::from_secs(s)).await;
///                 s
///             })
///         })
///         .collect();
///     let mut total = 0;
///     for t in tasks {
///         total += t.await?;
///     }
///     Ok::<_, evloop::TaskError>(total)
/// })??;
/// assert_eq!(total, 6);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[track_caller]
pub fn spawn<F>(fut: F) -> Task<F::Output>
where
    F: Future + 'static,
    F::Output: 'static,
{
    let site = Location::caller();
    match with_running(|lp| spawn_on(lp, fut, None, None, site)) {
        Some(Ok(t)) => t,
        Some(Err(e)) => panic!("evloop::spawn at {site}: {e}"),
        None => panic!("evloop::spawn at {site}: no event loop is running on this thread"),
    }
}

/// The task running right now on this thread's loop (`asyncio.current_task()`).
///
/// ```
/// assert!(evloop::current_task().is_none()); // no loop runs here
/// evloop::run(async {
///     let me = evloop::current_task().expect("inside a task");
///     assert!(me.name().starts_with("Task-"));
/// })?;
/// # Ok::<(), evloop::RunError>(())
/// ```
pub fn current_task() -> Option<TaskRef> {
    with_running(|lp| LoopHandle { inner: lp.clone() }.current_task()).flatten()
}

/// The unfinished tasks of the loop running on this thread (`asyncio.all_tasks()`); empty when
/// no loop runs.
///
/// ```
/// evloop::run(async {
///     let _t = evloop::spawn(std::future::pending::<()>());
///     assert_eq!(evloop::all_tasks().len(), 2); // this one and the pending one
///     // `run` cancels the tasks left over when its future returns.
/// })?;
/// # Ok::<(), evloop::RunError>(())
/// ```
pub fn all_tasks() -> Vec<TaskRef> {
    with_running(|lp| LoopHandle { inner: lp.clone() }.all_tasks()).unwrap_or_default()
}

/// asyncio's `asyncio.run(main)`: a new loop, run `fut` to completion, cancel the tasks left
/// over (running the loop until their futures are dropped), wait for executor jobs, close.
///
/// ```
/// async fn answer() -> u32 {
///     42
/// }
///
/// let v = evloop::run(answer())?; // asyncio.run(main())
/// assert_eq!(v, 42);
/// // A fresh loop each time, closed at the end.
/// assert!(evloop::run(async { evloop::get_running_loop().map(|lp| lp.is_running()) })??);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[track_caller]
pub fn run<F>(fut: F) -> Result<F::Output, RunError>
where
    F: Future + 'static,
    F::Output: 'static,
{
    run_with(Builder::new(), fut)
}

/// [`run`] with a configured loop (trace mode, a virtual clock, ...).
///
/// ```
/// use std::time::{Duration, Instant};
/// use evloop::Builder;
///
/// let started = Instant::now();
/// evloop::run_with(Builder::new().virtual_clock(true), async {
///     evloop::sleep(Duration::from_secs(3600)).await; // an hour of loop time ...
/// })?;
/// assert!(started.elapsed() < Duration::from_secs(3600)); // ... passes at once
/// # Ok::<(), evloop::RunError>(())
/// ```
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
pub(crate) fn cancel_leftover_tasks(lp: &LoopHandle) {
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

    #[test]
    fn task_flags_fit_the_header_bits() {
        for s in [
            TaskState::Pending,
            TaskState::Running,
            TaskState::Done,
            TaskState::Cancelled,
            TaskState::Failed,
        ] {
            assert_eq!(
                TaskState::from_bits(s.bits() | CANCEL_REQUESTED | DETACHED | OBSERVED),
                s
            );
        }
        const { assert!(OBSERVED < (1 << 10), "the header keeps 10 bits of task flags") };
    }
}
