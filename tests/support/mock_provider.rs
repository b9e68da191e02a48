//! A mock model provider for tests: a loopback HTTP/1.1 server (std threads,
//! no extra dependencies) that speaks the real wire formats of OpenAI chat
//! completions, Anthropic messages and Gemini generateContent, answers from a
//! per-test script and records every request.
//!
//! Used by the integration tests as `crate::support::mock_provider`, and by
//! `examples/reindex_tokens.rs` through `#[path]`.
//!
//! ```ignore
//! use mock_provider::{MockProvider, Reply, Wire};
//! let mock = MockProvider::start(Wire::OpenAi);
//! mock.push(Reply::answer(r#"{"name":"Fix the parser"}"#).usage(1200, 80));
//! mock.push(Reply::error(429, "slow down").header("retry-after", "1"));
//! // Point the plugin at it: config `providers.<name> = mock.provider_config()`
//! // (kind + baseUrl) and give the key through the host or `apiKeyEnv`.
//! let sent = mock.requests();            // every request, in arrival order
//! assert_eq!(sent[0].path, "/v1/chat/completions");
//! assert_eq!(sent[0].header("authorization"), Some("Bearer sk-test"));
//! assert!(sent[0].texts().contains("the user's prompt"));
//! ```
//!
//! - [`Wire`]: which API the server speaks. Requests to any other path get a
//!   404 in that API's error format (and are still recorded).
//! - [`Reply`]: one scripted answer, consumed in order. [`Reply::answer`]
//!   wraps the model text in the wire's success envelope (with usage);
//!   [`Reply::error`] builds the wire's error body; [`Reply::raw`] sends any
//!   body; [`Reply::oversized`] streams a huge body (with or without a
//!   `Content-Length`). `.header()`, `.delay()`, `.usage()` adjust a reply.
//!   When the script is empty the server answers 500 "mock: no scripted reply".
//! - [`Recorded`]: method, path, lowercase headers, body text and parsed JSON;
//!   [`Recorded::texts`] joins the system prompt and message texts of the
//!   wire format, [`Recorded::header`] looks a header up.
//! - [`MockProvider::oversized_aborted`] tells whether the client hung up
//!   before an oversized body was fully written.
//!
//! - [`ServingHost`]: a `HostApi` that serves completions itself (for the
//!   host-served route): `ServingHost::new(&[answer texts])`, then
//!   `requests()` gives the `CompletionRequest`s it received. Usage per
//!   answer is 10 in, 5 out, $0.001; with no answer left it returns an error.
//!
//! Every connection serves one request (`Connection: close`), in its own
//! thread, so a delayed reply never blocks other requests. Dropping the
//! [`MockProvider`] stops the server.
use std::collections::VecDeque;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use pi_ext_abi::protocol::{CompletionRequest, CompletionResponse, SessionContext, Usage};
use pi_ext_abi::LogLevel;
use serde_json::{json, Value};
use session_index::plugin::host::{HostApi, NotifyLevel, RecordingHost};

/// The API a [`MockProvider`] speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wire {
    /// `POST /v1/chat/completions`.
    OpenAi,
    /// `POST /v1/messages`.
    Anthropic,
    /// `POST /v1beta/models/{model}:generateContent`.
    Gemini,
}

impl Wire {
    /// The config `kind` of this wire format.
    pub fn kind(self) -> &'static str {
        match self {
            Wire::OpenAi => "openai",
            Wire::Anthropic => "anthropic",
            Wire::Gemini => "google",
        }
    }

    fn base_path(self) -> &'static str {
        match self {
            Wire::OpenAi | Wire::Anthropic => "/v1",
            Wire::Gemini => "/v1beta",
        }
    }

    fn accepts(self, method: &str, path: &str) -> bool {
        method == "POST"
            && match self {
                Wire::OpenAi => path == "/v1/chat/completions",
                Wire::Anthropic => path == "/v1/messages",
                Wire::Gemini => {
                    path.starts_with("/v1beta/models/") && path.ends_with(":generateContent")
                }
            }
    }
}

