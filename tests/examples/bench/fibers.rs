//! The fibers section of `make bench` (`--only fibers`): evloop's fibers beside greenlet
//! (`tests/bench/peer_greenlet.py`, run by the bench venv's python) and beside evloop's own
//! tasks, in one run, alternating:
//!
//! - switch cost: a ping-pong of two fibers (`peer_fiber switch`) against the same ping-pong of
//!   two greenlets, against the register switch alone under it (`peer_fiber raw_switch`), and
//!   against the hand-off between two evloop tasks (a wake and a poll: `peer_fiber task_wake`,
//!   with one pair of tasks and with 64);
//! - memory per suspended fiber: RSS growth over N fibers (greenlets) each started and
//!   suspended, with N = 100,000 in the full run (which is also the "100,000 suspended fibers in
//!   one process" target);
//! - the blocking-style echo server on fibers against the same server with a task per
//!   connection (`peer_fiber echo --variant fiber|task`), server CPU per round trip under the
//!   shared load client.

use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

use crate::Plan;
use crate::cases::{self, EchoConfig};
use crate::json;
use crate::procs::{Env, Peer, Runtime, run_captured, tail};
use crate::table::{Row, Table, col, fmt_num, fmt_ratio, pair_ratios};

/// The tables of the section (each `None` when it did not run).
#[derive(Default)]
pub struct FiberResults {
    pub switch: Option<Table>,
    pub memory: Option<Table>,
    pub echo: Option<Table>,
    /// N of the suspended case.
    pub suspended_n: usize,
}

impl FiberResults {
    pub fn tables(&self) -> Vec<&Table> {
        [&self.switch, &self.memory, &self.echo].into_iter().flatten().collect()
    }
}

/// One program of the section: a `peer_fiber` subcommand or a `peer_greenlet.py` one.
#[derive(Clone, Copy)]
enum Prog {
    Fiber(&'static [&'static str]),
    Greenlet(&'static [&'static str]),
}

struct Entrant {
    label: &'static str,
    is_evloop: bool,
    prog: Prog,
    /// Its `--n`.
    n: usize,
}

const FIBER: &str = "evloop Fiber::switch";
const GREENLET: &str = "greenlet";

fn command(env: &Env, prog: Prog, n: usize) -> Result<Command, String> {
    let (mut cmd, args) = match prog {
        Prog::Fiber(args) => {
            let path = env.examples.join("peer_fiber");
            if !path.exists() {
                return Err(format!(
                    "{} is not built (cargo build --release -p evloop-tests --no-default-features --examples)",
                    path.display()
                ));
            }
            (Command::new(path), args)
        }
        Prog::Greenlet(args) => {
            let python: PathBuf = env.python.clone()?;
            let mut c = Command::new(python);
            c.arg(env.root.join("tests/bench/peer_greenlet.py"));
            (c, args)
        }
    };
    cmd.args(args).arg("--n").arg(n.to_string());
    Ok(cmd)
}

/// Runs one program; `Ok(json)`, or `Err((n/a?, reason))`.
fn run_one(env: &Env, prog: Prog, n: usize, limit: Duration) -> Result<json::Object, (bool, String)> {
    let cmd = command(env, prog, n).map_err(|e| (true, e))?;
    let (status, out, err) = run_captured(cmd, limit).map_err(|e| (false, e))?;
    let status = status.ok_or((false, format!("timed out after {} s", limit.as_secs())))?;
    if status.code() == Some(3) || out.trim_start().starts_with("n/a") {
        let text = format!("{out}\n{err}");
        let reason = text
            .lines()
            .find_map(|l| l.trim().strip_prefix("n/a:"))
            .map_or_else(|| tail(&text, 200), |r| r.trim().to_string());
        return Err((true, reason));
    }
    if !status.success() {
        return Err((false, format!("exit {status}: {}", tail(&err, 300))));
    }
    json::last_object(&out).ok_or((false, format!("no JSON line: {}", tail(&out, 200))))
}

