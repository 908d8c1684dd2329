//! Datagrams: UDP over the simulated network, and Unix datagram sockets.
//!
//! A UDP datagram arrives after a latency the seed draws for it alone, so datagrams overtake
//! each other as on a real network, and may be lost ([`FaultClass::Loss`]). It is delivered
//! whole to the socket bound to its destination (an exact address first, then a wildcard), or
//! dropped when that socket's receive buffer is full or it is connected to someone else. With
//! nobody bound there, a *connected* sender gets `ECONNREFUSED` on its next call (the ICMP port
//! unreachable; an unconnected one never hears of it). A datagram longer than the buffer it
//! is read into is truncated; `MSG_PEEK | MSG_TRUNC` reports the real length.
//!
//! Unix datagrams are delivered inside `send`, as in Linux: to a full receiver (its queue holds
//! `net.unix.max_dgram_qlen`, 10, datagrams) the send is `EAGAIN`; to a name nobody holds it is
//! `ECONNREFUSED` (`ENOENT` for a path that does not exist).

use std::io;
use std::net::{IpAddr, SocketAddr};

use crate::sim::choice::ChoiceKind;
use crate::sim::clock::Ev;
use crate::sim::faults::FaultClass;
use crate::sim::net;
use crate::sim::socket::{Dgram, RecvFlags, SockState, autobind, sock_mut_of};
use crate::sim::state::{EPOLLERR, EPOLLIN, EPOLLOUT, FileId, State, errno};
use crate::sim::trace::Op;
use crate::{Domain, SockAddr, UnixAddr};

/// `net.unix.max_dgram_qlen`.
const UNIX_DGRAM_QLEN: usize = 10;
/// What a queued datagram costs a Unix sender's buffer beyond its bytes (an skb's truesize).
const DGRAM_OVERHEAD: usize = 768;
/// The largest UDP payload over IPv4 and IPv6.
const UDP_MAX_V4: usize = 65_507;
const UDP_MAX_V6: usize = 65_527;

/// `connect` on a datagram socket: sets the default destination and the receive filter.
pub(crate) fn connect(st: &mut State, id: FileId, addr: &SockAddr) -> io::Result<()> {
    let domain = st.sock(id).map_or(Domain::Inet, |s| s.domain);
    match (domain, addr) {
        (Domain::Unix, SockAddr::Unix(u)) => {
            net::resolve_unix(st, u)?;
        }
        (Domain::Inet, SockAddr::Inet(SocketAddr::V4(_))) | (Domain::Inet6, SockAddr::Inet(SocketAddr::V6(_))) => {
            autobind(st, id, addr.as_inet().map(|a| a.ip()))?;
        }
        _ => return Err(errno(libc::EAFNOSUPPORT)),
    }
    let s = sock_mut_of(st, id)?;
    s.peer = Some(addr.clone());
    s.state = SockState::Connected;
    Ok(())
}

/// `send`/`sendto` on a datagram socket.
pub(crate) fn send(st: &mut State, id: FileId, data: &[u8], to: Option<&SockAddr>) -> io::Result<usize> {
    let s = sock_mut_of(st, id)?;
    if let Some(e) = s.take_err() {
        return Err(e);
    }
    if s.wr_shut {
        return Err(errno(libc::EPIPE));
    }
    let domain = s.domain;
    let broadcast = s.opts.broadcast;
    let target = match (to, &s.peer) {
        (Some(t), _) => t.clone(),
        (None, Some(p)) => p.clone(),
        (None, None) => {
            return Err(errno(if domain == Domain::Unix {
                libc::ENOTCONN
            } else {
                libc::EDESTADDRREQ
            }));
        }
    };
    if domain == Domain::Unix {
        return send_local(st, id, data, &target);
    }
    let Some(to) = target.as_inet() else {
        return Err(errno(libc::EAFNOSUPPORT));
    };
    let family_ok = matches!(
        (domain, to),
        (Domain::Inet, SocketAddr::V4(_)) | (Domain::Inet6, SocketAddr::V6(_))
    );
    if !family_ok {
        return Err(errno(libc::EAFNOSUPPORT));
    }
    let max = if to.is_ipv4() { UDP_MAX_V4 } else { UDP_MAX_V6 };
    if data.len() > max {
        return Err(errno(libc::EMSGSIZE));
    }
    if let IpAddr::V4(v4) = to.ip() {
        if v4.is_broadcast() && !broadcast {
            return Err(errno(libc::EACCES));
        }
    }
    autobind(st, id, Some(to.ip()))?;
    let from_addr = net::source_addr(st, id, to);
    if st.faults.fires(FaultClass::Loss, &mut st.choice) {
        st.fault_fired(FaultClass::Loss, id, 0);
        return Ok(data.len());
    }
    let delay = st.choice.delay_us(ChoiceKind::Jitter, st.cfg.latency_us) * 1000;
    let at = st.now() + delay;
    st.time.at(
        at,
        Ev::Dgram {
            from: id,
            from_addr,
            to,
            data: data.to_vec(),
        },
    );
    Ok(data.len())
}

