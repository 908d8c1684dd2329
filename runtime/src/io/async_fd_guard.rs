//! The readiness guards of tokio's `AsyncFd` API: [`AsyncFdReadyGuard`] (from `readable()`,
//! `writable()`, `ready()`, `poll_read_ready()`...) and [`AsyncFdReadyMutGuard`] (from their
//! `_mut` forms), and [`TryIoError`].
//!
//! A guard is what one readiness wait saw: the events it asked for that were set, and the
//! registration's tick at that moment (`async_fd.rs`'s `ReadyEvent`). The guard does no I/O
//! itself; it decides what happens to the readiness afterwards. `try_io` runs the caller's
//! syscall and clears the readiness of the waited-for sides when it says `WouldBlock`;
//! `clear_ready` clears it by hand, but only if no event reached the registration since the
//! wait (the tick has not moved), so an edge that came while the guard was held is never lost;
//! dropping the guard (or `retain_ready`) keeps it, and the next wait ends at once.
//!
//! How the reactor's bits map (the registration is edge-triggered, `EPOLLET`): each event ORs
//! `EPOLLIN` into `READABLE`, `EPOLLOUT` into `WRITABLE`, `EPOLLRDHUP`/`EPOLLHUP` into
//! `READ_CLOSED`, `EPOLLHUP` into `WRITE_CLOSED` and `EPOLLERR` into `ERROR`, and the bits stay
//! set until cleared: there is no second edge to wait for while the fd stays ready. As in tokio,
//! `clear_ready` leaves `READ_CLOSED`/`WRITE_CLOSED` alone (a hang-up is final), while a
//! `WouldBlock` seen by `try_io` clears them too, as evloop's own sockets do: `EAGAIN` proves the
//! side is not closed (an unconnected socket reports a hang-up it does not have).

use std::fmt;
use std::io;
use std::os::fd::AsFd;

use crate::event_loop::reactor::ready;
use crate::io::{AsyncFd, Ready};

use super::async_fd::ReadyEvent;

/// `clear_ready` never clears the hang-up bits (tokio's `ScheduledIo::clear_readiness`).
const CLOSED: u8 = ready::READ_CLOSED | ready::WRITE_CLOSED;

/// The error of a guard's `try_io` whose closure said `WouldBlock`: the readiness was cleared
/// and the caller should wait again (tokio's `TryIoError`).
///
/// ```
/// use std::io::{ErrorKind, Read};
/// use std::os::unix::net::UnixStream;
/// use evloop::io::AsyncFd;
///
/// evloop::run(async {
///     let (a, _b) = UnixStream::pair()?;
///     let a = AsyncFd::new(a)?;
///     let mut guard = a.writable().await?; // any wait gives a guard
///     let r = guard.try_io(|fd| fd.get_ref().read(&mut [0; 4])); // nothing to read
///     assert!(r.is_err()); // a TryIoError: wait again
///     Ok::<(), std::io::Error>(())
/// })??;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub struct TryIoError(());

impl fmt::Display for TryIoError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("the operation would block: the readiness was cleared, wait again")
    }
}

impl std::error::Error for TryIoError {}

/// What both guards do with the readiness their wait saw (`event`, `None` once cleared or
/// retained).
fn clear(fd: &AsyncFd<impl AsFd>, event: &mut Option<ReadyEvent>, matching: Option<Ready>) {
    let Some(mut ev) = event.take() else { return };
    let bits = matching.unwrap_or(ev.ready);
    fd.clear_seen(ev.tick, bits.bits() & !CLOSED);
    if let Some(m) = matching {
        ev.ready = ev.ready - m;
        if !ev.ready.is_empty() {
            *event = Some(ev);
        }
    }
}

/// The outcome of a guard's `try_io` closure: `WouldBlock` clears every bit the wait asked for
/// (hang-up and error included: the syscall just proved them stale, so no tick applies).
fn after_try<R>(
    fd: &AsyncFd<impl AsFd>,
    event: &mut Option<ReadyEvent>,
    r: io::Result<R>,
) -> Result<io::Result<R>, TryIoError> {
    match r {
        Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
            if let Some(ev) = event.take() {
                fd.clear_bits(ev.mask);
            }
            Err(TryIoError(()))
        }
        r => Ok(r),
    }
}

