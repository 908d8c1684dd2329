//! The raw task cell: one allocation per task, holding a small header and then the future, whose
//! slot is reused for the output; its `Waker` is a pointer to the header with a hand-written
//! vtable. This file and the fiber switch are the only places outside
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
//! belong to this module and change only through the methods named (here and in
//! `raw_task/state.rs`); the task state and flags are the task layer's, kept in `meta`'s
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
//! Every `unsafe` line of the cell is in this one file, in sections: the header, the cell's layout
//! and the extra part; [`CurrentTask`]; [`Notified`] and [`OwnerToken`], the reference that crosses
//! threads; [`TaskPtr`], the loop thread's counted reference, and the safe operations on the slot;
//! the vtable (the functions monomorphised for one future type, and the waker vtable). Beside it,
//! `raw_task/state.rs` holds the two state words and their transitions (no `unsafe`), and
//! `raw_task/tests.rs` the cell's own tests, which `make miri` runs under Miri. The last section is the same pinning guarantee for a tuple of
//! futures pinned in the caller's frame, which `select!` and `join!` poll in place ([`Project`],
//! [`MaybeDone`]).

mod state;
#[cfg(test)]
mod tests;

use std::alloc::{Layout, alloc, dealloc, handle_alloc_error};
use std::any::TypeId;
use std::cell::{Cell, UnsafeCell};
use std::future::Future;
use std::marker::PhantomData;
use std::mem::{self, ManuallyDrop, MaybeUninit};
use std::panic::{AssertUnwindSafe, Location, catch_unwind};
use std::pin::Pin;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::task::{Context, Poll, RawWaker, RawWakerVTable, Waker};

use crate::event_loop::budget;
use crate::event_loop::error::Panic;
use crate::event_loop::handle::CallbackId;

use self::state::{NOTIFIED, REF_ONE, Stage, initial_meta, refuse_while_polling};

#[cfg(test)]
pub(crate) use self::state::FLAGS_BITS;
pub(crate) use self::state::MAX_SITE_ID;

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
    /// The task layer's count of cancel requests not taken back (asyncio's `cancelling()`).
    pub(crate) cancel_requests: u32,
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

    /// Takes the extra part out if it holds nothing any more (no name, callbacks, waker, panic
    /// or cancel count), for reuse by another task.
    pub(crate) fn take_empty_extra(&self) -> Option<Box<TaskExtra>> {
        let extra = self.extra.take()?;
        if extra.name.is_none()
            && extra.callbacks.is_empty()
            && extra.join_waker.is_none()
            && extra.panic.is_none()
            && extra.cancel_requests == 0
        {
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

// ---------------------------------------------------------------------------------------------
// [`CurrentTask`]: the task a loop is stepping right now (asyncio's `current_task()`), kept as a
// bare pointer for the duration of the step, whose caller holds the task's [`TaskPtr`].

/// The task being stepped, if any: set only for the duration of a step by [`CurrentTask::enter`],
/// whose caller holds the task's [`TaskPtr`], so the pointer stored here is always alive.
#[derive(Default)]
pub(crate) struct CurrentTask {
    ptr: Cell<Option<NonNull<Header>>>,
}

impl CurrentTask {
    /// Runs `f` with `task` as the current task and a fresh budget of ready operations
    /// (`budget`: every step starts with a full one). Nested calls stack; the previous task
    /// and budget come back afterwards, also when `f` panics.
    #[inline]
    pub(crate) fn enter<R>(&self, task: &TaskPtr, f: impl FnOnce() -> R) -> R {
        struct Restore<'a> {
            slot: &'a Cell<Option<NonNull<Header>>>,
            previous: Option<NonNull<Header>>,
            budget: u16,
        }
        impl Drop for Restore<'_> {
            fn drop(&mut self) {
                self.slot.set(self.previous);
                budget::leave_step(self.budget);
            }
        }
        let _restore = Restore {
            slot: &self.ptr,
            previous: self.ptr.replace(Some(task.ptr)),
            budget: budget::enter_step(),
        };
        f()
    }

    /// A reference to the current task.
    pub(crate) fn get(&self) -> Option<TaskPtr> {
        let ptr = self.ptr.get()?;
        // SAFETY: a pointer is in the slot only inside `enter`, whose caller holds a reference
        // to that task for the whole call; we take one more.
        unsafe { ptr.as_ref() }.ref_inc();
        Some(TaskPtr::from_counted(ptr))
    }

    /// Whether `task` is the current task.
    pub(crate) fn is(&self, task: &TaskPtr) -> bool {
        self.ptr.get() == Some(task.ptr)
    }
}

