//! The sync layer's words for a wait: which operation of a primitive ([`SyncOp`]) or of a queue
//! or channel ([`QueueOp`]) a task waits in.
//!
//! A waiting future passes its operation to the wait queue ([`WaitOp`]), which notes it as what
//! the task awaits when the wait stays pending (an [`Awaiting::Object`] of one of the two kinds
//! declared here, so the task dump and trace lines print `Lock.acquire()` or `Queue::get`) and
//! names it in the [`WrongLoopError`](crate::event_loop::error::WrongLoopError) of a wait from
//! another loop. None of it is public: users see the printed names.

use crate::event_loop::trace::{AwaitKind, Awaiting};

/// An operation a task can wait in: what the wait queue needs to know about it.
pub(crate) trait WaitOp: Copy {
    /// How the task dump and trace lines show a task waiting here.
    fn awaiting(self) -> Awaiting;
    /// The operation, e.g. `Lock.acquire()`: the wrong-loop error's operation.
    fn name(self) -> &'static str;
    /// What the task waits on, e.g. `the Lock`: the wrong-loop error's object.
    fn object(self) -> &'static str;
}

/// The synchronisation operation a task waits in.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum SyncOp {
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
}

/// Every [`SyncOp`], in the order of their ids in [`Awaiting::Object`].
const SYNC_OPS: [SyncOp; 8] = [
    SyncOp::LockAcquire,
    SyncOp::MutexLock,
    SyncOp::SemaphoreAcquire,
    SyncOp::BoundedSemaphoreAcquire,
    SyncOp::EventWait,
    SyncOp::ConditionWait,
    SyncOp::ConditionReacquire,
    SyncOp::BarrierWait,
];

/// A task waiting in a primitive's operation; the id is the operation's place in `SYNC_OPS`.
static SYNC_WAIT: AwaitKind = AwaitKind::new("sync", |id, f| match SYNC_OPS.get(id as usize) {
    Some(op) => f.write_str(op.name()),
    None => write!(f, "a sync operation (#{id})"),
});

impl WaitOp for SyncOp {
    #[inline]
    fn awaiting(self) -> Awaiting {
        Awaiting::Object(&SYNC_WAIT, self as u64)
    }

    fn name(self) -> &'static str {
        match self {
            SyncOp::LockAcquire => "Lock.acquire()",
            SyncOp::MutexLock => "Mutex.lock()",
            SyncOp::SemaphoreAcquire => "Semaphore.acquire()",
            SyncOp::BoundedSemaphoreAcquire => "BoundedSemaphore.acquire()",
            SyncOp::EventWait => "Event.wait()",
            SyncOp::ConditionWait => "Condition.wait()",
            SyncOp::ConditionReacquire => "Condition.wait(): re-acquiring the lock",
            SyncOp::BarrierWait => "Barrier.wait()",
        }
    }

    fn object(self) -> &'static str {
        match self {
            SyncOp::LockAcquire => "the Lock",
            SyncOp::MutexLock => "the Mutex",
            SyncOp::SemaphoreAcquire => "the Semaphore",
            SyncOp::BoundedSemaphoreAcquire => "the BoundedSemaphore",
            SyncOp::EventWait => "the Event",
            SyncOp::ConditionWait | SyncOp::ConditionReacquire => "the Condition",
            SyncOp::BarrierWait => "the Barrier",
        }
    }
}

/// The queue or channel operation a task waits in.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum QueueOp {
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
}

/// Every [`QueueOp`], in the order of their ids in [`Awaiting::Object`].
const QUEUE_OPS: [QueueOp; 7] = [
    QueueOp::QueueGet,
    QueueOp::QueuePut,
    QueueOp::QueueJoin,
    QueueOp::OneshotRecv,
    QueueOp::MpscSend,
    QueueOp::MpscRecv,
    QueueOp::ThreadsafeRecv,
];

/// A task waiting in a queue's or a channel's operation; the id is its place in `QUEUE_OPS`.
static QUEUE_WAIT: AwaitKind = AwaitKind::new("queue", |id, f| match QUEUE_OPS.get(id as usize) {
    Some(op) => f.write_str(op.name()),
    None => write!(f, "a queue operation (#{id})"),
});

impl WaitOp for QueueOp {
    #[inline]
    fn awaiting(self) -> Awaiting {
        Awaiting::Object(&QUEUE_WAIT, self as u64)
    }

    fn name(self) -> &'static str {
        match self {
            QueueOp::QueueGet => "Queue::get",
            QueueOp::QueuePut => "Queue::put",
            QueueOp::QueueJoin => "Queue::join",
            QueueOp::OneshotRecv => "oneshot::Receiver",
            QueueOp::MpscSend => "mpsc::Sender::send",
            QueueOp::MpscRecv => "mpsc::Receiver::recv",
            QueueOp::ThreadsafeRecv => "threadsafe::Receiver::recv",
        }
    }

    fn object(self) -> &'static str {
        match self {
            QueueOp::QueueGet | QueueOp::QueuePut | QueueOp::QueueJoin => "the Queue",
            QueueOp::OneshotRecv => "the oneshot channel",
            QueueOp::MpscSend | QueueOp::MpscRecv => "the mpsc channel",
            QueueOp::ThreadsafeRecv => "the threadsafe channel",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_operation_prints_its_name_as_what_a_task_awaits() {
        for op in SYNC_OPS {
            assert_eq!(op.awaiting().to_string(), op.name());
            assert_eq!(Awaiting::unpack(op.awaiting().pack()), op.awaiting());
        }
        for op in QUEUE_OPS {
            assert_eq!(op.awaiting().to_string(), op.name());
            assert_eq!(Awaiting::unpack(op.awaiting().pack()), op.awaiting());
        }
        assert_eq!(
            SyncOp::ConditionReacquire.awaiting().to_string(),
            "Condition.wait(): re-acquiring the lock"
        );
        assert_eq!(QueueOp::MpscSend.awaiting().to_string(), "mpsc::Sender::send");
    }
}
