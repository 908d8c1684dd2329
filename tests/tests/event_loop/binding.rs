//! Objects bound to one event loop, used from a task of another: a clear error naming both
//! loops, at once, never a silent hang (asyncio: "Task got Future attached to a different
//! loop", "... is bound to a different event loop").
//!
//! Two loops can live on one thread but only one runs at a time, so a task of the running loop
//! that waits for something only the other loop can complete would wait forever. Every test
//! here makes loop A own (or bind) an object, then lets a task of loop B wait on it; each run is
//! bounded by a 5 s timeout, which the buggy versions hit.

use std::rc::Rc;
use std::time::{Duration, Instant};

use evloop::net::{Domain, SockType, Socket};
use evloop::sync::{mpsc, oneshot};
use evloop::{
    event_loop::{EventLoop, LoopHandle},
    sync::{Barrier, BoundedSemaphore, Condition, Event, Lock, Mutex, Semaphore, SyncError, queue::Queue},
    task::{Promise, PromiseError, RunError, TaskError, yield_now},
    time::{sleep, timeout},
};

/// Runs `fut` on `lp` for at most 5 s: `None` if it timed out (the hang this file is about).
fn within_5s<F>(lp: &LoopHandle, fut: F) -> Result<Option<F::Output>, RunError>
where
    F: std::future::Future + 'static,
    F::Output: 'static,
{
    lp.run_until_complete(async move { timeout(Duration::from_secs(5), fut).await.ok() })
}

/// Loop A and loop B, both on this thread.
fn two_loops() -> (EventLoop, EventLoop) {
    (EventLoop::new().unwrap(), EventLoop::new().unwrap())
}

/// The panic a task of `b` died of, which must name both loops.
fn panic_naming_both(r: Result<Option<()>, RunError>, a: &LoopHandle, b: &LoopHandle, what: &str) -> String {
    let msg = match r {
        Err(RunError::Task(TaskError::Panicked { panic, .. })) => panic.message().to_string(),
        Ok(None) => panic!("{what}: hung (timed out after 5 s)"),
        other => panic!("{what}: expected the waiting task to fail, got {other:?}"),
    };
    names_both(&msg, a, b, what);
    msg
}

fn names_both(msg: &str, a: &LoopHandle, b: &LoopHandle, what: &str) {
    assert!(
        msg.contains(&format!("#{}", a.id())) && msg.contains(&format!("#{}", b.id())),
        "{what}: the error names loop #{} and loop #{}: {msg}",
        a.id(),
        b.id()
    );
}

/// Runs `lp` until `cond` holds (a task of it reached the point where it waits).
fn run_until(lp: &LoopHandle, cond: impl Fn() -> bool + 'static) {
    lp.run_until_complete(async move {
        for _ in 0..100 {
            if cond() {
                return;
            }
            yield_now().await;
        }
        panic!("the condition never held");
    })
    .unwrap();
}

// ---------------------------------------------------------------------------------------------
// Promises and tasks: an error value.

#[test]
fn awaiting_another_loops_promise_is_a_wrong_loop_error_naming_both_loops() {
    let (a, b) = two_loops();
    let p: Promise<u32> = a.create_future();
    let q = p.clone();
    let out = within_5s(&b, async move { q.await }).unwrap();
    let e = match out {
        Some(Err(PromiseError::WrongLoop(e))) => e,
        Some(other) => panic!("expected WrongLoop, got {other:?}"),
        None => panic!("awaiting another loop's promise hung"),
    };
    println!("{e}");
    assert_eq!((e.bound_loop(), e.running_loop()), (a.id(), b.id()));
    assert_eq!(e.object(), format!("Promise#{}", p.id()));
    names_both(&e.to_string(), &a, &b, "promise");
    // A promise that is already done is just a value: awaiting it from anywhere is fine.
    p.set_result(7).unwrap();
    let q = p.clone();
    assert_eq!(within_5s(&b, async move { q.await }).unwrap(), Some(Ok(7)));
}

#[test]
fn run_until_complete_of_another_loops_promise_fails_at_once() {
    let (a, b) = two_loops();
    let p: Promise<()> = a.create_future();
    // A hang would be stopped by the watchdog (run_until_complete then reports "stopped").
    let dog = evloop_tests::watchdog::Watchdog::start(b.remote(), Duration::from_secs(5));
    let out = b.run_until_complete(p.wait());
    assert!(!dog.finish(), "run_until_complete of another loop's promise hung");
    assert!(matches!(out, Ok(Err(PromiseError::WrongLoop(_)))), "{out:?}");
}

