//! `io::simplex` and `SimplexStream` (tokio 1.4x): tokio has no test file of its own for them
//! beyond io_panic.rs's zero-capacity panics (in io_panic.rs here); these assert the behaviour
//! tokio documents.

use evloop::io::{AsyncReadExt, AsyncWriteExt, simplex};

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
