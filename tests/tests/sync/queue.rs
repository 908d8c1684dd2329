//! `evloop::sync::queue::Queue`: asyncio's `Queue`, `LifoQueue` and `PriorityQueue` (with Python 3.13's
//! `shutdown`), plus what evloop adds: FIFO-fair waiters served by hand-over, and cancellation
//! safety at every await point (a dropped getter never loses an item, a dropped putter never
//! keeps a slot).
//!
//! The second half ports the cases of CPython's `Lib/test/test_asyncio/test_queues.py` to Rust,
//! each named after what it checks. "Let the other tasks run" is [`settle`]: a few
//! `yield_now()`s, each one loop iteration.

use std::cell::Cell;
use std::rc::Rc;
use std::time::Duration;

use evloop::sync::queue::{Get, Put};
use evloop::{
    event_loop::{EventLoop, get_running_loop},
    spawn,
    sync::queue::{Queue, QueueShutDown, TaskDoneError, TryGetError, TryPutError},
    task::{Task, yield_now},
    time::timeout,
};
use evloop_tests::{Log, Rng, entries, log, run_bounded, run_on_new_loop, settle, spin_once};

// ---------------------------------------------------------------------------------------------
// Helpers (this file only).

/// A task that gets one item and records it.
fn getter<T: Clone + 'static>(q: &Queue<T>, got: &Log<T>) -> Task<Result<T, QueueShutDown>> {
    let (q, got) = (q.clone(), got.clone());
    spawn(async move {
        let r = q.get().await;
        if let Ok(v) = &r {
            got.borrow_mut().push(v.clone());
        }
        r
    })
}

/// A task that puts one item and records it once the put completed.
fn putter<T: Clone + 'static>(q: &Queue<T>, item: T, done: &Log<T>) -> Task<Result<(), QueueShutDown<T>>> {
    let (q, done) = (q.clone(), done.clone());
    spawn(async move {
        q.put(item.clone()).await?;
        done.borrow_mut().push(item);
        Ok(())
    })
}

/// The three kinds of queue, for the tests every kind must pass.
fn kinds(maxsize: usize) -> Vec<(&'static str, Queue<String>)> {
    vec![
        ("fifo", Queue::new(maxsize)),
        ("lifo", Queue::lifo(maxsize)),
        ("priority", Queue::priority(maxsize)),
    ]
}

// ---------------------------------------------------------------------------------------------
// Order.

#[test]
fn fifo_queue_gives_items_in_put_order() {
    let q = Queue::new(0);
    for i in [1, 3, 2] {
        q.put_nowait(i).unwrap();
    }
    let items: Vec<i32> = (0..3).map(|_| q.get_nowait().unwrap()).collect();
    assert_eq!(items, [1, 3, 2]);
}

#[test]
fn lifo_queue_gives_the_newest_item_first() {
    let q = Queue::lifo(0);
    for i in [1, 3, 2] {
        q.put_nowait(i).unwrap();
    }
    let items: Vec<i32> = (0..3).map(|_| q.get_nowait().unwrap()).collect();
    assert_eq!(items, [2, 3, 1]);
}

#[test]
fn priority_queue_gives_the_smallest_first_and_equal_items_in_put_order() {
    /// Ordered by `priority` only: `tag` tells equal items apart.
    #[derive(Debug, Clone, PartialEq, Eq)]
    struct Job {
        priority: u8,
        tag: &'static str,
    }
    impl Ord for Job {
        fn cmp(&self, other: &Self) -> std::cmp::Ordering {
            self.priority.cmp(&other.priority)
        }
    }
    impl PartialOrd for Job {
        fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
            Some(self.cmp(other))
        }
    }
    let q = Queue::priority(0);
    for (priority, tag) in [(2, "a"), (1, "b"), (3, "c"), (1, "d"), (2, "e"), (1, "f")] {
        q.put_nowait(Job { priority, tag }).unwrap();
    }
    let tags: Vec<&str> = (0..6).map(|_| q.get_nowait().unwrap().tag).collect();
    assert_eq!(tags, ["b", "d", "f", "a", "e", "c"]);

    // The same through the awaited API, with many equal items (a heap is not stable by itself).
    let q = Queue::priority(0);
    let out = run_on_new_loop(async move {
        for i in 0..50u32 {
            q.put((i % 3, i)).await.unwrap();
        }
        let mut out = Vec::new();
        for _ in 0..50 {
            out.push(q.get().await.unwrap());
        }
        out
    });
    let mut expected: Vec<(u32, u32)> = (0..50).map(|i| (i % 3, i)).collect();
    expected.sort();
    assert_eq!(out, expected);
}

#[test]
fn empty_full_qsize_and_maxsize_follow_the_items() {
    let q = Queue::new(0);
    assert!(q.empty());
    assert!(!q.full(), "an unbounded queue is never full");
    assert_eq!(q.maxsize(), 0);
    q.put_nowait(1).unwrap();
    assert!(!q.empty());
    assert_eq!(q.qsize(), 1);
    assert_eq!(q.get_nowait(), Ok(1));
    assert!(q.empty());

    let q = Queue::new(1);
    assert_eq!(q.maxsize(), 1);
    assert!(!q.full());
    q.put_nowait(1).unwrap();
    assert!(q.full());
}

