//! tokio/tests/io_async_fd.rs (tokio's current file, 22 tests): the guard-based `AsyncFd` API
//! (`readable()` -> `AsyncFdReadyGuard`, `clear_ready`, `retain_ready`, `try_io` on the guard,
//! `poll_read_ready`, `ready_mut`, `clear_ready_matching`, `Interest::ERROR`, `try_new`), the
//! readiness it keeps until cleared, every waiter woken, and a closed loop's errors.
//!
//! Changed beyond imports (evloop has no `nix`, `futures` or `tokio_test` dependency here):
//! - `FileDescriptor` wraps std's `UnixStream` (from `UnixStream::pair()`, non-blocking) in
//!   place of nix's raw fd calls, and implements `AsFd` too: evloop's `AsyncFd<T>` takes
//!   `T: AsFd` (an fd known valid), tokio's `T: AsRawFd`. `ArcFd` likewise.
//! - `futures::task::ArcWake` is std's `Wake`, `futures::poll!` the `poll!` below,
//!   `futures::future::try_join_all` is `evloop::task::try_gather` (pinned with `evloop::pin!`
//!   in place of `Pin::new`), `futures::future::pending` std's `pending`,
//!   `futures::executor::block_on` the `block_on` below (a thread-parking executor, no loop);
//!   `tokio::sync::Barrier` is `evloop::sync::Barrier`, whose `wait` returns a `Result`
//!   (`let _ =` before it).
//! - tokio's runtime becomes an `EventLoop`: `rt.enter()` + `AsyncFd::new` is
//!   `AsyncFd::with_loop(&lp, ..)`, `rt.block_on` is `lp.block_on`, and dropping the runtime
//!   is dropping the loop (which closes it). The `driver_shutdown_wakes_currently_pending*`
//!   tests poll their pending futures once inside `lp.block_on`: evloop answers a readiness
//!   poll outside the fd's running loop with an error (`WrongLoopError`) rather than `Pending`.
//! - `try_new`/`try_with_interest`: `InvalidSource` is `/dev/null` (which epoll refuses with
//!   `EPERM`) in place of a source whose raw fd is -1, which `AsFd` cannot express.
//!
//! Not ported (2): `driver_shutdown_wakes_pending_race` and `driver_shutdown_wakes_poll_race`
//! drop the runtime on another thread while the fd is polled (an evloop loop is bound to its
//! thread: it is not `Send`). `priority_event_on_oob_data` runs since `Interest::PRIORITY`
//! registers the fd with `EPOLLPRI`.

// One thread: the `Arc`s of tokio's text hold `!Send` values here, as they may.
#![allow(clippy::arc_with_non_send_sync)]
// `evloop::select!` drops the output of a `_ =` branch with `drop`, which clippy flags for a
// value without a `Drop` impl (a guard holds only a borrow); tokio's macro, from another crate,
// escapes the lint.
#![allow(clippy::drop_non_drop)]
// The driver tests hand a pending future out of `lp.block_on` on purpose.
#![allow(clippy::async_yields_async)]

use std::os::fd::{AsFd, BorrowedFd};
use std::os::unix::io::{AsRawFd, RawFd};
use std::os::unix::net::UnixStream;
use std::sync::{
    Arc,
    atomic::{AtomicBool, Ordering},
};
use std::time::Duration;
use std::{
    future::Future,
    io::{self, ErrorKind, Read, Write},
    task::{Context, Waker},
};

use evloop::event_loop::EventLoop;
use evloop::io::Interest;
use evloop::io::{AsyncFd, AsyncFdReadyGuard};

/// `futures::poll!`: polls a future once in the current task's context.
macro_rules! poll {
    ($e:expr) => {{
        let mut fut = std::pin::pin!($e);
        std::future::poll_fn(|cx| std::task::Poll::Ready(fut.as_mut().poll(cx))).await
    }};
}

