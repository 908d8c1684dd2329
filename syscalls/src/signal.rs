//! Signal delivery to event loops.
//!
//! A loop that wants to react to `SIGINT`, `SIGTERM`, `SIGCHLD`, ... calls
//! [`register_signal`] with an eventfd it polls. This module installs (with
//! `sigaction(2)`) one process-wide handler for the signal, which writes the
//! value 1 to every registered eventfd and sets the registration's pending
//! flag: the loop wakes up in epoll, reads the eventfd, and asks each of its
//! registrations [`SignalRegistration::take_pending`]. That is the design of
//! Python's `signal.set_wakeup_fd` (which asyncio uses) and of libuv's signal
//! pipe.
//!
//! # Why not `signalfd`
//!
//! A `signalfd(2)` only receives signals that are *blocked*, and a
//! process-directed signal goes to any thread that does not block it. So it
//! would need the signal blocked in every thread of the process: threads
//! created before the loop, executor threads, threads of the user or of
//! other libraries. One thread that does not block it takes the signal with
//! its default action, which for most signals kills the process. Two loops
//! with a `signalfd` each for one signal would steal each other's signals
//! (whichever reads first consumes it). And child processes inherit blocked
//! masks: every spawner would have to reset them, or children would start
//! with, say, `SIGINT` blocked. A handler has none of these problems: it
//! runs on whichever thread the kernel picks, broadcasts to every registered
//! loop, and leaves the masks alone; and `exec` resets handled signals to
//! their default action in children.
//!
//! # How the handler stays safe
//!
//! The handler runs asynchronously, interrupting arbitrary code, so it must
//! not allocate, lock, or touch thread-locals (the call counters included:
//! its writes are not counted). It reads a fixed-size, process-wide table:
//! per signal number, [`SLOTS_PER_SIGNAL`] slots of atomics (descriptor,
//! pending flag, delivery count), and calls only `write(2)`, which is
//! async-signal-safe. It saves and restores `errno`, which its `write`
//! could change under the interrupted code's feet.
//!
//! Registration and unregistration are serialized by a mutex the handler
//! never touches. Each slot counts the handlers using it (`users`): a
//! handler loads the slot's descriptor, counts itself in, checks that the
//! descriptor is still the same, writes, and counts itself out. To
//! unregister, `Drop` unpublishes the slot (descriptor -2, "draining") under
//! the mutex, releases the mutex, and only then waits for the slot's own
//! count to reach zero before it closes the descriptor and frees the slot
//! (-1). So when [`SignalRegistration`]'s `Drop` returns no handler can
//! still be writing to the descriptor, and the wait:
//! * never holds the mutex: other loops register and unregister meanwhile;
//! * concerns only handlers that loaded *this* slot's descriptor before it
//!   was unpublished (later ones see -2 and never count themselves in), each
//!   of which is one non-blocking `write(2)` away from done: a signal storm,
//!   of this signal or any other, cannot make it last.
//!
//! (The first version waited, holding the mutex, for a process-wide count
//! of running handlers to reach zero: a storm of any signal could hold up
//! every registration of every loop.) One race is left, and harmless: a
//! handler that loaded the descriptor, was preempted for the whole of an
//! unregistration and of a new registration of the same signal in the same
//! slot that happened to get the same descriptor number, then counts itself
//! in, finds "its" number published again and writes to it. That number is
//! then the new registration's own live eventfd, and the write is an arrival
//! of the very signal it registered for, a moment early.
//!
//! The registration writes to its own duplicate of the caller's eventfd
//! (made by [`register_signal`] and closed by `Drop`), so the caller's
//! descriptor is never written to after it was closed, whatever order the
//! caller drops things in.
//!
//! The first registration of a signal saves the signal's disposition and
//! installs the handler; the last unregistration restores the saved
//! disposition. While registered, a handler installed by other code for the
//! same signal is not called.

use std::fmt;
use std::io;
use std::os::fd::{AsRawFd, BorrowedFd, OwnedFd};
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard};