// ---------------------------------------------------------------------------------------------
// Waiting.

#[test]
fn bounded_put_waits_while_full_and_gets_release_putters_in_fifo_order() {
    let (order, done) = run_on_new_loop(async {
        let q = Queue::new(1);
        q.put_nowait("first").unwrap();
        let done = log();
        let putters: Vec<_> = ["a", "b", "c"].iter().map(|&s| putter(&q, s, &done)).collect();
        settle(3).await;
        assert!(entries(&done).is_empty(), "every putter waits while the queue is full");
        assert_eq!(q.qsize(), 1);
        let mut order = Vec::new();
        for _ in 0..4 {
            order.push(q.get().await.unwrap());
            settle(2).await; // the released putter runs and stores its item
        }
        for p in putters {
            p.await.unwrap().unwrap();
        }
        (order, entries(&done))
    });
    assert_eq!(order, ["first", "a", "b", "c"]);
    assert_eq!(
        done,
        ["a", "b", "c"],
        "putters complete in the order they started waiting"
    );
}

#[test]
fn get_waits_until_an_item_is_put_and_getters_are_served_in_fifo_order() {
    let got = run_on_new_loop(async {
        let q: Queue<u32> = Queue::new(0);
        let got = log();
        let getters: Vec<_> = (0..3).map(|_| getter(&q, &got)).collect();
        settle(2).await;
        assert!(entries(&got).is_empty(), "every getter waits on an empty queue");
        for i in 10..13 {
            q.put(i).await.unwrap();
        }
        let mut results = Vec::new();
        for g in getters {
            results.push(g.await.unwrap().unwrap());
        }
        assert_eq!(results, [10, 11, 12], "the first getter to wait gets the first item");
        entries(&got)
    });
    assert_eq!(got, [10, 11, 12]);
}

#[test]
fn put_nowait_on_a_full_queue_gives_the_item_back() {
    let q = Queue::new(1);
    q.put_nowait(String::from("kept")).unwrap();
    match q.put_nowait(String::from("refused")) {
        Err(TryPutError::Full(item)) => assert_eq!(item, "refused"),
        other => panic!("expected Full with the item, got {other:?}"),
    }
    let err = q.put_nowait(String::from("again")).unwrap_err();
    assert!(err.is_full());
    assert!(err.to_string().contains("full"), "{err}");
    assert_eq!(err.into_inner(), "again");
    assert_eq!(q.qsize(), 1);
}

#[test]
fn get_nowait_on_an_empty_queue_is_queue_empty() {
    let q: Queue<u8> = Queue::new(0);
    assert_eq!(q.get_nowait(), Err(TryGetError::Empty));
    assert!(TryGetError::Empty.to_string().contains("empty"));
}

#[test]
fn a_slot_granted_to_a_waiting_putter_cannot_be_taken_by_put_nowait() {
    run_on_new_loop(async {
        let q = Queue::new(1);
        q.put_nowait(0).unwrap();
        let done = log();
        let p = putter(&q, 1, &done);
        settle(1).await;
        assert_eq!(
            q.get_nowait(),
            Ok(0),
            "frees the slot, granting it to the waiting putter"
        );
        assert_eq!(q.qsize(), 0);
        assert!(q.full(), "the granted slot counts as taken");
        assert!(matches!(q.put_nowait(99), Err(TryPutError::Full(99))), "no overtaking");
        p.await.unwrap().unwrap();
        assert_eq!(q.get_nowait(), Ok(1));
    });
}

#[test]
fn get_nowait_cannot_take_an_item_handed_to_a_waiting_getter() {
    run_on_new_loop(async {
        let q = Queue::new(0);
        let got = log();
        let g = getter(&q, &got);
        settle(1).await;
        q.put_nowait(7).unwrap();
        assert_eq!(q.qsize(), 1, "the handed item counts until its getter runs");
        assert_eq!(
            q.get_nowait(),
            Err(TryGetError::Empty),
            "it is promised to the waiting getter"
        );
        assert_eq!(g.await.unwrap(), Ok(7));
        assert!(q.empty());
    });
}

// ---------------------------------------------------------------------------------------------
// task_done and join.

#[test]
fn join_waits_until_every_item_put_is_marked_done() {
    let accumulated = run_on_new_loop(async {
        let q = Queue::new(0);
        for i in 0..100u32 {
            q.put_nowait(i).unwrap();
        }
        let total = Rc::new(Cell::new(0));
        let workers: Vec<_> = (0..2)
            .map(|_| {
                let (q, total) = (q.clone(), total.clone());
                spawn(async move {
                    while let Ok(i) = q.get().await {
                        total.set(total.get() + i);
                        q.task_done().unwrap();
                    }
                })
            })
            .collect();
        q.join().await;
        let at_join = total.get();
        q.shutdown(false);
        for w in workers {
            w.await.unwrap();
        }
        at_join
    });
    assert_eq!(accumulated, (0..100).sum::<u32>());
}

