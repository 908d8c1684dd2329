//! A tokio program ported to evloop by changing its imports, and nothing else.
//!
//! The original, a tokio echo server (compiled and tested as `tests/examples/port_tokio_echo.rs`):
//!
//! ```rust
//! use std::io;
//!
//! use tokio::io::{AsyncReadExt, AsyncWriteExt};
//! use tokio::net::{TcpListener, TcpStream};
//! use tokio::{main, spawn};
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
//! /// Accepts connections forever; each one is echoed by its own task.
//! pub async fn serve(listener: TcpListener) -> io::Result<()> {
//!     loop {
//!         let (socket, _) = listener.accept().await?;
//!         spawn(async move {
//!             if let Err(e) = echo(socket).await {
//!                 eprintln!("connection: {e}");
//!             }
//!         });
//!     }
//! }
//!
//! /// Sends back every byte it receives, until the client closes its side.
//! async fn echo(mut socket: TcpStream) -> io::Result<()> {
//!     let mut buf = [0; 1024];
//!     loop {
//!         let n = socket.read(&mut buf).await?;
//!         if n == 0 {
//!             return Ok(());
//!         }
//!         socket.write_all(&buf[..n]).await?;
//!     }
//! }
//! ```
//!
//! The port below changes its three `use` lines from `tokio` to `evloop`; everything else is
//! the same text. `tests/tests/examples_port.rs` checks exactly that (for this pair, and for
//! `http_server.rs` / `redis_server.rs` and their tokio twins) and runs both echo servers. What
//! carries over unchanged: `#[main(flavor = "current_thread")]` (evloop's loop is always one
//! thread), `TcpListener::bind` with a string address, `accept`, `spawn` with a detached task,
//! and `AsyncReadExt::read` / `AsyncWriteExt::write_all`. Code that calls `tokio::spawn(...)` by
//! its path rather than through an import changes that path the same way.
//!
//! ```text
//! cargo run -p evloop --example port_from_tokio -- 127.0.0.1:8080
//! ```

use std::io;

use evloop::io::{AsyncReadExt, AsyncWriteExt};
use evloop::net::{TcpListener, TcpStream};
use evloop::{main, spawn};

#[main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let addr = std::env::args().nth(1).unwrap_or_else(|| "127.0.0.1:8080".to_string());
    let listener = TcpListener::bind(&addr).await?;
    println!("listening on {}", listener.local_addr()?);
    serve(listener).await?;
    Ok(())
}

/// Accepts connections forever; each one is echoed by its own task.
pub async fn serve(listener: TcpListener) -> io::Result<()> {
    loop {
        let (socket, _) = listener.accept().await?;
        spawn(async move {
            if let Err(e) = echo(socket).await {
                eprintln!("connection: {e}");
            }
        });
    }
}

/// Sends back every byte it receives, until the client closes its side.
async fn echo(mut socket: TcpStream) -> io::Result<()> {
    let mut buf = [0; 1024];
    loop {
        let n = socket.read(&mut buf).await?;
        if n == 0 {
            return Ok(());
        }
        socket.write_all(&buf[..n]).await?;
    }
}
