//! Test-only fault injection (feature `fault-injection`).
//!
//! A test registers, for the current thread, that the n-th next call of a
//! wrapper must fail with a chosen `errno`. When that call comes, the wrapper
//! counts it as usual (see [`crate::counters`]) and then returns
//! `Err(io::Error::from_raw_os_error(errno))` *without entering the kernel*,
//! through the same code path as a real failure: retry loops see an injected
//! `EINTR` exactly like a real one. Injections are per thread, so tests
//! running in parallel threads do not disturb each other.
//!
//! The one exception to "without entering the kernel" is [`crate::close`]:
//! it consumes its [`OwnedFd`](crate::OwnedFd), so it still releases the
//! descriptor (as Linux does when a real `close` fails) and then reports
//! the injected error.
//!
//! Counting: each injection counts the calls of its [`Syscall`] made on this
//! thread after it was registered, independently of other injections. When
//! two injections for the same [`Syscall`] want to fail the same call, the
//! one registered first supplies the `errno` and both consume that call.

use std::cell::RefCell;

use crate::Syscall;
pub use crate::signal::{HandlerInFlight, handler_in_flight};

#[derive(Debug)]
struct Injection {
    syscall: Syscall,
    /// Calls still to let through before the first failure.
    skip: u64,
    /// Failures still to inject.
    times: u64,
    errno: i32,
}

thread_local! {
    static INJECTIONS: RefCell<Vec<Injection>> = const { RefCell::new(Vec::new()) };
}

/// Makes the `n`-th next call (1-based, counted from now, on this thread) of
/// the wrappers counted as `s` fail with `errno` without entering the
/// kernel. `n == 0` is taken as `1` (the very next call).
pub fn fail_nth(s: Syscall, n: u64, errno: i32) {
    fail_times(s, n, 1, errno);
}

/// Makes `times` consecutive calls of `s` on this thread fail with `errno`,
/// starting with the `n_first`-th next call (1-based; `0` is taken as `1`).
/// `times == 0` registers nothing.
pub fn fail_times(s: Syscall, n_first: u64, times: u64, errno: i32) {
    if times == 0 {
        return;
    }
    let inj = Injection {
        syscall: s,
        skip: n_first.saturating_sub(1),
        times,
        errno,
    };
    let _ = INJECTIONS.try_with(|cell| {
        if let Ok(mut list) = cell.try_borrow_mut() {
            list.push(inj);
        }
    });
}

/// Removes every injection registered on this thread.
pub fn clear() {
    let _ = INJECTIONS.try_with(|cell| {
        if let Ok(mut list) = cell.try_borrow_mut() {
            list.clear();
        }
    });
}

/// How many injections registered on this thread still have failures left
/// to inject (an injection from [`fail_times`] stays pending until its last
/// failure has fired).
pub fn pending() -> usize {
    INJECTIONS
        .try_with(|cell| cell.try_borrow().map(|list| list.len()).unwrap_or(0))
        .unwrap_or(0)
}

/// Called by every wrapper once per call, after counting it: returns the
/// `errno` to fail this call with, if an injection fires now.
pub(crate) fn take(s: Syscall) -> Option<i32> {
    INJECTIONS
        .try_with(|cell| {
            let mut list = cell.try_borrow_mut().ok()?;
            if list.is_empty() {
                return None;
            }
            let mut fired = None;
            for inj in list.iter_mut().filter(|inj| inj.syscall == s) {
                if inj.skip > 0 {
                    inj.skip -= 1;
                } else if inj.times > 0 {
                    inj.times -= 1;
                    fired = fired.or(Some(inj.errno));
                }
            }
            list.retain(|inj| inj.times > 0);
            fired
        })
        .ok()
        .flatten()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nth_call_fires_once_and_only_for_its_syscall() {
        clear();
        fail_nth(Syscall::Read, 2, 5);
        assert_eq!(pending(), 1);
        assert_eq!(take(Syscall::Write), None);
        assert_eq!(take(Syscall::Read), None);
        assert_eq!(take(Syscall::Read), Some(5));
        assert_eq!(pending(), 0);
        assert_eq!(take(Syscall::Read), None);
    }

    #[test]
    fn zero_n_means_next_call_and_zero_times_registers_nothing() {
        clear();
        fail_times(Syscall::Close, 3, 0, 4);
        assert_eq!(pending(), 0);
        fail_nth(Syscall::Close, 0, 4);
        assert_eq!(take(Syscall::Close), Some(4));
        assert_eq!(pending(), 0);
    }

    #[test]
    fn overlapping_injections_first_registered_wins() {
        clear();
        fail_nth(Syscall::Write, 1, 11);
        fail_times(Syscall::Write, 1, 2, 22);
        assert_eq!(take(Syscall::Write), Some(11));
        assert_eq!(pending(), 1);
        assert_eq!(take(Syscall::Write), Some(22));
        assert_eq!(pending(), 0);
    }
}
