//! Datagram endpoints: asyncio's `create_datagram_endpoint`, callbacks over UDP and Unix
//! datagram sockets (no task per endpoint).
//!
//! A [`DatagramTransport`] owns a datagram socket and a [`DatagramProtocol`] (the user's
//! callbacks). As for the stream [`Transport`](crate::protocol::Transport), the socket is registered with
//! the reactor once, edge-triggered, with the transport's *event handler* installed in the
//! registration: every epoll event for it schedules the handler on the ready queue, and phase 5
//! runs it like any callback (asyncio's `_read_ready` / `_sendto_ready`).
//!
//! Reading: the handler calls `recvfrom` into the transport's reusable 64 KiB buffer and hands
//! each datagram to `datagram_received` as a borrowed slice with its sender's address (no
//! allocation for the data). A datagram socket gives one datagram per call, and a short one says
//! nothing about the queue behind it, so the handler reads until `EAGAIN`, which clears the
//! readable bit. After 32 datagrams in one event it reschedules itself with `call_soon` instead,
//! so a flood cannot starve the rest of the loop (the edge for datagrams already queued will not
//! come again, so the handler must come back by itself). A datagram longer than the buffer is
//! truncated to it, as `recvfrom` does; 64 KiB holds any UDP datagram over IPv4 or IPv6 without
//! jumbograms.
//!
//! Writing: [`DatagramTransport::sendto`] sends at once (`sendto`, or `send` on a connected
//! socket, with `MSG_NOSIGNAL`) when nothing is queued. On `EAGAIN` the datagram is copied into
//! the transport's queue, and the handler sends the queue in order on the next writable edge. The
//! queue is bounded (256 KiB by default, see [`DatagramTransport::set_write_queue_limit`]): a
//! datagram that does not fit is dropped and reported to `error_received` as a
//! [`DatagramDropped`] error, exactly as if the network had lost it. asyncio's queue is
//! unbounded; a sender faster than the kernel would grow it without limit. (One kernel caveat:
//! an *unconnected* Unix datagram socket that gets `EAGAIN` because the receiver's queue is full
//! is not woken when that queue drains, only when its own sent datagrams are consumed; a
//! connected one is.)
//!
//! Errors: a datagram socket reports problems one datagram at a time, and none of them ends the
//! endpoint. An ICMP "port unreachable" answering a datagram on a connected UDP socket, for
//! example, makes the next `recvfrom` or `send` fail with `ECONNREFUSED`: it goes to
//! `error_received` and the transport keeps working. A send that fails that way did not send
//! its own datagram (the kernel only reported the earlier one's fate), so it is retried once.
//! Only an error that says the socket itself is unusable (`EBADF`, `ENOTSOCK`) closes the
//! transport, with `connection_lost(Some(error))`.
//!
//! `connection_made` and `connection_lost` are scheduled with `call_soon`, as in asyncio, and so
//! are the `error_received` calls caused by `sendto`: `sendto` never calls back into the
//! protocol, so a protocol may call it from any of its callbacks. Errors found by the handler
//! are delivered directly, like `datagram_received`.
//!
//! The reactor's registration holds the handler, and the handler holds the transport: an open
//! endpoint stays alive with no other reference. Closing breaks the cycle; so does closing the
//! loop under an open endpoint, which drops the handler, whose destructor closes the socket and
//! drops the protocol. That handler, the open/closing/closed state and the close itself are the
//! lifecycle this endpoint shares with the stream transport (`io/lifecycle.rs`).

use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::error::Error;
use std::fmt;
use std::future::IntoFuture;
use std::io;
use std::net::SocketAddr;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use std::panic::Location;
use std::path::PathBuf;
use std::rc::Rc;

use evloop_syscalls as sys;

use crate::event_loop::error::{LoopError, LoopErrorKind};
use crate::event_loop::handle::{HandleKind, OnceCallback};
use crate::event_loop::reactor::ready;
use crate::event_loop::{LoopHandle, LoopInner, Ready};
use crate::io::lifecycle::{self, Endpoint, Lifecycle};
use crate::io::net::{Domain, SockAddr, SockType, UnixAddr, domain_of};

/// The default bound of a datagram transport's write queue, in bytes (see
/// [`DatagramTransport::set_write_queue_limit`]).
pub const DEFAULT_DATAGRAM_QUEUE_LIMIT: usize = 256 * 1024;
/// What a queued datagram costs against the limit beyond its bytes (so that a flood of empty
/// datagrams is bounded too).
const QUEUE_OVERHEAD: usize = 64;
/// The receive buffer: the largest datagram delivered whole.
const READ_BUFFER: usize = 64 * 1024;
/// Datagrams read per event before the handler yields the loop to other work.
const READS_PER_EVENT: usize = 32;