// ---------------------------------------------------------------------------------------------
// [`Notified`]: the counted reference a wake hands to the scheduler, the one kind of reference
// that crosses threads (from a waker on any thread to its loop's ready or remote queue), and
// [`OwnerToken`], the loop's proof of being on its own thread, which alone turns a `Notified`
// back into a [`TaskPtr`].

/// A counted reference to a woken task, on its way to its loop's queue from any thread. It only
/// touches the reference count; [`Notified::into_local`] turns it back into a [`TaskPtr`] on the
/// owning loop's thread.
pub(crate) struct Notified {
    pub(super) ptr: NonNull<Header>,
}

// SAFETY: a `Notified` only ever touches the atomic `state` and the immutable `owner` and
// `vtable` of its cell; the `Cell` fields are reached only after `into_local`, which requires the
// owning loop's `!Send` token, i.e. the owning loop's thread. Freeing the cell from another thread
// drops only `Send` data (see the module documentation).
unsafe impl Send for Notified {}
// SAFETY: as above; `&Notified` gives access to nothing at all.
unsafe impl Sync for Notified {}

impl Notified {
    /// The id of the loop the task belongs to.
    pub(crate) fn owner(&self) -> u32 {
        // SAFETY: this Notified owns a reference; `owner` is immutable.
        unsafe { self.ptr.as_ref() }.owner
    }

    /// The task as a loop-thread reference, if `token` is its loop's (the reference moves over).
    pub(crate) fn into_local(self, token: &OwnerToken) -> Option<TaskPtr> {
        if self.owner() != token.id {
            return None; // dropping `self` releases the reference
        }
        let me = ManuallyDrop::new(self);
        Some(TaskPtr::from_counted(me.ptr))
    }
}

impl Drop for Notified {
    #[inline]
    fn drop(&mut self) {
        // SAFETY: this Notified owns one reference.
        unsafe { release(self.ptr) };
    }
}

/// Proof of being on a loop's thread: the loop owns one (it is `!Send`), and only it can turn a
/// [`Notified`] of its own tasks back into [`TaskPtr`]s.
pub(crate) struct OwnerToken {
    pub(super) id: u32,
    _not_send: PhantomData<*const ()>,
}

impl OwnerToken {
    pub(crate) fn new(id: u32) -> OwnerToken {
        OwnerToken {
            id,
            _not_send: PhantomData,
        }
    }
}

// ---------------------------------------------------------------------------------------------
// [`TaskPtr`]: the counted reference to a cell that the loop's thread holds (its task table and
// ready queue, `Task` handles, `TaskRef`s), and the only way to the slot: `new` moves a future
// into a fresh cell, `poll` drives it (stage `Future` -> `Polling` -> back, or on to `Output`),
// `drop_future`, `take_output` and `drop_output` empty it. Each checks the stage first and
// refuses (aborts) while a poll is running, so the slot is never dropped or moved under a poll,
// whatever the caller does.

/// A counted reference to a task, for the loop's thread (`!Send`): the loop's table and ready
/// queue, `Task` handles and `TaskRef`s hold these.
pub(crate) struct TaskPtr {
    pub(super) ptr: NonNull<Header>,
    _not_send: PhantomData<*const ()>,
}

impl TaskPtr {
    /// Takes over one reference to the cell at `ptr` that the caller owns (a fresh cell's, a
    /// `Notified`'s, or one just counted for it), on the loop's thread.
    #[inline]
    pub(super) fn from_counted(ptr: NonNull<Header>) -> TaskPtr {
        TaskPtr {
            ptr,
            _not_send: PhantomData,
        }
    }

