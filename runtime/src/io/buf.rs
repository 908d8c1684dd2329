//! Buffered I/O: the [`AsyncBufRead`] trait with its helpers ([`AsyncBufReadExt`]: `fill_buf`,
//! `consume`, `read_until`, `read_line`, `lines`, `split`), and the adapters [`BufReader`],
//! [`BufWriter`] and [`BufStream`]. The names and behaviour are tokio's, so code written for
//! `tokio::io` compiles against `evloop::io` by changing its imports.
//!
//! # How bytes flow
//! A [`BufReader`] owns a buffer (8 KiB unless [`BufReader::with_capacity`] says otherwise).
//! `poll_fill_buf` hands out the unread part of it, calling the inner reader's `poll_read` (one
//! `recv(2)` for a socket) only when it is empty; `consume(n)` marks `n` bytes as read. The
//! helpers are loops over that pair: `read_until` looks for its delimiter in what
//! `fill_buf` returned, copies up to it into the caller's vector and consumes as much. A line
//! protocol therefore costs one `recv` per buffer-full of lines, not one per line. A read into
//! a caller's buffer at least as large as the internal one skips the copy and reads directly.
//!
//! A [`BufWriter`] collects small writes and sends them in one `send(2)` when the buffer fills,
//! on `flush`, or on `shutdown`; a write at least as large as the buffer goes straight through
//! (after what was queued). Forgetting to flush loses the tail: a `BufWriter` cannot write in
//! its destructor, which is not async. A server that answers pipelined requests flushes only
//! when its `BufReader` has no complete request left ([`BufReader::buffer`] is empty), so a
//! batch of answers leaves in one `send`.
//!
//! # Cancellation
//! `read_until`, `read_line` and `Lines::next_line` / `Split::next_segment` are cancel-safe in
//! tokio's sense: bytes read before the future was dropped stay in the caller's buffer (for
//! `read_until`, `read_line`) or in the `Lines`/`Split` value, and the next call continues.
//! `read_line` keeps only whole UTF-8 characters when it is cancelled in the middle of one.
//!
//! The adapters need their inner value to be `Unpin` (every evloop stream, pipe and half is;
//! box and pin anything else): that keeps this module free of pin projections and `unsafe`.

use std::future::{Future, poll_fn};
use std::io::{self, IoSlice};
use std::pin::Pin;
use std::task::{Context, Poll, ready};

use crate::io::seek::SeekState;
use crate::io::traits::{forward_io, invalid_utf8};
use crate::io::{AsyncRead, AsyncWrite};

/// The default buffer size of [`BufReader`] and [`BufWriter`] (tokio's and std's: 8 KiB).
pub const DEFAULT_BUF_SIZE: usize = 8 * 1024;

/// A reader with an internal buffer the caller can look into (tokio's `AsyncBufRead`).
pub trait AsyncBufRead: AsyncRead {
    /// The unread part of the buffer, filling it from the inner reader first when it is
    /// empty. An empty slice means end of stream. Returns the same bytes until
    /// [`AsyncBufRead::consume`] says some were used.
    fn poll_fill_buf(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<&[u8]>>;

    /// Marks `amt` bytes of the buffer as read (at most what `poll_fill_buf` returned).
    fn consume(self: Pin<&mut Self>, amt: usize);
}

forward_io!([R: AsyncBufRead + Unpin + ?Sized] AsyncBufRead for &mut R => inner |r| **r);
forward_io!([R: AsyncBufRead + Unpin + ?Sized] AsyncBufRead for Box<R> => inner |r| **r);
forward_io!([R: AsyncRead + Unpin + ?Sized] AsyncRead for Box<R> => inner |r| **r);
forward_io!([W: AsyncWrite + Unpin + ?Sized] AsyncWrite for Box<W> => inner |w| **w);

// ---------------------------------------------------------------------------------------------
// The helpers.

/// One step of `read_until`: appends to `out` up to and including `delim`, or everything
/// buffered; `Ready` once the delimiter or the end of stream is reached.
fn poll_read_until<R: AsyncBufRead + ?Sized>(
    mut reader: Pin<&mut R>,
    cx: &mut Context<'_>,
    delim: u8,
    out: &mut Vec<u8>,
    read: &mut usize,
) -> Poll<io::Result<usize>> {
    loop {
        let (found, used) = {
            let available = ready!(reader.as_mut().poll_fill_buf(cx))?;
            match available.iter().position(|&b| b == delim) {
                Some(i) => {
                    out.extend_from_slice(&available[..=i]);
                    (true, i + 1)
                }
                None => {
                    out.extend_from_slice(available);
                    (false, available.len())
                }
            }
        };
        reader.as_mut().consume(used);
        *read += used;
        if found || used == 0 {
            return Poll::Ready(Ok(std::mem::take(read)));
        }
    }
}

/// `read_line`'s hold on the caller's string: the bytes read so far live in `bytes` (the
/// string's own allocation); dropping the guard puts back the longest valid UTF-8 prefix, so a
/// cancelled read keeps the whole characters it read.
struct LineGuard<'a> {
    buf: &'a mut String,
    bytes: Vec<u8>,
    start: usize,
}

