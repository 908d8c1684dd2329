//! Entry points for sockets: creating them, naming and connecting them, moving bytes and
//! datagrams, and their options.

use std::io::{self, IoSlice};
use std::os::fd::{AsRawFd, BorrowedFd, OwnedFd};

use super::{gather, global, len64, on_fd, owned};
use crate::sim::socket::{self, GetOpt, RecvFlags, SetOpt};
use crate::sim::state::errno;
use crate::sim::{handshake, with_current};
use crate::{Domain, Shutdown, SockAddr, SockType, Syscall};

// ---------------------------------------------------------------------------------------------
// Creating sockets

pub(crate) fn socket(domain: Domain, ty: SockType) -> Option<io::Result<OwnedFd>> {
    global(Syscall::Socket, domain_code(domain), |st| {
        let (id, raw) = socket::socket(st, domain, ty)?;
        Ok((owned(raw), id as i64))
    })
}

pub(crate) fn socketpair(domain: Domain, ty: SockType) -> Option<io::Result<(OwnedFd, OwnedFd)>> {
    global(Syscall::Socketpair, domain_code(domain), |st| {
        let ((a, araw), (_, braw)) = socket::socketpair(st, domain, ty)?;
        Ok(((owned(araw), owned(braw)), a as i64))
    })
}

fn domain_code(d: Domain) -> u64 {
    match d {
        Domain::Inet => 4,
        Domain::Inet6 => 6,
        Domain::Unix => 1,
    }
}

// ---------------------------------------------------------------------------------------------
// Sockets

pub(crate) fn bind(fd: BorrowedFd<'_>, addr: &SockAddr) -> Option<io::Result<()>> {
    on_fd(fd.as_raw_fd(), Syscall::Bind, port_of(addr), 0, false, |st, id| {
        socket::bind(st, id, addr).map(|()| ((), 0))
    })
}

fn port_of(addr: &SockAddr) -> u64 {
    addr.as_inet().map_or(0, |a| u64::from(a.port()))
}

pub(crate) fn listen(fd: BorrowedFd<'_>, backlog: i32) -> Option<io::Result<()>> {
    on_fd(
        fd.as_raw_fd(),
        Syscall::Listen,
        backlog.max(0) as u64,
        0,
        false,
        |st, id| socket::listen(st, id, backlog).map(|()| ((), 0)),
    )
}

pub(crate) fn accept4(fd: BorrowedFd<'_>) -> Option<io::Result<(OwnedFd, SockAddr)>> {
    on_fd(fd.as_raw_fd(), Syscall::Accept4, 0, 0, true, |st, id| {
        let (child, peer) = handshake::accept(st, id)?;
        match st.adopt(child) {
            Ok(raw) => Ok(((owned(raw), peer), child as i64)),
            Err(e) => {
                handshake::requeue(st, id, child);
                Err(e)
            }
        }
    })
}

pub(crate) fn connect(fd: BorrowedFd<'_>, addr: &SockAddr) -> Option<io::Result<()>> {
    on_fd(fd.as_raw_fd(), Syscall::Connect, port_of(addr), 0, false, |st, id| {
        let stream = st.sock(id).ok_or_else(|| errno(libc::ENOTSOCK))?.is_stream();
        let r = if stream {
            handshake::connect(st, id, addr)
        } else {
            crate::sim::dgram::connect(st, id, addr)
        };
        r.map(|()| ((), 0))
    })
}

pub(crate) fn local_addr(fd: BorrowedFd<'_>) -> Option<io::Result<SockAddr>> {
    on_fd(fd.as_raw_fd(), Syscall::Getsockname, 0, 0, false, |st, id| {
        let a = socket::local_addr(st, id)?;
        let p = port_of(&a) as i64;
        Ok((a, p))
    })
}

pub(crate) fn peer_addr(fd: BorrowedFd<'_>) -> Option<io::Result<SockAddr>> {
    on_fd(fd.as_raw_fd(), Syscall::Getpeername, 0, 0, false, |st, id| {
        let a = socket::peer_addr(st, id)?;
        let p = port_of(&a) as i64;
        Ok((a, p))
    })
}

pub(crate) fn shutdown(fd: BorrowedFd<'_>, how: Shutdown) -> Option<io::Result<()>> {
    let code = match how {
        Shutdown::Read => 0,
        Shutdown::Write => 1,
        Shutdown::Both => 2,
    };
    on_fd(fd.as_raw_fd(), Syscall::Shutdown, code, 0, false, |st, id| {
        socket::shutdown(st, id, how).map(|()| ((), 0))
    })
}