/// A Unix datagram: straight into the receiver's queue.
fn send_local(st: &mut State, id: FileId, data: &[u8], target: &SockAddr) -> io::Result<usize> {
    let peer = st.sock(id).and_then(|s| s.peer_id);
    let to = match (peer, target) {
        (Some(p), _) if crate::sim::socket::alive(st, p) => p,
        (Some(_), _) => return Err(errno(libc::ECONNREFUSED)),
        (None, SockAddr::Unix(u)) => net::resolve_unix(st, u)?,
        (None, SockAddr::Inet(_)) => return Err(errno(libc::EINVAL)),
    };
    let from = st
        .sock(id)
        .and_then(|s| s.local.clone())
        .unwrap_or(SockAddr::Unix(UnixAddr::Unnamed));
    let Some(r) = st.sock_mut(to) else {
        return Err(errno(libc::ECONNREFUSED));
    };
    if r.is_stream() {
        return Err(errno(libc::EPROTOTYPE));
    }
    if let Some(p) = &r.peer {
        if *p != from && r.peer_id.is_none() {
            return Err(errno(libc::EPERM));
        }
    }
    if data.len() > r.sndbuf.max(r.rcvbuf) {
        return Err(errno(libc::EMSGSIZE));
    }
    // A receiver whose peer is the sender (a socketpair) has no queue limit, only the
    // sender's buffer (each datagram costs its length plus Linux's per-buffer overhead);
    // any other is full past `max_dgram_qlen` (`unix_recvq_full`).
    let full = if r.peer_id == Some(id) {
        r.dgram_bytes + (r.dgrams.len() + 1) * DGRAM_OVERHEAD + data.len() > r.sndbuf
    } else {
        r.dgrams.len() > UNIX_DGRAM_QLEN
    };
    if full {
        if !r.waiting_senders.contains(&id) {
            r.waiting_senders.push(id);
        }
        return Err(errno(libc::EAGAIN));
    }
    r.dgrams.push_back(Dgram {
        from,
        data: data.to_vec(),
    });
    r.dgram_bytes += data.len();
    st.rec(Op::Dgram, to, data.len() as u64, id, 0);
    st.wake(to, EPOLLIN);
    Ok(data.len())
}

/// A UDP datagram reaches `to`.
pub(crate) fn arrive(st: &mut State, from: FileId, from_addr: SocketAddr, to: SocketAddr, data: Vec<u8>) {
    let Some(r) = net::find(st, crate::SockType::Datagram, to, false) else {
        st.rec(Op::Dropped, 0, data.len() as u64, from, 0);
        let sender_connected_there = st
            .sock(from)
            .is_some_and(|s| s.peer.as_ref().and_then(|p| p.as_inet()) == Some(to));
        if sender_connected_there && st.net.is_local(to.ip()) {
            let at = st.now() + st.sock(from).map_or(0, |s| s.latency);
            st.time.at(at, Ev::Unreachable { to: from });
        }
        return;
    };
    let Some(s) = st.sock_mut(r) else {
        return;
    };
    let filtered = s.peer.as_ref().is_some_and(|p| p.as_inet() != Some(from_addr));
    if filtered || s.dgram_bytes + data.len() > s.rcvbuf {
        st.rec(Op::Dropped, r, data.len() as u64, from, 0);
        return;
    }
    s.dgram_bytes += data.len();
    let len = data.len();
    s.dgrams.push_back(Dgram {
        from: SockAddr::Inet(from_addr),
        data,
    });
    st.rec(Op::Dgram, r, len as u64, from, 0);
    st.wake(r, EPOLLIN);
}

/// The ICMP port unreachable for a connected UDP socket's datagram arrives.
pub(crate) fn unreachable(st: &mut State, to: FileId) {
    if let Some(s) = st.sock_mut(to) {
        s.err = libc::ECONNREFUSED;
        st.rec(Op::Rst, to, libc::ECONNREFUSED as u64, 0, 0);
        st.wake(to, EPOLLERR | EPOLLOUT);
    }
}

/// `recv`/`recvfrom` on a datagram socket: one datagram (a pending error first, as
/// `__skb_try_recv_datagram` reports it).
pub(crate) fn recv(st: &mut State, id: FileId, buf: &mut [u8], flags: RecvFlags) -> io::Result<(usize, SockAddr)> {
    let s = sock_mut_of(st, id)?;
    if let Some(e) = s.take_err() {
        return Err(e);
    }
    let Some(d) = s.dgrams.front() else {
        if s.rd_shut {
            return Ok((0, SockAddr::Unix(UnixAddr::Unnamed)));
        }
        return Err(errno(libc::EAGAIN));
    };
    let n = buf.len().min(d.data.len());
    buf[..n].copy_from_slice(&d.data[..n]);
    let real = d.data.len();
    let from = d.from.clone();
    let local = s.domain == Domain::Unix;
    if !flags.peek {
        s.dgrams.pop_front();
        s.dgram_bytes -= real;
        if local {
            // Unix senders that found this queue full may send again.
            let waiting = std::mem::take(&mut s.waiting_senders);
            for w in waiting {
                st.wake(w, EPOLLOUT);
            }
        }
    }
    Ok((if flags.trunc { real } else { n }, from))
}

/// The last descriptor of datagram socket `id` is gone.
pub(crate) fn close(st: &mut State, id: FileId) {
    let peer = st.sock(id).and_then(|s| s.peer_id);
    st.files.remove(&id);
    if let Some(peer) = peer {
        // A socketpair's other end: its sends are refused from now on (its `peer_id` leads
        // nowhere any more).
        st.wake(peer, EPOLLOUT);
    }
}
