//! Typed, counted wrappers over the Linux system calls that evloop needs.
//!
//! This crate holds nearly all of the evloop workspace's `unsafe` code: the
//! runtime crate denies it except in two modules it names (the raw task cell
//! and the fiber register switch), and `evloop-timers` forbids it. Every
//! other crate talks to the kernel through the safe
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
//! timespec`, the `struct sockaddr_*` family) is checked at compile time
//! (see [`EpollEvent`] and [`SockAddr`]).
//!
//! # File descriptors
//!
//! Every descriptor this crate creates is close-on-exec (`O_CLOEXEC` or the
//! call's own `*_CLOEXEC` flag), so it never leaks into a child process, and
//! non-blocking (`O_NONBLOCK`) wherever the flag exists for that kind of file
//! (an epoll instance has no such flag: it is never read with `read(2)`).
//! Three exceptions: [`open_readonly`] opens regular files, for which
//! `O_NONBLOCK` means nothing, without it; [`dup`] shares the status
//! flags of the descriptor it copies (close-on-exec is its own); and
//! [`pidfd_open`] leaves out `PIDFD_NONBLOCK` (a pidfd is never read; the
//! flag would only change `waitid`, and [`waitid_pidfd`] takes `nohang`
//! instead).
//! Created descriptors are returned as [`OwnedFd`], which closes them on drop.
//!
//! # Sockets
//!
//! Sockets ([`socket`], [`socketpair`], [`accept4`]) are created
//! `SOCK_CLOEXEC | SOCK_NONBLOCK`. Every send ([`send`], [`send_vectored`],
//! [`send_to`]) passes `MSG_NOSIGNAL`, so a vanished peer is an `EPIPE` or
//! `ECONNRESET` error and never a `SIGPIPE`; use these rather than
//! [`write()`]/[`writev`] on sockets. Addresses are [`SockAddr`]: IPv4, IPv6
//! or a [`UnixAddr`] (pathname, abstract or unnamed).
//!
//! Pipes have no `MSG_NOSIGNAL`: [`write_nosigpipe`] and
//! [`writev_nosigpipe`] block `SIGPIPE` around the write and take back the
//! signal an `EPIPE` raised, or, on a thread that holds
//! [`block_sigpipe_on_this_thread`]'s guard, only the latter.
//!
//! # Signals and child processes
//!
//! [`register_signal`] delivers a signal to event loops: a process-wide
//! `sigaction` handler writes to each registered eventfd (the design of
//! Python's `set_wakeup_fd` and libuv's signal pipe). Not `signalfd`: it
//! only sees signals blocked in *every* thread (any thread that does not
//! block one takes it with the default action, often fatal), two loops'
//! signalfds would steal each other's signals, and children inherit the
//! blocked mask. A handler broadcasts to every registered loop and leaves
//! masks alone. Children are
//! watched through pidfds: [`pidfd_open`] gives a descriptor that becomes
//! readable when the child exits, [`waitid_pidfd`] reaps it, and
//! [`pidfd_send_signal`] signals it without the pid-reuse race of [`kill`].
//!
//! # Memory for stacks
//!
//! [`mmap_anonymous`] maps the memory fiber stacks are cut from, as a
//! [`Mapping`] that owns its range (it unmaps it when dropped, splits into
//! pieces that own their parts, joins adjacent pieces back);
//! [`Mapping::protect`] and [`Mapping::advise`] install guard pages (with
//! `MADV_GUARD_INSTALL` where the kernel has it, so that a guard does not
//! cost two of the process's `vm.max_map_count` mappings) and give unused
//! stack memory back. [`register_stack_guards`] makes an overflow into one
//! of those guard pages print `fiber '<name>' has overflowed its stack`
//! and abort, like std's report for thread stacks, from a `SIGSEGV`/`SIGBUS`
//! handler that runs on the alternate signal stack
//! ([`ensure_alt_signal_stack`]) and passes every other fault on to the
//! handler it replaced.
//!
//! # EINTR policy
//!
//! A signal delivered to the thread while it sits in a blocking system call
//! makes the call fail with `EINTR`. The wrappers handle it as follows:
//!
//! | call | on `EINTR` | why |
//! |---|---|---|
//! | [`read()`], [`write()`], [`readv`], [`writev`], [`write_nosigpipe`], [`writev_nosigpipe`], [`eventfd_read`], [`eventfd_write`], [`timerfd_read`] | retried | the call transferred nothing, so issuing it again is exactly right |
//! | [`send`], [`send_vectored`], [`send_to`], [`recv`], [`recv_peek`], [`recv_from`], [`sendfile`] | retried | as for `read`/`write`: an interrupted call transferred nothing (one that transferred something returns its count instead) |
//! | [`accept4`] | retried | no connection was taken off the queue |
//! | [`open_readonly`], [`open_dev_null`] | retried | nothing was opened (only an `open` that blocks, on a FIFO or device, can be interrupted) |
//! | [`waitid_pidfd`] | retried | nothing was reaped; the child is still there to wait for (with `SA_RESTART` handlers, such as [`register_signal`]'s, the kernel restarts it by itself) |
//! | [`waitid_pid`] | retried | as for `waitid_pidfd` (the fallback for kernels and sandboxes without pidfds) |
//! | [`connect`] | **not** retried: reported as `EINPROGRESS` | the connection attempt goes on in the background; a second `connect` would fail with `EALREADY`. The caller waits for writability and reads [`take_socket_error`], as for any non-blocking connect |
//! | [`epoll_pwait2`], [`epoll_wait`], [`epoll_wait_timeout`] | **not** retried: returns `Ok(0)` (no events) | a retry with the same relative timeout would wait too long; the caller recomputes its timeout from the clock |
//! | [`close`] | never retried, reported as `Ok(())` | Linux has already released the descriptor when `close` reports `EINTR`; retrying could close a descriptor another thread just opened |
//! | [`getaddrinfo`], [`getnameinfo`] | not applicable | C library functions that handle interruptions inside; their errors pass through |
//! | the signal handler installed by [`register_signal`] | not applicable | its `write` to a non-blocking eventfd cannot block, so cannot be interrupted; it saves and restores `errno` so the interrupted code never sees a changed one |
//!
//! Every other wrapper ([`socket`], [`socketpair`], [`bind`], [`listen`],
//! [`shutdown`], [`local_addr`], [`peer_addr`], the socket options,
//! [`dup`], the rlimit calls, [`register_signal`], [`signal_disposition`],
//! [`kill`], [`getpid`], [`raise_in_process`], [`pidfd_open`],
//! [`pidfd_send_signal`], [`block_sigpipe_on_this_thread`], the memory
//! calls [`mmap_anonymous`], [`Mapping::protect`], [`Mapping::advise`],
//! [`Mapping::unmap`], [`ensure_alt_signal_stack`], ...) makes a
//! call that does not block and
//! therefore does not fail with `EINTR`; it passes any error through
//! unchanged.
//!
//! # Call counters
//!
//! Every wrapper increments a per-thread counter for its [`Syscall`] once per
//! call, including calls that fail and every attempt of an `EINTR` retry
//! loop. The counters cost a few instructions (a thread-local `Cell<u64>`
//! with `const` initialisation); read them with [`counters::snapshot`]. A few
//! wrappers are counted under the system call they really make:
//! [`eventfd_read`] and [`timerfd_read`] count as [`Syscall::Read`],
//! [`eventfd_write`] as [`Syscall::Write`], [`fd_is_open`],
//! [`set_nonblocking`] and [`dup`] (`F_DUPFD_CLOEXEC`) as
//! [`Syscall::Fcntl`], [`recv_peek`] as [`Syscall::Recv`],
//! [`socketpair_stream`] as [`Syscall::Socketpair`], [`open_dev_null`] as
//! [`Syscall::Open`], and every socket option as [`Syscall::Getsockopt`] or
//! [`Syscall::Setsockopt`]. [`write_nosigpipe`] and [`writev_nosigpipe`]
//! count their [`Syscall::Write`]/[`Syscall::Writev`] and each signal-mask
//! call they make ([`Syscall::Sigprocmask`], [`Syscall::Sigpending`],
//! [`Syscall::Sigtimedwait`], and after taking a `SIGPIPE` back
//! [`Syscall::Getpid`] and possibly [`Syscall::Sigqueueinfo`], as does
//! [`sendfile`]); [`register_signal`] counts its two
//! [`Syscall::Fcntl`]s and, for a signal's first registration, a
//! [`Syscall::Sigaction`]; [`signal_disposition`] counts as
//! [`Syscall::Sigaction`]; [`raise_in_process`] as [`Syscall::Getpid`] and
//! [`Syscall::Kill`]. The writes made by the signal handler are **not**
//! counted: a handler must not touch thread-locals.
//!
//! Two more rules keep [`counters::Counts::total_syscalls`] close to what
//! `strace` shows:
//! * an argument rejected before any call (a [`UnixAddr`] too long for
//!   `sun_path`, a path with a NUL byte, a `sendfile` offset beyond
//!   `i64::MAX`) is reported without counting anything: no call was made;
//! * [`getaddrinfo`] and [`getnameinfo`] are C library functions making an
//!   unknown number of system calls; each counts once under its own
//!   [`Syscall`], which [`Syscall::is_library_call`] marks so that
//!   `total_syscalls` leaves it out (like the vDSO's `clock_gettime`).
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
mod cpu;
mod epoll;
mod eventfd;
#[cfg(feature = "fault-injection")]
pub mod fault;
mod fd;
mod file;
mod io;
mod mman;
mod pipe;
mod process;
mod raw;
mod resolve;
mod signal;
mod sigpipe;
#[cfg(feature = "simulation")]
pub mod sim;
mod sockaddr;
mod socket;
mod sockopt;
mod stack_guard;
mod syscall;
mod time;
mod timer;

