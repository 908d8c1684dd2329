//! The crate root's public names, pinned: a name added to (or removed from) `runtime/src/lib.rs`
//! fails this test until the list below and the CHANGELOG say so. And one public path per item:
//! lib.rs re-exports only from private places (a `pub use` of a public module's item would give
//! it a second path); the prelude is the one deliberate exception (a glob-import convenience).

use std::collections::BTreeSet;

/// The names at `evloop::` (modules, functions, attributes); the `#[macro_export]` macros
/// (`select!`, `join!`, `try_join!`) are checked apart.
const ROOT: &[&str] = &[
    "event_loop",
    "fiber",
    "io",
    "main",
    "net",
    "pipe",
    "prelude",
    "process",
    "protocol",
    "run",
    "runtime",
    "signal",
    "spawn",
    "stream",
    "streams",
    "sync",
    "sys",
    "task",
    "test",
    "time",
];

// `task_local!` is tokio's (`tokio::task_local!`); `__task_local_inner` is its hidden helper.
const MACROS: &[&str] = &["__task_local_inner", "join", "pin", "select", "task_local", "try_join"];

fn lib_rs() -> String {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../runtime/src/lib.rs");
    std::fs::read_to_string(path).unwrap()
}

/// `src` without its `//` comments (doc comments included).
fn without_comments(src: &str) -> String {
    src.lines()
        .map(|l| l.split("//").next().unwrap())
        .collect::<Vec<_>>()
        .join("\n")
}

/// lib.rs without comments, and only its top level (the bodies of inline modules cut out).
fn top_level(src: &str) -> String {
    let code = without_comments(src);
    let mut out = String::new();
    let mut depth = 0usize;
    let mut in_mod = false;
    for (i, c) in code.char_indices() {
        match c {
            '{' if depth == 0 && code[..i].trim_end().rsplit(char::is_whitespace).nth(1) == Some("mod") => {
                in_mod = true;
                depth = 1;
                out.push(';');
                continue;
            }
            '{' if in_mod => depth += 1,
            '}' if in_mod => {
                depth -= 1;
                if depth == 0 {
                    in_mod = false;
                }
                continue;
            }
            _ => {}
        }
        if !in_mod {
            out.push(c);
        }
    }
    out
}

/// The names the `pub use` and `pub mod` items of `src` introduce.
fn public_names(src: &str) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    for item in src.split(';') {
        // attributes (`#![deny(..)]`, `#[cfg(..)]`) are not part of the item's name
        let item: Vec<&str> = item.lines().filter(|l| !l.trim_start().starts_with('#')).collect();
        let item = item.join("\n");
        let item = item.trim();
        if let Some(m) = item.strip_prefix("pub mod ") {
            names.insert(m.trim().to_string());
        } else if let Some(u) = item.strip_prefix("pub use ") {
            let leaves = match (u.find('{'), u.rfind('}')) {
                (Some(a), Some(b)) => u[a + 1..b].to_string(),
                _ => u.rsplit("::").next().unwrap().to_string(),
            };
            for leaf in leaves.split(',').map(str::trim).filter(|l| !l.is_empty()) {
                let name = leaf.rsplit(" as ").next().unwrap().rsplit("::").next().unwrap();
                names.insert(name.trim().to_string());
            }
        }
    }
    names
}

#[test]
fn the_crate_root_has_exactly_the_listed_names() {
    let found = public_names(&top_level(&lib_rs()));
    let listed: BTreeSet<String> = ROOT.iter().map(|s| s.to_string()).collect();
    assert_eq!(
        found, listed,
        "the crate root changed: update ROOT in this file and CHANGELOG.md (found {found:?})"
    );
}

#[test]
fn the_root_macros_are_the_three_listed() {
    let mut found = BTreeSet::new();
    let src_dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../runtime/src");
    let mut stack = vec![std::path::PathBuf::from(src_dir)];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                let text = std::fs::read_to_string(&path).unwrap();
                let mut lines = text.lines();
                while let Some(line) = lines.next() {
                    if line.trim() == "#[macro_export]" {
                        let def = lines.next().unwrap();
                        let name = def.trim().strip_prefix("macro_rules! ").unwrap().trim_end_matches(" {");
                        found.insert(name.to_string());
                    }
                }
            }
        }
    }
    let listed: BTreeSet<String> = MACROS.iter().map(|s| s.to_string()).collect();
    assert_eq!(
        found, listed,
        "a macro was added at the crate root: update MACROS and CHANGELOG.md"
    );
}

#[test]
fn lib_rs_re_exports_nothing_from_a_public_module() {
    // The public modules of the crate: a `pub use` in lib.rs whose path goes through one of
    // them gives its item a second path (`evloop::io::AsyncFd` and `evloop::AsyncFd`).
    let public_layers = ["event_loop", "fiber", "io", "sync", "task"];
    let code = without_comments(&lib_rs());
    let mut offenders = Vec::new();
    for item in code.split(';') {
        let item = item.trim();
        let Some(path) = item.rsplit("pub use ").next().filter(|_| item.contains("pub use ")) else {
            continue;
        };
        let path = path.trim().trim_start_matches("crate::");
        let first = path.split("::").next().unwrap();
        if !public_layers.contains(&first) {
            continue;
        }
        // Allowed: through a private submodule of a public layer folder (`io::net::...` where
        // `io/mod.rs` declares `pub(crate) mod net`), which is not a public path.
        let second = path.split("::").nth(1).unwrap_or("");
        let layer_mod =
            std::fs::read_to_string(format!("{}/../runtime/src/{first}/mod.rs", env!("CARGO_MANIFEST_DIR"))).unwrap();
        let public_sub = layer_mod.contains(&format!("pub mod {second};"));
        let in_prelude = item.contains("AsyncBufRead, AsyncBufReadExt, AsyncRead");
        if (public_sub || second.starts_with('{') || !second.chars().next().is_some_and(|c| c.is_lowercase()))
            && !in_prelude
        {
            offenders.push(item.to_string());
        }
    }
    assert!(
        offenders.is_empty(),
        "items given a second public path by lib.rs: {offenders:#?}"
    );
}
