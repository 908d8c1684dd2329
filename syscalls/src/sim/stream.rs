//! Byte streams: TCP connections over the simulated network, and Unix stream sockets.
//!
//! TCP. A connect sends a SYN that arrives after the connection's latency; if the listener's
//! backlog has room, its SYN-ACK makes the client connected one latency later, and the client's
//! ACK puts the new connection (an embryo file until accepted) in the accept queue one latency
//! after that, as in Linux, where `accept` never returns a connection its client does not yet
//! consider established (no room: the SYN is dropped and retried after 1, 2, 4, ... s, then
//! `ETIMEDOUT` after 127 s; nobody listening on a local address: a RST, `ECONNREFUSED`). Sent bytes
//! leave as segments that arrive in order after the latency (plus jitter); a segment that
//! finds the receiver's queue full waits in the sender's `tx_blocked` until the receiver reads
//! (a window update one latency later). The send buffer holds what is sent and not yet in the
//! receiver's queue: a send takes what fits, a full buffer is `EAGAIN`, and once a third of it
//! drains an `EPOLLOUT` edge follows (only after a send found it full, as `tcp_check_space`).
//! `SHUT_WR` or `close` send a FIN after the data. Closing with unread data, or with
//! `SO_LINGER` zero, sends a RST instead and discards what was not sent (Linux's rule). Data
//! reaching a closed socket is answered with a RST. A RST makes the next call report
//! `ECONNRESET` (`EPIPE` if a FIN had arrived), after the data already queued.
//!
//! Unix streams are synchronous, as in Linux: connect succeeds at once (or `EAGAIN` when the
//! backlog is full), bytes land in the peer's queue inside `send`, and the sender's buffer
//! frees when the peer reads them. Closing a Unix stream shuts both directions of the peer,
//! with `ECONNRESET` if unread data was thrown away.

use std::io;
use std::net::SocketAddr;

use crate::sim::choice::ChoiceKind;
use crate::sim::clock::Ev;
use crate::sim::faults::{ACCEPT_ERRNOS, CONNECT_ERRNOS, FaultClass};
use crate::sim::net;
use crate::sim::socket::{Sock, SockState, autobind};
use crate::sim::state::{EPOLLIN, EPOLLOUT, EPOLLRDHUP, FileId, Kind, Life, State, errno};
use crate::sim::trace::Op;
use crate::{SockAddr, UnixAddr};

/// SYN retransmissions before a connect times out (`net.ipv4.tcp_syn_retries`).
const SYN_RETRIES: u32 = 6;
/// How long a connection attempt to an address nobody answers takes to time out (1+2+...+64).
const SYN_TIMEOUT_NS: u64 = 127_000_000_000;

fn sock(st: &State, id: FileId) -> io::Result<&Sock> {
    st.sock(id).ok_or_else(|| errno(libc::ENOTSOCK))
}

fn sock_mut(st: &mut State, id: FileId) -> io::Result<&mut Sock> {
    st.sock_mut(id).ok_or_else(|| errno(libc::ENOTSOCK))
}

fn fault(st: &mut State, class: FaultClass, file: FileId, err: i32) {
    st.stats.faults += 1;
    st.rec(Op::Fault, file, class.code(), err as u64, 0);
}

/// The time a segment leaving `from` now arrives: after the latency and `jitter`, and never
/// before the previous one (a stream arrives in order).
fn depart(st: &mut State, from: FileId, jitter: u64) -> u64 {
    let now = st.now();
    let Some(s) = st.sock_mut(from) else {
        return now;
    };
    let at = (now + s.latency + jitter).max(s.arrive_after);
    s.arrive_after = at;
    at
}

fn jitter(st: &mut State) -> u64 {
    let max = st.cfg.latency_us / 4;
    st.choice.delay_us(ChoiceKind::Jitter, max) * 1000
}

