// Standalone binary: it reruns the book's programs under strace; `make book-traces` and valgrind.sh name it.
//! The book's traces are golden: every trace or program output quoted in `docs/*.md` is rerun
//! and compared, so a change that alters what a chapter shows fails `make test`.
//!
//! How it works. Each quoted block (a fence with no language, or `text` / `console`) has a
//! marker comment on the line right above it, invisible when the Markdown is rendered:
//!
//! ```text
//! <!-- trace: seed002_wait -->                       run with EVLOOP_TRACE=1, stdout and stderr merged
//! <!-- output: deadlock -->                          the same without trace mode
//! <!-- trace: seed001_echo_sock --once | strace: -e trace=accept4,recvfrom | client: echo_load --addr {addr} --lines 2 -->
//! <!-- measured: make bench (numbers vary by machine) -->   not a trace: exempt, and says why
//! <!-- illustration -->                              a hand-drawn figure: exempt
//! ```
//!
//! The first field names a program, a `[[bin]]` of this crate (tests/Cargo.toml) whose source is
//! the example file in `runtime/examples/`, and its arguments. Optional fields after ` | `:
//! `strace: ARGS` runs it under strace with those arguments (when strace is missing or cannot
//! trace here, the run goes without it and the block's strace lines are left out of the
//! comparison); `client: PROGRAM ARGS` starts that program once the first one prints
//! `listening on ADDR`, with `{addr}` replaced (`after: TEXT` holds it back until the output
//! contains TEXT, e.g. until the server is parked in `accept`); `mask: PATTERN` hides one more varying value
//! (`#` stands for a number, e.g. `mask: epoll_pwait2=#`). Programs run from the workspace root
//! with a pipe on stdin that stays open while they run.
//!
//! Both sides are normalised before they are compared, as narrowly as possible so that a real
//! drift (a phase reordered, a wake that moved, a count that changed) still shows: durations
//! after `timeout=` (except `0ns`), `late`, `at t=` and before `busy`; pids; ports; addresses
//! (`0x` and 8 or more hex digits); strace's non-zero `timespec`s, environment sizes and a new
//! thread's stack size; strace's column padding. A line that is just `...` (optionally followed
//! by a comment in parentheses) stands for any number of lines; the `$ command` lines at the top
//! of a block are not compared. Each program runs up to
//! three times until it matches, because a shared machine can delay a timer past a neighbour's.
//!
//! `make book-traces` (this test with `BOOK_TRACES=update`) rewrites every block that no longer
//! matches with the output of a fresh run; a block with `...` keeps its shape, each part between
//! two `...` lines replaced by the output between the same first and last lines.
//! `BOOK_TRACES_ONLY=03` limits either mode to the files whose name contains `03`.

use std::collections::BTreeMap;
use std::fs;
use std::io::Read;
use std::os::fd::AsFd;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Mutex;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use evloop_tests::workspace_root;

/// How long one run of one program may take before it is killed and counted as a failure.
const RUN_LIMIT: Duration = Duration::from_secs(40);
/// Runs per program before a mismatch is a failure.
const ATTEMPTS: usize = 3;
/// Programs run at the same time (most of them sleep; the machine has two cores).
const PARALLEL: usize = 3;

/// The programs the book runs: `[[bin]]` targets of this crate, built by cargo before the test.
/// Adding one: a `[[bin]]` entry in tests/Cargo.toml (path = the example file) and a line here.
macro_rules! book_programs {
    ($($name:ident),* $(,)?) => {
        const PROGRAMS: &[(&str, &str)] = &[$((stringify!($name), env!(concat!("CARGO_BIN_EXE_", stringify!($name))))),*];
    };
}

book_programs!(
    seed000_run,
    seed002_wait,
    seed002_await_task,
    seed002_await_coro,
    seed002_await_future,
    book_loop,
    seed001_echo_sock,
    seed001_echo_protocol,
    seed001_echo_streams,
    echo_load,
    book_reactor,
    book_cancel,
    book_signals,
    book_processes,
    graceful_shutdown,
    pipeline_ls_sort,
    tiny_loop,
    book_timer_heap,
    book_level_edge,
    book_handles,
    book_coroutines,
    book_task_cell,
    book_task_tree,
    fiber_trace,
    book_simulation,
    book_loops,
);

fn program_path(name: &str) -> Option<&'static str> {
    PROGRAMS.iter().find(|(n, _)| *n == name).map(|(_, p)| *p)
}

// ------------------------------------------------------------------------------------------------
// Markers and blocks
// ------------------------------------------------------------------------------------------------

#[derive(Clone, Debug, PartialEq, Eq)]
enum Kind {
    /// Run with `EVLOOP_TRACE=1`.
    Trace,
    /// Run without trace mode.
    Output,
    /// Exempt: a measurement (`make bench`, `make demo`), with the reason in the marker.
    Measured,
    /// Exempt: a hand-drawn figure.
    Illustration,
}

#[derive(Clone, Debug)]
struct Marker {
    kind: Kind,
    program: String,
    args: Vec<String>,
    strace: Option<Vec<String>>,
    client: Option<Vec<String>>,
    /// The client starts once the output contains this (default `listening on `).
    client_after: Option<String>,
    masks: Vec<String>,
}

impl Marker {
    /// The key under which runs are shared: blocks with the same marker quote the same run.
    fn key(&self) -> String {
        format!(
            "{:?} {} {:?} {:?} {:?}",
            self.kind, self.program, self.args, self.strace, self.client
        )
    }

    fn runs(&self) -> bool {
        matches!(self.kind, Kind::Trace | Kind::Output)
    }
}

/// Splits on whitespace, keeping 'single-quoted' words together.
fn split_words(s: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut quoted = false;
    let mut any = false;
    for c in s.chars() {
        match c {
            '\'' => {
                quoted = !quoted;
                any = true;
            }
            c if c.is_whitespace() && !quoted => {
                if any {
                    out.push(std::mem::take(&mut cur));
                    any = false;
                }
            }
            c => {
                cur.push(c);
                any = true;
            }
        }
    }
    if any {
        out.push(cur);
    }
    out
}

