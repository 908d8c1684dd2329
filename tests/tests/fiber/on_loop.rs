//! Fibers on the loop (gevent's hub): `fiber::spawn` runs a function in a fiber as a task,
//! `fiber::block_on` parks the fiber on any evloop future, and blocking-style code shares the
//! loop with async tasks.
//!
//! - the fiber's task returns the function's value, is named after the fiber, and shows what the
//!   fiber waits for;
//! - `block_on` outside a fiber run by the loop is an error, never a deadlock;
//! - `fiber::sleep` never returns early; fibers and tasks interleave through sync primitives;
//! - cancelling the task (or closing the loop) unwinds the fiber: destructors run, stacks go
//!   back; a panic in the fiber fails the task with the panic's message;
//! - trace mode shows the switches;
//! - an echo server written in blocking style on fibers serves a load client of 20 connections
//!   with exactly one `recv` and one `send` per round trip and no `epoll_ctl`.

use std::cell::{Cell, RefCell};
use std::io::{Read, Write};
use std::net::SocketAddr;
use std::rc::Rc;
use std::thread;
use std::time::Duration;

use evloop::fiber::{self, Fiber, FiberError};
use evloop::net::{TcpListener, TcpStream};
use evloop::sync::Event;
use evloop::sys::Syscall;
use evloop::sys::counters;
use evloop::{
    event_loop::{Builder, EventLoop},
    sync::queue::Queue,
    task::TaskError,
};
use evloop_tests::{DropFlag, entries, flag, log, push, run_bounded};

#[test]
fn a_spawned_fiber_returns_its_value_through_its_task() {
    let lp = EventLoop::new().unwrap();
    let out = run_bounded(&lp, async {
        let task = fiber::spawn(|| {
            fiber::sleep(Duration::from_millis(1)).unwrap();
            6 * 7
        })
        .unwrap();
        assert!(task.name().starts_with("Fiber-"), "{}", task.name());
        task.await.unwrap()
    });
    assert_eq!(out, 42);
}

#[test]
fn block_on_outside_a_loop_fiber_is_an_error_not_a_deadlock() {
    // On the loop's own stack, inside a task.
    let lp = EventLoop::new().unwrap();
    let e = run_bounded(&lp, async { fiber::block_on(async { 1 }) }).unwrap_err();
    assert!(
        matches!(&e, FiberError::NotInLoopFiber { fiber, .. } if fiber == "main"),
        "{e}"
    );
    assert!(e.to_string().contains("deadlock"), "{e}");
    // In a plain fiber that a task switches into.
    let e = run_bounded(&lp, async {
        let f = Fiber::new(|_| fiber::sleep(Duration::from_millis(1)).unwrap_err().to_string());
        f.switch(()).unwrap().downcast::<String>().unwrap()
    });
    assert!(e.contains("not a fiber run by the loop"), "{e}");
    // With no loop at all, and through the io helpers (as an io::Error).
    assert!(fiber::yield_now().is_err());
    let io = run_bounded(&lp, async move {
        let (mut x, _y) = evloop::net::UnixStream::pair().unwrap();
        let mut buf = [0u8; 4];
        fiber::read(&mut x, &mut buf).unwrap_err()
    });
    assert_eq!(io.kind(), std::io::ErrorKind::Unsupported, "{io}");
}

#[test]
fn spawn_without_a_running_loop_is_an_error() {
    let e = fiber::spawn(|| ()).unwrap_err();
    assert!(matches!(e, FiberError::Loop(_)), "{e}");
    // spawn_on a loop that is not running yet works: the task waits for the loop.
    let lp = EventLoop::new().unwrap();
    let task = fiber::Builder::new().name("early").spawn_on(&lp, || 5).unwrap();
    assert_eq!(task.name(), "early");
    assert_eq!(run_bounded(&lp, task).unwrap(), 5);
}

#[test]
fn fiber_sleep_is_never_early_and_sleeping_fibers_interleave() {
    let lp = EventLoop::new().unwrap();
    let order = log();
    let o = order.clone();
    run_bounded(&lp, async move {
        let mut tasks = Vec::new();
        for (name, ms) in [("c", 30u64), ("a", 10), ("b", 20)] {
            let o = o.clone();
            tasks.push(
                fiber::spawn(move || {
                    let lp = evloop::event_loop::get_running_loop().unwrap();
                    let start = lp.time();
                    fiber::sleep(Duration::from_millis(ms)).unwrap();
                    assert!(lp.time() - start >= Duration::from_millis(ms), "woke early");
                    push(&o, name);
                })
                .unwrap(),
            );
        }
        for t in tasks {
            t.await.unwrap();
        }
    });
    assert_eq!(entries(&order), ["a", "b", "c"]);
}