/// `send` on a stream socket.
pub(crate) fn send(st: &mut State, id: FileId, data: &[u8]) -> io::Result<usize> {
    let s = sock_mut(st, id)?;
    if let Some(e) = s.take_err() {
        return Err(e);
    }
    if s.wr_shut {
        return Err(errno(libc::EPIPE));
    }
    match s.state {
        SockState::Connected => {}
        SockState::Connecting => return Err(errno(libc::EAGAIN)),
        _ => return Err(errno(if s.is_tcp() { libc::EPIPE } else { libc::ENOTCONN })),
    }
    if data.is_empty() {
        return Ok(0);
    }
    let tcp = s.is_tcp();
    let peer = s.peer_id;
    let room = s.send_room();
    if room == 0 {
        s.nospace = true;
        return Err(errno(libc::EAGAIN));
    }
    let Some(peer) = peer else {
        return Err(errno(libc::ENOTCONN));
    };
    if !tcp && !crate::sim::socket::alive(st, peer) {
        return Err(errno(libc::EPIPE));
    }
    let mut n = data.len().min(room);
    if n > 1 && st.faults.fires(FaultClass::ShortIo, &mut st.choice) {
        // The buffer filled meanwhile: take part, and say so with an edge once it drains.
        n = 1 + st.choice.below(ChoiceKind::Segment, n as u64 - 1) as usize;
        fault(st, FaultClass::ShortIo, id, 0);
        let at = st.now() + st.sock(id).map_or(0, |s| s.latency).max(1000);
        if let Some(s) = st.sock_mut(id) {
            s.squeezed = true;
            s.nospace = true;
        }
        st.time.at(at, Ev::Space { sock: id });
    }
    if let Some(s) = st.sock_mut(id) {
        if n < data.len() {
            s.nospace = true;
        }
        s.tx_queued += n;
    }
    if !tcp {
        deliver_local(st, id, peer, &data[..n]);
        return Ok(n);
    }
    let mut cut = n;
    if n > 1 && st.faults.fires(FaultClass::ShortIo, &mut st.choice) {
        cut = 1 + st.choice.below(ChoiceKind::Segment, n as u64 - 1) as usize;
        fault(st, FaultClass::ShortIo, id, 0);
    }
    for part in [&data[..cut], &data[cut..n]] {
        if part.is_empty() {
            continue;
        }
        let j = jitter(st);
        let at = depart(st, id, j);
        st.time.at(
            at,
            Ev::Segment {
                from: id,
                to: peer,
                data: part.to_vec(),
                fin: false,
            },
        );
    }
    if st.faults.fires(FaultClass::Reset, &mut st.choice) {
        fault(st, FaultClass::Reset, id, 0);
        reset_both(st, id);
    }
    Ok(n)
}

/// Unix stream: the bytes land in the peer's queue at once.
fn deliver_local(st: &mut State, from: FileId, to: FileId, data: &[u8]) {
    if let Some(r) = st.sock_mut(to) {
        r.rx.extend(data);
    }
    st.rec(Op::Deliver, to, data.len() as u64, from, 0);
    st.wake(to, EPOLLIN);
}

/// `recv` on a stream socket (the order of `tcp_recvmsg`: data, end of file after a FIN, the
/// pending error, `SHUT_RD`, not connected).
pub(crate) fn recv(st: &mut State, id: FileId, buf: &mut [u8], peek: bool) -> io::Result<usize> {
    if buf.is_empty() {
        return Ok(0);
    }
    let s = sock_mut(st, id)?;
    if !s.rx.is_empty() {
        let n = buf.len().min(s.rx.len());
        let (front, back) = s.rx.as_slices();
        let a = n.min(front.len());
        buf[..a].copy_from_slice(&front[..a]);
        buf[a..n].copy_from_slice(&back[..n - a]);
        if !peek {
            s.rx.drain(..n);
            after_read(st, id, n);
        }
        return Ok(n);
    }
    if s.rx_fin {
        return Ok(0);
    }
    if let Some(e) = s.take_err() {
        return Err(e);
    }
    if s.rd_shut {
        return Ok(0);
    }
    match s.state {
        SockState::Connected | SockState::Connecting => Err(errno(libc::EAGAIN)),
        _ => Err(errno(libc::ENOTCONN)),
    }
}