#[derive(Debug, Clone)]
enum Body {
    Answer {
        text: String,
        input_tokens: u64,
        output_tokens: u64,
        finish: Option<String>,
    },
    Error(String),
    Raw(String),
    Oversized {
        bytes: usize,
        declare_length: bool,
    },
}

/// One scripted reply.
#[derive(Debug, Clone)]
pub struct Reply {
    status: u16,
    headers: Vec<(String, String)>,
    body: Body,
    delay: Duration,
}

impl Reply {
    /// 200 with `text` as the model's answer, in the wire's success envelope.
    /// Usage defaults to 100 input and 20 output tokens.
    pub fn answer(text: impl Into<String>) -> Self {
        Reply::new(
            200,
            Body::Answer {
                text: text.into(),
                input_tokens: 100,
                output_tokens: 20,
                finish: None,
            },
        )
    }

    /// [`Reply::answer`] of a JSON value.
    pub fn answer_json(value: &Value) -> Self {
        Reply::answer(value.to_string())
    }

    /// `status` with the wire's error body carrying `message`.
    pub fn error(status: u16, message: impl Into<String>) -> Self {
        Reply::new(status, Body::Error(message.into()))
    }

    /// `status` with `body` sent as is.
    pub fn raw(status: u16, body: impl Into<String>) -> Self {
        Reply::new(status, Body::Raw(body.into()))
    }

    /// 200 streaming `bytes` bytes of a JSON-looking body; with
    /// `declare_length` the `Content-Length` announces them up front.
    pub fn oversized(bytes: usize, declare_length: bool) -> Self {
        Reply::new(
            200,
            Body::Oversized {
                bytes,
                declare_length,
            },
        )
    }

    /// Token usage reported by an [`Reply::answer`].
    pub fn usage(mut self, input: u64, output: u64) -> Self {
        if let Body::Answer {
            input_tokens,
            output_tokens,
            ..
        } = &mut self.body
        {
            *input_tokens = input;
            *output_tokens = output;
        }
        self
    }

    /// The wire's "stopped at the token limit" finish reason on an answer.
    pub fn truncated(mut self) -> Self {
        if let Body::Answer { finish, .. } = &mut self.body {
            *finish = Some("length".into());
        }
        self
    }

    pub fn header(mut self, name: &str, value: &str) -> Self {
        self.headers.push((name.to_string(), value.to_string()));
        self
    }

    /// Wait this long before answering (after reading the request).
    pub fn delay(mut self, delay: Duration) -> Self {
        self.delay = delay;
        self
    }

    fn new(status: u16, body: Body) -> Self {
        Reply {
            status,
            headers: Vec::new(),
            body,
            delay: Duration::ZERO,
        }
    }
}

/// A request the mock received.
#[derive(Debug, Clone)]
pub struct Recorded {
    pub wire: Wire,
    pub method: String,
    /// Path and query, e.g. `/v1/chat/completions`.
    pub path: String,
    /// Lowercase names, in arrival order.
    pub headers: Vec<(String, String)>,
    pub body: String,
    /// The body parsed as JSON (`Null` if it is not JSON).
    pub json: Value,
}

