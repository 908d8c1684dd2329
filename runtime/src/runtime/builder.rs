//! [`Builder`]: the options of a multi-loop runtime, and its start: N threads, each building
//! its own loop (pinned first, if asked), reporting its `RemoteHandle` back; the pool is made
//! from all of them and handed to every thread, which only then runs. If one loop cannot
//! start, the others are released and joined and the error comes back: no thread is left.

use std::io;
use std::sync::{Arc, mpsc};
use std::time::Duration;

use evloop_syscalls as sys;

use crate::runtime::error::{Failure, LoopFailure, RuntimeError};
use crate::runtime::pool::{Handle, LoopEntry, Pool, Runtime};
use crate::runtime::worker::{self, LoopConfig, SharedSink};

/// Options of a multi-loop [`Runtime`] (tokio's `runtime::Builder`): how many loops, pinned
/// or not, the grace period of the shutdown, signals, tracing.
///
/// ```
/// use std::time::Duration;
///
/// let rt = evloop::runtime::Builder::new()
///     .loops(2)
///     .thread_name("worker")
///     .grace_period(Duration::from_millis(100))
///     .build()?;
/// assert_eq!(rt.handle().loops(), 2);
/// rt.shutdown()?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[must_use = "builders do nothing until they are built, run or awaited"]
pub struct Builder {
    loops: usize,
    pin: bool,
    name: String,
    grace: Duration,
    signals: bool,
    trace: bool,
    sink: Option<SharedSink>,
}

impl Default for Builder {
    fn default() -> Self {
        Builder::new()
    }
}