/// The receiver of `id`'s peer read `n` bytes: TCP sends a window update if the peer has
/// bytes waiting for room; a Unix peer's send buffer frees.
fn after_read(st: &mut State, id: FileId, n: usize) {
    let Some(s) = st.sock(id) else {
        return;
    };
    let (tcp, peer, latency) = (s.is_tcp(), s.peer_id, s.latency);
    let Some(peer) = peer else {
        return;
    };
    if tcp {
        let now = st.now();
        if let Some(p) = st.sock_mut(peer) {
            if !p.tx_blocked.is_empty() && !p.window_pending {
                p.window_pending = true;
                st.time.at(now + latency, Ev::Window { from: peer });
            }
        }
    } else if let Some(p) = st.sock_mut(peer) {
        p.tx_queued = p.tx_queued.saturating_sub(n);
        // unix_write_space: every read wakes a writer that can write.
        if p.writable() {
            p.nospace = false;
            st.wake(peer, EPOLLOUT);
        }
    }
}

/// `id`'s send buffer lost `n` bytes to the peer's queue: raise `EPOLLOUT` for a writer that
/// found it full, once it is writable again.
fn credit(st: &mut State, id: FileId, n: usize) {
    if let Some(s) = st.sock_mut(id) {
        s.tx_queued = s.tx_queued.saturating_sub(n);
        if s.nospace && s.writable() {
            s.nospace = false;
            st.wake(id, EPOLLOUT);
        }
    }
}

/// Whether `id` is an open (or embryo) socket still connected.
fn receiving(st: &State, id: FileId) -> bool {
    st.file(id).is_some_and(|f| f.life != Life::Closed)
        && st
            .sock(id)
            .is_some_and(|s| matches!(s.state, SockState::Connected | SockState::Connecting))
}

/// A segment from `from` reaches `to`.
pub(crate) fn arrive(st: &mut State, from: FileId, to: FileId, data: Vec<u8>, fin: bool) {
    if !receiving(st, to) {
        // A closed socket answers data with a RST; a FIN alone is simply acknowledged.
        credit(st, from, data.len());
        if !data.is_empty() {
            st.rec(Op::Dropped, to, data.len() as u64, from, 0);
            if st.sock(from).is_some_and(|s| !matches!(s.state, SockState::Closed)) {
                let at = st.now() + st.sock(from).map_or(0, |s| s.latency);
                st.time.at(at, Ev::Rst { to: from });
            }
        }
        if fin {
            fin_done(st, from);
        }
        return;
    }
    let sender_blocked = st.sock(from).is_some_and(|s| !s.tx_blocked.is_empty() || s.fin_blocked);
    let (take, room_left) = match st.sock_mut(to) {
        Some(r) => {
            let room = r.rcvbuf.saturating_sub(r.rx.len());
            let take = if sender_blocked { 0 } else { data.len().min(room) };
            r.rx.extend(&data[..take]);
            (take, room - take)
        }
        None => (0, 0),
    };
    let _ = room_left;
    let rest = &data[take..];
    let mut fin_now = fin;
    if !rest.is_empty() || (fin && sender_blocked) {
        if let Some(s) = st.sock_mut(from) {
            s.tx_blocked.extend(rest);
            if fin {
                s.fin_blocked = true;
            }
        }
        fin_now = false;
    }
    credit(st, from, take);
    if take > 0 {
        st.rec(Op::Deliver, to, take as u64, from, 0);
        st.wake(to, EPOLLIN);
    }
    if fin_now {
        fin_arrives(st, to);
        fin_done(st, from);
    }
}

fn fin_arrives(st: &mut State, to: FileId) {
    if let Some(r) = st.sock_mut(to) {
        r.rx_fin = true;
        r.rd_shut = true;
        if r.fin_delivered {
            // Both FINs exchanged: the connection is over (TCP_CLOSE: no peer any more).
            r.state = SockState::Closed;
        }
    }
    st.rec(Op::Fin, to, 0, 0, 0);
    st.wake(to, EPOLLIN | EPOLLRDHUP);
}

/// `from`'s FIN was delivered (or found nobody): a closed sender is finished.
fn fin_done(st: &mut State, from: FileId) {
    if let Some(s) = st.sock_mut(from) {
        s.fin_blocked = false;
        s.fin_delivered = true;
        s.window_pending = false;
        if s.rx_fin && matches!(s.state, SockState::Connected) {
            s.state = SockState::Closed;
        }
    }
    gc(st, from);
}

