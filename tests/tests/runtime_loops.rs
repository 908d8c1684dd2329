//! The multi-loop runtime (`evloop::runtime`, issue 20): start and stop with nothing left
//! behind, failures that surface, `spawn_on` across loops, every listening policy under
//! connection churn (each connection served exactly once) and a shutdown under load that loses
//! no accepted connection. Loopback only; every test is bounded (a few seconds at most).
//!
//! The tests of this file take one lock: the fd and thread counts of the first test must not
//! see another test's threads.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use evloop::io::{AsyncReadExt, AsyncWriteExt};
use evloop::runtime::{Builder, Failure, Policy, TcpListeners};

static SERIAL: Mutex<()> = Mutex::new(());

fn serial() -> MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|p| p.into_inner())
}

fn count(dir: &str) -> usize {
    std::fs::read_dir(dir).unwrap().count()
}

/// Waits (briefly) for evloop's thread count (its threads by name: libtest's threads for this
/// file's other tests, waiting on the lock, come and go meanwhile) to come back: a joined
/// thread's task entry may linger a moment.
fn settle(expected: usize) -> usize {
    for _ in 0..200 {
        if evloop_tests::procfs::threads_named("evloop-") <= expected {
            break;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    evloop_tests::procfs::threads_named("evloop-")
}

#[test]
fn start_and_stop_many_times_leaves_no_fd_and_no_thread() {
    let _g = serial();
    // One warm-up run: lazily opened process-wide fds (none expected) are made here.
    Builder::new().loops(2).build().unwrap().shutdown().unwrap();
    let (fds, tasks) = (count("/proc/self/fd"), settle(0));
    for round in 0..25 {
        let rt = Builder::new().loops(1 + round % 4).build().unwrap();
        let l = TcpListeners::bind(rt.handle(), "127.0.0.1:0".parse().unwrap(), Policy::ReusePort).unwrap();
        rt.spawn_on_each(move |_| {
            let l = l.clone();
            async move { l.serve(|_, _| async {}).await }
        });
        rt.shutdown().unwrap();
    }
    assert_eq!(count("/proc/self/fd"), fds, "fds left behind");
    assert_eq!(settle(tasks), tasks, "threads left behind");
}

#[test]
fn a_panic_in_one_loop_stops_the_others_and_surfaces() {
    let _g = serial();
    let rt = Builder::new().loops(3).build().unwrap();
    rt.spawn_on_each(|ctx| async move {
        if ctx.index() == 2 {
            evloop::time::sleep(Duration::from_millis(10)).await;
            panic!("loop two fails");
        }
        ctx.stopped().await; // the others run until the failure stops them
        Ok(())
    });
    let err = rt.wait().unwrap_err();
    assert_eq!(err.failures().len(), 1);
    assert_eq!(err.failures()[0].index(), 2);
    assert!(matches!(err.failures()[0].kind(), Failure::Panic(p) if p.message() == "loop two fails"));
}

#[test]
fn block_on_resumes_with_a_panic_of_loop_zero_as_a_failure() {
    let _g = serial();
    let rt = Builder::new().loops(2).build().unwrap();
    let err = rt
        .block_on(|| async { panic!("main fails") })
        .map(|_: ()| ())
        .unwrap_err();
    assert!(matches!(err.failures()[0].kind(), Failure::Panic(p) if p.message() == "main fails"));
}

#[test]
fn spawn_on_reaches_every_loop_from_a_loop_and_comes_back() {
    let _g = serial();
    let rt = Builder::new().loops(4).build().unwrap();
    let got = rt
        .block_on(|| async {
            let ctx = evloop::runtime::Context::current().unwrap();
            let (tx, mut rx) = evloop::sync::threadsafe::channel();
            for i in 0..ctx.loops() {
                let tx = tx.clone();
                ctx.handle()
                    .spawn_on(i, move || async move {
                        let here = evloop::runtime::Context::current().unwrap().index();
                        let _ = tx.send((i, here, std::thread::current().name().map(String::from)));
                    })
                    .unwrap();
            }
            drop(tx);
            let mut got = Vec::new();
            while let Some(v) = rx.recv().await {
                got.push(v);
            }
            got.sort();
            got
        })
        .unwrap();
    assert_eq!(got.len(), 4);
    for (i, (want, here, name)) in got.into_iter().enumerate() {
        assert_eq!((want, here), (i, i));
        assert_eq!(name, Some(format!("evloop-loop-{i}")));
    }
}

/// `n` connections from 4 client threads; each sends its number and reads it back.
fn churn(addr: std::net::SocketAddr, n: usize) -> usize {
    let ok = Arc::new(AtomicUsize::new(0));
    let clients: Vec<_> = (0..4)
        .map(|c| {
            let ok = ok.clone();
            std::thread::spawn(move || {
                for k in (c..n).step_by(4) {
                    let mut s = TcpStream::connect(addr).unwrap();
                    s.write_all(&(k as u32).to_le_bytes()).unwrap();
                    let mut back = [0; 4];
                    s.read_exact(&mut back).unwrap();
                    assert_eq!(u32::from_le_bytes(back), k as u32);
                    ok.fetch_add(1, SeqCst);
                }
            })
        })
        .collect();
    for c in clients {
        c.join().unwrap();
    }
    ok.load(SeqCst)
}

fn churn_policy(policy: Policy, pin: bool) {
    let _g = serial();
    const N: usize = 2000;
    let rt = Builder::new().loops(2).pin_to_cpus(pin).build().unwrap();
    let l = TcpListeners::bind(rt.handle(), "127.0.0.1:0".parse().unwrap(), policy).unwrap();
    let addr = l.local_addr();
    let served: Arc<Vec<AtomicUsize>> = Arc::new((0..N).map(|_| AtomicUsize::new(0)).collect());
    let s = served.clone();
    rt.spawn_on_each(move |_| {
        let (l, s) = (l.clone(), s.clone());
        async move {
            l.serve(move |mut conn, _| {
                let s = s.clone();
                async move {
                    let mut id = [0; 4];
                    if conn.read_exact(&mut id).await.is_ok() {
                        s[u32::from_le_bytes(id) as usize].fetch_add(1, SeqCst);
                        let _ = conn.write_all(&id).await;
                    }
                }
            })
            .await
        }
    });
    assert_eq!(churn(addr, N), N);
    let stats = rt.handle().stats();
    rt.shutdown().unwrap();
    assert!(
        served.iter().all(|c| c.load(SeqCst) == 1),
        "every connection served exactly once"
    );
    let accepted: u64 = stats.loops().iter().map(|l| l.accepted).sum();
    assert_eq!(accepted, N as u64);
    eprintln!(
        "{policy:?}: accepted per loop {:?}",
        stats.loops().iter().map(|l| l.accepted).collect::<Vec<_>>()
    );
}

#[test]
fn churn_reuse_port_serves_every_connection_once() {
    churn_policy(Policy::ReusePort, false);
}

#[test]
fn churn_least_connections_serves_every_connection_once() {
    churn_policy(Policy::LeastConnections, false);
}

#[test]
fn churn_reuse_port_cpu_serves_every_connection_once() {
    churn_policy(Policy::ReusePortCpu, true);
}

#[test]
fn shutdown_under_load_loses_no_accepted_connection() {
    let _g = serial();
    for policy in [Policy::ReusePort, Policy::LeastConnections] {
        let rt = Builder::new()
            .loops(2)
            .grace_period(Duration::from_secs(3))
            .build()
            .unwrap();
        let l = TcpListeners::bind(rt.handle(), "127.0.0.1:0".parse().unwrap(), policy).unwrap();
        let addr = l.local_addr();
        let (started, finished) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
        let (s, f) = (started.clone(), finished.clone());
        rt.spawn_on_each(move |_| {
            let (l, s, f) = (l.clone(), s.clone(), f.clone());
            async move {
                l.serve(move |mut conn, _| {
                    let (s, f) = (s.clone(), f.clone());
                    async move {
                        s.fetch_add(1, SeqCst);
                        let mut b = [0; 1];
                        if conn.read_exact(&mut b).await.is_ok() {
                            evloop::time::sleep(Duration::from_millis(20)).await; // work in flight at the stop
                            let _ = conn.write_all(&b).await;
                        }
                        f.fetch_add(1, SeqCst);
                    }
                })
                .await
            }
        });
        let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let (echoed, refused) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
        let clients: Vec<_> = (0..4)
            .map(|_| {
                let (stop, echoed, refused) = (stop.clone(), echoed.clone(), refused.clone());
                std::thread::spawn(move || {
                    while !stop.load(SeqCst) {
                        let Ok(mut s) = TcpStream::connect(addr) else {
                            refused.fetch_add(1, SeqCst);
                            continue;
                        };
                        let _ = s.set_read_timeout(Some(Duration::from_secs(5)));
                        let mut b = [0; 1];
                        // Served (the byte comes back) or closed cleanly (EOF or reset), never hung.
                        if s.write_all(b"x").is_ok() && s.read_exact(&mut b).is_ok() {
                            echoed.fetch_add(1, SeqCst);
                        }
                    }
                })
            })
            .collect();
        std::thread::sleep(Duration::from_millis(150));
        rt.shutdown().unwrap();
        stop.store(true, SeqCst);
        for c in clients {
            c.join().unwrap();
        }
        let (s, f) = (started.load(SeqCst), finished.load(SeqCst));
        assert!(s > 0);
        assert_eq!(s, f, "{policy:?}: every accepted connection's handler ran to its end");
        assert!(echoed.load(SeqCst) > 0);
    }
}

#[test]
fn trace_lines_name_their_loop() {
    let _g = serial();
    let lines = Arc::new(Mutex::new(Vec::new()));
    let l = lines.clone();
    let rt = Builder::new()
        .loops(2)
        .trace(true)
        .trace_sink(move |line| l.lock().unwrap().push(line.to_string()))
        .build()
        .unwrap();
    rt.block_on(|| async { evloop::time::sleep(Duration::from_millis(1)).await })
        .unwrap();
    let lines = lines.lock().unwrap();
    assert!(lines.iter().any(|l| l.starts_with("[loop 0 iter ")));
    assert!(lines.iter().any(|l| l.starts_with("[loop 1 iter ")));
    assert!(lines.iter().any(|l| l.starts_with("[loop 1]   stop: ")));
}

#[test]
fn loop_stats_show_busy_time_and_connections() {
    let _g = serial();
    let rt = Builder::new().loops(1).build().unwrap();
    let l = TcpListeners::bind(rt.handle(), "127.0.0.1:0".parse().unwrap(), Policy::LeastConnections).unwrap();
    let addr = l.local_addr();
    rt.spawn_on_each(move |_| {
        let l = l.clone();
        async move {
            l.serve(|mut c, _| async move {
                let _ = c.write_all(b"!").await;
            })
            .await
        }
    });
    let mut b = [0; 1];
    TcpStream::connect(addr).unwrap().read_exact(&mut b).unwrap();
    let stats = rt
        .block_on(|| async {
            std::thread::sleep(Duration::from_millis(2)); // busy
            evloop::task::yield_now().await;
            evloop::event_loop::get_running_loop().unwrap().stats()
        })
        .unwrap();
    assert_eq!(stats.accepted, 1);
    assert!(stats.busy >= Duration::from_millis(2));
}
