//! The example applications under standard load tools: `runtime/examples/http_server.rs` under
//! `wrk` and `runtime/examples/redis_server.rs` under `redis-benchmark`, each beside its tokio
//! twin (`tests/examples/peer_tokio_{http,redis}.rs`: the same source but for its `use` lines,
//! on tokio's current_thread runtime). The two alternate within each run, a fresh server per
//! measurement. The figure that separates runtimes on a two-core machine shared with the load
//! tool is the server's CPU time per request (from the scheduler's per-thread accounting);
//! requests per second are reported too. A tool that is not installed makes its rows n/a: the
//! harness installs nothing (`apt install wrk redis-tools` provides both). hyper's hello world
//! on evloop and on tokio (bench/hyper_apps.rs) joins this section with the same comparison.

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

use crate::procs::{Env, cpu_ns, tail, wait_until};
use crate::table::{Row, Table, col};

/// One side of a comparison: a label, the example binary's name and its arguments after the
/// address.
pub(super) struct Side {
    pub(super) label: &'static str,
    pub(super) bin: &'static str,
    pub(super) is_evloop: bool,
    pub(super) args: &'static [&'static str],
}

const HTTP: [Side; 2] = [
    Side {
        label: "evloop http_server",
        bin: "http_server",
        is_evloop: true,
        args: &[],
    },
    Side {
        label: "tokio current_thread (same code)",
        bin: "peer_tokio_http",
        is_evloop: false,
        args: &[],
    },
];

const REDIS: [Side; 2] = [
    Side {
        label: "evloop redis_server",
        bin: "redis_server",
        is_evloop: true,
        args: &[],
    },
    Side {
        label: "tokio current_thread (same code)",
        bin: "peer_tokio_redis",
        is_evloop: false,
        args: &[],
    },
];

/// A server started as `BIN 127.0.0.1:0`, which prints `listening on ADDR`.
struct AppServer {
    child: Child,
    addr: SocketAddr,
}

impl AppServer {
    fn start(path: &Path, args: &[&str]) -> Result<AppServer, String> {
        let mut child = Command::new(path)
            .arg("127.0.0.1:0")
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| format!("cannot start {}: {e}", path.display()))?;
        let out = child.stdout.take().ok_or("no stdout")?;
        let (tx, rx) = mpsc::channel();
        thread::spawn(move || {
            for line in BufReader::new(out).lines() {
                let Ok(line) = line else { break };
                let _ = tx.send(line);
            }
        });
        match rx.recv_timeout(Duration::from_secs(15)) {
            Ok(line) => match line.trim().strip_prefix("listening on ").map(str::parse) {
                Some(Ok(addr)) => Ok(AppServer { child, addr }),
                _ => {
                    let _ = child.kill();
                    let _ = child.wait();
                    Err(format!("unexpected first line {line:?}"))
                }
            },
            Err(_) => {
                let _ = child.kill();
                let _ = child.wait();
                Err("no 'listening on' line within 15 s".into())
            }
        }
    }

    fn pid(&self) -> u32 {
        self.child.id()
    }
}

impl Drop for AppServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        wait_until(&mut self.child, Instant::now() + Duration::from_secs(2));
    }
}

/// Whether `tool` can be started at all.
fn installed(tool: &str) -> bool {
    Command::new(tool)
        .arg("--help")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok()
}

/// What one load-tool run measured.
struct Measured {
    requests: f64,
    per_sec: f64,
    p50_ms: Option<f64>,
    server_cpu_ns: u64,
}

pub(super) fn run_tool(mut cmd: Command, limit: Duration) -> Result<String, String> {
    let child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot start the load tool: {e}"))?;
    let (tx, rx) = mpsc::channel();
    thread::spawn(move || {
        let _ = tx.send(child.wait_with_output());
    });
    match rx.recv_timeout(limit) {
        Ok(Ok(out)) if out.status.success() => Ok(String::from_utf8_lossy(&out.stdout).into_owned()),
        Ok(Ok(out)) => Err(format!(
            "the load tool failed ({}): {}",
            out.status,
            tail(&String::from_utf8_lossy(&out.stderr), 200)
        )),
        Ok(Err(e)) => Err(format!("the load tool: {e}")),
        Err(_) => Err(format!("the load tool ran past {} s", limit.as_secs())),
    }
}

