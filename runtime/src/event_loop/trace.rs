//! Trace mode: a line for every loop phase, handle run, task step, wake and promise completion.
//!
//! Trace mode is the runtime narrating itself, in the spirit of an asyncio run annotated step by
//! step by hand (`[Task-1.__step()] start`, `_run_once`, ...). It is switched on by
//! `EVLOOP_TRACE=1` or [`Builder::trace`](crate::Builder::trace), and costs one branch per event
//! when it is off: every call site passes a closure that formats the line only when a tracer
//! exists.
//!
//! The module also keeps the "what is this task waiting on" note. Leaf futures (a promise, a
//! sleep, a task handle) call [`note_awaiting`] when they return `Pending`; the task step reads
//! it right after the poll and stores it with the task, which is how trace mode can print
//! `Task-1 step -> pending on Promise#2` and how the task dump knows what each task awaits.

use std::cell::{Cell, RefCell};
use std::fmt;
use std::time::Duration;

/// A destination for trace lines.
pub(crate) type TraceSink = Box<dyn FnMut(&str)>;

/// Where trace lines go: stderr unless the builder installed a sink.
pub(crate) struct Tracer {
    sink: RefCell<Option<TraceSink>>,
}

impl Tracer {
    pub(crate) fn new(sink: Option<TraceSink>) -> Self {
        Tracer {
            sink: RefCell::new(sink),
        }
    }

    /// Emits one line. A sink that re-enters tracing (it should not) gets its line on stderr
    /// instead of a `RefCell` panic.
    pub(crate) fn line(&self, line: &str) {
        match self.sink.try_borrow_mut() {
            Ok(mut sink) => match sink.as_mut() {
                Some(f) => f(line),
                None => eprintln!("{line}"),
            },
            Err(_) => eprintln!("{line}"),
        }
    }
}

/// What a pending task is waiting on, as noted by the future that returned `Pending`.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum Awaiting {
    /// Nothing was noted (a future from another library, or the task has not run yet).
    #[default]
    Unknown,
    /// A [`Promise`](crate::Promise), by its id (`Promise#N`).
    Promise(u64),
    /// Another task's handle, by that task's number (`Task-N`).
    Task(u64),
    /// A timer: `sleep`, `sleep_until` or a `timeout`, by its deadline in loop time.
    Sleep(Duration),
    /// `yield_now()`: it asked to run again in the next iteration.
    Yield,
    /// Readiness of a file descriptor.
    Fd(i32),
    /// A job in the executor's thread pool.
    Executor,
    /// A Unix signal (`signal::recv`), by number.
    Signal(i32),
    /// An item or a free slot of a [`Queue`](crate::Queue) or a channel
    /// ([`channel`](crate::channel)), or `Queue::join`: which operation.
    Queue(QueueOp),
    /// A synchronisation primitive of [`sync`](crate::sync): which operation.
    Sync(SyncOp),
}

impl fmt::Display for Awaiting {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Awaiting::Unknown => f.write_str("something"),
            Awaiting::Promise(id) => write!(f, "Promise#{id}"),
            Awaiting::Task(n) => write!(f, "Task #{n}"),
            Awaiting::Sleep(at) => write!(f, "a timer at t={}", fmt_duration(*at)),
            Awaiting::Yield => f.write_str("yield (runs again next iteration)"),
            Awaiting::Fd(fd) => write!(f, "fd {fd}"),
            Awaiting::Executor => f.write_str("an executor job"),
            Awaiting::Signal(n) => write!(f, "signal {n}"),
            Awaiting::Sync(op) => fmt::Display::fmt(op, f),
            Awaiting::Queue(op) => fmt::Display::fmt(op, f),
        }
    }
}

/// The queue or channel operation a task waits in ([`Awaiting::Queue`]).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum QueueOp {
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

impl fmt::Display for QueueOp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            QueueOp::QueueGet => "Queue::get",
            QueueOp::QueuePut => "Queue::put",
            QueueOp::QueueJoin => "Queue::join",
            QueueOp::OneshotRecv => "oneshot::Receiver",
            QueueOp::MpscSend => "mpsc::Sender::send",
            QueueOp::MpscRecv => "mpsc::Receiver::recv",
            QueueOp::ThreadsafeRecv => "threadsafe::Receiver::recv",
        })
    }
}

/// The synchronisation operation a task waits in ([`Awaiting::Sync`]).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum SyncOp {
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

impl fmt::Display for SyncOp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            SyncOp::LockAcquire => "Lock.acquire()",
            SyncOp::MutexLock => "Mutex.lock()",
            SyncOp::SemaphoreAcquire => "Semaphore.acquire()",
            SyncOp::BoundedSemaphoreAcquire => "BoundedSemaphore.acquire()",
            SyncOp::EventWait => "Event.wait()",
            SyncOp::ConditionWait => "Condition.wait()",
            SyncOp::ConditionReacquire => "Condition.wait(): re-acquiring the lock",
            SyncOp::BarrierWait => "Barrier.wait()",
        })
    }
}

const QUEUE_OPS: [QueueOp; 7] = [
    QueueOp::QueueGet,
    QueueOp::QueuePut,
    QueueOp::QueueJoin,
    QueueOp::OneshotRecv,
    QueueOp::MpscSend,
    QueueOp::MpscRecv,
    QueueOp::ThreadsafeRecv,
];

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

/// Payloads that do not fit the packed form's 60 bits are clamped to this.
const PAYLOAD_MAX: u64 = (1 << 60) - 1;

