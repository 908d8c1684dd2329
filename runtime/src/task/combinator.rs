//! Waiting on several things at once: `gather`, `try_gather`, `wait`, `as_completed`,
//! `select` / `race` and `shield` (asyncio's `gather`, `wait`, `as_completed`, `shield`).
//!
//! # Futures versus tasks
//! asyncio wraps every coroutine it is given in a task. Here the combinators take any futures
//! and poll them *in place*, inside the task that awaits the combinator: no task is created, and
//! dropping the combinator drops them (that is their cancellation). To run something
//! concurrently *and independently*, spawn it and pass the [`Task`] handle: a handle is itself a
//! future, and dropping a handle detaches the task rather than cancelling it. So
//! `try_gather(vec_of_tasks)` failing fast leaves the other tasks running (asyncio's
//! `gather` does the same), while `try_gather(vec_of_futures)` cancels the others.
//!
//! Each combinator polls its children when it is polled and parks the task's one waker in all
//! of them; a wake from any child steps the task, which polls the children again. Polling a
//! child that is not ready is cheap (a flag check), so this stays simple for the sizes these
//! combinators are used with.

use std::fmt;
use std::future::{Future, poll_fn};
use std::pin::{Pin, pin};
use std::task::{Context, Poll};
use std::time::Duration;

use crate::task::error::TaskError;
use crate::task::time::sleep;
use crate::task::{Task, TaskState};

/// A child future and, once it finished, its output.
struct Slot<F: Future> {
    fut: Option<Pin<Box<F>>>,
    out: Option<F::Output>,
}

// A slot is never structurally pinned: the child future lives in its own `Pin<Box>` and the
// output is only moved out, never pinned, so moving a slot is always fine.
impl<F: Future> Unpin for Slot<F> {}

impl<F: Future> Slot<F> {
    fn new(fut: F) -> Self {
        Slot {
            fut: Some(Box::pin(fut)),
            out: None,
        }
    }

    /// Polls the child if it is still running; true once it has an output.
    fn poll_done(&mut self, cx: &mut Context<'_>) -> bool {
        if let Some(f) = self.fut.as_mut() {
            if let Poll::Ready(v) = f.as_mut().poll(cx) {
                self.out = Some(v);
                self.fut = None;
            }
        }
        self.fut.is_none()
    }

    fn take(&mut self) -> Option<F::Output> {
        self.out.take()
    }
}

/// Things [`gather`] accepts: a `Vec` of futures or a tuple of up to six futures.
///
/// ```
/// // A tuple of futures of different types, up to six ...
/// let (n, s) = evloop::run(evloop::task::gather((async { 1 }, async { "one" })))?;
/// assert_eq!((n, s), (1, "one"));
/// // ... or a `Vec` of futures of one type, any number of them.
/// let squares = evloop::run(evloop::task::gather((1..=4).map(|i| async move { i * i }).collect::<Vec<_>>()))?;
/// assert_eq!(squares, [1, 4, 9, 16]);
/// # Ok::<(), evloop::task::RunError>(())
/// ```
pub trait Gather {
    /// What the gathered future gives: a `Vec` or a tuple of the outputs, in input order.
    type Output;
    /// The future that polls them all.
    type Future: Future<Output = Self::Output>;
    /// Starts gathering.
    fn into_gather(self) -> Self::Future;
}

/// Runs every future to completion, concurrently inside the awaiting task, and gives their
/// outputs in input order (asyncio's `gather`; with `Result` outputs this is its
/// `return_exceptions=True` mode: every result, errors included). Accepts a `Vec` or a tuple.
///
/// ```
/// # evloop::run(async {
/// let (a, b) = evloop::task::gather((async { 1 }, async { "two" })).await;
/// async fn double(x: u32) -> u32 { x * 2 }
/// let all = evloop::task::gather(vec![double(1), double(2)]).await; // one future type per Vec
/// # let all: Vec<u32> = all.into_iter().map(|x| x / 2).collect();
/// assert_eq!((a, b, all), (1, "two", vec![1, 2]));
/// # }).unwrap();
/// ```
pub fn gather<G: Gather>(g: G) -> G::Future {
    g.into_gather()
}

