//! Servers: [`Server`] (asyncio's), the listening sockets it owns and the accept loop that turns
//! each connection into a [`Transport`] running a protocol from the user's factory; the
//! accept-retry back-off (the server's policy: [`DEFAULT_ACCEPT_RETRY_DELAY`], its range and
//! check) and the out-of-fds (`EMFILE`) shedding; and the loop methods that make
//! servers and client transports: `create_server`, `create_unix_server`, `create_connection`,
//! `create_unix_connection`.
//!
//! A listener is registered with the reactor like a transport, with an accept handler in the
//! registration: every epoll event schedules it, and it accepts until `EAGAIN` or a budget.

use std::cell::{Cell, RefCell};
use std::fmt;
use std::io;
use std::net::SocketAddr;
use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::panic::Location;
use std::rc::Rc;
use std::time::Duration;

use evloop_syscalls as sys;

use crate::event_loop::clock::duration_to_ns;
use crate::event_loop::handle::{Callback, HandleKind, HandleMeta, OnceCallback, TimerHandle};
use crate::event_loop::reactor::{IoState, ready};
use crate::event_loop::{ExceptionContext, ExceptionKind, LoopHandle, LoopInner, Ready};
use crate::io::net::{SockAddr, SockType, UnixAddr};
use crate::io::protocol::{Protocol, Transport};
use crate::task::promise::Promise;

/// Accepts per event, likewise.
const ACCEPTS_PER_EVENT: usize = 128;

/// asyncio's `ACCEPT_RETRY_DELAY`: how long a new server waits before it retries `accept` after
/// running out of a resource (see [`Server::accept_retry_delay`]).
pub const DEFAULT_ACCEPT_RETRY_DELAY: Duration = Duration::from_secs(1);

/// The range [`Server::set_accept_retry_delay`] accepts: a shorter delay would make a server that
/// cannot accept spin.
const ACCEPT_RETRY_DELAY_RANGE: std::ops::RangeInclusive<Duration> =
    Duration::from_millis(1)..=Duration::from_secs(3600);

/// Checks an accept retry delay: a description of the problem if it is out of range.
pub(crate) fn check_accept_retry_delay(delay: Duration) -> Result<(), String> {
    if ACCEPT_RETRY_DELAY_RANGE.contains(&delay) {
        Ok(())
    } else {
        Err(format!(
            "an accept retry delay of {delay:?} is outside {:?}..={:?} (shorter would spin, longer never retries)",
            ACCEPT_RETRY_DELAY_RANGE.start(),
            ACCEPT_RETRY_DELAY_RANGE.end()
        ))
    }
}

/// Listening sockets serving a protocol factory (asyncio's `Server`).
///
/// `A` is the kind of address it listens on: a [`SocketAddr`] for a TCP server
/// ([`LoopHandle::create_server`], [`start_server`](crate::streams::start_server)), a
/// [`UnixAddr`] for a Unix one; [`Server::local_addr`] returns it, no `Option` to unwrap.
#[derive(Clone)]
pub struct Server<A = SocketAddr> {
    inner: Rc<ServerInner>,
    /// The first listening address, kept after `close()` (for logs and reconnect loops).
    addr: A,
}

type Factory = dyn Fn() -> Box<dyn Protocol>;

struct Listener {
    fd: RefCell<Option<OwnedFd>>,
    io: Rc<IoState>,
    addr: SockAddr,
    /// The retry timer while accepting is paused after a process or system error; events that
    /// arrive meanwhile leave the queue to the timer (the readiness bit stays set).
    retry: RefCell<Option<TimerHandle>>,
    /// Loop time of the first of the consecutive attempts that failed for want of fds: once
    /// the condition has lasted a retry delay, the queue is shed.
    out_of_fds_since: Cell<Option<u64>>,
}

struct ServerInner {
    lp: Rc<LoopInner>,
    /// The user's protocol factory; `None` once the loop has closed.
    factory: RefCell<Option<Box<Factory>>>,
    listeners: RefCell<Vec<Rc<Listener>>>,
    serving: Cell<bool>,
    active: Cell<usize>,
    /// One spare fd, closed to make room to accept-and-drop a connection when the process is
    /// out of fds (libuv's `uv__emfile_trick`): the server sheds load instead of spinning.
    reserve: RefCell<Option<OwnedFd>>,
    /// Connections shed because the process was out of fds.
    shed: Cell<u64>,
    /// How long accepting pauses after a process or system error (asyncio's
    /// `ACCEPT_RETRY_DELAY`).
    retry_delay: Cell<Duration>,
    closed_waiters: RefCell<Vec<Promise<()>>>,
}

