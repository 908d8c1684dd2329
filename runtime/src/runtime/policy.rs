//! The placement policies, shared by everything that listens on N loops
//! ([`TcpListeners`](crate::runtime::TcpListeners), [`UnixListeners`](crate::runtime::UnixListeners)
//! and the pool's servers of [`Handle::start_server`](crate::runtime::Handle::start_server) and
//! its kin): [`Policy`], and `Group`, the sockets of one bound address under one policy, which
//! every loop then serves its part of with `Group::serve`, handing each connection it gets to
//! the caller's `start` (a stream task, a protocol's transport).
//!
//! Data flow per policy:
//! - reuse-port (with or without the CPU program): binding makes one listening socket per loop
//!   in a `SO_REUSEPORT` group, in loop order on the calling thread; loop `i`'s part takes
//!   socket `i`, registers it with its own reactor and accepts from it; the kernel chose the
//!   socket (its hash, or the BPF program). TCP only: Linux has no `SO_REUSEPORT` group for
//!   `AF_UNIX` (a second bind of the same path fails), so a Unix address refuses these two
//!   policies with an [`UnsupportedPolicy`] error.
//! - least connections: one listening socket; loop 0's part runs the acceptor task, which
//!   accepts, picks the loop with the fewest live connections (counting the connection there at
//!   once, so the next pick sees it) and sends the fd through that loop's threadsafe channel;
//!   each loop's part receives its fds and adopts them.
//!
//! A part stops accepting at the runtime's stop or at the group's `close` (a server's
//! `close()`, from any thread: it drops the senders of the close channels every accepting part
//! waits on). It then accepts what its queue already holds, closes its socket and returns; the
//! acceptor does the same, then drops the fd channels' senders, and each loop's part returns
//! once its channel is empty. Connections already accepted are served: the stop waits for them
//! (within the grace period).

use std::io;
use std::net::SocketAddr;
use std::os::fd::{AsFd, OwnedFd};
use std::pin::pin;
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::Relaxed};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use evloop_syscalls::{self as sys, Domain, SockAddr, SockType, UnixAddr};

use crate::event_loop::load::Load;
use crate::io::net::Socket;
use crate::runtime::error::UnsupportedPolicy;
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
    /// ports to pick one. No hand-off, but the hash only evens out on average. TCP only.
    ReusePort,
    /// The `SO_REUSEPORT` group plus a classic-BPF program that picks the listener of the CPU
    /// that received the connection: for loops pinned one per CPU
    /// ([`Builder::pin_to_cpus`](crate::runtime::Builder::pin_to_cpus)), so a connection stays
    /// on the CPU its packets arrive on. The spread follows the NIC's receive queues. TCP only.
    ReusePortCpu,
    /// One acceptor (on loop 0) hands each accepted fd to the loop with the fewest live
    /// connections (seastar's choice); the default: the one policy that applies to every
    /// listener (Unix sockets too) and whose balance does not depend on how the clients' flows
    /// hash (for TCP with many flows, `ReusePort` measured as even; docs/12-thread-per-core.md).
    #[default]
    LeastConnections,
}

/// An accepted connection on its way to the loop that will serve it.
type Conn = (OwnedFd, SockAddr);

/// The sockets of one bound address under one policy, before and while each loop serves its
/// part.
pub(crate) struct Group {
    policy: Policy,
    addr: SockAddr,
    /// Per loop: its listening socket (reuse-port), or for least connections the one socket in
    /// slot 0. Taken once by the loop's part.
    fds: Mutex<Vec<Option<OwnedFd>>>,
    /// Least connections: each loop's receiving end, taken by its part.
    receivers: Mutex<Vec<Option<Receiver<Conn>>>>,
    /// Least connections: the senders, taken by the acceptor (so that they all drop with it).
    senders: Mutex<Option<Vec<Sender<Conn>>>>,
    /// Where the least-connections scan starts, rotating so that ties spread.
    next: AtomicUsize,
    /// `close` was called: parts that have not started do not start.
    closed: AtomicBool,
    /// Per loop: what its accepting part waits on besides the runtime's stop; the senders are
    /// dropped by `close`.
    close_rx: Mutex<Vec<Option<Receiver<()>>>>,
    close_tx: Mutex<Option<Vec<Sender<()>>>>,
}