    /// Allocates a task holding `future`, scheduled through `S` when woken. The new cell has one
    /// reference (the returned handle) and `NOTIFIED` set: its creator queues the first step.
    pub(crate) fn new<F, S>(future: F, init: Init) -> TaskPtr
    where
        F: Future + 'static,
        F::Output: 'static,
        S: Schedule,
    {
        debug_assert!(init.site <= MAX_SITE_ID);
        let layout = Layout::new::<RawCell<F>>();
        // SAFETY: the layout is non-zero (the header alone is 48 bytes).
        let raw = unsafe { alloc(layout) }.cast::<RawCell<F>>();
        let Some(cell) = NonNull::new(raw) else {
            handle_alloc_error(layout)
        };
        let value = RawCell {
            header: Header {
                state: AtomicUsize::new(REF_ONE | NOTIFIED),
                vtable: vtable::<F, S>(),
                owner: init.owner,
                index: Cell::new(u32::MAX),
                number: init.number,
                meta: Cell::new(initial_meta(init.flags, init.site)),
                awaiting: Cell::new(0),
                extra: Cell::new(None),
            },
            slot: UnsafeCell::new(Slot {
                future: ManuallyDrop::new(future),
            }),
        };
        // SAFETY: `cell` is a fresh allocation with `RawCell<F>`'s layout.
        unsafe { cell.as_ptr().write(value) };
        TaskPtr::from_counted(cell.cast())
    }

    /// The header (the loop's thread reads and writes its `Cell` fields).
    #[inline]
    pub(crate) fn header(&self) -> &Header {
        // SAFETY: this reference keeps the cell alive for as long as `&self` lives.
        unsafe { self.ptr.as_ref() }
    }

    /// The task's address: what a `Waker` of this task carries as its data pointer, so that a
    /// stored waker can be traced back to its task (the task tree).
    pub(crate) fn addr(&self) -> usize {
        self.ptr.as_ptr() as usize
    }

    /// Whether both refer to the same task.
    #[inline]
    pub(crate) fn ptr_eq(&self, other: &TaskPtr) -> bool {
        self.ptr == other.ptr
    }

    /// Clears `NOTIFIED` right before a step polls: the wake that queued it is consumed.
    #[inline]
    pub(crate) fn clear_notified(&self) {
        self.header().clear_notified();
    }

    /// Wakes the task from the loop's thread (cancel, abort): the same as waking its waker.
    pub(crate) fn wake(&self) {
        if self.header().notify() {
            self.header().ref_inc();
            (self.header().vtable.schedule)(Notified { ptr: self.ptr });
        }
    }

    /// A `Waker` for this task (one more reference).
    #[cfg(test)]
    pub(crate) fn waker(&self) -> Waker {
        self.header().ref_inc();
        // SAFETY: the data pointer is a counted reference to this cell, and the vtable is the one
        // built for the scheduler this task was created with.
        unsafe {
            Waker::from_raw(RawWaker::new(
                self.ptr.as_ptr() as *const (),
                self.header().vtable.waker,
            ))
        }
    }

