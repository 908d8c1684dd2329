//! Readers made of readers: [`Take`] (at most `limit` bytes of one reader) and [`Chain`] (one
//! reader to its end, then another), what `AsyncReadExt::take` and `AsyncReadExt::chain`
//! return, with tokio's behaviour. Each passes `poll_read` and the buffered pair
//! (`poll_fill_buf`/`consume`) on to the reader it wraps, cut or switched; like the other
//! adapters of this folder they need `Unpin` readers (no pin projections, no `unsafe`).

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll, ready};

use crate::io::{AsyncBufRead, AsyncRead};

// ---------------------------------------------------------------------------------------------
// Take.

/// A reader that ends after at most `limit` bytes of its inner reader (tokio's `Take`);
/// see [`AsyncReadExt::take`](crate::io::AsyncReadExt::take).
///
/// ```
/// use evloop::io::AsyncReadExt;
///
/// evloop::run(async {
///     let mut part = (&b"0123456789"[..]).take(4);
///     let mut got = Vec::new();
///     part.read_to_end(&mut got).await?;
///     assert_eq!((got.as_slice(), part.limit()), (&b"0123"[..], 0));
///     assert_eq!(part.into_inner(), b"456789"); // the rest is still there
///     Ok::<(), std::io::Error>(())
/// })??;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
#[must_use = "readers do nothing unless you read from them"]
pub struct Take<R> {
    inner: R,
    limit: u64,
}

impl<R> Take<R> {
    pub(crate) fn new(inner: R, limit: u64) -> Take<R> {
        Take { inner, limit }
    }

    /// How many more bytes may be read before this reader ends.
    ///
    /// ```
    /// use evloop::io::AsyncReadExt;
    ///
    /// evloop::run(async {
    ///     let mut part = (&b"abcdef"[..]).take(4);
    ///     part.read_exact(&mut [0; 3]).await?;
    ///     assert_eq!(part.limit(), 1);
    ///     Ok::<(), std::io::Error>(())
    /// })??;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn limit(&self) -> u64 {
        self.limit
    }

    /// Sets how many more bytes may be read (a reader that had ended reads again).
    ///
    /// ```
    /// use evloop::io::AsyncReadExt;
    ///
    /// evloop::run(async {
    ///     let mut part = (&b"abcdef"[..]).take(0);
    ///     assert_eq!(part.read(&mut [0; 8]).await?, 0);
    ///     part.set_limit(2);
    ///     assert_eq!(part.read(&mut [0; 8]).await?, 2);
    ///     Ok::<(), std::io::Error>(())
    /// })??;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn set_limit(&mut self, limit: u64) {
        self.limit = limit;
    }

    /// The inner reader.
    ///
    /// ```
    /// use evloop::io::AsyncReadExt;
    ///
    /// let part = (&b"abc"[..]).take(1);
    /// assert_eq!(*part.get_ref(), b"abc");
    /// ```
    pub fn get_ref(&self) -> &R {
        &self.inner
    }

    /// The inner reader, mutably (reading from it directly does not count against the limit).
    ///
    /// ```
    /// use evloop::io::AsyncReadExt;
    ///
    /// let mut part = (&b"abc"[..]).take(1);
    /// *part.get_mut() = &b"xyz"[..];
    /// assert_eq!(*part.get_ref(), b"xyz");
    /// ```
    pub fn get_mut(&mut self) -> &mut R {
        &mut self.inner
    }

    /// The inner reader back.
    ///
    /// ```
    /// use evloop::io::AsyncReadExt;
    ///
    /// let part = (&b"abc"[..]).take(1);
    /// assert_eq!(part.into_inner(), b"abc");
    /// ```
    pub fn into_inner(self) -> R {
        self.inner
    }
}

/// `limit` as a length no larger than `len`.
fn capped(limit: u64, len: usize) -> usize {
    usize::try_from(limit).map_or(len, |l| l.min(len))
}

impl<R: AsyncRead + Unpin> AsyncRead for Take<R> {
    fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut [u8]) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        if this.limit == 0 {
            return Poll::Ready(Ok(0));
        }
        let max = capped(this.limit, buf.len());
        let n = ready!(Pin::new(&mut this.inner).poll_read(cx, &mut buf[..max]))?;
        this.limit -= n as u64;
        Poll::Ready(Ok(n))
    }
}

