//! Sockets: creation, naming, connecting, and moving bytes.
//!
//! The networking layer builds TCP, UDP and Unix-socket transports on these
//! wrappers. Every socket they create is `SOCK_CLOEXEC | SOCK_NONBLOCK`, so
//! `connect` and `accept4` never block the loop: `connect` reports
//! `EINPROGRESS` and the caller waits for writability, then reads the
//! outcome with [`take_socket_error`](crate::take_socket_error).
//!
//! Sending always passes `MSG_NOSIGNAL`: a peer that went away gives `EPIPE`
//! (or `ECONNRESET`) as an error, never a `SIGPIPE` that would kill the
//! process where the signal is not ignored. That is why there is
//! [`send_vectored`] (a `sendmsg`) rather than `writev` for sockets.
//!
//! Calls that can be interrupted after transferring nothing (`accept4`, the
//! sends and receives, `sendfile`) are retried on `EINTR`; `connect` is not
//! (see its docs). Addresses travel as [`SockAddr`], converted to the
//! kernel's form privately (`crate::sockaddr`).

use std::io::{self, IoSlice};
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd};

use crate::Syscall;
use crate::call::{call, call_retry_eintr, is_eintr};
use crate::io::IOV_MAX;
use crate::raw;
use crate::sigpipe::SigpipeGuard;
use crate::sockaddr::{Domain, RawSockAddr, SockAddr};

/// A socket's type (the second argument of `socket(2)`, without flags).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum SockType {
    /// `SOCK_STREAM`: a reliable byte stream (TCP, Unix stream).
    Stream,
    /// `SOCK_DGRAM`: datagrams with boundaries kept (UDP, Unix datagram).
    Datagram,
}

impl SockType {
    /// The `SOCK_*` constant.
    pub(crate) const fn raw(self) -> libc::c_int {
        match self {
            SockType::Stream => libc::SOCK_STREAM,
            SockType::Datagram => libc::SOCK_DGRAM,
        }
    }
}

/// Which half of a connection [`shutdown`] closes.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum Shutdown {
    /// `SHUT_RD`: no more receiving.
    Read,
    /// `SHUT_WR`: no more sending; the peer reads end of file (TCP sends a
    /// FIN) once it has read everything sent before.
    Write,
    /// `SHUT_RDWR`: both.
    Both,
}

/// The flags every created socket gets.
const SOCK_FLAGS: libc::c_int = libc::SOCK_CLOEXEC | libc::SOCK_NONBLOCK;

fn to_usize(n: libc::ssize_t) -> usize {
    // `call` has already turned -1 into an error; other results are >= 0.
    usize::try_from(n).unwrap_or(0)
}

// ---------------------------------------------------------------------------
// Creation
// ---------------------------------------------------------------------------

