// Standalone binary: one test counts the process's fds, which tests in parallel threads would disturb.
//! Streams (`evloop::streams`): asyncio's `open_connection` / `start_server` with `StreamReader`
//! and `StreamWriter` on top of transports. Loopback and Unix sockets only; every test runs its
//! loop under [`run_bounded`] and closes its servers and connections.
//!
//! One test counts the process's fds; it takes [`serial`] while every other test of this file
//! holds [`serial_shared`], so no other test opens a socket while it counts.

use std::cell::{Cell, RefCell};
use std::fs;
use std::rc::Rc;
use std::time::Duration;

use evloop::net::UnixAddr;
use evloop::prelude::*;
use evloop::{
    event_loop::{EventLoop, ExceptionKind, get_running_loop},
    io::AsyncReadExt,
    protocol::Server,
    spawn,
    streams::{
        DEFAULT_LIMIT, StreamError, StreamReader, StreamWriter, open_connection, open_unix_connection, start_server,
        start_unix_server,
    },
    task::Promise,
    time::{sleep, timeout},
};
use evloop_tests::fds::open_fd_count;
use evloop_tests::net::abstract_name;
use evloop_tests::{pattern_byte, record_exceptions_with, run_bounded, serial, serial_shared, settle_for};
// `evloop::test` (the attribute) came in with the glob: this file's `#[test]` is its binary
// root's `contract_test`, the built-in one here (the line below, in this binary the root);
// the `sim` binary, which includes this file too, runs the tests on the simulated kernel
// with its own (sim/contracts.rs).
use crate::contract_test as test;
#[allow(
    unused_imports,
    reason = "the crate root's `contract_test` in this file's own binary only"
)]
use std::prelude::v1::test as contract_test;

// ---------------------------------------------------------------------------------------------
// Helpers (this file only).

/// Long enough for bytes written on loopback to reach the peer's reader.
const TO_THE_PEER: Duration = Duration::from_millis(20);

type Streams = (StreamReader, StreamWriter);

/// The seed-001 server (`serve_client` sends back `data.upper()`), line by line, with streams.
async fn upper(reader: StreamReader, writer: StreamWriter) {
    loop {
        let line = match reader.readline().await {
            Ok(line) if !line.is_empty() => line,
            _ => return,
        };
        writer.write(&line.to_ascii_uppercase());
        if writer.drain().await.is_err() {
            return;
        }
    }
}

/// A server and one connection to it: the client's streams and the server side's streams (the
/// handler hands them out instead of serving).
async fn stream_pair(limit: usize) -> (Server, Streams, Streams) {
    let accepted: Rc<RefCell<Vec<Streams>>> = Rc::new(RefCell::new(Vec::new()));
    let arrived: Promise<()> = get_running_loop().unwrap().create_future();
    let (slot, signal) = (accepted.clone(), arrived.clone());
    let handler = move |r: StreamReader, w: StreamWriter| {
        slot.borrow_mut().push((r, w));
        let _ = signal.set_result(());
        std::future::ready(())
    };
    let server = start_server(handler, "127.0.0.1", 0).limit(limit).await.unwrap();
    let port = server.local_addr().port();
    let client = open_connection("127.0.0.1", port).limit(limit).await.unwrap();
    arrived.wait().await.unwrap();
    let server_side = accepted.borrow_mut().pop().unwrap();
    (server, client, server_side)
}

fn pattern_chunk(start: usize, len: usize) -> Vec<u8> {
    (start..start + len).map(pattern_byte).collect()
}

// ---------------------------------------------------------------------------------------------
// Reading and writing.

