//! The runtimes under test as child processes: how to start each peer, one-shot subcommands with a
//! deadline, echo servers that live across runs, the load client, and what `/proc` says about them.

use std::io::{BufRead, BufReader, Read};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use crate::json::{self, Object};

/// Which program implements a runtime.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Peer {
    /// `target/release/examples/peer_<name>`.
    Bin(&'static str),
    /// `tests/bench/peer_asyncio.py`, run by the bench venv's python, with `--uvloop` or without.
    Python { uvloop: bool },
}

/// One runtime as a benchmark row.
#[derive(Clone, Copy, Debug)]
pub struct Runtime {
    pub label: &'static str,
    pub peer: Peer,
    /// `--variant` for the echo server (evloop only).
    pub variant: Option<&'static str>,
}

impl Runtime {
    pub fn is_evloop(&self) -> bool {
        self.peer == Peer::Bin("evloop")
    }
}

const fn rt(label: &'static str, peer: Peer, variant: Option<&'static str>) -> Runtime {
    Runtime { label, peer, variant }
}

/// The echo servers; the first one (evloop's protocol path) is the reference for ratios.
pub const ECHO_RUNTIMES: [Runtime; 9] = [
    rt("evloop protocol", Peer::Bin("evloop"), Some("protocol")),
    rt("evloop streams", Peer::Bin("evloop"), Some("streams")),
    rt("evloop TcpStream", Peer::Bin("evloop"), Some("tcpstream")),
    rt("evloop sock", Peer::Bin("evloop"), Some("sock")),
    rt("tokio current_thread", Peer::Bin("tokio"), None),
    rt("smol", Peer::Bin("smol"), None),
    rt("raw epoll", Peer::Bin("raw"), None),
    rt("asyncio", Peer::Python { uvloop: false }, None),
    rt("uvloop", Peer::Python { uvloop: true }, None),
];

/// The pipelined case: the same line server written with streams (a `write` per reply) and with
/// a `TcpStream` (one `write_all` per read); the streams path is the one measured.
pub const PIPELINE_RUNTIMES: [Runtime; 2] = [
    rt("evloop streams (reply per line)", Peer::Bin("evloop"), Some("lines")),
    rt("evloop TcpStream", Peer::Bin("evloop"), Some("tcpstream")),
];

/// The runtimes of the in-process subcommands (timers, scheduling, idle tasks); evloop first.
pub const MICRO_RUNTIMES: [Runtime; 6] = [
    rt("evloop", Peer::Bin("evloop"), None),
    rt("tokio current_thread", Peer::Bin("tokio"), None),
    rt("smol", Peer::Bin("smol"), None),
    rt("raw epoll", Peer::Bin("raw"), None),
    rt("asyncio", Peer::Python { uvloop: false }, None),
    rt("uvloop", Peer::Python { uvloop: true }, None),
];

/// Where the programs are.
pub struct Env {
    /// `target/release/examples`: the peers, `echo_load` and this harness.
    pub examples: PathBuf,
    /// The repository root.
    pub root: PathBuf,
    /// The python that runs `peer_asyncio.py` (the venv's, else `python3`), or why there is none.
    pub python: Result<PathBuf, String>,
}

impl Env {
    pub fn discover() -> Env {
        let examples = std::env::current_exe()
            .ok()
            .and_then(|p| p.parent().map(Path::to_path_buf))
            .unwrap_or_else(|| PathBuf::from("target/release/examples"));
        let manifest = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
        let root = manifest.parent().map(Path::to_path_buf).unwrap_or(manifest);
        let venv = root.join(".bench-venv/bin/python");
        let python = if venv.exists() {
            Ok(venv)
        } else {
            match Command::new("python3")
                .arg("-c")
                .arg("pass")
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status()
            {
                Ok(s) if s.success() => Ok(PathBuf::from("python3")),
                _ => Err("no python3 (and no .bench-venv: run `make bench-venv`)".to_string()),
            }
        };
        Env { examples, root, python }
    }

    pub fn echo_load(&self) -> PathBuf {
        self.examples.join("echo_load")
    }

    /// The command that runs `rt`'s peer with `args`, or why it cannot run.
    pub fn command(&self, rt: &Runtime, args: &[String]) -> Result<Command, String> {
        match rt.peer {
            Peer::Bin(name) => {
                let path = self.examples.join(format!("peer_{name}"));
                if !path.exists() {
                    return Err(format!(
                        "{} is not built (cargo build --release -p evloop-tests --no-default-features --examples)",
                        path.display()
                    ));
                }
                let mut cmd = Command::new(path);
                cmd.args(args);
                Ok(cmd)
            }
            Peer::Python { uvloop } => {
                let python = self.python.clone()?;
                let script = self.root.join("tests/bench/peer_asyncio.py");
                if !script.exists() {
                    return Err(format!("{} is missing", script.display()));
                }
                let mut cmd = Command::new(python);
                cmd.arg(script);
                if uvloop {
                    cmd.arg("--uvloop");
                }
                cmd.args(args).env("PYTHONUNBUFFERED", "1");
                Ok(cmd)
            }
        }
    }
}

