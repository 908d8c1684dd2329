//! The I/O traits for `std::io::Cursor`, tokio's set: a cursor over any bytes reads (and is
//! an `AsyncBufRead`), and a cursor over `&mut [u8]`, `&mut Vec<u8>`, `Vec<u8>` or
//! `Box<[u8]>` writes at its position, overwriting and (for the vectors) growing. Each call is
//! std's blocking `Read`/`BufRead`/`Write` call, which on memory never blocks: every poll is
//! `Ready`. Seeking a cursor is in `seek`; `&[u8]` and `Vec<u8>` themselves are in `buf`.

use std::io::{self, Cursor, IoSlice};
use std::pin::Pin;
use std::task::{Context, Poll};

use crate::io::{AsyncBufRead, AsyncRead, AsyncWrite};

/// Reads from the cursor's position, and moves it.
///
/// ```
/// use std::io::Cursor;
/// use evloop::io::AsyncReadExt;
///
/// evloop::run(async {
///     let mut cursor = Cursor::new(b"abcdef".to_vec());
///     cursor.set_position(2);
///     let mut rest = String::new();
///     cursor.read_to_string(&mut rest).await?;
///     assert_eq!((rest.as_str(), cursor.position()), ("cdef", 6));
///     Ok::<(), std::io::Error>(())
/// })??;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
impl<T: AsRef<[u8]> + Unpin> AsyncRead for Cursor<T> {
    fn poll_read(self: Pin<&mut Self>, _cx: &mut Context<'_>, buf: &mut [u8]) -> Poll<io::Result<usize>> {
        Poll::Ready(io::Read::read(self.get_mut(), buf))
    }
}

impl<T: AsRef<[u8]> + Unpin> AsyncBufRead for Cursor<T> {
    fn poll_fill_buf(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<&[u8]>> {
        Poll::Ready(io::BufRead::fill_buf(self.get_mut()))
    }

    fn consume(self: Pin<&mut Self>, amt: usize) {
        io::BufRead::consume(self.get_mut(), amt)
    }
}

/// Writes the `AsyncWrite` impl of a cursor over `$ty` with std's `Write` impl.
macro_rules! cursor_write {
    ($($ty:ty),* $(,)?) => {$(
        impl AsyncWrite for Cursor<$ty> {
            fn poll_write(self: Pin<&mut Self>, _cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
                Poll::Ready(io::Write::write(self.get_mut(), buf))
            }

            fn poll_write_vectored(
                self: Pin<&mut Self>,
                _cx: &mut Context<'_>,
                bufs: &[IoSlice<'_>],
            ) -> Poll<io::Result<usize>> {
                Poll::Ready(io::Write::write_vectored(self.get_mut(), bufs))
            }

            fn is_write_vectored(&self) -> bool {
                true
            }

            fn poll_shutdown(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
                Poll::Ready(Ok(()))
            }
        }
    )*};
}

cursor_write!(&mut [u8], &mut Vec<u8>, Vec<u8>, Box<[u8]>);
