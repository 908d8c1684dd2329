//! [`HyperIo`]: an evloop stream under hyper's own I/O traits (`hyper::rt::Read`/`Write`).
//!
//! Writes pass straight through. A read goes through a per-thread scratch buffer and is copied
//! into hyper's cursor: hyper hands out its buffer as uninitialised memory, which only
//! code outside safe Rust may read into, and this crate forbids such code; the copy is of the bytes one `read` returned,
//! into memory hyper has just touched.

use std::cell::RefCell;
use std::io::{self, IoSlice};
use std::pin::Pin;
use std::task::{Context, Poll, ready};

use evloop::io::{AsyncRead, AsyncWrite};

/// The largest single read: hyper's adaptive read buffer starts at 8 KiB and grows while reads
/// fill it; 64 KiB keeps a bulk transfer to few syscalls.
const SCRATCH: usize = 64 * 1024;

thread_local! {
    // One per thread, not per connection: it holds bytes only between one `read` and the copy
    // right after it, so the thousands of idle connections of a server cost nothing here.
    static SCRATCH_BUF: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
}

pin_project_lite::pin_project! {
    /// An evloop stream (anything with evloop's `AsyncRead` and/or `AsyncWrite`) as hyper's
    /// `hyper::rt::Read` + `hyper::rt::Write`, ready for `serve_connection` or `handshake`.
    ///
    /// ```
    /// use evloop::net::UnixStream;
    /// use evloop_hyper::HyperIo;
    ///
    /// fn needs_hyper_io<T: hyper::rt::Read + hyper::rt::Write + Unpin>(_: T) {}
    ///
    /// evloop::run(async {
    ///     let (a, _b) = UnixStream::pair()?;
    ///     needs_hyper_io(HyperIo::new(a));
    ///     Ok::<(), std::io::Error>(())
    /// })??;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[derive(Debug)]
    pub struct HyperIo<T> {
        #[pin]
        inner: T,
        vectored: bool,
    }
}

impl<T> HyperIo<T> {
    /// Wraps `inner`, telling hyper that its vectored writes write every buffer (true of
    /// evloop's sockets: one `sendmsg`). For a type that keeps evloop's default
    /// `poll_write_vectored` (the first non-empty buffer only), call
    /// [`set_write_vectored(false)`](HyperIo::set_write_vectored).
    ///
    /// ```
    /// use hyper::rt::Write;
    /// let io = evloop_hyper::HyperIo::new(Vec::<u8>::new());
    /// assert!(io.is_write_vectored());
    /// ```
    pub fn new(inner: T) -> HyperIo<T> {
        HyperIo { inner, vectored: true }
    }

    /// Whether hyper may hand several buffers to one write (it flattens them into one buffer
    /// otherwise).
    ///
    /// ```
    /// use hyper::rt::Write;
    /// let mut io = evloop_hyper::HyperIo::new(Vec::<u8>::new());
    /// io.set_write_vectored(false);
    /// assert!(!io.is_write_vectored());
    /// ```
    pub fn set_write_vectored(&mut self, on: bool) {
        self.vectored = on;
    }

    /// The stream inside.
    ///
    /// ```
    /// let io = evloop_hyper::HyperIo::new(vec![1u8]);
    /// assert_eq!(io.get_ref(), &[1]);
    /// ```
    pub fn get_ref(&self) -> &T {
        &self.inner
    }

    /// The stream inside, mutably.
    ///
    /// ```
    /// let mut io = evloop_hyper::HyperIo::new(vec![1u8]);
    /// io.get_mut().push(2);
    /// assert_eq!(io.get_ref(), &[1, 2]);
    /// ```
    pub fn get_mut(&mut self) -> &mut T {
        &mut self.inner
    }

    /// Unwraps the stream (after an HTTP upgrade, for example).
    ///
    /// ```
    /// let io = evloop_hyper::HyperIo::new(vec![3u8]);
    /// assert_eq!(io.into_inner(), vec![3]);
    /// ```
    pub fn into_inner(self) -> T {
        self.inner
    }
}

impl<T: AsyncRead> hyper::rt::Read for HyperIo<T> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        mut buf: hyper::rt::ReadBufCursor<'_>,
    ) -> Poll<io::Result<()>> {
        let want = buf.remaining().min(SCRATCH);
        let inner = self.project().inner;
        SCRATCH_BUF.with(|scratch| {
            // A reader that re-enters hyper's read on this thread (none does) would find the
            // buffer borrowed: it gets a fresh one instead of a panic.
            let mut own = Vec::new();
            let mut guard = scratch.try_borrow_mut();
            let scratch = match guard.as_deref_mut() {
                Ok(s) => s,
                Err(_) => &mut own,
            };
            if scratch.len() < want {
                scratch.resize(want, 0);
            }
            let n = ready!(inner.poll_read(cx, &mut scratch[..want]))?;
            buf.put_slice(&scratch[..n]);
            Poll::Ready(Ok(()))
        })
    }
}

impl<T: AsyncWrite> hyper::rt::Write for HyperIo<T> {
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        self.project().inner.poll_write(cx, buf)
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.project().inner.poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.project().inner.poll_shutdown(cx)
    }

    fn is_write_vectored(&self) -> bool {
        self.vectored
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        self.project().inner.poll_write_vectored(cx, bufs)
    }
}
