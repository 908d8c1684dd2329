//! Timer precision: the thread's timer slack and `timerfd`.
//!
//! Linux lets every sleeping call (epoll waits included) wake up to the
//! thread's *timer slack* late (50 µs by default) so it can batch wake-ups.
//! The loop can shrink the slack with `prctl(PR_SET_TIMERSLACK)`, or arm a
//! `timerfd` at an absolute `CLOCK_MONOTONIC` deadline and wait for it
//! through epoll; it measures both. This module wraps those calls.

use std::io;
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd};
use std::time::Duration;

use crate::Syscall;
use crate::call::call;
use crate::eventfd::read_u64;
use crate::time::duration_to_timespec;

/// `prctl(PR_SET_TIMERSLACK, ns, 0, 0, 0)`: sets the calling *thread's*
/// timer slack to `ns` nanoseconds.
///
/// Man page: <https://man7.org/linux/man-pages/man2/pr_set_timerslack.2const.html>
/// (and <https://man7.org/linux/man-pages/man2/prctl.2.html>)
///
/// Kernel surprises:
/// * `ns == 0` does **not** mean "no slack": it resets the slack to the
///   thread's default (the value its parent had when it was created,
///   normally 50 µs). Pass 1 for the minimum.
/// * It is per thread; threads created afterwards inherit it as their
///   default.
/// * Ignored (silently) for real-time and deadline threads, whose slack is
///   always 0.
///
/// Values above `i64::MAX` are clamped to it so that [`timer_slack`] can
/// read them back (a larger value would look like an error code).
/// Counted as [`Syscall::Prctl`].
#[doc(alias = "prctl")]
#[doc(alias = "PR_SET_TIMERSLACK")]
pub fn set_timer_slack(ns: u64) -> io::Result<()> {
    let arg: libc::c_ulong = ns.min(i64::MAX as u64);
    call(Syscall::Prctl, || {
        // SAFETY: PR_SET_TIMERSLACK takes an integer argument; no user
        // memory is read or written. All four variadic arguments are passed
        // as `unsigned long`, as glibc's prctl reads them.
        unsafe {
            libc::prctl(
                libc::PR_SET_TIMERSLACK,
                arg,
                0 as libc::c_ulong,
                0 as libc::c_ulong,
                0 as libc::c_ulong,
            )
        }
    })?;
    Ok(())
}

/// `prctl(PR_GET_TIMERSLACK, 0, 0, 0, 0)`: the calling thread's current
/// timer slack in nanoseconds.
///
/// Man page: <https://man7.org/linux/man-pages/man2/pr_get_timerslack.2const.html>
/// (and <https://man7.org/linux/man-pages/man2/prctl.2.html>)
///
/// Made through `syscall(SYS_prctl, ...)` because the kernel returns the
/// slack as a `long` result, which glibc's `int prctl()` would truncate.
/// Counted as [`Syscall::Prctl`].
#[doc(alias = "prctl")]
#[doc(alias = "PR_GET_TIMERSLACK")]
pub fn timer_slack() -> io::Result<u64> {
    let r = call(Syscall::Prctl, || {
        // SAFETY: PR_GET_TIMERSLACK reads and writes no user memory; the
        // value is the return value. Every argument is a full `c_long`, as
        // `syscall()` reads them.
        unsafe {
            libc::syscall(
                libc::SYS_prctl,
                libc::c_long::from(libc::PR_GET_TIMERSLACK),
                0 as libc::c_long,
                0 as libc::c_long,
                0 as libc::c_long,
                0 as libc::c_long,
            )
        }
    })?;
    Ok(u64::try_from(r).unwrap_or(0))
}

/// `timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK)`: a new,
/// disarmed timer descriptor on the monotonic clock.
///
/// Man page: <https://man7.org/linux/man-pages/man2/timerfd_create.2.html>
///
/// Close-on-exec and non-blocking: reading it before it expired is `EAGAIN`
/// ([`io::ErrorKind::WouldBlock`]). Arm it with [`timerfd_set_abs`]; epoll
/// reports it readable once it has expired; [`timerfd_read`] returns the
/// expiration count and disarms the readiness. Its expirations are subject
/// to the slack of the thread that *armed* it.
/// Counted as [`Syscall::TimerfdCreate`].
#[doc(alias = "timerfd_create(2)")]
pub fn timerfd_create() -> io::Result<OwnedFd> {
    let fd = call(Syscall::TimerfdCreate, || {
        // SAFETY: timerfd_create takes two integers and touches no user
        // memory.
        unsafe { libc::timerfd_create(libc::CLOCK_MONOTONIC, libc::TFD_CLOEXEC | libc::TFD_NONBLOCK) }
    })?;
    #[cfg(feature = "simulation")]
    if crate::sim::active() {
        crate::sim::ops::real_fd_created(fd);
    }
    // SAFETY: on success the kernel returned a new descriptor owned by
    // nothing else in this process; the OwnedFd becomes its only owner.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// `timerfd_settime(fd, TFD_TIMER_ABSTIME, &{it_interval: 0, it_value:
/// deadline}, NULL)`: arms `fd` to expire once when `CLOCK_MONOTONIC`
/// reaches `deadline` (an absolute time, as returned by
/// [`clock_monotonic`](crate::clock_monotonic)); `None` disarms it
/// (`timerfd_settime(fd, 0, &{0, 0}, NULL)`).
///
/// Man page: <https://man7.org/linux/man-pages/man2/timerfd_settime.2.html>
///
/// Kernel surprises:
/// * An all-zero `it_value` *disarms* the timer, so
///   `Some(Duration::ZERO)` would never fire: it is sent as 1 ns instead,
///   a deadline in the past, which expires immediately (as does any past
///   deadline).
/// * Re-arming replaces the previous setting and clears an expiration not
///   yet read.
/// * A deadline beyond the range of `struct timespec` saturates.
///
/// Counted as [`Syscall::TimerfdSettime`].
#[doc(alias = "timerfd_settime")]
#[doc(alias = "TFD_TIMER_ABSTIME")]
pub fn timerfd_set_abs(fd: BorrowedFd<'_>, deadline: Option<Duration>) -> io::Result<()> {
    let zero = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    let (flags, value) = match deadline {
        None => (0, zero),
        Some(d) => (
            libc::TFD_TIMER_ABSTIME,
            duration_to_timespec(d.max(Duration::from_nanos(1))),
        ),
    };
    let spec = libc::itimerspec {
        it_interval: zero,
        it_value: value,
    };
    call(Syscall::TimerfdSettime, || {
        // SAFETY: the kernel reads one `struct itimerspec` from `&spec`, a
        // live local of exactly that type; the old-value pointer is NULL, so
        // nothing is written back.
        unsafe { libc::timerfd_settime(fd.as_raw_fd(), flags, &spec, std::ptr::null_mut()) }
    })?;
    Ok(())
}

/// `read(fd, &count, 8)`: the number of expirations of a timerfd since it
/// was last read or armed (1 for a one-shot timer), resetting it to zero.
///
/// Man page: <https://man7.org/linux/man-pages/man2/timerfd_create.2.html>
///
/// Not yet expired is `Err` of kind [`io::ErrorKind::WouldBlock`] (`EAGAIN`).
/// Retried on `EINTR`. A read of other than 8 bytes (not a timerfd) is
/// [`io::ErrorKind::InvalidData`].
/// Counted as [`Syscall::Read`] (it is a `read(2)`).
#[doc(alias = "read")]
pub fn timerfd_read(fd: BorrowedFd<'_>) -> io::Result<u64> {
    read_u64(fd)
}
