//! The entry points the wrappers call when their thread runs on a simulated kernel.
//!
//! Each takes the wrapper's arguments and returns `None` when the descriptor is not a simulated
//! one (the wrapper then makes the real call), or the simulated result. Every call goes
//! through [`run`], which does what the real path's gate (`crate::call`) does, in the same
//! order: count the call, give the syscall layer's fault injection its chance (its `EINTR` is
//! retried or turned into the wrapper's answer exactly as a real one), then a seeded transient
//! fault ([`FaultClass::Errno`]), then the simulated call; and it appends the trace record.

use std::io::{self, IoSlice, IoSliceMut};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, IntoRawFd, OwnedFd, RawFd};
use std::time::Duration;

use crate::sim::choice::ChoiceKind;
use crate::sim::epoll::{self, Ctl, Reported};
use crate::sim::faults::{FaultClass, transient_errnos};
use crate::sim::sched;
use crate::sim::socket::{self, RecvFlags};
pub(crate) use crate::sim::socket::{GetOpt, SetOpt};
use crate::sim::state::{FileId, Kind, State, errno};
use crate::sim::trace::Op;
use crate::sim::{files, stream, with_current};
use crate::{AddrHints, Clock, Domain, EpollEvent, EpollFlags, Shutdown, SockAddr, SockType, Syscall};

/// 2026-01-01T00:00:00Z: what `CLOCK_REALTIME` reads at the simulated boot.
const REALTIME_AT_BOOT: u64 = 1_767_225_600 * 1_000_000_000;

fn is_eintr(e: &io::Error) -> bool {
    e.raw_os_error() == Some(libc::EINTR)
}

fn code_of(e: &io::Error) -> i64 {
    -i64::from(e.raw_os_error().unwrap_or(libc::EIO))
}

/// One simulated call (see the module docs). `op` returns the value and its trace code.
#[allow(clippy::too_many_arguments)]
fn run<T>(
    st: &mut State,
    me: usize,
    s: Syscall,
    file: FileId,
    a: u64,
    b: u64,
    retry: bool,
    op: impl FnOnce(&mut State) -> io::Result<(T, i64)>,
) -> io::Result<T> {
    st.thread = me as u32;
    st.stats.calls += 1;
    if needs_reap(st, file) {
        // Closes made since the last call (a dropped `OwnedFd` is invisible otherwise) take
        // effect before this call, as they did in the program.
        st.reap();
    }
    st.settle();
    let r = loop {
        match crate::call::enter(s) {
            Err(e) if retry && is_eintr(&e) => {
                st.rec(Op::Call(s), file, a, b, code_of(&e));
                continue;
            }
            Err(e) => break Err(e),
            Ok(()) => {}
        }
        if let Some(e) = transient_fault(st, s, file) {
            break Err(e);
        }
        break op(st);
    };
    let code = match &r {
        Ok((_, c)) => *c,
        Err(e) => code_of(e),
    };
    st.rec(Op::Call(s), file, a, b, code);
    r.map(|(v, _)| v)
}

/// Whether a call on `file` must first learn of closes: always, except on an Internet socket,
/// whose peer learns of a close only through a FIN or RST that travels the simulated network
/// anyway, so a close seen at the next poll (the next reap) is one seen a little later. This
/// keeps the real `epoll_wait(0)` of a reap off the per-byte path.
fn needs_reap(st: &State, file: FileId) -> bool {
    match st.file(file).map(|f| &f.kind) {
        Some(Kind::Socket(s)) => s.domain == Domain::Unix,
        Some(_) => true,
        None => false,
    }
}

fn transient_fault(st: &mut State, s: Syscall, file: FileId) -> Option<io::Error> {
    if st.faults.rates.rate(FaultClass::Errno) == 0 && !st.faults.forced.any(FaultClass::Errno) {
        return None;
    }
    let list = transient_errnos(s);
    if list.is_empty() || !st.faults.fires(FaultClass::Errno, &mut st.choice) {
        return None;
    }
    let e = list[st.choice.below(ChoiceKind::Errno, list.len() as u64) as usize];
    st.stats.faults += 1;
    st.rec(Op::Fault, file, FaultClass::Errno.code(), e as u64, 0);
    Some(errno(e))
}

