//! The counted pool of permits behind [`Lock`](crate::sync::Lock), [`Mutex`](crate::sync::Mutex),
//! [`Semaphore`](crate::sync::Semaphore) and [`BoundedSemaphore`](crate::sync::BoundedSemaphore): how many
//! permits are free, how many were forgotten, whether it is closed, and the line of tasks waiting
//! for permits (a [`Line`] of the wait queue, whose rules are here: an acquire completes at once
//! only when enough permits are free and nobody is queued; freed permits are granted to the first
//! waiter once there are as many as it asked for, and a later, smaller request waits behind it).
//!
//! Two lines share the pool's queue: [`PoolState`] itself, one permit per waiter and no closing
//! (the lock's), and [`ManyPermits`], `n` permits per waiter and an error once closed (tokio's
//! `acquire_many`, the semaphore's).

use std::cell::RefCell;

use crate::sync::binding::LoopBinding;
use crate::sync::wait_queue::{Line, WaitQueue, Waiter, WakeList};

/// The pool's state, and the line its waiters wait in.
///
/// Invariant: the first waiter, if any, waits for more permits than are available. Each
/// operation that frees permits, queues a waiter or takes one out of the line ends by granting
/// what it can ([`PoolState::dispatch`]).
pub(crate) struct PoolState {
    available: usize,
    /// Permits given up with `SemaphorePermit::forget` or `Semaphore::forget_permits` and not
    /// given back yet (what a bounded semaphore may release).
    forgotten: usize,
    /// Set by `Semaphore::close`: no permit is handed out any more (the waiters were granted
    /// nothing and answer an error).
    closed: bool,
    /// The grants are numbers of permits (0 for the wake-up of a close).
    queue: WaitQueue<usize>,
    binding: LoopBinding,
}

impl PoolState {
    /// Grants available permits to waiters, first come first served, each as many as it needs;
    /// stops at the first that needs more than are left (the invariant).
    fn dispatch(&mut self, wakers: &mut WakeList) {
        while let Some(need) = self.queue.head_need() {
            let need = need as usize;
            if need > self.available {
                break;
            }
            self.available -= need;
            if let Err(n) = self.queue.grant_first(need, wakers) {
                // Unreachable: there is a first waiter.
                self.available += n;
                break;
            }
        }
    }

    /// Whether an acquire of `n` permits completes at once: enough free permits and nobody
    /// queued (not even a waiter that was granted permits and has not run yet). Asking for none
    /// takes nothing from anybody, so it never waits (tokio's `acquire_many(0)`).
    fn can_take(&self, n: usize) -> bool {
        n == 0 || (self.available >= n && self.queue.is_empty())
    }

    /// Permits come back (a dropped permit, a cancelled waiter's grant, `add_permits`).
    fn give(&mut self, n: usize, wakers: &mut WakeList) {
        self.available = self.available.saturating_add(n);
        self.dispatch(wakers);
    }
}

impl Line for PoolState {
    type State = PoolState;
    type Grant = usize;
    type Carry = ();
    type Output = ();

    fn queue(st: &mut PoolState) -> &mut WaitQueue<usize> {
        &mut st.queue
    }

    fn binding(st: &PoolState) -> &LoopBinding {
        &st.binding
    }

    fn arrive(st: &mut PoolState, _: &mut (), _: &mut WakeList) -> Option<()> {
        st.can_take(1).then(|| st.available -= 1)
    }

    fn take(_: &mut PoolState, _: usize, _: &mut (), _: &mut WakeList) {}

    fn pass_on(st: &mut PoolState, n: usize, wakers: &mut WakeList) {
        // Granted permits it never saw: they go to the next waiters or to the pool.
        st.give(n, wakers);
    }

    fn queued(st: &mut PoolState, wakers: &mut WakeList) {
        // A newcomer queues behind waiters granted a permit that have not run yet; a permit
        // freed meanwhile is its own at once.
        st.dispatch(wakers);
    }

    fn left(st: &mut PoolState, wakers: &mut WakeList) {
        // A lock's waiters want one permit each, so nobody waits while one is free and this
        // grants nothing; it keeps the one rule of the pool all the same.
        st.dispatch(wakers);
    }

    fn would_arrive(st: &PoolState, _: &()) -> bool {
        st.can_take(1)
    }
}

/// The semaphore's line: a waiter carries how many permits it wants, and a closed pool answers
/// [`Closed`].
pub(crate) enum ManyPermits {}

/// The pool was closed (`Semaphore::close`): the wait ends without permits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Closed;

impl Line for ManyPermits {
    type State = PoolState;
    type Grant = usize;
    /// The number of permits wanted.
    type Carry = u32;
    type Output = Result<(), Closed>;

    fn queue(st: &mut PoolState) -> &mut WaitQueue<usize> {
        &mut st.queue
    }

