//! Fiber stacks: guard pages, overflow reports, the `mprotect` fallback and its map budget,
//! recycling, and 100,000 suspended fibers in one process.
//!
//! The crash cases run in a child process (this test binary, re-run on one test with an
//! environment variable set), whose stderr and signal the parent checks: an overflow must be
//! reported as `fiber '<name>' has overflowed its stack` and abort (SIGABRT), like std's report
//! for threads, while faults that are not fiber overflows must still reach the handler that
//! was installed before (std's, or the default action).

use std::os::unix::process::ExitStatusExt;
use std::process::Output;

use evloop::fiber::{self, Builder, Fiber, GuardKind};
use evloop_syscalls::{self as sys, Syscall, counters};
use evloop_tests::child;

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// Recurses until the stack runs out (each frame keeps 1 KiB alive).
#[allow(unconditional_recursion)]
fn bottomless(n: u64) -> u64 {
    let buf = std::hint::black_box([n as u8; 1024]);
    bottomless(n + 1) + u64::from(buf[7])
}

const OVERFLOW: &str = "EVLOOP_TEST_FIBER_OVERFLOW";

#[test]
fn a_stack_overflow_in_a_fiber_is_reported_and_aborts() {
    if child::is_child(OVERFLOW) {
        let f = Builder::new()
            .name("deep")
            .stack_size(64 * 1024)
            .build(|_| bottomless(0));
        let _ = f.switch(());
        unreachable!("the overflow aborts the process");
    }
    let out = child::run(
        &evloop_tests::test_name!("a_stack_overflow_in_a_fiber_is_reported_and_aborts"),
        OVERFLOW,
    );
    let err = stderr(&out);
    assert!(
        err.contains("fiber 'deep' has overflowed its stack (64 KiB)\nfatal runtime error: stack overflow, aborting"),
        "{err}"
    );
    assert_eq!(out.status.signal(), Some(libc::SIGABRT), "{:?}: {err}", out.status);
}

const LOOP_OVERFLOW: &str = "EVLOOP_TEST_FIBER_LOOP_OVERFLOW";

#[test]
fn a_stack_overflow_in_a_loop_fiber_names_its_task() {
    if child::is_child(LOOP_OVERFLOW) {
        let _ = evloop::run(async {
            fiber::spawn(|| bottomless(0)).unwrap().await.ok();
        });
        unreachable!("the overflow aborts the process");
    }
    let out = child::run(
        &evloop_tests::test_name!("a_stack_overflow_in_a_loop_fiber_names_its_task"),
        LOOP_OVERFLOW,
    );
    let err = stderr(&out);
    assert!(
        err.contains("fiber 'Fiber-1' has overflowed its stack (256 KiB)"),
        "{err}"
    );
    assert_eq!(out.status.signal(), Some(libc::SIGABRT), "{:?}: {err}", out.status);
}

const THREAD_OVERFLOW: &str = "EVLOOP_TEST_THREAD_OVERFLOW";

#[test]
fn a_thread_stack_overflow_still_gets_std_s_report() {
    if child::is_child(THREAD_OVERFLOW) {
        // Install the fiber handler first (a fiber has run), then overflow a thread's stack.
        Fiber::new(|_| ()).switch(()).unwrap();
        std::thread::Builder::new()
            .name("plain".into())
            .stack_size(256 * 1024)
            .spawn(|| bottomless(0))
            .unwrap()
            .join()
            .ok();
        unreachable!("the overflow aborts the process");
    }
    let out = child::run(
        &evloop_tests::test_name!("a_thread_stack_overflow_still_gets_std_s_report"),
        THREAD_OVERFLOW,
    );
    let err = stderr(&out);
    // std's own message (recent versions add the thread id after the name).
    assert!(
        err.contains("thread 'plain'") && err.contains("has overflowed its stack"),
        "{err}"
    );
    assert!(!err.contains("fiber '"), "{err}");
    assert_eq!(out.status.signal(), Some(libc::SIGABRT), "{:?}: {err}", out.status);
}

