//! Fibers without the loop: greenlet's own test suite (`test_greenlet.py`, `test_throw.py`),
//! case by case, in evloop's terms, plus what Rust adds (destructors, panics, `'static`
//! values).
//!
//! Where greenlet raises an exception in a greenlet, evloop has two things: a panic inside a
//! fiber, which is caught at the fiber's entry and delivered to its parent as
//! `Err(FiberError::Panicked)`, and `throw()`, which unwinds a fiber with the `FiberExit`
//! payload (`GreenletExit`) and gives its parent a value holding `FiberExit`. Cases that exist
//! only because of Python (keyword arguments, frames, subclasses, `__getattribute__` tricks,
//! greenlets of another thread, which `!Send` rules out at compile time) are left out.

use std::cell::{Cell, RefCell};
use std::rc::Rc;

use evloop::fiber::{Builder, Fiber, FiberError, FiberExit, Value};
use evloop_tests::{DropFlag, Log, entries, flag, log, push};

/// `greenlet.getcurrent().parent.switch(value)`. The handle `Fiber::current()` returns is
/// dropped before the switch: kept across it (as a temporary of the same statement would be),
/// it would be a handle to the fiber on its own stack, which keeps it from ever being unwound
/// when its other handles go (a cycle, as with `Rc`).
fn to_parent<T: 'static>(value: T) -> Result<Value, FiberError> {
    let parent = Fiber::current().parent().expect("a fiber has a parent");
    parent.switch(value)
}

fn num(v: Value) -> u64 {
    v.downcast::<u64>().expect("a u64")
}

fn text(v: Value) -> &'static str {
    v.downcast::<&'static str>().expect("a &str")
}

fn simple(log: &Log) {
    let l = log.clone();
    let g = Fiber::new(move |_| {
        push(&l, "1");
        to_parent(()).unwrap();
        push(&l, "3");
    });
    push(log, "0");
    g.switch(()).unwrap();
    push(log, "2");
    g.switch(()).unwrap();
    push(log, "4");
}

// test_simple
#[test]
fn a_switch_runs_the_fiber_until_it_switches_back() {
    let log = log();
    simple(&log);
    assert_eq!(entries(&log), ["0", "1", "2", "3", "4"]);
}

// test_two_children
#[test]
fn two_children_of_main_run_independently() {
    let n = Rc::new(Cell::new(0));
    let f = |n: Rc<Cell<u32>>| {
        move |_: Value| {
            n.set(n.get() + 1);
            to_parent(()).unwrap();
            n.set(n.get() + 2);
        }
    };
    let g = Fiber::new(f(n.clone()));
    let h = Fiber::new(f(n.clone()));
    g.switch(()).unwrap();
    assert_eq!(n.get(), 1);
    h.switch(()).unwrap();
    assert_eq!(n.get(), 2);
    h.switch(()).unwrap();
    assert_eq!(n.get(), 4);
    assert!(h.is_dead() && !g.is_dead());
    g.switch(()).unwrap();
    assert_eq!(n.get(), 6);
    assert!(g.is_dead());
}

// test_two_recursive_children
#[test]
fn a_child_created_inside_a_fiber_returns_to_that_fiber() {
    let log = log();
    let l = log.clone();
    let g = Fiber::new(move |_| {
        push(&l, "a");
        let l2 = l.clone();
        let inner = Fiber::new(move |_| {
            push(&l2, "b");
            to_parent(()).unwrap();
        });
        assert!(inner.parent().unwrap().is_current(), "the creator is the parent");
        inner.switch(()).unwrap();
        push(&l, "c");
    });
    g.switch(()).unwrap();
    assert_eq!(entries(&log), ["a", "b", "c"]);
    assert!(g.is_dead());
}

// test_threads
#[test]
fn each_thread_has_its_own_main_fiber_and_fibers() {
    let threads: Vec<_> = (0..10)
        .map(|_| {
            std::thread::spawn(|| {
                let log = log();
                simple(&log);
                assert!(Fiber::current().is_main());
                entries(&log) == ["0", "1", "2", "3", "4"]
            })
        })
        .collect();
    for t in threads {
        assert!(t.join().unwrap());
    }
}

/// greenlet's `fmain`: wait in `parent.switch()`; a failure delivered there is recorded and
/// raised again; otherwise fail with "SomeError".
fn fmain(seen: Log) -> impl FnOnce(Value) + 'static {
    move |_| match to_parent(()) {
        Err(e) => {
            push(&seen, e.to_string());
            panic!("{e}");
        }
        Ok(_) => panic!("SomeError"),
    }
}

