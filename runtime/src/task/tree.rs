//! The task tree: asyncio 3.14's `ps` and `pstree` for a running evloop program.
//!
//! A snapshot of every live task of a loop: its name, state, creation site, what it awaits, and
//! which tasks await it. The awaited-by edges come from the tasks themselves, not from notes: a
//! task that awaits another's handle (directly, or through `gather`, `wait`, `select` or a
//! `TaskGroup`) leaves its waker in that task's cell, and a waker is a pointer to its task's
//! cell, so the snapshot maps each stored waker back to the task it belongs to. The tree prints
//! every task nobody awaits as a root, with the tasks it awaits below it; a cycle in the
//! awaited-by graph (two tasks each waiting for the other, directly or around a ring) can never
//! make progress, and the tree names it as a deadlock instead of printing it forever.
//!
//! One edge comes from a note instead: a [`TaskGroup`](crate::task::group::TaskGroup)'s child is
//! awaited by the group's owner from the moment it is created (asyncio 3.14's
//! `future_add_to_awaited_by` in `TaskGroup.create_task`), before the owner's waker reaches the
//! child at `join`. The group notes the pair in a per-loop list ([`add_awaited_by`]) and drops it
//! when the child is done ([`discard_awaited_by`]); the snapshot adds the noted edges whose two
//! tasks are still live.
//!
//! ```
//! let tree = evloop::run(async {
//!     // The child waits until released (not for a time: a slow machine could see it done).
//!     let (release, released) = evloop::sync::oneshot::channel::<()>();
//!     let child = evloop::spawn(released);
//!     let parent = evloop::spawn(async move { child.await.unwrap() });
//!     evloop::task::yield_now().await;
//!     let tree = evloop::event_loop::get_running_loop().expect("a running loop").task_tree();
//!     release.send(()).unwrap();
//!     parent.await.unwrap().unwrap();
//!     tree
//! })
//! .unwrap();
//! let text = tree.to_string();
//! assert!(text.contains("Task-3"), "{text}");
//! assert!(tree.cycles().is_empty());
//! ```

use std::cell::RefCell;
use std::collections::{BTreeSet, HashMap};
use std::fmt;
use std::panic::Location;

use crate::event_loop::LoopHandle;
use crate::event_loop::slots::LoopKey;
use crate::event_loop::trace::Awaiting;
use crate::task::handle::{AWAITED_TASK, TaskRef};
use crate::task::state::{Core, TaskState};

/// The noted awaited-by edges of a loop, as (awaited task, awaiter) numbers. A set, not a list:
/// every child's end removes its edge, and a scan of a list would make a group of n children
/// cost O(n^2); ordered, so that the snapshot is the same from run to run.
static NOTED: LoopKey<RefCell<BTreeSet<(u64, u64)>>> = LoopKey::new();

/// Notes that `awaiter` awaits `task` although no waker says so yet (a task group's owner and
/// its child, from the child's creation).
pub(crate) fn add_awaited_by(lp: &LoopHandle, task: &TaskRef, awaiter: &TaskRef) {
    if lp.inner.is_closed() || task.ptr_eq(awaiter) {
        return;
    }
    let noted = lp.inner.slot_or_init(&NOTED, RefCell::default);
    noted.borrow_mut().insert((task.number(), awaiter.number()));
}

/// Drops the note [`add_awaited_by`] made (the child is done).
pub(crate) fn discard_awaited_by(lp: &LoopHandle, task: &TaskRef, awaiter: &TaskRef) {
    if let Some(noted) = lp.inner.slot(&NOTED) {
        noted.borrow_mut().remove(&(task.number(), awaiter.number()));
    }
}

/// One task in a [`TaskTree`].
///
/// ```
/// evloop::run(async {
///     let worker = evloop::task::TaskBuilder::new().name("worker").spawn(std::future::pending::<()>())?;
///     evloop::task::yield_now().await;
///     let tree = evloop::event_loop::get_running_loop().expect("a loop runs").task_tree();
///     let node = tree.get(worker.number()).expect("live");
///     assert_eq!((node.name.as_str(), node.state), ("worker", evloop::task::TaskState::Pending));
///     assert!(node.awaited_by.is_empty()); // nobody awaits it
///     Ok::<(), evloop::event_loop::LoopError>(())
/// })??;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone)]
pub struct TaskNode {
    /// `Task-N` or the name it was given.
    pub name: String,
    /// The N of `Task-N`.
    pub number: u64,
    /// Pending or running (finished tasks are not in the tree).
    pub state: TaskState,
    /// Where it was created.
    pub created_at: &'static Location<'static>,
    /// What it last said it waits on (the leaf future's note).
    pub awaiting: Awaiting,
    /// The tasks that await this one (by number): their wakers are stored in this task, or
    /// it is a child of a task group they own.
    pub awaited_by: Vec<u64>,
}

