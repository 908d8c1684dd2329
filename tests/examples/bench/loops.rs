//! The multi-loop runtime (issue 20): a CPU-bound HTTP handler (about 200 us of work per
//! request) under `wrk` on 1 and 2 evloop loops, beside tokio's multi-thread runtime with 2
//! workers and 2 tokio current-thread runtimes on `SO_REUSEPORT` (all in
//! `tests/examples/peer_loops.rs`), alternating within each run; and the imbalance between
//! loops under 10,000 short connections for each listening policy. Writes a Markdown section
//! (`docs/benchmarks.md`, and `docs/12-thread-per-core.md` quotes it).

use std::fmt::Write as _;
use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::procs::{Env, cpu_ns, tail};
use crate::table::median;

/// One server of the scaling table: its label and `peer_loops` arguments.
const SIDES: [(&str, &[&str]); 6] = [
    ("evloop, 1 loop", &["evloop", "1", "least"]),
    ("evloop, 2 loops, least connections", &["evloop", "2", "least"]),
    ("evloop, 2 loops, SO_REUSEPORT", &["evloop", "2", "reuseport"]),
    ("evloop, 2 loops, SO_REUSEPORT + CPU BPF", &["evloop", "2", "cpu"]),
    ("tokio multi-thread, 2 workers", &["tokio-mt", "2"]),
    ("2 x tokio current-thread, SO_REUSEPORT", &["tokio-ct", "2"]),
];

/// Requests per write in the scaling table (HTTP/1.1 pipelining through a wrk script) and
/// connections. Answering one request per wake cost wrk about 20 us of CPU a request (its
/// `epoll_wait`, `read`, `write` and `epoll_ctl`, a context switch, and on loopback the
/// delivery of each request into the server's socket, which runs in the sender's system call):
/// 7% to 10% of the two cores beside a 200 us handler. Four requests per write, answered by
/// one write (`peer_loops`' `answer`), cut that to about 6 us a request, under 5%; 16
/// connections keep 32 requests queued per loop, so every loop stays busy.
const PIPELINE: usize = 4;
const CONNS: usize = 16;

/// The wrk script that sends `PIPELINE` requests per write (wrk counts the requests in the
/// buffer and reads that many responses before it writes again); written once to a temp file.
fn pipeline_script() -> Result<std::path::PathBuf, String> {
    let path = std::env::temp_dir().join(format!("evloop-bench-pipeline-{}.lua", std::process::id()));
    let script = format!(
        "-- {PIPELINE} pipelined requests per write (tests/examples/bench/loops.rs)\n\
         init = function(args)\n  local r = {{}}\n  for i = 1, {PIPELINE} do r[i] = wrk.format(nil, \"/\") end\n  \
         req = table.concat(r)\nend\nrequest = function() return req end\n"
    );
    std::fs::write(&path, script).map_err(|e| format!("{}: {e}", path.display()))?;
    Ok(path)
}

/// One measurement: requests/s, the server's CPU per request (us), the load client's share of
/// the machine's CPU.
struct Sample {
    rps: f64,
    server_us: f64,
    client_share: f64,
}

