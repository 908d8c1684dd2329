//! The executor: a lazily started, bounded pool of plain threads for blocking work
//! (`run_in_executor`, asyncio's default `ThreadPoolExecutor`).
//!
//! Data flow: `run_in_executor(f)` wraps `f` in a job and pushes it on the pool's queue (a
//! `Mutex<VecDeque>` with a `Condvar`); a thread is started only when no idle thread can take the
//! job and the pool is below its bound (asyncio's default: `min(32, cores + 4)`). The job writes
//! its result into a shared slot and wakes the waker the awaiting task left there; that wake
//! crosses threads, so it reaches the loop through the loop's eventfd. A job that panics delivers
//! the panic to its awaiter as an error. A job dropped before it ran (the pool shut down) resolves
//! its awaiter with [`ExecutorError::Shutdown`], so no awaiter hangs. `set_default_executor`
//! retires a pool instead of shutting it down: its threads finish every job already given to
//! it, queued ones included, then exit.
//!
//! The pool itself knows nothing about the loop: it only moves closures to threads and results
//! back through wakers. The loop holds it in a slot (`event_loop::slots`, key
//! `DEFAULT_EXECUTOR`), created by the first `run_in_executor`; `close()` stops its threads.

use std::cell::RefCell;
use std::collections::VecDeque;
use std::fmt;
use std::future::Future;
use std::io;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::pin::Pin;
use std::rc::Rc;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::task::{Context, Poll, Waker};
use std::thread::JoinHandle;

use crate::event_loop::error::{LoopError, Panic};
use crate::event_loop::slots::LoopKey;
use crate::event_loop::trace::{Awaiting, note_awaiting};
use crate::event_loop::{LoopHandle, LoopInner};

type Job = Box<dyn FnOnce() + Send>;

/// Why an executor job gave no value.
///
/// ```
/// use evloop::event_loop::ExecutorError;
///
/// let lp = evloop::event_loop::EventLoop::new()?;
/// let job = lp.run_in_executor(|| -> u32 { panic!("in the pool") })?;
/// let r = lp.run_until_complete(job)?; // the panic is caught on the worker thread
/// assert!(matches!(r, Err(ExecutorError::Panicked(p)) if p.message() == "in the pool"));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
#[non_exhaustive]
pub enum ExecutorError {
    /// The job panicked; the panic was caught on the worker thread.
    Panicked(Panic),
    /// The pool was shut down (the loop closed) before the job ran.
    Shutdown,
}

impl fmt::Display for ExecutorError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ExecutorError::Panicked(p) => write!(f, "run_in_executor: the job {p}"),
            ExecutorError::Shutdown => f.write_str("run_in_executor: the executor shut down before the job ran"),
        }
    }
}

impl std::error::Error for ExecutorError {}

impl From<ExecutorError> for std::io::Error {
    fn from(e: ExecutorError) -> std::io::Error {
        std::io::Error::other(e.to_string())
    }
}

struct Queue {
    jobs: VecDeque<Job>,
    idle: usize,
    threads: usize,
    shutdown: bool,
}

struct PoolShared {
    queue: Mutex<Queue>,
    available: Condvar,
}

fn lock(m: &Mutex<Queue>) -> MutexGuard<'_, Queue> {
    // A panic never happens while the queue lock is held (jobs run unlocked), but recover from a
    // poisoned lock rather than propagate a panic into the loop.
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// See the module documentation.
pub(crate) struct Pool {
    shared: Arc<PoolShared>,
    max_threads: usize,
    handles: Vec<JoinHandle<()>>,
    name: String,
    /// Retired by [`Pool::retire`]: its threads finish the queue, so dropping it drains nothing.
    retired: bool,
}

impl Pool {
    pub(crate) fn new(max_threads: usize, name: String) -> Pool {
        Pool {
            shared: Arc::new(PoolShared {
                queue: Mutex::new(Queue {
                    jobs: VecDeque::new(),
                    idle: 0,
                    threads: 0,
                    shutdown: false,
                }),
                available: Condvar::new(),
            }),
            max_threads: max_threads.max(1),
            handles: Vec::new(),
            name,
            retired: false,
        }
    }

    /// Threads started so far.
    pub(crate) fn threads(&self) -> usize {
        lock(&self.shared.queue).threads
    }

