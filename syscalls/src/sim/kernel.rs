//! The public handle of a simulated kernel: creating one, putting threads on it, and reading
//! back what happened (tape, trace, statistics).

use std::marker::PhantomData;
use std::sync::{Arc, Condvar, Mutex, Once};
use std::time::Duration;

use crate::sim::choice::Tape;
use crate::sim::config::Config;
use crate::sim::faults::{FaultClass, Faults};
use crate::sim::sched::{self, Shared};
use crate::sim::state::{State, Stats};
use crate::sim::{install, uninstall, with_current};

/// A simulated kernel: the network, files, clock and threads of one simulated machine, and
/// the seed that decides everything the real kernel would leave to chance.
///
/// A thread runs on it between [`Kernel::enter`] and the drop of the returned guard: every
/// wrapper of this crate the thread calls is answered by the simulation instead of Linux
/// (see the [module documentation](crate::sim)). More threads join with [`Kernel::spawn`].
///
/// ```
/// use evloop_syscalls::{self as sys, sim::Kernel};
///
/// let kernel = Kernel::new(42);
/// {
///     let _on = kernel.enter();
///     let (r, w) = sys::pipe2()?; // simulated: no bytes ever reach a real pipe
///     sys::write(std::os::fd::AsFd::as_fd(&w), b"hi")?;
///     let mut buf = [0; 8];
///     assert_eq!(sys::read(std::os::fd::AsFd::as_fd(&r), &mut buf)?, 2);
/// }
/// assert!(kernel.trace().contains("read(#1, 8) = 2"));
/// # Ok::<(), std::io::Error>(())
/// ```
#[derive(Clone)]
pub struct Kernel {
    shared: Arc<Shared>,
}

impl std::fmt::Debug for Kernel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Kernel")
            .field("seed", &self.seed())
            .finish_non_exhaustive()
    }
}

/// Raises the soft descriptor limit to the hard one, once per process: each simulated file
/// costs two real descriptors (see `backing`).
fn raise_fd_limit() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let mut rlim = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        // SAFETY: getrlimit/setrlimit read and write one `struct rlimit`, a live local.
        unsafe {
            if libc::getrlimit(libc::RLIMIT_NOFILE, &mut rlim) == 0 && rlim.rlim_cur < rlim.rlim_max {
                rlim.rlim_cur = rlim.rlim_max;
                libc::setrlimit(libc::RLIMIT_NOFILE, &rlim);
            }
        }
    });
}

impl Kernel {
    /// A kernel with the default [`Config`].
    ///
    /// # Panics
    /// If the process cannot open one more real descriptor (the kernel's watch).
    pub fn new(seed: u64) -> Kernel {
        Kernel::with_config(seed, Config::default())
    }

    /// A kernel with `cfg`.
    ///
    /// # Panics
    /// As [`Kernel::new`].
    pub fn with_config(seed: u64, cfg: Config) -> Kernel {
        raise_fd_limit();
        let state = match State::new(seed, cfg) {
            Ok(s) => s,
            Err(e) => panic!("simulated kernel: cannot create its watch epoll: {e}"),
        };
        Kernel {
            shared: Arc::new(Shared {
                state: Mutex::new(state),
                cv: Condvar::new(),
                seed,
            }),
        }
    }

    /// Puts the calling thread on this kernel until the guard drops. The first thread to enter
    /// runs at once; a later one waits for its turn (but prefer [`Kernel::spawn`] for later
    /// threads: when a thread is started outside the kernel, the moment it enters is real
    /// time, not the seed's choice).
    ///
    /// # Panics
    /// If the thread already runs on a simulated kernel.
    pub fn enter(&self) -> Entered {
        let me = self.shared.lock().sched.register();
        self.start(me)
    }

    fn start(&self, me: usize) -> Entered {
        install(&self.shared, me);
        let st = self.shared.lock();
        drop(sched::wait_turn(&self.shared, st, me));
        Entered {
            shared: self.shared.clone(),
            me,
            _not_send: PhantomData,
        }
    }

    /// Starts `f` on a new thread that runs on this kernel. The thread is registered now, so
    /// when it first runs is the seed's choice, not the real scheduler's.
    ///
    /// ```
    /// use std::time::Duration;
    /// use evloop_syscalls::sim::{self, Kernel};
    ///
    /// let kernel = Kernel::new(3);
    /// let _on = kernel.enter();
    /// let worker = kernel.spawn(|| {
    ///     sim::sleep(Duration::from_secs(60)); // simulated: no real minute passes
    ///     42
    /// });
    /// assert_eq!(worker.join().unwrap(), 42);
    /// assert!(kernel.elapsed() >= Duration::from_secs(60));
    /// ```
    pub fn spawn<F, T>(&self, f: F) -> JoinHandle<T>
    where
        F: FnOnce() -> T + Send + 'static,
        T: Send + 'static,
    {
        let me = self.shared.lock().sched.register();
        let kernel = self.clone();
        let inner = std::thread::Builder::new()
            .name(format!("sim-thread-{me}"))
            .spawn(move || {
                let _on = kernel.start(me);
                f()
            });
        match inner {
            Ok(inner) => JoinHandle { inner, me },
            Err(e) => {
                // The thread never ran: it must not hold up the others.
                let st = self.shared.lock();
                drop(sched::exit(&self.shared, st, me));
                panic!("simulated kernel: cannot spawn a thread: {e}");
            }
        }
    }

