//! One loop's thread: it builds its `EventLoop`, reports the loop's `RemoteHandle` and load
//! counters to the builder, waits for the pool, then runs the loop until the runtime stops.
//!
//! The thread's loop state (`LoopState`: its index, the pool, the stop event) is a
//! thread-local, so that a `Send` closure arriving through `call_soon_threadsafe` (a stop,
//! work from `spawn_on_each`) finds it on the loop's own thread. The stop runs in three steps
//! on every loop: the stop event is set (listeners stop accepting), the loop waits for its
//! live connections to end within the grace period, then its leftover tasks are cancelled
//! and the loop closes. Panics of the work or of the thread are caught and recorded in the
//! pool, which stops the other loops.

use std::cell::RefCell;
use std::future::Future;
use std::io;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::rc::Rc;
use std::sync::{Arc, mpsc};
use std::time::{Duration, Instant};

use evloop_syscalls as sys;

use crate::event_loop::load::Load;
use crate::event_loop::{EventLoop, Panic, RemoteHandle};
use crate::os::signal::Signal;
use crate::runtime::error::{Failure, LoopFailure};
use crate::runtime::pool::{Handle, Pool};
use crate::task::promise::Promise;
use crate::task::spawn::{cancel_leftover_tasks, spawn};
use crate::task::time::sleep;

/// Where trace lines of every loop go (each already names its loop).
pub(crate) type SharedSink = Arc<dyn Fn(&str) + Send + Sync>;

/// What a loop's thread is started with.
pub(crate) struct LoopConfig {
    pub(crate) index: usize,
    pub(crate) cpu: Option<usize>,
    pub(crate) trace: bool,
    pub(crate) sink: Option<SharedSink>,
    pub(crate) signals: bool,
}

/// What the thread reports once its loop exists.
pub(crate) type Ready = (usize, io::Result<(RemoteHandle, Arc<Load>)>);

/// A loop's own state, on its thread.
pub(crate) struct LoopState {
    pub(crate) index: usize,
    pub(crate) pool: Arc<Pool>,
    /// Set once when the runtime stops: listeners stop accepting.
    pub(crate) stop: Promise<()>,
    /// Listener and server parts (`Group::serve`) running on this loop: the stop waits for
    /// them too (a least-connections part still receives the fds the acceptor sent before it
    /// stopped).
    pub(crate) serving: std::cell::Cell<usize>,
}

thread_local! {
    static CURRENT: RefCell<Option<Rc<LoopState>>> = const { RefCell::new(None) };
}

pub(crate) fn current() -> Option<Rc<LoopState>> {
    CURRENT.with(|c| c.borrow().clone())
}

/// The stop, as it arrives on each loop through `call_soon_threadsafe`.
pub(crate) fn begin_stop() {
    if let Some(st) = current() {
        let _ = st.stop.set_result(());
    }
}

/// Runs `make(ctx)` as this loop's work; its panic or error is the loop's failure.
pub(crate) fn spawn_work<F, Fut>(index: usize, make: F)
where
    F: FnOnce(Context) -> Fut,
    Fut: Future<Output = io::Result<()>> + 'static,
{
    let Some(st) = current() else { return };
    let pool = st.pool.clone();
    let work = spawn(make(Context { st }));
    drop(spawn(async move {
        match work.await {
            Ok(Ok(())) => {}
            Ok(Err(e)) => pool.fail(LoopFailure::new(index, Failure::Error(e))),
            Err(e) => {
                if let Some(p) = e.into_panic() {
                    pool.fail(LoopFailure::new(index, Failure::Panic(p)));
                }
            }
        }
    }));
}

/// The loop a piece of per-loop work runs on: its index, the runtime's [`Handle`], and the
/// runtime's stop. Given to the factory of
/// [`Runtime::spawn_on_each`](crate::runtime::Runtime::spawn_on_each); not `Send` (it belongs
/// to its loop's thread).
///
/// ```
/// let rt = evloop::runtime::Builder::new().loops(2).build()?;
/// rt.spawn_on_each(|ctx| async move {
///     assert!(ctx.index() < ctx.loops());
///     ctx.stopped().await; // until the runtime stops
///     Ok(())
/// });
/// rt.shutdown()?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone)]
pub struct Context {
    pub(crate) st: Rc<LoopState>,
}

impl Context {
    /// The context of the runtime loop this thread runs, `None` elsewhere.
    ///
    /// ```
    /// assert!(evloop::runtime::Context::current().is_none()); // not a runtime's loop thread
    /// ```
    pub fn current() -> Option<Context> {
        current().map(|st| Context { st })
    }

