//! Streams: asyncio's high-level `StreamReader` / `StreamWriter` API, built on a [`Transport`]
//! and a protocol exactly as asyncio builds it (`asyncio.streams`): [`open_connection`],
//! [`start_server`] and their Unix-socket twins give a ([`StreamReader`], [`StreamWriter`])
//! pair per connection.
//!
//! ```no_run
//! # async fn demo() -> std::io::Result<()> {
//! let (reader, writer) = evloop::open_connection("127.0.0.1", 8888).await?;
//! writer.write(b"hello\n");
//! writer.drain().await?;
//! let line = reader.readline().await?;
//! writer.close();
//! writer.wait_closed().await?;
//! # let _ = line; Ok(()) }
//! ```
//!
//! # How received bytes reach a waiting task (reading)
//! Each connection has a private protocol (asyncio's `StreamReaderProtocol`) installed in its
//! transport. When the transport's event handler `recv`s bytes it calls the protocol's
//! `data_received`, which appends them to the reader's buffer (asyncio's
//! `StreamReader.feed_data`) and wakes the one task waiting for data, if any (`_wakeup_waiter`).
//! A read method first tries to answer from the buffer; only when it cannot does it park its
//! task's waker in the reader and return `Pending` (`_wait_for_data`). The next `feed_data`,
//! the end of the stream (`eof_received` -> `feed_eof`) or the loss of the connection
//! (`connection_lost` -> `set_exception`) takes that waker and wakes it, and the read looks at
//! the buffer again. The path from the kernel to the task is: `epoll_pwait2` reports the socket
//! readable, phase 5 runs the transport's handler, `recv(2)` copies the bytes into the
//! transport's 64 KiB scratch buffer, `data_received` copies them into the reader's buffer and
//! queues the task, and the task's next step returns them.
//!
//! Only one read may wait at a time (asyncio raises `RuntimeError` for a second one; here it is
//! [`StreamError::ReadInProgress`]).
//!
//! **Bounded memory** (asyncio's `limit`): when the buffer holds more than twice the limit
//! ([`StreamConfig::limit`], 64 KiB by default), the protocol calls
//! [`Transport::pause_reading`]: the kernel's receive queue fills, TCP's window closes and the
//! peer's sends block. Once reads have drained the buffer to the limit or below,
//! `resume_reading` restarts it (`_maybe_resume_transport`). The buffer therefore never holds
//! more than twice the limit plus one `recv` (64 KiB), unless a read asks for more: a read that
//! must wait for data resumes the transport first, as asyncio's `_wait_for_data` does, so
//! [`StreamReader::readexactly`]`(n)` can buffer `n` bytes. [`StreamReader::readuntil`] and
//! [`StreamReader::readline`] fail with [`StreamError::LimitOverrun`] instead of buffering past
//! the limit.
//!
//! # Back-pressure on writes (`drain`)
//! [`StreamWriter::write`] is synchronous: the transport sends at once what the kernel takes and
//! queues the rest. When its queue grows above the high-water mark (64 KiB by default, see
//! [`StreamWriter::set_write_buffer_limits`]) the transport calls the protocol's
//! `pause_writing`; when it has flushed down to the low-water mark, `resume_writing` (asyncio's
//! `FlowControlMixin`). [`StreamWriter::drain`] returns at once unless writing is paused; then
//! it parks the task until `resume_writing` (or `connection_lost`) wakes it (`_drain_helper`).
//! A producer that calls `drain` after each `write` therefore never queues much more than the
//! high-water mark. On a closing transport `drain` never succeeds: it waits for
//! `connection_lost` and reports the lost connection (bpo-25441), so such a producer stops. [`AsyncWrite`] for [`StreamWriter`] applies the same rule before each write.
//!
//! # Where evloop differs from asyncio (deliberately)
//! - **Lifetimes instead of `close()` to avoid leaks**: the connection is closed
//!   ([`Transport::close`], after flushing) when both its reader and its writer are dropped.
//!   When only the reader is dropped, later incoming bytes are discarded instead of buffered.
//!   A server's handler that returns (or panics) therefore closes its connection.
//! - **An error never destroys data**: asyncio raises a connection error even when bytes are
//!   still buffered, and `readline` throws away the buffered data on a limit overrun (so the tail
//!   of an over-long line can look like a line). Here, buffered bytes are returned before a
//!   connection error, an error leaves the buffer as it was (except the incomplete-read error at
//!   the end of the stream, which carries the bytes), and `readline`'s overrun leaves the data in
//!   the buffer like `readuntil`'s does.
//! - Misuse is an error value, never a panic.

use std::cell::{Cell, RefCell};
use std::fmt;
use std::future::{Future, poll_fn};
use std::io::{self, IoSlice};
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll, Waker};

use crate::event_loop::error::WrongLoopError;
use crate::event_loop::trace::{Awaiting, note_awaiting};
use crate::event_loop::{LoopHandle, get_running_loop};
use crate::io::net::{SockAddr, UnixAddr};
use crate::io::protocol::{Protocol, Server, Transport};
use crate::io::{AsyncRead, AsyncWrite};

/// The default buffer limit of a [`StreamReader`] (asyncio's `_DEFAULT_LIMIT`, 64 KiB).
pub const DEFAULT_LIMIT: usize = 64 * 1024;

// ---------------------------------------------------------------------------------------------
// Configuration.

/// Options for the streams of a connection or a server (asyncio's `limit=` argument).
///
/// ```
/// let config = evloop::StreamConfig::new().limit(1024);
/// assert_eq!(config.get_limit(), 1024);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StreamConfig {
    limit: usize,
}

impl Default for StreamConfig {
    fn default() -> Self {
        StreamConfig::new()
    }
}

impl StreamConfig {
    /// The defaults: a 64 KiB limit.
    ///
    /// ```
    /// let config = evloop::StreamConfig::new();
    /// assert_eq!(config.get_limit(), 64 * 1024); // asyncio's default limit
    /// assert_eq!(config, evloop::StreamConfig::default());
    /// ```
    pub const fn new() -> StreamConfig {
        StreamConfig { limit: DEFAULT_LIMIT }
    }

    /// The reader's buffer limit: the longest line or `readuntil` chunk accepted, and the
    /// back-pressure threshold (reading pauses above twice the limit, resumes at the limit).
    /// 0 is taken as 1.
    ///
    /// ```
    /// use evloop::{StreamConfig, StreamError};
    ///
    /// evloop::run(async {
    ///     // A server whose client sends a line longer than the limit.
    ///     let server = evloop::start_server(
    ///         |_r, w| async move { w.write(b"this line is too long\n") },
    ///         "127.0.0.1",
    ///         0,
    ///     )
    ///     .await?;
    ///     let config = StreamConfig::new().limit(8);
    ///     let (reader, _w) = evloop::open_connection_with("127.0.0.1", server.local_addr().port(), config).await?;
    ///     let err = reader.readline().await.unwrap_err();
    ///     assert!(matches!(err, StreamError::LimitOverrun { limit: 8, .. }));
    ///     Ok::<(), Box<dyn std::error::Error>>(())
    /// })??;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub const fn limit(mut self, limit: usize) -> StreamConfig {
        self.limit = if limit == 0 { 1 } else { limit };
        self
    }

    /// The configured limit.
    ///
    /// ```
    /// assert_eq!(evloop::StreamConfig::new().limit(0).get_limit(), 1); // 0 is taken as 1
    /// ```
    pub const fn get_limit(&self) -> usize {
        self.limit
    }
}

// ---------------------------------------------------------------------------------------------
// Errors.

/// A failed stream operation; its `Display` names the operation. Converts into `io::Error`.
///
/// ```
/// use evloop::StreamError;
///
/// evloop::run(async {
///     let server = evloop::start_server(|_r, w| async move { w.write(b"abc") }, "127.0.0.1", 0).await?;
///     let (reader, _w) = evloop::open_connection("127.0.0.1", server.local_addr().port()).await?;
///     // Five bytes wanted, three sent before the end: asyncio's IncompleteReadError.
///     match reader.readexactly(5).await {
///         Err(StreamError::Incomplete { partial, expected, .. }) => {
///             assert_eq!((partial.as_slice(), expected), (&b"abc"[..], Some(5)));
///         }
///         other => unreachable!("{other:?}"),
///     }
///     Ok::<(), Box<dyn std::error::Error>>(())
/// })??;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
#[non_exhaustive]
pub enum StreamError {
    /// The stream ended before the read could complete (asyncio's `IncompleteReadError`). The
    /// bytes that were there are consumed and returned here.
    Incomplete {
        /// The operation (`readexactly`, `readuntil`).
        op: &'static str,
        /// The bytes read before the end of the stream.
        partial: Vec<u8>,
        /// How many bytes were wanted (`None` for `readuntil`: a separator was wanted).
        expected: Option<usize>,
    },
    /// The separator was not found within the limit (asyncio's `LimitOverrunError`). The data
    /// stays in the buffer: read it with [`StreamReader::read`] or skip it.
    LimitOverrun {
        /// The operation (`readuntil`, `readline`).
        op: &'static str,
        /// How many buffered bytes were examined: the separator, if present, starts here or
        /// later.
        consumed: usize,
        /// The reader's limit.
        limit: usize,
    },
    /// Another read on this reader is still waiting for data (asyncio's `RuntimeError`).
    ReadInProgress {
        /// The operation that was refused.
        op: &'static str,
    },
    /// The connection failed, or the arguments were invalid.
    Io {
        /// The operation.
        op: &'static str,
        /// What went wrong (its message already names the operation).
        error: io::Error,
    },
}

