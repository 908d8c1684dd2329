//! The state one connection's protocol, reader and writer share: `Conn` (the reader's buffer
//! and wait state in `ReadState`, the writer's waiters, whether each handle is alive) and
//! `StreamProtocol`, the protocol installed in the transport that feeds it (asyncio's
//! `StreamReaderProtocol`). Bytes go transport -> `data_received` -> `feed_data` -> the
//! reader's buffer, and the parked read's waker is woken; `resume_writing` and
//! `connection_lost` wake the writer's waiters. Whether writing is paused, and whether
//! `write_eof` was called, the writer asks the transport: those states exist once.

use std::cell::{Cell, RefCell};
use std::io;
use std::rc::Rc;
use std::task::{Context, Waker};

use crate::event_loop::error::WrongLoopError;
use crate::event_loop::trace::{Awaiting, note_awaiting};
use crate::io::protocol::{Protocol, Transport};
use crate::io::stream::config::{DEFAULT_LIMIT, StreamConfig};
use crate::io::stream::error::SavedError;
use crate::io::stream::{StreamReader, StreamWriter};

/// The reader's buffer and wait state (asyncio's `StreamReader` internals).
///
/// Invariants: `waiter` is `Some` only while a read that holds `busy` is parked; `paused` is
/// true exactly when this module paused the transport's reading (a half-closed transport also
/// stops reading, but that is not ours to resume).
pub(super) struct ReadState {
    /// Received bytes not yet consumed: `data[start..]`.
    pub(super) data: Vec<u8>,
    pub(super) start: usize,
    pub(super) limit: usize,
    /// The peer sent FIN, or the connection is gone.
    pub(super) eof: bool,
    /// The connection failed with this error.
    pub(super) error: Option<SavedError>,
    /// Bumped by every feed (bytes, end of stream, error): a parked read compares it to see
    /// whether anything happened.
    pub(super) fed: u64,
    /// The parked read's waker.
    pub(super) waiter: Option<Waker>,
    /// A read operation is in progress.
    pub(super) busy: bool,
    /// Reading is paused because the buffer went above twice the limit.
    pub(super) paused: bool,
}

impl ReadState {
    pub(super) fn len(&self) -> usize {
        self.data.len() - self.start
    }

    pub(super) fn bytes(&self) -> &[u8] {
        &self.data[self.start..]
    }

    pub(super) fn push(&mut self, bytes: &[u8]) {
        if self.start > 0 && self.data.len() + bytes.len() > self.data.capacity() {
            // Reuse the consumed prefix instead of growing the allocation.
            self.data.drain(..self.start);
            self.start = 0;
        }
        self.data.extend_from_slice(bytes);
    }

    pub(super) fn consume(&mut self, n: usize) {
        self.start += n;
        if self.start == self.data.len() {
            self.data.clear();
            self.start = 0;
            // A large read (readexactly of many MiB) may have grown the allocation: give it back.
            if self.data.capacity() > self.limit.max(DEFAULT_LIMIT).saturating_mul(4) {
                self.data = Vec::new();
            }
        }
    }

    pub(super) fn take(&mut self, n: usize) -> Vec<u8> {
        let out = self.data[self.start..self.start + n].to_vec();
        self.consume(n);
        out
    }

    pub(super) fn take_all(&mut self) -> Vec<u8> {
        // Small reads are copied out and the buffer keeps its capacity for the next bytes (a
        // request/response stream would otherwise grow a fresh buffer for every message). A
        // large buffer that is mostly full is handed over itself (no copy); a few bytes in a
        // large buffer are copied, so the caller does not keep the large allocation.
        if self.len() <= SMALL_READ {
            let n = self.len();
            return self.take(n);
        }
        if self.start == 0 && self.data.capacity() <= self.data.len().max(4096).saturating_mul(2) {
            std::mem::take(&mut self.data)
        } else {
            let n = self.len();
            self.take(n)
        }
    }

    pub(super) fn wake(&mut self) -> Option<Waker> {
        self.fed = self.fed.wrapping_add(1);
        self.waiter.take()
    }
}

/// Reads up to this size are copied out of the reader's buffer rather than taking it.
const SMALL_READ: usize = 4096;

/// What the protocol, the reader and the writer of one connection share.
pub(super) struct Conn {
    pub(super) transport: RefCell<Option<Transport>>,
    pub(super) read: RefCell<ReadState>,
    pub(super) reader_alive: Cell<bool>,
    pub(super) writer_alive: Cell<bool>,
    /// `connection_lost` ran, with this error if it failed.
    pub(super) lost: Cell<bool>,
    pub(super) lost_error: RefCell<Option<SavedError>>,
    /// Tasks in `drain`, a blocked `AsyncWrite::poll_write` or `wait_closed`: woken by
    /// `resume_writing` and `connection_lost`; each re-checks its own condition.
    pub(super) writer_waiters: RefCell<Vec<Waker>>,
}

impl Conn {
    pub(super) fn new(config: StreamConfig) -> Rc<Conn> {
        Rc::new(Conn {
            transport: RefCell::new(None),
            read: RefCell::new(ReadState {
                data: Vec::new(),
                start: 0,
                limit: config.limit,
                eof: false,
                error: None,
                fed: 0,
                waiter: None,
                busy: false,
                paused: false,
            }),
            reader_alive: Cell::new(true),
            writer_alive: Cell::new(true),
            lost: Cell::new(false),
            lost_error: RefCell::new(None),
            writer_waiters: RefCell::new(Vec::new()),
        })
    }

    pub(super) fn transport(&self) -> Option<Transport> {
        self.transport.borrow().clone()
    }

