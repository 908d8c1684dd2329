//! The loop as gevent's hub: fibers run by tasks, and blocking-style calls that park a fiber on
//! the reactor.
//!
//! [`spawn`] wraps a fiber in a task whose future switches into the fiber when polled. Inside the
//! fiber, [`block_on`] polls a future with the task's waker (the poll hands it over); while the
//! future is pending, the fiber switches back to the poll, which returns `Pending`. The future
//! stored the waker wherever it waits (a timer, a socket's readiness, a promise), so its event
//! wakes the task, the loop steps it, and the step's poll switches into the fiber again, which
//! polls the future again. There is no second scheduler: fibers reuse the task machinery
//! (wakers, cancellation, names, the task dump and trace mode), and a fiber's task shows what
//! it waits for (`Fiber-3 -> pending on fd 7`) because the leaf future notes it during the
//! fiber's poll, exactly as in an async task.
//!
//! Cancelling the task (or closing the loop) drops the future, which unwinds the fiber:
//! its pending `block_on` panics with `FiberExit`, its destructors run, and the fiber dies.
//! A panic inside the fiber is caught at its entry, delivered to the poll as an error, and
//! re-raised there (on the loop's stack), so the task ends `Panicked` like any task.

use std::cell::Cell;
use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::pin::{Pin, pin};
use std::rc::Rc;
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use crate::event_loop::LoopHandle;
use crate::event_loop::get_running_loop;
use crate::fiber::fibers::{Message, current_core};
use crate::fiber::switch::State;
use crate::fiber::transfer::{ensure_context, kill, receive, transfer};
use crate::fiber::{Builder, Fiber, FiberError, Value};
use crate::io::addr::ToSocketAddrs;
use crate::io::net::{TcpListener, TcpStream, UnixAddr, UnixListener, UnixStream};
use crate::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use crate::task::{Task, TaskBuilder};

/// What a fiber run by the loop keeps: the waker of the poll that resumed it last.
pub(crate) struct HubState {
    waker: Cell<Option<Waker>>,
}

/// The value a fiber switches to its poll with when its `block_on` is pending.
pub(crate) struct Blocked;

/// The future of a fiber's task.
struct FiberFuture<T> {
    fiber: Fiber,
    out: Rc<Cell<Option<T>>>,
}

impl<T: 'static> Future for FiberFuture<T> {
    type Output = T;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<T> {
        let this = self.get_mut();
        let core = &this.fiber.core;
        if core.state() != State::Dead {
            if let Some(hub) = &core.hub {
                let waker = match hub.waker.take() {
                    Some(w) if w.will_wake(cx.waker()) => w,
                    _ => cx.waker().clone(),
                };
                hub.waker.set(Some(waker));
            }
            // The fiber comes back here when it blocks or ends: whoever polls is its parent.
            if let Some(me) = current_core() {
                let same = core.parent.borrow().as_ref().is_some_and(|p| Rc::ptr_eq(p, &me));
                if !same {
                    let old = core.parent.replace(Some(me));
                    drop(old);
                }
            }
            let resumed = receive(transfer(core, Message::Value(Value::unit())));
            match resumed {
                Ok(_) => {}
                Err(FiberError::Panicked { mut panic, .. }) => match panic.take_payload() {
                    // Re-raised on the loop's stack: the task ends `Panicked` with the message.
                    Some(payload) => std::panic::resume_unwind(payload),
                    None => panic!("{}", panic.message()),
                },
                Err(e) => panic!("{e}"),
            }
        }
        if core.state() != State::Dead {
            return Poll::Pending;
        }
        match this.out.take() {
            Some(v) => Poll::Ready(v),
            None => panic!("fiber '{}' was thrown out before its function returned", core.label()),
        }
    }
}

impl<T> Drop for FiberFuture<T> {
    /// The task was cancelled, or the loop closed: unwind the fiber now, whatever other
    /// handles to it exist.
    fn drop(&mut self) {
        let core = &self.fiber.core;
        if matches!(core.state(), State::Suspended | State::Fresh) {
            kill(core);
        }
    }
}