/// A snapshot of a loop's live tasks and who awaits whom (see the module documentation);
/// `Display` prints it as a tree, like `python -m asyncio pstree`.
///
/// ```
/// evloop::run(async {
///     let child = evloop::task::TaskBuilder::new().name("child").spawn(std::future::pending::<()>())?;
///     let parent = evloop::task::TaskBuilder::new().name("parent").spawn(async move { child.await })?;
///     evloop::task::yield_now().await;
///     let text = evloop::event_loop::get_running_loop().expect("a loop runs").task_tree().to_string(); // python -m asyncio pstree
///     let (p, c) = (text.find("parent").expect("listed"), text.find("child").expect("listed"));
///     assert!(p < c, "{text}"); // the awaited task is printed below its awaiter
///     parent.abort();
///     Ok::<(), evloop::event_loop::LoopError>(())
/// })??;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, Default)]
pub struct TaskTree {
    nodes: Vec<TaskNode>,
}

impl LoopHandle {
    /// A snapshot of every live task of this loop and who awaits whom (asyncio 3.14's
    /// `pstree`). Cheap enough for a diagnostic: one pass over the tasks.
    ///
    /// ```
    /// let lp = evloop::event_loop::EventLoop::new()?;
    /// lp.create_task(std::future::pending::<()>())?;
    /// let tree = lp.task_tree(); // also from outside the loop
    /// assert_eq!(tree.tasks().len(), 1);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn task_tree(&self) -> TaskTree {
        let tasks = self.inner.tasks.borrow();
        let mut by_addr: HashMap<usize, u64> = HashMap::with_capacity(tasks.len());
        for t in tasks.iter() {
            by_addr.insert(t.addr(), u64::from(t.header().number()));
        }
        let mut nodes: Vec<TaskNode> = tasks
            .iter()
            .map(|t| {
                let core = Core(t.header());
                TaskNode {
                    name: core.label(),
                    number: core.number(),
                    state: core.state(),
                    created_at: core.site(),
                    awaiting: core.awaiting(),
                    awaited_by: Vec::new(),
                }
            })
            .collect();
        for (node, t) in nodes.iter_mut().zip(tasks.iter()) {
            let awaiter = t
                .header()
                .with_extra(|e| e.and_then(|e| e.join_waker.as_ref().map(|w| w.data() as usize)));
            if let Some(n) = awaiter.and_then(|addr| by_addr.get(&addr)) {
                node.awaited_by.push(*n);
            }
        }
        drop(tasks);
        nodes.sort_by_key(|n| n.number);
        if let Some(noted) = self.inner.slot(&NOTED) {
            let index: HashMap<u64, usize> = nodes.iter().enumerate().map(|(i, n)| (n.number, i)).collect();
            for &(task, awaiter) in noted.borrow().iter() {
                if let (Some(&i), true) = (index.get(&task), index.contains_key(&awaiter)) {
                    if !nodes[i].awaited_by.contains(&awaiter) {
                        nodes[i].awaited_by.push(awaiter);
                    }
                }
            }
        }
        TaskTree { nodes }
    }
}

impl TaskTree {
    /// Every live task, by number.
    ///
    /// ```
    /// evloop::run(async {
    ///     let _a = evloop::spawn(std::future::pending::<()>());
    ///     let _b = evloop::spawn(std::future::pending::<()>());
    ///     let tree = evloop::event_loop::get_running_loop().expect("a loop runs").task_tree();
    ///     let numbers: Vec<u64> = tree.tasks().iter().map(|t| t.number).collect();
    ///     assert_eq!(numbers.len(), 3);
    ///     assert!(numbers.windows(2).all(|w| w[0] < w[1])); // by number
    /// })?;
    /// # Ok::<(), evloop::task::RunError>(())
    /// ```
    pub fn tasks(&self) -> &[TaskNode] {
        &self.nodes
    }

    /// The task with `number`, if it is live.
    ///
    /// ```
    /// evloop::run(async {
    ///     let me = evloop::task::current_task().expect("in a task");
    ///     let tree = evloop::event_loop::get_running_loop().expect("a loop runs").task_tree();
    ///     assert_eq!(tree.get(me.number()).map(|n| n.name.clone()), Some(me.name()));
    ///     assert!(tree.get(u64::MAX).is_none());
    /// })?;
    /// # Ok::<(), evloop::task::RunError>(())
    /// ```
    pub fn get(&self, number: u64) -> Option<&TaskNode> {
        self.nodes.iter().find(|n| n.number == number)
    }

    /// The tasks `number` awaits (the inverse of `awaited_by`).
    ///
    /// ```
    /// evloop::run(async {
    ///     let child = evloop::spawn(std::future::pending::<()>());
    ///     let c = child.number();
    ///     let parent = evloop::spawn(async move { child.await });
    ///     evloop::task::yield_now().await;
    ///     let tree = evloop::event_loop::get_running_loop().expect("a loop runs").task_tree();
    ///     assert_eq!(tree.awaits(parent.number()), [c]);
    ///     parent.abort();
    /// })?;
    /// # Ok::<(), evloop::task::RunError>(())
    /// ```
    pub fn awaits(&self, number: u64) -> Vec<u64> {
        self.nodes
            .iter()
            .filter(|n| n.awaited_by.contains(&number))
            .map(|n| n.number)
            .collect()
    }

