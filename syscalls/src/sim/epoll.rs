//! Simulated epoll: interest lists, ready lists, and the level- and edge-triggered rules of
//! epoll(7), modelled on `fs/eventpoll.c`.
//!
//! A registration is keyed by the descriptor number *and* the file it led to when it was made
//! (Linux's `epitem` key), belongs to the file (closing the file's last descriptor removes it
//! from every instance), and is never tied to the number alone. The rules:
//!
//! * a *wake-up* of a file (data arrived, space freed, a hang-up, an error) puts each of its
//!   registrations whose interest matches the wake-up on its instance's ready list, once;
//! * a wait walks the ready list in order, asks each file for its readiness *now*, and reports
//!   the readiness masked by the interest (`EPOLLERR` and `EPOLLHUP` always count); an entry
//!   that is not ready any more is dropped silently;
//! * a level-triggered entry that was reported goes back on the list (so it is reported again
//!   while the file stays ready); an edge-triggered one does not: it comes back only with the
//!   next wake-up, i.e. with *new* data or space, not because data is still there;
//! * `EPOLLONESHOT` disables the registration once reported, until `EPOLL_CTL_MOD`;
//! * `EPOLL_CTL_ADD` and `EPOLL_CTL_MOD` check the file at once and queue it if it is ready;
//! * past `maxevents`, the unvisited entries stay at the front for the next wait.
//!
//! The order of one wait's events is the ready list's; the kernel then lets the seed permute it
//! (see `ops`), because epoll(7) promises no order within a batch.

use std::collections::VecDeque;
use std::io;
use std::os::fd::RawFd;

use crate::sim::state::{
    EPOLLERR, EPOLLET, EPOLLEXCLUSIVE, EPOLLHUP, EPOLLIN, EPOLLONESHOT, FileId, IdMap, Kind, State, Watcher, errno,
};

/// `EPOLLWAKEUP`: accepted and ignored (no suspend in a simulation).
const EPOLLWAKEUP: u32 = libc::EPOLLWAKEUP as u32;
/// The input-only flags that are not readiness bits.
const CONTROL_BITS: u32 = EPOLLET | EPOLLONESHOT | EPOLLEXCLUSIVE | EPOLLWAKEUP;

struct Reg {
    events: u32,
    data: u64,
    /// On the ready list.
    queued: bool,
    /// A reported `EPOLLONESHOT` registration, waiting for `EPOLL_CTL_MOD`.
    disabled: bool,
}

impl Reg {
    /// The readiness bits this registration reports.
    fn mask(&self) -> u32 {
        (self.events & !CONTROL_BITS) | EPOLLERR | EPOLLHUP
    }
}

/// One epoll instance.
#[derive(Default)]
pub(crate) struct Epoll {
    regs: IdMap<(RawFd, FileId), Reg>,
    ready: VecDeque<(RawFd, FileId)>,
    /// The simulated thread blocked in a wait on this instance.
    pub(crate) waiter: Option<usize>,
}

impl Epoll {
    /// Every registration, as (number, file).
    pub(crate) fn targets(&self) -> Vec<(RawFd, FileId)> {
        self.regs.keys().copied().collect()
    }

    /// Whether anything is on the ready list.
    pub(crate) fn has_ready(&self) -> bool {
        !self.ready.is_empty()
    }

    fn watches_epolls(&self, st: &State) -> bool {
        self.regs
            .keys()
            .any(|(_, t)| matches!(st.file(*t).map(|f| &f.kind), Some(Kind::Epoll(_))))
    }
}

fn epoll_mut(st: &mut State, ep: FileId) -> Option<&mut Epoll> {
    match st.file_mut(ep).map(|f| &mut f.kind) {
        Some(Kind::Epoll(e)) => Some(e),
        _ => None,
    }
}

/// Puts `(fd, target)` on `ep`'s ready list if its interest matches `key` (the wake-up path).
pub(crate) fn queue(st: &mut State, ep: FileId, fd: RawFd, target: FileId, key: u32) {
    let Some(e) = epoll_mut(st, ep) else {
        return;
    };
    let Some(reg) = e.regs.get_mut(&(fd, target)) else {
        return;
    };
    if reg.disabled || reg.queued || (key != 0 && key & reg.mask() == 0) {
        return;
    }
    reg.queued = true;
    let was_empty = e.ready.is_empty();
    e.ready.push_back((fd, target));
    let waiter = e.waiter;
    if let Some(t) = waiter {
        st.sched.wake(t);
    }
    if was_empty {
        // An epoll instance watched by another one is readable while its list is not empty.
        st.wake(ep, EPOLLIN);
    }
}