/// A datagram protocol (asyncio's `DatagramProtocol`): the callbacks a [`DatagramTransport`]
/// calls.
pub trait DatagramProtocol: 'static {
    /// The endpoint is ready; keep the transport to send with.
    fn connection_made(&mut self, transport: DatagramTransport) {
        let _ = transport;
    }

    /// A datagram arrived from `addr`. `data` is only valid during the call; a datagram longer
    /// than the transport's 64 KiB receive buffer arrives truncated to it.
    fn datagram_received(&mut self, data: &[u8], addr: SockAddr);

    /// A send or receive failed (an ICMP error such as `ECONNREFUSED` for an earlier datagram,
    /// `EMSGSIZE`, a datagram dropped because the write queue was full: [`DatagramDropped`]).
    /// The transport stays open.
    fn error_received(&mut self, error: io::Error) {
        let _ = error;
    }

    /// The endpoint is closed: `None` after `close()` or `abort()`, the error if the socket
    /// failed. The last call.
    fn connection_lost(&mut self, error: Option<io::Error>) {
        let _ = error;
    }
}

/// Socket options a [`CreateDatagramEndpoint`] sets before `bind`.
#[derive(Clone, Copy, Debug, Default)]
struct Options {
    reuse_port: bool,
    allow_broadcast: bool,
}

/// The error `error_received` gets when a datagram was dropped because the transport's write
/// queue was full (the payload of an `io::Error` of kind `Other`; find it with
/// `error.get_ref().and_then(|e| e.downcast_ref::<DatagramDropped>())`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DatagramDropped {
    fd: i32,
    size: usize,
    addr: Option<SockAddr>,
    queued: usize,
    queued_bytes: usize,
    limit: usize,
}

impl DatagramDropped {
    /// The dropped datagram's size in bytes.
    pub fn size(&self) -> usize {
        self.size
    }

    /// Where it was going (`None`: the connected peer).
    pub fn addr(&self) -> Option<&SockAddr> {
        self.addr.as_ref()
    }

    /// Datagrams in the queue when it was dropped.
    pub fn queued(&self) -> usize {
        self.queued
    }
}

impl fmt::Display for DatagramDropped {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "sendto(fd {}", self.fd)?;
        if let Some(a) = &self.addr {
            write!(f, ", {a}")?;
        }
        write!(
            f,
            "): write queue full ({} datagrams, {} bytes queued, limit {} bytes); datagram of {} bytes dropped",
            self.queued, self.queued_bytes, self.limit, self.size
        )
    }
}

impl Error for DatagramDropped {}

struct Queued {
    data: Box<[u8]>,
    addr: Option<SockAddr>,
}

struct WriteQueue {
    items: VecDeque<Queued>,
    /// Data bytes queued (`get_write_buffer_size`).
    bytes: usize,
    /// What the queue holds against `limit`: bytes plus `QUEUE_OVERHEAD` per datagram.
    charged: usize,
    limit: usize,
}

impl WriteQueue {
    fn pop(&mut self) {
        if let Some(q) = self.items.pop_front() {
            self.bytes -= q.data.len();
            self.charged -= q.data.len() + QUEUE_OVERHEAD;
        }
    }

    fn clear(&mut self) {
        self.items = VecDeque::new();
        self.bytes = 0;
        self.charged = 0;
    }
}

/// A datagram endpoint (asyncio's `DatagramTransport`); cheap to clone.
#[derive(Clone)]
pub struct DatagramTransport {
    inner: Rc<Inner>,
}

struct Inner {
    /// The loop, the registration, the fd, the protocol and the open/closing/closed state.
    life: Lifecycle<dyn DatagramProtocol>,
    /// The fd number, kept for messages after the socket is closed.
    fd_num: i32,
    queue: RefCell<WriteQueue>,
    read_buf: RefCell<Vec<u8>>,
    /// Datagrams passed to `sendto` after the transport closed (dropped, as asyncio does).
    sends_after_close: Cell<u64>,
    /// Datagrams dropped because the queue was full.
    dropped: Cell<u64>,
    local: Option<SockAddr>,
    peer: Option<SockAddr>,
    /// A Unix pathname this endpoint bound: removed when it closes.
    unlink: Option<PathBuf>,
}

