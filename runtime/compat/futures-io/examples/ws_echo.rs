//! A WebSocket echo server on evloop through a futures-io library: async-tungstenite speaks the
//! WebSocket protocol over `futures_io` streams, and `evloop_futures::Compat` makes evloop's
//! `TcpStream` one. Every text or binary message comes back as it was sent; pings are answered
//! by tungstenite itself.
//!
//! ```text
//! cargo run -p evloop-futures --example ws_echo -- 127.0.0.1:9001
//! python3 -m websockets ws://127.0.0.1:9001/     # pip install websockets: an interactive client
//! ```
//!
//! It prints `listening on ADDR` once bound; tests/ws_echo.rs drives it with the `websockets`
//! client from PyPI.

use std::io;

use async_tungstenite::tungstenite::Message;
use futures_util::StreamExt;

use evloop::net::{TcpListener, TcpStream};
use evloop_futures::CompatExt;

/// Echoes the messages of one WebSocket connection until the client closes it.
async fn echo(stream: TcpStream) -> Result<(), async_tungstenite::tungstenite::Error> {
    let mut ws = async_tungstenite::accept_async(stream.compat()).await?;
    // Pings, pongs and the closing handshake are tungstenite's: it answers a ping and a close
    // on its next read, and the stream ends (None) once the close has been answered. Dropping
    // the socket then ends the TCP connection, as the side that did not start the close should.
    while let Some(msg) = ws.next().await {
        let msg = msg?;
        if matches!(msg, Message::Text(_) | Message::Binary(_)) {
            ws.send(msg).await?;
        }
    }
    Ok(())
}

/// Accepts connections forever, one echo task each.
pub async fn serve(listener: TcpListener) -> io::Result<()> {
    loop {
        let (stream, _) = listener.accept().await?;
        evloop::spawn(async move {
            if let Err(e) = echo(stream).await {
                eprintln!("websocket: {e}");
            }
        });
    }
}

#[evloop::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let addr = std::env::args().nth(1).unwrap_or_else(|| "127.0.0.1:9001".into());
    let listener = TcpListener::bind(&addr).await?;
    println!("listening on {}", listener.local_addr()?);
    serve(listener).await?;
    Ok(())
}
