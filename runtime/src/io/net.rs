//! Sockets for tasks: TCP, UDP and Unix-domain sockets on [`AsyncFd`].
//!
//! Every socket is created `SOCK_CLOEXEC|SOCK_NONBLOCK` and registered with the loop once,
//! edge-triggered, for its whole life (see [`AsyncFd`] for the readiness protocol). Reads use
//! `recv(2)`, writes `send(2)`/`sendmsg(2)` with `MSG_NOSIGNAL`, so a write to a closed peer is
//! an `EPIPE` error and never a `SIGPIPE` that kills the process (mio #577).
//!
//! A stream socket's read that returns fewer bytes than asked drained the kernel's receive
//! queue: readiness is cleared then, without a second `recv` that would only say `EAGAIN`, so a
//! request/response exchange costs one `recv` and one `send` per message. Data that arrives
//! later raises a new edge, so nothing is lost.
//!
//! Connecting is asyncio's `sock_connect`: a non-blocking `connect(2)` answers `EINPROGRESS`,
//! the task waits for writability, and `getsockopt(SO_ERROR)` says how it went.

use std::cell::Cell;
use std::fmt;
use std::io::{self, IoSlice};
use std::net::SocketAddr;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd, RawFd};
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll};

use evloop_syscalls as sys;
pub use evloop_syscalls::{Domain, Shutdown, SockAddr, SockType, UnixAddr};

use crate::event_loop::LoopHandle;
use crate::event_loop::error::with_context;
pub use crate::io::addr::ToSocketAddrs;
use crate::io::addr::{Resolving, each_addr};
pub use crate::io::split::{ReadHalf, WriteHalf};
use crate::io::{AsyncFd, AsyncRead, AsyncWrite, Interest, fd_context};

fn addr_context(op: &str, addr: &dyn fmt::Display, e: io::Error) -> io::Error {
    with_context(format!("{op}({addr})"), e)
}

fn domain_of(addr: &SocketAddr) -> Domain {
    match addr {
        SocketAddr::V4(_) => Domain::Inet,
        SocketAddr::V6(_) => Domain::Inet6,
    }
}

fn inet(addr: SockAddr, op: &str) -> io::Result<SocketAddr> {
    match addr {
        SockAddr::Inet(a) => Ok(a),
        other => Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("{op}: expected an IP address, got {other}"),
        )),
    }
}

fn unix(addr: SockAddr, op: &str) -> io::Result<UnixAddr> {
    match addr {
        SockAddr::Unix(a) => Ok(a),
        other => Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("{op}: expected a Unix address, got {other}"),
        )),
    }
}

// ---------------------------------------------------------------------------------------------
// The generic socket: asyncio's socket object for the `sock_*` API.

/// A non-blocking socket of any family and type, registered with the loop: what asyncio's
/// `sock_*` functions take. The typed sockets below wrap one.
///
/// ```
/// use std::net::SocketAddr;
/// use evloop::net::{Domain, SockAddr, SockType, Socket};
///
/// evloop::run(async {
///     // asyncio's `sock_*` style: plain sockets, set up by hand.
///     let listener = Socket::new(Domain::Inet, SockType::Stream)?;
///     listener.bind(&SockAddr::Inet(SocketAddr::from(([127, 0, 0, 1], 0))))?;
///     listener.listen(16)?;
///     let client = Socket::new(Domain::Inet, SockType::Stream)?;
///     client.connect(&listener.local_addr()?).await?;
///     let (fd, _peer) = listener.accept().await?;
///     let server = Socket::from_fd(fd)?;
///     client.send_all(b"hi").await?;
///     let mut buf = [0; 2];
///     assert_eq!(server.recv(&mut buf).await?, 2);
///     assert_eq!(&buf, b"hi");
///     Ok::<(), std::io::Error>(())
/// })??;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct Socket {
    fd: AsyncFd<OwnedFd>,
    kind: Cell<Kind>,
}

/// What the socket's type says about a transfer, learned once: on a byte stream a short receive
/// drained the queue and an empty send is nothing to send; on a message socket (datagram,
/// seqpacket) a short receive was one message among possibly many queued, and an empty send is
/// an empty message the peer receives.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum Kind {
    /// Adopted from an fd: asked of the kernel (`SO_TYPE`) the first time it matters.
    Unknown,
    Stream,
    Message,
}

impl Kind {
    fn of(ty: SockType) -> Kind {
        match ty {
            SockType::Stream => Kind::Stream,
            SockType::Datagram => Kind::Message,
        }
    }
}