    /// asyncio's `feed_data`: buffer, wake the reader, pause the transport above 2 x limit.
    pub(super) fn feed_data(&self, data: &[u8]) {
        if !self.reader_alive.get() {
            // Nobody can ever read these bytes.
            return;
        }
        let (waker, pause) = {
            let mut st = self.read.borrow_mut();
            st.push(data);
            let pause = !st.paused && st.len() > st.limit.saturating_mul(2);
            if pause {
                st.paused = true;
            }
            (st.wake(), pause)
        };
        if pause {
            if let Some(t) = self.transport() {
                t.pause_reading();
            }
        }
        if let Some(w) = waker {
            w.wake();
        }
    }

    /// asyncio's `feed_eof` (and `set_exception` when `error` is given).
    pub(super) fn feed_eof(&self, error: Option<SavedError>) {
        let waker = {
            let mut st = self.read.borrow_mut();
            st.eof = true;
            if error.is_some() {
                st.error = error;
            }
            st.wake()
        };
        if let Some(w) = waker {
            w.wake();
        }
    }

    /// asyncio's `_maybe_resume_transport`: called after a read consumed bytes.
    pub(super) fn maybe_resume(&self) {
        let resume = {
            let mut st = self.read.borrow_mut();
            let resume = st.paused && st.len() <= st.limit;
            if resume {
                st.paused = false;
            }
            resume
        };
        if resume {
            if let Some(t) = self.transport() {
                t.resume_reading();
            }
        }
    }

    /// A read must wait: make sure the transport is reading (asyncio's `_wait_for_data`).
    pub(super) fn ensure_reading(&self) {
        let resume = std::mem::replace(&mut self.read.borrow_mut().paused, false);
        if resume {
            if let Some(t) = self.transport() {
                t.resume_reading();
            }
        }
    }

    pub(super) fn wake_writers(&self) {
        let waiters = std::mem::take(&mut *self.writer_waiters.borrow_mut());
        for w in waiters {
            w.wake();
        }
    }

    /// Parks a writing task until `resume_writing` or `connection_lost`; an error instead if
    /// the task belongs to another loop than the connection (see `check_loop`).
    pub(super) fn park_writer(&self, cx: &mut Context<'_>, op: &'static str) -> io::Result<()> {
        self.check_loop(op)?;
        let mut waiters = self.writer_waiters.borrow_mut();
        if !waiters.iter().any(|w| w.will_wake(cx.waker())) {
            waiters.push(cx.waker().clone());
        }
        drop(waiters);
        self.note_fd();
        Ok(())
    }

    /// Only a task of the connection's own loop may wait for it: its transport's events come
    /// from that loop's poll, which cannot run while another loop does.
    pub(super) fn check_loop(&self, op: &'static str) -> io::Result<()> {
        let Some(bound) = self.transport.borrow().as_ref().map(Transport::loop_id) else {
            return Ok(());
        };
        Ok(WrongLoopError::check(bound, op, || "the stream".to_string())?)
    }

    pub(super) fn note_fd(&self) {
        if let Some(fd) = self.transport.borrow().as_ref().and_then(Transport::fd) {
            note_awaiting(Awaiting::Fd(fd));
        }
    }

    /// The error for an operation on a connection that is gone.
    pub(super) fn lost_io(&self, op: &str, kind: io::ErrorKind) -> io::Error {
        match &*self.lost_error.borrow() {
            Some(e) => e.to_io(op),
            None => io::Error::new(kind, format!("{op}: the connection is closed")),
        }
    }

    /// One of the two handles went away: close the connection when neither is left.
    pub(super) fn handle_dropped(&self) {
        if !self.reader_alive.get() && !self.writer_alive.get() {
            if let Some(t) = self.transport() {
                t.close();
            }
        }
    }
}

/// The protocol between the transport and the streams (asyncio's `StreamReaderProtocol`).
pub(super) struct StreamProtocol {
    pub(super) conn: Rc<Conn>,
    /// A server's per-connection hook: starts the handler's task (asyncio's
    /// `client_connected_cb`).
    pub(super) on_connect: Option<Rc<ConnectHook>>,
}

pub(super) type ConnectHook = dyn Fn(StreamReader, StreamWriter);

impl Protocol for StreamProtocol {
    fn connection_made(&mut self, transport: Transport) {
        {
            let mut slot = self.conn.transport.borrow_mut();
            if slot.is_none() {
                *slot = Some(transport.clone());
            }
        }
        if let Some(hook) = self.on_connect.take() {
            let (r, w) = pair(self.conn.clone(), transport);
            hook(r, w);
        }
    }

    fn data_received(&mut self, data: &[u8]) {
        self.conn.feed_data(data);
    }

    fn eof_received(&mut self) -> bool {
        self.conn.feed_eof(None);
        // Keep the transport open for writing (a half-closed connection), as asyncio does,
        // unless nobody can write any more.
        self.conn.writer_alive.get()
    }

    fn connection_lost(&mut self, error: Option<io::Error>) {
        let peer = self.conn.transport().and_then(|t| t.peer_addr().cloned());
        let saved = error.as_ref().map(|e| SavedError::new(e, peer.as_ref()));
        self.conn.lost.set(true);
        *self.conn.lost_error.borrow_mut() = saved.clone();
        self.conn.feed_eof(saved);
        self.conn.wake_writers();
    }

    // `pause_writing` needs nothing here: the writer asks the transport whether writing is
    // paused (`Transport::is_write_paused`), so there is one copy of that state.

    fn resume_writing(&mut self) {
        self.conn.wake_writers();
    }
}

pub(super) fn pair(conn: Rc<Conn>, transport: Transport) -> (StreamReader, StreamWriter) {
    (StreamReader { conn: conn.clone() }, StreamWriter { conn, transport })
}
