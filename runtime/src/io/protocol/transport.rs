//! The stream transport: [`Transport`] and the [`Protocol`] trait (asyncio's callback API, the
//! fastest path: no task per connection).
//!
//! A [`Transport`] owns a connected socket and a [`Protocol`] (the user's callbacks). The socket
//! is registered with the reactor once, edge-triggered, with the transport's *event handler*
//! installed in the registration: every epoll event for it schedules the handler on the ready
//! queue, and phase 5 runs it like any callback (asyncio's `_read_ready` / `_write_ready`).
//!
//! Reading: the handler `recv`s into the transport's reusable 64 KiB buffer and hands the bytes
//! to `data_received` as a borrowed slice (no allocation); a short read means the kernel queue is
//! empty, so a request costs one `recv`. Writing is *write-behind*: `Transport::write` appends to
//! the transport's buffer and, once per iteration, asks the loop to flush it at the end of phase
//! 5 (`LoopInner::defer_flush`), so every write made to one connection during one iteration
//! leaves in one `send`: a reply to 16 pipelined requests is one syscall, and a reply written as
//! header + body is one segment. A request/response exchange still costs exactly one `send` per
//! round trip, in the same iteration. Only a write larger than the high-water mark, into an empty
//! buffer, is sent at once (copying it first would buy nothing). What the kernel does not take
//! stays queued and goes out on the next writable edge. A queue above the high-water mark calls
//! `pause_writing`, below the low-water mark `resume_writing` (back-pressure, asyncio's flow
//! control). Bytes always leave in the order they were written.
//!
//! `connection_made` and `connection_lost` are scheduled with `call_soon`, as in asyncio;
//! `pause_writing` / `resume_writing` run inline when the protocol is free, else are scheduled
//! (a protocol writing from inside `data_received` is busy).
//!
//! The reactor's registration holds the transport's handler, and the handler holds the
//! transport: an open connection stays alive with no other reference, exactly like asyncio's
//! selector holding its callbacks. Closing breaks the cycle. The handler, the open/closing/closed
//! state and the close itself (`close`, `abort`, a fatal error, the loop closing under an open
//! transport) are the lifecycle this transport shares with the datagram transport
//! (`io/lifecycle.rs`, where its rules are written down).

use std::cell::{Cell, RefCell};
use std::fmt;
use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use std::panic::Location;
use std::rc::Rc;

use evloop_syscalls as sys;

use crate::event_loop::handle::{HandleKind, OnceCallback};
use crate::event_loop::reactor::{IoState, ready};
use crate::event_loop::slots::LoopKey;
use crate::event_loop::{DeferredFlush, LoopInner, Ready};
use crate::io::lifecycle::{self, Endpoint, Lifecycle};
use crate::io::net::{Shutdown, SockAddr};

/// The default write buffer limits (asyncio's: 64 KiB high, a quarter of that low).
pub const DEFAULT_HIGH_WATER: usize = 64 * 1024;
const READ_BUFFER: usize = 64 * 1024;
/// The receive buffer every transport of a loop reads into (one per loop, `READ_BUFFER` bytes
/// once used), in a slot of the loop; each transport keeps an `Rc` of it, so that a read finds
/// it without a slot lookup.
static READ_BUF: LoopKey<Rc<RefCell<Vec<u8>>>> = LoopKey::new();
/// Reads per event before the handler yields the loop to other work (it reschedules itself).
const READS_PER_EVENT: usize = 16;
/// Writes dropped by a closing transport before it warns (asyncio's
/// `LOG_THRESHOLD_FOR_CONNLOST_WRITES`).
const WRITES_AFTER_CLOSE_WARNING: usize = 5;