impl Socket {
    /// `socket(domain, type | SOCK_CLOEXEC | SOCK_NONBLOCK)`, registered with the running loop.
    ///
    /// ```
    /// use evloop::net::{Domain, SockType, Socket};
    ///
    /// evloop::run(async {
    ///     let sock = Socket::new(Domain::Inet6, SockType::Datagram)?; // CLOEXEC and NONBLOCK already
    ///     assert!(sock.local_addr()?.as_inet().is_some_and(|a| a.is_ipv6()));
    ///     Ok::<(), std::io::Error>(())
    /// })??;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn new(domain: Domain, ty: SockType) -> io::Result<Socket> {
        Socket::own(None, sys::socket(domain, ty)?, Kind::of(ty))
    }

    /// Adopts an fd that is already a socket (switched to non-blocking mode).
    ///
    /// ```
    /// use evloop::net::Socket;
    ///
    /// evloop::run(async {
    ///     let (a, b) = std::os::unix::net::UnixStream::pair()?;
    ///     let (a, b) = (Socket::from_fd(a.into())?, Socket::from_fd(b.into())?);
    ///     a.send_all(b"adopted").await?;
    ///     let mut buf = [0; 7];
    ///     assert_eq!(b.recv(&mut buf).await?, 7);
    ///     Ok::<(), std::io::Error>(())
    /// })??;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn from_fd(fd: OwnedFd) -> io::Result<Socket> {
        Socket::adopt(fd, Kind::Unknown)
    }

    /// Adopts `fd` on the running loop, its type already known (or to be asked).
    fn adopt(fd: OwnedFd, kind: Kind) -> io::Result<Socket> {
        Ok(Socket {
            fd: AsyncFd::new(fd)?,
            kind: Cell::new(kind),
        })
    }

    /// Registers a socket the syscall layer just made (`socket`, `accept4`, `socketpair`: all
    /// `SOCK_NONBLOCK`) with `lp`, or the running loop: unlike [`adopt`](Self::adopt), no
    /// `fcntl` to check the flag, one syscall less per connection.
    fn own(lp: Option<&LoopHandle>, fd: OwnedFd, kind: Kind) -> io::Result<Socket> {
        Ok(Socket {
            fd: AsyncFd::new_nonblocking(lp, fd)?,
            kind: Cell::new(kind),
        })
    }

    /// Whether this is a byte stream (`SOCK_STREAM`): asks the kernel once for an adopted fd.
    /// A socket whose type cannot be read is treated as a message socket, which only forgoes
    /// the byte-stream shortcuts.
    #[inline]
    fn is_stream(&self) -> bool {
        match self.kind.get() {
            Kind::Stream => true,
            Kind::Message => false,
            Kind::Unknown => self.learn_kind() == Kind::Stream,
        }
    }

    /// Asks the kernel for the type of an adopted fd, once (out of line: the hot paths of
    /// sockets evloop created never get here).
    #[cold]
    #[inline(never)]
    fn learn_kind(&self) -> Kind {
        let kind = match sys::socket_type(self.as_fd()) {
            Ok(ty) => Kind::of(ty),
            Err(_) => Kind::Message,
        };
        self.kind.set(kind);
        kind
    }

    /// `bind(2)`.
    ///
    /// ```
    /// use std::net::SocketAddr;
    /// use evloop::net::{Domain, SockAddr, SockType, Socket};
    ///
    /// evloop::run(async {
    ///     let sock = Socket::new(Domain::Inet, SockType::Datagram)?;
    ///     sock.bind(&SockAddr::Inet(SocketAddr::from(([127, 0, 0, 1], 0))))?; // port 0: the kernel picks
    ///     let bound = sock.local_addr()?.as_inet().expect("an IP address");
    ///     assert_ne!(bound.port(), 0);
    ///     Ok::<(), std::io::Error>(())
    /// })??;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn bind(&self, addr: &SockAddr) -> io::Result<()> {
        sys::bind(self.as_fd(), addr).map_err(|e| addr_context("bind", addr, e))
    }

    /// `listen(2)`.
    ///
    /// ```
    /// use std::net::SocketAddr;
    /// use evloop::net::{Domain, SockAddr, SockType, Socket};
    ///
    /// evloop::run(async {
    ///     let sock = Socket::new(Domain::Inet, SockType::Stream)?;
    ///     sock.bind(&SockAddr::Inet(SocketAddr::from(([127, 0, 0, 1], 0))))?;
    ///     sock.listen(128)?;
    ///     // The kernel completes connections to it now, before any accept.
    ///     let addr = sock.local_addr()?.as_inet().expect("an IP address");
    ///     let _client = evloop::net::TcpStream::connect(addr).await?;
    ///     Ok::<(), std::io::Error>(())
    /// })??;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn listen(&self, backlog: i32) -> io::Result<()> {
        sys::listen(self.as_fd(), backlog)
    }

    /// The bound address (`getsockname`).
    ///
    /// ```
    /// use std::net::SocketAddr;
    /// use evloop::net::{Domain, SockAddr, SockType, Socket};
    ///
    /// evloop::run(async {
    ///     let sock = Socket::new(Domain::Inet, SockType::Stream)?;
    ///     sock.bind(&SockAddr::Inet(SocketAddr::from(([127, 0, 0, 1], 0))))?;
    ///     let addr = sock.local_addr()?; // getsockname
    ///     assert!(addr.as_inet().is_some_and(|a| a.ip().is_loopback()));
    ///     Ok::<(), std::io::Error>(())
    /// })??;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn local_addr(&self) -> io::Result<SockAddr> {
        sys::local_addr(self.as_fd())
    }

    /// The connected peer's address (`getpeername`).
    ///
    /// ```
    /// use evloop::net::{SockAddr, TcpListener, TcpStream};
    ///
    /// evloop::run(async {
    ///     let listener = TcpListener::bind("127.0.0.1:0").await?;
    ///     let client = TcpStream::connect(listener.local_addr()?).await?;
    ///     // getpeername
    ///     assert_eq!(client.socket().peer_addr()?, SockAddr::Inet(listener.local_addr()?));
    ///     Ok::<(), std::io::Error>(())
    /// })??;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn peer_addr(&self) -> io::Result<SockAddr> {
        sys::peer_addr(self.as_fd())
    }

    /// `SO_REUSEADDR`.
    ///
    /// ```
    /// use std::net::SocketAddr;
    /// use evloop::net::{Domain, SockAddr, SockType, Socket};
    ///
    /// evloop::run(async {
    ///     let sock = Socket::new(Domain::Inet, SockType::Stream)?;
    ///     sock.set_reuseaddr(true)?; // before bind: a restarted server can take its port back at once
    ///     sock.bind(&SockAddr::Inet(SocketAddr::from(([127, 0, 0, 1], 0))))?;
    ///     Ok::<(), std::io::Error>(())
    /// })??;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn set_reuseaddr(&self, on: bool) -> io::Result<()> {
        sys::set_reuseaddr(self.as_fd(), on)
    }

    /// `TCP_NODELAY`.
    ///
    /// ```
    /// use evloop::net::{TcpListener, TcpStream};
    ///
    /// evloop::run(async {
    ///     let listener = TcpListener::bind("127.0.0.1:0").await?;
    ///     let stream = TcpStream::connect(listener.local_addr()?).await?;
    ///     stream.socket().set_nodelay(false)?; // Nagle's algorithm back on
    ///     assert!(!stream.nodelay()?);
    ///     Ok::<(), std::io::Error>(())
    /// })??;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn set_nodelay(&self, on: bool) -> io::Result<()> {
        sys::set_nodelay(self.as_fd(), on)
    }

    /// `shutdown(2)`: half-close one or both directions.
    ///
    /// ```
    /// use evloop::net::{Shutdown, Socket};
    ///
    /// evloop::run(async {
    ///     let (a, b) = std::os::unix::net::UnixStream::pair()?;
    ///     let (a, b) = (Socket::from_fd(a.into())?, Socket::from_fd(b.into())?);
    ///     a.shutdown(Shutdown::Write)?; // the peer reads end of stream
    ///     assert_eq!(b.recv(&mut [0; 8]).await?, 0);
    ///     Ok::<(), std::io::Error>(())
    /// })??;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn shutdown(&self, how: Shutdown) -> io::Result<()> {
        sys::shutdown(self.as_fd(), how)
    }

    /// The pending socket error, if any (`getsockopt(SO_ERROR)`).
    ///
    /// ```
    /// use evloop::net::Socket;
    ///
    /// evloop::run(async {
    ///     let (a, _b) = std::os::unix::net::UnixStream::pair()?;
    ///     let a = Socket::from_fd(a.into())?;
    ///     assert!(a.take_error()?.is_none()); // SO_ERROR: nothing pending
    ///     Ok::<(), std::io::Error>(())
    /// })??;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn take_error(&self) -> io::Result<Option<io::Error>> {
        sys::take_socket_error(self.as_fd())
    }

    /// The registration (for readiness waits).
    ///
    /// ```
    /// use evloop::net::Socket;
    /// use evloop::Interest;
    ///
    /// evloop::run(async {
    ///     let (a, b) = std::os::unix::net::UnixStream::pair()?;
    ///     let (a, b) = (Socket::from_fd(a.into())?, Socket::from_fd(b.into())?);
    ///     b.send_all(b"x").await?;
    ///     a.async_fd().readable().await?; // wait without reading
    ///     assert!(a.async_fd().is_ready(Interest::Read));
    ///     Ok::<(), std::io::Error>(())
    /// })??;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn async_fd(&self) -> &AsyncFd<OwnedFd> {
        &self.fd
    }

    /// Connects (non-blocking `connect`, then a wait for writability, `SO_ERROR`, and
    /// `getpeername` to confirm).
    ///
    /// Readiness seen before the `connect` call never completes it: an unconnected socket
    /// reports itself writable (and hung up) as soon as it is registered, so the bits the
    /// registration holds are forgotten when the connection attempt starts, and a wake-up is
    /// believed only once `SO_ERROR` is clear *and* the kernel knows the peer. A wake-up that
    /// turns out stale (`ENOTCONN`) goes back to waiting.
    ///
    /// ```
    /// use std::net::SocketAddr;
    /// use evloop::net::{Domain, SockAddr, SockType, Socket, TcpListener};
    ///
    /// evloop::run(async {
    ///     let listener = TcpListener::bind("127.0.0.1:0").await?;
    ///     let sock = Socket::new(Domain::Inet, SockType::Stream)?;
    ///     sock.connect(&SockAddr::Inet(listener.local_addr()?)).await?; // EINPROGRESS, then a wait
    ///     assert_eq!(sock.peer_addr()?.as_inet(), Some(listener.local_addr()?));
    ///
    ///     // A port that is bound but not listening refuses connections.
    ///     let not_listening = Socket::new(Domain::Inet, SockType::Stream)?;
    ///     not_listening.bind(&SockAddr::Inet(SocketAddr::from(([127, 0, 0, 1], 0))))?;
    ///     let sock = Socket::new(Domain::Inet, SockType::Stream)?;
    ///     let err = sock.connect(&not_listening.local_addr()?).await.unwrap_err();
    ///     assert_eq!(err.kind(), std::io::ErrorKind::ConnectionRefused);
    ///     Ok::<(), std::io::Error>(())
    /// })??;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub async fn connect(&self, addr: &SockAddr) -> io::Result<()> {
        match sys::connect(self.as_fd(), addr) {
            Ok(()) => return Ok(()),
            Err(e) if e.raw_os_error() == Some(sys::errno::EINPROGRESS) => {}
            Err(e) => return Err(addr_context("connect", addr, e)),
        }
        self.fd.reset_readiness();
        loop {
            self.fd.writable().await?;
            if let Some(e) = self.take_error()? {
                return Err(addr_context("connect", addr, e));
            }
            match sys::peer_addr(self.as_fd()) {
                Ok(_) => return Ok(()),
                Err(e) if e.raw_os_error() == Some(sys::errno::ENOTCONN) => {}
                Err(e) => return Err(addr_context("connect", addr, e)),
            }
            // A stale wake-up: ask the kernel where the attempt stands. A second `connect` says
            // `EALREADY` while the first is under way, `EISCONN` once it has completed, and
            // starts one (`EINPROGRESS`) if none exists (the first call was interrupted, or
            // failed in a way that left nothing behind).
            self.fd.reset_readiness();
            match sys::connect(self.as_fd(), addr) {
                Ok(()) => return Ok(()),
                Err(e) if e.raw_os_error() == Some(sys::errno::EISCONN) => return Ok(()),
                Err(e) if matches!(e.raw_os_error(), Some(sys::errno::EALREADY | sys::errno::EINPROGRESS)) => {}
                Err(e) => return Err(addr_context("connect", addr, e)),
            }
        }
    }

    /// Accepts one connection (`accept4`, `SOCK_CLOEXEC|SOCK_NONBLOCK`).
    ///
    /// ```
    /// use evloop::net::{Socket, TcpListener, TcpStream};
    ///
    /// evloop::run(async {
    ///     let listener = TcpListener::bind("127.0.0.1:0").await?;
    ///     let client = TcpStream::connect(listener.local_addr()?).await?;
    ///     let (fd, peer) = listener.socket().accept().await?; // accept4, CLOEXEC | NONBLOCK
    ///     assert_eq!(peer.as_inet(), Some(client.local_addr()?));
    ///     let _server_side = Socket::from_fd(fd)?;
    ///     Ok::<(), std::io::Error>(())
    /// })??;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub async fn accept(&self) -> io::Result<(OwnedFd, SockAddr)> {
        std::future::poll_fn(|cx| self.poll_accept(cx)).await
    }

    /// `poll` form of [`Socket::accept`].
    ///
    /// ```
    /// use std::future::poll_fn;
    /// use evloop::net::{TcpListener, TcpStream};
    ///
    /// evloop::run(async {
    ///     let listener = TcpListener::bind("127.0.0.1:0").await?;
    ///     let _client = TcpStream::connect(listener.local_addr()?).await?;
    ///     let (_fd, peer) = poll_fn(|cx| listener.socket().poll_accept(cx)).await?;
    ///     assert!(peer.as_inet().is_some());
    ///     Ok::<(), std::io::Error>(())
    /// })??;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn poll_accept(&self, cx: &mut Context<'_>) -> Poll<io::Result<(OwnedFd, SockAddr)>> {
        let r = self.fd.poll_io(cx, Interest::Read, |fd| sys::accept4(fd.as_fd()));
        fd_context("accept4", self.as_raw_fd(), r)
    }

    /// Receives into `buf`; 0 is end of stream (or an empty `buf`, which makes no syscall). On a
    /// datagram socket, one datagram (truncated to `buf`; 0 for an empty one).
    ///
    /// ```
    /// use std::future::poll_fn;
    /// use evloop::net::Socket;
    ///
    /// evloop::run(async {
    ///     let (a, b) = std::os::unix::net::UnixStream::pair()?;
    ///     let (a, b) = (Socket::from_fd(a.into())?, Socket::from_fd(b.into())?);
    ///     b.send_all(b"polled").await?;
    ///     let mut buf = [0; 16];
    ///     let n = poll_fn(|cx| a.poll_recv(cx, &mut buf)).await?;
    ///     assert_eq!(&buf[..n], b"polled");
    ///     Ok::<(), std::io::Error>(())
    /// })??;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn poll_recv(&self, cx: &mut Context<'_>, buf: &mut [u8]) -> Poll<io::Result<usize>> {
        if buf.is_empty() {
            return Poll::Ready(Ok(0));
        }
        let wanted = buf.len();
        let r = self.fd.poll_io(cx, Interest::Read, |fd| sys::recv(fd.as_fd(), buf));
        if let Poll::Ready(Ok(n)) = r {
            if n > 0 && n < wanted && self.is_stream() {
                // A short read drained a stream's receive queue: skip the recv that would say
                // EAGAIN. (A FIN that came with the data keeps its bit: the next read returns
                // 0.) A short datagram says nothing about the ones queued behind it.
                self.fd.clear_after_short_transfer(Interest::Read);
            }
        }
        fd_context("recv", self.as_raw_fd(), r)
    }

    /// Receives into `buf`.
    ///
    /// ```
    /// use evloop::net::Socket;
    ///
    /// evloop::run(async {
    ///     let (a, b) = std::os::unix::net::UnixStream::pair()?;
    ///     let (a, b) = (Socket::from_fd(a.into())?, Socket::from_fd(b.into())?);
    ///     b.send_all(b"data").await?;
    ///     let mut buf = [0; 16];
    ///     let n = a.recv(&mut buf).await?;
    ///     assert_eq!(&buf[..n], b"data");
    ///     drop(b);
    ///     assert_eq!(a.recv(&mut buf).await?, 0); // end of stream
    ///     Ok::<(), std::io::Error>(())
    /// })??;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub async fn recv(&self, buf: &mut [u8]) -> io::Result<usize> {
        std::future::poll_fn(|cx| self.poll_recv(cx, buf)).await
    }

    /// Sends some of `buf` (`MSG_NOSIGNAL`); an empty `buf` makes no syscall on a byte stream.
    /// On a datagram socket, `buf` is one datagram, sent whole or not at all (an empty `buf` is
    /// an empty datagram).
    ///
    /// ```
    /// use std::future::poll_fn;
    /// use evloop::net::Socket;
    ///
    /// evloop::run(async {
    ///     let (a, b) = std::os::unix::net::UnixStream::pair()?;
    ///     let (a, b) = (Socket::from_fd(a.into())?, Socket::from_fd(b.into())?);
    ///     let n = poll_fn(|cx| a.poll_send(cx, b"polled")).await?;
    ///     assert_eq!(n, 6);
    ///     assert_eq!(b.recv(&mut [0; 16]).await?, 6);
    ///     Ok::<(), std::io::Error>(())
    /// })??;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn poll_send(&self, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        if buf.is_empty() && self.is_stream() {
            return Poll::Ready(Ok(0));
        }
        let r = self.fd.poll_io(cx, Interest::Write, |fd| sys::send(fd.as_fd(), buf));
        if let Poll::Ready(Ok(n)) = r {
            if n < buf.len() {
                // A short write filled the send buffer.
                self.fd.clear_after_short_transfer(Interest::Write);
            }
        }
        fd_context("send", self.as_raw_fd(), r)
    }

    /// Sends from several buffers (`sendmsg`, `MSG_NOSIGNAL`).
    ///
    /// ```
    /// use std::future::poll_fn;
    /// use std::io::IoSlice;
    /// use evloop::net::Socket;
    ///
    /// evloop::run(async {
    ///     let (a, b) = std::os::unix::net::UnixStream::pair()?;
    ///     let (a, b) = (Socket::from_fd(a.into())?, Socket::from_fd(b.into())?);
    ///     let bufs = [IoSlice::new(b"GET "), IoSlice::new(b"/")];
    ///     let n = poll_fn(|cx| a.poll_send_vectored(cx, &bufs)).await?; // one sendmsg
    ///     let mut got = [0; 8];
    ///     let m = b.recv(&mut got).await?;
    ///     assert_eq!((n, &got[..m]), (5, &b"GET /"[..]));
    ///     Ok::<(), std::io::Error>(())
    /// })??;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn poll_send_vectored(&self, cx: &mut Context<'_>, bufs: &[IoSlice<'_>]) -> Poll<io::Result<usize>> {
        let total: usize = bufs.iter().map(|b| b.len()).sum();
        if total == 0 && self.is_stream() {
            return Poll::Ready(Ok(0));
        }
        let r = self
            .fd
            .poll_io(cx, Interest::Write, |fd| sys::send_vectored(fd.as_fd(), bufs));
        if let Poll::Ready(Ok(n)) = r {
            if n < total {
                self.fd.clear_after_short_transfer(Interest::Write);
            }
        }
        fd_context("sendmsg", self.as_raw_fd(), r)
    }

    /// Sends some of `buf`.
    ///
    /// ```
    /// use evloop::net::Socket;
    ///
    /// evloop::run(async {
    ///     let (a, b) = std::os::unix::net::UnixStream::pair()?;
    ///     let (a, b) = (Socket::from_fd(a.into())?, Socket::from_fd(b.into())?);
    ///     let n = a.send(b"some of it, maybe").await?; // one send: check how much went
    ///     assert!(n > 0);
    ///     let mut buf = [0; 32];
    ///     assert_eq!(b.recv(&mut buf).await?, n);
    ///     Ok::<(), std::io::Error>(())
    /// })??;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub async fn send(&self, buf: &[u8]) -> io::Result<usize> {
        std::future::poll_fn(|cx| self.poll_send(cx, buf)).await
    }

    /// Sends all of `buf` (asyncio's `sock_sendall`): on a datagram socket, one `send` of the
    /// whole datagram.
    ///
    /// ```
    /// use evloop::net::Socket;
    ///
    /// evloop::run(async {
    ///     let (a, b) = std::os::unix::net::UnixStream::pair()?;
    ///     let (a, b) = (Socket::from_fd(a.into())?, Socket::from_fd(b.into())?);
    ///     let data = vec![1u8; 1 << 20]; // more than the socket buffer: it waits for room
    ///     let sender = evloop::spawn(async move { a.send_all(&data).await });
    ///     let (mut total, mut buf) = (0, vec![0; 65536]);
    ///     while total < 1 << 20 {
    ///         total += b.recv(&mut buf).await?;
    ///     }
    ///     sender.await??;
    ///     assert_eq!(total, 1 << 20);
    ///     Ok::<(), Box<dyn std::error::Error>>(())
    /// })??;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub async fn send_all(&self, mut buf: &[u8]) -> io::Result<()> {
        if !self.is_stream() {
            // One datagram, whole or not at all: an empty one too (asyncio sends it as well).
            self.send(buf).await?;
            return Ok(());
        }
        while !buf.is_empty() {
            let n = self.send(buf).await?;
            buf = &buf[n..];
        }
        Ok(())
    }

    /// Receives one datagram and its sender.
    ///
    /// ```
    /// use std::net::SocketAddr;
    /// use evloop::net::{Domain, SockAddr, SockType, Socket};
    ///
    /// evloop::run(async {
    ///     let any = SockAddr::Inet(SocketAddr::from(([127, 0, 0, 1], 0)));
    ///     let (a, b) = (Socket::new(Domain::Inet, SockType::Datagram)?, Socket::new(Domain::Inet, SockType::Datagram)?);
    ///     a.bind(&any)?;
    ///     b.bind(&any)?;
    ///     b.send_to(b"datagram", &a.local_addr()?).await?;
    ///     let mut buf = [0; 64];
    ///     let (n, from) = a.recv_from(&mut buf).await?;
    ///     assert_eq!((&buf[..n], from), (&b"datagram"[..], b.local_addr()?));
    ///     Ok::<(), std::io::Error>(())
    /// })??;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub async fn recv_from(&self, buf: &mut [u8]) -> io::Result<(usize, SockAddr)> {
        std::future::poll_fn(|cx| self.poll_recv_from(cx, buf)).await
    }

    /// `poll` form of [`Socket::recv_from`].
    ///
    /// ```
    /// use std::future::poll_fn;
    /// use std::net::SocketAddr;
    /// use evloop::net::{Domain, SockAddr, SockType, Socket};
    ///
    /// evloop::run(async {
    ///     let a = Socket::new(Domain::Inet, SockType::Datagram)?;
    ///     a.bind(&SockAddr::Inet(SocketAddr::from(([127, 0, 0, 1], 0))))?;
    ///     let b = Socket::new(Domain::Inet, SockType::Datagram)?;
    ///     b.send_to(b"ping", &a.local_addr()?).await?;
    ///     let mut buf = [0; 8];
    ///     let (n, _from) = poll_fn(|cx| a.poll_recv_from(cx, &mut buf)).await?;
    ///     assert_eq!(&buf[..n], b"ping");
    ///     Ok::<(), std::io::Error>(())
    /// })??;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn poll_recv_from(&self, cx: &mut Context<'_>, buf: &mut [u8]) -> Poll<io::Result<(usize, SockAddr)>> {
        let r = self
            .fd
            .poll_io(cx, Interest::Read, |fd| sys::recv_from(fd.as_fd(), buf));
        fd_context("recvfrom", self.as_raw_fd(), r)
    }

    /// Sends one datagram to `addr`.
    ///
    /// ```
    /// use std::net::SocketAddr;
    /// use evloop::net::{Domain, SockAddr, SockType, Socket};
    ///
    /// evloop::run(async {
    ///     let server = Socket::new(Domain::Inet, SockType::Datagram)?;
    ///     server.bind(&SockAddr::Inet(SocketAddr::from(([127, 0, 0, 1], 0))))?;
    ///     let client = Socket::new(Domain::Inet, SockType::Datagram)?; // unbound: the kernel binds it
    ///     assert_eq!(client.send_to(b"hello", &server.local_addr()?).await?, 5);
    ///     let mut buf = [0; 8];
    ///     assert_eq!(server.recv_from(&mut buf).await?.0, 5);
    ///     Ok::<(), std::io::Error>(())
    /// })??;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub async fn send_to(&self, buf: &[u8], addr: &SockAddr) -> io::Result<usize> {
        self.fd
            .io(Interest::Write, |fd| sys::send_to(fd.as_fd(), buf, addr))
            .await
            .map_err(|e| addr_context("send_to", addr, e))
    }
}

