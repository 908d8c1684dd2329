//! Socket options: `getsockopt(2)` and `setsockopt(2)` for the handful of
//! options the networking layer uses.
//!
//! All of them are integers except `SO_LINGER`; two private helpers do the
//! integer calls, so each public function is one line of policy plus its
//! documentation. None of these calls blocks, so none can fail with `EINTR`;
//! errors pass through unchanged: `ENOPROTOOPT` for an option the level does
//! not know (`IPV6_V6ONLY` on an IPv4 socket), `EOPNOTSUPP` for a protocol
//! level the socket does not have (`TCP_NODELAY` on a Unix socket),
//! `ENOTSOCK` for a descriptor that is not a socket.

use std::io;
use std::mem::size_of;
use std::os::fd::{AsRawFd, BorrowedFd};

use crate::Syscall;
use crate::call::call;
use crate::socket::SockType;

/// Length of an `int` option value.
const INT_LEN: libc::socklen_t = size_of::<libc::c_int>() as libc::socklen_t;

/// `getsockopt(fd, level, name, &val, &len)` for an `int` option.
fn get_int(fd: BorrowedFd<'_>, level: libc::c_int, name: libc::c_int) -> io::Result<libc::c_int> {
    #[cfg(feature = "simulation")]
    crate::sim::hook!(crate::sim::ops::getsockopt_int(fd, level, name));
    let mut val: libc::c_int = 0;
    let mut len = INT_LEN;
    call(Syscall::Getsockopt, || {
        // SAFETY: the kernel writes at most `len` (= sizeof(int)) bytes to
        // `&mut val`, a live local `c_int`, and the actual length to
        // `&mut len`, a live local `socklen_t`.
        unsafe {
            libc::getsockopt(
                fd.as_raw_fd(),
                level,
                name,
                (&mut val as *mut libc::c_int).cast(),
                &mut len,
            )
        }
    })?;
    Ok(val)
}

/// `setsockopt(fd, level, name, &val, sizeof(int))` for an `int` option.
fn set_int(fd: BorrowedFd<'_>, level: libc::c_int, name: libc::c_int, val: libc::c_int) -> io::Result<()> {
    #[cfg(feature = "simulation")]
    crate::sim::hook!(crate::sim::ops::setsockopt_int(fd, level, name, val));
    call(Syscall::Setsockopt, || {
        // SAFETY: the kernel reads `INT_LEN` (= sizeof(int)) bytes from
        // `&val`, a live local `c_int`.
        unsafe {
            libc::setsockopt(
                fd.as_raw_fd(),
                level,
                name,
                (&val as *const libc::c_int).cast(),
                INT_LEN,
            )
        }
    })?;
    Ok(())
}

fn set_bool(fd: BorrowedFd<'_>, level: libc::c_int, name: libc::c_int, on: bool) -> io::Result<()> {
    set_int(fd, level, name, libc::c_int::from(on))
}

/// A buffer size for `SO_RCVBUF`/`SO_SNDBUF`: clamped to `i32::MAX`.
fn size_arg(n: usize) -> libc::c_int {
    libc::c_int::try_from(n).unwrap_or(libc::c_int::MAX)
}

/// `getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len)`: takes the socket's
/// pending error, `None` when there is none.
///
/// Man page: <https://man7.org/linux/man-pages/man7/socket.7.html>
///
/// Reading clears it: a second call returns `None`. This is how the outcome
/// of a non-blocking [`connect`](crate::connect) is learnt once the socket
/// turns writable: `None` is connected, `Some(ECONNREFUSED)` etc. failed.
/// The outer `Err` is the `getsockopt` call itself failing (`EBADF`,
/// `ENOTSOCK`).
/// Counted as [`Syscall::Getsockopt`].
#[doc(alias = "getsockopt")]
#[doc(alias = "SO_ERROR")]
pub fn take_socket_error(fd: BorrowedFd<'_>) -> io::Result<Option<io::Error>> {
    let err = get_int(fd, libc::SOL_SOCKET, libc::SO_ERROR)?;
    Ok((err != 0).then(|| io::Error::from_raw_os_error(err)))
}