impl StreamError {
    /// The operation that failed.
    ///
    /// ```
    /// evloop::run(async {
    ///     let server = evloop::start_server(|_r, w| async move { w.write(b"no separator") }, "127.0.0.1", 0).await?;
    ///     let (reader, _w) = evloop::open_connection("127.0.0.1", server.local_addr().port()).await?;
    ///     let err = reader.readuntil(b";").await.unwrap_err();
    ///     assert_eq!(err.operation(), "readuntil");
    ///     Ok::<(), Box<dyn std::error::Error>>(())
    /// })??;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn operation(&self) -> &'static str {
        match self {
            StreamError::Incomplete { op, .. }
            | StreamError::LimitOverrun { op, .. }
            | StreamError::ReadInProgress { op }
            | StreamError::Io { op, .. } => op,
        }
    }

    /// The bytes an [`StreamError::Incomplete`] carries (empty for the other kinds).
    ///
    /// ```
    /// evloop::run(async {
    ///     let server = evloop::start_server(|_r, w| async move { w.write(b"half") }, "127.0.0.1", 0).await?;
    ///     let (reader, _w) = evloop::open_connection("127.0.0.1", server.local_addr().port()).await?;
    ///     let err = reader.readexactly(8).await.unwrap_err();
    ///     assert_eq!(err.partial(), b"half"); // the bytes are not lost
    ///     Ok::<(), Box<dyn std::error::Error>>(())
    /// })??;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn partial(&self) -> &[u8] {
        match self {
            StreamError::Incomplete { partial, .. } => partial,
            _ => &[],
        }
    }

    /// The `io::ErrorKind` this error converts to.
    ///
    /// ```
    /// use std::io::ErrorKind;
    ///
    /// evloop::run(async {
    ///     let server = evloop::start_server(|_r, w| async move { w.write(b"x") }, "127.0.0.1", 0).await?;
    ///     let (reader, _w) = evloop::open_connection("127.0.0.1", server.local_addr().port()).await?;
    ///     let err = reader.readexactly(2).await.unwrap_err();
    ///     assert_eq!(err.kind(), ErrorKind::UnexpectedEof);
    ///     assert_eq!(std::io::Error::from(err).kind(), ErrorKind::UnexpectedEof); // `?` into io::Error
    ///     Ok::<(), Box<dyn std::error::Error>>(())
    /// })??;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn kind(&self) -> io::ErrorKind {
        match self {
            StreamError::Incomplete { .. } => io::ErrorKind::UnexpectedEof,
            StreamError::LimitOverrun { .. } => io::ErrorKind::InvalidData,
            StreamError::ReadInProgress { .. } => io::ErrorKind::Other,
            StreamError::Io { error, .. } => error.kind(),
        }
    }
}

impl fmt::Display for StreamError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StreamError::Incomplete {
                op,
                partial,
                expected: Some(n),
            } => write!(f, "{op}: the stream ended after {} of {n} bytes", partial.len()),
            StreamError::Incomplete {
                op,
                partial,
                expected: None,
            } => write!(
                f,
                "{op}: the stream ended before the separator ({} bytes read)",
                partial.len()
            ),
            StreamError::LimitOverrun { op, consumed, limit } => write!(
                f,
                "{op}: no separator within the limit of {limit} bytes ({consumed} bytes examined; \
                 the data stays buffered)"
            ),
            StreamError::ReadInProgress { op } => {
                write!(f, "{op}: another read on this stream is already waiting for data")
            }
            // The io::Error's message starts with the operation already.
            StreamError::Io { error, .. } => write!(f, "{error}"),
        }
    }
}

impl std::error::Error for StreamError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            StreamError::Io { error, .. } => Some(error),
            _ => None,
        }
    }
}

impl From<StreamError> for io::Error {
    fn from(e: StreamError) -> io::Error {
        match e {
            StreamError::Io { error, .. } => error,
            other => io::Error::new(other.kind(), other),
        }
    }
}

/// A connection error, kept so that every later operation can report it (`io::Error` is not
/// `Clone`).
#[derive(Clone)]
struct SavedError {
    kind: io::ErrorKind,
    message: String,
}

impl SavedError {
    fn new(e: &io::Error, peer: Option<&SockAddr>) -> SavedError {
        let message = match peer {
            Some(peer) => format!("the connection to {peer} failed: {e}"),
            None => format!("the connection failed: {e}"),
        };
        SavedError {
            kind: e.kind(),
            message,
        }
    }

    fn to_io(&self, op: &str) -> io::Error {
        io::Error::new(self.kind, format!("{op}: {}", self.message))
    }
}

// ---------------------------------------------------------------------------------------------
// The shared state of one connection.

/// The reader's buffer and wait state (asyncio's `StreamReader` internals).
///
/// Invariants: `waiter` is `Some` only while a read that holds `busy` is parked; `paused` is
/// true exactly when this module paused the transport's reading (a half-closed transport also
/// stops reading, but that is not ours to resume).
struct ReadState {
    /// Received bytes not yet consumed: `data[start..]`.
    data: Vec<u8>,
    start: usize,
    limit: usize,
    /// The peer sent FIN, or the connection is gone.
    eof: bool,
    /// The connection failed with this error.
    error: Option<SavedError>,
    /// Bumped by every feed (bytes, end of stream, error): a parked read compares it to see
    /// whether anything happened.
    fed: u64,
    /// The parked read's waker.
    waiter: Option<Waker>,
    /// A read operation is in progress.
    busy: bool,
    /// Reading is paused because the buffer went above twice the limit.
    paused: bool,
}

impl ReadState {
    fn len(&self) -> usize {
        self.data.len() - self.start
    }

    fn bytes(&self) -> &[u8] {
        &self.data[self.start..]
    }

    fn push(&mut self, bytes: &[u8]) {
        if self.start > 0 && self.data.len() + bytes.len() > self.data.capacity() {
            // Reuse the consumed prefix instead of growing the allocation.
            self.data.drain(..self.start);
            self.start = 0;
        }
        self.data.extend_from_slice(bytes);
    }

    fn consume(&mut self, n: usize) {
        self.start += n;
        if self.start == self.data.len() {
            self.data.clear();
            self.start = 0;
            // A large read (readexactly of many MiB) may have grown the allocation: give it back.
            if self.data.capacity() > self.limit.max(DEFAULT_LIMIT).saturating_mul(4) {
                self.data = Vec::new();
            }
        }
    }

    fn take(&mut self, n: usize) -> Vec<u8> {
        let out = self.data[self.start..self.start + n].to_vec();
        self.consume(n);
        out
    }

    fn take_all(&mut self) -> Vec<u8> {
        // Small reads are copied out and the buffer keeps its capacity for the next bytes (a
        // request/response stream would otherwise grow a fresh buffer for every message). A
        // large buffer that is mostly full is handed over itself (no copy); a few bytes in a
        // large buffer are copied, so the caller does not keep the large allocation.
        if self.len() <= SMALL_READ {
            let n = self.len();
            return self.take(n);
        }
        if self.start == 0 && self.data.capacity() <= self.data.len().max(4096).saturating_mul(2) {
            std::mem::take(&mut self.data)
        } else {
            let n = self.len();
            self.take(n)
        }
    }

    fn wake(&mut self) -> Option<Waker> {
        self.fed = self.fed.wrapping_add(1);
        self.waiter.take()
    }
}

/// Reads up to this size are copied out of the reader's buffer rather than taking it.
const SMALL_READ: usize = 4096;

/// What the protocol, the reader and the writer of one connection share.
struct Conn {
    transport: RefCell<Option<Transport>>,
    read: RefCell<ReadState>,
    reader_alive: Cell<bool>,
    writer_alive: Cell<bool>,
    /// The transport said `pause_writing` and not yet `resume_writing`.
    write_paused: Cell<bool>,
    /// `write_eof` was called through the writer.
    eof_written: Cell<bool>,
    /// `connection_lost` ran, with this error if it failed.
    lost: Cell<bool>,
    lost_error: RefCell<Option<SavedError>>,
    /// Tasks in `drain`, a blocked `AsyncWrite::poll_write` or `wait_closed`: woken by
    /// `resume_writing` and `connection_lost`; each re-checks its own condition.
    writer_waiters: RefCell<Vec<Waker>>,
}

