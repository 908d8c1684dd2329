//! `fiber::scope` (issue 19 item 1, the last part): fibers made in a scope are unwound when it
//! ends, whatever holds an `Unscoped` handle to them (their own `Fiber::current()`, a parent
//! link, a thread-local), even a handle given up to a leak, and when the scope's closure panics.
//! Every destructor runs and every stack goes back to the pool (`stack_stats`, per thread: each
//! test runs on a thread of its own). That handles cannot leave a scope is checked by the
//! `compile_fail` examples on `evloop::fiber::Scope`.
//!
//! (A module of `tests/tests/fiber/` in all but place: a file of its own so that it merges
//! cleanly; nothing here needs a process of its own.)

use std::cell::{Cell, RefCell};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::rc::Rc;
use std::sync::Mutex;

use evloop::fiber::{self, Brand, Fiber, FiberExit, Value, WeakFiber, stack_stats};

/// Counts its drops: one per fiber frame that was unwound.
struct Guard(Rc<Cell<u32>>);

impl Drop for Guard {
    fn drop(&mut self) {
        self.0.set(self.0.get() + 1);
    }
}

/// The chain: a fiber that opens a scope of its own, starts the next `depth - 1` fibers
/// in it, runs them until they come back, then goes back to its parent and stays suspended
/// there. `strong_parent`: through a `Fiber` handle to the parent taken at the start (the
/// issue's leak before scopes: the parent handle kept each parent alive); otherwise through
/// `Fiber::switch_to_parent`.
fn chain_body(depth: u32, drops: Rc<Cell<u32>>, strong_parent: bool) -> impl FnOnce(Value) + 'static {
    move |_| {
        let _guard = Guard(drops.clone());
        let parent: Fiber = Fiber::current().parent().expect("a parent");
        fiber::scope(|s| {
            // Kept on this stack while it is suspended: the child's only counted handle.
            let child = (depth > 1).then(|| s.fiber(chain_body(depth - 1, drops, strong_parent)));
            if let Some(c) = &child {
                c.switch(()).unwrap();
            }
            loop {
                if strong_parent {
                    let _ = parent.switch(());
                } else {
                    let _ = Fiber::switch_to_parent(());
                }
            }
        })
    }
}

fn chain_of_four_is_unwound_at_the_scope_end(strong_parent: bool) {
    let before = stack_stats().in_use;
    let drops = Rc::new(Cell::new(0));
    let weak = fiber::scope(|s| {
        let top = s.fiber(chain_body(4, drops.clone(), strong_parent));
        top.switch(()).unwrap(); // all four run and are suspended, each in a switch to its parent
        assert!(top.is_active());
        assert_eq!(stack_stats().in_use, before + 4);
        assert_eq!(drops.get(), 0);
        top.downgrade()
    });
    assert_eq!(drops.get(), 4, "every destructor ran");
    assert_eq!(stack_stats().in_use, before, "every stack went back");
    assert!(weak.is_dead());
}

#[test]
fn a_chain_of_four_switching_to_parents_is_unwound_at_the_scope_end() {
    chain_of_four_is_unwound_at_the_scope_end(false);
}

#[test]
fn a_chain_of_four_holding_strong_parent_handles_is_unwound_at_the_scope_end() {
    chain_of_four_is_unwound_at_the_scope_end(true);
}

/// How a sibling refers to the other, and to itself.
#[derive(Clone, Copy, PartialEq)]
enum Stash {
    /// A `WeakFiber` to the other.
    Weak,
    /// Its own `Fiber::current()` (an `Unscoped` handle) in a thread-local.
    SelfInThreadLocal,
    /// Its own `Fiber::current()` handed to the other, which keeps it on its stack.
    SelfToTheOther,
}

thread_local! {
    static STASHED: RefCell<Vec<Fiber>> = const { RefCell::new(Vec::new()) };
}

