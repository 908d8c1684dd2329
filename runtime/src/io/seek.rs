//! Seeking: tokio's [`AsyncSeek`] (a seek is started, then polled to completion) with its
//! helpers ([`AsyncSeekExt`]: `seek`, `rewind`, `stream_position`), and the impls for
//! `std::io::Cursor`, references and boxes, and the buffered adapters.
//!
//! A [`BufReader`] that seeks drops its buffer, and a relative seek counts from the position
//! the caller has read up to, not from the inner reader's (which is ahead by what is
//! buffered): `SeekFrom::Current(n)` becomes `Current(n - buffered)` on the inner reader, or two
//! seeks when that subtraction overflows (tokio's rule). A [`BufWriter`] writes its buffer out
//! before it seeks. Both keep where their seek is in a small state (`SeekState`), since
//! `start_seek` cannot wait and `poll_complete` may be polled several times.

use std::future::poll_fn;
use std::io::{self, Cursor, SeekFrom};
use std::pin::Pin;
use std::task::{Context, Poll, ready};

use crate::io::{AsyncRead, AsyncWrite, BufReader, BufStream, BufWriter};

/// Seeking in a stream asynchronously (tokio's `AsyncSeek`): [`start_seek`](Self::start_seek)
/// asks for a position, [`poll_complete`](Self::poll_complete) waits for it to be reached.
///
/// ```
/// use std::io::{Cursor, SeekFrom};
/// use evloop::io::{AsyncReadExt, AsyncSeekExt};
///
/// evloop::run(async {
///     let mut cursor = Cursor::new(b"0123456789".to_vec());
///     assert_eq!(cursor.seek(SeekFrom::End(-3)).await?, 7);
///     let mut tail = String::new();
///     cursor.read_to_string(&mut tail).await?;
///     assert_eq!(tail, "789");
///     Ok::<(), std::io::Error>(())
/// })??;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub trait AsyncSeek {
    /// Starts a seek to `position`; an error if one is already in progress or the position
    /// is invalid. Complete it with [`poll_complete`](Self::poll_complete).
    ///
    /// ```
    /// use std::future::poll_fn;
    /// use std::io::{Cursor, SeekFrom};
    /// use std::pin::Pin;
    /// use evloop::io::AsyncSeek;
    ///
    /// evloop::run(async {
    ///     let mut cursor = Cursor::new(vec![0u8; 8]);
    ///     Pin::new(&mut cursor).start_seek(SeekFrom::Start(5))?;
    ///     assert_eq!(poll_fn(|cx| Pin::new(&mut cursor).poll_complete(cx)).await?, 5);
    ///     Ok::<(), std::io::Error>(())
    /// })??;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    fn start_seek(self: Pin<&mut Self>, position: SeekFrom) -> io::Result<()>;

    /// Waits for the seek in progress and returns the new position from the start of the
    /// stream. Without one in progress it returns at once (tokio's rule: call it before
    /// `start_seek` to finish an earlier seek; its value then is not meaningful for every type).
    ///
    /// ```
    /// use std::future::poll_fn;
    /// use std::io::{Cursor, SeekFrom};
    /// use std::pin::Pin;
    /// use evloop::io::AsyncSeek;
    ///
    /// evloop::run(async {
    ///     let mut cursor = Cursor::new(vec![0u8; 8]);
    ///     Pin::new(&mut cursor).start_seek(SeekFrom::End(-1))?;
    ///     assert_eq!(poll_fn(|cx| Pin::new(&mut cursor).poll_complete(cx)).await?, 7);
    ///     Ok::<(), std::io::Error>(())
    /// })??;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    fn poll_complete(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<u64>>;
}