    /// This loop's index, 0 to `loops() - 1`.
    ///
    /// ```
    /// let rt = evloop::runtime::Builder::new().loops(1).build()?;
    /// assert_eq!(rt.block_on(|| async { evloop::runtime::Context::current().unwrap().index() })?, 0);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn index(&self) -> usize {
        self.st.index
    }

    /// How many loops the runtime has.
    ///
    /// ```
    /// let rt = evloop::runtime::Builder::new().loops(2).build()?;
    /// assert_eq!(rt.block_on(|| async { evloop::runtime::Context::current().unwrap().loops() })?, 2);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn loops(&self) -> usize {
        self.st.pool.loops.len()
    }

    /// The runtime's handle (`spawn_on` another loop, `shutdown`, statistics).
    ///
    /// ```
    /// let rt = evloop::runtime::Builder::new().loops(2).build()?;
    /// let other = rt.block_on(|| async {
    ///     let ctx = evloop::runtime::Context::current().unwrap();
    ///     let (tx, mut rx) = evloop::sync::threadsafe::channel();
    ///     ctx.handle()
    ///         .spawn_on(1, move || async move {
    ///             let _ = tx.send(evloop::runtime::Context::current().unwrap().index());
    ///         })
    ///         .unwrap();
    ///     rx.recv().await
    /// })?;
    /// assert_eq!(other, Some(1));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn handle(&self) -> Handle {
        Handle {
            pool: self.st.pool.clone(),
        }
    }

    /// Whether the runtime is stopping.
    ///
    /// ```
    /// let rt = evloop::runtime::Builder::new().loops(1).build()?;
    /// assert!(!rt.block_on(|| async { evloop::runtime::Context::current().unwrap().is_stopping() })?);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn is_stopping(&self) -> bool {
        self.st.stop.done()
    }

    /// Completes when the runtime starts its shutdown (work that accepts connections or
    /// polls for jobs stops there; the grace period then runs).
    ///
    /// ```
    /// let rt = evloop::runtime::Builder::new().loops(1).build()?;
    /// rt.spawn_on_each(|ctx| async move {
    ///     ctx.stopped().await;
    ///     assert!(ctx.is_stopping());
    ///     Ok(())
    /// });
    /// rt.shutdown()?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub async fn stopped(&self) {
        let _ = self.st.stop.wait().await;
    }
}

impl std::fmt::Debug for Context {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "runtime::Context(loop {} of {})", self.index(), self.loops())
    }
}

/// A trace line named after its loop: `[iter 7] ...` becomes `[loop 2 iter 7] ...`; the
/// indented lines of an iteration and the rest get `[loop 2] ` in front.
pub(crate) fn loop_trace_line(index: usize, line: &str) -> String {
    match line.strip_prefix("[iter ") {
        Some(rest) => format!("[loop {index} iter {rest}"),
        None => format!("[loop {index}] {line}"),
    }
}

/// The thread's body.
pub(crate) fn thread_main(cfg: LoopConfig, ready: mpsc::Sender<Ready>, go: mpsc::Receiver<Arc<Pool>>) {
    let index = cfg.index;
    if let Some(cpu) = cfg.cpu {
        if let Err(e) = sys::pin_thread_to_cpu(cpu) {
            let _ = ready.send((index, Err(e)));
            return;
        }
    }
    let mut builder = crate::event_loop::Builder::new().measure_busy(true);
    if cfg.trace {
        builder = builder.trace(true);
    }
    let sink = cfg.sink.clone();
    builder = builder.trace_sink(move |line| {
        let line = loop_trace_line(index, line);
        match &sink {
            Some(s) => s(&line),
            None => eprintln!("{line}"),
        }
    });
    let lp = match builder.build() {
        Ok(lp) => lp,
        Err(e) => {
            let _ = ready.send((index, Err(io::Error::other(e))));
            return;
        }
    };
    let _ = ready.send((index, Ok((lp.remote(), lp.handle().inner.load.clone()))));
    drop(ready);
    let Ok(pool) = go.recv() else {
        // The builder gave up (another loop could not start): close quietly.
        let _ = lp.close();
        return;
    };
    let result = catch_unwind(AssertUnwindSafe(|| run(&lp, &cfg, &pool)));
    if let Err(payload) = result {
        pool.fail(LoopFailure::new(index, Failure::Panic(Panic::from_payload(payload))));
    }
    CURRENT.with(|c| c.borrow_mut().take());
    let _ = lp.close();
}

fn run(lp: &EventLoop, cfg: &LoopConfig, pool: &Arc<Pool>) {
    let st = Rc::new(LoopState {
        index: cfg.index,
        pool: pool.clone(),
        stop: lp.create_future(),
        serving: std::cell::Cell::new(0),
    });
    CURRENT.with(|c| *c.borrow_mut() = Some(st.clone()));
    let signals: &[Signal] = if cfg.signals && cfg.index == 0 {
        &[Signal::INT, Signal::TERM]
    } else {
        &[]
    };
    for &sig in signals {
        let p = pool.clone();
        if let Err(e) = lp.add_signal_handler(sig, move || p.request_stop()) {
            pool.fail(LoopFailure::new(cfg.index, Failure::Start(e)));
        }
    }
    if pool.is_stopping() {
        let _ = st.stop.set_result(());
    }
    let _ = lp.run_until_complete(stop_sequence(st, pool.grace));
    cancel_leftover_tasks(lp);
    lp.shutdown_default_executor();
    for &sig in signals {
        lp.remove_signal_handler(sig);
    }
}

/// The loop's part of the shutdown: wait for the stop, then for the live connections (at most
/// the grace period); the caller then cancels what is left.
async fn stop_sequence(st: Rc<LoopState>, grace: Duration) {
    let _ = st.stop.wait().await;
    let load = st.pool.loops[st.index].load.clone();
    let lp = crate::event_loop::get_running_loop().ok();
    let trace = |line: String| {
        if let Some(lp) = &lp {
            lp.trace(|| line);
        }
    };
    trace(format!(
        "  stop: no more accepts; {} connection(s) live, grace {grace:?}",
        load.live()
    ));
    // `None`: a grace too long to add to now (`Duration::MAX`), which means "wait for them all".
    let deadline = Instant::now().checked_add(grace);
    while (load.live() > 0 || st.serving.get() > 0) && deadline.is_none_or(|d| Instant::now() < d) {
        sleep(Duration::from_millis(1)).await;
    }
    match load.live() {
        0 => trace("  stop: every connection finished".to_string()),
        n => trace(format!(
            "  stop: {n} connection(s) still open after the grace period: cancelled"
        )),
    }
}
