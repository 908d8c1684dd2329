//! tokio_test's mock task and assertion macros, for the ports of tokio's own tests
//! (tests/tests/tokio_ported, tests/tests/tokio_sync_ported).
//!
//! `spawn(fut)` boxes and pins a future (or stream); `poll()` polls it with a waker that only
//! records its wake-ups, so a test can ask `is_woken()` (woken since the last poll) and
//! `waker_ref_count()` (the task's own reference plus each clone a primitive keeps). No loop
//! runs: the primitives under test must work with any waker, as tokio's do. The `assert_*!`
//! macros are exported at this crate's root (`#[macro_use] extern crate evloop_tests;`).

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll, Wake, Waker};

use evloop::stream::Stream;

/// The waker's shared state: set by a wake, cleared by the next poll.
#[derive(Default)]
struct Flag {
    woken: AtomicBool,
}

impl Wake for Flag {
    fn wake(self: Arc<Self>) {
        self.woken.store(true, Ordering::SeqCst);
    }
    fn wake_by_ref(self: &Arc<Self>) {
        self.woken.store(true, Ordering::SeqCst);
    }
}

/// A future under test, polled by hand (tokio_test's `task::Spawn`).
pub struct Spawn<T> {
    flag: Arc<Flag>,
    future: Pin<Box<T>>,
}

/// Wraps `future` in a mock task (tokio_test's `task::spawn`).
pub fn spawn<T>(future: T) -> Spawn<T> {
    Spawn {
        flag: Arc::new(Flag::default()),
        future: Box::pin(future),
    }
}

impl<T> Spawn<T> {
    /// Woken since the last poll.
    pub fn is_woken(&self) -> bool {
        self.flag.woken.load(Ordering::SeqCst)
    }

    /// The task's waker references: 1 for the task itself, plus each clone a primitive keeps
    /// (tokio_test counts the same way).
    pub fn waker_ref_count(&self) -> usize {
        Arc::strong_count(&self.flag)
    }

    /// Runs `f` with the task's context and the pinned future (tokio_test's `enter`).
    pub fn enter<F, R>(&mut self, f: F) -> R
    where
        F: FnOnce(&mut Context<'_>, Pin<&mut T>) -> R,
    {
        self.flag.woken.store(false, Ordering::SeqCst);
        let waker = Waker::from(self.flag.clone());
        let mut cx = Context::from_waker(&waker);
        f(&mut cx, self.future.as_mut())
    }
}

impl<T: Unpin> Spawn<T> {
    /// The value under test, out of the mock task (tokio_test's `into_inner`).
    pub fn into_inner(self) -> T {
        *Pin::into_inner(self.future)
    }
}

impl<T: Unpin> std::ops::Deref for Spawn<T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.future
    }
}

impl<T: Unpin> std::ops::DerefMut for Spawn<T> {
    fn deref_mut(&mut self) -> &mut T {
        &mut self.future
    }
}

impl<T: Future> Spawn<T> {
    /// Polls the future once with the task's waker.
    pub fn poll(&mut self) -> Poll<T::Output> {
        self.enter(|cx, f| f.poll(cx))
    }
}

impl<T: Stream> Spawn<T> {
    /// Polls the stream once.
    pub fn poll_next(&mut self) -> Poll<Option<T::Item>> {
        self.enter(|cx, s| s.poll_next(cx))
    }
}

impl<T: Future> Future for Spawn<T> {
    type Output = T::Output;
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<T::Output> {
        self.future.as_mut().poll(cx)
    }
}

impl<T: Stream> Stream for Spawn<T> {
    type Item = T::Item;
    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<T::Item>> {
        self.future.as_mut().poll_next(cx)
    }
}

/// futures' `FutureExt::now_or_never`: one poll with a waker that does nothing.
pub fn now_or_never<F: Future>(f: F) -> Option<F::Output> {
    let mut f = std::pin::pin!(f);
    match f.as_mut().poll(&mut Context::from_waker(Waker::noop())) {
        Poll::Ready(v) => Some(v),
        Poll::Pending => None,
    }
}

/// futures' `ArcWake` for values that belong to this thread: the tests' wakers that send on a
/// channel or query it when woken or dropped hold evloop's single-threaded handles, which std's
/// `Wake` (it needs `Send + Sync`) cannot hold. The value stays in a thread-local table under a
/// key; the waker holds the key, calls the value's `wake_by_ref` when woken, and drops the value
/// with its last clone.
pub trait LocalWake {
    /// What the waker does when woken.
    fn wake_by_ref(&self);
}

