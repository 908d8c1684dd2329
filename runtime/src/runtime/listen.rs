//! Listening on N loops with the caller's own accept handling: [`TcpListeners`] and
//! [`UnixListeners`] bind once for the whole runtime, under a [`Policy`], and every loop then
//! calls `serve` to serve the connections the policy gives it, each as a task running the
//! caller's handler on a stream of that loop. The policy machinery (the reuse-port group, the
//! least-connections acceptor and its hand-off) is `policy.rs`'s `Group`; this file turns each
//! connection's fd into a stream and its task.

use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::rc::Rc;
use std::sync::Arc;

use evloop_syscalls::{SockAddr, UnixAddr};

use crate::io::net::{Socket, TcpStream, UnixStream};
use crate::runtime::policy::{Group, Live, Policy};
use crate::runtime::pool::Handle;
use crate::task::spawn::spawn;

/// A listening address shared by every loop of a runtime: `Send + Sync + Clone`, made once
/// with [`bind`](TcpListeners::bind), then [`serve`](TcpListeners::serve)d on each loop.
/// The module documentation has an example.
///
/// ```
/// use evloop::runtime::{Builder, Policy, TcpListeners};
///
/// let rt = Builder::new().loops(2).build()?;
/// let l = TcpListeners::bind(rt.handle(), "127.0.0.1:0".parse()?, Policy::ReusePort)?;
/// assert_ne!(l.local_addr().port(), 0);
/// assert_eq!(l.policy(), Policy::ReusePort);
/// # rt.shutdown()?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone)]
pub struct TcpListeners {
    group: Arc<Group>,
    addr: SocketAddr,
}

impl TcpListeners {
    /// Binds `addr` for every loop of the runtime under `policy` (port 0: one free port for
    /// all). Call it from any thread, before the loops `serve`.
    ///
    /// Errors: the bind itself; [`Policy::ReusePortCpu`] without pinned loops
    /// (`InvalidInput`) or on a kernel without reuseport BPF.
    ///
    /// ```
    /// use evloop::runtime::{Builder, Policy, TcpListeners};
    ///
    /// let rt = Builder::new().loops(2).build()?; // not pinned
    /// let err = TcpListeners::bind(rt.handle(), "127.0.0.1:0".parse()?, Policy::ReusePortCpu);
    /// assert_eq!(err.err().map(|e| e.kind()), Some(std::io::ErrorKind::InvalidInput));
    /// # rt.shutdown()?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn bind(handle: &Handle, addr: SocketAddr, policy: Policy) -> io::Result<TcpListeners> {
        let group = Group::bind_inet(handle, addr, policy)?;
        let addr = group.addr().as_inet().unwrap_or(addr);
        Ok(TcpListeners {
            group: Arc::new(group),
            addr,
        })
    }

    /// The bound address (with the port the kernel picked for port 0).
    ///
    /// ```
    /// let rt = evloop::runtime::Builder::new().loops(1).build()?;
    /// let l = evloop::runtime::TcpListeners::bind(rt.handle(), "127.0.0.1:0".parse()?, Default::default())?;
    /// assert!(l.local_addr().ip().is_loopback());
    /// # rt.shutdown()?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// The policy it was bound with.
    ///
    /// ```
    /// use evloop::runtime::Policy;
    /// let rt = evloop::runtime::Builder::new().loops(1).build()?;
    /// let l = evloop::runtime::TcpListeners::bind(rt.handle(), "127.0.0.1:0".parse()?, Policy::ReusePort)?;
    /// assert_eq!(l.policy(), Policy::ReusePort);
    /// # rt.shutdown()?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn policy(&self) -> Policy {
        self.group.policy()
    }

    /// Serves this loop's share of the connections until the runtime stops: each connection
    /// gets a task running `handler(stream, peer)` (a `TcpStream` of this loop), counted as
    /// live until the handler's future ends. Call it once on every loop of the runtime (from
    /// the factory of [`Runtime::spawn_on_each`](crate::runtime::Runtime::spawn_on_each));
    /// with least connections, loop 0 also runs the acceptor.
    ///
    /// Errors: not on a loop of this listener's runtime, called twice on one loop, or the
    /// listening socket failed (not for one connection's error: those are skipped).
    ///
    /// ```
    /// use evloop::io::AsyncWriteExt;
    /// use evloop::runtime::{Builder, Policy, TcpListeners};
    ///
    /// let rt = Builder::new().loops(2).build()?;
    /// let l = TcpListeners::bind(rt.handle(), "127.0.0.1:0".parse()?, Policy::ReusePort)?;
    /// let addr = l.local_addr();
    /// rt.spawn_on_each(move |ctx| {
    ///     let l = l.clone();
    ///     async move {
    ///         let me = ctx.index();
    ///         l.serve(move |mut conn, _| async move {
    ///             let _ = conn.write_all(format!("loop {me}").as_bytes()).await;
    ///         })
    ///         .await
    ///     }
    /// });
    /// let mut got = String::new();
    /// std::io::Read::read_to_string(&mut std::net::TcpStream::connect(addr)?, &mut got)?;
    /// assert!(got.starts_with("loop "));
    /// rt.shutdown()?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub async fn serve<H, Fut>(&self, handler: H) -> io::Result<()>
    where
        H: Fn(TcpStream, SocketAddr) -> Fut + 'static,
        Fut: Future<Output = ()> + 'static,
    {
        let handler = Rc::new(handler);
        self.group
            .serve("TcpListeners::serve", move |fd, peer, live| {
                let Some(peer) = peer.as_inet() else { return };
                if let Ok(stream) = TcpStream::from_std(std::net::TcpStream::from(fd)) {
                    start_task(handler(stream, peer), live);
                }
            })
            .await
    }
}

