//! Real descriptors behind simulated files: how the simulated kernel hands out fd numbers that
//! `OwnedFd` may close, and how it learns that they were closed.
//!
//! Every simulated file (socket, epoll instance, eventfd, pipe end) is backed by a real pipe.
//! The program gets the pipe's *write end*: a real, open descriptor, so `OwnedFd::drop` (which
//! calls libc's `close` directly, not a wrapper, and in debug builds aborts on `EBADF`) closes
//! it like any other. The simulator keeps the *read end*, registered in one real epoll instance
//! per kernel (the "watch") with the simulated file's id as its data. Closing the last
//! descriptor of the write end (the program's `close`, a drop, a `dup` closed last) makes the
//! read end report `EPOLLHUP`: [`Watch::reap`] collects those with a zero-timeout
//! `epoll_wait`. Anything written to the write end from outside the simulation (a thread that
//! did not enter the kernel, or a signal handler writing an eventfd) shows up as readable data
//! on the read end, which the kernel turns into eventfd increments.
//!
//! Cost: two real descriptors and one `pipe2` plus one `epoll_ctl` per simulated file, one
//! `close` of the read end when the file goes, and one `epoll_wait(0)` per reap. When the
//! kernel reaps is described in the module docs of `sim` ("Descriptors"); a `close` made
//! through the wrapper reaps at once.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

use crate::sim::state::FileId;

/// What a reap found for one simulated file.
pub(crate) struct Reaped {
    pub(crate) id: FileId,
    /// Bytes written to the program's end from outside the simulation.
    pub(crate) written: Vec<u8>,
    /// Every descriptor of the program's end is closed.
    pub(crate) closed: bool,
}

/// The real epoll instance watching every backing pipe's read end.
pub(crate) struct Watch {
    epoll: OwnedFd,
    events: Vec<libc::epoll_event>,
    /// Real system calls made for the simulation (for the speed report).
    pub(crate) real_calls: u64,
}

fn last_error() -> io::Error {
    io::Error::last_os_error()
}

impl Watch {
    pub(crate) fn new() -> io::Result<Watch> {
        // SAFETY: epoll_create1 takes an integer flag and touches no user memory.
        let fd = unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) };
        if fd < 0 {
            return Err(last_error());
        }
        Ok(Watch {
            // SAFETY: a new descriptor that nothing else owns.
            epoll: unsafe { OwnedFd::from_raw_fd(fd) },
            events: vec![libc::epoll_event { events: 0, u64: 0 }; 64],
            real_calls: 1,
        })
    }

    /// The watch's own descriptor (a thread waiting for outside activity waits on it).
    pub(crate) fn raw(&self) -> RawFd {
        self.epoll.as_raw_fd()
    }

    /// A new backing pipe for file `id`: returns the program's end (as a raw number the caller
    /// wraps in an `OwnedFd`) and the simulator's end, already watched.
    pub(crate) fn back(&mut self, id: FileId) -> io::Result<(RawFd, OwnedFd)> {
        let mut fds: [libc::c_int; 2] = [-1, -1];
        self.real_calls += 2;
        // SAFETY: pipe2 writes two ints into the local array `fds`, live for the call.
        if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC | libc::O_NONBLOCK) } != 0 {
            return Err(last_error());
        }
        // SAFETY: `fds[0]` is a new descriptor nothing else owns.
        let read_end = unsafe { OwnedFd::from_raw_fd(fds[0]) };
        let mut ev = libc::epoll_event {
            events: (libc::EPOLLIN | libc::EPOLLHUP) as u32,
            u64: id,
        };
        // SAFETY: the kernel reads one epoll_event from the local `ev`; both descriptors are
        // open (the watch is owned by `self`, the read end by `read_end`).
        let r = unsafe { libc::epoll_ctl(self.epoll.as_raw_fd(), libc::EPOLL_CTL_ADD, fds[0], &mut ev) };
        if r != 0 {
            let e = last_error();
            // SAFETY: `fds[1]` is ours and handed to nobody yet; closed once, here.
            unsafe { libc::close(fds[1]) };
            return Err(e);
        }
        Ok((fds[1], read_end))
    }

    /// A second number for the program's end of a backing pipe (`dup`).
    pub(crate) fn dup(&mut self, raw: RawFd) -> io::Result<RawFd> {
        self.real_calls += 1;
        // SAFETY: F_DUPFD_CLOEXEC takes an integer argument and touches no user memory; the
        // kernel validates `raw`.
        let fd = unsafe { libc::fcntl(raw, libc::F_DUPFD_CLOEXEC, 0) };
        if fd < 0 { Err(last_error()) } else { Ok(fd) }
    }

    /// Closes one number of a program's end (the wrapper's `close` of a simulated file).
    pub(crate) fn close_number(&mut self, raw: RawFd) {
        self.real_calls += 1;
        // SAFETY: the caller took `raw` out of the program's `OwnedFd` (`into_raw_fd`), so it
        // is closed exactly once, here.
        unsafe { libc::close(raw) };
    }

    /// Collects closed files and outside writes, ordered by file id (the real epoll's order
    /// is not part of the simulation). `backing` finds a file's read end.
    pub(crate) fn reap(&mut self, mut backing: impl FnMut(FileId) -> Option<RawFd>) -> Vec<Reaped> {
        let mut out = Vec::new();
        // The watch is level-triggered and a hang-up stays reported until the caller closes the
        // file: with a full batch of hung-up pipes (a loop closing 100 descriptors at once), each
        // wait would return the same batch again. Each close is taken once, and a batch that
        // brings nothing new ends the reap.
        let mut closed_seen = std::collections::BTreeSet::new();
        loop {
            self.real_calls += 1;
            // SAFETY: the kernel writes at most `events.len()` epoll_events into the vector's
            // buffer, which is exclusively borrowed for the call.
            let n = unsafe {
                libc::epoll_wait(
                    self.epoll.as_raw_fd(),
                    self.events.as_mut_ptr(),
                    self.events.len() as libc::c_int,
                    0,
                )
            };
            if n <= 0 {
                break;
            }
            let mut progress = false;
            for ev in &self.events[..n as usize] {
                let id = ev.u64;
                let flags = ev.events;
                let mut written = Vec::new();
                if flags & libc::EPOLLIN as u32 != 0 {
                    if let Some(fd) = backing(id) {
                        drain(fd, &mut written, &mut self.real_calls);
                    }
                }
                let closed = flags & (libc::EPOLLHUP | libc::EPOLLERR) as u32 != 0 && closed_seen.insert(id);
                if !written.is_empty() || closed {
                    progress = true;
                    out.push(Reaped { id, written, closed });
                }
            }
            if (n as usize) < self.events.len() || !progress {
                break;
            }
        }
        out.sort_by_key(|r| r.id);
        out
    }

    /// Waits (really) up to `ms` milliseconds for something on the watch: used only when every
    /// simulated thread is blocked and nothing is scheduled, so that only the outside world
    /// can wake the simulation.
    pub(crate) fn wait_outside(raw: RawFd, ms: i32) {
        let mut ev = libc::epoll_event { events: 0, u64: 0 };
        // SAFETY: the kernel writes at most one epoll_event into the local `ev`. `raw` is the
        // watch of a kernel kept alive by the caller's `Arc`; a wait on a closed number would
        // only fail with EBADF.
        unsafe { libc::epoll_wait(raw, &mut ev, 1, ms) };
    }
}

