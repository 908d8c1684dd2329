//! The project's structural rules (DESIGN.md "Ground rules" and "Layout"), checked on the source
//! tree so a change that breaks one fails `make test`:
//! - the runtime's dependency tree is `libc` and `static_assertions` below the three crates;
//! - `unsafe` appears only in `syscalls/`, every block there has a `// SAFETY:` comment, and
//!   `runtime/` and `timers/` forbid unsafe code;
//! - every module opens with a `//!` paragraph.

use std::fs;
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("workspace root")
        .to_path_buf()
}

fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in fs::read_dir(&d).expect("read_dir") {
            let path = entry.expect("entry").path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                out.push(path);
            }
        }
    }
    out.sort();
    out
}

/// The dependency names of one `[section]` of a Cargo.toml (a deliberately small parser: one
/// `name = ...` or `name.workspace = true` per line, as this workspace writes them).
fn deps(manifest: &Path, section: &str) -> Vec<String> {
    let text = fs::read_to_string(manifest).expect("manifest");
    let mut in_section = false;
    let mut out = Vec::new();
    for line in text.lines() {
        let line = line.trim();
        if line.starts_with('[') {
            in_section = line == format!("[{section}]");
            continue;
        }
        if in_section && !line.is_empty() && !line.starts_with('#') {
            let name = line.split(['=', '.']).next().unwrap_or("").trim();
            out.push(name.to_string());
        }
    }
    out
}

#[test]
fn runtime_crates_depend_only_on_libc_static_assertions_and_each_other() {
    let r = root();
    assert_eq!(deps(&r.join("timers/Cargo.toml"), "dependencies"), Vec::<String>::new());
    assert_eq!(
        deps(&r.join("syscalls/Cargo.toml"), "dependencies"),
        vec!["libc", "static_assertions"]
    );
    assert_eq!(
        deps(&r.join("runtime/Cargo.toml"), "dependencies"),
        vec!["evloop-syscalls", "evloop-timers"]
    );
    // Peers for benchmarks may only ever appear as dev-dependencies of the tests crate.
    for krate in ["timers", "syscalls", "runtime"] {
        let dev = deps(&r.join(krate).join("Cargo.toml"), "dev-dependencies");
        assert!(dev.iter().all(|d| d == "proptest"), "{krate} dev-dependencies: {dev:?}");
    }
}

fn strip_comment(line: &str) -> &str {
    match line.find("//") {
        Some(i) => &line[..i],
        None => line,
    }
}

#[test]
fn unsafe_code_lives_only_in_syscalls() {
    let r = root();
    for krate in ["runtime", "timers"] {
        let lib = fs::read_to_string(r.join(krate).join("src/lib.rs")).expect("lib.rs");
        assert!(
            lib.contains("#![forbid(unsafe_code)]"),
            "{krate}/src/lib.rs must forbid unsafe code"
        );
        for file in rust_files(&r.join(krate)) {
            let text = fs::read_to_string(&file).expect("source");
            for (i, line) in text.lines().enumerate() {
                let code = strip_comment(line);
                let is_unsafe = code
                    .split(|c: char| !c.is_alphanumeric() && c != '_')
                    .any(|w| w == "unsafe");
                assert!(
                    !is_unsafe || code.contains("forbid(unsafe_code)"),
                    "unsafe outside syscalls/: {}:{}: {line}",
                    file.display(),
                    i + 1
                );
            }
        }
    }
}

#[test]
fn every_unsafe_block_in_syscalls_has_a_safety_comment() {
    for file in rust_files(&root().join("syscalls")) {
        let text = fs::read_to_string(&file).expect("source");
        let lines: Vec<&str> = text.lines().collect();
        for (i, line) in lines.iter().enumerate() {
            if !strip_comment(line).contains("unsafe {") {
                continue;
            }
            // The comment sits on one of the lines just above the block (or the same line).
            let window = &lines[i.saturating_sub(12)..=i];
            assert!(
                window.iter().any(|l| l.contains("SAFETY:")),
                "unsafe block without a SAFETY comment: {}:{}",
                file.display(),
                i + 1
            );
        }
    }
}

#[test]
fn every_module_opens_with_a_doc_paragraph() {
    let r = root();
    for krate in ["runtime/src", "timers/src", "syscalls/src"] {
        for file in rust_files(&r.join(krate)) {
            let text = fs::read_to_string(&file).expect("source");
            let first = text.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
            let is_test_module = file.file_name().is_some_and(|n| n == "tests.rs");
            assert!(
                first.starts_with("//!") || is_test_module,
                "{} does not open with a //! module doc",
                file.display()
            );
        }
    }
}
