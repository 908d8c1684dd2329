//! Socket addresses: the typed [`SockAddr`] (IPv4, IPv6 or Unix) and its
//! private conversion to and from the kernel's `struct sockaddr_*`.
//!
//! The socket wrappers hand the kernel a [`RawSockAddr`] (a union of
//! `sockaddr_storage`, `sockaddr_in`, `sockaddr_in6` and `sockaddr_un`, so it
//! is large and aligned enough for any of them) together with the exact
//! `socklen_t` of the address inside it. The length matters for Unix
//! sockets, where it is part of the address:
//!
//! * a *pathname* address is `sun_path` up to and including its NUL
//!   terminator: length `2 + path.len() + 1`;
//! * an *abstract* address is a NUL byte followed by the name, which is
//!   **not** NUL-terminated and may itself contain NUL bytes: length
//!   `2 + 1 + name.len()`; `"ab"` and `"ab\0"` are different names;
//! * an *unnamed* address is the family alone: length 2 (binding it makes
//!   the kernel pick a free abstract name, "autobind").
//!
//! Layout of the C structures is checked at compile time below.

use std::fmt;
use std::io;
use std::mem::{offset_of, size_of};
use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr, SocketAddrV4, SocketAddrV6};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use static_assertions::{assert_eq_align, assert_eq_size, const_assert_eq};

// ---------------------------------------------------------------------------
// Layout of the address structures shared with the kernel. These sizes are
// the same on x86_64 and aarch64 (and every Linux architecture): the kernel
// copies exactly `socklen_t` bytes of them in and out.
// ---------------------------------------------------------------------------
assert_eq_size!(libc::sa_family_t, u16);
assert_eq_size!(libc::sockaddr_in, [u8; 16]);
assert_eq_size!(libc::sockaddr_in6, [u8; 28]);
assert_eq_size!(libc::sockaddr_un, [u8; 110]);
assert_eq_size!(libc::sockaddr_storage, [u8; 128]);
assert_eq_size!(RawSockAddr, libc::sockaddr_storage);
assert_eq_align!(RawSockAddr, libc::sockaddr_storage);
const_assert_eq!(offset_of!(libc::sockaddr_in, sin_port), 2);
const_assert_eq!(offset_of!(libc::sockaddr_in, sin_addr), 4);
const_assert_eq!(offset_of!(libc::sockaddr_in6, sin6_addr), 8);
const_assert_eq!(offset_of!(libc::sockaddr_in6, sin6_scope_id), 24);
const_assert_eq!(SUN_PATH_OFFSET, 2);
const_assert_eq!(SUN_PATH_LEN, 108);

/// Offset of `sun_path` in `struct sockaddr_un` (after the 2-byte family).
const SUN_PATH_OFFSET: usize = offset_of!(libc::sockaddr_un, sun_path);
/// Size of `sun_path`: 108 bytes on Linux.
const SUN_PATH_LEN: usize = size_of::<libc::sockaddr_un>() - SUN_PATH_OFFSET;

const AF_INET: libc::sa_family_t = libc::AF_INET as libc::sa_family_t;
const AF_INET6: libc::sa_family_t = libc::AF_INET6 as libc::sa_family_t;
const AF_UNIX: libc::sa_family_t = libc::AF_UNIX as libc::sa_family_t;

// ---------------------------------------------------------------------------
// Domain
// ---------------------------------------------------------------------------

/// A socket's address family (its *domain*, the first argument of
/// `socket(2)`).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum Domain {
    /// `AF_INET`: IPv4.
    Inet,
    /// `AF_INET6`: IPv6 (and, unless [`set_v6only`](crate::set_v6only),
    /// IPv4 through v4-mapped addresses `::ffff:a.b.c.d`).
    Inet6,
    /// `AF_UNIX` (also known as `AF_LOCAL`): local sockets named by a path,
    /// an abstract name, or nothing.
    Unix,
}

impl Domain {
    /// The `AF_*` constant.
    pub(crate) const fn family(self) -> libc::c_int {
        match self {
            Domain::Inet => libc::AF_INET,
            Domain::Inet6 => libc::AF_INET6,
            Domain::Unix => libc::AF_UNIX,
        }
    }
}

