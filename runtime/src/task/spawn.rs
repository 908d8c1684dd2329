//! Creating and running tasks: [`TaskBuilder`], the loop's `create_task`, `all_tasks`,
//! `current_task`, `dump_tasks` and `run_until_complete`, and the free functions [`spawn`],
//! [`current_task`], [`all_tasks`], [`run`] and `Builder::run`. Every way of creating a task ends in
//! `spawn_on`, which allocates the cell (`waker::new_task`), puts it in the loop's table and either
//! queues its first step or, for an eager task, runs it at once (`step.rs`).

use std::future::Future;
use std::panic::Location;
use std::rc::Rc;

use crate::event_loop::error::{LoopError, LoopErrorKind};
use crate::event_loop::raw_task::Init;
use crate::event_loop::slots::CounterKey;
use crate::event_loop::waker;
use crate::event_loop::{Builder, EventLoop, LoopHandle, LoopInner, Ready, with_running};
use crate::task::error::RunError;
use crate::task::handle::{AWAITED_TASK, Task, TaskRef};
use crate::task::state::{Core, TaskState};
use crate::task::step::{HOOKS, step};

/// Options for one task: a name, and whether it starts eagerly.
///
/// ```
/// evloop::run(async {
///     let t = evloop::task::TaskBuilder::new().name("worker").eager(true).spawn(async { 1 })?;
///     assert_eq!(t.name(), "worker");
///     assert!(t.done()); // eager: it ran to completion inside spawn
///     Ok::<(), evloop::event_loop::LoopError>(())
/// })??;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Default, Debug, Clone)]
#[must_use = "builders do nothing until they are built, run or awaited"]
pub struct TaskBuilder {
    name: Option<String>,
    eager: Option<bool>,
}

impl TaskBuilder {
    /// No name (`Task-N`), lazy start unless the loop was built with eager tasks.
    ///
    /// ```
    /// evloop::run(async {
    ///     let t = evloop::task::TaskBuilder::new().spawn(async {})?; // like evloop::spawn, with an error
    ///     assert!(t.name().starts_with("Task-") && !t.done());
    ///     Ok::<(), evloop::event_loop::LoopError>(())
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
    ///     let t = evloop::task::TaskBuilder::new().name("poller").spawn(async {})?; // create_task(coro, name="poller")
    ///     assert_eq!(t.name(), "poller");
    ///     Ok::<(), evloop::event_loop::LoopError>(())
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
    ///     let lazy = evloop::task::TaskBuilder::new().spawn(async { evloop::task::yield_now().await })?;
    ///     let eager = evloop::task::TaskBuilder::new().eager(true).spawn(async { evloop::task::yield_now().await })?;
    ///     use evloop::event_loop::Awaiting;
    ///     assert_eq!(lazy.awaiting(), Awaiting::Unknown); // not run yet
    ///     assert_eq!(eager.awaiting(), Awaiting::Yield); // its first step already ran
    ///     Ok::<(), evloop::event_loop::LoopError>(())
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
    /// let lp = evloop::event_loop::EventLoop::new()?;
    /// let t = evloop::task::TaskBuilder::new().name("early").spawn_on(&lp, async { 5 })?; // before it runs
    /// assert_eq!(lp.run_until_complete(t)??, 5);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[track_caller]
    pub fn spawn_on<F>(self, lp: &LoopHandle, fut: F) -> Result<Task<F::Output>, LoopError>
    where
        F: Future + 'static,
        F::Output: 'static,
    {
        spawn_on(&lp.inner, fut, self.name, self.eager, Location::caller())
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
        spawn_on(&lp.inner, fut, self.name, self.eager, site)
    }

    /// Creates the task on the loop running on this thread.
    ///
    /// ```
    /// use evloop::{event_loop::LoopErrorKind, task::TaskBuilder};
    ///
    /// let err = TaskBuilder::new().spawn(async {}).unwrap_err(); // an error, where spawn() panics
    /// assert_eq!(err.kind(), LoopErrorKind::NoRunningLoop);
    /// evloop::run(async {
    ///     let t = TaskBuilder::new().spawn(async { 2 })?;
    ///     assert_eq!(t.await.ok(), Some(2));
    ///     Ok::<(), evloop::event_loop::LoopError>(())
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
        spawn_on(&lp.inner, fut, self.name, self.eager, Location::caller())
    }
}

