//! The tokio side of the example tests: runs a tokio twin's `serve` on a tokio
//! `current_thread` runtime in a thread of its own, on a free loopback port, stopped and joined
//! on drop (the counterpart of `evloop_tests::server::BackgroundServer`).

use std::future::Future;
use std::net::SocketAddr;
use std::sync::mpsc;
use std::thread::JoinHandle;

pub struct TokioServer {
    addr: SocketAddr,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl TokioServer {
    pub fn start<F, Fut>(serve: F) -> TokioServer
    where
        F: FnOnce(tokio::net::TcpListener) -> Fut + Send + 'static,
        Fut: Future + 'static,
    {
        let (tx, rx) = mpsc::channel();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let thread = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("a tokio runtime");
            rt.block_on(async move {
                let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
                let _ = tx.send(listener.local_addr().expect("local_addr"));
                tokio::select! {
                    _ = serve(listener) => {}
                    _ = stopped => {}
                }
            });
        });
        let addr = rx
            .recv_timeout(std::time::Duration::from_secs(30))
            .expect("the tokio server started");
        TokioServer {
            addr,
            stop: Some(stop),
            thread: Some(thread),
        }
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }
}

impl Drop for TokioServer {
    fn drop(&mut self) {
        if let Some(s) = self.stop.take() {
            let _ = s.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// One `#[test]` per named check (a `fn(SocketAddr)` of the calling module), run once against
/// an evloop example's `serve` (in `mod on_evloop`) and once against its tokio twin's (in
/// `mod on_tokio`): the same client-side assertions hold for both servers.
macro_rules! on_both_runtimes {
    (evloop: $evloop:path, tokio: $tokio:path; $($check:ident),* $(,)?) => {
        mod on_evloop {
            use super::*;
            $(
                #[test]
                fn $check() {
                    let server = evloop_tests::server::BackgroundServer::start(|l| async move {
                        let _ = $evloop(l).await;
                    });
                    super::$check(server.addr());
                }
            )*
        }
        mod on_tokio {
            use super::*;
            $(
                #[test]
                fn $check() {
                    let server = crate::tokio_server::TokioServer::start(|l| async move {
                        let _ = $tokio(l).await;
                    });
                    super::$check(server.addr());
                }
            )*
        }
    };
}
pub(crate) use on_both_runtimes;
