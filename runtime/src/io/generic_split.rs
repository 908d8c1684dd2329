//! [`split`]: the two halves of any stream (tokio's `tokio::io::split`), for types without a
//! split of their own (a `BufStream`, a `DuplexStream`, a TLS stream); TCP and Unix streams have
//! cheaper ones (`TcpStream::split` / `into_split`, which share the socket without a lock).
//!
//! Both halves hold the stream behind one `Arc<Mutex<..>>`: a read locks it for one
//! `poll_read`, a write for one `poll_write`, so the halves may live in different tasks (or, for
//! a `Send` stream, on different threads' loops) and each keeps its own waker in the stream
//! (one reader and one writer waiting, as on a socket). [`ReadHalf::unsplit`] puts the pair
//! back together.

use std::io::{self, IoSlice};
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::task::{Context, Poll};

use crate::io::{AsyncRead, AsyncWrite};

/// Splits `stream` into a read half and a write half that can go to different tasks (tokio's
/// `io::split`); [`ReadHalf::unsplit`] joins them again. The stream must be `Unpin` (box and
/// pin anything else).
///
/// ```
/// use evloop::io::{AsyncReadExt, AsyncWriteExt};
///
/// evloop::run(async {
///     let (a, mut b) = evloop::io::duplex(64);
///     let (mut rd, mut wr) = evloop::io::split(a);
///     let writer = evloop::spawn(async move { wr.write_all(b"from a task").await });
///     let mut got = [0; 11];
///     b.read_exact(&mut got).await?;
///     writer.await??;
///     b.write_all(b"back").await?;
///     let mut back = [0; 4];
///     rd.read_exact(&mut back).await?;
///     assert_eq!((&got, &back), (b"from a task", b"back"));
///     Ok::<(), Box<dyn std::error::Error>>(())
/// })??;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn split<T: AsyncRead + AsyncWrite>(stream: T) -> (ReadHalf<T>, WriteHalf<T>) {
    let inner = Arc::new(Mutex::new(stream));
    (ReadHalf { inner: inner.clone() }, WriteHalf { inner })
}

/// The reading half of [`split`].
///
/// ```
/// use evloop::io::AsyncReadExt;
///
/// evloop::run(async {
///     let (mut rd, _wr) = evloop::io::split(std::io::Cursor::new(b"abc".to_vec()));
///     let mut all = Vec::new();
///     rd.read_to_end(&mut all).await?;
///     assert_eq!(all, b"abc");
///     Ok::<(), std::io::Error>(())
/// })??;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub struct ReadHalf<T> {
    inner: Arc<Mutex<T>>,
}

/// The writing half of [`split`].
///
/// ```
/// use evloop::io::AsyncWriteExt;
///
/// evloop::run(async {
///     let (rd, mut wr) = evloop::io::split(std::io::Cursor::new(Vec::new()));
///     wr.write_all(b"abc").await?;
///     assert_eq!(rd.unsplit(wr).into_inner(), b"abc");
///     Ok::<(), std::io::Error>(())
/// })??;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub struct WriteHalf<T> {
    inner: Arc<Mutex<T>>,
}

/// The stream's lock; a panic in another half's poll leaves the stream as usable as the
/// panicking call left it, which is all a caller could hope for.
fn lock<T>(inner: &Mutex<T>) -> MutexGuard<'_, T> {
    inner.lock().unwrap_or_else(PoisonError::into_inner)
}

impl<T> ReadHalf<T> {
    /// Whether `other` is the write half split from the same stream.
    ///
    /// ```
    /// let (rd, wr) = evloop::io::split(std::io::Cursor::new(Vec::new()));
    /// let (_rd2, wr2) = evloop::io::split(std::io::Cursor::new(Vec::new()));
    /// assert!(rd.is_pair_of(&wr) && !rd.is_pair_of(&wr2));
    /// ```
    pub fn is_pair_of(&self, other: &WriteHalf<T>) -> bool {
        Arc::ptr_eq(&self.inner, &other.inner)
    }

    /// The stream back from its two halves (tokio's `unsplit`).
    ///
    /// # Panics
    /// If `wr` was split from another stream.
    ///
    /// ```
    /// use evloop::io::{AsyncReadExt, AsyncWriteExt};
    ///
    /// evloop::run(async {
    ///     let (a, mut b) = evloop::io::duplex(64);
    ///     let (rd, wr) = evloop::io::split(a);
    ///     let mut a = rd.unsplit(wr); // the DuplexStream again
    ///     a.write_all(b"whole").await?;
    ///     let mut got = [0; 5];
    ///     b.read_exact(&mut got).await?;
    ///     assert_eq!(&got, b"whole");
    ///     Ok::<(), std::io::Error>(())
    /// })??;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[track_caller]
    pub fn unsplit(self, wr: WriteHalf<T>) -> T
    where
        T: Unpin,
    {
        assert!(
            self.is_pair_of(&wr),
            "Unrelated `WriteHalf` passed to `ReadHalf::unsplit`"
        );
        drop(wr);
        match Arc::try_unwrap(self.inner) {
            Ok(mutex) => mutex.into_inner().unwrap_or_else(PoisonError::into_inner),
            Err(_) => unreachable!("both halves were given, so no other reference is left"),
        }
    }
}

impl<T> WriteHalf<T> {
    /// Whether `other` is the read half split from the same stream.
    ///
    /// ```
    /// let (rd, wr) = evloop::io::split(std::io::Cursor::new(Vec::new()));
    /// assert!(wr.is_pair_of(&rd));
    /// ```
    pub fn is_pair_of(&self, other: &ReadHalf<T>) -> bool {
        Arc::ptr_eq(&self.inner, &other.inner)
    }
}

impl<T: AsyncRead + Unpin> AsyncRead for ReadHalf<T> {
    fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut [u8]) -> Poll<io::Result<usize>> {
        Pin::new(&mut *lock(&self.inner)).poll_read(cx, buf)
    }
}

impl<T: AsyncWrite + Unpin> AsyncWrite for WriteHalf<T> {
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        Pin::new(&mut *lock(&self.inner)).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut *lock(&self.inner)).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        lock(&self.inner).is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut *lock(&self.inner)).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut *lock(&self.inner)).poll_shutdown(cx)
    }
}
