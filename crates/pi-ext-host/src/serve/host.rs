//! [`ServeHost`]: the plugin's [`Host`] when the host is a remote bridge.
//!
//! Fire-and-forget calls become notification lines on stdout; blocking calls
//! (`apiKey`, `complete`, `waitForIdle`, `context`) become request lines whose
//! replies the stdin reader hands back by id. Every blocking call has a
//! deadline, and all of them fail at once when stdin closes, so a bridge that
//! never answers cannot hang the plugin.

use std::collections::HashMap;
use std::io::Write;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError, Sender};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use abi_stable::std_types::{ROption, RResult, RStr, RString};
use pi_ext_abi::protocol::SessionContext;
use pi_ext_abi::{Host, LogLevel};
use serde_json::Value;

use super::messages::{ApiKeyReply, HostRequest, IdleReply, Notification};

/// Deadlines for the host's blocking requests to the bridge.
#[derive(Debug, Clone, Copy)]
pub struct HostTimeouts {
    pub context: Duration,
    pub api_key: Duration,
    /// Added to the completion's own `timeoutMs` (the bridge enforces that one).
    pub complete_margin: Duration,
    /// Used when a completion request carries no `timeoutMs`.
    pub complete_default: Duration,
    /// Added to `wait_for_idle`'s own timeout.
    pub idle_margin: Duration,
}

impl Default for HostTimeouts {
    fn default() -> Self {
        HostTimeouts {
            context: Duration::from_secs(2),
            api_key: Duration::from_secs(10),
            complete_margin: Duration::from_secs(5),
            complete_default: Duration::from_secs(60),
            idle_margin: Duration::from_secs(2),
        }
    }
}

type Reply = Result<Value, String>;

/// The protocol's output side: one JSON document per line, never interleaved.
pub struct Output {
    sink: Mutex<Box<dyn Write + Send>>,
}

impl Output {
    pub fn new(sink: Box<dyn Write + Send>) -> Self {
        Output {
            sink: Mutex::new(sink),
        }
    }

    /// Write one line. A closed stdout (the bridge went away) is not an error
    /// worth reporting: the reader sees EOF and shuts down.
    pub fn send(&self, message: &Value) {
        let mut line = message.to_string();
        line.push('\n');
        if let Ok(mut sink) = self.sink.lock() {
            let _ = sink.write_all(line.as_bytes()).and_then(|_| sink.flush());
        }
    }
}

struct Shared {
    out: Arc<Output>,
    pending: Mutex<HashMap<String, Sender<Reply>>>,
    next_id: AtomicU64,
    ctx: Mutex<SessionContext>,
    can_complete: AtomicBool,
    closed: AtomicBool,
    min_log_level: LogLevel,
    timeouts: HostTimeouts,
}

/// See the module docs. Cheap to clone; all clones share one connection.
#[derive(Clone)]
pub struct ServeHost {
    shared: Arc<Shared>,
}

impl ServeHost {
    pub fn new(out: Arc<Output>, min_log_level: LogLevel, timeouts: HostTimeouts) -> Self {
        ServeHost {
            shared: Arc::new(Shared {
                out,
                pending: Mutex::new(HashMap::new()),
                next_id: AtomicU64::new(1),
                ctx: Mutex::new(SessionContext::default()),
                can_complete: AtomicBool::new(false),
                closed: AtomicBool::new(false),
                min_log_level,
                timeouts,
            }),
        }
    }

    /// Keep the context of the latest call, for `context()` and as its fallback.
    pub fn set_context(&self, ctx: &SessionContext) {
        if let Ok(mut kept) = self.shared.ctx.lock() {
            *kept = ctx.clone();
        }
    }

    pub fn set_can_complete(&self, value: bool) {
        self.shared.can_complete.store(value, Ordering::SeqCst);
    }

    /// Route the bridge's reply to a host request. Unknown ids (late replies) are dropped.
    pub fn deliver(&self, id: &str, reply: Reply) {
        let waiter = self
            .shared
            .pending
            .lock()
            .ok()
            .and_then(|mut p| p.remove(id));
        if let Some(waiter) = waiter {
            let _ = waiter.send(reply);
        }
    }

    /// stdin closed: fail every waiting request now and refuse new ones.
    pub fn close(&self) {
        self.shared.closed.store(true, Ordering::SeqCst);
        let waiters: Vec<_> = match self.shared.pending.lock() {
            Ok(mut p) => p.drain().map(|(_, w)| w).collect(),
            Err(_) => Vec::new(),
        };
        for waiter in waiters {
            let _ = waiter.send(Err("the bridge closed the connection".into()));
        }
    }

    fn notify_bridge(&self, notification: Notification) {
        if let Ok(line) = serde_json::to_value(&notification) {
            self.shared.out.send(&line);
        }
    }

