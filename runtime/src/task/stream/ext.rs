//! [`StreamExt`]: the methods a program calls on a [`Stream`] (tokio-stream's `StreamExt`). Each
//! method either returns a future that polls the stream (`next`, `fold`, `collect`, ...) or
//! wraps the stream in an adapter (`adapters`) that transforms the values as they pass.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use std::time::Duration;

use super::Stream;
use super::adapters::{
    Chain, Filter, FilterMap, Fuse, Map, MapWhile, Merge, Skip, SkipWhile, Take, TakeWhile, Then, Timeout,
};
use super::timed::{ChunksTimeout, Peekable, Throttle};
use crate::task::time::sleep;

/// The methods of every [`Stream`] (tokio-stream's `StreamExt`), implemented for all streams.
///
/// ```
/// use evloop::stream::{self, StreamExt};
///
/// evloop::run(async {
///     let mut s = stream::iter([1, 2, 3]);
///     let mut sum = 0;
///     while let Some(v) = s.next().await {
///         sum += v;
///     }
///     assert_eq!(sum, 6);
/// })?;
/// # Ok::<(), evloop::task::RunError>(())
/// ```
pub trait StreamExt: Stream {
    /// The next value, or `None` once the stream has ended (`while let Some(v) = s.next().await`).
    ///
    /// ```
    /// use evloop::stream::{self, StreamExt};
    ///
    /// evloop::run(async {
    ///     let mut s = stream::iter(["a"]);
    ///     assert_eq!(s.next().await, Some("a"));
    ///     assert_eq!(s.next().await, None);
    /// })?;
    /// # Ok::<(), evloop::task::RunError>(())
    /// ```
    fn next(&mut self) -> Next<'_, Self>
    where
        Self: Unpin,
    {
        Next { stream: self }
    }

    /// For a stream of `Result`s: the next `Ok` value as `Ok(Some(v))`, an error as `Err`,
    /// the end as `Ok(None)` (tokio-stream's `try_next`).
    ///
    /// ```
    /// use evloop::stream::{self, StreamExt};
    ///
    /// evloop::run(async {
    ///     let mut s = stream::iter([Ok(1), Err("bad")]);
    ///     assert_eq!(s.try_next().await, Ok(Some(1)));
    ///     assert_eq!(s.try_next().await, Err("bad"));
    /// })?;
    /// # Ok::<(), evloop::task::RunError>(())
    /// ```
    fn try_next<T, E>(&mut self) -> impl Future<Output = Result<Option<T>, E>>
    where
        Self: Stream<Item = Result<T, E>> + Unpin,
    {
        async move { self.next().await.transpose() }
    }

    /// Each value through `f`.
    ///
    /// ```
    /// use evloop::stream::{self, StreamExt};
    ///
    /// evloop::run(async {
    ///     let v: Vec<_> = stream::iter([1, 2]).map(|x| x * 10).collect().await;
    ///     assert_eq!(v, [10, 20]);
    /// })?;
    /// # Ok::<(), evloop::task::RunError>(())
    /// ```
    fn map<T, F: FnMut(Self::Item) -> T>(self, f: F) -> Map<Self, F>
    where
        Self: Sized,
    {
        Map { stream: self, f }
    }

    /// Values through `f` until it returns `None`, which ends the stream.
    ///
    /// ```
    /// use evloop::stream::{self, StreamExt};
    ///
    /// evloop::run(async {
    ///     let v: Vec<_> = stream::iter([1, 2, -1, 3]).map_while(|x| u32::try_from(x).ok()).collect().await;
    ///     assert_eq!(v, [1, 2]);
    /// })?;
    /// # Ok::<(), evloop::task::RunError>(())
    /// ```
    fn map_while<T, F: FnMut(Self::Item) -> Option<T>>(self, f: F) -> MapWhile<Self, F>
    where
        Self: Sized,
    {
        MapWhile { stream: Some(self), f }
    }

