//! [`StreamConfig`], the options of a connection's streams (asyncio's `limit=`), and its
//! default [`DEFAULT_LIMIT`].

/// The default buffer limit of a [`StreamReader`](crate::streams::StreamReader) (asyncio's `_DEFAULT_LIMIT`, 64 KiB).
pub const DEFAULT_LIMIT: usize = 64 * 1024;

/// Options for the streams of a connection or a server (asyncio's `limit=` argument).
///
/// ```
/// let config = evloop::streams::StreamConfig::new().limit(1024);
/// assert_eq!(config.get_limit(), 1024);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[must_use = "builders do nothing until they are built, run or awaited"]
pub struct StreamConfig {
    limit: usize,
}

impl Default for StreamConfig {
    fn default() -> Self {
        StreamConfig::new()
    }
}

impl StreamConfig {
    /// The defaults: a 64 KiB limit.
    ///
    /// ```
    /// let config = evloop::streams::StreamConfig::new();
    /// assert_eq!(config.get_limit(), 64 * 1024); // asyncio's default limit
    /// assert_eq!(config, evloop::streams::StreamConfig::default());
    /// ```
    pub const fn new() -> StreamConfig {
        StreamConfig { limit: DEFAULT_LIMIT }
    }

    /// The reader's buffer limit: the longest line or `readuntil` chunk accepted, and the
    /// back-pressure threshold (reading pauses above twice the limit, resumes at the limit).
    /// 0 is taken as 1.
    ///
    /// ```
    /// use evloop::streams::{StreamConfig, StreamError};
    ///
    /// evloop::run(async {
    ///     // A server whose client sends a line longer than the limit.
    ///     let server = evloop::streams::start_server(
    ///         |_r, w| async move { w.write(b"this line is too long\n") },
    ///         "127.0.0.1",
    ///         0,
    ///     )
    ///     .await?;
    ///     let config = StreamConfig::new().limit(8);
    ///     let (reader, _w) = evloop::streams::open_connection_with("127.0.0.1", server.local_addr().port(), config).await?;
    ///     let err = reader.readline().await.unwrap_err();
    ///     assert!(matches!(err, StreamError::LimitOverrun { limit: 8, .. }));
    ///     Ok::<(), Box<dyn std::error::Error>>(())
    /// })??;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub const fn limit(mut self, limit: usize) -> StreamConfig {
        self.limit = if limit == 0 { 1 } else { limit };
        self
    }

    /// The configured limit.
    ///
    /// ```
    /// assert_eq!(evloop::streams::StreamConfig::new().limit(0).get_limit(), 1); // 0 is taken as 1
    /// ```
    pub const fn get_limit(&self) -> usize {
        self.limit
    }
}
