//! The adapter types of [`StreamExt`](super::StreamExt): each wraps a stream (and a closure,
//! a count, a second stream or a timer) and is itself a stream.
//!
//! They poll their inner streams through `Pin::new`, so they need those streams to be `Unpin`
//! (as `StreamExt::next` does); a stream that is not (an `async` generator, a `then` over
//! one) is pinned first with `Box::pin(s)` or `std::pin::pin!(s)`. That keeps this layer free of
//! `unsafe` pin projections; each adapter is `Unpin` itself, whatever its closure.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use super::Stream;
use crate::task::time::{Elapsed, Sleep, sleep};

/// Polls an `Unpin` stream.
fn poll<S: Stream + Unpin>(s: &mut S, cx: &mut Context<'_>) -> Poll<Option<S::Item>> {
    Pin::new(s).poll_next(cx)
}

macro_rules! unpin {
    ($($name:ident<$($p:ident),*>),* $(,)?) => {
        // Never pin-projected: their fields are polled through `Pin::new` (inner streams are
        // `Unpin`) or boxed (`then`'s futures), so moving an adapter is always sound.
        $(impl<$($p),*> Unpin for $name<$($p),*> {})*
    };
}

unpin!(
    Map<S, F>,
    Filter<S, F>,
    FilterMap<S, F>,
    MapWhile<S, F>,
    Take<S>,
    TakeWhile<S, F>,
    Skip<S>,
    SkipWhile<S, F>,
    Chain<A, B>,
    Merge<A, B>,
    Fuse<S>,
    Timeout<S>,
);

/// See [`StreamExt::map`](super::StreamExt::map).
#[must_use = "streams do nothing unless polled"]
#[derive(Debug)]
pub struct Map<S, F> {
    pub(super) stream: S,
    pub(super) f: F,
}

impl<S: Stream + Unpin, T, F: FnMut(S::Item) -> T> Stream for Map<S, F> {
    type Item = T;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<T>> {
        let this = &mut *self;
        poll(&mut this.stream, cx).map(|o| o.map(&mut this.f))
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        self.stream.size_hint()
    }
}

/// See [`StreamExt::filter`](super::StreamExt::filter).
#[must_use = "streams do nothing unless polled"]
#[derive(Debug)]
pub struct Filter<S, F> {
    pub(super) stream: S,
    pub(super) f: F,
}

impl<S: Stream + Unpin, F: FnMut(&S::Item) -> bool> Stream for Filter<S, F> {
    type Item = S::Item;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<S::Item>> {
        let this = &mut *self;
        loop {
            match poll(&mut this.stream, cx) {
                Poll::Ready(Some(v)) if !(this.f)(&v) => continue,
                other => return other,
            }
        }
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (0, self.stream.size_hint().1)
    }
}

/// See [`StreamExt::filter_map`](super::StreamExt::filter_map).
#[must_use = "streams do nothing unless polled"]
#[derive(Debug)]
pub struct FilterMap<S, F> {
    pub(super) stream: S,
    pub(super) f: F,
}

impl<S: Stream + Unpin, T, F: FnMut(S::Item) -> Option<T>> Stream for FilterMap<S, F> {
    type Item = T;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<T>> {
        let this = &mut *self;
        loop {
            match poll(&mut this.stream, cx) {
                Poll::Ready(Some(v)) => match (this.f)(v) {
                    Some(t) => return Poll::Ready(Some(t)),
                    None => continue,
                },
                Poll::Ready(None) => return Poll::Ready(None),
                Poll::Pending => return Poll::Pending,
            }
        }
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (0, self.stream.size_hint().1)
    }
}

/// See [`StreamExt::map_while`](super::StreamExt::map_while).
#[must_use = "streams do nothing unless polled"]
#[derive(Debug)]
pub struct MapWhile<S, F> {
    pub(super) stream: Option<S>,
    pub(super) f: F,
}

impl<S: Stream + Unpin, T, F: FnMut(S::Item) -> Option<T>> Stream for MapWhile<S, F> {
    type Item = T;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<T>> {
        let this = &mut *self;
        let Some(stream) = &mut this.stream else {
            return Poll::Ready(None);
        };
        match poll(stream, cx) {
            Poll::Ready(Some(v)) => {
                let out = (this.f)(v);
                if out.is_none() {
                    this.stream = None;
                }
                Poll::Ready(out)
            }
            Poll::Ready(None) => {
                this.stream = None;
                Poll::Ready(None)
            }
            Poll::Pending => Poll::Pending,
        }
    }
}

