//! tokio/tests/io_util_empty.rs, io_sink.rs, io_repeat.rs and io_mem_stream.rs's
//! `duplex_is_cooperative`: the streams that never wait still yield to other tasks (the budget
//! of ready operations), so a `biased` select on them against `yield_now` ends.

use evloop::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt};
use evloop::task::yield_now;

use super::run;

#[test]
fn empty_read_is_cooperative() {
    run(async {
        evloop::select! {
            biased;
            _ = async {
                loop {
                    let mut buf = [0u8; 4096];
                    let _ = evloop::io::empty().read(&mut buf).await;
                }
            } => {},
            _ = yield_now() => {}
        }
    });
}

#[test]
fn empty_buf_reads_are_cooperative() {
    run(async {
        evloop::select! {
            biased;
            _ = async {
                loop {
                    let mut buf = String::new();
                    let _ = evloop::io::empty().read_line(&mut buf).await;
                }
            } => {},
            _ = yield_now() => {}
        }
    });
}

#[test]
fn sink_poll_write_is_cooperative() {
    run(async {
        evloop::select! {
            biased;
            _ = async {
                loop {
                    let buf = [1, 2, 3];
                    evloop::io::sink().write_all(&buf).await.unwrap();
                }
            } => {},
            _ = yield_now() => {}
        }
    });
}

#[test]
fn sink_poll_flush_and_shutdown_are_cooperative() {
    run(async {
        evloop::select! {
            biased;
            _ = async {
                loop {
                    evloop::io::sink().flush().await.unwrap();
                    evloop::io::sink().shutdown().await.unwrap();
                }
            } => {},
            _ = yield_now() => {}
        }
    });
}

#[test]
fn repeat_poll_read_is_cooperative() {
    run(async {
        evloop::select! {
            biased;
            _ = async {
                loop {
                    let mut buf = [0u8; 4096];
                    evloop::io::repeat(1).read_exact(&mut buf).await.unwrap();
                }
            } => {},
            _ = yield_now() => {}
        }
    });
}

#[test]
fn duplex_is_cooperative() {
    run(async {
        let (mut tx, mut rx) = evloop::io::duplex(1024 * 8);
        evloop::select! {
            biased;
            _ = async {
                loop {
                    let buf = [3u8; 4096];
                    tx.write_all(&buf).await.unwrap();
                    let mut buf = [0u8; 4096];
                    let _ = rx.read(&mut buf).await.unwrap();
                }
            } => {},
            _ = yield_now() => {}
        }
    });
}

#[test]
fn empty_writes_are_accepted() {
    run(async {
        let mut e = evloop::io::empty();
        assert_eq!(e.write(b"abc").await.unwrap(), 3);
        let mut all = Vec::new();
        assert_eq!(e.read_to_end(&mut all).await.unwrap(), 0);
    });
}
