//! tokio/tests/macros_pin.rs: `pin!` in its two forms.

use evloop::task::yield_now;

use super::run;

async fn one() -> u32 {
    1
}

#[test]
fn multi_pin() {
    run(async {
        let f1 = one();
        let f2 = one();
        evloop::pin!(f1, f2);
        assert_eq!((&mut f1).await + (&mut f2).await, 2);
    });
}

#[test]
fn let_form() {
    run(async {
        evloop::pin! {
            let a = one();
            let b = async { yield_now().await; 2 };
        }
        assert_eq!(a.as_mut().await + b.as_mut().await, 3);
    });
}

#[test]
fn pinned_sleep_in_a_select_loop() {
    run(async {
        // The same pinned sleep is polled by reference in every turn and ends the loop once,
        // not early. (How many turns run before it depends on the machine's speed: under
        // valgrind the 5 ms can be gone before the first turn, so the count is not asserted.)
        let lp = evloop::event_loop::get_running_loop().unwrap();
        let start = lp.time();
        let sleep = evloop::time::sleep(std::time::Duration::from_millis(5));
        evloop::pin!(sleep);
        let mut turns = 0u32;
        loop {
            evloop::select! {
                _ = &mut sleep => break,
                _ = yield_now() => turns += 1,
            }
        }
        assert!(
            lp.time() - start >= std::time::Duration::from_millis(5),
            "after {turns} turns"
        );
    });
}