/// `setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof(int))`: lets a
/// TCP listener bind a port that still has connections in `TIME_WAIT`.
///
/// Man page: <https://man7.org/linux/man-pages/man7/socket.7.html>
///
/// Set it before [`bind`](crate::bind). Unlike on BSD/Windows, on Linux it
/// does **not** let two sockets listen on the same port (that is
/// [`set_reuseport`]). For UDP it allows several sockets on one port
/// (multicast).
/// Counted as [`Syscall::Setsockopt`].
#[doc(alias = "setsockopt")]
#[doc(alias = "SO_REUSEADDR")]
pub fn set_reuseaddr(fd: BorrowedFd<'_>, on: bool) -> io::Result<()> {
    set_bool(fd, libc::SOL_SOCKET, libc::SO_REUSEADDR, on)
}

/// `setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &on, sizeof(int))`: lets
/// several sockets bind the same address and port; the kernel spreads
/// incoming connections (or datagrams) across them.
///
/// Man page: <https://man7.org/linux/man-pages/man7/socket.7.html>
///
/// Every socket of the group must set it before [`bind`](crate::bind), and
/// all must belong to the same effective user id. Linux 3.9+.
/// Counted as [`Syscall::Setsockopt`].
#[doc(alias = "setsockopt")]
#[doc(alias = "SO_REUSEPORT")]
pub fn set_reuseport(fd: BorrowedFd<'_>, on: bool) -> io::Result<()> {
    set_bool(fd, libc::SOL_SOCKET, libc::SO_REUSEPORT, on)
}

/// `setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &on, sizeof(int))`: turns
/// Nagle's algorithm off (`on`), so small writes go out at once instead of
/// waiting for the previous segment's ACK.
///
/// Man page: <https://man7.org/linux/man-pages/man7/tcp.7.html>
///
/// asyncio sets it on every TCP transport. Not a Unix-socket option
/// (`EOPNOTSUPP`). Counted as [`Syscall::Setsockopt`].
#[doc(alias = "setsockopt")]
#[doc(alias = "TCP_NODELAY")]
pub fn set_nodelay(fd: BorrowedFd<'_>, on: bool) -> io::Result<()> {
    set_bool(fd, libc::IPPROTO_TCP, libc::TCP_NODELAY, on)
}

/// `getsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &val, &len)`: whether Nagle's
/// algorithm is off.
///
/// Man page: <https://man7.org/linux/man-pages/man7/tcp.7.html>
///
/// Counted as [`Syscall::Getsockopt`].
#[doc(alias = "getsockopt")]
#[doc(alias = "TCP_NODELAY")]
pub fn nodelay(fd: BorrowedFd<'_>) -> io::Result<bool> {
    Ok(get_int(fd, libc::IPPROTO_TCP, libc::TCP_NODELAY)? != 0)
}

/// `setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &on, sizeof(int))`: sends TCP
/// keep-alive probes on an idle connection.
///
/// Man page: <https://man7.org/linux/man-pages/man7/socket.7.html>
///
/// With the system defaults the first probe goes out after two hours of
/// silence (`net.ipv4.tcp_keepalive_time`), so it detects dead peers only
/// slowly. Counted as [`Syscall::Setsockopt`].
#[doc(alias = "setsockopt")]
#[doc(alias = "SO_KEEPALIVE")]
pub fn set_keepalive(fd: BorrowedFd<'_>, on: bool) -> io::Result<()> {
    set_bool(fd, libc::SOL_SOCKET, libc::SO_KEEPALIVE, on)
}

