//! The raw task cell: one allocation per task, holding a small header and then the future, whose
//! slot is reused for the output; its `Waker` is a pointer to the header with a hand-written
//! vtable. This module and the fiber switch are the only places outside `evloop-syscalls` where
//! evloop writes `unsafe` (docs/design.md; `docs/11-the-task-cell.md` explains why, with numbers).
//!
//! # Layout
//! ```text
//! NonNull<Header> ──► ┌ Header (48 bytes) ──────────────────────────────────────────┐
//!                     │ state    AtomicUsize  reference count << 1 | NOTIFIED       │
//!                     │ vtable   &'static     poll, drop_future, read_output, ...   │
//!                     │ owner    u32          id of the loop the task belongs to    │
//!                     │ index    Cell<u32>    slot in that loop's task table        │
//!                     │ number   u32          the N of `Task-N`                     │
//!                     │ meta     Cell<u32>    flags (stage, task state) | site id   │
//!                     │ awaiting Cell<u64>    what it waits on, packed              │
//!                     │ extra    Cell<Option<Box<TaskExtra>>>  name, done callbacks, │
//!                     │                       join waker, panic: allocated on use   │
//!                     ├ stage: union { future F, output F::Output } ──────────────────┤
//!                     └───────────────────────────────────────────────────────────────┘
//! ```
//! `Cell<F>` is `#[repr(C)]` with the header first, so a pointer to the header is a pointer to
//! the cell; the vtable, monomorphised for `F` when the task is created, is how code that does not
//! know `F` (the loop, a `Waker`) reaches the typed parts.
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

use std::alloc::{Layout, alloc, dealloc, handle_alloc_error};
use std::any::TypeId;
use std::cell::{Cell, UnsafeCell};
use std::future::Future;
use std::marker::PhantomData;
use std::mem::{ManuallyDrop, MaybeUninit};
use std::panic::{AssertUnwindSafe, Location, catch_unwind};
use std::pin::Pin;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicUsize, Ordering, fence};
use std::task::{Context, Poll, RawWaker, RawWakerVTable, Waker};

use crate::event_loop::error::Panic;
use crate::event_loop::handle::CallbackId;

/// Set while the task sits in a ready or remote queue and has not been stepped yet.
const NOTIFIED: usize = 1;
/// One reference in `state` (the count lives above the flag bit).
const REF_ONE: usize = 2;
/// Beyond this many references something leaks wakers in a loop; abort like `Arc` does
/// rather than let the count wrap.
const MAX_REFS: usize = (isize::MAX as usize) / 2;

// `meta` bits. The stage says what the slot after the header holds.
const STAGE_MASK: u32 = 0b11;
const STAGE_EMPTY: u32 = 0;
const STAGE_FUTURE: u32 = 1;
const STAGE_OUTPUT: u32 = 2;
/// The task module's own flags (state, cancel requested, ...) live in these bits.
const FLAGS_SHIFT: u32 = 2;
const FLAGS_BITS: u32 = 10;
const FLAGS_MASK: u32 = ((1 << FLAGS_BITS) - 1) << FLAGS_SHIFT;
/// The creation site's id (see `event_loop::sites`) takes the upper 20 bits.
const SITE_SHIFT: u32 = FLAGS_SHIFT + FLAGS_BITS;
/// Site ids must fit here.
pub(crate) const MAX_SITE_ID: u32 = (1 << (32 - SITE_SHIFT)) - 1;

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

/// The typed operations, monomorphised for one future type.
struct Vtable {
    /// Polls the future. On `Ready` the future is dropped in place and the output written to the
    /// slot; a panic from that drop is caught and returned.
    poll: unsafe fn(NonNull<Header>, &mut Context<'_>) -> Poll<Option<Panic>>,
    /// Drops the future in place (its destructor may panic: the caller catches it).
    drop_future: unsafe fn(NonNull<Header>),
    /// Moves the output out to `dst`, which points to a `MaybeUninit<F::Output>`.
    read_output: unsafe fn(NonNull<Header>, *mut ()),
    /// Drops the output in place (its destructor may panic: the caller catches it).
    drop_output: unsafe fn(NonNull<Header>),
    /// The output's type, checked before the output is moved out as a `T`.
    output_type: fn() -> TypeId,
    /// Frees the allocation (the reference count reached zero).
    dealloc: unsafe fn(NonNull<Header>),
    /// The waker vtable of the task's scheduler.
    waker: &'static RawWakerVTable,
    /// The scheduler itself, for wakes made through a `TaskPtr`.
    schedule: fn(Notified),
}

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

#[repr(C)]
struct RawCell<F: Future> {
    header: Header,
    stage: UnsafeCell<Stage<F>>,
}

/// The slot after the header: the future while it runs, then its output.
union Stage<F: Future> {
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
    fn stage(&self) -> u32 {
        self.meta.get() & STAGE_MASK
    }

