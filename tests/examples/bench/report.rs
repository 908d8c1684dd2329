//! The report: machine and date, the docs/design.md targets with evloop's measured values and a plain
//! verdict, one table per case, and the SVG charts; plus the raw per-run values as JSON lines.

use std::fmt::Write as _;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use crate::cases::EchoConfig;
use crate::json::{Object, Value};
use crate::procs::{Env, Peer, Runtime};
use crate::svg;
use crate::table::{Cell, Table, fmt_num, fmt_ratio, pair_ratios};
use crate::{Plan, Results};

pub struct Machine {
    pub cores: usize,
    pub cpu: String,
    pub kernel: String,
    pub mem_gib: f64,
    pub date: String,
    pub nofile: String,
    pub versions: Vec<String>,
}

fn command_line(program: &str, args: &[&str]) -> Option<String> {
    let out = Command::new(program).args(args).output().ok()?;
    if !out.status.success() {
        return None;
    }
    let s = String::from_utf8_lossy(&out.stdout).trim().to_string();
    (!s.is_empty()).then_some(s)
}

/// `YYYY-MM-DD HH:MM UTC` from the system clock (days to civil date: H. Hinnant's algorithm).
fn utc_now() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs()) as i64;
    let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!("{y:04}-{m:02}-{d:02} {:02}:{:02} UTC", rem / 3600, rem % 3600 / 60)
}

fn lock_version(root: &Path, name: &str) -> Option<String> {
    let lock = std::fs::read_to_string(root.join("Cargo.lock")).ok()?;
    let needle = format!("name = \"{name}\"\n");
    let at = lock.find(&needle)? + needle.len();
    let line = lock[at..].lines().next()?;
    Some(line.strip_prefix("version = ")?.trim_matches('"').to_string())
}

impl Machine {
    pub fn probe(env: &Env, nofile: &str) -> Machine {
        let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
        let cores = cpuinfo.lines().filter(|l| l.starts_with("processor")).count();
        let cores = if cores > 0 {
            cores
        } else {
            std::thread::available_parallelism().map_or(0, |n| n.get())
        };
        let cpu = cpuinfo
            .lines()
            .find_map(|l| l.strip_prefix("model name"))
            .map(|l| l.trim_start_matches([' ', '\t', ':']).trim().to_string())
            .unwrap_or_else(|| "unknown CPU".into());
        let kernel = command_line("uname", &["-r"]).unwrap_or_else(|| "unknown kernel".into());
        let mem_gib = std::fs::read_to_string("/proc/meminfo")
            .ok()
            .and_then(|m| {
                m.lines()
                    .find_map(|l| l.strip_prefix("MemTotal:"))
                    .and_then(|v| v.split_whitespace().next()?.parse::<f64>().ok())
            })
            .map_or(0.0, |kib| kib / 1024.0 / 1024.0);
        let mut versions = Vec::new();
        if let Some(v) = command_line("rustc", &["--version"]) {
            versions.push(v);
        }
        for name in ["tokio", "smol"] {
            if let Some(v) = lock_version(&env.root, name) {
                versions.push(format!("{name} {v}"));
            }
        }
        match &env.python {
            Ok(py) => {
                let py = py.to_string_lossy().to_string();
                if let Some(v) = command_line(&py, &["-c", "import sys; print(sys.version.split()[0])"]) {
                    let venv = if py.contains(".bench-venv") {
                        " (.bench-venv)"
                    } else {
                        " (system python3)"
                    };
                    versions.push(format!("Python {v}{venv} asyncio"));
                }
                match command_line(&py, &["-c", "import uvloop; print(uvloop.__version__)"]) {
                    Some(v) => versions.push(format!("uvloop {v}")),
                    None => versions.push("uvloop not installed".into()),
                }
            }
            Err(e) => versions.push(format!("Python: {e}")),
        }
        Machine {
            cores,
            cpu,
            kernel,
            mem_gib,
            date: utc_now(),
            nofile: nofile.to_string(),
            versions,
        }
    }

    pub fn line(&self) -> String {
        format!(
            "{} cores ({}), kernel {}, {:.0} GiB RAM, {}; {}",
            self.cores,
            self.cpu,
            self.kernel,
            self.mem_gib,
            self.nofile,
            self.versions.join(", ")
        )
    }
}

/// One line of the Targets table.
struct Target {
    what: String,
    measured: String,
    verdict: String,
}

fn le(r: f64, bound: f64) -> String {
    if r <= bound {
        "met".into()
    } else if r > 2.0 * bound {
        format!("**MISSED**: {} the bound", fmt_ratio(r / bound))
    } else {
        format!("**MISSED** by {:.0}%", (r / bound - 1.0) * 100.0)
    }
}

/// "At most `bound`" judged on the median of the runs, saying so when some runs met it.
fn le_runs(s: &crate::table::Summary, bound: f64) -> String {
    let v = le(s.median, bound);
    if s.median > bound && s.min <= bound {
        format!("{v} (some runs met it)")
    } else {
        v
    }
}

