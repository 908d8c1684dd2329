//! Structured concurrency: [`TaskGroup`] (asyncio 3.11's `TaskGroup`).
//!
//! A group owns the tasks spawned into it. [`TaskGroup::join`] waits for all of them and gives
//! their values in spawn order. The first child to fail (return `Err`, or panic) makes the
//! group cancel every other child, and `join` then returns every failure at once in a
//! [`GroupError`] (asyncio's `ExceptionGroup`). Cancelling the task that awaits `join` drops the
//! group, which cancels every child that has not finished: no child outlives its group.
//!
//! Tearing down is prompt and complete. When a child fails, a callback scheduled with
//! `call_soon` (asyncio's done callback) aborts its siblings in the next iteration, so siblings
//! already woken in the same iteration still take their step and report their own failures;
//! when the group is dropped, or `join` sees the failure first, the children are aborted on the
//! spot. Aborting ([`Task::abort`]) drops a child's future immediately, so its destructors (its
//! cleanup) have run by the time `join` returns or the group is gone. asyncio needs
//! `try/finally` inside every child for the same guarantee; Rust's drop gives it for free.

use std::cell::{Cell, RefCell};
use std::convert::Infallible;
use std::fmt;
use std::future::{Future, poll_fn};
use std::panic::Location;
use std::rc::Rc;
use std::task::Poll;

use crate::event_loop::error::{LoopError, Panic};
use crate::event_loop::{LoopHandle, get_running_loop};
use crate::task::error::TaskError;
use crate::task::spawn::current_task_on;
use crate::task::tree::{add_awaited_by, discard_awaited_by};
use crate::task::{Task, TaskBuilder, TaskRef};

/// Why one child of a group did not give a value.
///
/// ```
/// use evloop::task::{ChildError, TaskGroup};
///
/// evloop::run(async {
///     let mut group = TaskGroup::<u32, String>::new()?;
///     group.spawn_named("parser", async { Err(String::from("bad input")) })?;
///     let err = group.join().await.unwrap_err();
///     match &err.errors[0] {
///         ChildError::Failed { task, error } => assert_eq!((task.as_str(), error.as_str()), ("parser", "bad input")),
///         other => unreachable!("{other}"),
///     }
///     Ok::<(), evloop::event_loop::LoopError>(())
/// })??;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
#[non_exhaustive]
pub enum ChildError<E> {
    /// It returned `Err`.
    Failed {
        /// The child task's name.
        task: String,
        /// Its error.
        error: E,
    },
    /// It panicked.
    Panicked {
        /// The child task's name.
        task: String,
        /// The caught panic.
        panic: Panic,
    },
    /// It awaited its own group's `join` (the join cannot wait for the task running it); the
    /// group reports it and waits for the other children.
    JoinedOwnGroup {
        /// The child task's name.
        task: String,
    },
    /// It was cancelled from outside the group, or by [`TaskGroup::cancel`] (children the
    /// group tears down because a sibling failed are counted in [`GroupError::cancelled`]; one
    /// whose `cancel()` from outside found it unfinished is reported here, whether that came
    /// before or after the sibling's failure: its [`TaskRef::cancelling`] count tells).
    Cancelled {
        /// The child task's name.
        task: String,
    },
}

impl<E: fmt::Display> fmt::Display for ChildError<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ChildError::Failed { task, error } => write!(f, "{task} failed: {error}"),
            ChildError::Panicked { task, panic } => write!(f, "{task} {panic}"),
            ChildError::Cancelled { task } => write!(f, "{task} was cancelled"),
            ChildError::JoinedOwnGroup { task } => write!(f, "{task} awaited its own group's join"),
        }
    }
}

/// Every failure of a group's children (asyncio's `ExceptionGroup`), plus how many children
/// the group cancelled because of them.
///
/// ```
/// use evloop::task::TaskGroup;
///
/// evloop::run(async {
///     let mut group = TaskGroup::<u32, &str>::new()?;
///     group.spawn(async { Err("boom") })?;
///     group.spawn(async {
///         std::future::pending::<()>().await; // never finishes on its own
///         Ok(0)
///     })?;
///     let err = group.join().await.unwrap_err();
///     assert_eq!(err.errors.len(), 1); // asyncio's ExceptionGroup with one exception
///     assert_eq!(err.cancelled, 1); // the sibling the failure tore down
///     assert!(err.to_string().contains("failed: boom"));
///     Ok::<(), evloop::event_loop::LoopError>(())
/// })??;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub struct GroupError<E> {
    /// The failures, in the order `join` collected them (children that finished in the same
    /// iteration appear in spawn order).
    pub errors: Vec<ChildError<E>>,
    /// Children the group cancelled itself after the first failure (torn down, or refused by
    /// `spawn`).
    pub cancelled: usize,
}

