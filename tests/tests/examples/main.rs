//! The example programs end to end: the chat, HTTP and Redis servers of `runtime/examples/` (each
//! beside its tokio twin, run by [`tokio_server`]), porting from tokio, the README's program,
//! and the book's 100-line loop against evloop.
//!
//! One module per feature, one test binary for the folder: no module here changes process-wide
//! state, counts the process's file descriptors or threads, or needs a harness of its own, so
//! their tests share one process (the files that cannot are the standalone binaries beside this
//! folder, each saying why on its first line). A test that re-runs itself in a child process
//! names itself with `evloop_tests::test_name!`, which adds the module path.

mod chat;
mod http;
mod port;
mod pubsub;
mod readme;
mod redis;
mod tiny_loop;
mod tokio_server;