    /// A `Waker` that borrows this reference instead of taking one: what a step polls with, so a
    /// poll that does not store its waker costs no reference count traffic.
    #[inline]
    pub(crate) fn waker_ref(&self) -> WakerRef<'_> {
        // SAFETY: as in `waker`, but the `Waker` is never dropped (ManuallyDrop), so it must not
        // own a reference; it lives no longer than `&self`, which keeps the cell alive.
        let waker = unsafe {
            Waker::from_raw(RawWaker::new(
                self.ptr.as_ptr() as *const (),
                self.header().vtable.waker,
            ))
        };
        WakerRef {
            waker: ManuallyDrop::new(waker),
            _task: PhantomData,
        }
    }

    /// Polls the future once. `Ready(dtor)` means it completed: the future was dropped in place
    /// (`dtor` holds a panic from its destructor, caught) and the output is in the slot. A panic
    /// from `poll` itself unwinds out of here with the future still in the slot.
    ///
    /// Returns `Ready(None)` without polling if the slot holds no future; aborts the process if
    /// the future is being polled already (a poll of a task reached its own `poll` again).
    #[inline]
    pub(crate) fn poll(&self, cx: &mut Context<'_>) -> Poll<Option<Panic>> {
        if !self.holds(Stage::Future, "TaskPtr::poll") {
            return Poll::Ready(None);
        }
        let header = self.header();
        header.set_stage(Stage::Polling);
        // SAFETY: the slot holds the future (its stage was `Future`), and it is `Polling` now, so
        // nothing else reaches the slot until the vtable's poll sets the stage back (every other
        // access through a `TaskPtr` refuses while it is `Polling`); this is the loop's thread,
        // the only one that touches the slot (`TaskPtr` is `!Send`).
        unsafe { (header.vtable.poll)(self.ptr, cx) }
    }

    /// Drops the future if the slot still holds it; a panicking destructor is caught and
    /// returned. The slot is empty afterwards either way. Aborts the process if the future is
    /// being polled (dropping it under its own poll would free what the poll is using).
    pub(crate) fn drop_future(&self) -> Result<(), Panic> {
        if !self.holds(Stage::Future, "TaskPtr::drop_future") {
            return Ok(());
        }
        // SAFETY: the slot holds the future and no poll is running (the stage is `Future`);
        // `drop_future` marks it empty before dropping.
        unsafe { self.drop_slot(self.header().vtable.drop_future) }
    }

    /// Moves the output out of the slot if it holds one of type `T` (once: the slot is empty
    /// afterwards). A `T` other than the task's output type gives `None` (the `Task<T>` handle
    /// is only ever made with the right one; the check makes that a fact rather than a hope).
    /// Aborts the process if the future is being polled.
    pub(crate) fn take_output<T: 'static>(&self) -> Option<T> {
        let header = self.header();
        if !self.holds(Stage::Output, "TaskPtr::take_output") || (header.vtable.output_type)() != TypeId::of::<T>() {
            return None;
        }
        let mut out = MaybeUninit::<T>::uninit();
        // SAFETY: the slot holds an output of type `T` (both checked above); `read_output`
        // marks the slot empty, so the value is moved out exactly once.
        unsafe {
            (header.vtable.read_output)(self.ptr, out.as_mut_ptr().cast());
            Some(out.assume_init())
        }
    }

    /// Drops the output if the slot holds one; a panicking destructor is caught and returned.
    /// Aborts the process if the future is being polled.
    pub(crate) fn drop_output(&self) -> Result<(), Panic> {
        if !self.holds(Stage::Output, "TaskPtr::drop_output") {
            return Ok(());
        }
        // SAFETY: the slot holds the output; `drop_output` marks it empty before dropping.
        unsafe { self.drop_slot(self.header().vtable.drop_output) }
    }

    /// Whether the slot is at stage `want`; the guard of every access to the slot: it aborts the
    /// process (`op` names the access) while the future is being polled.
    #[inline]
    fn holds(&self, want: Stage, op: &str) -> bool {
        match self.header().stage() {
            Stage::Polling => refuse_while_polling(op),
            stage => stage == want,
        }
    }

    /// Runs one of the vtable's drop functions on the slot; a panicking destructor is caught
    /// and returned.
    ///
    /// # Safety
    /// The slot holds what `drop` drops, and no poll is running.
    unsafe fn drop_slot(&self, drop: unsafe fn(NonNull<Header>)) -> Result<(), Panic> {
        // SAFETY: per the contract.
        catch_unwind(AssertUnwindSafe(|| unsafe { drop(self.ptr) })).map_err(Panic::from_payload)
    }
}

impl Clone for TaskPtr {
    #[inline]
    fn clone(&self) -> TaskPtr {
        self.header().ref_inc();
        TaskPtr::from_counted(self.ptr)
    }
}

impl Drop for TaskPtr {
    #[inline]
    fn drop(&mut self) {
        // SAFETY: this TaskPtr owns one reference.
        unsafe { release(self.ptr) };
    }
}

/// A `Waker` borrowing a [`TaskPtr`]'s reference (see [`TaskPtr::waker_ref`]).
pub(crate) struct WakerRef<'a> {
    waker: ManuallyDrop<Waker>,
    _task: PhantomData<&'a TaskPtr>,
}

impl std::ops::Deref for WakerRef<'_> {
    type Target = Waker;
    fn deref(&self) -> &Waker {
        &self.waker
    }
}

// ---------------------------------------------------------------------------------------------
// The typed half of the cell: [`Vtable`], the functions monomorphised for one future type `F`
// and scheduler `S` when a task is created (poll, drop the future, read or drop the output, free
// the memory), which is how code that does not know `F` reaches the slot; and the
// `RawWakerVTable` of a task's wakers, whose data pointer is the header. The slot functions are
// called only by [`TaskPtr`](TaskPtr) after it checked the stage; they move the stage
// along the table in the module documentation of `raw_task`.