// ---------------------------------------------------------------------------
// UnixAddr
// ---------------------------------------------------------------------------

/// The address of a Unix socket.
///
/// Build the named kinds with [`UnixAddr::pathname`] and
/// [`UnixAddr::abstract_name`], which check the length limits; a value built
/// directly from the variants is checked when it is used (the wrapper then
/// fails with [`io::ErrorKind::InvalidInput`] before any system call).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum UnixAddr {
    /// A file-system path: the socket appears as a file there. `bind` fails
    /// with `EADDRINUSE` if the file exists (even a stale socket file: remove
    /// it first), and closing the socket does not remove the file.
    Pathname(PathBuf),
    /// A name in the abstract namespace (Linux only): no file, the name
    /// disappears with the last socket bound to it. The name is raw bytes,
    /// not NUL-terminated, and may contain NUL bytes. The namespace is per
    /// network namespace, not per file system.
    Abstract(Vec<u8>),
    /// No name: an unbound socket, one end of a `socketpair`, or a socket
    /// that connected or sent without binding. Binding it asks the kernel to
    /// pick a free abstract name ("autobind").
    Unnamed,
}

impl UnixAddr {
    /// The longest pathname accepted, in bytes (107): `sun_path` is 108
    /// bytes and this crate always NUL-terminates the path.
    pub const MAX_PATHNAME_LEN: usize = SUN_PATH_LEN - 1;
    /// The longest abstract name accepted, in bytes (107): `sun_path` minus
    /// the leading NUL byte that marks the abstract namespace.
    pub const MAX_ABSTRACT_LEN: usize = SUN_PATH_LEN - 1;

    /// A pathname address. Fails with [`io::ErrorKind::InvalidInput`] when
    /// the path is empty, contains a NUL byte, or is longer than
    /// [`UnixAddr::MAX_PATHNAME_LEN`] bytes (a relative path is taken
    /// relative to the working directory at the time of `bind`/`connect`; a
    /// long absolute path can often be shortened that way).
    pub fn pathname(path: impl AsRef<Path>) -> io::Result<UnixAddr> {
        let path = path.as_ref();
        check_pathname(path.as_os_str().as_bytes())?;
        Ok(UnixAddr::Pathname(path.to_path_buf()))
    }

    /// An abstract-namespace address with the name `name` (raw bytes, any
    /// value, without the leading NUL). Fails with
    /// [`io::ErrorKind::InvalidInput`] when `name` is longer than
    /// [`UnixAddr::MAX_ABSTRACT_LEN`] bytes. An empty name is valid.
    pub fn abstract_name(name: &[u8]) -> io::Result<UnixAddr> {
        check_abstract(name)?;
        Ok(UnixAddr::Abstract(name.to_vec()))
    }

    /// The path of a [`UnixAddr::Pathname`].
    pub fn as_pathname(&self) -> Option<&Path> {
        match self {
            UnixAddr::Pathname(p) => Some(p),
            _ => None,
        }
    }

    /// The name of a [`UnixAddr::Abstract`].
    pub fn as_abstract_name(&self) -> Option<&[u8]> {
        match self {
            UnixAddr::Abstract(n) => Some(n),
            _ => None,
        }
    }

    /// `true` for [`UnixAddr::Unnamed`].
    pub fn is_unnamed(&self) -> bool {
        matches!(self, UnixAddr::Unnamed)
    }
}

fn invalid_input(msg: &str) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidInput, msg)
}

fn check_pathname(bytes: &[u8]) -> io::Result<()> {
    if bytes.is_empty() {
        return Err(invalid_input("empty Unix socket path"));
    }
    if bytes.contains(&0) {
        return Err(invalid_input("Unix socket path contains a NUL byte"));
    }
    if bytes.len() > UnixAddr::MAX_PATHNAME_LEN {
        return Err(invalid_input(
            "Unix socket path longer than 107 bytes (does not fit sun_path)",
        ));
    }
    Ok(())
}

fn check_abstract(name: &[u8]) -> io::Result<()> {
    if name.len() > UnixAddr::MAX_ABSTRACT_LEN {
        return Err(invalid_input(
            "abstract Unix socket name longer than 107 bytes (does not fit sun_path)",
        ));
    }
    Ok(())
}

