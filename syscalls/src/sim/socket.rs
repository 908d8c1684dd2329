//! Simulated sockets: the state every socket has, its options and names, and the calls that
//! do not depend on the protocol (the byte streams are in `stream`, datagrams in `dgram`, the
//! tables of bound names in `net`).
//!
//! A socket follows Linux's shutdown flags: `rd_shut` is `RCV_SHUTDOWN` (a FIN arrived,
//! `SHUT_RD`, a reset), `wr_shut` is `SEND_SHUTDOWN` (`SHUT_WR`, a reset); `rx_fin` is
//! `SOCK_DONE` (a FIN arrived), which makes `recv` report end of file before a pending error,
//! as `tcp_recvmsg` does. A pending error (`err`, `SO_ERROR`) is reported once, by the next
//! call that looks at it, and then cleared.

use std::collections::VecDeque;
use std::io;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

use crate::sim::net;
use crate::sim::state::{EPOLLERR, EPOLLHUP, EPOLLIN, EPOLLOUT, EPOLLRDHUP, FileId, Kind, Life, State, errno};
use crate::sim::{dgram, stream};
use crate::sockaddr::{Domain, SockAddr, UnixAddr};
use crate::socket::{Shutdown, SockType};

/// A TCP socket's default send and receive buffers (after Linux's autotuning has grown them).
const TCP_SNDBUF: usize = 65_536;
const TCP_RCVBUF: usize = 131_072;
/// `net.core.wmem_default`/`rmem_default`: UDP and Unix sockets.
const DEFAULT_BUF: usize = 212_992;
/// `net.core.rmem_max`/`wmem_max`: the cap of an `SO_RCVBUF`/`SO_SNDBUF` request.
const BUF_MAX: usize = 212_992;

/// Where a socket is in its life.
pub(crate) enum SockState {
    /// Created (maybe bound), never connected.
    Fresh,
    /// Listening: connections wait in `queue`; `half_open` more are between the SYN and the
    /// client's final ACK. At most `backlog + 1` in all, as in Linux.
    Listening {
        backlog: usize,
        queue: VecDeque<FileId>,
        half_open: usize,
    },
    /// A TCP connect is under way.
    Connecting,
    /// Connected (a datagram socket: has a default peer).
    Connected,
    /// The connection is over: reset, refused, failed.
    Closed,
}

/// One received datagram.
pub(crate) struct Dgram {
    pub(crate) from: SockAddr,
    pub(crate) data: Vec<u8>,
}

#[derive(Default, Clone, Copy)]
pub(crate) struct Opts {
    pub(crate) reuseaddr: bool,
    pub(crate) reuseport: bool,
    pub(crate) nodelay: bool,
    pub(crate) keepalive: bool,
    pub(crate) v6only: bool,
    pub(crate) broadcast: bool,
    /// `SO_LINGER`: off (`None`) or on with a timeout in seconds.
    pub(crate) linger: Option<u32>,
    /// `IP_TTL` when set (`None`: the default, 64).
    pub(crate) ttl: Option<u32>,
}

