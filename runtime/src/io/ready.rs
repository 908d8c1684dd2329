//! [`Ready`]: the set of readiness events a socket has seen (tokio's `tokio::io::Ready`), as
//! `TcpStream::ready` and `UnixStream::ready` return it, and tokio's spellings of
//! [`Interest`] (`Interest::READABLE | Interest::WRITABLE`, `Interest::ERROR`).
//!
//! The bits are the reactor's own readiness bits (`event_loop::reactor::ready`: readable,
//! writable, read closed, write closed, error), copied out of the registration at the moment the
//! wait ends, so a `Ready` is a snapshot: the next `try_read` may still say `WouldBlock`.

use std::fmt;
use std::ops::{BitOr, BitOrAssign, Sub};

use crate::event_loop::reactor::ready as bits;
use crate::io::Interest;

/// Readiness events (tokio's `Ready`): what a socket was ready for when a
/// [`ready`](crate::net::TcpStream::ready) wait ended; also a set of interests, as
/// `Interest::READABLE | Interest::WRITABLE` makes.
///
/// ```
/// use evloop::io::Ready;
///
/// let r = Ready::READABLE | Ready::READ_CLOSED;
/// assert!(r.is_readable() && r.is_read_closed() && !r.is_writable());
/// ```
#[derive(Copy, Clone, PartialEq, Eq, Hash, Default)]
pub struct Ready(u8);

impl Ready {
    /// No event.
    pub const EMPTY: Ready = Ready(0);
    /// Data can be read (or a connection accepted).
    pub const READABLE: Ready = Ready(bits::READABLE);
    /// Data can be written.
    pub const WRITABLE: Ready = Ready(bits::WRITABLE);
    /// The peer shut its writing side: reads return end of stream.
    pub const READ_CLOSED: Ready = Ready(bits::READ_CLOSED);
    /// The connection hung up: writes fail.
    pub const WRITE_CLOSED: Ready = Ready(bits::WRITE_CLOSED);
    /// An error is pending: the next call reports it.
    pub const ERROR: Ready = Ready(bits::ERROR);
    /// An exceptional condition (`EPOLLPRI`: TCP urgent data), reported only for an
    /// [`AsyncFd`](crate::io::AsyncFd) made with [`Interest::PRIORITY`] in its interest.
    pub const PRIORITY: Ready = Ready(bits::PRIORITY);
    /// Every event.
    pub const ALL: Ready = Ready(bits::READ_ANY | bits::WRITE_ANY | bits::PRIORITY);

    pub(crate) fn from_bits(b: u8) -> Ready {
        Ready(b & Ready::ALL.0)
    }

    /// The reactor bits that satisfy this set taken as interests.
    pub(crate) fn interest_bits(self) -> u8 {
        let mut b = 0;
        if self.0 & (bits::READ_ANY & !bits::ERROR) != 0 {
            b |= bits::READ_ANY;
        }
        if self.0 & (bits::WRITE_ANY & !bits::ERROR) != 0 {
            b |= bits::WRITE_ANY;
        }
        b
    }

    /// The reactor bits, as they are.
    pub(crate) fn bits(self) -> u8 {
        self.0
    }

    /// The reactor bits an `AsyncFd` wait on this set (taken as interests) ends on:
    /// [`interest_bits`](Self::interest_bits), and `ERROR` when the set holds it (tokio's
    /// `Interest::ERROR`, a wait for the error alone).
    pub(crate) fn wait_bits(self) -> u8 {
        self.interest_bits() | (self.0 & (bits::ERROR | bits::PRIORITY))
    }

    /// No event at all.
    ///
    /// ```
    /// assert!(evloop::io::Ready::EMPTY.is_empty());
    /// ```
    pub fn is_empty(self) -> bool {
        self.0 == 0
    }

    /// Readable, read-closed or in error: a read would not wait (tokio counts all three).
    ///
    /// ```
    /// assert!(evloop::io::Ready::READ_CLOSED.is_readable());
    /// ```
    pub fn is_readable(self) -> bool {
        self.0 & bits::READ_ANY != 0
    }

    /// Writable, write-closed or in error: a write would not wait.
    ///
    /// ```
    /// assert!(evloop::io::Ready::WRITABLE.is_writable());
    /// ```
    pub fn is_writable(self) -> bool {
        self.0 & bits::WRITE_ANY != 0
    }

    /// An exceptional condition is pending (tokio's `is_priority`).
    ///
    /// ```
    /// use evloop::io::Ready;
    /// assert!(Ready::PRIORITY.is_priority() && !Ready::READABLE.is_priority());
    /// ```
    pub fn is_priority(self) -> bool {
        self.0 & bits::PRIORITY != 0
    }

    /// The peer shut its writing side.
    ///
    /// ```
    /// assert!(!evloop::io::Ready::READABLE.is_read_closed());
    /// ```
    pub fn is_read_closed(self) -> bool {
        self.0 & bits::READ_CLOSED != 0
    }

    /// The connection hung up for writing.
    ///
    /// ```
    /// assert!(evloop::io::Ready::WRITE_CLOSED.is_write_closed());
    /// ```
    pub fn is_write_closed(self) -> bool {
        self.0 & bits::WRITE_CLOSED != 0
    }

    /// An error is pending.
    ///
    /// ```
    /// assert!(evloop::io::Ready::ERROR.is_error());
    /// ```
    pub fn is_error(self) -> bool {
        self.0 & bits::ERROR != 0
    }
}

