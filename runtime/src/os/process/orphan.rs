//! Orphans: children whose [`Process`](crate::process::Process) was dropped before they were
//! reaped. The pidfd's registration stays on the loop with an [`Orphan`] callback that reaps the
//! child when the pidfd becomes readable; an orphan still running when its loop closes goes to
//! the reaper thread (`reaper`).

use std::cell::RefCell;
use std::os::fd::{AsFd, OwnedFd};
use std::panic::Location;
use std::rc::{Rc, Weak};

use evloop_syscalls as sys;

use crate::event_loop::handle::{Callback, HandleKind, HandleMeta};
use crate::event_loop::reactor::{IoState, ready};
use crate::event_loop::{LoopHandle, LoopInner};
use crate::io::AsyncFd;
use crate::os::process::reaper::reap_later;

/// The callback of an orphan's pidfd registration: reaps the child when its pidfd becomes
/// readable, then deregisters and closes the pidfd.
struct Orphan {
    meta: HandleMeta,
    pidfd: RefCell<Option<OwnedFd>>,
    io: Rc<IoState>,
    lp: Weak<LoopInner>,
}

impl Callback for Orphan {
    fn run(&self) {
        let reaped = {
            let fd = self.pidfd.borrow();
            let Some(fd) = fd.as_ref() else { return };
            // Ok(None): not exited after all; wait for the next edge. Err: not ours to reap
            // (ECHILD), give up on it.
            !matches!(sys::waitid_pidfd(fd.as_fd(), true), Ok(None))
        };
        if !reaped {
            self.io.clear(ready::READABLE);
            return;
        }
        let fd = self.pidfd.borrow_mut().take();
        // Deregister before closing; this also drops the registration's reference to us (the
        // caller holds another while we run).
        if let Some(lp) = self.lp.upgrade() {
            lp.deregister_io(&self.io);
        }
        drop(fd);
    }
    fn meta(&self) -> &HandleMeta {
        &self.meta
    }
    fn type_name(&self) -> &'static str {
        "orphaned child reaper"
    }
}

impl Drop for Orphan {
    /// Still unreaped when the registration lets go of us: the loop is closing.
    fn drop(&mut self) {
        if let Some(fd) = self.pidfd.get_mut().take() {
            reap_later(fd);
        }
    }
}

/// Hands the unreaped child of a dropped `Process` to its loop (or to the reaper thread if the
/// loop is closed).
pub(super) fn orphan(lp: &LoopHandle, fd: AsyncFd<OwnedFd>) {
    if lp.is_closed() {
        reap_later(fd.into_inner());
        return;
    }
    // Keep the registration (no epoll_ctl): only its owner changes.
    let (pidfd, io) = fd.into_parts();
    let orphan = Rc::new(Orphan {
        meta: HandleMeta::new(HandleKind::Io, Location::caller()),
        pidfd: RefCell::new(Some(pidfd)),
        io: io.clone(),
        lp: Rc::downgrade(&lp.inner),
    });
    io.set_handler(Some(orphan.clone()));
    if io.readiness() & ready::READ_ANY != 0 {
        // The loop already saw the exit: that edge will not come again.
        orphan.run();
    }
}
