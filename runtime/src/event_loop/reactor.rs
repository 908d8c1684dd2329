//! The reactor: one epoll instance, the loop's fd registrations, and the events they produce.
//!
//! Data flow: `add_reader(fd, cb)` stores `cb` in a [`Registration`] in a generation-checked
//! slab and registers the fd with `epoll_ctl`, putting the registration's slab key (index and
//! generation packed into 64 bits) in the event's `data` field. Phase 3 of the loop calls
//! [`Reactor::wait`] (`epoll_pwait2`), then [`Reactor::dispatch`], which looks each event's key
//! up in the slab and hands the callbacks that are interested in it to the loop's ready queue.
//!
//! Keys carry a generation, never the raw fd: epoll tracks open file descriptions, not fd
//! numbers, so an event can arrive for a registration that was removed earlier in the same
//! iteration while its fd number was already reused (epoll(7); libuv's
//! `uv__platform_invalidate_fd` guards the same hazard). Such an event finds a stale key and is
//! dropped. Removal always issues `EPOLL_CTL_DEL` before the caller closes the fd.
//!
//! `add_reader`/`add_writer` keep asyncio's level-triggered semantics: while the fd stays
//! readable, the reader callback runs once per loop iteration.

use std::cell::{Cell, RefCell};
use std::collections::{HashMap, VecDeque};
use std::io;
use std::os::fd::{AsFd, AsRawFd, OwnedFd, RawFd};
use std::rc::Rc;
use std::task::Waker;
use std::time::Duration;

use evloop_syscalls::{self as sys, EpollEvent, EpollFlags};

use crate::event_loop::Ready;
use crate::event_loop::handle::Callback;
use crate::event_loop::slab::{Key, Slab};

/// The `data` value of the loop's own wake-up eventfd; slab keys never take this value because
/// a slot whose generation reaches `u32::MAX` is retired.
pub(crate) const WAKE_TOKEN: u64 = u64::MAX;

/// The event buffer holds one event per registered fd (plus the wake-up eventfd), so every ready
/// fd is reported in the same iteration (asyncio sizes its `select` the same way); past
/// `MAX_EVENTS` ready fds, the rest are reported in the next iteration (epoll rotates its ready
/// list, so none starves).
const MIN_EVENTS: usize = 64;
const MAX_EVENTS: usize = 1 << 16;

/// Marks an epoll `data` value as an edge-triggered registration (a key of `Reactor::io`); keys
/// of both slabs have indexes below 2^31 (no process has 2^31 fds).
const IO_TOKEN_BIT: u64 = 1 << 31;

/// `IoState::crowded` bits of the `polled_*` slots (above every `ready::*` bit).
const POLLED_READER: u8 = 1 << 6;
const POLLED_WRITER: u8 = 1 << 7;

/// Readiness bits of an edge-triggered registration (see [`IoState`]).
pub(crate) mod ready {
    /// Data can be read (or a connection accepted).
    pub(crate) const READABLE: u8 = 1;
    /// Data can be written (or a connect completed).
    pub(crate) const WRITABLE: u8 = 2;
    /// The peer shut its write side (EPOLLRDHUP) or hung up: reads return EOF.
    pub(crate) const READ_CLOSED: u8 = 4;
    /// The connection hung up: writes fail.
    pub(crate) const WRITE_CLOSED: u8 = 8;
    /// EPOLLERR: the next syscall reports the error.
    pub(crate) const ERROR: u8 = 16;
    /// EPOLLPRI: an exceptional condition (TCP urgent data); only registrations made with
    /// `Reactor::register_io_with`'s `priority` ask for it.
    pub(crate) const PRIORITY: u8 = 32;
    /// Everything that lets a reader make progress (a read would not block).
    pub(crate) const READ_ANY: u8 = READABLE | READ_CLOSED | ERROR;
    /// Everything that lets a writer make progress.
    pub(crate) const WRITE_ANY: u8 = WRITABLE | WRITE_CLOSED | ERROR;
}

