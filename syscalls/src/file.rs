//! Files and descriptor limits: opening a file for `sendfile`, the spare
//! `/dev/null` descriptor, `dup`, and `RLIMIT_NOFILE`.
//!
//! A loop that runs out of descriptors gets `EMFILE` from `accept4` while
//! the connection stays queued; libuv's answer is a reserve descriptor
//! ([`open_dev_null`]) given up to accept-and-close the connection. The
//! limit itself is read and changed with [`nofile_limit`] and
//! [`set_nofile_limit`] (process-wide: tests change it only in a child
//! process).

use std::ffi::{CStr, CString};
use std::io;
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use crate::Syscall;
use crate::call::{call, call_retry_eintr};

/// `open(path, flags)` without `O_CREAT` (no mode argument), retried on
/// EINTR.
fn open_cstr(path: &CStr, flags: libc::c_int) -> io::Result<OwnedFd> {
    let fd = call_retry_eintr(Syscall::Open, || {
        // SAFETY: the kernel reads the NUL-terminated string at
        // `path.as_ptr()`, which `CStr` guarantees and keeps alive for the
        // call. Without O_CREAT/O_TMPFILE no mode argument is read.
        unsafe { libc::open(path.as_ptr(), flags) }
    })?;
    #[cfg(feature = "simulation")]
    if crate::sim::active() {
        crate::sim::ops::real_fd_created(fd);
    }
    // SAFETY: on success the kernel returned a new descriptor that nothing
    // else in this process owns; the OwnedFd becomes its only owner.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// `open(path, O_RDONLY | O_CLOEXEC)`: opens a file for reading (for
/// [`sendfile`](crate::sendfile), typically).
///
/// Man page: <https://man7.org/linux/man-pages/man2/open.2.html>
///
/// Close-on-exec but **not** non-blocking, unlike every other descriptor
/// this crate creates: for regular files `O_NONBLOCK` has no effect (disk
/// reads block regardless, and readiness APIs always report them ready).
/// Kernel surprise: opening a FIFO this way blocks until a writer opens it
/// (and a device may block too); pass only regular files.
///
/// A path containing a NUL byte is [`io::ErrorKind::InvalidInput`] before
/// any call (not counted). Retried on `EINTR` (a blocked FIFO open can be
/// interrupted). `strace` shows `openat(AT_FDCWD, ...)`.
/// Counted as [`Syscall::Open`], once per attempt.
#[doc(alias = "open(2)")]
#[doc(alias = "openat")]
pub fn open_readonly(path: &Path) -> io::Result<OwnedFd> {
    let c = CString::new(path.as_os_str().as_bytes())
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "path contains a NUL byte"))?;
    open_cstr(&c, libc::O_RDONLY | libc::O_CLOEXEC)
}

/// `open("/dev/null", O_RDWR | O_CLOEXEC | O_NONBLOCK)`: a descriptor that
/// costs nothing, kept as a reserve.
///
/// Man page: <https://man7.org/linux/man-pages/man2/open.2.html>
///
/// libuv's `EMFILE` trick: hold one of these; when
/// [`accept4`](crate::accept4) fails with `EMFILE`, close it, accept the
/// pending connection and close that at once (the client sees a reset
/// rather than hanging in the queue), then open the reserve again. Read-write,
/// so it can also stand in for a child's stdin or stdout. Close-on-exec and
/// non-blocking (`/dev/null` never blocks anyway).
/// Counted as [`Syscall::Open`], once per attempt (retried on `EINTR`).
#[doc(alias = "open")]
#[doc(alias = "EMFILE")]
pub fn open_dev_null() -> io::Result<OwnedFd> {
    open_cstr(c"/dev/null", libc::O_RDWR | libc::O_CLOEXEC | libc::O_NONBLOCK)
}

