//! Futures pinned inside a bigger value, polled where they lie: the projection that `select!`,
//! `join!` and `try_join!` use to keep all their futures in one pinned tuple.
//!
//! The task cell pins one future in its allocation and polls it there; the macros pin a tuple of
//! futures once, in the caller's frame, and poll each field there. Getting a `Pin<&mut F>` to a
//! field out of a `Pin<&mut (.., F, ..)>` is a pin projection, which Rust cannot check: it is
//! `unsafe`, and it is sound for a tuple because a tuple has no destructor of its own, is `Unpin`
//! only when every field is, and offers no safe way to move a field out of a pinned tuple.
//! Keeping it here rather than in the expansion means the `unsafe` is written and checked once
//! (Miri runs this file's tests), not in every caller's expansion, and each branch costs no
//! reference of its own: the futures and one pointer
//! to them are all a `select!` keeps across its `.await` (tokio's layout, whose projection is
//! `unsafe` in the caller's crate). Before this, each future that is not `Unpin` was pinned on its
//! own by `core::pin::pin!`, and its branch kept that reference: one pointer per branch more.
//!
//! Data flow: the macro builds the tuple (`Option<F>` per `select!` branch, [`MaybeDone<F>`] per
//! `join!` future), pins it with `pin!`, and on every poll calls [`Project::project`] to get one
//! `Pin<&mut _>` per field, polls them, and drops them before returning. [`MaybeDone`] keeps a
//! `join!` future's output in the future's place once it is ready (no second slot per branch).
//! This is the only place the macros' `unsafe` lives; the tests at the bottom run under Miri with
//! the rest of the task cell's (`make miri`).

use std::future::Future;
use std::mem;
use std::pin::Pin;
use std::task::{Context, Poll};

/// Pin projection of a tuple: one `Pin<&mut T>` per field of a pinned tuple (up to 128 fields,
/// twice tokio's 64 branches).
///
/// ```
/// use std::pin::pin;
/// use evloop::sync::macro_support::Project;
///
/// let mut both = pin!((async { 1 }, async { 2 }));
/// let (a, b) = both.as_mut().project(); // two pinned futures, never moved
/// let _ = (a, b);
/// ```
pub trait Project<'a> {
    /// The tuple of pinned references to the fields.
    type Fields;
    /// Splits a pinned tuple into its pinned fields.
    fn project(self: Pin<&'a mut Self>) -> Self::Fields;
}

/// One `impl Project` per arity: `[done fields] [fields to come]`, one more field per step (so a
/// step is one level of the compiler's recursion limit: two invocations of 64 below).
macro_rules! project_tuples {
    ([$($done:ident $di:tt)*] []) => {};
    ([$($done:ident $di:tt)*] [$next:ident $ni:tt $($rest:tt)*]) => {
        impl<'a, $($done: 'a,)* $next: 'a> Project<'a> for ($($done,)* $next,) {
            type Fields = ($(Pin<&'a mut $done>,)* Pin<&'a mut $next>,);
            #[inline(always)]
            fn project(self: Pin<&'a mut Self>) -> Self::Fields {
                // SAFETY: the mutable reference is used only to make the pinned references below;
                // no field is moved out of it and it is not kept.
                let this = unsafe { self.get_unchecked_mut() };
                // SAFETY: structural pinning of a tuple's fields is sound: the tuple was pinned, so
                // its fields are not moved until they are dropped in place (a tuple has no `Drop`
                // of its own that could move them, is `Unpin` only if every field is, is never
                // `repr(packed)`, and no safe API moves a field out of `Pin<&mut (..)>`); each
                // reference is to a distinct field, so they do not alias.
                unsafe { ($(Pin::new_unchecked(&mut this.$di),)* Pin::new_unchecked(&mut this.$ni),) }
            }
        }
        project_tuples!([$($done $di)* $next $ni] [$($rest)*]);
    };
}