#[test]
fn awaiting_another_loops_task_is_a_wrong_loop_error() {
    let (a, b) = two_loops();
    let t = a.create_task(async { 5 }).unwrap();
    let out = within_5s(&b, t).unwrap();
    match out {
        Some(Err(TaskError::WrongLoop(e))) => {
            println!("{e}");
            assert_eq!((e.bound_loop(), e.running_loop()), (a.id(), b.id()));
            assert_eq!(e.object(), "Task-1");
        }
        Some(other) => panic!("expected WrongLoop, got {other:?}"),
        None => panic!("awaiting another loop's task hung"),
    }
}

// ---------------------------------------------------------------------------------------------
// Synchronisation primitives, queues and channels: bound by their first waiter.

#[test]
fn a_condition_first_waited_on_in_one_loop_refuses_a_waiter_of_another() {
    let (a, b) = two_loops();
    let cond = Rc::new(Condition::new());
    let c = cond.clone();
    let _waiter = a
        .create_task(async move {
            let g = c.acquire().await.unwrap();
            let _ = c.wait(g).await;
        })
        .unwrap();
    let c = cond.clone();
    run_until(&a, move || c.waiters() == 1);
    let c = cond.clone();
    let out = within_5s(&b, async move {
        let g = c.acquire().await.unwrap();
        c.wait(g).await.map(drop)
    })
    .unwrap();
    match out {
        Some(Err(e @ SyncError::WrongLoop { .. })) => {
            println!("{e}");
            names_both(&e.to_string(), &a, &b, "Condition.wait");
        }
        other => panic!("expected SyncError::WrongLoop, got {other:?}"),
    }
}

#[test]
fn a_barrier_bound_to_one_loop_refuses_a_party_of_another() {
    let (a, b) = two_loops();
    // Three parties: B's task arrives second, so it has to wait (a last party would trip the
    // barrier without waiting, which needs no loop).
    let barrier = Rc::new(Barrier::new(3));
    let br = barrier.clone();
    let _party = a.create_task(async move { br.wait().await }).unwrap();
    let br = barrier.clone();
    run_until(&a, move || br.n_waiting() == 1);
    let br = barrier.clone();
    let out = within_5s(&b, async move { br.wait().await }).unwrap();
    assert!(matches!(out, Some(Err(SyncError::WrongLoop { .. }))), "{out:?}");
}

/// Makes loop A hold `acquire`'s resource in one task and wait for it in another (which binds
/// the primitive to A), running A until the waiter waits.
fn held_and_awaited_in<F, W>(a: &EventLoop, acquire: F, waiting: W)
where
    F: Fn() -> std::pin::Pin<Box<dyn std::future::Future<Output = ()>>> + 'static,
    W: Fn() -> bool + 'static,
{
    let hold = acquire();
    a.create_task(async move {
        // The holder never lets go while the test runs.
        let _held = hold.await;
        sleep(Duration::from_secs(3600)).await;
    })
    .unwrap()
    .detach();
    let wait = acquire();
    a.create_task(async move {
        yield_now().await;
        wait.await;
    })
    .unwrap()
    .detach();
    run_until(a, waiting);
}

/// The error the wait of a task of `b` returned, which must be `SyncError::WrongLoop` naming both
/// loops; its message.
fn wrong_loop_naming_both<T: std::fmt::Debug>(
    r: Result<Option<Result<T, SyncError>>, RunError>,
    a: &LoopHandle,
    b: &LoopHandle,
    what: &str,
) -> String {
    match r {
        Ok(Some(Err(e @ SyncError::WrongLoop(_)))) => {
            names_both(&e.to_string(), a, b, what);
            e.to_string()
        }
        Ok(None) => panic!("{what}: hung (timed out after 5 s)"),
        other => panic!("{what}: expected Err(SyncError::WrongLoop), got {other:?}"),
    }
}

