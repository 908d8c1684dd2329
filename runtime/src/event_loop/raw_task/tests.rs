//! The cell on its own, driven by a plain queue instead of the loop: the stages and their
//! guard, wakes, references and drops in every state. These run under Miri (`make miri`), and
//! under valgrind with the task contract tests (`make valgrind`).

use std::collections::{HashMap, VecDeque};
use std::future::Future;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::pin::Pin;
use std::sync::atomic::{AtomicU32, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};

use super::leaked_cells;
use super::state::Stage;
use super::*;

/// Woken tasks, by owner id: each test uses its own owner, so tests running in parallel do
/// not see each other's wakes.
fn queues() -> &'static Mutex<HashMap<u32, VecDeque<Notified>>> {
    static Q: std::sync::OnceLock<Mutex<HashMap<u32, VecDeque<Notified>>>> = std::sync::OnceLock::new();
    Q.get_or_init(Mutex::default)
}

struct TestQueue;

impl Schedule for TestQueue {
    fn schedule(task: Notified) {
        let mut q = queues().lock().unwrap();
        q.entry(task.owner()).or_default().push_back(task);
    }
}

/// A test's own owner id and token.
fn owner() -> OwnerToken {
    static NEXT: AtomicU32 = AtomicU32::new(1);
    OwnerToken::new(NEXT.fetch_add(1, Ordering::Relaxed))
}

fn spawn<F: Future + 'static>(token: &OwnerToken, f: F) -> TaskPtr
where
    F::Output: 'static,
{
    TaskPtr::new::<F, TestQueue>(
        f,
        Init {
            owner: token.id,
            number: 1,
            site: 0,
            flags: 0,
        },
    )
}

/// Takes the woken tasks of `token`'s owner off the queue.
fn drain(token: &OwnerToken) -> Vec<TaskPtr> {
    let woken: Vec<Notified> = queues()
        .lock()
        .unwrap()
        .get_mut(&token.id)
        .map(|q| q.drain(..).collect())
        .unwrap_or_default();
    woken.into_iter().filter_map(|n| n.into_local(token)).collect()
}

fn poll_once(task: &TaskPtr) -> Poll<Option<Panic>> {
    task.clear_notified();
    let waker = task.waker_ref();
    let mut cx = Context::from_waker(&waker);
    task.poll(&mut cx)
}

/// A future that is pending until `release` is set, parking its waker where tests can reach
/// it (and clone it, wake it, drop it, from any thread).
#[derive(Clone, Default)]
struct Gate {
    open: Arc<Mutex<bool>>,
    waker: Arc<Mutex<Option<Waker>>>,
}

impl Gate {
    fn wait(&self) -> impl Future<Output = u64> + 'static + use<> {
        let gate = self.clone();
        std::future::poll_fn(move |cx| {
            if *gate.open.lock().unwrap() {
                return Poll::Ready(7);
            }
            *gate.waker.lock().unwrap() = Some(cx.waker().clone());
            Poll::Pending
        })
    }

    fn open(&self) {
        *self.open.lock().unwrap() = true;
        if let Some(w) = self.waker.lock().unwrap().take() {
            w.wake();
        }
    }

    fn waker(&self) -> Waker {
        self.waker.lock().unwrap().clone().expect("a parked waker")
    }
}

