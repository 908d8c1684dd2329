//! Per-thread counts of the calls made through this crate.
//!
//! Every wrapper bumps the counter of its [`Syscall`] once per call, before
//! the call is made, so failed calls and every attempt of an `EINTR` retry
//! loop are counted too. The counters live in a `thread_local!` array of
//! `Cell<u64>` with `const` initialisation: no lazy-init check, no
//! destructor, no atomics, so a bump is a few instructions. Counts of one
//! thread are invisible to every other thread; tests use this to assert the
//! exact number of system calls an operation makes (what `strace -c -f`
//! would report for the thread, minus vDSO calls and minus what C library
//! calls such as `getaddrinfo` do inside, see [`Counts::total_syscalls`]).

use std::cell::Cell;
use std::fmt;

use crate::syscall::{SYSCALL_COUNT, Syscall};

thread_local! {
    static COUNTS: [Cell<u64>; SYSCALL_COUNT] =
        const { [const { Cell::new(0) }; SYSCALL_COUNT] };
}

/// Adds one call of `s` to this thread's counters.
#[inline(always)]
pub(crate) fn bump(s: Syscall) {
    // `try_with` only fails while the thread's TLS is being torn down; a
    // call made from another TLS destructor is then simply not counted.
    let _ = COUNTS.try_with(|counts| {
        if let Some(cell) = counts.get(s.index()) {
            cell.set(cell.get().wrapping_add(1));
        }
    });
}

/// This thread's call counts, as of now.
pub fn snapshot() -> Counts {
    let mut out = Counts::default();
    let _ = COUNTS.try_with(|counts| {
        for (dst, src) in out.counts.iter_mut().zip(counts.iter()) {
            *dst = src.get();
        }
    });
    out
}

/// Sets every counter of this thread to zero.
pub fn reset() {
    let _ = COUNTS.try_with(|counts| {
        for cell in counts {
            cell.set(0);
        }
    });
}

/// A copy of one thread's call counters, indexed by [`Syscall`].
///
/// Obtained from [`snapshot`]; two snapshots subtract with [`Counts::since`].
/// `Display` prints the non-zero entries as `name=count` separated by single
/// spaces, in [`Syscall::ALL`] order (e.g. `epoll_pwait2=1 clock_gettime=3`),
/// or `(none)` when every count is zero.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Counts {
    counts: [u64; SYSCALL_COUNT],
}

// Written out because std implements `Default` for arrays only up to 32
// elements, and there are more kinds of calls than that.
impl Default for Counts {
    /// All counts zero.
    fn default() -> Self {
        Counts {
            counts: [0; SYSCALL_COUNT],
        }
    }
}

impl Counts {
    /// The number of calls of `s`.
    pub fn get(&self, s: Syscall) -> u64 {
        self.counts.get(s.index()).copied().unwrap_or(0)
    }

    /// Sum over the calls that are exactly one kernel entry each (see
    /// [`Syscall::is_syscall`]): what `strace` would show for the wrappers
    /// counted here.
    ///
    /// Left out: vDSO calls ([`Syscall::is_vdso`]), which never enter the
    /// kernel, and C library calls ([`Syscall::is_library_call`]:
    /// `getaddrinfo`, `getnameinfo`), which make an unknown number of system
    /// calls that no counter sees. With library calls in the window, the
    /// sum is therefore a lower bound of what `strace` would show; check
    /// [`Counts::get`] for them when that matters.
    pub fn total_syscalls(&self) -> u64 {
        self.iter()
            .filter(|(s, _)| s.is_syscall())
            .fold(0u64, |acc, (_, n)| acc.saturating_add(n))
    }

    /// Sum over all calls, vDSO and C library calls included.
    pub fn total_calls(&self) -> u64 {
        self.counts.iter().fold(0u64, |acc, &n| acc.saturating_add(n))
    }

    /// The calls made between `earlier` and `self`: entry-wise saturating
    /// difference `self - earlier` (an entry that went down, e.g. because
    /// [`reset`] ran in between, gives 0).
    pub fn since(&self, earlier: &Counts) -> Counts {
        let mut out = Counts::default();
        for ((dst, now), then) in out.counts.iter_mut().zip(self.counts.iter()).zip(earlier.counts.iter()) {
            *dst = now.saturating_sub(*then);
        }
        out
    }

    /// The non-zero entries, in [`Syscall::ALL`] order.
    pub fn iter(&self) -> impl Iterator<Item = (Syscall, u64)> + '_ {
        Syscall::ALL
            .iter()
            .map(move |&s| (s, self.get(s)))
            .filter(|&(_, n)| n != 0)
    }

    /// `true` when every count is zero.
    pub fn is_empty(&self) -> bool {
        self.counts.iter().all(|&n| n == 0)
    }
}

impl std::ops::Index<Syscall> for Counts {
    type Output = u64;

    fn index(&self, s: Syscall) -> &u64 {
        const ZERO: &u64 = &0;
        self.counts.get(s.index()).unwrap_or(ZERO)
    }
}

impl fmt::Display for Counts {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut first = true;
        for (s, n) in self.iter() {
            if !first {
                f.write_str(" ")?;
            }
            first = false;
            write!(f, "{}={}", s.name(), n)?;
        }
        if first {
            f.write_str("(none)")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bump_is_seen_by_snapshot_and_cleared_by_reset() {
        reset();
        bump(Syscall::EpollPwait2);
        bump(Syscall::ClockGettime);
        bump(Syscall::ClockGettime);
        let c = snapshot();
        assert_eq!(c.get(Syscall::EpollPwait2), 1);
        assert_eq!(c[Syscall::ClockGettime], 2);
        assert_eq!(c.total_syscalls(), 1);
        assert_eq!(c.total_calls(), 3);
        bump(Syscall::Getaddrinfo);
        bump(Syscall::Getnameinfo);
        let c = snapshot();
        assert_eq!(c.total_syscalls(), 1, "library calls are not one syscall each");
        assert_eq!(c.total_calls(), 5);
        assert_eq!(
            c.to_string(),
            "epoll_pwait2=1 clock_gettime=2 getaddrinfo=1 getnameinfo=1"
        );
        reset();
        assert!(snapshot().is_empty());
        assert_eq!(snapshot().to_string(), "(none)");
    }

    #[test]
    fn since_saturates() {
        reset();
        bump(Syscall::Read);
        let later = snapshot();
        bump(Syscall::Read);
        bump(Syscall::Write);
        let latest = snapshot();
        let d = latest.since(&later);
        assert_eq!(d.iter().collect::<Vec<_>>(), [(Syscall::Read, 1), (Syscall::Write, 1)]);
        // Going backwards saturates at zero instead of wrapping.
        assert!(later.since(&latest).is_empty());
    }
}
