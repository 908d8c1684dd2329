//! Buffered I/O (runtime/src/io/buf.rs): `BufReader` with `fill_buf`/`consume`, `read_until`,
//! `read_line`, `lines`, `split`; `BufWriter` coalescing writes into one `send`; `BufStream`.
//! Syscall counts prove the buffering (one `recv` for many lines, one `send` for many writes);
//! cancelled reads keep what they read.

use std::io::{self, ErrorKind, Write as _};
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use evloop::event_loop::EventLoop;
use evloop::io::{
    AsyncBufReadExt, AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, BufReader, BufStream, BufWriter,
};
use evloop::sys::Syscall;
use evloop::sys::counters;
use evloop_tests::net::tcp_with_std_peer;
use evloop_tests::run_bounded;

/// A reader that hands out `chunks` one per poll (a stream split at awkward places).
struct Chunks(Vec<&'static [u8]>);

impl AsyncRead for Chunks {
    fn poll_read(mut self: Pin<&mut Self>, _cx: &mut Context<'_>, buf: &mut [u8]) -> Poll<io::Result<usize>> {
        if self.0.is_empty() {
            return Poll::Ready(Ok(0));
        }
        let chunk = self.0[0];
        let n = chunk.len().min(buf.len());
        buf[..n].copy_from_slice(&chunk[..n]);
        if n == chunk.len() {
            self.0.remove(0);
        } else {
            self.0[0] = &chunk[n..];
        }
        Poll::Ready(Ok(n))
    }
}

#[test]
fn many_lines_in_one_segment_cost_one_recv() {
    let lp = EventLoop::new().unwrap();
    run_bounded(&lp.handle(), async {
        let (s, mut peer) = tcp_with_std_peer().await;
        let text: String = (0..100).map(|i| format!("line {i}\n")).collect();
        peer.write_all(text.as_bytes()).unwrap();
        let mut r = BufReader::new(s);
        // Wait until the first line is there, then count what reading all of them costs.
        let mut first = String::new();
        r.read_line(&mut first).await.unwrap();
        assert_eq!(first, "line 0\n");
        let before = counters::snapshot();
        let mut lines = Vec::new();
        for _ in 1..100 {
            let mut l = String::new();
            r.read_line(&mut l).await.unwrap();
            lines.push(l);
        }
        let recvs = counters::snapshot().since(&before).get(Syscall::Recv);
        assert_eq!(lines[98], "line 99\n");
        assert!(recvs <= 1, "99 buffered lines took {recvs} recv calls");
    });
}

#[test]
fn read_until_and_read_line_across_chunk_boundaries_and_at_eof() {
    let lp = EventLoop::new().unwrap();
    run_bounded(&lp.handle(), async {
        let mut r = BufReader::with_capacity(4, Chunks(vec![b"ab", b"c;de", b"f;", b"tail"]));
        let mut v = Vec::new();
        assert_eq!(r.read_until(b';', &mut v).await.unwrap(), 4);
        assert_eq!(v, b"abc;");
        v.clear();
        assert_eq!(r.read_until(b';', &mut v).await.unwrap(), 4);
        assert_eq!(v, b"def;");
        v.clear();
        assert_eq!(
            r.read_until(b';', &mut v).await.unwrap(),
            4,
            "the rest, without a delimiter"
        );
        assert_eq!(v, b"tail");
        assert_eq!(r.read_until(b';', &mut v).await.unwrap(), 0, "end of stream");
        let mut r = BufReader::new(Chunks(vec![b"GET / HT", b"TP/1.1\r\n", b"\r\n"]));
        let mut line = String::from("kept:");
        assert_eq!(r.read_line(&mut line).await.unwrap(), 16);
        assert_eq!(line, "kept:GET / HTTP/1.1\r\n", "appended");
    });
}

#[test]
fn read_line_with_invalid_utf8_is_invalid_data_and_leaves_the_string_alone() {
    let lp = EventLoop::new().unwrap();
    run_bounded(&lp.handle(), async {
        let mut r = BufReader::new(&b"ok\n\xff\xfe bad\nafter\n"[..]);
        let mut s = String::new();
        r.read_line(&mut s).await.unwrap();
        let e = r.read_line(&mut s).await.unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidData, "{e}");
        assert_eq!(s, "ok\n", "the bad line was not appended");
        r.read_line(&mut s).await.unwrap();
        assert_eq!(s, "ok\nafter\n", "reading goes on after the bad line");
    });
}

