//! The entry points the wrappers call when their thread runs on a simulated kernel.
//!
//! Each takes the wrapper's arguments and returns `None` when the descriptor is not a simulated
//! one (the wrapper then makes the real call), or the simulated result. Every call goes
//! through `run`, which does what the real path's gate (`crate::call`) does, in the same
//! order: count the call, give the syscall layer's fault injection its chance (its `EINTR` is
//! retried or turned into the wrapper's answer exactly as a real one), then a seeded transient
//! fault ([`FaultClass::Errno`]), then the simulated call; and it appends the trace record.

mod descriptors;
mod sockets;

use std::io::{self, IoSlice};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::os::fd::{FromRawFd, OwnedFd, RawFd};
use std::time::Duration;

use crate::sim::choice::ChoiceKind;
use crate::sim::faults::{FaultClass, transient_errnos};
pub(crate) use crate::sim::socket::{GetOpt, SetOpt};
use crate::sim::state::{FileId, Kind, State, errno};
use crate::sim::trace::Op;
use crate::sim::with_current;
use crate::{AddrHints, Clock, Domain, Syscall};

pub(crate) use self::descriptors::*;
pub(crate) use self::sockets::*;

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
        if let Some(e) = transient_fault(st, s, file, a) {
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

/// A seeded transient failure of call `s` on `file` (`a`: the call's first argument; for
/// `epoll_ctl`, the file registered).
fn transient_fault(st: &mut State, s: Syscall, file: FileId, a: u64) -> Option<io::Error> {
    if st.faults.rates.rate(FaultClass::Errno) == 0 && !st.faults.forced.any(FaultClass::Errno) {
        return None;
    }
    // Registering an eventfd is left out with the eventfd itself (`transient_errnos`): the loop
    // registers its wake-up eventfd once, in `EventLoop::new`, so failing that only fails the
    // loop's creation, and a careful test failed on it (`EVLOOP_SEEDS=1000` found seed 107 of
    // `a_careful_client_survives_every_fault_profile`).
    if s == Syscall::EpollCtl && matches!(st.file(a).map(|f| &f.kind), Some(Kind::Eventfd { .. })) {
        return None;
    }
    let list = transient_errnos(s);
    if list.is_empty() || !st.faults.fires(FaultClass::Errno, &mut st.choice) {
        return None;
    }
    let e = list[st.choice.below(ChoiceKind::Errno, list.len() as u64) as usize];
    st.fault_fired(FaultClass::Errno, file, e);
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
        let id = st.resolve(raw)?;
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

/// The bytes of up to `IOV_MAX` buffers, in order.
fn gather(bufs: &[IoSlice<'_>]) -> Vec<u8> {
    let mut v = Vec::new();
    for b in bufs.iter().take(crate::IOV_MAX) {
        v.extend_from_slice(b);
    }
    v
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
