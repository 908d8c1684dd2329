//! `select!`, `join!` and `try_join!`: waiting on several futures in one task, as
//! `macro_rules!` with no dependency (tokio's macros, with tokio's syntax, so code written for
//! them compiles against evloop by changing the import).
//!
//! All three run their futures *in the calling task*: no task is spawned, nothing is
//! allocated. The futures are pinned on the caller's stack (`core::pin::pin!`, in one tuple) and
//! polled from one `poll_fn`; a wake of any of them wakes the task, which polls them again. What differs is
//! when they stop:
//! - [`join!`](crate::join) waits for all of them and returns their outputs as a tuple;
//! - [`try_join!`](crate::try_join) waits for all of them unless one fails: the first `Err`
//!   returns at once and the others are dropped, which cancels them;
//! - [`select!`](crate::select) waits for the first one whose output matches its branch's
//!   pattern, drops (cancels) the others, then runs that branch's handler.
//!
//! # How the macros are built
//! A `macro_rules!` macro cannot count or invent names, yet each branch needs its own local
//! variables. The parsing rules read one branch per step and append it to an accumulator,
//! together with identifiers written in that step's expansion (`__fut`, `__out`, ...): every
//! expansion of a macro gets its own hygiene context, so the identifiers of different steps are
//! different variables even though they are spelled the same. The last step expands all
//! branches at once with those identifiers.
//!
//! The recursion limit: each step is one level of the compiler's limit (128 by default). A
//! branch whose pattern is `x`, `_` or `Path(...)` costs one level (the step that finishes a
//! branch also reads the next such pattern), so `select!` takes about 120 of them and `join!`
//! about 120 futures with no attribute; a longer pattern costs one more level per token
//! (`#![recursion_limit = "256"]` in the calling crate raises the limit when needed). A
//! malformed branch is a compile error saying so, not a runaway recursion.
//!
//! The size of the future: what lives across the `.await` is the futures, in one tuple pinned
//! once in the caller's frame, one pointer to that tuple, and for `select!` one bit per branch
//! ("disabled or finished"); `join!` keeps each output in its future's place (`MaybeDone`).
//! That is tokio's layout, and the sizes are tokio's or smaller (tests/tests/macros_ported.rs,
//! `sizes_beside_tokios`). Reaching a field of a pinned tuple is a pin projection, which needs
//! `unsafe`: tokio writes it in its expansion, in the caller's crate; here the expansion calls a
//! safe `Project::project` (the last section of `event_loop/raw_task.rs`, the task cell's own
//! file, under Miri), so the `unsafe` is written and checked once, not in every expansion. Names in the
//! expansion are scoped so that nothing else is kept: a name still in scope at the `.await` is
//! stored in the future's state even after its value has moved. A `join!` of one future is the
//! future itself. Up to 128 futures per macro (tokio: 64).
//!
//! The layer: these macros use only `core`, `std` and their own branch type
//! (`macro_support`), so they could live anywhere; they sit in
//! `sync/` beside the function forms of the same ideas (`gather`, `select`, `race` in
//! `combinator`).