fn measure(env: &Env, args: &[&str], seconds: u64, script: &std::path::Path, blocks: &str) -> Result<Sample, String> {
    let mut server = Command::new(env.examples.join("peer_loops"))
        .args(args)
        .env("EVLOOP_WORK_BLOCKS", blocks)
        .arg("127.0.0.1:0")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| format!("peer_loops: {e}"))?;
    let mut line = String::new();
    let stdout = server.stdout.take().ok_or("no stdout")?;
    BufReader::new(stdout).read_line(&mut line).map_err(|e| e.to_string())?;
    let addr: SocketAddr = match line.trim().strip_prefix("listening on ").map(str::parse) {
        Some(Ok(a)) => a,
        _ => {
            let _ = server.kill();
            let _ = server.wait();
            return Err(format!("peer_loops did not listen: {}", tail(&line, 100)));
        }
    };
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get()) as f64;
    let server_before = cpu_ns(server.id()).unwrap_or(0);
    let started = Instant::now();
    let mut wrk = Command::new("wrk")
        .args(["-t1", &format!("-c{CONNS}"), &format!("-d{seconds}s"), "-s"])
        .arg(script)
        .arg(format!("http://{addr}/"))
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| format!("wrk: {e}"))?;
    // The client's CPU: its last sample before it exits (sampled every 20 ms).
    let mut client_ns = 0;
    let out = loop {
        if let Some(ns) = cpu_ns(wrk.id()) {
            client_ns = client_ns.max(ns);
        }
        match wrk.try_wait() {
            Ok(Some(_)) => break wrk.wait_with_output().map_err(|e| e.to_string())?,
            Ok(None) if started.elapsed() < Duration::from_secs(seconds + 30) => {
                std::thread::sleep(Duration::from_millis(20))
            }
            _ => {
                let _ = wrk.kill();
                let _ = server.kill();
                let _ = server.wait();
                return Err("wrk ran too long".into());
            }
        }
    };
    let wall = started.elapsed().as_secs_f64();
    let server_ns = cpu_ns(server.id()).unwrap_or(0).saturating_sub(server_before);
    let _ = server.kill();
    let _ = server.wait();
    let text = String::from_utf8_lossy(&out.stdout);
    let mut rps = None;
    let mut requests = None;
    for l in text.lines() {
        let t = l.trim();
        if let Some(v) = t.strip_prefix("Requests/sec:") {
            rps = v.trim().parse::<f64>().ok();
        } else if t.contains(" requests in ") {
            requests = t.split_whitespace().next().and_then(|n| n.parse::<f64>().ok());
        } else if t.starts_with("Non-2xx") || t.starts_with("Socket errors") {
            return Err(format!("wrk reported errors: {t}"));
        }
    }
    match (rps, requests) {
        (Some(rps), Some(n)) if n > 0.0 => Ok(Sample {
            rps,
            server_us: server_ns as f64 / 1e3 / n,
            client_share: client_ns as f64 / 1e9 / wall / cores,
        }),
        _ => Err(format!("cannot read wrk's output: {}", tail(&text, 200))),
    }
}

/// The scaling table.
fn scaling(env: &Env, runs: usize, seconds: u64, w: &mut String) {
    let script = match pipeline_script() {
        Ok(p) => p,
        Err(e) => {
            let _ = writeln!(w, "CPU-bound HTTP rows: n/a (cannot write wrk's script: {e}).\n");
            return;
        }
    };
    // The handler's work, measured once and given to every server: the same work per request
    // for all (each process measuring its own varied by a few percent from start to start).
    let blocks = Command::new(env.examples.join("peer_loops"))
        .arg("calibrate")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_default();
    let mut samples: Vec<Vec<Sample>> = SIDES.iter().map(|_| Vec::new()).collect();
    let mut errors = Vec::new();
    for run in 0..runs {
        // Alternating: every side once per run, the order rotated from run to run.
        for k in 0..SIDES.len() {
            let i = (k + run) % SIDES.len();
            eprintln!("-- loops: {} (run {})", SIDES[i].0, run + 1);
            match measure(env, SIDES[i].1, seconds, &script, &blocks) {
                Ok(s) => samples[i].push(s),
                Err(e) => errors.push(format!("{}: {e}", SIDES[i].0)),
            }
        }
    }
    let med = |i: usize, f: fn(&Sample) -> f64| median(samples[i].iter().map(f).collect());
    let base = med(0, |s| s.rps);
    let tokio_mt = med(4, |s| s.rps);
    let _ = writeln!(
        w,
        "### CPU-bound HTTP handler (about 200 us of work per request) under wrk\n\n\
         | server | requests/s (median of {runs}) | over evloop 1 loop | over tokio multi-thread | server CPU / request | wrk's share of the CPU |\n\
         |---|---|---|---|---|---|"
    );
    for (i, (label, _)) in SIDES.iter().enumerate() {
        let rps = med(i, |s| s.rps);
        let fmt = |v: Option<f64>, d: Option<f64>| match (v, d) {
            (Some(v), Some(d)) if d > 0.0 => format!("{:.2}x", v / d),
            _ => "n/a".into(),
        };
        let _ = writeln!(
            w,
            "| {label} | {} | {} | {} | {} | {} |",
            rps.map_or("n/a".into(), |v| format!("{v:.0}")),
            fmt(rps, base),
            fmt(rps, tokio_mt),
            med(i, |s| s.server_us).map_or("n/a".into(), |v| format!("{v:.0} us")),
            med(i, |s| s.client_share).map_or("n/a".into(), |v| format!("{:.1}%", v * 100.0)),
        );
    }
    let _ = writeln!(
        w,
        "\n`wrk -t1 -c{CONNS} -d{seconds}s` with {PIPELINE} pipelined requests per write (a wrk script) against \
         `peer_loops` (tests/examples/peer_loops.rs), {runs} runs, every server once per run in rotated order; the \
         ratios are of the medians; every server does the same work per request ({blocks} blocks, calibrated \
         once by `peer_loops calibrate`). Every server answers a pipelined batch with one write after the batch's work \
         (about 200 us a request); one request per write cost wrk about 20 us of CPU a request, 7% to 10% of the \
         machine. The CPU BPF row pins its loops."
    );
    let _ = std::fs::remove_file(&script);
    for e in errors {
        let _ = writeln!(w, "\n- failed: {e}");
    }
    let _ = writeln!(w);
}

