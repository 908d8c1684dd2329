//! Opening streams: `open_connection`, `start_server` and their Unix-socket and `_with(config)`
//! forms, as loop methods and as free functions on the running loop (the 16 entry points of
//! asyncio's `asyncio.streams`). Each builds a `Conn` and a `StreamProtocol` and hands it to the
//! protocol layer (`create_connection`, `create_server`, ...); a server's protocol starts the
//! user's handler in its own task on each connection.

use std::future::Future;
use std::io;
use std::rc::Rc;

use crate::event_loop::{LoopHandle, get_running_loop};
use crate::io::net::UnixAddr;
use crate::io::protocol::{Server, Transport};
use crate::io::stream::conn::{Conn, ConnectHook, StreamProtocol, pair};
use crate::io::stream::{StreamConfig, StreamReader, StreamWriter};

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

impl LoopHandle {
    /// Connects to `host:port` and returns its streams (asyncio's `open_connection`): the name
    /// is resolved like [`LoopHandle::create_connection`] does (on the executor unless it is an
    /// IP literal) and each address is tried in turn; the error names the address.
    pub async fn open_connection(&self, host: &str, port: u16) -> io::Result<(StreamReader, StreamWriter)> {
        self.open_connection_with(host, port, StreamConfig::new()).await
    }

    /// [`LoopHandle::open_connection`] with options (the reader's limit).
    pub async fn open_connection_with(
        &self,
        host: &str,
        port: u16,
        config: StreamConfig,
    ) -> io::Result<(StreamReader, StreamWriter)> {
        let (conn, protocol) = client_protocol(config);
        let transport = self.create_connection(protocol, host, port).await?;
        Ok(client_pair(conn, transport))
    }

    /// Connects to a Unix socket and returns its streams (asyncio's `open_unix_connection`).
    pub async fn open_unix_connection(&self, addr: &UnixAddr) -> io::Result<(StreamReader, StreamWriter)> {
        self.open_unix_connection_with(addr, StreamConfig::new()).await
    }

    /// [`LoopHandle::open_unix_connection`] with options.
    pub async fn open_unix_connection_with(
        &self,
        addr: &UnixAddr,
        config: StreamConfig,
    ) -> io::Result<(StreamReader, StreamWriter)> {
        let (conn, protocol) = client_protocol(config);
        let transport = self.create_unix_connection(protocol, addr).await?;
        Ok(client_pair(conn, transport))
    }

    /// Serves on every address `host` resolves to (port 0 picks a free port): each connection
    /// runs `handler(reader, writer)` in its own task (asyncio's `start_server` with its
    /// `client_connected_cb`). A handler that panics is reported to the exception handler; the
    /// server keeps serving. The connection closes when the handler drops its streams.
    pub async fn start_server<H, Fut>(&self, handler: H, host: &str, port: u16) -> io::Result<Server>
    where
        H: Fn(StreamReader, StreamWriter) -> Fut + 'static,
        Fut: Future<Output = ()> + 'static,
    {
        self.start_server_with(handler, host, port, StreamConfig::new()).await
    }

    /// [`LoopHandle::start_server`] with options (each connection's reader limit).
    pub async fn start_server_with<H, Fut>(
        &self,
        handler: H,
        host: &str,
        port: u16,
        config: StreamConfig,
    ) -> io::Result<Server>
    where
        H: Fn(StreamReader, StreamWriter) -> Fut + 'static,
        Fut: Future<Output = ()> + 'static,
    {
        self.create_server(server_protocols(self, handler, config), host, port)
            .await
    }

    /// Serves on a Unix socket (asyncio's `start_unix_server`); see
    /// [`LoopHandle::start_server`]. A pathname socket's file is removed by `Server::close`.
    pub fn start_unix_server<H, Fut>(&self, handler: H, addr: &UnixAddr) -> io::Result<Server<UnixAddr>>
    where
        H: Fn(StreamReader, StreamWriter) -> Fut + 'static,
        Fut: Future<Output = ()> + 'static,
    {
        self.start_unix_server_with(handler, addr, StreamConfig::new())
    }

    /// [`LoopHandle::start_unix_server`] with options.
    pub fn start_unix_server_with<H, Fut>(
        &self,
        handler: H,
        addr: &UnixAddr,
        config: StreamConfig,
    ) -> io::Result<Server<UnixAddr>>
    where
        H: Fn(StreamReader, StreamWriter) -> Fut + 'static,
        Fut: Future<Output = ()> + 'static,
    {
        self.create_unix_server(server_protocols(self, handler, config), addr)
    }
}

fn running(op: &'static str) -> io::Result<LoopHandle> {
    get_running_loop().map_err(|e| io::Error::other(format!("{op}: {e}")))
}

/// Connects to `host:port` on the running loop and returns the streams (asyncio's
/// `open_connection`). See [`LoopHandle::open_connection`].
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
pub async fn open_connection(host: &str, port: u16) -> io::Result<(StreamReader, StreamWriter)> {
    running("open_connection")?.open_connection(host, port).await
}

/// [`open_connection`] with options (asyncio's `limit=`).
///
/// ```
/// use evloop::streams::StreamConfig;
///
/// evloop::run(async {
///     let server = evloop::streams::start_server(|_r, _w| async {}, "127.0.0.1", 0).await?;
///     let config = StreamConfig::new().limit(1 << 20); // asyncio's limit=
///     let (reader, _w) = evloop::streams::open_connection_with("127.0.0.1", server.local_addr().port(), config).await?;
///     assert_eq!(reader.limit(), 1 << 20);
///     Ok::<(), Box<dyn std::error::Error>>(())
/// })??;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub async fn open_connection_with(
    host: &str,
    port: u16,
    config: StreamConfig,
) -> io::Result<(StreamReader, StreamWriter)> {
    running("open_connection")?
        .open_connection_with(host, port, config)
        .await
}

