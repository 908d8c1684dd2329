//! [`EvloopTimer`]: hyper's `Timer` on the loop's timer heap, with a sleep future that is
//! genuinely `Send + Sync` although evloop's timers are bound to their loop's thread.
//!
//! The split: an [`EvloopSleep`] holds its deadline, an `Arc` of [`Shared`] (an atomic "fired"
//! flag and a mutex-guarded waker: both `Send + Sync`) and the loop's `RemoteHandle` (`Send +
//! Sync` by design). The loop-bound part, the `TimerHandle` of a `call_at`, never enters the
//! sleep: it waits in a per-thread table, `ARMED`, under a number the sleep keeps. So:
//! - first poll on the loop's thread: `call_at(deadline)` there, its handle into `ARMED`; the
//!   timer's callback removes the entry, sets the flag and wakes the stored waker;
//! - first poll on a thread with no running loop: the same arming, sent to the loop through
//!   `call_soon_threadsafe`;
//! - dropped or reset before it fired: the entry is removed from `ARMED` and the timer cancelled,
//!   directly on the arming thread, through `call_soon_threadsafe` from any other (the remote
//!   queue is FIFO, so a cancel never overtakes its own arming).

use std::cell::RefCell;
use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};
use std::thread::{self, ThreadId};
use std::time::{Duration, Instant};

use evloop::event_loop::{LoopHandle, RemoteHandle, TimerHandle, get_running_loop};

thread_local! {
    /// The loop-side timers of the sleeps armed on this thread, by arming number.
    static ARMED: RefCell<HashMap<u64, TimerHandle>> = RefCell::new(HashMap::new());
}

/// Arming numbers, unique in the process (a sleep may be cancelled from another thread, which
/// must name the entry of the arming thread's table).
static NEXT_ARMING: AtomicU64 = AtomicU64::new(1);

/// hyper's `Timer` on evloop: sleeps on the loop's timer heap, `now` from the loop's clock.
///
/// `Send + Sync` (hyper's builders require it): it holds the loop's `RemoteHandle`. Make it on
/// the loop's thread ([`EvloopTimer::new`]) or from a [`LoopHandle`] ([`EvloopTimer::for_loop`]).
///
/// ```
/// use std::time::Duration;
/// use hyper::rt::Timer;
/// use evloop_hyper::EvloopTimer;
///
/// evloop::run(async {
///     let timer = EvloopTimer::new();
///     let start = timer.now();
///     timer.sleep(Duration::from_millis(5)).await;
///     assert!(timer.now() - start >= Duration::from_millis(5));
/// })?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone)]
pub struct EvloopTimer {
    remote: RemoteHandle,
}

impl EvloopTimer {
    /// The timer of the loop running on this thread.
    ///
    /// # Panics
    /// When no loop is running on this thread.
    ///
    /// ```
    /// evloop::run(async {
    ///     let _timer = evloop_hyper::EvloopTimer::new(); // inside the loop
    /// })?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[track_caller]
    pub fn new() -> EvloopTimer {
        match get_running_loop() {
            Ok(lp) => EvloopTimer::for_loop(&lp),
            Err(e) => panic!("EvloopTimer::new: {e}"),
        }
    }

    /// The timer of the loop `lp` (which need not be running yet).
    ///
    /// ```
    /// let lp = evloop::event_loop::EventLoop::new()?;
    /// let _timer = evloop_hyper::EvloopTimer::for_loop(&lp.handle());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn for_loop(lp: &LoopHandle) -> EvloopTimer {
        EvloopTimer { remote: lp.remote() }
    }
}

impl Default for EvloopTimer {
    fn default() -> Self {
        EvloopTimer::new()
    }
}

impl hyper::rt::Timer for EvloopTimer {
    fn sleep(&self, duration: Duration) -> Pin<Box<dyn hyper::rt::Sleep>> {
        let now = self.now();
        self.sleep_until(
            now.checked_add(duration)
                .unwrap_or(now + Duration::from_secs(86_400 * 365)),
        )
    }

    fn sleep_until(&self, deadline: Instant) -> Pin<Box<dyn hyper::rt::Sleep>> {
        Box::pin(EvloopSleep::new(self.remote.clone(), deadline))
    }

    fn now(&self) -> Instant {
        // The loop's clock: under a virtual clock, hyper's deadlines are virtual too.
        get_running_loop().map_or_else(|_| Instant::now(), |lp| lp.time())
    }

    fn reset(&self, sleep: &mut Pin<Box<dyn hyper::rt::Sleep>>, new_deadline: Instant) {
        match sleep.as_mut().downcast_mut_pin::<EvloopSleep>() {
            Some(mut s) => s.as_mut().get_mut().reset(new_deadline),
            None => *sleep = self.sleep_until(new_deadline),
        }
    }
}

/// What a sleep shares with its loop-side timer: both fields are `Send + Sync`.
#[derive(Debug, Default)]
struct Shared {
    fired: AtomicBool,
    waker: Mutex<Option<Waker>>,
}

impl Shared {
    fn fire(&self) {
        self.fired.store(true, Ordering::Release);
        let waker = self.waker.lock().unwrap_or_else(|e| e.into_inner()).take();
        if let Some(w) = waker {
            w.wake();
        }
    }
}

/// Where a sleep's loop-side timer was armed.
#[derive(Debug)]
struct Armed {
    number: u64,
    /// `None` when armed through the remote queue (the sleep was polled off the loop).
    thread: Option<ThreadId>,
}