/// `wrk -t1 -c50 -dS --latency`, parsed: total requests, requests/s, p50.
pub(super) fn wrk(addr: SocketAddr, seconds: f64) -> Result<(f64, f64, Option<f64>), String> {
    let mut cmd = Command::new("wrk");
    cmd.args(["-t1", "-c50", &format!("-d{}s", seconds.ceil() as u64), "--latency"])
        .arg(format!("http://{addr}/"));
    let out = run_tool(cmd, Duration::from_secs(seconds as u64 + 30))?;
    let mut requests = None;
    let mut per_sec = None;
    let mut p50 = None;
    for line in out.lines() {
        let t = line.trim();
        if let Some(v) = t.strip_prefix("Requests/sec:") {
            per_sec = v.trim().parse().ok();
        } else if t.contains(" requests in ") {
            requests = t.split_whitespace().next().and_then(|n| n.parse().ok());
        } else if let Some(v) = t.strip_prefix("50%") {
            p50 = parse_wrk_duration_ms(v.trim());
        }
        if t.starts_with("Non-2xx") || t.starts_with("Socket errors") {
            return Err(format!("wrk reported errors: {t}"));
        }
    }
    match (requests, per_sec) {
        (Some(r), Some(s)) => Ok((r, s, p50)),
        _ => Err(format!("cannot read wrk's output: {}", tail(&out, 200))),
    }
}

fn parse_wrk_duration_ms(v: &str) -> Option<f64> {
    let split = v.find(|c: char| c.is_ascii_alphabetic())?;
    let n: f64 = v[..split].parse().ok()?;
    match &v[split..] {
        "us" => Some(n / 1000.0),
        "ms" => Some(n),
        "s" => Some(n * 1000.0),
        "m" => Some(n * 60_000.0),
        _ => None,
    }
}

/// `redis-benchmark -t set,get -n N -c 50 [-P 16] --csv`, parsed: total requests and the mean
/// of the commands' requests/s.
fn redis_benchmark(addr: SocketAddr, n: usize, pipeline: usize) -> Result<(f64, f64, Option<f64>), String> {
    let mut cmd = Command::new("redis-benchmark");
    cmd.args(["-h", &addr.ip().to_string(), "-p", &addr.port().to_string()])
        .args([
            "-t",
            "set,get",
            "-n",
            &n.to_string(),
            "-c",
            "50",
            "-P",
            &pipeline.to_string(),
            "--csv",
        ]);
    let out = run_tool(cmd, Duration::from_secs(120))?;
    let mut rates = Vec::new();
    let mut p50s = Vec::new();
    for line in out.lines() {
        let fields: Vec<&str> = line.split(',').map(|f| f.trim().trim_matches('"')).collect();
        if fields.len() < 2 || fields[0] == "test" {
            continue;
        }
        if let Ok(rate) = fields[1].parse::<f64>() {
            rates.push(rate);
            // redis-benchmark 7 adds avg, min, p50, ... in ms.
            if let Some(p) = fields.get(4).and_then(|v| v.parse::<f64>().ok()) {
                p50s.push(p);
            }
        }
    }
    if rates.len() != 2 {
        return Err(format!("cannot read redis-benchmark's output: {}", tail(&out, 200)));
    }
    let p50 = (p50s.len() == 2).then(|| (p50s[0] + p50s[1]) / 2.0);
    Ok(((2 * n) as f64, rates.iter().sum::<f64>() / 2.0, p50))
}

fn measure(
    path: &Path,
    args: &[&str],
    load: &dyn Fn(SocketAddr) -> Result<(f64, f64, Option<f64>), String>,
) -> Result<Measured, String> {
    let server = AppServer::start(path, args)?;
    // A short warm-up: connections, allocator, caches.
    let _ = load(server.addr);
    let before = cpu_ns(server.pid()).ok_or("cannot read the server's CPU time")?;
    let (requests, per_sec, p50_ms) = load(server.addr)?;
    let after = cpu_ns(server.pid()).ok_or("cannot read the server's CPU time")?;
    Ok(Measured {
        requests,
        per_sec,
        p50_ms,
        server_cpu_ns: after.saturating_sub(before),
    })
}

