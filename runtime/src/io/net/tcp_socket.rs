//! [`TcpSocket`]: a TCP socket not yet connected or listening, for setting options first
//! (tokio's `tokio::net::TcpSocket`): `bind` to a chosen local address, `SO_REUSEADDR`,
//! `SO_REUSEPORT`, buffer sizes, `TCP_NODELAY`, keep-alive, `SO_LINGER`; then `connect` turns it into a
//! [`TcpStream`], `listen` into a [`TcpListener`].
//!
//! It is a [`Socket`] (created `SOCK_NONBLOCK|SOCK_CLOEXEC` and registered with the running
//! loop at once) whose options go straight to `setsockopt`; `connect` is the generic socket's
//! non-blocking connect. `TCP_NODELAY` starts on, evloop's default for TCP streams (the porting
//! guide's deliberate difference), so a `set_nodelay(false)` before `connect` holds.

use std::io;
use std::net::SocketAddr;
use std::os::fd::AsFd;

use evloop_syscalls as sys;

use crate::io::net::socket::inet;
use crate::io::net::{Domain, SockAddr, SockType, Socket, TcpListener, TcpStream};

/// A TCP socket to configure before it connects or listens (tokio's `TcpSocket`).
///
/// ```
/// use evloop::net::TcpSocket;
///
/// evloop::run(async {
///     let server = TcpSocket::new_v4()?;
///     server.set_reuseaddr(true)?;
///     server.bind("127.0.0.1:0".parse().unwrap())?;
///     let listener = server.listen(128)?;
///     let client = TcpSocket::new_v4()?.connect(listener.local_addr()?).await?;
///     let (_conn, peer) = listener.accept().await?;
///     assert_eq!(peer, client.local_addr()?);
///     Ok::<(), std::io::Error>(())
/// })??;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub struct TcpSocket {
    sock: Socket,
}

impl TcpSocket {
    fn new(domain: Domain) -> io::Result<TcpSocket> {
        let sock = Socket::new(domain, SockType::Stream)?;
        sock.set_nodelay(true)?;
        Ok(TcpSocket { sock })
    }