/// Runs `f` in a new fiber driven by the loop running on this thread, as a task named after the
/// fiber (`Fiber-N`); await the task for `f`'s result.
///
/// Inside `f`, [`block_on`] (and [`sleep`], [`read`], [`write_all`], ...) waits for any evloop
/// future without blocking the loop: other tasks and fibers run meanwhile. The stack is
/// allocated here, so running out of memory is an error now rather than later. Cancelling the
/// task unwinds the fiber (its destructors run); a panic in `f` fails the task with
/// `TaskError::Panicked`.
///
/// ```
/// use std::time::Duration;
/// use evloop::fiber;
///
/// let out = evloop::run(async {
///     let task = fiber::spawn(|| {
///         fiber::sleep(Duration::from_millis(2)).unwrap(); // parks the fiber, not the loop
///         21 * 2
///     })
///     .unwrap();
///     task.await.unwrap()
/// })
/// .unwrap();
/// assert_eq!(out, 42);
/// ```
///
/// Errors: no loop runs on this thread ([`FiberError::Loop`]), or no stack could be
/// allocated ([`FiberError::Stack`]).
///
/// Inside the fiber, wait with [`block_on`] and the helpers built on it. A plain
/// [`Fiber::switch`] away from it is allowed, but suspends its task too: nothing polls the task
/// again until something switches back into the fiber and it waits with `block_on`.
#[track_caller]
pub fn spawn<F, T>(f: F) -> Result<Task<T>, FiberError>
where
    F: FnOnce() -> T + 'static,
    T: 'static,
{
    Builder::new().spawn(f)
}

impl Builder {
    /// [`spawn`] with this builder's name and stack size (the parent is always the poll).
    ///
    /// ```
    /// use evloop::fiber::{self, Builder};
    ///
    /// let name = evloop::run(async {
    ///     let task = Builder::new()
    ///         .name("blocking-worker")
    ///         .stack_size(128 * 1024)
    ///         .spawn(|| fiber::yield_now().map(|()| evloop::fiber::Fiber::current().name()))?;
    ///     assert_eq!(task.name(), "blocking-worker"); // the task is named after the fiber
    ///     Ok::<_, Box<dyn std::error::Error>>(task.await??)
    /// })??;
    /// assert_eq!(name, "blocking-worker");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[track_caller]
    pub fn spawn<F, T>(self, f: F) -> Result<Task<T>, FiberError>
    where
        F: FnOnce() -> T + 'static,
        T: 'static,
    {
        let lp = get_running_loop().map_err(FiberError::Loop)?;
        self.spawn_at(&lp, f)
    }

    /// [`spawn`] on `lp` (which need not be running yet: the task's first step waits for it).
    ///
    /// ```
    /// use std::time::Duration;
    /// use evloop::fiber::{self, Builder};
    /// use evloop::event_loop::EventLoop;
    ///
    /// let lp = EventLoop::builder().virtual_clock(true).build()?;
    /// let task = Builder::new().spawn_on(&lp, || {
    ///     fiber::sleep(Duration::from_secs(1))?; // blocking style, on the loop
    ///     Ok::<_, fiber::FiberError>("slept")
    /// })?;
    /// assert_eq!(lp.run_until_complete(task)???, "slept");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[track_caller]
    pub fn spawn_on<F, T>(self, lp: &LoopHandle, f: F) -> Result<Task<T>, FiberError>
    where
        F: FnOnce() -> T + 'static,
        T: 'static,
    {
        self.spawn_at(lp, f)
    }

