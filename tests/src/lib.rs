//! Shared helpers for evloop's integration and syscall-level tests (`tests/tests/*.rs`).
//!
//! Every test binary of this crate links this library, so a helper needed by more than one test
//! file lives here once instead of as a copy in each file. Helpers that only one file needs stay
//! in that file.
//!
//! - Running the loop without hanging: [`run_bounded`] (under [`HANG`]), [`run_one`] (refuses to
//!   block forever), [`spin_once`] (one non-blocking iteration), and [`watchdog::Watchdog`]
//!   (stops a loop from another thread when a test runs too long).
//! - Recording what happened: [`Log`] with [`log`], [`push`] and [`entries`], and
//!   [`record_exceptions_with`] for the loop's exception handler.
//! - Seeing destructors run: [`DropFlag`] and [`flag`].
//! - Deterministic "random" input: [`Rng`].
//! - Looking at a thread from outside: [`procfs`] (is it blocked in the loop's poll?), and its
//!   CPU time ([`thread_cpu_time`], for "no spin" checks).
//! - Networking tests: [`net`] (an echo [`Protocol`](evloop::Protocol), an echo loop for
//!   streams, the process's open fd count) and [`child`] (re-running one test of the current
//!   binary in a child process, for tests that change process-wide state).
//!
//! The helpers keep the rules the tests follow: nothing depends on the machine being fast (bounds
//! are generous, and they turn a hang into a failure), and every "random" input is the same on
//! every run.

#![deny(missing_docs)]

use std::cell::{Cell, RefCell};
use std::future::Future;
use std::rc::Rc;
use std::time::Duration;

use evloop::{ExceptionContext, LoopHandle, timeout};

// ---------------------------------------------------------------------------------------------
// Running the loop.

/// Generous bound for anything that should finish at once: a hang fails the test instead.
pub const HANG: Duration = Duration::from_secs(30);

/// `run_until_complete` with a generous bound ([`HANG`], ten times that under valgrind, which
/// runs code tens of times slower), so a bug is a failure and not a hang.
///
/// Panics if the loop fails to run the future or the future does not complete within the bound.
pub fn run_bounded<F>(lp: &LoopHandle, fut: F) -> F::Output
where
    F: Future + 'static,
    F::Output: 'static,
{
    let bound = if under_valgrind() { HANG * 10 } else { HANG };
    lp.run_until_complete(timeout(bound, fut))
        .expect("the loop ran the future")
        .expect("the future completed within the hang bound")
}

/// One loop iteration, refusing to block forever when nothing is ready.
///
/// Panics (instead of hanging) when the loop has neither a ready callback, nor a timer, nor
/// work waiting in its remote queue.
pub fn run_one(lp: &LoopHandle) {
    let s = lp.stats();
    assert!(
        s.ready > 0 || s.timers > 0 || s.remote_pending,
        "run_one would block forever: nothing ready, no timers, no remote work ({s:?})"
    );
    lp.run_once().unwrap();
}

/// Runs one iteration without blocking: a no-op callback keeps the poll timeout at zero.
///
/// Also the warm-up before counting syscalls: the loop's one-time work (the `epoll_pwait2`
/// probe, buffer allocation) is done by the first iteration.
pub fn spin_once(lp: &LoopHandle) {
    lp.call_soon(|| {}).unwrap();
    lp.run_once().unwrap();
}

pub mod watchdog {
    //! A guard against hanging tests: a thread that stops the loop if the test takes too long.

    use std::sync::atomic::{AtomicBool, Ordering::SeqCst};
    use std::sync::{Arc, mpsc};
    use std::thread::{self, JoinHandle};
    use std::time::Duration;

    use evloop::RemoteHandle;

    /// How often the watchdog stops the loop again once it has fired.
    const REPEAT: Duration = Duration::from_millis(500);

