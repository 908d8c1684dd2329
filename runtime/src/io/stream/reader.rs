//! [`StreamReader`], the reading side of a stream connection (asyncio's): its read methods
//! answer from the connection's buffer and park the task in `Conn` only when they cannot.

use std::fmt;
use std::future::poll_fn;
use std::io;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll};

use crate::event_loop::budget;
use crate::io::AsyncRead;
use crate::io::protocol::Transport;
use crate::io::stream::StreamError;
use crate::io::stream::conn::Conn;

/// The reading side of a stream connection (asyncio's `StreamReader`).
///
/// Methods take `&self`; only one read may wait for data at a time (a second one gets
/// [`StreamError::ReadInProgress`]). Dropping the reader discards bytes that arrive later;
/// dropping both the reader and the writer closes the connection.
///
/// It also implements [`AsyncRead`]. Its asyncio-named `read` and `read_to_end` take
/// precedence over [`AsyncReadExt`](crate::io::AsyncReadExt)'s methods of the same names: call
/// those as `AsyncReadExt::read(&mut reader, &mut buf)`. Likewise [`StreamWriter::write`](crate::streams::StreamWriter::write)
/// (asyncio's, synchronous) over `AsyncWriteExt::write`; `write_all`, `flush` and `shutdown`
/// need no qualification.
///
/// ```
/// evloop::run(async {
///     let server = evloop::streams::start_server(
///         |_r, w| async move { w.write(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nhi") },
///         "127.0.0.1",
///         0,
///     )
///     .await?;
///     let (reader, _w) = evloop::streams::open_connection("127.0.0.1", server.local_addr().port()).await?;
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
    pub(super) conn: Rc<Conn>,
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
    ///     let server = evloop::streams::start_server(|_r, w| async move { w.write(b"0123456789") }, "127.0.0.1", 0).await?;
    ///     let (reader, _w) = evloop::streams::open_connection("127.0.0.1", server.local_addr().port()).await?;
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
    ///     let server = evloop::streams::start_server(|_r, w| async move { w.write(b"everything") }, "127.0.0.1", 0).await?;
    ///     let (reader, _w) = evloop::streams::open_connection("127.0.0.1", server.local_addr().port()).await?;
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
    ///     let server = evloop::streams::start_server(|_r, w| async move { w.write(b"one\ntwo") }, "127.0.0.1", 0).await?;
    ///     let (reader, _w) = evloop::streams::open_connection("127.0.0.1", server.local_addr().port()).await?;
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
    ///     let server = evloop::streams::start_server(|_r, w| async move { w.write(b"key=value;rest") }, "127.0.0.1", 0).await?;
    ///     let (reader, _w) = evloop::streams::open_connection("127.0.0.1", server.local_addr().port()).await?;
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
    ///     let server = evloop::streams::start_server(|_r, w| async move { w.write(b"\x05hello") }, "127.0.0.1", 0).await?;
    ///     let (reader, _w) = evloop::streams::open_connection("127.0.0.1", server.local_addr().port()).await?;
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
    ///     let server = evloop::streams::start_server(|_r, w| async move { w.write(b"ab") }, "127.0.0.1", 0).await?;
    ///     let (reader, _w) = evloop::streams::open_connection("127.0.0.1", server.local_addr().port()).await?;
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
    ///     let server = evloop::streams::start_server(|_r, w| async move { w.write(b"a\nbcd") }, "127.0.0.1", 0).await?;
    ///     let (reader, _w) = evloop::streams::open_connection("127.0.0.1", server.local_addr().port()).await?;
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
    /// evloop::run(async {
    ///     let server = evloop::streams::start_server(|_r, _w| async {}, "127.0.0.1", 0).await?;
    ///     let port = server.local_addr().port();
    ///     let (reader, _w) = evloop::streams::open_connection("127.0.0.1", port).limit(100).await?;
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
    ///     let server = evloop::streams::start_server(|_r, w| async move { w.write(b"bye") }, "127.0.0.1", 0).await?;
    ///     let (reader, _w) = evloop::streams::open_connection("127.0.0.1", server.local_addr().port()).await?;
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
    ///     let server = evloop::streams::start_server(|_r, _w| async {}, "127.0.0.1", 0).await?;
    ///     let (reader, writer) = evloop::streams::open_connection("127.0.0.1", server.local_addr().port()).await?;
    ///     let transport = reader.transport().expect("the connection is open");
    ///     assert_eq!(transport.peer_addr(), writer.peer_addr()); // one transport for both
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
            if budget::poll_proceed(cx).is_pending() {
                return Poll::Pending;
            }
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