impl<E: fmt::Display> fmt::Display for GroupError<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "task group: {} child failure(s)", self.errors.len())?;
        if self.cancelled > 0 {
            write!(f, " ({} sibling(s) cancelled)", self.cancelled)?;
        }
        for (i, e) in self.errors.iter().enumerate() {
            write!(f, "{}{e}", if i == 0 { ": " } else { "; " })?;
        }
        Ok(())
    }
}

impl<E: fmt::Debug + fmt::Display> std::error::Error for GroupError<E> {}

/// A set of child tasks that finish together; see the module documentation.
///
/// ```
/// # evloop::run(async {
/// let mut group = evloop::task::TaskGroup::<u32, String>::new()?;
/// group.spawn(async { Ok(1) })?;
/// group.spawn(async { Ok(2) })?;
/// assert_eq!(group.join().await.unwrap(), vec![1, 2]);
/// # Ok::<(), evloop::event_loop::LoopError>(())
/// # }).unwrap().unwrap();
/// ```
pub struct TaskGroup<T: 'static, E: 'static = Infallible> {
    lp: LoopHandle,
    /// The task that made the group (asyncio's `_parent_task`), or the first that spawned into
    /// it: the task tree shows each child below it from the child's creation.
    owner: Option<TaskRef>,
    children: Vec<Option<Task<Result<T, E>>>>,
    shared: Rc<GroupShared>,
}

/// What the children reach: the siblings to tear down when one of them fails, without waiting
/// for the owner to poll `join`.
struct GroupShared {
    lp: LoopHandle,
    children: RefCell<Vec<TaskRef>>,
    failing: Cell<bool>,
    /// The numbers of the children the group cancelled itself (torn down after a failure, or
    /// refused): with their cancel counts, what tells the group's own cancellations from
    /// outside ones.
    torn_down: RefCell<Vec<u64>>,
}

impl GroupShared {
    fn new(lp: &LoopHandle) -> Rc<GroupShared> {
        Rc::new(GroupShared {
            lp: lp.clone(),
            children: RefCell::new(Vec::new()),
            failing: Cell::new(false),
            torn_down: RefCell::new(Vec::new()),
        })
    }

    /// Cancels `child` now as the group's own doing.
    fn tear_down(&self, child: &TaskRef) {
        if child.abort() {
            self.torn_down.borrow_mut().push(child.number());
        }
    }

    /// Whether `child`, which ended cancelled, was cancelled by the group alone: the group tore
    /// it down and no other cancel request is counted (a `cancel()` from outside that found it
    /// unfinished is one more, whichever came first).
    fn tore_down(&self, child: &TaskRef) -> bool {
        self.torn_down.borrow().contains(&child.number()) && child.cancelling() <= 1
    }

    /// A child failed: tear the others down, in a callback scheduled with `call_soon` (as
    /// asyncio's `TaskGroup` does from its done callback), so siblings already woken in this
    /// iteration still take their step: two children failing in the same iteration both report.
    fn fail(self: &Rc<Self>) {
        if self.failing.replace(true) {
            return;
        }
        let me = self.clone();
        if self.lp.call_soon(move || me.abort_all()).is_err() {
            self.abort_all();
        }
    }

    /// Cancels every unfinished child now.
    fn abort_all(&self) {
        let children = self.children.borrow().clone();
        // Skip a child that is running right now (one that joins its own group, when `join`
        // itself tears down): aborting it would only set a cancel request it never reaches.
        let running = crate::task::current_task();
        for child in children {
            if running.as_ref().is_some_and(|r| r.ptr_eq(&child)) {
                continue;
            }
            self.tear_down(&child);
        }
    }
}