/// The future of [`gather`] over a `Vec`.
#[must_use = "futures do nothing unless you `.await` or poll them"]
pub struct GatherVec<F: Future> {
    slots: Vec<Slot<F>>,
}

impl<F: Future> Future for GatherVec<F> {
    type Output = Vec<F::Output>;
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.get_mut();
        let mut all = true;
        for s in this.slots.iter_mut() {
            all &= s.poll_done(cx);
        }
        if !all {
            return Poll::Pending;
        }
        Poll::Ready(this.slots.iter_mut().filter_map(Slot::take).collect())
    }
}

impl<F: Future> Gather for Vec<F> {
    type Output = Vec<F::Output>;
    type Future = GatherVec<F>;
    fn into_gather(self) -> GatherVec<F> {
        GatherVec {
            slots: self.into_iter().map(Slot::new).collect(),
        }
    }
}

macro_rules! gather_tuple {
    ($name:ident, $tryname:ident; $($f:ident $t:ident $i:tt),+) => {
        /// The future of [`gather`] over a tuple.
        #[must_use = "futures do nothing unless you `.await` or poll them"]
        pub struct $name<$($f: Future),+> {
            slots: ($(Slot<$f>,)+),
        }

        impl<$($f: Future),+> Future for $name<$($f),+> {
            type Output = ($($f::Output,)+);
            // The bindings reuse the type parameters' names: one identifier list in the macro.
            #[allow(non_snake_case)]
            fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
                let this = self.get_mut();
                let mut all = true;
                $( all &= this.slots.$i.poll_done(cx); )+
                if !all {
                    return Poll::Pending;
                }
                match ($(this.slots.$i.take(),)+) {
                    ($(Some($f),)+) => Poll::Ready(($($f,)+)),
                    _ => Poll::Pending,
                }
            }
        }

        impl<$($f: Future),+> Gather for ($($f,)+) {
            type Output = ($($f::Output,)+);
            type Future = $name<$($f),+>;
            fn into_gather(self) -> Self::Future {
                $name { slots: ($(Slot::new(self.$i),)+) }
            }
        }

        /// The future of [`try_gather`] over a tuple.
        #[must_use = "futures do nothing unless you `.await` or poll them"]
        pub struct $tryname<E, $($f: Future),+> {
            slots: ($(Slot<$f>,)+),
            _e: std::marker::PhantomData<fn() -> E>,
        }

        impl<E, $($t,)+ $($f: Future<Output = Result<$t, E>>),+> Future for $tryname<E, $($f),+> {
            type Output = Result<($($t,)+), E>;
            #[allow(non_snake_case)]
            fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
                let this = self.get_mut();
                let mut all = true;
                $(
                    if this.slots.$i.poll_done(cx) {
                        if matches!(this.slots.$i.out, Some(Err(_))) {
                            if let Some(Err(e)) = this.slots.$i.take() {
                                return Poll::Ready(Err(e));
                            }
                        }
                    } else {
                        all = false;
                    }
                )+
                if !all {
                    return Poll::Pending;
                }
                match ($(this.slots.$i.take(),)+) {
                    ($(Some(Ok($f)),)+) => Poll::Ready(Ok(($($f,)+))),
                    _ => Poll::Pending,
                }
            }
        }

        impl<E, $($t,)+ $($f: Future<Output = Result<$t, E>>),+> TryGather for ($($f,)+) {
            type Output = Result<($($t,)+), E>;
            type Future = $tryname<E, $($f),+>;
            fn into_try_gather(self) -> Self::Future {
                $tryname { slots: ($(Slot::new(self.$i),)+), _e: std::marker::PhantomData }
            }
        }
    };
}

gather_tuple!(Gather2, TryGather2; A TA 0, B TB 1);
gather_tuple!(Gather3, TryGather3; A TA 0, B TB 1, C TC 2);
gather_tuple!(Gather4, TryGather4; A TA 0, B TB 1, C TC 2, D TD 3);
gather_tuple!(Gather5, TryGather5; A TA 0, B TB 1, C TC 2, D TD 3, E2 TE 4);
gather_tuple!(Gather6, TryGather6; A TA 0, B TB 1, C TC 2, D TD 3, E2 TE 4, F TF 5);