/// A simulated socket.
pub(crate) struct Sock {
    pub(crate) domain: Domain,
    pub(crate) ty: SockType,
    pub(crate) local: Option<SockAddr>,
    pub(crate) peer: Option<SockAddr>,
    pub(crate) state: SockState,
    /// The pending error (`SO_ERROR`), 0 for none.
    pub(crate) err: i32,
    pub(crate) rd_shut: bool,
    pub(crate) wr_shut: bool,
    pub(crate) rx_fin: bool,
    /// The other end of a stream (or of a datagram socket pair).
    pub(crate) peer_id: Option<FileId>,
    /// A stream's receive queue.
    pub(crate) rx: VecDeque<u8>,
    /// A datagram socket's receive queue and its size in bytes.
    pub(crate) dgrams: VecDeque<Dgram>,
    pub(crate) dgram_bytes: usize,
    /// Unix datagram senders that found this socket's queue full (woken when it drains).
    pub(crate) waiting_senders: Vec<FileId>,
    pub(crate) rcvbuf: usize,
    pub(crate) sndbuf: usize,
    /// Stream bytes sent that the peer's receive queue does not hold yet (TCP: in flight or
    /// blocked by the peer's window; Unix: not yet read by the peer). What fills the send
    /// buffer.
    pub(crate) tx_queued: usize,
    /// TCP bytes that reached the peer while its receive queue was full: they move when it
    /// reads (a window update).
    pub(crate) tx_blocked: VecDeque<u8>,
    /// The FIN waits behind `tx_blocked`.
    pub(crate) fin_blocked: bool,
    /// A FIN was sent: nothing more goes out.
    pub(crate) fin_sent: bool,
    /// The FIN reached the peer (or found nobody there).
    pub(crate) fin_delivered: bool,
    /// A window update for `tx_blocked` is on its way.
    pub(crate) window_pending: bool,
    /// Stream segments arrive in order: none before this time.
    pub(crate) arrive_after: u64,
    /// The connection's one-way latency (ns).
    pub(crate) latency: u64,
    /// A send found the buffer full: the next time it drains enough, `EPOLLOUT` is raised.
    pub(crate) nospace: bool,
    /// A short write declared the buffer full although it was not (a fault): not writable
    /// until the `Space` event.
    pub(crate) squeezed: bool,
    pub(crate) opts: Opts,
}

impl Sock {
    pub(crate) fn new(domain: Domain, ty: SockType) -> Sock {
        let (sndbuf, rcvbuf) = match (domain, ty) {
            (Domain::Unix, _) | (_, SockType::Datagram) => (DEFAULT_BUF, DEFAULT_BUF),
            _ => (TCP_SNDBUF, TCP_RCVBUF),
        };
        Sock {
            domain,
            ty,
            local: None,
            peer: None,
            state: SockState::Fresh,
            err: 0,
            rd_shut: false,
            wr_shut: false,
            rx_fin: false,
            peer_id: None,
            rx: VecDeque::new(),
            dgrams: VecDeque::new(),
            dgram_bytes: 0,
            waiting_senders: Vec::new(),
            rcvbuf,
            sndbuf,
            tx_queued: 0,
            tx_blocked: VecDeque::new(),
            fin_blocked: false,
            fin_sent: false,
            fin_delivered: false,
            window_pending: false,
            arrive_after: 0,
            latency: 0,
            nospace: false,
            squeezed: false,
            opts: Opts::default(),
        }
    }

    /// TCP (an Internet stream socket).
    pub(crate) fn is_tcp(&self) -> bool {
        self.ty == SockType::Stream && self.domain != Domain::Unix
    }

    pub(crate) fn is_stream(&self) -> bool {
        self.ty == SockType::Stream
    }

    /// Free room in the send buffer.
    pub(crate) fn send_room(&self) -> usize {
        if self.squeezed {
            0
        } else {
            self.sndbuf.saturating_sub(self.tx_queued)
        }
    }

    /// Whether `poll` says writable: TCP once a third of the buffer is free
    /// (`sk_stream_is_writeable`), a Unix stream while at most a quarter is used
    /// (`unix_writable`), a datagram socket always.
    pub(crate) fn writable(&self) -> bool {
        if self.squeezed {
            return false;
        }
        match (self.ty, self.domain) {
            (SockType::Datagram, _) => true,
            (_, Domain::Unix) => self.tx_queued * 4 <= self.sndbuf,
            _ => 3 * self.send_room() >= self.sndbuf,
        }
    }

    /// Takes the pending error.
    pub(crate) fn take_err(&mut self) -> Option<io::Error> {
        let e = std::mem::take(&mut self.err);
        (e != 0).then(|| errno(e))
    }

