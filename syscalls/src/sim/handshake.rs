//! Connecting and accepting stream sockets: the TCP handshake over the simulated network, and
//! Unix stream connections.
//!
//! TCP. A connect sends a SYN that arrives after the connection's latency; if the listener's
//! backlog has room, its SYN-ACK makes the client connected one latency later, and the client's
//! ACK puts the new connection (an embryo file until accepted) in the accept queue one latency
//! after that, as in Linux, where `accept` never returns a connection its client does not yet
//! consider established. A full backlog (queued plus half-open connections past `backlog`)
//! drops the SYN, which is sent again after 1, 2, 4, ... s, and the connect fails with
//! `ETIMEDOUT` after 127 s; nobody listening on a local address answers with a RST
//! (`ECONNREFUSED`); an address the machine does not have never answers. On loopback the seed
//! may complete a connect inside the call, as Linux sometimes does.
//!
//! Unix streams connect synchronously, as in Linux: at once, or `EAGAIN` when the listener's
//! backlog is full.
//!
//! A failed accept ([`FaultClass::Accept`]) either loses the connection (`ECONNABORTED`, or
//! `EAGAIN` when it was the only one queued: its client sees a reset) or leaves it queued
//! (`EMFILE`, `ENFILE`, ...).

use std::io;
use std::net::SocketAddr;

use crate::sim::choice::ChoiceKind;
use crate::sim::clock::Ev;
use crate::sim::faults::{ACCEPT_ERRNOS, CONNECT_ERRNOS, FaultClass};
use crate::sim::net;
use crate::sim::socket::{Sock, SockState, autobind, sock_mut_of, sock_of};
use crate::sim::state::{EPOLLIN, FileId, Kind, Life, State, errno};
use crate::sim::stream::{depart, unix_peer_gone};
use crate::sim::trace::Op;
use crate::{SockAddr, UnixAddr};

/// SYN retransmissions before a connect times out (`net.ipv4.tcp_syn_retries`).
const SYN_RETRIES: u32 = 6;
/// How long a connection attempt to an address nobody answers takes to time out (1+2+...+64).
const SYN_TIMEOUT_NS: u64 = 127_000_000_000;

/// `connect` on a stream socket.
pub(crate) fn connect(st: &mut State, id: FileId, addr: &SockAddr) -> io::Result<()> {
    let s = sock_of(st, id)?;
    match s.state {
        SockState::Connecting => return Err(errno(libc::EALREADY)),
        SockState::Connected | SockState::Listening { .. } => return Err(errno(libc::EISCONN)),
        SockState::Fresh | SockState::Closed => {}
    }
    match addr {
        SockAddr::Inet(a) => tcp_connect(st, id, *a),
        SockAddr::Unix(u) => unix_connect(st, id, u),
    }
}