/// A stream protocol (asyncio's `Protocol`): the callbacks a transport calls.
pub trait Protocol: 'static {
    /// The connection is up; keep the transport to write with.
    fn connection_made(&mut self, transport: Transport) {
        let _ = transport;
    }

    /// Bytes arrived. `data` is only valid during the call.
    fn data_received(&mut self, data: &[u8]);

    /// The peer half-closed its side. Return `true` to keep the transport open (and keep
    /// writing); `false` closes it.
    fn eof_received(&mut self) -> bool {
        false
    }

    /// The connection is gone: `None` for a normal close, the error otherwise. The last call.
    fn connection_lost(&mut self, error: Option<io::Error>) {
        let _ = error;
    }

    /// The transport's write buffer went above the high-water mark: stop producing.
    fn pause_writing(&mut self) {}

    /// It went back below the low-water mark.
    fn resume_writing(&mut self) {}
}

struct WriteState {
    buf: Vec<u8>,
    pos: usize,
    high: usize,
    low: usize,
    /// The protocol was told to pause and not yet to resume.
    protocol_paused: bool,
    eof: WriteEof,
    /// A send left data behind (partial or `EAGAIN`): the next writable edge flushes; until
    /// then, writes only append.
    blocked: bool,
    /// The loop will flush this transport at the end of the current phase 5.
    flush_queued: bool,
}

impl WriteState {
    fn pending(&self) -> usize {
        self.buf.len() - self.pos
    }
}

/// The write side's half-close (`write_eof`).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum WriteEof {
    /// Not asked for: writes are accepted.
    No,
    /// Asked for: writes are refused, FIN goes once the queued data is out.
    Pending,
    /// FIN sent (`shutdown(SHUT_WR)`).
    Sent,
}

/// What a transport's fd is: a socket, or one end of a pipe (asyncio's pipe transports; see
/// `LoopHandle::connect_read_pipe`). A pipe is read with `read` and written with
/// `write_nosigpipe` (pipes have no `MSG_NOSIGNAL`), has no addresses, and `write_eof` on its
/// write end closes it once the buffer is flushed.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum TransportKind {
    Socket,
    /// The read end of a pipe, FIFO or tty: `write` is refused, end of file closes it.
    ReadPipe,
    /// The write end: nothing is read; the reader going away closes it.
    WritePipe,
}

/// A connected stream transport (asyncio's `Transport`); cheap to clone.
#[derive(Clone)]
pub struct Transport {
    inner: Rc<TransportInner>,
}

struct TransportInner {
    /// The loop, the registration, the fd, the protocol and the open/closing/closed state.
    life: Lifecycle<dyn Protocol>,
    kind: TransportKind,
    write: RefCell<WriteState>,
    reading_paused: Cell<bool>,
    /// The peer's EOF was delivered (`eof_received` kept the transport open).
    eof: Cell<bool>,
    /// Writes attempted after the transport closed (asyncio warns about these).
    writes_after_close: Cell<usize>,
    peer: Option<SockAddr>,
    local: Option<SockAddr>,
    /// Told when the transport closes (servers count their connections).
    on_close: RefCell<Option<Box<dyn FnOnce()>>>,
    /// The loop's receive buffer (`READ_BUF`), shared by all its transports.
    read_buf: Rc<RefCell<Vec<u8>>>,
}

impl TransportInner {
    /// One write syscall: `send` (with `MSG_NOSIGNAL`) on a socket, `write_nosigpipe` on a pipe.
    fn send(&self, fd: BorrowedFd<'_>, data: &[u8]) -> io::Result<usize> {
        match self.kind {
            TransportKind::Socket => sys::send(fd, data),
            TransportKind::ReadPipe | TransportKind::WritePipe => sys::write_nosigpipe(fd, data),
        }
    }
}

impl Endpoint for TransportInner {
    type Protocol = dyn Protocol;
    const HANDLER_NAME: &'static str = "transport I/O";

    #[inline]
    fn lifecycle(&self) -> &Lifecycle<dyn Protocol> {
        &self.life
    }

    #[inline]
    fn on_ready(this: &Rc<Self>) {
        Transport { inner: this.clone() }.on_ready();
    }

