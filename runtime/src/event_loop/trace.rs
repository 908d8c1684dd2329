//! Trace mode: a line for every loop phase, handle run, task step, wake and promise completion.
//!
//! Trace mode is the runtime narrating itself, in the spirit of the traced asyncio runs in the
//! source notes (`[Task-1.__step()] start`, `_run_once`, ...). It is switched on by
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

/// The queue or channel operation a task waits in ([`Awaiting::Queue`]). One byte, so that
/// [`Awaiting`] (stored in every task) stays two words.
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

/// The synchronisation operation a task waits in ([`Awaiting::Sync`]). One byte, so that
/// [`Awaiting`] (stored in every task) stays two words.
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
    fn awaiting_note_is_taken_once() {
        note_awaiting(Awaiting::Promise(2));
        assert_eq!(take_awaiting(), Awaiting::Promise(2));
        assert_eq!(take_awaiting(), Awaiting::Unknown);
    }
}