impl fmt::Display for UnixAddr {
    /// `/tmp/x.sock` for a path, `@name` for an abstract name (bytes outside
    /// printable ASCII escaped as `\xNN`, like `ss` and `lsof` show them
    /// with `@`), `(unnamed)` otherwise.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            UnixAddr::Pathname(p) => write!(f, "{}", p.display()),
            UnixAddr::Abstract(name) => write!(f, "@{}", name.escape_ascii()),
            UnixAddr::Unnamed => f.write_str("(unnamed)"),
        }
    }
}

// ---------------------------------------------------------------------------
// SockAddr
// ---------------------------------------------------------------------------

/// A socket address: IPv4, IPv6, or Unix (pathname, abstract, or unnamed).
///
/// IPv6 addresses keep their flow label and scope id. Their flow info is
/// converted from the kernel's network byte order to host order (as
/// Python's `socket` module does), so
/// [`SocketAddrV6::flowinfo`] is the numeric value.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum SockAddr {
    /// An IPv4 or IPv6 address and port.
    Inet(SocketAddr),
    /// A Unix socket address.
    Unix(UnixAddr),
}

impl SockAddr {
    /// The domain a socket needs to use this address.
    pub fn domain(&self) -> Domain {
        match self {
            SockAddr::Inet(SocketAddr::V4(_)) => Domain::Inet,
            SockAddr::Inet(SocketAddr::V6(_)) => Domain::Inet6,
            SockAddr::Unix(_) => Domain::Unix,
        }
    }

    /// The IP address and port, for [`SockAddr::Inet`].
    pub fn as_inet(&self) -> Option<SocketAddr> {
        match self {
            SockAddr::Inet(a) => Some(*a),
            SockAddr::Unix(_) => None,
        }
    }

    /// The Unix address, for [`SockAddr::Unix`].
    pub fn as_unix(&self) -> Option<&UnixAddr> {
        match self {
            SockAddr::Unix(a) => Some(a),
            SockAddr::Inet(_) => None,
        }
    }
}

impl From<SocketAddr> for SockAddr {
    fn from(a: SocketAddr) -> Self {
        SockAddr::Inet(a)
    }
}

impl From<SocketAddrV4> for SockAddr {
    fn from(a: SocketAddrV4) -> Self {
        SockAddr::Inet(SocketAddr::V4(a))
    }
}

impl From<SocketAddrV6> for SockAddr {
    fn from(a: SocketAddrV6) -> Self {
        SockAddr::Inet(SocketAddr::V6(a))
    }
}

impl From<UnixAddr> for SockAddr {
    fn from(a: UnixAddr) -> Self {
        SockAddr::Unix(a)
    }
}

impl fmt::Display for SockAddr {
    /// `127.0.0.1:80`, `[::1]:80` (`[fe80::1%2]:80` with a scope id),
    /// `/tmp/x.sock`, `@name` (abstract), `(unnamed)`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SockAddr::Inet(a) => write!(f, "{a}"),
            SockAddr::Unix(a) => write!(f, "{a}"),
        }
    }
}

// ---------------------------------------------------------------------------
// RawSockAddr: the C side
// ---------------------------------------------------------------------------

/// Storage for any socket address the kernel may read or write, with the
/// size (128) and alignment of `struct sockaddr_storage`.
///
/// Always created all-zero ([`RawSockAddr::zeroed`]), so every byte is
/// initialised and any field may be read: all four are plain integers and
/// integer arrays, for which every bit pattern is valid.
#[repr(C)]
#[derive(Clone, Copy)]
pub(crate) union RawSockAddr {
    storage: libc::sockaddr_storage,
    v4: libc::sockaddr_in,
    v6: libc::sockaddr_in6,
    un: libc::sockaddr_un,
}

impl RawSockAddr {
    /// The buffer size to offer the kernel (`sizeof(struct sockaddr_storage)`).
    pub(crate) const CAPACITY: libc::socklen_t = size_of::<RawSockAddr>() as libc::socklen_t;

