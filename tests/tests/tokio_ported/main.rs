//! tokio's own tests of the APIs issue 21's second round added (tokio/tests/io_*.rs,
//! macros_*.rs, tcp_*.rs, plus the sync and tokio-stream tests of the sync and stream methods
//! added beside them), ported by changing imports where they run unchanged. Each module names
//! the tokio file it comes from and says what changed beyond imports and why.
//!
//! # The count
//! This target runs 122 of tokio's tests (129 tests in all; the 7 others assert tokio's
//! documented behaviour where tokio has no test): 110 of the 118 tests of the 23 tokio files
//! it took on (the table's "tokio_ported" rows: 90 of the 96 tests of 22 tokio 1.38 files, and
//! 20 of the 22 of tokio's current io_async_fd.rs, ported in issue 21's third round), tokio
//! 1.4x's 2 `simplex` panic tests, 10 tokio-stream tests (`throttle`, `chunks_timeout`,
//! `peekable`). tokio's sync tests of the methods added beside them (`notify_last`, broadcast
//! `len`/`closed`) run with their whole files in tests/tests/tokio_sync_ported. The 8 of the
//! 118 that do not run: four `AsyncFd` panics on a runtime without an I/O driver,
//! `read_to_end_uninit` (counts `ReadBuf` initialisation), `read_to_end_grows_capacity_if_unfit`
//! (tokio's growth policy), and in io_async_fd.rs the two driver-shutdown races (they drop the
//! runtime on another thread; an evloop loop is not `Send`).