/// The typed operations, monomorphised for one future type.
pub(super) struct Vtable {
    /// Polls the future, whose stage the caller set to `Polling`; sets it back to `Future` when
    /// the poll returns `Pending` or unwinds. On `Ready` the future is dropped in place and the
    /// output written to the slot (stage `Output`); a panic from that drop is caught and returned.
    pub(super) poll: unsafe fn(NonNull<Header>, &mut Context<'_>) -> Poll<Option<Panic>>,
    /// Drops the future in place (its destructor may panic: the caller catches it).
    pub(super) drop_future: unsafe fn(NonNull<Header>),
    /// Moves the output out to `dst`, which points to a `MaybeUninit<F::Output>`.
    pub(super) read_output: unsafe fn(NonNull<Header>, *mut ()),
    /// Drops the output in place (its destructor may panic: the caller catches it).
    pub(super) drop_output: unsafe fn(NonNull<Header>),
    /// The output's type, checked before the output is moved out as a `T`.
    pub(super) output_type: fn() -> TypeId,
    /// Frees the allocation (the reference count reached zero).
    pub(super) dealloc: unsafe fn(NonNull<Header>),
    /// The waker vtable of the task's scheduler.
    pub(super) waker: &'static RawWakerVTable,
    /// The scheduler itself, for wakes made through a `TaskPtr`.
    pub(super) schedule: fn(Notified),
}

/// The vtable of a cell holding an `F`, woken through `S`.
pub(super) fn vtable<F, S>() -> &'static Vtable
where
    F: Future + 'static,
    F::Output: 'static,
    S: Schedule,
{
    struct Table<F, S>(PhantomData<(F, S)>);
    impl<F, S> Table<F, S>
    where
        F: Future + 'static,
        F::Output: 'static,
        S: Schedule,
    {
        const VTABLE: Vtable = Vtable {
            poll: poll::<F>,
            drop_future: drop_future::<F>,
            read_output: read_output::<F>,
            drop_output: drop_output::<F>,
            output_type: TypeId::of::<F::Output>,
            dealloc: dealloc_cell::<F>,
            waker: &WakerTable::<S>::VTABLE,
            schedule: S::schedule,
        };
    }
    &Table::<F, S>::VTABLE
}

/// Ends a poll: `Polling` -> `Future` when dropped, whether the poll returned or unwound.
struct EndPoll<'a>(&'a Header);

impl Drop for EndPoll<'_> {
    #[inline]
    fn drop(&mut self) {
        self.0.set_stage(Stage::Future);
    }
}

/// # Safety
/// `ptr` points to a live `RawCell<F>` whose slot holds the future, in the `Polling` stage, on
/// the loop's thread.
unsafe fn poll<F: Future>(ptr: NonNull<Header>, cx: &mut Context<'_>) -> Poll<Option<Panic>> {
    let cell = ptr.cast::<RawCell<F>>();
    // SAFETY: the cell is alive (caller's contract).
    let header = unsafe { &cell.as_ref().header };
    debug_assert_eq!(header.stage(), Stage::Polling);
    let out = {
        let _end = EndPoll(header);
        // SAFETY: the slot holds the future (caller's contract); it never moves while in the
        // cell, which is what pinning requires, and no other reference to it exists during the
        // poll (the stage is `Polling`, so every other access to the slot refuses).
        unsafe {
            let future = &mut *(*cell.as_ref().slot.get()).future;
            Pin::new_unchecked(future).poll(cx)
        }
    };
    match out {
        Poll::Pending => Poll::Pending,
        Poll::Ready(value) => {
            // The future is pinned: drop it where it is, then reuse its slot for the output.
            // SAFETY: as above (the stage is `Future` again, and this is still the poll's
            // caller); the stage is marked empty before the drop, so a panicking destructor
            // cannot lead to a second drop.
            let dtor = unsafe {
                header.set_stage(Stage::Empty);
                let slot = cell.as_ref().slot.get();
                catch_unwind(AssertUnwindSafe(|| ManuallyDrop::drop(&mut (*slot).future)))
            };
            // SAFETY: the slot is empty now (the future was dropped), and sized for the output.
            unsafe {
                (*cell.as_ref().slot.get()).output = ManuallyDrop::new(value);
            }
            header.set_stage(Stage::Output);
            Poll::Ready(dtor.err().map(Panic::from_payload))
        }
    }
}

/// # Safety
/// `ptr` points to a live `RawCell<F>` whose slot holds the future, in the `Future` stage, on
/// the loop's thread.
unsafe fn drop_future<F: Future>(ptr: NonNull<Header>) {
    let cell = ptr.cast::<RawCell<F>>();
    // SAFETY: per the contract; the stage is marked empty first so that nothing drops it twice.
    unsafe {
        cell.as_ref().header.set_stage(Stage::Empty);
        ManuallyDrop::drop(&mut (*cell.as_ref().slot.get()).future);
    }
}