/// `futures::executor::block_on`: polls `fut` on this thread, parking between wake-ups.
fn block_on<F: Future>(fut: F) -> F::Output {
    struct Unpark(std::thread::Thread);
    impl std::task::Wake for Unpark {
        fn wake(self: Arc<Self>) {
            self.0.unpark();
        }
    }
    let waker = Waker::from(Arc::new(Unpark(std::thread::current())));
    let mut cx = Context::from_waker(&waker);
    let mut fut = std::pin::pin!(fut);
    loop {
        if let std::task::Poll::Ready(v) = fut.as_mut().poll(&mut cx) {
            return v;
        }
        std::thread::park();
    }
}

struct TestWaker {
    inner: Arc<TestWakerInner>,
    waker: Waker,
}

#[derive(Default)]
struct TestWakerInner {
    awoken: AtomicBool,
}

impl std::task::Wake for TestWakerInner {
    fn wake(self: Arc<Self>) {
        self.awoken.store(true, Ordering::SeqCst);
    }
}

impl TestWaker {
    fn new() -> Self {
        let inner: Arc<TestWakerInner> = Default::default();

        Self {
            inner: inner.clone(),
            waker: Waker::from(inner),
        }
    }

    fn awoken(&self) -> bool {
        self.inner.awoken.swap(false, Ordering::SeqCst)
    }

    fn context(&self) -> Context<'_> {
        Context::from_waker(&self.waker)
    }
}

#[derive(Debug)]
struct FileDescriptor {
    fd: UnixStream,
}

impl AsRawFd for FileDescriptor {
    fn as_raw_fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }
}

impl AsFd for FileDescriptor {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }
}

impl Read for &FileDescriptor {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        (&self.fd).read(buf)
    }
}

impl Read for FileDescriptor {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        (self as &Self).read(buf)
    }
}

impl Write for &FileDescriptor {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        (&self.fd).write(buf)
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl Write for FileDescriptor {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        (self as &Self).write(buf)
    }

    fn flush(&mut self) -> io::Result<()> {
        (self as &Self).flush()
    }
}

fn socketpair() -> (FileDescriptor, FileDescriptor) {
    let (fd_a, fd_b) = UnixStream::pair().expect("socketpair");
    fd_a.set_nonblocking(true).expect("fcntl(F_SETFD)");
    fd_b.set_nonblocking(true).expect("fcntl(F_SETFD)");
    (FileDescriptor { fd: fd_a }, FileDescriptor { fd: fd_b })
}

fn drain(mut fd: &FileDescriptor, mut amt: usize) {
    let mut buf = [0u8; 512];
    while amt > 0 {
        match fd.read(&mut buf[..]) {
            Err(e) if e.kind() == ErrorKind::WouldBlock => {}
            Ok(0) => panic!("unexpected EOF"),
            Err(e) => panic!("unexpected error: {:?}", e),
            Ok(x) => amt -= x,
        }
    }
}

#[evloop::test]
async fn initially_writable() {
    let (a, b) = socketpair();

    let afd_a = AsyncFd::new(a).unwrap();
    let afd_b = AsyncFd::new(b).unwrap();

    afd_a.writable().await.unwrap().clear_ready();
    afd_b.writable().await.unwrap().clear_ready();

    evloop::select! {
        biased;
        _ = evloop::time::sleep(Duration::from_millis(10)) => {},
        _ = afd_a.readable() => panic!("Unexpected readable state"),
        _ = afd_b.readable() => panic!("Unexpected readable state"),
    }
}

#[evloop::test]
async fn reset_readable() {
    let (a, mut b) = socketpair();

    let afd_a = AsyncFd::new(a).unwrap();

    let readable = afd_a.readable();
    evloop::pin!(readable);

    evloop::select! {
        _ = readable.as_mut() => panic!(),
        _ = evloop::time::sleep(Duration::from_millis(10)) => {}
    }

    b.write_all(b"0").unwrap();

    let mut guard = readable.await.unwrap();

    guard.try_io(|_| afd_a.get_ref().read(&mut [0])).unwrap().unwrap();

    // `a` is not readable, but the reactor still thinks it is
    // (because we have not observed a not-ready error yet)
    afd_a.readable().await.unwrap().retain_ready();

    // Explicitly clear the ready state
    guard.clear_ready();

    let readable = afd_a.readable();
    evloop::pin!(readable);

    evloop::select! {
        _ = readable.as_mut() => panic!(),
        _ = evloop::time::sleep(Duration::from_millis(10)) => {}
    }

    b.write_all(b"0").unwrap();

    // We can observe the new readable event
    afd_a.readable().await.unwrap().clear_ready();
}

