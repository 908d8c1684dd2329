//! Name resolution through the C library: `getaddrinfo(3)` and
//! `getnameinfo(3)`.
//!
//! These are not system calls but glibc functions that consult
//! `/etc/nsswitch.conf`, `/etc/hosts`, DNS servers and NSS modules, and
//! **block** for as long as that takes (seconds, with an unreachable DNS
//! server). The runtime calls them on its executor threads, never on the
//! loop thread, exactly as asyncio runs `socket.getaddrinfo` in its default
//! executor. They are counted as one call each under
//! [`Syscall::Getaddrinfo`] / [`Syscall::Getnameinfo`], which
//! [`Syscall::is_library_call`] marks as "not one kernel entry".
//!
//! Their errors are `EAI_*` codes, not `errno` values: they become an
//! [`io::Error`] wrapping an [`AddrInfoError`] (the code, the C library's
//! `gai_strerror` message, and the name looked up), except `EAI_SYSTEM`,
//! which means "see `errno`" and becomes that `errno`.

use std::ffi::{CStr, CString};
use std::fmt;
use std::io;
use std::mem::size_of;
use std::net::SocketAddr;

use crate::Syscall;
use crate::call::enter;
use crate::sockaddr::{Domain, RawSockAddr, SockAddr};
use crate::socket::SockType;

/// glibc's `EAI_ADDRFAMILY` ("address family for hostname not supported"),
/// which the `libc` crate does not export for glibc.
const EAI_ADDRFAMILY: libc::c_int = -9;

/// What [`getaddrinfo`] should look for (the useful fields of C's `hints`).
///
/// The default (`AF_UNSPEC`, any socket type, no flags) asks for every
/// address of the host.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct AddrHints {
    /// Only addresses of this domain (`ai_family`); `None` is `AF_UNSPEC`.
    /// [`Domain::Unix`] is not resolvable (`EAI_FAMILY`).
    pub family: Option<Domain>,
    /// Only addresses usable with this socket type (`ai_socktype`); `None`
    /// is 0, any type.
    pub sock_type: Option<SockType>,
    /// `AI_PASSIVE`: addresses to bind a listener to. With an empty host
    /// this gives the wildcard addresses (`0.0.0.0`, `::`) instead of
    /// loopback.
    pub passive: bool,
    /// `AI_NUMERICHOST`: `host` must be a numeric address; no lookup (no
    /// file, no DNS) is made, so the call cannot block.
    pub numeric_host: bool,
    /// `AI_ADDRCONFIG`: return IPv4 addresses only if the host has a
    /// non-loopback IPv4 address configured, likewise for IPv6 (glibc
    /// ignores the flag when neither kind is configured).
    pub addrconfig: bool,
}

impl AddrHints {
    fn to_c(self) -> libc::addrinfo {
        let mut flags = libc::AI_NUMERICSERV;
        if self.passive {
            flags |= libc::AI_PASSIVE;
        }
        if self.numeric_host {
            flags |= libc::AI_NUMERICHOST;
        }
        if self.addrconfig {
            flags |= libc::AI_ADDRCONFIG;
        }
        libc::addrinfo {
            ai_flags: flags,
            ai_family: self.family.map_or(libc::AF_UNSPEC, Domain::family),
            ai_socktype: self.sock_type.map_or(0, SockType::raw),
            ai_protocol: 0,
            ai_addrlen: 0,
            ai_addr: std::ptr::null_mut(),
            ai_canonname: std::ptr::null_mut(),
            ai_next: std::ptr::null_mut(),
        }
    }
}

/// A failure reported by `getaddrinfo` or `getnameinfo` as an `EAI_*` code.
///
/// Carried inside the [`io::Error`] those wrappers return; get it back with
/// `e.get_ref().and_then(|e| e.downcast_ref::<AddrInfoError>())`, e.g. to
/// raise Python's `socket.gaierror(code, message)`. The error's kind is
/// [`io::ErrorKind::NotFound`] for "no such name" (`EAI_NONAME`,
/// `EAI_NODATA`, `EAI_ADDRFAMILY`), [`io::ErrorKind::InvalidInput`] for
/// rejected arguments (`EAI_FAMILY`, `EAI_SOCKTYPE`, `EAI_SERVICE`,
/// `EAI_BADFLAGS`), [`io::ErrorKind::OutOfMemory`] for `EAI_MEMORY`, and
/// [`io::ErrorKind::Other`] otherwise (`EAI_AGAIN`: temporary failure, e.g.
/// no DNS server reachable; `EAI_FAIL`; ...).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AddrInfoError {
    code: i32,
    message: String,
    name: String,
}