fn tcp_connect(st: &mut State, id: FileId, to: SocketAddr) -> io::Result<()> {
    let s = sock_of(st, id)?;
    if s.domain == crate::Domain::Unix {
        return Err(errno(libc::EINVAL));
    }
    let family_ok = matches!(
        (s.domain, to),
        (crate::Domain::Inet, SocketAddr::V4(_)) | (crate::Domain::Inet6, SocketAddr::V6(_))
    );
    if !family_ok {
        return Err(errno(libc::EAFNOSUPPORT));
    }
    autobind(st, id, Some(to.ip()))?;
    let latency = st.choice.delay_us(ChoiceKind::Latency, st.cfg.latency_us) * 1000;
    let from_addr = net::source_addr(st, id, to);
    {
        let s = sock_mut_of(st, id)?;
        s.latency = latency;
        s.err = 0;
        s.rd_shut = false;
        s.wr_shut = false;
        s.rx_fin = false;
        s.peer = Some(SockAddr::Inet(to));
        s.local = Some(SockAddr::Inet(from_addr));
    }
    if st.faults.fires(FaultClass::Connect, &mut st.choice) {
        let e = CONNECT_ERRNOS[st.choice.below(ChoiceKind::Errno, CONNECT_ERRNOS.len() as u64) as usize];
        st.fault_fired(FaultClass::Connect, id, e);
        if e == libc::ENETUNREACH {
            return Err(errno(e));
        }
        let delay = if e == libc::ETIMEDOUT {
            SYN_TIMEOUT_NS
        } else {
            latency * 2
        };
        sock_mut_of(st, id)?.state = SockState::Connecting;
        let at = st.now() + delay;
        st.time.at(at, Ev::ConnectFail { to: id, errno: e });
        return Err(errno(libc::EINPROGRESS));
    }
    let rate = st.cfg.connect_inline_rate;
    if st.choice.chance(ChoiceKind::Connect, rate) {
        // On loopback the handshake may finish inside the call.
        match net::find(st, crate::SockType::Stream, to, true) {
            None if st.net.is_local(to.ip()) => return Err(errno(libc::ECONNREFUSED)),
            Some(l) if !backlog_full(st, l) => {
                let child = new_child(st, l, id, to, 0);
                enqueue(st, l, child);
                let s = sock_mut_of(st, id)?;
                s.state = SockState::Connected;
                s.peer_id = Some(child);
                st.rec(Op::Established, id, 0, child, 0);
                return Ok(());
            }
            _ => {}
        }
    }
    sock_mut_of(st, id)?.state = SockState::Connecting;
    let at = st.now() + latency;
    st.time.at(at, Ev::Syn { from: id, to, tries: 0 });
    Err(errno(libc::EINPROGRESS))
}

fn backlog_full(st: &State, listener: FileId) -> bool {
    match st.sock(listener).map(|s| &s.state) {
        Some(SockState::Listening {
            backlog,
            queue,
            half_open,
        }) => queue.len() + half_open > *backlog,
        _ => true,
    }
}

/// Puts `child` in `listener`'s accept queue and wakes the listener.
fn enqueue(st: &mut State, listener: FileId, child: FileId) {
    let client = st.sock(child).and_then(|c| c.peer_id).unwrap_or(0);
    if let Some(SockState::Listening { queue, .. }) = st.sock_mut(listener).map(|l| &mut l.state) {
        queue.push_back(child);
    }
    st.rec(Op::Queued, listener, 0, client, 0);
    st.wake(listener, EPOLLIN);
}

/// The server side of a new connection from `client` to `to` (not yet in `listener`'s queue);
/// its segments to the client arrive no earlier than `synack_at`.
fn new_child(st: &mut State, listener: FileId, client: FileId, to: SocketAddr, synack_at: u64) -> FileId {
    let (domain, local) = match st.sock(listener) {
        Some(l) => {
            let bound = l.local.as_ref().and_then(|a| a.as_inet());
            let local = match bound {
                Some(b) if !b.ip().is_unspecified() => b,
                _ => to,
            };
            (l.domain, local)
        }
        None => (crate::Domain::Inet, to),
    };
    let (peer_addr, latency) = match st.sock(client) {
        Some(c) => (c.local.clone(), c.latency),
        None => (None, 0),
    };
    let mut child = Sock::new(domain, crate::SockType::Stream);
    child.local = Some(SockAddr::Inet(local));
    child.peer = peer_addr;
    child.state = SockState::Connected;
    child.peer_id = Some(client);
    child.latency = latency;
    child.arrive_after = synack_at;
    st.embryo(Kind::Socket(Box::new(child)))
}

