//! `make bench` / `make bench-quick`: evloop side by side with tokio (current_thread), smol, a raw
//! epoll loop, Python asyncio and uvloop.
//!
//! Every runtime is a separate program (the peers: `tests/examples/peer_*.rs` and
//! `tests/bench/peer_asyncio.py`); echo servers are driven by one shared load client
//! (`runtime/examples/echo_load.rs`) in its own process. Each case runs at least five times with
//! the runtimes alternating, and reports the median, the min-max spread, and each runtime's ratio to
//! evloop computed pair by pair within the run. `make bench` writes `docs/benchmarks.md` and its
//! charts (`docs/bench/*.svg`); `--quick` (a two-minute subset) writes `target/bench-quick.md` and
//! prints the same tables.
//!
//! ```text
//! cargo build --release -p evloop --examples
//! cargo build --release -p evloop-tests --no-default-features --features bench-internals --examples
//! target/release/examples/bench [--quick] [--only echo,pipelined,timers,sched,memory,syscalls,apps,fibers,loops] [--runs N] [--out FILE]
//! target/release/examples/bench instr ...   # instructions per operation under callgrind (instr.rs)
//! ```

mod apps;
mod cases;
mod fibers;
mod hyper_apps;
mod instr;
mod json;
// Issue 20: the multi-loop runtime's section.
mod loops;
mod procs;
mod report;
mod svg;
mod table;

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use cases::{EchoConfig, metric};
use procs::{ECHO_RUNTIMES, Env, MICRO_RUNTIMES, PIPELINE_RUNTIMES};
use table::{Row, Table, col};

/// How much of everything to run.
pub struct Plan {
    pub quick: bool,
    pub runs: usize,
    pub echo: Vec<EchoConfig>,
    /// The pipelined streams case (16 requests per write).
    pub pipelined: EchoConfig,
    pub echo_warmup_s: f64,
    /// (tasks, spread in ms) per timer case.
    pub timers: Vec<(usize, u64)>,
    /// Tasks / callbacks / promises for the scheduling cases.
    pub sched_n: usize,
    pub threadsafe_n: usize,
    pub idle_n: usize,
    pub conns_n: usize,
    pub strace_s: f64,
    pub limit: Duration,
}

impl Plan {
    fn full(runs: usize) -> Plan {
        let mut echo = Vec::new();
        for size in [64, 4096] {
            for conns in [1, 50, 1000] {
                let seconds = if size == 64 && conns == 50 { 3.0 } else { 1.0 };
                echo.push(EchoConfig {
                    size,
                    conns,
                    seconds,
                    pipeline: 1,
                });
            }
        }
        // The main configuration first.
        echo.sort_by_key(|c| (c.size != 64 || c.conns != 50, c.size, c.conns));
        Plan {
            quick: false,
            runs,
            echo,
            pipelined: EchoConfig {
                size: 64,
                conns: 50,
                seconds: 2.0,
                pipeline: 16,
            },
            echo_warmup_s: 0.3,
            timers: vec![(100_000, 100), (1_000, 100)],
            sched_n: 1_000_000,
            threadsafe_n: 10_000,
            idle_n: 100_000,
            conns_n: 10_000,
            strace_s: 2.0,
            limit: Duration::from_secs(180),
        }
    }

    fn quick(runs: usize) -> Plan {
        Plan {
            quick: true,
            runs,
            echo: vec![
                EchoConfig {
                    size: 64,
                    conns: 50,
                    seconds: 0.6,
                    pipeline: 1,
                },
                EchoConfig {
                    size: 64,
                    conns: 1,
                    seconds: 0.3,
                    pipeline: 1,
                },
            ],
            pipelined: EchoConfig {
                size: 64,
                conns: 50,
                seconds: 0.5,
                pipeline: 16,
            },
            echo_warmup_s: 0.1,
            timers: vec![(10_000, 100), (1_000, 100)],
            sched_n: 100_000,
            threadsafe_n: 2_000,
            idle_n: 20_000,
            conns_n: 1_000,
            strace_s: 0.5,
            limit: Duration::from_secs(60),
        }
    }
}

/// Everything one run measured.
#[derive(Default)]
pub struct Results {
    pub echo: Vec<(EchoConfig, Table)>,
    pub timers: Vec<((usize, u64), Table)>,
    /// The same sleeping tasks with each deadline fixed at its spawn instead of its first run.
    pub timers_spawn: Vec<((usize, u64), Table)>,
    pub pipelined: Option<Table>,
    pub sched: Option<Table>,
    pub idle_tasks: Option<Table>,
    pub conn_memory: Option<Table>,
    pub syscalls: Option<Table>,
    /// The example applications under wrk and redis-benchmark (bench/apps.rs).
    pub apps: Vec<Table>,
    /// The fibers section (fibers.rs).
    pub fibers: fibers::FiberResults,
    /// The multi-loop runtime's section, as Markdown (loops.rs).
    pub loops: String,
    /// Seconds per section, and what other processes used of the machine meanwhile.
    pub timings: Vec<(String, f64, Option<procs::ForeignLoad>)>,
    /// The same over the whole run.
    pub foreign: Option<procs::ForeignLoad>,
}