#[evloop::test]
async fn reset_writable() {
    let (a, b) = socketpair();

    let afd_a = AsyncFd::new(a).unwrap();

    let mut guard = afd_a.writable().await.unwrap();

    // Write until we get a WouldBlock. This also clears the ready state.
    let mut bytes = 0;
    while let Ok(Ok(amt)) = guard.try_io(|_| afd_a.get_ref().write(&[0; 512][..])) {
        bytes += amt;
    }

    // Writable state should be cleared now.
    let writable = afd_a.writable();
    evloop::pin!(writable);

    evloop::select! {
        _ = writable.as_mut() => panic!(),
        _ = evloop::time::sleep(Duration::from_millis(10)) => {}
    }

    // Read from the other side; we should become writable now.
    drain(&b, bytes);

    let _ = writable.await.unwrap();
}

#[derive(Debug)]
struct ArcFd<T>(Arc<T>);
impl<T: AsRawFd> AsRawFd for ArcFd<T> {
    fn as_raw_fd(&self) -> RawFd {
        self.0.as_raw_fd()
    }
}
impl<T: AsFd> AsFd for ArcFd<T> {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.0.as_fd()
    }
}

#[evloop::test]
async fn drop_closes() {
    let (a, mut b) = socketpair();

    let afd_a = AsyncFd::new(a).unwrap();

    assert_eq!(ErrorKind::WouldBlock, b.read(&mut [0]).err().unwrap().kind());

    std::mem::drop(afd_a);

    assert_eq!(0, b.read(&mut [0]).unwrap());

    // into_inner does not close the fd

    let (a, mut b) = socketpair();
    let afd_a = AsyncFd::new(a).unwrap();
    let _a: FileDescriptor = afd_a.into_inner();

    assert_eq!(ErrorKind::WouldBlock, b.read(&mut [0]).err().unwrap().kind());

    // Drop closure behavior is delegated to the inner object
    let (a, mut b) = socketpair();
    let arc_fd = Arc::new(a);
    let afd_a = AsyncFd::new(ArcFd(arc_fd.clone())).unwrap();
    std::mem::drop(afd_a);

    assert_eq!(ErrorKind::WouldBlock, b.read(&mut [0]).err().unwrap().kind());

    std::mem::drop(arc_fd); // suppress unnecessary clone clippy warning
}

#[evloop::test]
async fn reregister() {
    let (a, _b) = socketpair();

    let afd_a = AsyncFd::new(a).unwrap();
    let a = afd_a.into_inner();
    AsyncFd::new(a).unwrap();
}

#[evloop::test]
async fn try_io() {
    let (a, mut b) = socketpair();

    b.write_all(b"0").unwrap();

    let afd_a = AsyncFd::new(a).unwrap();

    let mut guard = afd_a.readable().await.unwrap();

    afd_a.get_ref().read_exact(&mut [0]).unwrap();

    // Should not clear the readable state
    let _ = guard.try_io(|_| Ok(()));

    // Still readable...
    let _ = afd_a.readable().await.unwrap();

    // Should clear the readable state
    let _ = guard.try_io(|_| io::Result::<()>::Err(ErrorKind::WouldBlock.into()));

    // Assert not readable
    let readable = afd_a.readable();
    evloop::pin!(readable);

    evloop::select! {
        _ = readable.as_mut() => panic!(),
        _ = evloop::time::sleep(Duration::from_millis(10)) => {}
    }

    // Write something down b again and make sure we're reawoken
    b.write_all(b"0").unwrap();
    let _ = readable.await.unwrap();
}