/// What a one-shot peer run produced.
pub enum PeerOut {
    Json(Object),
    /// The runtime cannot do this (exit status 3 with `n/a: reason`, or `{"na": reason}`).
    Na(String),
    /// It ran and failed, or printed nothing usable.
    Failed(String),
}

fn spawn_reader<R: Read + Send + 'static>(r: R) -> thread::JoinHandle<String> {
    thread::spawn(move || {
        let mut s = String::new();
        let _ = BufReader::new(r).read_to_string(&mut s);
        s
    })
}

/// The last `n` characters of `s`, trimmed, on one line.
pub fn tail(s: &str, n: usize) -> String {
    let t = s.trim();
    let start = t.char_indices().rev().nth(n.saturating_sub(1)).map_or(0, |(i, _)| i);
    t[start..].replace('\n', " | ")
}

/// Waits for `child` until `deadline`; kills it past that. Returns its status, or None on timeout.
pub fn wait_until(child: &mut Child, deadline: Instant) -> Option<ExitStatus> {
    loop {
        match child.try_wait() {
            Ok(Some(s)) => return Some(s),
            Ok(None) if Instant::now() < deadline => thread::sleep(Duration::from_millis(5)),
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                return None;
            }
        }
    }
}

/// Runs `cmd` to completion (or kills it after `limit`); returns status, stdout, stderr.
pub fn run_captured(mut cmd: Command, limit: Duration) -> Result<(Option<ExitStatus>, String, String), String> {
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot start {:?}: {e}", cmd.get_program()))?;
    let out = spawn_reader(child.stdout.take().expect("piped stdout"));
    let err = spawn_reader(child.stderr.take().expect("piped stderr"));
    let status = wait_until(&mut child, Instant::now() + limit);
    let (out, err) = (out.join().unwrap_or_default(), err.join().unwrap_or_default());
    Ok((status, out, err))
}

/// Runs one peer subcommand and reads its JSON line.
pub fn run_peer(env: &Env, rt: &Runtime, args: &[String], limit: Duration) -> PeerOut {
    let cmd = match env.command(rt, args) {
        Ok(c) => c,
        Err(e) => return PeerOut::Na(e),
    };
    let (status, out, err) = match run_captured(cmd, limit) {
        Ok(r) => r,
        Err(e) => return PeerOut::Failed(e),
    };
    let Some(status) = status else {
        return PeerOut::Failed(format!("timed out after {} s", limit.as_secs()));
    };
    if status.code() == Some(3) || out.trim_start().starts_with("n/a") {
        let reason = format!("{out}\n{err}");
        let reason = reason
            .lines()
            .find_map(|l| l.trim().strip_prefix("n/a:"))
            .map_or_else(|| tail(&reason, 200), |r| r.trim().to_string());
        return PeerOut::Na(reason);
    }
    match json::last_object(&out) {
        Some(obj) => {
            if let Some(na) = obj.str("na") {
                PeerOut::Na(na.to_string())
            } else if !status.success() {
                PeerOut::Failed(format!("exit {status}: {}", tail(&err, 300)))
            } else {
                PeerOut::Json(obj)
            }
        }
        None => PeerOut::Failed(format!(
            "exit {status}, no JSON line; stdout: {} stderr: {}",
            tail(&out, 200),
            tail(&err, 300)
        )),
    }
}

/// A running echo server: stdin piped (closing it stops the server), stdout drained.
pub struct EchoServer {
    child: Child,
    stdin: Option<ChildStdin>,
    pub addr: SocketAddr,
    stderr: Arc<Mutex<String>>,
}

/// Why an echo server is not running.
pub enum StartError {
    Na(String),
    Failed(String),
}

