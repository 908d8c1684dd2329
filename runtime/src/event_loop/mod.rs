//! The event loop: asyncio's `BaseEventLoop`, one iteration at a time.
//!
//! # One iteration (asyncio's `_run_once`)
//! `LoopInner::run_once` runs five phases, each a method named after it:
//! 1. `drop_cancelled_timers`: timers cancelled since the
//!    last iteration leave the heap (a cancel only flags the handle and records its id, so the
//!    heap never accumulates garbage beyond one iteration's worth).
//! 2. `compute_poll_timeout`: zero if anything is ready or a
//!    stop is pending; else the time to the earliest timer (exact to the nanosecond, so no timer
//!    fires early); else block.
//! 3. `poll`: `epoll_pwait2` through the reactor. Each fd event becomes a
//!    ready callback; the wake-up eventfd means other threads left work in the remote queue
//!    (task wakes, `call_soon_threadsafe` callbacks, `stop`), which moves to the ready queue.
//! 4. `expire_timers`: every timer with deadline <= now, earliest
//!    first and FIFO among equals, moves to the ready queue (a sleeping task's timer wakes it).
//! 5. `run_ready`: runs exactly the handles that were ready when the phase
//!    began; whatever they schedule waits for the next iteration. This is the only place user
//!    callbacks and task steps run, and no `RefCell` of the loop is borrowed while they do.
//!
//! # Ownership
//! [`EventLoop`] owns a loop: dropping it closes the loop. [`LoopHandle`] is a cheap clone that
//! tasks and callbacks keep (`get_running_loop()` returns one); it can reach a closed loop, and
//! then every operation returns a "closed" error. Closing drops every task's future, every
//! callback and timer, deregisters every fd and closes the loop's own fds, which breaks the
//! reference cycles between the loop and the tasks it holds.
//!
//! # Threads
//! The loop and everything it holds live on one thread (`Rc`, `RefCell`). The only thread-safe
//! part is `Shared`: the remote queue and the wake-up eventfd, reached through
//! [`RemoteHandle`] and through task wakers.
//!
//! # The `event_loop/` folder (layer 1, just above the syscalls and timers crates)
//! This file only declares the folder's modules and re-exports what the other layers use. The
//! loop itself:
//! - `inner`: `LoopInner`, the state one loop owns, and the small operations on it
//!   (ready queue, timers, tracing); `Ready`, `TimerEntry`, `TaskHooks`, `DeferredFlush`;
//! - `phases`: `run_once` and its five phases;
//! - `builder`: [`Builder`], the options, and the creation of a loop;
//! - `loop_handle`: [`EventLoop`], [`LoopHandle`], [`LoopStats`]; the handle's methods are grouped
//!   by concept in `lifecycle` (run, stop, close), `scheduling` (`call_soon`, `call_later`, ...),
//!   `fds` (`add_reader`, ..., and the edge-triggered registrations of `AsyncFd`) and
//!   `exception` (the exception handler, [`ExceptionContext`]);
//! - `remote`: the thread-safe part (`Shared`, [`RemoteHandle`]);
//! - `running`: the thread's running loop (`with_running`, [`get_running_loop`]) and timer slack;
//! - `slots`: per-loop state of the layers above, in typed slots found in O(1).
//!
//! Beside them are the mechanisms the loop is made of: `handle` (callback cells), `budget` (the
//! per-task budget of ready operations, spent by the I/O layer), `clock` (loop time), `reactor` (epoll registrations), `slab` (keyed tables), `waker` (task wakers), `trace`
//! (trace lines), `error` (the loop's own errors: `LoopError`, `Panic`, `WrongLoopError`),
//! `executor` (`run_in_executor`'s thread pool), `load` (busy time and connection counts other threads may read), `raw_task`, `task_table` and `sites` (the raw
//! task cells, the table of live tasks, interned spawn sites). Nothing here imports `task`,
//! `io`, `sync` or `os`.

pub(crate) mod budget;
pub(crate) mod clock;
pub(crate) mod error;
pub(crate) mod executor;
pub(crate) mod handle;
pub(crate) mod load;
pub(crate) mod reactor;
// The raw task cell: one of the two modules of this crate allowed `unsafe` (docs/design.md).
#[allow(unsafe_code)]
pub(crate) mod raw_task;
pub(crate) mod sites;
pub(crate) mod slab;
pub(crate) mod slots;
pub(crate) mod task_table;
pub(crate) mod trace;
pub(crate) mod waker;

mod block_on;
mod builder;
mod exception;
mod fds;
mod inner;
mod lifecycle;
mod loop_handle;
mod phases;
mod remote;
mod running;
mod scheduling;

pub use self::builder::{Builder, MAX_TIMER_SLACK};
pub use self::error::{LoopError, LoopErrorKind, Panic, WrongLoopError};
pub use self::exception::{
    BoxedExceptionHandler, ExceptionContext, ExceptionKind, SharedExceptionHandler, default_exception_handler,
};
pub use self::executor::{ExecutorError, ExecutorJob};
pub use self::handle::{CallbackId, Handle, TimerHandle};
pub(crate) use self::inner::{DeferredFlush, LoopInner, Ready, TaskHooks, TimerEntry};
pub use self::loop_handle::{EventLoop, LoopHandle, LoopStats};
pub use self::remote::RemoteHandle;
pub(crate) use self::remote::{Remote, Shared};
pub use self::running::get_running_loop;
pub(crate) use self::running::{local_loop, running_loop_id, running_loop_traces, with_running};
pub use self::trace::{AwaitKind, Awaiting};
