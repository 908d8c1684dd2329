//! Child processes through pidfds.
//!
//! A pidfd is a descriptor that refers to one process, not to a number: it
//! cannot be fooled by pid reuse. The loop opens one for each child it
//! spawns ([`pidfd_open`]), waits for it to become readable in epoll (which
//! happens when the child exits), then reaps the child with
//! [`waitid_pidfd`]; [`pidfd_send_signal`] signals the child without the
//! race of `kill(pid, ...)` against a reaped-and-reused pid. No `SIGCHLD`
//! handler is needed, and children spawned by other code are left alone.
//!
//! Needs Linux 5.3 (`pidfd_open`), 5.1 (`pidfd_send_signal`) and 5.4
//! (`waitid(P_PIDFD)`); on older kernels the calls fail with an error of
//! kind [`io::ErrorKind::Unsupported`] that says so.

use std::io;
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd};

use crate::Syscall;
use crate::call::{call, call_retry_eintr};

/// Turns `ENOSYS` (the kernel lacks the call) into an error that says so.
fn explain_enosys(e: io::Error, what: &str, since: &str) -> io::Error {
    if e.raw_os_error() == Some(libc::ENOSYS) {
        io::Error::new(
            io::ErrorKind::Unsupported,
            format!("{what} is not supported by this kernel (ENOSYS: pidfds need Linux {since} or later)"),
        )
    } else {
        e
    }
}

/// `syscall(SYS_pidfd_open, pid, 0)`: a descriptor referring to the process
/// `pid`.
///
/// Man page: <https://man7.org/linux/man-pages/man2/pidfd_open.2.html>
///
/// * The descriptor is close-on-exec (always, for pidfds). It is *not*
///   non-blocking: `O_NONBLOCK` (`PIDFD_NONBLOCK`) would only make
///   `waitid` fail with `EAGAIN` instead of waiting, and
///   [`waitid_pidfd`] has its own `nohang` for that.
/// * It becomes readable (`EPOLLIN`) once the process has exited: for a
///   child, when it is a zombie waiting to be reaped. It is never read.
/// * To be race-free, open it while the child cannot have been reaped yet:
///   right after spawning it, before anything waits for it.
/// * `ESRCH`: no such process; `EINVAL`: `pid <= 0`, or `pid` is a thread
///   that is not a thread-group leader. `ENOSYS` (Linux older than 5.3) is
///   an [`io::ErrorKind::Unsupported`] error that says so.
///
/// Counted as [`Syscall::PidfdOpen`].
#[doc(alias = "pidfd_open(2)")]
pub fn pidfd_open(pid: i32) -> io::Result<OwnedFd> {
    let ret = call(Syscall::PidfdOpen, || {
        // SAFETY: pidfd_open takes a pid and a flags word and touches no user memory; both
        // are passed as `long`, the width the variadic `syscall(2)` reads.
        unsafe { libc::syscall(libc::SYS_pidfd_open, libc::c_long::from(pid), 0 as libc::c_long) }
    })
    .map_err(|e| explain_enosys(e, "pidfd_open", "5.3"))?;
    // A descriptor always fits in an int.
    let fd = libc::c_int::try_from(ret).map_err(|_| io::Error::from_raw_os_error(libc::EBADF))?;
    #[cfg(feature = "simulation")]
    if crate::sim::active() {
        crate::sim::ops::real_fd_created(fd);
    }
    // SAFETY: on success the kernel returned a new descriptor that nothing else in this
    // process owns; the OwnedFd becomes its only owner.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// `syscall(SYS_pidfd_send_signal, pidfd, signal, NULL, 0)`: sends `signal`
/// to the process `pidfd` refers to.
///
/// Man page: <https://man7.org/linux/man-pages/man2/pidfd_send_signal.2.html>
///
/// Race-free against pid reuse: the pidfd names the process itself, so a
/// child that was reaped gives `ESRCH` instead of hitting whatever process
/// got its number. A child that exited but is not reaped yet (a zombie)
/// accepts the signal and ignores it. Signal 0 only checks that the process
/// exists. `EINVAL` for an invalid signal number, `EBADF` if `pidfd` is not
/// a pidfd, `EPERM` without permission. `ENOSYS` (Linux older than 5.1) is
/// an [`io::ErrorKind::Unsupported`] error that says so.
///
/// Counted as [`Syscall::PidfdSendSignal`].
#[doc(alias = "pidfd_send_signal(2)")]
pub fn pidfd_send_signal(pidfd: BorrowedFd<'_>, signal: i32) -> io::Result<()> {
    call(Syscall::PidfdSendSignal, || {
        // SAFETY: the info pointer is NULL (the kernel then fills in the same siginfo kill(2)
        // would) and the flags are 0, so no user memory is read or written. Arguments are
        // passed as `long`, the width the variadic `syscall(2)` reads.
        unsafe {
            libc::syscall(
                libc::SYS_pidfd_send_signal,
                libc::c_long::from(pidfd.as_raw_fd()),
                libc::c_long::from(signal),
                std::ptr::null::<libc::siginfo_t>(),
                0 as libc::c_long,
            )
        }
    })
    .map_err(|e| explain_enosys(e, "pidfd_send_signal", "5.1"))?;
    Ok(())
}

/// How a child ended.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum ExitStatus {
    /// It called `exit(code)` (or returned `code` from `main`); `code` is
    /// the low 8 bits, 0..=255.
    Exited(i32),
    /// A signal killed it.
    Signaled {
        /// The signal number.
        signal: i32,
        /// It dumped core (`WCOREDUMP`).
        core_dumped: bool,
    },
}

