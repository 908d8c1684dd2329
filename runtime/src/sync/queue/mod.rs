//! `Queue`: asyncio's `Queue`, `LifoQueue` and `PriorityQueue` for tasks of one loop.
//!
//! A [`Queue<T>`] is a cheap handle (clone it into every task that uses it) to one shared
//! queue on this thread; it is `!Send`, like everything that lives on a loop. Producers
//! [`put`](Queue::put) items and wait while the queue is full (`maxsize` items, 0 for no bound);
//! consumers [`get`](Queue::get) them and wait while it is empty. [`task_done`](Queue::task_done)
//! and [`join`](Queue::join) count work that was taken but not finished, and
//! [`shutdown`](Queue::shutdown) has Python 3.13's semantics.
//!
//! ```
//! use evloop::{spawn, sync::queue::Queue};
//!
//! let total = evloop::run(async {
//!     let q = Queue::new(2);
//!     let producer = {
//!         let q = q.clone();
//!         spawn(async move {
//!             for i in 1..=5u32 {
//!                 q.put(i).await.unwrap(); // waits while 2 items are queued
//!             }
//!             q.shutdown(false); // the consumer drains what is left, then sees QueueShutDown
//!         })
//!     };
//!     let mut total = 0;
//!     while let Ok(i) = q.get().await {
//!         total += i;
//!     }
//!     producer.await.unwrap();
//!     total
//! })
//! .unwrap();
//! assert_eq!(total, 15);
//! ```
//!
//! # How the waiting works
//! The queue keeps three FIFO lines of waiters, getters, putters and joiners, in the wait queue
//! every primitive of [`sync`](crate::sync) uses (a waiter that leaves the middle of a line costs
//! O(1)). A future that must wait stores its task's waker in its entry and returns `Pending`, as
//! a promise's awaiter does. The other side
//! does not merely wake it, it **hands over** what it was waiting for, so nobody can overtake
//! a waiter that was already served:
//!
//! - a put that finds getters waiting moves the item straight into the first getter's node;
//! - a get that frees a slot while putters wait **grants** that slot to the first putter: the
//!   slot counts as taken ([`full`](Queue::full) stays true, `put_nowait` fails) until the
//!   putter's task runs and moves its item in.
//!
//! So getters are served in the order they started waiting, and so are putters. Items always
//! come out in the queue's order (FIFO, LIFO, or smallest first with FIFO among equal items: each
//! item carries a sequence number, the way asyncio users put `(priority, count, item)` tuples
//! into a `PriorityQueue`).
//!
//! An item handed to a getter still counts in [`qsize`](Queue::qsize) until the getter's task
//! runs and takes it (asyncio counts it the same way), but it is promised to that getter:
//! `get_nowait` cannot take it. asyncio instead only wakes the getter, and a `get_nowait` in
//! between takes the item while the woken getter goes back to the end of the line.
//!
//! # Cancellation safety
//! A task is cancelled in Rust by dropping its future (evloop's `Task::cancel` drops it at the
//! task's next step; a `timeout` drops it at its deadline). Dropping a [`Get`], [`Put`] or
//! [`Join`] at any await point leaves the queue as if the operation had never started, with
//! nothing lost and nothing stuck:
//!
//! - a getter dropped while waiting leaves the line; one dropped after an item was handed to it
//!   passes the item on to the next waiting getter, or puts it back into the queue at the place
//!   its sequence number gives it (the front, for FIFO);
//! - a putter dropped while waiting leaves the line and its item is dropped with it (the put did
//!   not happen); one dropped after a slot was granted to it releases the slot, which goes to the
//!   next waiting putter.
//!
//! These are the wait queue's one rule (a grant whose waiter is gone goes to the next waiter, or
//! back), argued once in `sync/wait_queue.rs`.
//!
//! # Shutdown (Python 3.13)
//! After [`shutdown`](Queue::shutdown), `put` and `put_nowait` fail with [`QueueShutDown`] /
//! [`TryPutError::ShutDown`], giving the item back, and every waiting putter is woken with that
//! error. `get` keeps returning the items still queued, then fails with `QueueShutDown`; waiting
//! getters (the queue is empty while getters wait) are woken with it. `shutdown(true)` also
//! discards every queued item, counting a `task_done` for each so that `join` can return.
//!
//! # Misuse is an error, not a panic
//! `task_done` called more times than items were put is a [`TaskDoneError`] (asyncio's
//! `ValueError`).
//!
//! # The `queue/` folder
//! `handle` ([`Queue`]), `futures` ([`Get`], [`Put`], [`Join`]), `core` (the state the handles
//! and futures share, with the rules of its three lines; `mpsc` channels are built on it),
//! `store` (the three orders) and `error`; this file re-exports their public names.

mod core;
mod error;
mod futures;
mod handle;
mod store;

pub(crate) use self::core::{Core, SharedCore, with_core};
pub use self::error::{QueueShutDown, TaskDoneError, TryGetError, TryPutError};
pub use self::futures::{Get, Join, Put};
pub use self::handle::Queue;