pub(super) fn compare(
    env: &Env,
    title: String,
    sides: &[Side; 2],
    tool: &str,
    runs: usize,
    load: &dyn Fn(SocketAddr) -> Result<(f64, f64, Option<f64>), String>,
    note: String,
) -> Table {
    let mut rows: Vec<Row> = sides.iter().map(|s| Row::new(s.label, s.is_evloop)).collect();
    const KEYS: [&str; 3] = ["cpu_us", "rps", "p50"];
    if !installed(tool) {
        for row in rows.iter_mut() {
            for k in KEYS {
                row.cell_mut(k, runs).na = Some(format!("{tool} is not installed (apt install {})", package(tool)));
            }
        }
    } else {
        for run in 0..runs {
            for (side, row) in sides.iter().zip(rows.iter_mut()) {
                let path = env.examples.join(side.bin);
                if !path.exists() {
                    for k in KEYS {
                        row.cell_mut(k, runs).na = Some(format!("{} is not built", path.display()));
                    }
                    continue;
                }
                eprintln!("   {} run {}/{runs}", side.label, run + 1);
                match measure(&path, side.args, load) {
                    Ok(m) => {
                        row.cell_mut("cpu_us", runs).runs[run] =
                            Some(m.server_cpu_ns as f64 / 1e3 / m.requests.max(1.0));
                        row.cell_mut("rps", runs).runs[run] = Some(m.per_sec);
                        row.cell_mut("p50", runs).runs[run] = m.p50_ms;
                    }
                    Err(e) => {
                        for k in KEYS {
                            row.cell_mut(k, runs).failures.push(e.clone());
                        }
                    }
                }
            }
        }
    }
    Table {
        title,
        rows,
        reference: 0,
        columns: vec![
            col("cpu_us", "server CPU µs / request", true),
            col("rps", "requests/s", true),
            col("p50", "latency p50 ms", false),
        ],
        notes: vec![note],
    }
}

fn package(tool: &str) -> &'static str {
    match tool {
        "wrk" => "wrk",
        "h2load" => "nghttp2-client",
        _ => "redis-tools",
    }
}

/// The section: HTTP under wrk, Redis under redis-benchmark (plain and pipelined).
pub fn apps(env: &Env, runs: usize, quick: bool) -> Vec<Table> {
    let seconds = if quick { 1.0 } else { 3.0 };
    let n = if quick { 20_000 } else { 100_000 };
    let mut tables = Vec::new();
    eprintln!("-- http_server under wrk");
    tables.push(compare(
        env,
        "HTTP/1.1 keep-alive server under wrk (50 connections)".into(),
        &HTTP,
        "wrk",
        runs,
        &|addr| wrk(addr, seconds),
        format!(
            "`wrk -t1 -c50 -d{}s --latency http://ADDR/` against `http_server` and `peer_tokio_http` (the same code), \
             {runs} runs, alternating, after a warm-up run of the same length; CPU = the server process's scheduler time \
             during the measured run / requests.",
            seconds as u64
        ),
    ));
    for pipeline in [1, 16] {
        eprintln!("-- redis_server under redis-benchmark -P {pipeline}");
        tables.push(compare(
            env,
            format!("Redis-protocol server under redis-benchmark (SET and GET, 50 connections, pipeline {pipeline})"),
            &REDIS,
            "redis-benchmark",
            runs,
            &move |addr| redis_benchmark(addr, n, pipeline),
            format!(
                "`redis-benchmark -t set,get -n {n} -c 50 -P {pipeline} --csv` against `redis_server` and \
                 `peer_tokio_redis` (the same code), {runs} runs, alternating, after a warm-up run; requests/s is the \
                 mean of SET's and GET's; CPU per request over both."
            ),
        ));
    }
    tables.extend(super::hyper_apps::hyper(env, runs, quick));
    tables
}