pub use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, IntoRawFd, OwnedFd, RawFd};
pub use std::time::Duration;

pub use cpu::{
    allowed_cpus, attach_reuseport_cpu_program, current_cpu, incoming_cpu, pin_thread_to_cpu, set_incoming_cpu,
};
#[cfg(feature = "fault-injection")]
pub use epoll::force_epoll_wait_fallback;
pub use epoll::{
    EpollEvent, EpollFlags, epoll_create1, epoll_ctl_add, epoll_ctl_del, epoll_ctl_mod, epoll_pwait2,
    epoll_pwait2_available, epoll_wait, epoll_wait_timeout, epoll_wait_timeout_call,
};
pub use eventfd::{eventfd, eventfd_read, eventfd_write};
pub use fd::{close, fd_is_open, set_cloexec, set_nonblocking};
pub use file::{dup, nofile_limit, open_dev_null, open_readonly, set_nofile_limit};
pub use io::{IOV_MAX, read, readv, write, writev};
pub use mman::{Advice, Mapping, Prot, max_map_count, mmap_anonymous, page_size};
pub use pipe::{pipe2, socketpair_stream};
pub use process::{
    ExitStatus, close_fds_on_exec, keep_fds_on_exec, pidfd_open, pidfd_send_signal, reset_signals_on_exec, waitid_pid,
    waitid_pidfd,
};
pub use resolve::{AddrHints, AddrInfoError, getaddrinfo, getnameinfo};
pub use signal::{
    Disposition, SLOTS_PER_SIGNAL, Signal, SignalRegistration, getpid, kill, raise_in_process, register_signal,
    signal_disposition,
};
pub use sigpipe::{SigpipeBlock, block_sigpipe_on_this_thread, write_nosigpipe, writev_nosigpipe};
pub use sockaddr::{Domain, SockAddr, UnixAddr};
pub use socket::{
    Shutdown, SockType, accept4, bind, connect, listen, local_addr, peek_datagram_len, peer_addr, recv, recv_from,
    recv_peek, send, send_to, send_vectored, sendfile, shutdown, socket, socketpair,
};
pub use sockopt::{
    linger, nodelay, recv_buffer_size, send_buffer_size, set_broadcast, set_keepalive, set_linger, set_linger_zero,
    set_nodelay, set_recv_buffer_size, set_reuseaddr, set_reuseport, set_send_buffer_size, set_ttl, set_v6only,
    socket_type, take_socket_error, ttl,
};
pub use stack_guard::{
    MAX_STACK_REGIONS, STACK_LABEL_LEN, StackGuards, ensure_alt_signal_stack, register_stack_guards,
};
pub use syscall::Syscall;
pub use time::{Clock, clock_gettime, clock_monotonic};
pub use timer::{set_timer_slack, timer_slack, timerfd_create, timerfd_read, timerfd_set_abs};

