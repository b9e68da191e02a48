//! The JSON documents that cross the boundary, shaped like pi's extension API
//! (camelCase field names, as in pi's `docs/extensions.md`).
//!
//! Every call document carries `v` ([`PROTOCOL_VERSION`]). Readers ignore
//! unknown fields so either side can add fields in a minor version.
//! [`agent_dir`] is the one convention of pi's both sides resolve alike (the
//! host, and the plugin's command line when no host runs it).
//!
//! Since 1.1, a command may ask the host for pi's session controls
//! ([`Action`]: the selector, switching and starting sessions, editor text)
//! in its [`CommandResult`], and the host lists the ones it performs in
//! [`SessionContext::actions`]. They are results, not [`crate::Host`]
//! methods, because abi_stable's layout check refuses a library whose vtables
//! are shorter than the loader's: a host with a longer `Host` vtable would
//! stop loading every 1.0 plugin.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Version of the JSON documents in this module.
pub const PROTOCOL_VERSION: u32 = 1;

fn protocol_version() -> u32 {
    PROTOCOL_VERSION
}

/// Refuse a call document of a protocol version this side does not speak
/// (`v` is the major version; minor additions need no new `v`).
pub fn check_version(v: u32) -> Result<(), String> {
    match v {
        PROTOCOL_VERSION => Ok(()),
        other => Err(format!(
            "unsupported protocol version v={other} (this side speaks v={PROTOCOL_VERSION})"
        )),
    }
}

/// The events a plugin may subscribe to (a subset of pi's).
pub const EVENTS: &[&str] = &[
    "session_start",
    "input",
    "before_agent_start",
    "agent_end",
    "session_shutdown",
];

/// pi's `ExtensionContext`, reduced to plain data.
#[cfg_attr(test, derive(ts_rs::TS))]
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct SessionContext {
    /// Absolute path of the session's JSONL file; `None` for ephemeral sessions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_file: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
    /// The directory holding this project's session files.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_dir: Option<String>,
    /// Current leaf entry id; `None` means the last entry in file order (pi's default).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub leaf_id: Option<String>,
    #[serde(default)]
    pub cwd: String,
    /// pi's agent directory (`~/.pi/agent` or `PI_CODING_AGENT_DIR`).
    #[serde(default)]
    pub agent_dir: String,
    #[serde(default)]
    pub has_ui: bool,
    /// The model pi is using, as `provider/id`, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// Since 1.1: the [`Action`] types (`select`, `newSession`, …) this host performs; empty on 1.0 hosts.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub actions: Vec<String>,
}

impl SessionContext {
    /// Whether the host performs actions of `kind` (e.g. `newSession`).
    pub fn can(&self, kind: &str) -> bool {
        self.actions.iter().any(|a| a == kind)
    }
}

/// pi's environment variable for its agent directory.
pub const AGENT_DIR_ENV: &str = "PI_CODING_AGENT_DIR";

/// pi's `getAgentDir()`, for a host and the plugin's own command line alike:
/// `$PI_CODING_AGENT_DIR` (a leading `~` is the home directory), else
/// `~/.pi/agent`; `None` without a home directory (`$HOME`, else `%USERPROFILE%`).
pub fn agent_dir() -> Option<PathBuf> {
    let home = ["HOME", "USERPROFILE"]
        .iter()
        .find_map(|v| std::env::var_os(v).filter(|h| !h.is_empty()));
    let home = home.map(PathBuf::from);
    match std::env::var_os(AGENT_DIR_ENV)
        .filter(|d| !d.is_empty())
        .map(PathBuf::from)
    {
        Some(dir) => Some(match (dir.strip_prefix("~"), home) {
            (Ok(rest), Some(home)) => home.join(rest),
            _ => dir,
        }),
        None => home.map(|h| h.join(".pi").join("agent")),
    }
}

/// An event delivered to [`crate::Plugin::on_event`].
#[cfg_attr(test, derive(ts_rs::TS))]
#[derive(Serialize, Deserialize, Clone, Debug)]
#[serde(rename_all = "camelCase")]
pub struct EventCall {
    #[serde(default = "protocol_version")]
    pub v: u32,
    /// pi's event name, e.g. `before_agent_start`.
    pub event: String,
    /// pi's event object, e.g. `{prompt, systemPrompt}`.
    #[serde(default)]
    pub payload: Value,
    #[serde(default)]
    pub ctx: SessionContext,
}

