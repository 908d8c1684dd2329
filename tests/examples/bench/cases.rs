//! The cases: echo under load, the peers' in-process subcommands, memory per idle connection, and
//! syscalls per echo round trip under strace. Every measured case alternates the runtimes within
//! each run (A B C ... A B C ...), so slow drifts of a shared, noisy machine hit all of them alike.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

use crate::json::Value;
use crate::procs::{
    EchoServer, Env, PeerOut, Runtime, StartError, cpu_ns, run_load, run_peer, tail, vm_rss_kib, wait_until,
};
use crate::table::{Row, Table, col, fmt_num};

fn start_reason(e: StartError) -> String {
    match e {
        StartError::Na(r) => r,
        StartError::Failed(r) => format!("the server failed to start: {r}"),
    }
}

fn rows_for(runtimes: &[Runtime]) -> Vec<Row> {
    runtimes.iter().map(|r| Row::new(r.label, r.is_evloop())).collect()
}

fn mark_na(row: &mut Row, keys: &[&'static str], runs: usize, reason: &str) {
    for k in keys {
        let c = row.cell_mut(k, runs);
        if c.na.is_none() {
            c.na = Some(reason.to_string());
        }
    }
}

fn mark_failed(row: &mut Row, keys: &[&'static str], runs: usize, reason: &str) {
    for k in keys {
        row.cell_mut(k, runs).failures.push(reason.to_string());
    }
}

fn is_na(row: &Row, key: &str) -> bool {
    row.cells.get(key).is_some_and(|c| c.na.is_some())
}

#[derive(Clone, Copy, Debug)]
pub struct EchoConfig {
    pub size: usize,
    pub conns: usize,
    pub seconds: f64,
    /// Requests per write (`echo_load --pipeline`); figures are then per request.
    pub pipeline: usize,
}

impl EchoConfig {
    pub fn name(&self) -> String {
        let pipelined = if self.pipeline > 1 {
            format!(", {} requests per write", self.pipeline)
        } else {
            String::new()
        };
        format!(
            "{}, {} connection{}{pipelined}",
            fmt_size(self.size),
            self.conns,
            if self.conns == 1 { "" } else { "s" }
        )
    }

    pub fn slug(&self) -> String {
        format!(
            "echo-{}-c{}",
            fmt_size(self.size).replace(' ', "").to_lowercase(),
            self.conns
        )
    }
}

pub fn fmt_size(size: usize) -> String {
    if size >= 1024 && size % 1024 == 0 {
        format!("{} KiB", size / 1024)
    } else {
        format!("{size} B")
    }
}

const ECHO_KEYS: [&str; 4] = ["per_sec", "p50_us", "p99_us", "cpu_us"];

/// TCP echo, one server process per runtime, started once for the configuration; each run drives
/// every server in turn with `echo_load` and samples the server's CPU time right around it.
pub fn echo(env: &Env, runtimes: &[Runtime], cfg: EchoConfig, runs: usize, warmup_s: f64) -> Table {
    let mut rows = rows_for(runtimes);
    let mut servers: Vec<Option<EchoServer>> = Vec::new();
    for (i, rt) in runtimes.iter().enumerate() {
        match EchoServer::start(env, rt) {
            Ok(s) => servers.push(Some(s)),
            Err(e) => {
                let why = start_reason(e);
                eprintln!("  {}: n/a: {why}", rt.label);
                mark_na(&mut rows[i], &ECHO_KEYS, runs, &why);
                servers.push(None);
            }
        }
    }
    if warmup_s > 0.0 {
        for srv in servers.iter().flatten() {
            let _ = run_load(env, srv.addr, cfg.conns, cfg.size, cfg.pipeline, warmup_s);
        }
    }
    for run in 0..runs {
        let mut line = format!("  run {}/{runs}:", run + 1);
        for (i, slot) in servers.iter_mut().enumerate() {
            let Some(srv) = slot else { continue };
            if let Some(why) = srv.exited() {
                mark_failed(&mut rows[i], &ECHO_KEYS, runs, &why);
                continue;
            }
            let pid = srv.pid();
            let before = cpu_ns(pid);
            let result = run_load(env, srv.addr, cfg.conns, cfg.size, cfg.pipeline, cfg.seconds);
            let after = cpu_ns(pid);
            match result {
                Ok(l) if l.round_trips > 0.0 => {
                    let row = &mut rows[i];
                    row.cell_mut("per_sec", runs).runs[run] = Some(l.per_sec);
                    row.cell_mut("p50_us", runs).runs[run] = Some(l.p50_us);
                    row.cell_mut("p99_us", runs).runs[run] = Some(l.p99_us);
                    let cpu = match (before, after) {
                        (Some(b), Some(a)) => Some(a.saturating_sub(b) as f64 / 1e3 / l.round_trips),
                        _ => None,
                    };
                    row.cell_mut("cpu_us", runs).runs[run] = cpu;
                    line.push_str(&format!(" {} {:.0}/s", runtimes[i].label, l.per_sec));
                }
                Ok(_) => mark_failed(&mut rows[i], &ECHO_KEYS, runs, "no round trip completed"),
                Err(e) => {
                    let e = match srv.exited() {
                        Some(why) => format!("{e}; {why}"),
                        None => e,
                    };
                    eprintln!("  {}: {e}", runtimes[i].label);
                    mark_failed(&mut rows[i], &ECHO_KEYS, runs, &e);
                }
            }
        }
        eprintln!("{line}");
    }
    for srv in servers.into_iter().flatten() {
        srv.stop();
    }
    let pipeline = if cfg.pipeline > 1 {
        format!(" --pipeline {}", cfg.pipeline)
    } else {
        String::new()
    };
    let mut notes = vec![format!(
        "{} s per run, {runs} runs per runtime, alternating; `echo_load --conns {} --size {}{pipeline} --plain`.",
        cfg.seconds, cfg.conns, cfg.size
    )];
    if cfg.pipeline > 1 {
        notes.push(format!(
            "Each write carries {} requests; \"round trips\" and the CPU figure count requests.",
            cfg.pipeline
        ));
    }
    let noisy: Vec<String> = rows
        .iter()
        .filter_map(|r| {
            let s = r.cells.get("per_sec")?.summary()?;
            (s.min > 0.0 && s.max / s.min > 1.5).then(|| format!("{} {:.1}x", r.label, s.max / s.min))
        })
        .collect();
    if !noisy.is_empty() {
        notes.push(format!(
            "Noisy: the fastest run was more than 1.5x the slowest for {} (the shared host; compare medians, and \
             ratios run by run).",
            noisy.join(", ")
        ));
    }
    Table {
        title: format!("TCP echo, {}", cfg.name()),
        rows,
        reference: 0,
        columns: vec![
            col("per_sec", "round trips/s", true),
            col("p50_us", "p50 µs", false),
            col("p99_us", "p99 µs", false),
            col("cpu_us", "server CPU µs / round trip", true),
        ],
        notes,
    }
}

/// A value a subcommand prints: table key, JSON key, a factor applied to it, and whether the
/// per-runtime factor of [`alternate_with`] applies too (a time measured on fewer items).
#[derive(Clone, Copy)]
pub struct Metric {
    pub key: &'static str,
    pub json: &'static str,
    pub scale: f64,
    pub by_n: bool,
}

pub const fn metric(key: &'static str, json: &'static str, scale: f64) -> Metric {
    Metric {
        key,
        json,
        scale,
        by_n: false,
    }
}

/// Runs `args` on every runtime, `runs` times, alternating, storing `metrics` into `rows`.
pub fn alternate(
    env: &Env,
    runtimes: &[Runtime],
    rows: &mut [Row],
    args: &[String],
    metrics: &[Metric],
    runs: usize,
    limit: Duration,
) {
    alternate_with(env, runtimes, rows, &|_| (args.to_vec(), 1.0), metrics, runs, limit);
}

/// [`alternate`] with arguments per runtime: `args_for` returns them and a factor that multiplies
/// the metrics marked `by_n` (a runtime run on N/10 items reports its time times 10).
pub fn alternate_with(
    env: &Env,
    runtimes: &[Runtime],
    rows: &mut [Row],
    args_for: &dyn Fn(&Runtime) -> (Vec<String>, f64),
    metrics: &[Metric],
    runs: usize,
    limit: Duration,
) {
    let keys: Vec<&'static str> = metrics.iter().map(|m| m.key).collect();
    for row in rows.iter_mut() {
        for k in &keys {
            row.cell_mut(k, runs);
        }
    }
    for run in 0..runs {
        let started = Instant::now();
        for (i, rt) in runtimes.iter().enumerate() {
            if is_na(&rows[i], keys[0]) {
                continue;
            }
            let (args, factor) = args_for(rt);
            match run_peer(env, rt, &args, limit) {
                PeerOut::Json(obj) => {
                    for m in metrics {
                        let cell = rows[i].cell_mut(m.key, runs);
                        let f = if m.by_n { factor } else { 1.0 };
                        match obj.get(m.json) {
                            Some(Value::Num(v)) => cell.runs[run] = Some(v * m.scale * f),
                            Some(Value::Null) => {} // the runtime has no such figure (a Python future's size)
                            _ => cell.failures.push(format!("no {:?} in {}", m.json, obj.to_json())),
                        }
                    }
                }
                PeerOut::Na(why) => {
                    eprintln!("  {} {}: n/a: {why}", rt.label, args.join(" "));
                    mark_na(&mut rows[i], &keys, runs, &why);
                }
                PeerOut::Failed(why) => {
                    eprintln!("  {} {}: failed: {why}", rt.label, args.join(" "));
                    mark_failed(&mut rows[i], &keys, runs, &why);
                }
            }
        }
        eprintln!(
            "  {} run {}/{runs} ({:.1} s)",
            runtimes.first().map_or(String::new(), |rt| args_for(rt).0.join(" ")),
            run + 1,
            started.elapsed().as_secs_f64()
        );
    }
}

/// Server RSS growth per idle connection: start the server, read VmRSS, open `n` connections (one
/// byte echoed on each so the server really holds it), read VmRSS again.
fn conn_memory_once(env: &Env, rt: &Runtime, n: usize) -> Result<f64, (bool, String)> {
    let srv = EchoServer::start(env, rt).map_err(|e| match e {
        StartError::Na(r) => (true, r),
        StartError::Failed(r) => (false, format!("the server failed to start: {r}")),
    })?;
    let pid = srv.pid();
    thread::sleep(Duration::from_millis(100));
    let before = vm_rss_kib(pid).ok_or((false, "cannot read VmRSS".to_string()))?;
    let mut conns = Vec::with_capacity(n);
    for i in 0..n {
        let one = || -> std::io::Result<TcpStream> {
            let mut s = TcpStream::connect_timeout(&srv.addr, Duration::from_secs(5))?;
            s.set_read_timeout(Some(Duration::from_secs(5)))?;
            s.set_nodelay(true)?;
            s.write_all(b"x")?;
            let mut b = [0u8; 1];
            s.read_exact(&mut b)?;
            Ok(s)
        };
        match one() {
            Ok(s) => conns.push(s),
            Err(e) => return Err((false, format!("connection {i}: {e}"))),
        }
    }
    thread::sleep(Duration::from_millis(100));
    let after = vm_rss_kib(pid).ok_or((false, "cannot read VmRSS".to_string()))?;
    drop(conns);
    srv.stop();
    Ok((after as f64 - before as f64) * 1024.0 / n as f64)
}

pub fn conn_memory(env: &Env, runtimes: &[Runtime], n: usize, runs: usize) -> Table {
    let mut rows = rows_for(runtimes);
    let keys = ["bytes_per_conn"];
    for row in rows.iter_mut() {
        row.cell_mut("bytes_per_conn", runs);
    }
    let need = n as u64 + 256;
    let limit = evloop_syscalls::nofile_limit().map(|(soft, _)| soft).unwrap_or(0);
    let mut notes = vec![format!(
        "{} connections per run from the harness (std::net::TcpStream, one byte echoed on each), \
         VmRSS of the server from /proc/PID/status before and after; {runs} runs per runtime, alternating, \
         a fresh server each run. Servers that read into a buffer of their own per connection (64 KiB here) show it \
         in this figure; evloop's protocol and streams paths and the raw loop read into one buffer per loop.",
        fmt_num(n as f64)
    )];
    if limit < need {
        let why = format!("RLIMIT_NOFILE is {limit}, {n} connections need about {need}");
        for row in rows.iter_mut() {
            mark_na(row, &keys, runs, &why);
        }
        notes.push(why);
    } else {
        for run in 0..runs {
            let started = Instant::now();
            for (i, rt) in runtimes.iter().enumerate() {
                if is_na(&rows[i], keys[0]) {
                    continue;
                }
                match conn_memory_once(env, rt, n) {
                    Ok(v) => rows[i].cell_mut("bytes_per_conn", runs).runs[run] = Some(v),
                    Err((true, why)) => mark_na(&mut rows[i], &keys, runs, &why),
                    Err((false, why)) => {
                        eprintln!("  {}: {why}", rt.label);
                        mark_failed(&mut rows[i], &keys, runs, &why);
                    }
                }
            }
            eprintln!(
                "  idle connections run {}/{runs} ({:.1} s)",
                run + 1,
                started.elapsed().as_secs_f64()
            );
        }
    }
    Table {
        title: format!(
            "Server memory per idle TCP connection ({} connections)",
            fmt_num(n as f64)
        ),
        rows,
        reference: 0,
        columns: vec![col("bytes_per_conn", "RSS bytes / connection", true)],
        notes,
    }
}

/// Syscall groups of an echo round trip (strace's names).
pub const SYSCALL_GROUPS: [(&str, &str, &[&str]); 4] = [
    ("sc_poll", "epoll_wait", &["epoll_wait", "epoll_pwait", "epoll_pwait2"]),
    ("sc_ctl", "epoll_ctl", &["epoll_ctl"]),
    ("sc_read", "read", &["read", "recvfrom", "recv", "recvmsg", "readv"]),
    ("sc_write", "write", &["write", "sendto", "send", "writev", "sendmsg"]),
];

/// Parses the summary table of `strace -c`: syscall name -> calls.
pub fn parse_strace_summary(text: &str) -> BTreeMap<String, u64> {
    let mut out = BTreeMap::new();
    let mut in_table = false;
    for line in text.lines() {
        if line.starts_with("% time") {
            in_table = true;
            continue;
        }
        if !in_table || line.starts_with("---") {
            continue;
        }
        let f: Vec<&str> = line.split_whitespace().collect();
        if f.len() < 5 {
            continue;
        }
        let name = f[f.len() - 1];
        if name == "total" {
            continue;
        }
        if let Ok(calls) = f[3].parse::<u64>() {
            *out.entry(name.to_string()).or_insert(0) += calls;
        }
    }
    out
}

/// One echo server under `strace -f -c -p PID` for a short client run: calls per syscall name,
/// and the client's round trips.
fn strace_once(
    env: &Env,
    rt: &Runtime,
    conns: usize,
    seconds: f64,
) -> Result<(BTreeMap<String, u64>, f64), (bool, String)> {
    let srv = EchoServer::start(env, rt).map_err(|e| match e {
        StartError::Na(r) => (true, r),
        StartError::Failed(r) => (false, format!("the server failed to start: {r}")),
    })?;
    let file = std::env::temp_dir().join(format!("evloop-bench-strace-{}-{}.txt", std::process::id(), srv.pid()));
    let mut st = Command::new("strace")
        .arg("-f")
        .arg("-c")
        .arg("-o")
        .arg(&file)
        .arg("-p")
        .arg(srv.pid().to_string())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| (true, format!("cannot run strace: {e}")))?;
    let (tx, rx) = mpsc::channel::<String>();
    let err = st.stderr.take().expect("piped stderr");
    thread::spawn(move || {
        for line in BufReader::new(err).lines() {
            let Ok(line) = line else { break };
            let _ = tx.send(line);
        }
    });
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut seen = String::new();
    let attached = loop {
        match rx.recv_timeout(Duration::from_millis(50)) {
            Ok(line) => {
                if line.contains("attached") {
                    break true;
                }
                seen.push_str(&line);
                seen.push('\n');
            }
            Err(mpsc::RecvTimeoutError::Timeout) => {
                if let Ok(Some(_)) = st.try_wait() {
                    break false;
                }
                if Instant::now() > deadline {
                    break false;
                }
            }
            Err(mpsc::RecvTimeoutError::Disconnected) => break false,
        }
    };
    if !attached {
        let _ = st.kill();
        let _ = st.wait();
        thread::sleep(Duration::from_millis(50));
        while let Ok(l) = rx.try_recv() {
            seen.push_str(&l);
            seen.push('\n');
        }
        return Err((true, format!("strace could not attach: {}", tail(&seen, 200))));
    }
    thread::sleep(Duration::from_millis(200));
    let load = run_load(env, srv.addr, conns, 64, 1, seconds);
    srv.stop(); // strace exits with its tracee and writes the summary
    let status = wait_until(&mut st, Instant::now() + Duration::from_secs(15));
    let text = std::fs::read_to_string(&file).unwrap_or_default();
    let _ = std::fs::remove_file(&file);
    let load = load.map_err(|e| (false, e))?;
    if status.is_none() {
        return Err((false, "strace did not exit after the server".into()));
    }
    let counts = parse_strace_summary(&text);
    if counts.is_empty() {
        return Err((false, format!("no strace summary: {}", tail(&text, 200))));
    }
    Ok((counts, load.round_trips))
}

pub fn syscalls(env: &Env, runtimes: &[Runtime], seconds: f64) -> Table {
    let conns = 50;
    let mut rows = rows_for(runtimes);
    let keys: Vec<&'static str> = SYSCALL_GROUPS
        .iter()
        .map(|g| g.0)
        .chain(["sc_other", "sc_total", "round_trips", "ctl_per_conn"])
        .collect();
    let mut notes = vec![format!(
        "Each server attached with `strace -f -c -p PID` while `echo_load --conns {conns} --size 64 --plain` runs for {seconds} s; \
         calls counted from the attach to the server's exit (the accepts, the round trips, the closes), divided by the \
         client's round trips; \"epoll_ctl per connection\" divides the same epoll_ctl count by the {conns} connections \
         instead (registering a socket and removing it are two per connection: none in the steady state). One run per runtime (counts vary little). strace slows every server \
         several-fold, so each epoll_wait returns more events than without it: its per-round-trip figure here is a \
         lower bound. \
         read = read/recvfrom/recv/recvmsg/readv, write = write/sendto/send/writev/sendmsg, epoll_wait = epoll_wait/epoll_pwait/epoll_pwait2."
    )];
    let mut strace_missing: Option<String> = None;
    if Command::new("strace")
        .arg("-V")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_err()
    {
        strace_missing = Some("strace is not installed".into());
    }
    for (i, rt) in runtimes.iter().enumerate() {
        if let Some(why) = &strace_missing {
            mark_na(&mut rows[i], &keys, 1, why);
            continue;
        }
        let started = Instant::now();
        match strace_once(env, rt, conns, seconds) {
            Ok((counts, trips)) => {
                let per = |n: u64| n as f64 / trips;
                let mut grouped = 0u64;
                let row = &mut rows[i];
                for (key, _, names) in SYSCALL_GROUPS {
                    let n: u64 = names.iter().filter_map(|n| counts.get(*n)).sum();
                    grouped += n;
                    row.cell_mut(key, 1).runs[0] = Some(per(n));
                }
                let total: u64 = counts.values().sum();
                row.cell_mut("sc_other", 1).runs[0] = Some(per(total - grouped));
                row.cell_mut("sc_total", 1).runs[0] = Some(per(total));
                row.cell_mut("round_trips", 1).runs[0] = Some(trips);
                let ctl: u64 = counts.get("epoll_ctl").copied().unwrap_or(0);
                row.cell_mut("ctl_per_conn", 1).runs[0] = Some(ctl as f64 / conns as f64);
                let mut others: Vec<(&String, &u64)> = counts
                    .iter()
                    .filter(|(name, _)| !SYSCALL_GROUPS.iter().any(|g| g.2.contains(&name.as_str())))
                    .collect();
                others.sort_by(|a, b| b.1.cmp(a.1));
                if !others.is_empty() {
                    let list: Vec<String> = others
                        .iter()
                        .take(4)
                        .map(|(name, n)| format!("{name} {}", fmt_num(per(**n))))
                        .collect();
                    notes.push(format!("{}: other = {}", rt.label, list.join(", ")));
                }
                eprintln!(
                    "  {}: {} round trips under strace ({:.1} s)",
                    rt.label,
                    trips,
                    started.elapsed().as_secs_f64()
                );
            }
            Err((true, why)) => {
                eprintln!("  {}: n/a: {why}", rt.label);
                if why.starts_with("cannot run strace") || why.starts_with("strace could not attach") {
                    strace_missing = Some(why.clone());
                }
                mark_na(&mut rows[i], &keys, 1, &why);
            }
            Err((false, why)) => {
                eprintln!("  {}: {why}", rt.label);
                mark_failed(&mut rows[i], &keys, 1, &why);
            }
        }
    }
    let mut columns: Vec<_> = SYSCALL_GROUPS.iter().map(|g| col(g.0, g.1, false)).collect();
    columns.push(col("ctl_per_conn", "epoll_ctl per connection", false));
    columns.push(col("sc_other", "other", false));
    columns.push(col("sc_total", "total", true));
    Table {
        title: "Syscalls per echo round trip (64 B, 50 connections)".into(),
        rows,
        reference: 0,
        columns,
        notes,
    }
}