fn ge(r: f64, bound: f64) -> String {
    if r >= bound {
        "met".into()
    } else {
        format!("**MISSED** by {:.0}%", (1.0 - r / bound) * 100.0)
    }
}

/// evloop's figure over a peer's, run by run: the median and the range of the per-run ratios.
struct Ratio {
    median: f64,
    min: f64,
    max: f64,
}

impl Ratio {
    fn of(e: &Cell, peer: &Cell) -> Ratio {
        let v = pair_ratios(e, peer);
        Ratio {
            median: crate::table::median(v.clone()).unwrap_or(f64::NAN),
            min: v.iter().copied().fold(f64::INFINITY, f64::min),
            max: v.iter().copied().fold(f64::NEG_INFINITY, f64::max),
        }
    }

    fn text(&self) -> String {
        if self.min < self.max {
            format!(
                "{} (runs {}–{})",
                fmt_ratio(self.median),
                fmt_ratio(self.min),
                fmt_ratio(self.max)
            )
        } else {
            fmt_ratio(self.median)
        }
    }

    /// The verdict for "at most `bound`", saying so when some runs met it though the median did not.
    fn le(&self, bound: f64) -> String {
        let v = le(self.median, bound);
        if self.median > bound && self.min <= bound {
            format!("{v} (some runs met it)")
        } else {
            v
        }
    }

    fn ge(&self, bound: f64) -> String {
        let v = ge(self.median, bound);
        if self.median < bound && self.max >= bound {
            format!("{v} (some runs met it)")
        } else {
            v
        }
    }
}

fn not_measured(what: &str, why: &str) -> Target {
    Target {
        what: what.into(),
        measured: why.into(),
        verdict: "not measured".into(),
    }
}

/// Element-wise minimum of two cells (the faster of two peers, run by run).
fn min_cell(a: &Cell, b: &Cell) -> Cell {
    let runs = a
        .runs
        .iter()
        .zip(&b.runs)
        .map(|(x, y)| match (x, y) {
            (Some(x), Some(y)) => Some(x.min(*y)),
            (Some(v), None) | (None, Some(v)) => Some(*v),
            _ => None,
        })
        .collect();
    Cell {
        runs,
        ..Cell::default()
    }
}

fn available(c: Option<&Cell>) -> Option<&Cell> {
    c.filter(|c| c.na.is_none() && !c.values().is_empty())
}

fn echo_table(res: &Results, size: usize, conns: usize) -> Option<&Table> {
    res.echo
        .iter()
        .find(|(c, _)| c.size == size && c.conns == conns)
        .map(|(_, t)| t)
}

