//! Connected descriptor pairs: pipes and Unix stream socket pairs.
//!
//! The loop uses them for self-pipes, subprocess stdio and tests. Both
//! calls create their two descriptors atomically with close-on-exec and
//! non-blocking already set (`O_CLOEXEC | O_NONBLOCK`, `SOCK_CLOEXEC |
//! SOCK_NONBLOCK`), so no other thread's `fork`+`exec` can ever inherit them
//! and no later `fcntl` is needed.

use std::io;
use std::os::fd::{FromRawFd, OwnedFd};

use crate::Syscall;
use crate::call::call;

/// `pipe2(fds, O_CLOEXEC | O_NONBLOCK)`: a new pipe, returned as
/// `(read end, write end)`.
///
/// Man page: <https://man7.org/linux/man-pages/man2/pipe2.2.html>
///
/// Both ends are close-on-exec and non-blocking. `O_NONBLOCK` lives on the
/// open file description, so it is shared by every `dup` of an end.
/// Writing after the read end is closed is `EPIPE` plus `SIGPIPE` (see
/// [`write()`](crate::write)). The default capacity is 64 KiB.
/// Counted as [`Syscall::Pipe2`].
#[doc(alias = "pipe2(2)")]
#[doc(alias = "pipe")]
pub fn pipe2() -> io::Result<(OwnedFd, OwnedFd)> {
    #[cfg(feature = "simulation")]
    crate::sim::hook!(crate::sim::ops::pipe2());
    let mut fds: [libc::c_int; 2] = [-1, -1];
    call(Syscall::Pipe2, || {
        // SAFETY: pipe2 writes exactly two ints to its first argument, which
        // points to the local two-element array `fds`, live for the call.
        unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC | libc::O_NONBLOCK) }
    })?;
    // SAFETY: on success both entries are new descriptors that nothing else
    // in this process owns; each OwnedFd becomes the only owner of one.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

/// `socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0,
/// fds)`: two connected Unix stream sockets.
///
/// Man page: <https://man7.org/linux/man-pages/man2/socketpair.2.html>
///
/// Both ends are close-on-exec and non-blocking, and bidirectional (unlike a
/// pipe). Writing after the peer closed is `EPIPE` plus `SIGPIPE` with
/// [`write()`](crate::write); [`send`](crate::send) never raises `SIGPIPE`.
/// The same as [`socketpair`](crate::socketpair)`(Domain::Unix,
/// SockType::Stream)`. Counted as [`Syscall::Socketpair`].
#[doc(alias = "socketpair")]
pub fn socketpair_stream() -> io::Result<(OwnedFd, OwnedFd)> {
    crate::socketpair(crate::Domain::Unix, crate::SockType::Stream)
}
