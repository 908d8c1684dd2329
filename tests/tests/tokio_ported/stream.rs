//! tokio-stream's tests of `throttle` (time_throttle.rs), `chunks_timeout` (chunks_timeout.rs,
//! stream_chunks_timeout.rs) and `peekable` (stream_peekable.rs). Changed beyond imports:
//! tokio's paused clock (`time::pause`, `advance`, `start_paused`) is evloop's virtual clock
//! (`#[evloop::test(virtual_clock)]`, where `sleep(d)` is the `advance(d)`: the clock jumps to the
//! next deadline when the loop is idle); futures' `repeat` and `FutureExt::map` are written with
//! `stream::iter` and `async` blocks.

use std::time::Duration;

use evloop::stream::{self, Stream, StreamExt};
use evloop::time;

use crate::task;

#[evloop::test(virtual_clock)]
async fn throttle_usage() {
    let mut stream = task::spawn(stream::iter(std::iter::repeat(())).throttle(Duration::from_millis(100)));

    assert_ready!(stream.poll_next());
    assert_pending!(stream.poll_next());

    time::sleep(Duration::from_millis(90)).await;

    assert_pending!(stream.poll_next());

    time::sleep(Duration::from_millis(101)).await;

    assert!(stream.is_woken());

    assert_ready!(stream.poll_next());
}

#[evloop::test(virtual_clock)]
async fn chunks_timeout_usage() {
    let iter = vec![1, 2, 3].into_iter();
    let stream0 = stream::iter(iter);

    let iter = vec![4].into_iter();
    let stream1 = stream::iter(iter).then(move |n| async move {
        time::sleep(Duration::from_secs(3)).await;
        n
    });

    let chunk_stream = stream0.chain(stream1).chunks_timeout(4, Duration::from_secs(2));

    let mut chunk_stream = task::spawn(chunk_stream);

    assert_pending!(chunk_stream.poll_next());
    time::sleep(Duration::from_secs(2)).await;
    assert_eq!(chunk_stream.next().await, Some(vec![1, 2, 3]));

    assert_pending!(chunk_stream.poll_next());
    time::sleep(Duration::from_secs(2)).await;
    assert_eq!(chunk_stream.next().await, Some(vec![4]));
}

#[evloop::test(virtual_clock)]
async fn full_chunk_with_timeout() {
    let iter = vec![1, 2].into_iter();
    let stream0 = stream::iter(iter);

    let iter = vec![3].into_iter();
    let stream1 = stream::iter(iter).then(move |n| async move {
        time::sleep(Duration::from_secs(1)).await;
        n
    });

    let iter = vec![4].into_iter();
    let stream2 = stream::iter(iter).then(move |n| async move {
        time::sleep(Duration::from_secs(3)).await;
        n
    });

    let chunk_stream = stream0
        .chain(stream1)
        .chain(stream2)
        .chunks_timeout(3, Duration::from_secs(2));

    let mut chunk_stream = task::spawn(chunk_stream);

    assert_pending!(chunk_stream.poll_next());
    time::sleep(Duration::from_secs(2)).await;
    assert_eq!(chunk_stream.next().await, Some(vec![1, 2, 3]));

    assert_pending!(chunk_stream.poll_next());
    time::sleep(Duration::from_secs(2)).await;
    assert_eq!(chunk_stream.next().await, Some(vec![4]));
}

#[evloop::test(virtual_clock)]
async fn stream_chunks_remainder() -> Result<(), Box<dyn std::error::Error>> {
    let stream1 = stream::iter([5]).then(move |n| async move {
        time::sleep(Duration::from_secs(1)).await;
        n
    });
    let inner = stream::iter([1, 2, 3, 4]).chain(stream1);
    evloop::pin!(inner);

    let chunked = (&mut inner).chunks_timeout(10, Duration::from_millis(20));
    let mut chunked = task::spawn(chunked);
    assert_pending!(chunked.poll_next());

    let remainder = chunked.enter(|_, stream| stream.into_remainder());

    assert_eq!(remainder, vec![1, 2, 3, 4]);
    time::sleep(Duration::from_secs(2)).await;
    assert_eq!(inner.next().await, Some(5));
    Ok(())
}

