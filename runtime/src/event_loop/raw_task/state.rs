//! The cell's own states and their transitions (the table is in `raw_task`'s module
//! documentation): the atomic `state` word (reference count and `NOTIFIED`, touched from any
//! thread) and the `meta` word (the [`Stage`], the `EXTRA` bit, the task layer's flag bits and
//! the creation site, loop thread only). Each transition is one method of `Header` here, and
//! `debug_assert!`s that the table allows it; nothing else writes these words. No `unsafe` here.

use std::sync::atomic::{Ordering, fence};

use crate::event_loop::raw_task::Header;

/// Set while the task sits in a ready or remote queue and has not been stepped yet.
pub(super) const NOTIFIED: usize = 1;
/// One reference in `state` (the count lives above the flag bit).
pub(super) const REF_ONE: usize = 2;
/// Beyond this many references something leaks wakers in a loop; abort like `Arc` does
/// rather than let the count wrap.
const MAX_REFS: usize = (isize::MAX as usize) / 2;

// The `meta` word, lowest bits first: the stage (2 bits), `EXTRA`, the task layer's flags,
// the creation site's id.
const STAGE_MASK: u32 = 0b11;
/// Set while the header's `extra` holds an extra part: the fast paths test this bit instead
/// of looking into the `Cell`.
const EXTRA: u32 = 1 << 2;
const FLAGS_SHIFT: u32 = 3;
/// How many bits of `meta` the task layer has for its own state and flags.
pub(crate) const FLAGS_BITS: u32 = 9;
const FLAGS_MASK: u32 = ((1 << FLAGS_BITS) - 1) << FLAGS_SHIFT;
/// The creation site's id (see `event_loop::sites`) takes the upper 20 bits.
const SITE_SHIFT: u32 = FLAGS_SHIFT + FLAGS_BITS;
/// Site ids must fit here.
pub(crate) const MAX_SITE_ID: u32 = (1 << (32 - SITE_SHIFT)) - 1;

/// What the slot after the header holds.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum Stage {
    /// Nothing: the future was dropped (or is being dropped) and there is no output, or the
    /// output was taken or dropped.
    Empty = 0,
    /// The future, not being polled.
    Future = 1,
    /// The future, being polled right now: every other access to the slot aborts the process.
    Polling = 2,
    /// The future's output, not taken yet.
    Output = 3,
}

impl Stage {
    #[inline]
    fn from_bits(bits: u32) -> Stage {
        match bits & STAGE_MASK {
            0 => Stage::Empty,
            1 => Stage::Future,
            2 => Stage::Polling,
            _ => Stage::Output,
        }
    }

    /// The stage transitions of the table.
    fn can_become(self, to: Stage) -> bool {
        matches!(
            (self, to),
            (Stage::Future, Stage::Polling | Stage::Empty)
                | (Stage::Polling, Stage::Future)
                | (Stage::Empty, Stage::Output)
                | (Stage::Output, Stage::Empty)
        )
    }
}

/// The meta word of a new task: its stage is `Future`.
pub(super) fn initial_meta(flags: u32, site: u32) -> u32 {
    debug_assert!(site <= MAX_SITE_ID && flags < (1 << FLAGS_BITS));
    Stage::Future as u32 | ((flags << FLAGS_SHIFT) & FLAGS_MASK) | (site.min(MAX_SITE_ID) << SITE_SHIFT)
}

/// Aborts the process: `op` reached the slot of a task whose future is being polled, which would
/// drop or move it under the running poll. Nothing in evloop does that; if something ever does,
/// stopping here is the only sound answer (unwinding would run the same poll's frames).
#[cold]
#[inline(never)]
pub(super) fn refuse_while_polling(op: &str) -> ! {
    eprintln!(
        "evloop: fatal: {op} on a task whose future is being polled (its cell is in the Polling stage); \
         aborting: this is a bug in evloop"
    );
    std::process::abort()
}

impl Header {
    /// A new reference: `TaskPtr::clone`, a `Waker` clone, a `Notified` made by a wake.
    #[inline]
    pub(super) fn ref_inc(&self) {
        let prev = self.state.fetch_add(REF_ONE, Ordering::Relaxed);
        if prev / REF_ONE > MAX_REFS {
            std::process::abort();
        }
    }