impl Endpoint for Inner {
    type Protocol = dyn DatagramProtocol;
    const HANDLER_NAME: &'static str = "datagram transport I/O";

    #[inline]
    fn lifecycle(&self) -> &Lifecycle<dyn DatagramProtocol> {
        &self.life
    }

    fn on_ready(this: &Rc<Self>) {
        DatagramTransport { inner: this.clone() }.on_ready();
    }

    fn connection_lost(protocol: &mut dyn DatagramProtocol, error: Option<io::Error>) {
        protocol.connection_lost(error);
    }

    fn has_queued_output(&self) -> bool {
        !self.queue.borrow().items.is_empty()
    }

    fn discard_output(&self) {
        if let Ok(mut q) = self.queue.try_borrow_mut() {
            q.clear();
        }
    }

    /// Removes the file of a pathname the endpoint bound.
    fn fd_closed(&self) {
        if let Some(p) = &self.unlink {
            let _ = std::fs::remove_file(p);
        }
    }
}

/// Errors that say the socket itself is unusable: the transport closes. Every other error is
/// about one datagram and goes to `error_received`.
fn is_fatal(e: &io::Error) -> bool {
    matches!(e.raw_os_error(), Some(sys::errno::EBADF) | Some(sys::errno::ENOTSOCK))
}

/// Errors the kernel left pending on the socket for an earlier datagram (ICMP errors): a send
/// failing with one of these did not send its own datagram.
fn is_pending_error(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::ConnectionRefused
            | io::ErrorKind::HostUnreachable
            | io::ErrorKind::NetworkUnreachable
            | io::ErrorKind::ConnectionReset
    )
}

fn send_raw(fd: BorrowedFd<'_>, data: &[u8], addr: Option<&SockAddr>) -> io::Result<usize> {
    match addr {
        Some(a) => sys::send_to(fd, data, a),
        None => sys::send(fd, data),
    }
}

/// Sends one datagram. A pending error for an earlier datagram is pushed to `reported` and the
/// send retried once; `Err` is this datagram's own outcome (`WouldBlock`: queue it).
fn send_datagram(
    fd: BorrowedFd<'_>,
    data: &[u8],
    addr: Option<&SockAddr>,
    reported: &mut Vec<io::Error>,
) -> io::Result<()> {
    match send_raw(fd, data, addr) {
        Ok(_) => Ok(()),
        Err(e) if is_pending_error(&e) => {
            reported.push(e);
            send_raw(fd, data, addr).map(drop)
        }
        Err(e) => Err(e),
    }
}

impl DatagramTransport {
    /// Wraps a bound and/or connected datagram socket and registers it; `connection_made` is
    /// scheduled.
    fn start(
        lp: &Rc<LoopInner>,
        fd: OwnedFd,
        protocol: Box<dyn DatagramProtocol>,
        site: &'static Location<'static>,
        unlink: Option<PathBuf>,
    ) -> io::Result<DatagramTransport> {
        let io = match lp.register_io(fd.as_raw_fd()) {
            Ok(io) => io,
            Err(e) => {
                drop(fd);
                if let Some(p) = &unlink {
                    let _ = std::fs::remove_file(p);
                }
                return Err(e);
            }
        };
        let local = sys::local_addr(fd.as_fd()).ok();
        let peer = sys::peer_addr(fd.as_fd()).ok();
        let inner = Rc::new(Inner {
            fd_num: fd.as_raw_fd(),
            life: Lifecycle::new(lp, io, fd, protocol),
            queue: RefCell::new(WriteQueue {
                items: VecDeque::new(),
                bytes: 0,
                charged: 0,
                limit: DEFAULT_DATAGRAM_QUEUE_LIMIT,
            }),
            read_buf: RefCell::new(Vec::new()),
            sends_after_close: Cell::new(0),
            dropped: Cell::new(0),
            local,
            peer,
            unlink,
        });
        let made = DatagramTransport { inner: inner.clone() };
        lifecycle::start(&inner, site, move || {
            made.with_protocol(|p| p.connection_made(made.clone()));
        });
        Ok(DatagramTransport { inner })
    }

    /// Runs `f` on the protocol; skipped once the protocol is gone (after `connection_lost`).
    fn with_protocol(&self, f: impl FnOnce(&mut dyn DatagramProtocol)) {
        self.inner.life.with_protocol(f);
    }

    /// Runs `f` on the protocol in the next iteration.
    fn schedule_protocol(&self, f: impl FnOnce(&mut dyn DatagramProtocol) + 'static) {
        let me = self.clone();
        let cb = OnceCallback::new_rc(HandleKind::CallSoon, Location::caller(), move || me.with_protocol(f));
        self.inner.life.lp().push_ready(Ready::Callback(cb));
    }

