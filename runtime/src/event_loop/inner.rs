//! The loop's state: [`LoopInner`], everything one loop owns, with the invariant each field
//! keeps, and the small operations the layers above call on it (schedule ready work, add and
//! cancel timers, trace, read the clock).
//!
//! Work reaches phase 5 as [`Ready`] items in `ready`; timers hold [`TimerEntry`] payloads.
//! The loop knows tasks only through [`TaskHooks`], which the task layer registers, and
//! transports' buffered output only through [`DeferredFlush`]. The phases that consume all this
//! are in `phases`; the handles that users hold are in `loop_handle`.

use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::panic::Location;
use std::rc::Rc;
use std::sync::Arc;
use std::task::Waker;
use std::time::Duration;

use evloop_timers::{TimerId, TimerQueue};

use crate::event_loop::clock::Clock;
use crate::event_loop::exception::ExceptionHandler;
use crate::event_loop::handle::{Callback, HandleKind, OnceCallback, TimerCancels};
use crate::event_loop::load::Load;
use crate::event_loop::raw_task::{self, CurrentTask, OwnerToken, TaskPtr};
use crate::event_loop::reactor::Reactor;
use crate::event_loop::remote::{Remote, Shared};
use crate::event_loop::sites;
use crate::event_loop::slots::LoopSlots;
use crate::event_loop::task_table::TaskTable;
use crate::event_loop::trace::Tracer;

/// How many empty task extras a loop keeps for reuse.
const SPARE_EXTRAS: usize = 1024;

/// Work in the ready queue: a callback, or a task to step (a counted reference to its cell).
pub(crate) enum Ready {
    Callback(Rc<dyn Callback>),
    Task(TaskPtr),
}

/// What a timer does when it expires: schedule a callback (`call_later`) or wake a task (`sleep`).
pub(crate) enum TimerEntry {
    Callback(Rc<dyn Callback>),
    Wake(Waker),
}

/// How the loop runs tasks without knowing what a task is: the `task` module registers these
/// functions with a loop when it creates the loop's first task. The loop keeps tasks as raw
/// cells (`raw_task`) in its ready queue and table; the semantics of a step (states, results,
/// cancellation, done callbacks) are the task module's.
pub(crate) struct TaskHooks {
    /// Runs one step of a task taken off the ready queue.
    pub(crate) step: fn(&Rc<LoopInner>, TaskPtr),
    /// Drops a task's future without scheduling anything (the loop is closing).
    pub(crate) shutdown: fn(&Rc<LoopInner>, TaskPtr),
}

/// Output that a higher layer buffered while phase 5 ran, sent when the phase ends: a
/// transport's write-behind, so that every write made to one connection during one iteration
/// leaves in one send (16 pipelined responses: one `send`, not 16).
pub(crate) trait DeferredFlush {
    /// Sends what is buffered (or leaves it for the next writable edge).
    fn flush(self: Rc<Self>);
}