/// An event with what a plugin reads of its payload, typed:
/// `{"event": "before_agent_start", "payload": {"prompt", …}}` (adjacently
/// tagged, so the JSON is [`EventCall`]'s own). Other payload fields are ignored.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(tag = "event", content = "payload", rename_all = "snake_case")]
pub enum Event {
    SessionStart {},
    Input {},
    BeforeAgentStart {
        #[serde(default)]
        prompt: String,
    },
    AgentEnd {},
    SessionShutdown {},
}

impl EventCall {
    /// The event, typed; an unknown event or a malformed payload is an error.
    pub fn typed(&self) -> Result<Event, String> {
        check_version(self.v)?;
        let payload = if self.payload.is_null() {
            Value::Object(Default::default())
        } else {
            self.payload.clone()
        };
        let doc = serde_json::json!({"event": self.event, "payload": payload});
        serde_json::from_value(doc).map_err(|e| format!("event '{}': {e}", self.event))
    }
}

/// Result of the `input` event (pi's `{action, text}`).
#[cfg_attr(test, derive(ts_rs::TS))]
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(tag = "action", rename_all = "camelCase")]
pub enum InputResult {
    Continue,
    Transform { text: String },
    Handled,
}

/// A message injected by `before_agent_start`; pi persists it as a `custom_message` entry.
#[cfg_attr(test, derive(ts_rs::TS))]
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct CustomMessage {
    pub custom_type: String,
    pub content: String,
    #[serde(default)]
    pub display: bool,
    #[serde(default)]
    pub details: Value,
}

/// Result of `before_agent_start` (pi's `{message?, systemPrompt?}`).
#[cfg_attr(test, derive(ts_rs::TS))]
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct BeforeAgentStartResult {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<CustomMessage>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub system_prompt: Option<String>,
}

/// A command the plugin registers (pi's `pi.registerCommand(name, {description})`).
#[cfg_attr(test, derive(ts_rs::TS))]
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct CommandSpec {
    pub name: String,
    pub description: String,
}

/// A tool the plugin registers (pi's `pi.registerTool`).
#[cfg_attr(test, derive(ts_rs::TS))]
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ToolSpec {
    pub name: String,
    pub label: String,
    pub description: String,
    /// JSON schema of the parameters object.
    pub parameters: Value,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt_snippet: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub prompt_guidelines: Vec<String>,
}

/// Everything a plugin registers, returned by [`crate::Plugin::registrations`].
#[cfg_attr(test, derive(ts_rs::TS))]
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Registrations {
    /// Events the plugin wants delivered (names from [`EVENTS`]).
    pub events: Vec<String>,
    pub commands: Vec<CommandSpec>,
    pub tools: Vec<ToolSpec>,
    /// Every problem the plugin found in the config object it was handed
    /// (`key: message`); the host, which read the file, names it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub config_problems: Vec<String>,
}

/// A tool invocation.
#[cfg_attr(test, derive(ts_rs::TS))]
#[derive(Serialize, Deserialize, Clone, Debug)]
#[serde(rename_all = "camelCase")]
pub struct ToolCall {
    #[serde(default = "protocol_version")]
    pub v: u32,
    pub tool: String,
    #[serde(default)]
    pub tool_call_id: String,
    pub params: Value,
    #[serde(default)]
    pub ctx: SessionContext,
}

/// One content part of a tool result (pi's `{type: "text", text}`).
#[cfg_attr(test, derive(ts_rs::TS))]
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(tag = "type", rename_all = "camelCase")]
pub enum ContentPart {
    Text { text: String },
}

/// A tool result (pi's `{content, details, isError}`).
#[cfg_attr(test, derive(ts_rs::TS))]
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ToolResult {
    pub content: Vec<ContentPart>,
    #[serde(default)]
    pub details: Value,
    #[serde(default)]
    pub is_error: bool,
}

impl ToolResult {
    pub fn text(text: impl Into<String>, details: Value, is_error: bool) -> Self {
        ToolResult {
            content: vec![ContentPart::Text { text: text.into() }],
            details,
            is_error,
        }
    }
}