/// `setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &on, sizeof(int))`: restricts
/// an IPv6 socket to IPv6 (`on`) or lets it also carry IPv4 through
/// v4-mapped addresses (`!on`).
///
/// Man page: <https://man7.org/linux/man-pages/man7/ipv6.7.html>
///
/// Must be set before [`bind`](crate::bind). The default comes from
/// `net.ipv6.bindv6only` (normally 0, i.e. dual-stack), so a `[::]:port`
/// listener then also takes the IPv4 port: set it when binding IPv4 and IPv6
/// sockets to the same port separately, as asyncio does. Only for
/// [`Domain::Inet6`](crate::Domain::Inet6) sockets (`ENOPROTOOPT`
/// otherwise). Counted as [`Syscall::Setsockopt`].
#[doc(alias = "setsockopt")]
#[doc(alias = "IPV6_V6ONLY")]
pub fn set_v6only(fd: BorrowedFd<'_>, on: bool) -> io::Result<()> {
    set_bool(fd, libc::IPPROTO_IPV6, libc::IPV6_V6ONLY, on)
}

/// `setsockopt(fd, SOL_SOCKET, SO_BROADCAST, &on, sizeof(int))`: allows
/// sending datagrams to a broadcast address.
///
/// Man page: <https://man7.org/linux/man-pages/man7/socket.7.html>
///
/// Without it such a send fails with `EACCES`. Counted as
/// [`Syscall::Setsockopt`].
#[doc(alias = "setsockopt")]
#[doc(alias = "SO_BROADCAST")]
pub fn set_broadcast(fd: BorrowedFd<'_>, on: bool) -> io::Result<()> {
    set_bool(fd, libc::SOL_SOCKET, libc::SO_BROADCAST, on)
}

/// `setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &n, sizeof(int))`: asks for a
/// receive buffer of `n` bytes.
///
/// Man page: <https://man7.org/linux/man-pages/man7/socket.7.html>
///
/// Kernel surprises: Linux **doubles** the value (the extra half is for its
/// bookkeeping), caps the request at `net.core.rmem_max` first, and has a
/// minimum (about 2 KiB); [`recv_buffer_size`] reads back the doubled,
/// capped number. Setting it turns TCP's receive-buffer autotuning off for
/// the socket. `n` above `i32::MAX` is clamped.
/// Counted as [`Syscall::Setsockopt`].
#[doc(alias = "setsockopt")]
#[doc(alias = "SO_RCVBUF")]
pub fn set_recv_buffer_size(fd: BorrowedFd<'_>, n: usize) -> io::Result<()> {
    set_int(fd, libc::SOL_SOCKET, libc::SO_RCVBUF, size_arg(n))
}

/// `getsockopt(fd, SOL_SOCKET, SO_RCVBUF, &n, &len)`: the receive buffer
/// size in bytes, as the kernel accounts it (twice what was asked with
/// [`set_recv_buffer_size`]).
///
/// Man page: <https://man7.org/linux/man-pages/man7/socket.7.html>
///
/// Counted as [`Syscall::Getsockopt`].
#[doc(alias = "getsockopt")]
#[doc(alias = "SO_RCVBUF")]
pub fn recv_buffer_size(fd: BorrowedFd<'_>) -> io::Result<usize> {
    Ok(usize::try_from(get_int(fd, libc::SOL_SOCKET, libc::SO_RCVBUF)?).unwrap_or(0))
}

/// `setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &n, sizeof(int))`: asks for a send
/// buffer of `n` bytes.
///
/// Man page: <https://man7.org/linux/man-pages/man7/socket.7.html>
///
/// The same surprises as [`set_recv_buffer_size`]: the kernel doubles the
/// value, caps the request at `net.core.wmem_max`, enforces a minimum, and
/// stops autotuning. `n` above `i32::MAX` is clamped.
/// Counted as [`Syscall::Setsockopt`].
#[doc(alias = "setsockopt")]
#[doc(alias = "SO_SNDBUF")]
pub fn set_send_buffer_size(fd: BorrowedFd<'_>, n: usize) -> io::Result<()> {
    set_int(fd, libc::SOL_SOCKET, libc::SO_SNDBUF, size_arg(n))
}

