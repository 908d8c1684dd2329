//! The gate every wrapper passes through to reach the kernel.
//!
//! [`call`] counts the call, gives fault injection its chance to fail it
//! (feature `fault-injection`), runs the raw C call and turns the C
//! convention "returns -1 and sets `errno`" into an [`io::Result`].
//! [`call_retry_eintr`] wraps it in the crate's `EINTR` retry loop. Keeping
//! this in one place guarantees that counting, injection and error
//! conversion behave identically for every wrapper, and that an injected
//! error takes exactly the path a real one would.

use std::io;

use crate::Syscall;
use crate::counters;

/// A C return value that signals failure with `-1` and `errno`.
pub(crate) trait CRet: Copy {
    /// `true` when the value is the C error marker `-1`.
    fn is_error(self) -> bool;
}

impl CRet for libc::c_int {
    #[inline(always)]
    fn is_error(self) -> bool {
        self == -1
    }
}

impl CRet for libc::ssize_t {
    #[inline(always)]
    fn is_error(self) -> bool {
        self == -1
    }
}

// `c_long` is `i64` on both supported targets, which differs from `ssize_t`
// (`isize`) as a Rust type; `libc::syscall` returns it.
impl CRet for i64 {
    #[inline(always)]
    fn is_error(self) -> bool {
        self == -1
    }
}

/// Counts one call of `s`; with fault injection, may fail it without
/// entering the kernel.
#[inline(always)]
pub(crate) fn enter(s: Syscall) -> io::Result<()> {
    counters::bump(s);
    #[cfg(feature = "fault-injection")]
    if let Some(errno) = crate::fault::take(s) {
        return Err(io::Error::from_raw_os_error(errno));
    }
    Ok(())
}

/// Counts one call of `s`, runs `f` (the raw C call), and converts a `-1`
/// result into the current `errno`.
///
/// Nothing runs between `f` returning and `errno` being read, so no other
/// library call can overwrite `errno` in between.
#[inline(always)]
pub(crate) fn call<T: CRet>(s: Syscall, f: impl FnOnce() -> T) -> io::Result<T> {
    enter(s)?;
    let ret = f();
    if ret.is_error() {
        Err(io::Error::last_os_error())
    } else {
        Ok(ret)
    }
}

/// Like [`call`], but issues the call again after `EINTR` (real or
/// injected). Each attempt is counted.
#[inline]
pub(crate) fn call_retry_eintr<T: CRet>(s: Syscall, mut f: impl FnMut() -> T) -> io::Result<T> {
    loop {
        match call(s, &mut f) {
            Err(e) if is_eintr(&e) => continue,
            other => return other,
        }
    }
}

/// `true` when `e` is `EINTR`.
#[inline]
pub(crate) fn is_eintr(e: &io::Error) -> bool {
    e.raw_os_error() == Some(libc::EINTR)
}
