//! Channels: typed hand-offs between tasks, and from other threads into a loop.
//!
//! | kind | create | threads | capacity | receiving |
//! |---|---|---|---|---|
//! | [`oneshot`](mod@oneshot) | [`oneshot()`](fn@oneshot) | one loop's thread | one value | the receiver is a future |
//! | [`mpsc`] | [`mpsc::channel`], [`mpsc::unbounded`] | one loop's thread | bounded (`send` waits) or unbounded | `recv().await` |
//! | [`threadsafe`] | [`threadsafe::channel`] | senders on any thread | unbounded | `recv().await` on the loop |
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
//! (see `event_loop/waker.rs`). The local [`mpsc`] channel is built on the same waiting machinery as
//! [`Queue`](crate::Queue): FIFO lines of waiters that are served by hand-over.
//!
//! # Cancellation safety
//! Dropping a receive or send future (a cancelled task, a `timeout`) at any await point loses
//! nothing and leaves nothing reserved: a value already handed to a dropped `recv` is put back in
//! front of the channel; a dropped waiting `send` leaves its line (its value is dropped with it:
//! it was not sent), and a slot already granted to it goes to the next waiting sender.

use std::cell::{Cell, RefCell};
use std::error::Error;
use std::fmt;
use std::future::Future;
use std::marker::PhantomData;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll, Waker};

use crate::event_loop::trace::{Awaiting, QueueOp, note_awaiting};
use crate::sync::queue::{Core, Get, Put, QueueShutDown, SharedCore, TryGetError, TryPutError, wake_all};
use crate::sync::{LoopBinding, WrongLoop};

/// A new [one-shot channel](mod@oneshot): one value, from one sender to one receiver.
///
/// ```
/// let got = evloop::run(async {
///     let (tx, rx) = evloop::channel::oneshot();
///     evloop::spawn(async move {
///         let _ = tx.send("answer");
///     });
///     rx.await
/// })?;
/// assert_eq!(got, Ok("answer"));
/// # Ok::<(), evloop::RunError>(())
/// ```
pub fn oneshot<T>() -> (oneshot::Sender<T>, oneshot::Receiver<T>) {
    oneshot::channel()
}

pub mod oneshot {
    //! One value, once: a [`Sender`] consumed by [`send`](Sender::send) and a [`Receiver`] that
    //! is itself the future of the value (`!Send`: both ends live on one loop's thread).
    //!
    //! ```
    //! let got = evloop::run(async {
    //!     let (tx, rx) = evloop::channel::oneshot::<u32>();
    //!     evloop::spawn(async move {
    //!         let _ = tx.send(7);
    //!     });
    //!     rx.await
    //! })
    //! .unwrap();
    //! assert_eq!(got, Ok(7));
    //! ```
    //!
    //! **Waiting**: a pending receiver stores its task's waker; `send` stores the value and wakes
    //! it, and so does dropping the sender without sending (the receiver then gets
    //! [`RecvError::Closed`]).
    //!
    //! **Cancellation safety**: dropping the receiver before the value arrives closes the channel,
    //! so the sender gets its value back from `send` instead of losing it silently; a value that
    //! already arrived is dropped with the receiver.

    use super::*;

    struct State<T> {
        value: Option<T>,
        waker: Option<Waker>,
        sender_gone: bool,
        receiver_closed: bool,
        /// The loop whose task may wait for the value (the first one that did).
        binding: LoopBinding,
    }

    type Shared<T> = Rc<RefCell<State<T>>>;

    /// A new one-shot channel.
    ///
    /// ```
    /// use evloop::channel::oneshot;
    ///
    /// let (tx, mut rx) = oneshot::channel();
    /// tx.send(1).expect("the receiver is alive");
    /// assert_eq!(rx.try_recv(), Ok(1));
    /// ```
    pub fn channel<T>() -> (Sender<T>, Receiver<T>) {
        let shared = Rc::new(RefCell::new(State {
            value: None,
            waker: None,
            sender_gone: false,
            receiver_closed: false,
            binding: LoopBinding::default(),
        }));
        (Sender { shared: shared.clone() }, Receiver { shared })
    }

    /// The sending end: [`send`](Sender::send) once, or drop it to close the channel.
    ///
    /// ```
    /// use evloop::channel::oneshot::{self, RecvError};
    ///
    /// let got = evloop::run(async {
    ///     let (tx, rx) = oneshot::channel::<u32>();
    ///     drop(tx); // dropping the sender without sending closes the channel
    ///     rx.await
    /// })?;
    /// assert_eq!(got, Err(RecvError::Closed));
    /// # Ok::<(), evloop::RunError>(())
    /// ```
    pub struct Sender<T> {
        shared: Shared<T>,
    }

    impl<T> Sender<T> {
        /// Sends the value and wakes the receiver. `Err(value)` if the receiver was dropped or
        /// closed: the value comes back instead of being lost.
        ///
        /// ```
        /// use evloop::channel::oneshot;
        ///
        /// let (tx, rx) = oneshot::channel();
        /// drop(rx);
        /// assert_eq!(tx.send("lost?"), Err("lost?")); // the value comes back
        /// ```
        pub fn send(self, value: T) -> Result<(), T> {
            let waker = {
                let mut st = self.shared.borrow_mut();
                if st.receiver_closed {
                    return Err(value);
                }
                st.value = Some(value);
                st.waker.take()
            };
            if let Some(w) = waker {
                w.wake();
            }
            Ok(())
        }

        /// Whether the receiver was dropped or closed (a send would fail).
        ///
        /// ```
        /// use evloop::channel::oneshot;
        ///
        /// let (tx, mut rx) = oneshot::channel::<u8>();
        /// assert!(!tx.is_closed());
        /// rx.close();
        /// assert!(tx.is_closed());
        /// ```
        pub fn is_closed(&self) -> bool {
            self.shared.borrow().receiver_closed
        }
    }

