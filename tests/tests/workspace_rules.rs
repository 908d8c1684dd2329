// Standalone binary: the workspace's structural rules, run and cited by name (`--test workspace_rules`).
//! The project's structural rules (docs/design.md "Ground rules" and "Layout"), checked on the source
//! tree so a change that breaks one fails `make test`:
//! - the runtime's dependency tree is `libc` and `static_assertions` below the four crates (the
//!   attribute macros' crate has no dependency at all), in the manifests and in `cargo tree`, so
//!   the interop crates of `runtime/compat/` stay out of it;
//! - `unsafe` appears only in `syscalls/` and the two modules docs/design.md names (the raw task
//!   cell, the fiber switch), every unsafe block, impl, fn and extern block has its `// SAFETY:`
//!   comment directly above it, `runtime/` denies unsafe code outside those modules and `timers/`
//!   forbids it;
//! - files of `runtime/src` import only from their own layer folder and the ones below it, and no
//!   type is defined in a layer below every layer that uses it (each layer owns its vocabulary);
//! - every module opens with a `//!` paragraph.

use std::fs;
use std::path::{Path, PathBuf};

use evloop_tests::workspace_root;

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
    let r = workspace_root();
    assert_eq!(deps(&r.join("timers/Cargo.toml"), "dependencies"), Vec::<String>::new());
    assert_eq!(
        deps(&r.join("syscalls/Cargo.toml"), "dependencies"),
        vec!["libc", "static_assertions"]
    );
    assert_eq!(
        deps(&r.join("runtime/Cargo.toml"), "dependencies"),
        vec!["evloop-syscalls", "evloop-timers", "evloop-macros"]
    );
    // The attribute macros parse by hand: no syn, no quote, nothing.
    for section in ["dependencies", "dev-dependencies", "build-dependencies"] {
        assert_eq!(
            deps(&r.join("runtime/macros/Cargo.toml"), section),
            Vec::<String>::new(),
            "evloop-macros [{section}]"
        );
    }
    // Peers for benchmarks may only ever appear as dev-dependencies of the tests crate.
    for krate in ["timers", "syscalls", "runtime"] {
        let dev = deps(&r.join(krate).join("Cargo.toml"), "dev-dependencies");
        assert!(dev.iter().all(|d| d == "proptest"), "{krate} dev-dependencies: {dev:?}");
    }
}

/// The interop crates of `runtime/compat/` (issue 21): they depend on the runtime, never the
/// other way round.
const COMPAT_CRATES: &[&str] = &["evloop-futures", "evloop-hyper"];