impl AddrInfoError {
    fn new(code: libc::c_int, name: String) -> Self {
        AddrInfoError {
            code,
            message: gai_message(code),
            name,
        }
    }

    /// The `EAI_*` code (negative on glibc, e.g. `EAI_NONAME` is -2).
    pub fn code(&self) -> i32 {
        self.code
    }

    /// The C library's description of the code (`gai_strerror`), e.g.
    /// "Name or service not known".
    pub fn message(&self) -> &str {
        &self.message
    }

    /// The host name (for `getaddrinfo`) or address (for `getnameinfo`)
    /// that was looked up.
    pub fn name(&self) -> &str {
        &self.name
    }

    fn kind(&self) -> io::ErrorKind {
        match self.code {
            libc::EAI_NONAME | libc::EAI_NODATA | EAI_ADDRFAMILY => io::ErrorKind::NotFound,
            libc::EAI_FAMILY | libc::EAI_SOCKTYPE | libc::EAI_SERVICE | libc::EAI_BADFLAGS => {
                io::ErrorKind::InvalidInput
            }
            libc::EAI_MEMORY => io::ErrorKind::OutOfMemory,
            _ => io::ErrorKind::Other,
        }
    }
}

impl fmt::Display for AddrInfoError {
    /// e.g. `"no-such-host.invalid": Name or service not known (EAI -2)`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?}: {} (EAI {})", self.name, self.message, self.code)
    }
}

impl std::error::Error for AddrInfoError {}

/// `gai_strerror(code)` as an owned string.
fn gai_message(code: libc::c_int) -> String {
    // SAFETY: gai_strerror takes an integer and returns a pointer to a
    // static, NUL-terminated string (glibc returns "Unknown error" for
    // unknown codes, never NULL; checked anyway below). Nothing is written.
    let p = unsafe { libc::gai_strerror(code) };
    if p.is_null() {
        return format!("unknown getaddrinfo error {code}");
    }
    // SAFETY: `p` is non-NULL and points to a NUL-terminated string in
    // static storage that is never freed or modified.
    unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()
}

/// The error for a non-zero `EAI_*` result. `errno` is the value read right
/// after the call, used for `EAI_SYSTEM`.
pub(crate) fn eai_error(code: libc::c_int, errno: io::Error, name: impl Into<String>) -> io::Error {
    if code == libc::EAI_SYSTEM && errno.raw_os_error().is_some_and(|e| e != 0) {
        return errno;
    }
    let e = AddrInfoError::new(code, name.into());
    io::Error::new(e.kind(), e)
}

/// Owns the list `getaddrinfo` returned and frees it on drop, whatever
/// happens while it is read.
struct AddrInfoList(*mut libc::addrinfo);

impl Drop for AddrInfoList {
    fn drop(&mut self) {
        if !self.0.is_null() {
            // SAFETY: `self.0` is the list head that a successful
            // getaddrinfo returned; it is freed exactly once, here, and no
            // pointer into it outlives `self`.
            unsafe { libc::freeaddrinfo(self.0) }
        }
    }
}