pub(crate) fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// A listening socket: for TCP `SO_REUSEADDR` and optionally `SO_REUSEPORT`; bound, backlog
/// 1024.
fn listen_socket(addr: &SockAddr, reuse_port: bool) -> io::Result<OwnedFd> {
    let domain = match addr {
        SockAddr::Inet(SocketAddr::V4(_)) => Domain::Inet,
        SockAddr::Inet(SocketAddr::V6(_)) => Domain::Inet6,
        SockAddr::Unix(_) => Domain::Unix,
    };
    let fd = sys::socket(domain, SockType::Stream)?;
    if domain != Domain::Unix {
        sys::set_reuseaddr(fd.as_fd(), true)?;
    }
    if reuse_port {
        sys::set_reuseport(fd.as_fd(), true)?;
    }
    sys::bind(fd.as_fd(), addr)?;
    sys::listen(fd.as_fd(), 1024)?;
    Ok(fd)
}

fn local_inet(fd: &OwnedFd) -> io::Result<SocketAddr> {
    sys::local_addr(fd.as_fd())?
        .as_inet()
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "not an Internet socket"))
}

impl Group {
    fn new(policy: Policy, addr: SockAddr, fds: Vec<Option<OwnedFd>>, loops: usize) -> Group {
        let (mut senders, mut receivers) = (Vec::new(), Vec::new());
        if policy == Policy::LeastConnections {
            for _ in 0..loops {
                let (tx, rx) = threadsafe::channel();
                senders.push(tx);
                receivers.push(Some(rx));
            }
        }
        let (mut close_tx, mut close_rx) = (Vec::new(), Vec::new());
        for _ in 0..loops {
            let (tx, rx) = threadsafe::channel();
            close_tx.push(tx);
            close_rx.push(Some(rx));
        }
        Group {
            policy,
            addr,
            fds: Mutex::new(fds),
            receivers: Mutex::new(receivers),
            senders: Mutex::new(Some(senders)),
            next: AtomicUsize::new(0),
            closed: AtomicBool::new(false),
            close_rx: Mutex::new(close_rx),
            close_tx: Mutex::new(Some(close_tx)),
        }
    }

