//! A [`pi_ext_abi::Host`] that records every call the plugin makes as an
//! effect, in order, instead of driving a UI.
//!
//! The reference host reports effects rather than performing them: pi owns
//! its session files, so `appendEntry` and `setSessionName` are printed for
//! the caller to inspect, never written.

use std::io::Write as _;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard};

use abi_stable::sabi_trait::TD_Opaque;
use abi_stable::std_types::{ROption, RResult, RStr, RString};
use pi_ext_abi::protocol::{CompletionRequest, SessionContext};
use pi_ext_abi::{Host, HostBox, Host_TO, LogLevel};
use serde_json::{json, Value};

use crate::error::one_line;

/// Environment variable setting which plugin log records reach stderr:
/// `off`, `error`, `warn` (default), `info`, `debug` or `trace`.
pub const LOG_ENV: &str = "PI_EXT_LOG";

struct State {
    context: SessionContext,
    effects: Vec<Value>,
}

struct Shared {
    state: Mutex<State>,
    stderr_level: Option<LogLevel>,
}

/// The recording host. Clones share one effect list, so the clone moved
/// into the plugin and the one the caller keeps see the same calls.
#[derive(Clone)]
pub struct RecordingHost {
    shared: Arc<Shared>,
}

impl RecordingHost {
    /// A host for `context`, logging to stderr as `$PI_EXT_LOG` says (`off`: never).
    pub fn new(context: SessionContext) -> Self {
        let level = match std::env::var(LOG_ENV)
            .unwrap_or_default()
            .trim()
            .to_ascii_lowercase()
            .as_str()
        {
            "off" | "none" => None,
            name => Some(LogLevel::from_name(name).unwrap_or(LogLevel::Warn)),
        };
        Self::with_stderr_level(context, level)
    }

    /// A host logging plugin records at `level` or above to stderr (`None`: never).
    pub fn with_stderr_level(context: SessionContext, level: Option<LogLevel>) -> Self {
        RecordingHost {
            shared: Arc::new(Shared {
                state: Mutex::new(State {
                    context,
                    effects: Vec::new(),
                }),
                stderr_level: level,
            }),
        }
    }

    /// The FFI object to hand to [`crate::instance::PluginInstance::new`].
    pub fn to_host_box(&self) -> HostBox {
        Host_TO::from_value(self.clone(), TD_Opaque)
    }

    // A panicking plugin thread must not make the host unusable, so a poisoned lock is still used.
    fn state(&self) -> MutexGuard<'_, State> {
        self.shared
            .state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Replace the session context (e.g. when a long-lived host switches sessions).
    pub fn set_context(&self, context: SessionContext) {
        self.state().context = context;
    }

    /// All effects recorded so far, in order.
    pub fn effects(&self) -> Vec<Value> {
        self.state().effects.clone()
    }

    /// Remove and return the effects recorded so far.
    pub fn take_effects(&self) -> Vec<Value> {
        std::mem::take(&mut self.state().effects)
    }

    fn record(&self, effect: Value) {
        self.state().effects.push(effect);
    }

    fn print_log(&self, source: &str, level: LogLevel, target: &str, message: &str) {
        if self
            .shared
            .stderr_level
            .is_some_and(|threshold| level >= threshold)
        {
            // Ignoring a failed write: there is nowhere else to report it.
            let _ = writeln!(
                std::io::stderr().lock(),
                "[{source} {}] {target}: {}",
                level.as_str(),
                one_line(message)
            );
        }
    }
}

/// Run a host callback, turning a panic into `fallback`: a panic unwinding
/// into the plugin's FFI frame would abort the process.
fn guard<T>(fallback: T, f: impl FnOnce() -> T) -> T {
    catch_unwind(AssertUnwindSafe(f)).unwrap_or(fallback)
}

impl Host for RecordingHost {
    fn context(&self) -> RString {
        guard(RString::from("{}"), || {
            RString::from(
                serde_json::to_string(&self.state().context).unwrap_or_else(|_| "{}".to_string()),
            )
        })
    }

    fn set_status(&self, key: RStr<'_>, text: ROption<RStr<'_>>) {
        guard((), || {
            let text = text.into_option().map(|t| t.as_str().to_string());
            self.record(json!({"type": "setStatus", "key": key.as_str(), "text": text}));
        })
    }

    fn notify(&self, text: RStr<'_>, level: RStr<'_>) {
        guard((), || {
            self.record(json!({"type": "notify", "text": text.as_str(), "level": level.as_str()}))
        })
    }

    fn append_entry(&self, custom_type: RStr<'_>, data_json: RStr<'_>) {
        guard((), || {
            let mut effect =
                json!({"type": "appendEntry", "customType": custom_type.as_str(), "data": null});
            match serde_json::from_str::<Value>(data_json.as_str()) {
                Ok(data) => effect["data"] = data,
                Err(e) => effect["error"] = json!(format!("data is not JSON: {e}")),
            }
            self.record(effect);
        })
    }

