//! Protocols and transports: asyncio's callback API, the fastest path (no task per connection).
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
//! selector holding its callbacks. Closing breaks the cycle.

use std::cell::{Cell, RefCell};
use std::fmt;
use std::io;
use std::net::SocketAddr;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use std::panic::Location;
use std::rc::Rc;
use std::time::Duration;

use evloop_syscalls as sys;

use crate::event_loop::clock::duration_to_ns;
use crate::event_loop::handle::{Callback, HandleKind, HandleMeta, OnceCallback, TimerHandle};
use crate::event_loop::reactor::{IoState, ready};
use crate::event_loop::{
    DeferredFlush, ExceptionContext, ExceptionKind, LoopHandle, LoopInner, Ready, check_accept_retry_delay,
};
use crate::io::net::{Shutdown, SockAddr, SockType, UnixAddr};
use crate::task::promise::Promise;

/// The default write buffer limits (asyncio's: 64 KiB high, a quarter of that low).
pub const DEFAULT_HIGH_WATER: usize = 64 * 1024;
const READ_BUFFER: usize = 64 * 1024;
/// Reads per event before the handler yields the loop to other work (it reschedules itself).
const READS_PER_EVENT: usize = 16;
/// Accepts per event, likewise.
const ACCEPTS_PER_EVENT: usize = 128;
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
    eof_pending: bool,
    eof_written: bool,
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
    lp: Rc<LoopInner>,
    io: Rc<IoState>,
    kind: TransportKind,
    fd: RefCell<Option<OwnedFd>>,
    protocol: RefCell<Option<Box<dyn Protocol>>>,
    write: RefCell<WriteState>,
    reading_paused: Cell<bool>,
    /// The peer's EOF was delivered (`eof_received` kept the transport open).
    eof: Cell<bool>,
    /// `close()` was called: no more reads, close once the write buffer is flushed.
    closing: Cell<bool>,
    /// The socket is closed and `connection_lost` scheduled.
    closed: Cell<bool>,
    /// Writes attempted after the transport closed (asyncio warns about these).
    writes_after_close: Cell<usize>,
    peer: Option<SockAddr>,
    local: Option<SockAddr>,
    /// Told when the transport closes (servers count their connections).
    on_close: RefCell<Option<Box<dyn FnOnce()>>>,
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

/// Drops the protocol when the `connection_lost` callback has run or has been dropped unrun (a
/// loop closing with it still queued): either way the protocol <-> transport cycle is broken.
struct ReleaseProtocol(Transport);

impl Drop for ReleaseProtocol {
    fn drop(&mut self) {
        self.0.inner.release();
    }
}

impl TransportInner {
    /// Lets go of everything the transport holds for its owners once it is closed: the protocol
    /// (the user's object, which usually holds the transport) and the close callback (a
    /// server's, which holds the server and with it the user's protocol factory). The callback
    /// is run if it has not been: it only counts the connection off its server. Called when
    /// `connection_lost` has run, or when the loop closes under the transport; without it a
    /// transport kept by user state that the factory captured would keep itself alive.
    fn release(&self) {
        if let Ok(mut p) = self.protocol.try_borrow_mut() {
            let protocol = p.take();
            drop(p);
            drop(protocol);
        }
        let on_close = match self.on_close.try_borrow_mut() {
            Ok(mut f) => f.take(),
            Err(_) => None,
        };
        if let Some(f) = on_close {
            f();
        }
    }
}

/// The registration's handler: schedules the transport's read/write work on each event.
struct TransportHandler {
    meta: HandleMeta,
    transport: Rc<TransportInner>,
}

impl Drop for TransportHandler {
    /// The registration lets go of the handler when the transport closes (nothing left to do)
    /// or when the loop closes under an open transport: then the socket is closed here and the
    /// protocol dropped, which breaks the protocol <-> transport cycle so nothing leaks.
    fn drop(&mut self) {
        let t = &self.transport;
        if !t.closed.replace(true) {
            t.closing.set(true);
            if let Some(fd) = t.fd.borrow_mut().take() {
                let _ = sys::close(fd);
            }
            if let Ok(mut w) = t.write.try_borrow_mut() {
                w.buf = Vec::new();
                w.pos = 0;
            }
            t.release();
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
        if go && !self.closed.get() {
            Transport { inner: self }.flush();
        }
    }
}

impl Callback for TransportHandler {
    fn run(&self) {
        Transport {
            inner: self.transport.clone(),
        }
        .on_ready();
    }
    fn meta(&self) -> &HandleMeta {
        &self.meta
    }
    fn type_name(&self) -> &'static str {
        "transport I/O"
    }
}