impl EchoServer {
    pub fn start(env: &Env, rt: &Runtime) -> Result<EchoServer, StartError> {
        let mut args = vec!["echo".to_string()];
        if let Some(v) = rt.variant {
            args.push("--variant".into());
            args.push(v.into());
        }
        args.push("--port".into());
        args.push("0".into());
        let mut cmd = env.command(rt, &args).map_err(StartError::Na)?;
        let mut child = cmd
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| StartError::Failed(format!("cannot start: {e}")))?;
        let stdin = child.stdin.take();
        let stderr = Arc::new(Mutex::new(String::new()));
        {
            let stderr = stderr.clone();
            let r = child.stderr.take().expect("piped stderr");
            thread::spawn(move || {
                for line in BufReader::new(r).lines() {
                    let Ok(line) = line else { break };
                    let mut s = stderr.lock().unwrap_or_else(|e| e.into_inner());
                    if s.len() < 64 * 1024 {
                        s.push_str(&line);
                        s.push('\n');
                    }
                }
            });
        }
        let (tx, rx) = mpsc::channel::<String>();
        let out = child.stdout.take().expect("piped stdout");
        thread::spawn(move || {
            for line in BufReader::new(out).lines() {
                let Ok(line) = line else { break };
                let _ = tx.send(line); // keeps draining after the receiver is gone
            }
        });
        let deadline = Instant::now() + Duration::from_secs(15);
        let mut seen = String::new();
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match rx.recv_timeout(left.min(Duration::from_millis(50))) {
                Ok(line) => {
                    if let Some(a) = line.trim().strip_prefix("listening on ") {
                        let addr = a
                            .trim()
                            .parse()
                            .map_err(|e| StartError::Failed(format!("bad address {a:?}: {e}")))?;
                        return Ok(EchoServer {
                            child,
                            stdin,
                            addr,
                            stderr,
                        });
                    }
                    if let Some(r) = line.trim().strip_prefix("n/a:") {
                        let _ = child.kill();
                        let _ = child.wait();
                        return Err(StartError::Na(r.trim().to_string()));
                    }
                    seen.push_str(&line);
                    seen.push('\n');
                }
                Err(mpsc::RecvTimeoutError::Timeout) if Instant::now() < deadline => {
                    if let Ok(Some(status)) = child.try_wait() {
                        thread::sleep(Duration::from_millis(50)); // let the readers catch up
                        while let Ok(line) = rx.try_recv() {
                            seen.push_str(&line);
                            seen.push('\n');
                        }
                        let err = stderr.lock().map(|s| s.clone()).unwrap_or_default();
                        let text = format!("{seen}\n{err}");
                        if status.code() == Some(3) {
                            let reason = text
                                .lines()
                                .find_map(|l| l.trim().strip_prefix("n/a:"))
                                .map_or_else(|| tail(&text, 200), |r| r.trim().to_string());
                            return Err(StartError::Na(reason));
                        }
                        return Err(StartError::Failed(format!(
                            "exited with {status} before listening: {}",
                            tail(&text, 300)
                        )));
                    }
                }
                Err(_) => {
                    let _ = child.kill();
                    let _ = child.wait();
                    let err = stderr.lock().map(|s| s.clone()).unwrap_or_default();
                    return Err(StartError::Failed(format!(
                        "no 'listening on' line within 15 s: {}",
                        tail(&format!("{seen}\n{err}"), 300)
                    )));
                }
            }
        }
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// None while it runs; why it stopped otherwise.
    pub fn exited(&mut self) -> Option<String> {
        match self.child.try_wait() {
            Ok(None) => None,
            Ok(Some(s)) => Some(format!("the server exited ({s}): {}", tail(&self.stderr_text(), 300))),
            Err(e) => Some(format!("cannot wait for the server: {e}")),
        }
    }

    pub fn stderr_text(&self) -> String {
        self.stderr.lock().map(|s| s.clone()).unwrap_or_default()
    }

    /// Closes its stdin, gives it two seconds to exit, then kills it.
    pub fn stop(mut self) {
        drop(self.stdin.take());
        wait_until(&mut self.child, Instant::now() + Duration::from_secs(2));
    }
}

impl Drop for EchoServer {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            drop(self.stdin.take());
            wait_until(&mut self.child, Instant::now() + Duration::from_millis(500));
        }
    }
}

/// What one `echo_load --json` run reported.
#[derive(Clone, Copy, Debug)]
pub struct LoadResult {
    pub round_trips: f64,
    pub per_sec: f64,
    pub p50_us: f64,
    pub p99_us: f64,
}

/// Runs the shared load client against `addr` (plain echo check).
pub fn run_load(
    env: &Env,
    addr: SocketAddr,
    conns: usize,
    size: usize,
    pipeline: usize,
    seconds: f64,
) -> Result<LoadResult, String> {
    let mut cmd = Command::new(env.echo_load());
    cmd.args(["--addr", &addr.to_string()])
        .args(["--conns", &conns.to_string()])
        .args(["--size", &size.to_string()])
        .args(["--seconds", &seconds.to_string()])
        .args(["--plain", "--json"]);
    if pipeline > 1 {
        cmd.args(["--pipeline", &pipeline.to_string()]);
    }
    let limit = Duration::from_secs_f64(seconds + 60.0);
    let (status, out, err) = run_captured(cmd, limit)?;
    let Some(status) = status else {
        return Err(format!("echo_load timed out after {} s", limit.as_secs()));
    };
    if !status.success() {
        return Err(format!("echo_load failed ({status}): {}", tail(&err, 300)));
    }
    let obj = json::last_object(&out).ok_or_else(|| format!("echo_load printed no JSON: {}", tail(&out, 200)))?;
    let get = |k: &str| {
        obj.num(k)
            .ok_or_else(|| format!("echo_load JSON lacks {k}: {}", obj.to_json()))
    };
    Ok(LoadResult {
        round_trips: get("round_trips")?,
        per_sec: get("per_sec")?,
        p50_us: get("p50_us")?,
        p99_us: get("p99_us")?,
    })
}

