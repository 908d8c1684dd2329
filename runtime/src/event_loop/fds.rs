//! Watching fds: asyncio's level-triggered fd callbacks ([`LoopHandle::add_reader`],
//! [`LoopHandle::add_writer`] and their removal) and the edge-triggered registrations that
//! sockets and `AsyncFd` use ([`LoopInner::register_io`], [`LoopInner::deregister_io`]).
//!
//! Both go to the reactor; an fd event becomes a ready callback (or wakes the tasks parked on
//! the registration) in phase 3. Callbacks the reactor lets go of are cancelled here, outside
//! its borrow, so that a run already queued for this iteration does not happen.

use std::io;
use std::os::fd::RawFd;
use std::panic::Location;
use std::rc::Rc;

use crate::event_loop::error::{LoopError, LoopErrorKind};
use crate::event_loop::handle::{Callback, HandleKind, RepeatCallback};
use crate::event_loop::reactor::{IoState, Side};
use crate::event_loop::{LoopHandle, LoopInner};

impl LoopInner {
    /// Registers `fd` edge-triggered with the reactor (sockets, `AsyncFd`).
    pub(crate) fn register_io(&self, fd: RawFd) -> io::Result<Rc<IoState>> {
        self.register_io_with(fd, false)
    }

    /// [`register_io`](Self::register_io), with `EPOLLPRI` too when `priority`.
    pub(crate) fn register_io_with(&self, fd: RawFd, priority: bool) -> io::Result<Rc<IoState>> {
        match self.reactor.borrow_mut().as_mut() {
            Some(r) => r.register_io_with(fd, priority),
            None => Err(LoopError::new(LoopErrorKind::Closed, "register (AsyncFd)").into()),
        }
    }

    /// Deregisters an edge-triggered registration; parked wakers are woken (after the borrow)
    /// so no task waits forever on an fd that is going away.
    pub(crate) fn deregister_io(&self, state: &IoState) {
        if let Ok(mut r) = self.reactor.try_borrow_mut() {
            if let Some(r) = r.as_mut() {
                r.deregister_io(state);
            }
        }
        let wakers = state.take_wakers();
        state.set_handler(None);
        for w in wakers {
            w.wake();
        }
    }
}

