//! The bugs evloop's own tests missed, each as a simulated test of the property it broke: a
//! connect reported done before the handshake, a drain that spun after a close or a reset, a lost eventfd
//! wake-up, datagram readiness cleared by a short read, same-thread `call_soon_threadsafe`
//! order, and the order of past deadlines. `scripts/sim-reintroduce.sh` puts each bug back
//! (`scripts/sim-bugs/*.patch`) and checks that these tests, under up to 1,000 seeds, fail with
//! a seed and a shrunk schedule; on today's code they pass on every seed.
#![cfg(feature = "simulation")]

use std::cell::RefCell;
use std::future::poll_fn;
use std::rc::Rc;
use std::sync::{Arc, Mutex};
use std::task::Poll;
use std::time::Duration;

use evloop::io::AsyncReadExt;
use evloop::net::{Socket, TcpListener, UdpSocket};
use evloop::sys::sim::{FaultClass, Kernel};
use evloop_syscalls::{Domain, SockType};

/// A socket registered (and polled) before its `connect`: it reported itself writable and hung
/// up while unconnected, and `connect` must not take that for the handshake's end (9aa0574).
#[evloop::test(simulate(seeds = 50))]
async fn connect_completes_only_after_the_handshake() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let server = evloop::spawn(async move { listener.accept().await.map(|_| ()) });
    let s = Socket::new(Domain::Inet, SockType::Stream).unwrap();
    // Any await between the socket's creation and its connect lets the loop poll once.
    evloop::time::sleep(Duration::from_millis(1)).await;
    s.connect(&addr.into()).await.unwrap();
    assert!(
        s.peer_addr().is_ok(),
        "connect returned before the handshake: getpeername says {:?}",
        s.peer_addr()
    );
    server.await.unwrap().unwrap();
}

/// A producer that writes and drains in a loop stops with an error once its peer resets the
/// connection, instead of spinning on a closing transport (ad6b6a4, asyncio bpo-25441).
#[evloop::test(simulate(seeds = 50))]
async fn a_write_and_drain_loop_ends_after_a_reset() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    // The server reads a little and closes with data unread: a reset.
    let server = evloop::spawn(async move {
        let (mut s, _) = listener.accept().await.unwrap();
        let mut b = [0u8; 10];
        let _ = s.read_exact(&mut b).await;
        drop(s);
    });
    let (_r, w) = evloop::streams::open_connection("127.0.0.1", port).await.unwrap();
    let mut ended = None;
    for i in 0..200_000u32 {
        w.write(&[7u8; 1000]);
        if let Err(e) = w.drain().await {
            ended = Some((i, e));
            break;
        }
    }
    assert!(
        ended.is_some(),
        "write + drain kept succeeding 200,000 times after the peer reset the connection"
    );
    server.await.unwrap();
}

/// The same after the writer's own `close()`: the first drain yields, so `connection_lost` can
/// run, and reports the closed connection (ad6b6a4's first case; with the bug every drain
/// returned `Ok` without yielding, whatever the seed).
#[evloop::test(simulate(seeds = 20))]
async fn a_write_and_drain_loop_ends_after_close() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let server = evloop::spawn(async move {
        let (mut s, _) = listener.accept().await.unwrap();
        let mut rest = Vec::new();
        let _ = s.read_to_end(&mut rest).await;
    });
    let (_r, w) = evloop::streams::open_connection("127.0.0.1", port).await.unwrap();
    w.close();
    let mut rounds = 0;
    while rounds < 10_000 {
        rounds += 1;
        w.write(b"are you still there?");
        if w.drain().await.is_err() {
            break;
        }
    }
    assert_eq!(rounds, 1, "drain kept succeeding on a closed stream");
    server.await.unwrap();
}

