//! epoll: the readiness queue at the heart of the event loop.
//!
//! This module wraps `epoll_create1`, `epoll_ctl` (add, modify, delete) and
//! the two waits, `epoll_pwait2` (nanosecond timeout, Linux 5.11+) and
//! `epoll_wait` (millisecond timeout). [`epoll_wait_timeout`] is the wait the
//! loop uses: it prefers `epoll_pwait2` and falls back to `epoll_wait`, with
//! the timeout rounded up so it never wakes early, when the kernel (or a
//! seccomp filter) refuses `epoll_pwait2`. [`EpollEvent`] and [`EpollFlags`]
//! are typed views of the kernel's `struct epoll_event` and its bit mask,
//! whose layout is checked at compile time.
//!
//! The big surprise of epoll: an interest list entry belongs to the *open
//! file description* (the kernel object), not to the fd number. A
//! registration survives `dup`, and closing one fd number does not remove it
//! while another fd (a `dup`, or a copy in a child after `fork`) still refers
//! to the same description: events keep arriving for a number that may by
//! then name a different file. Always [`epoll_ctl_del`] before closing.

use std::fmt;
use std::io;
use std::ops::{BitAnd, BitAndAssign, BitOr, BitOrAssign};
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd, RawFd};
use std::sync::atomic::{AtomicU8, Ordering};
use std::time::Duration;

use static_assertions::{assert_eq_align, assert_eq_size, const_assert_eq};

use crate::Syscall;
use crate::call::{call, is_eintr};
use crate::raw;
use crate::time::duration_to_timespec;

// ---------------------------------------------------------------------------
// Layout of `struct epoll_event`.
//
// x86_64 declares it `__attribute__((packed))` (for compatibility with
// 32-bit x86), so the u64 sits at offset 4 and the struct is 12 bytes; every
// other architecture, aarch64 included, uses natural alignment: 16 bytes with
// the u64 at offset 8. `EpollEvent` is `repr(transparent)` over libc's
// definition, and the kernel reads/writes arrays of it, so all three must
// agree.
// ---------------------------------------------------------------------------
assert_eq_size!(EpollEvent, libc::epoll_event);
assert_eq_align!(EpollEvent, libc::epoll_event);
#[cfg(target_arch = "x86_64")]
const _: () = {
    assert_eq_size!(libc::epoll_event, [u8; 12]);
    assert_eq_size!(EpollEvent, [u8; 12]);
    const_assert_eq!(std::mem::offset_of!(libc::epoll_event, events), 0);
    const_assert_eq!(std::mem::offset_of!(libc::epoll_event, u64), 4);
};
#[cfg(target_arch = "aarch64")]
const _: () = {
    assert_eq_size!(libc::epoll_event, [u8; 16]);
    assert_eq_size!(EpollEvent, [u8; 16]);
    const_assert_eq!(std::mem::offset_of!(libc::epoll_event, events), 0);
    const_assert_eq!(std::mem::offset_of!(libc::epoll_event, u64), 8);
};

/// Largest `maxevents` the kernel accepts: `EP_MAX_EVENTS` is
/// `INT_MAX / sizeof(struct epoll_event)` in `fs/eventpoll.c`; a larger value
/// is `EINVAL`.
const EP_MAX_EVENTS: usize = (i32::MAX as usize) / std::mem::size_of::<libc::epoll_event>();

// ---------------------------------------------------------------------------
// EpollFlags
// ---------------------------------------------------------------------------

/// The `events` bit mask of a `struct epoll_event`: the readiness a
/// registration asks for, and the readiness a wait reports.
///
/// `Debug` prints the set flags joined by `" | "` (e.g. `IN | OUT | ET`),
/// unknown bits as hex, and `(empty)` for no bits.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct EpollFlags(u32);

