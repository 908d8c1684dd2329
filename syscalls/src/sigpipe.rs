//! Keeping `SIGPIPE` away from the process when writing to pipes (and from
//! `sendfile` on sockets).
//!
//! Writing to a pipe or socket whose reading side is gone fails with `EPIPE`
//! *and* raises `SIGPIPE` on the writing thread, whose default action kills
//! the process. Sockets have `MSG_NOSIGNAL` (used by every send of this
//! crate); pipes have no such flag. Rust's runtime ignores `SIGPIPE` at
//! startup, but a library embedded in another program (a Python extension,
//! a C host) cannot count on that. So the only reliable way is to *block*
//! `SIGPIPE` on the writing thread around the write, and to take back the
//! signal the write raised before unblocking it: a blocked signal is never
//! discarded, not even an ignored one; it stays pending on the thread.
//!
//! Two ways to pay for that:
//! * per call ([`write_nosigpipe`]/[`writev_nosigpipe`] on a thread that
//!   does not block `SIGPIPE`): block, write, take the signal back, restore
//!   the mask. Three to four extra system calls per write;
//! * once per thread ([`block_sigpipe_on_this_thread`], what an event loop
//!   does for its own thread): `SIGPIPE` stays blocked while the returned
//!   [`SigpipeBlock`] lives, and a write costs one extra system call only
//!   when it fails with `EPIPE` (the `sigtimedwait` that takes the signal
//!   back).
//!
//! A pending signal is consumed with a zero-timeout `sigtimedwait(2)`, which
//! returns at once whether or not one is pending.
//!
//! Only the write's own `SIGPIPE` may be taken back. `sigtimedwait` takes
//! the thread's pending signal before the process's, and the kernel raises a
//! write's `SIGPIPE` on the writing thread, so a write that raised one gets
//! it back. But a write that raised none (a short count because a pipe or
//! socket buffer filled, not because the reader left) or a `SIGPIPE` that
//! merged with one already pending would make `sigtimedwait` take a signal
//! somebody else sent: another process's `kill(pid, SIGPIPE)`, `sigqueue`
//! or `tgkill`, which must reach its disposition like any signal. So the
//! signal taken is looked at (`siginfo`): the kernel sends a write's
//! `SIGPIPE` as `SI_USER` from the writing process itself; anything else is
//! put back, unchanged, as pending for the process (`rt_sigqueueinfo` to
//! ourselves, which keeps the sender's `si_code` and `si_pid`), so another
//! thread takes it, or this one once it unblocks `SIGPIPE`. What stays
//! indistinguishable is a `kill(getpid(), SIGPIPE)` of this very process
//! arriving during a write that raised none: it looks exactly like the
//! write's own, and is taken.

use std::cell::Cell;
use std::io::{self, IoSlice};
use std::marker::PhantomData;
use std::os::fd::BorrowedFd;

use crate::Syscall;
use crate::call::enter;
use crate::io::IOV_MAX;

/// The signal set holding only `SIGPIPE`.
fn sigpipe_set() -> libc::sigset_t {
    // SAFETY: `sigset_t` is a plain bit array for which all-zero bytes are a valid (empty)
    // value; `sigemptyset`/`sigaddset` only write inside the set we pass, which lives on
    // this stack frame, and cannot fail for a valid signal number.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, libc::SIGPIPE);
        set
    }
}

/// `sigtimedwait({SIGPIPE}, &info, {0, 0})`: takes one pending `SIGPIPE` off
/// this thread (or, failing that, off the process), if there is one; never
/// blocks. A `SIGPIPE` that is not a write's of this process (see the module
/// docs) is put back with `rt_sigqueueinfo`. Counted as
/// [`Syscall::Sigtimedwait`], plus [`Syscall::Getpid`] when a signal was
/// taken and [`Syscall::Sigqueueinfo`] when it was put back; an injected
/// failure skips the call.
fn consume_sigpipe() {
    if enter(Syscall::Sigtimedwait).is_err() {
        return;
    }
    let set = sigpipe_set();
    let zero = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `siginfo_t` is plain data for which all-zero bytes are a valid value.
    let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
    // SAFETY: the kernel reads `set` and `zero` (live locals) and writes one `siginfo_t` into
    // `info` (a live local of that type); with a zero timeout it returns at once, EAGAIN if
    // nothing is pending.
    let taken = unsafe { libc::sigtimedwait(&set, &mut info, &zero) };
    if taken != libc::SIGPIPE {
        return;
    }
    // SAFETY: for a signal sent by a process (SI_USER, SI_QUEUE, SI_TKILL) the kernel fills
    // the `_kill`/`_rt` member of the union, whose first field is `si_pid`; for any other
    // code the read gives a meaningless number, which the SI_USER test below ignores.
    let sender = unsafe { info.si_pid() };
    if info.si_code == libc::SI_USER && sender == crate::getpid() {
        return;
    }
    put_back_sigpipe(&info);
}