/// Everything a loop owns. Fields are documented with the invariant they keep.
pub(crate) struct LoopInner {
    /// Process-unique id: wakers compare it with the running loop's to take the local path.
    pub(crate) id: u32,
    /// The thread-safe part, shared with wakers and remote handles.
    pub(crate) shared: Arc<Shared>,
    pub(crate) clock: Clock,
    /// Phase 5's input. Only this thread pushes (call_soon, wakes, phases 3 and 4).
    pub(crate) ready: RefCell<VecDeque<Ready>>,
    /// Pending timers. Entries whose handle was cancelled are listed in `timer_cancels` and
    /// removed by phase 1 of the next iteration.
    pub(crate) timers: RefCell<TimerQueue<TimerEntry>>,
    pub(crate) timer_cancels: Rc<TimerCancels>,
    /// `None` once closed.
    pub(super) reactor: RefCell<Option<Reactor>>,
    /// Spare buffer for draining the remote queue without allocating.
    pub(super) remote_buf: RefCell<Vec<Remote>>,
    /// Every task that has not finished: the loop holds them strongly (asyncio only keeps weak
    /// references, so an unreferenced task could vanish mid-run; evloop's cannot).
    pub(crate) tasks: RefCell<TaskTable>,
    /// The task being stepped, if any.
    pub(crate) current: CurrentTask,
    /// Proof of being on this loop's thread: turns remote wakes back into task references.
    pub(crate) owner: OwnerToken,
    /// How to step and shut down tasks; set by the task module with the first task.
    pub(crate) task_hooks: Cell<Option<&'static TaskHooks>>,
    pub(crate) running: Cell<bool>,
    pub(super) stopping: Cell<bool>,
    pub(super) closed: Cell<bool>,
    pub(super) iteration: Cell<u64>,
    pub(super) exception_handler: RefCell<Option<Rc<ExceptionHandler>>>,
    pub(super) debug: Cell<bool>,
    pub(super) slow_callback: Duration,
    pub(super) tracer: Option<Tracer>,
    pub(crate) eager_tasks: bool,
    pub(super) slack_acquired: Cell<bool>,
    /// The bound of the next executor pool (`Builder::executor_threads`, `set_default_executor`);
    /// the pool itself sits in one of the loop's slots (`executor`).
    pub(crate) executor_threads: Cell<usize>,
    /// State that the layers above keep per loop (task numbers and promise ids, the transports'
    /// receive buffer, the pipes' `SIGPIPE` block, signal dispatch, the executor pool), in typed
    /// slots (`slots`), closed by `close()` before the reactor.
    pub(super) slots: LoopSlots,
    /// The `now` of the last phase 4: every timer with a deadline at or before it has left the
    /// heap (a `Sleep` that completes need not cancel its timer then).
    pub(crate) expired_through: Cell<u64>,
    /// Reusable buffer for the wakers an I/O event wakes.
    pub(super) io_wakers: RefCell<Vec<Waker>>,
    /// Trace mode: set during phases 1-4, whose lines wait in `deferred` for the summary line.
    pub(super) deferring: Cell<bool>,
    pub(super) deferred: RefCell<Vec<String>>,
    /// Set during phase 4 so that trace mode folds the wakes it causes into the iteration line.
    pub(super) expiring: Cell<bool>,
    pub(super) woken_by_timers: RefCell<Vec<String>>,
    /// Transports written to during this phase 5, flushed when it ends (`defer_flush`).
    pub(super) deferred_flushes: RefCell<Vec<Rc<dyn DeferredFlush>>>,
    /// Tasks' extra parts (join waker, callbacks, ...) left empty when their task finished,
    /// reused by the next task that needs one (bounded by `SPARE_EXTRAS`). A field, not a slot:
    /// the extra part is the raw task cell's own (`raw_task::TaskExtra`, the loop layer's type),
    /// and this is the loop's free list of them, as the task table's free slots are; the task
    /// layer only takes one ([`take_spare_extra`](LoopInner::take_spare_extra)) and gives one
    /// back ([`keep_spare_extra`](LoopInner::keep_spare_extra)).
    // Boxed on purpose: a spare moves into a task header as the Box it already is.
    #[allow(clippy::vec_box)]
    pub(super) spare_extras: RefCell<Vec<Box<raw_task::TaskExtra>>>,
    /// The last task creation site interned, by address, with its id: most spawns repeat it.
    pub(super) last_site: Cell<(usize, u32)>,
    /// Busy time and connection counts, readable from other threads (`load`).
    pub(crate) load: Arc<Load>,
    /// Whether every iteration adds its busy time to `load` (the builder's `measure_busy`).
    pub(super) measure_busy: bool,
}

impl LoopInner {
    #[inline]
    pub(crate) fn is_closed(&self) -> bool {
        self.closed.get()
    }

    #[inline]
    pub(crate) fn tracing(&self) -> bool {
        self.tracer.is_some()
    }

