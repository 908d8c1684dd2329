//! Readiness-based I/O for tasks: [`AsyncFd`] and the [`AsyncRead`] / [`AsyncWrite`] traits.
//!
//! # How an await on a socket reaches `epoll_pwait2` and back
//! An [`AsyncFd`] registers its fd with the loop's reactor once, edge-triggered
//! (`EPOLLIN|EPOLLOUT|EPOLLRDHUP|EPOLLET`), and keeps the registration until it is dropped: no
//! `epoll_ctl` in steady state. It starts "not ready". A read goes like this:
//! 1. [`AsyncFd::poll_io`] sees no readable bit, parks the task's waker in the registration
//!    and returns `Pending`; the task's step ends.
//! 2. Data arrives; phase 3 of the loop (`epoll_pwait2`) reports the edge, the reactor ORs
//!    `READABLE` into the registration and wakes the parked waker: the task is queued.
//! 3. The task's next step polls again: the bit is set, so it calls `read(2)`. Data comes back;
//!    if the call says `EAGAIN` instead, the bit is cleared and we go back to step 1.
//!
//! Readiness is cleared only when the kernel proves the fd is not ready: `EAGAIN`, or, for
//! stream sockets, a short read (the receive queue was drained; any later arrival raises a new
//! edge). A reader that stops early without either keeps the bit, so no edge is ever lost
//! (the failure mode of mio #45).
//!
//! The other way round, readiness observed before an operation started never completes it:
//! an unconnected stream socket reports itself writable and hung up as soon as it is
//! registered, so `connect` forgets every bit when the attempt starts and believes only the
//! edges that follow (checked with `SO_ERROR` and `getpeername`). And an `EAGAIN` clears every
//! bit of its direction, hang-up and error included, so a stale bit can never make a waiting
//! operation spin.
//!
//! One task may wait for reading and one for writing at a time (the two halves of a stream);
//! a second waiter on the same side replaces the first's waker.
//!
//! # The `io/` folder (layer 3)
//! This file holds `AsyncFd` and the I/O traits; beside it are sockets and the `sock_*` API
//! (`net`), the address forms they take (`addr`), borrowed stream halves (`split`), buffered
//! readers and writers (`buf`), copies between streams (`copy`), protocols and transports
//! (`protocol`), streams on top of them (`stream`), datagram endpoints (`datagram`) and async
//! pipes (`pipe`). It builds on `task/` and `event_loop/`, and does not use `sync/` (its sibling
//! at the same rank).
//!
//! As `evloop::io` this module is also the tokio-shaped namespace: `evloop::io::{AsyncReadExt,
//! AsyncWriteExt, AsyncBufReadExt, BufReader, BufWriter, copy}` are where `tokio::io` has them.

pub(crate) mod addr;
pub(crate) mod buf;
pub(crate) mod copy;
pub(crate) mod datagram;
pub mod net;
pub mod pipe;
pub(crate) mod protocol;
pub(crate) mod split;
pub mod stream;

pub use self::buf::{
    AsyncBufRead, AsyncBufReadExt, BufReader, BufStream, BufWriter, DEFAULT_BUF_SIZE, FillBuf, Lines, Split,
};
pub use self::copy::{copy, copy_bidirectional, copy_buf};

use std::future::poll_fn;
use std::io::{self, IoSlice};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, RawFd};
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll};

use crate::event_loop::error::{LoopError, LoopErrorKind, WrongLoopError};
use crate::event_loop::reactor::{IoState, ready};
use crate::event_loop::trace::{Awaiting, note_awaiting};
use crate::event_loop::{LoopHandle, LoopInner, with_running};

/// Which direction an operation needs.
///
/// ```
/// use std::os::unix::net::UnixStream;
/// use evloop::{AsyncFd, Interest};
///
/// evloop::run(async {
///     let (a, _b) = UnixStream::pair()?;
///     let a = AsyncFd::new(a)?;
///     a.ready(Interest::Write).await?; // an empty send buffer: writable at once
///     assert!(a.is_ready(Interest::Write));
///     assert!(!a.is_ready(Interest::Read)); // nothing was sent to it
///     Ok::<(), std::io::Error>(())
/// })??;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Interest {
    /// Reading (or accepting).
    Read,
    /// Writing (or completing a connect).
    Write,
}

impl Interest {
    fn bits(self) -> u8 {
        match self {
            Interest::Read => ready::READ_ANY,
            Interest::Write => ready::WRITE_ANY,
        }
    }
}

/// Any non-blocking fd driven by the loop: a pipe, a tty, a netlink socket, a socket of your own
/// (asyncio's `add_reader`, but as awaitable readiness with edge-triggered registration).
///
/// The fd must be in non-blocking mode ([`AsyncFd::new`] sets it). Dropping the `AsyncFd`
/// deregisters the fd (`EPOLL_CTL_DEL`) before the inner value, and so the fd, is dropped.
///
/// ```
/// use std::io::{Read, Write};
/// use std::os::unix::net::UnixStream;
/// use evloop::{AsyncFd, Interest};
///
/// evloop::run(async {
///     let (a, mut b) = UnixStream::pair()?;
///     let a = AsyncFd::new(a)?; // non-blocking now, and registered with the running loop
///     b.write_all(b"ping")?;
///     let mut buf = [0; 16];
///     // Waits for readability, then runs the read; on `WouldBlock` it waits for the next edge.
///     let n = a.io(Interest::Read, |mut s| s.read(&mut buf)).await?;
///     assert_eq!(&buf[..n], b"ping");
///     Ok::<(), std::io::Error>(())
/// })??;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct AsyncFd<T: AsFd> {
    state: Rc<IoState>,
    lp: Rc<LoopInner>,
    inner: Option<T>,
}