    fn set_stage(&self, stage: u32) {
        self.meta.set((self.meta.get() & !STAGE_MASK) | stage);
    }

    /// The id of the loop the task belongs to.
    pub(crate) fn owner(&self) -> u32 {
        self.owner
    }

    /// The task's number in its loop (wraps after 2^32 tasks of one loop).
    pub(crate) fn number(&self) -> u32 {
        self.number
    }

    /// `Task-3`, or the name the task was given: how trace lines and the task dump call it.
    pub(crate) fn label(&self) -> String {
        let name = self.with_extra(|e| e.and_then(|e| e.name.as_deref().map(str::to_string)));
        name.unwrap_or_else(|| format!("Task-{}", self.number))
    }

    /// The creation site's id.
    pub(crate) fn site(&self) -> u32 {
        self.meta.get() >> SITE_SHIFT
    }

    /// The task module's flags (10 bits).
    pub(crate) fn flags(&self) -> u32 {
        (self.meta.get() & FLAGS_MASK) >> FLAGS_SHIFT
    }

    pub(crate) fn set_flags(&self, flags: u32) {
        let meta = self.meta.get() & !FLAGS_MASK;
        self.meta.set(meta | ((flags << FLAGS_SHIFT) & FLAGS_MASK));
    }

    /// Slot in the owning loop's task table.
    pub(crate) fn index(&self) -> u32 {
        self.index.get()
    }

    pub(crate) fn set_index(&self, index: u32) {
        self.index.set(index);
    }

    /// What the task waits on, packed (`trace::Awaiting::pack`).
    pub(crate) fn awaiting(&self) -> u64 {
        self.awaiting.get()
    }

    pub(crate) fn set_awaiting(&self, packed: u64) {
        self.awaiting.set(packed);
    }

    /// Whether the slot still holds the future (it has not completed, been cancelled or dropped).
    pub(crate) fn has_future(&self) -> bool {
        self.stage() == STAGE_FUTURE
    }

    /// Whether the slot holds an output nobody has taken yet.
    pub(crate) fn has_output(&self) -> bool {
        self.stage() == STAGE_OUTPUT
    }

    /// Whether the task has an extra part (most tasks never do: the fast paths skip it).
    #[inline]
    pub(crate) fn has_extra(&self) -> bool {
        // SAFETY: the `Cell` is only ever touched on the loop's thread (see the module
        // documentation), and no reference into it is alive here: reading whether the `Option`
        // is `Some` races with nothing.
        unsafe { (*self.extra.as_ptr()).is_some() }
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
        r
    }

    /// Takes the extra part out if it holds nothing any more (no name, callbacks, waker or
    /// panic), for reuse by another task.
    pub(crate) fn take_empty_extra(&self) -> Option<Box<TaskExtra>> {
        let extra = self.extra.take()?;
        if extra.name.is_none() && extra.callbacks.is_empty() && extra.join_waker.is_none() && extra.panic.is_none() {
            Some(extra)
        } else {
            self.extra.set(Some(extra));
            None
        }
    }

    fn ref_inc(&self) {
        let prev = self.state.fetch_add(REF_ONE, Ordering::Relaxed);
        if prev / REF_ONE > MAX_REFS {
            std::process::abort();
        }
    }

    /// Drops one reference; true if it was the last.
    fn ref_dec(&self) -> bool {
        let prev = self.state.fetch_sub(REF_ONE, Ordering::Release);
        if prev / REF_ONE != 1 {
            return false;
        }
        // Everything other threads did before dropping their references happens before the
        // memory is freed (the same fence as `Arc`'s).
        fence(Ordering::Acquire);
        true
    }

