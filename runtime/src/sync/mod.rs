//! Synchronisation primitives for tasks: [`Event`], [`Lock`] and [`Mutex`], [`Semaphore`] and
//! [`BoundedSemaphore`], [`Condition`] and [`Barrier`] (asyncio's `asyncio.Event`, `asyncio.Lock`,
//! ...), and tokio's [`RwLock`] and [`Notify`].
//!
//! They coordinate the tasks of one loop, on one thread: their state is a `RefCell`, never an
//! atomic or an OS mutex, and they are `!Send` and `!Sync`. To share one between tasks, put it in
//! an `Rc` (`let lock = Rc::new(Lock::new())`, then move a clone into each task). Nothing here
//! blocks the thread: a task that has to wait returns `Pending` and the loop runs something else.
//!
//! ```
//! use std::rc::Rc;
//! use evloop::{spawn, sync::Lock};
//!
//! let order = evloop::run(async {
//!     let lock = Rc::new(Lock::new());
//!     let guard = lock.acquire().await.unwrap(); // held by the main task
//!     let tasks: Vec<_> = (0..3)
//!         .map(|i| {
//!             let lock = lock.clone();
//!             spawn(async move {
//!                 let _held = lock.acquire().await.unwrap(); // released when `_held` is dropped
//!                 i
//!             })
//!         })
//!         .collect();
//!     evloop::task::yield_now().await; // the three tasks queue up, in order
//!     drop(guard);
//!     let mut order = Vec::new();
//!     for t in tasks {
//!         order.push(t.await.unwrap());
//!     }
//!     order
//! })
//! .unwrap();
//! assert_eq!(order, [0, 1, 2]);
//! ```
//!
//! # FIFO fairness
//! asyncio guarantees that the task which has waited longest gets the lock (or the permit, or
//! the notification) first, and so does evloop. Every primitive keeps its waiters in one FIFO
//! queue, and a release *hands* the resource straight to the first waiter instead of putting it
//! back on the table for whoever asks next. A newcomer cannot barge ahead: an acquire completes
//! at once only when the resource is free **and** the queue is empty, including waiters that
//! were already handed a permit but whose task has not run yet (asyncio's "wait for others to
//! start even if `_value > 0`"). Such a newcomer queues behind them and is served in turn.
//!
//! # Cancellation safety: asyncio's `CancelledError` versus Rust's dropped future
//! In asyncio, cancelling a task throws `CancelledError` into the coroutine at its `await`, and
//! `acquire()` must undo its bookkeeping; CPython has had a series of bugs in exactly that
//! undoing (bpo-32734, "2 locks are taken at once"; gh-90155, the semaphore hang; gh-112202, a
//! lost `Condition.notify`). In Rust a task is cancelled by *dropping* its future (evloop drops
//! it at the task's next step; `timeout` drops it when the deadline passes), and every waiting
//! future here cleans up in its `Drop`: dropped while it waits, it leaves the queue without
//! disturbing the order of the others; dropped after a release chose it but before its task ran,
//! it passes what it was handed (the lock, a permit, a notification) on to the next waiter, or
//! back to the primitive. Nothing is lost and nothing is given twice, whichever way a release
//! and a cancellation interleave. The same holds for [`Queue`](crate::sync::queue::Queue) and the
//! [`mpsc`] channels: all of them wait in one fair wait queue, and
//! `sync/wait_queue.rs` gives the argument once, with the queue's invariants.
//!
//! # Where evloop differs from asyncio
//! - RAII: [`LockGuard`], [`MutexGuard`] and [`SemaphorePermit`] release on drop, so there is no
//!   `release()` to call twice or forget. A permit can still be kept past its guard with
//!   [`SemaphorePermit::forget`] and given back later ([`Semaphore::add_permits`],
//!   [`BoundedSemaphore::release`]).
//! - [`Condition::notify`] does not require holding the lock (asyncio raises `RuntimeError`).
//!   On one thread there is no window between checking a predicate and starting to wait, which
//!   is what the rule protects elsewhere. A [`Condition::wait`] that is cancelled does not
//!   re-acquire the lock before it ends (a dropped future cannot await): its guard is gone, so
//!   the lock simply stays released, which is what the `async with` around it would have done.
//! - [`BoundedSemaphore::release`] gives back only a permit that was [forgotten]
//!   (`SemaphorePermit::forget`), so a permit still held by a guard can never push the count
//!   past its bound when that guard drops later.
//! - [`Barrier`] hands out arrival indexes when it trips, so they are always `0..parties` with
//!   no gaps even if a waiter was cancelled, and a new round starts at once (asyncio makes
//!   newcomers wait while the previous round "drains").
//!
//! Misuse is an error value ([`SyncError`]), never a panic, except in the case below and where
//! tokio's contract is a panic and its tests assert it ([`Semaphore::new`] and
//! [`Semaphore::add_permits`] beyond [`Semaphore::MAX_PERMITS`], [`SemaphorePermit::merge`] of
//! two semaphores' permits).
//!
//! [forgotten]: SemaphorePermit::forget
//!
//! # Bound to one loop
//! Two event loops can live on one thread, but only one runs at a time. A primitive whose
//! waiters are tasks of loop A can only be handed on by A's tasks; a task of loop B that waited
//! on it would wait while A cannot run: forever, silently. So each asyncio-named primitive
//! ([`Lock`], [`Event`], [`Semaphore`], [`BoundedSemaphore`], [`Condition`], [`Barrier`]) and
//! each [`Queue`](crate::sync::queue::Queue) and [`mpsc`] or [`oneshot`](mod@oneshot) channel is
//! **bound to the loop of the first task that waits on it**, as asyncio's are
//! (`_LoopBoundMixin`), and a task of another loop that would wait on it fails at once with the
//! loop layer's [`WrongLoopError`](crate::event_loop::WrongLoopError), which names the
//! operation and both loops:
//! - as an error value: [`Lock::acquire`], [`Event::wait`], [`Semaphore::acquire`],
//!   [`BoundedSemaphore::acquire`], [`Condition::wait`] and [`Barrier::wait`] give
//!   [`SyncError::WrongLoop`], a oneshot receiver gives `RecvError::WrongLoop`, each wrapping it;
//! - with a panic where the output has no room for one (`Queue::get` / `put` / `join`, `mpsc`
//!   `send` / `recv`, which keep tokio's and asyncio's signatures): the panic happens inside the
//!   waiting task, so the loop catches it and the task's awaiter gets `TaskError::Panicked` with
//!   the error's message (`run_until_complete` returns it), and the loop goes on.
//!
//! [`Mutex`] and [`RwLock`] (tokio's names, tokio's signatures: `lock()` / `read()` / `write()`
//! give the guard) are bound to no loop: their waiters are woken through their wakers, which
//! reach a task of any loop, so tasks of several loops may share one.
//!
//! What does not wait binds nothing and works from anywhere: creating a primitive, `try_*`
//! and `*_nowait`, `Event::set`, `Condition::notify`, releasing (dropping a guard), a
//! `put` or `acquire` that completes at once. A wait outside any evloop loop (another executor
//! polling the future) checks nothing. The thread-safe channel ([`threadsafe`]) is not bound to
//! any loop: it exists to cross threads and loops.
//!
//! # The `sync/` folder (layer 3)
//! One file per primitive (`lock`, `mutex`, `semaphore` with its permits in `semaphore_permit`
//! and its owned permits in `semaphore_owned`, `bounded_semaphore`, `event`, `condition`,
//! `barrier`, tokio's `notify` and `rwlock` with its guards in `rwlock_guard`), the permit pool
//! behind the lock, the mutex, the semaphores and the `RwLock` (`pool`), the wait queue all of them share with [`queue`]
//! and the [`mpsc`] channel (`wait_queue`), the operations a task waits in (`ops`: the layer's
//! kinds of `Awaiting` and the names in its errors), the loop binding (`binding`) and
//! [`SyncError`] (`error`); the channels live in `channel/`; this file re-exports their public
//! names. Beside them: the `select!` / `join!` / `try_join!` macros (`macros`) and the branch type
//! their expansions use (`macro_support`). The folder builds
//! on `task/` and `event_loop/`, and does not use `io/` (its sibling at the same rank).

