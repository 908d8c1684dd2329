//! Byte I/O on descriptors: `read`, `write` and their scatter/gather forms
//! `readv` and `writev`.
//!
//! The loop's transports move data with these. All four are retried on
//! `EINTR` (an interrupted call transferred nothing), and they report
//! `EAGAIN` as [`io::ErrorKind::WouldBlock`] on non-blocking descriptors, so
//! the caller waits for readiness. Short transfers are normal and returned
//! as counts; nothing here loops to fill or drain a buffer.

use std::io::{self, IoSlice, IoSliceMut};
use std::os::fd::{AsRawFd, BorrowedFd};

use crate::Syscall;
use crate::call::call_retry_eintr;
use crate::raw;

/// The most buffers one `readv`/`writev` call takes (`IOV_MAX`, 1024 on
/// Linux); longer lists are cut to this many, giving a short transfer.
pub const IOV_MAX: usize = libc::UIO_MAXIOV as usize;

fn to_usize(n: libc::ssize_t) -> usize {
    // `call` has already turned -1 into an error; other results are >= 0.
    usize::try_from(n).unwrap_or(0)
}

/// `read(fd, buf, buf.len())`: reads up to `buf.len()` bytes; `Ok(0)` is end
/// of file (or an empty `buf`).
///
/// Man page: <https://man7.org/linux/man-pages/man2/read.2.html>
///
/// Retried on `EINTR`. `EAGAIN` on a non-blocking descriptor is
/// [`io::ErrorKind::WouldBlock`]. Linux transfers at most 0x7ffff000 bytes
/// per call, whatever `buf.len()` is.
/// Counted as [`Syscall::Read`], once per attempt.
#[doc(alias = "read(2)")]
#[inline]
pub fn read(fd: BorrowedFd<'_>, buf: &mut [u8]) -> io::Result<usize> {
    #[cfg(feature = "simulation")]
    crate::sim::hook!(crate::sim::ops::read(fd, buf));
    raw::direct_retry_eintr(Syscall::Read, || {
        // SAFETY: the kernel writes at most `buf.len()` bytes starting at
        // `buf.as_mut_ptr()`, all inside the exclusively borrowed slice.
        unsafe {
            raw::syscall6(
                libc::SYS_read,
                fd.as_raw_fd() as usize,
                buf.as_mut_ptr() as usize,
                buf.len(),
                0,
                0,
                0,
            )
        }
    })
}

/// `write(fd, buf, buf.len())`: writes up to `buf.len()` bytes, returns how
/// many were taken.
///
/// Man page: <https://man7.org/linux/man-pages/man2/write.2.html>
///
/// Retried on `EINTR`. `EAGAIN` is [`io::ErrorKind::WouldBlock`]. Writing to
/// a pipe or socket whose reading side is closed is `EPIPE`
/// ([`io::ErrorKind::BrokenPipe`]) *and* raises `SIGPIPE`, which kills the
/// process unless ignored (Rust programs ignore it by default).
/// Counted as [`Syscall::Write`], once per attempt.
#[doc(alias = "write(2)")]
#[inline]
pub fn write(fd: BorrowedFd<'_>, buf: &[u8]) -> io::Result<usize> {
    #[cfg(feature = "simulation")]
    crate::sim::hook!(crate::sim::ops::write(fd, buf, Syscall::Write));
    raw::direct_retry_eintr(Syscall::Write, || {
        // SAFETY: the kernel reads at most `buf.len()` bytes starting at
        // `buf.as_ptr()`, all inside the borrowed slice.
        unsafe {
            raw::syscall6(
                libc::SYS_write,
                fd.as_raw_fd() as usize,
                buf.as_ptr() as usize,
                buf.len(),
                0,
                0,
                0,
            )
        }
    })
}

/// `readv(fd, iov, iovcnt)`: reads into the buffers in order, filling each
/// before the next; returns the total byte count.
///
/// Man page: <https://man7.org/linux/man-pages/man2/readv.2.html>
///
/// Only the first [`IOV_MAX`] buffers are used (more would be `EINVAL`).
/// Retried on `EINTR`. `EAGAIN` is [`io::ErrorKind::WouldBlock`].
/// Counted as [`Syscall::Readv`], once per attempt.
#[doc(alias = "readv(2)")]
pub fn readv(fd: BorrowedFd<'_>, bufs: &mut [IoSliceMut<'_>]) -> io::Result<usize> {
    #[cfg(feature = "simulation")]
    crate::sim::hook!(crate::sim::ops::readv(fd, bufs));
    let cnt = bufs.len().min(IOV_MAX);
    // IOV_MAX fits in c_int.
    let iovcnt = libc::c_int::try_from(cnt).unwrap_or(0);
    let iov = bufs.as_mut_ptr().cast::<libc::iovec>().cast_const();
    let n = call_retry_eintr(Syscall::Readv, || {
        // SAFETY: std guarantees `IoSliceMut` is ABI-compatible with
        // `struct iovec` on Unix, so `iov` points to `iovcnt` (<= bufs.len())
        // valid iovecs, which the kernel reads. Each iovec describes a
        // `&mut [u8]` borrowed for the lifetime of `bufs`, which is
        // exclusively borrowed here, so the kernel may write `iov_len` bytes
        // at each `iov_base`.
        unsafe { libc::readv(fd.as_raw_fd(), iov, iovcnt) }
    })?;
    Ok(to_usize(n))
}

/// `writev(fd, iov, iovcnt)`: writes the buffers in order as one
/// transfer; returns the total byte count taken (possibly short, possibly
/// ending in the middle of a buffer).
///
/// Man page: <https://man7.org/linux/man-pages/man2/writev.2.html>
///
/// Only the first [`IOV_MAX`] buffers are used (more would be `EINVAL`).
/// Retried on `EINTR`. `EAGAIN` is [`io::ErrorKind::WouldBlock`]; `EPIPE`
/// as for [`write()`].
/// Counted as [`Syscall::Writev`], once per attempt.
#[doc(alias = "writev(2)")]
pub fn writev(fd: BorrowedFd<'_>, bufs: &[IoSlice<'_>]) -> io::Result<usize> {
    #[cfg(feature = "simulation")]
    crate::sim::hook!(crate::sim::ops::writev(fd, bufs, Syscall::Writev));
    let cnt = bufs.len().min(IOV_MAX);
    let iovcnt = libc::c_int::try_from(cnt).unwrap_or(0);
    let iov = bufs.as_ptr().cast::<libc::iovec>();
    let n = call_retry_eintr(Syscall::Writev, || {
        // SAFETY: std guarantees `IoSlice` is ABI-compatible with
        // `struct iovec` on Unix, so `iov` points to `iovcnt` (<= bufs.len())
        // valid iovecs; the kernel reads them and then reads `iov_len` bytes
        // at each `iov_base`, each a `&[u8]` borrowed for the lifetime of
        // `bufs`. Nothing is written.
        unsafe { libc::writev(fd.as_raw_fd(), iov, iovcnt) }
    })?;
    Ok(to_usize(n))
}
