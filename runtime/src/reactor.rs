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

use std::collections::HashMap;
use std::io;
use std::os::fd::{AsFd, AsRawFd, OwnedFd, RawFd};
use std::rc::Rc;
use std::time::Duration;

use evloop_syscalls::{self as sys, EpollEvent, EpollFlags};

use crate::handle::Callback;
use crate::slab::{Key, Slab};

/// The `data` value of the loop's own wake-up eventfd; slab keys never take this value because
/// a slot whose generation reaches `u32::MAX` is retired.
pub(crate) const WAKE_TOKEN: u64 = u64::MAX;

/// The event buffer holds one event per registered fd (plus the wake-up eventfd), so every ready
/// fd is reported in the same iteration (asyncio sizes its `select` the same way); past
/// `MAX_EVENTS` ready fds, the rest are reported in the next iteration (epoll rotates its ready
/// list, so none starves).
const MIN_EVENTS: usize = 64;
const MAX_EVENTS: usize = 1 << 16;

/// One fd's level-triggered callbacks.
pub(crate) struct Registration {
    fd: RawFd,
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
    /// Events that scheduled at least one callback.
    pub(crate) fd_events: usize,
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
    /// The wake-up eventfd's number, refused by `add_reader`.
    wake_fd: Option<RawFd>,
}

fn with_fd_context(op: &str, fd: RawFd, e: io::Error) -> io::Error {
    io::Error::new(e.kind(), format!("{op}(fd {fd}): {e}"))
}

impl Reactor {
    pub(crate) fn new() -> io::Result<Reactor> {
        let epoll = sys::epoll_create1()?;
        Ok(Reactor {
            epoll,
            events: vec![EpollEvent::zeroed(); MIN_EVENTS],
            regs: Slab::default(),
            by_fd: HashMap::new(),
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

    /// Number of fds with callbacks.
    pub(crate) fn len(&self) -> usize {
        self.regs.len()
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
        if Some(fd) == self.wake_fd || fd == self.epoll.as_raw_fd() {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("{}(fd {fd}): the fd belongs to the event loop itself", side.op()),
            ));
        }
        match self.by_fd.get(&fd).copied() {
            Some(key) => {
                let (old, interest) = {
                    let reg = match self.regs.get_mut(key) {
                        Some(r) => r,
                        None => return Err(io::Error::other("reactor: fd map out of sync")),
                    };
                    let slot = match side {
                        Side::Read => &mut reg.reader,
                        Side::Write => &mut reg.writer,
                    };
                    let old = slot.replace(cb);
                    (old, reg.interest())
                };
                if let Err(e) = self.ctl_mod_or_add(fd, interest, key) {
                    // Undo: leave the registration as it was before this call.
                    if let Some(reg) = self.regs.get_mut(key) {
                        let slot = match side {
                            Side::Read => &mut reg.reader,
                            Side::Write => &mut reg.writer,
                        };
                        *slot = old.clone();
                    }
                    if e.raw_os_error() == Some(sys::errno::EBADF) {
                        // The fd was closed behind our back: forget it entirely.
                        self.forget(fd);
                    }
                    return Err(with_fd_context(side.op(), fd, e));
                }
                Ok(old)
            }
            None => {
                let mut reg = Registration {
                    fd,
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
        }
    }

    fn ctl_mod_or_add(&self, fd: RawFd, interest: EpollFlags, key: Key) -> io::Result<()> {
        match sys::epoll_ctl_mod(self.epoll.as_fd(), fd, interest, key.to_u64()) {
            // ENOENT: the fd was closed and its number reused, so the kernel dropped the old
            // registration; register the new file description.
            Err(e) if e.raw_os_error() == Some(sys::errno::ENOENT) => {
                sys::epoll_ctl_add(self.epoll.as_fd(), fd, interest, key.to_u64())
            }
            other => other,
        }
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
        } else if self.ctl_mod_or_add(fd, interest, key).is_err() {
            // The fd is gone (closed by its owner): nothing left to watch.
            self.forget(fd);
        }
        old
    }

    /// Drops our record of `fd` and deregisters it; errors (the fd was already closed, so the
    /// kernel dropped it) are expected and ignored.
    fn forget(&mut self, fd: RawFd) {
        if let Some(key) = self.by_fd.remove(&fd) {
            let _ = sys::epoll_ctl_del(self.epoll.as_fd(), fd);
            self.regs.remove(key);
        }
    }

    /// Phase 3's syscall: waits for events (`epoll_pwait2`, falling back to `epoll_wait`).
    /// Returns the number of events now in the buffer; EINTR counts as zero events.
    pub(crate) fn wait(&mut self, timeout: Option<Duration>) -> io::Result<usize> {
        let wanted = (self.regs.len() + 1).clamp(MIN_EVENTS, MAX_EVENTS);
        if self.events.len() < wanted {
            self.events.resize(wanted, EpollEvent::zeroed());
        }
        let n = sys::epoll_wait_timeout(self.epoll.as_fd(), &mut self.events, timeout)?;
        Ok(n)
    }

    /// Turns the first `n` events of the last wait into ready callbacks (given to `ready`).
    /// A full buffer grows so the next wait can take more events at once.
    pub(crate) fn dispatch(&mut self, n: usize, ready: &mut dyn FnMut(Rc<dyn Callback>)) -> Dispatched {
        let mut out = Dispatched::default();
        for ev in &self.events[..n] {
            let data = ev.data();
            if data == WAKE_TOKEN {
                out.woken = true;
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
            let mut scheduled = false;
            if readable {
                if let Some(cb) = &reg.reader {
                    ready(cb.clone());
                    scheduled = true;
                }
            }
            if writable {
                if let Some(cb) = &reg.writer {
                    ready(cb.clone());
                    scheduled = true;
                }
            }
            if scheduled {
                out.fd_events += 1;
            }
        }
        out
    }

    /// Takes every callback out (so the caller can drop them outside its borrows), deregisters
    /// every fd and closes the epoll instance.
    pub(crate) fn close(mut self) -> (Vec<Rc<dyn Callback>>, io::Result<()>) {
        let mut callbacks = Vec::new();
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

    /// The registration for `fd`, if any (tests and the task dump).
    #[allow(dead_code)]
    pub(crate) fn registration(&self, fd: RawFd) -> Option<(bool, bool)> {
        let key = self.by_fd.get(&fd)?;
        let reg = self.regs.get(*key)?;
        debug_assert_eq!(reg.fd, fd);
        Some((reg.reader.is_some(), reg.writer.is_some()))
    }
}
