//! Fibers that refer back to their parent or to a sibling while suspended (issue 19 item 1):
//! written with `Fiber::switch_to_parent` and `WeakFiber`, a four-fiber chain and two siblings
//! are unwound completely when main drops its handles (every destructor runs, every stack goes
//! back to the pool); `throw` into a fiber whose parent has not started starts the parent with
//! `()` as greenlet does. Stacks are counted with `stack_stats` (per thread: each test runs on a
//! thread of its own).

use std::cell::{Cell, RefCell};
use std::rc::Rc;

use evloop::fiber::{Fiber, FiberExit, WeakFiber, stack_stats};

/// Counts its drops: one per fiber frame that was unwound.
struct Guard(Rc<Cell<u32>>);

impl Drop for Guard {
    fn drop(&mut self) {
        self.0.set(self.0.get() + 1);
    }
}

/// A fiber that starts a chain of `depth - 1` more below it, runs it until it comes back, then
/// goes back to its own parent, keeping a guard and its child's handle on its stack.
/// `weak_parent`: go back through a `WeakFiber` taken at the start (the book's old idiom with a
/// weak handle instead of a strong one); otherwise through `Fiber::switch_to_parent`.
fn chain(depth: u32, drops: Rc<Cell<u32>>, weak_parent: bool) -> Fiber {
    Fiber::new(move |_| {
        let _guard = Guard(drops.clone());
        let parent: WeakFiber = Fiber::current().parent().expect("a parent").downgrade();
        let child = (depth > 1).then(|| chain(depth - 1, drops, weak_parent));
        if let Some(c) = &child {
            c.switch(()).unwrap();
        }
        loop {
            if weak_parent {
                let _ = parent.switch(());
            } else {
                let _ = Fiber::switch_to_parent(());
            }
        }
    })
}

fn chain_of_four_is_unwound_when_main_drops_it(weak_parent: bool) {
    let before = stack_stats().in_use;
    let drops = Rc::new(Cell::new(0));
    let top = chain(4, drops.clone(), weak_parent);
    top.switch(()).unwrap(); // all four run and are suspended, each in a switch to its parent
    assert!(top.is_active());
    assert_eq!(stack_stats().in_use, before + 4);
    assert_eq!(drops.get(), 0);
    drop(top);
    assert_eq!(drops.get(), 4, "every destructor ran");
    assert_eq!(stack_stats().in_use, before, "every stack went back");
}

#[test]
fn a_chain_of_four_switching_to_parents_is_unwound() {
    chain_of_four_is_unwound_when_main_drops_it(false);
}

#[test]
fn a_chain_of_four_holding_weak_parents_is_unwound() {
    chain_of_four_is_unwound_when_main_drops_it(true);
}

#[test]
fn two_siblings_holding_weak_handles_to_each_other_are_unwound() {
    let before = stack_stats().in_use;
    let drops = Rc::new(Cell::new(0));
    let other_of_a: Rc<RefCell<Option<WeakFiber>>> = Rc::new(RefCell::new(None));
    let other_of_b: Rc<RefCell<Option<WeakFiber>>> = Rc::new(RefCell::new(None));
    let sibling = |other: Rc<RefCell<Option<WeakFiber>>>, drops: Rc<Cell<u32>>, first: bool| {
        move |_| {
            let _guard = Guard(drops);
            let other = other.borrow().clone().expect("set before the first switch");
            if first {
                let _ = other.switch("ping"); // to the sibling, which goes back to main
            }
            loop {
                let _ = Fiber::main().switch(());
            }
        }
    };
    let a = Fiber::new(sibling(other_of_a.clone(), drops.clone(), true));
    let b = Fiber::new(sibling(other_of_b.clone(), drops.clone(), false));
    *other_of_a.borrow_mut() = Some(b.downgrade());
    *other_of_b.borrow_mut() = Some(a.downgrade());
    a.switch(()).unwrap(); // a switches to b, b to main: both suspended
    assert!(a.is_active() && b.is_active());
    assert_eq!(stack_stats().in_use, before + 2);
    drop(a);
    drop(b);
    assert_eq!(drops.get(), 2, "both destructors ran");
    assert_eq!(stack_stats().in_use, before);
    assert!(other_of_a.borrow().as_ref().is_some_and(WeakFiber::is_dead));
}

#[test]
fn a_weak_handle_upgrades_until_its_fiber_ends() {
    let f = Fiber::new(|_| {
        let _ = Fiber::switch_to_parent(());
    });
    let weak = f.downgrade();
    assert!(weak.upgrade().is_some());
    weak.switch(()).unwrap();
    assert!(!weak.is_dead());
    drop(f);
    assert!(weak.is_dead() && weak.upgrade().is_none());
    // A switch to a dead fiber goes to its nearest live ancestor: main, here.
    assert!(weak.switch(7u8).unwrap().downcast::<u8>().is_ok());
}

#[test]
fn throw_into_a_fresh_fiber_starts_a_fresh_parent_with_unit_as_greenlet() {
    let parent = Fiber::new(|start: evloop::fiber::Value| (start.is::<()>(), start.is::<FiberExit>()));
    let child = Fiber::builder().parent(&parent).build(|_| ());
    let back = child.throw().unwrap();
    assert!(child.is_dead());
    assert_eq!(back.downcast::<(bool, bool)>().ok(), Some((true, false)));
    // A parent that has started gets FiberExit, as greenlet's gets GreenletExit.
    let parent = Fiber::new(|_| {
        let got = Fiber::main().switch(()).unwrap();
        got.is::<FiberExit>()
    });
    parent.switch(()).unwrap();
    let child = Fiber::builder().parent(&parent).build(|_| ());
    assert_eq!(child.throw().unwrap().downcast::<bool>().ok(), Some(true));
}

const SWALLOWS: &str = "EVLOOP_TEST_FIBER_SWALLOWS_EXIT";

/// A fiber that catches `FiberExit` when its last handle goes, switches away, and ends later
/// (resumed through a weak handle): the warning must not call it leaked, and its stack goes back
/// when it ends. Run in a child process, whose stderr the parent reads.
#[test]
fn a_fiber_that_swallows_fiber_exit_is_not_called_leaked_and_ends_later() {
    if evloop_tests::child::is_child(SWALLOWS) {
        let before = stack_stats().in_use;
        let stubborn = Fiber::new(|_| {
            let caught = std::panic::catch_unwind(|| {
                let _ = Fiber::switch_to_parent(());
            });
            assert!(caught.is_err_and(|p| p.is::<FiberExit>()));
            let _ = Fiber::main().switch("swallowed"); // switches away instead of ending
            "ended"
        });
        stubborn.switch(()).unwrap();
        let weak = stubborn.downgrade();
        drop(stubborn); // the unwind is caught: the warning
        assert!(!weak.is_dead());
        let last = weak.switch(()).unwrap(); // it ends now, and its stack goes back
        assert_eq!(last.downcast::<&str>().ok(), Some("ended"));
        assert!(weak.is_dead());
        assert_eq!(stack_stats().in_use, before);
        return;
    }
    let out = evloop_tests::child::run(
        &evloop_tests::test_name!("a_fiber_that_swallows_fiber_exit_is_not_called_leaked_and_ends_later"),
        SWALLOWS,
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{:?}: {err}", out.status);
    assert!(err.contains("switched away instead of ending"), "{err}");
    assert!(!err.contains("leaked"), "{err}");
}
