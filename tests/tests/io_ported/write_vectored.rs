//! tokio/tests/io_write_all_buf.rs and the `is_write_vectored` answers tokio gives.

use std::io::IoSlice;

use evloop::io::{AsyncWrite, AsyncWriteExt, BufWriter};

use super::run;

#[test]
fn is_write_vectored_answers() {
    run(async {
        let (a, _b) = evloop::net::UnixStream::pair().unwrap();
        assert!(a.is_write_vectored());
        let (mut a, _b) = evloop::net::UnixStream::pair().unwrap();
        let (_rd, wr) = a.split();
        assert!(wr.is_write_vectored());
        assert!(Vec::<u8>::new().is_write_vectored());
        assert!(BufWriter::new(Vec::new()).is_write_vectored());
        let mut v = Vec::<u8>::new();
        let by_ref: &mut Vec<u8> = &mut v;
        assert!(AsyncWrite::is_write_vectored(&by_ref)); // `&mut W` passes it on
        assert!(Box::new(Vec::<u8>::new()).is_write_vectored());
    });
}

#[test]
fn vectored_write_to_a_vec_takes_every_buffer() {
    run(async {
        let mut out = Vec::new();
        let n = out
            .write_vectored(&[IoSlice::new(b"a"), IoSlice::new(b""), IoSlice::new(b"bc")])
            .await
            .unwrap();
        assert_eq!((n, &out[..]), (3, &b"abc"[..]));
    });
}

#[test]
fn pipes_and_stream_writers_write_vectored() {
    run(async {
        let (_rd, wr) = evloop::pipe::pipe().unwrap();
        assert!(wr.is_write_vectored());
        let (mut rd, mut wr) = evloop::pipe::pipe().unwrap();
        let n = wr
            .write_vectored(&[IoSlice::new(b"one "), IoSlice::new(b"writev")])
            .await
            .unwrap();
        assert_eq!(n, 10);
        let mut got = [0; 10];
        evloop::io::AsyncReadExt::read_exact(&mut rd, &mut got).await.unwrap();
        assert_eq!(&got, b"one writev");
    });
}