// test_exception
#[test]
fn a_panic_is_delivered_to_the_parent_and_up_the_chain() {
    let seen = log();
    let g1 = Fiber::new(fmain(seen.clone()));
    let g2 = Fiber::new(fmain(seen.clone()));
    g1.switch(()).unwrap();
    g2.switch(()).unwrap();
    g2.set_parent(&g1).unwrap();
    assert!(entries(&seen).is_empty());
    // g2 fails; its parent g1 receives the failure in its pending switch, records it, and
    // fails in turn; g1's parent (main) receives that.
    let err = g2.switch(()).unwrap_err();
    assert!(err.is_panic(), "{err}");
    assert!(
        err.to_string().contains("'Fiber-") && err.to_string().contains("SomeError"),
        "{err}"
    );
    assert_eq!(entries(&seen).len(), 1);
    assert!(entries(&seen)[0].contains("SomeError"), "{:?}", entries(&seen));
    assert!(g1.is_dead() && g2.is_dead());
    // Switching to a dead fiber goes to its nearest live ancestor: main, the caller itself.
    assert!(g2.switch(()).unwrap().is::<()>());
    assert_eq!(num(g2.switch(25u64).unwrap()), 25);
    assert_eq!(entries(&seen).len(), 1);
}

// test_send_exception (send_exception: a child whose parent is `g` crashes)
#[test]
fn a_failure_sent_through_a_child_reaches_the_waiting_parent() {
    let seen = log();
    let g = Fiber::new(fmain(seen.clone()));
    g.switch(()).unwrap();
    let crasher = Builder::new().parent(&g).build(|_| -> () { panic!("KeyError") });
    let err = crasher.switch(()).unwrap_err();
    assert!(err.to_string().contains("KeyError"), "{err}");
    assert_eq!(entries(&seen).len(), 1);
    assert!(entries(&seen)[0].contains("KeyError"));
    assert!(g.is_dead() && crasher.is_dead());
}

/// A fiber that waits in `parent.switch()` and records, from a destructor, how it ended.
fn waiter(seen: Log) -> impl FnOnce(Value) + 'static {
    move |_| {
        struct Record(Log);
        impl Drop for Record {
            fn drop(&mut self) {
                let how = if std::thread::panicking() {
                    "unwound"
                } else {
                    "returned"
                };
                push(&self.0, how);
            }
        }
        let _r = Record(seen);
        let _ = to_parent(());
    }
}

// test_dealloc
#[test]
fn dropping_the_last_handle_of_a_suspended_fiber_unwinds_it() {
    let seen = log();
    let g1 = Fiber::new(waiter(seen.clone()));
    let g2 = Fiber::new(waiter(seen.clone()));
    g1.switch(()).unwrap();
    g2.switch(()).unwrap();
    assert!(entries(&seen).is_empty());
    let g1_clone = g1.clone();
    drop(g1);
    assert!(entries(&seen).is_empty(), "another handle is left");
    drop(g1_clone);
    assert_eq!(entries(&seen), ["unwound"]);
    drop(g2);
    assert_eq!(entries(&seen), ["unwound", "unwound"]);
}

#[test]
fn a_fiber_that_never_ran_drops_its_closure_without_running() {
    let dropped = flag();
    let ran = flag();
    let d = DropFlag(dropped.clone());
    let r = ran.clone();
    let g = Fiber::new(move |_| {
        let _d = &d;
        r.set(true);
    });
    drop(g);
    assert!(dropped.get() && !ran.get());
}

// test_parent_restored_on_kill
#[test]
fn the_killer_is_the_parent_while_a_fiber_unwinds_and_the_parent_is_restored() {
    let hub = Fiber::new(|_| ());
    let during: Rc<RefCell<Option<(String, Fiber)>>> = Rc::default();
    let d = during.clone();
    let worker = Builder::new().name("worker").parent(&hub).build(move |_| {
        struct AtUnwind(Rc<RefCell<Option<(String, Fiber)>>>);
        impl Drop for AtUnwind {
            fn drop(&mut self) {
                let me = Fiber::current();
                let parent = me.parent().unwrap().name();
                *self.0.borrow_mut() = Some((parent, me));
            }
        }
        let _a = AtUnwind(d);
        Fiber::main().switch(()).unwrap();
    });
    worker.switch(()).unwrap();
    drop(worker);
    let (parent_during, worker) = during.borrow_mut().take().expect("it was unwound");
    // While it unwound, its parent was main (the killer, so its death came back to main) ...
    assert_eq!(parent_during, "main");
    // ... and afterwards its own parent again.
    assert!(worker.is_dead());
    assert!(worker.parent().unwrap().ptr_eq(&hub));
    assert!(!hub.is_active(), "hub never ran");
}