/// The two siblings, made in a scope: `a` switches to `b`, `b` to main, both stay
/// suspended holding what `stash` says. Dropping the scoped handles unwinds both at once (the
/// `Unscoped` handles they hold to themselves or to each other do not count); with
/// `drop_early` false, the scope's end does.
fn two_siblings(stash: Stash, drop_early: bool) {
    let before = stack_stats().in_use;
    let drops = Rc::new(Cell::new(0));
    let slot_of_a: Rc<RefCell<Option<WeakFiber>>> = Rc::new(RefCell::new(None));
    let slot_of_b: Rc<RefCell<Option<WeakFiber>>> = Rc::new(RefCell::new(None));
    let sibling = |other: Rc<RefCell<Option<WeakFiber>>>, drops: Rc<Cell<u32>>, first: bool| {
        move |start: Value| {
            let _guard = Guard(drops);
            let other = other.borrow().clone().expect("set before the first switch");
            let me = Fiber::current();
            let mut held: Vec<Fiber> = Vec::new();
            if stash == Stash::SelfInThreadLocal {
                STASHED.with(|s| s.borrow_mut().push(me.clone()));
            }
            // `b` starts with `a`'s handle, `a` is resumed with `b`'s: each keeps the other's.
            held.extend(
                start
                    .downcast::<Fiber>()
                    .ok()
                    .filter(|_| stash == Stash::SelfToTheOther),
            );
            let got = if first {
                other.switch(me.clone()) // starts the sibling, which goes back to main
            } else {
                Fiber::main().switch(me.clone())
            };
            held.extend(got.unwrap().downcast::<Fiber>().ok());
            loop {
                let _ = Fiber::main().switch(());
            }
        }
    };
    let dead = fiber::scope(|s| {
        let a = s.fiber(sibling(slot_of_a.clone(), drops.clone(), true));
        let b = s.fiber(sibling(slot_of_b.clone(), drops.clone(), false));
        *slot_of_a.borrow_mut() = Some(b.downgrade());
        *slot_of_b.borrow_mut() = Some(a.downgrade());
        // a switches to b with its own handle; b goes back to main with its own (`Unscoped`).
        let from_b = a.switch(()).unwrap().downcast::<Fiber>().unwrap();
        assert!(from_b.ptr_eq(&b));
        if stash == Stash::SelfToTheOther {
            a.switch(from_b).unwrap(); // a keeps b's handle, b keeps a's
        }
        assert!(a.is_active() && b.is_active());
        assert_eq!(stack_stats().in_use, before + 2);
        if drop_early {
            drop(a);
            drop(b);
            assert_eq!(drops.get(), 2, "both unwound when their scoped handles went");
        }
        slot_of_a.borrow().clone().unwrap()
    });
    assert_eq!(drops.get(), 2, "both destructors ran");
    assert_eq!(stack_stats().in_use, before, "both stacks went back");
    assert!(dead.is_dead());
    let stashed = STASHED.with(|s| std::mem::take(&mut *s.borrow_mut()));
    assert_eq!(stashed.len(), usize::from(stash == Stash::SelfInThreadLocal) * 2);
    assert!(
        stashed.iter().all(Fiber::is_dead),
        "an Unscoped handle sees them dead after"
    );
}

#[test]
fn two_siblings_holding_weak_handles_are_unwound_at_the_scope_end() {
    two_siblings(Stash::Weak, false);
}

#[test]
fn two_siblings_stashing_their_own_handles_in_a_thread_local_are_unwound_at_the_scope_end() {
    two_siblings(Stash::SelfInThreadLocal, false);
}

#[test]
fn two_siblings_holding_each_others_unscoped_handles_are_unwound_at_the_scope_end() {
    two_siblings(Stash::SelfToTheOther, false);
}

#[test]
fn unscoped_handles_do_not_keep_a_scoped_fiber_alive() {
    // Fails if an `Unscoped` handle counted for a scoped fiber: the two would keep each other
    // suspended until the scope's end.
    two_siblings(Stash::SelfInThreadLocal, true);
    two_siblings(Stash::SelfToTheOther, true);
}