impl Conn {
    fn new(config: StreamConfig) -> Rc<Conn> {
        Rc::new(Conn {
            transport: RefCell::new(None),
            read: RefCell::new(ReadState {
                data: Vec::new(),
                start: 0,
                limit: config.limit,
                eof: false,
                error: None,
                fed: 0,
                waiter: None,
                busy: false,
                paused: false,
            }),
            reader_alive: Cell::new(true),
            writer_alive: Cell::new(true),
            write_paused: Cell::new(false),
            eof_written: Cell::new(false),
            lost: Cell::new(false),
            lost_error: RefCell::new(None),
            writer_waiters: RefCell::new(Vec::new()),
        })
    }

    fn transport(&self) -> Option<Transport> {
        self.transport.borrow().clone()
    }

    /// asyncio's `feed_data`: buffer, wake the reader, pause the transport above 2 x limit.
    fn feed_data(&self, data: &[u8]) {
        if !self.reader_alive.get() {
            // Nobody can ever read these bytes.
            return;
        }
        let (waker, pause) = {
            let mut st = self.read.borrow_mut();
            st.push(data);
            let pause = !st.paused && st.len() > st.limit.saturating_mul(2);
            if pause {
                st.paused = true;
            }
            (st.wake(), pause)
        };
        if pause {
            if let Some(t) = self.transport() {
                t.pause_reading();
            }
        }
        if let Some(w) = waker {
            w.wake();
        }
    }

    /// asyncio's `feed_eof` (and `set_exception` when `error` is given).
    fn feed_eof(&self, error: Option<SavedError>) {
        let waker = {
            let mut st = self.read.borrow_mut();
            st.eof = true;
            if error.is_some() {
                st.error = error;
            }
            st.wake()
        };
        if let Some(w) = waker {
            w.wake();
        }
    }

    /// asyncio's `_maybe_resume_transport`: called after a read consumed bytes.
    fn maybe_resume(&self) {
        let resume = {
            let mut st = self.read.borrow_mut();
            let resume = st.paused && st.len() <= st.limit;
            if resume {
                st.paused = false;
            }
            resume
        };
        if resume {
            if let Some(t) = self.transport() {
                t.resume_reading();
            }
        }
    }

    /// A read must wait: make sure the transport is reading (asyncio's `_wait_for_data`).
    fn ensure_reading(&self) {
        let resume = std::mem::replace(&mut self.read.borrow_mut().paused, false);
        if resume {
            if let Some(t) = self.transport() {
                t.resume_reading();
            }
        }
    }

    fn wake_writers(&self) {
        let waiters = std::mem::take(&mut *self.writer_waiters.borrow_mut());
        for w in waiters {
            w.wake();
        }
    }

    /// Parks a writing task until `resume_writing` or `connection_lost`; an error instead if
    /// the task belongs to another loop than the connection (see `check_loop`).
    fn park_writer(&self, cx: &mut Context<'_>, op: &'static str) -> io::Result<()> {
        self.check_loop(op)?;
        let mut waiters = self.writer_waiters.borrow_mut();
        if !waiters.iter().any(|w| w.will_wake(cx.waker())) {
            waiters.push(cx.waker().clone());
        }
        drop(waiters);
        self.note_fd();
        Ok(())
    }

    /// Only a task of the connection's own loop may wait for it: its transport's events come
    /// from that loop's poll, which cannot run while another loop does.
    fn check_loop(&self, op: &'static str) -> io::Result<()> {
        let Some(bound) = self.transport.borrow().as_ref().map(Transport::loop_id) else {
            return Ok(());
        };
        Ok(WrongLoopError::check(bound, op, || "the stream".to_string())?)
    }

    fn note_fd(&self) {
        if let Some(fd) = self.transport.borrow().as_ref().and_then(Transport::fd) {
            note_awaiting(Awaiting::Fd(fd));
        }
    }

    /// The error for an operation on a connection that is gone.
    fn lost_io(&self, op: &str, kind: io::ErrorKind) -> io::Error {
        match &*self.lost_error.borrow() {
            Some(e) => e.to_io(op),
            None => io::Error::new(kind, format!("{op}: the connection is closed")),
        }
    }

    /// One of the two handles went away: close the connection when neither is left.
    fn handle_dropped(&self) {
        if !self.reader_alive.get() && !self.writer_alive.get() {
            if let Some(t) = self.transport() {
                t.close();
            }
        }
    }
}

/// The protocol between the transport and the streams (asyncio's `StreamReaderProtocol`).
struct StreamProtocol {
    conn: Rc<Conn>,
    /// A server's per-connection hook: starts the handler's task (asyncio's
    /// `client_connected_cb`).
    on_connect: Option<Rc<ConnectHook>>,
}

type ConnectHook = dyn Fn(StreamReader, StreamWriter);

impl Protocol for StreamProtocol {
    fn connection_made(&mut self, transport: Transport) {
        {
            let mut slot = self.conn.transport.borrow_mut();
            if slot.is_none() {
                *slot = Some(transport.clone());
            }
        }
        if let Some(hook) = self.on_connect.take() {
            let (r, w) = pair(self.conn.clone(), transport);
            hook(r, w);
        }
    }

    fn data_received(&mut self, data: &[u8]) {
        self.conn.feed_data(data);
    }

    fn eof_received(&mut self) -> bool {
        self.conn.feed_eof(None);
        // Keep the transport open for writing (a half-closed connection), as asyncio does,
        // unless nobody can write any more.
        self.conn.writer_alive.get()
    }

    fn connection_lost(&mut self, error: Option<io::Error>) {
        let peer = self.conn.transport().and_then(|t| t.peername().cloned());
        let saved = error.as_ref().map(|e| SavedError::new(e, peer.as_ref()));
        self.conn.lost.set(true);
        *self.conn.lost_error.borrow_mut() = saved.clone();
        self.conn.feed_eof(saved);
        self.conn.wake_writers();
    }

    fn pause_writing(&mut self) {
        self.conn.write_paused.set(true);
    }

    fn resume_writing(&mut self) {
        self.conn.write_paused.set(false);
        self.conn.wake_writers();
    }
}

fn pair(conn: Rc<Conn>, transport: Transport) -> (StreamReader, StreamWriter) {
    (StreamReader { conn: conn.clone() }, StreamWriter { conn, transport })
}

// ---------------------------------------------------------------------------------------------
// StreamReader.

/// The reading side of a stream connection (asyncio's `StreamReader`).
///
/// Methods take `&self`; only one read may wait for data at a time (a second one gets
/// [`StreamError::ReadInProgress`]). Dropping the reader discards bytes that arrive later;
/// dropping both the reader and the writer closes the connection.
///
/// It also implements [`AsyncRead`]. Its asyncio-named `read` and `read_to_end` take
/// precedence over [`AsyncReadExt`](crate::AsyncReadExt)'s methods of the same names: call
/// those as `AsyncReadExt::read(&mut reader, &mut buf)`. Likewise [`StreamWriter::write`]
/// (asyncio's, synchronous) over `AsyncWriteExt::write`; `write_all`, `flush` and `shutdown`
/// need no qualification.
///
/// ```
/// evloop::run(async {
///     let server = evloop::start_server(
///         |_r, w| async move { w.write(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nhi") },
///         "127.0.0.1",
///         0,
///     )
///     .await?;
///     let (reader, _w) = evloop::open_connection("127.0.0.1", server.local_addr().port()).await?;
///     let status = reader.readline().await?;
///     let headers = reader.readuntil(b"\r\n\r\n").await?;
///     let body = reader.readexactly(2).await?;
///     assert_eq!(status, b"HTTP/1.1 200 OK\r\n");
///     assert!(headers.starts_with(b"Content-Length: 2"));
///     assert_eq!(body, b"hi");
///     Ok::<(), Box<dyn std::error::Error>>(())
/// })??;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct StreamReader {
    conn: Rc<Conn>,
}

/// Holds a reader's `busy` flag for the duration of one read operation.
struct ReadGuard<'a> {
    conn: &'a Conn,
}

impl Drop for ReadGuard<'_> {
    fn drop(&mut self) {
        if let Ok(mut st) = self.conn.read.try_borrow_mut() {
            st.busy = false;
            st.waiter = None;
        }
    }
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    match needle {
        [b] => hay.iter().position(|c| c == b),
        _ => hay.windows(needle.len()).position(|w| w == needle),
    }
}