/// The state of one edge-triggered registration (a socket, a pipe, any `AsyncFd`).
///
/// The fd is registered once, for its whole life, with `EPOLLIN|EPOLLOUT|EPOLLRDHUP|EPOLLET`,
/// so steady-state I/O makes no `epoll_ctl` call. Each event ORs its bits into `readiness`;
/// the I/O layer clears a bit only when a syscall proves the fd is not ready any more (EAGAIN,
/// or a short read of a stream socket, which drained the kernel's queue). A task that finds the
/// fd not ready parks its waker in `reader` or `writer`; the event takes it and wakes it. A
/// callback-driven owner (a transport) installs a `handler`, which the event schedules in the
/// ready queue instead.
///
/// Usually one task waits per direction, and its waker has the slot to itself. When a second
/// task waits on the same direction (two tasks accepting on one shared listener, two receiving
/// on one UDP socket), it is parked in `more_readers`/`more_writers` beside the first rather
/// than replacing it: a replaced waker would never be woken and its task would wait forever.
/// The event wakes them all, as tokio does; those that find nothing to do park again.
///
/// Beside those, each direction has one `polled` slot for tokio's `AsyncFd::poll_read_ready`
/// and `poll_write_ready`, whose contract is the opposite: only the waker of the most recent
/// call is woken (a later call replaces the earlier waker instead of joining it).
///
/// `tick` counts the events (and hand-made `set`s) the registration has seen. A readiness
/// guard remembers the tick it saw, and its `clear_ready` clears only if the tick has not moved
/// since: an edge that arrived while the guard was held (its task awaiting something else) is
/// not thrown away with the readiness the guard observed (tokio's `ScheduledIo` tick).
pub(crate) struct IoState {
    fd: RawFd,
    token: u64,
    readiness: Cell<u8>,
    tick: Cell<u32>,
    reader: Cell<Option<Waker>>,
    writer: Cell<Option<Waker>>,
    more_readers: Cell<Vec<Waker>>,
    more_writers: Cell<Vec<Waker>>,
    polled_reader: Cell<Option<Waker>>,
    polled_writer: Cell<Option<Waker>>,
    /// Which `more_*` list holds a waker (`ready::READABLE`, `ready::WRITABLE` bits) and which
    /// `polled_*` slot does (`POLLED_READER`, `POLLED_WRITER`): the event's path tests this
    /// byte and touches the lists and slots only when one is in use.
    crowded: Cell<u8>,
    handler: RefCell<Option<Rc<dyn Callback>>>,
}

impl IoState {
    /// The registered fd.
    pub(crate) fn fd(&self) -> RawFd {
        self.fd
    }

    /// The current readiness bits (`ready::*`).
    pub(crate) fn readiness(&self) -> u8 {
        self.readiness.get()
    }

    /// Clears readiness bits after a syscall proved them stale.
    pub(crate) fn clear(&self, bits: u8) {
        self.readiness.set(self.readiness.get() & !bits);
    }

    /// Sets readiness bits (an event, or a transport that knows its fd is writable after
    /// connect); either is news a readiness guard taken earlier must not clear.
    #[inline(always)]
    pub(crate) fn set(&self, bits: u8) {
        self.readiness.set(self.readiness.get() | bits);
        self.tick.set(self.tick.get().wrapping_add(1));
    }

    /// The number of `set`s so far (see the type's documentation).
    pub(crate) fn tick(&self) -> u32 {
        self.tick.get()
    }

    /// Clears `bits` if no `set` happened since `tick` was read; returns whether it did.
    pub(crate) fn clear_at(&self, tick: u32, bits: u8) -> bool {
        let current = self.tick.get() == tick;
        if current {
            self.clear(bits);
        }
        current
    }

    /// Parks `waker` in the direction's `polled` slot, replacing the waker of an earlier call
    /// (`read` picks the reading side).
    pub(crate) fn set_polled(&self, read: bool, waker: &Waker) {
        let (slot, bit) = if read {
            (&self.polled_reader, POLLED_READER)
        } else {
            (&self.polled_writer, POLLED_WRITER)
        };
        match slot.take() {
            Some(w) if w.will_wake(waker) => slot.set(Some(w)),
            _ => slot.set(Some(waker.clone())),
        }
        self.crowded.set(self.crowded.get() | bit);
    }