/// Counts drops, so a test can see a value dropped exactly once.
struct DropCount(Arc<AtomicUsize>);
impl Drop for DropCount {
    fn drop(&mut self) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

#[test]
fn a_cell_is_one_allocation_with_a_48_byte_header() {
    assert_eq!(std::mem::size_of::<Header>(), 48);
    assert_eq!(std::mem::size_of::<RawCell<std::future::Ready<()>>>(), 56);
}

#[test]
fn the_output_is_read_once_and_only_as_its_own_type() {
    let t = owner();
    let task = spawn(&t, async { String::from("out") });
    assert!(matches!(poll_once(&task), Poll::Ready(None)));
    assert!(task.header().has_output());
    assert_eq!(task.take_output::<u64>(), None, "a wrong type never reads the slot");
    assert_eq!(task.take_output::<String>().as_deref(), Some("out"));
    assert_eq!(task.take_output::<String>(), None, "read once");
    assert!(!task.header().has_output());
    drop(task);
    assert_eq!(leaked_cells(), 0);
}

#[test]
fn many_wakes_before_a_poll_queue_the_task_once() {
    let t = owner();
    let gate = Gate::default();
    let task = spawn(&t, gate.wait());
    drop(drain(&t)); // nothing was woken: creation only sets NOTIFIED for the first step
    assert!(poll_once(&task).is_pending());
    let w = gate.waker();
    for _ in 0..5 {
        w.wake_by_ref();
    }
    let by_value = w.clone();
    by_value.wake();
    let woken = drain(&t);
    assert_eq!(woken.len(), 1);
    assert!(woken[0].ptr_eq(&task));
    // A wake during the next poll queues it again.
    task.clear_notified();
    w.wake_by_ref();
    assert_eq!(drain(&t).len(), 1);
    drop(w);
    gate.open();
    let woken = drain(&t);
    assert_eq!(woken.len(), 0, "still NOTIFIED from the last wake: absorbed");
    assert!(matches!(poll_once(&task), Poll::Ready(None)));
    assert_eq!(task.take_output::<u64>(), Some(7));
}

#[test]
fn wakers_are_cloned_woken_and_dropped_from_several_threads() {
    let t = owner();
    let gate = Gate::default();
    let task = spawn(&t, gate.wait());
    assert!(poll_once(&task).is_pending());
    let w = gate.waker();
    let threads: Vec<_> = (0..4)
        .map(|i| {
            let w = w.clone();
            std::thread::spawn(move || {
                for j in 0..if cfg!(miri) { 5 } else { 200 } {
                    let c = w.clone();
                    if (i + j) % 2 == 0 {
                        c.wake();
                    } else {
                        c.wake_by_ref();
                    }
                }
            })
        })
        .collect();
    for th in threads {
        th.join().unwrap();
    }
    let woken = drain(&t);
    assert_eq!(woken.len(), 1, "all those wakes queued it once");
    drop(woken);
    drop(w);
    gate.open();
    assert!(matches!(poll_once(&task), Poll::Ready(None)));
    assert_eq!(task.take_output::<u64>(), Some(7));
    drop(task);
    drop(drain(&t));
    assert_eq!(leaked_cells(), 0);
}

#[test]
fn the_last_reference_may_be_a_waker_on_another_thread() {
    let t = owner();
    let gate = Gate::default();
    let task = spawn(&t, gate.wait());
    assert!(poll_once(&task).is_pending());
    let w = gate.waker();
    // The owner drops the future (cancel) and every reference of its own.
    assert!(task.drop_future().is_ok());
    drop(task);
    drop(gate);
    // The remaining waker wakes (the task is queued, but its loop will find it finished) and
    // is then dropped on another thread, which frees the cell.
    std::thread::spawn(move || {
        w.wake_by_ref();
        drop(w);
    })
    .join()
    .unwrap();
    let stale = drain(&t);
    assert_eq!(stale.len(), 1);
    assert!(!stale[0].header().has_future());
    drop(stale); // the last reference: freed here
    assert_eq!(leaked_cells(), 0);
}

#[test]
fn dropping_the_handle_in_every_state_frees_everything_once() {
    let t = owner();
    // Before the first poll: the future is dropped, never polled.
    let dropped = Arc::new(AtomicUsize::new(0));
    let d = DropCount(dropped.clone());
    let task = spawn(&t, async move {
        let _d = d;
    });
    assert!(task.drop_future().is_ok());
    drop(task);
    assert_eq!(dropped.load(Ordering::SeqCst), 1);

    // While pending.
    let dropped = Arc::new(AtomicUsize::new(0));
    let d = DropCount(dropped.clone());
    let gate = Gate::default();
    let wait = gate.wait();
    let task = spawn(&t, async move {
        let _d = d;
        wait.await
    });
    assert!(poll_once(&task).is_pending());
    assert!(task.drop_future().is_ok());
    assert_eq!(dropped.load(Ordering::SeqCst), 1);
    drop(task);
    drop(gate);

    // Finished, the output never read: dropped explicitly, once.
    let dropped = Arc::new(AtomicUsize::new(0));
    let d = DropCount(dropped.clone());
    let task = spawn(&t, async move { d });
    assert!(matches!(poll_once(&task), Poll::Ready(None)));
    assert_eq!(dropped.load(Ordering::SeqCst), 0);
    assert!(task.drop_output().is_ok());
    assert!(task.drop_output().is_ok(), "a second drop finds the slot empty");
    assert_eq!(dropped.load(Ordering::SeqCst), 1);
    drop(task);
    drop(drain(&t));
    assert_eq!(leaked_cells(), 0);
}

#[test]
fn a_panic_in_poll_leaves_the_future_for_the_owner_to_drop() {
    let t = owner();
    let dropped = Arc::new(AtomicUsize::new(0));
    let d = DropCount(dropped.clone());
    let task = spawn(&t, async move {
        let _d = d;
        if true {
            panic!("boom");
        }
    });
    let polled = catch_unwind(AssertUnwindSafe(|| poll_once(&task)));
    assert!(polled.is_err());
    assert!(task.header().has_future());
    assert!(task.drop_future().is_ok());
    assert_eq!(dropped.load(Ordering::SeqCst), 1);
    assert!(!task.header().has_output());
    drop(task);
    assert_eq!(leaked_cells(), 0);
}

/// A future that is ready at once and panics when dropped.
struct ReadyThenPanicOnDrop;
impl Future for ReadyThenPanicOnDrop {
    type Output = u8;
    fn poll(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<u8> {
        Poll::Ready(3)
    }
}
impl Drop for ReadyThenPanicOnDrop {
    fn drop(&mut self) {
        panic!("destructor");
    }
}

#[test]
fn a_destructor_panic_at_completion_is_returned_and_the_output_kept() {
    let t = owner();
    let task = spawn(&t, ReadyThenPanicOnDrop);
    match poll_once(&task) {
        Poll::Ready(Some(p)) => assert_eq!(p.message(), "destructor"),
        other => panic!("expected a caught destructor panic, got {other:?}"),
    }
    assert_eq!(task.take_output::<u8>(), Some(3));
    drop(task);
    assert_eq!(leaked_cells(), 0);
}

#[test]
fn a_destructor_panic_while_cancelling_is_returned_once() {
    let t = owner();
    let gate = Gate::default();
    let wait = gate.wait();
    let task = spawn(&t, async move {
        let _bomb = ReadyThenPanicOnDrop;
        wait.await
    });
    assert!(poll_once(&task).is_pending());
    let err = task.drop_future().expect_err("the destructor panicked");
    assert_eq!(err.message(), "destructor");
    assert!(
        task.drop_future().is_ok(),
        "the slot is empty: nothing is dropped twice"
    );
    drop(task);
    drop(gate);
    assert_eq!(leaked_cells(), 0);
}

#[test]
fn cancel_in_every_state() {
    let t = owner();
    // Not started.
    let task = spawn(&t, async { 1u8 });
    assert!(task.drop_future().is_ok());
    assert!(matches!(poll_once(&task), Poll::Ready(None)), "nothing left to poll");
    assert_eq!(task.take_output::<u8>(), None);
    // Finished: the output stays until it is read or dropped.
    let task = spawn(&t, async { 2u8 });
    assert!(matches!(poll_once(&task), Poll::Ready(None)));
    assert!(task.drop_future().is_ok());
    assert_eq!(task.take_output::<u8>(), Some(2));
    drop(drain(&t));
    assert_eq!(leaked_cells(), 0);
}

#[test]
fn a_wake_reaches_only_the_owning_loop() {
    let t = owner();
    let other = owner();
    let gate = Gate::default();
    let task = spawn(&t, gate.wait());
    assert!(poll_once(&task).is_pending());
    gate.waker().wake();
    let woken: Vec<Notified> = queues().lock().unwrap().get_mut(&t.id).unwrap().drain(..).collect();
    assert_eq!(woken.len(), 1);
    let mut woken = woken.into_iter();
    let n = woken.next().unwrap();
    assert!(n.into_local(&other).is_none(), "another loop's token cannot take it");
    assert!(task.drop_future().is_ok());
    assert_eq!(leaked_cells(), 0);
}

#[test]
fn the_current_task_is_restored_after_a_panic() {
    let t = owner();
    let a = spawn(&t, async {});
    let b = spawn(&t, async {});
    let cur = CurrentTask::default();
    cur.enter(&a, || {
        assert!(cur.is(&a));
        let r = catch_unwind(AssertUnwindSafe(|| cur.enter(&b, || panic!("inside b"))));
        assert!(r.is_err());
        assert!(cur.get().is_some_and(|c| c.ptr_eq(&a)));
    });
    assert!(cur.get().is_none());
    drop(drain(&t));
    assert!(a.drop_future().is_ok() && b.drop_future().is_ok());
}

#[test]
fn a_finished_tasks_waker_keeps_the_memory_not_the_future() {
    let t = owner();
    let dropped = Arc::new(AtomicUsize::new(0));
    let d = DropCount(dropped.clone());
    let task = spawn(&t, async move {
        let _d = d;
        5u32
    });
    let w = task.waker();
    assert!(matches!(poll_once(&task), Poll::Ready(None)));
    assert_eq!(dropped.load(Ordering::SeqCst), 1, "the future went at completion");
    assert_eq!(task.take_output::<u32>(), Some(5));
    drop(task);
    w.wake(); // queues a finished task; harmless
    drop(drain(&t));
    assert_eq!(leaked_cells(), 0);
}

/// A slot through which a future reaches its own task (filled after the task is created; the
/// future takes the reference out again, so no cycle is left behind).
type SelfSlot = std::rc::Rc<std::cell::RefCell<Option<TaskPtr>>>;

#[test]
fn the_stage_is_polling_exactly_while_the_future_runs() {
    let t = owner();
    let me: SelfSlot = SelfSlot::default();
    let seen = std::rc::Rc::new(Cell::new(None));
    let (slot, seen2) = (me.clone(), seen.clone());
    let task = spawn(&t, async move {
        let me = slot.borrow_mut().take().expect("filled before the first poll");
        seen2.set(Some((me.header().stage(), me.header().has_future())));
        drop(me);
        std::future::pending::<()>().await;
    });
    *me.borrow_mut() = Some(task.clone());
    assert_eq!(task.header().stage(), Stage::Future);
    assert!(poll_once(&task).is_pending());
    assert_eq!(seen.get(), Some((Stage::Polling, true)));
    assert_eq!(task.header().stage(), Stage::Future, "back after Pending");
    assert!(task.drop_future().is_ok());
    assert_eq!(task.header().stage(), Stage::Empty);
    drop(task);
    assert_eq!(leaked_cells(), 0);
}

#[test]
fn an_unwinding_poll_gives_the_future_back() {
    let t = owner();
    let task = spawn(&t, async {
        if true {
            panic!("inside the poll");
        }
    });
    assert!(catch_unwind(AssertUnwindSafe(|| poll_once(&task))).is_err());
    assert_eq!(task.header().stage(), Stage::Future, "the guard ended the poll");
    assert!(task.drop_future().is_ok());
    drop(task);
    assert_eq!(leaked_cells(), 0);
}

#[test]
fn the_extra_bit_follows_the_extra_part() {
    let t = owner();
    let task = spawn(&t, async {});
    assert!(!task.header().has_extra());
    task.header().extra_mut(|e| e.next_callback = 1);
    assert!(task.header().has_extra());
    assert_eq!(task.header().label(), "Task-1", "reading it keeps it");
    assert!(task.header().has_extra());
    task.header().extra_mut(|e| e.name = Some("named".into()));
    assert!(task.header().take_empty_extra().is_none(), "a name is not empty");
    assert!(task.header().has_extra());
    task.header().extra_mut(|e| e.name = None);
    assert!(task.header().take_empty_extra().is_some());
    assert!(!task.header().has_extra());
    assert!(task.drop_future().is_ok());
}

/// What the child process of `the_slot_refuses_every_access_during_a_poll` does, by name.
const REFUSAL_CHILD: &str = "EVLOOP_TEST_CELL_REFUSAL";

/// A future that, during its own poll, calls `op` on its own cell: the guard must abort.
fn reenter(op: &str) {
    let t = owner();
    let me: SelfSlot = SelfSlot::default();
    let slot = me.clone();
    let op = op.to_string();
    let task = spawn(&t, async move {
        let me = slot.borrow_mut().take().expect("filled");
        match op.as_str() {
            "poll" => drop(poll_once(&me)),
            "drop_future" => drop(me.drop_future()),
            "take_output" => drop(me.take_output::<()>()),
            _ => drop(me.drop_output()),
        }
    });
    *me.borrow_mut() = Some(task.clone());
    let _ = poll_once(&task);
    eprintln!("not refused");
}

#[test]
#[cfg_attr(miri, ignore = "Miri cannot start processes")]
fn the_slot_refuses_every_access_during_a_poll() {
    if let Some(op) = std::env::var_os(REFUSAL_CHILD) {
        reenter(op.to_str().expect("an operation"));
        return;
    }
    // Each access aborts the process, so each runs in a child: this test binary again, with
    // only this test and the operation in the environment.
    let name = module_path!().split_once("::").map_or("", |(_, rest)| rest).to_string()
        + "::the_slot_refuses_every_access_during_a_poll";
    for op in ["poll", "drop_future", "take_output", "drop_output"] {
        let out = std::process::Command::new(std::env::current_exe().expect("the test binary"))
            .args([name.as_str(), "--exact", "--nocapture", "--test-threads=1"])
            .env(REFUSAL_CHILD, op)
            .output()
            .expect("the test binary runs again");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{op}: not refused\n{stderr}");
        assert!(
            stderr.contains(&format!("fatal: TaskPtr::{op} on a task whose future is being polled")),
            "{op}: {stderr}"
        );
        assert!(!stderr.contains("not refused"), "{op}: {stderr}");
    }
}

/// The macros' pinning ([`Project`], [`MaybeDone`]): fields polled where they lie.
mod project {
    use std::cell::Cell;
    use std::marker::PhantomPinned;
    use std::pin::pin;
    use std::rc::Rc;
    use std::task::Waker;