    /// Queues `f`; returns the future of its result. Starts a thread if none is idle and the
    /// bound allows. A failure to start a thread is returned; the job is then not queued.
    pub(crate) fn submit<T, F>(&mut self, f: F) -> std::io::Result<ExecutorJob<T>>
    where
        T: Send + 'static,
        F: FnOnce() -> T + Send + 'static,
    {
        let slot = Arc::new(Mutex::new(JobState::Pending(None)));
        let guard = ResultGuard {
            slot: Some(slot.clone()),
        };
        let job: Job = Box::new(move || {
            let mut guard = guard;
            let result = catch_unwind(AssertUnwindSafe(f)).map_err(|p| ExecutorError::Panicked(Panic::from_payload(p)));
            guard.complete(result);
        });
        let mut q = lock(&self.shared.queue);
        if q.shutdown {
            drop(q);
            drop(job); // resolves the slot with Shutdown
            return Ok(ExecutorJob { slot });
        }
        let start_thread = q.idle == 0 && q.threads < self.max_threads;
        q.jobs.push_back(job);
        if start_thread {
            q.threads += 1;
        }
        drop(q);
        if start_thread {
            let shared = self.shared.clone();
            let spawned = std::thread::Builder::new()
                .name(format!("{}-{}", self.name, self.handles.len()))
                .spawn(move || worker(shared));
            match spawned {
                Ok(h) => self.handles.push(h),
                Err(e) => {
                    let mut q = lock(&self.shared.queue);
                    q.threads -= 1;
                    if q.threads == 0 {
                        // Nobody will run it: take it back so the error is the only outcome.
                        let job = q.jobs.pop_back();
                        drop(q);
                        drop(job);
                    }
                    return Err(e);
                }
            }
        } else {
            self.shared.available.notify_one();
        }
        Ok(ExecutorJob { slot })
    }

    /// Stops the pool: queued jobs that have not started are dropped (their awaiters get
    /// `Shutdown`), running jobs finish. With `wait`, joins every thread.
    pub(crate) fn shutdown(&mut self, wait: bool) {
        let dropped: Vec<Job> = {
            let mut q = lock(&self.shared.queue);
            q.shutdown = true;
            q.jobs.drain(..).collect()
        };
        self.shared.available.notify_all();
        drop(dropped);
        let handles = std::mem::take(&mut self.handles);
        if wait {
            for h in handles {
                let _ = h.join();
            }
        }
    }

    /// Retires the pool without blocking (`set_default_executor` replacing it): every job it
    /// was given still runs, queued ones included, and each thread exits once the queue is
    /// empty. Nothing is joined and no awaiter is resolved with `Shutdown`.
    pub(crate) fn retire(mut self) {
        lock(&self.shared.queue).shutdown = true;
        self.shared.available.notify_all();
        self.retired = true;
        // Dropping a JoinHandle detaches its thread.
        self.handles.clear();
    }
}

impl Drop for Pool {
    fn drop(&mut self) {
        if !self.retired {
            self.shutdown(false);
        }
    }
}

/// The loop's default executor: a pool created by the first `run_in_executor`, kept in the
/// loop's `DEFAULT_EXECUTOR` slot so that closing the loop stops its threads.
#[derive(Default)]
struct DefaultExecutor {
    pool: RefCell<Option<Pool>>,
}

static DEFAULT_EXECUTOR: LoopKey<DefaultExecutor> = LoopKey::with_close(DefaultExecutor::close);

impl DefaultExecutor {
    fn close(&self, _lp: &Rc<LoopInner>) {
        let pool = self.pool.borrow_mut().take();
        if let Some(mut pool) = pool {
            pool.shutdown(false);
        }
    }

    fn threads(&self) -> usize {
        self.pool.borrow().as_ref().map_or(0, |p| p.threads())
    }
}

/// Threads the loop's executor pool has started (for `LoopStats`).
pub(crate) fn threads(lp: &LoopInner) -> usize {
    lp.slot(&DEFAULT_EXECUTOR).map_or(0, |e| e.threads())
}

impl LoopHandle {
    /// Runs `f` on the executor's thread pool (asyncio's `run_in_executor(None, f)`); await the
    /// returned job for its result. The pool starts lazily and is bounded.
    ///
    /// ```
    /// evloop::run(async {
    ///     let lp = evloop::event_loop::get_running_loop()?;
    ///     // Blocking work off the loop: await loop.run_in_executor(None, f)
    ///     let job = lp.run_in_executor(|| std::fs::read_to_string("/proc/self/stat").map(|s| s.len()))?;
    ///     let len = job.await??;
    ///     assert!(len > 0);
    ///     Ok::<(), Box<dyn std::error::Error>>(())
    /// })??;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn run_in_executor<T, F>(&self, f: F) -> Result<ExecutorJob<T>, LoopError>
    where
        T: Send + 'static,
        F: FnOnce() -> T + Send + 'static,
    {
        self.check_open("run_in_executor")?;
        let ext = self.inner.slot_or_init(&DEFAULT_EXECUTOR, DefaultExecutor::default);
        let mut slot = ext.pool.borrow_mut();
        let pool = slot.get_or_insert_with(|| {
            Pool::new(
                self.inner.executor_threads.get(),
                format!("evloop-{}-executor", self.inner.id),
            )
        });
        pool.submit(f)
            .map_err(|e| LoopError::io("run_in_executor (spawning a thread)", e))
    }

