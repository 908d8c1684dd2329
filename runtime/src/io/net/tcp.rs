//! TCP: [`TcpListener`] and [`TcpStream`] over a [`Socket`], and `connect_any`, the connection
//! attempt over a resolved list that the protocol layer's `create_connection` makes.
//!
//! Accepted and connected streams get `TCP_NODELAY`, as asyncio sets it on every TCP transport;
//! reads and writes are the socket's `recv` and `send`, so a [`TcpStream`]'s byte traits are
//! those of its socket (written by `forward_io!`).

use std::io;
use std::net::SocketAddr;
use std::os::fd::{AsFd, OwnedFd};
use std::task::{Context, Poll};

use evloop_syscalls as sys;
use evloop_syscalls::{SockAddr, SockType};

use crate::io::ReadBuf;
use crate::io::addr::{Resolving, ToSocketAddrs, each_addr};
use crate::io::error::with_context;
use crate::io::net::Socket;
use crate::io::net::socket::{Kind, domain_of, inet};
use crate::io::split::poll_peek_into;
use crate::io::split::tcp::{OwnedReadHalf, OwnedWriteHalf, owned_halves};
use crate::io::traits::forward_io;

/// A TCP listening socket.
///
/// ```
/// use evloop::net::{TcpListener, TcpStream};
/// use evloop::io::{AsyncReadExt, AsyncWriteExt};
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

    /// The listener of a socket that already listens (`TcpSocket::listen`).
    pub(super) fn from_listening(sock: Socket) -> TcpListener {
        TcpListener { sock }
    }

    /// The socket back (`into_std`).
    pub(super) fn into_socket(self) -> Socket {
        self.sock
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

    /// Accepts a connection if one is waiting, else parks the task's waker: tokio's
    /// `poll_accept`, for hand-written futures and streams.
    ///
    /// ```
    /// use std::future::poll_fn;
    /// use evloop::net::{TcpListener, TcpStream};
    ///
    /// evloop::run(async {
    ///     let listener = TcpListener::bind("127.0.0.1:0").await?;
    ///     let client = TcpStream::connect(listener.local_addr()?).await?;
    ///     let (_conn, peer) = poll_fn(|cx| listener.poll_accept(cx)).await?;
    ///     assert_eq!(peer, client.local_addr()?);
    ///     Ok::<(), std::io::Error>(())
    /// })??;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn poll_accept(&self, cx: &mut std::task::Context<'_>) -> std::task::Poll<io::Result<(TcpStream, SocketAddr)>> {
        self.sock
            .poll_accept(cx)
            .map(|r| r.and_then(|(fd, addr)| Ok((TcpStream::from_accepted(fd)?, inet(addr, "accept")?))))
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

/// A TCP connection. Reads and writes through [`AsyncRead`](crate::io::AsyncRead) /
/// [`AsyncWrite`](crate::io::AsyncWrite) (and their `Ext`
/// helpers); [`TcpStream::into_split`] gives independent read and write halves.
///
/// ```
/// use evloop::net::{TcpListener, TcpStream};
/// use evloop::io::{AsyncReadExt, AsyncWriteExt};
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

    /// The stream of a socket (`reunite` of the owned halves).
    pub(crate) fn from_socket(sock: Socket) -> TcpStream {
        TcpStream { sock }
    }

    /// The socket back (`into_std`).
    pub(crate) fn into_socket(self) -> Socket {
        self.sock
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
    /// use evloop::io::AsyncReadExt;
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

    /// Copies the next received bytes into `buf` without taking them (`recv(MSG_PEEK)`,
    /// tokio's `peek`): waits for data like a read; 0 is end of stream. Several peeks see the
    /// same bytes; the next read takes them.
    ///
    /// ```
    /// use evloop::io::{AsyncReadExt, AsyncWriteExt};
    /// use evloop::net::{TcpListener, TcpStream};
    ///
    /// evloop::run(async {
    ///     let listener = TcpListener::bind("127.0.0.1:0").await?;
    ///     let mut client = TcpStream::connect(listener.local_addr()?).await?;
    ///     let (mut server, _) = listener.accept().await?;
    ///     client.write_all(b"hello").await?;
    ///     let mut buf = [0; 5];
    ///     let n = server.peek(&mut buf).await?;
    ///     assert_eq!(&buf[..n], &b"hello"[..n]);
    ///     server.read_exact(&mut buf).await?; // still all there
    ///     assert_eq!(&buf, b"hello");
    ///     Ok::<(), std::io::Error>(())
    /// })??;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub async fn peek(&self, buf: &mut [u8]) -> io::Result<usize> {
        std::future::poll_fn(|cx| self.sock.poll_peek(cx, buf)).await
    }

    /// `poll` form of [`peek`](Self::peek), into a [`ReadBuf`]: the bytes are counted filled,
    /// and their number returned.
    ///
    /// ```
    /// use std::future::poll_fn;
    /// use evloop::io::{AsyncWriteExt, ReadBuf};
    /// use evloop::net::{TcpListener, TcpStream};
    ///
    /// evloop::run(async {
    ///     let listener = TcpListener::bind("127.0.0.1:0").await?;
    ///     let mut client = TcpStream::connect(listener.local_addr()?).await?;
    ///     let (server, _) = listener.accept().await?;
    ///     client.write_all(b"z").await?;
    ///     let mut storage = [0; 4];
    ///     let mut buf = ReadBuf::new(&mut storage);
    ///     assert_eq!(poll_fn(|cx| server.poll_peek(cx, &mut buf)).await?, 1);
    ///     assert_eq!(buf.filled(), b"z");
    ///     Ok::<(), std::io::Error>(())
    /// })??;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn poll_peek(&self, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<usize>> {
        poll_peek_into(&self.sock, cx, buf)
    }

    /// Makes the socket's close abort the connection (`SO_LINGER` on with a zero timeout,
    /// tokio's `set_zero_linger`): dropping the stream then discards unsent data and sends an
    /// RST instead of a FIN, and the socket skips `TIME_WAIT`.
    ///
    /// ```
    /// use evloop::io::AsyncReadExt;
    /// use evloop::net::{TcpListener, TcpStream};
    ///
    /// evloop::run(async {
    ///     let listener = TcpListener::bind("127.0.0.1:0").await?;
    ///     let client = TcpStream::connect(listener.local_addr()?).await?;
    ///     let (mut server, _) = listener.accept().await?;
    ///     client.set_zero_linger()?;
    ///     drop(client); // RST
    ///     let err = server.read(&mut [0; 8]).await.unwrap_err();
    ///     assert_eq!(err.kind(), std::io::ErrorKind::ConnectionReset);
    ///     Ok::<(), std::io::Error>(())
    /// })??;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn set_zero_linger(&self) -> io::Result<()> {
        sys::set_linger_zero(self.sock.as_fd())
    }

    /// The underlying socket (for `shutdown(Shutdown::Read)` and socket options; the write
    /// side's half-close is `AsyncWriteExt::shutdown`).
    ///
    /// ```
    /// use evloop::net::{Shutdown, TcpListener, TcpStream};
    /// use evloop::io::AsyncReadExt;
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
    /// use evloop::io::{AsyncReadExt, AsyncWriteExt};
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
        owned_halves(self.sock)
    }
}

forward_io!([] AsyncRead, AsyncWrite for TcpStream => socket |s| &s.sock);

/// [`TcpStream::from_std`] as a conversion (tokio has it: `std_stream.try_into()?`).
///
/// ```
/// use evloop::net::{TcpListener, TcpStream};
///
/// evloop::run(async {
///     let listener = TcpListener::bind("127.0.0.1:0").await?;
///     let std_stream = std::net::TcpStream::connect(listener.local_addr()?)?;
///     let stream: TcpStream = std_stream.try_into()?;
///     assert_eq!(stream.peer_addr()?, listener.local_addr()?);
///     Ok::<(), std::io::Error>(())
/// })??;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
impl TryFrom<std::net::TcpStream> for TcpStream {
    type Error = io::Error;

    fn try_from(stream: std::net::TcpStream) -> io::Result<TcpStream> {
        TcpStream::from_std(stream)
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
