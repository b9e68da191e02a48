//! `pi-ext-host serve`: run one plugin behind a JSON-lines protocol on
//! stdin/stdout, so a host written in another language (the pi bridge in
//! TypeScript) can drive it. The protocol is specified in `SERVE.md`.
//!
//! Threads: the caller's thread reads stdin and only dispatches; every plugin
//! call runs on its own worker thread. A plugin call that blocks on a host
//! request (say `complete` inside a tool) therefore never stops the reader
//! from delivering that request's reply.

mod host;
pub mod messages;
mod run;
#[cfg(test)]
mod tests;

use std::io::BufRead;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

use pi_ext_abi::protocol::{CommandCall, EventCall, SessionContext, ToolCall};
use serde_json::{json, Value};

pub use host::{HostTimeouts, Output, ServeHost};
pub use run::{run, ServeArgs};

/// Version of the serve protocol (`init` reports it).
pub const SERVE_PROTOCOL_VERSION: u32 = 1;

/// Calls running at once; beyond this the bridge gets a `busy` error instead of another thread.
const MAX_IN_FLIGHT: usize = 32;

/// The plugin as the server sees it. Results are JSON documents from
/// `pi_ext_abi::protocol`; errors are one-line messages.
pub trait Backend: Send + Sync {
    fn registrations(&self) -> Result<Value, String>;
    fn event(&self, call: &EventCall) -> Result<Value, String>;
    fn tool(&self, call: &ToolCall) -> Result<Value, String>;
    fn command(&self, call: &CommandCall) -> Result<Value, String>;
    fn request(&self, method: &str, payload: &Value) -> Result<Value, String>;
    fn flush(&self, timeout: Duration) -> Value;
    fn shutdown(&self, timeout: Duration) -> Value;
}

/// Creates the plugin instance at `init`, handing it the connection's host.
pub type BackendFactory = Box<dyn Fn(ServeHost) -> Result<Arc<dyn Backend>, String> + Send + Sync>;

pub struct ServerOptions {
    /// `name@version` and manifest facts reported by `init`.
    pub plugin_info: Value,
    /// How long background work may run after stdin closes.
    pub shutdown_timeout: Duration,
    /// Called after a `shutdown` request was answered (the binary exits there).
    pub on_shutdown: Box<dyn Fn() + Send + Sync>,
}

/// The plugin instance, created by the first `init`.
#[derive(Default)]
struct Slot {
    backend: Option<Arc<dyn Backend>>,
    /// An `init` was read and has not finished: later calls wait for it
    /// instead of racing it (each call runs on its own thread).
    initializing: bool,
}

pub struct Server {
    out: Arc<Output>,
    host: ServeHost,
    factory: BackendFactory,
    slot: Mutex<Slot>,
    slot_changed: Condvar,
    options: ServerOptions,
    in_flight: AtomicUsize,
    idle: Condvar,
    idle_lock: Mutex<()>,
}

impl Server {
    pub fn new(
        out: Arc<Output>,
        host: ServeHost,
        factory: BackendFactory,
        options: ServerOptions,
    ) -> Arc<Self> {
        Arc::new(Server {
            out,
            host,
            factory,
            slot: Mutex::new(Slot::default()),
            slot_changed: Condvar::new(),
            options,
            in_flight: AtomicUsize::new(0),
            idle: Condvar::new(),
            idle_lock: Mutex::new(()),
        })
    }

    /// Read the bridge's lines until EOF, then shut the plugin down within the deadline.
    pub fn serve(self: &Arc<Self>, mut input: impl BufRead) {
        let mut buf = Vec::new();
        loop {
            buf.clear();
            match input.read_until(b'\n', &mut buf) {
                Ok(0) | Err(_) => break,
                Ok(_) => {}
            }
            let line = String::from_utf8_lossy(&buf);
            let line = line.trim_end_matches(['\n', '\r']);
            if !line.trim().is_empty() {
                self.on_line(line);
            }
        }
        self.host.close();
        self.wait_for_calls(self.options.shutdown_timeout);
        self.shutdown_on_eof();
    }