#[test]
fn join_on_a_queue_with_nothing_unfinished_returns_at_once() {
    run_on_new_loop(async {
        let q: Queue<u8> = Queue::new(0);
        q.join().await;
        q.join().await;
        q.put_nowait(1).unwrap();
        q.get_nowait().unwrap();
        q.task_done().unwrap();
        q.join().await;
    });
}

#[test]
fn join_is_released_by_the_last_task_done_not_by_the_last_get() {
    run_on_new_loop(async {
        let q = Queue::new(0);
        q.put_nowait(1).unwrap();
        q.put_nowait(2).unwrap();
        let joined = Rc::new(Cell::new(false));
        let j = {
            let (q, joined) = (q.clone(), joined.clone());
            spawn(async move {
                q.join().await;
                joined.set(true);
            })
        };
        q.get_nowait().unwrap();
        q.get_nowait().unwrap();
        settle(2).await;
        assert!(!joined.get(), "both items were taken but none is done");
        q.task_done().unwrap();
        settle(2).await;
        assert!(!joined.get());
        q.task_done().unwrap();
        j.await.unwrap();
        assert!(joined.get());
    });
}

#[test]
fn task_done_called_more_times_than_items_put_is_an_error_not_a_panic() {
    let q = Queue::new(0);
    assert_eq!(q.task_done(), Err(TaskDoneError));
    q.put_nowait("x").unwrap();
    q.get_nowait().unwrap();
    assert_eq!(q.task_done(), Ok(()));
    let err = q.task_done().unwrap_err();
    assert!(err.to_string().contains("task_done"), "{err}");
}

#[test]
fn a_cancelled_join_leaves_no_waiter_behind() {
    run_on_new_loop(async {
        let q = Queue::new(0);
        q.put_nowait(1).unwrap();
        assert!(timeout(Duration::from_millis(5), q.join()).await.is_err());
        q.get_nowait().unwrap();
        q.task_done().unwrap();
        q.join().await;
    });
}

// ---------------------------------------------------------------------------------------------
// Shutdown (Python 3.13).

#[test]
fn shutdown_of_an_empty_queue_wakes_a_waiting_getter_with_shut_down() {
    for (kind, q) in kinds(0) {
        run_on_new_loop(async move {
            let got = log();
            let g = getter(&q, &got);
            settle(1).await; // the getter waits before the shutdown
            q.shutdown(false);
            assert_eq!(q.qsize(), 0, "{kind}");
            q.join().await;
            assert_eq!(g.await.unwrap(), Err(QueueShutDown(())), "{kind}");
            assert!(q.put(String::from("data")).await.is_err(), "{kind}");
            assert!(
                matches!(q.put_nowait("data".into()), Err(TryPutError::ShutDown(_))),
                "{kind}"
            );
            assert_eq!(q.get().await, Err(QueueShutDown(())), "{kind}");
            assert_eq!(q.get_nowait(), Err(TryGetError::ShutDown), "{kind}");
            assert!(q.is_shut_down());
        });
    }
}

#[test]
fn shutdown_fails_a_waiting_putter_and_get_drains_the_items_then_fails() {
    for (kind, q) in kinds(1) {
        run_on_new_loop(async move {
            q.put_nowait("data".into()).unwrap();
            let joined = Rc::new(Cell::new(false));
            let join = {
                let (q, joined) = (q.clone(), joined.clone());
                spawn(async move {
                    q.join().await;
                    joined.set(true);
                })
            };
            let done = log();
            let put = putter(&q, String::from("data2"), &done);
            settle(1).await;
            assert!(!put.done(), "{kind}: the putter waits on the full queue");

            q.shutdown(false);
            assert_eq!(q.qsize(), 1, "{kind}: a non-immediate shutdown keeps the items");
            match put.await.unwrap() {
                Err(QueueShutDown(item)) => assert_eq!(item, "data2", "{kind}: the putter gets its item back"),
                Ok(()) => panic!("{kind}: a put after shutdown succeeded"),
            }
            assert_eq!(q.get().await.unwrap(), "data", "{kind}: get drains the remaining item");
            settle(1).await;
            assert!(!joined.get(), "{kind}: join still waits for task_done");
            assert!(q.put("data".into()).await.is_err());
            assert!(q.put_nowait("data".into()).is_err());
            assert_eq!(q.get().await, Err(QueueShutDown(())));
            assert_eq!(q.get_nowait(), Err(TryGetError::ShutDown));

            q.task_done().unwrap();
            join.await.unwrap();
            assert!(joined.get());
            assert_eq!(q.task_done(), Err(TaskDoneError), "{kind}: every task is done");
        });
    }
}

