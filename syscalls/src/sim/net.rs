//! The simulated machine's network namespace: who is bound where, the host table, and the
//! dispatch of network events, readiness and closing to the stream and datagram models.
//!
//! One machine, one namespace: every simulated socket of a kernel lives in it, whatever thread
//! made it. Local addresses are loopback (127.0.0.0/8, ::1), the wildcards, and those the
//! [`Config`] adds; a connection to a local address with nothing listening is refused (RST),
//! one to any other address times out after the SYN retries (127 s of simulated time).
//! Ephemeral ports are handed out in sequence from 32768, so they are the same in every run.
//!
//! Unix names: an abstract name lives in the namespace and disappears with its socket. A
//! pathname is also a real file: `bind` creates an empty file there (failing with `EADDRINUSE`
//! if anything exists, as Linux does), the name stays after the socket closes (a stale socket
//! file refuses connections), and the program removes it with `std::fs::remove_file` exactly
//! as it would a real one. `connect` checks that the file is still the one `bind` made.

use std::collections::{BTreeMap, HashMap};
use std::io;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::os::unix::fs::MetadataExt;
use std::path::PathBuf;

use crate::sim::clock::Ev;
use crate::sim::config::Config;
use crate::sim::socket::{Sock, SockState};
use crate::sim::state::{FileId, Life, State, errno};
use crate::sim::{dgram, handshake, stream};
use crate::{Domain, SockType, UnixAddr};

/// The first ephemeral port (`net.ipv4.ip_local_port_range`).
const EPHEMERAL_FIRST: u16 = 32_768;
const EPHEMERAL_LAST: u16 = 60_999;

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum UnixName {
    Abstract(Vec<u8>),
    Path(PathBuf),
}

/// The namespace's tables.
pub(crate) struct Net {
    tcp: BTreeMap<u16, Vec<FileId>>,
    udp: BTreeMap<u16, Vec<FileId>>,
    unix: HashMap<UnixName, (FileId, u64)>,
    next_port: u16,
    next_autobind: u32,
    hosts: Vec<(String, IpAddr)>,
    local: Vec<IpAddr>,
}

impl Net {
    pub(crate) fn new(cfg: &Config) -> Net {
        Net {
            tcp: BTreeMap::new(),
            udp: BTreeMap::new(),
            unix: HashMap::new(),
            next_port: EPHEMERAL_FIRST,
            next_autobind: 0,
            hosts: cfg.hosts.clone(),
            local: cfg.local_addrs.clone(),
        }
    }

    /// Whether `ip` belongs to the simulated machine.
    pub(crate) fn is_local(&self, ip: IpAddr) -> bool {
        ip.is_loopback() || ip.is_unspecified() || self.local.contains(&ip) || v4_mapped_loopback(ip)
    }

    /// The host table's addresses for `name`.
    pub(crate) fn lookup_host(&self, name: &str) -> Vec<IpAddr> {
        self.hosts
            .iter()
            .filter(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, ip)| *ip)
            .collect()
    }

    /// The host table's name for `ip`.
    pub(crate) fn name_of(&self, ip: IpAddr) -> Option<String> {
        self.hosts.iter().find(|(_, a)| *a == ip).map(|(n, _)| n.clone())
    }

    fn table(&mut self, ty: SockType) -> &mut BTreeMap<u16, Vec<FileId>> {
        match ty {
            SockType::Stream => &mut self.tcp,
            SockType::Datagram => &mut self.udp,
        }
    }

    fn bound_on(&self, ty: SockType, port: u16) -> &[FileId] {
        let table = match ty {
            SockType::Stream => &self.tcp,
            SockType::Datagram => &self.udp,
        };
        table.get(&port).map_or(&[], Vec::as_slice)
    }
}

fn v4_mapped_loopback(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().is_some_and(|v4| v4.is_loopback()),
        IpAddr::V4(_) => false,
    }
}

fn bound_ip(s: &Sock) -> Option<SocketAddr> {
    s.local.as_ref().and_then(|a| a.as_inet())
}

/// Whether binding `ip` conflicts with a socket already bound to `other` on the same port.
fn conflicts(me: &Sock, ip: IpAddr, other: &Sock) -> bool {
    let Some(theirs) = bound_ip(other) else {
        return false;
    };
    let overlap = ip == theirs.ip()
        || ip.is_unspecified() && (ip.is_ipv4() == theirs.is_ipv4() || !me.opts.v6only)
        || theirs.ip().is_unspecified() && (ip.is_ipv4() == theirs.is_ipv4() || !other.opts.v6only);
    if !overlap {
        return false;
    }
    if me.opts.reuseport && other.opts.reuseport {
        return false;
    }
    if me.opts.reuseaddr && other.opts.reuseaddr {
        // TCP: only when neither listens; UDP: always.
        let listening = |s: &Sock| matches!(s.state, SockState::Listening { .. });
        return me.is_stream() && (listening(me) || listening(other));
    }
    true
}

