//! tokio's socket options that the typed sockets did not have: `SO_LINGER` with a timeout
//! (`set_linger`/`linger`, beside [`TcpStream::set_zero_linger`]) and `IP_TTL`
//! (`set_ttl`/`ttl`) on [`TcpStream`], [`TcpListener`] and [`UdpSocket`].
//!
//! Each method is one call of the syscall layer's wrapper on the socket's descriptor; the
//! options live in the kernel, so nothing is kept here.

use std::io;
use std::os::fd::AsFd;
use std::time::Duration;

use evloop_syscalls as sys;

use super::{TcpListener, TcpStream, UdpSocket};

impl TcpStream {
    /// Sets `SO_LINGER` (tokio's `set_linger`): `None` turns it off (the default: dropping the
    /// stream returns at once and the kernel sends what is left); `Some(Duration::ZERO)` makes
    /// the drop abort the connection with an RST, as [`set_zero_linger`](Self::set_zero_linger).
    ///
    /// A non-zero timeout makes the `close` that dropping the stream does *wait*, up to that
    /// long, until the unsent data is acknowledged, even though the socket is non-blocking: on
    /// the loop's thread that stalls every task for as long. tokio deprecated its `set_linger`
    /// for that reason; it is here so that code written for it ports, and `set_zero_linger` is
    /// the one to use.
    ///
    /// ```
    /// use std::time::Duration;
    /// use evloop::net::{TcpListener, TcpStream};
    ///
    /// evloop::run(async {
    ///     let listener = TcpListener::bind("127.0.0.1:0").await?;
    ///     let stream = TcpStream::connect(listener.local_addr()?).await?;
    ///     assert_eq!(stream.linger()?, None);
    ///     stream.set_linger(Some(Duration::ZERO))?;
    ///     assert_eq!(stream.linger()?, Some(Duration::ZERO));
    ///     stream.set_linger(None)?;
    ///     assert_eq!(stream.linger()?, None);
    ///     Ok::<(), std::io::Error>(())
    /// })??;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn set_linger(&self, linger: Option<Duration>) -> io::Result<()> {
        sys::set_linger(self.socket().as_fd(), linger)
    }

    /// `SO_LINGER`'s timeout, `None` when lingering is off (see [`set_linger`](Self::set_linger)).
    ///
    /// ```
    /// use evloop::net::{TcpListener, TcpStream};
    ///
    /// evloop::run(async {
    ///     let listener = TcpListener::bind("127.0.0.1:0").await?;
    ///     let stream = TcpStream::connect(listener.local_addr()?).await?;
    ///     stream.set_zero_linger()?;
    ///     assert_eq!(stream.linger()?, Some(std::time::Duration::ZERO));
    ///     Ok::<(), std::io::Error>(())
    /// })??;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn linger(&self) -> io::Result<Option<Duration>> {
        sys::linger(self.socket().as_fd())
    }

    /// Sets the time-to-live of the IP packets this stream sends (`IP_TTL`; 1 to 255, else
    /// `InvalidInput`).
    ///
    /// ```
    /// use evloop::net::{TcpListener, TcpStream};
    ///
    /// evloop::run(async {
    ///     let listener = TcpListener::bind("127.0.0.1:0").await?;
    ///     let stream = TcpStream::connect(listener.local_addr()?).await?;
    ///     stream.set_ttl(123)?;
    ///     assert_eq!(stream.ttl()?, 123);
    ///     assert!(stream.set_ttl(0).is_err());
    ///     Ok::<(), std::io::Error>(())
    /// })??;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn set_ttl(&self, ttl: u32) -> io::Result<()> {
        sys::set_ttl(self.socket().as_fd(), ttl)
    }

    /// The time-to-live of the IP packets this stream sends (64 unless set).
    ///
    /// ```
    /// use evloop::net::{TcpListener, TcpStream};
    ///
    /// evloop::run(async {
    ///     let listener = TcpListener::bind("127.0.0.1:0").await?;
    ///     let stream = TcpStream::connect(listener.local_addr()?).await?;
    ///     assert!(stream.ttl()? > 0);
    ///     Ok::<(), std::io::Error>(())
    /// })??;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn ttl(&self) -> io::Result<u32> {
        sys::ttl(self.socket().as_fd())
    }
}

impl TcpListener {
    /// Sets the time-to-live of the IP packets of the connections this listener accepts
    /// (`IP_TTL`, inherited by each accepted socket; 1 to 255).
    ///
    /// ```
    /// use evloop::net::TcpListener;
    ///
    /// evloop::run(async {
    ///     let listener = TcpListener::bind("127.0.0.1:0").await?;
    ///     listener.set_ttl(100)?;
    ///     assert_eq!(listener.ttl()?, 100);
    ///     Ok::<(), std::io::Error>(())
    /// })??;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn set_ttl(&self, ttl: u32) -> io::Result<()> {
        sys::set_ttl(self.socket().as_fd(), ttl)
    }

    /// The listener's `IP_TTL` (64 unless set).
    ///
    /// ```
    /// use evloop::net::TcpListener;
    ///
    /// evloop::run(async {
    ///     let listener = TcpListener::bind("127.0.0.1:0").await?;
    ///     assert!(listener.ttl()? > 0);
    ///     Ok::<(), std::io::Error>(())
    /// })??;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn ttl(&self) -> io::Result<u32> {
        sys::ttl(self.socket().as_fd())
    }
}

impl UdpSocket {
    /// Sets the time-to-live of the datagrams this socket sends (`IP_TTL`; 1 to 255).
    ///
    /// ```
    /// use evloop::net::UdpSocket;
    ///
    /// evloop::run(async {
    ///     let sock = UdpSocket::bind("127.0.0.1:0").await?;
    ///     sock.set_ttl(7)?;
    ///     assert_eq!(sock.ttl()?, 7);
    ///     Ok::<(), std::io::Error>(())
    /// })??;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn set_ttl(&self, ttl: u32) -> io::Result<()> {
        sys::set_ttl(self.socket().as_fd(), ttl)
    }

    /// The socket's `IP_TTL` (64 unless set).
    ///
    /// ```
    /// use evloop::net::UdpSocket;
    ///
    /// evloop::run(async {
    ///     let sock = UdpSocket::bind("127.0.0.1:0").await?;
    ///     assert!(sock.ttl()? > 0);
    ///     Ok::<(), std::io::Error>(())
    /// })??;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn ttl(&self) -> io::Result<u32> {
        sys::ttl(self.socket().as_fd())
    }
}