impl<R: AsyncBufRead + Unpin> AsyncBufRead for Take<R> {
    fn poll_fill_buf(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<&[u8]>> {
        let this = self.get_mut();
        if this.limit == 0 {
            return Poll::Ready(Ok(&[]));
        }
        let available = ready!(Pin::new(&mut this.inner).poll_fill_buf(cx))?;
        Poll::Ready(Ok(&available[..capped(this.limit, available.len())]))
    }

    fn consume(self: Pin<&mut Self>, amt: usize) {
        let this = self.get_mut();
        let amt = capped(this.limit, amt);
        this.limit -= amt as u64;
        Pin::new(&mut this.inner).consume(amt);
    }
}

// ---------------------------------------------------------------------------------------------
// Chain.

/// One reader to its end, then another (tokio's `Chain`); see
/// [`AsyncReadExt::chain`](crate::io::AsyncReadExt::chain).
///
/// ```
/// use evloop::io::{AsyncBufReadExt, AsyncReadExt};
///
/// evloop::run(async {
///     // A line split across the two readers comes out whole.
///     let mut lines = (&b"one\ntw"[..]).chain(&b"o\n"[..]).lines();
///     assert_eq!(lines.next_line().await?.as_deref(), Some("one"));
///     assert_eq!(lines.next_line().await?.as_deref(), Some("two"));
///     assert_eq!(lines.next_line().await?, None);
///     Ok::<(), std::io::Error>(())
/// })??;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
#[must_use = "readers do nothing unless you read from them"]
pub struct Chain<T, U> {
    first: T,
    second: U,
    /// Set once `first` read end of stream: it is not read again.
    done_first: bool,
}

impl<T, U> Chain<T, U> {
    pub(crate) fn new(first: T, second: U) -> Chain<T, U> {
        Chain {
            first,
            second,
            done_first: false,
        }
    }

    /// The two readers.
    ///
    /// ```
    /// use evloop::io::AsyncReadExt;
    ///
    /// let both = (&b"a"[..]).chain(&b"b"[..]);
    /// assert_eq!(both.get_ref(), (&&b"a"[..], &&b"b"[..]));
    /// ```
    pub fn get_ref(&self) -> (&T, &U) {
        (&self.first, &self.second)
    }

    /// The two readers, mutably.
    ///
    /// ```
    /// use evloop::io::AsyncReadExt;
    ///
    /// let mut both = (&b"a"[..]).chain(&b"b"[..]);
    /// *both.get_mut().1 = &b"c"[..];
    /// assert_eq!(both.into_inner(), (&b"a"[..], &b"c"[..]));
    /// ```
    pub fn get_mut(&mut self) -> (&mut T, &mut U) {
        (&mut self.first, &mut self.second)
    }

    /// The two readers back.
    ///
    /// ```
    /// use evloop::io::AsyncReadExt;
    ///
    /// evloop::run(async {
    ///     let mut both = (&b"ab"[..]).chain(&b"cd"[..]);
    ///     both.read_exact(&mut [0; 3]).await?;
    ///     assert_eq!(both.into_inner(), (&b""[..], &b"d"[..]));
    ///     Ok::<(), std::io::Error>(())
    /// })??;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn into_inner(self) -> (T, U) {
        (self.first, self.second)
    }
}

impl<T: AsyncRead + Unpin, U: AsyncRead + Unpin> AsyncRead for Chain<T, U> {
    fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut [u8]) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        if !this.done_first {
            let n = ready!(Pin::new(&mut this.first).poll_read(cx, buf))?;
            // 0 into an empty buffer says nothing about the end of `first`.
            if n > 0 || buf.is_empty() {
                return Poll::Ready(Ok(n));
            }
            this.done_first = true;
        }
        Pin::new(&mut this.second).poll_read(cx, buf)
    }
}

impl<T: AsyncBufRead + Unpin, U: AsyncBufRead + Unpin> AsyncBufRead for Chain<T, U> {
    fn poll_fill_buf(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<&[u8]>> {
        let this = self.get_mut();
        if !this.done_first {
            match ready!(Pin::new(&mut this.first).poll_fill_buf(cx))? {
                [] => this.done_first = true,
                available => return Poll::Ready(Ok(available)),
            }
        }
        Pin::new(&mut this.second).poll_fill_buf(cx)
    }

    fn consume(self: Pin<&mut Self>, amt: usize) {
        let this = self.get_mut();
        if this.done_first {
            Pin::new(&mut this.second).consume(amt)
        } else {
            Pin::new(&mut this.first).consume(amt)
        }
    }
}