/// `fcntl(fd, F_DUPFD_CLOEXEC, 0)`: a new descriptor (the lowest free
/// number) for the same open file description, close-on-exec.
///
/// Man page: <https://man7.org/linux/man-pages/man2/fcntl.2.html>
///
/// Kernel surprise: the copy shares the file description with `fd`: its
/// file offset, its status flags (so it is non-blocking exactly when `fd`
/// is, and changing one changes both), and its epoll registrations (see
/// the epoll module docs). Only the close-on-exec flag is the copy's own.
/// `EMFILE` when out of descriptors.
///
/// Counted as [`Syscall::Fcntl`], the system call it makes (like
/// [`fd_is_open`](crate::fd_is_open)); there is no separate `Dup` counter,
/// and fault injection on `Fcntl` reaches it too.
#[doc(alias = "dup(2)")]
#[doc(alias = "F_DUPFD_CLOEXEC")]
#[doc(alias = "fcntl")]
pub fn dup(fd: BorrowedFd<'_>) -> io::Result<OwnedFd> {
    #[cfg(feature = "simulation")]
    crate::sim::hook!(crate::sim::ops::dup(fd));
    let new_fd = call(Syscall::Fcntl, || {
        // SAFETY: F_DUPFD_CLOEXEC takes an integer third argument (the lowest
        // acceptable new number) and touches no user memory.
        unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_DUPFD_CLOEXEC, 0 as libc::c_int) }
    })?;
    // SAFETY: on success the kernel returned a new descriptor number that
    // nothing else in this process owns; the OwnedFd becomes its only owner.
    Ok(unsafe { OwnedFd::from_raw_fd(new_fd) })
}

/// `getrlimit(RLIMIT_NOFILE, &rlim)`: the process's descriptor limit as
/// `(soft, hard)`.
///
/// Man page: <https://man7.org/linux/man-pages/man2/getrlimit.2.html>
///
/// The soft limit is one more than the highest descriptor number `open`,
/// `socket`, `accept4`, ... may return; beyond it they fail with `EMFILE`.
/// `RLIM_INFINITY` reads as `u64::MAX` (Linux never uses it for this
/// limit: it is capped by `fs.nr_open`). `strace` shows `prlimit64`.
/// Counted as [`Syscall::Getrlimit`].
#[doc(alias = "getrlimit(2)")]
#[doc(alias = "RLIMIT_NOFILE")]
#[doc(alias = "prlimit64")]
pub fn nofile_limit() -> io::Result<(u64, u64)> {
    let mut rlim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    call(Syscall::Getrlimit, || {
        // SAFETY: getrlimit writes one `struct rlimit` to `&mut rlim`, a live
        // local of exactly that type.
        unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut rlim) }
    })?;
    Ok((rlim.rlim_cur, rlim.rlim_max))
}

/// `setrlimit(RLIMIT_NOFILE, &(struct rlimit){soft, hard})`: sets the
/// process's descriptor limit.
///
/// Man page: <https://man7.org/linux/man-pages/man2/getrlimit.2.html>
///
/// Kernel surprises: the limit is **per process**, shared by all threads,
/// so changing it in a multi-threaded program (a test harness) changes it
/// for everyone; descriptors already open above a lowered soft limit stay
/// open. `soft > hard` is `EINVAL`; raising `hard` (or any value above
/// `fs.nr_open`) needs `CAP_SYS_RESOURCE` (`EPERM`). Lowering `hard` cannot
/// be undone without that capability. `strace` shows `prlimit64`.
/// Counted as [`Syscall::Setrlimit`].
#[doc(alias = "setrlimit(2)")]
#[doc(alias = "RLIMIT_NOFILE")]
#[doc(alias = "prlimit64")]
pub fn set_nofile_limit(soft: u64, hard: u64) -> io::Result<()> {
    let rlim = libc::rlimit {
        rlim_cur: soft,
        rlim_max: hard,
    };
    call(Syscall::Setrlimit, || {
        // SAFETY: setrlimit reads one `struct rlimit` from `&rlim`, a live
        // local of exactly that type.
        unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &rlim) }
    })?;
    Ok(())
}