const OTHER_FAULT: &str = "EVLOOP_TEST_OTHER_FAULT";

#[test]
fn a_fault_that_is_not_a_fiber_overflow_goes_to_the_previous_handler() {
    if child::is_child(OTHER_FAULT) {
        // The fiber handler is installed over std's. A wild write far from any stack: the
        // handler passes it on to std's, which resets the default action and returns, and the
        // write faults again, fatally, as it would without fibers.
        Fiber::new(|_| ()).switch(()).unwrap();
        let wild = std::hint::black_box(16usize) as *mut u8;
        // SAFETY: none: this write faults on purpose (page 0 is never mapped), in a child.
        unsafe { wild.write_volatile(1) };
        unreachable!("the fault ends the process");
    }
    let out = child::run(
        &evloop_tests::test_name!("a_fault_that_is_not_a_fiber_overflow_goes_to_the_previous_handler"),
        OTHER_FAULT,
    );
    assert_eq!(
        out.status.signal(),
        Some(libc::SIGSEGV),
        "{:?}: {}",
        out.status,
        stderr(&out)
    );
    assert!(!stderr(&out).contains("overflowed"), "{}", stderr(&out));
}

const FALLBACK: &str = "EVLOOP_TEST_GUARD_FALLBACK";

#[test]
fn without_madvise_guards_the_mprotect_fallback_keeps_to_its_map_budget() {
    if child::is_child(FALLBACK) {
        // The first guard install of the process is the probe: make the kernel "old".
        sys::fault::fail_nth(Syscall::Madvise, 1, sys::errno::EINVAL);
        let first = Fiber::new(|_| ());
        first.switch(()).unwrap();
        assert_eq!(fiber::stack_stats().guard_kind, GuardKind::Mprotect);
        let limit = sys::max_map_count().unwrap_or(65_530);
        // Suspend fibers until the budget refuses one: each stack costs two mappings.
        let mut alive = Vec::new();
        let err = loop {
            let f = Builder::new().stack_size(16 * 1024).build(|_| {
                let main = Fiber::main();
                main.switch(()).unwrap();
            });
            match f.switch(()) {
                Ok(_) => alive.push(f),
                Err(e) => break e,
            }
            assert!(alive.len() < limit, "no budget was enforced");
        };
        let msg = err.to_string();
        println!("the refusal: {msg}");
        for needle in ["MADV_GUARD_INSTALL", "vm.max_map_count", "Raise vm.max_map_count"] {
            assert!(msg.contains(needle), "{needle}: {msg}");
        }
        assert!(alive.len() * 2 < limit, "{} stacks", alive.len());
        assert!(
            alive.len() * 2 > limit / 2,
            "most of the budget was usable: {} stacks",
            alive.len()
        );
        // The reserve left room for the rest of the process: a thread still starts.
        std::thread::spawn(|| 1).join().unwrap();
        // An overflow in the fallback is still reported (checked by the parent); the stack is
        // one of those just freed (a new chunk would be over the budget).
        drop(alive);
        let f = Builder::new()
            .name("fallback-deep")
            .stack_size(16 * 1024)
            .build(|_| bottomless(0));
        let _ = f.switch(());
        unreachable!("the overflow aborts the process");
    }
    let out = child::run(
        &evloop_tests::test_name!("without_madvise_guards_the_mprotect_fallback_keeps_to_its_map_budget"),
        FALLBACK,
    );
    let err = stderr(&out);
    assert!(err.contains("fiber 'fallback-deep' has overflowed its stack"), "{err}");
    assert_eq!(out.status.signal(), Some(libc::SIGABRT), "{:?}: {err}", out.status);
}