    impl<T> Drop for Sender<T> {
        fn drop(&mut self) {
            let waker = {
                let mut st = self.shared.borrow_mut();
                st.sender_gone = true;
                st.waker.take()
            };
            if let Some(w) = waker {
                w.wake();
            }
        }
    }

    impl<T> fmt::Debug for Sender<T> {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            write!(f, "oneshot::Sender {{ closed: {} }}", self.is_closed())
        }
    }

    /// The receiving end; await it for the value.
    ///
    /// ```
    /// use evloop::channel::oneshot;
    ///
    /// let got = evloop::run(async {
    ///     let (tx, rx) = oneshot::channel();
    ///     let waiter = evloop::spawn(rx); // the receiver is a future: await it, or spawn it
    ///     tx.send(5).expect("the receiver is alive");
    ///     waiter.await
    /// })??;
    /// assert_eq!(got, Ok(5));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub struct Receiver<T> {
        shared: Shared<T>,
    }

    /// Why a [`Receiver`] got no value.
    ///
    /// ```
    /// use evloop::channel::oneshot::{self, RecvError};
    ///
    /// evloop::run(async {
    ///     let (tx, rx) = oneshot::channel::<()>();
    ///     drop(tx);
    ///     let err = rx.await.unwrap_err();
    ///     assert_eq!(err, RecvError::Closed);
    ///     assert!(err.to_string().contains("dropped without sending"));
    /// })?;
    /// # Ok::<(), evloop::RunError>(())
    /// ```
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
    #[non_exhaustive]
    pub enum RecvError {
        /// The sender was dropped without sending (or the value was already received).
        Closed,
        /// The receiver is bound to another event loop than the task that awaited it (the
        /// loop of the first task that waited for it; see the [`sync`](crate::sync) module's
        /// "Bound to one loop").
        WrongLoop {
            /// The loop it is bound to.
            bound: u64,
            /// The loop whose task awaited it.
            running: u64,
        },
    }

    impl fmt::Display for RecvError {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            match self {
                RecvError::Closed => f.write_str("oneshot::Receiver: the sender was dropped without sending a value"),
                RecvError::WrongLoop { bound, running } => f.write_str(
                    &WrongLoop {
                        bound: *bound,
                        running: *running,
                    }
                    .message(QueueOp::OneshotRecv),
                ),
            }
        }
    }

    impl Error for RecvError {}

    /// Why [`Receiver::try_recv`] got no value.
    ///
    /// ```
    /// use evloop::channel::oneshot::{self, TryRecvError};
    ///
    /// let (tx, mut rx) = oneshot::channel::<u8>();
    /// assert_eq!(rx.try_recv(), Err(TryRecvError::Empty));
    /// drop(tx);
    /// assert_eq!(rx.try_recv(), Err(TryRecvError::Closed));
    /// ```
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
    pub enum TryRecvError {
        /// Nothing was sent yet.
        Empty,
        /// The sender was dropped without sending (or the value was already received).
        Closed,
    }

    impl fmt::Display for TryRecvError {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            match self {
                TryRecvError::Empty => f.write_str("oneshot::Receiver::try_recv: no value was sent yet"),
                TryRecvError::Closed => {
                    f.write_str("oneshot::Receiver::try_recv: the sender was dropped without sending a value")
                }
            }
        }
    }

    impl Error for TryRecvError {}

    impl<T> Receiver<T> {
        /// The value if it was sent, without waiting.
        ///
        /// ```
        /// use evloop::channel::oneshot::{self, TryRecvError};
        ///
        /// let (tx, mut rx) = oneshot::channel();
        /// assert_eq!(rx.try_recv(), Err(TryRecvError::Empty));
        /// tx.send('x').expect("the receiver is alive");
        /// assert_eq!(rx.try_recv(), Ok('x'));
        /// ```
        pub fn try_recv(&mut self) -> Result<T, TryRecvError> {
            let mut st = self.shared.borrow_mut();
            match st.value.take() {
                Some(v) => Ok(v),
                None if st.sender_gone => Err(TryRecvError::Closed),
                None => Err(TryRecvError::Empty),
            }
        }

        /// Refuses the value from now on: a later `send` fails and gives it back. A value sent
        /// before can still be received.
        ///
        /// ```
        /// use evloop::channel::oneshot;
        ///
        /// let (tx, mut rx) = oneshot::channel();
        /// rx.close();
        /// assert_eq!(tx.send(1), Err(1)); // refused, and given back
        /// ```
        pub fn close(&mut self) {
            self.shared.borrow_mut().receiver_closed = true;
        }
    }

    impl<T> Future for Receiver<T> {
        type Output = Result<T, RecvError>;

        fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
            let mut st = self.shared.borrow_mut();
            if let Some(v) = st.value.take() {
                return Poll::Ready(Ok(v));
            }
            if st.sender_gone {
                return Poll::Ready(Err(RecvError::Closed));
            }
            if let Err(WrongLoop { bound, running }) = st.binding.bind() {
                return Poll::Ready(Err(RecvError::WrongLoop { bound, running }));
            }
            let stale = match &st.waker {
                Some(w) if w.will_wake(cx.waker()) => None,
                _ => st.waker.replace(cx.waker().clone()),
            };
            drop(st);
            drop(stale);
            note_awaiting(Awaiting::Queue(QueueOp::OneshotRecv));
            Poll::Pending
        }
    }

    impl<T> Drop for Receiver<T> {
        fn drop(&mut self) {
            let (value, waker) = {
                let mut st = self.shared.borrow_mut();
                st.receiver_closed = true;
                (st.value.take(), st.waker.take())
            };
            drop(waker);
            drop(value);
        }
    }

    impl<T> fmt::Debug for Receiver<T> {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            let st = self.shared.borrow();
            write!(
                f,
                "oneshot::Receiver {{ has_value: {}, sender_gone: {} }}",
                st.value.is_some(),
                st.sender_gone
            )
        }
    }
}