#[test]
fn a_cancelled_read_line_keeps_what_it_read() {
    let lp = EventLoop::new().unwrap();
    run_bounded(&lp.handle(), async {
        let (s, mut peer) = tcp_with_std_peer().await;
        let mut r = BufReader::new(s);
        peer.write_all("half a line é".as_bytes()).unwrap();
        let mut line = String::new();
        // The line never ends within the bound: the read is cancelled with data in hand.
        let cut = evloop::time::timeout(Duration::from_millis(50), r.read_line(&mut line)).await;
        assert!(cut.is_err());
        assert_eq!(line, "half a line é", "bytes read before the cancel are kept");
        peer.write_all(b", and the rest\n").unwrap();
        r.read_line(&mut line).await.unwrap();
        assert_eq!(line, "half a line é, and the rest\n");
    });
}

#[test]
fn lines_strip_endings_and_survive_cancellation() {
    let lp = EventLoop::new().unwrap();
    run_bounded(&lp.handle(), async {
        let (s, mut peer) = tcp_with_std_peer().await;
        let mut lines = BufReader::new(s).lines();
        peer.write_all(b"one\r\ntw").unwrap();
        assert_eq!(lines.next_line().await.unwrap().as_deref(), Some("one"));
        let cut = evloop::time::timeout(Duration::from_millis(30), lines.next_line()).await;
        assert!(cut.is_err(), "no complete line yet");
        peer.write_all(b"o\nthree").unwrap();
        peer.shutdown(std::net::Shutdown::Write).unwrap();
        assert_eq!(
            lines.next_line().await.unwrap().as_deref(),
            Some("two"),
            "the partial line was kept"
        );
        assert_eq!(lines.next_line().await.unwrap().as_deref(), Some("three"));
        assert_eq!(lines.next_line().await.unwrap(), None);
    });
}

#[test]
fn split_gives_segments_without_the_delimiter() {
    let lp = EventLoop::new().unwrap();
    run_bounded(&lp.handle(), async {
        let mut segs = BufReader::new(&b"a\0bc\0\0d"[..]).split(0);
        let mut all = Vec::new();
        while let Some(s) = segs.next_segment().await.unwrap() {
            all.push(s);
        }
        assert_eq!(all, [b"a".to_vec(), b"bc".to_vec(), b"".to_vec(), b"d".to_vec()]);
    });
}

#[test]
fn fill_buf_returns_the_same_bytes_until_consumed() {
    let lp = EventLoop::new().unwrap();
    run_bounded(&lp.handle(), async {
        let mut r = BufReader::with_capacity(4, Chunks(vec![b"abcdef"]));
        assert_eq!(r.fill_buf().await.unwrap(), b"abcd");
        assert_eq!(r.fill_buf().await.unwrap(), b"abcd", "no read while bytes are buffered");
        r.consume(3);
        assert_eq!(r.buffer(), b"d");
        r.consume(100);
        assert_eq!(r.buffer(), b"", "consume clamps to what is buffered");
        assert_eq!(r.fill_buf().await.unwrap(), b"ef");
        r.consume(2);
        assert_eq!(r.fill_buf().await.unwrap(), b"", "end of stream");
    });
}

#[test]
fn a_large_read_bypasses_an_empty_buffer() {
    let lp = EventLoop::new().unwrap();
    run_bounded(&lp.handle(), async {
        let mut r = BufReader::with_capacity(8, Chunks(vec![b"0123456789abcdef"]));
        let mut big = [0u8; 32];
        let n = r.read(&mut big).await.unwrap();
        assert_eq!(&big[..n], b"0123456789abcdef", "read straight into the caller's buffer");
        assert!(r.buffer().is_empty());
        let mut r = BufReader::with_capacity(8, Chunks(vec![b"0123456789"]));
        let mut small = [0u8; 3];
        r.read_exact(&mut small).await.unwrap();
        assert_eq!(
            (&small, r.buffer()),
            (b"012", &b"34567"[..]),
            "small reads go through the buffer"
        );
    });
}

