//! Opening streams: `open_connection`, `start_server` and their Unix-socket twins, asyncio's
//! four module functions of `asyncio.streams`. Each returns a builder whose methods set the
//! options (`.limit(n)`) and which is awaited (`IntoFuture`) on the running loop: awaiting it
//! builds a `Conn` and a `StreamProtocol` and hands them to the protocol layer
//! (`create_connection`, `create_server`, ...); a server's protocol starts the user's handler in
//! its own task on each connection.

use std::future::{Future, IntoFuture};
use std::io;
use std::pin::Pin;
use std::rc::Rc;

use crate::event_loop::{LoopHandle, get_running_loop};
use crate::io::net::UnixAddr;
use crate::io::protocol::{Server, Transport};
use crate::io::stream::config::StreamConfig;
use crate::io::stream::conn::{Conn, ConnectHook, StreamProtocol, pair};
use crate::io::stream::{StreamReader, StreamWriter};

/// A client connection's protocol, and the `Conn` it shares with the streams to come.
fn client_protocol(config: StreamConfig) -> (Rc<Conn>, StreamProtocol) {
    let conn = Conn::new(config);
    let protocol = StreamProtocol {
        conn: conn.clone(),
        on_connect: None,
    };
    (conn, protocol)
}

fn client_pair(conn: Rc<Conn>, transport: Transport) -> (StreamReader, StreamWriter) {
    *conn.transport.borrow_mut() = Some(transport.clone());
    pair(conn, transport)
}

/// A server's protocol factory: each connection gets its own `Conn`, and its protocol starts
/// `handler` on the streams once the connection is made.
fn server_protocols<H, Fut>(lp: &LoopHandle, handler: H, config: StreamConfig) -> impl Fn() -> StreamProtocol + 'static
where
    H: Fn(StreamReader, StreamWriter) -> Fut + 'static,
    Fut: Future<Output = ()> + 'static,
{
    let hook = connect_hook(lp, handler);
    move || StreamProtocol {
        conn: Conn::new(config),
        on_connect: Some(hook.clone()),
    }
}

/// `start_server`'s protocols (default options), boxed: for servers that start each connection
/// themselves (the servers of `evloop::runtime`, one factory per loop).
pub(crate) fn boxed_server_protocols<H, Fut>(
    lp: &LoopHandle,
    handler: H,
) -> impl Fn() -> Box<dyn crate::io::protocol::Protocol> + 'static
where
    H: Fn(StreamReader, StreamWriter) -> Fut + 'static,
    Fut: Future<Output = ()> + 'static,
{
    let protocols = server_protocols(lp, handler, StreamConfig::new());
    move || Box::new(protocols())
}

/// The hook a server's protocols call on each connection: spawns `handler(reader, writer)` as a
/// detached task (a panic in it reaches the loop's exception handler).
fn connect_hook<H, Fut>(lp: &LoopHandle, handler: H) -> Rc<ConnectHook>
where
    H: Fn(StreamReader, StreamWriter) -> Fut + 'static,
    Fut: Future<Output = ()> + 'static,
{
    let lp = lp.clone();
    let handler = Rc::new(handler);
    Rc::new(move |reader: StreamReader, writer: StreamWriter| {
        let h = handler.clone();
        // The handler is called inside the task, so that even its synchronous part fails as
        // the task (reported as an unobserved task failure), not as the protocol callback.
        // If the loop is closed the future is dropped with the streams, which closes the
        // connection.
        if let Ok(task) = lp.create_task(async move { h(reader, writer).await }) {
            task.detach();
        }
    })
}

fn running(op: &'static str) -> io::Result<LoopHandle> {
    get_running_loop().map_err(|e| io::Error::other(format!("{op}: {e}")))
}

/// What awaiting one of the builders gives: a boxed future borrowing the builder's arguments.
type Opening<'a, T> = Pin<Box<dyn Future<Output = io::Result<T>> + 'a>>;

/// Connects to `host:port` on the running loop and returns the streams (asyncio's
/// `open_connection`): the name is resolved like `LoopHandle::create_connection` does (on the
/// executor unless it is an IP literal) and each address is tried in turn; the error names the
/// address. Options are the builder's methods ([`OpenConnection::limit`]).
///
/// ```
/// evloop::run(async {
///     let server = evloop::streams::start_server(|_r, w| async move { w.write(b"welcome\n") }, "127.0.0.1", 0).await?;
///     // reader, writer = await asyncio.open_connection('127.0.0.1', port)
///     let (reader, writer) = evloop::streams::open_connection("127.0.0.1", server.local_addr().port()).await?;
///     assert_eq!(reader.readline().await?, b"welcome\n");
///     writer.close();
///     writer.wait_closed().await?;
///     Ok::<(), Box<dyn std::error::Error>>(())
/// })??;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn open_connection(host: &str, port: u16) -> OpenConnection<'_> {
    OpenConnection {
        host,
        port,
        config: StreamConfig::new(),
    }
}

