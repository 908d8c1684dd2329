//! The byte-stream traits: [`AsyncRead`] and [`AsyncWrite`] (evloop's own: the runtime has no
//! dependencies), the helpers every reader and writer gets ([`AsyncReadExt`],
//! [`AsyncWriteExt`]), and `forward_io!`, the one macro that writes the impls which only pass
//! the calls on to another value (a reference, a box, a buffered wrapper's inner stream, a
//! stream's socket).
//!
//! A `poll_*` method does one step: it returns `Ready` with what one syscall (or one copy out of
//! a buffer) gave, or parks the task's waker and returns `Pending`; the `Ext` helpers are
//! `async fn` loops over those steps.

use std::future::poll_fn;
use std::io::{self, IoSlice};
use std::pin::Pin;
use std::task::{Context, Poll, ready};

use crate::io::adapters::{Chain, Take};
use crate::io::ints::{read_int_methods, write_int_methods};
use crate::io::read_buf::{BufMut, ReadBuf};

/// Reading bytes asynchronously (evloop's own trait: the runtime has no dependencies).
///
/// ```
/// use std::io;
/// use std::pin::Pin;
/// use std::task::{Context, Poll};
/// use evloop::io::{AsyncRead, AsyncReadExt};
///
/// /// Reads as an endless run of zero bytes, like `/dev/zero`.
/// struct Zeros;
///
/// impl AsyncRead for Zeros {
///     fn poll_read(self: Pin<&mut Self>, _cx: &mut Context<'_>, buf: &mut [u8]) -> Poll<io::Result<usize>> {
///         buf.fill(0);
///         Poll::Ready(Ok(buf.len()))
///     }
/// }
///
/// let buf = evloop::run(async {
///     let mut buf = [1u8; 4];
///     Zeros.read_exact(&mut buf).await?; // every reader gets the `AsyncReadExt` helpers
///     Ok::<_, io::Error>(buf)
/// })??;
/// assert_eq!(buf, [0; 4]);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub trait AsyncRead {
    /// Reads into `buf`: `Ready(Ok(0))` means end of stream (or an empty `buf`).
    ///
    /// ```
    /// use std::future::poll_fn;
    /// use std::pin::Pin;
    /// use evloop::io::AsyncRead;
    ///
    /// evloop::run(async {
    ///     let mut src: &[u8] = b"abc"; // `&[u8]` is an in-memory reader
    ///     let mut buf = [0; 2];
    ///     let n = poll_fn(|cx| Pin::new(&mut src).poll_read(cx, &mut buf)).await?;
    ///     assert_eq!(&buf[..n], b"ab");
    ///     assert_eq!(src, b"c");
    ///     Ok::<(), std::io::Error>(())
    /// })??;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut [u8]) -> Poll<io::Result<usize>>;

    /// Reads into the free part of `buf` and advances its filled part (tokio's `poll_read`
    /// shape); nothing filled means end of stream (or no free space). The default is one
    /// [`poll_read`](Self::poll_read) into [`ReadBuf::initialize_unfilled`].
    ///
    /// ```
    /// use std::future::poll_fn;
    /// use std::pin::Pin;
    /// use evloop::io::{AsyncRead, ReadBuf};
    ///
    /// evloop::run(async {
    ///     let mut src: &[u8] = b"abc";
    ///     let mut storage = [0; 8];
    ///     let mut buf = ReadBuf::new(&mut storage);
    ///     poll_fn(|cx| Pin::new(&mut src).poll_read_buf(cx, &mut buf)).await?;
    ///     assert_eq!(buf.filled(), b"abc");
    ///     Ok::<(), std::io::Error>(())
    /// })??;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    fn poll_read_buf(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        let n = ready!(self.poll_read(cx, buf.initialize_unfilled()))?;
        buf.advance(n);
        Poll::Ready(Ok(()))
    }
}

