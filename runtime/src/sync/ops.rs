//! The sync layer's words for a wait: [`WaitOp`], which operation of a primitive, a queue or a
//! channel a task waits in.
//!
//! A waiting future passes its operation to the wait queue, which notes it as what the task
//! awaits when the wait stays pending (an [`Awaiting::Object`] of the kind declared here, so the
//! task dump and trace lines print `Lock.acquire()` or `Queue::get`) and names it in the
//! [`WrongLoopError`](crate::event_loop::error::WrongLoopError) of a wait from another loop.
//! None of it is public: users see the printed names.

use crate::event_loop::trace::{AwaitKind, Awaiting};

/// The operation a task waits in.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum WaitOp {
    /// `Lock::acquire` (also `Condition::acquire`).
    LockAcquire,
    /// `Mutex::lock`.
    MutexLock,
    /// `Semaphore::acquire`.
    SemaphoreAcquire,
    /// `BoundedSemaphore::acquire`.
    BoundedSemaphoreAcquire,
    /// `Event::wait`.
    EventWait,
    /// `Condition::wait`, waiting for a notification.
    ConditionWait,
    /// `Condition::wait`, notified and re-acquiring the lock.
    ConditionReacquire,
    /// `Barrier::wait`.
    BarrierWait,
    /// `Queue::get`: an item.
    QueueGet,
    /// `Queue::put`: a free slot.
    QueuePut,
    /// `Queue::join`: every item marked done.
    QueueJoin,
    /// A `oneshot::Receiver`: the value.
    OneshotRecv,
    /// `mpsc::Sender::send`: a free slot.
    MpscSend,
    /// `mpsc::Receiver::recv`: a value.
    MpscRecv,
    /// `threadsafe::Receiver::recv`: a value from another thread.
    ThreadsafeRecv,
    /// `Notify::notified`: a notification.
    Notified,
    /// `broadcast::Receiver::recv`: a value.
    BroadcastRecv,
    /// `watch::Receiver::changed`: a new value.
    WatchChanged,
    /// `watch::Sender::closed`: every receiver gone.
    WatchClosed,
    /// `RwLock::read`: a share of the lock.
    RwLockRead,
    /// `RwLock::write`: the whole lock.
    RwLockWrite,
}

/// Every [`WaitOp`], in the order of their ids in [`Awaiting::Object`].
const ALL: [WaitOp; 21] = [
    WaitOp::LockAcquire,
    WaitOp::MutexLock,
    WaitOp::SemaphoreAcquire,
    WaitOp::BoundedSemaphoreAcquire,
    WaitOp::EventWait,
    WaitOp::ConditionWait,
    WaitOp::ConditionReacquire,
    WaitOp::BarrierWait,
    WaitOp::QueueGet,
    WaitOp::QueuePut,
    WaitOp::QueueJoin,
    WaitOp::OneshotRecv,
    WaitOp::MpscSend,
    WaitOp::MpscRecv,
    WaitOp::ThreadsafeRecv,
    WaitOp::Notified,
    WaitOp::BroadcastRecv,
    WaitOp::WatchChanged,
    WaitOp::WatchClosed,
    WaitOp::RwLockRead,
    WaitOp::RwLockWrite,
];

/// A task waiting in one of the sync layer's operations; the id is the operation's place in
/// `ALL`.
static WAITING: AwaitKind = AwaitKind::new("sync", |id, f| match ALL.get(id as usize) {
    Some(op) => f.write_str(op.name()),
    None => write!(f, "a sync operation (#{id})"),
});

impl WaitOp {
    /// How the task dump and trace lines show a task waiting here.
    #[inline]
    pub(crate) fn awaiting(self) -> Awaiting {
        Awaiting::Object(&WAITING, self as u64)
    }

    /// The operation, e.g. `Lock.acquire()`: the wrong-loop error's operation.
    pub(crate) fn name(self) -> &'static str {
        match self {
            WaitOp::LockAcquire => "Lock.acquire()",
            WaitOp::MutexLock => "Mutex.lock()",
            WaitOp::SemaphoreAcquire => "Semaphore.acquire()",
            WaitOp::BoundedSemaphoreAcquire => "BoundedSemaphore.acquire()",
            WaitOp::EventWait => "Event.wait()",
            WaitOp::ConditionWait => "Condition.wait()",
            WaitOp::ConditionReacquire => "Condition.wait(): re-acquiring the lock",
            WaitOp::BarrierWait => "Barrier.wait()",
            WaitOp::QueueGet => "Queue::get",
            WaitOp::QueuePut => "Queue::put",
            WaitOp::QueueJoin => "Queue::join",
            WaitOp::OneshotRecv => "oneshot::Receiver",
            WaitOp::MpscSend => "mpsc::Sender::send",
            WaitOp::MpscRecv => "mpsc::Receiver::recv",
            WaitOp::ThreadsafeRecv => "threadsafe::Receiver::recv",
            WaitOp::Notified => "Notify::notified",
            WaitOp::BroadcastRecv => "broadcast::Receiver::recv",
            WaitOp::WatchChanged => "watch::Receiver::changed",
            WaitOp::WatchClosed => "watch::Sender::closed",
            WaitOp::RwLockRead => "RwLock.read()",
            WaitOp::RwLockWrite => "RwLock.write()",
        }
    }

    /// What the task waits on, e.g. `the Lock`: the wrong-loop error's object.
    pub(crate) fn object(self) -> &'static str {
        match self {
            WaitOp::LockAcquire => "the Lock",
            WaitOp::MutexLock => "the Mutex",
            WaitOp::SemaphoreAcquire => "the Semaphore",
            WaitOp::BoundedSemaphoreAcquire => "the BoundedSemaphore",
            WaitOp::EventWait => "the Event",
            WaitOp::ConditionWait | WaitOp::ConditionReacquire => "the Condition",
            WaitOp::BarrierWait => "the Barrier",
            WaitOp::QueueGet | WaitOp::QueuePut | WaitOp::QueueJoin => "the Queue",
            WaitOp::OneshotRecv => "the oneshot channel",
            WaitOp::MpscSend | WaitOp::MpscRecv => "the mpsc channel",
            WaitOp::ThreadsafeRecv => "the threadsafe channel",
            WaitOp::Notified => "the Notify",
            WaitOp::BroadcastRecv => "the broadcast channel",
            WaitOp::WatchChanged | WaitOp::WatchClosed => "the watch channel",
            WaitOp::RwLockRead | WaitOp::RwLockWrite => "the RwLock",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_operation_prints_its_name_as_what_a_task_awaits() {
        for op in ALL {
            assert_eq!(op.awaiting().to_string(), op.name());
            assert_eq!(Awaiting::unpack(op.awaiting().pack()), op.awaiting());
        }
        assert_eq!(
            WaitOp::ConditionReacquire.awaiting().to_string(),
            "Condition.wait(): re-acquiring the lock"
        );
        assert_eq!(WaitOp::MpscSend.awaiting().to_string(), "mpsc::Sender::send");
    }
}