/// `rt_sigqueueinfo(getpid(), SIGPIPE, info)`: makes `info`'s signal pending
/// for the process again, as it was sent (the kernel lets a process queue
/// any `siginfo` to itself). Counted as [`Syscall::Sigqueueinfo`].
fn put_back_sigpipe(info: &libc::siginfo_t) {
    let pid = crate::getpid();
    if enter(Syscall::Sigqueueinfo).is_err() {
        return;
    }
    // SAFETY: the kernel reads one `siginfo_t` from `info`, a live reference; the other
    // arguments are integers.
    unsafe {
        libc::syscall(
            libc::SYS_rt_sigqueueinfo,
            libc::c_long::from(pid),
            libc::c_long::from(libc::SIGPIPE),
            info as *const libc::siginfo_t,
        );
    }
}

/// Blocks `SIGPIPE` on this thread while it lives, so a call with no `MSG_NOSIGNAL` option
/// (`sendfile`, `write` on a pipe) cannot kill the process; [`SigpipeGuard::consume`]
/// discards the `SIGPIPE` such a call raised, and dropping the guard restores the thread's
/// mask.
pub(crate) struct SigpipeGuard {
    old: libc::sigset_t,
    /// The thread blocked `SIGPIPE` already: leave mask and pending signals alone.
    was_blocked: bool,
    /// A `SIGPIPE` was pending before the call: it is not ours to consume.
    pending_before: bool,
}

impl SigpipeGuard {
    /// `pthread_sigmask(SIG_BLOCK, {SIGPIPE}, &old)`, then (if `SIGPIPE` was not blocked
    /// already) `sigpending` to learn whether one is pending from before.
    pub(crate) fn block() -> io::Result<SigpipeGuard> {
        let set = sigpipe_set();
        enter(Syscall::Sigprocmask)?;
        // SAFETY: `zeroed` is a valid empty `sigset_t` (plain bit array).
        let mut old: libc::sigset_t = unsafe { std::mem::zeroed() };
        // SAFETY: the kernel reads `set` and writes the previous mask into `old`, both live
        // locals of the right type.
        let rc = unsafe { libc::pthread_sigmask(libc::SIG_BLOCK, &set, &mut old) };
        if rc != 0 {
            return Err(io::Error::from_raw_os_error(rc));
        }
        // SAFETY: `old` is an initialized signal set; `sigismember` only reads it.
        let was_blocked = unsafe { libc::sigismember(&old, libc::SIGPIPE) } == 1;
        let mut guard = SigpipeGuard {
            old,
            was_blocked,
            pending_before: true,
        };
        if !was_blocked {
            enter(Syscall::Sigpending)?;
            // SAFETY: `zeroed` is a valid empty `sigset_t`.
            let mut pending: libc::sigset_t = unsafe { std::mem::zeroed() };
            // SAFETY: the kernel writes the pending set into `pending`, a live local.
            let rc = unsafe { libc::sigpending(&mut pending) };
            // SAFETY: `pending` is an initialized signal set; `sigismember` only reads it.
            guard.pending_before = rc != 0 || unsafe { libc::sigismember(&pending, libc::SIGPIPE) } == 1;
        }
        Ok(guard)
    }

    /// `true` when the thread blocked `SIGPIPE` before the guard did.
    pub(crate) fn was_blocked(&self) -> bool {
        self.was_blocked
    }

    /// Discards one pending `SIGPIPE` raised while the guard was blocking it.
    pub(crate) fn consume(&self) {
        if !self.pending_before {
            consume_sigpipe();
        }
    }
}

impl Drop for SigpipeGuard {
    fn drop(&mut self) {
        if !self.was_blocked && enter(Syscall::Sigprocmask).is_ok() {
            // SAFETY: the kernel reads the saved mask `self.old` (a live field); the old-mask
            // output is NULL, which is allowed.
            unsafe {
                libc::pthread_sigmask(libc::SIG_SETMASK, &self.old, std::ptr::null_mut());
            }
        }
    }
}

// ---------------------------------------------------------------------------
// Blocking SIGPIPE for a thread's lifetime (of a loop)
// ---------------------------------------------------------------------------

thread_local! {
    /// How many [`SigpipeBlock`]s of this thread are alive.
    static BLOCK_DEPTH: Cell<u32> = const { Cell::new(0) };
    /// The first [`SigpipeBlock`] found `SIGPIPE` unblocked and blocked it: the last one
    /// unblocks it again.
    static BLOCKED_BY_US: Cell<bool> = const { Cell::new(false) };
}