/// Binds `id` to `addr` (port 0: the next free ephemeral port); returns the bound address.
pub(crate) fn bind_inet(st: &mut State, id: FileId, addr: SocketAddr) -> io::Result<SocketAddr> {
    if !st.net.is_local(addr.ip()) {
        return Err(errno(libc::EADDRNOTAVAIL));
    }
    let ty = st.sock(id).map_or(SockType::Stream, |s| s.ty);
    let port = if addr.port() == 0 {
        free_port(st, id, ty, addr.ip())?
    } else {
        let me = st.sock(id).ok_or_else(|| errno(libc::ENOTSOCK))?;
        let taken = st
            .net
            .bound_on(ty, addr.port())
            .iter()
            .filter_map(|o| st.sock(*o))
            .any(|o| conflicts(me, addr.ip(), o));
        if taken {
            return Err(errno(libc::EADDRINUSE));
        }
        addr.port()
    };
    st.net.table(ty).entry(port).or_default().push(id);
    Ok(SocketAddr::new(addr.ip(), port))
}

fn free_port(st: &mut State, id: FileId, ty: SockType, ip: IpAddr) -> io::Result<u16> {
    let span = u32::from(EPHEMERAL_LAST - EPHEMERAL_FIRST) + 1;
    for _ in 0..span {
        let port = st.net.next_port;
        st.net.next_port = if port >= EPHEMERAL_LAST {
            EPHEMERAL_FIRST
        } else {
            port + 1
        };
        let me = st.sock(id).ok_or_else(|| errno(libc::ENOTSOCK))?;
        let used = st
            .net
            .bound_on(ty, port)
            .iter()
            .filter_map(|o| st.sock(*o))
            .any(|o| conflicts(me, ip, o));
        if !used {
            return Ok(port);
        }
    }
    Err(errno(libc::EADDRINUSE))
}

/// Binds an unbound Internet socket for a connect or a send towards `towards`.
pub(crate) fn autobind_inet(
    st: &mut State,
    id: FileId,
    domain: Domain,
    towards: Option<IpAddr>,
) -> io::Result<SocketAddr> {
    let ip = match (domain, towards) {
        (Domain::Inet6, Some(ip @ IpAddr::V6(_))) if st.net.is_local(ip) && !ip.is_unspecified() => ip,
        (Domain::Inet6, _) => IpAddr::V6(Ipv6Addr::UNSPECIFIED),
        (_, Some(ip @ IpAddr::V4(_))) if st.net.is_local(ip) && !ip.is_unspecified() => ip,
        _ => IpAddr::V4(Ipv4Addr::UNSPECIFIED),
    };
    bind_inet(st, id, SocketAddr::new(ip, 0))
}

/// The address a connection from `id` towards `to` comes from (a wildcard local address
/// becomes a concrete one, as the routing table would make it).
pub(crate) fn source_addr(st: &State, id: FileId, to: SocketAddr) -> SocketAddr {
    let local = st.sock(id).and_then(bound_ip).unwrap_or(to);
    if !local.ip().is_unspecified() {
        return local;
    }
    let ip = if st.net.is_local(to.ip()) && !to.ip().is_unspecified() {
        to.ip()
    } else {
        match to {
            SocketAddr::V4(_) => st
                .net
                .local
                .iter()
                .copied()
                .find(IpAddr::is_ipv4)
                .unwrap_or(IpAddr::V4(Ipv4Addr::LOCALHOST)),
            SocketAddr::V6(_) => IpAddr::V6(Ipv6Addr::LOCALHOST),
        }
    };
    SocketAddr::new(ip, local.port())
}

/// Removes `id` from the port tables and the abstract namespace (pathnames stay, stale).
pub(crate) fn unbind(st: &mut State, id: FileId) {
    let Some(s) = st.sock(id) else {
        return;
    };
    let ty = s.ty;
    match s.local.clone() {
        Some(crate::SockAddr::Inet(a)) => {
            let table = st.net.table(ty);
            if let Some(ids) = table.get_mut(&a.port()) {
                ids.retain(|x| *x != id);
                if ids.is_empty() {
                    table.remove(&a.port());
                }
            }
        }
        Some(crate::SockAddr::Unix(UnixAddr::Abstract(name))) => {
            let key = UnixName::Abstract(name);
            if st.net.unix.get(&key).is_some_and(|(o, _)| *o == id) {
                st.net.unix.remove(&key);
            }
        }
        _ => {}
    }
}

/// Whether a socket bound to `bound` receives what is sent to `to`.
fn accepts(s: &Sock, bound: SocketAddr, to: SocketAddr) -> bool {
    if bound.port() != to.port() {
        return false;
    }
    let b = bound.ip();
    if b == to.ip() {
        return true;
    }
    if !b.is_unspecified() {
        return false;
    }
    match (b, to) {
        (IpAddr::V4(_), SocketAddr::V4(_)) | (IpAddr::V6(_), SocketAddr::V6(_)) => true,
        (IpAddr::V6(_), SocketAddr::V4(_)) => !s.opts.v6only,
        _ => false,
    }
}