impl std::fmt::Debug for TcpListeners {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "TcpListeners({}, {:?})", self.addr, self.policy())
    }
}

/// A Unix socket address served by every loop of a runtime, as [`TcpListeners`] serves a TCP
/// one. Linux has no `SO_REUSEPORT` group for Unix sockets (a second bind of the same path or
/// abstract name fails with `EADDRINUSE`), so one acceptor on loop 0 hands each connection to
/// the loop with the fewest live connections: [`Policy::LeastConnections`] is the one policy
/// here. Like [`UnixListener`](crate::net::UnixListener), a pathname's socket file is left
/// for the caller to remove.
///
/// ```
/// use std::os::linux::net::SocketAddrExt;
///
/// use evloop::io::AsyncWriteExt;
/// use evloop::net::UnixAddr;
/// use evloop::runtime::{Builder, Policy, UnixListeners};
///
/// let rt = Builder::new().loops(2).build()?;
/// let addr = UnixAddr::abstract_name(format!("evloop-doc-ul-{}", std::process::id()).as_bytes())?;
/// let l = UnixListeners::bind(rt.handle(), &addr, Policy::LeastConnections)?;
/// rt.spawn_on_each(move |ctx| {
///     let l = l.clone();
///     async move {
///         let me = ctx.index();
///         l.serve(move |mut conn, _| async move {
///             let _ = conn.write_all(format!("loop {me}").as_bytes()).await;
///         })
///         .await
///     }
/// });
/// let name = std::os::unix::net::SocketAddr::from_abstract_name(addr.as_abstract_name().unwrap())?;
/// let mut got = String::new();
/// std::io::Read::read_to_string(&mut std::os::unix::net::UnixStream::connect_addr(&name)?, &mut got)?;
/// assert!(got.starts_with("loop "));
/// rt.shutdown()?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone)]
pub struct UnixListeners {
    group: Arc<Group>,
    addr: UnixAddr,
}