#[evloop::test]
async fn size_hint_without_peek() {
    let mut s = stream::iter(vec![1, 2, 3]).peekable();
    assert_eq!(s.size_hint(), (3, Some(3)));
    s.next().await;
    assert_eq!(s.size_hint(), (2, Some(2)));
    s.next().await;
    assert_eq!(s.size_hint(), (1, Some(1)));
    s.next().await;
    assert_eq!(s.size_hint(), (0, Some(0)));
}

#[evloop::test]
async fn size_hint_with_peek() {
    let mut s = stream::iter(vec![1, 2, 3]).peekable();
    // before peek: all items are in inner stream
    assert_eq!(s.size_hint(), (3, Some(3)));
    // after peek: one item moves into self.peek buffer — total must still be 3
    let _ = s.peek().await;
    assert_eq!(s.size_hint(), (3, Some(3)));
    // consume the peeked item via next()
    assert_eq!(s.next().await, Some(1));
    assert_eq!(s.size_hint(), (2, Some(2)));
    // peek again
    let _ = s.peek().await;
    assert_eq!(s.size_hint(), (2, Some(2)));
    s.next().await;
    assert_eq!(s.size_hint(), (1, Some(1)));
    // peek the last item
    let _ = s.peek().await;
    assert_eq!(s.size_hint(), (1, Some(1)));
    s.next().await;
    assert_eq!(s.size_hint(), (0, Some(0)));
}

#[evloop::test]
async fn size_hint_empty_stream() {
    let mut s = stream::iter(Vec::<i32>::new()).peekable();
    assert_eq!(s.size_hint(), (0, Some(0)));
    assert_eq!(s.peek().await, None);
    assert_eq!(s.size_hint(), (0, Some(0)));
}

#[evloop::test]
async fn peek_returns_correct_item() {
    let mut s = stream::iter(vec![10, 20, 30]).peekable();
    assert_eq!(s.peek().await, Some(&10));
    assert_eq!(s.peek().await, Some(&10)); // second peek returns same item
    assert_eq!(s.next().await, Some(10)); // next() gives same item
    assert_eq!(s.next().await, Some(20));
    assert_eq!(s.next().await, Some(30));
    assert_eq!(s.next().await, None);
}

#[evloop::test]
async fn size_hint_overflow() {
    // When inner stream reports usize::MAX upper bound and an item is peeked,
    // checked_add must return None rather than wrapping.
    struct MaxHint(bool); // bool = whether to return one item
    impl Stream for MaxHint {
        type Item = ();
        fn poll_next(
            mut self: std::pin::Pin<&mut Self>,
            _cx: &mut std::task::Context<'_>,
        ) -> std::task::Poll<Option<()>> {
            if self.0 {
                self.0 = false;
                std::task::Poll::Ready(Some(()))
            } else {
                std::task::Poll::Ready(None)
            }
        }
        fn size_hint(&self) -> (usize, Option<usize>) {
            (usize::MAX, Some(usize::MAX))
        }
    }

    let mut s = MaxHint(true).peekable();
    // before peek: delegates directly to inner
    assert_eq!(s.size_hint(), (usize::MAX, Some(usize::MAX)));
    // after peek: peek_len=1, checked_add(1) on usize::MAX must give None not panic
    let _ = s.peek().await;
    assert_eq!(s.size_hint(), (usize::MAX, None));
}

#[evloop::test]
async fn size_hint_unbounded_upper() {
    // A stream that reports unknown upper bound
    struct Unbounded;
    impl Stream for Unbounded {
        type Item = u32;
        fn poll_next(self: std::pin::Pin<&mut Self>, _cx: &mut std::task::Context<'_>) -> std::task::Poll<Option<u32>> {
            std::task::Poll::Ready(Some(42))
        }
        fn size_hint(&self) -> (usize, Option<usize>) {
            (1, None)
        }
    }

    let mut s = Unbounded.peekable();
    assert_eq!(s.size_hint(), (1, None));
    let _ = s.peek().await;
    assert_eq!(s.size_hint(), (2, None)); // still unbounded after peek
}