#[test]
fn immediate_shutdown_discards_the_items_and_counts_them_done_so_join_returns() {
    for (kind, q) in kinds(0) {
        run_on_new_loop(async move {
            q.put_nowait("data".into()).unwrap();
            let join = {
                let q = q.clone();
                spawn(async move { q.join().await })
            };
            q.shutdown(true);
            assert_eq!(q.qsize(), 0, "{kind}");
            join.await.unwrap();
            assert!(q.put("data".into()).await.is_err());
            assert!(q.put_nowait("data".into()).is_err());
            assert_eq!(q.get().await, Err(QueueShutDown(())));
            assert_eq!(q.get_nowait(), Err(TryGetError::ShutDown));
            assert_eq!(q.task_done(), Err(TaskDoneError), "{kind}: no task is left unfinished");
        });
    }
}

#[test]
fn immediate_shutdown_leaves_join_waiting_for_an_item_already_taken() {
    for (kind, q) in kinds(0) {
        run_on_new_loop(async move {
            q.put_nowait("data".into()).unwrap();
            q.put_nowait("data".into()).unwrap();
            let joined = Rc::new(Cell::new(false));
            let join = {
                let (q, joined) = (q.clone(), joined.clone());
                spawn(async move {
                    q.join().await;
                    joined.set(true);
                })
            };
            assert_eq!(q.get().await.unwrap(), "data");
            q.shutdown(true); // unfinished: 2 -> 1
            assert_eq!(q.qsize(), 0, "{kind}");
            settle(1).await;
            assert!(!joined.get(), "{kind}: the taken item is not done yet");
            assert_eq!(q.get_nowait(), Err(TryGetError::ShutDown));
            q.task_done().unwrap();
            assert_eq!(q.task_done(), Err(TaskDoneError));
            join.await.unwrap();
            assert!(joined.get());
        });
    }
}

#[test]
fn immediate_shutdown_wakes_every_waiting_getter_and_putter_with_shut_down() {
    run_on_new_loop(async {
        // Getters wait on an empty queue...
        let q: Queue<u32> = Queue::new(1);
        let got = log();
        let getters: Vec<_> = (0..3).map(|_| getter(&q, &got)).collect();
        settle(1).await;
        q.shutdown(true);
        for g in getters {
            assert_eq!(g.await.unwrap(), Err(QueueShutDown(())));
        }
        // ...putters on a full one.
        let q: Queue<u32> = Queue::new(1);
        q.put_nowait(0).unwrap();
        let done = log();
        let putters: Vec<_> = (1..4).map(|i| putter(&q, i, &done)).collect();
        settle(1).await;
        q.shutdown(true);
        let back: Vec<u32> = {
            let mut back = Vec::new();
            for p in putters {
                back.push(p.await.unwrap().unwrap_err().into_inner());
            }
            back
        };
        assert_eq!(back, [1, 2, 3], "every putter gets its own item back");
        assert!(entries(&done).is_empty());
        assert_eq!(q.qsize(), 0);
        q.join().await;
    });
}

#[test]
fn immediate_shutdown_discards_an_item_already_handed_to_a_getter() {
    run_on_new_loop(async {
        let q = Queue::new(0);
        let got = log();
        let g = getter(&q, &got);
        settle(1).await;
        q.put_nowait(5).unwrap(); // handed to the getter, which has not run yet
        q.shutdown(true);
        assert_eq!(g.await.unwrap(), Err(QueueShutDown(())));
        assert_eq!(q.qsize(), 0);
        q.join().await; // the discarded item was counted done
        assert_eq!(q.task_done(), Err(TaskDoneError));
    });
}

#[test]
fn non_immediate_shutdown_lets_a_getter_keep_an_item_already_handed_to_it() {
    run_on_new_loop(async {
        let q = Queue::new(0);
        let got = log();
        let g = getter(&q, &got);
        settle(1).await;
        q.put_nowait(5).unwrap();
        q.shutdown(false);
        assert_eq!(g.await.unwrap(), Ok(5));
    });
}

#[test]
fn a_putter_released_just_before_shutdown_fails_and_keeps_its_item() {
    run_on_new_loop(async {
        let q = Queue::new(1);
        q.put_nowait(0).unwrap();
        let done = log();
        let p = putter(&q, 1, &done);
        settle(1).await;
        q.get_nowait().unwrap(); // grants the slot; the putter has not run yet
        q.shutdown(false);
        assert_eq!(
            p.await.unwrap(),
            Err(QueueShutDown(1)),
            "put after shutdown fails (3.13)"
        );
        assert!(!q.full(), "the granted slot was released");
        assert_eq!(q.qsize(), 0);
    });
}

#[test]
fn put_after_shutdown_fails_with_the_item() {
    let q = Queue::new(0);
    q.shutdown(false);
    match q.put_nowait(vec![1, 2, 3]) {
        Err(TryPutError::ShutDown(v)) => assert_eq!(v, [1, 2, 3]),
        other => panic!("expected ShutDown with the item, got {other:?}"),
    }
    let back = run_on_new_loop(async move { q.put(vec![4]).await });
    assert_eq!(back.unwrap_err().into_inner(), [4]);
}

// ---------------------------------------------------------------------------------------------
// Cancellation at each await point.