/// The socket of type `ty` that receives what is sent to `to` (`listening`: only listeners):
/// an exact address first, then a wildcard; among several (SO_REUSEPORT), the seed picks.
pub(crate) fn find(st: &mut State, ty: SockType, to: SocketAddr, listening: bool) -> Option<FileId> {
    let ids = match ty {
        SockType::Stream => st.net.tcp.get(&to.port()),
        SockType::Datagram => st.net.udp.get(&to.port()),
    }?
    .clone();
    let candidates = |exact: bool| -> Vec<FileId> {
        ids.iter()
            .copied()
            .filter(|id| {
                st.file(*id).is_some_and(|f| f.life != Life::Closed)
                    && st.sock(*id).is_some_and(|s| {
                        (!listening || matches!(s.state, SockState::Listening { .. }))
                            && bound_ip(s).is_some_and(|b| (b.ip() == to.ip()) == exact && accepts(s, b, to))
                    })
            })
            .collect()
    };
    let mut found = candidates(true);
    if found.is_empty() {
        found = candidates(false);
    }
    match found.len() {
        0 => None,
        n => {
            let i = st.choice.below(crate::sim::choice::ChoiceKind::Order, n as u64) as usize;
            Some(found[i])
        }
    }
}

fn unix_key(addr: &UnixAddr) -> Option<UnixName> {
    match addr {
        UnixAddr::Abstract(n) => Some(UnixName::Abstract(n.clone())),
        UnixAddr::Pathname(p) => Some(UnixName::Path(p.clone())),
        UnixAddr::Unnamed => None,
    }
}

/// Binds a Unix socket (`Unnamed`: an autobind abstract name of five hex digits).
pub(crate) fn bind_unix(st: &mut State, id: FileId, addr: &UnixAddr) -> io::Result<UnixAddr> {
    let addr = match addr {
        UnixAddr::Unnamed => loop {
            let n = st.net.next_autobind;
            st.net.next_autobind = (n + 1) & 0xF_FFFF;
            let name = format!("{n:05x}").into_bytes();
            if !st.net.unix.contains_key(&UnixName::Abstract(name.clone())) {
                break UnixAddr::Abstract(name);
            }
        },
        other => other.clone(),
    };
    let key = unix_key(&addr).ok_or_else(|| errno(libc::EINVAL))?;
    let inode = match &key {
        UnixName::Abstract(_) => {
            if st
                .net
                .unix
                .get(&key)
                .is_some_and(|(o, _)| crate::sim::socket::alive(st, *o))
            {
                return Err(errno(libc::EADDRINUSE));
            }
            0
        }
        UnixName::Path(p) => {
            let file = std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(p)
                .map_err(|e| match e.kind() {
                    io::ErrorKind::AlreadyExists => errno(libc::EADDRINUSE),
                    _ => e,
                })?;
            file.metadata()?.ino()
        }
    };
    st.net.unix.insert(key, (id, inode));
    Ok(addr)
}

/// The live socket bound to a Unix name: `ENOENT` for a path that does not exist,
/// `ECONNREFUSED` for a name nobody (alive) holds.
pub(crate) fn resolve_unix(st: &State, addr: &UnixAddr) -> io::Result<FileId> {
    let key = unix_key(addr).ok_or_else(|| errno(libc::EINVAL))?;
    let entry = st.net.unix.get(&key).copied();
    if let UnixName::Path(p) = &key {
        let meta = std::fs::metadata(p)?;
        if entry.is_none_or(|(_, ino)| ino != meta.ino()) {
            return Err(errno(libc::ECONNREFUSED));
        }
    }
    match entry {
        Some((id, _)) if crate::sim::socket::alive(st, id) => Ok(id),
        _ => Err(errno(libc::ECONNREFUSED)),
    }
}

/// Readiness of a socket (see `Sock::poll`).
pub(crate) fn poll(_st: &State, s: &Sock) -> u32 {
    s.poll()
}

/// Fires one timeline event.
pub(crate) fn fire(st: &mut State, ev: Ev) {
    match ev {
        Ev::Segment { from, to, data, fin } => stream::arrive(st, from, to, data, fin),
        Ev::Rst { to } => stream::reset_arrives(st, to),
        Ev::Syn { from, to, tries } => handshake::syn_arrives(st, from, to, tries),
        Ev::SynAck { to, child, listener } => handshake::synack_arrives(st, to, child, listener),
        Ev::Ack { child, listener } => handshake::ack_arrives(st, child, listener),
        Ev::ConnectFail { to, errno } => handshake::connect_fails(st, to, errno),
        Ev::Window { from } => stream::window_opens(st, from),
        Ev::Space { sock } => stream::space_frees(st, sock),
        Ev::Dgram {
            from,
            from_addr,
            to,
            data,
        } => dgram::arrive(st, from, from_addr, to, data),
        Ev::Unreachable { to } => dgram::unreachable(st, to),
    }
}

/// The last descriptor of socket `id` was closed.
pub(crate) fn close_socket(st: &mut State, id: FileId) {
    let is_stream = st.sock(id).is_some_and(Sock::is_stream);
    unbind(st, id);
    if is_stream {
        stream::close(st, id);
    } else {
        dgram::close(st, id);
    }
}