    /// All bytes zero.
    pub(crate) fn zeroed() -> Self {
        // SAFETY: every field is a C struct made only of integers and integer
        // arrays, for which all-zero bytes is a valid value; zeroing the
        // union as a whole initialises all 128 of its bytes.
        unsafe { std::mem::zeroed() }
    }

    /// Pointer for calls that read an address (`bind`, `connect`, ...).
    pub(crate) fn as_ptr(&self) -> *const libc::sockaddr {
        (self as *const RawSockAddr).cast()
    }

    /// Pointer for calls that write an address (`accept4`, `getsockname`,
    /// ...); the kernel writes at most the offered length, at most
    /// [`RawSockAddr::CAPACITY`] bytes.
    pub(crate) fn as_mut_ptr(&mut self) -> *mut libc::sockaddr {
        (self as *mut RawSockAddr).cast()
    }

    fn family(&self) -> libc::sa_family_t {
        // SAFETY: all bytes are initialised (see the type's docs) and
        // `sa_family_t` is an integer, valid for any bit pattern.
        unsafe { self.storage.ss_family }
    }

    fn v4(&self) -> libc::sockaddr_in {
        // SAFETY: as for `family`: initialised bytes, integer-only struct.
        unsafe { self.v4 }
    }

    fn v6(&self) -> libc::sockaddr_in6 {
        // SAFETY: as for `family`: initialised bytes, integer-only struct.
        unsafe { self.v6 }
    }

    fn un(&self) -> libc::sockaddr_un {
        // SAFETY: as for `family`: initialised bytes, integer-only struct.
        unsafe { self.un }
    }

    /// `addr` in C form, with its exact length. A [`UnixAddr`] that breaks
    /// the length/NUL rules (possible when built from the variants directly)
    /// is [`io::ErrorKind::InvalidInput`].
    pub(crate) fn encode(addr: &SockAddr) -> io::Result<(RawSockAddr, libc::socklen_t)> {
        let mut raw = RawSockAddr::zeroed();
        let len = match addr {
            SockAddr::Inet(SocketAddr::V4(a)) => {
                raw.v4 = libc::sockaddr_in {
                    sin_family: AF_INET,
                    sin_port: a.port().to_be(),
                    // `s_addr` holds the address in network byte order, i.e.
                    // the octets in memory order.
                    sin_addr: libc::in_addr {
                        s_addr: u32::from_ne_bytes(a.ip().octets()),
                    },
                    sin_zero: [0; 8],
                };
                size_of::<libc::sockaddr_in>()
            }
            SockAddr::Inet(SocketAddr::V6(a)) => {
                raw.v6 = libc::sockaddr_in6 {
                    sin6_family: AF_INET6,
                    sin6_port: a.port().to_be(),
                    sin6_flowinfo: a.flowinfo().to_be(),
                    sin6_addr: libc::in6_addr {
                        s6_addr: a.ip().octets(),
                    },
                    sin6_scope_id: a.scope_id(),
                };
                size_of::<libc::sockaddr_in6>()
            }
            SockAddr::Unix(u) => {
                let mut sun_path = [0 as libc::c_char; SUN_PATH_LEN];
                let path_len = match u {
                    UnixAddr::Pathname(p) => {
                        let bytes = p.as_os_str().as_bytes();
                        check_pathname(bytes)?;
                        copy_to_c_chars(&mut sun_path, 0, bytes);
                        // The terminating NUL is already there (zeroed) and
                        // counts in the length, as the kernel reports it back.
                        bytes.len() + 1
                    }
                    UnixAddr::Abstract(name) => {
                        check_abstract(name)?;
                        // sun_path[0] stays 0: the abstract-namespace marker.
                        copy_to_c_chars(&mut sun_path, 1, name);
                        1 + name.len()
                    }
                    UnixAddr::Unnamed => 0,
                };
                raw.un = libc::sockaddr_un {
                    sun_family: AF_UNIX,
                    sun_path,
                };
                SUN_PATH_OFFSET + path_len
            }
        };
        // At most 110 (checked above): always fits.
        let len = libc::socklen_t::try_from(len).unwrap_or(RawSockAddr::CAPACITY);
        Ok((raw, len))
    }

