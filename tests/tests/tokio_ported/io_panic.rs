//! tokio/tests/io_panic.rs: tokio's constructors and `ReadBuf` methods panic at their caller
//! (`#[track_caller]`). Changed beyond imports: `RW` implements evloop's `poll_read`, and
//! support/panic.rs's `test_panic` is written here. Not ported: the four `AsyncFd` tests (they
//! build a tokio runtime without its I/O driver; an evloop `AsyncFd` outside a loop is an error,
//! not a panic).

use evloop::io::{self, AsyncRead, AsyncWrite, ReadBuf, SimplexStream, simplex, split};
use std::task::{Context, Poll};
use std::{error::Error, pin::Pin};

/// tokio's tests/support/panic.rs: runs `func`, returns the file its panic points at.
fn test_panic<Func: FnOnce() + std::panic::UnwindSafe>(func: Func) -> Option<String> {
    use std::sync::{Arc, Mutex};
    static PANIC_MUTEX: Mutex<()> = Mutex::new(());

    let _guard = PANIC_MUTEX.lock();
    let panic_file: Arc<Mutex<Option<String>>> = Arc::new(Mutex::new(None));

    let prev_hook = std::panic::take_hook();
    {
        let panic_file = panic_file.clone();
        std::panic::set_hook(Box::new(move |panic_info| {
            let panic_location = panic_info.location().unwrap();
            panic_file
                .lock()
                .unwrap()
                .clone_from(&Some(panic_location.file().to_string()));
        }));
    }

    let result = std::panic::catch_unwind(func);
    // Return to the previously set panic hook (maybe default) so that we get nice error
    // messages in the tests.
    std::panic::set_hook(prev_hook);

    if result.is_err() {
        panic_file.lock().unwrap().clone()
    } else {
        None
    }
}

struct RW;

impl AsyncRead for RW {
    fn poll_read(self: Pin<&mut Self>, _cx: &mut Context<'_>, buf: &mut [u8]) -> Poll<io::Result<usize>> {
        buf[0] = b'z';
        Poll::Ready(Ok(1))
    }
}

impl AsyncWrite for RW {
    fn poll_write(self: Pin<&mut Self>, _cx: &mut Context<'_>, _buf: &[u8]) -> Poll<Result<usize, io::Error>> {
        Poll::Ready(Ok(1))
    }

    fn poll_flush(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<Result<(), io::Error>> {
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<Result<(), io::Error>> {
        Poll::Ready(Ok(()))
    }
}

#[test]
fn read_buf_initialize_unfilled_to_panic_caller() -> Result<(), Box<dyn Error>> {
    let panic_location_file = test_panic(|| {
        let mut buffer = Vec::<u8>::new();
        let mut read_buf = ReadBuf::new(&mut buffer);

        read_buf.initialize_unfilled_to(2);
    });

    // The panic location should be in this file
    assert_eq!(&panic_location_file.unwrap(), file!());

    Ok(())
}

#[test]
fn read_buf_advance_panic_caller() -> Result<(), Box<dyn Error>> {
    let panic_location_file = test_panic(|| {
        let mut buffer = Vec::<u8>::new();
        let mut read_buf = ReadBuf::new(&mut buffer);

        read_buf.advance(2);
    });

    // The panic location should be in this file
    assert_eq!(&panic_location_file.unwrap(), file!());

    Ok(())
}

#[test]
fn read_buf_set_filled_panic_caller() -> Result<(), Box<dyn Error>> {
    let panic_location_file = test_panic(|| {
        let mut buffer = Vec::<u8>::new();
        let mut read_buf = ReadBuf::new(&mut buffer);

        read_buf.set_filled(2);
    });

    // The panic location should be in this file
    assert_eq!(&panic_location_file.unwrap(), file!());

    Ok(())
}

#[test]
fn read_buf_put_slice_panic_caller() -> Result<(), Box<dyn Error>> {
    let panic_location_file = test_panic(|| {
        let mut buffer = Vec::<u8>::new();
        let mut read_buf = ReadBuf::new(&mut buffer);

        let new_slice = [0x40_u8, 0x41_u8];

        read_buf.put_slice(&new_slice);
    });

    // The panic location should be in this file
    assert_eq!(&panic_location_file.unwrap(), file!());

    Ok(())
}

#[test]
fn unsplit_panic_caller() -> Result<(), Box<dyn Error>> {
    let panic_location_file = test_panic(|| {
        let (r1, _w1) = split(RW);
        let (_r2, w2) = split(RW);
        r1.unsplit(w2);
    });

    // The panic location should be in this file
    assert_eq!(&panic_location_file.unwrap(), file!());

    Ok(())
}

/// tokio 1.4x's io_panic.rs `simplex_zero_capacity_panic_caller`.
#[test]
fn simplex_zero_capacity_panic_caller() -> Result<(), Box<dyn Error>> {
    let panic_location_file = test_panic(|| {
        let _ = simplex(0);
    });

    // The panic location should be in this file
    assert_eq!(&panic_location_file.unwrap(), file!());

    Ok(())
}

/// tokio 1.4x's io_panic.rs `new_unsplit_zero_capacity_panic_caller`.
#[test]
fn new_unsplit_zero_capacity_panic_caller() -> Result<(), Box<dyn Error>> {
    let panic_location_file = test_panic(|| {
        let _ = SimplexStream::new_unsplit(0);
    });

    // The panic location should be in this file
    assert_eq!(&panic_location_file.unwrap(), file!());

    Ok(())
}
