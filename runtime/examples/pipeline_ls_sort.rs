//! A two-stage pipeline with evloop as the pipe in the middle: the shell's
//!
//! ```sh
//! ls -1 runtime/src | sort -r
//! ```
//!
//! except that `ls`'s stdout is not connected to `sort`'s stdin. Each child gets its own pipe
//! to this process, and the loop copies the bytes across: it reads `ls`'s output (a
//! [`PipeReader`]) and writes it into `sort`'s input (a [`PipeWriter`]), closes `sort`'s stdin
//! when `ls` reaches end of file (so `sort` knows its input is complete and starts printing),
//! reads `sort`'s output, prints it, and finally waits for both children and prints how they
//! ended. The directory is the first argument; by default this crate's own `src`.
//!
//! What evloop does in between, and the shell does not have to:
//! * every pipe end it keeps is non-blocking and registered once with the loop's epoll
//!   instance, so the copy and the collection run as two tasks on one thread, each parked until
//!   the loop's `epoll_pwait2` reports data or room on its pipe (`runtime/src/io/pipe.rs`);
//! * the children get only their three stdio descriptors: every fd evloop opens, and the pipes
//!   `std::process::Command` makes, are close-on-exec, so `sort` does not inherit the write end
//!   of its own stdin pipe (it would never see end of file if it did);
//! * each child is watched through a pidfd (`pidfd_open` right after the spawn). The pidfd
//!   becomes readable when the child exits; `wait` then reaps it with one
//!   `waitid(P_PIDFD, .., WNOHANG)`. No `SIGCHLD` handler, no thread per child
//!   (`runtime/src/os/process.rs`);
//! * writing into `sort` can never raise `SIGPIPE`: if `sort` died early, the copy would get an
//!   `EPIPE` error (`BrokenPipe`), not a signal (`write_nosigpipe`).
//!
//! `docs/04-signals-and-processes.md` walks through these mechanisms with traces. Run it with
//! `EVLOOP_TRACE=1` to see the two tasks (`copy ls->sort`, `read sort`) take turns.

use std::error::Error;
use std::ffi::OsString;
use std::io::{self, Write};

use evloop::pipe::{PipeReader, PipeWriter};
use evloop::process::Stdio;
use evloop::{
    io::{AsyncReadExt, AsyncWriteExt},
    task::{TaskBuilder, gather},
};

/// The copy task: `ls`'s stdout into `sort`'s stdin until end of file, then closes `sort`'s
/// stdin. Returns how many bytes went through.
async fn copy(mut from: PipeReader, mut to: PipeWriter) -> io::Result<usize> {
    let mut buf = vec![0u8; 64 * 1024];
    let mut total = 0;
    loop {
        let n = from.read(&mut buf).await?; // parks until ls writes (or exits: 0)
        if n == 0 {
            break;
        }
        to.write_all(&buf[..n]).await?; // parks while sort's pipe is full
        total += n;
    }
    to.shutdown().await?; // close(2): sort sees end of file
    Ok(total)
}

async fn pipeline(dir: OsString) -> Result<(), Box<dyn Error>> {
    let lp = evloop::event_loop::get_running_loop()?;

    // `ls -1 DIR` with its stdout piped to us; `sort -r` with stdin and stdout piped.
    let mut ls = lp
        .subprocess_exec("ls", [OsString::from("-1"), dir.clone()])
        .stdout(Stdio::Pipe)
        .await?;
    let mut sort = lp
        .subprocess_exec("sort", ["-r"])
        .stdin(Stdio::Pipe)
        .stdout(Stdio::Pipe)
        .await?;
    println!(
        "spawned ls (pid {}) and sort (pid {}); evloop copies between them",
        ls.pid(),
        sort.pid()
    );

    // Take the pipe ends out of the `Process`es: each goes to the task that uses it.
    let ls_out = ls.stdout.take().ok_or("ls: no stdout pipe")?;
    let sort_in = sort.stdin.take().ok_or("sort: no stdin pipe")?;
    let mut sort_out = sort.stdout.take().ok_or("sort: no stdout pipe")?;

    // One task per direction, run concurrently: reading sort's output while we still feed it
    // matters in general (a filter that writes as it reads, such as `grep`, would fill its
    // stdout pipe and stop reading its stdin if nobody drained it).
    let copying = TaskBuilder::new().name("copy ls->sort").spawn(copy(ls_out, sort_in))?;
    let reading = TaskBuilder::new().name("read sort").spawn(async move {
        let mut out = Vec::new();
        sort_out.read_to_end(&mut out).await.map(|_| out)
    })?;
    let (copied, sorted) = gather((copying, reading)).await;
    let copied = copied?.map_err(|e| format!("copying ls -> sort: {e}"))?;
    let sorted = sorted?.map_err(|e| format!("reading sort: {e}"))?;

    println!("--- {copied} bytes from ls, {} bytes back from sort -r:", sorted.len());
    io::stdout().write_all(&sorted)?;
    println!("---");

    // Both children have closed their stdout by now, so they have exited or are about to:
    // each wait parks on the child's pidfd and reaps it with one waitid.
    let ls_status = ls.wait().await?;
    let sort_status = sort.wait().await?;
    println!("ls -1 {} (pid {}): {ls_status}", dir.to_string_lossy(), ls.pid());
    println!("sort -r (pid {}): {sort_status}", sort.pid());
    if !ls_status.success() || !sort_status.success() {
        return Err("a stage of the pipeline failed".into());
    }
    Ok(())
}

fn main() -> Result<(), Box<dyn Error>> {
    let dir = std::env::args_os()
        .nth(1)
        .unwrap_or_else(|| OsString::from(concat!(env!("CARGO_MANIFEST_DIR"), "/src")));
    evloop::run(pipeline(dir))?
}