#[test]
fn echo_line_by_line_with_the_seed_001_upper_casing_server() {
    let _g = serial_shared();
    let lp = EventLoop::new().unwrap();
    run_bounded(&lp.handle(), async {
        let server = start_server(upper, "127.0.0.1", 0).await.unwrap();
        let port = server.local_addr().port();
        let (reader, writer) = open_connection("127.0.0.1", port).await.unwrap();
        assert_eq!(
            writer.peer_addr().and_then(|a| a.as_inet()),
            Some(server.local_addr()),
            "peername is the server's address"
        );
        for line in ["hello\n", "evloop streams\n", "x\n", "\n"] {
            writer.write(line.as_bytes());
            writer.drain().await.unwrap();
            assert_eq!(reader.readline().await.unwrap(), line.to_uppercase().as_bytes());
        }
        // Several lines in one write come back one readline at a time.
        writer.writelines([&b"one\n"[..], b"two\nthree\n"]);
        for line in ["ONE\n", "TWO\n", "THREE\n"] {
            assert_eq!(reader.readline().await.unwrap(), line.as_bytes());
        }
        // Half-close: the handler sees the end, returns, and its streams close the connection.
        writer.write_eof();
        assert_eq!(reader.readline().await.unwrap(), b"", "EOF after the server closed");
        assert!(reader.at_eof());
        writer.close();
        writer.wait_closed().await.unwrap();
        server.close();
        server.wait_closed().await;
        assert_eq!(server.active_connections(), 0);
    });
    lp.close().unwrap();
}

#[test]
fn replies_to_pipelined_requests_leave_in_one_send() {
    use evloop::sys::{Syscall, counters};
    let _g = serial_shared();
    let lp = EventLoop::new().unwrap();
    run_bounded(&lp.handle(), async {
        let server = start_server(upper, "127.0.0.1", 0).await.unwrap();
        let port = server.local_addr().port();
        let (reader, writer) = open_connection("127.0.0.1", port).await.unwrap();
        // A round trip first, so the connection is fully set up before counting.
        writer.write(b"warm\n");
        assert_eq!(reader.readline().await.unwrap(), b"WARM\n");
        let requests: Vec<Vec<u8>> = (0..16).map(|i| format!("request {i}\n").into_bytes()).collect();
        counters::reset();
        writer.writelines(requests.iter().map(|r| &r[..]));
        for r in &requests {
            assert_eq!(reader.readline().await.unwrap(), r.to_ascii_uppercase());
        }
        let sends = counters::snapshot()[Syscall::Send];
        // The client's 16 lines leave in one send; the server reads them in one recv, answers
        // each with a write in the same task step, and the 16 replies leave in one send.
        assert_eq!(sends, 2, "sends for 16 pipelined requests and their replies: {sends}");
        writer.close();
        writer.wait_closed().await.unwrap();
        server.close();
        server.wait_closed().await;
    });
    lp.close().unwrap();
}

#[test]
fn reads_complete_on_data_arriving_in_pieces() {
    let _g = serial_shared();
    let lp = EventLoop::new().unwrap();
    run_bounded(&lp.handle(), async {
        let (server, (cr, _cw), (_sr, sw)) = stream_pair(DEFAULT_LIMIT).await;
        let cr = Rc::new(cr);

        // readline waits across pieces.
        let r = cr.clone();
        let t = spawn(async move { r.readline().await });
        sw.write(b"hel");
        settle_for(TO_THE_PEER).await;
        assert!(!t.done(), "readline returned without a newline");
        sw.write(b"lo\nwor");
        assert_eq!(t.await.unwrap().unwrap(), b"hello\n");
        assert_eq!(cr.buffered(), 3, "the bytes after the newline stay buffered");

        // readexactly waits until it has all n bytes.
        let r = cr.clone();
        let t = spawn(async move { r.readexactly(5).await });
        sw.write(b"l");
        settle_for(TO_THE_PEER).await;
        assert!(!t.done(), "readexactly(5) returned with 4 bytes");
        sw.write(b"d!!ab");
        assert_eq!(t.await.unwrap().unwrap(), b"world");

        // readuntil finds a separator split across two pieces.
        let r = cr.clone();
        let t = spawn(async move { r.readuntil(b"\r\n").await });
        sw.write(b"c\r");
        settle_for(TO_THE_PEER).await;
        assert!(!t.done(), "readuntil matched half a separator");
        sw.write(b"\ndef");
        assert_eq!(t.await.unwrap().unwrap(), b"!!abc\r\n");

        // read(n) returns at most n of what is there, without waiting for more.
        assert_eq!(cr.read(2).await.unwrap(), b"de");
        assert_eq!(cr.read(100).await.unwrap(), b"f");
        assert_eq!(cr.read(0).await.unwrap(), b"", "read(0) is empty and does not wait");
        // ... and waits when nothing is there.
        let r = cr.clone();
        let t = spawn(async move { r.read(100).await });
        settle_for(TO_THE_PEER).await;
        assert!(
            !t.done(),
            "read returned with an empty buffer before the end of the stream"
        );
        sw.write(b"xyz");
        assert_eq!(t.await.unwrap().unwrap(), b"xyz");

        sw.close();
        assert_eq!(cr.read(100).await.unwrap(), b"", "read at EOF is empty");
        assert!(cr.at_eof());
        server.close();
    });
    lp.close().unwrap();
}