#[test]
fn a_cancelled_waiting_getter_leaves_the_line() {
    run_on_new_loop(async {
        let q = Queue::new(5);
        assert!(timeout(Duration::from_millis(5), q.get()).await.is_err());
        assert!(!format!("{q:?}").contains("getters"), "{q:?}");
        q.put_nowait(1).unwrap();
        assert_eq!(q.qsize(), 1, "the item was stored, not handed to the cancelled getter");
        assert_eq!(q.get_nowait(), Ok(1));
    });
}

#[test]
fn a_cancelled_getter_does_not_lose_an_item_handed_to_it() {
    run_on_new_loop(async {
        let q = Queue::new(0);
        let got = log();
        let reader = getter(&q, &got);
        settle(1).await;
        q.put_nowait(1).unwrap(); // handed to the reader
        q.put_nowait(2).unwrap();
        reader.cancel();
        assert!(reader.await.is_err(), "the reader was cancelled before it ran");
        // If the next get gives 2, item 1 was lost.
        assert_eq!(q.get().await, Ok(1));
        assert_eq!(q.get().await, Ok(2));
        assert!(entries(&got).is_empty());
    });
}

#[test]
fn a_cancelled_getter_passes_its_item_to_the_next_waiting_getter() {
    run_on_new_loop(async {
        let q = Queue::new(0);
        let got = log();
        let r1 = getter(&q, &got);
        let r2 = getter(&q, &got);
        let r3 = getter(&q, &got);
        settle(1).await;
        q.put_nowait(1).unwrap();
        q.put_nowait(2).unwrap();
        r1.cancel();
        assert!(r1.await.is_err());
        let mut results = vec![r2.await.unwrap().unwrap(), r3.await.unwrap().unwrap()];
        results.sort();
        assert_eq!(results, [1, 2], "nothing lost, nothing duplicated");
        assert!(q.empty());
    });
}

#[test]
fn put_after_a_cancelled_waiting_getter_goes_to_the_next_getter() {
    run_on_new_loop(async {
        let q = Queue::new(0);
        let got = log();
        let t1 = getter(&q, &got);
        let t2 = getter(&q, &got);
        settle(1).await;
        t1.cancel();
        settle(1).await;
        assert!(t1.done());
        q.put("a").await.unwrap();
        assert_eq!(t2.await.unwrap(), Ok("a"));
    });
}

#[test]
fn a_getter_cancelled_by_timeout_after_the_item_was_handed_puts_it_back_in_order() {
    // FIFO: the handed item goes back in front of items put after it. LIFO: behind them (it is
    // the oldest). Priority: where its value puts it.
    for (kind, q, expected) in [
        ("fifo", Queue::new(0), ["a", "b", "c"]),
        ("lifo", Queue::lifo(0), ["c", "b", "a"]),
        ("priority", Queue::priority(0), ["a", "b", "c"]),
    ] {
        run_on_new_loop(async move {
            let got = log();
            let g = getter(&q, &got);
            settle(1).await;
            q.put_nowait("a").unwrap(); // handed to g
            q.put_nowait("b").unwrap();
            q.put_nowait("c").unwrap();
            g.cancel();
            assert!(g.await.is_err());
            let out: Vec<&str> = (0..3).map(|_| q.get_nowait().unwrap()).collect();
            assert_eq!(out, expected, "{kind}");
        });
    }
}

#[test]
fn two_cancelled_getters_give_their_items_back_in_put_order() {
    run_on_new_loop(async {
        let q = Queue::new(0);
        let got = log();
        let g1 = getter(&q, &got);
        let g2 = getter(&q, &got);
        settle(1).await;
        q.put_nowait(1).unwrap(); // -> g1
        q.put_nowait(2).unwrap(); // -> g2
        q.put_nowait(3).unwrap();
        // Both are dropped before they run, g1 first (tasks step in the order they were woken):
        // 1 goes back in front of 3, then 2 must go between them, not in front.
        g1.cancel();
        g2.cancel();
        settle(1).await;
        assert!(g1.done() && g2.done());
        let out: Vec<i32> = (0..3).map(|_| q.get_nowait().unwrap()).collect();
        assert_eq!(out, [1, 2, 3]);
    });
}

#[test]
fn a_cancelled_waiting_putter_leaves_the_line_and_its_item_is_not_put() {
    run_on_new_loop(async {
        let q = Queue::new(1);
        q.put_nowait(1).unwrap();
        let done = log();
        let p = putter(&q, 2, &done);
        settle(1).await;
        assert!(format!("{q:?}").contains("putters=1"), "{q:?}");
        p.cancel();
        assert!(p.await.is_err());
        assert!(!format!("{q:?}").contains("putters"), "{q:?}");
        assert_eq!(q.get_nowait(), Ok(1));
        assert_eq!(
            q.get_nowait(),
            Err(TryGetError::Empty),
            "the cancelled put did not happen"
        );
        assert!(!q.full(), "no slot stays reserved");
        q.put_nowait(3).unwrap();
    });
}

