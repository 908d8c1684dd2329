//! Entry points for files that are not sockets, for epoll and for descriptors: creating
//! epoll instances, eventfds and pipes, `close`, `dup`, `epoll_ctl`, the waits, and `read`,
//! `write`, `readv`, `writev`.

use std::io::{self, IoSlice, IoSliceMut};
use std::os::fd::{AsRawFd, BorrowedFd, IntoRawFd, OwnedFd, RawFd};
use std::time::Duration;

use super::{code_of, gather, global, is_eintr, len64, on_fd, owned, run};
use crate::sim::choice::ChoiceKind;
use crate::sim::epoll::{self, Ctl, Reported};
use crate::sim::faults::FaultClass;
use crate::sim::sched;
use crate::sim::state::{Kind, State, errno};
use crate::sim::trace::Op;
use crate::sim::{files, with_current};
use crate::{EpollEvent, EpollFlags, Syscall};

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

/// A real call created descriptor `raw` (a file, a pidfd): if the simulation still maps that
/// number, the file it led to was closed behind its back. The reap is made whether or not the
/// number came back (which depends on the other threads of the process), so that a close is
/// seen at a point fixed by the program's calls.
pub(crate) fn real_fd_created(raw: RawFd) {
    with_current(|sh, _| {
        let mut st = sh.lock();
        if st.lookup(raw).is_some() {
            st.fds.remove(&raw);
        }
        st.reap();
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
            .resolve(fd)
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
                    // A real descriptor cannot join a simulated instance (as a regular file
                    // cannot join a real one), and is never registered in one.
                    return Err(errno(match (crate::sim::backing::is_open(fd), ctl) {
                        (false, _) => libc::EBADF,
                        (true, Ctl::Add) => libc::EPERM,
                        (true, _) => libc::ENOENT,
                    }));
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
                busy_guard(&mut st);
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
                st.fault_fired(FaultClass::Eintr, ep, libc::EINTR);
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
        guard_moves_clock(st, polls, 0, at);
    }
    st.idle_polls = 0;
}

/// A guard's move of the clock to `to`: counted, traced (`busy` 1 for polls with events), and
/// the threads whose timeouts passed made runnable.
fn guard_moves_clock(st: &mut State, polls: u64, busy: u64, to: u64) {
    st.stats.spins += 1;
    st.rec(Op::Spin, 0, polls, busy, 0);
    st.advance(to);
    let now = st.now();
    sched::wake_due(st, now);
}

/// What `spin_limit` polls with events at one instant cost in simulated time: 100 ns a poll, less
/// than a real `epoll_wait` and its dispatch take, so no timeout fires earlier than on Linux.
const BUSY_QUANTUM_NS: u64 = 1_000_000;

/// A poll that returned events: after too many at one instant, move the clock a little. The
/// clock otherwise moves only when every thread waits, and a file that stays ready (a
/// level-triggered eventfd nobody drains, a socket a reader never empties) never lets a poll
/// wait: its loop would run forever at one instant and its timers would never fire, where on
/// Linux each poll takes time and they do. The step is small (`BUSY_QUANTUM_NS` per
/// `spin_limit` polls, not a jump to the next deadline), so a busy but healthy program sees its
/// time move about as slowly as on a fast machine, and traces of programs that let the clock
/// move by itself are unchanged.
fn busy_guard(st: &mut State) {
    st.busy_polls += 1;
    let limit = st.cfg.spin_limit;
    if limit == 0 || st.busy_polls < limit {
        return;
    }
    let (polls, to) = (st.busy_polls, st.now().saturating_add(BUSY_QUANTUM_NS));
    guard_moves_clock(st, polls, 1, to);
    st.busy_polls = 0;
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
    if !with_current(|sh, _| sh.lock().resolve(fd.as_raw_fd()).is_some()).unwrap_or(false) {
        return None;
    }
    let data = gather(bufs);
    on_fd(fd.as_raw_fd(), s, len64(data.len()), 0, true, |st, id| {
        let n = files::write(st, id, &data)?;
        Ok((n, n as i64))
    })
}