    /// The address the kernel wrote, `len` being the length it reported.
    ///
    /// A length of 0 (the kernel wrote no address at all) is
    /// [`UnixAddr::Unnamed`]: Linux reports it for datagrams from an unnamed
    /// Unix socket, and for `recvfrom` on connection-mode sockets such as
    /// TCP, which never report the sender. An unknown family is
    /// [`io::ErrorKind::Unsupported`]; a length too short for the family is
    /// [`io::ErrorKind::InvalidData`].
    pub(crate) fn decode(&self, len: libc::socklen_t) -> io::Result<SockAddr> {
        // The kernel reports the full length even when it truncated the
        // address to the buffer; never look past the buffer.
        let len = usize::try_from(len).unwrap_or(usize::MAX).min(size_of::<RawSockAddr>());
        if len == 0 {
            return Ok(SockAddr::Unix(UnixAddr::Unnamed));
        }
        if len < size_of::<libc::sa_family_t>() {
            return Err(too_short(len));
        }
        match self.family() {
            AF_INET => {
                if len < size_of::<libc::sockaddr_in>() {
                    return Err(too_short(len));
                }
                let sin = self.v4();
                let ip = Ipv4Addr::from(sin.sin_addr.s_addr.to_ne_bytes());
                Ok(SockAddr::Inet(SocketAddr::V4(SocketAddrV4::new(
                    ip,
                    u16::from_be(sin.sin_port),
                ))))
            }
            AF_INET6 => {
                if len < size_of::<libc::sockaddr_in6>() {
                    return Err(too_short(len));
                }
                let sin6 = self.v6();
                Ok(SockAddr::Inet(SocketAddr::V6(SocketAddrV6::new(
                    Ipv6Addr::from(sin6.sin6_addr.s6_addr),
                    u16::from_be(sin6.sin6_port),
                    u32::from_be(sin6.sin6_flowinfo),
                    sin6.sin6_scope_id,
                ))))
            }
            AF_UNIX => {
                let path_len = (len - SUN_PATH_OFFSET).min(SUN_PATH_LEN);
                let sun = self.un();
                let path: Vec<u8> = sun.sun_path[..path_len]
                    .iter()
                    .map(|&c| u8::from_ne_bytes(c.to_ne_bytes()))
                    .collect();
                Ok(SockAddr::Unix(match path.split_first() {
                    None => UnixAddr::Unnamed,
                    Some((0, name)) => UnixAddr::Abstract(name.to_vec()),
                    Some(_) => {
                        // A pathname is NUL-terminated, except one that fills
                        // all 108 bytes (Linux accepts those from other
                        // programs); stop at the first NUL either way.
                        let end = path.iter().position(|&b| b == 0).unwrap_or(path.len());
                        let os = std::ffi::OsStr::from_bytes(&path[..end]);
                        UnixAddr::Pathname(PathBuf::from(os))
                    }
                }))
            }
            other => Err(io::Error::new(
                io::ErrorKind::Unsupported,
                format!("unsupported socket address family {other}"),
            )),
        }
    }
}

fn too_short(len: usize) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidData,
        format!("socket address of {len} bytes is too short for its family"),
    )
}

