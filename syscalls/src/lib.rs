//! Typed, counted wrappers over the Linux system calls that evloop needs.
//!
//! This crate is the only place in the evloop workspace that contains
//! `unsafe` code. Every other crate talks to the kernel through the safe
//! functions exported here, which take Rust types ([`BorrowedFd`],
//! [`OwnedFd`], slices, [`Duration`]) and return [`std::io::Result`] built
//! from `errno` with [`std::io::Error::last_os_error`].
//!
//! Each wrapper's documentation starts with the exact C call it makes, links
//! the man page, and points out where the kernel behaves in a surprising way.
//! Every `unsafe` block carries a `// SAFETY:` comment naming the kernel
//! memory the call reads or writes and why the pointer/length pairs are valid.
//!
//! # Platform
//!
//! Linux only, tested on x86_64 and aarch64 with glibc. The layout of the
//! structures shared with the kernel (`struct epoll_event`, `struct
//! timespec`) is checked at compile time (see [`EpollEvent`]).
//!
//! # File descriptors
//!
//! Every descriptor this crate creates is close-on-exec (`O_CLOEXEC` or the
//! call's own `*_CLOEXEC` flag), so it never leaks into a child process, and
//! non-blocking (`O_NONBLOCK`) wherever the flag exists for that kind of file
//! (an epoll instance has no such flag: it is never read with `read(2)`).
//! Created descriptors are returned as [`OwnedFd`], which closes them on drop.
//!
//! # EINTR policy
//!
//! A signal delivered to the thread while it sits in a blocking system call
//! makes the call fail with `EINTR`. The wrappers handle it as follows:
//!
//! | call | on `EINTR` | why |
//! |---|---|---|
//! | [`read()`], [`write()`], [`readv`], [`writev`], [`eventfd_read`], [`eventfd_write`], [`timerfd_read`] | retried | the call transferred nothing, so issuing it again is exactly right |
//! | [`epoll_pwait2`], [`epoll_wait`], [`epoll_wait_timeout`] | **not** retried: returns `Ok(0)` (no events) | a retry with the same relative timeout would wait too long; the caller recomputes its timeout from the clock |
//! | [`close`] | never retried, reported as `Ok(())` | Linux has already released the descriptor when `close` reports `EINTR`; retrying could close a descriptor another thread just opened |
//!
//! Every other wrapper makes a call that does not block and therefore does not
//! fail with `EINTR`; it passes any error through unchanged.
//!
//! # Call counters
//!
//! Every wrapper increments a per-thread counter for its [`Syscall`] once per
//! call, including calls that fail and every attempt of an `EINTR` retry
//! loop. The counters cost a few instructions (a thread-local `Cell<u64>`
//! with `const` initialisation); read them with [`counters::snapshot`]. A few
//! wrappers are counted under the system call they really make:
//! [`eventfd_read`] and [`timerfd_read`] count as [`Syscall::Read`],
//! [`eventfd_write`] as [`Syscall::Write`], [`fd_is_open`] and
//! [`set_nonblocking`] as [`Syscall::Fcntl`].
//!
//! # Fault injection
//!
//! With the `fault-injection` feature, the `fault` module lets a test make
//! the n-th next call of a wrapper on the current thread fail with a chosen
//! `errno` without entering the kernel. Injected errors travel the same path
//! as real ones (an injected `EINTR` is retried by [`read()`] and turned into
//! `Ok(0)` by [`epoll_wait_timeout`]). Without the feature the check is not
//! compiled at all.

#![deny(unsafe_op_in_unsafe_fn)]
#![deny(clippy::undocumented_unsafe_blocks)]
#![deny(missing_docs)]

#[cfg(not(target_os = "linux"))]
compile_error!("evloop-syscalls wraps Linux system calls and builds only for target_os = \"linux\"");

mod call;
pub mod counters;
mod epoll;
mod eventfd;
#[cfg(feature = "fault-injection")]
pub mod fault;
mod fd;
mod io;
mod pipe;
mod syscall;
mod time;
mod timer;

pub use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, IntoRawFd, OwnedFd, RawFd};
pub use std::time::Duration;

#[cfg(feature = "fault-injection")]
pub use epoll::force_epoll_wait_fallback;
pub use epoll::{
    epoll_create1, epoll_ctl_add, epoll_ctl_del, epoll_ctl_mod, epoll_pwait2, epoll_pwait2_available, epoll_wait,
    epoll_wait_timeout, EpollEvent, EpollFlags,
};
pub use eventfd::{eventfd, eventfd_read, eventfd_write};
pub use fd::{close, fd_is_open, set_nonblocking};
pub use io::{read, readv, write, writev, IOV_MAX};
pub use pipe::{pipe2, socketpair_stream};
pub use syscall::Syscall;
pub use time::{clock_gettime, clock_monotonic, Clock};
pub use timer::{set_timer_slack, timer_slack, timerfd_create, timerfd_read, timerfd_set_abs};

/// The `errno` values callers compare [`std::io::Error::raw_os_error`] against, so crates above
/// this one need no `libc` dependency of their own.
pub mod errno {
    pub use libc::{EAGAIN, EBADF, EEXIST, EINTR, EINVAL, EMFILE, ENFILE, ENOENT, ENOMEM, ENOSYS, EPERM, EPIPE};
}
