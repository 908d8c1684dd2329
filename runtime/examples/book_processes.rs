//! The small programs behind the process traces of chapter 4 of the book
//! (docs/04-signals-and-processes.md), one per subcommand:
//!
//! - `wait`: spawn `sh -c 'sleep 0.1; exit 3'` and wait for it through its pidfd.
//! - `deadlock`: feed `cat` 1 MiB the obvious way (all the input, then the output) and watch it
//!   stall; then the same through `communicate`.
//! - `communicate`: 256 KiB through `cat` with `communicate`.
//! - `orphans`: two children dropped without being waited for, one outliving the loop.

use std::cell::Cell;
use std::error::Error;
use std::time::Duration;

use evloop::io::{AsyncReadExt, AsyncWriteExt};

async fn wait() -> Result<(), Box<dyn Error>> {
    let lp = evloop::event_loop::get_running_loop()?;
    let mut child = lp.subprocess_exec("sh", ["-c", "sleep 0.1; exit 3"]).await?;
    println!("spawned pid {}", child.pid());
    let status = child.wait().await?;
    println!("{status} (returncode {})", status.returncode());
    Ok(())
}

const INPUT: usize = 1 << 20;

async fn deadlock() -> Result<(), Box<dyn Error>> {
    let lp = evloop::event_loop::get_running_loop()?;
    let input = vec![b'x'; INPUT];
    {
        let mut cat = lp.subprocess_exec("cat", [] as [&str; 0]).piped().await?;
        let mut stdin = cat.stdin.take().ok_or("no stdin")?;
        let mut stdout = cat.stdout.take().ok_or("no stdout")?;
        let written = Cell::new(0);
        let w = &written;
        // The obvious way: all the input first, then the output.
        let naive = async {
            for chunk in input.chunks(4096) {
                stdin.write_all(chunk).await?;
                w.set(w.get() + chunk.len());
            }
            stdin.shutdown().await?;
            let mut out = Vec::new();
            stdout.read_to_end(&mut out).await?;
            Ok::<_, std::io::Error>(out.len())
        };
        match evloop::time::timeout(Duration::from_secs(1), naive).await {
            Ok(r) => println!("naive: got {:?} bytes back", r),
            Err(e) => println!("naive: stuck after writing {} of {INPUT} bytes ({e})", written.get()),
        }
        cat.kill()?;
        println!("naive: cat {}", cat.wait().await?);
    }
    // communicate: feed stdin, drain stdout and stderr concurrently.
    let mut cat = lp.subprocess_exec("cat", [] as [&str; 0]).piped().await?;
    let out = cat.communicate(Some(input)).await?;
    println!("communicate: {} bytes back, cat {}", out.stdout.len(), out.status);
    Ok(())
}

async fn communicate() -> Result<(), Box<dyn Error>> {
    let lp = evloop::event_loop::get_running_loop()?;
    let mut cat = lp.subprocess_exec("cat", [] as [&str; 0]).piped().await?;
    let out = cat.communicate(Some(vec![b'x'; 256 * 1024])).await?;
    println!("{} bytes back, cat {}", out.stdout.len(), out.status);
    Ok(())
}

/// What `/proc/PID/stat` says about a process: `S` sleeping, `Z` a zombie; no file: reaped.
fn state(pid: u32) -> String {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => match stat.rsplit(") ").next().and_then(|rest| rest.split(' ').next()) {
            Some(s) => format!("state {s}"),
            None => "state ?".to_string(),
        },
        Err(_) => "gone (reaped)".to_string(),
    }
}

fn orphans() -> Result<(), Box<dyn Error>> {
    let late = evloop::run(async {
        let lp = evloop::event_loop::get_running_loop()?;
        let early = lp.subprocess_exec("sleep", ["0.05"]).await?.pid(); // dropped at once
        let late = lp.subprocess_exec("sleep", ["0.3"]).await?.pid(); // dropped at once
        evloop::time::sleep(Duration::from_millis(150)).await;
        println!("at 150 ms: sleep 0.05 (pid {early}): {}", state(early));
        println!("at 150 ms: sleep 0.3 (pid {late}): {}", state(late));
        Ok::<u32, std::io::Error>(late)
    })??;
    println!("loop closed; sleep 0.3 (pid {late}): {}", state(late));
    std::thread::sleep(Duration::from_millis(400));
    println!("at 550 ms: sleep 0.3 (pid {late}): {}", state(late));
    Ok(())
}

fn main() -> Result<(), Box<dyn Error>> {
    match std::env::args().nth(1).unwrap_or_default().as_str() {
        "wait" => evloop::run(wait())?,
        "deadlock" => evloop::run(deadlock())?,
        "communicate" => evloop::run(communicate())?,
        "orphans" => orphans(),
        _ => Err("usage: book_processes wait | deadlock | communicate | orphans".into()),
    }
}
