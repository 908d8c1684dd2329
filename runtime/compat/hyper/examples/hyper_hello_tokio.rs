//! The tokio twin of `hyper_hello.rs` (make bench's reference): the same file but for its `use` lines,
//! hyper on tokio's current-thread runtime with hyper-util's `TokioIo`, `TokioExecutor` and
//! `TokioTimer` under the evloop names.

use std::convert::Infallible;
use std::io;

use bytes::Bytes;
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper::{Request, Response};

use hyper_util::rt::{TokioExecutor as EvloopExecutor, TokioIo as HyperIo, TokioTimer as EvloopTimer};
use tokio::net::TcpListener;
use tokio::{main, spawn};

async fn hello(_: Request<Incoming>) -> Result<Response<Full<Bytes>>, Infallible> {
    Ok(Response::new(Full::new(Bytes::from_static(b"Hello, World!"))))
}

/// Accepts connections on `listener` forever, each served by hyper on a task of its own.
pub async fn serve(listener: TcpListener, http2: bool) -> io::Result<()> {
    loop {
        let (stream, _) = listener.accept().await?;
        spawn(async move {
            let io = HyperIo::new(stream);
            let served = if http2 {
                hyper::server::conn::http2::Builder::new(EvloopExecutor::new())
                    .timer(EvloopTimer::new())
                    .serve_connection(io, service_fn(hello))
                    .await
            } else {
                hyper::server::conn::http1::Builder::new()
                    .timer(EvloopTimer::new())
                    .serve_connection(io, service_fn(hello))
                    .await
            };
            if let Err(e) = served {
                eprintln!("connection: {e}");
            }
        });
    }
}

#[main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let http2 = std::env::args().any(|a| a == "--http2");
    let addr = std::env::args()
        .skip(1)
        .find(|a| !a.starts_with("--"))
        .unwrap_or_else(|| "127.0.0.1:3000".into());
    let listener = TcpListener::bind(&addr).await?;
    println!("listening on {}", listener.local_addr()?);
    serve(listener, http2).await?;
    Ok(())
}
