//! Moving bytes between streams: [`copy`], [`copy_buf`] and [`copy_bidirectional`] (tokio's
//! names and behaviour; `asyncio` users write these loops by hand).
//!
//! Each direction is a small state machine ([`CopyBuffer`]): read into an 8 KiB buffer, write
//! it all out, repeat; flush the writer whenever the reader has nothing ready (so data never
//! sits in a [`BufWriter`](crate::io::buf::BufWriter) while the copy waits) and once at the end
//! of the stream. [`copy_bidirectional`] drives two of them in one task: when one side reaches
//! the end of its stream, the other side's write half is shut down (TCP FIN), so the peer sees
//! the end too, and the call returns once both directions are done.
//!
//! Each read spends one unit of the task's budget of ready operations (`event_loop::budget`),
//! so a copy from a source that never returns `Pending` still lets the loop run every 128 reads.

use std::future::poll_fn;
use std::io;
use std::pin::Pin;
use std::task::{Context, Poll, ready};

use crate::event_loop::budget;
use crate::io::buf::{AsyncBufRead, DEFAULT_BUF_SIZE};
use crate::io::{AsyncRead, AsyncWrite};

/// One direction of a copy: the buffer and how far it got.
struct CopyBuffer {
    buf: Box<[u8]>,
    /// Bytes `buf[pos..cap]` are read and not yet written.
    pos: usize,
    cap: usize,
    /// Bytes written so far.
    amt: u64,
    read_done: bool,
    /// Something was written since the last flush.
    need_flush: bool,
}

impl CopyBuffer {
    fn new() -> CopyBuffer {
        CopyBuffer {
            buf: vec![0; DEFAULT_BUF_SIZE].into_boxed_slice(),
            pos: 0,
            cap: 0,
            amt: 0,
            read_done: false,
            need_flush: false,
        }
    }

