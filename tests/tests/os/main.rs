//! The OS layer's tests (`runtime/src/os/`) that can share a process: the executor and pipes.
//! (Signals and subprocesses are standalone binaries: `os_signals.rs`, `os_process.rs`.)
//!
//! One module per feature, one test binary for the folder: no module here changes process-wide
//! state, counts the process's file descriptors or threads, or needs a harness of its own, so
//! their tests share one process (the files that cannot are the standalone binaries beside this
//! folder, each saying why on its first line). A test that re-runs itself in a child process
//! names itself with `evloop_tests::test_name!`, which adds the module path.

mod executor;
mod pipes;
