//! tokio/tests/io_read_buf.rs, io_read_exact.rs, io_read_to_string.rs: `read_buf` into a
//! growable buffer, `ReadBuf` reads, `read_exact`'s count, `read_to_string`.

use std::future::poll_fn;
use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};

use evloop::io::{AsyncRead, AsyncReadExt, ReadBuf};

use super::run;

/// Gives "hello world" on every read and counts the reads.
struct Rd {
    cnt: usize,
}

impl AsyncRead for Rd {
    fn poll_read(mut self: Pin<&mut Self>, _cx: &mut Context<'_>, buf: &mut [u8]) -> Poll<io::Result<usize>> {
        self.cnt += 1;
        let n = buf.len().min(11);
        buf[..n].copy_from_slice(&b"hello world"[..n]);
        Poll::Ready(Ok(n))
    }
}

#[test]
fn read_buf() {
    run(async {
        let mut buf = vec![];
        let mut rd = Rd { cnt: 0 };
        let n = rd.read_buf(&mut buf).await.unwrap();
        assert_eq!(rd.cnt, 1);
        // An empty Vec grows by 64 bytes: one read takes all 11.
        assert_eq!(n, 11);
        assert_eq!(buf[..], b"hello world"[..]);
    });
}

#[test]
fn read_buf_appends_to_what_is_there() {
    run(async {
        let mut buf = b"> ".to_vec();
        let mut src: &[u8] = b"more";
        assert_eq!(src.read_buf(&mut buf).await.unwrap(), 4);
        assert_eq!(buf, b"> more");
        assert_eq!(src.read_buf(&mut buf).await.unwrap(), 0); // end of stream
    });
}

#[test]
fn read_buf_into_a_slice_shrinks_it() {
    run(async {
        let mut storage = [0u8; 6];
        let mut window: &mut [u8] = &mut storage;
        let mut src: &[u8] = b"abcdefgh";
        assert_eq!(src.read_buf(&mut window).await.unwrap(), 6);
        assert!(window.is_empty());
        // No room left: 0, without reading.
        assert_eq!(src.read_buf(&mut window).await.unwrap(), 0);
        assert_eq!(src, b"gh");
        assert_eq!(&storage, b"abcdef");
    });
}

#[test]
fn poll_read_buf_fills_after_what_is_filled() {
    // tokio/tests/io_take.rs `issue_4435` shape: a ReadBuf already holding bytes.
    run(async {
        let mut storage = [0u8; 8];
        let mut buf = ReadBuf::new(&mut storage);
        buf.put_slice(b"AB");
        let mut src: &[u8] = b"hell";
        poll_fn(|cx| Pin::new(&mut src).poll_read_buf(cx, &mut buf))
            .await
            .unwrap();
        assert_eq!(buf.filled(), b"ABhell");
        assert_eq!(&storage, b"ABhell\0\0");
    });
}

#[test]
fn read_buf_through_a_socket() {
    run(async {
        let (mut a, mut b) = evloop::net::UnixStream::pair().unwrap();
        evloop::spawn(async move {
            use evloop::io::AsyncWriteExt;
            a.write_all(&[7u8; 100_000]).await.unwrap();
        });
        let mut got = Vec::with_capacity(10);
        while b.read_buf(&mut got).await.unwrap() != 0 {}
        assert_eq!(got.len(), 100_000);
        assert!(got.iter().all(|&x| x == 7));
    });
}

#[test]
fn read_exact() {
    run(async {
        let mut buf = Box::new([0; 8]);
        let mut rd: &[u8] = b"hello world";
        let n = rd.read_exact(&mut buf[..]).await.unwrap();
        assert_eq!(n, 8);
        assert_eq!(buf[..], b"hello wo"[..]);
    });
}

#[test]
fn read_to_string() {
    run(async {
        let mut buf = String::new();
        let mut rd: &[u8] = b"hello world";
        let n = rd.read_to_string(&mut buf).await.unwrap();
        assert_eq!(n, 11);
        assert_eq!(buf[..], "hello world"[..]);
    });
}

#[test]
fn read_to_string_bad_utf8_keeps_the_string() {
    run(async {
        let mut buf = String::from("kept");
        let mut rd: &[u8] = b"\xF0\x9F\x98";
        let err = rd.read_to_string(&mut buf).await.unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::InvalidData);
        assert_eq!(buf, "kept");
    });
}
