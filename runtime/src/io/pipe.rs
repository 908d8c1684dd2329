//! Pipes: [`pipe()`], the async pipe ends [`PipeReader`] / [`PipeWriter`], and asyncio's pipe
//! transports ([`LoopHandle::connect_read_pipe`], [`LoopHandle::connect_write_pipe`]).
//!
//! A pipe end is an [`AsyncFd`] over the descriptor: registered once, edge-triggered, read with
//! `read(2)` and written with `write(2)`/`writev(2)` when the loop says it is ready, exactly like
//! a socket. The ends of a child process's stdio ([`crate::os::process::Process`]) are these types.
//!
//! # SIGPIPE
//! Writing to a pipe whose reading end is closed fails with `EPIPE` *and* raises `SIGPIPE`,
//! which kills the process where it is not ignored (Rust programs ignore it, but a library
//! embedded in a C or Python host cannot count on that); pipes have no `MSG_NOSIGNAL`. So every
//! pipe write goes through `write_nosigpipe` / `writev_nosigpipe`, and a writer gets an `EPIPE`
//! error ([`io::ErrorKind::BrokenPipe`]), never a signal.
//!
//! Done per write, that costs three to four signal-mask system calls around each `write`. So the
//! first pipe writer (or write-pipe transport) of a loop blocks `SIGPIPE` on the loop's thread
//! for the rest of the loop's life (`block_sigpipe_on_this_thread`, released when the loop
//! closes): a write is then one `write`, plus one `sigtimedwait` only after an `EPIPE`, to take
//! back the signal it raised. Child processes are unaffected: evloop's spawn resets the signal
//! mask and `SIGPIPE`'s disposition in the child before `exec` (`reset_signals_on_exec`; std's
//! `Command` alone resets only the disposition); threads started from the loop's thread while the block is held
//! (the executor's) inherit the blocked mask, which only means a `SIGPIPE` raised there stays
//! pending on that thread instead of being delivered.
//!
//! # Readiness
//! Only `EAGAIN` clears a pipe end's readiness (never a short read: on a tty a short read is one
//! line, not an empty queue). The write end of a pipe whose reader is gone reports `EPOLLERR`,
//! so a writer waiting for room wakes up and gets its `EPIPE`.

use std::cell::RefCell;
use std::fmt;
use std::io::{self, IoSlice};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd, RawFd};
use std::panic::Location;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll};

use evloop_syscalls as sys;

use crate::event_loop::error::{LoopError, LoopErrorKind};
use crate::event_loop::slots::LoopKey;
use crate::event_loop::{LoopHandle, LoopInner, get_running_loop};
use crate::io::error::with_context;
use crate::io::protocol::{Protocol, Transport, TransportKind};
use crate::io::{AsyncFd, AsyncRead, AsyncWrite, Interest, fd_context};

/// Creates a pipe (`pipe2(O_NONBLOCK | O_CLOEXEC)`) registered with the loop running on this
/// thread: `(read end, write end)`.
///
/// ```
/// use evloop::io::{AsyncReadExt, AsyncWriteExt};
///
/// let got = evloop::run(async {
///     let (mut rd, mut wr) = evloop::pipe::pipe()?;
///     wr.write_all(b"through the pipe").await?;
///     drop(wr); // the last write end closed: the reader sees end of file
///     let mut got = Vec::new();
///     rd.read_to_end(&mut got).await?;
///     Ok::<_, std::io::Error>(got)
/// })??;
/// assert_eq!(got, b"through the pipe");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn pipe() -> io::Result<(PipeReader, PipeWriter)> {
    pipe_with_loop(&running("pipe")?)
}

/// Like [`pipe()`], on a given loop (which need not be running).
///
/// ```
/// use evloop::{event_loop::EventLoop, io::{AsyncReadExt, AsyncWriteExt}};
///
/// let lp = EventLoop::new()?;
/// let (mut rd, mut wr) = evloop::pipe::pipe_with_loop(&lp)?; // before the loop runs
/// let got = lp.run_until_complete(async move {
///     wr.write_all(b"x").await?;
///     let mut b = [0; 1];
///     rd.read_exact(&mut b).await.map(|_| b)
/// })??;
/// assert_eq!(&got, b"x");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn pipe_with_loop(lp: &LoopHandle) -> io::Result<(PipeReader, PipeWriter)> {
    if lp.is_closed() {
        return Err(LoopError::new(LoopErrorKind::Closed, "pipe").into());
    }
    let (r, w) = sys::pipe2().map_err(|e| with_context("pipe".into(), e))?;
    Ok((PipeReader::with_loop(lp, r)?, PipeWriter::with_loop(lp, w)?))
}

