//! tokio's shapes of a read: [`ReadBuf`], a caller's buffer with a filled part that a read
//! advances (what `AsyncRead::poll_read_buf` fills), and [`BufMut`], the growable targets of
//! `AsyncReadExt::read_buf` (`Vec<u8>`, which grows when full, a `&mut [u8]` that shrinks as it
//! fills, and a `ReadBuf`).
//!
//! evloop's [`AsyncRead`] keeps its `poll_read(&mut [u8]) -> usize` shape (the echo path's
//! instruction count is measured on it); a `ReadBuf` read is the provided `poll_read_buf` over
//! it, which a type may override. The one difference from tokio's `ReadBuf`: evloop's runtime
//! has no `unsafe` outside two modules, so its buffer is always initialized memory (`&mut [u8]`,
//! no `MaybeUninit`), and a `Vec` target is zero-filled up to its capacity before the read.

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};

use crate::io::AsyncRead;

/// A buffer a read fills from the front (tokio's `ReadBuf`): `filled()` is what the reads put
/// there so far, the rest is free. Wraps a caller's `&mut [u8]`.
///
/// ```
/// use evloop::io::{AsyncRead, ReadBuf};
/// use std::future::poll_fn;
/// use std::pin::Pin;
///
/// evloop::run(async {
///     let mut src: &[u8] = b"hello world";
///     let mut storage = [0u8; 5];
///     let mut buf = ReadBuf::new(&mut storage);
///     poll_fn(|cx| Pin::new(&mut src).poll_read_buf(cx, &mut buf)).await?;
///     assert_eq!((buf.filled(), buf.remaining()), (&b"hello"[..], 0));
///     Ok::<(), std::io::Error>(())
/// })??;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub struct ReadBuf<'a> {
    buf: &'a mut [u8],
    filled: usize,
}

impl<'a> ReadBuf<'a> {
    /// A buffer over `buf`, nothing filled yet.
    ///
    /// ```
    /// let mut storage = [0u8; 16];
    /// let buf = evloop::io::ReadBuf::new(&mut storage);
    /// assert_eq!((buf.capacity(), buf.filled().len(), buf.remaining()), (16, 0, 16));
    /// ```
    pub fn new(buf: &'a mut [u8]) -> ReadBuf<'a> {
        ReadBuf { buf, filled: 0 }
    }

    /// The size of the whole buffer.
    ///
    /// ```
    /// let mut storage = [0u8; 8];
    /// assert_eq!(evloop::io::ReadBuf::new(&mut storage).capacity(), 8);
    /// ```
    pub fn capacity(&self) -> usize {
        self.buf.len()
    }

    /// The bytes filled so far.
    ///
    /// ```
    /// let mut storage = [0u8; 8];
    /// let mut buf = evloop::io::ReadBuf::new(&mut storage);
    /// buf.put_slice(b"abc");
    /// assert_eq!(buf.filled(), b"abc");
    /// ```
    pub fn filled(&self) -> &[u8] {
        &self.buf[..self.filled]
    }

    /// The bytes filled so far, mutably.
    ///
    /// ```
    /// let mut storage = [0u8; 8];
    /// let mut buf = evloop::io::ReadBuf::new(&mut storage);
    /// buf.put_slice(b"abc");
    /// buf.filled_mut().make_ascii_uppercase();
    /// assert_eq!(buf.filled(), b"ABC");
    /// ```
    pub fn filled_mut(&mut self) -> &mut [u8] {
        &mut self.buf[..self.filled]
    }

    /// The filled bytes, for as long as the storage lives.
    ///
    /// ```
    /// let mut storage = [0u8; 8];
    /// let mut buf = evloop::io::ReadBuf::new(&mut storage);
    /// buf.put_slice(b"ab");
    /// assert_eq!(buf.into_filled(), b"ab");
    /// ```
    pub fn into_filled(self) -> &'a mut [u8] {
        &mut self.buf[..self.filled]
    }

    /// The initialized part: the whole buffer (evloop's buffers are always initialized).
    ///
    /// ```
    /// let mut storage = [7u8; 4];
    /// let buf = evloop::io::ReadBuf::new(&mut storage);
    /// assert_eq!(buf.initialized(), &[7; 4]);
    /// ```
    pub fn initialized(&self) -> &[u8] {
        self.buf
    }

