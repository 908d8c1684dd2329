//! Clocks: reading `CLOCK_MONOTONIC` and friends, and converting between
//! [`Duration`] and the kernel's `struct timespec`.
//!
//! The loop's notion of "now" is [`clock_monotonic`]: a clock that never
//! jumps (unlike `CLOCK_REALTIME`) and that is the clock epoll timeouts and
//! the loop's timerfd run on. Reading it is a vDSO call, so it costs no
//! kernel entry ([`Syscall::is_vdso`](crate::Syscall::is_vdso)). The
//! conversions saturate instead of failing, so no [`Duration`] can make a
//! wrapper panic or hand the kernel an invalid `timespec`.

use std::io;
use std::time::Duration;

use static_assertions::assert_eq_size;

use crate::Syscall;
use crate::call::call;

// `struct timespec` is { time_t tv_sec; long tv_nsec; } = 16 bytes on both
// supported 64-bit targets; the epoll and timerfd wrappers pass it by pointer.
#[cfg(target_arch = "x86_64")]
assert_eq_size!(libc::timespec, [u8; 16]);
#[cfg(target_arch = "aarch64")]
assert_eq_size!(libc::timespec, [u8; 16]);

/// A clock that [`clock_gettime`] can read.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum Clock {
    /// `CLOCK_MONOTONIC`: time since boot, not counting suspend; never jumps,
    /// is slewed by NTP. The clock of the event loop.
    Monotonic,
    /// `CLOCK_REALTIME`: wall-clock time since the Unix epoch; can jump in
    /// both directions when the system time is set.
    Realtime,
    /// `CLOCK_BOOTTIME`: like `Monotonic`, but keeps counting while the
    /// system is suspended.
    Boottime,
}

impl Clock {
    const fn id(self) -> libc::clockid_t {
        match self {
            Clock::Monotonic => libc::CLOCK_MONOTONIC,
            Clock::Realtime => libc::CLOCK_REALTIME,
            Clock::Boottime => libc::CLOCK_BOOTTIME,
        }
    }
}

/// `clock_gettime(clock, &ts)`: the current time of `clock`, as a
/// [`Duration`] since the clock's origin.
///
/// Man page: <https://man7.org/linux/man-pages/man2/clock_gettime.2.html>
///
/// Answered by the vDSO in user space: `strace` never shows it. A
/// `CLOCK_REALTIME` before 1970 (a badly set system clock) reads as
/// [`Duration::ZERO`] rather than failing.
/// Counted as [`Syscall::ClockGettime`].
#[doc(alias = "clock_gettime(2)")]
pub fn clock_gettime(clock: Clock) -> io::Result<Duration> {
    #[cfg(feature = "simulation")]
    crate::sim::hook!(crate::sim::ops::clock_gettime(clock));
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    call(Syscall::ClockGettime, || {
        // SAFETY: clock_gettime writes one `struct timespec` to `&mut ts`, a
        // live, properly aligned local of exactly that type.
        unsafe { libc::clock_gettime(clock.id(), &mut ts) }
    })?;
    Ok(timespec_to_duration(&ts))
}

/// `clock_gettime(CLOCK_MONOTONIC, &ts)`: the loop's "now".
///
/// Man page: <https://man7.org/linux/man-pages/man2/clock_gettime.2.html>
///
/// Cannot fail on Linux: `CLOCK_MONOTONIC` always exists and the result
/// pointer is a valid local, which are the only documented error causes
/// (`EINVAL`, `EFAULT`). Should it fail anyway (only fault injection can
/// make it), this returns [`Duration::ZERO`] instead of panicking.
/// Counted as [`Syscall::ClockGettime`].
#[doc(alias = "clock_gettime")]
#[doc(alias = "CLOCK_MONOTONIC")]
#[inline]
pub fn clock_monotonic() -> Duration {
    clock_gettime(Clock::Monotonic).unwrap_or(Duration::ZERO)
}

/// A kernel `timespec` as a [`Duration`]: negative seconds become zero,
/// an out-of-range nanosecond field is clamped.
pub(crate) fn timespec_to_duration(ts: &libc::timespec) -> Duration {
    if ts.tv_sec < 0 {
        return Duration::ZERO;
    }
    let secs = u64::try_from(ts.tv_sec).unwrap_or(0);
    let nanos = u32::try_from(ts.tv_nsec.clamp(0, 999_999_999)).unwrap_or(0);
    Duration::new(secs, nanos)
}

/// A [`Duration`] as a valid kernel `timespec` (`tv_nsec` in
/// `0..1_000_000_000`, `tv_sec >= 0`), saturating at the largest `time_t`.
pub(crate) fn duration_to_timespec(d: Duration) -> libc::timespec {
    match libc::time_t::try_from(d.as_secs()) {
        Ok(secs) => libc::timespec {
            tv_sec: secs,
            tv_nsec: libc::c_long::from(d.subsec_nanos()),
        },
        Err(_) => libc::timespec {
            tv_sec: libc::time_t::MAX,
            tv_nsec: 999_999_999,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn duration_timespec_round_trip_and_saturation() {
        let d = Duration::new(12, 345_678_901);
        let ts = duration_to_timespec(d);
        assert_eq!((ts.tv_sec, ts.tv_nsec), (12, 345_678_901));
        assert_eq!(timespec_to_duration(&ts), d);

        let ts = duration_to_timespec(Duration::MAX);
        assert_eq!((ts.tv_sec, ts.tv_nsec), (libc::time_t::MAX, 999_999_999));
        assert_eq!(timespec_to_duration(&ts), Duration::new(i64::MAX as u64, 999_999_999));
    }

    #[test]
    fn timespec_out_of_range_is_clamped() {
        let neg = libc::timespec { tv_sec: -5, tv_nsec: 1 };
        assert_eq!(timespec_to_duration(&neg), Duration::ZERO);
        let big_ns = libc::timespec {
            tv_sec: 1,
            tv_nsec: 5_000_000_000,
        };
        assert_eq!(timespec_to_duration(&big_ns), Duration::new(1, 999_999_999));
        let neg_ns = libc::timespec { tv_sec: 1, tv_nsec: -3 };
        assert_eq!(timespec_to_duration(&neg_ns), Duration::new(1, 0));
    }
}
