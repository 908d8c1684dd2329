//! Protocols and transports: asyncio's callback API, the fastest path (no task per connection).
//!
//! `transport` holds the [`Protocol`] trait (the user's callbacks) and the stream
//! [`Transport`] that calls them (reading, write-behind, flow control, pipes as well as
//! sockets); `server` holds [`Server`], its accept loop and back-off, and the loop methods that
//! create servers and connections. A transport's close (`close`, `abort`, a fatal error) goes
//! through `io/lifecycle.rs`, which the datagram transport shares. This file only declares the
//! modules and re-exports.

mod server;
mod transport;

pub(crate) use self::server::start_accepted;
pub use self::server::{DEFAULT_ACCEPT_RETRY_DELAY, Server};
pub(crate) use self::transport::TransportKind;
pub use self::transport::{DEFAULT_HIGH_WATER, Protocol, Transport};
