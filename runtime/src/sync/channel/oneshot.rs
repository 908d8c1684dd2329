//! One value, once: a [`Sender`] consumed by [`send`](Sender::send) and a [`Receiver`] that
//! is itself the future of the value (`!Send`: both ends live on one loop's thread).
//!
//! ```
//! let got = evloop::run(async {
//!     let (tx, rx) = evloop::sync::oneshot::<u32>();
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

use std::cell::RefCell;
use std::error::Error;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll, Waker};

use crate::event_loop::budget;
use crate::event_loop::error::WrongLoopError;
use crate::event_loop::trace::note_awaiting;
use crate::sync::LoopBinding;
use crate::sync::ops::WaitOp;
use crate::sync::wait_queue::park;

struct State<T> {
    value: Option<T>,
    waker: Option<Waker>,
    /// The sender's task in [`Sender::closed`], woken when the receiver goes or closes.
    closed_waker: Option<Waker>,
    sender_gone: bool,
    receiver_closed: bool,
    /// The loop whose task may wait for the value (the first one that did).
    binding: LoopBinding,
}

type Shared<T> = Rc<RefCell<State<T>>>;

/// A new one-shot channel.
///
/// ```
/// use evloop::sync::oneshot;
///
/// let (tx, mut rx) = oneshot::channel();
/// tx.send(1).expect("the receiver is alive");
/// assert_eq!(rx.try_recv(), Ok(1));
/// ```
pub fn channel<T>() -> (Sender<T>, Receiver<T>) {
    let shared = Rc::new(RefCell::new(State {
        value: None,
        waker: None,
        closed_waker: None,
        sender_gone: false,
        receiver_closed: false,
        binding: LoopBinding::default(),
    }));
    (
        Sender { shared: shared.clone() },
        Receiver {
            shared,
            terminated: false,
        },
    )
}

/// The errors of this channel under tokio's path (`tokio::sync::oneshot::error`).
///
/// ```
/// use evloop::sync::oneshot::{self, error::TryRecvError};
///
/// let (_tx, mut rx) = oneshot::channel::<u8>();
/// assert_eq!(rx.try_recv(), Err(TryRecvError::Empty));
/// ```
pub mod error {
    pub use super::{RecvError, TryRecvError};
}

/// The sending end: [`send`](Sender::send) once, or drop it to close the channel.
///
/// ```
/// use evloop::sync::oneshot::{RecvError, self};
///
/// let got = evloop::run(async {
///     let (tx, rx) = oneshot::channel::<u32>();
///     drop(tx); // dropping the sender without sending closes the channel
///     rx.await
/// })?;
/// assert_eq!(got, Err(RecvError::Closed));
/// # Ok::<(), evloop::task::RunError>(())
/// ```
pub struct Sender<T> {
    shared: Shared<T>,
}

impl<T> Sender<T> {
    /// Sends the value and wakes the receiver. `Err(value)` if the receiver was dropped or
    /// closed: the value comes back instead of being lost.
    ///
    /// ```
    /// use evloop::sync::oneshot;
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
    /// use evloop::sync::oneshot;
    ///
    /// let (tx, mut rx) = oneshot::channel::<u8>();
    /// assert!(!tx.is_closed());
    /// rx.close();
    /// assert!(tx.is_closed());
    /// ```
    pub fn is_closed(&self) -> bool {
        self.shared.borrow().receiver_closed
    }

    /// Waits until the receiver is dropped or closed (tokio's `Sender::closed`): a producer
    /// can stop computing a value nobody will take. Cancel-safe.
    ///
    /// ```
    /// use evloop::sync::oneshot;
    ///
    /// evloop::run(async {
    ///     let (mut tx, rx) = oneshot::channel::<u8>();
    ///     evloop::spawn(async move { drop(rx) });
    ///     tx.closed().await;
    ///     assert!(tx.is_closed());
    /// })?;
    /// # Ok::<(), evloop::task::RunError>(())
    /// ```
    pub async fn closed(&mut self) {
        std::future::poll_fn(|cx| self.poll_closed(cx)).await
    }

    /// [`closed`](Sender::closed) as a poll: `Ready` once the receiver is dropped or closed,
    /// else `Pending` with the task's waker kept (the last poll's waker is the one woken).
    ///
    /// ```
    /// use std::task::{Context, Poll, Waker};
    /// use evloop::sync::oneshot;
    ///
    /// let (mut tx, rx) = oneshot::channel::<u8>();
    /// let mut cx = Context::from_waker(Waker::noop());
    /// assert!(tx.poll_closed(&mut cx).is_pending());
    /// drop(rx);
    /// assert_eq!(tx.poll_closed(&mut cx), Poll::Ready(()));
    /// ```
    pub fn poll_closed(&mut self, cx: &mut Context<'_>) -> Poll<()> {
        std::task::ready!(budget::poll_proceed(cx));
        let mut st = self.shared.borrow_mut();
        if st.receiver_closed {
            return Poll::Ready(());
        }
        let stale = park(&mut st.closed_waker, cx.waker());
        drop(st);
        drop(stale);
        Poll::Pending
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
/// use evloop::sync::oneshot;
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
    /// It gave its value or its error (tokio's `is_terminated`).
    terminated: bool,
}

/// Why a [`Receiver`] got no value.
///
/// ```
/// use evloop::sync::oneshot::{RecvError, self};
///
/// evloop::run(async {
///     let (tx, rx) = oneshot::channel::<()>();
///     drop(tx);
///     let err = rx.await.unwrap_err();
///     assert_eq!(err, RecvError::Closed);
///     assert!(err.to_string().contains("dropped without sending"));
/// })?;
/// # Ok::<(), evloop::task::RunError>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum RecvError {
    /// The sender was dropped without sending (or the value was already received).
    Closed,
    /// The receiver is bound to another event loop than the task that awaited it (the
    /// loop of the first task that waited for it; see the [`sync`](crate::sync) module's
    /// "Bound to one loop").
    WrongLoop(WrongLoopError),
}

