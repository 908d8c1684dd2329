//! The counted pool of permits behind [`Lock`](crate::sync::Lock), [`Mutex`](crate::sync::Mutex),
//! [`Semaphore`](crate::sync::Semaphore) and [`BoundedSemaphore`](crate::sync::BoundedSemaphore): how many
//! permits are free, how many were forgotten, and the line of tasks waiting for one (a
//! [`Line`] of the wait queue, whose rules are here: an acquire completes at once only when a
//! permit is free and nobody is queued; a freed permit is granted to the first waiter).

use std::cell::RefCell;

use crate::sync::binding::LoopBinding;
use crate::sync::wait_queue::{Line, WaitQueue, Waiter, WakeList};

/// The pool's state, and the line its waiters wait in.
///
/// Invariant: while a permit is available, nobody is left waiting. Each operation that frees a
/// permit or queues a waiter ends by granting what it can ([`PoolState::dispatch`]).
pub(crate) struct PoolState {
    available: usize,
    /// Permits given up with `SemaphorePermit::forget` and not given back yet (what a bounded
    /// semaphore may release).
    forgotten: usize,
    queue: WaitQueue<()>,
    binding: LoopBinding,
}

impl PoolState {
    /// Grants available permits to waiters, first come first served (the invariant).
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
    /// that was granted a permit and has not run yet).
    fn can_take(&self) -> bool {
        self.available > 0 && self.queue.is_empty()
    }
}

impl Line for PoolState {
    type State = PoolState;
    type Grant = ();
    type Carry = ();
    type Output = ();

    fn queue(st: &mut PoolState) -> &mut WaitQueue<()> {
        &mut st.queue
    }

    fn binding(st: &PoolState) -> &LoopBinding {
        &st.binding
    }

    fn arrive(st: &mut PoolState, _: &mut (), _: &mut WakeList) -> Option<()> {
        st.can_take().then(|| st.available -= 1)
    }

    fn take(_: &mut PoolState, (): (), _: &mut (), _: &mut WakeList) {}

    fn pass_on(st: &mut PoolState, (): (), wakers: &mut WakeList) {
        // Granted a permit it never saw: the permit goes to the next waiter or to the pool.
        st.available = st.available.saturating_add(1);
        st.dispatch(wakers);
    }

    fn queued(st: &mut PoolState, wakers: &mut WakeList) {
        // A newcomer queues behind waiters granted a permit that have not run yet; a permit
        // freed meanwhile is its own at once.
        st.dispatch(wakers);
    }

    fn would_arrive(st: &PoolState, _: &()) -> bool {
        st.can_take()
    }
}

/// A wait for one permit.
pub(crate) type PermitWaiter<'a> = Waiter<&'a RefCell<PoolState>, PoolState>;

/// A counted pool of permits with a fair queue.
pub(crate) struct Pool {
    state: RefCell<PoolState>,
}

impl Pool {
    pub(crate) fn new(permits: usize) -> Pool {
        Pool::with_binding(permits, LoopBinding::default())
    }

    /// A pool whose waiters may be tasks of any loop (the [`Mutex`](crate::sync::Mutex)'s).
    pub(crate) fn unbound(permits: usize) -> Pool {
        Pool::with_binding(permits, LoopBinding::never())
    }

    fn with_binding(permits: usize, binding: LoopBinding) -> Pool {
        Pool {
            state: RefCell::new(PoolState {
                available: permits,
                forgotten: 0,
                queue: WaitQueue::new(),
                binding,
            }),
        }
    }

    /// Takes a permit if that needs no wait.
    pub(crate) fn try_take(&self) -> bool {
        let mut st = self.state.borrow_mut();
        PoolState::arrive(&mut st, &mut (), &mut WakeList::default()).is_some()
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

    /// A permit leaves the pool for good (`SemaphorePermit::forget`).
    pub(crate) fn forget_one(&self) {
        let mut st = self.state.borrow_mut();
        st.forgotten = st.forgotten.saturating_add(1);
    }

    /// Gives back one forgotten permit; `false` (and nothing changes) if none was forgotten.
    pub(crate) fn give_back_forgotten(&self) -> bool {
        {
            let mut st = self.state.borrow_mut();
            if st.forgotten == 0 {
                return false;
            }
            st.forgotten -= 1;
        }
        self.put_back(1);
        true
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

    pub(crate) fn waiter(&self) -> PermitWaiter<'_> {
        Waiter::new(&self.state, ())
    }

    /// The state, for a waiter that owns the pool's owner (`Semaphore::acquire_owned`).
    pub(crate) fn state(&self) -> &RefCell<PoolState> {
        &self.state
    }
}
