//! The I/O layer's tests (`runtime/src/io/`): sockets, protocols and transports, servers, streams
//! (with a property test of `StreamReader`), buffered I/O, copies and split halves, addresses, and
//! the exact system calls of a steady-state echo.
//!
//! One module per feature, one test binary for the folder: no module here changes process-wide
//! state, counts the process's file descriptors or threads, or needs a harness of its own, so
//! their tests share one process (the files that cannot are the standalone binaries beside this
//! folder, each saying why on its first line). A test that re-runs itself in a child process
//! names itself with `evloop_tests::test_name!`, which adds the module path.

mod accept_errors;
mod addresses;
mod budget;
mod buf;
mod copy;
mod datagram_sockets;
mod emfile;
mod prop_stream_reader;
mod readiness;
mod shared_waiters;
mod split;
mod stream_closing;
mod syscalls;
mod tcp;
mod text_reads;
mod unix_connect;
mod write_half_drop;

// What prop_stream_reader.rs, stream_closing.rs and tcp.rs take from their binary's root: the built-in `#[test]` and its
// proptest config unchanged here; the `sim` binary, which includes that file too, runs it on the
// simulated kernel with its own (sim/contracts.rs).
use std::prelude::v1::test as contract_test;

/// The proptest config of prop_stream_reader.rs, as that file gives it.
fn prop_config(config: proptest::test_runner::Config) -> proptest::test_runner::Config {
    config
}