    /// Both spawns, keeping the caller's location for the task (`#[track_caller]` all the way
    /// down to `TaskBuilder::spawn_on`).
    #[track_caller]
    fn spawn_at<F, T>(self, lp: &LoopHandle, f: F) -> Result<Task<T>, FiberError>
    where
        F: FnOnce() -> T + 'static,
        T: 'static,
    {
        let out = Rc::new(Cell::new(None));
        let slot = out.clone();
        let body = Box::new(move |_: Value| {
            slot.set(Some(f()));
            Value::unit()
        });
        let fiber = self.make(body, Some(HubState { waker: Cell::new(None) }));
        ensure_context(&fiber.core)?;
        let name = fiber.name();
        TaskBuilder::new()
            .name(name)
            .spawn_on(lp, FiberFuture { fiber, out })
            .map_err(FiberError::Loop)
    }
}

/// Waits for `fut` inside a fiber run by the loop, letting the loop run everything else
/// meanwhile; returns its output (gevent's blocking calls, for any evloop future).
///
/// The future is polled with the fiber's task's waker; while it is pending, the fiber switches
/// back to the loop and resumes when the task is woken. Errors, never a hang:
/// [`FiberError::NotInLoopFiber`] outside a fiber started with [`spawn`] (on the loop's own
/// stack the loop would wait for itself), [`FiberError::Cancelled`] while the fiber is being
/// unwound (its task was cancelled). When the task is cancelled during the wait, `block_on`
/// does not return: the fiber unwinds from here (destructors run, `fut` is dropped).
///
/// ```
/// use evloop::fiber;
///
/// // On the loop's own stack it is an error, not a deadlock.
/// let e = evloop::run(async { fiber::block_on(async { 1 }) }).unwrap().unwrap_err();
/// assert!(e.to_string().contains("not a fiber run by the loop"), "{e}");
/// ```
pub fn block_on<F: Future>(fut: F) -> Result<F::Output, FiberError> {
    let me = current_core().ok_or_else(|| FiberError::ThreadExiting)?;
    let Some(hub) = &me.hub else {
        return Err(FiberError::NotInLoopFiber {
            op: "fiber::block_on",
            fiber: me.label(),
        });
    };
    let mut fut = pin!(fut);
    loop {
        if me.killing.get() {
            return Err(FiberError::Cancelled { fiber: me.label() });
        }
        let Some(waker) = hub.waker.take() else {
            // Resumed by a plain switch before the loop ever polled it.
            return Err(FiberError::NotInLoopFiber {
                op: "fiber::block_on",
                fiber: me.label(),
            });
        };
        let polled = fut.as_mut().poll(&mut Context::from_waker(&waker));
        hub.waker.set(Some(waker));
        if let Poll::Ready(v) = polled {
            return Ok(v);
        }
        let Some(poller) = me.parent_core() else {
            return Err(FiberError::ThreadExiting);
        };
        receive(transfer(&poller, Message::Value(Value::new(Blocked))))?;
    }
}

/// Sleeps for `d` inside a fiber run by the loop (`block_on(evloop::time::sleep(d))`): never early.
///
/// ```
/// use std::time::Duration;
/// use evloop::{event_loop::Builder, fiber};
///
/// let elapsed = Builder::new().virtual_clock(true).run(async {
///     let lp = evloop::event_loop::get_running_loop()?;
///     let start = lp.time();
///     let task = fiber::spawn(move || fiber::sleep(Duration::from_secs(5)).map(|()| lp.time() - start))?;
///     Ok::<_, Box<dyn std::error::Error>>(task.await??)
/// })??;
/// assert!(elapsed >= Duration::from_secs(5)); // never early
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn sleep(d: Duration) -> Result<(), FiberError> {
    block_on(crate::task::time::sleep(d))
}