    use std::future::Future;
    use std::pin::Pin;
    use std::task::{Context, Poll};

    use super::super::{MaybeDone, Project};

    /// A future that must not move: it records its address at its first poll and checks it at
    /// every later one (and at its drop), ready at its `ready_at`-th poll.
    struct Fixed {
        at: Cell<usize>,
        polls: Cell<u32>,
        ready_at: u32,
        drops: Rc<Cell<u32>>,
        _pin: PhantomPinned,
    }

    impl Fixed {
        fn new(ready_at: u32, drops: &Rc<Cell<u32>>) -> Fixed {
            Fixed {
                at: Cell::new(0),
                polls: Cell::new(0),
                ready_at,
                drops: drops.clone(),
                _pin: PhantomPinned,
            }
        }
        fn check(&self) {
            let here = self as *const Fixed as usize;
            match self.at.get() {
                0 => self.at.set(here),
                at => assert_eq!(at, here, "a pinned future moved"),
            }
        }
    }

    impl Future for Fixed {
        type Output = u32;
        fn poll(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<u32> {
            self.check();
            self.polls.set(self.polls.get() + 1);
            if self.polls.get() >= self.ready_at {
                Poll::Ready(self.ready_at)
            } else {
                Poll::Pending
            }
        }
    }

    impl Drop for Fixed {
        fn drop(&mut self) {
            if self.polls.get() > 0 {
                self.check();
            }
            self.drops.set(self.drops.get() + 1);
        }
    }

