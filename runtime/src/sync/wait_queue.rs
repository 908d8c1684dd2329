//! The fair wait queue of the primitives (see "The fair wait queue" in the `sync` module
//! documentation): a FIFO of entries, each `Waiting(waker)` or `Granted(value)`, and the leaf
//! future [`Waiter`] that owns one entry and removes it when it completes or is dropped.

use std::cell::RefCell;
use std::collections::VecDeque;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, Waker};

use crate::event_loop::trace::{Awaiting, SyncOp, note_awaiting};
use crate::sync::binding::{LoopBinding, WrongLoop};

/// Wakers collected while a primitive's state is borrowed, woken after it is released. The
/// common case (one waker) does not allocate.
#[derive(Default)]
pub(crate) struct WakeList {
    first: Option<Waker>,
    rest: Vec<Waker>,
}

impl WakeList {
    pub(crate) fn push(&mut self, waker: Waker) {
        if self.first.is_none() {
            self.first = Some(waker);
        } else {
            self.rest.push(waker);
        }
    }

    pub(crate) fn wake(self) {
        if let Some(w) = self.first {
            w.wake();
        }
        for w in self.rest {
            w.wake();
        }
    }
}

pub(crate) enum Slot<G> {
    /// Queued; the waker of the task to wake when it is granted.
    Waiting(Waker),
    /// Granted (and its task woken); the grant waits for the future to take it.
    Granted(G),
}

struct Entry<G> {
    id: u64,
    slot: Slot<G>,
}

/// What a waiting future finds when it looks at its entry.
enum Polled<G> {
    Granted(G),
    Waiting,
    /// No such entry (cannot happen while the invariants hold; the future then arrives anew).
    Missing,
}

/// A FIFO queue of waiters: the invariants are listed in the module documentation.
pub(crate) struct WaitQueue<G> {
    entries: VecDeque<Entry<G>>,
    next_id: u64,
    /// How many entries are `Waiting`.
    waiting: usize,
    /// The loop whose tasks may wait here.
    binding: LoopBinding,
}

impl<G> WaitQueue<G> {
    pub(crate) fn new() -> Self {
        WaitQueue {
            entries: VecDeque::new(),
            next_id: 0,
            waiting: 0,
            binding: LoopBinding::default(),
        }
    }

    /// No entries at all, waiting or granted.
    pub(crate) fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Entries still waiting for a grant.
    pub(crate) fn waiting(&self) -> usize {
        self.waiting
    }

    /// Queues a new waiter at the back; returns its id.
    fn push(&mut self, waker: &Waker) -> u64 {
        let id = self.next_id;
        self.next_id += 1;
        self.entries.push_back(Entry {
            id,
            slot: Slot::Waiting(waker.clone()),
        });
        self.waiting += 1;
        id
    }

    fn position(&self, id: u64) -> Option<usize> {
        self.entries.binary_search_by_key(&id, |e| e.id).ok()
    }

    /// The owner's poll: takes its grant (removing the entry), or keeps its waker current.
    fn poll_entry(&mut self, id: u64, waker: &Waker) -> Polled<G> {
        let Some(i) = self.position(id) else {
            return Polled::Missing;
        };
        match &mut self.entries[i].slot {
            Slot::Waiting(w) => {
                if !w.will_wake(waker) {
                    *w = waker.clone();
                }
                Polled::Waiting
            }
            Slot::Granted(_) => match self.entries.remove(i) {
                Some(Entry {
                    slot: Slot::Granted(g), ..
                }) => Polled::Granted(g),
                _ => Polled::Missing,
            },
        }
    }

    /// The owner was dropped: removes its entry and returns what it held.
    fn remove(&mut self, id: u64) -> Option<Slot<G>> {
        let i = self.position(id)?;
        let entry = self.entries.remove(i)?;
        if matches!(entry.slot, Slot::Waiting(_)) {
            self.waiting -= 1;
        }
        Some(entry.slot)
    }

    /// Grants `Waiting` entries front to back, each the value `next` gives, until `next` gives
    /// none or nobody is left waiting; `next` is called only when there is a waiter to take the
    /// value. The granted entries' wakers go to `wakers`. Returns how many were granted.
    pub(crate) fn grant_while(&mut self, mut next: impl FnMut() -> Option<G>, wakers: &mut WakeList) -> usize {
        let mut granted = 0;
        for entry in self.entries.iter_mut() {
            if granted == self.waiting {
                break;
            }
            if !matches!(entry.slot, Slot::Waiting(_)) {
                continue;
            }
            let Some(value) = next() else { break };
            if let Slot::Waiting(w) = std::mem::replace(&mut entry.slot, Slot::Granted(value)) {
                wakers.push(w);
            }
            granted += 1;
        }
        self.waiting -= granted;
        granted
    }
}

/// The state of one primitive, as its waiting futures see it.
pub(crate) trait WaitState {
    /// What a waiter is handed: a permit, a notification, a barrier index.
    type Grant;

    fn queue(&mut self) -> &mut WaitQueue<Self::Grant>;

    /// A new arrival: its grant if it need not wait (this may grant others: a barrier trips).
    fn arrive(&mut self, wakers: &mut WakeList) -> Option<Self::Grant>;

    /// Called after the queue changed: a waiter was queued, took its grant, or was dropped
    /// (`abandoned` is then the grant it never took, to pass on).
    fn settle(&mut self, abandoned: Option<Self::Grant>, wakers: &mut WakeList);
}

