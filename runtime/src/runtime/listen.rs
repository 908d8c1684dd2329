//! Listening on N loops: [`TcpListeners`] binds once for the whole runtime, under a [`Policy`],
//! and every loop then calls [`TcpListeners::serve`] to serve the connections the policy gives
//! it.
//!
//! Data flow per policy:
//! - reuse-port (with or without the CPU program): `bind` makes one listening socket per loop
//!   in a `SO_REUSEPORT` group, in loop order on the calling thread; loop `i`'s `serve` takes
//!   socket `i`, registers it with its own reactor and accepts from it; the kernel chose the
//!   socket (its hash, or the BPF program).
//! - least connections: one listening socket; loop 0's `serve` runs the acceptor task, which
//!   accepts, picks the loop with the fewest live connections (counting the connection there at
//!   once, so the next pick sees it) and sends the fd through that loop's threadsafe channel;
//!   each loop's `serve` receives its fds and adopts them.
//!
//! At the runtime's stop a reuse-port `serve` stops waiting, accepts what its queue already
//! holds, closes its socket and returns; the acceptor does the same, then drops the channels'
//! senders, and each loop's `serve` returns once its channel is empty. Connections already
//! accepted are served: the loop waits for them (within the grace period).

use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::os::fd::{AsFd, OwnedFd};
use std::rc::Rc;
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use evloop_syscalls::{self as sys, Domain, SockAddr, SockType};

use crate::event_loop::load::Load;
use crate::io::net::{Socket, TcpStream};
use crate::runtime::pool::{Handle, Pool};
use crate::runtime::worker::{self, LoopState};
use crate::sync::threadsafe::{self, Receiver, Sender};
use crate::task::combinator::{Either, select};
use crate::task::spawn::spawn;
use crate::task::time::sleep;

/// How connections are spread over the loops (each measured in `docs/12-thread-per-core.md`).
///
/// ```
/// assert_eq!(evloop::runtime::Policy::default(), evloop::runtime::Policy::LeastConnections);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum Policy {
    /// One `SO_REUSEPORT` listener per loop; the kernel hashes each connection's addresses and
    /// ports to pick one. No hand-off, but the hash only evens out on average.
    ReusePort,
    /// The `SO_REUSEPORT` group plus a classic-BPF program that picks the listener of the CPU
    /// that received the connection: for loops pinned one per CPU
    /// ([`Builder::pin_to_cpus`](crate::runtime::Builder::pin_to_cpus)), so a connection stays
    /// on the CPU its packets arrive on. The spread follows the NIC's receive queues.
    ReusePortCpu,
    /// One acceptor (on loop 0) hands each accepted fd to the loop with the fewest live
    /// connections (seastar's choice); the default: it measured the most even.
    #[default]
    LeastConnections,
}

/// An accepted connection on its way to the loop that will serve it.
type Conn = (OwnedFd, SocketAddr);

/// The sockets of one policy, before each loop takes its part.
struct Shared {
    policy: Policy,
    addr: SocketAddr,
    /// Per loop: its listening socket (reuse-port), or for least connections the one socket in
    /// slot 0. Taken once by the loop's `serve`.
    fds: Mutex<Vec<Option<OwnedFd>>>,
    /// Least connections: each loop's receiving end, taken by its `serve`.
    receivers: Mutex<Vec<Option<Receiver<Conn>>>>,
    /// Least connections: the senders, taken by the acceptor (so that they all drop with it).
    senders: Mutex<Option<Vec<Sender<Conn>>>>,
    /// Where the least-connections scan starts, rotating so that ties spread.
    next: AtomicUsize,
}

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
    shared: Arc<Shared>,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// A listening socket: `SO_REUSEADDR`, optionally `SO_REUSEPORT`, bound, backlog 1024.
fn listen_socket(addr: SocketAddr, reuse_port: bool) -> io::Result<OwnedFd> {
    let domain = if addr.is_ipv4() { Domain::Inet } else { Domain::Inet6 };
    let fd = sys::socket(domain, SockType::Stream)?;
    sys::set_reuseaddr(fd.as_fd(), true)?;
    if reuse_port {
        sys::set_reuseport(fd.as_fd(), true)?;
    }
    sys::bind(fd.as_fd(), &SockAddr::Inet(addr))?;
    sys::listen(fd.as_fd(), 1024)?;
    Ok(fd)
}