impl Transport {
    /// Wraps a socket `accept4` just returned (already non-blocking, its peer known): registers
    /// it and schedules `connection_made`.
    fn start_accepted(
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

    /// Like `start`, for a socket whose registration already exists (a connected `Socket`).
    fn start_registered(
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
            lp: lp.clone(),
            io,
            kind,
            fd: RefCell::new(Some(fd)),
            protocol: RefCell::new(Some(protocol)),
            write: RefCell::new(WriteState {
                buf: Vec::new(),
                pos: 0,
                high: DEFAULT_HIGH_WATER,
                low: DEFAULT_HIGH_WATER / 4,
                protocol_paused: false,
                eof_pending: false,
                eof_written: false,
                blocked: false,
                flush_queued: false,
            }),
            reading_paused: Cell::new(false),
            eof: Cell::new(false),
            closing: Cell::new(false),
            closed: Cell::new(false),
            writes_after_close: Cell::new(0),
            peer,
            local,
            on_close: RefCell::new(on_close),
        });
        let handler: Rc<dyn Callback> = Rc::new(TransportHandler {
            meta: HandleMeta::new(HandleKind::Io, site),
            transport: inner.clone(),
        });
        inner.io.set_handler(Some(handler));
        let t = Transport { inner };
        let made = t.clone();
        lp.push_ready(Ready::Callback(OnceCallback::new_rc(
            HandleKind::CallSoon,
            site,
            move || {
                made.with_protocol(|p| p.connection_made(made.clone()));
            },
        )));
        Ok(t)
    }

    /// Runs `f` on the protocol; skipped once the protocol is gone (after `connection_lost`).
    fn with_protocol(&self, f: impl FnOnce(&mut dyn Protocol)) {
        if let Ok(mut p) = self.inner.protocol.try_borrow_mut() {
            if let Some(p) = p.as_mut() {
                f(&mut **p);
            }
        }
    }

    /// Runs `f` on the protocol now if it is free, else schedules it (re-entrant call from
    /// inside one of its own callbacks).
    fn call_protocol(&self, f: impl FnOnce(&mut dyn Protocol) + 'static) {
        match self.inner.protocol.try_borrow_mut() {
            Ok(mut p) => {
                if let Some(p) = p.as_mut() {
                    f(&mut **p);
                }
            }
            Err(_) => {
                let me = self.clone();
                let cb = OnceCallback::new_rc(HandleKind::CallSoon, Location::caller(), move || me.with_protocol(f));
                self.inner.lp.push_ready(Ready::Callback(cb));
            }
        }
    }

    /// The event handler: read what is there, flush what is queued.
    fn on_ready(&self) {
        let t = &self.inner;
        if t.closed.get() {
            return;
        }
        let bits = t.io.readiness();
        if bits & ready::WRITE_ANY != 0 && t.write.borrow().pending() > 0 {
            self.flush();
        }
        if t.kind == TransportKind::WritePipe {
            // Nothing to read on a write end: EPOLLERR there means the reader is gone (asyncio
            // watches the write end for readability for the same reason). Queued data would have
            // failed with EPIPE in the flush above.
            if bits & (ready::ERROR | ready::READ_CLOSED) != 0 && !t.closed.get() {
                self.finish_close(None);
            }
            return;
        }
        if bits & ready::READ_ANY != 0 && !t.reading_paused.get() && !t.eof.get() && !t.closing.get() {
            self.read_ready();
        }
    }

    fn read_ready(&self) {
        let t = &self.inner;
        for _ in 0..READS_PER_EVENT {
            if t.closed.get() || t.closing.get() || t.reading_paused.get() || t.eof.get() {
                return;
            }
            // One receive buffer per loop, not per connection (64 KiB per idle connection would
            // dominate a server's memory); a transport only reads from phase 5, never from
            // inside another transport's callback, so the buffer is free here. The fallback
            // covers the impossible case without a panic.
            let mut shared = t.lp.read_buf.try_borrow_mut();
            let mut own = Vec::new();
            let buf: &mut Vec<u8> = match shared.as_mut() {
                Ok(b) => b,
                Err(_) => &mut own,
            };
            if buf.len() < READ_BUFFER {
                buf.resize(READ_BUFFER, 0);
            }
            let result = {
                let fd = t.fd.borrow();
                let Some(fd) = fd.as_ref() else { return };
                match t.kind {
                    TransportKind::Socket => sys::recv(fd.as_fd(), buf),
                    TransportKind::ReadPipe | TransportKind::WritePipe => sys::read(fd.as_fd(), buf),
                }
            };
            match result {
                Ok(0) => {
                    t.io.clear(ready::READABLE);
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
                        t.io.clear(ready::READABLE);
                        if t.io.readiness() & ready::READ_ANY == 0 {
                            return;
                        }
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    t.io.clear(ready::READABLE);
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
        self.inner.lp.push_ready(Ready::Callback(cb));
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
        if w.eof_pending || t.closed.get() || t.closing.get() || t.kind == TransportKind::ReadPipe {
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
            t.lp.defer_flush(t.clone());
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
        if (n == 1 && t.lp.debug()) || n == WRITES_AFTER_CLOSE_WARNING {
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
            let fd = t.fd.borrow();
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
        t.io.clear(ready::WRITABLE);
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
            let fd = t.fd.borrow();
            let Some(fd) = fd.as_ref() else { return };
            let result = t.send(fd.as_fd(), &w.buf[w.pos..]);
            // The common case: everything went, nothing else to do (no resume, EOF or close
            // pending), all under one borrow.
            if let Ok(n) = result {
                if n == w.pending() && !w.protocol_paused && !w.eof_pending && !t.closing.get() {
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
                        t.io.clear(ready::WRITABLE);
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
                    let eof = w.pending() == 0 && w.eof_pending && !w.eof_written;
                    (w.pending() == 0, resume, eof)
                };
                if resume {
                    self.call_protocol(|p| p.resume_writing());
                }
                if eof {
                    self.shutdown_write();
                }
                if drained && t.closing.get() {
                    self.finish_close(None);
                }
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                t.write.borrow_mut().blocked = true;
                t.io.clear(ready::WRITABLE);
            }
            Err(e) => self.fatal(e),
        }
    }

    fn shutdown_write(&self) {
        let t = &self.inner;
        t.write.borrow_mut().eof_written = true;
        if let Some(fd) = t.fd.borrow().as_ref() {
            let _ = sys::shutdown(fd.as_fd(), Shutdown::Write);
        }
    }

    /// Half-closes: sends FIN once the queued data is out (asyncio's `write_eof`). Further
    /// writes are dropped. On the write end of a pipe (which has no half-close) it closes the
    /// pipe once the queued data is out, as `close()` does; on a read end it does nothing.
    pub fn write_eof(&self) {
        let t = &self.inner;
        if t.closed.get() || t.closing.get() {
            return;
        }
        match t.kind {
            TransportKind::Socket => {}
            TransportKind::WritePipe => return self.close(),
            TransportKind::ReadPipe => return,
        }
        let now = {
            let mut w = t.write.borrow_mut();
            if w.eof_pending {
                return;
            }
            w.eof_pending = true;
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
        let t = &self.inner;
        if t.closing.get() || t.closed.get() {
            return;
        }
        t.closing.set(true);
        if t.write.borrow().pending() == 0 {
            self.finish_close(None);
        }
    }

    /// Closes at once, dropping queued data; `connection_lost(None)` follows.
    pub fn abort(&self) {
        self.finish_close(None);
    }

    fn fatal(&self, e: io::Error) {
        self.finish_close(Some(e));
    }

    fn finish_close(&self, error: Option<io::Error>) {
        let t = &self.inner;
        if t.closed.replace(true) {
            return;
        }
        t.closing.set(true);
        t.lp.deregister_io(&t.io);
        if let Some(fd) = t.fd.borrow_mut().take() {
            let _ = sys::close(fd);
        }
        {
            let mut w = t.write.borrow_mut();
            w.buf = Vec::new();
            w.pos = 0;
        }
        let guard = ReleaseProtocol(self.clone());
        let lost = OnceCallback::new_rc(HandleKind::CallSoon, Location::caller(), move || {
            guard.0.with_protocol(|p| p.connection_lost(error));
            let on_close = guard.0.inner.on_close.borrow_mut().take();
            if let Some(f) = on_close {
                f();
            }
            drop(guard);
        });
        if t.lp.is_closed() {
            // No loop to run it: deliver now rather than never.
            lost.run();
        } else {
            t.lp.push_ready(Ready::Callback(lost));
        }
    }

    /// Whether `close()` or `abort()` was called (or the connection failed).
    pub fn is_closing(&self) -> bool {
        self.inner.closing.get() || self.inner.closed.get()
    }

    /// Stops calling `data_received` until [`Transport::resume_reading`].
    pub fn pause_reading(&self) {
        self.inner.reading_paused.set(true);
    }

    /// Resumes reading; data that arrived meanwhile is delivered in the next iteration.
    pub fn resume_reading(&self) {
        let t = &self.inner;
        if !t.reading_paused.replace(false) || t.closed.get() || t.eof.get() {
            return;
        }
        if t.io.readiness() & ready::READ_ANY != 0 {
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
    pub fn get_write_buffer_limits(&self) -> (usize, usize) {
        let w = self.inner.write.borrow();
        (w.high, w.low)
    }

    /// Bytes queued and not yet accepted by the kernel.
    pub fn get_write_buffer_size(&self) -> usize {
        self.inner.write.borrow().pending()
    }

    /// The peer's address (asyncio's `get_extra_info('peername')`); `None` for a pipe.
    pub fn peername(&self) -> Option<&SockAddr> {
        self.inner.peer.as_ref()
    }

    /// The local address (`get_extra_info('sockname')`); `None` for a pipe.
    pub fn sockname(&self) -> Option<&SockAddr> {
        self.inner.local.as_ref()
    }

    /// The socket's fd while the transport is open.
    pub fn fd(&self) -> Option<i32> {
        self.inner.fd.borrow().as_ref().map(|f| f.as_raw_fd())
    }

    /// The id of the loop the transport runs on.
    pub(crate) fn loop_id(&self) -> u64 {
        u64::from(self.inner.lp.id)
    }
}

impl fmt::Debug for Transport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = if self.inner.closed.get() {
            "closed"
        } else if self.inner.closing.get() {
            "closing"
        } else {
            "open"
        };
        write!(f, "<Transport {state}")?;
        if let Some(p) = &self.inner.peer {
            write!(f, " peer={p}")?;
        }
        write!(f, " buffered={}>", self.get_write_buffer_size())
    }
}

// ---------------------------------------------------------------------------------------------
// Servers.

/// Listening sockets serving a protocol factory (asyncio's `Server`).
///
/// `A` is the kind of address it listens on: a [`SocketAddr`] for a TCP server
/// ([`LoopHandle::create_server`], [`start_server`](crate::io::stream::start_server)), a
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
            retry_delay: Cell::new(lp.accept_retry_delay),
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
    ///     let server = evloop::start_server(|_reader, _writer| async {}, "127.0.0.1", 0).await?;
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

    /// How long accepting pauses after the process or system ran out of a resource (see
    /// [`Builder::accept_retry_delay`](crate::Builder::accept_retry_delay), where new servers
    /// take it from).
    pub fn accept_retry_delay(&self) -> Duration {
        self.inner.retry_delay.get()
    }

    /// Changes this server's accept retry delay; a pause already under way keeps its timer.
    /// An `InvalidInput` error (and no change) outside 1 ms ..= 1 hour.
    ///
    /// ```
    /// # use std::time::Duration;
    /// let lp = evloop::EventLoop::new()?;
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
    /// # impl evloop::Protocol for P { fn data_received(&mut self, _: &[u8]) {} }
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
    sys::bind(fd.as_fd(), addr).map_err(|e| crate::event_loop::error::with_context(format!("bind({addr})"), e))?;
    sys::listen(fd.as_fd(), backlog)?;
    Ok(fd)
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
