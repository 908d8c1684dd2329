//! Descriptor housekeeping: closing with error reporting, checking whether a
//! number is open, and toggling `O_NONBLOCK`.
//!
//! Dropping an [`OwnedFd`] closes it but throws away the result; [`close`]
//! is the counted variant that reports it, with Linux's rule that a failed
//! `close` has still released the descriptor. [`fd_is_open`] and
//! [`set_nonblocking`] are the two `fcntl` commands the loop needs;
//! [`set_cloexec`] is for programs that start others (what `exec` keeps).

use std::io;
use std::os::fd::{AsRawFd, BorrowedFd, IntoRawFd, OwnedFd, RawFd};

use crate::Syscall;
use crate::call::{call, enter, is_eintr};

/// `close(fd)`: closes `fd` and reports what the kernel said.
///
/// Man page: <https://man7.org/linux/man-pages/man2/close.2.html>
///
/// Never retried: on Linux the descriptor is released even when `close`
/// fails, so a retry could close a number another thread has just been
/// given. `EINTR` is therefore reported as `Ok(())`: nothing is left to do.
/// Other errors (e.g. `EIO`, or `ENOSPC`/`EDQUOT` from a network file
/// system flushing late writes) are returned, but the descriptor is gone
/// all the same.
///
/// With the `fault-injection` feature, an injected error still releases the
/// descriptor (it would leak otherwise) and is then reported by the same
/// rules. Counted as [`Syscall::Close`].
#[doc(alias = "close(2)")]
pub fn close(fd: OwnedFd) -> io::Result<()> {
    // A simulated descriptor is closed by the simulation (which still closes the real number).
    #[cfg(feature = "simulation")]
    let fd = if crate::sim::active() {
        match crate::sim::ops::close(fd) {
            Ok(r) => return r,
            Err(fd) => fd,
        }
    } else {
        fd
    };
    let raw = fd.into_raw_fd();
    // Count the call and consult fault injection, but close in every case:
    // `raw` must not leak, whatever is reported.
    let injected = enter(Syscall::Close).err();
    // SAFETY: `raw` came from an OwnedFd whose ownership `into_raw_fd`
    // transferred to us; it is closed exactly once, here. No memory is
    // passed to the kernel.
    let ret = unsafe { libc::close(raw) };
    let result = match injected {
        Some(e) => Err(e),
        None if ret == -1 => Err(io::Error::last_os_error()),
        None => Ok(()),
    };
    match result {
        Err(e) if !is_eintr(&e) => Err(e),
        _ => Ok(()),
    }
}

/// `fcntl(fd, F_GETFD)`: `true` when `fd` is an open descriptor of this
/// process.
///
/// Man page: <https://man7.org/linux/man-pages/man2/fcntl.2.html>
///
/// Only a snapshot: another thread may close the number, or open a new file
/// that gets it, right after the check. `fd` is a plain integer that the
/// kernel validates (`EBADF` gives `false`), so any value is safe to pass.
/// An error injected by `fault-injection` also gives `false`.
/// Counted as [`Syscall::Fcntl`].
#[doc(alias = "fcntl")]
#[doc(alias = "F_GETFD")]
pub fn fd_is_open(fd: RawFd) -> bool {
    call(Syscall::Fcntl, || {
        // SAFETY: F_GETFD takes no third argument and touches no user memory;
        // the kernel only looks the integer up in the descriptor table.
        unsafe { libc::fcntl(fd, libc::F_GETFD) }
    })
    .is_ok()
}

/// `fcntl(fd, F_GETFD)` then, if the flag must change, `fcntl(fd, F_SETFD,
/// ...)`: turns `FD_CLOEXEC` on or off, so that `exec` closes (or keeps) the
/// descriptor.
///
/// Man page: <https://man7.org/linux/man-pages/man2/fcntl.2.html>
///
/// Takes a plain number because its main use is on descriptors a process
/// inherited and owns no handle for (e.g. a test harness that must not pass
/// its own parent's stray descriptors on to the programs it starts). The
/// kernel validates the number: a closed one gives `EBADF`, never undefined
/// behaviour. Unlike `O_NONBLOCK`, `FD_CLOEXEC` belongs to this descriptor
/// only, not to `dup`s of it. Counted as [`Syscall::Fcntl`]: once when the
/// flag is already as requested, twice otherwise.
///
/// ```
/// use std::os::fd::AsRawFd;
/// let (r, _w) = evloop_syscalls::pipe2()?; // created with O_CLOEXEC
/// evloop_syscalls::set_cloexec(r.as_raw_fd(), false)?;
/// evloop_syscalls::set_cloexec(r.as_raw_fd(), true)?;
/// assert!(evloop_syscalls::set_cloexec(-1, true).is_err()); // EBADF
/// # Ok::<(), std::io::Error>(())
/// ```
#[doc(alias = "fcntl")]
#[doc(alias = "F_SETFD")]
#[doc(alias = "FD_CLOEXEC")]
pub fn set_cloexec(fd: RawFd, on: bool) -> io::Result<()> {
    toggle_flag(fd, (libc::F_GETFD, libc::F_SETFD), libc::FD_CLOEXEC, on)
}

/// `fcntl(fd, F_GETFL)` then, if the flag must change,
/// `fcntl(fd, F_SETFL, flags ^ O_NONBLOCK)`: turns `O_NONBLOCK` on or off.
///
/// Man page: <https://man7.org/linux/man-pages/man2/fcntl.2.html>
///
/// Kernel surprise: `O_NONBLOCK` belongs to the open file description, so
/// the change is seen by every `dup` of `fd` and by other processes sharing
/// it (e.g. a terminal on stdin shared with the parent shell).
/// Counted as [`Syscall::Fcntl`]: once when the flag is already as
/// requested, twice otherwise.
#[doc(alias = "fcntl")]
#[doc(alias = "F_SETFL")]
#[doc(alias = "O_NONBLOCK")]
pub fn set_nonblocking(fd: BorrowedFd<'_>, on: bool) -> io::Result<()> {
    toggle_flag(fd.as_raw_fd(), (libc::F_GETFL, libc::F_SETFL), libc::O_NONBLOCK, on)
}

/// Reads a flag word with `get`, and writes it back with `set` only if `bit`
/// must change: the read-modify-write both `fcntl` flag words need.
fn toggle_flag(fd: RawFd, (get, set): (libc::c_int, libc::c_int), bit: libc::c_int, on: bool) -> io::Result<()> {
    let flags = call(Syscall::Fcntl, || {
        // SAFETY: F_GETFD and F_GETFL take no third argument and touch no user
        // memory; any integer is a valid fd argument (a closed one is EBADF).
        unsafe { libc::fcntl(fd, get) }
    })?;
    let wanted = if on { flags | bit } else { flags & !bit };
    if wanted != flags {
        call(Syscall::Fcntl, || {
            // SAFETY: F_SETFD and F_SETFL take an integer third argument and
            // touch no user memory.
            unsafe { libc::fcntl(fd, set, wanted) }
        })?;
    }
    Ok(())
}