impl Recorded {
    pub fn header(&self, name: &str) -> Option<&str> {
        let name = name.to_ascii_lowercase();
        self.headers
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, v)| v.as_str())
    }

    /// The system prompt and every message text, joined by newlines.
    pub fn texts(&self) -> String {
        let j = &self.json;
        let mut out = Vec::new();
        let mut push = |v: &Value| {
            if let Some(s) = v.as_str() {
                out.push(s.to_string());
            }
        };
        match self.wire {
            Wire::OpenAi => j["messages"]
                .as_array()
                .into_iter()
                .flatten()
                .for_each(|m| push(&m["content"])),
            Wire::Anthropic => {
                push(&j["system"]);
                j["messages"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .for_each(|m| push(&m["content"]));
            }
            Wire::Gemini => {
                j["systemInstruction"]["parts"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .for_each(|p| push(&p["text"]));
                for content in j["contents"].as_array().into_iter().flatten() {
                    content["parts"]
                        .as_array()
                        .into_iter()
                        .flatten()
                        .for_each(|p| push(&p["text"]));
                }
            }
        }
        out.join("\n")
    }

    /// The conversation as `(role, text)` in the wire's own role names.
    pub fn messages(&self) -> Vec<(String, String)> {
        let list = match self.wire {
            Wire::OpenAi | Wire::Anthropic => &self.json["messages"],
            Wire::Gemini => &self.json["contents"],
        };
        list.as_array()
            .into_iter()
            .flatten()
            .map(|m| {
                let text = match self.wire {
                    Wire::Gemini => m["parts"][0]["text"]
                        .as_str()
                        .unwrap_or_default()
                        .to_string(),
                    _ => m["content"].as_str().unwrap_or_default().to_string(),
                };
                (m["role"].as_str().unwrap_or_default().to_string(), text)
            })
            .collect()
    }
}

#[derive(Default)]
struct State {
    script: Mutex<VecDeque<Reply>>,
    requests: Mutex<Vec<Recorded>>,
    oversized_aborted: AtomicBool,
}

/// A running mock server; stops on drop.
pub struct MockProvider {
    wire: Wire,
    addr: SocketAddr,
    state: Arc<State>,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl MockProvider {
    pub fn start(wire: Wire) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind a loopback port");
        let addr = listener.local_addr().expect("local address");
        let state = Arc::new(State::default());
        let stop = Arc::new(AtomicBool::new(false));
        let (thread_state, thread_stop) = (state.clone(), stop.clone());
        let thread = std::thread::spawn(move || {
            for stream in listener.incoming() {
                if thread_stop.load(Ordering::SeqCst) {
                    break;
                }
                let Ok(stream) = stream else { continue };
                let state = thread_state.clone();
                std::thread::spawn(move || serve(wire, stream, &state));
            }
        });
        MockProvider {
            wire,
            addr,
            state,
            stop,
            thread: Some(thread),
        }
    }

    /// Queue a reply (replies are used in order, one per request).
    pub fn push(&self, reply: Reply) -> &Self {
        self.state.script.lock().unwrap().push_back(reply);
        self
    }

    /// `http://127.0.0.1:<port>/v1` (OpenAI, Anthropic) or `.../v1beta` (Gemini).
    pub fn base_url(&self) -> String {
        format!("http://{}{}", self.addr, self.wire.base_path())
    }

    /// `{"kind": ..., "baseUrl": ...}` for the plugin config's `providers` map.
    pub fn provider_config(&self) -> Value {
        json!({"kind": self.wire.kind(), "baseUrl": self.base_url()})
    }

    pub fn requests(&self) -> Vec<Recorded> {
        self.state.requests.lock().unwrap().clone()
    }

    /// Scripted replies not yet used.
    pub fn pending(&self) -> usize {
        self.state.script.lock().unwrap().len()
    }

    /// True once the client closed the connection before an oversized body was complete.
    pub fn oversized_aborted(&self) -> bool {
        self.state.oversized_aborted.load(Ordering::SeqCst)
    }
}

impl Drop for MockProvider {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        // Wake the accept loop so it sees the flag.
        let _ = TcpStream::connect(self.addr);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

fn serve(wire: Wire, stream: TcpStream, state: &State) {
    let _ = stream.set_read_timeout(Some(Duration::from_secs(30)));
    let Some(request) = read_request(wire, &stream) else {
        return;
    };
    let accepted = wire.accepts(&request.method, &request.path);
    let model = request_model(&request);
    let prefill = anthropic_prefill(&request);
    state.requests.lock().unwrap().push(request);
    let reply = if accepted {
        state
            .script
            .lock()
            .unwrap()
            .pop_front()
            .unwrap_or_else(|| Reply::error(500, "mock: no scripted reply"))
    } else {
        Reply::error(404, "mock: unknown endpoint")
    };
    std::thread::sleep(reply.delay);
    let mut stream = stream;
    if let Body::Oversized {
        bytes,
        declare_length,
    } = reply.body
    {
        let aborted = write_oversized(&mut stream, bytes, declare_length).is_err();
        if aborted {
            state.oversized_aborted.store(true, Ordering::SeqCst);
        }
        return;
    }
    let body = render(wire, &reply, &model, prefill.as_deref());
    let mut head = format!(
        "HTTP/1.1 {} {}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n",
        reply.status,
        reason(reply.status),
        body.len()
    );
    for (name, value) in &reply.headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str("\r\n");
    let _ = stream
        .write_all(head.as_bytes())
        .and_then(|_| stream.write_all(body.as_bytes()));
    let _ = stream.flush();
}

fn read_request(wire: Wire, stream: &TcpStream) -> Option<Recorded> {
    let mut reader = BufReader::new(stream);
    let mut line = String::new();
    reader.read_line(&mut line).ok()?;
    let mut parts = line.split_whitespace();
    let method = parts.next()?.to_string();
    let path = parts.next()?.to_string();
    let mut headers = Vec::new();
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).ok()? == 0 {
            return None;
        }
        let line = line.trim_end();
        if line.is_empty() {
            break;
        }
        let (name, value) = line.split_once(':')?;
        headers.push((name.trim().to_ascii_lowercase(), value.trim().to_string()));
    }
    let length: usize = headers
        .iter()
        .find(|(n, _)| n == "content-length")
        .and_then(|(_, v)| v.parse().ok())
        .unwrap_or(0);
    let mut body = vec![0u8; length];
    reader.read_exact(&mut body).ok()?;
    let body = String::from_utf8_lossy(&body).into_owned();
    let json = serde_json::from_str(&body).unwrap_or(Value::Null);
    Some(Recorded {
        wire,
        method,
        path,
        headers,
        body,
        json,
    })
}