impl EpollFlags {
    /// `EPOLLIN`: readable (or, for a listening socket, a connection waits).
    pub const IN: EpollFlags = EpollFlags(libc::EPOLLIN as u32);
    /// `EPOLLPRI`: exceptional condition (TCP urgent data, cgroup events...).
    pub const PRI: EpollFlags = EpollFlags(libc::EPOLLPRI as u32);
    /// `EPOLLOUT`: writable.
    pub const OUT: EpollFlags = EpollFlags(libc::EPOLLOUT as u32);
    /// `EPOLLERR`: error condition. Always reported, whether asked for or not.
    pub const ERR: EpollFlags = EpollFlags(libc::EPOLLERR as u32);
    /// `EPOLLHUP`: hang-up. Always reported, whether asked for or not.
    pub const HUP: EpollFlags = EpollFlags(libc::EPOLLHUP as u32);
    /// `EPOLLRDHUP`: the stream socket's peer shut down its writing half.
    pub const RDHUP: EpollFlags = EpollFlags(libc::EPOLLRDHUP as u32);
    /// `EPOLLEXCLUSIVE`: wake only one of several epoll instances waiting on
    /// the same file (only valid with [`epoll_ctl_add`], never with `mod`).
    pub const EXCLUSIVE: EpollFlags = EpollFlags(libc::EPOLLEXCLUSIVE as u32);
    /// `EPOLLONESHOT`: disable the registration after one report; re-arm it
    /// with [`epoll_ctl_mod`].
    pub const ONESHOT: EpollFlags = EpollFlags(libc::EPOLLONESHOT as u32);
    /// `EPOLLET`: edge-triggered; report a change once instead of a level
    /// for as long as it lasts. The reader must drain to `EAGAIN`.
    pub const ET: EpollFlags = EpollFlags(libc::EPOLLET as u32);

    const NAMED: [(EpollFlags, &'static str); 9] = [
        (Self::IN, "IN"),
        (Self::PRI, "PRI"),
        (Self::OUT, "OUT"),
        (Self::ERR, "ERR"),
        (Self::HUP, "HUP"),
        (Self::RDHUP, "RDHUP"),
        (Self::EXCLUSIVE, "EXCLUSIVE"),
        (Self::ONESHOT, "ONESHOT"),
        (Self::ET, "ET"),
    ];

    /// No flags.
    pub const fn empty() -> Self {
        EpollFlags(0)
    }

    /// The raw bit mask.
    pub const fn bits(self) -> u32 {
        self.0
    }

    /// Wraps a raw bit mask, keeping bits that have no named constant.
    pub const fn from_bits_retain(bits: u32) -> Self {
        EpollFlags(bits)
    }

    /// `true` when no bit is set.
    pub const fn is_empty(self) -> bool {
        self.0 == 0
    }

    /// `true` when every bit of `other` is set in `self`.
    pub const fn contains(self, other: EpollFlags) -> bool {
        self.0 & other.0 == other.0
    }

    /// `true` when `self` and `other` share at least one bit.
    pub const fn intersects(self, other: EpollFlags) -> bool {
        self.0 & other.0 != 0
    }

    /// The bits set in either.
    pub const fn union(self, other: EpollFlags) -> Self {
        EpollFlags(self.0 | other.0)
    }

    /// The bits set in both.
    pub const fn intersection(self, other: EpollFlags) -> Self {
        EpollFlags(self.0 & other.0)
    }

    /// The bits of `self` not set in `other`.
    pub const fn difference(self, other: EpollFlags) -> Self {
        EpollFlags(self.0 & !other.0)
    }
}

impl BitOr for EpollFlags {
    type Output = EpollFlags;
    fn bitor(self, rhs: EpollFlags) -> EpollFlags {
        self.union(rhs)
    }
}

impl BitOrAssign for EpollFlags {
    fn bitor_assign(&mut self, rhs: EpollFlags) {
        *self = self.union(rhs);
    }
}

impl BitAnd for EpollFlags {
    type Output = EpollFlags;
    fn bitand(self, rhs: EpollFlags) -> EpollFlags {
        self.intersection(rhs)
    }
}

impl BitAndAssign for EpollFlags {
    fn bitand_assign(&mut self, rhs: EpollFlags) {
        *self = self.intersection(rhs);
    }
}

impl fmt::Debug for EpollFlags {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.is_empty() {
            return f.write_str("(empty)");
        }
        let mut rest = self.0;
        let mut first = true;
        for (flag, name) in Self::NAMED {
            if self.contains(flag) {
                if !first {
                    f.write_str(" | ")?;
                }
                first = false;
                f.write_str(name)?;
                rest &= !flag.0;
            }
        }
        if rest != 0 {
            if !first {
                f.write_str(" | ")?;
            }
            write!(f, "{rest:#x}")?;
        }
        Ok(())
    }
}

// ---------------------------------------------------------------------------
// EpollEvent
// ---------------------------------------------------------------------------