    /// Stops the loop from another thread (with [`RemoteHandle::stop`]) if the test takes longer
    /// than `limit`, and keeps stopping it every 500 ms after that, in case the test runs the
    /// loop again; [`Watchdog::finish`] reports whether it had to.
    ///
    /// Dropping it without `finish` also stops and joins its thread.
    pub struct Watchdog {
        cancel: Option<mpsc::Sender<()>>,
        fired: Arc<AtomicBool>,
        thread: Option<JoinHandle<()>>,
    }

    impl Watchdog {
        /// Starts the watchdog thread for the loop of `remote`, firing after `limit`.
        pub fn start(remote: RemoteHandle, limit: Duration) -> Watchdog {
            let (tx, rx) = mpsc::channel::<()>();
            let fired = Arc::new(AtomicBool::new(false));
            let f = fired.clone();
            let thread = thread::spawn(move || {
                let mut wait = limit;
                while let Err(mpsc::RecvTimeoutError::Timeout) = rx.recv_timeout(wait) {
                    f.store(true, SeqCst);
                    let _ = remote.stop();
                    wait = REPEAT;
                }
            });
            Watchdog {
                cancel: Some(tx),
                fired,
                thread: Some(thread),
            }
        }

        /// Stops the watchdog; `true` if it fired (the test hung).
        pub fn finish(mut self) -> bool {
            self.stop_thread();
            self.fired.load(SeqCst)
        }

        fn stop_thread(&mut self) {
            self.cancel.take();
            if let Some(t) = self.thread.take() {
                let _ = t.join();
            }
        }
    }

    impl Drop for Watchdog {
        fn drop(&mut self) {
            self.stop_thread();
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Recording what happened.

/// A shared, growable record of what happened, in order (by default, of strings).
pub type Log<T = String> = Rc<RefCell<Vec<T>>>;

/// A new, empty [`Log`].
pub fn log<T>() -> Log<T> {
    Rc::new(RefCell::new(Vec::new()))
}

/// Appends `s` to a string log.
pub fn push(log: &Log, s: impl Into<String>) {
    log.borrow_mut().push(s.into());
}

/// A copy of everything recorded in `log` so far.
pub fn entries<T: Clone>(log: &Log<T>) -> Vec<T> {
    log.borrow().clone()
}

/// Installs an exception handler on `lp` that records, for every context it is given, what
/// `record` makes of it (called with the handler's loop handle and the context).
pub fn record_exceptions_with<T: 'static>(
    lp: &LoopHandle,
    record: impl Fn(&LoopHandle, &ExceptionContext) -> T + 'static,
) -> Log<T> {
    let seen = log();
    let s = seen.clone();
    lp.set_exception_handler(Some(Box::new(move |h: &LoopHandle, ctx: &ExceptionContext| {
        s.borrow_mut().push(record(h, ctx));
    })));
    seen
}

// ---------------------------------------------------------------------------------------------
// Destructors.

/// Sets its flag when dropped: proves a future's destructors ran.
pub struct DropFlag(pub Rc<Cell<bool>>);

impl Drop for DropFlag {
    fn drop(&mut self) {
        self.0.set(true);
    }
}

/// A new flag, `false` until something (e.g. a [`DropFlag`]) sets it.
pub fn flag() -> Rc<Cell<bool>> {
    Rc::new(Cell::new(false))
}

// ---------------------------------------------------------------------------------------------
// Deterministic "random" input.

/// A tiny deterministic PRNG, so "random" inputs are the same on every run and the tests need no
/// dependency. Two classic generators, chosen by the constructor; each gives the same sequence
/// for the same seed on every run (and the seed must not be 0).
#[derive(Debug, Clone)]
pub struct Rng {
    state: u64,
    star: bool,
}

impl Rng {
    /// Marsaglia's xorshift64 (shifts 13, 7, 17): the output is the state.
    pub fn xorshift64(seed: u64) -> Rng {
        Rng {
            state: seed,
            star: false,
        }
    }

    /// xorshift64* (shifts 12, 25, 27): the output is the state times `0x2545_f491_4f6c_dd1d`.
    pub fn xorshift64_star(seed: u64) -> Rng {
        Rng {
            state: seed,
            star: true,
        }
    }

