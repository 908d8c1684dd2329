//! [`Socket`]: a non-blocking socket of any family and type registered with the loop (asyncio's
//! socket object for the `sock_*` API), and the one every typed socket of this folder wraps.
//!
//! Its operations are one syscall each under [`AsyncFd::poll_io`]: `recv`/`send` wait for the
//! edge they need and clear it on `EAGAIN`; a byte stream's short receive or send clears it at
//! once (the queue was drained or filled), which a message socket's never does. `connect` is
//! asyncio's `sock_connect` (see [`Socket::connect`]). The helpers at the end turn the generic
//! [`SockAddr`] into the typed addresses the typed sockets return.

use std::cell::Cell;
use std::fmt;
use std::io::{self, IoSlice};
use std::net::SocketAddr;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd, RawFd};
use std::rc::Rc;
use std::task::{Context, Poll};

use evloop_syscalls as sys;
use evloop_syscalls::{Domain, Shutdown, SockAddr, SockType, UnixAddr};

use crate::event_loop::LoopHandle;
use crate::event_loop::reactor::IoState;
use crate::io::error::with_context;
use crate::io::{AsyncFd, Interest, fd_context};

/// A non-blocking socket of any family and type, registered with the loop: what asyncio's
/// `sock_*` functions take. The typed sockets ([`TcpStream`](crate::net::TcpStream),
/// [`UdpSocket`](crate::net::UdpSocket), ...) wrap one.
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
pub(super) enum Kind {
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

    /// Adopts `fd` on a given loop (which need not be running).
    ///
    /// ```
    /// use std::os::unix::net::UnixStream;
    /// use evloop::net::Socket;
    ///
    /// let lp = evloop::event_loop::EventLoop::new()?;
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

    /// Adopts `fd` on the running loop, its type already known (or to be asked).
    pub(super) fn adopt(fd: OwnedFd, kind: Kind) -> io::Result<Socket> {
        Ok(Socket {
            fd: AsyncFd::new(fd)?,
            kind: Cell::new(kind),
        })
    }

    /// Registers a socket the syscall layer just made (`socket`, `accept4`, `socketpair`: all
    /// `SOCK_NONBLOCK`) with `lp`, or the running loop: unlike [`adopt`](Self::adopt), no
    /// `fcntl` to check the flag, one syscall less per connection.
    pub(super) fn own(lp: Option<&LoopHandle>, fd: OwnedFd, kind: Kind) -> io::Result<Socket> {
        Ok(Socket {
            fd: AsyncFd::new_nonblocking(lp, fd)?,
            kind: Cell::new(kind),
        })
    }

    /// Whether this is a byte stream (`SOCK_STREAM`): asks the kernel once for an adopted fd.
    /// A socket whose type cannot be read is treated as a message socket, which only forgoes
    /// the byte-stream shortcuts.
    #[inline]
    pub(super) fn is_stream(&self) -> bool {
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

    /// The type as known so far, without asking the kernel (`Unknown` for an adopted fd that
    /// was never asked).
    pub(super) fn known_kind(&self) -> Kind {
        self.kind.get()
    }

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
    pub(crate) fn into_registered(self) -> (OwnedFd, Rc<IoState>) {
        self.fd.into_parts()
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
    /// use evloop::io::Interest;
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
            Err(e) if e.raw_os_error() == Some(sys::errno::EAGAIN) && matches!(addr, SockAddr::Unix(_)) => {
                return self.connect_past_full_backlog(addr).await;
            }
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

    /// A Unix listener whose backlog is full answers a non-blocking `connect` with `EAGAIN`
    /// (TCP's `EAGAIN` means no local port is left: an error). Unlike `EINPROGRESS` it leaves no
    /// attempt under way, and the kernel wakes only a *blocking* connect when the backlog gets
    /// room: the unconnected socket reports itself writable at once, so asyncio's wait for
    /// writability plus `SO_ERROR` would take that for a connection. Here each round checks
    /// `SO_ERROR` (a pending error ends the wait, as in asyncio), then pauses (1 ms, doubling to
    /// 64 ms) and connects again, until the listener takes the connection or refuses it
    /// (`ECONNREFUSED` once it is closed). Like a blocking connect it waits without limit: a
    /// caller that wants one wraps the call in a timeout.
    async fn connect_past_full_backlog(&self, addr: &SockAddr) -> io::Result<()> {
        let mut pause = std::time::Duration::from_millis(1);
        loop {
            if let Some(e) = self.take_error()? {
                return Err(addr_context("connect", addr, e));
            }
            crate::task::time::sleep(pause).await;
            pause = (pause * 2).min(std::time::Duration::from_millis(64));
            match sys::connect(self.as_fd(), addr) {
                Ok(()) => return Ok(()),
                Err(e) if e.raw_os_error() == Some(sys::errno::EAGAIN) => {}
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

    /// Copies the next bytes of a stream's receive queue into `buf` without taking them
    /// (`recv(MSG_PEEK)`), for the streams' `peek`. Readiness is kept on a short peek: unlike a
    /// short read, it does not drain the queue, so only `EAGAIN` clears it.
    pub(crate) fn poll_peek(&self, cx: &mut Context<'_>, buf: &mut [u8]) -> Poll<io::Result<usize>> {
        if buf.is_empty() {
            return Poll::Ready(Ok(0));
        }
        let r = self
            .fd
            .poll_io(cx, Interest::Read, |fd| sys::recv_peek(fd.as_fd(), buf));
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

    /// One `recv` of one datagram, for the typed datagram sockets' `recv`: unlike
    /// [`recv`](Self::recv), an empty `buf` is passed to the kernel too (which takes, and
    /// discards, the next datagram).
    pub(super) async fn recv_datagram(&self, buf: &mut [u8]) -> io::Result<usize> {
        let fd = self.as_raw_fd();
        std::future::poll_fn(|cx| {
            let r = self.fd.poll_io(cx, Interest::Read, |s| sys::recv(s.as_fd(), buf));
            fd_context("recv", fd, r)
        })
        .await
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

// ---------------------------------------------------------------------------------------------
// Address helpers for the typed sockets.

pub(super) fn addr_context(op: &str, addr: &dyn fmt::Display, e: io::Error) -> io::Error {
    with_context(format!("{op}({addr})"), e)
}

pub(crate) fn domain_of(addr: &SocketAddr) -> Domain {
    match addr {
        SocketAddr::V4(_) => Domain::Inet,
        SocketAddr::V6(_) => Domain::Inet6,
    }
}

pub(super) fn inet(addr: SockAddr, op: &str) -> io::Result<SocketAddr> {
    match addr {
        SockAddr::Inet(a) => Ok(a),
        other => Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("{op}: expected an IP address, got {other}"),
        )),
    }
}

pub(super) fn unix(addr: SockAddr, op: &str) -> io::Result<UnixAddr> {
    match addr {
        SockAddr::Unix(a) => Ok(a),
        other => Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("{op}: expected a Unix address, got {other}"),
        )),
    }
}
