//! tokio 1.54's tests/time_pause.rs against `evloop::time::{pause, resume, advance}` on the
//! loop's virtual clock: 16 of its 18 tests run (the two left assert that tokio's multi-thread
//! runtime refuses to pause; see there), plus evloop's refusals and `resume`. Beyond imports:
//! `rand` becomes a fixed generator in the stress run.

use evloop::time::{self, Instant, Sleep};
use std::time::Duration;

use crate::task;

use std::{
    future::Future,
    pin::Pin,
    task::{Context, Poll},
};

#[evloop::test]
async fn pause_time_in_main() {
    evloop::time::pause();
}

#[evloop::test]
async fn pause_time_in_task() {
    let t = evloop::spawn(async {
        evloop::time::pause();
    });

    t.await.unwrap();
}

// Not ported: pause_time_in_main_threads and pause_time_in_spawn_threads assert that tokio's
// multi-thread runtime refuses to pause (one clock shared by its workers). An evloop loop is one
// thread with its own clock, so pausing one loop of a multi-loop runtime is allowed and pauses
// that loop only (the porting guide lists it). evloop's own refusals are tested below instead.

#[evloop::test]
#[should_panic(expected = "already paused")]
async fn pause_twice_panics_as_tokio() {
    evloop::time::pause();
    evloop::time::pause();
}

#[evloop::test]
#[should_panic(expected = "not paused")]
async fn advance_without_pause_panics_as_tokio() {
    evloop::time::advance(Duration::from_millis(1)).await;
}

#[test]
#[should_panic(expected = "no evloop loop is running")]
fn pause_outside_a_loop_panics_as_tokio() {
    evloop::time::pause();
}

/// `resume` continues from the paused time: what was advanced stays, and time then moves with
/// the real clock again (evloop's addition: tokio's tests never resume).
#[evloop::test]
async fn resume_keeps_the_advanced_time_and_runs_again() {
    time::pause();
    let start = Instant::now();
    time::advance(ms(3_600_000)).await;
    time::resume();
    assert!(start.elapsed() >= ms(3_600_000));
    let before = Instant::now();
    time::sleep(ms(2)).await; // a real sleep again
    assert!(before.elapsed() >= ms(2));
}

#[test]
fn paused_time_is_deterministic() {
    let run_1 = paused_time_stress_run();
    let run_2 = paused_time_stress_run();

    assert_eq!(run_1, run_2);
}

// `rand`'s seeded generator becomes a fixed linear congruential one (the tests crate does not
// depend on `rand`); the point is the same: random-looking sleeps, twice, same times.
#[evloop::main(flavor = "current_thread", start_paused = true)]
async fn paused_time_stress_run() -> Vec<Duration> {
    let mut state: u64 = 1;

    let mut times = vec![];
    let start = Instant::now();
    for _ in 0..10_000 {
        state = state
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        let sleep = Duration::from_nanos((state >> 33) % 1_000_000_000);
        time::sleep(sleep).await;
        times.push(start.elapsed());
    }

    times
}

#[evloop::test(start_paused = true)]
async fn advance_after_poll() {
    time::sleep(ms(1)).await;

    let start = Instant::now();

    let mut sleep = task::spawn(time::sleep_until(start + ms(300)));

    assert_pending!(sleep.poll());

    let before = Instant::now();
    time::advance(ms(100)).await;
    assert_elapsed!(before, ms(100));

    assert_pending!(sleep.poll());
}

#[evloop::test(start_paused = true)]
async fn sleep_no_poll() {
    let start = Instant::now();

    // TODO: Skip this
    time::advance(ms(1)).await;

    let mut sleep = task::spawn(time::sleep_until(start + ms(300)));

    let before = Instant::now();
    time::advance(ms(100)).await;
    assert_elapsed!(before, ms(100));

    assert_pending!(sleep.poll());
}

enum State {
    Begin,
    AwaitingAdvance(Pin<Box<dyn Future<Output = ()>>>),
    AfterAdvance,
}

struct Tester {
    sleep: Pin<Box<Sleep>>,
    state: State,
    before: Option<Instant>,
    poll: bool,
}

impl Future for Tester {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        match &mut self.state {
            State::Begin => {
                if self.poll {
                    assert_pending!(self.sleep.as_mut().poll(cx));
                }
                self.before = Some(Instant::now());
                let advance_fut = Box::pin(time::advance(ms(100)));
                self.state = State::AwaitingAdvance(advance_fut);
                self.poll(cx)
            }
            State::AwaitingAdvance(advance_fut) => match advance_fut.as_mut().poll(cx) {
                Poll::Pending => Poll::Pending,
                Poll::Ready(()) => {
                    self.state = State::AfterAdvance;
                    self.poll(cx)
                }
            },
            State::AfterAdvance => {
                assert_elapsed!(self.before.unwrap(), ms(100));

                assert_pending!(self.sleep.as_mut().poll(cx));

                Poll::Ready(())
            }
        }
    }
}

#[evloop::test(start_paused = true)]
async fn sleep_same_task() {
    let start = Instant::now();

    // TODO: Skip this
    time::advance(ms(1)).await;

    let sleep = Box::pin(time::sleep_until(start + ms(300)));

    Tester {
        sleep,
        state: State::Begin,
        before: None,
        poll: true,
    }
    .await;
}

#[evloop::test(start_paused = true)]
async fn sleep_same_task_no_poll() {
    let start = Instant::now();

    // TODO: Skip this
    time::advance(ms(1)).await;

    let sleep = Box::pin(time::sleep_until(start + ms(300)));

    Tester {
        sleep,
        state: State::Begin,
        before: None,
        poll: false,
    }
    .await;
}

