//! # evloop
//!
//! Python asyncio's event loop rebuilt from scratch in Rust on raw Linux syscalls: an epoll
//! reactor, a min-heap timer queue behind `call_at`/`call_later`, a `call_soon` ready queue,
//! promises (asyncio's `Future`) and tasks driven by wakers and done-callback chains. No
//! third-party async crates; the only dependencies are this workspace's own crates:
//! `evloop-syscalls` (the kernel boundary, where the unsafe code lives, apart from the raw task
//! cell and the fiber register switch), `evloop-timers` and `evloop-macros`.
//!
//! ```
//! use std::time::Duration;
//!
//! async fn f() -> u32 {
//!     evloop::time::sleep(Duration::from_millis(5)).await;
//!     10
//! }
//!
//! assert_eq!(evloop::run(f()).unwrap(), 10); // asyncio.run(f())
//! ```
//!
//! A program's `main` says the same with an attribute, and reads like tokio code, because
//! evloop offers tokio's names and paths where asyncio has none (`TcpListener`, `BufReader`, `select!`):
//!
//! ```no_run
//! use evloop::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
//! use evloop::net::TcpListener;
//!
//! #[evloop::main]
//! async fn main() -> std::io::Result<()> {
//!     let listener = TcpListener::bind("127.0.0.1:8080").await?;
//!     loop {
//!         let (mut socket, _) = listener.accept().await?;
//!         evloop::spawn(async move {
//!             let (rd, mut wr) = socket.split();
//!             let mut lines = BufReader::new(rd).lines();
//!             while let Ok(Some(line)) = lines.next_line().await {
//!                 if wr.write_all(format!("{}\n", line.to_uppercase()).as_bytes()).await.is_err() {
//!                     break;
//!                 }
//!             }
//!         });
//!     }
//! }
//! ```
//!
//! ## Map of the crate
//! One folder per layer; a file imports only from its own folder and the ones below it (a test
//! in `tests/tests/workspace_rules.rs` checks every `crate::` path), and this file only declares
//! the folders and re-exports the public names:
//!
//! | rank | folder | public modules it holds |
//! |---|---|---|
//! | 4 | `fiber/` | [`fiber`] (greenlet's switch on guarded stacks: blocking-style code on the loop; weak handles for fibers that refer back to a parent or sibling; its register switch is, with the raw task cell, the only unsafe code outside `evloop-syscalls`); a sibling of `os/` that does not import it |
//! | 4 | `os/` | [`signal`] (asyncio's `add_signal_handler`, awaitable signals), [`process`] (subprocesses through pidfds, or a waiter thread per child where `pidfd_open` is refused) |
//! | 3 | `io/` | [`io`] (the I/O traits, [`io::AsyncFd`], buffered readers and writers, copies), [`net`] (TCP/UDP/Unix sockets), [`streams`] (`open_connection`, `start_server`), [`protocol`] (transports and protocols, datagram endpoints), [`pipe`] |
//! | 3 | `sync/` | [`sync`] (Event, Lock, Mutex, Semaphore, Condition, Barrier, the queue and the channels), the macros [`select!`], [`join!`], [`try_join!`] |
//! | 2 | `task/` | [`task`] (tasks, promises, the combinators, [`task::TaskGroup`], [`task::Runner`]), [`time`] (sleep, timeout), [`spawn`], [`run`] |
//! | 1 | `event_loop/` | [`event_loop`] (the five phases, [`event_loop::EventLoop`], [`event_loop::LoopHandle`], its builder, handles, errors and executor) |
//! | 0 | crates | `evloop-syscalls` (every syscall, nearly all the unsafe code; [`sys`] re-exports what tests need), `evloop-timers` (the timer heap), `evloop-macros` ([`macro@main`], [`macro@test`]) |
//!
//! The loop knows tasks only through a small table of hooks (`TaskHooks`) that the task layer
//! registers, and the higher layers' per-loop state only as typed slots (`LoopKey`), so it
//! never depends on the code above it.
//!
//! ## Behaviour
//! asyncio's semantics (see `docs/` for the mechanisms with traces of real runs):
//! `call_soon` is FIFO and a callback scheduled by a running callback waits for the next
//! iteration; timers never fire early and equal deadlines run in scheduling order; a task's first
//! step is scheduled with `call_soon`; done callbacks are scheduled, never run inline; a panic in
//! a callback or task is caught and reported, and the loop keeps running. Where asyncio has a
//! known footgun evloop fixes it: the loop holds tasks strongly, timers are exact to the
//! nanosecond with `epoll_pwait2`, and a task that keeps waking itself runs once per iteration.

