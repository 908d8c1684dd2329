//! `OwnedPoll`: polls an `async` operation of a source that the operation borrows (a
//! receiver's `recv`, a listener's `accept`) as a stream, for the wrappers of
//! `evloop::stream::wrappers`. Between values the wrapper owns the source; while one is awaited
//! the source lives inside a boxed future (`async move { (source.op().await, source) }`) that
//! gives it back with the value, so nothing borrows across polls and a pending operation is
//! never dropped and restarted (which would lose its place in a wait queue). One allocation per
//! value: tokio-stream's wrappers pay the same with their reusable boxed futures.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

type Op<S, T> = Pin<Box<dyn Future<Output = (T, S)>>>;

pub(crate) struct OwnedPoll<S, T> {
    source: Option<S>,
    op: Option<Op<S, T>>,
    start: fn(S) -> Op<S, T>,
}

impl<S, T> OwnedPoll<S, T> {
    pub(crate) fn new(source: S, start: fn(S) -> Op<S, T>) -> Self {
        OwnedPoll {
            source: Some(source),
            op: None,
            start,
        }
    }

    pub(crate) fn poll(&mut self, cx: &mut Context<'_>) -> Poll<T> {
        if self.op.is_none() {
            let source = self
                .source
                .take()
                .expect("OwnedPoll: the source is here between operations");
            self.op = Some((self.start)(source));
        }
        let op = self.op.as_mut().expect("started above");
        let (value, source) = std::task::ready!(op.as_mut().poll(cx));
        self.op = None;
        self.source = Some(source);
        Poll::Ready(value)
    }

    /// The source, unless an operation is in flight (it holds the source then).
    pub(crate) fn source(&self) -> Option<&S> {
        self.source.as_ref()
    }

    /// The source, unless an operation is in flight (dropping it drops the source).
    pub(crate) fn into_source(self) -> Option<S> {
        self.source
    }
}