    /// Delivers an error to `error_received` in the next iteration.
    fn schedule_error(&self, e: io::Error) {
        self.schedule_protocol(|p| p.error_received(e));
    }

    /// Delivers an error now if the protocol is free, else in the next iteration.
    fn report_error(&self, e: io::Error) {
        if let Err(f) = self.inner.life.try_with_protocol(|p| p.error_received(e)) {
            self.schedule_protocol(f);
        }
    }

    /// `op(fd 7, 127.0.0.1:53): <error>`, keeping the error's kind.
    fn context(&self, op: &str, addr: Option<&SockAddr>, e: io::Error) -> io::Error {
        let fd = self.inner.fd_num;
        let context = match (addr, &self.inner.peer) {
            (Some(a), _) => format!("{op}(fd {fd}, {a})"),
            (None, Some(p)) => format!("{op}(fd {fd}, connected to {p})"),
            (None, None) => format!("{op}(fd {fd})"),
        };
        crate::io::error::with_context(context, e)
    }

    /// The event handler: send what is queued, read what is there.
    fn on_ready(&self) {
        let t = &self.inner;
        if t.life.is_closed() {
            return;
        }
        let bits = t.life.io().readiness();
        if bits & ready::WRITE_ANY != 0 && !t.queue.borrow().items.is_empty() {
            self.flush();
        }
        if bits & ready::READ_ANY != 0 && t.life.is_open() {
            self.read_ready();
        }
    }

    fn read_ready(&self) {
        let t = &self.inner;
        for _ in 0..READS_PER_EVENT {
            if !t.life.is_open() {
                return;
            }
            let result = {
                let fd = t.life.fd();
                let Some(fd) = fd.as_ref() else { return };
                let mut buf = t.read_buf.borrow_mut();
                if buf.len() < READ_BUFFER {
                    buf.resize(READ_BUFFER, 0);
                }
                sys::recv_from(fd.as_fd(), &mut buf)
            };
            match result {
                Ok((n, addr)) => {
                    // Borrowed immutably during the callback; the protocol cannot reach it.
                    let buf = t.read_buf.borrow();
                    self.with_protocol(|p| p.datagram_received(&buf[..n], addr));
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    // Empty, and any error pending was taken by an earlier call: both come
                    // back as a new edge.
                    t.life.io().clear(ready::READABLE | ready::ERROR);
                    return;
                }
                Err(e) if is_fatal(&e) => {
                    let e = self.context("recvfrom", None, e);
                    lifecycle::finish_close(t, Some(e));
                    return;
                }
                Err(e) => {
                    // recvfrom returned the socket's pending error (and cleared it); datagrams
                    // queued behind it are read next.
                    t.life.io().clear(ready::ERROR);
                    let e = self.context("recvfrom", None, e);
                    self.report_error(e);
                }
            }
        }
        // Budget spent with datagrams perhaps still queued: continue after other work.
        let me = self.clone();
        let cb = OnceCallback::new_rc(HandleKind::CallSoon, Location::caller(), move || me.on_ready());
        t.life.lp().push_ready(Ready::Callback(cb));
    }