/// The receiver of `from`'s stream read: move what fits of `from`'s blocked bytes.
pub(crate) fn window_opens(st: &mut State, from: FileId) {
    let Some(s) = st.sock_mut(from) else {
        return;
    };
    s.window_pending = false;
    let Some(to) = s.peer_id else {
        return;
    };
    if !receiving(st, to) {
        let (n, fin) = match st.sock_mut(from) {
            Some(s) => {
                let n = s.tx_blocked.len();
                s.tx_blocked.clear();
                (n, s.fin_blocked)
            }
            None => (0, false),
        };
        credit(st, from, n);
        if fin {
            fin_done(st, from);
        }
        return;
    }
    let room = st.sock(to).map_or(0, |r| r.rcvbuf.saturating_sub(r.rx.len()));
    let moved: Vec<u8> = match st.sock_mut(from) {
        Some(s) => {
            let n = room.min(s.tx_blocked.len());
            s.tx_blocked.drain(..n).collect()
        }
        None => return,
    };
    if !moved.is_empty() {
        if let Some(r) = st.sock_mut(to) {
            r.rx.extend(&moved);
        }
        credit(st, from, moved.len());
        st.rec(Op::Deliver, to, moved.len() as u64, from, 0);
        st.wake(to, EPOLLIN);
    }
    let fin = st.sock(from).is_some_and(|s| s.tx_blocked.is_empty() && s.fin_blocked);
    if fin {
        fin_arrives(st, to);
        fin_done(st, from);
    }
}

/// A short write's squeeze is over: the send buffer has room again.
pub(crate) fn space_frees(st: &mut State, id: FileId) {
    if let Some(s) = st.sock_mut(id) {
        s.squeezed = false;
        if s.writable() {
            s.nospace = false;
            st.wake(id, EPOLLOUT);
        }
    }
}

/// A RST reaches `to` (`tcp_reset`).
pub(crate) fn reset_arrives(st: &mut State, to: FileId) {
    let Some(life) = st.file(to).map(|f| f.life) else {
        return;
    };
    let Some(s) = st.sock_mut(to) else {
        return;
    };
    let err = match s.state {
        SockState::Connecting => libc::ECONNREFUSED,
        SockState::Connected if life != Life::Closed => {
            if s.rx_fin {
                libc::EPIPE
            } else {
                libc::ECONNRESET
            }
        }
        SockState::Connected => 0,
        _ => return,
    };
    s.state = SockState::Closed;
    s.err = err;
    s.rd_shut = true;
    s.wr_shut = true;
    s.tx_blocked.clear();
    s.fin_blocked = false;
    s.tx_queued = 0;
    s.squeezed = false;
    s.nospace = false;
    st.rec(Op::Rst, to, err as u64, 0, 0);
    st.wake(to, 0);
    gc(st, to);
}

/// A middlebox resets `id`'s connection: a RST reaches both ends, after what is in flight.
fn reset_both(st: &mut State, id: FileId) {
    let Some(peer) = st.sock(id).and_then(|s| s.peer_id) else {
        return;
    };
    let to_peer = depart(st, id, 0);
    st.time.at(to_peer, Ev::Rst { to: peer });
    let to_me = depart(st, peer, 0);
    st.time.at(to_me, Ev::Rst { to: id });
}

/// `connect` on a stream socket.
pub(crate) fn connect(st: &mut State, id: FileId, addr: &SockAddr) -> io::Result<()> {
    let s = sock(st, id)?;
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
    let s = sock(st, id)?;
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
        let s = sock_mut(st, id)?;
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
        fault(st, FaultClass::Connect, id, e);
        if e == libc::ENETUNREACH {
            return Err(errno(e));
        }
        let delay = if e == libc::ETIMEDOUT {
            SYN_TIMEOUT_NS
        } else {
            latency * 2
        };
        sock_mut(st, id)?.state = SockState::Connecting;
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
                let s = sock_mut(st, id)?;
                s.state = SockState::Connected;
                s.peer_id = Some(child);
                st.rec(Op::Established, id, 0, child, 0);
                return Ok(());
            }
            _ => {}
        }
    }
    sock_mut(st, id)?.state = SockState::Connecting;
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
    if sock(st, id)?.domain != crate::Domain::Unix {
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
    let s = sock_mut(st, id)?;
    s.state = SockState::Connected;
    s.peer_id = Some(child);
    s.peer = listener_addr;
    enqueue(st, l, child);
    Ok(())
}

