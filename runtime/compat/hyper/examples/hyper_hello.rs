//! hyper's hello world on evloop: `cargo run -p evloop-hyper --example hyper_hello -- [ADDR] [--http2]`
//! serves `Hello, World!` over HTTP/1.1 (keep-alive) or, with `--http2`, HTTP/2 with prior
//! knowledge (`curl --http2-prior-knowledge`, `h2load`), one task per connection. It prints
//! `listening on ADDR` once bound (`make bench` and the tests read that line). Its tokio twin,
//! `hyper_hello_tokio.rs`, is this file with its `use` lines pointing at tokio and hyper-util instead
//! (tests/twins.rs checks that nothing else differs), on tokio's current-thread runtime.

use std::convert::Infallible;
use std::io;

use bytes::Bytes;
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper::{Request, Response};

use evloop::net::TcpListener;
use evloop::{main, spawn};
use evloop_hyper::{EvloopExecutor, EvloopTimer, HyperIo};

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