/// `socket(domain, type | SOCK_CLOEXEC | SOCK_NONBLOCK, 0)`: a new socket.
///
/// Man page: <https://man7.org/linux/man-pages/man2/socket.2.html>
///
/// Protocol 0 picks the default: TCP for an Internet stream, UDP for an
/// Internet datagram socket. `EAFNOSUPPORT` means the kernel has no such
/// family (IPv6 disabled at boot, for one); `EMFILE`/`ENFILE` mean the
/// process/system is out of descriptors.
/// Counted as [`Syscall::Socket`].
#[doc(alias = "socket(2)")]
pub fn socket(domain: Domain, ty: SockType) -> io::Result<OwnedFd> {
    #[cfg(feature = "simulation")]
    crate::sim::hook!(crate::sim::ops::socket(domain, ty));
    let fd = call(Syscall::Socket, || {
        // SAFETY: socket takes three integers and touches no user memory.
        unsafe { libc::socket(domain.family(), ty.raw() | SOCK_FLAGS, 0) }
    })?;
    // SAFETY: on success the kernel returned a new descriptor that nothing
    // else in this process owns; the OwnedFd becomes its only owner.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// `socketpair(domain, type | SOCK_CLOEXEC | SOCK_NONBLOCK, 0, fds)`: two
/// connected sockets.
///
/// Man page: <https://man7.org/linux/man-pages/man2/socketpair.2.html>
///
/// Only [`Domain::Unix`] supports it on Linux: the Internet domains fail
/// with `EOPNOTSUPP`. Both ends are close-on-exec, non-blocking and
/// unnamed ([`UnixAddr::Unnamed`](crate::UnixAddr::Unnamed) from
/// [`local_addr`] and [`peer_addr`]). A datagram pair keeps message
/// boundaries, which a stream pair does not.
/// Counted as [`Syscall::Socketpair`].
#[doc(alias = "socketpair(2)")]
pub fn socketpair(domain: Domain, ty: SockType) -> io::Result<(OwnedFd, OwnedFd)> {
    #[cfg(feature = "simulation")]
    crate::sim::hook!(crate::sim::ops::socketpair(domain, ty));
    let mut fds: [libc::c_int; 2] = [-1, -1];
    call(Syscall::Socketpair, || {
        // SAFETY: socketpair writes exactly two ints to its last argument,
        // which points to the local two-element array `fds`, live for the
        // call.
        unsafe { libc::socketpair(domain.family(), ty.raw() | SOCK_FLAGS, 0, fds.as_mut_ptr()) }
    })?;
    // SAFETY: on success both entries are new descriptors that nothing else
    // in this process owns; each OwnedFd becomes the only owner of one.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

// ---------------------------------------------------------------------------
// Naming and connecting
// ---------------------------------------------------------------------------

/// `bind(fd, addr, addrlen)`: gives the socket its local address.
///
/// Man page: <https://man7.org/linux/man-pages/man2/bind.2.html>
///
/// * Port 0 asks the kernel for a free ephemeral port; read it back with
///   [`local_addr`].
/// * A Unix *pathname* creates the socket file; it fails with `EADDRINUSE`
///   if any file exists there (a stale socket file from an earlier run
///   included) and the file outlives the socket: unlink it yourself.
/// * [`UnixAddr::Unnamed`](crate::UnixAddr::Unnamed) (length 2) makes the
///   kernel pick a free 5-hex-digit abstract name (autobind).
/// * Rebinding a TCP port in `TIME_WAIT` needs
///   [`set_reuseaddr`](crate::set_reuseaddr) first.
///
/// An invalid [`UnixAddr`](crate::UnixAddr) built from the variants directly
/// is [`io::ErrorKind::InvalidInput`] before any call (not counted).
/// Counted as [`Syscall::Bind`].
#[doc(alias = "bind(2)")]
pub fn bind(fd: BorrowedFd<'_>, addr: &SockAddr) -> io::Result<()> {
    let (raw, len) = RawSockAddr::encode(addr)?;
    #[cfg(feature = "simulation")]
    crate::sim::hook!(crate::sim::ops::bind(fd, addr));
    call(Syscall::Bind, || {
        // SAFETY: the kernel reads `len` bytes of address from `raw.as_ptr()`;
        // `len` <= 128 = size_of(RawSockAddr), and `raw` is a live local.
        unsafe { libc::bind(fd.as_raw_fd(), raw.as_ptr(), len) }
    })?;
    Ok(())
}

/// `listen(fd, backlog)`: marks a bound stream socket as accepting
/// connections.
///
/// Man page: <https://man7.org/linux/man-pages/man2/listen.2.html>
///
/// The kernel silently caps `backlog` at `net.core.somaxconn` (4096 on
/// recent kernels) and treats a negative value as that cap. An unbound TCP
/// socket is bound to an ephemeral port first. A datagram socket is
/// `EOPNOTSUPP`.
/// Counted as [`Syscall::Listen`].
#[doc(alias = "listen(2)")]
pub fn listen(fd: BorrowedFd<'_>, backlog: i32) -> io::Result<()> {
    #[cfg(feature = "simulation")]
    crate::sim::hook!(crate::sim::ops::listen(fd, backlog));
    call(Syscall::Listen, || {
        // SAFETY: listen takes two integers and touches no user memory.
        unsafe { libc::listen(fd.as_raw_fd(), backlog) }
    })?;
    Ok(())
}

/// `accept4(fd, &addr, &addrlen, SOCK_CLOEXEC | SOCK_NONBLOCK)`: takes one
/// pending connection; returns the new socket and the peer's address.
///
/// Man page: <https://man7.org/linux/man-pages/man2/accept4.2.html>
///
/// * No pending connection on the non-blocking listener is `EAGAIN`
///   ([`io::ErrorKind::WouldBlock`]): wait for readability.
/// * Unlike BSD, Linux does not copy `O_NONBLOCK` from the listener to the
///   new socket; the flags argument sets it (and close-on-exec) atomically.
/// * `ECONNABORTED` (the peer reset the connection while it waited in the
///   queue) is returned as is: the caller simply accepts again. Linux also
///   passes pending network errors of the new connection (`ENETDOWN`,
///   `EPROTO`, `EHOSTUNREACH`, ...) through `accept`; treat them the same.
/// * `EMFILE`/`ENFILE`: out of descriptors, and the connection *stays* in
///   the queue, so the listener stays readable (a level-triggered loop
///   spins). libuv's fix: keep a spare descriptor
///   ([`open_dev_null`](crate::open_dev_null)), close it, accept and close
///   the connection, reopen the spare.
/// * A Unix client that never bound has the peer address
///   [`UnixAddr::Unnamed`](crate::UnixAddr::Unnamed).
///
/// Retried on `EINTR`. If the kernel reports an address family this crate
/// does not model (say `AF_VSOCK`), the new connection is closed and the
/// call fails with [`io::ErrorKind::Unsupported`].
/// Counted as [`Syscall::Accept4`], once per attempt.
#[doc(alias = "accept4(2)")]
#[doc(alias = "accept")]
pub fn accept4(fd: BorrowedFd<'_>) -> io::Result<(OwnedFd, SockAddr)> {
    #[cfg(feature = "simulation")]
    crate::sim::hook!(crate::sim::ops::accept4(fd));
    let mut raw = RawSockAddr::zeroed();
    let mut len = RawSockAddr::CAPACITY;
    let new_fd = call_retry_eintr(Syscall::Accept4, || {
        len = RawSockAddr::CAPACITY;
        // SAFETY: the kernel writes at most `len` (= 128, the size of `raw`)
        // bytes of peer address to `raw.as_mut_ptr()` and the actual length
        // to `&mut len`; both are live locals borrowed only here.
        unsafe { libc::accept4(fd.as_raw_fd(), raw.as_mut_ptr(), &mut len, SOCK_FLAGS) }
    })?;
    // SAFETY: on success the kernel returned a new descriptor that nothing
    // else in this process owns; the OwnedFd becomes its only owner (and
    // closes it if decoding the address fails below).
    let owned = unsafe { OwnedFd::from_raw_fd(new_fd) };
    let addr = raw.decode(len)?;
    Ok((owned, addr))
}

/// `connect(fd, addr, addrlen)`: starts connecting the socket to `addr` (or,
/// for a datagram socket, sets its default destination and filters what it
/// receives).
///
/// Man page: <https://man7.org/linux/man-pages/man2/connect.2.html>
///
/// On the non-blocking sockets this crate creates, a TCP connect normally
/// fails with `EINPROGRESS`: an `Err(e)` whose `e.raw_os_error()` is
/// `Some(`[`errno::EINPROGRESS`](crate::errno::EINPROGRESS)`)`.
/// Wait until the socket is writable (epoll `OUT`, possibly with `ERR`/
/// `HUP`), then call [`take_socket_error`](crate::take_socket_error): `None`
/// means connected, `Some(e)` is the failure (`ECONNREFUSED`,
/// `ETIMEDOUT`, ...).
///
/// Kernel surprises:
/// * On loopback the handshake may finish inside the call: `Ok(())`, or an
///   immediate `ECONNREFUSED`. Handle both like the asynchronous outcome.
/// * A Unix stream connect never reports `EINPROGRESS`: it succeeds at once,
///   or fails with `EAGAIN` ([`io::ErrorKind::WouldBlock`]) when the
///   listener's backlog is full. That `EAGAIN` means "try again later",
///   not "in progress".
/// * Connecting again while in progress is `EALREADY`; once connected,
///   `EISCONN`.
///
/// **`EINTR` is not retried, and is reported as `EINPROGRESS`.** An
/// interrupted `connect` leaves the attempt running in the background
/// (POSIX: "the connection shall be established asynchronously"); calling
/// `connect` again would give `EALREADY` or `EISCONN`, not a result. So the
/// caller waits for writability exactly as for `EINPROGRESS`, and this
/// wrapper gives it one code path to handle. (Only a blocking socket can be
/// interrupted this way; an injected `EINTR` takes the same path.)
///
/// An invalid [`UnixAddr`](crate::UnixAddr) built from the variants directly
/// is [`io::ErrorKind::InvalidInput`] before any call (not counted).
/// Counted as [`Syscall::Connect`], once.
#[doc(alias = "connect(2)")]
pub fn connect(fd: BorrowedFd<'_>, addr: &SockAddr) -> io::Result<()> {
    let (raw, len) = RawSockAddr::encode(addr)?;
    #[cfg(feature = "simulation")]
    crate::sim::hook!(crate::sim::ops::connect(fd, addr));
    let r = call(Syscall::Connect, || {
        // SAFETY: the kernel reads `len` (<= 128) bytes of address from
        // `raw.as_ptr()`, a live local of 128 bytes.
        unsafe { libc::connect(fd.as_raw_fd(), raw.as_ptr(), len) }
    });
    match r {
        Ok(_) => Ok(()),
        Err(e) if is_eintr(&e) => Err(io::Error::from_raw_os_error(libc::EINPROGRESS)),
        Err(e) => Err(e),
    }
}

/// `getsockname(fd, &addr, &addrlen)`: the socket's own address.
///
/// Man page: <https://man7.org/linux/man-pages/man2/getsockname.2.html>
///
/// An unbound Internet socket reports the wildcard address with port 0; an
/// unbound Unix socket reports
/// [`UnixAddr::Unnamed`](crate::UnixAddr::Unnamed). After `bind` with port
/// 0 this is how to learn the port the kernel chose. An address of a family
/// this crate does not model is [`io::ErrorKind::Unsupported`].
/// Counted as [`Syscall::Getsockname`].
#[doc(alias = "getsockname(2)")]
pub fn local_addr(fd: BorrowedFd<'_>) -> io::Result<SockAddr> {
    #[cfg(feature = "simulation")]
    crate::sim::hook!(crate::sim::ops::local_addr(fd));
    let mut raw = RawSockAddr::zeroed();
    let mut len = RawSockAddr::CAPACITY;
    call(Syscall::Getsockname, || {
        // SAFETY: the kernel writes at most `len` (= 128, the size of `raw`)
        // bytes to `raw.as_mut_ptr()` and the full length to `&mut len`;
        // both are live locals.
        unsafe { libc::getsockname(fd.as_raw_fd(), raw.as_mut_ptr(), &mut len) }
    })?;
    raw.decode(len)
}

/// `getpeername(fd, &addr, &addrlen)`: the address of the connected peer.
///
/// Man page: <https://man7.org/linux/man-pages/man2/getpeername.2.html>
///
/// `ENOTCONN` when not connected, which includes a TCP connect still in
/// progress and, after a failed connect, the socket that failed. A Unix
/// peer that never bound is
/// [`UnixAddr::Unnamed`](crate::UnixAddr::Unnamed).
/// Counted as [`Syscall::Getpeername`].
#[doc(alias = "getpeername(2)")]
pub fn peer_addr(fd: BorrowedFd<'_>) -> io::Result<SockAddr> {
    #[cfg(feature = "simulation")]
    crate::sim::hook!(crate::sim::ops::peer_addr(fd));
    let mut raw = RawSockAddr::zeroed();
    let mut len = RawSockAddr::CAPACITY;
    call(Syscall::Getpeername, || {
        // SAFETY: the kernel writes at most `len` (= 128, the size of `raw`)
        // bytes to `raw.as_mut_ptr()` and the full length to `&mut len`;
        // both are live locals.
        unsafe { libc::getpeername(fd.as_raw_fd(), raw.as_mut_ptr(), &mut len) }
    })?;
    raw.decode(len)
}

/// `shutdown(fd, how)`: closes one or both directions of a connection
/// without closing the descriptor.
///
/// Man page: <https://man7.org/linux/man-pages/man2/shutdown.2.html>
///
/// [`Shutdown::Write`] is the half-close: the peer reads end of file after
/// the data already sent. Unlike `close`, it acts on the connection itself,
/// so it affects every descriptor (`dup`s, other processes) sharing it.
/// `ENOTCONN` on an unconnected socket (TCP: also after the peer reset the
/// connection).
/// Counted as [`Syscall::Shutdown`].
#[doc(alias = "shutdown(2)")]
pub fn shutdown(fd: BorrowedFd<'_>, how: Shutdown) -> io::Result<()> {
    #[cfg(feature = "simulation")]
    crate::sim::hook!(crate::sim::ops::shutdown(fd, how));
    let how = match how {
        Shutdown::Read => libc::SHUT_RD,
        Shutdown::Write => libc::SHUT_WR,
        Shutdown::Both => libc::SHUT_RDWR,
    };
    call(Syscall::Shutdown, || {
        // SAFETY: shutdown takes two integers and touches no user memory.
        unsafe { libc::shutdown(fd.as_raw_fd(), how) }
    })?;
    Ok(())
}

// ---------------------------------------------------------------------------
// Moving bytes
// ---------------------------------------------------------------------------

/// `send(fd, buf, buf.len(), MSG_NOSIGNAL)`: sends up to `buf.len()` bytes on
/// a connected socket; returns how many were taken.
///
/// Man page: <https://man7.org/linux/man-pages/man2/send.2.html>
///
/// Always `MSG_NOSIGNAL`: sending after the peer closed or reset gives
/// `EPIPE` ([`io::ErrorKind::BrokenPipe`]) or `ECONNRESET`
/// ([`io::ErrorKind::ConnectionReset`]), and never raises `SIGPIPE` (which
/// [`write()`](crate::write) on a socket does). A full send buffer is
/// `EAGAIN` ([`io::ErrorKind::WouldBlock`]); a short count is normal on a
/// stream. On a datagram socket the whole buffer is one datagram (or
/// `EMSGSIZE`). Retried on `EINTR`. `strace` shows it as `sendto` with no
/// address.
/// Counted as [`Syscall::Send`], once per attempt.
#[doc(alias = "send(2)")]
#[doc(alias = "MSG_NOSIGNAL")]
#[inline]
pub fn send(fd: BorrowedFd<'_>, buf: &[u8]) -> io::Result<usize> {
    #[cfg(feature = "simulation")]
    crate::sim::hook!(crate::sim::ops::send(fd, buf));
    raw::direct_retry_eintr(Syscall::Send, || {
        // SAFETY: sendto(fd, buf, len, MSG_NOSIGNAL, NULL, 0): the kernel reads at most
        // `buf.len()` bytes starting at `buf.as_ptr()`, all inside the borrowed slice; no address.
        unsafe {
            raw::syscall6(
                libc::SYS_sendto,
                fd.as_raw_fd() as usize,
                buf.as_ptr() as usize,
                buf.len(),
                libc::MSG_NOSIGNAL as usize,
                0,
                0,
            )
        }
    })
}

#[inline]
fn recv_flags(fd: BorrowedFd<'_>, buf: &mut [u8], flags: libc::c_int) -> io::Result<usize> {
    #[cfg(feature = "simulation")]
    crate::sim::hook!(crate::sim::ops::recv(fd, buf, flags));
    raw::direct_retry_eintr(Syscall::Recv, || {
        // SAFETY: recvfrom(fd, buf, len, flags, NULL, NULL): the kernel writes at most
        // `buf.len()` bytes starting at `buf.as_mut_ptr()`, all inside the exclusively borrowed
        // slice; no address is returned.
        unsafe {
            raw::syscall6(
                libc::SYS_recvfrom,
                fd.as_raw_fd() as usize,
                buf.as_mut_ptr() as usize,
                buf.len(),
                flags as usize,
                0,
                0,
            )
        }
    })
}

/// `recv(fd, buf, buf.len(), 0)`: receives up to `buf.len()` bytes; on a
/// stream, `Ok(0)` is end of file (the peer shut down its writing half).
///
/// Man page: <https://man7.org/linux/man-pages/man2/recv.2.html>
///
/// Nothing to read is `EAGAIN` ([`io::ErrorKind::WouldBlock`]). A datagram
/// longer than `buf` is truncated and the rest discarded, silently. On a
/// datagram socket `Ok(0)` is an empty datagram, not end of file. A reset
/// connection is `ECONNRESET`. Retried on `EINTR`. `strace` shows it as
/// `recvfrom` with no address.
/// Counted as [`Syscall::Recv`], once per attempt.
#[doc(alias = "recv(2)")]
#[inline]
pub fn recv(fd: BorrowedFd<'_>, buf: &mut [u8]) -> io::Result<usize> {
    recv_flags(fd, buf, 0)
}

/// `recv(fd, buf, buf.len(), MSG_PEEK)`: like [`recv`], but the data stays
/// queued and the next receive returns it again.
///
/// Man page: <https://man7.org/linux/man-pages/man2/recv.2.html>
///
/// On a stream it may return fewer bytes than are queued. Retried on
/// `EINTR`.
/// Counted as [`Syscall::Recv`] (it is a `recv`), once per attempt.
#[doc(alias = "recv")]
#[doc(alias = "MSG_PEEK")]
pub fn recv_peek(fd: BorrowedFd<'_>, buf: &mut [u8]) -> io::Result<usize> {
    recv_flags(fd, buf, libc::MSG_PEEK)
}

/// `recv(fd, buf, 1, MSG_PEEK | MSG_TRUNC)`: the length of the next datagram
/// of a datagram socket, which stays queued (so a buffer of the right size
/// can be prepared for it).
///
/// Man page: <https://man7.org/linux/man-pages/man2/recv.2.html>
///
/// With `MSG_TRUNC` the kernel returns the datagram's real length whatever
/// the buffer's size (UDP, and Unix datagram sockets since Linux 3.4). For
/// datagram sockets only: on a TCP socket `MSG_TRUNC` means "discard", and
/// the call would return how much it peeked (at most 1). Nothing queued is
/// `EAGAIN`. Retried on `EINTR`.
/// Counted as [`Syscall::Recv`] (it is a `recv`), once per attempt.
#[doc(alias = "recv")]
#[doc(alias = "MSG_TRUNC")]
pub fn peek_datagram_len(fd: BorrowedFd<'_>) -> io::Result<usize> {
    let mut one = [0u8; 1];
    recv_flags(fd, &mut one, libc::MSG_PEEK | libc::MSG_TRUNC)
}

/// `sendmsg(fd, &msg, MSG_NOSIGNAL)` with the buffers as `msg.msg_iov` and
/// no address or control data: a gather send, like `writev` but without
/// `SIGPIPE`.
///
/// Man page: <https://man7.org/linux/man-pages/man2/sendmsg.2.html>
///
/// Only the first [`IOV_MAX`] buffers are used (more would be `EMSGSIZE`),
/// giving a short count. Errors and `EINTR` as for [`send`]: `EPIPE`/
/// `ECONNRESET` without `SIGPIPE`, `EAGAIN` when full, retried on `EINTR`.
/// Counted as [`Syscall::Sendmsg`], once per attempt.
#[doc(alias = "sendmsg(2)")]
#[doc(alias = "writev")]
pub fn send_vectored(fd: BorrowedFd<'_>, bufs: &[IoSlice<'_>]) -> io::Result<usize> {
    #[cfg(feature = "simulation")]
    crate::sim::hook!(crate::sim::ops::send_vectored(fd, bufs));
    let cnt = bufs.len().min(IOV_MAX);
    let msg = libc::msghdr {
        msg_name: std::ptr::null_mut(),
        msg_namelen: 0,
        // The kernel only reads the iovecs for a send; the `*mut` is the C
        // prototype's, not a licence to write.
        msg_iov: bufs.as_ptr().cast::<libc::iovec>().cast_mut(),
        msg_iovlen: cnt,
        msg_control: std::ptr::null_mut(),
        msg_controllen: 0,
        msg_flags: 0,
    };
    let n = call_retry_eintr(Syscall::Sendmsg, || {
        // SAFETY: the kernel reads the local `msg`; its name and control
        // pointers are NULL with zero lengths, so only `msg_iov` is followed:
        // std guarantees `IoSlice` is ABI-compatible with `struct iovec`, so
        // it points to `cnt` (<= bufs.len()) valid iovecs, and the kernel
        // reads `iov_len` bytes at each `iov_base`, each a `&[u8]` borrowed
        // for the lifetime of `bufs`. For a send nothing is written.
        unsafe { libc::sendmsg(fd.as_raw_fd(), &msg, libc::MSG_NOSIGNAL) }
    })?;
    Ok(to_usize(n))
}

/// `sendto(fd, buf, buf.len(), MSG_NOSIGNAL, addr, addrlen)`: sends one
/// datagram to `addr`; returns its length.
///
/// Man page: <https://man7.org/linux/man-pages/man2/sendto.2.html>
///
/// `MSG_NOSIGNAL` as for [`send`]. A datagram larger than the protocol
/// allows is `EMSGSIZE`. UDP surprise: an ICMP "port unreachable" for an
/// earlier datagram is reported later, as `ECONNREFUSED` from a following
/// send or receive, but only on a *connected* UDP socket. On a connected
/// stream socket the address is ignored (Linux) or `EISCONN`. Retried on
/// `EINTR`. An invalid [`UnixAddr`](crate::UnixAddr) built from the variants
/// directly is [`io::ErrorKind::InvalidInput`] before any call (not counted).
/// Counted as [`Syscall::Sendto`], once per attempt.
#[doc(alias = "sendto(2)")]
pub fn send_to(fd: BorrowedFd<'_>, buf: &[u8], addr: &SockAddr) -> io::Result<usize> {
    let (raw, len) = RawSockAddr::encode(addr)?;
    #[cfg(feature = "simulation")]
    crate::sim::hook!(crate::sim::ops::send_to(fd, buf, addr));
    let n = call_retry_eintr(Syscall::Sendto, || {
        // SAFETY: the kernel reads at most `buf.len()` bytes at
        // `buf.as_ptr()` (the borrowed slice) and `len` (<= 128) bytes of
        // address at `raw.as_ptr()` (a live 128-byte local).
        unsafe {
            libc::sendto(
                fd.as_raw_fd(),
                buf.as_ptr().cast(),
                buf.len(),
                libc::MSG_NOSIGNAL,
                raw.as_ptr(),
                len,
            )
        }
    })?;
    Ok(to_usize(n))
}

/// `recvfrom(fd, buf, buf.len(), 0, &addr, &addrlen)`: receives one datagram
/// and its sender's address.
///
/// Man page: <https://man7.org/linux/man-pages/man2/recvfrom.2.html>
///
/// * A datagram longer than `buf` is truncated, the rest discarded, and the
///   returned count is the truncated length.
/// * A datagram from an unbound Unix socket comes with no address at all
///   (length 0): [`UnixAddr::Unnamed`](crate::UnixAddr::Unnamed).
/// * On a connection-mode socket (TCP) Linux never reports the sender
///   either; the address is then also
///   [`UnixAddr::Unnamed`](crate::UnixAddr::Unnamed), meaning "none": use
///   [`peer_addr`] there.
///
/// Nothing queued is `EAGAIN` ([`io::ErrorKind::WouldBlock`]). Retried on
/// `EINTR`. A sender address of a family this crate does not model is
/// [`io::ErrorKind::Unsupported`] (the datagram is consumed).
/// Counted as [`Syscall::Recvfrom`], once per attempt.
#[doc(alias = "recvfrom(2)")]
pub fn recv_from(fd: BorrowedFd<'_>, buf: &mut [u8]) -> io::Result<(usize, SockAddr)> {
    #[cfg(feature = "simulation")]
    crate::sim::hook!(crate::sim::ops::recv_from(fd, buf));
    let mut raw = RawSockAddr::zeroed();
    let mut len = RawSockAddr::CAPACITY;
    let n = call_retry_eintr(Syscall::Recvfrom, || {
        len = RawSockAddr::CAPACITY;
        // SAFETY: the kernel writes at most `buf.len()` bytes at
        // `buf.as_mut_ptr()` (the exclusively borrowed slice), at most `len`
        // (= 128, the size of `raw`) bytes of address at `raw.as_mut_ptr()`,
        // and the address length to `&mut len`; both are live locals.
        unsafe {
            libc::recvfrom(
                fd.as_raw_fd(),
                buf.as_mut_ptr().cast(),
                buf.len(),
                0,
                raw.as_mut_ptr(),
                &mut len,
            )
        }
    })?;
    Ok((to_usize(n), raw.decode(len)?))
}

/// `sendfile(out_fd, in_fd, &offset, count)`: copies up to `count` bytes
/// from the file `in_fd`, starting at `*offset`, to `out_fd` inside the
/// kernel; advances `*offset` by the count returned.
///
/// Man page: <https://man7.org/linux/man-pages/man2/sendfile.2.html>
///
/// * `in_fd`'s own file position is neither used nor changed (the explicit
///   offset is), so one file can feed several sends concurrently.
/// * `in_fd` must support mmap-like reads (a regular file or block device,
///   not a socket or pipe): otherwise `EINVAL`. Like a kernel or seccomp
///   filter without the call (`ENOSYS`), that surfaces unchanged so the
///   caller can fall back to `read` + [`send`].
/// * `Ok(0)` means `*offset` is at or past the end of the file. Short counts
///   are normal (at most 0x7ffff000 bytes per call, and a non-blocking
///   `out_fd` takes what fits); a full socket is `EAGAIN`.
/// * Writing to a socket whose peer is gone is `EPIPE`, and the kernel also
///   raises `SIGPIPE` (there is no `MSG_NOSIGNAL` for `sendfile`), even when
///   it copied part of the data first and returns that count. This wrapper
///   never lets the signal reach the process: it blocks `SIGPIPE` on the
///   calling thread around the call and then consumes a `SIGPIPE` the call
///   raised with a zero-timeout `sigtimedwait` (unless one was already pending
///   before, which stays pending; and one that another process sent meanwhile
///   is put back, see [`write_nosigpipe`](crate::write_nosigpipe)). That costs
///   four more system calls per call (`pthread_sigmask` twice, `sigpending`,
///   `sigtimedwait`, plus a `getpid` when a signal was taken), counted under
///   their own [`Syscall`]s; `sendfile` moves large chunks, so they are cheap
///   next to it.
///   If the thread already blocks `SIGPIPE`, the wrapper leaves the mask and
///   any pending signal alone.
/// * `*offset` beyond `i64::MAX` (not a valid `off_t`) is `EINVAL` before
///   any call (not counted).
///
/// Retried on `EINTR` (the kernel returns a partial count, not `EINTR`, once
/// it has copied anything).
/// Counted as [`Syscall::Sendfile`], once per attempt.
#[doc(alias = "sendfile(2)")]
#[doc(alias = "sendfile64")]
pub fn sendfile(out_fd: BorrowedFd<'_>, in_fd: BorrowedFd<'_>, offset: &mut u64, count: usize) -> io::Result<usize> {
    let mut off = libc::off_t::try_from(*offset).map_err(|_| io::Error::from_raw_os_error(libc::EINVAL))?;
    #[cfg(feature = "simulation")]
    crate::sim::hook!(crate::sim::ops::sendfile(out_fd, in_fd, offset, count));
    let guard = SigpipeGuard::block()?;
    let result = call_retry_eintr(Syscall::Sendfile, || {
        // SAFETY: the kernel reads and updates one `off_t` through `&mut off`,
        // a live local; no other user memory is touched (the data moves
        // between the two files inside the kernel).
        unsafe { libc::sendfile(out_fd.as_raw_fd(), in_fd.as_raw_fd(), &mut off, count) }
    });
    // Not only after an EPIPE: a call that copied part of the data and then found the peer
    // gone returns the partial count *and* raises SIGPIPE.
    guard.consume();
    drop(guard);
    let n = result?;
    // The kernel stored the offset after the copied bytes (>= 0).
    *offset = u64::try_from(off).unwrap_or(*offset);
    Ok(to_usize(n))
}
