//! tokio's readiness API on the connected streams: wait until the socket is readable or
//! writable (`readable`, `writable`), then try one non-blocking call (`try_read`, `try_write`)
//! that never waits and says `WouldBlock` when it would have to.
//!
//! Data flow: each call goes to the stream's [`AsyncFd`](crate::io::AsyncFd) (the socket's
//! registration with the loop). `readable`/`writable` wait on its readiness bits; the `try_*`
//! calls check those bits first (no system call when the socket is not known to be ready, as
//! tokio does) and clear them when the kernel answers `EAGAIN`, so the next `readable` waits for
//! the next edge. A readiness wait can end spuriously: the `try_*` after it may still say
//! `WouldBlock`, and the caller loops, as with tokio.

use std::io;
use std::os::fd::AsFd;

use evloop_syscalls as sys;

use crate::io::Interest;
use crate::io::net::{Socket, TcpStream, UnixStream};

/// One non-blocking call on `sock` if it is known to be ready for `interest`, with the
/// operation and fd named in a real error (as every evloop I/O error is).
pub(super) fn attempt<R>(
    sock: &Socket,
    interest: Interest,
    op: &str,
    call: impl FnOnce(std::os::fd::BorrowedFd<'_>) -> io::Result<R>,
) -> io::Result<R> {
    let fd = sock.async_fd();
    fd.try_io(interest, |owned| call(owned.as_fd())).map_err(|e| {
        if e.kind() == io::ErrorKind::WouldBlock {
            e
        } else {
            crate::io::error::with_context(format!("{op}(fd {})", fd.as_raw_fd()), e)
        }
    })
}

impl TcpStream {
    /// Waits until the socket is readable (data, end of file or an error to read): tokio's
    /// `readable`. The wake-up may be spurious; pair it with [`try_read`](Self::try_read).
    ///
    /// ```
    /// use evloop::io::AsyncWriteExt;
    /// use evloop::net::{TcpListener, TcpStream};
    ///
    /// evloop::run(async {
    ///     let listener = TcpListener::bind("127.0.0.1:0").await?;
    ///     let mut client = TcpStream::connect(listener.local_addr()?).await?;
    ///     let (server, _) = listener.accept().await?;
    ///     client.write_all(b"ping").await?;
    ///     let mut buf = [0; 16];
    ///     let n = loop {
    ///         server.readable().await?;
    ///         match server.try_read(&mut buf) {
    ///             Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => continue,
    ///             other => break other?,
    ///         }
    ///     };
    ///     assert_eq!(&buf[..n], b"ping");
    ///     Ok::<(), std::io::Error>(())
    /// })??;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub async fn readable(&self) -> io::Result<()> {
        self.socket().async_fd().wait(Interest::Read).await
    }

    /// Waits until the socket is writable (room in the send buffer, or an error): tokio's
    /// `writable`. Pair it with [`try_write`](Self::try_write).
    ///
    /// ```
    /// use evloop::net::{TcpListener, TcpStream};
    ///
    /// evloop::run(async {
    ///     let listener = TcpListener::bind("127.0.0.1:0").await?;
    ///     let client = TcpStream::connect(listener.local_addr()?).await?;
    ///     client.writable().await?; // an empty send buffer
    ///     assert_eq!(client.try_write(b"hi")?, 2);
    ///     Ok::<(), std::io::Error>(())
    /// })??;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub async fn writable(&self) -> io::Result<()> {
        self.socket().async_fd().wait(Interest::Write).await
    }

    /// Reads what is there without waiting (one `recv`): the count (0 at end of file), or
    /// `WouldBlock` when nothing is (or the socket is not known to be readable yet). tokio's
    /// `try_read`.
    ///
    /// ```
    /// use evloop::net::{TcpListener, TcpStream};
    ///
    /// evloop::run(async {
    ///     let listener = TcpListener::bind("127.0.0.1:0").await?;
    ///     let client = TcpStream::connect(listener.local_addr()?).await?;
    ///     let err = client.try_read(&mut [0; 8]).unwrap_err(); // nothing sent
    ///     assert_eq!(err.kind(), std::io::ErrorKind::WouldBlock);
    ///     Ok::<(), std::io::Error>(())
    /// })??;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn try_read(&self, buf: &mut [u8]) -> io::Result<usize> {
        attempt(self.socket(), Interest::Read, "recv", |fd| sys::recv(fd, buf))
    }

    /// Writes what fits without waiting (one `send`, `MSG_NOSIGNAL`): the count, or
    /// `WouldBlock` when the send buffer is full (or the socket is not known to be writable
    /// yet). tokio's `try_write`.
    ///
    /// ```
    /// use evloop::io::AsyncReadExt;
    /// use evloop::net::{TcpListener, TcpStream};
    ///
    /// evloop::run(async {
    ///     let listener = TcpListener::bind("127.0.0.1:0").await?;
    ///     let client = TcpStream::connect(listener.local_addr()?).await?;
    ///     let (mut server, _) = listener.accept().await?;
    ///     client.writable().await?;
    ///     assert_eq!(client.try_write(b"abc")?, 3);
    ///     let mut buf = [0; 3];
    ///     server.read_exact(&mut buf).await?;
    ///     assert_eq!(&buf, b"abc");
    ///     Ok::<(), std::io::Error>(())
    /// })??;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn try_write(&self, buf: &[u8]) -> io::Result<usize> {
        attempt(self.socket(), Interest::Write, "send", |fd| sys::send(fd, buf))
    }
}