impl AsFd for Socket {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.fd.get_ref().as_fd()
    }
}

impl AsRawFd for Socket {
    fn as_raw_fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }
}

impl fmt::Debug for Socket {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Socket(fd {}", self.as_raw_fd())?;
        if let Ok(a) = self.local_addr() {
            write!(f, ", local {a}")?;
        }
        if let Ok(a) = self.peer_addr() {
            write!(f, ", peer {a}")?;
        }
        f.write_str(")")
    }
}

/// The stream byte traits, shared by TCP and Unix streams and their halves.
macro_rules! stream_io {
    ($ty:ty, $sock:ident) => {
        impl AsyncRead for $ty {
            fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut [u8]) -> Poll<io::Result<usize>> {
                self.$sock.poll_recv(cx, buf)
            }
        }

        impl AsyncWrite for $ty {
            fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
                self.$sock.poll_send(cx, buf)
            }
            fn poll_write_vectored(
                self: Pin<&mut Self>,
                cx: &mut Context<'_>,
                bufs: &[IoSlice<'_>],
            ) -> Poll<io::Result<usize>> {
                self.$sock.poll_send_vectored(cx, bufs)
            }
            fn poll_shutdown(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
                Poll::Ready(self.$sock.shutdown(Shutdown::Write))
            }
        }
    };
}

// ---------------------------------------------------------------------------------------------
// TCP.

/// A TCP listening socket.
///
/// ```
/// use evloop::net::{TcpListener, TcpStream};
/// use evloop::{AsyncReadExt, AsyncWriteExt};
///
/// evloop::run(async {
///     let listener = TcpListener::bind("127.0.0.1:0").await?;
///     let addr = listener.local_addr()?;
///     let server = evloop::spawn(async move {
///         let (mut conn, _peer) = listener.accept().await?;
///         let mut buf = [0; 64];
///         let n = conn.read(&mut buf).await?;
///         conn.write_all(&buf[..n]).await // echo it back
///     });
///     let mut client = TcpStream::connect(addr).await?;
///     client.write_all(b"hello").await?;
///     let mut reply = [0; 5];
///     client.read_exact(&mut reply).await?;
///     assert_eq!(&reply, b"hello");
///     server.await??;
///     Ok::<(), Box<dyn std::error::Error>>(())
/// })??;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub struct TcpListener {
    sock: Socket,
}

