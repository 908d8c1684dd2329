//! [`StreamExt`]: the methods a program calls on a [`Stream`] (tokio-stream's `StreamExt`). Each
//! method either returns a future that polls the stream (`next`, `fold`, `collect`, ...) or
//! wraps the stream in an adapter (`combinators`) that transforms the values as they pass.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use super::Stream;

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