/// Things [`try_gather`] accepts: a `Vec` or a tuple of futures giving `Result`s with one
/// error type.
///
/// ```
/// use std::num::ParseIntError;
///
/// async fn parse(s: &str) -> Result<u32, ParseIntError> {
///     s.parse()
/// }
///
/// let pair = evloop::run(evloop::task::try_gather((parse("1"), parse("2"))))?;
/// assert_eq!(pair, Ok((1, 2)));
/// let all = evloop::run(evloop::task::try_gather(vec![parse("3"), parse("four")]))?;
/// assert!(all.is_err()); // the first error
/// # Ok::<(), evloop::task::RunError>(())
/// ```
pub trait TryGather {
    /// `Ok` of every value in input order, or the first error.
    type Output;
    /// The future that polls them all.
    type Future: Future<Output = Self::Output>;
    /// Starts gathering.
    fn into_try_gather(self) -> Self::Future;
}

/// Like [`gather`] for futures that give `Result`s, failing fast: the first `Err` (in the order
/// the futures finish) is returned at once and the futures still running are dropped
/// (cancelled); tasks passed by handle are detached, not cancelled.
///
/// ```
/// use std::time::Duration;
/// use evloop::event_loop::Builder;
///
/// Builder::new().virtual_clock(true).run(async {
///     let fails = async { Err::<u32, &str>("refused") };
///     let slow = async {
///         evloop::time::sleep(Duration::from_secs(60)).await;
///         Ok(1)
///     };
///     // The error comes back at once; `slow` is dropped (cancelled), not waited for.
///     assert_eq!(evloop::task::try_gather((fails, slow)).await, Err("refused"));
///     assert_eq!(evloop::event_loop::get_running_loop()?.stats().timers, 0);
///     Ok::<(), evloop::event_loop::LoopError>(())
/// })??;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn try_gather<G: TryGather>(g: G) -> G::Future {
    g.into_try_gather()
}

/// The future of [`try_gather`] over a `Vec`.
#[must_use = "futures do nothing unless you `.await` or poll them"]
pub struct TryGatherVec<F: Future> {
    slots: Vec<Slot<F>>,
}

impl<T, E, F: Future<Output = Result<T, E>>> Future for TryGatherVec<F> {
    type Output = Result<Vec<T>, E>;
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.get_mut();
        let mut all = true;
        for s in this.slots.iter_mut() {
            if s.poll_done(cx) {
                if matches!(s.out, Some(Err(_))) {
                    if let Some(Err(e)) = s.take() {
                        return Poll::Ready(Err(e));
                    }
                }
            } else {
                all = false;
            }
        }
        if !all {
            return Poll::Pending;
        }
        let mut out = Vec::with_capacity(this.slots.len());
        for s in this.slots.iter_mut() {
            match s.take() {
                Some(Ok(v)) => out.push(v),
                Some(Err(e)) => return Poll::Ready(Err(e)),
                None => return Poll::Pending,
            }
        }
        Poll::Ready(Ok(out))
    }
}

impl<T, E, F: Future<Output = Result<T, E>>> TryGather for Vec<F> {
    type Output = Result<Vec<T>, E>;
    type Future = TryGatherVec<F>;
    fn into_try_gather(self) -> TryGatherVec<F> {
        TryGatherVec {
            slots: self.into_iter().map(Slot::new).collect(),
        }
    }
}

// ---------------------------------------------------------------------------------------------
// wait and as_completed: over task handles.

/// When [`wait`] returns (asyncio's `FIRST_COMPLETED`, `FIRST_EXCEPTION`, `ALL_COMPLETED`).
///
/// ```
/// use std::time::Duration;
/// use evloop::{event_loop::Builder, task::ReturnWhen};
///
/// Builder::new().virtual_clock(true).run(async {
///     let tasks = vec![
///         evloop::spawn(async { 1 }),
///         evloop::spawn(async {
///             evloop::time::sleep(Duration::from_secs(60)).await;
///             2
///         }),
///     ];
///     // ALL_COMPLETED, bounded by a timeout: no error, the slow task is simply still pending.
///     let (done, pending) = evloop::task::wait(tasks, ReturnWhen::AllCompleted, Some(Duration::from_secs(1))).await;
///     assert_eq!((done.len(), pending.len()), (1, 1));
/// })?;
/// # Ok::<(), evloop::task::RunError>(())
/// ```
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum ReturnWhen {
    /// As soon as any task finishes.
    FirstCompleted,
    /// As soon as any task fails (panics), or when all have finished. As in asyncio, a
    /// cancelled task is not a failure.
    FirstException,
    /// When every task has finished.
    AllCompleted,
}