struct Args {
    quick: bool,
    only: Vec<String>,
    runs: Option<usize>,
    out: Option<PathBuf>,
}

fn args() -> Result<Args, String> {
    let mut a = Args {
        quick: false,
        only: Vec::new(),
        runs: None,
        out: None,
    };
    let mut it = std::env::args().skip(1);
    while let Some(name) = it.next() {
        match name.as_str() {
            "--quick" => a.quick = true,
            "--only" => {
                let v = it.next().ok_or("--only needs a value")?;
                a.only = v.split(',').map(|s| s.trim().to_string()).collect();
            }
            "--runs" => {
                let v = it.next().ok_or("--runs needs a value")?;
                a.runs = Some(v.parse().map_err(|e| format!("--runs {v}: {e}"))?);
            }
            "--out" => a.out = Some(it.next().ok_or("--out needs a value")?.into()),
            _ => return Err(format!("unknown argument {name}")),
        }
    }
    Ok(a)
}

/// Raises the soft descriptor limit to the hard one: the harness holds 10,000 connections, and the
/// servers it starts inherit the limit (1,000 client connections need more than the usual 1,024).
fn raise_nofile_limit() -> String {
    match evloop_syscalls::nofile_limit() {
        Ok((soft, hard)) => {
            if soft < hard {
                if let Err(e) = evloop_syscalls::set_nofile_limit(hard, hard) {
                    return format!("RLIMIT_NOFILE {soft} (raising it to {hard} failed: {e})");
                }
            }
            format!("RLIMIT_NOFILE {hard}")
        }
        Err(e) => format!("RLIMIT_NOFILE unknown ({e})"),
    }
}

fn section(results: &mut Results, only: &[String], name: &str, f: impl FnOnce(&mut Results)) {
    if !only.is_empty() && !only.iter().any(|o| o == name) {
        return;
    }
    eprintln!("== {name}");
    let started = Instant::now();
    let before = procs::load_sample();
    f(results);
    let took = started.elapsed().as_secs_f64();
    let foreign = procs::load_sample()
        .zip(before)
        .map(|(after, before)| after.since(&before, cores()));
    match foreign {
        Some(l) => eprintln!(
            "== {name}: {took:.1} s (other processes used {:.0}% of the machine, steal {:.0}%)",
            l.other * 100.0,
            l.steal * 100.0
        ),
        None => eprintln!("== {name}: {took:.1} s"),
    }
    results.timings.push((name.to_string(), took, foreign));
}

fn cores() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// One timers table: `tasks` tasks sleeping a random 0-`spread` ms, every runtime alternating.
fn timers_table(env: &Env, plan: &Plan, tasks: usize, spread: u64, from_spawn: bool) -> Table {
    let runs = plan.runs;
    let mut rows: Vec<Row> = MICRO_RUNTIMES
        .iter()
        .map(|r| Row::new(r.label, r.is_evloop()))
        .collect();
    let deadline = if from_spawn { "spawn" } else { "first-run" };
    let args = vec![
        "timers".to_string(),
        "--tasks".into(),
        tasks.to_string(),
        "--spread-ms".into(),
        spread.to_string(),
        "--deadline".into(),
        deadline.into(),
    ];
    cases::alternate(
        env,
        &MICRO_RUNTIMES,
        &mut rows,
        &args,
        &[
            metric("p50", "lateness_p50_ms", 1.0),
            metric("p99", "lateness_p99_ms", 1.0),
            metric("max", "lateness_max_ms", 1.0),
            metric("early", "early", 1.0),
            metric("cpu", "cpu_s", 1e3),
            metric("rss", "peak_rss_kib", 1.0 / 1024.0),
        ],
        runs,
        plan.limit,
    );
    let when = if from_spawn {
        "each deadline fixed when its task is spawned"
    } else {
        "each deadline fixed when its task first runs"
    };
    Table {
        title: format!(
            "{} tasks sleeping a random 0-{spread} ms, {when}",
            table::fmt_num(tasks as f64)
        ),
        rows,
        reference: 0,
        columns: vec![
            col("p50", "lateness p50 ms", true),
            col("p99", "lateness p99 ms", true),
            col("max", "lateness max ms", false),
            col("early", "fired early", false),
            col("cpu", "process CPU ms", true),
            col("rss", "peak RSS MiB", true),
        ],
        notes: vec![format!(
            "`timers --tasks {tasks} --spread-ms {spread} --deadline {deadline}`, {runs} runs per runtime, alternating. \
             Lateness = when the task ran minus its deadline; \"fired early\" counts the tasks that ran before it, per run. CPU time and peak RSS are the peer process's \
             own (CPU in the peers' clock-tick resolution)."
        )],
    }
}