fn no_loop(op: &'static str) -> io::Error {
    LoopError::new(LoopErrorKind::NoRunningLoop, op).into()
}

impl<T: AsFd> AsyncFd<T> {
    /// Registers `inner` with the loop running on this thread, switching it to non-blocking mode.
    ///
    /// ```
    /// use std::os::unix::net::UnixStream;
    /// use evloop::AsyncFd;
    ///
    /// let (a, _b) = UnixStream::pair()?;
    /// assert!(AsyncFd::new(a.try_clone()?).is_err()); // no loop is running here
    /// evloop::run(async move {
    ///     let a = AsyncFd::new(a)?;
    ///     a.writable().await
    /// })??;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn new(inner: T) -> io::Result<AsyncFd<T>> {
        let lp = with_running(Rc::clone).ok_or_else(|| no_loop("AsyncFd::new"))?;
        Self::register(lp, inner)
    }

    /// Registers `inner` with `lp` (which need not be running yet).
    ///
    /// ```
    /// use std::io::Write;
    /// use std::os::unix::net::UnixStream;
    /// use evloop::{AsyncFd, EventLoop};
    ///
    /// let lp = EventLoop::new()?;
    /// let (a, mut b) = UnixStream::pair()?;
    /// let a = AsyncFd::with_loop(&lp, a)?; // registered before the loop runs
    /// b.write_all(b"x")?;
    /// lp.run_until_complete(async move { a.readable().await })??;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn with_loop(lp: &LoopHandle, inner: T) -> io::Result<AsyncFd<T>> {
        Self::register(lp.inner.clone(), inner)
    }

    fn register(lp: Rc<LoopInner>, inner: T) -> io::Result<AsyncFd<T>> {
        evloop_syscalls::set_nonblocking(inner.as_fd(), true)?;
        Self::register_nonblocking(lp, inner)
    }

    /// [`new`](Self::new) (`lp` `None`) or [`with_loop`](Self::with_loop) for an fd the syscall
    /// layer created non-blocking (`socket`, `accept4`, `socketpair` all pass `SOCK_NONBLOCK`):
    /// no `fcntl` to check the flag, one syscall less per connection.
    pub(crate) fn new_nonblocking(lp: Option<&LoopHandle>, inner: T) -> io::Result<AsyncFd<T>> {
        let lp = match lp {
            Some(lp) => lp.inner.clone(),
            None => with_running(Rc::clone).ok_or_else(|| no_loop("AsyncFd::new"))?,
        };
        Self::register_nonblocking(lp, inner)
    }

    fn register_nonblocking(lp: Rc<LoopInner>, inner: T) -> io::Result<AsyncFd<T>> {
        let state = lp.register_io(inner.as_fd().as_raw_fd())?;
        Ok(AsyncFd {
            state,
            lp,
            inner: Some(inner),
        })
    }

    /// The wrapped value.
    ///
    /// ```
    /// use std::os::unix::net::UnixStream;
    ///
    /// evloop::run(async {
    ///     let (a, _b) = UnixStream::pair()?;
    ///     let a = evloop::AsyncFd::new(a)?;
    ///     assert!(a.get_ref().peer_addr()?.is_unnamed()); // the std socket's own methods
    ///     Ok::<(), std::io::Error>(())
    /// })??;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn get_ref(&self) -> &T {
        match &self.inner {
            Some(t) => t,
            None => unreachable!("AsyncFd's inner value is only taken by into_inner and drop"),
        }
    }

    /// The wrapped value, mutably (do not replace the fd it holds).
    ///
    /// ```
    /// use std::io::{Read, Write};
    /// use std::os::unix::net::UnixStream;
    ///
    /// evloop::run(async {
    ///     let (a, mut b) = UnixStream::pair()?;
    ///     let mut a = evloop::AsyncFd::new(a)?;
    ///     a.get_mut().write_all(b"!")?; // `Write` needs `&mut UnixStream`
    ///     let mut buf = [0; 1];
    ///     b.read_exact(&mut buf)?;
    ///     assert_eq!(&buf, b"!");
    ///     Ok::<(), std::io::Error>(())
    /// })??;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn get_mut(&mut self) -> &mut T {
        match &mut self.inner {
            Some(t) => t,
            None => unreachable!("AsyncFd's inner value is only taken by into_inner and drop"),
        }
    }

    /// Deregisters the fd and gives the value back (still non-blocking).
    ///
    /// ```
    /// use std::io::{ErrorKind, Read};
    /// use std::os::unix::net::UnixStream;
    ///
    /// evloop::run(async {
    ///     let (a, _b) = UnixStream::pair()?;
    ///     let a = evloop::AsyncFd::new(a)?;
    ///     let mut a = a.into_inner(); // deregistered, still non-blocking
    ///     let err = a.read(&mut [0; 1]).unwrap_err();
    ///     assert_eq!(err.kind(), ErrorKind::WouldBlock);
    ///     Ok::<(), std::io::Error>(())
    /// })??;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn into_inner(mut self) -> T {
        self.lp.deregister_io(&self.state);
        match self.inner.take() {
            Some(t) => t,
            None => unreachable!("AsyncFd's inner value is only taken by into_inner and drop"),
        }
    }

    /// Hands the value and its live registration to another owner (a transport) without the
    /// `EPOLL_CTL_DEL` + `EPOLL_CTL_ADD` a deregister/register pair would cost.
    pub(crate) fn into_parts(mut self) -> (T, Rc<IoState>) {
        match self.inner.take() {
            Some(t) => (t, self.state.clone()),
            None => unreachable!("AsyncFd's inner value is only taken by into_inner and drop"),
        }
    }

    /// The raw fd (for diagnostics and `sock_*`-style code).
    ///
    /// ```
    /// use std::os::fd::AsRawFd;
    /// use std::os::unix::net::UnixStream;
    ///
    /// evloop::run(async {
    ///     let (a, _b) = UnixStream::pair()?;
    ///     let raw = a.as_raw_fd();
    ///     let a = evloop::AsyncFd::new(a)?;
    ///     assert_eq!(a.as_raw_fd(), raw);
    ///     Ok::<(), std::io::Error>(())
    /// })??;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn as_raw_fd(&self) -> RawFd {
        self.state.fd()
    }

    /// Whether the last events said the fd is ready for `interest` (no syscall).
    ///
    /// ```
    /// use std::io::Write;
    /// use std::os::unix::net::UnixStream;
    /// use evloop::{AsyncFd, Interest};
    ///
    /// evloop::run(async {
    ///     let (a, mut b) = UnixStream::pair()?;
    ///     let a = AsyncFd::new(a)?;
    ///     assert!(!a.is_ready(Interest::Read)); // no event seen yet
    ///     b.write_all(b"data")?;
    ///     a.readable().await?;
    ///     assert!(a.is_ready(Interest::Read)); // no syscall: the last event said so
    ///     Ok::<(), std::io::Error>(())
    /// })??;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn is_ready(&self, interest: Interest) -> bool {
        self.state.readiness() & interest.bits() != 0
    }

    /// Whether the peer closed its side (EPOLLRDHUP/EPOLLHUP seen).
    ///
    /// ```
    /// use std::os::unix::net::UnixStream;
    ///
    /// evloop::run(async {
    ///     let (a, b) = UnixStream::pair()?;
    ///     let a = evloop::AsyncFd::new(a)?;
    ///     drop(b); // the peer goes away
    ///     a.readable().await?; // a hang-up is readable: a read would return 0
    ///     assert!(a.is_read_closed());
    ///     Ok::<(), std::io::Error>(())
    /// })??;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn is_read_closed(&self) -> bool {
        self.state.readiness() & ready::READ_CLOSED != 0
    }

    /// Forgets readiness for `interest` until the next edge. Call it when a syscall returned
    /// `EAGAIN` (the `*_io` methods do it for you).
    ///
    /// Every bit of that direction goes, not only "readable" or "writable": `EAGAIN` also
    /// proves that no error is pending (the syscall would have returned it) and that the side
    /// is not closed (a read of a closed side returns 0, a write fails with `EPIPE`). A bit
    /// left behind would make the fd look ready forever and `poll_io` spin on `EAGAIN`: the
    /// `ERROR` of an ICMP error a datagram socket once reported, or the hang-up an unconnected
    /// stream socket reports before it is connected.
    ///
    /// ```
    /// use std::io::Write;
    /// use std::os::unix::net::UnixStream;
    /// use evloop::{AsyncFd, Interest};
    ///
    /// evloop::run(async {
    ///     let (a, mut b) = UnixStream::pair()?;
    ///     let a = AsyncFd::new(a)?;
    ///     b.write_all(b"data")?;
    ///     a.readable().await?;
    ///     a.clear_ready(Interest::Read); // as after a read that said EAGAIN
    ///     assert!(!a.is_ready(Interest::Read));
    ///     Ok::<(), std::io::Error>(())
    /// })??;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn clear_ready(&self, interest: Interest) {
        let bits = match interest {
            Interest::Read => ready::READABLE | ready::READ_CLOSED | ready::ERROR,
            Interest::Write => ready::WRITABLE | ready::WRITE_CLOSED | ready::ERROR,
        };
        self.state.clear(bits);
    }

    /// Forgets only "readable" (or "writable") after a short read (write): the kernel's queue
    /// was drained (filled), but a hang-up or error that came with the same edge still holds
    /// and raises no new edge, so it must stay.
    pub(crate) fn clear_after_short_transfer(&self, interest: Interest) {
        self.state.clear(match interest {
            Interest::Read => ready::READABLE,
            Interest::Write => ready::WRITABLE,
        });
    }

    /// Forgets every readiness bit: the operation starting now (a `connect`) makes everything
    /// observed before it stale, and only the next edge says how it went.
    pub(crate) fn reset_readiness(&self) {
        self.state.clear(!0);
    }

    /// `Ready` once the fd is ready for `interest`; otherwise parks the task's waker.
    ///
    /// Errors: the loop the fd is registered with is closed, or it is not the loop running
    /// now ([`WrongLoopError`]: only that loop's poll can report the
    /// fd's events, and it cannot run while another loop does).
    ///
    /// ```
    /// use std::future::poll_fn;
    /// use std::io::Write;
    /// use std::os::unix::net::UnixStream;
    /// use evloop::{AsyncFd, Interest};
    ///
    /// evloop::run(async {
    ///     let (a, mut b) = UnixStream::pair()?;
    ///     let a = AsyncFd::new(a)?;
    ///     b.write_all(b"data")?;
    ///     // What a hand-written future's `poll` does: `Pending` parks the task until the edge.
    ///     poll_fn(|cx| a.poll_ready(cx, Interest::Read)).await?;
    ///     assert!(a.is_ready(Interest::Read));
    ///     Ok::<(), std::io::Error>(())
    /// })??;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[inline(always)]
    pub fn poll_ready(&self, cx: &mut Context<'_>, interest: Interest) -> Poll<io::Result<()>> {
        if self.lp.is_closed() {
            return Poll::Ready(Err(LoopError::new(LoopErrorKind::Closed, "AsyncFd").into()));
        }
        if self.is_ready(interest) {
            return Poll::Ready(Ok(()));
        }
        let op = match interest {
            Interest::Read => "wait for readability",
            Interest::Write => "wait for writability",
        };
        if let Err(e) = WrongLoopError::check(u64::from(self.lp.id), op, || format!("fd {}", self.state.fd())) {
            return Poll::Ready(Err(e.into()));
        }
        match interest {
            Interest::Read => self.state.set_reader(cx.waker()),
            Interest::Write => self.state.set_writer(cx.waker()),
        }
        note_awaiting(Awaiting::Fd(self.state.fd()));
        Poll::Pending
    }

    /// Waits until the fd is ready for `interest`.
    ///
    /// ```
    /// use std::io::Write;
    /// use std::os::unix::net::UnixStream;
    /// use evloop::{AsyncFd, Interest};
    ///
    /// evloop::run(async {
    ///     let (a, mut b) = UnixStream::pair()?;
    ///     let a = AsyncFd::new(a)?;
    ///     evloop::spawn(async move { b.write_all(b"later") });
    ///     a.ready(Interest::Read).await?; // until the task wrote
    ///     assert!(a.is_ready(Interest::Read));
    ///     Ok::<(), std::io::Error>(())
    /// })??;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub async fn ready(&self, interest: Interest) -> io::Result<()> {
        poll_fn(|cx| self.poll_ready(cx, interest)).await
    }

    /// Waits for readability.
    ///
    /// ```
    /// use std::io::{Read, Write};
    /// use std::os::unix::net::UnixStream;
    ///
    /// evloop::run(async {
    ///     let (a, mut b) = UnixStream::pair()?;
    ///     let mut a = evloop::AsyncFd::new(a)?;
    ///     b.write_all(b"hi")?;
    ///     a.readable().await?;
    ///     let mut buf = [0; 2];
    ///     a.get_mut().read_exact(&mut buf)?; // will not block now
    ///     assert_eq!(&buf, b"hi");
    ///     Ok::<(), std::io::Error>(())
    /// })??;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub async fn readable(&self) -> io::Result<()> {
        self.ready(Interest::Read).await
    }

    /// Waits for writability.
    ///
    /// ```
    /// use std::io::Write;
    /// use std::os::unix::net::UnixStream;
    ///
    /// evloop::run(async {
    ///     let (a, _b) = UnixStream::pair()?;
    ///     let mut a = evloop::AsyncFd::new(a)?;
    ///     a.writable().await?;
    ///     assert_eq!(a.get_mut().write(b"room")?, 4);
    ///     Ok::<(), std::io::Error>(())
    /// })??;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub async fn writable(&self) -> io::Result<()> {
        self.ready(Interest::Write).await
    }

    /// Runs the non-blocking operation `f` when the fd is ready for `interest`; on
    /// `WouldBlock` clears readiness and waits for the next edge. `f` must perform exactly one
    /// syscall on the fd (its `WouldBlock` is what proves the fd not ready).
    ///
    /// ```
    /// use std::future::poll_fn;
    /// use std::io::{Read, Write};
    /// use std::os::unix::net::UnixStream;
    /// use evloop::{AsyncFd, Interest};
    ///
    /// evloop::run(async {
    ///     let (a, mut b) = UnixStream::pair()?;
    ///     let a = AsyncFd::new(a)?;
    ///     b.write_all(b"poll")?;
    ///     let mut buf = [0; 8];
    ///     // The building block of a hand-written `AsyncRead::poll_read`.
    ///     let n = poll_fn(|cx| a.poll_io(cx, Interest::Read, |mut s| s.read(&mut buf))).await?;
    ///     assert_eq!(&buf[..n], b"poll");
    ///     Ok::<(), std::io::Error>(())
    /// })??;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[inline(always)]
    pub fn poll_io<R>(
        &self,
        cx: &mut Context<'_>,
        interest: Interest,
        mut f: impl FnMut(&T) -> io::Result<R>,
    ) -> Poll<io::Result<R>> {
        loop {
            match self.poll_ready(cx, interest) {
                Poll::Ready(Ok(())) => {}
                Poll::Ready(Err(e)) => return Poll::Ready(Err(e)),
                Poll::Pending => return Poll::Pending,
            }
            match f(self.get_ref()) {
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => self.clear_ready(interest),
                other => return Poll::Ready(other),
            }
        }
    }

    /// `poll_io` as an async function.
    ///
    /// ```
    /// use std::io::{Read, Write};
    /// use std::os::unix::net::UnixStream;
    /// use evloop::{AsyncFd, Interest};
    ///
    /// evloop::run(async {
    ///     let (a, b) = UnixStream::pair()?;
    ///     let (a, b) = (AsyncFd::new(a)?, AsyncFd::new(b)?);
    ///     let sent = b.io(Interest::Write, |mut s| s.write(b"one syscall")).await?;
    ///     let mut buf = [0; 32];
    ///     let got = a.io(Interest::Read, |mut s| s.read(&mut buf)).await?;
    ///     assert_eq!(&buf[..got], &b"one syscall"[..sent]);
    ///     Ok::<(), std::io::Error>(())
    /// })??;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub async fn io<R>(&self, interest: Interest, mut f: impl FnMut(&T) -> io::Result<R>) -> io::Result<R> {
        poll_fn(|cx| self.poll_io(cx, interest, &mut f)).await
    }

    /// Runs `f` once if the fd is ready for `interest`, without waiting: `WouldBlock` if it is
    /// not (readiness is cleared when `f` says `WouldBlock`).
    ///
    /// ```
    /// use std::io::{ErrorKind, Read, Write};
    /// use std::os::unix::net::UnixStream;
    /// use evloop::{AsyncFd, Interest};
    ///
    /// evloop::run(async {
    ///     let (a, mut b) = UnixStream::pair()?;
    ///     let a = AsyncFd::new(a)?;
    ///     let mut buf = [0; 8];
    ///     // Not known to be readable: no syscall, `WouldBlock`.
    ///     let err = a.try_io(Interest::Read, |mut s| s.read(&mut buf)).unwrap_err();
    ///     assert_eq!(err.kind(), ErrorKind::WouldBlock);
    ///     b.write_all(b"now")?;
    ///     a.readable().await?;
    ///     assert_eq!(a.try_io(Interest::Read, |mut s| s.read(&mut buf))?, 3);
    ///     Ok::<(), std::io::Error>(())
    /// })??;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn try_io<R>(&self, interest: Interest, f: impl FnOnce(&T) -> io::Result<R>) -> io::Result<R> {
        if !self.is_ready(interest) {
            return Err(io::ErrorKind::WouldBlock.into());
        }
        let r = f(self.get_ref());
        if matches!(&r, Err(e) if e.kind() == io::ErrorKind::WouldBlock) {
            self.clear_ready(interest);
        }
        r
    }
}

