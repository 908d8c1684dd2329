//! Trace mode: a line for every loop phase, handle run, task step, wake and promise completion.
//!
//! Trace mode is the runtime narrating itself, in the spirit of an asyncio run annotated step by
//! step by hand (`[Task-1.__step()] start`, `_run_once`, ...). It is switched on by
//! `EVLOOP_TRACE=1` or [`Builder::trace`](crate::event_loop::Builder::trace), and costs one branch per event
//! when it is off: every call site passes a closure that formats the line only when a tracer
//! exists.
//!
//! The module also keeps the "what is this task waiting on" note. Leaf futures (a promise, a
//! sleep, a task handle) call [`note_awaiting`] when they return `Pending`; the task step reads
//! it right after the poll and stores it with the task, which is how trace mode can print
//! `Task-1 step -> pending on Promise#2` and how the task dump knows what each task awaits.
//! The note is layer-neutral: besides the loop's own waits (a timer, `yield`, an fd, an executor
//! job) it holds an object of a higher layer as an [`AwaitKind`] that layer declares (the task
//! layer's promises and tasks, the sync layer's operations, the os layer's signals) and an id,
//! packed into the task header's 8 bytes through a process-wide table of kinds.

use std::cell::{Cell, RefCell};
use std::fmt;
use std::sync::OnceLock;
use std::sync::atomic::AtomicUsize;
use std::sync::atomic::Ordering::{AcqRel, Acquire, Relaxed};
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
///
/// The loop's own waits are variants of their own; what the layers above offer to wait on (a
/// promise, another task, a lock, a queue, a signal) is an [`Awaiting::Object`], named by the
/// layer that owns it. `Display` prints it as trace lines and the task dump show it.
///
/// ```
/// use std::time::Duration;
/// use evloop::event_loop::Awaiting;
///
/// evloop::run(async {
///     let lp = evloop::event_loop::get_running_loop()?;
///     let sleeper = evloop::spawn(evloop::time::sleep(Duration::from_secs(60)));
///     let p = lp.create_future::<()>();
///     let waiter = evloop::spawn(p.wait());
///     evloop::task::yield_now().await; // both run their first step
///     assert!(matches!(sleeper.awaiting(), Awaiting::Sleep(_))); // the loop's own timer
///     assert_eq!(waiter.awaiting().to_string(), format!("Promise#{}", p.id())); // a task layer object
///     Ok::<(), evloop::event_loop::LoopError>(())
/// })??;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Copy, Clone, Debug, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum Awaiting {
    /// Nothing was noted (a future from another library, or the task has not run yet).
    #[default]
    Unknown,
    /// A timer: `sleep`, `sleep_until` or a `timeout`, by its deadline in loop time.
    Sleep(Duration),
    /// `yield_now()`: it asked to run again in the next iteration.
    Yield,
    /// Readiness of a file descriptor.
    Fd(i32),
    /// A job in the executor's thread pool.
    Executor,
    /// An object of a layer above the loop: its kind (declared by that layer) and its id
    /// within the kind (a promise's id, a task's number, a signal's number, which operation of
    /// a lock or a queue).
    Object(&'static AwaitKind, u64),
}

impl fmt::Display for Awaiting {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Awaiting::Unknown => f.write_str("something"),
            Awaiting::Sleep(at) => write!(f, "a timer at t={}", fmt_duration(*at)),
            Awaiting::Yield => f.write_str("yield (runs again next iteration)"),
            Awaiting::Fd(fd) => write!(f, "fd {fd}"),
            Awaiting::Executor => f.write_str("an executor job"),
            Awaiting::Object(kind, id) => (kind.fmt_id)(*id, f),
        }
    }
}

impl Awaiting {
    /// The id, if this is an object of `kind`.
    #[inline]
    pub(crate) fn object_of(self, kind: &'static AwaitKind) -> Option<u64> {
        match self {
            Awaiting::Object(k, id) if k == kind => Some(id),
            _ => None,
        }
    }
}

