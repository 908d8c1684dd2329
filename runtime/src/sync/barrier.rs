//! [`Barrier`]: asyncio 3.11's `Barrier`, a meeting point for a fixed number of tasks, and the
//! future of `wait`.

use std::cell::RefCell;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use crate::sync::binding::LoopBinding;
use crate::sync::error::SyncError;
use crate::sync::ops::WaitOp;
use crate::sync::wait_queue::{Line, WaitQueue, Waiter, WakeList};

/// Why a barrier wait failed (the public error is built with the party count).
#[derive(Clone, Copy)]
struct Broken;

struct BarrierState {
    parties: usize,
    broken: bool,
    queue: WaitQueue<Result<usize, Broken>>,
    binding: LoopBinding,
}

impl BarrierState {
    /// Fails every waiter of the current round.
    fn break_waiters(&mut self, wakers: &mut WakeList) {
        self.queue.grant_while(|| Some(Err(Broken)), wakers);
    }

    fn output(&self, grant: Result<usize, Broken>) -> Result<usize, SyncError> {
        grant.map_err(|Broken| SyncError::BrokenBarrier { parties: self.parties })
    }
}

impl Line for BarrierState {
    type State = BarrierState;
    type Grant = Result<usize, Broken>;
    type Carry = ();
    type Output = Result<usize, SyncError>;

    fn queue(st: &mut BarrierState) -> &mut WaitQueue<Self::Grant> {
        &mut st.queue
    }

    fn binding(st: &BarrierState) -> &LoopBinding {
        &st.binding
    }

    fn arrive(st: &mut BarrierState, _: &mut (), wakers: &mut WakeList) -> Option<Self::Output> {
        if st.broken {
            return Some(st.output(Err(Broken)));
        }
        if st.queue.waiting() + 1 < st.parties {
            return None;
        }
        // The last party: the barrier trips. The waiters get their arrival indexes in order,
        // this task the last one, and the next round starts empty.
        let mut index = 0;
        st.queue.grant_while(
            || {
                let i = index;
                index += 1;
                Some(Ok(i))
            },
            wakers,
        );
        Some(Ok(index))
    }

    fn take(st: &mut BarrierState, grant: Self::Grant, _: &mut (), _: &mut WakeList) -> Self::Output {
        st.output(grant)
    }

    // The round it was released with went on without it; its index is simply not used.
    fn pass_on(_: &mut BarrierState, _: Self::Grant, _: &mut WakeList) {}
}

/// A meeting point for a fixed number of tasks (asyncio 3.11's `Barrier`): each
/// [`wait`](Barrier::wait) blocks until `parties` tasks are waiting, then all of them continue,
/// and the barrier is ready for the next round.
///
/// `wait()` returns the task's arrival index in its round, `0..parties` (the last to arrive gets
/// `parties - 1`). A waiter dropped before the barrier trips leaves the round (it no longer
/// counts). [`abort`](Barrier::abort) breaks the barrier for good, [`reset`](Barrier::reset)
/// breaks the current round only; the waiters they break get [`SyncError::BrokenBarrier`].
///
/// ```
/// use std::rc::Rc;
///
/// let mut indexes = evloop::run(async {
///     let barrier = Rc::new(evloop::sync::Barrier::new(3));
///     let tasks: Vec<_> = (0..3)
///         .map(|_| {
///             let barrier = barrier.clone();
///             evloop::spawn(async move { barrier.wait().await })
///         })
///         .collect();
///     let mut indexes = Vec::new();
///     for t in tasks {
///         indexes.push(t.await??); // each returns once all three wait
///     }
///     Ok::<_, Box<dyn std::error::Error>>(indexes)
/// })??;
/// indexes.sort();
/// assert_eq!(indexes, [0, 1, 2]);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct Barrier {
    state: RefCell<BarrierState>,
}

impl Barrier {
    /// A barrier for `parties` tasks. Zero is taken as one (asyncio raises `ValueError`; a
    /// barrier for nobody has no meaning, and this constructor does not fail).
    ///
    /// ```
    /// let barrier = evloop::sync::Barrier::new(2);
    /// assert_eq!(barrier.parties(), 2);
    /// assert_eq!(evloop::sync::Barrier::new(0).parties(), 1); // zero is taken as one
    /// ```
    pub fn new(parties: usize) -> Barrier {
        Barrier {
            state: RefCell::new(BarrierState {
                parties: parties.max(1),
                broken: false,
                queue: WaitQueue::new(),
                binding: LoopBinding::default(),
            }),
        }
    }