struct AcceptHandler {
    meta: HandleMeta,
    server: Rc<ServerInner>,
    listener: Rc<Listener>,
}

impl Drop for AcceptHandler {
    /// Dropped when the server closes (the listener is already closed) or when the loop closes
    /// under a serving server: then its listening socket is closed here, and the server lets go
    /// of what it holds (see `ServerInner::release`).
    fn drop(&mut self) {
        if let Ok(mut fd) = self.listener.fd.try_borrow_mut() {
            if let Some(fd) = fd.take() {
                let _ = sys::close(fd);
            }
        }
        if self.server.lp.is_closed() {
            self.server.release();
        }
    }
}

impl Callback for AcceptHandler {
    fn run(&self) {
        accept_ready(&self.server, &self.listener);
    }
    fn meta(&self) -> &HandleMeta {
        &self.meta
    }
    fn type_name(&self) -> &'static str {
        "server accept"
    }
}

fn is_out_of_fds(e: &io::Error) -> bool {
    matches!(e.raw_os_error(), Some(sys::errno::EMFILE) | Some(sys::errno::ENFILE))
}

/// Errors that concern the one connection `accept4` was taking, not the listener: that
/// connection is gone, the next one may be fine. `accept(2)`: "Linux accept() passes
/// already-pending network errors on the new socket as an error code from accept() ... For
/// reliable operation the application should ... treat them like EAGAIN by retrying", naming
/// these for TCP; `ECONNABORTED` is the peer's reset before the accept, `EPERM` a firewall rule
/// that refused this connection.
fn is_per_connection(e: &io::Error) -> bool {
    matches!(
        e.raw_os_error(),
        Some(
            sys::errno::ECONNABORTED
                | sys::errno::EPERM
                | sys::errno::ENOPROTOOPT
                | sys::errno::EOPNOTSUPP
                | sys::errno::EHOSTUNREACH
                | sys::errno::ENETUNREACH
                | sys::errno::EPROTO
                | sys::errno::ENETDOWN
                | sys::errno::EHOSTDOWN
                | sys::errno::ENONET
        )
    )
}

/// Accepts what the listener's queue holds, up to a budget.
///
/// The listener is edge-triggered, so its `READABLE` bit is the only memory of the connections
/// waiting: it is cleared only by `EAGAIN`, never by an error, or a queued connection would
/// wait for the next one to arrive. A per-connection error is skipped; any other error pauses
/// accepting for the retry delay (see `back_off`).
fn accept_ready(server: &Rc<ServerInner>, listener: &Rc<Listener>) {
    if !server.serving.get() || listener.retry.borrow().is_some() {
        return;
    }
    for _ in 0..ACCEPTS_PER_EVENT {
        let accepted = {
            let fd = listener.fd.borrow();
            let Some(fd) = fd.as_ref() else { return };
            sys::accept4(fd.as_fd())
        };
        match accepted {
            Ok((fd, peer)) => {
                listener.out_of_fds_since.set(None);
                if listener.addr.as_inet().is_some() {
                    let _ = sys::set_nodelay(fd.as_fd(), true);
                }
                let Some(protocol) = server.new_protocol() else { return };
                server.active.set(server.active.get() + 1);
                let s = server.clone();
                let on_close: Box<dyn FnOnce()> = Box::new(move || connection_closed(&s));
                if let Err(e) =
                    Transport::start_accepted(&server.lp, fd, peer, protocol, Location::caller(), Some(on_close))
                {
                    server.active.set(server.active.get() - 1);
                    report(
                        server,
                        format!("accept on {}: could not start the transport: {e}", listener.addr),
                    );
                }
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                listener.out_of_fds_since.set(None);
                listener.io.clear(ready::READABLE);
                return;
            }
            Err(e) if is_per_connection(&e) => continue,
            Err(e) if is_out_of_fds(&e) => {
                out_of_fds(server, listener, &e);
                return;
            }
            Err(e) => {
                listener.out_of_fds_since.set(None);
                let delay = server.retry_delay.get();
                report(
                    server,
                    format!("accept on {}: {e}; retrying in {delay:?}", listener.addr),
                );
                back_off(server, listener);
                return;
            }
        }
    }
    // More connections may be waiting: continue after other work.
    let (s, l) = (server.clone(), listener.clone());
    let cb = OnceCallback::new_rc(HandleKind::CallSoon, Location::caller(), move || accept_ready(&s, &l));
    server.lp.push_ready(Ready::Callback(cb));
}