/// The builder [`open_connection`] returns: await it for the streams.
///
/// ```
/// evloop::run(async {
///     let server = evloop::streams::start_server(|_r, _w| async {}, "127.0.0.1", 0).await?;
///     let connect = evloop::streams::open_connection("127.0.0.1", server.local_addr().port());
///     let (reader, _w) = connect.limit(1 << 20).await?; // asyncio's limit=
///     assert_eq!(reader.limit(), 1 << 20);
///     Ok::<(), Box<dyn std::error::Error>>(())
/// })??;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[must_use = "builders do nothing until they are built, run or awaited"]
#[derive(Debug)]
pub struct OpenConnection<'a> {
    host: &'a str,
    port: u16,
    config: StreamConfig,
}

impl OpenConnection<'_> {
    /// The reader's buffer limit (asyncio's `limit=`, [`DEFAULT_LIMIT`](crate::streams::DEFAULT_LIMIT)
    /// by default): the longest line or `readuntil` chunk accepted, and the back-pressure
    /// threshold (reading pauses above twice the limit, resumes at the limit). 0 is taken as 1.
    ///
    /// ```
    /// use evloop::streams::StreamError;
    ///
    /// evloop::run(async {
    ///     // A server whose client gets a line longer than its limit.
    ///     let server = evloop::streams::start_server(|_r, w| async move { w.write(b"this line is too long\n") }, "127.0.0.1", 0).await?;
    ///     let (reader, _w) = evloop::streams::open_connection("127.0.0.1", server.local_addr().port()).limit(8).await?;
    ///     let err = reader.readline().await.unwrap_err();
    ///     assert!(matches!(err, StreamError::LimitOverrun { limit: 8, .. }));
    ///     Ok::<(), Box<dyn std::error::Error>>(())
    /// })??;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn limit(mut self, limit: usize) -> Self {
        self.config = self.config.limit(limit);
        self
    }
}

impl<'a> IntoFuture for OpenConnection<'a> {
    type Output = io::Result<(StreamReader, StreamWriter)>;
    type IntoFuture = Opening<'a, (StreamReader, StreamWriter)>;

    fn into_future(self) -> Self::IntoFuture {
        Box::pin(async move {
            let lp = running("open_connection")?;
            let (conn, protocol) = client_protocol(self.config);
            let transport = lp.create_connection(protocol, self.host, self.port).await?;
            Ok(client_pair(conn, transport))
        })
    }
}

/// Connects to a Unix socket on the running loop (asyncio's `open_unix_connection`); options as
/// for [`open_connection`].
///
/// ```
/// use evloop::net::UnixAddr;
///
/// evloop::run(async {
///     let addr = UnixAddr::abstract_name(format!("evloop-doc-{}", std::process::id()).as_bytes())?;
///     let _server = evloop::streams::start_unix_server(|_r, w| async move { w.write(b"local hello") }, &addr).await?;
///     let (reader, _w) = evloop::streams::open_unix_connection(&addr).await?;
///     assert_eq!(reader.read_to_end().await?, b"local hello");
///     Ok::<(), Box<dyn std::error::Error>>(())
/// })??;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn open_unix_connection(addr: &UnixAddr) -> OpenUnixConnection<'_> {
    OpenUnixConnection {
        addr,
        config: StreamConfig::new(),
    }
}

/// The builder [`open_unix_connection`] returns: await it for the streams.
///
/// ```
/// use evloop::net::UnixAddr;
///
/// evloop::run(async {
///     let addr = UnixAddr::abstract_name(format!("evloop-doc-{}", std::process::id()).as_bytes())?;
///     let _server = evloop::streams::start_unix_server(|_r, _w| async {}, &addr).await?;
///     let (reader, _w) = evloop::streams::open_unix_connection(&addr).limit(512).await?;
///     assert_eq!(reader.limit(), 512);
///     Ok::<(), Box<dyn std::error::Error>>(())
/// })??;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[must_use = "builders do nothing until they are built, run or awaited"]
#[derive(Debug)]
pub struct OpenUnixConnection<'a> {
    addr: &'a UnixAddr,
    config: StreamConfig,
}

