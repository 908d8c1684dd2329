//! The state one queue's handles and futures share: its items, counters and lines of waiters,
//! behind one `RefCell`; `mpsc` channels are built on it too.

use std::cell::RefCell;
use std::collections::VecDeque;
use std::rc::Rc;
use std::task::{Context, Waker};

use crate::event_loop::slab::Key;
use crate::sync::LoopBinding;
use crate::sync::queue::error::{TaskDoneError, TryGetError, TryPutError};
use crate::sync::queue::store::Store;
use crate::sync::queue::wait_list::WaitList;

/// A waiting getter's node.
pub(crate) enum GetSlot<T> {
    /// In line, with the waker of the task to wake.
    Waiting(Waker),
    /// Served: this item (with its sequence number) is promised to it.
    Handed(u64, T),
    /// Woken by a shutdown with nothing to give.
    ShutDown,
}

/// A waiting putter's node.
pub(crate) enum PutSlot {
    /// In line, with the waker of the task to wake.
    Waiting(Waker),
    /// Served: a slot is reserved for its item.
    Granted,
    /// Woken by a shutdown.
    ShutDown,
}

/// A `join` waiter's node.
pub(crate) enum JoinSlot {
    Waiting(Waker),
    Done,
}

/// Everything a queue is, behind one `RefCell`. Every method that changes it returns the wakers
/// to wake (and items to drop) instead of waking or dropping them itself, so the caller does
/// that after releasing the borrow: a waker or an item's destructor is foreign code that may
/// touch this queue again.
///
/// Invariants:
/// - getters wait only while `store` is empty (a put hands its item to the first waiting
///   getter instead of storing it);
/// - putters wait only while there is no free slot (a freed slot is granted to the first waiting
///   putter at once, and counts in `reserved` until that putter stores its item);
/// - `handed` is the number of items sitting in served getter nodes, `unfinished` the number of
///   items put and not yet marked done.
pub(crate) struct Core<T> {
    pub(crate) store: Store<T>,
    pub(crate) maxsize: usize,
    pub(crate) next_seq: u64,
    pub(crate) handed: usize,
    pub(crate) reserved: usize,
    pub(crate) unfinished: usize,
    pub(crate) shut_down: bool,
    pub(crate) getters: WaitList<GetSlot<T>>,
    pub(crate) putters: WaitList<PutSlot>,
    pub(crate) joiners: WaitList<JoinSlot>,
    /// The loop whose tasks may wait here (the first one that did; see `LoopBinding`).
    pub(crate) binding: LoopBinding,
}

/// Wakes whatever a queue operation left to wake, once the borrow is released.
pub(crate) fn wake_all(wakers: Vec<Waker>) {
    for w in wakers {
        w.wake();
    }
}

pub(crate) fn wake_opt(waker: Option<Waker>) {
    if let Some(w) = waker {
        w.wake();
    }
}

impl<T> Core<T> {
    pub(crate) fn new(store: Store<T>, maxsize: usize) -> Self {
        Core {
            store,
            maxsize,
            next_seq: 0,
            handed: 0,
            reserved: 0,
            unfinished: 0,
            shut_down: false,
            getters: WaitList::new(),
            putters: WaitList::new(),
            joiners: WaitList::new(),
            binding: LoopBinding::default(),
        }
    }

    pub(crate) fn fifo(maxsize: usize) -> Self {
        Core::new(Store::Fifo(VecDeque::new()), maxsize)
    }

    pub(crate) fn qsize(&self) -> usize {
        self.store.len() + self.handed
    }

    pub(crate) fn has_room(&self) -> bool {
        self.maxsize == 0 || self.qsize() + self.reserved < self.maxsize
    }

    pub(crate) fn is_shut_down(&self) -> bool {
        self.shut_down
    }

    /// Adds an item (room was checked): hands it to the first waiting getter or stores it.
    pub(crate) fn insert(&mut self, item: T) -> Option<Waker> {
        let seq = self.next_seq;
        self.next_seq += 1;
        self.unfinished += 1;
        self.hand_or_store(seq, item, false)
    }

    /// Gives `item` to the first waiting getter, or stores it (`back`: where it came from).
    pub(crate) fn hand_or_store(&mut self, seq: u64, item: T, back: bool) -> Option<Waker> {
        if let Some(key) = self.getters.pop_front() {
            if let Some(slot) = self.getters.state_mut(key) {
                let old = std::mem::replace(slot, GetSlot::Handed(seq, item));
                self.handed += 1;
                return match old {
                    GetSlot::Waiting(w) => Some(w),
                    _ => None,
                };
            }
            // Unreachable: a linked key always has a node.
            return None;
        }
        if back {
            self.store.give_back(seq, item);
        } else {
            self.store.push(seq, item);
        }
        None
    }