    /// Every cycle of the awaited-by graph, each as the numbers of its tasks in await order
    /// (the first awaits the second, ..., the last awaits the first), starting from its
    /// lowest-numbered task. A cycle is a deadlock: none of its tasks can finish first.
    ///
    /// ```
    /// use std::cell::RefCell;
    /// use std::rc::Rc;
    ///
    /// evloop::run(async {
    ///     // Two tasks that each await the other: a deadlock the tree can name.
    ///     let slot: Rc<RefCell<Option<evloop::task::Task<()>>>> = Rc::default();
    ///     let s = slot.clone();
    ///     let a = evloop::spawn(async move {
    ///         evloop::task::yield_now().await;
    ///         let b = s.borrow_mut().take().expect("set");
    ///         let _ = b.await;
    ///     });
    ///     let a_ref = a.task_ref();
    ///     let b = evloop::spawn(async move {
    ///         let _ = a.await;
    ///     });
    ///     let (an, bn) = (a_ref.number(), b.number());
    ///     *slot.borrow_mut() = Some(b);
    ///     evloop::task::yield_now().await;
    ///     evloop::task::yield_now().await;
    ///     let tree = evloop::event_loop::get_running_loop().expect("a loop runs").task_tree();
    ///     assert_eq!(tree.cycles(), [vec![an.min(bn), an.max(bn)]]);
    ///     a_ref.abort();
    /// })?;
    /// # Ok::<(), evloop::task::RunError>(())
    /// ```
    pub fn cycles(&self) -> Vec<Vec<u64>> {
        // Each task awaits at most a few others; follow the edges from every task, and report a
        // cycle once, from its smallest member.
        let mut found: Vec<Vec<u64>> = Vec::new();
        for start in &self.nodes {
            let mut path = vec![start.number];
            self.walk(start.number, &mut path, &mut found);
        }
        found.sort();
        found.dedup();
        found
    }

    fn walk(&self, at: u64, path: &mut Vec<u64>, found: &mut Vec<Vec<u64>>) {
        for next in self.awaits(at) {
            if next == path[0] {
                let min = *path.iter().min().unwrap_or(&next);
                if min == path[0] {
                    found.push(path.clone());
                }
            } else if !path.contains(&next) && next > path[0] {
                path.push(next);
                self.walk(next, path, found);
                path.pop();
            }
        }
    }

    fn write_node(
        &self,
        f: &mut fmt::Formatter<'_>,
        n: &TaskNode,
        prefix: &str,
        last: bool,
        seen: &mut Vec<u64>,
    ) -> fmt::Result {
        let branch = if last { "└── " } else { "├── " };
        write!(f, "{prefix}{branch}{} [{}]", n.name, state_str(n.state))?;
        if n.state == TaskState::Pending && n.awaiting.object_of(&AWAITED_TASK).is_none() {
            write!(f, " awaiting {}", n.awaiting)?;
        }
        writeln!(f, " (created at {})", n.created_at)?;
        if seen.contains(&n.number) {
            return Ok(());
        }
        seen.push(n.number);
        let children = self.awaits(n.number);
        let child_prefix = format!("{prefix}{}", if last { "    " } else { "│   " });
        for (i, c) in children.iter().enumerate() {
            if let Some(child) = self.get(*c) {
                self.write_node(f, child, &child_prefix, i + 1 == children.len(), seen)?;
            }
        }
        seen.pop();
        Ok(())
    }
}

fn state_str(s: TaskState) -> &'static str {
    match s {
        TaskState::Pending => "pending",
        TaskState::Running => "running",
        TaskState::Done => "done",
        TaskState::Cancelled => "cancelled",
        TaskState::Failed => "failed",
    }
}

impl fmt::Display for TaskTree {
    /// Roots are the tasks nobody awaits; below each, the tasks it awaits. A task awaited by
    /// several appears under each of them. Cycles are reported after the tree.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let roots: Vec<&TaskNode> = self.nodes.iter().filter(|n| n.awaited_by.is_empty()).collect();
        for (i, r) in roots.iter().enumerate() {
            self.write_node(f, r, "", i + 1 == roots.len(), &mut Vec::new())?;
        }
        for cycle in self.cycles() {
            let names: Vec<String> = cycle
                .iter()
                .chain(cycle.first())
                .map(|n| self.get(*n).map_or_else(|| format!("#{n}"), |t| t.name.clone()))
                .collect();
            writeln!(
                f,
                "deadlock: {} (each awaits the next; none can finish)",
                names.join(" -> ")
            )?;
            for n in cycle.iter().filter_map(|n| self.get(*n)) {
                writeln!(
                    f,
                    "    {} [{}] (created at {})",
                    n.name,
                    state_str(n.state),
                    n.created_at
                )?;
            }
        }
        Ok(())
    }
}
