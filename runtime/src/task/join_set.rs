//! [`JoinSet`]: tokio's set of tasks whose results come back in the order they finish.
//!
//! The set owns the [`Task`] handles, in slots. The set is the only awaiter of its tasks, so it
//! gives each one, as the waker its handle wakes when the task ends (`Task::poll_done`), a
//! waker that puts the task's slot number on the set's finished queue and wakes whoever waits in
//! [`join_next`](JoinSet::join_next). So an ending is queued the moment it happens (not an
//! iteration later, as a done callback would be) and a wait costs nothing per task still running
//! (no scan of the set). A slot is reused after its task is joined, so a number on the queue is
//! checked against the slot's task (`done()`) before its result is taken. Dropping the set aborts
//! what is left (tokio's rule); [`detach_all`](JoinSet::detach_all) lets them run instead.
//! asyncio's closest is `TaskGroup`, which also waits for every task at its end and fails as a
//! whole; a `JoinSet` hands each result back on its own, failures included.

use std::collections::VecDeque;
use std::fmt;
use std::future::{Future, poll_fn};
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll, Wake, Waker};

use crate::event_loop::budget;
use crate::task::{Task, TaskError, TaskRef};

/// What the tasks' end wakers share with the set. A `Waker` must be `Send + Sync`, hence the
/// `Arc` and the mutexes; only the loop's thread ever takes them, so they are never contended.
#[derive(Default)]
struct Finished {
    slots: Mutex<VecDeque<usize>>,
    waker: Mutex<Option<Waker>>,
}

impl Finished {
    fn push(&self, slot: usize) {
        self.slots
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push_back(slot);
        let waker = self.waker.lock().unwrap_or_else(PoisonError::into_inner).take();
        if let Some(w) = waker {
            w.wake();
        }
    }

    fn pop(&self) -> Option<usize> {
        self.slots.lock().unwrap_or_else(PoisonError::into_inner).pop_front()
    }
}

/// The waker a task of the set wakes when it ends: its slot goes on the queue.
struct Ended {
    slot: usize,
    finished: Arc<Finished>,
}

impl Wake for Ended {
    fn wake(self: Arc<Self>) {
        self.finished.push(self.slot);
    }

    fn wake_by_ref(self: &Arc<Self>) {
        self.finished.push(self.slot);
    }
}

/// A set of tasks spawned on the running loop, joined in the order they finish (tokio's
/// `JoinSet`). Dropping the set aborts the tasks still in it.
///
/// ```
/// use evloop::task::JoinSet;
///
/// let mut outs = evloop::run(async {
///     let mut set = JoinSet::new();
///     for i in 0..3u64 {
///         set.spawn(async move {
///             evloop::time::sleep(std::time::Duration::from_millis(3 - i)).await;
///             i
///         });
///     }
///     let mut outs = Vec::new();
///     while let Some(r) = set.join_next().await {
///         outs.push(r?); // the one that finished first comes first
///     }
///     Ok::<_, evloop::task::TaskError>(outs)
/// })??;
/// assert_eq!(outs, [2, 1, 0]);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct JoinSet<T> {
    slots: Vec<Option<Task<T>>>,
    free: Vec<usize>,
    len: usize,
    finished: Arc<Finished>,
}

