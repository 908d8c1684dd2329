//! `#[evloop::main]` and `#[evloop::test]` (crate `evloop-macros`, runtime/macros/): the body
//! runs on a fresh loop, `virtual_clock` and `trace` configure it, return values and panics
//! pass through (a test's `#[should_panic(expected)]` sees the body's own message), and misuse
//! is a compile error that names the problem (checked by compiling small files with `rustc`
//! against the built macro crate).

use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

#[evloop::test]
async fn a_test_body_runs_inside_a_running_loop() {
    let lp = evloop::event_loop::get_running_loop().expect("a loop runs the test");
    assert!(lp.is_running());
    let t = evloop::spawn(async { 7 });
    assert_eq!(t.await.unwrap(), 7);
}

#[evloop::test(virtual_clock)]
async fn virtual_clock_runs_an_hour_of_sleeps_at_once() {
    let lp = evloop::event_loop::get_running_loop().unwrap();
    let wall = std::time::Instant::now();
    let start = lp.time();
    evloop::time::sleep(Duration::from_secs(3600)).await;
    assert_eq!(lp.time() - start, Duration::from_secs(3600), "loop time jumped exactly");
    assert!(wall.elapsed() < Duration::from_secs(60), "no real hour passed");
}

#[evloop::test(trace, virtual_clock, flavor = "current_thread")]
async fn options_combine() {
    evloop::time::sleep(Duration::from_millis(1)).await;
}

#[evloop::test]
async fn a_test_may_return_a_result() -> Result<(), String> {
    evloop::task::yield_now().await;
    Ok(())
}

#[evloop::test]
#[should_panic(expected = "the body's own message")]
async fn a_panic_keeps_its_payload_for_should_panic() {
    evloop::task::yield_now().await;
    panic!("the body's own message");
}

/// A `main`-style function under another name, so a test can call it.
#[evloop::main]
async fn main_like() -> Result<u32, String> {
    evloop::time::sleep(Duration::from_millis(1)).await;
    Ok(21 * 2)
}

#[evloop::main(virtual_clock)]
async fn main_with_options() -> Duration {
    let lp = evloop::event_loop::get_running_loop().unwrap();
    let start = lp.time();
    evloop::time::sleep(Duration::from_secs(60)).await;
    lp.time() - start
}

#[test]
fn main_returns_the_bodys_value_and_each_call_gets_a_new_loop() {
    assert_eq!(main_like(), Ok(42));
    assert_eq!(main_like(), Ok(42));
    assert_eq!(main_with_options(), Duration::from_secs(60));
    assert!(
        evloop::event_loop::get_running_loop().is_err(),
        "the loop is gone after main returns"
    );
}

// ---------------------------------------------------------------------------------------------
// Compile errors.

/// The built `evloop-macros` proc-macro library beside this test binary.
fn macro_library() -> PathBuf {
    let exe = std::env::current_exe().expect("current_exe");
    let deps = exe.parent().expect("deps dir").to_path_buf();
    let mut found: Vec<(std::time::SystemTime, PathBuf)> = std::fs::read_dir(&deps)
        .expect("read deps")
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .filter(|p| {
            let name = p.file_name().and_then(|n| n.to_str()).unwrap_or("");
            name.starts_with("libevloop_macros-") && name.ends_with(".so")
        })
        .filter_map(|p| Some((p.metadata().ok()?.modified().ok()?, p)))
        .collect();
    found.sort();
    found
        .pop()
        .map(|(_, p)| p)
        .expect("libevloop_macros-*.so next to the test binary")
}