/// The resolved tree, not only the manifests: `cargo tree` of each runtime crate (normal and
/// build edges, the ones a user of the crate compiles) names the four crates, libc and
/// static_assertions and nothing else, so neither an interop crate of `runtime/compat/` nor a
/// crate it brings (hyper, futures-io, ...) can slip under the runtime through a feature or a
/// workspace dependency. `--offline`: the build that runs this test has fetched everything.
#[test]
fn runtime_crates_resolved_tree_is_libc_and_static_assertions() {
    let r = workspace_root();
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let allowed = [
        "evloop",
        "evloop-syscalls",
        "evloop-timers",
        "evloop-macros",
        "libc",
        "static_assertions",
    ];
    for krate in ["evloop-syscalls", "evloop-timers", "evloop-macros", "evloop"] {
        let out = std::process::Command::new(&cargo)
            .args([
                "tree",
                "--offline",
                "-p",
                krate,
                "-e",
                "normal,build",
                "--prefix",
                "none",
            ])
            .current_dir(&r)
            .output()
            .expect("cargo tree runs");
        assert!(
            out.status.success(),
            "cargo tree -p {krate}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let text = String::from_utf8_lossy(&out.stdout);
        for line in text.lines().filter(|l| !l.trim().is_empty()) {
            let name = line.split_whitespace().next().unwrap_or("");
            assert!(
                allowed.contains(&name),
                "{krate} depends on {name} (cargo tree: {line})"
            );
        }
    }
    // And the compat crates are workspace members that nothing of the runtime names.
    let workspace = fs::read_to_string(r.join("Cargo.toml")).expect("workspace manifest");
    for dir in ["runtime/compat/futures-io", "runtime/compat/hyper"] {
        assert!(workspace.contains(&format!("\"{dir}\"")), "{dir} is a workspace member");
    }
    for krate in ["timers", "syscalls", "runtime", "runtime/macros"] {
        let manifest = fs::read_to_string(r.join(krate).join("Cargo.toml")).expect("manifest");
        for compat in COMPAT_CRATES {
            assert!(!manifest.contains(compat), "{krate}/Cargo.toml names {compat}");
        }
    }
    // Their `Send + Sync` is what their fields are: they forbid unsafe code (which also rules out
    // `unsafe impl Send`); the unsafe-word scan below covers their files as part of `runtime/`.
    for dir in ["runtime/compat/futures-io", "runtime/compat/hyper"] {
        let lib = fs::read_to_string(r.join(dir).join("src/lib.rs")).expect("lib.rs");
        assert!(
            lib.contains("#![forbid(unsafe_code)]"),
            "{dir}/src/lib.rs must forbid unsafe code"
        );
    }
}

/// The value of `key = ...` in the `[package]` section of a manifest (the raw text after `=`).
fn package_field(manifest: &str, key: &str) -> Option<String> {
    let mut in_package = false;
    for line in manifest.lines() {
        let line = line.trim();
        if line.starts_with('[') {
            in_package = line == "[package]";
            continue;
        }
        if in_package {
            if let Some((k, v)) = line.split_once('=') {
                if k.trim() == key {
                    return Some(v.trim().to_string());
                }
            }
        }
    }
    None
}

/// The crates published to the registry, by directory.
const PUBLISHED: &[&str] = &["timers", "syscalls", "runtime/macros", "runtime"];

#[test]
fn published_crates_have_complete_metadata() {
    let r = workspace_root();
    let workspace = fs::read_to_string(r.join("Cargo.toml")).expect("workspace manifest");
    assert!(workspace.contains("license = \"MIT OR Apache-2.0\""));
    assert!(!workspace.contains("example.invalid"), "a placeholder repository URL");
    for file in ["LICENSE-MIT", "LICENSE-APACHE"] {
        assert!(r.join(file).is_file(), "{file} is missing");
    }
    // `cargo publish` needs a version on every path dependency between published crates.
    for line in workspace.lines().filter(|l| l.contains("path = ")) {
        assert!(
            line.contains("version = "),
            "a path dependency without a version: {line}"
        );
    }
    for dir in PUBLISHED {
        let manifest = fs::read_to_string(r.join(dir).join("Cargo.toml")).expect("manifest");
        for key in ["name", "description", "readme", "keywords", "categories"] {
            assert!(package_field(&manifest, key).is_some(), "{dir}: no `{key}`");
        }
        assert!(manifest.contains("license.workspace = true"), "{dir}: license");
        assert!(
            package_field(&manifest, "publish").is_none(),
            "{dir} must be publishable"
        );
        let readme = package_field(&manifest, "readme").unwrap_or_default();
        let readme = readme.trim_matches('"');
        assert!(
            r.join(dir).join(readme).is_file(),
            "{dir}: readme {readme} does not exist"
        );
        let keywords = package_field(&manifest, "keywords").unwrap_or_default();
        let keywords: Vec<&str> = keywords
            .trim_matches(|c| c == '[' || c == ']')
            .split(',')
            .map(|k| k.trim().trim_matches('"'))
            .collect();
        assert!(keywords.len() <= 5, "{dir}: at most five keywords: {keywords:?}");
        for k in &keywords {
            assert!(
                !k.is_empty() && k.len() <= 20 && k.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_'),
                "{dir}: keyword {k:?}"
            );
        }
    }
    let tests = fs::read_to_string(r.join("tests/Cargo.toml")).expect("tests manifest");
    assert_eq!(package_field(&tests, "publish").as_deref(), Some("false"));
}

/// The only files outside `syscalls/` that may hold `unsafe` (docs/design.md, ground rules): the raw
/// task cell (`raw_task.rs`, whose last section is the same pinning for the tuple of futures that
/// `select!`/`join!` poll in place; its `state` and `tests` submodules hold no unsafe) and the
/// fiber register switch, each proved necessary by a benchmark (or a size test) and explained in
/// `docs/`. Each is opted in by
/// `#[allow(unsafe_code)]` on its `mod` line (a submodule inherits its parent's); the rest of
/// `runtime/` is `#![deny(unsafe_code)]` and `timers/` is `#![forbid(unsafe_code)]`.
const UNSAFE_MODULES: &[&str] = &["runtime/src/event_loop/raw_task.rs", "runtime/src/fiber/switch.rs"];

fn mentions_unsafe(code: &str) -> bool {
    code.split(|c: char| !c.is_alphanumeric() && c != '_')
        .any(|w| w == "unsafe")
}

#[test]
fn unsafe_code_lives_only_in_syscalls_and_the_named_modules() {
    let r = workspace_root();
    let timers = fs::read_to_string(r.join("timers/src/lib.rs")).expect("lib.rs");
    assert!(
        timers.contains("#![forbid(unsafe_code)]"),
        "timers/src/lib.rs must forbid unsafe code"
    );
    let runtime = fs::read_to_string(r.join("runtime/src/lib.rs")).expect("lib.rs");
    for lint in ["#![deny(unsafe_code)]", "#![deny(clippy::undocumented_unsafe_blocks)]"] {
        assert!(runtime.contains(lint), "runtime/src/lib.rs must say {lint}");
    }
    for krate in ["runtime", "timers"] {
        for file in rust_files(&r.join(krate)) {
            let rel = file
                .strip_prefix(&r)
                .expect("in the workspace")
                .to_string_lossy()
                .into_owned();
            if UNSAFE_MODULES.contains(&rel.as_str()) {
                continue;
            }
            let text = fs::read_to_string(&file).expect("source");
            // Comments and string literals blanked (a message may say "unsafe"); lines kept.
            let code_text = code_only(&text);
            for (i, line) in code_text.lines().enumerate() {
                let code = line;
                let allowed = code.contains("forbid(unsafe_code)")
                    || code.contains("deny(unsafe_code)")
                    || code.contains("deny(unsafe_op_in_unsafe_fn)");
                // `#[allow(unsafe_code)]` may only sit on the `mod` line of a named module.
                let opt_in = code.contains("allow(unsafe_code)");
                if opt_in {
                    let next = text.lines().nth(i + 1).unwrap_or("");
                    let module = next.trim().trim_start_matches("pub(crate) ").trim_start_matches("mod ");
                    let module = module.trim_end_matches(';');
                    let dir = file
                        .parent()
                        .expect("dir")
                        .strip_prefix(&r)
                        .expect("rel")
                        .to_string_lossy()
                        .into_owned();
                    let target = format!("{dir}/{module}.rs");
                    assert!(
                        UNSAFE_MODULES.contains(&target.as_str()),
                        "{rel}:{}: allow(unsafe_code) for `{}`, which is not one of {UNSAFE_MODULES:?}",
                        i + 1,
                        next.trim()
                    );
                    continue;
                }
                assert!(
                    allowed || !mentions_unsafe(code),
                    "unsafe outside syscalls/ and {UNSAFE_MODULES:?}: {rel}:{}: {line}",
                    i + 1
                );
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// SAFETY comments: one rule, exact.
//
// Every `unsafe` block, `unsafe impl`, `unsafe fn` and `unsafe extern` block in `syscalls/` and in
// the `UNSAFE_MODULES` carries its justification directly above it:
//
// 1. The keyword is found in the code with comments and string literals blanked (`code_only`). A
//    function-pointer type (`unsafe fn(..)`, `unsafe extern "C" fn(..)`) is a type, not an item,
//    and needs nothing.
// 2. The comment goes above the line where the statement holding the keyword begins: the
//    keyword's own line, or, when that line continues a statement begun above it (the code line
//    above does not end with `;`, `{`, `}` or `,`), the line where that statement starts, as in
//    `let x =` followed by `unsafe { .. }` on the next line.
// 3. Directly above that line (no blank line, no other code) sits a run of comment and attribute
//    lines, and one of its comment lines begins with `// SAFETY:`. For an `unsafe fn` the run
//    may instead be its doc comment with a `# Safety` section (`/// # Safety`), the caller's side
//    of the contract.
//
// Nothing else counts: not a comment on the same line or inside the block, not one separated by
// a blank line or by another statement, not one above an earlier statement. `clippy::
// undocumented_unsafe_blocks` (denied in both crates, run by `make lint`) checks blocks and
// impls with a similar rule; this one also covers `unsafe fn` and `unsafe extern`, and runs in
// `make test`.

/// The kinds of `unsafe` the rule covers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum UnsafeItem {
    Block,
    Impl,
    Fn,
    Extern,
}

/// What follows the keyword `unsafe` (`rest`, code only) makes it: `None` for a function-pointer
/// type, an attribute's `unsafe(..)` or anything the rule does not cover.
fn unsafe_item(rest: &str) -> Option<UnsafeItem> {
    fn word<'a>(s: &'a str, w: &str) -> Option<&'a str> {
        s.strip_prefix(w)
            .filter(|after| !after.starts_with(|c: char| c.is_alphanumeric() || c == '_'))
    }
    let rest = rest.trim_start();
    if rest.starts_with('{') {
        return Some(UnsafeItem::Block);
    }
    if word(rest, "impl").is_some() {
        return Some(UnsafeItem::Impl);
    }
    // `extern "C"` (its string blanked to `extern ` by `code_only`) may come before `fn`.
    let (after_extern, is_extern) = match word(rest, "extern") {
        Some(after) => (after.trim_start(), true),
        None => (rest, false),
    };
    match word(after_extern, "fn") {
        Some(after) if after.trim_start().starts_with('(') => None,
        Some(_) => Some(UnsafeItem::Fn),
        None if is_extern => Some(UnsafeItem::Extern),
        None => None,
    }
}

/// Every `unsafe` item of the source `text` whose SAFETY comment is missing or misplaced by the
/// rule above, as (line number, kind).
fn misplaced_safety_comments(text: &str) -> Vec<(usize, UnsafeItem)> {
    let lines: Vec<&str> = text.lines().collect();
    let code_text = code_only(text);
    let code: Vec<&str> = code_text.lines().collect();
    let is_comment = |i: usize| lines[i].trim_start().starts_with("//");
    let is_attribute = |i: usize| lines[i].trim_start().starts_with("#[");
    let mut out = Vec::new();
    for (i, line) in code.iter().enumerate() {
        for (at, _) in line.match_indices("unsafe") {
            let before = line[..at].chars().next_back();
            let after = line[at + "unsafe".len()..].chars().next();
            let ident = |c: Option<char>| c.is_some_and(|c| c.is_alphanumeric() || c == '_');
            if ident(before) || ident(after) {
                continue;
            }
            let Some(kind) = unsafe_item(&line[at + "unsafe".len()..]) else {
                continue;
            };
            // Rule 2: up to the line where the statement begins.
            let mut anchor = i;
            while anchor > 0 {
                let above = anchor - 1;
                let code_above = code.get(above).map_or("", |c| c.trim());
                if code_above.is_empty() || is_comment(above) || is_attribute(above) {
                    break;
                }
                if code_above.ends_with([';', '{', '}', ',']) {
                    break;
                }
                anchor = above;
            }
            // Rule 3: the run of comment and attribute lines right above it.
            let mut ok = false;
            let mut k = anchor;
            while k > 0 && (is_comment(k - 1) || is_attribute(k - 1)) {
                k -= 1;
                let l = lines[k].trim_start();
                ok |= l.starts_with("// SAFETY:");
                ok |= kind == UnsafeItem::Fn && l.trim_end() == "/// # Safety";
            }
            if !ok {
                out.push((i + 1, kind));
            }
        }
    }
    out
}

#[test]
fn every_unsafe_block_impl_fn_and_extern_has_a_safety_comment_directly_above() {
    let r = workspace_root();
    let mut files = rust_files(&r.join("syscalls"));
    files.extend(UNSAFE_MODULES.iter().map(|m| r.join(m)).filter(|p| p.is_file()));
    let mut missing = Vec::new();
    for file in files {
        let text = fs::read_to_string(&file).expect("source");
        let rel = file.strip_prefix(&r).expect("in the workspace").display().to_string();
        for (line, kind) in misplaced_safety_comments(&text) {
            missing.push(format!("{rel}:{line}: unsafe {kind:?}"));
        }
    }
    assert!(
        missing.is_empty(),
        "no `// SAFETY:` comment (or `# Safety` doc, for an unsafe fn) directly above:\n{}",
        missing.join("\n")
    );
}

#[test]
fn the_safety_rule_takes_only_a_comment_directly_above() {
    use UnsafeItem::*;
    let misplaced = misplaced_safety_comments;
    // Accepted: directly above, above the statement's first line, over attributes, several
    // comment lines, a `# Safety` doc for a fn.
    let good = [
        "// SAFETY: fd is live.\nunsafe { close(fd) };",
        "// SAFETY: fd is live.\nlet r = unsafe { close(fd) };",
        "// SAFETY: fd is live.\nOk(unsafe { OwnedFd::from_raw_fd(fd) })",
        "// SAFETY: the pointer is\n// valid for the call.\nlet r =\n    unsafe { read(p) };",
        "// Why this is needed.\n// SAFETY: p is live.\nunsafe {\n    read(p)\n}",
        "// SAFETY: no shared state.\n#[cfg(unix)]\nunsafe impl Send for X {}",
        "/// Reads.\n///\n/// # Safety\n/// p must be live.\n#[inline]\npub unsafe fn read(p: *const u8) {}",
        "// SAFETY: the signature is the asm's.\nunsafe extern \"C\" {\n    fn f();\n}",
        "struct V { poll: unsafe fn(*const ()), wake: unsafe extern \"C\" fn() }",
        "// unsafe { in a comment }\nlet s = \"unsafe { in a string }\";\n#![deny(unsafe_code)]",
    ];
    for src in good {
        assert_eq!(misplaced(src), vec![], "{src}");
    }
    // Rejected: a blank line or another statement in between, the comment below or on the same
    // line, a doc without `# Safety`, a `# Safety` doc on a block, or a comment twelve lines up (the
    // old rule's window took it).
    let bad: [(&str, Vec<(usize, UnsafeItem)>); 9] = [
        ("// SAFETY: fd is live.\n\nunsafe { close(fd) };", vec![(3, Block)]),
        (
            "// SAFETY: fd is live.\nlet a = 1;\nunsafe { close(fd) };",
            vec![(3, Block)],
        ),
        ("unsafe { close(fd) }; // SAFETY: fd is live.", vec![(1, Block)]),
        (
            "unsafe {\n    // SAFETY: fd is live.\n    close(fd)\n}",
            vec![(1, Block)],
        ),
        (
            "f(\n    a,\n    // SAFETY: p is live.\n    read(p),\n    unsafe { g() },\n);",
            vec![(5, Block)],
        ),
        ("unsafe impl Send for X {}", vec![(1, Impl)]),
        ("/// Reads p.\npub unsafe fn read(p: *const u8) {}", vec![(2, Fn)]),
        ("/// # Safety\nunsafe { close(fd) };", vec![(2, Block)]),
        (
            "// SAFETY: far away.\nlet a = 1;\nlet b = 2;\nlet c = 3;\nlet d = 4;\nlet e = 5;\nlet f = 6;\n\
             let g = 7;\nlet h = 8;\nlet i = 9;\nlet j = 10;\nlet k = 11;\nunsafe { close(fd) };",
            vec![(13, Block)],
        ),
    ];
    for (src, want) in bad {
        assert_eq!(misplaced(src), want, "{src}");
    }
    assert_eq!(
        misplaced("unsafe extern \"C\" {\n    fn f();\n}\nunsafe fn g() {}"),
        vec![(1, Extern), (4, Fn)]
    );
}

#[test]
fn every_module_opens_with_a_doc_paragraph() {
    let r = workspace_root();
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

// ---------------------------------------------------------------------------------------------
// Layers of runtime/src: dependencies point one way.

/// The runtime's layers, lowest first, as folders of `runtime/src` (the book's chapter 1 has the
/// same table). A file may import from its own folder, from a folder of a lower rank, and from
/// the `evloop-syscalls` / `evloop-timers` crates below them all; never from a higher rank.
/// `io` and `sync` share a rank and must not import each other: neither was put below the other;
/// nor may `os` and `fiber`.
const LAYERS: &[(&str, u8)] = &[
    ("event_loop", 1),
    ("task", 2),
    ("io", 3),
    ("sync", 3),
    ("os", 4),
    ("fiber", 4),
    ("runtime", 5),
];

/// The code of a source file with comments and string literals blanked out, so that doc links
/// and messages that name a module are not mistaken for imports. Every line break is kept, so
/// line `n` of the result is line `n` of the source.
fn code_only(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    let (mut in_str, mut in_line_comment, mut block_depth) = (false, false, 0u32);
    while let Some(c) = chars.next() {
        if in_line_comment {
            if c == '\n' {
                in_line_comment = false;
                out.push('\n');
            }
            continue;
        }
        if block_depth > 0 {
            if c == '*' && chars.peek() == Some(&'/') {
                chars.next();
                block_depth -= 1;
            } else if c == '/' && chars.peek() == Some(&'*') {
                chars.next();
                block_depth += 1;
            } else if c == '\n' {
                out.push('\n');
            }
            continue;
        }
        if in_str {
            if c == '\\' {
                // An escaped newline (a string continued on the next line) still ends a line.
                if chars.next() == Some('\n') {
                    out.push('\n');
                }
            } else if c == '"' {
                in_str = false;
            } else if c == '\n' {
                out.push('\n');
            }
            continue;
        }
        match c {
            '/' if chars.peek() == Some(&'/') => in_line_comment = true,
            '/' if chars.peek() == Some(&'*') => {
                chars.next();
                block_depth = 1;
            }
            '"' => in_str = true,
            // A char literal such as '"' must not open a string; a lifetime is left alone.
            '\'' => {
                let mut ahead = chars.clone();
                match (ahead.next(), ahead.next()) {
                    (Some('\\'), _) => {
                        // '\n', '\'', '\u{..}': skip to the closing quote.
                        chars.next();
                        chars.next();
                        for c in chars.by_ref() {
                            if c == '\'' {
                                break;
                            }
                        }
                    }
                    (Some(_), Some('\'')) => {
                        chars.next();
                        chars.next();
                    }
                    _ => out.push(c),
                }
            }
            _ => out.push(c),
        }
    }
    out
}

/// The first path segment of every `crate::...` reference in `code`, with its line number,
/// including each branch of a `use crate::{a::X, b::Y}` group.
fn crate_references(code: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    for (i, _) in code.match_indices("crate::") {
        // `evloop_crate::` or `my_crate::` is not the crate root.
        if code[..i]
            .chars()
            .last()
            .is_some_and(|c| c.is_alphanumeric() || c == '_')
        {
            continue;
        }
        let line = code[..i].matches('\n').count() + 1;
        let rest = &code[i + "crate::".len()..];
        // `$crate::name!` in a `macro_rules!` body: `#[macro_export]` macros live at the crate
        // root by the language's rule, so that path is the defining one, not a re-export.
        if code[..i].ends_with('$') {
            let name: String = rest.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
            if rest[name.len()..].starts_with('!') {
                continue;
            }
        }
        if let Some(group) = rest.strip_prefix('{') {
            let mut depth = 1;
            let end = group
                .char_indices()
                .find(|&(_, c)| {
                    match c {
                        '{' => depth += 1,
                        '}' => depth -= 1,
                        _ => {}
                    }
                    depth == 0
                })
                .map_or(group.len(), |(j, _)| j);
            let mut depth = 0;
            let mut start = 0;
            let inner = &group[..end];
            for (j, c) in inner.char_indices().chain([(inner.len(), ',')]) {
                match c {
                    '{' => depth += 1,
                    '}' => depth -= 1,
                    ',' if depth == 0 => {
                        let seg: String = inner[start..j]
                            .trim()
                            .chars()
                            .take_while(|c| c.is_alphanumeric() || *c == '_')
                            .collect();
                        if !seg.is_empty() {
                            out.push((line, seg));
                        }
                        start = j + 1;
                    }
                    _ => {}
                }
            }
        } else {
            let seg: String = rest.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
            out.push((line, seg));
        }
    }
    out
}

/// Every import of `text` (a file of layer folder `folder`) that breaks the layer order.
fn layer_violations(folder: &str, text: &str) -> Vec<String> {
    let rank = |f: &str| LAYERS.iter().find(|(name, _)| *name == f).map(|&(_, r)| r);
    let Some(mine) = rank(folder) else {
        return vec![format!("folder `{folder}` is not in LAYERS")];
    };
    let mut out = Vec::new();
    for (line, seg) in crate_references(&code_only(text)) {
        match rank(&seg) {
            None => out.push(format!(
                "line {line}: `crate::{seg}` is not a layer folder: import from the defining module, \
                 not through lib.rs's re-exports"
            )),
            Some(theirs) if theirs > mine => out.push(format!(
                "line {line}: `{folder}` (rank {mine}) imports `crate::{seg}` (rank {theirs}): an upward import"
            )),
            Some(theirs) if theirs == mine && seg != folder => out.push(format!(
                "line {line}: `{folder}` imports its sibling `crate::{seg}`: move one below the other on purpose first"
            )),
            Some(_) => {}
        }
    }
    out
}

#[test]
fn no_file_imports_from_a_higher_layer() {
    let src = workspace_root().join("runtime/src");
    let mut problems = Vec::new();
    let mut checked = 0;
    for file in rust_files(&src) {
        let rel = file.strip_prefix(&src).expect("under src");
        let mut parts = rel.iter().map(|p| p.to_string_lossy().into_owned());
        let first = parts.next().expect("a path");
        if rel.components().count() == 1 {
            // Only lib.rs sits at the top: every other file lives in its layer's folder.
            assert_eq!(first, "lib.rs", "{} is not in a layer folder", file.display());
            continue;
        }
        let text = fs::read_to_string(&file).expect("source");
        for p in layer_violations(&first, &text) {
            problems.push(format!("{}: {p}", rel.display()));
        }
        checked += 1;
    }
    assert!(
        checked >= 25,
        "only {checked} files checked: is the tree where this test looks?"
    );
    assert!(
        problems.is_empty(),
        "imports against the layer order:\n{}",
        problems.join("\n")
    );
}

#[test]
fn every_layer_folder_exists_and_lib_rs_only_declares_and_reexports() {
    let src = workspace_root().join("runtime/src");
    for (folder, _) in LAYERS {
        assert!(
            src.join(folder).join("mod.rs").is_file(),
            "runtime/src/{folder}/mod.rs is missing"
        );
    }
    let lib = code_only(&fs::read_to_string(src.join("lib.rs")).expect("lib.rs"));
    for word in ["fn ", "struct ", "enum ", "impl ", "trait ", "static ", "const "] {
        assert!(
            !lib.contains(word),
            "lib.rs holds code (`{word}`): it should only declare modules and re-export"
        );
    }
}

#[test]
fn the_layer_check_catches_upward_sibling_and_root_imports() {
    // The checker itself, on made-up files: it must not pass everything.
    assert!(layer_violations("event_loop", "use crate::task::Task;\n")[0].contains("upward"));
    assert!(layer_violations("task", "use crate::{event_loop::LoopHandle, os::signal};")[0].contains("upward"));
    assert!(layer_violations("io", "fn f() { crate::sync::Lock::new(); }")[0].contains("sibling"));
    assert!(layer_violations("sync", "use crate::Lock;")[0].contains("re-exports"));
    // A macro calling itself through `$crate::` is fine; `$crate::` paths to items are not.
    assert!(layer_violations("sync", "macro_rules! m { () => { $crate::m!(@x) } }").is_empty());
    assert!(layer_violations("sync", "macro_rules! m { () => { $crate::Lock::new() } }")[0].contains("re-exports"));
    assert!(layer_violations("fiber", "use crate::os::signal::recv;")[0].contains("sibling"));
    assert!(layer_violations("fiber", "use crate::{io::net::TcpStream, task::Task};").is_empty());
    assert!(
        layer_violations(
            "os",
            "use crate::event_loop::X;\nuse crate::sync::Y;\nuse crate::io::Z;"
        )
        .is_empty()
    );
    // Doc links, comments and strings are not imports.
    assert!(
        layer_violations(
            "event_loop",
            "/// see [`x`](crate::os::signal)\n// crate::task\nconst S: &str = \"crate::io\";\n"
        )
        .is_empty()
    );
}

/// The methods each layer adds to `LoopHandle` (its own `impl LoopHandle` blocks): a name and
/// the layer's rank, for names that only one layer defines.
fn loop_handle_methods() -> Vec<(String, String, u8)> {
    let src = workspace_root().join("runtime/src");
    let mut found: Vec<(String, String, u8)> = Vec::new();
    for file in rust_files(&src) {
        let rel = file.strip_prefix(&src).expect("under src");
        let folder = rel.iter().next().expect("a path").to_string_lossy().into_owned();
        let Some(&(_, rank)) = LAYERS.iter().find(|(f, _)| *f == folder) else {
            continue;
        };
        let code = code_only(&fs::read_to_string(&file).expect("source"));
        let mut rest = code.as_str();
        while let Some(i) = rest.find("impl LoopHandle {") {
            let body = &rest[i + "impl LoopHandle {".len()..];
            let mut depth = 1;
            let end = body
                .char_indices()
                .find(|&(_, c)| {
                    match c {
                        '{' => depth += 1,
                        '}' => depth -= 1,
                        _ => {}
                    }
                    depth == 0
                })
                .map_or(body.len(), |(j, _)| j);
            let block = &body[..end];
            for (k, _) in block.match_indices("fn ") {
                let name: String = block[k + 3..]
                    .chars()
                    .take_while(|c| c.is_alphanumeric() || *c == '_')
                    .collect();
                if !name.is_empty() {
                    found.push((name, folder.clone(), rank));
                }
            }
            rest = &body[end..];
        }
    }
    let unique: Vec<(String, String, u8)> = found
        .iter()
        .filter(|(n, _, r)| found.iter().filter(|(m, _, s)| m == n && s != r).count() == 0)
        .cloned()
        .collect();
    unique
}

#[test]
fn no_file_calls_a_loop_method_that_a_higher_layer_defines() {
    // `impl LoopHandle` blocks let every layer add loop methods (create_task in task/,
    // create_server in io/, add_signal_handler in os/); calling one from a lower layer is an
    // upward dependency that no `use` line shows.
    let methods = loop_handle_methods();
    assert!(
        methods.iter().any(|(n, _, _)| n == "create_task"),
        "the scan found no loop methods"
    );
    let src = workspace_root().join("runtime/src");
    let mut problems = Vec::new();
    for file in rust_files(&src) {
        let rel = file.strip_prefix(&src).expect("under src");
        let folder = rel.iter().next().expect("a path").to_string_lossy().into_owned();
        let Some(&(_, mine)) = LAYERS.iter().find(|(f, _)| *f == folder) else {
            continue;
        };
        let code = code_only(&fs::read_to_string(&file).expect("source"));
        for (name, owner, rank) in &methods {
            // A method of the same name on one of this file's own types is not the loop's.
            let own = code.contains(&format!("fn {name}("));
            if *rank > mine && !own && code.contains(&format!(".{name}(")) {
                problems.push(format!(
                    "{}: calls `{name}`, a loop method of `{owner}` (rank {rank})",
                    rel.display()
                ));
            }
        }
    }
    assert!(
        problems.is_empty(),
        "calls against the layer order:\n{}",
        problems.join("\n")
    );
}

// ---------------------------------------------------------------------------------------------
// Each layer owns its vocabulary: no type sinks below the layers that use it.

/// Types that only higher layers use but that belong where they are, each with the reason. The
/// check fails on an entry that is no longer needed, so the list cannot go stale.
const SINK_ALLOWED: &[(&str, &str)] = &[
    // The wrong-loop rule is the loop's (loop ids, which loop runs on this thread), and this is
    // its one error: every layer that binds an object to a loop (promises, tasks, fds, sync
    // primitives, signals) reports a wait from another loop with it, so its message is written
    // once. The loop itself binds nothing.
    ("event_loop/error.rs", "WrongLoopError"),
    // The task layer's way to poll an owned source's async operation (a receiver's `recv`, a
    // listener's `accept`) as a stream: the stream wrappers of sync/ and io/ both use it, and
    // in either folder it would make the other import its sibling.
    ("task/stream/owned.rs", "OwnedPoll"),
    // A future, then its output in the same place (futures-util's `MaybeDone`): generic future
    // machinery, not a sync concept, which `join!`/`try_join!` (sync/) use. It needs `unsafe`
    // (the projection of its pinned variant), which lives only in the named modules, so it sits
    // with the task cell's pinning, beside `Project`, in event_loop/raw_task.rs.
    ("event_loop/raw_task.rs", "MaybeDone"),
];

/// A brace block of a source file: what its header (the text before the `{`) makes it, where
/// the header starts, and where the block ends (one past its `}`).
#[derive(Clone, Debug)]
struct Block {
    kind: BlockKind,
    header: String,
    start: usize,
    open: usize,
    end: usize,
}

#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum BlockKind {
    Fn,
    Impl,
    Trait,
    Mod,
    Type,
    Other,
}

fn has_word(text: &str, word: &str) -> bool {
    word_positions(text, word).next().is_some()
}

fn is_ident(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// Where `word` occurs in `text` as a whole identifier.
fn word_positions<'a>(text: &'a str, word: &'a str) -> impl Iterator<Item = usize> + 'a {
    text.match_indices(word).map(|(i, _)| i).filter(move |&i| {
        !text[..i].chars().next_back().is_some_and(is_ident)
            && !text[i + word.len()..].chars().next().is_some_and(is_ident)
    })
}

/// Every brace block of `code` (comments and strings already blanked), innermost first.
fn blocks(code: &str) -> Vec<Block> {
    let mut open: Vec<(BlockKind, String, usize, usize)> = Vec::new();
    let mut out = Vec::new();
    let mut last = 0;
    for (i, c) in code.char_indices() {
        match c {
            '{' => {
                let header = code[last..i].trim().to_string();
                let kind = if has_word(&header, "fn") {
                    BlockKind::Fn
                } else if has_word(&header, "impl") {
                    BlockKind::Impl
                } else if has_word(&header, "trait") {
                    BlockKind::Trait
                } else if has_word(&header, "mod") {
                    BlockKind::Mod
                } else if ["struct", "enum", "union"].iter().any(|k| has_word(&header, k)) {
                    BlockKind::Type
                } else {
                    BlockKind::Other
                };
                open.push((kind, header, last, i));
                last = i + 1;
            }
            '}' => {
                if let Some((kind, header, start, o)) = open.pop() {
                    out.push(Block {
                        kind,
                        header,
                        start,
                        open: o,
                        end: i + 1,
                    });
                }
                last = i + 1;
            }
            ';' => last = i + 1,
            _ => {}
        }
    }
    out
}

/// Whether `pos` lies at module level: inside no block but modules.
fn at_module_level(blocks: &[Block], pos: usize) -> bool {
    blocks
        .iter()
        .filter(|b| b.open < pos && pos < b.end)
        .all(|b| b.kind == BlockKind::Mod)
}

/// `code` with every `#[cfg(test)]` module blanked (newlines kept): test code is no layer's use.
fn without_test_modules(code: &str) -> String {
    let mut out = code.to_string();
    for b in blocks(code) {
        if b.kind == BlockKind::Mod && b.header.contains("cfg(test)") {
            // Byte for byte, so that the positions of the blocks after it stay valid.
            let blank: String = code[b.start..b.end]
                .chars()
                .flat_map(|c| std::iter::repeat_n(if c == '\n' { '\n' } else { ' ' }, c.len_utf8()))
                .collect();
            out.replace_range(b.start..b.end, &blank);
        }
    }
    out
}

/// A type defined at module level of a layer folder's file.
#[derive(Debug)]
struct TypeDef {
    name: String,
    is_trait: bool,
    /// Whether it has a visibility (`pub`, `pub(crate)`, ...); a private type is usable only in
    /// its own module, so it cannot sink.
    visible: bool,
    file: usize,
    span: (usize, usize),
}

/// An `impl` block at module level: the head of its self type (`Waiter` for
/// `impl<..> Waiter<R, L>`) and its trait part (`From<TaskError>` for
/// `impl From<TaskError> for io::Error`; empty for an inherent impl).
#[derive(Debug)]
struct ImplBlock {
    span: (usize, usize),
    self_head: String,
    trait_part: String,
}

fn parse_impl_header(header: &str) -> (String, String) {
    let flat: String = header.split_whitespace().collect::<Vec<_>>().join(" ");
    let Some(at) = word_positions(&flat, "impl").next() else {
        return (String::new(), String::new());
    };
    let mut rest = flat[at + "impl".len()..].trim_start();
    if rest.starts_with('<') {
        let mut depth = 0;
        for (i, c) in rest.char_indices() {
            match c {
                '<' => depth += 1,
                '>' => {
                    depth -= 1;
                    if depth == 0 {
                        rest = &rest[i + 1..];
                        break;
                    }
                }
                _ => {}
            }
        }
    }
    let rest = match word_positions(rest, "where").next() {
        Some(w) => &rest[..w],
        None => rest,
    };
    let (trait_part, self_part) = match rest.find(" for ") {
        Some(f) => (&rest[..f], &rest[f + " for ".len()..]),
        None => ("", rest),
    };
    let self_part = self_part.trim().trim_start_matches("dyn ").trim();
    let path: String = self_part.chars().take_while(|&c| is_ident(c) || c == ':').collect();
    let head = path.rsplit("::").next().unwrap_or("").to_string();
    (head, trait_part.trim().to_string())
}

/// One source file of a layer folder, prepared for the check.
struct Source {
    /// Relative to `runtime/src`, e.g. `task/spawn.rs`.
    rel: String,
    folder: String,
    code: String,
    impls: Vec<ImplBlock>,
    /// The `use` declarations: an import is not a use (re-exports in `mod.rs` would make every
    /// type "used" by its own folder).
    uses: Vec<(usize, usize)>,
}

fn parse_source(rel: &str, text: &str) -> (Source, Vec<TypeDef>) {
    let code = without_test_modules(&code_only(text));
    let blocks = blocks(&code);
    let mut impls = Vec::new();
    for b in &blocks {
        if b.kind == BlockKind::Impl && at_module_level(&blocks, b.open) {
            let (self_head, trait_part) = parse_impl_header(&b.header);
            impls.push(ImplBlock {
                span: (b.start, b.end),
                self_head,
                trait_part,
            });
        }
    }
    let mut uses = Vec::new();
    let mut defs = Vec::new();
    let mut offset = 0;
    for line in code.split_inclusive('\n') {
        let at = offset;
        offset += line.len();
        let trimmed = line.trim_start();
        let indent = line.len() - trimmed.len();
        let (visible, item) = match trimmed.strip_prefix("pub") {
            Some(r) if r.starts_with('(') => (true, r[r.find(')').map_or(0, |p| p + 1)..].trim_start()),
            Some(r) if r.starts_with(' ') => (true, r.trim_start()),
            _ => (false, trimmed),
        };
        if item.starts_with("use ") {
            let end = code[at..].find(';').map_or(code.len(), |e| at + e + 1);
            uses.push((at, end));
            continue;
        }
        let Some((keyword, rest)) = ["struct ", "enum ", "trait ", "type ", "union "]
            .iter()
            .find_map(|k| item.strip_prefix(k).map(|r| (*k, r)))
        else {
            continue;
        };
        let name: String = rest.chars().take_while(|&c| is_ident(c)).collect();
        let start = at + indent;
        if name.is_empty() || !at_module_level(&blocks, start) {
            continue;
        }
        // The definition runs to its `;` or to the end of its body.
        let after = start + (line.len() - indent - rest.len()) + name.len();
        let semi = code[after..].find(';').map(|p| after + p);
        let brace = code[after..].find('{').map(|p| after + p);
        let end = match (semi, brace) {
            (Some(s), Some(b)) if b < s => blocks.iter().find(|x| x.open == b).map_or(s, |x| x.end),
            (None, Some(b)) => blocks.iter().find(|x| x.open == b).map_or(code.len(), |x| x.end),
            (Some(s), _) => s + 1,
            (None, None) => code.len(),
        };
        defs.push(TypeDef {
            name,
            is_trait: keyword == "trait ",
            visible,
            file: usize::MAX,
            span: (start, end),
        });
    }
    let folder = rel.split('/').next().unwrap_or("").to_string();
    let source = Source {
        rel: rel.to_string(),
        folder,
        code,
        impls,
        uses,
    };
    (source, defs)
}

fn line_of(code: &str, pos: usize) -> usize {
    code[..pos].matches('\n').count() + 1
}

/// Every type of `files` (pairs of a path relative to `runtime/src` and its text, in layer
/// folders) that only higher layers use, directly or through types that only higher layers
/// use: `(type, where it is defined, where it is used)`.
fn sunk_types(files: &[(String, String)]) -> Vec<(String, String, Vec<String>)> {
    let rank = |folder: &str| LAYERS.iter().find(|(f, _)| *f == folder).map(|&(_, r)| r);
    let mut sources = Vec::new();
    let mut defs: Vec<TypeDef> = Vec::new();
    for (rel, text) in files {
        if rank(rel.split('/').next().unwrap_or("")).is_none() {
            continue;
        }
        // A test module's file (`foo/tests.rs`): test code is no layer's use.
        if rel.ends_with("/tests.rs") {
            continue;
        }
        let (source, file_defs) = parse_source(rel, text);
        let file = sources.len();
        defs.extend(file_defs.into_iter().map(|d| TypeDef { file, ..d }));
        sources.push(source);
    }
    // Which definition a name means in a file: its own, else its folder's, else the only one (a
    // name that could mean the types of two other folders means neither: the check stays silent
    // rather than guess).
    let resolve = |name: &str, file: usize| -> Option<usize> {
        let same: Vec<usize> = (0..defs.len()).filter(|&d| defs[d].name == name).collect();
        let pick = |f: &dyn Fn(usize) -> bool| -> Option<usize> {
            let found: Vec<usize> = same.iter().copied().filter(|&d| f(d)).collect();
            (found.len() == 1).then(|| found[0])
        };
        pick(&|d| defs[d].file == file)
            .or_else(|| pick(&|d| sources[defs[d].file].folder == sources[file].folder))
            .or_else(|| (same.len() == 1).then(|| same[0]))
    };
    // An impl block belongs to the type it implements, and (for a trait impl such as
    // `From<TaskError> for io::Error`) to a non-trait type its trait part names: both are that
    // type's own code, not uses of it.
    let owns = |d: usize, file: usize, imp: &ImplBlock| -> bool {
        let def = &defs[d];
        (imp.self_head == def.name && resolve(&imp.self_head, file) == Some(d))
            || (!def.is_trait && has_word(&imp.trait_part, &def.name) && resolve(&def.name, file) == Some(d))
    };
    // The uses of each visible type: (file, position, the type whose own code holds the use).
    let mut uses: Vec<Vec<(usize, usize, Option<usize>)>> = vec![Vec::new(); defs.len()];
    for d in 0..defs.len() {
        if !defs[d].visible {
            continue;
        }
        for (f, src) in sources.iter().enumerate() {
            if resolve(&defs[d].name, f) != Some(d) && f != defs[d].file {
                continue;
            }
            for pos in word_positions(&src.code, &defs[d].name) {
                let inside = |(s, e): (usize, usize)| s <= pos && pos < e;
                if (f == defs[d].file && inside(defs[d].span)) || src.uses.iter().any(|&u| inside(u)) {
                    continue;
                }
                if src.impls.iter().any(|i| inside(i.span) && owns(d, f, i)) {
                    continue;
                }
                let holder = (0..defs.len())
                    .find(|&o| defs[o].file == f && inside(defs[o].span))
                    .or_else(|| {
                        src.impls
                            .iter()
                            .filter(|i| inside(i.span))
                            .find_map(|i| resolve(&i.self_head, f))
                    })
                    .filter(|&o| o != d);
                uses[d].push((f, pos, holder));
            }
        }
    }
    // The rank a type is used at: the lowest of its uses, where a use inside another type's own
    // code counts at that type's rank (so that `TaskError` inside a sunk `RunError` counts where
    // `RunError` is used). Starts at each type's own rank and only rises.
    let own_rank = |d: usize| rank(&sources[defs[d].file].folder).expect("a layer folder");
    let mut used_at: Vec<u8> = (0..defs.len()).map(own_rank).collect();
    for _ in 0..=defs.len() {
        let mut changed = false;
        for d in 0..defs.len() {
            if uses[d].is_empty() {
                continue;
            }
            let r = uses[d]
                .iter()
                .map(|&(f, _, holder)| {
                    let here = rank(&sources[f].folder).expect("a layer folder");
                    holder.map_or(here, |h| here.max(used_at[h]))
                })
                .min()
                .expect("a use");
            if r != used_at[d] {
                used_at[d] = r;
                changed = true;
            }
        }
        if !changed {
            break;
        }
    }
    let mut out = Vec::new();
    for d in 0..defs.len() {
        if used_at[d] > own_rank(d) {
            let src = &sources[defs[d].file];
            let mut at: Vec<String> = uses[d]
                .iter()
                .map(|&(f, pos, _)| format!("{}:{}", sources[f].rel, line_of(&sources[f].code, pos)))
                .collect();
            at.dedup();
            out.push((
                defs[d].name.clone(),
                format!("{}:{}", src.rel, line_of(&src.code, defs[d].span.0)),
                at,
            ));
        }
    }
    out
}

#[test]
fn no_type_is_defined_below_every_layer_that_uses_it() {
    let src = workspace_root().join("runtime/src");
    let files: Vec<(String, String)> = rust_files(&src)
        .into_iter()
        .map(|f| {
            let rel = f.strip_prefix(&src).expect("under src").to_string_lossy().into_owned();
            (rel, fs::read_to_string(&f).expect("source"))
        })
        .collect();
    let sunk = sunk_types(&files);
    let mut problems = Vec::new();
    for (name, defined, used) in &sunk {
        let file = defined.split(':').next().unwrap_or("");
        if SINK_ALLOWED.contains(&(file, name.as_str())) {
            continue;
        }
        problems.push(format!(
            "`{name}` is defined in {defined} but only higher layers use it: {}",
            used.join(", ")
        ));
    }
    for (file, name) in SINK_ALLOWED {
        if !sunk
            .iter()
            .any(|(n, d, _)| n == name && d.split(':').next() == Some(*file))
        {
            problems.push(format!(
                "SINK_ALLOWED lists `{name}` ({file}), which its own layer uses now (or which is gone): remove the entry"
            ));
        }
    }
    assert!(
        problems.is_empty(),
        "types sunk below their users (move each to the lowest layer that uses it, or give its own \
         layer a neutral type; allow a genuinely neutral one in SINK_ALLOWED with the reason):\n{}",
        problems.join("\n")
    );
}

#[test]
fn the_sinking_check_catches_a_sunk_type_and_passes_a_used_one() {
    let file = |rel: &str, text: &str| (rel.to_string(), text.to_string());
    let names = |files: &[(String, String)]| -> Vec<String> { sunk_types(files).into_iter().map(|s| s.0).collect() };
    // A loop-layer error only the task layer names: sunk, reported with both places.
    let sunk = sunk_types(&[
        file(
            "event_loop/error.rs",
            "pub struct TaskError;\nimpl TaskError { fn f() {} }\n",
        ),
        file("event_loop/mod.rs", "pub(crate) use self::error::TaskError;\n"),
        file(
            "task/handle.rs",
            "use crate::event_loop::error::TaskError;\nfn f() -> TaskError { todo!() }\n",
        ),
    ]);
    assert_eq!(sunk.len(), 1, "{sunk:?}");
    assert_eq!(sunk[0].0, "TaskError");
    assert_eq!(sunk[0].1, "event_loop/error.rs:1");
    assert_eq!(sunk[0].2, ["task/handle.rs:2"]);
    // The same type used by its own layer too (in a function, not its impl or a re-export): fine.
    let used = [
        file("event_loop/error.rs", "pub struct LoopError;\n"),
        file(
            "event_loop/phases.rs",
            "fn f() -> crate::event_loop::error::LoopError { todo!() }\n",
        ),
        file("task/spawn.rs", "fn g(_: LoopError) {}\n"),
    ];
    assert!(names(&used).is_empty());
    // Not a use: its own impls (a trait impl naming it included), comments, strings, tests.
    let own_only = [
        file(
            "event_loop/error.rs",
            "pub enum RunError {}\nimpl From<RunError> for std::io::Error { fn from(_: RunError) -> Self { todo!() } }\n\
             // RunError\nconst S: &str = \"RunError\";\n#[cfg(test)]\nmod tests { fn t(_: super::RunError) {} }\n",
        ),
        file("task/runner.rs", "fn run() -> Result<(), RunError> { todo!() }\n"),
    ];
    assert_eq!(names(&own_only), ["RunError"]);
    // Through another sunk type: `TaskError` named by a sunk `RunError` counts where `RunError`
    // is used.
    let through = [
        file(
            "event_loop/error.rs",
            "pub enum TaskError {}\npub enum RunError { Task(TaskError) }\n",
        ),
        file(
            "task/runner.rs",
            "fn run() -> Result<(), RunError> { todo!() }\nfn t(_: TaskError) {}\n",
        ),
    ];
    assert_eq!(names(&through), ["TaskError", "RunError"]);
    // A private type cannot sink; a same-named type of another folder is that folder's own.
    let private = [
        file("event_loop/executor.rs", "struct Pool;\npub(crate) struct Queue;\n"),
        file("sync/queue/handle.rs", "pub struct Queue;\nfn f(_: Queue) {}\n"),
        file("sync/pool.rs", "fn f(_: Pool) {}\n"),
    ];
    assert!(names(&private).is_empty(), "{:?}", sunk_types(&private));
    // A trait of the loop that a higher layer implements and the loop calls is the loop's.
    let trait_used = [
        file(
            "event_loop/inner.rs",
            "pub(crate) trait DeferredFlush { fn flush(&self); }\nfn run(f: &dyn DeferredFlush) { f.flush() }\n",
        ),
        file(
            "io/transport.rs",
            "impl DeferredFlush for Transport { fn flush(&self) {} }\n",
        ),
    ];
    assert!(names(&trait_used).is_empty());
    // ... and one only a higher layer implements and uses has sunk.
    let trait_sunk = [
        file("event_loop/inner.rs", "pub(crate) trait Flush { fn flush(&self); }\n"),
        file("io/transport.rs", "impl Flush for Transport { fn flush(&self) {} }\n"),
    ];
    assert_eq!(names(&trait_sunk), ["Flush"]);
    // An associated type and a type inside a function are not module-level definitions.
    let nested = [file(
        "task/time.rs",
        "impl Future for Sleep { type Output = (); }\nfn f() { struct Local; }\n",
    )];
    assert!(sunk_types(&nested).is_empty());
}