#[test]
fn fibers_and_tasks_share_sync_primitives() {
    let lp = EventLoop::new().unwrap();
    let got = run_bounded(&lp, async {
        let queue = Rc::new(Queue::<u32>::new(1));
        let ready = Rc::new(Event::new());
        let (q, r) = (queue.clone(), ready.clone());
        // A fiber produces in blocking style; a task consumes with .await.
        let producer = fiber::spawn(move || {
            fiber::block_on(r.wait()).unwrap().unwrap();
            for i in 0..5 {
                fiber::block_on(q.put(i)).unwrap().unwrap();
            }
        })
        .unwrap();
        evloop::time::sleep(Duration::from_millis(2)).await;
        ready.set();
        let mut got = Vec::new();
        for _ in 0..5 {
            got.push(queue.get().await.unwrap());
        }
        producer.await.unwrap();
        got
    });
    assert_eq!(got, [0, 1, 2, 3, 4]);
}

#[test]
fn a_fiber_awaits_a_task_and_a_task_awaits_a_fiber() {
    let lp = EventLoop::new().unwrap();
    let out = run_bounded(&lp, async {
        let inner = fiber::spawn(|| {
            let t = evloop::spawn(async {
                evloop::time::sleep(Duration::from_millis(1)).await;
                20
            });
            fiber::block_on(t).unwrap().unwrap() + 1
        })
        .unwrap();
        inner.await.unwrap() * 2
    });
    assert_eq!(out, 42);
}

#[test]
fn the_task_dump_shows_what_a_fiber_waits_for() {
    let lp = EventLoop::new().unwrap();
    let dump = run_bounded(&lp, async {
        let t = fiber::Builder::new()
            .name("sleeper")
            .spawn(|| fiber::sleep(Duration::from_secs(3600)).unwrap())
            .unwrap();
        evloop::task::yield_now().await;
        evloop::task::yield_now().await;
        let dump = evloop::event_loop::get_running_loop().unwrap().dump_tasks();
        t.cancel();
        dump
    });
    assert!(dump.contains("sleeper [pending] awaiting a timer"), "{dump}");
}

