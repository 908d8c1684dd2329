//! tokio/tests/io_buf_reader.rs (`seek`, `seek_relative`), io_buf_writer.rs (`seek`): seeking
//! through the buffered adapters.

use std::io::{Cursor, SeekFrom};

use evloop::io::{AsyncBufReadExt, AsyncReadExt, AsyncSeekExt, AsyncWriteExt, BufReader, BufStream, BufWriter};

use super::run;

#[test]
fn buf_reader_seek() {
    run(async {
        let inner: &[u8] = &[5, 6, 7, 0, 1, 2, 3, 4];
        let mut reader = BufReader::with_capacity(2, Cursor::new(inner));
        assert_eq!(reader.seek(SeekFrom::Start(3)).await.unwrap(), 3);
        assert_eq!(reader.fill_buf().await.unwrap(), &[0, 1][..]);
        assert!(reader.seek(SeekFrom::Current(i64::MIN)).await.is_err());
        assert_eq!(reader.fill_buf().await.unwrap(), &[0, 1][..]);
        assert_eq!(reader.seek(SeekFrom::Current(1)).await.unwrap(), 4);
        assert_eq!(reader.fill_buf().await.unwrap(), &[1, 2][..]);
        reader.consume(1);
        assert_eq!(reader.seek(SeekFrom::Current(-2)).await.unwrap(), 3);
    });
}

#[test]
fn buf_reader_seek_counts_from_what_the_caller_read() {
    run(async {
        let mut reader = BufReader::new(Cursor::new(b"0123456789".to_vec()));
        let mut three = [0; 3];
        reader.read_exact(&mut three).await.unwrap();
        // The inner cursor is at 10 (all of it buffered); the caller is at 3.
        assert_eq!(reader.stream_position().await.unwrap(), 3);
        assert_eq!(reader.seek(SeekFrom::Current(2)).await.unwrap(), 5);
        assert_eq!(reader.read_u8().await.unwrap(), b'5');
        assert!(reader.buffer().len() < 10, "the seek dropped the old buffer");
    });
}

#[test]
fn buf_reader_seek_overflowing_relative() {
    run(async {
        // n - buffered overflows i64: two seeks, as tokio does.
        let mut reader = BufReader::with_capacity(4, Cursor::new(vec![0u8; 16]));
        reader.fill_buf().await.unwrap();
        let err = reader.seek(SeekFrom::Current(i64::MIN + 1)).await.unwrap_err();
        assert_eq!(err.kind(), std::io::ErrorKind::InvalidInput);
    });
}

#[test]
fn buf_writer_seek_flushes_first() {
    run(async {
        let mut w = BufWriter::with_capacity(8, Cursor::new(Vec::new()));
        w.write_all(&[0, 1, 2, 3, 4, 5]).await.unwrap();
        w.write_all(&[6, 7]).await.unwrap();
        assert_eq!(w.seek(SeekFrom::Current(0)).await.unwrap(), 8);
        assert_eq!(&w.get_ref().get_ref()[..], &[0, 1, 2, 3, 4, 5, 6, 7][..]);
        assert_eq!(w.seek(SeekFrom::Start(2)).await.unwrap(), 2);
        w.write_all(&[8, 9]).await.unwrap();
        w.flush().await.unwrap();
        assert_eq!(&w.into_inner().into_inner()[..], &[0, 1, 8, 9, 4, 5, 6, 7]);
    });
}

#[test]
fn buf_stream_seek() {
    run(async {
        let mut s = BufStream::new(Cursor::new(b"hello".to_vec()));
        s.seek(SeekFrom::End(0)).await.unwrap();
        s.write_all(b" world").await.unwrap();
        s.rewind().await.unwrap();
        let mut all = String::new();
        s.read_to_string(&mut all).await.unwrap();
        assert_eq!(all, "hello world");
    });
}