    /// Binds a TCP address for every loop of the runtime under `policy` (port 0: one free port
    /// for all).
    pub(crate) fn bind_inet(handle: &Handle, addr: SocketAddr, policy: Policy) -> io::Result<Group> {
        let n = handle.loops();
        let mut fds = Vec::with_capacity(n);
        let mut bound = addr;
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
                    let fd = listen_socket(&SockAddr::Inet(bound), true)?;
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
                let fd = listen_socket(&SockAddr::Inet(addr), false)?;
                bound = local_inet(&fd)?;
                fds.push(Some(fd));
                fds.extend((1..n).map(|_| None));
            }
        }
        Ok(Group::new(policy, SockAddr::Inet(bound), fds, n))
    }

    /// Binds a Unix address for every loop: least connections only (see the module
    /// documentation); the other policies give an `Unsupported` error holding an
    /// [`UnsupportedPolicy`].
    pub(crate) fn bind_unix(handle: &Handle, addr: &UnixAddr, policy: Policy) -> io::Result<Group> {
        if policy != Policy::LeastConnections {
            return Err(io::Error::new(
                io::ErrorKind::Unsupported,
                UnsupportedPolicy::new(policy),
            ));
        }
        let n = handle.loops();
        let addr = SockAddr::Unix(addr.clone());
        let mut fds = vec![Some(listen_socket(&addr, false)?)];
        fds.extend((1..n).map(|_| None));
        Ok(Group::new(policy, addr, fds, n))
    }

    pub(crate) fn policy(&self) -> Policy {
        self.policy
    }

    pub(crate) fn addr(&self) -> &SockAddr {
        &self.addr
    }

    pub(crate) fn is_closed(&self) -> bool {
        self.closed.load(Relaxed)
    }

    /// Stops accepting on every loop (from any thread): the accepting parts end, as at the
    /// runtime's stop; the sockets of parts that have not started are closed now.
    pub(crate) fn close(&self) {
        if self.closed.swap(true, Relaxed) {
            return;
        }
        drop(lock(&self.close_tx).take());
        let fds = std::mem::take(&mut *lock(&self.fds));
        drop(fds);
        // An acceptor that never started: the other parts' channels end now.
        drop(lock(&self.senders).take());
    }

    /// Serves this loop's part until the runtime stops or the group closes: each connection
    /// the policy gives this loop goes to `start`, counted in the loop's load (accepted, live)
    /// until the [`Live`] it comes with is dropped. `what` names the caller in errors.
    pub(crate) async fn serve<S>(self: &Arc<Self>, what: &str, mut start: S) -> io::Result<()>
    where
        S: FnMut(OwnedFd, SockAddr, Live) + 'static,
    {
        let st = worker::current().ok_or_else(|| io::Error::other(format!("{what}: not on a loop of a runtime")))?;
        let i = st.index;
        let load = st.pool.loops[i].load.clone();
        st.serving.set(st.serving.get() + 1);
        let _serving = Serving(st.clone());
        let closed = lock(&self.close_rx).get_mut(i).and_then(Option::take);
        if self.is_closed() {
            return Ok(());
        }
        match self.policy {
            Policy::ReusePort | Policy::ReusePortCpu => {
                let Some(fd) = self.take_fd(i) else {
                    return self.missing(what, i);
                };
                let sock = Socket::from_fd(fd)?;
                accept_until_stop(&st, closed, &sock, |fd, peer| {
                    load.connection_opened();
                    start(fd, peer, Live(load.clone()));
                })
                .await
            }
            Policy::LeastConnections => {
                let Some(mut rx) = lock(&self.receivers).get_mut(i).and_then(Option::take) else {
                    return self.missing(what, i);
                };
                if i == 0 {
                    let Some(fd) = self.take_fd(0) else {
                        return self.missing(what, i);
                    };
                    let senders = lock(&self.senders).take().unwrap_or_default();
                    let (group, pool, st) = (self.clone(), st.pool.clone(), st.clone());
                    drop(spawn(async move {
                        let sock = Socket::from_fd(fd)?;
                        accept_until_stop(&st, closed, &sock, |fd, peer| {
                            hand_off(&group, &pool, &senders, fd, peer)
                        })
                        .await
                    }));
                }
                // Ends when the acceptor has stopped and every fd it sent is taken.
                while let Some((fd, peer)) = rx.recv().await {
                    start(fd, peer, Live(load.clone()));
                }
                Ok(())
            }
        }
    }

    fn take_fd(&self, i: usize) -> Option<OwnedFd> {
        lock(&self.fds).get_mut(i).and_then(Option::take)
    }

    /// A part found its socket or channel gone: taken by `close` (nothing to serve), or by an
    /// earlier part on the same loop (the caller's mistake).
    fn missing(&self, what: &str, i: usize) -> io::Result<()> {
        if self.is_closed() {
            return Ok(());
        }
        Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("{what}: loop {i} is already serving these listeners (or is not one of their runtime's loops)"),
        ))
    }
}

/// Counts a part of its loop while it runs: the stop sequence waits for it.
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

/// Accepts from `sock` until the runtime stops or `closed` ends, then what its queue still
/// holds; each connection goes to `take`.
async fn accept_until_stop(
    st: &LoopState,
    closed: Option<Receiver<()>>,
    sock: &Socket,
    mut take: impl FnMut(OwnedFd, SockAddr),
) -> io::Result<()> {
    let mut stop = pin!(select(st.stop.wait(), async move {
        match closed {
            Some(mut rx) => while rx.recv().await.is_some() {},
            None => std::future::pending::<()>().await,
        }
    }));
    loop {
        match select(stop.as_mut(), sock.accept()).await {
            Either::Left(_) => break,
            Either::Right(Ok((fd, peer))) => take(fd, peer),
            Either::Right(Err(e)) if is_transient(&e) => sleep(Duration::from_millis(1)).await,
            Either::Right(Err(e)) => return Err(e),
        }
    }
    // Connections the kernel completed before the stop are ours to serve: closing the
    // socket now would reset them.
    while let Ok((fd, peer)) = sys::accept4(sock.as_fd()) {
        take(fd, peer);
    }
    Ok(())
}

/// The least-connections choice: the loop with the fewest live connections, ties going to the
/// one that accepted fewest so far (short connections leave most loops at zero live, where the
/// totals keep the spread even), then to a rotating start; counted there at once, then the fd
/// travels to it.
fn hand_off(group: &Group, pool: &Pool, senders: &[Sender<Conn>], fd: OwnedFd, peer: SockAddr) {
    let n = senders.len();
    if n == 0 {
        return;
    }
    let start = group.next.fetch_add(1, Relaxed) % n;
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

/// A live connection of a loop, until dropped.
pub(crate) struct Live(Arc<Load>);

impl Drop for Live {
    fn drop(&mut self) {
        self.0.connection_closed();
    }
}
