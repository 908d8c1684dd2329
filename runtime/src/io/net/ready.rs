//! The rest of tokio's readiness API on the connected streams, beside `readiness.rs`'s
//! `readable`/`writable`/`try_read`/`try_write`: [`ready`](TcpStream::ready) with an interest
//! set returning the [`Ready`] events seen, the poll forms `poll_read_ready`/`poll_write_ready`,
//! and the vectored and growable-buffer `try_*` calls (the conversions to and from std's
//! sockets are in `std_conv.rs`).
//!
//! Data flow is `readiness.rs`'s: every wait goes to the stream's
//! [`AsyncFd`](crate::io::AsyncFd) registration (parking the task's waker for each direction
//! asked for), every `try_*` makes one non-blocking call only when the registration says the
//! socket is ready and clears it on `EAGAIN`. One macro writes the methods for both stream types,
//! so TCP and Unix cannot drift apart.

use std::future::poll_fn;
use std::io::{self, IoSlice, IoSliceMut};
use std::task::{Context, Poll};

use evloop_syscalls as sys;

use crate::io::net::readiness::attempt;
use crate::io::net::socket::Socket;
use crate::io::net::{TcpStream, UnixStream};
use crate::io::{Interest, Ready};

/// Waits until the socket is ready for any interest in `want`; the events seen, restricted to
/// those interests (tokio's `ready`).
pub(super) fn poll_ready_set(sock: &Socket, cx: &mut Context<'_>, want: Ready) -> Poll<io::Result<Ready>> {
    let fd = sock.async_fd();
    let mask = want.interest_bits();
    let mut any = false;
    for (interest, on) in [
        (Interest::Read, want.is_readable()),
        (Interest::Write, want.is_writable()),
    ] {
        // Every direction asked for parks the waker, so either edge wakes the task.
        if on && fd.poll_ready(cx, interest)?.is_ready() {
            any = true;
        }
    }
    if any {
        Poll::Ready(Ok(Ready::from_bits(fd.readiness() & mask)))
    } else {
        Poll::Pending
    }
}

/// Reads into the spare capacity of `buf` (64 bytes are reserved when there is none, as the
/// `bytes` crate's `Vec` does), growing its length by what was read.
pub(super) fn try_read_vec(sock: &Socket, buf: &mut Vec<u8>) -> io::Result<usize> {
    if buf.capacity() == buf.len() {
        buf.reserve(64);
    }
    let len = buf.len();
    buf.resize(buf.capacity(), 0);
    let r = attempt(sock, Interest::Read, "recv", |fd| sys::recv(fd, &mut buf[len..]));
    buf.truncate(len + *r.as_ref().unwrap_or(&0));
    r
}

