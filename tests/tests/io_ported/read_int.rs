//! tokio/tests/io_read_int.rs and the write side: the big- and little-endian family.

use std::io::ErrorKind;

use evloop::io::{AsyncReadExt, AsyncWriteExt};

use super::run;

#[test]
fn read_int_family() {
    run(async {
        let mut out = Vec::new();
        out.write_u8(1).await.unwrap();
        out.write_i8(-2).await.unwrap();
        out.write_u16(0x0304).await.unwrap();
        out.write_u16_le(0x0304).await.unwrap();
        out.write_i32(-5).await.unwrap();
        out.write_u32_le(6).await.unwrap();
        out.write_u64(u64::MAX - 7).await.unwrap();
        out.write_i64_le(-8).await.unwrap();
        out.write_u128(9).await.unwrap();
        out.write_i128_le(-10).await.unwrap();
        out.write_f32(1.5).await.unwrap();
        out.write_f64_le(-2.25).await.unwrap();
        assert_eq!(&out[2..6], &[3, 4, 4, 3]);

        let mut rd: &[u8] = &out;
        assert_eq!(rd.read_u8().await.unwrap(), 1);
        assert_eq!(rd.read_i8().await.unwrap(), -2);
        assert_eq!(rd.read_u16().await.unwrap(), 0x0304);
        assert_eq!(rd.read_u16_le().await.unwrap(), 0x0304);
        assert_eq!(rd.read_i32().await.unwrap(), -5);
        assert_eq!(rd.read_u32_le().await.unwrap(), 6);
        assert_eq!(rd.read_u64().await.unwrap(), u64::MAX - 7);
        assert_eq!(rd.read_i64_le().await.unwrap(), -8);
        assert_eq!(rd.read_u128().await.unwrap(), 9);
        assert_eq!(rd.read_i128_le().await.unwrap(), -10);
        assert_eq!(rd.read_f32().await.unwrap(), 1.5);
        assert_eq!(rd.read_f64_le().await.unwrap(), -2.25);
        assert!(rd.is_empty());
    });
}

#[test]
fn read_int_short_stream_is_unexpected_eof() {
    run(async {
        let mut rd: &[u8] = &[0, 1, 2];
        let err = rd.read_u32().await.unwrap_err();
        assert_eq!(err.kind(), ErrorKind::UnexpectedEof);
    });
}

#[test]
fn network_order_matches_tokio() {
    // The bytes tokio writes, for a program that talks to a tokio peer.
    let ours = run(async {
        let mut out = Vec::new();
        out.write_u32(0xDEADBEEF).await.unwrap();
        out.write_i16_le(-2).await.unwrap();
        out
    });
    let theirs = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap()
        .block_on(async {
            let mut out = Vec::new();
            tokio::io::AsyncWriteExt::write_u32(&mut out, 0xDEADBEEF).await.unwrap();
            tokio::io::AsyncWriteExt::write_i16_le(&mut out, -2).await.unwrap();
            out
        });
    assert_eq!(ours, theirs);
}