    /// The free part, to read into; call [`advance`](Self::advance) with what was written. In
    /// tokio this is `&mut [MaybeUninit<u8>]`; here it is initialized memory.
    ///
    /// ```
    /// let mut storage = [0u8; 4];
    /// let mut buf = evloop::io::ReadBuf::new(&mut storage);
    /// buf.unfilled_mut()[..2].copy_from_slice(b"hi");
    /// buf.advance(2);
    /// assert_eq!(buf.filled(), b"hi");
    /// ```
    pub fn unfilled_mut(&mut self) -> &mut [u8] {
        &mut self.buf[self.filled..]
    }

    /// The free part (tokio's name for a read target that must be initialized).
    ///
    /// ```
    /// let mut storage = [0u8; 4];
    /// let mut buf = evloop::io::ReadBuf::new(&mut storage);
    /// buf.put_slice(b"a");
    /// assert_eq!(buf.initialize_unfilled().len(), 3);
    /// ```
    pub fn initialize_unfilled(&mut self) -> &mut [u8] {
        &mut self.buf[self.filled..]
    }

    /// The first `n` bytes of the free part.
    ///
    /// # Panics
    /// If `n` is more than [`remaining`](Self::remaining).
    ///
    /// ```
    /// let mut storage = [0u8; 4];
    /// let mut buf = evloop::io::ReadBuf::new(&mut storage);
    /// assert_eq!(buf.initialize_unfilled_to(3).len(), 3);
    /// ```
    #[track_caller]
    pub fn initialize_unfilled_to(&mut self, n: usize) -> &mut [u8] {
        assert!(n <= self.remaining(), "n overflows remaining");
        &mut self.buf[self.filled..self.filled + n]
    }

    /// A new `ReadBuf` over at most `n` bytes of the free part (its filled part starts
    /// empty); what is read into it is not counted here until [`advance`](Self::advance).
    ///
    /// ```
    /// let mut storage = [0u8; 8];
    /// let mut buf = evloop::io::ReadBuf::new(&mut storage);
    /// let mut part = buf.take(3);
    /// part.put_slice(b"xyz");
    /// assert_eq!(part.remaining(), 0);
    /// buf.advance(3);
    /// assert_eq!(buf.filled(), b"xyz");
    /// ```
    pub fn take(&mut self, n: usize) -> ReadBuf<'_> {
        let end = self.filled + n.min(self.remaining());
        ReadBuf::new(&mut self.buf[self.filled..end])
    }

    /// How many bytes are free.
    ///
    /// ```
    /// let mut storage = [0u8; 8];
    /// let mut buf = evloop::io::ReadBuf::new(&mut storage);
    /// buf.put_slice(b"abc");
    /// assert_eq!(buf.remaining(), 5);
    /// ```
    pub fn remaining(&self) -> usize {
        self.buf.len() - self.filled
    }

    /// Forgets what was filled.
    ///
    /// ```
    /// let mut storage = [0u8; 8];
    /// let mut buf = evloop::io::ReadBuf::new(&mut storage);
    /// buf.put_slice(b"abc");
    /// buf.clear();
    /// assert!(buf.filled().is_empty());
    /// ```
    pub fn clear(&mut self) {
        self.filled = 0;
    }

    /// Counts `n` more bytes of the free part as filled.
    ///
    /// # Panics
    /// If that would fill more than the buffer holds.
    ///
    /// ```
    /// let mut storage = *b"abcd";
    /// let mut buf = evloop::io::ReadBuf::new(&mut storage);
    /// buf.advance(2);
    /// assert_eq!(buf.filled(), b"ab");
    /// ```
    #[track_caller]
    pub fn advance(&mut self, n: usize) {
        let filled = self.filled.checked_add(n).expect("filled overflow");
        self.set_filled(filled);
    }

    /// Sets how many bytes are filled.
    ///
    /// # Panics
    /// If `n` is more than the capacity.
    ///
    /// ```
    /// let mut storage = *b"abcd";
    /// let mut buf = evloop::io::ReadBuf::new(&mut storage);
    /// buf.set_filled(3);
    /// buf.set_filled(1); // shrinking is fine too
    /// assert_eq!(buf.filled(), b"a");
    /// ```
    #[track_caller]
    pub fn set_filled(&mut self, n: usize) {
        assert!(n <= self.buf.len(), "filled must not become larger than initialized");
        self.filled = n;
    }

    /// Appends `data` to the filled part.
    ///
    /// # Panics
    /// If `data` is longer than [`remaining`](Self::remaining).
    ///
    /// ```
    /// let mut storage = [0u8; 8];
    /// let mut buf = evloop::io::ReadBuf::new(&mut storage);
    /// buf.put_slice(b"ab");
    /// buf.put_slice(b"cd");
    /// assert_eq!(buf.filled(), b"abcd");
    /// ```
    #[track_caller]
    pub fn put_slice(&mut self, data: &[u8]) {
        assert!(self.remaining() >= data.len(), "buf.len() must fit in remaining()");
        self.buf[self.filled..self.filled + data.len()].copy_from_slice(data);
        self.filled += data.len();
    }
}

