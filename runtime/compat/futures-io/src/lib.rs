//! evloop's byte-stream traits to and from the `futures-io` traits, so that a library written
//! against `futures::io` (async-tungstenite, async-compression, ...) runs on evloop's sockets,
//! and a futures-io stream runs under evloop's `AsyncReadExt`/`AsyncWriteExt` helpers.
//!
//! One wrapper, [`Compat`], carries both directions (as tokio-util's `Compat` does): it
//! implements `futures_io::{AsyncRead, AsyncWrite, AsyncBufRead}` when the value inside
//! implements evloop's traits, and evloop's traits when the value inside implements futures-io's.
//! Each call is passed straight through: no buffer of its own, no extra copy. The only mapping is
//! in the names: futures' `poll_close` is evloop's `poll_shutdown`.
//!
//! ```
//! use evloop::net::UnixStream;
//! use evloop_futures::CompatExt;
//! use futures_io::AsyncWrite as _;
//!
//! evloop::run(async {
//!     let (a, mut b) = UnixStream::pair()?;
//!     let mut a = a.compat(); // an evloop socket seen as a futures-io writer
//!     std::future::poll_fn(|cx| std::pin::Pin::new(&mut a).poll_write(cx, b"hi")).await?;
//!     let mut buf = [0; 2];
//!     evloop::io::AsyncReadExt::read_exact(&mut b, &mut buf).await?;
//!     assert_eq!(&buf, b"hi");
//!     Ok::<(), std::io::Error>(())
//! })??;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! The same wrapper carries streams of values: `futures_core::Stream` for a value that
//! implements evloop's [`evloop::stream::Stream`], and evloop's `Stream` for a value that
//! implements futures-core's, so that futures' stream combinators and evloop's `StreamExt` (and
//! `StreamMap`) work on either.
//!
//! ```
//! use evloop::stream::StreamExt;
//! use evloop_futures::CompatExt;
//!
//! evloop::run(async {
//!     // evloop's stream seen as futures-core's, and back: the values pass through unchanged.
//!     let there = evloop::stream::iter([1, 2, 3]).compat();
//!     let back = there.compat();
//!     let got: Vec<i32> = back.collect().await;
//!     assert_eq!(got, [1, 2, 3]);
//! })?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

#![forbid(unsafe_code)]
#![deny(missing_docs)]

use std::io::{self, IoSlice};
use std::pin::Pin;
use std::task::{Context, Poll};

pub use futures_core;
pub use futures_io;

pin_project_lite::pin_project! {
    /// A stream seen through the other family of I/O traits: evloop's as futures-io's, or
    /// futures-io's as evloop's (whichever the value inside implements).
    ///
    /// ```
    /// use evloop::io::AsyncReadExt;
    /// use evloop_futures::Compat;
    ///
    /// evloop::run(async {
    ///     // futures-io's `&[u8]` reader, read with evloop's `read_to_end`.
    ///     let mut r = Compat::new(&b"abc"[..]);
    ///     let mut buf = Vec::new();
    ///     r.read_to_end(&mut buf).await?;
    ///     assert_eq!(buf, b"abc");
    ///     Ok::<(), std::io::Error>(())
    /// })??;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[derive(Debug, Clone, Copy, Default)]
    pub struct Compat<T> {
        #[pin]
        inner: T,
    }
}

impl<T> Compat<T> {
    /// Wraps `inner`.
    ///
    /// ```
    /// let c = evloop_futures::Compat::new(Vec::<u8>::new());
    /// assert!(c.get_ref().is_empty());
    /// ```
    pub fn new(inner: T) -> Compat<T> {
        Compat { inner }
    }

    /// The value inside.
    ///
    /// ```
    /// let c = evloop_futures::Compat::new(7);
    /// assert_eq!(*c.get_ref(), 7);
    /// ```
    pub fn get_ref(&self) -> &T {
        &self.inner
    }

    /// The value inside, mutably.
    ///
    /// ```
    /// let mut c = evloop_futures::Compat::new(vec![1u8]);
    /// c.get_mut().push(2);
    /// assert_eq!(c.get_ref(), &[1, 2]);
    /// ```
    pub fn get_mut(&mut self) -> &mut T {
        &mut self.inner
    }

    /// Unwraps the value.
    ///
    /// ```
    /// let c = evloop_futures::Compat::new(String::from("x"));
    /// assert_eq!(c.into_inner(), "x");
    /// ```
    pub fn into_inner(self) -> T {
        self.inner
    }
}

/// `.compat()` on any value: the same as [`Compat::new`].
///
/// ```
/// use evloop_futures::CompatExt;
///
/// let c = Vec::<u8>::new().compat();
/// assert!(c.into_inner().is_empty());
/// ```
pub trait CompatExt: Sized {
    /// Wraps `self` in a [`Compat`].
    ///
    /// ```
    /// use evloop_futures::CompatExt;
    /// assert_eq!(*3.compat().get_ref(), 3);
    /// ```
    fn compat(self) -> Compat<Self> {
        Compat::new(self)
    }
}

impl<T> CompatExt for T {}

// ---------------------------------------------------------------------------------------------
// evloop's traits seen as futures-io's.

impl<T: evloop::io::AsyncRead> futures_io::AsyncRead for Compat<T> {
    fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut [u8]) -> Poll<io::Result<usize>> {
        self.project().inner.poll_read(cx, buf)
    }
}

impl<T: evloop::io::AsyncBufRead> futures_io::AsyncBufRead for Compat<T> {
    fn poll_fill_buf(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<&[u8]>> {
        self.project().inner.poll_fill_buf(cx)
    }

    fn consume(self: Pin<&mut Self>, amt: usize) {
        self.project().inner.consume(amt)
    }
}

impl<T: evloop::io::AsyncWrite> futures_io::AsyncWrite for Compat<T> {
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        self.project().inner.poll_write(cx, buf)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        self.project().inner.poll_write_vectored(cx, bufs)
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.project().inner.poll_flush(cx)
    }

    fn poll_close(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.project().inner.poll_shutdown(cx)
    }
}

// ---------------------------------------------------------------------------------------------
// futures-io's traits seen as evloop's.

impl<T: futures_io::AsyncRead> evloop::io::AsyncRead for Compat<T> {
    fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut [u8]) -> Poll<io::Result<usize>> {
        self.project().inner.poll_read(cx, buf)
    }
}

impl<T: futures_io::AsyncBufRead> evloop::io::AsyncBufRead for Compat<T> {
    fn poll_fill_buf(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<&[u8]>> {
        self.project().inner.poll_fill_buf(cx)
    }

    fn consume(self: Pin<&mut Self>, amt: usize) {
        self.project().inner.consume(amt)
    }
}

impl<T: futures_io::AsyncWrite> evloop::io::AsyncWrite for Compat<T> {
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        self.project().inner.poll_write(cx, buf)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        self.project().inner.poll_write_vectored(cx, bufs)
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.project().inner.poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.project().inner.poll_close(cx)
    }
}

// ---------------------------------------------------------------------------------------------
// Streams of values, both ways.

impl<T: evloop::stream::Stream> futures_core::Stream for Compat<T> {
    type Item = T::Item;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<T::Item>> {
        self.project().inner.poll_next(cx)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        self.inner.size_hint()
    }
}

impl<T: futures_core::Stream> evloop::stream::Stream for Compat<T> {
    type Item = T::Item;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<T::Item>> {
        self.project().inner.poll_next(cx)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        self.inner.size_hint()
    }
}