/// `accept4` on a listening stream socket: the next connection's file (still an embryo: the
/// caller gives it a descriptor) and its peer's address.
pub(crate) fn accept(st: &mut State, id: FileId) -> io::Result<(FileId, SockAddr)> {
    let queued = match &sock(st, id)?.state {
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
        fault(st, FaultClass::Accept, id, e);
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
fn abort_child(st: &mut State, child: FileId) {
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

/// A Unix stream's peer closed: both directions shut, `ECONNRESET` if it dropped unread data.
fn unix_peer_gone(st: &mut State, peer: FileId, dropped_data: bool) {
    if let Some(p) = st.sock_mut(peer) {
        p.rd_shut = true;
        p.wr_shut = true;
        if dropped_data {
            p.err = libc::ECONNRESET;
        }
        st.wake(peer, 0);
    }
}

/// `shutdown` on a connected stream socket.
pub(crate) fn shutdown(st: &mut State, id: FileId, rd: bool, wr: bool) {
    let Some(s) = st.sock_mut(id) else {
        return;
    };
    let tcp = s.is_tcp();
    let peer = s.peer_id;
    let send_fin = wr && !s.wr_shut;
    s.rd_shut |= rd;
    s.wr_shut |= wr;
    if tcp {
        if send_fin {
            send_fin_after_data(st, id);
        }
    } else if let Some(p) = peer.and_then(|p| st.sock_mut(p)) {
        p.rd_shut |= wr;
        p.wr_shut |= rd;
        st.wake(peer.unwrap_or(0), EPOLLIN | EPOLLRDHUP | EPOLLOUT);
    }
    st.wake(id, 0);
}

fn send_fin_after_data(st: &mut State, id: FileId) {
    let Some(s) = st.sock_mut(id) else {
        return;
    };
    if s.fin_sent {
        return;
    }
    s.fin_sent = true;
    let Some(peer) = s.peer_id else {
        return;
    };
    let at = depart(st, id, 0);
    st.time.at(
        at,
        Ev::Segment {
            from: id,
            to: peer,
            data: Vec::new(),
            fin: true,
        },
    );
}

/// The last descriptor of stream socket `id` is gone.
pub(crate) fn close(st: &mut State, id: FileId) {
    let Some(s) = st.sock_mut(id) else {
        return;
    };
    let tcp = s.is_tcp();
    let peer = s.peer_id;
    match &mut s.state {
        SockState::Listening { queue, .. } => {
            let queue: Vec<FileId> = queue.drain(..).collect();
            s.state = SockState::Closed;
            for c in queue {
                abort_child(st, c);
            }
        }
        SockState::Connected if tcp => {
            if s.opts.linger0 || !s.rx.is_empty() {
                // Unread data (or SO_LINGER 0): a RST instead of a FIN, unsent data dropped.
                s.state = SockState::Closed;
                s.tx_blocked.clear();
                s.fin_blocked = false;
                if let Some(peer) = peer {
                    let at = depart(st, id, 0);
                    st.time.at(at, Ev::Rst { to: peer });
                }
            } else {
                s.wr_shut = true;
                s.rd_shut = true;
                send_fin_after_data(st, id);
            }
        }
        SockState::Connected => {
            let unread = !s.rx.is_empty();
            s.state = SockState::Closed;
            if let Some(peer) = peer {
                unix_peer_gone(st, peer, unread);
            }
        }
        _ => {}
    }
    gc(st, id);
}

/// Removes a closed stream socket once nothing it sent is still on the way: a closed TCP
/// connection lingers until its FIN (after the data the peer's window held back) is delivered.
fn gc(st: &mut State, id: FileId) {
    let done = match (st.file(id), st.sock(id)) {
        (Some(f), Some(s)) if f.life == Life::Closed => match s.state {
            SockState::Connected if s.is_tcp() => s.fin_delivered,
            _ => true,
        },
        _ => false,
    };
    if done {
        st.files.remove(&id);
    }
}
