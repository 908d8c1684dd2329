//! [`OpError`]: an OS error of an I/O operation together with the operation and the object it
//! concerns (`connect(127.0.0.1:9)`), and [`os_error`], which finds the errno again behind that
//! context.
//!
//! The sockets, pipes, streams, datagram endpoints and the layers above (processes, fiber
//! stacks) wrap the `io::Error` of a failed call with [`with_context`], keeping its
//! [`io::ErrorKind`]; the loop wraps the errors of its own fd calls in its `FdError`, and
//! [`os_error`] looks through both.

use std::fmt;
use std::io;

use crate::event_loop::error::FdError;

/// An OS error together with the operation and object it concerns, e.g.
/// `connect(127.0.0.1:9): Connection refused (os error 111)`.
///
/// evloop returns it inside an `io::Error` of the same [`io::ErrorKind`], so `?` and `kind()`
/// work as usual; [`os_error`] digs the errno back out.
///
/// ```
/// use std::net::SocketAddr;
/// use evloop::net::{Domain, SockAddr, SockType, Socket, TcpStream};
/// use evloop::io::OpError;
///
/// evloop::run(async {
///     // A port that is bound but not listening refuses connections.
///     let not_listening = Socket::new(Domain::Inet, SockType::Stream)?;
///     not_listening.bind(&SockAddr::Inet(SocketAddr::from(([127, 0, 0, 1], 0))))?;
///     let addr = not_listening.local_addr()?.as_inet().expect("an IP address");
///     let err = TcpStream::connect(addr).await.unwrap_err();
///     assert_eq!(err.kind(), std::io::ErrorKind::ConnectionRefused); // kind() as usual
///     let op = err.get_ref().and_then(|e| e.downcast_ref::<OpError>()).expect("with context");
///     assert_eq!(op.context(), format!("connect({addr})"));
///     assert_eq!(op.io_error().raw_os_error(), Some(111)); // ECONNREFUSED
///     Ok::<(), std::io::Error>(())
/// })??;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub struct OpError {
    context: String,
    source: io::Error,
}

impl OpError {
    /// The operation and object, e.g. `connect(127.0.0.1:9)`.
    ///
    /// ```
    /// use evloop::net::UdpSocket;
    /// use evloop::io::OpError;
    ///
    /// evloop::run(async {
    ///     let first = UdpSocket::bind("127.0.0.1:0").await?;
    ///     let taken = first.local_addr()?;
    ///     let err = UdpSocket::bind(taken).await.unwrap_err();
    ///     let op = err.get_ref().and_then(|e| e.downcast_ref::<OpError>()).expect("with context");
    ///     assert_eq!(op.context(), format!("bind({taken})")); // the call and its address
    ///     Ok::<(), std::io::Error>(())
    /// })??;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn context(&self) -> &str {
        &self.context
    }

    /// The underlying error.
    pub fn io_error(&self) -> &io::Error {
        &self.source
    }
}

impl fmt::Display for OpError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.context, self.source)
    }
}

impl std::error::Error for OpError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.source)
    }
}

/// Wraps `e` with `context` (the operation and what it was applied to), keeping its kind.
pub(crate) fn with_context(context: String, e: io::Error) -> io::Error {
    io::Error::new(e.kind(), OpError { context, source: e })
}

/// The errno behind `e`, looking through the context evloop adds ([`OpError`], and the loop's
/// own for its fd calls), which `raw_os_error()` alone cannot see.
///
/// ```
/// use evloop::net::UdpSocket;
///
/// evloop::run(async {
///     let first = UdpSocket::bind("127.0.0.1:0").await?;
///     let err = UdpSocket::bind(first.local_addr()?).await.unwrap_err(); // the port is taken
///     assert_eq!(evloop::io::os_error(&err), Some(98)); // EADDRINUSE, through the added context
///     Ok::<(), std::io::Error>(())
/// })??;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn os_error(e: &io::Error) -> Option<i32> {
    if let Some(code) = e.raw_os_error() {
        return Some(code);
    }
    let inner = e.get_ref()?;
    if let Some(op) = inner.downcast_ref::<OpError>() {
        return os_error(&op.source);
    }
    // The loop's own fd calls (`add_reader`, registrations) carry the loop layer's context.
    os_error(inner.downcast_ref::<FdError>()?.io_error())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn context_keeps_kind_and_errno_and_names_the_operation() {
        let e = with_context("connect(127.0.0.1:9)".into(), io::Error::from_raw_os_error(111));
        assert_eq!(e.kind(), io::ErrorKind::ConnectionRefused);
        assert_eq!(os_error(&e), Some(111));
        assert!(e.to_string().starts_with("connect(127.0.0.1:9): "), "{e}");
        let twice = with_context("open_connection(localhost)".into(), e);
        assert_eq!(os_error(&twice), Some(111));
        assert_eq!(os_error(&io::Error::other("no errno")), None);
        let by_the_loop = FdError::wrap("add_reader", 7, io::Error::from_raw_os_error(9));
        assert_eq!(os_error(&with_context("AsyncFd::new".into(), by_the_loop)), Some(9));
    }
}