/// One `struct epoll_event`: the flags and the 64-bit user data of a
/// registration or of a reported event. Layout is exactly the kernel's
/// (packed to 12 bytes on x86_64), so a `&mut [EpollEvent]` is handed to the
/// kernel as the event array.
#[repr(transparent)]
#[derive(Clone, Copy)]
pub struct EpollEvent(libc::epoll_event);

impl EpollEvent {
    /// An event with the given flags and user data.
    pub const fn new(flags: EpollFlags, data: u64) -> Self {
        EpollEvent(libc::epoll_event {
            events: flags.0,
            u64: data,
        })
    }

    /// All-zero event (no flags, data 0), e.g. to fill a wait buffer.
    pub const fn zeroed() -> Self {
        Self::new(EpollFlags::empty(), 0)
    }

    /// The event's flags.
    pub fn flags(&self) -> EpollFlags {
        // Plain by-value read of a (possibly packed) field: no reference made.
        EpollFlags(self.0.events)
    }

    /// The event's user data.
    pub fn data(&self) -> u64 {
        // By-value read: on x86_64 this field is unaligned, so it must never
        // be borrowed.
        self.0.u64
    }
}

impl Default for EpollEvent {
    fn default() -> Self {
        Self::zeroed()
    }
}

impl fmt::Debug for EpollEvent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Copy the packed fields out first; formatting takes references.
        let flags = self.flags();
        let data = self.data();
        f.debug_struct("EpollEvent")
            .field("flags", &flags)
            .field("data", &data)
            .finish()
    }
}

// ---------------------------------------------------------------------------
// Creation and control
// ---------------------------------------------------------------------------

/// `epoll_create1(EPOLL_CLOEXEC)`: a new epoll instance.
///
/// Man page: <https://man7.org/linux/man-pages/man2/epoll_create1.2.html>
///
/// The descriptor is close-on-exec. It is not made non-blocking: an epoll fd
/// is only waited on, never `read`, so `O_NONBLOCK` would change nothing.
/// Counted as [`Syscall::EpollCreate1`].
#[doc(alias = "epoll_create1(2)")]
#[doc(alias = "epoll_create")]
pub fn epoll_create1() -> io::Result<OwnedFd> {
    #[cfg(feature = "simulation")]
    crate::sim::hook!(crate::sim::ops::epoll_create1());
    let fd = call(Syscall::EpollCreate1, || {
        // SAFETY: epoll_create1 takes only an integer flag and touches no
        // user memory.
        unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) }
    })?;
    // SAFETY: on success the kernel returned a new descriptor that nothing
    // else in this process owns; the OwnedFd becomes its only owner.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

fn epoll_ctl(epfd: BorrowedFd<'_>, op: libc::c_int, fd: RawFd, event: Option<EpollEvent>) -> io::Result<()> {
    #[cfg(feature = "simulation")]
    crate::sim::hook!(crate::sim::ops::epoll_ctl(epfd, op, fd, event));
    let mut ev = event.unwrap_or_else(EpollEvent::zeroed);
    let ev_ptr: *mut libc::epoll_event = if event.is_some() {
        &mut ev.0
    } else {
        std::ptr::null_mut()
    };
    call(Syscall::EpollCtl, || {
        // SAFETY: for ADD/MOD the kernel reads one `struct epoll_event`
        // (copy_from_user) from `ev_ptr`, which points to the local `ev`,
        // alive and correctly laid out (checked above) for the whole call;
        // for DEL the pointer is NULL, which Linux >= 2.6.9 accepts and never
        // dereferences. `epfd` is a live borrowed descriptor; `fd` is a plain
        // integer the kernel validates (EBADF), it is never dereferenced.
        unsafe { libc::epoll_ctl(epfd.as_raw_fd(), op, fd, ev_ptr) }
    })?;
    Ok(())
}

/// `epoll_ctl(epfd, EPOLL_CTL_ADD, fd, &event)`: start watching `fd` for
/// `flags`; reported events carry `data`.
///
/// Man page: <https://man7.org/linux/man-pages/man2/epoll_ctl.2.html>
///
/// `fd` is a [`RawFd`] on purpose: the kernel validates it and answers
/// `EBADF` for a number that is not open (which the loop reports as an
/// error), and passing an integer cannot cause memory unsafety, so nothing
/// is gained by demanding a borrow.
///
/// Kernel surprises: the registration belongs to the open file description
/// behind `fd`, not to the number (see the module docs): close `fd` without
/// [`epoll_ctl_del`] while a `dup` of it exists and events keep coming.
/// Adding the same description twice is `EEXIST`; regular files and
/// directories are `EPERM` (they are always ready). `ERR` and `HUP` are
/// reported even if not asked for.
/// Counted as [`Syscall::EpollCtl`].
#[doc(alias = "epoll_ctl")]
#[doc(alias = "EPOLL_CTL_ADD")]
pub fn epoll_ctl_add(epfd: BorrowedFd<'_>, fd: RawFd, flags: EpollFlags, data: u64) -> io::Result<()> {
    epoll_ctl(epfd, libc::EPOLL_CTL_ADD, fd, Some(EpollEvent::new(flags, data)))
}