#[test]
fn cancelling_the_task_unwinds_the_fiber() {
    let lp = EventLoop::new().unwrap();
    let unwound = flag();
    let cleanup_wait = Rc::new(RefCell::new(None));
    let (u, cw) = (unwound.clone(), cleanup_wait.clone());
    let before = fiber::stack_stats().in_use;
    let r = run_bounded(&lp, async move {
        let task = fiber::spawn(move || {
            struct Cleanup(Rc<RefCell<Option<String>>>, #[allow(dead_code)] DropFlag);
            impl Drop for Cleanup {
                fn drop(&mut self) {
                    // Waiting is refused while the fiber unwinds.
                    let e = fiber::sleep(Duration::from_millis(1)).unwrap_err();
                    *self.0.borrow_mut() = Some(e.to_string());
                }
            }
            let _c = Cleanup(cw, DropFlag(u));
            fiber::sleep(Duration::from_secs(3600)).unwrap();
            unreachable!("cancelled while sleeping");
        })
        .unwrap();
        evloop::time::sleep(Duration::from_millis(2)).await;
        task.cancel();
        task.await
    });
    assert!(matches!(r, Err(TaskError::Cancelled { .. })), "{r:?}");
    assert!(unwound.get(), "the fiber's destructors ran");
    let msg = cleanup_wait.borrow().clone().unwrap();
    assert!(msg.contains("can no longer wait"), "{msg}");
    assert_eq!(fiber::stack_stats().in_use, before, "its stack went back to the pool");
}

#[test]
fn closing_the_loop_unwinds_suspended_fibers() {
    let unwound = flag();
    let u = unwound.clone();
    let before = fiber::stack_stats().in_use;
    let r = evloop::run(async move {
        fiber::spawn(move || {
            let _d = DropFlag(u);
            fiber::sleep(Duration::from_secs(3600)).unwrap();
        })
        .unwrap()
        .detach();
        evloop::time::sleep(Duration::from_millis(1)).await;
        "main done"
    });
    assert_eq!(r.unwrap(), "main done");
    assert!(
        unwound.get(),
        "run() cancelled the leftover fiber task, which unwound the fiber"
    );
    assert_eq!(fiber::stack_stats().in_use, before);
}

#[test]
fn a_panic_in_a_fiber_fails_its_task_with_the_message() {
    let lp = EventLoop::new().unwrap();
    let r = run_bounded(&lp, async {
        fiber::spawn(|| {
            fiber::sleep(Duration::from_millis(1)).unwrap();
            panic!("boom in a fiber");
        })
        .unwrap()
        .await
    });
    match r {
        Err(TaskError::Panicked { panic, task }) => {
            assert_eq!(panic.message(), "boom in a fiber");
            assert!(task.starts_with("Fiber-"));
        }
        other => panic!("expected a panic, got {other:?}"),
    }
}

#[test]
fn trace_mode_shows_fiber_switches_like_task_steps() {
    let lines = Rc::new(RefCell::new(Vec::<String>::new()));
    let l = lines.clone();
    let lp = Builder::new()
        .trace(true)
        .trace_sink(move |line| l.borrow_mut().push(line.to_string()))
        .build()
        .unwrap();
    let out = run_bounded(&lp, async {
        fiber::Builder::new()
            .name("worker")
            .spawn(|| {
                fiber::sleep(Duration::from_millis(1)).unwrap();
                7u32
            })
            .unwrap()
            .await
            .unwrap()
    });
    assert_eq!(out, 7);
    let text = lines.borrow().join("\n");
    for needle in [
        "  worker step",
        "  main switch -> worker (())",
        "  worker switch -> main (blocked)",
        "  worker -> pending on a timer",
        "  worker -> dead, () to main",
        "  worker -> done",
    ] {
        assert!(text.contains(needle), "{needle:?} missing from:\n{text}");
    }
}

#[test]
fn a_fiber_stack_that_cannot_be_mapped_is_an_error_at_spawn() {
    let lp = EventLoop::new().unwrap();
    let e = run_bounded(&lp, async {
        // A size of its own, so the pool has no free stack of it and must map a chunk.
        evloop::sys::fault::fail_nth(Syscall::Mmap, 1, evloop_syscalls::errno::ENOMEM);
        let e = fiber::Builder::new()
            .name("big")
            .stack_size(3 << 20)
            .spawn(|| ())
            .unwrap_err();
        evloop::sys::fault::clear();
        e
    });
    assert!(matches!(&e, FiberError::Stack { fiber, .. } if fiber == "big"), "{e}");
    assert!(e.to_string().contains("mmap"), "{e}");
    // The same request works once memory is back.
    let r = run_bounded(&lp, async {
        fiber::Builder::new()
            .stack_size(3 << 20)
            .spawn(|| 1)
            .unwrap()
            .await
            .unwrap()
    });
    assert_eq!(r, 1);
}

// ---------------------------------------------------------------------------------------------
// The echo server in blocking style.

const CONNS: usize = 20;
const ROUNDS: usize = 200;
const MSG: usize = 64;

/// One connection, gevent style: read, write back, until the peer closes.
fn echo(mut conn: TcpStream) {
    let mut buf = [0u8; 4096];
    loop {
        match fiber::read(&mut conn, &mut buf) {
            Ok(0) | Err(_) => return,
            Ok(n) => {
                if fiber::write_all(&mut conn, &buf[..n]).is_err() {
                    return;
                }
            }
        }
    }
}

/// The load client: `CONNS` blocking std connections in threads, `ROUNDS` round trips each,
/// every reply checked byte for byte. Returns the round trips done.
fn load(addr: SocketAddr) -> thread::JoinHandle<usize> {
    thread::spawn(move || {
        let clients: Vec<_> = (0..CONNS)
            .map(|c| {
                thread::spawn(move || {
                    let mut s = std::net::TcpStream::connect(addr).unwrap();
                    s.set_nodelay(true).unwrap();
                    s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
                    let mut done = 0;
                    for r in 0..ROUNDS {
                        let msg: Vec<u8> = (0..MSG).map(|i| (c * 7 + r * 3 + i) as u8).collect();
                        s.write_all(&msg).unwrap();
                        let mut back = vec![0u8; MSG];
                        s.read_exact(&mut back).unwrap();
                        assert_eq!(back, msg);
                        done += 1;
                    }
                    done
                })
            })
            .collect();
        clients.into_iter().map(|t| t.join().unwrap()).sum()
    })
}

#[test]
fn an_echo_server_in_blocking_style_serves_a_load_client() {
    let lp = EventLoop::new().unwrap();
    let served = Rc::new(Cell::new(0usize));
    let s = served.clone();
    let (done, counts) = run_bounded(&lp, async move {
        counters::reset();
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let server = fiber::spawn(move || {
            let mut handlers = Vec::new();
            for _ in 0..CONNS {
                let (conn, _peer) = fiber::accept(&listener).unwrap();
                let s = s.clone();
                handlers.push(
                    fiber::spawn(move || {
                        echo(conn);
                        s.set(s.get() + 1);
                    })
                    .unwrap(),
                );
            }
            for h in handlers {
                fiber::block_on(h).unwrap().unwrap();
            }
        })
        .unwrap();
        let client = load(addr);
        server.await.unwrap();
        // The server only ends after every connection ended, so the clients are done.
        let counts = counters::snapshot();
        (client.join().unwrap(), counts)
    });
    assert_eq!(done, CONNS * ROUNDS);
    assert_eq!(served.get(), CONNS, "every connection fiber finished");
    // This thread's calls over the whole run (the clients are other threads): one send per
    // round trip; one recv per message plus the one that sees each close (a short read drains
    // the socket, so no recv ends in EAGAIN unless a spurious edge came: 5% slack); epoll_ctl
    // only to register and deregister the sockets, never per round trip.
    let trips = (CONNS * ROUNDS) as u64;
    assert_eq!(counts[Syscall::Send], trips, "{counts}");
    assert!(counts[Syscall::Recv] >= trips + CONNS as u64, "{counts}");
    assert!(counts[Syscall::Recv] <= trips + CONNS as u64 + trips / 20, "{counts}");
    assert!(counts[Syscall::EpollCtl] <= 2 * CONNS as u64 + 2, "{counts}");
}