#[test]
fn a_cancelled_putter_whose_slot_was_granted_passes_the_slot_to_the_next_putter() {
    run_on_new_loop(async {
        let q = Queue::new(1);
        q.put_nowait("x").unwrap();
        let done = log();
        let pa = putter(&q, "a", &done);
        let pb = putter(&q, "b", &done);
        settle(1).await;
        assert_eq!(q.get_nowait(), Ok("x")); // grants the slot to pa, which has not run yet
        pa.cancel();
        assert!(pa.await.is_err());
        pb.await.unwrap().unwrap();
        assert_eq!(q.get_nowait(), Ok("b"));
        assert_eq!(entries(&done), ["b"]);
        assert!(!q.full());
    });
}

#[test]
fn a_cancelled_putter_whose_slot_was_granted_frees_the_slot_when_nobody_waits() {
    run_on_new_loop(async {
        let q = Queue::new(1);
        q.put_nowait(1).unwrap();
        let done = log();
        let writer = putter(&q, 2, &done);
        settle(1).await;
        assert_eq!(q.get_nowait(), Ok(1));
        writer.cancel();
        assert!(writer.await.is_err());
        // Try again: a stuck slot would make this wait forever.
        q.put(2).await.unwrap();
        assert_eq!(q.get_nowait(), Ok(2));
        assert_eq!(q.qsize(), 0);
        assert!(!q.full());
    });
}

#[test]
fn dropping_get_and_put_futures_at_every_await_point_loses_nothing_and_reserves_nothing() {
    // Deterministic random interleavings: tasks put and get unique items, and random tasks are
    // cancelled at random iterations (waiting, just served, or not yet started). At the end every
    // item that a put reported done is found exactly once: received by a getter or still queued.
    for seed in 1..=20u64 {
        let lp = EventLoop::new().unwrap();
        let mut rng = Rng::xorshift64(seed);
        let maxsize = 1 + rng.below(3) as usize;
        let q: Queue<u64> = Queue::new(maxsize);
        let put_done: Log<u64> = log();
        let got: Log<u64> = log();
        let mut tasks = Vec::new();
        let mut next = 0u64;
        for _ in 0..60 {
            for _ in 0..rng.below(4) {
                let t = if rng.below(2) == 0 {
                    next += 1;
                    let (q, d, item) = (q.clone(), put_done.clone(), next);
                    lp.create_task(async move {
                        if q.put(item).await.is_ok() {
                            d.borrow_mut().push(item);
                        }
                    })
                } else {
                    let (q, g) = (q.clone(), got.clone());
                    lp.create_task(async move {
                        if let Ok(v) = q.get().await {
                            g.borrow_mut().push(v);
                        }
                    })
                };
                tasks.push(t.unwrap());
            }
            for _ in 0..rng.below(3) {
                spin_once(&lp);
            }
            for t in &tasks {
                if rng.below(6) == 0 {
                    t.cancel();
                }
            }
        }
        for t in &tasks {
            t.cancel();
        }
        for _ in 0..3 {
            spin_once(&lp);
        }
        assert!(tasks.iter().all(|t| t.done()), "seed {seed}: every task finished");
        let mut seen = entries(&got);
        while let Ok(v) = q.get_nowait() {
            seen.push(v);
        }
        let mut put = entries(&put_done);
        put.sort_unstable();
        seen.sort_unstable();
        assert_eq!(seen, put, "seed {seed}: every item put is found exactly once");
        assert!(!q.full(), "seed {seed}: no slot stays reserved");
        for i in 0..maxsize {
            assert!(q.put_nowait(i as u64).is_ok(), "seed {seed}: slot {i} is free");
        }
        assert!(q.full());
        assert!(!format!("{q:?}").contains("getters") && !format!("{q:?}").contains("putters"));
    }
}

#[test]
fn futures_polled_by_hand_and_dropped_keep_the_queue_consistent() {
    use std::future::Future;
    use std::pin::Pin;
    use std::sync::Arc;
    use std::task::{Context, Poll, Wake, Waker};

    struct Noop;
    impl Wake for Noop {
        fn wake(self: Arc<Self>) {}
    }
    let waker = Waker::from(Arc::new(Noop));
    let mut cx = Context::from_waker(&waker);

    let q = Queue::new(2);
    let mut g1: Get<&str> = q.get();
    let mut g2: Get<&str> = q.get();
    assert!(Pin::new(&mut g1).poll(&mut cx).is_pending());
    assert!(Pin::new(&mut g2).poll(&mut cx).is_pending());
    q.put_nowait("a").unwrap(); // handed to g1
    q.put_nowait("b").unwrap(); // handed to g2
    assert!(q.full(), "handed items count until their getters take them");
    drop(g1); // "a" passes on... to nobody: back into the queue
    assert_eq!(q.qsize(), 2);
    assert_eq!(Pin::new(&mut g2).poll(&mut cx), Poll::Ready(Ok("b")));
    assert_eq!(q.get_nowait(), Ok("a"));

    let q = Queue::new(1);
    q.put_nowait("c").unwrap();
    let mut p1: Put<&str> = q.put("d");
    let mut p2: Put<&str> = q.put("e");
    assert!(Pin::new(&mut p1).poll(&mut cx).is_pending());
    assert!(Pin::new(&mut p2).poll(&mut cx).is_pending());
    assert_eq!(q.get_nowait(), Ok("c")); // grants p1
    drop(p1); // the slot goes to p2
    assert_eq!(Pin::new(&mut p2).poll(&mut cx), Poll::Ready(Ok(())));
    assert_eq!(q.get_nowait(), Ok("e"));
    assert!(!q.full());
}