/// The readiness one wait on a shared `&AsyncFd` saw (tokio's `AsyncFdReadyGuard`). Dropping it
/// keeps the readiness; see the module documentation for how it is cleared.
///
/// Not `#[must_use]`, unlike tokio's: `fd.readable().await?;` was evloop's spelling of a
/// plain wait before the guards came, and keeps compiling without a warning.
///
/// ```
/// use std::io::{Read, Write};
/// use std::os::unix::net::UnixStream;
/// use evloop::io::AsyncFd;
///
/// evloop::run(async {
///     let (a, mut b) = UnixStream::pair()?;
///     let a = AsyncFd::new(a)?;
///     b.write_all(b"hi")?;
///     let mut buf = [0; 8];
///     let n = loop {
///         let mut guard = a.readable().await?;
///         match guard.try_io(|fd| fd.get_ref().read(&mut buf)) {
///             Ok(n) => break n?,
///             Err(_would_block) => continue, // readiness cleared: wait for the next edge
///         }
///     };
///     assert_eq!(&buf[..n], b"hi");
///     Ok::<(), std::io::Error>(())
/// })??;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct AsyncFdReadyGuard<'a, T: AsFd> {
    async_fd: &'a AsyncFd<T>,
    event: Option<ReadyEvent>,
}

impl<'a, T: AsFd> AsyncFdReadyGuard<'a, T> {
    pub(super) fn new(async_fd: &'a AsyncFd<T>, event: ReadyEvent) -> Self {
        AsyncFdReadyGuard {
            async_fd,
            event: Some(event),
        }
    }

    /// Runs `f`, one non-blocking call on the fd; if it says `WouldBlock`, clears the readiness
    /// and returns [`TryIoError`] (wait again), otherwise returns its result.
    ///
    /// ```
    /// use std::io::Write;
    /// use std::os::unix::net::UnixStream;
    ///
    /// evloop::run(async {
    ///     let (a, _b) = UnixStream::pair()?;
    ///     let a = evloop::io::AsyncFd::new(a)?;
    ///     let mut guard = a.writable().await?;
    ///     let n = guard.try_io(|fd| fd.get_ref().write(b"sent")).expect("writable")?;
    ///     assert_eq!(n, 4);
    ///     Ok::<(), std::io::Error>(())
    /// })??;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn try_io<R>(&mut self, f: impl FnOnce(&'a AsyncFd<T>) -> io::Result<R>) -> Result<io::Result<R>, TryIoError> {
        let r = f(self.async_fd);
        after_try(self.async_fd, &mut self.event, r)
    }

    /// The `AsyncFd` this guard belongs to.
    ///
    /// ```
    /// use std::os::unix::net::UnixStream;
    ///
    /// evloop::run(async {
    ///     let (a, _b) = UnixStream::pair()?;
    ///     let a = evloop::io::AsyncFd::new(a)?;
    ///     let guard = a.writable().await?;
    ///     assert_eq!(guard.get_ref().as_raw_fd(), a.as_raw_fd());
    ///     Ok::<(), std::io::Error>(())
    /// })??;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn get_ref(&self) -> &'a AsyncFd<T> {
        self.async_fd
    }

    /// The value inside the `AsyncFd`.
    ///
    /// ```
    /// use std::os::unix::net::UnixStream;
    ///
    /// evloop::run(async {
    ///     let (a, _b) = UnixStream::pair()?;
    ///     let a = evloop::io::AsyncFd::new(a)?;
    ///     let guard = a.writable().await?;
    ///     assert!(guard.get_inner().peer_addr().is_ok());
    ///     Ok::<(), std::io::Error>(())
    /// })??;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn get_inner(&self) -> &'a T {
        self.async_fd.get_ref()
    }
}

/// The readiness one wait on an exclusive `&mut AsyncFd` saw (tokio's `AsyncFdReadyMutGuard`):
/// [`AsyncFdReadyGuard`]'s methods, and mutable access to the value (for the `Read`/`Write`
/// impls that take `&mut self`).
///
/// ```
/// use std::io::{Read, Write};
/// use std::os::unix::net::UnixStream;
/// use evloop::io::AsyncFd;
///
/// evloop::run(async {
///     let (a, mut b) = UnixStream::pair()?;
///     let mut a = AsyncFd::new(a)?;
///     b.write_all(b"mut")?;
///     let mut guard = a.readable_mut().await?;
///     let mut buf = [0; 3];
///     guard.try_io(|fd| fd.get_mut().read_exact(&mut buf)).expect("readable")?;
///     assert_eq!(&buf, b"mut");
///     Ok::<(), std::io::Error>(())
/// })??;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct AsyncFdReadyMutGuard<'a, T: AsFd> {
    async_fd: &'a mut AsyncFd<T>,
    event: Option<ReadyEvent>,
}

