//! A hyper client on evloop: `cargo run -p evloop-hyper --example fetch -- ADDR [PATH] [--http2]`
//! sends `GET PATH` to the server at ADDR over one connection (HTTP/1.1, or HTTP/2 with prior
//! knowledge) and prints the status and the body. Try it on the gallery's server:
//!
//! ```text
//! cargo run --release -p evloop --example http_server -- 127.0.0.1:8080 &
//! cargo run -p evloop-hyper --example fetch -- 127.0.0.1:8080 /
//! ```

use std::io;
use std::net::SocketAddr;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::{Method, Request};

use evloop::net::TcpStream;
use evloop_hyper::{EvloopExecutor, EvloopTimer, HyperIo};

/// Sends one request (`body` makes it a POST) to `addr` and returns the status and the body.
pub async fn fetch(addr: SocketAddr, path: &str, body: Option<&'static [u8]>, http2: bool) -> io::Result<(u16, Bytes)> {
    let io = HyperIo::new(TcpStream::connect(addr).await?);
    let method = if body.is_some() { Method::POST } else { Method::GET };
    let req = Request::builder()
        .method(method)
        // HTTP/2 carries scheme and authority as pseudo-headers; HTTP/1.1 asks in origin form.
        .uri(if http2 {
            format!("http://{addr}{path}")
        } else {
            path.to_owned()
        })
        .header(hyper::header::HOST, addr.to_string())
        .body(Full::new(Bytes::from_static(body.unwrap_or_default())))
        .map_err(io::Error::other)?;
    let res = if http2 {
        let (mut send, conn) = hyper::client::conn::http2::Builder::new(EvloopExecutor::new())
            .timer(EvloopTimer::new())
            .handshake(io)
            .await
            .map_err(io::Error::other)?;
        evloop::spawn(conn); // drives the connection; ends when `send` is dropped
        send.send_request(req).await.map_err(io::Error::other)?
    } else {
        let (mut send, conn) = hyper::client::conn::http1::handshake(io)
            .await
            .map_err(io::Error::other)?;
        evloop::spawn(conn);
        send.send_request(req).await.map_err(io::Error::other)?
    };
    let status = res.status().as_u16();
    let body = res.into_body().collect().await.map_err(io::Error::other)?.to_bytes();
    Ok((status, body))
}

#[evloop::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1).filter(|a| !a.starts_with("--"));
    let addr: SocketAddr = args.next().ok_or("usage: fetch ADDR [PATH] [--http2]")?.parse()?;
    let path = args.next().unwrap_or_else(|| "/".into());
    let http2 = std::env::args().any(|a| a == "--http2");
    let (status, body) = fetch(addr, &path, None, http2).await?;
    println!("{status}");
    println!("{}", String::from_utf8_lossy(&body));
    Ok(())
}