/// The async helpers every seekable stream gets (tokio's `AsyncSeekExt`).
///
/// ```
/// use std::io::Cursor;
/// use evloop::io::{AsyncReadExt, AsyncSeekExt};
///
/// evloop::run(async {
///     let mut cursor = Cursor::new(b"again".to_vec());
///     let mut first = String::new();
///     cursor.read_to_string(&mut first).await?;
///     cursor.rewind().await?;
///     let mut second = String::new();
///     cursor.read_to_string(&mut second).await?;
///     assert_eq!(first, second);
///     Ok::<(), std::io::Error>(())
/// })??;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
// Single-threaded runtime: the futures of these methods need not be `Send`.
#[allow(async_fn_in_trait)]
pub trait AsyncSeekExt: AsyncSeek + Unpin {
    /// Seeks to `position`; returns the new position from the start. An earlier seek still in
    /// progress is completed first.
    ///
    /// ```
    /// use std::io::{Cursor, SeekFrom};
    /// use evloop::io::AsyncSeekExt;
    ///
    /// evloop::run(async {
    ///     let mut cursor = Cursor::new(vec![0u8; 10]);
    ///     assert_eq!(cursor.seek(SeekFrom::Start(4)).await?, 4);
    ///     assert_eq!(cursor.seek(SeekFrom::Current(-1)).await?, 3);
    ///     assert!(cursor.seek(SeekFrom::Current(-4)).await.is_err()); // before the start
    ///     Ok::<(), std::io::Error>(())
    /// })??;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    async fn seek(&mut self, position: SeekFrom) -> io::Result<u64> {
        poll_fn(|cx| Pin::new(&mut *self).poll_complete(cx)).await?;
        Pin::new(&mut *self).start_seek(position)?;
        poll_fn(|cx| Pin::new(&mut *self).poll_complete(cx)).await
    }

    /// Seeks back to the start.
    ///
    /// ```
    /// use std::io::Cursor;
    /// use evloop::io::{AsyncReadExt, AsyncSeekExt};
    ///
    /// evloop::run(async {
    ///     let mut cursor = Cursor::new(b"ab".to_vec());
    ///     assert_eq!(cursor.read_u8().await?, b'a');
    ///     cursor.rewind().await?;
    ///     assert_eq!(cursor.read_u8().await?, b'a');
    ///     Ok::<(), std::io::Error>(())
    /// })??;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    async fn rewind(&mut self) -> io::Result<()> {
        self.seek(SeekFrom::Start(0)).await.map(drop)
    }

    /// The current position from the start (a seek by 0 from here).
    ///
    /// ```
    /// use std::io::Cursor;
    /// use evloop::io::{AsyncReadExt, AsyncSeekExt, BufReader};
    ///
    /// evloop::run(async {
    ///     let mut r = BufReader::new(Cursor::new(b"0123456789".to_vec()));
    ///     r.read_exact(&mut [0; 3]).await?; // the BufReader read all 10 bytes into its buffer
    ///     assert_eq!(r.stream_position().await?, 3); // where the caller is, not the inner reader
    ///     Ok::<(), std::io::Error>(())
    /// })??;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    async fn stream_position(&mut self) -> io::Result<u64> {
        self.seek(SeekFrom::Current(0)).await
    }
}

impl<S: AsyncSeek + Unpin + ?Sized> AsyncSeekExt for S {}

impl<S: AsyncSeek + Unpin + ?Sized> AsyncSeek for &mut S {
    fn start_seek(self: Pin<&mut Self>, position: SeekFrom) -> io::Result<()> {
        Pin::new(&mut **self.get_mut()).start_seek(position)
    }

    fn poll_complete(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<u64>> {
        Pin::new(&mut **self.get_mut()).poll_complete(cx)
    }
}

impl<S: AsyncSeek + Unpin + ?Sized> AsyncSeek for Box<S> {
    fn start_seek(self: Pin<&mut Self>, position: SeekFrom) -> io::Result<()> {
        Pin::new(&mut **self.get_mut()).start_seek(position)
    }

    fn poll_complete(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<u64>> {
        Pin::new(&mut **self.get_mut()).poll_complete(cx)
    }
}

impl<T: AsRef<[u8]> + Unpin> AsyncSeek for Cursor<T> {
    fn start_seek(self: Pin<&mut Self>, position: SeekFrom) -> io::Result<()> {
        io::Seek::seek(self.get_mut(), position).map(drop)
    }

