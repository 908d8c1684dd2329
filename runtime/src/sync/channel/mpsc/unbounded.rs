//! tokio's unbounded channel shape: [`unbounded_channel`] with an [`UnboundedSender`] whose
//! `send` is a plain call (an unbounded channel never makes a sender wait) and an
//! [`UnboundedReceiver`], so tokio code that writes `tx.send(v).unwrap()` ports unchanged.
//!
//! Both wrap the unbounded form of this module's channel ([`unbounded`](super::unbounded)):
//! `send` is its `try_send`, which can only fail when the receiver is gone; the receiver's
//! methods pass straight through.

use std::fmt;

use super::{Receiver, Recv, SendError, Sender, TryRecvError, TrySendError, unbounded};

/// A channel without a bound, tokio's way round (tokio's `mpsc::unbounded_channel`): the
/// sender's [`send`](UnboundedSender::send) never waits.
///
/// ```
/// use evloop::sync::mpsc;
///
/// evloop::run(async {
///     let (tx, mut rx) = mpsc::unbounded_channel();
///     tx.send("no await").unwrap();
///     assert_eq!(rx.recv().await, Some("no await"));
/// })?;
/// # Ok::<(), evloop::task::RunError>(())
/// ```
pub fn unbounded_channel<T>() -> (UnboundedSender<T>, UnboundedReceiver<T>) {
    let (tx, rx) = unbounded();
    (UnboundedSender { inner: tx }, UnboundedReceiver { inner: rx })
}

/// The sending side of [`unbounded_channel`]; clone it for more senders.
///
/// ```
/// let (tx, rx) = evloop::sync::mpsc::unbounded_channel::<u8>();
/// drop(rx);
/// assert!(tx.send(1).is_err()); // the receiver is gone
/// ```
pub struct UnboundedSender<T> {
    inner: Sender<T>,
}

impl<T> UnboundedSender<T> {
    /// Queues `value` at once; fails (giving it back) only when the receiver is gone or closed.
    ///
    /// ```
    /// let (tx, mut rx) = evloop::sync::mpsc::unbounded_channel();
    /// tx.send(5).unwrap();
    /// assert_eq!(rx.try_recv(), Ok(5));
    /// ```
    pub fn send(&self, value: T) -> Result<(), SendError<T>> {
        self.inner.try_send(value).map_err(|e| match e {
            TrySendError::Closed(v) | TrySendError::Full(v) => SendError(v),
        })
    }

    /// Whether the receiver is gone or closed.
    ///
    /// ```
    /// let (tx, mut rx) = evloop::sync::mpsc::unbounded_channel::<u8>();
    /// rx.close();
    /// assert!(tx.is_closed());
    /// ```
    pub fn is_closed(&self) -> bool {
        self.inner.is_closed()
    }

    /// Whether both senders belong to one channel.
    ///
    /// ```
    /// let (tx, _rx) = evloop::sync::mpsc::unbounded_channel::<u8>();
    /// assert!(tx.same_channel(&tx.clone()));
    /// ```
    pub fn same_channel(&self, other: &UnboundedSender<T>) -> bool {
        self.inner.same_channel(&other.inner)
    }
}

impl<T> Clone for UnboundedSender<T> {
    fn clone(&self) -> Self {
        UnboundedSender {
            inner: self.inner.clone(),
        }
    }
}

impl<T> fmt::Debug for UnboundedSender<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("UnboundedSender").field("inner", &self.inner).finish()
    }
}

/// The receiving side of [`unbounded_channel`].
///
/// ```
/// use evloop::sync::mpsc;
///
/// evloop::run(async {
///     let (tx, mut rx) = mpsc::unbounded_channel();
///     evloop::spawn(async move {
///         for i in 0..3 {
///             tx.send(i).unwrap();
///         }
///     });
///     let mut got = Vec::new();
///     while let Some(v) = rx.recv().await {
///         got.push(v);
///     }
///     assert_eq!(got, [0, 1, 2]);
/// })?;
/// # Ok::<(), evloop::task::RunError>(())
/// ```
pub struct UnboundedReceiver<T> {
    inner: Receiver<T>,
}

impl<T> UnboundedReceiver<T> {
    /// The next value, waiting for one; `None` once every sender is gone and the channel is
    /// drained.
    ///
    /// ```
    /// evloop::run(async {
    ///     let (tx, mut rx) = evloop::sync::mpsc::unbounded_channel::<u8>();
    ///     drop(tx);
    ///     assert_eq!(rx.recv().await, None);
    /// })?;
    /// # Ok::<(), evloop::task::RunError>(())
    /// ```
    pub fn recv(&mut self) -> Recv<'_, T> {
        self.inner.recv()
    }

    /// The next value if one is queued, without waiting.
    ///
    /// ```
    /// use evloop::sync::mpsc::{TryRecvError, unbounded_channel};
    ///
    /// let (_tx, mut rx) = unbounded_channel::<u8>();
    /// assert_eq!(rx.try_recv(), Err(TryRecvError::Empty));
    /// ```
    pub fn try_recv(&mut self) -> Result<T, TryRecvError> {
        self.inner.try_recv()
    }

    /// Closes the channel: sends fail from now on; what is queued can still be received.
    ///
    /// ```
    /// let (tx, mut rx) = evloop::sync::mpsc::unbounded_channel();
    /// tx.send(1).unwrap();
    /// rx.close();
    /// assert!(tx.send(2).is_err());
    /// assert_eq!(rx.try_recv(), Ok(1));
    /// ```
    pub fn close(&mut self) {
        self.inner.close()
    }

    /// Whether the channel is closed (by [`close`](Self::close) or because every sender is gone).
    ///
    /// ```
    /// let (tx, rx) = evloop::sync::mpsc::unbounded_channel::<u8>();
    /// drop(tx);
    /// assert!(rx.is_closed());
    /// ```
    pub fn is_closed(&self) -> bool {
        self.inner.is_closed()
    }

    /// How many values are queued.
    ///
    /// ```
    /// let (tx, rx) = evloop::sync::mpsc::unbounded_channel();
    /// tx.send(()).unwrap();
    /// assert_eq!(rx.len(), 1);
    /// ```
    pub fn len(&self) -> usize {
        self.inner.len()
    }

    /// Whether nothing is queued.
    ///
    /// ```
    /// let (_tx, rx) = evloop::sync::mpsc::unbounded_channel::<u8>();
    /// assert!(rx.is_empty());
    /// ```
    pub fn is_empty(&self) -> bool {
        self.inner.is_empty()
    }

    /// The receiver of evloop's own shape (for `stream::wrappers::ReceiverStream`).
    ///
    /// ```
    /// use evloop::stream::{StreamExt, wrappers::ReceiverStream};
    ///
    /// evloop::run(async {
    ///     let (tx, rx) = evloop::sync::mpsc::unbounded_channel();
    ///     tx.send(1).unwrap();
    ///     drop(tx);
    ///     assert_eq!(ReceiverStream::new(rx.into_inner()).collect::<Vec<_>>().await, [1]);
    /// })?;
    /// # Ok::<(), evloop::task::RunError>(())
    /// ```
    pub fn into_inner(self) -> Receiver<T> {
        self.inner
    }
}

impl<T> fmt::Debug for UnboundedReceiver<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("UnboundedReceiver").field("inner", &self.inner).finish()
    }
}