    /// Emits a trace line; `line` is only called when trace mode is on (inlined, so that with
    /// trace mode off a call site costs one test of `tracer`).
    #[inline(always)]
    pub(crate) fn trace(&self, line: impl FnOnce() -> String) {
        if self.tracer.is_some() {
            self.emit_trace(line());
        }
    }

    #[cold]
    #[inline(never)]
    fn emit_trace(&self, line: String) {
        if let Some(t) = &self.tracer {
            if self.deferring.get() {
                self.deferred.borrow_mut().push(line);
            } else {
                t.line(&line);
            }
        }
    }

    #[inline]
    pub(crate) fn debug(&self) -> bool {
        self.debug.get()
    }

    #[inline]
    pub(crate) fn slow_callback(&self) -> Duration {
        self.slow_callback
    }

    /// The interned id of a task creation site (`sites::intern`), cached for the common case of
    /// a spawn from the same line as the last one.
    #[inline]
    pub(crate) fn site_id(&self, site: &'static Location<'static>) -> u32 {
        let addr = site as *const Location<'static> as usize;
        let (last, id) = self.last_site.get();
        if last == addr {
            return id;
        }
        let id = sites::intern(site);
        self.last_site.set((addr, id));
        id
    }

    /// Loop time, nanoseconds since the loop's epoch.
    #[inline]
    pub(crate) fn now(&self) -> u64 {
        self.clock.now()
    }

    /// `call_soon` on the loop's thread, after the checks: the callback joins the ready queue
    /// behind whatever was scheduled before it, including work other threads queued remotely
    /// before this call (moved over first), so scheduling is FIFO across threads as in
    /// asyncio, whose `call_soon_threadsafe` appends to the same deque.
    pub(crate) fn call_soon_local<F: FnOnce() + 'static>(
        self: &Rc<Self>,
        kind: HandleKind,
        site: &'static Location<'static>,
        f: F,
    ) -> Rc<dyn Callback> {
        if self.shared.has_pending() {
            self.drain_remote(false);
        }
        let cb = OnceCallback::new_rc(kind, site, f);
        self.push_ready(Ready::Callback(cb.clone()));
        cb
    }

    /// Schedules a one-shot callback for the next phase 5 (call_soon without the checks).
    #[inline]
    pub(crate) fn push_ready(&self, item: Ready) {
        self.ready.borrow_mut().push_back(item);
    }

    /// Inserts a timer; returns its id.
    pub(crate) fn add_timer(&self, deadline: u64, entry: TimerEntry) -> TimerId {
        self.timers.borrow_mut().insert(deadline, entry)
    }

    /// Asks phase 1 to remove a timer (stale ids are ignored there).
    pub(crate) fn cancel_timer(&self, id: TimerId) {
        if let Ok(mut ids) = self.timer_cancels.ids.try_borrow_mut() {
            ids.push(id);
        }
    }

    /// An emptied extra part left by a finished task, for a task that needs one now.
    #[inline]
    pub(crate) fn take_spare_extra(&self) -> Option<Box<raw_task::TaskExtra>> {
        self.spare_extras.borrow_mut().pop()
    }

    /// Keeps an emptied extra part (see [`Header::take_empty_extra`](raw_task::Header::take_empty_extra))
    /// for the next task that needs one, up to `SPARE_EXTRAS`.
    #[inline]
    pub(crate) fn keep_spare_extra(&self, mut extra: Box<raw_task::TaskExtra>) {
        let mut spares = self.spare_extras.borrow_mut();
        if spares.len() < SPARE_EXTRAS {
            extra.next_callback = 0;
            spares.push(extra);
        }
    }

    /// Trace line for a task wake on the loop thread (folded into the iteration line in phase 4).
    pub(crate) fn trace_wake(&self, label: String) {
        if self.expiring.get() {
            self.woken_by_timers.borrow_mut().push(label);
        } else {
            self.trace(|| format!("  wake {label}"));
        }
    }
}
