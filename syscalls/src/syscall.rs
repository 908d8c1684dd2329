//! The [`Syscall`] enum: one variant per kind of call this crate makes.
//!
//! It is the key of the per-thread call counters ([`crate::counters`]) and of
//! fault injection (`crate::fault`). Its discriminants are dense indices
//! `0..Syscall::ALL.len()`, which the counters use to index a plain array;
//! a compile-time check below keeps [`Syscall::ALL`] in that order.

/// One kind of system call (or vDSO call, or C library call) made by a
/// wrapper of this crate.
///
/// [`Syscall::name`] gives the name of the C function the wrapper calls.
/// Some names differ from what `strace` prints, because glibc implements the
/// function with another system call:
///
/// | name | `strace` shows |
/// |---|---|
/// | `eventfd` | `eventfd2` |
/// | `epoll_wait` (aarch64 only, which has no `epoll_wait` system call) | `epoll_pwait` |
/// | `send`, `recv` | `sendto`, `recvfrom` (with no address) |
/// | `open` | `openat(AT_FDCWD, ...)` |
/// | `getrlimit`, `setrlimit` | `prlimit64(0, ...)` |
/// | `pthread_sigmask`, `sigpending`, `sigtimedwait`, `sigaction` | `rt_sigprocmask`, `rt_sigpending`, `rt_sigtimedwait`, `rt_sigaction` |
///
/// [`Syscall::ClockGettime`] never appears at all: it is served by the vDSO
/// without entering the kernel (see [`Syscall::is_vdso`]).
/// [`Syscall::Getaddrinfo`] and [`Syscall::Getnameinfo`] are C library
/// functions that may make any number of system calls of their own (read
/// `/etc/hosts`, talk to a DNS server, ...), none of them counted here (see
/// [`Syscall::is_library_call`]).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Syscall {
    /// `epoll_create1(2)`
    EpollCreate1,
    /// `epoll_ctl(2)` (add, modify and delete)
    EpollCtl,
    /// `epoll_pwait2(2)`
    EpollPwait2,
    /// `epoll_wait(2)`
    EpollWait,
    /// `eventfd(2)` (the `eventfd2` system call)
    Eventfd,
    /// `clock_gettime(2)`, answered by the vDSO
    ClockGettime,
    /// `pipe2(2)`
    Pipe2,
    /// `socketpair(2)`
    Socketpair,
    /// `read(2)`
    Read,
    /// `write(2)`
    Write,
    /// `readv(2)`
    Readv,
    /// `writev(2)`
    Writev,
    /// `close(2)`
    Close,
    /// `prctl(2)`
    Prctl,
    /// `timerfd_create(2)`
    TimerfdCreate,
    /// `timerfd_settime(2)`
    TimerfdSettime,
    /// `fcntl(2)` (also [`dup`](crate::dup)'s `F_DUPFD_CLOEXEC`)
    Fcntl,
    /// `socket(2)`
    Socket,
    /// `bind(2)`
    Bind,
    /// `listen(2)`
    Listen,
    /// `accept4(2)`
    Accept4,
    /// `connect(2)`
    Connect,
    /// `getsockopt(2)`
    Getsockopt,
    /// `setsockopt(2)`
    Setsockopt,
    /// `getsockname(2)`
    Getsockname,
    /// `getpeername(2)`
    Getpeername,
    /// `shutdown(2)`
    Shutdown,
    /// `send(2)` (the `sendto` system call with no address: `strace` shows `sendto`)
    Send,
    /// `recv(2)` (the `recvfrom` system call with no address: `strace` shows `recvfrom`)
    Recv,
    /// `sendmsg(2)`
    Sendmsg,
    /// `sendto(2)`
    Sendto,
    /// `recvfrom(2)`
    Recvfrom,
    /// `sendfile(2)`
    Sendfile,
    /// `open(2)` (glibc issues `openat(AT_FDCWD, ...)`, which is what `strace` shows)
    Open,
    /// `getrlimit(2)` (glibc issues `prlimit64(0, ...)`, which is what `strace` shows)
    Getrlimit,
    /// `setrlimit(2)` (glibc issues `prlimit64(0, ...)`, which is what `strace` shows)
    Setrlimit,
    /// `getaddrinfo(3)`: a C library call, not a system call (see [`Syscall::is_library_call`])
    Getaddrinfo,
    /// `getnameinfo(3)`: a C library call, not a system call (see [`Syscall::is_library_call`])
    Getnameinfo,
    /// `pthread_sigmask(3)` (`rt_sigprocmask` in `strace`)
    Sigprocmask,
    /// `sigpending(2)` (`rt_sigpending` in `strace`)
    Sigpending,
    /// `sigtimedwait(2)` (`rt_sigtimedwait` in `strace`)
    Sigtimedwait,
    /// `sigaction(2)` (`rt_sigaction` in `strace`)
    Sigaction,
    /// `kill(2)`
    Kill,
    /// `getpid(2)`
    Getpid,
    /// `pidfd_open(2)`
    PidfdOpen,
    /// `pidfd_send_signal(2)`
    PidfdSendSignal,
    /// `waitid(2)`
    Waitid,
    /// `mmap(2)` (anonymous mappings: fiber stacks, alternate signal stacks)
    Mmap,
    /// `munmap(2)`
    Munmap,
    /// `mprotect(2)`
    Mprotect,
    /// `madvise(2)`
    Madvise,
    /// `sigaltstack(2)`
    Sigaltstack,
    /// `rt_sigqueueinfo(2)` (a `SIGPIPE` that was not this process's own put back)
    Sigqueueinfo,
    /// `sched_setaffinity(2)`
    SchedSetaffinity,
    /// `sched_getaffinity(2)`
    SchedGetaffinity,
    /// `getcpu(2)` (glibc's `sched_getcpu`, answered by the vDSO on x86_64)
    Getcpu,
}

