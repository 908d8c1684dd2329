//! [`pin!`](crate::pin!): tokio's macro that pins values to the stack in place, so that a
//! future can be polled by `&mut` (a `select!` in a loop, `as_mut()` on a `Sleep`). It only
//! rebinds each name to `std::pin::pin!` of its value: std's macro does the pinning (no
//! `unsafe` here), this one gives it tokio's statement forms.

/// Pins each named value to the stack, shadowing the name with a `Pin<&mut T>` (tokio's
/// `pin!`): `evloop::pin!(fut);` and `evloop::pin!(a, b);`, or with initializers,
/// `evloop::pin! { let fut = make(); }`. std's `std::pin::pin!(expr)` returns the pinned
/// reference instead, so `pin!(fut);` alone would pin a temporary; this macro is the spelling
/// tokio code uses.
///
/// ```
/// use std::time::Duration;
///
/// evloop::run(async {
///     let sleep = evloop::time::sleep(Duration::from_millis(5));
///     evloop::pin!(sleep);
///     let mut polls = 0;
///     loop {
///         evloop::select! {
///             _ = &mut sleep => break, // polled by reference, kept between iterations
///             _ = evloop::task::yield_now() => polls += 1,
///         }
///     }
///     assert!(polls > 0);
///
///     evloop::pin! {
///         let answer = async { 42 };
///     }
///     assert_eq!(answer.as_mut().await, 42);
/// })
/// .unwrap();
/// ```
#[macro_export]
macro_rules! pin {
    ($($x:ident),* $(,)?) => { $(
        #[allow(unused_mut)]
        let mut $x = ::std::pin::pin!($x);
    )* };
    ($(let $x:ident = $init:expr;)*) => { $(
        #[allow(unused_mut)]
        let mut $x = ::std::pin::pin!($init);
    )* };
}