/// A cross-thread wake-up whose eventfd write fails once still wakes the loop: a simulated
/// thread schedules callbacks while the loop sleeps with no timer, each write of the wake-up
/// eventfd failing once (e0685cb).
#[evloop::test(simulate(seeds = 20))]
async fn a_failed_wake_up_write_loses_no_wake_up() {
    let kernel = Kernel::current().expect("on a simulated kernel");
    let remote = evloop::event_loop::get_running_loop().unwrap().remote();
    // (when the callback was scheduled, the loop task's waker)
    type Slot = Arc<Mutex<(Option<Duration>, Option<std::task::Waker>)>>;
    let slot: Slot = Arc::default();
    let (s, k) = (slot.clone(), kernel.clone());
    let worker = kernel.spawn(move || {
        evloop::sys::sim::sleep(Duration::from_millis(5));
        let sent = k.now();
        k.inject(FaultClass::Errno); // the eventfd write of this wake-up fails once
        remote
            .call_soon_threadsafe(move || {
                let waker = {
                    let mut g = s.lock().unwrap();
                    g.0 = Some(sent);
                    g.1.take()
                };
                if let Some(w) = waker {
                    w.wake();
                }
            })
            .unwrap();
    });
    let arrived = poll_fn(|cx| {
        let mut g = slot.lock().unwrap();
        match g.0 {
            Some(sent) => Poll::Ready(sent),
            None => {
                g.1 = Some(cx.waker().clone());
                Poll::Pending
            }
        }
    });
    // The loop has nothing else to wake it: a watchdog after a simulated minute.
    let got = evloop::time::timeout(Duration::from_secs(60), arrived).await;
    let now = kernel.now();
    worker.join().unwrap();
    let sent = got.expect("the wake-up never arrived");
    assert!(
        now - sent < Duration::from_secs(1),
        "the callback ran {:?} after it was scheduled: its wake-up was lost",
        now - sent
    );
}

/// Two datagrams queued, each shorter than the buffer: the first receive must not forget that
/// the second is waiting (8a3a142).
#[evloop::test(simulate(seeds = 50))]
async fn a_short_datagram_read_keeps_the_next_one_readable() {
    let a = UdpSocket::bind("127.0.0.1:0").await.unwrap();
    let b = UdpSocket::bind("127.0.0.1:0").await.unwrap();
    let to = b.local_addr().unwrap();
    a.send_to(b"one", to).await.unwrap();
    a.send_to(b"two", to).await.unwrap();
    evloop::time::sleep(Duration::from_millis(50)).await; // both queued
    let mut buf = [0u8; 64];
    let mut got = Vec::new();
    for _ in 0..2 {
        match evloop::time::timeout(Duration::from_secs(5), b.socket().recv(&mut buf)).await {
            Ok(n) => got.push(String::from_utf8_lossy(&buf[..n.unwrap()]).into_owned()),
            Err(_) => got.push("(nothing within 5 s)".into()),
        }
    }
    assert_eq!(got.len(), 2);
    assert!(
        !got.iter().any(|g| g.starts_with('(')),
        "a queued datagram was not received: {got:?}"
    );
}

/// `call_soon`, `call_soon_threadsafe`, `call_soon` on the loop's own thread run in that order
/// (c1ed046: they ran 1, 3, 2).
#[evloop::test(simulate(seeds = 20))]
async fn call_soon_threadsafe_on_the_loops_thread_keeps_fifo_order() {
    let lp = evloop::event_loop::get_running_loop().unwrap();
    let order = Arc::new(Mutex::new(Vec::new()));
    let push = |n: u32| {
        let o = order.clone();
        move || o.lock().unwrap().push(n)
    };
    lp.call_soon(push(1)).unwrap();
    lp.call_soon_threadsafe(push(2)).unwrap();
    lp.remote().call_soon_threadsafe(push(3)).unwrap();
    lp.call_soon(push(4)).unwrap();
    evloop::time::sleep(Duration::from_millis(1)).await;
    assert_eq!(*order.lock().unwrap(), [1, 2, 3, 4]);
}

/// Two deadlines before the loop existed keep their order (e1ef2b3).
#[evloop::test(simulate(seeds = 20))]
async fn past_deadlines_run_in_deadline_order() {
    let lp = evloop::event_loop::get_running_loop().unwrap();
    let order = Rc::new(RefCell::new(Vec::new()));
    let now = lp.time();
    let (a, b) = (order.clone(), order.clone());
    lp.call_at(now - Duration::from_secs(1), move || a.borrow_mut().push("1 s ago"))
        .unwrap();
    lp.call_at(now - Duration::from_secs(2), move || b.borrow_mut().push("2 s ago"))
        .unwrap();
    evloop::time::sleep(Duration::from_millis(10)).await;
    assert_eq!(*order.borrow(), ["2 s ago", "1 s ago"]);
}
