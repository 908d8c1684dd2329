//! tokio's own tests of the I/O surface evloop took from it (issue 21, part B), ported by
//! changing imports where they run unchanged, and rewritten where tokio's trait shape differs
//! (an `AsyncRead` impl fills a `&mut [u8]` here, not a `ReadBuf`). Each module names the tokio
//! file it comes from; the behaviour asserted is tokio's.

mod duplex;
mod memory;
mod pin;
mod read_buf;
mod read_int;
mod seek;
mod split;
mod take_chain;
mod tcp;
mod util;
mod write_vectored;

/// Runs `f` on a new loop and returns its output (tokio's `#[tokio::test]` body).
fn run<F: std::future::Future<Output = T> + 'static, T: 'static>(f: F) -> T {
    evloop::run(f).unwrap()
}
