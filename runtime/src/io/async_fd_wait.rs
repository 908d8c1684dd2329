//! [`AsyncFd`]'s tokio-shaped waits: `readable`, `writable`, `ready` and their `_mut` forms,
//! the poll forms `poll_read_ready`/`poll_write_ready`, and `async_io`, each ending with a
//! readiness guard (`async_fd_guard.rs`).
//!
//! Every wait goes to `AsyncFd::poll_ready_event` (`async_fd.rs`), which reads the
//! registration's readiness bits and parks the waker when none it asks for is set; the guard
//! then carries the events seen and the registration's tick. The async waits join the side's
//! other waiters (an event wakes them all); the poll forms keep one waker per side, the most
//! recent caller's, as tokio documents.

use std::future::poll_fn;
use std::io;
use std::os::fd::AsFd;
use std::task::{Context, Poll};

use crate::io::{AsyncFd, AsyncFdReadyGuard, AsyncFdReadyMutGuard, Ready};

impl<T: AsFd> AsyncFd<T> {
    /// Waits until the fd is ready for one of `interest` (an [`Interest`](crate::io::Interest),
    /// several joined with `|`, or [`Interest::ERROR`](crate::io::Interest::ERROR)), and returns
    /// the guard of what was seen (tokio's `ready`). Readiness persists until cleared: see
    /// [`AsyncFdReadyGuard`].
    ///
    /// Errors: the loop is closed, or it is not the loop running now.
    ///
    /// ```
    /// use std::io::Write;
    /// use std::os::unix::net::UnixStream;
    /// use evloop::io::{AsyncFd, Interest};
    ///
    /// evloop::run(async {
    ///     let (a, mut b) = UnixStream::pair()?;
    ///     let a = AsyncFd::new(a)?;
    ///     evloop::spawn(async move { b.write_all(b"later") }); // and drops `b`: a hang-up too
    ///     let guard = a.ready(Interest::READABLE).await?; // until the task wrote
    ///     assert!(guard.ready().is_readable());
    ///     Ok::<(), std::io::Error>(())
    /// })??;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub async fn ready(&self, interest: impl Into<Ready>) -> io::Result<AsyncFdReadyGuard<'_, T>> {
        let want = interest.into();
        let event = poll_fn(|cx| self.poll_ready_event(cx, want, false)).await?;
        Ok(AsyncFdReadyGuard::new(self, event))
    }

    /// [`ready`](Self::ready) through `&mut self`, for mutable access to the value.
    ///
    /// ```
    /// use std::io::Write;
    /// use std::os::unix::net::UnixStream;
    /// use evloop::io::{AsyncFd, Interest};
    ///
    /// evloop::run(async {
    ///     let (a, _b) = UnixStream::pair()?;
    ///     let mut a = AsyncFd::new(a)?;
    ///     let mut guard = a.ready_mut(Interest::WRITABLE).await?;
    ///     guard.get_inner_mut().write_all(b"x")?;
    ///     Ok::<(), std::io::Error>(())
    /// })??;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub async fn ready_mut(&mut self, interest: impl Into<Ready>) -> io::Result<AsyncFdReadyMutGuard<'_, T>> {
        let want = interest.into();
        let event = poll_fn(|cx| self.poll_ready_event(cx, want, false)).await?;
        Ok(AsyncFdReadyMutGuard::new(self, event))
    }

    /// Waits for readability (or a hang-up, or an error): tokio's `readable`.
    /// `fd.readable().await?;` alone waits and keeps the readiness.
    ///
    /// ```
    /// use std::io::{Read, Write};
    /// use std::os::unix::net::UnixStream;
    ///
    /// evloop::run(async {
    ///     let (a, mut b) = UnixStream::pair()?;
    ///     let a = evloop::io::AsyncFd::new(a)?;
    ///     b.write_all(b"hi")?;
    ///     let mut guard = a.readable().await?;
    ///     let mut buf = [0; 2];
    ///     guard.try_io(|fd| fd.get_ref().read_exact(&mut buf)).expect("readable")?;
    ///     assert_eq!(&buf, b"hi");
    ///     Ok::<(), std::io::Error>(())
    /// })??;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub async fn readable(&self) -> io::Result<AsyncFdReadyGuard<'_, T>> {
        self.ready(Ready::READABLE).await
    }

    /// [`readable`](Self::readable) through `&mut self`.
    ///
    /// ```
    /// use std::io::{Read, Write};
    /// use std::os::unix::net::UnixStream;
    ///
    /// evloop::run(async {
    ///     let (a, mut b) = UnixStream::pair()?;
    ///     let mut a = evloop::io::AsyncFd::new(a)?;
    ///     b.write_all(b"hi")?;
    ///     let mut guard = a.readable_mut().await?;
    ///     let mut buf = [0; 2];
    ///     guard.get_inner_mut().read_exact(&mut buf)?; // `Read` for `&mut UnixStream`
    ///     assert_eq!(&buf, b"hi");
    ///     Ok::<(), std::io::Error>(())
    /// })??;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub async fn readable_mut(&mut self) -> io::Result<AsyncFdReadyMutGuard<'_, T>> {
        self.ready_mut(Ready::READABLE).await
    }

    /// Waits for writability (or a hang-up, or an error): tokio's `writable`.
    ///
    /// ```
    /// use std::io::Write;
    /// use std::os::unix::net::UnixStream;
    ///
    /// evloop::run(async {
    ///     let (a, _b) = UnixStream::pair()?;
    ///     let a = evloop::io::AsyncFd::new(a)?;
    ///     let mut guard = a.writable().await?;
    ///     let n = guard.try_io(|fd| fd.get_ref().write(b"room")).expect("writable")?;
    ///     assert_eq!(n, 4);
    ///     Ok::<(), std::io::Error>(())
    /// })??;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub async fn writable(&self) -> io::Result<AsyncFdReadyGuard<'_, T>> {
        self.ready(Ready::WRITABLE).await
    }

    /// [`writable`](Self::writable) through `&mut self`.
    ///
    /// ```
    /// use std::io::Write;
    /// use std::os::unix::net::UnixStream;
    ///
    /// evloop::run(async {
    ///     let (a, _b) = UnixStream::pair()?;
    ///     let mut a = evloop::io::AsyncFd::new(a)?;
    ///     let mut guard = a.writable_mut().await?;
    ///     assert_eq!(guard.get_inner_mut().write(b"room")?, 4);
    ///     Ok::<(), std::io::Error>(())
    /// })??;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub async fn writable_mut(&mut self) -> io::Result<AsyncFdReadyMutGuard<'_, T>> {
        self.ready_mut(Ready::WRITABLE).await
    }

    /// The poll form of [`readable`](Self::readable), for a hand-written `poll` (tokio's
    /// `poll_read_ready`). Only the waker of the most recent call is woken: a second caller
    /// replaces the first (use the async form to wait from several tasks).
    ///
    /// ```
    /// use std::future::poll_fn;
    /// use std::io::Write;
    /// use std::os::unix::net::UnixStream;
    ///
    /// evloop::run(async {
    ///     let (a, mut b) = UnixStream::pair()?;
    ///     let a = evloop::io::AsyncFd::new(a)?;
    ///     b.write_all(b"data")?;
    ///     let guard = poll_fn(|cx| a.poll_read_ready(cx)).await?;
    ///     assert!(guard.ready().is_readable());
    ///     Ok::<(), std::io::Error>(())
    /// })??;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn poll_read_ready<'a>(&'a self, cx: &mut Context<'_>) -> Poll<io::Result<AsyncFdReadyGuard<'a, T>>> {
        self.poll_ready_event(cx, Ready::READABLE, true)
            .map_ok(|event| AsyncFdReadyGuard::new(self, event))
    }

    /// [`poll_read_ready`](Self::poll_read_ready) through `&mut self`.
    ///
    /// ```
    /// use std::future::poll_fn;
    /// use std::io::Write;
    /// use std::os::unix::net::UnixStream;
    ///
    /// evloop::run(async {
    ///     let (a, mut b) = UnixStream::pair()?;
    ///     let mut a = evloop::io::AsyncFd::new(a)?;
    ///     b.write_all(b"data")?;
    ///     poll_fn(|cx| a.poll_read_ready_mut(cx).map_ok(|mut g| g.retain_ready())).await?;
    ///     Ok::<(), std::io::Error>(())
    /// })??;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn poll_read_ready_mut<'a>(
        &'a mut self,
        cx: &mut Context<'_>,
    ) -> Poll<io::Result<AsyncFdReadyMutGuard<'a, T>>> {
        self.poll_mut(cx, Ready::READABLE)
    }

    /// The poll form of [`writable`](Self::writable) (tokio's `poll_write_ready`): only the
    /// most recent caller's waker is woken.
    ///
    /// ```
    /// use std::future::poll_fn;
    /// use std::os::unix::net::UnixStream;
    ///
    /// evloop::run(async {
    ///     let (a, _b) = UnixStream::pair()?;
    ///     let a = evloop::io::AsyncFd::new(a)?;
    ///     let guard = poll_fn(|cx| a.poll_write_ready(cx)).await?;
    ///     assert!(guard.ready().is_writable());
    ///     Ok::<(), std::io::Error>(())
    /// })??;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn poll_write_ready<'a>(&'a self, cx: &mut Context<'_>) -> Poll<io::Result<AsyncFdReadyGuard<'a, T>>> {
        self.poll_ready_event(cx, Ready::WRITABLE, true)
            .map_ok(|event| AsyncFdReadyGuard::new(self, event))
    }

    /// [`poll_write_ready`](Self::poll_write_ready) through `&mut self`.
    ///
    /// ```
    /// use std::future::poll_fn;
    /// use std::os::unix::net::UnixStream;
    ///
    /// evloop::run(async {
    ///     let (a, _b) = UnixStream::pair()?;
    ///     let mut a = evloop::io::AsyncFd::new(a)?;
    ///     poll_fn(|cx| a.poll_write_ready_mut(cx).map_ok(|mut g| g.clear_ready())).await?;
    ///     Ok::<(), std::io::Error>(())
    /// })??;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn poll_write_ready_mut<'a>(
        &'a mut self,
        cx: &mut Context<'_>,
    ) -> Poll<io::Result<AsyncFdReadyMutGuard<'a, T>>> {
        self.poll_mut(cx, Ready::WRITABLE)
    }

    /// The poll forms' wait through `&mut self` (the guard takes the borrow back once the
    /// event is in hand).
    fn poll_mut(&mut self, cx: &mut Context<'_>, want: Ready) -> Poll<io::Result<AsyncFdReadyMutGuard<'_, T>>> {
        match self.poll_ready_event(cx, want, true) {
            Poll::Ready(Ok(event)) => Poll::Ready(Ok(AsyncFdReadyMutGuard::new(self, event))),
            Poll::Ready(Err(e)) => Poll::Ready(Err(e)),
            Poll::Pending => Poll::Pending,
        }
    }

    /// Waits for `interest` and runs `f`, one non-blocking call, until it says something other
    /// than `WouldBlock` (tokio's `async_io`; evloop's [`io`](Self::io) for one direction).
    ///
    /// ```
    /// use std::io::{Read, Write};
    /// use std::os::unix::net::UnixStream;
    /// use evloop::io::{AsyncFd, Interest};
    ///
    /// evloop::run(async {
    ///     let (a, mut b) = UnixStream::pair()?;
    ///     let a = AsyncFd::new(a)?;
    ///     evloop::spawn(async move { b.write_all(b"async_io") });
    ///     let mut buf = [0; 16];
    ///     let n = a.async_io(Interest::READABLE, |mut s| s.read(&mut buf)).await?;
    ///     assert_eq!(&buf[..n], b"async_io");
    ///     Ok::<(), std::io::Error>(())
    /// })??;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub async fn async_io<R>(
        &self,
        interest: impl Into<Ready>,
        mut f: impl FnMut(&T) -> io::Result<R>,
    ) -> io::Result<R> {
        let want = interest.into();
        loop {
            let mut guard = self.ready(want).await?;
            if let Ok(r) = guard.try_io(|fd| f(fd.get_ref())) {
                return r;
            }
        }
    }

    /// [`async_io`](Self::async_io) with the value lent mutably.
    ///
    /// ```
    /// use std::io::{Read, Write};
    /// use std::os::unix::net::UnixStream;
    /// use evloop::io::{AsyncFd, Interest};
    ///
    /// evloop::run(async {
    ///     let (a, mut b) = UnixStream::pair()?;
    ///     let mut a = AsyncFd::new(a)?;
    ///     b.write_all(b"mut")?;
    ///     let mut buf = [0; 8];
    ///     let n = a.async_io_mut(Interest::READABLE, |s| s.read(&mut buf)).await?;
    ///     assert_eq!(&buf[..n], b"mut");
    ///     Ok::<(), std::io::Error>(())
    /// })??;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub async fn async_io_mut<R>(
        &mut self,
        interest: impl Into<Ready>,
        mut f: impl FnMut(&mut T) -> io::Result<R>,
    ) -> io::Result<R> {
        let want = interest.into();
        loop {
            let mut guard = self.ready_mut(want).await?;
            if let Ok(r) = guard.try_io(|fd| f(fd.get_mut())) {
                return r;
            }
        }
    }
}