/// # Safety
/// `ptr` points to a live `RawCell<F>` whose slot holds the output, on the loop's thread, and
/// `dst` points to writable memory for an `F::Output`.
unsafe fn read_output<F: Future>(ptr: NonNull<Header>, dst: *mut ()) {
    let cell = ptr.cast::<RawCell<F>>();
    // SAFETY: per the contract; the stage is marked empty, so the value is moved out once.
    unsafe {
        cell.as_ref().header.set_stage(Stage::Empty);
        let value = ManuallyDrop::take(&mut (*cell.as_ref().slot.get()).output);
        dst.cast::<F::Output>().write(value);
    }
}

/// # Safety
/// `ptr` points to a live `RawCell<F>` whose slot holds the output, on the loop's thread.
unsafe fn drop_output<F: Future>(ptr: NonNull<Header>) {
    let cell = ptr.cast::<RawCell<F>>();
    // SAFETY: per the contract; the stage is marked empty first so that nothing drops it twice.
    unsafe {
        cell.as_ref().header.set_stage(Stage::Empty);
        ManuallyDrop::drop(&mut (*cell.as_ref().slot.get()).output);
    }
}

/// Cells freed with the future or output still inside (always zero unless something is wrong;
/// the tests assert it).
static LEAKED: AtomicUsize = AtomicUsize::new(0);

/// How many cells were freed with their future or output still in them (see [`LEAKED`]).
#[cfg(test)]
pub(super) fn leaked_cells() -> usize {
    LEAKED.load(Ordering::Relaxed)
}

/// # Safety
/// `ptr` points to a `RawCell<F>` whose reference count just reached zero.
unsafe fn dealloc_cell<F: Future>(ptr: NonNull<Header>) {
    let cell = ptr.cast::<RawCell<F>>();
    // SAFETY: nobody else can reach the cell; reading its header is exclusive.
    let header = unsafe { &cell.as_ref().header };
    let extra = header.extra.take();
    if let Some(mut extra) = extra {
        // Done callbacks are not `Send`, and this may be another thread: they should have been
        // taken when the task finished; if not, leak them rather than drop them here.
        std::mem::forget(std::mem::take(&mut extra.callbacks));
        drop(extra);
    }
    match header.stage() {
        Stage::Empty => {}
        Stage::Future | Stage::Polling => {
            // A pinned future must be dropped before its memory goes, and it may not be `Send`:
            // keep the memory rather than break either rule.
            LEAKED.fetch_add(1, Ordering::Relaxed);
            return;
        }
        Stage::Output => {
            // An output is not pinned; forget it (it may not be `Send`) and free the memory.
            LEAKED.fetch_add(1, Ordering::Relaxed);
        }
    }
    // SAFETY: the memory was allocated in `TaskPtr::new` with this layout, and the header holds
    // nothing that needs dropping any more (`extra` was taken, the rest is plain data).
    unsafe { dealloc(cell.as_ptr().cast(), Layout::new::<RawCell<F>>()) };
}

/// The `RawWakerVTable` of scheduler `S`: a waker's data pointer is the task's header, and it owns
/// one reference.
struct WakerTable<S>(PhantomData<S>);

impl<S: Schedule> WakerTable<S> {
    const VTABLE: RawWakerVTable = RawWakerVTable::new(Self::clone, Self::wake, Self::wake_by_ref, Self::drop);

    /// The vtable's `clone`: one more waker for the task, holding one more reference.
    ///
    /// # Safety
    /// `data` is the header pointer of a waker of this table, which holds a reference to its
    /// cell for the duration of the call.
    unsafe fn clone(data: *const ()) -> RawWaker {
        // SAFETY: `data` is the header of a live cell (the waker being cloned holds a reference).
        unsafe { &*(data as *const Header) }.ref_inc();
        RawWaker::new(data, &Self::VTABLE)
    }

    /// The vtable's `wake`: schedules the task, consuming the waker.
    ///
    /// # Safety
    /// `data` is the header pointer of a waker of this table being consumed: its reference to
    /// the cell passes to this call.
    unsafe fn wake(data: *const ()) {
        // SAFETY: `data` is non-null: it came from a TaskPtr.
        let ptr = unsafe { NonNull::new_unchecked(data as *mut Header) };
        // SAFETY: the waker being consumed owns a reference.
        if unsafe { ptr.as_ref() }.notify() {
            // Its reference moves into the Notified.
            S::schedule(Notified { ptr });
        } else {
            // Already queued: this wake is absorbed.
            // SAFETY: the waker owned one reference.
            unsafe { release(ptr) };
        }
    }

