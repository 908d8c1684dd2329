//! A tokio echo server, the original of `runtime/examples/port_from_tokio.rs` (which quotes it
//! and is the same program on evloop). Compiled and tested here as a tokio program, so the
//! comparison in tests/tests/examples/port.rs is against real tokio code.
use std::io;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::{main, spawn};

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