#[test]
fn a_lock_or_semaphore_bound_to_one_loop_gives_the_task_of_another_a_wrong_loop_error_naming_both() {
    let (a, b) = two_loops();

    let lock = Rc::new(Lock::new());
    let (l1, l2) = (lock.clone(), lock.clone());
    held_and_awaited_in(
        &a,
        move || {
            let l = l1.clone();
            Box::pin(async move { std::mem::forget(l.acquire().await.unwrap()) })
        },
        move || l2.waiters() == 1,
    );
    let l = lock.clone();
    let msg = wrong_loop_naming_both(
        within_5s(&b, async move { l.acquire().await.map(drop) }),
        &a,
        &b,
        "Lock",
    );
    println!("{msg}");
    assert!(msg.contains("Lock.acquire()"), "{msg}");

    let sem = Rc::new(Semaphore::new(1));
    let (s1, s2) = (sem.clone(), sem.clone());
    held_and_awaited_in(
        &a,
        move || {
            let s = s1.clone();
            Box::pin(async move { s.acquire().await.unwrap().forget() })
        },
        move || s2.waiters() == 1,
    );
    let s = sem.clone();
    wrong_loop_naming_both(
        within_5s(&b, async move { s.acquire().await.map(drop) }),
        &a,
        &b,
        "Semaphore",
    );

    let bsem = Rc::new(BoundedSemaphore::new(1));
    let (s1, s2) = (bsem.clone(), bsem.clone());
    held_and_awaited_in(
        &a,
        move || {
            let s = s1.clone();
            Box::pin(async move { s.acquire().await.unwrap().forget() })
        },
        move || s2.waiters() == 1,
    );
    let s = bsem.clone();
    wrong_loop_naming_both(
        within_5s(&b, async move { s.acquire().await.map(drop) }),
        &a,
        &b,
        "BoundedSemaphore",
    );
}

#[test]
fn a_mutex_is_bound_to_no_loop_so_tasks_of_two_loops_share_it() {
    let (a, b) = two_loops();
    let mutex = Rc::new(Mutex::new(0u32));
    // One loop after the other, each with a task that has to wait for the lock: the first
    // loop's waiter would have bound a loop-bound primitive, and the second one's then failed.
    for lp in [&a, &b] {
        let m = mutex.clone();
        let out = within_5s(lp, async move {
            let guard = m.lock().await;
            let m2 = m.clone();
            let waiter = evloop::spawn(async move { *m2.lock().await += 1 });
            yield_now().await; // the second task waits for the guard
            drop(guard);
            waiter.await.unwrap();
        });
        assert_eq!(out.unwrap(), Some(()));
    }
    assert_eq!(*mutex.try_lock().unwrap(), 2);

    // A task of B waits while the lock is held; the release (here outside any loop) wakes it
    // through its waker.
    let guard = mutex.try_lock().unwrap();
    let (m, started) = (mutex.clone(), Rc::new(std::cell::Cell::new(false)));
    let s = started.clone();
    let waiter = b
        .create_task(async move {
            s.set(true);
            *m.lock().await += 1;
        })
        .unwrap();
    run_until(&b, move || started.get());
    drop(guard);
    assert_eq!(within_5s(&b, waiter).unwrap().map(|r| r.is_ok()), Some(true));
    assert_eq!(*mutex.try_lock().unwrap(), 3);
}

#[test]
fn an_event_bound_to_one_loop_gives_the_waiter_of_another_a_wrong_loop_error_and_still_wakes_its_own() {
    let (a, b) = two_loops();
    let event = Rc::new(Event::new());
    let ev = event.clone();
    let own = a.create_task(async move { ev.wait().await }).unwrap();
    let ev = event.clone();
    run_until(&a, move || ev.waiters() == 1);
    let ev = event.clone();
    wrong_loop_naming_both(within_5s(&b, async move { ev.wait().await }), &a, &b, "Event");
    // Setting is not waiting: any loop may set it, and A's waiter completes when A runs.
    let ev = event.clone();
    within_5s(&b, async move { ev.set() }).unwrap();
    assert_eq!(
        within_5s(&a, own).unwrap().map(|r| r.map_err(|e| e.to_string())),
        Some(Ok(Ok(())))
    );
}

#[test]
fn queues_and_channels_bound_to_one_loop_refuse_waiters_of_another() {
    let (a, b) = two_loops();
    // Queue: a getter of A binds it.
    let q: Queue<u32> = Queue::new(1);
    let qa = q.clone();
    let _getter = a.create_task(async move { qa.get().await }).unwrap();
    let qa = q.clone();
    run_until(&a, move || format!("{qa:?}").contains("getters=1"));
    let qb = q.clone();
    panic_naming_both(
        within_5s(&b, async move {
            let _ = qb.get().await;
        }),
        &a,
        &b,
        "Queue::get",
    );
    // put_nowait needs no wait: fine from B; it hands the item to A's getter.
    let qb = q.clone();
    within_5s(&b, async move { qb.put_nowait(1).unwrap() }).unwrap();

    // mpsc: a receiver of A binds the channel.
    let (tx, mut rx) = mpsc::channel::<u32>(1);
    let _recv = a.create_task(async move { rx.recv().await }).unwrap();
    a.run_until_complete(async {
        yield_now().await;
        yield_now().await;
    })
    .unwrap();
    // The value goes to A's waiting receiver and fills the channel: B's send must wait.
    tx.try_send(1).unwrap();
    let tx2 = tx.clone();
    panic_naming_both(
        within_5s(&b, async move {
            let _ = tx2.send(2).await;
        }),
        &a,
        &b,
        "mpsc::Sender::send",
    );

    // oneshot: an error value (its output has room for one).
    let (otx, orx) = oneshot::<u32>();
    let orx = Rc::new(std::cell::Cell::new(Some(orx)));
    let o = orx.clone();
    let first = a
        .create_task(async move {
            let mut rx = o.take().unwrap();
            let r = timeout(Duration::from_millis(1), &mut rx).await;
            o.set(Some(rx));
            r.is_err()
        })
        .unwrap();
    assert_eq!(within_5s(&a, first).unwrap().map(|r| r.unwrap()), Some(true));
    let o = orx.clone();
    let out = within_5s(&b, async move { o.take().unwrap().await }).unwrap();
    match out {
        Some(Err(e @ oneshot::RecvError::WrongLoop { .. })) => names_both(&e.to_string(), &a, &b, "oneshot"),
        other => panic!("expected RecvError::WrongLoop, got {other:?}"),
    }
    drop(otx);
}