// `unsafe` is denied everywhere in this crate except the modules docs/design.md allows by name (the
// raw task cell, the fiber register switch), each opted back in with `#[allow(unsafe_code)]` on
// its `mod` line and listed in tests/tests/workspace_rules.rs; every block there says why it holds.
#![deny(unsafe_code)]
#![deny(unsafe_op_in_unsafe_fn)]
#![deny(clippy::undocumented_unsafe_blocks)]
#![deny(missing_docs)]

pub mod event_loop;
pub mod fiber;
pub mod io;
mod os;
pub mod sync;
pub mod task;

// Issue 20: the multi-loop runtime (layer 5, above os/ and fiber/).
pub mod runtime;

pub use os::{process, signal};
pub use task::spawn::{run, spawn};

/// `#[evloop::main]` and `#[evloop::test]`: an `async fn` run on a new loop (`asyncio.run`);
/// options `trace` and `virtual_clock`. See the crate documentation's first example.
pub use evloop_macros::{main, test};

/// The I/O traits, safe to glob-import: `use evloop::prelude::*;` brings the eight traits whose
/// methods a program calls (`read`, `write_all`, `read_line`, ...) and nothing else (no `test`
/// or `main` attribute that would make `#[test]` ambiguous).
///
/// ```
/// use evloop::prelude::*;
///
/// evloop::run(async {
///     let (mut a, mut b) = evloop::net::UnixStream::pair()?;
///     a.write_all(b"hi").await?;
///     let mut buf = [0; 2];
///     b.read_exact(&mut buf).await?;
///     assert_eq!(&buf, b"hi");
///     Ok::<(), std::io::Error>(())
/// })??;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub mod prelude {
    // Issue 21, round 2: with `AsyncSeek`/`AsyncSeekExt`, so `seek` and `rewind` are in scope too.
    pub use crate::io::{
        AsyncBufRead, AsyncBufReadExt, AsyncRead, AsyncReadExt, AsyncSeek, AsyncSeekExt, AsyncWrite, AsyncWriteExt,
    };
}

/// Time: [`sleep`](time::sleep), [`timeout`](time::timeout) and their deadline forms, and
/// asyncio's [`Timeout`](time::Timeout) object (tokio's `tokio::time`), with the loop's
/// [`Instant`](time::Instant) (a virtual clock governs it) and [`interval`](time::interval).
///
/// ```
/// use std::time::Duration;
/// use evloop::time::{sleep, timeout};
///
/// evloop::run(async {
///     assert!(timeout(Duration::from_millis(1), sleep(Duration::from_secs(60))).await.is_err());
/// })
/// .unwrap();
/// ```
pub mod time {
    pub use crate::task::time::{Elapsed, Sleep, sleep, sleep_until, timeout, timeout_at};
    pub use crate::task::timeouts::{Timeout, TimeoutHandle};
    // Issue 21: the loop's `Instant` and intervals (tokio's names).
    pub use crate::task::instant::Instant;
    pub use crate::task::interval::{Interval, MissedTickBehavior, interval, interval_at};
    // tokio's test-util clock control over the loop's virtual clock.
    pub use crate::task::pause::{advance, pause, resume};
    // tokio re-exports it here too (`tokio::time::Duration`).
    pub use std::time::Duration;
}

