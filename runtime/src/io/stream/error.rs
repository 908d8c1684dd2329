//! [`StreamError`], what a failed stream operation returns (asyncio's `IncompleteReadError`,
//! `LimitOverrunError`, `RuntimeError` and connection errors in one enum), and `SavedError`, the
//! connection's error kept for every later operation to report.

use std::fmt;
use std::io;

use crate::io::net::SockAddr;

/// A failed stream operation; its `Display` names the operation. Converts into `io::Error`.
///
/// ```
/// use evloop::streams::StreamError;
///
/// evloop::run(async {
///     let server = evloop::streams::start_server(|_r, w| async move { w.write(b"abc") }, "127.0.0.1", 0).await?;
///     let (reader, _w) = evloop::streams::open_connection("127.0.0.1", server.local_addr().port()).await?;
///     // Five bytes wanted, three sent before the end: asyncio's IncompleteReadError.
///     match reader.readexactly(5).await {
///         Err(StreamError::Incomplete { partial, expected, .. }) => {
///             assert_eq!((partial.as_slice(), expected), (&b"abc"[..], Some(5)));
///         }
///         other => unreachable!("{other:?}"),
///     }
///     Ok::<(), Box<dyn std::error::Error>>(())
/// })??;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
#[non_exhaustive]
pub enum StreamError {
    /// The stream ended before the read could complete (asyncio's `IncompleteReadError`). The
    /// bytes that were there are consumed and returned here.
    Incomplete {
        /// The operation (`readexactly`, `readuntil`).
        op: &'static str,
        /// The bytes read before the end of the stream.
        partial: Vec<u8>,
        /// How many bytes were wanted (`None` for `readuntil`: a separator was wanted).
        expected: Option<usize>,
    },
    /// The separator was not found within the limit (asyncio's `LimitOverrunError`). The data
    /// stays in the buffer: read it with [`StreamReader::read`](crate::streams::StreamReader::read) or skip it.
    LimitOverrun {
        /// The operation (`readuntil`, `readline`).
        op: &'static str,
        /// How many buffered bytes were examined: the separator, if present, starts here or
        /// later.
        consumed: usize,
        /// The reader's limit.
        limit: usize,
    },
    /// Another read on this reader is still waiting for data (asyncio's `RuntimeError`).
    ReadInProgress {
        /// The operation that was refused.
        op: &'static str,
    },
    /// The connection failed, or the arguments were invalid.
    Io {
        /// The operation.
        op: &'static str,
        /// What went wrong (its message already names the operation).
        error: io::Error,
    },
}

impl StreamError {
    /// The operation that failed.
    ///
    /// ```
    /// evloop::run(async {
    ///     let server = evloop::streams::start_server(|_r, w| async move { w.write(b"no separator") }, "127.0.0.1", 0).await?;
    ///     let (reader, _w) = evloop::streams::open_connection("127.0.0.1", server.local_addr().port()).await?;
    ///     let err = reader.readuntil(b";").await.unwrap_err();
    ///     assert_eq!(err.operation(), "readuntil");
    ///     Ok::<(), Box<dyn std::error::Error>>(())
    /// })??;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn operation(&self) -> &'static str {
        match self {
            StreamError::Incomplete { op, .. }
            | StreamError::LimitOverrun { op, .. }
            | StreamError::ReadInProgress { op }
            | StreamError::Io { op, .. } => op,
        }
    }

    /// The bytes an [`StreamError::Incomplete`] carries (empty for the other kinds).
    ///
    /// ```
    /// evloop::run(async {
    ///     let server = evloop::streams::start_server(|_r, w| async move { w.write(b"half") }, "127.0.0.1", 0).await?;
    ///     let (reader, _w) = evloop::streams::open_connection("127.0.0.1", server.local_addr().port()).await?;
    ///     let err = reader.readexactly(8).await.unwrap_err();
    ///     assert_eq!(err.partial(), b"half"); // the bytes are not lost
    ///     Ok::<(), Box<dyn std::error::Error>>(())
    /// })??;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn partial(&self) -> &[u8] {
        match self {
            StreamError::Incomplete { partial, .. } => partial,
            _ => &[],
        }
    }

    /// The `io::ErrorKind` this error converts to.
    ///
    /// ```
    /// use std::io::ErrorKind;
    ///
    /// evloop::run(async {
    ///     let server = evloop::streams::start_server(|_r, w| async move { w.write(b"x") }, "127.0.0.1", 0).await?;
    ///     let (reader, _w) = evloop::streams::open_connection("127.0.0.1", server.local_addr().port()).await?;
    ///     let err = reader.readexactly(2).await.unwrap_err();
    ///     assert_eq!(err.kind(), ErrorKind::UnexpectedEof);
    ///     assert_eq!(std::io::Error::from(err).kind(), ErrorKind::UnexpectedEof); // `?` into io::Error
    ///     Ok::<(), Box<dyn std::error::Error>>(())
    /// })??;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn kind(&self) -> io::ErrorKind {
        match self {
            StreamError::Incomplete { .. } => io::ErrorKind::UnexpectedEof,
            StreamError::LimitOverrun { .. } => io::ErrorKind::InvalidData,
            StreamError::ReadInProgress { .. } => io::ErrorKind::Other,
            StreamError::Io { error, .. } => error.kind(),
        }
    }
}

impl fmt::Display for StreamError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StreamError::Incomplete {
                op,
                partial,
                expected: Some(n),
            } => write!(f, "{op}: the stream ended after {} of {n} bytes", partial.len()),
            StreamError::Incomplete {
                op,
                partial,
                expected: None,
            } => write!(
                f,
                "{op}: the stream ended before the separator ({} bytes read)",
                partial.len()
            ),
            StreamError::LimitOverrun { op, consumed, limit } => write!(
                f,
                "{op}: no separator within the limit of {limit} bytes ({consumed} bytes examined; \
                 the data stays buffered)"
            ),
            StreamError::ReadInProgress { op } => {
                write!(f, "{op}: another read on this stream is already waiting for data")
            }
            // The io::Error's message starts with the operation already.
            StreamError::Io { error, .. } => write!(f, "{error}"),
        }
    }
}

impl std::error::Error for StreamError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            StreamError::Io { error, .. } => Some(error),
            _ => None,
        }
    }
}

impl From<StreamError> for io::Error {
    fn from(e: StreamError) -> io::Error {
        match e {
            StreamError::Io { error, .. } => error,
            other => io::Error::new(other.kind(), other),
        }
    }
}

/// A connection error, kept so that every later operation can report it (`io::Error` is not
/// `Clone`).
#[derive(Clone)]
pub(super) struct SavedError {
    pub(super) kind: io::ErrorKind,
    pub(super) message: String,
}

impl SavedError {
    pub(super) fn new(e: &io::Error, peer: Option<&SockAddr>) -> SavedError {
        let message = match peer {
            Some(peer) => format!("the connection to {peer} failed: {e}"),
            None => format!("the connection failed: {e}"),
        };
        SavedError {
            kind: e.kind(),
            message,
        }
    }

    pub(super) fn to_io(&self, op: &str) -> io::Error {
        io::Error::new(self.kind, format!("{op}: {}", self.message))
    }
}