    /// The next number of the sequence.
    pub fn next_u64(&mut self) -> u64 {
        let mut x = self.state;
        if self.star {
            x ^= x >> 12;
            x ^= x << 25;
            x ^= x >> 27;
            self.state = x;
            x.wrapping_mul(0x2545_f491_4f6c_dd1d)
        } else {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            self.state = x;
            x
        }
    }

    /// The next number of the sequence, reduced to `0..n` (`next_u64() % n`).
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n
    }
}

// ---------------------------------------------------------------------------------------------
// CPU time (the "no spin" checks).

/// The CPU time the calling thread has used so far: the first field of
/// `/proc/thread-self/schedstat` (nanoseconds on the CPU), or, where the kernel has no
/// schedstat, `utime + stime` of `/proc/thread-self/stat` (clock ticks, usually 10 ms).
///
/// For "the loop idles instead of spinning" checks: compare two readings around a wait and
/// allow a generous fraction of the wait's wall-clock time.
pub fn thread_cpu_time() -> Duration {
    if let Ok(text) = std::fs::read_to_string("/proc/thread-self/schedstat") {
        if let Some(ns) = text.split_whitespace().next().and_then(|f| f.parse::<u64>().ok()) {
            return Duration::from_nanos(ns);
        }
    }
    let stat = std::fs::read_to_string("/proc/thread-self/stat").unwrap_or_default();
    // Fields after the parenthesised command name: utime is the 14th field, stime the 15th.
    let after = stat.rsplit_once(')').map_or("", |(_, rest)| rest);
    let fields: Vec<u64> = after.split_whitespace().filter_map(|f| f.parse().ok()).collect();
    let ticks = fields.get(11).copied().unwrap_or(0) + fields.get(12).copied().unwrap_or(0);
    Duration::from_millis(ticks * 10)
}

/// Whether this process runs under valgrind (which preloads its `vgpreload_*.so` into the
/// program it runs): `make valgrind`. A few checks adapt: CPU-time bounds (every instruction
/// costs tens of times more) and what needs system calls valgrind does not know (`pidfd_open`
/// in valgrind 3.19, which it fails with `ENOSYS`).
pub fn under_valgrind() -> bool {
    std::env::var_os("LD_PRELOAD").is_some_and(|v| v.to_string_lossy().contains("vgpreload"))
}

// ---------------------------------------------------------------------------------------------
// Threads seen from outside.

pub mod procfs {
    //! What `/proc/self/task/<tid>/syscall` says about a thread of this process: whether it is
    //! blocked in the loop's poll, and with which timeout. Reading it needs ptrace access to our
    //! own threads, which some sandboxes deny; callers decide what to do then.

    /// A thread seen blocked in the loop's poll (`epoll_pwait2`, `epoll_wait`, or `epoll_pwait`,
    /// which is how glibc issues `epoll_wait` where there is no such system call).
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub struct InPoll {
        /// The timeout argument means "forever" (a NULL timespec for `epoll_pwait2`, -1 for the
        /// others).
        pub no_timeout: bool,
    }

    /// The path of the `syscall` file of thread `tid` of this process.
    pub fn syscall_path(tid: libc::pid_t) -> String {
        format!("/proc/self/task/{tid}/syscall")
    }

    /// Whether `nr` is one of the system calls the loop polls with.
    fn is_poll(nr: libc::c_long) -> bool {
        // aarch64 has no epoll_wait system call: glibc issues epoll_pwait.
        #[cfg(target_arch = "x86_64")]
        if nr == libc::SYS_epoll_wait {
            return true;
        }
        nr == libc::SYS_epoll_pwait2 || nr == libc::SYS_epoll_pwait
    }

