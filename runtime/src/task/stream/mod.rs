//! The [`Stream`] trait (`evloop::stream`): an asynchronous sequence of values, shaped exactly
//! like futures-core's `Stream` (`poll_next`, `size_hint`) but owned here, so the runtime keeps
//! no dependency; the compat crate converts between the two both ways.
//!
//! A consumer polls `poll_next` until it returns `Ready(None)`; `Pending` means the stream has
//! stored the waker of the context and will wake it when an item (or the end) is ready, the
//! same contract as a future's `poll`. The combinators of [`StreamExt`] (`ext`) wrap a stream
//! in another; [`StreamMap`] (`map`) merges keyed streams; the adapters over evloop's own
//! sources (receivers, intervals, lines, listeners) live with those sources and are gathered
//! in `evloop::stream::wrappers`. The trait sits in the task layer because its `timeout`
//! combinator and the interval adapter need the task layer's timers; nothing in it needs more.

use std::ops::DerefMut;
use std::pin::Pin;
use std::task::{Context, Poll};

/// An asynchronous sequence of values (futures-core's `Stream`, tokio-stream's `Stream`).
///
/// Implement [`poll_next`](Stream::poll_next); the methods a program calls (`next`, `map`,
/// `filter`, ...) come from [`StreamExt`](crate::stream::StreamExt).
///
/// ```
/// use std::pin::Pin;
/// use std::task::{Context, Poll};
/// use evloop::stream::Stream;
///
/// /// Counts down to 1.
/// struct Countdown(u32);
///
/// impl Stream for Countdown {
///     type Item = u32;
///     fn poll_next(mut self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<Option<u32>> {
///         let n = self.0;
///         self.0 = n.saturating_sub(1);
///         Poll::Ready((n > 0).then_some(n))
///     }
///     fn size_hint(&self) -> (usize, Option<usize>) {
///         (self.0 as usize, Some(self.0 as usize))
///     }
/// }
///
/// assert_eq!(Countdown(3).size_hint(), (3, Some(3)));
/// ```
#[must_use = "streams do nothing unless polled"]
pub trait Stream {
    /// The values the stream yields.
    type Item;

    /// Polls for the next value: `Ready(Some(v))` for a value, `Ready(None)` once the stream has
    /// ended, `Pending` after arranging for `cx`'s waker to be woken when there is more. A stream
    /// that ended may panic or return anything if polled again, as with futures-core, unless it
    /// documents otherwise (`StreamExt::fuse` makes any stream keep returning `None`).
    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>>;

    /// Bounds on the number of values left: `(lower, upper)`, `upper == None` for unknown; used
    /// for preallocation only, never trusted for correctness (as `Iterator::size_hint`).
    fn size_hint(&self) -> (usize, Option<usize>) {
        (0, None)
    }
}

impl<S: Stream + Unpin + ?Sized> Stream for &mut S {
    type Item = S::Item;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<S::Item>> {
        S::poll_next(Pin::new(&mut **self), cx)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (**self).size_hint()
    }
}

impl<S: Stream + Unpin + ?Sized> Stream for Box<S> {
    type Item = S::Item;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<S::Item>> {
        S::poll_next(Pin::new(&mut **self), cx)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (**self).size_hint()
    }
}

impl<P> Stream for Pin<P>
where
    P: DerefMut + Unpin,
    P::Target: Stream,
{
    type Item = <P::Target as Stream>::Item;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        self.get_mut().as_mut().poll_next(cx)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (**self).size_hint()
    }
}

mod adapters;
mod ext;
mod map;
pub(crate) mod owned;
mod source;
// Issue 21, round 2: tokio-stream's throttle, chunks_timeout and peekable.
mod timed;
pub(crate) mod wrappers;

pub use adapters::{
    Chain, Filter, FilterMap, Fuse, Map, MapWhile, Merge, Skip, SkipWhile, Take, TakeWhile, Then, Timeout,
};
pub use ext::{Next, StreamExt};
pub use map::StreamMap;
pub use source::{Empty, Iter, Once, Pending, empty, iter, once, pending};
pub use timed::{ChunksTimeout, Peekable, Throttle};