impl OpenUnixConnection<'_> {
    /// The reader's buffer limit, as [`OpenConnection::limit`].
    ///
    /// ```
    /// use evloop::net::UnixAddr;
    ///
    /// evloop::run(async {
    ///     let addr = UnixAddr::abstract_name(format!("evloop-doc-l-{}", std::process::id()).as_bytes())?;
    ///     let _server = evloop::streams::start_unix_server(|_r, _w| async {}, &addr).await?;
    ///     let (reader, _w) = evloop::streams::open_unix_connection(&addr).limit(0).await?;
    ///     assert_eq!(reader.limit(), 1); // 0 is taken as 1
    ///     Ok::<(), Box<dyn std::error::Error>>(())
    /// })??;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn limit(mut self, limit: usize) -> Self {
        self.config = self.config.limit(limit);
        self
    }
}

impl<'a> IntoFuture for OpenUnixConnection<'a> {
    type Output = io::Result<(StreamReader, StreamWriter)>;
    type IntoFuture = Opening<'a, (StreamReader, StreamWriter)>;

    fn into_future(self) -> Self::IntoFuture {
        Box::pin(async move {
            let lp = running("open_unix_connection")?;
            let (conn, protocol) = client_protocol(self.config);
            let transport = lp.create_unix_connection(protocol, self.addr).await?;
            Ok(client_pair(conn, transport))
        })
    }
}

/// Serves `handler` on the running loop, on every address `host` resolves to (port 0 picks a
/// free port): each connection runs `handler(reader, writer)` in its own task (asyncio's
/// `start_server` with its `client_connected_cb`). A handler that panics is reported to the
/// exception handler; the server keeps serving. The connection closes when the handler drops
/// its streams. Options are the builder's methods ([`StartServer::limit`]).
///
/// ```
/// // An echo server, as in asyncio's documentation: one task per connection.
/// async fn handle_echo(reader: evloop::streams::StreamReader, writer: evloop::streams::StreamWriter) {
///     if let Ok(data) = reader.read(100).await {
///         writer.write(&data);
///         let _ = writer.drain().await;
///     }
///     writer.close();
/// }
///
/// evloop::run(async {
///     let server = evloop::streams::start_server(handle_echo, "127.0.0.1", 0).await?;
///     let (reader, writer) = evloop::streams::open_connection("127.0.0.1", server.local_addr().port()).await?;
///     writer.write(b"Hello World!");
///     assert_eq!(reader.read_to_end().await?, b"Hello World!");
///     server.close();
///     server.wait_closed().await;
///     Ok::<(), Box<dyn std::error::Error>>(())
/// })??;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn start_server<H, Fut>(handler: H, host: &str, port: u16) -> StartServer<'_, H>
where
    H: Fn(StreamReader, StreamWriter) -> Fut + 'static,
    Fut: Future<Output = ()> + 'static,
{
    StartServer {
        handler,
        host,
        port,
        config: StreamConfig::new(),
    }
}

/// The builder [`start_server`] returns: await it for the [`Server`].
///
/// ```
/// evloop::run(async {
///     let server = evloop::streams::start_server(
///         |reader, writer| async move { writer.write(reader.limit().to_string().as_bytes()) },
///         "127.0.0.1",
///         0,
///     )
///     .limit(4096) // each connection's reader limit
///     .await?;
///     let (reader, _w) = evloop::streams::open_connection("127.0.0.1", server.local_addr().port()).await?;
///     assert_eq!(reader.read_to_end().await?, b"4096");
///     Ok::<(), Box<dyn std::error::Error>>(())
/// })??;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[must_use = "builders do nothing until they are built, run or awaited"]
pub struct StartServer<'a, H> {
    handler: H,
    host: &'a str,
    port: u16,
    config: StreamConfig,
}

impl<H> StartServer<'_, H> {
    /// Each connection's reader limit, as [`OpenConnection::limit`].
    ///
    /// ```
    /// evloop::run(async {
    ///     let server = evloop::streams::start_server(
    ///         |reader, writer| async move { writer.write(reader.limit().to_string().as_bytes()) },
    ///         "127.0.0.1",
    ///         0,
    ///     )
    ///     .limit(100)
    ///     .await?;
    ///     let (reader, _w) = evloop::streams::open_connection("127.0.0.1", server.local_addr().port()).await?;
    ///     assert_eq!(reader.read_to_end().await?, b"100");
    ///     Ok::<(), Box<dyn std::error::Error>>(())
    /// })??;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn limit(mut self, limit: usize) -> Self {
        self.config = self.config.limit(limit);
        self
    }
}