impl LoopHandle {
    /// Calls `f` whenever `fd` is readable (level-triggered, asyncio's `add_reader`): once per
    /// iteration for as long as it stays readable. Adding again replaces the callback.
    ///
    /// The fd stays owned by the caller, who must call [`remove_reader`](LoopHandle::remove_reader)
    /// before closing it. Errors name the fd: it is not open (`EBADF`), it cannot be polled
    /// (`EPERM`, a regular file), it is the loop's own, or the loop is closed.
    ///
    /// ```
    /// use std::cell::RefCell;
    /// use std::io::{Read, Write};
    /// use std::os::fd::AsRawFd;
    /// use std::os::unix::net::UnixStream;
    /// use std::rc::Rc;
    ///
    /// let lp = evloop::event_loop::EventLoop::new()?;
    /// let (mut a, mut b) = UnixStream::pair()?;
    /// a.set_nonblocking(true)?;
    /// let fd = a.as_raw_fd();
    /// let got = Rc::new(RefCell::new(Vec::new()));
    /// let (g, h) = (got.clone(), lp.handle());
    /// lp.add_reader(fd, move || {
    ///     // Level-triggered: called while `fd` is readable, so read what is there.
    ///     let mut buf = [0; 64];
    ///     let n = a.read(&mut buf).unwrap_or(0);
    ///     g.borrow_mut().extend_from_slice(&buf[..n]);
    ///     h.stop();
    /// })?;
    /// b.write_all(b"ready")?;
    /// lp.run_forever()?;
    /// assert!(lp.remove_reader(fd)); // before the fd is closed (here: with the callback)
    /// assert_eq!(*got.borrow(), b"ready");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[track_caller]
    pub fn add_reader<F: FnMut() + 'static>(&self, fd: RawFd, f: F) -> io::Result<()> {
        self.add_fd_callback(
            fd,
            Side::Read,
            RepeatCallback::new_rc(HandleKind::Reader, Location::caller(), f),
        )
    }

    /// Calls `f` whenever `fd` is writable (level-triggered, asyncio's `add_writer`).
    ///
    /// ```
    /// use std::cell::Cell;
    /// use std::os::fd::AsRawFd;
    /// use std::os::unix::net::UnixStream;
    /// use std::rc::Rc;
    ///
    /// let lp = evloop::event_loop::EventLoop::new()?;
    /// let (a, _b) = UnixStream::pair()?;
    /// let calls = Rc::new(Cell::new(0));
    /// let (c, h) = (calls.clone(), lp.handle());
    /// lp.add_writer(a.as_raw_fd(), move || {
    ///     c.set(c.get() + 1); // an empty send buffer: writable
    ///     h.stop();
    /// })?;
    /// lp.run_forever()?;
    /// assert!(lp.remove_writer(a.as_raw_fd()));
    /// assert_eq!(calls.get(), 1);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[track_caller]
    pub fn add_writer<F: FnMut() + 'static>(&self, fd: RawFd, f: F) -> io::Result<()> {
        self.add_fd_callback(
            fd,
            Side::Write,
            RepeatCallback::new_rc(HandleKind::Writer, Location::caller(), f),
        )
    }

    fn add_fd_callback(&self, fd: RawFd, side: Side, cb: Rc<dyn Callback>) -> io::Result<()> {
        let op = match side {
            Side::Read => "add_reader",
            Side::Write => "add_writer",
        };
        self.check_open(op)?;
        let (replaced, dead) = {
            let mut reactor = self.inner.reactor.borrow_mut();
            match reactor.as_mut() {
                Some(r) => {
                    let replaced = r.set_callback(fd, side, cb);
                    (replaced, r.take_graveyard())
                }
                None => return Err(LoopError::new(LoopErrorKind::Closed, op).into()),
            }
        };
        for cb in &dead {
            cb.cancel();
        }
        drop(dead);
        if let Some(old) = replaced? {
            old.cancel();
        }
        Ok(())
    }

    /// Stops watching `fd` for reading; returns whether a reader was registered.
    ///
    /// ```
    /// use std::os::fd::AsRawFd;
    /// use std::os::unix::net::UnixStream;
    ///
    /// let lp = evloop::event_loop::EventLoop::new()?;
    /// let (a, _b) = UnixStream::pair()?;
    /// assert!(!lp.remove_reader(a.as_raw_fd())); // nothing registered
    /// lp.add_reader(a.as_raw_fd(), || ())?;
    /// assert!(lp.remove_reader(a.as_raw_fd()));
    /// assert_eq!(lp.stats().fds, 0);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn remove_reader(&self, fd: RawFd) -> bool {
        self.remove_fd_callback(fd, Side::Read)
    }

    /// Stops watching `fd` for writing; returns whether a writer was registered.
    ///
    /// ```
    /// use std::os::fd::AsRawFd;
    /// use std::os::unix::net::UnixStream;
    ///
    /// let lp = evloop::event_loop::EventLoop::new()?;
    /// let (a, _b) = UnixStream::pair()?;
    /// lp.add_writer(a.as_raw_fd(), || ())?;
    /// assert!(lp.remove_writer(a.as_raw_fd()));
    /// assert!(!lp.remove_writer(a.as_raw_fd())); // already gone
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn remove_writer(&self, fd: RawFd) -> bool {
        self.remove_fd_callback(fd, Side::Write)
    }

    fn remove_fd_callback(&self, fd: RawFd, side: Side) -> bool {
        let (removed, dead) = match self.inner.reactor.borrow_mut().as_mut() {
            Some(r) => (r.remove_callback(fd, side), r.take_graveyard()),
            None => (None, Vec::new()),
        };
        for cb in &dead {
            cb.cancel();
        }
        drop(dead);
        match removed {
            Some(cb) => {
                // A run already queued for this iteration must not happen any more.
                cb.cancel();
                true
            }
            None => false,
        }
    }
}
