//! A tokio echo server, the original of `runtime/examples/port_from_tokio.rs` (which quotes it
//! and is the same program on evloop). Compiled and tested here as a tokio program, so the
//! comparison in tests/tests/examples/port.rs is against real tokio code.
use std::io;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{Notify, broadcast};
use tokio::time::interval;
use tokio::{main, select, spawn};
use tokio_stream::StreamExt;
use tokio_stream::wrappers::TcpListenerStream;

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
