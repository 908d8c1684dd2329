//! The in-memory readers and writers: `&[u8]`, `Vec<u8>`, `std::io::Cursor` (tokio/tests/io_read.rs,
//! io_write.rs, and the Cursor impls tokio's docs use).

use std::io::{Cursor, SeekFrom};

use evloop::io::{AsyncBufReadExt, AsyncReadExt, AsyncSeekExt, AsyncWriteExt};

use super::run;

#[test]
fn slice_reads_and_vec_writes() {
    run(async {
        let mut rd: &[u8] = b"hello world";
        let mut buf = [0; 5];
        assert_eq!(rd.read(&mut buf).await.unwrap(), 5);
        let mut out = Vec::new();
        out.write_all(&buf).await.unwrap();
        out.write_all(rd).await.unwrap();
        assert_eq!(out, b"hello world");
    });
}

#[test]
fn cursor_reads_from_its_position() {
    run(async {
        let mut c = Cursor::new(&b"line one\nline two\n"[..]);
        c.set_position(5);
        let mut line = String::new();
        c.read_line(&mut line).await.unwrap();
        assert_eq!(line, "one\n");
        assert_eq!(c.position(), 9);
    });
}

#[test]
fn cursor_writes_overwrite_then_grow() {
    run(async {
        let mut c = Cursor::new(b"abcdef".to_vec());
        c.seek(SeekFrom::Start(4)).await.unwrap();
        c.write_all(b"XYZ").await.unwrap();
        assert_eq!(c.get_ref(), b"abcdXYZ");
        let mut v = Vec::new();
        let mut c = Cursor::new(&mut v);
        c.write_u16(0x4142).await.unwrap();
        assert_eq!(v, b"AB");
    });
}

#[test]
fn cursor_over_a_slice_stops_at_its_end() {
    run(async {
        let mut storage = [0u8; 4];
        let mut c = Cursor::new(&mut storage[..]);
        let err = c.write_all(b"too long").await.unwrap_err();
        assert_eq!(err.kind(), std::io::ErrorKind::WriteZero);
        assert_eq!(&storage, b"too ");
        let mut boxed = Cursor::new(vec![0u8; 2].into_boxed_slice());
        assert_eq!(boxed.write(b"abc").await.unwrap(), 2);
    });
}

#[test]
fn io_names_are_std_names() {
    // tokio::io::{Error, ErrorKind, Result, SeekFrom} are std's; so are evloop's.
    fn takes_std(_: std::io::Result<()>, _: std::io::SeekFrom) {}
    let r: evloop::io::Result<()> = Err(evloop::io::Error::from(evloop::io::ErrorKind::Other));
    takes_std(r, evloop::io::SeekFrom::End(0));
}