    /// Drops one reference; true if it was the last.
    #[inline]
    pub(super) fn ref_dec(&self) -> bool {
        let prev = self.state.fetch_sub(REF_ONE, Ordering::Release);
        debug_assert!(prev >= REF_ONE, "a task cell's reference count went below zero");
        if prev / REF_ONE != 1 {
            return false;
        }
        // Everything other threads did before dropping their references happens before the
        // memory is freed (the same fence as `Arc`'s).
        fence(Ordering::Acquire);
        true
    }

    /// Clear -> set `NOTIFIED`; true if this call set it (the caller must then schedule the
    /// task, handing it a reference).
    #[inline]
    #[must_use]
    pub(super) fn notify(&self) -> bool {
        self.state.fetch_or(NOTIFIED, Ordering::AcqRel) & NOTIFIED == 0
    }

    /// Set -> clear `NOTIFIED`: the step consumes the wake that queued it.
    #[inline]
    pub(super) fn clear_notified(&self) {
        self.state.fetch_and(!NOTIFIED, Ordering::AcqRel);
    }

    #[inline]
    pub(super) fn stage(&self) -> Stage {
        Stage::from_bits(self.meta.get())
    }

    /// Moves the stage along the table (checked in debug builds).
    #[inline]
    pub(super) fn set_stage(&self, to: Stage) {
        debug_assert!(
            self.stage().can_become(to),
            "task cell stage {:?} -> {to:?} is not a transition of the table",
            self.stage()
        );
        self.meta.set((self.meta.get() & !STAGE_MASK) | to as u32);
    }

    /// Whether the slot still holds the future (being polled or not): it has not completed,
    /// been cancelled or dropped.
    #[inline]
    pub(crate) fn has_future(&self) -> bool {
        matches!(self.stage(), Stage::Future | Stage::Polling)
    }

    /// Whether the slot holds an output nobody has taken yet.
    #[cfg(test)]
    pub(crate) fn has_output(&self) -> bool {
        self.stage() == Stage::Output
    }

    /// Whether the task has an extra part (most tasks never do: the fast paths skip it).
    #[inline]
    pub(crate) fn has_extra(&self) -> bool {
        self.meta.get() & EXTRA != 0
    }

    /// Records whether `extra` holds an extra part (by whoever just stored it there).
    #[inline]
    pub(super) fn set_has_extra(&self, on: bool) {
        let meta = self.meta.get();
        self.meta.set(if on { meta | EXTRA } else { meta & !EXTRA });
    }

    /// The task layer's flags ([`FLAGS_BITS`] bits, which this layer does not interpret).
    #[inline]
    pub(crate) fn flags(&self) -> u32 {
        (self.meta.get() & FLAGS_MASK) >> FLAGS_SHIFT
    }

    #[inline]
    pub(crate) fn set_flags(&self, flags: u32) {
        debug_assert!(flags < (1 << FLAGS_BITS), "task flags {flags:#x} beyond their bits");
        let meta = self.meta.get() & !FLAGS_MASK;
        self.meta.set(meta | ((flags << FLAGS_SHIFT) & FLAGS_MASK));
    }

    /// The creation site's id.
    #[inline]
    pub(crate) fn site(&self) -> u32 {
        self.meta.get() >> SITE_SHIFT
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ALL: [Stage; 4] = [Stage::Empty, Stage::Future, Stage::Polling, Stage::Output];

    #[test]
    fn a_stage_survives_its_bits_and_the_fields_do_not_overlap() {
        for s in ALL {
            assert_eq!(
                Stage::from_bits(s as u32 | EXTRA | FLAGS_MASK | (MAX_SITE_ID << SITE_SHIFT)),
                s
            );
        }
        assert_eq!(STAGE_MASK & EXTRA, 0);
        assert_eq!((STAGE_MASK | EXTRA) & FLAGS_MASK, 0);
        assert_eq!(FLAGS_MASK & (MAX_SITE_ID << SITE_SHIFT), 0);
        assert_eq!(MAX_SITE_ID, (1 << 20) - 1, "a million creation sites");
    }

    #[test]
    fn the_slot_is_reached_only_outside_a_poll() {
        // Every way out of Polling goes back to Future; a completed future leaves through Empty.
        assert!(
            ALL.iter()
                .all(|&to| !Stage::Polling.can_become(to) || to == Stage::Future)
        );
        assert!(!Stage::Future.can_become(Stage::Output), "the future is dropped first");
        assert!(!Stage::Empty.can_become(Stage::Future), "a future never comes back");
    }
}