fn run_all(env: &Env, plan: &Plan, only: &[String]) -> Results {
    let mut results = Results::default();
    let start = procs::load_sample();
    let runs = plan.runs;
    section(&mut results, only, "echo", |r| {
        for cfg in &plan.echo {
            eprintln!("-- echo {} ({} s x {runs} runs)", cfg.name(), cfg.seconds);
            let t = cases::echo(env, &ECHO_RUNTIMES, *cfg, runs, plan.echo_warmup_s);
            r.echo.push((*cfg, t));
        }
    });
    section(&mut results, only, "pipelined", |r| {
        let cfg = plan.pipelined;
        eprintln!("-- pipelined echo {} ({} s x {runs} runs)", cfg.name(), cfg.seconds);
        r.pipelined = Some(cases::echo(env, &PIPELINE_RUNTIMES, cfg, runs, plan.echo_warmup_s));
    });
    section(&mut results, only, "timers", |r| {
        for &(tasks, spread) in &plan.timers {
            // The 100,000-task case also runs with each deadline fixed at spawn (what a program
            // that computes deadlines before spawning sees: the first-step burst adds to it).
            let modes: &[bool] = if tasks >= 10_000 { &[false, true] } else { &[false] };
            for &from_spawn in modes {
                let table = timers_table(env, plan, tasks, spread, from_spawn);
                if from_spawn {
                    r.timers_spawn.push(((tasks, spread), table));
                } else {
                    r.timers.push(((tasks, spread), table));
                }
            }
        }
    });
    section(&mut results, only, "sched", |r| {
        let n = plan.sched_n;
        let mut rows: Vec<Row> = MICRO_RUNTIMES
            .iter()
            .map(|r| Row::new(r.label, r.is_evloop()))
            .collect();
        let sub = |name: &str, n: usize| vec![name.to_string(), "--n".into(), n.to_string()];
        // asyncio and uvloop take 14 s (and 800 MiB) per million tasks: they run a tenth of N, and
        // their spawn time is scaled up by 10 (their rates come out the same on either N).
        let python_n = (n / 10).max(1);
        let reduced = |name: &'static str| {
            move |rt: &procs::Runtime| match rt.peer {
                procs::Peer::Python { .. } => (sub(name, python_n), n as f64 / python_n as f64),
                procs::Peer::Bin(_) => (sub(name, n), 1.0),
            }
        };
        cases::alternate_with(
            env,
            &MICRO_RUNTIMES,
            &mut rows,
            &reduced("spawn"),
            &[cases::Metric {
                by_n: true,
                ..metric("spawn_ms", "ms", 1.0)
            }],
            runs,
            plan.limit,
        );
        cases::alternate(
            env,
            &MICRO_RUNTIMES,
            &mut rows,
            &sub("call_soon", n),
            &[metric("call_soon", "per_sec", 1.0)],
            runs,
            plan.limit,
        );
        cases::alternate_with(
            env,
            &MICRO_RUNTIMES,
            &mut rows,
            &reduced("promise_chain"),
            &[metric("promise", "per_sec", 1.0)],
            runs,
            plan.limit,
        );
        cases::alternate(
            env,
            &MICRO_RUNTIMES,
            &mut rows,
            &sub("threadsafe", plan.threadsafe_n),
            &[metric("ts_p50", "rtt_p50_us", 1.0), metric("ts_p99", "rtt_p99_us", 1.0)],
            runs,
            plan.limit,
        );
        let nn = table::fmt_num(n as f64);
        r.sched = Some(Table {
            title: "Scheduling".into(),
            rows,
            reference: 0,
            columns: vec![
                col("spawn_ms", &format!("spawn+run+join {nn} tasks, ms"), true),
                col("call_soon", "call_soon callbacks/s", true),
                col("promise", "promise set/await per s", true),
                col("ts_p50", "call_soon_threadsafe RTT p50 µs", true),
                col("ts_p99", "RTT p99 µs", false),
            ],
            notes: vec![
                format!(
                    "`spawn --n {n}`, `call_soon --n {n}`, `promise_chain --n {n}`, `threadsafe --n {}`; {runs} runs per runtime, alternating.",
                    plan.threadsafe_n
                ),
                format!(
                    "asyncio and uvloop run `spawn` and `promise_chain` with N = {} (a million tasks take them about 14 s \
                     and 800 MiB each run): their spawn time is the measured time × {}, their promise rate is as measured.",
                    table::fmt_num(python_n as f64),
                    table::fmt_num(n as f64 / python_n as f64)
                ),
            ],
        });
    });
    section(&mut results, only, "memory", |r| {
        let mut rows: Vec<Row> = MICRO_RUNTIMES
            .iter()
            .map(|r| Row::new(r.label, r.is_evloop()))
            .collect();
        let args = vec!["idle_tasks".to_string(), "--n".into(), plan.idle_n.to_string()];
        cases::alternate(
            env,
            &MICRO_RUNTIMES,
            &mut rows,
            &args,
            &[
                metric("bytes", "bytes_per_task", 1.0),
                metric("future", "future_bytes", 1.0),
            ],
            runs,
            plan.limit,
        );
        // The peers report growth per task including the future; the target is what lies beyond it.
        for row in rows.iter_mut() {
            let (bytes, future) = (
                row.cell_mut("bytes", runs).clone(),
                row.cell_mut("future", runs).clone(),
            );
            let beyond = row.cell_mut("beyond", runs);
            beyond.na = bytes.na.clone();
            beyond.failures = bytes.failures.clone();
            for i in 0..runs {
                beyond.runs[i] = match (bytes.runs[i], future.runs[i]) {
                    (Some(b), Some(f)) => Some(b - f),
                    _ => None,
                };
            }
        }
        r.idle_tasks = Some(Table {
            title: format!("Memory per idle task ({} tasks)", table::fmt_num(plan.idle_n as f64)),
            rows,
            reference: 0,
            columns: vec![
                col("beyond", "RSS bytes / task beyond its future", true),
                col("bytes", "RSS bytes / task", true),
                col("future", "future bytes", false),
            ],
            notes: vec![format!(
                "`idle_tasks --n {}`: RSS growth per task parked forever (a second batch, after a first one warmed the \
                 allocator), and that minus the size of the task's future; {runs} runs, alternating.",
                plan.idle_n
            )],
        });
        eprintln!("-- idle connections");
        r.conn_memory = Some(cases::conn_memory(env, &ECHO_RUNTIMES, plan.conns_n, runs));
    });
    section(&mut results, only, "syscalls", |r| {
        r.syscalls = Some(cases::syscalls(env, &ECHO_RUNTIMES, plan.strace_s));
    });
    section(&mut results, only, "apps", |r| {
        r.apps = apps::apps(env, runs, plan.quick);
    });
    section(&mut results, only, "fibers", |r| {
        r.fibers = fibers::run(env, plan);
    });
    section(&mut results, only, "loops", |r| {
        r.loops = loops::run(env, runs, plan.quick);
    });
    results.foreign = procs::load_sample()
        .zip(start)
        .map(|(end, start)| end.since(&start, cores()));
    results
}

