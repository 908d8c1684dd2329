//! The program chapter 13 of the book quotes (`docs/13-simulation.md`): a small user program
//! with an ordering bug, run on the simulated kernel under one seed after another until a seed
//! makes it fail, then that seed replayed and its schedule shrunk, each step printed.
//!
//! It does by hand, with the public `evloop::sys::sim` API, what `#[evloop::test(simulate)]`
//! does for a test (`syscalls/src/sim/harness.rs`), so that the chapter can show each step.
//! Built as the `book_simulation` binary of this crate (tests/tests/book_traces.rs reruns it):
//!
//! `book_simulation search` | `book_simulation replay SEED` | `book_simulation shrink SEED`
//! | `book_simulation trace SEED` (the shrunk run's full trace) | `book_simulation attribute`
//! (the same program as a `simulate` test: the report a test writer sees)

use std::cell::RefCell;
use std::panic::{self, AssertUnwindSafe};
use std::rc::Rc;

use evloop::io::{AsyncReadExt, AsyncWriteExt};
use evloop::net::{TcpListener, TcpStream};
use evloop::sys::sim::{__run_test, Config, Kernel, Tape, TestOptions, shrink};

/// The user program: a server that notes which client it hears first, and two clients that
/// connect `a` then `b` and write `b` then `a`. Its author expects "ab" (the first to connect is
/// the first heard); nothing in TCP promises that.
async fn first_come_first_heard() -> Vec<u8> {
    let listener = TcpListener::bind("127.0.0.1:8000").await.unwrap();
    let heard = Rc::new(RefCell::new(Vec::new()));
    let h = heard.clone();
    let server = evloop::spawn(async move {
        let mut readers = Vec::new();
        for _ in 0..2 {
            let (mut s, _) = listener.accept().await.unwrap();
            let h = h.clone();
            readers.push(evloop::spawn(async move {
                let mut b = [0u8; 1];
                s.read_exact(&mut b).await.unwrap();
                h.borrow_mut().push(b[0]);
            }));
        }
        for r in readers {
            r.await.unwrap();
        }
    });
    let mut a = TcpStream::connect("127.0.0.1:8000").await.unwrap();
    let mut b = TcpStream::connect("127.0.0.1:8000").await.unwrap();
    b.write_all(b"b").await.unwrap();
    a.write_all(b"a").await.unwrap();
    server.await.unwrap();
    heard.take()
}

/// One run on a fresh kernel: what the server heard, and the kernel (trace, tape, digest).
fn run(seed: u64, cfg: Config) -> (String, Kernel) {
    let kernel = Kernel::with_config(seed, cfg);
    let heard = {
        let _on = kernel.enter();
        panic::catch_unwind(AssertUnwindSafe(|| evloop::run(first_come_first_heard()).unwrap()))
    };
    let heard = match heard {
        Ok(h) => String::from_utf8_lossy(&h).into_owned(),
        Err(_) => "(panicked)".to_string(),
    };
    (heard, kernel)
}

fn fails(heard: &str) -> bool {
    heard != "ab"
}

/// The seed's run shrunk: the simplest tape found that still fails.
fn shrunk(seed: u64) -> (Tape, Tape, usize) {
    let (_, kernel) = run(seed, Config::default());
    let tape = kernel.tape();
    let mut tries = 0;
    let small = shrink(&tape, 200, |candidate| {
        tries += 1;
        let (heard, k) = run(seed, Config::default().replay(candidate.clone()));
        fails(&heard).then(|| k.tape())
    });
    (tape, small, tries)
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let seed = || args.get(1).and_then(|s| s.parse::<u64>().ok()).expect("a seed");
    match args.first().map(String::as_str) {
        Some("search") => {
            for seed in 0..200 {
                let (heard, kernel) = run(seed, Config::default());
                println!(
                    "seed {seed:>3}: heard {heard:?}, {} decisions, {} simulated calls",
                    kernel.tape().len(),
                    kernel.stats().calls
                );
                if fails(&heard) {
                    println!("seed {seed} fails: replay it with EVLOOP_SEED={seed}");
                    return;
                }
            }
            println!("no seed of 200 fails");
        }
        Some("replay") => {
            let seed = seed();
            for n in 1..=2 {
                let (heard, kernel) = run(seed, Config::default());
                println!(
                    "run {n} of seed {seed}: heard {heard:?}, {} trace records, digest {:016x}",
                    kernel.records(),
                    kernel.digest()
                );
            }
        }
        Some("shrink") => {
            let seed = seed();
            let (tape, small, tries) = shrunk(seed);
            println!(
                "seed {seed}, its tape: {} decisions, {} not the simplest",
                tape.len(),
                tape.nonzero()
            );
            println!("  {tape}");
            println!(
                "shrunk in {tries} replays: {} decisions, {} not the simplest",
                small.len(),
                small.nonzero()
            );
            if small.is_empty() {
                println!("  (empty: every decision is the simplest one)");
            } else {
                println!("  {small}");
            }
            let (heard, _) = run(seed, Config::default().replay(small.clone()));
            println!("the shrunk tape replayed: heard {heard:?}");
            let (heard, _) = run(seed, Config::default().replay(Tape::new()));
            println!("the empty tape (every decision 0) replayed: heard {heard:?}");
        }
        Some("attribute") => {
            // What `#[evloop::test(simulate(seeds = 200))]` expands to, with the assertion the
            // test would make.
            let opts = TestOptions {
                name: "first_come_first_heard",
                seeds: 200,
                faults: false,
            };
            // The panic as one line (the default hook adds a thread id and, with
            // RUST_BACKTRACE, a backtrace, which differ between runs).
            panic::set_hook(Box::new(|info| {
                let msg = info.payload().downcast_ref::<String>().cloned().unwrap_or_default();
                eprintln!("panicked: {}", msg.lines().next().unwrap_or(""));
            }));
            let failed = panic::catch_unwind(|| {
                __run_test(opts, || {
                    let heard = String::from_utf8(evloop::run(first_come_first_heard()).unwrap()).unwrap();
                    assert!(heard == "ab", "the messages arrived in the order {heard:?}");
                })
            });
            println!("the test {}", if failed.is_err() { "failed" } else { "passed" });
        }
        Some("trace") => {
            let seed = seed();
            let (_, small, _) = shrunk(seed);
            let (heard, kernel) = run(seed, Config::default().replay(small));
            print!("{}", kernel.trace());
            println!("heard {heard:?}");
        }
        _ => eprintln!("usage: book_simulation search | replay SEED | shrink SEED | trace SEED | attribute"),
    }
}