fn local_inet(fd: &OwnedFd) -> io::Result<SocketAddr> {
    sys::local_addr(fd.as_fd())?
        .as_inet()
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "not an Internet socket"))
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
        let n = handle.loops();
        let mut fds = Vec::with_capacity(n);
        let mut bound = addr;
        let (mut senders, mut receivers) = (Vec::new(), Vec::new());
        match policy {
            Policy::ReusePort | Policy::ReusePortCpu => {
                let cpus: Vec<usize> = if policy == Policy::ReusePortCpu {
                    handle
                        .pool
                        .loops
                        .iter()
                        .map(|e| e.cpu)
                        .collect::<Option<_>>()
                        .ok_or_else(|| {
                            io::Error::new(
                                io::ErrorKind::InvalidInput,
                                "Policy::ReusePortCpu needs loops pinned one per CPU (Builder::pin_to_cpus)",
                            )
                        })?
                } else {
                    Vec::new()
                };
                // One thread, loop order: socket i joins the group i-th, so it is index i of
                // the group the BPF program returns.
                for i in 0..n {
                    let fd = listen_socket(bound, true)?;
                    if i == 0 {
                        bound = local_inet(&fd)?;
                    }
                    fds.push(Some(fd));
                }
                if !cpus.is_empty() {
                    if let Some(Some(first)) = fds.first() {
                        sys::attach_reuseport_cpu_program(first.as_fd(), &cpus)?;
                    }
                }
            }
            Policy::LeastConnections => {
                let fd = listen_socket(addr, false)?;
                bound = local_inet(&fd)?;
                fds.push(Some(fd));
                fds.extend((1..n).map(|_| None));
                for _ in 0..n {
                    let (tx, rx) = threadsafe::channel();
                    senders.push(tx);
                    receivers.push(Some(rx));
                }
            }
        }
        Ok(TcpListeners {
            shared: Arc::new(Shared {
                policy,
                addr: bound,
                fds: Mutex::new(fds),
                receivers: Mutex::new(receivers),
                senders: Mutex::new(Some(senders)),
                next: AtomicUsize::new(0),
            }),
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
        self.shared.addr
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
        self.shared.policy
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
        let st =
            worker::current().ok_or_else(|| io::Error::other("TcpListeners::serve: not on a loop of a runtime"))?;
        let i = st.index;
        let load = st.pool.loops[i].load.clone();
        st.serving.set(st.serving.get() + 1);
        let _serving = Serving(st.clone());
        let handler = Rc::new(handler);
        match self.shared.policy {
            Policy::ReusePort | Policy::ReusePortCpu => {
                let fd = self.take_fd(i)?;
                let sock = Socket::from_fd(fd)?;
                accept_until_stop(&st, &sock, |fd, peer| {
                    load.connection_opened();
                    start_connection(&handler, &load, fd, peer);
                })
                .await
            }
            Policy::LeastConnections => {
                let mut rx = lock(&self.shared.receivers)
                    .get_mut(i)
                    .and_then(Option::take)
                    .ok_or_else(|| already_serving(i))?;
                if i == 0 {
                    let fd = self.take_fd(0)?;
                    let senders = lock(&self.shared.senders).take().unwrap_or_default();
                    let (shared, pool, st) = (self.shared.clone(), st.pool.clone(), st.clone());
                    drop(spawn(async move {
                        let sock = Socket::from_fd(fd)?;
                        accept_until_stop(&st, &sock, |fd, peer| hand_off(&shared, &pool, &senders, fd, peer)).await
                    }));
                }
                // Ends when the acceptor has stopped and every fd it sent is taken.
                while let Some((fd, peer)) = rx.recv().await {
                    start_connection(&handler, &load, fd, peer);
                }
                Ok(())
            }
        }
    }

    fn take_fd(&self, i: usize) -> io::Result<OwnedFd> {
        lock(&self.shared.fds)
            .get_mut(i)
            .and_then(Option::take)
            .ok_or_else(|| already_serving(i))
    }
}