#[test]
fn readexactly_at_eof_gives_the_partial_bytes() {
    let _g = serial_shared();
    let lp = EventLoop::new().unwrap();
    run_bounded(&lp.handle(), async {
        let (server, (cr, _cw), (_sr, sw)) = stream_pair(DEFAULT_LIMIT).await;
        sw.write(b"abc");
        sw.close();
        let err = cr.readexactly(10).await.unwrap_err();
        match &err {
            StreamError::Incomplete {
                op: "readexactly",
                partial,
                expected: Some(10),
            } => assert_eq!(partial, b"abc"),
            other => panic!("expected Incomplete, got {other:?}"),
        }
        assert_eq!(err.to_string(), "readexactly: the stream ended after 3 of 10 bytes");
        let io: std::io::Error = err.into();
        assert_eq!(io.kind(), std::io::ErrorKind::UnexpectedEof);
        assert!(cr.at_eof(), "the partial bytes were consumed");
        // readuntil at EOF: Incomplete without an expected count.
        match cr.readuntil(b"\n").await.unwrap_err() {
            StreamError::Incomplete {
                op: "readuntil",
                partial,
                expected: None,
            } => assert!(partial.is_empty()),
            other => panic!("expected Incomplete, got {other:?}"),
        }
        server.close();
    });
    lp.close().unwrap();
}

#[test]
fn an_end_of_stream_that_arrives_with_the_last_bytes_is_not_lost() {
    // Regression: the FIN is queued together with the bytes (the peer writes and closes in one
    // step), so epoll reports a single edge; the transport's short read must not stop there.
    let _g = serial_shared();
    let lp = EventLoop::new().unwrap();
    run_bounded(&lp.handle(), async {
        let (server, (cr, _cw), (_sr, sw)) = stream_pair(DEFAULT_LIMIT).await;
        sw.write(b"last line\n");
        sw.close();
        assert_eq!(cr.readline().await.unwrap(), b"last line\n");
        assert_eq!(cr.readline().await.unwrap(), b"", "the end of the stream was seen");
        assert!(cr.at_eof());
        server.close();
    });
    lp.close().unwrap();
}