pub mod mpsc {
    //! Many senders, one receiver, on one loop's thread (`!Send`), bounded or unbounded.
    //!
    //! ```
    //! use evloop::channel::mpsc;
    //!
    //! let got = evloop::run(async {
    //!     let (tx, mut rx) = mpsc::channel::<u32>(1);
    //!     for id in 0..3 {
    //!         let tx = tx.clone();
    //!         evloop::spawn(async move {
    //!             tx.send(id).await.unwrap(); // waits while the one slot is taken
    //!         });
    //!     }
    //!     drop(tx); // the channel closes when the spawned senders are done
    //!     let mut got = Vec::new();
    //!     while let Some(v) = rx.recv().await {
    //!         got.push(v);
    //!     }
    //!     got
    //! })
    //! .unwrap();
    //! assert_eq!(got, vec![0, 1, 2]);
    //! ```
    //!
    //! **Waiting**: [`Sender::send`] waits while the channel holds `capacity` values; waiting
    //! senders form a FIFO line, and each value the receiver takes grants the freed slot to the
    //! first of them (nobody can overtake it with `try_send`). [`Receiver::recv`] waits while the
    //! channel is empty; a send hands its value straight to a waiting receiver. This is the
    //! machinery of [`Queue`](crate::Queue) (see `sync/queue.rs`), with a count of senders on top.
    //!
    //! **Closing**: when the last [`Sender`] is dropped, `recv` returns the values left, then
    //! `None`. [`Receiver::close`] refuses new values (senders, including waiting ones, get
    //! theirs back in [`SendError`]) and lets the receiver drain the rest; dropping the receiver
    //! does the same and drops the values left.
    //!
    //! **Cancellation safety**: a dropped `recv` future never loses a value (one handed to it is
    //! put back in front); a dropped waiting `send` never sends, never duplicates its value and
    //! never keeps a slot reserved.

    use super::*;

    struct Chan<T> {
        core: SharedCore<T>,
        senders: Cell<usize>,
    }

    impl<T> Chan<T> {
        fn shutdown(&self, immediate: bool) {
            let (wakers, discarded) = self.core.borrow_mut().shutdown(immediate);
            wake_all(wakers);
            drop(discarded);
        }
    }

    /// A bounded channel: at most `capacity` values wait in it; a capacity of 0 is taken as 1
    /// (there is no rendezvous mode).
    ///
    /// ```
    /// use evloop::channel::mpsc::{self, TrySendError};
    ///
    /// let (tx, mut rx) = mpsc::channel(2);
    /// tx.try_send(1).expect("room");
    /// tx.try_send(2).expect("room");
    /// assert_eq!(tx.try_send(3), Err(TrySendError::Full(3))); // `send().await` would wait
    /// assert_eq!(rx.try_recv(), Ok(1));
    /// ```
    pub fn channel<T>(capacity: usize) -> (Sender<T>, Receiver<T>) {
        with_maxsize(capacity.max(1))
    }

    /// An unbounded channel: `send` never waits and `try_send` fails only once it is closed.
    ///
    /// ```
    /// use evloop::channel::mpsc;
    ///
    /// let (tx, mut rx) = mpsc::unbounded();
    /// for i in 0..1000 {
    ///     tx.try_send(i).expect("never full");
    /// }
    /// assert_eq!(rx.len(), 1000);
    /// assert_eq!(rx.try_recv(), Ok(0));
    /// ```
    pub fn unbounded<T>() -> (Sender<T>, Receiver<T>) {
        with_maxsize(0)
    }

    fn with_maxsize<T>(maxsize: usize) -> (Sender<T>, Receiver<T>) {
        let chan = Rc::new(Chan {
            core: Rc::new(RefCell::new(Core::fifo(maxsize))),
            senders: Cell::new(1),
        });
        (Sender { chan: chan.clone() }, Receiver { chan })
    }

    /// The channel is closed: the value that was not sent.
    ///
    /// ```
    /// use evloop::channel::mpsc::{self, SendError};
    ///
    /// evloop::run(async {
    ///     let (tx, rx) = mpsc::channel(1);
    ///     drop(rx);
    ///     assert_eq!(tx.send("hello").await, Err(SendError("hello")));
    /// })?;
    /// # Ok::<(), evloop::RunError>(())
    /// ```
    #[derive(Clone, Copy, PartialEq, Eq)]
    pub struct SendError<T>(pub T);

    impl<T> SendError<T> {
        /// The value that was not sent.
        ///
        /// ```
        /// use evloop::channel::mpsc;
        ///
        /// evloop::run(async {
        ///     let (tx, mut rx) = mpsc::channel(1);
        ///     rx.close();
        ///     let err = tx.send(String::from("job")).await.unwrap_err();
        ///     assert_eq!(err.into_inner(), "job");
        /// })?;
        /// # Ok::<(), evloop::RunError>(())
        /// ```
        pub fn into_inner(self) -> T {
            self.0
        }
    }

