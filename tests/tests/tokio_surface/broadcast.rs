//! `broadcast` with tokio's semantics: every receiver gets every value, a slow receiver gets
//! `Lagged(n)` and resumes at the oldest value kept, sends without receivers fail, the channel
//! closes with its last sender, values are dropped once every receiver read them.

use std::rc::Rc;
use std::time::Duration;

use evloop::event_loop::Builder;
use evloop::sync::broadcast::{
    self,
    error::{RecvError, TryRecvError},
};
use evloop::time::timeout;

fn virtual_run<T: 'static>(fut: impl Future<Output = T> + 'static) -> T {
    Builder::new().virtual_clock(true).run(fut).unwrap()
}

#[test]
fn tokio_lagged_example_capacity_two() {
    virtual_run(async {
        let (tx, mut rx) = broadcast::channel(2);
        tx.send(10).unwrap();
        tx.send(20).unwrap();
        tx.send(30).unwrap();
        assert_eq!(rx.recv().await, Err(RecvError::Lagged(1)));
        assert_eq!(rx.recv().await, Ok(20));
        assert_eq!(rx.recv().await, Ok(30));
    });
}

#[test]
fn capacity_rounds_up_to_a_power_of_two() {
    let (tx, mut rx) = broadcast::channel(3); // 4 slots
    for i in 0..4 {
        tx.send(i).unwrap();
    }
    assert_eq!(rx.try_recv(), Ok(0));
    for i in 4..9 {
        tx.send(i).unwrap();
    }
    assert_eq!(rx.try_recv(), Err(TryRecvError::Lagged(4)));
    assert_eq!(rx.try_recv(), Ok(5));
}

#[test]
fn send_without_receivers_fails_and_is_not_kept_for_later_subscribers() {
    let (tx, rx) = broadcast::channel(4);
    drop(rx);
    assert_eq!(tx.send(1).unwrap_err().0, 1);
    let mut late = tx.subscribe();
    assert_eq!(late.try_recv(), Err(TryRecvError::Empty));
    assert_eq!(tx.send(2), Ok(1));
    assert_eq!(late.try_recv(), Ok(2));
}

#[test]
fn waiting_receivers_all_wake_and_close_after_draining() {
    virtual_run(async {
        let (tx, rx) = broadcast::channel(8);
        let tasks: Vec<_> = (0..3)
            .map(|_| {
                let mut rx = rx.resubscribe();
                evloop::spawn(async move {
                    let mut got = Vec::new();
                    loop {
                        match rx.recv().await {
                            Ok(v) => got.push(v),
                            Err(RecvError::Closed) => return got,
                            Err(e) => panic!("{e}"),
                        }
                    }
                })
            })
            .collect();
        drop(rx);
        evloop::task::yield_now().await;
        for i in 0..3 {
            tx.send(i).unwrap();
            evloop::time::sleep(Duration::from_millis(1)).await;
        }
        drop(tx);
        for t in tasks {
            assert_eq!(t.await.unwrap(), [0, 1, 2]);
        }
    });
}

#[test]
fn a_dropped_recv_loses_nothing() {
    virtual_run(async {
        let (tx, mut rx) = broadcast::channel(4);
        assert!(timeout(Duration::from_secs(1), rx.recv()).await.is_err());
        tx.send("kept").unwrap();
        assert_eq!(rx.recv().await, Ok("kept"));
    });
}

#[test]
fn values_are_dropped_once_every_receiver_read_them_or_left() {
    let (tx, mut a) = broadcast::channel(4);
    let b = tx.subscribe();
    let v = Rc::new(());
    tx.send(v.clone()).unwrap();
    assert_eq!(Rc::strong_count(&v), 2);
    drop(a.try_recv().unwrap());
    assert_eq!(Rc::strong_count(&v), 2, "b has not read it");
    drop(b);
    assert_eq!(Rc::strong_count(&v), 1, "nobody left to read it");
}

#[test]
fn len_and_closed() {
    let (tx, rx) = broadcast::channel(2);
    for i in 0..5 {
        tx.send(i).unwrap();
    }
    assert_eq!(rx.len(), 5, "lagged: more than the capacity");
    assert!(!rx.is_closed());
    drop(tx);
    assert!(rx.is_closed());
}
