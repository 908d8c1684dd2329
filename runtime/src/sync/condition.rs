//! [`Condition`]: asyncio's `Condition`, a queue of notifications over a [`Lock`]; a notified
//! waiter re-acquires the lock, and one dropped before it got it passes the notification on.

use std::cell::RefCell;
use std::fmt;
use std::future::poll_fn;
use std::ops::Deref;
use std::rc::Rc;

use crate::sync::binding::LoopBinding;
use crate::sync::error::SyncError;
use crate::sync::lock::{Lock, LockAcquire, LockGuard};
use crate::sync::ops::WaitOp;
use crate::sync::wait_queue::{Line, WaitQueue, Waiter, WakeList};

struct NotifyState {
    queue: WaitQueue<()>,
    binding: LoopBinding,
}

impl Line for NotifyState {
    type State = NotifyState;
    type Grant = ();
    type Carry = ();
    type Output = ();

    fn queue(st: &mut NotifyState) -> &mut WaitQueue<()> {
        &mut st.queue
    }

    fn binding(st: &NotifyState) -> &LoopBinding {
        &st.binding
    }

    // Only a notification ends the wait.
    fn arrive(_: &mut NotifyState, _: &mut (), _: &mut WakeList) -> Option<()> {
        None
    }

    fn take(_: &mut NotifyState, (): (), _: &mut (), _: &mut WakeList) {}

    fn pass_on(st: &mut NotifyState, (): (), wakers: &mut WakeList) {
        // Notified but dropped before it saw it: the notification goes to the next waiter.
        let _ = st.queue.grant_first((), wakers);
    }
}

/// Waits on `waiter` as `what`, with the wrong loop as an error value.
async fn wait_as<R, L>(mut waiter: Waiter<R, L>, what: WaitOp) -> Result<L::Output, SyncError>
where
    R: Deref<Target = RefCell<L::State>>,
    L: Line,
{
    poll_fn(|cx| waiter.poll_wait(cx, what))
        .await
        .map_err(SyncError::WrongLoop)
}

/// A condition variable over a [`Lock`] (asyncio's `Condition`): tasks holding the lock wait
/// for a notification; [`notify`](Condition::notify) wakes the longest waiters.
///
/// [`wait`](Condition::wait) takes the lock's guard, releases the lock while it waits and
/// re-acquires it before returning the guard. A waiter notified but dropped before it returned
/// (cancelled, timed out) passes the notification on to the next waiter, so a notification is
/// never lost (CPython gh-112202).
///
/// ```
/// use std::cell::Cell;
/// use std::rc::Rc;
/// use evloop::sync::Condition;
///
/// let got = evloop::run(async {
///     let cond = Rc::new(Condition::new());
///     let items = Rc::new(Cell::new(0));
///     let consumer = {
///         let (cond, items) = (cond.clone(), items.clone());
///         evloop::spawn(async move {
///             let guard = cond.acquire().await.unwrap(); // `async with cond:`
///             let _guard = cond.wait_for(guard, || items.get() > 0).await?;
///             Ok::<_, evloop::sync::SyncError>(items.get())
///         })
///     };
///     evloop::task::yield_now().await; // the consumer waits, with the lock released
///     let guard = cond.acquire().await.unwrap();
///     items.set(3);
///     cond.notify_all();
///     drop(guard);
///     consumer.await
/// })???;
/// assert_eq!(got, 3);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct Condition {
    lock: Rc<Lock>,
    notify: RefCell<NotifyState>,
}

impl Condition {
    /// A condition with its own lock.
    ///
    /// ```
    /// let cond = evloop::sync::Condition::new();
    /// assert!(!cond.locked());
    /// assert_eq!(cond.waiters(), 0);
    /// ```
    pub fn new() -> Condition {
        Condition::with_lock(Rc::new(Lock::new()))
    }

    /// A condition over `lock`, which other conditions may share (asyncio's `Condition(lock)`).
    ///
    /// ```
    /// use std::rc::Rc;
    /// use evloop::sync::{Condition, Lock};
    ///
    /// let lock = Rc::new(Lock::new());
    /// let not_empty = Condition::with_lock(lock.clone());
    /// let not_full = Condition::with_lock(lock.clone());
    /// let _guard = not_empty.try_acquire().expect("free");
    /// assert!(not_full.locked()); // one lock behind both conditions
    /// ```
    pub fn with_lock(lock: Rc<Lock>) -> Condition {
        Condition {
            lock,
            notify: RefCell::new(NotifyState {
                queue: WaitQueue::new(),
                binding: LoopBinding::default(),
            }),
        }
    }

