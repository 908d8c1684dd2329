//! Name resolution on the loop: [`LoopHandle::getaddrinfo`] and [`LoopHandle::getnameinfo`]
//! (asyncio's), and the passive form `create_server` uses. An IP literal is parsed here without
//! the resolver; a name goes to `getaddrinfo(3)` on the executor's threads, because that call
//! blocks and the loop must not.

use std::io;
use std::net::SocketAddr;

use evloop_syscalls as sys;
use evloop_syscalls::SockType;

use crate::event_loop::LoopHandle;

fn numeric(host: &str, port: u16) -> Option<SocketAddr> {
    let h = host.strip_prefix('[').and_then(|h| h.strip_suffix(']')).unwrap_or(host);
    h.parse::<std::net::IpAddr>().ok().map(|ip| SocketAddr::new(ip, port))
}

impl LoopHandle {
    /// Resolves `host:port` (asyncio's `getaddrinfo`): an IP literal directly, a name with
    /// `getaddrinfo(3)` on the executor's threads (it blocks), as asyncio does.
    pub async fn getaddrinfo(&self, host: &str, port: u16) -> io::Result<Vec<SocketAddr>> {
        self.resolve(host, port, false).await
    }

    /// Resolves an address to listen on: `""` means every local address (IPv4 and IPv6).
    pub(crate) async fn getaddrinfo_passive(&self, host: &str, port: u16) -> io::Result<Vec<SocketAddr>> {
        self.resolve(host, port, true).await
    }

    async fn resolve(&self, host: &str, port: u16, passive: bool) -> io::Result<Vec<SocketAddr>> {
        if let Some(addr) = numeric(host, port) {
            return Ok(vec![addr]);
        }
        let hints = sys::AddrHints {
            sock_type: Some(SockType::Stream),
            passive,
            ..Default::default()
        };
        let owned = host.to_string();
        let job = self
            .run_in_executor(move || sys::getaddrinfo(&owned, port, hints))
            .map_err(io::Error::from)?;
        let addrs = job.await.map_err(io::Error::from)??;
        if addrs.is_empty() {
            return Err(io::Error::new(
                io::ErrorKind::NotFound,
                format!("getaddrinfo({host}): no addresses"),
            ));
        }
        Ok(addrs)
    }

    /// The host and service names of `addr` (asyncio's `getnameinfo`), on the executor unless
    /// `numeric`.
    pub async fn getnameinfo(&self, addr: SocketAddr, numeric: bool) -> io::Result<(String, String)> {
        if numeric {
            return sys::getnameinfo(&addr, true);
        }
        let job = self
            .run_in_executor(move || sys::getnameinfo(&addr, false))
            .map_err(io::Error::from)?;
        job.await.map_err(io::Error::from)?
    }
}
