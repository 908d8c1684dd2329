//! hyper's hello world on evloop (`runtime/compat/hyper/examples/hyper_hello.rs`) against the
//! same code on hyper + tokio's current-thread runtime (`hyper_hello_tokio.rs`, which differs
//! in its `use` lines only), under `wrk` (HTTP/1.1, 50 connections) and `h2load` (HTTP/2 with
//! prior knowledge, 50 connections of 10 streams each). The comparison is bench/apps.rs's: the
//! two alternate within each run, a fresh server per measurement, and the figure that counts is
//! the server's CPU time per request. `make bench-build` builds both servers.

use std::net::SocketAddr;
use std::process::Command;
use std::time::Duration;

use crate::apps::{Side, compare, run_tool, wrk};
use crate::procs::{Env, tail};
use crate::table::Table;

const HTTP1: [Side; 2] = [
    Side {
        label: "hyper on evloop",
        bin: "hyper_hello",
        is_evloop: true,
        args: &[],
    },
    Side {
        label: "hyper on tokio current_thread (same code)",
        bin: "hyper_hello_tokio",
        is_evloop: false,
        args: &[],
    },
];

const HTTP2: [Side; 2] = [
    Side {
        label: "hyper on evloop",
        bin: "hyper_hello",
        is_evloop: true,
        args: &["--http2"],
    },
    Side {
        label: "hyper on tokio current_thread (same code)",
        bin: "hyper_hello_tokio",
        is_evloop: false,
        args: &["--http2"],
    },
];

/// `h2load -n N -c 50 -m 10`, parsed: requests that succeeded, requests/s (no p50: h2load
/// reports mean and spread only).
fn h2load(addr: SocketAddr, n: usize) -> Result<(f64, f64, Option<f64>), String> {
    let mut cmd = Command::new("h2load");
    cmd.args(["-n", &n.to_string(), "-c", "50", "-m", "10"])
        .arg(format!("http://{addr}/"));
    let out = run_tool(cmd, Duration::from_secs(120))?;
    let mut per_sec = None;
    let mut succeeded = None;
    for line in out.lines() {
        let t = line.trim();
        if let Some(rest) = t.strip_prefix("finished in ") {
            // "finished in 1.02s, 98034.31 req/s, 3.27MB/s"
            per_sec = rest
                .split(", ")
                .find_map(|f| f.strip_suffix(" req/s"))
                .and_then(|v| v.parse().ok());
        } else if let Some(rest) = t.strip_prefix("requests: ") {
            // "requests: 100000 total, 100000 started, 100000 done, 100000 succeeded, 0 failed, ..."
            succeeded = rest
                .split(", ")
                .find_map(|f| f.strip_suffix(" succeeded"))
                .and_then(|v| v.parse::<f64>().ok());
        }
    }
    match (succeeded, per_sec) {
        (Some(ok), Some(rate)) if ok as usize == n => Ok((ok, rate, None)),
        (Some(ok), Some(_)) => Err(format!("h2load: only {ok} of {n} requests succeeded")),
        _ => Err(format!("cannot read h2load's output: {}", tail(&out, 200))),
    }
}

/// The two tables: HTTP/1.1 under wrk, HTTP/2 under h2load.
pub fn hyper(env: &Env, runs: usize, quick: bool) -> Vec<Table> {
    let seconds = if quick { 1.0 } else { 3.0 };
    let n = if quick { 50_000 } else { 300_000 };
    eprintln!("-- hyper hello world under wrk");
    let http1 = compare(
        env,
        "hyper hello world, HTTP/1.1 under wrk (50 connections)".into(),
        &HTTP1,
        "wrk",
        runs,
        &|addr| wrk(addr, seconds),
        format!(
            "`wrk -t1 -c50 -d{}s --latency http://ADDR/` against `hyper_hello` (hyper 1.x on evloop through evloop-hyper) and \
             `hyper_hello_tokio` (the same code on hyper-util's tokio glue, tokio current_thread), {runs} runs, alternating, \
             after a warm-up run; both with their runtime's hyper timer set; CPU = the server's scheduler time / requests.",
            seconds as u64
        ),
    );
    eprintln!("-- hyper hello world under h2load");
    let http2 = compare(
        env,
        "hyper hello world, HTTP/2 under h2load (50 connections, 10 streams each)".into(),
        &HTTP2,
        "h2load",
        runs,
        &|addr| h2load(addr, n),
        format!(
            "`h2load -n {n} -c 50 -m 10 http://ADDR/` (HTTP/2 with prior knowledge) against `hyper_hello --http2` and \
             `hyper_hello_tokio --http2`, {runs} runs, alternating, after a warm-up run; CPU = the server's scheduler \
             time / requests."
        ),
    );
    vec![http1, http2]
}