impl<T: 'static, E: 'static> TaskGroup<T, E> {
    /// An empty group on the loop running on this thread.
    ///
    /// ```
    /// use evloop::task::TaskGroup;
    ///
    /// assert!(TaskGroup::<()>::new().is_err()); // no loop is running here
    /// let values = evloop::run(async {
    ///     let mut group = TaskGroup::<u32>::new()?; // `async with asyncio.TaskGroup() as tg:`
    ///     group.spawn(async { Ok(1) })?;
    ///     Ok::<_, Box<dyn std::error::Error>>(group.join().await?)
    /// })??;
    /// assert_eq!(values, [1]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn new() -> Result<Self, LoopError> {
        let lp = get_running_loop()?;
        Ok(TaskGroup {
            shared: GroupShared::new(&lp),
            owner: crate::task::current_task(),
            lp,
            children: Vec::new(),
        })
    }

    /// An empty group on `lp`.
    ///
    /// ```
    /// let lp = evloop::event_loop::EventLoop::new()?;
    /// let mut group = evloop::task::TaskGroup::<u32>::with_loop(&lp); // the loop need not run yet
    /// group.spawn(async { Ok(7) })?;
    /// let values = lp.run_until_complete(group.join())??;
    /// assert_eq!(values, [7]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn with_loop(lp: &LoopHandle) -> Self {
        TaskGroup {
            lp: lp.clone(),
            owner: current_task_on(lp),
            children: Vec::new(),
            shared: GroupShared::new(lp),
        }
    }

    /// Spawns a child; its first step is scheduled like any task's. Returns a reference to it
    /// (its name, state, cancel). Into a group that is failing (a child failed), the child is
    /// refused: it never takes a step, not even an eager one, and the reference is to a task
    /// already cancelled, which `join` counts in [`GroupError::cancelled`].
    ///
    /// ```
    /// evloop::run(async {
    ///     let mut group = evloop::task::TaskGroup::<&str>::new()?;
    ///     let child = group.spawn(async { Ok("done") })?;
    ///     assert!(!child.done()); // scheduled; it runs once this task waits
    ///     assert_eq!(group.join().await?, ["done"]);
    ///     assert!(child.done());
    ///     Ok::<(), Box<dyn std::error::Error>>(())
    /// })??;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[track_caller]
    pub fn spawn<F>(&mut self, fut: F) -> Result<TaskRef, LoopError>
    where
        F: Future<Output = Result<T, E>> + 'static,
    {
        self.spawn_child(TaskBuilder::new(), fut, Location::caller())
    }

    fn spawn_child<F>(
        &mut self,
        builder: TaskBuilder,
        fut: F,
        site: &'static Location<'static>,
    ) -> Result<TaskRef, LoopError>
    where
        F: Future<Output = Result<T, E>> + 'static,
    {
        let shared = self.shared.clone();
        let watched = async move {
            let out = fut.await;
            if out.is_err() {
                shared.fail();
            }
            out
        };
        // A failing group refuses a new child before its first step (asyncio's `create_task`
        // raises on a group that is shutting down): the task is never started eagerly, and it
        // is aborted before this returns, so the caller gets a task that is already cancelled.
        let refused = self.shared.failing.get();
        let builder = if refused { builder.eager(false) } else { builder };
        let task = builder.spawn_on_at(&self.lp, watched, site)?;
        let r = task.task_ref();
        if refused {
            self.shared.tear_down(&r);
            self.children.push(Some(task));
            return Ok(r);
        }
        if self.owner.is_none() {
            self.owner = current_task_on(&self.lp);
        }
        let owner = self.owner.clone();
        if let Some(owner) = &owner {
            add_awaited_by(&self.lp, &r, owner);
        }
        let shared = self.shared.clone();
        // A panicking child never reaches the check above: its done callback reports it.
        r.add_done_callback(move |t| {
            if t.state() == crate::task::TaskState::Failed {
                shared.fail();
            }
            if let Some(owner) = &owner {
                discard_awaited_by(&shared.lp, t, owner);
            }
        });
        self.shared.children.borrow_mut().push(r.clone());
        self.children.push(Some(task));
        Ok(r)
    }

    /// Spawns a named child.
    ///
    /// ```
    /// evloop::run(async {
    ///     let mut group = evloop::task::TaskGroup::<()>::new()?;
    ///     let child = group.spawn_named("fetch", async { Ok(()) })?;
    ///     assert_eq!(child.name(), "fetch");
    ///     group.join().await?;
    ///     Ok::<(), Box<dyn std::error::Error>>(())
    /// })??;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[track_caller]
    pub fn spawn_named<F>(&mut self, name: impl Into<String>, fut: F) -> Result<TaskRef, LoopError>
    where
        F: Future<Output = Result<T, E>> + 'static,
    {
        self.spawn_child(TaskBuilder::new().name(name), fut, Location::caller())
    }

    /// Children spawned so far.
    ///
    /// ```
    /// evloop::run(async {
    ///     let mut group = evloop::task::TaskGroup::<u8>::new()?;
    ///     group.spawn(async { Ok(1) })?;
    ///     group.spawn(async { Ok(2) })?;
    ///     assert_eq!(group.len(), 2);
    ///     group.join().await?;
    ///     Ok::<(), Box<dyn std::error::Error>>(())
    /// })??;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn len(&self) -> usize {
        self.children.len()
    }

    /// Whether no child was spawned.
    ///
    /// ```
    /// evloop::run(async {
    ///     let group = evloop::task::TaskGroup::<u8>::new()?;
    ///     assert!(group.is_empty());
    ///     assert_eq!(group.join().await?, []); // an empty group joins at once
    ///     Ok::<(), Box<dyn std::error::Error>>(())
    /// })??;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn is_empty(&self) -> bool {
        self.children.is_empty()
    }

    /// Cancels every child that has not finished, now (their futures are dropped before this
    /// returns). Returns how many were cancelled.
    ///
    /// ```
    /// use evloop::task::ChildError;
    ///
    /// evloop::run(async {
    ///     let mut group = evloop::task::TaskGroup::<()>::new()?;
    ///     group.spawn(std::future::pending())?;
    ///     assert_eq!(group.cancel(), 1);
    ///     let err = group.join().await.unwrap_err();
    ///     assert!(matches!(err.errors[..], [ChildError::Cancelled { .. }]));
    ///     Ok::<(), evloop::event_loop::LoopError>(())
    /// })??;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn cancel(&mut self) -> usize {
        self.children.iter().flatten().filter(|t| t.abort()).count()
    }

    /// Waits for every child; their values in spawn order, or every failure.
    ///
    /// ```
    /// use std::time::Duration;
    /// use evloop::event_loop::Builder;
    ///
    /// let values = Builder::new().virtual_clock(true).run(async {
    ///     let mut group = evloop::task::TaskGroup::<u64>::new()?;
    ///     for s in [3, 1, 2] {
    ///         group.spawn(async move {
    ///             evloop::time::sleep(Duration::from_secs(s)).await;
    ///             Ok(s)
    ///         })?;
    ///     }
    ///     Ok::<_, Box<dyn std::error::Error>>(group.join().await?) // spawn order, not finish order
    /// })??;
    /// assert_eq!(values, [3, 1, 2]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub async fn join(mut self) -> Result<Vec<T>, GroupError<E>> {
        let n = self.children.len();
        let mut values: Vec<Option<T>> = (0..n).map(|_| None).collect();
        let mut errors = Vec::new();
        let mut cancelled = 0;
        let mut failing = false;
        let mut aborted = false;
        let shared = self.shared.clone();
        // A child joining its own group would wait for itself forever: leave it out.
        if let Some(me) = crate::task::current_task() {
            for slot in self.children.iter_mut() {
                if slot.as_ref().is_some_and(|t| t.task_ref().ptr_eq(&me)) {
                    if let Some(t) = slot.take() {
                        errors.push(ChildError::JoinedOwnGroup { task: t.name() });
                    }
                }
            }
        }
        poll_fn(|cx| {
            loop {
                let mut progressed = false;
                let mut pending = 0;
                for (i, slot) in self.children.iter_mut().enumerate() {
                    let Some(task) = slot.as_mut() else { continue };
                    if task.poll_done(cx).is_pending() {
                        pending += 1;
                        continue;
                    }
                    let name = task.name();
                    let torn_down = shared.tore_down(task);
                    let outcome = match slot.take().map(|mut t| t.try_result()) {
                        Some(Some(r)) => r,
                        _ => continue,
                    };
                    progressed = true;
                    match outcome {
                        Ok(Ok(v)) => values[i] = Some(v),
                        Ok(Err(error)) => {
                            errors.push(ChildError::Failed { task: name, error });
                            failing = true;
                        }
                        Err(TaskError::Panicked { panic, .. }) => {
                            errors.push(ChildError::Panicked { task: name, panic });
                            failing = true;
                        }
                        Err(_) if torn_down => cancelled += 1,
                        Err(_) => errors.push(ChildError::Cancelled { task: name }),
                    }
                }
                if failing && pending > 0 && !aborted {
                    // Tear the rest down now (the children's own watch usually did already);
                    // their outcomes are collected on the next pass. Once only: a child that
                    // is running right now (one awaiting this join) only gets a cancel request
                    // and finishes later.
                    aborted = true;
                    shared.failing.set(true);
                    shared.abort_all();
                    continue;
                }
                if pending == 0 {
                    return Poll::Ready(());
                }
                if !progressed {
                    return Poll::Pending;
                }
            }
        })
        .await;
        if errors.is_empty() {
            Ok(values.into_iter().flatten().collect())
        } else {
            Err(GroupError { errors, cancelled })
        }
    }
}

impl<T: 'static, E: 'static> Drop for TaskGroup<T, E> {
    /// Dropping a group (its owner was cancelled, or `join` was never awaited) cancels every
    /// child that has not finished: no child outlives its group.
    fn drop(&mut self) {
        for task in self.children.drain(..).flatten() {
            // Drop the handle first: it forgets the owner's waker, so the aborted children do
            // not wake an owner that is going away.
            let child = task.task_ref();
            drop(task);
            child.abort();
        }
    }
}

impl<T: 'static, E: 'static> fmt::Debug for TaskGroup<T, E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let live = self.children.iter().flatten().filter(|t| !t.done()).count();
        write!(f, "<TaskGroup {} children, {live} running>", self.children.len())
    }
}