/// The `errno` values callers compare [`std::io::Error::raw_os_error`] against, so crates above
/// this one need no `libc` dependency of their own.
pub mod errno {
    pub use libc::{
        EACCES, EADDRINUSE, EADDRNOTAVAIL, EAFNOSUPPORT, EAGAIN, EALREADY, EBADF, ECHILD, ECONNABORTED, ECONNREFUSED,
        ECONNRESET, EEXIST, EFAULT, EHOSTDOWN, EHOSTUNREACH, EINPROGRESS, EINTR, EINVAL, EIO, EISCONN, EMFILE,
        EMSGSIZE, ENETDOWN, ENETUNREACH, ENFILE, ENOBUFS, ENOENT, ENOMEM, ENONET, ENOPROTOOPT, ENOSYS, ENOTCONN,
        ENOTSOCK, EOPNOTSUPP, EPERM, EPIPE, EPROTO, ESPIPE, ESRCH, ETIMEDOUT,
    };
}

/// The `EAI_*` codes of [`getaddrinfo`] and [`getnameinfo`] (glibc's
/// values, negative), to compare [`AddrInfoError::code`] against.
pub mod eai {
    pub use libc::{
        EAI_AGAIN, EAI_BADFLAGS, EAI_FAIL, EAI_FAMILY, EAI_MEMORY, EAI_NODATA, EAI_NONAME, EAI_OVERFLOW, EAI_SERVICE,
        EAI_SOCKTYPE, EAI_SYSTEM,
    };
}
