//! A guard against hanging tests: a thread that stops the loop if the test takes too long.

use std::sync::atomic::{AtomicBool, Ordering::SeqCst};
use std::sync::{Arc, mpsc};
use std::thread::{self, JoinHandle};
use std::time::Duration;

use evloop::event_loop::RemoteHandle;

/// How often the watchdog stops the loop again once it has fired.
const REPEAT: Duration = Duration::from_millis(500);

/// Stops the loop from another thread (with [`RemoteHandle::stop`]) if the test takes longer
/// than `limit`, and keeps stopping it every 500 ms after that, in case the test runs the
/// loop again; [`Watchdog::finish`] reports whether it had to.
///
/// Dropping it without `finish` also stops and joins its thread.
pub struct Watchdog {
    cancel: Option<mpsc::Sender<()>>,
    fired: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Watchdog {
    /// Starts the watchdog thread for the loop of `remote`, firing after `limit`.
    pub fn start(remote: RemoteHandle, limit: Duration) -> Watchdog {
        let (tx, rx) = mpsc::channel::<()>();
        let fired = Arc::new(AtomicBool::new(false));
        let f = fired.clone();
        let thread = thread::spawn(move || {
            let mut wait = limit;
            while let Err(mpsc::RecvTimeoutError::Timeout) = rx.recv_timeout(wait) {
                f.store(true, SeqCst);
                let _ = remote.stop();
                wait = REPEAT;
            }
        });
        Watchdog {
            cancel: Some(tx),
            fired,
            thread: Some(thread),
        }
    }

    /// Stops the watchdog; `true` if it fired (the test hung).
    pub fn finish(mut self) -> bool {
        self.stop_thread();
        self.fired.load(SeqCst)
    }

    fn stop_thread(&mut self) {
        self.cancel.take();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for Watchdog {
    fn drop(&mut self) {
        self.stop_thread();
    }
}