    #[test]
    fn a_projected_tuple_polls_each_field_in_place() {
        let drops = Rc::new(Cell::new(0));
        let mut cx = Context::from_waker(Waker::noop());
        let mut outs = Vec::new();
        {
            let mut three = pin!((
                Fixed::new(1, &drops),
                Fixed::new(3, &drops),
                Some(Fixed::new(2, &drops))
            ));
            for _ in 0..3 {
                let (a, b, mut c) = three.as_mut().project();
                if let Poll::Ready(v) = a.poll(&mut cx) {
                    outs.push(v);
                }
                if let Poll::Ready(v) = b.poll(&mut cx) {
                    outs.push(v);
                }
                let polled = c.as_mut().as_pin_mut().map(|f| f.poll(&mut cx));
                if let Some(Poll::Ready(v)) = polled {
                    outs.push(v);
                    c.set(None); // dropped in place
                }
            }
            assert_eq!(drops.get(), 1, "the third, dropped in place by `set`");
        }
        assert_eq!(outs, [1, 1, 2, 1, 3]);
        assert_eq!(
            drops.get(),
            3,
            "the other two, dropped where they were polled (checked in `Drop`)"
        );
    }

    #[test]
    fn a_128_field_tuple_projects() {
        // Both halves of the impls (the second invocation starts at 65 fields).
        let mut all = pin!((
            0u8, 1u8, 2u8, 3u8, 4u8, 5u8, 6u8, 7u8, 8u8, 9u8, 10u8, 11u8, 12u8, 13u8, 14u8, 15u8, 16u8, 17u8, 18u8,
            19u8, 20u8, 21u8, 22u8, 23u8, 24u8, 25u8, 26u8, 27u8, 28u8, 29u8, 30u8, 31u8, 32u8, 33u8, 34u8, 35u8, 36u8,
            37u8, 38u8, 39u8, 40u8, 41u8, 42u8, 43u8, 44u8, 45u8, 46u8, 47u8, 48u8, 49u8, 50u8, 51u8, 52u8, 53u8, 54u8,
            55u8, 56u8, 57u8, 58u8, 59u8, 60u8, 61u8, 62u8, 63u8, 64u8, 65u8, 66u8, 67u8, 68u8, 69u8, 70u8, 71u8, 72u8,
            73u8, 74u8, 75u8, 76u8, 77u8, 78u8, 79u8, 80u8, 81u8, 82u8, 83u8, 84u8, 85u8, 86u8, 87u8, 88u8, 89u8, 90u8,
            91u8, 92u8, 93u8, 94u8, 95u8, 96u8, 97u8, 98u8, 99u8, 100u8, 101u8, 102u8, 103u8, 104u8, 105u8, 106u8,
            107u8, 108u8, 109u8, 110u8, 111u8, 112u8, 113u8, 114u8, 115u8, 116u8, 117u8, 118u8, 119u8, 120u8, 121u8,
            122u8, 123u8, 124u8, 125u8, 126u8, 127u8,
        ));
        let fields = all.as_mut().project();
        assert_eq!((*fields.0, *fields.63, *fields.64, *fields.127), (0, 63, 64, 127));
    }