#[evloop::test]
async fn multiple_waiters() {
    let (a, mut b) = socketpair();
    let afd_a = Arc::new(AsyncFd::new(a).unwrap());

    let barrier = Arc::new(evloop::sync::Barrier::new(11));

    let mut tasks = Vec::new();
    for _ in 0..10 {
        let afd_a = afd_a.clone();
        let barrier = barrier.clone();

        let f = async move {
            let notify_barrier = async {
                let _ = barrier.wait().await;
                std::future::pending::<()>().await;
            };

            evloop::select! {
                biased;
                guard = afd_a.readable() => {
                    evloop::task::yield_now().await;
                    guard.unwrap().clear_ready()
                },
                _ = notify_barrier => unreachable!(),
            }

            std::mem::drop(afd_a);
        };

        tasks.push(evloop::spawn(f));
    }

    let all_tasks = evloop::task::try_gather(tasks);
    evloop::pin!(all_tasks);

    evloop::select! {
        r = all_tasks.as_mut() => {
            r.unwrap(); // propagate panic
            panic!("Tasks exited unexpectedly")
        },
        _ = barrier.wait() => {}
    }

    b.write_all(b"0").unwrap();

    all_tasks.await.unwrap();
}

#[evloop::test]
async fn poll_fns() {
    let (a, b) = socketpair();
    let afd_a = Arc::new(AsyncFd::new(a).unwrap());
    let afd_b = Arc::new(AsyncFd::new(b).unwrap());

    // Fill up the write side of A
    let mut bytes = 0;
    while let Ok(amt) = afd_a.get_ref().write(&[0; 512]) {
        bytes += amt;
    }

    let waker = TestWaker::new();

    assert_pending!(afd_a.as_ref().poll_read_ready(&mut waker.context()));

    let afd_a_2 = afd_a.clone();
    let r_barrier = Arc::new(evloop::sync::Barrier::new(2));
    let barrier_clone = r_barrier.clone();

    let read_fut = evloop::spawn(async move {
        // Move waker onto this task first
        assert_pending!(poll!(std::future::poll_fn(|cx| afd_a_2.as_ref().poll_read_ready(cx))));
        let _ = barrier_clone.wait().await;

        let _ = std::future::poll_fn(|cx| afd_a_2.as_ref().poll_read_ready(cx)).await;
    });

    let afd_a_2 = afd_a.clone();
    let w_barrier = Arc::new(evloop::sync::Barrier::new(2));
    let barrier_clone = w_barrier.clone();

    let mut write_fut = evloop::spawn(async move {
        // Move waker onto this task first
        assert_pending!(poll!(std::future::poll_fn(|cx| afd_a_2.as_ref().poll_write_ready(cx))));
        let _ = barrier_clone.wait().await;

        let _ = std::future::poll_fn(|cx| afd_a_2.as_ref().poll_write_ready(cx)).await;
    });

    let _ = r_barrier.wait().await;
    let _ = w_barrier.wait().await;

    let readable = afd_a.readable();
    evloop::pin!(readable);

    evloop::select! {
        _ = &mut readable => unreachable!(),
        _ = evloop::task::yield_now() => {}
    }

    // Make A readable. We expect that 'readable' and 'read_fut' will both complete quickly
    afd_b.get_ref().write_all(b"0").unwrap();

    let _ = evloop::join!(readable, read_fut);

    // Our original waker should _not_ be awoken (poll_read_ready retains only the last context)
    assert!(!waker.awoken());

    // The writable side should not be awoken
    evloop::select! {
        _ = &mut write_fut => unreachable!(),
        _ = evloop::time::sleep(Duration::from_millis(5)) => {}
    }

    // Make it writable now
    drain(afd_b.get_ref(), bytes);

    // now we should be writable (ie - the waker for poll_write should still be registered after we wake the read side)
    let _ = write_fut.await;
}

