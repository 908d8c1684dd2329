//! Helpers shared by the fault-injection test files (fault_injection.rs, socket_faults.rs), each
//! of which includes this module with `mod common;`. Those files, and so this module, build only
//! with the `fault-injection` feature.

use evloop_syscalls::counters::{self, Counts};
use evloop_syscalls::fault;

/// Clears this thread's injections when created and when dropped, so a
/// failing test leaves nothing behind for the next one on the same thread.
pub struct Clean;

impl Clean {
    /// Clears this thread's injections now, and again when the guard drops.
    pub fn new() -> Self {
        fault::clear();
        Clean
    }
}

impl Drop for Clean {
    fn drop(&mut self) {
        fault::clear();
    }
}

/// Runs `f` and returns its result with the syscall counts it added on this thread.
pub fn delta<T>(f: impl FnOnce() -> T) -> (T, Counts) {
    let before = counters::snapshot();
    let out = f();
    (out, counters::snapshot().since(&before))
}
