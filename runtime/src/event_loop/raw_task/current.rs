//! [`CurrentTask`]: the task a loop is stepping right now (asyncio's `current_task()`), kept as a
//! bare pointer for the duration of the step, whose caller holds the task's [`TaskPtr`].

use std::cell::Cell;
use std::ptr::NonNull;

use crate::event_loop::raw_task::{Header, TaskPtr};

/// The task being stepped, if any: set only for the duration of a step by [`CurrentTask::enter`],
/// whose caller holds the task's [`TaskPtr`], so the pointer stored here is always alive.
#[derive(Default)]
pub(crate) struct CurrentTask {
    ptr: Cell<Option<NonNull<Header>>>,
}

impl CurrentTask {
    /// Runs `f` with `task` as the current task (nested calls stack; the previous one comes back
    /// afterwards, also when `f` panics).
    pub(crate) fn enter<R>(&self, task: &TaskPtr, f: impl FnOnce() -> R) -> R {
        struct Restore<'a> {
            slot: &'a Cell<Option<NonNull<Header>>>,
            previous: Option<NonNull<Header>>,
        }
        impl Drop for Restore<'_> {
            fn drop(&mut self) {
                self.slot.set(self.previous);
            }
        }
        let _restore = Restore {
            slot: &self.ptr,
            previous: self.ptr.replace(Some(task.ptr)),
        };
        f()
    }

    /// A reference to the current task.
    pub(crate) fn get(&self) -> Option<TaskPtr> {
        let ptr = self.ptr.get()?;
        // SAFETY: a pointer is in the slot only inside `enter`, whose caller holds a reference
        // to that task for the whole call; we take one more.
        unsafe { ptr.as_ref() }.ref_inc();
        Some(TaskPtr::from_counted(ptr))
    }

    /// Whether `task` is the current task.
    pub(crate) fn is(&self, task: &TaskPtr) -> bool {
        self.ptr.get() == Some(task.ptr)
    }
}
