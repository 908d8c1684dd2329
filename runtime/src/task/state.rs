//! The task layer's state of one task: the public [`TaskState`], and `Core`, the task layer's
//! view of a cell's header through which every change of that state goes.
//!
//! The state and three flags live in the header's flag bits (the neutral slot the cell keeps for
//! this layer). Each change is a method of `Core` named after the transition it makes
//! (`begin_step`, `end_poll`, `finish`, `request_cancel`, `detach`, `observe`), checked with a
//! `debug_assert!` against the table of states and transitions in the cell's module
//! documentation (`event_loop/raw_task.rs`), which lists them together with the cell's own
//! stage and wake bit; the methods whose outcome decides what the caller does next return it
//! `#[must_use]`. The step, the handles and the spawning functions (`step.rs`, `handle.rs`,
//! `spawn.rs`) read and change the state only through here; the task tree (`tree.rs`) reads it.

use std::panic::Location;
use std::rc::Rc;

use crate::event_loop::error::Panic;
use crate::event_loop::raw_task::{DoneEntry, Header};
use crate::event_loop::trace::Awaiting;
use crate::event_loop::{LoopInner, local_loop, sites};

/// Where a task is in its life.
///
/// ```
/// use evloop::task::TaskState;
///
/// evloop::run(async {
///     let t = evloop::spawn(async { evloop::task::current_task().map(|me| me.state()) });
///     assert_eq!(t.state(), TaskState::Pending); // scheduled with call_soon, not run yet
///     let watch = t.task_ref();
///     assert_eq!(t.await?, Some(TaskState::Running)); // what it saw while it ran
///     assert_eq!(watch.state(), TaskState::Done);
///
///     let stuck = evloop::spawn(std::future::pending::<()>());
///     stuck.cancel();
///     evloop::task::yield_now().await; // its next step drops the future
///     assert_eq!(stuck.state(), TaskState::Cancelled);
///     Ok::<(), evloop::task::TaskError>(())
/// })??;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum TaskState {
    /// Not finished, not running: waiting for a wake, or queued for its next step.
    Pending,
    /// Its future is being polled right now.
    Running,
    /// Finished with a value.
    Done,
    /// Cancelled: its future was dropped before completing.
    Cancelled,
    /// Its future panicked.
    Failed,
}

impl TaskState {
    /// Finished in any way.
    ///
    /// ```
    /// use evloop::task::TaskState;
    ///
    /// assert!(TaskState::Done.is_finished());
    /// assert!(TaskState::Cancelled.is_finished() && TaskState::Failed.is_finished());
    /// assert!(!TaskState::Pending.is_finished() && !TaskState::Running.is_finished());
    /// ```
    pub fn is_finished(self) -> bool {
        matches!(self, TaskState::Done | TaskState::Cancelled | TaskState::Failed)
    }

    pub(super) fn as_str(self) -> &'static str {
        match self {
            TaskState::Pending => "pending",
            TaskState::Running => "running",
            TaskState::Done => "finished",
            TaskState::Cancelled => "cancelled",
            TaskState::Failed => "failed",
        }
    }

    pub(super) fn bits(self) -> u32 {
        match self {
            TaskState::Pending => 0,
            TaskState::Running => 1,
            TaskState::Done => 2,
            TaskState::Cancelled => 3,
            TaskState::Failed => 4,
        }
    }

    fn from_bits(bits: u32) -> TaskState {
        match bits & STATE_MASK {
            1 => TaskState::Running,
            2 => TaskState::Done,
            3 => TaskState::Cancelled,
            4 => TaskState::Failed,
            _ => TaskState::Pending,
        }
    }

    /// Whether the table of transitions (`raw_task`'s module documentation) goes from `self` to
    /// `to`: a value or a panic needs a poll; cancelling needs none.
    fn can_become(self, to: TaskState) -> bool {
        use TaskState::*;
        matches!(
            (self, to),
            (Pending, Running | Cancelled) | (Running, Pending | Done | Failed | Cancelled)
        )
    }
}

// The task layer's bits in the header's flags (`raw_task::FLAGS_BITS` of them).
const STATE_MASK: u32 = 0b111;
/// `cancel()` was called: the next step drops the future instead of polling it.
const CANCEL_REQUESTED: u32 = 1 << 3;
/// The `Task` handle was dropped: nobody can observe the result.
const DETACHED: u32 = 1 << 4;
/// The outcome was taken (awaited, `try_result`) or a failure was reported.
const OBSERVED: u32 = 1 << 5;