fn clock_ticks_per_sec() -> f64 {
    static TICKS: std::sync::OnceLock<f64> = std::sync::OnceLock::new();
    *TICKS.get_or_init(|| {
        Command::new("getconf")
            .arg("CLK_TCK")
            .output()
            .ok()
            .and_then(|o| String::from_utf8_lossy(&o.stdout).trim().parse().ok())
            .unwrap_or(100.0)
    })
}

/// utime + stime of the whole process from `/proc/PID/stat`, in ns (clock-tick resolution).
pub fn stat_cpu_ns(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let rest = &stat[stat.rfind(')')? + 2..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    let ticks: f64 = f.get(11)?.parse::<f64>().ok()? + f.get(12)?.parse::<f64>().ok()?;
    Some((ticks / clock_ticks_per_sec() * 1e9) as u64)
}

/// CPU time the process has used, in ns: the sum over its threads of the scheduler's
/// `sum_exec_runtime` (`/proc/PID/task/*/schedstat`, nanoseconds: the figure that utime + stime in
/// `/proc/PID/stat` report rounded to 10 ms ticks), falling back to utime + stime.
pub fn cpu_ns(pid: u32) -> Option<u64> {
    let mut total = 0u64;
    let mut any = false;
    if let Ok(dir) = std::fs::read_dir(format!("/proc/{pid}/task")) {
        for entry in dir.flatten() {
            let s = std::fs::read_to_string(entry.path().join("schedstat")).unwrap_or_default();
            if let Some(ns) = s.split_whitespace().next().and_then(|v| v.parse::<u64>().ok()) {
                total += ns;
                any = true;
            }
        }
    }
    if any && total > 0 {
        Some(total)
    } else {
        stat_cpu_ns(pid)
    }
}

/// `VmRSS` of a process, in KiB.
pub fn vm_rss_kib(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
}

/// CPU time of the whole machine and of this process with its waited-for children, to tell how
/// much of the machine other processes used while the benchmark ran (a noisy neighbour shows up
/// here rather than as an unexplained spread).
#[derive(Clone, Copy, Debug)]
pub struct LoadSample {
    at: Instant,
    /// user + nice + system over all CPUs, seconds.
    busy_s: f64,
    steal_s: f64,
    /// utime + stime + cutime + cstime of this process, seconds.
    own_s: f64,
}

/// What other processes used between two samples.
#[derive(Clone, Copy, Debug)]
pub struct ForeignLoad {
    /// Share of the whole machine (all cores) used by processes outside the benchmark, 0..1.
    pub other: f64,
    /// Share of the machine the hypervisor took (steal), 0..1.
    pub steal: f64,
}

pub fn load_sample() -> Option<LoadSample> {
    let hz = clock_ticks_per_sec();
    let stat = std::fs::read_to_string("/proc/stat").ok()?;
    let cpu: Vec<f64> = stat
        .lines()
        .next()?
        .split_whitespace()
        .skip(1)
        .filter_map(|v| v.parse().ok())
        .collect();
    let own = std::fs::read_to_string("/proc/self/stat").ok()?;
    let rest = &own[own.rfind(')')? + 2..];
    let f: Vec<f64> = rest.split_whitespace().filter_map(|v| v.parse().ok()).collect();
    Some(LoadSample {
        at: Instant::now(),
        busy_s: (cpu.first()? + cpu.get(1)? + cpu.get(2)?) / hz,
        steal_s: cpu.get(7).copied().unwrap_or(0.0) / hz,
        own_s: (f.get(11)? + f.get(12)? + f.get(13)? + f.get(14)?) / hz,
    })
}

impl LoadSample {
    pub fn since(&self, earlier: &LoadSample, cores: usize) -> ForeignLoad {
        let capacity = (self.at - earlier.at).as_secs_f64() * cores.max(1) as f64;
        let other = (self.busy_s - earlier.busy_s) - (self.own_s - earlier.own_s);
        ForeignLoad {
            other: (other / capacity).clamp(0.0, 1.0),
            steal: ((self.steal_s - earlier.steal_s) / capacity).clamp(0.0, 1.0),
        }
    }
}
