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

use std::future::poll_fn;
use std::io;
use std::net::SocketAddr;
use std::os::fd::{AsFd, OwnedFd};
use std::pin::pin;
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering::Relaxed};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

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
/// The default is the one that measured best, [`Policy::LeastConnections`]: the policy that met
/// every target in every quiet run, with the best worst case. On a CPU-bound HTTP handler
/// (about 200 us a request) 2 loops served 1.90x and 1.92x one loop with it in two quiet runs,
/// against 1.80x and 1.94x with [`Policy::ReusePort`], whose split of a few keep-alive flows is
/// luck (its 1.80x fell below tokio's multi-thread runtime). Under 10,000 short connections its
/// imbalance (busiest over idlest loop, medians of 5) was 1.046 in accepted connections and
/// 1.031 in busy time, within the 1.10 target (`ReusePort`: 1.013 and 1.021, its best case:
/// every connection a new flow to hash). And it is the one policy for Unix sockets.
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
    /// One acceptor (on loop 0) hands each accepted fd to a loop with the fewest live
    /// connections (give or take one), the one with the least work so far, the acceptor's own
    /// work counted against loop 0 (seastar's choice, made even under short connections). The
    /// default: see [`Policy`] for the numbers. Its balance does not depend on how the
    /// clients' flows hash, and it applies to every listener (Unix sockets too).
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
    /// Least connections: the time loop 0's acceptor spent in its accept attempts (ns), work it
    /// does for every loop; `choose` counts it against loop 0.
    accepting_ns: AtomicU64,
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
            accepting_ns: AtomicU64::new(0),
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
                accept_until_stop(&st, closed, &sock, None, |fd, peer| {
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
                        let spent = Some(&group.accepting_ns);
                        accept_until_stop(&st, closed, &sock, spent, |fd, peer| {
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
/// holds; each connection goes to `take`. With `spent`, the time of every accept attempt is
/// added there (the acceptor's own work; two clock reads, about 50 ns, beside an `accept4` of
/// a microsecond or more). `take` is not timed: the least-connections hand-off may wake
/// another loop's thread, and on a shared core the kernel can switch to that thread inside the
/// eventfd write, so its wall time would count the other loop's work (timing it made loop 0
/// take 7% to 15% fewer connections than its CPU time called for).
async fn accept_until_stop(
    st: &LoopState,
    closed: Option<Receiver<()>>,
    sock: &Socket,
    spent: Option<&AtomicU64>,
    mut take: impl FnMut(OwnedFd, SockAddr),
) -> io::Result<()> {
    let mut stop = pin!(select(st.stop.wait(), async move {
        match closed {
            Some(mut rx) => while rx.recv().await.is_some() {},
            None => std::future::pending::<()>().await,
        }
    }));
    loop {
        let accept = poll_fn(|cx| {
            let Some(spent) = spent else {
                return sock.poll_accept(cx);
            };
            let t = Instant::now();
            let r = sock.poll_accept(cx);
            spent.fetch_add(u64::try_from(t.elapsed().as_nanos()).unwrap_or(u64::MAX), Relaxed);
            r
        });
        match select(stop.as_mut(), accept).await {
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

/// Live counts closer than this are treated as equal by the least-connections choice.
///
/// The acceptor reads the counts at biased moments: it runs on loop 0 only between that loop's
/// tasks, when the connection loop 0 was serving has just finished, while it reads every other
/// loop at a random point of its work; and a handed-off fd is counted on its loop before that
/// loop has even woken up. Under short connections (a handful live, each loop at 0, 1 or 2)
/// loop 0 therefore looks one connection lighter than it is: logged at every hand-off of
/// 10,000, the acceptor saw loop 0 with fewer live connections about half the time and with
/// more almost never, and with the strict minimum loop 0 took up to 58% of the connections
/// (docs/12-thread-per-core.md).
/// One connection of slack removes that bias and still lets the live counts decide when loops
/// really differ (long connections: a loop two or more behind always gets the next one).
const LIVE_SLACK: usize = 1;

/// The least-connections hand-off: the loop `choose` picks, counted there at once (so the next
/// pick, a microsecond later, sees it), then the fd travels to it.
fn hand_off(group: &Group, pool: &Pool, senders: &[Sender<Conn>], fd: OwnedFd, peer: SockAddr) {
    let n = senders.len();
    if n == 0 {
        return;
    }
    let target = choose(group, pool, n);
    let load = &pool.loops[target].load;
    load.connection_opened();
    if let Err((fd, _)) = senders[target].send((fd, peer)) {
        // The target loop is gone (it stopped serving): the connection closes here.
        drop(fd);
        load.connection_closed();
    }
}

/// The least-connections choice among the first `n` loops: of the loops within `LIVE_SLACK`
/// of the fewest live connections, the one with the least work so far, in connections: those
/// it accepted, plus for loop 0 its acceptor's time converted to connections (that time over
/// what one connection has cost the loops on average: their busy time, less the acceptor's,
/// over the connections they accepted). So loop 0 takes fewer connections by about the work it
/// does accepting for everyone, and the loops' busy times even out, not only their counts
/// (with the counts alone loop 0's CPU time ran 7% to 9% over loop 1's). Busy time that is not
/// connections' work (timers, other tasks) only makes the estimate of one connection larger
/// and the acceptor's share smaller: it errs towards plain counts. Remaining ties go to a
/// rotating start.
fn choose(group: &Group, pool: &Pool, n: usize) -> usize {
    // Read in place (no list per hand-off): the counters are atomics another loop may move
    // between two reads, which only blurs a heuristic.
    let seen = |i: usize| {
        let l = &pool.loops[i].load;
        Seen {
            live: l.live(),
            accepted: l.accepted(),
            busy: l.busy(),
        }
    };
    let accepting = Duration::from_nanos(group.accepting_ns.load(Relaxed));
    pick(n, seen, accepting, group.next.fetch_add(1, Relaxed) % n)
}

/// One loop's counters as the acceptor read them.
#[derive(Debug, Clone, Copy)]
struct Seen {
    live: usize,
    accepted: u64,
    busy: Duration,
}

/// `choose` over `n` loops whose counters `load` reads (loop 0 runs the acceptor), the scan
/// starting at `start`.
fn pick(n: usize, load: impl Fn(usize) -> Seen, accepting: Duration, start: usize) -> usize {
    let fewest = (0..n).map(|i| load(i).live).min().unwrap_or(0);
    let accepted: u64 = (0..n).map(|i| load(i).accepted).sum();
    let busy: f64 = (0..n).map(|i| load(i).busy.as_secs_f64()).sum();
    let accepting = accepting.as_secs_f64();
    let per_connection = (busy - accepting) / accepted as f64;
    let acceptor_work = if accepted > 0 && per_connection > 0.0 {
        accepting / per_connection
    } else {
        0.0
    };
    let work = |i: usize| load(i).accepted as f64 + if i == 0 { acceptor_work } else { 0.0 };
    (0..n)
        .map(|k| (start + k) % n)
        .filter(|&i| load(i).live <= fewest + LIVE_SLACK)
        .min_by(|&a, &b| work(a).total_cmp(&work(b)))
        .unwrap_or(0)
}

/// A live connection of a loop, until dropped.
pub(crate) struct Live(Arc<Load>);

impl Drop for Live {
    fn drop(&mut self) {
        self.0.connection_closed();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seen(live: usize, accepted: u64, busy_ms: u64) -> Seen {
        Seen {
            live,
            accepted,
            busy: Duration::from_millis(busy_ms),
        }
    }

    #[test]
    fn live_counts_one_apart_are_a_tie_that_the_work_so_far_decides() {
        // Loop 0 looks one lighter (the acceptor's biased view) but has accepted more.
        let loads = [seen(0, 11, 110), seen(1, 10, 100)];
        assert_eq!(pick(loads.len(), |i| loads[i], Duration::ZERO, 0), 1);
        // Two apart: the live counts decide, whatever the totals.
        let loads = [seen(0, 11, 110), seen(2, 10, 100)];
        assert_eq!(pick(loads.len(), |i| loads[i], Duration::ZERO, 1), 0);
    }

    #[test]
    fn the_acceptors_time_counts_against_loop_0() {
        // Equal counts: without the acceptor's time the rotating start decides.
        let loads = [seen(0, 100, 1000), seen(0, 100, 1000)];
        assert_eq!(pick(loads.len(), |i| loads[i], Duration::ZERO, 0), 0);
        // 50 ms of accepting at 10 ms a connection is 5 connections' work on loop 0.
        let loads = [seen(0, 100, 1050), seen(0, 104, 1040)];
        assert_eq!(pick(loads.len(), |i| loads[i], Duration::from_millis(50), 0), 1);
        let loads = [seen(0, 100, 1050), seen(0, 106, 1060)];
        assert_eq!(pick(loads.len(), |i| loads[i], Duration::from_millis(50), 0), 0);
    }

    #[test]
    fn nothing_accepted_yet_rotates() {
        let loads = [seen(0, 0, 0), seen(0, 0, 0), seen(0, 0, 0)];
        assert_eq!(pick(loads.len(), |i| loads[i], Duration::ZERO, 2), 2);
        assert_eq!(pick(loads.len(), |i| loads[i], Duration::from_millis(1), 1), 1);
    }
}