/// The imbalance table: `peer_loops imbalance 2 POLICY 10000` per policy.
fn imbalance(env: &Env, runs: usize, conns: usize, w: &mut String) {
    let _ = writeln!(
        w,
        "### Imbalance under {conns} short connections, 2 loops\n\n\
         | policy | accepted per loop (last run) | accepted busiest/idlest (median of {runs}) | busy time busiest/idlest (median) | CPU time busiest/idlest (median) |\n\
         |---|---|---|---|---|"
    );
    const POLICIES: [(&str, &str); 3] = [
        ("SO_REUSEPORT (kernel hash)", "reuseport"),
        ("SO_REUSEPORT + CPU BPF (pinned loops)", "cpu"),
        ("least connections (one acceptor)", "least"),
    ];
    // Per policy: accepted, busy and CPU ratios, and the last run's accepted per loop.
    let mut acc: [Vec<f64>; 3] = Default::default();
    let mut busy: [Vec<f64>; 3] = Default::default();
    let mut cpu: [Vec<f64>; 3] = Default::default();
    let mut last: [String; 3] = std::array::from_fn(|_| String::from("n/a"));
    // Alternating: every policy once per run, so that other load on the machine falls on all.
    for _ in 0..runs {
        for (p, (_, pol)) in POLICIES.iter().enumerate() {
            let out = Command::new(env.examples.join("peer_loops"))
                .args(["imbalance", "2", pol, &conns.to_string()])
                .output();
            let Ok(out) = out else { continue };
            let text = String::from_utf8_lossy(&out.stdout).to_string();
            let field = |k: &str| {
                text.split_whitespace()
                    .find_map(|f| f.strip_prefix(k))
                    .map(str::to_string)
            };
            let ratio = |k: &str| field(k).and_then(|v| v.parse::<f64>().ok());
            if let Some(a) = field("accepted=") {
                last[p] = a;
            }
            acc[p].extend(ratio("accepted_imbalance="));
            busy[p].extend(ratio("busy_imbalance="));
            cpu[p].extend(ratio("cpu_imbalance="));
        }
    }
    let f = |v: Option<f64>| v.map_or("n/a".into(), |v| format!("{v:.3}"));
    for (p, (label, _)) in POLICIES.iter().enumerate() {
        let _ = writeln!(
            w,
            "| {label} | {} | {} | {} | {} |",
            last[p],
            f(median(std::mem::take(&mut acc[p]))),
            f(median(std::mem::take(&mut busy[p]))),
            f(median(std::mem::take(&mut cpu[p]))),
        );
    }
    let _ = writeln!(
        w,
        "\nEach connection: connect, one byte each way with about 200 us of work, close; 4 client threads on \
         loopback; `peer_loops imbalance 2 POLICY {conns}`, {runs} runs, the policies alternating within each run. \
         Busy time is the loops' own measure (wall time of their iterations less the poll's wait: it grows while \
         a loop's thread is preempted); CPU time is each loop thread's from `/proc/self/task/TID/schedstat`.\n"
    );
}

/// The section, as Markdown.
pub fn run(env: &Env, runs: usize, quick: bool) -> String {
    let mut w = String::new();
    let _ = writeln!(w, "## 8. Thread-per-core: several loops (evloop::runtime)\n");
    let conns = if quick { 2_000 } else { 10_000 };
    imbalance(env, runs, conns, &mut w);
    if Command::new("wrk").arg("--version").output().is_err() {
        let _ = writeln!(
            w,
            "CPU-bound HTTP rows: n/a (wrk is not installed: `apt-get install -y wrk`).\n"
        );
    } else {
        scaling(env, runs, if quick { 1 } else { 3 }, &mut w);
    }
    w
}
