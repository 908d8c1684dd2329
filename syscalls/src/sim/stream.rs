//! Byte streams once connected: TCP over the simulated network, and Unix stream sockets
//! (connecting and accepting are in `handshake`).
//!
//! TCP. Sent bytes leave as segments that arrive in order after the connection's latency (plus
//! jitter); a segment that finds the receiver's queue full waits in the sender's `tx_blocked`
//! until the receiver reads (a window update one latency later). The send buffer holds what is
//! sent and not yet in the receiver's queue: a send takes what fits, a full buffer is `EAGAIN`,
//! and once a third of it drains an `EPOLLOUT` edge follows (only after a send found it full,
//! as `tcp_check_space`). `SHUT_WR` or `close` send a FIN after the data. Closing with unread
//! data, or with `SO_LINGER` zero, sends a RST instead and discards what was not sent (Linux's
//! rule). Data reaching a closed socket is answered with a RST. A RST makes the next call
//! report `ECONNRESET` (`EPIPE` if a FIN had arrived), after the data already queued.
//!
//! Unix streams are synchronous, as in Linux: bytes land in the peer's queue inside `send`,
//! and the sender's buffer frees when the peer reads them. Closing a Unix stream shuts both
//! directions of the peer, with `ECONNRESET` if unread data was thrown away.

use std::io;

use crate::sim::choice::ChoiceKind;
use crate::sim::clock::Ev;
use crate::sim::faults::FaultClass;
use crate::sim::handshake::abort_child;
use crate::sim::socket::{SockState, sock_mut_of};
use crate::sim::state::{EPOLLIN, EPOLLOUT, EPOLLRDHUP, FileId, Life, State, errno};
use crate::sim::trace::Op;

/// The time a segment leaving `from` now arrives: after the latency and `jitter`, and never
/// before the previous one (a stream arrives in order).
pub(crate) fn depart(st: &mut State, from: FileId, jitter: u64) -> u64 {
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
    let s = sock_mut_of(st, id)?;
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
        st.fault_fired(FaultClass::ShortIo, id, 0);
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
        st.fault_fired(FaultClass::ShortIo, id, 0);
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
        st.fault_fired(FaultClass::Reset, id, 0);
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
    let s = sock_mut_of(st, id)?;
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

/// A Unix stream's peer closed: both directions shut, `ECONNRESET` if it dropped unread data.
pub(crate) fn unix_peer_gone(st: &mut State, peer: FileId, dropped_data: bool) {
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
            if s.opts.linger == Some(0) || !s.rx.is_empty() {
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
