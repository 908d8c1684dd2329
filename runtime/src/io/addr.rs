//! Addresses the way people write them: [`ToSocketAddrs`], the argument of
//! [`TcpListener::bind`](crate::net::TcpListener::bind),
//! [`TcpStream::connect`](crate::net::TcpStream::connect),
//! [`UdpSocket::bind`](crate::net::UdpSocket::bind) and the other socket calls that take an
//! internet address.
//!
//! Each accepted form turns into a [`Target`] without blocking: a `SocketAddr` (or an IP and a
//! port) is used as it is; a string is first parsed as a numeric address (`"127.0.0.1:8080"`,
//! `"[::1]:80"`), so numeric addresses never touch the resolver; anything else (a host name,
//! `("localhost", 8080)`, `"example.org:443"`) is looked up with `getaddrinfo(3)` on the loop's
//! executor threads ([`LoopHandle::getaddrinfo`](crate::event_loop::LoopHandle::getaddrinfo)), because
//! that call blocks and the loop must not. The trait is sealed, like std's and tokio's: the set
//! of forms is evloop's to extend.

use std::fmt;
use std::io;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, SocketAddrV4, SocketAddrV6};

use crate::event_loop::error::{LoopError, LoopErrorKind};
use crate::event_loop::get_running_loop;
use crate::io::error::with_context;
use sealed::Target;

/// Something that names one or more internet socket addresses: a [`SocketAddr`], an
/// `(IpAddr, u16)` pair, a string such as `"127.0.0.1:8080"` or `"localhost:8080"`, a
/// `(&str, u16)` pair such as `("localhost", 8080)`, or a slice of `SocketAddr`s.
///
/// Names are resolved off the loop (on the executor); numeric addresses are parsed without the
/// resolver. Where a call gets several addresses it tries them in order and returns the last
/// error if none works (tokio and `std::net` do the same).
///
/// ```
/// use evloop::net::{TcpListener, TcpStream};
///
/// evloop::run(async {
///     let listener = TcpListener::bind("127.0.0.1:0").await?;
///     let port = listener.local_addr()?.port();
///     let client = TcpStream::connect(("localhost", port)).await?; // resolved off the loop
///     let (_server_side, peer) = listener.accept().await?;
///     assert_eq!(peer, client.local_addr()?);
///     Ok::<(), std::io::Error>(())
/// })??;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub trait ToSocketAddrs: sealed::Sealed {}

pub(crate) mod sealed {
    use std::io;
    use std::net::SocketAddr;

    /// What an address argument turned into, before any lookup.
    #[doc(hidden)]
    pub enum Target {
        /// Ready to use.
        Addrs(Vec<SocketAddr>),
        /// A host name to look up, with the port.
        Lookup(String, u16),
        /// Not an address (a string without a port, a bad port): the error to return.
        Invalid(io::Error),
    }

    /// The hidden half of [`ToSocketAddrs`](super::ToSocketAddrs): turning the value into a
    /// [`Target`] and naming it in error messages.
    pub trait Sealed {
        #[doc(hidden)]
        fn to_target(&self) -> Target;
        #[doc(hidden)]
        fn describe(&self) -> String;
    }
}

impl Target {
    fn one(addr: SocketAddr) -> Target {
        Target::Addrs(vec![addr])
    }
}

/// A host and a port: a numeric host is an address, anything else is a name to look up.
fn host_port(host: &str, port: u16) -> Target {
    let bare = host.strip_prefix('[').and_then(|h| h.strip_suffix(']')).unwrap_or(host);
    match bare.parse::<IpAddr>() {
        Ok(ip) => Target::one(SocketAddr::new(ip, port)),
        Err(_) if bare.is_empty() => Target::Invalid(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("invalid socket address {host:?}:{port}: empty host"),
        )),
        Err(_) => Target::Lookup(bare.to_string(), port),
    }
}

fn parse_str(s: &str) -> Target {
    if let Ok(addr) = s.parse::<SocketAddr>() {
        return Target::one(addr);
    }
    let Some((host, port)) = s.rsplit_once(':') else {
        return Target::Invalid(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("invalid socket address {s:?}: expected host:port"),
        ));
    };
    match port.parse::<u16>() {
        // An unbracketed IPv6 literal with a port ("::1:80") is ambiguous: refuse it rather
        // than hand a mangled name to the resolver.
        Ok(_) if host.contains(':') && !host.starts_with('[') => Target::Invalid(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("invalid socket address {s:?}: write an IPv6 address in brackets, [::1]:80"),
        )),
        Ok(port) => host_port(host, port),
        Err(_) => Target::Invalid(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("invalid socket address {s:?}: bad port {port:?}"),
        )),
    }
}

macro_rules! direct {
    ($($ty:ty => |$v:ident| $e:expr;)*) => {$(
        impl ToSocketAddrs for $ty {}
        impl sealed::Sealed for $ty {
            fn to_target(&self) -> Target {
                let $v = self;
                Target::one($e)
            }
            fn describe(&self) -> String {
                let $v = self;
                ($e).to_string()
            }
        }
    )*};
}