/// Where [`read_buf`](crate::io::AsyncReadExt::read_buf) puts what it reads: the part of
/// `bytes::BufMut` a read needs (the runtime has no dependency on `bytes`). Implemented for
/// `Vec<u8>` (appends; grows by 64 bytes when full, as `bytes` does), `&mut [u8]` (fills from
/// the front and shrinks past what it filled) and [`ReadBuf`].
///
/// ```
/// use evloop::io::BufMut;
///
/// let v: Vec<u8> = Vec::with_capacity(4);
/// assert!(v.remaining_mut() > 4); // a Vec grows
/// let mut storage = [0u8; 4];
/// let s: &mut [u8] = &mut storage;
/// assert_eq!(s.remaining_mut(), 4);
/// ```
pub trait BufMut {
    /// How many more bytes fit (`read_buf` returns 0 without reading when none do).
    ///
    /// ```
    /// use evloop::io::{BufMut, ReadBuf};
    ///
    /// let mut storage = [0u8; 4];
    /// let mut buf = ReadBuf::new(&mut storage);
    /// buf.put_slice(b"abc");
    /// assert_eq!(buf.remaining_mut(), 1);
    /// ```
    fn remaining_mut(&self) -> usize;

    /// One read of `reader` into the free space; returns how many bytes it put there.
    ///
    /// ```
    /// use std::future::poll_fn;
    /// use std::pin::Pin;
    /// use evloop::io::BufMut;
    ///
    /// evloop::run(async {
    ///     let mut src: &[u8] = b"data";
    ///     let mut out = b"> ".to_vec();
    ///     let n = poll_fn(|cx| out.poll_read_from(Pin::new(&mut src), cx)).await?;
    ///     assert_eq!((n, &out[..]), (4, &b"> data"[..]));
    ///     Ok::<(), std::io::Error>(())
    /// })??;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    fn poll_read_from<R: AsyncRead + ?Sized>(
        &mut self,
        reader: Pin<&mut R>,
        cx: &mut Context<'_>,
    ) -> Poll<io::Result<usize>>;
}

impl BufMut for Vec<u8> {
    fn remaining_mut(&self) -> usize {
        isize::MAX as usize - self.len()
    }

    fn poll_read_from<R: AsyncRead + ?Sized>(
        &mut self,
        reader: Pin<&mut R>,
        cx: &mut Context<'_>,
    ) -> Poll<io::Result<usize>> {
        if self.capacity() == self.len() {
            self.reserve(64);
        }
        let start = self.len();
        // No uninitialized memory in this crate: zero the spare capacity, read into it, and
        // cut back to what was read.
        self.resize(self.capacity(), 0);
        let r = ReadBuf::new(&mut self[start..]).poll_read_from(reader, cx);
        let n = match r {
            Poll::Ready(Ok(n)) => n,
            _ => 0,
        };
        self.truncate(start + n);
        r
    }
}

impl BufMut for &mut [u8] {
    fn remaining_mut(&self) -> usize {
        self.len()
    }

    fn poll_read_from<R: AsyncRead + ?Sized>(
        &mut self,
        reader: Pin<&mut R>,
        cx: &mut Context<'_>,
    ) -> Poll<io::Result<usize>> {
        let r = ReadBuf::new(self).poll_read_from(reader, cx);
        if let Poll::Ready(Ok(n)) = r {
            let rest = std::mem::take(self);
            *self = &mut rest[n..];
        }
        r
    }
}

impl BufMut for ReadBuf<'_> {
    fn remaining_mut(&self) -> usize {
        self.remaining()
    }

    fn poll_read_from<R: AsyncRead + ?Sized>(
        &mut self,
        reader: Pin<&mut R>,
        cx: &mut Context<'_>,
    ) -> Poll<io::Result<usize>> {
        let before = self.filled;
        reader.poll_read_buf(cx, self).map_ok(|()| self.filled - before)
    }
}