/// Writing bytes asynchronously.
///
/// ```
/// use std::io;
/// use std::pin::Pin;
/// use std::task::{Context, Poll};
/// use evloop::io::{AsyncWrite, AsyncWriteExt};
///
/// /// Counts the bytes written to it and throws them away.
/// #[derive(Default)]
/// struct Counter(usize);
///
/// impl AsyncWrite for Counter {
///     fn poll_write(mut self: Pin<&mut Self>, _cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
///         self.0 += buf.len();
///         Poll::Ready(Ok(buf.len()))
///     }
///     fn poll_shutdown(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
///         Poll::Ready(Ok(()))
///     }
/// }
///
/// let written = evloop::run(async {
///     let mut counter = Counter::default();
///     counter.write_all(b"hello world").await?; // every writer gets the `AsyncWriteExt` helpers
///     Ok::<_, io::Error>(counter.0)
/// })??;
/// assert_eq!(written, 11);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub trait AsyncWrite {
    /// Writes some of `buf`; returns how much.
    ///
    /// ```
    /// use std::future::poll_fn;
    /// use std::pin::Pin;
    /// use evloop::io::AsyncWrite;
    ///
    /// evloop::run(async {
    ///     let mut out = Vec::new(); // `Vec<u8>` is an in-memory writer
    ///     let n = poll_fn(|cx| Pin::new(&mut out).poll_write(cx, b"bytes")).await?;
    ///     assert_eq!((n, &out[..]), (5, &b"bytes"[..]));
    ///     Ok::<(), std::io::Error>(())
    /// })??;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>>;

    /// Writes from several buffers at once (`writev`/`sendmsg` where the type supports it).
    ///
    /// ```
    /// use std::future::poll_fn;
    /// use std::io::IoSlice;
    /// use std::pin::Pin;
    /// use evloop::net::UnixStream;
    /// use evloop::io::{AsyncReadExt, AsyncWrite};
    ///
    /// evloop::run(async {
    ///     let (mut a, mut b) = UnixStream::pair()?;
    ///     let bufs = [IoSlice::new(b"head "), IoSlice::new(b"body")];
    ///     // A socket sends both buffers with one `sendmsg`.
    ///     let n = poll_fn(|cx| Pin::new(&mut a).poll_write_vectored(cx, &bufs)).await?;
    ///     assert_eq!(n, 9);
    ///     let mut got = [0; 9];
    ///     b.read_exact(&mut got).await?;
    ///     assert_eq!(&got, b"head body");
    ///     Ok::<(), std::io::Error>(())
    /// })??;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let first = bufs.iter().find(|b| !b.is_empty()).map_or(&[][..], |b| &**b);
        self.poll_write(cx, first)
    }

    /// Whether [`poll_write_vectored`](Self::poll_write_vectored) writes several buffers at
    /// once (tokio's `is_write_vectored`): `false` means the default, which writes only the
    /// first non-empty one, so a caller with many small buffers should join them first.
    ///
    /// ```
    /// use evloop::io::{AsyncWrite, BufWriter};
    ///
    /// evloop::run(async {
    ///     let (a, _b) = evloop::net::UnixStream::pair()?;
    ///     assert!(a.is_write_vectored()); // one sendmsg for all buffers
    ///     assert!(Vec::<u8>::new().is_write_vectored());
    ///     assert!(BufWriter::new(a).is_write_vectored());
    ///     Ok::<(), std::io::Error>(())
    /// })??;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    fn is_write_vectored(&self) -> bool {
        false
    }

    /// Flushes buffered data (unbuffered types return `Ready(Ok(()))`).
    ///
    /// ```
    /// use std::future::poll_fn;
    /// use std::pin::Pin;
    /// use evloop::io::BufWriter;
    /// use evloop::io::{AsyncWrite, AsyncWriteExt};
    ///
    /// evloop::run(async {
    ///     let mut w = BufWriter::new(Vec::new());
    ///     w.write_all(b"buffered").await?;
    ///     assert!(w.get_ref().is_empty()); // still in the BufWriter
    ///     poll_fn(|cx| Pin::new(&mut w).poll_flush(cx)).await?;
    ///     assert_eq!(w.get_ref(), b"buffered");
    ///     Ok::<(), std::io::Error>(())
    /// })??;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    fn poll_flush(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    /// Shuts the write side down (TCP FIN), after flushing.
    ///
    /// ```
    /// use std::future::poll_fn;
    /// use std::pin::Pin;
    /// use evloop::net::UnixStream;
    /// use evloop::io::{AsyncReadExt, AsyncWrite};
    ///
    /// evloop::run(async {
    ///     let (mut a, mut b) = UnixStream::pair()?;
    ///     poll_fn(|cx| Pin::new(&mut a).poll_shutdown(cx)).await?; // shutdown(SHUT_WR)
    ///     assert_eq!(b.read(&mut [0; 8]).await?, 0); // the peer reads end of stream
    ///     Ok::<(), std::io::Error>(())
    /// })??;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>>;
}

