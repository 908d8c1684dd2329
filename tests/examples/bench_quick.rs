//! `make bench-quick`: micro-benchmarks of the runtime's hot paths (spawn, wake, call_soon,
//! promises, timers, cross-thread wakes) and the memory each idle task costs.
//!
//! Each case runs several times and reports the median and the min-max spread. Absolute numbers
//! depend on the machine; the side-by-side ratios against other runtimes come from `make bench`.
//! No case asserts a speed: CI runs this as a smoke test only.

use std::cell::Cell;
use std::rc::Rc;
use std::time::{Duration, Instant};

use evloop::{EventLoop, LoopHandle};

const RUNS: usize = 5;

struct Stats {
    median: f64,
    min: f64,
    max: f64,
}

fn stats(mut v: Vec<f64>) -> Stats {
    v.sort_by(|a, b| a.total_cmp(b));
    Stats {
        median: v[v.len() / 2],
        min: v[0],
        max: v[v.len() - 1],
    }
}

fn measure(runs: usize, mut f: impl FnMut() -> f64) -> Stats {
    f(); // warm-up
    stats((0..runs).map(|_| f()).collect())
}

fn report(name: &str, unit: &str, s: &Stats) {
    println!(
        "{name:<48} {:>12.1} {unit:<10} (min {:.1}, max {:.1})",
        s.median, s.min, s.max
    );
}

fn call_soon_per_sec(lp: &LoopHandle, n: usize) -> f64 {
    let count = Rc::new(Cell::new(0usize));
    let started = Instant::now();
    for _ in 0..n {
        let c = count.clone();
        lp.call_soon(move || c.set(c.get() + 1)).expect("call_soon");
    }
    lp.run_once().expect("run_once");
    let took = started.elapsed();
    assert_eq!(count.get(), n);
    n as f64 / took.as_secs_f64()
}

fn spawn_join_ms(lp: &LoopHandle, n: usize) -> f64 {
    let started = Instant::now();
    let total = lp
        .run_until_complete(async move {
            let mut tasks = Vec::with_capacity(n);
            for i in 0..n {
                tasks.push(evloop::spawn(async move { i }));
            }
            let mut sum = 0usize;
            for t in tasks {
                sum += t.await.expect("task");
            }
            sum
        })
        .expect("run");
    let took = started.elapsed();
    assert_eq!(total, n * (n - 1) / 2);
    took.as_secs_f64() * 1e3
}

fn yield_wakes_per_sec(lp: &LoopHandle, n: usize) -> f64 {
    let started = Instant::now();
    lp.run_until_complete(async move {
        for _ in 0..n {
            evloop::yield_now().await;
        }
    })
    .expect("run");
    n as f64 / started.elapsed().as_secs_f64()
}

fn promise_chain_per_sec(lp: &LoopHandle, n: usize) -> f64 {
    let h = lp.clone();
    let started = Instant::now();
    lp.run_until_complete(async move {
        for i in 0..n {
            let p = h.create_future::<usize>();
            let setter = p.clone();
            h.call_soon(move || setter.set_result(i).expect("set"))
                .expect("call_soon");
            assert_eq!(p.await.expect("await"), i);
        }
    })
    .expect("run");
    n as f64 / started.elapsed().as_secs_f64()
}

fn rss_bytes() -> u64 {
    let statm = std::fs::read_to_string("/proc/self/statm").unwrap_or_default();
    let pages: u64 = statm
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    pages * 4096
}

/// RSS growth per idle task minus the size of the task's future. Runs in a fresh child process
/// (`bench_quick --memory N`) so memory freed by earlier cases cannot hide the growth.
fn bytes_per_idle_task_in_child(n: usize) -> Option<(f64, usize)> {
    let exe = std::env::current_exe().ok()?;
    let out = std::process::Command::new(exe)
        .arg("--memory")
        .arg(n.to_string())
        .output()
        .ok()?;
    let text = String::from_utf8_lossy(&out.stdout);
    let mut parts = text.split_whitespace();
    let per_task = parts.next()?.parse().ok()?;
    let future = parts.next()?.parse().ok()?;
    Some((per_task, future))
}

fn bytes_per_idle_task(n: usize) -> (f64, usize) {
    let lp = EventLoop::new().expect("loop");
    let make = || async { std::future::pending::<()>().await };
    let future_size = std::mem::size_of_val(&make());
    // Warm the allocator and the loop's tables (ready queue, task table) with a first batch,
    // then measure a second one. Handles are dropped (detached): the loop alone holds the tasks.
    for _ in 0..n {
        lp.create_task(make()).expect("spawn").detach();
    }
    lp.run_once().expect("run_once");
    let before = rss_bytes();
    for _ in 0..n {
        lp.create_task(make()).expect("spawn").detach();
    }
    lp.run_once().expect("run_once");
    let after = rss_bytes();
    let per_task = (after.saturating_sub(before)) as f64 / n as f64 - future_size as f64;
    drop(lp);
    (per_task, future_size)
}

