//! A simulated Linux kernel behind the same wrappers (feature `simulation`): evloop's real
//! loop, reactor, transports and streams run on it unchanged, and one seed decides every
//! choice the real kernel would leave to chance.
//!
//! # Using it
//!
//! ```
//! use evloop_syscalls::{self as sys, sim::{Config, Kernel}};
//!
//! let kernel = Kernel::with_config(7, Config::default());
//! {
//!     let _on = kernel.enter(); // this thread's wrappers now talk to the simulation
//!     let l = sys::socket(sys::Domain::Inet, sys::SockType::Stream)?;
//!     sys::bind(std::os::fd::AsFd::as_fd(&l), &"127.0.0.1:8080".parse::<std::net::SocketAddr>().unwrap().into())?;
//!     sys::listen(std::os::fd::AsFd::as_fd(&l), 16)?;
//! }
//! println!("{}", kernel.trace()); // every simulated call, with its result
//! # Ok::<(), std::io::Error>(())
//! ```
//!
//! A thread runs on a kernel between [`Kernel::enter`] and the drop of its guard; more threads
//! join with [`Kernel::spawn`]. An event loop created on such a thread runs on the simulation
//! without knowing it: nothing above this crate has a simulation branch. Two runs with the same
//! seed make the same calls with the same results in the same order, so their traces are equal
//! byte for byte; [`Kernel::tape`] records the decisions, [`Config::replay`] replays them, and
//! [`shrink`] reduces a failing tape to a small one.
//!
//! # What is simulated
//!
//! Every call the loop and its transports make: `epoll_create1`, `epoll_ctl`, the waits
//! (`epoll_pwait2`/`epoll_wait`), `eventfd` and its reads and writes, `read`/`write`/`readv`/
//! `writev` (and the `SIGPIPE`-free pipe writes), `pipe2`, `socket`, `socketpair`, `bind`,
//! `listen`, `accept4`, `connect`, `getsockname`, `getpeername`, `shutdown`, `send`, `sendmsg`,
//! `sendto`, `recv` (with `MSG_PEEK`, `MSG_TRUNC`), `recvfrom`, `sendfile` (from a real file),
//! the socket options (`SO_ERROR`, `SO_REUSEADDR`, `SO_REUSEPORT`, `TCP_NODELAY`, `SO_KEEPALIVE`,
//! `IPV6_V6ONLY`, `SO_BROADCAST`, `SO_LINGER`, buffer sizes, `SO_TYPE`), `close`, `dup`,
//! `clock_gettime`, and `getaddrinfo`/`getnameinfo` (numeric addresses, the host table of
//! [`Config::host`], `localhost`). The models:
//!
//! * **epoll** (`epoll`): level- and edge-triggered and one-shot registrations keyed by number
//!   and file, ready lists, `maxevents` rotation, exactly as epoll(7) describes;
//! * **TCP** (`stream`): handshake with latency, backlog (full: SYN retried, then `ETIMEDOUT`),
//!   refused connections, in-order segments, send and receive buffers with flow control, FIN and
//!   half-close (`EPOLLRDHUP`), RST on close with unread data or `SO_LINGER` 0 and on data
//!   reaching a closed socket, `ECONNRESET`/`EPIPE` as Linux reports them;
//! * **UDP** (`dgram`): datagrams with their own latencies (so reordered), truncation, peeking,
//!   `ECONNREFUSED` for a connected sender, receive-buffer drops;
//! * **Unix sockets**: streams and datagrams, pathname (a real placeholder file), abstract and
//!   autobind names (`net`), socket pairs;
//! * **pipes and eventfds** (`files`);
//! * **time** (`clock`): see below.
//!
//! # What is not
//!
//! Descriptors the simulation did not create are real and reach Linux as before: regular files
//! (`open_readonly`, the `/dev/null` reserve), pidfds and the subprocesses behind them, signals
//! (`register_signal`, `kill`), memory mappings, timer slack, rlimits. A real descriptor cannot
//! join a simulated epoll instance (`EPERM`, as a regular file could not), so subprocesses and
//! adopted real sockets do not work on a simulated loop. The simulation raises no `SIGPIPE`.
//! Not modelled: IP fragmentation, TCP urgent data, keep-alive probes, `TIME_WAIT` (a port is
//! free again once its socket is closed), multicast, IPv4-mapped IPv6 beyond wildcard binds,
//! the `EPOLLEXCLUSIVE` wake-one rule, nested epoll deeper than one level.
//!
//! # Descriptors (the hard part)
//!
//! `OwnedFd::drop` calls libc's `close` directly, and in debug builds aborts when it fails with
//! `EBADF`: a simulated descriptor must be a real, open one, and the kernel must learn when the
//! program closes it (to send a FIN, to drop epoll registrations). Each simulated file is
//! therefore backed by a real pipe: the program holds the write end, the kernel watches the
//! read end in a real epoll instance and sees `EPOLLHUP` when the last descriptor of the write
//! end is closed, by whatever means (`backing`). A file is closed exactly when Linux would
//! close it, even with `dup`s made behind the kernel's back; a number the kernel hands out
//! again tells the simulation that its old file lost it, and `epoll_ctl` checks (`fstat`) that
//! a `dup`ed number still leads to its file, since the reactor relies on `EBADF`/`ENOENT` there.
//!
//! When the kernel looks (a *reap*: one `epoll_wait(0)` on the watch) decides when a close
//! takes effect, so it looks at points fixed by the program's order of calls: every simulated
//! poll, every `epoll_ctl`, every call on a pipe, an eventfd or a Unix socket (Linux makes their
//! closes visible at once), every call that makes a new descriptor (before the backing pipe is
//! made: otherwise a dropped file would be seen closed when its number happened to come back, and
//! which numbers come back depends on the other threads of the process), and when a simulated
//! thread sleeps, joins or leaves. Calls on
//! Internet sockets do not look: the peer of a TCP socket hears of its close through a FIN or
//! RST that travels the simulated network anyway, so a close seen at the next poll is a close
//! seen a little later, and the per-byte path stays free of real system calls. A wrapper
//! `close` is seen at once.
//!
//! One consequence of real descriptors: a process that forks (starts a child process, which
//! `std::process::Command` does with `posix_spawn`) while a simulation runs on another thread
//! lends the child a copy of every descriptor until the child's `exec`, so a close the
//! simulation would see at once is seen a moment later, exactly as a real FIN would be sent
//! later; such a run may not replay byte for byte. Simulated tests belong in test binaries that
//! start no processes (or run them while no simulation does).
//!
//! Cost: two real descriptors, a `pipe2` and an `epoll_ctl` per file (the kernel raises the
//! process's soft descriptor limit to the hard one), a `close` when the file goes, and about
//! one real `epoll_wait(0)` per simulated poll. Descriptor numbers are real, so they differ
//! between runs, and a program that prints one (an error message naming `fd 12`) prints a
//! different number in each run; the trace names files by ids (`#7`) that do not change.
//!
//! # The seed and the tape
//!
//! One seed drives every choice the contract leaves open ([`ChoiceKind`]): the order of the
//! events one poll returns, the latency of each connection and the jitter of each segment (so
//! the interleaving of connections), where sends are cut into segments (short reads), short
//! writes, polls interrupted by signals (`EINTR`), accept failures (`ECONNABORTED`, `EMFILE`,
//! ...), connect failures, resets, lost datagrams, whether a loopback connect completes inside
//! the call, which simulated thread runs next (so the arrival order of cross-thread wake-ups),
//! and how late a timeout fires (never early). The faults ([`FaultClass`]) are the ones the
//! fault-injection table of `docs/fault-matrix.md` lists as possible in the runtime's
//! situations, injected so that the kernel's state stays consistent with them; their rates come
//! from [`Config::faults`] (or from the seed: [`Faults::swarm`]). What the contract orders is
//! never perturbed: it lives above this crate (FIFO `call_soon`, equal deadlines). Each answer
//! is recorded on the [`Tape`], in a form where 0 is always the simplest (no fault, no delay,
//! the kernel's order), so [`shrink`] can lower it.
//!
//! The trace (`trace`) records every simulated call with its result and every network event,
//! compactly, with a running digest: [`Kernel::trace`], [`Kernel::digest`].
//!
//! # Time
//!
//! The simulated clock (`CLOCK_MONOTONIC` and friends) moves only when every simulated thread
//! is blocked (in a poll, [`sleep`], [`JoinHandle::join`]); it then jumps to the next event or
//! timeout. A program's own work takes no simulated time, so an hour of timers runs in
//! milliseconds. One guard: a thread that polls without blocking thousands of times in a row
//! while nothing happens would wait forever for a timer that needs the clock to move, so after
//! [`Config::spin_limit`] such polls the clock jumps anyway ([`Stats::spins`] counts it). And
//! its twin: a file that stays ready never lets a poll wait, so after `spin_limit` polls that
//! returned events at one instant the clock moves 1 ms (100 ns a poll), as time passes on Linux
//! while a loop spins over a level-triggered file nobody drains.
//!
//! # Threads
//!
//! Threads on a kernel take turns (`sched`): one runs, the seed picks the next when it blocks
//! or at a poll (a yield point). The loop's wake-up eventfd written by another simulated
//! thread (a `RemoteHandle`, a waker) therefore arrives at a point the seed chose. Threads
//! that did not enter the kernel (the loop's executor pool, `std::thread::spawn` without
//! [`Kernel::spawn`]) run for real, concurrently: their `eventfd` writes reach the backing pipe
//! and become simulated increments at the kernel's next reap, at a moment real timing decides.
//! A deterministic test therefore keeps its threads on the kernel and avoids the executor
//! (`run_in_executor`, host names that need `getaddrinfo`: use numeric addresses or
//! [`Config::host`]). A simulated thread must block only in simulated calls: one blocked on a
//! real lock or channel held by another simulated thread stops the simulation. The scheduler
//! looks for activity from outside (a reap) at most once per real millisecond while it moves
//! the clock, and waits for it for real only when nothing at all is scheduled.
//!
//! # Tests
//!
//! `#[evloop::test(simulate)]` runs a test body under many seeds ([`__run_test`], the driver in
//! `harness`): a determinism check on the first seed, and for a failing seed a shrunk schedule,
//! its trace, and the `EVLOOP_SEED`/`EVLOOP_TAPE` commands that replay it.
//!
//! # Cost
//!
//! Without the feature nothing here is compiled and the wrappers are exactly the real ones.
//! With it, a thread not on a kernel pays one thread-local check per wrapper call. On a kernel
//! (release build, `tests/examples/sim_speed.rs`, a shared 2-core virtual machine): 2,400
//! simulated seconds per wall second with 1,000 tasks sleeping for 6 simulated hours (5.5
//! million wake-ups at 1.6 us each), 18,000 with 200 tasks; 170,000 to 360,000 TCP echo round
//! trips per wall second (1 and 50 connections, with or without the full trace and the tape).
//! A round trip is 8 simulated calls and 2 real `epoll_wait(0)` reaps; of its time about 55%
//! is the simulated kernel (epoll, the stream model, the timeline, the trace), 20% the loop
//! itself, 17% the real system calls of the reaps, 10% the C library (allocation, copies).

