//! Bound to one loop: [`LoopBinding`] remembers the loop of the first task that waited on a
//! primitive, queue or channel, and refuses a task of another loop that would wait there with
//! the loop layer's [`WrongLoopError`] (see "Bound to one loop" in the `sync` module
//! documentation); [`fail`] turns that error into the waiting task's panic where the future's
//! output has no room for it (the queue's waits). A [`Mutex`](crate::sync::Mutex) is never bound.

use std::cell::Cell;

use crate::event_loop::error::WrongLoopError;
use crate::event_loop::running_loop_id;
use crate::sync::ops::WaitOp;

/// The loop a primitive belongs to: the loop of the first task that waits on it (asyncio's
/// `_LoopBoundMixin`). Creating, setting, notifying or taking without waiting binds nothing,
/// and a wait outside any evloop loop (another executor) checks nothing.
#[derive(Default)]
pub(crate) struct LoopBinding {
    /// 0 while unbound (loop ids count from 1); [`NEVER`] for a binding that never binds.
    bound: Cell<u64>,
}

/// The `bound` of a primitive that any loop's tasks may wait on ([`Mutex`](crate::sync::Mutex):
/// its waiters are woken through their wakers, which reach any loop).
const NEVER: u64 = u64::MAX;

impl LoopBinding {
    /// A binding that accepts every loop.
    pub(crate) fn never() -> LoopBinding {
        LoopBinding {
            bound: Cell::new(NEVER),
        }
    }

    /// Binds to the running loop, or checks that it is the one bound to; `op` names the wait
    /// in the error.
    pub(crate) fn bind(&self, op: WaitOp) -> Result<(), WrongLoopError> {
        let Some(running) = running_loop_id() else {
            return Ok(());
        };
        match self.bound.get() {
            0 => {
                self.bound.set(running);
                Ok(())
            }
            bound if bound == running || bound == NEVER => Ok(()),
            bound => Err(WrongLoopError::new(
                op.name(),
                || op.object().to_string(),
                bound,
                running,
            )),
        }
    }
}

/// For the waits whose output has no room for an error (`Queue::get`, `put`, `join`):
/// the task that waited fails with the error's message as its panic, which the loop catches
/// (its awaiter gets `TaskError::Panicked`), instead of hanging.
#[cold]
#[track_caller]
pub(crate) fn fail(e: WrongLoopError) -> ! {
    panic!("{e}")
}