use crate::Syscall;
use crate::call::call;
use crate::counters;

/// The highest signal number this module handles: glibc's `SIGRTMAX` on
/// Linux (`_NSIG - 1`).
const MAX_SIGNAL: usize = 64;

/// How many registrations one signal can have at the same time;
/// [`register_signal`] fails beyond that.
pub const SLOTS_PER_SIGNAL: usize = 16;

/// The 8 bytes the handler writes: the eventfd value 1.
static ONE: [u8; 8] = 1u64.to_ne_bytes();

// ---------------------------------------------------------------------------
// Signal numbers
// ---------------------------------------------------------------------------

/// A validated signal number: `1..=SIGRTMAX`, not the realtime signals below
/// `SIGRTMIN` that glibc reserves for itself (32 and 33).
///
/// [`Signal::new`] accepts the signals a program can catch, so it refuses
/// `SIGKILL` and `SIGSTOP`; those two exist as the constants [`Signal::KILL`]
/// and [`Signal::STOP`], to be *sent* (`pidfd_send_signal`, `kill`), and
/// [`register_signal`] refuses them with an error naming them.
///
/// `Display` prints [`Signal::name`].
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct Signal(i32);

/// The realtime signals' names, by offset from `SIGRTMIN`.
const RT_NAMES: [&str; 31] = [
    "SIGRTMIN",
    "SIGRTMIN+1",
    "SIGRTMIN+2",
    "SIGRTMIN+3",
    "SIGRTMIN+4",
    "SIGRTMIN+5",
    "SIGRTMIN+6",
    "SIGRTMIN+7",
    "SIGRTMIN+8",
    "SIGRTMIN+9",
    "SIGRTMIN+10",
    "SIGRTMIN+11",
    "SIGRTMIN+12",
    "SIGRTMIN+13",
    "SIGRTMIN+14",
    "SIGRTMIN+15",
    "SIGRTMIN+16",
    "SIGRTMIN+17",
    "SIGRTMIN+18",
    "SIGRTMIN+19",
    "SIGRTMIN+20",
    "SIGRTMIN+21",
    "SIGRTMIN+22",
    "SIGRTMIN+23",
    "SIGRTMIN+24",
    "SIGRTMIN+25",
    "SIGRTMIN+26",
    "SIGRTMIN+27",
    "SIGRTMIN+28",
    "SIGRTMIN+29",
    "SIGRTMIN+30",
];

/// The name of a standard (non-realtime) signal, `None` for other numbers.
fn standard_name(signum: i32) -> Option<&'static str> {
    Some(match signum {
        libc::SIGHUP => "SIGHUP",
        libc::SIGINT => "SIGINT",
        libc::SIGQUIT => "SIGQUIT",
        libc::SIGILL => "SIGILL",
        libc::SIGTRAP => "SIGTRAP",
        libc::SIGABRT => "SIGABRT",
        libc::SIGBUS => "SIGBUS",
        libc::SIGFPE => "SIGFPE",
        libc::SIGKILL => "SIGKILL",
        libc::SIGUSR1 => "SIGUSR1",
        libc::SIGSEGV => "SIGSEGV",
        libc::SIGUSR2 => "SIGUSR2",
        libc::SIGPIPE => "SIGPIPE",
        libc::SIGALRM => "SIGALRM",
        libc::SIGTERM => "SIGTERM",
        libc::SIGSTKFLT => "SIGSTKFLT",
        libc::SIGCHLD => "SIGCHLD",
        libc::SIGCONT => "SIGCONT",
        libc::SIGSTOP => "SIGSTOP",
        libc::SIGTSTP => "SIGTSTP",
        libc::SIGTTIN => "SIGTTIN",
        libc::SIGTTOU => "SIGTTOU",
        libc::SIGURG => "SIGURG",
        libc::SIGXCPU => "SIGXCPU",
        libc::SIGXFSZ => "SIGXFSZ",
        libc::SIGVTALRM => "SIGVTALRM",
        libc::SIGPROF => "SIGPROF",
        libc::SIGWINCH => "SIGWINCH",
        libc::SIGIO => "SIGIO",
        libc::SIGPWR => "SIGPWR",
        libc::SIGSYS => "SIGSYS",
        _ => return None,
    })
}