    fn on_line(self: &Arc<Self>, line: &str) {
        let message: Value = match serde_json::from_str(line) {
            Ok(v @ Value::Object(_)) => v,
            Ok(other) => {
                let kind = crate::instance::json_kind(&other);
                self.out.send(&json!({"id": null, "error": {"message": format!("invalid message: {kind}, not a JSON object")}}));
                return;
            }
            Err(e) => {
                self.out.send(
                    &json!({"id": null, "error": {"message": format!("invalid JSON line: {e}")}}),
                );
                return;
            }
        };
        let id = message.get("id").cloned().unwrap_or(Value::Null);
        match message.get("method").and_then(Value::as_str) {
            Some(method) => {
                self.start_request(id, method.to_string(), message.get("params").cloned())
            }
            None => self.on_reply(&id, &message),
        }
    }

    /// A reply from the bridge to one of the plugin's host requests.
    fn on_reply(&self, id: &Value, message: &Value) {
        let Some(id) = id.as_str() else {
            return; // not ours: host request ids are strings
        };
        let reply = match message.get("error") {
            Some(error) => Err(error
                .get("message")
                .and_then(Value::as_str)
                .unwrap_or("bridge error")
                .to_string()),
            None => Ok(message.get("result").cloned().unwrap_or(Value::Null)),
        };
        self.host.deliver(id, reply);
    }

    fn start_request(self: &Arc<Self>, id: Value, method: String, params: Option<Value>) {
        if self.in_flight.fetch_add(1, Ordering::SeqCst) >= MAX_IN_FLIGHT {
            self.call_done();
            self.reply(
                &id,
                Err(format!("busy: {MAX_IN_FLIGHT} calls already running")),
            );
            return;
        }
        if method == "init" {
            if let Ok(mut slot) = self.slot.lock() {
                slot.initializing = slot.backend.is_none();
            }
        }
        let server = Arc::clone(self);
        let spawned = std::thread::Builder::new()
            .name(format!("serve-{method}"))
            .spawn(move || {
                let result = server.dispatch(&method, params.unwrap_or(Value::Null));
                server.reply(&id, result);
                server.call_done();
                if method == "shutdown" {
                    (server.options.on_shutdown)();
                }
            });
        if let Err(e) = spawned {
            self.call_done();
            self.out.send(&json!({"id": null, "error": {"message": format!("cannot start a worker thread: {e}")}}));
        }
    }

    fn call_done(&self) {
        self.in_flight.fetch_sub(1, Ordering::SeqCst);
        let _guard = self.idle_lock.lock();
        self.idle.notify_all();
    }

    /// Let calls that were already read finish (their replies still go out), up to `timeout`.
    fn wait_for_calls(&self, timeout: Duration) {
        let deadline = std::time::Instant::now() + timeout;
        let Ok(mut guard) = self.idle_lock.lock() else {
            return;
        };
        while self.in_flight.load(Ordering::SeqCst) > 0 {
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            if left.is_zero() {
                return;
            }
            guard = match self
                .idle
                .wait_timeout(guard, left.min(Duration::from_millis(50)))
            {
                Ok((g, _)) => g,
                Err(_) => return,
            };
        }
    }

    fn reply(&self, id: &Value, result: Result<Value, String>) {
        let message = match result {
            Ok(result) => json!({"id": id, "result": result}),
            Err(message) => json!({"id": id, "error": {"message": message}}),
        };
        self.out.send(&message);
    }

    fn backend(&self) -> Result<Arc<dyn Backend>, String> {
        let poisoned = || "plugin state is poisoned".to_string();
        let mut slot = self.slot.lock().map_err(|_| poisoned())?;
        while slot.initializing {
            slot = self.slot_changed.wait(slot).map_err(|_| poisoned())?;
        }
        slot.backend
            .clone()
            .ok_or_else(|| "not initialized: send init first".to_string())
    }

    fn dispatch(&self, method: &str, params: Value) -> Result<Value, String> {
        match method {
            "init" => self.init(&params),
            "event" => {
                let call: EventCall = parse(params, "event call")?;
                self.accept(call.v, &call.ctx)?;
                self.backend()?.event(&call)
            }
            "tool" => {
                let call: ToolCall = parse(params, "tool call")?;
                self.accept(call.v, &call.ctx)?;
                self.backend()?.tool(&call)
            }
            "command" => {
                let call: CommandCall = parse(params, "command call")?;
                self.accept(call.v, &call.ctx)?;
                self.backend()?.command(&call)
            }
            "request" => {
                let name = params
                    .get("method")
                    .and_then(Value::as_str)
                    .ok_or("request: params.method is missing")?;
                let payload = params.get("payload").cloned().unwrap_or(Value::Null);
                self.backend()?.request(name, &payload)
            }
            "flush" => Ok(self.backend()?.flush(timeout_param(&params, 5_000))),
            "shutdown" => {
                let timeout = timeout_param(&params, 5_000);
                let backend = self.backend().ok();
                Ok(backend
                    .map(|b| b.shutdown(timeout))
                    .unwrap_or_else(|| json!({"pending": 0, "idle": true})))
            }
            other => Err(format!("unknown method '{other}'")),
        }
    }