/// `getsockopt(fd, SOL_SOCKET, SO_SNDBUF, &n, &len)`: the send buffer size
/// in bytes, as the kernel accounts it (twice what was asked).
///
/// Man page: <https://man7.org/linux/man-pages/man7/socket.7.html>
///
/// Counted as [`Syscall::Getsockopt`].
#[doc(alias = "getsockopt")]
#[doc(alias = "SO_SNDBUF")]
pub fn send_buffer_size(fd: BorrowedFd<'_>) -> io::Result<usize> {
    Ok(usize::try_from(get_int(fd, libc::SOL_SOCKET, libc::SO_SNDBUF)?).unwrap_or(0))
}

/// `setsockopt(fd, SOL_SOCKET, SO_LINGER, &(struct linger){1, 0},
/// sizeof(struct linger))`: makes `close` abort the connection.
///
/// Man page: <https://man7.org/linux/man-pages/man7/socket.7.html>
///
/// With linger on and a zero timeout, closing a TCP socket discards unsent
/// data and sends a RST instead of the FIN handshake: the peer's next
/// receive fails with `ECONNRESET`, its sends with `ECONNRESET`/`EPIPE`, and
/// no `TIME_WAIT` is left behind. Tests use it to produce "connection reset
/// by peer"; asyncio's `transport.abort()` does the same.
/// Counted as [`Syscall::Setsockopt`].
#[doc(alias = "setsockopt")]
#[doc(alias = "SO_LINGER")]
pub fn set_linger_zero(fd: BorrowedFd<'_>) -> io::Result<()> {
    set_linger(fd, Some(std::time::Duration::ZERO))
}

/// `setsockopt(fd, SOL_SOCKET, SO_LINGER, &(struct linger){on, secs},
/// sizeof(struct linger))`: what `close` does with unsent data.
///
/// Man page: <https://man7.org/linux/man-pages/man7/socket.7.html>
///
/// `None` turns lingering off (the default: `close` returns at once and the
/// kernel sends what is left in the background). `Some(Duration::ZERO)`
/// aborts the connection on close ([`set_linger_zero`]). `Some(t)` with a
/// non-zero `t` makes `close` itself wait, up to `t` (whole seconds, rounded
/// down, capped at `i32::MAX`), until the unsent data is acknowledged, even on
/// a non-blocking socket: on an event loop's thread that stalls every other
/// task for as long. Counted as [`Syscall::Setsockopt`].
#[doc(alias = "setsockopt")]
#[doc(alias = "SO_LINGER")]
pub fn set_linger(fd: BorrowedFd<'_>, linger: Option<std::time::Duration>) -> io::Result<()> {
    let secs = linger.map(|t| u32::try_from(t.as_secs()).unwrap_or(u32::MAX).min(i32::MAX as u32));
    #[cfg(feature = "simulation")]
    crate::sim::hook!(crate::sim::ops::set_option(fd, crate::sim::ops::SetOpt::Linger(secs)));
    let linger = libc::linger {
        l_onoff: libc::c_int::from(secs.is_some()),
        l_linger: secs.unwrap_or(0) as libc::c_int,
    };
    let len = size_of::<libc::linger>() as libc::socklen_t;
    call(Syscall::Setsockopt, || {
        // SAFETY: the kernel reads `len` (= sizeof(struct linger)) bytes from
        // `&linger`, a live local of exactly that type.
        unsafe {
            libc::setsockopt(
                fd.as_raw_fd(),
                libc::SOL_SOCKET,
                libc::SO_LINGER,
                (&linger as *const libc::linger).cast(),
                len,
            )
        }
    })?;
    Ok(())
}