/// The highest valid signal number: the C library's `SIGRTMAX`, capped at
/// the size of the handler's table.
fn max_signal() -> i32 {
    libc::SIGRTMAX().min(MAX_SIGNAL as i32)
}

fn invalid(msg: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidInput, msg)
}

impl Signal {
    /// `SIGINT` (2): interrupt from the keyboard (Ctrl-C).
    pub const INT: Signal = Signal(libc::SIGINT);
    /// `SIGTERM` (15): polite termination request.
    pub const TERM: Signal = Signal(libc::SIGTERM);
    /// `SIGHUP` (1): the controlling terminal hung up; daemons reload.
    pub const HUP: Signal = Signal(libc::SIGHUP);
    /// `SIGQUIT` (3): quit from the keyboard (Ctrl-\\).
    pub const QUIT: Signal = Signal(libc::SIGQUIT);
    /// `SIGUSR1`: user-defined signal 1.
    pub const USR1: Signal = Signal(libc::SIGUSR1);
    /// `SIGUSR2`: user-defined signal 2.
    pub const USR2: Signal = Signal(libc::SIGUSR2);
    /// `SIGCHLD`: a child process stopped, continued or exited.
    pub const CHLD: Signal = Signal(libc::SIGCHLD);
    /// `SIGPIPE`: write to a pipe or socket with no reader.
    pub const PIPE: Signal = Signal(libc::SIGPIPE);
    /// `SIGWINCH`: the terminal window changed size (default action: ignore).
    pub const WINCH: Signal = Signal(libc::SIGWINCH);
    /// `SIGALRM`: a timer set with `alarm(2)`/`setitimer(2)` expired.
    pub const ALRM: Signal = Signal(libc::SIGALRM);
    /// `SIGCONT`: continue a stopped process.
    pub const CONT: Signal = Signal(libc::SIGCONT);
    /// `SIGKILL` (9): ends the process at once. It can be sent, never caught:
    /// [`register_signal`] refuses it.
    pub const KILL: Signal = Signal(libc::SIGKILL);
    /// `SIGSTOP`: stops the process. It can be sent, never caught:
    /// [`register_signal`] refuses it.
    pub const STOP: Signal = Signal(libc::SIGSTOP);

    /// Validates `signum` as a signal a program can catch.
    ///
    /// Errors ([`io::ErrorKind::InvalidInput`], with a message naming the
    /// signal): a number outside `1..=SIGRTMAX` (64 with glibc); `SIGKILL`
    /// and `SIGSTOP`, which the kernel never lets a process catch, block or
    /// ignore; and the realtime signals from 32 up to `SIGRTMIN - 1` (32 and
    /// 33 with glibc), which glibc keeps for its threads implementation
    /// (thread cancellation, `setxid`).
    pub fn new(signum: i32) -> io::Result<Signal> {
        let max = max_signal();
        if !(1..=max).contains(&signum) {
            return Err(invalid(format!("signal number {signum} is out of range 1..={max}")));
        }
        if signum == libc::SIGKILL || signum == libc::SIGSTOP {
            let name = standard_name(signum).unwrap_or("signal");
            return Err(invalid(format!("{name} ({signum}) cannot be caught")));
        }
        let rtmin = libc::SIGRTMIN();
        if standard_name(signum).is_none() && signum < rtmin {
            return Err(invalid(format!(
                "signal {signum} is reserved by the C library (realtime signals start at SIGRTMIN = {rtmin})"
            )));
        }
        Ok(Signal(signum))
    }

    /// Whether a handler can be installed for it (everything but `SIGKILL`
    /// and `SIGSTOP`).
    pub const fn is_catchable(self) -> bool {
        self.0 != libc::SIGKILL && self.0 != libc::SIGSTOP
    }

