//! `evloop::stream`: the combinators of tokio-stream's `StreamExt` and `StreamMap`.

use std::time::Duration;

use evloop::event_loop::Builder;
use evloop::stream::{self, Stream, StreamExt, StreamMap};
use evloop::time::{Instant, sleep};

fn virtual_run<T: 'static>(fut: impl Future<Output = T> + 'static) -> T {
    Builder::new().virtual_clock(true).run(fut).unwrap()
}

/// A stream of `(delay, value)`: each value comes `delay` after the previous one.
fn timed<T: 'static>(items: Vec<(u64, T)>) -> std::pin::Pin<Box<dyn Stream<Item = T>>> {
    Box::pin(stream::iter(items).then(|(ms, v)| async move {
        sleep(Duration::from_millis(ms)).await;
        v
    }))
}

#[test]
fn combinators_chain_like_iterators() {
    let v: Vec<String> = virtual_run(async {
        stream::iter(1..)
            .skip(1)
            .filter(|x| x % 2 == 0)
            .map(|x| x * 10)
            .take_while(|x| *x < 100)
            .filter_map(|x| (x != 40).then(|| x.to_string()))
            .take(3)
            .collect()
            .await
    });
    assert_eq!(v, ["20", "60", "80"]);
}

#[test]
fn merge_interleaves_by_arrival_and_ends_with_both() {
    let got: Vec<&str> = virtual_run(async {
        timed(vec![(10, "a1"), (20, "a2")])
            .merge(timed(vec![(15, "b1"), (1, "b2")]))
            .collect()
            .await
    });
    assert_eq!(got, ["a1", "b1", "b2", "a2"]);
}

#[test]
fn merge_takes_turns_when_both_are_ready() {
    let got: Vec<u8> = virtual_run(async { stream::iter([1, 1, 1]).merge(stream::iter([2, 2, 2])).collect().await });
    assert_eq!(got, [1, 2, 1, 2, 1, 2]);
}

#[test]
fn timeout_yields_one_elapsed_per_silence_and_goes_on() {
    let got = virtual_run(async {
        let start = Instant::now();
        let mut s = timed(vec![(500, 1), (2500, 2)]).timeout(Duration::from_secs(1));
        let mut got = Vec::new();
        while let Some(r) = s.next().await {
            got.push((r.is_ok(), (Instant::now() - start).as_millis()));
        }
        got
    });
    assert_eq!(got, [(true, 500), (false, 1500), (true, 3000)]);
}

#[test]
fn fold_any_all_chain_then() {
    virtual_run(async {
        assert_eq!(
            stream::iter(1..=3).chain(stream::once(4)).fold(0, |a, x| a + x).await,
            10
        );
        let mut s = stream::iter([1, 2, 3]);
        assert!(s.any(|x| x == 2).await);
        assert_eq!(s.next().await, Some(3), "any stops at the first match");
        assert!(stream::iter([2, 4]).all(|x| x % 2 == 0).await);
        let doubled: Vec<_> = stream::iter([1, 2]).then(|x| async move { x * 2 }).collect().await;
        assert_eq!(doubled, [2, 4]);
    });
}

#[test]
fn size_hints_follow_iterators() {
    assert_eq!(stream::iter(0..10).take(3).size_hint(), (3, Some(3)));
    assert_eq!(stream::iter(0..10).skip(3).size_hint(), (7, Some(7)));
    assert_eq!(stream::iter(0..2).chain(stream::iter(0..3)).size_hint(), (5, Some(5)));
    assert_eq!(stream::iter(0..10).filter(|_| true).size_hint(), (0, Some(10)));
}

#[test]
fn stream_map_yields_keyed_values_and_drops_ended_streams() {
    let (got, left) = virtual_run(async {
        let mut map = StreamMap::new();
        map.insert("slow", timed(vec![(30, 1), (30, 2)]));
        map.insert("fast", timed(vec![(10, 10), (10, 20), (10, 30)]));
        let mut got = Vec::new();
        for _ in 0..5 {
            got.push(map.next().await.unwrap());
        }
        let left = map.len();
        (got, left)
    });
    assert_eq!(
        got,
        [("fast", 10), ("fast", 20), ("slow", 1), ("fast", 30), ("slow", 2)]
    );
    assert_eq!(left, 1, "fast ended and was removed (when polled after its end)");
}

#[test]
fn stream_map_is_fair_between_always_ready_streams() {
    let got: Vec<(u8, u8)> = virtual_run(async {
        let mut map = StreamMap::new();
        map.insert(1, stream::iter(vec![0; 100]));
        map.insert(2, stream::iter(vec![0; 100]));
        map.take(20).collect().await
    });
    let ones = got.iter().filter(|(k, _)| *k == 1).count();
    assert_eq!(ones, 10, "{got:?}");
}

mod wrappers {
    use super::*;
    use evloop::stream::wrappers::{
        BroadcastStream, BroadcastStreamRecvError, IntervalStream, ReceiverStream, TcpListenerStream, WatchStream,
    };

    #[test]
    fn a_receiver_stream_keeps_its_place_while_pending_and_ends_with_the_senders() {
        let got: Vec<u32> = virtual_run(async {
            let (tx, rx) = evloop::sync::mpsc::channel(1);
            evloop::spawn(async move {
                for i in 0..3 {
                    sleep(Duration::from_secs(1)).await;
                    tx.send(i).await.unwrap();
                }
            });
            ReceiverStream::new(rx)
                .timeout(Duration::from_millis(1500))
                .map(|r| r.unwrap())
                .collect()
                .await
        });
        assert_eq!(got, [0, 1, 2]);
    }

    #[test]
    fn a_broadcast_stream_reports_lag_and_ends_on_close() {
        let got = virtual_run(async {
            let (tx, rx) = evloop::sync::broadcast::channel(2);
            for i in 0..4 {
                tx.send(i).unwrap();
            }
            drop(tx);
            BroadcastStream::new(rx).collect::<Vec<_>>().await
        });
        assert_eq!(got, [Err(BroadcastStreamRecvError::Lagged(2)), Ok(2), Ok(3)]);
    }

    #[test]
    fn a_watch_stream_gives_the_current_value_then_changes() {
        let got = virtual_run(async {
            let (tx, rx) = evloop::sync::watch::channel(0);
            evloop::spawn(async move {
                for i in 1..=2 {
                    sleep(Duration::from_secs(1)).await;
                    tx.send(i).unwrap();
                }
            });
            WatchStream::new(rx).collect::<Vec<_>>().await
        });
        assert_eq!(got, [0, 1, 2]);
    }

    #[test]
    fn interval_and_listener_streams() {
        virtual_run(async {
            let ticks: Vec<_> = IntervalStream::new(evloop::time::interval(Duration::from_secs(60)))
                .take(3)
                .collect()
                .await;
            assert_eq!(ticks[2] - ticks[0], Duration::from_secs(120));
        });
        evloop::run(async {
            let listener = evloop::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            let addr = listener.local_addr().unwrap();
            let mut incoming = TcpListenerStream::new(listener);
            for _ in 0..2 {
                let _c = evloop::net::TcpStream::connect(addr).await.unwrap();
                assert!(incoming.next().await.unwrap().is_ok());
            }
        })
        .unwrap();
    }
}