/// `getsockopt(fd, SOL_SOCKET, SO_LINGER, &linger, &len)`: the lingering
/// timeout, `None` when lingering is off (see [`set_linger`]).
///
/// Man page: <https://man7.org/linux/man-pages/man7/socket.7.html>
///
/// Counted as [`Syscall::Getsockopt`].
#[doc(alias = "getsockopt")]
#[doc(alias = "SO_LINGER")]
pub fn linger(fd: BorrowedFd<'_>) -> io::Result<Option<std::time::Duration>> {
    #[cfg(feature = "simulation")]
    crate::sim::hook!(
        crate::sim::ops::get_option(fd, crate::sim::ops::GetOpt::Linger)
            .map(|r| r.map(|secs| u64::try_from(secs).ok().map(std::time::Duration::from_secs)))
    );
    let mut linger = libc::linger {
        l_onoff: 0,
        l_linger: 0,
    };
    let mut len = size_of::<libc::linger>() as libc::socklen_t;
    call(Syscall::Getsockopt, || {
        // SAFETY: the kernel writes at most `len` (= sizeof(struct linger))
        // bytes to `&mut linger`, a live local of exactly that type, and the
        // actual length to `&mut len`, a live local `socklen_t`.
        unsafe {
            libc::getsockopt(
                fd.as_raw_fd(),
                libc::SOL_SOCKET,
                libc::SO_LINGER,
                (&mut linger as *mut libc::linger).cast(),
                &mut len,
            )
        }
    })?;
    Ok((linger.l_onoff != 0).then(|| std::time::Duration::from_secs(u64::try_from(linger.l_linger).unwrap_or(0))))
}

/// `setsockopt(fd, IPPROTO_IP, IP_TTL, &ttl, sizeof(int))`: the time-to-live
/// of the IP packets this socket sends.
///
/// Man page: <https://man7.org/linux/man-pages/man7/ip.7.html>
///
/// 1 to 255; anything else is `EINVAL`. Linux takes it on IPv4 and IPv6
/// sockets (where it applies to IPv4 traffic) and answers `EOPNOTSUPP` on a
/// Unix socket. Counted as [`Syscall::Setsockopt`].
#[doc(alias = "setsockopt")]
#[doc(alias = "IP_TTL")]
pub fn set_ttl(fd: BorrowedFd<'_>, ttl: u32) -> io::Result<()> {
    let ttl = libc::c_int::try_from(ttl).unwrap_or(libc::c_int::MAX);
    set_int(fd, libc::IPPROTO_IP, libc::IP_TTL, ttl)
}

/// `getsockopt(fd, IPPROTO_IP, IP_TTL, &ttl, &len)`: the time-to-live of the
/// IP packets this socket sends (64 unless set: `net.ipv4.ip_default_ttl`).
///
/// Man page: <https://man7.org/linux/man-pages/man7/ip.7.html>
///
/// Counted as [`Syscall::Getsockopt`].
#[doc(alias = "getsockopt")]
#[doc(alias = "IP_TTL")]
pub fn ttl(fd: BorrowedFd<'_>) -> io::Result<u32> {
    Ok(u32::try_from(get_int(fd, libc::IPPROTO_IP, libc::IP_TTL)?).unwrap_or(0))
}

/// `getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &len)`: whether `fd` is a
/// stream or a datagram socket.
///
/// Man page: <https://man7.org/linux/man-pages/man7/socket.7.html>
///
/// `ENOTSOCK` when `fd` is not a socket. Other types (`SOCK_SEQPACKET`,
/// `SOCK_RAW`, ...) are [`io::ErrorKind::Unsupported`].
/// Counted as [`Syscall::Getsockopt`].
#[doc(alias = "getsockopt")]
#[doc(alias = "SO_TYPE")]
pub fn socket_type(fd: BorrowedFd<'_>) -> io::Result<SockType> {
    match get_int(fd, libc::SOL_SOCKET, libc::SO_TYPE)? {
        libc::SOCK_STREAM => Ok(SockType::Stream),
        libc::SOCK_DGRAM => Ok(SockType::Datagram),
        other => Err(io::Error::new(
            io::ErrorKind::Unsupported,
            format!("unsupported socket type {other}"),
        )),
    }
}