    /// Parses the contents of a `syscall` file: `Some` when the thread is blocked in the loop's
    /// poll, `None` when it runs (`running`) or is in another system call.
    pub fn parse_poll(text: &str) -> Option<InPoll> {
        let fields: Vec<&str> = text.split_whitespace().collect();
        let nr = fields.first()?.parse::<libc::c_long>().ok()?;
        if !is_poll(nr) {
            return None;
        }
        // Fields 1..=6 are the arguments in hex; the timeout is the fourth.
        let arg = fields
            .get(4)
            .and_then(|a| u64::from_str_radix(a.trim_start_matches("0x"), 16).ok())
            .unwrap_or(1);
        let no_timeout = if nr == libc::SYS_epoll_pwait2 {
            arg == 0
        } else {
            arg as u32 as i32 == -1
        };
        Some(InPoll { no_timeout })
    }
}

// ---------------------------------------------------------------------------------------------
// Networking.

pub mod net {
    //! Helpers shared by the networking tests (`net_*.rs`): echo servers of both kinds and the
    //! process's fd table.

    use std::io;

    use evloop::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, Protocol, Transport};

    /// An echo protocol: writes back what it receives, closes on the peer's EOF.
    #[derive(Default)]
    pub struct Echo {
        transport: Option<Transport>,
    }

    impl Echo {
        /// A new echo protocol (for `create_server(Echo::new, ...)`).
        pub fn new() -> Echo {
            Echo::default()
        }
    }

    impl Protocol for Echo {
        fn connection_made(&mut self, transport: Transport) {
            self.transport = Some(transport);
        }
        fn data_received(&mut self, data: &[u8]) {
            if let Some(t) = &self.transport {
                t.write(data);
            }
        }
        fn connection_lost(&mut self, _error: Option<io::Error>) {
            self.transport = None;
        }
    }

    /// Echoes `stream` back to itself until end of stream (task-based servers). Returns the
    /// number of bytes echoed.
    pub async fn echo_stream<S: AsyncRead + AsyncWrite + Unpin>(stream: &mut S) -> io::Result<u64> {
        let mut buf = vec![0u8; 16 * 1024];
        let mut total = 0u64;
        loop {
            let n = stream.read(&mut buf).await?;
            if n == 0 {
                return Ok(total);
            }
            stream.write_all(&buf[..n]).await?;
            total += n as u64;
        }
    }

    /// The fds open in this process right now (the entries of `/proc/self/fd`, without the
    /// one used to list them), sorted.
    pub fn open_fds() -> Vec<i32> {
        let mut fds: Vec<i32> = match std::fs::read_dir("/proc/self/fd") {
            Ok(dir) => dir
                .filter_map(|e| e.ok())
                .filter_map(|e| e.file_name().to_str().and_then(|n| n.parse().ok()))
                .collect(),
            Err(e) => panic!("cannot list /proc/self/fd: {e}"),
        };
        fds.sort_unstable();
        // The directory's own fd was the highest-numbered or a reused low number; it is closed
        // again now, so drop whichever entry no longer exists.
        fds.retain(|&fd| std::fs::symlink_metadata(format!("/proc/self/fd/{fd}")).is_ok());
        fds
    }

    /// How many fds are open in this process right now (see [`open_fds`]).
    pub fn open_fd_count() -> usize {
        open_fds().len()
    }
}

/// The full name of test function `$name` of the calling module, as `--exact` wants it: e.g.
/// `stacks::a_stack_overflow_...` for a test of `tests/tests/fiber/stacks.rs` (binary `fiber`),
/// or the bare name in a standalone file. For [`child::run`] and [`child::command`].
#[macro_export]
macro_rules! test_name {
    ($name:expr) => {
        $crate::child::test_path(module_path!(), $name)
    };
}

pub mod child {
    //! Re-running one test of the current test binary in a child process: for tests that change
    //! process-wide state (the fd limit) or must watch the whole process (signals).
    //!
    //! The test function checks [`is_child`] first: in the child it runs the scenario, in the
    //! parent it starts the child with [`command`] (or [`run`]), naming itself with
    //! [`test_name!`](crate::test_name), and judges its exit status.

    use std::process::{Command, Output};

    /// Whether this process is the child started for the environment variable `key`.
    pub fn is_child(key: &str) -> bool {
        std::env::var(key).is_ok_and(|v| v == "1")
    }