/// The kind of object of a layer above the loop that a task can wait on ([`Awaiting::Object`]):
/// a promise, a task, a signal, a lock's or a queue's operation. The layer that owns the object
/// declares its kind once, as a `static` (two kinds are equal when they are the same `static`),
/// with a name and the way an id of that kind prints, so the loop prints what a task awaits
/// without knowing what a promise or a lock is.
///
/// ```
/// use evloop::event_loop::Awaiting;
///
/// evloop::run(async {
///     let p = evloop::event_loop::get_running_loop()?.create_future::<()>();
///     let waiter = evloop::spawn(p.wait());
///     evloop::task::yield_now().await;
///     match waiter.awaiting() {
///         Awaiting::Object(kind, id) => assert_eq!((kind.name(), id), ("Promise", p.id())),
///         other => unreachable!("{other:?}"),
///     }
///     Ok::<(), evloop::event_loop::LoopError>(())
/// })??;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct AwaitKind {
    name: &'static str,
    fmt_id: fn(u64, &mut fmt::Formatter<'_>) -> fmt::Result,
    /// The kind's index in `KINDS` plus one; 0 until a task first waits on an object of it.
    index: AtomicUsize,
}

impl AwaitKind {
    /// A kind named `name` whose ids print with `fmt_id`; declare it as a `static` (a `const`
    /// would be a new kind at every use).
    pub(crate) const fn new(name: &'static str, fmt_id: fn(u64, &mut fmt::Formatter<'_>) -> fmt::Result) -> AwaitKind {
        AwaitKind {
            name,
            fmt_id,
            index: AtomicUsize::new(0),
        }
    }

    /// The kind's name, e.g. `"Promise"` or `"Task"`.
    ///
    /// ```
    /// use evloop::event_loop::Awaiting;
    ///
    /// evloop::run(async {
    ///     let child = evloop::spawn(std::future::pending::<()>());
    ///     let parent = evloop::spawn(child); // awaits the child's handle
    ///     evloop::task::yield_now().await;
    ///     assert!(matches!(parent.awaiting(), Awaiting::Object(kind, _) if kind.name() == "Task"));
    /// })?;
    /// # Ok::<(), evloop::task::RunError>(())
    /// ```
    pub fn name(&self) -> &'static str {
        self.name
    }

    /// The kind's index in the process-wide table, interned on first use.
    #[inline]
    fn index(&'static self) -> usize {
        match self.index.load(Acquire) {
            0 => self.intern(),
            i => i - 1,
        }
    }

    /// The first wait on an object of this kind anywhere: takes the next index and records the
    /// kind there. Two threads racing here both take one, and the first to store its own wins;
    /// the other index is never packed. The table entry is written before the index is
    /// published (release), so whoever reads the index (acquire) finds the entry.
    #[cold]
    fn intern(&'static self) -> usize {
        let mine = NEXT_KIND.fetch_add(1, Relaxed);
        // Kinds are `static`s of this crate, so this fails (at the first use, every time) only
        // when a change declares more of them than the packed form has room for.
        assert!(
            mine < MAX_KINDS,
            "more than MAX_KINDS ({MAX_KINDS}) kinds of awaited objects"
        );
        let _ = KINDS[mine].set(self);
        match self.index.compare_exchange(0, mine + 1, AcqRel, Acquire) {
            Ok(_) => mine,
            Err(theirs) => theirs - 1,
        }
    }
}

impl PartialEq for AwaitKind {
    fn eq(&self, other: &AwaitKind) -> bool {
        std::ptr::eq(self, other)
    }
}

impl Eq for AwaitKind {}

impl fmt::Debug for AwaitKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name)
    }
}

/// Bits of the packed form's payload that hold an object's kind (the rest hold its id).
const KIND_BITS: u32 = 6;

/// How many kinds the process may declare.
const MAX_KINDS: usize = 1 << KIND_BITS;