impl UnixListeners {
    /// Binds `addr` (a pathname or an abstract name) for every loop of the runtime. Errors:
    /// the bind itself; [`Policy::ReusePort`] or [`Policy::ReusePortCpu`], which do not apply
    /// to Unix sockets: an `Unsupported` error whose inner error is an
    /// [`UnsupportedPolicy`](crate::runtime::UnsupportedPolicy).
    ///
    /// ```
    /// use evloop::net::UnixAddr;
    /// use evloop::runtime::{Builder, Policy, UnixListeners, UnsupportedPolicy};
    ///
    /// let rt = Builder::new().loops(2).build()?;
    /// let addr = UnixAddr::abstract_name(format!("evloop-doc-ub-{}", std::process::id()).as_bytes())?;
    /// let err = UnixListeners::bind(rt.handle(), &addr, Policy::ReusePort).unwrap_err();
    /// assert_eq!(err.kind(), std::io::ErrorKind::Unsupported);
    /// let typed = err.get_ref().and_then(|e| e.downcast_ref::<UnsupportedPolicy>());
    /// assert_eq!(typed.map(|e| e.policy()), Some(Policy::ReusePort));
    /// # rt.shutdown()?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn bind(handle: &Handle, addr: &UnixAddr, policy: Policy) -> io::Result<UnixListeners> {
        let group = Group::bind_unix(handle, addr, policy)?;
        Ok(UnixListeners {
            group: Arc::new(group),
            addr: addr.clone(),
        })
    }

    /// The address it was bound to.
    ///
    /// ```
    /// use evloop::net::UnixAddr;
    /// let rt = evloop::runtime::Builder::new().loops(1).build()?;
    /// let addr = UnixAddr::abstract_name(format!("evloop-doc-ua-{}", std::process::id()).as_bytes())?;
    /// let l = evloop::runtime::UnixListeners::bind(rt.handle(), &addr, Default::default())?;
    /// assert_eq!(l.local_addr(), &addr);
    /// # rt.shutdown()?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn local_addr(&self) -> &UnixAddr {
        &self.addr
    }

    /// Serves this loop's share of the connections until the runtime stops, as
    /// [`TcpListeners::serve`]: each connection gets a task running `handler(stream, peer)`
    /// (a `UnixStream` of this loop; the peer is usually unnamed). Call it once on every loop;
    /// loop 0 also runs the acceptor. The type's documentation has an example.
    ///
    /// ```
    /// use evloop::net::UnixAddr;
    /// let rt = evloop::runtime::Builder::new().loops(1).build()?;
    /// let addr = UnixAddr::abstract_name(format!("evloop-doc-us-{}", std::process::id()).as_bytes())?;
    /// let l = evloop::runtime::UnixListeners::bind(rt.handle(), &addr, Default::default())?;
    /// rt.spawn_on_each(move |_| {
    ///     let l = l.clone();
    ///     async move { l.serve(|_conn, _peer| async {}).await }
    /// });
    /// rt.shutdown()?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub async fn serve<H, Fut>(&self, handler: H) -> io::Result<()>
    where
        H: Fn(UnixStream, UnixAddr) -> Fut + 'static,
        Fut: Future<Output = ()> + 'static,
    {
        let handler = Rc::new(handler);
        self.group
            .serve("UnixListeners::serve", move |fd, peer, live| {
                let peer = match peer {
                    SockAddr::Unix(a) => a,
                    SockAddr::Inet(_) => return,
                };
                if let Ok(sock) = Socket::from_fd(fd) {
                    start_task(handler(UnixStream::from_socket(sock), peer), live);
                }
            })
            .await
    }
}

impl std::fmt::Debug for UnixListeners {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "UnixListeners({})", self.addr)
    }
}

/// One connection's task on this loop; its end (or cancellation) ends the live count.
fn start_task(fut: impl Future<Output = ()> + 'static, live: Live) {
    drop(spawn(async move {
        let _live = live;
        fut.await;
    }));
}