    fn binding(st: &PoolState) -> &LoopBinding {
        &st.binding
    }

    fn arrive(st: &mut PoolState, need: &mut u32, _: &mut WakeList) -> Option<Result<(), Closed>> {
        if st.closed {
            return Some(Err(Closed));
        }
        let n = *need as usize;
        st.can_take(n).then(|| {
            st.available -= n;
            Ok(())
        })
    }

    fn take(st: &mut PoolState, granted: usize, _: &mut u32, wakers: &mut WakeList) -> Result<(), Closed> {
        if st.closed {
            // Closed after the permits were granted, before the waiter ran: as tokio's, a
            // closed semaphore hands out nothing; the permits go back.
            st.give(granted, wakers);
            return Err(Closed);
        }
        Ok(())
    }

    fn pass_on(st: &mut PoolState, n: usize, wakers: &mut WakeList) {
        st.give(n, wakers);
    }

    fn queued(st: &mut PoolState, wakers: &mut WakeList) {
        st.dispatch(wakers);
    }

    fn need(need: &u32) -> u32 {
        *need
    }

    fn left(st: &mut PoolState, wakers: &mut WakeList) {
        // The first waiter may have been a big request that held smaller ones back.
        st.dispatch(wakers);
    }

    fn would_arrive(st: &PoolState, need: &u32) -> bool {
        st.closed || st.can_take(*need as usize)
    }
}

/// A wait for one permit (the lock's).
pub(crate) type PermitWaiter<'a> = Waiter<&'a RefCell<PoolState>, PoolState>;

/// A wait for `n` permits (the semaphore's).
pub(crate) type PermitsWaiter<'a> = Waiter<&'a RefCell<PoolState>, ManyPermits>;

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
                closed: false,
                queue: WaitQueue::new(),
                binding,
            }),
        }
    }

    /// Takes a permit if that needs no wait (the lock's).
    pub(crate) fn try_take(&self) -> bool {
        let mut st = self.state.borrow_mut();
        PoolState::arrive(&mut st, &mut (), &mut WakeList::default()).is_some()
    }

    /// Takes `n` permits if that needs no wait; `Err(true)` if the pool is closed, `Err(false)`
    /// if there are not enough or somebody waits.
    pub(crate) fn try_take_many(&self, n: u32) -> Result<(), bool> {
        let mut st = self.state.borrow_mut();
        match ManyPermits::arrive(&mut st, &mut { n }, &mut WakeList::default()) {
            Some(Ok(())) => Ok(()),
            Some(Err(Closed)) => Err(true),
            None => Err(false),
        }
    }

    /// Returns `n` permits: to the first waiters, the rest to the pool.
    pub(crate) fn put_back(&self, n: usize) {
        let mut wakers = WakeList::default();
        self.state.borrow_mut().give(n, &mut wakers);
        wakers.wake();
    }

    /// `n` permits leave the pool for good (`SemaphorePermit::forget`).
    pub(crate) fn forget(&self, n: usize) {
        let mut st = self.state.borrow_mut();
        st.forgotten = st.forgotten.saturating_add(n);
    }

    /// Takes up to `n` free permits out of the pool for good; returns how many.
    pub(crate) fn forget_free(&self, n: usize) -> usize {
        let mut st = self.state.borrow_mut();
        let n = n.min(st.available);
        st.available -= n;
        st.forgotten = st.forgotten.saturating_add(n);
        n
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

    /// Closes the pool: every waiter is granted nothing and woken (its wait answers
    /// [`Closed`]), and no wait starts any more. The wakers are woken, and dropped, after the
    /// state is released: either may call back into the pool (tokio's
    /// `close_drops_wakers_outside_lock`).
    pub(crate) fn close(&self) {
        let mut wakers = WakeList::default();
        {
            let mut st = self.state.borrow_mut();
            st.closed = true;
            st.queue.grant_while(|| Some(0), &mut wakers);
        }
        wakers.wake();
    }

    pub(crate) fn is_closed(&self) -> bool {
        self.state.borrow().closed
    }

    pub(crate) fn available(&self) -> usize {
        self.state.borrow().available
    }

    pub(crate) fn locked(&self) -> bool {
        !self.state.borrow().can_take(1)
    }

    pub(crate) fn waiting(&self) -> usize {
        self.state.borrow().queue.waiting()
    }

    pub(crate) fn waiter(&self) -> PermitWaiter<'_> {
        Waiter::new(&self.state, ())
    }

    /// A wait for `n` permits.
    pub(crate) fn waiter_many(&self, n: u32) -> PermitsWaiter<'_> {
        Waiter::new(&self.state, n)
    }

    /// The state, for a waiter that owns the pool's owner (`Semaphore::acquire_owned`).
    pub(crate) fn state(&self) -> &RefCell<PoolState> {
        &self.state
    }
}