//! # tokio 1.38's io_*.rs, macros_*.rs and tcp_*.rs against evloop
//! "have" = every API the file uses exists under the ported name; "ported" = where its tests
//! run (io_ported/ and macros_ported.rs are the first round's; tokio_ported/ is this one).
//!
//! | tokio file | APIs it uses | evloop has them | ported |
//! |---|---|---|---|
//! | io_async_fd.rs | `AsyncFd` guards (`readable()` -> `AsyncFdReadyGuard`, `clear_ready`, `retain_ready`, `try_io` on the guard, `ready_mut`, `clear_ready_matching`), `poll_read_ready`, `with_interest`, `try_new`, `Interest::ERROR`/`PRIORITY`, nix | yes (third round; `Interest::PRIORITY` since the sync-tests round) | tokio_ported/io_async_fd.rs (20 of 22; nix's raw fds are std's `UnixStream`) |
//! | io_async_read.rs | `AsyncRead` is object safe | yes | tokio_ported/io_small.rs |
//! | io_buf_reader.rs | `BufReader`, `AsyncSeek` through it, `fill_buf`, `consume` | yes | tokio_ported/io_buf_reader.rs (the readers rewritten to evloop's `poll_read`) |
//! | io_buf_writer.rs | `BufWriter`, `AsyncSeekExt`, `write_vectored` | yes | tokio_ported/io_buf_writer.rs |
//! | io_chain.rs | `chain` | yes | io_ported/take_chain.rs |
//! | io_copy.rs | `copy`, a reader that implements tokio's `ReadBuf` `poll_read`, `BytesMut` | yes (`poll_read` over `&mut [u8]`) | tokio_ported/io_copy.rs (3 of 3; the reader rewritten to evloop's `poll_read`) |
//! | io_copy_bidirectional.rs | `copy_bidirectional`, `TcpStream`, tokio_test's mock | yes | tokio_ported/io_copy_bidirectional.rs (6 of 6) |
//! | io_driver.rs, io_driver_drop.rs | tokio's runtime builder and driver shutdown | tokio-internal | no |
//! | io_fill_buf.rs | `tokio::fs::File` | no `fs` module (asyncio has none; deliberate) | no |
//! | io_join.rs | `join`, `Join` | yes (this round) | tokio_ported/io_join.rs |
//! | io_lines.rs | `lines()` on `&[u8]` | yes | tokio_ported/io_read_helpers.rs |
//! | io_mem_stream.rs | `duplex` | yes | io_ported/duplex.rs |
//! | io_panic.rs | `#[track_caller]` panic locations of `ReadBuf`'s methods, `unsplit`, `simplex`, `AsyncFd` on a runtime without I/O | yes (`#[track_caller]` added this round) but the `AsyncFd` case (no such runtime) | tokio_ported/io_panic.rs (5 of 9, and tokio 1.4x's two `simplex` tests) |
//! | io_poll_aio.rs | FreeBSD AIO | not Linux | no |
//! | io_read.rs, io_read_buf.rs, io_read_exact.rs | `read`, `read_buf`, `read_exact`, `ReadBuf` | yes | io_ported/read_buf.rs, memory.rs |
//! | io_read_line.rs, io_read_until.rs, io_read_to_string.rs | `read_line`, `read_until`, `read_to_string`, tokio_test's mock `io::Builder` | yes (the mock is `mock.rs` here) | tokio_ported/io_read_helpers.rs (12 of 12) |
//! | io_read_to_end.rs | `read_to_end`, a reader over tokio's `ReadBuf`, the mock | yes | tokio_ported/io_read_to_end.rs (2 of 4: not the `ReadBuf` initialisation count, not tokio's exact growth policy) |
//! | io_repeat.rs, io_sink.rs, io_util_empty.rs | `repeat`, `sink`, `empty` | yes | io_ported/util.rs |
//! | io_split.rs | `split`, `unsplit`, `is_pair_of` | yes | io_ported/split.rs |
//! | io_take.rs | `take` | yes | io_ported/take_chain.rs |
//! | io_write.rs, io_write_all.rs | `write`, `write_all` | yes | io_ported/memory.rs |
//! | io_write_int.rs | `write_i8`, `write_i32` on a writer that accepts 0 bytes | yes | tokio_ported/io_small.rs |
//! | io_write_buf.rs, io_write_all_buf.rs | `write_buf`, `write_all_buf` over `bytes::Buf` | yes (this round; over evloop's `io::Buf`) | tokio_ported/io_write_buf.rs |
//! | macros_join.rs, macros_try_join.rs | `join!`, `try_join!`, `biased;` | yes | macros_ported.rs (the tests that do not poke at tokio's internals) |
//! | macros_pin.rs | `pin!` | yes | io_ported/pin.rs |
//! | macros_select.rs | `select!` with `biased;`, `else`, `Some(x) =` patterns, `, if cond` | yes | macros_ported.rs (the tests that do not poke at tokio's internals) |
//! | macros_test.rs, macros_rename_test.rs | `#[tokio::test(flavor, crate = ..)]` | `#[evloop::test]` has one flavor and no `crate =` option | no (the attribute's own tests are in tests/tests/macros) |
//! | tcp_accept.rs | `accept`, `TcpListener::poll_accept`, `mpsc::unbounded_channel` | yes (`poll_accept`, `unbounded_channel`: this round) | tokio_ported/tcp_accept.rs (all; `accept_many` since every waiter on a socket's side is woken) |
//! | tcp_connect.rs | `connect` with every address form | yes | tokio_ported/tcp_connect.rs |
//! | tcp_echo.rs, tcp_shutdown.rs | `copy`, `split`, `shutdown` | yes | tokio_ported/tcp_echo.rs |
//! | tcp_into_split.rs, tcp_split.rs, tcp_peek.rs | `into_split`, `split`, `peek` | yes | io_ported/tcp.rs |
//! | tcp_into_std.rs | `into_std`, `from_std` | yes (this round) | tokio_ported/tcp_into_std.rs |
//! | tcp_socket.rs | `TcpSocket`, `set_linger` | yes (this round) | tokio_ported/tcp_socket.rs (all) |
//! | tcp_stream.rs | `ready(Interest)` -> `Ready`, `poll_read_ready`, `try_read_vectored`, `try_read_buf`, `set_linger`/`linger` | yes (this round) | tokio_ported/tcp_stream.rs (all) |

// tokio's text is kept as tokio wrote it, older idioms included.
#![allow(clippy::io_other_error, clippy::byte_char_slices)]

// tokio_test's mock task (`task::spawn`) and `assert_*!` macros, shared with tokio_sync_ported.
#[macro_use]
extern crate evloop_tests;

use evloop_tests::mock_task as task;

mod halves;
mod io_async_fd;
mod io_buf_reader;
mod io_buf_writer;
mod io_copy;
mod io_copy_bidirectional;
mod io_join;
mod io_panic;
mod io_read_helpers;
mod io_read_to_end;
mod io_simplex;
mod io_small;
mod io_write_buf;
mod mock;
mod stream;
mod sync;
mod tcp_accept;
mod tcp_connect;
mod tcp_echo;
mod tcp_into_std;
mod tcp_socket;
mod tcp_stream;
