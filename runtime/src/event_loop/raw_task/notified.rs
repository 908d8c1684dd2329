//! [`Notified`]: the counted reference a wake hands to the scheduler, the one kind of reference
//! that crosses threads (from a waker on any thread to its loop's ready or remote queue), and
//! [`OwnerToken`], the loop's proof of being on its own thread, which alone turns a `Notified`
//! back into a [`TaskPtr`].

use std::marker::PhantomData;
use std::mem::ManuallyDrop;
use std::ptr::NonNull;

use crate::event_loop::raw_task::{Header, TaskPtr, release};

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
