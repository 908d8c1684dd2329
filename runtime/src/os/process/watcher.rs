//! Waiting for a child without a pidfd: a waiter thread per child, asyncio's
//! `ThreadedChildWatcher`, for kernels before 5.3, valgrind, and seccomp filters that refuse
//! `pidfd_open` (`spawn` falls back to it when `pidfd_open` fails with `ENOSYS` or `EPERM`).
//!
//! The thread blocks in `waitid(P_PID, pid, WEXITED | WNOWAIT)`: it learns of the exit without
//! reaping, so the child stays a zombie and its pid stays its own until its owner reaps it (a
//! `kill(pid, ..)` by [`Process::send_signal`](crate::process::Process::send_signal) can never
//! reach a process that reused the pid, as with a pidfd). Then it adds one to an eventfd that the
//! loop watches in place of the pidfd: [`Process::wait`](crate::process::Process::wait) waits for
//! it exactly as for a pidfd, and reaps with `waitid(P_PID, pid, WEXITED | WNOHANG)`.
//!
//! Why a thread and not asyncio's other choice, a `SIGCHLD` handler that checks each child with
//! `waitid(.., WNOHANG)`: a signal handler is process-wide (another library's handler, or one
//! set to `SIG_IGN`, breaks it, and ours would fire for children that are not ours), it must be
//! installed on one loop while children belong to any loop of any thread, and every `SIGCHLD`
//! costs one `waitid` per child still running. A thread costs a small stack per child, touches no
//! process-wide state, and wakes exactly the loop that owns the child. asyncio made the same
//! choice: `ThreadedChildWatcher` has been its default since 3.8 where pidfds are missing.
//!
//! A dropped [`Process`](crate::process::Process) whose child has not exited leaves the reaping
//! to the thread (`Watch::orphan`); one whose child has exited is reaped on the spot. The state
//! that settles who reaps is behind one mutex, so the child is reaped exactly once.

use std::io;
use std::os::fd::{AsFd, OwnedFd};
use std::sync::{Arc, Mutex};

use evloop_syscalls as sys;

/// Where the child is, as the waiter thread and the `Process` agree on it.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Stage {
    /// Running, or exited and not yet seen by the thread.
    Running,
    /// The thread saw the exit (the child is a zombie) and told the loop.
    Exited,
    /// The `Process` was dropped first: the thread reaps the child when it exits.
    Orphaned,
    /// Reaped.
    Reaped,
}

/// The waiter thread's side of a child, shared with the `Process`.
#[derive(Debug)]
pub(super) struct Watch {
    pid: i32,
    /// The stage, and the thread's copy of the eventfd: closed under the lock right after the
    /// thread's write, so that by the time the loop has reaped the child (which takes the lock)
    /// no descriptor of the watch is left but the loop's own.
    stage: Mutex<(Stage, Option<OwnedFd>)>,
}

/// A waiter thread's stack: it only calls `waitid` and `write`.
const WAITER_STACK: usize = 64 * 1024;

impl Watch {
    /// Starts the waiter thread of child `pid`; returns the eventfd that becomes readable when
    /// the child has exited (for the loop) and the shared state.
    pub(super) fn start(pid: i32) -> io::Result<(OwnedFd, Arc<Watch>)> {
        let efd = sys::eventfd(0)?;
        let theirs = efd.try_clone()?;
        let watch = Arc::new(Watch {
            pid,
            stage: Mutex::new((Stage::Running, Some(theirs))),
        });
        let w = watch.clone();
        std::thread::Builder::new()
            .name(format!("evloop-child-{pid}"))
            .stack_size(WAITER_STACK)
            .spawn(move || w.wait_for_exit())?;
        Ok((efd, watch))
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, (Stage, Option<OwnedFd>)> {
        self.stage.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The waiter thread: blocks until the child exits (without reaping it), then tells the
    /// loop, or reaps it itself if its `Process` is gone.
    fn wait_for_exit(&self) {
        // Err: not our child any more (ECHILD: reaped by other code); nothing to wait for.
        let _ = sys::waitid_pid(self.pid, false, true);
        let mut guard = self.lock();
        let (stage, efd) = &mut *guard;
        match *stage {
            Stage::Orphaned => {
                let _ = sys::waitid_pid(self.pid, true, false);
                *stage = Stage::Reaped;
            }
            Stage::Running => {
                *stage = Stage::Exited;
                if let Some(fd) = efd.as_ref() {
                    let _ = sys::eventfd_write(fd.as_fd(), 1);
                }
            }
            Stage::Exited | Stage::Reaped => {}
        }
        drop(efd.take());
    }

    /// One `waitid(P_PID, .., WNOHANG)`: the status if the child has exited (it is reaped), `None`
    /// if it still runs.
    pub(super) fn try_reap(&self) -> io::Result<Option<sys::ExitStatus>> {
        let mut guard = self.lock();
        let out = sys::waitid_pid(self.pid, true, false);
        if matches!(out, Ok(Some(_)) | Err(_)) {
            guard.0 = Stage::Reaped;
        }
        out
    }

    /// `kill(pid, sig)` if the child is not reaped (so the pid is still its own: the lock is held
    /// across the call, so the thread cannot reap in between); `None` once it is reaped.
    pub(super) fn signal(&self, sig: i32) -> Option<io::Result<()>> {
        let guard = self.lock();
        match guard.0 {
            Stage::Running | Stage::Exited => Some(sys::kill(self.pid, sig)),
            Stage::Orphaned | Stage::Reaped => None,
        }
    }

    /// The `Process` is dropped unreaped: reap now if the child has exited, or leave it to the
    /// thread.
    pub(super) fn orphan(&self) {
        let mut guard = self.lock();
        match guard.0 {
            Stage::Running => guard.0 = Stage::Orphaned,
            Stage::Exited => {
                let _ = sys::waitid_pid(self.pid, true, false);
                guard.0 = Stage::Reaped;
            }
            Stage::Orphaned | Stage::Reaped => {}
        }
    }
}