/// A command invocation (`/name args`).
#[cfg_attr(test, derive(ts_rs::TS))]
#[derive(Serialize, Deserialize, Clone, Debug)]
#[serde(rename_all = "camelCase")]
pub struct CommandCall {
    #[serde(default = "protocol_version")]
    pub v: u32,
    pub command: String,
    #[serde(default)]
    pub args: String,
    #[serde(default)]
    pub ctx: SessionContext,
}

/// Outcome of a command; the plugin also reports through Host callbacks.
#[cfg_attr(test, derive(ts_rs::TS))]
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct CommandResult {
    pub ok: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    #[serde(default)]
    pub details: Value,
    /// Since 1.1: what the host does next, in order, once the command returned.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub actions: Vec<Action>,
}

/// Since 1.1: a session control the host performs for a command (pi's
/// `ctx.ui.select`, `ctx.switchSession`, `ctx.newSession`, `ctx.ui.pasteToEditor`).
#[cfg_attr(test, derive(ts_rs::TS))]
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(tag = "type", rename_all = "camelCase")]
pub enum Action {
    /// Let the user pick one option; its actions run, nothing runs on dismissal.
    #[serde(rename_all = "camelCase")]
    Select {
        title: String,
        options: Vec<SelectOption>,
    },
    /// Switch to another session file.
    #[serde(rename_all = "camelCase")]
    SwitchSession { session_file: String },
    /// Start a new session whose header records `parent_session` and whose first entry is `message`.
    #[serde(rename_all = "camelCase")]
    NewSession {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        parent_session: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        message: Option<CustomMessage>,
    },
    /// Insert text into the user's editor.
    InsertText { text: String },
    /// Run a command of this plugin (its result may carry further actions).
    Command { command: String, args: String },
}

/// Every [`Action`] type, for hosts that perform them all.
pub const ACTIONS: &[&str] = &[
    "select",
    "switchSession",
    "newSession",
    "insertText",
    "command",
];

/// One choice of [`Action::Select`].
#[cfg_attr(test, derive(ts_rs::TS))]
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct SelectOption {
    pub label: String,
    #[serde(default)]
    pub actions: Vec<Action>,
}

/// State of background work after [`crate::Plugin::flush`] or `shutdown`.
#[cfg_attr(test, derive(ts_rs::TS))]
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct FlushReport {
    /// Background jobs still running or queued.
    pub pending: u32,
    /// True when nothing is pending.
    pub idle: bool,
}

/// One chat message of a [`CompletionRequest`].
#[cfg_attr(test, derive(ts_rs::TS))]
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ChatMessage {
    /// `user` or `assistant`.
    pub role: String,
    pub content: String,
}

/// A model completion the plugin asks the host to run ([`crate::Host::complete`]).
#[cfg_attr(test, derive(ts_rs::TS))]
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct CompletionRequest {
    /// `provider/id`; `None` lets the host choose its cheapest suitable model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// Since 1.1: every acceptable `provider/id`, in order of preference. When
    /// none is usable, [`CompletionRequest::fallback`] says what the host may do.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub candidates: Vec<String>,
    /// Since 1.2: what the host may use when no candidate is usable; absent
    /// means [`ModelFallback::Offline`] (a plugin never spends on a model the
    /// user did not choose).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fallback: Option<ModelFallback>,
    pub system: String,
    pub messages: Vec<ChatMessage>,
    pub max_tokens: u32,
    /// When set, the answer must be a JSON object matching this schema.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub json_schema: Option<Value>,
    #[cfg_attr(test, ts(type = "number"))]
    pub timeout_ms: u64,
    /// Since 1.3: the most this call may cost in USD, at the host's price for
    /// the model it picks, counting every byte of `system`, `messages` and
    /// `json_schema` as an input token and all of `max_tokens` as output. The
    /// host picks no model whose worst case is higher; when none fits it
    /// fails with an error starting [`OVER_CAP`]. Absent: no limit (no daily
    /// cap is set).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_cost_usd: Option<f64>,
}

/// What a host may answer with when none of a [`CompletionRequest`]'s models is usable.
#[cfg_attr(test, derive(ts_rs::TS))]
#[derive(Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum ModelFallback {
    /// Nothing: the call fails with an error starting [`UNAVAILABLE`], and the
    /// plugin uses its offline model.
    #[default]
    Offline,
    /// The host's cheapest capable model that has credentials.
    Cheapest,
    /// That, else the model of the user's session.
    Session,
}

