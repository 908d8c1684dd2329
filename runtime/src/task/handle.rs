//! The handles of a task: [`TaskRef`], the untyped reference that inspects, names and cancels a
//! task (what `current_task()`, `all_tasks()` and done callbacks give), and [`Task<T>`], the
//! typed handle that `spawn` returns, which also takes the result: awaiting it reads the output
//! out of the cell (or the panic out of its extra part) once the step has finished the task, and
//! dropping it detaches the task. Both hold a counted `TaskPtr` to the cell and change the task's
//! state only through `Core`'s transitions (`state.rs`).

use std::fmt;
use std::future::Future;
use std::marker::PhantomData;
use std::panic::Location;
use std::pin::Pin;
use std::task::{Context, Poll};

use crate::event_loop::ExceptionKind;
use crate::event_loop::error::WrongLoopError;
use crate::event_loop::handle::{CallbackId, HandleKind, OnceCallback};
use crate::event_loop::raw_task::{DoneEntry, TaskPtr};
use crate::event_loop::trace::{AwaitKind, Awaiting, note_awaiting, note_awaiting_label};
use crate::event_loop::{ExceptionContext, LoopHandle, Ready, default_exception_handler, running_loop_traces};
use crate::task::error::TaskError;
use crate::task::state::{CancelRequest, Core, TaskState};
use crate::task::step::abort_now;

/// An untyped reference to a task: what `current_task()`, `all_tasks()` and done callbacks give.
/// It can inspect, name and cancel the task, but not take its result.
///
/// ```
/// evloop::run(async {
///     let me = evloop::task::current_task().expect("run's future runs as a task");
///     let other = evloop::spawn(async {});
///     let names: Vec<String> = evloop::event_loop::get_running_loop().map(|lp| lp.all_tasks()).unwrap_or_default().iter().map(|t| t.name()).collect();
///     assert!(names.contains(&me.name()) && names.contains(&other.name()));
///     other.await?;
///     Ok::<(), evloop::task::TaskError>(())
/// })??;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone)]
pub struct TaskRef {
    ptr: TaskPtr,
}

impl TaskRef {
    pub(super) fn from_ptr(ptr: TaskPtr) -> TaskRef {
        TaskRef { ptr }
    }

