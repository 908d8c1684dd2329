//! Direct system calls for the hot paths: `recv`, `send`, `read`, `write` and `epoll_pwait2`
//! enter the kernel with one `syscall` (x86_64) or `svc #0` (aarch64) instruction instead of
//! going through the C library.
//!
//! Why: glibc's wrappers for these calls are *cancellation points*; each one brackets the system
//! call with `__pthread_enable_asynccancel` / `__pthread_disable_asynccancel` and then stores the
//! error in the thread-local `errno`, about 60 instructions per call around a single trap. Rust
//! never uses POSIX thread cancellation, and the wrappers here read the error straight from the
//! return value (the kernel returns `-errno`), so the detour buys nothing. Measured with
//! callgrind on the echo server, it was about a sixth of the user-space instructions of a round
//! trip. (rustix's `linux_raw` backend makes the same choice for every call.) Everything else
//! keeps the C library: those calls are not on a per-request path.
//!
//! Counting and fault injection go through the same gate as every other wrapper
//! ([`crate::call::enter`]), so the counters and injected errors behave exactly as before.

use std::io;

use crate::Syscall;
use crate::call::enter;

/// A system call with up to six arguments, as the kernel's raw ABI: the result, or `-errno`.
///
/// # Safety
/// The arguments must be valid for system call `nr`: every pointer must be valid for the reads
/// and writes that call makes, for its whole duration.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
pub(crate) unsafe fn syscall6(
    nr: libc::c_long,
    a1: usize,
    a2: usize,
    a3: usize,
    a4: usize,
    a5: usize,
    a6: usize,
) -> isize {
    let ret: isize;
    // SAFETY: the x86_64 Linux system call ABI: number in rax, arguments in rdi, rsi, rdx, r10,
    // r8, r9, result in rax; the kernel clobbers rcx and r11 and nothing else, and does not touch
    // the user stack (`nostack`). Memory is not marked untouched, so the compiler assumes the
    // kernel may read and write it (it reads and writes the caller's buffers). The arguments'
    // validity is the caller's contract.
    unsafe {
        core::arch::asm!(
            "syscall",
            inlateout("rax") nr as isize => ret,
            in("rdi") a1,
            in("rsi") a2,
            in("rdx") a3,
            in("r10") a4,
            in("r8") a5,
            in("r9") a6,
            lateout("rcx") _,
            lateout("r11") _,
            options(nostack),
        );
    }
    ret
}

/// A system call with up to six arguments, as the kernel's raw ABI: the result, or `-errno`.
///
/// # Safety
/// The arguments must be valid for system call `nr`: every pointer must be valid for the reads
/// and writes that call makes, for its whole duration.
#[cfg(target_arch = "aarch64")]
#[inline(always)]
pub(crate) unsafe fn syscall6(
    nr: libc::c_long,
    a1: usize,
    a2: usize,
    a3: usize,
    a4: usize,
    a5: usize,
    a6: usize,
) -> isize {
    let ret: isize;
    // SAFETY: the aarch64 Linux system call ABI: number in x8, arguments in x0-x5, result in x0;
    // `svc #0` clobbers no other register and does not touch the user stack. Memory is not
    // marked untouched (the kernel reads and writes the caller's buffers). The arguments'
    // validity is the caller's contract.
    unsafe {
        core::arch::asm!(
            "svc #0",
            in("x8") nr,
            inlateout("x0") a1 as isize => ret,
            in("x1") a2,
            in("x2") a3,
            in("x3") a4,
            in("x4") a5,
            in("x5") a6,
            options(nostack),
        );
    }
    ret
}

/// Counts the call, gives fault injection its chance, runs `f` (a direct system call) and turns
/// a `-errno` result into an error; retried after `EINTR` (real or injected), each attempt
/// counted, like [`crate::call::call_retry_eintr`].
#[inline(always)]
pub(crate) fn direct_retry_eintr(s: Syscall, mut f: impl FnMut() -> isize) -> io::Result<usize> {
    loop {
        // A closure, not `&mut f`: core's `FnOnce for &mut F` shim was left out of line in the
        // echo path (+6% instructions) when the evloop crate's codegen units were laid out anew.
        #[allow(clippy::redundant_closure)]
        match direct(s, || f()) {
            Err(e) if e.raw_os_error() == Some(libc::EINTR) => continue,
            other => return other,
        }
    }
}

/// [`direct_retry_eintr`] without the retry.
#[inline(always)]
pub(crate) fn direct(s: Syscall, f: impl FnOnce() -> isize) -> io::Result<usize> {
    enter(s)?;
    let r = f();
    if r < 0 {
        // The kernel's error range is -4095..=-1.
        Err(io::Error::from_raw_os_error(-(r as i32)))
    } else {
        Ok(r as usize)
    }
}