impl TcpListener {
    /// Binds and listens (`SO_REUSEADDR`, backlog 1024), on the running loop. `addr` is
    /// anything [`ToSocketAddrs`] takes (`"127.0.0.1:8080"`, `("localhost", 8080)`, a
    /// `SocketAddr`); with several addresses the first that binds wins. Port 0 picks a free
    /// port: see [`TcpListener::local_addr`].
    ///
    /// ```
    /// use evloop::net::TcpListener;
    ///
    /// evloop::run(async {
    ///     let listener = TcpListener::bind("127.0.0.1:0").await?;
    ///     assert_ne!(listener.local_addr()?.port(), 0);
    ///     Ok::<(), std::io::Error>(())
    /// })??;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub async fn bind<A: ToSocketAddrs>(addr: A) -> io::Result<TcpListener> {
        each_addr("TcpListener::bind", Resolving::new(&addr), |addr| async move {
            let sock = Socket::new(domain_of(&addr), SockType::Stream)?;
            sock.set_reuseaddr(true)?;
            sock.bind(&SockAddr::Inet(addr))?;
            sock.listen(1024)?;
            Ok(TcpListener { sock })
        })
        .await
    }

    /// The bound address.
    ///
    /// ```
    /// use evloop::net::TcpListener;
    ///
    /// evloop::run(async {
    ///     let listener = TcpListener::bind(("127.0.0.1", 0)).await?;
    ///     let addr = listener.local_addr()?; // the port the kernel picked
    ///     assert!(addr.ip().is_loopback() && addr.port() != 0);
    ///     Ok::<(), std::io::Error>(())
    /// })??;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        inet(self.sock.local_addr()?, "TcpListener::local_addr")
    }

    /// Accepts a connection.
    ///
    /// ```
    /// use evloop::net::{TcpListener, TcpStream};
    ///
    /// evloop::run(async {
    ///     let listener = TcpListener::bind("127.0.0.1:0").await?;
    ///     let client = TcpStream::connect(listener.local_addr()?).await?;
    ///     let (conn, peer) = listener.accept().await?;
    ///     assert_eq!(peer, client.local_addr()?);
    ///     assert_eq!(conn.peer_addr()?, peer);
    ///     Ok::<(), std::io::Error>(())
    /// })??;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub async fn accept(&self) -> io::Result<(TcpStream, SocketAddr)> {
        let (fd, addr) = self.sock.accept().await?;
        Ok((TcpStream::from_accepted(fd)?, inet(addr, "accept")?))
    }

    /// The underlying socket.
    ///
    /// ```
    /// use evloop::net::{SockAddr, TcpListener};
    ///
    /// evloop::run(async {
    ///     let listener = TcpListener::bind("127.0.0.1:0").await?;
    ///     // The generic socket underneath, e.g. for asyncio's `sock_accept`.
    ///     assert_eq!(listener.socket().local_addr()?, SockAddr::Inet(listener.local_addr()?));
    ///     Ok::<(), std::io::Error>(())
    /// })??;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn socket(&self) -> &Socket {
        &self.sock
    }
}

/// A TCP connection. Reads and writes through [`AsyncRead`] / [`AsyncWrite`] (and their `Ext`
/// helpers); [`TcpStream::into_split`] gives independent read and write halves.
///
/// ```
/// use evloop::net::{TcpListener, TcpStream};
/// use evloop::{AsyncReadExt, AsyncWriteExt};
///
/// evloop::run(async {
///     let listener = TcpListener::bind("127.0.0.1:0").await?;
///     let mut client = TcpStream::connect(listener.local_addr()?).await?;
///     let (mut server, _) = listener.accept().await?;
///     client.write_all(b"request").await?;
///     client.shutdown().await?; // FIN: the server's read_to_end ends
///     let mut got = Vec::new();
///     server.read_to_end(&mut got).await?;
///     assert_eq!(got, b"request");
///     Ok::<(), std::io::Error>(())
/// })??;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub struct TcpStream {
    sock: Socket,
}

impl TcpStream {
    /// Connects to `addr`: anything [`ToSocketAddrs`] takes, each resolved address tried in
    /// turn (`TCP_NODELAY` is set, as asyncio does).
    ///
    /// ```
    /// use evloop::net::{TcpListener, TcpStream};
    ///
    /// evloop::run(async {
    ///     let listener = TcpListener::bind("127.0.0.1:0").await?;
    ///     let stream = TcpStream::connect(listener.local_addr()?).await?;
    ///     assert!(stream.nodelay()?);
    ///     Ok::<(), std::io::Error>(())
    /// })??;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub async fn connect<A: ToSocketAddrs>(addr: A) -> io::Result<TcpStream> {
        each_addr("TcpStream::connect", Resolving::new(&addr), |addr| async move {
            let sock = Socket::new(domain_of(&addr), SockType::Stream)?;
            sock.connect(&SockAddr::Inet(addr)).await?;
            sock.set_nodelay(true)?;
            Ok(TcpStream { sock })
        })
        .await
    }

    fn from_accepted(fd: OwnedFd) -> io::Result<TcpStream> {
        let sock = Socket::own(None, fd, Kind::Stream)?;
        sock.set_nodelay(true)?;
        Ok(TcpStream { sock })
    }

    /// Adopts a connected std stream (switched to non-blocking mode).
    ///
    /// ```
    /// use evloop::net::{TcpListener, TcpStream};
    /// use evloop::AsyncReadExt;
    ///
    /// evloop::run(async {
    ///     let listener = TcpListener::bind("127.0.0.1:0").await?;
    ///     // A blocking connect is fine here: the kernel completes it without an accept.
    ///     let std_client = std::net::TcpStream::connect(listener.local_addr()?)?;
    ///     let mut client = TcpStream::from_std(std_client)?; // now non-blocking, on the loop
    ///     let (server, _) = listener.accept().await?;
    ///     drop(server);
    ///     assert_eq!(client.read(&mut [0; 8]).await?, 0); // the server closed
    ///     Ok::<(), std::io::Error>(())
    /// })??;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn from_std(stream: std::net::TcpStream) -> io::Result<TcpStream> {
        Ok(TcpStream {
            sock: Socket::adopt(stream.into(), Kind::Stream)?,
        })
    }

    /// The local address.
    ///
    /// ```
    /// use evloop::net::{TcpListener, TcpStream};
    ///
    /// evloop::run(async {
    ///     let listener = TcpListener::bind("127.0.0.1:0").await?;
    ///     let client = TcpStream::connect(listener.local_addr()?).await?;
    ///     let (_conn, peer) = listener.accept().await?;
    ///     assert_eq!(client.local_addr()?, peer);
    ///     Ok::<(), std::io::Error>(())
    /// })??;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        inet(self.sock.local_addr()?, "TcpStream::local_addr")
    }

    /// The peer's address.
    ///
    /// ```
    /// use evloop::net::{TcpListener, TcpStream};
    ///
    /// evloop::run(async {
    ///     let listener = TcpListener::bind("127.0.0.1:0").await?;
    ///     let client = TcpStream::connect(listener.local_addr()?).await?;
    ///     assert_eq!(client.peer_addr()?, listener.local_addr()?);
    ///     Ok::<(), std::io::Error>(())
    /// })??;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn peer_addr(&self) -> io::Result<SocketAddr> {
        inet(self.sock.peer_addr()?, "TcpStream::peer_addr")
    }

    /// `TCP_NODELAY` (on by default for evloop's TCP streams, as asyncio does).
    ///
    /// ```
    /// use evloop::net::{TcpListener, TcpStream};
    ///
    /// evloop::run(async {
    ///     let listener = TcpListener::bind("127.0.0.1:0").await?;
    ///     let stream = TcpStream::connect(listener.local_addr()?).await?;
    ///     assert!(stream.nodelay()?); // evloop's default, as asyncio's
    ///     stream.set_nodelay(false)?;
    ///     assert!(!stream.nodelay()?);
    ///     Ok::<(), std::io::Error>(())
    /// })??;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn set_nodelay(&self, on: bool) -> io::Result<()> {
        self.sock.set_nodelay(on)
    }

    /// Whether `TCP_NODELAY` is set.
    ///
    /// ```
    /// use evloop::net::{TcpListener, TcpStream};
    ///
    /// evloop::run(async {
    ///     let listener = TcpListener::bind("127.0.0.1:0").await?;
    ///     let client = TcpStream::connect(listener.local_addr()?).await?;
    ///     let (server, _) = listener.accept().await?;
    ///     assert!(client.nodelay()? && server.nodelay()?); // set on both ends
    ///     Ok::<(), std::io::Error>(())
    /// })??;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn nodelay(&self) -> io::Result<bool> {
        sys::nodelay(self.sock.as_fd())
    }

    /// The underlying socket (for `shutdown(Shutdown::Read)` and socket options; the write
    /// side's half-close is `AsyncWriteExt::shutdown`).
    ///
    /// ```
    /// use evloop::net::{Shutdown, TcpListener, TcpStream};
    /// use evloop::AsyncReadExt;
    ///
    /// evloop::run(async {
    ///     let listener = TcpListener::bind("127.0.0.1:0").await?;
    ///     let mut client = TcpStream::connect(listener.local_addr()?).await?;
    ///     client.socket().shutdown(Shutdown::Read)?; // no more receiving
    ///     assert_eq!(client.read(&mut [0; 8]).await?, 0);
    ///     Ok::<(), std::io::Error>(())
    /// })??;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn socket(&self) -> &Socket {
        &self.sock
    }

    /// Splits into owned read and write halves that can live in different tasks.
    ///
    /// ```
    /// use evloop::net::{TcpListener, TcpStream};
    /// use evloop::{AsyncReadExt, AsyncWriteExt};
    ///
    /// evloop::run(async {
    ///     let listener = TcpListener::bind("127.0.0.1:0").await?;
    ///     let client = TcpStream::connect(listener.local_addr()?).await?;
    ///     let (mut server, _) = listener.accept().await?;
    ///     let (mut rd, mut wr) = client.into_split();
    ///     // The halves live in different tasks.
    ///     let writer = evloop::spawn(async move { wr.write_all(b"from the writer task").await });
    ///     let mut buf = [0; 20];
    ///     server.read_exact(&mut buf).await?;
    ///     server.write_all(b"ack").await?;
    ///     let mut ack = [0; 3];
    ///     rd.read_exact(&mut ack).await?;
    ///     writer.await??;
    ///     assert_eq!((&buf[..], &ack), (&b"from the writer task"[..], b"ack"));
    ///     Ok::<(), Box<dyn std::error::Error>>(())
    /// })??;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn into_split(self) -> (OwnedReadHalf, OwnedWriteHalf) {
        let shared = Rc::new(self.sock);
        (OwnedReadHalf { sock: shared.clone() }, OwnedWriteHalf { sock: shared })
    }
}

