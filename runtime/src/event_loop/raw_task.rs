//! The raw task cell: one allocation per task, holding a small header and then the future, whose
//! slot is reused for the output; its `Waker` is a pointer to the header with a hand-written
//! vtable. This module (with its submodules) and the fiber switch are the only places outside
//! `evloop-syscalls` where evloop writes `unsafe` (docs/design.md; `docs/11-the-task-cell.md`
//! explains why, with numbers). Its soundness rests on this module alone: the stage guards the
//! slot against every access during a poll, whatever the layer above does.
//!
//! # Layout
//! ```text
//! NonNull<Header> ──► ┌ Header (48 bytes) ──────────────────────────────────────────┐
//!                     │ state    AtomicUsize  reference count << 1 | NOTIFIED       │
//!                     │ vtable   &'static     poll, drop_future, read_output, ...   │
//!                     │ owner    u32          id of the loop the task belongs to    │
//!                     │ index    Cell<u32>    slot in that loop's task table        │
//!                     │ number   u32          the N of `Task-N`                     │
//!                     │ meta     Cell<u32>    stage | EXTRA | task flags | site id  │
//!                     │ awaiting Cell<u64>    what it waits on, packed              │
//!                     │ extra    Cell<Option<Box<TaskExtra>>>  name, done callbacks, │
//!                     │                       join waker, panic: allocated on use   │
//!                     ├ slot: union { future F, output F::Output } ───────────────────┤
//!                     └───────────────────────────────────────────────────────────────┘
//! ```
//! `RawCell<F>` is `#[repr(C)]` with the header first, so a pointer to the header is a pointer to
//! the cell; the vtable, monomorphised for `F` when the task is created, is how code that does not
//! know `F` (the loop, a `Waker`) reaches the typed parts.
//!
//! # States and transitions
//! The one list of everything a task can be. The stage, `NOTIFIED`, the references and `EXTRA`
//! belong to this module and change only through the methods named (in `state.rs`,
//! `task_ptr.rs`, `vtable.rs`); the task state and flags are the task layer's, kept in `meta`'s
//! flag bits (which this module does not interpret) and changed only through `task/state.rs`'s
//! `Core`. Every change of the stage and of the task state `debug_assert!`s that it is one of
//! these (as does a reference count going below zero, and a second `detach`); `NOTIFIED` changes
//! by single atomic operations whose result says which way they went.
//! ```text
//! stage: what the slot holds (loop thread)                       made by
//!   Future  ─► Polling   a poll begins                             TaskPtr::poll
//!   Polling ─► Future    the poll returned Pending, or unwound      vtable poll (its guard)
//!   Future  ─► Empty     the poll returned Ready: the future is     vtable poll
//!                        dropped in place ...
//!   Empty   ─► Output    ... and the output written to the slot     vtable poll
//!   Future  ─► Empty     the future dropped (cancel, abort, panic,  TaskPtr::drop_future
//!                        loop closing)
//!   Output  ─► Empty     the output taken, or dropped               TaskPtr::take_output, drop_output
//!   While Polling, poll, drop_future, take_output and drop_output abort the process.
//!
//! NOTIFIED (atomic, any thread)
//!   clear ─► set         a wake; the waker that set it queues the   Header::notify (Waker, TaskPtr::wake)
//!                        task (with a reference), later wakes are
//!                        absorbed
//!   set   ─► clear       the step, right before it polls or cancels TaskPtr::clear_notified
//!
//! references (atomic, any thread)
//!   n ─► n + 1           TaskPtr clone, Waker clone, a wake's       Header::ref_inc
//!                        Notified (aborts past isize::MAX / 2)
//!   n ─► n - 1           any of those dropped; at 0 the memory is   release
//!                        freed, on that thread
//!
//! EXTRA (loop thread): whether `extra` holds an extra part
//!   clear ─► set         a name, done callback, awaiter or panic    Header::extra_mut_from
//!   set   ─► clear       emptied, given back to the loop's spares   Header::take_empty_extra
//!
//! task state (the task layer's flag bits, loop thread)           made by (task/state.rs's Core)
//!   Pending ─► Running   the step begins a poll                     begin_step
//!   Running ─► Pending   the poll returned Pending                  end_poll
//!   Running ─► Done      the poll returned Ready                    finish (step)
//!   Running ─► Failed    the poll panicked                          finish (step)
//!   Running ─► Cancelled Ready, but a cancel was requested during   finish (step)
//!                        that step (the output is dropped)
//!   Pending ─► Cancelled a cancel requested, or no future left:     finish (step, abort_now, the
//!                        the future is dropped first                loop's shutdown)
//!   Done, Failed and Cancelled are final.
//! task flags (set once, never cleared)
//!   CANCEL_REQUESTED     cancel() or abort() of an unfinished task  request_cancel
//!   DETACHED             the Task handle dropped                    detach
//!   OBSERVED             the outcome taken, or the failure reported observe
//! ```
//! Together: the stage is `Polling` only while the task is `Running`, so the task layer never
//! meets a `Polling` cell it could trip over (a step of a `Running` task is a stale wake, an
//! abort of one only requests); a finished task holds no future (`Done`: `Output` until it is
//! taken, `Failed` and `Cancelled`: `Empty`).
//!
//! # Who holds a reference
//! The reference count in `state` counts every [`TaskPtr`] (the loop's table, the ready queue,
//! `Task` handles, `TaskRef`s), every [`Notified`] in a remote queue and every `Waker`. The last
//! one to go frees the memory, on whatever thread that is. Everything that is not `Send` (the
//! future, the output, done callbacks) is dropped by explicit calls on the loop's thread while a
//! [`TaskPtr`] (which is `!Send`) still exists, so what a foreign thread frees is only plain
//! memory and `Send` data (a name, a waker, a caught panic). Should the future or output still be
//! there when the memory goes (a bug elsewhere), the cell leaks rather than drop a `!Send` value
//! on a foreign thread or free pinned memory without dropping it.
//!
//! # Threads
//! `TaskPtr` and `Header`'s `Cell` fields are for the loop's thread only (`TaskPtr` is `!Send`).
//! Other threads reach a task only through a `Waker` or a [`Notified`], which touch the atomic
//! `state` and read the immutable `owner`/`vtable`, nothing else. A [`Notified`] becomes a
//! [`TaskPtr`] again only with the owning loop's [`OwnerToken`] (also `!Send`), that is, on the
//! loop's thread.
//!
//! # Waking
//! A wake sets `NOTIFIED`; if it was already set the task is already queued and the wake is
//! absorbed (many wakes before a poll give one poll). Otherwise the wake hands a counted
//! [`Notified`] to the scheduler `S` chosen at creation, which pushes it on the loop's ready
//! queue (same thread: no syscall, no allocation) or its remote queue (any other thread).
//! The step clears `NOTIFIED` right before polling, so a wake during the poll queues the task
//! again for the next iteration.
//!
//! # Files
//! This file: the header, the cell's layout and the extra part. `state.rs`: the two state words
//! and their transitions (no `unsafe`). `task_ptr.rs`: [`TaskPtr`], the loop thread's counted
//! reference, and the safe operations on the slot. `vtable.rs`: the functions monomorphised for
//! one future type and the waker vtable. `notified.rs`: [`Notified`] and [`OwnerToken`], the
//! reference that crosses threads. `current.rs`: [`CurrentTask`]. `tests.rs`: the cell on its
//! own, under Miri (`make miri`).

