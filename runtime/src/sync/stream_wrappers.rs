//! The sync layer's receivers as streams (tokio-stream's `wrappers`): [`ReceiverStream`] for an
//! [`mpsc`](crate::sync::mpsc) receiver, [`BroadcastStream`] and [`WatchStream`]. Each owns its
//! receiver and awaits it through the task layer's `OwnedPoll` (a boxed receive that gives the
//! receiver back with the value), so a pending receive keeps its place in the wait queue.

use std::fmt;
use std::pin::Pin;
use std::task::{Context, Poll};

use crate::sync::channel::{broadcast, mpsc, watch};
use crate::task::stream::Stream;
use crate::task::stream::owned::OwnedPoll;

/// An [`mpsc::Receiver`](crate::sync::mpsc::Receiver) as a stream; it ends when every sender is
/// gone and the channel is drained (tokio-stream's `ReceiverStream`, also for the unbounded
/// channel, whose receiver is the same type here).
///
/// ```
/// use evloop::stream::{StreamExt, wrappers::ReceiverStream};
///
/// evloop::run(async {
///     let (tx, rx) = evloop::sync::mpsc::channel(4);
///     evloop::spawn(async move {
///         for i in 0..3 {
///             tx.send(i).await.unwrap();
///         }
///     });
///     let v: Vec<_> = ReceiverStream::new(rx).collect().await;
///     assert_eq!(v, [0, 1, 2]);
/// })?;
/// # Ok::<(), evloop::task::RunError>(())
/// ```
#[must_use = "streams do nothing unless polled"]
pub struct ReceiverStream<T: 'static> {
    inner: OwnedPoll<mpsc::Receiver<T>, Option<T>>,
}

impl<T: 'static> ReceiverStream<T> {
    /// Wraps `rx`.
    ///
    /// ```
    /// let (_tx, rx) = evloop::sync::mpsc::channel::<u8>(1);
    /// let _s = evloop::stream::wrappers::ReceiverStream::new(rx);
    /// ```
    pub fn new(rx: mpsc::Receiver<T>) -> Self {
        ReceiverStream {
            inner: OwnedPoll::new(rx, |mut rx| {
                Box::pin(async move {
                    let v = rx.recv().await;
                    (v, rx)
                })
            }),
        }
    }

    /// The receiver back; `None` if dropped while a receive was pending (the receive held it).
    ///
    /// ```
    /// let (_tx, rx) = evloop::sync::mpsc::channel::<u8>(1);
    /// let s = evloop::stream::wrappers::ReceiverStream::new(rx);
    /// assert!(s.into_inner().is_some());
    /// ```
    pub fn into_inner(self) -> Option<mpsc::Receiver<T>> {
        self.inner.into_source()
    }
}

impl<T: 'static> Stream for ReceiverStream<T> {
    type Item = T;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<T>> {
        self.inner.poll(cx)
    }
}

impl<T: 'static> fmt::Debug for ReceiverStream<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ReceiverStream").finish_non_exhaustive()
    }
}

/// Why a [`BroadcastStream`] gave no value: its receiver lagged (tokio-stream's
/// `BroadcastStreamRecvError`).
///
/// ```
/// use evloop::stream::wrappers::BroadcastStreamRecvError;
///
/// let e = BroadcastStreamRecvError::Lagged(3);
/// assert_eq!(e.to_string(), "broadcast: receiver lagged by 3 value(s)");
/// ```
#[derive(Debug, PartialEq, Eq, Clone, Copy)]
pub enum BroadcastStreamRecvError {
    /// This many values were overwritten before the receiver read them; the stream goes on
    /// from the oldest kept.
    Lagged(u64),
}

impl fmt::Display for BroadcastStreamRecvError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BroadcastStreamRecvError::Lagged(n) => write!(f, "broadcast: receiver lagged by {n} value(s)"),
        }
    }
}

impl std::error::Error for BroadcastStreamRecvError {}