impl StreamReader {
    fn begin(&self, op: &'static str) -> Result<ReadGuard<'_>, StreamError> {
        let mut st = self.conn.read.borrow_mut();
        if st.busy {
            return Err(StreamError::ReadInProgress { op });
        }
        st.busy = true;
        Ok(ReadGuard { conn: &self.conn })
    }

    /// Parks the task until something is fed (bytes, end of stream, error); an error instead
    /// if the task belongs to another loop than the connection.
    async fn wait_for_data(&self, op: &'static str) -> Result<(), StreamError> {
        self.conn
            .check_loop(op)
            .map_err(|error| StreamError::Io { op, error })?;
        let seen = self.conn.read.borrow().fed;
        self.conn.ensure_reading();
        poll_fn(|cx| {
            let mut st = self.conn.read.borrow_mut();
            if st.fed != seen || st.eof {
                return Poll::Ready(());
            }
            match &st.waiter {
                Some(w) if w.will_wake(cx.waker()) => {}
                _ => st.waiter = Some(cx.waker().clone()),
            }
            drop(st);
            self.conn.note_fd();
            Poll::Pending
        })
        .await;
        Ok(())
    }

    fn error(&self, op: &'static str) -> Option<StreamError> {
        self.conn
            .read
            .borrow()
            .error
            .as_ref()
            .map(|e| StreamError::Io { op, error: e.to_io(op) })
    }

    /// Reads up to `n` bytes: waits until at least one byte is there, returns at once with
    /// what is buffered. Empty at the end of the stream (or when `n` is 0).
    ///
    /// ```
    /// evloop::run(async {
    ///     let server = evloop::start_server(|_r, w| async move { w.write(b"0123456789") }, "127.0.0.1", 0).await?;
    ///     let (reader, _w) = evloop::open_connection("127.0.0.1", server.local_addr().port()).await?;
    ///     let first = reader.read(4).await?; // at most 4, at least 1
    ///     assert!(!first.is_empty() && first.len() <= 4);
    ///     let mut all = first;
    ///     loop {
    ///         let more = reader.read(100).await?;
    ///         if more.is_empty() {
    ///             break; // end of the stream
    ///         }
    ///         all.extend(more);
    ///     }
    ///     assert_eq!(all, b"0123456789");
    ///     Ok::<(), Box<dyn std::error::Error>>(())
    /// })??;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub async fn read(&self, n: usize) -> Result<Vec<u8>, StreamError> {
        let op = "read";
        let _guard = self.begin(op)?;
        if n == 0 {
            return Ok(Vec::new());
        }
        loop {
            {
                let mut st = self.conn.read.borrow_mut();
                let have = st.len();
                if have > 0 {
                    let out = if n >= have { st.take_all() } else { st.take(n) };
                    drop(st);
                    self.conn.maybe_resume();
                    return Ok(out);
                }
                if st.eof {
                    drop(st);
                    return match self.error(op) {
                        Some(e) => Err(e),
                        None => Ok(Vec::new()),
                    };
                }
            }
            self.wait_for_data(op).await?;
        }
    }

    /// Reads until the end of the stream (asyncio's `read(-1)`). Unbounded by design: the
    /// caller asked for everything. On a connection error the bytes collected so far are put
    /// back in the buffer, so nothing is lost.
    ///
    /// ```
    /// evloop::run(async {
    ///     let server = evloop::start_server(|_r, w| async move { w.write(b"everything") }, "127.0.0.1", 0).await?;
    ///     let (reader, _w) = evloop::open_connection("127.0.0.1", server.local_addr().port()).await?;
    ///     assert_eq!(reader.read_to_end().await?, b"everything"); // asyncio's read(-1)
    ///     assert!(reader.at_eof());
    ///     Ok::<(), Box<dyn std::error::Error>>(())
    /// })??;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub async fn read_to_end(&self) -> Result<Vec<u8>, StreamError> {
        let op = "read_to_end";
        let _guard = self.begin(op)?;
        let mut out = Vec::new();
        loop {
            {
                let mut st = self.conn.read.borrow_mut();
                if out.is_empty() {
                    out = st.take_all();
                } else {
                    let n = st.len();
                    out.extend_from_slice(&st.data[st.start..]);
                    st.consume(n);
                }
                if st.eof {
                    if let Some(e) = st.error.clone() {
                        // The buffer is empty here: give the bytes back instead of losing them.
                        st.data = std::mem::take(&mut out);
                        st.start = 0;
                        return Err(StreamError::Io { op, error: e.to_io(op) });
                    }
                    return Ok(out);
                }
            }
            self.wait_for_data(op).await?;
        }
    }

    /// Reads one line, including its `b'\n'`. At the end of the stream it returns the partial
    /// last line (empty once everything is read). A line longer than the limit is a
    /// [`StreamError::LimitOverrun`] and stays buffered (asyncio would discard it).
    ///
    /// ```
    /// evloop::run(async {
    ///     let server = evloop::start_server(|_r, w| async move { w.write(b"one\ntwo") }, "127.0.0.1", 0).await?;
    ///     let (reader, _w) = evloop::open_connection("127.0.0.1", server.local_addr().port()).await?;
    ///     assert_eq!(reader.readline().await?, b"one\n");
    ///     assert_eq!(reader.readline().await?, b"two"); // the partial last line
    ///     assert_eq!(reader.readline().await?, b""); // everything was read
    ///     Ok::<(), Box<dyn std::error::Error>>(())
    /// })??;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub async fn readline(&self) -> Result<Vec<u8>, StreamError> {
        self.until("readline", b"\n", true).await
    }

    /// Reads up to and including `sep`. At the end of the stream without the separator:
    /// [`StreamError::Incomplete`] with the bytes that were there. When the separator does not
    /// start within the limit: [`StreamError::LimitOverrun`], and the data stays in the buffer.
    ///
    /// ```
    /// evloop::run(async {
    ///     let server = evloop::start_server(|_r, w| async move { w.write(b"key=value;rest") }, "127.0.0.1", 0).await?;
    ///     let (reader, _w) = evloop::open_connection("127.0.0.1", server.local_addr().port()).await?;
    ///     assert_eq!(reader.readuntil(b"=").await?, b"key=");
    ///     assert_eq!(reader.readuntil(b";").await?, b"value;");
    ///     let err = reader.readuntil(b";").await.unwrap_err(); // the stream ends first
    ///     assert_eq!(err.partial(), b"rest");
    ///     Ok::<(), Box<dyn std::error::Error>>(())
    /// })??;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub async fn readuntil(&self, sep: &[u8]) -> Result<Vec<u8>, StreamError> {
        self.until("readuntil", sep, false).await
    }

    async fn until(&self, op: &'static str, sep: &[u8], partial_ok: bool) -> Result<Vec<u8>, StreamError> {
        let _guard = self.begin(op)?;
        if sep.is_empty() {
            return Err(StreamError::Io {
                op,
                error: io::Error::new(io::ErrorKind::InvalidInput, format!("{op}: the separator is empty")),
            });
        }
        // Bytes before `offset` are known not to begin the separator: each wake searches only
        // the new bytes (plus the separator's length minus one).
        let mut offset = 0;
        loop {
            {
                let mut st = self.conn.read.borrow_mut();
                let limit = st.limit;
                let have = st.len();
                if have >= sep.len() {
                    if let Some(i) = find(&st.bytes()[offset..], sep) {
                        let at = offset + i;
                        if at > limit {
                            return Err(StreamError::LimitOverrun {
                                op,
                                consumed: at,
                                limit,
                            });
                        }
                        let out = st.take(at + sep.len());
                        drop(st);
                        self.conn.maybe_resume();
                        return Ok(out);
                    }
                    offset = have + 1 - sep.len();
                    if offset > limit {
                        return Err(StreamError::LimitOverrun {
                            op,
                            consumed: offset,
                            limit,
                        });
                    }
                }
                if st.eof {
                    drop(st);
                    if let Some(e) = self.error(op) {
                        return Err(e);
                    }
                    let partial = self.conn.read.borrow_mut().take_all();
                    return if partial_ok {
                        Ok(partial)
                    } else {
                        Err(StreamError::Incomplete {
                            op,
                            partial,
                            expected: None,
                        })
                    };
                }
            }
            self.wait_for_data(op).await?;
        }
    }

    /// Reads exactly `n` bytes. If the stream ends first: [`StreamError::Incomplete`] carrying
    /// the bytes that were there and `n`. Buffers up to `n` bytes (beyond the limit if `n` is
    /// larger).
    ///
    /// ```
    /// evloop::run(async {
    ///     // A length-prefixed frame: one byte of length, then the payload.
    ///     let server = evloop::start_server(|_r, w| async move { w.write(b"\x05hello") }, "127.0.0.1", 0).await?;
    ///     let (reader, _w) = evloop::open_connection("127.0.0.1", server.local_addr().port()).await?;
    ///     let len = reader.readexactly(1).await?[0] as usize;
    ///     assert_eq!(reader.readexactly(len).await?, b"hello");
    ///     Ok::<(), Box<dyn std::error::Error>>(())
    /// })??;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub async fn readexactly(&self, n: usize) -> Result<Vec<u8>, StreamError> {
        let op = "readexactly";
        let _guard = self.begin(op)?;
        loop {
            {
                let mut st = self.conn.read.borrow_mut();
                if st.len() >= n {
                    let out = st.take(n);
                    drop(st);
                    self.conn.maybe_resume();
                    return Ok(out);
                }
                if st.eof {
                    drop(st);
                    if let Some(e) = self.error(op) {
                        return Err(e);
                    }
                    let partial = self.conn.read.borrow_mut().take_all();
                    return Err(StreamError::Incomplete {
                        op,
                        partial,
                        expected: Some(n),
                    });
                }
            }
            self.wait_for_data(op).await?;
        }
    }

    /// Whether the stream ended and everything was read (asyncio's `at_eof`).
    ///
    /// ```
    /// evloop::run(async {
    ///     let server = evloop::start_server(|_r, w| async move { w.write(b"ab") }, "127.0.0.1", 0).await?;
    ///     let (reader, _w) = evloop::open_connection("127.0.0.1", server.local_addr().port()).await?;
    ///     assert!(!reader.at_eof());
    ///     reader.readexactly(2).await?;
    ///     assert_eq!(reader.read(1).await?, b""); // the end of the stream arrives
    ///     assert!(reader.at_eof());
    ///     Ok::<(), Box<dyn std::error::Error>>(())
    /// })??;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn at_eof(&self) -> bool {
        let st = self.conn.read.borrow();
        st.eof && st.len() == 0
    }

    /// Bytes received and not yet read.
    ///
    /// ```
    /// evloop::run(async {
    ///     let server = evloop::start_server(|_r, w| async move { w.write(b"a\nbcd") }, "127.0.0.1", 0).await?;
    ///     let (reader, _w) = evloop::open_connection("127.0.0.1", server.local_addr().port()).await?;
    ///     let _ = reader.read_to_end().await?; // wait for all of it ...
    ///     assert_eq!(reader.buffered(), 0); // ... which leaves nothing behind
    ///     Ok::<(), Box<dyn std::error::Error>>(())
    /// })??;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn buffered(&self) -> usize {
        self.conn.read.borrow().len()
    }

    /// The buffer limit.
    ///
    /// ```
    /// use evloop::StreamConfig;
    ///
    /// evloop::run(async {
    ///     let server = evloop::start_server(|_r, _w| async {}, "127.0.0.1", 0).await?;
    ///     let port = server.local_addr().port();
    ///     let (reader, _w) = evloop::open_connection_with("127.0.0.1", port, StreamConfig::new().limit(100)).await?;
    ///     assert_eq!(reader.limit(), 100);
    ///     Ok::<(), Box<dyn std::error::Error>>(())
    /// })??;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn limit(&self) -> usize {
        self.conn.read.borrow().limit
    }

    /// The connection's error, if it failed (asyncio's `exception()`).
    ///
    /// ```
    /// evloop::run(async {
    ///     let server = evloop::start_server(|_r, w| async move { w.write(b"bye") }, "127.0.0.1", 0).await?;
    ///     let (reader, _w) = evloop::open_connection("127.0.0.1", server.local_addr().port()).await?;
    ///     reader.read_to_end().await?;
    ///     assert!(reader.exception().is_none()); // a clean end is not an error
    ///     Ok::<(), Box<dyn std::error::Error>>(())
    /// })??;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn exception(&self) -> Option<io::Error> {
        self.conn
            .read
            .borrow()
            .error
            .as_ref()
            .map(|e| io::Error::new(e.kind, e.message.clone()))
    }

    /// The transport (shared with the writer).
    ///
    /// ```
    /// evloop::run(async {
    ///     let server = evloop::start_server(|_r, _w| async {}, "127.0.0.1", 0).await?;
    ///     let (reader, writer) = evloop::open_connection("127.0.0.1", server.local_addr().port()).await?;
    ///     let transport = reader.transport().expect("the connection is open");
    ///     assert_eq!(transport.peername(), writer.peername()); // one transport for both
    ///     Ok::<(), Box<dyn std::error::Error>>(())
    /// })??;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn transport(&self) -> Option<Transport> {
        self.conn.transport()
    }
}

