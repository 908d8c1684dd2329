//! `select!`, `join!` and `try_join!` against tokio's own tests of them (tokio's
//! tests/macros_select.rs, macros_join.rs, macros_try_join.rs, ported where they apply), the
//! cases issue 19 item 8 found (an `else`-only `select!`, a branch on a borrowed temporary, a
//! branch whose output is `!`, `biased;` in `join!`/`try_join!`, 64 branches without raising the
//! recursion limit, the size of the futures beside tokio's), and `#[evloop::main]` on a method.
//! Its own binary because of the crate-level `#![deny(warnings)]`: a macro that makes its caller
//! warn fails to build here.
#![deny(warnings)]

use std::cell::{Cell, RefCell};
use std::future::{Future, IntoFuture, pending, ready};
use std::mem::size_of_val;
use std::pin::pin;
use std::rc::Rc;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::task::{Context, Poll, Wake, Waker};

/// A waker that counts its wakes: tokio_test's `task::spawn` in a few lines.
struct CountWakes(AtomicUsize);

impl Wake for CountWakes {
    fn wake(self: Arc<Self>) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

fn waker() -> (Arc<CountWakes>, Waker) {
    let count = Arc::new(CountWakes(AtomicUsize::new(0)));
    (count.clone(), Waker::from(count))
}

fn poll_once<F: Future>(fut: std::pin::Pin<&mut F>, waker: &Waker) -> Poll<F::Output> {
    fut.poll(&mut Context::from_waker(waker))
}

async fn one() -> usize {
    1
}

async fn async_never() -> ! {
    pending().await
}

async fn require_mutable(_: &mut i32) {}

async fn async_noop() {}

// ---- select!: the cases

#[evloop::test]
async fn select_with_only_an_else_branch_is_the_else() {
    let foo = evloop::select! {
        else => 1,
    };
    assert_eq!(foo, 1);
    let foo = evloop::select! {
        biased;
        else => 1,
    };
    assert_eq!(foo, 1);
}

#[evloop::test]
async fn select_on_a_borrowed_temporary_compiles_tokio_6721() {
    let ran = evloop::select! {
        () = &mut std::future::ready(()) => true,
    };
    assert!(ran);
}

#[evloop::test]
async fn never_branch_no_warnings() {
    // The crate denies warnings: an "unreachable call" in the expansion fails the build.
    let t = evloop::select! {
        _ = async_never() => 0,
        one_async_ready = one() => one_async_ready,
    };
    assert_eq!(t, 1);
}

#[evloop::test]
async fn sixty_four_branches_need_no_recursion_limit() {
    let num = evloop::select! {
        x = async { 1 } => x, x = async { 1 } => x, x = async { 1 } => x, x = async { 1 } => x,
        x = async { 1 } => x, x = async { 1 } => x, x = async { 1 } => x, x = async { 1 } => x,
        x = async { 1 } => x, x = async { 1 } => x, x = async { 1 } => x, x = async { 1 } => x,
        x = async { 1 } => x, x = async { 1 } => x, x = async { 1 } => x, x = async { 1 } => x,
        x = async { 1 } => x, x = async { 1 } => x, x = async { 1 } => x, x = async { 1 } => x,
        x = async { 1 } => x, x = async { 1 } => x, x = async { 1 } => x, x = async { 1 } => x,
        x = async { 1 } => x, x = async { 1 } => x, x = async { 1 } => x, x = async { 1 } => x,
        x = async { 1 } => x, x = async { 1 } => x, x = async { 1 } => x, x = async { 1 } => x,
        x = async { 1 } => x, x = async { 1 } => x, x = async { 1 } => x, x = async { 1 } => x,
        x = async { 1 } => x, x = async { 1 } => x, x = async { 1 } => x, x = async { 1 } => x,
        x = async { 1 } => x, x = async { 1 } => x, x = async { 1 } => x, x = async { 1 } => x,
        x = async { 1 } => x, x = async { 1 } => x, x = async { 1 } => x, x = async { 1 } => x,
        x = async { 1 } => x, x = async { 1 } => x, x = async { 1 } => x, x = async { 1 } => x,
        x = async { 1 } => x, x = async { 1 } => x, x = async { 1 } => x, x = async { 1 } => x,
        x = async { 1 } => x, x = async { 1 } => x, x = async { 1 } => x, x = async { 1 } => x,
        Some(x) = async { Some(2) } => x, Ok::<u8, ()>(x) = async { Ok(3) } => x as i32,
        _ = async { 4 } => 4, x = async { 1 } => { x }
        x = async { 1 } => { x }, x = async { 1 } => x,
    };
    assert!((1..=4).contains(&num));
}

// ---- select!: tokio's tests/macros_select.rs

#[evloop::test]
async fn sync_one_lit_expr_comma() {
    let foo = evloop::select! {
        foo = async { 1 } => foo,
    };
    assert_eq!(foo, 1);
}

#[evloop::test]
async fn nested_one() {
    let foo = evloop::select! {
        foo = async { 1 } => evloop::select! {
            bar = async { foo } => bar,
        },
    };
    assert_eq!(foo, 1);
}

#[evloop::test]
async fn sync_one_lit_expr_no_comma_and_block() {
    let foo = evloop::select! {
        foo = async { 1 } => foo
    };
    assert_eq!(foo, 1);
    let foo = evloop::select! {
        foo = async { 1 } => { foo }
    };
    assert_eq!(foo, 1);
}

#[evloop::test]
async fn sync_one_ident() {
    let one = one();
    let foo = evloop::select! {
        foo = one => foo,
    };
    assert_eq!(foo, 1);
}

#[evloop::test]
async fn sync_two_polls_one() {
    let cnt = Cell::new(0);
    let res = evloop::select! {
        foo = async {
            cnt.set(cnt.get() + 1);
            1
        } => foo,
        bar = async {
            cnt.set(cnt.get() + 1);
            2
        } => bar,
    };
    assert_eq!(1, cnt.get());
    assert!(res == 1 || res == 2);
}

#[evloop::test]
async fn move_uncompleted_futures() {
    let (tx1, mut rx1) = evloop::sync::oneshot::channel::<i32>();
    let (tx2, mut rx2) = evloop::sync::oneshot::channel::<i32>();
    tx1.send(1).unwrap();
    tx2.send(2).unwrap();
    let ran = evloop::select! {
        res = &mut rx1 => {
            assert_eq!(1, res.unwrap());
            assert_eq!(2, rx2.await.unwrap());
            true
        },
        res = &mut rx2 => {
            assert_eq!(2, res.unwrap());
            assert_eq!(1, rx1.await.unwrap());
            true
        },
    };
    assert!(ran);
}

#[evloop::test]
async fn mutable_borrowing_future_with_same_borrow_in_block_and_else() {
    let mut value = 234;
    evloop::select! {
        _ = require_mutable(&mut value) => { },
        _ = async_noop() => {
            value += 5;
        },
        else => {
            value += 27;
        },
    }
    assert!(value >= 234);
}

#[test]
fn future_panics_after_poll_is_not_polled_again() {
    let (tx, rx) = evloop::sync::oneshot::channel::<i32>();
    let mut polled = false;
    let f = std::future::poll_fn(|_| {
        assert!(!polled);
        polled = true;
        Poll::Ready(None::<()>)
    });
    let mut fut = pin!(async {
        evloop::select! {
            Some(_) = f => unreachable!(),
            ret = rx => ret.unwrap(),
        }
    });
    let (_, w) = waker();
    assert!(poll_once(fut.as_mut(), &w).is_pending());
    assert!(poll_once(fut.as_mut(), &w).is_pending());
    tx.send(1).unwrap();
    assert_eq!(poll_once(fut.as_mut(), &w), Poll::Ready(1));
}

#[test]
fn disable_with_if_never_polls_the_branch() {
    let f = std::future::poll_fn(|_| -> Poll<()> { panic!("a disabled branch was polled") });
    let (tx, rx) = evloop::sync::oneshot::channel::<()>();
    let mut fut = pin!(async {
        evloop::select! {
            _ = f, if false => unreachable!(),
            _ = rx => (),
        }
    });
    let (wakes, w) = waker();
    assert!(poll_once(fut.as_mut(), &w).is_pending());
    tx.send(()).unwrap();
    assert!(wakes.0.load(Ordering::SeqCst) > 0);
    assert!(poll_once(fut.as_mut(), &w).is_ready());
}

#[evloop::test]
async fn mut_on_left_hand_side_and_mut_ref_patterns() {
    let ok = pin!(async { 1 });
    let mut ok = ok;
    let v = evloop::select! {
        mut a = &mut ok => {
            a += 1;
            a
        }
    };
    assert_eq!(v, 2);
    evloop::select! {
        Some(mut foo) = async { Some("1".to_string()) } => {
            assert_eq!(foo, "1");
            foo = "2".to_string();
            assert_eq!(foo, "2");
        },
    };
    evloop::select! {
        Some(ref mut foo) = async { Some("1".to_string()) } => {
            *foo = "2".to_string();
            assert_eq!(*foo, "2");
        },
    };
}

#[evloop::test]
async fn biased_one_not_ready() {
    let (_tx1, rx1) = evloop::sync::oneshot::channel::<i32>();
    let (tx2, rx2) = evloop::sync::oneshot::channel::<i32>();
    let (tx3, rx3) = evloop::sync::oneshot::channel::<i32>();
    tx2.send(2).unwrap();
    tx3.send(3).unwrap();
    let v = evloop::select! {
        biased;
        _ = rx1 => unreachable!(),
        res = rx2 => res.unwrap(),
        _ = rx3 => panic!("rx2 is polled before rx3 under `biased;`"),
    };
    assert_eq!(2, v);
}

// ---- join! and try_join!: the cases and tokio's tests/macros_join.rs, macros_try_join.rs

#[evloop::test]
async fn join_and_try_join_take_biased() {
    assert_eq!(evloop::join!(biased; async { 1 }), (1,));
    assert_eq!(evloop::join!(biased; async { 1 }, async { 2 },), (1, 2));
    assert_eq!(evloop::try_join!(biased; async { Ok::<_, ()>(1) }), Ok((1,)));
    assert_eq!(
        evloop::try_join!(biased; async { Ok::<i32, i32>(1) }, async { Err::<i32, i32>(2) }),
        Err(2)
    );
    #[allow(clippy::unit_cmp)]
    {
        assert_eq!(evloop::join!(), ());
        assert_eq!(evloop::join!(biased;), ());
    }
}

#[evloop::test]
async fn futures_are_polled_in_order_in_biased_mode() {
    let order = Rc::new(RefCell::new(Vec::new()));
    let fut = |x: i32, order: Rc<RefCell<Vec<i32>>>| async move {
        for _ in 0..4 {
            order.borrow_mut().push(x);
            evloop::task::yield_now().await;
        }
    };
    evloop::join!(biased; fut(1, order.clone()), fut(2, order.clone()), fut(3, order.clone()));
    assert_eq!(*order.borrow(), [1, 2, 3, 1, 2, 3, 1, 2, 3, 1, 2, 3]);
}

#[test]
fn join_two_await() {
    let (tx1, rx1) = evloop::sync::oneshot::channel::<&str>();
    let (tx2, rx2) = evloop::sync::oneshot::channel::<u32>();
    let mut join = pin!(async { evloop::join!(async { rx1.await.unwrap() }, async { rx2.await.unwrap() }) });
    let (wakes, w) = waker();
    assert!(poll_once(join.as_mut(), &w).is_pending());
    tx2.send(123).unwrap();
    assert_eq!(wakes.0.load(Ordering::SeqCst), 1);
    assert!(poll_once(join.as_mut(), &w).is_pending());
    tx1.send("hello").unwrap();
    assert_eq!(poll_once(join.as_mut(), &w), Poll::Ready(("hello", 123)));
}

#[evloop::test]
async fn join_into_future_and_borrowed_temporaries() {
    struct NotAFuture;
    impl IntoFuture for NotAFuture {
        type Output = ();
        type IntoFuture = std::future::Ready<()>;
        fn into_future(self) -> Self::IntoFuture {
            ready(())
        }
    }
    evloop::join!(NotAFuture);
    evloop::join!(NotAFuture, &mut ready(()));
    assert_eq!(
        evloop::try_join!(&mut ready(Ok::<_, ()>(1)), async { Ok(2) }),
        Ok((1, 2))
    );
}

#[test]
#[deny(unreachable_code)]
fn uninhabited_output_type_tokio_7031() {
    use std::convert::Infallible;
    let (_, w) = waker();
    let mut join = pin!(async { evloop::join!(pending::<Infallible>(), async { 1 }) });
    assert!(poll_once(join.as_mut(), &w).is_pending());
    let mut join = pin!(async { evloop::join!(async { 1 }, pending::<Infallible>()) });
    assert!(poll_once(join.as_mut(), &w).is_pending());
    let mut join = pin!(async { evloop::join!(pending::<Infallible>()) });
    assert!(poll_once(join.as_mut(), &w).is_pending());
    let mut join = pin!(async { evloop::try_join!(pending::<Result<Infallible, ()>>(), async { Ok(1) }) });
    assert!(poll_once(join.as_mut(), &w).is_pending());
}

#[evloop::test]
async fn try_join_err_first() {
    let ok: Result<(i32, i32), &str> = evloop::try_join!(async { Ok(1) }, async { Ok(2) });
    assert_eq!(ok, Ok((1, 2)));
    let err: Result<(i32, i32), &str> = evloop::try_join!(async { Err("e") }, pending::<Result<i32, &str>>());
    assert_eq!(err, Err("e"));
}

// ---- Sizes, beside tokio's (tokio's struct_size_* and join_size tests)

#[test]
fn join_of_one_future_is_no_larger_than_tokios() {
    let ours = async {
        let ready = ready(0i32);
        evloop::join!(ready)
    };
    let tokios = async {
        let ready = ready(0i32);
        tokio::join!(ready)
    };
    assert!(
        size_of_val(&ours) <= size_of_val(&tokios),
        "{} > {}",
        size_of_val(&ours),
        size_of_val(&tokios)
    );
    let ours = async { evloop::try_join!(ready(Ok::<i32, ()>(0))) };
    let tokios = async { tokio::try_join!(ready(Ok::<i32, ()>(0))) };
    assert!(
        size_of_val(&ours) <= size_of_val(&tokios),
        "{} > {}",
        size_of_val(&ours),
        size_of_val(&tokios)
    );
}

/// `join!` and `try_join!` of several futures: one pinned tuple of the futures, each output in
/// its future's place, and one pointer to the tuple (issue 19 item 8; see the numbers in
/// `sizes_beside_tokios` below).
#[test]
fn join_of_three_is_no_larger_than_tokios() {
    let ours = async { evloop::join!(ready(1), ready(2), ready(3)) };
    let tokios = async { tokio::join!(ready(1), ready(2), ready(3)) };
    assert!(
        size_of_val(&ours) <= size_of_val(&tokios),
        "{} vs {}",
        size_of_val(&ours),
        size_of_val(&tokios)
    );
    let ours = async { evloop::try_join!(ready(Ok::<i32, ()>(1)), ready(Ok(2)), ready(Ok(3))) };
    let tokios = async { tokio::try_join!(ready(Ok::<i32, ()>(1)), ready(Ok(2)), ready(Ok(3))) };
    assert!(
        size_of_val(&ours) <= size_of_val(&tokios),
        "{} vs {}",
        size_of_val(&ours),
        size_of_val(&tokios)
    );
    let ours = async { evloop::join!(one(), one(), one()) };
    let tokios = async { tokio::join!(one(), one(), one()) };
    assert!(
        size_of_val(&ours) <= size_of_val(&tokios),
        "{} vs {}",
        size_of_val(&ours),
        size_of_val(&tokios)
    );
}

/// tokio's `select!` projects its pinned tuple of futures with `unsafe` in the caller's crate;
/// evloop's expansion calls a safe projection (`macro_support::Project`, whose `unsafe` is
/// evloop's, reviewed once and run under Miri), and keeps the same layout: the futures in one pinned tuple and one pointer
/// to it, whether or not they are `Unpin` (192 bytes before issue 19 for three `ready`s).
#[test]
fn select_of_three_branches_is_no_larger_than_tokios() {
    let ours = async {
        let (r1, r2, r3) = (ready(0i32), ready(0i32), ready(0i32));
        evloop::select! {
            _ = r1 => {},
            _ = r2 => {},
            _ = r3 => {},
        }
    };
    let tokios = async {
        let (r1, r2, r3) = (ready(0i32), ready(0i32), ready(0i32));
        tokio::select! {
            _ = r1 => {},
            _ = r2 => {},
            _ = r3 => {},
        }
    };
    assert!(
        size_of_val(&ours) <= size_of_val(&tokios),
        "{} vs {}",
        size_of_val(&ours),
        size_of_val(&tokios)
    );
    let ours = async {
        evloop::select! {
            _ = one() => {},
            _ = one() => {},
            _ = one() => {},
        }
    };
    let tokios = async {
        tokio::select! {
            _ = one() => {},
            _ = one() => {},
            _ = one() => {},
        }
    };
    assert!(
        size_of_val(&ours) <= size_of_val(&tokios),
        "{} vs {}",
        size_of_val(&ours),
        size_of_val(&tokios)
    );
}

/// Every shape beside tokio's: `Unpin` futures, `async fn` futures (not `Unpin`), a mix with a
/// large future, disabled branches, two to eight branches. Prints the table (`--nocapture`) that
/// the closing note quotes; fails on any row where evloop's future is larger.
#[test]
fn sizes_beside_tokios() {
    async fn big() -> [u8; 100] {
        evloop::task::yield_now().await;
        [0; 100]
    }
    async fn ok_after() -> Result<u64, ()> {
        evloop::task::yield_now().await;
        Ok(1)
    }
    let mut rows: Vec<(&str, usize, usize)> = Vec::new();
    macro_rules! row {
        ($name:expr, $ours:expr, $tokios:expr) => {
            rows.push(($name, size_of_val(&$ours), size_of_val(&$tokios)))
        };
    }
    row!(
        "select! 3 x ready",
        async {
            evloop::select! { _ = ready(1) => {}, _ = ready(2) => {}, _ = ready(3) => {} }
        },
        async {
            tokio::select! { _ = ready(1) => {}, _ = ready(2) => {}, _ = ready(3) => {} }
        }
    );
    row!(
        "select! 3 x async fn",
        async {
            evloop::select! { _ = one() => {}, _ = one() => {}, _ = one() => {} }
        },
        async {
            tokio::select! { _ = one() => {}, _ = one() => {}, _ = one() => {} }
        }
    );
    row!(
        "select! async fn, big, ready",
        async {
            evloop::select! {
                _ = one() => {},
                _ = big() => {},
                _ = ready(()) => {},
            }
        },
        async {
            tokio::select! {
                _ = one() => {},
                _ = big() => {},
                _ = ready(()) => {},
            }
        }
    );
    let off = false;
    row!(
        "select! 2 with `if`",
        async {
            evloop::select! { _ = one(), if off => {}, _ = big() => {} }
        },
        async {
            tokio::select! { _ = one(), if off => {}, _ = big() => {} }
        }
    );
    row!(
        "select! 8 x async fn",
        async {
            evloop::select! {
                _ = one() => {}, _ = one() => {}, _ = one() => {}, _ = one() => {},
                _ = one() => {}, _ = one() => {}, _ = one() => {}, _ = one() => {},
            }
        },
        async {
            tokio::select! {
                _ = one() => {}, _ = one() => {}, _ = one() => {}, _ = one() => {},
                _ = one() => {}, _ = one() => {}, _ = one() => {}, _ = one() => {},
            }
        }
    );
    row!("join! 2 x async fn", async { evloop::join!(one(), one()) }, async {
        tokio::join!(one(), one())
    });
    row!(
        "join! 3 x async fn",
        async { evloop::join!(one(), one(), one()) },
        async { tokio::join!(one(), one(), one()) }
    );
    row!(
        "join! 3 x ready",
        async { evloop::join!(ready(1), ready(2), ready(3)) },
        async { tokio::join!(ready(1), ready(2), ready(3)) }
    );
    row!(
        "join! async fn, big, ready",
        async { evloop::join!(one(), big(), ready(3)) },
        async { tokio::join!(one(), big(), ready(3)) }
    );
    row!(
        "join! 8 x async fn",
        async { evloop::join!(one(), one(), one(), one(), one(), one(), one(), one()) },
        async { tokio::join!(one(), one(), one(), one(), one(), one(), one(), one()) }
    );
    row!(
        "try_join! 3 x async fn",
        async { evloop::try_join!(ok_after(), ok_after(), ok_after()) },
        async { tokio::try_join!(ok_after(), ok_after(), ok_after()) }
    );
    for (name, ours, tokios) in &rows {
        println!("{name:32} evloop {ours:4} tokio {tokios:4}");
    }
    for (name, ours, tokios) in rows {
        assert!(ours <= tokios, "{name}: evloop {ours} bytes > tokio {tokios}");
    }
}

// ---- #[evloop::main] on a method taking `self`

struct App {
    answer: u32,
}

impl App {
    #[evloop::main]
    async fn run(self) -> u32 {
        evloop::task::yield_now().await;
        self.answer
    }

