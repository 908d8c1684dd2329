//! What `select!` and `join!` expand to, kept out of the macros so that the expansion stays small
//! and safe: a branch that polls its future without `unsafe` pin projection, and no larger than it
//! has to be.
//!
//! A future that is `Unpin` needs no fixed place: the branch owns it (`Option<F>`), moves with the
//! `poll_fn` closure and polls it through `Pin::new`. Any other future is pinned once in the
//! caller's frame (`core::pin::pin!`) and the branch holds that `Pin<&mut Option<F>>`: one pointer
//! more than tokio's projection of a pinned tuple, which needs `unsafe` in the caller's crate. The
//! two are told apart at compile time by method resolution ("autoref specialization"):
//! `(&&Probe(..)).__evloop_split()` finds [`SplitUnpin`] (implemented for `&Probe<F>` when
//! `F: Unpin`) before [`SplitPinned`] (for `Probe<F>`, one dereference further). Where the type is
//! generic and not known to be `Unpin`, the pinned path is taken, which is always correct.
//!
//! The data flow per branch: the future (or `None` for a disabled branch) goes into a [`Probe`];
//! the split gives the part to pin and the part to own (one of the two is `()`); the pinned part's
//! reference and the owned part become one [`Branch`] ([`IntoBranch`]); the `poll_fn` polls each
//! `Branch` until it is ready, after which the branch is empty and never polled again.

use std::cell::Cell;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

/// A branch's future before it is sorted into "owned" (`Unpin`) or "pinned"; a `Cell` so that the
/// split can take it out through a shared reference (which the method-resolution trick needs).
pub struct Probe<F>(Cell<Option<F>>);

impl<F> Probe<F> {
    /// Holds a branch's future (`None`: the branch is disabled).
    #[inline(always)]
    pub fn new(fut: Option<F>) -> Self {
        Probe(Cell::new(fut))
    }
}

/// The split of an `Unpin` future: nothing to pin, the future owned.
pub trait SplitUnpin<F> {
    /// `((), the future)`.
    fn __evloop_split(&self) -> ((), Option<F>);
}

/// The split of any other future: the future to pin, nothing owned.
pub trait SplitPinned<F> {
    /// `(the future, ())`.
    fn __evloop_split(&self) -> (Option<F>, ());
}

impl<F: Unpin> SplitUnpin<F> for &Probe<F> {
    #[inline(always)]
    fn __evloop_split(&self) -> ((), Option<F>) {
        ((), self.0.take())
    }
}

impl<F> SplitPinned<F> for Probe<F> {
    #[inline(always)]
    fn __evloop_split(&self) -> (Option<F>, ()) {
        (self.0.take(), ())
    }
}

/// The pinned part's reference and the owned part, made into one [`Branch`]: for an `Unpin`
/// future the reference (to `()`) is dropped here, so that it is not kept across the `.await`.
pub trait IntoBranch {
    /// The branch this pair becomes.
    type Branch: Branch;
    /// Makes the branch.
    fn into_branch(self) -> Self::Branch;
}

impl<F: Future + Unpin> IntoBranch for (Pin<&mut ()>, Option<F>) {
    type Branch = Option<F>;
    #[inline(always)]
    fn into_branch(self) -> Option<F> {
        self.1
    }
}

impl<'a, F: Future> IntoBranch for (Pin<&'a mut Option<F>>, ()) {
    type Branch = Pin<&'a mut Option<F>>;
    #[inline(always)]
    fn into_branch(self) -> Pin<&'a mut Option<F>> {
        self.0
    }
}

/// One branch of a `select!` or `join!`: its future until that is ready, then nothing.
pub trait Branch {
    /// The future's output.
    type Output;
    /// Polls the future if the branch still has one (`None` otherwise); a ready future is dropped
    /// at once, so that what it borrowed is free and it is never polled again.
    fn poll_branch(&mut self, cx: &mut Context<'_>) -> Option<Poll<Self::Output>>;
}

impl<F: Future + Unpin> Branch for Option<F> {
    type Output = F::Output;
    #[inline(always)]
    fn poll_branch(&mut self, cx: &mut Context<'_>) -> Option<Poll<F::Output>> {
        let poll = Pin::new(self.as_mut()?).poll(cx);
        if poll.is_ready() {
            *self = None;
        }
        Some(poll)
    }
}

impl<F: Future> Branch for Pin<&mut Option<F>> {
    type Output = F::Output;
    #[inline(always)]
    fn poll_branch(&mut self, cx: &mut Context<'_>) -> Option<Poll<F::Output>> {
        let poll = self.as_mut().as_pin_mut()?.poll(cx);
        if poll.is_ready() {
            self.set(None);
        }
        Some(poll)
    }
}