impl<'a, H, Fut> IntoFuture for StartServer<'a, H>
where
    H: Fn(StreamReader, StreamWriter) -> Fut + 'static,
    Fut: Future<Output = ()> + 'static,
{
    type Output = io::Result<Server>;
    type IntoFuture = Opening<'a, Server>;

    fn into_future(self) -> Self::IntoFuture {
        Box::pin(async move {
            let lp = running("start_server")?;
            let protocols = server_protocols(&lp, self.handler, self.config);
            lp.create_server(protocols, self.host, self.port).await
        })
    }
}

/// Serves `handler` on a Unix socket on the running loop (asyncio's `start_unix_server`); see
/// [`start_server`]. A pathname socket's file is removed by `Server::close`.
///
/// ```
/// use evloop::net::UnixAddr;
///
/// evloop::run(async {
///     let path = std::env::temp_dir().join(format!("evloop-doc-{}.sock", std::process::id()));
///     let addr = UnixAddr::pathname(&path)?;
///     let server = evloop::streams::start_unix_server(|_r, w| async move { w.write(b"hi") }, &addr).await?;
///     assert_eq!(server.local_addr(), addr);
///     let (reader, _w) = evloop::streams::open_unix_connection(&addr).await?;
///     assert_eq!(reader.read_to_end().await?, b"hi");
///     server.close(); // also removes the socket file
///     assert!(!path.exists());
///     Ok::<(), Box<dyn std::error::Error>>(())
/// })??;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn start_unix_server<H, Fut>(handler: H, addr: &UnixAddr) -> StartUnixServer<'_, H>
where
    H: Fn(StreamReader, StreamWriter) -> Fut + 'static,
    Fut: Future<Output = ()> + 'static,
{
    StartUnixServer {
        handler,
        addr,
        config: StreamConfig::new(),
    }
}

/// The builder [`start_unix_server`] returns: await it for the [`Server`].
///
/// ```
/// use evloop::net::UnixAddr;
///
/// evloop::run(async {
///     let addr = UnixAddr::abstract_name(format!("evloop-doc-{}", std::process::id()).as_bytes())?;
///     let _server = evloop::streams::start_unix_server(
///         |reader, writer| async move { writer.write(reader.limit().to_string().as_bytes()) },
///         &addr,
///     )
///     .limit(64)
///     .await?;
///     let (reader, _w) = evloop::streams::open_unix_connection(&addr).await?;
///     assert_eq!(reader.read_to_end().await?, b"64");
///     Ok::<(), Box<dyn std::error::Error>>(())
/// })??;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[must_use = "builders do nothing until they are built, run or awaited"]
pub struct StartUnixServer<'a, H> {
    handler: H,
    addr: &'a UnixAddr,
    config: StreamConfig,
}

impl<H> StartUnixServer<'_, H> {
    /// Each connection's reader limit, as [`OpenConnection::limit`].
    ///
    /// ```
    /// use evloop::net::UnixAddr;
    ///
    /// evloop::run(async {
    ///     let addr = UnixAddr::abstract_name(format!("evloop-doc-u-{}", std::process::id()).as_bytes())?;
    ///     let _server = evloop::streams::start_unix_server(
    ///         |reader, writer| async move { writer.write(reader.limit().to_string().as_bytes()) },
    ///         &addr,
    ///     )
    ///     .limit(32)
    ///     .await?;
    ///     let (reader, _w) = evloop::streams::open_unix_connection(&addr).await?;
    ///     assert_eq!(reader.read_to_end().await?, b"32");
    ///     Ok::<(), Box<dyn std::error::Error>>(())
    /// })??;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn limit(mut self, limit: usize) -> Self {
        self.config = self.config.limit(limit);
        self
    }
}

impl<'a, H, Fut> IntoFuture for StartUnixServer<'a, H>
where
    H: Fn(StreamReader, StreamWriter) -> Fut + 'static,
    Fut: Future<Output = ()> + 'static,
{
    type Output = io::Result<Server<UnixAddr>>;
    type IntoFuture = Opening<'a, Server<UnixAddr>>;

    fn into_future(self) -> Self::IntoFuture {
        Box::pin(async move {
            let lp = running("start_unix_server")?;
            lp.create_unix_server(server_protocols(&lp, self.handler, self.config), self.addr)
        })
    }
}