#[evloop::test(start_paused = true)]
async fn interval() {
    let start = Instant::now();

    // TODO: Skip this
    time::advance(ms(1)).await;

    let mut i = task::spawn(time::interval_at(start, ms(300)));

    assert_ready_eq!(poll_next(&mut i), start);
    assert_pending!(poll_next(&mut i));

    let before = Instant::now();
    time::advance(ms(100)).await;
    assert_elapsed!(before, ms(100));
    assert_pending!(poll_next(&mut i));

    let before = Instant::now();
    time::advance(ms(200)).await;
    assert_elapsed!(before, ms(200));
    assert_ready_eq!(poll_next(&mut i), start + ms(300));
    assert_pending!(poll_next(&mut i));

    let before = Instant::now();
    time::advance(ms(400)).await;
    assert_elapsed!(before, ms(400));
    assert_ready_eq!(poll_next(&mut i), start + ms(600));
    assert_pending!(poll_next(&mut i));

    let before = Instant::now();
    time::advance(ms(500)).await;
    assert_elapsed!(before, ms(500));
    assert_ready_eq!(poll_next(&mut i), start + ms(900));
    assert_ready_eq!(poll_next(&mut i), start + ms(1200));
    assert_pending!(poll_next(&mut i));
}

#[evloop::test(start_paused = true)]
async fn test_time_advance_sub_ms() {
    let now = Instant::now();

    let dur = Duration::from_micros(51_592);
    time::advance(dur).await;

    assert_eq!(now.elapsed(), dur);

    let now = Instant::now();
    let dur = Duration::from_micros(1);
    time::advance(dur).await;

    assert_eq!(now.elapsed(), dur);
}

#[evloop::test(start_paused = true)]
async fn test_time_advance_3ms_and_change() {
    let now = Instant::now();

    let dur = Duration::from_micros(3_141_592);
    time::advance(dur).await;

    assert_eq!(now.elapsed(), dur);

    let now = Instant::now();
    let dur = Duration::from_micros(3_123_456);
    time::advance(dur).await;

    assert_eq!(now.elapsed(), dur);
}

#[evloop::test(start_paused = true)]
async fn regression_3710_with_submillis_advance() {
    let start = Instant::now();

    time::advance(Duration::from_millis(1)).await;

    let mut sleep = task::spawn(time::sleep_until(start + Duration::from_secs(60)));

    assert_pending!(sleep.poll());

    let before = Instant::now();
    let dur = Duration::from_micros(51_592);
    time::advance(dur).await;
    assert_eq!(before.elapsed(), dur);

    assert_pending!(sleep.poll());
}

#[evloop::test(start_paused = true)]
async fn exact_1ms_advance() {
    let now = Instant::now();

    let dur = Duration::from_millis(1);
    time::advance(dur).await;

    assert_eq!(now.elapsed(), dur);

    let now = Instant::now();
    let dur = Duration::from_millis(1);
    time::advance(dur).await;

    assert_eq!(now.elapsed(), dur);
}

#[evloop::test(start_paused = true)]
async fn advance_once_with_timer() {
    let mut sleep = task::spawn(time::sleep(Duration::from_millis(1)));
    assert_pending!(sleep.poll());

    time::advance(Duration::from_micros(250)).await;
    assert_pending!(sleep.poll());

    time::advance(Duration::from_micros(1500)).await;

    assert!(sleep.is_woken());
    assert_ready!(sleep.poll());
}

#[evloop::test(start_paused = true)]
async fn advance_multi_with_timer() {
    // Round to the nearest ms
    // time::sleep(Duration::from_millis(1)).await;

    let mut sleep = task::spawn(time::sleep(Duration::from_millis(1)));
    assert_pending!(sleep.poll());

    time::advance(Duration::from_micros(250)).await;
    assert_pending!(sleep.poll());

    time::advance(Duration::from_micros(250)).await;
    assert_pending!(sleep.poll());

    time::advance(Duration::from_micros(250)).await;
    assert_pending!(sleep.poll());

    time::advance(Duration::from_micros(250)).await;
    assert!(sleep.is_woken());
    assert_ready!(sleep.poll());
}

fn poll_next(interval: &mut task::Spawn<time::Interval>) -> Poll<Instant> {
    interval.enter(|cx, mut interval| interval.poll_tick(cx))
}

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

#[evloop::test(start_paused = true)]
async fn paused_time_join_unix_datagram_and_sleep() {
    use evloop::net::UnixDatagram;

    let time = Instant::now();
    let (sock1, sock2) = UnixDatagram::pair().unwrap();
    let mut buf = [0u8; 1];
    evloop::join!(
        async {
            sock1.send(&[1u8]).await.unwrap();
            time::sleep(Duration::from_millis(100)).await;
        },
        async {
            sock2.recv(&mut buf).await.unwrap();
            assert_eq!(time.elapsed(), Duration::ZERO);
        },
    );
}

#[evloop::test(start_paused = true)]
async fn paused_time_spawn_unix_datagram_and_sleep() {
    use evloop::net::UnixDatagram;

    let time = Instant::now();
    let (sock1, sock2) = UnixDatagram::pair().unwrap();

    sock1.send(&[1u8]).await.unwrap();

    let h = evloop::spawn(async move {
        let mut buf = [0u8; 1];
        sock2.recv(&mut buf).await.unwrap();
        assert_eq!(time.elapsed(), Duration::ZERO);
    });

    time::sleep(Duration::from_millis(100)).await;
    h.await.unwrap();
    assert_eq!(time.elapsed(), Duration::from_millis(100));
}