/// Pauses accepting on `listener` for the retry delay (asyncio removes the reader and calls
/// `_start_serving` again after `ACCEPT_RETRY_DELAY`). The readiness bit stays set, so the
/// retry finds the queued connections; events that arrive meanwhile do nothing, so a server
/// that cannot accept idles instead of spinning.
fn back_off(server: &Rc<ServerInner>, listener: &Rc<Listener>) {
    let (s, l) = (server.clone(), listener.clone());
    let lp = LoopHandle {
        inner: server.lp.clone(),
    };
    let timer = lp.call_later(server.retry_delay.get(), move || {
        let timer = l.retry.borrow_mut().take();
        drop(timer);
        // Only if connections wait: an empty queue (shed, or never filled) is left to the next
        // edge, so a server out of fds with nobody connecting makes no attempt at all.
        if l.io.readiness() & ready::READABLE != 0 {
            accept_ready(&s, &l);
        }
    });
    // A closed loop refuses the timer, and then nothing would ever accept again anyway.
    *listener.retry.borrow_mut() = timer.ok();
}

/// Out of fds (`EMFILE`, `ENFILE`). At first the server only backs off: the condition often
/// lasts a moment (a burst of connections, a child holding pipes), and the connections waiting
/// in the kernel's queue can be served once it is over. If it has lasted a whole retry delay,
/// it persists: the queue is shed (libuv's reserve-fd trick, see `shed_connections`), so that
/// its clients see their connection closed now instead of waiting in the backlog for as long
/// as the condition lasts, and the server backs off again.
fn out_of_fds(server: &Rc<ServerInner>, listener: &Rc<Listener>, err: &io::Error) {
    let delay = server.retry_delay.get();
    let now = server.lp.now();
    let since = match listener.out_of_fds_since.get() {
        Some(t) => t,
        None => {
            listener.out_of_fds_since.set(Some(now));
            now
        }
    };
    if now.saturating_sub(since) >= duration_to_ns(delay) {
        let shed = shed_connections(server, listener);
        report(
            server,
            format!(
                "accept on {}: {err}, still after {delay:?}; shed {shed} pending connection(s), retrying in {delay:?}",
                listener.addr
            ),
        );
    } else {
        report(
            server,
            format!("accept on {}: {err}; retrying in {delay:?}", listener.addr),
        );
    }
    back_off(server, listener);
}

/// Closes the spare fd, accepts and drops pending connections until the queue is empty (or
/// accept fails again), and reopens the spare: the pending clients see their connection
/// closed. Returns how many were shed. Without a spare (it could not be reopened last time),
/// nothing is shed.
fn shed_connections(server: &Rc<ServerInner>, listener: &Rc<Listener>) -> u64 {
    let spare = server.reserve.borrow_mut().take();
    let mut shed = 0u64;
    if let Some(spare) = spare {
        drop(spare);
        loop {
            let accepted = {
                let fd = listener.fd.borrow();
                let Some(fd) = fd.as_ref() else { break };
                sys::accept4(fd.as_fd())
            };
            match accepted {
                Ok((fd, _)) => {
                    drop(fd);
                    shed += 1;
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    listener.io.clear(ready::READABLE);
                    break;
                }
                Err(e) if is_per_connection(&e) => continue,
                Err(_) => break,
            }
        }
        server.shed.set(server.shed.get() + shed);
    }
    // Reopen the spare now, or at the next attempt if the process is still out of fds.
    if server.reserve.borrow().is_none() {
        *server.reserve.borrow_mut() = sys::open_dev_null().ok();
    }
    shed
}

impl ServerInner {
    /// A protocol for a new connection, from the user's factory (`None` once the loop closed).
    fn new_protocol(&self) -> Option<Box<dyn Protocol>> {
        let factory = self.factory.try_borrow().ok()?;
        factory.as_ref().map(|f| f())
    }