impl Drop for LineGuard<'_> {
    fn drop(&mut self) {
        let mut bytes = std::mem::take(&mut self.bytes);
        let valid = match std::str::from_utf8(&bytes[self.start..]) {
            Ok(_) => bytes.len(),
            Err(e) => self.start + e.valid_up_to(),
        };
        bytes.truncate(valid);
        *self.buf = String::from_utf8(bytes).unwrap_or_default();
    }
}

/// The async helpers of every [`AsyncBufRead`] (tokio's `AsyncBufReadExt`).
// Single-threaded runtime: the futures of these methods need not be `Send`.
#[allow(async_fn_in_trait)]
pub trait AsyncBufReadExt: AsyncBufRead + Unpin {
    /// The buffered bytes, reading more first if none are buffered; empty at end of stream.
    /// Pair it with [`AsyncBufReadExt::consume`].
    ///
    /// ```
    /// use evloop::io::{AsyncBufReadExt, BufReader};
    ///
    /// evloop::run(async {
    ///     let mut r = BufReader::new(&b"hello world"[..]);
    ///     let got = r.fill_buf().await?.to_vec();
    ///     assert_eq!(got, b"hello world");
    ///     r.consume(6);
    ///     assert_eq!(r.fill_buf().await?, b"world");
    ///     Ok::<(), std::io::Error>(())
    /// })??;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    fn fill_buf(&mut self) -> FillBuf<'_, Self> {
        FillBuf { reader: Some(self) }
    }

    /// Marks `amt` buffered bytes as read.
    fn consume(&mut self, amt: usize) {
        Pin::new(self).consume(amt)
    }

    /// Reads until `byte` (included) or the end of stream, appending to `buf`; returns how
    /// many bytes were appended (0 at end of stream). Cancel-safe: what was read stays in `buf`.
    ///
    /// ```
    /// use evloop::io::{AsyncBufReadExt, BufReader};
    ///
    /// evloop::run(async {
    ///     let mut r = BufReader::new(&b"key=value;rest"[..]);
    ///     let mut field = Vec::new();
    ///     assert_eq!(r.read_until(b';', &mut field).await?, 10);
    ///     assert_eq!(field, b"key=value;");
    ///     Ok::<(), std::io::Error>(())
    /// })??;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    async fn read_until(&mut self, byte: u8, buf: &mut Vec<u8>) -> io::Result<usize> {
        let mut read = 0;
        poll_fn(|cx| poll_read_until(Pin::new(&mut *self), cx, byte, buf, &mut read)).await
    }

    /// Reads a line (up to and including `\n`, or to the end of stream) and appends it to
    /// `buf`; returns how many bytes were appended (0 at end of stream). Bytes that are not
    /// UTF-8 give an `InvalidData` error and leave `buf` as it was, also when an I/O error
    /// follows them (tokio's rule); an I/O error after valid bytes keeps them in `buf`.
    ///
    /// ```
    /// use evloop::io::{AsyncBufReadExt, BufReader};
    ///
    /// evloop::run(async {
    ///     let mut r = BufReader::new(&b"GET / HTTP/1.1\r\nHost: x\r\n"[..]);
    ///     let mut line = String::new();
    ///     r.read_line(&mut line).await?;
    ///     assert_eq!(line, "GET / HTTP/1.1\r\n");
    ///     Ok::<(), std::io::Error>(())
    /// })??;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    async fn read_line(&mut self, buf: &mut String) -> io::Result<usize> {
        let start = buf.len();
        let mut guard = LineGuard {
            bytes: std::mem::take(buf).into_bytes(),
            buf,
            start,
        };
        let mut read = 0;
        let res = poll_fn(|cx| poll_read_until(Pin::new(&mut *self), cx, b'\n', &mut guard.bytes, &mut read)).await;
        // tokio's rule: bytes that are not (whole) UTF-8 are never left in the caller's string,
        // whether the read ended or failed after them; the bytes of a failed read that are
        // valid stay, so the next call continues the line.
        if std::str::from_utf8(&guard.bytes[start..]).is_err() {
            guard.bytes.truncate(start);
            res?;
            return Err(invalid_utf8());
        }
        res
    }

    /// The lines of the stream, without their `\n` or `\r\n` (tokio's `lines`).
    ///
    /// ```
    /// use evloop::io::{AsyncBufReadExt, BufReader};
    ///
    /// evloop::run(async {
    ///     let mut lines = BufReader::new(&b"one\r\ntwo\nthree"[..]).lines();
    ///     let mut all = Vec::new();
    ///     while let Some(line) = lines.next_line().await? {
    ///         all.push(line);
    ///     }
    ///     assert_eq!(all, ["one", "two", "three"]);
    ///     Ok::<(), std::io::Error>(())
    /// })??;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    fn lines(self) -> Lines<Self>
    where
        Self: Sized,
    {
        Lines {
            reader: self,
            buf: Vec::new(),
            read: 0,
        }
    }

    /// The segments of the stream separated by `byte`, without it (tokio's `split`).
    fn split(self, byte: u8) -> Split<Self>
    where
        Self: Sized,
    {
        Split {
            reader: self,
            delim: byte,
            buf: Vec::new(),
            read: 0,
        }
    }
}