    fn connection_lost(protocol: &mut dyn Protocol, error: Option<io::Error>) {
        protocol.connection_lost(error);
    }

    fn has_queued_output(&self) -> bool {
        self.write.borrow().pending() > 0
    }

    fn discard_output(&self) {
        if let Ok(mut w) = self.write.try_borrow_mut() {
            w.buf = Vec::new();
            w.pos = 0;
        }
    }

    /// Runs the close callback (a server's: it counts the connection off, and holds the server
    /// and with it the user's protocol factory, which must not outlive the transport).
    fn released(&self) {
        let on_close = match self.on_close.try_borrow_mut() {
            Ok(mut f) => f.take(),
            Err(_) => None,
        };
        if let Some(f) = on_close {
            f();
        }
    }
}

impl DeferredFlush for TransportInner {
    /// The end of phase 5: send what this iteration wrote, unless the socket is waiting for a
    /// writable edge (that edge flushes) or the transport closed meanwhile.
    fn flush(self: Rc<Self>) {
        let go = {
            let mut w = self.write.borrow_mut();
            w.flush_queued = false;
            !w.blocked && w.pending() > 0
        };
        if go && !self.life.is_closed() {
            Transport { inner: self }.flush();
        }
    }
}

impl Transport {
    /// Wraps a socket `accept4` just returned (already non-blocking, its peer known): registers
    /// it and schedules `connection_made`.
    pub(super) fn start_accepted(
        lp: &Rc<LoopInner>,
        fd: OwnedFd,
        peer: SockAddr,
        protocol: Box<dyn Protocol>,
        site: &'static Location<'static>,
        on_close: Option<Box<dyn FnOnce()>>,
    ) -> io::Result<Transport> {
        let io = lp.register_io(fd.as_raw_fd())?;
        Self::start_kind(lp, fd, io, Some(peer), protocol, site, on_close, TransportKind::Socket)
    }

    /// Like [`start_accepted`](Self::start_accepted), for a socket whose registration already
    /// exists (a connected `Socket`); its peer is asked of the kernel.
    pub(super) fn start_registered(
        lp: &Rc<LoopInner>,
        fd: OwnedFd,
        io: Rc<IoState>,
        protocol: Box<dyn Protocol>,
        site: &'static Location<'static>,
        on_close: Option<Box<dyn FnOnce()>>,
    ) -> io::Result<Transport> {
        let peer = sys::peer_addr(fd.as_fd()).ok();
        Self::start_kind(lp, fd, io, peer, protocol, site, on_close, TransportKind::Socket)
    }

    /// A transport over one end of a pipe whose registration already exists (the `pipe` module).
    pub(crate) fn start_pipe(
        lp: &Rc<LoopInner>,
        fd: OwnedFd,
        io: Rc<IoState>,
        protocol: Box<dyn Protocol>,
        site: &'static Location<'static>,
        kind: TransportKind,
    ) -> io::Result<Transport> {
        Self::start_kind(lp, fd, io, None, protocol, site, None, kind)
    }

    /// `peer` is what the caller knows of the other end (a socket's peer; `None` for pipes).
    #[allow(clippy::too_many_arguments)]
    fn start_kind(
        lp: &Rc<LoopInner>,
        fd: OwnedFd,
        io: Rc<IoState>,
        peer: Option<SockAddr>,
        protocol: Box<dyn Protocol>,
        site: &'static Location<'static>,
        on_close: Option<Box<dyn FnOnce()>>,
        kind: TransportKind,
    ) -> io::Result<Transport> {
        let local = match kind {
            TransportKind::Socket => sys::local_addr(fd.as_fd()).ok(),
            TransportKind::ReadPipe | TransportKind::WritePipe => None,
        };
        let inner = Rc::new(TransportInner {
            life: Lifecycle::new(lp, io, fd, protocol),
            kind,
            write: RefCell::new(WriteState {
                buf: Vec::new(),
                pos: 0,
                high: DEFAULT_HIGH_WATER,
                low: DEFAULT_HIGH_WATER / 4,
                protocol_paused: false,
                eof: WriteEof::No,
                blocked: false,
                flush_queued: false,
            }),
            reading_paused: Cell::new(false),
            eof: Cell::new(false),
            writes_after_close: Cell::new(0),
            peer,
            local,
            on_close: RefCell::new(on_close),
            read_buf: lp.slot_or_init(&READ_BUF, Rc::default).clone(),
        });
        let made = Transport { inner: inner.clone() };
        lifecycle::start(&inner, site, move || {
            made.with_protocol(|p| p.connection_made(made.clone()));
        });
        Ok(Transport { inner })
    }