/// Removes a registration whose file is gone (the file's close, not `EPOLL_CTL_DEL`).
pub(crate) fn drop_registration(st: &mut State, ep: FileId, fd: RawFd, target: FileId) {
    if let Some(e) = epoll_mut(st, ep) {
        if e.regs.remove(&(fd, target)).is_some() {
            e.ready.retain(|k| *k != (fd, target));
        }
    }
}

/// The operations of `epoll_ctl`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Ctl {
    Add,
    Mod,
    Del,
}

/// `epoll_ctl(ep, op, fd, {events, data})` where `fd` leads to `target`.
pub(crate) fn ctl(
    st: &mut State,
    ep: FileId,
    op: Ctl,
    fd: RawFd,
    target: FileId,
    events: u32,
    data: u64,
) -> io::Result<()> {
    if target == ep {
        return Err(errno(libc::EINVAL));
    }
    if op != Ctl::Del && events & EPOLLEXCLUSIVE != 0 && (op == Ctl::Mod || events & EPOLLONESHOT != 0) {
        return Err(errno(libc::EINVAL));
    }
    let target_is_epoll = matches!(st.file(target).map(|f| &f.kind), Some(Kind::Epoll(_)));
    if op == Ctl::Add && target_is_epoll {
        // One level of nesting; deeper chains are ELOOP here (Linux allows up to 5).
        let nested = match st.file(target).map(|f| &f.kind) {
            Some(Kind::Epoll(t)) => t.watches_epolls(st),
            _ => false,
        };
        if nested {
            return Err(errno(libc::ELOOP));
        }
    }
    let key = (fd, target);
    match op {
        Ctl::Add => {
            let Some(e) = epoll_mut(st, ep) else {
                return Err(errno(libc::EINVAL));
            };
            if e.regs.contains_key(&key) {
                return Err(errno(libc::EEXIST));
            }
            e.regs.insert(
                key,
                Reg {
                    events,
                    data,
                    queued: false,
                    disabled: false,
                },
            );
            if let Some(f) = st.file_mut(target) {
                f.watchers.push(Watcher { epoll: ep, fd });
            }
            requeue_if_ready(st, ep, key);
        }
        Ctl::Mod => {
            let Some(e) = epoll_mut(st, ep) else {
                return Err(errno(libc::EINVAL));
            };
            let Some(reg) = e.regs.get_mut(&key) else {
                return Err(errno(libc::ENOENT));
            };
            reg.events = events;
            reg.data = data;
            reg.disabled = false;
            requeue_if_ready(st, ep, key);
        }
        Ctl::Del => {
            let Some(e) = epoll_mut(st, ep) else {
                return Err(errno(libc::EINVAL));
            };
            if e.regs.remove(&key).is_none() {
                return Err(errno(libc::ENOENT));
            }
            e.ready.retain(|k| *k != key);
            if let Some(f) = st.file_mut(target) {
                f.watchers.retain(|w| *w != Watcher { epoll: ep, fd });
            }
        }
    }
    Ok(())
}

/// After `ADD`/`MOD`: queue the registration if its file is ready now (ep_insert/ep_modify).
fn requeue_if_ready(st: &mut State, ep: FileId, key: (RawFd, FileId)) {
    let now = st.poll(key.1);
    let Some(e) = epoll_mut(st, ep) else {
        return;
    };
    let Some(reg) = e.regs.get_mut(&key) else {
        return;
    };
    if now & reg.mask() != 0 && !reg.queued {
        reg.queued = true;
        e.ready.push_back(key);
        if let Some(t) = e.waiter {
            st.sched.wake(t);
        }
    }
}

/// One reported event.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Reported {
    pub(crate) flags: u32,
    pub(crate) data: u64,
    pub(crate) file: FileId,
}

/// Takes up to `max` events off `ep`'s ready list (see the module docs for the rules).
pub(crate) fn harvest(st: &mut State, ep: FileId, max: usize, out: &mut Vec<Reported>) {
    out.clear();
    let mut relink: Vec<(RawFd, FileId)> = Vec::new();
    while out.len() < max {
        let Some(key) = epoll_mut(st, ep).and_then(|e| e.ready.pop_front()) else {
            break;
        };
        let readiness = st.poll(key.1);
        let Some(reg) = epoll_mut(st, ep).and_then(|e| e.regs.get_mut(&key)) else {
            continue;
        };
        reg.queued = false;
        if reg.disabled {
            continue;
        }
        let flags = readiness & reg.mask();
        if flags == 0 {
            continue;
        }
        out.push(Reported {
            flags,
            data: reg.data,
            file: key.1,
        });
        if reg.events & EPOLLONESHOT != 0 {
            reg.disabled = true;
        } else if reg.events & EPOLLET == 0 {
            reg.queued = true;
            relink.push(key);
        }
    }
    if let Some(e) = epoll_mut(st, ep) {
        e.ready.extend(relink);
    }
}