    impl<T> fmt::Debug for SendError<T> {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("SendError(..)")
        }
    }

    impl<T> fmt::Display for SendError<T> {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("mpsc::Sender::send: the channel is closed")
        }
    }

    impl<T> Error for SendError<T> {}

    /// Why [`Sender::try_send`] failed; both variants give the value back.
    ///
    /// ```
    /// use evloop::channel::mpsc::{self, TrySendError};
    ///
    /// let (tx, rx) = mpsc::channel(1);
    /// tx.try_send(1).expect("room");
    /// assert_eq!(tx.try_send(2), Err(TrySendError::Full(2)));
    /// drop(rx);
    /// assert_eq!(tx.try_send(3), Err(TrySendError::Closed(3)));
    /// ```
    #[derive(Clone, Copy, PartialEq, Eq)]
    pub enum TrySendError<T> {
        /// The channel holds `capacity` values (or a freed slot is promised to a waiting sender).
        Full(T),
        /// The receiver was dropped or closed.
        Closed(T),
    }

    impl<T> TrySendError<T> {
        /// The value that was not sent.
        ///
        /// ```
        /// use evloop::channel::mpsc;
        ///
        /// let (tx, _rx) = mpsc::channel(1);
        /// tx.try_send('a').expect("room");
        /// assert_eq!(tx.try_send('b').unwrap_err().into_inner(), 'b');
        /// ```
        pub fn into_inner(self) -> T {
            match self {
                TrySendError::Full(t) | TrySendError::Closed(t) => t,
            }
        }
    }

    impl<T> fmt::Debug for TrySendError<T> {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            match self {
                TrySendError::Full(_) => f.write_str("Full(..)"),
                TrySendError::Closed(_) => f.write_str("Closed(..)"),
            }
        }
    }

    impl<T> fmt::Display for TrySendError<T> {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            match self {
                TrySendError::Full(_) => f.write_str("mpsc::Sender::try_send: the channel is full"),
                TrySendError::Closed(_) => f.write_str("mpsc::Sender::try_send: the channel is closed"),
            }
        }
    }

    impl<T> Error for TrySendError<T> {}

    /// Why [`Receiver::try_recv`] got nothing.
    ///
    /// ```
    /// use evloop::channel::mpsc::{self, TryRecvError};
    ///
    /// let (tx, mut rx) = mpsc::channel::<u8>(1);
    /// assert_eq!(rx.try_recv(), Err(TryRecvError::Empty));
    /// drop(tx);
    /// assert_eq!(rx.try_recv(), Err(TryRecvError::Disconnected));
    /// ```
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
    pub enum TryRecvError {
        /// No value is waiting, but more may come.
        Empty,
        /// No value is waiting and none will come: every sender is gone, or the receiver closed.
        Disconnected,
    }

    impl fmt::Display for TryRecvError {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            match self {
                TryRecvError::Empty => f.write_str("mpsc::Receiver::try_recv: the channel is empty"),
                TryRecvError::Disconnected => f.write_str("mpsc::Receiver::try_recv: the channel is empty and closed"),
            }
        }
    }

    impl Error for TryRecvError {}

    /// A sending end; clone it for more senders. The channel closes when the last one is dropped.
    ///
    /// ```
    /// use evloop::channel::mpsc;
    ///
    /// let got = evloop::run(async {
    ///     let (tx, mut rx) = mpsc::unbounded();
    ///     let tx2 = tx.clone(); // one more sender on the same channel
    ///     tx.send("a").await.expect("open");
    ///     tx2.send("b").await.expect("open");
    ///     drop((tx, tx2)); // the last sender gone: `recv` gives what is left, then None
    ///     let mut got = Vec::new();
    ///     while let Some(v) = rx.recv().await {
    ///         got.push(v);
    ///     }
    ///     got
    /// })?;
    /// assert_eq!(got, ["a", "b"]);
    /// # Ok::<(), evloop::RunError>(())
    /// ```
    pub struct Sender<T> {
        chan: Rc<Chan<T>>,
    }

    impl<T> Clone for Sender<T> {
        fn clone(&self) -> Self {
            self.chan.senders.set(self.chan.senders.get() + 1);
            Sender {
                chan: self.chan.clone(),
            }
        }
    }

    impl<T> Drop for Sender<T> {
        fn drop(&mut self) {
            let left = self.chan.senders.get() - 1;
            self.chan.senders.set(left);
            if left == 0 {
                // Wakes a waiting receiver: it gets None once the values left are taken.
                self.chan.shutdown(false);
            }
        }
    }

    impl<T> Sender<T> {
        /// Sends `value`, waiting while the channel is full. `Err(SendError(value))` if the
        /// receiver is (or while waiting becomes) dropped or closed.
        ///
        /// # Panics
        /// When a task of another loop than the one the channel is bound to (the loop of its
        /// first waiter) would have to wait: see "Bound to one loop" in the
        /// [`sync`](crate::sync) module.
        ///
        /// ```
        /// use evloop::channel::mpsc;
        ///
        /// evloop::run(async {
        ///     let (tx, mut rx) = mpsc::channel(1);
        ///     tx.send(1).await.expect("room: returns at once");
        ///     let producer = evloop::spawn(async move {
        ///         tx.send(2).await.expect("open"); // waits until the receiver takes 1
        ///     });
        ///     assert_eq!(rx.recv().await, Some(1));
        ///     assert_eq!(rx.recv().await, Some(2));
        ///     producer.await?;
        ///     Ok::<(), evloop::TaskError>(())
        /// })??;
        /// # Ok::<(), Box<dyn std::error::Error>>(())
        /// ```
        pub fn send(&self, value: T) -> Send<'_, T> {
            Send {
                put: Put::new_on(&self.chan.core, value),
                _sender: PhantomData,
            }
        }

        /// Sends without waiting; gives the value back if the channel is full or closed.
        ///
        /// ```
        /// use evloop::channel::mpsc::{self, TrySendError};
        ///
        /// let (tx, mut rx) = mpsc::channel(1);
        /// assert_eq!(tx.try_send(1), Ok(()));
        /// assert_eq!(tx.try_send(2), Err(TrySendError::Full(2)));
        /// assert_eq!(rx.try_recv(), Ok(1));
        /// ```
        pub fn try_send(&self, value: T) -> Result<(), TrySendError<T>> {
            let woken = self.chan.core.borrow_mut().try_put(value);
            match woken {
                Ok(w) => {
                    if let Some(w) = w {
                        w.wake();
                    }
                    Ok(())
                }
                Err(TryPutError::Full(v)) => Err(TrySendError::Full(v)),
                Err(TryPutError::ShutDown(v)) => Err(TrySendError::Closed(v)),
            }
        }

        /// Whether the receiver was dropped or closed (every send would fail).
        ///
        /// ```
        /// use evloop::channel::mpsc;
        ///
        /// let (tx, rx) = mpsc::channel::<u8>(1);
        /// assert!(!tx.is_closed());
        /// drop(rx);
        /// assert!(tx.is_closed());
        /// ```
        pub fn is_closed(&self) -> bool {
            self.chan.core.borrow().is_shut_down()
        }

        /// Whether two senders feed the same channel.
        ///
        /// ```
        /// use evloop::channel::mpsc;
        ///
        /// let (tx, _rx) = mpsc::channel::<u8>(1);
        /// let (other, _other_rx) = mpsc::channel::<u8>(1);
        /// assert!(tx.same_channel(&tx.clone()));
        /// assert!(!tx.same_channel(&other));
        /// ```
        pub fn same_channel(&self, other: &Sender<T>) -> bool {
            Rc::ptr_eq(&self.chan, &other.chan)
        }
    }

    impl<T> fmt::Debug for Sender<T> {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            write!(
                f,
                "mpsc::Sender {{ senders: {}, closed: {} }}",
                self.chan.senders.get(),
                self.is_closed()
            )
        }
    }

    /// The future of [`Sender::send`]. Cancellation-safe (see the module documentation).
    ///
    /// ```
    /// use std::time::Duration;
    /// use evloop::channel::mpsc;
    /// use evloop::Builder;
    ///
    /// evloop::run_with(Builder::new().virtual_clock(true), async {
    ///     let (tx, mut rx) = mpsc::channel(1);
    ///     tx.send(1).await.expect("room");
    ///     // Full: the timeout drops the waiting `Send`, and 2 is not sent.
    ///     assert!(evloop::timeout(Duration::from_secs(1), tx.send(2)).await.is_err());
    ///     assert_eq!(rx.len(), 1);
    ///     assert_eq!(rx.recv().await, Some(1));
    /// })?;
    /// # Ok::<(), evloop::RunError>(())
    /// ```
    #[must_use = "futures do nothing unless awaited"]
    pub struct Send<'a, T> {
        put: Put<T>,
        _sender: PhantomData<&'a Sender<T>>,
    }

    impl<T> Future for Send<'_, T> {
        type Output = Result<(), SendError<T>>;

        fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
            let this = self.get_mut();
            this.put
                .poll_put(cx, QueueOp::MpscSend)
                .map(|r| r.map_err(|QueueShutDown(v)| SendError(v)))
        }
    }

    impl<T> fmt::Debug for Send<'_, T> {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            fmt::Debug::fmt(&self.put, f)
        }
    }

    /// The receiving end. Dropping it closes the channel and drops the values left in it.
    ///
    /// ```
    /// use evloop::channel::mpsc;
    ///
    /// let sum = evloop::run(async {
    ///     let (tx, mut rx) = mpsc::channel(4);
    ///     evloop::spawn(async move {
    ///         for i in 1..=10 {
    ///             tx.send(i).await.expect("open");
    ///         }
    ///     });
    ///     let mut sum = 0;
    ///     while let Some(i) = rx.recv().await {
    ///         sum += i;
    ///     }
    ///     sum
    /// })?;
    /// assert_eq!(sum, 55);
    /// # Ok::<(), evloop::RunError>(())
    /// ```
    pub struct Receiver<T> {
        chan: Rc<Chan<T>>,
    }

    impl<T> Receiver<T> {
        /// The next value, waiting while the channel is empty; `None` once it is empty and
        /// closed (every sender dropped, or [`close`](Receiver::close) called).
        ///
        /// # Panics
        /// Like [`Sender::send`], when a task of another loop would have to wait.
        ///
        /// ```
        /// use evloop::channel::mpsc;
        ///
        /// evloop::run(async {
        ///     let (tx, mut rx) = mpsc::channel(1);
        ///     evloop::spawn(async move { tx.send("ping").await });
        ///     assert_eq!(rx.recv().await, Some("ping")); // waits for the task's send
        ///     assert_eq!(rx.recv().await, None); // the sender is gone
        /// })?;
        /// # Ok::<(), evloop::RunError>(())
        /// ```
        pub fn recv(&mut self) -> Recv<'_, T> {
            Recv {
                get: Get::new_on(&self.chan.core),
                _receiver: PhantomData,
            }
        }

        /// The next value without waiting.
        ///
        /// ```
        /// use evloop::channel::mpsc::{self, TryRecvError};
        ///
        /// let (tx, mut rx) = mpsc::channel(1);
        /// assert_eq!(rx.try_recv(), Err(TryRecvError::Empty));
        /// tx.try_send(9).expect("room");
        /// assert_eq!(rx.try_recv(), Ok(9));
        /// ```
        pub fn try_recv(&mut self) -> Result<T, TryRecvError> {
            let got = self.chan.core.borrow_mut().try_get();
            match got {
                Ok((v, woken)) => {
                    if let Some(w) = woken {
                        w.wake();
                    }
                    Ok(v)
                }
                Err(TryGetError::Empty) => Err(TryRecvError::Empty),
                Err(TryGetError::ShutDown) => Err(TryRecvError::Disconnected),
            }
        }

        /// Closes the channel for senders: sends fail from now on (waiting senders are woken and
        /// get their values back); the values already in it can still be received.
        ///
        /// ```
        /// use evloop::channel::mpsc::{self, TrySendError};
        ///
        /// let (tx, mut rx) = mpsc::channel(2);
        /// tx.try_send(1).expect("room");
        /// rx.close();
        /// assert_eq!(tx.try_send(2), Err(TrySendError::Closed(2))); // refused from now on
        /// assert_eq!(rx.try_recv(), Ok(1)); // what was sent can still be received
        /// ```
        pub fn close(&mut self) {
            self.chan.shutdown(false);
        }

        /// Whether the channel is closed (all senders gone, or [`close`](Receiver::close)).
        ///
        /// ```
        /// use evloop::channel::mpsc;
        ///
        /// let (tx, rx) = mpsc::channel::<u8>(1);
        /// assert!(!rx.is_closed());
        /// drop(tx);
        /// assert!(rx.is_closed());
        /// ```
        pub fn is_closed(&self) -> bool {
            self.chan.core.borrow().is_shut_down()
        }

        /// How many values wait in the channel.
        ///
        /// ```
        /// use evloop::channel::mpsc;
        ///
        /// let (tx, rx) = mpsc::unbounded();
        /// tx.try_send(1).expect("unbounded");
        /// tx.try_send(2).expect("unbounded");
        /// assert_eq!(rx.len(), 2);
        /// ```
        pub fn len(&self) -> usize {
            self.chan.core.borrow().qsize()
        }

        /// Whether no value waits in the channel.
        ///
        /// ```
        /// use evloop::channel::mpsc;
        ///
        /// let (tx, mut rx) = mpsc::channel(1);
        /// assert!(rx.is_empty());
        /// tx.try_send(()).expect("room");
        /// assert!(!rx.is_empty());
        /// let _ = rx.try_recv();
        /// assert!(rx.is_empty());
        /// ```
        pub fn is_empty(&self) -> bool {
            self.len() == 0
        }
    }

    impl<T> Drop for Receiver<T> {
        fn drop(&mut self) {
            self.chan.shutdown(true);
        }
    }

    impl<T> fmt::Debug for Receiver<T> {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            write!(
                f,
                "mpsc::Receiver {{ len: {}, closed: {} }}",
                self.len(),
                self.is_closed()
            )
        }
    }

    /// The future of [`Receiver::recv`]. Cancellation-safe (see the module documentation).
    ///
    /// ```
    /// use std::time::Duration;
    /// use evloop::channel::mpsc;
    /// use evloop::Builder;
    ///
    /// evloop::run_with(Builder::new().virtual_clock(true), async {
    ///     let (tx, mut rx) = mpsc::channel::<u8>(1);
    ///     // Nothing comes: the timeout drops the `Recv`, which loses nothing.
    ///     assert!(evloop::timeout(Duration::from_secs(1), rx.recv()).await.is_err());
    ///     tx.try_send(3).expect("room");
    ///     assert_eq!(rx.recv().await, Some(3));
    /// })?;
    /// # Ok::<(), evloop::RunError>(())
    /// ```
    #[must_use = "futures do nothing unless awaited"]
    pub struct Recv<'a, T> {
        get: Get<T>,
        _receiver: PhantomData<&'a mut Receiver<T>>,
    }

    impl<T> Future for Recv<'_, T> {
        type Output = Option<T>;

        fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<T>> {
            self.get_mut().get.poll_get(cx, QueueOp::MpscRecv).map(Result::ok)
        }
    }

    impl<T> fmt::Debug for Recv<'_, T> {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            fmt::Debug::fmt(&self.get, f)
        }
    }
}

