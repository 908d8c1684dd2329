//! Per-loop extensions: state that a higher layer attaches to one loop, so that the loop can
//! hold it and close it without naming its type.
//!
//! The signal dispatcher (`os::signal`) lives above the loop, yet its state belongs to one loop
//! and must be released when the loop closes (the executor pool, `executor`, uses the same hook
//! from inside the loop layer, created lazily by the first `run_in_executor`). Rather than
//! name their types (an import that would run up the layers, and made `event_loop` and `signal`
//! import each other), the loop keeps a short list of `Rc<dyn Extension>`: a module creates its
//! state on first use with [`LoopInner::extension_or_insert`], finds it again by type, and the
//! loop's `close()` calls [`Extension::close`] on each, in the order they were attached, before
//! it closes the reactor.

use std::any::{Any, TypeId};
use std::rc::Rc;

use crate::event_loop::LoopInner;

/// State a higher layer keeps per loop (see the module documentation).
pub(crate) trait Extension: 'static {
    /// Releases what the extension holds (fds, registrations, threads). Called once, by the
    /// loop's `close()`, before the reactor and the loop's own fds are closed.
    fn close(&self, lp: &Rc<LoopInner>);

    /// Threads the extension has started, for [`LoopStats`](crate::event_loop::LoopStats).
    fn threads(&self) -> usize {
        0
    }
}

/// One attached extension: the same `Rc` seen as the trait (to close it) and as `Any` (to find
/// it by type without trait upcasting).
pub(crate) struct Slot {
    pub(crate) ext: Rc<dyn Extension>,
    any: Rc<dyn Any>,
    type_id: TypeId,
}

impl LoopInner {
    /// The extension of type `T` attached to this loop, if any.
    pub(crate) fn extension<T: Extension>(&self) -> Option<Rc<T>> {
        let slots = self.extensions.borrow();
        let slot = slots.iter().find(|s| s.type_id == TypeId::of::<T>())?;
        slot.any.clone().downcast::<T>().ok()
    }

    /// The extension of type `T`, created by `make` and attached if there is none yet. Errors
    /// from `make` (and a closed loop, which `make` should check) are returned as they are.
    pub(crate) fn extension_or_insert<T: Extension, E>(&self, make: impl FnOnce() -> Result<T, E>) -> Result<Rc<T>, E> {
        if let Some(t) = self.extension::<T>() {
            return Ok(t);
        }
        let t = Rc::new(make()?);
        self.extensions.borrow_mut().push(Slot {
            ext: t.clone(),
            any: t.clone(),
            type_id: TypeId::of::<T>(),
        });
        Ok(t)
    }

    /// Detaches every extension (the loop is closing); the caller closes them.
    pub(crate) fn take_extensions(&self) -> Vec<Slot> {
        std::mem::take(&mut *self.extensions.borrow_mut())
    }

    /// Threads started by all extensions.
    pub(crate) fn extension_threads(&self) -> usize {
        self.extensions.borrow().iter().map(|s| s.ext.threads()).sum()
    }
}