thread_local! {
    static LOCAL_WAKERS: std::cell::RefCell<std::collections::HashMap<u64, std::rc::Rc<dyn LocalWake>>> =
        std::cell::RefCell::new(std::collections::HashMap::new());
    static NEXT_KEY: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

struct LocalKey(u64);

impl Wake for LocalKey {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }
    fn wake_by_ref(self: &Arc<Self>) {
        let value = LOCAL_WAKERS.with(|t| t.borrow().get(&self.0).cloned());
        value.expect("a local waker is woken on its own thread").wake_by_ref();
    }
}

impl Drop for LocalKey {
    fn drop(&mut self) {
        // Out of the table first, dropped after: the value's drop may make or drop wakers.
        let value = LOCAL_WAKERS.with(|t| t.borrow_mut().remove(&self.0));
        drop(value);
    }
}

/// A waker for `value` (futures' `task::waker(Arc::new(value))`).
pub fn local_waker(value: std::rc::Rc<dyn LocalWake>) -> Waker {
    let key = NEXT_KEY.with(|k| {
        let n = k.get();
        k.set(n + 1);
        n
    });
    LOCAL_WAKERS.with(|t| t.borrow_mut().insert(key, value));
    Waker::from(Arc::new(LocalKey(key)))
}

/// tokio_test's `assert_ready!`: the value of a `Poll::Ready`.
#[macro_export]
macro_rules! assert_ready {
    ($e:expr) => {
        match $e {
            std::task::Poll::Ready(v) => v,
            std::task::Poll::Pending => panic!("pending"),
        }
    };
    ($e:expr, $($msg:tt)+) => {
        match $e {
            std::task::Poll::Ready(v) => v,
            std::task::Poll::Pending => panic!("pending; {}", format_args!($($msg)+)),
        }
    };
}

/// tokio_test's `assert_pending!`.
#[macro_export]
macro_rules! assert_pending {
    ($e:expr) => {
        match $e {
            std::task::Poll::Pending => {}
            std::task::Poll::Ready(v) => panic!("ready; value = {:?}", v),
        }
    };
    ($e:expr, $($msg:tt)+) => {
        match $e {
            std::task::Poll::Pending => {}
            std::task::Poll::Ready(v) => panic!("ready; value = {:?}; {}", v, format_args!($($msg)+)),
        }
    };
}

/// tokio_test's `assert_ok!`.
#[macro_export]
macro_rules! assert_ok {
    ($e:expr) => {
        match $e {
            Ok(v) => v,
            Err(e) => panic!("assertion failed: Err({:?})", e),
        }
    };
    ($e:expr, $($msg:tt)+) => {
        match $e {
            Ok(v) => v,
            Err(e) => panic!("assertion failed: Err({:?}): {}", e, format_args!($($msg)+)),
        }
    };
}

/// tokio_test's `assert_err!`.
#[macro_export]
macro_rules! assert_err {
    ($e:expr) => {
        match $e {
            Ok(v) => panic!("assertion failed: Ok({:?})", v),
            Err(e) => e,
        }
    };
    ($e:expr, $($msg:tt)+) => {
        match $e {
            Ok(v) => panic!("assertion failed: Ok({:?}): {}", v, format_args!($($msg)+)),
            Err(e) => e,
        }
    };
}

/// tokio_test's `assert_ready_ok!`.
#[macro_export]
macro_rules! assert_ready_ok {
    ($e:expr) => {
        $crate::assert_ok!($crate::assert_ready!($e))
    };
}

/// tokio_test's `assert_ready_err!`.
#[macro_export]
macro_rules! assert_ready_err {
    ($e:expr) => {
        $crate::assert_err!($crate::assert_ready!($e))
    };
}

/// tokio_test's `assert_ready_eq!`.
#[macro_export]
macro_rules! assert_ready_eq {
    ($e:expr, $expect:expr) => {
        assert_eq!($crate::assert_ready!($e), $expect)
    };
}

/// tokio_test's `assert_elapsed!`: `start.elapsed()` is at least `dur` and at most 1 ms more
/// (tokio's timer wheel rounds deadlines up to whole milliseconds; evloop's timers are exact, so
/// the slack is unused under a paused clock).
#[macro_export]
macro_rules! assert_elapsed {
    ($start:expr, $dur:expr) => {{
        let elapsed = $start.elapsed();
        let lower: std::time::Duration = $dur;
        assert!(
            elapsed >= lower && elapsed <= lower + std::time::Duration::from_millis(1),
            "actual = {:?}, expected = {:?}",
            elapsed,
            lower
        );
    }};
}
