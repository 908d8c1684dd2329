//! tokio_test's `io::Builder` mock, in the few lines the ported tests need: a value that is
//! both reader and writer and plays a script of actions in order. A read takes the next
//! `read` action (as much as fits) or fails with the next `read_error`, and waits (`Pending`)
//! while a `write` comes first; a write checks its bytes against the next `write` actions,
//! past any reads (tokio_test's rule), fails with a `write_error` in front, and stays pending
//! when nothing matched. With no action left a read is end of stream and a write
//! `BrokenPipe`, as in tokio_test.

use std::collections::VecDeque;
use std::io;
use std::pin::Pin;
use std::task::{Context, Poll, Waker};

use evloop::io::{AsyncRead, AsyncWrite};

enum Action {
    Read(Vec<u8>),
    ReadError(io::Error),
    Write(Vec<u8>),
    WriteError(io::Error),
}

/// tokio_test's `io::Builder`.
#[derive(Default)]
pub struct Builder {
    actions: VecDeque<Action>,
}

impl Builder {
    pub fn new() -> Builder {
        Builder::default()
    }

    pub fn read(&mut self, buf: &[u8]) -> &mut Builder {
        self.actions.push_back(Action::Read(buf.to_vec()));
        self
    }

    pub fn read_error(&mut self, error: io::Error) -> &mut Builder {
        self.actions.push_back(Action::ReadError(error));
        self
    }

    pub fn write(&mut self, buf: &[u8]) -> &mut Builder {
        self.actions.push_back(Action::Write(buf.to_vec()));
        self
    }

    pub fn write_error(&mut self, error: io::Error) -> &mut Builder {
        self.actions.push_back(Action::WriteError(error));
        self
    }

    pub fn build(&mut self) -> Mock {
        Mock {
            actions: std::mem::take(&mut self.actions),
            waiting: None,
        }
    }
}

/// tokio_test's `io::Mock`.
pub struct Mock {
    actions: VecDeque<Action>,
    /// The side waiting for the other's action to run first.
    waiting: Option<Waker>,
}

impl Mock {
    /// Drops the spent actions at the front (reads and writes with no bytes left).
    fn trim(&mut self) {
        while let Some(Action::Read(d) | Action::Write(d)) = self.actions.front() {
            if !d.is_empty() {
                break;
            }
            self.actions.pop_front();
        }
    }

    /// The next action is done: the side that waited for it may go on.
    fn advance(&mut self) {
        self.actions.pop_front();
        if let Some(w) = self.waiting.take() {
            w.wake();
        }
    }

    fn wait(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<usize>> {
        self.waiting = Some(cx.waker().clone());
        Poll::Pending
    }
}

impl AsyncRead for Mock {
    fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut [u8]) -> Poll<io::Result<usize>> {
        self.trim();
        match self.actions.front_mut() {
            None => Poll::Ready(Ok(0)),
            Some(Action::Read(data)) => {
                let n = data.len().min(buf.len());
                buf[..n].copy_from_slice(&data[..n]);
                data.drain(..n);
                if data.is_empty() {
                    self.advance();
                }
                Poll::Ready(Ok(n))
            }
            Some(Action::ReadError(_)) => match self.actions.pop_front() {
                Some(Action::ReadError(e)) => {
                    self.advance_after_pop();
                    Poll::Ready(Err(e))
                }
                _ => unreachable!(),
            },
            Some(_) => self.wait(cx),
        }
    }
}

impl Mock {
    /// `advance` for an action already popped (an error moved out).
    fn advance_after_pop(&mut self) {
        if let Some(w) = self.waiting.take() {
            w.wake();
        }
    }
}

impl AsyncWrite for Mock {
    fn poll_write(mut self: Pin<&mut Self>, _cx: &mut Context<'_>, mut buf: &[u8]) -> Poll<io::Result<usize>> {
        self.trim();
        if self.actions.is_empty() {
            return Poll::Ready(Err(io::ErrorKind::BrokenPipe.into()));
        }
        if let Some(Action::WriteError(_)) = self.actions.front() {
            let Some(Action::WriteError(e)) = self.actions.pop_front() else {
                unreachable!()
            };
            self.advance_after_pop();
            return Poll::Ready(Err(e));
        }
        // tokio_test's rule: a write goes to the next `write` actions, past any reads.
        let mut n = 0;
        for action in self.actions.iter_mut() {
            match action {
                Action::Write(expect) => {
                    let k = expect.len().min(buf.len());
                    assert_eq!(&buf[..k], &expect[..k], "write mismatch");
                    expect.drain(..k);
                    buf = &buf[k..];
                    n += k;
                    if buf.is_empty() {
                        break;
                    }
                }
                Action::WriteError(_) => break,
                _ => {}
            }
        }
        if n == 0 {
            // tokio_test's rule: nothing matched (a `write_error` further on, or reads first).
            return Poll::Pending;
        }
        self.trim();
        if !matches!(self.actions.front(), Some(Action::Write(_) | Action::WriteError(_))) {
            if let Some(w) = self.waiting.take() {
                w.wake();
            }
        }
        Poll::Ready(Ok(n))
    }

    fn poll_flush(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }
}
