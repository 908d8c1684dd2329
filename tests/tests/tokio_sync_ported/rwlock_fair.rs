//! evloop's own test of the `RwLock`'s order around a downgrade, which tokio's sync_rwlock.rs
//! checks for one reader only: the readers queued behind the writer get in, a writer queued
//! after them still waits for them, and the readers behind that writer wait for it.

use evloop::sync::RwLock;

use crate::task::spawn;

#[test]
fn a_downgrade_lets_the_readers_in_and_keeps_the_order_behind_them() {
    let lock = RwLock::new(0);
    let mut w1 = lock.try_write().unwrap();
    let mut r1 = spawn(lock.read());
    let mut w2 = spawn(lock.write());
    let mut r2 = spawn(lock.read());
    assert_pending!(r1.poll());
    assert_pending!(w2.poll());
    assert_pending!(r2.poll());

    *w1 = 1;
    let read1 = w1.downgrade();
    assert!(r1.is_woken());
    let read2 = assert_ready!(r1.poll());
    assert_eq!((*read1, *read2), (1, 1));
    assert_pending!(w2.poll()); // two readers hold the lock
    assert_pending!(r2.poll()); // behind the waiting writer

    drop(read1);
    drop(read2);
    assert!(w2.is_woken());
    let mut write2 = assert_ready!(w2.poll());
    *write2 = 2;
    assert_pending!(r2.poll());
    drop(write2);
    assert_eq!(*assert_ready!(r2.poll()), 2);
}
