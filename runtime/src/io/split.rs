//! The halves of a TCP or a Unix stream, one set of types per stream kind as tokio has them
//! (`evloop::net::tcp`, `evloop::net::unix`): borrowed ones (`ReadHalf`, `WriteHalf`: tokio's
//! `split`) and owned ones (`OwnedReadHalf`, `OwnedWriteHalf`: `into_split`). One macro,
//! `halves!`, writes both sets.
//!
//! A `ReadHalf` and a `WriteHalf` both borrow the stream's socket, so they cost nothing (no
//! `Rc`, no allocation) and can be used at the same time in one task: one `select!` branch or
//! `join!` arm reading while another writes, or [`copy`](crate::io::copy::copy) from one half to
//! the other. The registration is shared as it is for the owned halves: a reader waits on the
//! read side of the socket's registration and a writer on its write side, so each half may have
//! one task waiting. Use `into_split` when the halves must go to different tasks: the owned
//! halves share the socket through an `Rc`, and the socket (so the fd) closes when both are
//! dropped; dropping the owned write half alone shuts the write side down (tokio's rule), while
//! dropping a borrowed `WriteHalf` does nothing (it owns nothing).

use std::future::poll_fn;
use std::io;
use std::task::{Context, Poll, ready};

use crate::io::ReadBuf;
use crate::io::net::{TcpStream, UnixStream};