/// Copies `src` into `dst[at..]` as C chars. Callers checked that it fits;
/// anything beyond `dst` would be dropped rather than panic.
fn copy_to_c_chars(dst: &mut [libc::c_char], at: usize, src: &[u8]) {
    for (d, &b) in dst.iter_mut().skip(at).zip(src) {
        *d = libc::c_char::from_ne_bytes([b]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round_trip(a: &SockAddr) -> (SockAddr, libc::socklen_t) {
        let (raw, len) = RawSockAddr::encode(a).unwrap();
        (raw.decode(len).unwrap(), len)
    }

    #[test]
    fn inet_round_trips_with_exact_lengths() {
        let v4: SockAddr = "127.0.0.1:8080".parse::<SocketAddr>().unwrap().into();
        assert_eq!(round_trip(&v4), (v4.clone(), 16));
        let v6 = SockAddr::from(SocketAddrV6::new(Ipv6Addr::LOCALHOST, 443, 0x12345, 7));
        assert_eq!(round_trip(&v6), (v6.clone(), 28));
        // Network byte order in the C struct.
        let (raw, _) = RawSockAddr::encode(&v4).unwrap();
        assert_eq!(raw.v4().sin_port.to_ne_bytes(), 8080u16.to_be_bytes());
        assert_eq!(raw.v4().sin_addr.s_addr.to_ne_bytes(), [127, 0, 0, 1]);
        let (raw, _) = RawSockAddr::encode(&v6).unwrap();
        assert_eq!(raw.v6().sin6_flowinfo.to_ne_bytes(), 0x12345u32.to_be_bytes());
    }

    #[test]
    fn unix_lengths_follow_the_kernel_rules() {
        let p = SockAddr::Unix(UnixAddr::pathname("/tmp/x.sock").unwrap());
        assert_eq!(round_trip(&p), (p.clone(), 2 + 11 + 1));
        let a = SockAddr::Unix(UnixAddr::abstract_name(b"a\0b").unwrap());
        assert_eq!(
            round_trip(&a),
            (a.clone(), 2 + 1 + 3),
            "not NUL-terminated, NUL inside kept"
        );
        let e = SockAddr::Unix(UnixAddr::abstract_name(b"").unwrap());
        assert_eq!(round_trip(&e), (e.clone(), 3));
        let u = SockAddr::Unix(UnixAddr::Unnamed);
        assert_eq!(round_trip(&u), (u.clone(), 2));
        let max = SockAddr::Unix(UnixAddr::pathname("x".repeat(107)).unwrap());
        assert_eq!(round_trip(&max), (max.clone(), 110));
    }

    #[test]
    fn decode_handles_short_unknown_and_unterminated() {
        let raw = RawSockAddr::zeroed();
        assert_eq!(raw.decode(0).unwrap(), SockAddr::Unix(UnixAddr::Unnamed));
        assert_eq!(raw.decode(1).unwrap_err().kind(), io::ErrorKind::InvalidData);
        // Family 0 (AF_UNSPEC) is not supported.
        assert_eq!(raw.decode(16).unwrap_err().kind(), io::ErrorKind::Unsupported);
        let (raw, _) = RawSockAddr::encode(&"1.2.3.4:5".parse::<SocketAddr>().unwrap().into()).unwrap();
        assert_eq!(raw.decode(8).unwrap_err().kind(), io::ErrorKind::InvalidData);
        // A 108-byte path without NUL, and a length beyond the buffer.
        let mut raw = RawSockAddr::zeroed();
        raw.un = libc::sockaddr_un {
            sun_family: AF_UNIX,
            sun_path: [libc::c_char::from_ne_bytes([b'y']); SUN_PATH_LEN],
        };
        let long = "y".repeat(108);
        for len in [110, 128, 5000, libc::socklen_t::MAX] {
            assert_eq!(
                raw.decode(len).unwrap(),
                SockAddr::Unix(UnixAddr::Pathname(PathBuf::from(&long)))
            );
        }
    }

    #[test]
    fn invalid_unix_addrs_are_rejected_not_truncated() {
        for bad in [
            UnixAddr::Pathname(PathBuf::from("x".repeat(108))),
            UnixAddr::Pathname(PathBuf::from("a\0b")),
            UnixAddr::Pathname(PathBuf::new()),
            UnixAddr::Abstract(vec![1; 108]),
        ] {
            let e = RawSockAddr::encode(&SockAddr::Unix(bad.clone())).err();
            assert_eq!(e.map(|e| e.kind()), Some(io::ErrorKind::InvalidInput), "{bad:?}");
        }
    }

    #[test]
    fn display() {
        let cases: [(SockAddr, &str); 6] = [
            ("127.0.0.1:80".parse::<SocketAddr>().unwrap().into(), "127.0.0.1:80"),
            ("[::1]:80".parse::<SocketAddr>().unwrap().into(), "[::1]:80"),
            (UnixAddr::pathname("/tmp/x.sock").unwrap().into(), "/tmp/x.sock"),
            (UnixAddr::abstract_name(b"name").unwrap().into(), "@name"),
            (UnixAddr::abstract_name(b"a\0\xff").unwrap().into(), "@a\\x00\\xff"),
            (UnixAddr::Unnamed.into(), "(unnamed)"),
        ];
        for (a, s) in cases {
            assert_eq!(a.to_string(), s);
        }
    }
}