mod barrier;
mod binding;
mod bounded_semaphore;
mod channel;
mod condition;
mod error;
mod event;
mod lock;
pub(crate) mod macros;
// What the macros expand to (their branch type); hidden: a path for `$crate::`, not an API.
#[doc(hidden)]
pub mod macro_support;
mod mutex;
mod notify;
mod ops;
mod pool;
pub mod queue;
mod rwlock;
mod rwlock_guard;
mod semaphore;
mod semaphore_owned;
mod semaphore_permit;
pub(crate) mod stream_wrappers;
mod wait_queue;

pub use self::barrier::{Barrier, BarrierWait};
pub(crate) use self::binding::LoopBinding;
pub use self::bounded_semaphore::BoundedSemaphore;
pub use self::channel::{broadcast, mpsc, oneshot, threadsafe, watch};
pub use self::condition::Condition;
pub use self::error::SyncError;
pub use self::event::{Event, EventWait};
pub use self::lock::{Lock, LockAcquire, LockGuard};
pub use self::mutex::{Mutex, MutexGuard, MutexLock, TryLockError};
pub use self::notify::{Notified, Notify, OwnedNotified};
pub use self::rwlock::RwLock;
pub use self::rwlock_guard::{RwLockMappedWriteGuard, RwLockReadGuard, RwLockWriteGuard};
pub use self::semaphore::{Semaphore, SemaphoreAcquire, TryAcquireError};
pub use self::semaphore_owned::OwnedSemaphorePermit;
pub use self::semaphore_permit::SemaphorePermit;