/// Writes the four half types of one stream kind in the current module. `$pair` is a doc-test
/// expression (inside `evloop::run(async { .. })`) giving two connected streams of the kind.
macro_rules! halves {
    ($ty:ident, $stream:literal, $pair:literal) => {
        use std::rc::Rc;

        use crate::io::net::$ty;

        use crate::io::net::Socket;
        use crate::io::traits::forward_io;

        #[doc = concat!("The reading half of a borrowed split of a ", $stream, " (`split`).")]
        ///
        /// ```
        /// use evloop::io::{AsyncReadExt, AsyncWriteExt};
        ///
        /// evloop::run(async {
        #[doc = concat!("    let (mut a, mut b) = ", $pair, ";")]
        ///     b.write_all(b"question").await?;
        ///     let (mut rd, mut wr) = a.split();
        ///     // Both halves in one task: read the question, write the answer.
        ///     let mut q = [0; 8];
        ///     rd.read_exact(&mut q).await?;
        ///     wr.write_all(b"answer").await?;
        ///     let mut ans = [0; 6];
        ///     b.read_exact(&mut ans).await?;
        ///     assert_eq!((&q, &ans), (b"question", b"answer"));
        ///     Ok::<(), std::io::Error>(())
        /// })??;
        /// # Ok::<(), Box<dyn std::error::Error>>(())
        /// ```
        #[derive(Debug)]
        pub struct ReadHalf<'a> {
            sock: &'a Socket,
        }

        #[doc = concat!("The writing half of a borrowed split of a ", $stream, ". `shutdown()` (from")]
        /// [`AsyncWriteExt`](crate::io::AsyncWriteExt)) sends FIN; dropping it does not.
        ///
        /// ```
        /// use evloop::io::{AsyncReadExt, AsyncWriteExt};
        ///
        /// evloop::run(async {
        #[doc = concat!("    let (mut a, mut b) = ", $pair, ";")]
        ///     {
        ///         let (_rd, mut wr) = a.split();
        ///         wr.write_all(b"done").await?;
        ///         wr.shutdown().await?; // FIN; dropping the half would not send one
        ///     }
        ///     let mut got = Vec::new();
        ///     b.read_to_end(&mut got).await?;
        ///     assert_eq!(got, b"done");
        ///     Ok::<(), std::io::Error>(())
        /// })??;
        /// # Ok::<(), Box<dyn std::error::Error>>(())
        /// ```
        #[derive(Debug)]
        pub struct WriteHalf<'a> {
            sock: &'a Socket,
        }

        impl ReadHalf<'_> {
            /// The shared socket.
            ///
            /// ```
            /// use std::os::fd::AsRawFd;
            ///
            /// evloop::run(async {
            #[doc = concat!("    let (mut a, _b) = ", $pair, ";")]
            ///     let fd = a.socket().as_raw_fd();
            ///     let (rd, wr) = a.split();
            ///     assert_eq!((rd.socket().as_raw_fd(), wr.socket().as_raw_fd()), (fd, fd));
            ///     Ok::<(), std::io::Error>(())
            /// })??;
            /// # Ok::<(), Box<dyn std::error::Error>>(())
            /// ```
            pub fn socket(&self) -> &Socket {
                self.sock
            }
        }

        impl WriteHalf<'_> {
            /// The shared socket.
            ///
            /// ```
            /// use evloop::io::AsyncReadExt;
            /// use evloop::net::Shutdown;
            ///
            /// evloop::run(async {
            #[doc = concat!("    let (mut a, mut b) = ", $pair, ";")]
            ///     let (_rd, wr) = a.split();
            ///     wr.socket().shutdown(Shutdown::Both)?; // options and shutdowns through the shared socket
            ///     assert_eq!(b.read(&mut [0; 4]).await?, 0);
            ///     Ok::<(), std::io::Error>(())
            /// })??;
            /// # Ok::<(), Box<dyn std::error::Error>>(())
            /// ```
            pub fn socket(&self) -> &Socket {
                self.sock
            }
        }

        pub(crate) fn halves(sock: &Socket) -> (ReadHalf<'_>, WriteHalf<'_>) {
            (ReadHalf { sock }, WriteHalf { sock })
        }

        forward_io!([] AsyncRead for ReadHalf<'_> => socket |h| h.sock);
        forward_io!([] AsyncWrite for WriteHalf<'_> => socket |h| h.sock);

        #[doc = concat!("The reading half of a ", $stream, " split with `into_split`: it can go to another task.")]
        ///
        /// ```
        /// use evloop::io::{AsyncReadExt, AsyncWriteExt};
        ///
        /// evloop::run(async {
        #[doc = concat!("    let (a, mut b) = ", $pair, ";")]
        ///     let (mut rd, _wr) = a.into_split();
        ///     let reader = evloop::spawn(async move {
        ///         let mut got = Vec::new();
        ///         rd.read_to_end(&mut got).await.map(|_| got)
        ///     });
        ///     b.write_all(b"to the reader task").await?;
        ///     drop(b);
        ///     assert_eq!(reader.await??, b"to the reader task");
        ///     Ok::<(), Box<dyn std::error::Error>>(())
        /// })??;
        /// # Ok::<(), Box<dyn std::error::Error>>(())
        /// ```
        #[derive(Debug)]
        pub struct OwnedReadHalf {
            sock: Rc<Socket>,
        }

        #[doc = concat!("The writing half of a ", $stream, " split with `into_split`. Dropping it shuts the write")]
        /// side down (`shutdown(SHUT_WR)`, as tokio does): the peer reads end of stream while
        /// the read half keeps reading. `shutdown()` (from
        /// [`AsyncWriteExt`](crate::io::AsyncWriteExt)) does the same earlier;
        /// [`forget`](Self::forget) drops the half without it.
        ///
        /// ```
        /// use evloop::io::{AsyncReadExt, AsyncWriteExt};
        ///
        /// evloop::run(async {
        #[doc = concat!("    let (a, mut b) = ", $pair, ";")]
        ///     let (_rd, mut wr) = a.into_split();
        ///     wr.write_all(b"bye").await?;
        ///     drop(wr); // FIN: the peer's read_to_end ends
        ///     let mut got = Vec::new();
        ///     b.read_to_end(&mut got).await?;
        ///     assert_eq!(got, b"bye");
        ///     Ok::<(), std::io::Error>(())
        /// })??;
        /// # Ok::<(), Box<dyn std::error::Error>>(())
        /// ```
        #[derive(Debug)]
        pub struct OwnedWriteHalf {
            sock: Rc<Socket>,
            /// Cleared by `forget`: the drop then leaves the write side open.
            shutdown_on_drop: bool,
        }

        impl OwnedReadHalf {
            /// The shared socket.
            ///
            /// ```
            /// use std::os::fd::AsRawFd;
            ///
            /// evloop::run(async {
            #[doc = concat!("    let (a, _b) = ", $pair, ";")]
            ///     let (rd, wr) = a.into_split();
            ///     assert_eq!(rd.socket().as_raw_fd(), wr.socket().as_raw_fd()); // one socket, shared
            ///     Ok::<(), std::io::Error>(())
            /// })??;
            /// # Ok::<(), Box<dyn std::error::Error>>(())
            /// ```
            pub fn socket(&self) -> &Socket {
                &self.sock
            }
        }

        impl OwnedWriteHalf {
            /// The shared socket.
            ///
            /// ```
            /// evloop::run(async {
            #[doc = concat!("    let (a, _b) = ", $pair, ";")]
            ///     let (_rd, wr) = a.into_split();
            ///     assert!(wr.socket().peer_addr().is_ok());
            ///     Ok::<(), std::io::Error>(())
            /// })??;
            /// # Ok::<(), Box<dyn std::error::Error>>(())
            /// ```
            pub fn socket(&self) -> &Socket {
                &self.sock
            }

            /// Drops the half without shutting the write side down (tokio's `forget`): the
            /// connection stays open until the read half is dropped too.
            ///
            /// ```
            /// use std::time::Duration;
            ///
            /// use evloop::io::AsyncReadExt;
            ///
            /// evloop::run(async {
            #[doc = concat!("    let (a, mut b) = ", $pair, ";")]
            ///     let (_rd, wr) = a.into_split();
            ///     wr.forget(); // no FIN: the peer's read keeps waiting
            ///     let mut byte = [0; 1];
            ///     let read = evloop::time::timeout(Duration::from_millis(10), b.read(&mut byte));
            ///     assert!(read.await.is_err());
            ///     Ok::<(), std::io::Error>(())
            /// })??;
            /// # Ok::<(), Box<dyn std::error::Error>>(())
            /// ```
            pub fn forget(mut self) {
                self.shutdown_on_drop = false;
            }
        }

        /// A tokio program ends a connection by dropping its write half; the peer must see end
        /// of stream even while the read half lives on. The error (the peer already gone) has
        /// nobody to go to.
        impl Drop for OwnedWriteHalf {
            fn drop(&mut self) {
                if self.shutdown_on_drop {
                    let _ = self.sock.shutdown(crate::io::net::Shutdown::Write);
                }
            }
        }

        /// Shares `sock` between two owned halves (`into_split`).
        pub(crate) fn owned_halves(sock: Socket) -> (OwnedReadHalf, OwnedWriteHalf) {
            let shared = Rc::new(sock);
            (
                OwnedReadHalf { sock: shared.clone() },
                OwnedWriteHalf { sock: shared, shutdown_on_drop: true },
            )
        }

        forward_io!([] AsyncRead for OwnedReadHalf => socket |h| &h.sock);
        forward_io!([] AsyncWrite for OwnedWriteHalf => socket |h| &h.sock);

        impl OwnedReadHalf {
            #[doc = concat!("The ", $stream, " back from its two owned halves (tokio's `reunite`); the")]
            /// halves back in a [`ReuniteError`] if they come from different streams.
            ///
            /// ```
            /// use evloop::io::{AsyncReadExt, AsyncWriteExt};
            ///
            /// evloop::run(async {
            #[doc = concat!("    let (a, mut b) = ", $pair, ";")]
            #[doc = concat!("    let (c, _d) = ", $pair, ";")]
            ///     let (rd, wr) = a.into_split();
            ///     let (rd2, wr2) = c.into_split();
            ///     let err = rd.reunite(wr2).unwrap_err(); // not a pair: both halves come back
            ///     let (rd, _wr2) = (err.0, err.1);
            ///     let mut a = rd.reunite(wr).unwrap(); // no FIN was sent on the way
            ///     a.write_all(b"whole again").await?;
            ///     let mut got = [0; 11];
            ///     b.read_exact(&mut got).await?;
            ///     assert_eq!(&got, b"whole again");
            ///     drop(rd2);
            ///     Ok::<(), std::io::Error>(())
            /// })??;
            /// # Ok::<(), Box<dyn std::error::Error>>(())
            /// ```
            pub fn reunite(self, other: OwnedWriteHalf) -> Result<$ty, ReuniteError> {
                reunite(self, other)
            }
        }

        impl OwnedWriteHalf {
            /// The stream back from its two owned halves: [`OwnedReadHalf::reunite`] from this
            /// side.
            ///
            /// ```
            /// evloop::run(async {
            #[doc = concat!("    let (a, _b) = ", $pair, ";")]
            ///     let (rd, wr) = a.into_split();
            ///     let a = wr.reunite(rd).unwrap();
            ///     assert!(a.peer_addr().is_ok());
            ///     Ok::<(), std::io::Error>(())
            /// })??;
            /// # Ok::<(), Box<dyn std::error::Error>>(())
            /// ```
            pub fn reunite(self, other: OwnedReadHalf) -> Result<$ty, ReuniteError> {
                reunite(other, self)
            }
        }

        fn reunite(read: OwnedReadHalf, mut write: OwnedWriteHalf) -> Result<$ty, ReuniteError> {
            if !Rc::ptr_eq(&read.sock, &write.sock) {
                return Err(ReuniteError(read, write));
            }
            // The stream lives on: its write side stays open.
            write.shutdown_on_drop = false;
            drop(write);
            let sock = Rc::try_unwrap(read.sock).expect("both owned halves were given, so no other reference is left");
            Ok($ty::from_socket(sock))
        }

        #[doc = concat!("Two owned halves of different ", $stream, "s given to `reunite`; they come back")]
        /// in the error (tokio's `ReuniteError`).
        ///
        /// ```
        /// evloop::run(async {
        #[doc = concat!("    let (a, _b) = ", $pair, ";")]
        #[doc = concat!("    let (c, _d) = ", $pair, ";")]
        ///     let (rd, _wr) = a.into_split();
        ///     let (_rd2, wr2) = c.into_split();
        ///     let err = rd.reunite(wr2).unwrap_err();
        ///     assert_eq!(err.to_string(), "tried to reunite halves that are not from the same socket");
        ///     Ok::<(), std::io::Error>(())
        /// })??;
        /// # Ok::<(), Box<dyn std::error::Error>>(())
        /// ```
        #[derive(Debug)]
        pub struct ReuniteError(pub OwnedReadHalf, pub OwnedWriteHalf);

        impl std::fmt::Display for ReuniteError {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("tried to reunite halves that are not from the same socket")
            }
        }

        impl std::error::Error for ReuniteError {}
    };
}

