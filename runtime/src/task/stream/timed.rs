//! Three more adapters of [`StreamExt`](super::StreamExt), tokio-stream's: [`Throttle`] (at
//! most one value per period), [`ChunksTimeout`] (values gathered into vectors, cut by size or
//! by time) and [`Peekable`] (look at the next value without taking it).
//!
//! The two timed ones hold a [`Sleep`] of the task layer's timers, created when a period
//! starts (a value yielded for `Throttle`, the first value of a chunk for `ChunksTimeout`) and
//! polled beside the inner stream, so a virtual clock governs them as it governs `sleep`. Like
//! the other adapters they poll the inner stream through `Pin::new` (it must be `Unpin`) and
//! are `Unpin` themselves.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, ready};
use std::time::Duration;

use super::adapters::Fuse;
use super::{Stream, StreamExt};
use crate::task::time::{Sleep, sleep};

/// See [`StreamExt::throttle`](super::StreamExt::throttle).
///
/// ```
/// use std::time::Duration;
/// use evloop::stream::{self, Stream, StreamExt, Throttle};
///
/// let s: Throttle<_> = stream::iter([1, 2]).throttle(Duration::from_millis(1));
/// assert_eq!(s.get_ref().size_hint(), (2, Some(2)));
/// ```
#[must_use = "streams do nothing unless polled"]
#[derive(Debug)]
pub struct Throttle<S> {
    stream: S,
    period: Duration,
    /// The wait before the next value may go out (none before the first).
    delay: Option<Sleep>,
}

impl<S> Throttle<S> {
    pub(super) fn new(stream: S, period: Duration) -> Throttle<S> {
        Throttle {
            stream,
            period,
            delay: None,
        }
    }

    /// The inner stream.
    ///
    /// ```
    /// use evloop::stream::{self, Stream, StreamExt};
    /// let s = stream::iter([1]).throttle(std::time::Duration::ZERO);
    /// assert_eq!(s.get_ref().size_hint(), (1, Some(1)));
    /// ```
    pub fn get_ref(&self) -> &S {
        &self.stream
    }

    /// The inner stream, mutably.
    ///
    /// ```
    /// use evloop::stream::{self, StreamExt};
    /// let mut s = stream::iter([1]).throttle(std::time::Duration::ZERO);
    /// let _inner = s.get_mut();
    /// ```
    pub fn get_mut(&mut self) -> &mut S {
        &mut self.stream
    }

    /// The inner stream back.
    ///
    /// ```
    /// use evloop::stream::{self, Stream, StreamExt};
    /// let inner = stream::iter([1]).throttle(std::time::Duration::ZERO).into_inner();
    /// assert_eq!(inner.size_hint(), (1, Some(1)));
    /// ```
    pub fn into_inner(self) -> S {
        self.stream
    }
}

impl<S: Stream + Unpin> Stream for Throttle<S> {
    type Item = S::Item;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<S::Item>> {
        let this = &mut *self;
        if let Some(delay) = &mut this.delay {
            ready!(Pin::new(delay).poll(cx));
            this.delay = None;
        }
        let v = ready!(Pin::new(&mut this.stream).poll_next(cx));
        if v.is_some() && !this.period.is_zero() {
            this.delay = Some(sleep(this.period));
        }
        Poll::Ready(v)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        self.stream.size_hint()
    }
}

/// See [`StreamExt::chunks_timeout`](super::StreamExt::chunks_timeout).
///
/// ```
/// use std::time::Duration;
/// use evloop::stream::{self, ChunksTimeout, StreamExt};
///
/// evloop::run(async {
///     let s: ChunksTimeout<_> = stream::iter(1..=5).chunks_timeout(2, Duration::from_secs(1));
///     assert_eq!(s.collect::<Vec<_>>().await, [vec![1, 2], vec![3, 4], vec![5]]);
/// })?;
/// # Ok::<(), evloop::task::RunError>(())
/// ```
#[must_use = "streams do nothing unless polled"]
pub struct ChunksTimeout<S: Stream> {
    stream: Fuse<S>,
    items: Vec<S::Item>,
    cap: usize,
    duration: Duration,
    /// Started by the first value of a chunk.
    deadline: Option<Sleep>,
}

impl<S: Stream> ChunksTimeout<S> {
    pub(super) fn new(stream: S, max_size: usize, duration: Duration) -> ChunksTimeout<S> {
        assert!(max_size > 0, "chunks_timeout: max_size must be at least 1");
        ChunksTimeout {
            stream: stream.fuse(),
            items: Vec::with_capacity(max_size),
            cap: max_size,
            duration,
            deadline: None,
        }
    }

