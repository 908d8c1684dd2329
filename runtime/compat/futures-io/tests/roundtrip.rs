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

/// A futures-core stream (hand-written, pending once between values, as a real source would be)
/// read through evloop's `StreamExt`, and evloop's stream read through futures-util's.
#[test]
fn streams_pass_both_ways_with_their_wakeups_and_size_hints() {
    use evloop::stream::StreamExt as _;
    use evloop_futures::CompatExt;
    use std::pin::Pin;
    use std::task::{Context, Poll};

    struct Counter {
        next: u32,
        end: u32,
        yielded: bool,
    }
    impl futures_core::Stream for Counter {
        type Item = u32;
        fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<u32>> {
            if self.next == self.end {
                return Poll::Ready(None);
            }
            if !self.yielded {
                // Pending once before each value, waking at once: the adapter must pass the
                // waker through or the task never runs again.
                self.yielded = true;
                cx.waker().wake_by_ref();
                return Poll::Pending;
            }
            self.yielded = false;
            self.next += 1;
            Poll::Ready(Some(self.next - 1))
        }
        fn size_hint(&self) -> (usize, Option<usize>) {
            let left = (self.end - self.next) as usize;
            (left, Some(left))
        }
    }

    evloop::run(async {
        let theirs = Counter {
            next: 0,
            end: 4,
            yielded: false,
        }
        .compat();
        assert_eq!(evloop::stream::Stream::size_hint(&theirs), (4, Some(4)));
        let doubled: Vec<u32> = theirs.map(|v| v * 2).collect().await;
        assert_eq!(doubled, [0, 2, 4, 6]);

        let ours = evloop::stream::iter(["a", "b"]).compat();
        assert_eq!(futures_core::Stream::size_hint(&ours), (2, Some(2)));
        let got: Vec<&str> = futures_util::StreamExt::collect(ours).await;
        assert_eq!(got, ["a", "b"]);
    })
    .unwrap();
}