/// `true` while a [`SigpipeBlock`] of this thread is alive.
fn blocked_here() -> bool {
    BLOCK_DEPTH.try_with(|d| d.get() > 0).unwrap_or(false)
}

/// Keeps `SIGPIPE` blocked on the thread that created it (see
/// [`block_sigpipe_on_this_thread`]); the last one of the thread to be
/// dropped unblocks it. Not `Send`: it must be dropped on its thread.
#[derive(Debug)]
#[must_use = "SIGPIPE is unblocked again when the guard is dropped"]
pub struct SigpipeBlock {
    _not_send: PhantomData<*const ()>,
}

/// `pthread_sigmask(SIG_BLOCK, {SIGPIPE}, &old)`: blocks `SIGPIPE` on the
/// calling thread until the returned guard (and every other one this thread
/// holds) is dropped, so that [`write_nosigpipe`] and [`writev_nosigpipe`]
/// on this thread skip their per-call mask changes.
///
/// Man page: <https://man7.org/linux/man-pages/man3/pthread_sigmask.3.html>
///
/// The guards of a thread are counted: only the first makes the call (and
/// only the last undoes it), so several loops on one thread, or nested
/// ones, each hold their own. If the thread blocked `SIGPIPE` before the
/// first guard, the guards leave its mask alone.
///
/// When the last guard is dropped and the first one did block `SIGPIPE`, it
/// takes back a `SIGPIPE` still pending (a write that transferred part of
/// its data and then found the reader gone returns a count, not `EPIPE`,
/// and raises `SIGPIPE` all the same) with a zero-timeout `sigtimedwait`,
/// then unblocks `SIGPIPE` alone with `pthread_sigmask(SIG_UNBLOCK, ...)`,
/// leaving any other change made to the mask in between in place.
///
/// Caveats:
/// * threads spawned from this thread while a guard is held inherit the
///   blocked mask (Linux copies the creator's mask); they are not counted as
///   holding a guard, so their [`write_nosigpipe`] calls take the per-call
///   path, which also cleans up after an `EPIPE`. Child *processes* inherit
///   the mask too: std's [`std::process::Command`] resets only `SIGPIPE`'s
///   disposition, so spawners must reset the mask themselves (evloop's
///   process spawning does, with [`reset_signals_on_exec`](crate::reset_signals_on_exec));
/// * changing the `SIGPIPE` bit of the mask by other means while a guard is
///   held defeats it.
///
/// Counted as [`Syscall::Sigprocmask`] (first guard only; the last drop
/// counts one [`Syscall::Sigtimedwait`] and one [`Syscall::Sigprocmask`]).
/// Fails only when the thread is being torn down or by fault injection.
#[doc(alias = "pthread_sigmask")]
#[doc(alias = "SIGPIPE")]
pub fn block_sigpipe_on_this_thread() -> io::Result<SigpipeBlock> {
    let depth = BLOCK_DEPTH
        .try_with(Cell::get)
        .map_err(|_| io::Error::other("block_sigpipe_on_this_thread: the thread is exiting"))?;
    let next = depth
        .checked_add(1)
        .ok_or_else(|| io::Error::other("block_sigpipe_on_this_thread: too many guards on this thread"))?;
    if depth == 0 {
        let set = sigpipe_set();
        enter(Syscall::Sigprocmask)?;
        // SAFETY: `zeroed` is a valid empty `sigset_t` (plain bit array).
        let mut old: libc::sigset_t = unsafe { std::mem::zeroed() };
        // SAFETY: the kernel reads `set` and writes the previous mask into `old`, both live
        // locals of type `sigset_t`.
        let rc = unsafe { libc::pthread_sigmask(libc::SIG_BLOCK, &set, &mut old) };
        if rc != 0 {
            return Err(io::Error::from_raw_os_error(rc));
        }
        // SAFETY: `old` is an initialized signal set; `sigismember` only reads it.
        let was_blocked = unsafe { libc::sigismember(&old, libc::SIGPIPE) } == 1;
        let _ = BLOCKED_BY_US.try_with(|b| b.set(!was_blocked));
    }
    let _ = BLOCK_DEPTH.try_with(|d| d.set(next));
    Ok(SigpipeBlock { _not_send: PhantomData })
}

impl Drop for SigpipeBlock {
    fn drop(&mut self) {
        let Ok(depth) = BLOCK_DEPTH.try_with(Cell::get) else {
            return;
        };
        let left = depth.saturating_sub(1);
        let _ = BLOCK_DEPTH.try_with(|d| d.set(left));
        if left > 0 || !BLOCKED_BY_US.try_with(|b| b.replace(false)).unwrap_or(false) {
            return;
        }
        consume_sigpipe();
        if enter(Syscall::Sigprocmask).is_ok() {
            let set = sigpipe_set();
            // SAFETY: the kernel reads `set`, a live local; the old-mask output is NULL,
            // which is allowed.
            unsafe {
                libc::pthread_sigmask(libc::SIG_UNBLOCK, &set, std::ptr::null_mut());
            }
        }
    }
}

