//! [`yield_now`]: give other ready work a turn (asyncio's `await asyncio.sleep(0)`). The
//! future wakes its own task once and returns `Pending`, so the task goes to the back of the
//! ready queue and runs again in the next iteration, after I/O has been polled.
//! [`consume_budget`] is the conditional form: it yields only once the task's step has used up
//! its budget of ready operations (tokio's `task::consume_budget`).

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use crate::event_loop::budget;
use crate::event_loop::trace::{Awaiting, note_awaiting};

/// Spends one unit of the task's budget, the one its ready I/O and sync operations spend (128 per
/// step), and yields to the loop only when the budget is used up (tokio's
/// `task::consume_budget`): a long computation that calls it in its loop lets other work run
/// without paying a yield on every turn. Outside a task it never waits.
///
/// ```
/// let turns = evloop::run(async {
///     let other = evloop::spawn(async {});
///     let mut turns = 0;
///     while !other.done() {
///         evloop::task::consume_budget().await; // yields after 128 turns, not on each
///         turns += 1;
///     }
///     turns
/// })?;
/// assert_eq!(turns, 129); // 128 turns without a yield, then the one that yielded
/// # Ok::<(), evloop::task::RunError>(())
/// ```
pub async fn consume_budget() {
    std::future::poll_fn(budget::poll_proceed).await
}

/// Gives other ready work a turn (asyncio's `await asyncio.sleep(0)`): the task is queued again
/// and runs in the next loop iteration, after I/O has been polled.
///
/// ```
/// use std::cell::RefCell;
/// use std::rc::Rc;
///
/// let log = evloop::run(async {
///     let log = Rc::new(RefCell::new(Vec::new()));
///     let l = log.clone();
///     evloop::spawn(async move { l.borrow_mut().push("other task") });
///     log.borrow_mut().push("before");
///     evloop::task::yield_now().await; // await asyncio.sleep(0): the other task runs
///     log.borrow_mut().push("after");
///     log.take()
/// })?;
/// assert_eq!(log, ["before", "other task", "after"]);
/// # Ok::<(), evloop::task::RunError>(())
/// ```
pub fn yield_now() -> YieldNow {
    YieldNow { yielded: false }
}

/// The future of [`yield_now`].
///
/// ```
/// use evloop::event_loop::Awaiting;
///
/// evloop::run(async {
///     let t = evloop::spawn(evloop::task::yield_now());
///     evloop::task::yield_now().await; // `t` ran once and asked to run again
///     assert_eq!(t.awaiting(), Awaiting::Yield);
///     t.await
/// })??;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
#[must_use = "futures do nothing unless you `.await` or poll them"]
pub struct YieldNow {
    yielded: bool,
}

impl Future for YieldNow {
    type Output = ();
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        if self.yielded {
            return Poll::Ready(());
        }
        self.yielded = true;
        cx.waker().wake_by_ref();
        note_awaiting(Awaiting::Yield);
        Poll::Pending
    }
}
