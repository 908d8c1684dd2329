//! The pool of loops and what other threads hold of it: [`Runtime`] (the owner: it joins the
//! threads) and [`Handle`] (a `Send + Sync` clone for any thread or loop: `spawn_on`,
//! `shutdown`, the pool's statistics).
//!
//! The shared state is `Pool`: per loop its `RemoteHandle` (the only way into another
//! thread's loop) and its `Load` counters; the stop flag and the failures under one mutex, with
//! a condition variable for the thread that waits in [`Runtime::wait`]. A stop is one flag
//! set once, then one `call_soon_threadsafe` per loop that starts that loop's shutdown.

use std::future::Future;
use std::io;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::Duration;

use crate::event_loop::load::Load;
use crate::event_loop::{LoopError, RemoteHandle};
use crate::runtime::error::{Failure, LoopFailure, RuntimeError};
use crate::runtime::stats::{LoopLoad, PoolStats};
use crate::runtime::worker::{self, Context};

/// One loop as the other threads see it.
pub(crate) struct LoopEntry {
    pub(crate) remote: RemoteHandle,
    pub(crate) load: Arc<Load>,
    /// The CPU the loop's thread is pinned to.
    pub(crate) cpu: Option<usize>,
}

#[derive(Default)]
struct PoolState {
    stopping: bool,
    failures: Vec<LoopFailure>,
}

/// What every loop and handle of one runtime shares.
pub(crate) struct Pool {
    pub(crate) loops: Vec<LoopEntry>,
    pub(crate) grace: Duration,
    state: Mutex<PoolState>,
    stopped: Condvar,
}

impl Pool {
    pub(crate) fn new(loops: Vec<LoopEntry>, grace: Duration) -> Pool {
        Pool {
            loops,
            grace,
            state: Mutex::new(PoolState::default()),
            stopped: Condvar::new(),
        }
    }

    fn lock(&self) -> MutexGuard<'_, PoolState> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Starts the one shutdown: every loop is told once (a loop already closed is skipped).
    pub(crate) fn request_stop(&self) {
        {
            let mut st = self.lock();
            if st.stopping {
                return;
            }
            st.stopping = true;
        }
        self.stopped.notify_all();
        for entry in &self.loops {
            let _ = entry.remote.call_soon_threadsafe(worker::begin_stop);
        }
    }

    pub(crate) fn is_stopping(&self) -> bool {
        self.lock().stopping
    }

    /// Records a loop's failure and stops the whole pool.
    pub(crate) fn fail(&self, failure: LoopFailure) {
        self.lock().failures.push(failure);
        self.request_stop();
    }

    fn wait_stopping(&self) {
        let mut st = self.lock();
        while !st.stopping {
            st = self.stopped.wait(st).unwrap_or_else(|p| p.into_inner());
        }
    }

    fn take_failures(&self) -> Vec<LoopFailure> {
        std::mem::take(&mut self.lock().failures)
    }
}

/// A `Send + Sync` handle to a running [`Runtime`]: reach any loop from any thread or loop.
///
/// ```
/// let rt = evloop::runtime::Builder::new().loops(2).build()?;
/// let handle = rt.handle().clone();
/// let (tx, rx) = std::sync::mpsc::channel();
/// handle.spawn_on(1, move || async move {
///     tx.send(evloop::runtime::Context::current().map(|c| c.index())).unwrap();
/// })?;
/// assert_eq!(rx.recv()?, Some(1)); // the future was built and ran on loop 1
/// rt.shutdown()?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone)]
pub struct Handle {
    pub(crate) pool: Arc<Pool>,
}