fn targets(res: &Results) -> Vec<Target> {
    let mut out = Vec::new();
    let main = echo_table(res, 64, 50);

    // Echo, server CPU per round trip.
    let what = "Echo 64 B, 50 conns: server CPU / round trip, protocol path <= 1.03x raw epoll";
    let pair = main.and_then(|t| {
        Some((
            available(t.cell("evloop protocol", "cpu_us"))?,
            available(t.cell("raw epoll", "cpu_us"))?,
        ))
    });
    out.push(match pair {
        Some((e, raw)) => {
            let r = Ratio::of(e, raw);
            Target {
                what: what.into(),
                measured: format!(
                    "{} µs vs raw {} µs: {}",
                    fmt_num(e.median().unwrap_or(f64::NAN)),
                    fmt_num(raw.median().unwrap_or(f64::NAN)),
                    r.text()
                ),
                verdict: r.le(1.03),
            }
        }
        None => not_measured(what, "evloop protocol or raw epoll unavailable"),
    });
    let what = "Echo 64 B, 50 conns: server CPU / round trip, streams path <= tokio's";
    let pair = main.and_then(|t| {
        Some((
            available(t.cell("evloop streams", "cpu_us"))?,
            available(t.cell("tokio current_thread", "cpu_us"))?,
        ))
    });
    out.push(match pair {
        Some((e, tokio)) => {
            let r = Ratio::of(e, tokio);
            Target {
                what: what.into(),
                measured: format!(
                    "{} µs vs tokio {} µs: {}",
                    fmt_num(e.median().unwrap_or(f64::NAN)),
                    fmt_num(tokio.median().unwrap_or(f64::NAN)),
                    r.text()
                ),
                verdict: r.le(1.0),
            }
        }
        None => not_measured(what, "evloop streams or tokio unavailable"),
    });
    for variant in ["protocol", "streams"] {
        let what = format!("Echo 64 B, 50 conns: round trips/s >= tokio's ({variant} path)");
        let label = format!("evloop {variant}");
        let pair = main.and_then(|t| {
            Some((
                available(t.cell(&label, "per_sec"))?,
                available(t.cell("tokio current_thread", "per_sec"))?,
            ))
        });
        out.push(match pair {
            Some((e, tokio)) => {
                let r = Ratio::of(e, tokio);
                Target {
                    what,
                    measured: format!(
                        "{}/s vs tokio {}/s: {}",
                        fmt_num(e.median().unwrap_or(f64::NAN)),
                        fmt_num(tokio.median().unwrap_or(f64::NAN)),
                        r.text()
                    ),
                    verdict: r.ge(1.0),
                }
            }
            None => not_measured(&what, "evloop or tokio unavailable"),
        });
    }

    // Echo, one connection: p50 <= the best peer.
    let what = "Echo 64 B, 1 connection: p50 round trip <= the best peer's";
    match echo_table(res, 64, 1) {
        Some(t) => {
            let e = available(t.cell("evloop protocol", "p50_us"));
            let peers: Vec<&Cell> = t
                .rows
                .iter()
                .filter(|r| !r.is_evloop)
                .filter_map(|r| available(r.cells.get("p50_us")))
                .collect();
            let best_median = t
                .rows
                .iter()
                .filter(|r| !r.is_evloop)
                .filter_map(|r| Some((r.label.clone(), available(r.cells.get("p50_us"))?.median()?)))
                .min_by(|a, b| a.1.total_cmp(&b.1));
            // The best peer of each run (runs alternate, so run i of every runtime shares its moment).
            let best = peers
                .iter()
                .skip(1)
                .fold(peers.first().map(|c| (*c).clone()), |acc, c| {
                    acc.map(|a| min_cell(&a, c))
                });
            out.push(match (e, best, best_median) {
                (Some(e), Some(best), Some((name, b))) => {
                    let r = Ratio::of(e, &best);
                    Target {
                        what: what.into(),
                        measured: format!(
                            "protocol {} µs; best peer by median {name} {} µs; against the best peer of each run: {}",
                            fmt_num(e.median().unwrap_or(f64::NAN)),
                            fmt_num(b),
                            r.text()
                        ),
                        verdict: r.le(1.0),
                    }
                }
                _ => not_measured(what, "evloop or every peer unavailable"),
            });
        }
        None => out.push(not_measured(what, "the 1-connection configuration was not run")),
    }

    // Timers.
    let timers = |tasks: usize| res.timers.iter().find(|((n, _), _)| *n == tasks).map(|(_, t)| t);
    let what = "1,000 timers over 100 ms: lateness p99 <= 0.05 ms";
    match timers(1_000).and_then(|t| available(t.cell("evloop", "p99"))) {
        Some(c) => {
            let s = c.summary().expect("values");
            out.push(Target {
                what: what.into(),
                measured: format!(
                    "p99 {} ms (median of {} runs, {}–{}); p50 {} ms",
                    fmt_num(s.median),
                    s.n,
                    fmt_num(s.min),
                    fmt_num(s.max),
                    timers(1_000)
                        .and_then(|t| t.cell("evloop", "p50"))
                        .and_then(Cell::median)
                        .map_or("-".into(), fmt_num)
                ),
                verdict: le_runs(&s, 0.05),
            });
        }
        None => out.push(not_measured(what, "the 1,000-timer case did not run for evloop")),
    }
    let what = "1,000 timers over 100 ms: no timer fires early";
    match timers(1_000).and_then(|t| available(t.cell("evloop", "early"))) {
        Some(c) => {
            let early: f64 = c.values().iter().sum();
            out.push(Target {
                what: what.into(),
                measured: format!("{early:.0} early over {} runs", c.values().len()),
                verdict: if early == 0.0 {
                    "met".into()
                } else {
                    format!("**MISSED**: {early:.0} fired early")
                },
            });
        }
        None => out.push(not_measured(what, "the 1,000-timer case did not run for evloop")),
    }
    match res.timers.iter().find(|((n, _), _)| *n != 1_000) {
        Some(((tasks, _), t)) => {
            let n = fmt_num(*tasks as f64);
            let note = if *tasks == 100_000 {
                String::new()
            } else {
                " (quick run: fewer tasks than the target's 100,000)".to_string()
            };
            for key in ["p50", "p99"] {
                let what = format!(
                    "{n} sleeping tasks, deadline fixed at first run: lateness {key} <= 0.5x the better of tokio and smol{note}"
                );
                let e = available(t.cell("evloop", key));
                let (tk, sm) = (
                    available(t.cell("tokio current_thread", key)),
                    available(t.cell("smol", key)),
                );
                let best = match (tk, sm) {
                    (Some(a), Some(b)) => Some(min_cell(a, b)),
                    (Some(a), None) | (None, Some(a)) => Some(a.clone()),
                    _ => None,
                };
                out.push(match (e, best) {
                    (Some(e), Some(b)) => {
                        let r = Ratio::of(e, &b);
                        Target {
                            what,
                            measured: format!(
                                "{} ms vs tokio {} ms, smol {} ms: {} the better",
                                fmt_num(e.median().unwrap_or(f64::NAN)),
                                tk.and_then(Cell::median).map_or("n/a".into(), fmt_num),
                                sm.and_then(Cell::median).map_or("n/a".into(), fmt_num),
                                r.text()
                            ),
                            verdict: r.le(0.5),
                        }
                    }
                    _ => not_measured(&what, "evloop or both peers unavailable"),
                });
            }
            let what = format!("{n} sleeping tasks: peak RSS <= 0.6x smol's{note}");
            match (available(t.cell("evloop", "rss")), available(t.cell("smol", "rss"))) {
                (Some(e), Some(s)) => {
                    let r = Ratio::of(e, s);
                    out.push(Target {
                        what,
                        measured: format!(
                            "{} MiB vs smol {} MiB: {}",
                            fmt_num(e.median().unwrap_or(f64::NAN)),
                            fmt_num(s.median().unwrap_or(f64::NAN)),
                            r.text()
                        ),
                        verdict: r.le(0.6),
                    });
                }
                _ => out.push(not_measured(&what, "evloop or smol unavailable")),
            }
        }
        None => out.push(not_measured("100,000 sleeping tasks", "the case did not run")),
    }

    // Pipelined requests on the streams path.
    let what = "Streams server, 16 requests per write: server CPU per request <= 1.2x the TcpStream path's";
    match &res.pipelined {
        Some(t) => match (
            available(t.cell("evloop streams (reply per line)", "cpu_us")),
            available(t.cell("evloop TcpStream", "cpu_us")),
        ) {
            (Some(st), Some(tcp)) => {
                let r = Ratio::of(st, tcp);
                out.push(Target {
                    what: what.into(),
                    measured: format!(
                        "{} µs vs {} µs per request: {}",
                        fmt_num(st.median().unwrap_or(f64::NAN)),
                        fmt_num(tcp.median().unwrap_or(f64::NAN)),
                        r.text()
                    ),
                    verdict: r.le(1.2),
                });
            }
            _ => out.push(not_measured(what, "a server was unavailable")),
        },
        None => out.push(not_measured(what, "the case did not run")),
    }

    // Scheduling.
    match &res.sched {
        Some(t) => {
            let n = t.columns[0].header.clone();
            let what = format!("{n}: <= 0.6x smol's time");
            let e = available(t.cell("evloop", "spawn_ms"));
            let (tk, sm) = (
                available(t.cell("tokio current_thread", "spawn_ms")),
                available(t.cell("smol", "spawn_ms")),
            );
            out.push(match (e, sm) {
                (Some(e), Some(s)) => {
                    let r = Ratio::of(e, s);
                    Target {
                        what,
                        measured: format!(
                            "{} ms vs smol {} ms (tokio {} ms): {} smol's",
                            fmt_num(e.median().unwrap_or(f64::NAN)),
                            fmt_num(s.median().unwrap_or(f64::NAN)),
                            tk.and_then(Cell::median).map_or("n/a".into(), fmt_num),
                            r.text()
                        ),
                        verdict: r.le(0.6),
                    }
                }
                _ => not_measured(&what, "evloop or smol unavailable"),
            });
            let what = "call_soon callbacks/s >= 10x uvloop's";
            out.push(
                match (
                    available(t.cell("evloop", "call_soon")),
                    available(t.cell("uvloop", "call_soon")),
                ) {
                    (Some(e), Some(u)) => {
                        let r = Ratio::of(e, u);
                        Target {
                            what: what.into(),
                            measured: format!(
                                "{}/s vs uvloop {}/s: {}",
                                fmt_num(e.median().unwrap_or(f64::NAN)),
                                fmt_num(u.median().unwrap_or(f64::NAN)),
                                r.text()
                            ),
                            verdict: r.ge(10.0),
                        }
                    }
                    (Some(_), None) => not_measured(
                        what,
                        &format!(
                            "uvloop n/a: {}",
                            t.cell("uvloop", "call_soon")
                                .and_then(|c| c.na.clone())
                                .unwrap_or_else(|| "failed".into())
                        ),
                    ),
                    _ => not_measured(what, "evloop unavailable"),
                },
            );
        }
        None => out.push(not_measured("Scheduling targets", "the case did not run")),
    }

    // Memory per idle task.
    let what = "Memory per idle task (handle kept) beyond the future itself <= 0.5x smol's";
    let beyond = |rt: &str| res.idle_tasks.as_ref().and_then(|t| available(t.cell(rt, "beyond")));
    match (beyond("evloop"), beyond("smol")) {
        (Some(e), Some(s)) => {
            let r = Ratio::of(e, s);
            out.push(Target {
                what: what.into(),
                measured: format!(
                    "{} B vs smol {} B: {}",
                    fmt_num(e.median().unwrap_or(f64::NAN)),
                    fmt_num(s.median().unwrap_or(f64::NAN)),
                    r.text()
                ),
                verdict: r.le(0.5),
            });
        }
        _ => out.push(not_measured(what, "the case did not run for evloop or smol")),
    }

    // Syscalls per round trip.
    match &res.syscalls {
        Some(t) => {
            for variant in ["protocol", "streams", "sock"] {
                let label = format!("evloop {variant}");
                let what = format!("Echo syscalls / round trip: one read + one write, no epoll_ctl ({variant} path)");
                let get = |k: &str| available(t.cell(&label, k)).and_then(Cell::median);
                match (
                    get("sc_read"),
                    get("sc_write"),
                    get("sc_ctl"),
                    get("sc_poll"),
                    get("ctl_per_conn"),
                ) {
                    (Some(r), Some(w), Some(c), Some(p), Some(cpc)) => {
                        // Registering a socket on accept and removing it before close are two calls per
                        // connection; anything beyond that happens in the steady state.
                        let ctl_steady = cpc > 2.05;
                        let ok = r <= 1.05 && w <= 1.05 && !ctl_steady;
                        let mut why = Vec::new();
                        if r > 1.05 {
                            why.push(format!("{} reads", fmt_num(r)));
                        }
                        if w > 1.05 {
                            why.push(format!("{} writes", fmt_num(w)));
                        }
                        if ctl_steady {
                            why.push(format!("{} epoll_ctl ({} per connection)", fmt_num(c), fmt_num(cpc)));
                        }
                        out.push(Target {
                            what,
                            measured: format!(
                                "read {}, write {}, epoll_wait {}; epoll_ctl {} ({} per connection: register + remove)",
                                fmt_num(r),
                                fmt_num(w),
                                fmt_num(p),
                                fmt_num(c),
                                fmt_num(cpc)
                            ),
                            verdict: if ok {
                                "met".into()
                            } else {
                                format!("**MISSED**: {} per round trip", why.join(", "))
                            },
                        });
                    }
                    _ => out.push(not_measured(
                        &what,
                        &t.cell(&label, "sc_read")
                            .and_then(|c| c.na.clone().or_else(|| c.failures.first().cloned()))
                            .unwrap_or_else(|| "unavailable".into()),
                    )),
                }
            }
        }
        None => out.push(not_measured("Echo syscalls per round trip", "the case did not run")),
    }
    if !res.fibers.tables().is_empty() {
        for (what, measured, verdict) in crate::fibers::targets(&res.fibers) {
            out.push(Target {
                what,
                measured,
                verdict,
            });
        }
    }
    out
}