    fn poll_complete(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<u64>> {
        Poll::Ready(Ok(self.get_mut().position()))
    }
}

// ---------------------------------------------------------------------------------------------
// The buffered adapters.

/// Where a buffered adapter's seek is.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) enum SeekState {
    /// No seek asked for.
    #[default]
    Init,
    /// `start_seek` was called; the inner stream has not been told yet.
    Start(SeekFrom),
    /// `BufReader` only: the first of two relative seeks (the buffered bytes back, then `n`) is
    /// in progress.
    PendingOverflowed(i64),
    /// The inner stream is seeking.
    Pending,
}

impl<R: AsyncRead + AsyncSeek + Unpin> AsyncSeek for BufReader<R> {
    fn start_seek(self: Pin<&mut Self>, position: SeekFrom) -> io::Result<()> {
        self.get_mut().seek_state = SeekState::Start(position);
        Ok(())
    }

    fn poll_complete(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<u64>> {
        let this = self.get_mut();
        let buffered = i64::try_from(this.filled - this.pos).unwrap_or(i64::MAX);
        let step = match std::mem::take(&mut this.seek_state) {
            // tokio's answer without a seek: nothing was asked, so no position is promised.
            SeekState::Init => return Poll::Ready(Ok(0)),
            SeekState::Start(SeekFrom::Current(n)) => match n.checked_sub(buffered) {
                Some(offset) => {
                    Pin::new(&mut this.inner).start_seek(SeekFrom::Current(offset))?;
                    Pin::new(&mut this.inner).poll_complete(cx)?
                }
                None => {
                    // `n - buffered` overflows: seek back over the buffered bytes, then by `n`.
                    Pin::new(&mut this.inner).start_seek(SeekFrom::Current(-buffered))?;
                    this.seek_state = SeekState::PendingOverflowed(n);
                    return Pin::new(this).poll_complete(cx);
                }
            },
            SeekState::PendingOverflowed(n) => {
                if Pin::new(&mut this.inner).poll_complete(cx)?.is_pending() {
                    this.seek_state = SeekState::PendingOverflowed(n);
                    return Poll::Pending;
                }
                this.discard_buffer();
                Pin::new(&mut this.inner).start_seek(SeekFrom::Current(n))?;
                Pin::new(&mut this.inner).poll_complete(cx)?
            }
            SeekState::Start(position) => {
                Pin::new(&mut this.inner).start_seek(position)?;
                Pin::new(&mut this.inner).poll_complete(cx)?
            }
            SeekState::Pending => Pin::new(&mut this.inner).poll_complete(cx)?,
        };
        match step {
            Poll::Ready(position) => {
                this.discard_buffer();
                Poll::Ready(Ok(position))
            }
            Poll::Pending => {
                this.seek_state = SeekState::Pending;
                Poll::Pending
            }
        }
    }
}

impl<W: AsyncWrite + AsyncSeek + Unpin> AsyncSeek for BufWriter<W> {
    fn start_seek(self: Pin<&mut Self>, position: SeekFrom) -> io::Result<()> {
        // The buffer must be written out first, which may wait: `poll_complete` does it.
        self.get_mut().seek_state = SeekState::Start(position);
        Ok(())
    }

    fn poll_complete(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<u64>> {
        let this = self.get_mut();
        ready!(this.poll_flush_buf(cx))?;
        if let SeekState::Start(position) = this.seek_state {
            // An earlier seek of the inner writer finishes before this one starts.
            ready!(Pin::new(&mut this.inner).poll_complete(cx))?;
            if let Err(e) = Pin::new(&mut this.inner).start_seek(position) {
                this.seek_state = SeekState::Init;
                return Poll::Ready(Err(e));
            }
        }
        match Pin::new(&mut this.inner).poll_complete(cx) {
            Poll::Ready(r) => {
                this.seek_state = SeekState::Init;
                Poll::Ready(r)
            }
            Poll::Pending => {
                this.seek_state = SeekState::Pending;
                Poll::Pending
            }
        }
    }
}

impl<S: AsyncRead + AsyncWrite + AsyncSeek + Unpin> AsyncSeek for BufStream<S> {
    fn start_seek(self: Pin<&mut Self>, position: SeekFrom) -> io::Result<()> {
        Pin::new(&mut self.get_mut().inner).start_seek(position)
    }

    fn poll_complete(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<u64>> {
        Pin::new(&mut self.get_mut().inner).poll_complete(cx)
    }
}