    /// The readiness `poll` reports (`tcp_poll`, `unix_poll`, `datagram_poll`).
    pub(crate) fn poll(&self) -> u32 {
        let mut m = 0;
        if self.err != 0 {
            m |= EPOLLERR;
        }
        match &self.state {
            SockState::Listening { queue, .. } => {
                if !queue.is_empty() {
                    m |= EPOLLIN;
                }
                return m;
            }
            SockState::Connecting => return m,
            _ => {}
        }
        let closed = matches!(self.state, SockState::Closed | SockState::Fresh) && self.is_stream();
        if (self.rd_shut && self.wr_shut) || closed {
            m |= EPOLLHUP;
        }
        if self.rd_shut {
            m |= EPOLLIN | EPOLLRDHUP;
        }
        if !self.rx.is_empty() || !self.dgrams.is_empty() {
            m |= EPOLLIN;
        }
        if self.wr_shut || self.writable() {
            m |= EPOLLOUT;
        }
        m
    }
}

/// The unbound address of a family: `0.0.0.0:0`, `[::]:0`, or unnamed.
fn unbound(domain: Domain) -> SockAddr {
    match domain {
        Domain::Inet => SockAddr::Inet(SocketAddr::new(IpAddr::V4(Ipv4Addr::UNSPECIFIED), 0)),
        Domain::Inet6 => SockAddr::Inet(SocketAddr::new(IpAddr::V6(Ipv6Addr::UNSPECIFIED), 0)),
        Domain::Unix => SockAddr::Unix(UnixAddr::Unnamed),
    }
}

pub(crate) fn sock_of(st: &State, id: FileId) -> io::Result<&Sock> {
    st.sock(id).ok_or_else(|| errno(libc::ENOTSOCK))
}

pub(crate) fn sock_mut_of(st: &mut State, id: FileId) -> io::Result<&mut Sock> {
    st.sock_mut(id).ok_or_else(|| errno(libc::ENOTSOCK))
}

/// `socket(domain, type)`.
pub(crate) fn socket(st: &mut State, domain: Domain, ty: SockType) -> io::Result<(FileId, i32)> {
    st.install(Kind::Socket(Box::new(Sock::new(domain, ty))))
}

/// `socketpair(AF_UNIX, type)`: two connected unnamed sockets.
pub(crate) fn socketpair(st: &mut State, domain: Domain, ty: SockType) -> io::Result<((FileId, i32), (FileId, i32))> {
    if domain != Domain::Unix {
        return Err(errno(libc::EOPNOTSUPP));
    }
    let a = socket(st, domain, ty)?;
    let b = socket(st, domain, ty)?;
    for (me, other) in [(a.0, b.0), (b.0, a.0)] {
        if let Some(s) = st.sock_mut(me) {
            s.state = SockState::Connected;
            s.peer_id = Some(other);
            s.peer = Some(SockAddr::Unix(UnixAddr::Unnamed));
        }
    }
    Ok((a, b))
}

/// `getsockname`.
pub(crate) fn local_addr(st: &State, id: FileId) -> io::Result<SockAddr> {
    let s = sock_of(st, id)?;
    Ok(s.local.clone().unwrap_or_else(|| unbound(s.domain)))
}

/// `getpeername`: only a connected socket has a peer.
pub(crate) fn peer_addr(st: &State, id: FileId) -> io::Result<SockAddr> {
    let s = sock_of(st, id)?;
    match (&s.state, &s.peer) {
        (SockState::Connected, Some(p)) => Ok(p.clone()),
        _ => Err(errno(libc::ENOTCONN)),
    }
}

/// `bind`.
pub(crate) fn bind(st: &mut State, id: FileId, addr: &SockAddr) -> io::Result<()> {
    let s = sock_of(st, id)?;
    if s.local.is_some() {
        return Err(errno(libc::EINVAL));
    }
    let domain = s.domain;
    match addr {
        SockAddr::Inet(a) => {
            let family_ok = matches!(
                (domain, a),
                (Domain::Inet, SocketAddr::V4(_)) | (Domain::Inet6, SocketAddr::V6(_))
            );
            if !family_ok {
                return Err(errno(if domain == Domain::Unix {
                    libc::EINVAL
                } else {
                    libc::EAFNOSUPPORT
                }));
            }
            let bound = net::bind_inet(st, id, *a)?;
            sock_mut_of(st, id)?.local = Some(SockAddr::Inet(bound));
        }
        SockAddr::Unix(u) => {
            if domain != Domain::Unix {
                return Err(errno(libc::EINVAL));
            }
            let bound = net::bind_unix(st, id, u)?;
            sock_mut_of(st, id)?.local = Some(SockAddr::Unix(bound));
        }
    }
    Ok(())
}