fn main() -> ExitCode {
    let argv: Vec<String> = std::env::args().skip(1).collect();
    if argv.first().is_some_and(|a| a == "instr") {
        return instr::main(&argv[1..]);
    }
    let a = match args() {
        Ok(a) => a,
        Err(e) => {
            eprintln!(
                "bench: {e}\nusage: bench [--quick] [--only echo,pipelined,timers,sched,memory,syscalls,apps,fibers,loops] [--runs N] [--out FILE]"
            );
            return ExitCode::from(2);
        }
    };
    let started = Instant::now();
    let runs = a.runs.unwrap_or(5).max(1);
    let plan = if a.quick { Plan::quick(runs) } else { Plan::full(runs) };
    let env = Env::discover();
    let limit_note = raise_nofile_limit();
    let machine = report::Machine::probe(&env, &limit_note);
    eprintln!("{}", machine.line());
    if !env.echo_load().exists() {
        eprintln!(
            "bench: {} is missing: cargo build --release -p evloop --examples",
            env.echo_load().display()
        );
        return ExitCode::FAILURE;
    }
    let results = run_all(&env, &plan, &a.only);
    let out = a.out.unwrap_or_else(|| {
        if plan.quick {
            env.root.join("target/bench-quick.md")
        } else {
            env.root.join("docs/benchmarks.md")
        }
    });
    let took = started.elapsed();
    match report::write(&env, &plan, &machine, &results, &out, took) {
        Ok(text) => {
            println!("{text}");
            eprintln!("bench: wrote {} ({:.0} s in all)", out.display(), took.as_secs_f64());
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("bench: cannot write {}: {e}", out.display());
            ExitCode::FAILURE
        }
    }
}