/// `epoll_ctl(epfd, EPOLL_CTL_MOD, fd, &event)`: replace the flags and data
/// of an existing registration (also re-arms an `ONESHOT` one).
///
/// Man page: <https://man7.org/linux/man-pages/man2/epoll_ctl.2.html>
///
/// `fd` is a [`RawFd`] for the reason given at [`epoll_ctl_add`]. An fd that
/// is open but not registered is `ENOENT`. `EXCLUSIVE` is `EINVAL` here.
/// Counted as [`Syscall::EpollCtl`].
#[doc(alias = "epoll_ctl")]
#[doc(alias = "EPOLL_CTL_MOD")]
pub fn epoll_ctl_mod(epfd: BorrowedFd<'_>, fd: RawFd, flags: EpollFlags, data: u64) -> io::Result<()> {
    epoll_ctl(epfd, libc::EPOLL_CTL_MOD, fd, Some(EpollEvent::new(flags, data)))
}

/// `epoll_ctl(epfd, EPOLL_CTL_DEL, fd, NULL)`: stop watching `fd`.
///
/// Man page: <https://man7.org/linux/man-pages/man2/epoll_ctl.2.html>
///
/// `fd` is a [`RawFd`] for the reason given at [`epoll_ctl_add`]. Call this
/// *before* closing `fd`: afterwards the number no longer leads the kernel
/// to the registration (`EBADF`), yet the registration lives on if another
/// descriptor shares the file description.
/// Counted as [`Syscall::EpollCtl`].
#[doc(alias = "epoll_ctl")]
#[doc(alias = "EPOLL_CTL_DEL")]
pub fn epoll_ctl_del(epfd: BorrowedFd<'_>, fd: RawFd) -> io::Result<()> {
    epoll_ctl(epfd, libc::EPOLL_CTL_DEL, fd, None)
}

// ---------------------------------------------------------------------------
// Waiting
// ---------------------------------------------------------------------------

/// `maxevents` for a buffer of `len` events: clamped to what the kernel
/// accepts, so a huge buffer is used partly instead of failing.
fn max_events(len: usize) -> libc::c_int {
    // EP_MAX_EVENTS <= i32::MAX, so the conversion cannot fail.
    libc::c_int::try_from(len.min(EP_MAX_EVENTS)).unwrap_or(0)
}

/// EINTR policy of the waits: an interrupted wait reports "no events".
fn eintr_is_no_events(r: io::Result<usize>) -> io::Result<usize> {
    match r {
        Err(e) if is_eintr(&e) => Ok(0),
        other => other,
    }
}

