//! tokio's trivial streams: [`empty`] (reads end at once, writes are accepted and dropped),
//! [`sink`] (a writer that drops everything) and [`repeat`] (an endless run of one byte). They
//! hold no state worth the name and never wait for I/O, so each operation spends one unit of
//! the task's budget (`event_loop::budget`, tokio's coop budget): a loop over them yields to
//! the other tasks every 128 operations instead of holding the loop forever.

use std::io::{self, IoSlice, SeekFrom};
use std::pin::Pin;
use std::task::{Context, Poll, ready};

use crate::event_loop::budget;
use crate::io::{AsyncBufRead, AsyncRead, AsyncSeek, AsyncWrite};

/// A reader at its end and a writer that takes everything (tokio's `io::empty`).
///
/// ```
/// use evloop::io::{AsyncReadExt, AsyncWriteExt};
///
/// evloop::run(async {
///     let mut e = evloop::io::empty();
///     let mut all = Vec::new();
///     assert_eq!(e.read_to_end(&mut all).await?, 0);
///     assert_eq!(e.write(b"dropped").await?, 7);
///     Ok::<(), std::io::Error>(())
/// })??;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn empty() -> Empty {
    Empty { _private: () }
}

/// See [`empty`].
///
/// ```
/// use evloop::io::AsyncBufReadExt;
///
/// evloop::run(async {
///     let mut e: evloop::io::Empty = evloop::io::empty();
///     assert!(e.fill_buf().await?.is_empty());
///     Ok::<(), std::io::Error>(())
/// })??;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, Copy, Default)]
pub struct Empty {
    _private: (),
}

impl AsyncRead for Empty {
    fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, _buf: &mut [u8]) -> Poll<io::Result<usize>> {
        ready!(budget::poll_proceed(cx));
        Poll::Ready(Ok(0))
    }
}

impl AsyncBufRead for Empty {
    fn poll_fill_buf(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<&[u8]>> {
        ready!(budget::poll_proceed(cx));
        Poll::Ready(Ok(&[]))
    }

    fn consume(self: Pin<&mut Self>, _amt: usize) {}
}

impl AsyncSeek for Empty {
    fn start_seek(self: Pin<&mut Self>, _position: SeekFrom) -> io::Result<()> {
        Ok(())
    }

    fn poll_complete(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<u64>> {
        Poll::Ready(Ok(0))
    }
}

/// A writer that accepts every byte and keeps none (tokio's `io::sink`).
///
/// ```
/// use evloop::io::AsyncWriteExt;
///
/// evloop::run(async {
///     let mut s = evloop::io::sink();
///     s.write_all(&[0; 1 << 16]).await?;
///     s.flush().await?;
///     Ok::<(), std::io::Error>(())
/// })??;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn sink() -> Sink {
    Sink { _private: () }
}

/// See [`sink`].
///
/// ```
/// use evloop::io::AsyncWriteExt;
///
/// evloop::run(async {
///     let mut s: evloop::io::Sink = evloop::io::sink();
///     assert_eq!(s.write(b"gone").await?, 4);
///     Ok::<(), std::io::Error>(())
/// })??;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, Copy, Default)]
pub struct Sink {
    _private: (),
}

/// The writes of [`Empty`] and [`Sink`]: everything accepted, nothing kept.
macro_rules! discard_writes {
    ($($ty:ty),*) => {$(
        impl AsyncWrite for $ty {
            fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
                ready!(budget::poll_proceed(cx));
                Poll::Ready(Ok(buf.len()))
            }

            fn poll_write_vectored(
                self: Pin<&mut Self>,
                cx: &mut Context<'_>,
                bufs: &[IoSlice<'_>],
            ) -> Poll<io::Result<usize>> {
                ready!(budget::poll_proceed(cx));
                Poll::Ready(Ok(bufs.iter().map(|b| b.len()).sum()))
            }

            fn is_write_vectored(&self) -> bool {
                true
            }

            fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
                ready!(budget::poll_proceed(cx));
                Poll::Ready(Ok(()))
            }

            fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
                ready!(budget::poll_proceed(cx));
                Poll::Ready(Ok(()))
            }
        }
    )*};
}

discard_writes!(Empty, Sink);

/// A reader that gives `byte` forever (tokio's `io::repeat`); bound it with
/// [`take`](crate::io::AsyncReadExt::take).
///
/// ```
/// use evloop::io::AsyncReadExt;
///
/// evloop::run(async {
///     let mut got = Vec::new();
///     evloop::io::repeat(b'x').take(3).read_to_end(&mut got).await?;
///     assert_eq!(got, b"xxx");
///     Ok::<(), std::io::Error>(())
/// })??;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn repeat(byte: u8) -> Repeat {
    Repeat { byte }
}

/// See [`repeat`].
///
/// ```
/// use evloop::io::AsyncReadExt;
///
/// evloop::run(async {
///     let mut r: evloop::io::Repeat = evloop::io::repeat(7);
///     let mut buf = [0; 4];
///     r.read_exact(&mut buf).await?;
///     assert_eq!(buf, [7; 4]);
///     Ok::<(), std::io::Error>(())
/// })??;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, Copy)]
pub struct Repeat {
    byte: u8,
}

impl AsyncRead for Repeat {
    fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut [u8]) -> Poll<io::Result<usize>> {
        ready!(budget::poll_proceed(cx));
        buf.fill(self.byte);
        Poll::Ready(Ok(buf.len()))
    }
}