impl Awaiting {
    /// Packs the note into 8 bytes for the task's header: a 4-bit tag and a 60-bit payload
    /// (ids and numbers beyond 2^60, and deadlines beyond 36 years of loop time, are clamped).
    pub(crate) fn pack(self) -> u64 {
        let (tag, payload): (u64, u64) = match self {
            Awaiting::Unknown => (0, 0),
            Awaiting::Promise(id) => (1, id.min(PAYLOAD_MAX)),
            Awaiting::Task(n) => (2, n.min(PAYLOAD_MAX)),
            Awaiting::Sleep(at) => (3, u64::try_from(at.as_nanos()).unwrap_or(u64::MAX).min(PAYLOAD_MAX)),
            Awaiting::Yield => (4, 0),
            Awaiting::Fd(fd) => (5, fd as u32 as u64),
            Awaiting::Executor => (6, 0),
            Awaiting::Signal(n) => (7, n as u32 as u64),
            Awaiting::Queue(op) => (8, QUEUE_OPS.iter().position(|o| *o == op).unwrap_or(0) as u64),
            Awaiting::Sync(op) => (9, SYNC_OPS.iter().position(|o| *o == op).unwrap_or(0) as u64),
        };
        (payload << 4) | tag
    }

    /// The note packed by [`Awaiting::pack`].
    pub(crate) fn unpack(packed: u64) -> Awaiting {
        let payload = packed >> 4;
        match packed & 0xf {
            1 => Awaiting::Promise(payload),
            2 => Awaiting::Task(payload),
            3 => Awaiting::Sleep(Duration::from_nanos(payload)),
            4 => Awaiting::Yield,
            5 => Awaiting::Fd(payload as u32 as i32),
            6 => Awaiting::Executor,
            7 => Awaiting::Signal(payload as u32 as i32),
            8 => QUEUE_OPS
                .get(payload as usize)
                .map_or(Awaiting::Unknown, |op| Awaiting::Queue(*op)),
            9 => SYNC_OPS
                .get(payload as usize)
                .map_or(Awaiting::Unknown, |op| Awaiting::Sync(*op)),
            _ => Awaiting::Unknown,
        }
    }
}

thread_local! {
    static AWAITING: Cell<Awaiting> = const { Cell::new(Awaiting::Unknown) };
    /// The awaited task's name, noted only in trace mode (names are not `Copy`).
    static AWAITING_LABEL: RefCell<Option<String>> = const { RefCell::new(None) };
}

/// Called by a leaf future that is about to return `Pending`.
pub(crate) fn note_awaiting(what: Awaiting) {
    AWAITING.with(|a| a.set(what));
}

/// Reads and clears the note; the task step calls it after each poll.
pub(crate) fn take_awaiting() -> Awaiting {
    AWAITING.with(|a| a.replace(Awaiting::Unknown))
}

/// Trace mode: the name of the task being awaited, to print instead of its number.
pub(crate) fn note_awaiting_label(label: String) {
    AWAITING_LABEL.with(|l| *l.borrow_mut() = Some(label));
}

/// Reads and clears the awaited task's name.
pub(crate) fn take_awaiting_label() -> Option<String> {
    AWAITING_LABEL.with(|l| l.borrow_mut().take())
}

/// `1.5ms`, `250us`, `3.000s`: short, fixed-precision, for trace lines.
pub(crate) fn fmt_duration(d: Duration) -> String {
    let ns = d.as_nanos();
    if ns >= 1_000_000_000 {
        format!("{:.3}s", d.as_secs_f64())
    } else if ns >= 1_000_000 {
        format!("{:.3}ms", ns as f64 / 1e6)
    } else if ns >= 1_000 {
        format!("{:.1}us", ns as f64 / 1e3)
    } else {
        format!("{ns}ns")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_format_with_units() {
        assert_eq!(fmt_duration(Duration::from_nanos(999)), "999ns");
        assert_eq!(fmt_duration(Duration::from_micros(250)), "250.0us");
        assert_eq!(fmt_duration(Duration::from_micros(1500)), "1.500ms");
        assert_eq!(fmt_duration(Duration::from_secs(3)), "3.000s");
    }

    #[test]
    fn awaiting_packs_into_eight_bytes_and_back() {
        let all = [
            Awaiting::Unknown,
            Awaiting::Promise(7),
            Awaiting::Task(u64::from(u32::MAX) + 5),
            Awaiting::Sleep(Duration::from_nanos(123_456_789_012)),
            Awaiting::Yield,
            Awaiting::Fd(-1),
            Awaiting::Fd(1023),
            Awaiting::Executor,
            Awaiting::Signal(15),
            Awaiting::Queue(QueueOp::ThreadsafeRecv),
            Awaiting::Queue(QueueOp::QueueGet),
            Awaiting::Sync(SyncOp::BarrierWait),
            Awaiting::Sync(SyncOp::LockAcquire),
        ];
        for a in all {
            assert_eq!(Awaiting::unpack(a.pack()), a);
        }
        assert_eq!(
            Awaiting::unpack(Awaiting::Promise(u64::MAX).pack()),
            Awaiting::Promise(PAYLOAD_MAX)
        );
        assert_eq!(Awaiting::unpack(0xf), Awaiting::Unknown);
    }

    #[test]
    fn awaiting_note_is_taken_once() {
        note_awaiting(Awaiting::Promise(2));
        assert_eq!(take_awaiting(), Awaiting::Promise(2));
        assert_eq!(take_awaiting(), Awaiting::Unknown);
    }
}