/// A [`broadcast::Receiver`](crate::sync::broadcast::Receiver) as a stream of
/// `Result<T, BroadcastStreamRecvError>`; it ends when the channel closes (tokio-stream's
/// `BroadcastStream`).
///
/// ```
/// use evloop::stream::{StreamExt, wrappers::BroadcastStream};
///
/// evloop::run(async {
///     let (tx, rx) = evloop::sync::broadcast::channel(4);
///     tx.send(1).unwrap();
///     drop(tx);
///     let v: Vec<_> = BroadcastStream::new(rx).collect().await;
///     assert_eq!(v, [Ok(1)]);
/// })?;
/// # Ok::<(), evloop::task::RunError>(())
/// ```
#[must_use = "streams do nothing unless polled"]
pub struct BroadcastStream<T: 'static> {
    inner: OwnedPoll<broadcast::Receiver<T>, Option<Result<T, BroadcastStreamRecvError>>>,
}

impl<T: Clone + 'static> BroadcastStream<T> {
    /// Wraps `rx`.
    ///
    /// ```
    /// let (_tx, rx) = evloop::sync::broadcast::channel::<u8>(1);
    /// let _s = evloop::stream::wrappers::BroadcastStream::new(rx);
    /// ```
    pub fn new(rx: broadcast::Receiver<T>) -> Self {
        BroadcastStream {
            inner: OwnedPoll::new(rx, |mut rx| {
                Box::pin(async move {
                    let v = match rx.recv().await {
                        Ok(v) => Some(Ok(v)),
                        Err(broadcast::error::RecvError::Lagged(n)) => Some(Err(BroadcastStreamRecvError::Lagged(n))),
                        Err(broadcast::error::RecvError::Closed) => None,
                    };
                    (v, rx)
                })
            }),
        }
    }
}

impl<T: Clone + 'static> Stream for BroadcastStream<T> {
    type Item = Result<T, BroadcastStreamRecvError>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        self.inner.poll(cx)
    }
}

impl<T: 'static> fmt::Debug for BroadcastStream<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BroadcastStream").finish_non_exhaustive()
    }
}

/// A [`watch::Receiver`](crate::sync::watch::Receiver) as a stream of its values: the current
/// value first, then each new one (values sent between two polls collapse into the latest); it
/// ends when the sender goes (tokio-stream's `WatchStream`).
///
/// ```
/// use evloop::stream::{StreamExt, wrappers::WatchStream};
///
/// evloop::run(async {
///     let (tx, rx) = evloop::sync::watch::channel("a");
///     let mut s = WatchStream::new(rx);
///     assert_eq!(s.next().await, Some("a"));
///     tx.send("b").unwrap();
///     assert_eq!(s.next().await, Some("b"));
///     drop(tx);
///     assert_eq!(s.next().await, None);
/// })?;
/// # Ok::<(), evloop::task::RunError>(())
/// ```
#[must_use = "streams do nothing unless polled"]
pub struct WatchStream<T: 'static> {
    inner: OwnedPoll<(watch::Receiver<T>, bool), Option<T>>,
}

impl<T: Clone + 'static> WatchStream<T> {
    /// Wraps `rx`; the first value is the current one.
    ///
    /// ```
    /// let (_tx, rx) = evloop::sync::watch::channel(0);
    /// let _s = evloop::stream::wrappers::WatchStream::new(rx);
    /// ```
    pub fn new(rx: watch::Receiver<T>) -> Self {
        WatchStream {
            inner: OwnedPoll::new((rx, true), |(mut rx, first)| {
                Box::pin(async move {
                    if !first && rx.changed().await.is_err() {
                        return (None, (rx, false));
                    }
                    let v = rx.borrow_and_update().clone();
                    (Some(v), (rx, false))
                })
            }),
        }
    }
}

impl<T: Clone + 'static> Stream for WatchStream<T> {
    type Item = T;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<T>> {
        self.inner.poll(cx)
    }
}

impl<T: 'static> fmt::Debug for WatchStream<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WatchStream").finish_non_exhaustive()
    }
}