/// A failed I/O call's error with the operation and the fd it concerns (`recv(fd 7): Connection
/// reset by peer`), as every evloop error names them. `WouldBlock` passes through untouched: it
/// is the readiness protocol's signal, matched on by kind, never shown to a user.
#[inline]
pub(crate) fn fd_context<T>(op: &str, fd: RawFd, r: Poll<io::Result<T>>) -> Poll<io::Result<T>> {
    match r {
        Poll::Ready(Err(e)) if e.kind() != io::ErrorKind::WouldBlock => {
            Poll::Ready(Err(crate::event_loop::error::with_context(format!("{op}(fd {fd})"), e)))
        }
        other => other,
    }
}

impl<T: AsFd> AsFd for AsyncFd<T> {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.get_ref().as_fd()
    }
}

impl<T: AsFd> Drop for AsyncFd<T> {
    fn drop(&mut self) {
        if self.inner.is_some() {
            // Deregister first: epoll tracks the open file description, which a dup'ed fd could
            // keep alive after the close below.
            self.lp.deregister_io(&self.state);
        }
    }
}

impl<T: AsFd> std::fmt::Debug for AsyncFd<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "AsyncFd(fd {}, readiness {:#07b})",
            self.state.fd(),
            self.state.readiness()
        )
    }
}