/// Waits for tasks (asyncio's `wait`): returns `(done, pending)` once `when` is satisfied or the
/// timeout expires (no error on timeout: check `pending`). Each set keeps the input order; no
/// task is cancelled, and results stay in the handles.
///
/// ```
/// use std::time::Duration;
/// use evloop::{event_loop::Builder, task::ReturnWhen};
///
/// Builder::new().virtual_clock(true).run(async {
///     let quick = evloop::spawn(async { "quick" });
///     let slow = evloop::spawn(async {
///         evloop::time::sleep(Duration::from_secs(60)).await;
///         "slow"
///     });
///     let (done, pending) = evloop::task::wait(vec![quick, slow], ReturnWhen::FirstCompleted, None).await;
///     assert_eq!((done.len(), pending.len()), (1, 1));
///     // Nothing was cancelled: the results stay in the handles.
///     for t in done {
///         assert_eq!(t.await?, "quick");
///     }
///     for t in pending {
///         assert_eq!(t.await?, "slow");
///     }
///     Ok::<(), evloop::task::TaskError>(())
/// })??;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub async fn wait<T: 'static>(
    tasks: Vec<Task<T>>,
    when: ReturnWhen,
    timeout: Option<Duration>,
) -> (Vec<Task<T>>, Vec<Task<T>>) {
    let mut tasks = tasks;
    let mut timer = timeout.map(sleep);
    poll_fn(|cx| {
        let mut done = 0;
        let mut failed = false;
        for t in tasks.iter_mut() {
            if t.poll_done(cx).is_ready() {
                done += 1;
                failed |= t.state() == TaskState::Failed;
            }
        }
        let satisfied = match when {
            ReturnWhen::FirstCompleted => done > 0,
            ReturnWhen::FirstException => failed || done == tasks.len(),
            ReturnWhen::AllCompleted => done == tasks.len(),
        };
        if satisfied || tasks.is_empty() {
            return Poll::Ready(());
        }
        if let Some(t) = timer.as_mut() {
            if Pin::new(t).poll(cx).is_ready() {
                return Poll::Ready(());
            }
        }
        Poll::Pending
    })
    .await;
    tasks.into_iter().partition(|t| t.done())
}

/// Yields task results in the order the tasks finish (asyncio's `as_completed`).
///
/// ```
/// # evloop::event_loop::Builder::new().virtual_clock(true).run(async {
/// use std::time::Duration;
/// let slow = evloop::spawn(async { evloop::time::sleep(Duration::from_secs(20)).await; "slow" });
/// let fast = evloop::spawn(async { "fast" });
/// let mut results = evloop::task::as_completed(vec![slow, fast]);
/// assert_eq!(results.next().await.unwrap().unwrap(), "fast");
/// assert_eq!(results.next().await.unwrap().unwrap(), "slow");
/// assert!(results.next().await.is_none());
/// # }).unwrap();
/// ```
pub fn as_completed<T: 'static>(tasks: Vec<Task<T>>) -> AsCompleted<T> {
    AsCompleted { tasks }
}

/// The stream of [`as_completed`]: call [`AsCompleted::next`] until it gives `None`.
///
/// ```
/// use std::time::Duration;
/// use evloop::event_loop::Builder;
///
/// let order = Builder::new().virtual_clock(true).run(async {
///     let tasks = [3u64, 1, 2]
///         .into_iter()
///         .map(|s| {
///             evloop::spawn(async move {
///                 evloop::time::sleep(Duration::from_secs(s)).await;
///                 s
///             })
///         })
///         .collect();
///     let mut finished = evloop::task::as_completed(tasks);
///     let mut order = Vec::new();
///     while let Some(r) = finished.next().await {
///         order.push(r?);
///     }
///     Ok::<_, evloop::task::TaskError>(order)
/// })??;
/// assert_eq!(order, [1, 2, 3]);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct AsCompleted<T: 'static> {
    tasks: Vec<Task<T>>,
}

