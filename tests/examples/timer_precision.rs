//! Measures what stretches a poll timeout: the thread's timer slack (prctl PR_SET_TIMERSLACK) versus a
//! timerfd armed at the deadline. `cargo run --release -p evloop-tests --example timer_precision`.
//! The numbers behind the loop's default timer slack of 1 ns (see docs/timer-precision.md).

use evloop_syscalls as sys;

use std::os::fd::{AsFd, AsRawFd};
use std::time::{Duration, Instant};
/// p50, p99 and max of lateness samples in nanoseconds.
fn pct(mut v: Vec<i64>) -> String {
    v.sort();
    let n = v.len();
    format!(
        "p50 {:.1}us p99 {:.1}us max {:.1}us",
        v[n / 2] as f64 / 1e3,
        v[n * 99 / 100] as f64 / 1e3,
        v[n - 1] as f64 / 1e3
    )
}
fn main() {
    let original_slack = sys::timer_slack().unwrap_or(50_000);
    let ep = sys::epoll_create1().unwrap();
    let tfd = sys::timerfd_create().unwrap();
    sys::epoll_ctl_add(ep.as_fd(), tfd.as_raw_fd(), sys::EpollFlags::IN, 1).unwrap();
    let mut ev = vec![sys::EpollEvent::zeroed(); 8];
    let n = 500;
    for (name, slack) in [("pwait2, default 50us slack", 50_000u64), ("pwait2, slack 1ns", 1)] {
        sys::set_timer_slack(slack).unwrap();
        let mut lat = vec![];
        for i in 0..n {
            let d = Duration::from_micros(100 + (i * 37) % 900);
            let t = Instant::now();
            sys::epoll_wait_timeout(ep.as_fd(), &mut ev, Some(d)).unwrap();
            lat.push(t.elapsed().as_nanos() as i64 - d.as_nanos() as i64);
        }
        println!("{name:<32} {}", pct(lat));
    }
    for (name, slack) in [("timerfd, default 50us slack", 50_000u64), ("timerfd, slack 1ns", 1)] {
        sys::set_timer_slack(slack).unwrap();
        let mut lat = vec![];
        for i in 0..n {
            let d = Duration::from_micros(100 + (i * 37) % 900);
            let t = Instant::now();
            let deadline = sys::clock_monotonic() + d;
            sys::timerfd_set_abs(tfd.as_fd(), Some(deadline)).unwrap();
            sys::epoll_wait_timeout(ep.as_fd(), &mut ev, None).unwrap();
            let _ = sys::timerfd_read(tfd.as_fd());
            lat.push(t.elapsed().as_nanos() as i64 - d.as_nanos() as i64);
        }
        println!("{name:<32} {}  (+1 timerfd_settime + 1 read per wait)", pct(lat));
    }
    let _ = sys::set_timer_slack(original_slack);
}