/// Runs every entrant `runs` times, alternating, and stores `metrics` (table key, JSON key).
fn alternate(
    env: &Env,
    entrants: &[Entrant],
    metrics: &[(&'static str, &str)],
    runs: usize,
    limit: Duration,
) -> Vec<Row> {
    let mut rows: Vec<Row> = entrants.iter().map(|e| Row::new(e.label, e.is_evloop)).collect();
    for row in rows.iter_mut() {
        for (key, _) in metrics {
            row.cell_mut(key, runs);
        }
    }
    for run in 0..runs {
        let mut line = format!("  run {}/{runs}:", run + 1);
        for (i, e) in entrants.iter().enumerate() {
            if rows[i].cells.get(metrics[0].0).is_some_and(|c| c.na.is_some()) {
                continue;
            }
            match run_one(env, e.prog, e.n, limit) {
                Ok(obj) => {
                    for (key, json_key) in metrics {
                        let cell = rows[i].cell_mut(key, runs);
                        match obj.num(json_key) {
                            Some(v) => cell.runs[run] = Some(v),
                            None => cell.failures.push(format!("no {json_key:?} in {}", obj.to_json())),
                        }
                    }
                    if let Some(v) = obj.num(metrics[0].1) {
                        line.push_str(&format!(" {} {}", e.label, fmt_num(v)));
                    }
                }
                Err((true, why)) => {
                    eprintln!("  {}: n/a: {why}", e.label);
                    for (key, _) in metrics {
                        rows[i].cell_mut(key, runs).na = Some(why.clone());
                    }
                }
                Err((false, why)) => {
                    eprintln!("  {}: failed: {why}", e.label);
                    for (key, _) in metrics {
                        rows[i].cell_mut(key, runs).failures.push(why.clone());
                    }
                }
            }
        }
        eprintln!("{line}");
    }
    rows
}

pub fn run(env: &Env, plan: &Plan) -> FiberResults {
    let runs = plan.runs;
    let limit = plan.limit;
    let (switch_n, handoff_n, suspended_n) = if plan.quick {
        (2_000_000, 200_000, 20_000)
    } else {
        (10_000_000, 1_000_000, 100_000)
    };
    let mut res = FiberResults {
        suspended_n,
        ..FiberResults::default()
    };

    eprintln!("-- fiber switch ({runs} runs)");
    // greenlet runs a tenth of the switches: it is tens of times slower per switch.
    let entrants = [
        Entrant {
            label: FIBER,
            is_evloop: true,
            prog: Prog::Fiber(&["switch"]),
            n: switch_n,
        },
        Entrant {
            label: GREENLET,
            is_evloop: false,
            prog: Prog::Greenlet(&["switch"]),
            n: switch_n / 10,
        },
        Entrant {
            label: "evloop register switch alone",
            is_evloop: true,
            prog: Prog::Fiber(&["raw_switch"]),
            n: switch_n,
        },
        Entrant {
            label: "evloop task wake + poll, 1 pair",
            is_evloop: true,
            prog: Prog::Fiber(&["task_wake", "--pairs", "1"]),
            n: handoff_n,
        },
        Entrant {
            label: "evloop task wake + poll, 64 pairs",
            is_evloop: true,
            prog: Prog::Fiber(&["task_wake", "--pairs", "64"]),
            n: handoff_n,
        },
    ];
    let rows = alternate(env, &entrants, &[("ns", "ns_per_switch")], runs, limit);
    res.switch = Some(Table {
        title: "Fiber switch".into(),
        rows,
        reference: 0,
        columns: vec![col("ns", "ns per switch (per hand-off)", true)],
        notes: vec![
            format!(
                "`peer_fiber switch --n {switch_n}`: fibers A and B switch to each other N times each, carrying a `u64` \
                 (`Fiber::switch`, the whole greenlet-style API: the value, the running fiber, the target's state); \
                 `peer_greenlet.py switch --n {}`: the same with two greenlets (CPython's call overhead included). \
                 {runs} runs each.",
                switch_n / 10
            ),
            format!(
                "`peer_fiber raw_switch --n {switch_n}`: the same ping-pong between a thread's own context and one \
                 fiber context with the register switch alone (`Context` and its checks, none of the fiber layer \
                 above it), through the runtime's hidden `fiber::bench::raw_switch` (the `bench-internals` feature \
                 that `make bench-build` turns on)."
            ),
            format!(
                "`peer_fiber task_wake --n {handoff_n} --pairs P`: two tasks hand a turn to each other, each hand-off a \
                 wake of the other task and a poll of it. With one pair every hand-off is also a loop iteration (a task \
                 woken while the ready queue runs waits for the next iteration and its non-blocking `epoll_pwait2`); \
                 with 64 pairs an iteration serves 64 hand-offs."
            ),
        ],
    });

    eprintln!("-- suspended fibers, N = {suspended_n} ({runs} runs)");
    let entrants = [
        Entrant {
            label: "evloop fibers",
            is_evloop: true,
            prog: Prog::Fiber(&["suspended"]),
            n: suspended_n,
        },
        Entrant {
            label: "greenlets",
            is_evloop: false,
            prog: Prog::Greenlet(&["suspended"]),
            n: suspended_n,
        },
    ];
    let rows = alternate(
        env,
        &entrants,
        &[
            ("bytes", "bytes_per_fiber"),
            ("create", "create_ms"),
            ("maps", "maps"),
            ("rss", "rss_mib"),
        ],
        runs,
        limit,
    );
    res.memory = Some(Table {
        title: format!("{} suspended fibers in one process", fmt_num(suspended_n as f64)),
        rows,
        reference: 0,
        columns: vec![
            col("bytes", "RSS bytes / suspended fiber", true),
            col("create", "create + suspend all, ms", true),
            col("maps", "memory mappings added", false),
            col("rss", "process RSS, MiB", false),
        ],
        notes: vec![format!(
            "`suspended --n {suspended_n}`: N fibers (greenlets) each started and suspended in a switch back to the main \
             one; VmRSS growth over the N divided by N, and the `/proc/self/maps` lines added. An evloop fiber keeps \
             the touched pages of its own mmap'd stack (one 4 KiB page here) and about 350 bytes on the heap; a \
             greenlet keeps its Python frame and the slice of C stack greenlet copied to the heap. {runs} runs each."
        )],
    });

    eprintln!("-- fiber echo vs task echo");
    // The main echo configuration (64 B, 50 connections, one request per write).
    let cfg = match plan.echo.iter().find(|c| c.pipeline <= 1) {
        Some(c) => *c,
        None => EchoConfig {
            size: 64,
            conns: 50,
            seconds: 1.0,
            pipeline: 1,
        },
    };
    let servers = [
        Runtime {
            label: "evloop, a fiber per connection",
            peer: Peer::Bin("fiber"),
            variant: Some("fiber"),
        },
        Runtime {
            label: "evloop, a task per connection",
            peer: Peer::Bin("fiber"),
            variant: Some("task"),
        },
    ];
    let mut t = cases::echo(env, &servers, cfg, runs, plan.echo_warmup_s);
    t.title = format!("Blocking-style echo on fibers against tasks, {}", cfg.name());
    // Ratios against the task server: the target is the fiber server within 1.3x of it.
    t.reference = 1;
    for row in t.rows.iter_mut() {
        row.is_evloop = true;
    }
    t.notes.push(
        "Both servers are `peer_fiber echo`: `--variant fiber` runs `fiber::accept` and a fiber per connection looping \
         on `fiber::read` / `fiber::write_all`; `--variant task` is the same loop as an async task (`read().await`, \
         `write_all().await`). Each reads into a 64 KiB buffer of its own per connection."
            .into(),
    );
    res.echo = Some(t);
    res
}

/// The section's DESIGN.md targets: (what, evloop measured, verdict).
pub fn targets(res: &FiberResults) -> Vec<(String, String, String)> {
    let mut out = Vec::new();
    let le = |r: f64, bound: f64| {
        if r <= bound {
            "met".to_string()
        } else {
            format!("**MISSED**: {} the bound", fmt_ratio(r / bound))
        }
    };
    match &res.switch {
        Some(t) => {
            let fiber = t.cell(FIBER, "ns").and_then(|c| c.summary());
            let greenlet = t.cell(GREENLET, "ns").and_then(|c| c.summary());
            let task = t
                .cell("evloop task wake + poll, 1 pair", "ns")
                .and_then(|c| c.summary());
            match fiber {
                Some(f) => out.push((
                    "Fiber switch (ping-pong of two fibers) <= 10 ns".to_string(),
                    format!(
                        "{} ns per `Fiber::switch` (greenlet {}; a task wake + poll {})",
                        fmt_num(f.median),
                        greenlet.map_or("n/a".into(), |g| format!(
                            "{} ns, {}",
                            fmt_num(g.median),
                            fmt_ratio(g.median / f.median)
                        )),
                        task.map_or("n/a".into(), |t| format!("{} ns", fmt_num(t.median)))
                    ),
                    le(f.median, 10.0),
                )),
                None => out.push((
                    "Fiber switch <= 10 ns".into(),
                    "the case failed".into(),
                    "not measured".into(),
                )),
            }
        }
        None => out.push((
            "Fiber switch <= 10 ns".into(),
            "the case did not run".into(),
            "not measured".into(),
        )),
    }
    match &res.memory {
        Some(t) => {
            let fiber = t.cell("evloop fibers", "bytes").and_then(|c| c.summary());
            let greenlet = t.cell("greenlets", "bytes").and_then(|c| c.summary());
            match fiber {
                Some(f) => {
                    out.push((
                        "Memory per suspended fiber <= 8 KiB resident".to_string(),
                        format!(
                            "{} bytes (greenlet {})",
                            fmt_num(f.median),
                            greenlet.map_or("n/a".into(), |g| format!("{} bytes", fmt_num(g.median)))
                        ),
                        le(f.median, 8192.0),
                    ));
                    let verdict = if res.suspended_n >= 100_000 {
                        "met".to_string()
                    } else {
                        format!(
                            "not measured at 100,000 (this run used {})",
                            fmt_num(res.suspended_n as f64)
                        )
                    };
                    let rss = t.cell("evloop fibers", "rss").and_then(|c| c.median());
                    let maps = t.cell("evloop fibers", "maps").and_then(|c| c.median());
                    out.push((
                        "100,000 suspended fibers in one process".to_string(),
                        format!(
                            "{} suspended, process RSS {} MiB, {} memory mappings added",
                            fmt_num(res.suspended_n as f64),
                            rss.map_or("-".into(), fmt_num),
                            maps.map_or("-".into(), fmt_num)
                        ),
                        verdict,
                    ));
                }
                None => out.push((
                    "Memory per suspended fiber <= 8 KiB".into(),
                    "the case failed".into(),
                    "not measured".into(),
                )),
            }
        }
        None => out.push((
            "Memory per suspended fiber <= 8 KiB".into(),
            "the case did not run".into(),
            "not measured".into(),
        )),
    }
    match &res.echo {
        Some(t) => {
            let fiber = t.rows.first().and_then(|r| r.cells.get("cpu_us"));
            let task = t.rows.get(1).and_then(|r| r.cells.get("cpu_us"));
            match (fiber, task) {
                (Some(f), Some(k)) if !pair_ratios(f, k).is_empty() => {
                    let r = crate::table::median(pair_ratios(f, k)).unwrap_or(f64::NAN);
                    out.push((
                        "Fiber echo server CPU per round trip <= 1.3x the task server's".to_string(),
                        format!(
                            "{} µs against {} µs: {}",
                            f.median().map_or("-".into(), fmt_num),
                            k.median().map_or("-".into(), fmt_num),
                            fmt_ratio(r)
                        ),
                        le(r, 1.3),
                    ));
                }
                _ => out.push((
                    "Fiber echo CPU <= 1.3x the task server's".into(),
                    "the case failed".into(),
                    "not measured".into(),
                )),
            }
        }
        None => out.push((
            "Fiber echo CPU <= 1.3x the task server's".into(),
            "the case did not run".into(),
            "not measured".into(),
        )),
    }
    out
}

/// The section of the report.
pub fn markdown(res: &FiberResults) -> String {
    let mut w = String::new();
    if res.tables().is_empty() {
        return w;
    }
    w.push_str("## 7. Fibers\n\n");
    w.push_str(
        "evloop's fibers (`evloop::fiber`, greenlet's stackful coroutines: [chapter 10](10-fibers.md)) beside greenlet \
         3 in the bench venv's CPython, and beside evloop's own tasks.\n\n",
    );
    for t in res.tables() {
        w.push_str(&format!("### {}\n\n{}\n", t.title, t.to_markdown()));
    }
    w
}