impl fmt::Display for RecvError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RecvError::Closed => f.write_str("oneshot::Receiver: the sender was dropped without sending a value"),
            RecvError::WrongLoop(e) => e.fmt(f),
        }
    }
}

impl Error for RecvError {}

/// Why [`Receiver::try_recv`] got no value.
///
/// ```
/// use evloop::sync::oneshot::{self, TryRecvError};
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
    /// use evloop::sync::oneshot::{self, TryRecvError};
    ///
    /// let (tx, mut rx) = oneshot::channel();
    /// assert_eq!(rx.try_recv(), Err(TryRecvError::Empty));
    /// tx.send('x').expect("the receiver is alive");
    /// assert_eq!(rx.try_recv(), Ok('x'));
    /// ```
    pub fn try_recv(&mut self) -> Result<T, TryRecvError> {
        let mut st = self.shared.borrow_mut();
        let out = match st.value.take() {
            Some(v) => Ok(v),
            // Closed by this side (`close`) and nothing sent before: nothing can come.
            None if st.sender_gone || st.receiver_closed => Err(TryRecvError::Closed),
            None => Err(TryRecvError::Empty),
        };
        self.terminated |= !matches!(out, Err(TryRecvError::Empty));
        out
    }

    /// Whether this receiver already gave its value or its error (awaited to the end, or
    /// `try_recv` returned the value): polling it again is a mistake (tokio's
    /// `is_terminated`).
    ///
    /// ```
    /// use evloop::sync::oneshot;
    ///
    /// let (tx, mut rx) = oneshot::channel();
    /// tx.send(1).unwrap();
    /// assert!(!rx.is_terminated()); // sent, not yet received
    /// assert_eq!(rx.try_recv(), Ok(1));
    /// assert!(rx.is_terminated());
    /// ```
    pub fn is_terminated(&self) -> bool {
        self.terminated
    }

    /// Whether no value is waiting here: none was sent yet, or it was already received, or the
    /// channel closed without one (tokio's `is_empty`).
    ///
    /// ```
    /// use evloop::sync::oneshot;
    ///
    /// let (tx, mut rx) = oneshot::channel();
    /// assert!(rx.is_empty());
    /// tx.send('v').unwrap();
    /// assert!(!rx.is_empty());
    /// ```
    pub fn is_empty(&self) -> bool {
        self.shared.borrow().value.is_none()
    }

    /// Refuses the value from now on: a later `send` fails and gives it back. A value sent
    /// before can still be received.
    ///
    /// ```
    /// use evloop::sync::oneshot;
    ///
    /// let (tx, mut rx) = oneshot::channel();
    /// rx.close();
    /// assert_eq!(tx.send(1), Err(1)); // refused, and given back
    /// ```
    pub fn close(&mut self) {
        let waker = {
            let mut st = self.shared.borrow_mut();
            st.receiver_closed = true;
            st.closed_waker.take()
        };
        if let Some(w) = waker {
            w.wake();
        }
    }
}

impl<T> Future for Receiver<T> {
    type Output = Result<T, RecvError>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        // The task's budget, as every wait of the sync layer spends it (`wait_queue.rs`).
        std::task::ready!(budget::poll_proceed(cx));
        let this = self.get_mut();
        let mut st = this.shared.borrow_mut();
        if let Some(v) = st.value.take() {
            this.terminated = true;
            return Poll::Ready(Ok(v));
        }
        // The sender is gone, or this side closed and nothing was sent before: no value can
        // come (waiting would be forever while the sender lives on).
        if st.sender_gone || st.receiver_closed {
            this.terminated = true;
            return Poll::Ready(Err(RecvError::Closed));
        }
        if let Err(e) = st.binding.bind(WaitOp::OneshotRecv) {
            return Poll::Ready(Err(RecvError::WrongLoop(e)));
        }
        let stale = park(&mut st.waker, cx.waker());
        drop(st);
        drop(stale);
        note_awaiting(WaitOp::OneshotRecv.awaiting());
        Poll::Pending
    }
}

impl<T> Drop for Receiver<T> {
    fn drop(&mut self) {
        let (value, waker, closed_waker) = {
            let mut st = self.shared.borrow_mut();
            st.receiver_closed = true;
            (st.value.take(), st.waker.take(), st.closed_waker.take())
        };
        drop(waker);
        drop(value);
        if let Some(w) = closed_waker {
            w.wake();
        }
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