    /// The vtable's `wake_by_ref`: schedules the task, keeping the waker.
    ///
    /// # Safety
    /// `data` is the header pointer of a waker of this table, borrowed for the call: it holds a
    /// reference to the cell until the call returns.
    unsafe fn wake_by_ref(data: *const ()) {
        // SAFETY: `data` is non-null: it came from a TaskPtr.
        let ptr = unsafe { NonNull::new_unchecked(data as *mut Header) };
        // SAFETY: the waker (borrowed) holds a reference for the duration of this call.
        let header = unsafe { ptr.as_ref() };
        if header.notify() {
            header.ref_inc();
            S::schedule(Notified { ptr });
        }
    }

    /// The vtable's `drop`: releases the waker's reference.
    ///
    /// # Safety
    /// `data` is the header pointer of a waker of this table being dropped: its reference to the
    /// cell passes to this call, which releases it.
    unsafe fn drop(data: *const ()) {
        // SAFETY: the waker being dropped owns one reference; `data` came from a TaskPtr.
        unsafe { release(NonNull::new_unchecked(data as *mut Header)) };
    }
}

// ---------------------------------------------------------------------------------------------
// The cell's pinning, for the macros: `select!`/`join!`/`try_join!` pin a tuple of futures once in
// the caller's frame and poll each field where it lies (a pin projection, as reaching the cell's
// future is), so their expansions stay safe code at tokio's size (chapter 11.9; tests under Miri).

/// Pin projection of a tuple: one `Pin<&mut T>` per field of a pinned tuple (up to 128 fields).
///
/// ```
/// use evloop::sync::macro_support::Project;
/// let mut both = std::pin::pin!((async { 1 }, async { 2 }));
/// let (a, b) = both.as_mut().project(); // two pinned futures, never moved
/// let _ = (a, b);
/// ```
pub trait Project<'a> {
    /// The tuple of pinned references to the fields.
    type Fields;
    /// Splits a pinned tuple into its pinned fields.
    fn project(self: Pin<&'a mut Self>) -> Self::Fields;
}

/// One `impl Project` per arity. A step adds two fields (two impls), so that 128 fields take 64
/// levels of the compiler's recursion limit.
macro_rules! project_tuples {
    ([$($done:ident $di:tt)*] []) => {};
    ([$($done:ident $di:tt)*] [$a:ident $ai:tt $b:ident $bi:tt $($rest:tt)*]) => {
        project_tuple!($($done $di)* $a $ai);
        project_tuple!($($done $di)* $a $ai $b $bi);
        project_tuples!([$($done $di)* $a $ai $b $bi] [$($rest)*]);
    };
}

/// `impl Project` for one tuple type.
macro_rules! project_tuple {
    ($($t:ident $i:tt)+) => {
        impl<'a, $($t: 'a),+> Project<'a> for ($($t,)+) {
            type Fields = ($(Pin<&'a mut $t>,)+);
            #[inline(always)]
            fn project(self: Pin<&'a mut Self>) -> Self::Fields {
                // SAFETY: the mutable reference is used only to make the pinned references below;
                // no field is moved out of it and it is not kept.
                let this = unsafe { self.get_unchecked_mut() };
                // SAFETY: structural pinning of a tuple's fields is sound: the tuple was pinned, so
                // its fields are not moved until they are dropped in place (a tuple has no `Drop`
                // of its own that could move them, is `Unpin` only if every field is, is never
                // `repr(packed)`, and no safe API moves a field out of `Pin<&mut (..)>`); each
                // reference is to a distinct field, so they do not alias.
                unsafe { ($(Pin::new_unchecked(&mut this.$i),)+) }
            }
        }
    };
}

project_tuples!([] [
    T0 0 T1 1 T2 2 T3 3 T4 4 T5 5 T6 6 T7 7 T8 8 T9 9 T10 10 T11 11 T12 12 T13 13 T14 14 T15 15
    T16 16 T17 17 T18 18 T19 19 T20 20 T21 21 T22 22 T23 23 T24 24 T25 25 T26 26 T27 27 T28 28 T29 29
    T30 30 T31 31 T32 32 T33 33 T34 34 T35 35 T36 36 T37 37 T38 38 T39 39 T40 40 T41 41 T42 42 T43 43
    T44 44 T45 45 T46 46 T47 47 T48 48 T49 49 T50 50 T51 51 T52 52 T53 53 T54 54 T55 55 T56 56 T57 57
    T58 58 T59 59 T60 60 T61 61 T62 62 T63 63 T64 64 T65 65 T66 66 T67 67 T68 68 T69 69 T70 70 T71 71
    T72 72 T73 73 T74 74 T75 75 T76 76 T77 77 T78 78 T79 79 T80 80 T81 81 T82 82 T83 83 T84 84 T85 85
    T86 86 T87 87 T88 88 T89 89 T90 90 T91 91 T92 92 T93 93 T94 94 T95 95 T96 96 T97 97 T98 98 T99 99
    T100 100 T101 101 T102 102 T103 103 T104 104 T105 105 T106 106 T107 107 T108 108 T109 109
    T110 110 T111 111 T112 112 T113 113 T114 114 T115 115 T116 116 T117 117 T118 118 T119 119
    T120 120 T121 121 T122 122 T123 123 T124 124 T125 125 T126 126 T127 127
]);