/// Waits on several futures at once and runs the handler of the first one to complete with a
/// value that matches its pattern; the others are dropped (cancelled). tokio's `select!`.
///
/// ```text
/// select! {
///     [biased;]
///     <pattern> = <future> [, if <precondition>] => <handler>,
///     ...
///     [else => <expression>]
/// }
/// ```
///
/// 1. Every `<precondition>` is evaluated, in order; a branch whose precondition is `false` is
///    disabled for this call. Then every `<future>` expression is evaluated, in order (disabled
///    ones too: never polled, they are dropped with the others, as in tokio); a borrowed
///    temporary (`&mut std::future::ready(())`) lives until the `select!` ends. Anything that
///    implements `IntoFuture` works (a [`Task`](crate::task::Task), a
///    [`Promise`](crate::task::Promise)).
/// 2. The enabled futures are polled in the calling task until one completes.
/// 3. If its output matches `<pattern>`, every other future is dropped, then `<handler>` runs
///    with the pattern's bindings. If it does not match, that branch is disabled and the others
///    keep running (`Some(msg) = rx.recv()` stops listening to a closed channel).
/// 4. When every branch is disabled (or there is none: `select! { else => 1 }`), the `else`
///    expression is the result. With no `else`
///    that is a bug in the calling code, and it panics with a message saying so (as tokio's
///    does): add an `else` when all branches can be disabled.
///
/// The handler runs outside of any closure: it may `.await`, use `?`, `return`, and `break` or
/// `continue` an enclosing loop. The value of the whole `select!` is the handler's value.
///
/// # Cancellation
/// When a branch wins, the futures of the other branches are dropped before its handler runs:
/// their destructors run, timers they set are cancelled, and work they were waiting for is
/// abandoned. A losing future may already have done part of its work: a read that was cancelled
/// can have taken bytes out of a buffer it owned. Give `select!` futures that are *cancel-safe*
/// (a channel's `recv`, `sleep`, `Lines::next_line`, `accept`, awaiting a task), or keep the
/// state outside the future and pass `&mut` to it, as for a `Lines` reader in a loop.
///
/// # Fairness: which branch is polled first
/// Not random, not fixed: the first branch polled *rotates*. Each `select!` in the source has
/// its own counter (a thread-local), advanced at every poll, and polling starts at the branch
/// it names and wraps around. In a loop where several branches are always ready, each gets its
/// turn: none starves, as with tokio's random start. Unlike a random start it is deterministic,
/// which this runtime values: the same program makes the same choices on every run (with the
/// virtual clock, a test replays exactly, and `EVLOOP_TRACE=1` shows the same story twice).
/// Write `biased;` first to poll the branches strictly in order (priorities: a shutdown
/// signal before work), accepting that an always-ready first branch starves the rest.
///
/// ```
/// use std::time::Duration;
///
/// evloop::run(async {
///     let (tx, mut rx) = evloop::sync::mpsc::unbounded::<u32>();
///     evloop::spawn(async move {
///         for i in 0..3 {
///             tx.send(i).await.unwrap();
///             evloop::time::sleep(Duration::from_millis(1)).await;
///         }
///     });
///     let mut got = Vec::new();
///     loop {
///         evloop::select! {
///             Some(n) = rx.recv() => got.push(n),
///             _ = evloop::time::sleep(Duration::from_secs(5)) => panic!("too slow"),
///             else => break, // the channel closed: every branch that can match is done
///         }
///         if got.len() == 3 {
///             break;
///         }
///     }
///     assert_eq!(got, [0, 1, 2]);
/// })?;
/// # Ok::<(), evloop::task::RunError>(())
/// ```
#[macro_export]
macro_rules! select {
    // ---- @clean: a pattern with its `ref` and `mut` binding modes removed, to test a match
    // through a reference before the value is moved into the real bindings. A stack of saved
    // accumulators handles groups: `{ [outer] kind [rest] }` per open group.
    (@clean [] [$($acc:tt)*]) => { $($acc)* };
    (@clean [{ [$($outer:tt)*] paren [$($rest:tt)*] } $($stack:tt)*] [$($acc:tt)*]) => {
        $crate::select!(@clean [$($stack)*] [$($outer)* ($($acc)*)] $($rest)*)
    };
    (@clean [{ [$($outer:tt)*] bracket [$($rest:tt)*] } $($stack:tt)*] [$($acc:tt)*]) => {
        $crate::select!(@clean [$($stack)*] [$($outer)* [$($acc)*]] $($rest)*)
    };
    (@clean [{ [$($outer:tt)*] brace [$($rest:tt)*] } $($stack:tt)*] [$($acc:tt)*]) => {
        $crate::select!(@clean [$($stack)*] [$($outer)* {$($acc)*}] $($rest)*)
    };
    (@clean $stack:tt [$($acc:tt)*] ref $($rest:tt)*) => {
        $crate::select!(@clean $stack [$($acc)*] $($rest)*)
    };
    (@clean $stack:tt [$($acc:tt)*] mut $($rest:tt)*) => {
        $crate::select!(@clean $stack [$($acc)*] $($rest)*)
    };
    (@clean [$($stack:tt)*] [$($acc:tt)*] ($($inner:tt)*) $($rest:tt)*) => {
        $crate::select!(@clean [{ [$($acc)*] paren [$($rest)*] } $($stack)*] [] $($inner)*)
    };
    (@clean [$($stack:tt)*] [$($acc:tt)*] [$($inner:tt)*] $($rest:tt)*) => {
        $crate::select!(@clean [{ [$($acc)*] bracket [$($rest)*] } $($stack)*] [] $($inner)*)
    };
    (@clean [$($stack:tt)*] [$($acc:tt)*] {$($inner:tt)*} $($rest:tt)*) => {
        $crate::select!(@clean [{ [$($acc)*] brace [$($rest)*] } $($stack)*] [] $($inner)*)
    };
    (@clean $stack:tt [$($acc:tt)*] $t:tt $($rest:tt)*) => {
        $crate::select!(@clean $stack [$($acc)* $t] $($rest)*)
    };

    // ---- @branch: one branch's future, precondition and handler, after its pattern. The state
    // is `$mode [$n] [$done]`: `$n` holds one `1` per branch read so far (the next branch's index
    // is their sum), `$done` the branches read. When the next branch's pattern has a common
    // shape (`x`, `_`, `Some(x)`) it is read in the same step, so that a branch costs one level
    // of the compiler's recursion limit.
    (@branch $mode:tt [$($n:tt)*] [$($done:tt)*] [$($pat:tt)*] $fut:expr $(, if $cond:expr)? => $body:block, $p:ident = $($rest:tt)*) => {
        $crate::select!(@branch $mode [$($n)* 1] [$($done)* { __fut __on [$($n)*] [$($pat)*] ($fut) [$($cond)?] ($body) }] [$p] $($rest)*)
    };
    (@branch $mode:tt [$($n:tt)*] [$($done:tt)*] [$($pat:tt)*] $fut:expr $(, if $cond:expr)? => $body:block, _ = $($rest:tt)*) => {
        $crate::select!(@branch $mode [$($n)* 1] [$($done)* { __fut __on [$($n)*] [$($pat)*] ($fut) [$($cond)?] ($body) }] [_] $($rest)*)
    };
    (@branch $mode:tt [$($n:tt)*] [$($done:tt)*] [$($pat:tt)*] $fut:expr $(, if $cond:expr)? => $body:block, $p:ident ($($inner:tt)*) = $($rest:tt)*) => {
        $crate::select!(@branch $mode [$($n)* 1] [$($done)* { __fut __on [$($n)*] [$($pat)*] ($fut) [$($cond)?] ($body) }] [$p ($($inner)*)] $($rest)*)
    };
    (@branch $mode:tt [$($n:tt)*] [$($done:tt)*] [$($pat:tt)*] $fut:expr $(, if $cond:expr)? => $body:block, $($rest:tt)*) => {
        $crate::select!(@parse $mode [$($n)* 1] [$($done)* { __fut __on [$($n)*] [$($pat)*] ($fut) [$($cond)?] ($body) }] $($rest)*)
    };
    (@branch $mode:tt [$($n:tt)*] [$($done:tt)*] [$($pat:tt)*] $fut:expr $(, if $cond:expr)? => $body:block $p:ident = $($rest:tt)*) => {
        $crate::select!(@branch $mode [$($n)* 1] [$($done)* { __fut __on [$($n)*] [$($pat)*] ($fut) [$($cond)?] ($body) }] [$p] $($rest)*)
    };
    (@branch $mode:tt [$($n:tt)*] [$($done:tt)*] [$($pat:tt)*] $fut:expr $(, if $cond:expr)? => $body:block _ = $($rest:tt)*) => {
        $crate::select!(@branch $mode [$($n)* 1] [$($done)* { __fut __on [$($n)*] [$($pat)*] ($fut) [$($cond)?] ($body) }] [_] $($rest)*)
    };
    (@branch $mode:tt [$($n:tt)*] [$($done:tt)*] [$($pat:tt)*] $fut:expr $(, if $cond:expr)? => $body:block $p:ident ($($inner:tt)*) = $($rest:tt)*) => {
        $crate::select!(@branch $mode [$($n)* 1] [$($done)* { __fut __on [$($n)*] [$($pat)*] ($fut) [$($cond)?] ($body) }] [$p ($($inner)*)] $($rest)*)
    };
    (@branch $mode:tt [$($n:tt)*] [$($done:tt)*] [$($pat:tt)*] $fut:expr $(, if $cond:expr)? => $body:block $($rest:tt)*) => {
        $crate::select!(@parse $mode [$($n)* 1] [$($done)* { __fut __on [$($n)*] [$($pat)*] ($fut) [$($cond)?] ($body) }] $($rest)*)
    };
    (@branch $mode:tt [$($n:tt)*] [$($done:tt)*] [$($pat:tt)*] $fut:expr $(, if $cond:expr)? => $body:expr, $p:ident = $($rest:tt)*) => {
        $crate::select!(@branch $mode [$($n)* 1] [$($done)* { __fut __on [$($n)*] [$($pat)*] ($fut) [$($cond)?] ($body) }] [$p] $($rest)*)
    };
    (@branch $mode:tt [$($n:tt)*] [$($done:tt)*] [$($pat:tt)*] $fut:expr $(, if $cond:expr)? => $body:expr, _ = $($rest:tt)*) => {
        $crate::select!(@branch $mode [$($n)* 1] [$($done)* { __fut __on [$($n)*] [$($pat)*] ($fut) [$($cond)?] ($body) }] [_] $($rest)*)
    };
    (@branch $mode:tt [$($n:tt)*] [$($done:tt)*] [$($pat:tt)*] $fut:expr $(, if $cond:expr)? => $body:expr, $p:ident ($($inner:tt)*) = $($rest:tt)*) => {
        $crate::select!(@branch $mode [$($n)* 1] [$($done)* { __fut __on [$($n)*] [$($pat)*] ($fut) [$($cond)?] ($body) }] [$p ($($inner)*)] $($rest)*)
    };
    (@branch $mode:tt [$($n:tt)*] [$($done:tt)*] [$($pat:tt)*] $fut:expr $(, if $cond:expr)? => $body:expr, $($rest:tt)*) => {
        $crate::select!(@parse $mode [$($n)* 1] [$($done)* { __fut __on [$($n)*] [$($pat)*] ($fut) [$($cond)?] ($body) }] $($rest)*)
    };
    (@branch $mode:tt [$($n:tt)*] [$($done:tt)*] [$($pat:tt)*] $fut:expr $(, if $cond:expr)? => $body:expr) => {
        $crate::select!(@parse $mode [$($n)* 1] [$($done)* { __fut __on [$($n)*] [$($pat)*] ($fut) [$($cond)?] ($body) }])
    };

    // ---- @pat: the pattern's tokens, up to the `=` that ends it.
    (@pat $mode:tt $n:tt $done:tt [$($pat:tt)*] = $($rest:tt)*) => {
        $crate::select!(@branch $mode $n $done [$($pat)*] $($rest)*)
    };
    (@pat $mode:tt $n:tt $done:tt [$($pat:tt)*] $t:tt $($rest:tt)*) => {
        $crate::select!(@pat $mode $n $done [$($pat)* $t] $($rest)*)
    };

    // ---- @parse: the next branch, the `else`, or the end.
    (@parse $mode:tt $n:tt $done:tt) => {
        $crate::select!(@expand $mode $n $done (::core::panic!(
            "select!: every branch is disabled and there is no `else` branch"
        )))
    };
    (@parse $mode:tt $n:tt $done:tt else => $else:block $(,)?) => {
        $crate::select!(@expand $mode $n $done ($else))
    };
    (@parse $mode:tt $n:tt $done:tt else => $else:expr $(,)?) => {
        $crate::select!(@expand $mode $n $done ($else))
    };
    (@parse $mode:tt $n:tt $done:tt $p:ident = $($rest:tt)*) => {
        $crate::select!(@branch $mode $n $done [$p] $($rest)*)
    };
    (@parse $mode:tt $n:tt $done:tt _ = $($rest:tt)*) => {
        $crate::select!(@branch $mode $n $done [_] $($rest)*)
    };
    (@parse $mode:tt $n:tt $done:tt $p:ident ($($inner:tt)*) = $($rest:tt)*) => {
        $crate::select!(@branch $mode $n $done [$p ($($inner)*)] $($rest)*)
    };
    (@parse $mode:tt $n:tt $done:tt $($rest:tt)+) => {
        $crate::select!(@pat $mode $n $done [] $($rest)+)
    };

    // ---- @expand: the code. Only the futures (an `Unpin` one owned by its branch, any other
    // pinned with one reference to it) are kept across the `.await` (the state of the `select!`
    // future); the branch count and indices are constant expressions, and the outputs come back
    // as the `poll_fn`'s value.
    (@expand $mode:tt [$($n:tt)*] [] ($else:expr)) => {{
        $else
    }};
    (@expand $mode:tt [$($n:tt)*] [$({ $fut:ident $on:ident [$($i:tt)*] [$($pat:tt)*] ($f:expr) [$($cond:expr)?] ($body:expr) })+] ($else:expr)) => {{
        // Non-`Copy` flags, moved out below: a `bool` would be kept across the `.await`.
        $( let $on = $crate::sync::macro_support::Enabled::new(true $(&& ($cond))?); )+
        // The futures live in this block, so that they are dropped (cancelled), and what they
        // borrow is free again, before the winner's handler runs.
        let __outs = {
        // One `let` for every future expression, so that a borrowed temporary in one
        // (`&mut std::future::ready(())`) lives as long as the futures (tokio #6721).
        let __raw = ($($f,)+);
        // All the futures in one tuple, pinned once: the closure keeps one pointer to it, and
        // one bit per branch for "disabled or finished" (tokio's layout; an `Option` per future
        // costs a byte for each future type without a spare niche, as `async fn`s are). A
        // disabled branch's future is never polled; like a finished one it is dropped with the
        // others when the `select!` ends.
        // (`__raw` is moved whole into the block, whose locals end with it: names kept in scope
        // would be kept in the state across the `.await`, a byte or more each.)
        let mut __futs = ::core::pin::pin!({
            let ($($fut,)+) = __raw;
            ($(::core::future::IntoFuture::into_future($fut),)+)
        });
        let mut __off = $crate::sync::macro_support::Bits::<{ usize::div_ceil(0 $(+ $n)*, 8) }>::new();
        $(
            if !$on.take() {
                __off.set(0 $(+ $i)*);
            }
        )+
        ::core::future::poll_fn(move |__cx| {
            #[allow(unused_mut)]
            let ($(mut $fut,)+) = $crate::sync::macro_support::Project::project(__futs.as_mut());
            $( let mut $on = ::core::option::Option::None; )+
            let __start: usize = $crate::select!(@start $mode (0 $(+ $n)*));
            let mut __live = false;
            let mut __won = false;
            for __turn in 0..(0 $(+ $n)*) {
                #[allow(clippy::modulo_one)]
                let __b = (__start + __turn) % (0 $(+ $n)*);
                $(
                    if __b == (0 $(+ $i)*) && !__off.get(0 $(+ $i)*) {
                        // `unreachable_code`: a future whose output is `!` (never ready) makes
                        // the `Ready` arm unreachable, which is no fault of the caller's.
                        #[allow(unreachable_code)]
                        match ::core::future::Future::poll($fut.as_mut(), __cx) {
                            ::core::task::Poll::Ready(__v) => {
                                // Finished: never polled again, whether or not it matches.
                                __off.set(0 $(+ $i)*);
                                #[allow(unused_variables, unreachable_patterns, clippy::redundant_pattern_matching)]
                                let __matches = match &__v {
                                    $crate::select!(@clean [] [] $($pat)*) => true,
                                    _ => false,
                                };
                                if __matches {
                                    $on = ::core::option::Option::Some(__v);
                                    __won = true;
                                    break;
                                }
                            }
                            ::core::task::Poll::Pending => __live = true,
                        }
                    }
                )+
            }
            if __won || !__live {
                ::core::task::Poll::Ready(($($on,)+))
            } else {
                ::core::task::Poll::Pending
            }
        })
        .await
        };
        // The futures are dropped (cancelled) by now; run the winner's handler, or the `else`
        // when every branch was disabled.
        #[allow(unused_mut)]
        let ($(mut $on,)+) = __outs;
        $(
            if let ::core::option::Option::Some($($pat)*) = $on {
                $body
            } else
        )+
        {
            $else
        }
    }};

    (@start biased $n:expr) => { 0 };
    (@start rotate $n:expr) => {{
        ::std::thread_local! {
            static __EVLOOP_SELECT_NEXT: ::core::cell::Cell<usize> = const { ::core::cell::Cell::new(0) };
        }
        __EVLOOP_SELECT_NEXT.with(|__c| {
            let __s = __c.get();
            __c.set(__s.wrapping_add(1));
            #[allow(clippy::modulo_one)]
            let __first = __s % $n;
            __first
        })
    }};

    // An internal step that matched no rule: a malformed branch. Say so, rather than let the
    // entry rules below take it for a new `select!` and recurse until the compiler's limit.
    (@$($t:tt)*) => {
        ::core::compile_error!(
            "select!: cannot read this branch: expected `<pattern> = <future> [, if <condition>] => <handler>,` or `else => <handler>`"
        )
    };

    // ---- Entry points.
    (biased; $($rest:tt)+) => {
        $crate::select!(@parse biased [] [] $($rest)+)
    };
    ($($rest:tt)+) => {
        $crate::select!(@parse rotate [] [] $($rest)+)
    };
}