impl<'a, T: AsFd> AsyncFdReadyMutGuard<'a, T> {
    pub(super) fn new(async_fd: &'a mut AsyncFd<T>, event: ReadyEvent) -> Self {
        AsyncFdReadyMutGuard {
            async_fd,
            event: Some(event),
        }
    }

    /// [`AsyncFdReadyGuard::try_io`], with the `AsyncFd` lent mutably.
    ///
    /// ```
    /// use std::io::Write;
    /// use std::os::unix::net::UnixStream;
    ///
    /// evloop::run(async {
    ///     let (a, _b) = UnixStream::pair()?;
    ///     let mut a = evloop::io::AsyncFd::new(a)?;
    ///     let mut guard = a.writable_mut().await?;
    ///     assert_eq!(guard.try_io(|fd| fd.get_mut().write(b"ab")).expect("writable")?, 2);
    ///     Ok::<(), std::io::Error>(())
    /// })??;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn try_io<R>(&mut self, f: impl FnOnce(&mut AsyncFd<T>) -> io::Result<R>) -> Result<io::Result<R>, TryIoError> {
        let r = f(self.async_fd);
        after_try(self.async_fd, &mut self.event, r)
    }

    /// The `AsyncFd` this guard belongs to.
    ///
    /// ```
    /// use std::os::unix::net::UnixStream;
    ///
    /// evloop::run(async {
    ///     let (a, _b) = UnixStream::pair()?;
    ///     let mut a = evloop::io::AsyncFd::new(a)?;
    ///     let fd = a.as_raw_fd();
    ///     assert_eq!(a.writable_mut().await?.get_ref().as_raw_fd(), fd);
    ///     Ok::<(), std::io::Error>(())
    /// })??;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn get_ref(&self) -> &AsyncFd<T> {
        self.async_fd
    }

    /// The `AsyncFd` this guard belongs to, mutably.
    ///
    /// ```
    /// use std::io::Write;
    /// use std::os::unix::net::UnixStream;
    ///
    /// evloop::run(async {
    ///     let (a, _b) = UnixStream::pair()?;
    ///     let mut a = evloop::io::AsyncFd::new(a)?;
    ///     let mut guard = a.writable_mut().await?;
    ///     guard.get_mut().get_mut().write_all(b"!")?;
    ///     Ok::<(), std::io::Error>(())
    /// })??;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn get_mut(&mut self) -> &mut AsyncFd<T> {
        self.async_fd
    }

    /// The value inside the `AsyncFd`.
    ///
    /// ```
    /// use std::os::unix::net::UnixStream;
    ///
    /// evloop::run(async {
    ///     let (a, _b) = UnixStream::pair()?;
    ///     let mut a = evloop::io::AsyncFd::new(a)?;
    ///     assert!(a.writable_mut().await?.get_inner().peer_addr().is_ok());
    ///     Ok::<(), std::io::Error>(())
    /// })??;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn get_inner(&self) -> &T {
        self.async_fd.get_ref()
    }

    /// The value inside the `AsyncFd`, mutably.
    ///
    /// ```
    /// use std::io::Write;
    /// use std::os::unix::net::UnixStream;
    ///
    /// evloop::run(async {
    ///     let (a, _b) = UnixStream::pair()?;
    ///     let mut a = evloop::io::AsyncFd::new(a)?;
    ///     a.writable_mut().await?.get_inner_mut().write_all(b"?")?;
    ///     Ok::<(), std::io::Error>(())
    /// })??;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn get_inner_mut(&mut self) -> &mut T {
        self.async_fd.get_mut()
    }
}

