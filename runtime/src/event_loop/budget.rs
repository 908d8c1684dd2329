//! The per-task budget of ready operations (tokio's coop budget): each step of a task may
//! complete [`BUDGET`] I/O operations that were ready at once; after that, the I/O futures
//! return `Pending` and wake the task, which runs again in the next iteration, after the loop
//! has polled for I/O and run the timers and callbacks that were due.
//!
//! Why: a task whose I/O never says `EAGAIN` (a peer that sends faster than it reads, a `copy`
//! from a source that is always ready) would otherwise never return from its step, and nothing
//! else on the loop would run. asyncio's streams yield because their buffer refills only in
//! the I/O phase; evloop's readiness-based sockets need the budget instead.
//!
//! How data flows: [`CurrentTask::enter`](crate::event_loop::raw_task::CurrentTask::enter) gives
//! each step a fresh budget ([`enter_step`]) and puts the previous one back when the step ends
//! (a step nested in another, an eager start, leaves the outer step's budget as it was); the I/O
//! layer calls [`poll_proceed`] once per ready operation. Outside a step (loop callbacks,
//! protocols, a future polled by hand) the budget is unconstrained: only tasks are limited.

use std::cell::Cell;
use std::task::{Context, Poll};

/// Ready operations a task may complete in one step (tokio's number).
pub(crate) const BUDGET: u16 = 128;

/// The value outside any step: never spent.
const UNCONSTRAINED: u16 = u16::MAX;

thread_local! {
    /// What the step being run on this thread has left. A thread-local rather than a field of
    /// the loop: an I/O future may not know its loop (a `copy` between two user types), and
    /// a value bound to one loop could be left spent for a task polled by another.
    static LEFT: Cell<u16> = const { Cell::new(UNCONSTRAINED) };
}

/// Starts a step's budget; returns the budget it replaces, for [`leave_step`].
#[inline]
pub(crate) fn enter_step() -> u16 {
    LEFT.with(|l| l.replace(BUDGET))
}

/// Ends a step: puts back the budget [`enter_step`] replaced.
#[inline]
pub(crate) fn leave_step(previous: u16) {
    LEFT.with(|l| l.set(previous));
}

/// Spends one unit for an operation that is ready now. `Pending` when the step's budget is
/// spent: the task's waker is woken first, so the task runs again in the next iteration (a
/// task that wakes itself during its step is not stepped again in the same iteration).
#[inline]
pub(crate) fn poll_proceed(cx: &mut Context<'_>) -> Poll<()> {
    LEFT.with(|l| match l.get() {
        0 => {
            cx.waker().wake_by_ref();
            Poll::Pending
        }
        UNCONSTRAINED => Poll::Ready(()),
        left => {
            l.set(left - 1);
            Poll::Ready(())
        }
    })
}

/// Whether the step's budget is spent (never outside a step): an operation that would
/// complete now must return `Pending` instead (see [`poll_proceed`]).
#[inline]
pub(crate) fn spent() -> bool {
    LEFT.with(|l| l.get() == 0)
}

/// Spends one unit for an operation that completed (after the fact, for waits that check
/// [`spent`] first and spend only when they complete, as tokio's coop refunds a `Pending`).
#[inline]
pub(crate) fn spend() {
    LEFT.with(|l| match l.get() {
        0 | UNCONSTRAINED => {}
        left => l.set(left - 1),
    })
}

#[cfg(test)]
mod tests {
    use std::task::Waker;

    use super::*;

    #[test]
    fn a_step_spends_its_budget_then_waits_and_the_outer_budget_comes_back() {
        let mut cx = Context::from_waker(Waker::noop());
        assert!(poll_proceed(&mut cx).is_ready(), "outside a step nothing is counted");
        let outer = enter_step();
        assert_eq!(outer, UNCONSTRAINED);
        assert!(poll_proceed(&mut cx).is_ready());
        let inner = enter_step(); // an eager child's step inside this one
        for _ in 0..BUDGET {
            assert!(poll_proceed(&mut cx).is_ready());
        }
        assert!(poll_proceed(&mut cx).is_pending(), "the child's budget is spent");
        leave_step(inner);
        assert_eq!(LEFT.with(Cell::get), BUDGET - 1, "the parent's budget is as it left it");
        leave_step(outer);
        assert_eq!(LEFT.with(Cell::get), UNCONSTRAINED);
    }
}
