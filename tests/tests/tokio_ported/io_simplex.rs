//! `io::simplex` and `SimplexStream` (tokio 1.4x): tokio has no test file of its own for them
//! beyond io_panic.rs's zero-capacity panics (ported here with the panic location checked as
//! tokio checks it); the rest asserts the behaviour tokio documents.

use evloop::io::{AsyncReadExt, AsyncWriteExt, SimplexStream, simplex};

/// tokio/tests/io_panic.rs `simplex_zero_capacity_panic_caller` and
/// `new_unsplit_zero_capacity_panic_caller`: the panic points at the caller.
#[test]
fn zero_capacity_panics_at_the_caller() {
    for f in [(|| drop(simplex(0))) as fn(), || drop(SimplexStream::new_unsplit(0))] {
        let location = std::sync::Arc::new(std::sync::Mutex::new(None));
        let seen = location.clone();
        let prev = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            *seen.lock().unwrap() = info.location().map(|l| l.file().to_string());
        }));
        let r = std::panic::catch_unwind(f);
        std::panic::set_hook(prev);
        assert!(r.is_err());
        assert_eq!(location.lock().unwrap().as_deref(), Some(file!()));
    }
}

#[evloop::test]
async fn bytes_flow_one_way_and_shutdown_ends_the_stream() {
    let (mut rd, mut wr) = simplex(8);
    wr.write_all(b"hello").await.unwrap();
    wr.shutdown().await.unwrap();
    let mut got = Vec::new();
    rd.read_to_end(&mut got).await.unwrap();
    assert_eq!(got, b"hello");
    assert_eq!(wr.write(b"x").await.unwrap_err().kind(), std::io::ErrorKind::BrokenPipe);
}

#[evloop::test]
async fn a_full_pipe_makes_the_writer_wait_for_the_reader() {
    let (mut rd, mut wr) = simplex(4);
    let writer = evloop::spawn(async move {
        wr.write_all(b"more than four bytes").await.unwrap();
        wr.shutdown().await.unwrap();
    });
    let mut got = String::new();
    rd.read_to_string(&mut got).await.unwrap();
    writer.await.unwrap();
    assert_eq!(got, "more than four bytes");
}