impl<T: 'static> JoinSet<T> {
    /// An empty set.
    ///
    /// ```
    /// let set = evloop::task::JoinSet::<u32>::new();
    /// assert!(set.is_empty());
    /// ```
    pub fn new() -> Self {
        JoinSet {
            slots: Vec::new(),
            free: Vec::new(),
            len: 0,
            finished: Arc::new(Finished::default()),
        }
    }

    /// How many tasks are in the set (running, or finished and not joined yet).
    ///
    /// ```
    /// evloop::run(async {
    ///     let mut set = evloop::task::JoinSet::new();
    ///     set.spawn(async { 1 });
    ///     assert_eq!(set.len(), 1);
    /// })?;
    /// # Ok::<(), evloop::task::RunError>(())
    /// ```
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the set holds no task.
    ///
    /// ```
    /// assert!(evloop::task::JoinSet::<()>::new().is_empty());
    /// ```
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Spawns `fut` on the running loop as a task of this set; the returned [`TaskRef`] can abort
    /// it (tokio's `AbortHandle`) or name it. Any future goes, `Send` or not (tokio's
    /// `spawn_local` is this).
    ///
    /// # Panics
    /// Outside a running loop, as [`spawn`](crate::spawn).
    ///
    /// ```
    /// evloop::run(async {
    ///     let mut set = evloop::task::JoinSet::new();
    ///     let handle = set.spawn(std::future::pending::<()>());
    ///     handle.abort();
    ///     assert!(set.join_next().await.unwrap().unwrap_err().is_cancelled());
    /// })?;
    /// # Ok::<(), evloop::task::RunError>(())
    /// ```
    #[track_caller]
    pub fn spawn<F>(&mut self, fut: F) -> TaskRef
    where
        F: Future<Output = T> + 'static,
    {
        self.insert(crate::task::spawn::spawn(fut))
    }

    /// Adds a task spawned elsewhere (with a [`TaskBuilder`](crate::task::TaskBuilder), on another
    /// loop's handle) to the set, which owns its handle from now on.
    ///
    /// ```
    /// use evloop::task::{JoinSet, TaskBuilder};
    ///
    /// evloop::run(async {
    ///     let mut set = JoinSet::new();
    ///     set.insert(TaskBuilder::new().name("worker").spawn(async { 5 })?);
    ///     assert_eq!(set.join_next().await.unwrap()?, 5);
    ///     Ok::<(), Box<dyn std::error::Error>>(())
    /// })??;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn insert(&mut self, mut task: Task<T>) -> TaskRef {
        let r = task.task_ref();
        let slot = self.free.pop().unwrap_or(self.slots.len());
        let ended = Waker::from(Arc::new(Ended {
            slot,
            finished: self.finished.clone(),
        }));
        if task.poll_done(&mut Context::from_waker(&ended)).is_ready() {
            self.finished.push(slot); // ended already: queued now
        }
        if slot == self.slots.len() {
            self.slots.push(Some(task));
        } else {
            self.slots[slot] = Some(task);
        }
        self.len += 1;
        r
    }

    /// Waits for the next task of the set to finish and returns its result: `None` once the set
    /// is empty. Cancel-safe: a result is taken out of the set only when it is returned.
    ///
    /// ```
    /// evloop::run(async {
    ///     let mut set = evloop::task::JoinSet::new();
    ///     set.spawn(async { panic!("boom") });
    ///     let err = set.join_next().await.unwrap().unwrap_err();
    ///     assert!(err.is_panic());
    ///     assert!(set.join_next().await.is_none());
    /// })?;
    /// # Ok::<(), evloop::task::RunError>(())
    /// ```
    pub async fn join_next(&mut self) -> Option<Result<T, TaskError>> {
        poll_fn(|cx| self.poll_join_next(cx)).await
    }

    /// [`join_next`](JoinSet::join_next) as a poll: `Ready(None)` when the set is empty. Spends
    /// the task's budget, as every wait does, so a loop over a set whose tasks are all finished
    /// still lets the loop run others.
    ///
    /// ```
    /// use std::future::poll_fn;
    ///
    /// evloop::run(async {
    ///     let mut set = evloop::task::JoinSet::new();
    ///     set.spawn(async { 1 });
    ///     let r = poll_fn(|cx| set.poll_join_next(cx)).await;
    ///     assert_eq!(r.unwrap().unwrap(), 1);
    /// })?;
    /// # Ok::<(), evloop::task::RunError>(())
    /// ```
    pub fn poll_join_next(&mut self, cx: &mut Context<'_>) -> Poll<Option<Result<T, TaskError>>> {
        if self.len == 0 {
            return Poll::Ready(None);
        }
        if budget::poll_proceed(cx).is_pending() {
            return Poll::Pending;
        }
        if let Some(out) = self.try_join_next() {
            return Poll::Ready(Some(out));
        }
        // The waker it replaces is dropped after the lock is let go: its drop may run anything,
        // a task's end included, which takes the lock (tokio's
        // `replace_parent_waker_drops_outside_lock`). Such an end finds the new waker in place and
        // wakes it, so no ending is missed between the check above and this store.
        let old = self
            .finished
            .waker
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .replace(cx.waker().clone());
        drop(old);
        Poll::Pending
    }

    /// The result of a task that has finished, if one has, without waiting.
    ///
    /// ```
    /// evloop::run(async {
    ///     let mut set = evloop::task::JoinSet::new();
    ///     set.spawn(async { 1 });
    ///     assert!(set.try_join_next().is_none()); // not run yet
    ///     evloop::task::yield_now().await;
    ///     assert_eq!(set.try_join_next().unwrap().unwrap(), 1);
    /// })?;
    /// # Ok::<(), evloop::task::RunError>(())
    /// ```
    pub fn try_join_next(&mut self) -> Option<Result<T, TaskError>> {
        while let Some(slot) = self.finished.pop() {
            if let Some(out) = self.take_if_done(slot) {
                return Some(out);
            }
        }
        None
    }

    fn take_if_done(&mut self, slot: usize) -> Option<Result<T, TaskError>> {
        let task = self.slots.get_mut(slot)?.as_mut()?;
        if !task.done() {
            return None;
        }
        let out = task.try_result();
        self.slots[slot] = None;
        self.free.push(slot);
        self.len -= 1;
        out
    }

    /// Aborts every task of the set; they stay in it until joined (their result is
    /// `Err(Cancelled)` unless they had finished).
    ///
    /// ```
    /// evloop::run(async {
    ///     let mut set = evloop::task::JoinSet::new();
    ///     set.spawn(std::future::pending::<()>());
    ///     set.abort_all();
    ///     assert!(set.join_next().await.unwrap().unwrap_err().is_cancelled());
    /// })?;
    /// # Ok::<(), evloop::task::RunError>(())
    /// ```
    pub fn abort_all(&mut self) {
        for task in self.slots.iter().flatten() {
            task.abort();
        }
    }

    /// Aborts every task and waits until each has ended; the set is empty afterwards.
    ///
    /// ```
    /// evloop::run(async {
    ///     let mut set = evloop::task::JoinSet::new();
    ///     set.spawn(std::future::pending::<()>());
    ///     set.shutdown().await;
    ///     assert!(set.is_empty());
    /// })?;
    /// # Ok::<(), evloop::task::RunError>(())
    /// ```
    pub async fn shutdown(&mut self) {
        self.abort_all();
        while self.join_next().await.is_some() {}
    }

    /// Removes every task from the set without aborting them: they run on, detached.
    ///
    /// ```
    /// evloop::run(async {
    ///     let mut set = evloop::task::JoinSet::new();
    ///     set.spawn(evloop::task::yield_now());
    ///     set.detach_all();
    ///     assert!(set.is_empty());
    /// })?;
    /// # Ok::<(), evloop::task::RunError>(())
    /// ```
    pub fn detach_all(&mut self) {
        self.slots.clear();
        self.free.clear();
        self.len = 0;
        self.finished
            .slots
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clear();
    }

    /// Waits for every task and returns their outputs in the order they finished (tokio's
    /// `join_all`). A task that panicked re-raises its panic here; one that was cancelled panics
    /// with its error, as tokio's does (the other tasks are aborted with the set).
    ///
    /// ```
    /// evloop::run(async {
    ///     let mut set = evloop::task::JoinSet::new();
    ///     for i in 0..3 {
    ///         set.spawn(async move { i });
    ///     }
    ///     let mut outs = set.join_all().await;
    ///     outs.sort();
    ///     assert_eq!(outs, [0, 1, 2]);
    /// })?;
    /// # Ok::<(), evloop::task::RunError>(())
    /// ```
    pub async fn join_all(mut self) -> Vec<T> {
        let mut output = Vec::with_capacity(self.len());
        while let Some(res) = self.join_next().await {
            match res {
                Ok(t) => output.push(t),
                Err(err) => match err {
                    TaskError::Panicked { .. } => match err.into_panic().and_then(|mut p| p.take_payload()) {
                        Some(payload) => std::panic::resume_unwind(payload),
                        None => panic!("JoinSet::join_all: a task panicked"),
                    },
                    other => panic!("JoinSet::join_all: {other}"),
                },
            }
        }
        output
    }
}

