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

use crate::io::net::{TcpStream, UnixStream};

/// Writes the four half types of one stream kind in the current module. `$pair` is a doc-test
/// expression (inside `evloop::run(async { .. })`) giving two connected streams of the kind.
macro_rules! halves {
    ($stream:literal, $pair:literal) => {
        use std::rc::Rc;

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
    };
}

/// The halves of a [`TcpStream`] (`evloop::net::tcp`).
pub(crate) mod tcp {
    halves!(
        "`TcpStream`",
        "{ let l = evloop::net::TcpListener::bind(\"127.0.0.1:0\").await?; \
         let c = evloop::net::TcpStream::connect(l.local_addr()?).await?; (c, l.accept().await?.0) }"
    );
}

/// The halves of a [`UnixStream`] (`evloop::net::unix`).
pub(crate) mod unix {
    halves!("`UnixStream`", "evloop::net::UnixStream::pair()?");
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
