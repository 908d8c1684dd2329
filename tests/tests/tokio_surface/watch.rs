//! `watch` with tokio's semantics: latest value only, `changed` per receiver, `send` fails with
//! no receiver but `send_modify`/`send_replace` always work, the sender's drop ends `changed`.

use std::time::Duration;

use evloop::event_loop::Builder;
use evloop::sync::watch;
use evloop::time::timeout;

fn virtual_run<T: 'static>(fut: impl Future<Output = T> + 'static) -> T {
    Builder::new().virtual_clock(true).run(fut).unwrap()
}

#[test]
fn receivers_see_the_latest_value_not_every_value() {
    virtual_run(async {
        let (tx, mut rx) = watch::channel(0);
        tx.send(1).unwrap();
        tx.send(2).unwrap();
        rx.changed().await.unwrap();
        assert_eq!(*rx.borrow(), 2);
        assert!(
            timeout(Duration::from_secs(1), rx.changed()).await.is_err(),
            "seen already"
        );
    });
}

#[test]
fn every_receiver_wakes_on_a_change_and_errs_after_the_sender_goes() {
    virtual_run(async {
        let (tx, rx) = watch::channel("a");
        let tasks: Vec<_> = (0..3)
            .map(|_| {
                let mut rx = rx.clone();
                evloop::spawn(async move {
                    rx.changed().await.unwrap();
                    let v = *rx.borrow_and_update();
                    (v, rx.changed().await.is_err())
                })
            })
            .collect();
        evloop::task::yield_now().await;
        tx.send("b").unwrap();
        evloop::task::yield_now().await;
        drop(tx);
        for t in tasks {
            assert_eq!(t.await.unwrap(), ("b", true));
        }
    });
}

#[test]
fn a_change_before_the_sender_drop_is_still_seen() {
    virtual_run(async {
        let (tx, mut rx) = watch::channel(0);
        tx.send(1).unwrap();
        drop(tx);
        assert!(rx.changed().await.is_ok());
        assert!(rx.changed().await.is_err());
    });
}

#[test]
fn send_without_receivers_fails_but_send_modify_and_send_replace_work() {
    let (tx, rx) = watch::channel(1);
    drop(rx);
    assert_eq!(tx.send(2).unwrap_err().0, 2);
    assert_eq!(*tx.borrow(), 1, "the failed send kept the old value");
    tx.send_modify(|v| *v += 10);
    assert_eq!(tx.send_replace(5), 11);
    let rx = tx.subscribe();
    assert_eq!((*rx.borrow(), rx.has_changed()), (5, Ok(false)));
}

#[test]
fn send_if_modified_notifies_only_on_true() {
    virtual_run(async {
        let (tx, mut rx) = watch::channel(0);
        assert!(!tx.send_if_modified(|_| false));
        assert!(timeout(Duration::from_secs(1), rx.changed()).await.is_err());
        assert!(tx.send_if_modified(|v| {
            *v = 7;
            true
        }));
        rx.changed().await.unwrap();
        assert_eq!(*rx.borrow(), 7);
    });
}

#[test]
fn sender_closed_waits_for_every_receiver() {
    virtual_run(async {
        let (tx, rx) = watch::channel(());
        let rx2 = rx.clone();
        evloop::spawn(async move {
            evloop::time::sleep(Duration::from_secs(1)).await;
            drop(rx);
            evloop::time::sleep(Duration::from_secs(1)).await;
            drop(rx2);
        });
        let start = evloop::time::Instant::now();
        tx.closed().await;
        assert_eq!(start.elapsed(), Duration::from_secs(2));
        assert!(tx.is_closed());
    });
}

#[test]
fn wait_for_checks_the_current_value_first() {
    virtual_run(async {
        let (_tx, mut rx) = watch::channel(3);
        assert_eq!(*rx.wait_for(|v| *v == 3).await.unwrap(), 3);
    });
}
