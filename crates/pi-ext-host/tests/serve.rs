//! `pi-ext-host serve` as a process, with the real session-index cdylib:
//! protocol lines only on stdout, ids answered, EOF ends the process cleanly.

mod common;

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

fn serve_cmd(agent_dir: &std::path::Path) -> Command {
    let mut cmd = Command::new(common::bin());
    cmd.arg("serve")
        .arg("--plugin")
        .arg(common::workspace_root())
        .arg("--lib")
        .arg(common::plugin_library())
        .env("PI_CODING_AGENT_DIR", agent_dir)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    cmd
}

#[test]
fn serves_the_real_plugin_and_exits_cleanly_on_eof() {
    let dir = tempfile::tempdir().expect("temp dir");
    let mut child = serve_cmd(dir.path())
        .spawn()
        .expect("start pi-ext-host serve");
    let mut stdin = child.stdin.take().expect("stdin");
    let stdout = child.stdout.take().expect("stdout");
    let (tx, rx) = mpsc::channel::<String>();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    let next = || -> Value {
        let line = rx
            .recv_timeout(Duration::from_secs(30))
            .expect("a protocol line within 30 s");
        serde_json::from_str(&line)
            .unwrap_or_else(|e| panic!("stdout line is not JSON ({e}): {line}"))
    };
    let ctx = json!({"cwd": dir.path(), "agentDir": dir.path(), "hasUi": false});
    let send = |stdin: &mut std::process::ChildStdin, msg: Value| {
        writeln!(stdin, "{msg}")
            .and_then(|()| stdin.flush())
            .expect("write to serve")
    };

    send(
        &mut stdin,
        json!({"id": 1, "method": "init", "params": {"ctx": ctx, "canComplete": true}}),
    );
    let init = next();
    assert_eq!(init["id"], 1, "{init}");
    assert_eq!(init["result"]["plugin"], "session-index@0.1.0");
    assert_eq!(init["result"]["protocol"], 1);
    let tools = init["result"]["registrations"]["tools"]
        .as_array()
        .expect("tools");
    let query = tools
        .iter()
        .find(|t| t["name"] == "query_session")
        .expect("query_session registered");
    assert_eq!(query["parameters"]["type"], "object");
    let commands = &init["result"]["registrations"]["commands"];
    assert!(commands
        .as_array()
        .expect("commands")
        .iter()
        .any(|c| c["name"] == "index-session"));

    send(
        &mut stdin,
        json!({"id": 2, "method": "event", "params": {"v": 1, "event": "input", "payload": {"text": "hi"}, "ctx": ctx}}),
    );
    assert_eq!(next(), json!({"id": 2, "result": {"action": "continue"}}));

    send(
        &mut stdin,
        json!({"id": 3, "method": "event", "params": {"v": 1, "event": "no_such_event", "ctx": ctx}}),
    );
    let reply = next();
    assert_eq!(reply["id"], 3);
    assert!(
        reply["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("no_such_event")),
        "{reply}"
    );

    send(
        &mut stdin,
        json!({"id": 4, "method": "tool", "params": {"v": 1, "tool": "nope", "params": {}, "ctx": ctx}}),
    );
    let reply = next();
    assert!(
        reply["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("nope")),
        "{reply}"
    );

    drop(stdin); // EOF: shut down within the deadline, exit 0
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait") {
            break status;
        }
        assert!(
            started.elapsed() < Duration::from_secs(15),
            "serve did not exit after EOF"
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(status.success(), "exit status {status}");
}

#[test]
fn start_up_failure_is_one_stderr_line_and_no_protocol_output() {
    let dir = tempfile::tempdir().expect("temp dir");
    let out = Command::new(common::bin())
        .args(["serve", "--plugin"])
        .arg(dir.path().join("missing"))
        .stdin(Stdio::null())
        .output()
        .expect("run pi-ext-host serve");
    assert_eq!(out.status.code(), Some(1));
    assert!(
        out.stdout.is_empty(),
        "stdout must stay protocol-only: {}",
        String::from_utf8_lossy(&out.stdout)
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(stderr.trim_end().lines().count(), 1, "one line: {stderr}");
    assert!(stderr.starts_with("pi-ext-host: "), "{stderr}");
}

#[test]
fn shutdown_request_answers_then_exits() {
    let dir = tempfile::tempdir().expect("temp dir");
    let mut child = serve_cmd(dir.path())
        .spawn()
        .expect("start pi-ext-host serve");
    let mut stdin = child.stdin.take().expect("stdin");
    writeln!(
        stdin,
        "{}",
        json!({"id": 1, "method": "init", "params": {}})
    )
    .expect("write");
    writeln!(
        stdin,
        "{}",
        json!({"id": 2, "method": "shutdown", "params": {"timeoutMs": 500}})
    )
    .expect("write");
    stdin.flush().expect("flush");
    // stdin stays open: the process must exit because of `shutdown`, not EOF.
    let mut stdout = child.stdout.take().expect("stdout");
    let reader = std::thread::spawn(move || {
        let mut text = String::new();
        let _ = std::io::Read::read_to_string(&mut stdout, &mut text);
        text
    });
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait") {
            break status;
        }
        if started.elapsed() > Duration::from_secs(20) {
            let _ = child.kill();
            panic!("serve did not exit after shutdown");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    drop(stdin);
    assert!(status.success(), "exit status {status}");
    let text = reader.join().expect("stdout reader");
    let lines: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).expect("JSON line"))
        .collect();
    let shutdown = lines
        .iter()
        .find(|l| l["id"] == 2)
        .expect("shutdown answered");
    assert_eq!(shutdown["result"]["idle"], true);
}