stream_io!(TcpStream, sock);

/// The reading half of a split stream (TCP or Unix).
///
/// ```
/// use evloop::net::UnixStream;
/// use evloop::{AsyncReadExt, AsyncWriteExt};
///
/// evloop::run(async {
///     let (a, mut b) = UnixStream::pair()?;
///     let (mut rd, _wr) = a.into_split();
///     let reader = evloop::spawn(async move {
///         let mut got = Vec::new();
///         rd.read_to_end(&mut got).await.map(|_| got)
///     });
///     b.write_all(b"to the reader task").await?;
///     drop(b);
///     assert_eq!(reader.await??, b"to the reader task");
///     Ok::<(), Box<dyn std::error::Error>>(())
/// })??;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub struct OwnedReadHalf {
    sock: Rc<Socket>,
}

/// The writing half of a split stream. Dropping it does not shut the connection down; call
/// `shutdown()` (from [`crate::AsyncWriteExt`]) to send FIN.
///
/// ```
/// use evloop::net::UnixStream;
/// use evloop::{AsyncReadExt, AsyncWriteExt};
///
/// evloop::run(async {
///     let (a, mut b) = UnixStream::pair()?;
///     let (_rd, mut wr) = a.into_split();
///     wr.write_all(b"bye").await?;
///     wr.shutdown().await?; // FIN; dropping the half would not send one
///     let mut got = Vec::new();
///     b.read_to_end(&mut got).await?;
///     assert_eq!(got, b"bye");
///     Ok::<(), std::io::Error>(())
/// })??;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub struct OwnedWriteHalf {
    sock: Rc<Socket>,
}

impl OwnedReadHalf {
    /// The shared socket.
    ///
    /// ```
    /// use std::os::fd::AsRawFd;
    /// use evloop::net::UnixStream;
    ///
    /// evloop::run(async {
    ///     let (a, _b) = UnixStream::pair()?;
    ///     let (rd, wr) = a.into_split();
    ///     assert_eq!(rd.socket().as_raw_fd(), wr.socket().as_raw_fd()); // one socket, shared
    ///     Ok::<(), std::io::Error>(())
    /// })??;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn socket(&self) -> &Socket {
        &self.sock
    }
}

impl OwnedWriteHalf {
    /// The shared socket.
    ///
    /// ```
    /// use evloop::net::UnixStream;
    ///
    /// evloop::run(async {
    ///     let (a, _b) = UnixStream::pair()?;
    ///     let (_rd, wr) = a.into_split();
    ///     assert!(wr.socket().peer_addr()?.as_unix().is_some_and(|p| p.is_unnamed()));
    ///     Ok::<(), std::io::Error>(())
    /// })??;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn socket(&self) -> &Socket {
        &self.sock
    }
}

impl AsyncRead for OwnedReadHalf {
    fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut [u8]) -> Poll<io::Result<usize>> {
        self.sock.poll_recv(cx, buf)
    }
}

impl AsyncWrite for OwnedWriteHalf {
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        self.sock.poll_send(cx, buf)
    }
    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        self.sock.poll_send_vectored(cx, bufs)
    }
    fn poll_shutdown(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(self.sock.shutdown(Shutdown::Write))
    }
}

// ---------------------------------------------------------------------------------------------
// UDP.

/// A UDP socket.
///
/// ```
/// use evloop::net::UdpSocket;
///
/// evloop::run(async {
///     let server = UdpSocket::bind("127.0.0.1:0").await?;
///     let addr = server.local_addr()?;
///     let echo = evloop::spawn(async move {
///         let mut buf = [0; 64];
///         let (n, from) = server.recv_from(&mut buf).await?;
///         server.send_to(&buf[..n], from).await // a datagram echo server
///     });
///     let client = UdpSocket::bind("127.0.0.1:0").await?;
///     client.connect(addr).await?;
///     client.send(b"marco").await?;
///     let mut buf = [0; 64];
///     let n = client.recv(&mut buf).await?;
///     assert_eq!(&buf[..n], b"marco");
///     echo.await??;
///     Ok::<(), Box<dyn std::error::Error>>(())
/// })??;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub struct UdpSocket {
    sock: Socket,
}

impl UdpSocket {
    /// Binds a UDP socket to `addr` (anything [`ToSocketAddrs`] takes; port 0 picks a free
    /// port).
    ///
    /// ```
    /// use evloop::net::UdpSocket;
    ///
    /// evloop::run(async {
    ///     let a = UdpSocket::bind("127.0.0.1:0").await?;
    ///     let b = UdpSocket::bind(("127.0.0.1", 0)).await?;
    ///     b.send_to(b"ping", a.local_addr()?).await?;
    ///     let mut buf = [0u8; 16];
    ///     let (n, from) = a.recv_from(&mut buf).await?;
    ///     assert_eq!((&buf[..n], from), (&b"ping"[..], b.local_addr()?));
    ///     Ok::<(), std::io::Error>(())
    /// })??;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub async fn bind<A: ToSocketAddrs>(addr: A) -> io::Result<UdpSocket> {
        each_addr("UdpSocket::bind", Resolving::new(&addr), |addr| async move {
            let sock = Socket::new(domain_of(&addr), SockType::Datagram)?;
            sock.bind(&SockAddr::Inet(addr))?;
            Ok(UdpSocket { sock })
        })
        .await
    }

    /// The bound address.
    ///
    /// ```
    /// use evloop::net::UdpSocket;
    ///
    /// evloop::run(async {
    ///     let sock = UdpSocket::bind("127.0.0.1:0").await?;
    ///     assert_ne!(sock.local_addr()?.port(), 0);
    ///     Ok::<(), std::io::Error>(())
    /// })??;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        inet(self.sock.local_addr()?, "UdpSocket::local_addr")
    }

    /// The connected peer, after [`UdpSocket::connect`].
    ///
    /// ```
    /// use evloop::net::UdpSocket;
    ///
    /// evloop::run(async {
    ///     let (a, b) = (UdpSocket::bind("127.0.0.1:0").await?, UdpSocket::bind("127.0.0.1:0").await?);
    ///     assert!(a.peer_addr().is_err()); // not connected
    ///     a.connect(b.local_addr()?).await?;
    ///     assert_eq!(a.peer_addr()?, b.local_addr()?);
    ///     Ok::<(), std::io::Error>(())
    /// })??;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn peer_addr(&self) -> io::Result<SocketAddr> {
        inet(self.sock.peer_addr()?, "UdpSocket::peer_addr")
    }

    /// Sets the default destination (and filters incoming datagrams to it); a name is
    /// resolved off the loop and its first address that connects is used.
    ///
    /// ```
    /// use evloop::net::UdpSocket;
    ///
    /// evloop::run(async {
    ///     let (a, b) = (UdpSocket::bind("127.0.0.1:0").await?, UdpSocket::bind("127.0.0.1:0").await?);
    ///     a.connect(b.local_addr()?).await?; // no handshake: sets the default destination
    ///     a.send(b"no address needed").await?;
    ///     let mut buf = [0; 32];
    ///     let (n, from) = b.recv_from(&mut buf).await?;
    ///     assert_eq!((n, from), (17, a.local_addr()?));
    ///     Ok::<(), std::io::Error>(())
    /// })??;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub async fn connect<A: ToSocketAddrs>(&self, addr: A) -> io::Result<()> {
        each_addr("UdpSocket::connect", Resolving::new(&addr), |addr| async move {
            sys::connect(self.sock.as_fd(), &SockAddr::Inet(addr)).map_err(|e| addr_context("connect", &addr, e))
        })
        .await
    }

    /// `SO_BROADCAST`.
    ///
    /// ```
    /// use evloop::net::UdpSocket;
    ///
    /// evloop::run(async {
    ///     let sock = UdpSocket::bind("0.0.0.0:0").await?;
    ///     sock.set_broadcast(true)?; // needed before sending to 255.255.255.255
    ///     Ok::<(), std::io::Error>(())
    /// })??;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn set_broadcast(&self, on: bool) -> io::Result<()> {
        sys::set_broadcast(self.sock.as_fd(), on)
    }

    /// Sends one datagram to `target` (its first address, when a name resolves to several).
    ///
    /// ```
    /// use evloop::net::UdpSocket;
    ///
    /// evloop::run(async {
    ///     let server = UdpSocket::bind("127.0.0.1:0").await?;
    ///     let port = server.local_addr()?.port();
    ///     let client = UdpSocket::bind("127.0.0.1:0").await?;
    ///     assert_eq!(client.send_to(b"one", ("127.0.0.1", port)).await?, 3); // any address form
    ///     assert_eq!(client.send_to(b"two", server.local_addr()?).await?, 3);
    ///     let mut buf = [0; 8];
    ///     assert_eq!(server.recv_from(&mut buf).await?.0, 3);
    ///     assert_eq!(&buf[..3], b"one"); // datagrams keep their boundaries and order here
    ///     Ok::<(), std::io::Error>(())
    /// })??;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub async fn send_to<A: ToSocketAddrs>(&self, buf: &[u8], target: A) -> io::Result<usize> {
        let addr = match Resolving::new(&target).addrs("UdpSocket::send_to").await?.first() {
            Some(a) => *a,
            None => unreachable!("Resolving::addrs never returns an empty list"),
        };
        self.sock.send_to(buf, &SockAddr::Inet(addr)).await
    }

    /// Receives one datagram and its sender (a datagram longer than `buf` is truncated).
    ///
    /// ```
    /// use evloop::net::UdpSocket;
    ///
    /// evloop::run(async {
    ///     let (a, b) = (UdpSocket::bind("127.0.0.1:0").await?, UdpSocket::bind("127.0.0.1:0").await?);
    ///     b.send_to(b"a long datagram", a.local_addr()?).await?;
    ///     let mut small = [0; 6];
    ///     let (n, from) = a.recv_from(&mut small).await?;
    ///     assert_eq!((&small[..n], from), (&b"a long"[..], b.local_addr()?)); // truncated to the buffer
    ///     Ok::<(), std::io::Error>(())
    /// })??;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub async fn recv_from(&self, buf: &mut [u8]) -> io::Result<(usize, SocketAddr)> {
        let (n, addr) = self.sock.recv_from(buf).await?;
        Ok((n, inet(addr, "recv_from")?))
    }

    /// Sends to the connected peer.
    ///
    /// ```
    /// use evloop::net::UdpSocket;
    ///
    /// evloop::run(async {
    ///     let (a, b) = (UdpSocket::bind("127.0.0.1:0").await?, UdpSocket::bind("127.0.0.1:0").await?);
    ///     a.connect(b.local_addr()?).await?;
    ///     assert_eq!(a.send(b"").await?, 0); // an empty datagram is still a datagram
    ///     let (n, _) = b.recv_from(&mut [0; 8]).await?;
    ///     assert_eq!(n, 0);
    ///     Ok::<(), std::io::Error>(())
    /// })??;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub async fn send(&self, buf: &[u8]) -> io::Result<usize> {
        self.sock.send(buf).await
    }

    /// Receives from the connected peer.
    ///
    /// ```
    /// use evloop::net::UdpSocket;
    ///
    /// evloop::run(async {
    ///     let (a, b) = (UdpSocket::bind("127.0.0.1:0").await?, UdpSocket::bind("127.0.0.1:0").await?);
    ///     a.connect(b.local_addr()?).await?;
    ///     b.send_to(b"reply", a.local_addr()?).await?;
    ///     let mut buf = [0; 8];
    ///     let n = a.recv(&mut buf).await?; // only from the connected peer
    ///     assert_eq!(&buf[..n], b"reply");
    ///     Ok::<(), std::io::Error>(())
    /// })??;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub async fn recv(&self, buf: &mut [u8]) -> io::Result<usize> {
        let fd = self.sock.as_raw_fd();
        std::future::poll_fn(|cx| {
            let r = self.sock.fd.poll_io(cx, Interest::Read, |s| sys::recv(s.as_fd(), buf));
            fd_context("recv", fd, r)
        })
        .await
    }

    /// The underlying socket.
    ///
    /// ```
    /// use evloop::net::UdpSocket;
    ///
    /// evloop::run(async {
    ///     let sock = UdpSocket::bind("127.0.0.1:0").await?;
    ///     assert!(sock.socket().take_error()?.is_none()); // socket options through the generic socket
    ///     Ok::<(), std::io::Error>(())
    /// })??;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn socket(&self) -> &Socket {
        &self.sock
    }
}