/// How a host's completion error starts when no model may be used (the
/// plugin then answers offline instead of failing).
pub const UNAVAILABLE: &str = "unavailable: ";

/// How a host's completion error starts when every usable model may cost more
/// than [`CompletionRequest::max_cost_usd`] (the plugin then says the daily
/// cap is reached).
pub const OVER_CAP: &str = "over cap: ";

/// Token usage of a completion.
#[cfg_attr(test, derive(ts_rs::TS))]
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Usage {
    #[cfg_attr(test, ts(type = "number"))]
    pub input_tokens: u64,
    #[cfg_attr(test, ts(type = "number"))]
    pub output_tokens: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost_usd: Option<f64>,
}

/// The host's answer to a [`CompletionRequest`].
#[cfg_attr(test, derive(ts_rs::TS))]
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct CompletionResponse {
    pub text: String,
    /// The model that answered, as `provider/id`.
    pub model: String,
    #[serde(default)]
    pub usage: Usage,
    /// Since 1.1: why the host used `model`: `configured` (requested), `cheapest`
    /// (its registry's cheapest capable model) or `session` (the session's model).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub choice: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn agent_dir_is_pis() {
        // The only test of this crate that touches the environment.
        std::env::set_var("HOME", "/home/u");
        std::env::set_var(AGENT_DIR_ENV, "~/a");
        assert_eq!(agent_dir(), Some(PathBuf::from("/home/u/a")));
        std::env::set_var(AGENT_DIR_ENV, "/b");
        assert_eq!(agent_dir(), Some(PathBuf::from("/b")));
        std::env::remove_var(AGENT_DIR_ENV);
        assert_eq!(agent_dir(), Some(PathBuf::from("/home/u/.pi/agent")));
    }

    #[test]
    fn actions_are_tagged_camel_case_documents_and_1_0_results_still_read() {
        let result = CommandResult {
            ok: true,
            actions: vec![Action::Select {
                title: "t".into(),
                options: vec![SelectOption {
                    label: "go".into(),
                    actions: vec![Action::NewSession {
                        parent_session: Some("/p.jsonl".into()),
                        message: None,
                    }],
                }],
            }],
            ..CommandResult::default()
        };
        let doc = serde_json::to_value(&result).unwrap();
        let option = &doc["actions"][0]["options"][0];
        assert_eq!(
            option["actions"][0],
            json!({"type": "newSession", "parentSession": "/p.jsonl"})
        );
        let old: CommandResult =
            serde_json::from_value(json!({"ok": true, "details": null})).unwrap();
        assert!(old.actions.is_empty());
        let ctx: SessionContext =
            serde_json::from_value(json!({"cwd": "/w", "actions": ["newSession"]})).unwrap();
        assert!(ctx.can("newSession") && !ctx.can("select"));
        assert!(
            !SessionContext::default().can("newSession"),
            "a 1.0 host performs no actions"
        );
    }

    fn call(v: u32, event: &str, payload: Value) -> EventCall {
        EventCall {
            v,
            event: event.into(),
            payload,
            ctx: SessionContext::default(),
        }
    }

    #[test]
    fn events_are_typed_from_the_wire_document() {
        let payload = json!({"prompt": "p", "systemPrompt": "s", "images": []});
        let typed = call(1, "before_agent_start", payload).typed().unwrap();
        assert_eq!(typed, Event::BeforeAgentStart { prompt: "p".into() });
        let wire = serde_json::to_value(&typed).unwrap();
        assert_eq!(
            wire,
            json!({"event": "before_agent_start", "payload": {"prompt": "p"}})
        );
        let payload = json!({"reason": null, "previousSessionFile": 5});
        assert_eq!(
            call(1, "session_start", payload).typed().unwrap(),
            Event::SessionStart {}
        );
        assert_eq!(
            call(1, "agent_end", Value::Null).typed().unwrap(),
            Event::AgentEnd {}
        );
        for name in EVENTS {
            assert!(call(1, name, json!({})).typed().is_ok(), "{name}");
        }
        let unknown = call(1, "turn_end", json!({})).typed().unwrap_err();
        assert!(
            unknown.starts_with("event 'turn_end': unknown variant"),
            "{unknown}"
        );
        let version = call(2, "agent_end", json!({})).typed().unwrap_err();
        assert_eq!(
            version,
            "unsupported protocol version v=2 (this side speaks v=1)"
        );
    }
}