macro_rules! ready_methods {
    ($ty:ident, $pair:literal) => {
        impl $ty {
            /// Waits until the socket is ready for one of the interests (`Interest::READABLE`,
            /// `Interest::WRITABLE`, or both joined with `|`) and returns the events seen:
            /// tokio's `ready`. The events may be stale by the time they are used; the `try_*`
            /// call after it says `WouldBlock` then, and the caller waits again.
            ///
            /// ```
            /// use evloop::io::{AsyncWriteExt, Interest};
            ///
            /// evloop::run(async {
            #[doc = $pair]
            ///     b.write_all(b"x").await?;
            ///     let ready = a.ready(Interest::READABLE | Interest::WRITABLE).await?;
            ///     assert!(ready.is_writable()); // an empty send buffer
            ///     let ready = a.ready(Interest::READABLE).await?;
            ///     assert!(ready.is_readable() && !ready.is_writable());
            ///     Ok::<(), std::io::Error>(())
            /// })??;
            /// # Ok::<(), Box<dyn std::error::Error>>(())
            /// ```
            pub async fn ready(&self, interest: impl Into<Ready>) -> io::Result<Ready> {
                let want = interest.into();
                poll_fn(|cx| poll_ready_set(self.socket(), cx, want)).await
            }

            /// `Ready` once the socket is readable, else parks the task's waker: tokio's
            /// `poll_read_ready`, for hand-written futures.
            ///
            /// ```
            /// use evloop::io::AsyncWriteExt;
            ///
            /// evloop::run(async {
            #[doc = $pair]
            ///     b.write_all(b"x").await?;
            ///     std::future::poll_fn(|cx| a.poll_read_ready(cx)).await?;
            ///     assert_eq!(a.try_read(&mut [0; 4])?, 1);
            ///     Ok::<(), std::io::Error>(())
            /// })??;
            /// # Ok::<(), Box<dyn std::error::Error>>(())
            /// ```
            pub fn poll_read_ready(&self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
                self.socket().async_fd().poll_ready(cx, Interest::Read)
            }

            /// `Ready` once the socket is writable, else parks the task's waker: tokio's
            /// `poll_write_ready`.
            ///
            /// ```
            /// evloop::run(async {
            #[doc = $pair]
            ///     std::future::poll_fn(|cx| a.poll_write_ready(cx)).await?;
            ///     assert_eq!(a.try_write(b"hi")?, 2);
            ///     # drop(b);
            ///     Ok::<(), std::io::Error>(())
            /// })??;
            /// # Ok::<(), Box<dyn std::error::Error>>(())
            /// ```
            pub fn poll_write_ready(&self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
                self.socket().async_fd().poll_ready(cx, Interest::Write)
            }

            /// Reads into several buffers without waiting (one `readv`), or `WouldBlock`:
            /// tokio's `try_read_vectored`.
            ///
            /// ```
            /// use std::io::IoSliceMut;
            /// use evloop::io::AsyncWriteExt;
            ///
            /// evloop::run(async {
            #[doc = $pair]
            ///     b.write_all(b"abcd").await?;
            ///     a.readable().await?;
            ///     let (mut x, mut y) = ([0; 2], [0; 2]);
            ///     let n = a.try_read_vectored(&mut [IoSliceMut::new(&mut x), IoSliceMut::new(&mut y)])?;
            ///     assert_eq!((n, &x, &y), (4, b"ab", b"cd"));
            ///     Ok::<(), std::io::Error>(())
            /// })??;
            /// # Ok::<(), Box<dyn std::error::Error>>(())
            /// ```
            pub fn try_read_vectored(&self, bufs: &mut [IoSliceMut<'_>]) -> io::Result<usize> {
                attempt(self.socket(), Interest::Read, "readv", |fd| sys::readv(fd, bufs))
            }

            /// Writes from several buffers without waiting (one `sendmsg`, `MSG_NOSIGNAL`), or
            /// `WouldBlock`: tokio's `try_write_vectored`.
            ///
            /// ```
            /// use std::io::IoSlice;
            /// use evloop::io::AsyncReadExt;
            ///
            /// evloop::run(async {
            #[doc = $pair]
            ///     a.writable().await?;
            ///     assert_eq!(a.try_write_vectored(&[IoSlice::new(b"ab"), IoSlice::new(b"cd")])?, 4);
            ///     let mut got = [0; 4];
            ///     b.read_exact(&mut got).await?;
            ///     assert_eq!(&got, b"abcd");
            ///     Ok::<(), std::io::Error>(())
            /// })??;
            /// # Ok::<(), Box<dyn std::error::Error>>(())
            /// ```
            pub fn try_write_vectored(&self, bufs: &[IoSlice<'_>]) -> io::Result<usize> {
                attempt(self.socket(), Interest::Write, "sendmsg", |fd| {
                    sys::send_vectored(fd, bufs)
                })
            }

            /// Reads into the spare capacity of `buf` without waiting, growing its length by
            /// what was read (64 bytes are reserved when it has no spare capacity), or
            /// `WouldBlock`: tokio's `try_read_buf` for a `Vec<u8>`.
            ///
            /// ```
            /// use evloop::io::AsyncWriteExt;
            ///
            /// evloop::run(async {
            #[doc = $pair]
            ///     b.write_all(b"grow").await?;
            ///     a.readable().await?;
            ///     let mut buf = Vec::new();
            ///     assert_eq!(a.try_read_buf(&mut buf)?, 4);
            ///     assert_eq!(buf, b"grow");
            ///     Ok::<(), std::io::Error>(())
            /// })??;
            /// # Ok::<(), Box<dyn std::error::Error>>(())
            /// ```
            pub fn try_read_buf(&self, buf: &mut Vec<u8>) -> io::Result<usize> {
                try_read_vec(self.socket(), buf)
            }
        }
    };
}

ready_methods!(
    TcpStream,
    "    let listener = evloop::net::TcpListener::bind(\"127.0.0.1:0\").await?;\n    let mut a = evloop::net::TcpStream::connect(listener.local_addr()?).await?;\n    let (mut b, _) = listener.accept().await?;"
);
ready_methods!(UnixStream, "    let (mut a, mut b) = evloop::net::UnixStream::pair()?;");