// ---------------------------------------------------------------------------------------------
// Unix domain sockets.

/// A Unix-domain listening socket (pathname or abstract address).
///
/// ```
/// use evloop::net::{UnixAddr, UnixListener, UnixStream};
/// use evloop::{AsyncReadExt, AsyncWriteExt};
///
/// evloop::run(async {
///     // An abstract name: no socket file to clean up (the pid keeps it unique).
///     let addr = UnixAddr::abstract_name(format!("evloop-doc-{}", std::process::id()).as_bytes())?;
///     let listener = UnixListener::bind(&addr)?;
///     let mut client = UnixStream::connect(&addr).await?;
///     let (mut conn, _) = listener.accept().await?;
///     client.write_all(b"local").await?;
///     let mut buf = [0; 5];
///     conn.read_exact(&mut buf).await?;
///     assert_eq!(&buf, b"local");
///     Ok::<(), std::io::Error>(())
/// })??;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub struct UnixListener {
    sock: Socket,
}

impl UnixListener {
    /// Binds and listens. A pathname address creates the socket file; remove it when done.
    ///
    /// ```
    /// use evloop::net::{UnixAddr, UnixListener};
    ///
    /// evloop::run(async {
    ///     let path = std::env::temp_dir().join(format!("evloop-doc-{}.sock", std::process::id()));
    ///     let listener = UnixListener::bind(&UnixAddr::pathname(&path)?)?;
    ///     assert!(path.exists()); // a pathname address creates the socket file ...
    ///     drop(listener);
    ///     std::fs::remove_file(&path)?; // ... which outlives the socket: remove it
    ///     Ok::<(), std::io::Error>(())
    /// })??;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn bind(addr: &UnixAddr) -> io::Result<UnixListener> {
        let sock = Socket::new(Domain::Unix, SockType::Stream)?;
        sock.bind(&SockAddr::Unix(addr.clone()))?;
        sock.listen(1024)?;
        Ok(UnixListener { sock })
    }

    /// The bound address.
    ///
    /// ```
    /// use evloop::net::{UnixAddr, UnixListener};
    ///
    /// evloop::run(async {
    ///     let name = format!("evloop-doc-{}", std::process::id());
    ///     let listener = UnixListener::bind(&UnixAddr::abstract_name(name.as_bytes())?)?;
    ///     assert_eq!(listener.local_addr()?.as_abstract_name(), Some(name.as_bytes()));
    ///     Ok::<(), std::io::Error>(())
    /// })??;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn local_addr(&self) -> io::Result<UnixAddr> {
        unix(self.sock.local_addr()?, "UnixListener::local_addr")
    }

    /// Accepts a connection.
    ///
    /// ```
    /// use evloop::net::{UnixAddr, UnixListener, UnixStream};
    ///
    /// evloop::run(async {
    ///     let addr = UnixAddr::abstract_name(format!("evloop-doc-{}", std::process::id()).as_bytes())?;
    ///     let listener = UnixListener::bind(&addr)?;
    ///     let _client = UnixStream::connect(&addr).await?;
    ///     let (conn, peer) = listener.accept().await?;
    ///     assert!(peer.is_unnamed()); // the client did not bind a name
    ///     assert_eq!(conn.local_addr()?, addr);
    ///     Ok::<(), std::io::Error>(())
    /// })??;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub async fn accept(&self) -> io::Result<(UnixStream, UnixAddr)> {
        let (fd, addr) = self.sock.accept().await?;
        Ok((
            UnixStream {
                sock: Socket::own(None, fd, Kind::Stream)?,
            },
            unix(addr, "accept")?,
        ))
    }

    /// The underlying socket.
    ///
    /// ```
    /// use evloop::net::{SockAddr, UnixAddr, UnixListener};
    ///
    /// evloop::run(async {
    ///     let addr = UnixAddr::abstract_name(format!("evloop-doc-{}", std::process::id()).as_bytes())?;
    ///     let listener = UnixListener::bind(&addr)?;
    ///     assert_eq!(listener.socket().local_addr()?, SockAddr::Unix(addr));
    ///     Ok::<(), std::io::Error>(())
    /// })??;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn socket(&self) -> &Socket {
        &self.sock
    }
}

/// A Unix-domain stream connection.
///
/// ```
/// use evloop::net::UnixStream;
/// use evloop::{AsyncReadExt, AsyncWriteExt};
///
/// evloop::run(async {
///     let (mut a, mut b) = UnixStream::pair()?;
///     a.write_all(b"ping").await?;
///     let mut buf = [0; 4];
///     b.read_exact(&mut buf).await?;
///     b.write_all(b"pong").await?;
///     a.read_exact(&mut buf).await?;
///     assert_eq!(&buf, b"pong");
///     Ok::<(), std::io::Error>(())
/// })??;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub struct UnixStream {
    sock: Socket,
}

impl UnixStream {
    /// Connects to `addr`.
    ///
    /// ```
    /// use evloop::net::{UnixAddr, UnixListener, UnixStream};
    ///
    /// evloop::run(async {
    ///     let addr = UnixAddr::abstract_name(format!("evloop-doc-{}", std::process::id()).as_bytes())?;
    ///     let _listener = UnixListener::bind(&addr)?;
    ///     let client = UnixStream::connect(&addr).await?;
    ///     assert_eq!(client.peer_addr()?, addr);
    ///     // Nobody listens on this name.
    ///     let nobody = UnixAddr::abstract_name(format!("evloop-doc-{}-none", std::process::id()).as_bytes())?;
    ///     assert!(UnixStream::connect(&nobody).await.is_err());
    ///     Ok::<(), std::io::Error>(())
    /// })??;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub async fn connect(addr: &UnixAddr) -> io::Result<UnixStream> {
        let sock = Socket::new(Domain::Unix, SockType::Stream)?;
        sock.connect(&SockAddr::Unix(addr.clone())).await?;
        Ok(UnixStream { sock })
    }

    /// A connected pair (`socketpair(AF_UNIX, SOCK_STREAM)`).
    ///
    /// ```
    /// use evloop::net::UnixStream;
    /// use evloop::{AsyncReadExt, AsyncWriteExt};
    ///
    /// evloop::run(async {
    ///     let (mut a, mut b) = UnixStream::pair()?; // socketpair: connected, no name
    ///     a.write_all(b"x").await?;
    ///     assert_eq!(b.read(&mut [0; 1]).await?, 1);
    ///     assert!(a.peer_addr()?.is_unnamed());
    ///     Ok::<(), std::io::Error>(())
    /// })??;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn pair() -> io::Result<(UnixStream, UnixStream)> {
        let (a, b) = sys::socketpair(Domain::Unix, SockType::Stream)?;
        Ok((
            UnixStream {
                sock: Socket::own(None, a, Kind::Stream)?,
            },
            UnixStream {
                sock: Socket::own(None, b, Kind::Stream)?,
            },
        ))
    }

    /// The local address.
    ///
    /// ```
    /// use evloop::net::{UnixAddr, UnixListener, UnixStream};
    ///
    /// evloop::run(async {
    ///     let addr = UnixAddr::abstract_name(format!("evloop-doc-{}", std::process::id()).as_bytes())?;
    ///     let listener = UnixListener::bind(&addr)?;
    ///     let client = UnixStream::connect(&addr).await?;
    ///     let (conn, _) = listener.accept().await?;
    ///     assert!(client.local_addr()?.is_unnamed());
    ///     assert_eq!(conn.local_addr()?, addr); // the accepted side has the listener's name
    ///     Ok::<(), std::io::Error>(())
    /// })??;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn local_addr(&self) -> io::Result<UnixAddr> {
        unix(self.sock.local_addr()?, "UnixStream::local_addr")
    }

    /// The peer's address.
    ///
    /// ```
    /// use evloop::net::{UnixAddr, UnixListener, UnixStream};
    ///
    /// evloop::run(async {
    ///     let addr = UnixAddr::abstract_name(format!("evloop-doc-{}", std::process::id()).as_bytes())?;
    ///     let _listener = UnixListener::bind(&addr)?;
    ///     let client = UnixStream::connect(&addr).await?;
    ///     assert_eq!(client.peer_addr()?, addr);
    ///     Ok::<(), std::io::Error>(())
    /// })??;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn peer_addr(&self) -> io::Result<UnixAddr> {
        unix(self.sock.peer_addr()?, "UnixStream::peer_addr")
    }

    /// The underlying socket.
    ///
    /// ```
    /// use evloop::net::{Shutdown, UnixStream};
    /// use evloop::AsyncReadExt;
    ///
    /// evloop::run(async {
    ///     let (a, mut b) = UnixStream::pair()?;
    ///     a.socket().shutdown(Shutdown::Write)?;
    ///     assert_eq!(b.read(&mut [0; 8]).await?, 0);
    ///     Ok::<(), std::io::Error>(())
    /// })??;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn socket(&self) -> &Socket {
        &self.sock
    }

    /// Splits into owned read and write halves.
    ///
    /// ```
    /// use evloop::net::UnixStream;
    /// use evloop::{AsyncReadExt, AsyncWriteExt};
    ///
    /// evloop::run(async {
    ///     let (a, b) = UnixStream::pair()?;
    ///     let (mut rd, mut wr) = a.into_split();
    ///     let (mut peer_rd, mut peer_wr) = b.into_split();
    ///     wr.write_all(b"one way").await?;
    ///     peer_wr.write_all(b"other way").await?;
    ///     let (mut x, mut y) = ([0; 7], [0; 9]);
    ///     peer_rd.read_exact(&mut x).await?;
    ///     rd.read_exact(&mut y).await?;
    ///     assert_eq!((&x, &y), (b"one way", b"other way"));
    ///     Ok::<(), std::io::Error>(())
    /// })??;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn into_split(self) -> (OwnedReadHalf, OwnedWriteHalf) {
        let shared = Rc::new(self.sock);
        (OwnedReadHalf { sock: shared.clone() }, OwnedWriteHalf { sock: shared })
    }
}