    /// Sends the queue in order until it is empty or the kernel says `EAGAIN`.
    fn flush(&self) {
        let t = &self.inner;
        let mut errors = Vec::new();
        let mut pending = Vec::new();
        loop {
            if t.life.is_closed() {
                break;
            }
            let (result, addr) = {
                let q = t.queue.borrow();
                let Some(item) = q.items.front() else { break };
                let fd = t.life.fd();
                let Some(fd) = fd.as_ref() else { break };
                let result = send_datagram(fd.as_fd(), &item.data, item.addr.as_ref(), &mut pending);
                for e in pending.drain(..) {
                    errors.push(self.context("sendto", item.addr.as_ref(), e));
                }
                (result, item.addr.clone())
            };
            match result {
                Ok(()) => t.queue.borrow_mut().pop(),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    t.life.io().clear(ready::WRITABLE);
                    break;
                }
                Err(e) if is_fatal(&e) => {
                    lifecycle::finish_close(t, Some(self.context("sendto", addr.as_ref(), e)));
                    break;
                }
                Err(e) => {
                    // This datagram's own failure (EMSGSIZE, EACCES, ...): it is dropped.
                    t.queue.borrow_mut().pop();
                    errors.push(self.context("sendto", addr.as_ref(), e));
                }
            }
        }
        for e in errors {
            self.report_error(e);
        }
        if t.queue.borrow().items.is_empty() {
            lifecycle::drained(t);
        }
    }

    /// Sends one datagram to `addr`, or to the connected peer when `addr` is `None` (asyncio's
    /// `sendto`).
    ///
    /// The datagram is sent at once when nothing is queued (`MSG_NOSIGNAL`); if the kernel
    /// cannot take it now it is queued and sent on the next writable edge, or dropped and
    /// reported as a [`DatagramDropped`] error when the queue is full. A failure of the send
    /// (`EMSGSIZE`, an ICMP error for an earlier datagram, ...) is reported to `error_received`
    /// in the next iteration, never here: `sendto` does not call the protocol. After `close()`
    /// or `abort()` the datagram is silently dropped (as asyncio does; debug mode warns once).
    /// Empty datagrams are sent: they are valid datagrams.
    ///
    /// Errors (nothing sent): `InvalidInput` when `addr` is `None` and the transport is not
    /// connected, or when it is connected and `addr` is another address than the peer's.
    pub fn sendto(&self, data: &[u8], addr: Option<&SockAddr>) -> io::Result<()> {
        let t = &self.inner;
        let target = match (addr, &t.peer) {
            (None, Some(_)) => None,
            (Some(a), Some(p)) if a == p => None,
            (Some(a), None) => Some(a),
            (None, None) => {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidInput,
                    format!(
                        "sendto(fd {}): no address given and the transport is not connected",
                        t.fd_num
                    ),
                ));
            }
            (Some(a), Some(p)) => {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidInput,
                    format!(
                        "sendto(fd {}, {a}): the transport is connected to {p}; pass None or that address",
                        t.fd_num
                    ),
                ));
            }
        };
        if !t.life.is_open() {
            let n = t.sends_after_close.get() + 1;
            t.sends_after_close.set(n);
            if n == 1 && t.life.lp().debug() {
                eprintln!(
                    "evloop: warning: sendto() on a closing datagram transport (fd {}, {} bytes dropped)",
                    t.fd_num,
                    data.len()
                );
            }
            return Ok(());
        }
        if t.queue.borrow().items.is_empty() {
            let mut errors = Vec::new();
            let sent = {
                let fd = t.life.fd();
                let Some(fd) = fd.as_ref() else { return Ok(()) };
                send_datagram(fd.as_fd(), data, target, &mut errors)
            };
            for e in errors {
                self.schedule_error(self.context("sendto", target, e));
            }
            match sent {
                Ok(()) => return Ok(()),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => t.life.io().clear(ready::WRITABLE),
                Err(e) => {
                    let fatal = is_fatal(&e);
                    let e = self.context("sendto", target, e);
                    if fatal {
                        lifecycle::finish_close(t, Some(e));
                    } else {
                        self.schedule_error(e);
                    }
                    return Ok(());
                }
            }
        }
        self.enqueue(data, target);
        Ok(())
    }

    fn enqueue(&self, data: &[u8], addr: Option<&SockAddr>) {
        let t = &self.inner;
        let mut q = t.queue.borrow_mut();
        let charge = data.len() + QUEUE_OVERHEAD;
        if q.charged + charge > q.limit {
            let dropped = DatagramDropped {
                fd: t.fd_num,
                size: data.len(),
                addr: addr.cloned(),
                queued: q.items.len(),
                queued_bytes: q.bytes,
                limit: q.limit,
            };
            drop(q);
            t.dropped.set(t.dropped.get() + 1);
            self.schedule_error(io::Error::other(dropped));
            return;
        }
        q.items.push_back(Queued {
            data: data.into(),
            addr: addr.cloned(),
        });
        q.bytes += data.len();
        q.charged += charge;
    }

    /// Closes after the queued datagrams are sent; `connection_lost(None)` follows. Idempotent.
    pub fn close(&self) {
        lifecycle::close(&self.inner);
    }

    /// Closes at once, dropping queued datagrams; `connection_lost(None)` follows.
    pub fn abort(&self) {
        lifecycle::finish_close(&self.inner, None);
    }

    /// Whether `close()` or `abort()` was called (or the socket failed).
    pub fn is_closing(&self) -> bool {
        !self.inner.life.is_open()
    }

    /// Bytes of datagrams queued and not yet accepted by the kernel.
    pub fn write_buffer_size(&self) -> usize {
        self.inner.queue.borrow().bytes
    }

    /// Bounds the write queue: a datagram that would take it over `bytes` is dropped (and
    /// reported). Each queued datagram counts its size plus 64 bytes, so empty datagrams are
    /// bounded too. `0` never queues: a datagram the kernel cannot take at once is dropped.
    /// Datagrams already queued stay.
    pub fn set_write_queue_limit(&self, bytes: usize) {
        self.inner.queue.borrow_mut().limit = bytes;
    }

    /// The write queue's bound in bytes (default [`DEFAULT_DATAGRAM_QUEUE_LIMIT`]).
    pub fn write_queue_limit(&self) -> usize {
        self.inner.queue.borrow().limit
    }

    /// Datagrams dropped so far because the write queue was full.
    pub fn dropped_datagrams(&self) -> u64 {
        self.inner.dropped.get()
    }

    /// The local address (asyncio's `get_extra_info('sockname')`).
    pub fn local_addr(&self) -> Option<&SockAddr> {
        self.inner.local.as_ref()
    }

    /// The connected peer's address, for an endpoint created with a remote address
    /// (`get_extra_info('peername')`).
    pub fn peer_addr(&self) -> Option<&SockAddr> {
        self.inner.peer.as_ref()
    }

    /// The socket's fd while the transport is open.
    pub fn fd(&self) -> Option<i32> {
        self.inner.life.raw_fd()
    }
}