impl<R: AsyncBufRead + Unpin + ?Sized> AsyncBufReadExt for R {}

/// The future of [`AsyncBufReadExt::fill_buf`].
#[derive(Debug)]
#[must_use = "futures do nothing unless you `.await` or poll them"]
pub struct FillBuf<'a, R: ?Sized> {
    reader: Option<&'a mut R>,
}

impl<'a, R: AsyncBufRead + Unpin + ?Sized> Future for FillBuf<'a, R> {
    type Output = io::Result<&'a [u8]>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<&'a [u8]>> {
        let Some(reader) = self.reader.take() else {
            return Poll::Ready(Err(io::Error::other("fill_buf: polled after it completed")));
        };
        // The slice must borrow the reader for `'a`, which a borrow that may have to be given
        // back (on `Pending`) cannot be; so wait with a short borrow, then ask once more with
        // the long one: a buffered reader answers that from its buffer, without I/O.
        match Pin::new(&mut *reader).poll_fill_buf(cx) {
            Poll::Pending => {
                self.reader = Some(reader);
                return Poll::Pending;
            }
            Poll::Ready(Err(e)) => return Poll::Ready(Err(e)),
            Poll::Ready(Ok(_)) => {}
        }
        match Pin::new(reader).poll_fill_buf(cx) {
            Poll::Ready(r) => Poll::Ready(r),
            Poll::Pending => Poll::Ready(Err(io::Error::other(
                "fill_buf: the reader returned Pending right after it had data ready",
            ))),
        }
    }
}

