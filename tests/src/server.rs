//! Running a server from `runtime/examples/` in the background of a test: its own thread,
//! its own evloop loop, a listener on a free loopback port; stopped and joined on drop, so
//! the test's std-only client can talk to it with blocking calls.

use std::future::Future;
use std::net::SocketAddr;
use std::sync::mpsc;
use std::thread::JoinHandle;

use evloop::event_loop::{EventLoop, RemoteHandle};
use evloop::net::TcpListener;

/// A server running on a thread of its own; dropping it stops the loop (closing every
/// socket the server held) and joins the thread.
pub struct BackgroundServer {
    addr: SocketAddr,
    remote: RemoteHandle,
    thread: Option<JoinHandle<()>>,
}

impl BackgroundServer {
    /// Binds `127.0.0.1:0` on a new loop in a new thread and runs `serve(listener)` there.
    ///
    /// Panics if the thread cannot start the loop or bind.
    pub fn start<F, Fut>(serve: F) -> BackgroundServer
    where
        F: FnOnce(TcpListener) -> Fut + Send + 'static,
        Fut: Future + 'static,
    {
        let (tx, rx) = mpsc::channel();
        let thread = std::thread::spawn(move || {
            let lp = EventLoop::new().expect("a loop for the server");
            let remote = lp.remote();
            let _ = lp.run_until_complete(async move {
                let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind 127.0.0.1:0");
                let addr = listener.local_addr().expect("local_addr");
                let _ = tx.send((addr, remote));
                serve(listener).await;
            });
        });
        let (addr, remote) = rx
            .recv_timeout(crate::HANG)
            .expect("the server thread started and bound its listener");
        BackgroundServer {
            addr,
            remote,
            thread: Some(thread),
        }
    }

    /// Where it listens.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }
}

impl Drop for BackgroundServer {
    fn drop(&mut self) {
        let _ = self.remote.stop();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}