forward_io!([R: AsyncRead + Unpin + ?Sized] AsyncRead for &mut R => inner |r| **r);
forward_io!([W: AsyncWrite + Unpin + ?Sized] AsyncWrite for &mut W => inner |w| **w);

/// The async helpers every reader gets: `read`, `read_exact`, `read_to_end`, `read_to_string`,
/// `read_buf`, `take`, `chain` and the integer reads (`read_u8` ... `read_f64_le`).
///
/// ```
/// use evloop::io::AsyncReadExt;
///
/// evloop::run(async {
///     let mut src: &[u8] = b"header:body";
///     let mut head = [0; 7];
///     src.read_exact(&mut head).await?;
///     let mut rest = Vec::new();
///     src.read_to_end(&mut rest).await?;
///     assert_eq!((&head[..], &rest[..]), (&b"header:"[..], &b"body"[..]));
///     Ok::<(), std::io::Error>(())
/// })??;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
// Single-threaded runtime: the futures of these methods are never required to be `Send`, so
// the usual caveat about `async fn` in public traits does not apply.
#[allow(async_fn_in_trait)]
pub trait AsyncReadExt: AsyncRead + Unpin {
    /// Reads some bytes into `buf`; 0 means end of stream.
    ///
    /// ```
    /// use evloop::net::UnixStream;
    /// use evloop::io::{AsyncReadExt, AsyncWriteExt};
    ///
    /// evloop::run(async {
    ///     let (mut a, mut b) = UnixStream::pair()?;
    ///     a.write_all(b"some bytes").await?;
    ///     let mut buf = [0; 64];
    ///     let n = b.read(&mut buf).await?; // what is there, at least one byte
    ///     assert_eq!(&buf[..n], b"some bytes");
    ///     drop(a);
    ///     assert_eq!(b.read(&mut buf).await?, 0); // end of stream
    ///     Ok::<(), std::io::Error>(())
    /// })??;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    async fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        poll_fn(|cx| Pin::new(&mut *self).poll_read(cx, buf)).await
    }

    /// Fills `buf` completely and returns its length (tokio's signature); `UnexpectedEof` if
    /// the stream ends first.
    ///
    /// ```
    /// use std::io::ErrorKind;
    /// use evloop::io::AsyncReadExt;
    ///
    /// evloop::run(async {
    ///     let mut src: &[u8] = b"12345";
    ///     let mut four = [0; 4];
    ///     assert_eq!(src.read_exact(&mut four).await?, 4);
    ///     assert_eq!(&four, b"1234");
    ///     let err = src.read_exact(&mut four).await.unwrap_err(); // only one byte left
    ///     assert_eq!(err.kind(), ErrorKind::UnexpectedEof);
    ///     Ok::<(), std::io::Error>(())
    /// })??;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    async fn read_exact(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let mut done = 0;
        while done < buf.len() {
            let n = self.read(&mut buf[done..]).await?;
            if n == 0 {
                return Err(io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    format!("read_exact: the stream ended after {done} of {} bytes", buf.len()),
                ));
            }
            done += n;
        }
        Ok(done)
    }

    /// Reads until end of stream, appending to `out`; returns how many bytes were read.
    ///
    /// ```
    /// use evloop::net::UnixStream;
    /// use evloop::io::{AsyncReadExt, AsyncWriteExt};
    ///
    /// evloop::run(async {
    ///     let (mut a, mut b) = UnixStream::pair()?;
    ///     evloop::spawn(async move {
    ///         a.write_all(b"everything").await?;
    ///         a.shutdown().await // end of stream for the reader
    ///     });
    ///     let mut all = Vec::new();
    ///     assert_eq!(b.read_to_end(&mut all).await?, 10);
    ///     assert_eq!(all, b"everything");
    ///     Ok::<(), std::io::Error>(())
    /// })??;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    async fn read_to_end(&mut self, out: &mut Vec<u8>) -> io::Result<usize> {
        let start = out.len();
        let mut chunk = [0u8; 8192];
        loop {
            let n = self.read(&mut chunk).await?;
            if n == 0 {
                return Ok(out.len() - start);
            }
            out.extend_from_slice(&chunk[..n]);
        }
    }

    /// Reads until end of stream and appends the text to `out`; returns how many bytes were
    /// read. As tokio's: bytes that are not UTF-8 give an `InvalidData` error, and on any error
    /// `out` keeps what it held before the call.
    ///
    /// ```
    /// use evloop::io::AsyncReadExt;
    ///
    /// evloop::run(async {
    ///     let mut text = String::from("> ");
    ///     assert_eq!((&b"all of it"[..]).read_to_string(&mut text).await?, 9);
    ///     assert_eq!(text, "> all of it");
    ///     let err = (&b"\xff"[..]).read_to_string(&mut text).await.unwrap_err();
    ///     assert_eq!((err.kind(), text.as_str()), (std::io::ErrorKind::InvalidData, "> all of it"));
    ///     Ok::<(), std::io::Error>(())
    /// })??;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    async fn read_to_string(&mut self, out: &mut String) -> io::Result<usize> {
        let mut bytes = Vec::new();
        let n = self.read_to_end(&mut bytes).await?;
        out.push_str(std::str::from_utf8(&bytes).map_err(|_| invalid_utf8())?);
        Ok(n)
    }

    /// One read into the free space of `buf` (tokio's `read_buf`): a `Vec<u8>` is appended to
    /// and grows when full, so a loop of `read_buf` calls collects a stream without sizing a
    /// buffer. Returns how many bytes were read: 0 is end of stream, or a `buf` with no room.
    ///
    /// ```
    /// use evloop::io::AsyncReadExt;
    ///
    /// evloop::run(async {
    ///     let mut src: &[u8] = b"a growing buffer";
    ///     let mut all = Vec::new();
    ///     while src.read_buf(&mut all).await? != 0 {}
    ///     assert_eq!(all, b"a growing buffer");
    ///     Ok::<(), std::io::Error>(())
    /// })??;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    async fn read_buf<B: BufMut + ?Sized>(&mut self, buf: &mut B) -> io::Result<usize> {
        if buf.remaining_mut() == 0 {
            return Ok(0);
        }
        poll_fn(|cx| buf.poll_read_from(Pin::new(&mut *self), cx)).await
    }

    /// A reader that ends after at most `limit` bytes of this one (tokio's `take`).
    ///
    /// ```
    /// use evloop::io::AsyncReadExt;
    ///
    /// evloop::run(async {
    ///     let mut head = Vec::new();
    ///     (&b"header|body"[..]).take(6).read_to_end(&mut head).await?;
    ///     assert_eq!(head, b"header");
    ///     Ok::<(), std::io::Error>(())
    /// })??;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    fn take(self, limit: u64) -> Take<Self>
    where
        Self: Sized,
    {
        Take::new(self, limit)
    }

    /// A reader that reads this one to its end, then `next` (tokio's `chain`).
    ///
    /// ```
    /// use evloop::io::AsyncReadExt;
    ///
    /// evloop::run(async {
    ///     let mut all = String::new();
    ///     (&b"first, "[..]).chain(&b"then second"[..]).read_to_string(&mut all).await?;
    ///     assert_eq!(all, "first, then second");
    ///     Ok::<(), std::io::Error>(())
    /// })??;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    fn chain<R: AsyncRead>(self, next: R) -> Chain<Self, R>
    where
        Self: Sized,
    {
        Chain::new(self, next)
    }

    read_int_methods!();
}