impl Drop for StreamReader {
    fn drop(&mut self) {
        let c = &self.conn;
        c.reader_alive.set(false);
        if let Ok(mut st) = c.read.try_borrow_mut() {
            st.data = Vec::new();
            st.start = 0;
        }
        // Incoming bytes are discarded from now on: let them flow.
        c.ensure_reading();
        c.handle_dropped();
    }
}

impl AsyncRead for StreamReader {
    fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut [u8]) -> Poll<io::Result<usize>> {
        let op = "poll_read";
        let mut st = self.conn.read.borrow_mut();
        if st.busy {
            drop(st);
            return Poll::Ready(Err(StreamError::ReadInProgress { op }.into()));
        }
        let have = st.len();
        if have > 0 && !buf.is_empty() {
            let n = have.min(buf.len());
            let start = st.start;
            buf[..n].copy_from_slice(&st.data[start..start + n]);
            st.consume(n);
            drop(st);
            self.conn.maybe_resume();
            return Poll::Ready(Ok(n));
        }
        if buf.is_empty() {
            return Poll::Ready(Ok(0));
        }
        if st.eof {
            drop(st);
            return Poll::Ready(match self.error(op) {
                Some(e) => Err(e.into()),
                None => Ok(0),
            });
        }
        drop(st);
        if let Err(e) = self.conn.check_loop(op) {
            return Poll::Ready(Err(e));
        }
        {
            let mut st = self.conn.read.borrow_mut();
            match &st.waiter {
                Some(w) if w.will_wake(cx.waker()) => {}
                _ => st.waiter = Some(cx.waker().clone()),
            }
        }
        self.conn.ensure_reading();
        self.conn.note_fd();
        Poll::Pending
    }
}

impl fmt::Debug for StreamReader {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let st = self.conn.read.borrow();
        write!(f, "<StreamReader buffered={} limit={}", st.len(), st.limit)?;
        if st.eof {
            f.write_str(" eof")?;
        }
        if st.paused {
            f.write_str(" paused")?;
        }
        if let Some(e) = &st.error {
            write!(f, " error={:?}", e.message)?;
        }
        f.write_str(">")
    }
}

// ---------------------------------------------------------------------------------------------
// StreamWriter.

/// The writing side of a stream connection (asyncio's `StreamWriter`).
///
/// `write` is synchronous (the transport buffers); `drain` is the back-pressure point. Dropping
/// both the reader and the writer closes the connection (after flushing).
///
/// ```
/// evloop::run(async {
///     let server = evloop::start_server(
///         |reader, writer| async move {
///             while let Ok(line) = reader.readline().await {
///                 if line.is_empty() {
///                     break;
///                 }
///                 writer.write(&line.to_ascii_uppercase()); // an upper-casing echo
///             }
///         },
///         "127.0.0.1",
///         0,
///     )
///     .await?;
///     let (reader, writer) = evloop::open_connection("127.0.0.1", server.local_addr().port()).await?;
///     writer.write(b"hello\n");
///     writer.drain().await?; // asyncio's `await writer.drain()`
///     assert_eq!(reader.readline().await?, b"HELLO\n");
///     writer.close();
///     writer.wait_closed().await?;
///     Ok::<(), Box<dyn std::error::Error>>(())
/// })??;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct StreamWriter {
    conn: Rc<Conn>,
    transport: Transport,
}