stream_io!(UnixStream, sock);

/// A Unix-domain datagram socket.
///
/// ```
/// use evloop::net::{UnixAddr, UnixDatagram};
///
/// evloop::run(async {
///     let addr = UnixAddr::abstract_name(format!("evloop-doc-{}", std::process::id()).as_bytes())?;
///     let server = UnixDatagram::bind(&addr)?;
///     let client = UnixDatagram::unbound()?;
///     client.send_to(b"message", &addr).await?;
///     let mut buf = [0; 16];
///     let (n, from) = server.recv_from(&mut buf).await?;
///     assert_eq!(&buf[..n], b"message");
///     assert!(from.is_unnamed()); // an unbound sender cannot be answered
///     Ok::<(), std::io::Error>(())
/// })??;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub struct UnixDatagram {
    sock: Socket,
}

impl UnixDatagram {
    /// Binds to `addr`.
    ///
    /// ```
    /// use evloop::net::{UnixAddr, UnixDatagram};
    ///
    /// evloop::run(async {
    ///     let addr = UnixAddr::abstract_name(format!("evloop-doc-{}", std::process::id()).as_bytes())?;
    ///     let sock = UnixDatagram::bind(&addr)?;
    ///     assert_eq!(sock.local_addr()?, addr);
    ///     assert!(UnixDatagram::bind(&addr).is_err()); // the name is taken
    ///     Ok::<(), std::io::Error>(())
    /// })??;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn bind(addr: &UnixAddr) -> io::Result<UnixDatagram> {
        let sock = Socket::new(Domain::Unix, SockType::Datagram)?;
        sock.bind(&SockAddr::Unix(addr.clone()))?;
        Ok(UnixDatagram { sock })
    }

    /// An unbound socket (it can send; replies need a bound address).
    ///
    /// ```
    /// use evloop::net::{UnixAddr, UnixDatagram};
    ///
    /// evloop::run(async {
    ///     let addr = UnixAddr::abstract_name(format!("evloop-doc-{}", std::process::id()).as_bytes())?;
    ///     let server = UnixDatagram::bind(&addr)?;
    ///     let client = UnixDatagram::unbound()?;
    ///     assert_eq!(client.send_to(b"hi", &addr).await?, 2);
    ///     assert_eq!(server.recv_from(&mut [0; 4]).await?.0, 2);
    ///     Ok::<(), std::io::Error>(())
    /// })??;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn unbound() -> io::Result<UnixDatagram> {
        Ok(UnixDatagram {
            sock: Socket::new(Domain::Unix, SockType::Datagram)?,
        })
    }

    /// A connected pair.
    ///
    /// ```
    /// use evloop::net::UnixDatagram;
    ///
    /// evloop::run(async {
    ///     let (a, b) = UnixDatagram::pair()?;
    ///     a.send(b"one").await?;
    ///     a.send(b"two").await?;
    ///     let mut buf = [0; 8];
    ///     assert_eq!(b.recv(&mut buf).await?, 3); // boundaries are kept: one datagram per recv
    ///     assert_eq!(&buf[..3], b"one");
    ///     Ok::<(), std::io::Error>(())
    /// })??;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn pair() -> io::Result<(UnixDatagram, UnixDatagram)> {
        let (a, b) = sys::socketpair(Domain::Unix, SockType::Datagram)?;
        Ok((
            UnixDatagram {
                sock: Socket::own(None, a, Kind::Message)?,
            },
            UnixDatagram {
                sock: Socket::own(None, b, Kind::Message)?,
            },
        ))
    }

    /// Sends one datagram to `addr`.
    ///
    /// ```
    /// use evloop::net::{UnixAddr, UnixDatagram};
    ///
    /// evloop::run(async {
    ///     let pid = std::process::id();
    ///     let a_addr = UnixAddr::abstract_name(format!("evloop-doc-{pid}-a").as_bytes())?;
    ///     let b_addr = UnixAddr::abstract_name(format!("evloop-doc-{pid}-b").as_bytes())?;
    ///     let (a, b) = (UnixDatagram::bind(&a_addr)?, UnixDatagram::bind(&b_addr)?);
    ///     a.send_to(b"request", &b_addr).await?;
    ///     let mut buf = [0; 16];
    ///     let (_, from) = b.recv_from(&mut buf).await?;
    ///     b.send_to(b"reply", &from).await?; // `a` is bound, so it can be answered
    ///     let (n, _) = a.recv_from(&mut buf).await?;
    ///     assert_eq!(&buf[..n], b"reply");
    ///     Ok::<(), std::io::Error>(())
    /// })??;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub async fn send_to(&self, buf: &[u8], addr: &UnixAddr) -> io::Result<usize> {
        self.sock.send_to(buf, &SockAddr::Unix(addr.clone())).await
    }

    /// Receives one datagram and its sender (`UnixAddr::Unnamed` for unbound senders).
    ///
    /// ```
    /// use evloop::net::{UnixAddr, UnixDatagram};
    ///
    /// evloop::run(async {
    ///     let pid = std::process::id();
    ///     let a_addr = UnixAddr::abstract_name(format!("evloop-doc-{pid}-a").as_bytes())?;
    ///     let b_addr = UnixAddr::abstract_name(format!("evloop-doc-{pid}-b").as_bytes())?;
    ///     let (a, b) = (UnixDatagram::bind(&a_addr)?, UnixDatagram::bind(&b_addr)?);
    ///     a.send_to(b"hello", &b_addr).await?;
    ///     let mut buf = [0; 16];
    ///     let (n, from) = b.recv_from(&mut buf).await?;
    ///     assert_eq!((&buf[..n], from), (&b"hello"[..], a_addr));
    ///     Ok::<(), std::io::Error>(())
    /// })??;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub async fn recv_from(&self, buf: &mut [u8]) -> io::Result<(usize, UnixAddr)> {
        let (n, addr) = self.sock.recv_from(buf).await?;
        Ok((n, unix(addr, "recv_from")?))
    }

    /// Sends to the connected peer.
    ///
    /// ```
    /// use evloop::net::UnixDatagram;
    ///
    /// evloop::run(async {
    ///     let (a, b) = UnixDatagram::pair()?;
    ///     assert_eq!(a.send(b"").await?, 0); // an empty datagram is sent too
    ///     assert_eq!(b.recv(&mut [0; 8]).await?, 0);
    ///     Ok::<(), std::io::Error>(())
    /// })??;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub async fn send(&self, buf: &[u8]) -> io::Result<usize> {
        self.sock.send(buf).await
    }

    /// Receives from the connected peer.
    ///
    /// ```
    /// use evloop::net::UnixDatagram;
    ///
    /// evloop::run(async {
    ///     let (a, b) = UnixDatagram::pair()?;
    ///     a.send(b"0123456789").await?;
    ///     let mut small = [0; 4];
    ///     assert_eq!(b.recv(&mut small).await?, 4); // the rest of the datagram is discarded
    ///     assert_eq!(&small, b"0123");
    ///     Ok::<(), std::io::Error>(())
    /// })??;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub async fn recv(&self, buf: &mut [u8]) -> io::Result<usize> {
        let fd = self.sock.as_raw_fd();
        std::future::poll_fn(|cx| {
            let r = self.sock.fd.poll_io(cx, Interest::Read, |s| sys::recv(s.as_fd(), buf));
            fd_context("recv", fd, r)
        })
        .await
    }

    /// The bound address.
    ///
    /// ```
    /// use evloop::net::{UnixAddr, UnixDatagram};
    ///
    /// evloop::run(async {
    ///     assert!(UnixDatagram::unbound()?.local_addr()?.is_unnamed());
    ///     let addr = UnixAddr::abstract_name(format!("evloop-doc-{}", std::process::id()).as_bytes())?;
    ///     assert_eq!(UnixDatagram::bind(&addr)?.local_addr()?, addr);
    ///     Ok::<(), std::io::Error>(())
    /// })??;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn local_addr(&self) -> io::Result<UnixAddr> {
        unix(self.sock.local_addr()?, "UnixDatagram::local_addr")
    }

    /// The underlying socket.
    ///
    /// ```
    /// use evloop::net::UnixDatagram;
    ///
    /// evloop::run(async {
    ///     let (a, _b) = UnixDatagram::pair()?;
    ///     assert!(a.socket().peer_addr()?.as_unix().is_some_and(|p| p.is_unnamed()));
    ///     Ok::<(), std::io::Error>(())
    /// })??;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn socket(&self) -> &Socket {
        &self.sock
    }
}

impl Socket {
    /// Deregisters the socket and gives its fd back (still non-blocking).
    ///
    /// ```
    /// use std::io::Read;
    /// use std::os::unix::net::UnixStream;
    /// use evloop::net::Socket;
    ///
    /// evloop::run(async {
    ///     let (a, b) = UnixStream::pair()?;
    ///     let a = Socket::from_fd(a.into())?;
    ///     let mut std_a = UnixStream::from(a.into_fd()); // deregistered; still non-blocking
    ///     drop(b);
    ///     assert_eq!(std_a.read(&mut [0; 4])?, 0);
    ///     Ok::<(), std::io::Error>(())
    /// })??;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn into_fd(self) -> OwnedFd {
        self.fd.into_inner()
    }

    /// The fd with its registration still in place (for a transport taking the socket over).
    pub(crate) fn into_registered(self) -> (OwnedFd, Rc<crate::event_loop::reactor::IoState>) {
        self.fd.into_parts()
    }
}