fn timer_lateness(lp: &LoopHandle, n: usize, spread: Duration) -> (f64, f64, f64, usize) {
    let late = Rc::new(std::cell::RefCell::new(Vec::with_capacity(n)));
    let early = Rc::new(Cell::new(0usize));
    let mut seed = 0x2545_f491_4f6c_dd1du64;
    for _ in 0..n {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        let delay = Duration::from_nanos(seed % spread.as_nanos() as u64);
        let when = lp.time() + delay;
        let (late, early) = (late.clone(), early.clone());
        lp.call_at(when, move || {
            let now = Instant::now();
            match now.checked_duration_since(when) {
                Some(d) => late.borrow_mut().push(d.as_secs_f64() * 1e3),
                None => early.set(early.get() + 1),
            }
        })
        .expect("call_at");
    }
    lp.run_until_complete(evloop::sleep(spread + Duration::from_millis(20)))
        .expect("run");
    let mut v = late.borrow().clone();
    v.sort_by(|a, b| a.total_cmp(b));
    let pct = |p: f64| v[((v.len() - 1) as f64 * p) as usize];
    (pct(0.5), pct(0.99), v[v.len() - 1], early.get())
}

fn threadsafe_round_trip_us(lp: &LoopHandle, n: usize) -> f64 {
    let remote = lp.remote();
    let (tx, rx) = std::sync::mpsc::channel::<()>();
    let (back_tx, back_rx) = std::sync::mpsc::channel::<Instant>();
    let pinger = std::thread::spawn(move || {
        let mut rtts = Vec::with_capacity(n);
        for _ in 0..n {
            let sent = Instant::now();
            let tx = tx.clone();
            remote
                .call_soon_threadsafe(move || tx.send(()).expect("send"))
                .expect("threadsafe");
            rx.recv().expect("recv");
            rtts.push(sent.elapsed().as_secs_f64() * 1e6);
        }
        remote.stop().expect("stop");
        rtts.sort_by(|a, b| a.total_cmp(b));
        back_tx.send(Instant::now()).expect("send back");
        rtts[rtts.len() / 2]
    });
    lp.run_forever().expect("run");
    let _ = back_rx.recv();
    pinger.join().expect("pinger")
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.get(1).map(String::as_str) == Some("--memory") {
        let n = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(100_000);
        let (per_task, future) = bytes_per_idle_task(n);
        println!("{per_task} {future}");
        return;
    }
    let scale = 1;
    let lp = EventLoop::new().expect("loop");
    println!(
        "evloop bench-quick ({} runs per case after a warm-up; median, min, max)",
        RUNS
    );
    println!("{}", "-".repeat(100));
    report(
        "call_soon: callbacks per second (1M per run)",
        "/s",
        &measure(RUNS, || call_soon_per_sec(&lp, 1_000_000 * scale)),
    );
    report(
        "spawn + run + join 1M trivial tasks",
        "ms",
        &measure(RUNS, || spawn_join_ms(&lp, 1_000_000 * scale)),
    );
    report(
        "same-thread wake + step (yield_now, 1M)",
        "/s",
        &measure(RUNS, || yield_wakes_per_sec(&lp, 1_000_000 * scale)),
    );
    report(
        "promise chain: create/set/await (1M)",
        "/s",
        &measure(RUNS, || promise_chain_per_sec(&lp, 1_000_000 * scale)),
    );
    let s = measure(RUNS, || threadsafe_round_trip_us(&lp, 2_000));
    report("call_soon_threadsafe round trip p50 (2k)", "us", &s);
    let mem: Vec<(f64, usize)> = (0..3).filter_map(|_| bytes_per_idle_task_in_child(100_000)).collect();
    if let Some(&(_, fut)) = mem.first() {
        let s = stats(mem.iter().map(|m| m.0).collect());
        report(&format!("memory per idle task beyond its future ({fut} B)"), "B", &s);
    } else {
        println!("memory per idle task: n/a (could not run the child process)");
    }
    let (p50, p99, max, early) = timer_lateness(&lp, 1_000, Duration::from_millis(100));
    println!(
        "{:<48} {:>12.3} ms p50, {:.3} ms p99, {:.3} ms max, {early} early",
        "1,000 timers over 100 ms: lateness", p50, p99, max
    );
    drop(lp);
}