    /// Each value through the async `f`, one at a time, in order.
    ///
    /// ```
    /// use evloop::stream::{self, StreamExt};
    ///
    /// evloop::run(async {
    ///     let v: Vec<_> = stream::iter([1, 2])
    ///         .then(|x| async move {
    ///             evloop::task::yield_now().await;
    ///             x + 1
    ///         })
    ///         .collect()
    ///         .await;
    ///     assert_eq!(v, [2, 3]);
    /// })?;
    /// # Ok::<(), evloop::task::RunError>(())
    /// ```
    fn then<Fut: Future, F: FnMut(Self::Item) -> Fut>(self, f: F) -> Then<Self, Fut, F>
    where
        Self: Sized,
    {
        Then {
            stream: self,
            f,
            pending: None,
        }
    }

    /// The values for which `f` is true.
    ///
    /// ```
    /// use evloop::stream::{self, StreamExt};
    ///
    /// evloop::run(async {
    ///     let v: Vec<_> = stream::iter(1..=6).filter(|x| x % 2 == 0).collect().await;
    ///     assert_eq!(v, [2, 4, 6]);
    /// })?;
    /// # Ok::<(), evloop::task::RunError>(())
    /// ```
    fn filter<F: FnMut(&Self::Item) -> bool>(self, f: F) -> Filter<Self, F>
    where
        Self: Sized,
    {
        Filter { stream: self, f }
    }

    /// The `Some` results of `f`.
    ///
    /// ```
    /// use evloop::stream::{self, StreamExt};
    ///
    /// evloop::run(async {
    ///     let v: Vec<u8> = stream::iter(["1", "x", "3"]).filter_map(|s| s.parse::<u8>().ok()).collect().await;
    ///     assert_eq!(v, [1, 3]);
    /// })?;
    /// # Ok::<(), evloop::task::RunError>(())
    /// ```
    fn filter_map<T, F: FnMut(Self::Item) -> Option<T>>(self, f: F) -> FilterMap<Self, F>
    where
        Self: Sized,
    {
        FilterMap { stream: self, f }
    }

    /// The first `n` values.
    ///
    /// ```
    /// use evloop::stream::{self, StreamExt};
    ///
    /// evloop::run(async {
    ///     let v: Vec<_> = stream::iter(0..).take(3).collect().await;
    ///     assert_eq!(v, [0, 1, 2]);
    /// })?;
    /// # Ok::<(), evloop::task::RunError>(())
    /// ```
    fn take(self, n: usize) -> Take<Self>
    where
        Self: Sized,
    {
        Take { stream: self, left: n }
    }

    /// Values while `f` is true; the first false ends the stream.
    ///
    /// ```
    /// use evloop::stream::{self, StreamExt};
    ///
    /// evloop::run(async {
    ///     let v: Vec<_> = stream::iter([1, 2, 5, 1]).take_while(|x| *x < 3).collect().await;
    ///     assert_eq!(v, [1, 2]);
    /// })?;
    /// # Ok::<(), evloop::task::RunError>(())
    /// ```
    fn take_while<F: FnMut(&Self::Item) -> bool>(self, f: F) -> TakeWhile<Self, F>
    where
        Self: Sized,
    {
        TakeWhile {
            stream: self,
            f,
            done: false,
        }
    }

    /// All but the first `n` values.
    ///
    /// ```
    /// use evloop::stream::{self, StreamExt};
    ///
    /// evloop::run(async {
    ///     let v: Vec<_> = stream::iter(0..5).skip(3).collect().await;
    ///     assert_eq!(v, [3, 4]);
    /// })?;
    /// # Ok::<(), evloop::task::RunError>(())
    /// ```
    fn skip(self, n: usize) -> Skip<Self>
    where
        Self: Sized,
    {
        Skip { stream: self, left: n }
    }

    /// The values from the first for which `f` is false on.
    ///
    /// ```
    /// use evloop::stream::{self, StreamExt};
    ///
    /// evloop::run(async {
    ///     let v: Vec<_> = stream::iter([1, 2, 5, 1]).skip_while(|x| *x < 3).collect().await;
    ///     assert_eq!(v, [5, 1]);
    /// })?;
    /// # Ok::<(), evloop::task::RunError>(())
    /// ```
    fn skip_while<F: FnMut(&Self::Item) -> bool>(self, f: F) -> SkipWhile<Self, F>
    where
        Self: Sized,
    {
        SkipWhile {
            stream: self,
            f: Some(f),
        }
    }