fn assert_pending<T: std::fmt::Debug, F: Future<Output = T>>(f: F) -> std::pin::Pin<Box<F>> {
    let mut pinned = Box::pin(f);

    assert_pending!(pinned.as_mut().poll(&mut Context::from_waker(Waker::noop())));

    pinned
}

fn rt() -> EventLoop {
    EventLoop::new().unwrap()
}

#[test]
fn driver_shutdown_wakes_currently_pending() {
    let rt = rt();

    let (a, _b) = socketpair();
    let afd_a = AsyncFd::with_loop(&rt, a).unwrap();

    let readable = rt.block_on(async { assert_pending(afd_a.readable()) }).unwrap();

    std::mem::drop(rt);

    // The future was initialized **before** dropping the rt
    assert_err!(block_on(readable));

    // The future is initialized **after** dropping the rt.
    assert_err!(block_on(afd_a.readable()));
}

#[test]
fn driver_shutdown_wakes_future_pending() {
    let rt = rt();

    let (a, _b) = socketpair();
    let afd_a = AsyncFd::with_loop(&rt, a).unwrap();

    std::mem::drop(rt);

    assert_err!(block_on(afd_a.readable()));
}

// driver_shutdown_wakes_pending_race: not ported (the runtime is dropped on another thread; an
// evloop loop is not `Send`).

async fn poll_readable<T: AsFd>(fd: &AsyncFd<T>) -> std::io::Result<AsyncFdReadyGuard<'_, T>> {
    std::future::poll_fn(|cx| fd.poll_read_ready(cx)).await
}

async fn poll_writable<T: AsFd>(fd: &AsyncFd<T>) -> std::io::Result<AsyncFdReadyGuard<'_, T>> {
    std::future::poll_fn(|cx| fd.poll_write_ready(cx)).await
}

#[test]
fn driver_shutdown_wakes_currently_pending_polls() {
    let rt = rt();

    let (a, _b) = socketpair();
    let afd_a = AsyncFd::with_loop(&rt, a).unwrap();

    while afd_a.get_ref().write(&[0; 512]).is_ok() {} // make not writable

    let (readable, writable) = rt
        .block_on(async {
            (
                assert_pending(poll_readable(&afd_a)),
                assert_pending(poll_writable(&afd_a)),
            )
        })
        .unwrap();

    std::mem::drop(rt);

    // Attempting to poll readiness when the rt is dropped is an error
    assert_err!(block_on(readable));
    assert_err!(block_on(writable));
}

#[test]
fn driver_shutdown_wakes_poll() {
    let rt = rt();

    let (a, _b) = socketpair();
    let afd_a = AsyncFd::with_loop(&rt, a).unwrap();

    std::mem::drop(rt);

    assert_err!(block_on(poll_readable(&afd_a)));
    assert_err!(block_on(poll_writable(&afd_a)));
}

#[test]
fn driver_shutdown_then_clear_readiness() {
    let rt = rt();

    let (a, _b) = socketpair();
    let afd_a = AsyncFd::with_loop(&rt, a).unwrap();

    let mut write_ready = rt.block_on(afd_a.writable()).unwrap().unwrap();

    std::mem::drop(rt);

    write_ready.clear_ready();
}

// driver_shutdown_wakes_poll_race: not ported (the runtime is dropped on another thread).

#[evloop::test]
async fn priority_event_on_oob_data() {
    use std::net::SocketAddr;

    use evloop::io::Interest;

    let addr: SocketAddr = "127.0.0.1:0".parse().unwrap();

    let listener = std::net::TcpListener::bind(addr).unwrap();
    let addr = listener.local_addr().unwrap();

    let client = std::net::TcpStream::connect(addr).unwrap();
    let client = AsyncFd::with_interest(client, Interest::PRIORITY).unwrap();

    let (stream, _) = listener.accept().unwrap();

    // Sending out of band data should trigger priority event.
    send_oob_data(&stream, b"hello").unwrap();

    let _ = client.ready(Interest::PRIORITY).await.unwrap();
}

