//! Channels: typed hand-offs between tasks, and from other threads into a loop.
//!
//! | kind | create | threads | capacity | receiving |
//! |---|---|---|---|---|
//! | [`oneshot`](mod@oneshot) | [`oneshot()`](fn@oneshot) | one loop's thread | one value | the receiver is a future |
//! | [`mpsc`] | [`mpsc::channel`], [`mpsc::unbounded`] | one loop's thread | bounded (`send` waits) or unbounded | `recv().await` |
//! | [`threadsafe`] | [`threadsafe::channel`] | senders on any thread | unbounded | `recv().await` on the loop |
//! | [`watch`] | [`watch::channel`] | one loop's thread | the latest value only | `changed().await`, `borrow()` |
//! | [`broadcast`] | [`broadcast::channel`] | one loop's thread | the last `capacity` values, every receiver gets each | `recv().await`, `Lagged(n)` when behind |
//!
//! All three close the same way: when every sender is gone the receiver gets what is left, then
//! learns that nothing more will come (`Err(Closed)` / `None`); when the receiver is gone (or
//! closed) a send fails and gives the value back.
//!
//! # How the waiting works
//! A receive that finds nothing stores its task's waker where the senders will see it and
//! returns `Pending`; the send that supplies a value takes the waker and wakes it, which queues
//! the task on its loop. A wake from another thread (the [`threadsafe`] channel) goes through
//! the loop's remote queue and wakes a loop blocked in `epoll_pwait2` with one eventfd write
//! (see `event_loop/waker.rs`). The local [`mpsc`] channel is a [`Queue`](crate::sync::queue::Queue) with a
//! count of senders on top, so its senders and its receiver wait in the wait queue of every
//! primitive of [`sync`](crate::sync): FIFO lines of waiters that are served by hand-over.
//!
//! # Cancellation safety
//! Dropping a receive or send future (a cancelled task, a `timeout`) at any await point loses
//! nothing and leaves nothing reserved: a value already handed to a dropped `recv` is put back in
//! front of the channel; a dropped waiting `send` leaves its line (its value is dropped with it:
//! it was not sent), and a slot already granted to it goes to the next waiting sender (the wait
//! queue's rule, argued once in `sync/wait_queue.rs`). A [`oneshot`](mod@oneshot) or
//! [`threadsafe`] receive holds no value while it waits (the value stays in the channel until a
//! poll takes it), so dropping one loses nothing either.

pub mod broadcast;
pub mod mpsc;
pub mod oneshot;
pub mod threadsafe;
pub mod watch;

/// A new [one-shot channel](mod@oneshot): one value, from one sender to one receiver.
///
/// ```
/// let got = evloop::run(async {
///     let (tx, rx) = evloop::sync::oneshot();
///     evloop::spawn(async move {
///         let _ = tx.send("answer");
///     });
///     rx.await
/// })?;
/// assert_eq!(got, Ok("answer"));
/// # Ok::<(), evloop::task::RunError>(())
/// ```
pub fn oneshot<T>() -> (oneshot::Sender<T>, oneshot::Receiver<T>) {
    oneshot::channel()
}
