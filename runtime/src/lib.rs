//! # evloop
//!
//! Python asyncio's event loop rebuilt from scratch in Rust on raw Linux syscalls: an epoll
//! reactor, a min-heap timer queue behind `call_at`/`call_later`, a `call_soon` ready queue,
//! promises (asyncio's `Future`) and tasks driven by wakers and done-callback chains. No
//! third-party async crates; the only dependencies are this workspace's `evloop-syscalls` (every
//! line of unsafe code is there) and `evloop-timers`.
//!
//! ```
//! use std::time::Duration;
//!
//! async fn f() -> u32 {
//!     evloop::sleep(Duration::from_millis(5)).await;
//!     10
//! }
//!
//! assert_eq!(evloop::run(f()).unwrap(), 10); // asyncio.run(f())
//! ```
//!
//! ## Map of the crate
//! Dependencies point one way, from the user's API down to the kernel:
//!
//! | layer | modules |
//! |---|---|
//! | user API | [`stream`] (open_connection, start_server), `protocol` (Protocol, Transport, Server), `datagram`, [`net`] (TCP/UDP/Unix sockets, `sock_*`, DNS), `io` (AsyncFd, AsyncRead/AsyncWrite), [`process`] (subprocesses through pidfds), [`pipe`] (async pipe ends, pipe transports), `time` ([`sleep`], [`timeout`], [`yield_now`]) |
//! | coordination | [`sync`] (Event, Lock, Mutex, Semaphore, Condition, Barrier), [`queue`], [`channel`] (oneshot, mpsc, threadsafe), `combinator` ([`gather`], [`wait`], [`as_completed`], [`select`], [`shield`]), `group` ([`TaskGroup`]) |
//! | tasks and promises | `task` ([`spawn`], [`run`]), `promise` |
//! | the loop | `event_loop` (the five phases, handles to the loop), `waker` |
//! | mechanisms | `reactor` (epoll: level-triggered fd callbacks, edge-triggered socket registrations), `handle` (callbacks), `clock`, `executor` (thread pool), `trace` |
//! | kernel | the `evloop-syscalls` crate; the timer heap is the `evloop-timers` crate |
//!
//! The loop knows tasks only through a small trait (`Steppable`) that the task module
//! implements, so it never depends on the code above it.
//!
//! ## Behaviour
//! asyncio's semantics (see `docs/` for the mechanisms with traces of real runs):
//! `call_soon` is FIFO and a callback scheduled by a running callback waits for the next
//! iteration; timers never fire early and equal deadlines run in scheduling order; a task's first
//! step is scheduled with `call_soon`; done callbacks are scheduled, never run inline; a panic in
//! a callback or task is caught and reported, and the loop keeps running. Where asyncio has a
//! known footgun evloop fixes it: the loop holds tasks strongly, timers are exact to the
//! nanosecond with `epoll_pwait2`, and a task that keeps waking itself runs once per iteration.

#![forbid(unsafe_code)]
#![deny(missing_docs)]

pub mod channel;
mod clock;
mod combinator;
mod datagram;
mod error;
mod event_loop;
mod executor;
mod group;
mod handle;
mod io;
pub mod net;
pub mod pipe;
pub mod process;
mod promise;
mod protocol;
pub mod queue;
mod reactor;
pub mod signal;
mod slab;
pub mod stream;
pub mod sync;
mod task;
mod time;
mod trace;
mod waker;

pub use combinator::{
    as_completed, gather, race, select, shield, shield_future, timeout_at, try_gather, wait, AsCompleted, Either,
    Gather, ReturnWhen, Shield, TryGather,
};
pub use datagram::{
    DatagramDropped, DatagramOptions, DatagramProtocol, DatagramTransport, DEFAULT_DATAGRAM_QUEUE_LIMIT,
};
pub use error::{
    os_error, InvalidStateError, LoopError, LoopErrorKind, OpError, Panic, PromiseError, RunError, TaskError,
};
pub use event_loop::{
    default_exception_handler, get_running_loop, BoxedExceptionHandler, Builder, EventLoop, ExceptionContext,
    ExceptionKind, LoopHandle, LoopStats, RemoteHandle,
};
pub use executor::{ExecutorError, ExecutorJob};
pub use group::{ChildError, GroupError, TaskGroup};
pub use handle::{CallbackId, Handle, TimerHandle};
pub use io::{AsyncFd, AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, Interest};
pub use promise::{Promise, PromiseFuture};
pub use protocol::{Protocol, Server, Transport, DEFAULT_HIGH_WATER};
pub use queue::{Queue, QueueShutDown, TaskDoneError, TryGetError, TryPutError};
pub use stream::{
    open_connection, open_connection_with, open_unix_connection, open_unix_connection_with, start_server,
    start_server_with, start_unix_server, start_unix_server_with, StreamConfig, StreamError, StreamReader,
    StreamWriter,
};
pub use sync::{
    Barrier, BoundedSemaphore, Condition, Event, Lock, LockGuard, Mutex, MutexGuard, Semaphore, SemaphorePermit,
    SyncError, SyncOp,
};
pub use task::{all_tasks, current_task, run, run_with, spawn, Task, TaskBuilder, TaskRef, TaskState};
pub use time::{sleep, sleep_until, timeout, yield_now, Elapsed, Sleep, YieldNow};
pub use trace::{Awaiting, QueueOp};

/// The syscall layer, re-exported so users can read the per-thread call counters
/// (`evloop::sys::counters::snapshot()`) without another dependency.
pub use evloop_syscalls as sys;