project_tuples!([] [
    T0 0 T1 1 T2 2 T3 3 T4 4 T5 5 T6 6 T7 7 T8 8 T9 9 T10 10 T11 11 T12 12 T13 13 T14 14 T15 15
    T16 16 T17 17 T18 18 T19 19 T20 20 T21 21 T22 22 T23 23 T24 24 T25 25 T26 26 T27 27 T28 28 T29 29
    T30 30 T31 31 T32 32 T33 33 T34 34 T35 35 T36 36 T37 37 T38 38 T39 39 T40 40 T41 41 T42 42 T43 43
    T44 44 T45 45 T46 46 T47 47 T48 48 T49 49 T50 50 T51 51 T52 52 T53 53 T54 54 T55 55 T56 56 T57 57
    T58 58 T59 59 T60 60 T61 61 T62 62 T63 63
]);
project_tuples!([
    T0 0 T1 1 T2 2 T3 3 T4 4 T5 5 T6 6 T7 7 T8 8 T9 9 T10 10 T11 11 T12 12 T13 13 T14 14 T15 15
    T16 16 T17 17 T18 18 T19 19 T20 20 T21 21 T22 22 T23 23 T24 24 T25 25 T26 26 T27 27 T28 28 T29 29
    T30 30 T31 31 T32 32 T33 33 T34 34 T35 35 T36 36 T37 37 T38 38 T39 39 T40 40 T41 41 T42 42 T43 43
    T44 44 T45 45 T46 46 T47 47 T48 48 T49 49 T50 50 T51 51 T52 52 T53 53 T54 54 T55 55 T56 56 T57 57
    T58 58 T59 59 T60 60 T61 61 T62 62 T63 63
] [
    T64 64 T65 65 T66 66 T67 67 T68 68 T69 69 T70 70 T71 71 T72 72 T73 73 T74 74 T75 75 T76 76 T77 77
    T78 78 T79 79 T80 80 T81 81 T82 82 T83 83 T84 84 T85 85 T86 86 T87 87 T88 88 T89 89 T90 90 T91 91
    T92 92 T93 93 T94 94 T95 95 T96 96 T97 97 T98 98 T99 99 T100 100 T101 101 T102 102 T103 103
    T104 104 T105 105 T106 106 T107 107 T108 108 T109 109 T110 110 T111 111 T112 112 T113 113
    T114 114 T115 115 T116 116 T117 117 T118 118 T119 119 T120 120 T121 121 T122 122 T123 123
    T124 124 T125 125 T126 126 T127 127
]);

/// A `join!` future, then its output in the same place, then nothing once the output is taken
/// (futures-util's `MaybeDone`). The future is pinned (it is polled where it lies); the output is
/// not (it is only ever moved out).
///
/// ```
/// use std::pin::pin;
/// use std::task::{Context, Poll, Waker};
/// use evloop::sync::macro_support::MaybeDone;
///
/// let mut slot = pin!(MaybeDone::new(async { 7 }));
/// let mut cx = Context::from_waker(Waker::noop());
/// assert_eq!(slot.as_mut().poll_done(&mut cx), Poll::Ready(()));
/// assert_eq!(slot.as_mut().take_output(), Some(7));
/// assert_eq!(slot.as_mut().take_output(), None); // taken once
/// ```
pub enum MaybeDone<F: Future> {
    /// Not ready yet.
    Future(F),
    /// Ready; the output waits to be taken.
    Done(F::Output),
    /// The output was taken.
    Gone,
}

impl<F: Future> MaybeDone<F> {
    /// Holds a future that has not been polled.
    ///
    /// ```
    /// use evloop::sync::macro_support::MaybeDone;
    /// assert!(matches!(MaybeDone::new(async { 1 }), MaybeDone::Future(_)));
    /// ```
    #[inline(always)]
    pub fn new(fut: F) -> Self {
        MaybeDone::Future(fut)
    }

    /// Polls the future if it is still there; `Ready` once the output is stored (or was taken).
    /// The future is dropped as soon as it is ready, so that what it borrowed is free and it is
    /// never polled again.
    ///
    /// ```
    /// use std::pin::pin;
    /// use std::task::{Context, Poll, Waker};
    /// use evloop::sync::macro_support::MaybeDone;
    ///
    /// let mut slot = pin!(MaybeDone::new(std::future::pending::<()>()));
    /// let mut cx = Context::from_waker(Waker::noop());
    /// assert_eq!(slot.as_mut().poll_done(&mut cx), Poll::Pending);
    /// ```
    #[inline(always)]
    pub fn poll_done(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        // SAFETY: the reference is only matched on; the future in it is pinned again at once and
        // never moved (it is dropped in place by `set` below).
        let fut = match unsafe { self.as_mut().get_unchecked_mut() } {
            // SAFETY: `self` is pinned and the `Future` variant's field is structurally pinned:
            // nothing moves it while it is there (`take_output` moves only `Done`).
            MaybeDone::Future(f) => unsafe { Pin::new_unchecked(f) },
            MaybeDone::Done(_) | MaybeDone::Gone => return Poll::Ready(()),
        };
        match fut.poll(cx) {
            Poll::Ready(out) => {
                self.set(MaybeDone::Done(out));
                Poll::Ready(())
            }
            Poll::Pending => Poll::Pending,
        }
    }