#[test]
fn the_parent_of_a_killed_fiber_is_its_old_one_afterwards() {
    let hub = Fiber::new(|_| ());
    let worker = Builder::new().parent(&hub).build(|_| {
        Fiber::main().switch(()).unwrap();
    });
    worker.switch(()).unwrap();
    let observer = worker.clone();
    // Kill through a throw from main: the death goes to the parent (hub, which starts and
    // returns to main) ...
    let r = observer.throw().unwrap();
    assert!(r.is::<()>(), "hub's return value comes back to main");
    assert!(worker.is_dead() && hub.is_dead());
    assert!(worker.parent().unwrap().ptr_eq(&hub));
}

// test_dealloc_switch_args_not_lost
#[test]
fn a_value_switched_by_a_fiber_that_dropped_its_last_handle_is_not_lost() {
    let seen = flag();
    let slot: Rc<RefCell<Option<Fiber>>> = Rc::default();
    let s = slot.clone();
    let sn = seen.clone();
    let worker = Fiber::new(move |_| {
        let value = to_parent(()).unwrap();
        // Drop every handle to ourselves, then hand the value to main: nothing can switch to
        // us after that, so main unwinds us, but must still get the value.
        drop(s.borrow_mut().take());
        let _d = DropFlag(sn);
        Fiber::main().switch(value).unwrap();
        unreachable!("nobody can resume an unreachable fiber");
    });
    worker.switch(()).unwrap(); // prime it
    *slot.borrow_mut() = Some(worker.clone());
    let initiator = Builder::new().parent(&worker).build(|_| 42u64);
    drop(worker);
    let value = initiator.switch(()).unwrap();
    assert_eq!(num(value), 42);
    assert!(seen.get(), "the orphan was unwound");
}

// test_falling_off_end_switches_to_unstarted_parent_works
#[test]
fn a_child_returning_to_a_parent_that_never_ran_starts_it_with_the_value() {
    let parent_never_started = Fiber::new(|x: Value| (num(x), 24u64));
    let child = Builder::new().parent(&parent_never_started).build(|_| 42u64);
    let result = child.switch(()).unwrap();
    assert_eq!(result.downcast::<(u64, u64)>().ok(), Some((42, 24)));
    assert!(child.is_dead() && parent_never_started.is_dead());
}

// test_switch_to_dead_greenlet_reparent
#[test]
fn switching_to_a_dead_fiber_goes_to_its_new_parent() {
    let seen = log();
    let (s1, s2) = (seen.clone(), seen.clone());
    let parent_never_started = Fiber::new(move |_| push(&s1, "24"));
    let child = Fiber::new(move |_| push(&s2, "42"));
    child.switch(()).unwrap();
    assert_eq!(entries(&seen), ["42"]);
    child.set_parent(&parent_never_started).unwrap();
    assert!(child.switch(()).unwrap().is::<()>());
    assert_eq!(entries(&seen), ["42", "24"]);
}

// test_trivial_cycle, test_deeper_cycle, test_trivial_cycle_main, test_main_greenlet_parent_is_none
#[test]
fn parent_cycles_are_refused_and_main_has_no_parent() {
    let g1 = Fiber::new(|_| ());
    let e = g1.set_parent(&g1).unwrap_err();
    assert!(matches!(e, FiberError::ParentCycle { .. }));
    assert!(e.to_string().contains("cyclic parent chain"), "{e}");
    let g2 = Fiber::new(|_| ());
    let g3 = Fiber::new(|_| ());
    g1.set_parent(&g2).unwrap();
    g2.set_parent(&g3).unwrap();
    assert!(matches!(g3.set_parent(&g1), Err(FiberError::ParentCycle { .. })));
    assert!(g3.parent().unwrap().is_main(), "a refused set_parent changes nothing");
    let main = Fiber::main();
    assert!(main.parent().is_none());
    assert!(matches!(main.set_parent(&g1), Err(FiberError::MainHasNoParent)));
}

