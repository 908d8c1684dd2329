//! The loop's table of live tasks: every task that has not finished, held by a counted
//! reference, so that an unreferenced task keeps running (asyncio keeps only weak references and
//! loses such tasks; evloop does not).
//!
//! A `Vec` of task pointers; each task's header records its position, so removing a finished task
//! is a `swap_remove` plus one index update, and enumerating (`all_tasks()`, the task dump,
//! `close()`) walks a dense array.

use crate::event_loop::raw_task::TaskPtr;

/// Marks a header that is in no table.
const NOT_IN_TABLE: u32 = u32::MAX;

#[derive(Default)]
pub(crate) struct TaskTable {
    tasks: Vec<TaskPtr>,
}

impl TaskTable {
    pub(crate) fn len(&self) -> usize {
        self.tasks.len()
    }

    /// Adds a task (a new reference).
    pub(crate) fn insert(&mut self, task: TaskPtr) {
        // More than four billion live tasks would need a terabyte of memory first.
        let index = u32::try_from(self.tasks.len()).unwrap_or(NOT_IN_TABLE);
        task.header().set_index(index);
        self.tasks.push(task);
    }

    /// Whether `task` is in the table.
    pub(crate) fn contains(&self, task: &TaskPtr) -> bool {
        let i = task.header().index() as usize;
        self.tasks.get(i).is_some_and(|t| t.ptr_eq(task))
    }

    /// Takes `task` out; returns the table's reference, to be dropped outside any borrow.
    pub(crate) fn remove(&mut self, task: &TaskPtr) -> Option<TaskPtr> {
        if !self.contains(task) {
            return None;
        }
        let i = task.header().index() as usize;
        let removed = self.tasks.swap_remove(i);
        if let Some(moved) = self.tasks.get(i) {
            moved.header().set_index(i as u32);
        }
        removed.header().set_index(NOT_IN_TABLE);
        Some(removed)
    }

    /// Every live task, in table order.
    pub(crate) fn iter(&self) -> impl Iterator<Item = &TaskPtr> + '_ {
        self.tasks.iter()
    }

    /// Empties the table, returning its references (the loop is closing).
    pub(crate) fn drain(&mut self) -> Vec<TaskPtr> {
        let tasks = std::mem::take(&mut self.tasks);
        for t in &tasks {
            t.header().set_index(NOT_IN_TABLE);
        }
        tasks
    }
}

impl Drop for TaskTable {
    /// A loop dropped without `close()` still drops its tasks' futures here, on its own thread,
    /// rather than leave them to whichever thread drops the last waker.
    fn drop(&mut self) {
        for t in self.drain() {
            let _ = t.drop_future();
        }
    }
}