fn request_model(request: &Recorded) -> String {
    match request.wire {
        Wire::Gemini => request
            .path
            .trim_start_matches("/v1beta/models/")
            .trim_end_matches(":generateContent")
            .to_string(),
        _ => request.json["model"]
            .as_str()
            .unwrap_or("mock-model")
            .to_string(),
    }
}

/// A real Anthropic answer continues a prefilled assistant turn instead of repeating it.
fn anthropic_prefill(request: &Recorded) -> Option<String> {
    if request.wire != Wire::Anthropic {
        return None;
    }
    let last = request.json["messages"].as_array()?.last()?;
    (last["role"] == "assistant").then(|| last["content"].as_str().unwrap_or_default().to_string())
}

fn render(wire: Wire, reply: &Reply, model: &str, prefill: Option<&str>) -> String {
    match &reply.body {
        Body::Raw(body) => body.clone(),
        Body::Oversized { .. } => String::new(),
        Body::Error(message) => match wire {
            Wire::OpenAi => json!({"error": {"message": message, "type": "server_error", "param": null, "code": null}}),
            Wire::Anthropic => {
                let kind = match reply.status {
                    429 => "rate_limit_error",
                    529 | 503 => "overloaded_error",
                    401 => "authentication_error",
                    _ => "api_error",
                };
                json!({"type": "error", "error": {"type": kind, "message": message}})
            }
            Wire::Gemini => json!({"error": {"code": reply.status, "message": message, "status": "UNAVAILABLE"}}),
        }
        .to_string(),
        Body::Answer { text, input_tokens, output_tokens, finish } => {
            let truncated = finish.is_some();
            match wire {
                Wire::OpenAi => json!({
                    "id": "chatcmpl-mock", "object": "chat.completion", "created": 1_700_000_000, "model": model,
                    "choices": [{"index": 0, "message": {"role": "assistant", "content": text, "refusal": null},
                                 "logprobs": null, "finish_reason": if truncated { "length" } else { "stop" }}],
                    "usage": {"prompt_tokens": input_tokens, "completion_tokens": output_tokens,
                              "total_tokens": input_tokens + output_tokens},
                }),
                Wire::Anthropic => {
                    let text = prefill.and_then(|p| text.strip_prefix(p)).unwrap_or(text);
                    json!({
                        "id": "msg_mock", "type": "message", "role": "assistant", "model": model,
                        "content": [{"type": "text", "text": text}],
                        "stop_reason": if truncated { "max_tokens" } else { "end_turn" }, "stop_sequence": null,
                        "usage": {"input_tokens": input_tokens, "output_tokens": output_tokens},
                    })
                }
                Wire::Gemini => json!({
                    "candidates": [{"content": {"role": "model", "parts": [{"text": text}]},
                                    "finishReason": if truncated { "MAX_TOKENS" } else { "STOP" }, "index": 0}],
                    "usageMetadata": {"promptTokenCount": input_tokens, "candidatesTokenCount": output_tokens,
                                      "totalTokenCount": input_tokens + output_tokens},
                    "modelVersion": model,
                }),
            }
            .to_string()
        }
    }
}