direct! {
    SocketAddr => |a| *a;
    SocketAddrV4 => |a| SocketAddr::V4(*a);
    SocketAddrV6 => |a| SocketAddr::V6(*a);
    (IpAddr, u16) => |a| SocketAddr::new(a.0, a.1);
    (Ipv4Addr, u16) => |a| SocketAddr::new(IpAddr::V4(a.0), a.1);
    (Ipv6Addr, u16) => |a| SocketAddr::new(IpAddr::V6(a.0), a.1);
}

impl ToSocketAddrs for str {}
impl sealed::Sealed for str {
    fn to_target(&self) -> Target {
        parse_str(self)
    }
    fn describe(&self) -> String {
        self.to_string()
    }
}

impl ToSocketAddrs for String {}
impl sealed::Sealed for String {
    fn to_target(&self) -> Target {
        parse_str(self)
    }
    fn describe(&self) -> String {
        self.clone()
    }
}

impl ToSocketAddrs for (&str, u16) {}
impl sealed::Sealed for (&str, u16) {
    fn to_target(&self) -> Target {
        host_port(self.0, self.1)
    }
    fn describe(&self) -> String {
        describe_host_port(self.0, self.1)
    }
}

impl ToSocketAddrs for (String, u16) {}
impl sealed::Sealed for (String, u16) {
    fn to_target(&self) -> Target {
        host_port(&self.0, self.1)
    }
    fn describe(&self) -> String {
        describe_host_port(&self.0, self.1)
    }
}

fn describe_host_port(host: &str, port: u16) -> String {
    if host.contains(':') && !host.starts_with('[') {
        format!("[{host}]:{port}")
    } else {
        format!("{host}:{port}")
    }
}

impl ToSocketAddrs for [SocketAddr] {}
impl sealed::Sealed for [SocketAddr] {
    fn to_target(&self) -> Target {
        Target::Addrs(self.to_vec())
    }
    fn describe(&self) -> String {
        let all: Vec<String> = self.iter().map(|a| a.to_string()).collect();
        format!("[{}]", all.join(", "))
    }
}

impl<const N: usize> ToSocketAddrs for [SocketAddr; N] {}
impl<const N: usize> sealed::Sealed for [SocketAddr; N] {
    fn to_target(&self) -> Target {
        self[..].to_target()
    }
    fn describe(&self) -> String {
        self[..].describe()
    }
}

impl ToSocketAddrs for Vec<SocketAddr> {}
impl sealed::Sealed for Vec<SocketAddr> {
    fn to_target(&self) -> Target {
        self[..].to_target()
    }
    fn describe(&self) -> String {
        self[..].describe()
    }
}

impl<T: ToSocketAddrs + ?Sized> ToSocketAddrs for &T {}
impl<T: ToSocketAddrs + ?Sized> sealed::Sealed for &T {
    fn to_target(&self) -> Target {
        (**self).to_target()
    }
    fn describe(&self) -> String {
        (**self).describe()
    }
}

/// An address argument, converted and named, ready to be resolved.
pub(crate) struct Resolving {
    target: Target,
    name: String,
}

impl fmt::Display for Resolving {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.name)
    }
}

impl Resolving {
    /// Converts `addr` (synchronously: the returned value owns everything it needs).
    pub(crate) fn new<A: ToSocketAddrs + ?Sized>(addr: &A) -> Resolving {
        Resolving {
            target: addr.to_target(),
            name: addr.describe(),
        }
    }

    /// The addresses, looking names up on the running loop's executor. `op` names the call in
    /// errors (`"TcpStream::connect"`), with the address as it was written.
    pub(crate) async fn addrs(self, op: &str) -> io::Result<Vec<SocketAddr>> {
        let name = self.name;
        match self.target {
            Target::Addrs(a) if a.is_empty() => Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("{op}({name}): no address given"),
            )),
            Target::Addrs(a) => Ok(a),
            Target::Invalid(e) => Err(with_context(format!("{op}({name})"), e)),
            Target::Lookup(host, port) => {
                let lp = get_running_loop().map_err(|_| {
                    io::Error::from(LoopError::new(LoopErrorKind::NoRunningLoop, "resolving a host name"))
                })?;
                lp.getaddrinfo(&host, port)
                    .await
                    .map_err(|e| with_context(format!("{op}({name})"), e))
            }
        }
    }
}

/// Runs `attempt` on each address in turn until one succeeds; the last error (naming `op` and
/// the address as written) when none does.
pub(crate) async fn each_addr<T, F, Fut>(op: &str, resolving: Resolving, mut attempt: F) -> io::Result<T>
where
    F: FnMut(SocketAddr) -> Fut,
    Fut: std::future::Future<Output = io::Result<T>>,
{
    let name = resolving.name.clone();
    let addrs = resolving.addrs(op).await?;
    let several = addrs.len() > 1;
    let mut last = None;
    for addr in addrs {
        match attempt(addr).await {
            Ok(v) => return Ok(v),
            Err(e) => last = Some((addr, e)),
        }
    }
    match last {
        Some((_, e)) if several => Err(with_context(format!("{op}({name}): every address failed, the last"), e)),
        // The error already names the call and the address (`connect(127.0.0.1:80): ...`).
        Some((addr, e)) if addr.to_string() == name => Err(e),
        Some((_, e)) => Err(with_context(format!("{op}({name})"), e)),
        None => Err(io::Error::new(
            io::ErrorKind::NotFound,
            format!("{op}({name}): no address to try"),
        )),
    }
}