// ---------------------------------------------------------------------------------------------
// Ports of CPython's test_asyncio/test_queues.py.

#[test]
fn putter_stops_after_maxsize_items_and_resumes_after_each_get() {
    // test_maxsize
    let have_been_put = run_on_new_loop(async {
        let q = Queue::new(2);
        assert_eq!(q.maxsize(), 2);
        let have_been_put = log();
        let t = {
            let (q, put) = (q.clone(), have_been_put.clone());
            spawn(async move {
                for i in 0..3 {
                    q.put(i).await.unwrap();
                    put.borrow_mut().push(i);
                }
                true
            })
        };
        settle(2).await;
        assert_eq!(entries(&have_been_put), [0, 1], "blocked after two items");
        assert_eq!(q.get().await, Ok(0));
        settle(1).await;
        assert_eq!(entries(&have_been_put), [0, 1, 2]);
        assert_eq!(q.get().await, Ok(1));
        assert_eq!(q.get().await, Ok(2));
        assert!(t.done());
        assert!(t.await.unwrap());
        entries(&have_been_put)
    });
    assert_eq!(have_been_put, [0, 1, 2]);
}

#[test]
fn get_from_a_full_queue_releases_the_waiting_putter() {
    // test_get_with_putters
    run_on_new_loop(async {
        let q = Queue::new(1);
        q.put(1).await.unwrap();
        let done = log();
        let p = putter(&q, 2, &done);
        settle(1).await;
        assert_eq!(q.get().await, Ok(1));
        assert_eq!(p.await.unwrap(), Ok(()));
        assert_eq!(q.get_nowait(), Ok(2));
    });
}

#[test]
fn blocking_get_returns_an_item_put_later_by_a_timer() {
    // test_blocking_get_wait
    run_on_new_loop(async {
        let q = Queue::new(0);
        let finished = Rc::new(Cell::new(false));
        let t = {
            let (q, finished) = (q.clone(), finished.clone());
            spawn(async move {
                let r = q.get().await;
                finished.set(true);
                r
            })
        };
        settle(1).await;
        assert!(!finished.get());
        let q2 = q.clone();
        get_running_loop()
            .unwrap()
            .call_later(Duration::from_millis(10), move || q2.put_nowait(1).unwrap())
            .unwrap();
        assert_eq!(t.await.unwrap(), Ok(1));
        assert!(finished.get());
    });
}

#[test]
fn get_with_a_timeout_that_does_not_expire_gets_the_item() {
    // test_get_cancelled
    run_on_new_loop(async {
        let q = Queue::new(0);
        let t = {
            let q = q.clone();
            spawn(async move { timeout(Duration::from_secs(5), q.get()).await })
        };
        settle(1).await;
        q.put_nowait(1).unwrap();
        assert_eq!(t.await.unwrap().unwrap(), Ok(1));
    });
}

#[test]
fn get_with_waiting_putters_returns_their_items_in_order() {
    // test_get_with_waiting_putters
    run_on_new_loop(async {
        let q = Queue::new(1);
        let done = log();
        let _a = putter(&q, "a", &done);
        let _b = putter(&q, "b", &done);
        assert_eq!(q.get().await, Ok("a"));
        assert_eq!(q.get().await, Ok("b"));
    });
}

#[test]
fn producer_and_consumer_on_a_one_slot_queue_both_finish() {
    // test_why_are_getters_waiting
    run_on_new_loop(async {
        let q = Queue::new(1);
        let producer = {
            let q = q.clone();
            spawn(async move {
                for i in 0..5 {
                    q.put(i).await.unwrap();
                }
            })
        };
        let consumer = {
            let q = q.clone();
            spawn(async move {
                let mut got = Vec::new();
                for _ in 0..5 {
                    got.push(q.get().await.unwrap());
                }
                got
            })
        };
        producer.await.unwrap();
        assert_eq!(consumer.await.unwrap(), [0, 1, 2, 3, 4]);
    });
}

#[test]
fn a_getter_draining_with_get_nowait_releases_every_waiting_putter() {
    // test_why_are_putters_waiting
    run_on_new_loop(async {
        let q = Queue::new(2);
        let g = {
            let q = q.clone();
            spawn(async move {
                yield_now().await;
                let n = q.qsize();
                for _ in 0..n {
                    q.get_nowait().unwrap();
                }
                n
            })
        };
        let done = log();
        let putters: Vec<_> = (0..4).map(|i| putter(&q, i, &done)).collect();
        assert_eq!(g.await.unwrap(), 2);
        for p in putters {
            p.await.unwrap().unwrap();
        }
        assert_eq!(entries(&done), [0, 1, 2, 3]);
        assert_eq!(q.qsize(), 2);
    });
}