    fn set_session_name(&self, name: RStr<'_>) {
        guard((), || {
            self.record(json!({"type": "setSessionName", "name": name.as_str()}))
        })
    }

    fn api_key(&self, provider: RStr<'_>) -> ROption<RString> {
        guard(ROption::RNone, || {
            let provider = provider.as_str();
            let (found, note) =
                crate::auth::lookup(provider, &PathBuf::from(&self.state().context.agent_dir));
            if let Some(note) = note {
                self.print_log("host", LogLevel::Warn, "auth", &note);
            }
            let source = found.as_ref().map(|(_, source)| source.describe());
            self.record(json!({"type": "apiKey", "provider": provider, "found": found.is_some(), "source": source}));
            match found {
                Some((key, _)) => ROption::RSome(RString::from(key)),
                None => ROption::RNone,
            }
        })
    }

    fn can_complete(&self) -> bool {
        false
    }

    fn complete(&self, request_json: RStr<'_>) -> RResult<RString, RString> {
        const REFUSAL: &str = "pi-ext-host does not serve model completions";
        guard(RResult::RErr(RString::from(REFUSAL)), || {
            let effect = match serde_json::from_str::<CompletionRequest>(request_json.as_str()) {
                Ok(request) => json!({
                    "type": "complete",
                    "model": request.model,
                    "maxTokens": request.max_tokens,
                    "messages": request.messages.len(),
                    "jsonSchema": request.json_schema.is_some(),
                    "error": REFUSAL,
                }),
                Err(e) => {
                    json!({"type": "complete", "error": format!("invalid completion request: {e}")})
                }
            };
            self.record(effect);
            RResult::RErr(RString::from(REFUSAL))
        })
    }

    fn log(&self, level: LogLevel, target: RStr<'_>, message: RStr<'_>) {
        guard((), || {
            self.print_log("plugin", level, target.as_str(), message.as_str());
            self.record(json!({
                "type": "log",
                "level": level.as_str(),
                "target": target.as_str(),
                "message": message.as_str(),
            }));
        })
    }

    fn wait_for_idle(&self, timeout_ms: u64) -> bool {
        // This host runs no agent, so it is always idle.
        guard(true, || {
            self.record(json!({"type": "waitForIdle", "timeoutMs": timeout_ms}));
            true
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn effects_are_recorded_in_order_through_the_ffi_object() {
        let host = RecordingHost::with_stderr_level(SessionContext::default(), None);
        let boxed = host.to_host_box();
        boxed.set_status(
            RStr::from_str("k"),
            ROption::RSome(RStr::from_str("working")),
        );
        boxed.notify(RStr::from_str("done"), RStr::from_str("info"));
        boxed.append_entry(RStr::from_str("t"), RStr::from_str("{\"a\":1}"));
        boxed.set_session_name(RStr::from_str("n"));
        boxed.log(LogLevel::Debug, RStr::from_str("x"), RStr::from_str("m"));
        boxed.set_status(RStr::from_str("k"), ROption::RNone);
        let kinds: Vec<_> = host
            .effects()
            .iter()
            .map(|e| e["type"].as_str().unwrap().to_string())
            .collect();
        assert_eq!(
            kinds,
            [
                "setStatus",
                "notify",
                "appendEntry",
                "setSessionName",
                "log",
                "setStatus"
            ]
        );
        assert_eq!(
            host.effects()[2],
            json!({"type": "appendEntry", "customType": "t", "data": {"a": 1}})
        );
        assert_eq!(host.effects()[5]["text"], Value::Null);
        assert_eq!(host.take_effects().len(), 6);
        assert!(host.effects().is_empty());
    }

    #[test]
    fn api_key_effects_never_carry_the_key() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("auth.json"),
            r#"{"zz-prov": {"type": "api_key", "key": "sk-very-secret"}}"#,
        )
        .unwrap();
        let ctx = SessionContext {
            agent_dir: dir.path().display().to_string(),
            ..Default::default()
        };
        let host = RecordingHost::with_stderr_level(ctx, None);
        let key = host.to_host_box().api_key(RStr::from_str("zz-prov"));
        assert_eq!(
            key.into_option().map(|k| k.into_string()),
            Some("sk-very-secret".to_string())
        );
        let effects = serde_json::to_string(&host.effects()).unwrap();
        assert!(!effects.contains("sk-very-secret"), "{effects}");
        assert_eq!(
            host.effects()[0],
            json!({"type": "apiKey", "provider": "zz-prov", "found": true, "source": "auth.json"})
        );
    }

    #[test]
    fn completions_are_refused_and_recorded() {
        let host = RecordingHost::with_stderr_level(SessionContext::default(), None);
        let boxed = host.to_host_box();
        assert!(!boxed.can_complete());
        let result = boxed.complete(RStr::from_str("not json"));
        assert!(matches!(result, RResult::RErr(_)));
        assert_eq!(host.effects()[0]["type"], "complete");
        assert!(boxed.wait_for_idle(10));
    }
}