/// `epoll_pwait2(epfd, events, maxevents, timeout, NULL, 0)`: wait for up to
/// `events.len()` events, at most `timeout` (`None` blocks until an event
/// arrives); returns how many entries at the start of `events` were filled.
///
/// Man page: <https://man7.org/linux/man-pages/man2/epoll_pwait2.2.html>
///
/// Made through `syscall(SYS_epoll_pwait2, ...)`, so it does not depend on
/// the C library knowing the call. The signal mask is NULL (left unchanged).
/// Needs Linux 5.11; older kernels answer `ENOSYS`, and seccomp filters
/// (containers) often answer `EPERM` or `ENOSYS` for it: see
/// [`epoll_wait_timeout`] for the fallback.
///
/// * `EINTR` (a signal arrived) returns `Ok(0)`, not an error and not a
///   retry: the caller recomputes its timeout from the clock.
/// * `Some(Duration::ZERO)` polls without blocking. A timeout beyond the
///   range of `struct timespec` saturates (an effectively infinite wait).
/// * The kernel never wakes before the timeout, but may wake later by the
///   thread's timer slack (see [`set_timer_slack`](crate::set_timer_slack)).
/// * An empty `events` is `EINVAL` (from the kernel); a buffer larger than
///   the kernel's `EP_MAX_EVENTS` (`INT_MAX / sizeof(struct epoll_event)`)
///   is used only up to that many entries.
///
/// Counted as [`Syscall::EpollPwait2`].
#[doc(alias = "epoll_pwait2(2)")]
pub fn epoll_pwait2(epfd: BorrowedFd<'_>, events: &mut [EpollEvent], timeout: Option<Duration>) -> io::Result<usize> {
    #[cfg(feature = "simulation")]
    crate::sim::hook!(crate::sim::ops::epoll_wait(epfd, events, timeout, Syscall::EpollPwait2));
    let ts = timeout.map(duration_to_timespec);
    let ts_ptr: *const libc::timespec = match &ts {
        Some(ts) => ts,
        None => std::ptr::null(),
    };
    let maxevents = max_events(events.len());
    let events_ptr = events.as_mut_ptr().cast::<libc::epoll_event>();
    let r = raw::direct(Syscall::EpollPwait2, || {
        // SAFETY: the kernel writes at most `maxevents` (<= events.len())
        // `struct epoll_event`s to `events_ptr`, which comes from the
        // exclusively borrowed slice `events`; `EpollEvent` is
        // repr(transparent) over `libc::epoll_event`, whose layout matches
        // the kernel's (compile-time checks above). With an empty slice the
        // pointer is dangling but the kernel rejects maxevents == 0 with
        // EINVAL before touching it. The kernel reads one `struct timespec`
        // from `ts_ptr`, which points into the local `ts` (alive for the
        // whole call), or is NULL for "no timeout". The sigmask is NULL, so
        // no sigset is read and the size argument is ignored.
        unsafe {
            raw::syscall6(
                libc::SYS_epoll_pwait2,
                epfd.as_raw_fd() as usize,
                events_ptr as usize,
                maxevents as usize,
                ts_ptr as usize,
                0,
                0,
            )
        }
    });
    eintr_is_no_events(r)
}

/// `epoll_wait(epfd, events, maxevents, timeout_ms)`: wait for up to
/// `events.len()` events, at most `timeout_ms` milliseconds (`-1` blocks,
/// `0` polls); returns how many entries at the start of `events` were
/// filled.
///
/// Man page: <https://man7.org/linux/man-pages/man2/epoll_wait.2.html>
///
/// * `EINTR` returns `Ok(0)` (see the crate's EINTR policy).
/// * Millisecond resolution: convert a [`Duration`] by rounding *up*, or the
///   wait ends early ([`epoll_wait_timeout`] does this).
/// * Any negative `timeout_ms` blocks indefinitely.
/// * On aarch64 there is no `epoll_wait` system call: glibc issues
///   `epoll_pwait` with a NULL mask, which is what `strace` shows.
///
/// Counted as [`Syscall::EpollWait`].
#[doc(alias = "epoll_wait(2)")]
#[doc(alias = "epoll_pwait")]
pub fn epoll_wait(epfd: BorrowedFd<'_>, events: &mut [EpollEvent], timeout_ms: i32) -> io::Result<usize> {
    #[cfg(feature = "simulation")]
    crate::sim::hook!(crate::sim::ops::epoll_wait(
        epfd,
        events,
        u64::try_from(timeout_ms).ok().map(Duration::from_millis),
        Syscall::EpollWait
    ));
    let maxevents = max_events(events.len());
    let events_ptr = events.as_mut_ptr().cast::<libc::epoll_event>();
    let r = raw::direct(Syscall::EpollWait, || {
        // SAFETY: the kernel writes at most `maxevents` (<= events.len())
        // `struct epoll_event`s to `events_ptr`, derived from the
        // exclusively borrowed slice `events`, whose element type has the
        // kernel's layout (repr(transparent) + compile-time checks). An empty
        // slice is rejected with EINVAL before any write. aarch64 has no
        // `epoll_wait` system call: `epoll_pwait` with a NULL mask is the same
        // call (what glibc does too).
        unsafe {
            #[cfg(target_arch = "x86_64")]
            let (nr, mask) = (libc::SYS_epoll_wait, 0usize);
            #[cfg(target_arch = "aarch64")]
            let (nr, mask) = (libc::SYS_epoll_pwait, 0usize);
            raw::syscall6(
                nr,
                epfd.as_raw_fd() as usize,
                events_ptr as usize,
                maxevents as usize,
                timeout_ms as isize as usize,
                mask,
                8,
            )
        }
    });
    eintr_is_no_events(r)
}