impl Handle {
    /// How many loops the runtime has.
    ///
    /// ```
    /// let rt = evloop::runtime::Builder::new().loops(3).build()?;
    /// assert_eq!(rt.handle().loops(), 3);
    /// # rt.shutdown()?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn loops(&self) -> usize {
        self.pool.loops.len()
    }

    /// Builds a future on loop `index` with `f` and runs it there as a task (tokio's
    /// `spawn` aimed at one loop). `f` is `Send` and runs on the target loop's thread, so the
    /// future itself need not be `Send` (it may hold `Rc`s and the loop's sockets). A panic
    /// in the task goes to that loop's exception handler, as an `evloop::spawn`ed task's
    /// would; it does not stop the runtime.
    ///
    /// Errors: the loop has closed (the runtime stopped). Panics if `index >= loops()`.
    ///
    /// ```
    /// let rt = evloop::runtime::Builder::new().loops(2).build()?;
    /// let (tx, rx) = std::sync::mpsc::channel();
    /// for i in 0..2 {
    ///     let tx = tx.clone();
    ///     rt.handle().spawn_on(i, move || async move {
    ///         let here = std::rc::Rc::new(i); // not Send: fine, it never leaves the loop
    ///         tx.send(*here).unwrap();
    ///     })?;
    /// }
    /// let mut got = [rx.recv()?, rx.recv()?];
    /// got.sort();
    /// assert_eq!(got, [0, 1]);
    /// rt.shutdown()?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[track_caller]
    pub fn spawn_on<F, Fut>(&self, index: usize, f: F) -> Result<(), LoopError>
    where
        F: FnOnce() -> Fut + Send + 'static,
        Fut: Future<Output = ()> + 'static,
    {
        self.pool.loops[index].remote.call_soon_threadsafe(move || {
            drop(crate::task::spawn::spawn(f()));
        })
    }

    /// Loop `index`'s [`RemoteHandle`] (`call_soon_threadsafe`, ...). Panics if
    /// `index >= loops()`.
    ///
    /// ```
    /// let rt = evloop::runtime::Builder::new().loops(1).build()?;
    /// let (tx, rx) = std::sync::mpsc::channel();
    /// rt.handle().remote(0).call_soon_threadsafe(move || tx.send(()).unwrap())?;
    /// rx.recv()?;
    /// rt.shutdown()?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn remote(&self, index: usize) -> &RemoteHandle {
        &self.pool.loops[index].remote
    }

    /// Starts the runtime's shutdown and returns at once: every loop stops accepting, lets its
    /// connections finish within the grace period, then cancels what is left;
    /// [`Runtime::wait`] returns once every thread has ended.
    ///
    /// ```
    /// let rt = evloop::runtime::Builder::new().loops(2).build()?;
    /// let handle = rt.handle().clone();
    /// std::thread::spawn(move || handle.shutdown());
    /// rt.wait()?; // returns: the other thread stopped the runtime
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn shutdown(&self) {
        self.pool.request_stop();
    }

    /// Whether the shutdown has started.
    ///
    /// ```
    /// let rt = evloop::runtime::Builder::new().loops(1).build()?;
    /// assert!(!rt.handle().is_stopping());
    /// rt.handle().shutdown();
    /// assert!(rt.handle().is_stopping());
    /// rt.wait()?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn is_stopping(&self) -> bool {
        self.pool.is_stopping()
    }

    /// Every loop's load right now (accepted and live connections, busy time) and the pool's
    /// imbalance; readable from any thread.
    ///
    /// ```
    /// let rt = evloop::runtime::Builder::new().loops(2).build()?;
    /// let stats = rt.handle().stats();
    /// assert_eq!(stats.loops().len(), 2);
    /// assert_eq!(stats.loops()[0].accepted, 0);
    /// rt.shutdown()?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn stats(&self) -> PoolStats {
        PoolStats::new(
            self.pool
                .loops
                .iter()
                .map(|e| LoopLoad {
                    accepted: e.load.accepted(),
                    connections: e.load.live(),
                    busy: e.load.busy(),
                    cpu: e.cpu,
                })
                .collect(),
        )
    }
}

impl std::fmt::Debug for Handle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "runtime::Handle({} loops)", self.loops())
    }
}

/// N threads, each running its own event loop: the owner of a multi-loop runtime. Made by
/// [`Builder::build`](crate::runtime::Builder::build); the loops run until a shutdown
/// ([`Runtime::shutdown`], [`Handle::shutdown`], a signal with
/// [`Builder::shutdown_on_signals`](crate::runtime::Builder::shutdown_on_signals), or a loop's
/// failure). Dropping it shuts it down and joins its threads (failures are then printed, as
/// nobody can receive them).
///
/// ```
/// let rt = evloop::runtime::Builder::new().loops(2).build()?;
/// rt.spawn_on_each(|ctx| async move {
///     assert_eq!(ctx.loops(), 2);
///     Ok(())
/// });
/// rt.shutdown()?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct Runtime {
    pub(crate) handle: Handle,
    pub(crate) threads: Vec<JoinHandle<()>>,
}

