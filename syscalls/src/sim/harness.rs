//! The driver behind `#[evloop::test(simulate)]`: a test body run under many seeds, with
//! replay, a determinism check and shrinking.
//!
//! For each seed the body runs on a fresh kernel (entered on the test's thread). A run fails
//! when it panics, returns an error, or leaves a simulated thread it spawned running (its next
//! steps would race with the end of the test). The first seed also runs twice, and the two
//! traces must be equal (otherwise something outside the simulation, a real thread or a real clock, drives
//! the test, and its seeds would not replay). On the first failure the driver shrinks the
//! run's tape (see [`shrink`]) to a simpler schedule that still fails, prints the seed, the
//! shrunk tape and the end of its trace to stderr, and fails the test with the original
//! failure (its panic payload, so `#[should_panic(expected = ...)]` still matches).
//!
//! Environment: `EVLOOP_SEED=n` runs seed `n` alone (the replay of a reported failure);
//! `EVLOOP_SEEDS=n` changes how many seeds run; `EVLOOP_TAPE='...'` replays a (shrunk) tape
//! under `EVLOOP_SEED`'s seed (0 by default); `EVLOOP_SIM_TRACE=n` prints the last `n` trace
//! lines of a failure (100 by default).

use std::any::Any;
use std::cell::Cell;
use std::fmt::Debug;
use std::panic::{self, AssertUnwindSafe};
use std::sync::Once;

use crate::sim::choice::{Tape, shrink};
use crate::sim::config::Config;
use crate::sim::faults::Faults;
use crate::sim::kernel::Kernel;

/// What a simulated test returns: `()`, or a `Result` whose `Err` is a failure.
#[doc(hidden)]
pub trait Outcome {
    /// `None` when the run passed, else what went wrong.
    fn failure(&self) -> Option<String>;
}

impl Outcome for () {
    fn failure(&self) -> Option<String> {
        None
    }
}

impl<T, E: Debug> Outcome for Result<T, E> {
    fn failure(&self) -> Option<String> {
        self.as_ref().err().map(|e| format!("{e:?}"))
    }
}

/// The options of `#[evloop::test(simulate(...))]`.
#[doc(hidden)]
#[derive(Clone, Copy, Debug)]
pub struct TestOptions {
    /// The test's name (for the report).
    pub name: &'static str,
    /// How many seeds to run (0, 1, ..., seeds - 1).
    pub seeds: u64,
    /// Whether faults are drawn from the seed ([`Faults::swarm`]); otherwise only orderings,
    /// latencies and interleavings vary.
    pub faults: bool,
}

thread_local! {
    /// Set while the driver replays a failure to shrink it: its panics are not printed.
    static QUIET: Cell<bool> = const { Cell::new(false) };
}

/// A panic hook that stays silent on a thread that is shrinking (installed once, in front of
/// whatever hook was there).
fn install_quiet_hook() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let previous = panic::take_hook();
        panic::set_hook(Box::new(move |info| {
            if !QUIET.with(Cell::get) {
                previous(info);
            }
        }));
    });
}

/// How a run ended.
enum Ended<T> {
    Passed(T),
    Failed(Option<T>, Option<Box<dyn Any + Send>>, String),
}

fn env_u64(name: &str) -> Option<u64> {
    std::env::var(name).ok().and_then(|v| v.trim().parse().ok())
}

fn config(opts: &TestOptions) -> Config {
    let faults = if opts.faults { Faults::swarm() } else { Faults::none() };
    Config::default().faults(faults)
}

fn run_once<T: Outcome>(seed: u64, cfg: Config, test: &impl Fn() -> T) -> (Ended<T>, Kernel) {
    let kernel = Kernel::with_config(seed, cfg);
    let result = {
        let _on = kernel.enter();
        panic::catch_unwind(AssertUnwindSafe(test))
    };
    let left = kernel.threads_left_behind();
    let ended = match result {
        Ok(_) if left > 0 => Ended::Failed(
            None,
            None,
            format!(
                "the test left {left} simulated thread(s) running: join every thread it spawns \
                 (JoinHandle::join), or what they do next races with the test's end"
            ),
        ),
        Ok(v) => match v.failure() {
            None => Ended::Passed(v),
            Some(why) => Ended::Failed(Some(v), None, why),
        },
        Err(payload) => {
            let why = payload
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| payload.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "a panic".to_string());
            Ended::Failed(None, Some(payload), format!("panicked: {why}"))
        }
    };
    (ended, kernel)
}

