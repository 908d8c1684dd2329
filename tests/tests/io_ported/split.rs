//! tokio/tests/io_split.rs: the generic `io::split` and `unsplit`.

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};

use evloop::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, ReadHalf, WriteHalf, split};

use super::run;

struct RW;

impl AsyncRead for RW {
    fn poll_read(self: Pin<&mut Self>, _cx: &mut Context<'_>, buf: &mut [u8]) -> Poll<io::Result<usize>> {
        buf[0] = b'z';
        Poll::Ready(Ok(1))
    }
}

impl AsyncWrite for RW {
    fn poll_write(self: Pin<&mut Self>, _cx: &mut Context<'_>, _buf: &[u8]) -> Poll<io::Result<usize>> {
        Poll::Ready(Ok(1))
    }

    fn poll_flush(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
        _bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Poll::Ready(Ok(2))
    }

    fn is_write_vectored(&self) -> bool {
        true
    }
}

#[test]
fn is_send_and_sync() {
    fn assert_bound<T: Send + Sync>() {}
    assert_bound::<ReadHalf<RW>>();
    assert_bound::<WriteHalf<RW>>();
}

#[test]
fn split_stream_id() {
    let (r1, w1) = split(RW);
    let (r2, w2) = split(RW);
    assert!(r1.is_pair_of(&w1));
    assert!(!r1.is_pair_of(&w2));
    assert!(r2.is_pair_of(&w2));
    assert!(!r2.is_pair_of(&w1));
}

#[test]
fn unsplit_ok() {
    let (r, w) = split(RW);
    r.unsplit(w);
}

#[test]
#[should_panic]
fn unsplit_err1() {
    let (r, _) = split(RW);
    let (_, w) = split(RW);
    r.unsplit(w);
}

#[test]
#[should_panic]
fn unsplit_err2() {
    let (_, w) = split(RW);
    let (r, _) = split(RW);
    r.unsplit(w);
}

#[test]
fn method_delegation() {
    let (mut r, mut w) = split(RW);
    let mut buf = [0; 1];
    run(async move {
        assert_eq!(1, r.read(&mut buf).await.unwrap());
        assert_eq!(b'z', buf[0]);
        assert_eq!(1, w.write(b"x").await.unwrap());
        assert_eq!(2, w.write_vectored(&[io::IoSlice::new(b"x")]).await.unwrap());
        assert!(w.is_write_vectored());
        assert!(w.flush().await.is_ok());
        assert!(w.shutdown().await.is_ok());
    });
}

#[test]
fn halves_in_two_tasks_over_a_socket() {
    run(async {
        let (a, mut b) = evloop::net::UnixStream::pair().unwrap();
        let (mut rd, mut wr) = split(a);
        // A reader parked on the stream does not keep the writer out.
        let reader = evloop::spawn(async move {
            let mut got = [0; 4];
            rd.read_exact(&mut got).await.map(|_| got)
        });
        evloop::task::yield_now().await;
        wr.write_all(b"ping").await.unwrap();
        let mut echo = [0; 4];
        b.read_exact(&mut echo).await.unwrap();
        b.write_all(&echo).await.unwrap();
        assert_eq!(&reader.await.unwrap().unwrap(), b"ping");
    });
}
