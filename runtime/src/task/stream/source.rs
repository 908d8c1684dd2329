//! Streams made from nothing but values: [`iter`], [`empty`], [`once`], [`pending`]
//! (tokio-stream's constructors), for tests and for combining with real sources.

use std::pin::Pin;
use std::task::{Context, Poll};

use super::Stream;

/// A stream of the values of an iterator, each ready at once (tokio-stream's `iter`).
///
/// ```
/// use evloop::stream::{self, StreamExt};
///
/// evloop::run(async {
///     let mut s = stream::iter(vec![1, 2]);
///     assert_eq!(s.next().await, Some(1));
///     assert_eq!(s.next().await, Some(2));
///     assert_eq!(s.next().await, None);
/// })?;
/// # Ok::<(), evloop::task::RunError>(())
/// ```
pub fn iter<I: IntoIterator>(i: I) -> Iter<I::IntoIter> {
    Iter { iter: i.into_iter() }
}

/// The stream of [`iter`].
#[must_use = "streams do nothing unless polled"]
#[derive(Debug, Clone)]
pub struct Iter<I> {
    iter: I,
}

impl<I> Unpin for Iter<I> {}

impl<I: Iterator> Stream for Iter<I> {
    type Item = I::Item;

    fn poll_next(mut self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<Option<I::Item>> {
        Poll::Ready(self.iter.next())
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        self.iter.size_hint()
    }
}

/// A stream that ends at once (tokio-stream's `empty`).
///
/// ```
/// use evloop::stream::{self, StreamExt};
///
/// evloop::run(async {
///     assert_eq!(stream::empty::<u8>().next().await, None);
/// })?;
/// # Ok::<(), evloop::task::RunError>(())
/// ```
pub fn empty<T>() -> Empty<T> {
    Empty(std::marker::PhantomData)
}

/// The stream of [`empty`].
#[must_use = "streams do nothing unless polled"]
#[derive(Debug)]
pub struct Empty<T>(std::marker::PhantomData<fn() -> T>);

impl<T> Stream for Empty<T> {
    type Item = T;

    fn poll_next(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<Option<T>> {
        Poll::Ready(None)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (0, Some(0))
    }
}

/// A stream of one value (tokio-stream's `once`).
///
/// ```
/// use evloop::stream::{self, StreamExt};
///
/// evloop::run(async {
///     let mut s = stream::once(7);
///     assert_eq!((s.next().await, s.next().await), (Some(7), None));
/// })?;
/// # Ok::<(), evloop::task::RunError>(())
/// ```
pub fn once<T>(value: T) -> Once<T> {
    Once(Some(value))
}

/// The stream of [`once`].
#[must_use = "streams do nothing unless polled"]
#[derive(Debug)]
pub struct Once<T>(Option<T>);

impl<T> Unpin for Once<T> {}

impl<T> Stream for Once<T> {
    type Item = T;

    fn poll_next(mut self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<Option<T>> {
        Poll::Ready(self.0.take())
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let n = usize::from(self.0.is_some());
        (n, Some(n))
    }
}

/// A stream that never yields and never ends (tokio-stream's `pending`).
///
/// ```
/// use std::time::Duration;
/// use evloop::stream::{self, StreamExt};
///
/// evloop::event_loop::Builder::new().virtual_clock(true).run(async {
///     let mut s = stream::pending::<u8>();
///     assert!(evloop::time::timeout(Duration::from_secs(1), s.next()).await.is_err());
/// })?;
/// # Ok::<(), evloop::task::RunError>(())
/// ```
pub fn pending<T>() -> Pending<T> {
    Pending(std::marker::PhantomData)
}

/// The stream of [`pending`].
#[must_use = "streams do nothing unless polled"]
#[derive(Debug)]
pub struct Pending<T>(std::marker::PhantomData<fn() -> T>);

impl<T> Stream for Pending<T> {
    type Item = T;

    fn poll_next(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<Option<T>> {
        Poll::Pending
    }
}