#[test]
fn put_with_a_waiting_getter_hands_the_item_over() {
    // test_put_with_waiting_getters
    run_on_new_loop(async {
        let q = Queue::new(0);
        let got = log();
        let t = getter(&q, &got);
        settle(1).await;
        q.put("a").await.unwrap();
        assert_eq!(t.await.unwrap(), Ok("a"));
    });
}

#[test]
fn put_on_an_unbounded_queue_never_waits() {
    // test_blocking_put, test_put_cancelled
    run_on_new_loop(async {
        let q = Queue::new(0);
        let t = {
            let q = q.clone();
            spawn(async move {
                q.put(1).await.unwrap();
                true
            })
        };
        assert_eq!(q.get().await, Ok(1));
        assert!(t.done());
        assert!(t.await.unwrap());
    });
}

#[test]
fn blocking_put_resumes_when_a_timer_takes_an_item() {
    // test_blocking_put_wait
    run_on_new_loop(async {
        let q = Queue::new(1);
        let finished = Rc::new(Cell::new(false));
        let q2 = q.clone();
        get_running_loop()
            .unwrap()
            .call_later(Duration::from_millis(10), move || {
                q2.get_nowait().unwrap();
            })
            .unwrap();
        let t = {
            let (q, finished) = (q.clone(), finished.clone());
            spawn(async move {
                q.put(1).await.unwrap();
                q.put(2).await.unwrap();
                finished.set(true);
            })
        };
        settle(1).await;
        assert!(!finished.get());
        t.await.unwrap();
        assert!(finished.get());
    });
}

#[test]
fn cancelling_one_of_two_waiting_putters_keeps_the_other_in_line() {
    // test_put_cancelled_race
    run_on_new_loop(async {
        let q = Queue::new(1);
        let done = log();
        let put_a = putter(&q, "a", &done);
        let put_b = putter(&q, "b", &done);
        let put_c = putter(&q, "X", &done);
        settle(1).await;
        assert!(put_a.done());
        assert!(!put_b.done());
        put_c.cancel();
        settle(1).await;
        assert!(put_c.done());
        assert_eq!(q.get_nowait(), Ok("a"));
        settle(1).await;
        assert_eq!(q.get_nowait(), Ok("b"));
        put_b.await.unwrap().unwrap();
        assert_eq!(entries(&done), ["a", "b"]);
    });
}

#[test]
fn cancelling_a_putter_already_released_by_get_nowait_is_clean() {
    // test_cancelled_put_silence_value_error_exception
    run_on_new_loop(async {
        let q = Queue::new(1);
        q.put_nowait(1).unwrap();
        let done = log();
        let p = putter(&q, 1, &done);
        settle(1).await;
        q.get_nowait().unwrap();
        p.cancel();
        assert!(p.await.is_err(), "the cancel wins: the put did not happen");
        assert_eq!(q.qsize(), 0);
        assert!(!q.full());
    });
}

#[test]
fn cancelled_getters_are_not_held_in_the_line() {
    // test_cancelled_getters_not_being_held_in_self_getters
    run_on_new_loop(async {
        let q: Queue<u8> = Queue::new(5);
        for _ in 0..100 {
            assert!(timeout(Duration::from_micros(100), q.get()).await.is_err());
        }
        assert_eq!(format!("{q:?}"), "<Queue maxsize=5 qsize=0>");
    });
}

#[test]
fn debug_format_shows_maxsize_tasks_and_shutdown() {
    // test_format (asyncio's _format) and the shutdown variant
    let q: Queue<u8> = Queue::new(0);
    assert_eq!(format!("{q:?}"), "<Queue maxsize=0 qsize=0>");
    q.put_nowait(1).unwrap();
    q.put_nowait(2).unwrap();
    assert_eq!(format!("{q:?}"), "<Queue maxsize=0 qsize=2 tasks=2>");
    q.get_nowait().unwrap();
    q.get_nowait().unwrap();
    q.task_done().unwrap();
    q.task_done().unwrap();
    q.shutdown(false);
    assert_eq!(format!("{q:?}"), "<Queue maxsize=0 qsize=0 shutdown>");
    assert!(format!("{:?}", Queue::<u8>::lifo(3)).starts_with("<LifoQueue maxsize=3"));
    assert!(format!("{:?}", Queue::<u8>::priority(3)).starts_with("<PriorityQueue maxsize=3"));
}

#[test]
fn a_waiting_getter_is_reported_in_the_task_dump() {
    let lp = EventLoop::new().unwrap();
    let q: Queue<u8> = Queue::new(0);
    let q2 = q.clone();
    let t = lp.create_task(async move { q2.get().await }).unwrap();
    spin_once(&lp);
    assert!(lp.dump_tasks().contains("awaiting Queue::get"), "{}", lp.dump_tasks());
    q.put_nowait(1).unwrap();
    let r = run_bounded(&lp, t);
    assert_eq!(r.unwrap(), Ok(1));
}