    /// Runs `f` on the protocol; skipped once the protocol is gone (after `connection_lost`).
    #[inline]
    fn with_protocol(&self, f: impl FnOnce(&mut dyn Protocol)) {
        self.inner.life.with_protocol(f);
    }

    /// Runs `f` on the protocol now if it is free, else schedules it (re-entrant call from
    /// inside one of its own callbacks).
    fn call_protocol(&self, f: impl FnOnce(&mut dyn Protocol) + 'static) {
        if let Err(f) = self.inner.life.try_with_protocol(f) {
            let me = self.clone();
            let cb = OnceCallback::new_rc(HandleKind::CallSoon, Location::caller(), move || me.with_protocol(f));
            self.inner.life.lp().push_ready(Ready::Callback(cb));
        }
    }

    /// The event handler: read what is there, flush what is queued.
    fn on_ready(&self) {
        let t = &self.inner;
        if t.life.is_closed() {
            return;
        }
        let bits = t.life.io().readiness();
        if bits & ready::WRITE_ANY != 0 && t.write.borrow().pending() > 0 {
            self.flush();
        }
        if t.kind == TransportKind::WritePipe {
            // Nothing to read on a write end: EPOLLERR there means the reader is gone (asyncio
            // watches the write end for readability for the same reason). Queued data would have
            // failed with EPIPE in the flush above.
            if bits & (ready::ERROR | ready::READ_CLOSED) != 0 && !t.life.is_closed() {
                self.abort();
            }
            return;
        }
        if bits & ready::READ_ANY != 0 && !t.reading_paused.get() && !t.eof.get() && t.life.is_open() {
            self.read_ready();
        }
    }