    /// The loop is closing: the server stops serving and lets go of the user's protocol
    /// factory (which may hold user state that holds the server's transports), its spare fd,
    /// its listeners and the promises of `wait_closed`.
    fn release(&self) {
        self.serving.set(false);
        let factory = self.factory.try_borrow_mut().ok().and_then(|mut f| f.take());
        drop(factory);
        let spare = self.reserve.try_borrow_mut().ok().and_then(|mut r| r.take());
        drop(spare);
        let listeners = self.listeners.try_borrow_mut().map(|mut l| std::mem::take(&mut *l));
        drop(listeners);
        let waiters = self
            .closed_waiters
            .try_borrow_mut()
            .map(|mut w| std::mem::take(&mut *w));
        drop(waiters);
    }
}

fn report(server: &Rc<ServerInner>, message: String) {
    server.lp.report(ExceptionContext {
        kind: ExceptionKind::ServerError,
        message,
        panic: None,
        task: None,
        handle: None,
    });
}

fn connection_closed(server: &Rc<ServerInner>) {
    server.active.set(server.active.get().saturating_sub(1));
    maybe_wake_closed(server);
}

fn maybe_wake_closed(server: &Rc<ServerInner>) {
    if !server.serving.get() && server.active.get() == 0 && server.listeners.borrow().is_empty() {
        for p in std::mem::take(&mut *server.closed_waiters.borrow_mut()) {
            let _ = p.set_result(());
        }
    }
}

impl<A> Server<A> {
    fn start(
        lp: &Rc<LoopInner>,
        factory: Box<Factory>,
        sockets: Vec<(OwnedFd, SockAddr)>,
        addr: A,
    ) -> io::Result<Server<A>> {
        let inner = Rc::new(ServerInner {
            lp: lp.clone(),
            factory: RefCell::new(Some(factory)),
            listeners: RefCell::new(Vec::new()),
            serving: Cell::new(true),
            active: Cell::new(0),
            reserve: RefCell::new(sys::open_dev_null().ok()),
            shed: Cell::new(0),
            retry_delay: Cell::new(DEFAULT_ACCEPT_RETRY_DELAY),
            closed_waiters: RefCell::new(Vec::new()),
        });
        for (fd, addr) in sockets {
            let io = lp.register_io(fd.as_raw_fd())?;
            let listener = Rc::new(Listener {
                fd: RefCell::new(Some(fd)),
                io,
                addr,
                retry: RefCell::new(None),
                out_of_fds_since: Cell::new(None),
            });
            let handler: Rc<dyn Callback> = Rc::new(AcceptHandler {
                meta: HandleMeta::new(HandleKind::Io, Location::caller()),
                server: inner.clone(),
                listener: listener.clone(),
            });
            listener.io.set_handler(Some(handler));
            inner.listeners.borrow_mut().push(listener);
        }
        Ok(Server { inner, addr })
    }

    /// The addresses the server listens on (empty once closed, as asyncio's `sockets`).
    pub fn addresses(&self) -> Vec<SockAddr> {
        self.inner.listeners.borrow().iter().map(|l| l.addr.clone()).collect()
    }

    /// The first address it listens on, as bound (so port 0 shows the port the kernel picked);
    /// still known after [`Server::close`].
    ///
    /// ```
    /// evloop::run(async {
    ///     let server = evloop::streams::start_server(|_reader, _writer| async {}, "127.0.0.1", 0).await?;
    ///     let addr: std::net::SocketAddr = server.local_addr();
    ///     assert!(addr.ip().is_loopback() && addr.port() != 0);
    ///     Ok::<(), std::io::Error>(())
    /// })??;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn local_addr(&self) -> A
    where
        A: Clone,
    {
        self.addr.clone()
    }

    /// Whether it accepts connections.
    pub fn is_serving(&self) -> bool {
        self.inner.serving.get()
    }

    /// Connections currently open.
    pub fn active_connections(&self) -> usize {
        self.inner.active.get()
    }

    /// Connections accepted and dropped because the process was out of fds for longer than
    /// the accept retry delay.
    pub fn shed_connections(&self) -> u64 {
        self.inner.shed.get()
    }

