//! The I/O layer's sources as streams (tokio-stream's `wrappers`): [`LinesStream`] and
//! [`SplitStream`] over a buffered reader's lines and segments (polled directly through their
//! `poll_next_*`), and [`TcpListenerStream`] / [`UnixListenerStream`] of accepted connections
//! (awaited through the task layer's `OwnedPoll`, which owns the listener between accepts).

use std::fmt;
use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};

use crate::io::buf::{AsyncBufRead, Lines, Split};
use crate::io::net::{TcpListener, TcpStream, UnixListener, UnixStream};
use crate::task::stream::Stream;
use crate::task::stream::owned::OwnedPoll;

/// The lines of a [`Lines`](crate::io::Lines) as a stream of `io::Result<String>`
/// (tokio-stream's `LinesStream`).
///
/// ```
/// use evloop::io::{AsyncBufReadExt, BufReader};
/// use evloop::stream::{StreamExt, wrappers::LinesStream};
///
/// evloop::run(async {
///     let lines = LinesStream::new(BufReader::new(&b"a\nb\n"[..]).lines());
///     let v: Vec<String> = lines.map(Result::unwrap).collect().await;
///     assert_eq!(v, ["a", "b"]);
/// })?;
/// # Ok::<(), evloop::task::RunError>(())
/// ```
#[must_use = "streams do nothing unless polled"]
#[derive(Debug)]
pub struct LinesStream<R> {
    inner: Lines<R>,
}

impl<R> LinesStream<R> {
    /// Wraps `lines`.
    ///
    /// ```
    /// use evloop::io::{AsyncBufReadExt, BufReader};
    ///
    /// let _s = evloop::stream::wrappers::LinesStream::new(BufReader::new(&b""[..]).lines());
    /// ```
    pub fn new(lines: Lines<R>) -> Self {
        LinesStream { inner: lines }
    }

    /// The `Lines` back.
    ///
    /// ```
    /// use evloop::io::{AsyncBufReadExt, BufReader};
    ///
    /// let s = evloop::stream::wrappers::LinesStream::new(BufReader::new(&b""[..]).lines());
    /// let _lines = s.into_inner();
    /// ```
    pub fn into_inner(self) -> Lines<R> {
        self.inner
    }
}

impl<R> Unpin for LinesStream<R> {}

impl<R: AsyncBufRead + Unpin> Stream for LinesStream<R> {
    type Item = io::Result<String>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<io::Result<String>>> {
        self.inner.poll_next_line(cx).map(Result::transpose)
    }
}

/// The segments of a [`Split`](crate::io::Split) as a stream of `io::Result<Vec<u8>>`
/// (tokio-stream's `SplitStream`).
///
/// ```
/// use evloop::io::{AsyncBufReadExt, BufReader};
/// use evloop::stream::{StreamExt, wrappers::SplitStream};
///
/// evloop::run(async {
///     let parts = SplitStream::new(BufReader::new(&b"a,b"[..]).split(b','));
///     let v: Vec<Vec<u8>> = parts.map(Result::unwrap).collect().await;
///     assert_eq!(v, [b"a".to_vec(), b"b".to_vec()]);
/// })?;
/// # Ok::<(), evloop::task::RunError>(())
/// ```
#[must_use = "streams do nothing unless polled"]
#[derive(Debug)]
pub struct SplitStream<R> {
    inner: Split<R>,
}

impl<R> SplitStream<R> {
    /// Wraps `split`.
    ///
    /// ```
    /// use evloop::io::{AsyncBufReadExt, BufReader};
    ///
    /// let _s = evloop::stream::wrappers::SplitStream::new(BufReader::new(&b""[..]).split(b','));
    /// ```
    pub fn new(split: Split<R>) -> Self {
        SplitStream { inner: split }
    }

    /// The `Split` back.
    ///
    /// ```
    /// use evloop::io::{AsyncBufReadExt, BufReader};
    ///
    /// let s = evloop::stream::wrappers::SplitStream::new(BufReader::new(&b""[..]).split(b','));
    /// let _split = s.into_inner();
    /// ```
    pub fn into_inner(self) -> Split<R> {
        self.inner
    }
}

impl<R> Unpin for SplitStream<R> {}

impl<R: AsyncBufRead + Unpin> Stream for SplitStream<R> {
    type Item = io::Result<Vec<u8>>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<io::Result<Vec<u8>>>> {
        self.inner.poll_next_segment(cx).map(Result::transpose)
    }
}

