//! Beyond tokio's files: `Notify::notify_last` with nobody waiting. tokio's own tests of the
//! sync methods added beside the I/O surface (`notify_last`, broadcast `len`/`closed`/`new`)
//! now run with their whole files in tests/tests/tokio_sync_ported.

use evloop::sync::Notify;

use crate::task::spawn;

/// With nobody waiting, `notify_last` stores the permit as `notify_one`.
#[test]
fn notify_last_without_waiters_stores_a_permit() {
    let notify = Notify::new();
    notify.notify_last();
    let mut notified = spawn(async { notify.notified().await });
    assert_ready!(notified.poll());
}