    fn poll_copy<R, W>(&mut self, cx: &mut Context<'_>, reader: &mut R, writer: &mut W) -> Poll<io::Result<u64>>
    where
        R: AsyncRead + Unpin + ?Sized,
        W: AsyncWrite + Unpin + ?Sized,
    {
        loop {
            if self.pos == self.cap && !self.read_done {
                // One unit of the task's budget per read: a reader that is always ready (one
                // that is not evloop I/O) must not keep the copy in one step forever.
                ready!(budget::poll_proceed(cx));
                match Pin::new(&mut *reader).poll_read(cx, &mut self.buf) {
                    Poll::Ready(Ok(0)) => self.read_done = true,
                    Poll::Ready(Ok(n)) => {
                        self.pos = 0;
                        self.cap = n;
                    }
                    Poll::Ready(Err(e)) => return Poll::Ready(Err(e)),
                    Poll::Pending => {
                        // Nothing to read now: push out what a buffered writer holds before
                        // waiting, or the peer may wait for it forever.
                        if self.need_flush {
                            ready!(Pin::new(&mut *writer).poll_flush(cx))?;
                            self.need_flush = false;
                        }
                        return Poll::Pending;
                    }
                }
            }
            while self.pos < self.cap {
                let n = ready!(Pin::new(&mut *writer).poll_write(cx, &self.buf[self.pos..self.cap]))?;
                if n == 0 {
                    return Poll::Ready(Err(io::Error::new(
                        io::ErrorKind::WriteZero,
                        "copy: the writer accepted 0 bytes",
                    )));
                }
                self.pos += n;
                self.amt += n as u64;
                self.need_flush = true;
            }
            if self.pos == self.cap && self.read_done {
                ready!(Pin::new(&mut *writer).poll_flush(cx))?;
                self.need_flush = false;
                return Poll::Ready(Ok(self.amt));
            }
        }
    }
}

/// Copies everything `reader` gives until its end of stream into `writer`, then flushes it;
/// returns the number of bytes copied. The writer is not shut down.
///
/// ```
/// evloop::run(async {
///     let mut reader: &[u8] = b"copied bytes";
///     let mut writer: Vec<u8> = Vec::new();
///     let n = evloop::io::copy(&mut reader, &mut writer).await?;
///     assert_eq!((n, &writer[..]), (12, &b"copied bytes"[..]));
///     Ok::<(), std::io::Error>(())
/// })??;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub async fn copy<R, W>(reader: &mut R, writer: &mut W) -> io::Result<u64>
where
    R: AsyncRead + Unpin + ?Sized,
    W: AsyncWrite + Unpin + ?Sized,
{
    let mut state = CopyBuffer::new();
    poll_fn(|cx| state.poll_copy(cx, reader, writer)).await
}

/// [`copy`] from a buffered reader, writing straight from its buffer (no second buffer).
pub async fn copy_buf<R, W>(reader: &mut R, writer: &mut W) -> io::Result<u64>
where
    R: AsyncBufRead + Unpin + ?Sized,
    W: AsyncWrite + Unpin + ?Sized,
{
    let mut amt = 0u64;
    poll_fn(|cx| {
        loop {
            ready!(budget::poll_proceed(cx));
            let written = {
                let buf = match Pin::new(&mut *reader).poll_fill_buf(cx) {
                    Poll::Ready(r) => r?,
                    Poll::Pending => {
                        ready!(Pin::new(&mut *writer).poll_flush(cx))?;
                        return Poll::Pending;
                    }
                };
                if buf.is_empty() {
                    ready!(Pin::new(&mut *writer).poll_flush(cx))?;
                    return Poll::Ready(Ok(amt));
                }
                let n = ready!(Pin::new(&mut *writer).poll_write(cx, buf))?;
                if n == 0 {
                    return Poll::Ready(Err(io::Error::new(
                        io::ErrorKind::WriteZero,
                        "copy_buf: the writer accepted 0 bytes",
                    )));
                }
                n
            };
            Pin::new(&mut *reader).consume(written);
            amt += written as u64;
        }
    })
    .await
}

/// Where one direction of [`copy_bidirectional`] is.
enum Direction {
    Copying(CopyBuffer),
    /// The reader ended; shutting the writer's side down.
    ShuttingDown(u64),
    Done(u64),
}

impl Direction {
    fn poll<R, W>(&mut self, cx: &mut Context<'_>, reader: &mut R, writer: &mut W) -> Poll<io::Result<u64>>
    where
        R: AsyncRead + Unpin + ?Sized,
        W: AsyncWrite + Unpin + ?Sized,
    {
        loop {
            match self {
                Direction::Copying(buf) => {
                    let amt = ready!(buf.poll_copy(cx, reader, writer))?;
                    *self = Direction::ShuttingDown(amt);
                }
                Direction::ShuttingDown(amt) => {
                    ready!(Pin::new(&mut *writer).poll_shutdown(cx))?;
                    *self = Direction::Done(*amt);
                }
                Direction::Done(amt) => return Poll::Ready(Ok(*amt)),
            }
        }
    }
}

/// Copies `a` to `b` and `b` to `a` at the same time, until both reach their end of stream;
/// returns `(bytes a -> b, bytes b -> a)`. When one side ends, the other's write half is shut
/// down, passing the end on. The first error in either direction ends the whole call (both
/// directions stop: the streams are in an unknown state). A proxy's core:
///
/// ```
/// use evloop::io::{AsyncReadExt, AsyncWriteExt};
/// use evloop::net::{TcpListener, TcpStream};
///
/// evloop::run(async {
///     let upstream = TcpListener::bind("127.0.0.1:0").await?;
///     let front = TcpListener::bind("127.0.0.1:0").await?;
///     let (up, front_addr) = (upstream.local_addr()?, front.local_addr()?);
///     // The proxy: every byte from the client to upstream and back.
///     let proxy = evloop::spawn(async move {
///         let (mut client, _) = front.accept().await?;
///         let mut server = TcpStream::connect(up).await?;
///         evloop::io::copy_bidirectional(&mut client, &mut server).await
///     });
///     let mut client = TcpStream::connect(front_addr).await?;
///     let (mut server, _) = upstream.accept().await?;
///     client.write_all(b"ping").await?;
///     client.shutdown().await?;
///     let mut got = Vec::new();
///     server.read_to_end(&mut got).await?; // sees the client's end through the proxy
///     server.write_all(b"pong").await?;
///     drop(server);
///     let mut answer = Vec::new();
///     client.read_to_end(&mut answer).await?;
///     assert_eq!((&got[..], &answer[..]), (&b"ping"[..], &b"pong"[..]));
///     assert_eq!(proxy.await??, (4, 4));
///     Ok::<(), Box<dyn std::error::Error>>(())
/// })??;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub async fn copy_bidirectional<A, B>(a: &mut A, b: &mut B) -> io::Result<(u64, u64)>
where
    A: AsyncRead + AsyncWrite + Unpin + ?Sized,
    B: AsyncRead + AsyncWrite + Unpin + ?Sized,
{
    let mut a_to_b = Direction::Copying(CopyBuffer::new());
    let mut b_to_a = Direction::Copying(CopyBuffer::new());
    poll_fn(|cx| {
        let ab = a_to_b.poll(cx, &mut *a, &mut *b)?;
        let ba = b_to_a.poll(cx, &mut *b, &mut *a)?;
        match (ab, ba) {
            (Poll::Ready(x), Poll::Ready(y)) => Poll::Ready(Ok((x, y))),
            _ => Poll::Pending,
        }
    })
    .await
}
