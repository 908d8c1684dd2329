//! [`AsyncFd`]: one non-blocking fd registered with the loop's reactor, and [`Interest`], the
//! direction an operation waits for.
//!
//! An `AsyncFd` registers its fd once and keeps the registration until it is dropped; every
//! wait reads the readiness bits the reactor ORs into the registration and parks the task's
//! waker there when the bit it needs is clear (the protocol is in the [`crate::io`] module
//! documentation). The typed sockets, the pipe ends and the `sock_*` API are built on it.

use std::future::poll_fn;
use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, RawFd};
use std::rc::Rc;
use std::task::{Context, Poll, ready};

use crate::event_loop::budget;
use crate::event_loop::error::{LoopError, LoopErrorKind, WrongLoopError};
use crate::event_loop::reactor::{IoState, ready};
use crate::event_loop::trace::{Awaiting, note_awaiting};
use crate::event_loop::{LoopHandle, LoopInner, with_running};
use crate::io::Ready;

/// Which direction an operation needs.
///
/// ```
/// use std::os::unix::net::UnixStream;
/// use evloop::io::{AsyncFd, Interest};
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
/// use evloop::io::{AsyncFd, Interest};
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
    /// use evloop::io::AsyncFd;
    ///
    /// let (a, _b) = UnixStream::pair()?;
    /// assert!(AsyncFd::new(a.try_clone()?).is_err()); // no loop is running here
    /// evloop::run(async move {
    ///     let a = AsyncFd::new(a)?;
    ///     a.writable().await.map(drop) // the readiness guard, dropped
    /// })??;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn new(inner: T) -> io::Result<AsyncFd<T>> {
        Self::try_new(inner).map_err(io::Error::from)
    }

    /// [`new`](Self::new) with tokio's interest argument. evloop registers every fd once for
    /// both directions (`EPOLLIN|EPOLLOUT|EPOLLRDHUP|EPOLLET`, no `epoll_ctl` after that), and
    /// `EPOLLERR`/`EPOLLHUP` are always reported, so the interest narrows nothing: any wait
    /// works on any `AsyncFd`. An empty set is refused, as tokio cannot even spell it.
    ///
    /// ```
    /// use std::os::unix::net::UnixStream;
    /// use evloop::io::{AsyncFd, Interest};
    ///
    /// evloop::run(async {
    ///     let (a, _b) = UnixStream::pair()?;
    ///     let a = AsyncFd::with_interest(a, Interest::READABLE | Interest::WRITABLE)?;
    ///     a.writable().await?.clear_ready();
    ///     Ok::<(), std::io::Error>(())
    /// })??;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn with_interest(inner: T, interest: impl Into<Ready>) -> io::Result<AsyncFd<T>> {
        Self::try_with_interest(inner, interest).map_err(io::Error::from)
    }

    /// [`new`](Self::new) that gives `inner` back when it fails (tokio's `try_new`): no loop
    /// runs on this thread, the fd cannot be made non-blocking, or epoll refuses it (a regular
    /// file: `EPERM`).
    ///
    /// ```
    /// use evloop::io::AsyncFd;
    ///
    /// evloop::run(async {
    ///     let file = std::fs::File::open("/dev/null")?; // epoll cannot watch it
    ///     let err = AsyncFd::try_new(file).unwrap_err();
    ///     let (file, cause) = err.into_parts();
    ///     assert_eq!(cause.kind(), std::io::ErrorKind::PermissionDenied); // EPERM
    ///     assert!(file.metadata().is_ok()); // still ours, still open
    ///     Ok::<(), std::io::Error>(())
    /// })??;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn try_new(inner: T) -> Result<AsyncFd<T>, AsyncFdTryNewError<T>> {
        Self::try_new_with(inner, false)
    }

    fn try_new_with(inner: T, priority: bool) -> Result<AsyncFd<T>, AsyncFdTryNewError<T>> {
        match with_running(Rc::clone) {
            Some(lp) => Self::register(lp, inner, priority),
            None => Err(AsyncFdTryNewError {
                inner,
                cause: no_loop("AsyncFd::new"),
            }),
        }
    }

    /// [`with_interest`](Self::with_interest) that gives `inner` back when it fails.
    ///
    /// ```
    /// use std::os::unix::net::UnixStream;
    /// use evloop::io::{AsyncFd, Interest};
    ///
    /// let (a, _b) = UnixStream::pair()?;
    /// let err = AsyncFd::try_with_interest(a, Interest::READABLE).unwrap_err(); // no loop here
    /// let (a, _cause) = err.into_parts();
    /// assert!(a.peer_addr().is_ok());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn try_with_interest(inner: T, interest: impl Into<Ready>) -> Result<AsyncFd<T>, AsyncFdTryNewError<T>> {
        let interest = interest.into();
        if interest.wait_bits() == 0 {
            return Err(AsyncFdTryNewError {
                inner,
                cause: io::Error::new(
                    io::ErrorKind::InvalidInput,
                    "AsyncFd::with_interest: an empty interest set",
                ),
            });
        }
        // Exceptional conditions are the one event epoll reports only when asked.
        Self::try_new_with(inner, interest.is_priority())
    }

    /// Registers `inner` with `lp` (which need not be running yet).
    ///
    /// ```
    /// use std::io::Write;
    /// use std::os::unix::net::UnixStream;
    /// use evloop::{event_loop::EventLoop, io::AsyncFd};
    ///
    /// let lp = EventLoop::new()?;
    /// let (a, mut b) = UnixStream::pair()?;
    /// let a = AsyncFd::with_loop(&lp, a)?; // registered before the loop runs
    /// b.write_all(b"x")?;
    /// lp.run_until_complete(async move { a.readable().await.map(drop) })??;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn with_loop(lp: &LoopHandle, inner: T) -> io::Result<AsyncFd<T>> {
        Self::register(lp.inner.clone(), inner, false).map_err(io::Error::from)
    }

    fn register(lp: Rc<LoopInner>, inner: T, priority: bool) -> Result<AsyncFd<T>, AsyncFdTryNewError<T>> {
        if let Err(cause) = evloop_syscalls::set_nonblocking(inner.as_fd(), true) {
            return Err(AsyncFdTryNewError { inner, cause });
        }
        match lp.register_io_with(inner.as_fd().as_raw_fd(), priority) {
            Ok(state) => Ok(AsyncFd {
                state,
                lp,
                inner: Some(inner),
            }),
            Err(cause) => Err(AsyncFdTryNewError { inner, cause }),
        }
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
    ///     let a = evloop::io::AsyncFd::new(a)?;
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
    ///     let mut a = evloop::io::AsyncFd::new(a)?;
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
    ///     let a = evloop::io::AsyncFd::new(a)?;
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
    ///     let a = evloop::io::AsyncFd::new(a)?;
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
    /// use evloop::io::{AsyncFd, Interest};
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

    /// The readiness bits the last events left (`ready::*`; `TcpStream::ready` reports them).
    pub(crate) fn readiness(&self) -> u8 {
        self.state.readiness()
    }

    /// Whether the peer closed its side (EPOLLRDHUP/EPOLLHUP seen).
    ///
    /// ```
    /// use std::os::unix::net::UnixStream;
    ///
    /// evloop::run(async {
    ///     let (a, b) = UnixStream::pair()?;
    ///     let a = evloop::io::AsyncFd::new(a)?;
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
    /// use evloop::io::{AsyncFd, Interest};
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

    /// `Ready` once the fd is ready for `interest`; otherwise parks the task's waker. A task
    /// that already completed 128 ready operations in this step gets `Pending` even when the
    /// fd is ready, with its waker woken: it continues in the next iteration, after timers and
    /// I/O (tokio's coop budget; see chapter 9.4 of the book).
    ///
    /// Errors: the loop the fd is registered with is closed, or it is not the loop running
    /// now ([`WrongLoopError`]: only that loop's poll can report the
    /// fd's events, and it cannot run while another loop does).
    ///
    /// ```
    /// use std::future::poll_fn;
    /// use std::io::Write;
    /// use std::os::unix::net::UnixStream;
    /// use evloop::io::{AsyncFd, Interest};
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
            // The operation can go ahead at once: it spends the task's budget for this step,
            // so a peer that never lets the fd run dry cannot keep the task in one step.
            ready!(budget::poll_proceed(cx));
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

    /// Waits until the fd is ready for `interest`, keeping the readiness: what `ready` was
    /// before it returned a guard, and what the sockets' own `readable`/`writable` still are.
    pub(crate) async fn wait(&self, interest: Interest) -> io::Result<()> {
        poll_fn(|cx| self.poll_ready(cx, interest)).await
    }

    /// The wait under every tokio-shaped readiness method (`async_fd_wait.rs`): `Ready` with
    /// the events of `want` that are set, and the tick they were seen at, once one is;
    /// otherwise parks the task's waker on each side `want` names: with the side's other
    /// waiters (`polled` false, the async waits), or in its one `polled` slot, replacing the
    /// waker of an earlier call (`polled` true: tokio's `poll_read_ready`/`poll_write_ready`
    /// wake only the most recent caller). An error alone is waited for on the reading side
    /// (the reactor wakes both sides on `EPOLLERR`).
    pub(super) fn poll_ready_event(
        &self,
        cx: &mut Context<'_>,
        want: Ready,
        polled: bool,
    ) -> Poll<io::Result<ReadyEvent>> {
        if self.lp.is_closed() {
            return Poll::Ready(Err(LoopError::new(LoopErrorKind::Closed, "AsyncFd").into()));
        }
        let mask = want.wait_bits();
        if mask == 0 {
            let msg = "AsyncFd: a wait on an empty interest set";
            return Poll::Ready(Err(io::Error::new(io::ErrorKind::InvalidInput, msg)));
        }
        let seen = self.state.readiness() & mask;
        if seen != 0 {
            ready!(budget::poll_proceed(cx));
            return Poll::Ready(Ok(ReadyEvent {
                ready: Ready::from_bits(seen),
                mask,
                tick: self.state.tick(),
            }));
        }
        let op = "wait for readiness";
        if let Err(e) = WrongLoopError::check(u64::from(self.lp.id), op, || format!("fd {}", self.state.fd())) {
            return Poll::Ready(Err(e.into()));
        }
        let write = mask & (ready::WRITABLE | ready::WRITE_CLOSED) != 0;
        let read = mask & (ready::READABLE | ready::READ_CLOSED) != 0 || !write;
        let waker = cx.waker();
        match (read, polled) {
            (false, _) => {}
            (true, true) => self.state.set_polled(true, waker),
            (true, false) => self.state.set_reader(waker),
        }
        match (write, polled) {
            (false, _) => {}
            (true, true) => self.state.set_polled(false, waker),
            (true, false) => self.state.set_writer(waker),
        }
        note_awaiting(Awaiting::Fd(self.state.fd()));
        Poll::Pending
    }

    /// Forgets the readiness a guard saw (`bits`), unless an event came after it (`tick`).
    pub(super) fn clear_seen(&self, tick: u32, bits: u8) {
        self.state.clear_at(tick, bits);
    }

    /// Forgets `bits` whatever came since: an `EAGAIN` just proved them stale.
    pub(super) fn clear_bits(&self, bits: u8) {
        self.state.clear(bits);
    }

    /// Runs the non-blocking operation `f` when the fd is ready for `interest`; on
    /// `WouldBlock` clears readiness and waits for the next edge. `f` must perform exactly one
    /// syscall on the fd (its `WouldBlock` is what proves the fd not ready).
    ///
    /// ```
    /// use std::future::poll_fn;
    /// use std::io::{Read, Write};
    /// use std::os::unix::net::UnixStream;
    /// use evloop::io::{AsyncFd, Interest};
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
    /// use evloop::io::{AsyncFd, Interest};
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
    /// use evloop::io::{AsyncFd, Interest};
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

/// What a readiness wait saw (kept by the guards): the events it asked for that were set,
/// the reactor bits it asked for (`mask`), and the registration's tick at that moment.
#[derive(Copy, Clone, Debug)]
pub(super) struct ReadyEvent {
    pub(super) ready: Ready,
    pub(super) mask: u8,
    pub(super) tick: u32,
}

/// The error of [`AsyncFd::try_new`] and [`AsyncFd::try_with_interest`]: why the
/// registration failed, and the value that was to be registered (tokio's
/// `AsyncFdTryNewError`). It converts into the `io::Error` (dropping the value), so `?` works
/// in a function returning `io::Result`.
///
/// ```
/// use std::os::unix::net::UnixStream;
/// use evloop::io::AsyncFd;
///
/// let (a, _b) = UnixStream::pair()?;
/// let err = AsyncFd::try_new(a).unwrap_err(); // no loop runs on this thread
/// assert!(err.to_string().contains("no event loop is running"));
/// let io_err: std::io::Error = err.into(); // the cause; the socket is closed with the value
/// assert_eq!(io_err.kind(), std::io::ErrorKind::Other);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct AsyncFdTryNewError<T> {
    inner: T,
    cause: io::Error,
}

