//! Sockets for tasks: TCP, UDP and Unix-domain sockets on [`AsyncFd`].
//!
//! Every socket is created `SOCK_CLOEXEC|SOCK_NONBLOCK` and registered with the loop once,
//! edge-triggered, for its whole life (see [`AsyncFd`] for the readiness protocol). Reads use
//! `recv(2)`, writes `send(2)`/`sendmsg(2)` with `MSG_NOSIGNAL`, so a write to a closed peer is
//! an `EPIPE` error and never a `SIGPIPE` that kills the process (mio #577).
//!
//! A stream socket's read that returns fewer bytes than asked drained the kernel's receive
//! queue: readiness is cleared then, without a second `recv` that would only say `EAGAIN`, so a
//! request/response exchange costs one `recv` and one `send` per message. Data that arrives
//! later raises a new edge, so nothing is lost.
//!
//! Connecting is asyncio's `sock_connect`: a non-blocking `connect(2)` answers `EINPROGRESS`,
//! the task waits for writability, and `getsockopt(SO_ERROR)` says how it went. A Unix
//! listener's full backlog (`EAGAIN`) is waited out too, by retrying (see `Socket::connect`).
//!
//! # The `net/` folder
//! `socket` holds [`Socket`], the generic socket; the typed sockets wrap one: `tcp`
//! ([`TcpListener`], [`TcpStream`]), `tcp_socket` ([`TcpSocket`], one to configure first),
//! `udp` ([`UdpSocket`]), `unix` ([`UnixListener`], [`UnixStream`], [`UnixDatagram`]); their
//! split halves are in `io/split.rs`; `readiness` gives the connected streams tokio's
//! `readable`/`writable`/`try_read`/`try_write`, `ready` the rest of tokio's readiness API
//! (`ready(Interest)`, `poll_read_ready`, `try_read_vectored`, `into_std`), `half_ready` the same
//! on the halves of a split stream (with `local_addr`, `peer_addr`), `std_conv` the conversions
//! to and from std's sockets (`from_std`, `into_std`), `options` tokio's `set_linger`/`linger`
//! and `set_ttl`/`ttl`. `resolve` is the
//! loop's `getaddrinfo`/`getnameinfo`, `sock_api` asyncio's `sock_*` methods. This file only
//! declares the modules and re-exports.
//!
//! [`AsyncFd`]: crate::io::AsyncFd

mod half_ready;
mod options;
mod readiness;
mod ready;
mod resolve;
mod sock_api;
mod socket;
mod std_conv;
mod tcp;
mod tcp_socket;
mod udp;
mod unix;

pub use evloop_syscalls::{Domain, Shutdown, SockAddr, SockType, UnixAddr};

pub use self::socket::Socket;
pub(crate) use self::socket::domain_of;
pub(crate) use self::tcp::connect_any;
pub use self::tcp::{TcpListener, TcpStream};
pub use self::tcp_socket::TcpSocket;
pub use self::udp::UdpSocket;
pub use self::unix::{UnixDatagram, UnixListener, UnixStream};
pub use crate::io::addr::ToSocketAddrs;