/// The halves of a [`TcpStream`] (`evloop::net::tcp`).
pub(crate) mod tcp {
    halves!(
        TcpStream,
        "`TcpStream`",
        "{ let l = evloop::net::TcpListener::bind(\"127.0.0.1:0\").await?; \
         let c = evloop::net::TcpStream::connect(l.local_addr()?).await?; (c, l.accept().await?.0) }"
    );
}

/// The halves of a [`UnixStream`] (`evloop::net::unix`).
pub(crate) mod unix {
    halves!(UnixStream, "`UnixStream`", "evloop::net::UnixStream::pair()?");
}

impl TcpStream {
    /// Splits into a read half and a write half that borrow the stream (tokio's `split`):
    /// free, usable together in one task.
    ///
    /// ```
    /// use evloop::io::{AsyncReadExt, AsyncWriteExt};
    /// use evloop::net::{TcpListener, TcpStream};
    ///
    /// evloop::run(async {
    ///     let listener = TcpListener::bind("127.0.0.1:0").await?;
    ///     let mut client = TcpStream::connect(listener.local_addr()?).await?;
    ///     let (mut server, _) = listener.accept().await?;
    ///     // An echo of one connection: copy the read half into the write half.
    ///     let echo = evloop::spawn(async move {
    ///         let (mut rd, mut wr) = server.split();
    ///         evloop::io::copy(&mut rd, &mut wr).await
    ///     });
    ///     client.write_all(b"echo me").await?;
    ///     client.shutdown().await?;
    ///     let mut back = Vec::new();
    ///     client.read_to_end(&mut back).await?;
    ///     assert_eq!(back, b"echo me");
    ///     assert_eq!(echo.await??, 7);
    ///     Ok::<(), Box<dyn std::error::Error>>(())
    /// })??;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn split(&mut self) -> (tcp::ReadHalf<'_>, tcp::WriteHalf<'_>) {
        tcp::halves(self.socket())
    }
}