const PWAIT2_UNKNOWN: u8 = 0;
const PWAIT2_AVAILABLE: u8 = 1;
const PWAIT2_UNAVAILABLE: u8 = 2;

/// What [`epoll_wait_timeout`] learned about `epoll_pwait2` (process-wide).
static PWAIT2_STATE: AtomicU8 = AtomicU8::new(PWAIT2_UNKNOWN);

#[cfg(feature = "fault-injection")]
static FORCE_FALLBACK: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

#[inline(always)]
fn fallback_forced() -> bool {
    #[cfg(feature = "fault-injection")]
    {
        FORCE_FALLBACK.load(Ordering::Relaxed)
    }
    #[cfg(not(feature = "fault-injection"))]
    {
        false
    }
}

/// Whether `epoll_pwait2` works here, as found out by
/// [`epoll_wait_timeout`]: `None` until its first wait, then `Some(true)` or
/// `Some(false)` (the kernel or a seccomp filter answered `ENOSYS`/`EPERM`).
/// Process-wide. Not affected by `force_epoll_wait_fallback`, which only
/// changes which call is made.
pub fn epoll_pwait2_available() -> Option<bool> {
    match PWAIT2_STATE.load(Ordering::Relaxed) {
        PWAIT2_AVAILABLE => Some(true),
        PWAIT2_UNAVAILABLE => Some(false),
        _ => None,
    }
}

/// The call [`epoll_wait_timeout`] makes now: `"epoll_wait"` once `epoll_pwait2` was found
/// unavailable (or the fallback is forced by the test hook), `"epoll_pwait2"` otherwise. For
/// error messages that name the call that failed.
pub fn epoll_wait_timeout_call() -> &'static str {
    if fallback_forced() || PWAIT2_STATE.load(Ordering::Relaxed) == PWAIT2_UNAVAILABLE {
        "epoll_wait"
    } else {
        "epoll_pwait2"
    }
}

/// Test hook (feature `fault-injection`): with `on`, [`epoll_wait_timeout`]
/// behaves as if `epoll_pwait2` were missing and always uses the
/// `epoll_wait` fallback; with `!on` it goes back to normal. Process-wide,
/// so it affects every thread of the test binary.
#[cfg(feature = "fault-injection")]
pub fn force_epoll_wait_fallback(on: bool) {
    FORCE_FALLBACK.store(on, Ordering::Relaxed);
}

/// A timeout for `epoll_wait`: whole milliseconds rounded *up* (a wait may
/// end late, never early), clamped to `i32::MAX`; `None` is `-1` (block).
pub(crate) fn timeout_to_ms_ceil(timeout: Option<Duration>) -> libc::c_int {
    match timeout {
        None => -1,
        Some(d) => libc::c_int::try_from(d.as_nanos().div_ceil(1_000_000)).unwrap_or(libc::c_int::MAX),
    }
}

