//! hyper 1.x on evloop: the three things hyper asks of a runtime, written for evloop's loop.
//!
//! - [`HyperIo`]: `hyper::rt::Read` and `hyper::rt::Write` for any evloop stream
//!   ([`TcpStream`](evloop::net::TcpStream), [`UnixStream`](evloop::net::UnixStream), a
//!   `BufStream`, anything with evloop's `AsyncRead + AsyncWrite`);
//! - [`EvloopExecutor`]: `hyper::rt::Executor` with no `Send` bound: HTTP/2's per-stream
//!   futures are spawned as tasks on the running loop, like every other evloop task;
//! - [`EvloopTimer`]: `hyper::rt::Timer` on the loop's timer heap (and the loop's clock, so the
//!   virtual clock governs hyper's timeouts too); its sleep future is `Send + Sync` as hyper
//!   requires, by holding only atomics, a mutex-guarded waker and the loop's `Send + Sync`
//!   remote handle, while the loop-bound timer itself stays on the loop's thread.
//!
//! The crate root forbids code outside safe Rust (the attribute below), so no impl asserts
//! a thread-safety it does not have: the `Send + Sync` of the sleep is what its fields are.
//!
//! ```
//! use bytes::Bytes;
//! use http_body_util::{BodyExt, Empty, Full};
//! use evloop::net::{TcpListener, TcpStream};
//! use evloop_hyper::{EvloopTimer, HyperIo};
//! use hyper::service::service_fn;
//!
//! evloop::run(async {
//!     let listener = TcpListener::bind("127.0.0.1:0").await?;
//!     let addr = listener.local_addr()?;
//!     evloop::spawn(async move {
//!         let (stream, _) = listener.accept().await?;
//!         let hello = service_fn(|_req| async { Ok::<_, std::convert::Infallible>(hyper::Response::new(Full::new(Bytes::from("hi")))) });
//!         hyper::server::conn::http1::Builder::new()
//!             .timer(EvloopTimer::new())
//!             .serve_connection(HyperIo::new(stream), hello)
//!             .await
//!             .map_err(std::io::Error::other)
//!     });
//!     let (mut send, conn) = hyper::client::conn::http1::handshake(HyperIo::new(TcpStream::connect(addr).await?))
//!         .await
//!         .map_err(std::io::Error::other)?;
//!     evloop::spawn(conn);
//!     let req = hyper::Request::get("/").header("host", "localhost").body(Empty::<Bytes>::new()).unwrap();
//!     let res = send.send_request(req).await.map_err(std::io::Error::other)?;
//!     let body = res.into_body().collect().await.map_err(std::io::Error::other)?.to_bytes();
//!     assert_eq!(&body[..], b"hi");
//!     Ok::<(), std::io::Error>(())
//! })??;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

#![forbid(unsafe_code)]
#![deny(missing_docs)]

mod executor;
mod io;
mod timer;

pub use executor::EvloopExecutor;
pub use io::HyperIo;
pub use timer::{EvloopSleep, EvloopTimer};