/// `getaddrinfo(host, port, &hints, &res)`: the socket addresses of `host`,
/// in the order the C library ranks them (RFC 6724: the address to try
/// first comes first), each with port `port`.
///
/// Man page: <https://man7.org/linux/man-pages/man3/getaddrinfo.3.html>
///
/// * **Blocks** (files, DNS, NSS modules): never call it on the loop thread.
/// * `port` is passed as a numeric service (`AI_NUMERICSERV`), so no
///   `/etc/services` lookup is made.
/// * An empty `host` is passed as NULL: the wildcard addresses with
///   [`AddrHints::passive`], the loopback addresses without.
/// * The C list has one entry per socket type and protocol; without
///   [`AddrHints::sock_type`] the same address appears up to three times
///   (stream, datagram, raw). Since only the addresses are returned,
///   duplicates are dropped, keeping the first occurrence's rank.
/// * An empty list is never returned: the C library reports that as an
///   error (`EAI_NONAME`/`EAI_NODATA`).
///
/// Errors: a `host` containing a NUL byte is
/// [`io::ErrorKind::InvalidInput`] before any call (not counted); an
/// `EAI_*` code becomes an error wrapping an [`AddrInfoError`] that names
/// `host` (kind [`io::ErrorKind::NotFound`] for an unknown name); `EAI_SYSTEM`
/// becomes the `errno` it stands for. The result list is always freed.
///
/// Counted as [`Syscall::Getaddrinfo`], once: a library call, whose own
/// system calls are not counted (see [`Syscall::is_library_call`]). An error
/// injected with `fault-injection` is returned as that `errno`, without
/// calling the C library.
#[doc(alias = "getaddrinfo(3)")]
#[doc(alias = "resolve")]
pub fn getaddrinfo(host: &str, port: u16, hints: AddrHints) -> io::Result<Vec<SocketAddr>> {
    let c_host =
        CString::new(host).map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "host name contains a NUL byte"))?;
    #[cfg(feature = "simulation")]
    crate::sim::hook!(crate::sim::ops::getaddrinfo(host, port, hints));
    let host_ptr = if host.is_empty() {
        std::ptr::null()
    } else {
        c_host.as_ptr()
    };
    // Decimal digits only: never contains NUL.
    let service = CString::new(port.to_string()).unwrap_or_default();
    let c_hints = hints.to_c();
    let mut res: *mut libc::addrinfo = std::ptr::null_mut();

    enter(Syscall::Getaddrinfo)?;
    // SAFETY: glibc reads the NUL-terminated strings at `host_ptr` (or
    // nothing, when NULL) and `service.as_ptr()`, both alive until the end
    // of this function, and one `struct addrinfo` from `&c_hints`, whose
    // pointer fields are NULL as the C API requires for hints. It writes
    // one pointer to `&mut res`, a live local.
    let code = unsafe { libc::getaddrinfo(host_ptr, service.as_ptr(), &c_hints, &mut res) };
    // Read errno before anything else can change it (EAI_SYSTEM needs it).
    let errno = io::Error::last_os_error();
    // From here on the list, if any, is freed on every path.
    let list = AddrInfoList(res);
    if code != 0 {
        return Err(eai_error(code, errno, host));
    }

    let mut out: Vec<SocketAddr> = Vec::new();
    let mut p = list.0;
    while !p.is_null() {
        // SAFETY: `p` is the head of, or a `ai_next` link inside, the list
        // that getaddrinfo returned and `list` still owns (it is freed only
        // when `list` drops, after this loop); glibc initialised every node.
        let ai = unsafe { &*p };
        if !ai.ai_addr.is_null() {
            let mut raw = RawSockAddr::zeroed();
            let n = usize::try_from(ai.ai_addrlen)
                .unwrap_or(0)
                .min(size_of::<RawSockAddr>());
            // SAFETY: glibc guarantees `ai_addr` points to `ai_addrlen`
            // readable bytes inside the list (alive, see above); we copy
            // `n` <= `ai_addrlen` of them into `raw`, which has room for
            // `n` <= 128 bytes. The regions cannot overlap (`raw` is a
            // fresh local).
            unsafe { std::ptr::copy_nonoverlapping(ai.ai_addr.cast::<u8>(), raw.as_mut_ptr().cast::<u8>(), n) };
            let len = libc::socklen_t::try_from(n).unwrap_or(0);
            // Families other than IPv4/IPv6 cannot occur here; skip them.
            if let Ok(SockAddr::Inet(mut a)) = raw.decode(len) {
                a.set_port(port);
                if !out.contains(&a) {
                    out.push(a);
                }
            }
        }
        p = ai.ai_next;
    }
    drop(list);
    if out.is_empty() {
        return Err(io::Error::new(
            io::ErrorKind::NotFound,
            AddrInfoError::new(libc::EAI_NONAME, host.to_string()),
        ));
    }
    Ok(out)
}

/// `NI_MAXHOST`, the longest host name `getnameinfo` writes, NUL included.
const NI_MAXHOST: usize = 1025;
/// `NI_MAXSERV`, the longest service name, NUL included.
const NI_MAXSERV: usize = 32;

