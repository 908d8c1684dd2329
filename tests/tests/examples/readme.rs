//! The README works for someone with only the clone: its first program is exactly
//! `runtime/examples/readme.rs` (which `make test` compiles), the command it gives runs that
//! example, and it points only at files that exist in the repository.

use evloop_tests::{read_workspace_file, workspace_root};

#[test]
fn the_first_program_is_the_readme_example() {
    let readme = read_workspace_file("README.md");
    let block = readme
        .split("## A first program\n\n```rust\n")
        .nth(1)
        .and_then(|rest| rest.split("```").next())
        .expect("a rust block under 'A first program'");
    let example = read_workspace_file("runtime/examples/readme.rs");
    let code: String = example
        .lines()
        .skip_while(|l| l.starts_with("//!"))
        .skip_while(|l| l.is_empty())
        .map(|l| format!("{l}\n"))
        .collect();
    assert_eq!(
        block, code,
        "README.md's first program and runtime/examples/readme.rs differ"
    );
    assert!(readme.contains("cargo run -p evloop --example readme"));
}

#[test]
fn every_path_the_readme_names_exists_and_nothing_points_outside() {
    let readme = read_workspace_file("README.md");
    for path in [
        "docs/README.md",
        "docs/design.md",
        "runtime/examples/readme.rs",
        "LICENSE-MIT",
        "LICENSE-APACHE",
        "runtime/macros",
        "runtime/examples",
    ] {
        assert!(readme.contains(path), "the README no longer mentions {path}");
        assert!(
            workspace_root().join(path).exists(),
            "the README names {path}, which does not exist"
        );
    }
    for example in [
        "http_server",
        "redis_server",
        "chat_server",
        "port_from_tokio",
        "graceful_shutdown",
    ] {
        assert!(
            workspace_root()
                .join(format!("runtime/examples/{example}.rs"))
                .is_file(),
            "{example}"
        );
    }
    for outside in ["http://", "https://", "../shared", "DESIGN.md", "seeds/"] {
        assert!(
            !readme.contains(outside),
            "the README points outside the repository: {outside}"
        );
    }
    // The set-up commands are the Makefile's.
    let makefile = read_workspace_file("Makefile");
    for target in ["demo:", "test:", "publish-check:"] {
        assert!(makefile.contains(target), "Makefile target {target}");
    }
}