/// Parses `<!-- KIND: ... -->`; `None` if the line is not a marker, `Err` if it is a bad one.
fn parse_marker(line: &str) -> Option<Result<Marker, String>> {
    let inner = line.trim().strip_prefix("<!--")?.strip_suffix("-->")?.trim();
    let (head, rest) = match inner.split_once(':') {
        Some((h, r)) => (h.trim(), r.trim()),
        None => (inner, ""),
    };
    let kind = match head {
        "trace" => Kind::Trace,
        "output" => Kind::Output,
        "measured" => Kind::Measured,
        "illustration" => Kind::Illustration,
        _ => return None,
    };
    let mut m = Marker {
        kind: kind.clone(),
        program: String::new(),
        args: Vec::new(),
        strace: None,
        client: None,
        client_after: None,
        masks: Vec::new(),
    };
    if !m.runs() {
        if kind == Kind::Measured && rest.is_empty() {
            return Some(Err("a `measured:` marker says what measured it".into()));
        }
        return Some(Ok(m));
    }
    let mut fields = rest.split(" | ");
    let mut words = split_words(fields.next().unwrap_or(""));
    if words.is_empty() {
        return Some(Err("the marker names no program".into()));
    }
    m.program = words.remove(0);
    m.args = words;
    for field in fields {
        let Some((key, value)) = field.split_once(':') else {
            return Some(Err(format!("field {field:?} is not `key: value`")));
        };
        match key.trim() {
            "strace" => m.strace = Some(split_words(value)),
            "client" => m.client = Some(split_words(value)),
            "after" => m.client_after = Some(value.trim().to_string()),
            "mask" => m.masks.push(value.trim().to_string()),
            other => return Some(Err(format!("unknown field {other:?}"))),
        }
    }
    if program_path(&m.program).is_none() {
        return Some(Err(format!(
            "{} is not a book program: add it as a [[bin]] in tests/Cargo.toml and to book_programs! in {}",
            m.program,
            file!()
        )));
    }
    if let Some(client) = &m.client {
        match client.first() {
            Some(c) if program_path(c).is_some() => {}
            _ => return Some(Err(format!("client {client:?} is not a book program"))),
        }
    }
    Some(Ok(m))
}

#[derive(Clone, Debug)]
struct Block {
    file: PathBuf,
    /// 0-based line of the opening fence.
    open: usize,
    /// 0-based line of the closing fence.
    close: usize,
    marker: Marker,
    /// The lines between the fences.
    body: Vec<String>,
}

impl Block {
    fn place(&self) -> String {
        let rel = self.file.strip_prefix(workspace_root()).unwrap_or(&self.file);
        format!("{}:{}", rel.display(), self.open + 1)
    }
}

/// A fence whose contents are output, not code: no language, `text` or `console`.
fn is_output_fence(info: &str) -> bool {
    matches!(info.trim(), "" | "text" | "console")
}

/// Every quoted output block of one Markdown file, or the problems found (a block without a
/// marker, a marker without a block, a bad marker).
fn scan(file: &Path, text: &str) -> (Vec<Block>, Vec<String>) {
    let lines: Vec<&str> = text.lines().collect();
    let rel = file
        .strip_prefix(workspace_root())
        .unwrap_or(file)
        .display()
        .to_string();
    let mut blocks = Vec::new();
    let mut problems = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i];
        if let Some(parsed) = parse_marker(line) {
            let next = lines.get(i + 1).copied().unwrap_or("");
            match parsed {
                Err(e) => problems.push(format!("{rel}:{}: bad marker: {e}", i + 1)),
                Ok(_) if !next.starts_with("```") || !is_output_fence(&next[3..]) => problems.push(format!(
                    "{rel}:{}: a marker must sit right above a ```text block",
                    i + 1
                )),
                Ok(_) => {}
            }
        }
        if let Some(info) = line.strip_prefix("```") {
            let close = (i + 1..lines.len()).find(|&j| lines[j].trim_end() == "```");
            let Some(close) = close else {
                problems.push(format!("{rel}:{}: unclosed fence", i + 1));
                break;
            };
            if is_output_fence(info) {
                let marker = i.checked_sub(1).and_then(|p| parse_marker(lines[p]));
                match marker {
                    Some(Ok(marker)) => blocks.push(Block {
                        file: file.to_path_buf(),
                        open: i,
                        close,
                        marker,
                        body: lines[i + 1..close].iter().map(|s| s.to_string()).collect(),
                    }),
                    Some(Err(_)) => {} // reported above
                    None => problems.push(format!(
                        "{rel}:{}: a quoted output block without a marker: name the program that prints it \
                         (<!-- trace: PROGRAM ARGS -->) or say why it is exempt (<!-- measured: ... -->, \
                         <!-- illustration -->)",
                        i + 1
                    )),
                }
            }
            i = close + 1;
            continue;
        }
        i += 1;
    }
    (blocks, problems)
}

fn book_files() -> Vec<PathBuf> {
    // `BOOK_TRACES_ONLY=03` checks (or regenerates) only the files whose name contains `03`.
    let only = std::env::var("BOOK_TRACES_ONLY").unwrap_or_default();
    let mut out: Vec<PathBuf> = fs::read_dir(workspace_root().join("docs"))
        .expect("docs/")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .filter(|p| {
            p.file_name()
                .is_some_and(|n| n.to_string_lossy().contains(only.as_str()))
        })
        .collect();
    out.sort();
    out
}

// ------------------------------------------------------------------------------------------------
// Normalisation and matching
// ------------------------------------------------------------------------------------------------

