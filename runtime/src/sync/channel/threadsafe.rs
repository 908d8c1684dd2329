//! Senders on any OS thread, one receiver on the loop: an unbounded channel that never
//! blocks a sender (a short mutex section, no waiting for room).
//!
//! ```
//! use evloop::sync::threadsafe;
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
use std::error::Error;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll, Waker};

use crate::event_loop::budget;
use crate::event_loop::trace::note_awaiting;
use crate::sync::ops::WaitOp;
use crate::sync::wait_queue::park;

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
/// use evloop::sync::threadsafe;
///
/// let got = evloop::run(async {
///     let (tx, mut rx) = threadsafe::channel();
///     let worker = std::thread::spawn(move || tx.send("from a thread"));
///     let got = rx.recv().await; // wakes the loop from the other thread
///     worker.join().expect("no panic").expect("the receiver is alive");
///     got
/// })?;
/// assert_eq!(got, Some("from a thread"));
/// # Ok::<(), evloop::task::RunError>(())
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
/// use evloop::sync::threadsafe;
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
/// # Ok::<(), evloop::task::RunError>(())
/// ```
pub struct Sender<T> {
    chan: Arc<Chan<T>>,
}

impl<T> Sender<T> {
    /// Queues `value` for the receiver and wakes it if it waits; never waits itself.
    /// `Err(value)` if the receiver was dropped or closed.
    ///
    /// ```
    /// use evloop::sync::threadsafe;
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
    /// use evloop::sync::threadsafe;
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
    /// use evloop::sync::threadsafe;
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
/// use evloop::sync::threadsafe::{self, TryRecvError};
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
/// use evloop::sync::threadsafe;
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
/// # Ok::<(), evloop::task::RunError>(())
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
    /// use evloop::sync::threadsafe;
    ///
    /// evloop::run(async {
    ///     let (tx, mut rx) = threadsafe::channel();
    ///     std::thread::spawn(move || tx.send(42));
    ///     assert_eq!(rx.recv().await, Some(42));
    ///     assert_eq!(rx.recv().await, None); // the thread's sender was dropped
    /// })?;
    /// # Ok::<(), evloop::task::RunError>(())
    /// ```
    pub fn recv(&mut self) -> Recv<'_, T> {
        Recv { rx: self }
    }

    /// The next value without waiting.
    ///
    /// ```
    /// use evloop::sync::threadsafe::{self, TryRecvError};
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
    /// use evloop::sync::threadsafe;
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
    /// use evloop::sync::threadsafe;
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
        // The task's budget (`wait_queue.rs`): a producer thread that keeps the channel full
        // must not keep the receiving task, and so its loop, from yielding.
        std::task::ready!(budget::poll_proceed(cx));
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
        let stale = park(&mut st.waker, cx.waker());
        drop(st);
        self.registered = true;
        drop(stale);
        note_awaiting(WaitOp::ThreadsafeRecv.awaiting());
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
/// use evloop::sync::threadsafe;
/// use evloop::event_loop::Builder;
///
/// Builder::new().virtual_clock(true).run(async {
///     let (tx, mut rx) = threadsafe::channel::<u8>();
///     // Nothing comes: the timeout drops the `Recv`, which holds no value.
///     assert!(evloop::time::timeout(Duration::from_secs(1), rx.recv()).await.is_err());
///     tx.send(3).expect("open");
///     assert_eq!(rx.recv().await, Some(3));
/// })?;
/// # Ok::<(), evloop::task::RunError>(())
/// ```
#[must_use = "futures do nothing unless you `.await` or poll them"]
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