/// A simulated call on descriptor `raw` (`None`: not a simulated descriptor).
fn on_fd<T>(
    raw: RawFd,
    s: Syscall,
    a: u64,
    b: u64,
    retry: bool,
    op: impl FnOnce(&mut State, FileId) -> io::Result<(T, i64)>,
) -> Option<io::Result<T>> {
    with_current(|sh, me| {
        let mut st = sh.lock();
        let id = st.lookup(raw)?;
        Some(run(&mut st, me, s, id, a, b, retry, |st| op(st, id)))
    })
    .flatten()
}

/// A simulated call that takes no descriptor.
fn global<T>(s: Syscall, a: u64, op: impl FnOnce(&mut State) -> io::Result<(T, i64)>) -> Option<io::Result<T>> {
    with_current(|sh, me| {
        let mut st = sh.lock();
        run(&mut st, me, s, 0, a, 0, false, op)
    })
}

fn owned(raw: RawFd) -> OwnedFd {
    // SAFETY: `raw` is the program's end of a backing pipe the simulated kernel has just
    // created (or duplicated) for this call; nothing else in the process owns it.
    unsafe { OwnedFd::from_raw_fd(raw) }
}

fn len64(n: usize) -> u64 {
    n as u64
}

// ---------------------------------------------------------------------------------------------
// Creating files

pub(crate) fn epoll_create1() -> Option<io::Result<OwnedFd>> {
    global(Syscall::EpollCreate1, 0, |st| {
        let (id, raw) = st.install(Kind::Epoll(Default::default()))?;
        Ok((owned(raw), id as i64))
    })
}

pub(crate) fn eventfd(initval: u32) -> Option<io::Result<OwnedFd>> {
    global(Syscall::Eventfd, u64::from(initval), |st| {
        let (id, raw) = files::eventfd(st, initval)?;
        Ok((owned(raw), id as i64))
    })
}

pub(crate) fn pipe2() -> Option<io::Result<(OwnedFd, OwnedFd)>> {
    global(Syscall::Pipe2, 0, |st| {
        let ((r, rraw), (_, wraw)) = files::pipe(st)?;
        Ok(((owned(rraw), owned(wraw)), r as i64))
    })
}

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

/// A real call created descriptor `raw` (a file, a pidfd): if the simulation still maps that
/// number, the file it led to was closed behind its back.
pub(crate) fn real_fd_created(raw: RawFd) {
    with_current(|sh, _| {
        let mut st = sh.lock();
        if st.lookup(raw).is_some() {
            st.fds.remove(&raw);
            st.reap();
        }
    });
}

// ---------------------------------------------------------------------------------------------
// Descriptors

/// `close`: `Err(fd)` gives a descriptor the simulation does not know back to the wrapper.
pub(crate) fn close(fd: OwnedFd) -> Result<io::Result<()>, OwnedFd> {
    let mut fd = Some(fd);
    let r = with_current(|sh, me| {
        let mut st = sh.lock();
        let id = st.lookup(fd.as_ref()?.as_raw_fd())?;
        let raw = fd.take()?.into_raw_fd();
        st.thread = me as u32;
        st.stats.calls += 1;
        // Counted and offered to fault injection, but released in every case (as the
        // wrapper does): a failed close has closed the descriptor all the same.
        let injected = crate::call::enter(Syscall::Close).err();
        st.close_number(raw);
        let r = match injected {
            Some(e) if !is_eintr(&e) => Err(e),
            _ => Ok(()),
        };
        let code = r.as_ref().err().map_or(0, code_of);
        st.rec(Op::Call(Syscall::Close), id, 0, 0, code);
        Some(r)
    })
    .flatten();
    match (r, fd) {
        (Some(r), _) => Ok(r),
        (None, Some(fd)) => Err(fd),
        (None, None) => Ok(Ok(())),
    }
}

pub(crate) fn dup(fd: BorrowedFd<'_>) -> Option<io::Result<OwnedFd>> {
    let raw = fd.as_raw_fd();
    on_fd(raw, Syscall::Fcntl, 0, 0, false, |st, id| {
        let new = st.dup(id, raw)?;
        Ok((owned(new), id as i64))
    })
}

// ---------------------------------------------------------------------------------------------
// epoll