impl fmt::Debug for DatagramTransport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let t = &self.inner;
        write!(f, "<DatagramTransport fd={} {}", t.fd_num, t.life.state().name())?;
        if let Some(a) = &t.local {
            write!(f, " local={a}")?;
        }
        if let Some(p) = &t.peer {
            write!(f, " peer={p}")?;
        }
        let q = t.queue.borrow();
        write!(f, " queued={}/{}B>", q.items.len(), q.bytes)
    }
}

// ---------------------------------------------------------------------------------------------
// Creating endpoints.

fn with_addr(op: &str, addr: &SockAddr, e: io::Error) -> io::Error {
    crate::io::error::with_context(format!("create_datagram_endpoint: {op}({addr})"), e)
}

/// Binds and/or connects a fresh datagram socket.
fn open_socket(
    domain: Domain,
    local: Option<&SockAddr>,
    remote: Option<&SockAddr>,
    opts: Options,
) -> io::Result<OwnedFd> {
    let fd = sys::socket(domain, SockType::Datagram)?;
    if opts.reuse_port {
        sys::set_reuseport(fd.as_fd(), true).map_err(|e| {
            io::Error::new(
                e.kind(),
                format!("create_datagram_endpoint: SO_REUSEPORT(fd {}): {e}", fd.as_raw_fd()),
            )
        })?;
    }
    if opts.allow_broadcast {
        sys::set_broadcast(fd.as_fd(), true).map_err(|e| {
            io::Error::new(
                e.kind(),
                format!("create_datagram_endpoint: SO_BROADCAST(fd {}): {e}", fd.as_raw_fd()),
            )
        })?;
    }
    if let Some(l) = local {
        sys::bind(fd.as_fd(), l).map_err(|e| with_addr("bind", l, e))?;
    }
    if let Some(r) = remote {
        if let Err(e) = sys::connect(fd.as_fd(), r) {
            if let Some(SockAddr::Unix(UnixAddr::Pathname(p))) = local {
                // The bind above created the socket file: do not leave it behind.
                drop(fd);
                let _ = std::fs::remove_file(p);
            }
            return Err(with_addr("connect", r, e));
        }
    }
    Ok(fd)
}