    /// The signal number.
    pub const fn raw(self) -> i32 {
        self.0
    }

    /// The conventional name: `"SIGINT"`, `"SIGTERM"`, ...; realtime
    /// signals are `"SIGRTMIN"`, `"SIGRTMIN+1"`, ... up to `"SIGRTMIN+30"`
    /// (= `SIGRTMAX` with glibc).
    pub fn name(self) -> &'static str {
        if let Some(name) = standard_name(self.0) {
            return name;
        }
        usize::try_from(self.0 - libc::SIGRTMIN())
            .ok()
            .and_then(|off| RT_NAMES.get(off).copied())
            .unwrap_or("SIGRT?")
    }

    /// The row of the handler's table for this signal.
    fn slots(self) -> &'static [Slot; SLOTS_PER_SIGNAL] {
        // Validation keeps the number within 1..=MAX_SIGNAL; row 0 is never registered.
        usize::try_from(self.0)
            .ok()
            .and_then(|i| TABLE.get(i))
            .unwrap_or(&TABLE[0])
    }

    fn index(self) -> usize {
        usize::try_from(self.0).unwrap_or(0)
    }
}

impl fmt::Display for Signal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

// ---------------------------------------------------------------------------
// The table the handler reads
// ---------------------------------------------------------------------------

/// [`Slot::fd`] of a free slot.
const FREE: i32 = -1;
/// [`Slot::fd`] of a slot being unregistered: not published any more, not free yet (handlers
/// that loaded its descriptor before may still be writing).
const DRAINING: i32 = -2;

/// One registration's place in the table.
struct Slot {
    /// The descriptor the handler writes to; [`FREE`] or [`DRAINING`] when there is none.
    fd: AtomicI32,
    /// Handlers between counting themselves in and out (see the module docs).
    users: AtomicUsize,
    /// Set by the handler, cleared by [`SignalRegistration::take_pending`].
    pending: AtomicBool,
    /// Arrivals the handler saw for this registration.
    deliveries: AtomicU64,
}

impl Slot {
    const fn new() -> Slot {
        Slot {
            fd: AtomicI32::new(FREE),
            users: AtomicUsize::new(0),
            pending: AtomicBool::new(false),
            deliveries: AtomicU64::new(0),
        }
    }
}

/// Per signal number (index 0 unused), its registrations.
static TABLE: [[Slot; SLOTS_PER_SIGNAL]; MAX_SIGNAL + 1] =
    [const { [const { Slot::new() }; SLOTS_PER_SIGNAL] }; MAX_SIGNAL + 1];

/// What registration needs to know per signal; only touched under [`STATE`].
struct SignalState {
    /// Live registrations.
    registered: usize,
    /// The disposition before the first registration, to restore after the
    /// last. Kept (not overwritten) if restoring it failed, so the original
    /// is never replaced by this module's own handler.
    saved: Option<libc::sigaction>,
}

static STATE: Mutex<[SignalState; MAX_SIGNAL + 1]> = Mutex::new(
    [const {
        SignalState {
            registered: 0,
            saved: None,
        }
    }; MAX_SIGNAL + 1],
);

fn lock_state() -> MutexGuard<'static, [SignalState; MAX_SIGNAL + 1]> {
    // Nothing panics while holding the lock; recover from poisoning anyway.
    STATE.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// The signal handler: for every registration of `signum`, sets its pending