    /// A slot was freed: grant it to the first waiting putter, if any.
    pub(crate) fn release_slot(&mut self) -> Option<Waker> {
        if self.putters.waiting() == 0 || !self.has_room() {
            return None;
        }
        let key = self.putters.pop_front()?;
        let slot = self.putters.state_mut(key)?;
        self.reserved += 1;
        match std::mem::replace(slot, PutSlot::Granted) {
            PutSlot::Waiting(w) => Some(w),
            _ => None,
        }
    }

    pub(crate) fn try_put(&mut self, item: T) -> Result<Option<Waker>, TryPutError<T>> {
        if self.shut_down {
            return Err(TryPutError::ShutDown(item));
        }
        if !self.has_room() {
            return Err(TryPutError::Full(item));
        }
        Ok(self.insert(item))
    }

    pub(crate) fn try_get(&mut self) -> Result<(T, Option<Waker>), TryGetError> {
        match self.store.pop() {
            Some((_, item)) => Ok((item, self.release_slot())),
            None if self.shut_down => Err(TryGetError::ShutDown),
            None => Err(TryGetError::Empty),
        }
    }

    /// Marks every join waiter done; returns their wakers.
    pub(crate) fn finish_joiners(&mut self, wakers: &mut Vec<Waker>) {
        for key in self.joiners.unlink_all() {
            if let Some(slot) = self.joiners.state_mut(key) {
                if let JoinSlot::Waiting(w) = std::mem::replace(slot, JoinSlot::Done) {
                    wakers.push(w);
                }
            }
        }
    }

    pub(crate) fn task_done(&mut self) -> Result<Vec<Waker>, TaskDoneError> {
        if self.unfinished == 0 {
            return Err(TaskDoneError);
        }
        self.unfinished -= 1;
        let mut wakers = Vec::new();
        if self.unfinished == 0 {
            self.finish_joiners(&mut wakers);
        }
        Ok(wakers)
    }

    /// Shuts the queue down; returns the wakers to wake and the discarded items to drop.
    pub(crate) fn shutdown(&mut self, immediate: bool) -> (Vec<Waker>, Vec<T>) {
        self.shut_down = true;
        let mut wakers = Vec::new();
        let mut discarded = Vec::new();
        if immediate {
            discarded = self.store.drain();
        }
        for key in self.getters.unlink_all() {
            let Some(slot) = self.getters.state_mut(key) else {
                continue;
            };
            match slot {
                GetSlot::Handed(..) if !immediate => {}
                _ => match std::mem::replace(slot, GetSlot::ShutDown) {
                    GetSlot::Waiting(w) => wakers.push(w),
                    GetSlot::Handed(_, item) => {
                        // Its task was woken when the item was handed over; it will find ShutDown.
                        self.handed -= 1;
                        discarded.push(item);
                    }
                    GetSlot::ShutDown => {}
                },
            }
        }
        for key in self.putters.unlink_all() {
            let Some(slot) = self.putters.state_mut(key) else {
                continue;
            };
            match std::mem::replace(slot, PutSlot::ShutDown) {
                PutSlot::Waiting(w) => wakers.push(w),
                // Already woken; it will find ShutDown and keep its item.
                PutSlot::Granted => self.reserved -= 1,
                PutSlot::ShutDown => {}
            }
        }
        if immediate {
            self.unfinished -= discarded.len().min(self.unfinished);
            if self.unfinished == 0 {
                self.finish_joiners(&mut wakers);
            }
        }
        (wakers, discarded)
    }

    pub(crate) fn register_getter(&mut self, waker: &Waker) -> Key {
        self.getters.push_back(GetSlot::Waiting(waker.clone()))
    }

    pub(crate) fn register_putter(&mut self, waker: &Waker) -> Key {
        self.putters.push_back(PutSlot::Waiting(waker.clone()))
    }
}

/// Replaces a stored waker if the task polling now is a different one; returns the old waker so
/// it is dropped after the borrow.
pub(crate) fn refresh(slot: &mut Waker, cx: &Context<'_>) -> Option<Waker> {
    if slot.will_wake(cx.waker()) {
        None
    } else {
        Some(std::mem::replace(slot, cx.waker().clone()))
    }
}

pub(crate) type SharedCore<T> = Rc<RefCell<Core<T>>>;