impl<T: 'static> AsCompleted<T> {
    /// The next task to finish, with its result; `None` when every task has been returned.
    ///
    /// ```
    /// evloop::run(async {
    ///     let mut finished = evloop::task::as_completed(vec![evloop::spawn(async { 'a' })]);
    ///     assert_eq!(finished.next().await.map(Result::ok), Some(Some('a')));
    ///     assert!(finished.next().await.is_none()); // every task was returned
    /// })?;
    /// # Ok::<(), evloop::task::RunError>(())
    /// ```
    pub async fn next(&mut self) -> Option<Result<T, TaskError>> {
        if self.tasks.is_empty() {
            return None;
        }
        let index = poll_fn(|cx| {
            for (i, t) in self.tasks.iter_mut().enumerate() {
                if t.poll_done(cx).is_ready() {
                    return Poll::Ready(i);
                }
            }
            Poll::Pending
        })
        .await;
        let task = self.tasks.remove(index);
        Some(task.await)
    }

    /// Tasks not returned yet.
    ///
    /// ```
    /// evloop::run(async {
    ///     let tasks = vec![evloop::spawn(async { 1 }), evloop::spawn(async { 2 })];
    ///     let mut finished = evloop::task::as_completed(tasks);
    ///     assert_eq!(finished.remaining(), 2);
    ///     let _first = finished.next().await;
    ///     assert_eq!(finished.remaining(), 1);
    /// })?;
    /// # Ok::<(), evloop::task::RunError>(())
    /// ```
    pub fn remaining(&self) -> usize {
        self.tasks.len()
    }
}

impl<T: 'static> fmt::Debug for AsCompleted<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "AsCompleted {{ remaining: {} }}", self.tasks.len())
    }
}

// ---------------------------------------------------------------------------------------------
// select / race.

/// The output of [`select`]: which future finished first, with its output.
///
/// ```
/// use evloop::task::Either;
///
/// let first = evloop::run(evloop::task::select(std::future::pending::<()>(), async { 5 }))?;
/// match first {
///     Either::Left(()) => unreachable!("pending never finishes"),
///     Either::Right(n) => assert_eq!(n, 5),
/// }
/// # Ok::<(), evloop::task::RunError>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Either<A, B> {
    /// The first future won.
    Left(A),
    /// The second future won.
    Right(B),
}

/// Polls both futures and returns the first output; the other future is dropped (cancelled).
/// The first argument is polled first, so it wins a tie.
///
/// ```
/// use std::time::Duration;
/// use evloop::{event_loop::Builder, task::Either};
///
/// Builder::new().virtual_clock(true).run(async {
///     let (tx, rx) = evloop::sync::oneshot::<&str>();
///     evloop::spawn(async move {
///         evloop::time::sleep(Duration::from_secs(1)).await;
///         let _ = tx.send("reply");
///     });
///     // Whichever finishes first; the other future is dropped.
///     match evloop::task::select(rx, evloop::time::sleep(Duration::from_secs(5))).await {
///         Either::Left(reply) => assert_eq!(reply, Ok("reply")),
///         Either::Right(()) => unreachable!("the reply comes after 1 s"),
///     }
/// })?;
/// # Ok::<(), evloop::task::RunError>(())
/// ```
pub async fn select<A: Future, B: Future>(a: A, b: B) -> Either<A::Output, B::Output> {
    let mut a = pin!(a);
    let mut b = pin!(b);
    poll_fn(|cx| {
        if let Poll::Ready(v) = a.as_mut().poll(cx) {
            return Poll::Ready(Either::Left(v));
        }
        if let Poll::Ready(v) = b.as_mut().poll(cx) {
            return Poll::Ready(Either::Right(v));
        }
        Poll::Pending
    })
    .await
}