#[test]
fn readuntil_limit_overrun_is_an_error_and_the_data_stays_readable() {
    let _g = serial_shared();
    let lp = EventLoop::new().unwrap();
    run_bounded(&lp.handle(), async {
        let (server, (cr, _cw), (_sr, sw)) = stream_pair(16).await;
        assert_eq!(cr.limit(), 16);
        let long: Vec<u8> = [vec![b'x'; 40], b"\nshort\n".to_vec()].concat();
        sw.write(&long);
        // Wait until it is all there, so the error and the buffer size are deterministic.
        while cr.buffered() < long.len() {
            settle_for(TO_THE_PEER).await;
        }
        let err = cr.readuntil(b"\n").await.unwrap_err();
        match err {
            StreamError::LimitOverrun {
                op: "readuntil",
                consumed,
                limit: 16,
            } => assert_eq!(consumed, 40, "the separator was found 40 bytes in"),
            ref other => panic!("expected LimitOverrun, got {other:?}"),
        }
        assert!(
            err.to_string()
                .starts_with("readuntil: no separator within the limit of 16 bytes")
        );
        assert_eq!(cr.buffered(), long.len(), "an overrun leaves the data in the buffer");
        // readline overruns the same way, and also keeps the data (asyncio would discard it).
        assert!(matches!(
            cr.readline().await,
            Err(StreamError::LimitOverrun { op: "readline", .. })
        ));
        assert_eq!(cr.buffered(), long.len());
        // The data is intact: skip the long line, then read lines normally.
        assert_eq!(cr.readexactly(41).await.unwrap(), &long[..41]);
        assert_eq!(cr.readline().await.unwrap(), b"short\n");

        // Not found and more than the limit buffered: an error as soon as the limit is passed.
        sw.write(&[b'y'; 20]);
        let err = cr.readuntil(b"\r\n").await.unwrap_err();
        assert!(
            matches!(err, StreamError::LimitOverrun { consumed, .. } if consumed > 16),
            "{err:?}"
        );
        let kept = cr.buffered();
        assert!(kept > 16);
        assert_eq!(cr.read(100).await.unwrap(), vec![b'y'; kept]);
        server.close();
    });
    lp.close().unwrap();
}

#[test]
fn buffer_limit_back_pressure_keeps_memory_bounded() {
    const TOTAL: usize = 10 * 1024 * 1024;
    const CHUNK: usize = 64 * 1024;
    /// One `recv` of the transport (its scratch buffer).
    const READ_CHUNK: usize = 64 * 1024;
    let _g = serial_shared();
    let lp = EventLoop::new().unwrap();
    run_bounded(&lp.handle(), async {
        let (server, (cr, _cw), (_sr, sw)) = stream_pair(DEFAULT_LIMIT).await;
        let limit = cr.limit();
        assert_eq!(limit, 64 * 1024);
        let bound = 2 * limit + READ_CHUNK;
        let sent = Rc::new(Cell::new(0usize));
        let s = sent.clone();
        let sender = spawn(async move {
            let mut off = 0;
            while off < TOTAL {
                sw.write(&pattern_chunk(off, CHUNK));
                off += CHUNK;
                sw.drain().await.unwrap();
                s.set(off);
            }
            sw.close();
            sw.wait_closed().await.unwrap();
        });

        // The reader does not read: the buffer fills to the pause threshold and stops there.
        let mut peak = 0;
        for _ in 0..100 {
            sleep(Duration::from_millis(3)).await;
            peak = peak.max(cr.buffered());
        }
        assert!(peak > 2 * limit, "reading paused above 2 x limit (peak {peak})");
        assert!(peak <= bound, "the buffer grew to {peak} bytes (bound {bound})");
        assert!(
            !cr.transport().unwrap().is_reading(),
            "the transport's reading is paused"
        );
        assert!(!sender.done(), "the sender is held back (sent {} bytes)", sent.get());
        assert!(sent.get() < TOTAL);

        // Reading resumes: everything arrives intact, and the buffer stays bounded.
        let mut got = 0usize;
        loop {
            let chunk = cr.read(CHUNK).await.unwrap();
            if chunk.is_empty() {
                break;
            }
            assert!(
                chunk.iter().enumerate().all(|(i, &b)| b == pattern_byte(got + i)),
                "corrupted data near offset {got}"
            );
            got += chunk.len();
            peak = peak.max(cr.buffered());
        }
        assert_eq!(got, TOTAL);
        assert!(peak <= bound, "the buffer grew to {peak} bytes (bound {bound})");
        sender.await.unwrap();
        server.close();
    });
    lp.close().unwrap();
}