impl<R: AsyncRead + Unpin + ?Sized> AsyncReadExt for R {}

/// The error of a text read (`read_line`, `read_to_string`, `Lines`) that met bytes that are not
/// UTF-8: tokio's kind and message, so code that matches on either ports.
pub(crate) fn invalid_utf8() -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, "stream did not contain valid UTF-8")
}

/// The async helpers every writer gets: `write`, `write_all`, `write_vectored`, `flush`,
/// `shutdown` and the integer writes (`write_u8` ... `write_f64_le`).
///
/// ```
/// use evloop::io::AsyncWriteExt;
///
/// evloop::run(async {
///     let mut out = Vec::new();
///     out.write_all(b"hello, ").await?;
///     out.write_all(b"world").await?;
///     out.flush().await?;
///     assert_eq!(out, b"hello, world");
///     Ok::<(), std::io::Error>(())
/// })??;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[allow(async_fn_in_trait)]
pub trait AsyncWriteExt: AsyncWrite + Unpin {
    /// Writes some of `buf`; returns how much.
    ///
    /// ```
    /// use evloop::net::UnixStream;
    /// use evloop::io::{AsyncReadExt, AsyncWriteExt};
    ///
    /// evloop::run(async {
    ///     let (mut a, mut b) = UnixStream::pair()?;
    ///     let n = a.write(b"maybe not all").await?; // some of it: loop, or use write_all
    ///     let mut buf = vec![0; n];
    ///     b.read_exact(&mut buf).await?;
    ///     assert_eq!(buf, &b"maybe not all"[..n]);
    ///     Ok::<(), std::io::Error>(())
    /// })??;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    async fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        poll_fn(|cx| Pin::new(&mut *self).poll_write(cx, buf)).await
    }

    /// Writes all of `buf`; `WriteZero` if the writer stops accepting bytes.
    ///
    /// ```
    /// use evloop::net::UnixStream;
    /// use evloop::io::{AsyncReadExt, AsyncWriteExt};
    ///
    /// evloop::run(async {
    ///     let (mut a, mut b) = UnixStream::pair()?;
    ///     let big = vec![7u8; 1 << 20]; // more than the socket buffer holds
    ///     let writer = evloop::spawn(async move { a.write_all(&big).await }); // waits for room
    ///     let mut got = Vec::new();
    ///     let mut chunk = [0; 65536];
    ///     while got.len() < 1 << 20 {
    ///         let n = b.read(&mut chunk).await?;
    ///         got.extend_from_slice(&chunk[..n]);
    ///     }
    ///     writer.await??;
    ///     assert!(got.iter().all(|&b| b == 7));
    ///     Ok::<(), Box<dyn std::error::Error>>(())
    /// })??;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    async fn write_all(&mut self, mut buf: &[u8]) -> io::Result<()> {
        while !buf.is_empty() {
            let n = self.write(buf).await?;
            if n == 0 {
                return Err(io::Error::new(
                    io::ErrorKind::WriteZero,
                    "write_all: the writer accepted 0 bytes",
                ));
            }
            buf = &buf[n..];
        }
        Ok(())
    }

    /// Writes from several buffers in one call where the writer supports it.
    ///
    /// ```
    /// use std::io::IoSlice;
    /// use evloop::io::AsyncWriteExt;
    ///
    /// evloop::run(async {
    ///     let mut out = Vec::new();
    ///     let n = out.write_vectored(&[IoSlice::new(b"a"), IoSlice::new(b"bc")]).await?;
    ///     assert_eq!((n, &out[..]), (3, &b"abc"[..]));
    ///     Ok::<(), std::io::Error>(())
    /// })??;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    async fn write_vectored(&mut self, bufs: &[IoSlice<'_>]) -> io::Result<usize> {
        poll_fn(|cx| Pin::new(&mut *self).poll_write_vectored(cx, bufs)).await
    }

    /// Flushes buffered data.
    ///
    /// ```
    /// use evloop::io::BufWriter;
    /// use evloop::io::AsyncWriteExt;
    ///
    /// evloop::run(async {
    ///     let mut w = BufWriter::new(Vec::new());
    ///     w.write_all(b"line\n").await?;
    ///     assert!(w.get_ref().is_empty()); // held in the buffer
    ///     w.flush().await?;
    ///     assert_eq!(w.get_ref(), b"line\n");
    ///     Ok::<(), std::io::Error>(())
    /// })??;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    async fn flush(&mut self) -> io::Result<()> {
        poll_fn(|cx| Pin::new(&mut *self).poll_flush(cx)).await
    }

    /// Shuts the write side down (half-close).
    ///
    /// ```
    /// use evloop::net::UnixStream;
    /// use evloop::io::{AsyncReadExt, AsyncWriteExt};
    ///
    /// evloop::run(async {
    ///     let (mut a, mut b) = UnixStream::pair()?;
    ///     a.write_all(b"last words").await?;
    ///     a.shutdown().await?; // half-close: `a` can still read
    ///     let mut got = Vec::new();
    ///     b.read_to_end(&mut got).await?; // everything, then end of stream
    ///     assert_eq!(got, b"last words");
    ///     b.write_all(b"reply").await?;
    ///     let mut reply = [0; 5];
    ///     a.read_exact(&mut reply).await?;
    ///     assert_eq!(&reply, b"reply");
    ///     Ok::<(), std::io::Error>(())
    /// })??;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    async fn shutdown(&mut self) -> io::Result<()> {
        poll_fn(|cx| Pin::new(&mut *self).poll_shutdown(cx)).await
    }

    /// Writes some of `src` (its front; vectored if the writer is) and advances it by what was
    /// written: tokio's `write_buf`, over evloop's [`Buf`](crate::io::Buf) (`&[u8]`,
    /// `Cursor`, `VecDeque<u8>`).
    ///
    /// ```
    /// use evloop::io::AsyncWriteExt;
    ///
    /// evloop::run(async {
    ///     let mut out = Vec::new();
    ///     let mut src: &[u8] = b"hello";
    ///     let n = out.write_buf(&mut src).await?;
    ///     assert_eq!((n, src.len()), (5, 0)); // `src` moved past what was written
    ///     Ok::<(), std::io::Error>(())
    /// })??;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    async fn write_buf<B: crate::io::Buf + ?Sized>(&mut self, src: &mut B) -> io::Result<usize> {
        crate::io::write_buf::write_buf(self, src).await
    }

    /// Writes all of `src`, advancing it as it goes (tokio's `write_all_buf`); `WriteZero` if
    /// the writer stops accepting bytes. Dropped halfway, `src` starts at the first byte not
    /// written.
    ///
    /// ```
    /// use std::io::Cursor;
    /// use evloop::io::AsyncWriteExt;
    ///
    /// evloop::run(async {
    ///     let (mut a, mut b) = evloop::io::duplex(4); // room for 4 bytes at a time
    ///     let mut src = Cursor::new(b"more than four".to_vec());
    ///     let reader = evloop::spawn(async move {
    ///         let mut got = Vec::new();
    ///         evloop::io::AsyncReadExt::read_to_end(&mut b, &mut got).await.map(|_| got)
    ///     });
    ///     a.write_all_buf(&mut src).await?;
    ///     drop(a);
    ///     assert_eq!(reader.await.unwrap()?, b"more than four");
    ///     Ok::<(), std::io::Error>(())
    /// })??;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    async fn write_all_buf<B: crate::io::Buf + ?Sized>(&mut self, src: &mut B) -> io::Result<()> {
        crate::io::write_buf::write_all_buf(self, src).await
    }

    write_int_methods!();
}