/// Runs several futures concurrently in the calling task and waits for all of them; the
/// result is the tuple of their outputs, in order. tokio's `join!` (asyncio's `gather` without
/// a task per coroutine).
///
/// Each unfinished future is polled, in order, every time the task is woken, and dropped as
/// soon as it completes (its output is kept). tokio's `join!(biased; a, b)` is accepted and is
/// the same thing: evloop always polls in the order written (deterministic, as `select!`'s
/// rotation is), where tokio without `biased;` starts from a different future each time. A future that is always ready cannot starve the
/// others: each is polled once per poll of the `join!`. Dropping the `join!` (the task was
/// cancelled, a `select!` branch lost) drops every unfinished future.
///
/// ```
/// use std::time::Duration;
///
/// async fn after(ms: u64, v: &'static str) -> &'static str {
///     evloop::time::sleep(Duration::from_millis(ms)).await;
///     v
/// }
///
/// evloop::run(async {
///     let lp = evloop::event_loop::get_running_loop().unwrap();
///     let start = lp.time();
///     let (a, b, c) = evloop::join!(after(20, "a"), after(10, "b"), async { 3 });
///     assert_eq!((a, b, c), ("a", "b", 3));
///     let took = lp.time() - start;
///     assert!(took >= Duration::from_millis(20), "concurrently, not one after the other");
/// })?;
/// # Ok::<(), evloop::task::RunError>(())
/// ```
#[macro_export]
macro_rules! join {
    (@munch [$($done:tt)*] $e:expr, $($rest:tt)+) => {
        $crate::join!(@munch [$($done)* { __fut __out ($e) }] $($rest)+)
    };
    (@munch [$($done:tt)*] $e:expr $(,)?) => {
        $crate::join!(@expand [$($done)* { __fut __out ($e) }])
    };
    // One future: awaited in place (no bookkeeping, so the `join!` is no larger than it).
    (@expand [{ $fut:ident $out:ident ($e:expr) }]) => {
        (::core::future::IntoFuture::into_future($e).await,)
    };
    (@expand [$({ $fut:ident $out:ident ($e:expr) })+]) => {{
        // One `let` for every future expression, so that a borrowed temporary in one lives as
        // long as the `join!`.
        let __raw = ($($e,)+);
        // The futures in one pinned tuple, each output kept in its future's place: the futures
        // and one pointer to them are all that lives across the `.await` (`__raw` is moved
        // whole into the block, so that no name per future is kept).
        let mut __futs = ::core::pin::pin!({
            let ($($fut,)+) = __raw;
            ($($crate::sync::macro_support::MaybeDone::new(::core::future::IntoFuture::into_future($fut)),)+)
        });
        ::core::future::poll_fn(move |__cx| {
            #[allow(unused_mut)]
            let ($(mut $fut,)+) = $crate::sync::macro_support::Project::project(__futs.as_mut());
            let mut __all = true;
            $(
                if $fut.as_mut().poll_done(__cx).is_pending() {
                    __all = false;
                }
            )+
            if __all {
                ::core::task::Poll::Ready(($(
                    match $fut.take_output() {
                        ::core::option::Option::Some(__v) => __v,
                        ::core::option::Option::None => ::core::unreachable!("join!: a future finished without an output"),
                    },
                )+))
            } else {
                ::core::task::Poll::Pending
            }
        })
        .await
    }};
    (@$($t:tt)*) => {
        ::core::compile_error!("join!: expected futures separated by commas: `join!(a, b, c)` or `join!(biased; a, b)`")
    };
    () => { () };
    // tokio's `biased;` (poll in the order written): evloop's `join!` always does, so the two
    // forms are the same.
    (biased; $($rest:tt)*) => {
        $crate::join!($($rest)*)
    };
    ($($rest:tt)+) => {
        $crate::join!(@munch [] $($rest)+)
    };
}