impl LoopHandle {
    /// Creates a UDP endpoint running `protocol` (asyncio's `create_datagram_endpoint`): returns
    /// the [`CreateDatagramEndpoint`] builder, whose methods set socket options; awaiting it binds
    /// to `local` if given (port 0 picks a free port) and connects to `remote` if given (then
    /// `sendto(data, None)` sends there and only its datagrams are received). The address family
    /// is that of the addresses; at least one is required.
    ///
    /// `connection_made` runs in the next iteration. Errors: neither address given, or the two
    /// of different families (`InvalidInput`); the loop is closed; `socket`, `bind` or
    /// `connect` failed (the message names the call and the address).
    ///
    /// ```
    /// use std::{cell::RefCell, rc::Rc};
    /// use evloop::net::SockAddr;
    /// use evloop::protocol::{DatagramProtocol, DatagramTransport};
    ///
    /// struct Inbox(Rc<RefCell<Vec<Vec<u8>>>>);
    /// impl DatagramProtocol for Inbox {
    ///     fn datagram_received(&mut self, data: &[u8], _from: SockAddr) {
    ///         self.0.borrow_mut().push(data.to_vec());
    ///     }
    /// }
    ///
    /// evloop::run(async {
    ///     let lp = evloop::event_loop::get_running_loop()?;
    ///     let inbox = Rc::new(RefCell::new(Vec::new()));
    ///     // transport, protocol = await loop.create_datagram_endpoint(..., local_addr=('127.0.0.1', 0))
    ///     let server = lp.create_datagram_endpoint(Inbox(inbox.clone()), Some("127.0.0.1:0".parse()?), None).await?;
    ///     let to = server.local_addr().and_then(|a| a.as_inet());
    ///     let client = lp.create_datagram_endpoint(Inbox(Rc::default()), None, to).await?;
    ///     client.sendto(b"ping", None)?; // connected: to the server
    ///     while inbox.borrow().is_empty() {
    ///         evloop::time::sleep(std::time::Duration::from_millis(1)).await;
    ///     }
    ///     assert_eq!(inbox.borrow()[0], b"ping");
    ///     Ok::<(), Box<dyn std::error::Error>>(())
    /// })??;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[track_caller]
    pub fn create_datagram_endpoint<P: DatagramProtocol>(
        &self,
        protocol: P,
        local: Option<SocketAddr>,
        remote: Option<SocketAddr>,
    ) -> CreateDatagramEndpoint<P> {
        CreateDatagramEndpoint {
            lp: self.clone(),
            protocol,
            local,
            remote,
            options: Options::default(),
            site: Location::caller(),
        }
    }

    /// Creates a Unix datagram endpoint running `protocol`: binds to `local` if given, connects
    /// to `remote` if given. Both may be omitted: the endpoint can then only send, to explicit
    /// addresses (receivers cannot answer an unnamed socket). A pathname `local` creates the
    /// socket file; the transport removes it when it closes.
    ///
    /// Errors: the loop is closed; `socket`, `bind` or `connect` failed (the message names the
    /// call and the address; `connect` to a name nobody bound is `ECONNREFUSED`).
    #[track_caller]
    pub fn create_unix_datagram_endpoint<P: DatagramProtocol>(
        &self,
        protocol: P,
        local: Option<&UnixAddr>,
        remote: Option<&UnixAddr>,
    ) -> io::Result<DatagramTransport> {
        let site = Location::caller();
        if self.is_closed() {
            return Err(LoopError::new(LoopErrorKind::Closed, "create_unix_datagram_endpoint").into());
        }
        let local = local.cloned().map(SockAddr::Unix);
        let remote = remote.cloned().map(SockAddr::Unix);
        let fd = open_socket(Domain::Unix, local.as_ref(), remote.as_ref(), Options::default())?;
        let unlink = match &local {
            Some(SockAddr::Unix(UnixAddr::Pathname(p))) => Some(p.clone()),
            _ => None,
        };
        DatagramTransport::start(&self.inner, fd, Box::new(protocol), site, unlink)
    }
}

/// The builder [`LoopHandle::create_datagram_endpoint`] returns: set socket options, then await
/// it for the [`DatagramTransport`] (or call [`open`](CreateDatagramEndpoint::open) where there is
/// no task to await in).
///
/// ```
/// use evloop::net::SockAddr;
/// use evloop::protocol::DatagramProtocol;
///
/// struct Quiet;
/// impl DatagramProtocol for Quiet {
///     fn datagram_received(&mut self, _data: &[u8], _from: SockAddr) {}
/// }
///
/// evloop::run(async {
///     let lp = evloop::event_loop::get_running_loop()?;
///     let endpoint = lp.create_datagram_endpoint(Quiet, Some("127.0.0.1:0".parse()?), None);
///     let t = endpoint.reuse_port(true).allow_broadcast(true).await?; // SO_REUSEPORT, SO_BROADCAST
///     assert!(t.local_addr().is_some());
///     Ok::<(), Box<dyn std::error::Error>>(())
/// })??;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[must_use = "builders do nothing until they are built, run or awaited"]
pub struct CreateDatagramEndpoint<P> {
    lp: LoopHandle,
    protocol: P,
    local: Option<SocketAddr>,
    remote: Option<SocketAddr>,
    options: Options,
    /// Where `create_datagram_endpoint` was called: the site of `connection_made`.
    site: &'static Location<'static>,
}