/// Binds an unbound socket where the kernel would on its own (`listen`, `connect`, a first
/// `sendto`): an ephemeral port, or an autobind Unix name.
pub(crate) fn autobind(st: &mut State, id: FileId, towards: Option<IpAddr>) -> io::Result<()> {
    let s = sock_of(st, id)?;
    if s.local.is_some() {
        return Ok(());
    }
    let bound = match s.domain {
        Domain::Unix => {
            let name = net::bind_unix(st, id, &UnixAddr::Unnamed)?;
            SockAddr::Unix(name)
        }
        d => SockAddr::Inet(net::autobind_inet(st, id, d, towards)?),
    };
    sock_mut_of(st, id)?.local = Some(bound);
    Ok(())
}

/// `listen`.
pub(crate) fn listen(st: &mut State, id: FileId, backlog: i32) -> io::Result<()> {
    let s = sock_of(st, id)?;
    if !s.is_stream() {
        return Err(errno(libc::EOPNOTSUPP));
    }
    match s.state {
        SockState::Fresh | SockState::Listening { .. } => {}
        _ => return Err(errno(libc::EINVAL)),
    }
    autobind(st, id, None)?;
    let backlog = usize::try_from(backlog).unwrap_or(4096).min(4096);
    let s = sock_mut_of(st, id)?;
    match &mut s.state {
        SockState::Listening { backlog: b, .. } => *b = backlog,
        state => {
            *state = SockState::Listening {
                backlog,
                queue: VecDeque::new(),
                half_open: 0,
            }
        }
    }
    Ok(())
}

/// `shutdown`.
pub(crate) fn shutdown(st: &mut State, id: FileId, how: Shutdown) -> io::Result<()> {
    let s = sock_of(st, id)?;
    if !matches!(s.state, SockState::Connected) {
        return Err(errno(libc::ENOTCONN));
    }
    let (rd, wr) = match how {
        Shutdown::Read => (true, false),
        Shutdown::Write => (false, true),
        Shutdown::Both => (true, true),
    };
    if s.is_stream() {
        stream::shutdown(st, id, rd, wr);
    } else if let Some(s) = st.sock_mut(id) {
        s.rd_shut |= rd;
        s.wr_shut |= wr;
        st.wake(id, 0);
    }
    Ok(())
}

/// How a receive call reads.
#[derive(Clone, Copy, Default)]
pub(crate) struct RecvFlags {
    /// `MSG_PEEK`: leave the data queued.
    pub(crate) peek: bool,
    /// `MSG_TRUNC` (datagrams): return the datagram's real length.
    pub(crate) trunc: bool,
}

/// `recv`/`recvfrom`/`read` on a socket: the count and the sender (unnamed on a stream).
pub(crate) fn recv(st: &mut State, id: FileId, buf: &mut [u8], flags: RecvFlags) -> io::Result<(usize, SockAddr)> {
    let s = sock_of(st, id)?;
    if s.is_stream() {
        if matches!(s.state, SockState::Listening { .. }) {
            return Err(errno(libc::ENOTCONN));
        }
        let n = stream::recv(st, id, buf, flags.peek)?;
        Ok((n, SockAddr::Unix(UnixAddr::Unnamed)))
    } else {
        dgram::recv(st, id, buf, flags)
    }
}

/// `send`/`sendto`/`sendmsg`/`write` on a socket.
pub(crate) fn send(st: &mut State, id: FileId, data: &[u8], to: Option<&SockAddr>) -> io::Result<usize> {
    let s = sock_of(st, id)?;
    if s.is_stream() {
        if to.is_some() && !matches!(s.state, SockState::Connected) {
            // sendto with an address on an unconnected stream socket.
            return Err(errno(if s.is_tcp() { libc::EPIPE } else { libc::EOPNOTSUPP }));
        }
        stream::send(st, id, data)
    } else {
        dgram::send(st, id, data, to)
    }
}

