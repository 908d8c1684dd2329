//! [`Buf`]: a readable cursor over bytes (the shape of the `bytes` crate's `Buf`, owned here so
//! the runtime keeps no dependency), and the writes of [`AsyncWriteExt`](crate::io::AsyncWriteExt)
//! that take one: `write_buf` and `write_all_buf` (tokio's names).
//!
//! A `Buf` is read front to back: [`chunk`](Buf::chunk) is the next contiguous bytes,
//! [`advance`](Buf::advance) consumes them. The writes hand the writer the chunk (or, to a
//! vectored writer, up to 64 chunks at once) and advance the buffer by what it accepted, so a
//! `write_all_buf` dropped halfway leaves the buffer at the first byte not written (tokio's
//! cancel-safety). It is implemented for `&[u8]`, `std::io::Cursor` over bytes, `VecDeque<u8>`
//! and through `&mut` and `Box`; `bytes::Bytes` ports as one of these.

use std::collections::VecDeque;
use std::future::poll_fn;
use std::io::{self, Cursor, IoSlice};
use std::pin::Pin;

use crate::io::AsyncWrite;

/// Bytes to be written, read front to back (the `bytes` crate's `Buf`, the methods tokio's
/// `write_buf` uses).
///
/// ```
/// use evloop::io::Buf;
///
/// let mut src: &[u8] = b"hello";
/// assert_eq!(src.remaining(), 5);
/// src.advance(2);
/// assert_eq!(src.chunk(), b"llo");
/// ```
pub trait Buf {
    /// How many bytes are left.
    ///
    /// ```
    /// use evloop::io::Buf;
    /// assert_eq!(std::io::Cursor::new(b"abc").remaining(), 3);
    /// ```
    fn remaining(&self) -> usize;

    /// The next contiguous bytes (empty only when nothing is left).
    ///
    /// ```
    /// use evloop::io::Buf;
    /// let mut q: std::collections::VecDeque<u8> = b"ab".iter().copied().collect();
    /// assert_eq!(q.chunk(), b"ab");
    /// q.advance(1);
    /// assert_eq!(q.chunk(), b"b");
    /// ```
    fn chunk(&self) -> &[u8];

    /// Consumes `cnt` bytes from the front. Panics if fewer remain.
    ///
    /// ```
    /// use evloop::io::Buf;
    /// let mut c = std::io::Cursor::new(b"abc".to_vec());
    /// c.advance(2);
    /// assert_eq!(c.position(), 2);
    /// ```
    fn advance(&mut self, cnt: usize);

    /// Whether any byte is left.
    ///
    /// ```
    /// use evloop::io::Buf;
    /// let empty: &[u8] = b"";
    /// assert!(!empty.has_remaining());
    /// ```
    fn has_remaining(&self) -> bool {
        self.remaining() > 0
    }

    /// Fills `dst` with the next chunks, as many as fit, and returns how many it filled (the
    /// default gives the one [`chunk`](Buf::chunk)).
    ///
    /// ```
    /// use std::io::IoSlice;
    /// use evloop::io::Buf;
    ///
    /// let src: &[u8] = b"xy";
    /// let mut slices = [IoSlice::new(&[]); 4];
    /// assert_eq!(src.chunks_vectored(&mut slices), 1);
    /// assert_eq!(&*slices[0], b"xy");
    /// ```
    fn chunks_vectored<'a>(&'a self, dst: &mut [IoSlice<'a>]) -> usize {
        match dst.first_mut() {
            Some(slot) if self.has_remaining() => {
                *slot = IoSlice::new(self.chunk());
                1
            }
            _ => 0,
        }
    }
}

impl Buf for &[u8] {
    fn remaining(&self) -> usize {
        self.len()
    }
    fn chunk(&self) -> &[u8] {
        self
    }
    fn advance(&mut self, cnt: usize) {
        *self = &self[cnt..];
    }
}

impl<T: AsRef<[u8]>> Buf for Cursor<T> {
    fn remaining(&self) -> usize {
        self.get_ref().as_ref().len().saturating_sub(self.position() as usize)
    }
    fn chunk(&self) -> &[u8] {
        let all = self.get_ref().as_ref();
        &all[(self.position() as usize).min(all.len())..]
    }
    fn advance(&mut self, cnt: usize) {
        assert!(cnt <= self.remaining(), "advance past the end of the buffer");
        self.set_position(self.position() + cnt as u64);
    }
}

impl Buf for VecDeque<u8> {
    fn remaining(&self) -> usize {
        self.len()
    }
    fn chunk(&self) -> &[u8] {
        let (front, back) = self.as_slices();
        if front.is_empty() { back } else { front }
    }
    fn advance(&mut self, cnt: usize) {
        assert!(cnt <= self.len(), "advance past the end of the buffer");
        self.drain(..cnt);
    }
    fn chunks_vectored<'a>(&'a self, dst: &mut [IoSlice<'a>]) -> usize {
        let (front, back) = self.as_slices();
        let mut n = 0;
        for (slot, part) in dst.iter_mut().zip([front, back].into_iter().filter(|p| !p.is_empty())) {
            *slot = IoSlice::new(part);
            n += 1;
        }
        n
    }
}

/// `Buf` through a pointer: every method passed on (the default `has_remaining` included).
macro_rules! forward_buf {
    ($($ptr:ty),*) => {
        $(impl<B: Buf + ?Sized> Buf for $ptr {
            fn remaining(&self) -> usize {
                (**self).remaining()
            }
            fn chunk(&self) -> &[u8] {
                (**self).chunk()
            }
            fn advance(&mut self, cnt: usize) {
                (**self).advance(cnt)
            }
            fn chunks_vectored<'a>(&'a self, dst: &mut [IoSlice<'a>]) -> usize {
                (**self).chunks_vectored(dst)
            }
        })*
    };
}

forward_buf!(&mut B, Box<B>);

/// How many chunks one vectored write offers at most (tokio's `MAX_VECTOR_ELEMENTS`).
const MAX_VECTOR_ELEMENTS: usize = 64;

/// One write of the front of `src` (vectored when the writer is), advancing `src` by what
/// the writer took.
pub(crate) async fn write_buf<W: AsyncWrite + Unpin + ?Sized, B: Buf + ?Sized>(
    w: &mut W,
    src: &mut B,
) -> io::Result<usize> {
    if !src.has_remaining() {
        return Ok(0);
    }
    let n = poll_fn(|cx| {
        if w.is_write_vectored() {
            let mut slices = [IoSlice::new(&[]); MAX_VECTOR_ELEMENTS];
            let cnt = src.chunks_vectored(&mut slices);
            Pin::new(&mut *w).poll_write_vectored(cx, &slices[..cnt])
        } else {
            Pin::new(&mut *w).poll_write(cx, src.chunk())
        }
    })
    .await?;
    src.advance(n);
    Ok(n)
}

/// Writes until `src` is empty; `WriteZero` when the writer stops accepting bytes.
pub(crate) async fn write_all_buf<W: AsyncWrite + Unpin + ?Sized, B: Buf + ?Sized>(
    w: &mut W,
    src: &mut B,
) -> io::Result<()> {
    while src.has_remaining() {
        if write_buf(w, src).await? == 0 {
            return Err(io::Error::new(
                io::ErrorKind::WriteZero,
                "write_all_buf: the writer accepted 0 bytes",
            ));
        }
    }
    Ok(())
}