#[test]
fn finished_fibers_give_their_stacks_back_and_warm_reuse_costs_no_syscall() {
    std::thread::spawn(|| {
        let run_one = || {
            let f = Builder::new().stack_size(32 * 1024).build(|_| 1u64);
            f.switch(()).unwrap();
        };
        run_one();
        let before = fiber::stack_stats();
        assert_eq!(before.in_use, 0);
        assert!(before.free >= 1 && before.chunks == 1, "{before:?}");
        counters::reset();
        for _ in 0..100 {
            run_one();
        }
        let c = counters::snapshot();
        assert!(c.is_empty(), "a warm stack is reused without any system call: {c}");
        assert_eq!(fiber::stack_stats(), before);
    })
    .join()
    .unwrap();
}

#[test]
fn stacks_freed_beyond_the_warm_ones_give_their_memory_back() {
    std::thread::spawn(|| {
        let size = 32 * 1024;
        let fibers: Vec<Fiber> = (0..100)
            .map(|_| {
                let f = Builder::new().stack_size(size).build(|_| {
                    let main = Fiber::main();
                    main.switch(()).unwrap();
                });
                f.switch(()).unwrap();
                f
            })
            .collect();
        let s = fiber::stack_stats();
        assert_eq!(s.in_use, 100);
        assert_eq!(s.chunks, 1 + 100 / 64, "{s:?}");
        counters::reset();
        drop(fibers);
        let c = counters::snapshot();
        let s = fiber::stack_stats();
        assert_eq!(s.in_use, 0);
        assert_eq!(s.warm, 64, "{s:?}");
        // Each stack beyond the 64 warm ones: one madvise(MADV_DONTNEED).
        assert_eq!(c[Syscall::Madvise], 100 - 64, "{c}");
        assert_eq!(
            c[Syscall::Munmap],
            0,
            "address ranges are kept while the thread lives: {c}"
        );
    })
    .join()
    .unwrap();
}

/// Resident memory of this process, from `/proc/self/statm`, in bytes.
fn rss_bytes() -> usize {
    let statm = std::fs::read_to_string("/proc/self/statm").unwrap();
    let pages: usize = statm.split_whitespace().nth(1).unwrap().parse().unwrap();
    pages * sys::page_size()
}

const MANY: &str = "EVLOOP_TEST_MANY_FIBERS";

#[test]
fn a_hundred_thousand_fibers_can_be_suspended_at_once() {
    // A child of its own: the test measures the process's resident memory and mapping count.
    if child::is_child(MANY) {
        const N: usize = 100_000;
        let maps_before = std::fs::read_to_string("/proc/self/maps").unwrap().lines().count();
        let rss_before = rss_bytes();
        let mut fibers = Vec::with_capacity(N);
        for i in 0..N {
            let f = Fiber::new(move |_| {
                let main = Fiber::main();
                main.switch(i as u64).unwrap();
            });
            assert_eq!(f.switch(()).unwrap().downcast::<u64>().ok(), Some(i as u64));
            fibers.push(f);
        }
        let per_fiber = (rss_bytes() - rss_before) / N;
        let maps = std::fs::read_to_string("/proc/self/maps").unwrap().lines().count() - maps_before;
        println!("{N} suspended fibers: {per_fiber} resident bytes each, {maps} more mappings");
        assert_eq!(fiber::stack_stats().in_use, N);
        // One or two touched stack pages and the fiber's bookkeeping; a debug build's frames are
        // bigger than a release build's (the benchmark measures the release figure).
        assert!(per_fiber <= 16 * 1024, "{per_fiber} bytes per suspended fiber");
        if fiber::stack_stats().guard_kind == GuardKind::Madvise {
            assert!(maps <= N / 64 + 16, "{maps} mappings for {N} stacks");
        }
        // Every one of them is unwound when dropped.
        drop(fibers);
        assert_eq!(fiber::stack_stats().in_use, 0);
        return;
    }
    let out = child::run(
        &evloop_tests::test_name!("a_hundred_thousand_fibers_can_be_suspended_at_once"),
        MANY,
    );
    child::assert_success("100,000 suspended fibers", &out);
}
