//! A stream whose transport is closing: `drain` yields, then reports the closed connection
//! (asyncio, bpo-25441), so a `write` + `drain` loop ends instead of spinning forever with the
//! connection-lost callback never getting a turn.

use std::io;
use std::os::fd::AsFd;

use evloop::net::TcpListener;
use evloop::{
    event_loop::EventLoop,
    io::{AsyncReadExt, AsyncWriteExt},
    streams::{StreamReader, StreamWriter},
};
use evloop_syscalls as sys;
use evloop_tests::run_bounded;

// This file's `#[test]` is its binary root's `contract_test`: the built-in one in the `io`
// binary, the simulated kernel's in the `sim` binary, which includes this file too.
use crate::contract_test as test;

/// Writes and drains until `drain` fails, at most `limit` times; returns the error and how many
/// rounds it took (`None` if every drain succeeded: the bug).
async fn write_and_drain_until_error(w: &StreamWriter, limit: usize) -> Option<(io::Error, usize)> {
    for round in 1..=limit {
        w.write(b"are you still there?");
        if let Err(e) = w.drain().await {
            return Some((e, round));
        }
    }
    None
}

#[test]
fn drain_after_close_yields_and_then_reports_the_closed_connection() {
    let lp = EventLoop::new().unwrap();
    let h = lp.handle();
    run_bounded(&lp, async move {
        let server = evloop::streams::start_server(
            |r: StreamReader, w: StreamWriter| async move {
                let _ = r.read_to_end().await;
                drop(w);
            },
            "127.0.0.1",
            0,
        )
        .await
        .unwrap();
        let port = server.local_addr().port();
        let (_r, w) = evloop::streams::open_connection("127.0.0.1", port).await.unwrap();
        w.close();
        let iterations = h.stats().iterations;
        let (e, rounds) = write_and_drain_until_error(&w, 1000)
            .await
            .expect("drain kept succeeding on a closed stream");
        println!("drain after close: {e} (round {rounds})");
        assert_eq!(e.kind(), io::ErrorKind::ConnectionReset, "{e}");
        assert_eq!(rounds, 1, "the first drain after close reports it");
        assert!(
            h.stats().iterations > iterations,
            "drain yielded to the loop, so connection_lost could run"
        );
        w.wait_closed().await.unwrap();
        // flush (AsyncWrite) is drain: it fails the same way.
        let mut w = w;
        let e = w.flush().await.unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::ConnectionReset, "{e}");
        server.close();
    });
}

#[test]
fn a_write_and_drain_loop_ends_when_the_peer_resets_the_connection() {
    let lp = EventLoop::new().unwrap();
    run_bounded(&lp, async move {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let server = evloop::spawn(async move {
            let (mut s, _) = listener.accept().await.unwrap();
            // Once the client is surely connected (it sent something), reset: SO_LINGER 0 makes
            // the close send RST instead of FIN.
            let mut hello = [0u8; 5];
            s.read_exact(&mut hello).await.unwrap();
            sys::set_linger_zero(s.socket().as_fd()).unwrap();
            drop(s);
        });
        let (_r, w) = evloop::streams::open_connection("127.0.0.1", port).await.unwrap();
        w.write(b"hello");
        w.drain().await.unwrap();
        server.await.unwrap();
        let (e, rounds) = write_and_drain_until_error(&w, 10_000)
            .await
            .expect("write + drain kept succeeding after the peer reset the connection");
        println!("after the peer's reset: {e} (round {rounds})");
        assert!(
            matches!(e.kind(), io::ErrorKind::ConnectionReset | io::ErrorKind::BrokenPipe),
            "{e}"
        );
        assert!(w.is_closing());
        let e = w.wait_closed().await.unwrap_err();
        println!("wait_closed: {e}");
    });
}
