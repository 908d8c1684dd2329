//! Bound to one loop: [`LoopBinding`] remembers the loop of the first task that waited on a
//! primitive, queue or channel, and [`WrongLoop`] is what a task of another loop gets when it
//! would wait there (see "Bound to one loop" in the `sync` module documentation).

use std::cell::Cell;
use std::fmt;

use crate::event_loop::running_loop_id;
use crate::event_loop::trace::SyncOp;
use crate::sync::error::SyncError;

/// A task of one loop waited on a primitive bound to another.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct WrongLoop {
    pub(crate) bound: u64,
    pub(crate) running: u64,
}

impl WrongLoop {
    pub(crate) fn message(self, op: impl fmt::Display) -> String {
        format!(
            "{op}: the primitive is bound to event loop #{} (a task of that loop waited on it first) \
             and cannot be waited on by a task of event loop #{}: only one of them runs at a \
             time, so the wait could only hang (asyncio: \"is bound to a different event loop\")",
            self.bound, self.running
        )
    }

    /// For the futures whose output has no room for an error: the task that waited fails with
    /// this panic, which the loop catches (its awaiter gets `TaskError::Panicked`), instead of
    /// hanging.
    pub(crate) fn fail(self, op: impl fmt::Display) -> ! {
        panic!("{}", self.message(op))
    }

    pub(crate) fn into_sync_error(self, op: SyncOp) -> SyncError {
        SyncError::WrongLoop {
            op,
            bound: self.bound,
            running: self.running,
        }
    }
}

/// The loop a primitive belongs to: the loop of the first task that waits on it (asyncio's
/// `_LoopBoundMixin`). Creating, setting, notifying or taking without waiting binds nothing,
/// and a wait outside any evloop loop (another executor) checks nothing.
#[derive(Default)]
pub(crate) struct LoopBinding {
    /// 0 while unbound (loop ids count from 1).
    bound: Cell<u64>,
}

impl LoopBinding {
    /// Binds to the running loop, or checks that it is the one bound to.
    pub(crate) fn bind(&self) -> Result<(), WrongLoop> {
        let Some(running) = running_loop_id() else {
            return Ok(());
        };
        match self.bound.get() {
            0 => {
                self.bound.set(running);
                Ok(())
            }
            bound if bound == running => Ok(()),
            bound => Err(WrongLoop { bound, running }),
        }
    }
}