    /// Parks the reading task's waker (beside another task's, if one waits already).
    #[inline]
    pub(crate) fn set_reader(&self, waker: &Waker) {
        self.park(&self.reader, &self.more_readers, ready::READABLE, waker);
    }

    /// Parks the writing task's waker (beside another task's, if one waits already).
    #[inline]
    pub(crate) fn set_writer(&self, waker: &Waker) {
        self.park(&self.writer, &self.more_writers, ready::WRITABLE, waker);
    }

    #[inline(always)]
    fn park(&self, slot: &Cell<Option<Waker>>, more: &Cell<Vec<Waker>>, side: u8, waker: &Waker) {
        match slot.take() {
            None => slot.set(Some(waker.clone())),
            Some(w) if w.will_wake(waker) => slot.set(Some(w)),
            Some(w) => {
                slot.set(Some(w));
                self.park_another(more, side, waker);
            }
        }
    }

    /// A second (third, ...) task waits on the same side: kept once each.
    #[cold]
    #[inline(never)]
    fn park_another(&self, more: &Cell<Vec<Waker>>, side: u8, waker: &Waker) {
        let mut m = more.take();
        if !m.iter().any(|w| w.will_wake(waker)) {
            m.push(waker.clone());
        }
        more.set(m);
        self.crowded.set(self.crowded.get() | side);
    }

    /// Moves the parked readers' wakers into `out`.
    #[inline(always)]
    fn take_readers(&self, out: &mut Vec<Waker>) {
        if let Some(w) = self.reader.take() {
            out.push(w);
            if self.crowded.get() & ready::READABLE != 0 {
                self.take_crowd(&self.more_readers, ready::READABLE, out);
            }
        }
        if self.crowded.get() & POLLED_READER != 0 {
            self.take_crowd(&self.polled_reader, POLLED_READER, out);
        }
    }

    /// Moves the parked writers' wakers into `out`.
    #[inline(always)]
    fn take_writers(&self, out: &mut Vec<Waker>) {
        if let Some(w) = self.writer.take() {
            out.push(w);
            if self.crowded.get() & ready::WRITABLE != 0 {
                self.take_crowd(&self.more_writers, ready::WRITABLE, out);
            }
        }
        if self.crowded.get() & POLLED_WRITER != 0 {
            self.take_crowd(&self.polled_writer, POLLED_WRITER, out);
        }
    }

    /// Moves the wakers of a `more_*` list or a `polled_*` slot into `out` and clears its
    /// `crowded` bit.
    #[cold]
    #[inline(never)]
    fn take_crowd<C: Default + IntoIterator<Item = Waker>>(&self, crowd: &Cell<C>, bit: u8, out: &mut Vec<Waker>) {
        out.extend(crowd.take());
        self.crowded.set(self.crowded.get() & !bit);
    }

    /// Installs (or removes) the callback scheduled on every event.
    pub(crate) fn set_handler(&self, handler: Option<Rc<dyn Callback>>) {
        let old = std::mem::replace(&mut *self.handler.borrow_mut(), handler);
        drop(old);
    }

    /// Takes every parked waker (to wake them when the registration goes away).
    pub(crate) fn take_wakers(&self) -> Vec<Waker> {
        let mut out = Vec::new();
        self.take_readers(&mut out);
        self.take_writers(&mut out);
        out
    }
}

/// One fd's level-triggered callbacks.
pub(crate) struct Registration {
    reader: Option<Rc<dyn Callback>>,
    writer: Option<Rc<dyn Callback>>,
}

impl Registration {
    fn interest(&self) -> EpollFlags {
        let mut f = EpollFlags::empty();
        if self.reader.is_some() {
            f |= EpollFlags::IN;
        }
        if self.writer.is_some() {
            f |= EpollFlags::OUT;
        }
        f
    }
}

/// Which side of an fd a callback watches.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum Side {
    Read,
    Write,
}

impl Side {
    fn op(self) -> &'static str {
        match self {
            Side::Read => "add_reader",
            Side::Write => "add_writer",
        }
    }
}

