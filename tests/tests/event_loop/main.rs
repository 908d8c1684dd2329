//! The loop layer's tests (`runtime/src/event_loop/`): the behaviour contract, file descriptors,
//! threads, options and modes, timers (with a property test), handles, and the exact system
//! calls the loop makes.
//!
//! One module per feature, one test binary for the folder: no module here changes process-wide
//! state, counts the process's file descriptors or threads, or needs a harness of its own, so
//! their tests share one process (the files that cannot are the standalone binaries beside this
//! folder, each saying why on its first line). A test that re-runs itself in a child process
//! names itself with `evloop_tests::test_name!`, which adds the module path.

mod binding;
mod config;
mod contract;
mod fds;
mod handle_release;
mod modes;
mod past_deadlines;
mod prop_timers;
mod syscall_level;
mod threads;
mod threadsafe_order;

// The `#[test]` of the contract files: the built-in one here; the `sim` binary, which includes
// them too, runs them on the simulated kernel with its own (sim/contracts.rs).
use std::prelude::v1::test as contract_test;