// ---------------------------------------------------------------------------------------------
// The byte-stream traits.

/// Reading bytes asynchronously (evloop's own trait: the runtime has no dependencies).
///
/// ```
/// use std::io;
/// use std::pin::Pin;
/// use std::task::{Context, Poll};
/// use evloop::{AsyncRead, AsyncReadExt};
///
/// /// Reads as an endless run of zero bytes, like `/dev/zero`.
/// struct Zeros;
///
/// impl AsyncRead for Zeros {
///     fn poll_read(self: Pin<&mut Self>, _cx: &mut Context<'_>, buf: &mut [u8]) -> Poll<io::Result<usize>> {
///         buf.fill(0);
///         Poll::Ready(Ok(buf.len()))
///     }
/// }
///
/// let buf = evloop::run(async {
///     let mut buf = [1u8; 4];
///     Zeros.read_exact(&mut buf).await?; // every reader gets the `AsyncReadExt` helpers
///     Ok::<_, io::Error>(buf)
/// })??;
/// assert_eq!(buf, [0; 4]);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub trait AsyncRead {
    /// Reads into `buf`: `Ready(Ok(0))` means end of stream (or an empty `buf`).
    ///
    /// ```
    /// use std::future::poll_fn;
    /// use std::pin::Pin;
    /// use evloop::AsyncRead;
    ///
    /// evloop::run(async {
    ///     let mut src: &[u8] = b"abc"; // `&[u8]` is an in-memory reader
    ///     let mut buf = [0; 2];
    ///     let n = poll_fn(|cx| Pin::new(&mut src).poll_read(cx, &mut buf)).await?;
    ///     assert_eq!(&buf[..n], b"ab");
    ///     assert_eq!(src, b"c");
    ///     Ok::<(), std::io::Error>(())
    /// })??;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut [u8]) -> Poll<io::Result<usize>>;
}