/// See [`StreamExt::then`](super::StreamExt::then).
#[must_use = "streams do nothing unless polled"]
pub struct Then<S, Fut, F> {
    pub(super) stream: S,
    pub(super) f: F,
    pub(super) pending: Option<Pin<Box<Fut>>>,
}

impl<S, Fut, F> Unpin for Then<S, Fut, F> {}

impl<S: Stream + Unpin, Fut: Future, F: FnMut(S::Item) -> Fut> Stream for Then<S, Fut, F> {
    type Item = Fut::Output;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Fut::Output>> {
        let this = &mut *self;
        loop {
            if let Some(fut) = &mut this.pending {
                let out = std::task::ready!(fut.as_mut().poll(cx));
                this.pending = None;
                return Poll::Ready(Some(out));
            }
            match std::task::ready!(poll(&mut this.stream, cx)) {
                Some(v) => this.pending = Some(Box::pin((this.f)(v))),
                None => return Poll::Ready(None),
            }
        }
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let extra = usize::from(self.pending.is_some());
        let (lo, hi) = self.stream.size_hint();
        (lo.saturating_add(extra), hi.and_then(|h| h.checked_add(extra)))
    }
}

impl<S: std::fmt::Debug, Fut, F> std::fmt::Debug for Then<S, Fut, F> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Then")
            .field("stream", &self.stream)
            .finish_non_exhaustive()
    }
}

/// See [`StreamExt::take`](super::StreamExt::take).
#[must_use = "streams do nothing unless polled"]
#[derive(Debug)]
pub struct Take<S> {
    pub(super) stream: S,
    pub(super) left: usize,
}

impl<S: Stream + Unpin> Stream for Take<S> {
    type Item = S::Item;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<S::Item>> {
        if self.left == 0 {
            return Poll::Ready(None);
        }
        let out = std::task::ready!(poll(&mut self.stream, cx));
        self.left = if out.is_some() { self.left - 1 } else { 0 };
        Poll::Ready(out)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let (lo, hi) = self.stream.size_hint();
        (lo.min(self.left), Some(hi.map_or(self.left, |h| h.min(self.left))))
    }
}

/// See [`StreamExt::take_while`](super::StreamExt::take_while).
#[must_use = "streams do nothing unless polled"]
#[derive(Debug)]
pub struct TakeWhile<S, F> {
    pub(super) stream: S,
    pub(super) f: F,
    pub(super) done: bool,
}

impl<S: Stream + Unpin, F: FnMut(&S::Item) -> bool> Stream for TakeWhile<S, F> {
    type Item = S::Item;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<S::Item>> {
        let this = &mut *self;
        if this.done {
            return Poll::Ready(None);
        }
        match std::task::ready!(poll(&mut this.stream, cx)) {
            Some(v) if (this.f)(&v) => Poll::Ready(Some(v)),
            _ => {
                this.done = true;
                Poll::Ready(None)
            }
        }
    }
}

/// See [`StreamExt::skip`](super::StreamExt::skip).
#[must_use = "streams do nothing unless polled"]
#[derive(Debug)]
pub struct Skip<S> {
    pub(super) stream: S,
    pub(super) left: usize,
}

impl<S: Stream + Unpin> Stream for Skip<S> {
    type Item = S::Item;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<S::Item>> {
        loop {
            let out = std::task::ready!(poll(&mut self.stream, cx));
            if self.left == 0 || out.is_none() {
                return Poll::Ready(out);
            }
            self.left -= 1;
        }
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let (lo, hi) = self.stream.size_hint();
        (lo.saturating_sub(self.left), hi.map(|h| h.saturating_sub(self.left)))
    }
}

/// See [`StreamExt::skip_while`](super::StreamExt::skip_while).
#[must_use = "streams do nothing unless polled"]
#[derive(Debug)]
pub struct SkipWhile<S, F> {
    pub(super) stream: S,
    pub(super) f: Option<F>,
}

impl<S: Stream + Unpin, F: FnMut(&S::Item) -> bool> Stream for SkipWhile<S, F> {
    type Item = S::Item;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<S::Item>> {
        let this = &mut *self;
        loop {
            let out = std::task::ready!(poll(&mut this.stream, cx));
            let skip = match (&mut this.f, &out) {
                (Some(f), Some(v)) => f(v),
                _ => false,
            };
            if !skip {
                this.f = None;
                return Poll::Ready(out);
            }
        }
    }
}