/// The sleep future of [`EvloopTimer`]: `Send + Sync + Unpin`, ready at its deadline by the
/// loop's clock.
///
/// ```
/// use std::time::{Duration, Instant};
/// use hyper::rt::Timer;
///
/// fn is_send_sync<T: Send + Sync>(_: &T) {}
///
/// evloop::run(async {
///     let timer = evloop_hyper::EvloopTimer::new();
///     let sleep = timer.sleep(Duration::from_millis(1));
///     is_send_sync(&sleep); // hyper's `Sleep` requires it
///     sleep.await;
/// })?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub struct EvloopSleep {
    deadline: Instant,
    shared: Arc<Shared>,
    remote: RemoteHandle,
    armed: Option<Armed>,
}

impl EvloopSleep {
    fn new(remote: RemoteHandle, deadline: Instant) -> EvloopSleep {
        EvloopSleep {
            deadline,
            shared: Arc::default(),
            remote,
            armed: None,
        }
    }

    /// The instant it becomes ready.
    ///
    /// ```
    /// use std::time::{Duration, Instant};
    /// use hyper::rt::Timer;
    ///
    /// evloop::run(async {
    ///     let timer = evloop_hyper::EvloopTimer::new();
    ///     let at = timer.now() + Duration::from_secs(1);
    ///     let mut sleep = timer.sleep_until(at);
    ///     let s = sleep.as_mut().downcast_mut_pin::<evloop_hyper::EvloopSleep>().expect("ours");
    ///     assert_eq!(s.deadline(), at);
    /// })?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn deadline(&self) -> Instant {
        self.deadline
    }

    /// Moves the deadline (hyper's `Timer::reset` calls it): the armed timer, if any, is
    /// cancelled, and the next poll arms a new one.
    ///
    /// ```
    /// use std::time::Duration;
    /// use hyper::rt::Timer;
    ///
    /// evloop::run(async {
    ///     let timer = evloop_hyper::EvloopTimer::new();
    ///     let mut sleep = timer.sleep(Duration::from_secs(3600));
    ///     timer.reset(&mut sleep, timer.now() + Duration::from_millis(1)); // an hour becomes 1 ms
    ///     sleep.await;
    /// })?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn reset(&mut self, deadline: Instant) {
        self.disarm();
        // A fresh share: a firing already on its way for the old deadline reaches the old one.
        self.shared = Arc::default();
        self.deadline = deadline;
    }

    fn arm(&mut self) {
        let number = NEXT_ARMING.fetch_add(1, Ordering::Relaxed);
        let shared = self.shared.clone();
        let deadline = self.deadline;
        match get_running_loop() {
            Ok(lp) => {
                if !arm_on(&lp, number, deadline, shared) {
                    self.shared.fire(); // the loop is closing: no timer will ever fire
                }
                self.armed = Some(Armed {
                    number,
                    thread: Some(thread::current().id()),
                });
            }
            Err(_) => {
                let sent = self.remote.call_soon_threadsafe(move || {
                    if let Ok(lp) = get_running_loop() {
                        arm_on(&lp, number, deadline, shared);
                    }
                });
                if sent.is_err() {
                    self.shared.fire(); // the loop is closed: no timer will ever fire
                }
                self.armed = Some(Armed { number, thread: None });
            }
        }
    }

    fn disarm(&mut self) {
        let Some(armed) = self.armed.take() else { return };
        if self.shared.fired.load(Ordering::Acquire) {
            return; // the timer's callback already removed its entry
        }
        let number = armed.number;
        if armed.thread == Some(thread::current().id()) {
            cancel(number);
        } else {
            let _ = self.remote.call_soon_threadsafe(move || cancel(number));
        }
    }
}

/// Schedules the loop-side timer of arming `number` on `lp`; false when the loop refuses.
fn arm_on(lp: &LoopHandle, number: u64, deadline: Instant, shared: Arc<Shared>) -> bool {
    let timer = lp.call_at(deadline, move || {
        let _ = ARMED.try_with(|armed| armed.borrow_mut().remove(&number));
        shared.fire();
    });
    match timer {
        Ok(timer) => {
            let _ = ARMED.try_with(|armed| armed.borrow_mut().insert(number, timer));
            true
        }
        Err(_) => false,
    }
}

/// Cancels the loop-side timer of arming `number`, on the thread that armed it.
fn cancel(number: u64) {
    if let Ok(Some(timer)) = ARMED.try_with(|armed| armed.borrow_mut().remove(&number)) {
        timer.cancel();
    }
}

impl Future for EvloopSleep {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let this = self.get_mut();
        if this.shared.fired.load(Ordering::Acquire) {
            return Poll::Ready(());
        }
        {
            let mut waker = this.shared.waker.lock().unwrap_or_else(|e| e.into_inner());
            match waker.as_mut() {
                Some(w) if w.will_wake(cx.waker()) => {}
                _ => *waker = Some(cx.waker().clone()),
            }
        }
        // Checked again after the waker is stored: a firing in between took no waker.
        if this.shared.fired.load(Ordering::Acquire) {
            return Poll::Ready(());
        }
        if this.armed.is_none() {
            this.arm();
            if this.shared.fired.load(Ordering::Acquire) {
                return Poll::Ready(());
            }
        }
        Poll::Pending
    }
}

impl hyper::rt::Sleep for EvloopSleep {}

impl Drop for EvloopSleep {
    fn drop(&mut self) {
        self.disarm();
    }
}