/// The loop running on this thread, or an error naming `op`.
fn running(op: &'static str) -> io::Result<LoopHandle> {
    get_running_loop().map_err(|_| LoopError::new(LoopErrorKind::NoRunningLoop, op).into())
}

/// The loop's `SIGPIPE` block, taken by its first pipe writer; closing the loop ends it.
static SIGPIPE_BLOCK: LoopKey<RefCell<Option<sys::SigpipeBlock>>> = LoopKey::with_close(|block, _| {
    let block = block.borrow_mut().take();
    drop(block);
});

/// Blocks `SIGPIPE` on the loop's thread until the loop closes (see the module docs). A failure
/// only means writes take the per-call path, which is just as safe.
fn hold_sigpipe_block(lp: &LoopInner) {
    if lp.is_closed() {
        return;
    }
    let mut block = lp.slot_or_init(&SIGPIPE_BLOCK, RefCell::default).borrow_mut();
    if block.is_none() {
        *block = sys::block_sigpipe_on_this_thread().ok();
    }
}

fn register(lp: &LoopHandle, fd: OwnedFd, op: &str) -> io::Result<AsyncFd<OwnedFd>> {
    let raw = fd.as_raw_fd();
    AsyncFd::with_loop(lp, fd).map_err(|e| with_context(format!("{op}(fd {raw})"), e))
}

// ---------------------------------------------------------------------------------------------
// The async ends.

/// The read end of a pipe (or any FIFO, tty or other pollable fd read with `read(2)`), driven by
/// the loop: [`AsyncRead`]. Reading gives 0 (end of file) once every write end is closed.
///
/// ```
/// use evloop::io::{AsyncReadExt, AsyncWriteExt};
///
/// evloop::run(async {
///     let (mut rd, mut wr) = evloop::pipe::pipe()?;
///     let reader = evloop::spawn(async move {
///         let mut lines = String::new();
///         let mut buf = [0; 64];
///         loop {
///             let n = rd.read(&mut buf).await?;
///             if n == 0 {
///                 return Ok::<_, std::io::Error>(lines); // end of file
///             }
///             lines.push_str(std::str::from_utf8(&buf[..n]).expect("ASCII"));
///         }
///     });
///     wr.write_all(b"a\n").await?;
///     wr.write_all(b"b\n").await?;
///     wr.shutdown().await?; // closes the write end
///     assert_eq!(reader.await??, "a\nb\n");
///     Ok::<(), Box<dyn std::error::Error>>(())
/// })??;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct PipeReader {
    fd: AsyncFd<OwnedFd>,
    lp: LoopHandle,
}

