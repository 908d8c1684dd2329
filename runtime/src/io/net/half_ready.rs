//! tokio's readiness and address API on the halves of a split stream: a read half has
//! `readable`, `ready`, `try_read`, `try_read_vectored`, `try_read_buf`; a write half
//! `writable`, `ready`, `try_write`, `try_write_vectored`; both `local_addr` and `peer_addr`.
//! The borrowed (`split`) and owned (`into_split`) halves of TCP and Unix streams all get them,
//! as tokio's do.
//!
//! Data flow is the whole stream's (`ready.rs`, `readiness.rs`): each half reaches the shared
//! socket and its registration; a read half waits on the read side and a write half on the
//! write side, so the two halves in two tasks never take each other's waker. One macro writes
//! the methods for the eight half types.

use std::future::poll_fn;
use std::io::{self, IoSlice, IoSliceMut};

use evloop_syscalls as sys;

use crate::io::net::UnixAddr;
use crate::io::net::readiness::attempt;
use crate::io::net::ready::{poll_ready_set, try_read_vec};
use crate::io::net::socket::{inet, unix};
use crate::io::split::{tcp, unix as unix_halves};
use crate::io::{Interest, Ready};

macro_rules! half_methods {
    // What both halves have: the addresses and `ready`.
    (@addr $half:ty, $addr:ty, $conv:ident, $setup:literal) => {
        impl $half {
            /// The local address of the shared socket (tokio's `local_addr` on a half).
            ///
            /// ```
            /// evloop::run(async {
            #[doc = $setup]
            ///     assert_eq!(h.local_addr()?, local);
            ///     Ok::<(), std::io::Error>(())
            /// })??;
            /// # Ok::<(), Box<dyn std::error::Error>>(())
            /// ```
            pub fn local_addr(&self) -> io::Result<$addr> {
                $conv(self.socket().local_addr()?, "local_addr")
            }

            /// The peer's address (tokio's `peer_addr` on a half).
            ///
            /// ```
            /// evloop::run(async {
            #[doc = $setup]
            ///     assert_eq!(h.peer_addr()?, peer);
            ///     Ok::<(), std::io::Error>(())
            /// })??;
            /// # Ok::<(), Box<dyn std::error::Error>>(())
            /// ```
            pub fn peer_addr(&self) -> io::Result<$addr> {
                $conv(self.socket().peer_addr()?, "peer_addr")
            }

            /// Waits until the shared socket is ready for one of the interests and returns the
            /// events seen (tokio's `ready` on a half; a read half asks for `READABLE`, a write
            /// half for `WRITABLE`).
            ///
            /// ```
            /// use evloop::io::Interest;
            ///
            /// evloop::run(async {
            #[doc = $setup]
            ///     let ready = h.ready(Interest::READABLE | Interest::WRITABLE).await?;
            ///     assert!(ready.is_writable()); // an empty send buffer
            ///     # drop(b);
            ///     Ok::<(), std::io::Error>(())
            /// })??;
            /// # Ok::<(), Box<dyn std::error::Error>>(())
            /// ```
            pub async fn ready(&self, interest: impl Into<Ready>) -> io::Result<Ready> {
                let want = interest.into();
                poll_fn(|cx| poll_ready_set(self.socket(), cx, want)).await
            }
        }
    };
    (read $half:ty, $addr:ty, $conv:ident, $setup:literal) => {
        half_methods!(@addr $half, $addr, $conv, $setup);

        impl $half {
            /// Waits until the socket is readable (tokio's `readable`); pair it with
            /// `try_read`, which may still say `WouldBlock`.
            ///
            /// ```
            /// use evloop::io::AsyncWriteExt;
            ///
            /// evloop::run(async {
            #[doc = $setup]
            ///     b.write_all(b"hi").await?;
            ///     h.readable().await?;
            ///     assert_eq!(h.try_read(&mut [0; 8])?, 2);
            ///     Ok::<(), std::io::Error>(())
            /// })??;
            /// # Ok::<(), Box<dyn std::error::Error>>(())
            /// ```
            pub async fn readable(&self) -> io::Result<()> {
                self.socket().async_fd().wait(Interest::Read).await
            }

            /// Reads what is there without waiting (one `recv`), or `WouldBlock`.
            ///
            /// ```
            /// evloop::run(async {
            #[doc = $setup]
            ///     let err = h.try_read(&mut [0; 8]).unwrap_err(); // nothing sent yet
            ///     assert_eq!(err.kind(), std::io::ErrorKind::WouldBlock);
            ///     Ok::<(), std::io::Error>(())
            /// })??;
            /// # Ok::<(), Box<dyn std::error::Error>>(())
            /// ```
            pub fn try_read(&self, buf: &mut [u8]) -> io::Result<usize> {
                attempt(self.socket(), Interest::Read, "recv", |fd| sys::recv(fd, buf))
            }

            /// Reads into several buffers without waiting (one `readv`), or `WouldBlock`.
            ///
            /// ```
            /// use std::io::IoSliceMut;
            /// use evloop::io::AsyncWriteExt;
            ///
            /// evloop::run(async {
            #[doc = $setup]
            ///     b.write_all(b"abcd").await?;
            ///     h.readable().await?;
            ///     let (mut x, mut y) = ([0; 2], [0; 2]);
            ///     assert_eq!(h.try_read_vectored(&mut [IoSliceMut::new(&mut x), IoSliceMut::new(&mut y)])?, 4);
            ///     Ok::<(), std::io::Error>(())
            /// })??;
            /// # Ok::<(), Box<dyn std::error::Error>>(())
            /// ```
            pub fn try_read_vectored(&self, bufs: &mut [IoSliceMut<'_>]) -> io::Result<usize> {
                attempt(self.socket(), Interest::Read, "readv", |fd| sys::readv(fd, bufs))
            }

            /// Reads into the spare capacity of `buf` without waiting, growing it, or
            /// `WouldBlock` (tokio's `try_read_buf` for a `Vec<u8>`).
            ///
            /// ```
            /// use evloop::io::AsyncWriteExt;
            ///
            /// evloop::run(async {
            #[doc = $setup]
            ///     b.write_all(b"grow").await?;
            ///     h.readable().await?;
            ///     let mut buf = Vec::new();
            ///     assert_eq!(h.try_read_buf(&mut buf)?, 4);
            ///     Ok::<(), std::io::Error>(())
            /// })??;
            /// # Ok::<(), Box<dyn std::error::Error>>(())
            /// ```
            pub fn try_read_buf(&self, buf: &mut Vec<u8>) -> io::Result<usize> {
                try_read_vec(self.socket(), buf)
            }
        }
    };
    (write $half:ty, $addr:ty, $conv:ident, $setup:literal) => {
        half_methods!(@addr $half, $addr, $conv, $setup);

        impl $half {
            /// Waits until the socket is writable (tokio's `writable`); pair it with
            /// `try_write`.
            ///
            /// ```
            /// evloop::run(async {
            #[doc = $setup]
            ///     h.writable().await?;
            ///     assert_eq!(h.try_write(b"hi")?, 2);
            ///     # drop(b);
            ///     Ok::<(), std::io::Error>(())
            /// })??;
            /// # Ok::<(), Box<dyn std::error::Error>>(())
            /// ```
            pub async fn writable(&self) -> io::Result<()> {
                self.socket().async_fd().wait(Interest::Write).await
            }

            /// Writes what fits without waiting (one `send`, `MSG_NOSIGNAL`), or `WouldBlock`.
            ///
            /// ```
            /// use evloop::io::AsyncReadExt;
            ///
            /// evloop::run(async {
            #[doc = $setup]
            ///     h.writable().await?;
            ///     assert_eq!(h.try_write(b"abc")?, 3);
            ///     let mut got = [0; 3];
            ///     b.read_exact(&mut got).await?;
            ///     Ok::<(), std::io::Error>(())
            /// })??;
            /// # Ok::<(), Box<dyn std::error::Error>>(())
            /// ```
            pub fn try_write(&self, buf: &[u8]) -> io::Result<usize> {
                attempt(self.socket(), Interest::Write, "send", |fd| sys::send(fd, buf))
            }

            /// Writes from several buffers without waiting (one `sendmsg`), or `WouldBlock`.
            ///
            /// ```
            /// use std::io::IoSlice;
            ///
            /// evloop::run(async {
            #[doc = $setup]
            ///     h.writable().await?;
            ///     assert_eq!(h.try_write_vectored(&[IoSlice::new(b"ab"), IoSlice::new(b"cd")])?, 4);
            ///     # drop(b);
            ///     Ok::<(), std::io::Error>(())
            /// })??;
            /// # Ok::<(), Box<dyn std::error::Error>>(())
            /// ```
            pub fn try_write_vectored(&self, bufs: &[IoSlice<'_>]) -> io::Result<usize> {
                attempt(self.socket(), Interest::Write, "sendmsg", |fd| sys::send_vectored(fd, bufs))
            }
        }
    };
}

half_methods!(
    read tcp::ReadHalf<'_>, std::net::SocketAddr, inet,
    "    let l = evloop::net::TcpListener::bind(\"127.0.0.1:0\").await?;\n    let mut a = evloop::net::TcpStream::connect(l.local_addr()?).await?;\n    let (mut b, _) = l.accept().await?;\n    let (local, peer) = (a.local_addr()?, a.peer_addr()?);\n    let (h, _w) = a.split();"
);
half_methods!(
    write tcp::WriteHalf<'_>, std::net::SocketAddr, inet,
    "    let l = evloop::net::TcpListener::bind(\"127.0.0.1:0\").await?;\n    let mut a = evloop::net::TcpStream::connect(l.local_addr()?).await?;\n    let (mut b, _) = l.accept().await?;\n    let (local, peer) = (a.local_addr()?, a.peer_addr()?);\n    let (_r, h) = a.split();"
);
half_methods!(
    read tcp::OwnedReadHalf, std::net::SocketAddr, inet,
    "    let l = evloop::net::TcpListener::bind(\"127.0.0.1:0\").await?;\n    let a = evloop::net::TcpStream::connect(l.local_addr()?).await?;\n    let (mut b, _) = l.accept().await?;\n    let (local, peer) = (a.local_addr()?, a.peer_addr()?);\n    let (h, _w) = a.into_split();"
);
half_methods!(
    write tcp::OwnedWriteHalf, std::net::SocketAddr, inet,
    "    let l = evloop::net::TcpListener::bind(\"127.0.0.1:0\").await?;\n    let a = evloop::net::TcpStream::connect(l.local_addr()?).await?;\n    let (mut b, _) = l.accept().await?;\n    let (local, peer) = (a.local_addr()?, a.peer_addr()?);\n    let (_r, h) = a.into_split();"
);
half_methods!(
    read unix_halves::ReadHalf<'_>, UnixAddr, unix,
    "    let (mut a, mut b) = evloop::net::UnixStream::pair()?;\n    let (local, peer) = (a.local_addr()?, a.peer_addr()?);\n    let (h, _w) = a.split();"
);
half_methods!(
    write unix_halves::WriteHalf<'_>, UnixAddr, unix,
    "    let (mut a, mut b) = evloop::net::UnixStream::pair()?;\n    let (local, peer) = (a.local_addr()?, a.peer_addr()?);\n    let (_r, h) = a.split();"
);
half_methods!(
    read unix_halves::OwnedReadHalf, UnixAddr, unix,
    "    let (a, mut b) = evloop::net::UnixStream::pair()?;\n    let (local, peer) = (a.local_addr()?, a.peer_addr()?);\n    let (h, _w) = a.into_split();"
);
half_methods!(
    write unix_halves::OwnedWriteHalf, UnixAddr, unix,
    "    let (a, mut b) = evloop::net::UnixStream::pair()?;\n    let (local, peer) = (a.local_addr()?, a.peer_addr()?);\n    let (_r, h) = a.into_split();"
);