/// `epoll_pwait2(epfd, events, maxevents, &timeout, NULL, 0)`, or
/// `epoll_wait(epfd, events, maxevents, ceil_ms(timeout))` where
/// `epoll_pwait2` is unavailable: the wait the loop uses. `None` blocks
/// until an event arrives; returns how many entries of `events` were filled.
///
/// Man pages: <https://man7.org/linux/man-pages/man2/epoll_pwait2.2.html>,
/// <https://man7.org/linux/man-pages/man2/epoll_wait.2.html>
///
/// When `epoll_pwait2` fails with `ENOSYS` (kernel older than 5.11) or
/// `EPERM` (how seccomp filters typically answer an unknown call), this
/// remembers in a process-wide atomic that it is unavailable (see
/// [`epoll_pwait2_available`]), performs this wait with `epoll_wait`, and
/// uses `epoll_wait` directly on every later call. The fallback's timeout is
/// rounded *up* to whole milliseconds (never early) and clamped to
/// `i32::MAX` ms (about 24.8 days; the caller simply wakes and waits again).
///
/// `EINTR` returns `Ok(0)`, as for both underlying calls.
/// Counted as [`Syscall::EpollPwait2`] and/or [`Syscall::EpollWait`],
/// whichever calls were made (both, once, on the call that discovers the
/// fallback).
#[doc(alias = "epoll_pwait2")]
#[doc(alias = "epoll_wait")]
pub fn epoll_wait_timeout(
    epfd: BorrowedFd<'_>,
    events: &mut [EpollEvent],
    timeout: Option<Duration>,
) -> io::Result<usize> {
    if !fallback_forced() && PWAIT2_STATE.load(Ordering::Relaxed) != PWAIT2_UNAVAILABLE {
        match epoll_pwait2(epfd, events, timeout) {
            Err(e) if matches!(e.raw_os_error(), Some(libc::ENOSYS | libc::EPERM)) => {
                PWAIT2_STATE.store(PWAIT2_UNAVAILABLE, Ordering::Relaxed);
            }
            other => {
                // Any other answer proves the call exists. Never overwrite a
                // concurrent "unavailable" verdict.
                let _ = PWAIT2_STATE.compare_exchange(
                    PWAIT2_UNKNOWN,
                    PWAIT2_AVAILABLE,
                    Ordering::Relaxed,
                    Ordering::Relaxed,
                );
                return other;
            }
        }
    }
    epoll_wait(epfd, events, timeout_to_ms_ceil(timeout))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_debug_lists_names_in_bit_order() {
        let f = EpollFlags::ET | EpollFlags::OUT | EpollFlags::IN;
        assert_eq!(format!("{f:?}"), "IN | OUT | ET");
        assert_eq!(format!("{:?}", EpollFlags::empty()), "(empty)");
        assert_eq!(format!("{:?}", EpollFlags::from_bits_retain(0x40 | 1)), "IN | 0x40");
    }

    #[test]
    fn flags_set_operations() {
        let io = EpollFlags::IN | EpollFlags::OUT;
        assert!(io.contains(EpollFlags::IN));
        assert!(!io.contains(EpollFlags::IN | EpollFlags::ET));
        assert!(io.intersects(EpollFlags::OUT | EpollFlags::ET));
        assert!(!io.intersects(EpollFlags::ET));
        assert_eq!((io & EpollFlags::OUT), EpollFlags::OUT);
        assert_eq!(io.difference(EpollFlags::IN), EpollFlags::OUT);
        assert_eq!(EpollFlags::ET.bits(), 0x8000_0000);
        let mut m = EpollFlags::empty();
        m |= EpollFlags::HUP;
        m &= EpollFlags::HUP | EpollFlags::ERR;
        assert_eq!(m, EpollFlags::HUP);
    }

    #[test]
    fn event_round_trips_flags_and_data_and_debug_copies_packed_fields() {
        let ev = EpollEvent::new(EpollFlags::IN | EpollFlags::ET, u64::MAX - 1);
        assert_eq!(ev.flags(), EpollFlags::IN | EpollFlags::ET);
        assert_eq!(ev.data(), u64::MAX - 1);
        assert_eq!(
            format!("{ev:?}"),
            format!("EpollEvent {{ flags: IN | ET, data: {} }}", u64::MAX - 1)
        );
        let z = EpollEvent::default();
        assert_eq!(z.flags(), EpollFlags::empty());
        assert_eq!(z.data(), 0);
    }

    #[test]
    fn ms_timeout_rounds_up_and_clamps() {
        assert_eq!(timeout_to_ms_ceil(None), -1);
        assert_eq!(timeout_to_ms_ceil(Some(Duration::ZERO)), 0);
        assert_eq!(timeout_to_ms_ceil(Some(Duration::from_nanos(1))), 1);
        assert_eq!(timeout_to_ms_ceil(Some(Duration::from_millis(1))), 1);
        assert_eq!(timeout_to_ms_ceil(Some(Duration::from_micros(1_200))), 2);
        assert_eq!(timeout_to_ms_ceil(Some(Duration::from_nanos(1_000_001))), 2);
        assert_eq!(
            timeout_to_ms_ceil(Some(Duration::from_millis(i32::MAX as u64))),
            i32::MAX
        );
        assert_eq!(
            timeout_to_ms_ceil(Some(Duration::from_millis(i32::MAX as u64 + 1))),
            i32::MAX
        );
        assert_eq!(timeout_to_ms_ceil(Some(Duration::MAX)), i32::MAX);
    }

    #[test]
    fn max_events_clamps_to_kernel_limit() {
        assert_eq!(max_events(0), 0);
        assert_eq!(max_events(64), 64);
        assert_eq!(max_events(usize::MAX) as usize, EP_MAX_EVENTS);
        assert!(EP_MAX_EVENTS <= i32::MAX as usize);
    }
}