/// flag, counts the delivery and writes 1 to its eventfd.
///
/// Async-signal-safe: atomics, a fixed-size static table and `write(2)`;
/// no allocation, lock or thread-local. `errno` is saved and restored.
extern "C" fn on_signal(signum: libc::c_int) {
    // SAFETY: `__errno_location` only computes the address of this thread's errno, which is
    // valid, aligned and owned by this thread for its whole life; reading an int there is
    // async-signal-safe.
    let errno = unsafe { libc::__errno_location() };
    // SAFETY: `errno` points to this thread's live, aligned errno (see above).
    let saved_errno = unsafe { errno.read() };
    if let Some(row) = usize::try_from(signum).ok().and_then(|i| TABLE.get(i)) {
        for slot in row {
            let fd = slot.fd.load(Ordering::SeqCst);
            if fd < 0 {
                continue;
            }
            // Count in, then check the descriptor is still published. SeqCst pairs with
            // `drain`: either it sees this increment (and waits for the decrement below), or
            // this reload sees the slot unpublished.
            slot.users.fetch_add(1, Ordering::SeqCst);
            if slot.fd.load(Ordering::SeqCst) == fd {
                slot.pending.store(true, Ordering::SeqCst);
                slot.deliveries.fetch_add(1, Ordering::SeqCst);
                // SAFETY: `write` is async-signal-safe; the kernel reads 8 bytes from the
                // static `ONE`. `fd` is published in the slot after this handler counted itself
                // in, so it is a registration's own open duplicate descriptor: `Drop` closes it
                // only after it unpublished it and saw `users` at zero, which cannot happen
                // before the decrement below. An EAGAIN (counter full) is ignored: the eventfd
                // stays readable.
                unsafe {
                    libc::write(fd, ONE.as_ptr().cast(), ONE.len());
                }
            }
            slot.users.fetch_sub(1, Ordering::SeqCst);
        }
    }
    // SAFETY: as above; restores the interrupted code's errno.
    unsafe { errno.write(saved_errno) };
}

/// Unpublishes `slot` (handlers that start from now on skip it). Called
/// with the registration mutex held; the slot is not free until `drain`.
fn unpublish(slot: &Slot) {
    slot.fd.store(DRAINING, Ordering::SeqCst);
}

/// Waits until no handler that loaded `slot`'s old descriptor is still
/// using it (each is one non-blocking `write` from done). Called without the
/// mutex, after `unpublish`; the caller then closes the descriptor and frees
/// the slot, in that order, so that no new registration can publish a
/// descriptor in the slot while the old one is still open.
fn drain(slot: &Slot) {
    while slot.users.load(Ordering::SeqCst) != 0 {
        std::thread::yield_now();
    }
}

/// Wraps a `sigaction` error with the signal's name, keeping its kind.
fn sigaction_error(signal: Signal, what: &str, e: &io::Error) -> io::Error {
    io::Error::new(e.kind(), format!("sigaction({signal}): cannot {what}: {e}"))
}

/// `sigaction(signum, new, old)`, counted as [`Syscall::Sigaction`].
fn sigaction(signum: i32, new: Option<&libc::sigaction>, old: Option<&mut libc::sigaction>) -> io::Result<()> {
    let new_ptr = new.map_or(std::ptr::null(), |n| n as *const libc::sigaction);
    let old_ptr = old.map_or(std::ptr::null_mut(), |o| o as *mut libc::sigaction);
    call(Syscall::Sigaction, || {
        // SAFETY: the kernel reads a `struct sigaction` from `new_ptr` and writes one to
        // `old_ptr`; each is NULL (allowed: nothing is read/written) or comes from a
        // reference to a live `libc::sigaction` the caller holds for the call.
        unsafe { libc::sigaction(signum, new_ptr, old_ptr) }
    })?;
    Ok(())
}

/// A zeroed `struct sigaction`: `SIG_DFL`, empty mask, no flags.
fn empty_sigaction() -> libc::sigaction {
    // SAFETY: `struct sigaction` is plain data (an integer handler, a bit-array mask, an int
    // and an optional function pointer), for all of which all-zero bytes are valid values
    // (SIG_DFL, empty set, 0, None).
    unsafe { std::mem::zeroed() }
}

/// Installs [`on_signal`] for `signal`; returns the disposition it replaced.
fn install(signal: Signal) -> io::Result<libc::sigaction> {
    let mut new = empty_sigaction();
    new.sa_sigaction = on_signal as extern "C" fn(libc::c_int) as libc::sighandler_t;
    new.sa_flags = libc::SA_RESTART;
    // SAFETY: `sigemptyset` only writes inside `new.sa_mask`, a live field.
    unsafe { libc::sigemptyset(&mut new.sa_mask) };
    let mut old = empty_sigaction();
    sigaction(signal.raw(), Some(&new), Some(&mut old))
        .map_err(|e| sigaction_error(signal, "install the handler", &e))?;
    Ok(old)
}