/// Length of a duration as trace mode prints it (`17.7us`, `499.989ms`, `2s`, `0ns`).
fn duration_len(s: &str) -> Option<usize> {
    let digits = number_len(s)?;
    let rest = &s[digits..];
    for unit in ["ns", "us", "µs", "ms", "s"] {
        if rest.starts_with(unit) {
            return Some(digits + unit.len());
        }
    }
    None
}

/// Length of `123` or `123.45` at the start of `s`.
fn number_len(s: &str) -> Option<usize> {
    let b = s.as_bytes();
    let mut n = b.iter().take_while(|c| c.is_ascii_digit()).count();
    if n == 0 {
        return None;
    }
    if b.get(n) == Some(&b'.') && b.get(n + 1).is_some_and(|c| c.is_ascii_digit()) {
        n += 1 + b[n + 1..].iter().take_while(|c| c.is_ascii_digit()).count();
    }
    Some(n)
}

fn digits_len(s: &str) -> Option<usize> {
    let n = s.bytes().take_while(|c| c.is_ascii_digit()).count();
    (n > 0).then_some(n)
}

/// Replaces the token `len` finds right after each `prefix` with `with`, unless `keep` says
/// the token stays (and unless `followed_by` is given and does not follow it).
fn replace_after(
    line: &str,
    prefix: &str,
    len: fn(&str) -> Option<usize>,
    with: &str,
    keep: &[&str],
    followed_by: Option<&str>,
) -> String {
    let mut out = String::with_capacity(line.len());
    let mut rest = line;
    while let Some(at) = rest.find(prefix) {
        let start = at + prefix.len();
        out.push_str(&rest[..start]);
        rest = &rest[start..];
        if let Some(n) = len(rest) {
            let token = &rest[..n];
            let follows = followed_by.is_none_or(|f| rest[n..].starts_with(f));
            if follows && !keep.contains(&token) {
                out.push_str(with);
                rest = &rest[n..];
            }
        }
    }
    out.push_str(rest);
    out
}

fn hex_address_len(s: &str) -> Option<usize> {
    let n = s.bytes().take_while(|c| c.is_ascii_hexdigit()).count();
    (n >= 8).then_some(n)
}

fn hex_len(s: &str) -> Option<usize> {
    let n = s.bytes().take_while(|c| c.is_ascii_hexdigit()).count();
    (n > 0).then_some(n)
}

fn pid_len(s: &str) -> Option<usize> {
    let spaces = s.bytes().take_while(|&c| c == b' ').count();
    digits_len(&s[spaces..]).map(|n| spaces + n)
}

/// One line with what varies between runs replaced by placeholders.
fn normalize(line: &str, masks: &[String]) -> String {
    // A bin of the tests crate whose source is runtime/examples/x.rs reports its location as
    // tests/../runtime/examples/x.rs; `cargo run --example` says runtime/examples/x.rs.
    let mut s = line.replace("tests/../", "");
    if is_strace_line(&s) {
        // strace pads the result to a column, so a longer pid or path shifts it.
        s = s.split(' ').filter(|w| !w.is_empty()).collect::<Vec<_>>().join(" ");
    }
    s = replace_after(&s, "timeout=", duration_len, "<dur>", &["0ns"], None);
    s = replace_after(&s, "late ", duration_len, "<dur>", &[], None);
    s = replace_after(&s, " in ", duration_len, "<dur>", &[], Some(" busy"));
    s = replace_after(&s, "at t=", duration_len, "<t>", &[], None);
    for p in [
        "pid ",
        "pid=",
        "[pid",
        "Process ",
        "pidfd_open(",
        "kill(",
        "parent_tid=[",
    ] {
        s = replace_after(&s, p, pid_len, "<pid>", &[], None);
    }
    if s.contains("clone(") || s.contains("clone3(") || s.contains("=> {parent_tid") {
        s = replace_after(&s, ") = ", digits_len, "<pid>", &[], None);
    }
    for p in ["127.0.0.1:", "htons("] {
        s = replace_after(&s, p, digits_len, "<port>", &[], None);
    }
    s = replace_after(&s, "0x", hex_address_len, "<addr>", &[], None);
    // A new thread's stack size depends on the size of the binary's thread-local data.
    s = replace_after(&s, "stack_size=0x", hex_len, "<size>", &[], None);
    if !s.contains("{tv_sec=0, tv_nsec=0}") {
        s = replace_after(&s, "tv_sec=", digits_len, "<s>", &[], None);
        s = replace_after(&s, "tv_nsec=", digits_len, "<ns>", &[], None);
    }
    s = replace_after(&s, "/* ", digits_len, "<n>", &[], Some(" vars */"));
    for m in masks {
        s = apply_mask(&s, m);
    }
    s.trim_end().to_string()
}

/// Replaces the numbers that `#` stands for in each place where `pattern` matches.
fn apply_mask(line: &str, pattern: &str) -> String {
    let parts: Vec<&str> = pattern.split('#').collect();
    let mut out = String::with_capacity(line.len());
    let mut i = 0;
    while i < line.len() {
        if let Some((replaced, end)) = mask_at(line, i, &parts) {
            if end > i {
                out.push_str(&replaced);
                i = end;
                continue;
            }
        }
        let c = line[i..].chars().next().expect("inside the line");
        out.push(c);
        i += c.len_utf8();
    }
    out
}

/// The pattern matched at byte `at` of `line`: its text with the numbers replaced, and where
/// the match ends.
fn mask_at(line: &str, at: usize, parts: &[&str]) -> Option<(String, usize)> {
    let mut pos = at;
    let mut text = String::new();
    for (k, part) in parts.iter().enumerate() {
        if k > 0 {
            let rest = &line[pos..];
            let n = duration_len(rest).or_else(|| number_len(rest))?;
            text.push_str("<n>");
            pos += n;
        }
        if !line[pos..].starts_with(part) {
            return None;
        }
        text.push_str(part);
        pos += part.len();
    }
    Some((text, pos))
}

