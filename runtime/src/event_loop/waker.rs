//! Task wakers: how "this task can make progress" reaches the loop, from any thread.
//!
//! A task's `Waker` is a pointer to its raw cell (`raw_task`); waking it sets the cell's
//! `NOTIFIED` bit, and if the bit was clear, hands the task to [`LoopScheduler::schedule`]:
//!
//! - **local path**, on the thread whose running loop owns the task: push `Ready::Task` onto
//!   the loop's ready queue. No lock, no syscall, no allocation; the waker's reference moves
//!   into the queue entry.
//! - **remote path**, from any other thread (or when the owning loop is not running): find the
//!   loop's thread-safe part by the task's owner id in a process-wide registry, push onto its
//!   mutex-protected remote queue, and if the loop sleeps in `epoll_pwait2`, write its eventfd once
//!   (see [`Shared`]).
//!
//! A wake for a task that has finished is harmless: its step sees the finished state and does
//! nothing. A wake for a task whose loop has closed finds no loop in the registry (or a closed
//! remote queue) and just drops its reference.

use std::collections::HashMap;
use std::future::Future;
use std::sync::{Arc, OnceLock, RwLock};

use crate::event_loop::raw_task::{Init, Notified, Schedule, TaskPtr};
use crate::event_loop::{Ready, Remote, Shared, with_running};

/// A new task cell whose wakes go to its loop (the one `init.owner` names) through
/// [`LoopScheduler`]: how the task layer creates every task.
#[inline]
pub(crate) fn new_task<F>(future: F, init: Init) -> TaskPtr
where
    F: Future + 'static,
    F::Output: 'static,
{
    TaskPtr::new::<F, LoopScheduler>(future, init)
}

/// The scheduler of every task on an evloop loop.
struct LoopScheduler;

impl Schedule for LoopScheduler {
    fn schedule(task: Notified) {
        let mut task = Some(task);
        with_running(|lp| {
            let Some(t) = task.take_if(|t| t.owner() == lp.id) else {
                return;
            };
            let Ok(mut ready) = lp.ready.try_borrow_mut() else {
                task = Some(t); // the queue is busy (cannot happen today): go the remote way
                return;
            };
            if let Some(t) = t.into_local(&lp.owner) {
                if lp.tracing() {
                    let label = t.header().label();
                    ready.push_back(Ready::Task(t));
                    drop(ready);
                    lp.trace_wake(label);
                } else {
                    ready.push_back(Ready::Task(t));
                }
            }
        });
        if let Some(task) = task {
            wake_remote(task);
        }
    }
}

/// The remote path: the owning loop's remote queue, if that loop is still open.
fn wake_remote(task: Notified) {
    let Some(shared) = lookup(task.owner()) else {
        return; // the loop is gone; dropping the reference is all there is to do
    };
    // A closed loop gives the task back; it is dropped here, outside the queue's lock.
    let _ = shared.push(Remote::Wake(task));
}

/// Loop id -> the loop's thread-safe part, for wakes that arrive from other threads.
fn registry() -> &'static RwLock<HashMap<u32, Arc<Shared>>> {
    static LOOPS: OnceLock<RwLock<HashMap<u32, Arc<Shared>>>> = OnceLock::new();
    LOOPS.get_or_init(RwLock::default)
}

fn lookup(id: u32) -> Option<Arc<Shared>> {
    let loops = registry().read().unwrap_or_else(|p| p.into_inner());
    loops.get(&id).cloned()
}

/// Makes a new loop reachable by remote wakes.
pub(crate) fn register(shared: &Arc<Shared>) {
    let mut loops = registry().write().unwrap_or_else(|p| p.into_inner());
    loops.insert(shared.loop_id, shared.clone());
}

/// A closing loop: later remote wakes of its tasks find nothing.
pub(crate) fn unregister(id: u32) {
    let removed = {
        let mut loops = registry().write().unwrap_or_else(|p| p.into_inner());
        loops.remove(&id)
    };
    drop(removed);
}