    /// Shuts the executor down and waits for its running jobs to finish (this blocks the
    /// thread). Jobs queued but not started resolve as shut down. The next `run_in_executor`
    /// starts a new pool.
    ///
    /// ```
    /// let lp = evloop::event_loop::EventLoop::new()?;
    /// let job = lp.run_in_executor(|| 1)?;
    /// assert_eq!(lp.run_until_complete(job)??, 1);
    /// lp.shutdown_default_executor(); // waits for running jobs; the threads exit
    /// assert_eq!(lp.stats().executor_threads, 0);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn shutdown_default_executor(&self) {
        let pool = self
            .inner
            .slot(&DEFAULT_EXECUTOR)
            .and_then(|e| e.pool.borrow_mut().take());
        if let Some(mut pool) = pool {
            pool.shutdown(true);
        }
    }

    /// Replaces the default executor with a pool of at most `threads` threads (asyncio's
    /// `set_default_executor`, which takes an executor object; here the pool's size). The new
    /// pool starts lazily with the next `run_in_executor`. The old pool is retired without
    /// blocking: every job already given to it still runs (queued ones included) and its
    /// threads exit once its queue is empty. Errors: `threads == 0` (`InvalidInput`), or the
    /// loop is closed.
    ///
    /// ```
    /// let lp = evloop::event_loop::EventLoop::new()?;
    /// lp.set_default_executor(1)?; // at most one thread from now on
    /// let (a, b) = (lp.run_in_executor(|| "a")?, lp.run_in_executor(|| "b")?);
    /// let (a, b) = lp.run_until_complete(async { (a.await, b.await) })?;
    /// assert_eq!((a?, b?), ("a", "b"));
    /// assert_eq!(lp.stats().executor_threads, 1);
    /// assert!(lp.set_default_executor(0).is_err());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn set_default_executor(&self, threads: usize) -> io::Result<()> {
        self.check_open("set_default_executor")?;
        if threads == 0 {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "set_default_executor(0): the pool needs at least one thread",
            ));
        }
        self.inner.executor_threads.set(threads);
        let old = self
            .inner
            .slot(&DEFAULT_EXECUTOR)
            .and_then(|e| e.pool.borrow_mut().take());
        if let Some(old) = old {
            old.retire();
        }
        Ok(())
    }
}

fn worker(shared: Arc<PoolShared>) {
    loop {
        let job = {
            let mut q = lock(&shared.queue);
            loop {
                if let Some(job) = q.jobs.pop_front() {
                    break Some(job);
                }
                if q.shutdown {
                    break None;
                }
                q.idle += 1;
                q = shared.available.wait(q).unwrap_or_else(|p| p.into_inner());
                q.idle -= 1;
            }
        };
        match job {
            Some(job) => job(),
            None => {
                lock(&shared.queue).threads -= 1;
                return;
            }
        }
    }
}

enum JobState<T> {
    Pending(Option<Waker>),
    Done(Result<T, ExecutorError>),
    Taken,
}

/// Resolves the slot exactly once: with the job's result, or with `Shutdown` if the job is
/// dropped without running.
struct ResultGuard<T> {
    slot: Option<Arc<Mutex<JobState<T>>>>,
}

impl<T> ResultGuard<T> {
    fn complete(&mut self, result: Result<T, ExecutorError>) {
        if let Some(slot) = self.slot.take() {
            let waker = {
                let mut st = slot.lock().unwrap_or_else(|p| p.into_inner());
                match std::mem::replace(&mut *st, JobState::Done(result)) {
                    JobState::Pending(w) => w,
                    _ => None,
                }
            };
            // Wake outside the lock: the waker may run loop code on this thread's behalf.
            if let Some(w) = waker {
                w.wake();
            }
        }
    }
}

impl<T> Drop for ResultGuard<T> {
    fn drop(&mut self) {
        self.complete(Err(ExecutorError::Shutdown));
    }
}

