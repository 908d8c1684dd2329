//! A property test of `StreamReader` over a real loopback connection: a random byte stream
//! (an alphabet small enough that separators and near-separators are everywhere) is written in
//! random chunks, with random pauses between them, then the write side is shut down; meanwhile
//! a random sequence of reads (`readline`, `readuntil` with one- to three-byte separators,
//! some self-overlapping, `readexactly`, `read`) runs against a reader with a random limit.
//! A model computes each read's result from the stream alone, so every result must be the same
//! however the bytes were chunked:
//!
//! - `readuntil(sep)` returns up to and including the first `sep` when it starts within the
//!   limit; fails with `LimitOverrun` when it starts beyond the limit, or when there is none and
//!   the bytes left (less the separator's length, plus one) exceed the limit, and then leaves
//!   the bytes in the buffer; at the end of the stream otherwise, `Incomplete` with all the bytes
//!   left (`readline` returns them instead);
//! - `readexactly(n)` returns the next `n` bytes, or `Incomplete` with all that is left;
//! - `read(n)` returns a non-empty prefix of what is left, at most `n` bytes (empty only at the
//!   end of the stream, or for `n == 0`);
//! - no byte is lost or duplicated: at the end, `read_to_end` returns exactly what the model
//!   has left, and the reader is at EOF;
//! - memory stays bounded: the buffer never holds more than twice the limit plus one receive
//!   (64 KiB), or the largest `readexactly` asked for, plus one receive.

use std::future::IntoFuture;
use std::time::Duration;

use evloop::net::TcpListener;
use evloop::{
    event_loop::EventLoop,
    io::AsyncWriteExt,
    streams::{StreamError, StreamReader},
};
use proptest::prelude::*;
use proptest::test_runner::TestCaseError;

// This file's `#[test]` is its binary root's `contract_test`: the built-in one in the `io`
// binary, the simulated kernel's in the `sim` binary, which includes this file too.
use crate::contract_test as test;

/// One `recv` of a transport.
const RECV: usize = 64 * 1024;

const SEPARATORS: &[&[u8]] = &[b"\n", b"\r\n", b"ab", b"aba", b"x"];

#[derive(Clone, Debug)]
enum Read {
    Line,
    Until(usize),
    Exactly(usize),
    Up(usize),
}

fn read() -> impl Strategy<Value = Read> {
    prop_oneof![
        3 => Just(Read::Line),
        3 => (0..SEPARATORS.len()).prop_map(Read::Until),
        2 => (0usize..=80).prop_map(Read::Exactly),
        2 => (0usize..=80).prop_map(Read::Up),
    ]
}

#[derive(Clone, Debug)]
struct Case {
    limit: usize,
    data: Vec<u8>,
    /// Chunk lengths (cycled) and the number of loop yields after each chunk.
    chunks: Vec<(usize, u8)>,
    reads: Vec<Read>,
}

fn case() -> impl Strategy<Value = Case> {
    (
        1usize..=40,
        prop::collection::vec(prop::sample::select(&b"aabbxy\r\n\n"[..]), 0..=600),
        prop::collection::vec((1usize..=64, 0u8..=3), 1..=16),
        prop::collection::vec(read(), 0..=24),
    )
        .prop_map(|(limit, data, chunks, reads)| Case {
            limit,
            data,
            chunks,
            reads,
        })
}

fn find(hay: &[u8], sep: &[u8]) -> Option<usize> {
    hay.windows(sep.len()).position(|w| w == sep)
}

/// What a read must give, from the bytes left (`rest`) and the limit.
#[derive(Debug, PartialEq)]
enum Expect {
    Bytes(Vec<u8>),
    Incomplete(Vec<u8>, Option<usize>),
    Overrun,
    /// `read(n)`: a prefix, checked separately.
    Prefix(usize),
}

fn expect(read: &Read, rest: &[u8], limit: usize) -> Expect {
    let until = |sep: &[u8], partial_ok: bool| match find(rest, sep) {
        Some(i) if i > limit => Expect::Overrun,
        Some(i) => Expect::Bytes(rest[..i + sep.len()].to_vec()),
        None if rest.len() >= sep.len() && rest.len() + 1 - sep.len() > limit => Expect::Overrun,
        None if partial_ok => Expect::Bytes(rest.to_vec()),
        None => Expect::Incomplete(rest.to_vec(), None),
    };
    match read {
        Read::Line => until(b"\n", true),
        Read::Until(s) => until(SEPARATORS[*s], false),
        Read::Exactly(n) if rest.len() >= *n => Expect::Bytes(rest[..*n].to_vec()),
        Read::Exactly(n) => Expect::Incomplete(rest.to_vec(), Some(*n)),
        Read::Up(n) => Expect::Prefix(*n),
    }
}