impl<W: AsyncWrite + Unpin + ?Sized> AsyncWriteExt for W {}

// ---------------------------------------------------------------------------------------------
// Forwarding impls.

/// Writes the impls of [`AsyncRead`], [`AsyncWrite`] and [`AsyncBufRead`](crate::io::AsyncBufRead)
/// that only pass each call on to another value, so that none is written by hand: a forwarding
/// impl that forgot `poll_write_vectored` or `poll_flush` would silently fall back to the
/// trait's default and change what the wrapper does.
///
/// `forward_io!([generics] Trait, ... for Type => how |this| target);` where `how` is
/// - `inner`: `target` (computed from `this`, a `&mut Self` or, for `is_write_vectored`, a
///   `&Self`) is a place holding a value implementing the traits (`**r`, `w.inner`), and
///   every method is passed on, defaults included (`&mut R`, `Box<R>`, the buffered wrappers'
///   other side);
/// - `socket`: `target` (computed from `this: &Self`) is the [`Socket`](crate::net::Socket)
///   of a byte stream: reads are `recv`, writes `send`/`sendmsg`, shutdown is
///   `shutdown(SHUT_WR)`, flush has nothing to do (TCP and Unix streams and their halves).
macro_rules! forward_io {
    (@inner AsyncRead [$($g:tt)*] $ty:ty, |$this:ident| $target:expr) => {
        impl<$($g)*> $crate::io::AsyncRead for $ty {
            #[inline]
            fn poll_read(
                self: ::std::pin::Pin<&mut Self>,
                cx: &mut ::std::task::Context<'_>,
                buf: &mut [u8],
            ) -> ::std::task::Poll<::std::io::Result<usize>> {
                let $this = ::std::pin::Pin::get_mut(self);
                $crate::io::AsyncRead::poll_read(::std::pin::Pin::new(&mut $target), cx, buf)
            }
            #[inline]
            fn poll_read_buf(
                self: ::std::pin::Pin<&mut Self>,
                cx: &mut ::std::task::Context<'_>,
                buf: &mut $crate::io::ReadBuf<'_>,
            ) -> ::std::task::Poll<::std::io::Result<()>> {
                let $this = ::std::pin::Pin::get_mut(self);
                $crate::io::AsyncRead::poll_read_buf(::std::pin::Pin::new(&mut $target), cx, buf)
            }
        }
    };
    (@inner AsyncBufRead [$($g:tt)*] $ty:ty, |$this:ident| $target:expr) => {
        impl<$($g)*> $crate::io::AsyncBufRead for $ty {
            #[inline]
            fn poll_fill_buf(
                self: ::std::pin::Pin<&mut Self>,
                cx: &mut ::std::task::Context<'_>,
            ) -> ::std::task::Poll<::std::io::Result<&[u8]>> {
                let $this = ::std::pin::Pin::get_mut(self);
                $crate::io::AsyncBufRead::poll_fill_buf(::std::pin::Pin::new(&mut $target), cx)
            }
            #[inline]
            fn consume(self: ::std::pin::Pin<&mut Self>, amt: usize) {
                let $this = ::std::pin::Pin::get_mut(self);
                $crate::io::AsyncBufRead::consume(::std::pin::Pin::new(&mut $target), amt)
            }
        }
    };
    (@inner AsyncWrite [$($g:tt)*] $ty:ty, |$this:ident| $target:expr) => {
        impl<$($g)*> $crate::io::AsyncWrite for $ty {
            #[inline]
            fn poll_write(
                self: ::std::pin::Pin<&mut Self>,
                cx: &mut ::std::task::Context<'_>,
                buf: &[u8],
            ) -> ::std::task::Poll<::std::io::Result<usize>> {
                let $this = ::std::pin::Pin::get_mut(self);
                $crate::io::AsyncWrite::poll_write(::std::pin::Pin::new(&mut $target), cx, buf)
            }
            #[inline]
            fn poll_write_vectored(
                self: ::std::pin::Pin<&mut Self>,
                cx: &mut ::std::task::Context<'_>,
                bufs: &[::std::io::IoSlice<'_>],
            ) -> ::std::task::Poll<::std::io::Result<usize>> {
                let $this = ::std::pin::Pin::get_mut(self);
                $crate::io::AsyncWrite::poll_write_vectored(::std::pin::Pin::new(&mut $target), cx, bufs)
            }
            #[inline]
            fn is_write_vectored(&self) -> bool {
                let $this = self;
                $crate::io::AsyncWrite::is_write_vectored(&$target)
            }
            #[inline]
            fn poll_flush(
                self: ::std::pin::Pin<&mut Self>,
                cx: &mut ::std::task::Context<'_>,
            ) -> ::std::task::Poll<::std::io::Result<()>> {
                let $this = ::std::pin::Pin::get_mut(self);
                $crate::io::AsyncWrite::poll_flush(::std::pin::Pin::new(&mut $target), cx)
            }
            #[inline]
            fn poll_shutdown(
                self: ::std::pin::Pin<&mut Self>,
                cx: &mut ::std::task::Context<'_>,
            ) -> ::std::task::Poll<::std::io::Result<()>> {
                let $this = ::std::pin::Pin::get_mut(self);
                $crate::io::AsyncWrite::poll_shutdown(::std::pin::Pin::new(&mut $target), cx)
            }
        }
    };
    (@socket AsyncRead [$($g:tt)*] $ty:ty, |$this:ident| $target:expr) => {
        impl<$($g)*> $crate::io::AsyncRead for $ty {
            #[inline]
            fn poll_read(
                self: ::std::pin::Pin<&mut Self>,
                cx: &mut ::std::task::Context<'_>,
                buf: &mut [u8],
            ) -> ::std::task::Poll<::std::io::Result<usize>> {
                let $this: &Self = &self;
                $crate::io::net::Socket::poll_recv($target, cx, buf)
            }
        }
    };
    (@socket AsyncWrite [$($g:tt)*] $ty:ty, |$this:ident| $target:expr) => {
        impl<$($g)*> $crate::io::AsyncWrite for $ty {
            #[inline]
            fn poll_write(
                self: ::std::pin::Pin<&mut Self>,
                cx: &mut ::std::task::Context<'_>,
                buf: &[u8],
            ) -> ::std::task::Poll<::std::io::Result<usize>> {
                let $this: &Self = &self;
                $crate::io::net::Socket::poll_send($target, cx, buf)
            }
            #[inline]
            fn poll_write_vectored(
                self: ::std::pin::Pin<&mut Self>,
                cx: &mut ::std::task::Context<'_>,
                bufs: &[::std::io::IoSlice<'_>],
            ) -> ::std::task::Poll<::std::io::Result<usize>> {
                let $this: &Self = &self;
                $crate::io::net::Socket::poll_send_vectored($target, cx, bufs)
            }
            fn is_write_vectored(&self) -> bool {
                true
            }
            fn poll_shutdown(
                self: ::std::pin::Pin<&mut Self>,
                _cx: &mut ::std::task::Context<'_>,
            ) -> ::std::task::Poll<::std::io::Result<()>> {
                let $this: &Self = &self;
                ::std::task::Poll::Ready($crate::io::net::Socket::shutdown($target, $crate::io::net::Shutdown::Write))
            }
        }
    };
    ($gen:tt $($trait:ident),+ for $ty:ty => $how:ident |$this:ident| $target:expr) => {
        $( $crate::io::traits::forward_io!(@$how $trait $gen $ty, |$this| $target); )+
    };
}

pub(crate) use forward_io;
