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

use std::os::fd::AsRawFd;

use evloop::event_loop::{EventLoop, TimerHandle};
use evloop::io::{AsyncReadExt, AsyncWriteExt};
use evloop::net::{Socket, TcpListener, TcpStream, UdpSocket};
use evloop::protocol::{Protocol, Transport};
use evloop::sys::sim::{FaultClass, Kernel};
use evloop::task::{Promise, PromiseError, TaskError};
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

/// A server for one connection: it reads 10 bytes, sends `answer` (if any) and closes, with
/// whatever else came left unread (a reset). Its port and its task.
async fn resetting_server(answer: &'static [u8]) -> (u16, evloop::task::Task<()>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let server = evloop::spawn(async move {
        let (mut s, _) = listener.accept().await.unwrap();
        let mut b = [0u8; 10];
        if s.read_exact(&mut b).await.is_ok() && !answer.is_empty() {
            let _ = s.write_all(answer).await;
        }
        drop(s);
    });
    (port, server)
}

/// A producer's loop: writes 1,000 bytes and drains, up to 200,000 times; whether a drain
/// failed (the loop ended) before that.
async fn write_and_drain_until_it_fails(w: &evloop::streams::StreamWriter) -> bool {
    for _ in 0..200_000u32 {
        w.write(&[7u8; 1000]);
        if w.drain().await.is_err() {
            return true;
        }
    }
    false
}

/// A producer that writes and drains in a loop stops with an error once its peer resets the
/// connection, instead of spinning on a closing transport (ad6b6a4, asyncio bpo-25441).
#[evloop::test(simulate(seeds = 50))]
async fn a_write_and_drain_loop_ends_after_a_reset() {
    // The server reads a little and closes with data unread: a reset.
    let (port, server) = resetting_server(b"").await;
    let (_r, w) = evloop::streams::open_connection("127.0.0.1", port).await.unwrap();
    assert!(
        write_and_drain_until_it_fails(&w).await,
        "write + drain kept succeeding 200,000 times after the peer reset the connection"
    );
    server.await.unwrap();
}