    #[evloop::main]
    async fn add(self, more: u32) -> u32 {
        self.answer + more
    }
}

#[test]
fn main_on_a_method_taking_self() {
    assert_eq!(App { answer: 42 }.run(), 42);
    assert_eq!(App { answer: 40 }.add(2), 42);
}

/// A future whose type is a generic parameter (not known to be `Unpin`) takes the pinned path,
/// and an `Unpin` one moved into its branch keeps working across polls: both mixed in one
/// `select!` and one `join!`, each polled while pending before it finishes.
#[evloop::test]
async fn generic_and_unpin_branches_mix() {
    async fn race<F: Future<Output = u32>>(slow: F) -> u32 {
        let (tx, rx) = evloop::sync::oneshot::channel::<u32>();
        evloop::spawn(async move {
            evloop::task::yield_now().await;
            let _ = tx.send(7);
        });
        evloop::select! {
            v = slow => v,
            Ok(v) = rx => v + 1,
        }
    }
    async fn both<F: Future<Output = u32>>(a: F) -> (u32, u32) {
        let (tx, rx) = evloop::sync::oneshot::channel::<u32>();
        evloop::spawn(async move {
            evloop::task::yield_now().await;
            let _ = tx.send(7);
        });
        let (a, b) = evloop::join!(a, rx);
        (a, b.unwrap())
    }
    assert_eq!(race(pending::<u32>()).await, 8);
    let local = 5u32;
    let borrowed = async {
        evloop::task::yield_now().await;
        let r = &local;
        evloop::task::yield_now().await;
        *r
    };
    assert_eq!(both(borrowed).await, (5, 7));
}