mod backing;
mod choice;
mod clock;
mod config;
mod dgram;
mod epoll;
mod faults;
mod files;
mod handshake;
mod harness;
mod kernel;
mod net;
pub(crate) mod ops;
mod sched;
mod socket;
mod state;
mod stream;
mod trace;

use std::cell::Cell;
use std::sync::Arc;

pub use choice::{Choice, ChoiceKind, Tape, TapeParseError, shrink};
pub use config::Config;
pub use faults::{FaultClass, Faults};
#[doc(hidden)]
pub use harness::{__run_test, Outcome, TestOptions};
pub use kernel::{Entered, JoinHandle, Kernel, is_active, sleep};
pub use state::Stats;
pub use trace::TraceMode;

use sched::Shared;

thread_local! {
    /// The kernel this thread runs on (null: none), the one check the real path pays. The
    /// [`Entered`] guard that set it holds an `Arc` to the kernel and clears this before it
    /// lets go, so a non-null pointer always points to a live kernel.
    static CURRENT: Cell<*const Shared> = const { Cell::new(std::ptr::null()) };
    /// This thread's number on that kernel.
    static ME: Cell<usize> = const { Cell::new(0) };
}

/// Whether the calling thread runs on a simulated kernel.
#[inline(always)]
pub(crate) fn active() -> bool {
    CURRENT.try_with(|c| !c.get().is_null()).unwrap_or(false)
}

