//! [`simplex`]: a one-way in-memory pipe (tokio's `tokio::io::simplex` and `SimplexStream`):
//! what the write half writes, the read half reads.
//!
//! A [`SimplexStream`] is one direction of a [`duplex`](crate::io::duplex) pair on its own: the
//! same bounded byte queue (`duplex`'s `Pipe`) whose writes append and whose reads drain, both
//! on the one value. [`simplex`] splits it with the generic [`split`](crate::io::split), so the
//! halves may go to different tasks. `shutdown` on the writing side is the reader's end of
//! stream (after what is queued); as with tokio's, dropping a half does not close the pipe.

use std::io::{self, IoSlice};
use std::pin::Pin;
use std::task::{Context, Poll, Waker, ready};

use crate::event_loop::budget;
use crate::io::duplex::{Pipe, finish};
use crate::io::{AsyncRead, AsyncWrite, ReadHalf, WriteHalf, split};

/// A one-way in-memory pipe of at most `max_buf_size` buffered bytes, already split (tokio's
/// `simplex`): the writer waits for room beyond that; the reader sees end of stream after the
/// writer's `shutdown`. Panics (at the caller) if `max_buf_size` is 0, as tokio's.
///
/// ```
/// use evloop::io::{AsyncReadExt, AsyncWriteExt};
///
/// evloop::run(async {
///     let (mut rd, mut wr) = evloop::io::simplex(64);
///     wr.write_all(b"one way").await?;
///     wr.shutdown().await?;
///     let mut got = String::new();
///     rd.read_to_string(&mut got).await?;
///     assert_eq!(got, "one way");
///     Ok::<(), std::io::Error>(())
/// })??;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[track_caller]
pub fn simplex(max_buf_size: usize) -> (ReadHalf<SimplexStream>, WriteHalf<SimplexStream>) {
    split(SimplexStream::new_unsplit(max_buf_size))
}

/// The unsplit pipe of [`simplex`]: reads take what writes put in.
///
/// ```
/// use evloop::io::{AsyncReadExt, AsyncWriteExt, SimplexStream};
///
/// evloop::run(async {
///     let mut pipe = SimplexStream::new_unsplit(16);
///     pipe.write_all(b"loop").await?;
///     let mut buf = [0; 4];
///     pipe.read_exact(&mut buf).await?;
///     assert_eq!(&buf, b"loop");
///     Ok::<(), std::io::Error>(())
/// })??;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub struct SimplexStream {
    pipe: Pipe,
}

impl SimplexStream {
    /// A pipe that buffers at most `max_buf_size` bytes, not split (tokio's `new_unsplit`).
    /// Panics (at the caller) if `max_buf_size` is 0: no byte could ever pass.
    ///
    /// ```
    /// let pipe = evloop::io::SimplexStream::new_unsplit(1024);
    /// let (_rd, _wr) = evloop::io::split(pipe);
    /// ```
    #[track_caller]
    pub fn new_unsplit(max_buf_size: usize) -> SimplexStream {
        assert!(max_buf_size > 0, "`max_buf_size` must be greater than 0");
        SimplexStream {
            pipe: Pipe::new(max_buf_size),
        }
    }
}

impl AsyncRead for SimplexStream {
    fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut [u8]) -> Poll<io::Result<usize>> {
        ready!(budget::poll_proceed(cx));
        finish(self.pipe.poll_read(cx, buf))
    }
}

impl AsyncWrite for SimplexStream {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        ready!(budget::poll_proceed(cx));
        finish(self.pipe.poll_write(cx, &[IoSlice::new(buf)]))
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        ready!(budget::poll_proceed(cx));
        finish(self.pipe.poll_write(cx, bufs))
    }

    fn is_write_vectored(&self) -> bool {
        true
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.pipe.close().into_iter().flatten().for_each(Waker::wake);
        Poll::Ready(Ok(()))
    }
}