pub(crate) fn epoll_ctl(
    epfd: BorrowedFd<'_>,
    op: libc::c_int,
    fd: RawFd,
    event: Option<EpollEvent>,
) -> Option<io::Result<()>> {
    with_current(|sh, me| {
        let mut st = sh.lock();
        let ep = st.lookup(epfd.as_raw_fd())?;
        // A registration never outlives a file the program closed: learn of closes first.
        st.reap();
        let (events, data) = event.map_or((0, 0), |e| (e.flags().bits(), e.data()));
        // The number may have been closed while a `dup` keeps its file open: Linux then says
        // EBADF (or ENOENT when another file has the number now), and the reactor relies on it.
        let target = st
            .lookup(fd)
            .filter(|&t| crate::sim::backing::same_file(fd, st.backing_fd(t)));
        let ctl = match op {
            libc::EPOLL_CTL_ADD => Some(Ctl::Add),
            libc::EPOLL_CTL_MOD => Some(Ctl::Mod),
            libc::EPOLL_CTL_DEL => Some(Ctl::Del),
            _ => None,
        };
        let b = (u64::try_from(op).unwrap_or(0) << 32) | u64::from(events);
        Some(run(
            &mut st,
            me,
            Syscall::EpollCtl,
            ep,
            target.unwrap_or(0),
            b,
            false,
            |st| {
                if !matches!(st.file(ep).map(|f| &f.kind), Some(Kind::Epoll(_))) {
                    return Err(errno(libc::EINVAL));
                }
                let Some(ctl) = ctl else {
                    return Err(errno(libc::EINVAL));
                };
                let Some(target) = target else {
                    // A real descriptor cannot join a simulated instance (as a regular file cannot
                    // join a real one).
                    let open = crate::sim::backing::is_open(fd);
                    return Err(errno(if open { libc::EPERM } else { libc::EBADF }));
                };
                epoll::ctl(st, ep, ctl, fd, target, events, data).map(|()| ((), 0))
            },
        ))
    })
    .flatten()
}

/// The error of every poll once the simulation stalled.
fn stalled_error() -> io::Error {
    io::Error::other(
        "simulation stalled: every simulated thread is blocked, nothing is scheduled, and nothing came from \
         outside the simulation (a deadlock in the program under test)",
    )
}

/// `epoll_pwait2`/`epoll_wait`: the simulated wait, which may block this simulated thread.
pub(crate) fn epoll_wait(
    epfd: BorrowedFd<'_>,
    events: &mut [EpollEvent],
    timeout: Option<Duration>,
    s: Syscall,
) -> Option<io::Result<usize>> {
    with_current(|sh, me| {
        let mut st = sh.lock();
        let ep = st.lookup(epfd.as_raw_fd())?;
        st.thread = me as u32;
        st.stats.calls += 1;
        let timeout_ns = timeout.map(|d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX));
        let a = len64(events.len());
        let b = timeout_ns.map_or(u64::MAX, |t| t / 1000);
        let done = |st: &mut State, r: io::Result<usize>| {
            let code = match &r {
                Ok(n) => *n as i64,
                Err(e) => code_of(e),
            };
            st.rec(Op::Call(s), ep, a, b, code);
            Some(r)
        };
        if let Err(e) = crate::call::enter(s) {
            // The wrappers' EINTR policy: an interrupted wait reports no events.
            return done(&mut st, if is_eintr(&e) { Ok(0) } else { Err(e) });
        }
        if !matches!(st.file(ep).map(|f| &f.kind), Some(Kind::Epoll(_))) || events.is_empty() {
            return done(&mut st, Err(errno(libc::EINVAL)));
        }
        st = sched::maybe_yield(sh, st, me);
        st.reap();
        st.settle();
        let deadline = timeout_ns.map(|t| st.now().saturating_add(t));
        let mut out = std::mem::take(&mut st.scratch);
        loop {
            if st.stalled {
                st.scratch = out;
                return done(&mut st, Err(stalled_error()));
            }
            epoll::harvest(&mut st, ep, events.len(), &mut out);
            if !out.is_empty() {
                st.idle_polls = 0;
                break;
            }
            if timeout_ns == Some(0) {
                spin_guard(&mut st);
                break;
            }
            if deadline.is_some_and(|d| st.now() >= d) {
                break;
            }
            let s = &mut *st;
            if s.faults.fires(FaultClass::Eintr, &mut s.choice) {
                // A signal arrived while the poll would block.
                st.stats.faults += 1;
                st.rec(Op::Fault, ep, FaultClass::Eintr.code(), libc::EINTR as u64, 0);
                break;
            }
            let max_slack = st.cfg.timer_slack_us;
            let slack = st.choice.delay_us(ChoiceKind::Slack, max_slack) * 1000;
            st = sched::block(sh, st, me, Some(ep), deadline.map(|d| d.saturating_add(slack)));
            st.settle();
        }
        permute(&mut st, &mut out);
        for (slot, r) in events.iter_mut().zip(&out) {
            *slot = EpollEvent::new(EpollFlags::from_bits_retain(r.flags), r.data);
        }
        let n = out.len();
        let r = done(&mut st, Ok(n));
        for r in &out {
            st.rec(Op::Ready, r.file, u64::from(r.flags), 0, 0);
        }
        st.scratch = out;
        r
    })
    .flatten()
}