/// Asynchronous sequences: the [`Stream`](stream::Stream) trait (futures-core's shape, owned
/// here), its combinators in [`StreamExt`](stream::StreamExt), the keyed merge
/// [`StreamMap`](stream::StreamMap), the constructors `iter`, `once`, `empty`, `pending`, and
/// evloop's sources as streams in [`wrappers`](stream::wrappers) (tokio-stream's `tokio_stream`).
///
/// ```
/// use evloop::stream::{self, StreamExt};
///
/// evloop::run(async {
///     let mut s = stream::iter([1, 2, 3]);
///     assert_eq!(s.next().await, Some(1));
/// })?;
/// # Ok::<(), evloop::task::RunError>(())
/// ```
pub mod stream {
    pub use crate::task::stream::{
        Chain, Filter, FilterMap, Fuse, Map, MapWhile, Merge, Skip, SkipWhile, Take, TakeWhile, Then, Timeout,
    };
    pub use crate::task::stream::{
        Empty, Iter, Next, Once, Pending, Stream, StreamExt, StreamMap, empty, iter, once, pending,
    };
    // Issue 21, round 2.
    pub use crate::task::stream::{ChunksTimeout, Peekable, Throttle};

    /// evloop's sources as streams (tokio-stream's `wrappers`): receivers, intervals, lines and
    /// listeners.
    ///
    /// ```
    /// use evloop::stream::{StreamExt, wrappers::ReceiverStream};
    ///
    /// evloop::run(async {
    ///     let (tx, rx) = evloop::sync::mpsc::unbounded();
    ///     tx.try_send(1).unwrap();
    ///     drop(tx);
    ///     assert_eq!(ReceiverStream::new(rx).collect::<Vec<_>>().await, [1]);
    /// })?;
    /// # Ok::<(), evloop::task::RunError>(())
    /// ```
    pub mod wrappers {
        pub use crate::io::stream_wrappers::{LinesStream, SplitStream, TcpListenerStream, UnixListenerStream};
        pub use crate::sync::stream_wrappers::{
            BroadcastStream, BroadcastStreamRecvError, ReceiverStream, WatchStream,
        };
        pub use crate::task::stream::wrappers::IntervalStream;
    }
}

/// Sockets for tasks: TCP, UDP and Unix-domain sockets (tokio's `tokio::net`), each registered
/// with the loop's reactor once, edge-triggered; [`Socket`](net::Socket) is the generic socket
/// they wrap. The halves of a split stream are in [`tcp`](net::tcp) and [`unix`](net::unix).
///
/// ```
/// use evloop::io::{AsyncReadExt, AsyncWriteExt};
/// use evloop::net::{TcpListener, TcpStream};
///
/// evloop::run(async {
///     let listener = TcpListener::bind("127.0.0.1:0").await?;
///     let mut client = TcpStream::connect(listener.local_addr()?).await?;
///     let (mut server, _) = listener.accept().await?;
///     client.write_all(b"ping").await?;
///     let mut buf = [0; 4];
///     server.read_exact(&mut buf).await?;
///     assert_eq!(&buf, b"ping");
///     Ok::<(), std::io::Error>(())
/// })??;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub mod net {
    pub use crate::io::net::{
        Domain, Shutdown, SockAddr, SockType, Socket, TcpListener, TcpStream, ToSocketAddrs, UdpSocket, UnixAddr,
        UnixDatagram, UnixListener, UnixStream,
    };
    // Issue 21, round 2: tokio's `TcpSocket`.
    pub use crate::io::net::TcpSocket;

    /// The halves of a split [`TcpStream`] (tokio's `tokio::net::tcp`).
    pub mod tcp {
        pub use crate::io::split::tcp::ReuniteError;
        pub use crate::io::split::tcp::{OwnedReadHalf, OwnedWriteHalf, ReadHalf, WriteHalf};
    }

    /// The halves of a split [`UnixStream`] (tokio's `tokio::net::unix`).
    pub mod unix {
        pub use crate::io::split::unix::ReuniteError;
        pub use crate::io::split::unix::{OwnedReadHalf, OwnedWriteHalf, ReadHalf, WriteHalf};
    }
}

