//! `AsyncFd`'s readiness guards beyond what tokio's io_async_fd.rs checks
//! (tests/tests/tokio_ported/io_async_fd.rs): the tick that keeps a guard from clearing an edge
//! that arrived after its wait, the hang-up bits (reported, kept by `clear_ready`, cleared by a
//! `try_io` that saw `WouldBlock`), the error-only wait, and a closed loop.
//!
//! Every wait that must not end is bounded by a timeout, so a bug fails instead of hanging.

use std::io::{ErrorKind, Read, Write};
use std::os::unix::net::UnixStream;
use std::time::Duration;

use evloop::event_loop::EventLoop;
use evloop::io::{AsyncFd, Interest, Ready};
use evloop::time::{sleep, timeout};

const SHORT: Duration = Duration::from_millis(20);

#[evloop::test]
async fn a_guard_does_not_clear_an_edge_that_came_after_its_wait() {
    let (a, mut b) = UnixStream::pair().unwrap();
    let a = AsyncFd::new(a).unwrap();
    b.write_all(b"one").unwrap();
    let mut guard = a.readable().await.unwrap();
    let mut buf = [0; 16];
    assert_eq!(a.get_ref().read(&mut buf).unwrap(), 3); // drained: the next read would block
    // While the guard is held, new data raises a new edge (the loop runs while we sleep).
    b.write_all(b"two").unwrap();
    sleep(SHORT).await;
    // The guard saw the first edge only: clearing now would throw the second away, and with
    // an edge-triggered registration nothing would ever report it again.
    guard.clear_ready();
    let guard = timeout(SHORT, a.readable())
        .await
        .expect("the second edge was lost")
        .unwrap();
    assert!(guard.ready().is_readable());
    assert_eq!(a.get_ref().read(&mut buf).unwrap(), 3);
}

#[evloop::test]
async fn a_guard_clears_when_no_edge_came_after_its_wait() {
    let (a, mut b) = UnixStream::pair().unwrap();
    let a = AsyncFd::new(a).unwrap();
    b.write_all(b"x").unwrap();
    let mut guard = a.readable().await.unwrap();
    sleep(SHORT).await; // the loop runs, no new event for `a`
    guard.clear_ready();
    assert!(!a.is_ready(Interest::READABLE));
    assert!(
        timeout(SHORT, a.readable()).await.is_err(),
        "no new edge: the wait goes on"
    );
}

#[evloop::test]
async fn a_hang_up_is_reported_and_clear_ready_keeps_it() {
    let (a, b) = UnixStream::pair().unwrap();
    let a = AsyncFd::new(a).unwrap();
    drop(b);
    let mut guard = a.ready(Interest::READABLE | Interest::WRITABLE).await.unwrap();
    let seen = guard.ready();
    assert!(seen.is_read_closed() && seen.is_write_closed(), "{seen:?}");
    guard.clear_ready();
    // A hang-up is final: the next wait ends at once, with the closed bits alone.
    let guard = timeout(SHORT, a.readable())
        .await
        .expect("the hang-up was cleared")
        .unwrap();
    assert_eq!(guard.ready(), Ready::READ_CLOSED);
    assert_eq!(a.get_ref().read(&mut [0; 4]).unwrap(), 0);
}

#[evloop::test]
async fn try_io_that_would_block_clears_every_bit_it_waited_for() {
    let (a, _b) = UnixStream::pair().unwrap();
    let a = AsyncFd::new(a).unwrap();
    let mut guard = a.writable().await.unwrap();
    let r = guard.try_io(|_| Err::<(), _>(ErrorKind::WouldBlock.into()));
    assert!(r.is_err());
    assert_eq!(guard.ready(), Ready::EMPTY);
    assert!(!a.is_ready(Interest::WRITABLE));
    // Only `WouldBlock` clears: the next wait now needs a new edge.
    assert!(timeout(SHORT, a.writable()).await.is_err());
}

#[evloop::test]
async fn try_io_keeps_the_readiness_on_any_other_outcome() {
    let (a, _b) = UnixStream::pair().unwrap();
    let a = AsyncFd::new(a).unwrap();
    let mut guard = a.writable().await.unwrap();
    assert_eq!(guard.try_io(|fd| fd.get_ref().write(b"ok")).unwrap().unwrap(), 2);
    let r = guard.try_io(|_| Err::<(), _>(ErrorKind::BrokenPipe.into()));
    assert_eq!(r.unwrap().unwrap_err().kind(), ErrorKind::BrokenPipe);
    assert_eq!(guard.ready(), Ready::WRITABLE);
    assert!(a.is_ready(Interest::WRITABLE));
}

#[evloop::test]
async fn several_tasks_waiting_on_one_side_are_all_woken() {
    let (a, mut b) = UnixStream::pair().unwrap();
    let a = std::rc::Rc::new(AsyncFd::new(a).unwrap());
    let tasks: Vec<_> = (0..4)
        .map(|_| {
            let a = a.clone();
            evloop::spawn(async move { a.readable().await.map(|g| g.ready()) })
        })
        .collect();
    evloop::task::yield_now().await; // every task parks its waker
    b.write_all(b"!").unwrap();
    for t in tasks {
        let ready = timeout(SHORT, t)
            .await
            .expect("a waiter was not woken")
            .unwrap()
            .unwrap();
        assert!(ready.is_readable());
    }
}

#[evloop::test]
async fn an_error_only_wait_ends_on_the_error_alone() {
    // A UDP socket connected to a port nobody listens on: the ICMP error sets `EPOLLERR`.
    let socket = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    let dead = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    socket.connect(dead.local_addr().unwrap()).unwrap();
    drop(dead);
    let fd = AsyncFd::new(socket).unwrap();
    assert!(timeout(SHORT, fd.ready(Interest::ERROR)).await.is_err(), "no error yet");
    fd.get_ref().send(b"anyone?").unwrap();
    let guard = timeout(Duration::from_secs(5), fd.ready(Interest::ERROR))
        .await
        .expect("no EPOLLERR")
        .unwrap();
    assert_eq!(guard.ready(), Ready::ERROR);
    let err = fd.get_ref().recv(&mut [0; 8]).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::ConnectionRefused);
}

#[test]
fn a_closed_loop_gives_errors_never_panics() {
    let lp = EventLoop::new().unwrap();
    let (a, _b) = UnixStream::pair().unwrap();
    let mut a = AsyncFd::with_loop(&lp, a).unwrap();
    let mut guard = lp.block_on(a.writable()).unwrap().unwrap();
    lp.close().unwrap();
    guard.clear_ready(); // after the close: harmless
    let err = evloop::task::block_on(async {
        assert!(a.readable().await.is_err());
        assert!(a.writable_mut().await.is_err());
        assert!(std::future::poll_fn(|cx| a.poll_read_ready(cx)).await.is_err());
        a.async_io(Interest::READABLE, |_| Ok(())).await.unwrap_err()
    })
    .unwrap();
    assert!(err.to_string().contains("closed"), "{err}");
    drop(a.into_inner()); // deregistering from a closed loop is fine too
}

#[test]
fn try_new_outside_a_loop_gives_the_value_back() {
    let (a, _b) = UnixStream::pair().unwrap();
    let err = AsyncFd::try_new(a).unwrap_err();
    let (a, cause) = err.into_parts();
    assert!(a.peer_addr().is_ok());
    assert!(cause.to_string().contains("no event loop is running"), "{cause}");
    let err = AsyncFd::try_with_interest(a, Ready::EMPTY).unwrap_err();
    assert_eq!(err.into_parts().1.kind(), ErrorKind::InvalidInput);
}
