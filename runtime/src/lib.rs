//! # evloop
//!
//! Python asyncio's event loop rebuilt from scratch in Rust on raw Linux syscalls: an epoll
//! reactor, a min-heap timer queue behind `call_at`/`call_later`, a `call_soon` ready queue,
//! promises (asyncio's `Future`) and tasks driven by wakers and done-callback chains. No
//! third-party async crates; the only dependencies are this workspace's own crates:
//! `evloop-syscalls` (the kernel boundary, where the unsafe code lives, apart from the raw task
//! cell and the fiber register switch), `evloop-timers` and `evloop-macros`.
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
//! A program's `main` says the same with an attribute, and reads like tokio code, because
//! evloop offers tokio's names where asyncio has none (`TcpListener`, `BufReader`, `select!`):
//!
//! ```no_run
//! use evloop::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
//! use evloop::net::TcpListener;
//!
//! #[evloop::main]
//! async fn main() -> std::io::Result<()> {
//!     let listener = TcpListener::bind("127.0.0.1:8080").await?;
//!     loop {
//!         let (mut socket, _) = listener.accept().await?;
//!         evloop::spawn(async move {
//!             let (rd, mut wr) = socket.split();
//!             let mut lines = BufReader::new(rd).lines();
//!             while let Ok(Some(line)) = lines.next_line().await {
//!                 if wr.write_all(format!("{}\n", line.to_uppercase()).as_bytes()).await.is_err() {
//!                     break;
//!                 }
//!             }
//!         });
//!     }
//! }
//! ```
//!
//! ## Map of the crate
//! One folder per layer; a file imports only from its own folder and the ones below it (a test
//! in `tests/tests/workspace_rules.rs` checks every `crate::` path), and this file only declares
//! the folders and re-exports the public names:
//!
//! | rank | folder | modules |
//! |---|---|---|
//! | 4 | [`fiber`] | `mod` ([`fiber::Fiber`]: greenlet's switch, parents, throw), `switch` (the register switch in assembly: with the raw task cell, the only unsafe code outside `evloop-syscalls`), `stack` (mmap'd guarded stacks), `value`, `hub` ([`fiber::spawn`], [`fiber::block_on`]: blocking-style code on the loop); a sibling of `os/` that does not import it |
//! | 4 | `os/` | [`signal`] (asyncio's `add_signal_handler`, awaitable signals), [`process`] (subprocesses through pidfds) |
//! | 3 | [`io`] | `mod` ([`AsyncFd`], [`AsyncRead`]/[`AsyncWrite`]), `addr` ([`net::ToSocketAddrs`]), [`net`] (TCP/UDP/Unix sockets, `sock_*`, DNS), `split` (borrowed halves), `buf` ([`io::BufReader`], [`io::BufWriter`], [`io::AsyncBufReadExt`]), `copy` ([`io::copy`], [`io::copy_bidirectional`]), [`stream`] (open_connection, start_server), `protocol` ([`Protocol`], [`Transport`], [`Server`]), `datagram`, [`pipe`] |
//! | 3 | `sync/` | [`sync`] itself (Event, Lock, Mutex, Semaphore, Condition, Barrier), [`queue`], [`channel`] (oneshot, mpsc, threadsafe), `combinator` ([`gather`], [`wait`], [`as_completed`], [`select`](fn@select), [`shield`]), `group` ([`TaskGroup`]), `macros` ([`select!`], [`join!`], [`try_join!`]) |
//! | 2 | `task/` | `mod` ([`spawn`], [`run`], [`Task`]), `promise` ([`Promise`]), `time` ([`sleep`], [`timeout`], [`yield_now`]), `timeouts` ([`Timeout`]), `runner` ([`Runner`]) |
//! | 1 | `event_loop/` | `mod` (the five phases, [`EventLoop`], [`LoopHandle`]), `handle`, `clock`, `reactor` (epoll), `slab`, `waker`, `trace`, `error`, `executor` (`run_in_executor`'s thread pool), `extension` (per-loop state of higher layers) |
//! | 0 | crates | `evloop-syscalls` (every syscall, all the unsafe code), `evloop-timers` (the timer heap), `evloop-macros` ([`macro@main`], [`macro@test`]) |
//!
//! The loop knows tasks only through a small trait (`Steppable`) that the task module
//! implements, and the `os` layer's per-loop state only as an `Extension`, so it never depends
//! on the code above it.
//!
//! ## Behaviour
//! asyncio's semantics (see `docs/` for the mechanisms with traces of real runs):
//! `call_soon` is FIFO and a callback scheduled by a running callback waits for the next
//! iteration; timers never fire early and equal deadlines run in scheduling order; a task's first
//! step is scheduled with `call_soon`; done callbacks are scheduled, never run inline; a panic in
//! a callback or task is caught and reported, and the loop keeps running. Where asyncio has a
//! known footgun evloop fixes it: the loop holds tasks strongly, timers are exact to the
//! nanosecond with `epoll_pwait2`, and a task that keeps waking itself runs once per iteration.