/// Reads everything the outside world wrote into a backing pipe.
pub(crate) fn drain(fd: RawFd, into: &mut Vec<u8>, real_calls: &mut u64) {
    let mut buf = [0u8; 512];
    loop {
        *real_calls += 1;
        // SAFETY: the kernel writes at most `buf.len()` bytes into the local array.
        let n = unsafe { libc::read(fd, buf.as_mut_ptr().cast(), buf.len()) };
        if n <= 0 {
            return;
        }
        into.extend_from_slice(&buf[..n as usize]);
    }
}

/// Whether the program's descriptor `raw` still leads to the backing pipe whose simulator end
/// is `backing` (the two ends of a pipe share one inode).
pub(crate) fn same_file(raw: RawFd, backing: Option<RawFd>) -> bool {
    let Some(backing) = backing else {
        return false;
    };
    let ino = |fd: RawFd| {
        let mut st = std::mem::MaybeUninit::<libc::stat>::zeroed();
        // SAFETY: fstat writes one `struct stat` into `st`, a live local of that type.
        let r = unsafe { libc::fstat(fd, st.as_mut_ptr()) };
        // SAFETY: on success fstat has initialised the whole structure (and it started zeroed).
        (r == 0).then(|| unsafe { st.assume_init() }.st_ino)
    };
    match (ino(raw), ino(backing)) {
        (Some(a), Some(b)) => a == b,
        _ => false,
    }
}

/// The device and inode of `raw` if it is an open pipe (a backing pipe's two ends share them).
pub(crate) fn pipe_inode(raw: RawFd) -> Option<(u64, u64)> {
    let mut st = std::mem::MaybeUninit::<libc::stat>::zeroed();
    // SAFETY: fstat writes one `struct stat` into `st`, a live local of that type.
    let r = unsafe { libc::fstat(raw, st.as_mut_ptr()) };
    if r != 0 {
        return None;
    }
    // SAFETY: on success fstat has initialised the whole structure (and it started zeroed).
    let st = unsafe { st.assume_init() };
    (st.st_mode & libc::S_IFMT == libc::S_IFIFO).then_some((st.st_dev, st.st_ino))
}

/// Whether `raw` is an open descriptor of this process (for numbers the simulation does not
/// know: `epoll_ctl` on such a number is `EPERM`, not `EBADF`).
pub(crate) fn is_open(raw: RawFd) -> bool {
    // SAFETY: F_GETFD takes no argument and touches no user memory.
    unsafe { libc::fcntl(raw, libc::F_GETFD) >= 0 }
}
