//! Streams: asyncio's high-level `StreamReader` / `StreamWriter` API, built on a [`Transport`]
//! and a protocol exactly as asyncio builds it (`asyncio.streams`): [`open_connection`],
//! [`start_server`] and their Unix-socket twins give a ([`StreamReader`], [`StreamWriter`])
//! pair per connection.
//!
//! ```no_run
//! # async fn demo() -> std::io::Result<()> {
//! let (reader, writer) = evloop::streams::open_connection("127.0.0.1", 8888).await?;
//! writer.write(b"hello\n");
//! writer.drain().await?;
//! let line = reader.readline().await?;
//! writer.close();
//! writer.wait_closed().await?;
//! # let _ = line; Ok(()) }
//! ```
//!
//! # How received bytes reach a waiting task (reading)
//! Each connection has a private protocol (asyncio's `StreamReaderProtocol`) installed in its
//! transport. When the transport's event handler `recv`s bytes it calls the protocol's
//! `data_received`, which appends them to the reader's buffer (asyncio's
//! `StreamReader.feed_data`) and wakes the one task waiting for data, if any (`_wakeup_waiter`).
//! A read method first tries to answer from the buffer; only when it cannot does it park its
//! task's waker in the reader and return `Pending` (`_wait_for_data`). The next `feed_data`,
//! the end of the stream (`eof_received` -> `feed_eof`) or the loss of the connection
//! (`connection_lost` -> `set_exception`) takes that waker and wakes it, and the read looks at
//! the buffer again. The path from the kernel to the task is: `epoll_pwait2` reports the socket
//! readable, phase 5 runs the transport's handler, `recv(2)` copies the bytes into the
//! transport's 64 KiB scratch buffer, `data_received` copies them into the reader's buffer and
//! queues the task, and the task's next step returns them.
//!
//! Only one read may wait at a time (asyncio raises `RuntimeError` for a second one; here it is
//! [`StreamError::ReadInProgress`]).
//!
//! **Bounded memory** (asyncio's `limit`): when the buffer holds more than twice the limit
//! (the builders' `limit`, [`DEFAULT_LIMIT`] by default), the protocol calls
//! [`Transport::pause_reading`]: the kernel's receive queue fills, TCP's window closes and the
//! peer's sends block. Once reads have drained the buffer to the limit or below,
//! `resume_reading` restarts it (`_maybe_resume_transport`). The buffer therefore never holds
//! more than twice the limit plus one `recv` (64 KiB), unless a read asks for more: a read that
//! must wait for data resumes the transport first, as asyncio's `_wait_for_data` does, so
//! [`StreamReader::readexactly`]`(n)` can buffer `n` bytes. [`StreamReader::readuntil`] and
//! [`StreamReader::readline`] fail with [`StreamError::LimitOverrun`] instead of buffering past
//! the limit.
//!
//! # Back-pressure on writes (`drain`)
//! [`StreamWriter::write`] is synchronous: the transport sends at once what the kernel takes and
//! queues the rest. When its queue grows above the high-water mark (64 KiB by default, see
//! [`StreamWriter::set_write_buffer_limits`]) the transport calls the protocol's
//! `pause_writing`; when it has flushed down to the low-water mark, `resume_writing` (asyncio's
//! `FlowControlMixin`). [`StreamWriter::drain`] returns at once unless writing is paused; then
//! it parks the task until `resume_writing` (or `connection_lost`) wakes it (`_drain_helper`).
//! A producer that calls `drain` after each `write` therefore never queues much more than the
//! high-water mark. On a closing transport `drain` never succeeds: it waits for
//! `connection_lost` and reports the lost connection (bpo-25441), so such a producer stops. [`AsyncWrite`] for [`StreamWriter`] applies the same rule before each write.
//!
//! # Where evloop differs from asyncio (deliberately)
//! - **Lifetimes instead of `close()` to avoid leaks**: the connection is closed
//!   ([`Transport::close`], after flushing) when both its reader and its writer are dropped.
//!   When only the reader is dropped, later incoming bytes are discarded instead of buffered;
//!   when only the writer is dropped, the write side is half-closed ([`Transport::write_eof`],
//!   after flushing) as tokio's owned write half does on drop.
//!   A server's handler that returns (or panics) therefore closes its connection.
//! - **An error never destroys data**: asyncio raises a connection error even when bytes are
//!   still buffered, and `readline` throws away the buffered data on a limit overrun (so the tail
//!   of an over-long line can look like a line). Here, buffered bytes are returned before a
//!   connection error, an error leaves the buffer as it was (except the incomplete-read error at
//!   the end of the stream, which carries the bytes), and `readline`'s overrun leaves the data in
//!   the buffer like `readuntil`'s does.
//! - Misuse is an error value, never a panic.
//!
//! # The `stream/` folder
//! `config` (the options the builders carry, [`DEFAULT_LIMIT`]) and `error` ([`StreamError`]);
//! `conn`, the state a connection's protocol, reader and writer share; `reader`
//! ([`StreamReader`]) and `writer` ([`StreamWriter`]); `open`, the four functions that open
//! connections and start servers and the builders they return. This file only declares the modules and re-exports.
//!
//! [`Transport`]: crate::io::protocol::Transport
//! [`Transport::pause_reading`]: crate::io::protocol::Transport::pause_reading
//! [`Transport::close`]: crate::io::protocol::Transport::close
//! [`AsyncWrite`]: crate::io::AsyncWrite

mod config;
mod conn;
mod error;
mod open;
mod reader;
mod writer;

pub use self::config::DEFAULT_LIMIT;
pub use self::error::StreamError;
pub(crate) use self::open::boxed_server_protocols;
pub use self::open::{
    OpenConnection, OpenUnixConnection, StartServer, StartUnixServer, open_connection, open_unix_connection,
    start_server, start_unix_server,
};
pub use self::reader::StreamReader;
pub use self::writer::StreamWriter;
