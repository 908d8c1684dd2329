//! Thread-per-core: N threads, each with its own event loop, behind shared listeners, stopped
//! as one (tokio's `runtime` module, with glommio's and monoio's model rather than tokio's
//! work stealing).
//!
//! ```
//! use evloop::io::{AsyncReadExt, AsyncWriteExt};
//! use evloop::runtime::{Builder, Policy, TcpListeners};
//!
//! let rt = Builder::new().loops(2).build()?;
//! let listeners = TcpListeners::bind(rt.handle(), "127.0.0.1:0".parse()?, Policy::LeastConnections)?;
//! let addr = listeners.local_addr();
//! rt.spawn_on_each(move |_ctx| {
//!     let listeners = listeners.clone();
//!     async move {
//!         // Each loop serves the connections the policy gives it, until the runtime stops.
//!         listeners
//!             .serve(|mut conn, _peer| async move {
//!                 let mut buf = [0; 5];
//!                 if conn.read_exact(&mut buf).await.is_ok() {
//!                     let _ = conn.write_all(&buf).await;
//!                 }
//!             })
//!             .await
//!     }
//! });
//! let mut client = std::net::TcpStream::connect(addr)?;
//! std::io::Write::write_all(&mut client, b"hello")?;
//! let mut echo = [0; 5];
//! std::io::Read::read_exact(&mut client, &mut echo)?;
//! assert_eq!(&echo, b"hello");
//! rt.shutdown()?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # Design
//! - **A loop per thread, its work built there.** Each thread owns its `EventLoop` (`Rc`,
//!   `RefCell`: nothing of it is `Send`). Work reaches a loop as a `Send` closure that *builds*
//!   the future on the loop's thread ([`Runtime::spawn_on_each`]'s factory, [`Handle::spawn_on`]),
//!   through the loop's [`RemoteHandle`](crate::event_loop::RemoteHandle) (its remote queue and
//!   eventfd); the future itself may hold `Rc`s and the loop's sockets. Between loops, values
//!   travel through [`evloop::sync::threadsafe`](crate::sync::threadsafe) channels.
//! - **One shutdown.** [`Runtime::shutdown`], [`Handle::shutdown`], SIGINT/SIGTERM
//!   ([`Builder::shutdown_on_signals`], through the signal layer) or a loop's failure sets one
//!   flag and sends every loop its stop: listeners stop accepting (and serve what their accept
//!   queue already holds), the loop lets its live connections finish within the grace period,
//!   then cancels what is left and closes; every thread is joined. A panic or an `Err` of a
//!   loop's work (or of its thread) is recorded and stops the others; [`Runtime::wait`] returns
//!   all of them ([`RuntimeError`]), never a hang: each wait is bounded by the grace period.
//! - **Listening on N loops**, the [`Policy`] a parameter of [`TcpListeners::bind`]:
//!   [`Policy::ReusePort`] (one `SO_REUSEPORT` listener per loop, the kernel's hash of the
//!   4-tuple picks one), [`Policy::ReusePortCpu`] (the same group, plus a classic-BPF program
//!   that picks the listener of the CPU that received the connection, for loops pinned one per
//!   CPU) and [`Policy::LeastConnections`] (one acceptor on loop 0 hands each accepted fd to the
//!   loop with the fewest live connections; the fd moves through a threadsafe channel and the
//!   target loop adopts it). The group's order for the BPF program: the sockets are bound and
//!   `listen`ed one after the other on one thread, in loop order, so socket `i` is index `i` of
//!   the kernel's group (`reuseport_add_sock` appends); none leaves the group before the
//!   runtime stops (the kernel would move the last socket into the hole). Unix sockets have no
//!   `SO_REUSEPORT` group in Linux: only the acceptor's hand-off applies to them
//!   ([`UnixListeners`]); the other two policies give an [`UnsupportedPolicy`] error.
//! - **asyncio's servers on N loops**: [`Handle::start_server`], [`Handle::create_server`],
//!   [`Handle::start_unix_server`] and [`Handle::create_unix_server`] bind under a policy as
//!   the listeners do (the same machinery) and serve on every loop: each connection's streams
//!   or protocol are made on the loop that serves it, from a `Send + Sync` handler or factory.
//!   The pool-wide [`Servers`] closes them all from any thread and waits for them; the
//!   runtime's stop stops them as it stops listeners.
//! - **Observability.** Each loop counts its accepted and live connections and measures its
//!   busy time ([`LoopStats`](crate::event_loop::LoopStats) on the loop,
//!   [`Handle::stats`] from any thread, with the pool's imbalance, busiest over idlest). Trace
//!   lines name their loop: `[loop 2 iter 7] ...`.
//!
//! # The `runtime/` folder (layer 5, above `os/` and `fiber/`)
//! `builder` ([`Builder`], the start), `pool` ([`Runtime`], [`Handle`], the shared state),
//! `worker` (a loop's thread, [`Context`], the stop sequence), `policy` ([`Policy`], the
//! bound sockets of one address under it, the accept loops and the acceptor's hand-off),
//! `listen` ([`TcpListeners`], [`UnixListeners`]), `server` ([`Servers`] and the `Handle`
//! methods that start them), `stats` ([`PoolStats`], [`LoopLoad`]), `error`
//! ([`RuntimeError`], [`LoopFailure`], [`Failure`], [`UnsupportedPolicy`]).

mod builder;
mod error;
mod listen;
mod policy;
mod pool;
mod server;
mod stats;
mod worker;

pub use self::builder::Builder;
pub use self::error::{Failure, LoopFailure, RuntimeError, UnsupportedPolicy};
pub use self::listen::{TcpListeners, UnixListeners};
pub use self::policy::Policy;
pub use self::pool::{Handle, Runtime};
pub use self::server::Servers;
pub use self::stats::{LoopLoad, PoolStats};
pub use self::worker::Context;