    /// This stream's values, then `other`'s.
    ///
    /// ```
    /// use evloop::stream::{self, StreamExt};
    ///
    /// evloop::run(async {
    ///     let v: Vec<_> = stream::iter([1]).chain(stream::iter([2, 3])).collect().await;
    ///     assert_eq!(v, [1, 2, 3]);
    /// })?;
    /// # Ok::<(), evloop::task::RunError>(())
    /// ```
    fn chain<U: Stream<Item = Self::Item>>(self, other: U) -> Chain<Self, U>
    where
        Self: Sized,
    {
        Chain {
            first: Some(self),
            second: other,
        }
    }

    /// The values of both streams as they come, taking turns when both have one; ends when
    /// both have ended.
    ///
    /// ```
    /// use evloop::stream::{self, StreamExt};
    ///
    /// evloop::run(async {
    ///     let mut v: Vec<_> = stream::iter([1, 3]).merge(stream::iter([2, 4])).collect().await;
    ///     v.sort();
    ///     assert_eq!(v, [1, 2, 3, 4]);
    /// })?;
    /// # Ok::<(), evloop::task::RunError>(())
    /// ```
    fn merge<U: Stream<Item = Self::Item>>(self, other: U) -> Merge<Self, U>
    where
        Self: Sized,
    {
        Merge {
            a: self.fuse(),
            b: other.fuse(),
            b_first: true,
        }
    }

    /// A stream that keeps returning `None` once this one has ended.
    ///
    /// ```
    /// use evloop::stream::{self, StreamExt};
    ///
    /// evloop::run(async {
    ///     let mut s = stream::once(1).fuse();
    ///     assert_eq!((s.next().await, s.next().await, s.next().await), (Some(1), None, None));
    /// })?;
    /// # Ok::<(), evloop::task::RunError>(())
    /// ```
    fn fuse(self) -> Fuse<Self>
    where
        Self: Sized,
    {
        Fuse { stream: Some(self) }
    }

    /// Each value as `Ok`, and one `Err(Elapsed)` whenever `limit` passes without a value
    /// (tokio-stream's `timeout`: the stream goes on after it; the next deadline starts with
    /// the next value).
    ///
    /// ```
    /// use std::time::Duration;
    /// use evloop::stream::{self, StreamExt};
    ///
    /// evloop::event_loop::Builder::new().virtual_clock(true).run(async {
    ///     let mut s = stream::iter([1]).chain(stream::pending()).timeout(Duration::from_secs(1));
    ///     assert_eq!(s.next().await, Some(Ok(1)));
    ///     assert!(s.next().await.unwrap().is_err()); // a second of silence
    /// })?;
    /// # Ok::<(), evloop::task::RunError>(())
    /// ```
    fn timeout(self, limit: Duration) -> Timeout<Self>
    where
        Self: Sized,
    {
        Timeout {
            stream: self.fuse(),
            limit,
            deadline: sleep(limit),
            armed: true,
        }
    }

    /// At most one value per `period`: after a value, the next waits until `period` has
    /// passed (tokio-stream's `throttle`; the first value is not delayed).
    ///
    /// ```
    /// use std::time::Duration;
    /// use evloop::stream::{self, StreamExt};
    /// use evloop::time::Instant;
    ///
    /// evloop::event_loop::Builder::new().virtual_clock(true).run(async {
    ///     let start = Instant::now();
    ///     let all: Vec<_> = stream::iter([1, 2, 3]).throttle(Duration::from_secs(1)).collect().await;
    ///     assert_eq!(all, [1, 2, 3]);
    ///     assert!(start.elapsed() >= Duration::from_secs(2)); // two waits between three values
    /// })?;
    /// # Ok::<(), evloop::task::RunError>(())
    /// ```
    fn throttle(self, period: Duration) -> Throttle<Self>
    where
        Self: Sized,
    {
        Throttle::new(self, period)
    }

    /// The values in vectors of at most `max_size`, a vector going out early when `duration`
    /// has passed since its first value (tokio-stream's `chunks_timeout`); the last, partial
    /// one goes out at the end. Panics if `max_size` is 0.
    ///
    /// ```
    /// use std::time::Duration;
    /// use evloop::stream::{self, StreamExt};
    ///
    /// evloop::event_loop::Builder::new().virtual_clock(true).run(async {
    ///     // One value, then silence: the chunk is cut by time, not size.
    ///     let mut s = stream::iter([1]).chain(stream::pending()).chunks_timeout(10, Duration::from_secs(1));
    ///     assert_eq!(s.next().await, Some(vec![1]));
    /// })?;
    /// # Ok::<(), evloop::task::RunError>(())
    /// ```
    fn chunks_timeout(self, max_size: usize, duration: Duration) -> ChunksTimeout<Self>
    where
        Self: Sized,
    {
        ChunksTimeout::new(self, max_size, duration)
    }

