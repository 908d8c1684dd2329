//! Per-thread state: which loop runs on this thread, which loops exist on it, and the timer
//! slack the loops changed.
//!
//! [`RunGuard`] is the one writer: `run_forever` and `run_once` enter it, which makes the loop
//! the thread's running loop (and refuses a second one), and its drop (panic or not) clears
//! it. Everything else reads: [`with_running`] and [`get_running_loop`] for the loop itself,
//! and [`running_loop_id`] / [`running_loop_traces`] as one thread-local load each for hot paths.
//! The builder and `close()` count the loops that asked for a timer slack, so that the thread's
//! old slack comes back with the last of them.

use std::cell::{Cell, RefCell};
use std::rc::Rc;

use evloop_syscalls as sys;

use crate::event_loop::error::{LoopError, LoopErrorKind};
use crate::event_loop::{LoopHandle, LoopInner};

thread_local! {
    static RUNNING: RefCell<Option<Rc<LoopInner>>> = const { RefCell::new(None) };
    /// Every loop created on this thread that still exists, so that a task can find its loop by
    /// id when that loop is not the running one (cancelling leftovers between runs, say).
    static LOCAL_LOOPS: RefCell<Vec<std::rc::Weak<LoopInner>>> = const { RefCell::new(Vec::new()) };
    /// The loop in `RUNNING` is in trace mode: one load for hot paths (a fiber switch) that
    /// only need to know whether to format a trace line.
    static RUNNING_TRACES: Cell<bool> = const { Cell::new(false) };
    /// The id of the loop in `RUNNING` (ids start at 1; 0 is "none"): one load for the
    /// wrong-loop check every parking future makes, without borrowing `RUNNING`.
    static RUNNING_ID: Cell<u32> = const { Cell::new(0) };
    /// (loops alive on this thread that asked for a slack, the slack to restore).
    static SLACK: Cell<(u32, u64)> = const { Cell::new((0, 0)) };
}

/// Runs `f` with the loop running on this thread, if there is one.
#[inline]
pub(crate) fn with_running<R>(f: impl FnOnce(&Rc<LoopInner>) -> R) -> Option<R> {
    RUNNING.with(|r| match r.try_borrow() {
        Ok(r) => r.as_ref().map(f),
        Err(_) => None,
    })
}

/// The loop with `id`, if it was created on this thread and still exists (the running loop is
/// checked first).
pub(crate) fn local_loop(id: u32) -> Option<Rc<LoopInner>> {
    if let Some(lp) = with_running(|lp| (lp.id == id).then(|| lp.clone())).flatten() {
        return Some(lp);
    }
    LOCAL_LOOPS.with(|l| {
        l.try_borrow()
            .ok()?
            .iter()
            .filter_map(std::rc::Weak::upgrade)
            .find(|lp| lp.id == id)
    })
}

pub(super) fn register_local(lp: &Rc<LoopInner>) {
    LOCAL_LOOPS.with(|l| {
        if let Ok(mut loops) = l.try_borrow_mut() {
            loops.retain(|w| w.strong_count() > 0);
            loops.push(Rc::downgrade(lp));
        }
    });
}

/// Whether the loop running on this thread is in trace mode (a thread-local load, for hot
/// paths; `with_running` then gives the loop to trace on).
#[inline]
pub(crate) fn running_loop_traces() -> bool {
    RUNNING_TRACES.try_with(Cell::get).unwrap_or(false)
}

/// The id of the loop running on this thread, if any (what loop-bound objects compare theirs
/// with before they let a task wait).
#[inline]
pub(crate) fn running_loop_id() -> Option<u64> {
    match RUNNING_ID.try_with(Cell::get) {
        Ok(0) | Err(_) => None,
        Ok(id) => Some(u64::from(id)),
    }
}

/// The loop running on this thread (asyncio's `get_running_loop()`).
///
/// ```
/// use evloop::event_loop::LoopErrorKind;
///
/// let err = evloop::event_loop::get_running_loop().unwrap_err();
/// assert_eq!(err.kind(), LoopErrorKind::NoRunningLoop);
/// evloop::run(async {
///     let lp = evloop::event_loop::get_running_loop()?; // asyncio.get_running_loop()
///     assert!(lp.is_running());
///     Ok::<(), evloop::event_loop::LoopError>(())
/// })??;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn get_running_loop() -> Result<LoopHandle, LoopError> {
    with_running(|lp| LoopHandle { inner: lp.clone() })
        .ok_or_else(|| LoopError::new(LoopErrorKind::NoRunningLoop, "get_running_loop"))
}

pub(super) fn acquire_timer_slack(ns: u64) {
    SLACK.with(|s| {
        let (count, saved) = s.get();
        if count == 0 {
            let saved = sys::timer_slack().unwrap_or(0);
            let _ = sys::set_timer_slack(ns.max(1));
            s.set((1, saved));
        } else {
            s.set((count + 1, saved));
        }
    });
}

pub(super) fn release_timer_slack() {
    SLACK.with(|s| {
        let (count, saved) = s.get();
        if count == 1 && saved != 0 {
            let _ = sys::set_timer_slack(saved);
        }
        s.set((count.saturating_sub(1), saved));
    });
}

/// Marks a loop as running on this thread for as long as it lives (panic-safe).
pub(super) struct RunGuard {
    lp: Rc<LoopInner>,
}

impl RunGuard {
    pub(super) fn enter(lp: &Rc<LoopInner>, op: &'static str) -> Result<RunGuard, LoopError> {
        if lp.closed.get() {
            return Err(LoopError::new(LoopErrorKind::Closed, op));
        }
        if lp.running.get() {
            return Err(LoopError::new(LoopErrorKind::AlreadyRunning, op));
        }
        let entered = RUNNING.with(|r| {
            let mut r = r.borrow_mut();
            if r.is_some() {
                return false;
            }
            *r = Some(lp.clone());
            true
        });
        if !entered {
            return Err(LoopError::new(LoopErrorKind::AnotherLoopRunning, op));
        }
        lp.running.set(true);
        let _ = RUNNING_TRACES.try_with(|t| t.set(lp.tracing()));
        let _ = RUNNING_ID.try_with(|t| t.set(lp.id));
        Ok(RunGuard { lp: lp.clone() })
    }
}

impl Drop for RunGuard {
    fn drop(&mut self) {
        self.lp.running.set(false);
        let _ = RUNNING_TRACES.try_with(|t| t.set(false));
        let _ = RUNNING_ID.try_with(|t| t.set(0));
        RUNNING.with(|r| {
            // Take it out first, drop it after the borrow ends.
            let old = r.borrow_mut().take();
            drop(old);
        });
    }
}