pub(crate) fn send(fd: BorrowedFd<'_>, buf: &[u8]) -> Option<io::Result<usize>> {
    on_fd(fd.as_raw_fd(), Syscall::Send, len64(buf.len()), 0, true, |st, id| {
        let n = socket::send(st, id, buf, None)?;
        Ok((n, n as i64))
    })
}

pub(crate) fn send_vectored(fd: BorrowedFd<'_>, bufs: &[IoSlice<'_>]) -> Option<io::Result<usize>> {
    if !with_current(|sh, _| sh.lock().resolve(fd.as_raw_fd()).is_some()).unwrap_or(false) {
        return None;
    }
    let data = gather(bufs);
    on_fd(
        fd.as_raw_fd(),
        Syscall::Sendmsg,
        len64(data.len()),
        0,
        true,
        |st, id| {
            let n = socket::send(st, id, &data, None)?;
            Ok((n, n as i64))
        },
    )
}

pub(crate) fn send_to(fd: BorrowedFd<'_>, buf: &[u8], addr: &SockAddr) -> Option<io::Result<usize>> {
    on_fd(
        fd.as_raw_fd(),
        Syscall::Sendto,
        len64(buf.len()),
        port_of(addr),
        true,
        |st, id| {
            let n = socket::send(st, id, buf, Some(addr))?;
            Ok((n, n as i64))
        },
    )
}

/// `recv` with `MSG_PEEK` and/or `MSG_TRUNC` among `flags`.
pub(crate) fn recv(fd: BorrowedFd<'_>, buf: &mut [u8], flags: libc::c_int) -> Option<io::Result<usize>> {
    let f = RecvFlags {
        peek: flags & libc::MSG_PEEK != 0,
        trunc: flags & libc::MSG_TRUNC != 0,
    };
    on_fd(
        fd.as_raw_fd(),
        Syscall::Recv,
        len64(buf.len()),
        flags as u64,
        true,
        |st, id| {
            let (n, _) = socket::recv(st, id, buf, f)?;
            Ok((n, n as i64))
        },
    )
}

pub(crate) fn recv_from(fd: BorrowedFd<'_>, buf: &mut [u8]) -> Option<io::Result<(usize, SockAddr)>> {
    on_fd(
        fd.as_raw_fd(),
        Syscall::Recvfrom,
        len64(buf.len()),
        0,
        true,
        |st, id| {
            let (n, from) = socket::recv(st, id, buf, RecvFlags::default())?;
            Ok(((n, from), n as i64))
        },
    )
}

/// `sendfile` to a simulated socket: the bytes are read from the real file with `pread` and
/// sent through the simulation.
pub(crate) fn sendfile(
    out: BorrowedFd<'_>,
    input: BorrowedFd<'_>,
    offset: &mut u64,
    count: usize,
) -> Option<io::Result<usize>> {
    let at = *offset;
    let r = on_fd(out.as_raw_fd(), Syscall::Sendfile, len64(count), at, true, |st, id| {
        let room = st.sock(id).map_or(count, |s| s.send_room().max(1));
        let mut buf = vec![0u8; count.min(room).min(1 << 20)];
        let off = libc::off_t::try_from(at).map_err(|_| errno(libc::EINVAL))?;
        // SAFETY: the kernel writes at most `buf.len()` bytes into the vector's buffer,
        // exclusively borrowed for the call; `input` is a live borrowed descriptor.
        let n = unsafe { libc::pread(input.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len(), off) };
        if n < 0 {
            return Err(io::Error::last_os_error());
        }
        let n = n as usize;
        if n == 0 {
            return Ok((0, 0));
        }
        let sent = socket::send(st, id, &buf[..n], None)?;
        Ok((sent, sent as i64))
    })?;
    Some(r.inspect(|n| *offset += *n as u64))
}

fn set(fd: BorrowedFd<'_>, opt: SetOpt, code: u64) -> Option<io::Result<()>> {
    on_fd(fd.as_raw_fd(), Syscall::Setsockopt, code, 0, false, |st, id| {
        socket::set_option(st, id, opt).map(|()| ((), 0))
    })
}