/// See [`StreamExt::chain`](super::StreamExt::chain).
#[must_use = "streams do nothing unless polled"]
#[derive(Debug)]
pub struct Chain<A, B> {
    pub(super) first: Option<A>,
    pub(super) second: B,
}

impl<A: Stream + Unpin, B: Stream<Item = A::Item> + Unpin> Stream for Chain<A, B> {
    type Item = A::Item;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<A::Item>> {
        if let Some(first) = &mut self.first {
            match std::task::ready!(poll(first, cx)) {
                Some(v) => return Poll::Ready(Some(v)),
                None => self.first = None,
            }
        }
        poll(&mut self.second, cx)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let (lo2, hi2) = self.second.size_hint();
        match &self.first {
            None => (lo2, hi2),
            Some(a) => {
                let (lo1, hi1) = a.size_hint();
                (
                    lo1.saturating_add(lo2),
                    hi1.zip(hi2).and_then(|(a, b)| a.checked_add(b)),
                )
            }
        }
    }
}

/// See [`StreamExt::merge`](super::StreamExt::merge).
#[must_use = "streams do nothing unless polled"]
#[derive(Debug)]
pub struct Merge<A, B> {
    pub(super) a: Fuse<A>,
    pub(super) b: Fuse<B>,
    /// Which one is polled first next time: they take turns, so neither starves the other.
    pub(super) b_first: bool,
}

impl<A: Stream + Unpin, B: Stream<Item = A::Item> + Unpin> Stream for Merge<A, B> {
    type Item = A::Item;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<A::Item>> {
        let this = &mut *self;
        this.b_first = !this.b_first;
        // The second is polled only if the first has nothing: a value is never polled out of a
        // stream and then dropped. Pending from both registered the waker with both.
        let (first, second) = if this.b_first {
            (poll(&mut this.b, cx), Some(&mut this.a))
        } else {
            (poll(&mut this.a, cx), None)
        };
        let first_done = match first {
            Poll::Ready(Some(v)) => return Poll::Ready(Some(v)),
            Poll::Ready(None) => true,
            Poll::Pending => false,
        };
        let second = match second {
            Some(a) => poll(a, cx),
            None => poll(&mut this.b, cx),
        };
        match second {
            Poll::Ready(Some(v)) => Poll::Ready(Some(v)),
            Poll::Ready(None) if first_done => Poll::Ready(None),
            _ => Poll::Pending,
        }
    }
}

/// See [`StreamExt::fuse`](super::StreamExt::fuse).
#[must_use = "streams do nothing unless polled"]
#[derive(Debug)]
pub struct Fuse<S> {
    pub(super) stream: Option<S>,
}

impl<S: Stream + Unpin> Stream for Fuse<S> {
    type Item = S::Item;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<S::Item>> {
        let Some(s) = &mut self.stream else {
            return Poll::Ready(None);
        };
        let out = std::task::ready!(poll(s, cx));
        if out.is_none() {
            self.stream = None;
        }
        Poll::Ready(out)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        self.stream.as_ref().map_or((0, Some(0)), Stream::size_hint)
    }
}

/// See [`StreamExt::timeout`](super::StreamExt::timeout).
#[must_use = "streams do nothing unless polled"]
#[derive(Debug)]
pub struct Timeout<S> {
    pub(super) stream: Fuse<S>,
    pub(super) limit: Duration,
    /// The deadline for the next value, started at creation and by each value.
    pub(super) deadline: Sleep,
    /// Cleared by an `Elapsed`: one per silence (tokio-stream's rule), re-armed by a value.
    pub(super) armed: bool,
}

impl<S: Stream + Unpin> Stream for Timeout<S> {
    type Item = Result<S::Item, Elapsed>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = &mut *self;
        match poll(&mut this.stream, cx) {
            Poll::Ready(Some(v)) => {
                this.deadline = sleep(this.limit);
                this.armed = true;
                return Poll::Ready(Some(Ok(v)));
            }
            Poll::Ready(None) => return Poll::Ready(None),
            Poll::Pending => {}
        }
        if this.armed && Pin::new(&mut this.deadline).poll(cx).is_ready() {
            this.armed = false;
            return Poll::Ready(Some(Err(Elapsed::new(this.limit))));
        }
        Poll::Pending
    }
}
