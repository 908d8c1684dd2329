//! Benchmark peer: evloop's fibers, for the fibers section of `make bench`
//! (tests/examples/bench/fibers.rs drives it; tests/bench/peer_greenlet.py is its Python peer).
//!
//! ```text
//! cargo build --release -p evloop-tests --no-default-features --features bench-internals --examples
//! target/release/examples/peer_fiber switch --n 10000000       # ping-pong of two fibers
//! target/release/examples/peer_fiber raw_switch --n 10000000   # the register switch alone
//! target/release/examples/peer_fiber task_wake --n 1000000 --pairs 1   # the same hand-off between tasks
//! target/release/examples/peer_fiber suspended --n 100000      # memory per suspended fiber
//! target/release/examples/peer_fiber echo --variant fiber --port 0     # fiber | task
//! ```
//!
//! Every subcommand prints one JSON line (the echo server prints `listening on ADDR` and runs
//! until its stdin closes, like the other peers):
//! - `switch`: two fibers, A and B, switch to each other N times each, carrying a `u64`;
//!   `ns_per_switch` is the wall time over the 2N switches (what `greenlet.switch` costs in
//!   peer_greenlet.py);
//! - `raw_switch`: the same ping-pong with the register switch alone (`Context` and its checks,
//!   without values, the running fiber or parents), through the runtime's hidden
//!   `fiber::bench::raw_switch`: it needs the `bench-internals` feature, and says `n/a` without;
//! - `task_wake`: pairs of tasks hand a turn to each other N times in all, each hand-off a
//!   wake of the other task and a poll of it (`ns_per_handoff`, repeated as `ns_per_switch` so
//!   the harness reads both cases alike); with one pair, every hand-off
//!   is also a loop iteration (a task woken while the loop runs its ready queue runs in the next
//!   iteration, after a non-blocking `epoll_pwait2`), with 64 pairs an iteration serves 64;
//! - `suspended`: N fibers started and suspended in a switch back to main; the growth of the
//!   resident set per fiber (`bytes_per_fiber`), the time to create them, and the memory mappings
//!   they added (`/proc/self/maps` lines);
//! - `echo`: a TCP echo server, one fiber per connection in blocking style (`fiber::accept`,
//!   `fiber::read`, `fiber::write_all`), or the same server with one task per connection
//!   (`.await`), both reading into a 64 KiB buffer of their own per connection.

#[path = "peer_common/mod.rs"]
#[allow(dead_code)] // this peer implements its own subcommands and uses only the echo helpers
mod common;

use std::cell::{Cell, RefCell};
use std::error::Error;
use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::process::ExitCode;
use std::rc::Rc;
use std::task::{Context, Poll, Waker};
use std::time::Instant;

use evloop::fiber::{self, Fiber};
use evloop::net::{TcpListener, TcpStream};
use evloop::{
    event_loop::EventLoop,
    io::{AsyncReadExt, AsyncWriteExt},
};

use common::{announce, exit_at_stdin_eof, status_kib};

const READ_SIZE: usize = 64 * 1024;

const USAGE: &str = "usage: peer_fiber SUBCOMMAND [OPTIONS]
  switch [--n N]                   ping-pong of two fibers, N switches each way (10000000)
  raw_switch [--n N]               the same with the register switch alone (10000000; bench-internals)
  task_wake [--n N] [--pairs P]    N task hand-offs (wake + poll) among P pairs of tasks (1000000, 1)
  suspended [--n N]                N suspended fibers: resident bytes each (100000)
  echo [--variant V] [--port P]    TCP echo server, V = fiber | task (fiber), on 127.0.0.1:P";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let flag = |name: &str| {
        args.iter()
            .position(|a| a == name)
            .and_then(|i| args.get(i + 1))
            .map(String::as_str)
    };
    let number = |name: &str, default: usize| -> Result<usize, String> {
        match flag(name) {
            None => Ok(default),
            Some(v) => v.parse().map_err(|e| format!("{name} {v:?}: {e}")),
        }
    };
    let run = || -> Result<(), Box<dyn Error>> {
        match args.first().map(String::as_str) {
            Some("switch") => switch(number("--n", 10_000_000)?),
            Some("raw_switch") => raw_switch(number("--n", 10_000_000)?),
            Some("task_wake") => task_wake(number("--n", 1_000_000)?, number("--pairs", 1)?.max(1)),
            Some("suspended") => suspended(number("--n", 100_000)?),
            Some("echo") => echo(flag("--variant").unwrap_or("fiber"), number("--port", 0)? as u16),
            Some("-h" | "--help") => {
                println!("{USAGE}");
                Ok(())
            }
            other => Err(format!("unknown subcommand {other:?}\n{USAGE}").into()),
        }
    };
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("peer_fiber: {e}");
            ExitCode::FAILURE
        }
    }
}