/// Where a reference to the `Core` of each fiber whose handle is forgotten below stays
/// reachable, so that valgrind's leak check does not call it lost (the forgotten handle's
/// reference keeps it allocated for good).
static KEEP_REACHABLE: Mutex<Vec<usize>> = Mutex::new(Vec::new());

/// `mem::forget(f)`: its count never goes down, so only the scope's end can unwind it.
fn forget<B: Brand>(f: Fiber<B>) {
    let weak = Box::into_raw(Box::new(f.downgrade())) as usize;
    KEEP_REACHABLE.lock().unwrap().push(weak);
    std::mem::forget(f);
}

#[test]
fn a_forgotten_scoped_handle_does_not_keep_its_fiber_from_being_unwound() {
    let before = stack_stats().in_use;
    let drops = Rc::new(Cell::new(0));
    let d = drops.clone();
    let weak = fiber::scope(|s| {
        let f = s.fiber(move |_| {
            let _guard = Guard(d);
            let _ = Fiber::switch_to_parent(());
        });
        f.switch(()).unwrap();
        let weak = f.downgrade();
        forget(f);
        weak
    });
    assert_eq!(drops.get(), 1);
    assert!(weak.is_dead());
    assert_eq!(stack_stats().in_use, before);
}

#[test]
fn a_panic_in_the_scope_unwinds_its_fibers_and_goes_on() {
    let before = stack_stats().in_use;
    let drops = Rc::new(Cell::new(0));
    let caught = catch_unwind(AssertUnwindSafe(|| {
        fiber::scope(|s| {
            for _ in 0..3 {
                let d = drops.clone();
                let f = s.fiber(move |_| {
                    let _guard = Guard(d);
                    let _ = Fiber::switch_to_parent(());
                });
                f.switch(()).unwrap();
                forget(f); // so that only the scope's end can unwind it
            }
            let guard = Guard(drops.clone());
            forget(s.fiber(move |_| drop(guard))); // never started: its closure is dropped
            assert_eq!(stack_stats().in_use, before + 3);
            panic!("boom in the scope");
        })
    }));
    let payload = caught.expect_err("the panic goes on");
    let message = payload
        .downcast_ref::<String>()
        .map(String::as_str)
        .or(payload.downcast_ref::<&str>().copied());
    assert_eq!(message, Some("boom in the scope"));
    assert_eq!(
        drops.get(),
        4,
        "three suspended fibers unwound, one fresh closure dropped"
    );
    assert_eq!(stack_stats().in_use, before);
}

#[test]
fn a_scope_in_a_fiber_that_is_thrown_out_unwinds_its_fibers() {
    let before = stack_stats().in_use;
    let drops = Rc::new(Cell::new(0));
    let d = drops.clone();
    let outer = Fiber::new(move |_| {
        fiber::scope(|s| {
            let d2 = d.clone();
            let inner = s.fiber(move |_| {
                let _guard = Guard(d2);
                let _ = Fiber::main().switch("inner suspended");
            });
            inner.switch(()).unwrap();
            unreachable!("main never comes back here");
        })
    });
    assert_eq!(
        outer.switch(()).unwrap().downcast::<&str>().ok(),
        Some("inner suspended")
    );
    assert_eq!(stack_stats().in_use, before + 2);
    // FiberExit unwinds `outer` through the scope's closure: the scope's end unwinds `inner`.
    assert!(outer.throw().unwrap().is::<FiberExit>());
    assert_eq!(drops.get(), 1);
    assert_eq!(stack_stats().in_use, before);
}

#[test]
fn a_long_scope_forgets_the_fibers_that_ended() {
    fiber::scope(|s| {
        for i in 0..1000u32 {
            assert_eq!(s.fiber(move |_| i).switch(()).unwrap().downcast::<u32>().ok(), Some(i));
        }
        let listed: usize = format!("{s:?}")
            .trim_start_matches("Scope { fibers: ")
            .trim_end_matches(" }")
            .parse()
            .unwrap();
        assert!(listed <= 16, "{listed} entries for fibers that ended");
    });
}