/// The lines of a buffered reader; see [`AsyncBufReadExt::lines`].
#[derive(Debug)]
pub struct Lines<R> {
    reader: R,
    /// The line read so far (kept across a cancelled `next_line`).
    buf: Vec<u8>,
    read: usize,
}

impl<R: AsyncBufRead + Unpin> Lines<R> {
    /// The next line without its line ending, `None` at end of stream. A line that is not
    /// UTF-8 is an `InvalidData` error (and is dropped). Cancel-safe.
    pub async fn next_line(&mut self) -> io::Result<Option<String>> {
        poll_fn(|cx| self.poll_next_line(cx)).await
    }

    /// `poll` form of [`Lines::next_line`].
    pub fn poll_next_line(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<Option<String>>> {
        let n = ready!(poll_read_until(
            Pin::new(&mut self.reader),
            cx,
            b'\n',
            &mut self.buf,
            &mut self.read
        ))?;
        if n == 0 && self.buf.is_empty() {
            return Poll::Ready(Ok(None));
        }
        let mut line = std::mem::take(&mut self.buf);
        if line.last() == Some(&b'\n') {
            line.pop();
            if line.last() == Some(&b'\r') {
                line.pop();
            }
        }
        Poll::Ready(String::from_utf8(line).map(Some).map_err(|_| invalid_utf8()))
    }

    /// The reader.
    pub fn get_ref(&self) -> &R {
        &self.reader
    }

    /// The reader, mutably.
    pub fn get_mut(&mut self) -> &mut R {
        &mut self.reader
    }

    /// The reader back (a partly read line is lost).
    pub fn into_inner(self) -> R {
        self.reader
    }
}

/// The segments of a buffered reader; see [`AsyncBufReadExt::split`].
#[derive(Debug)]
pub struct Split<R> {
    reader: R,
    delim: u8,
    buf: Vec<u8>,
    read: usize,
}

impl<R: AsyncBufRead + Unpin> Split<R> {
    /// The next segment without its delimiter, `None` at end of stream. Cancel-safe.
    pub async fn next_segment(&mut self) -> io::Result<Option<Vec<u8>>> {
        poll_fn(|cx| self.poll_next_segment(cx)).await
    }

    /// `poll` form of [`Split::next_segment`].
    pub fn poll_next_segment(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<Option<Vec<u8>>>> {
        let n = ready!(poll_read_until(
            Pin::new(&mut self.reader),
            cx,
            self.delim,
            &mut self.buf,
            &mut self.read
        ))?;
        if n == 0 && self.buf.is_empty() {
            return Poll::Ready(Ok(None));
        }
        let mut seg = std::mem::take(&mut self.buf);
        if seg.last() == Some(&self.delim) {
            seg.pop();
        }
        Poll::Ready(Ok(Some(seg)))
    }
}

// ---------------------------------------------------------------------------------------------
// In-memory readers, for tests and examples (tokio has the same impl).

impl AsyncRead for &[u8] {
    fn poll_read(mut self: Pin<&mut Self>, _cx: &mut Context<'_>, buf: &mut [u8]) -> Poll<io::Result<usize>> {
        let n = buf.len().min(self.len());
        buf[..n].copy_from_slice(&self[..n]);
        *self = &self[n..];
        Poll::Ready(Ok(n))
    }
}

impl AsyncBufRead for &[u8] {
    fn poll_fill_buf(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<&[u8]>> {
        Poll::Ready(Ok(*self.get_mut()))
    }
    fn consume(mut self: Pin<&mut Self>, amt: usize) {
        *self = &self[amt.min(self.len())..];
    }
}

impl AsyncWrite for Vec<u8> {
    fn poll_write(self: Pin<&mut Self>, _cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        self.get_mut().extend_from_slice(buf);
        Poll::Ready(Ok(buf.len()))
    }
    fn poll_write_vectored(
        self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
        bufs: &[IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let v = self.get_mut();
        let mut n = 0;
        for b in bufs {
            v.extend_from_slice(b);
            n += b.len();
        }
        Poll::Ready(Ok(n))
    }
    fn is_write_vectored(&self) -> bool {
        true
    }
    fn poll_shutdown(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }
}

// ---------------------------------------------------------------------------------------------
// BufReader.

/// Adds a read buffer to a reader (tokio's `BufReader`): see the module documentation.
///
/// ```
/// use evloop::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
/// use evloop::net::{TcpListener, TcpStream};
///
/// evloop::run(async {
///     let listener = TcpListener::bind("127.0.0.1:0").await?;
///     let mut client = TcpStream::connect(listener.local_addr()?).await?;
///     let (server, _) = listener.accept().await?;
///     client.write_all(b"first\nsecond\n").await?;
///     let mut lines = BufReader::new(server).lines();
///     assert_eq!(lines.next_line().await?.as_deref(), Some("first"));
///     assert_eq!(lines.next_line().await?.as_deref(), Some("second"));
///     Ok::<(), std::io::Error>(())
/// })??;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct BufReader<R> {
    pub(super) inner: R,
    buf: Box<[u8]>,
    /// Unread bytes are `buf[pos..filled]`.
    pub(super) pos: usize,
    pub(super) filled: usize,
    /// Where a seek is (`seek`'s `AsyncSeek` impl).
    pub(super) seek_state: SeekState,
}

impl<R> BufReader<R> {
    /// A reader with the default 8 KiB buffer.
    pub fn new(inner: R) -> BufReader<R> {
        BufReader::with_capacity(DEFAULT_BUF_SIZE, inner)
    }