// ---------------------------------------------------------------------------------------------
// switch

#[cfg(feature = "bench-internals")]
fn raw_switch(n: usize) -> Result<(), Box<dyn Error>> {
    let took = evloop::fiber::bench::raw_switch(n);
    println!(
        "{{\"ns_per_switch\":{:.3},\"switches\":{}}}",
        took.as_secs_f64() * 1e9 / (2.0 * n.max(1) as f64),
        2 * n
    );
    Ok(())
}

#[cfg(not(feature = "bench-internals"))]
fn raw_switch(_n: usize) -> Result<(), Box<dyn Error>> {
    println!("n/a: built without the bench-internals feature (make bench-build turns it on)");
    Ok(())
}

fn switch(n: usize) -> Result<(), Box<dyn Error>> {
    // A and B find each other through a shared slot; B is started by A's first switch.
    let b_slot: Rc<RefCell<Option<Fiber>>> = Rc::default();
    let slot = b_slot.clone();
    let a = Fiber::new(move |_| -> Result<u64, String> {
        let b = slot.borrow().clone().ok_or("no B")?;
        let mut sum = 0u64;
        for i in 0..n as u64 {
            let back = b.switch(i).map_err(|e| e.to_string())?;
            sum = sum.wrapping_add(back.downcast::<u64>().map_err(|_| "not a u64")?);
        }
        Ok(sum)
    });
    let a2 = a.clone();
    let b = Fiber::new(move |first: evloop::fiber::Value| -> Result<(), String> {
        let mut v = first.downcast::<u64>().map_err(|_| "not a u64")?;
        loop {
            v = a2
                .switch(v + 1)
                .map_err(|e| e.to_string())?
                .downcast::<u64>()
                .map_err(|_| "not a u64")?;
        }
    });
    *b_slot.borrow_mut() = Some(b.clone());
    let started = Instant::now();
    let sum = a
        .switch(())
        .map_err(|e| e.to_string())?
        .downcast::<Result<u64, String>>()
        .map_err(|_| "A returned something else")??;
    let secs = started.elapsed().as_secs_f64();
    let expect = (n as u64) * (n as u64 + 1) / 2;
    if sum != expect {
        return Err(format!("switch: sum {sum}, expected {expect}").into());
    }
    drop(b_slot.borrow_mut().take());
    drop(b);
    println!(
        "{{\"ns_per_switch\":{:.3},\"switches\":{}}}",
        secs * 1e9 / (2.0 * n as f64),
        2 * n
    );
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// task_wake

/// One pair: whose turn it is, the hand-offs so far, and both tasks' wakers.
struct Pair {
    turn: Cell<usize>,
    count: Cell<usize>,
    limit: usize,
    wakers: [RefCell<Option<Waker>>; 2],
}

/// One side of a pair: on its turn, counts a hand-off, gives the turn away and wakes the other.
struct Side {
    pair: Rc<Pair>,
    me: usize,
}

impl Future for Side {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let p = &self.pair;
        if p.count.get() >= p.limit {
            // Let the other side see the end too.
            if let Some(w) = p.wakers[1 - self.me].borrow_mut().take() {
                w.wake();
            }
            return Poll::Ready(());
        }
        if p.turn.get() == self.me {
            p.count.set(p.count.get() + 1);
            p.turn.set(1 - self.me);
            if let Some(w) = p.wakers[1 - self.me].borrow_mut().take() {
                w.wake();
            }
        }
        *p.wakers[self.me].borrow_mut() = Some(cx.waker().clone());
        Poll::Pending
    }
}