/// Lets every other ready task and fiber run once (`block_on(evloop::task::yield_now())`).
///
/// ```
/// use std::cell::RefCell;
/// use std::rc::Rc;
/// use evloop::fiber;
///
/// let log = evloop::run(async {
///     let log = Rc::new(RefCell::new(Vec::new()));
///     let l = log.clone();
///     let task = fiber::spawn(move || {
///         l.borrow_mut().push("fiber: before");
///         fiber::yield_now()?; // lets the async task below run once
///         l.borrow_mut().push("fiber: after");
///         Ok::<(), fiber::FiberError>(())
///     })?;
///     let l = log.clone();
///     evloop::spawn(async move { l.borrow_mut().push("task") });
///     task.await??;
///     Ok::<_, Box<dyn std::error::Error>>(log.take())
/// })??;
/// assert_eq!(log, ["fiber: before", "task", "fiber: after"]);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn yield_now() -> Result<(), FiberError> {
    block_on(crate::task::yield_now())
}

/// Accepts a connection, blocking this fiber (not the loop) until one arrives.
///
/// ```
/// use evloop::fiber;
/// use evloop::net::TcpListener;
///
/// evloop::run(async {
///     let listener = TcpListener::bind("127.0.0.1:0").await?;
///     let addr = listener.local_addr()?;
///     // A blocking-style server in a fiber: accept, read, answer.
///     let server = fiber::spawn(move || -> std::io::Result<()> {
///         let (mut conn, _) = fiber::accept(&listener)?;
///         let mut buf = [0; 4];
///         fiber::read_exact(&mut conn, &mut buf)?;
///         fiber::write_all(&mut conn, b"pong")
///     })?;
///     let client = fiber::spawn(move || -> std::io::Result<Vec<u8>> {
///         let mut conn = fiber::connect(addr)?;
///         fiber::write_all(&mut conn, b"ping")?;
///         let mut buf = [0; 4];
///         fiber::read_exact(&mut conn, &mut buf)?;
///         Ok(buf.to_vec())
///     })?;
///     assert_eq!(client.await??, b"pong");
///     server.await??;
///     Ok::<(), Box<dyn std::error::Error>>(())
/// })??;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn accept(listener: &TcpListener) -> io::Result<(TcpStream, SocketAddr)> {
    block_on(listener.accept())?
}

/// Accepts a Unix-socket connection, blocking this fiber until one arrives.
///
/// ```
/// use evloop::fiber;
/// use evloop::net::{UnixAddr, UnixListener, UnixStream};
///
/// evloop::run(async {
///     let addr = UnixAddr::abstract_name(format!("evloop-doc-{}", std::process::id()).as_bytes())?;
///     let listener = UnixListener::bind(&addr)?;
///     let server = fiber::spawn(move || -> std::io::Result<usize> {
///         let (mut conn, _) = fiber::accept_unix(&listener)?; // blocks the fiber, not the loop
///         fiber::read(&mut conn, &mut [0; 8])
///     })?;
///     let mut client = UnixStream::connect(&addr).await?;
///     evloop::io::AsyncWriteExt::write_all(&mut client, b"hey").await?;
///     assert_eq!(server.await??, 3);
///     Ok::<(), Box<dyn std::error::Error>>(())
/// })??;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn accept_unix(listener: &UnixListener) -> io::Result<(UnixStream, UnixAddr)> {
    block_on(listener.accept())?
}

/// Connects to `addr` (anything [`ToSocketAddrs`] takes: `"127.0.0.1:8080"`,
/// `("localhost", 8080)`, a `SocketAddr`; `TCP_NODELAY` on), blocking this fiber until the
/// connection is established; a name is resolved on the loop's executor meanwhile.
///
/// ```
/// use evloop::fiber;
/// use evloop::net::TcpListener;
///
/// evloop::run(async {
///     let listener = TcpListener::bind("127.0.0.1:0").await?;
///     let port = listener.local_addr()?.port();
///     let task = fiber::spawn(move || fiber::connect(("127.0.0.1", port)).and_then(|s| s.peer_addr()))?;
///     assert_eq!(task.await??.port(), port);
///     Ok::<(), Box<dyn std::error::Error>>(())
/// })??;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn connect<A: ToSocketAddrs>(addr: A) -> io::Result<TcpStream> {
    block_on(TcpStream::connect(addr))?
}