impl StreamWriter {
    /// Writes `data`: buffered by the transport and sent, with everything else written to this
    /// connection during the same loop iteration, in one `send` when the iteration's callbacks
    /// and task steps have run (see [`Transport::write`]). After `close()` or `write_eof()`, or
    /// once the connection failed, the data is dropped, as asyncio does (with a warning on
    /// stderr from the fifth such write on); the next [`drain`](StreamWriter::drain) reports
    /// the closed connection.
    ///
    /// ```
    /// evloop::run(async {
    ///     let server = evloop::start_server(
    ///         |reader, _w| async move {
    ///             assert_eq!(reader.read_to_end().await.as_deref().ok(), Some(&b"in one send"[..]));
    ///         },
    ///         "127.0.0.1",
    ///         0,
    ///     )
    ///     .await?;
    ///     let (_r, writer) = evloop::open_connection("127.0.0.1", server.local_addr().port()).await?;
    ///     writer.write(b"in "); // synchronous: buffered ...
    ///     writer.write(b"one send"); // ... and sent together at the end of the iteration
    ///     writer.close();
    ///     writer.wait_closed().await?;
    ///     Ok::<(), Box<dyn std::error::Error>>(())
    /// })??;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn write(&self, data: &[u8]) {
        self.transport.write(data);
    }

    /// Writes each buffer in turn (asyncio's `writelines`).
    ///
    /// ```
    /// evloop::run(async {
    ///     let server = evloop::start_server(|r, w| async move { w.write(&r.read_to_end().await.unwrap_or_default()) }, "127.0.0.1", 0).await?;
    ///     let (reader, writer) = evloop::open_connection("127.0.0.1", server.local_addr().port()).await?;
    ///     writer.writelines([&b"a\n"[..], b"b\n"]);
    ///     writer.write_eof();
    ///     assert_eq!(reader.read_to_end().await?, b"a\nb\n");
    ///     Ok::<(), Box<dyn std::error::Error>>(())
    /// })??;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn writelines<'a>(&self, data: impl IntoIterator<Item = &'a [u8]>) {
        self.transport.writelines(data);
    }

    /// Waits until the transport's write buffer is back under the high-water mark, if it went
    /// above it (asyncio's `drain`). Returns at once when writing is not paused. An error if the
    /// connection is lost: its error if it failed, `ConnectionReset` if it closed.
    ///
    /// Once the transport is closing (`close()` was called, or the connection failed and its
    /// `connection_lost` is on its way), `drain` never returns `Ok`: it yields until the
    /// connection is lost, then reports it (asyncio, bpo-25441). So a `write` + `drain` loop
    /// ends, instead of spinning forever on a closed stream without ever letting the loop run
    /// the callback that would tell it so.
    ///
    /// ```
    /// evloop::run(async {
    ///     let server = evloop::start_server(
    ///         |reader, _w| async move {
    ///             let _ = reader.read_to_end().await; // a consumer that keeps up
    ///         },
    ///         "127.0.0.1",
    ///         0,
    ///     )
    ///     .await?;
    ///     let (_r, writer) = evloop::open_connection("127.0.0.1", server.local_addr().port()).await?;
    ///     let chunk = vec![0u8; 64 * 1024];
    ///     for _ in 0..32 {
    ///         writer.write(&chunk);
    ///         writer.drain().await?; // waits while more than the high-water mark is queued
    ///         assert!(writer.get_write_buffer_size() <= 2 * chunk.len());
    ///     }
    ///     Ok::<(), Box<dyn std::error::Error>>(())
    /// })??;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub async fn drain(&self) -> io::Result<()> {
        poll_fn(|cx| self.poll_drain(cx, "drain")).await
    }

    fn poll_drain(&self, cx: &mut Context<'_>, op: &str) -> Poll<io::Result<()>> {
        let c = &self.conn;
        if c.lost.get() {
            return Poll::Ready(Err(c.lost_io(op, io::ErrorKind::ConnectionReset)));
        }
        if self.transport.is_closing() {
            // `connection_lost` wakes the writers: then the branch above reports it.
            return match c.park_writer(cx, "drain") {
                Ok(()) => Poll::Pending,
                Err(e) => Poll::Ready(Err(e)),
            };
        }
        if !c.write_paused.get() {
            return Poll::Ready(Ok(()));
        }
        match c.park_writer(cx, "drain") {
            Ok(()) => Poll::Pending,
            Err(e) => Poll::Ready(Err(e)),
        }
    }

    /// Half-closes: the transport sends FIN once its buffer is flushed (asyncio's
    /// `write_eof`). Reading goes on.
    ///
    /// ```
    /// evloop::run(async {
    ///     let server = evloop::start_server(
    ///         |reader, writer| async move {
    ///             let request = reader.read_to_end().await.unwrap_or_default(); // until the client's FIN
    ///             writer.write(format!("got {} bytes", request.len()).as_bytes());
    ///         },
    ///         "127.0.0.1",
    ///         0,
    ///     )
    ///     .await?;
    ///     let (reader, writer) = evloop::open_connection("127.0.0.1", server.local_addr().port()).await?;
    ///     writer.write(b"whole request");
    ///     writer.write_eof(); // half-close: the reply can still come back
    ///     assert_eq!(reader.read_to_end().await?, b"got 13 bytes");
    ///     Ok::<(), Box<dyn std::error::Error>>(())
    /// })??;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn write_eof(&self) {
        self.conn.eof_written.set(true);
        self.transport.write_eof();
    }

    /// Whether `write_eof` is supported (always, for TCP and Unix sockets).
    ///
    /// ```
    /// evloop::run(async {
    ///     let server = evloop::start_server(|_r, _w| async {}, "127.0.0.1", 0).await?;
    ///     let (_r, writer) = evloop::open_connection("127.0.0.1", server.local_addr().port()).await?;
    ///     assert!(writer.can_write_eof()); // TCP has a half-close
    ///     Ok::<(), Box<dyn std::error::Error>>(())
    /// })??;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn can_write_eof(&self) -> bool {
        self.transport.can_write_eof()
    }

    /// Closes the connection once the write buffer is flushed; see
    /// [`StreamWriter::wait_closed`]. Idempotent.
    ///
    /// ```
    /// evloop::run(async {
    ///     let server = evloop::start_server(|_r, _w| async {}, "127.0.0.1", 0).await?;
    ///     let (_r, writer) = evloop::open_connection("127.0.0.1", server.local_addr().port()).await?;
    ///     writer.write(b"last words"); // flushed before the close
    ///     writer.close();
    ///     assert!(writer.is_closing());
    ///     writer.wait_closed().await?;
    ///     Ok::<(), Box<dyn std::error::Error>>(())
    /// })??;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn close(&self) {
        self.transport.close();
    }

    /// Whether the connection is closing or closed.
    ///
    /// ```
    /// evloop::run(async {
    ///     let server = evloop::start_server(|_r, _w| async {}, "127.0.0.1", 0).await?;
    ///     let (_r, writer) = evloop::open_connection("127.0.0.1", server.local_addr().port()).await?;
    ///     assert!(!writer.is_closing());
    ///     writer.close();
    ///     assert!(writer.is_closing());
    ///     Ok::<(), Box<dyn std::error::Error>>(())
    /// })??;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn is_closing(&self) -> bool {
        self.transport.is_closing()
    }

    /// Waits until the connection is closed (its `connection_lost` ran). `Err` with the
    /// connection's error if it failed.
    ///
    /// ```
    /// evloop::run(async {
    ///     let server = evloop::start_server(|_r, _w| async {}, "127.0.0.1", 0).await?;
    ///     let (_r, writer) = evloop::open_connection("127.0.0.1", server.local_addr().port()).await?;
    ///     writer.close();
    ///     writer.wait_closed().await?; // connection_lost ran: the socket is closed
    ///     assert!(writer.transport().fd().is_none());
    ///     Ok::<(), Box<dyn std::error::Error>>(())
    /// })??;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub async fn wait_closed(&self) -> io::Result<()> {
        poll_fn(|cx| {
            let c = &self.conn;
            if c.lost.get() {
                return Poll::Ready(match &*c.lost_error.borrow() {
                    Some(e) => Err(e.to_io("wait_closed")),
                    None => Ok(()),
                });
            }
            match c.park_writer(cx, "wait_closed") {
                Ok(()) => Poll::Pending,
                Err(e) => Poll::Ready(Err(e)),
            }
        })
        .await
    }

    /// The peer's address (`get_extra_info('peername')`).
    ///
    /// ```
    /// use evloop::net::SockAddr;
    ///
    /// evloop::run(async {
    ///     let server = evloop::start_server(|_r, _w| async {}, "127.0.0.1", 0).await?;
    ///     let (_r, writer) = evloop::open_connection("127.0.0.1", server.local_addr().port()).await?;
    ///     assert_eq!(writer.peername(), Some(&SockAddr::Inet(server.local_addr())));
    ///     Ok::<(), Box<dyn std::error::Error>>(())
    /// })??;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn peername(&self) -> Option<&SockAddr> {
        self.transport.peername()
    }

    /// The local address (`get_extra_info('sockname')`).
    ///
    /// ```
    /// evloop::run(async {
    ///     let server = evloop::start_server(|_r, _w| async {}, "127.0.0.1", 0).await?;
    ///     let (_r, writer) = evloop::open_connection("127.0.0.1", server.local_addr().port()).await?;
    ///     let local = writer.sockname().and_then(|a| a.as_inet()).expect("a TCP address");
    ///     assert!(local.ip().is_loopback() && local.port() != 0); // the port the kernel picked
    ///     Ok::<(), Box<dyn std::error::Error>>(())
    /// })??;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn sockname(&self) -> Option<&SockAddr> {
        self.transport.sockname()
    }

    /// The transport underneath.
    ///
    /// ```
    /// evloop::run(async {
    ///     let server = evloop::start_server(|_r, _w| async {}, "127.0.0.1", 0).await?;
    ///     let (_r, writer) = evloop::open_connection("127.0.0.1", server.local_addr().port()).await?;
    ///     let transport = writer.transport();
    ///     transport.pause_reading(); // the protocol-level controls are all there
    ///     assert!(!transport.is_reading());
    ///     Ok::<(), Box<dyn std::error::Error>>(())
    /// })??;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn transport(&self) -> &Transport {
        &self.transport
    }

    /// Sets the transport's high- and low-water marks (`None`: 64 KiB and a quarter of high).
    ///
    /// ```
    /// evloop::run(async {
    ///     let server = evloop::start_server(|_r, _w| async {}, "127.0.0.1", 0).await?;
    ///     let (_r, writer) = evloop::open_connection("127.0.0.1", server.local_addr().port()).await?;
    ///     writer.set_write_buffer_limits(Some(1024), None); // drain() waits above 1 KiB
    ///     assert_eq!(writer.transport().get_write_buffer_limits(), (1024, 256));
    ///     Ok::<(), Box<dyn std::error::Error>>(())
    /// })??;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn set_write_buffer_limits(&self, high: Option<usize>, low: Option<usize>) {
        self.transport.set_write_buffer_limits(high, low);
    }

    /// Bytes the transport holds that the kernel has not taken yet.
    ///
    /// ```
    /// evloop::run(async {
    ///     let server = evloop::start_server(|_r, _w| async {}, "127.0.0.1", 0).await?;
    ///     let (_r, writer) = evloop::open_connection("127.0.0.1", server.local_addr().port()).await?;
    ///     writer.write(b"queued");
    ///     assert_eq!(writer.get_write_buffer_size(), 6); // held until the end of the iteration
    ///     writer.drain().await?;
    ///     evloop::yield_now().await; // the flush ran: the kernel took it all
    ///     assert_eq!(writer.get_write_buffer_size(), 0);
    ///     Ok::<(), Box<dyn std::error::Error>>(())
    /// })??;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn get_write_buffer_size(&self) -> usize {
        self.transport.get_write_buffer_size()
    }

    fn write_refused(&self, op: &str) -> Option<io::Error> {
        let c = &self.conn;
        if c.lost.get() {
            return Some(c.lost_io(op, io::ErrorKind::BrokenPipe));
        }
        if c.eof_written.get() {
            return Some(io::Error::new(
                io::ErrorKind::BrokenPipe,
                format!("{op}: write_eof was called"),
            ));
        }
        if self.transport.is_closing() {
            return Some(io::Error::new(
                io::ErrorKind::BrokenPipe,
                format!("{op}: the stream is closing"),
            ));
        }
        None
    }
}

