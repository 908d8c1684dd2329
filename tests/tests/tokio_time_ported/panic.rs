//! tokio 1.54's tests/time_panic.rs: a misused time function panics at the caller's line, not
//! inside the runtime (`#[track_caller]`). 4 of its 6 tests run, each on one evloop loop where
//! tokio loops over its runtime flavours. The two left, `timeout_panic_caller` and
//! `timeout_at_panic_caller`, build a tokio runtime without a timer (`enable_time` off) and
//! expect `timeout` to panic there; every evloop loop has its timers, so there is nothing to
//! refuse. They needed `#[track_caller]` on `interval` and `interval_at`.

use std::error::Error;
use std::time::Duration;

use evloop::time::{self, Instant, interval, interval_at};

/// tokio's tests/support/panic.rs: runs `func`, returns the file its panic named, if it panicked.
/// One change: a panic inside `run_until_complete` is caught by the loop (the task ends
/// `Panicked` and the call returns it as an error) where tokio's `block_on` unwinds, so the hook's
/// record counts whether or not the panic reached `catch_unwind`; and `func` is wrapped in
/// `AssertUnwindSafe` (an `EventLoop` is not `UnwindSafe`: it holds `RefCell`s). Another
/// thread's panic while the hook is set is not printed (as with tokio's helper).
fn test_panic<Func: FnOnce()>(func: Func) -> Option<String> {
    use std::sync::{Arc, Mutex};
    static PANIC_MUTEX: Mutex<()> = Mutex::new(());
    let _guard = PANIC_MUTEX.lock();
    let panic_file: Arc<Mutex<Option<String>>> = Arc::new(Mutex::new(None));
    let prev_hook = std::panic::take_hook();
    {
        let panic_file = panic_file.clone();
        // Only this thread's panics: the binary's other tests (some `should_panic`) run at the
        // same time, and the hook is the process's (tokio's time_panic.rs has a binary of its own).
        let me = std::thread::current().id();
        std::panic::set_hook(Box::new(move |panic_info| {
            if std::thread::current().id() != me {
                return;
            }
            let panic_location = panic_info.location().unwrap();
            panic_file
                .lock()
                .unwrap()
                .clone_from(&Some(panic_location.file().to_string()));
        }));
    }
    let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(func));
    std::panic::set_hook(prev_hook);
    panic_file.lock().unwrap().clone()
}

fn current_thread() -> evloop::event_loop::EventLoop {
    evloop::event_loop::EventLoop::new().unwrap()
}

#[test]
fn pause_panic_caller() -> Result<(), Box<dyn Error>> {
    let rt = current_thread();
    let panic_location_file = test_panic(|| {
        let _ = rt.run_until_complete(async {
            time::pause();
            time::pause();
        });
    });

    // The panic location should be in this file
    assert_eq!(&panic_location_file.unwrap(), file!());

    Ok(())
}

#[test]
fn resume_panic_caller() -> Result<(), Box<dyn Error>> {
    let panic_location_file = test_panic(|| {
        let rt = current_thread();
        let _ = rt.run_until_complete(async {
            time::resume();
        });
    });

    // The panic location should be in this file
    assert_eq!(&panic_location_file.unwrap(), file!());

    Ok(())
}

#[test]
fn interval_panic_caller() -> Result<(), Box<dyn Error>> {
    let panic_location_file = test_panic(|| {
        let _ = interval(Duration::from_millis(0));
    });

    // The panic location should be in this file
    assert_eq!(&panic_location_file.unwrap(), file!());

    Ok(())
}

#[test]
fn interval_at_panic_caller() -> Result<(), Box<dyn Error>> {
    let panic_location_file = test_panic(|| {
        let _ = interval_at(Instant::now(), Duration::from_millis(0));
    });

    // The panic location should be in this file
    assert_eq!(&panic_location_file.unwrap(), file!());

    Ok(())
}