#[test]
fn drain_blocks_while_the_peer_does_not_read_and_completes_when_it_does() {
    const TOTAL: usize = 16 * 1024 * 1024;
    let _g = serial_shared();
    let lp = EventLoop::new().unwrap();
    run_bounded(&lp.handle(), async {
        let (server, (_cr, cw), (sr, _sw)) = stream_pair(DEFAULT_LIMIT).await;
        let (high, low) = cw.transport().write_buffer_limits();
        cw.write(&pattern_chunk(0, TOTAL));
        settle_for(TO_THE_PEER).await;
        assert!(
            cw.write_buffer_size() > high,
            "the kernel took almost everything ({} bytes left): cannot test drain",
            cw.write_buffer_size()
        );
        assert!(
            timeout(Duration::from_millis(100), cw.drain()).await.is_err(),
            "drain returned while the peer reads nothing"
        );

        // The peer starts reading: drain completes.
        let reader = spawn(async move {
            let mut got = 0usize;
            loop {
                let chunk = sr.read(1 << 20).await.unwrap();
                if chunk.is_empty() {
                    return got;
                }
                assert!(chunk.iter().enumerate().all(|(i, &b)| b == pattern_byte(got + i)));
                got += chunk.len();
            }
        });
        cw.drain().await.unwrap();
        assert!(cw.write_buffer_size() <= low, "drain returned above the low-water mark");
        cw.close();
        cw.wait_closed().await.unwrap();
        assert_eq!(reader.await.unwrap(), TOTAL, "everything written arrived");
        server.close();
    });
    lp.close().unwrap();
}

#[test]
fn write_eof_gives_at_eof_on_the_peer_which_can_still_write_back() {
    let _g = serial_shared();
    let lp = EventLoop::new().unwrap();
    run_bounded(&lp.handle(), async {
        let (server, (cr, cw), (sr, sw)) = stream_pair(DEFAULT_LIMIT).await;
        assert!(cw.can_write_eof());
        cw.write(b"request");
        cw.write_eof();
        assert!(!cw.is_closing(), "a half-closed connection is not closing");
        assert_eq!(sr.read_to_end().await.unwrap(), b"request");
        assert!(sr.at_eof(), "the peer sees the end of the stream");
        // The half-closed peer still writes, and we still read.
        sw.write(b"response");
        sw.drain().await.unwrap();
        assert_eq!(cr.readexactly(8).await.unwrap(), b"response");
        assert!(!cr.at_eof());
        sw.close();
        assert_eq!(cr.read_to_end().await.unwrap(), b"");
        assert!(cr.at_eof());
        sw.wait_closed().await.unwrap();
        server.close();
        server.wait_closed().await;
    });
    lp.close().unwrap();
}

#[test]
fn close_then_wait_closed_flushes_and_resolves() {
    let _g = serial_shared();
    let lp = EventLoop::new().unwrap();
    run_bounded(&lp.handle(), async {
        let (server, (_cr, cw), (sr, sw)) = stream_pair(DEFAULT_LIMIT).await;
        cw.write(b"bye");
        cw.close();
        assert!(cw.is_closing());
        cw.close(); // idempotent
        cw.wait_closed().await.unwrap();
        let err = cw.drain().await.unwrap_err();
        assert_eq!(
            err.kind(),
            std::io::ErrorKind::ConnectionReset,
            "drain after close: {err}"
        );
        assert!(err.to_string().contains("drain"), "{err}");
        assert_eq!(
            sr.read_to_end().await.unwrap(),
            b"bye",
            "close flushed the write buffer"
        );
        assert!(!sw.is_closing(), "the peer stays half-open until it closes");
        sw.close();
        sw.wait_closed().await.unwrap();
        server.close();
        server.wait_closed().await;
        assert_eq!(server.active_connections(), 0);
    });
    lp.close().unwrap();
}