/// `getnameinfo(addr, addrlen, host, NI_MAXHOST, serv, NI_MAXSERV, flags)`:
/// the host and service names of `addr`, as `(host, service)`.
///
/// Man page: <https://man7.org/linux/man-pages/man3/getnameinfo.3.html>
///
/// With `numeric`, `flags` is `NI_NUMERICHOST | NI_NUMERICSERV`: pure
/// formatting, no lookup, cannot block (`("127.0.0.1", "80")`). Without it,
/// `flags` is 0: a reverse lookup (`/etc/hosts`, then DNS PTR records, so it
/// **blocks**) and a service lookup in `/etc/services`, each falling back to
/// the numeric form when nothing is found (`("localhost", "http")`). An IPv6
/// scope id appears as `%scope` in the host.
///
/// Errors as for [`getaddrinfo`] (wrapping an [`AddrInfoError`] naming
/// `addr`). Counted as [`Syscall::Getnameinfo`], once (a library call).
#[doc(alias = "getnameinfo(3)")]
pub fn getnameinfo(addr: &SocketAddr, numeric: bool) -> io::Result<(String, String)> {
    #[cfg(feature = "simulation")]
    crate::sim::hook!(crate::sim::ops::getnameinfo(addr, numeric));
    let (raw, len) = RawSockAddr::encode(&SockAddr::Inet(*addr))?;
    let mut host = [0u8; NI_MAXHOST];
    let mut serv = [0u8; NI_MAXSERV];
    let flags = if numeric {
        libc::NI_NUMERICHOST | libc::NI_NUMERICSERV
    } else {
        0
    };
    // Both sizes are small constants.
    let host_len = libc::socklen_t::try_from(host.len()).unwrap_or(0);
    let serv_len = libc::socklen_t::try_from(serv.len()).unwrap_or(0);

    enter(Syscall::Getnameinfo)?;
    // SAFETY: glibc reads `len` (16 or 28) bytes of address from
    // `raw.as_ptr()`, a live 128-byte local, and writes NUL-terminated
    // strings of at most `host_len`/`serv_len` bytes (NUL included) into
    // the local arrays `host` and `serv`, exactly that large.
    let code = unsafe {
        libc::getnameinfo(
            raw.as_ptr(),
            len,
            host.as_mut_ptr().cast::<libc::c_char>(),
            host_len,
            serv.as_mut_ptr().cast::<libc::c_char>(),
            serv_len,
            flags,
        )
    };
    let errno = io::Error::last_os_error();
    if code != 0 {
        return Err(eai_error(code, errno, addr.to_string()));
    }
    Ok((c_buf_to_string(&host), c_buf_to_string(&serv)))
}

/// The NUL-terminated string at the start of `buf` (all of `buf` if it has
/// no NUL), lossily decoded as UTF-8.
fn c_buf_to_string(buf: &[u8]) -> String {
    let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
    String::from_utf8_lossy(&buf[..end]).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numeric_host_resolves_without_lookup() {
        let hints = AddrHints {
            numeric_host: true,
            ..AddrHints::default()
        };
        let v = getaddrinfo("127.0.0.1", 8080, hints).unwrap();
        assert_eq!(v, ["127.0.0.1:8080".parse::<SocketAddr>().unwrap()], "deduplicated");
        let e = getaddrinfo("not a number", 1, hints).unwrap_err();
        let gai = e.get_ref().and_then(|e| e.downcast_ref::<AddrInfoError>()).unwrap();
        assert_eq!(gai.code(), libc::EAI_NONAME);
        assert_eq!(gai.name(), "not a number");
        assert_eq!(e.kind(), io::ErrorKind::NotFound);
        assert!(e.to_string().contains("not a number"), "{e}");
    }

    #[test]
    fn eai_kinds() {
        for (code, kind) in [
            (libc::EAI_NONAME, io::ErrorKind::NotFound),
            (libc::EAI_NODATA, io::ErrorKind::NotFound),
            (EAI_ADDRFAMILY, io::ErrorKind::NotFound),
            (libc::EAI_FAMILY, io::ErrorKind::InvalidInput),
            (libc::EAI_MEMORY, io::ErrorKind::OutOfMemory),
            (libc::EAI_AGAIN, io::ErrorKind::Other),
        ] {
            let e = eai_error(code, io::Error::from_raw_os_error(0), "h");
            assert_eq!(e.kind(), kind, "{code}");
            assert!(!e.to_string().is_empty());
        }
        let e = eai_error(libc::EAI_SYSTEM, io::Error::from_raw_os_error(libc::EMFILE), "h");
        assert_eq!(e.raw_os_error(), Some(libc::EMFILE));
        // EAI_SYSTEM without an errno still gives a described error.
        let e = eai_error(libc::EAI_SYSTEM, io::Error::from_raw_os_error(0), "h");
        assert!(e.get_ref().is_some());
    }

    #[test]
    fn c_buf_to_string_stops_at_nul_or_end() {
        assert_eq!(c_buf_to_string(b"ab\0cd"), "ab");
        assert_eq!(c_buf_to_string(b"abc"), "abc");
        assert_eq!(c_buf_to_string(b""), "");
    }
}