impl PipeReader {
    /// Adopts `fd` on the loop running on this thread, switching it to non-blocking mode (which
    /// is shared with every other holder of the same open file, e.g. a terminal).
    ///
    /// ```
    /// use std::io::Write;
    /// use std::os::unix::net::UnixStream;
    /// use evloop::pipe::PipeReader;
    /// use evloop::io::AsyncReadExt;
    ///
    /// evloop::run(async {
    ///     // Any pollable fd read with read(2): here one end of a socket pair.
    ///     let (a, mut b) = UnixStream::pair()?;
    ///     let mut rd = PipeReader::from_fd(a.into())?;
    ///     b.write_all(b"fd")?;
    ///     drop(b);
    ///     let mut got = Vec::new();
    ///     rd.read_to_end(&mut got).await?;
    ///     assert_eq!(got, b"fd");
    ///     Ok::<(), std::io::Error>(())
    /// })??;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn from_fd(fd: OwnedFd) -> io::Result<PipeReader> {
        PipeReader::with_loop(&running("PipeReader::from_fd")?, fd)
    }

    /// Adopts `fd` on a given loop (which need not be running).
    ///
    /// ```
    /// use std::io::Write;
    /// use std::os::unix::net::UnixStream;
    /// use evloop::pipe::PipeReader;
    /// use evloop::{event_loop::EventLoop, io::AsyncReadExt};
    ///
    /// let lp = EventLoop::new()?;
    /// let (a, mut b) = UnixStream::pair()?;
    /// let mut rd = PipeReader::with_loop(&lp, a.into())?;
    /// b.write_all(b"ready")?;
    /// let n = lp.run_until_complete(async move { rd.read(&mut [0; 8]).await })??;
    /// assert_eq!(n, 5);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn with_loop(lp: &LoopHandle, fd: OwnedFd) -> io::Result<PipeReader> {
        Ok(PipeReader {
            fd: register(lp, fd, "PipeReader")?,
            lp: lp.clone(),
        })
    }

    /// Deregisters the fd and gives it back (still non-blocking).
    ///
    /// ```
    /// use std::io::{ErrorKind, Read};
    ///
    /// evloop::run(async {
    ///     let (rd, _wr) = evloop::pipe::pipe()?;
    ///     let mut file = std::fs::File::from(rd.into_fd()); // deregistered, still non-blocking
    ///     let err = file.read(&mut [0; 1]).unwrap_err();
    ///     assert_eq!(err.kind(), ErrorKind::WouldBlock); // empty, and the writer is still open
    ///     Ok::<(), std::io::Error>(())
    /// })??;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn into_fd(self) -> OwnedFd {
        self.fd.into_inner()
    }

    /// The raw fd.
    ///
    /// ```
    /// evloop::run(async {
    ///     let (rd, wr) = evloop::pipe::pipe()?;
    ///     assert_ne!(Some(rd.as_raw_fd()), wr.as_raw_fd()); // two fds
    ///     Ok::<(), std::io::Error>(())
    /// })??;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn as_raw_fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }

    /// The fd and its live registration, for a transport on `lp` (re-registered if the reader
    /// belongs to another loop).
    fn into_registered(self, lp: &LoopHandle) -> io::Result<(OwnedFd, Rc<crate::event_loop::reactor::IoState>)> {
        if self.lp.same_loop(lp) {
            Ok(self.fd.into_parts())
        } else {
            let fd = self.fd.into_inner();
            Ok(register(lp, fd, "connect_read_pipe")?.into_parts())
        }
    }
}

impl AsyncRead for PipeReader {
    fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut [u8]) -> Poll<io::Result<usize>> {
        if buf.is_empty() {
            return Poll::Ready(Ok(0));
        }
        let r = self.fd.poll_io(cx, Interest::Read, |fd| sys::read(fd.as_fd(), buf));
        fd_context("read", self.fd.as_raw_fd(), r)
    }
}

impl AsFd for PipeReader {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }
}

impl fmt::Debug for PipeReader {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "PipeReader(fd {})", self.fd.as_raw_fd())
    }
}

/// The write end of a pipe (or any FIFO, tty or other pollable fd written with `write(2)`),
/// driven by the loop: [`AsyncWrite`]. Writing after the reader is gone is an `EPIPE` error
/// ([`io::ErrorKind::BrokenPipe`]), never a `SIGPIPE`. `shutdown` (and dropping it) closes the
/// write end, so the reader sees end of file once every write end is closed.
///
/// ```
/// use std::io::ErrorKind;
/// use evloop::io::AsyncWriteExt;
///
/// evloop::run(async {
///     let (rd, mut wr) = evloop::pipe::pipe()?;
///     drop(rd);
///     // The reader is gone: an EPIPE error, never a SIGPIPE that kills the process.
///     let err = wr.write_all(b"anyone?").await.unwrap_err();
///     assert_eq!(err.kind(), ErrorKind::BrokenPipe);
///     Ok::<(), std::io::Error>(())
/// })??;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct PipeWriter {
    /// `None` once shut down.
    fd: Option<AsyncFd<OwnedFd>>,
    lp: LoopHandle,
}