mod current;
mod notified;
mod state;
mod task_ptr;
#[cfg(test)]
mod tests;
mod vtable;

use std::cell::{Cell, UnsafeCell};
use std::future::Future;
use std::mem::ManuallyDrop;
use std::panic::Location;
use std::ptr::NonNull;
use std::sync::atomic::AtomicUsize;
use std::task::Waker;

use crate::event_loop::error::Panic;
use crate::event_loop::handle::CallbackId;

pub(crate) use self::current::CurrentTask;
pub(crate) use self::notified::{Notified, OwnerToken};
#[cfg(test)]
pub(crate) use self::state::FLAGS_BITS;
pub(crate) use self::state::MAX_SITE_ID;
pub(crate) use self::task_ptr::TaskPtr;
use self::vtable::Vtable;

/// Where a woken task goes: implemented by the loop (its ready queue or remote queue) and by the
/// tests of this module (a plain queue).
pub(crate) trait Schedule: 'static {
    /// Queues a task whose `NOTIFIED` bit this wake set. Called on any thread.
    fn schedule(task: Notified);
}

/// What a task that is not running needs beyond the header, allocated the first time one of these
/// is used: most tasks never have a name or a done callback, and are never awaited before they
/// finish.
#[derive(Default)]
pub(crate) struct TaskExtra {
    /// A name given with `TaskBuilder::name` or `set_name`.
    pub(crate) name: Option<Box<str>>,
    /// Done callbacks, in registration order.
    pub(crate) callbacks: Vec<DoneEntry>,
    pub(crate) next_callback: u64,
    /// The waker of the task awaiting this one's handle.
    pub(crate) join_waker: Option<Waker>,
    /// The panic a failed task ended with, until someone observes it.
    pub(crate) panic: Option<Panic>,
}