/// The seed orders one poll's events (epoll(7) promises no order); 0 keeps the kernel's.
fn permute(st: &mut State, out: &mut [Reported]) {
    for i in (1..out.len()).rev() {
        let k = st.choice.below(ChoiceKind::Order, i as u64 + 1) as usize;
        out.swap(i, i - k);
    }
}

/// An empty non-blocking poll: after too many in a row at one instant, move the clock.
fn spin_guard(st: &mut State) {
    st.idle_polls += 1;
    let limit = st.cfg.spin_limit;
    if limit == 0 || st.idle_polls < limit {
        return;
    }
    let polls = st.idle_polls;
    if let Some(at) = sched::next_time(st) {
        st.stats.spins += 1;
        st.rec(Op::Spin, 0, polls, 0, 0);
        st.advance(at);
        let now = st.now();
        sched::wake_due(st, now);
    }
    st.idle_polls = 0;
}

// ---------------------------------------------------------------------------------------------
// eventfd, read, write

pub(crate) fn eventfd_read(fd: BorrowedFd<'_>) -> Option<io::Result<u64>> {
    on_fd(fd.as_raw_fd(), Syscall::Read, 8, 0, true, |st, id| {
        // Writes from outside the simulation first: they happened before this read.
        st.reap();
        let v = files::eventfd_read(st, id)?;
        Ok((v, 8))
    })
}

pub(crate) fn eventfd_write(fd: BorrowedFd<'_>, v: u64) -> Option<io::Result<()>> {
    on_fd(fd.as_raw_fd(), Syscall::Write, 8, v, true, |st, id| {
        files::eventfd_write(st, id, v)?;
        Ok(((), 8))
    })
}

pub(crate) fn read(fd: BorrowedFd<'_>, buf: &mut [u8]) -> Option<io::Result<usize>> {
    on_fd(fd.as_raw_fd(), Syscall::Read, len64(buf.len()), 0, true, |st, id| {
        let n = files::read(st, id, buf)?;
        Ok((n, n as i64))
    })
}

pub(crate) fn write(fd: BorrowedFd<'_>, buf: &[u8], s: Syscall) -> Option<io::Result<usize>> {
    on_fd(fd.as_raw_fd(), s, len64(buf.len()), 0, true, |st, id| {
        let n = files::write(st, id, buf)?;
        Ok((n, n as i64))
    })
}

/// The bytes of up to `IOV_MAX` buffers, in order.
fn gather(bufs: &[IoSlice<'_>]) -> Vec<u8> {
    let mut v = Vec::new();
    for b in bufs.iter().take(crate::IOV_MAX) {
        v.extend_from_slice(b);
    }
    v
}

/// Copies `data` into the buffers in order.
fn scatter(data: &[u8], bufs: &mut [IoSliceMut<'_>]) {
    let mut rest = data;
    for b in bufs.iter_mut() {
        if rest.is_empty() {
            break;
        }
        let n = b.len().min(rest.len());
        b[..n].copy_from_slice(&rest[..n]);
        rest = &rest[n..];
    }
}

fn capacity(bufs: &[IoSliceMut<'_>]) -> usize {
    bufs.iter().take(crate::IOV_MAX).map(|b| b.len()).sum()
}

pub(crate) fn readv(fd: BorrowedFd<'_>, bufs: &mut [IoSliceMut<'_>]) -> Option<io::Result<usize>> {
    let cap = capacity(bufs);
    let mut tmp = vec![0u8; cap];
    let r = on_fd(fd.as_raw_fd(), Syscall::Readv, len64(cap), 0, true, |st, id| {
        let n = files::read(st, id, &mut tmp)?;
        Ok((n, n as i64))
    })?;
    Some(r.inspect(|&n| scatter(&tmp[..n], bufs)))
}

pub(crate) fn writev(fd: BorrowedFd<'_>, bufs: &[IoSlice<'_>], s: Syscall) -> Option<io::Result<usize>> {
    if !with_current(|sh, _| sh.lock().lookup(fd.as_raw_fd()).is_some()).unwrap_or(false) {
        return None;
    }
    let data = gather(bufs);
    on_fd(fd.as_raw_fd(), s, len64(data.len()), 0, true, |st, id| {
        let n = files::write(st, id, &data)?;
        Ok((n, n as i64))
    })
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
        let (child, peer) = stream::accept(st, id)?;
        match st.adopt(child) {
            Ok(raw) => Ok(((owned(raw), peer), child as i64)),
            Err(e) => {
                stream::requeue(st, id, child);
                Err(e)
            }
        }
    })
}