/// What one call to [`Reactor::dispatch`] found.
#[derive(Default, Debug, Clone, Copy)]
pub(crate) struct Dispatched {
    /// The wake-up eventfd was readable.
    pub(crate) woken: bool,
    /// Events whose registration no longer exists (dropped).
    pub(crate) stale: usize,
}

/// See the module documentation.
pub(crate) struct Reactor {
    epoll: OwnedFd,
    events: Vec<EpollEvent>,
    regs: Slab<Registration>,
    by_fd: HashMap<RawFd, Key>,
    /// Edge-triggered registrations (`AsyncFd`, sockets, transports), keyed like `regs` but
    /// with `IO_TOKEN_BIT` set in their epoll data.
    io: Slab<Rc<IoState>>,
    io_fds: HashMap<RawFd, Key>,
    /// Wakers collected by `dispatch`; the loop wakes them after releasing its borrows.
    wake_buf: Vec<Waker>,
    /// Callbacks of registrations dropped inside the reactor (see `take_graveyard`).
    graveyard: Vec<Rc<dyn Callback>>,
    /// The wake-up eventfd's number, refused by `add_reader`.
    wake_fd: Option<RawFd>,
}

fn with_fd_context(op: &'static str, fd: RawFd, e: io::Error) -> io::Error {
    crate::event_loop::error::FdError::wrap(op, fd, e)
}

impl Reactor {
    pub(crate) fn new() -> io::Result<Reactor> {
        let epoll = sys::epoll_create1()?;
        Ok(Reactor {
            epoll,
            events: vec![EpollEvent::zeroed(); MIN_EVENTS],
            regs: Slab::default(),
            by_fd: HashMap::new(),
            io: Slab::default(),
            io_fds: HashMap::new(),
            wake_buf: Vec::new(),
            graveyard: Vec::new(),
            wake_fd: None,
        })
    }

    /// The epoll instance's own fd (for diagnostics).
    pub(crate) fn epoll_fd(&self) -> RawFd {
        self.epoll.as_raw_fd()
    }

    /// Registers the loop's wake-up eventfd, level-triggered, under [`WAKE_TOKEN`].
    pub(crate) fn register_wake(&mut self, fd: RawFd) -> io::Result<()> {
        sys::epoll_ctl_add(self.epoll.as_fd(), fd, EpollFlags::IN, WAKE_TOKEN)?;
        self.wake_fd = Some(fd);
        Ok(())
    }

    /// Number of fds with `add_reader`/`add_writer` callbacks.
    pub(crate) fn len(&self) -> usize {
        self.regs.len()
    }

    /// Number of edge-triggered registrations (sockets, `AsyncFd`s).
    pub(crate) fn io_len(&self) -> usize {
        self.io.len()
    }

    /// Registers `fd` edge-triggered for reading and writing, once for its whole life
    /// (`epoll_ctl(EPOLL_CTL_ADD, EPOLLIN|EPOLLOUT|EPOLLRDHUP|EPOLLET)`), adding `EPOLLPRI` when
    /// `priority` (an `AsyncFd` whose interest holds tokio's `Interest::PRIORITY`): its events
    /// set `ready::PRIORITY` and wake the reading side.
    pub(crate) fn register_io_with(&mut self, fd: RawFd, priority: bool) -> io::Result<Rc<IoState>> {
        if self.by_fd.contains_key(&fd) && !self.forget_if_stale(fd) {
            return Err(io::Error::new(
                io::ErrorKind::AlreadyExists,
                format!("register(fd {fd}): the fd has add_reader/add_writer callbacks; remove them first"),
            ));
        }
        if self.io_fds.contains_key(&fd) || Some(fd) == self.wake_fd || fd == self.epoll.as_raw_fd() {
            return Err(io::Error::new(
                io::ErrorKind::AlreadyExists,
                format!("register(fd {fd}): the fd is already registered with this loop"),
            ));
        }
        let key = self.io.next_key();
        let token = key.to_u64() | IO_TOKEN_BIT;
        let mut flags = EpollFlags::IN | EpollFlags::OUT | EpollFlags::RDHUP | EpollFlags::ET;
        if priority {
            flags |= EpollFlags::PRI;
        }
        sys::epoll_ctl_add(self.epoll.as_fd(), fd, flags, token).map_err(|e| with_fd_context("register", fd, e))?;
        let state = Rc::new(IoState {
            fd,
            token,
            readiness: Cell::new(0),
            tick: Cell::new(0),
            reader: Cell::new(None),
            writer: Cell::new(None),
            more_readers: Cell::new(Vec::new()),
            more_writers: Cell::new(Vec::new()),
            polled_reader: Cell::new(None),
            polled_writer: Cell::new(None),
            crowded: Cell::new(0),
            handler: RefCell::new(None),
        });
        let inserted = self.io.insert(state.clone());
        debug_assert_eq!(inserted, key);
        self.io_fds.insert(fd, key);
        Ok(state)
    }

