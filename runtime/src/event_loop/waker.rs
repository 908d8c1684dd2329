//! Task wakers: how "this task can make progress" reaches the loop, from any thread.
//!
//! Each task owns one [`TaskWaker`] behind an `Arc` (std's safe `Wake` trait builds the
//! `Waker` from it, so no unsafe vtable is needed). Waking does two things:
//!
//! 1. `notified.swap(true)`: if the flag was already set, the task is already queued and the wake
//!    is absorbed. Many wakes before a poll give one poll. The task step clears the flag just
//!    before polling, so a wake during the poll queues the task again for the *next* iteration.
//! 2. Queue the task's key:
//!    - **local path**, on the thread whose running loop owns the task: push `Ready::Task(key)`
//!      onto the loop's ready queue. No atomics beyond the swap, no syscall, no allocation.
//!    - **remote path**, from any other thread (or when the loop is not running): push onto the
//!      loop's mutex-protected remote queue; if the loop sleeps in `epoll_pwait2`, write its
//!      eventfd once (see [`Shared`](crate::event_loop::Shared)).
//!
//! A wake for a task that has finished is harmless: its key is stale, and the loop drops it.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::task::Wake;

use crate::event_loop::slab::Key;
use crate::event_loop::{with_running, Ready, Remote, Shared};

/// The per-task wake handle (see the module documentation).
pub(crate) struct TaskWaker {
    /// The task's key; atomic only because a recycled waker is re-keyed for its next task.
    key: AtomicU64,
    /// Set while the task sits in a ready queue (local or remote) and has not been stepped yet.
    pub(crate) notified: AtomicBool,
    pub(crate) shared: Arc<Shared>,
}

impl TaskWaker {
    /// A waker for a task that is about to be scheduled: `notified` starts set because the
    /// creator queues its first step.
    pub(crate) fn new(key: Key, shared: Arc<Shared>) -> Arc<TaskWaker> {
        Arc::new(TaskWaker {
            key: AtomicU64::new(key.to_u64()),
            notified: AtomicBool::new(true),
            shared,
        })
    }

    /// Re-keys a recycled waker for a new task (the loop only recycles a waker nobody else holds).
    pub(crate) fn reset(&self, key: Key) {
        self.key.store(key.to_u64(), Ordering::Relaxed);
        self.notified.store(true, Ordering::Release);
    }

    fn key(&self) -> Key {
        Key::from_u64(self.key.load(Ordering::Relaxed))
    }

    /// Called by the task step right before polling: the wake that queued it is consumed.
    pub(crate) fn clear(&self) {
        self.notified.swap(false, Ordering::AcqRel);
    }

    fn schedule(&self) {
        if self.notified.swap(true, Ordering::AcqRel) {
            return;
        }
        let queued_locally = with_running(|lp| {
            if lp.id != self.shared.loop_id {
                return false;
            }
            match lp.ready.try_borrow_mut() {
                Ok(mut ready) => {
                    ready.push_back(Ready::Task(self.key()));
                    drop(ready);
                    lp.trace_wake(self.key());
                    true
                }
                Err(_) => false,
            }
        })
        .unwrap_or(false);
        if !queued_locally {
            // A closed loop refuses the wake; the task is gone with it.
            let _ = self.shared.push(Remote::Wake(self.key()));
        }
    }
}

impl Wake for TaskWaker {
    fn wake(self: Arc<Self>) {
        self.schedule();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        self.schedule();
    }
}
