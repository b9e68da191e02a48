//! A live plugin instance: typed calls over the JSON boundary, with the
//! host-side checks a user should get before the plugin is even asked
//! (unknown names, non-object tool arguments) and a deadline on every call
//! so a stuck handler cannot hang the host.

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::Arc;
use std::time::Duration;

use abi_stable::std_types::{RResult, RStr, RString};
use pi_ext_abi::protocol::{
    CommandCall, CommandResult, EventCall, FlushReport, Registrations, ToolCall, ToolResult, EVENTS,
};
use pi_ext_abi::{HostBox, PluginBox, PluginModRef};
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::Value;

use crate::error::{one_line, HostError};

/// Default deadline for one event, tool, command or request call. Generous
/// because commands may wait for a model; events are expected to return at once.
pub const DEFAULT_CALL_TIMEOUT: Duration = Duration::from_secs(180);

/// Extra time given to `flush`/`shutdown` beyond the plugin's own deadline.
const FLUSH_GRACE: Duration = Duration::from_secs(5);

/// Shutdown deadline used when an instance is dropped without [`PluginInstance::shutdown`].
const DROP_SHUTDOWN: Duration = Duration::from_millis(500);

pub struct PluginInstance {
    plugin: Arc<PluginBox>,
    plugin_id: String,
    registrations: Registrations,
    shut_down: AtomicBool,
}

/// Run `f` on its own thread and wait at most `timeout` for it. On timeout
/// the thread is abandoned (it holds only `Arc`s), and the host goes on.
fn with_deadline<T: Send + 'static>(
    what: &str,
    timeout: Duration,
    f: impl FnOnce() -> T + Send + 'static,
) -> Result<T, String> {
    let (tx, rx) = mpsc::sync_channel(1);
    std::thread::Builder::new()
        .name("pi-ext-call".into())
        .spawn(move || {
            // The receiver may be gone after a timeout; nothing to do then.
            let _ = tx.send(f());
        })
        .map_err(|e| format!("{what}: cannot start a call thread: {e}"))?;
    match rx.recv_timeout(timeout) {
        Ok(value) => Ok(value),
        Err(RecvTimeoutError::Timeout) => Err(format!(
            "{what} did not return within {} ms",
            timeout.as_millis()
        )),
        Err(RecvTimeoutError::Disconnected) => Err(format!("{what} ended without a result")),
    }
}

fn parse_doc<T: DeserializeOwned>(what: &str, text: &str) -> Result<T, String> {
    serde_json::from_str(text)
        .map_err(|e| format!("{what}: the plugin returned an invalid document: {e}"))
}

fn plugin_result(what: &str, result: RResult<RString, RString>) -> Result<String, String> {
    match result {
        RResult::ROk(text) => Ok(text.into_string()),
        RResult::RErr(message) => Err(format!("{what} failed: {}", one_line(message.as_str()))),
    }
}

impl PluginInstance {
    /// Instantiate the plugin from a loaded module. `config_json` is the
    /// config file's text (or `null`); `plugin_dir` the manifest's directory.
    pub fn new(
        module: PluginModRef,
        host: HostBox,
        plugin_dir: impl AsRef<Path>,
        config_json: &str,
    ) -> Result<Self, HostError> {
        let dir = plugin_dir.as_ref().display().to_string();
        let config = config_json.to_string();
        let created = with_deadline("instantiate", DEFAULT_CALL_TIMEOUT, move || {
            let plugin_id = (module.plugin_id())().into_string();
            let result =
                (module.instantiate())(host, RStr::from_str(&dir), RStr::from_str(&config));
            (plugin_id, result)
        })
        .map_err(HostError::Plugin)?;
        let (plugin_id, plugin) = match created {
            (id, RResult::ROk(plugin)) => (id, plugin),
            (id, RResult::RErr(message)) => {
                return Err(HostError::Plugin(format!(
                    "{id}: instantiate failed: {}",
                    one_line(message.as_str())
                )))
            }
        };
        let plugin = Arc::new(plugin);
        let text = {
            let plugin = plugin.clone();
            with_deadline("registrations", DEFAULT_CALL_TIMEOUT, move || {
                plugin.registrations().into_string()
            })
            .map_err(HostError::Plugin)?
        };
        let registrations: Registrations = parse_doc("registrations", &text)
            .map_err(|e| HostError::Plugin(format!("{plugin_id}: {e}")))?;
        Ok(PluginInstance {
            plugin,
            plugin_id,
            registrations,
            shut_down: AtomicBool::new(false),
        })
    }

    /// `name@version` as the plugin reports it.
    pub fn plugin_id(&self) -> &str {
        &self.plugin_id
    }

    /// What the plugin registered when it was instantiated.
    pub fn registrations(&self) -> Registrations {
        self.registrations.clone()
    }

