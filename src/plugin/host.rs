//! The plugin's view of its host: a safe, cloneable Rust trait over the
//! FFI [`pi_ext_abi::HostBox`].
//!
//! Feature modules depend on [`HostApi`] only, never on abi_stable types, so
//! they can be unit-tested with [`RecordingHost`] and the FFI stays in one
//! place ([`crate::plugin::ffi`]).

use std::sync::{Arc, Mutex};
use std::time::Duration;

use abi_stable::std_types::{RResult, RStr};
use pi_ext_abi::protocol::{CompletionRequest, CompletionResponse, SessionContext};
use pi_ext_abi::{HostBox, LogLevel};
use serde_json::Value;

/// Notification levels, as pi's `ctx.ui.notify` accepts them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum NotifyLevel {
    Info,
    Warning,
    Error,
    Success,
}

/// Everything the plugin may ask of its host. See [`pi_ext_abi::Host`].
/// The defaults are a host without a UI, a session to write to, keys or
/// models, that runs no agent (the CLI; tests override what they record).
pub trait HostApi: Send + Sync {
    fn context(&self) -> SessionContext;
    fn set_status(&self, _key: &str, _text: Option<&str>) {}
    fn notify(&self, text: &str, level: NotifyLevel);
    fn append_entry(&self, _custom_type: &str, _data: &Value) {}
    fn set_session_name(&self, _name: &str) {}
    fn api_key(&self, _provider: &str) -> Option<String> {
        None
    }
    fn can_complete(&self) -> bool {
        false
    }
    /// Blocking: call from background threads only.
    fn complete(&self, _request: &CompletionRequest) -> Result<CompletionResponse, String> {
        Err("this host does not serve model completions".into())
    }
    fn log(&self, _level: LogLevel, _target: &str, _message: &str) {}
    fn wait_for_idle(&self, _timeout: Duration) -> bool {
        true
    }
}

/// Shared handle to the host.
pub type Host = Arc<dyn HostApi>;

/// [`HostApi`] over the FFI host object.
pub struct FfiHost {
    pub inner: HostBox,
}

impl HostApi for FfiHost {
    fn context(&self) -> SessionContext {
        serde_json::from_str(self.inner.context().as_str()).unwrap_or_default()
    }

    // What pi shows or logs is redacted here (as tool results and command
    // output are in the router): a notice may name a session or a path.
    fn set_status(&self, key: &str, text: Option<&str>) {
        let text = text.map(crate::redact::redact);
        self.inner.set_status(
            RStr::from_str(key),
            text.as_deref().map(RStr::from_str).into(),
        );
    }

    fn notify(&self, text: &str, level: NotifyLevel) {
        self.inner.notify(
            RStr::from_str(&crate::redact::redact(text)),
            RStr::from_str(&crate::text::variant_name(&level)),
        );
    }

    fn append_entry(&self, custom_type: &str, data: &Value) {
        let data = data.to_string();
        self.inner
            .append_entry(RStr::from_str(custom_type), RStr::from_str(&data));
    }

    fn set_session_name(&self, name: &str) {
        self.inner.set_session_name(RStr::from_str(name));
    }

    fn api_key(&self, provider: &str) -> Option<String> {
        self.inner
            .api_key(RStr::from_str(provider))
            .into_option()
            .map(|k| k.into_string())
    }

    fn can_complete(&self) -> bool {
        self.inner.can_complete()
    }

    fn complete(&self, request: &CompletionRequest) -> Result<CompletionResponse, String> {
        let request = serde_json::to_string(request).map_err(|e| e.to_string())?;
        match self.inner.complete(RStr::from_str(&request)) {
            RResult::ROk(text) => serde_json::from_str(text.as_str())
                .map_err(|e| format!("host returned an invalid completion document: {e}")),
            RResult::RErr(message) => Err(message.into_string()),
        }
    }

    fn log(&self, level: LogLevel, target: &str, message: &str) {
        let message = crate::redact::redact(message);
        self.inner
            .log(level, RStr::from_str(target), RStr::from_str(&message));
    }

    fn wait_for_idle(&self, timeout: Duration) -> bool {
        self.inner
            .wait_for_idle(timeout.as_millis().min(u64::MAX as u128) as u64)
    }
}

/// One recorded host call, for unit tests.
#[derive(Debug, Clone, PartialEq)]
pub enum Effect {
    SetStatus { key: String, text: Option<String> },
    Notify { text: String, level: NotifyLevel },
    AppendEntry { custom_type: String, data: Value },
    SetSessionName { name: String },
}

/// An in-memory [`HostApi`] that records effects, for unit tests of feature
/// modules. Integration tests use the real host crate instead.
#[derive(Default)]
pub struct RecordingHost {
    pub ctx: Mutex<SessionContext>,
    pub effects: Mutex<Vec<Effect>>,
    pub keys: Mutex<Vec<(String, String)>>,
}

impl RecordingHost {
    pub fn new(ctx: SessionContext) -> Arc<Self> {
        Arc::new(RecordingHost {
            ctx: Mutex::new(ctx),
            ..Default::default()
        })
    }

    pub fn effects(&self) -> Vec<Effect> {
        self.effects.lock().map(|e| e.clone()).unwrap_or_default()
    }

    fn record(&self, effect: Effect) {
        if let Ok(mut effects) = self.effects.lock() {
            effects.push(effect);
        }
    }
}

impl HostApi for RecordingHost {
    fn context(&self) -> SessionContext {
        self.ctx.lock().map(|c| c.clone()).unwrap_or_default()
    }
    fn set_status(&self, key: &str, text: Option<&str>) {
        self.record(Effect::SetStatus {
            key: key.into(),
            text: text.map(Into::into),
        });
    }
    fn notify(&self, text: &str, level: NotifyLevel) {
        self.record(Effect::Notify {
            text: text.into(),
            level,
        });
    }
    fn append_entry(&self, custom_type: &str, data: &Value) {
        self.record(Effect::AppendEntry {
            custom_type: custom_type.into(),
            data: data.clone(),
        });
    }
    fn set_session_name(&self, name: &str) {
        self.record(Effect::SetSessionName { name: name.into() });
    }
    fn api_key(&self, provider: &str) -> Option<String> {
        let keys = self.keys.lock().ok()?;
        keys.iter()
            .find(|(p, _)| p == provider)
            .map(|(_, k)| k.clone())
    }
}