/// `from`'s SYN reaches `to`.
pub(crate) fn syn_arrives(st: &mut State, from: FileId, to: SocketAddr, tries: u32) {
    let Some(latency) = st
        .sock(from)
        .filter(|s| matches!(s.state, SockState::Connecting))
        .map(|s| s.latency)
    else {
        return;
    };
    let now = st.now();
    match net::find(st, crate::SockType::Stream, to, true) {
        None if st.net.is_local(to.ip()) => st.time.at(now + latency, Ev::Rst { to: from }),
        None => st.time.at(
            now + SYN_TIMEOUT_NS,
            Ev::ConnectFail {
                to: from,
                errno: libc::ETIMEDOUT,
            },
        ),
        Some(l) if backlog_full(st, l) => {
            if tries < SYN_RETRIES {
                st.time.at(
                    now + (1_000_000_000 << tries),
                    Ev::Syn {
                        from,
                        to,
                        tries: tries + 1,
                    },
                );
            } else {
                // The last SYN gets as long again for an answer: 1 + 2 + ... + 64 = 127 s.
                st.time.at(
                    now + (1_000_000_000 << tries),
                    Ev::ConnectFail {
                        to: from,
                        errno: libc::ETIMEDOUT,
                    },
                );
            }
        }
        Some(l) => {
            st.rec(Op::Syn, l, 0, from, 0);
            let child = new_child(st, l, from, to, now + latency);
            if let Some(SockState::Listening { half_open, .. }) = st.sock_mut(l).map(|s| &mut s.state) {
                *half_open += 1;
            }
            st.time.at(
                now + latency,
                Ev::SynAck {
                    to: from,
                    child,
                    listener: l,
                },
            );
        }
    }
}

fn half_open_done(st: &mut State, listener: FileId) {
    if let Some(SockState::Listening { half_open, .. }) = st.sock_mut(listener).map(|s| &mut s.state) {
        *half_open = half_open.saturating_sub(1);
    }
}

/// The SYN-ACK for `child` reaches the client `to`: the client is connected, and its ACK
/// (which puts `child` in the accept queue) leaves ahead of any data it sends.
pub(crate) fn synack_arrives(st: &mut State, to: FileId, child: FileId, listener: FileId) {
    let connecting = st.file(to).is_some_and(|f| f.life != Life::Closed)
        && st.sock(to).is_some_and(|s| matches!(s.state, SockState::Connecting));
    if !connecting {
        // The client gave up (closed): the half-open connection is forgotten.
        half_open_done(st, listener);
        st.files.remove(&child);
        return;
    }
    if let Some(s) = st.sock_mut(to) {
        s.state = SockState::Connected;
        s.peer_id = Some(child);
    }
    st.rec(Op::Established, to, 0, child, 0);
    st.wake(to, 0);
    let at = depart(st, to, 0);
    st.time.at(at, Ev::Ack { child, listener });
}

/// The client's ACK reaches the listener: the connection can be accepted.
pub(crate) fn ack_arrives(st: &mut State, child: FileId, listener: FileId) {
    half_open_done(st, listener);
    let listening = st.file(listener).is_some_and(|f| f.life != Life::Closed)
        && st
            .sock(listener)
            .is_some_and(|s| matches!(s.state, SockState::Listening { .. }));
    if listening && st.file(child).is_some() {
        enqueue(st, listener, child);
    } else if st.file(child).is_some() {
        abort_child(st, child);
    }
}

/// `to`'s connection attempt fails with `err`.
pub(crate) fn connect_fails(st: &mut State, to: FileId, err: i32) {
    let Some(s) = st.sock_mut(to).filter(|s| matches!(s.state, SockState::Connecting)) else {
        return;
    };
    s.state = SockState::Closed;
    s.err = err;
    s.rd_shut = true;
    s.wr_shut = true;
    st.rec(Op::Rst, to, err as u64, 0, 0);
    st.wake(to, 0);
}