    #[test]
    fn maybe_done_keeps_the_future_in_place_then_the_output() {
        let drops = Rc::new(Cell::new(0));
        let mut cx = Context::from_waker(Waker::noop());
        let mut slot = pin!(MaybeDone::new(Fixed::new(2, &drops)));
        assert_eq!(slot.as_mut().poll_done(&mut cx), Poll::Pending);
        assert_eq!(slot.as_mut().take_output(), None);
        assert_eq!(slot.as_mut().poll_done(&mut cx), Poll::Ready(()));
        assert_eq!(drops.get(), 1, "the future is dropped as soon as it is ready");
        assert_eq!(slot.as_mut().poll_done(&mut cx), Poll::Ready(()), "never polled again");
        assert_eq!(slot.as_mut().take_output(), Some(2));
        assert_eq!(slot.as_mut().take_output(), None);
    }

    #[test]
    fn take_err_takes_only_an_error() {
        let mut cx = Context::from_waker(Waker::noop());
        let mut ok = pin!(MaybeDone::new(async { Ok::<u8, &str>(1) }));
        let _ = ok.as_mut().poll_done(&mut cx);
        assert_eq!(ok.as_mut().take_err(), None);
        assert_eq!(ok.as_mut().take_output(), Some(Ok(1)));
        let mut err = pin!(MaybeDone::new(async { Err::<u8, &str>("e") }));
        assert_eq!(err.as_mut().take_err(), None, "not polled yet");
        let _ = err.as_mut().poll_done(&mut cx);
        assert_eq!(err.as_mut().take_err(), Some("e"));
        assert_eq!(err.as_mut().take_output(), None);
    }

    #[test]
    fn a_pending_future_is_dropped_in_place_with_its_tuple() {
        let drops = Rc::new(Cell::new(0));
        let mut cx = Context::from_waker(Waker::noop());
        {
            let mut two = pin!((
                MaybeDone::new(Fixed::new(9, &drops)),
                MaybeDone::new(Fixed::new(9, &drops))
            ));
            let (a, b) = two.as_mut().project();
            assert_eq!(a.poll_done(&mut cx), Poll::Pending);
            assert_eq!(b.poll_done(&mut cx), Poll::Pending);
        }
        assert_eq!(
            drops.get(),
            2,
            "both dropped where they were polled (checked in `Drop`)"
        );
    }
}
