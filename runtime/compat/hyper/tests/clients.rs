//! The hyper examples under real clients: `hyper_hello` (HTTP/1.1) under curl and wrk, `hyper_hello
//! --http2` under `curl --http2-prior-knowledge` and h2load, and the `fetch` client (HTTP/1.1)
//! against the gallery's server (runtime/examples/http_server.rs) and (HTTP/2) against `hyper_hello`.
//! A client that is missing is installed with apt (wrk, nghttp2-client); when that is impossible
//! (offline, not root) the test prints why and skips. Each server runs on a thread of its own
//! with its own loop, for the life of this test binary.

use std::net::SocketAddr;
use std::process::{Command, Stdio};
use std::sync::{Mutex, mpsc};

#[allow(dead_code)]
#[path = "../examples/hyper_hello.rs"]
mod hello;

#[allow(dead_code)]
#[path = "../examples/fetch.rs"]
mod fetch;

#[allow(dead_code)]
#[path = "../../../examples/http_server.rs"]
mod http_server;

/// Starts `serve` on a loop of its own thread and returns the address it listens on.
fn start<F, Fut>(serve: F) -> SocketAddr
where
    F: FnOnce(evloop::net::TcpListener) -> Fut + Send + 'static,
    Fut: Future<Output = std::io::Result<()>> + 'static,
{
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        evloop::run(async move {
            let listener = evloop::net::TcpListener::bind("127.0.0.1:0").await?;
            tx.send(listener.local_addr()?).expect("the test waits");
            serve(listener).await
        })
    });
    rx.recv().expect("the server starts")
}

/// Whether `tool` runs, installing the apt package `package` when it does not. One install at a
/// time (the tests of this binary run in parallel; apt takes a lock).
fn ensure(tool: &str, package: &str) -> bool {
    static APT: Mutex<()> = Mutex::new(());
    let runs = || {
        Command::new(tool)
            .arg("--version")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok()
    };
    let _apt = APT.lock().unwrap_or_else(|e| e.into_inner());
    if runs() {
        return true;
    }
    eprintln!("{tool} is missing: apt-get install {package}");
    let apt = |args: &[&str]| {
        Command::new("apt-get")
            .args(args)
            .env("DEBIAN_FRONTEND", "noninteractive")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    };
    if !apt(&["install", "-y", "-q", package]) {
        apt(&["update", "-q"]);
        apt(&["install", "-y", "-q", package]);
    }
    if runs() {
        return true;
    }
    eprintln!("SKIPPED: {tool} is not installed and `apt-get install {package}` failed (offline, or not root)");
    false
}

fn output(cmd: &mut Command) -> String {
    let out = cmd.stdin(Stdio::null()).output().expect("the client starts");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{cmd:?} failed: {}\n{text}",
        String::from_utf8_lossy(&out.stderr)
    );
    text
}

#[test]
fn http1_server_under_curl() {
    let addr = start(|l| hello::serve(l, false));
    let text = output(
        Command::new("curl")
            .args(["-s", "-i", "--max-time", "10"])
            .arg(format!("http://{addr}/")),
    );
    assert!(text.starts_with("HTTP/1.1 200"), "{text}");
    assert!(text.ends_with("Hello, World!"), "{text}");
}

#[test]
fn http2_server_under_curl_prior_knowledge() {
    let addr = start(|l| hello::serve(l, true));
    let text = output(
        Command::new("curl")
            .args([
                "-s",
                "--http2-prior-knowledge",
                "--max-time",
                "10",
                "-w",
                " %{http_version}",
            ])
            .arg(format!("http://{addr}/")),
    );
    assert_eq!(text, "Hello, World! 2");
}

#[test]
fn http1_server_under_wrk() {
    if !ensure("wrk", "wrk") {
        return;
    }
    let addr = start(|l| hello::serve(l, false));
    let text = output(
        Command::new("wrk")
            .args(["-t1", "-c50", "-d1s"])
            .arg(format!("http://{addr}/")),
    );
    assert!(text.contains("Requests/sec:"), "{text}");
    assert!(!text.contains("Non-2xx") && !text.contains("Socket errors"), "{text}");
}

#[test]
fn http2_server_under_h2load() {
    if !ensure("h2load", "nghttp2-client") {
        return;
    }
    let addr = start(|l| hello::serve(l, true));
    let text = output(
        Command::new("h2load")
            .args(["-n", "5000", "-c", "10", "-m", "10"])
            .arg(format!("http://{addr}/")),
    );
    assert!(text.contains("5000 succeeded, 0 failed, 0 errored"), "{text}");
}

#[test]
fn hyper_client_fetches_from_the_gallery_server() {
    let addr = start(http_server::serve);
    let (status, body) = evloop::run(async move {
        let hello = fetch::fetch(addr, "/", None, false).await?;
        let echo = fetch::fetch(addr, "/echo", Some(b"round trip"), false).await?;
        assert_eq!((echo.0, &echo.1[..]), (200, &b"round trip"[..]));
        let missing = fetch::fetch(addr, "/nowhere", None, false).await?;
        assert_eq!(missing.0, 404);
        Ok::<_, std::io::Error>(hello)
    })
    .unwrap()
    .unwrap();
    assert_eq!(status, 200);
    assert!(!body.is_empty());
}

#[test]
fn hyper_http2_client_fetches_from_the_http2_server() {
    let addr = start(|l| hello::serve(l, true));
    let (status, body) = evloop::run(fetch::fetch(addr, "/", None, true)).unwrap().unwrap();
    assert_eq!((status, &body[..]), (200, &b"Hello, World!"[..]));
}

/// `hyper_hello_tokio.rs` is `hyper_hello.rs` but for its `use` lines and its opening paragraph.
#[test]
fn the_tokio_twin_differs_only_in_use_lines() {
    let body = |text: &str| -> Vec<String> {
        text.lines()
            .filter(|l| !l.starts_with("//!") && !l.starts_with("use "))
            .map(str::to_owned)
            .collect()
    };
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("examples");
    let evloop = std::fs::read_to_string(dir.join("hyper_hello.rs")).expect("hello.rs");
    let tokio = std::fs::read_to_string(dir.join("hyper_hello_tokio.rs")).expect("hello_tokio.rs");
    assert_eq!(body(&evloop), body(&tokio));
}