/// The methods both guards share, written once: `$bind` is the binding the examples make
/// (`let a` or `let mut a`) and `$wait` the wait that gives the guard (`writable` or
/// `writable_mut`).
macro_rules! shared_guard_methods {
    ($guard:ident, $bind:literal, $wait:literal) => {
        impl<T: AsFd> $guard<'_, T> {
            /// Forgets the readiness this guard saw (not a hang-up), unless an event arrived
            /// since the wait: the next wait then waits for a new edge.
            ///
            /// ```
            /// use std::os::unix::net::UnixStream;
            /// use evloop::io::{AsyncFd, Interest};
            ///
            /// evloop::run(async {
            ///     let (a, _b) = UnixStream::pair()?;
            #[doc = concat!("    ", $bind, " = AsyncFd::new(a)?;")]
            #[doc = concat!("    a.", $wait, "().await?.clear_ready(); // as if a write had said EAGAIN")]
            ///     assert!(!a.is_ready(Interest::WRITABLE));
            ///     Ok::<(), std::io::Error>(())
            /// })??;
            /// # Ok::<(), Box<dyn std::error::Error>>(())
            /// ```
            pub fn clear_ready(&mut self) {
                clear(self.async_fd, &mut self.event, None);
            }

            /// Forgets only the events in `ready` (tokio's `clear_ready_matching`); the guard's
            /// `ready()` loses them too.
            ///
            /// ```
            /// use std::os::unix::net::UnixStream;
            /// use evloop::io::{AsyncFd, Ready};
            ///
            /// evloop::run(async {
            ///     let (a, _b) = UnixStream::pair()?;
            #[doc = concat!("    ", $bind, " = AsyncFd::new(a)?;")]
            #[doc = concat!("    let mut guard = a.", $wait, "().await?;")]
            ///     guard.clear_ready_matching(Ready::READABLE); // not among those seen
            ///     assert_eq!(guard.ready(), Ready::WRITABLE);
            ///     guard.clear_ready_matching(Ready::WRITABLE);
            ///     assert!(guard.ready().is_empty());
            ///     Ok::<(), std::io::Error>(())
            /// })??;
            /// # Ok::<(), Box<dyn std::error::Error>>(())
            /// ```
            pub fn clear_ready_matching(&mut self, ready: Ready) {
                clear(self.async_fd, &mut self.event, Some(ready));
            }

            /// Keeps the readiness (what dropping the guard does too): the next wait ends at
            /// once.
            ///
            /// ```
            /// use std::os::unix::net::UnixStream;
            /// use evloop::io::AsyncFd;
            ///
            /// evloop::run(async {
            ///     let (a, _b) = UnixStream::pair()?;
            #[doc = concat!("    ", $bind, " = AsyncFd::new(a)?;")]
            #[doc = concat!("    a.", $wait, "().await?.retain_ready();")]
            #[doc = concat!("    a.", $wait, "().await?; // still writable: no wait")]
            ///     Ok::<(), std::io::Error>(())
            /// })??;
            /// # Ok::<(), Box<dyn std::error::Error>>(())
            /// ```
            pub fn retain_ready(&mut self) {
                self.event = None;
            }

            /// The events the wait saw, among those it asked for (`Ready::EMPTY` once cleared).
            ///
            /// ```
            /// use std::os::unix::net::UnixStream;
            /// use evloop::io::{AsyncFd, Ready};
            ///
            /// evloop::run(async {
            ///     let (a, _b) = UnixStream::pair()?;
            #[doc = concat!("    ", $bind, " = AsyncFd::new(a)?;")]
            #[doc = concat!("    let mut guard = a.", $wait, "().await?;")]
            ///     assert_eq!(guard.ready(), Ready::WRITABLE);
            ///     guard.clear_ready();
            ///     assert_eq!(guard.ready(), Ready::EMPTY);
            ///     Ok::<(), std::io::Error>(())
            /// })??;
            /// # Ok::<(), Box<dyn std::error::Error>>(())
            /// ```
            pub fn ready(&self) -> Ready {
                self.event.map_or(Ready::EMPTY, |e| e.ready)
            }
        }

        impl<T: AsFd> fmt::Debug for $guard<'_, T> {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.debug_struct(stringify!($guard))
                    .field("fd", &self.async_fd.as_raw_fd())
                    .field("ready", &self.ready())
                    .finish()
            }
        }
    };
}

shared_guard_methods!(AsyncFdReadyGuard, "let a", "writable");
shared_guard_methods!(AsyncFdReadyMutGuard, "let mut a", "writable_mut");