fn send_oob_data<S: AsRawFd>(stream: &S, data: &[u8]) -> io::Result<usize> {
    // SAFETY: send(2) reads at most `data.len()` bytes from `data`, which outlives the call;
    // the fd is the caller's open socket.
    let res = unsafe { libc::send(stream.as_raw_fd(), data.as_ptr().cast(), data.len(), libc::MSG_OOB) };
    if res == -1 {
        Err(io::Error::last_os_error())
    } else {
        Ok(res as usize)
    }
}

#[evloop::test]
async fn clear_ready_matching_clears_ready() {
    use evloop::io::{Interest, Ready};

    let (a, mut b) = socketpair();

    let afd_a = AsyncFd::new(a).unwrap();
    b.write_all(b"0").unwrap();

    let mut guard = afd_a.ready(Interest::READABLE | Interest::WRITABLE).await.unwrap();

    assert_eq!(guard.ready(), Ready::READABLE | Ready::WRITABLE);

    guard.clear_ready_matching(Ready::READABLE);
    assert_eq!(guard.ready(), Ready::WRITABLE);

    guard.clear_ready_matching(Ready::WRITABLE);
    assert_eq!(guard.ready(), Ready::EMPTY);
}

#[evloop::test]
async fn clear_ready_matching_clears_ready_mut() {
    use evloop::io::{Interest, Ready};

    let (a, mut b) = socketpair();

    let mut afd_a = AsyncFd::new(a).unwrap();
    b.write_all(b"0").unwrap();

    let mut guard = afd_a.ready_mut(Interest::READABLE | Interest::WRITABLE).await.unwrap();

    assert_eq!(guard.ready(), Ready::READABLE | Ready::WRITABLE);

    guard.clear_ready_matching(Ready::READABLE);
    assert_eq!(guard.ready(), Ready::WRITABLE);

    guard.clear_ready_matching(Ready::WRITABLE);
    assert_eq!(guard.ready(), Ready::EMPTY);
}

#[evloop::test]
async fn await_error_readiness_timestamping() {
    use std::net::{Ipv4Addr, SocketAddr};

    use evloop::io::{Interest, Ready};

    let address_a = SocketAddr::from((Ipv4Addr::LOCALHOST, 0));
    let address_b = SocketAddr::from((Ipv4Addr::LOCALHOST, 0));

    let socket = std::net::UdpSocket::bind(address_a).unwrap();

    socket.set_nonblocking(true).unwrap();

    // configure send timestamps
    configure_timestamping_socket(&socket).unwrap();

    socket.connect(address_b).unwrap();

    let fd = AsyncFd::new(socket).unwrap();

    evloop::select! {
        _ = fd.ready(Interest::ERROR) => panic!(),
        _ = evloop::time::sleep(Duration::from_millis(10)) => {}
    }

    let buf = b"hello there";
    fd.get_ref().send(buf).unwrap();

    // the send timestamp should now be in the error queue
    let guard = fd.ready(Interest::ERROR).await.unwrap();
    assert_eq!(guard.ready(), Ready::ERROR);
}

fn configure_timestamping_socket(udp_socket: &std::net::UdpSocket) -> std::io::Result<libc::c_int> {
    // enable software timestamping, and specifically software send timestamping
    let options = libc::SOF_TIMESTAMPING_SOFTWARE | libc::SOF_TIMESTAMPING_TX_SOFTWARE;

    // SAFETY: `options` outlives the call and the length passed is its size.
    let res = unsafe {
        libc::setsockopt(
            udp_socket.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_TIMESTAMP,
            &options as *const _ as *const libc::c_void,
            std::mem::size_of_val(&options) as libc::socklen_t,
        )
    };

    if res == -1 {
        Err(std::io::Error::last_os_error())
    } else {
        Ok(res)
    }
}