/// Connects to a Unix socket on the running loop (asyncio's `open_unix_connection`).
///
/// ```
/// use evloop::net::UnixAddr;
///
/// evloop::run(async {
///     let addr = UnixAddr::abstract_name(format!("evloop-doc-{}", std::process::id()).as_bytes())?;
///     let _server = evloop::streams::start_unix_server(|_r, w| async move { w.write(b"local hello") }, &addr)?;
///     let (reader, _w) = evloop::streams::open_unix_connection(&addr).await?;
///     assert_eq!(reader.read_to_end().await?, b"local hello");
///     Ok::<(), Box<dyn std::error::Error>>(())
/// })??;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub async fn open_unix_connection(addr: &UnixAddr) -> io::Result<(StreamReader, StreamWriter)> {
    running("open_unix_connection")?.open_unix_connection(addr).await
}

/// [`open_unix_connection`] with options.
///
/// ```
/// use evloop::net::UnixAddr;
/// use evloop::streams::StreamConfig;
///
/// evloop::run(async {
///     let addr = UnixAddr::abstract_name(format!("evloop-doc-{}", std::process::id()).as_bytes())?;
///     let _server = evloop::streams::start_unix_server(|_r, _w| async {}, &addr)?;
///     let (reader, _w) = evloop::streams::open_unix_connection_with(&addr, StreamConfig::new().limit(512)).await?;
///     assert_eq!(reader.limit(), 512);
///     Ok::<(), Box<dyn std::error::Error>>(())
/// })??;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub async fn open_unix_connection_with(
    addr: &UnixAddr,
    config: StreamConfig,
) -> io::Result<(StreamReader, StreamWriter)> {
    running("open_unix_connection")?
        .open_unix_connection_with(addr, config)
        .await
}

/// Serves `handler` on the running loop (asyncio's `start_server`). See
/// [`LoopHandle::start_server`].
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
pub async fn start_server<H, Fut>(handler: H, host: &str, port: u16) -> io::Result<Server>
where
    H: Fn(StreamReader, StreamWriter) -> Fut + 'static,
    Fut: Future<Output = ()> + 'static,
{
    running("start_server")?.start_server(handler, host, port).await
}

/// [`start_server`] with options.
///
/// ```
/// use evloop::streams::StreamConfig;
///
/// evloop::run(async {
///     let server = evloop::streams::start_server_with(
///         |reader, writer| async move { writer.write(reader.limit().to_string().as_bytes()) },
///         "127.0.0.1",
///         0,
///         StreamConfig::new().limit(4096), // each connection's reader limit
///     )
///     .await?;
///     let (reader, _w) = evloop::streams::open_connection("127.0.0.1", server.local_addr().port()).await?;
///     assert_eq!(reader.read_to_end().await?, b"4096");
///     Ok::<(), Box<dyn std::error::Error>>(())
/// })??;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub async fn start_server_with<H, Fut>(handler: H, host: &str, port: u16, config: StreamConfig) -> io::Result<Server>
where
    H: Fn(StreamReader, StreamWriter) -> Fut + 'static,
    Fut: Future<Output = ()> + 'static,
{
    running("start_server")?
        .start_server_with(handler, host, port, config)
        .await
}

/// Serves `handler` on a Unix socket on the running loop (asyncio's `start_unix_server`).
///
/// ```
/// use evloop::net::UnixAddr;
///
/// evloop::run(async {
///     let path = std::env::temp_dir().join(format!("evloop-doc-{}.sock", std::process::id()));
///     let addr = UnixAddr::pathname(&path)?;
///     let server = evloop::streams::start_unix_server(|_r, w| async move { w.write(b"hi") }, &addr)?;
///     assert_eq!(server.local_addr(), addr);
///     let (reader, _w) = evloop::streams::open_unix_connection(&addr).await?;
///     assert_eq!(reader.read_to_end().await?, b"hi");
///     server.close(); // also removes the socket file
///     assert!(!path.exists());
///     Ok::<(), Box<dyn std::error::Error>>(())
/// })??;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn start_unix_server<H, Fut>(handler: H, addr: &UnixAddr) -> io::Result<Server<UnixAddr>>
where
    H: Fn(StreamReader, StreamWriter) -> Fut + 'static,
    Fut: Future<Output = ()> + 'static,
{
    running("start_unix_server")?.start_unix_server(handler, addr)
}

/// [`start_unix_server`] with options.
///
/// ```
/// use evloop::net::UnixAddr;
/// use evloop::streams::StreamConfig;
///
/// evloop::run(async {
///     let addr = UnixAddr::abstract_name(format!("evloop-doc-{}", std::process::id()).as_bytes())?;
///     let config = StreamConfig::new().limit(64);
///     let _server = evloop::streams::start_unix_server_with(
///         |reader, writer| async move { writer.write(reader.limit().to_string().as_bytes()) },
///         &addr,
///         config,
///     )?;
///     let (reader, _w) = evloop::streams::open_unix_connection(&addr).await?;
///     assert_eq!(reader.read_to_end().await?, b"64");
///     Ok::<(), Box<dyn std::error::Error>>(())
/// })??;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn start_unix_server_with<H, Fut>(handler: H, addr: &UnixAddr, config: StreamConfig) -> io::Result<Server<UnixAddr>>
where
    H: Fn(StreamReader, StreamWriter) -> Fut + 'static,
    Fut: Future<Output = ()> + 'static,
{
    running("start_unix_server")?.start_unix_server_with(handler, addr, config)
}