/// The connections a [`TcpListener`](crate::net::TcpListener) accepts, as a stream that never
/// ends (tokio-stream's `TcpListenerStream`).
///
/// ```
/// use evloop::net::{TcpListener, TcpStream};
/// use evloop::stream::{StreamExt, wrappers::TcpListenerStream};
///
/// evloop::run(async {
///     let listener = TcpListener::bind("127.0.0.1:0").await?;
///     let addr = listener.local_addr()?;
///     let mut incoming = TcpListenerStream::new(listener);
///     let _client = TcpStream::connect(addr).await?;
///     let conn = incoming.next().await.expect("never ends")?;
///     assert_eq!(conn.local_addr()?, addr);
///     Ok::<(), std::io::Error>(())
/// })??;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[must_use = "streams do nothing unless polled"]
pub struct TcpListenerStream {
    inner: OwnedPoll<TcpListener, io::Result<TcpStream>>,
}

impl TcpListenerStream {
    /// Wraps `listener`.
    ///
    /// ```
    /// evloop::run(async {
    ///     let l = evloop::net::TcpListener::bind("127.0.0.1:0").await?;
    ///     let _s = evloop::stream::wrappers::TcpListenerStream::new(l);
    ///     Ok::<(), std::io::Error>(())
    /// })??;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn new(listener: TcpListener) -> Self {
        TcpListenerStream {
            inner: OwnedPoll::new(listener, |l| {
                Box::pin(async move {
                    let r = l.accept().await.map(|(s, _)| s);
                    (r, l)
                })
            }),
        }
    }

    /// The listener back; `None` if dropped while an accept was pending.
    ///
    /// ```
    /// evloop::run(async {
    ///     let l = evloop::net::TcpListener::bind("127.0.0.1:0").await?;
    ///     assert!(evloop::stream::wrappers::TcpListenerStream::new(l).into_inner().is_some());
    ///     Ok::<(), std::io::Error>(())
    /// })??;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn into_inner(self) -> Option<TcpListener> {
        self.inner.into_source()
    }
}

impl Stream for TcpListenerStream {
    type Item = io::Result<TcpStream>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<io::Result<TcpStream>>> {
        self.inner.poll(cx).map(Some)
    }
}

impl fmt::Debug for TcpListenerStream {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TcpListenerStream")
            .field("listener", &self.inner.source())
            .finish()
    }
}

/// The connections a [`UnixListener`](crate::net::UnixListener) accepts, as a stream that never
/// ends (tokio-stream's `UnixListenerStream`).
///
/// ```
/// use evloop::net::{UnixAddr, UnixListener, UnixStream};
/// use evloop::stream::{StreamExt, wrappers::UnixListenerStream};
///
/// evloop::run(async {
///     let addr = UnixAddr::abstract_name(format!("evloop-uls-{}", std::process::id()).as_bytes())?;
///     let mut incoming = UnixListenerStream::new(UnixListener::bind(&addr)?);
///     let _client = UnixStream::connect(&addr).await?;
///     assert!(incoming.next().await.expect("never ends").is_ok());
///     Ok::<(), std::io::Error>(())
/// })??;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[must_use = "streams do nothing unless polled"]
pub struct UnixListenerStream {
    inner: OwnedPoll<UnixListener, io::Result<UnixStream>>,
}

impl UnixListenerStream {
    /// Wraps `listener`.
    ///
    /// ```
    /// evloop::run(async {
    ///     let addr = evloop::net::UnixAddr::abstract_name(format!("evloop-uls2-{}", std::process::id()).as_bytes())?;
    ///     let _s = evloop::stream::wrappers::UnixListenerStream::new(evloop::net::UnixListener::bind(&addr)?);
    ///     Ok::<(), std::io::Error>(())
    /// })??;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn new(listener: UnixListener) -> Self {
        UnixListenerStream {
            inner: OwnedPoll::new(listener, |l| {
                Box::pin(async move {
                    let r = l.accept().await.map(|(s, _)| s);
                    (r, l)
                })
            }),
        }
    }

    /// The listener back; `None` if dropped while an accept was pending.
    ///
    /// ```
    /// evloop::run(async {
    ///     let addr = evloop::net::UnixAddr::abstract_name(format!("evloop-uls3-{}", std::process::id()).as_bytes())?;
    ///     let s = evloop::stream::wrappers::UnixListenerStream::new(evloop::net::UnixListener::bind(&addr)?);
    ///     assert!(s.into_inner().is_some());
    ///     Ok::<(), std::io::Error>(())
    /// })??;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn into_inner(self) -> Option<UnixListener> {
        self.inner.into_source()
    }
}

impl Stream for UnixListenerStream {
    type Item = io::Result<UnixStream>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<io::Result<UnixStream>>> {
        self.inner.poll(cx).map(Some)
    }
}

impl fmt::Debug for UnixListenerStream {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("UnixListenerStream")
            .field("listener", &self.inner.source())
            .finish()
    }
}