    /// Waits until `parties` tasks wait; gives this task's arrival index, or
    /// [`SyncError::BrokenBarrier`] if the barrier is or gets broken, or
    /// [`SyncError::WrongLoop`] if it is bound to another loop than the waiting task's.
    ///
    /// ```
    /// evloop::run(async {
    ///     let barrier = evloop::sync::Barrier::new(1);
    ///     // One party: the barrier trips at once, for every round.
    ///     assert_eq!(barrier.wait().await, Ok(0));
    ///     assert_eq!(barrier.wait().await, Ok(0));
    /// })?;
    /// # Ok::<(), evloop::task::RunError>(())
    /// ```
    pub fn wait(&self) -> BarrierWait<'_> {
        BarrierWait {
            waiter: Waiter::new(&self.state, ()),
        }
    }

    /// The number of tasks needed to trip the barrier.
    ///
    /// ```
    /// let barrier = evloop::sync::Barrier::new(4);
    /// assert_eq!(barrier.parties(), 4);
    /// ```
    pub fn parties(&self) -> usize {
        self.state.borrow().parties
    }

    /// How many tasks wait in the current round.
    ///
    /// ```
    /// use std::rc::Rc;
    ///
    /// evloop::run(async {
    ///     let barrier = Rc::new(evloop::sync::Barrier::new(2));
    ///     let first = {
    ///         let barrier = barrier.clone();
    ///         evloop::spawn(async move { barrier.wait().await })
    ///     };
    ///     evloop::task::yield_now().await;
    ///     assert_eq!(barrier.n_waiting(), 1);
    ///     assert_eq!(barrier.wait().await, Ok(1)); // the second party trips it
    ///     assert_eq!(first.await?, Ok(0));
    ///     assert_eq!(barrier.n_waiting(), 0);
    ///     Ok::<(), evloop::task::TaskError>(())
    /// })??;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn n_waiting(&self) -> usize {
        self.state.borrow().queue.waiting()
    }

    /// Whether the barrier was aborted (and not reset since).
    ///
    /// ```
    /// let barrier = evloop::sync::Barrier::new(2);
    /// assert!(!barrier.broken());
    /// barrier.abort();
    /// assert!(barrier.broken());
    /// barrier.reset();
    /// assert!(!barrier.broken());
    /// ```
    pub fn broken(&self) -> bool {
        self.state.borrow().broken
    }

    /// Breaks the barrier: current and future waits fail with [`SyncError::BrokenBarrier`]
    /// until [`reset`](Barrier::reset).
    ///
    /// ```
    /// use std::rc::Rc;
    /// use evloop::sync::SyncError;
    ///
    /// evloop::run(async {
    ///     let barrier = Rc::new(evloop::sync::Barrier::new(3));
    ///     let waiter = {
    ///         let barrier = barrier.clone();
    ///         evloop::spawn(async move { barrier.wait().await })
    ///     };
    ///     evloop::task::yield_now().await;
    ///     barrier.abort(); // the waiter fails, and so does every later wait
    ///     assert_eq!(waiter.await?, Err(SyncError::BrokenBarrier { parties: 3 }));
    ///     assert_eq!(barrier.wait().await, Err(SyncError::BrokenBarrier { parties: 3 }));
    ///     Ok::<(), evloop::task::TaskError>(())
    /// })??;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn abort(&self) {
        let mut wakers = WakeList::default();
        {
            let mut st = self.state.borrow_mut();
            st.broken = true;
            st.break_waiters(&mut wakers);
        }
        wakers.wake();
    }

    /// Returns the barrier to its empty state: the tasks waiting now get
    /// [`SyncError::BrokenBarrier`], later waits start a new round (an aborted barrier works
    /// again).
    ///
    /// ```
    /// use std::rc::Rc;
    /// use evloop::sync::SyncError;
    ///
    /// evloop::run(async {
    ///     let barrier = Rc::new(evloop::sync::Barrier::new(2));
    ///     let waiter = {
    ///         let barrier = barrier.clone();
    ///         evloop::spawn(async move { barrier.wait().await })
    ///     };
    ///     evloop::task::yield_now().await;
    ///     barrier.reset(); // breaks the current round only
    ///     assert_eq!(waiter.await?, Err(SyncError::BrokenBarrier { parties: 2 }));
    ///     assert!(!barrier.broken()); // later waits start a new round
    ///     Ok::<(), evloop::task::TaskError>(())
    /// })??;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn reset(&self) {
        let mut wakers = WakeList::default();
        {
            let mut st = self.state.borrow_mut();
            st.broken = false;
            st.break_waiters(&mut wakers);
        }
        wakers.wake();
    }
}

impl fmt::Debug for Barrier {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Barrier")
            .field("parties", &self.parties())
            .field("n_waiting", &self.n_waiting())
            .field("broken", &self.broken())
            .finish()
    }
}

/// The future of [`Barrier::wait`].
///
/// ```
/// use std::time::Duration;
/// use evloop::{event_loop::Builder, sync::Barrier};
///
/// Builder::new().virtual_clock(true).run(async {
///     let barrier = Barrier::new(2);
///     // Nobody else arrives: the timeout drops the `BarrierWait`, which leaves the round.
///     let r = evloop::time::timeout(Duration::from_secs(1), barrier.wait()).await;
///     assert!(r.is_err());
///     assert_eq!(barrier.n_waiting(), 0);
/// })?;
/// # Ok::<(), evloop::task::RunError>(())
/// ```
#[must_use = "futures do nothing unless you `.await` or poll them"]
pub struct BarrierWait<'a> {
    waiter: Waiter<&'a RefCell<BarrierState>, BarrierState>,
}

impl Future for BarrierWait<'_> {
    type Output = Result<usize, SyncError>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let what = WaitOp::BarrierWait;
        let waiter = &mut self.get_mut().waiter;
        waiter
            .poll_wait(cx, what)
            .map(|r| r.unwrap_or_else(|wrong| Err(SyncError::WrongLoop(wrong))))
    }
}

impl fmt::Debug for BarrierWait<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BarrierWait")
            .field("queued", &self.waiter.is_queued())
            .finish()
    }
}