/// `setsockopt` for the option the wrapper sets.
pub(crate) fn set_option(fd: BorrowedFd<'_>, opt: SetOpt) -> Option<io::Result<()>> {
    let code = match opt {
        SetOpt::ReuseAddr(_) => libc::SO_REUSEADDR,
        SetOpt::ReusePort(_) => libc::SO_REUSEPORT,
        SetOpt::NoDelay(_) => libc::TCP_NODELAY,
        SetOpt::KeepAlive(_) => libc::SO_KEEPALIVE,
        SetOpt::V6Only(_) => libc::IPV6_V6ONLY,
        SetOpt::Broadcast(_) => libc::SO_BROADCAST,
        SetOpt::Linger(_) => libc::SO_LINGER,
        SetOpt::Ttl(_) => libc::IP_TTL,
        SetOpt::RecvBuf(_) => libc::SO_RCVBUF,
        SetOpt::SendBuf(_) => libc::SO_SNDBUF,
    };
    set(fd, opt, code as u64)
}

/// `getsockopt(fd, level, name)` for an `int` option.
pub(crate) fn getsockopt_int(
    fd: BorrowedFd<'_>,
    level: libc::c_int,
    name: libc::c_int,
) -> Option<io::Result<libc::c_int>> {
    let opt = match (level, name) {
        (libc::SOL_SOCKET, libc::SO_ERROR) => Some(GetOpt::Error),
        (libc::IPPROTO_TCP, libc::TCP_NODELAY) => Some(GetOpt::NoDelay),
        (libc::SOL_SOCKET, libc::SO_RCVBUF) => Some(GetOpt::RecvBuf),
        (libc::SOL_SOCKET, libc::SO_SNDBUF) => Some(GetOpt::SendBuf),
        (libc::SOL_SOCKET, libc::SO_TYPE) => Some(GetOpt::Type),
        (libc::IPPROTO_IP, libc::IP_TTL) => Some(GetOpt::Ttl),
        _ => None,
    };
    match opt {
        Some(opt) => get_option(fd, opt),
        None => on_fd(fd.as_raw_fd(), Syscall::Getsockopt, name as u64, 0, false, |_, _| {
            Err::<(i32, i64), _>(errno(libc::ENOPROTOOPT))
        }),
    }
}

/// `setsockopt(fd, level, name, &val)` for an `int` option.
pub(crate) fn setsockopt_int(
    fd: BorrowedFd<'_>,
    level: libc::c_int,
    name: libc::c_int,
    val: libc::c_int,
) -> Option<io::Result<()>> {
    let on = val != 0;
    let size = usize::try_from(val).unwrap_or(0);
    let opt = match (level, name) {
        (libc::SOL_SOCKET, libc::SO_REUSEADDR) => Some(SetOpt::ReuseAddr(on)),
        (libc::SOL_SOCKET, libc::SO_REUSEPORT) => Some(SetOpt::ReusePort(on)),
        (libc::IPPROTO_TCP, libc::TCP_NODELAY) => Some(SetOpt::NoDelay(on)),
        (libc::SOL_SOCKET, libc::SO_KEEPALIVE) => Some(SetOpt::KeepAlive(on)),
        (libc::IPPROTO_IPV6, libc::IPV6_V6ONLY) => Some(SetOpt::V6Only(on)),
        (libc::SOL_SOCKET, libc::SO_BROADCAST) => Some(SetOpt::Broadcast(on)),
        (libc::SOL_SOCKET, libc::SO_RCVBUF) => Some(SetOpt::RecvBuf(size)),
        (libc::SOL_SOCKET, libc::SO_SNDBUF) => Some(SetOpt::SendBuf(size)),
        (libc::IPPROTO_IP, libc::IP_TTL) => Some(SetOpt::Ttl(val as u32)),
        _ => None,
    };
    match opt {
        Some(opt) => set_option(fd, opt),
        None => on_fd(fd.as_raw_fd(), Syscall::Setsockopt, name as u64, 0, false, |_, _| {
            Err::<((), i64), _>(errno(libc::ENOPROTOOPT))
        }),
    }
}

/// `getsockopt` for the option the wrapper reads.
pub(crate) fn get_option(fd: BorrowedFd<'_>, opt: GetOpt) -> Option<io::Result<i32>> {
    on_fd(fd.as_raw_fd(), Syscall::Getsockopt, 0, 0, false, |st, id| {
        let v = socket::get_option(st, id, opt)?;
        Ok((v, i64::from(v)))
    })
}
