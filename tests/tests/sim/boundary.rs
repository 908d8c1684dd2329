//! The simulation's boundary is the syscall layer: no simulation branch anywhere above it.
//!
//! The loop, tasks, I/O and sync layers must run on the simulated kernel without knowing it
//! (issue 22): a `cfg(feature = "simulation")`, a call into `sys::sim`, or a test of whether
//! the thread is simulated in `runtime/src/{event_loop,task,io,sync}` would be a second code
//! path that only the simulation exercises. (The feature itself is only forwarded, by
//! `runtime/Cargo.toml`.)

use std::path::{Path, PathBuf};

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

#[test]
fn no_layer_above_the_syscalls_knows_the_simulation() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("../runtime/src");
    let mut files = Vec::new();
    for layer in ["event_loop", "task", "io", "sync"] {
        rust_files(&src.join(layer), &mut files);
    }
    assert!(
        files.len() > 20,
        "found only {} files under {}",
        files.len(),
        src.display()
    );
    let forbidden = [
        "feature = \"simulation\"",
        "sys::sim",
        "syscalls::sim",
        "sim::Kernel",
        "is_active(",
    ];
    let mut found = Vec::new();
    for f in &files {
        let text = std::fs::read_to_string(f).unwrap();
        for (n, line) in text.lines().enumerate() {
            if let Some(word) = forbidden.iter().find(|w| line.contains(*w)) {
                found.push(format!("{}:{}: {word}: {}", f.display(), n + 1, line.trim()));
            }
        }
    }
    assert!(
        found.is_empty(),
        "simulation branches above the syscall layer:\n{}",
        found.join("\n")
    );
}