    /// A stream whose next value can be looked at without taking it
    /// ([`Peekable::peek`](crate::stream::Peekable::peek); tokio-stream's `peekable`).
    ///
    /// ```
    /// use evloop::stream::{self, StreamExt};
    ///
    /// evloop::run(async {
    ///     let mut s = stream::iter(["a", "b"]).peekable();
    ///     while let Some(&v) = s.peek().await {
    ///         assert_eq!(s.next().await, Some(v));
    ///     }
    /// })?;
    /// # Ok::<(), evloop::task::RunError>(())
    /// ```
    fn peekable(self) -> Peekable<Self>
    where
        Self: Sized,
    {
        Peekable::new(self)
    }

    /// Folds the values into one, in order.
    ///
    /// ```
    /// use evloop::stream::{self, StreamExt};
    ///
    /// evloop::run(async {
    ///     assert_eq!(stream::iter(1..=4).fold(0, |acc, x| acc + x).await, 10);
    /// })?;
    /// # Ok::<(), evloop::task::RunError>(())
    /// ```
    fn fold<B, F: FnMut(B, Self::Item) -> B>(mut self, init: B, mut f: F) -> impl Future<Output = B>
    where
        Self: Sized + Unpin,
    {
        async move {
            let mut acc = init;
            while let Some(v) = self.next().await {
                acc = f(acc, v);
            }
            acc
        }
    }

    /// Every value, into a collection (`Vec`, `String`, `HashMap`, ...: any `Default + Extend`).
    ///
    /// ```
    /// use evloop::stream::{self, StreamExt};
    ///
    /// evloop::run(async {
    ///     let s: String = stream::iter(["a", "b"]).collect().await;
    ///     assert_eq!(s, "ab");
    /// })?;
    /// # Ok::<(), evloop::task::RunError>(())
    /// ```
    fn collect<C: Default + Extend<Self::Item>>(mut self) -> impl Future<Output = C>
    where
        Self: Sized + Unpin,
    {
        async move {
            let mut out = C::default();
            while let Some(v) = self.next().await {
                out.extend(Some(v));
            }
            out
        }
    }

    /// Whether `f` is true for any value (stops at the first).
    ///
    /// ```
    /// use evloop::stream::{self, StreamExt};
    ///
    /// evloop::run(async {
    ///     assert!(stream::iter([1, 2]).any(|x| x == 2).await);
    /// })?;
    /// # Ok::<(), evloop::task::RunError>(())
    /// ```
    fn any<F: FnMut(Self::Item) -> bool>(&mut self, mut f: F) -> impl Future<Output = bool>
    where
        Self: Unpin,
    {
        async move {
            while let Some(v) = self.next().await {
                if f(v) {
                    return true;
                }
            }
            false
        }
    }

    /// Whether `f` is true for every value (stops at the first false).
    ///
    /// ```
    /// use evloop::stream::{self, StreamExt};
    ///
    /// evloop::run(async {
    ///     assert!(!stream::iter([1, 2]).all(|x| x == 2).await);
    /// })?;
    /// # Ok::<(), evloop::task::RunError>(())
    /// ```
    fn all<F: FnMut(Self::Item) -> bool>(&mut self, mut f: F) -> impl Future<Output = bool>
    where
        Self: Unpin,
    {
        async move {
            while let Some(v) = self.next().await {
                if !f(v) {
                    return false;
                }
            }
            true
        }
    }
}

impl<S: Stream + ?Sized> StreamExt for S {}

/// The future of [`StreamExt::next`].
#[must_use = "futures do nothing unless you `.await` or poll them"]
#[derive(Debug)]
pub struct Next<'a, S: ?Sized> {
    stream: &'a mut S,
}

impl<S: Stream + Unpin + ?Sized> Future for Next<'_, S> {
    type Output = Option<S::Item>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<S::Item>> {
        Pin::new(&mut *self.stream).poll_next(cx)
    }
}