    /// How long the server waits before it tries `accept` again after the process or system ran
    /// out of a resource (`EMFILE`, `ENFILE`, `ENOMEM`, `ENOBUFS`, ...): asyncio's
    /// `ACCEPT_RETRY_DELAY`, [`DEFAULT_ACCEPT_RETRY_DELAY`] (1 s) for a new server, changed with
    /// [`set_accept_retry_delay`](Server::set_accept_retry_delay). Connections keep queueing in
    /// the kernel meanwhile; a server still out of fds when the delay ends sheds them (see
    /// [`shed_connections`](Server::shed_connections)).
    pub fn accept_retry_delay(&self) -> Duration {
        self.inner.retry_delay.get()
    }

    /// Changes this server's accept retry delay; a pause already under way keeps its timer.
    /// An `InvalidInput` error (and no change) outside 1 ms (a shorter delay would make a
    /// server that cannot accept spin) ..= 1 hour.
    ///
    /// ```
    /// # use std::time::Duration;
    /// let lp = evloop::event_loop::EventLoop::new()?;
    /// let h = lp.handle();
    /// lp.run_until_complete(async move {
    ///     let server = h.create_unix_server(
    ///         || evloop_doc_protocol(),
    ///         &evloop::net::UnixAddr::abstract_name(b"evloop-doc-retry")?,
    ///     )?;
    ///     server.set_accept_retry_delay(Duration::from_millis(200))?;
    ///     assert_eq!(server.accept_retry_delay(), Duration::from_millis(200));
    ///     assert!(server.set_accept_retry_delay(Duration::ZERO).is_err());
    ///     server.close();
    ///     Ok::<(), std::io::Error>(())
    /// })??;
    /// # struct P;
    /// # impl evloop::protocol::Protocol for P { fn data_received(&mut self, _: &[u8]) {} }
    /// # fn evloop_doc_protocol() -> P { P }
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn set_accept_retry_delay(&self, delay: Duration) -> io::Result<()> {
        check_accept_retry_delay(delay).map_err(|detail| {
            io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("Server::set_accept_retry_delay: {detail}"),
            )
        })?;
        self.inner.retry_delay.set(delay);
        Ok(())
    }

    /// Stops listening (closes the listening sockets); open connections are left alone.
    pub fn close(&self) {
        let s = &self.inner;
        if !s.serving.replace(false) {
            return;
        }
        let listeners = std::mem::take(&mut *s.listeners.borrow_mut());
        for l in listeners {
            let retry = l.retry.borrow_mut().take();
            if let Some(t) = retry {
                t.cancel();
            }
            s.lp.deregister_io(&l.io);
            if let Some(fd) = l.fd.borrow_mut().take() {
                let _ = sys::close(fd);
            }
            if let SockAddr::Unix(UnixAddr::Pathname(p)) = &l.addr {
                let _ = std::fs::remove_file(p);
            }
        }
        let spare = s.reserve.borrow_mut().take();
        drop(spare);
        maybe_wake_closed(s);
    }

    /// Waits until the server is closed and every connection it accepted has closed.
    pub async fn wait_closed(&self) {
        let s = &self.inner;
        if !s.serving.get() && s.active.get() == 0 {
            return;
        }
        let p: Promise<()> = LoopHandle { inner: s.lp.clone() }.create_future();
        s.closed_waiters.borrow_mut().push(p.clone());
        let _ = p.await;
    }

    /// Serves until the server is closed (asyncio's `serve_forever`; here it simply waits).
    pub async fn serve_forever(&self) {
        self.wait_closed().await
    }
}

impl<A> fmt::Debug for Server<A> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let addrs: Vec<String> = self.addresses().iter().map(|a| a.to_string()).collect();
        let serving = self.inner.serving.get();
        write!(f, "<Server serving={serving} {}>", addrs.join(", "))
    }
}

fn listen_socket(addr: &SockAddr, backlog: i32) -> io::Result<OwnedFd> {
    let domain = match addr {
        SockAddr::Inet(SocketAddr::V4(_)) => sys::Domain::Inet,
        SockAddr::Inet(SocketAddr::V6(_)) => sys::Domain::Inet6,
        SockAddr::Unix(_) => sys::Domain::Unix,
    };
    let fd = sys::socket(domain, SockType::Stream)?;
    if addr.as_inet().is_some() {
        sys::set_reuseaddr(fd.as_fd(), true)?;
        if domain == sys::Domain::Inet6 {
            // Like asyncio: an IPv6 listener does not also take IPv4 (bind both explicitly).
            sys::set_v6only(fd.as_fd(), true)?;
        }
    }
    sys::bind(fd.as_fd(), addr).map_err(|e| crate::io::error::with_context(format!("bind({addr})"), e))?;
    sys::listen(fd.as_fd(), backlog)?;
    Ok(fd)
}