    /// Send a request to the bridge and block until its reply or `timeout`.
    pub fn request(&self, request: HostRequest, timeout: Duration) -> Reply {
        let method = request.method();
        if self.shared.closed.load(Ordering::SeqCst) {
            return Err(format!("{method}: the bridge closed the connection"));
        }
        let id = format!("h{}", self.shared.next_id.fetch_add(1, Ordering::SeqCst));
        let (tx, rx) = mpsc::channel();
        match self.shared.pending.lock() {
            Ok(mut pending) => pending.insert(id.clone(), tx),
            Err(_) => return Err(format!("{method}: host state is poisoned")),
        };
        let mut line = match serde_json::to_value(&request) {
            Ok(Value::Object(line)) => line,
            _ => return Err(format!("{method}: the request is not a JSON object")),
        };
        line.insert("id".into(), Value::from(id.clone()));
        self.shared.out.send(&Value::Object(line));
        match rx.recv_timeout(timeout) {
            Ok(reply) => reply.map_err(|e| format!("{method}: {e}")),
            Err(RecvTimeoutError::Timeout) => {
                if let Ok(mut pending) = self.shared.pending.lock() {
                    pending.remove(&id);
                }
                Err(format!(
                    "{method}: the bridge did not answer within {} ms",
                    timeout.as_millis()
                ))
            }
            Err(RecvTimeoutError::Disconnected) => {
                Err(format!("{method}: the bridge closed the connection"))
            }
        }
    }
}

impl Host for ServeHost {
    fn context(&self) -> RString {
        let fresh = self
            .request(HostRequest::Context {}, self.shared.timeouts.context)
            .ok()
            .and_then(|v| serde_json::from_value::<SessionContext>(v).ok());
        if let Some(ctx) = &fresh {
            self.set_context(ctx);
        }
        let ctx = fresh.unwrap_or_else(|| {
            self.shared
                .ctx
                .lock()
                .map(|c| c.clone())
                .unwrap_or_default()
        });
        RString::from(serde_json::to_string(&ctx).unwrap_or_else(|_| "{}".into()))
    }

    fn set_status(&self, key: RStr<'_>, text: ROption<RStr<'_>>) {
        self.notify_bridge(Notification::SetStatus {
            key: key.as_str().into(),
            text: text.map(|t| t.as_str().to_string()).into_option(),
        });
    }

    fn notify(&self, text: RStr<'_>, level: RStr<'_>) {
        self.notify_bridge(Notification::Notify {
            text: text.as_str().into(),
            level: level.as_str().into(),
        });
    }

    fn append_entry(&self, custom_type: RStr<'_>, data_json: RStr<'_>) {
        // The plugin promises JSON; anything else is kept as a string rather than dropped.
        let data = serde_json::from_str::<Value>(data_json.as_str())
            .unwrap_or_else(|_| Value::from(data_json.as_str()));
        self.notify_bridge(Notification::AppendEntry {
            custom_type: custom_type.as_str().into(),
            data,
        });
    }

    fn set_session_name(&self, name: RStr<'_>) {
        self.notify_bridge(Notification::SetSessionName {
            name: name.as_str().into(),
        });
    }

    fn api_key(&self, provider: RStr<'_>) -> ROption<RString> {
        let request = HostRequest::ApiKey {
            provider: provider.as_str().into(),
        };
        let reply = self.request(request, self.shared.timeouts.api_key);
        let key = reply
            .ok()
            .and_then(|v| serde_json::from_value::<ApiKeyReply>(v).ok())
            .and_then(|reply| reply.key);
        match key {
            Some(key) if !key.is_empty() => ROption::RSome(RString::from(key)),
            _ => ROption::RNone,
        }
    }

    fn can_complete(&self) -> bool {
        self.shared.can_complete.load(Ordering::SeqCst)
    }

    fn complete(&self, request_json: RStr<'_>) -> RResult<RString, RString> {
        if !self.can_complete() {
            return RResult::RErr(RString::from(
                "this bridge does not serve model completions",
            ));
        }
        let request: Value = match serde_json::from_str(request_json.as_str()) {
            Ok(v) => v,
            Err(e) => {
                return RResult::RErr(RString::from(format!("invalid completion request: {e}")))
            }
        };
        let t = &self.shared.timeouts;
        let own = request
            .get("timeoutMs")
            .and_then(Value::as_u64)
            .map(Duration::from_millis);
        let timeout = own.unwrap_or(t.complete_default) + t.complete_margin;
        match self.request(HostRequest::Complete(request), timeout) {
            Ok(response) => RResult::ROk(RString::from(response.to_string())),
            Err(e) => RResult::RErr(RString::from(e)),
        }
    }

    fn log(&self, level: LogLevel, target: RStr<'_>, message: RStr<'_>) {
        if level < self.shared.min_log_level {
            return;
        }
        self.notify_bridge(Notification::Log {
            level: level.as_str().into(),
            target: target.as_str().into(),
            message: message.as_str().into(),
        });
    }

    fn wait_for_idle(&self, timeout_ms: u64) -> bool {
        let timeout = Duration::from_millis(timeout_ms) + self.shared.timeouts.idle_margin;
        let reply = self.request(HostRequest::WaitForIdle { timeout_ms }, timeout);
        reply
            .ok()
            .and_then(|v| serde_json::from_value::<IdleReply>(v).ok())
            .is_some_and(|reply| reply.idle)
    }
}
