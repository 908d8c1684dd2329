//! Issue 19 item 6: dropping a half that owns the write side shuts that side down, as tokio's
//! `OwnedWriteHalf` does: the peer reads end of stream while the read half still reads. Checked
//! for every such half: TCP's and Unix's `OwnedWriteHalf` and the streams' `StreamWriter`; the
//! borrowed `WriteHalf` owns nothing and `forget` opts out.

use std::time::Duration;

use evloop::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use evloop::net::{TcpListener, TcpStream, UnixStream};
use evloop_tests::net::loopback_v4;
use evloop_tests::run_on_new_loop;

/// `ours` is split; its write half writes and is dropped: the peer must read everything and
/// then end of stream, and the read half must still receive the peer's reply.
async fn drop_write_half_then_reply<R, W, P>(mut rd: R, mut wr: W, mut peer: P)
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
    P: AsyncRead + AsyncWrite + Unpin,
{
    wr.write_all(b"last words").await.unwrap();
    drop(wr);
    let mut got = Vec::new();
    let read = evloop::time::timeout(Duration::from_secs(5), peer.read_to_end(&mut got)).await;
    assert!(
        read.is_ok(),
        "the peer never saw end of stream after the write half was dropped"
    );
    assert_eq!(got, b"last words");
    peer.write_all(b"reply").await.unwrap();
    let mut reply = [0; 5];
    rd.read_exact(&mut reply).await.unwrap();
    assert_eq!(
        &reply, b"reply",
        "the read half still reads after the write half's drop"
    );
}

#[test]
fn dropping_a_tcp_owned_write_half_sends_eof_to_the_peer() {
    run_on_new_loop(async {
        let listener = TcpListener::bind(loopback_v4()).await.unwrap();
        let client = TcpStream::connect(listener.local_addr().unwrap()).await.unwrap();
        let (server, _) = listener.accept().await.unwrap();
        let (rd, wr) = client.into_split();
        drop_write_half_then_reply(rd, wr, server).await;
    });
}

#[test]
fn dropping_a_unix_owned_write_half_sends_eof_to_the_peer() {
    run_on_new_loop(async {
        let (a, b) = UnixStream::pair().unwrap();
        let (rd, wr) = a.into_split();
        drop_write_half_then_reply(rd, wr, b).await;
    });
}

#[test]
fn a_forgotten_or_borrowed_write_half_leaves_the_write_side_open() {
    run_on_new_loop(async {
        let (mut a, mut b) = UnixStream::pair().unwrap();
        {
            let (_rd, mut wr) = a.split();
            wr.write_all(b"x").await.unwrap(); // a borrowed half's end sends nothing
        }
        let mut x = [0; 1];
        b.read_exact(&mut x).await.unwrap();
        let (rd, wr) = a.into_split();
        wr.forget();
        let mut byte = [0; 1];
        let read = evloop::time::timeout(Duration::from_millis(20), b.read(&mut byte)).await;
        assert!(read.is_err(), "no end of stream: the write side is still open");
        drop(rd); // both halves gone: the socket closes
        assert_eq!(b.read(&mut byte).await.unwrap(), 0);
    });
}

#[test]
fn dropping_a_stream_writer_half_closes_while_the_reader_reads_on() {
    run_on_new_loop(async {
        let listener = TcpListener::bind(loopback_v4()).await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let (reader, writer) = evloop::streams::open_connection("127.0.0.1", port).await.unwrap();
        let (mut peer, _) = listener.accept().await.unwrap();
        writer.write(b"queued before the drop");
        drop(writer);
        let mut got = Vec::new();
        let read = evloop::time::timeout(Duration::from_secs(5), peer.read_to_end(&mut got)).await;
        assert!(
            read.is_ok(),
            "the peer never saw end of stream after the writer was dropped"
        );
        assert_eq!(got, b"queued before the drop", "the queued bytes are flushed first");
        peer.write_all(b"still reading\n").await.unwrap();
        assert_eq!(reader.readline().await.unwrap(), b"still reading\n");
    });
}