// TestRepr
#[test]
fn debug_shows_the_name_and_state() {
    let main = Fiber::main();
    assert_eq!(format!("{main:?}"), "Fiber(main, running)");
    let m = main.clone();
    let g = Builder::new().name("g").build(move |_| format!("{m:?}"));
    assert_eq!(format!("{g:?}"), "Fiber(g, not started)");
    let inside = g.switch(()).unwrap().downcast::<String>().unwrap();
    assert_eq!(inside, "Fiber(main, suspended)");
    assert_eq!(format!("{g:?}"), "Fiber(g, dead)");
    assert!(!g.is_active());
}

// test_throw.py: test_class / test_val (a failure handed to a waiting fiber)
#[test]
fn a_fiber_waiting_in_switch_sees_the_failure_of_its_child() {
    let f = Fiber::new(|_| match to_parent("ok") {
        Err(e) if e.is_panic() => {
            to_parent("caught").unwrap();
        }
        _ => {
            to_parent("fail").unwrap();
        }
    });
    assert_eq!(text(f.switch(()).unwrap()), "ok");
    let crasher = Builder::new()
        .parent(&f)
        .build(|_| -> () { panic!("RuntimeError: ciao") });
    assert_eq!(text(crasher.switch(()).unwrap()), "caught");
}

// test_throw.py: test_kill
#[test]
fn throw_unwinds_the_fiber_and_its_parent_gets_fiber_exit() {
    let unwound = flag();
    let u = unwound.clone();
    let g = Fiber::new(move |_| {
        let _d = DropFlag(u);
        to_parent("ok").unwrap();
        to_parent("fail").unwrap();
    });
    assert_eq!(text(g.switch(()).unwrap()), "ok");
    let res = g.throw().unwrap();
    assert!(res.is::<FiberExit>());
    assert!(g.is_dead());
    assert!(unwound.get(), "its destructors ran");
    // Immediately eaten by the already-dead fiber.
    assert!(g.throw().unwrap().is::<FiberExit>());
}

// test_throw.py: test_throw_goes_to_original_parent
#[test]
fn throw_goes_to_the_original_parent() {
    let main = Fiber::main();
    let f1 = move |m: Fiber| {
        move |first: Value| -> &'static str {
            if first.is::<FiberExit>() {
                return "started by FiberExit";
            }
            match m.switch("f1 ready to catch") {
                Ok(v) if v.is::<FiberExit>() => "caught",
                _ => "normal exit",
            }
        }
    };
    let f2 = |m: Fiber| {
        move |_: Value| {
            m.switch("from f2").unwrap();
        }
    };

    // Neither started: g2 dies without running, and g1 starts with `()`, as greenlet starts it
    // with None (issue 19 item 1; it used to start with FiberExit).
    let g1 = Fiber::new(f1(main.clone()));
    let g2 = Builder::new().parent(&g1).build(f2(main.clone()));
    assert_eq!(text(g2.throw().unwrap()), "f1 ready to catch");
    assert!(g2.is_dead() && g1.is_active());

    // g1 waiting: it receives g2's FiberExit.
    let g1 = Fiber::new(f1(main.clone()));
    let g2 = Builder::new().parent(&g1).build(f2(main.clone()));
    assert_eq!(text(g1.switch(()).unwrap()), "f1 ready to catch");
    assert_eq!(text(g2.throw().unwrap()), "caught");
    assert!(g2.is_dead() && g1.is_dead());

    // Both started: g2 unwinds from its switch to main, and g1 receives the FiberExit.
    let g1 = Fiber::new(f1(main.clone()));
    let g2 = Builder::new().parent(&g1).build(f2(main.clone()));
    assert_eq!(text(g1.switch(()).unwrap()), "f1 ready to catch");
    assert_eq!(text(g2.switch(()).unwrap()), "from f2");
    assert_eq!(text(g2.throw().unwrap()), "caught");
    assert!(g2.is_dead() && g1.is_dead());
}

#[test]
fn throw_into_main_is_refused() {
    assert!(matches!(Fiber::main().throw(), Err(FiberError::ThrowToMain)));
    let g = Fiber::new(|_| {
        let main = Fiber::main();
        main.throw().map(|_| ()).map_err(|e| e.to_string())
    });
    let r = g.switch(()).unwrap().downcast::<Result<(), String>>().unwrap();
    assert!(r.unwrap_err().contains("main fiber"));
}