/// A `join!` future, then its output in the same place, then nothing once the output is taken
/// (futures-util's `MaybeDone`). The future is pinned (polled where it lies); the output is not.
///
/// ```
/// use std::task::{Context, Poll, Waker};
/// use evloop::sync::macro_support::MaybeDone;
///
/// let mut slot = std::pin::pin!(MaybeDone::new(async { 7 }));
/// assert_eq!(slot.as_mut().poll_done(&mut Context::from_waker(Waker::noop())), Poll::Ready(()));
/// assert_eq!(slot.as_mut().take_output(), Some(7));
/// assert_eq!(slot.as_mut().take_output(), None); // taken once
/// ```
pub enum MaybeDone<F: Future> {
    /// Not ready yet.
    Future(F),
    /// Ready; the output waits to be taken.
    Done(F::Output),
    /// The output was taken.
    Gone,
}

impl<F: Future> MaybeDone<F> {
    /// Holds a future that has not been polled.
    #[inline(always)]
    pub fn new(fut: F) -> Self {
        MaybeDone::Future(fut)
    }

    /// Polls the future if it is still there; `Ready` once the output is stored (or was taken).
    /// The future is dropped as soon as it is ready, so that what it borrowed is free and it is
    /// never polled again.
    #[inline(always)]
    pub fn poll_done(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        // SAFETY: the reference is only matched on; the future in it is pinned again at once and
        // never moved (it is dropped in place by `set` below).
        let fut = match unsafe { self.as_mut().get_unchecked_mut() } {
            // SAFETY: `self` is pinned and the `Future` variant's field is structurally pinned:
            // nothing moves it while it is there (`take_output` moves only `Done`).
            MaybeDone::Future(f) => unsafe { Pin::new_unchecked(f) },
            MaybeDone::Done(_) | MaybeDone::Gone => return Poll::Ready(()),
        };
        match fut.poll(cx) {
            Poll::Ready(out) => {
                self.set(MaybeDone::Done(out));
                Poll::Ready(())
            }
            Poll::Pending => Poll::Pending,
        }
    }

    /// Takes the output, if it is there (`None` before it is ready, and after it was taken).
    #[inline(always)]
    pub fn take_output(self: Pin<&mut Self>) -> Option<F::Output> {
        // SAFETY: the value is moved out only in the `Done` variant, which holds no pinned data
        // (the output is not structurally pinned); a `Future` is left where it is.
        let this = unsafe { self.get_unchecked_mut() };
        match this {
            MaybeDone::Done(_) => match mem::replace(this, MaybeDone::Gone) {
                MaybeDone::Done(out) => Some(out),
                MaybeDone::Future(_) | MaybeDone::Gone => None,
            },
            MaybeDone::Future(_) | MaybeDone::Gone => None,
        }
    }
}

impl<T, E, F: Future<Output = Result<T, E>>> MaybeDone<F> {
    /// Takes the error if the future is done with one (`try_join!`'s early return); an `Ok` output
    /// stays.
    #[inline(always)]
    pub fn take_err(self: Pin<&mut Self>) -> Option<E> {
        // SAFETY: as in `take_output`: only a `Done` value is moved out.
        let this = unsafe { self.get_unchecked_mut() };
        match this {
            MaybeDone::Done(Err(_)) => match mem::replace(this, MaybeDone::Gone) {
                MaybeDone::Done(Err(e)) => Some(e),
                MaybeDone::Done(Ok(_)) | MaybeDone::Future(_) | MaybeDone::Gone => None,
            },
            MaybeDone::Done(Ok(_)) | MaybeDone::Future(_) | MaybeDone::Gone => None,
        }
    }
}