/// [`select`] for two futures with the same output: the first one's output.
///
/// ```
/// use std::time::Duration;
/// use evloop::event_loop::Builder;
///
/// let first = Builder::new().virtual_clock(true).run(async {
///     let slow = async {
///         evloop::time::sleep(Duration::from_secs(2)).await;
///         "slow"
///     };
///     let fast = async {
///         evloop::time::sleep(Duration::from_secs(1)).await;
///         "fast"
///     };
///     evloop::task::race(slow, fast).await
/// })?;
/// assert_eq!(first, "fast");
/// # Ok::<(), evloop::task::RunError>(())
/// ```
pub async fn race<T>(a: impl Future<Output = T>, b: impl Future<Output = T>) -> T {
    match select(a, b).await {
        Either::Left(v) | Either::Right(v) => v,
    }
}

// ---------------------------------------------------------------------------------------------
// shield and timeout_at.

/// Awaits a task through a shield (asyncio's `shield`): if the awaiting task is cancelled, the
/// shield is dropped and the task keeps running (detached). In evloop dropping a [`Task`]
/// handle never cancels the task anyway; the shield says so in the code, and
/// [`shield_future`] gives the same protection to a plain future.
///
/// ```
/// use std::time::Duration;
/// use evloop::event_loop::Builder;
///
/// Builder::new().virtual_clock(true).run(async {
///     let work = evloop::spawn(async {
///         evloop::time::sleep(Duration::from_secs(2)).await;
///         "saved"
///     });
///     let watch = work.task_ref();
///     // The wait gives up after 1 s; the shield is dropped, the task is not cancelled.
///     assert!(evloop::time::timeout(Duration::from_secs(1), evloop::task::shield(work)).await.is_err());
///     evloop::time::sleep(Duration::from_secs(2)).await;
///     assert!(watch.done() && !watch.cancelled());
/// })?;
/// # Ok::<(), evloop::task::RunError>(())
/// ```
pub fn shield<T: 'static>(task: Task<T>) -> Shield<T> {
    Shield { task }
}

/// Runs `fut` as its own task on the running loop and awaits it through a [`Shield`]:
/// cancelling the awaiter does not cancel the work.
///
/// # Panics
/// If no evloop loop is running on this thread (as [`crate::spawn`]).
///
/// ```
/// use std::cell::Cell;
/// use std::rc::Rc;
/// use std::time::Duration;
/// use evloop::event_loop::Builder;
///
/// Builder::new().virtual_clock(true).run(async {
///     let saved = Rc::new(Cell::new(false));
///     let flag = saved.clone();
///     let work = async move {
///         evloop::time::sleep(Duration::from_secs(2)).await;
///         flag.set(true);
///     };
///     // The future runs as its own task: giving up the wait does not cancel it.
///     assert!(evloop::time::timeout(Duration::from_secs(1), evloop::task::shield_future(work)).await.is_err());
///     evloop::time::sleep(Duration::from_secs(2)).await;
///     assert!(saved.get());
/// })?;
/// # Ok::<(), evloop::task::RunError>(())
/// ```
#[track_caller]
pub fn shield_future<F>(fut: F) -> Shield<F::Output>
where
    F: Future + 'static,
    F::Output: 'static,
{
    shield(crate::task::spawn::spawn(fut))
}

/// The future of [`shield`]: the task's result; dropping it leaves the task running.
///
/// ```
/// let v = evloop::run(async {
///     let task = evloop::spawn(async { 40 + 2 });
///     evloop::task::shield(task).await // the task's result, like awaiting it directly
/// })??;
/// assert_eq!(v, 42);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[must_use = "futures do nothing unless you `.await` or poll them"]
pub struct Shield<T: 'static> {
    task: Task<T>,
}

impl<T: 'static> Shield<T> {
    /// The shielded task.
    ///
    /// ```
    /// evloop::run(async {
    ///     let task = evloop::task::TaskBuilder::new().name("worker").spawn(async {})?;
    ///     let shielded = evloop::task::shield(task);
    ///     assert_eq!(shielded.task().name(), "worker");
    ///     shielded.await?;
    ///     Ok::<(), Box<dyn std::error::Error>>(())
    /// })??;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn task(&self) -> &Task<T> {
        &self.task
    }
}

impl<T: 'static> Future for Shield<T> {
    type Output = Result<T, TaskError>;
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        Pin::new(&mut self.get_mut().task).poll(cx)
    }
}

impl<T: 'static> fmt::Debug for Shield<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Shield({:?})", self.task)
    }
}