fn bars(t: &Table, keys: &[&str]) -> Vec<svg::Row> {
    t.rows
        .iter()
        .map(|r| svg::Row {
            label: r.label.clone(),
            highlight: r.is_evloop,
            bars: keys
                .iter()
                .map(|k| {
                    let s = r.cells.get(k)?.summary()?;
                    Some(svg::Bar {
                        median: s.median,
                        min: s.min,
                        max: s.max,
                    })
                })
                .collect(),
        })
        .collect()
}

fn write_svg(dir: &Path, name: &str, chart: &svg::Chart) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    std::fs::write(dir.join(name), svg::render(chart))
}

fn raw_lines(results: &Results) -> String {
    let mut tables: Vec<&Table> = Vec::new();
    tables.extend(results.echo.iter().map(|(_, t)| t));
    tables.extend(results.pipelined.iter());
    tables.extend(results.timers.iter().map(|(_, t)| t));
    tables.extend(results.timers_spawn.iter().map(|(_, t)| t));
    tables.extend(results.sched.iter());
    tables.extend(results.idle_tasks.iter());
    tables.extend(results.conn_memory.iter());
    tables.extend(results.syscalls.iter());
    tables.extend(results.apps.iter());
    tables.extend(results.fibers.tables());
    let mut out = String::new();
    for t in tables {
        for r in &t.rows {
            for (key, cell) in &r.cells {
                let mut o = Object::default();
                o.push("table", Value::Str(t.title.clone()));
                o.push("runtime", Value::Str(r.label.clone()));
                o.push("metric", Value::Str((*key).to_string()));
                match &cell.na {
                    Some(na) => o.push("na", Value::Str(na.clone())),
                    None => {
                        for (i, v) in cell.runs.iter().enumerate() {
                            o.push(&format!("run{}", i + 1), v.map_or(Value::Null, Value::Num));
                        }
                    }
                }
                out.push_str(&o.to_json());
                out.push('\n');
            }
        }
    }
    out
}