/// Compiles `src` (which uses `evloop_macros` as `evloop`) and returns rustc's stderr.
fn compile_error_of(name: &str, src: &str) -> String {
    let dir = std::env::temp_dir().join(format!("evloop-macros-ui-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("case.rs");
    std::fs::write(&file, format!("extern crate evloop_macros as evloop;\n{src}\n")).unwrap();
    let out = Command::new(std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into()))
        .args(["--edition", "2021", "--crate-type", "bin", "--emit", "metadata", "-o"])
        .arg(dir.join("out.rmeta"))
        .arg("--extern")
        .arg(format!("evloop_macros={}", macro_library().display()))
        .arg(&file)
        .output()
        .expect("run rustc");
    let _ = std::fs::remove_dir_all(&dir);
    assert!(!out.status.success(), "{name}: expected a compile error");
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn assert_error(name: &str, src: &str, needle: &str, line: usize) {
    let err = compile_error_of(name, src);
    assert!(err.contains(needle), "{name}: no `{needle}` in:\n{err}");
    // The error points into the user's code (the second line of the file is the case's first).
    let at = format!("case.rs:{}:", line + 1);
    assert!(err.contains(&at), "{name}: not reported at line {line}:\n{err}");
    assert!(
        !err.contains("`main` function not found"),
        "{name}: a second error buries the first:\n{err}"
    );
}

#[test]
fn a_function_that_is_not_async_is_a_compile_error_naming_the_keyword() {
    assert_error(
        "not_async",
        "#[evloop::main]\nfn main() {}",
        "the `async` keyword is missing from the function declaration",
        2,
    );
    assert_error(
        "not_async_test",
        "fn main() {}\n#[evloop::test(trace)]\nfn t() {}",
        "the `async` keyword is missing",
        3,
    );
}

#[test]
fn unknown_or_malformed_options_are_compile_errors_listing_the_valid_ones() {
    assert_error(
        "unknown",
        "#[evloop::main(turbo)]\nasync fn main() {}",
        "unknown option `turbo` for #[evloop::main]: expected `trace`, `virtual_clock`",
        1,
    );
    assert_error(
        "twice",
        "#[evloop::main(trace, trace)]\nasync fn main() {}",
        "the option `trace` is given twice",
        1,
    );
    assert_error(
        "separator",
        "#[evloop::main(trace virtual_clock)]\nasync fn main() {}",
        "expected `,` between",
        1,
    );
    assert_error(
        "flavor",
        "#[evloop::main(flavor = \"multi_thread\")]\nasync fn main() {}",
        "only `flavor = \"current_thread\"` is available",
        1,
    );
    assert_error(
        "crate_path",
        "#[evloop::main(crate = 5)]\nasync fn main() {}",
        "`crate` takes a path as a string",
        1,
    );
}

#[test]
fn arguments_and_generics_are_compile_errors() {
    assert_error(
        "args",
        "#[evloop::main]\nasync fn main(x: u32) {}",
        "the main function cannot take arguments",
        2,
    );
    assert_error(
        "generic",
        "fn main() {}\n#[evloop::test]\nasync fn t<T>() {}",
        "functions cannot be generic",
        3,
    );
    assert_error(
        "unsafe",
        "fn main() {}\n#[evloop::test]\nasync unsafe fn t() {}",
        "does not take `unsafe` functions",
        3,
    );
}

#[test]
fn the_macro_crate_has_no_dependencies() {
    let manifest = evloop_tests::workspace_root().join("runtime/macros/Cargo.toml");
    let text = std::fs::read_to_string(manifest).unwrap();
    let deps = text.split("[dependencies]").nth(1).expect("a [dependencies] section");
    let entries: Vec<&str> = deps
        .lines()
        .map(str::trim)
        .take_while(|l| !l.starts_with('['))
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .collect();
    assert!(
        entries.is_empty(),
        "evloop-macros must stay dependency-free: {entries:?}"
    );
    assert!(!text.contains("[dev-dependencies]") && !text.contains("[build-dependencies]"));
}

mod plain_tests_through_the_attribute {
    use evloop::test;

    /// `#[evloop::test]` on a function that is not `async` is the built-in `#[test]`.
    #[test]
    fn a_plain_test_function_runs_as_an_ordinary_test() {
        assert!(
            evloop::event_loop::get_running_loop().is_err(),
            "no loop: it is not run on one"
        );
    }
}
