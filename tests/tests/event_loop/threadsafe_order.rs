//! `call_soon_threadsafe` is FIFO with `call_soon`, as in asyncio (whose version appends to the
//! same ready deque): on the loop's own thread it behaves exactly as `call_soon`, and a callback
//! another thread scheduled before a `call_soon` runs before it. (It used to go through the
//! remote queue even on the loop's thread, so `call_soon(1)`, `call_soon_threadsafe(2)`,
//! `call_soon(3)` ran 1, 3, 2.)

use std::sync::{Arc, Mutex};

use evloop::event_loop::EventLoop;
use evloop_tests::{run_one, spin_once};

type Order = Arc<Mutex<Vec<u32>>>;

fn rec(order: &Order, n: u32) -> impl FnOnce() + Send + 'static + use<> {
    let o = order.clone();
    move || o.lock().unwrap().push(n)
}

fn taken(order: &Order) -> Vec<u32> {
    std::mem::take(&mut *order.lock().unwrap())
}

#[test]
fn call_soon_threadsafe_on_the_loops_thread_is_fifo_with_call_soon() {
    let lp = EventLoop::new().unwrap();
    let order: Order = Arc::default();
    // Before the loop runs, through the LoopHandle and through a RemoteHandle.
    lp.call_soon(rec(&order, 1)).unwrap();
    lp.call_soon_threadsafe(rec(&order, 2)).unwrap();
    lp.call_soon(rec(&order, 3)).unwrap();
    lp.remote().call_soon_threadsafe(rec(&order, 4)).unwrap();
    lp.call_soon(rec(&order, 5)).unwrap();
    run_one(&lp);
    assert_eq!(taken(&order), [1, 2, 3, 4, 5]);

    // From a callback, while the loop runs.
    let (h, o) = (lp.handle(), order.clone());
    lp.call_soon(move || {
        h.call_soon(rec(&o, 1)).unwrap();
        h.call_soon_threadsafe(rec(&o, 2)).unwrap();
        h.remote().call_soon_threadsafe(rec(&o, 3)).unwrap();
        h.call_soon(rec(&o, 4)).unwrap();
    })
    .unwrap();
    run_one(&lp);
    run_one(&lp);
    assert_eq!(taken(&order), [1, 2, 3, 4]);
}

#[test]
fn a_callback_another_thread_scheduled_first_runs_before_a_later_call_soon() {
    let lp = EventLoop::new().unwrap();
    spin_once(&lp);
    let order: Order = Arc::default();
    lp.call_soon(rec(&order, 1)).unwrap();
    let remote = lp.remote();
    let o = order.clone();
    std::thread::spawn(move || remote.call_soon_threadsafe(rec(&o, 2)).unwrap())
        .join()
        .unwrap();
    lp.call_soon(rec(&order, 3)).unwrap();
    run_one(&lp);
    assert_eq!(taken(&order), [1, 2, 3]);
}

#[test]
fn call_soon_threadsafe_on_a_closed_loop_is_an_error_from_every_handle() {
    let lp = EventLoop::new().unwrap();
    let h = lp.handle();
    let remote = lp.remote();
    lp.close().unwrap();
    assert!(h.call_soon_threadsafe(|| {}).is_err());
    assert!(remote.call_soon_threadsafe(|| {}).is_err());
}
