//! The small programs behind the signal traces of chapter 4 of the book
//! (docs/04-signals-and-processes.md), one per subcommand:
//!
//! - `sigwake`: `add_signal_handler(SIGUSR1)`, and a `kill` from another thread 100 ms later
//!   wakes the loop blocked in `epoll_pwait2`.
//! - `sigpipe`: writing to a pipe whose reader has exited: `EPIPE`, and the `SIGPIPE` it raises
//!   is blocked and taken back, never delivered.
//! - `mask`: a child spawned after the loop's first pipe writer still starts with an empty
//!   signal mask; `mask --std` spawns the same child with `std::process::Command` alone, the way
//!   evloop did before it reset the mask, and shows what went wrong.
//! - `shutdown-twice TERM|INT`: runs `graceful_shutdown` (built next to this program) as a
//!   shell's background job, holds a connection open and sends it the signal twice.

use std::error::Error;
use std::io::{BufRead, BufReader};
use std::time::Duration;

use evloop::io::AsyncWriteExt;
use evloop::process::Stdio;
use evloop::signal::Signal;

async fn sigwake() -> Result<(), Box<dyn Error>> {
    let lp = evloop::event_loop::get_running_loop()?;
    let done = lp.create_future::<()>();
    let d = done.clone();
    lp.add_signal_handler(Signal::USR1, move || {
        println!("handler: SIGUSR1 arrived");
        let _ = d.set_result(());
    })?;
    std::thread::spawn(|| {
        std::thread::sleep(Duration::from_millis(100));
        let _ = evloop_syscalls::kill(evloop_syscalls::getpid(), Signal::USR1.raw());
    });
    let _ = done.await;
    println!("removed: {}", lp.remove_signal_handler(Signal::USR1));
    Ok(())
}

async fn sigpipe() -> Result<(), Box<dyn Error>> {
    let lp = evloop::event_loop::get_running_loop()?;
    let mut child = lp
        .subprocess_exec("head", ["-c", "10"])
        .stdin(Stdio::Pipe)
        .stdout(Stdio::Null)
        .await?;
    let mut stdin = child.stdin.take().ok_or("no stdin pipe")?;
    stdin.write_all(b"0123456789").await?; // all head wants
    println!("head: {}", child.wait().await?); // it has read them and exited
    let big = vec![b'x'; 1 << 20];
    let r = stdin.write_all(&big).await; // nobody reads this pipe any more
    println!(
        "write_all: {}",
        r.map_or_else(|e| format!("Err({e}, {:?})", e.kind()), |()| "Ok".into())
    );
    Ok(())
}

const MASK_SCRIPT: &str =
    r#"grep SigBlk /proc/self/status; yes | head -n 1 >/dev/null; echo "yes exit status: ${PIPESTATUS[0]}""#;

async fn mask(with_std: bool) -> Result<(), Box<dyn Error>> {
    let lp = evloop::event_loop::get_running_loop()?;
    let mut before = lp.subprocess_exec("bash", ["-c", MASK_SCRIPT]).await?;
    println!("before any pipe writer: {}", before.wait().await?);
    let (_r, _w) = evloop::pipe::pipe()?; // the loop now holds its SIGPIPE block
    if with_std {
        // What evloop's spawn did before the fix: std's Command keeps the thread's signal mask.
        let status = std::process::Command::new("bash").args(["-c", MASK_SCRIPT]).status()?;
        println!("after a pipe writer, std's Command alone: {status}");
    } else {
        let mut after = lp.subprocess_exec("bash", ["-c", MASK_SCRIPT]).await?;
        println!("after a pipe writer:   {}", after.wait().await?);
    }
    Ok(())
}

/// Runs `graceful_shutdown` as a non-interactive shell's background job (so it starts with
/// SIGINT ignored, as such jobs do), holds a connection to it open, and sends it `signal` twice,
/// 200 ms apart.
fn shutdown_twice(signal: &str) -> Result<(), Box<dyn Error>> {
    let signum = match signal {
        "TERM" => 15,
        "INT" => 2,
        _ => return Err("shutdown-twice TERM | INT".into()),
    };
    let server = std::env::current_exe()?.with_file_name("graceful_shutdown");
    let mut shell = std::process::Command::new("bash")
        .args(["-c", r#""$0" & wait $!"#])
        .arg(&server)
        .stdout(std::process::Stdio::piped())
        .spawn()
        .map_err(|e| format!("{}: {e}", server.display()))?;
    let mut out = BufReader::new(shell.stdout.take().ok_or("no stdout")?);
    let mut first = String::new();
    out.read_line(&mut first)?;
    // listening on 127.0.0.1:PORT (pid N); stop with Ctrl-C or SIGTERM
    let addr = first.split_whitespace().nth(2).ok_or("no address")?;
    let pid: i32 = first
        .split("(pid ")
        .nth(1)
        .and_then(|r| r.split(')').next())
        .ok_or("no pid")?
        .parse()?;
    let _conn = std::net::TcpStream::connect(addr)?; // a connection that stays open
    std::thread::sleep(Duration::from_millis(100));
    evloop_syscalls::kill(pid, signum)?;
    std::thread::sleep(Duration::from_millis(200));
    evloop_syscalls::kill(pid, signum)?;
    let status = shell.wait()?;
    println!("rc={}", status.code().unwrap_or(-1));
    print!("{first}");
    for line in out.lines() {
        println!("{}", line?);
    }
    Ok(())
}

fn main() -> Result<(), Box<dyn Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str).unwrap_or_default() {
        "sigwake" => evloop::run(sigwake())?,
        "sigpipe" => evloop::run(sigpipe())?,
        "mask" => evloop::run(mask(args.get(1).is_some_and(|a| a == "--std")))?,
        "shutdown-twice" => shutdown_twice(args.get(1).map(String::as_str).unwrap_or_default()),
        _ => Err("usage: book_signals sigwake | sigpipe | mask [--std] | shutdown-twice TERM|INT".into()),
    }
}
