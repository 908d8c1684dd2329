//! What the tests ask about the process they run in: locks for tests that must not overlap
//! ([`serial`], [`serial_shared`]), the calling thread's CPU time, valgrind, the loop's polls in
//! a syscall count, and the workspace's own files.

use std::path::{Path, PathBuf};
use std::sync::{RwLock, RwLockReadGuard, RwLockWriteGuard};
use std::time::Duration;

use evloop::sys::{Syscall, counters::Counts};

/// The one lock of this process (each test binary has its own copy) for tests that must not
/// overlap with others of their binary: taken exclusively by [`serial`], shared by
/// [`serial_shared`].
static SERIAL: RwLock<()> = RwLock::new(());

/// Holds off every other test of this binary that takes [`serial`] or [`serial_shared`], for as
/// long as the guard lives: for a test that counts the process's fds, changes its signal
/// dispositions, or relies on which fd number the kernel hands out next. A test that failed
/// while holding it does not block the others (the poison is ignored).
pub fn serial() -> RwLockWriteGuard<'static, ()> {
    SERIAL.write().unwrap_or_else(|e| e.into_inner())
}

/// Lets other tests that take `serial_shared` run alongside, but none that takes [`serial`]:
/// for a test that opens fds while another test of its binary counts them.
pub fn serial_shared() -> RwLockReadGuard<'static, ()> {
    SERIAL.read().unwrap_or_else(|e| e.into_inner())
}

/// The CPU time the calling thread has used so far: the first field of
/// `/proc/thread-self/schedstat` (nanoseconds on the CPU), or, where the kernel has no
/// schedstat, `utime + stime` of `/proc/thread-self/stat` (clock ticks, usually 10 ms).
///
/// For "the loop idles instead of spinning" checks: compare two readings around a wait and
/// allow a generous fraction of the wait's wall-clock time.
pub fn thread_cpu_time() -> Duration {
    if let Ok(text) = std::fs::read_to_string("/proc/thread-self/schedstat") {
        if let Some(ns) = text.split_whitespace().next().and_then(|f| f.parse::<u64>().ok()) {
            return Duration::from_nanos(ns);
        }
    }
    let stat = std::fs::read_to_string("/proc/thread-self/stat").unwrap_or_default();
    // Fields after the parenthesised command name: utime is the 14th field, stime the 15th.
    let after = stat.rsplit_once(')').map_or("", |(_, rest)| rest);
    let fields: Vec<u64> = after.split_whitespace().filter_map(|f| f.parse().ok()).collect();
    let ticks = fields.get(11).copied().unwrap_or(0) + fields.get(12).copied().unwrap_or(0);
    Duration::from_millis(ticks * 10)
}

/// Whether this process runs under valgrind (which preloads its `vgpreload_*.so` into the
/// program it runs): `make valgrind`. A few checks adapt: CPU-time bounds (every instruction
/// costs tens of times more) and what needs system calls valgrind does not know (`pidfd_open`
/// in valgrind 3.19, which it fails with `ENOSYS`).
pub fn under_valgrind() -> bool {
    std::env::var_os("LD_PRELOAD").is_some_and(|v| v.to_string_lossy().contains("vgpreload"))
}

/// How many times the loop polled in the syscall count `c`: `epoll_pwait2`, or `epoll_wait`
/// where the loop fell back to it (old kernels, valgrind).
pub fn polls(c: &Counts) -> u64 {
    c[Syscall::EpollPwait2] + c[Syscall::EpollWait]
}

/// The workspace's root directory (the parent of this crate's).
pub fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the workspace root")
        .to_path_buf()
}

/// The contents of the workspace file at `rel` (a path from the workspace root).
///
/// Panics naming the file if it cannot be read.
pub fn read_workspace_file(rel: &str) -> String {
    let path = workspace_root().join(rel);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}