pub mod threadsafe {
    //! Senders on any OS thread, one receiver on the loop: an unbounded channel that never
    //! blocks a sender (a short mutex section, no waiting for room).
    //!
    //! ```
    //! use evloop::channel::threadsafe;
    //!
    //! let sum = evloop::run(async {
    //!     let (tx, mut rx) = threadsafe::channel::<u64>();
    //!     let worker = std::thread::spawn(move || {
    //!         for i in 1..=100 {
    //!             tx.send(i).unwrap();
    //!         }
    //!     }); // tx dropped: the channel closes when the thread ends
    //!     let mut sum = 0;
    //!     while let Some(i) = rx.recv().await {
    //!         sum += i;
    //!     }
    //!     worker.join().unwrap();
    //!     sum
    //! })
    //! .unwrap();
    //! assert_eq!(sum, 5050);
    //! ```
    //!
    //! **Waiting**: the state is a `std::sync::Mutex` around a `VecDeque` of values, the number
    //! of senders, a closed flag and the receiving task's `Waker`. A receive that finds nothing
    //! stores its waker and returns `Pending`. A send pushes its value and *takes* the waker,
    //! then wakes it after unlocking. Waking from another thread goes through the loop's remote
    //! queue and, if the loop sleeps in `epoll_pwait2`, one eventfd write; since the first send
    //! takes the waker, every further send until the receiver runs again finds none and makes no
    //! syscall at all: a burst of sends to a sleeping loop costs one eventfd write. The receiver
    //! moves every queued value into its own buffer under one lock, so it locks once per burst,
    //! not once per value.
    //!
    //! **Closing**: dropping the last [`Sender`] (on whatever thread) wakes the receiver, which
    //! gets the values left, then `None`. When the receiver is dropped or closed, `send` gives the
    //! value back: a sender thread that outlives the loop (whose tasks, receiver included, are
    //! dropped when it closes) gets `Err(value)`, never a panic.
    //!
    //! **Cancellation safety**: a [`Recv`] future holds no value, so dropping it loses nothing; it
    //! only withdraws its waker.