#[test]
fn throw_into_the_running_fiber_unwinds_it_from_there() {
    let after = flag();
    let a = after.clone();
    let g = Fiber::new(move |_| {
        let _ = Fiber::current().throw();
        a.set(true);
    });
    assert!(g.switch(()).unwrap().is::<FiberExit>());
    assert!(g.is_dead() && !after.get());
}

// ---------------------------------------------------------------------------------------------
// Beyond greenlet's suite.

#[test]
fn a_fiber_switches_into_a_sibling_and_values_travel_both_ways() {
    let log = log();
    let b_slot: Rc<RefCell<Option<Fiber>>> = Rc::default();
    let (la, lb) = (log.clone(), log.clone());
    let bs = b_slot.clone();
    let a = Fiber::new(move |v| {
        push(&la, format!("a got {}", num(v)));
        let b = bs.borrow().clone().unwrap();
        let back = b.switch(2u64).unwrap();
        push(&la, format!("a got {} back from b", num(back)));
        10u64
    });
    let a2 = a.clone();
    let b = Fiber::new(move |v| {
        push(&lb, format!("b got {}", num(v)));
        a2.switch(3u64).unwrap();
        unreachable!("nobody switches back to b");
    });
    *b_slot.borrow_mut() = Some(b.clone());
    assert_eq!(num(a.switch(1u64).unwrap()), 10, "a returns to its parent, main");
    assert_eq!(entries(&log), ["a got 1", "b got 2", "a got 3 back from b"]);
    assert!(a.is_dead() && b.is_active());
    drop(b_slot.borrow_mut().take());
    drop(b);
}

#[test]
fn a_panic_stays_on_its_stack_and_keeps_its_payload() {
    // The parent holds a guard across the switch: the child's panic must not unwind it.
    let parent_guard = flag();
    let child_guard = flag();
    let pg = parent_guard.clone();
    let cg = child_guard.clone();
    let parent = Fiber::new(move |_| {
        let _d = DropFlag(pg.clone());
        let child = Fiber::new(move |_| {
            let _d = DropFlag(cg);
            std::panic::panic_any(17u32);
        });
        let err = child.switch(()).unwrap_err();
        assert!(!pg.get(), "the parent's frames were not unwound");
        let mut panic = err.panic().map(|p| p.message().to_string());
        if let FiberError::Panicked { panic: mut p, fiber } = err {
            assert!(fiber.starts_with("Fiber-"));
            let payload = p.take_payload().unwrap();
            panic = Some(format!("{:?}", payload.downcast_ref::<u32>()));
        }
        panic.unwrap()
    });
    let r = parent.switch(()).unwrap().downcast::<String>().unwrap();
    assert_eq!(r, "Some(17)");
    assert!(child_guard.get(), "the child's frames unwound");
    assert!(parent_guard.get(), "and the parent's only when it returned");
}

#[test]
fn a_fiber_dropped_deep_in_nested_calls_unwinds_every_frame() {
    let dropped = Rc::new(Cell::new(0));
    fn descend(n: u32, dropped: Rc<Cell<u32>>) {
        struct Count(Rc<Cell<u32>>);
        impl Drop for Count {
            fn drop(&mut self) {
                self.0.set(self.0.get() + 1);
            }
        }
        let _c = Count(dropped.clone());
        if n == 0 {
            to_parent(()).unwrap();
        } else {
            descend(n - 1, dropped);
        }
    }
    let d = dropped.clone();
    let g = Fiber::new(move |_| descend(99, d));
    g.switch(()).unwrap();
    assert_eq!(dropped.get(), 0);
    drop(g);
    assert_eq!(dropped.get(), 100);
}

#[test]
fn a_destructor_may_switch_while_its_fiber_unwinds() {
    let log = log();
    let helper_log = log.clone();
    let helper = Fiber::new(move |_| {
        loop {
            push(&helper_log, "helper ran");
            if to_parent(()).is_err() {
                break;
            }
        }
    });
    let l = log.clone();
    let h = helper.clone();
    let g = Fiber::new(move |_| {
        struct SwitchOnDrop(Fiber, Log);
        impl Drop for SwitchOnDrop {
            fn drop(&mut self) {
                // Runs during the unwind; helper's parent is main, so control comes back
                // through main... which is the killer, inside `drop(g)`: make helper's parent us.
                self.0.set_parent(&Fiber::current()).unwrap();
                self.0.switch(()).unwrap();
                push(&self.1, "back in the unwinding fiber");
            }
        }
        let _s = SwitchOnDrop(h, l);
        to_parent(()).unwrap();
    });
    g.switch(()).unwrap();
    drop(g);
    assert_eq!(entries(&log), ["helper ran", "back in the unwinding fiber"]);
    drop(helper);
}