#[test]
fn dropping_both_streams_closes_the_connection() {
    let _g = serial_shared();
    let lp = EventLoop::new().unwrap();
    run_bounded(&lp.handle(), async {
        let (server, (cr, cw), (sr, sw)) = stream_pair(DEFAULT_LIMIT).await;
        sw.write(b"last words");
        drop(sw);
        settle_for(TO_THE_PEER).await;
        cw.write(b"still open\n");
        assert_eq!(
            sr.readline().await.unwrap(),
            b"still open\n",
            "one dropped half keeps it open"
        );
        drop(sr);
        // The server side's connection closed (the server counts it), and we saw its FIN.
        assert_eq!(cr.read_to_end().await.unwrap(), b"last words");
        server.close();
        server.wait_closed().await;
        // Our side is half-closed until we drop both of ours too.
        let transport = cw.transport().clone();
        assert!(!transport.is_closing());
        drop((cr, cw));
        assert!(transport.is_closing(), "dropping both streams closed the transport");
    });
    lp.close().unwrap();
}

#[test]
fn a_reset_connection_is_an_error_naming_the_peer_after_the_buffered_bytes() {
    let _g = serial_shared();
    let lp = EventLoop::new().unwrap();
    run_bounded(&lp.handle(), async {
        let (server, (cr, cw), (_sr, sw)) = stream_pair(DEFAULT_LIMIT).await;
        sw.write(b"hi");
        while cr.buffered() < 2 {
            settle_for(TO_THE_PEER).await;
        }
        // Closing a socket with unread bytes in its kernel queue sends RST.
        sw.transport().pause_reading();
        cw.write(b"never read");
        settle_for(TO_THE_PEER).await;
        sw.transport().abort();
        while cr.exception().is_none() {
            settle_for(TO_THE_PEER).await;
        }
        assert_eq!(
            cr.read(10).await.unwrap(),
            b"hi",
            "buffered bytes come before the error"
        );
        let err = cr.read(10).await.unwrap_err();
        let io: std::io::Error = err.into();
        assert_eq!(io.kind(), std::io::ErrorKind::ConnectionReset, "{io}");
        let peer = server.local_addr().to_string();
        assert!(io.to_string().starts_with("read: the connection to "), "{io}");
        assert!(io.to_string().contains(&peer), "{io}");
        let err = cw.drain().await.unwrap_err();
        assert_eq!(err.kind(), std::io::ErrorKind::ConnectionReset, "{err}");
        assert!(err.to_string().starts_with("drain: "), "{err}");
        assert!(cw.wait_closed().await.is_err(), "wait_closed reports the failure");
        server.close();
    });
    lp.close().unwrap();
}

#[test]
fn a_second_concurrent_read_is_an_error_not_a_panic() {
    let _g = serial_shared();
    let lp = EventLoop::new().unwrap();
    run_bounded(&lp.handle(), async {
        let (server, (cr, _cw), (_sr, sw)) = stream_pair(DEFAULT_LIMIT).await;
        let cr = Rc::new(cr);
        let r = cr.clone();
        let first = spawn(async move { r.read(10).await });
        settle_for(TO_THE_PEER).await;
        let err = cr.readline().await.unwrap_err();
        assert!(matches!(err, StreamError::ReadInProgress { op: "readline" }), "{err:?}");
        assert!(err.to_string().starts_with("readline: another read"));
        sw.write(b"x\n");
        assert_eq!(first.await.unwrap().unwrap(), b"x\n");
        // With the first read done, reading works again.
        sw.write(b"y\n");
        assert_eq!(cr.readline().await.unwrap(), b"y\n");
        server.close();
    });
    lp.close().unwrap();
}