/// The socket options the wrappers set.
#[derive(Clone, Copy, Debug)]
pub(crate) enum SetOpt {
    ReuseAddr(bool),
    ReusePort(bool),
    NoDelay(bool),
    KeepAlive(bool),
    V6Only(bool),
    Broadcast(bool),
    Linger(Option<u32>),
    Ttl(u32),
    RecvBuf(usize),
    SendBuf(usize),
}

/// `setsockopt`.
pub(crate) fn set_option(st: &mut State, id: FileId, opt: SetOpt) -> io::Result<()> {
    let s = sock_mut_of(st, id)?;
    match opt {
        SetOpt::ReuseAddr(on) => s.opts.reuseaddr = on,
        SetOpt::ReusePort(on) => s.opts.reuseport = on,
        SetOpt::NoDelay(on) => {
            if !s.is_tcp() {
                return Err(errno(libc::EOPNOTSUPP));
            }
            s.opts.nodelay = on;
        }
        SetOpt::KeepAlive(on) => s.opts.keepalive = on,
        SetOpt::V6Only(on) => {
            if s.domain != Domain::Inet6 {
                return Err(errno(libc::ENOPROTOOPT));
            }
            if s.local.is_some() {
                return Err(errno(libc::EINVAL));
            }
            s.opts.v6only = on;
        }
        SetOpt::Broadcast(on) => s.opts.broadcast = on,
        SetOpt::Linger(secs) => s.opts.linger = secs,
        SetOpt::Ttl(ttl) => {
            ip_level(s)?;
            // Linux takes 1..=255, and -1 for the default.
            match ttl {
                1..=255 => s.opts.ttl = Some(ttl),
                u32::MAX => s.opts.ttl = None,
                _ => return Err(errno(libc::EINVAL)),
            }
        }
        SetOpt::RecvBuf(n) => s.rcvbuf = (n.min(BUF_MAX) * 2).max(2304),
        SetOpt::SendBuf(n) => s.sndbuf = (n.min(BUF_MAX) * 2).max(4608),
    }
    Ok(())
}

/// The socket options the wrappers read.
#[derive(Clone, Copy, Debug)]
pub(crate) enum GetOpt {
    Error,
    NoDelay,
    RecvBuf,
    SendBuf,
    Type,
    Ttl,
    /// `SO_LINGER`'s timeout in seconds, -1 when off.
    Linger,
}

/// `getsockopt` (`SO_ERROR` takes the pending error).
pub(crate) fn get_option(st: &mut State, id: FileId, opt: GetOpt) -> io::Result<i32> {
    let s = sock_mut_of(st, id)?;
    Ok(match opt {
        GetOpt::Error => std::mem::take(&mut s.err),
        GetOpt::NoDelay => {
            if !s.is_tcp() {
                return Err(errno(libc::EOPNOTSUPP));
            }
            i32::from(s.opts.nodelay)
        }
        GetOpt::RecvBuf => i32::try_from(s.rcvbuf).unwrap_or(i32::MAX),
        GetOpt::SendBuf => i32::try_from(s.sndbuf).unwrap_or(i32::MAX),
        GetOpt::Ttl => {
            ip_level(s)?;
            s.opts.ttl.map_or(64, |t| t as i32)
        }
        GetOpt::Linger => s.opts.linger.map_or(-1, |t| i32::try_from(t).unwrap_or(i32::MAX)),
        GetOpt::Type => match s.ty {
            SockType::Stream => libc::SOCK_STREAM,
            SockType::Datagram => libc::SOCK_DGRAM,
        },
    })
}

/// An `IPPROTO_IP` option (`IP_TTL`): Linux takes it on IPv4 and IPv6 sockets and answers
/// `EOPNOTSUPP` on a Unix one.
fn ip_level(s: &Sock) -> io::Result<()> {
    match s.domain {
        Domain::Unix => Err(errno(libc::EOPNOTSUPP)),
        _ => Ok(()),
    }
}

/// Whether `id` is a live socket (open or waiting to be accepted).
pub(crate) fn alive(st: &State, id: FileId) -> bool {
    st.file(id)
        .is_some_and(|f| f.life != Life::Closed && f.sock().is_some())
}