impl PipeWriter {
    /// Adopts `fd` on the loop running on this thread, switching it to non-blocking mode.
    ///
    /// ```
    /// use std::io::Read;
    /// use std::os::unix::net::UnixStream;
    /// use evloop::pipe::PipeWriter;
    /// use evloop::io::AsyncWriteExt;
    ///
    /// evloop::run(async {
    ///     let (a, mut b) = UnixStream::pair()?;
    ///     let mut wr = PipeWriter::from_fd(a.into())?;
    ///     wr.write_all(b"via write(2)").await?;
    ///     wr.shutdown().await?; // closes the fd
    ///     let mut got = String::new();
    ///     b.read_to_string(&mut got)?;
    ///     assert_eq!(got, "via write(2)");
    ///     Ok::<(), std::io::Error>(())
    /// })??;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn from_fd(fd: OwnedFd) -> io::Result<PipeWriter> {
        PipeWriter::with_loop(&running("PipeWriter::from_fd")?, fd)
    }

    /// Adopts `fd` on a given loop (which need not be running).
    ///
    /// ```
    /// use std::io::Read;
    /// use std::os::unix::net::UnixStream;
    /// use evloop::pipe::PipeWriter;
    /// use evloop::{event_loop::EventLoop, io::AsyncWriteExt};
    ///
    /// let lp = EventLoop::new()?;
    /// let (a, mut b) = UnixStream::pair()?;
    /// let mut wr = PipeWriter::with_loop(&lp, a.into())?;
    /// lp.run_until_complete(async move { wr.write_all(b"hi").await })??;
    /// let mut got = [0; 2];
    /// b.read_exact(&mut got)?;
    /// assert_eq!(&got, b"hi");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn with_loop(lp: &LoopHandle, fd: OwnedFd) -> io::Result<PipeWriter> {
        let fd = register(lp, fd, "PipeWriter")?;
        hold_sigpipe_block(&lp.inner);
        Ok(PipeWriter {
            fd: Some(fd),
            lp: lp.clone(),
        })
    }

    /// Deregisters the fd and gives it back (still non-blocking); `None` after `shutdown`.
    ///
    /// ```
    /// use evloop::io::AsyncWriteExt;
    ///
    /// evloop::run(async {
    ///     let (_rd, wr) = evloop::pipe::pipe()?;
    ///     assert!(wr.into_fd().is_some()); // deregistered, still non-blocking
    ///     let (_rd, mut wr) = evloop::pipe::pipe()?;
    ///     wr.shutdown().await?;
    ///     assert!(wr.into_fd().is_none()); // shutdown closed it
    ///     Ok::<(), std::io::Error>(())
    /// })??;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn into_fd(mut self) -> Option<OwnedFd> {
        self.fd.take().map(AsyncFd::into_inner)
    }

    /// The raw fd; `None` after `shutdown`.
    ///
    /// ```
    /// use evloop::io::AsyncWriteExt;
    ///
    /// evloop::run(async {
    ///     let (_rd, mut wr) = evloop::pipe::pipe()?;
    ///     assert!(wr.as_raw_fd().is_some());
    ///     wr.shutdown().await?;
    ///     assert_eq!(wr.as_raw_fd(), None);
    ///     Ok::<(), std::io::Error>(())
    /// })??;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn as_raw_fd(&self) -> Option<RawFd> {
        self.fd.as_ref().map(AsyncFd::as_raw_fd)
    }

    fn closed_error() -> io::Error {
        io::Error::new(io::ErrorKind::BrokenPipe, "PipeWriter: write after shutdown")
    }

    fn into_registered(mut self, lp: &LoopHandle) -> io::Result<(OwnedFd, Rc<crate::event_loop::reactor::IoState>)> {
        let fd = self.fd.take().ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::BrokenPipe,
                "connect_write_pipe: the PipeWriter was shut down",
            )
        })?;
        if self.lp.same_loop(lp) {
            Ok(fd.into_parts())
        } else {
            let fd = fd.into_inner();
            Ok(register(lp, fd, "connect_write_pipe")?.into_parts())
        }
    }
}

impl AsyncWrite for PipeWriter {
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        let Some(fd) = self.fd.as_ref() else {
            return Poll::Ready(Err(Self::closed_error()));
        };
        if buf.is_empty() {
            return Poll::Ready(Ok(0));
        }
        let r = fd.poll_io(cx, Interest::Write, |fd| sys::write_nosigpipe(fd.as_fd(), buf));
        fd_context("write", fd.as_raw_fd(), r)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let Some(fd) = self.fd.as_ref() else {
            return Poll::Ready(Err(Self::closed_error()));
        };
        if bufs.iter().all(|b| b.is_empty()) {
            return Poll::Ready(Ok(0));
        }
        let r = fd.poll_io(cx, Interest::Write, |fd| sys::writev_nosigpipe(fd.as_fd(), bufs));
        fd_context("writev", fd.as_raw_fd(), r)
    }

    fn is_write_vectored(&self) -> bool {
        true
    }

    /// Closes the write end (deregistered first). Idempotent.
    fn poll_shutdown(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        if let Some(fd) = this.fd.take() {
            let fd = fd.into_inner();
            let raw = fd.as_raw_fd();
            // The fd is released whatever close says (Linux frees it before reporting).
            if let Err(e) = sys::close(fd) {
                return Poll::Ready(Err(with_context(format!("close(fd {raw})"), e)));
            }
        }
        Poll::Ready(Ok(()))
    }
}