impl BitOr for Ready {
    type Output = Ready;
    fn bitor(self, other: Ready) -> Ready {
        Ready(self.0 | other.0)
    }
}

impl BitOrAssign for Ready {
    fn bitor_assign(&mut self, other: Ready) {
        self.0 |= other.0;
    }
}

impl Sub for Ready {
    type Output = Ready;
    fn sub(self, other: Ready) -> Ready {
        Ready(self.0 & !other.0)
    }
}

impl From<Interest> for Ready {
    fn from(interest: Interest) -> Ready {
        match interest {
            Interest::Read => Ready::READABLE,
            Interest::Write => Ready::WRITABLE,
        }
    }
}

impl fmt::Debug for Ready {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Ready")
            .field("is_readable", &(self.0 & bits::READABLE != 0))
            .field("is_writable", &(self.0 & bits::WRITABLE != 0))
            .field("is_read_closed", &self.is_read_closed())
            .field("is_write_closed", &self.is_write_closed())
            .field("is_error", &self.is_error())
            .finish()
    }
}

/// tokio's spellings of the two interests.
impl Interest {
    /// tokio's `Interest::READABLE`: [`Interest::Read`].
    ///
    /// ```
    /// use evloop::io::Interest;
    /// assert_eq!(Interest::READABLE, Interest::Read);
    /// ```
    pub const READABLE: Interest = Interest::Read;
    /// tokio's `Interest::WRITABLE`: [`Interest::Write`].
    ///
    /// ```
    /// use evloop::io::Interest;
    /// assert_eq!(Interest::WRITABLE, Interest::Write);
    /// ```
    pub const WRITABLE: Interest = Interest::Write;

    /// tokio's `Interest::ERROR`: a wait for a pending error alone (`EPOLLERR`, an ICMP error
    /// queued on a datagram socket, a transmit timestamp in the error queue). evloop's
    /// [`Interest`] is one of the two directions, so this is the interest *set* holding only
    /// the error, a [`Ready`], which every method taking `impl Into<Ready>` accepts
    /// ([`AsyncFd::ready`](crate::io::AsyncFd::ready), `TcpStream::ready`).
    ///
    /// ```
    /// use evloop::io::{Interest, Ready};
    /// assert_eq!(Interest::ERROR, Ready::ERROR);
    /// assert!((Interest::READABLE | Interest::ERROR).is_error());
    /// ```
    pub const ERROR: Ready = Ready::ERROR;

    /// tokio's `Interest::PRIORITY`: exceptional conditions (`EPOLLPRI`, such as TCP urgent data
    /// sent with `MSG_OOB`). Like [`ERROR`](Self::ERROR) it is a [`Ready`] set. epoll reports
    /// these only when asked, so it matters at registration:
    /// [`AsyncFd::with_interest`](crate::io::AsyncFd::with_interest) with it in the set adds
    /// `EPOLLPRI`; a wait on it then parks on the reading side.
    ///
    /// ```
    /// use std::os::unix::net::UnixStream;
    /// use evloop::io::{AsyncFd, Interest, Ready};
    ///
    /// assert_eq!(Interest::PRIORITY, Ready::PRIORITY);
    /// evloop::run(async {
    ///     let (a, _b) = UnixStream::pair()?;
    ///     let a = AsyncFd::with_interest(a, Interest::READABLE | Interest::PRIORITY)?;
    ///     assert!(a.ready(Interest::WRITABLE).await?.ready().is_writable());
    ///     Ok::<(), std::io::Error>(())
    /// })??;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub const PRIORITY: Ready = Ready::PRIORITY;

    /// Whether this is the read interest.
    ///
    /// ```
    /// assert!(evloop::io::Interest::READABLE.is_readable());
    /// ```
    pub fn is_readable(self) -> bool {
        self == Interest::Read
    }

    /// Whether this is the write interest.
    ///
    /// ```
    /// assert!(!evloop::io::Interest::READABLE.is_writable());
    /// ```
    pub fn is_writable(self) -> bool {
        self == Interest::Write
    }
}

/// Both interests at once, as tokio writes it: the result is the set `ready` waits on (it
/// ends when either is ready).
///
/// ```
/// use evloop::io::{Interest, Ready};
/// assert_eq!(Interest::READABLE | Interest::WRITABLE, Ready::READABLE | Ready::WRITABLE);
/// ```
impl BitOr for Interest {
    type Output = Ready;
    fn bitor(self, other: Interest) -> Ready {
        Ready::from(self) | Ready::from(other)
    }
}

/// An interest joined with an interest set (`Interest::READABLE | Interest::ERROR`).
///
/// ```
/// use evloop::io::{Interest, Ready};
/// assert_eq!(Interest::WRITABLE | Interest::ERROR, Ready::WRITABLE | Ready::ERROR);
/// ```
impl BitOr<Ready> for Interest {
    type Output = Ready;
    fn bitor(self, other: Ready) -> Ready {
        Ready::from(self) | other
    }
}

/// An interest set joined with one more interest (`Interest::ERROR | Interest::READABLE`).
///
/// ```
/// use evloop::io::{Interest, Ready};
/// assert_eq!(Interest::ERROR | Interest::READABLE, Ready::READABLE | Ready::ERROR);
/// ```
impl BitOr<Interest> for Ready {
    type Output = Ready;
    fn bitor(self, other: Interest) -> Ready {
        self | Ready::from(other)
    }
}