    /// The condition's lock.
    ///
    /// ```
    /// use std::rc::Rc;
    ///
    /// let lock = Rc::new(evloop::sync::Lock::new());
    /// let cond = evloop::sync::Condition::with_lock(lock.clone());
    /// assert!(Rc::ptr_eq(cond.lock(), &lock));
    /// ```
    pub fn lock(&self) -> &Rc<Lock> {
        &self.lock
    }

    /// Waits for the lock (asyncio's `async with cond`).
    ///
    /// ```
    /// evloop::run(async {
    ///     let cond = evloop::sync::Condition::new();
    ///     let guard = cond.acquire().await.unwrap();
    ///     assert!(cond.locked());
    ///     drop(guard);
    ///     assert!(!cond.locked());
    /// })?;
    /// # Ok::<(), evloop::task::RunError>(())
    /// ```
    pub fn acquire(&self) -> LockAcquire<'_> {
        self.lock.acquire()
    }

    /// Takes the lock if that needs no wait.
    ///
    /// ```
    /// let cond = evloop::sync::Condition::new();
    /// let guard = cond.try_acquire().expect("free");
    /// assert!(cond.try_acquire().is_none());
    /// drop(guard);
    /// ```
    pub fn try_acquire(&self) -> Option<LockGuard<'_>> {
        self.lock.try_acquire()
    }

    /// Whether the lock is taken.
    ///
    /// ```
    /// let cond = evloop::sync::Condition::new();
    /// let _guard = cond.try_acquire();
    /// assert!(cond.locked());
    /// assert!(cond.lock().locked()); // the same lock
    /// ```
    pub fn locked(&self) -> bool {
        self.lock.locked()
    }

    /// Releases the lock held by `guard`, waits for a notification, re-acquires the lock and
    /// returns its guard. [`SyncError::ForeignLockGuard`] (and the guard is dropped) if `guard`
    /// holds another lock.
    ///
    /// Dropping the future while it waits leaves the lock released (the guard was given up) and
    /// passes on a notification it had already received.
    ///
    /// [`SyncError::WrongLoop`] (and the lock released) when the condition, or its lock, is
    /// bound to another loop than the waiting task's (see "Bound to one loop" in the
    /// [module documentation](crate::sync)).
    ///
    /// ```
    /// use std::rc::Rc;
    /// use evloop::sync::{Condition, Lock, SyncError};
    ///
    /// evloop::run(async {
    ///     let cond = Rc::new(Condition::new());
    ///     let waiter = {
    ///         let cond = cond.clone();
    ///         evloop::spawn(async move {
    ///             let guard = cond.acquire().await.unwrap();
    ///             let guard = cond.wait(guard).await?; // the lock is released while it waits
    ///             assert!(guard.lock().locked()); // and held again when it returns
    ///             Ok::<(), SyncError>(())
    ///         })
    ///     };
    ///     evloop::task::yield_now().await;
    ///     assert!(!cond.locked());
    ///     assert_eq!(cond.notify(1), 1);
    ///     waiter.await??;
    ///
    ///     // The guard of another lock is refused.
    ///     let other = Lock::new();
    ///     let r = cond.wait(other.acquire().await.unwrap()).await;
    ///     assert_eq!(r.err(), Some(SyncError::ForeignLockGuard));
    ///     Ok::<(), Box<dyn std::error::Error>>(())
    /// })??;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub async fn wait<'g>(&self, guard: LockGuard<'g>) -> Result<LockGuard<'g>, SyncError> {
        let lock = guard.lock;
        if !std::ptr::eq(lock, &*self.lock) {
            return Err(SyncError::ForeignLockGuard);
        }
        let notified = Waiter::<_, NotifyState>::new(&self.notify, ());
        // Releasing and queueing happen in the same step (the first poll below comes before any
        // other task can run), so no notification can slip in between.
        drop(guard);
        wait_as(notified, WaitOp::ConditionWait).await?;
        // Notified. Until the lock is back, a drop passes the notification on (CPython does the
        // same; at worst the next waiter sees a spurious wakeup, which the protocol allows).
        let pass_on = PassOn { cond: Some(self) };
        wait_as(lock.pool.waiter(), WaitOp::ConditionReacquire).await?;
        pass_on.disarm();
        Ok(LockGuard { lock })
    }

    /// Waits until `predicate` returns true (asyncio's `wait_for`): checks it with the lock
    /// held, and waits for a notification each time it is false.
    ///
    /// ```
    /// use std::cell::Cell;
    /// use std::rc::Rc;
    ///
    /// evloop::run(async {
    ///     let cond = Rc::new(evloop::sync::Condition::new());
    ///     let count = Rc::new(Cell::new(0));
    ///     let watcher = {
    ///         let (cond, count) = (cond.clone(), count.clone());
    ///         evloop::spawn(async move {
    ///             let guard = cond.acquire().await.unwrap();
    ///             // Woken by each notify, it waits again until the predicate holds.
    ///             let _guard = cond.wait_for(guard, || count.get() >= 2).await?;
    ///             Ok::<_, evloop::sync::SyncError>(count.get())
    ///         })
    ///     };
    ///     for _ in 0..2 {
    ///         evloop::task::yield_now().await;
    ///         count.set(count.get() + 1);
    ///         cond.notify_all();
    ///     }
    ///     assert_eq!(watcher.await??, 2);
    ///     Ok::<(), Box<dyn std::error::Error>>(())
    /// })??;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub async fn wait_for<'g>(
        &self,
        mut guard: LockGuard<'g>,
        mut predicate: impl FnMut() -> bool,
    ) -> Result<LockGuard<'g>, SyncError> {
        if !std::ptr::eq(guard.lock, &*self.lock) {
            return Err(SyncError::ForeignLockGuard);
        }
        while !predicate() {
            guard = self.wait(guard).await?;
        }
        Ok(guard)
    }

    /// Wakes up to `n` waiters, longest-waiting first; returns how many it woke. The lock need
    /// not be held.
    ///
    /// ```
    /// use std::rc::Rc;
    ///
    /// evloop::run(async {
    ///     let cond = Rc::new(evloop::sync::Condition::new());
    ///     let tasks: Vec<_> = (0..2)
    ///         .map(|_| {
    ///             let cond = cond.clone();
    ///             evloop::spawn(async move {
    ///                 let guard = cond.acquire().await.unwrap();
    ///                 drop(cond.wait(guard).await);
    ///             })
    ///         })
    ///         .collect();
    ///     evloop::task::yield_now().await;
    ///     assert_eq!(cond.notify(1), 1); // the longest waiter
    ///     assert_eq!(cond.waiters(), 1);
    ///     assert_eq!(cond.notify(5), 1); // only one was left
    ///     for t in tasks {
    ///         t.await?;
    ///     }
    ///     Ok::<(), evloop::task::TaskError>(())
    /// })??;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn notify(&self, n: usize) -> usize {
        let mut wakers = WakeList::default();
        let woken = {
            let mut left = n;
            self.notify.borrow_mut().queue.grant_while(
                || {
                    (left > 0).then(|| {
                        left -= 1;
                    })
                },
                &mut wakers,
            )
        };
        wakers.wake();
        woken
    }

    /// Wakes every waiter; returns how many.
    ///
    /// ```
    /// use std::rc::Rc;
    ///
    /// evloop::run(async {
    ///     let cond = Rc::new(evloop::sync::Condition::new());
    ///     let tasks: Vec<_> = (0..3)
    ///         .map(|_| {
    ///             let cond = cond.clone();
    ///             evloop::spawn(async move {
    ///                 let guard = cond.acquire().await.unwrap();
    ///                 drop(cond.wait(guard).await);
    ///             })
    ///         })
    ///         .collect();
    ///     evloop::task::yield_now().await;
    ///     assert_eq!(cond.notify_all(), 3);
    ///     for t in tasks {
    ///         t.await?;
    ///     }
    ///     Ok::<(), evloop::task::TaskError>(())
    /// })??;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn notify_all(&self) -> usize {
        self.notify(usize::MAX)
    }

    /// How many tasks wait for a notification.
    ///
    /// ```
    /// use std::rc::Rc;
    ///
    /// evloop::run(async {
    ///     let cond = Rc::new(evloop::sync::Condition::new());
    ///     let waiter = {
    ///         let cond = cond.clone();
    ///         evloop::spawn(async move {
    ///             let guard = cond.acquire().await.unwrap();
    ///             drop(cond.wait(guard).await);
    ///         })
    ///     };
    ///     evloop::task::yield_now().await;
    ///     assert_eq!(cond.waiters(), 1);
    ///     cond.notify(1);
    ///     waiter.await?;
    ///     assert_eq!(cond.waiters(), 0);
    ///     Ok::<(), evloop::task::TaskError>(())
    /// })??;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn waiters(&self) -> usize {
        self.notify.borrow().queue.waiting()
    }
}

impl Default for Condition {
    fn default() -> Self {
        Condition::new()
    }
}

impl fmt::Debug for Condition {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Condition")
            .field("locked", &self.locked())
            .field("waiters", &self.waiters())
            .finish()
    }
}

/// Passes a received notification on if dropped before it is disarmed.
struct PassOn<'c> {
    cond: Option<&'c Condition>,
}

impl PassOn<'_> {
    fn disarm(mut self) {
        self.cond = None;
    }
}

impl Drop for PassOn<'_> {
    fn drop(&mut self) {
        if let Some(cond) = self.cond {
            cond.notify(1);
        }
    }
}