/// The result of a [`run_in_executor`](crate::event_loop::LoopHandle::run_in_executor) job: a future that
/// gives the job's return value, or an [`ExecutorError`] if it panicked or never ran.
///
/// Dropping it does not stop the job (a thread cannot be interrupted); the result is discarded.
///
/// ```
/// let lp = evloop::event_loop::EventLoop::new()?;
/// let job = lp.run_in_executor(|| (1..=10u64).product::<u64>())?;
/// assert_eq!(lp.run_until_complete(job)??, 3_628_800);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[must_use = "futures do nothing unless you `.await` or poll them"]
pub struct ExecutorJob<T> {
    slot: Arc<Mutex<JobState<T>>>,
}

impl<T> ExecutorJob<T> {
    /// Whether the job has finished (or was dropped by a shutdown).
    ///
    /// ```
    /// let lp = evloop::event_loop::EventLoop::new()?;
    /// let (tx, rx) = std::sync::mpsc::channel::<()>();
    /// let job = lp.run_in_executor(move || rx.recv().is_ok())?;
    /// assert!(!job.is_done()); // blocked on the channel
    /// tx.send(())?;
    /// assert!(lp.run_until_complete(job)??);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn is_done(&self) -> bool {
        !matches!(
            *self.slot.lock().unwrap_or_else(|p| p.into_inner()),
            JobState::Pending(_)
        )
    }
}

impl<T> Future for ExecutorJob<T> {
    type Output = Result<T, ExecutorError>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let mut st = self.slot.lock().unwrap_or_else(|p| p.into_inner());
        match &mut *st {
            JobState::Pending(w) => {
                match w {
                    Some(w) if w.will_wake(cx.waker()) => {}
                    _ => *w = Some(cx.waker().clone()),
                }
                note_awaiting(Awaiting::Executor);
                Poll::Pending
            }
            JobState::Done(_) => match std::mem::replace(&mut *st, JobState::Taken) {
                JobState::Done(r) => Poll::Ready(r),
                _ => Poll::Pending,
            },
            // Polled again after it returned Ready: a contract violation by the caller; stay
            // pending rather than panic.
            JobState::Taken => Poll::Pending,
        }
    }
}

impl<T> fmt::Debug for ExecutorJob<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ExecutorJob {{ done: {} }}", self.is_done())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::task::Wake;

    struct Flag(AtomicUsize);
    impl Wake for Flag {
        fn wake(self: Arc<Self>) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }

    fn block_on<T>(mut job: ExecutorJob<T>) -> Result<T, ExecutorError> {
        let flag = Arc::new(Flag(AtomicUsize::new(0)));
        let waker = Waker::from(flag.clone());
        let mut cx = Context::from_waker(&waker);
        loop {
            if let Poll::Ready(r) = Pin::new(&mut job).poll(&mut cx) {
                return r;
            }
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
    }

    #[test]
    fn pool_starts_lazily_and_stays_bounded() {
        let mut pool = Pool::new(2, "t".into());
        assert_eq!(pool.threads(), 0);
        let jobs: Vec<_> = (0..8).map(|i| pool.submit(move || i * 2).unwrap()).collect();
        assert!(pool.threads() <= 2);
        let results: Vec<_> = jobs.into_iter().map(|j| block_on(j).unwrap()).collect();
        assert_eq!(results, vec![0, 2, 4, 6, 8, 10, 12, 14]);
        pool.shutdown(true);
        assert_eq!(pool.threads(), 0);
    }

    #[test]
    fn a_panicking_job_reaches_its_awaiter_as_an_error() {
        let mut pool = Pool::new(1, "t".into());
        let job = pool.submit(|| -> u32 { panic!("job boom") }).unwrap();
        match block_on(job) {
            Err(ExecutorError::Panicked(p)) => assert_eq!(p.message(), "job boom"),
            other => panic!("unexpected {other:?}"),
        }
        pool.shutdown(true);
    }

    #[test]
    fn jobs_dropped_by_shutdown_resolve_as_shutdown() {
        let mut pool = Pool::new(1, "t".into());
        let (tx, rx) = std::sync::mpsc::channel::<()>();
        let (started_tx, started_rx) = std::sync::mpsc::channel::<()>();
        let blocker = pool
            .submit(move || {
                started_tx.send(()).unwrap();
                rx.recv().ok()
            })
            .unwrap();
        started_rx.recv().unwrap();
        let queued = pool.submit(|| 5).unwrap();
        // The single thread is busy with `blocker`; `queued` has not started.
        pool.shutdown(false);
        tx.send(()).unwrap();
        assert!(matches!(block_on(queued), Err(ExecutorError::Shutdown)));
        assert!(block_on(blocker).is_ok());
        let after = pool.submit(|| 1).unwrap();
        assert!(matches!(block_on(after), Err(ExecutorError::Shutdown)));
    }
}