impl<T: 'static> Default for JoinSet<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T> Drop for JoinSet<T> {
    /// Aborts the tasks still in the set (tokio's rule; `detach_all` first to keep them).
    fn drop(&mut self) {
        for task in self.slots.iter().flatten() {
            TaskRef::abort(task);
        }
    }
}

impl<T> fmt::Debug for JoinSet<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("JoinSet").field("len", &self.len).finish()
    }
}

impl<T: 'static, F: Future<Output = T> + 'static> Extend<F> for JoinSet<T> {
    /// Spawns each future into the set.
    fn extend<I: IntoIterator<Item = F>>(&mut self, iter: I) {
        for fut in iter {
            self.spawn(fut);
        }
    }
}

impl<T: 'static, F: Future<Output = T> + 'static> FromIterator<F> for JoinSet<T> {
    /// A set with each future spawned (on the running loop).
    ///
    /// ```
    /// evloop::run(async {
    ///     let set: evloop::task::JoinSet<u32> = (0..3).map(|i| async move { i }).collect();
    ///     assert_eq!(set.len(), 3);
    /// })?;
    /// # Ok::<(), evloop::task::RunError>(())
    /// ```
    fn from_iter<I: IntoIterator<Item = F>>(iter: I) -> Self {
        let mut set = JoinSet::new();
        set.extend(iter);
        set
    }
}