    use std::collections::VecDeque;
    use std::sync::{Arc, Mutex, MutexGuard};

    use super::*;

    struct State<T> {
        items: VecDeque<T>,
        waker: Option<Waker>,
        senders: usize,
        closed: bool,
    }

    struct Chan<T> {
        state: Mutex<State<T>>,
    }

    impl<T> Chan<T> {
        /// The state; a panic elsewhere while it was locked (only an allocation failure or a
        /// panicking waker clone could cause one) leaves it consistent, so poisoning is ignored.
        fn lock(&self) -> MutexGuard<'_, State<T>> {
            self.state.lock().unwrap_or_else(|p| p.into_inner())
        }
    }

    /// A new channel: clone the sender into as many threads as you like.
    ///
    /// ```
    /// use evloop::channel::threadsafe;
    ///
    /// let got = evloop::run(async {
    ///     let (tx, mut rx) = threadsafe::channel();
    ///     let worker = std::thread::spawn(move || tx.send("from a thread"));
    ///     let got = rx.recv().await; // wakes the loop from the other thread
    ///     worker.join().expect("no panic").expect("the receiver is alive");
    ///     got
    /// })?;
    /// assert_eq!(got, Some("from a thread"));
    /// # Ok::<(), evloop::RunError>(())
    /// ```
    pub fn channel<T: std::marker::Send>() -> (Sender<T>, Receiver<T>) {
        let chan = Arc::new(Chan {
            state: Mutex::new(State {
                items: VecDeque::new(),
                waker: None,
                senders: 1,
                closed: false,
            }),
        });
        (
            Sender { chan: chan.clone() },
            Receiver {
                chan,
                buf: VecDeque::new(),
                registered: false,
            },
        )
    }

    /// A sending end, `Send + Sync + Clone` for `T: Send`: usable from any thread.
    ///
    /// ```
    /// use evloop::channel::threadsafe;
    ///
    /// let (tx, mut rx) = threadsafe::channel();
    /// let threads: Vec<_> = (0..3)
    ///     .map(|i| {
    ///         let tx = tx.clone(); // `Send + Sync + Clone`
    ///         std::thread::spawn(move || tx.send(i))
    ///     })
    ///     .collect();
    /// drop(tx);
    /// for t in threads {
    ///     t.join().expect("no panic").expect("the receiver is alive");
    /// }
    /// let mut got = evloop::run(async move {
    ///     let mut got = Vec::new();
    ///     while let Some(i) = rx.recv().await {
    ///         got.push(i);
    ///     }
    ///     got
    /// })?;
    /// got.sort();
    /// assert_eq!(got, [0, 1, 2]);
    /// # Ok::<(), evloop::RunError>(())
    /// ```
    pub struct Sender<T> {
        chan: Arc<Chan<T>>,
    }

    impl<T> Sender<T> {
        /// Queues `value` for the receiver and wakes it if it waits; never waits itself.
        /// `Err(value)` if the receiver was dropped or closed.
        ///
        /// ```
        /// use evloop::channel::threadsafe;
        ///
        /// let (tx, rx) = threadsafe::channel();
        /// assert_eq!(tx.send(1), Ok(())); // never waits, from any thread
        /// drop(rx);
        /// assert_eq!(tx.send(2), Err(2)); // the receiver is gone: the value comes back
        /// ```
        pub fn send(&self, value: T) -> Result<(), T> {
            let waker = {
                let mut st = self.chan.lock();
                if st.closed {
                    return Err(value);
                }
                st.items.push_back(value);
                st.waker.take()
            };
            if let Some(w) = waker {
                w.wake();
            }
            Ok(())
        }

        /// Whether the receiver was dropped or closed (every send would fail).
        ///
        /// ```
        /// use evloop::channel::threadsafe;
        ///
        /// let (tx, mut rx) = threadsafe::channel::<u8>();
        /// assert!(!tx.is_closed());
        /// rx.close();
        /// assert!(tx.is_closed());
        /// ```
        pub fn is_closed(&self) -> bool {
            self.chan.lock().closed
        }

        /// Whether two senders feed the same channel.
        ///
        /// ```
        /// use evloop::channel::threadsafe;
        ///
        /// let (tx, _rx) = threadsafe::channel::<u8>();
        /// let (other, _other_rx) = threadsafe::channel::<u8>();
        /// assert!(tx.same_channel(&tx.clone()));
        /// assert!(!tx.same_channel(&other));
        /// ```
        pub fn same_channel(&self, other: &Sender<T>) -> bool {
            Arc::ptr_eq(&self.chan, &other.chan)
        }
    }

    impl<T> Clone for Sender<T> {
        fn clone(&self) -> Self {
            self.chan.lock().senders += 1;
            Sender {
                chan: self.chan.clone(),
            }
        }
    }

    impl<T> Drop for Sender<T> {
        fn drop(&mut self) {
            let waker = {
                let mut st = self.chan.lock();
                st.senders -= 1;
                if st.senders == 0 { st.waker.take() } else { None }
            };
            if let Some(w) = waker {
                w.wake();
            }
        }
    }

    impl<T> fmt::Debug for Sender<T> {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            write!(f, "threadsafe::Sender {{ closed: {} }}", self.is_closed())
        }
    }

    /// Why [`Receiver::try_recv`] got nothing.
    ///
    /// ```
    /// use evloop::channel::threadsafe::{self, TryRecvError};
    ///
    /// let (tx, mut rx) = threadsafe::channel::<u8>();
    /// assert_eq!(rx.try_recv(), Err(TryRecvError::Empty));
    /// drop(tx);
    /// assert_eq!(rx.try_recv(), Err(TryRecvError::Disconnected));
    /// ```
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
    pub enum TryRecvError {
        /// No value is waiting, but more may come.
        Empty,
        /// No value is waiting and none will come: every sender is gone, or the receiver closed.
        Disconnected,
    }

    impl fmt::Display for TryRecvError {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            match self {
                TryRecvError::Empty => f.write_str("threadsafe::Receiver::try_recv: the channel is empty"),
                TryRecvError::Disconnected => {
                    f.write_str("threadsafe::Receiver::try_recv: the channel is empty and closed")
                }
            }
        }
    }

    impl Error for TryRecvError {}

    /// The receiving end, for a task on the loop. Dropping it closes the channel: later sends
    /// give their values back, and the values left in it are dropped.
    ///
    /// ```
    /// use evloop::channel::threadsafe;
    ///
    /// let total = evloop::run(async {
    ///     let (tx, mut rx) = threadsafe::channel::<u64>();
    ///     std::thread::spawn(move || {
    ///         for i in 1..=4 {
    ///             let _ = tx.send(i);
    ///         }
    ///     });
    ///     let mut total = 0;
    ///     while let Some(i) = rx.recv().await {
    ///         total += i;
    ///     }
    ///     total // the loop ends when the thread's sender is dropped
    /// })?;
    /// assert_eq!(total, 10);
    /// # Ok::<(), evloop::RunError>(())
    /// ```
    pub struct Receiver<T> {
        chan: Arc<Chan<T>>,
        /// Values already moved out of the shared state, taken without locking.
        buf: VecDeque<T>,
        /// A waker of ours may be stored in the shared state.
        registered: bool,
    }

    impl<T> Receiver<T> {
        /// The next value, waiting while there is none; `None` once the channel is empty and
        /// every sender is gone (or [`close`](Receiver::close) was called).
        ///
        /// ```
        /// use evloop::channel::threadsafe;
        ///
        /// evloop::run(async {
        ///     let (tx, mut rx) = threadsafe::channel();
        ///     std::thread::spawn(move || tx.send(42));
        ///     assert_eq!(rx.recv().await, Some(42));
        ///     assert_eq!(rx.recv().await, None); // the thread's sender was dropped
        /// })?;
        /// # Ok::<(), evloop::RunError>(())
        /// ```
        pub fn recv(&mut self) -> Recv<'_, T> {
            Recv { rx: self }
        }

        /// The next value without waiting.
        ///
        /// ```
        /// use evloop::channel::threadsafe::{self, TryRecvError};
        ///
        /// let (tx, mut rx) = threadsafe::channel();
        /// std::thread::spawn(move || tx.send(1)).join().expect("no panic").expect("alive");
        /// assert_eq!(rx.try_recv(), Ok(1));
        /// assert_eq!(rx.try_recv(), Err(TryRecvError::Disconnected));
        /// ```
        pub fn try_recv(&mut self) -> Result<T, TryRecvError> {
            if let Some(v) = self.buf.pop_front() {
                return Ok(v);
            }
            let mut st = self.chan.lock();
            std::mem::swap(&mut self.buf, &mut st.items);
            let ended = st.senders == 0 || st.closed;
            drop(st);
            match self.buf.pop_front() {
                Some(v) => Ok(v),
                None if ended => Err(TryRecvError::Disconnected),
                None => Err(TryRecvError::Empty),
            }
        }

        /// Refuses new values: sends fail from now on and give the value back; the values
        /// already sent can still be received.
        ///
        /// ```
        /// use evloop::channel::threadsafe;
        ///
        /// let (tx, mut rx) = threadsafe::channel();
        /// tx.send(1).expect("open");
        /// rx.close();
        /// assert_eq!(tx.send(2), Err(2));
        /// assert_eq!(rx.try_recv(), Ok(1)); // sent before the close: still received
        /// ```
        pub fn close(&mut self) {
            self.chan.lock().closed = true;
        }

        /// Whether no sender is left or the receiver was closed.
        ///
        /// ```
        /// use evloop::channel::threadsafe;
        ///
        /// let (tx, rx) = threadsafe::channel::<u8>();
        /// assert!(!rx.is_closed());
        /// drop(tx); // no sender left
        /// assert!(rx.is_closed());
        /// ```
        pub fn is_closed(&self) -> bool {
            let st = self.chan.lock();
            st.senders == 0 || st.closed
        }

        fn poll_recv(&mut self, cx: &mut Context<'_>) -> Poll<Option<T>> {
            if let Some(v) = self.buf.pop_front() {
                return Poll::Ready(Some(v));
            }
            let mut st = self.chan.lock();
            std::mem::swap(&mut self.buf, &mut st.items);
            if let Some(v) = self.buf.pop_front() {
                return Poll::Ready(Some(v));
            }
            if st.senders == 0 || st.closed {
                return Poll::Ready(None);
            }
            let stale = match &st.waker {
                Some(w) if w.will_wake(cx.waker()) => None,
                _ => st.waker.replace(cx.waker().clone()),
            };
            drop(st);
            self.registered = true;
            drop(stale);
            note_awaiting(Awaiting::Queue(QueueOp::ThreadsafeRecv));
            Poll::Pending
        }

        /// Withdraws a stored waker (a dropped `Recv`), so it does not keep the task's waker
        /// alive or cause a spurious wake.
        fn unregister(&mut self) {
            if std::mem::take(&mut self.registered) {
                let stale = self.chan.lock().waker.take();
                drop(stale);
            }
        }
    }

    impl<T> Drop for Receiver<T> {
        fn drop(&mut self) {
            let (items, waker) = {
                let mut st = self.chan.lock();
                st.closed = true;
                (std::mem::take(&mut st.items), st.waker.take())
            };
            drop(waker);
            drop(items);
        }
    }

    impl<T> fmt::Debug for Receiver<T> {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            write!(f, "threadsafe::Receiver {{ closed: {} }}", self.is_closed())
        }
    }

    /// The future of [`Receiver::recv`]. Cancellation-safe: it holds no value.
    ///
    /// ```
    /// use std::time::Duration;
    /// use evloop::channel::threadsafe;
    /// use evloop::Builder;
    ///
    /// evloop::run_with(Builder::new().virtual_clock(true), async {
    ///     let (tx, mut rx) = threadsafe::channel::<u8>();
    ///     // Nothing comes: the timeout drops the `Recv`, which holds no value.
    ///     assert!(evloop::timeout(Duration::from_secs(1), rx.recv()).await.is_err());
    ///     tx.send(3).expect("open");
    ///     assert_eq!(rx.recv().await, Some(3));
    /// })?;
    /// # Ok::<(), evloop::RunError>(())
    /// ```
    #[must_use = "futures do nothing unless awaited"]
    pub struct Recv<'a, T> {
        rx: &'a mut Receiver<T>,
    }

    impl<T> Future for Recv<'_, T> {
        type Output = Option<T>;

        fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<T>> {
            let this = self.get_mut();
            let out = this.rx.poll_recv(cx);
            if out.is_ready() {
                this.rx.registered = false;
            }
            out
        }
    }

    impl<T> Drop for Recv<'_, T> {
        fn drop(&mut self) {
            self.rx.unregister();
        }
    }

    impl<T> fmt::Debug for Recv<'_, T> {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("threadsafe::Recv")
        }
    }
}