pub(crate) fn connect(fd: BorrowedFd<'_>, addr: &SockAddr) -> Option<io::Result<()>> {
    on_fd(fd.as_raw_fd(), Syscall::Connect, port_of(addr), 0, false, |st, id| {
        let stream = st.sock(id).ok_or_else(|| errno(libc::ENOTSOCK))?.is_stream();
        let r = if stream {
            stream::connect(st, id, addr)
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
    if !with_current(|sh, _| sh.lock().lookup(fd.as_raw_fd()).is_some()).unwrap_or(false) {
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
        SetOpt::LingerZero => libc::SO_LINGER,
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

// ---------------------------------------------------------------------------------------------
// Time and names

/// `clock_gettime`: simulated time (not traced: reading the clock changes nothing, and the
/// time stamps every record anyway).
pub(crate) fn clock_gettime(clock: Clock) -> Option<io::Result<Duration>> {
    with_current(|sh, _| {
        crate::call::enter(Syscall::ClockGettime)?;
        let now = sh.lock().now();
        Ok(Duration::from_nanos(match clock {
            Clock::Monotonic | Clock::Boottime => now,
            Clock::Realtime => REALTIME_AT_BOOT.saturating_add(now),
        }))
    })
}

fn parse_ip(host: &str) -> Option<IpAddr> {
    let h = host.strip_prefix('[').and_then(|h| h.strip_suffix(']')).unwrap_or(host);
    h.parse().ok()
}

/// `getaddrinfo` against the host table: numeric addresses, `localhost`, [`Config::host`]
/// names; anything else is `EAI_NONAME`.
pub(crate) fn getaddrinfo(host: &str, port: u16, hints: AddrHints) -> Option<io::Result<Vec<SocketAddr>>> {
    global(Syscall::Getaddrinfo, u64::from(port), |st| {
        let ips: Vec<IpAddr> = if host.is_empty() {
            if hints.passive {
                vec![IpAddr::V4(Ipv4Addr::UNSPECIFIED), IpAddr::V6(Ipv6Addr::UNSPECIFIED)]
            } else {
                vec![IpAddr::V4(Ipv4Addr::LOCALHOST), IpAddr::V6(Ipv6Addr::LOCALHOST)]
            }
        } else if let Some(ip) = parse_ip(host) {
            vec![ip]
        } else if hints.numeric_host {
            vec![]
        } else {
            st.net.lookup_host(host)
        };
        let out: Vec<SocketAddr> = ips
            .into_iter()
            .filter(|ip| match hints.family {
                Some(Domain::Inet) => ip.is_ipv4(),
                Some(Domain::Inet6) => ip.is_ipv6(),
                Some(Domain::Unix) => false,
                None => true,
            })
            .map(|ip| SocketAddr::new(ip, port))
            .collect();
        if out.is_empty() {
            return Err(crate::resolve::eai_error(libc::EAI_NONAME, errno(0), host));
        }
        let n = out.len() as i64;
        Ok((out, n))
    })
}

/// `getnameinfo` against the host table (services stay numeric).
pub(crate) fn getnameinfo(addr: &SocketAddr, numeric: bool) -> Option<io::Result<(String, String)>> {
    global(Syscall::Getnameinfo, u64::from(addr.port()), |st| {
        let host = if numeric { None } else { st.net.name_of(addr.ip()) };
        Ok((
            (host.unwrap_or_else(|| addr.ip().to_string()), addr.port().to_string()),
            0,
        ))
    })
}
