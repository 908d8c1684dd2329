//! tokio/tests/io_write_buf.rs and io_write_all_buf.rs: `write_buf` writes the front of a
//! buffer and advances it; `write_all_buf` loops until it is empty and, on an error, leaves it
//! at the first byte not written. Changed beyond imports: the writers collect into a `Vec<u8>`
//! (tokio's use `BytesMut`), and `Bytes::chain` is a two-slice [`Buf`] written here (evloop's
//! `Buf` is its own trait: `&[u8]`, `Cursor`, `VecDeque<u8>` implement it, `bytes` types do not).

use evloop::io::{AsyncWrite, AsyncWriteExt, Buf};

use std::cmp;
use std::io::{self, Cursor};
use std::pin::Pin;
use std::task::{Context, Poll};

/// `Bytes::from_static(a).chain(Bytes::from_static(b))`.
struct Chain(&'static [u8], &'static [u8]);

impl Buf for Chain {
    fn remaining(&self) -> usize {
        self.0.len() + self.1.len()
    }
    fn chunk(&self) -> &[u8] {
        if self.0.is_empty() { self.1 } else { self.0 }
    }
    fn advance(&mut self, mut cnt: usize) {
        let first = cnt.min(self.0.len());
        self.0 = &self.0[first..];
        cnt -= first;
        self.1 = &self.1[cnt..];
    }
}

#[evloop::test]
async fn write_all() {
    struct Wr {
        buf: Vec<u8>,
        cnt: usize,
    }

    impl AsyncWrite for Wr {
        fn poll_write(mut self: Pin<&mut Self>, _cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
            assert_eq!(self.cnt, 0);

            let n = cmp::min(4, buf.len());
            let buf = &buf[0..n];

            self.cnt += 1;
            self.buf.extend(buf);
            Ok(buf.len()).into()
        }

        fn poll_flush(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
            Ok(()).into()
        }

        fn poll_shutdown(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
            Ok(()).into()
        }
    }

    let mut wr = Wr {
        buf: Vec::with_capacity(64),
        cnt: 0,
    };

    let mut buf = Cursor::new(&b"hello world"[..]);

    assert_ok!(wr.write_buf(&mut buf).await);
    assert_eq!(wr.buf, b"hell"[..]);
    assert_eq!(wr.cnt, 1);
    assert_eq!(buf.position(), 4);
}

#[evloop::test]
async fn write_all_buf() {
    struct Wr {
        buf: Vec<u8>,
        cnt: usize,
    }

    impl AsyncWrite for Wr {
        fn poll_write(mut self: Pin<&mut Self>, _cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
            let n = cmp::min(4, buf.len());
            let buf = &buf[0..n];

            self.cnt += 1;
            self.buf.extend(buf);
            Ok(buf.len()).into()
        }

        fn poll_flush(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
            Ok(()).into()
        }

        fn poll_shutdown(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
            Ok(()).into()
        }
    }

    let mut wr = Wr {
        buf: Vec::with_capacity(64),
        cnt: 0,
    };

    let mut buf = Chain(b"hello", b"world");

    assert_ok!(wr.write_all_buf(&mut buf).await);
    assert_eq!(wr.buf, b"helloworld"[..]);
    // expect 4 writes, [hell],[o],[worl],[d]
    assert_eq!(wr.cnt, 4);
    assert!(!buf.has_remaining());
}

#[evloop::test]
async fn write_buf_err() {
    /// Error out after writing the first 4 bytes
    struct Wr {
        cnt: usize,
    }

    impl AsyncWrite for Wr {
        fn poll_write(mut self: Pin<&mut Self>, _cx: &mut Context<'_>, _buf: &[u8]) -> Poll<io::Result<usize>> {
            self.cnt += 1;
            if self.cnt == 2 {
                return Poll::Ready(Err(io::Error::other("whoops")));
            }
            Poll::Ready(Ok(4))
        }

        fn poll_flush(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
            Ok(()).into()
        }

        fn poll_shutdown(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
            Ok(()).into()
        }
    }

    let mut wr = Wr { cnt: 0 };

    let mut buf = Chain(b"hello", b"world");

    assert_err!(wr.write_all_buf(&mut buf).await);
    assert_eq!((buf.0, buf.1), (&b"o"[..], &b"world"[..]));
}

/// Beyond tokio's tests: a vectored writer gets both chunks of a `VecDeque` that wraps around
/// in one call.
#[evloop::test]
async fn write_buf_vectored_takes_every_chunk() {
    let mut q: std::collections::VecDeque<u8> = b"efgh".iter().copied().collect();
    for c in b"dcba" {
        q.push_front(*c); // wraps to the end of the ring: two slices
    }
    assert!(!q.as_slices().1.is_empty());
    let (mut a, mut b) = evloop::io::duplex(64);
    assert_eq!(a.write_buf(&mut q).await.unwrap(), 8);
    assert!(q.is_empty());
    let mut got = [0; 8];
    evloop::io::AsyncReadExt::read_exact(&mut b, &mut got).await.unwrap();
    assert_eq!(&got, b"abcdefgh");
}