    /// Takes the output, if it is there (`None` before it is ready, and after it was taken).
    ///
    /// ```
    /// use std::pin::pin;
    /// use evloop::sync::macro_support::MaybeDone;
    ///
    /// let mut slot = pin!(MaybeDone::new(async { 1 }));
    /// assert_eq!(slot.as_mut().take_output(), None); // not polled yet
    /// ```
    #[inline(always)]
    pub fn take_output(self: Pin<&mut Self>) -> Option<F::Output> {
        // SAFETY: the value is moved out only in the `Done` variant, which holds no pinned data
        // (the output is not structurally pinned); a `Future` is left where it is.
        let this = unsafe { self.get_unchecked_mut() };
        match this {
            MaybeDone::Done(_) => match mem::replace(this, MaybeDone::Gone) {
                MaybeDone::Done(out) => Some(out),
                MaybeDone::Future(_) | MaybeDone::Gone => None,
            },
            MaybeDone::Future(_) | MaybeDone::Gone => None,
        }
    }
}

impl<T, E, F: Future<Output = Result<T, E>>> MaybeDone<F> {
    /// Takes the error if the future is done with one (`try_join!`'s early return); an `Ok` output
    /// stays.
    ///
    /// ```
    /// use std::pin::pin;
    /// use std::task::{Context, Waker};
    /// use evloop::sync::macro_support::MaybeDone;
    ///
    /// let mut slot = pin!(MaybeDone::new(async { Err::<(), _>("no") }));
    /// let _ = slot.as_mut().poll_done(&mut Context::from_waker(Waker::noop()));
    /// assert_eq!(slot.as_mut().take_err(), Some("no"));
    /// ```
    #[inline(always)]
    pub fn take_err(self: Pin<&mut Self>) -> Option<E> {
        // SAFETY: as in `take_output`: only a `Done` value is moved out.
        let this = unsafe { self.get_unchecked_mut() };
        match this {
            MaybeDone::Done(Err(_)) => match mem::replace(this, MaybeDone::Gone) {
                MaybeDone::Done(Err(e)) => Some(e),
                MaybeDone::Done(Ok(_)) | MaybeDone::Future(_) | MaybeDone::Gone => None,
            },
            MaybeDone::Done(Ok(_)) | MaybeDone::Future(_) | MaybeDone::Gone => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use std::cell::Cell;
    use std::marker::PhantomPinned;
    use std::pin::pin;
    use std::rc::Rc;
    use std::task::Waker;

    use super::*;

    /// A future that must not move: it records its address at its first poll and checks it at
    /// every later one (and at its drop), ready at its `ready_at`-th poll.
    struct Fixed {
        at: Cell<usize>,
        polls: Cell<u32>,
        ready_at: u32,
        drops: Rc<Cell<u32>>,
        _pin: PhantomPinned,
    }

    impl Fixed {
        fn new(ready_at: u32, drops: &Rc<Cell<u32>>) -> Fixed {
            Fixed {
                at: Cell::new(0),
                polls: Cell::new(0),
                ready_at,
                drops: drops.clone(),
                _pin: PhantomPinned,
            }
        }
        fn check(&self) {
            let here = self as *const Fixed as usize;
            match self.at.get() {
                0 => self.at.set(here),
                at => assert_eq!(at, here, "a pinned future moved"),
            }
        }
    }

    impl Future for Fixed {
        type Output = u32;
        fn poll(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<u32> {
            self.check();
            self.polls.set(self.polls.get() + 1);
            if self.polls.get() >= self.ready_at {
                Poll::Ready(self.ready_at)
            } else {
                Poll::Pending
            }
        }
    }

    impl Drop for Fixed {
        fn drop(&mut self) {
            if self.polls.get() > 0 {
                self.check();
            }
            self.drops.set(self.drops.get() + 1);
        }
    }

    #[test]
    fn a_projected_tuple_polls_each_field_in_place() {
        let drops = Rc::new(Cell::new(0));
        let mut cx = Context::from_waker(Waker::noop());
        let mut outs = Vec::new();
        {
            let mut three = pin!((
                Fixed::new(1, &drops),
                Fixed::new(3, &drops),
                Some(Fixed::new(2, &drops))
            ));
            for _ in 0..3 {
                let (a, b, mut c) = three.as_mut().project();
                if let Poll::Ready(v) = a.poll(&mut cx) {
                    outs.push(v);
                }
                if let Poll::Ready(v) = b.poll(&mut cx) {
                    outs.push(v);
                }
                let polled = c.as_mut().as_pin_mut().map(|f| f.poll(&mut cx));
                if let Some(Poll::Ready(v)) = polled {
                    outs.push(v);
                    c.set(None); // dropped in place
                }
            }
            assert_eq!(drops.get(), 1, "the third, dropped in place by `set`");
        }
        assert_eq!(outs, [1, 1, 2, 1, 3]);
        assert_eq!(
            drops.get(),
            3,
            "the other two, dropped where they were polled (checked in `Drop`)"
        );
    }

    #[test]
    fn a_128_field_tuple_projects() {
        // Both halves of the impls (the second invocation starts at 65 fields).
        let mut all = pin!((
            0u8, 1u8, 2u8, 3u8, 4u8, 5u8, 6u8, 7u8, 8u8, 9u8, 10u8, 11u8, 12u8, 13u8, 14u8, 15u8, 16u8, 17u8, 18u8,
            19u8, 20u8, 21u8, 22u8, 23u8, 24u8, 25u8, 26u8, 27u8, 28u8, 29u8, 30u8, 31u8, 32u8, 33u8, 34u8, 35u8, 36u8,
            37u8, 38u8, 39u8, 40u8, 41u8, 42u8, 43u8, 44u8, 45u8, 46u8, 47u8, 48u8, 49u8, 50u8, 51u8, 52u8, 53u8, 54u8,
            55u8, 56u8, 57u8, 58u8, 59u8, 60u8, 61u8, 62u8, 63u8, 64u8, 65u8, 66u8, 67u8, 68u8, 69u8, 70u8, 71u8, 72u8,
            73u8, 74u8, 75u8, 76u8, 77u8, 78u8, 79u8, 80u8, 81u8, 82u8, 83u8, 84u8, 85u8, 86u8, 87u8, 88u8, 89u8, 90u8,
            91u8, 92u8, 93u8, 94u8, 95u8, 96u8, 97u8, 98u8, 99u8, 100u8, 101u8, 102u8, 103u8, 104u8, 105u8, 106u8,
            107u8, 108u8, 109u8, 110u8, 111u8, 112u8, 113u8, 114u8, 115u8, 116u8, 117u8, 118u8, 119u8, 120u8, 121u8,
            122u8, 123u8, 124u8, 125u8, 126u8, 127u8,
        ));
        let fields = all.as_mut().project();
        assert_eq!((*fields.0, *fields.63, *fields.64, *fields.127), (0, 63, 64, 127));
    }

    #[test]
    fn maybe_done_keeps_the_future_in_place_then_the_output() {
        let drops = Rc::new(Cell::new(0));
        let mut cx = Context::from_waker(Waker::noop());
        let mut slot = pin!(MaybeDone::new(Fixed::new(2, &drops)));
        assert_eq!(slot.as_mut().poll_done(&mut cx), Poll::Pending);
        assert_eq!(slot.as_mut().take_output(), None);
        assert_eq!(slot.as_mut().poll_done(&mut cx), Poll::Ready(()));
        assert_eq!(drops.get(), 1, "the future is dropped as soon as it is ready");
        assert_eq!(slot.as_mut().poll_done(&mut cx), Poll::Ready(()), "never polled again");
        assert_eq!(slot.as_mut().take_output(), Some(2));
        assert_eq!(slot.as_mut().take_output(), None);
    }

    #[test]
    fn take_err_takes_only_an_error() {
        let mut cx = Context::from_waker(Waker::noop());
        let mut ok = pin!(MaybeDone::new(async { Ok::<u8, &str>(1) }));
        let _ = ok.as_mut().poll_done(&mut cx);
        assert_eq!(ok.as_mut().take_err(), None);
        assert_eq!(ok.as_mut().take_output(), Some(Ok(1)));
        let mut err = pin!(MaybeDone::new(async { Err::<u8, &str>("e") }));
        assert_eq!(err.as_mut().take_err(), None, "not polled yet");
        let _ = err.as_mut().poll_done(&mut cx);
        assert_eq!(err.as_mut().take_err(), Some("e"));
        assert_eq!(err.as_mut().take_output(), None);
    }

    #[test]
    fn a_pending_future_is_dropped_in_place_with_its_tuple() {
        let drops = Rc::new(Cell::new(0));
        let mut cx = Context::from_waker(Waker::noop());
        {
            let mut two = pin!((
                MaybeDone::new(Fixed::new(9, &drops)),
                MaybeDone::new(Fixed::new(9, &drops))
            ));
            let (a, b) = two.as_mut().project();
            assert_eq!(a.poll_done(&mut cx), Poll::Pending);
            assert_eq!(b.poll_done(&mut cx), Poll::Pending);
        }
        assert_eq!(
            drops.get(),
            2,
            "both dropped where they were polled (checked in `Drop`)"
        );
    }
}