/// Puts the calling thread on `shared` as thread `me`; the caller keeps `shared` alive until
/// [`uninstall`].
fn install(shared: &Arc<Shared>, me: usize) {
    CURRENT.with(|c| {
        assert!(c.get().is_null(), "this thread already runs on a simulated kernel");
        c.set(Arc::as_ptr(shared));
    });
    ME.with(|m| m.set(me));
}

fn uninstall() {
    let _ = CURRENT.try_with(|c| c.set(std::ptr::null()));
}

/// A new reference to the calling thread's kernel; `None` off the simulation.
fn current_shared() -> Option<Arc<Shared>> {
    let ptr = CURRENT.try_with(Cell::get).ok()?;
    if ptr.is_null() {
        return None;
    }
    // SAFETY: a non-null pointer came from `Arc::as_ptr` of an `Arc` that this thread's
    // `Entered` guard keeps alive (see `CURRENT`), so the allocation is live and counted;
    // taking one more strong count first makes the `Arc` built from it an owned reference of
    // its own.
    Some(unsafe {
        Arc::increment_strong_count(ptr);
        Arc::from_raw(ptr)
    })
}

/// Runs `f` with the calling thread's kernel and thread number; `None` off the simulation.
pub(crate) fn with_current<R>(f: impl FnOnce(&Shared, usize) -> R) -> Option<R> {
    let ptr = CURRENT.try_with(Cell::get).ok()?;
    if ptr.is_null() {
        return None;
    }
    // SAFETY: a non-null pointer was set by `install` from an `Arc` that this thread's
    // `Entered` guard keeps alive until it calls `uninstall` (see `CURRENT`); the reference
    // does not escape `f`, which runs on this thread before the guard can be dropped.
    let shared = unsafe { &*ptr };
    Some(f(shared, ME.with(Cell::get)))
}

/// The wrappers' hook: with the simulation on for this thread, `$call` (an
/// `Option<io::Result<_>>` from [`ops`]) answers instead of the kernel, unless it returns
/// `None` (a descriptor the simulation does not know: a real one).
macro_rules! hook {
    ($call:expr) => {
        if $crate::sim::active() {
            if let Some(r) = $call {
                return r;
            }
        }
    };
}
pub(crate) use hook;
