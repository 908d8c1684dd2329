//! The state one queue's handles and futures share, behind one `RefCell` (`mpsc` channels are
//! built on it too): its items, its counters, and its three lines of waiters in the sync
//! layer's wait queue. The [`Line`] impls at the end are the queue's rules for that queue:
//! when a get, a put or a join ends at once, what a served waiter takes, and where a grant goes
//! when its waiter is dropped (see "Cancellation safety" in `sync/wait_queue.rs`).

use std::cell::RefCell;
use std::collections::VecDeque;
use std::rc::Rc;

use crate::sync::binding::LoopBinding;
use crate::sync::queue::error::{QueueShutDown, TaskDoneError, TryGetError, TryPutError};
use crate::sync::queue::store::Store;
use crate::sync::wait_queue::{Line, WaitQueue, WakeList};

/// What a served getter is handed.
pub(crate) enum Handed<T> {
    /// This item, with its sequence number (to put it back in its place if the getter is gone).
    Item(u64, T),
    /// Woken by a shutdown with nothing to give.
    ShutDown,
}

/// What a served putter is granted.
pub(crate) enum Room {
    /// A slot, reserved for its item.
    Reserved,
    /// Woken by a shutdown: the item is not put.
    ShutDown,
}

/// Everything a queue is, behind one `RefCell`. A method that changes it pushes the wakers to
/// wake to a [`WakeList`] (and returns the items to drop) instead of waking or dropping them
/// itself, so the caller does that after releasing the borrow: a waker or an item's destructor
/// is foreign code that may touch this queue again.
///
/// Invariants:
/// - getters wait only while `store` is empty (a put hands its item to the first waiting
///   getter instead of storing it);
/// - putters wait only while there is no free slot (a freed slot is granted to the first waiting
///   putter at once, and counts in `reserved` until that putter stores its item);
/// - `handed` is the number of items granted to getters that have not taken them yet,
///   `unfinished` the number of items put and not yet marked done.
pub(crate) struct Core<T> {
    pub(crate) store: Store<T>,
    pub(crate) maxsize: usize,
    next_seq: u64,
    handed: usize,
    reserved: usize,
    pub(crate) unfinished: usize,
    pub(crate) shut_down: bool,
    pub(crate) getters: WaitQueue<Handed<T>>,
    pub(crate) putters: WaitQueue<Room>,
    joiners: WaitQueue<()>,
    /// The loop whose tasks may wait here: one binding for the three lines.
    binding: LoopBinding,
}

pub(crate) type SharedCore<T> = Rc<RefCell<Core<T>>>;

