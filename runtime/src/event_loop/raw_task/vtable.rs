//! The typed half of the cell: [`Vtable`], the functions monomorphised for one future type `F`
//! and scheduler `S` when a task is created (poll, drop the future, read or drop the output, free
//! the memory), which is how code that does not know `F` reaches the slot; and the
//! `RawWakerVTable` of a task's wakers, whose data pointer is the header. The slot functions are
//! called only by [`TaskPtr`](super::TaskPtr) after it checked the stage; they move the stage
//! along the table in the module documentation of `raw_task`.

use std::alloc::{Layout, dealloc};
use std::any::TypeId;
use std::future::Future;
use std::marker::PhantomData;
use std::mem::ManuallyDrop;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::pin::Pin;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::task::{Context, Poll, RawWaker, RawWakerVTable};

use crate::event_loop::error::Panic;
use crate::event_loop::raw_task::state::Stage;
use crate::event_loop::raw_task::{Header, Notified, RawCell, Schedule, release};

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

    unsafe fn clone(data: *const ()) -> RawWaker {
        // SAFETY: `data` is the header of a live cell (the waker being cloned holds a reference).
        unsafe { &*(data as *const Header) }.ref_inc();
        RawWaker::new(data, &Self::VTABLE)
    }

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

    unsafe fn drop(data: *const ()) {
        // SAFETY: the waker being dropped owns one reference; `data` came from a TaskPtr.
        unsafe { release(NonNull::new_unchecked(data as *mut Header)) };
    }
}
