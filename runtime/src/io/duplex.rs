//! [`duplex`]: two in-memory streams connected like the ends of a socket pair (tokio's
//! `tokio::io::duplex`), for tests and for plugging a protocol implementation into another
//! without the kernel.
//!
//! Each direction is one `Pipe`: a byte queue of at most `max_buf_size` bytes and the wakers of
//! the one reader and the one writer waiting on it. A write copies what fits and wakes the
//! reader; a read copies out and wakes the writer; a full queue makes the writer wait, an empty
//! one the reader. `shutdown` closes the writer's direction (the peer reads what is queued, then
//! end of stream); dropping an end closes both its directions (the peer's writes then fail with
//! `BrokenPipe`). The pipes sit behind `Arc<Mutex<..>>`, as tokio's do, so an end may move to
//! another thread's loop; a lock is only held inside one poll. A read or write spends one unit
//! of the task's budget (`event_loop::budget`): a task that writes and reads its own pair
//! in a loop never waits, and yields every 128 operations as tokio's duplex does.

use std::collections::VecDeque;
use std::io::{self, IoSlice};
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::task::{Context, Poll, Waker, ready};

use crate::event_loop::budget;
use crate::io::{AsyncRead, AsyncWrite};

/// Two connected in-memory streams (tokio's `duplex`): what one writes the other reads. Each
/// direction buffers at most `max_buf_size` bytes; a writer waits for room beyond that.
///
/// ```
/// use evloop::io::{AsyncReadExt, AsyncWriteExt};
///
/// evloop::run(async {
///     let (mut client, mut server) = evloop::io::duplex(64);
///     client.write_all(b"ping").await?;
///     let mut buf = [0; 4];
///     server.read_exact(&mut buf).await?;
///     server.write_all(b"pong").await?;
///     client.read_exact(&mut buf).await?;
///     assert_eq!(&buf, b"pong");
///     Ok::<(), std::io::Error>(())
/// })??;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn duplex(max_buf_size: usize) -> (DuplexStream, DuplexStream) {
    let one = Arc::new(Mutex::new(Pipe::new(max_buf_size)));
    let two = Arc::new(Mutex::new(Pipe::new(max_buf_size)));
    (
        DuplexStream {
            read: one.clone(),
            write: two.clone(),
        },
        DuplexStream { read: two, write: one },
    )
}

/// One end of a [`duplex`] pair: reads what the other end writes, and the other way round.
/// Dropping it is end of stream for the peer's reads and `BrokenPipe` for its writes.
///
/// ```
/// use evloop::io::{AsyncReadExt, AsyncWriteExt};
///
/// evloop::run(async {
///     let (mut a, mut b) = evloop::io::duplex(16);
///     a.write_all(b"last").await?;
///     drop(a); // what was written is still read, then end of stream
///     let mut got = Vec::new();
///     b.read_to_end(&mut got).await?;
///     assert_eq!(got, b"last");
///     assert_eq!(b.write(b"x").await.unwrap_err().kind(), std::io::ErrorKind::BrokenPipe);
///     Ok::<(), std::io::Error>(())
/// })??;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub struct DuplexStream {
    read: Arc<Mutex<Pipe>>,
    write: Arc<Mutex<Pipe>>,
}

/// One direction: the bytes on their way and who waits for them (also the whole of a
/// [`SimplexStream`](crate::io::SimplexStream)).
pub(crate) struct Pipe {
    buffer: VecDeque<u8>,
    max_buf_size: usize,
    /// The reader waiting for bytes (or for the end).
    read_waker: Option<Waker>,
    /// The writer waiting for room.
    write_waker: Option<Waker>,
    /// Set when the writing end shut down or either end was dropped: reads drain the queue
    /// then see end of stream, writes fail.
    is_closed: bool,
}

impl Pipe {
    pub(crate) fn new(max_buf_size: usize) -> Pipe {
        Pipe {
            buffer: VecDeque::new(),
            max_buf_size,
            read_waker: None,
            write_waker: None,
            is_closed: false,
        }
    }

    /// Closes the pipe and wakes both sides (each sees the end on its next poll).
    pub(crate) fn close(&mut self) -> [Option<Waker>; 2] {
        self.is_closed = true;
        [self.read_waker.take(), self.write_waker.take()]
    }

    pub(crate) fn poll_read(
        &mut self,
        cx: &mut Context<'_>,
        buf: &mut [u8],
    ) -> (Poll<io::Result<usize>>, Option<Waker>) {
        if self.buffer.is_empty() && !buf.is_empty() {
            if self.is_closed {
                return (Poll::Ready(Ok(0)), None);
            }
            self.read_waker = Some(cx.waker().clone());
            return (Poll::Pending, None);
        }
        let n = buf.len().min(self.buffer.len());
        for (dst, src) in buf.iter_mut().zip(self.buffer.drain(..n)) {
            *dst = src;
        }
        (Poll::Ready(Ok(n)), self.write_waker.take())
    }

    pub(crate) fn poll_write(
        &mut self,
        cx: &mut Context<'_>,
        bufs: &[IoSlice<'_>],
    ) -> (Poll<io::Result<usize>>, Option<Waker>) {
        if self.is_closed {
            return (Poll::Ready(Err(io::ErrorKind::BrokenPipe.into())), None);
        }
        let mut room = self.max_buf_size - self.buffer.len();
        if room == 0 && bufs.iter().any(|b| !b.is_empty()) {
            self.write_waker = Some(cx.waker().clone());
            return (Poll::Pending, None);
        }
        let mut n = 0;
        for b in bufs {
            let take = b.len().min(room);
            self.buffer.extend(&b[..take]);
            room -= take;
            n += take;
        }
        (Poll::Ready(Ok(n)), self.read_waker.take())
    }
}

impl std::fmt::Debug for Pipe {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pipe")
            .field("buffered", &self.buffer.len())
            .field("max_buf_size", &self.max_buf_size)
            .field("is_closed", &self.is_closed)
            .finish()
    }
}

/// A pipe's lock; a panic elsewhere while it was held leaves a queue that is still consistent.
fn lock(pipe: &Mutex<Pipe>) -> MutexGuard<'_, Pipe> {
    pipe.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Wakes outside the lock: a waker may run code that takes it.
pub(crate) fn finish<T>((poll, waker): (Poll<T>, Option<Waker>)) -> Poll<T> {
    if let Some(w) = waker {
        w.wake();
    }
    poll
}

impl AsyncRead for DuplexStream {
    fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut [u8]) -> Poll<io::Result<usize>> {
        ready!(budget::poll_proceed(cx));
        let step = lock(&self.read).poll_read(cx, buf);
        finish(step)
    }
}

impl AsyncWrite for DuplexStream {
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        ready!(budget::poll_proceed(cx));
        let step = lock(&self.write).poll_write(cx, &[IoSlice::new(buf)]);
        finish(step)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        ready!(budget::poll_proceed(cx));
        let step = lock(&self.write).poll_write(cx, bufs);
        finish(step)
    }

    fn is_write_vectored(&self) -> bool {
        true
    }

    fn poll_shutdown(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let wakers = lock(&self.write).close();
        wakers.into_iter().flatten().for_each(Waker::wake);
        Poll::Ready(Ok(()))
    }
}

impl Drop for DuplexStream {
    fn drop(&mut self) {
        let read = lock(&self.read).close();
        let write = lock(&self.write).close();
        read.into_iter().chain(write).flatten().for_each(Waker::wake);
    }
}