/// Connects to each address in turn until one succeeds (asyncio's `create_connection` over the
/// resolved list); the last error, naming `host`, when none does.
pub(crate) async fn connect_any(addrs: &[SocketAddr], host: &str) -> io::Result<Socket> {
    let mut last = None;
    for addr in addrs {
        let attempt = async {
            let sock = Socket::new(domain_of(addr), SockType::Stream)?;
            sock.connect(&SockAddr::Inet(*addr)).await?;
            // asyncio sets TCP_NODELAY on every TCP transport: request/response traffic must
            // not wait for Nagle's delayed ACK dance.
            sock.set_nodelay(true)?;
            Ok::<_, io::Error>(sock)
        };
        match attempt.await {
            Ok(sock) => return Ok(sock),
            Err(e) => last = Some(e),
        }
    }
    Err(match last {
        Some(e) => with_context(format!("connect to {host}: every address failed, the last"), e),
        None => io::Error::new(io::ErrorKind::NotFound, format!("connect to {host}: no address to try")),
    })
}

// ---------------------------------------------------------------------------------------------
// Name resolution and asyncio's sock_* API on the loop.

fn numeric(host: &str, port: u16) -> Option<SocketAddr> {
    let h = host.strip_prefix('[').and_then(|h| h.strip_suffix(']')).unwrap_or(host);
    h.parse::<std::net::IpAddr>().ok().map(|ip| SocketAddr::new(ip, port))
}

impl LoopHandle {
    /// Resolves `host:port` (asyncio's `getaddrinfo`): an IP literal directly, a name with
    /// `getaddrinfo(3)` on the executor's threads (it blocks), as asyncio does.
    pub async fn getaddrinfo(&self, host: &str, port: u16) -> io::Result<Vec<SocketAddr>> {
        self.resolve(host, port, false).await
    }

    /// Resolves an address to listen on: `""` means every local address (IPv4 and IPv6).
    pub(crate) async fn getaddrinfo_passive(&self, host: &str, port: u16) -> io::Result<Vec<SocketAddr>> {
        self.resolve(host, port, true).await
    }

    async fn resolve(&self, host: &str, port: u16, passive: bool) -> io::Result<Vec<SocketAddr>> {
        if let Some(addr) = numeric(host, port) {
            return Ok(vec![addr]);
        }
        let hints = sys::AddrHints {
            sock_type: Some(SockType::Stream),
            passive,
            ..Default::default()
        };
        let owned = host.to_string();
        let job = self
            .run_in_executor(move || sys::getaddrinfo(&owned, port, hints))
            .map_err(io::Error::from)?;
        let addrs = job.await.map_err(io::Error::from)??;
        if addrs.is_empty() {
            return Err(io::Error::new(
                io::ErrorKind::NotFound,
                format!("getaddrinfo({host}): no addresses"),
            ));
        }
        Ok(addrs)
    }

    /// The host and service names of `addr` (asyncio's `getnameinfo`), on the executor unless
    /// `numeric`.
    pub async fn getnameinfo(&self, addr: SocketAddr, numeric: bool) -> io::Result<(String, String)> {
        if numeric {
            return sys::getnameinfo(&addr, true);
        }
        let job = self
            .run_in_executor(move || sys::getnameinfo(&addr, false))
            .map_err(io::Error::from)?;
        job.await.map_err(io::Error::from)?
    }

    /// Receives up to `n` bytes (asyncio's `sock_recv`); empty at end of stream.
    ///
    /// `n` bounds the result, not the memory set aside: a stream socket receives at most
    /// 256 KiB per call, however large `n` is (any `n`, even `usize::MAX`, is fine), and a
    /// datagram socket gets a buffer the size of its next datagram when `n` is larger than
    /// that, so a datagram is truncated only to `n`. The result holds no more capacity than
    /// it needs.
    pub async fn sock_recv(&self, sock: &Socket, n: usize) -> io::Result<Vec<u8>> {
        let mut buf = recv_buffer(sock, n).await?;
        let got = sock.recv(&mut buf).await?;
        fit(&mut buf, got);
        Ok(buf)
    }

    /// Receives into `buf` (asyncio's `sock_recv_into`).
    pub async fn sock_recv_into(&self, sock: &Socket, buf: &mut [u8]) -> io::Result<usize> {
        sock.recv(buf).await
    }

    /// Sends all of `data` (asyncio's `sock_sendall`).
    pub async fn sock_sendall(&self, sock: &Socket, data: &[u8]) -> io::Result<()> {
        sock.send_all(data).await
    }

    /// Connects `sock` to `addr` (asyncio's `sock_connect`).
    pub async fn sock_connect(&self, sock: &Socket, addr: &SockAddr) -> io::Result<()> {
        sock.connect(addr).await
    }

    /// Accepts a connection on a listening socket (asyncio's `sock_accept`).
    pub async fn sock_accept(&self, sock: &Socket) -> io::Result<(Socket, SockAddr)> {
        let (fd, addr) = sock.accept().await?;
        // A connection accepted on a stream listener is a stream (seqpacket stays to be asked).
        let kind = if sock.kind.get() == Kind::Stream {
            Kind::Stream
        } else {
            Kind::Unknown
        };
        Ok((Socket::own(Some(self), fd, kind)?, addr))
    }

    /// Receives a datagram and its sender (asyncio's `sock_recvfrom`): up to `n` bytes of it,
    /// with the memory rule of [`sock_recv`](LoopHandle::sock_recv) (any `n` is fine).
    pub async fn sock_recvfrom(&self, sock: &Socket, n: usize) -> io::Result<(Vec<u8>, SockAddr)> {
        let mut buf = recv_buffer(sock, n).await?;
        let (got, addr) = sock.recv_from(&mut buf).await?;
        fit(&mut buf, got);
        Ok((buf, addr))
    }

    /// Sends a datagram to `addr` (asyncio's `sock_sendto`).
    pub async fn sock_sendto(&self, sock: &Socket, data: &[u8], addr: &SockAddr) -> io::Result<usize> {
        sock.send_to(data, addr).await
    }

    /// Sends `count` bytes (all to the end when `None`) of `file` from `offset` (asyncio's
    /// `sock_sendfile`): `sendfile(2)` while the kernel supports it for this pair of fds, a
    /// read/write loop otherwise. Returns the bytes sent.
    pub async fn sock_sendfile(
        &self,
        sock: &Socket,
        file: &std::fs::File,
        offset: u64,
        count: Option<usize>,
    ) -> io::Result<u64> {
        let mut pos = offset;
        let mut sent = 0u64;
        let mut use_sendfile = true;
        // Whether `file` can be read at an offset (a regular file) or only in sequence (a pipe).
        let mut seekable = true;
        loop {
            // Bounded by the bytes sent, not by the offset: some files (`/dev/zero`) report
            // counts without moving the offset.
            let want = match count {
                Some(c) if sent >= c as u64 => return Ok(sent),
                Some(c) => (c as u64 - sent).min(1 << 30) as usize,
                None => 1 << 30,
            };
            if use_sendfile {
                let r = sock
                    .fd
                    .io(Interest::Write, |s| {
                        sys::sendfile(s.as_fd(), file.as_fd(), &mut pos, want)
                    })
                    .await;
                match r {
                    Ok(0) => return Ok(sent),
                    Ok(n) => sent += n as u64,
                    Err(e) if matches!(e.raw_os_error(), Some(sys::errno::EINVAL) | Some(sys::errno::ENOSYS)) => {
                        use_sendfile = false;
                    }
                    // A source without offsets (a pipe): read it in sequence instead.
                    Err(e) if e.raw_os_error() == Some(sys::errno::ESPIPE) => {
                        use_sendfile = false;
                        seekable = false;
                    }
                    Err(e) => return Err(e),
                }
            } else {
                let mut buf = vec![0u8; want.min(64 * 1024)];
                let n = if seekable {
                    match std::os::unix::fs::FileExt::read_at(file, &mut buf, pos) {
                        Err(e) if e.raw_os_error() == Some(sys::errno::ESPIPE) => {
                            seekable = false;
                            std::io::Read::read(&mut &*file, &mut buf)?
                        }
                        other => other?,
                    }
                } else {
                    std::io::Read::read(&mut &*file, &mut buf)?
                };
                if n == 0 {
                    return Ok(sent);
                }
                sock.send_all(&buf[..n]).await?;
                pos += n as u64;
                sent += n as u64;
            }
        }
    }
}

/// The most `sock_recv` / `sock_recvfrom` set aside up front for a stream socket.
const RECV_BUFFER_MAX: usize = 256 * 1024;

/// A zeroed buffer for receiving at most `n` bytes from `sock`, never allocated from `n`
/// alone: asyncio allocates `n` bytes, which for a large `n` is an allocation failure (an
/// abort in Rust) or a capacity overflow (a panic). Up to `RECV_BUFFER_MAX`, `n` is taken as
/// it is. Beyond it, a stream socket gets `RECV_BUFFER_MAX` (a stream read may return less
/// than asked), and a datagram socket waits for its next datagram and gets its exact size, so
/// that no datagram is cut short of `n`.
async fn recv_buffer(sock: &Socket, n: usize) -> io::Result<Vec<u8>> {
    if n <= RECV_BUFFER_MAX {
        return Ok(vec![0u8; n]);
    }
    // The socket's type is known (or learned once): no getsockopt per call.
    let len = if sock.is_stream() {
        RECV_BUFFER_MAX
    } else {
        sock.fd
            .io(Interest::Read, |fd| sys::peek_datagram_len(fd.as_fd()))
            .await?
    };
    Ok(vec![0u8; len.min(n)])
}

/// Truncates a receive buffer to what was received, giving back memory that a short receive
/// left unused.
fn fit(buf: &mut Vec<u8>, got: usize) {
    buf.truncate(got);
    if buf.capacity() > 4096 && buf.capacity() / 2 > got {
        buf.shrink_to_fit();
    }
}

impl Socket {
    /// Adopts `fd` on a given loop (which need not be running).
    ///
    /// ```
    /// use std::os::unix::net::UnixStream;
    /// use evloop::net::Socket;
    ///
    /// let lp = evloop::EventLoop::new()?;
    /// let (a, b) = UnixStream::pair()?;
    /// // Registered before the loop runs; used once it does.
    /// let (a, b) = (Socket::with_loop(&lp, a.into())?, Socket::with_loop(&lp, b.into())?);
    /// let n = lp.run_until_complete(async move {
    ///     a.send_all(b"later").await?;
    ///     b.recv(&mut [0; 8]).await
    /// })??;
    /// assert_eq!(n, 5);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn with_loop(lp: &LoopHandle, fd: OwnedFd) -> io::Result<Socket> {
        Ok(Socket {
            fd: AsyncFd::with_loop(lp, fd)?,
            kind: Cell::new(Kind::Unknown),
        })
    }
}
