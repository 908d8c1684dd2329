//! Unix-domain sockets: [`UnixListener`] and [`UnixStream`] (byte streams), [`UnixDatagram`]
//! (datagrams), each over a [`Socket`] with [`UnixAddr`] addresses: a pathname, an abstract
//! name, or unnamed (a socket that never bound, or one end of a `socketpair`).

use std::io;

use evloop_syscalls as sys;
use evloop_syscalls::{Domain, SockAddr, SockType, UnixAddr};

use crate::io::net::Socket;
use crate::io::net::socket::{Kind, unix};
use crate::io::split::unix::{OwnedReadHalf, OwnedWriteHalf, owned_halves};
use crate::io::traits::forward_io;

/// A Unix-domain listening socket (pathname or abstract address).
///
/// ```
/// use evloop::net::{UnixAddr, UnixListener, UnixStream};
/// use evloop::io::{AsyncReadExt, AsyncWriteExt};
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

    /// Accepts a connection if one is waiting, else parks the task's waker: tokio's
    /// `poll_accept`.
    ///
    /// ```
    /// use std::future::poll_fn;
    /// use evloop::net::{UnixAddr, UnixListener, UnixStream};
    ///
    /// evloop::run(async {
    ///     let addr = UnixAddr::abstract_name(format!("evloop-poll-accept-{}", std::process::id()).as_bytes())?;
    ///     let listener = UnixListener::bind(&addr)?;
    ///     let _client = UnixStream::connect(&addr).await?;
    ///     let (conn, _) = poll_fn(|cx| listener.poll_accept(cx)).await?;
    ///     assert_eq!(conn.local_addr()?, addr);
    ///     Ok::<(), std::io::Error>(())
    /// })??;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn poll_accept(&self, cx: &mut std::task::Context<'_>) -> std::task::Poll<io::Result<(UnixStream, UnixAddr)>> {
        self.sock.poll_accept(cx).map(|r| {
            r.and_then(|(fd, addr)| {
                let sock = Socket::own(None, fd, Kind::Stream)?;
                Ok((UnixStream { sock }, unix(addr, "accept")?))
            })
        })
    }

    /// The listener of a socket that already listens (`from_std`).
    pub(super) fn from_listening(sock: Socket) -> UnixListener {
        UnixListener { sock }
    }

    /// The socket back (`into_std`).
    pub(super) fn into_socket(self) -> Socket {
        self.sock
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
/// use evloop::io::{AsyncReadExt, AsyncWriteExt};
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
    /// The stream of a socket (`reunite` of the owned halves).
    pub(crate) fn from_socket(sock: Socket) -> UnixStream {
        UnixStream { sock }
    }

    /// The socket back (`into_std`).
    pub(crate) fn into_socket(self) -> Socket {
        self.sock
    }

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
    /// use evloop::io::{AsyncReadExt, AsyncWriteExt};
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
    /// use evloop::io::AsyncReadExt;
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
    /// use evloop::io::{AsyncReadExt, AsyncWriteExt};
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
        owned_halves(self.sock)
    }
}

forward_io!([] AsyncRead, AsyncWrite for UnixStream => socket |s| &s.sock);

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
        self.sock.recv_datagram(buf).await
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
