//! Cancelling a handle drops its callback, and everything the callback captured, at once, as
//! asyncio's `Handle.cancel` does: not when the handle is dropped and the loop reaches the
//! cancelled entry. (The loop may keep the small cell a while longer; the closure is gone.)

use std::cell::Cell;
use std::os::fd::AsRawFd;
use std::rc::Rc;
use std::time::Duration;

use evloop::event_loop::EventLoop;
use evloop_syscalls as sys;
use evloop_tests::{DropFlag, flag};

#[test]
fn cancelling_a_call_soon_handle_drops_its_closure_at_once() {
    let lp = EventLoop::new().unwrap();
    let dropped = flag();
    let guard = DropFlag(dropped.clone());
    let h = lp
        .call_soon(move || {
            let _keep = &guard;
        })
        .unwrap();
    assert!(!dropped.get());
    h.cancel();
    assert!(
        dropped.get(),
        "the closure was dropped by cancel(), the handle still alive"
    );
    assert_eq!(lp.stats().ready, 1, "the cell may stay in the ready queue");
    h.cancel();
    lp.run_once().unwrap();
    drop(h);
}

#[test]
fn cancelling_a_timer_handle_drops_its_closure_at_once_and_the_heap_entry_next_iteration() {
    let lp = EventLoop::new().unwrap();
    for at in [false, true] {
        let dropped = flag();
        let guard = DropFlag(dropped.clone());
        let f = move || {
            let _keep = &guard;
        };
        let h = if at {
            lp.call_at(lp.time() + Duration::from_secs(3600), f).unwrap()
        } else {
            lp.call_later(Duration::from_secs(3600), f).unwrap()
        };
        h.cancel();
        assert!(
            dropped.get(),
            "call_{}: dropped by cancel()",
            if at { "at" } else { "later" }
        );
        lp.call_soon(|| {}).unwrap();
        lp.run_once().unwrap();
        assert_eq!(lp.stats().timers, 0, "phase 1 recycled the entry");
    }
}

#[test]
fn removing_a_reader_whose_run_is_already_queued_drops_its_closure_at_once() {
    let lp = EventLoop::new().unwrap();
    let a = sys::eventfd(0).unwrap();
    let b = sys::eventfd(0).unwrap();
    sys::eventfd_write(std::os::fd::AsFd::as_fd(&a), 1).unwrap();
    sys::eventfd_write(std::os::fd::AsFd::as_fd(&b), 1).unwrap();
    let (fa, fb) = (a.as_raw_fd(), b.as_raw_fd());
    // Both fds are readable in the same iteration: whichever callback runs first removes the
    // other, whose run is already queued, and looks at the other's flag right away.
    let ran = Rc::new(Cell::new(0));
    let other_dropped_at_removal = Rc::new(Cell::new(None));
    let flags = [flag(), flag()];
    for (me, other, mine, theirs) in [(fa, fb, 0, 1), (fb, fa, 1, 0)] {
        let (ran, seen, h) = (ran.clone(), other_dropped_at_removal.clone(), lp.handle());
        let their_flag = flags[theirs].clone();
        let guard = DropFlag(flags[mine].clone());
        lp.add_reader(me, move || {
            let _keep = &guard;
            ran.set(ran.get() + 1);
            if h.remove_reader(other) {
                seen.set(Some(their_flag.get()));
            }
            h.remove_reader(me);
        })
        .unwrap();
    }
    lp.run_once().unwrap();
    assert_eq!(ran.get(), 1, "the removed reader did not run");
    assert_eq!(
        other_dropped_at_removal.get(),
        Some(true),
        "remove_reader dropped it at once"
    );
    assert!(flags[0].get() && flags[1].get(), "both closures are gone");
}

#[test]
fn a_reader_that_removes_itself_is_dropped_after_its_run_returns() {
    let lp = EventLoop::new().unwrap();
    let fd = sys::eventfd(0).unwrap();
    sys::eventfd_write(std::os::fd::AsFd::as_fd(&fd), 1).unwrap();
    let raw = fd.as_raw_fd();
    let dropped = flag();
    let guard = DropFlag(dropped.clone());
    let during = Rc::new(Cell::new(None));
    let (d, seen, h) = (dropped.clone(), during.clone(), lp.handle());
    lp.add_reader(raw, move || {
        let _keep = &guard;
        assert!(h.remove_reader(raw));
        // Still running: the closure (and `guard`) must still be here.
        seen.set(Some(d.get()));
    })
    .unwrap();
    lp.run_once().unwrap();
    assert_eq!(during.get(), Some(false), "not dropped while it ran");
    assert!(dropped.get(), "dropped right after its run");
}