// ---------------------------------------------------------------------------------------------
// I/O: bound to the loop whose reactor polls the fd.

#[test]
fn a_socket_of_one_loop_waited_on_from_another_is_a_wrong_loop_error() {
    let (a, b) = two_loops();
    let (x, _y) = evloop_syscalls::socketpair(Domain::Unix, SockType::Stream).unwrap();
    let sock = Rc::new(Socket::with_loop(&a, x).unwrap());
    let s = sock.clone();
    let out = within_5s(&b, async move {
        let mut buf = [0u8; 8];
        s.recv(&mut buf).await
    })
    .unwrap();
    let e = match out {
        Some(Err(e)) => e,
        other => panic!("expected an error, got {other:?}"),
    };
    println!("{e}");
    names_both(&e.to_string(), &a, &b, "socket");
    assert!(
        e.to_string()
            .contains(&format!("fd {}", std::os::fd::AsRawFd::as_raw_fd(&*sock))),
        "{e}"
    );
}

#[test]
fn a_stream_of_one_loop_read_from_another_is_a_wrong_loop_error() {
    let (a, b) = two_loops();
    let (reader, writer, _server) = a
        .run_until_complete(async move {
            let server = evloop::streams::start_server(
                |_r, w: evloop::streams::StreamWriter| async move {
                    sleep(Duration::from_secs(3600)).await;
                    drop(w);
                },
                "127.0.0.1",
                0,
            )
            .await
            .unwrap();
            let port = server.local_addr().port();
            let (r, w) = evloop::streams::open_connection("127.0.0.1", port).await.unwrap();
            (r, w, server)
        })
        .unwrap();
    let out = within_5s(&b, async move { reader.readline().await.map(drop) }).unwrap();
    match out {
        Some(Err(e)) => names_both(&e.to_string(), &a, &b, "StreamReader"),
        other => panic!("expected an error, got {other:?}"),
    }
    let out = within_5s(&b, async move { writer.wait_closed().await }).unwrap();
    match out {
        Some(Err(e)) => names_both(&e.to_string(), &a, &b, "StreamWriter"),
        other => panic!("expected an error, got {other:?}"),
    }
}

// ---------------------------------------------------------------------------------------------
// Not bound: sleeps, executor jobs, thread-safe channels.

#[test]
fn a_sleep_registered_on_one_loop_completes_on_another() {
    let (a, b) = two_loops();
    let created = Instant::now();
    let mut s = Box::pin(sleep(Duration::from_millis(100)));
    // Poll it once on A: its timer goes into A's heap.
    let s = a
        .run_until_complete(async move {
            assert!(timeout(Duration::from_millis(1), s.as_mut()).await.is_err());
            Some(s)
        })
        .unwrap()
        .unwrap();
    // Nothing else wakes B's task: only a timer in B's own heap can.
    let dog = evloop_tests::watchdog::Watchdog::start(b.remote(), Duration::from_secs(5));
    let out = b.run_until_complete(s);
    assert!(!dog.finish(), "the sleep's timer stayed in A's heap: B waited forever");
    out.unwrap();
    assert!(created.elapsed() >= Duration::from_millis(100), "not early");
}

#[test]
fn a_threadsafe_channel_and_an_executor_job_work_across_loops() {
    let (a, b) = two_loops();
    let (tx, mut rx) = evloop::sync::threadsafe::channel::<u32>();
    let job = a.run_in_executor(|| 41 + 1).unwrap();
    tx.send(1).unwrap();
    let out = within_5s(&b, async move { (rx.recv().await, job.await.unwrap()) }).unwrap();
    assert_eq!(out, Some((Some(1), 42)));
}
