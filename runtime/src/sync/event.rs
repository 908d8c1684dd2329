//! [`Event`]: asyncio's `Event`, a flag that tasks wait for; `set` wakes every waiter.

use std::cell::RefCell;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use crate::sync::binding::LoopBinding;
use crate::sync::error::SyncError;
use crate::sync::ops::WaitOp;
use crate::sync::wait_queue::{Line, WaitQueue, Waiter, WakeList};

struct EventState {
    set: bool,
    queue: WaitQueue<()>,
    binding: LoopBinding,
}

impl Line for EventState {
    type State = EventState;
    type Grant = ();
    type Carry = ();
    type Output = ();

    fn queue(st: &mut EventState) -> &mut WaitQueue<()> {
        &mut st.queue
    }

    fn binding(st: &EventState) -> &LoopBinding {
        &st.binding
    }

    fn arrive(st: &mut EventState, _: &mut (), _: &mut WakeList) -> Option<()> {
        st.set.then_some(())
    }

    fn take(_: &mut EventState, (): (), _: &mut (), _: &mut WakeList) {}

    // `set` woke every waiter: nobody is left to pass a wakeup to.
    fn pass_on(_: &mut EventState, (): (), _: &mut WakeList) {}
}

/// A flag tasks can wait for (asyncio's `Event`): [`set`](Event::set) wakes every waiter.
///
/// A waiter woken by `set()` returns even if the event is cleared again before its task runs.
///
/// ```
/// use std::rc::Rc;
///
/// let got = evloop::run(async {
///     let ready = Rc::new(evloop::sync::Event::new());
///     let waiter = {
///         let ready = ready.clone();
///         evloop::spawn(async move {
///             ready.wait().await.unwrap();
///             "woken"
///         })
///     };
///     evloop::task::yield_now().await;
///     assert!(!waiter.done());
///     ready.set();
///     waiter.await
/// })??;
/// assert_eq!(got, "woken");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct Event {
    state: RefCell<EventState>,
}

impl Event {
    /// A new event, not set.
    ///
    /// ```
    /// let event = evloop::sync::Event::new();
    /// assert!(!event.is_set());
    /// ```
    pub fn new() -> Event {
        Event {
            state: RefCell::new(EventState {
                set: false,
                queue: WaitQueue::new(),
                binding: LoopBinding::default(),
            }),
        }
    }

    /// Sets the flag and wakes every waiter.
    ///
    /// ```
    /// evloop::run(async {
    ///     let event = evloop::sync::Event::new();
    ///     event.set();
    ///     assert!(event.is_set());
    ///     event.wait().await.unwrap(); // set: returns at once
    /// })?;
    /// # Ok::<(), evloop::task::RunError>(())
    /// ```
    pub fn set(&self) {
        let mut wakers = WakeList::default();
        {
            let mut st = self.state.borrow_mut();
            if st.set {
                return;
            }
            st.set = true;
            st.queue.grant_while(|| Some(()), &mut wakers);
        }
        wakers.wake();
    }

    /// Clears the flag: later waits wait for the next `set()`.
    ///
    /// ```
    /// let event = evloop::sync::Event::new();
    /// event.set();
    /// event.clear();
    /// assert!(!event.is_set()); // a wait would wait for the next `set()`
    /// ```
    pub fn clear(&self) {
        self.state.borrow_mut().set = false;
    }

    /// Whether the flag is set.
    ///
    /// ```
    /// let event = evloop::sync::Event::new();
    /// assert!(!event.is_set());
    /// event.set();
    /// assert!(event.is_set());
    /// ```
    pub fn is_set(&self) -> bool {
        self.state.borrow().set
    }

    /// Waits until the flag is set (at once if it is).
    ///
    /// # Errors
    /// [`SyncError::WrongLoop`](crate::sync::SyncError::WrongLoop) when a task of another loop
    /// than the one it is bound to would have to wait, as for
    /// [`Lock::acquire`](crate::sync::Lock::acquire).
    ///
    /// ```
    /// use std::rc::Rc;
    ///
    /// evloop::run(async {
    ///     let event = Rc::new(evloop::sync::Event::new());
    ///     let setter = event.clone();
    ///     evloop::spawn(async move { setter.set() });
    ///     event.wait().await.unwrap(); // until the task sets it
    ///     assert!(event.is_set());
    /// })?;
    /// # Ok::<(), evloop::task::RunError>(())
    /// ```
    pub fn wait(&self) -> EventWait<'_> {
        EventWait {
            waiter: Waiter::new(&self.state, ()),
        }
    }

    /// How many tasks wait for the flag.
    ///
    /// ```
    /// use std::rc::Rc;
    ///
    /// evloop::run(async {
    ///     let event = Rc::new(evloop::sync::Event::new());
    ///     let tasks: Vec<_> = (0..2)
    ///         .map(|_| {
    ///             let event = event.clone();
    ///             evloop::spawn(async move { event.wait().await })
    ///         })
    ///         .collect();
    ///     evloop::task::yield_now().await;
    ///     assert_eq!(event.waiters(), 2);
    ///     event.set(); // wakes both
    ///     for t in tasks {
    ///         t.await?;
    ///     }
    ///     assert_eq!(event.waiters(), 0);
    ///     Ok::<(), evloop::task::TaskError>(())
    /// })??;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn waiters(&self) -> usize {
        self.state.borrow().queue.waiting()
    }
}

impl Default for Event {
    fn default() -> Self {
        Event::new()
    }
}

impl fmt::Debug for Event {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Event")
            .field("set", &self.is_set())
            .field("waiters", &self.waiters())
            .finish()
    }
}

/// The future of [`Event::wait`].
///
/// ```
/// use std::time::Duration;
/// use evloop::{event_loop::Builder, sync::Event};
///
/// Builder::new().virtual_clock(true).run(async {
///     let event = Event::new();
///     // Nobody sets it: the timeout drops the `EventWait`, which leaves the waiters.
///     let r = evloop::time::timeout(Duration::from_secs(1), event.wait()).await;
///     assert!(r.is_err());
///     assert_eq!(event.waiters(), 0);
/// })?;
/// # Ok::<(), evloop::task::RunError>(())
/// ```
#[must_use = "futures do nothing unless you `.await` or poll them"]
pub struct EventWait<'a> {
    waiter: Waiter<&'a RefCell<EventState>, EventState>,
}

impl Future for EventWait<'_> {
    type Output = Result<(), SyncError>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let what = WaitOp::EventWait;
        self.get_mut()
            .waiter
            .poll_wait(cx, what)
            .map(|r| r.map_err(SyncError::WrongLoop))
    }
}

impl fmt::Debug for EventWait<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("EventWait")
            .field("queued", &self.waiter.is_queued())
            .finish()
    }
}
