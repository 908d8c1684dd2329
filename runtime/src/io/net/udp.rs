//! UDP: [`UdpSocket`], a datagram [`Socket`] with internet addresses and name resolution off
//! the loop (for callbacks instead of a task, see `LoopHandle::create_datagram_endpoint`).
//!
//! A datagram is sent whole or not at all, and one `recv` takes one datagram, truncated to the
//! buffer; so no short transfer clears readiness here, only `EAGAIN` does.

use std::io;
use std::net::SocketAddr;
use std::os::fd::AsFd;

use evloop_syscalls as sys;
use evloop_syscalls::{SockAddr, SockType};

use crate::io::addr::{Resolving, ToSocketAddrs, each_addr};
use crate::io::net::Socket;
use crate::io::net::socket::{addr_context, domain_of, inet};

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
    /// The UDP socket of a datagram socket (`from_std`).
    pub(super) fn from_socket(sock: Socket) -> UdpSocket {
        UdpSocket { sock }
    }

    /// The socket back (`into_std`).
    pub(super) fn into_socket(self) -> Socket {
        self.sock
    }

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
        self.sock.recv_datagram(buf).await
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