/// Number of [`Syscall`] variants (the length of [`Syscall::ALL`]).
pub(crate) const SYSCALL_COUNT: usize = Syscall::ALL.len();

impl Syscall {
    /// Every variant, in declaration order; `ALL[s.index()] == s`.
    pub const ALL: &'static [Syscall] = &[
        Syscall::EpollCreate1,
        Syscall::EpollCtl,
        Syscall::EpollPwait2,
        Syscall::EpollWait,
        Syscall::Eventfd,
        Syscall::ClockGettime,
        Syscall::Pipe2,
        Syscall::Socketpair,
        Syscall::Read,
        Syscall::Write,
        Syscall::Readv,
        Syscall::Writev,
        Syscall::Close,
        Syscall::Prctl,
        Syscall::TimerfdCreate,
        Syscall::TimerfdSettime,
        Syscall::Fcntl,
        Syscall::Socket,
        Syscall::Bind,
        Syscall::Listen,
        Syscall::Accept4,
        Syscall::Connect,
        Syscall::Getsockopt,
        Syscall::Setsockopt,
        Syscall::Getsockname,
        Syscall::Getpeername,
        Syscall::Shutdown,
        Syscall::Send,
        Syscall::Recv,
        Syscall::Sendmsg,
        Syscall::Sendto,
        Syscall::Recvfrom,
        Syscall::Sendfile,
        Syscall::Open,
        Syscall::Getrlimit,
        Syscall::Setrlimit,
        Syscall::Getaddrinfo,
        Syscall::Getnameinfo,
        Syscall::Sigprocmask,
        Syscall::Sigpending,
        Syscall::Sigtimedwait,
        Syscall::Sigaction,
        Syscall::Kill,
        Syscall::Getpid,
        Syscall::PidfdOpen,
        Syscall::PidfdSendSignal,
        Syscall::Waitid,
        Syscall::Mmap,
        Syscall::Munmap,
        Syscall::Mprotect,
        Syscall::Madvise,
        Syscall::Sigaltstack,
        Syscall::Sigqueueinfo,
        Syscall::SchedSetaffinity,
        Syscall::SchedGetaffinity,
        Syscall::Getcpu,
    ];

    /// The name of the C function, e.g. `"epoll_ctl"`.
    pub const fn name(self) -> &'static str {
        match self {
            Syscall::EpollCreate1 => "epoll_create1",
            Syscall::EpollCtl => "epoll_ctl",
            Syscall::EpollPwait2 => "epoll_pwait2",
            Syscall::EpollWait => "epoll_wait",
            Syscall::Eventfd => "eventfd",
            Syscall::ClockGettime => "clock_gettime",
            Syscall::Pipe2 => "pipe2",
            Syscall::Socketpair => "socketpair",
            Syscall::Read => "read",
            Syscall::Write => "write",
            Syscall::Readv => "readv",
            Syscall::Writev => "writev",
            Syscall::Close => "close",
            Syscall::Prctl => "prctl",
            Syscall::TimerfdCreate => "timerfd_create",
            Syscall::TimerfdSettime => "timerfd_settime",
            Syscall::Fcntl => "fcntl",
            Syscall::Socket => "socket",
            Syscall::Bind => "bind",
            Syscall::Listen => "listen",
            Syscall::Accept4 => "accept4",
            Syscall::Connect => "connect",
            Syscall::Getsockopt => "getsockopt",
            Syscall::Setsockopt => "setsockopt",
            Syscall::Getsockname => "getsockname",
            Syscall::Getpeername => "getpeername",
            Syscall::Shutdown => "shutdown",
            Syscall::Send => "send",
            Syscall::Recv => "recv",
            Syscall::Sendmsg => "sendmsg",
            Syscall::Sendto => "sendto",
            Syscall::Recvfrom => "recvfrom",
            Syscall::Sendfile => "sendfile",
            Syscall::Open => "open",
            Syscall::Getrlimit => "getrlimit",
            Syscall::Setrlimit => "setrlimit",
            Syscall::Getaddrinfo => "getaddrinfo",
            Syscall::Getnameinfo => "getnameinfo",
            Syscall::Sigprocmask => "pthread_sigmask",
            Syscall::Sigpending => "sigpending",
            Syscall::Sigtimedwait => "sigtimedwait",
            Syscall::Sigaction => "sigaction",
            Syscall::Kill => "kill",
            Syscall::Getpid => "getpid",
            Syscall::PidfdOpen => "pidfd_open",
            Syscall::PidfdSendSignal => "pidfd_send_signal",
            Syscall::Waitid => "waitid",
            Syscall::Mmap => "mmap",
            Syscall::Munmap => "munmap",
            Syscall::Mprotect => "mprotect",
            Syscall::Madvise => "madvise",
            Syscall::Sigaltstack => "sigaltstack",
            Syscall::Sigqueueinfo => "rt_sigqueueinfo",
            Syscall::SchedSetaffinity => "sched_setaffinity",
            Syscall::SchedGetaffinity => "sched_getaffinity",
            Syscall::Getcpu => "sched_getcpu",
        }
    }

    /// `true` for calls answered by the vDSO in user space
    /// ([`Syscall::ClockGettime`]): they cost no kernel entry and `strace`
    /// never shows them.
    pub const fn is_vdso(self) -> bool {
        matches!(self, Syscall::ClockGettime)
    }

    /// `true` for C library functions ([`Syscall::Getaddrinfo`],
    /// [`Syscall::Getnameinfo`]) that are not one system call but an unknown
    /// number of them (from none, for a numeric address, to dozens: files,
    /// sockets to a DNS server, NSS modules). Their wrappers count one call
    /// each, but the system calls they make inside the C library are not
    /// counted anywhere, and
    /// [`Counts::total_syscalls`](crate::counters::Counts::total_syscalls)
    /// leaves them out rather than pretend they cost exactly one.
    pub const fn is_library_call(self) -> bool {
        matches!(self, Syscall::Getaddrinfo | Syscall::Getnameinfo)
    }

    /// `true` when one call of this kind is exactly one kernel entry that
    /// `strace` would show: neither a vDSO call ([`Syscall::is_vdso`]) nor a
    /// library call ([`Syscall::is_library_call`]).
    pub const fn is_syscall(self) -> bool {
        !self.is_vdso() && !self.is_library_call()
    }

    /// Dense index of this variant, `0..Syscall::ALL.len()`.
    pub(crate) const fn index(self) -> usize {
        self as usize
    }
}

impl std::fmt::Display for Syscall {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

// Compile-time check that `ALL` lists every variant at its own index, so the
// counters' array indexing by `index()` matches `ALL`'s order.
const _: () = {
    let mut i = 0;
    while i < Syscall::ALL.len() {
        assert!(Syscall::ALL[i].index() == i);
        i += 1;
    }
};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn all_lists_every_variant_once_with_distinct_names() {
        let mut names: Vec<&str> = Syscall::ALL.iter().map(|s| s.name()).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), Syscall::ALL.len());
        assert_eq!(SYSCALL_COUNT, 56);
    }

    #[test]
    fn only_resolver_calls_are_library_calls() {
        for &s in Syscall::ALL {
            let lib = matches!(s, Syscall::Getaddrinfo | Syscall::Getnameinfo);
            assert_eq!(s.is_library_call(), lib, "{s}");
            assert_eq!(s.is_syscall(), !lib && !s.is_vdso(), "{s}");
        }
    }

    #[test]
    fn only_clock_gettime_is_vdso() {
        for &s in Syscall::ALL {
            assert_eq!(s.is_vdso(), s == Syscall::ClockGettime, "{s}");
        }
    }
}
