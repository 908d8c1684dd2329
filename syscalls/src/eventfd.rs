//! eventfd: the loop's wake-up channel.
//!
//! An eventfd is a kernel-side `u64` counter behind a descriptor: `write`
//! adds to it, `read` returns it and resets it to zero, and epoll reports it
//! readable while it is non-zero. Another thread (or a signal handler) wakes
//! a loop blocked in epoll by writing 1 to it. This module creates one and
//! reads and writes its counter with the exact 8-byte transfers the kernel
//! requires.

use std::io;
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd};

use crate::Syscall;
use crate::call::{call, call_retry_eintr};

/// `eventfd(initval, EFD_CLOEXEC | EFD_NONBLOCK)`: a new eventfd whose
/// counter starts at `initval`.
///
/// Man page: <https://man7.org/linux/man-pages/man2/eventfd.2.html>
///
/// Close-on-exec and non-blocking: reading a zero counter is `EAGAIN`
/// ([`io::ErrorKind::WouldBlock`]) instead of blocking the loop. `strace`
/// shows the call as `eventfd2`.
/// Counted as [`Syscall::Eventfd`].
#[doc(alias = "eventfd(2)")]
#[doc(alias = "eventfd2")]
pub fn eventfd(initval: u32) -> io::Result<OwnedFd> {
    #[cfg(feature = "simulation")]
    crate::sim::hook!(crate::sim::ops::eventfd(initval));
    let fd = call(Syscall::Eventfd, || {
        // SAFETY: eventfd takes two integers and touches no user memory.
        unsafe { libc::eventfd(initval, libc::EFD_CLOEXEC | libc::EFD_NONBLOCK) }
    })?;
    // SAFETY: on success the kernel returned a new descriptor owned by
    // nothing else in this process; the OwnedFd becomes its only owner.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// Reads one native-endian `u64` with a single 8-byte `read(2)`, retried on
/// EINTR; used for eventfd and timerfd, which only allow 8-byte reads.
pub(crate) fn read_u64(fd: BorrowedFd<'_>) -> io::Result<u64> {
    let mut buf = [0u8; 8];
    let n = call_retry_eintr(Syscall::Read, || {
        // SAFETY: the kernel writes at most `buf.len()` (8) bytes into the
        // local array `buf`, which is live and writable for the whole call.
        unsafe { libc::read(fd.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len()) }
    })?;
    if n != 8 {
        // eventfd/timerfd always transfer exactly 8 bytes; anything else
        // means `fd` is some other kind of file.
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("expected an 8-byte counter read, got {n} bytes"),
        ));
    }
    Ok(u64::from_ne_bytes(buf))
}

/// `read(fd, &value, 8)`: takes the eventfd's counter (the sum of all writes
/// since the last read) and resets it to zero.
///
/// Man page: <https://man7.org/linux/man-pages/man2/eventfd.2.html>
///
/// A zero counter is `Err` of kind [`io::ErrorKind::WouldBlock`] (`EAGAIN`)
/// on the non-blocking descriptors [`eventfd`] creates. Retried on `EINTR`.
/// With `EFD_SEMAPHORE` (not used here) a read would return 1 instead.
/// A read that does not transfer exactly 8 bytes (`fd` is not an eventfd)
/// is [`io::ErrorKind::InvalidData`].
/// Counted as [`Syscall::Read`] (it is a `read(2)`).
#[doc(alias = "eventfd_read(3)")]
#[doc(alias = "read")]
pub fn eventfd_read(fd: BorrowedFd<'_>) -> io::Result<u64> {
    #[cfg(feature = "simulation")]
    crate::sim::hook!(crate::sim::ops::eventfd_read(fd));
    read_u64(fd)
}

/// `write(fd, &value, 8)`: adds `value` to the eventfd's counter, waking
/// whoever waits for it to become readable.
///
/// Man page: <https://man7.org/linux/man-pages/man2/eventfd.2.html>
///
/// `value == u64::MAX` is `EINVAL`. If the counter would exceed
/// `u64::MAX - 1` the write is `Err` of kind
/// [`io::ErrorKind::WouldBlock`] (`EAGAIN`) on a non-blocking eventfd.
/// Writing 0 is allowed and changes nothing. Retried on `EINTR`.
/// Counted as [`Syscall::Write`] (it is a `write(2)`).
#[doc(alias = "eventfd_write(3)")]
#[doc(alias = "write")]
pub fn eventfd_write(fd: BorrowedFd<'_>, value: u64) -> io::Result<()> {
    #[cfg(feature = "simulation")]
    crate::sim::hook!(crate::sim::ops::eventfd_write(fd, value));
    let buf = value.to_ne_bytes();
    let n = call_retry_eintr(Syscall::Write, || {
        // SAFETY: the kernel reads `buf.len()` (8) bytes from the local array
        // `buf`, which is live for the whole call.
        unsafe { libc::write(fd.as_raw_fd(), buf.as_ptr().cast(), buf.len()) }
    })?;
    if n != 8 {
        return Err(io::Error::new(
            io::ErrorKind::WriteZero,
            format!("expected an 8-byte counter write, wrote {n} bytes"),
        ));
    }
    Ok(())
}
