//! [`join`]: one value that reads from a reader and writes to a writer (tokio's
//! `tokio::io::join` and `Join`), the opposite of [`split`](crate::io::split): stdin and stdout
//! as one stream, or two pipes as one duplex connection.
//!
//! Reads (and `fill_buf`) go to the reader, writes, flushes and shutdowns to the writer; nothing
//! is buffered or locked here. Like the buffered adapters, both sides must be `Unpin` (box and
//! pin anything else), which keeps the file free of pin projections.

use crate::io::traits::forward_io;

/// Joins `reader` and `writer` into one value that is both (tokio's `join`).
///
/// ```
/// use evloop::io::{AsyncReadExt, AsyncWriteExt};
///
/// evloop::run(async {
///     let mut both = evloop::io::join(&b"from the reader"[..], Vec::new());
///     let mut got = String::new();
///     both.read_to_string(&mut got).await?;
///     both.write_all(b"to the writer").await?;
///     let (_, written) = both.into_inner();
///     assert_eq!((got.as_str(), &written[..]), ("from the reader", &b"to the writer"[..]));
///     Ok::<(), std::io::Error>(())
/// })??;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn join<R, W>(reader: R, writer: W) -> Join<R, W> {
    Join { reader, writer }
}

/// A reader and a writer as one value: see [`join`].
///
/// ```
/// let joined: evloop::io::Join<&[u8], Vec<u8>> = evloop::io::join(&b""[..], Vec::new());
/// assert!(joined.writer().is_empty());
/// ```
#[derive(Debug)]
pub struct Join<R, W> {
    reader: R,
    writer: W,
}

impl<R, W> Join<R, W> {
    /// The reader and the writer back.
    ///
    /// ```
    /// let (r, w) = evloop::io::join(1, 2).into_inner();
    /// assert_eq!((r, w), (1, 2));
    /// ```
    pub fn into_inner(self) -> (R, W) {
        (self.reader, self.writer)
    }

    /// The reader.
    ///
    /// ```
    /// assert_eq!(*evloop::io::join(1, 2).reader(), 1);
    /// ```
    pub fn reader(&self) -> &R {
        &self.reader
    }

    /// The writer.
    ///
    /// ```
    /// assert_eq!(*evloop::io::join(1, 2).writer(), 2);
    /// ```
    pub fn writer(&self) -> &W {
        &self.writer
    }

    /// The reader, mutably.
    ///
    /// ```
    /// let mut j = evloop::io::join(1, 2);
    /// *j.reader_mut() = 3;
    /// assert_eq!(*j.reader(), 3);
    /// ```
    pub fn reader_mut(&mut self) -> &mut R {
        &mut self.reader
    }

    /// The writer, mutably.
    ///
    /// ```
    /// let mut j = evloop::io::join(1, 2);
    /// *j.writer_mut() = 4;
    /// assert_eq!(*j.writer(), 4);
    /// ```
    pub fn writer_mut(&mut self) -> &mut W {
        &mut self.writer
    }
}

forward_io!([R: crate::io::AsyncRead + Unpin, W: Unpin] AsyncRead for Join<R, W> => inner |j| j.reader);
forward_io!([R: crate::io::AsyncBufRead + Unpin, W: Unpin] AsyncBufRead for Join<R, W> => inner |j| j.reader);
forward_io!([R: Unpin, W: crate::io::AsyncWrite + Unpin] AsyncWrite for Join<R, W> => inner |j| j.writer);