/// `...` alone, or followed by a comment in parentheses: any number of lines.
fn is_elision(line: &str) -> bool {
    let t = line.trim();
    t == "..."
        || t.strip_prefix("...")
            .is_some_and(|r| r.starts_with(char::is_whitespace) && r.trim().starts_with('('))
}

/// A line strace wrote (a system call, a signal, an exit, an attach), not the program.
fn is_strace_line(line: &str) -> bool {
    let mut t = line.trim_start();
    if let Some(r) = t.strip_prefix("[pid") {
        t = r.split_once(']').map_or(r, |(_, after)| after).trim_start();
    }
    if t.starts_with("--- SIG")
        || t.starts_with("+++ ")
        || t.starts_with("strace: ")
        || t.starts_with("<... ")
        || t.starts_with("=> {")
    {
        return true;
    }
    let name = t
        .bytes()
        .take_while(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'_')
        .count();
    let returns = t.rfind(')').is_some_and(|i| t[i + 1..].trim_start().starts_with("= "));
    name > 0
        && t[name..].starts_with('(')
        && (returns || t.ends_with("= ?") || t.ends_with("<unfinished ...>") || t.contains("attached"))
}

/// The lines of a block that are compared: without the leading `$ command` lines.
fn compared_lines(body: &[String]) -> &[String] {
    let mut i = 0;
    let mut continued = false;
    while i < body.len() {
        let l = &body[i];
        if l.starts_with("$ ") || continued {
            continued = l.trim_end().ends_with('\\');
            i += 1;
        } else {
            break;
        }
    }
    &body[i..]
}

/// The parts of an expected block between `...` lines, and whether it starts / ends with one.
struct Pattern {
    segments: Vec<Vec<String>>,
    open_start: bool,
    open_end: bool,
}

fn pattern(expected: &[String], masks: &[String], without_strace: bool) -> Pattern {
    let mut segments = vec![Vec::new()];
    let mut open_start = false;
    let mut open_end = false;
    for (i, line) in expected.iter().enumerate() {
        if is_elision(line) {
            if i == 0 {
                open_start = true;
            }
            open_end = true;
            if !segments.last().is_some_and(Vec::is_empty) {
                segments.push(Vec::new());
            }
            continue;
        }
        if without_strace && is_strace_line(line) {
            continue;
        }
        open_end = false;
        segments.last_mut().expect("one segment").push(normalize(line, masks));
    }
    segments.retain(|s| !s.is_empty());
    Pattern {
        segments,
        open_start,
        open_end,
    }
}

fn matches_at(seg: &[String], actual: &[String], at: usize) -> bool {
    at + seg.len() <= actual.len() && seg.iter().zip(&actual[at..]).all(|(e, a)| e == a)
}

/// Where each segment matched, or the index of the first segment that did not.
fn find(p: &Pattern, actual: &[String]) -> Result<Vec<usize>, usize> {
    let mut starts = Vec::new();
    let mut pos = 0;
    let last = p.segments.len().saturating_sub(1);
    if p.segments.is_empty() {
        return if p.open_start || actual.is_empty() {
            Ok(starts)
        } else {
            Err(0)
        };
    }
    for (i, seg) in p.segments.iter().enumerate() {
        let start = if i == 0 && !p.open_start {
            matches_at(seg, actual, 0).then_some(0)
        } else if i == last && !p.open_end {
            actual
                .len()
                .checked_sub(seg.len())
                .filter(|&s| s >= pos && matches_at(seg, actual, s))
        } else {
            (pos..actual.len()).find(|&s| matches_at(seg, actual, s))
        };
        let Some(start) = start else { return Err(i) };
        if i == last && !p.open_end && start + seg.len() != actual.len() {
            return Err(i);
        }
        starts.push(start);
        pos = start + seg.len();
    }
    Ok(starts)
}

/// Under strace, the program's own writes to stdout and stderr are traced too, and strace prints
/// the start of each such line *before* the write happens, so the text lands inside strace's line:
/// `write(2, "  Task-1 step", 13  Task-1 step) = 13`. This takes those lines apart again: the
/// program's text goes back into the output as the program wrote it, the strace lines for it are
/// dropped (the book leaves them out), and every other strace line stays where it was.
fn unweave_strace(output: &str) -> String {
    let mut out = String::with_capacity(output.len());
    let mut text = String::new(); // the program's text since its last newline
    let mut pos = 0;
    while pos < output.len() {
        if let Some((consumed, written)) = own_write(&output[pos..]) {
            text.push_str(written);
            pos += consumed;
            while let Some(nl) = text.find('\n') {
                out.push_str(&text[..=nl]);
                text.drain(..=nl);
            }
            continue;
        }
        let end = output[pos..].find('\n').map_or(output.len(), |i| pos + i + 1);
        out.push_str(&output[pos..end]);
        pos = end;
    }
    out.push_str(&text);
    out
}

/// If `s` starts with strace's line for a write to fd 1 or 2, how many bytes of `s` that line
/// takes up (the program's text inside it included) and the text the program wrote.
fn own_write(s: &str) -> Option<(usize, &str)> {
    let skip = match s.strip_prefix("[pid") {
        Some(r) => 4 + r.find("] ")? + 2,
        None => 0,
    };
    let call = &s[skip..];
    let args = call
        .strip_prefix("write(1, ")
        .or_else(|| call.strip_prefix("write(2, "))?;
    let (shown, quoted_len) = strace_string(args)?;
    let mut after = &args[quoted_len..];
    let truncated = after.starts_with("...");
    if truncated {
        after = &after[3..];
    }
    let after = after.strip_prefix(", ")?;
    let digits = after.bytes().take_while(u8::is_ascii_digit).count();
    // The program's text follows the count directly, so a text that starts with digits makes the
    // split ambiguous: take the split whose text starts with what strace showed and is followed
    // by strace's `)` after exactly `count` bytes.
    for k in 1..=digits {
        let count: usize = after[..k].parse().ok()?;
        let body = &after[k..];
        if !body.as_bytes().starts_with(&shown) || (!truncated && shown.len() != count) {
            continue;
        }
        let (Some(written), Some(tail)) = (body.get(..count), body.get(count..)) else {
            continue;
        };
        if !tail.starts_with(')') {
            continue;
        }
        let line_rest = tail.find('\n').map_or(tail.len(), |i| i + 1);
        let consumed = s.len() - tail.len() + line_rest;
        return Some((consumed, written));
    }
    None
}

