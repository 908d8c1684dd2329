//! The [`Syscall`] enum: one variant per kind of call this crate makes.
//!
//! It is the key of the per-thread call counters ([`crate::counters`]) and of
//! fault injection (`crate::fault`). Its discriminants are dense indices
//! `0..Syscall::ALL.len()`, which the counters use to index a plain array;
//! a compile-time check below keeps [`Syscall::ALL`] in that order.

/// One kind of system call (or vDSO call) made by a wrapper of this crate.
///
/// [`Syscall::name`] gives the name of the C function the wrapper calls.
/// Two names differ from what `strace` prints: `eventfd` appears as
/// `eventfd2`, and on aarch64, which has no `epoll_wait` system call, glibc's
/// `epoll_wait` appears as `epoll_pwait`. [`Syscall::ClockGettime`] never
/// appears at all: it is served by the vDSO without entering the kernel
/// (see [`Syscall::is_vdso`]).
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
    /// `fcntl(2)`
    Fcntl,
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
        }
    }

    /// `true` for calls answered by the vDSO in user space
    /// ([`Syscall::ClockGettime`]): they cost no kernel entry and `strace`
    /// never shows them.
    pub const fn is_vdso(self) -> bool {
        matches!(self, Syscall::ClockGettime)
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
        assert_eq!(SYSCALL_COUNT, 17);
    }

    #[test]
    fn only_clock_gettime_is_vdso() {
        for &s in Syscall::ALL {
            assert_eq!(s.is_vdso(), s == Syscall::ClockGettime, "{s}");
        }
    }
}
