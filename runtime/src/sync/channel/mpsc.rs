//! Many senders, one receiver, on one loop's thread (`!Send`), bounded or unbounded.
//!
//! ```
//! use evloop::sync::mpsc;
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
//! machinery of [`Queue`](crate::sync::queue::Queue) (`sync/queue/`), with a count of senders on top.
//!
//! **Closing**: when the last [`Sender`] is dropped, `recv` returns the values left, then
//! `None`. [`Receiver::close`] refuses new values (senders, including waiting ones, get
//! theirs back in [`SendError`]) and lets the receiver drain the rest; dropping the receiver
//! does the same and drops the values left.
//!
//! **Cancellation safety**: a dropped `recv` future never loses a value (one handed to it is
//! put back in front); a dropped waiting `send` never sends, never duplicates its value and
//! never keeps a slot reserved.

use std::cell::{Cell, RefCell};
use std::error::Error;
use std::fmt;
use std::future::Future;
use std::marker::PhantomData;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll};

use crate::sync::ops::WaitOp;
use crate::sync::queue::{Core, Get, Put, QueueShutDown, SharedCore, TryGetError, TryPutError, with_core};

// Issue 21, round 2: tokio's `unbounded_channel` (a sender whose `send` is not async).
mod unbounded;
pub use self::unbounded::{UnboundedReceiver, UnboundedSender, unbounded_channel};

struct Chan<T> {
    core: SharedCore<T>,
    senders: Cell<usize>,
}

impl<T> Chan<T> {
    fn shutdown(&self, immediate: bool) {
        let discarded = with_core(&self.core, |c, wakers| c.shutdown(immediate, wakers));
        drop(discarded);
    }
}

/// A bounded channel: at most `capacity` values wait in it; a capacity of 0 is taken as 1
/// (there is no rendezvous mode).
///
/// ```
/// use evloop::sync::mpsc::{self, TrySendError};
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
/// use evloop::sync::mpsc;
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
/// use evloop::sync::mpsc::{self, SendError};
///
/// evloop::run(async {
///     let (tx, rx) = mpsc::channel(1);
///     drop(rx);
///     assert_eq!(tx.send("hello").await, Err(SendError("hello")));
/// })?;
/// # Ok::<(), evloop::task::RunError>(())
/// ```
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct SendError<T>(pub T);

impl<T> SendError<T> {
    /// The value that was not sent.
    ///
    /// ```
    /// use evloop::sync::mpsc;
    ///
    /// evloop::run(async {
    ///     let (tx, mut rx) = mpsc::channel(1);
    ///     rx.close();
    ///     let err = tx.send(String::from("job")).await.unwrap_err();
    ///     assert_eq!(err.into_inner(), "job");
    /// })?;
    /// # Ok::<(), evloop::task::RunError>(())
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
/// use evloop::sync::mpsc::{self, TrySendError};
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
    /// use evloop::sync::mpsc;
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
/// use evloop::sync::mpsc::{self, TryRecvError};
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
/// use evloop::sync::mpsc;
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
/// # Ok::<(), evloop::task::RunError>(())
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
    /// use evloop::sync::mpsc;
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
    ///     Ok::<(), evloop::task::TaskError>(())
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
    /// use evloop::sync::mpsc::{self, TrySendError};
    ///
    /// let (tx, mut rx) = mpsc::channel(1);
    /// assert_eq!(tx.try_send(1), Ok(()));
    /// assert_eq!(tx.try_send(2), Err(TrySendError::Full(2)));
    /// assert_eq!(rx.try_recv(), Ok(1));
    /// ```
    pub fn try_send(&self, value: T) -> Result<(), TrySendError<T>> {
        match with_core(&self.chan.core, |c, wakers| c.try_put(value, wakers)) {
            Ok(()) => Ok(()),
            Err(TryPutError::Full(v)) => Err(TrySendError::Full(v)),
            Err(TryPutError::ShutDown(v)) => Err(TrySendError::Closed(v)),
        }
    }