    fn core(&self) -> Core<'_> {
        Core(self.ptr.header())
    }

    /// The task's name: `Task-N` (N counts the loop's tasks from 1) unless it was named.
    ///
    /// ```
    /// evloop::run(async {
    ///     let t = evloop::spawn(async {});
    ///     assert!(t.name().starts_with("Task-"));
    ///     let named = evloop::task::TaskBuilder::new().name("fetch").spawn(async {})?;
    ///     assert_eq!(named.name(), "fetch");
    ///     Ok::<(), evloop::event_loop::LoopError>(())
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
    /// # Ok::<(), evloop::task::RunError>(())
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
    /// # Ok::<(), evloop::task::RunError>(())
    /// ```
    pub fn number(&self) -> u64 {
        self.core().number()
    }

    /// Where it is in its life.
    ///
    /// ```
    /// use evloop::task::TaskState;
    ///
    /// evloop::run(async {
    ///     let t = evloop::spawn(async {});
    ///     let r = t.task_ref();
    ///     assert_eq!(r.state(), TaskState::Pending);
    ///     t.await?;
    ///     assert_eq!(r.state(), TaskState::Done);
    ///     Ok::<(), evloop::task::TaskError>(())
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
    ///     evloop::task::yield_now().await; // the task takes its one step
    ///     assert!(t.done());
    /// })?;
    /// # Ok::<(), evloop::task::RunError>(())
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
    ///     evloop::task::yield_now().await;
    ///     assert!(t.cancelled());
    /// })?;
    /// # Ok::<(), evloop::task::RunError>(())
    /// ```
    pub fn cancelled(&self) -> bool {
        self.state() == TaskState::Cancelled
    }

    /// What the task waits on, as noted by the future it last returned `Pending` from.
    ///
    /// ```
    /// use std::time::Duration;
    /// use evloop::event_loop::{Awaiting, Builder};
    ///
    /// Builder::new().virtual_clock(true).run(async {
    ///     let t = evloop::spawn(evloop::time::sleep(Duration::from_secs(10)));
    ///     evloop::task::yield_now().await; // its first step starts the timer
    ///     assert!(matches!(t.awaiting(), Awaiting::Sleep(_)));
    ///     t.abort();
    /// })?;
    /// # Ok::<(), evloop::task::RunError>(())
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
    /// # Ok::<(), evloop::task::RunError>(())
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
    ///     evloop::task::yield_now().await;
    ///     assert!(t.cancel());
    ///     assert!(t.await.unwrap_err().is_cancelled()); // asyncio's CancelledError
    ///     assert!(cleaned.get());
    /// })?;
    /// # Ok::<(), evloop::task::RunError>(())
    /// ```
    pub fn cancel(&self) -> bool {
        let core = self.core();
        match core.request_cancel() {
            CancelRequest::Finished => return false,
            CancelRequest::Again => {}
            CancelRequest::First => {
                if let Some(lp) = core.event_loop() {
                    lp.trace(|| format!("  cancel {} requested", core.label()));
                }
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
    ///     evloop::task::yield_now().await;
    ///     let r = t.task_ref();
    ///     assert!(r.abort());
    ///     assert!(!alive.get()); // dropped before `abort` returned, not at the next step
    ///     assert!(r.cancelled());
    ///     assert!(!r.abort()); // already finished
    /// })?;
    /// # Ok::<(), evloop::task::RunError>(())
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

    /// How many cancel requests the task has had and not taken back with
    /// [`uncancel`](TaskRef::uncancel) (asyncio 3.11's `cancelling()`): each `cancel()` or
    /// `abort()` of an unfinished task counts one, and so does a [`Timeout`] whose deadline
    /// passed while it bounded a future of this task (it takes its own back when it reports
    /// `Elapsed`). The count stays once the task has finished.
    ///
    /// [`Timeout`]: crate::task::timeouts::Timeout
    ///
    /// ```
    /// evloop::run(async {
    ///     let t = evloop::spawn(std::future::pending::<()>());
    ///     assert_eq!(t.cancelling(), 0);
    ///     t.cancel();
    ///     t.cancel();
    ///     assert_eq!(t.cancelling(), 2); // requested twice, not yet done
    ///     evloop::task::yield_now().await;
    ///     assert!(t.cancelled());
    ///     assert!(!t.cancel()); // finished: not counted
    ///     assert_eq!(t.cancelling(), 2);
    /// })?;
    /// # Ok::<(), evloop::task::RunError>(())
    /// ```
    pub fn cancelling(&self) -> usize {
        self.core().cancel_requests() as usize
    }

    /// Takes one cancel request back and returns how many are left (asyncio 3.11's
    /// `uncancel()`; never below zero). When none is left, a cancel that has not taken effect
    /// yet is withdrawn: the task's next step polls its future instead of dropping it (asyncio
    /// 3.13). A task that has finished stays as it ended.
    ///
    /// ```
    /// evloop::run(async {
    ///     let t = evloop::spawn(async {
    ///         evloop::task::yield_now().await;
    ///         "kept running"
    ///     });
    ///     evloop::task::yield_now().await;
    ///     t.cancel();
    ///     assert_eq!(t.uncancel(), 0); // withdrawn before it took effect
    ///     assert_eq!(t.await?, "kept running");
    ///     Ok::<(), evloop::task::TaskError>(())
    /// })??;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn uncancel(&self) -> usize {
        self.core().uncancel() as usize
    }

    /// A [`Timeout`](crate::task::timeouts::Timeout)'s deadline passed: count a cancel request
    /// (asyncio's timeout calls `task.cancel()`) and wake the task, whose step still polls its
    /// future so that the timeout can report; an outside `cancel()` made before that step ends
    /// the task cancelled instead. False if the task had finished.
    pub(crate) fn cancel_for_timeout(&self) -> bool {
        let core = self.core();
        if core.state().is_finished() {
            return false;
        }
        core.count_cancel();
        if let Some(lp) = core.event_loop() {
            lp.trace(|| format!("  timeout cancels {}", core.label()));
        }
        self.ptr.wake();
        true
    }

    /// Makes the task's next step drop its future, for a cancel request already counted (a
    /// timeout that found it was not the only one to cancel the task).
    pub(crate) fn insist_on_cancel(&self) {
        self.core().demand_cancel();
        self.ptr.wake();
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
    ///     evloop::task::yield_now().await;
    ///     assert_eq!(*log.borrow(), ["Done"]);
    ///     Ok::<(), evloop::task::TaskError>(())
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

    /// The loop the task belongs to (asyncio's `Task.event_loop()`); `None` once that loop is
    /// gone. A closed loop is still returned while something holds it.
    ///
    /// ```
    /// evloop::run(async {
    ///     let t = evloop::spawn(async {});
    ///     let lp = evloop::event_loop::get_running_loop().unwrap();
    ///     assert!(t.event_loop().is_some_and(|l| l.same_loop(&lp)));
    /// })
    /// .unwrap();
    /// ```
    pub fn event_loop(&self) -> Option<LoopHandle> {
        self.core().event_loop().map(|inner| LoopHandle { inner })
    }

    /// Whether both refer to the same task.
    ///
    /// ```
    /// evloop::run(async {
    ///     let t = evloop::spawn(async { evloop::task::current_task() });
    ///     let r = t.task_ref();
    ///     let seen = t.await?.expect("a task was running");
    ///     assert!(seen.ptr_eq(&r)); // the task saw itself
    ///     Ok::<(), evloop::task::TaskError>(())
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
///         evloop::task::yield_now().await;
///         f.set(true);
///     }));
///     evloop::task::yield_now().await;
///     evloop::task::yield_now().await;
///     Ok::<_, evloop::task::TaskError>(flag.get())
/// })??;
/// assert!(finished);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct Task<T> {
    r: TaskRef,
    _output: PhantomData<fn() -> T>,
}

impl<T> Task<T> {
    /// The handle `spawn_on` returns for a new task.
    pub(super) fn from_ptr(ptr: TaskPtr) -> Task<T> {
        Task {
            r: TaskRef { ptr },
            _output: PhantomData,
        }
    }
}

impl<T: 'static> Task<T> {
    /// Takes the outcome of a finished task (once); `None` while it runs.
    fn take_outcome(&mut self) -> Option<Result<T, TaskError>> {
        let core = self.r.core();
        let state = core.state();
        if !state.is_finished() {
            return None;
        }
        if !core.observe() {
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
    ///     evloop::task::yield_now().await;
    ///     assert_eq!(t.try_result().map(Result::ok), Some(Some("result")));
    /// })?;
    /// # Ok::<(), evloop::task::RunError>(())
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
    ///     Ok::<(), evloop::task::TaskError>(())
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
    ///     Ok::<(), evloop::task::TaskError>(())
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
    /// # Ok::<(), evloop::task::RunError>(())
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
    ///     evloop::task::yield_now().await;
    ///     assert!(ran.get());
    /// })?;
    /// # Ok::<(), evloop::task::RunError>(())
    /// ```
    pub fn detach(self) {}

    /// Tells the awaiting task's step what it now waits on.
    fn note_awaited(&self) {
        let core = self.r.core();
        note_awaiting(Awaiting::Object(&AWAITED_TASK, core.number()));
        if running_loop_traces() {
            note_awaiting_label(core.label());
        }
    }
}

/// Another task's handle, as what a task awaits: the id is that task's number (`Task #3`; trace
/// mode prints its name instead, the task dump and tree its name or place in the tree).
pub(crate) static AWAITED_TASK: AwaitKind = AwaitKind::new("Task", |n, f| write!(f, "Task #{n}"));

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
        core.detach();
        // Nobody awaits the handle any more: forget the awaiter's waker, or the task's
        // completion would wake a task that has moved on.
        if self.r.ptr.header().has_extra() {
            drop(core.take_join_waker());
        }
        match core.state() {
            TaskState::Failed if !core.observed() => report_failed_on_drop(&self.r),
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
    if !core.observe() {
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