impl Drop for StreamWriter {
    fn drop(&mut self) {
        self.conn.writer_alive.set(false);
        self.conn.handle_dropped();
    }
}

/// Writes wait while the transport's buffer is above the high-water mark (like `drain`), then
/// hand everything to the transport. `poll_flush` is `drain`; `poll_shutdown` is `write_eof`.
impl AsyncWrite for StreamWriter {
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        if buf.is_empty() {
            return Poll::Ready(Ok(0));
        }
        if let Some(e) = self.write_refused("poll_write") {
            return Poll::Ready(Err(e));
        }
        if self.conn.write_paused.get() {
            return match self.conn.park_writer(cx, "poll_write") {
                Ok(()) => Poll::Pending,
                Err(e) => Poll::Ready(Err(e)),
            };
        }
        self.transport.write(buf);
        Poll::Ready(Ok(buf.len()))
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let total: usize = bufs.iter().map(|b| b.len()).sum();
        if total == 0 {
            return Poll::Ready(Ok(0));
        }
        if let Some(e) = self.write_refused("poll_write_vectored") {
            return Poll::Ready(Err(e));
        }
        if self.conn.write_paused.get() {
            return match self.conn.park_writer(cx, "poll_write") {
                Ok(()) => Poll::Pending,
                Err(e) => Poll::Ready(Err(e)),
            };
        }
        self.transport.writelines(bufs.iter().map(|b| &**b));
        Poll::Ready(Ok(total))
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.poll_drain(cx, "flush")
    }

    fn poll_shutdown(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        if self.conn.lost.get() {
            return Poll::Ready(Err(self.conn.lost_io("shutdown", io::ErrorKind::NotConnected)));
        }
        if !self.conn.eof_written.get() {
            self.write_eof();
        }
        Poll::Ready(Ok(()))
    }
}

impl fmt::Debug for StreamWriter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "<StreamWriter transport={:?}", self.transport)?;
        if self.conn.write_paused.get() {
            f.write_str(" paused")?;
        }
        f.write_str(">")
    }
}

// ---------------------------------------------------------------------------------------------
// Opening connections and serving.

fn client_pair(conn: Rc<Conn>, transport: Transport) -> (StreamReader, StreamWriter) {
    *conn.transport.borrow_mut() = Some(transport.clone());
    pair(conn, transport)
}

/// The hook a server's protocols call on each connection: spawns `handler(reader, writer)` as a
/// detached task (a panic in it reaches the loop's exception handler).
fn connect_hook<H, Fut>(lp: &LoopHandle, handler: H) -> Rc<ConnectHook>
where
    H: Fn(StreamReader, StreamWriter) -> Fut + 'static,
    Fut: Future<Output = ()> + 'static,
{
    let lp = lp.clone();
    let handler = Rc::new(handler);
    Rc::new(move |reader: StreamReader, writer: StreamWriter| {
        let h = handler.clone();
        // The handler is called inside the task, so that even its synchronous part fails as
        // the task (reported as an unobserved task failure), not as the protocol callback.
        // If the loop is closed the future is dropped with the streams, which closes the
        // connection.
        if let Ok(task) = lp.create_task(async move { h(reader, writer).await }) {
            task.detach();
        }
    })
}

impl LoopHandle {
    /// Connects to `host:port` and returns its streams (asyncio's `open_connection`): the name
    /// is resolved like [`LoopHandle::create_connection`] does (on the executor unless it is an
    /// IP literal) and each address is tried in turn; the error names the address.
    pub async fn open_connection(&self, host: &str, port: u16) -> io::Result<(StreamReader, StreamWriter)> {
        self.open_connection_with(host, port, StreamConfig::new()).await
    }

    /// [`LoopHandle::open_connection`] with options (the reader's limit).
    pub async fn open_connection_with(
        &self,
        host: &str,
        port: u16,
        config: StreamConfig,
    ) -> io::Result<(StreamReader, StreamWriter)> {
        let conn = Conn::new(config);
        let protocol = StreamProtocol {
            conn: conn.clone(),
            on_connect: None,
        };
        let transport = self.create_connection(protocol, host, port).await?;
        Ok(client_pair(conn, transport))
    }

    /// Connects to a Unix socket and returns its streams (asyncio's `open_unix_connection`).
    pub async fn open_unix_connection(&self, addr: &UnixAddr) -> io::Result<(StreamReader, StreamWriter)> {
        self.open_unix_connection_with(addr, StreamConfig::new()).await
    }

    /// [`LoopHandle::open_unix_connection`] with options.
    pub async fn open_unix_connection_with(
        &self,
        addr: &UnixAddr,
        config: StreamConfig,
    ) -> io::Result<(StreamReader, StreamWriter)> {
        let conn = Conn::new(config);
        let protocol = StreamProtocol {
            conn: conn.clone(),
            on_connect: None,
        };
        let transport = self.create_unix_connection(protocol, addr).await?;
        Ok(client_pair(conn, transport))
    }

    /// Serves on every address `host` resolves to (port 0 picks a free port): each connection
    /// runs `handler(reader, writer)` in its own task (asyncio's `start_server` with its
    /// `client_connected_cb`). A handler that panics is reported to the exception handler; the
    /// server keeps serving. The connection closes when the handler drops its streams.
    pub async fn start_server<H, Fut>(&self, handler: H, host: &str, port: u16) -> io::Result<Server>
    where
        H: Fn(StreamReader, StreamWriter) -> Fut + 'static,
        Fut: Future<Output = ()> + 'static,
    {
        self.start_server_with(handler, host, port, StreamConfig::new()).await
    }

    /// [`LoopHandle::start_server`] with options (each connection's reader limit).
    pub async fn start_server_with<H, Fut>(
        &self,
        handler: H,
        host: &str,
        port: u16,
        config: StreamConfig,
    ) -> io::Result<Server>
    where
        H: Fn(StreamReader, StreamWriter) -> Fut + 'static,
        Fut: Future<Output = ()> + 'static,
    {
        let hook = connect_hook(self, handler);
        let factory = move || StreamProtocol {
            conn: Conn::new(config),
            on_connect: Some(hook.clone()),
        };
        self.create_server(factory, host, port).await
    }

    /// Serves on a Unix socket (asyncio's `start_unix_server`); see
    /// [`LoopHandle::start_server`]. A pathname socket's file is removed by `Server::close`.
    pub fn start_unix_server<H, Fut>(&self, handler: H, addr: &UnixAddr) -> io::Result<Server<UnixAddr>>
    where
        H: Fn(StreamReader, StreamWriter) -> Fut + 'static,
        Fut: Future<Output = ()> + 'static,
    {
        self.start_unix_server_with(handler, addr, StreamConfig::new())
    }