/// Decodes the C-style quoted string strace prints at the start of `s`: its bytes, and the
/// length of the quoted form.
fn strace_string(s: &str) -> Option<(Vec<u8>, usize)> {
    let b = s.as_bytes();
    if b.first() != Some(&b'"') {
        return None;
    }
    let mut out = Vec::new();
    let mut i = 1;
    while i < b.len() {
        match b[i] {
            b'"' => return Some((out, i + 1)),
            b'\\' => {
                let c = *b.get(i + 1)?;
                i += 2;
                match c {
                    b'n' => out.push(b'\n'),
                    b't' => out.push(b'\t'),
                    b'r' => out.push(b'\r'),
                    b'v' => out.push(0x0b),
                    b'f' => out.push(0x0c),
                    b'x' => {
                        let hex = s.get(i..i + 2)?;
                        out.push(u8::from_str_radix(hex, 16).ok()?);
                        i += 2;
                    }
                    b'0'..=b'7' => {
                        let mut v = u32::from(c - b'0');
                        let mut n = 1;
                        while n < 3 && i < b.len() && (b'0'..=b'7').contains(&b[i]) {
                            v = v * 8 + u32::from(b[i] - b'0');
                            i += 1;
                            n += 1;
                        }
                        out.push(u8::try_from(v).ok()?);
                    }
                    other => out.push(other),
                }
            }
            c => {
                out.push(c);
                i += 1;
            }
        }
    }
    None
}

/// The lines of a run's output that are compared. `fcntl(fd, F_GETFD)` before a close is
/// dropped: the book's programs run as debug builds here, where std checks that an fd is open
/// before it closes it (inlined into the caller under `debug_assertions`), and the book's traces
/// come from release builds, which do not.
fn output_lines(output: &str) -> impl Iterator<Item = &str> {
    output
        .lines()
        .filter(|l| !(l.contains(", F_GETFD)") && l.ends_with("= 0x1 (flags FD_CLOEXEC)")))
}

/// `Ok` if the block matches the run's output, else a report of where it differs.
fn compare(block: &Block, output: &str, without_strace: bool) -> Result<(), String> {
    let masks = &block.marker.masks;
    let p = pattern(compared_lines(&block.body), masks, without_strace);
    let actual: Vec<String> = output_lines(output).map(|l| normalize(l, masks)).collect();
    match find(&p, &actual) {
        Ok(_) => Ok(()),
        Err(i) => {
            let empty = Vec::new();
            let seg = p.segments.get(i).unwrap_or(&empty);
            // The longest prefix of the segment found anywhere, to point at the first wrong line.
            let (mut best_at, mut best_len) = (0, 0);
            for s in 0..actual.len() {
                let n = seg.iter().zip(&actual[s..]).take_while(|(e, a)| e == a).count();
                if n > best_len {
                    (best_at, best_len) = (s, n);
                }
            }
            let mut report = format!(
                "{}: part {} of {} (between `...` lines) does not match the output of `{} {}`",
                block.place(),
                i + 1,
                p.segments.len(),
                block.marker.program,
                block.marker.args.join(" ")
            );
            if best_len > 0 {
                report += &format!(
                    "\n  its first {best_len} line(s) match output lines {}..; then\n  expected: {}\n  actual:   {}",
                    best_at + 1,
                    seg.get(best_len).map_or("(end of part)", String::as_str),
                    actual.get(best_at + best_len).map_or("(end of output)", String::as_str),
                );
            } else if let Some(first) = seg.first() {
                report += &format!("\n  its first line is nowhere in the output: {first}");
            } else {
                report += "\n  the block is empty, the output is not";
            }
            report += "\n  normalised output of the run:\n";
            for (n, l) in actual.iter().enumerate().take(200) {
                report += &format!("  {:4} {l}\n", n + 1);
            }
            Err(report)
        }
    }
}

/// The block's new body from a fresh run: all of it, or for a block with `...` lines, each part
/// re-read between the output lines that match its first and last lines.
fn regenerate(block: &Block, output: &str) -> Result<Vec<String>, String> {
    let masks = &block.marker.masks;
    let body = &block.body;
    let head = body.len() - compared_lines(body).len();
    let raw: Vec<String> = output_lines(output).map(|l| l.replace("tests/../", "")).collect();
    let norm: Vec<String> = output_lines(output).map(|l| normalize(l, masks)).collect();
    let mut out: Vec<String> = body[..head].to_vec();
    let rest = &body[head..];
    if !rest.iter().any(|l| is_elision(l)) {
        out.extend(raw);
        return Ok(out);
    }
    let mut pos = 0;
    let mut i = 0;
    while i < rest.len() {
        if is_elision(&rest[i]) {
            out.push(rest[i].clone());
            i += 1;
            continue;
        }
        let end = (i..rest.len()).find(|&j| is_elision(&rest[j])).unwrap_or(rest.len());
        let first = normalize(&rest[i], masks);
        let last = normalize(&rest[end - 1], masks);
        let anchored_start = i == 0;
        let anchored_end = end == rest.len();
        let from = if anchored_start {
            Some(0)
        } else {
            (pos..norm.len()).find(|&k| norm[k] == first)
        };
        let to = from.and_then(|f| {
            if anchored_end {
                norm.len().checked_sub(1)
            } else if end - i == 1 {
                Some(f)
            } else {
                (f + 1..norm.len()).find(|&k| norm[k] == last)
            }
        });
        let (Some(from), Some(to)) = (from, to) else {
            return Err(format!(
                "{}: cannot find the part starting `{}` in the new output: edit the block by hand",
                block.place(),
                rest[i]
            ));
        };
        out.extend(raw[from..=to].iter().cloned());
        pos = to + 1;
        i = end;
    }
    Ok(out)
}