impl Runtime {
    /// The handle other threads and loops use.
    ///
    /// ```
    /// let rt = evloop::runtime::Builder::new().loops(1).build()?;
    /// let h = rt.handle().clone();
    /// assert_eq!(h.loops(), 1);
    /// rt.shutdown()?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn handle(&self) -> &Handle {
        &self.handle
    }

    /// Runs `factory` on every loop's thread to build that loop's work (the future may be
    /// `!Send`: it is built where it runs). The work's outcome matters: a panic or an `Err`
    /// is the loop's failure, which stops the whole runtime and comes back from
    /// [`wait`](Runtime::wait) / [`shutdown`](Runtime::shutdown). Work that finishes with
    /// `Ok(())` leaves its loop running (for other work, `spawn_on`, connections).
    ///
    /// ```
    /// use std::sync::atomic::{AtomicUsize, Ordering};
    /// use std::sync::Arc;
    ///
    /// let rt = evloop::runtime::Builder::new().loops(2).build()?;
    /// let ran = Arc::new(AtomicUsize::new(0));
    /// let r = ran.clone();
    /// rt.spawn_on_each(move |_ctx| {
    ///     let r = r.clone();
    ///     async move {
    ///         r.fetch_add(1, Ordering::SeqCst);
    ///         Ok(())
    ///     }
    /// });
    /// while ran.load(Ordering::SeqCst) < 2 {
    ///     std::thread::yield_now();
    /// }
    /// rt.shutdown()?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn spawn_on_each<F, Fut>(&self, factory: F)
    where
        F: Fn(Context) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = io::Result<()>> + 'static,
    {
        let factory = Arc::new(factory);
        for (index, entry) in self.handle.pool.loops.iter().enumerate() {
            let factory = factory.clone();
            let _ = entry
                .remote
                .call_soon_threadsafe(move || worker::spawn_work(index, move |ctx| factory(ctx)));
        }
    }

    /// Runs the future `f` builds on loop 0 until it completes, then shuts the runtime down
    /// and returns the future's output (tokio's `Runtime::block_on`; what
    /// `#[evloop::main(loops = N)]` calls). The other loops serve whatever the future hands
    /// them (`spawn_on`, listeners). A panic in the future is loop 0's failure.
    ///
    /// ```
    /// let rt = evloop::runtime::Builder::new().loops(2).build()?;
    /// let n = rt.block_on(|| async {
    ///     let ctx = evloop::runtime::Context::current().expect("on a runtime loop");
    ///     ctx.index() + 40
    /// })?;
    /// assert_eq!(n, 40);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn block_on<F, Fut>(self, f: F) -> Result<Fut::Output, RuntimeError>
    where
        F: FnOnce() -> Fut + Send + 'static,
        Fut: Future + 'static,
        Fut::Output: Send + 'static,
    {
        let slot = Arc::new(Mutex::new(None));
        let out = slot.clone();
        let pool = self.handle.pool.clone();
        let sent = self.handle.pool.loops[0].remote.call_soon_threadsafe(move || {
            worker::spawn_work(0, move |_ctx| async move {
                let value = f().await;
                *out.lock().unwrap_or_else(|p| p.into_inner()) = Some(value);
                pool.request_stop();
                Ok(())
            })
        });
        if sent.is_err() {
            self.handle.pool.fail(LoopFailure::new(0, Failure::Cancelled));
        }
        self.wait()?;
        let value = slot.lock().unwrap_or_else(|p| p.into_inner()).take();
        value.ok_or_else(|| RuntimeError::new(vec![LoopFailure::new(0, Failure::Cancelled)]))
    }

    /// Waits until the runtime's shutdown starts (from another thread, a signal, a loop's
    /// failure), then until every loop has finished it; joins every thread. Returns every
    /// loop's failure, if any.
    ///
    /// ```
    /// let rt = evloop::runtime::Builder::new().loops(2).build()?;
    /// rt.spawn_on_each(|ctx| async move {
    ///     if ctx.index() == 0 {
    ///         ctx.handle().shutdown(); // the work decides the runtime is done
    ///     }
    ///     Ok(())
    /// });
    /// rt.wait()?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn wait(mut self) -> Result<(), RuntimeError> {
        self.handle.pool.wait_stopping();
        self.join()
    }

    /// Shuts the runtime down now: every loop stops accepting, lets its connections finish
    /// within the grace period ([`Builder::grace_period`](crate::runtime::Builder::grace_period)),
    /// cancels what is left and closes; every thread is joined. Returns every loop's failure.
    ///
    /// ```
    /// let rt = evloop::runtime::Builder::new().loops(4).build()?;
    /// rt.shutdown()?; // four threads started and joined
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn shutdown(mut self) -> Result<(), RuntimeError> {
        self.handle.pool.request_stop();
        self.join()
    }

    fn join(&mut self) -> Result<(), RuntimeError> {
        for (index, t) in self.threads.drain(..).enumerate() {
            // A loop thread catches its own panics and records them; a join error is a panic
            // in that bookkeeping itself, recorded here so that it is not lost either.
            if let Err(payload) = t.join() {
                let panic = crate::event_loop::Panic::from_payload(payload);
                self.handle.pool.fail(LoopFailure::new(index, Failure::Panic(panic)));
            }
        }
        let failures = self.handle.pool.take_failures();
        if failures.is_empty() {
            Ok(())
        } else {
            Err(RuntimeError::new(failures))
        }
    }
}

impl Drop for Runtime {
    fn drop(&mut self) {
        if self.threads.is_empty() {
            return;
        }
        self.handle.pool.request_stop();
        if let Err(e) = self.join() {
            eprintln!("evloop: runtime dropped: {e}");
        }
    }
}

impl std::fmt::Debug for Runtime {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Runtime({} loops)", self.handle.loops())
    }
}