/// Writing bytes asynchronously.
///
/// ```
/// use std::io;
/// use std::pin::Pin;
/// use std::task::{Context, Poll};
/// use evloop::{AsyncWrite, AsyncWriteExt};
///
/// /// Counts the bytes written to it and throws them away.
/// #[derive(Default)]
/// struct Counter(usize);
///
/// impl AsyncWrite for Counter {
///     fn poll_write(mut self: Pin<&mut Self>, _cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
///         self.0 += buf.len();
///         Poll::Ready(Ok(buf.len()))
///     }
///     fn poll_shutdown(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
///         Poll::Ready(Ok(()))
///     }
/// }
///
/// let written = evloop::run(async {
///     let mut counter = Counter::default();
///     counter.write_all(b"hello world").await?; // every writer gets the `AsyncWriteExt` helpers
///     Ok::<_, io::Error>(counter.0)
/// })??;
/// assert_eq!(written, 11);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub trait AsyncWrite {
    /// Writes some of `buf`; returns how much.
    ///
    /// ```
    /// use std::future::poll_fn;
    /// use std::pin::Pin;
    /// use evloop::AsyncWrite;
    ///
    /// evloop::run(async {
    ///     let mut out = Vec::new(); // `Vec<u8>` is an in-memory writer
    ///     let n = poll_fn(|cx| Pin::new(&mut out).poll_write(cx, b"bytes")).await?;
    ///     assert_eq!((n, &out[..]), (5, &b"bytes"[..]));
    ///     Ok::<(), std::io::Error>(())
    /// })??;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>>;

    /// Writes from several buffers at once (`writev`/`sendmsg` where the type supports it).
    ///
    /// ```
    /// use std::future::poll_fn;
    /// use std::io::IoSlice;
    /// use std::pin::Pin;
    /// use evloop::net::UnixStream;
    /// use evloop::{AsyncReadExt, AsyncWrite};
    ///
    /// evloop::run(async {
    ///     let (mut a, mut b) = UnixStream::pair()?;
    ///     let bufs = [IoSlice::new(b"head "), IoSlice::new(b"body")];
    ///     // A socket sends both buffers with one `sendmsg`.
    ///     let n = poll_fn(|cx| Pin::new(&mut a).poll_write_vectored(cx, &bufs)).await?;
    ///     assert_eq!(n, 9);
    ///     let mut got = [0; 9];
    ///     b.read_exact(&mut got).await?;
    ///     assert_eq!(&got, b"head body");
    ///     Ok::<(), std::io::Error>(())
    /// })??;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let first = bufs.iter().find(|b| !b.is_empty()).map_or(&[][..], |b| &**b);
        self.poll_write(cx, first)
    }

    /// Flushes buffered data (unbuffered types return `Ready(Ok(()))`).
    ///
    /// ```
    /// use std::future::poll_fn;
    /// use std::pin::Pin;
    /// use evloop::io::BufWriter;
    /// use evloop::{AsyncWrite, AsyncWriteExt};
    ///
    /// evloop::run(async {
    ///     let mut w = BufWriter::new(Vec::new());
    ///     w.write_all(b"buffered").await?;
    ///     assert!(w.get_ref().is_empty()); // still in the BufWriter
    ///     poll_fn(|cx| Pin::new(&mut w).poll_flush(cx)).await?;
    ///     assert_eq!(w.get_ref(), b"buffered");
    ///     Ok::<(), std::io::Error>(())
    /// })??;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    fn poll_flush(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    /// Shuts the write side down (TCP FIN), after flushing.
    ///
    /// ```
    /// use std::future::poll_fn;
    /// use std::pin::Pin;
    /// use evloop::net::UnixStream;
    /// use evloop::{AsyncReadExt, AsyncWrite};
    ///
    /// evloop::run(async {
    ///     let (mut a, mut b) = UnixStream::pair()?;
    ///     poll_fn(|cx| Pin::new(&mut a).poll_shutdown(cx)).await?; // shutdown(SHUT_WR)
    ///     assert_eq!(b.read(&mut [0; 8]).await?, 0); // the peer reads end of stream
    ///     Ok::<(), std::io::Error>(())
    /// })??;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>>;
}