/// Runs `op` on the queue, then wakes what it left to wake once the borrow is released.
#[inline]
pub(crate) fn with_core<T, R>(core: &RefCell<Core<T>>, op: impl FnOnce(&mut Core<T>, &mut WakeList) -> R) -> R {
    let mut wakers = WakeList::default();
    let out = op(&mut core.borrow_mut(), &mut wakers);
    wakers.wake();
    out
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
            getters: WaitQueue::new(),
            putters: WaitQueue::new(),
            joiners: WaitQueue::new(),
            binding: LoopBinding::default(),
        }
    }

    pub(crate) fn fifo(maxsize: usize) -> Self {
        Core::new(Store::Fifo(VecDeque::new()), maxsize)
    }

    #[inline]
    pub(crate) fn qsize(&self) -> usize {
        self.store.len() + self.handed
    }

    #[inline]
    pub(crate) fn has_room(&self) -> bool {
        self.maxsize == 0 || self.qsize() + self.reserved < self.maxsize
    }

    pub(crate) fn is_shut_down(&self) -> bool {
        self.shut_down
    }

    /// Adds an item (room was checked): hands it to the first waiting getter or stores it.
    #[inline]
    fn insert(&mut self, item: T, wakers: &mut WakeList) {
        let seq = self.next_seq;
        self.next_seq += 1;
        self.unfinished += 1;
        self.hand_or_store(seq, item, false, wakers);
    }

    /// Gives `item` to the first waiting getter, or stores it (`back`: where it came from).
    #[inline]
    fn hand_or_store(&mut self, seq: u64, item: T, back: bool, wakers: &mut WakeList) {
        match self.getters.grant_first(Handed::Item(seq, item), wakers) {
            Ok(()) => self.handed += 1,
            Err(Handed::Item(seq, item)) if back => self.store.give_back(seq, item),
            Err(Handed::Item(seq, item)) => self.store.push(seq, item),
            Err(Handed::ShutDown) => {}
        }
    }

    /// A slot was freed: grant it to the first waiting putter, if any.
    #[inline]
    fn release_slot(&mut self, wakers: &mut WakeList) {
        if self.putters.waiting() == 0 || !self.has_room() {
            return;
        }
        if self.putters.grant_first(Room::Reserved, wakers).is_ok() {
            self.reserved += 1;
        }
    }

    #[inline]
    pub(crate) fn try_put(&mut self, item: T, wakers: &mut WakeList) -> Result<(), TryPutError<T>> {
        if self.shut_down {
            return Err(TryPutError::ShutDown(item));
        }
        if !self.has_room() {
            return Err(TryPutError::Full(item));
        }
        self.insert(item, wakers);
        Ok(())
    }

    #[inline]
    pub(crate) fn try_get(&mut self, wakers: &mut WakeList) -> Result<T, TryGetError> {
        match self.store.pop() {
            Some((_, item)) => {
                self.release_slot(wakers);
                Ok(item)
            }
            None if self.shut_down => Err(TryGetError::ShutDown),
            None => Err(TryGetError::Empty),
        }
    }

    pub(crate) fn task_done(&mut self, wakers: &mut WakeList) -> Result<(), TaskDoneError> {
        if self.unfinished == 0 {
            return Err(TaskDoneError);
        }
        self.unfinished -= 1;
        if self.unfinished == 0 {
            self.joiners.grant_while(|| Some(()), wakers);
        }
        Ok(())
    }

    /// Shuts the queue down; returns the discarded items, for the caller to drop after the
    /// borrow.
    pub(crate) fn shutdown(&mut self, immediate: bool, wakers: &mut WakeList) -> Vec<T> {
        self.shut_down = true;
        let mut discarded = Vec::new();
        if immediate {
            discarded = self.store.drain();
            // Items granted to getters that have not run yet go too; their tasks were woken
            // when they were granted, and will find ShutDown.
            let handed = &mut self.handed;
            self.getters.for_each_grant(|grant| {
                if let Handed::Item(_, item) = std::mem::replace(grant, Handed::ShutDown) {
                    *handed -= 1;
                    discarded.push(item);
                }
            });
        }
        self.getters.grant_while(|| Some(Handed::ShutDown), wakers);
        // A putter granted a slot was woken already; it will find ShutDown and keep its item.
        let reserved = &mut self.reserved;
        self.putters.for_each_grant(|grant| {
            if let Room::Reserved = std::mem::replace(grant, Room::ShutDown) {
                *reserved -= 1;
            }
        });
        self.putters.grant_while(|| Some(Room::ShutDown), wakers);
        if immediate {
            self.unfinished -= discarded.len().min(self.unfinished);
            if self.unfinished == 0 {
                self.joiners.grant_while(|| Some(()), wakers);
            }
        }
        discarded
    }
}

// ---------------------------------------------------------------------------------------------
// The three lines.

/// Tasks waiting in `get` (and `mpsc::Receiver::recv`) for an item.
pub(crate) struct Getters<T>(std::marker::PhantomData<T>);

impl<T> Line for Getters<T> {
    type State = Core<T>;
    type Grant = Handed<T>;
    type Carry = ();
    type Output = Result<T, QueueShutDown>;

    fn queue(c: &mut Core<T>) -> &mut WaitQueue<Handed<T>> {
        &mut c.getters
    }

    fn binding(c: &Core<T>) -> &LoopBinding {
        &c.binding
    }