    /// Takes the values gathered so far and not yet yielded (tokio-stream's `into_remainder`,
    /// with its pinned receiver).
    ///
    /// ```
    /// use std::pin::Pin;
    /// use std::time::Duration;
    /// use evloop::stream::{self, StreamExt};
    /// let mut s = stream::iter([1]).chunks_timeout(4, Duration::from_secs(1));
    /// assert!(Pin::new(&mut s).into_remainder().is_empty()); // nothing polled yet
    /// ```
    pub fn into_remainder(mut self: Pin<&mut Self>) -> Vec<S::Item> {
        self.deadline = None;
        std::mem::take(&mut self.items)
    }

    fn take_chunk(&mut self) -> Vec<S::Item> {
        self.deadline = None;
        std::mem::replace(&mut self.items, Vec::with_capacity(self.cap))
    }
}

impl<S: Stream> Unpin for ChunksTimeout<S> {}

impl<S: Stream + Unpin> Stream for ChunksTimeout<S> {
    type Item = Vec<S::Item>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Vec<S::Item>>> {
        let this = &mut *self;
        loop {
            match Pin::new(&mut this.stream).poll_next(cx) {
                Poll::Ready(Some(item)) => {
                    if this.items.is_empty() {
                        this.deadline = Some(sleep(this.duration));
                    }
                    this.items.push(item);
                    if this.items.len() >= this.cap {
                        return Poll::Ready(Some(this.take_chunk()));
                    }
                }
                Poll::Ready(None) => {
                    return Poll::Ready((!this.items.is_empty()).then(|| this.take_chunk()));
                }
                Poll::Pending => {
                    if let Some(deadline) = &mut this.deadline {
                        ready!(Pin::new(deadline).poll(cx));
                        return Poll::Ready(Some(this.take_chunk()));
                    }
                    return Poll::Pending;
                }
            }
        }
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        // tokio-stream's bounds: full chunks at least, one value per chunk at most.
        let held = usize::from(!self.items.is_empty());
        let (lo, hi) = self.stream.size_hint();
        (
            (lo / self.cap).saturating_add(held),
            hi.and_then(|h| h.checked_add(held)),
        )
    }
}

/// See [`StreamExt::peekable`](super::StreamExt::peekable).
///
/// ```
/// use evloop::stream::{self, Peekable, StreamExt};
///
/// evloop::run(async {
///     let mut s: Peekable<_> = stream::iter([1, 2]).peekable();
///     assert_eq!(s.peek().await, Some(&1));
///     assert_eq!(s.next().await, Some(1)); // the peeked value, not lost
/// })?;
/// # Ok::<(), evloop::task::RunError>(())
/// ```
#[must_use = "streams do nothing unless polled"]
pub struct Peekable<S: Stream> {
    stream: Fuse<S>,
    peeked: Option<S::Item>,
}

impl<S: Stream> Unpin for Peekable<S> {}

impl<S: Stream> Peekable<S> {
    pub(super) fn new(stream: S) -> Peekable<S> {
        Peekable {
            stream: stream.fuse(),
            peeked: None,
        }
    }

    /// The next value, left in place for the next `next` (`None` at the end).
    ///
    /// ```
    /// use evloop::stream::{self, StreamExt};
    ///
    /// evloop::run(async {
    ///     let mut s = stream::iter([7]).peekable();
    ///     assert_eq!(s.peek().await, Some(&7));
    ///     assert_eq!(s.peek().await, Some(&7)); // still there
    ///     s.next().await;
    ///     assert_eq!(s.peek().await, None);
    /// })?;
    /// # Ok::<(), evloop::task::RunError>(())
    /// ```
    pub async fn peek(&mut self) -> Option<&S::Item>
    where
        S: Unpin,
    {
        if self.peeked.is_none() {
            self.peeked = self.stream.next().await;
        }
        self.peeked.as_ref()
    }
}

impl<S: Stream + Unpin> Stream for Peekable<S> {
    type Item = S::Item;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<S::Item>> {
        match self.peeked.take() {
            Some(v) => Poll::Ready(Some(v)),
            None => Pin::new(&mut self.stream).poll_next(cx),
        }
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let extra = usize::from(self.peeked.is_some());
        let (lo, hi) = self.stream.size_hint();
        (lo.saturating_add(extra), hi.and_then(|h| h.checked_add(extra)))
    }
}

impl<S: Stream> fmt::Debug for ChunksTimeout<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ChunksTimeout")
            .field("held", &self.items.len())
            .field("cap", &self.cap)
            .field("duration", &self.duration)
            .finish()
    }
}

impl<S: Stream> fmt::Debug for Peekable<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Peekable")
            .field("peeked", &self.peeked.is_some())
            .finish()
    }
}