/// `waitid(P_PIDFD, pidfd, &info, WEXITED | (nohang ? WNOHANG : 0))`: reaps
/// the child `pidfd` refers to and reports how it ended.
///
/// Man page: <https://man7.org/linux/man-pages/man2/waitid.2.html>
///
/// * `nohang == false` blocks until the child exits; call it once the pidfd
///   is readable and it returns at once. With `nohang == true` a child
///   still running gives `Ok(None)` and is left alone.
/// * Reaping frees the child's process-table entry: no zombie remains, and
///   a second call is `ECHILD`, as is a process that is not a child of the
///   caller (another thread's `waitpid(-1, ...)`, or a `SIGCHLD` set to
///   `SIG_IGN`, may have reaped it first).
/// * Only exits are waited for (`WEXITED`), not stops or continues.
/// * `EINVAL` here can only mean the kernel does not know `P_PIDFD` (Linux
///   older than 5.4); it is reported, like `ENOSYS`, as an
///   [`io::ErrorKind::Unsupported`] error that says so.
///
/// Retried on `EINTR` (nothing was reaped). A report the call cannot
/// produce with these flags (a stopped child) is
/// [`io::ErrorKind::InvalidData`].
/// Counted as [`Syscall::Waitid`], once per attempt.
#[doc(alias = "waitid(2)")]
#[doc(alias = "waitpid")]
#[doc(alias = "P_PIDFD")]
pub fn waitid_pidfd(pidfd: BorrowedFd<'_>, nohang: bool) -> io::Result<Option<ExitStatus>> {
    // A borrowed descriptor is never negative.
    let id = libc::id_t::try_from(pidfd.as_raw_fd()).map_err(|_| io::Error::from_raw_os_error(libc::EBADF))?;
    let options = libc::WEXITED | if nohang { libc::WNOHANG } else { 0 };
    // SAFETY: `siginfo_t` is plain data; all-zero bytes are a valid value (and the one
    // WNOHANG relies on: si_pid stays 0 when no child has changed state).
    let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
    call_retry_eintr(Syscall::Waitid, || {
        // SAFETY: the kernel writes one `siginfo_t` into `info`, a live local of that type.
        unsafe { libc::waitid(libc::P_PIDFD, id, &mut info, options) }
    })
    .map_err(|e| match e.raw_os_error() {
        Some(libc::EINVAL) => io::Error::new(
            io::ErrorKind::Unsupported,
            "waitid(P_PIDFD) is not supported by this kernel (EINVAL: needs Linux 5.4 or later)",
        ),
        _ => explain_enosys(e, "waitid(P_PIDFD)", "5.4"),
    })?;
    decode_exit(&info, "waitid(P_PIDFD)")
}

/// `waitid(P_PID, pid, &info, WEXITED | (nohang ? WNOHANG : 0) | (nowait ? WNOWAIT : 0))`: how
/// the child `pid` ended, for kernels (or sandboxes: valgrind, seccomp filters) without pidfds.
///
/// Man page: <https://man7.org/linux/man-pages/man2/waitid.2.html>
///
/// * `nowait == true` leaves the child a zombie (`WNOWAIT`): its pid stays its own, so a later
///   `kill(pid, ..)` cannot reach a process that reused it, until a call without `nowait` reaps
///   it. This is how a thread can wait for the exit while the owner of the child reaps it.
/// * `nohang == true`: a child still running gives `Ok(None)`.
/// * `ECHILD`: not a child of this process, or reaped already (by another `waitpid`, or
///   because `SIGCHLD` is ignored).
///
/// Retried on `EINTR`. Counted as [`Syscall::Waitid`], once per attempt.
#[doc(alias = "waitid(2)")]
#[doc(alias = "P_PID")]
#[doc(alias = "WNOWAIT")]
pub fn waitid_pid(pid: i32, nohang: bool, nowait: bool) -> io::Result<Option<ExitStatus>> {
    let id = libc::id_t::try_from(pid).map_err(|_| io::Error::from_raw_os_error(libc::ECHILD))?;
    let options = libc::WEXITED | if nohang { libc::WNOHANG } else { 0 } | if nowait { libc::WNOWAIT } else { 0 };
    // SAFETY: `siginfo_t` is plain data; all-zero bytes are a valid value (and the one
    // WNOHANG relies on: si_pid stays 0 when no child has changed state).
    let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
    call_retry_eintr(Syscall::Waitid, || {
        // SAFETY: the kernel writes one `siginfo_t` into `info`, a live local of that type.
        unsafe { libc::waitid(libc::P_PID, id, &mut info, options) }
    })?;
    decode_exit(&info, "waitid(P_PID)")
}