    /// Sets `NOTIFIED`; true if this call set it (the caller must then schedule the task).
    fn notify(&self) -> bool {
        self.state.fetch_or(NOTIFIED, Ordering::AcqRel) & NOTIFIED == 0
    }
}

/// Releases a reference held through `ptr`; frees the cell when it was the last.
///
/// # Safety
/// `ptr` points to a live cell and the caller owns one of its references.
unsafe fn release(ptr: NonNull<Header>) {
    // SAFETY: the caller owns a reference, so the header is alive until ref_dec says otherwise.
    let last = unsafe { ptr.as_ref() }.ref_dec();
    if last {
        // SAFETY: that was the last reference: nobody else can reach the cell any more.
        unsafe { (ptr.as_ref().vtable.dealloc)(ptr) };
    }
}

// ---------------------------------------------------------------------------------------------
// TaskPtr: a counted reference on the loop's thread.

/// A counted reference to a task, for the loop's thread (`!Send`): the loop's table and ready
/// queue, `Task` handles and `TaskRef`s hold these.
pub(crate) struct TaskPtr {
    ptr: NonNull<Header>,
    _not_send: PhantomData<*const ()>,
}

impl TaskPtr {
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
        let meta =
            STAGE_FUTURE | ((init.flags << FLAGS_SHIFT) & FLAGS_MASK) | (init.site.min(MAX_SITE_ID) << SITE_SHIFT);
        let value = RawCell {
            header: Header {
                state: AtomicUsize::new(REF_ONE | NOTIFIED),
                vtable: vtable::<F, S>(),
                owner: init.owner,
                index: Cell::new(u32::MAX),
                number: init.number,
                meta: Cell::new(meta),
                awaiting: Cell::new(0),
                extra: Cell::new(None),
            },
            stage: UnsafeCell::new(Stage {
                future: ManuallyDrop::new(future),
            }),
        };
        // SAFETY: `cell` is a fresh allocation with `RawCell<F>`'s layout.
        unsafe { cell.as_ptr().write(value) };
        TaskPtr {
            ptr: cell.cast(),
            _not_send: PhantomData,
        }
    }

    /// The header (the loop's thread reads and writes its `Cell` fields).
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
    pub(crate) fn ptr_eq(&self, other: &TaskPtr) -> bool {
        self.ptr == other.ptr
    }