impl std::fmt::Debug for TcpListeners {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "TcpListeners({}, {:?})", self.shared.addr, self.shared.policy)
    }
}

fn already_serving(i: usize) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidInput,
        format!(
            "TcpListeners::serve: loop {i} is already serving these listeners (or is not one of their runtime's loops)"
        ),
    )
}

/// Counts a `serve` of its loop while it runs: the stop sequence waits for it.
struct Serving(Rc<LoopState>);

impl Drop for Serving {
    fn drop(&mut self) {
        self.0.serving.set(self.0.serving.get().saturating_sub(1));
    }
}

/// Errors that concern one connection (or a passing shortage), not the listener.
fn is_transient(e: &io::Error) -> bool {
    matches!(
        e.raw_os_error(),
        Some(
            sys::errno::ECONNABORTED
                | sys::errno::EINTR
                | sys::errno::EMFILE
                | sys::errno::ENFILE
                | sys::errno::ENOBUFS
                | sys::errno::ENOMEM
                | sys::errno::EPROTO
                | sys::errno::EPERM
        )
    )
}

/// Accepts from `sock` until the runtime stops, then what its queue still holds; each
/// connection goes to `take`.
async fn accept_until_stop(st: &LoopState, sock: &Socket, mut take: impl FnMut(OwnedFd, SocketAddr)) -> io::Result<()> {
    loop {
        match select(st.stop.wait(), sock.accept()).await {
            Either::Left(_) => break,
            Either::Right(Ok((fd, peer))) => {
                if let Some(peer) = peer.as_inet() {
                    take(fd, peer);
                }
            }
            Either::Right(Err(e)) if is_transient(&e) => sleep(Duration::from_millis(1)).await,
            Either::Right(Err(e)) => return Err(e),
        }
    }
    // Connections the kernel completed before the stop are ours to serve: closing the
    // socket now would reset them.
    while let Ok((fd, peer)) = sys::accept4(sock.as_fd()) {
        if let Some(peer) = peer.as_inet() {
            take(fd, peer);
        }
    }
    Ok(())
}

/// The least-connections choice: the loop with the fewest live connections, ties going to the
/// one that accepted fewest so far (short connections leave most loops at zero live, where the
/// totals keep the spread even), then to a rotating start; counted there at once, then the fd
/// travels to it.
fn hand_off(shared: &Shared, pool: &Pool, senders: &[Sender<Conn>], fd: OwnedFd, peer: SocketAddr) {
    let n = senders.len();
    if n == 0 {
        return;
    }
    let start = shared.next.fetch_add(1, Relaxed) % n;
    let target = (0..n)
        .map(|k| (start + k) % n)
        .min_by_key(|&i| (pool.loops[i].load.live(), pool.loops[i].load.accepted()))
        .unwrap_or(0);
    let load = &pool.loops[target].load;
    load.connection_opened();
    if let Err((fd, _)) = senders[target].send((fd, peer)) {
        // The target loop is gone (it stopped serving): the connection closes here.
        drop(fd);
        load.connection_closed();
    }
}

/// One connection's task on this loop; its end (or cancellation) ends the live count.
fn start_connection<H, Fut>(handler: &Rc<H>, load: &Arc<Load>, fd: OwnedFd, peer: SocketAddr)
where
    H: Fn(TcpStream, SocketAddr) -> Fut + 'static,
    Fut: Future<Output = ()> + 'static,
{
    let live = Live(load.clone());
    let stream = match TcpStream::from_std(std::net::TcpStream::from(fd)) {
        Ok(s) => s,
        Err(_) => return, // `live` drops: counted closed
    };
    let fut = handler(stream, peer);
    drop(spawn(async move {
        let _live = live;
        fut.await;
    }));
}

/// A live connection of a loop, until dropped.
struct Live(Arc<Load>);

impl Drop for Live {
    fn drop(&mut self) {
        self.0.connection_closed();
    }
}