    /// Whether the receiver was dropped or closed (every send would fail).
    ///
    /// ```
    /// use evloop::sync::mpsc;
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
    /// use evloop::sync::mpsc;
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

/// The future of [`Sender::send`]. Cancellation-safe (see the [module documentation](self)).
///
/// ```
/// use std::time::Duration;
/// use evloop::sync::mpsc;
/// use evloop::event_loop::Builder;
///
/// Builder::new().virtual_clock(true).run(async {
///     let (tx, mut rx) = mpsc::channel(1);
///     tx.send(1).await.expect("room");
///     // Full: the timeout drops the waiting `Send`, and 2 is not sent.
///     assert!(evloop::time::timeout(Duration::from_secs(1), tx.send(2)).await.is_err());
///     assert_eq!(rx.len(), 1);
///     assert_eq!(rx.recv().await, Some(1));
/// })?;
/// # Ok::<(), evloop::task::RunError>(())
/// ```
#[must_use = "futures do nothing unless you `.await` or poll them"]
pub struct Send<'a, T> {
    put: Put<T>,
    _sender: PhantomData<&'a Sender<T>>,
}

impl<T> Future for Send<'_, T> {
    type Output = Result<(), SendError<T>>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.get_mut();
        this.put
            .poll_put(cx, WaitOp::MpscSend)
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
/// use evloop::sync::mpsc;
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
/// # Ok::<(), evloop::task::RunError>(())
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
    /// use evloop::sync::mpsc;
    ///
    /// evloop::run(async {
    ///     let (tx, mut rx) = mpsc::channel(1);
    ///     evloop::spawn(async move { tx.send("ping").await });
    ///     assert_eq!(rx.recv().await, Some("ping")); // waits for the task's send
    ///     assert_eq!(rx.recv().await, None); // the sender is gone
    /// })?;
    /// # Ok::<(), evloop::task::RunError>(())
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
    /// use evloop::sync::mpsc::{self, TryRecvError};
    ///
    /// let (tx, mut rx) = mpsc::channel(1);
    /// assert_eq!(rx.try_recv(), Err(TryRecvError::Empty));
    /// tx.try_send(9).expect("room");
    /// assert_eq!(rx.try_recv(), Ok(9));
    /// ```
    pub fn try_recv(&mut self) -> Result<T, TryRecvError> {
        match with_core(&self.chan.core, |c, wakers| c.try_get(wakers)) {
            Ok(v) => Ok(v),
            Err(TryGetError::Empty) => Err(TryRecvError::Empty),
            Err(TryGetError::ShutDown) => Err(TryRecvError::Disconnected),
        }
    }

    /// Closes the channel for senders: sends fail from now on (waiting senders are woken and
    /// get their values back); the values already in it can still be received.
    ///
    /// ```
    /// use evloop::sync::mpsc::{self, TrySendError};
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
    /// use evloop::sync::mpsc;
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
    /// use evloop::sync::mpsc;
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
    /// use evloop::sync::mpsc;
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

/// The future of [`Receiver::recv`]. Cancellation-safe (see the [module documentation](self)).
///
/// ```
/// use std::time::Duration;
/// use evloop::sync::mpsc;
/// use evloop::event_loop::Builder;
///
/// Builder::new().virtual_clock(true).run(async {
///     let (tx, mut rx) = mpsc::channel::<u8>(1);
///     // Nothing comes: the timeout drops the `Recv`, which loses nothing.
///     assert!(evloop::time::timeout(Duration::from_secs(1), rx.recv()).await.is_err());
///     tx.try_send(3).expect("room");
///     assert_eq!(rx.recv().await, Some(3));
/// })?;
/// # Ok::<(), evloop::task::RunError>(())
/// ```
#[must_use = "futures do nothing unless you `.await` or poll them"]
pub struct Recv<'a, T> {
    get: Get<T>,
    _receiver: PhantomData<&'a mut Receiver<T>>,
}

impl<T> Future for Recv<'_, T> {
    type Output = Option<T>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<T>> {
        self.get_mut().get.poll_get(cx, WaitOp::MpscRecv).map(Result::ok)
    }
}

impl<T> fmt::Debug for Recv<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&self.get, f)
    }
}