/// The exit a `waitid(.., WEXITED)` reported in `info`; `None` when it reported nothing (WNOHANG,
/// still running).
fn decode_exit(info: &libc::siginfo_t, what: &str) -> io::Result<Option<ExitStatus>> {
    // SAFETY: `info` was zeroed and then filled in by the kernel for a SIGCHLD-style report,
    // so the `_sigchld` member of the union (pid, uid, status) is the one to read.
    let (pid, status) = unsafe { (info.si_pid(), info.si_status()) };
    if pid == 0 {
        // Only possible with WNOHANG: the child has not exited yet.
        return Ok(None);
    }
    match info.si_code {
        libc::CLD_EXITED => Ok(Some(ExitStatus::Exited(status))),
        libc::CLD_KILLED => Ok(Some(ExitStatus::Signaled {
            signal: status,
            core_dumped: false,
        })),
        libc::CLD_DUMPED => Ok(Some(ExitStatus::Signaled {
            signal: status,
            core_dumped: true,
        })),
        code => Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("{what} reported si_code {code}, not an exit"),
        )),
    }
}

/// Makes `cmd`'s child start with an empty signal mask and `SIGPIPE` at its default action,
/// whatever the spawning thread blocks or ignores: a `pre_exec` hook that runs, in the child
/// between `fork` and `exec`, `pthread_sigmask(SIG_SETMASK, {})` and `signal(SIGPIPE,
/// SIG_DFL)`.
///
/// Man pages: <https://man7.org/linux/man-pages/man3/pthread_sigmask.3.html>,
/// <https://man7.org/linux/man-pages/man2/sigaction.2.html>
///
/// * Why: a child inherits its parent thread's signal mask and ignored signals, and most
///   programs never reset them. An event loop that blocks `SIGPIPE` while it writes to pipes
///   (see [`block_sigpipe_on_this_thread`](crate::block_sigpipe_on_this_thread)) would
///   otherwise hand a blocked `SIGPIPE` to every child (`yes | head` would then print
///   "Broken pipe" instead of dying quietly). std's `Command` resets the `SIGPIPE` disposition
///   but not the mask.
/// * The hook forces std to spawn with `fork` + `exec` instead of `posix_spawn`.
/// * Not counted: the calls happen in the child.
#[doc(alias = "pre_exec")]
pub fn reset_signals_on_exec(cmd: &mut std::process::Command) {
    use std::os::unix::process::CommandExt;
    // SAFETY: `pre_exec` runs the closure in the forked child before `exec`, where only
    // async-signal-safe functions may be called and no lock may be taken: `sigemptyset`,
    // `pthread_sigmask` and `signal` are async-signal-safe, the closure allocates nothing and
    // touches only its own stack (the `sigset_t`), and it returns `Ok` without formatting.
    unsafe {
        cmd.pre_exec(|| {
            let mut set: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&mut set);
            libc::pthread_sigmask(libc::SIG_SETMASK, &set, std::ptr::null_mut());
            libc::signal(libc::SIGPIPE, libc::SIG_DFL);
            Ok(())
        });
    }
}