    /// A reader with a buffer of `capacity` bytes (at least 1).
    pub fn with_capacity(capacity: usize, inner: R) -> BufReader<R> {
        BufReader {
            inner,
            buf: vec![0; capacity.max(1)].into_boxed_slice(),
            pos: 0,
            filled: 0,
            seek_state: SeekState::Init,
        }
    }

    /// Forgets the buffered bytes (after a seek, they are not the ones at the new position).
    pub(super) fn discard_buffer(&mut self) {
        self.pos = 0;
        self.filled = 0;
    }
}

impl<R> BufReader<R> {
    /// The inner reader.
    pub fn get_ref(&self) -> &R {
        &self.inner
    }

    /// The inner reader, mutably (reading from it directly skips the buffer's bytes).
    pub fn get_mut(&mut self) -> &mut R {
        &mut self.inner
    }

    /// The inner reader back; buffered bytes are lost (read [`BufReader::buffer`] first).
    pub fn into_inner(self) -> R {
        self.inner
    }

    /// The bytes read from the inner reader and not consumed yet (no I/O).
    pub fn buffer(&self) -> &[u8] {
        &self.buf[self.pos..self.filled]
    }

    /// The buffer's size.
    pub fn capacity(&self) -> usize {
        self.buf.len()
    }
}

impl<R: AsyncRead + Unpin> AsyncRead for BufReader<R> {
    fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut [u8]) -> Poll<io::Result<usize>> {
        // Nothing buffered and a large read: skip the copy.
        if self.pos == self.filled && buf.len() >= self.buf.len() {
            return Pin::new(&mut self.inner).poll_read(cx, buf);
        }
        let n = {
            let available = ready!(self.as_mut().poll_fill_buf(cx))?;
            let n = available.len().min(buf.len());
            buf[..n].copy_from_slice(&available[..n]);
            n
        };
        self.consume(n);
        Poll::Ready(Ok(n))
    }
}

impl<R: AsyncRead + Unpin> AsyncBufRead for BufReader<R> {
    fn poll_fill_buf(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<&[u8]>> {
        let this = self.get_mut();
        if this.pos >= this.filled {
            let n = ready!(Pin::new(&mut this.inner).poll_read(cx, &mut this.buf))?;
            this.pos = 0;
            this.filled = n;
        }
        Poll::Ready(Ok(&this.buf[this.pos..this.filled]))
    }

    fn consume(self: Pin<&mut Self>, amt: usize) {
        let this = self.get_mut();
        this.pos = (this.pos + amt).min(this.filled);
    }
}

// The other direction passes through untouched.
forward_io!([R: AsyncWrite + Unpin] AsyncWrite for BufReader<R> => inner |r| r.inner);

impl<R: std::fmt::Debug> std::fmt::Debug for BufReader<R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BufReader")
            .field("inner", &self.inner)
            .field("buffered", &(self.filled - self.pos))
            .field("capacity", &self.buf.len())
            .finish()
    }
}

// ---------------------------------------------------------------------------------------------
// BufWriter.

/// Adds a write buffer to a writer (tokio's `BufWriter`): small writes are collected and sent
/// together on `flush`, `shutdown`, or when the buffer fills. Flush before dropping it: a
/// destructor cannot wait, so unflushed bytes are lost.
///
/// ```
/// use evloop::io::{AsyncWriteExt, BufWriter};
///
/// evloop::run(async {
///     let mut w = BufWriter::new(Vec::new());
///     w.write_all(b"HTTP/1.1 200 OK\r\n").await?;
///     w.write_all(b"\r\n").await?;
///     assert!(w.get_ref().is_empty(), "still buffered");
///     w.flush().await?;
///     assert_eq!(w.get_ref(), b"HTTP/1.1 200 OK\r\n\r\n");
///     Ok::<(), std::io::Error>(())
/// })??;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct BufWriter<W> {
    pub(super) inner: W,
    buf: Vec<u8>,
    /// Bytes of `buf` already handed to the inner writer by an interrupted flush.
    written: usize,
    capacity: usize,
    /// Where a seek is (`seek`'s `AsyncSeek` impl).
    pub(super) seek_state: SeekState,
}