impl<P> fmt::Debug for CreateDatagramEndpoint<P> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CreateDatagramEndpoint")
            .field("local", &self.local)
            .field("remote", &self.remote)
            .field("options", &self.options)
            .finish_non_exhaustive()
    }
}

impl<P: DatagramProtocol> CreateDatagramEndpoint<P> {
    /// `SO_REUSEPORT` before `bind`: several sockets may bind the same address and port, and
    /// the kernel spreads incoming datagrams over them (asyncio's `reuse_port=True`).
    ///
    /// ```
    /// # use evloop::{net::SockAddr, protocol::DatagramProtocol};
    /// # struct Quiet;
    /// # impl DatagramProtocol for Quiet { fn datagram_received(&mut self, _: &[u8], _: SockAddr) {} }
    /// evloop::run(async {
    ///     let lp = evloop::event_loop::get_running_loop()?;
    ///     let a = lp.create_datagram_endpoint(Quiet, Some("127.0.0.1:0".parse()?), None).reuse_port(true).await?;
    ///     let port = a.local_addr().and_then(|a| a.as_inet());
    ///     let b = lp.create_datagram_endpoint(Quiet, port, None).reuse_port(true).await?; // the same port
    ///     assert_eq!(b.local_addr().and_then(|a| a.as_inet()), port);
    ///     Ok::<(), Box<dyn std::error::Error>>(())
    /// })??;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn reuse_port(mut self, on: bool) -> Self {
        self.options.reuse_port = on;
        self
    }

    /// `SO_BROADCAST`: allows sending to broadcast addresses (asyncio's `allow_broadcast=True`).
    ///
    /// ```
    /// # use evloop::{net::SockAddr, protocol::DatagramProtocol};
    /// # struct Quiet;
    /// # impl DatagramProtocol for Quiet { fn datagram_received(&mut self, _: &[u8], _: SockAddr) {} }
    /// evloop::run(async {
    ///     let lp = evloop::event_loop::get_running_loop()?;
    ///     let t = lp.create_datagram_endpoint(Quiet, Some("127.0.0.1:0".parse()?), None).allow_broadcast(true).await?;
    ///     t.sendto(b"to all", Some(&SockAddr::Inet("127.255.255.255:9".parse()?)))?;
    ///     Ok::<(), Box<dyn std::error::Error>>(())
    /// })??;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn allow_broadcast(mut self, on: bool) -> Self {
        self.options.allow_broadcast = on;
        self
    }

    /// Creates the endpoint now, without a task to await in (the loop need not be running); the
    /// same as awaiting the builder.
    ///
    /// ```
    /// # use evloop::{net::SockAddr, protocol::DatagramProtocol};
    /// # struct Quiet;
    /// # impl DatagramProtocol for Quiet { fn datagram_received(&mut self, _: &[u8], _: SockAddr) {} }
    /// let lp = evloop::event_loop::EventLoop::new()?;
    /// let t = lp.handle().create_datagram_endpoint(Quiet, Some("127.0.0.1:0".parse()?), None).open()?;
    /// assert!(t.local_addr().is_some()); // bound at once; connection_made runs when the loop does
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn open(self) -> io::Result<DatagramTransport> {
        let CreateDatagramEndpoint {
            lp,
            protocol,
            local,
            remote,
            options,
            site,
        } = self;
        let domain = match (&local, &remote) {
            (Some(l), Some(r)) if domain_of(l) != domain_of(r) => {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidInput,
                    format!(
                        "create_datagram_endpoint: local address {l} and remote address {r} are of different families"
                    ),
                ));
            }
            (Some(a), _) | (None, Some(a)) => domain_of(a),
            (None, None) => {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidInput,
                    "create_datagram_endpoint: give a local address, a remote address or both (the socket's family comes from them)",
                ));
            }
        };
        if lp.is_closed() {
            return Err(LoopError::new(LoopErrorKind::Closed, "create_datagram_endpoint").into());
        }
        let local = local.map(SockAddr::Inet);
        let remote = remote.map(SockAddr::Inet);
        let fd = open_socket(domain, local.as_ref(), remote.as_ref(), options)?;
        DatagramTransport::start(&lp.inner, fd, Box::new(protocol), site, None)
    }
}

impl<P: DatagramProtocol> IntoFuture for CreateDatagramEndpoint<P> {
    type Output = io::Result<DatagramTransport>;
    /// The endpoint is created when the builder is awaited (`into_future`): nothing in it waits.
    type IntoFuture = std::future::Ready<io::Result<DatagramTransport>>;

    fn into_future(self) -> Self::IntoFuture {
        std::future::ready(self.open())
    }
}