// ---------------------------------------------------------------------------
// Registrations
// ---------------------------------------------------------------------------

/// One registration made by [`register_signal`]: each time its signal
/// arrives, the handler sets its pending flag and writes the value 1 to its
/// eventfd.
///
/// Dropping it unregisters: when `Drop` returns, no handler is writing or
/// will write to the eventfd any more, and, if it was the signal's last
/// registration, the signal's disposition from before the first
/// registration is back.
pub struct SignalRegistration {
    signal: Signal,
    slot: &'static Slot,
    slot_index: usize,
    /// The duplicate of the caller's eventfd that the handler writes to;
    /// `None` only inside `Drop`.
    fd: Option<OwnedFd>,
}

/// `sigaction(signum, &handler, &old)` on the first registration of
/// `signal`: from now on, each arrival of `signal` sets the returned
/// registration's pending flag and writes the 8-byte value 1 to `wake_fd`.
///
/// Man page: <https://man7.org/linux/man-pages/man2/sigaction.2.html>
///
/// `wake_fd` is an eventfd (or the write end of a pipe) the caller polls
/// for readability. It must be non-blocking (as [`eventfd`](crate::eventfd())
/// makes them), since a blocking `write` inside a signal handler could hang
/// the process: a blocking descriptor is [`io::ErrorKind::InvalidInput`].
/// The registration writes to its own duplicate of `wake_fd`
/// ([`dup`](crate::dup)), closed when it is dropped, so the caller may
/// close `wake_fd` at any time.
///
/// Several registrations of one signal (several loops) all get every
/// arrival, up to [`SLOTS_PER_SIGNAL`] at a time; one more is an error
/// naming the signal. The first registration saves the signal's disposition
/// and installs the handler (`SA_RESTART`, so most interrupted blocking
/// calls resume instead of failing with `EINTR`; no extra mask); a failure
/// is an error naming the signal.
///
/// Signals coalesce: while a standard signal is pending in the kernel, more
/// of it are dropped, and a burst of arrivals between two
/// [`SignalRegistration::take_pending`] calls reports one.
///
/// Caveats:
/// * registering `SIGSEGV`, `SIGBUS`, `SIGFPE` or `SIGILL` and then taking
///   a real fault loops forever: the handler returns to the faulting
///   instruction (sent with `kill`, they are ordinary signals);
/// * a child made by `fork` without `exec` keeps the handler and the
///   duplicated descriptors: its signals wake the parent's loops (`exec`
///   resets the handler to the default action and closes the duplicates,
///   which are close-on-exec).
///
/// Counted as [`Syscall::Fcntl`] twice (the `O_NONBLOCK` check and the
/// `F_DUPFD_CLOEXEC` duplicate) and, on the first registration of the
/// signal, [`Syscall::Sigaction`].
#[doc(alias = "sigaction(2)")]
#[doc(alias = "sigaction")]
#[doc(alias = "set_wakeup_fd")]
pub fn register_signal(signal: Signal, wake_fd: BorrowedFd<'_>) -> io::Result<SignalRegistration> {
    if !signal.is_catchable() {
        return Err(invalid(format!(
            "register_signal({signal}): {signal} ({}) cannot be caught",
            signal.raw()
        )));
    }
    let flags = call(Syscall::Fcntl, || {
        // SAFETY: F_GETFL takes no third argument and touches no user memory.
        unsafe { libc::fcntl(wake_fd.as_raw_fd(), libc::F_GETFL) }
    })?;
    if flags & libc::O_NONBLOCK == 0 {
        return Err(invalid(format!(
            "register_signal({signal}): the wake-up descriptor must be non-blocking"
        )));
    }
    let fd = crate::dup(wake_fd)?;
    let mut state = lock_state();
    let Some(st) = state.get_mut(signal.index()) else {
        return Err(invalid(format!("register_signal: {signal} is out of range")));
    };
    let Some((slot_index, slot)) = signal
        .slots()
        .iter()
        .enumerate()
        .find(|(_, s)| s.fd.load(Ordering::SeqCst) == FREE)
    else {
        return Err(io::Error::other(format!(
            "register_signal({signal}): all {SLOTS_PER_SIGNAL} registration slots of {signal} are in use"
        )));
    };
    slot.pending.store(false, Ordering::SeqCst);
    slot.deliveries.store(0, Ordering::SeqCst);
    slot.fd.store(fd.as_raw_fd(), Ordering::SeqCst);
    if st.registered == 0 {
        match install(signal) {
            // After a failed restore, `saved` still holds the original disposition and `old`
            // is this module's own handler: keep the original.
            Ok(old) => {
                if st.saved.is_none() {
                    st.saved = Some(old);
                }
            }
            Err(e) => {
                unpublish(slot);
                drop(state);
                drain(slot);
                let _ = crate::close(fd);
                slot.fd.store(FREE, Ordering::SeqCst);
                return Err(e);
            }
        }
    }
    st.registered += 1;
    Ok(SignalRegistration {
        signal,
        slot,
        slot_index,
        fd: Some(fd),
    })
}

