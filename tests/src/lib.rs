//! Shared helpers for evloop's integration and syscall-level tests (`tests/tests/`).
//!
//! Every test binary of this crate links this library, so a helper needed by more than one test
//! file lives here once, under one name with one meaning, instead of as a copy in each file.
//! Helpers that only one file needs stay in that file.
//!
//! - Building loops ([`new_loop`], [`warm_loop`], [`virtual_loop`], [`loop_with`]) and running
//!   them without hanging: [`run_bounded`] (under [`HANG`]), [`run_on_new_loop`], [`run_one`]
//!   (refuses to block forever), [`spin_once`] (one non-blocking iteration), and
//!   [`watchdog::Watchdog`] (stops a loop from another thread when a test runs too long).
//! - Inside a running loop, letting other work happen: [`settle`] (a few iterations),
//!   [`settle_for`] (a while), [`yield_until`] and [`wait_until`] (until a condition holds).
//! - Recording what happened: [`Log`] with [`log`], [`push`] and [`entries`];
//!   [`record_exceptions_with`] and [`record_exception_messages`] for the loop's exception
//!   handler; destructors seen through [`DropFlag`] (with [`flag`]) and [`DropLog`]; polls
//!   counted by [`CountPolls`].
//! - Deterministic input: [`Rng`], [`pattern`].
//! - The process seen from inside: [`serial`] / [`serial_shared`] (tests that must not overlap),
//!   [`fds`] (its open file descriptors), [`procfs`] (is a thread blocked in the loop's poll?),
//!   [`thread_cpu_time`] (for "no spin" checks), [`under_valgrind`], [`polls`] (the loop's
//!   polls in a syscall count), the workspace's files ([`workspace_root`],
//!   [`read_workspace_file`]).
//! - Networking: [`net`] (loopback addresses, abstract Unix names, a connected pair, an echo
//!   [`Protocol`](evloop::protocol::Protocol) and an echo loop for streams) and [`server`] (an example
//!   server on a thread of its own).
//! - Child processes: [`child`] (re-running one test of the current binary in a child, for
//!   tests that change process-wide state), named with [`test_name!`].
//!
//! The helpers keep the rules the tests follow: nothing depends on the machine being fast (bounds
//! are generous, and they turn a hang into a failure), and every "random" input is the same on
//! every run.

#![deny(missing_docs)]

mod host;
mod input;
mod loops;
mod record;
mod waiting;

pub mod child;
pub mod children;
pub mod fds;
pub mod mock_task;
pub mod net;
pub mod procfs;
pub mod server;
pub mod watchdog;

pub use host::{polls, read_workspace_file, serial, serial_shared, thread_cpu_time, under_valgrind, workspace_root};
pub use input::{Rng, pattern, pattern_byte};
pub use loops::{HANG, loop_with, new_loop, run_bounded, run_on_new_loop, run_one, spin_once, virtual_loop, warm_loop};
pub use record::{
    CountPolls, DropFlag, DropLog, Log, entries, flag, log, push, record_exception_messages, record_exceptions_with,
};
pub use waiting::{settle, settle_for, wait_until, yield_until};

/// The full name of test function `$name` of the calling module, as `--exact` wants it: e.g.
/// `stacks::a_stack_overflow_...` for a test of `tests/tests/fiber/stacks.rs` (binary `fiber`),
/// or the bare name in a standalone file. For [`child::run`] and [`child::command`].
#[macro_export]
macro_rules! test_name {
    ($name:expr) => {
        $crate::child::test_path(module_path!(), $name)
    };
}
