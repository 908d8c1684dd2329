//! [`StreamWriter`], the writing side of a stream connection (asyncio's): `write` hands bytes
//! to the transport, and `drain`, `wait_closed` and a blocked `AsyncWrite` wait in `Conn`'s
//! writer waiters for `resume_writing` or `connection_lost`.

use std::fmt;
use std::future::poll_fn;
use std::io::{self, IoSlice};
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll, ready};

use crate::event_loop::budget;
use crate::io::AsyncWrite;
use crate::io::net::SockAddr;
use crate::io::protocol::Transport;
use crate::io::stream::conn::Conn;

/// The writing side of a stream connection (asyncio's `StreamWriter`).
///
/// `write` is synchronous (the transport buffers); `drain` is the back-pressure point. Dropping
/// the writer sends end of stream after the queued bytes (the reader keeps reading); dropping
/// both the reader and the writer closes the connection (after flushing).
///
/// ```
/// evloop::run(async {
///     let server = evloop::streams::start_server(
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
///     let (reader, writer) = evloop::streams::open_connection("127.0.0.1", server.local_addr().port()).await?;
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
    pub(super) conn: Rc<Conn>,
    pub(super) transport: Transport,
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
    ///     let server = evloop::streams::start_server(
    ///         |reader, _w| async move {
    ///             assert_eq!(reader.read_to_end().await.as_deref().ok(), Some(&b"in one send"[..]));
    ///         },
    ///         "127.0.0.1",
    ///         0,
    ///     )
    ///     .await?;
    ///     let (_r, writer) = evloop::streams::open_connection("127.0.0.1", server.local_addr().port()).await?;
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
    ///     let server = evloop::streams::start_server(|r, w| async move { w.write(&r.read_to_end().await.unwrap_or_default()) }, "127.0.0.1", 0).await?;
    ///     let (reader, writer) = evloop::streams::open_connection("127.0.0.1", server.local_addr().port()).await?;
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
    ///     let server = evloop::streams::start_server(
    ///         |reader, _w| async move {
    ///             let _ = reader.read_to_end().await; // a consumer that keeps up
    ///         },
    ///         "127.0.0.1",
    ///         0,
    ///     )
    ///     .await?;
    ///     let (_r, writer) = evloop::streams::open_connection("127.0.0.1", server.local_addr().port()).await?;
    ///     let chunk = vec![0u8; 64 * 1024];
    ///     for _ in 0..32 {
    ///         writer.write(&chunk);
    ///         writer.drain().await?; // waits while more than the high-water mark is queued
    ///         assert!(writer.write_buffer_size() <= 2 * chunk.len());
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
        if !self.transport.is_write_paused() {
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
    ///     let server = evloop::streams::start_server(
    ///         |reader, writer| async move {
    ///             let request = reader.read_to_end().await.unwrap_or_default(); // until the client's FIN
    ///             writer.write(format!("got {} bytes", request.len()).as_bytes());
    ///         },
    ///         "127.0.0.1",
    ///         0,
    ///     )
    ///     .await?;
    ///     let (reader, writer) = evloop::streams::open_connection("127.0.0.1", server.local_addr().port()).await?;
    ///     writer.write(b"whole request");
    ///     writer.write_eof(); // half-close: the reply can still come back
    ///     assert_eq!(reader.read_to_end().await?, b"got 13 bytes");
    ///     Ok::<(), Box<dyn std::error::Error>>(())
    /// })??;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn write_eof(&self) {
        self.transport.write_eof();
    }

    /// Whether `write_eof` is supported (always, for TCP and Unix sockets).
    ///
    /// ```
    /// evloop::run(async {
    ///     let server = evloop::streams::start_server(|_r, _w| async {}, "127.0.0.1", 0).await?;
    ///     let (_r, writer) = evloop::streams::open_connection("127.0.0.1", server.local_addr().port()).await?;
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
    ///     let server = evloop::streams::start_server(|_r, _w| async {}, "127.0.0.1", 0).await?;
    ///     let (_r, writer) = evloop::streams::open_connection("127.0.0.1", server.local_addr().port()).await?;
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
    ///     let server = evloop::streams::start_server(|_r, _w| async {}, "127.0.0.1", 0).await?;
    ///     let (_r, writer) = evloop::streams::open_connection("127.0.0.1", server.local_addr().port()).await?;
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
    ///     let server = evloop::streams::start_server(|_r, _w| async {}, "127.0.0.1", 0).await?;
    ///     let (_r, writer) = evloop::streams::open_connection("127.0.0.1", server.local_addr().port()).await?;
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
    ///     let server = evloop::streams::start_server(|_r, _w| async {}, "127.0.0.1", 0).await?;
    ///     let (_r, writer) = evloop::streams::open_connection("127.0.0.1", server.local_addr().port()).await?;
    ///     assert_eq!(writer.peer_addr(), Some(&SockAddr::Inet(server.local_addr())));
    ///     Ok::<(), Box<dyn std::error::Error>>(())
    /// })??;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn peer_addr(&self) -> Option<&SockAddr> {
        self.transport.peer_addr()
    }

    /// The local address (`get_extra_info('sockname')`).
    ///
    /// ```
    /// evloop::run(async {
    ///     let server = evloop::streams::start_server(|_r, _w| async {}, "127.0.0.1", 0).await?;
    ///     let (_r, writer) = evloop::streams::open_connection("127.0.0.1", server.local_addr().port()).await?;
    ///     let local = writer.local_addr().and_then(|a| a.as_inet()).expect("a TCP address");
    ///     assert!(local.ip().is_loopback() && local.port() != 0); // the port the kernel picked
    ///     Ok::<(), Box<dyn std::error::Error>>(())
    /// })??;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn local_addr(&self) -> Option<&SockAddr> {
        self.transport.local_addr()
    }

    /// The transport underneath.
    ///
    /// ```
    /// evloop::run(async {
    ///     let server = evloop::streams::start_server(|_r, _w| async {}, "127.0.0.1", 0).await?;
    ///     let (_r, writer) = evloop::streams::open_connection("127.0.0.1", server.local_addr().port()).await?;
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
    ///     let server = evloop::streams::start_server(|_r, _w| async {}, "127.0.0.1", 0).await?;
    ///     let (_r, writer) = evloop::streams::open_connection("127.0.0.1", server.local_addr().port()).await?;
    ///     writer.set_write_buffer_limits(Some(1024), None); // drain() waits above 1 KiB
    ///     assert_eq!(writer.transport().write_buffer_limits(), (1024, 256));
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
    ///     let server = evloop::streams::start_server(|_r, _w| async {}, "127.0.0.1", 0).await?;
    ///     let (_r, writer) = evloop::streams::open_connection("127.0.0.1", server.local_addr().port()).await?;
    ///     writer.write(b"queued");
    ///     assert_eq!(writer.write_buffer_size(), 6); // held until the end of the iteration
    ///     writer.drain().await?;
    ///     evloop::task::yield_now().await; // the flush ran: the kernel took it all
    ///     assert_eq!(writer.write_buffer_size(), 0);
    ///     Ok::<(), Box<dyn std::error::Error>>(())
    /// })??;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn write_buffer_size(&self) -> usize {
        self.transport.write_buffer_size()
    }

    fn write_refused(&self, op: &str) -> Option<io::Error> {
        let c = &self.conn;
        if c.lost.get() {
            return Some(c.lost_io(op, io::ErrorKind::BrokenPipe));
        }
        if self.transport.eof_requested() {
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

impl StreamWriter {
    /// What an `AsyncWrite` write returns instead of writing: the refusal of a closed or
    /// half-closed stream, or `Pending` while writing is paused (the task parked until
    /// `resume_writing` or `connection_lost`). `None`: write now.
    fn poll_room(&self, cx: &mut Context<'_>, op: &'static str) -> Option<Poll<io::Result<usize>>> {
        if let Some(e) = self.write_refused(op) {
            return Some(Poll::Ready(Err(e)));
        }
        if self.transport.is_write_paused() {
            return Some(match self.conn.park_writer(cx, op) {
                Ok(()) => Poll::Pending,
                Err(e) => Poll::Ready(Err(e)),
            });
        }
        None
    }
}

/// The writer owns the write side: dropping it alone half-closes the connection (`write_eof`
/// after the queued bytes, as an owned write half's drop shuts its side down), so a peer that
/// reads to the end is not left waiting while the reader lives on.
impl Drop for StreamWriter {
    fn drop(&mut self) {
        self.conn.writer_alive.set(false);
        if self.conn.reader_alive.get() && !self.transport.is_closing() && !self.transport.eof_requested() {
            self.transport.write_eof();
        }
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
        if let Some(r) = self.poll_room(cx, "poll_write") {
            return r;
        }
        ready!(budget::poll_proceed(cx));
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
        if let Some(r) = self.poll_room(cx, "poll_write_vectored") {
            return r;
        }
        ready!(budget::poll_proceed(cx));
        self.transport.writelines(bufs.iter().map(|b| &**b));
        Poll::Ready(Ok(total))
    }

    fn is_write_vectored(&self) -> bool {
        true
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.poll_drain(cx, "flush")
    }

    fn poll_shutdown(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        if self.conn.lost.get() {
            return Poll::Ready(Err(self.conn.lost_io("shutdown", io::ErrorKind::NotConnected)));
        }
        if !self.transport.eof_requested() {
            self.write_eof();
        }
        Poll::Ready(Ok(()))
    }
}

impl fmt::Debug for StreamWriter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "<StreamWriter transport={:?}", self.transport)?;
        if self.transport.is_write_paused() {
            f.write_str(" paused")?;
        }
        f.write_str(">")
    }
}