    /// Clears `NOTIFIED` right before a step polls: the wake that queued it is consumed.
    pub(crate) fn clear_notified(&self) {
        self.header().state.fetch_and(!NOTIFIED, Ordering::AcqRel);
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
    /// Returns `Ready(None)` without polling if the slot holds no future.
    pub(crate) fn poll(&self, cx: &mut Context<'_>) -> Poll<Option<Panic>> {
        if !self.header().has_future() {
            return Poll::Ready(None);
        }
        // SAFETY: the slot holds the future (checked above); this thread is the loop's, the only
        // one that touches the slot, and a step is never re-entered for the same task (the
        // task module checks its RUNNING state first).
        unsafe { (self.header().vtable.poll)(self.ptr, cx) }
    }

    /// Drops the future if the slot still holds it; a panicking destructor is caught and
    /// returned. The slot is empty afterwards either way.
    pub(crate) fn drop_future(&self) -> Result<(), Panic> {
        if !self.header().has_future() {
            return Ok(());
        }
        // SAFETY: the slot holds the future; `drop_future` marks it empty before dropping.
        catch_unwind(AssertUnwindSafe(|| unsafe {
            (self.header().vtable.drop_future)(self.ptr)
        }))
        .map_err(Panic::from_payload)
    }

    /// Moves the output out of the slot if it holds one of type `T` (once: the slot is empty
    /// afterwards). A `T` other than the task's output type gives `None` (the `Task<T>` handle
    /// is only ever made with the right one; the check makes that a fact rather than a hope).
    pub(crate) fn take_output<T: 'static>(&self) -> Option<T> {
        let header = self.header();
        if !header.has_output() || (header.vtable.output_type)() != TypeId::of::<T>() {
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
    pub(crate) fn drop_output(&self) -> Result<(), Panic> {
        if !self.header().has_output() {
            return Ok(());
        }
        // SAFETY: the slot holds the output; `drop_output` marks it empty before dropping.
        catch_unwind(AssertUnwindSafe(|| unsafe {
            (self.header().vtable.drop_output)(self.ptr)
        }))
        .map_err(Panic::from_payload)
    }
}

impl Clone for TaskPtr {
    fn clone(&self) -> TaskPtr {
        self.header().ref_inc();
        TaskPtr {
            ptr: self.ptr,
            _not_send: PhantomData,
        }
    }
}

impl Drop for TaskPtr {
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
// Notified: a counted reference that may cross threads.

/// A counted reference to a woken task, on its way to its loop's queue from any thread. It only
/// touches the reference count; [`Notified::into_local`] turns it back into a [`TaskPtr`] on the
/// owning loop's thread.
pub(crate) struct Notified {
    ptr: NonNull<Header>,
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
        Some(TaskPtr {
            ptr: me.ptr,
            _not_send: PhantomData,
        })
    }
}

impl Drop for Notified {
    fn drop(&mut self) {
        // SAFETY: this Notified owns one reference.
        unsafe { release(self.ptr) };
    }
}

/// Proof of being on a loop's thread: the loop owns one (it is `!Send`), and only it can turn a
/// [`Notified`] of its own tasks back into [`TaskPtr`]s.
pub(crate) struct OwnerToken {
    id: u32,
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
// The current task of a loop.

/// The task being stepped, if any: set only for the duration of a step by [`CurrentTask::enter`],
/// whose caller holds the task's [`TaskPtr`], so the pointer stored here is always alive.
#[derive(Default)]
pub(crate) struct CurrentTask {
    ptr: Cell<Option<NonNull<Header>>>,
}

impl CurrentTask {
    /// Runs `f` with `task` as the current task (nested calls stack; the previous one comes back
    /// afterwards, also when `f` panics).
    pub(crate) fn enter<R>(&self, task: &TaskPtr, f: impl FnOnce() -> R) -> R {
        struct Restore<'a> {
            slot: &'a Cell<Option<NonNull<Header>>>,
            previous: Option<NonNull<Header>>,
        }
        impl Drop for Restore<'_> {
            fn drop(&mut self) {
                self.slot.set(self.previous);
            }
        }
        let _restore = Restore {
            slot: &self.ptr,
            previous: self.ptr.replace(Some(task.ptr)),
        };
        f()
    }

    /// A reference to the current task.
    pub(crate) fn get(&self) -> Option<TaskPtr> {
        let ptr = self.ptr.get()?;
        // SAFETY: a pointer is in the slot only inside `enter`, whose caller holds a reference
        // to that task for the whole call; we take one more.
        unsafe { ptr.as_ref() }.ref_inc();
        Some(TaskPtr {
            ptr,
            _not_send: PhantomData,
        })
    }

    /// Whether `task` is the current task.
    pub(crate) fn is(&self, task: &TaskPtr) -> bool {
        self.ptr.get() == Some(task.ptr)
    }
}

// ---------------------------------------------------------------------------------------------
// The monomorphised functions.

fn vtable<F, S>() -> &'static Vtable
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

/// # Safety
/// `ptr` points to a live `RawCell<F>` whose slot holds the future, on the loop's thread.
unsafe fn poll<F: Future>(ptr: NonNull<Header>, cx: &mut Context<'_>) -> Poll<Option<Panic>> {
    let cell = ptr.cast::<RawCell<F>>();
    // SAFETY: the slot holds the future (caller's contract); it never moves while in the cell,
    // which is what pinning requires, and no other reference to it exists during the poll.
    let out = unsafe {
        let future = &mut *(*cell.as_ref().stage.get()).future;
        Pin::new_unchecked(future).poll(cx)
    };
    match out {
        Poll::Pending => Poll::Pending,
        Poll::Ready(value) => {
            // The future is pinned: drop it where it is, then reuse its slot for the output.
            // SAFETY: as above; the stage is marked empty before the drop, so a panicking
            // destructor cannot lead to a second drop.
            let dtor = unsafe {
                let header = &cell.as_ref().header;
                header.set_stage(STAGE_EMPTY);
                let stage = cell.as_ref().stage.get();
                catch_unwind(AssertUnwindSafe(|| ManuallyDrop::drop(&mut (*stage).future)))
            };
            // SAFETY: the slot is empty now (the future was dropped), and sized for the output.
            unsafe {
                (*cell.as_ref().stage.get()).output = ManuallyDrop::new(value);
                cell.as_ref().header.set_stage(STAGE_OUTPUT);
            }
            Poll::Ready(dtor.err().map(Panic::from_payload))
        }
    }
}

/// # Safety
/// `ptr` points to a live `RawCell<F>` whose slot holds the future, on the loop's thread.
unsafe fn drop_future<F: Future>(ptr: NonNull<Header>) {
    let cell = ptr.cast::<RawCell<F>>();
    // SAFETY: per the contract; the stage is marked empty first so that nothing drops it twice.
    unsafe {
        cell.as_ref().header.set_stage(STAGE_EMPTY);
        ManuallyDrop::drop(&mut (*cell.as_ref().stage.get()).future);
    }
}

/// # Safety
/// `ptr` points to a live `RawCell<F>` whose slot holds the output, on the loop's thread, and
/// `dst` points to writable memory for an `F::Output`.
unsafe fn read_output<F: Future>(ptr: NonNull<Header>, dst: *mut ()) {
    let cell = ptr.cast::<RawCell<F>>();
    // SAFETY: per the contract; the stage is marked empty, so the value is moved out once.
    unsafe {
        cell.as_ref().header.set_stage(STAGE_EMPTY);
        let value = ManuallyDrop::take(&mut (*cell.as_ref().stage.get()).output);
        dst.cast::<F::Output>().write(value);
    }
}

/// # Safety
/// `ptr` points to a live `RawCell<F>` whose slot holds the output, on the loop's thread.
unsafe fn drop_output<F: Future>(ptr: NonNull<Header>) {
    let cell = ptr.cast::<RawCell<F>>();
    // SAFETY: per the contract; the stage is marked empty first so that nothing drops it twice.
    unsafe {
        cell.as_ref().header.set_stage(STAGE_EMPTY);
        ManuallyDrop::drop(&mut (*cell.as_ref().stage.get()).output);
    }
}

/// Cells freed with the future or output still inside (always zero unless something is wrong;
/// the tests assert it).
static LEAKED: AtomicUsize = AtomicUsize::new(0);

/// How many cells were freed with their future or output still in them (see [`LEAKED`]).
#[cfg(test)]
pub(crate) fn leaked_cells() -> usize {
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
        STAGE_EMPTY => {}
        STAGE_FUTURE => {
            // A pinned future must be dropped before its memory goes, and it may not be `Send`:
            // keep the memory rather than break either rule.
            LEAKED.fetch_add(1, Ordering::Relaxed);
            return;
        }
        _ => {
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

#[cfg(test)]
mod tests {
    //! The cell on its own, driven by a plain queue instead of the loop (these run under Miri:
    //! `make miri`), and under valgrind with the task contract tests (`make valgrind`).

    use super::*;
    use std::collections::{HashMap, VecDeque};
    use std::sync::atomic::AtomicU32;
    use std::sync::{Arc, Mutex};

    /// Woken tasks, by owner id: each test uses its own owner, so tests running in parallel do
    /// not see each other's wakes.
    fn queues() -> &'static Mutex<HashMap<u32, VecDeque<Notified>>> {
        static Q: std::sync::OnceLock<Mutex<HashMap<u32, VecDeque<Notified>>>> = std::sync::OnceLock::new();
        Q.get_or_init(Mutex::default)
    }

    struct TestQueue;

    impl Schedule for TestQueue {
        fn schedule(task: Notified) {
            let mut q = queues().lock().unwrap();
            q.entry(task.owner()).or_default().push_back(task);
        }
    }

    /// A test's own owner id and token.
    fn owner() -> OwnerToken {
        static NEXT: AtomicU32 = AtomicU32::new(1);
        OwnerToken::new(NEXT.fetch_add(1, Ordering::Relaxed))
    }

    fn spawn<F: Future + 'static>(token: &OwnerToken, f: F) -> TaskPtr
    where
        F::Output: 'static,
    {
        TaskPtr::new::<F, TestQueue>(
            f,
            Init {
                owner: token.id,
                number: 1,
                site: 0,
                flags: 0,
            },
        )
    }

    /// Takes the woken tasks of `token`'s owner off the queue.
    fn drain(token: &OwnerToken) -> Vec<TaskPtr> {
        let woken: Vec<Notified> = queues()
            .lock()
            .unwrap()
            .get_mut(&token.id)
            .map(|q| q.drain(..).collect())
            .unwrap_or_default();
        woken.into_iter().filter_map(|n| n.into_local(token)).collect()
    }

    fn poll_once(task: &TaskPtr) -> Poll<Option<Panic>> {
        task.clear_notified();
        let waker = task.waker_ref();
        let mut cx = Context::from_waker(&waker);
        task.poll(&mut cx)
    }

    /// A future that is pending until `release` is set, parking its waker where tests can reach
    /// it (and clone it, wake it, drop it, from any thread).
    #[derive(Clone, Default)]
    struct Gate {
        open: Arc<Mutex<bool>>,
        waker: Arc<Mutex<Option<Waker>>>,
    }

    impl Gate {
        fn wait(&self) -> impl Future<Output = u64> + 'static + use<> {
            let gate = self.clone();
            std::future::poll_fn(move |cx| {
                if *gate.open.lock().unwrap() {
                    return Poll::Ready(7);
                }
                *gate.waker.lock().unwrap() = Some(cx.waker().clone());
                Poll::Pending
            })
        }

        fn open(&self) {
            *self.open.lock().unwrap() = true;
            if let Some(w) = self.waker.lock().unwrap().take() {
                w.wake();
            }
        }

        fn waker(&self) -> Waker {
            self.waker.lock().unwrap().clone().expect("a parked waker")
        }
    }

    /// Counts drops, so a test can see a value dropped exactly once.
    struct DropCount(Arc<AtomicUsize>);
    impl Drop for DropCount {
        fn drop(&mut self) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }

    #[test]
    fn a_cell_is_one_allocation_with_a_48_byte_header() {
        assert_eq!(std::mem::size_of::<Header>(), 48);
        assert_eq!(std::mem::size_of::<RawCell<std::future::Ready<()>>>(), 56);
    }

    #[test]
    fn the_output_is_read_once_and_only_as_its_own_type() {
        let t = owner();
        let task = spawn(&t, async { String::from("out") });
        assert!(matches!(poll_once(&task), Poll::Ready(None)));
        assert!(task.header().has_output());
        assert_eq!(task.take_output::<u64>(), None, "a wrong type never reads the slot");
        assert_eq!(task.take_output::<String>().as_deref(), Some("out"));
        assert_eq!(task.take_output::<String>(), None, "read once");
        assert!(!task.header().has_output());
        drop(task);
        assert_eq!(leaked_cells(), 0);
    }

    #[test]
    fn many_wakes_before_a_poll_queue_the_task_once() {
        let t = owner();
        let gate = Gate::default();
        let task = spawn(&t, gate.wait());
        drop(drain(&t)); // nothing was woken: creation only sets NOTIFIED for the first step
        assert!(poll_once(&task).is_pending());
        let w = gate.waker();
        for _ in 0..5 {
            w.wake_by_ref();
        }
        let by_value = w.clone();
        by_value.wake();
        let woken = drain(&t);
        assert_eq!(woken.len(), 1);
        assert!(woken[0].ptr_eq(&task));
        // A wake during the next poll queues it again.
        task.clear_notified();
        w.wake_by_ref();
        assert_eq!(drain(&t).len(), 1);
        drop(w);
        gate.open();
        let woken = drain(&t);
        assert_eq!(woken.len(), 0, "still NOTIFIED from the last wake: absorbed");
        assert!(matches!(poll_once(&task), Poll::Ready(None)));
        assert_eq!(task.take_output::<u64>(), Some(7));
    }

    #[test]
    fn wakers_are_cloned_woken_and_dropped_from_several_threads() {
        let t = owner();
        let gate = Gate::default();
        let task = spawn(&t, gate.wait());
        assert!(poll_once(&task).is_pending());
        let w = gate.waker();
        let threads: Vec<_> = (0..4)
            .map(|i| {
                let w = w.clone();
                std::thread::spawn(move || {
                    for j in 0..if cfg!(miri) { 5 } else { 200 } {
                        let c = w.clone();
                        if (i + j) % 2 == 0 {
                            c.wake();
                        } else {
                            c.wake_by_ref();
                        }
                    }
                })
            })
            .collect();
        for th in threads {
            th.join().unwrap();
        }
        let woken = drain(&t);
        assert_eq!(woken.len(), 1, "all those wakes queued it once");
        drop(woken);
        drop(w);
        gate.open();
        assert!(matches!(poll_once(&task), Poll::Ready(None)));
        assert_eq!(task.take_output::<u64>(), Some(7));
        drop(task);
        drop(drain(&t));
        assert_eq!(leaked_cells(), 0);
    }

    #[test]
    fn the_last_reference_may_be_a_waker_on_another_thread() {
        let t = owner();
        let gate = Gate::default();
        let task = spawn(&t, gate.wait());
        assert!(poll_once(&task).is_pending());
        let w = gate.waker();
        // The owner drops the future (cancel) and every reference of its own.
        assert!(task.drop_future().is_ok());
        drop(task);
        drop(gate);
        // The remaining waker wakes (the task is queued, but its loop will find it finished) and
        // is then dropped on another thread, which frees the cell.
        std::thread::spawn(move || {
            w.wake_by_ref();
            drop(w);
        })
        .join()
        .unwrap();
        let stale = drain(&t);
        assert_eq!(stale.len(), 1);
        assert!(!stale[0].header().has_future());
        drop(stale); // the last reference: freed here
        assert_eq!(leaked_cells(), 0);
    }

    #[test]
    fn dropping_the_handle_in_every_state_frees_everything_once() {
        let t = owner();
        // Before the first poll: the future is dropped, never polled.
        let dropped = Arc::new(AtomicUsize::new(0));
        let d = DropCount(dropped.clone());
        let task = spawn(&t, async move {
            let _d = d;
        });
        assert!(task.drop_future().is_ok());
        drop(task);
        assert_eq!(dropped.load(Ordering::SeqCst), 1);

        // While pending.
        let dropped = Arc::new(AtomicUsize::new(0));
        let d = DropCount(dropped.clone());
        let gate = Gate::default();
        let wait = gate.wait();
        let task = spawn(&t, async move {
            let _d = d;
            wait.await
        });
        assert!(poll_once(&task).is_pending());
        assert!(task.drop_future().is_ok());
        assert_eq!(dropped.load(Ordering::SeqCst), 1);
        drop(task);
        drop(gate);

        // Finished, the output never read: dropped explicitly, once.
        let dropped = Arc::new(AtomicUsize::new(0));
        let d = DropCount(dropped.clone());
        let task = spawn(&t, async move { d });
        assert!(matches!(poll_once(&task), Poll::Ready(None)));
        assert_eq!(dropped.load(Ordering::SeqCst), 0);
        assert!(task.drop_output().is_ok());
        assert!(task.drop_output().is_ok(), "a second drop finds the slot empty");
        assert_eq!(dropped.load(Ordering::SeqCst), 1);
        drop(task);
        drop(drain(&t));
        assert_eq!(leaked_cells(), 0);
    }

    #[test]
    fn a_panic_in_poll_leaves_the_future_for_the_owner_to_drop() {
        let t = owner();
        let dropped = Arc::new(AtomicUsize::new(0));
        let d = DropCount(dropped.clone());
        let task = spawn(&t, async move {
            let _d = d;
            if true {
                panic!("boom");
            }
        });
        let polled = catch_unwind(AssertUnwindSafe(|| poll_once(&task)));
        assert!(polled.is_err());
        assert!(task.header().has_future());
        assert!(task.drop_future().is_ok());
        assert_eq!(dropped.load(Ordering::SeqCst), 1);
        assert!(!task.header().has_output());
        drop(task);
        assert_eq!(leaked_cells(), 0);
    }

    /// A future that is ready at once and panics when dropped.
    struct ReadyThenPanicOnDrop;
    impl Future for ReadyThenPanicOnDrop {
        type Output = u8;
        fn poll(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<u8> {
            Poll::Ready(3)
        }
    }
    impl Drop for ReadyThenPanicOnDrop {
        fn drop(&mut self) {
            panic!("destructor");
        }
    }

    #[test]
    fn a_destructor_panic_at_completion_is_returned_and_the_output_kept() {
        let t = owner();
        let task = spawn(&t, ReadyThenPanicOnDrop);
        match poll_once(&task) {
            Poll::Ready(Some(p)) => assert_eq!(p.message(), "destructor"),
            other => panic!("expected a caught destructor panic, got {other:?}"),
        }
        assert_eq!(task.take_output::<u8>(), Some(3));
        drop(task);
        assert_eq!(leaked_cells(), 0);
    }

    #[test]
    fn a_destructor_panic_while_cancelling_is_returned_once() {
        let t = owner();
        let gate = Gate::default();
        let wait = gate.wait();
        let task = spawn(&t, async move {
            let _bomb = ReadyThenPanicOnDrop;
            wait.await
        });
        assert!(poll_once(&task).is_pending());
        let err = task.drop_future().expect_err("the destructor panicked");
        assert_eq!(err.message(), "destructor");
        assert!(
            task.drop_future().is_ok(),
            "the slot is empty: nothing is dropped twice"
        );
        drop(task);
        drop(gate);
        assert_eq!(leaked_cells(), 0);
    }

    #[test]
    fn cancel_in_every_state() {
        let t = owner();
        // Not started.
        let task = spawn(&t, async { 1u8 });
        assert!(task.drop_future().is_ok());
        assert!(matches!(poll_once(&task), Poll::Ready(None)), "nothing left to poll");
        assert_eq!(task.take_output::<u8>(), None);
        // Finished: the output stays until it is read or dropped.
        let task = spawn(&t, async { 2u8 });
        assert!(matches!(poll_once(&task), Poll::Ready(None)));
        assert!(task.drop_future().is_ok());
        assert_eq!(task.take_output::<u8>(), Some(2));
        drop(drain(&t));
        assert_eq!(leaked_cells(), 0);
    }

    #[test]
    fn a_wake_reaches_only_the_owning_loop() {
        let t = owner();
        let other = owner();
        let gate = Gate::default();
        let task = spawn(&t, gate.wait());
        assert!(poll_once(&task).is_pending());
        gate.waker().wake();
        let woken: Vec<Notified> = queues().lock().unwrap().get_mut(&t.id).unwrap().drain(..).collect();
        assert_eq!(woken.len(), 1);
        let mut woken = woken.into_iter();
        let n = woken.next().unwrap();
        assert!(n.into_local(&other).is_none(), "another loop's token cannot take it");
        assert!(task.drop_future().is_ok());
        assert_eq!(leaked_cells(), 0);
    }

    #[test]
    fn the_current_task_is_restored_after_a_panic() {
        let t = owner();
        let a = spawn(&t, async {});
        let b = spawn(&t, async {});
        let cur = CurrentTask::default();
        cur.enter(&a, || {
            assert!(cur.is(&a));
            let r = catch_unwind(AssertUnwindSafe(|| cur.enter(&b, || panic!("inside b"))));
            assert!(r.is_err());
            assert!(cur.get().is_some_and(|c| c.ptr_eq(&a)));
        });
        assert!(cur.get().is_none());
        drop(drain(&t));
        assert!(a.drop_future().is_ok() && b.drop_future().is_ok());
    }

    #[test]
    fn a_finished_tasks_waker_keeps_the_memory_not_the_future() {
        let t = owner();
        let dropped = Arc::new(AtomicUsize::new(0));
        let d = DropCount(dropped.clone());
        let task = spawn(&t, async move {
            let _d = d;
            5u32
        });
        let w = task.waker();
        assert!(matches!(poll_once(&task), Poll::Ready(None)));
        assert_eq!(dropped.load(Ordering::SeqCst), 1, "the future went at completion");
        assert_eq!(task.take_output::<u32>(), Some(5));
        drop(task);
        w.wake(); // queues a finished task; harmless
        drop(drain(&t));
        assert_eq!(leaked_cells(), 0);
    }
}