/// The leaf future of every wait: it owns at most one queue entry and removes it when it
/// completes or is dropped (see "Cancellation safety" in the module documentation).
pub(crate) struct Waiter<'a, S: WaitState> {
    state: &'a RefCell<S>,
    /// For trace mode and the task dump.
    pub(crate) what: SyncOp,
    pub(crate) id: Option<u64>,
}

impl<'a, S: WaitState> Waiter<'a, S> {
    pub(crate) fn new(state: &'a RefCell<S>, what: SyncOp) -> Self {
        Waiter { state, what, id: None }
    }

    fn poll_state(&mut self, waker: &Waker, wakers: &mut WakeList) -> Poll<Result<S::Grant, WrongLoop>> {
        let mut st = self.state.borrow_mut();
        if let Some(id) = self.id {
            match st.queue().poll_entry(id, waker) {
                Polled::Granted(grant) => {
                    self.id = None;
                    st.settle(None, wakers);
                    return Poll::Ready(Ok(grant));
                }
                Polled::Waiting => return Poll::Pending,
                Polled::Missing => self.id = None,
            }
        }
        if let Some(grant) = st.arrive(wakers) {
            return Poll::Ready(Ok(grant));
        }
        // About to wait: only a task of the primitive's own loop may.
        st.queue().binding.bind()?;
        self.id = Some(st.queue().push(waker));
        st.settle(None, wakers);
        Poll::Pending
    }
}

impl<S: WaitState> Future for Waiter<'_, S> {
    type Output = Result<S::Grant, WrongLoop>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.get_mut();
        let mut wakers = WakeList::default();
        let out = this.poll_state(cx.waker(), &mut wakers);
        wakers.wake();
        if out.is_pending() {
            note_awaiting(Awaiting::Sync(this.what));
        }
        out
    }
}

impl<S: WaitState> Drop for Waiter<'_, S> {
    fn drop(&mut self) {
        let Some(id) = self.id.take() else { return };
        let mut wakers = WakeList::default();
        let mut st = self.state.borrow_mut();
        let stale = match st.queue().remove(id) {
            // Handed a grant it never saw: the primitive passes it on.
            Some(Slot::Granted(grant)) => {
                st.settle(Some(grant), &mut wakers);
                None
            }
            // Dropped while waiting: it only leaves the queue.
            Some(Slot::Waiting(waker)) => {
                st.settle(None, &mut wakers);
                Some(waker)
            }
            None => None,
        };
        // The state is released before any waker is dropped or woken.
        drop(st);
        drop(stale);
        wakers.wake();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sync::pool::Pool;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::task::Wake;

    struct Count(AtomicUsize);

    impl Wake for Count {
        fn wake(self: Arc<Self>) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }

    fn counting_waker() -> (Arc<Count>, Waker) {
        let c = Arc::new(Count(AtomicUsize::new(0)));
        (c.clone(), Waker::from(c))
    }

    /// Grants go to waiting entries front to back, skipping granted ones; ids find entries.
    #[test]
    fn queue_grants_in_fifo_order_and_skips_granted_entries() {
        let (count, w) = counting_waker();
        let mut q = WaitQueue::<u32>::new();
        let ids: Vec<u64> = (0..4).map(|_| q.push(&w)).collect();
        let mut wakers = WakeList::default();
        let mut n = 10;
        let granted = q.grant_while(
            || {
                n += 1;
                (n <= 11).then_some(n)
            },
            &mut wakers,
        );
        assert_eq!(granted, 1);
        assert_eq!(q.waiting(), 3);
        let mut next = 20;
        q.grant_while(
            || {
                next += 1;
                (next <= 22).then_some(next)
            },
            &mut wakers,
        );
        wakers.wake();
        assert_eq!(count.0.load(Ordering::SeqCst), 3);
        assert!(matches!(q.poll_entry(ids[0], &w), Polled::Granted(11)));
        assert!(matches!(q.poll_entry(ids[2], &w), Polled::Granted(22)));
        assert!(matches!(q.poll_entry(ids[1], &w), Polled::Granted(21)));
        assert!(matches!(q.poll_entry(ids[3], &w), Polled::Waiting));
        assert!(matches!(q.poll_entry(ids[0], &w), Polled::Missing));
        assert!(matches!(q.remove(ids[3]), Some(Slot::Waiting(_))));
        assert!(q.is_empty());
        assert_eq!(q.waiting(), 0);
    }

    /// A granted permit whose waiter is dropped goes to the next waiter.
    #[test]
    fn dropped_granted_waiter_passes_its_permit_on() {
        let (count, w) = counting_waker();
        let mut cx = Context::from_waker(&w);
        let pool = Pool::new(0);
        let mut a = pool.waiter(SyncOp::SemaphoreAcquire);
        let mut b = pool.waiter(SyncOp::SemaphoreAcquire);
        assert!(Pin::new(&mut a).poll(&mut cx).is_pending());
        assert!(Pin::new(&mut b).poll(&mut cx).is_pending());
        pool.put_back(1);
        assert_eq!(count.0.load(Ordering::SeqCst), 1);
        drop(a);
        assert_eq!(count.0.load(Ordering::SeqCst), 2);
        assert!(Pin::new(&mut b).poll(&mut cx).is_ready());
        assert_eq!(pool.available(), 0);
        drop(b);
        pool.put_back(1);
        assert_eq!(pool.available(), 1);
    }
}