#[test]
fn streams_work_with_async_read_ext_and_async_write_ext() {
    let _g = serial_shared();
    let lp = EventLoop::new().unwrap();
    run_bounded(&lp.handle(), async {
        let (server, (mut cr, mut cw), (mut sr, sw)) = stream_pair(DEFAULT_LIMIT).await;
        let big = pattern_chunk(0, 1 << 20);
        cw.write_all(&big).await.unwrap();
        cw.flush().await.unwrap();
        cw.shutdown().await.unwrap();
        assert!(
            cw.write_all(b"more").await.is_err(),
            "writing after shutdown is an error"
        );
        let mut got = vec![0u8; big.len()];
        sr.read_exact(&mut got).await.unwrap();
        assert!(got == big);
        let mut rest = Vec::new();
        assert_eq!(AsyncReadExt::read_to_end(&mut sr, &mut rest).await.unwrap(), 0);
        sw.write(b"ok");
        sw.close();
        let mut buf = [0u8; 8];
        assert_eq!(AsyncReadExt::read(&mut cr, &mut buf).await.unwrap(), 2);
        assert_eq!(&buf[..2], b"ok");
        assert_eq!(AsyncReadExt::read(&mut cr, &mut buf).await.unwrap(), 0, "EOF");
        server.close();
    });
    lp.close().unwrap();
}

// ---------------------------------------------------------------------------------------------
// Servers and connections.

#[test]
fn a_panicking_handler_is_reported_and_the_server_keeps_serving() {
    let _g = serial_shared();
    let lp = EventLoop::new().unwrap();
    let h = lp.handle();
    let seen = record_exceptions_with(&h, |_, ctx| ctx.kind);
    run_bounded(&h, async {
        let calls = Rc::new(Cell::new(0));
        let handler = move |r: StreamReader, w: StreamWriter| {
            let n = calls.get();
            calls.set(n + 1);
            async move {
                if n == 0 {
                    let _line = r.readline().await;
                    panic!("handler failure on purpose (expected by the test)");
                }
                upper(r, w).await
            }
        };
        let server = start_server(handler, "127.0.0.1", 0).await.unwrap();
        let port = server.local_addr().port();
        let (r1, w1) = open_connection("127.0.0.1", port).await.unwrap();
        w1.write(b"boom\n");
        assert_eq!(
            r1.readline().await.unwrap(),
            b"",
            "the failed handler's connection is closed"
        );
        let (r2, w2) = open_connection("127.0.0.1", port).await.unwrap();
        w2.write(b"still serving\n");
        assert_eq!(r2.readline().await.unwrap(), b"STILL SERVING\n");
        drop((r1, w1, r2, w2));
        server.close();
        server.wait_closed().await;
    });
    assert_eq!(seen.borrow().as_slice(), &[ExceptionKind::TaskFailureUnobserved]);
    lp.close().unwrap();
}

#[test]
fn a_server_on_a_loop_with_eager_tasks_serves_too() {
    // The handler's task then starts inside the protocol's connection_made callback.
    let _g = serial_shared();
    let lp = EventLoop::builder().eager_tasks(true).build().unwrap();
    run_bounded(&lp.handle(), async {
        let server = start_server(upper, "127.0.0.1", 0).await.unwrap();
        let port = server.local_addr().port();
        let (r, w) = open_connection("127.0.0.1", port).await.unwrap();
        for _ in 0..3 {
            w.write(b"eager\n");
            assert_eq!(r.readline().await.unwrap(), b"EAGER\n");
        }
        drop((r, w));
        server.close();
        server.wait_closed().await;
    });
    lp.close().unwrap();
}