    /// Hand `doc` (as JSON) to the plugin in one call on a call thread; its answer, parsed.
    fn call<R: DeserializeOwned>(
        &self,
        what: &str,
        doc: &impl Serialize,
        f: impl FnOnce(&PluginBox, RStr<'_>) -> RResult<RString, RString> + Send + 'static,
    ) -> Result<R, String> {
        if self.shut_down.load(Ordering::SeqCst) {
            return Err(format!("{} is shut down", self.plugin_id));
        }
        let json = serde_json::to_string(doc)
            .map_err(|e| format!("{what}: cannot encode the call: {e}"))?;
        let plugin = self.plugin.clone();
        let result = with_deadline(what, DEFAULT_CALL_TIMEOUT, move || {
            f(&plugin, RStr::from_str(&json))
        })?;
        parse_doc(what, &plugin_result(what, result)?)
    }

    /// `name` is among the plugin's `names` (of tools or commands), else the error naming them.
    fn registered<'a>(
        &self,
        kind: &str,
        name: &str,
        names: impl Iterator<Item = &'a str> + Clone,
    ) -> Result<(), String> {
        if names.clone().any(|n| n == name) {
            return Ok(());
        }
        Err(format!(
            "unknown {kind} '{name}' ({} registers: {})",
            self.plugin_id,
            list_or_none(names)
        ))
    }

    /// Deliver an event; returns its result document (`null` when it has none).
    pub fn event(&self, call: &EventCall) -> Result<Value, String> {
        let name = call.event.as_str();
        if !EVENTS.contains(&name) {
            return Err(format!(
                "unknown event '{name}' (pi-ext-abi events: {})",
                EVENTS.join(", ")
            ));
        }
        if !self.registrations.events.iter().any(|e| e == name) {
            return Err(format!(
                "{} does not handle event '{name}' (it handles: {})",
                self.plugin_id,
                list_or_none(self.registrations.events.iter().map(String::as_str))
            ));
        }
        self.call(&format!("event {name}"), call, |p, json| p.on_event(json))
    }

    /// Execute a registered tool; `call.params` must be a JSON object.
    pub fn tool(&self, call: &ToolCall) -> Result<ToolResult, String> {
        let name = call.tool.as_str();
        self.registered(
            "tool",
            name,
            self.registrations.tools.iter().map(|t| t.name.as_str()),
        )?;
        if !call.params.is_object() {
            return Err(format!(
                "tool {name}: arguments must be a JSON object, got {}",
                json_kind(&call.params)
            ));
        }
        self.call(&format!("tool {name}"), call, |p, json| p.call_tool(json))
    }

    /// Run a registered command.
    pub fn command(&self, call: &CommandCall) -> Result<CommandResult, String> {
        let name = call.command.as_str();
        self.registered(
            "command",
            name,
            self.registrations.commands.iter().map(|c| c.name.as_str()),
        )?;
        self.call(&format!("command {name}"), call, |p, json| {
            p.run_command(json)
        })
    }

    /// A plugin-specific request (e.g. `references.complete`).
    pub fn request(&self, method: &str, payload: &Value) -> Result<Value, String> {
        let name = method.to_string();
        self.call(&format!("request {method}"), payload, move |p, json| {
            p.request(RStr::from_str(&name), json)
        })
    }

    fn finish(&self, what: &str, timeout: Duration, shutdown: bool) -> FlushReport {
        let plugin = self.plugin.clone();
        let ms = u64::try_from(timeout.as_millis()).unwrap_or(u64::MAX);
        let text = with_deadline(what, timeout.saturating_add(FLUSH_GRACE), move || {
            if shutdown {
                plugin.shutdown(ms).into_string()
            } else {
                plugin.flush(ms).into_string()
            }
        });
        // A plugin that cannot say it is idle is treated as not idle.
        text.ok()
            .and_then(|t| serde_json::from_str(&t).ok())
            .unwrap_or(FlushReport {
                pending: 0,
                idle: false,
            })
    }

    /// Wait up to `timeout` for the plugin's background work.
    pub fn flush(&self, timeout: Duration) -> FlushReport {
        self.finish("flush", timeout, false)
    }

    /// Stop the plugin, giving background work up to `timeout`. Later calls
    /// are refused; calling it again only reports the state.
    pub fn shutdown(&self, timeout: Duration) -> FlushReport {
        self.shut_down.store(true, Ordering::SeqCst);
        self.finish("shutdown", timeout, true)
    }
}

impl Drop for PluginInstance {
    fn drop(&mut self) {
        if !self.shut_down.load(Ordering::SeqCst) {
            self.shutdown(DROP_SHUTDOWN);
        }
    }
}

fn list_or_none<'a>(names: impl Iterator<Item = &'a str>) -> String {
    let names: Vec<&str> = names.collect();
    if names.is_empty() {
        "none".to_string()
    } else {
        names.join(", ")
    }
}

pub(crate) fn json_kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_call_past_its_deadline_is_abandoned_with_an_error() {
        let started = std::time::Instant::now();
        let result = with_deadline("event agent_end", Duration::from_millis(50), || {
            std::thread::sleep(Duration::from_secs(5));
            1
        });
        assert_eq!(
            result,
            Err("event agent_end did not return within 50 ms".to_string())
        );
        assert!(started.elapsed() < Duration::from_secs(4));
        assert_eq!(with_deadline("x", Duration::from_secs(5), || 7), Ok(7));
    }

    #[test]
    fn plugin_errors_are_one_line() {
        let err = plugin_result("tool t", RResult::RErr(RString::from("bad\nthing"))).unwrap_err();
        assert_eq!(err, "tool t failed: bad thing");
        assert_eq!(json_kind(&Value::Null), "null");
    }
}