impl LoopHandle {
    /// Wraps `fut` in a task and schedules its first step (asyncio's `create_task`).
    ///
    /// ```
    /// let lp = evloop::event_loop::EventLoop::new()?;
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
        spawn_on(&self.inner, fut, None, None, Location::caller())
    }

    /// Every task of this loop that has not finished (asyncio's `all_tasks()`); from a task,
    /// `get_running_loop()?.all_tasks()`. A method (and no free function) because it is as
    /// useful from outside the loop, between runs, as from its tasks.
    ///
    /// ```
    /// let lp = evloop::event_loop::EventLoop::new()?;
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
            .map(|t| TaskRef::from_ptr(t.clone()))
            .collect()
    }

    /// A multi-line dump of every live task: name, state, what it awaits, where it was created.
    ///
    /// ```
    /// let lp = evloop::event_loop::EventLoop::new()?;
    /// evloop::task::TaskBuilder::new().name("idle").spawn_on(&lp, std::future::pending::<()>())?;
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
                let awaiting = t.awaiting();
                let what = match awaiting.object_of(&AWAITED_TASK) {
                    Some(n) => names
                        .get(&n)
                        .cloned()
                        .unwrap_or_else(|| format!("a finished task (#{n})")),
                    None => awaiting.to_string(),
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
    /// let lp = evloop::event_loop::EventLoop::builder().virtual_clock(true).build()?;
    /// let out = lp.run_until_complete(async {
    ///     evloop::time::sleep(Duration::from_secs(1)).await;
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
        let mut task = spawn_on(&self.inner, fut, None, None, site)?;
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

/// The numbers of a loop's tasks (`Task-N`), from 1: a per-loop counter of the task layer.
static TASK_NUMBERS: CounterKey = CounterKey::new();

/// Creates a task on `lp`: the work of every way of creating one (`create_task`, `spawn`,
/// `TaskBuilder`, `run_until_complete`).
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
    let number = lp.next_count(&TASK_NUMBERS);
    let init = Init {
        owner: lp.id,
        number: number as u32,
        site: lp.site_id(site),
        flags: TaskState::Pending.bits(),
    };
    let task = waker::new_task(fut, init);
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
    Ok(Task::from_ptr(task))
}

/// Spawns `fut` on the loop running on this thread (`asyncio.create_task`).
///
/// # Panics
/// If no evloop loop is running on this thread, or it is closing; use
/// [`LoopHandle::create_task`] or [`TaskBuilder::spawn`] to get an error instead.
///
/// ```
/// use std::time::Duration;
/// use evloop::event_loop::Builder;
///
/// let total = Builder::new().virtual_clock(true).run(async {
///     // Three tasks run concurrently: the whole takes 3 s of loop time, not 6.
///     let tasks: Vec<_> = (1..=3u64)
///         .map(|s| {
///             evloop::spawn(async move {
///                 evloop::time::sleep(Duration::from_secs(s)).await;
///                 s
///             })
///         })
///         .collect();
///     let mut total = 0;
///     for t in tasks {
///         total += t.await?;
///     }
///     Ok::<_, evloop::task::TaskError>(total)
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

/// The task running right now on this thread's loop (`evloop::task::current_task()`).
///
/// ```
/// assert!(evloop::task::current_task().is_none()); // no loop runs here
/// evloop::run(async {
///     let me = evloop::task::current_task().expect("inside a task");
///     assert!(me.name().starts_with("Task-"));
/// })?;
/// # Ok::<(), evloop::task::RunError>(())
/// ```
pub fn current_task() -> Option<TaskRef> {
    with_running(|lp| lp.current.get().map(TaskRef::from_ptr)).flatten()
}

/// The task running right now on `lp` (none between steps, or when `lp` is not running).
pub(crate) fn current_task_on(lp: &LoopHandle) -> Option<TaskRef> {
    lp.inner.current.get().map(TaskRef::from_ptr)
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
/// assert!(evloop::run(async { evloop::event_loop::get_running_loop().map(|lp| lp.is_running()) })??);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[track_caller]
pub fn run<F>(fut: F) -> Result<F::Output, RunError>
where
    F: Future + 'static,
    F::Output: 'static,
{
    Builder::new().run(fut)
}

// The loop layer's `Builder` gets its `run` here, where tasks exist (as `LoopHandle` gets the
// methods of the layers above it).
impl Builder {
    /// [`run`](crate::run) with a configured loop (trace mode, a virtual clock, ...):
    /// `asyncio.run(main, debug=...)`.
    ///
    /// ```
    /// use std::time::{Duration, Instant};
    /// use evloop::event_loop::Builder;
    ///
    /// let started = Instant::now();
    /// Builder::new().virtual_clock(true).run(async {
    ///     evloop::time::sleep(Duration::from_secs(3600)).await; // an hour of loop time ...
    /// })?;
    /// assert!(started.elapsed() < Duration::from_secs(3600)); // ... passes at once
    /// # Ok::<(), evloop::task::RunError>(())
    /// ```
    #[track_caller]
    pub fn run<F>(self, fut: F) -> Result<F::Output, RunError>
    where
        F: Future + 'static,
        F::Output: 'static,
    {
        let lp: EventLoop = self.build()?;
        let result = lp.run_until_complete(fut);
        cancel_leftover_tasks(&lp);
        lp.shutdown_default_executor();
        lp.close()?;
        result
    }
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