/// A done callback: its id, the closure's type name, where it was added, and the closure.
pub(crate) type DoneEntry = (
    CallbackId,
    &'static str,
    &'static Location<'static>,
    Box<dyn FnOnce(&TaskPtr)>,
);

/// The fixed-size start of every task cell (see the module documentation).
#[repr(C)]
pub(crate) struct Header {
    state: AtomicUsize,
    vtable: &'static Vtable,
    owner: u32,
    index: Cell<u32>,
    number: u32,
    meta: Cell<u32>,
    awaiting: Cell<u64>,
    extra: Cell<Option<Box<TaskExtra>>>,
}

/// A task's memory: the header, then the slot.
#[repr(C)]
struct RawCell<F: Future> {
    header: Header,
    slot: UnsafeCell<Slot<F>>,
}

/// The slot after the header: the future while it runs, then its output; which one (if any) is
/// the stage's to say.
union Slot<F: Future> {
    future: ManuallyDrop<F>,
    output: ManuallyDrop<F::Output>,
}

/// What a new task's header starts with.
pub(crate) struct Init {
    pub(crate) owner: u32,
    pub(crate) number: u32,
    pub(crate) site: u32,
    pub(crate) flags: u32,
}

impl Header {
    /// The id of the loop the task belongs to.
    #[inline]
    pub(crate) fn owner(&self) -> u32 {
        self.owner
    }

    /// The task's number in its loop (wraps after 2^32 tasks of one loop).
    #[inline]
    pub(crate) fn number(&self) -> u32 {
        self.number
    }

    /// `Task-3`, or the name the task was given: how trace lines and the task dump call it.
    pub(crate) fn label(&self) -> String {
        let name = self.with_extra(|e| e.and_then(|e| e.name.as_deref().map(str::to_string)));
        name.unwrap_or_else(|| format!("Task-{}", self.number))
    }

    /// Slot in the owning loop's task table.
    #[inline]
    pub(crate) fn index(&self) -> u32 {
        self.index.get()
    }

    #[inline]
    pub(crate) fn set_index(&self, index: u32) {
        self.index.set(index);
    }

    /// What the task waits on, packed (`trace::Awaiting::pack`).
    #[inline]
    pub(crate) fn awaiting(&self) -> u64 {
        self.awaiting.get()
    }

    #[inline]
    pub(crate) fn set_awaiting(&self, packed: u64) {
        self.awaiting.set(packed);
    }

    /// Runs `f` on the extra part, if the task has one. `f` must not reach this task's extra
    /// again (it is out of its cell while `f` runs).
    pub(crate) fn with_extra<R>(&self, f: impl FnOnce(Option<&mut TaskExtra>) -> R) -> R {
        let mut extra = self.extra.take();
        let r = f(extra.as_deref_mut());
        self.extra.set(extra);
        r
    }

    /// Runs `f` on the extra part, allocating it first if needed (same rule as [`with_extra`]).
    ///
    /// [`with_extra`]: Header::with_extra
    pub(crate) fn extra_mut<R>(&self, f: impl FnOnce(&mut TaskExtra) -> R) -> R {
        self.extra_mut_from(Box::default, f)
    }

    /// [`extra_mut`](Header::extra_mut), with `make` providing the extra part if the task has
    /// none (a loop hands out recycled ones, so that awaiting a running task allocates nothing).
    pub(crate) fn extra_mut_from<R>(
        &self,
        make: impl FnOnce() -> Box<TaskExtra>,
        f: impl FnOnce(&mut TaskExtra) -> R,
    ) -> R {
        let mut extra = self.extra.take().unwrap_or_else(make);
        let r = f(&mut extra);
        self.extra.set(Some(extra));
        self.set_has_extra(true);
        r
    }

    /// Takes the extra part out if it holds nothing any more (no name, callbacks, waker or
    /// panic), for reuse by another task.
    pub(crate) fn take_empty_extra(&self) -> Option<Box<TaskExtra>> {
        let extra = self.extra.take()?;
        if extra.name.is_none() && extra.callbacks.is_empty() && extra.join_waker.is_none() && extra.panic.is_none() {
            self.set_has_extra(false);
            Some(extra)
        } else {
            self.extra.set(Some(extra));
            None
        }
    }
}

/// Releases a reference held through `ptr`; frees the cell when it was the last.
///
/// # Safety
/// `ptr` points to a live cell and the caller owns one of its references.
#[inline]
unsafe fn release(ptr: NonNull<Header>) {
    // SAFETY: the caller owns a reference, so the header is alive until ref_dec says otherwise.
    let last = unsafe { ptr.as_ref() }.ref_dec();
    if last {
        // SAFETY: that was the last reference: nobody else can reach the cell any more.
        unsafe { (ptr.as_ref().vtable.dealloc)(ptr) };
    }
}