impl fmt::Debug for PipeWriter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.fd {
            Some(fd) => write!(f, "PipeWriter(fd {})", fd.as_raw_fd()),
            None => f.write_str("PipeWriter(shut down)"),
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Pipe transports.

/// What [`LoopHandle::connect_read_pipe`] accepts: a [`PipeReader`] (its registration is reused)
/// or any readable pipe, FIFO or tty fd.
///
/// ```
/// use std::cell::RefCell;
/// use std::rc::Rc;
/// use evloop::io::AsyncWriteExt;
///
/// /// Collects what arrives.
/// struct Collect(Rc<RefCell<Vec<u8>>>);
/// impl evloop::protocol::Protocol for Collect {
///     fn data_received(&mut self, data: &[u8]) {
///         self.0.borrow_mut().extend_from_slice(data);
///     }
/// }
///
/// evloop::run(async {
///     let lp = evloop::event_loop::get_running_loop()?;
///     let got = Rc::new(RefCell::new(Vec::new()));
///     let (rd, mut wr) = evloop::pipe::pipe()?;
///     // A `PipeReader` converts into `ReadPipe::Reader`, an `OwnedFd` into `ReadPipe::Fd`.
///     let transport = lp.connect_read_pipe(Collect(got.clone()), rd)?;
///     wr.write_all(b"fed").await?;
///     drop(wr);
///     while !transport.is_closing() {
///         evloop::task::yield_now().await; // until end of file closed the transport
///     }
///     assert_eq!(*got.borrow(), b"fed");
///     Ok::<(), Box<dyn std::error::Error>>(())
/// })??;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub enum ReadPipe {
    /// An async read end.
    Reader(PipeReader),
    /// A descriptor, registered by the transport.
    Fd(OwnedFd),
}

impl From<PipeReader> for ReadPipe {
    fn from(r: PipeReader) -> ReadPipe {
        ReadPipe::Reader(r)
    }
}

impl From<OwnedFd> for ReadPipe {
    fn from(fd: OwnedFd) -> ReadPipe {
        ReadPipe::Fd(fd)
    }
}

/// What [`LoopHandle::connect_write_pipe`] accepts: a [`PipeWriter`] or any writable pipe, FIFO
/// or tty fd.
///
/// ```
/// use evloop::io::AsyncReadExt;
///
/// struct Quiet;
/// impl evloop::protocol::Protocol for Quiet {
///     fn data_received(&mut self, _: &[u8]) {}
/// }
///
/// evloop::run(async {
///     let lp = evloop::event_loop::get_running_loop()?;
///     let (mut rd, wr) = evloop::pipe::pipe()?;
///     // A `PipeWriter` converts into `WritePipe::Writer`, an `OwnedFd` into `WritePipe::Fd`.
///     let transport = lp.connect_write_pipe(Quiet, wr)?;
///     transport.write(b"buffered, then written");
///     transport.close(); // once flushed, the pipe closes
///     let mut got = Vec::new();
///     rd.read_to_end(&mut got).await?;
///     assert_eq!(got, b"buffered, then written");
///     Ok::<(), Box<dyn std::error::Error>>(())
/// })??;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub enum WritePipe {
    /// An async write end.
    Writer(PipeWriter),
    /// A descriptor, registered by the transport.
    Fd(OwnedFd),
}

impl From<PipeWriter> for WritePipe {
    fn from(w: PipeWriter) -> WritePipe {
        WritePipe::Writer(w)
    }
}

impl From<OwnedFd> for WritePipe {
    fn from(fd: OwnedFd) -> WritePipe {
        WritePipe::Fd(fd)
    }
}

