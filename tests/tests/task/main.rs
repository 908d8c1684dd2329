//! The task layer's tests (`runtime/src/task/`): the task and promise contracts, cancellation,
//! time and timeouts, `TaskGroup`, `Runner` and the task tree.
//!
//! One module per feature, one test binary for the folder: no module here changes process-wide
//! state, counts the process's file descriptors or threads, or needs a harness of its own, so
//! their tests share one process (the files that cannot are the standalone binaries beside this
//! folder, each saying why on its first line). A test that re-runs itself in a child process
//! names itself with `evloop_tests::test_name!`, which adds the module path.

mod cancel_accounting;
mod cancel_semantics;
mod contract;
mod group;
mod promise_contract;
mod runner;
mod time_contract;
mod timeouts;
mod tree;

// The `#[test]` of the contract files: the built-in one here; the `sim` binary, which includes
// them too, runs them on the simulated kernel with its own (sim/contracts.rs).
use std::prelude::v1::test as contract_test;