impl<W> BufWriter<W> {
    /// A writer with the default 8 KiB buffer.
    pub fn new(inner: W) -> BufWriter<W> {
        BufWriter::with_capacity(DEFAULT_BUF_SIZE, inner)
    }

    /// A writer with a buffer of `capacity` bytes (at least 1).
    pub fn with_capacity(capacity: usize, inner: W) -> BufWriter<W> {
        let capacity = capacity.max(1);
        BufWriter {
            inner,
            buf: Vec::with_capacity(capacity),
            written: 0,
            capacity,
            seek_state: SeekState::Init,
        }
    }
}

impl<W> BufWriter<W> {
    /// The inner writer.
    pub fn get_ref(&self) -> &W {
        &self.inner
    }

    /// The inner writer, mutably (writing to it directly jumps the queue).
    pub fn get_mut(&mut self) -> &mut W {
        &mut self.inner
    }

    /// The inner writer back; buffered bytes are lost (flush first).
    pub fn into_inner(self) -> W {
        self.inner
    }

    /// The bytes waiting to be written.
    pub fn buffer(&self) -> &[u8] {
        &self.buf[self.written..]
    }

    /// The buffer's size.
    pub fn capacity(&self) -> usize {
        self.capacity
    }
}

impl<W: AsyncWrite + Unpin> BufWriter<W> {
    /// Writes the buffer out to the inner writer (without flushing the inner writer).
    pub(super) fn poll_flush_buf(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        while self.written < self.buf.len() {
            let n = ready!(Pin::new(&mut self.inner).poll_write(cx, &self.buf[self.written..]))?;
            if n == 0 {
                return Poll::Ready(Err(io::Error::new(
                    io::ErrorKind::WriteZero,
                    "BufWriter: the inner writer accepted 0 bytes",
                )));
            }
            self.written += n;
        }
        self.buf.clear();
        self.written = 0;
        Poll::Ready(Ok(()))
    }
}