#[test]
fn values_of_any_static_type_cross_a_switch() {
    let g = Fiber::new(|v: Value| {
        let v = v.downcast::<Vec<String>>().unwrap();
        let back = to_parent(v.len()).unwrap();
        let big = back.downcast::<[u64; 64]>().unwrap();
        big.iter().sum::<u64>()
    });
    let n = g.switch(vec!["a".to_string(), "b".to_string()]).unwrap();
    assert_eq!(n.downcast::<usize>().ok(), Some(2));
    let total = g.switch([3u64; 64]).unwrap();
    assert_eq!(num(total), 192);
}

#[test]
fn deep_recursion_fits_in_a_big_enough_stack() {
    fn depth(n: u64) -> u64 {
        // About 1 KiB per frame, which the optimiser cannot remove.
        let buf = std::hint::black_box([0u8; 1024]);
        if n == 0 {
            u64::from(buf[0])
        } else {
            depth(n - 1) + 1 + u64::from(buf[1])
        }
    }
    let g = Builder::new().stack_size(8 << 20).build(|_| depth(1000));
    assert_eq!(num(g.switch(()).unwrap()), 1000);
}

#[test]
fn fibers_are_named_and_numbered_per_thread() {
    std::thread::spawn(|| {
        let a = Fiber::new(|_| ());
        let b = Builder::new().name("b").build(|_| ());
        let c = Fiber::new(|_| ());
        assert_eq!(
            (a.name(), b.name(), c.name()),
            ("Fiber-1".into(), "b".into(), "Fiber-3".into())
        );
    })
    .join()
    .unwrap();
}

#[test]
fn a_suspended_fiber_holding_its_child_unwinds_both() {
    let log = log();
    let l = log.clone();
    let outer = Fiber::new(move |_| {
        let l2 = l.clone();
        let inner = Fiber::new(move |_| {
            let _d = Recorder(l2, "inner unwound");
            Fiber::main().switch(()).unwrap();
        });
        inner.switch(()).unwrap();
        let _d = Recorder(l.clone(), "outer unwound");
        Fiber::main().switch(()).unwrap();
        drop(inner);
    });
    struct Recorder(Log, &'static str);
    impl Drop for Recorder {
        fn drop(&mut self) {
            push(&self.0, self.1);
        }
    }
    // main -> outer -> inner -> main: main's switch returns; main -> outer, whose switch to
    // inner returns, and which switches to main. Both are suspended; outer holds inner.
    outer.switch(()).unwrap();
    outer.switch(()).unwrap();
    drop(outer);
    assert_eq!(entries(&log), ["outer unwound", "inner unwound"]);
}

#[test]
fn a_thread_may_exit_with_fibers_suspended_in_its_thread_locals() {
    thread_local! {
        static KEPT: RefCell<Option<Fiber>> = const { RefCell::new(None) };
    }
    let unwound = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let u = unwound.clone();
    std::thread::spawn(move || {
        // One fiber dropped normally at the end of the thread's function: unwound.
        let local = Fiber::new(move |_| {
            struct Flag(std::sync::Arc<std::sync::atomic::AtomicBool>);
            impl Drop for Flag {
                fn drop(&mut self) {
                    self.0.store(true, std::sync::atomic::Ordering::SeqCst);
                }
            }
            let _f = Flag(u);
            to_parent(()).unwrap();
        });
        local.switch(()).unwrap();
        // One left in a thread-local, dropped while the thread's locals are torn down, when
        // fibers can no longer run: it must not crash the process.
        let kept = Fiber::new(|_| {
            to_parent(()).unwrap();
        });
        kept.switch(()).unwrap();
        KEPT.with(|k| *k.borrow_mut() = Some(kept));
    })
    .join()
    .expect("the thread exits cleanly");
    assert!(unwound.load(std::sync::atomic::Ordering::SeqCst));
}