impl UnixStream {
    /// Splits into borrowed read and write halves, as [`TcpStream::split`] does.
    ///
    /// ```
    /// use evloop::net::UnixStream;
    /// use evloop::io::{AsyncReadExt, AsyncWriteExt};
    ///
    /// evloop::run(async {
    ///     let (mut a, mut b) = UnixStream::pair()?;
    ///     let echo = evloop::spawn(async move {
    ///         let (mut rd, mut wr) = b.split();
    ///         evloop::io::copy(&mut rd, &mut wr).await // echo until end of stream
    ///     });
    ///     a.write_all(b"abc").await?;
    ///     let mut back = [0; 3];
    ///     a.read_exact(&mut back).await?;
    ///     assert_eq!(&back, b"abc");
    ///     a.shutdown().await?;
    ///     assert_eq!(echo.await??, 3);
    ///     Ok::<(), Box<dyn std::error::Error>>(())
    /// })??;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn split(&mut self) -> (unix::ReadHalf<'_>, unix::WriteHalf<'_>) {
        unix::halves(self.socket())
    }
}

// ---------------------------------------------------------------------------------------------
// peek: tokio has it on a TCP stream's read halves (and the stream); a peek never takes bytes,
// so it does not disturb the reads.

/// `poll_peek` of a socket into a `ReadBuf`, tokio's shape: the bytes go in the free part and
/// are counted filled; the count is returned too.
pub(crate) fn poll_peek_into(
    sock: &crate::io::net::Socket,
    cx: &mut Context<'_>,
    buf: &mut ReadBuf<'_>,
) -> Poll<io::Result<usize>> {
    let n = ready!(sock.poll_peek(cx, buf.initialize_unfilled()))?;
    buf.advance(n);
    Poll::Ready(Ok(n))
}

