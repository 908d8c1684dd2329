//! The WebSocket echo example (examples/ws_echo.rs: async-tungstenite over evloop's sockets
//! through `Compat`) under a real client: the `websockets` package from PyPI, installed with
//! pip when missing; when that is impossible (offline) the test prints why and skips. The
//! client sends a text message, a 70 KB one (several frames' worth of reads), a binary one and a
//! ping, checks each echo, and closes with the closing handshake.

use std::process::{Command, Stdio};
use std::sync::mpsc;

#[allow(dead_code)]
#[path = "../examples/ws_echo.rs"]
mod ws_echo;

const CLIENT: &str = r#"
import asyncio, sys
import websockets

async def main():
    async with websockets.connect(sys.argv[1], max_size=None) as ws:
        for msg in ["hello", "x" * 70000, b"\x00\x01binary"]:
            await ws.send(msg)
            echo = await ws.recv()
            assert echo == msg, (len(echo), len(msg))
        await (await ws.ping(b"are you there"))
    print("echoed")

asyncio.run(main())
"#;

fn python_has_websockets() -> bool {
    Command::new("python3")
        .args(["-c", "import websockets"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

#[test]
fn a_python_websockets_client_gets_its_messages_back() {
    if !python_has_websockets() {
        let _ = Command::new("python3")
            .args([
                "-m",
                "pip",
                "install",
                "--quiet",
                "--disable-pip-version-check",
                "--timeout",
                "20",
            ])
            .arg("websockets")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
        if !python_has_websockets() {
            eprintln!("SKIPPED: python3 has no `websockets` and `pip install websockets` failed (offline?)");
            return;
        }
    }
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        evloop::run(async move {
            let listener = evloop::net::TcpListener::bind("127.0.0.1:0").await?;
            tx.send(listener.local_addr()?).expect("the test waits");
            ws_echo::serve(listener).await
        })
    });
    let addr = rx.recv().expect("the server starts");
    let out = Command::new("timeout")
        .args(["20", "python3", "-c", CLIENT])
        .arg(format!("ws://{addr}/"))
        .output()
        .expect("python3 runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && stdout.trim() == "echoed",
        "client: {}\n{stdout}{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
}