fn unix_connect(st: &mut State, id: FileId, to: &UnixAddr) -> io::Result<()> {
    if sock_of(st, id)?.domain != crate::Domain::Unix {
        return Err(errno(libc::EAFNOSUPPORT));
    }
    let l = net::resolve_unix(st, to)?;
    match st.sock(l) {
        Some(ls) if !ls.is_stream() => return Err(errno(libc::EPROTOTYPE)),
        Some(ls) if matches!(ls.state, SockState::Listening { .. }) => {}
        _ => return Err(errno(libc::ECONNREFUSED)),
    }
    if backlog_full(st, l) {
        return Err(errno(libc::EAGAIN));
    }
    let listener_addr = st.sock(l).and_then(|s| s.local.clone());
    let client_addr = st.sock(id).and_then(|s| s.local.clone());
    let mut child = Sock::new(crate::Domain::Unix, crate::SockType::Stream);
    child.local = listener_addr.clone();
    child.peer = Some(client_addr.unwrap_or(SockAddr::Unix(UnixAddr::Unnamed)));
    child.state = SockState::Connected;
    child.peer_id = Some(id);
    let child = st.embryo(Kind::Socket(Box::new(child)));
    let s = sock_mut_of(st, id)?;
    s.state = SockState::Connected;
    s.peer_id = Some(child);
    s.peer = listener_addr;
    enqueue(st, l, child);
    Ok(())
}

/// `accept4` on a listening stream socket: the next connection's file (still an embryo: the
/// caller gives it a descriptor) and its peer's address.
pub(crate) fn accept(st: &mut State, id: FileId) -> io::Result<(FileId, SockAddr)> {
    let queued = match &sock_of(st, id)?.state {
        SockState::Listening { queue, .. } => queue.len(),
        _ => return Err(errno(libc::EINVAL)),
    };
    if queued == 0 {
        return Err(errno(libc::EAGAIN));
    }
    if st.faults.fires(FaultClass::Accept, &mut st.choice) {
        // EAGAIN only when the one queued connection vanishes (another acceptor took it or
        // it was reset): with more queued it would hide them from an edge-triggered loop.
        let choices = if queued == 1 {
            ACCEPT_ERRNOS.len() + 1
        } else {
            ACCEPT_ERRNOS.len()
        };
        let pick = st.choice.below(ChoiceKind::Errno, choices as u64) as usize;
        let e = ACCEPT_ERRNOS.get(pick).copied().unwrap_or(libc::EAGAIN);
        st.fault_fired(FaultClass::Accept, id, e);
        if matches!(e, libc::ECONNABORTED | libc::EAGAIN) {
            if let Some(child) = pop_child(st, id) {
                abort_child(st, child);
            }
        }
        return Err(errno(e));
    }
    let child = pop_child(st, id).ok_or_else(|| errno(libc::EAGAIN))?;
    let peer = st
        .sock(child)
        .and_then(|c| c.peer.clone())
        .unwrap_or(SockAddr::Unix(UnixAddr::Unnamed));
    Ok((child, peer))
}

fn pop_child(st: &mut State, listener: FileId) -> Option<FileId> {
    match st.sock_mut(listener).map(|s| &mut s.state) {
        Some(SockState::Listening { queue, .. }) => queue.pop_front(),
        _ => None,
    }
}

/// Puts a connection back at the head of the queue (its descriptor could not be made).
pub(crate) fn requeue(st: &mut State, listener: FileId, child: FileId) {
    if let Some(SockState::Listening { queue, .. }) = st.sock_mut(listener).map(|s| &mut s.state) {
        queue.push_front(child);
    }
}

/// A queued connection is thrown away: its client sees a reset.
pub(crate) fn abort_child(st: &mut State, child: FileId) {
    let (tcp, peer) = match st.sock(child) {
        Some(c) => (c.is_tcp(), c.peer_id),
        None => return,
    };
    if let Some(f) = st.file_mut(child) {
        f.life = Life::Closed;
    }
    if let Some(peer) = peer {
        if tcp {
            let at = depart(st, child, 0);
            st.time.at(at, Ev::Rst { to: peer });
        } else {
            unix_peer_gone(st, peer, true);
        }
    }
    st.files.remove(&child);
}