/// Starts `protocol` on a connection accepted elsewhere, as the accept loop above starts one
/// (`TCP_NODELAY` on a TCP socket), with `on_close` run when the connection ends: the hook of
/// the servers of `evloop::runtime`, whose acceptor may run on another loop's thread and hands
/// the fd to the loop that serves it.
#[track_caller]
pub(crate) fn start_accepted(
    lp: &LoopHandle,
    fd: OwnedFd,
    peer: SockAddr,
    protocol: Box<dyn Protocol>,
    on_close: Box<dyn FnOnce()>,
) -> io::Result<Transport> {
    if peer.as_inet().is_some() {
        let _ = sys::set_nodelay(fd.as_fd(), true);
    }
    Transport::start_accepted(&lp.inner, fd, peer, protocol, Location::caller(), Some(on_close))
}

impl LoopHandle {
    /// Serves `factory`'s protocols on every address `host` resolves to (asyncio's
    /// `create_server`). `host` may be a name (resolved with `getaddrinfo` on the executor) or
    /// an IP literal; port 0 picks a free port.
    pub async fn create_server<P, F>(&self, factory: F, host: &str, port: u16) -> io::Result<Server>
    where
        P: Protocol,
        F: Fn() -> P + 'static,
    {
        let addrs = self.getaddrinfo_passive(host, port).await?;
        let mut sockets = Vec::new();
        let mut first = None;
        for a in addrs {
            let addr = SockAddr::Inet(a);
            let fd = listen_socket(&addr, 1024)?;
            let bound = sys::local_addr(fd.as_fd())?;
            if first.is_none() {
                first = bound.as_inet();
            }
            sockets.push((fd, bound));
        }
        let Some(first) = first else {
            return Err(io::Error::new(
                io::ErrorKind::NotFound,
                format!("create_server({host}:{port}): no address to listen on"),
            ));
        };
        let factory: Box<Factory> = Box::new(move || Box::new(factory()));
        Server::start(&self.inner, factory, sockets, first)
    }

    /// Serves `factory`'s protocols on a Unix socket (asyncio's `create_unix_server`).
    pub fn create_unix_server<P, F>(&self, factory: F, addr: &UnixAddr) -> io::Result<Server<UnixAddr>>
    where
        P: Protocol,
        F: Fn() -> P + 'static,
    {
        let unix = addr.clone();
        let addr = SockAddr::Unix(addr.clone());
        let fd = listen_socket(&addr, 1024)?;
        let factory: Box<Factory> = Box::new(move || Box::new(factory()));
        Server::start(&self.inner, factory, vec![(fd, addr)], unix)
    }

    /// Connects to `host:port`, trying each resolved address in turn, and runs `protocol` on
    /// the connection (asyncio's `create_connection`). The error of the last attempt is
    /// returned if none succeeds.
    #[track_caller]
    pub fn create_connection<P: Protocol>(
        &self,
        protocol: P,
        host: &str,
        port: u16,
    ) -> impl std::future::Future<Output = io::Result<Transport>> + 'static + use<P> {
        let site = Location::caller();
        let lp = self.clone();
        let host = host.to_string();
        async move {
            let addrs = lp.getaddrinfo(&host, port).await?;
            let sock = crate::io::net::connect_any(&addrs, &host).await?;
            let (fd, io) = sock.into_registered();
            Transport::start_registered(&lp.inner, fd, io, Box::new(protocol), site, None)
        }
    }

    /// Connects to a Unix socket and runs `protocol` on it.
    #[track_caller]
    pub fn create_unix_connection<P: Protocol>(
        &self,
        protocol: P,
        addr: &UnixAddr,
    ) -> impl std::future::Future<Output = io::Result<Transport>> + 'static + use<P> {
        let site = Location::caller();
        let lp = self.clone();
        let addr = addr.clone();
        async move {
            let sock = crate::io::net::Socket::new(sys::Domain::Unix, SockType::Stream)?;
            sock.connect(&SockAddr::Unix(addr)).await?;
            let (fd, io) = sock.into_registered();
            Transport::start_registered(&lp.inner, fd, io, Box::new(protocol), site, None)
        }
    }
}
