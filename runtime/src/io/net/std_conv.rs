//! Conversions between evloop's sockets and std's (tokio's `from_std` / `into_std`): a std
//! socket made elsewhere (a blocking `bind` at start-up, a listener passed down by a
//! supervisor, `socket2`'s options) joins the loop, and an evloop socket leaves it.
//!
//! `from_std` switches the fd to non-blocking mode and registers it with the running loop
//! (the generic [`Socket`]'s adoption, as `TcpStream::from_std` has always done); `into_std`
//! deregisters it and hands the fd back still non-blocking, as tokio's does
//! (`set_nonblocking(false)` for blocking calls). One macro writes the pair for each type.

use std::io;

use crate::io::net::socket::{Kind, Socket};
use crate::io::net::{TcpListener, TcpStream, UdpSocket, UnixListener, UnixStream};

macro_rules! std_conv {
    // `into_std` alone (`TcpStream::from_std` is in tcp.rs: it came first).
    (into $ty:ident, $std:ty, $setup:literal) => {
        impl $ty {
            #[doc = concat!("The std `", stringify!($ty), "` of the same socket, deregistered from the loop and still non-blocking: tokio's `into_std`.")]
            ///
            /// ```
            /// evloop::run(async {
            #[doc = $setup]
            #[doc = concat!("    let ours = evloop::net::", stringify!($ty), "::from_std(theirs)?;")]
            ///     let back = ours.into_std()?;
            ///     back.set_nonblocking(false)?; // a plain blocking std socket again
            ///     Ok::<(), std::io::Error>(())
            /// })??;
            /// # Ok::<(), Box<dyn std::error::Error>>(())
            /// ```
            pub fn into_std(self) -> io::Result<$std> {
                Ok(<$std>::from(self.into_socket().into_fd()))
            }
        }
    };
    ($ty:ident, $std:ty, $kind:expr, $wrap:path, $setup:literal, $check:literal) => {
        std_conv!(into $ty, $std, $setup);

        impl $ty {
            #[doc = concat!("Adopts a std `", stringify!($ty), "` (switched to non-blocking mode) on the running loop: tokio's `from_std`.")]
            ///
            /// ```
            /// evloop::run(async {
            #[doc = $setup]
            #[doc = concat!("    let ours = evloop::net::", stringify!($ty), "::from_std(theirs)?;")]
            #[doc = $check]
            ///     Ok::<(), std::io::Error>(())
            /// })??;
            /// # Ok::<(), Box<dyn std::error::Error>>(())
            /// ```
            pub fn from_std(socket: $std) -> io::Result<$ty> {
                Ok($wrap(Socket::adopt(socket.into(), $kind)?))
            }
        }
    };
}

std_conv!(
    TcpListener,
    std::net::TcpListener,
    Kind::Stream,
    TcpListener::from_listening,
    "    let theirs = std::net::TcpListener::bind(\"127.0.0.1:0\")?;",
    "    let _client = evloop::net::TcpStream::connect(ours.local_addr()?).await?;\n    ours.accept().await?;"
);
std_conv!(
    UnixListener,
    std::os::unix::net::UnixListener,
    Kind::Stream,
    UnixListener::from_listening,
    "    let path = std::env::temp_dir().join(format!(\"evloop-std-conv-{}\", std::process::id()));\n    let _ = std::fs::remove_file(&path);\n    let theirs = std::os::unix::net::UnixListener::bind(&path)?;\n    std::fs::remove_file(&path)?; // the bound fd stays usable",
    "    assert!(ours.local_addr()?.as_pathname().is_some());"
);
std_conv!(
    into TcpStream, std::net::TcpStream,
    "    let l = std::net::TcpListener::bind(\"127.0.0.1:0\")?;\n    let theirs = std::net::TcpStream::connect(l.local_addr()?)?;"
);
std_conv!(
    UnixStream,
    std::os::unix::net::UnixStream,
    Kind::Stream,
    UnixStream::from_socket,
    "    let (theirs, _peer) = std::os::unix::net::UnixStream::pair()?;",
    "    assert!(ours.peer_addr().is_ok());"
);
std_conv!(
    UdpSocket,
    std::net::UdpSocket,
    Kind::Message,
    UdpSocket::from_socket,
    "    let theirs = std::net::UdpSocket::bind(\"127.0.0.1:0\")?;",
    "    assert!(ours.local_addr()?.ip().is_loopback());"
);