impl<W: AsyncWrite + Unpin> BufWriter<W> {
    /// A vectored write into a writer that is not vectored (tokio's rule): the slices that fit
    /// are gathered in the buffer, so many small slices still leave in one write; a first slice
    /// as large as the buffer goes straight through on its own.
    fn poll_write_slices_one_by_one(&mut self, cx: &mut Context<'_>, bufs: &[IoSlice<'_>]) -> Poll<io::Result<usize>> {
        let Some(start) = bufs.iter().position(|b| !b.is_empty()) else {
            return Poll::Ready(Ok(0));
        };
        let bufs = &bufs[start..];
        let first = bufs[0].len();
        if self.buf.len() + first > self.capacity {
            ready!(self.poll_flush_buf(cx))?;
        }
        if first >= self.capacity {
            return Pin::new(&mut self.inner).poll_write(cx, &bufs[0]);
        }
        let mut total = 0;
        for b in bufs {
            if self.buf.len() + b.len() > self.capacity {
                break;
            }
            self.buf.extend_from_slice(b);
            total += b.len();
        }
        Poll::Ready(Ok(total))
    }
}

impl<W: AsyncWrite + Unpin> AsyncWrite for BufWriter<W> {
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, data: &[u8]) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        if this.buf.len() + data.len() > this.capacity {
            ready!(this.poll_flush_buf(cx))?;
        }
        if data.len() >= this.capacity {
            Pin::new(&mut this.inner).poll_write(cx, data)
        } else {
            this.buf.extend_from_slice(data);
            Poll::Ready(Ok(data.len()))
        }
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        if !this.inner.is_write_vectored() {
            return this.poll_write_slices_one_by_one(cx, bufs);
        }
        let total: usize = bufs.iter().map(|b| b.len()).sum();
        if this.buf.len() + total > this.capacity {
            ready!(this.poll_flush_buf(cx))?;
        }
        if total >= this.capacity {
            return Pin::new(&mut this.inner).poll_write_vectored(cx, bufs);
        }
        for b in bufs {
            this.buf.extend_from_slice(b);
        }
        Poll::Ready(Ok(total))
    }

    // Many small buffers are collected into the buffer, so a vectored write is always worth it.
    fn is_write_vectored(&self) -> bool {
        true
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        ready!(this.poll_flush_buf(cx))?;
        Pin::new(&mut this.inner).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        ready!(this.poll_flush_buf(cx))?;
        Pin::new(&mut this.inner).poll_shutdown(cx)
    }
}

// The other direction passes through untouched.
forward_io!([W: AsyncRead + Unpin] AsyncRead for BufWriter<W> => inner |w| w.inner);
forward_io!([W: AsyncBufRead + Unpin] AsyncBufRead for BufWriter<W> => inner |w| w.inner);

impl<W: std::fmt::Debug> std::fmt::Debug for BufWriter<W> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BufWriter")
            .field("inner", &self.inner)
            .field("buffered", &(self.buf.len() - self.written))
            .field("capacity", &self.capacity)
            .finish()
    }
}

// ---------------------------------------------------------------------------------------------
// BufStream.

/// Both buffers on one stream (tokio's `BufStream`): a [`BufReader`] over a [`BufWriter`].
#[derive(Debug)]
pub struct BufStream<S> {
    pub(super) inner: BufReader<BufWriter<S>>,
}

impl<S: AsyncRead + AsyncWrite> BufStream<S> {
    /// Default 8 KiB buffers both ways.
    pub fn new(stream: S) -> BufStream<S> {
        BufStream {
            inner: BufReader::new(BufWriter::new(stream)),
        }
    }

    /// Buffers of the given sizes.
    pub fn with_capacity(read_capacity: usize, write_capacity: usize, stream: S) -> BufStream<S> {
        BufStream {
            inner: BufReader::with_capacity(read_capacity, BufWriter::with_capacity(write_capacity, stream)),
        }
    }
}

impl<S> BufStream<S> {
    /// The stream.
    pub fn get_ref(&self) -> &S {
        self.inner.get_ref().get_ref()
    }

    /// The stream, mutably.
    pub fn get_mut(&mut self) -> &mut S {
        self.inner.get_mut().get_mut()
    }

    /// The stream back; buffered bytes both ways are lost.
    pub fn into_inner(self) -> S {
        self.inner.into_inner().into_inner()
    }
}

forward_io!([S: AsyncRead + AsyncWrite + Unpin] AsyncRead, AsyncBufRead, AsyncWrite for BufStream<S> => inner |s| s.inner);