    /// The seed.
    pub fn seed(&self) -> u64 {
        self.shared.seed
    }

    /// The kernel the calling thread runs on (`None` off the simulation): how a test body run
    /// by `#[evloop::test(simulate)]` reaches its kernel, to spawn a thread or inject a fault.
    ///
    /// ```
    /// use evloop_syscalls::sim::Kernel;
    ///
    /// assert!(Kernel::current().is_none());
    /// let kernel = Kernel::new(5);
    /// let _on = kernel.enter();
    /// assert_eq!(Kernel::current().map(|k| k.seed()), Some(5));
    /// ```
    pub fn current() -> Option<Kernel> {
        crate::sim::current_shared().map(|shared| Kernel { shared })
    }

    /// Simulated time since the machine booted (`CLOCK_MONOTONIC`).
    pub fn now(&self) -> Duration {
        Duration::from_nanos(self.shared.lock().now())
    }

    /// Simulated time since the kernel was created.
    pub fn elapsed(&self) -> Duration {
        let st = self.shared.lock();
        Duration::from_nanos(st.now().saturating_sub(st.cfg.boot_time))
    }

    /// The decisions made so far (empty when recording is off): replay them with
    /// [`Config::replay`].
    pub fn tape(&self) -> Tape {
        self.shared.lock().choice.tape()
    }

    /// The trace records kept, one line each.
    pub fn trace(&self) -> String {
        self.shared.lock().trace.text(None)
    }

    /// The last `n` trace lines.
    pub fn trace_tail(&self, n: usize) -> String {
        self.shared.lock().trace.text(Some(n))
    }

    /// The digest of every trace record so far: two runs took the same path exactly when their
    /// digests (and record counts) are equal.
    pub fn digest(&self) -> u64 {
        self.shared.lock().trace.digest()
    }

    /// How many trace records were made (kept or not).
    pub fn records(&self) -> u64 {
        self.shared.lock().trace.count()
    }

    /// Counters of what the kernel did.
    pub fn stats(&self) -> Stats {
        let st = self.shared.lock();
        Stats {
            real_calls: st.watch.real_calls,
            ..st.stats
        }
    }

    /// The fault rates in force (a swarm's drawn profile).
    pub fn faults(&self) -> Faults {
        self.shared.lock().faults.rates.clone()
    }

    /// Makes one fault of `class` fire at its next opportunity, whatever the rates say.
    pub fn inject(&self, class: FaultClass) {
        self.shared.lock().faults.forced.add(class);
    }

    /// How many simulated threads had not finished when the first thread that entered the
    /// kernel left it (0 once every thread is joined in time). Threads left running keep
    /// taking turns after the program returned, so what is read from the kernel then (its
    /// trace, its digest) depends on real timing.
    pub fn threads_left_behind(&self) -> usize {
        self.shared.lock().sched.left_behind
    }

    /// Whether the simulation stalled (see [`Config::stall_timeout`]).
    pub fn stalled(&self) -> bool {
        self.shared.lock().stalled
    }

    /// Whether this kernel replays a tape ([`Config::replay`]) instead of drawing from its seed.
    pub fn replaying(&self) -> bool {
        self.shared.lock().choice.replaying()
    }
}

/// The guard of [`Kernel::enter`]: the thread leaves the kernel when it drops.
pub struct Entered {
    shared: Arc<Shared>,
    me: usize,
    _not_send: PhantomData<*const ()>,
}

impl std::fmt::Debug for Entered {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Entered").field("thread", &self.me).finish()
    }
}

impl Drop for Entered {
    fn drop(&mut self) {
        uninstall();
        let mut st = self.shared.lock();
        // What the thread closed last takes effect now, not at a moment real time picks.
        st.reap();
        drop(sched::exit(&self.shared, st, self.me));
    }
}

/// A thread started with [`Kernel::spawn`].
#[derive(Debug)]
pub struct JoinHandle<T> {
    inner: std::thread::JoinHandle<T>,
    me: usize,
}

impl<T> JoinHandle<T> {
    /// Waits for the thread to finish. On a simulated thread the wait is simulated (other
    /// threads run, the clock moves); elsewhere it is `std`'s join.
    pub fn join(self) -> std::thread::Result<T> {
        with_current(|sh, me| {
            let mut st = sh.lock();
            st.reap();
            drop(sched::join(sh, st, me, self.me));
        });
        self.inner.join()
    }

    /// The simulated thread's number (`T<n>` in the trace).
    pub fn thread(&self) -> usize {
        self.me
    }
}

/// Sleeps for `d` of simulated time on a simulated thread (other threads run, the clock moves
/// when everyone waits); on any other thread, `std::thread::sleep`.
pub fn sleep(d: Duration) {
    let simulated = with_current(|sh, me| {
        let mut st = sh.lock();
        st.reap();
        let deadline = st.now().saturating_add(u64::try_from(d.as_nanos()).unwrap_or(u64::MAX));
        while st.now() < deadline && !st.stalled {
            st = sched::block(sh, st, me, None, Some(deadline));
        }
    });
    if simulated.is_none() {
        std::thread::sleep(d);
    }
}

/// Whether the calling thread runs on a simulated kernel.
pub fn is_active() -> bool {
    crate::sim::active()
}