// ---------------------------------------------------------------------------
// Writes
// ---------------------------------------------------------------------------

fn is_epipe<T>(r: &io::Result<T>) -> bool {
    matches!(r, Err(e) if e.raw_os_error() == Some(libc::EPIPE))
}

/// Runs `op`, a write of `len` bytes, so that the `SIGPIPE` it may raise never reaches the
/// process (see the module docs).
fn without_sigpipe(len: usize, op: impl FnOnce() -> io::Result<usize>) -> io::Result<usize> {
    if blocked_here() {
        let r = op();
        if is_epipe(&r) {
            consume_sigpipe();
        }
        return r;
    }
    let guard = SigpipeGuard::block()?;
    let r = op();
    // A write that raised SIGPIPE failed with EPIPE or (a reader vanishing halfway) came up
    // short; a complete write raised nothing.
    let short = matches!(r, Ok(n) if n < len);
    if guard.was_blocked() {
        if is_epipe(&r) {
            consume_sigpipe();
        }
    } else if short || is_epipe(&r) {
        guard.consume();
    }
    drop(guard);
    r
}

/// `write(fd, buf, buf.len())` with `SIGPIPE` blocked: like
/// [`write()`](crate::write), but a reader that went away is only an `EPIPE`
/// error ([`io::ErrorKind::BrokenPipe`]), never a `SIGPIPE`. For pipes,
/// which have no `MSG_NOSIGNAL` (use [`send`](crate::send) on sockets).
///
/// Man page: <https://man7.org/linux/man-pages/man2/write.2.html>
///
/// * On a thread holding a [`SigpipeBlock`]: a plain `write`; after an
///   `EPIPE`, a zero-timeout `sigtimedwait` takes the `SIGPIPE` back, and a
///   `getpid` checks it was the write's (one that another process sent, and
///   that the write's merged with, standard signals not being queued, is put
///   back with `rt_sigqueueinfo`; see the module docs).
/// * Otherwise: `pthread_sigmask` blocks `SIGPIPE`, `sigpending` checks
///   whether one is pending already, then the `write`; after an `EPIPE` or a
///   short count a `sigtimedwait` takes back the signal the write raised
///   (not one that was pending before), and a second `pthread_sigmask`
///   restores the mask. If the thread blocked `SIGPIPE` itself, only a
///   signal following an `EPIPE` is taken back.
///
/// The thread's mask and pending signals are as before the call when it
/// returns. Retried on `EINTR` like [`write()`](crate::write).
/// Counted as [`Syscall::Write`] per attempt, plus the
/// [`Syscall::Sigprocmask`], [`Syscall::Sigpending`] and
/// [`Syscall::Sigtimedwait`] calls described above, and, when a `SIGPIPE`
/// was taken back, [`Syscall::Getpid`] (and [`Syscall::Sigqueueinfo`] if it
/// was not the write's).
#[doc(alias = "write(2)")]
#[doc(alias = "SIGPIPE")]
pub fn write_nosigpipe(fd: BorrowedFd<'_>, buf: &[u8]) -> io::Result<usize> {
    #[cfg(feature = "simulation")]
    crate::sim::hook!(crate::sim::ops::write(fd, buf, crate::Syscall::Write));
    without_sigpipe(buf.len(), || crate::write(fd, buf))
}

/// `writev(fd, iov, iovcnt)` with `SIGPIPE` blocked: like
/// [`writev`](crate::writev), with the `SIGPIPE` handling of
/// [`write_nosigpipe`].
///
/// Man page: <https://man7.org/linux/man-pages/man2/writev.2.html>
///
/// Only the first [`IOV_MAX`] buffers are used. Retried on
/// `EINTR`. Counted as [`Syscall::Writev`] per attempt, plus the signal
/// calls of [`write_nosigpipe`].
#[doc(alias = "writev(2)")]
#[doc(alias = "SIGPIPE")]
pub fn writev_nosigpipe(fd: BorrowedFd<'_>, bufs: &[IoSlice<'_>]) -> io::Result<usize> {
    #[cfg(feature = "simulation")]
    crate::sim::hook!(crate::sim::ops::writev(fd, bufs, crate::Syscall::Writev));
    let len = bufs
        .iter()
        .take(IOV_MAX)
        .fold(0usize, |acc, b| acc.saturating_add(b.len()));
    without_sigpipe(len, || crate::writev(fd, bufs))
}
