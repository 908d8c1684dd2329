//! The programs behind chapter 7 of the book (docs/07-the-timer-heap.md):
//!
//! - `heap`: evloop's timer queue (`evloop_timers::TimerQueue`, a 4-ary indexed min-heap) with
//!   its array printed after every insert, cancel and pop, then the same timers built at once
//!   with a bottom-up heapify.
//! - `loop`: `call_at` / `call_later` on a running loop, in trace mode: equal deadlines run in
//!   the order they were scheduled, and a cancelled timer leaves the heap in phase 1.

use std::error::Error;
use std::time::Duration;

use evloop_timers::{TimerId, TimerQueue};

/// The heap's array, one tree level per group: the root, its 4 children, their 16, ...
fn show(q: &TimerQueue<char>) -> String {
    let entries: Vec<String> = q
        .heap_layout()
        .map(|(deadline, _seq, id)| format!("{deadline}{}", q.get(id).copied().unwrap_or('?')))
        .collect();
    let mut out = String::from("[");
    let (mut start, mut width) = (0, 1);
    while start < entries.len() {
        let end = (start + width).min(entries.len());
        if start > 0 {
            out.push_str(" | ");
        }
        out.push_str(&entries[start..end].join(" "));
        start = end;
        width *= 4;
    }
    out.push(']');
    out
}

fn heap() {
    let mut q = TimerQueue::new();
    let mut ids: Vec<(char, TimerId)> = Vec::new();
    println!("insert: a new timer goes to the end of the array and sifts up");
    for (deadline, name) in [
        (90, 'i'),
        (80, 'h'),
        (70, 'g'),
        (60, 'f'),
        (50, 'e'),
        (40, 'd'),
        (30, 'c'),
        (20, 'b'),
        (10, 'a'),
    ] {
        ids.push((name, q.insert(deadline, name)));
        println!("  insert {deadline}{name:<2} {}", show(&q));
    }
    println!("equal deadlines: the sequence number breaks the tie, first in first out");
    ids.push(('x', q.insert(40, 'x')));
    println!("  insert 40x  {}", show(&q));
    println!("cancel: the last entry fills the hole, then sifts up or down");
    for name in ['g', 'b'] {
        let (_, id) = ids.iter().copied().find(|(n, _)| *n == name).expect("scheduled above");
        let deadline = q.deadline(id).expect("pending");
        q.cancel(id);
        println!("  cancel {deadline}{name:<2} {}", show(&q));
    }
    println!("pop: the root leaves, the last entry takes its place and sifts down");
    while let Some(e) = q.pop() {
        println!("  pop {}{:<5} {}", e.deadline, e.payload, show(&q));
    }
    println!("heapify: the same nine timers in the same order, built at once");
    let timers = [
        (90, 'i'),
        (80, 'h'),
        (70, 'g'),
        (60, 'f'),
        (50, 'e'),
        (40, 'd'),
        (30, 'c'),
        (20, 'b'),
        (10, 'a'),
    ];
    let built: TimerQueue<char> = timers.into_iter().collect();
    println!("  before      [90i | 80h 70g 60f 50e | 40d 30c 20b 10a]");
    println!("  after       {}", show(&built));
}

async fn on_a_loop() -> Result<(), Box<dyn Error>> {
    let lp = evloop::event_loop::get_running_loop()?;
    let when = lp.time() + Duration::from_millis(20);
    lp.call_at(when, || println!("first at +20 ms"))?;
    lp.call_at(when, || println!("second at +20 ms"))?;
    lp.call_later(Duration::from_millis(10), || println!("at +10 ms"))?;
    let doomed = lp.call_later(Duration::from_millis(15), || println!("never runs"))?;
    lp.call_at(when, || println!("third at +20 ms"))?;
    doomed.cancel();
    evloop::time::sleep(Duration::from_millis(30)).await;
    Ok(())
}

fn main() -> Result<(), Box<dyn Error>> {
    match std::env::args().nth(1).unwrap_or_default().as_str() {
        "heap" => {
            heap();
            Ok(())
        }
        "loop" => evloop::run(on_a_loop())?,
        _ => Err("usage: book_timer_heap heap | loop".into()),
    }
}