impl LoopHandle {
    /// Runs `protocol` on the read end of a pipe (asyncio's `connect_read_pipe`): its
    /// `data_received` gets what arrives, then at end of file `eof_received` and
    /// `connection_lost(None)` (a pipe has no half-close: the transport closes whatever
    /// `eof_received` returns). `connection_made` is scheduled first, as for sockets. The
    /// transport's `write` does nothing; `pause_reading` / `resume_reading` work as usual.
    ///
    /// ```
    /// use std::cell::RefCell;
    /// use std::io;
    /// use std::rc::Rc;
    /// use evloop::{io::AsyncWriteExt, protocol::Protocol};
    ///
    /// /// Records the calls a read-pipe transport makes.
    /// struct Log(Rc<RefCell<Vec<String>>>);
    /// impl Protocol for Log {
    ///     fn data_received(&mut self, data: &[u8]) {
    ///         self.0.borrow_mut().push(format!("data {}", String::from_utf8_lossy(data)));
    ///     }
    ///     fn eof_received(&mut self) -> bool {
    ///         self.0.borrow_mut().push("eof".into());
    ///         false
    ///     }
    ///     fn connection_lost(&mut self, error: Option<io::Error>) {
    ///         self.0.borrow_mut().push(format!("lost {error:?}"));
    ///     }
    /// }
    ///
    /// let log = evloop::run(async {
    ///     let lp = evloop::event_loop::get_running_loop()?;
    ///     let log = Rc::new(RefCell::new(Vec::new()));
    ///     let (rd, mut wr) = evloop::pipe::pipe()?;
    ///     lp.connect_read_pipe(Log(log.clone()), rd)?;
    ///     wr.write_all(b"hello").await?;
    ///     drop(wr);
    ///     while log.borrow().len() < 3 {
    ///         evloop::task::yield_now().await;
    ///     }
    ///     Ok::<_, Box<dyn std::error::Error>>(log.take())
    /// })??;
    /// assert_eq!(log, ["data hello", "eof", "lost None"]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[track_caller]
    pub fn connect_read_pipe<P: Protocol>(&self, protocol: P, pipe: impl Into<ReadPipe>) -> io::Result<Transport> {
        let site = Location::caller();
        self.check_pipe_op("connect_read_pipe")?;
        let (fd, io) = match pipe.into() {
            ReadPipe::Reader(r) => r.into_registered(self)?,
            ReadPipe::Fd(fd) => register(self, fd, "connect_read_pipe")?.into_parts(),
        };
        Transport::start_pipe(&self.inner, fd, io, Box::new(protocol), site, TransportKind::ReadPipe)
    }

    /// Runs `protocol` on the write end of a pipe (asyncio's `connect_write_pipe`): `write`
    /// writes at once what the pipe takes and buffers the rest, with `pause_writing` /
    /// `resume_writing` at the write buffer limits; `write_eof` (or `close`) closes the pipe
    /// once the buffer is flushed, then `connection_lost(None)`. The reader going away closes
    /// the transport: `connection_lost(None)` with nothing buffered, an `EPIPE` error
    /// otherwise. Nothing is ever read.
    ///
    /// ```
    /// use std::cell::Cell;
    /// use std::io;
    /// use std::rc::Rc;
    /// use evloop::{io::AsyncReadExt, protocol::Protocol};
    ///
    /// /// Notes when the transport is done.
    /// struct Done(Rc<Cell<bool>>);
    /// impl Protocol for Done {
    ///     fn data_received(&mut self, _: &[u8]) {}
    ///     fn connection_lost(&mut self, error: Option<io::Error>) {
    ///         assert!(error.is_none());
    ///         self.0.set(true);
    ///     }
    /// }
    ///
    /// evloop::run(async {
    ///     let lp = evloop::event_loop::get_running_loop()?;
    ///     let done = Rc::new(Cell::new(false));
    ///     let (mut rd, wr) = evloop::pipe::pipe()?;
    ///     let transport = lp.connect_write_pipe(Done(done.clone()), wr)?;
    ///     transport.writelines([&b"one "[..], b"two"]);
    ///     transport.write_eof(); // a pipe has no half-close: closes it once flushed
    ///     let mut got = Vec::new();
    ///     rd.read_to_end(&mut got).await?;
    ///     assert_eq!(got, b"one two");
    ///     while !done.get() {
    ///         evloop::task::yield_now().await; // connection_lost is scheduled with call_soon
    ///     }
    ///     Ok::<(), Box<dyn std::error::Error>>(())
    /// })??;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[track_caller]
    pub fn connect_write_pipe<P: Protocol>(&self, protocol: P, pipe: impl Into<WritePipe>) -> io::Result<Transport> {
        let site = Location::caller();
        self.check_pipe_op("connect_write_pipe")?;
        let (fd, io) = match pipe.into() {
            WritePipe::Writer(w) => w.into_registered(self)?,
            WritePipe::Fd(fd) => register(self, fd, "connect_write_pipe")?.into_parts(),
        };
        hold_sigpipe_block(&self.inner);
        Transport::start_pipe(&self.inner, fd, io, Box::new(protocol), site, TransportKind::WritePipe)
    }

    fn check_pipe_op(&self, op: &'static str) -> io::Result<()> {
        if self.is_closed() {
            return Err(LoopError::new(LoopErrorKind::Closed, op).into());
        }
        Ok(())
    }
}