impl tcp::ReadHalf<'_> {
    /// Copies the next received bytes into `buf` without taking them (`recv(MSG_PEEK)`); waits
    /// for data like a read; 0 is end of stream.
    ///
    /// ```
    /// use evloop::io::{AsyncReadExt, AsyncWriteExt};
    /// use evloop::net::{TcpListener, TcpStream};
    ///
    /// evloop::run(async {
    ///     let listener = TcpListener::bind("127.0.0.1:0").await?;
    ///     let mut client = TcpStream::connect(listener.local_addr()?).await?;
    ///     let (mut server, _) = listener.accept().await?;
    ///     client.write_all(b"GET /").await?;
    ///     let (mut rd, _wr) = server.split();
    ///     let mut first = [0; 3];
    ///     let n = rd.peek(&mut first).await?;
    ///     assert_eq!(&first[..n], &b"GET"[..n]);
    ///     let mut all = [0; 5];
    ///     rd.read_exact(&mut all).await?; // the peeked bytes are still there
    ///     assert_eq!(&all, b"GET /");
    ///     Ok::<(), std::io::Error>(())
    /// })??;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub async fn peek(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        poll_fn(|cx| self.socket().poll_peek(cx, buf)).await
    }

    /// `poll` form of [`peek`](Self::peek), into a [`ReadBuf`]; returns how many bytes it
    /// copied.
    ///
    /// ```
    /// use std::future::poll_fn;
    /// use evloop::io::{AsyncWriteExt, ReadBuf};
    /// use evloop::net::{TcpListener, TcpStream};
    ///
    /// evloop::run(async {
    ///     let listener = TcpListener::bind("127.0.0.1:0").await?;
    ///     let mut client = TcpStream::connect(listener.local_addr()?).await?;
    ///     let (mut server, _) = listener.accept().await?;
    ///     client.write_all(b"x").await?;
    ///     let (mut rd, _wr) = server.split();
    ///     let mut storage = [0; 4];
    ///     let mut buf = ReadBuf::new(&mut storage);
    ///     assert_eq!(poll_fn(|cx| rd.poll_peek(cx, &mut buf)).await?, 1);
    ///     assert_eq!(buf.filled(), b"x");
    ///     Ok::<(), std::io::Error>(())
    /// })??;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn poll_peek(&mut self, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<usize>> {
        poll_peek_into(self.socket(), cx, buf)
    }
}

impl tcp::OwnedReadHalf {
    /// Copies the next received bytes into `buf` without taking them, as
    /// [`ReadHalf::peek`](tcp::ReadHalf::peek) does.
    ///
    /// ```
    /// use evloop::io::{AsyncReadExt, AsyncWriteExt};
    /// use evloop::net::{TcpListener, TcpStream};
    ///
    /// evloop::run(async {
    ///     let listener = TcpListener::bind("127.0.0.1:0").await?;
    ///     let mut client = TcpStream::connect(listener.local_addr()?).await?;
    ///     let (server, _) = listener.accept().await?;
    ///     client.write_all(b"hi").await?;
    ///     let (mut rd, _wr) = server.into_split();
    ///     let mut buf = [0; 2];
    ///     let n = rd.peek(&mut buf).await?;
    ///     assert_eq!(&buf[..n], &b"hi"[..n]);
    ///     rd.read_exact(&mut buf).await?;
    ///     assert_eq!(&buf, b"hi");
    ///     Ok::<(), std::io::Error>(())
    /// })??;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub async fn peek(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        poll_fn(|cx| self.socket().poll_peek(cx, buf)).await
    }

    /// `poll` form of [`peek`](Self::peek), into a [`ReadBuf`].
    ///
    /// ```
    /// use std::future::poll_fn;
    /// use evloop::io::{AsyncWriteExt, ReadBuf};
    /// use evloop::net::{TcpListener, TcpStream};
    ///
    /// evloop::run(async {
    ///     let listener = TcpListener::bind("127.0.0.1:0").await?;
    ///     let mut client = TcpStream::connect(listener.local_addr()?).await?;
    ///     let (server, _) = listener.accept().await?;
    ///     client.write_all(b"y").await?;
    ///     let (mut rd, _wr) = server.into_split();
    ///     let mut storage = [0; 4];
    ///     let mut buf = ReadBuf::new(&mut storage);
    ///     assert_eq!(poll_fn(|cx| rd.poll_peek(cx, &mut buf)).await?, 1);
    ///     Ok::<(), std::io::Error>(())
    /// })??;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn poll_peek(&mut self, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<usize>> {
        poll_peek_into(self.socket(), cx, buf)
    }
}