// `unsafe` is denied everywhere in this crate except the modules docs/design.md allows by name (the
// raw task cell, the fiber register switch), each opted back in with `#[allow(unsafe_code)]` on
// its `mod` line and listed in tests/tests/workspace_rules.rs; every block there says why it holds.
#![deny(unsafe_code)]
#![deny(unsafe_op_in_unsafe_fn)]
#![deny(clippy::undocumented_unsafe_blocks)]
#![deny(missing_docs)]

mod event_loop;
pub mod fiber;
pub mod io;
mod os;
pub mod sync;
mod task;

pub use event_loop::error::{LoopError, LoopErrorKind, Panic, WrongLoopError};
pub use event_loop::executor::{ExecutorError, ExecutorJob};
pub use event_loop::handle::{CallbackId, Handle, TimerHandle};
pub use event_loop::trace::{AwaitKind, Awaiting};
pub use event_loop::{
    BoxedExceptionHandler, Builder, EventLoop, ExceptionContext, ExceptionKind, LoopHandle, LoopStats, MAX_TIMER_SLACK,
    RemoteHandle, SharedExceptionHandler, default_exception_handler, get_running_loop,
};
pub use io::datagram::{
    DEFAULT_DATAGRAM_QUEUE_LIMIT, DatagramDropped, DatagramOptions, DatagramProtocol, DatagramTransport,
};
pub use io::error::{OpError, os_error};
pub use io::protocol::{DEFAULT_ACCEPT_RETRY_DELAY, DEFAULT_HIGH_WATER, Protocol, Server, Transport};
pub use io::stream::{
    StreamConfig, StreamError, StreamReader, StreamWriter, open_connection, open_connection_with, open_unix_connection,
    open_unix_connection_with, start_server, start_server_with, start_unix_server, start_unix_server_with,
};
pub use io::{AsyncFd, AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, Interest};
pub use io::{net, pipe, stream};
pub use os::{process, signal};
pub use task::combinator::{
    AsCompleted, Either, Gather, ReturnWhen, Shield, TryGather, as_completed, gather, race, select, shield,
    shield_future, try_gather, wait,
};
pub use task::group::{ChildError, GroupError, TaskGroup};
pub use sync::queue::{Queue, QueueShutDown, TaskDoneError, TryGetError, TryPutError};
pub use sync::{
    Barrier, BoundedSemaphore, Condition, Event, Lock, LockGuard, Mutex, MutexGuard, Semaphore, SemaphorePermit,
    SyncError,
};
pub use sync::{channel, queue};
pub use task::error::{InvalidStateError, PromiseError, RunError, TaskError};
pub use task::promise::{Promise, PromiseFuture};
pub use task::runner::Runner;
pub use task::time::{Elapsed, Sleep, sleep, sleep_until, timeout, timeout_at};
pub use task::timeouts::{Timeout, TimeoutHandle};
pub use task::tree::{TaskNode, TaskTree, task_tree};
pub use task::{Task, TaskBuilder, TaskRef, TaskState, YieldNow, all_tasks, current_task, run, run_with, spawn, yield_now};

/// `#[evloop::main]` and `#[evloop::test]`: an `async fn` run on a new loop (`asyncio.run`);
/// options `trace` and `virtual_clock`. See the crate documentation's first example.
pub use evloop_macros::{main, test};

/// The syscall layer, re-exported so users can read the per-thread call counters
/// (`evloop::sys::counters::snapshot()`) without another dependency.
pub use evloop_syscalls as sys;