// ------------------------------------------------------------------------------------------------
// Running the programs
// ------------------------------------------------------------------------------------------------

/// Marks every descriptor above stderr close-on-exec, so that each program starts with 0, 1 and 2
/// only. The numbers the book quotes (`pipe2([9, 10], ...)`, `recv(fd 13)`) are the lowest free
/// ones; a descriptor this test inherited from whatever started it (a shell's fd 10, a CI
/// runner's pipe) would otherwise shift them and make the trace depend on the caller.
fn keep_inherited_fds_from_the_programs() {
    let fds: Vec<i32> = fs::read_dir("/proc/self/fd")
        .expect("list /proc/self/fd")
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
        .filter(|&fd| fd > 2)
        .collect();
    for fd in fds {
        // The directory's own descriptor is already closed here: EBADF is expected for it.
        let _ = evloop_syscalls::set_cloexec(fd, true);
    }
}

fn strace_works() -> bool {
    Command::new("strace")
        .args(["-f", "-o", "/dev/null", "true"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// Spawns `program args`, with stdout and stderr into one pipe, and returns the child and the
/// pipe's read end.
fn spawn_merged(mut cmd: Command) -> Result<(Child, std::os::fd::OwnedFd), String> {
    let (r, w) = evloop_syscalls::pipe2().map_err(|e| format!("pipe2: {e}"))?;
    // The child's stdout must block when the pipe is full, not fail with EAGAIN.
    evloop_syscalls::set_nonblocking(r.as_fd(), false).map_err(|e| e.to_string())?;
    evloop_syscalls::set_nonblocking(w.as_fd(), false).map_err(|e| e.to_string())?;
    let w2 = w.try_clone().map_err(|e| e.to_string())?;
    cmd.stdout(Stdio::from(w)).stderr(Stdio::from(w2)).stdin(Stdio::piped());
    let child = cmd.spawn().map_err(|e| format!("spawn {cmd:?}: {e}"))?;
    drop(cmd); // our copies of the write end: the reader sees end of file when the child is done
    Ok((child, r))
}

/// Runs one marker's program once and returns everything it wrote.
fn run(m: &Marker, strace: bool) -> Result<String, String> {
    let path = program_path(&m.program).expect("checked by parse_marker");
    let mut cmd = match (&m.strace, strace) {
        (Some(args), true) => {
            let mut c = Command::new("strace");
            c.args(args).arg(path);
            c
        }
        _ => Command::new(path),
    };
    cmd.args(&m.args)
        .current_dir(workspace_root())
        .env_remove("EVLOOP_DEBUG");
    match m.kind {
        Kind::Trace => cmd.env("EVLOOP_TRACE", "1"),
        _ => cmd.env_remove("EVLOOP_TRACE"),
    };
    let (mut child, r) = spawn_merged(cmd)?;
    let stdin = child.stdin.take(); // held open until the program exits
    let (tx, rx) = mpsc::channel::<Vec<u8>>();
    let reader = std::thread::spawn(move || {
        let mut f = fs::File::from(r);
        let mut buf = [0u8; 8192];
        loop {
            match f.read(&mut buf) {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    if tx.send(buf[..n].to_vec()).is_err() {
                        break;
                    }
                }
            }
        }
    });
    let started = Instant::now();
    let mut out = Vec::new();
    let mut client: Option<Child> = None;
    let mut failure = None;
    loop {
        match rx.recv_timeout(Duration::from_millis(50)) {
            Ok(chunk) => out.extend_from_slice(&chunk),
            Err(mpsc::RecvTimeoutError::Disconnected) => break,
            Err(mpsc::RecvTimeoutError::Timeout) => {}
        }
        if let (Some(args), None) = (&m.client, &client) {
            let text = String::from_utf8_lossy(&out);
            let addr = text
                .lines()
                .find_map(|l| l.strip_prefix("listening on "))
                .and_then(|rest| rest.split_whitespace().next())
                .filter(|_| text.contains('\n'))
                .filter(|_| {
                    m.client_after
                        .as_ref()
                        .is_none_or(|after| text.contains(after.as_str()))
                });
            if let Some(addr) = addr {
                let mut c = Command::new(program_path(&args[0]).expect("checked"));
                c.args(args[1..].iter().map(|a| a.replace("{addr}", addr)))
                    .current_dir(workspace_root())
                    .env_remove("EVLOOP_TRACE")
                    .stdin(Stdio::null())
                    .stdout(Stdio::null())
                    .stderr(Stdio::null());
                match c.spawn() {
                    Ok(c) => client = Some(c),
                    Err(e) => {
                        failure = Some(format!("client {args:?}: {e}"));
                        let _ = child.kill();
                    }
                }
            }
        }
        if started.elapsed() > RUN_LIMIT {
            failure = Some(format!(
                "`{} {}` ran longer than {RUN_LIMIT:?}",
                m.program,
                m.args.join(" ")
            ));
            let _ = child.kill();
            if let Some(c) = &mut client {
                let _ = c.kill();
            }
            break;
        }
    }
    let status = child.wait().map_err(|e| e.to_string())?;
    drop(stdin);
    if let Some(mut c) = client {
        let _ = c.wait();
    }
    let _ = reader.join();
    if let Some(f) = failure {
        return Err(f);
    }
    let mut text = String::from_utf8_lossy(&out).into_owned();
    if m.strace.is_some() && strace {
        text = unweave_strace(&text);
    }
    if m.client.is_some() && !text.contains("listening on ") {
        return Err(format!("`{}` never printed `listening on ADDR`:\n{text}", m.program));
    }
    let _ = status; // a program may exit non-zero on purpose (the book shows why)
    Ok(text)
}

// ------------------------------------------------------------------------------------------------
// The test
// ------------------------------------------------------------------------------------------------

/// A block's last run: the program's output (or why it could not run), and the comparison.
type Outcome = (Result<String, String>, Result<(), String>);

#[test]
fn every_quoted_trace_in_the_book_matches_a_fresh_run_of_its_program() {
    let update = std::env::var("BOOK_TRACES").is_ok_and(|v| v == "update");
    let mut blocks = Vec::new();
    let mut problems = Vec::new();
    for file in book_files() {
        let text = fs::read_to_string(&file).expect("read a chapter");
        let (b, p) = scan(&file, &text);
        blocks.extend(b);
        problems.extend(p);
    }
    keep_inherited_fds_from_the_programs();
    let strace = strace_works();
    if !strace && blocks.iter().any(|b| b.marker.strace.is_some()) {
        eprintln!("book_traces: strace cannot trace here: system-call lines are not compared");
    }

    // One run (with retries) per distinct marker, a few at a time.
    let mut by_key: BTreeMap<String, Vec<usize>> = BTreeMap::new();
    for (i, b) in blocks.iter().enumerate() {
        if b.marker.runs() {
            by_key.entry(b.marker.key()).or_default().push(i);
        }
    }
    let jobs: Mutex<Vec<Vec<usize>>> = Mutex::new(by_key.into_values().collect());
    // For each block: the last output, and whether it matched.
    let results: Mutex<BTreeMap<usize, Outcome>> = Mutex::new(BTreeMap::new());
    std::thread::scope(|s| {
        for _ in 0..PARALLEL {
            s.spawn(|| {
                loop {
                    let Some(job) = jobs.lock().expect("jobs").pop() else {
                        break;
                    };
                    let marker = &blocks[job[0]].marker;
                    let without_strace = marker.strace.is_some() && !strace;
                    let mut last = BTreeMap::new();
                    for _attempt in 0..ATTEMPTS {
                        let out = run(marker, strace);
                        let mut all = true;
                        for &i in &job {
                            let verdict = match &out {
                                Ok(text) => compare(&blocks[i], text, without_strace),
                                Err(e) => Err(format!("{}: {e}", blocks[i].place())),
                            };
                            all &= verdict.is_ok();
                            last.insert(i, (out.clone(), verdict));
                        }
                        if all {
                            break;
                        }
                    }
                    results.lock().expect("results").extend(last);
                }
            });
        }
    });
    let results = results.into_inner().expect("results");

    let mut failures = problems;
    let mut rewrites: BTreeMap<PathBuf, Vec<(usize, usize, Vec<String>)>> = BTreeMap::new();
    for (i, (out, verdict)) in &results {
        let Err(report) = verdict else { continue };
        let block = &blocks[*i];
        if update && (strace || block.marker.strace.is_none()) {
            match out.as_ref().map_err(String::clone).and_then(|o| regenerate(block, o)) {
                Ok(body) => {
                    eprintln!("book_traces: rewrote {}", block.place());
                    rewrites
                        .entry(block.file.clone())
                        .or_default()
                        .push((block.open, block.close, body));
                    continue;
                }
                Err(e) => failures.push(e),
            }
        } else {
            failures.push(report.clone());
        }
    }
    for (file, mut edits) in rewrites {
        let text = fs::read_to_string(&file).expect("read");
        let mut lines: Vec<String> = text.lines().map(String::from).collect();
        edits.sort_by_key(|e| std::cmp::Reverse(e.0));
        for (open, close, body) in edits {
            lines.splice(open + 1..close, body);
        }
        let mut new = lines.join("\n");
        new.push('\n');
        fs::write(&file, new).expect("write");
    }
    assert!(
        failures.is_empty(),
        "{} quoted trace(s) no longer match their program (run `make book-traces` to regenerate them, \
         then read the diff):\n\n{}",
        failures.len(),
        failures.join("\n\n")
    );
}

#[test]
fn every_book_program_is_a_bin_of_this_crate() {
    let manifest = fs::read_to_string(workspace_root().join("tests/Cargo.toml")).expect("manifest");
    let bins: Vec<&str> = manifest
        .split("[[bin]]")
        .skip(1)
        .filter_map(|section| {
            section
                .lines()
                .find_map(|l| l.trim().strip_prefix("name = "))
                .map(|n| n.trim_matches('"'))
        })
        .collect();
    let listed: Vec<&str> = PROGRAMS.iter().map(|(n, _)| *n).collect();
    assert_eq!(
        bins, listed,
        "tests/Cargo.toml's [[bin]]s and book_programs! must list the same programs"
    );
}

// ------------------------------------------------------------------------------------------------
// The comparison itself must catch drift: these pin what it accepts and what it rejects.
// ------------------------------------------------------------------------------------------------

fn lines(s: &str) -> Vec<String> {
    s.lines().map(String::from).collect()
}

fn block(body: &str) -> Block {
    Block {
        file: PathBuf::from("docs/x.md"),
        open: 0,
        close: 0,
        marker: Marker {
            kind: Kind::Trace,
            program: "p".into(),
            args: vec![],
            strace: None,
            client: None,
            client_after: None,
            masks: vec![],
        },
        body: lines(body),
    }
}

const RUN: &str = "[iter 1] poll timeout=0ns -> 0 events | expired 0 timers | run 1 handle
  Task-1 step
  Task-1 -> pending on a timer at t=100.070ms
[iter 1] end: ran 1 handle in 13.9us busy
[iter 2] poll timeout=99.990ms -> 0 events | expired 1 timer (late 253.9us) -> wake Task-1 | run 1 handle
  Task-1 step
  Task-1 -> done
[iter 2] end: ran 1 handle in 65.8us busy";

#[test]
fn timings_are_normalised_but_a_zero_timeout_is_not() {
    let other_timings = RUN
        .replace("100.070ms", "100.512ms")
        .replace("13.9us", "201.0us")
        .replace("99.990ms", "99.1ms")
        .replace("253.9us", "1.2ms");
    assert!(compare(&block(RUN), &other_timings, false).is_ok());
    let blocking = RUN.replacen("timeout=0ns", "timeout=1.000ms", 1);
    assert!(compare(&block(RUN), &blocking, false).is_err());
}

#[test]
fn a_reordered_or_changed_line_is_drift() {
    let swapped = RUN.replace("  Task-1 step\n  Task-1 -> done", "  Task-1 -> done\n  Task-1 step");
    assert!(compare(&block(RUN), &swapped, false).is_err());
    let other_wake = RUN.replace("-> wake Task-1", "-> wake Task-2");
    assert!(compare(&block(RUN), &other_wake, false).is_err());
    let extra = format!("{RUN}\n[iter 3] poll timeout=0ns -> 0 events | expired 0 timers | run 0 handles");
    assert!(
        compare(&block(RUN), &extra, false).is_err(),
        "a block without `...` must match to the end"
    );
}

#[test]
fn an_elision_matches_any_lines_but_the_parts_around_it_must_be_contiguous() {
    let excerpt = "$ EVLOOP_TRACE=1 target/release/examples/p 2>&1\n...\n  Task-1 step\n  Task-1 -> done\n...";
    assert!(compare(&block(excerpt), RUN, false).is_ok());
    let broken = "...\n  Task-1 step\n[iter 2] end: ran 1 handle in 1us busy\n...";
    assert!(compare(&block(broken), RUN, false).is_err());
    assert!(is_elision("...                                     (two round trips)"));
    assert!(
        !is_elision("... world"),
        "program output that starts with dots is not an elision"
    );
}

#[test]
fn the_programs_own_writes_are_taken_out_of_straces_lines() {
    let woven = "epoll_ctl(3, EPOLL_CTL_ADD, 4, {events=EPOLLIN}) = 0
write(2, \"[loop #1] created: epoll fd + ev\"..., 60[loop #1] created: epoll fd + eventfd, clock=CLOCK_MONOTONIC) = 60
write(2, \"\\n\", 1
)                       = 1
write(6, \"abc\", 3)                      = 3
write(1, \"read 'a'\\n\", 9read 'a'
)               = 9
write(2, \"  Task-1 step\", 13  Task-1 step)           = 13
write(2, \"\\n\", 1
)                       = 1
write(1, \"262144 bytes back, cat exit code\"..., 35262144 bytes back, cat exit code 0
) = 35
";
    assert_eq!(
        unweave_strace(woven),
        "epoll_ctl(3, EPOLL_CTL_ADD, 4, {events=EPOLLIN}) = 0
[loop #1] created: epoll fd + eventfd, clock=CLOCK_MONOTONIC
write(6, \"abc\", 3)                      = 3
read 'a'
  Task-1 step
262144 bytes back, cat exit code 0
"
    );
}

#[test]
fn strace_lines_are_recognised_and_pids_ports_addresses_are_normalised() {
    assert!(is_strace_line(
        "epoll_pwait2(3, [], 64, {tv_sec=0, tv_nsec=0}, NULL, 0) = 0"
    ));
    assert!(is_strace_line("[pid  5542] close(3)                    = 0"));
    assert!(is_strace_line("--- SIGCHLD {si_signo=SIGCHLD} ---"));
    assert!(!is_strace_line("remove_reader(5) -> true"));
    assert!(!is_strace_line("  Task-1 step"));
    let a = "accept4(5, {sin_port=htons(33046), sin_addr=inet_addr(\"127.0.0.1\")}, 0x7ffe360d1200) = 6";
    let b = "accept4(5, {sin_port=htons(41000), sin_addr=inet_addr(\"127.0.0.1\")}, 0x7ffd11111111) = 6";
    assert_eq!(normalize(a, &[]), normalize(b, &[]));
    assert_ne!(
        normalize(a, &[]),
        normalize(&a.replace("= 6", "= 7"), &[]),
        "fd numbers are compared"
    );
    assert_eq!(
        normalize("listening on 127.0.0.1:38059 (pid 5470)", &[]),
        "listening on 127.0.0.1:<port> (pid <pid>)"
    );
    assert_eq!(
        normalize(
            "x epoll_pwait2=36317 clock_gettime=36317 send=100000",
            &["epoll_pwait2=#".into()]
        ),
        "x epoll_pwait2=<n> clock_gettime=36317 send=100000"
    );
}

#[test]
fn every_numbered_chapter_is_linked_from_the_readme_and_the_summary() {
    let docs = workspace_root().join("docs");
    let readme = fs::read_to_string(docs.join("README.md")).expect("docs/README.md");
    let summary = fs::read_to_string(docs.join("SUMMARY.md")).expect("docs/SUMMARY.md (mdBook's table of contents)");
    let mut missing = Vec::new();
    for entry in fs::read_dir(&docs).expect("docs/") {
        let name = entry.expect("entry").file_name().to_string_lossy().into_owned();
        let numbered = name.len() > 3 && name.as_bytes()[..2].iter().all(u8::is_ascii_digit) && name.ends_with(".md");
        if !numbered {
            continue;
        }
        let link = format!("({name})");
        if !readme.contains(&link) {
            missing.push(format!("docs/README.md does not link {name}"));
        }
        if !summary.contains(&link) {
            missing.push(format!("docs/SUMMARY.md does not list {name}"));
        }
    }
    assert!(missing.is_empty(), "{}", missing.join("\n"));
}