async fn do_read(r: &StreamReader, read: &Read) -> Result<Vec<u8>, StreamError> {
    match read {
        Read::Line => r.readline().await,
        Read::Until(s) => r.readuntil(SEPARATORS[*s]).await,
        Read::Exactly(n) => r.readexactly(*n).await,
        Read::Up(n) => r.read(*n).await,
    }
}

async fn check(case: Case) -> Result<(), TestCaseError> {
    let fail = |e: &dyn std::fmt::Display| TestCaseError::fail(e.to_string());
    let listener = TcpListener::bind("127.0.0.1:0").await.map_err(|e| fail(&e))?;
    let port = listener.local_addr().map_err(|e| fail(&e))?.port();
    let connect = evloop::streams::open_connection("127.0.0.1", port)
        .limit(case.limit)
        .into_future();
    let (accepted, connected) = evloop::join!(listener.accept(), connect);
    let (mut peer, _) = accepted.map_err(|e| fail(&e))?;
    let (reader, _writer) = connected.map_err(|e| fail(&e))?;

    // The peer writes the stream in chunks, pausing for a few loop iterations between them.
    let (data, chunks) = (case.data.clone(), case.chunks.clone());
    let writer = evloop::spawn(async move {
        let mut at = 0;
        for &(len, pause) in chunks.iter().cycle() {
            if at >= data.len() {
                break;
            }
            let end = (at + len).min(data.len());
            peer.write_all(&data[at..end]).await?;
            at = end;
            for _ in 0..pause {
                evloop::task::yield_now().await;
            }
        }
        peer.shutdown().await?;
        Ok::<_, std::io::Error>(peer)
    });

    let limit = case.limit;
    let mut rest: &[u8] = &case.data;
    let mut largest = 0;
    for read in &case.reads {
        if let Read::Exactly(n) = read {
            largest = largest.max(*n);
        }
        let got = do_read(&reader, read).await;
        match (expect(read, rest, limit), got) {
            (Expect::Bytes(want), Ok(got)) => {
                prop_assert_eq!(&got, &want, "{:?}", read);
                rest = &rest[got.len()..];
            }
            (
                Expect::Incomplete(want, expected),
                Err(StreamError::Incomplete {
                    partial, expected: e, ..
                }),
            ) => {
                prop_assert_eq!(&partial, &want, "{:?}: the bytes left", read);
                prop_assert_eq!(e, expected);
                rest = &rest[partial.len()..];
            }
            (Expect::Overrun, Err(StreamError::LimitOverrun { limit: l, .. })) => {
                prop_assert_eq!(l, limit);
            }
            (Expect::Prefix(n), Ok(got)) => {
                if n == 0 || rest.is_empty() {
                    prop_assert!(
                        got.is_empty(),
                        "{:?} with {} bytes left gave {:?}",
                        read,
                        rest.len(),
                        got
                    );
                } else {
                    prop_assert!(!got.is_empty() && got.len() <= n, "{:?} gave {} bytes", read, got.len());
                    prop_assert_eq!(&got[..], &rest[..got.len()], "{:?}: a prefix of what is left", read);
                }
                rest = &rest[got.len()..];
            }
            (want, got) => {
                return Err(TestCaseError::fail(format!(
                    "{read:?} with {} bytes left and limit {limit}: expected {want:?}, got {got:?}",
                    rest.len()
                )));
            }
        }
        let bound = (2 * limit).max(largest) + RECV;
        prop_assert!(
            reader.buffered() <= bound,
            "{} bytes buffered, above {}",
            reader.buffered(),
            bound
        );
    }
    let tail = reader.read_to_end().await.map_err(|e| fail(&e))?;
    prop_assert_eq!(&tail[..], rest, "read_to_end returns exactly the bytes left");
    prop_assert!(reader.at_eof());
    let peer = writer.await.map_err(|e| fail(&e))?.map_err(|e| fail(&e))?;
    drop(peer);
    Ok(())
}

fn run(case: Case) -> Result<(), TestCaseError> {
    let lp = EventLoop::new().map_err(|e| TestCaseError::fail(e.to_string()))?;
    let r = lp
        .run_until_complete(evloop::time::timeout(Duration::from_secs(20), check(case)))
        .map_err(|e| TestCaseError::fail(e.to_string()))?
        .map_err(|_| TestCaseError::fail("the case hung (20 s)"))?;
    lp.close().map_err(|e| TestCaseError::fail(e.to_string()))?;
    r
}

proptest! {
    // `crate::prop_config` passes the config through in this file's own binary; the `sim`
    // binary, which includes this file, runs fewer cases from a fixed proptest seed (sim/contracts.rs).
    #![proptest_config(crate::prop_config(ProptestConfig { cases: 512, failure_persistence: None, ..ProptestConfig::default() }))]

    #[test]
    fn stream_reader_results_depend_on_the_bytes_never_on_their_chunking(c in case()) {
        run(c)?;
    }
}
