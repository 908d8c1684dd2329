//! The counted pool of permits behind [`Lock`](crate::Lock), [`Mutex`](crate::Mutex),
//! [`Semaphore`](crate::Semaphore) and [`BoundedSemaphore`](crate::BoundedSemaphore): how many
//! permits are free, how many were forgotten, and the fair queue of tasks waiting for one.

use std::cell::RefCell;

use crate::event_loop::trace::SyncOp;
use crate::sync::wait_queue::{WaitQueue, WaitState, Waiter, WakeList};

pub(crate) struct PoolState {
    available: usize,
    /// Permits given up with `SemaphorePermit::forget` and not given back yet (what a bounded
    /// semaphore may release).
    pub(crate) forgotten: usize,
    queue: WaitQueue<()>,
}

impl PoolState {
    /// Hands available permits to waiters, first come first served (invariant 5).
    fn dispatch(&mut self, wakers: &mut WakeList) {
        if self.available == 0 {
            return;
        }
        let available = &mut self.available;
        self.queue.grant_while(
            || {
                (*available > 0).then(|| {
                    *available -= 1;
                })
            },
            wakers,
        );
    }

    /// Whether an acquire completes at once: a free permit and nobody queued (not even a waiter
    /// that was handed a permit and has not run yet).
    fn can_take(&self) -> bool {
        self.available > 0 && self.queue.is_empty()
    }
}

impl WaitState for PoolState {
    type Grant = ();

    fn queue(&mut self) -> &mut WaitQueue<()> {
        &mut self.queue
    }

    fn arrive(&mut self, _: &mut WakeList) -> Option<()> {
        self.can_take().then(|| self.available -= 1)
    }

    fn settle(&mut self, abandoned: Option<()>, wakers: &mut WakeList) {
        if abandoned.is_some() {
            // Handed a permit it never saw: the permit goes to the next waiter or to the pool.
            self.available = self.available.saturating_add(1);
        }
        self.dispatch(wakers);
    }
}

/// A counted pool of permits with a fair queue.
pub(crate) struct Pool {
    pub(crate) state: RefCell<PoolState>,
}

impl Pool {
    pub(crate) fn new(permits: usize) -> Pool {
        Pool {
            state: RefCell::new(PoolState {
                available: permits,
                forgotten: 0,
                queue: WaitQueue::new(),
            }),
        }
    }

    pub(crate) fn try_take(&self) -> bool {
        let mut st = self.state.borrow_mut();
        st.arrive(&mut WakeList::default()).is_some()
    }

    /// Returns `n` permits: to the first waiters, the rest to the pool.
    pub(crate) fn put_back(&self, n: usize) {
        let mut wakers = WakeList::default();
        {
            let mut st = self.state.borrow_mut();
            st.available = st.available.saturating_add(n);
            st.dispatch(&mut wakers);
        }
        wakers.wake();
    }

    pub(crate) fn available(&self) -> usize {
        self.state.borrow().available
    }

    pub(crate) fn locked(&self) -> bool {
        !self.state.borrow().can_take()
    }

    pub(crate) fn waiting(&self) -> usize {
        self.state.borrow().queue.waiting()
    }

    pub(crate) fn waiter(&self, what: SyncOp) -> Waiter<'_, PoolState> {
        Waiter::new(&self.state, what)
    }
}