#[test]
fn two_hundred_concurrent_connections_through_one_server_and_fds_back_to_baseline() {
    const CLIENTS: usize = 200;
    let _g = serial();
    let before = open_fd_count();
    let lp = EventLoop::new().unwrap();
    run_bounded(&lp.handle(), async {
        let server = start_server(upper, "127.0.0.1", 0).await.unwrap();
        let port = server.local_addr().port();
        let connected = Rc::new(Cell::new(0usize));
        let all_connected: Promise<()> = get_running_loop().unwrap().create_future();
        let mut clients = Vec::new();
        for i in 0..CLIENTS {
            let (connected, all) = (connected.clone(), all_connected.clone());
            clients.push(spawn(async move {
                let (r, w) = open_connection("127.0.0.1", port).await.unwrap();
                connected.set(connected.get() + 1);
                if connected.get() == CLIENTS {
                    all.set_result(()).unwrap();
                }
                // Every client is connected at once before any of them talks.
                all.wait().await.unwrap();
                let line = format!("client {i}\n");
                w.write(line.as_bytes());
                w.drain().await.unwrap();
                assert_eq!(r.readline().await.unwrap(), line.to_uppercase().as_bytes());
                w.close();
                w.wait_closed().await.unwrap();
            }));
        }
        for c in clients {
            c.await.unwrap();
        }
        server.close();
        server.wait_closed().await;
        assert_eq!(server.active_connections(), 0);
    });
    lp.close().unwrap();
    drop(lp);
    assert_eq!(open_fd_count(), before, "fds not back to the baseline");
}

#[test]
fn connecting_to_a_closed_port_is_econnrefused_naming_the_address() {
    let _g = serial_shared();
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let lp = EventLoop::new().unwrap();
    let err = run_bounded(&lp.handle(), async move {
        open_connection("127.0.0.1", port).await.unwrap_err()
    });
    assert_eq!(err.kind(), std::io::ErrorKind::ConnectionRefused, "{err}");
    let msg = err.to_string();
    assert!(msg.contains(&format!("127.0.0.1:{port}")), "{msg}");
    lp.close().unwrap();
}

#[test]
fn open_connection_to_localhost_resolves_through_the_executor() {
    let _g = serial_shared();
    let lp = EventLoop::new().unwrap();
    let h = lp.handle();
    let h2 = h.clone();
    run_bounded(&h, async move {
        assert_eq!(h2.stats().executor_threads, 0);
        let server = start_server(upper, "127.0.0.1", 0).await.unwrap();
        let port = server.local_addr().port();
        let (r, w) = open_connection("localhost", port).await.unwrap();
        assert!(
            h2.stats().executor_threads >= 1,
            "the name was resolved on the executor"
        );
        w.write(b"resolved\n");
        assert_eq!(r.readline().await.unwrap(), b"RESOLVED\n");
        drop((r, w));
        server.close();
        server.wait_closed().await;
    });
    lp.close().unwrap();
}

/// Echo through a Unix-socket server at `addr`.
async fn unix_echo(addr: UnixAddr) {
    let server = start_unix_server(upper, &addr).await.unwrap();
    let (r, w) = open_unix_connection(&addr).await.unwrap();
    w.write(b"over a unix socket\n");
    assert_eq!(r.readline().await.unwrap(), b"OVER A UNIX SOCKET\n");
    w.write_eof();
    assert_eq!(r.read_to_end().await.unwrap(), b"");
    w.close();
    w.wait_closed().await.unwrap();
    server.close();
    server.wait_closed().await;
}

#[test]
fn unix_socket_streams_on_a_temp_dir_path() {
    let _g = serial_shared();
    let path = std::env::temp_dir().join(format!("evloop-streams-{}.sock", std::process::id()));
    let _ = fs::remove_file(&path);
    let lp = EventLoop::new().unwrap();
    let addr = UnixAddr::pathname(&path).unwrap();
    run_bounded(&lp.handle(), unix_echo(addr.clone()));
    assert!(!path.exists(), "Server::close removed the socket file");
    // Nothing listens there any more.
    let err = run_bounded(
        &lp.handle(),
        async move { open_unix_connection(&addr).await.unwrap_err() },
    );
    assert!(err.to_string().contains(&path.display().to_string()), "{err}");
    lp.close().unwrap();
}

#[test]
fn unix_socket_streams_on_an_abstract_name() {
    let _g = serial_shared();
    let addr = abstract_name("streams");
    let lp = EventLoop::new().unwrap();
    run_bounded(&lp.handle(), unix_echo(addr));
    lp.close().unwrap();
}