/// Pipes: [`pipe()`](pipe::pipe), the async pipe ends, and the pipe forms asyncio's pipe
/// transports take.
///
/// ```
/// use evloop::io::{AsyncReadExt, AsyncWriteExt};
///
/// evloop::run(async {
///     let (mut rd, mut wr) = evloop::pipe::pipe()?;
///     wr.write_all(b"through").await?;
///     drop(wr);
///     let mut got = Vec::new();
///     rd.read_to_end(&mut got).await?;
///     assert_eq!(got, b"through");
///     Ok::<(), std::io::Error>(())
/// })??;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub mod pipe {
    pub use crate::io::pipe::*;
}

/// Streams: asyncio's high-level `StreamReader` / `StreamWriter` API (`asyncio.streams`),
/// built on a transport and a protocol as asyncio builds it: [`open_connection`](streams::open_connection),
/// [`start_server`](streams::start_server) and their Unix-socket twins give a reader and a
/// writer per connection.
///
/// ```
/// use evloop::streams::{open_unix_connection, start_unix_server};
///
/// evloop::run(async {
///     let path = std::env::temp_dir().join(format!("evloop-streams-doc-{}", std::process::id()));
///     let _ = std::fs::remove_file(&path);
///     let addr = evloop::net::UnixAddr::pathname(&path)?;
///     let server = start_unix_server(
///         |reader, writer| async move {
///             let line = reader.readline().await.unwrap();
///             writer.write(&line);
///             writer.drain().await.unwrap();
///         },
///         &addr,
///     )
///     .await?;
///     let (reader, writer) = open_unix_connection(&addr).await?;
///     writer.write(b"hello\n");
///     assert_eq!(reader.readline().await.unwrap(), b"hello\n");
///     server.close();
///     let _ = std::fs::remove_file(&path);
///     Ok::<(), std::io::Error>(())
/// })??;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub mod streams {
    pub use crate::io::stream::*;
}

/// Transports and protocols: asyncio's callback API (`asyncio.transports`, `asyncio.protocols`),
/// the fastest path (no task per connection): a [`Protocol`](protocol::Protocol) is called by
/// its [`Transport`](protocol::Transport); a [`Server`](protocol::Server) accepts connections
/// for a protocol factory; the datagram forms are beside them.
///
/// ```
/// use evloop::protocol::{Protocol, Transport};
///
/// // An echo server's protocol: what arrives goes back.
/// struct Echo(Option<Transport>);
/// impl Protocol for Echo {
///     fn connection_made(&mut self, transport: Transport) {
///         self.0 = Some(transport);
///     }
///     fn data_received(&mut self, data: &[u8]) {
///         self.0.as_ref().unwrap().write(data);
///     }
/// }
/// # let _ = Echo(None);
/// ```
pub mod protocol {
    pub use crate::io::datagram::{
        CreateDatagramEndpoint, DEFAULT_DATAGRAM_QUEUE_LIMIT, DatagramDropped, DatagramProtocol, DatagramTransport,
    };
    pub use crate::io::protocol::{DEFAULT_ACCEPT_RETRY_DELAY, DEFAULT_HIGH_WATER, Protocol, Server, Transport};
}

/// What a program's tests may need from the syscall layer: the per-thread call
/// [`counters`](sys::counters), fault injection (feature `fault-injection`), the simulated
/// kernel (feature `simulation`) and the [`Syscall`](sys::Syscall) names they use.
///
/// ```
/// let before = evloop::sys::counters::snapshot();
/// evloop::run(async {}).unwrap();
/// assert!(evloop::sys::counters::snapshot().since(&before).total_calls() > 0);
/// ```
pub mod sys {
    #[cfg(feature = "fault-injection")]
    pub use evloop_syscalls::fault;
    #[cfg(feature = "simulation")]
    pub use evloop_syscalls::sim;
    pub use evloop_syscalls::{Syscall, counters};
}