/// Runs `test` under the seeds `opts` asks for (see the module docs). Not for direct use:
/// `#[evloop::test(simulate)]` expands to it.
#[doc(hidden)]
pub fn __run_test<T: Outcome>(opts: TestOptions, test: impl Fn() -> T) -> T {
    install_quiet_hook();
    let one_seed = env_u64("EVLOOP_SEED");
    let tape: Option<Tape> = std::env::var("EVLOOP_TAPE").ok().and_then(|t| t.parse().ok());
    let seeds: Vec<u64> = match (one_seed, &tape) {
        (Some(s), _) => vec![s],
        (None, Some(_)) => vec![0],
        (None, None) => (0..env_u64("EVLOOP_SEEDS").unwrap_or(opts.seeds).max(1)).collect(),
    };
    let trace_lines = env_u64("EVLOOP_SIM_TRACE").unwrap_or(100) as usize;
    let mut last = None;
    for (i, &seed) in seeds.iter().enumerate() {
        let mut cfg = config(&opts);
        if let Some(t) = &tape {
            cfg = cfg.replay(t.clone());
        }
        let (ended, kernel) = run_once(seed, cfg.clone(), &test);
        // The determinism check, on the first seed that passes its first run (a failed run
        // is reported below; one that left threads running cannot be compared).
        if i == 0 && matches!(ended, Ended::Passed(_)) {
            let (_, again) = run_once(seed, cfg.clone(), &test);
            if (again.digest(), again.records()) != (kernel.digest(), kernel.records()) {
                panic!(
                    "{}: seed {seed} ran twice and took two different paths: something outside the \
                     simulation (a thread that did not enter the kernel, the executor, a real clock, a \
                     random number, a child process started meanwhile by another test of this binary) \
                     drives the test, so its seeds do not replay.\nfirst run, last lines:\n{}\
                     \nsecond run, last lines:\n{}",
                    opts.name,
                    kernel.trace_tail(trace_lines),
                    again.trace_tail(trace_lines)
                );
            }
        }
        match ended {
            Ended::Passed(v) => last = Some(v),
            Ended::Failed(value, payload, why) => {
                report(&opts, seed, &cfg, &kernel, &why, trace_lines, &test);
                if let Some(p) = payload {
                    panic::resume_unwind(p);
                }
                match value {
                    Some(v) => return v,
                    None => panic!("{}: seed {seed}: {why}", opts.name),
                }
            }
        }
    }
    match last {
        Some(v) => v,
        None => panic!("{}: no seed ran", opts.name),
    }
}

/// Shrinks a failing run and prints what it takes to replay it.
fn report<T: Outcome>(
    opts: &TestOptions,
    seed: u64,
    cfg: &Config,
    kernel: &Kernel,
    why: &str,
    trace_lines: usize,
    test: &impl Fn() -> T,
) {
    let tape = kernel.tape();
    QUIET.with(|q| q.set(true));
    let small = shrink(&tape, 200, |candidate| {
        let (ended, k) = run_once(seed, cfg.clone().replay(candidate.clone()), test);
        matches!(ended, Ended::Failed(..)).then(|| k.tape())
    });
    let (shrunk_ended, shrunk_kernel) = run_once(seed, cfg.clone().replay(small.clone()), test);
    QUIET.with(|q| q.set(false));
    let shrunk_why = match &shrunk_ended {
        Ended::Failed(_, _, w) => w.clone(),
        Ended::Passed(_) => "(the shrunk tape passed: the failure depends on something outside the seed)".into(),
    };
    eprintln!(
        "\n{name}: failed with seed {seed}: {why}\n\
         replay it: EVLOOP_SEED={seed} cargo test {short}\n\
         its schedule shrank from {} decisions ({} not the simplest, {} faults) to {} ({} not the simplest, \
         {} faults), which fails with: {shrunk_why}\n\
         replay the shrunk one: EVLOOP_SEED={seed} EVLOOP_TAPE='{small}' cargo test {short}\n\
         trace of the shrunk run (last {trace_lines} lines; EVLOOP_SIM_TRACE=n for more):\n{}",
        tape.len(),
        tape.nonzero(),
        tape.faults(),
        small.len(),
        small.nonzero(),
        small.faults(),
        shrunk_kernel.trace_tail(trace_lines),
        name = opts.name,
        short = opts.name.rsplit("::").next().unwrap_or(opts.name),
    );
}