fn task_wake(n: usize, pairs: usize) -> Result<(), Box<dyn Error>> {
    let lp = EventLoop::new()?;
    let per_pair = n.div_ceil(pairs);
    let started = Instant::now();
    let total = lp.run_until_complete(async move {
        let mut tasks = Vec::new();
        let mut all = Vec::new();
        for _ in 0..pairs {
            let pair = Rc::new(Pair {
                turn: Cell::new(0),
                count: Cell::new(0),
                limit: per_pair,
                wakers: Default::default(),
            });
            all.push(pair.clone());
            for me in 0..2 {
                tasks.push(evloop::spawn(Side { pair: pair.clone(), me }));
            }
        }
        for t in tasks {
            let _ = t.await;
        }
        all.iter().map(|p| p.count.get()).sum::<usize>()
    })?;
    let secs = started.elapsed().as_secs_f64();
    println!(
        "{{\"ns_per_handoff\":{ns:.3},\"ns_per_switch\":{ns:.3},\"handoffs\":{total},\"pairs\":{pairs}}}",
        ns = secs * 1e9 / total as f64
    );
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// suspended

fn maps_count() -> usize {
    std::fs::read_to_string("/proc/self/maps").map_or(0, |m| m.lines().count())
}

fn suspended(n: usize) -> Result<(), Box<dyn Error>> {
    let mut fibers = Vec::with_capacity(n);
    let maps_before = maps_count();
    let rss_before = status_kib("VmRSS");
    let started = Instant::now();
    for _ in 0..n {
        let f = Fiber::new(|_| {
            let main = Fiber::main();
            let _ = main.switch(());
        });
        f.switch(()).map_err(|e| e.to_string())?;
        fibers.push(f);
    }
    let create_ms = started.elapsed().as_secs_f64() * 1e3;
    let rss_after = status_kib("VmRSS");
    let maps = maps_count().saturating_sub(maps_before);
    let stats = fiber::stack_stats();
    if stats.in_use != n {
        return Err(format!("suspended: {} stacks in use, expected {n}", stats.in_use).into());
    }
    println!(
        "{{\"bytes_per_fiber\":{:.1},\"create_ms\":{create_ms:.2},\"maps\":{maps},\"rss_mib\":{:.1},\"n\":{n}}}",
        rss_after.saturating_sub(rss_before) as f64 * 1024.0 / n as f64,
        rss_after as f64 / 1024.0
    );
    // Unwinding N fibers takes time and proves nothing here.
    std::process::exit(0)
}

// ---------------------------------------------------------------------------------------------
// echo

/// One connection in blocking style: the fiber sleeps in `read` until bytes come.
fn echo_fiber(mut conn: TcpStream) {
    let mut buf = vec![0u8; READ_SIZE];
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

/// The same connection as a task.
async fn echo_task(mut conn: TcpStream) {
    let mut buf = vec![0u8; READ_SIZE];
    loop {
        match conn.read(&mut buf).await {
            Ok(0) | Err(_) => return,
            Ok(n) => {
                if conn.write_all(&buf[..n]).await.is_err() {
                    return;
                }
            }
        }
    }
}

fn echo(variant: &str, port: u16) -> Result<(), Box<dyn Error>> {
    exit_at_stdin_eof();
    let fibers = match variant {
        "fiber" | "default" => true,
        "task" => false,
        other => return Err(format!("echo: unknown --variant {other:?} (fiber, task)").into()),
    };
    evloop::run(async move {
        let addr: SocketAddr = ([127, 0, 0, 1], port).into();
        let listener = TcpListener::bind(addr).await?;
        announce(listener.local_addr()?)?;
        if fibers {
            let server = fiber::spawn(move || {
                loop {
                    match fiber::accept(&listener) {
                        Ok((conn, _peer)) => {
                            if let Err(e) = fiber::spawn(move || echo_fiber(conn)) {
                                eprintln!("spawn: {e}");
                            }
                        }
                        Err(e) => {
                            eprintln!("accept: {e}; retrying in 100 ms");
                            let _ = fiber::sleep(std::time::Duration::from_millis(100));
                        }
                    }
                }
            })?;
            server.await?;
        } else {
            loop {
                match listener.accept().await {
                    Ok((conn, _peer)) => evloop::spawn(echo_task(conn)).detach(),
                    Err(e) => {
                        eprintln!("accept: {e}; retrying in 100 ms");
                        evloop::time::sleep(std::time::Duration::from_millis(100)).await;
                    }
                }
            }
        }
        Ok::<(), Box<dyn Error>>(())
    })?
}