/// Makes `exec` close every descriptor of `cmd`'s child above stderr, except those in `keep`
/// (asyncio's and Python's `close_fds=True` with `pass_fds`): a `pre_exec` hook that runs, in
/// the child between `fork` and `exec`, `close_range(3, ~0, CLOSE_RANGE_CLOEXEC)` and then
/// clears `FD_CLOEXEC` on each descriptor of `keep` (`fcntl(F_SETFD)`).
///
/// Man pages: <https://man7.org/linux/man-pages/man2/close_range.2.html>,
/// <https://man7.org/linux/man-pages/man2/fcntl.2.html>
///
/// * Why: descriptors this crate and std open are close-on-exec already, but a process may
///   have inherited others from its own parent (a shell's, a CI runner's), and a library's fd
///   opened without `O_CLOEXEC` would leak into every child: a held pipe end keeps a reader
///   from seeing end of file, a held socket keeps a port busy.
/// * Marked close-on-exec rather than closed, so that std's own report pipe (which tells the
///   parent an `exec` failed) keeps working until the `exec`.
/// * Kernels before 5.11 have no `CLOSE_RANGE_CLOEXEC`: the hook then marks descriptors one
///   by one up to the `RLIMIT_NOFILE` soft limit (at most 2^20 of them).
/// * A number in `keep` that is not open in the child is skipped; `keep` may name 0, 1 or 2.
/// * Not counted: the calls happen in the child.
///
/// ```
/// use std::io::Read;
/// use std::os::fd::AsRawFd;
/// use std::process::Command;
///
/// let (r, w) = evloop_syscalls::pipe2()?; // both ends close-on-exec
/// let mut r = std::fs::File::from(r);
/// let mut cmd = Command::new("sh");
/// cmd.args(["-c", &format!("echo passed >&{}", w.as_raw_fd())]);
/// evloop_syscalls::close_fds_on_exec(&mut cmd, vec![w.as_raw_fd()]);
/// assert!(cmd.status()?.success());
/// drop(w);
/// let mut got = String::new();
/// r.read_to_string(&mut got)?;
/// assert_eq!(got, "passed\n");
/// # Ok::<(), std::io::Error>(())
/// ```
#[doc(alias = "close_range")]
#[doc(alias = "close_fds")]
#[doc(alias = "pass_fds")]
pub fn close_fds_on_exec(cmd: &mut std::process::Command, keep: Vec<std::os::fd::RawFd>) {
    fds_on_exec(cmd, true, keep);
}

/// Makes `cmd`'s child keep the descriptors in `keep` across `exec` even when they are
/// close-on-exec (Python's `pass_fds` with `close_fds=False`): a `pre_exec` hook that clears
/// `FD_CLOEXEC` on each of them in the child (`fcntl(F_SETFD)`); every other descriptor is
/// left as it is. See [`close_fds_on_exec`] for the variant that also closes the rest.
///
/// Man page: <https://man7.org/linux/man-pages/man2/fcntl.2.html>
///
/// * Not counted: the calls happen in the child.
///
/// ```
/// use std::os::fd::AsRawFd;
/// use std::process::Command;
///
/// let (_r, w) = evloop_syscalls::pipe2()?; // close-on-exec
/// let mut cmd = Command::new("sh");
/// cmd.args(["-c", &format!("[ -e /proc/self/fd/{} ]", w.as_raw_fd())]);
/// evloop_syscalls::keep_fds_on_exec(&mut cmd, vec![w.as_raw_fd()]);
/// assert!(cmd.status()?.success()); // the child has it
/// # Ok::<(), std::io::Error>(())
/// ```
#[doc(alias = "pass_fds")]
pub fn keep_fds_on_exec(cmd: &mut std::process::Command, keep: Vec<std::os::fd::RawFd>) {
    fds_on_exec(cmd, false, keep);
}

fn fds_on_exec(cmd: &mut std::process::Command, close_others: bool, keep: Vec<std::os::fd::RawFd>) {
    use std::os::unix::process::CommandExt;
    // SAFETY: `pre_exec` runs the closure in the forked child before `exec`, where only
    // async-signal-safe functions may be called and no lock may be taken: the closure makes
    // raw system calls (close_range, getrlimit, fcntl) that take integers or a pointer to its
    // own stack (the rlimit), allocates nothing (`keep` was allocated in the parent and is only
    // read), and returns `Ok` without formatting.
    unsafe {
        cmd.pre_exec(move || {
            if close_others {
                let first: libc::c_uint = 3;
                let all = libc::syscall(
                    libc::SYS_close_range,
                    first,
                    libc::c_uint::MAX,
                    libc::CLOSE_RANGE_CLOEXEC,
                );
                if all != 0 {
                    let mut lim: libc::rlimit = std::mem::zeroed();
                    let top = if libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) == 0 {
                        lim.rlim_cur.min(1 << 20) as libc::c_int
                    } else {
                        1024
                    };
                    for fd in 3..top {
                        let flags = libc::fcntl(fd, libc::F_GETFD);
                        if flags >= 0 && flags & libc::FD_CLOEXEC == 0 {
                            libc::fcntl(fd, libc::F_SETFD, flags | libc::FD_CLOEXEC);
                        }
                    }
                }
            }
            for &fd in &keep {
                let flags = libc::fcntl(fd, libc::F_GETFD);
                if flags >= 0 {
                    libc::fcntl(fd, libc::F_SETFD, flags & !libc::FD_CLOEXEC);
                }
            }
            Ok(())
        });
    }
}