impl Builder {
    /// Defaults: one loop per CPU the process may use, not pinned, threads named
    /// `evloop-loop-<i>`, a 5 s grace period, no signal handling, tracing as `EVLOOP_TRACE`
    /// says.
    ///
    /// ```
    /// let rt = evloop::runtime::Builder::new().build()?;
    /// assert_eq!(rt.handle().loops(), std::thread::available_parallelism()?.get());
    /// rt.shutdown()?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn new() -> Builder {
        Builder {
            loops: std::thread::available_parallelism().map_or(1, |n| n.get()),
            pin: false,
            name: "evloop-loop".to_string(),
            grace: Duration::from_secs(5),
            signals: false,
            trace: std::env::var("EVLOOP_TRACE").is_ok_and(|v| !v.is_empty() && v != "0"),
            sink: None,
        }
    }

    /// The number of loops (threads), at least 1.
    ///
    /// ```
    /// let rt = evloop::runtime::Builder::new().loops(3).build()?;
    /// assert_eq!(rt.handle().loops(), 3);
    /// # rt.shutdown()?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn loops(mut self, n: usize) -> Self {
        self.loops = n.max(1);
        self
    }

    /// Pins loop `i` to the `i`-th CPU the process may use (`sched_setaffinity`), wrapping
    /// around when there are more loops than CPUs. Needed by
    /// [`Policy::ReusePortCpu`](crate::runtime::Policy::ReusePortCpu).
    ///
    /// ```
    /// let rt = evloop::runtime::Builder::new().loops(1).pin_to_cpus(true).build()?;
    /// assert!(rt.handle().stats().loops()[0].cpu.is_some());
    /// # rt.shutdown()?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn pin_to_cpus(mut self, on: bool) -> Self {
        self.pin = on;
        self
    }

    /// Thread names are `<prefix>-<index>` (shown by `top -H`, debuggers, panics).
    ///
    /// ```
    /// let rt = evloop::runtime::Builder::new().loops(1).thread_name("web").build()?;
    /// let name = rt.block_on(|| async { std::thread::current().name().map(String::from) })?;
    /// assert_eq!(name.as_deref(), Some("web-0"));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn thread_name(mut self, prefix: impl Into<String>) -> Self {
        self.name = prefix.into();
        self
    }

    /// How long a stopping loop lets its live connections finish before it cancels them.
    ///
    /// ```
    /// let rt = evloop::runtime::Builder::new().loops(1).grace_period(std::time::Duration::ZERO).build()?;
    /// rt.shutdown()?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn grace_period(mut self, grace: Duration) -> Self {
        self.grace = grace;
        self
    }

    /// SIGINT and SIGTERM start the runtime's shutdown (watched by loop 0 through
    /// [`add_signal_handler`](crate::event_loop::LoopHandle::add_signal_handler); the old
    /// dispositions are back once the runtime has stopped).
    ///
    /// ```
    /// let rt = evloop::runtime::Builder::new().loops(2).shutdown_on_signals(true).build()?;
    /// # std::thread::sleep(std::time::Duration::from_millis(20));
    /// evloop_syscalls::raise_in_process(evloop::signal::Signal::TERM)?;
    /// rt.wait()?; // the signal stopped it
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn shutdown_on_signals(mut self, on: bool) -> Self {
        self.signals = on;
        self
    }

    /// Trace mode on every loop; each line names its loop (`[loop 1 iter 7] ...`).
    ///
    /// ```
    /// let rt = evloop::runtime::Builder::new().loops(1).trace(true).trace_sink(|_line| ()).build()?;
    /// # rt.shutdown()?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn trace(mut self, on: bool) -> Self {
        self.trace = on;
        self
    }

    /// Sends every loop's trace lines to `sink` (called on the loop's thread) instead of
    /// stderr.
    ///
    /// ```
    /// use std::sync::{Arc, Mutex};
    ///
    /// let lines = Arc::new(Mutex::new(Vec::new()));
    /// let l = lines.clone();
    /// let rt = evloop::runtime::Builder::new()
    ///     .loops(2)
    ///     .trace(true)
    ///     .trace_sink(move |line| l.lock().unwrap().push(line.to_string()))
    ///     .build()?;
    /// rt.shutdown()?;
    /// assert!(lines.lock().unwrap().iter().any(|l| l.starts_with("[loop 1 iter ")));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn trace_sink(mut self, sink: impl Fn(&str) + Send + Sync + 'static) -> Self {
        self.sink = Some(Arc::new(sink));
        self
    }

    /// Starts the threads, one loop each, and returns once every loop is ready. Errors: a
    /// thread, a loop or a pinning could not be made (the threads already started are
    /// stopped and joined first).
    ///
    /// ```
    /// let rt = evloop::runtime::Builder::new().loops(2).build()?;
    /// rt.shutdown()?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn build(self) -> Result<Runtime, RuntimeError> {
        let cpus = if self.pin {
            sys::allowed_cpus().map_err(|e| start_error(0, e))?
        } else {
            Vec::new()
        };
        let (ready_tx, ready_rx) = mpsc::channel();
        let mut threads = Vec::new();
        let mut gos = Vec::new();
        let mut failure = None;
        for index in 0..self.loops {
            let (go_tx, go_rx) = mpsc::channel();
            let cfg = LoopConfig {
                index,
                cpu: (!cpus.is_empty()).then(|| cpus[index % cpus.len()]),
                trace: self.trace,
                sink: self.sink.clone(),
                signals: self.signals,
            };
            let ready = ready_tx.clone();
            let spawned = std::thread::Builder::new()
                .name(format!("{}-{index}", self.name))
                .spawn(move || worker::thread_main(cfg, ready, go_rx));
            match spawned {
                Ok(t) => {
                    threads.push(t);
                    gos.push(go_tx);
                }
                Err(e) => {
                    failure = Some(start_error(index, e));
                    break;
                }
            }
        }
        drop(ready_tx);
        let mut entries: Vec<Option<LoopEntry>> = (0..threads.len()).map(|_| None).collect();
        for (index, reported) in ready_rx.iter() {
            match reported {
                Ok((remote, load)) => {
                    entries[index] = Some(LoopEntry {
                        remote,
                        load,
                        cpu: (!cpus.is_empty()).then(|| cpus[index % cpus.len()]),
                    })
                }
                Err(e) => {
                    failure.get_or_insert_with(|| start_error(index, e));
                }
            }
        }
        if let Some(err) = failure {
            drop(gos); // every ready thread sees the pool will not come, closes its loop, ends
            for t in threads {
                let _ = t.join();
            }
            return Err(err);
        }
        let pool = Arc::new(Pool::new(entries.into_iter().flatten().collect(), self.grace));
        for go in gos {
            let _ = go.send(pool.clone());
        }
        Ok(Runtime {
            handle: Handle { pool },
            threads,
        })
    }
}

fn start_error(index: usize, e: io::Error) -> RuntimeError {
    RuntimeError::new(vec![LoopFailure::new(index, Failure::Start(e))])
}

impl std::fmt::Debug for Builder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Builder")
            .field("loops", &self.loops)
            .field("pin", &self.pin)
            .field("grace", &self.grace)
            .finish_non_exhaustive()
    }
}