#[evloop::test]
async fn await_error_readiness_invalid_address() {
    use evloop::io::{Interest, Ready};
    use std::net::{Ipv4Addr, SocketAddr};

    let socket_addr = SocketAddr::from((Ipv4Addr::LOCALHOST, 0));
    let socket = std::net::UdpSocket::bind(socket_addr).unwrap();
    let socket_fd = socket.as_raw_fd();

    // Enable IP_RECVERR option to receive error messages
    // https://man7.org/linux/man-pages/man7/ip.7.html has some extra information
    let recv_err: libc::c_int = 1;
    // SAFETY: `recv_err` outlives the call and the length passed is its size.
    unsafe {
        let res = libc::setsockopt(
            socket.as_raw_fd(),
            libc::SOL_IP,
            libc::IP_RECVERR,
            &recv_err as *const _ as *const libc::c_void,
            std::mem::size_of_val(&recv_err) as libc::socklen_t,
        );
        if res == -1 {
            panic!("{:?}", std::io::Error::last_os_error());
        }
    }

    // Spawn a separate thread for sending messages
    evloop::spawn(async move {
        // Set the destination address. This address is invalid in this context. the OS will notice
        // that nobody is listening on port this port. Normally this is ignored (UDP is "fire and forget"),
        // but because IP_RECVERR is enabled, the error will actually be reported to the sending socket
        // SAFETY: a zeroed `sockaddr_in` is a valid value (all-integer fields).
        let mut dest_addr = unsafe { std::mem::MaybeUninit::<libc::sockaddr_in>::zeroed().assume_init() };
        dest_addr.sin_family = libc::AF_INET as _;
        // based on https://en.wikipedia.org/wiki/Ephemeral_port, we should pick a port number
        // below 1024 to guarantee that other tests don't select this port by accident when they
        // use port 0 to select an ephemeral port.
        dest_addr.sin_port = 512u16.to_be(); // Destination port

        // Prepare the message data
        let message = "Hello, Socket!";

        // Prepare the message structure for sendmsg
        let mut iov = libc::iovec {
            iov_base: message.as_ptr() as *mut libc::c_void,
            iov_len: message.len(),
        };

        // Prepare the destination address for the sendmsg call
        let dest_sockaddr: *const libc::sockaddr = &dest_addr as *const _ as *const libc::sockaddr;
        let dest_addrlen: libc::socklen_t = std::mem::size_of_val(&dest_addr) as libc::socklen_t;

        // SAFETY: a zeroed `msghdr` is a valid value (null pointers, zero lengths).
        let mut msg: libc::msghdr = unsafe { std::mem::MaybeUninit::zeroed().assume_init() };
        msg.msg_name = dest_sockaddr as *mut libc::c_void;
        msg.msg_namelen = dest_addrlen;
        msg.msg_iov = &mut iov;
        msg.msg_iovlen = 1;

        // SAFETY: `msg` points at `dest_addr`, `iov` and `message`, all alive during the call.
        if unsafe { libc::sendmsg(socket_fd, &msg, 0) } == -1 {
            panic!("{:?}", std::io::Error::last_os_error())
        }
    });

    let fd = AsyncFd::new(socket).unwrap();

    let guard = fd.ready(Interest::ERROR).await.unwrap();
    assert_eq!(guard.ready(), Ready::ERROR);
}

/// A source epoll refuses (`EPERM`): tokio's is a raw fd of -1, which `AsFd` cannot hold.
#[derive(Debug)]
struct InvalidSource(std::fs::File);

impl InvalidSource {
    fn new() -> InvalidSource {
        InvalidSource(std::fs::File::open("/dev/null").unwrap())
    }
}

impl AsFd for InvalidSource {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.0.as_fd()
    }
}

#[evloop::test]
async fn try_new() {
    let original = Arc::new(InvalidSource::new());

    let error = AsyncFd::try_new(original.clone()).unwrap_err();
    let (returned, _cause) = error.into_parts();

    assert!(Arc::ptr_eq(&original, &returned));
}

#[evloop::test]
async fn try_with_interest() {
    let original = Arc::new(InvalidSource::new());

    let error = AsyncFd::try_with_interest(original.clone(), Interest::READABLE).unwrap_err();
    let (returned, _cause) = error.into_parts();

    assert!(Arc::ptr_eq(&original, &returned));
}