impl<R: AsyncRead + Unpin + ?Sized> AsyncRead for &mut R {
    fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut [u8]) -> Poll<io::Result<usize>> {
        Pin::new(&mut **self).poll_read(cx, buf)
    }
}

impl<W: AsyncWrite + Unpin + ?Sized> AsyncWrite for &mut W {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        Pin::new(&mut **self).poll_write(cx, buf)
    }
    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut **self).poll_write_vectored(cx, bufs)
    }
    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut **self).poll_flush(cx)
    }
    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut **self).poll_shutdown(cx)
    }
}

/// The async helpers every reader gets: `read`, `read_exact`, `read_to_end`.
///
/// ```
/// use evloop::AsyncReadExt;
///
/// evloop::run(async {
///     let mut src: &[u8] = b"header:body";
///     let mut head = [0; 7];
///     src.read_exact(&mut head).await?;
///     let mut rest = Vec::new();
///     src.read_to_end(&mut rest).await?;
///     assert_eq!((&head[..], &rest[..]), (&b"header:"[..], &b"body"[..]));
///     Ok::<(), std::io::Error>(())
/// })??;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
// Single-threaded runtime: the futures of these methods are never required to be `Send`, so
// the usual caveat about `async fn` in public traits does not apply.
#[allow(async_fn_in_trait)]
pub trait AsyncReadExt: AsyncRead + Unpin {
    /// Reads some bytes into `buf`; 0 means end of stream.
    ///
    /// ```
    /// use evloop::net::UnixStream;
    /// use evloop::{AsyncReadExt, AsyncWriteExt};
    ///
    /// evloop::run(async {
    ///     let (mut a, mut b) = UnixStream::pair()?;
    ///     a.write_all(b"some bytes").await?;
    ///     let mut buf = [0; 64];
    ///     let n = b.read(&mut buf).await?; // what is there, at least one byte
    ///     assert_eq!(&buf[..n], b"some bytes");
    ///     drop(a);
    ///     assert_eq!(b.read(&mut buf).await?, 0); // end of stream
    ///     Ok::<(), std::io::Error>(())
    /// })??;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    async fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        poll_fn(|cx| Pin::new(&mut *self).poll_read(cx, buf)).await
    }

    /// Fills `buf` completely; `UnexpectedEof` if the stream ends first.
    ///
    /// ```
    /// use std::io::ErrorKind;
    /// use evloop::AsyncReadExt;
    ///
    /// evloop::run(async {
    ///     let mut src: &[u8] = b"12345";
    ///     let mut four = [0; 4];
    ///     src.read_exact(&mut four).await?;
    ///     assert_eq!(&four, b"1234");
    ///     let err = src.read_exact(&mut four).await.unwrap_err(); // only one byte left
    ///     assert_eq!(err.kind(), ErrorKind::UnexpectedEof);
    ///     Ok::<(), std::io::Error>(())
    /// })??;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    async fn read_exact(&mut self, buf: &mut [u8]) -> io::Result<()> {
        let mut done = 0;
        while done < buf.len() {
            let n = self.read(&mut buf[done..]).await?;
            if n == 0 {
                return Err(io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    format!("read_exact: the stream ended after {done} of {} bytes", buf.len()),
                ));
            }
            done += n;
        }
        Ok(())
    }

    /// Reads until end of stream, appending to `out`; returns how many bytes were read.
    ///
    /// ```
    /// use evloop::net::UnixStream;
    /// use evloop::{AsyncReadExt, AsyncWriteExt};
    ///
    /// evloop::run(async {
    ///     let (mut a, mut b) = UnixStream::pair()?;
    ///     evloop::spawn(async move {
    ///         a.write_all(b"everything").await?;
    ///         a.shutdown().await // end of stream for the reader
    ///     });
    ///     let mut all = Vec::new();
    ///     assert_eq!(b.read_to_end(&mut all).await?, 10);
    ///     assert_eq!(all, b"everything");
    ///     Ok::<(), std::io::Error>(())
    /// })??;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    async fn read_to_end(&mut self, out: &mut Vec<u8>) -> io::Result<usize> {
        let start = out.len();
        let mut chunk = [0u8; 8192];
        loop {
            let n = self.read(&mut chunk).await?;
            if n == 0 {
                return Ok(out.len() - start);
            }
            out.extend_from_slice(&chunk[..n]);
        }
    }
}

