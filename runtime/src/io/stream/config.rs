//! The options of a connection's streams (asyncio's `limit=`), which the opening builders
//! (`open.rs`) carry to each connection's `Conn`, and the default [`DEFAULT_LIMIT`].

/// The default buffer limit of a [`StreamReader`](crate::streams::StreamReader) (asyncio's `_DEFAULT_LIMIT`, 64 KiB).
///
/// ```
/// evloop::run(async {
///     let server = evloop::streams::start_server(|_r, _w| async {}, "127.0.0.1", 0).await?;
///     let (reader, _w) = evloop::streams::open_connection("127.0.0.1", server.local_addr().port()).await?;
///     assert_eq!(reader.limit(), evloop::streams::DEFAULT_LIMIT);
///     Ok::<(), Box<dyn std::error::Error>>(())
/// })??;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub const DEFAULT_LIMIT: usize = 64 * 1024;

/// Options for the streams of a connection or a server, set through the builders' methods.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct StreamConfig {
    /// The reader's buffer limit: the longest line or `readuntil` chunk accepted, and the
    /// back-pressure threshold (reading pauses above twice the limit, resumes at the limit).
    pub(crate) limit: usize,
}

impl StreamConfig {
    pub(crate) const fn new() -> StreamConfig {
        StreamConfig { limit: DEFAULT_LIMIT }
    }

    /// 0 is taken as 1.
    pub(crate) const fn limit(mut self, limit: usize) -> StreamConfig {
        self.limit = if limit == 0 { 1 } else { limit };
        self
    }
}