/// What a step does with a task it took off the ready queue ([`Core::begin_step`]).
#[must_use]
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(super) enum StepStart {
    /// A stale wake: the task finished, or it is being polled right now (its own eager child
    /// woke it; a wake during the poll queued it again anyway). Nothing to do.
    Stale,
    /// Cancellation was requested, or the future is gone: drop it and finish `Cancelled`.
    Cancel,
    /// The task is `Running` now: poll it.
    Poll,
}

/// The outcome of [`Core::finish`].
#[must_use]
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(super) enum Finishing {
    /// It had finished already (an abort from one of its own destructors finished it while its
    /// future was being dropped): once is enough.
    Already,
    /// It has finished now; `detached` says whether its handle is gone (nobody can take the
    /// output or observe a failure).
    Now { detached: bool },
}

/// The outcome of [`Core::request_cancel`].
#[must_use]
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(super) enum CancelRequest {
    /// The task had finished: nothing to cancel.
    Finished,
    /// Requested before, not yet done.
    Again,
    /// Requested now.
    First,
}

/// The task-level view of a header: its state and flags, and the extra part's contents.
pub(super) struct Core<'a>(pub(super) &'a Header);

impl Core<'_> {
    #[inline]
    pub(super) fn state(&self) -> TaskState {
        TaskState::from_bits(self.0.flags())
    }

    /// Every state change goes through here, checked against the table.
    #[inline]
    fn set_state(&self, to: TaskState) {
        debug_assert!(
            self.state().can_become(to),
            "task state {:?} -> {to:?} is not a transition of the table",
            self.state()
        );
        self.0.set_flags((self.0.flags() & !STATE_MASK) | to.bits());
    }

    #[inline]
    fn has(&self, flag: u32) -> bool {
        self.0.flags() & flag != 0
    }

    /// Sets `flag`; returns whether it was already set.
    #[inline]
    fn set(&self, flag: u32) -> bool {
        let flags = self.0.flags();
        self.0.set_flags(flags | flag);
        flags & flag != 0
    }

    /// Pending -> Running, unless the wake that queued the task is stale or it is to be
    /// cancelled (made by the step, before it polls).
    #[inline]
    pub(super) fn begin_step(&self) -> StepStart {
        let state = self.state();
        if state.is_finished() || state == TaskState::Running {
            return StepStart::Stale;
        }
        if self.has(CANCEL_REQUESTED) || !self.0.has_future() {
            return StepStart::Cancel;
        }
        self.set_state(TaskState::Running);
        StepStart::Poll
    }

    /// Running -> Pending: the poll returned `Pending` (made by the step).
    #[inline]
    pub(super) fn end_poll(&self) {
        self.set_state(TaskState::Pending);
    }

    /// Pending or Running -> `to` (Done, Cancelled or Failed), once.
    #[inline]
    pub(super) fn finish(&self, to: TaskState) -> Finishing {
        debug_assert!(to.is_finished());
        debug_assert!(!self.0.has_future(), "a task finishes once its future is gone");
        if self.state().is_finished() {
            return Finishing::Already;
        }
        self.set_state(to);
        Finishing::Now {
            detached: self.has(DETACHED),
        }
    }

    /// Counts a cancel request and sets `CANCEL_REQUESTED` on an unfinished task (`cancel`,
    /// `abort`).
    pub(super) fn request_cancel(&self) -> CancelRequest {
        if self.state().is_finished() {
            return CancelRequest::Finished;
        }
        self.count_cancel();
        if self.set(CANCEL_REQUESTED) {
            CancelRequest::Again
        } else {
            CancelRequest::First
        }
    }

    /// Whether cancellation was requested (it may have finished since).
    #[inline]
    pub(super) fn cancel_requested(&self) -> bool {
        self.has(CANCEL_REQUESTED)
    }

    /// Sets `CANCEL_REQUESTED` without counting a request: one already counted is to end the
    /// task after all (a `Timeout` found that the requests are not all its own).
    pub(super) fn demand_cancel(&self) {
        if !self.state().is_finished() {
            self.set(CANCEL_REQUESTED);
        }
    }

    /// Counts one cancel request (asyncio's `_num_cancels_requested += 1`). Alone, without
    /// `CANCEL_REQUESTED`, it is a `Timeout`'s own request: the step still polls the future, and
    /// the timeout turns it into its `Elapsed`.
    pub(super) fn count_cancel(&self) {
        self.0
            .extra_mut(|e| e.cancel_requests = e.cancel_requests.saturating_add(1));
    }

    /// The cancel requests not taken back (asyncio's `cancelling()`).
    pub(super) fn cancel_requests(&self) -> u32 {
        self.0.with_extra(|e| e.map_or(0, |e| e.cancel_requests))
    }

    /// Takes one request back (asyncio 3.13's `uncancel()`): at zero, a cancel that has not
    /// taken effect is withdrawn, so the task's next step polls its future again. Returns the
    /// requests left.
    pub(super) fn uncancel(&self) -> u32 {
        let left = self.0.with_extra(|e| match e {
            Some(e) if e.cancel_requests > 0 => {
                e.cancel_requests -= 1;
                e.cancel_requests
            }
            _ => 0,
        });
        if left == 0 && !self.state().is_finished() {
            self.0.set_flags(self.0.flags() & !CANCEL_REQUESTED);
        }
        left
    }

    /// Sets `DETACHED`: the `Task` handle is gone (made once, by its `Drop`).
    #[inline]
    pub(super) fn detach(&self) {
        let again = self.set(DETACHED);
        debug_assert!(!again, "a task has one `Task` handle, dropped once");
    }

    /// Sets `OBSERVED`; true if this call did (the caller is the one that takes the outcome or
    /// reports the failure).
    #[inline]
    pub(super) fn observe(&self) -> bool {
        !self.set(OBSERVED)
    }

    /// Whether the outcome was taken or the failure reported.
    #[inline]
    pub(super) fn observed(&self) -> bool {
        self.has(OBSERVED)
    }

    pub(super) fn number(&self) -> u64 {
        u64::from(self.0.number())
    }

    pub(super) fn site(&self) -> &'static Location<'static> {
        sites::lookup(self.0.site())
    }

    pub(super) fn awaiting(&self) -> Awaiting {
        Awaiting::unpack(self.0.awaiting())
    }

    pub(super) fn label(&self) -> String {
        self.0.label()
    }

    /// Takes the done callbacks (to schedule or drop them outside the header).
    pub(super) fn take_callbacks(&self) -> Vec<DoneEntry> {
        self.0
            .with_extra(|e| e.map(|e| std::mem::take(&mut e.callbacks)).unwrap_or_default())
    }

    pub(super) fn take_join_waker(&self) -> Option<std::task::Waker> {
        self.0.with_extra(|e| e.and_then(|e| e.join_waker.take()))
    }

    /// Remembers the awaiter's waker (keeping the stored one if it wakes the same task). The
    /// extra part comes from the loop's spares when there is one: awaiting a running task is
    /// the common case and must not cost an allocation per task.
    pub(super) fn set_join_waker(&self, waker: &std::task::Waker) {
        let spare = || {
            local_loop(self.0.owner())
                .and_then(|lp| lp.take_spare_extra())
                .unwrap_or_default()
        };
        self.0.extra_mut_from(spare, |e| match &e.join_waker {
            Some(w) if w.will_wake(waker) => {}
            _ => e.join_waker = Some(waker.clone()),
        });
    }

    /// Gives an emptied extra part back to the loop for the next task.
    pub(super) fn recycle_extra(&self, lp: &LoopInner) {
        if let Some(extra) = self.0.take_empty_extra() {
            lp.keep_spare_extra(extra);
        }
    }

    pub(super) fn take_panic(&self) -> Option<Panic> {
        self.0.with_extra(|e| e.and_then(|e| e.panic.take()))
    }

    /// The task's loop, if it still exists.
    pub(super) fn event_loop(&self) -> Option<Rc<LoopInner>> {
        local_loop(self.0.owner())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ALL: [TaskState; 5] = [
        TaskState::Pending,
        TaskState::Running,
        TaskState::Done,
        TaskState::Cancelled,
        TaskState::Failed,
    ];

    #[test]
    fn task_flags_fit_the_header_bits() {
        for s in ALL {
            assert_eq!(
                TaskState::from_bits(s.bits() | CANCEL_REQUESTED | DETACHED | OBSERVED),
                s
            );
        }
        const { assert!(OBSERVED < (1 << crate::event_loop::raw_task::FLAGS_BITS)) };
    }

    #[test]
    fn a_finished_state_is_final() {
        for from in ALL.into_iter().filter(|s| s.is_finished()) {
            assert!(ALL.iter().all(|&to| !from.can_become(to)), "{from:?}");
        }
        assert!(TaskState::Pending.can_become(TaskState::Running));
        assert!(!TaskState::Pending.can_become(TaskState::Done), "a value needs a poll");
    }
}
