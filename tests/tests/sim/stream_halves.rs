//! The asyncio stream halves on the simulated kernel: through the byte-stream traits
//! (`AsyncReadExt`, `AsyncWriteExt`; net_streams.rs's test of them writes 1 MiB before its peer
//! reads, which only Linux's loopback autotuning buffers, as contracts.rs says, so this one reads
//! while it writes, through buffers the simulated kernel keeps small), and dropped one at a time
//! (the writer alone half-closes, both close).
//!
//! Data flow: a client's halves from `open_connection` talk to the halves a server's handler
//! hands over to the test through a shared slot; each test asserts what the other side reads.
#![cfg(feature = "simulation")]

use std::cell::RefCell;
use std::rc::Rc;

use evloop::io::{AsyncReadExt, AsyncWriteExt};
use evloop::streams::{StreamReader, StreamWriter, open_connection, start_server};

/// A server whose handler hands its halves to the test; the client's halves; the server's.
async fn pair() -> (
    evloop::protocol::Server,
    (StreamReader, StreamWriter),
    (StreamReader, StreamWriter),
) {
    let accepted: Rc<RefCell<Option<(StreamReader, StreamWriter)>>> = Rc::default();
    let slot = accepted.clone();
    let handler = move |r: StreamReader, w: StreamWriter| {
        *slot.borrow_mut() = Some((r, w));
        std::future::ready(())
    };
    let server = start_server(handler, "127.0.0.1", 0).await.unwrap();
    let port = server.local_addr().port();
    let client = open_connection("127.0.0.1", port).await.unwrap();
    let accepted = loop {
        if let Some(pair) = accepted.borrow_mut().take() {
            break pair;
        }
        evloop::time::sleep(std::time::Duration::from_millis(1)).await;
    };
    (server, client, accepted)
}

fn pattern(len: usize) -> Vec<u8> {
    (0..len).map(|i| (i % 251) as u8).collect()
}

/// Writes a megabyte through `AsyncWriteExt` while the peer reads it through `AsyncReadExt`;
/// a write after `shutdown` is an error; both reads see EOF after the data.
#[evloop::test(simulate(seeds = 4))]
async fn stream_halves_carry_a_megabyte_through_the_byte_stream_traits() {
    const LEN: usize = 1 << 20;
    let (server, (mut cr, mut cw), (mut sr, sw)) = pair().await;
    let reader = evloop::spawn(async move {
        let mut got = vec![0u8; LEN];
        sr.read_exact(&mut got).await.unwrap();
        assert!(got == pattern(LEN), "the megabyte, in order");
        let mut rest = Vec::new();
        assert_eq!(
            AsyncReadExt::read_to_end(&mut sr, &mut rest).await.unwrap(),
            0,
            "EOF after it"
        );
        sw.write(b"ok");
        sw.close();
    });
    let big = pattern(LEN);
    cw.write_all(&big).await.unwrap();
    cw.flush().await.unwrap();
    cw.shutdown().await.unwrap();
    assert!(
        cw.write_all(b"more").await.is_err(),
        "writing after shutdown is an error"
    );
    reader.await.unwrap();
    let mut buf = [0u8; 8];
    assert_eq!(AsyncReadExt::read(&mut cr, &mut buf).await.unwrap(), 2);
    assert_eq!(&buf[..2], b"ok");
    assert_eq!(AsyncReadExt::read(&mut cr, &mut buf).await.unwrap(), 0, "EOF");
    server.close();
}

/// Dropping the writer alone half-closes: the peer reads EOF while this side still reads (and
/// gets the peer's answer); dropping the reader too closes the connection.
#[evloop::test(simulate(seeds = 6))]
async fn dropping_the_writer_alone_half_closes_and_dropping_both_closes() {
    let (server, (cr, cw), (sr, sw)) = pair().await;
    cw.write(b"last words");
    drop(cw);
    assert_eq!(sr.readexactly(10).await.unwrap(), b"last words");
    assert_eq!(sr.read(100).await.unwrap(), b"", "EOF: the client's writer is gone");
    sw.write(b"bye");
    sw.drain().await.unwrap();
    assert_eq!(cr.readexactly(3).await.unwrap(), b"bye", "the client still reads");
    drop(cr);
    let closed = evloop::time::timeout(std::time::Duration::from_secs(2), async {
        loop {
            sw.write(b"x");
            if sw.drain().await.is_err() {
                break;
            }
            evloop::time::sleep(std::time::Duration::from_millis(1)).await;
        }
    })
    .await;
    assert!(
        closed.is_ok(),
        "the client's connection stayed open after both halves were dropped"
    );
    server.close();
}
