//! Protocol tests with a scripted backend; the real plugin is exercised by the
//! binary test (tests/serve.rs) and the end-to-end test with pi.

use std::io::{BufReader, Read, Write};
use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use abi_stable::std_types::RStr;
use pi_ext_abi::protocol::{CommandCall, EventCall, ToolCall};
use pi_ext_abi::{Host, LogLevel};
use serde_json::{json, Value};

use super::*;

struct ChannelReader {
    rx: Receiver<Vec<u8>>,
    buf: Vec<u8>,
}

impl Read for ChannelReader {
    fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
        if self.buf.is_empty() {
            match self.rx.recv() {
                Ok(bytes) => self.buf = bytes,
                Err(_) => return Ok(0), // sender dropped: EOF
            }
        }
        let n = out.len().min(self.buf.len());
        out[..n].copy_from_slice(&self.buf[..n]);
        self.buf.drain(..n);
        Ok(n)
    }
}

struct LineSink(Sender<Value>);

impl Write for LineSink {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        for line in String::from_utf8_lossy(bytes).lines() {
            let _ = self
                .0
                .send(serde_json::from_str(line).expect("server wrote a JSON line"));
        }
        Ok(bytes.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// A backend whose tool `ask` blocks on `complete` and whose command blocks on `waitForIdle`.
struct Scripted {
    host: ServeHost,
    shutdowns: Arc<Mutex<u32>>,
}

impl Backend for Scripted {
    fn registrations(&self) -> Result<Value, String> {
        Ok(json!({"events": ["agent_end"], "commands": [], "tools": []}))
    }
    fn event(&self, call: &EventCall) -> Result<Value, String> {
        self.host.set_status(
            RStr::from_str("k"),
            abi_stable::std_types::ROption::RSome(RStr::from_str(&call.event)),
        );
        self.host.log(
            LogLevel::Debug,
            RStr::from_str("t"),
            RStr::from_str("dropped below info"),
        );
        self.host
            .log(LogLevel::Warn, RStr::from_str("t"), RStr::from_str("kept"));
        Ok(Value::Null)
    }
    fn tool(&self, call: &ToolCall) -> Result<Value, String> {
        let request = json!({"system": "s", "messages": [], "maxTokens": 1, "timeoutMs": call.params["timeoutMs"]});
        let answer = self.host.complete(RStr::from_str(&request.to_string()));
        Ok(match answer {
            abi_stable::std_types::RResult::ROk(text) => {
                json!({"ok": serde_json::from_str::<Value>(&text).ok()})
            }
            abi_stable::std_types::RResult::RErr(e) => json!({"err": e.as_str()}),
        })
    }
    fn command(&self, _call: &CommandCall) -> Result<Value, String> {
        Ok(json!({"idle": self.host.wait_for_idle(50)}))
    }
    fn request(&self, method: &str, _payload: &Value) -> Result<Value, String> {
        match method {
            "key" => Ok(json!(self
                .host
                .api_key(RStr::from_str("openai"))
                .into_option()
                .map(|k| k.into_string()))),
            "ctx" => Ok(serde_json::from_str(self.host.context().as_str()).unwrap_or(Value::Null)),
            other => Err(format!("unknown request '{other}'")),
        }
    }
    fn flush(&self, _timeout: Duration) -> Value {
        json!({"pending": 0, "idle": true})
    }
    fn shutdown(&self, _timeout: Duration) -> Value {
        *self.shutdowns.lock().unwrap() += 1;
        json!({"pending": 0, "idle": true})
    }
}

struct Harness {
    input: Option<Sender<Vec<u8>>>,
    output: Receiver<Value>,
    done: Receiver<()>,
    shutdowns: Arc<Mutex<u32>>,
}

impl Harness {
    fn start(timeouts: HostTimeouts) -> Harness {
        let (in_tx, in_rx) = mpsc::channel();
        let (out_tx, out_rx) = mpsc::channel();
        let (done_tx, done_rx) = mpsc::channel();
        let shutdowns = Arc::new(Mutex::new(0));
        let out = Arc::new(Output::new(Box::new(LineSink(out_tx))));
        let host = ServeHost::new(Arc::clone(&out), LogLevel::Info, timeouts);
        let counter = Arc::clone(&shutdowns);
        let factory: BackendFactory = Box::new(move |host| {
            Ok(Arc::new(Scripted {
                host,
                shutdowns: Arc::clone(&counter),
            }) as Arc<dyn Backend>)
        });
        let options = ServerOptions {
            plugin_info: json!({"plugin": "scripted@0"}),
            shutdown_timeout: Duration::from_millis(500),
            on_shutdown: Box::new(|| {}),
        };
        let server = Server::new(out, host, factory, options);
        std::thread::spawn(move || {
            server.serve(BufReader::new(ChannelReader {
                rx: in_rx,
                buf: Vec::new(),
            }));
            let _ = done_tx.send(());
        });
        Harness {
            input: Some(in_tx),
            output: out_rx,
            done: done_rx,
            shutdowns,
        }
    }

    fn send(&self, message: Value) {
        let mut line = message.to_string().into_bytes();
        line.push(b'\n');
        self.input.as_ref().unwrap().send(line).unwrap();
    }

    fn next(&self) -> Value {
        self.output
            .recv_timeout(Duration::from_secs(5))
            .expect("a line from the server within 5 s")
    }

    /// Next line that is not a `log` notification.
    fn next_non_log(&self) -> Value {
        loop {
            let line = self.next();
            if line["method"] != "log" {
                return line;
            }
        }
    }

    fn init(&self) -> Value {
        self.send(
            json!({"id": 1, "method": "init", "params": {"canComplete": true, "ctx": {"cwd": "/w", "agentDir": "/a"}}}),
        );
        self.next()
    }
}

#[test]
fn init_reports_plugin_protocol_and_registrations() {
    let h = Harness::start(HostTimeouts::default());
    let reply = h.init();
    assert_eq!(reply["id"], 1);
    assert_eq!(reply["result"]["plugin"], "scripted@0");
    assert_eq!(reply["result"]["protocol"], SERVE_PROTOCOL_VERSION);
    assert_eq!(
        reply["result"]["registrations"]["events"],
        json!(["agent_end"])
    );
}

#[test]
fn calls_before_init_and_unknown_methods_get_errors() {
    let h = Harness::start(HostTimeouts::default());
    h.send(json!({"id": "a", "method": "event", "params": {"event": "agent_end"}}));
    assert_eq!(
        h.next()["error"]["message"],
        "not initialized: send init first"
    );
    h.init();
    h.send(json!({"id": 2, "method": "frobnicate"}));
    assert_eq!(h.next()["error"]["message"], "unknown method 'frobnicate'");
    h.send(json!({"id": 3, "method": "tool", "params": {"tool": 5}}));
    assert!(h.next()["error"]["message"]
        .as_str()
        .unwrap()
        .starts_with("invalid tool call:"));
    h.input
        .as_ref()
        .unwrap()
        .send(b"not json\n".to_vec())
        .unwrap();
    assert!(h.next()["error"]["message"]
        .as_str()
        .unwrap()
        .starts_with("invalid JSON line"));
    // Valid JSON that is not a message object gets an answer too, naming what it is.
    for (line, kind) in [
        ("[1,2]", "an array"),
        ("42", "a number"),
        ("\"init\"", "a string"),
        ("null", "null"),
    ] {
        h.input
            .as_ref()
            .unwrap()
            .send(format!("{line}\n").into_bytes())
            .unwrap();
        assert_eq!(
            h.next(),
            json!({"id": null, "error": {"message": format!("invalid message: {kind}, not a JSON object")}}),
            "{line}"
        );
    }
}

#[test]
fn events_emit_notifications_and_filter_logs() {
    let h = Harness::start(HostTimeouts::default());
    h.init();
    h.send(
        json!({"id": 2, "method": "event", "params": {"event": "agent_end", "ctx": {"cwd": "/w"}}}),
    );
    assert_eq!(
        h.next(),
        json!({"method": "setStatus", "params": {"key": "k", "text": "agent_end"}})
    );
    assert_eq!(
        h.next(),
        json!({"method": "log", "params": {"level": "warn", "target": "t", "message": "kept"}})
    );
    assert_eq!(h.next(), json!({"id": 2, "result": null}));
}

#[test]
fn a_tool_blocked_on_complete_gets_the_bridges_reply() {
    let h = Harness::start(HostTimeouts::default());
    h.init();
    h.send(json!({"id": 7, "method": "tool", "params": {"tool": "ask", "params": {"timeoutMs": 3000}}}));
    let request = h.next();
    assert_eq!(request["method"], "complete");
    assert_eq!(request["params"]["maxTokens"], 1);
    let id = request["id"].as_str().unwrap().to_string();
    // While the tool waits, the reader still serves other calls.
    h.send(json!({"id": 8, "method": "flush", "params": {"timeoutMs": 10}}));
    assert_eq!(
        h.next(),
        json!({"id": 8, "result": {"pending": 0, "idle": true}})
    );
    let response =
        json!({"text": "{}", "model": "m/x", "usage": {"inputTokens": 1, "outputTokens": 1}});
    h.send(json!({"id": id, "result": response}));
    assert_eq!(h.next(), json!({"id": 7, "result": {"ok": response}}));
}

#[test]
fn host_requests_time_out_and_bridge_errors_pass_through() {
    let timeouts = HostTimeouts {
        complete_margin: Duration::from_millis(0),
        ..HostTimeouts::default()
    };
    let h = Harness::start(timeouts);
    h.init();
    h.send(
        json!({"id": 1, "method": "tool", "params": {"tool": "ask", "params": {"timeoutMs": 200}}}),
    );
    assert_eq!(h.next()["method"], "complete"); // never answered
    let reply = h.next();
    assert_eq!(
        reply["result"]["err"],
        "complete: the bridge did not answer within 200 ms"
    );

    h.send(json!({"id": 2, "method": "request", "params": {"method": "key"}}));
    let request = h.next();
    assert_eq!(
        request,
        json!({"id": request["id"], "method": "apiKey", "params": {"provider": "openai"}})
    );
    h.send(json!({"id": request["id"], "error": {"message": "no registry"}}));
    assert_eq!(h.next(), json!({"id": 2, "result": null}));

    h.send(json!({"id": 3, "method": "command", "params": {"command": "c"}}));
    let request = h.next();
    assert_eq!(request["params"], json!({"timeoutMs": 50}));
    h.send(json!({"id": request["id"], "result": {"idle": true}}));
    assert_eq!(h.next(), json!({"id": 3, "result": {"idle": true}}));
}

#[test]
fn context_asks_the_bridge_and_falls_back_to_the_last_call() {
    let timeouts = HostTimeouts {
        context: Duration::from_millis(100),
        ..HostTimeouts::default()
    };
    let h = Harness::start(timeouts);
    h.init();
    h.send(json!({"id": 2, "method": "request", "params": {"method": "ctx"}}));
    let request = h.next();
    assert_eq!(request["method"], "context");
    h.send(json!({"id": request["id"], "result": {"cwd": "/fresh", "leafId": "abcd1234"}}));
    assert_eq!(
        h.next()["result"],
        json!({"cwd": "/fresh", "leafId": "abcd1234", "agentDir": "", "hasUi": false})
    );

    h.send(json!({"id": 3, "method": "event", "params": {"event": "x", "ctx": {"cwd": "/event", "sessionId": "s1"}}}));
    while h.next_non_log()["id"] != 3 {}
    h.send(json!({"id": 4, "method": "request", "params": {"method": "ctx"}}));
    assert_eq!(h.next()["method"], "context"); // unanswered: falls back
    assert_eq!(h.next()["result"]["sessionId"], "s1");
}

#[test]
fn eof_fails_waiting_requests_and_shuts_the_plugin_down() {
    let mut h = Harness::start(HostTimeouts::default());
    h.init();
    h.send(json!({"id": 5, "method": "tool", "params": {"tool": "ask", "params": {"timeoutMs": 60000}}}));
    assert_eq!(h.next()["method"], "complete");
    h.input = None; // EOF
    h.done
        .recv_timeout(Duration::from_secs(5))
        .expect("serve returns after EOF");
    assert_eq!(*h.shutdowns.lock().unwrap(), 1);
    let reply = h.next();
    assert_eq!(reply["id"], 5);
    assert_eq!(
        reply["result"]["err"],
        "complete: the bridge closed the connection"
    );
}

#[test]
fn calls_sent_with_init_wait_for_it_and_eof_lets_them_answer() {
    let mut h = Harness::start(HostTimeouts::default());
    h.send(json!({"id": 1, "method": "init", "params": {}}));
    h.send(json!({"id": 2, "method": "flush", "params": {"timeoutMs": 1}}));
    h.input = None; // EOF right away: both replies must still go out
    h.done
        .recv_timeout(Duration::from_secs(5))
        .expect("serve returns after EOF");
    let mut replies = [h.next(), h.next()];
    replies.sort_by_key(|r| r["id"].as_u64());
    assert_eq!(replies[0]["result"]["plugin"], "scripted@0");
    assert_eq!(
        replies[1],
        json!({"id": 2, "result": {"pending": 0, "idle": true}})
    );
}

#[test]
fn another_protocol_version_is_refused_clearly() {
    let h = Harness::start(HostTimeouts::default());
    h.init();
    for (id, method, params) in [
        (2, "event", json!({"v": 2, "event": "agent_end"})),
        (3, "tool", json!({"v": 0, "tool": "ask", "params": {}})),
        (4, "command", json!({"v": 99, "command": "c"})),
    ] {
        h.send(json!({"id": id, "method": method, "params": params}));
        let v = params["v"].as_u64().unwrap();
        let want = format!("unsupported protocol version v={v} (this side speaks v=1)");
        assert_eq!(h.next(), json!({"id": id, "error": {"message": want}}));
    }
}

#[cfg(unix)]
#[test]
fn a_client_session_file_must_be_a_regular_file_inside_the_sessions_dir() {
    let agent = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    let project = agent.path().join("sessions/--w--");
    std::fs::create_dir_all(&project).unwrap();
    let secret = outside.path().join("s.jsonl");
    std::fs::write(&secret, "{}\n").unwrap();
    std::os::unix::fs::symlink(&secret, project.join("link.jsonl")).unwrap();
    let fifo = project.join("fifo.jsonl");
    let c = std::ffi::CString::new(fifo.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    std::fs::write(project.join("ok.jsonl"), "{}\n").unwrap();
    let h = Harness::start(HostTimeouts::default());
    h.init();
    let agent_dir = agent.path().to_str().unwrap();
    let call = |id: u32, file: &std::path::Path| {
        let ctx = json!({"cwd": "/w", "agentDir": agent_dir, "sessionFile": file});
        h.send(json!({"id": id, "method": "event", "params": {"v": 1, "event": "agent_end", "ctx": ctx}}));
        loop {
            let line = h.next();
            if line.get("id").is_some() {
                return line; // the reply, past the scripted notifications
            }
        }
    };
    for (id, file, problem) in [
        (2, secret.clone(), "outside"),
        (3, project.join("link.jsonl"), "outside"),
        (4, fifo, "FIFO"),
    ] {
        let reply = call(id, &file);
        let message = reply["error"]["message"].as_str().unwrap_or_default();
        assert!(
            message.starts_with("ctx.sessionFile ") && message.contains(problem),
            "{reply}"
        );
    }
    assert_eq!(
        call(5, &project.join("ok.jsonl")),
        json!({"id": 5, "result": null})
    );
    assert_eq!(
        call(6, &project.join("not-yet-written.jsonl")),
        json!({"id": 6, "result": null})
    );
    // Without ctx.agentDir the check cannot be made: that is what is said, not
    // an error about the (existing) file.
    let ctx = json!({"cwd": "/w", "sessionFile": project.join("ok.jsonl")});
    h.send(
        json!({"id": 7, "method": "event", "params": {"v": 1, "event": "agent_end", "ctx": ctx}}),
    );
    let reply = loop {
        let line = h.next();
        if line.get("id").is_some() {
            break line;
        }
    };
    let message = reply["error"]["message"].as_str().unwrap_or_default();
    assert!(message.starts_with("ctx.agentDir is missing"), "{reply}");
}