impl UnixStream {
    /// Waits until the socket is readable: as [`TcpStream::readable`].
    ///
    /// ```
    /// use evloop::net::UnixStream;
    ///
    /// evloop::run(async {
    ///     let (a, b) = UnixStream::pair()?;
    ///     b.writable().await?;
    ///     b.try_write(b"x")?;
    ///     a.readable().await?;
    ///     assert_eq!(a.try_read(&mut [0; 4])?, 1);
    ///     Ok::<(), std::io::Error>(())
    /// })??;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub async fn readable(&self) -> io::Result<()> {
        self.socket().async_fd().wait(Interest::Read).await
    }

    /// Waits until the socket is writable: as [`TcpStream::writable`].
    ///
    /// ```
    /// use evloop::net::UnixStream;
    ///
    /// evloop::run(async {
    ///     let (a, _b) = UnixStream::pair()?;
    ///     a.writable().await?;
    ///     assert_eq!(a.try_write(b"hi")?, 2);
    ///     Ok::<(), std::io::Error>(())
    /// })??;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub async fn writable(&self) -> io::Result<()> {
        self.socket().async_fd().wait(Interest::Write).await
    }

    /// Reads without waiting: as [`TcpStream::try_read`].
    ///
    /// ```
    /// use evloop::net::UnixStream;
    ///
    /// evloop::run(async {
    ///     let (a, _b) = UnixStream::pair()?;
    ///     let err = a.try_read(&mut [0; 4]).unwrap_err();
    ///     assert_eq!(err.kind(), std::io::ErrorKind::WouldBlock);
    ///     Ok::<(), std::io::Error>(())
    /// })??;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn try_read(&self, buf: &mut [u8]) -> io::Result<usize> {
        attempt(self.socket(), Interest::Read, "recv", |fd| sys::recv(fd, buf))
    }

    /// Writes without waiting: as [`TcpStream::try_write`].
    ///
    /// ```
    /// use evloop::net::UnixStream;
    ///
    /// evloop::run(async {
    ///     let (a, b) = UnixStream::pair()?;
    ///     a.writable().await?;
    ///     assert_eq!(a.try_write(b"yes")?, 3);
    ///     b.readable().await?;
    ///     assert_eq!(b.try_read(&mut [0; 8])?, 3);
    ///     Ok::<(), std::io::Error>(())
    /// })??;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn try_write(&self, buf: &[u8]) -> io::Result<usize> {
        attempt(self.socket(), Interest::Write, "send", |fd| sys::send(fd, buf))
    }
}