/// Reads some bytes into `buf`, blocking this fiber until at least one arrives; 0 is the end of
/// the stream.
///
/// ```
/// use evloop::fiber;
/// use evloop::net::UnixStream;
///
/// evloop::run(async {
///     let (mut a, mut b) = UnixStream::pair()?;
///     let reader = fiber::spawn(move || -> std::io::Result<Vec<u8>> {
///         let mut buf = [0; 16];
///         let n = fiber::read(&mut a, &mut buf)?; // waits for the write below
///         Ok(buf[..n].to_vec())
///     })?;
///     evloop::io::AsyncWriteExt::write_all(&mut b, b"data").await?;
///     assert_eq!(reader.await??, b"data");
///     Ok::<(), Box<dyn std::error::Error>>(())
/// })??;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn read<R: AsyncRead + Unpin + ?Sized>(reader: &mut R, buf: &mut [u8]) -> io::Result<usize> {
    block_on(reader.read(buf))?
}

/// Fills `buf`, blocking this fiber; `UnexpectedEof` if the stream ends first.
///
/// ```
/// use evloop::fiber;
///
/// evloop::run(async {
///     let task = fiber::spawn(|| {
///         let mut src: &[u8] = b"abcdef";
///         let mut first = [0; 4];
///         fiber::read_exact(&mut src, &mut first)?;
///         let short = fiber::read_exact(&mut src, &mut [0; 4]); // two bytes left
///         Ok::<_, std::io::Error>((first, short.map_err(|e| e.kind())))
///     })?;
///     let (first, short) = task.await??;
///     assert_eq!(&first, b"abcd");
///     assert_eq!(short, Err(std::io::ErrorKind::UnexpectedEof));
///     Ok::<(), Box<dyn std::error::Error>>(())
/// })??;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn read_exact<R: AsyncRead + Unpin + ?Sized>(reader: &mut R, buf: &mut [u8]) -> io::Result<()> {
    block_on(reader.read_exact(buf))?.map(drop)
}

/// Writes some of `buf`, blocking this fiber until the socket takes at least one byte.
///
/// ```
/// use evloop::fiber;
///
/// evloop::run(async {
///     let task = fiber::spawn(|| {
///         let mut out = Vec::new();
///         let n = fiber::write(&mut out, b"some")?; // some of it: check how much
///         Ok::<_, std::io::Error>((n, out))
///     })?;
///     let (n, out) = task.await??;
///     assert_eq!(&out[..], &b"some"[..n]);
///     Ok::<(), Box<dyn std::error::Error>>(())
/// })??;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn write<W: AsyncWrite + Unpin + ?Sized>(writer: &mut W, buf: &[u8]) -> io::Result<usize> {
    block_on(writer.write(buf))?
}

/// Writes all of `buf`, blocking this fiber while the socket's buffer is full.
///
/// ```
/// use evloop::fiber;
/// use evloop::net::UnixStream;
/// use evloop::io::AsyncReadExt;
///
/// evloop::run(async {
///     let (mut a, mut b) = UnixStream::pair()?;
///     let writer = fiber::spawn(move || {
///         let big = vec![b'x'; 1 << 20]; // more than the socket buffer: the fiber waits for room
///         fiber::write_all(&mut a, &big)
///     })?;
///     let mut got = Vec::new();
///     let mut chunk = [0; 65536];
///     while got.len() < 1 << 20 {
///         let n = b.read(&mut chunk).await?;
///         got.extend_from_slice(&chunk[..n]);
///     }
///     writer.await??;
///     assert_eq!(got.len(), 1 << 20);
///     Ok::<(), Box<dyn std::error::Error>>(())
/// })??;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn write_all<W: AsyncWrite + Unpin + ?Sized>(writer: &mut W, buf: &[u8]) -> io::Result<()> {
    block_on(writer.write_all(buf))?
}
