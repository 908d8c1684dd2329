//! Tasks: futures the loop drives to completion (asyncio's `Task`).
//!
//! # Life of a task
//! `create_task(fut)` moves the future into a raw task cell (`event_loop::raw_task`: one
//! allocation holding a small header and the future), inserts it into the loop's task table (the
//! loop holds it strongly until it finishes) and queues its first step with the same ready queue
//! `call_soon` uses. A step (`step.rs`) polls the future once with the task's waker; this is
//! `Task.__step` in asyncio. The future returns `Pending` after arranging for that waker to be
//! woken (a promise stores it, a timer stores it, a socket stores it); the wake pushes the task
//! onto the ready queue again (`Task.__wakeup`), and so on until the future returns `Ready`. Then
//! the task finishes: its output stays in the cell for the [`Task`] handle, the handle's waker is
//! woken, done callbacks are scheduled with `call_soon`, and the loop lets go of it.
//!
//! This layer holds the policy (states, results, cancellation, failures, done callbacks); the
//! cell's memory, reference count, stage and waker are the mechanism in `raw_task`, which this
//! layer reaches only through its safe API. The states and transitions of both are listed in one
//! table, in `raw_task`'s module documentation.
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
//! Tasks: their state and its transitions (`state`: [`TaskState`]), the step and what follows a
//! task's end (`step`), the handles (`handle`: [`Task`], [`TaskRef`]) and creating and running
//! them (`spawn`: [`TaskBuilder`], [`spawn`](crate::spawn), [`run`](crate::run)); their errors (`error`: `TaskError`,
//! `RunError`, and the promise's `PromiseError` and `InvalidStateError`); [`yield_now`]
//! (`yield_now`); promises (`promise`), time (`time`: `sleep`, `timeout`, `timeout_at`; `instant`:
//! the loop's `Instant`; `interval`: `Interval`, `MissedTickBehavior`; `pause`: tokio's `pause`,
//! `resume` and `advance` of the loop's clock), asyncio's
//! timeout object (`timeouts`: `Timeout`, `TimeoutHandle`), `Runner` (`runner`), the task tree
//! (`tree`: who awaits whom, deadlocks), the combinators that wait on several futures or tasks at
//! once (`combinator`: `gather`, `wait`, `as_completed`, `select`, `shield`), structured
//! concurrency (`group`: `TaskGroup`), tokio's set of tasks joined as they finish (`join_set`:
//! `JoinSet`) and its task-local values (`task_local`: `task_local!`, `LocalKey`): the futures the loop drives, built on `event_loop/` only;
//! `pin` holds tokio's [`pin!`](crate::pin!) for polling them by reference.
//! The `Stream` trait and its combinators (`stream/`) sit here too, beside the timers their
//! `timeout` and interval adapter need. `io/`, `sync/` and `os/` build on them. `evloop::time`
//! re-exports `time`, `timeouts`, `instant`, `interval` and `pause`, `evloop::stream` re-exports `stream`;
//! this module (`evloop::task`) re-exports the rest.

mod block_on;
pub(crate) mod combinator;
pub(crate) mod error;
pub(crate) mod group;
mod handle;
pub(crate) mod instant;
pub(crate) mod interval;
mod join_set;
pub(crate) mod pause;
mod pin;
pub(crate) mod promise;
pub(crate) mod runner;
pub(crate) mod spawn;
mod state;
mod step;
pub(crate) mod stream;
mod task_local;
pub(crate) mod time;
pub(crate) mod timeouts;
pub(crate) mod tree;
mod yield_now;

pub use block_on::block_on;
pub use handle::{Task, TaskRef};
pub use join_set::JoinSet;
pub(crate) use spawn::cancel_leftover_tasks;
pub use spawn::{TaskBuilder, current_task};
pub use state::TaskState;
pub use task_local::{AccessError, LocalKey, TaskLocalFuture};
pub use yield_now::{YieldNow, consume_budget, yield_now};

pub use self::combinator::{
    AsCompleted, Either, Gather, GatherVec, ReturnWhen, Shield, TryGather, TryGatherVec, as_completed, gather, race,
    select, shield, shield_future, try_gather, wait,
};
pub use self::error::{InvalidStateError, PromiseError, RunError, TaskError};
pub use self::group::{ChildError, GroupError, TaskGroup};
pub use self::promise::{Promise, PromiseFuture};
pub use self::runner::Runner;
pub use self::tree::{TaskNode, TaskTree};