    /// Deregisters an edge-triggered registration (`EPOLL_CTL_DEL`, before its owner closes the
    /// fd). Its token goes stale: an event still queued for it is dropped by `dispatch`.
    pub(crate) fn deregister_io(&mut self, state: &IoState) {
        let key = Key::from_u64(state.token & !IO_TOKEN_BIT);
        if self.io.remove(key).is_some() {
            self.io_fds.remove(&state.fd);
            let _ = sys::epoll_ctl_del(self.epoll.as_fd(), state.fd);
        }
    }

    /// Installs (or replaces) the reader or writer callback of `fd`. Returns the replaced
    /// callback so the caller can drop it outside its borrows.
    pub(crate) fn set_callback(
        &mut self,
        fd: RawFd,
        side: Side,
        cb: Rc<dyn Callback>,
    ) -> io::Result<Option<Rc<dyn Callback>>> {
        if fd < 0 {
            return Err(with_fd_context(
                side.op(),
                fd,
                io::Error::from_raw_os_error(sys::errno::EBADF),
            ));
        }
        if self.io_fds.contains_key(&fd) {
            return Err(io::Error::new(
                io::ErrorKind::AlreadyExists,
                format!(
                    "{}(fd {fd}): the fd is registered by an evloop socket or AsyncFd",
                    side.op()
                ),
            ));
        }
        if Some(fd) == self.wake_fd || fd == self.epoll.as_raw_fd() {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("{}(fd {fd}): the fd belongs to the event loop itself", side.op()),
            ));
        }
        if let Some(key) = self.by_fd.get(&fd).copied() {
            let Some(current) = self.regs.get(key).map(Registration::interest) else {
                return Err(io::Error::other("reactor: fd map out of sync"));
            };
            let interest = current
                | match side {
                    Side::Read => EpollFlags::IN,
                    Side::Write => EpollFlags::OUT,
                };
            match self.ctl_update(fd, interest, key) {
                Ok(()) => {
                    let Some(reg) = self.regs.get_mut(key) else {
                        return Err(io::Error::other("reactor: fd map out of sync"));
                    };
                    let slot = match side {
                        Side::Read => &mut reg.reader,
                        Side::Write => &mut reg.writer,
                    };
                    return Ok(slot.replace(cb));
                }
                // The registration filed under this number was made for a file its owner closed
                // without removing its callbacks (see `forget_if_stale`): none of it carries
                // over to the file that has the number now, not even the other side's callback.
                // Register the new callback alone, as for a number never seen.
                Err(e) if matches!(e.raw_os_error(), Some(sys::errno::EBADF | sys::errno::ENOENT)) => self.forget(fd),
                Err(e) => return Err(with_fd_context(side.op(), fd, e)),
            }
        }
        let mut reg = Registration {
            reader: None,
            writer: None,
        };
        match side {
            Side::Read => reg.reader = Some(cb),
            Side::Write => reg.writer = Some(cb),
        }
        let interest = reg.interest();
        let key = self.regs.next_key();
        sys::epoll_ctl_add(self.epoll.as_fd(), fd, interest, key.to_u64())
            .or_else(|e| {
                // EEXIST: the kernel still has this fd from a registration we forgot
                // (the fd was dup'ed); take it over.
                if e.raw_os_error() == Some(sys::errno::EEXIST) {
                    sys::epoll_ctl_mod(self.epoll.as_fd(), fd, interest, key.to_u64())
                } else {
                    Err(e)
                }
            })
            .map_err(|e| with_fd_context(side.op(), fd, e))?;
        let inserted = self.regs.insert(reg);
        debug_assert_eq!(inserted, key);
        self.by_fd.insert(fd, key);
        Ok(None)
    }

    /// Applies a new interest set to `fd`'s registration (`EPOLL_CTL_MOD`).
    fn ctl_update(&mut self, fd: RawFd, interest: EpollFlags, key: Key) -> io::Result<()> {
        sys::epoll_ctl_mod(self.epoll.as_fd(), fd, interest, key.to_u64())
    }

    /// Forgets the registration filed under `fd` if the file it was made for is no longer at
    /// that number (its owner closed it without removing its callbacks); returns whether it did.
    ///
    /// The kernel keys an epoll registration by the open file *and* the fd number, and drops it
    /// when the file is closed: `EPOLL_CTL_MOD` then says `EBADF` (the number is free) or
    /// `ENOENT` (another file has the number). Either way the callbacks filed under the number
    /// were meant for a file that is gone, so they go too: a new file that reuses the number
    /// starts with none of them (kept, the closed file's writer would run for the new file on
    /// every iteration). A dup of the closed file may keep its old registration alive in the
    /// kernel; the registration's key is retired with it, so its events are dropped as stale.
    fn forget_if_stale(&mut self, fd: RawFd) -> bool {
        let Some(key) = self.by_fd.get(&fd).copied() else {
            return false;
        };
        let Some(interest) = self.regs.get(key).map(Registration::interest) else {
            return false;
        };
        match self.ctl_update(fd, interest, key) {
            Err(e) if matches!(e.raw_os_error(), Some(sys::errno::EBADF | sys::errno::ENOENT)) => {
                self.forget(fd);
                true
            }
            _ => false,
        }
    }

    /// Callbacks dropped by the reactor, handed to the loop to drop once no borrow is held (a
    /// closure's destructor may call back into the loop).
    pub(crate) fn take_graveyard(&mut self) -> Vec<Rc<dyn Callback>> {
        std::mem::take(&mut self.graveyard)
    }

    /// Removes the reader or writer callback of `fd`. Returns the removed callback, or `None`
    /// when there was none. `EPOLL_CTL_DEL` runs when no callback is left.
    pub(crate) fn remove_callback(&mut self, fd: RawFd, side: Side) -> Option<Rc<dyn Callback>> {
        let key = *self.by_fd.get(&fd)?;
        let (old, interest) = {
            let reg = self.regs.get_mut(key)?;
            let old = match side {
                Side::Read => reg.reader.take(),
                Side::Write => reg.writer.take(),
            };
            (old, reg.interest())
        };
        old.as_ref()?;
        if interest.bits() == 0 {
            self.forget(fd);
        } else if self.ctl_update(fd, interest, key).is_err() {
            // The file is gone (closed by its owner, the number free or another file's): the
            // other side's callback was for that file too, nothing is left to watch.
            self.forget(fd);
        }
        old
    }

    /// Drops our record of `fd` and deregisters it; errors (the fd was already closed, so the
    /// kernel dropped it) are expected and ignored.
    fn forget(&mut self, fd: RawFd) {
        if let Some(key) = self.by_fd.remove(&fd) {
            let _ = sys::epoll_ctl_del(self.epoll.as_fd(), fd);
            if let Some(reg) = self.regs.remove(key) {
                self.graveyard.extend(reg.reader);
                self.graveyard.extend(reg.writer);
            }
        }
    }

    /// Phase 3's syscall: waits for events (`epoll_pwait2`, falling back to `epoll_wait`).
    /// Returns the number of events now in the buffer; EINTR counts as zero events.
    pub(crate) fn wait(&mut self, timeout: Option<Duration>) -> io::Result<usize> {
        let wanted = (self.regs.len() + self.io.len() + 1).clamp(MIN_EVENTS, MAX_EVENTS);
        if self.events.len() < wanted {
            self.events.resize(wanted, EpollEvent::zeroed());
        }
        let n = sys::epoll_wait_timeout(self.epoll.as_fd(), &mut self.events, timeout)?;
        Ok(n)
    }

    /// Turns the first `n` events of the last wait into ready callbacks (given to `ready`) and
    /// wakers to wake (collected in the reactor's buffer; see [`Reactor::take_wakers`]).
    pub(crate) fn dispatch(&mut self, n: usize, ready: &mut VecDeque<Ready>) -> Dispatched {
        let mut out = Dispatched::default();
        for ev in &self.events[..n] {
            let data = ev.data();
            if data == WAKE_TOKEN {
                out.woken = true;
                continue;
            }
            if data & IO_TOKEN_BIT != 0 {
                let Some(state) = self.io.get(Key::from_u64(data & !IO_TOKEN_BIT)) else {
                    out.stale += 1;
                    continue;
                };
                let flags = ev.flags();
                let mut bits = 0;
                if flags.contains(EpollFlags::IN) {
                    bits |= ready::READABLE;
                }
                if flags.contains(EpollFlags::OUT) {
                    bits |= ready::WRITABLE;
                }
                if flags.intersects(EpollFlags::RDHUP | EpollFlags::HUP) {
                    bits |= ready::READ_CLOSED;
                }
                if flags.contains(EpollFlags::HUP) {
                    bits |= ready::WRITE_CLOSED;
                }
                if flags.contains(EpollFlags::ERR) {
                    bits |= ready::ERROR;
                }
                if flags.contains(EpollFlags::PRI) {
                    bits |= ready::PRIORITY;
                }
                state.set(bits);
                if bits & (ready::READ_ANY | ready::PRIORITY) != 0 {
                    state.take_readers(&mut self.wake_buf);
                }
                if bits & ready::WRITE_ANY != 0 {
                    state.take_writers(&mut self.wake_buf);
                }
                if let Some(h) = &*state.handler.borrow() {
                    ready.push_back(Ready::Callback(h.clone()));
                }
                continue;
            }
            let Some(reg) = self.regs.get(Key::from_u64(data)) else {
                out.stale += 1;
                continue;
            };
            let bits = ev.flags().bits();
            // asyncio's mapping: any bit besides IN makes the fd "writable" (so EPOLLERR/HUP
            // reach a writer), any bit besides OUT makes it "readable".
            let readable = bits & !EpollFlags::OUT.bits() != 0;
            let writable = bits & !EpollFlags::IN.bits() != 0;
            if readable {
                if let Some(cb) = &reg.reader {
                    ready.push_back(Ready::Callback(cb.clone()));
                }
            }
            if writable {
                if let Some(cb) = &reg.writer {
                    ready.push_back(Ready::Callback(cb.clone()));
                }
            }
        }
        out
    }

    /// Whether the last dispatch left wakers to wake.
    #[inline]
    pub(crate) fn has_wakers(&self) -> bool {
        !self.wake_buf.is_empty()
    }

    /// Moves the wakers collected by `dispatch` into `out` (the loop wakes them after it has
    /// released the reactor; waking may push onto the ready queue).
    pub(crate) fn take_wakers(&mut self, out: &mut Vec<Waker>) {
        out.append(&mut self.wake_buf);
    }

    /// Takes every callback out (so the caller can drop them outside its borrows), deregisters
    /// every fd and closes the epoll instance. Edge-triggered registrations are deregistered
    /// too; their owners still hold the fds and close them when dropped.
    pub(crate) fn close(mut self) -> (Vec<Rc<dyn Callback>>, io::Result<()>) {
        let mut callbacks = Vec::new();
        for state in self.io.drain() {
            let _ = sys::epoll_ctl_del(self.epoll.as_fd(), state.fd);
            if let Some(h) = state.handler.borrow_mut().take() {
                callbacks.push(h);
            }
        }
        self.io_fds.clear();
        let fds: Vec<RawFd> = self.by_fd.keys().copied().collect();
        for fd in fds {
            if let Some(key) = self.by_fd.remove(&fd) {
                let _ = sys::epoll_ctl_del(self.epoll.as_fd(), fd);
                if let Some(reg) = self.regs.remove(key) {
                    callbacks.extend(reg.reader);
                    callbacks.extend(reg.writer);
                }
            }
        }
        let res = sys::close(self.epoll);
        (callbacks, res)
    }
}
