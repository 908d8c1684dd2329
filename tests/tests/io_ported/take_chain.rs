//! tokio/tests/io_take.rs and io_chain.rs.

use std::future::poll_fn;
use std::pin::Pin;

use evloop::io::{AsyncBufReadExt, AsyncRead, AsyncReadExt, BufReader, ReadBuf};

use super::run;

#[test]
fn take() {
    run(async {
        let mut buf = [0; 6];
        let rd: &[u8] = b"hello world";
        let mut rd = rd.take(4);
        let n = rd.read(&mut buf).await.unwrap();
        assert_eq!(n, 4);
        assert_eq!(&buf, &b"hell\0\0"[..]);
    });
}

#[test]
fn issue_4435() {
    // A ReadBuf that already holds bytes: take's limit applies to the free part.
    run(async {
        let mut buf = [0; 8];
        let rd: &[u8] = b"hello world";
        let rd = rd.take(4);
        evloop::pin!(rd);
        let mut read_buf = ReadBuf::new(&mut buf);
        read_buf.put_slice(b"AB");
        poll_fn(|cx| rd.as_mut().poll_read_buf(cx, &mut read_buf))
            .await
            .unwrap();
        assert_eq!(&buf, &b"ABhell\0\0"[..]);
    });
}

#[test]
fn take_limit_counts_down_and_resets() {
    run(async {
        let mut rd = (&b"0123456789"[..]).take(3);
        let mut all = Vec::new();
        assert_eq!(rd.read_to_end(&mut all).await.unwrap(), 3);
        assert_eq!(rd.limit(), 0);
        rd.set_limit(2);
        assert_eq!(rd.read_to_end(&mut all).await.unwrap(), 2);
        assert_eq!(all, b"01234");
        assert_eq!(rd.into_inner(), b"56789");
    });
}

#[test]
fn take_is_buffered_when_its_reader_is() {
    run(async {
        let mut lines = BufReader::new(&b"one\ntwo\nthree\n"[..]).take(6).lines();
        assert_eq!(lines.next_line().await.unwrap().as_deref(), Some("one"));
        assert_eq!(lines.next_line().await.unwrap().as_deref(), Some("tw"));
        assert_eq!(lines.next_line().await.unwrap(), None);
    });
}

#[test]
fn chain() {
    run(async {
        let mut buf = Vec::new();
        let rd1: &[u8] = b"hello ";
        let rd2: &[u8] = b"world";
        let mut rd = rd1.chain(rd2);
        rd.read_to_end(&mut buf).await.unwrap();
        assert_eq!(buf, b"hello world");
    });
}

#[test]
fn chain_buffered_reads_cross_the_seam() {
    run(async {
        let mut rd = (&b"ab"[..]).chain(&b"cd"[..]);
        assert_eq!(rd.fill_buf().await.unwrap(), b"ab");
        rd.consume(2);
        assert_eq!(rd.fill_buf().await.unwrap(), b"cd");
        let mut rest = Vec::new();
        rd.read_until(b'\n', &mut rest).await.unwrap();
        assert_eq!(rest, b"cd");
        let (first, second) = rd.into_inner();
        assert!(first.is_empty() && second.is_empty());
    });
}

#[test]
fn chain_read_exact_spans_both() {
    run(async {
        let mut rd = (&b"12"[..]).chain(&b"34"[..]);
        assert_eq!(rd.read_u32().await.unwrap(), u32::from_be_bytes(*b"1234"));
        let _ = Pin::new(&mut rd);
    });
}