fn write_oversized(
    stream: &mut TcpStream,
    bytes: usize,
    declare_length: bool,
) -> std::io::Result<()> {
    let mut head =
        "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\nconnection: close\r\n".to_string();
    if declare_length {
        head.push_str(&format!("content-length: {bytes}\r\n"));
    }
    head.push_str("\r\n");
    stream.write_all(head.as_bytes())?;
    let prefix = br#"{"choices":[{"message":{"content":""#;
    stream.write_all(prefix)?;
    let chunk = vec![b'x'; 16 * 1024];
    let mut written = prefix.len();
    while written < bytes {
        let n = chunk.len().min(bytes - written);
        stream.write_all(&chunk[..n])?;
        written += n;
    }
    stream.flush()
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        400 => "Bad Request",
        401 => "Unauthorized",
        404 => "Not Found",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        503 => "Service Unavailable",
        529 => "Overloaded",
        _ => "Status",
    }
}

/// A host that serves model completions itself, from scripted answer texts,
/// recording every request; other calls go to a [`RecordingHost`].
pub struct ServingHost {
    pub inner: Arc<RecordingHost>,
    answers: Mutex<VecDeque<String>>,
    requests: Mutex<Vec<CompletionRequest>>,
}

impl ServingHost {
    pub fn new(answers: &[&str]) -> Arc<Self> {
        Arc::new(ServingHost {
            inner: RecordingHost::new(SessionContext::default()),
            answers: Mutex::new(answers.iter().map(|a| a.to_string()).collect()),
            requests: Mutex::new(Vec::new()),
        })
    }

    pub fn requests(&self) -> Vec<CompletionRequest> {
        self.requests.lock().unwrap().clone()
    }
}

impl HostApi for ServingHost {
    fn context(&self) -> SessionContext {
        self.inner.context()
    }
    fn set_status(&self, key: &str, text: Option<&str>) {
        self.inner.set_status(key, text)
    }
    fn notify(&self, text: &str, level: NotifyLevel) {
        self.inner.notify(text, level)
    }
    fn append_entry(&self, custom_type: &str, data: &Value) {
        self.inner.append_entry(custom_type, data)
    }
    fn set_session_name(&self, name: &str) {
        self.inner.set_session_name(name)
    }
    fn api_key(&self, provider: &str) -> Option<String> {
        self.inner.api_key(provider)
    }
    fn can_complete(&self) -> bool {
        true
    }
    fn complete(&self, request: &CompletionRequest) -> Result<CompletionResponse, String> {
        self.requests.lock().unwrap().push(request.clone());
        let text = self
            .answers
            .lock()
            .unwrap()
            .pop_front()
            .ok_or("mock host: no scripted answer")?;
        let usage = Usage {
            input_tokens: 10,
            output_tokens: 5,
            cost_usd: Some(0.001),
        };
        Ok(CompletionResponse {
            text,
            model: request.model.clone().unwrap_or_default(),
            usage,
            choice: None,
        })
    }
    fn log(&self, level: LogLevel, target: &str, message: &str) {
        self.inner.log(level, target, message)
    }
    fn wait_for_idle(&self, timeout: Duration) -> bool {
        self.inner.wait_for_idle(timeout)
    }
}