    /// An IPv4 TCP socket, on the running loop.
    ///
    /// ```
    /// evloop::run(async {
    ///     let s = evloop::net::TcpSocket::new_v4()?;
    ///     assert!(s.local_addr()?.is_ipv4());
    ///     Ok::<(), std::io::Error>(())
    /// })??;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn new_v4() -> io::Result<TcpSocket> {
        TcpSocket::new(Domain::Inet)
    }

    /// An IPv6 TCP socket, on the running loop.
    ///
    /// ```
    /// evloop::run(async {
    ///     let s = evloop::net::TcpSocket::new_v6()?;
    ///     assert!(s.local_addr()?.is_ipv6());
    ///     Ok::<(), std::io::Error>(())
    /// })??;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn new_v6() -> io::Result<TcpSocket> {
        TcpSocket::new(Domain::Inet6)
    }

    /// `SO_REUSEADDR`: bind to a port still in `TIME_WAIT` (what a restarting server wants).
    ///
    /// ```
    /// evloop::run(async {
    ///     evloop::net::TcpSocket::new_v4()?.set_reuseaddr(true)?;
    ///     Ok::<(), std::io::Error>(())
    /// })??;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn set_reuseaddr(&self, on: bool) -> io::Result<()> {
        self.sock.set_reuseaddr(on)
    }

    /// `SO_REUSEPORT`: several sockets bound to one port, the kernel spreading connections.
    ///
    /// ```
    /// evloop::run(async {
    ///     let (a, b) = (evloop::net::TcpSocket::new_v4()?, evloop::net::TcpSocket::new_v4()?);
    ///     a.set_reuseport(true)?;
    ///     b.set_reuseport(true)?;
    ///     a.bind("127.0.0.1:0".parse().unwrap())?;
    ///     b.bind(a.local_addr()?)?; // the same port
    ///     Ok::<(), std::io::Error>(())
    /// })??;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn set_reuseport(&self, on: bool) -> io::Result<()> {
        sys::set_reuseport(self.sock.as_fd(), on)
    }

    /// `TCP_NODELAY` (on unless turned off: evloop's default).
    ///
    /// ```
    /// evloop::run(async {
    ///     let s = evloop::net::TcpSocket::new_v4()?;
    ///     assert!(s.nodelay()?);
    ///     s.set_nodelay(false)?;
    ///     assert!(!s.nodelay()?);
    ///     Ok::<(), std::io::Error>(())
    /// })??;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn set_nodelay(&self, on: bool) -> io::Result<()> {
        self.sock.set_nodelay(on)
    }

    /// Whether `TCP_NODELAY` is on.
    ///
    /// ```
    /// evloop::run(async {
    ///     assert!(evloop::net::TcpSocket::new_v4()?.nodelay()?);
    ///     Ok::<(), std::io::Error>(())
    /// })??;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn nodelay(&self) -> io::Result<bool> {
        sys::nodelay(self.sock.as_fd())
    }

    /// `SO_LINGER` (see [`TcpStream::set_linger`] for what a non-zero timeout costs the loop).
    ///
    /// ```
    /// use std::time::Duration;
    ///
    /// evloop::run(async {
    ///     let s = evloop::net::TcpSocket::new_v4()?;
    ///     s.set_linger(Some(Duration::ZERO))?;
    ///     assert_eq!(s.linger()?, Some(Duration::ZERO));
    ///     Ok::<(), std::io::Error>(())
    /// })??;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn set_linger(&self, linger: Option<std::time::Duration>) -> io::Result<()> {
        sys::set_linger(self.sock.as_fd(), linger)
    }

    /// `SO_LINGER`'s timeout, `None` when off (the default).
    ///
    /// ```
    /// evloop::run(async {
    ///     assert_eq!(evloop::net::TcpSocket::new_v4()?.linger()?, None);
    ///     Ok::<(), std::io::Error>(())
    /// })??;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn linger(&self) -> io::Result<Option<std::time::Duration>> {
        sys::linger(self.sock.as_fd())
    }

    /// `SO_KEEPALIVE`.
    ///
    /// ```
    /// evloop::run(async {
    ///     evloop::net::TcpSocket::new_v4()?.set_keepalive(true)?;
    ///     Ok::<(), std::io::Error>(())
    /// })??;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn set_keepalive(&self, on: bool) -> io::Result<()> {
        sys::set_keepalive(self.sock.as_fd(), on)
    }

    /// `SO_SNDBUF` (the kernel doubles what it is given, as with tokio).
    ///
    /// ```
    /// evloop::run(async {
    ///     let s = evloop::net::TcpSocket::new_v4()?;
    ///     s.set_send_buffer_size(64 * 1024)?;
    ///     assert!(s.send_buffer_size()? >= 64 * 1024);
    ///     Ok::<(), std::io::Error>(())
    /// })??;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn set_send_buffer_size(&self, size: u32) -> io::Result<()> {
        sys::set_send_buffer_size(self.sock.as_fd(), size as usize)
    }

    /// `SO_SNDBUF` as the kernel reports it.
    ///
    /// ```
    /// evloop::run(async {
    ///     assert!(evloop::net::TcpSocket::new_v4()?.send_buffer_size()? > 0);
    ///     Ok::<(), std::io::Error>(())
    /// })??;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn send_buffer_size(&self) -> io::Result<u32> {
        sys::send_buffer_size(self.sock.as_fd()).map(|n| n as u32)
    }

    /// `SO_RCVBUF` (doubled by the kernel).
    ///
    /// ```
    /// evloop::run(async {
    ///     let s = evloop::net::TcpSocket::new_v4()?;
    ///     s.set_recv_buffer_size(64 * 1024)?;
    ///     assert!(s.recv_buffer_size()? >= 64 * 1024);
    ///     Ok::<(), std::io::Error>(())
    /// })??;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn set_recv_buffer_size(&self, size: u32) -> io::Result<()> {
        sys::set_recv_buffer_size(self.sock.as_fd(), size as usize)
    }

    /// `SO_RCVBUF` as the kernel reports it.
    ///
    /// ```
    /// evloop::run(async {
    ///     assert!(evloop::net::TcpSocket::new_v4()?.recv_buffer_size()? > 0);
    ///     Ok::<(), std::io::Error>(())
    /// })??;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn recv_buffer_size(&self) -> io::Result<u32> {
        sys::recv_buffer_size(self.sock.as_fd()).map(|n| n as u32)
    }

    /// The local address (unspecified with port 0 before `bind` or `connect`).
    ///
    /// ```
    /// evloop::run(async {
    ///     let s = evloop::net::TcpSocket::new_v4()?;
    ///     s.bind("127.0.0.1:0".parse().unwrap())?;
    ///     assert_ne!(s.local_addr()?.port(), 0);
    ///     Ok::<(), std::io::Error>(())
    /// })??;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        inet(self.sock.local_addr()?, "TcpSocket::local_addr")
    }

    /// The pending socket error (`SO_ERROR`), cleared by reading it.
    ///
    /// ```
    /// evloop::run(async {
    ///     assert!(evloop::net::TcpSocket::new_v4()?.take_error()?.is_none());
    ///     Ok::<(), std::io::Error>(())
    /// })??;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn take_error(&self) -> io::Result<Option<io::Error>> {
        self.sock.take_error()
    }

    /// Binds to `addr` (a client may bind before `connect` to choose its source address).
    ///
    /// ```
    /// evloop::run(async {
    ///     let s = evloop::net::TcpSocket::new_v4()?;
    ///     s.bind("127.0.0.1:0".parse().unwrap())?;
    ///     assert!(s.local_addr()?.ip().is_loopback());
    ///     Ok::<(), std::io::Error>(())
    /// })??;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn bind(&self, addr: SocketAddr) -> io::Result<()> {
        self.sock.bind(&SockAddr::Inet(addr))
    }

    /// Connects to `addr` and becomes a [`TcpStream`] (tokio's `TcpSocket::connect`).
    ///
    /// ```
    /// use evloop::net::{TcpListener, TcpSocket};
    ///
    /// evloop::run(async {
    ///     let listener = TcpListener::bind("127.0.0.1:0").await?;
    ///     let stream = TcpSocket::new_v4()?.connect(listener.local_addr()?).await?;
    ///     assert_eq!(stream.peer_addr()?, listener.local_addr()?);
    ///     Ok::<(), std::io::Error>(())
    /// })??;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub async fn connect(self, addr: SocketAddr) -> io::Result<TcpStream> {
        self.sock.connect(&SockAddr::Inet(addr)).await?;
        Ok(TcpStream::from_socket(self.sock))
    }

    /// Listens with room for `backlog` pending connections and becomes a [`TcpListener`].
    ///
    /// ```
    /// evloop::run(async {
    ///     let s = evloop::net::TcpSocket::new_v4()?;
    ///     s.bind("127.0.0.1:0".parse().unwrap())?;
    ///     let listener = s.listen(16)?;
    ///     assert_ne!(listener.local_addr()?.port(), 0);
    ///     Ok::<(), std::io::Error>(())
    /// })??;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn listen(self, backlog: u32) -> io::Result<TcpListener> {
        self.sock.listen(backlog.min(i32::MAX as u32) as i32)?;
        Ok(TcpListener::from_listening(self.sock))
    }
}