/// Every kind a task has waited on, by index: how a packed note finds its kind again.
static KINDS: [OnceLock<&'static AwaitKind>; MAX_KINDS] = [const { OnceLock::new() }; MAX_KINDS];

/// The number of kind indices handed out so far.
static NEXT_KIND: AtomicUsize = AtomicUsize::new(0);

/// Payloads that do not fit the packed form's 60 bits are clamped to this.
const PAYLOAD_MAX: u64 = (1 << 60) - 1;

/// Object ids that do not fit beside the kind are clamped to this.
const OBJECT_ID_MAX: u64 = PAYLOAD_MAX >> KIND_BITS;

impl Awaiting {
    /// Packs the note into 8 bytes for the task's header: a 4-bit tag and a 60-bit payload. An
    /// object's payload is its kind's index (6 bits) and its id (54 bits); ids beyond 2^54, and
    /// deadlines beyond 36 years of loop time, are clamped.
    #[inline]
    pub(crate) fn pack(self) -> u64 {
        let (tag, payload): (u64, u64) = match self {
            Awaiting::Unknown => (0, 0),
            Awaiting::Sleep(at) => (1, u64::try_from(at.as_nanos()).unwrap_or(u64::MAX).min(PAYLOAD_MAX)),
            Awaiting::Yield => (2, 0),
            Awaiting::Fd(fd) => (3, fd as u32 as u64),
            Awaiting::Executor => (4, 0),
            Awaiting::Object(kind, id) => (5, (id.min(OBJECT_ID_MAX) << KIND_BITS) | kind.index() as u64),
        };
        (payload << 4) | tag
    }

    /// The note packed by [`Awaiting::pack`].
    pub(crate) fn unpack(packed: u64) -> Awaiting {
        let payload = packed >> 4;
        match packed & 0xf {
            1 => Awaiting::Sleep(Duration::from_nanos(payload)),
            2 => Awaiting::Yield,
            3 => Awaiting::Fd(payload as u32 as i32),
            4 => Awaiting::Executor,
            5 => match KINDS[(payload & (MAX_KINDS as u64 - 1)) as usize].get() {
                Some(kind) => Awaiting::Object(kind, payload >> KIND_BITS),
                None => Awaiting::Unknown,
            },
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

    static NUMBERED: AwaitKind = AwaitKind::new("Numbered", |id, f| write!(f, "Numbered#{id}"));
    static OTHER: AwaitKind = AwaitKind::new("Other", |id, f| write!(f, "other {id}"));

    #[test]
    fn awaiting_packs_into_eight_bytes_and_back() {
        let all = [
            Awaiting::Unknown,
            Awaiting::Sleep(Duration::from_nanos(123_456_789_012)),
            Awaiting::Yield,
            Awaiting::Fd(-1),
            Awaiting::Fd(1023),
            Awaiting::Executor,
            Awaiting::Object(&NUMBERED, 7),
            Awaiting::Object(&NUMBERED, u64::from(u32::MAX) + 5),
            Awaiting::Object(&OTHER, 0),
        ];
        for a in all {
            assert_eq!(Awaiting::unpack(a.pack()), a);
        }
        assert_eq!(
            Awaiting::unpack(Awaiting::Object(&OTHER, u64::MAX).pack()),
            Awaiting::Object(&OTHER, OBJECT_ID_MAX)
        );
        assert_eq!(Awaiting::unpack(0xf), Awaiting::Unknown);
    }

    #[test]
    fn an_object_prints_as_its_kind_says_and_kinds_are_told_apart() {
        assert_eq!(Awaiting::Object(&NUMBERED, 3).to_string(), "Numbered#3");
        assert_eq!(Awaiting::Object(&OTHER, 3).to_string(), "other 3");
        assert_ne!(Awaiting::Object(&NUMBERED, 3), Awaiting::Object(&OTHER, 3));
        assert_eq!(Awaiting::Object(&NUMBERED, 3).object_of(&NUMBERED), Some(3));
        assert_eq!(Awaiting::Object(&NUMBERED, 3).object_of(&OTHER), None);
        assert_eq!(Awaiting::Yield.object_of(&OTHER), None);
    }

    #[test]
    fn threads_racing_for_a_new_kind_agree_on_its_index() {
        static RACED: AwaitKind = AwaitKind::new("Raced", |id, f| write!(f, "{id}"));
        let packed: Vec<u64> = (0..4)
            .map(|_| std::thread::spawn(|| Awaiting::Object(&RACED, 1).pack()))
            .collect::<Vec<_>>()
            .into_iter()
            .map(|t| t.join().expect("no panic"))
            .collect();
        assert!(
            packed
                .iter()
                .all(|&p| Awaiting::unpack(p) == Awaiting::Object(&RACED, 1)),
            "{packed:?}"
        );
    }

    #[test]
    fn awaiting_note_is_taken_once() {
        note_awaiting(Awaiting::Fd(2));
        assert_eq!(take_awaiting(), Awaiting::Fd(2));
        assert_eq!(take_awaiting(), Awaiting::Unknown);
    }
}