    /// The full name the test harness gives test function `name` of module `module` (a
    /// `module_path!()`): the module path without its first segment, the binary's own name, then
    /// `name`. [`test_name!`](crate::test_name) calls it with the caller's module.
    pub fn test_path(module: &str, name: &str) -> String {
        match module.split_once("::") {
            Some((_, inner)) => format!("{inner}::{name}"),
            None => name.to_string(),
        }
    }

    /// The command that re-runs exactly the test `test` (its full name, e.g. `my_test` or
    /// `module::my_test`: see [`test_name!`](crate::test_name)) of the current binary with `key=1`
    /// in its environment, output not captured, one test thread (ignored tests included, so an
    /// ignored test can re-run itself).
    pub fn command(test: &str, key: &str) -> Command {
        let exe = std::env::current_exe().expect("the path of the running test binary");
        let mut cmd = Command::new(exe);
        cmd.args(["--exact", test, "--nocapture", "--test-threads=1", "--include-ignored"])
            .env(key, "1");
        cmd
    }

    /// Runs [`command`] to completion and returns its output.
    pub fn run(test: &str, key: &str) -> Output {
        command(test, key)
            .output()
            .expect("could not start the child test process")
    }

    /// Panics (printing the child's output) unless it exited with status 0 after running
    /// exactly one test; prints the child's output otherwise too, for the record.
    pub fn assert_success(what: &str, out: &Output) {
        let stdout = String::from_utf8_lossy(&out.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr);
        let ran_one = stdout.contains("1 passed") || stdout.contains("test result: ok. 1 passed");
        if !out.status.success() || !ran_one {
            panic!(
                "{what}: the child test process failed ({}), or did not run exactly one test\n--- child stdout ---\n{stdout}\n--- child stderr ---\n{stderr}",
                out.status
            );
        }
        println!("--- {what}: child stdout ---\n{stdout}");
    }
}

pub mod server {
    //! Running a server from `runtime/examples/` in the background of a test: its own thread,
    //! its own evloop loop, a listener on a free loopback port; stopped and joined on drop, so
    //! the test's std-only client can talk to it with blocking calls.

    use std::future::Future;
    use std::net::SocketAddr;
    use std::sync::mpsc;
    use std::thread::JoinHandle;

    use evloop::net::TcpListener;
    use evloop::{EventLoop, RemoteHandle};

    /// A server running on a thread of its own; dropping it stops the loop (closing every
    /// socket the server held) and joins the thread.
    pub struct BackgroundServer {
        addr: SocketAddr,
        remote: RemoteHandle,
        thread: Option<JoinHandle<()>>,
    }

    impl BackgroundServer {
        /// Binds `127.0.0.1:0` on a new loop in a new thread and runs `serve(listener)` there.
        ///
        /// Panics if the thread cannot start the loop or bind.
        pub fn start<F, Fut>(serve: F) -> BackgroundServer
        where
            F: FnOnce(TcpListener) -> Fut + Send + 'static,
            Fut: Future + 'static,
        {
            let (tx, rx) = mpsc::channel();
            let thread = std::thread::spawn(move || {
                let lp = EventLoop::new().expect("a loop for the server");
                let remote = lp.remote();
                let _ = lp.run_until_complete(async move {
                    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind 127.0.0.1:0");
                    let addr = listener.local_addr().expect("local_addr");
                    let _ = tx.send((addr, remote));
                    serve(listener).await;
                });
            });
            let (addr, remote) = rx
                .recv_timeout(crate::HANG)
                .expect("the server thread started and bound its listener");
            BackgroundServer {
                addr,
                remote,
                thread: Some(thread),
            }
        }

        /// Where it listens.
        pub fn addr(&self) -> SocketAddr {
            self.addr
        }
    }

    impl Drop for BackgroundServer {
        fn drop(&mut self) {
            let _ = self.remote.stop();
            if let Some(t) = self.thread.take() {
                let _ = t.join();
            }
        }
    }
}
