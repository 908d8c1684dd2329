//! Networking helpers: loopback addresses, unique abstract Unix names, a connected TCP pair with
//! a std peer, and echo servers of both kinds (a [`Protocol`] and a loop for streams).

use std::io;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU32, Ordering};

use evloop::net::{TcpListener, TcpStream, UnixAddr};
use evloop::{
    io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt},
    protocol::{Protocol, Transport},
};

/// An echo protocol: writes back what it receives, closes on the peer's EOF.
#[derive(Default)]
pub struct Echo {
    transport: Option<Transport>,
}

impl Echo {
    /// A new echo protocol (for `create_server(Echo::new, ...)`).
    pub fn new() -> Echo {
        Echo::default()
    }
}

impl Protocol for Echo {
    fn connection_made(&mut self, transport: Transport) {
        self.transport = Some(transport);
    }
    fn data_received(&mut self, data: &[u8]) {
        if let Some(t) = &self.transport {
            t.write(data);
        }
    }
    fn connection_lost(&mut self, _error: Option<io::Error>) {
        self.transport = None;
    }
}

/// Echoes `stream` back to itself until end of stream (task-based servers). Returns the
/// number of bytes echoed.
pub async fn echo_stream<S: AsyncRead + AsyncWrite + Unpin>(stream: &mut S) -> io::Result<u64> {
    let mut buf = vec![0u8; 16 * 1024];
    let mut total = 0u64;
    loop {
        let n = stream.read(&mut buf).await?;
        if n == 0 {
            return Ok(total);
        }
        stream.write_all(&buf[..n]).await?;
        total += n as u64;
    }
}

/// `127.0.0.1:0`: the IPv4 loopback, with a port the kernel picks when it is bound.
pub fn loopback_v4() -> SocketAddr {
    SocketAddr::from(([127, 0, 0, 1], 0))
}

/// An abstract Unix socket name no other test uses: `evloop-<tag>-<pid>-<n>`, with a counter `n`
/// of this process (the abstract namespace is shared by every process of the network namespace,
/// and by every test of this one).
pub fn abstract_name(tag: &str) -> UnixAddr {
    static NEXT: AtomicU32 = AtomicU32::new(0);
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    let name = format!("evloop-{tag}-{}-{n}", std::process::id());
    UnixAddr::abstract_name(name.as_bytes()).expect("an abstract name that fits")
}

/// A connected TCP pair on loopback: the evloop end (accepted by a listener of the running
/// loop) and a blocking std peer, whose calls the loop's syscall counters do not see.
pub async fn tcp_with_std_peer() -> (TcpStream, std::net::TcpStream) {
    let listener = TcpListener::bind(loopback_v4()).await.unwrap();
    let peer = std::net::TcpStream::connect(listener.local_addr().unwrap()).unwrap();
    let (s, _) = listener.accept().await.unwrap();
    (s, peer)
}