#[test]
fn buf_writer_coalesces_small_writes_into_one_send() {
    let lp = EventLoop::new().unwrap();
    run_bounded(&lp.handle(), async {
        let (s, mut peer) = tcp_with_std_peer().await;
        let mut w = BufWriter::new(s);
        let before = counters::snapshot();
        for i in 0..50 {
            w.write_all(format!("{i:02};").as_bytes()).await.unwrap();
        }
        let mid = counters::snapshot().since(&before);
        assert_eq!(
            mid.get(Syscall::Send) + mid.get(Syscall::Sendmsg),
            0,
            "nothing sent before flush"
        );
        assert_eq!(w.buffer().len(), 150);
        w.flush().await.unwrap();
        let sent = counters::snapshot().since(&before);
        assert_eq!(
            sent.get(Syscall::Send) + sent.get(Syscall::Sendmsg),
            1,
            "one send for 50 writes"
        );
        let mut got = vec![0u8; 150];
        std::io::Read::read_exact(&mut peer, &mut got).unwrap();
        assert!(got.starts_with(b"00;01;") && got.ends_with(b"49;"));
    });
}

#[test]
fn buf_writer_sends_large_writes_straight_and_shutdown_flushes_first() {
    let lp = EventLoop::new().unwrap();
    run_bounded(&lp.handle(), async {
        let (s, mut peer) = tcp_with_std_peer().await;
        let mut w = BufWriter::with_capacity(16, s);
        w.write_all(b"head").await.unwrap();
        let big = vec![b'x'; 64];
        w.write_all(&big).await.unwrap();
        assert!(
            w.buffer().is_empty(),
            "a write larger than the buffer is not copied into it"
        );
        w.write_all(b"tail").await.unwrap();
        w.shutdown().await.unwrap();
        let mut got = Vec::new();
        std::io::Read::read_to_end(&mut peer, &mut got).unwrap();
        assert_eq!(got.len(), 72);
        assert!(
            got.starts_with(b"headxx") && got.ends_with(b"xxtail"),
            "in order, then EOF"
        );
    });
}

/// A writer that stops accepting bytes.
struct Full;

impl AsyncWrite for Full {
    fn poll_write(self: Pin<&mut Self>, _cx: &mut Context<'_>, _buf: &[u8]) -> Poll<io::Result<usize>> {
        Poll::Ready(Ok(0))
    }
    fn poll_shutdown(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }
}

#[test]
fn buf_writer_reports_a_writer_that_accepts_nothing_as_write_zero() {
    let lp = EventLoop::new().unwrap();
    run_bounded(&lp.handle(), async {
        let mut w = BufWriter::new(Full);
        w.write_all(b"queued").await.unwrap();
        let e = w.flush().await.unwrap_err();
        assert_eq!(e.kind(), ErrorKind::WriteZero, "{e}");
        assert!(e.to_string().contains("BufWriter"), "{e}");
    });
}

#[test]
fn buf_stream_reads_lines_and_writes_buffered_on_one_connection() {
    let lp = EventLoop::new().unwrap();
    run_bounded(&lp.handle(), async {
        let (s, peer) = tcp_with_std_peer().await;
        let peer_thread = std::thread::spawn(move || {
            let mut peer = peer;
            peer.write_all(b"PING\r\nPING\r\n").unwrap();
            let mut got = [0u8; 14];
            std::io::Read::read_exact(&mut peer, &mut got).unwrap();
            got
        });
        let mut stream = BufStream::new(s);
        for _ in 0..2 {
            let mut line = String::new();
            stream.read_line(&mut line).await.unwrap();
            assert_eq!(line, "PING\r\n");
            stream.write_all(b"+PONG\r\n").await.unwrap();
        }
        stream.flush().await.unwrap();
        let got = evloop::event_loop::get_running_loop()
            .unwrap()
            .run_in_executor(move || peer_thread.join().unwrap())
            .unwrap()
            .await
            .unwrap();
        assert_eq!(&got, b"+PONG\r\n+PONG\r\n");
    });
}