/// The reset case in the order that spins: the peer answers and resets at once, so the answer
/// and the reset can reach the client in one poll (the seed decides: the reset's latency may
/// be no longer than the answer's). Then one pass over the socket reads the answer, which
/// wakes the client's task, and meets the reset, which closes the transport and queues
/// `connection_lost` behind that task: the task starts its write + drain loop on a closing
/// transport whose loss it has not heard of yet. With the bug, `drain` returned `Ok` there, the
/// writes went nowhere, and the loop never yielded (ad6b6a4's reset case).
#[evloop::test(simulate(seeds = 50))]
async fn a_write_and_drain_loop_ends_after_a_reset_that_came_with_an_answer() {
    // Half of the hello unread when the server closes: a reset.
    let (port, server) = resetting_server(b"go").await;
    let (r, w) = evloop::streams::open_connection("127.0.0.1", port).await.unwrap();
    w.write(&[1u8; 20]);
    w.drain().await.unwrap();
    let go = r.read(2).await.unwrap();
    assert!(
        write_and_drain_until_it_fails(&w).await,
        "write + drain kept succeeding 200,000 times after the peer answered {go:?} and reset the connection"
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

// ---------------------------------------------------------------------------------------------
// Round 3: closures kept alive, cycles at close, waits across loops.

/// Runs a body that builds and closes its own loop under the simulation driver, once per seed
/// (what `#[evloop::test(simulate)]` does for an `async fn`, which runs inside a loop the
/// attribute owns and so cannot look at the world after that loop's `close`).
fn each_seed(name: &'static str, seeds: u64, body: impl Fn()) {
    evloop::sys::sim::__run_test(
        evloop::sys::sim::TestOptions {
            name,
            seeds,
            faults: false,
        },
        body,
    )
}

/// User state whose drop the tests watch (through a `Weak`).
#[derive(Default)]
struct Held {
    transports: RefCell<Vec<Transport>>,
    handles: RefCell<Vec<TimerHandle>>,
}

/// A protocol that keeps its transport in the user state the server's factory captured.
struct Keeper(Rc<Held>);

impl Protocol for Keeper {
    fn connection_made(&mut self, t: Transport) {
        self.0.transports.borrow_mut().push(t);
    }
    fn data_received(&mut self, _: &[u8]) {}
}

/// Cancelling a handle drops its closure, and what the closure captured, at once: not when the
/// loop reaches the cancelled entry, nor when the handle is dropped (7a88bd7; asyncio's
/// `Handle.cancel` does the same).
#[evloop::test(simulate(seeds = 20))]
async fn a_cancelled_callback_lets_go_of_its_closure_at_once() {
    let lp = evloop::event_loop::get_running_loop().unwrap();
    let state = Rc::new(());
    let weak = Rc::downgrade(&state);
    let s = state.clone();
    let soon = lp.call_soon(move || drop(s)).unwrap();
    let s = state.clone();
    let later = lp.call_later(Duration::from_secs(5), move || drop(s)).unwrap();
    // A reader on a socket of the syscall layer's (the loop's own sockets are registered
    // already), registered across one iteration, then removed.
    let raw = evloop_syscalls::socket(Domain::Inet, SockType::Datagram).unwrap();
    let s = state.clone();
    let fd = raw.as_raw_fd();
    lp.add_reader(fd, move || {
        let _ = &s;
    })
    .unwrap();
    evloop::time::sleep(Duration::from_millis(1)).await;
    assert!(lp.remove_reader(fd));
    soon.cancel();
    later.cancel();
    drop(state);
    // The handles are still held, and the loop has not run since the cancels.
    assert!(
        weak.upgrade().is_none(),
        "a cancelled callback's closure is still alive ({} references to what it captured)",
        weak.strong_count()
    );
    drop((soon, later));
}

/// Closing a loop with a server's connection open frees the user state its protocol factory
/// captured, though that state holds the connection's transport: server -> factory -> state ->
/// transport -> close callback -> server was a cycle that outlived the loop (94875e9).
#[test]
fn closing_a_loop_frees_the_state_its_connections_hold() {
    each_seed(
        concat!(module_path!(), "::closing_a_loop_frees_the_state_its_connections_hold"),
        20,
        || {
            let state = Rc::new(Held::default());
            let weak = Rc::downgrade(&state);
            let lp = EventLoop::new().unwrap();
            let h = lp.handle();
            let (server, client) = lp
                .run_until_complete(async move {
                    let st = state.clone();
                    let server = h
                        .create_server(move || Keeper(st.clone()), "127.0.0.1", 0)
                        .await
                        .unwrap();
                    let mut client = TcpStream::connect(server.local_addr()).await.unwrap();
                    client.write_all(b"hello").await.unwrap();
                    while state.transports.borrow().is_empty() {
                        evloop::time::sleep(Duration::from_millis(1)).await;
                    }
                    (server, client)
                })
                .unwrap();
            lp.close().unwrap();
            drop((client, server, lp));
            assert!(
                weak.upgrade().is_none(),
                "the state captured by the protocol factory outlived the closed loop (a reference cycle)"
            );
        },
    );
}

/// Closing a loop drops the closures of callbacks that never ran, even while their handles are
/// held: a timer whose closure holds (through user state) its own handle was a cycle nothing
/// could run or cancel any more (f482b84).
#[test]
fn closing_a_loop_frees_a_pending_closure_that_holds_its_own_handle() {
    each_seed(
        concat!(
            module_path!(),
            "::closing_a_loop_frees_a_pending_closure_that_holds_its_own_handle"
        ),
        20,
        || {
            let state = Rc::new(Held::default());
            let weak = Rc::downgrade(&state);
            let lp = EventLoop::new().unwrap();
            let h = lp.handle();
            lp.run_until_complete(async move {
                // A timer that does not come due before the loop closes, and one more that
                // does, so the loop has run with both in its heap.
                let st = state.clone();
                let t = h.call_later(Duration::from_secs(3600), move || drop(st)).unwrap();
                state.handles.borrow_mut().push(t);
                evloop::time::sleep(Duration::from_millis(2)).await;
            })
            .unwrap();
            lp.close().unwrap();
            drop(lp);
            assert!(
                weak.upgrade().is_none(),
                "a closure that holds its own handle outlived the closed loop (a reference cycle)"
            );
        },
    );
}

/// A task of one loop that awaits a promise or a task of another fails at once with an error
/// naming both loops, instead of waiting for a loop that cannot run meanwhile (f6ff3c9, the
/// cross-loop hangs).
#[evloop::test(simulate(seeds = 20))]
async fn awaiting_another_loops_promise_or_task_fails_at_once() {
    let other = EventLoop::new().unwrap();
    let p: Promise<u32> = other.create_future();
    let t = other.create_task(async { 5u32 }).unwrap();
    let start = evloop::event_loop::get_running_loop().unwrap().time();
    let promise = evloop::time::timeout(Duration::from_secs(60), p.wait()).await;
    let task = evloop::time::timeout(Duration::from_secs(60), t).await;
    let waited = evloop::event_loop::get_running_loop().unwrap().time() - start;
    assert!(
        matches!(promise, Ok(Err(PromiseError::WrongLoop(_)))),
        "awaiting another loop's promise: {promise:?} after {waited:?}"
    );
    assert!(
        matches!(task, Ok(Err(TaskError::WrongLoop(_)))),
        "awaiting another loop's task: {task:?} after {waited:?}"
    );
    other.close().unwrap();
}