    #[inline]
    fn arrive(c: &mut Core<T>, _: &mut (), wakers: &mut WakeList) -> Option<Self::Output> {
        match c.try_get(wakers) {
            Ok(item) => Some(Ok(item)),
            Err(TryGetError::ShutDown) => Some(Err(QueueShutDown(()))),
            Err(TryGetError::Empty) => None,
        }
    }

    fn take(c: &mut Core<T>, grant: Handed<T>, _: &mut (), wakers: &mut WakeList) -> Self::Output {
        match grant {
            Handed::Item(_, item) => {
                c.handed -= 1;
                c.release_slot(wakers);
                Ok(item)
            }
            Handed::ShutDown => Err(QueueShutDown(())),
        }
    }

    fn pass_on(c: &mut Core<T>, grant: Handed<T>, wakers: &mut WakeList) {
        if let Handed::Item(seq, item) = grant {
            // The item was promised to a getter that is gone: to the next getter, or back into
            // the queue where its sequence number places it (the front, for FIFO).
            c.handed -= 1;
            c.hand_or_store(seq, item, true, wakers);
        }
    }
}

/// Tasks waiting in `put` (and `mpsc::Sender::send`) for a free slot; each carries its item.
pub(crate) struct Putters<T>(std::marker::PhantomData<T>);

impl<T> Line for Putters<T> {
    type State = Core<T>;
    type Grant = Room;
    /// The item; `None` once it was put (a poll after completion puts nothing).
    type Carry = Option<T>;
    type Output = Result<(), QueueShutDown<T>>;

    fn queue(c: &mut Core<T>) -> &mut WaitQueue<Room> {
        &mut c.putters
    }

    fn binding(c: &Core<T>) -> &LoopBinding {
        &c.binding
    }

    #[inline]
    fn arrive(c: &mut Core<T>, item: &mut Option<T>, wakers: &mut WakeList) -> Option<Self::Output> {
        let Some(it) = item.take() else {
            // Polled again after it completed: nothing left to put.
            return Some(Ok(()));
        };
        match c.try_put(it, wakers) {
            Ok(()) => Some(Ok(())),
            Err(TryPutError::ShutDown(it)) => Some(Err(QueueShutDown(it))),
            Err(TryPutError::Full(it)) => {
                *item = Some(it);
                None
            }
        }
    }

    fn take(c: &mut Core<T>, grant: Room, item: &mut Option<T>, wakers: &mut WakeList) -> Self::Output {
        let Some(it) = item.take() else {
            // Unreachable: a putter queues only with its item.
            Self::pass_on(c, grant, wakers);
            return Ok(());
        };
        match grant {
            Room::Reserved => {
                c.reserved -= 1;
                c.insert(it, wakers);
                Ok(())
            }
            Room::ShutDown => Err(QueueShutDown(it)),
        }
    }

    fn pass_on(c: &mut Core<T>, grant: Room, wakers: &mut WakeList) {
        if let Room::Reserved = grant {
            // The slot reserved for a putter that is gone goes to the next putter in line.
            c.reserved -= 1;
            c.release_slot(wakers);
        }
    }
}

/// Tasks waiting in `join` for every item put to be marked done.
pub(crate) struct Joiners<T>(std::marker::PhantomData<T>);

impl<T> Line for Joiners<T> {
    type State = Core<T>;
    type Grant = ();
    type Carry = ();
    type Output = ();

    fn queue(c: &mut Core<T>) -> &mut WaitQueue<()> {
        &mut c.joiners
    }

    fn binding(c: &Core<T>) -> &LoopBinding {
        &c.binding
    }

    fn arrive(c: &mut Core<T>, _: &mut (), _: &mut WakeList) -> Option<()> {
        (c.unfinished == 0).then_some(())
    }

    fn take(_: &mut Core<T>, (): (), _: &mut (), _: &mut WakeList) {}

    // The last task_done released every joiner at once: nobody to pass it to.
    fn pass_on(_: &mut Core<T>, (): (), _: &mut WakeList) {}
}
