//! Readiness-based I/O for tasks: [`AsyncFd`] and the [`AsyncRead`] / [`AsyncWrite`] traits.
//!
//! # How an await on a socket reaches `epoll_pwait2` and back
//! An [`AsyncFd`] registers its fd with the loop's reactor once, edge-triggered
//! (`EPOLLIN|EPOLLOUT|EPOLLRDHUP|EPOLLET`), and keeps the registration until it is dropped: no
//! `epoll_ctl` in steady state. It starts "not ready". A read goes like this:
//! 1. [`AsyncFd::poll_io`] sees no readable bit, parks the task's waker in the registration
//!    and returns `Pending`; the task's step ends.
//! 2. Data arrives; phase 3 of the loop (`epoll_pwait2`) reports the edge, the reactor ORs
//!    `READABLE` into the registration and wakes the parked waker: the task is queued.
//! 3. The task's next step polls again: the bit is set, so it calls `read(2)`. Data comes back;
//!    if the call says `EAGAIN` instead, the bit is cleared and we go back to step 1.
//!
//! Readiness is cleared only when the kernel proves the fd is not ready: `EAGAIN`, or, for
//! stream sockets, a short read (the receive queue was drained; any later arrival raises a new
//! edge). A reader that stops early without either keeps the bit, so no edge is ever lost
//! (the failure mode of mio #45).
//!
//! The other way round, readiness observed before an operation started never completes it:
//! an unconnected stream socket reports itself writable and hung up as soon as it is
//! registered, so `connect` forgets every bit when the attempt starts and believes only the
//! edges that follow (checked with `SO_ERROR` and `getpeername`). And an `EAGAIN` clears every
//! bit of its direction, hang-up and error included, so a stale bit can never make a waiting
//! operation spin.
//!
//! Any number of tasks may wait on each side (two tasks accepting on one shared listener, two
//! receiving on one UDP socket): an event wakes every task waiting on its side, as tokio does,
//! and those that find nothing to do wait again.
//!
//! # The `io/` folder (layer 3)
//! `async_fd` holds [`AsyncFd`], `async_fd_wait` its tokio-shaped waits (`readable`,
//! `ready_mut`, `poll_read_ready`, `async_io`...) and `async_fd_guard` the readiness guards
//! they return ([`AsyncFdReadyGuard`], [`AsyncFdReadyMutGuard`]), and `traits` the I/O traits;
//! beside them are sockets and the
//! `sock_*` API (`net/`), the address forms they take (`addr`), the context of a failed call
//! (`error`: `OpError`, `os_error`), stream halves, borrowed and owned
//! (`split`), buffered readers and writers (`buf`), copies between streams (`copy`), tokio's
//! read shapes (`read_buf`: `ReadBuf`, `BufMut`), the integer reads and writes (`ints`), `take`
//! and `chain` (`adapters`), `std::io::Cursor`'s impls (`memory`), seeking (`seek`), in-memory
//! stream pairs (`duplex`), the halves of any stream (`generic_split`), `empty`, `sink` and
//! `repeat` (`util`), a reader and a writer as one stream (`join`), one-way in-memory pipes
//! (`simplex`), writes from a [`Buf`] (`write_buf`), the readiness set [`Ready`] and tokio's
//! spellings of [`Interest`] (`ready`), protocols
//! and transports (`protocol/`), streams on top of them (`stream/`), datagram endpoints
//! (`datagram`), the lifecycle the stream and datagram transports share (`lifecycle`) and async
//! pipes (`pipe`). `traits` also holds `forward_io!`, the macro that writes every impl which
//! only passes the I/O calls on. This file only declares the modules and re-exports.
//! The folder builds on `task/` and `event_loop/`, and does not use `sync/` (its sibling at the
//! same rank).
//!
//! As `evloop::io` this module is also the tokio-shaped namespace: `evloop::io::{AsyncReadExt,
//! AsyncWriteExt, AsyncBufReadExt, BufReader, BufWriter, copy, ReadBuf, AsyncSeek, duplex, split,
//! join, simplex, Interest, Ready, Error, ErrorKind, Result, SeekFrom}` are where `tokio::io` has
//! them.

mod adapters;
pub(crate) mod addr;
mod async_fd;
pub(crate) mod buf;
pub(crate) mod copy;
pub(crate) mod datagram;
pub(crate) mod duplex;
pub(crate) mod error;
mod generic_split;
pub(crate) mod ints;
mod lifecycle;
mod memory;
pub(crate) mod net;
pub(crate) mod pipe;
pub(crate) mod protocol;
mod read_buf;
mod seek;
pub(crate) mod split;
pub(crate) mod stream;
pub(crate) mod stream_wrappers;
mod traits;
mod util;
// Issue 21, round 2: tokio's join, simplex and write_buf.
mod join;
mod ready;
mod simplex;
pub(crate) mod write_buf;

pub use self::adapters::{Chain, Take};
pub(crate) use self::async_fd::fd_context;
pub use self::async_fd::{AsyncFd, Interest};
pub use self::buf::{
    AsyncBufRead, AsyncBufReadExt, BufReader, BufStream, BufWriter, DEFAULT_BUF_SIZE, FillBuf, Lines, Split,
};
pub use self::copy::{copy, copy_bidirectional, copy_buf};
pub use self::duplex::{DuplexStream, duplex};
pub use self::error::{OpError, os_error};
pub use self::generic_split::{ReadHalf, WriteHalf, split};
pub use self::read_buf::{BufMut, ReadBuf};
pub use self::seek::{AsyncSeek, AsyncSeekExt};
pub use self::traits::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
pub use self::util::{Empty, Repeat, Sink, empty, repeat, sink};

// std's names, at tokio's paths (`tokio::io::{Error, ErrorKind, Result, SeekFrom}` are these).
pub use std::io::{Error, ErrorKind, Result, SeekFrom};

pub use self::join::{Join, join};
pub use self::ready::Ready;
pub use self::simplex::{SimplexStream, simplex};
pub use self::write_buf::Buf;

// Issue 21, round 3: tokio's guard-based AsyncFd.
mod async_fd_guard;
mod async_fd_wait;
pub use self::async_fd::AsyncFdTryNewError;
pub use self::async_fd_guard::{AsyncFdReadyGuard, AsyncFdReadyMutGuard, TryIoError};