/// Like [`join!`](crate::join) for futures that return `Result`s with one error type: `Ok` of
/// the tuple of their values when all succeed; the first `Err` as soon as it happens, after
/// which the other futures are dropped (cancelled). tokio's `try_join!`; `biased;` is
/// accepted as in [`join!`](crate::join).
///
/// ```
/// use std::time::Duration;
///
/// async fn fails_after(ms: u64) -> Result<(), String> {
///     evloop::time::sleep(Duration::from_millis(ms)).await;
///     Err(format!("failed after {ms} ms"))
/// }
///
/// evloop::run(async {
///     let ok = evloop::try_join!(async { Ok::<_, String>(1) }, async { Ok(2) });
///     assert_eq!(ok, Ok((1, 2)));
///     let never = async {
///         evloop::time::sleep(Duration::from_secs(3600)).await;
///         Ok::<(), String>(())
///     };
///     // The first error wins at once; the hour-long sleep is cancelled.
///     let err = evloop::try_join!(never, fails_after(5));
///     assert_eq!(err, Err("failed after 5 ms".to_string()));
/// })?;
/// # Ok::<(), evloop::task::RunError>(())
/// ```
#[macro_export]
macro_rules! try_join {
    (@munch [$($done:tt)*] $e:expr, $($rest:tt)+) => {
        $crate::try_join!(@munch [$($done)* { __fut __out ($e) }] $($rest)+)
    };
    (@munch [$($done:tt)*] $e:expr $(,)?) => {
        $crate::try_join!(@expand [$($done)* { __fut __out ($e) }])
    };
    (@expand [{ $fut:ident $out:ident ($e:expr) }]) => {
        match ::core::future::IntoFuture::into_future($e).await {
            ::core::result::Result::Ok(__v) => ::core::result::Result::Ok((__v,)),
            ::core::result::Result::Err(__e) => ::core::result::Result::Err(__e),
        }
    };
    (@expand [$({ $fut:ident $out:ident ($e:expr) })+]) => {{
        let __raw = ($($e,)+);
        let mut __futs = ::core::pin::pin!({
            let ($($fut,)+) = __raw;
            ($($crate::sync::macro_support::MaybeDone::new(::core::future::IntoFuture::into_future($fut)),)+)
        });
        ::core::future::poll_fn(move |__cx| {
            #[allow(unused_mut)]
            let ($(mut $fut,)+) = $crate::sync::macro_support::Project::project(__futs.as_mut());
            let mut __all = true;
            $(
                if $fut.as_mut().poll_done(__cx).is_pending() {
                    __all = false;
                } else if let ::core::option::Option::Some(__e) = $fut.as_mut().take_err() {
                    // The first error returns at once; the other futures are dropped with the
                    // `try_join!` (cancelled).
                    return ::core::task::Poll::Ready(::core::result::Result::Err(__e));
                }
            )+
            if __all {
                ::core::task::Poll::Ready(::core::result::Result::Ok(($(
                    match $fut.take_output() {
                        ::core::option::Option::Some(::core::result::Result::Ok(__v)) => __v,
                        _ => ::core::unreachable!("try_join!: a future finished without an output"),
                    },
                )+)))
            } else {
                ::core::task::Poll::Pending
            }
        })
        .await
    }};
    (@$($t:tt)*) => {
        ::core::compile_error!("try_join!: expected futures separated by commas: `try_join!(a, b, c)` or `try_join!(biased; a, b)`")
    };
    () => { ::core::result::Result::Ok(()) };
    // tokio's `biased;`: evloop's `try_join!` always polls in the order written.
    (biased; $($rest:tt)*) => {
        $crate::try_join!($($rest)*)
    };
    ($($rest:tt)+) => {
        $crate::try_join!(@munch [] $($rest)+)
    };
}
