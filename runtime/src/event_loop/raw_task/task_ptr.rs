//! [`TaskPtr`]: the counted reference to a cell that the loop's thread holds (its task table and
//! ready queue, `Task` handles, `TaskRef`s), and the only way to the slot: `new` moves a future
//! into a fresh cell, `poll` drives it (stage `Future` -> `Polling` -> back, or on to `Output`),
//! `drop_future`, `take_output` and `drop_output` empty it. Each checks the stage first and
//! refuses (aborts) while a poll is running, so the slot is never dropped or moved under a poll,
//! whatever the caller does.

use std::alloc::{Layout, alloc, handle_alloc_error};
use std::any::TypeId;
use std::cell::{Cell, UnsafeCell};
use std::future::Future;
use std::marker::PhantomData;
use std::mem::{ManuallyDrop, MaybeUninit};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::ptr::NonNull;
use std::sync::atomic::AtomicUsize;
use std::task::{Context, Poll, RawWaker, Waker};

use crate::event_loop::error::Panic;
use crate::event_loop::raw_task::state::{MAX_SITE_ID, NOTIFIED, REF_ONE, Stage, initial_meta, refuse_while_polling};
use crate::event_loop::raw_task::vtable::vtable;
use crate::event_loop::raw_task::{Header, Init, Notified, RawCell, Schedule, Slot, release};

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