impl<T> AsyncFdTryNewError<T> {
    /// The value that was not registered, and why.
    ///
    /// ```
    /// use std::os::unix::net::UnixStream;
    ///
    /// let (a, _b) = UnixStream::pair()?;
    /// let (a, cause) = evloop::io::AsyncFd::try_new(a).unwrap_err().into_parts();
    /// assert!(a.peer_addr().is_ok() && cause.to_string().contains("AsyncFd::new"));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn into_parts(self) -> (T, io::Error) {
        (self.inner, self.cause)
    }
}

impl<T> std::fmt::Display for AsyncFdTryNewError<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.cause.fmt(f)
    }
}

impl<T> std::fmt::Debug for AsyncFdTryNewError<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.cause.fmt(f)
    }
}

impl<T> std::error::Error for AsyncFdTryNewError<T> {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.cause)
    }
}

impl<T> From<AsyncFdTryNewError<T>> for io::Error {
    fn from(e: AsyncFdTryNewError<T>) -> io::Error {
        e.cause
    }
}

/// A failed I/O call's error with the operation and the fd it concerns (`recv(fd 7): Connection
/// reset by peer`), as every evloop error names them. `WouldBlock` passes through untouched: it
/// is the readiness protocol's signal, matched on by kind, never shown to a user.
#[inline]
pub(crate) fn fd_context<T>(op: &str, fd: RawFd, r: Poll<io::Result<T>>) -> Poll<io::Result<T>> {
    match r {
        Poll::Ready(Err(e)) if e.kind() != io::ErrorKind::WouldBlock => {
            Poll::Ready(Err(crate::io::error::with_context(format!("{op}(fd {fd})"), e)))
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