fn runtime_list(runtimes: &[Runtime]) -> String {
    runtimes
        .iter()
        .map(|r| match (r.peer, r.variant) {
            (Peer::Bin(name), Some(v)) => format!("`peer_{name} echo --variant {v}`"),
            (Peer::Bin(name), None) => format!("`peer_{name}`"),
            (Peer::Python { uvloop: false }, _) => "`peer_asyncio.py`".to_string(),
            (Peer::Python { uvloop: true }, _) => "`peer_asyncio.py --uvloop`".to_string(),
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// Writes the report (and its charts next to it); returns the markdown.
pub fn write(
    env: &Env,
    plan: &Plan,
    m: &Machine,
    res: &Results,
    out: &Path,
    took: Duration,
) -> std::io::Result<String> {
    let base = out.parent().unwrap_or(Path::new("."));
    let svg_dir_name = if plan.quick { "bench-quick" } else { "bench" };
    let svg_dir = base.join(svg_dir_name);
    let mut md = String::new();
    let w = &mut md;
    let _ = writeln!(
        w,
        "# Benchmarks: evloop side by side with tokio, smol, a raw epoll loop, asyncio and uvloop\n"
    );
    let _ = writeln!(
        w,
        "<!-- Generated by `make {}` (tests/examples/bench/); do not edit by hand: rerun it. -->\n",
        if plan.quick { "bench-quick" } else { "bench" }
    );
    if plan.quick {
        let _ = writeln!(
            w,
            "**Quick run** (`make bench-quick`, the CI smoke test): fewer echo configurations, shorter runs and smaller \
             task counts than `make bench`; the figures are indicative only. The full report is `docs/benchmarks.md`.\n"
        );
    } else {
        let _ = writeln!(
            w,
            "An appendix of [the book](README.md). Every number on this page is from the last run of `make bench`; \
             rerun it to reproduce them on your machine. These are measurements, not traces: they change from run \
             to run, so the test that keeps the book's traces honest (`tests/tests/book_traces.rs`) does not \
             compare them.\n"
        );
    }
    let _ = writeln!(
        w,
        "- **Date:** {} (the run took {:.1} min)",
        m.date,
        took.as_secs_f64() / 60.0
    );
    let _ = writeln!(
        w,
        "- **Machine:** {} cores, {}, kernel {}, {:.0} GiB RAM, {}",
        m.cores, m.cpu, m.kernel, m.mem_gib, m.nofile
    );
    let _ = writeln!(w, "- **Toolchain and peers:** {}", m.versions.join(", "));
    let _ = writeln!(w, "- **Runs:** {} per case and runtime, alternating", plan.runs);
    match res.foreign {
        Some(l) => {
            let _ = writeln!(
                w,
                "- **Other load:** processes outside the benchmark used {:.0}% of the machine's CPU during the run, the \
                 hypervisor took {:.0}% (steal){}\n",
                l.other * 100.0,
                l.steal * 100.0,
                if l.other > 0.05 {
                    ": **the numbers below were disturbed by other work on the machine**"
                } else {
                    ""
                }
            );
        }
        None => {
            let _ = writeln!(w);
        }
    }

    let _ = writeln!(w, "## How the numbers are taken\n");
    let _ = writeln!(
        w,
        "- Every runtime is its own program (`tests/examples/peer_{{evloop,tokio,smol,raw}}.rs`, \
         `tests/bench/peer_asyncio.py` with and without uvloop), built in release mode without the syscall layer's \
         fault injection. The echo servers and the load client (`runtime/examples/echo_load.rs`, one client for all \
         servers) are separate processes on the same machine."
    );
    let _ = writeln!(
        w,
        "- Each case runs {} times per runtime with the runtimes alternating (A B C ... A B C ...). A cell shows the \
         median and, in parentheses, the min–max spread. The **vs** columns are ratios *runtime / evloop* computed pair \
         by pair within the run (run i of the runtime over run i of evloop), then the median of those ratios: above 1 \
         means the peer's figure is larger.",
        plan.runs
    );
    let _ = writeln!(
        w,
        "- Echo: the reference is **evloop's protocol variant** (`loop.create_server` with a `Protocol`); the streams \
         and sock variants are shown beside it. Server CPU per round trip is the server process's CPU time (user + \
         system) during the client's run divided by the round trips, sampled right before and after the client runs \
         from `/proc/PID/task/*/schedstat` (the scheduler's nanosecond `sum_exec_runtime`, the figure that utime + \
         stime in `/proc/PID/stat` report rounded to 10 ms ticks; the harness falls back to those when schedstat is \
         unreadable). It includes accepting the client's connections."
    );
    let _ = writeln!(
        w,
        "- On a {}-core machine the client (an evloop program) and the server share the cores, so round trips/s \
         compress toward what one client can drive; server CPU per round trip is the figure that separates the \
         runtimes (docs/design.md, performance targets). The cores are shared and noisy: judge a difference against the \
         spread.\n",
        m.cores
    );

    let _ = writeln!(w, "## Targets\n");
    let _ = writeln!(
        w,
        "Each performance target of docs/design.md with evloop's value from this run. Ratios are pairwise medians as above.\n"
    );
    let _ = writeln!(w, "| target | evloop measured | verdict |\n|---|---|---|");
    for t in targets(res) {
        let _ = writeln!(w, "| {} | {} | {} |", t.what, t.measured, t.verdict);
    }
    let _ = writeln!(w);
    let _ = writeln!(
        w,
        "### Tasks\n\n\
         A task is one allocation: a 48-byte header (reference count and wake flag, vtable, owning loop, \
         table slot, number, flags, what it awaits, a pointer to rarely used extras) followed by the future, \
         whose slot is reused for the output; its waker is a pointer to that header with a hand-written vtable \
         (`runtime/src/event_loop/raw_task.rs`, the runtime's one unsafe module besides the fiber switch). \
         `docs/11-the-task-cell.md` explains the cell and what each of the bytes per task buys.\n"
    );

    if !res.echo.is_empty() {
        let _ = writeln!(w, "## 1. TCP echo, one server thread\n");
        let _ = writeln!(
            w,
            "C connections each doing request/response ping-pong of M bytes. Servers: {}. Latency is the client's \
             (per round trip, all connections pooled).\n",
            runtime_list(&crate::procs::ECHO_RUNTIMES)
        );
        for (cfg, t) in &res.echo {
            let EchoConfig { size, conns, .. } = *cfg;
            let main = size == 64 && conns == 50;
            let _ = writeln!(
                w,
                "### {}{}\n",
                cfg.name(),
                if main { " (the main configuration)" } else { "" }
            );
            let slug = cfg.slug();
            let chart = svg::Chart {
                title: format!("TCP echo, {}: round trips per second", cfg.name()),
                subtitle: format!("median of {} runs, whiskers min-max; higher is better", plan.runs),
                unit: "round trips/s".into(),
                series: vec!["round trips/s".into()],
                rows: bars(t, &["per_sec"]),
                log: false,
            };
            write_svg(&svg_dir, &format!("{slug}.svg"), &chart)?;
            let _ = writeln!(
                w,
                "![round trips per second, {}]({svg_dir_name}/{slug}.svg)\n",
                cfg.name()
            );
            if main {
                let chart = svg::Chart {
                    title: format!("TCP echo, {}: server CPU per round trip", cfg.name()),
                    subtitle: format!("median of {} runs, whiskers min-max; lower is better", plan.runs),
                    unit: "server CPU µs per round trip".into(),
                    series: vec!["µs".into()],
                    rows: bars(t, &["cpu_us"]),
                    log: false,
                };
                write_svg(&svg_dir, &format!("{slug}-cpu.svg"), &chart)?;
                let _ = writeln!(
                    w,
                    "![server CPU per round trip, {}]({svg_dir_name}/{slug}-cpu.svg)\n",
                    cfg.name()
                );
            }
            let _ = writeln!(w, "{}", t.to_markdown());
        }
    }

    if let Some(t) = &res.pipelined {
        let _ = writeln!(w, "## 1b. Pipelined requests on the streams path\n");
        let _ = writeln!(
            w,
            "Each write of the client carries 16 requests (64 B lines); the servers answer every line. The \
             streams server replies per line (`readline`, `write`, `drain`: {} replies per read, in one task step), \
             the TcpStream server echoes what it read in one `write_all`. The transport's write-behind sends \
             everything a connection was given during one loop iteration in one `send`, so the streams path \
             should cost about what the TcpStream path costs. Figures are per request.\n",
            plan.pipelined.pipeline
        );
        let _ = writeln!(w, "{}", t.to_markdown());
    }

    if !res.timers.is_empty() {
        let _ = writeln!(w, "## 2. Timers\n");
        let _ = writeln!(
            w,
            "N tasks each sleep a random 0-100 ms; lateness is how long after its deadline each one ran. Process CPU time \
             and peak RSS are the peer's own (getrusage). docs/design.md wants evloop never early, and sub-millisecond \
             lateness (tokio's timer wheel has 1 ms granularity; uvloop truncates to milliseconds).\n"
        );
        for ((tasks, spread), t) in &res.timers {
            let _ = writeln!(w, "### {}\n", t.title);
            let slug = format!("timers-{tasks}");
            let chart = svg::Chart {
                title: format!("Timer lateness: {} tasks over {spread} ms", fmt_num(*tasks as f64)),
                subtitle: format!(
                    "median of {} runs, whiskers min-max; lower is better; log scale",
                    plan.runs
                ),
                unit: "lateness, ms".into(),
                series: vec!["p50".into(), "p99".into(), "max".into()],
                rows: bars(t, &["p50", "p99", "max"]),
                log: true,
            };
            write_svg(&svg_dir, &format!("{slug}.svg"), &chart)?;
            let _ = writeln!(
                w,
                "![timer lateness, {} tasks]({svg_dir_name}/{slug}.svg)\n",
                fmt_num(*tasks as f64)
            );
            let _ = writeln!(w, "{}", t.to_markdown());
        }
        for (_, t) in &res.timers_spawn {
            let _ = writeln!(w, "### {}\n", t.title);
            let _ = writeln!(
                w,
                "The same case with each deadline computed before the task is spawned, as a program that \
                 schedules work ahead would: the time the loop takes to start every task adds to the lateness.\n"
            );
            let _ = writeln!(w, "{}", t.to_markdown());
        }
    }

    if let Some(t) = &res.sched {
        let _ = writeln!(w, "## 3. Scheduling\n");
        let _ = writeln!(
            w,
            "Spawn, run and join N trivial tasks (wall time); N `call_soon` callbacks (rate); a chain of N promises each \
             set from a callback and awaited (rate); a thread sending `call_soon_threadsafe` to the loop and waiting for \
             the reply (round-trip latency). Runtimes without an equivalent API show n/a.\n"
        );
        let _ = writeln!(w, "{}", t.to_markdown());
    }

    if res.idle_tasks.is_some() || res.conn_memory.is_some() {
        let _ = writeln!(w, "## 4. Memory\n");
        if let Some(t) = &res.idle_tasks {
            let _ = writeln!(w, "### {}\n\n{}", t.title, t.to_markdown());
        }
        if let Some(t) = &res.conn_memory {
            let _ = writeln!(w, "### {}\n\n{}", t.title, t.to_markdown());
        }
    }

    if let Some(t) = &res.syscalls {
        let _ = writeln!(w, "## 5. Syscalls per echo round trip\n");
        let _ = writeln!(
            w,
            "docs/design.md's target for evloop: one read and one write per round trip in the steady state, and no \
             `epoll_ctl` (each socket is registered once, edge-triggered). The connects and closes are inside the \
             counted window but amortised over thousands of round trips.\n"
        );
        let _ = writeln!(w, "{}", t.to_markdown());
    }

    if !res.apps.is_empty() {
        let _ = writeln!(w, "## 6. Example applications under wrk and redis-benchmark\n");
        let _ = writeln!(
            w,
            "The gallery's HTTP and Redis-protocol servers (`runtime/examples/`) beside the same source compiled \
             against tokio (`tests/examples/peer_tokio_*.rs`: only the `use` lines differ). Rows say n/a where the \
             load tool is not installed.\n"
        );
        for t in &res.apps {
            let _ = writeln!(w, "### {}\n\n{}", t.title, t.to_markdown());
        }
    }
    let _ = write!(w, "{}", crate::fibers::markdown(&res.fibers));
    let _ = write!(w, "{}", res.loops);

    let _ = writeln!(w, "## Run time\n");
    let parts: Vec<String> = res
        .timings
        .iter()
        .map(|(name, s, load)| match load {
            Some(l) => format!("{name} {s:.0} s (other load {:.0}%)", l.other * 100.0),
            None => format!("{name} {s:.0} s"),
        })
        .collect();
    let _ = writeln!(
        w,
        "{} ({:.0} s in all). Raw per-run values: `{}`.",
        parts.join(", "),
        took.as_secs_f64(),
        raw_path(env, plan)
            .strip_prefix(&env.root)
            .unwrap_or(&raw_path(env, plan))
            .display()
    );

    // `make bench-instr`'s section of the report is not measured here: keep it, and the
    // simulated kernel's section (measured by tests/examples/sim_speed.rs).
    let md = crate::instr::keep_section(out, md);
    let md = keep_sim_section(out, md);
    std::fs::create_dir_all(base)?;
    std::fs::write(out, &md)?;
    let raw = raw_path(env, plan);
    if let Some(dir) = raw.parent() {
        std::fs::create_dir_all(dir)?;
    }
    std::fs::write(&raw, raw_lines(res))?;
    Ok(md)
}

fn raw_path(env: &Env, plan: &Plan) -> std::path::PathBuf {
    env.root.join(if plan.quick {
        "target/bench-quick-raw.jsonl"
    } else {
        "target/bench-raw.jsonl"
    })
}

const SIM_BEGIN: &str = "<!-- sim-speed: begin";
const SIM_END: &str = "<!-- sim-speed: end -->";

/// `new` with the simulated kernel's section of the report at `path` (written by hand from
/// `tests/examples/sim_speed.rs`'s output, which `make bench` does not run) put back before the
/// "## Run time" heading, or at the end.
fn keep_sim_section(path: &Path, new: String) -> String {
    let old = std::fs::read_to_string(path).unwrap_or_default();
    let Some(start) = old.find(SIM_BEGIN) else {
        return new;
    };
    let Some(len) = old[start..].find(SIM_END) else {
        return new;
    };
    let block = &old[start..start + len + SIM_END.len()];
    let at = new.find("\n## Run time").map_or(new.len(), |i| i + 1);
    format!("{}{block}\n\n{}", &new[..at], &new[at..])
}