    fn read_ready(&self) {
        let t = &self.inner;
        for _ in 0..READS_PER_EVENT {
            if !t.life.is_open() || t.reading_paused.get() || t.eof.get() {
                return;
            }
            // One receive buffer per loop, not per connection (64 KiB per idle connection would
            // dominate a server's memory); a transport only reads from phase 5, never from
            // inside another transport's callback, so the buffer is free here. The fallback
            // covers the impossible case without a panic.
            let mut shared = t.read_buf.try_borrow_mut();
            let mut own = Vec::new();
            let buf: &mut Vec<u8> = match shared.as_mut() {
                Ok(b) => b,
                Err(_) => &mut own,
            };
            if buf.len() < READ_BUFFER {
                buf.resize(READ_BUFFER, 0);
            }
            let result = {
                let fd = t.life.fd();
                let Some(fd) = fd.as_ref() else { return };
                match t.kind {
                    TransportKind::Socket => sys::recv(fd.as_fd(), buf),
                    TransportKind::ReadPipe | TransportKind::WritePipe => sys::read(fd.as_fd(), buf),
                }
            };
            match result {
                Ok(0) => {
                    t.life.io().clear(ready::READABLE);
                    self.eof();
                    return;
                }
                Ok(n) => {
                    self.with_protocol(|p| p.data_received(&buf[..n]));
                    // (Only for sockets: a short read from a tty is one line, not a drained queue,
                    // so a pipe's readiness is cleared by EAGAIN alone.)
                    if n < READ_BUFFER && t.kind == TransportKind::Socket {
                        // Short read: the receive queue is empty until the next edge. But a FIN
                        // (or an error) that came with these bytes raises no further edge: read
                        // on to see it.
                        t.life.io().clear(ready::READABLE);
                        if t.life.io().readiness() & ready::READ_ANY == 0 {
                            return;
                        }
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    t.life.io().clear(ready::READABLE);
                    return;
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => {
                    self.fatal(e);
                    return;
                }
            }
        }
        // Budget spent with data still there: let other work run, then continue (an edge will
        // not come again for data already queued).
        self.reschedule();
    }

    fn reschedule(&self) {
        let me = self.clone();
        let cb = OnceCallback::new_rc(HandleKind::CallSoon, Location::caller(), move || me.on_ready());
        self.inner.life.lp().push_ready(Ready::Callback(cb));
    }

    fn eof(&self) {
        if self.inner.kind != TransportKind::Socket {
            // A pipe has no half-close: asyncio calls eof_received, then connection_lost.
            self.with_protocol(|p| {
                p.eof_received();
            });
            self.close();
            return;
        }
        let keep_open = {
            let mut keep = false;
            self.with_protocol(|p| keep = p.eof_received());
            keep
        };
        if keep_open {
            // Half-closed: no more reading (there is nothing left to read), keep writing.
            self.inner.eof.set(true);
        } else {
            self.close();
        }
    }

    /// Writes `data`. It is buffered and leaves, together with everything else written to this
    /// transport during the current loop iteration, in one send at the end of the iteration's
    /// callbacks (write-behind; see the module documentation); what the kernel does not take is
    /// sent when the socket is writable again. After `close()`/`abort()` the data is dropped
    /// (asyncio does the same and warns; the debug mode warns here too).
    pub fn write(&self, data: &[u8]) {
        let t = &self.inner;
        if data.is_empty() {
            return;
        }
        let mut w = t.write.borrow_mut();
        if w.eof != WriteEof::No || !t.life.is_open() || t.kind == TransportKind::ReadPipe {
            drop(w);
            return self.write_refused(data.len());
        }
        if w.pending() == 0 && !w.blocked && data.len() > w.high {
            drop(w);
            return self.write_large(data);
        }
        w.buf.extend_from_slice(data);
        let flush = !(w.blocked || w.flush_queued);
        w.flush_queued |= flush;
        let pause = !w.protocol_paused && w.pending() > w.high;
        w.protocol_paused |= pause;
        drop(w);
        if flush {
            t.life.lp().defer_flush(t.clone());
        }
        if pause {
            self.call_protocol(|p| p.pause_writing());
        }
    }

    /// A write to a closing or closed transport (or a pipe's read end): dropped, and counted.
    #[cold]
    fn write_refused(&self, len: usize) {
        let t = &self.inner;
        let n = t.writes_after_close.get() + 1;
        t.writes_after_close.set(n);
        // asyncio warns from its fifth write to a lost connection on
        // (LOG_THRESHOLD_FOR_CONNLOST_WRITES); once is enough here. Debug mode warns at once.
        if (n == 1 && t.life.lp().debug()) || n == WRITES_AFTER_CLOSE_WARNING {
            eprintln!(
                "evloop: warning: write() on a closing transport ({n} write(s) dropped, the last of {len} bytes)"
            );
        }
    }

    /// A write larger than the high-water mark into an empty buffer: offered to the kernel at
    /// once (copying it first would buy nothing), and what the kernel leaves is queued.
    #[cold]
    fn write_large(&self, data: &[u8]) {
        let t = &self.inner;
        let sent = {
            let fd = t.life.fd();
            match fd.as_ref() {
                Some(fd) => t.send(fd.as_fd(), data),
                None => return,
            }
        };
        let rest = match sent {
            Ok(n) => &data[n..],
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => data,
            Err(e) => return self.fatal(e),
        };
        if rest.is_empty() {
            return;
        }
        t.life.io().clear(ready::WRITABLE);
        let pause = {
            let mut w = t.write.borrow_mut();
            w.blocked = true;
            w.buf.clear();
            w.pos = 0;
            w.buf.extend_from_slice(rest);
            let pause = !w.protocol_paused && w.pending() > w.high;
            w.protocol_paused |= pause;
            pause
        };
        if pause {
            self.call_protocol(|p| p.pause_writing());
        }
    }

    /// Writes each buffer in turn (asyncio's `writelines`).
    pub fn writelines<'a>(&self, data: impl IntoIterator<Item = &'a [u8]>) {
        for d in data {
            self.write(d);
        }
    }

    fn flush(&self) {
        let t = &self.inner;
        let result = {
            let mut w = t.write.borrow_mut();
            let fd = t.life.fd();
            let Some(fd) = fd.as_ref() else { return };
            let result = t.send(fd.as_fd(), &w.buf[w.pos..]);
            // The common case: everything went, nothing else to do (no resume, EOF or close
            // pending), all under one borrow.
            if let Ok(n) = result {
                if n == w.pending() && !w.protocol_paused && w.eof == WriteEof::No && t.life.is_open() {
                    w.buf.clear();
                    w.pos = 0;
                    w.blocked = false;
                    return;
                }
            }
            result
        };
        match result {
            Ok(n) => {
                let (drained, resume, eof) = {
                    let mut w = t.write.borrow_mut();
                    w.pos += n;
                    w.blocked = w.pending() > 0;
                    if w.pending() > 0 {
                        t.life.io().clear(ready::WRITABLE);
                        // Keep the buffer from growing without bound behind a moving start.
                        if w.pos > w.buf.len() / 2 {
                            let pos = w.pos;
                            w.buf.drain(..pos);
                            w.pos = 0;
                        }
                    } else {
                        w.buf.clear();
                        w.pos = 0;
                    }
                    let resume = w.protocol_paused && w.pending() <= w.low;
                    if resume {
                        w.protocol_paused = false;
                    }
                    let eof = w.pending() == 0 && w.eof == WriteEof::Pending;
                    (w.pending() == 0, resume, eof)
                };
                if resume {
                    self.call_protocol(|p| p.resume_writing());
                }
                if eof {
                    self.shutdown_write();
                }
                if drained {
                    lifecycle::drained(t);
                }
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                t.write.borrow_mut().blocked = true;
                t.life.io().clear(ready::WRITABLE);
            }
            Err(e) => self.fatal(e),
        }
    }

    fn shutdown_write(&self) {
        let t = &self.inner;
        t.write.borrow_mut().eof = WriteEof::Sent;
        if let Some(fd) = t.life.fd().as_ref() {
            let _ = sys::shutdown(fd.as_fd(), Shutdown::Write);
        }
    }

    /// Half-closes: sends FIN once the queued data is out (asyncio's `write_eof`). Further
    /// writes are dropped. On the write end of a pipe (which has no half-close) it closes the
    /// pipe once the queued data is out, as `close()` does; on a read end it does nothing.
    pub fn write_eof(&self) {
        let t = &self.inner;
        if !t.life.is_open() {
            return;
        }
        match t.kind {
            TransportKind::Socket => {}
            TransportKind::WritePipe => return self.close(),
            TransportKind::ReadPipe => return,
        }
        let now = {
            let mut w = t.write.borrow_mut();
            if w.eof != WriteEof::No {
                return;
            }
            w.eof = WriteEof::Pending;
            w.pending() == 0
        };
        if now {
            self.shutdown_write();
        }
    }

    /// Whether `write_eof` is supported (sockets and pipe write ends; not pipe read ends).
    pub fn can_write_eof(&self) -> bool {
        self.inner.kind != TransportKind::ReadPipe
    }

    /// Closes after the queued data is sent; `connection_lost(None)` follows. Idempotent.
    pub fn close(&self) {
        lifecycle::close(&self.inner);
    }

    /// Closes at once, dropping queued data; `connection_lost(None)` follows.
    pub fn abort(&self) {
        lifecycle::finish_close(&self.inner, None);
    }

    fn fatal(&self, e: io::Error) {
        lifecycle::finish_close(&self.inner, Some(e));
    }

    /// Whether `close()` or `abort()` was called (or the connection failed).
    pub fn is_closing(&self) -> bool {
        !self.inner.life.is_open()
    }

    /// Stops calling `data_received` until [`Transport::resume_reading`].
    pub fn pause_reading(&self) {
        self.inner.reading_paused.set(true);
    }

    /// Resumes reading; data that arrived meanwhile is delivered in the next iteration.
    pub fn resume_reading(&self) {
        let t = &self.inner;
        if !t.reading_paused.replace(false) || t.life.is_closed() || t.eof.get() {
            return;
        }
        if t.life.io().readiness() & ready::READ_ANY != 0 {
            // The edge for that data is gone; schedule the read ourselves.
            self.reschedule();
        }
    }

    /// Whether reading is paused.
    pub fn is_reading(&self) -> bool {
        !self.inner.reading_paused.get() && !self.inner.eof.get() && !self.is_closing()
    }

    /// Sets the write buffer's high- and low-water marks (`None`: 64 KiB, and a quarter of high).
    pub fn set_write_buffer_limits(&self, high: Option<usize>, low: Option<usize>) {
        let high = high.unwrap_or(DEFAULT_HIGH_WATER);
        let low = low.unwrap_or(high / 4).min(high);
        let (pause, resume) = {
            let mut w = self.inner.write.borrow_mut();
            w.high = high;
            w.low = low;
            let pause = !w.protocol_paused && w.pending() > high;
            let resume = w.protocol_paused && w.pending() <= low;
            if pause || resume {
                w.protocol_paused = pause;
            }
            (pause, resume)
        };
        if pause {
            self.call_protocol(|p| p.pause_writing());
        } else if resume {
            self.call_protocol(|p| p.resume_writing());
        }
    }

    /// The high- and low-water marks.
    pub fn write_buffer_limits(&self) -> (usize, usize) {
        let w = self.inner.write.borrow();
        (w.high, w.low)
    }

    /// Bytes queued and not yet accepted by the kernel.
    pub fn write_buffer_size(&self) -> usize {
        self.inner.write.borrow().pending()
    }

    /// The peer's address (asyncio's `get_extra_info('peername')`); `None` for a pipe.
    pub fn peer_addr(&self) -> Option<&SockAddr> {
        self.inner.peer.as_ref()
    }

    /// The local address (`get_extra_info('sockname')`); `None` for a pipe.
    pub fn local_addr(&self) -> Option<&SockAddr> {
        self.inner.local.as_ref()
    }

    /// The socket's fd while the transport is open.
    pub fn fd(&self) -> Option<i32> {
        self.inner.life.raw_fd()
    }

    /// Whether the protocol was told to pause writing (the buffer went above the high-water
    /// mark) and not yet to resume: the stream writer's `drain` waits while it is.
    pub(crate) fn is_write_paused(&self) -> bool {
        self.inner.write.borrow().protocol_paused
    }

    /// Whether `write_eof` was called on a socket transport (writes are refused from then on).
    pub(crate) fn eof_requested(&self) -> bool {
        self.inner.write.borrow().eof != WriteEof::No
    }

    /// The id of the loop the transport runs on.
    pub(crate) fn loop_id(&self) -> u64 {
        u64::from(self.inner.life.lp().id)
    }
}

impl fmt::Debug for Transport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "<Transport {}", self.inner.life.state().name())?;
        if let Some(p) = &self.inner.peer {
            write!(f, " peer={p}")?;
        }
        write!(f, " buffered={}>", self.write_buffer_size())
    }
}
