//! A tokio program ported to evloop by changing its imports, and nothing else.
//!
//! The original, a tokio echo server (compiled and tested as `tests/examples/port_tokio_echo.rs`):
//!
//! ```rust
//! use std::io;
//! use std::time::Duration;
//!
//! use tokio::io::{AsyncReadExt, AsyncWriteExt};
//! use tokio::net::{TcpListener, TcpStream};
//! use tokio::sync::{Notify, broadcast};
//! use tokio::time::interval;
//! use tokio::{main, select, spawn};
//! use tokio_stream::StreamExt;
//! use tokio_stream::wrappers::TcpListenerStream;
//!
//! #[main(flavor = "current_thread")]
//! async fn main() -> Result<(), Box<dyn std::error::Error>> {
//!     let addr = std::env::args().nth(1).unwrap_or_else(|| "127.0.0.1:8080".to_string());
//!     let listener = TcpListener::bind(&addr).await?;
//!     println!("listening on {}", listener.local_addr()?);
//!     serve(listener).await?;
//!     Ok(())
//! }
//!
//! /// Accepts connections until the listener fails; each one is echoed by its own task.
//! pub async fn serve(listener: TcpListener) -> io::Result<()> {
//!     let shutdown = Notify::new();
//!     serve_until(listener, &shutdown).await
//! }
//!
//! /// Accepts connections (a `Stream` of them) until `shutdown` is notified, printing a count
//! /// every minute; then tells every connection to finish (a broadcast) and returns.
//! pub async fn serve_until(listener: TcpListener, shutdown: &Notify) -> io::Result<()> {
//!     let (stop, _) = broadcast::channel::<()>(1);
//!     let mut incoming = TcpListenerStream::new(listener);
//!     let mut ticks = interval(Duration::from_secs(60));
//!     let mut accepted = 0u64;
//!     loop {
//!         select! {
//!             next = incoming.next() => match next {
//!                 Some(socket) => {
//!                     accepted += 1;
//!                     let stopped = stop.subscribe();
//!                     let socket = socket?;
//!                     spawn(async move {
//!                         if let Err(e) = echo(socket, stopped).await {
//!                             eprintln!("connection: {e}");
//!                         }
//!                     });
//!                 }
//!                 None => break,
//!             },
//!             _ = ticks.tick() => eprintln!("accepted {accepted} connections"),
//!             _ = shutdown.notified() => break,
//!         }
//!     }
//!     let _ = stop.send(());
//!     Ok(())
//! }
//!
//! /// Sends back every byte it receives, until the client closes its side or the server stops.
//! async fn echo(mut socket: TcpStream, mut stopped: broadcast::Receiver<()>) -> io::Result<()> {
//!     let mut buf = [0; 1024];
//!     loop {
//!         select! {
//!             n = socket.read(&mut buf) => {
//!                 let n = n?;
//!                 if n == 0 {
//!                     return Ok(());
//!                 }
//!                 socket.write_all(&buf[..n]).await?;
//!             }
//!             _ = stopped.recv() => return Ok(()),
//!         }
//!     }
//! }
//! ```
//!
//! The port below changes its `use` lines from `tokio` (and tokio-stream) to `evloop`;
//! everything else is the same text. `tests/tests/examples_port.rs` checks exactly that (for
//! this pair, and for `http_server.rs`, `redis_server.rs` and `pubsub_server.rs` and their tokio
//! twins) and runs both echo servers. What carries over unchanged: `#[main(flavor =
//! "current_thread")]` (evloop's loop is always one thread), `TcpListener::bind` with a string
//! address, the listener as a `Stream` of connections (`TcpListenerStream`, `StreamExt::next`),
//! `select!`, `spawn` with a detached task, `time::interval` (its first tick at once),
//! `Notify::notified` (a `notify_one` before the wait is kept as a permit), a `broadcast` channel
//! telling every connection to stop, and `AsyncReadExt::read` / `AsyncWriteExt::write_all`. Code
//! that calls `tokio::spawn(...)` by its path rather than through an import changes that path
//! the same way.
//!
//! ```text
//! cargo run -p evloop --example port_from_tokio -- 127.0.0.1:8080
//! ```

use std::io;
use std::time::Duration;

use evloop::io::{AsyncReadExt, AsyncWriteExt};
use evloop::net::{TcpListener, TcpStream};
use evloop::stream::StreamExt;
use evloop::stream::wrappers::TcpListenerStream;
use evloop::sync::{Notify, broadcast};
use evloop::time::interval;
use evloop::{main, select, spawn};

#[main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let addr = std::env::args().nth(1).unwrap_or_else(|| "127.0.0.1:8080".to_string());
    let listener = TcpListener::bind(&addr).await?;
    println!("listening on {}", listener.local_addr()?);
    serve(listener).await?;
    Ok(())
}

/// Accepts connections until the listener fails; each one is echoed by its own task.
pub async fn serve(listener: TcpListener) -> io::Result<()> {
    let shutdown = Notify::new();
    serve_until(listener, &shutdown).await
}

/// Accepts connections (a `Stream` of them) until `shutdown` is notified, printing a count
/// every minute; then tells every connection to finish (a broadcast) and returns.
pub async fn serve_until(listener: TcpListener, shutdown: &Notify) -> io::Result<()> {
    let (stop, _) = broadcast::channel::<()>(1);
    let mut incoming = TcpListenerStream::new(listener);
    let mut ticks = interval(Duration::from_secs(60));
    let mut accepted = 0u64;
    loop {
        select! {
            next = incoming.next() => match next {
                Some(socket) => {
                    accepted += 1;
                    let stopped = stop.subscribe();
                    let socket = socket?;
                    spawn(async move {
                        if let Err(e) = echo(socket, stopped).await {
                            eprintln!("connection: {e}");
                        }
                    });
                }
                None => break,
            },
            _ = ticks.tick() => eprintln!("accepted {accepted} connections"),
            _ = shutdown.notified() => break,
        }
    }
    let _ = stop.send(());
    Ok(())
}

/// Sends back every byte it receives, until the client closes its side or the server stops.
async fn echo(mut socket: TcpStream, mut stopped: broadcast::Receiver<()>) -> io::Result<()> {
    let mut buf = [0; 1024];
    loop {
        select! {
            n = socket.read(&mut buf) => {
                let n = n?;
                if n == 0 {
                    return Ok(());
                }
                socket.write_all(&buf[..n]).await?;
            }
            _ = stopped.recv() => return Ok(()),
        }
    }
}