impl SignalRegistration {
    /// The signal this registration receives.
    pub fn signal(&self) -> Signal {
        self.signal
    }

    /// `true` if the signal arrived since the last call (or since
    /// registration), and clears the flag. A burst of arrivals in between
    /// gives one `true`.
    pub fn take_pending(&self) -> bool {
        self.slot.pending.swap(false, Ordering::SeqCst)
    }

    /// How many arrivals of the signal the handler saw for this
    /// registration since it was made (mostly for tests: the kernel
    /// coalesces a standard signal that arrives while one is pending, so
    /// this can be less than the number sent).
    pub fn deliveries(&self) -> u64 {
        self.slot.deliveries.load(Ordering::SeqCst)
    }
}

impl fmt::Debug for SignalRegistration {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SignalRegistration")
            .field("signal", &self.signal)
            .field("slot", &self.slot_index)
            .field("fd", &self.fd)
            .finish()
    }
}

impl Drop for SignalRegistration {
    /// Unregisters: unpublishes the slot, restores the signal's original
    /// disposition if this was its last registration (`sigaction`, counted
    /// as [`Syscall::Sigaction`]; a failure leaves the handler installed,
    /// ignoring the signal, and is retried by the next last
    /// unregistration), then, with the mutex released, waits for the
    /// handlers still writing to this slot's descriptor (see the module
    /// docs), closes the duplicate descriptor ([`Syscall::Close`]) and frees
    /// the slot.
    fn drop(&mut self) {
        let mut state = lock_state();
        unpublish(self.slot);
        if let Some(st) = state.get_mut(self.signal.index()) {
            st.registered = st.registered.saturating_sub(1);
            if st.registered == 0 {
                if let Some(old) = st.saved {
                    if sigaction(self.signal.raw(), Some(&old), None).is_ok() {
                        st.saved = None;
                    }
                }
            }
        }
        drop(state);
        drain(self.slot);
        // Freed only after the close: until then no new registration can take the slot, so a
        // late handler's check can only find DRAINING here, never the old number.
        if let Some(fd) = self.fd.take() {
            let _ = crate::close(fd);
        }
        self.slot.fd.store(FREE, Ordering::SeqCst);
    }
}

/// A stand-in for a signal handler caught in the middle of its write to `registration`'s
/// descriptor (counted in its slot, as the handler counts itself while it writes), until the
/// returned guard is dropped. For tests of the unregistration protocol: `Drop` of that
/// registration must wait for it, and nothing else may.
#[cfg(feature = "fault-injection")]
pub fn handler_in_flight(registration: &SignalRegistration) -> HandlerInFlight {
    registration.slot.users.fetch_add(1, Ordering::SeqCst);
    HandlerInFlight {
        slot: registration.slot,
    }
}

