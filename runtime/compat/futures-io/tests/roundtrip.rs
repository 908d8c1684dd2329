//! Both directions of `Compat` over real sockets: futures-util's I/O helpers driving evloop's
//! Unix sockets, evloop's helpers driving a futures-io stream (an evloop socket wrapped twice),
//! buffered reads through `AsyncBufRead` both ways, and `poll_close` reaching `shutdown`.

use evloop::io::{AsyncBufReadExt as _, AsyncWriteExt as _, BufReader};
use evloop::net::UnixStream;
use evloop_futures::CompatExt;
use futures_util::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt};

#[test]
fn futures_helpers_drive_evloop_sockets() {
    evloop::run(async {
        let (a, b) = UnixStream::pair()?;
        let (mut a, mut b) = (a.compat(), BufReader::new(b).compat());
        a.write_all(b"line one\nline two\n").await?;
        a.close().await?; // poll_close -> poll_shutdown: the peer sees end of stream
        let mut first = String::new();
        b.read_line(&mut first).await?;
        assert_eq!(first, "line one\n");
        let mut rest = Vec::new();
        b.read_to_end(&mut rest).await?;
        assert_eq!(rest, b"line two\n");
        Ok::<(), std::io::Error>(())
    })
    .unwrap()
    .unwrap();
}

#[test]
fn evloop_helpers_drive_a_futures_io_stream() {
    evloop::run(async {
        let (a, b) = UnixStream::pair()?;
        // evloop -> futures-io -> evloop: the outer Compat reaches evloop's traits only
        // through futures-io's.
        let (mut a, b) = (a.compat().compat(), b.compat());
        a.write_all(b"ping\npong\n").await?;
        a.shutdown().await?;
        let mut lines = BufReader::new(b.compat()).lines();
        assert_eq!(lines.next_line().await?.as_deref(), Some("ping"));
        assert_eq!(lines.next_line().await?.as_deref(), Some("pong"));
        assert_eq!(lines.next_line().await?, None);
        Ok::<(), std::io::Error>(())
    })
    .unwrap()
    .unwrap();
}