impl<R: AsyncRead + Unpin + ?Sized> AsyncReadExt for R {}

/// The async helpers every writer gets: `write`, `write_all`, `write_vectored`, `flush`,
/// `shutdown`.
///
/// ```
/// use evloop::AsyncWriteExt;
///
/// evloop::run(async {
///     let mut out = Vec::new();
///     out.write_all(b"hello, ").await?;
///     out.write_all(b"world").await?;
///     out.flush().await?;
///     assert_eq!(out, b"hello, world");
///     Ok::<(), std::io::Error>(())
/// })??;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[allow(async_fn_in_trait)]
pub trait AsyncWriteExt: AsyncWrite + Unpin {
    /// Writes some of `buf`; returns how much.
    ///
    /// ```
    /// use evloop::net::UnixStream;
    /// use evloop::{AsyncReadExt, AsyncWriteExt};
    ///
    /// evloop::run(async {
    ///     let (mut a, mut b) = UnixStream::pair()?;
    ///     let n = a.write(b"maybe not all").await?; // some of it: loop, or use write_all
    ///     let mut buf = vec![0; n];
    ///     b.read_exact(&mut buf).await?;
    ///     assert_eq!(buf, &b"maybe not all"[..n]);
    ///     Ok::<(), std::io::Error>(())
    /// })??;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    async fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        poll_fn(|cx| Pin::new(&mut *self).poll_write(cx, buf)).await
    }

    /// Writes all of `buf`; `WriteZero` if the writer stops accepting bytes.
    ///
    /// ```
    /// use evloop::net::UnixStream;
    /// use evloop::{AsyncReadExt, AsyncWriteExt};
    ///
    /// evloop::run(async {
    ///     let (mut a, mut b) = UnixStream::pair()?;
    ///     let big = vec![7u8; 1 << 20]; // more than the socket buffer holds
    ///     let writer = evloop::spawn(async move { a.write_all(&big).await }); // waits for room
    ///     let mut got = Vec::new();
    ///     let mut chunk = [0; 65536];
    ///     while got.len() < 1 << 20 {
    ///         let n = b.read(&mut chunk).await?;
    ///         got.extend_from_slice(&chunk[..n]);
    ///     }
    ///     writer.await??;
    ///     assert!(got.iter().all(|&b| b == 7));
    ///     Ok::<(), Box<dyn std::error::Error>>(())
    /// })??;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    async fn write_all(&mut self, mut buf: &[u8]) -> io::Result<()> {
        while !buf.is_empty() {
            let n = self.write(buf).await?;
            if n == 0 {
                return Err(io::Error::new(
                    io::ErrorKind::WriteZero,
                    "write_all: the writer accepted 0 bytes",
                ));
            }
            buf = &buf[n..];
        }
        Ok(())
    }

    /// Writes from several buffers in one call where the writer supports it.
    ///
    /// ```
    /// use std::io::IoSlice;
    /// use evloop::AsyncWriteExt;
    ///
    /// evloop::run(async {
    ///     let mut out = Vec::new();
    ///     let n = out.write_vectored(&[IoSlice::new(b"a"), IoSlice::new(b"bc")]).await?;
    ///     assert_eq!((n, &out[..]), (3, &b"abc"[..]));
    ///     Ok::<(), std::io::Error>(())
    /// })??;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    async fn write_vectored(&mut self, bufs: &[IoSlice<'_>]) -> io::Result<usize> {
        poll_fn(|cx| Pin::new(&mut *self).poll_write_vectored(cx, bufs)).await
    }

    /// Flushes buffered data.
    ///
    /// ```
    /// use evloop::io::BufWriter;
    /// use evloop::AsyncWriteExt;
    ///
    /// evloop::run(async {
    ///     let mut w = BufWriter::new(Vec::new());
    ///     w.write_all(b"line\n").await?;
    ///     assert!(w.get_ref().is_empty()); // held in the buffer
    ///     w.flush().await?;
    ///     assert_eq!(w.get_ref(), b"line\n");
    ///     Ok::<(), std::io::Error>(())
    /// })??;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    async fn flush(&mut self) -> io::Result<()> {
        poll_fn(|cx| Pin::new(&mut *self).poll_flush(cx)).await
    }

    /// Shuts the write side down (half-close).
    ///
    /// ```
    /// use evloop::net::UnixStream;
    /// use evloop::{AsyncReadExt, AsyncWriteExt};
    ///
    /// evloop::run(async {
    ///     let (mut a, mut b) = UnixStream::pair()?;
    ///     a.write_all(b"last words").await?;
    ///     a.shutdown().await?; // half-close: `a` can still read
    ///     let mut got = Vec::new();
    ///     b.read_to_end(&mut got).await?; // everything, then end of stream
    ///     assert_eq!(got, b"last words");
    ///     b.write_all(b"reply").await?;
    ///     let mut reply = [0; 5];
    ///     a.read_exact(&mut reply).await?;
    ///     assert_eq!(&reply, b"reply");
    ///     Ok::<(), std::io::Error>(())
    /// })??;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    async fn shutdown(&mut self) -> io::Result<()> {
        poll_fn(|cx| Pin::new(&mut *self).poll_shutdown(cx)).await
    }
}

impl<W: AsyncWrite + Unpin + ?Sized> AsyncWriteExt for W {}
