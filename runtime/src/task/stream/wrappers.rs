//! [`IntervalStream`]: an [`Interval`](crate::time::Interval) as a stream of its ticks
//! (tokio-stream's `wrappers::IntervalStream`). The wrappers of the layers above (receivers,
//! lines, listeners) live with their sources; `evloop::stream::wrappers` gathers them all.

use std::pin::Pin;
use std::task::{Context, Poll};

use super::Stream;
use crate::task::instant::Instant;
use crate::task::interval::Interval;

/// The ticks of an [`Interval`](crate::time::Interval), as a stream that never ends.
///
/// ```
/// use std::time::Duration;
/// use evloop::stream::{StreamExt, wrappers::IntervalStream};
///
/// evloop::event_loop::Builder::new().virtual_clock(true).run(async {
///     let ticks = IntervalStream::new(evloop::time::interval(Duration::from_secs(1)));
///     let v: Vec<_> = ticks.take(3).collect().await;
///     assert_eq!(v[2] - v[0], Duration::from_secs(2));
/// })?;
/// # Ok::<(), evloop::task::RunError>(())
/// ```
#[must_use = "streams do nothing unless polled"]
#[derive(Debug)]
pub struct IntervalStream {
    interval: Interval,
}

impl IntervalStream {
    /// Wraps `interval`.
    ///
    /// ```
    /// let s = evloop::stream::wrappers::IntervalStream::new(evloop::time::interval(std::time::Duration::from_secs(1)));
    /// assert_eq!(s.as_ref().period(), std::time::Duration::from_secs(1));
    /// ```
    pub fn new(interval: Interval) -> Self {
        IntervalStream { interval }
    }

    /// The interval back.
    ///
    /// ```
    /// let s = evloop::stream::wrappers::IntervalStream::new(evloop::time::interval(std::time::Duration::from_secs(1)));
    /// let _iv: evloop::time::Interval = s.into_inner();
    /// ```
    pub fn into_inner(self) -> Interval {
        self.interval
    }
}

impl AsRef<Interval> for IntervalStream {
    fn as_ref(&self) -> &Interval {
        &self.interval
    }
}

impl AsMut<Interval> for IntervalStream {
    fn as_mut(&mut self) -> &mut Interval {
        &mut self.interval
    }
}

impl Stream for IntervalStream {
    type Item = Instant;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Instant>> {
        self.interval.poll_tick(cx).map(Some)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (usize::MAX, None)
    }
}