    /// A call's `v` must be this protocol's, and its context becomes the
    /// current one only if its session file passes [`check_session_file`].
    fn accept(&self, v: u32, ctx: &SessionContext) -> Result<(), String> {
        pi_ext_abi::protocol::check_version(v)?;
        check_session_file(ctx)?;
        self.host.set_context(ctx);
        Ok(())
    }

    fn init(&self, params: &Value) -> Result<Value, String> {
        if let Some(ctx) = params.get("ctx") {
            let ctx: SessionContext = parse(ctx.clone(), "init ctx")?;
            check_session_file(&ctx)?;
            self.host.set_context(&ctx);
        }
        self.host.set_can_complete(
            params
                .get("canComplete")
                .and_then(Value::as_bool)
                .unwrap_or(false),
        );
        let backend = self.create_backend()?;
        let mut info = self.options.plugin_info.clone();
        if let Some(obj) = info.as_object_mut() {
            obj.insert("protocol".into(), json!(SERVE_PROTOCOL_VERSION));
            obj.insert("registrations".into(), backend.registrations()?);
        }
        Ok(info)
    }

    /// The instance, created on the first `init`. The slot is not locked while
    /// the plugin starts, so a plugin that calls its host during start-up works.
    fn create_backend(&self) -> Result<Arc<dyn Backend>, String> {
        let poisoned = || "plugin state is poisoned".to_string();
        if let Some(existing) = self.slot.lock().map_err(|_| poisoned())?.backend.clone() {
            return Ok(existing);
        }
        let created = (self.factory)(self.host.clone());
        let mut slot = self.slot.lock().map_err(|_| poisoned())?;
        slot.initializing = false;
        let result = match (&slot.backend, created) {
            (Some(first), _) => Ok(Arc::clone(first)), // a concurrent init won
            (None, Ok(backend)) => {
                slot.backend = Some(Arc::clone(&backend));
                Ok(backend)
            }
            (None, Err(e)) => Err(e),
        };
        self.slot_changed.notify_all();
        result
    }

    /// stdin closed: give background work its deadline, but never wait past it.
    fn shutdown_on_eof(&self) {
        let Some(backend) = self.slot.lock().ok().and_then(|s| s.backend.clone()) else {
            return;
        };
        let timeout = self.options.shutdown_timeout;
        let (tx, rx) = mpsc::channel();
        let spawned = std::thread::Builder::new()
            .name("serve-shutdown".into())
            .spawn(move || {
                let _ = tx.send(backend.shutdown(timeout));
            });
        if spawned.is_ok() {
            let _ = rx.recv_timeout(timeout + Duration::from_secs(1));
        }
    }
}

/// `ctx.sessionFile` passes the host's one check of session files
/// ([`crate::context::check_session_file`]). A file that does not exist yet
/// passes: pi writes a new session's file only after its first reply.
fn check_session_file(ctx: &SessionContext) -> Result<(), String> {
    let Some(file) = ctx.session_file.as_deref().map(std::path::Path::new) else {
        return Ok(());
    };
    if std::fs::symlink_metadata(file).is_err() {
        return Ok(());
    }
    if ctx.agent_dir.is_empty() {
        return Err(format!(
            "ctx.agentDir is missing: it is needed to check that ctx.sessionFile {} is one of pi's session files",
            file.display()
        ));
    }
    crate::context::check_session_file(std::path::Path::new(&ctx.agent_dir), file)
        .map_err(|e| format!("ctx.sessionFile {e}"))
}

fn parse<T: serde::de::DeserializeOwned>(value: Value, what: &str) -> Result<T, String> {
    serde_json::from_value(value).map_err(|e| format!("invalid {what}: {e}"))
}

fn timeout_param(params: &Value, default_ms: u64) -> Duration {
    Duration::from_millis(
        params
            .get("timeoutMs")
            .and_then(Value::as_u64)
            .unwrap_or(default_ms),
    )
}
