//! Issue 19 item 9: the text reads (`read_line`, `Lines::next_line`, `read_to_string`) follow
//! tokio: bytes that are not UTF-8 never stay in the caller's `String`, not even when an I/O
//! error follows them, and the error says tokio's "stream did not contain valid UTF-8".

use std::collections::VecDeque;
use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};

use evloop::io::{AsyncBufReadExt, AsyncRead, AsyncReadExt, BufReader};
use evloop_tests::run_on_new_loop;

/// A reader that hands out its chunks one read at a time, then fails with `ConnectionReset`
/// (or ends, if `then_eof`).
struct Script {
    chunks: VecDeque<&'static [u8]>,
    then_eof: bool,
}

fn script(chunks: &[&'static [u8]], then_eof: bool) -> BufReader<Script> {
    BufReader::new(Script {
        chunks: chunks.iter().copied().collect(),
        then_eof,
    })
}

impl AsyncRead for Script {
    fn poll_read(mut self: Pin<&mut Self>, _cx: &mut Context<'_>, buf: &mut [u8]) -> Poll<io::Result<usize>> {
        match self.chunks.pop_front() {
            Some(c) => {
                buf[..c.len()].copy_from_slice(c);
                Poll::Ready(Ok(c.len()))
            }
            None if self.then_eof => Poll::Ready(Ok(0)),
            None => Poll::Ready(Err(io::Error::new(io::ErrorKind::ConnectionReset, "peer reset"))),
        }
    }
}

const TOKIO_MESSAGE: &str = "stream did not contain valid UTF-8";

#[test]
fn read_line_restores_the_string_when_an_io_error_follows_invalid_utf8() {
    run_on_new_loop(async {
        let mut r = script(&[b"ok \xff\xfe no newline yet"], false);
        let mut line = String::from("kept: ");
        let err = r.read_line(&mut line).await.unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::ConnectionReset, "the I/O error is reported");
        assert_eq!(
            line, "kept: ",
            "the partial, invalid line is not left in the caller's string"
        );
    });
}

#[test]
fn read_line_keeps_valid_bytes_when_an_io_error_follows_them() {
    run_on_new_loop(async {
        let mut r = script(&[b"half a li"], false);
        let mut line = String::from("kept: ");
        let err = r.read_line(&mut line).await.unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::ConnectionReset);
        assert_eq!(line, "kept: half a li", "valid bytes stay, as tokio keeps them");
    });
}

#[test]
fn invalid_utf8_errors_carry_tokios_message_and_leave_the_string_as_it_was() {
    run_on_new_loop(async {
        let mut r = script(&[b"bad \xff line\n"], true);
        let mut line = String::from("kept");
        let err = r.read_line(&mut line).await.unwrap_err();
        assert_eq!(
            (err.kind(), err.to_string().as_str()),
            (io::ErrorKind::InvalidData, TOKIO_MESSAGE)
        );
        assert_eq!(line, "kept");

        let mut lines = script(&[b"bad \xff line\n", b"good\n"], true).lines();
        let err = lines.next_line().await.unwrap_err();
        assert_eq!(
            (err.kind(), err.to_string().as_str()),
            (io::ErrorKind::InvalidData, TOKIO_MESSAGE)
        );
        assert_eq!(lines.next_line().await.unwrap().as_deref(), Some("good"));

        let mut text = String::from("kept");
        let err = script(&[b"bad \xff"], true)
            .read_to_string(&mut text)
            .await
            .unwrap_err();
        assert_eq!(
            (err.kind(), err.to_string().as_str()),
            (io::ErrorKind::InvalidData, TOKIO_MESSAGE)
        );
        assert_eq!(text, "kept");
    });
}

#[test]
fn read_to_string_leaves_the_string_as_it_was_on_an_io_error() {
    run_on_new_loop(async {
        let mut text = String::from("kept");
        let err = script(&[b"valid but cut"], false)
            .read_to_string(&mut text)
            .await
            .unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::ConnectionReset);
        assert_eq!(
            text, "kept",
            "tokio's read_to_string truncates what it read on an I/O error"
        );
        let mut text = String::from("> ");
        assert_eq!(
            script(&[b"all ", b"of it"], true)
                .read_to_string(&mut text)
                .await
                .unwrap(),
            9
        );
        assert_eq!(text, "> all of it");
    });
}