    /// [`LoopHandle::start_unix_server`] with options.
    pub fn start_unix_server_with<H, Fut>(
        &self,
        handler: H,
        addr: &UnixAddr,
        config: StreamConfig,
    ) -> io::Result<Server<UnixAddr>>
    where
        H: Fn(StreamReader, StreamWriter) -> Fut + 'static,
        Fut: Future<Output = ()> + 'static,
    {
        let hook = connect_hook(self, handler);
        let factory = move || StreamProtocol {
            conn: Conn::new(config),
            on_connect: Some(hook.clone()),
        };
        self.create_unix_server(factory, addr)
    }
}

fn running(op: &'static str) -> io::Result<LoopHandle> {
    get_running_loop().map_err(|e| io::Error::other(format!("{op}: {e}")))
}

/// Connects to `host:port` on the running loop and returns the streams (asyncio's
/// `open_connection`). See [`LoopHandle::open_connection`].
///
/// ```
/// evloop::run(async {
///     let server = evloop::start_server(|_r, w| async move { w.write(b"welcome\n") }, "127.0.0.1", 0).await?;
///     // reader, writer = await asyncio.open_connection('127.0.0.1', port)
///     let (reader, writer) = evloop::open_connection("127.0.0.1", server.local_addr().port()).await?;
///     assert_eq!(reader.readline().await?, b"welcome\n");
///     writer.close();
///     writer.wait_closed().await?;
///     Ok::<(), Box<dyn std::error::Error>>(())
/// })??;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub async fn open_connection(host: &str, port: u16) -> io::Result<(StreamReader, StreamWriter)> {
    running("open_connection")?.open_connection(host, port).await
}

/// [`open_connection`] with options (asyncio's `limit=`).
///
/// ```
/// use evloop::StreamConfig;
///
/// evloop::run(async {
///     let server = evloop::start_server(|_r, _w| async {}, "127.0.0.1", 0).await?;
///     let config = StreamConfig::new().limit(1 << 20); // asyncio's limit=
///     let (reader, _w) = evloop::open_connection_with("127.0.0.1", server.local_addr().port(), config).await?;
///     assert_eq!(reader.limit(), 1 << 20);
///     Ok::<(), Box<dyn std::error::Error>>(())
/// })??;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub async fn open_connection_with(
    host: &str,
    port: u16,
    config: StreamConfig,
) -> io::Result<(StreamReader, StreamWriter)> {
    running("open_connection")?
        .open_connection_with(host, port, config)
        .await
}

/// Connects to a Unix socket on the running loop (asyncio's `open_unix_connection`).
///
/// ```
/// use evloop::net::UnixAddr;
///
/// evloop::run(async {
///     let addr = UnixAddr::abstract_name(format!("evloop-doc-{}", std::process::id()).as_bytes())?;
///     let _server = evloop::start_unix_server(|_r, w| async move { w.write(b"local hello") }, &addr)?;
///     let (reader, _w) = evloop::open_unix_connection(&addr).await?;
///     assert_eq!(reader.read_to_end().await?, b"local hello");
///     Ok::<(), Box<dyn std::error::Error>>(())
/// })??;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub async fn open_unix_connection(addr: &UnixAddr) -> io::Result<(StreamReader, StreamWriter)> {
    running("open_unix_connection")?.open_unix_connection(addr).await
}

/// [`open_unix_connection`] with options.
///
/// ```
/// use evloop::net::UnixAddr;
/// use evloop::StreamConfig;
///
/// evloop::run(async {
///     let addr = UnixAddr::abstract_name(format!("evloop-doc-{}", std::process::id()).as_bytes())?;
///     let _server = evloop::start_unix_server(|_r, _w| async {}, &addr)?;
///     let (reader, _w) = evloop::open_unix_connection_with(&addr, StreamConfig::new().limit(512)).await?;
///     assert_eq!(reader.limit(), 512);
///     Ok::<(), Box<dyn std::error::Error>>(())
/// })??;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub async fn open_unix_connection_with(
    addr: &UnixAddr,
    config: StreamConfig,
) -> io::Result<(StreamReader, StreamWriter)> {
    running("open_unix_connection")?
        .open_unix_connection_with(addr, config)
        .await
}

/// Serves `handler` on the running loop (asyncio's `start_server`). See
/// [`LoopHandle::start_server`].
///
/// ```
/// // An echo server, as in asyncio's documentation: one task per connection.
/// async fn handle_echo(reader: evloop::StreamReader, writer: evloop::StreamWriter) {
///     if let Ok(data) = reader.read(100).await {
///         writer.write(&data);
///         let _ = writer.drain().await;
///     }
///     writer.close();
/// }
///
/// evloop::run(async {
///     let server = evloop::start_server(handle_echo, "127.0.0.1", 0).await?;
///     let (reader, writer) = evloop::open_connection("127.0.0.1", server.local_addr().port()).await?;
///     writer.write(b"Hello World!");
///     assert_eq!(reader.read_to_end().await?, b"Hello World!");
///     server.close();
///     server.wait_closed().await;
///     Ok::<(), Box<dyn std::error::Error>>(())
/// })??;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub async fn start_server<H, Fut>(handler: H, host: &str, port: u16) -> io::Result<Server>
where
    H: Fn(StreamReader, StreamWriter) -> Fut + 'static,
    Fut: Future<Output = ()> + 'static,
{
    running("start_server")?.start_server(handler, host, port).await
}

/// [`start_server`] with options.
///
/// ```
/// use evloop::StreamConfig;
///
/// evloop::run(async {
///     let server = evloop::start_server_with(
///         |reader, writer| async move { writer.write(reader.limit().to_string().as_bytes()) },
///         "127.0.0.1",
///         0,
///         StreamConfig::new().limit(4096), // each connection's reader limit
///     )
///     .await?;
///     let (reader, _w) = evloop::open_connection("127.0.0.1", server.local_addr().port()).await?;
///     assert_eq!(reader.read_to_end().await?, b"4096");
///     Ok::<(), Box<dyn std::error::Error>>(())
/// })??;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub async fn start_server_with<H, Fut>(handler: H, host: &str, port: u16, config: StreamConfig) -> io::Result<Server>
where
    H: Fn(StreamReader, StreamWriter) -> Fut + 'static,
    Fut: Future<Output = ()> + 'static,
{
    running("start_server")?
        .start_server_with(handler, host, port, config)
        .await
}

/// Serves `handler` on a Unix socket on the running loop (asyncio's `start_unix_server`).
///
/// ```
/// use evloop::net::UnixAddr;
///
/// evloop::run(async {
///     let path = std::env::temp_dir().join(format!("evloop-doc-{}.sock", std::process::id()));
///     let addr = UnixAddr::pathname(&path)?;
///     let server = evloop::start_unix_server(|_r, w| async move { w.write(b"hi") }, &addr)?;
///     assert_eq!(server.local_addr(), addr);
///     let (reader, _w) = evloop::open_unix_connection(&addr).await?;
///     assert_eq!(reader.read_to_end().await?, b"hi");
///     server.close(); // also removes the socket file
///     assert!(!path.exists());
///     Ok::<(), Box<dyn std::error::Error>>(())
/// })??;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn start_unix_server<H, Fut>(handler: H, addr: &UnixAddr) -> io::Result<Server<UnixAddr>>
where
    H: Fn(StreamReader, StreamWriter) -> Fut + 'static,
    Fut: Future<Output = ()> + 'static,
{
    running("start_unix_server")?.start_unix_server(handler, addr)
}

/// [`start_unix_server`] with options.
///
/// ```
/// use evloop::net::UnixAddr;
/// use evloop::StreamConfig;
///
/// evloop::run(async {
///     let addr = UnixAddr::abstract_name(format!("evloop-doc-{}", std::process::id()).as_bytes())?;
///     let config = StreamConfig::new().limit(64);
///     let _server = evloop::start_unix_server_with(
///         |reader, writer| async move { writer.write(reader.limit().to_string().as_bytes()) },
///         &addr,
///         config,
///     )?;
///     let (reader, _w) = evloop::open_unix_connection(&addr).await?;
///     assert_eq!(reader.read_to_end().await?, b"64");
///     Ok::<(), Box<dyn std::error::Error>>(())
/// })??;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn start_unix_server_with<H, Fut>(handler: H, addr: &UnixAddr, config: StreamConfig) -> io::Result<Server<UnixAddr>>
where
    H: Fn(StreamReader, StreamWriter) -> Fut + 'static,
    Fut: Future<Output = ()> + 'static,
{
    running("start_unix_server")?.start_unix_server_with(handler, addr, config)
}