/// See [`handler_in_flight`].
#[cfg(feature = "fault-injection")]
pub struct HandlerInFlight {
    slot: &'static Slot,
}

#[cfg(feature = "fault-injection")]
impl fmt::Debug for HandlerInFlight {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("HandlerInFlight")
    }
}

#[cfg(feature = "fault-injection")]
impl Drop for HandlerInFlight {
    fn drop(&mut self) {
        self.slot.users.fetch_sub(1, Ordering::SeqCst);
    }
}

// ---------------------------------------------------------------------------
// Queries and sending
// ---------------------------------------------------------------------------

/// What happens when a signal arrives, as [`signal_disposition`] reports it.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum Disposition {
    /// `SIG_DFL`: the signal's default action (terminate, core dump, stop,
    /// or ignore, depending on the signal).
    Default,
    /// `SIG_IGN`: discarded.
    Ignore,
    /// A handler function runs (this module's or anybody else's).
    Handler,
}

/// `sigaction(signum, NULL, &old)`: the current disposition of `signal`,
/// without changing it.
///
/// Man page: <https://man7.org/linux/man-pages/man2/sigaction.2.html>
///
/// Errors name the signal. Counted as [`Syscall::Sigaction`].
#[doc(alias = "sigaction")]
pub fn signal_disposition(signal: Signal) -> io::Result<Disposition> {
    let mut old = empty_sigaction();
    sigaction(signal.raw(), None, Some(&mut old)).map_err(|e| sigaction_error(signal, "query", &e))?;
    Ok(match old.sa_sigaction {
        libc::SIG_DFL => Disposition::Default,
        libc::SIG_IGN => Disposition::Ignore,
        _ => Disposition::Handler,
    })
}

/// `kill(pid, signal)`: sends `signal` to a process (or several).
///
/// Man page: <https://man7.org/linux/man-pages/man2/kill.2.html>
///
/// The raw call, any `pid` and signal number: `pid > 0` is that process;
/// **`0` is every process of the caller's process group, `-1` every process
/// the caller may signal, and `-pgid` the group `pgid`**. Signal 0 sends
/// nothing and only checks that the target exists (`ESRCH`) and may be
/// signalled (`EPERM`); an invalid number is `EINVAL`. A pid names a
/// process only until it is reaped and the number reused: for children,
/// [`pidfd_send_signal`](crate::pidfd_send_signal) has no such race.
/// Counted as [`Syscall::Kill`].
#[doc(alias = "kill(2)")]
pub fn kill(pid: i32, signal: i32) -> io::Result<()> {
    call(Syscall::Kill, || {
        // SAFETY: kill takes two integers and touches no user memory.
        unsafe { libc::kill(pid, signal) }
    })?;
    Ok(())
}

/// `getpid()`: the calling process's id.
///
/// Man page: <https://man7.org/linux/man-pages/man2/getpid.2.html>
///
/// Never fails (so fault injection does not apply). glibc no longer caches
/// it: each call is a system call. Counted as [`Syscall::Getpid`].
#[doc(alias = "getpid(2)")]
pub fn getpid() -> i32 {
    counters::bump(Syscall::Getpid);
    // SAFETY: getpid takes no arguments, touches no user memory and cannot fail.
    unsafe { libc::getpid() }
}

/// `kill(getpid(), signal)`: sends `signal` to this process.
///
/// Man page: <https://man7.org/linux/man-pages/man2/kill.2.html>
///
/// The signal is process-directed: the kernel delivers it to any one thread
/// that does not block it, normally the calling one (then the handler has
/// run when this returns), but not necessarily. Unlike `raise(3)`, which
/// targets the calling thread. Counted as [`Syscall::Getpid`] and
/// [`Syscall::Kill`].
#[doc(alias = "kill")]
#[doc(alias = "raise")]
pub fn raise_in_process(signal: Signal) -> io::Result<()> {
    kill(getpid(), signal.raw())
}
