#![allow(non_local_definitions)] // emitted by abi_stable's sabi_trait macro
//! The stable boundary between a pi-style extension host and a dynamically
//! loaded extension plugin.
//!
//! Why this crate exists: a plugin is a `cdylib` built separately from the
//! host, possibly with another compiler version. Rust has no stable ABI, so
//! everything that crosses the boundary is either an `abi_stable` type
//! (checked for layout compatibility when the library is loaded) or a
//! versioned JSON document (see [`protocol`]). Keeping the FFI surface to a
//! handful of functions over strings means the plugin can evolve its payloads
//! without touching the binary interface.
//!
//! Shape (after abi_stable's interface/implementation/user split):
//! - [`PluginMod`] is the root module a plugin exports. It is a *prefix type*:
//!   later minor versions of this crate may append fields and old plugins keep
//!   loading; a plugin built against another major version is refused by
//!   abi_stable's version check when the host loads it.
//! - [`Plugin`] is the object the plugin hands back: events, tools, commands,
//!   flush and shutdown.
//! - [`Host`] is the object the host hands in: everything a plugin may ask of
//!   pi (status line, notifications, custom entries, session name, API keys,
//!   model completions, log forwarding, waiting for idle). It is `Clone +
//!   Send + Sync` so a plugin can move it into background threads.
//!
//! Contract for both sides: no panic may unwind through any function in this
//! crate's vtables (abi_stable aborts the process when one does). Catch
//! unwinds in every implementation and turn them into `RErr`.

use abi_stable::{
    declare_root_module_statics,
    library::RootModule,
    package_version_strings, sabi_trait,
    sabi_types::VersionStrings,
    std_types::{RBox, ROption, RResult, RStr, RString},
    StableAbi,
};

pub mod protocol;
#[cfg(test)]
mod typescript;

/// Major version of this interface. A host refuses plugins whose major differs.
pub const ABI_MAJOR: u32 = 1;
/// The full version string of this interface crate (what abi_stable checks).
pub const ABI_VERSION: &str = env!("CARGO_PKG_VERSION");

/// Log levels forwarded from the plugin's tracing events to the host's log.
#[repr(u8)]
#[derive(StableAbi, Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum LogLevel {
    Trace = 0,
    Debug = 1,
    Info = 2,
    Warn = 3,
    Error = 4,
}

impl LogLevel {
    pub fn as_str(self) -> &'static str {
        match self {
            LogLevel::Trace => "trace",
            LogLevel::Debug => "debug",
            LogLevel::Info => "info",
            LogLevel::Warn => "warn",
            LogLevel::Error => "error",
        }
    }

    /// The level [`LogLevel::as_str`] names `name`.
    pub fn from_name(name: &str) -> Option<LogLevel> {
        use LogLevel::*;
        [Trace, Debug, Info, Warn, Error]
            .into_iter()
            .find(|level| level.as_str() == name)
    }
}

/// What the host offers a plugin. Mirrors pi's `pi.*` and `ctx.*` APIs.
///
/// JSON arguments and results follow the documents in [`protocol`].
#[sabi_trait]
pub trait Host: Clone + Send + Sync + 'static {
    /// The current session context as a [`protocol::SessionContext`] JSON document.
    fn context(&self) -> RString;

    /// Set (`RSome`) or clear (`RNone`) a status-line entry under `key` (pi's `ctx.ui.setStatus`).
    fn set_status(&self, key: RStr<'_>, text: ROption<RStr<'_>>);

    /// Show a notification; `level` is `info`, `warning`, `error` or `success` (pi's `ctx.ui.notify`).
    fn notify(&self, text: RStr<'_>, level: RStr<'_>);

    /// Persist a custom entry in the current session (pi's `pi.appendEntry(customType, data)`).
    /// `data_json` is any JSON value.
    fn append_entry(&self, custom_type: RStr<'_>, data_json: RStr<'_>);

    /// Set the display name of the current session (pi's `pi.setSessionName`).
    fn set_session_name(&self, name: RStr<'_>);

    /// Look up an API key for a provider (e.g. `openai`); `RNone` when the host has none.
    fn api_key(&self, provider: RStr<'_>) -> ROption<RString>;

    /// Whether [`Host::complete`] is served by this host (e.g. through pi's model registry).
    fn can_complete(&self) -> bool;

    /// Run a model completion through the host. `request_json` is a
    /// [`protocol::CompletionRequest`]; the result a [`protocol::CompletionResponse`].
    /// Blocks the calling thread: call it from a background thread only.
    fn complete(&self, request_json: RStr<'_>) -> RResult<RString, RString>;

    /// Forward one log record from the plugin to the host's log.
    fn log(&self, level: LogLevel, target: RStr<'_>, message: RStr<'_>);

    /// Block until the agent is idle or `timeout_ms` elapsed; true when idle.
    /// Only meaningful inside commands (pi's `ctx.waitForIdle`).
    #[sabi(last_prefix_field)]
    fn wait_for_idle(&self, timeout_ms: u64) -> bool;
}

/// The host object as it crosses the boundary.
pub type HostBox = Host_TO<RBox<()>>;

/// What a plugin offers a host. Every payload is a versioned JSON document
/// from [`protocol`]; errors are one-line messages.
#[sabi_trait]
pub trait Plugin: Send + Sync {
    /// The plugin's registrations as a [`protocol::Registrations`] document.
    fn registrations(&self) -> RString;

    /// Deliver an event ([`protocol::EventCall`]). Returns the event result
    /// document for events that have one (`input`, `before_agent_start`), or `null`.
    /// Must return promptly: long work belongs in the background.
    fn on_event(&self, call_json: RStr<'_>) -> RResult<RString, RString>;

    /// Execute a registered tool ([`protocol::ToolCall`] → [`protocol::ToolResult`]).
    fn call_tool(&self, call_json: RStr<'_>) -> RResult<RString, RString>;

    /// Run a registered command ([`protocol::CommandCall`] → [`protocol::CommandResult`]).
    fn run_command(&self, call_json: RStr<'_>) -> RResult<RString, RString>;

    /// Extension point for plugin-specific requests that are neither events,
    /// tools nor commands (e.g. `@@` completion candidates). `method` names the
    /// request; unknown methods return an error.
    fn request(&self, method: RStr<'_>, payload_json: RStr<'_>) -> RResult<RString, RString>;

    /// Wait up to `timeout_ms` for background work to finish; returns a
    /// [`protocol::FlushReport`] document.
    fn flush(&self, timeout_ms: u64) -> RString;

    /// Stop accepting work, finish or abandon background work within
    /// `timeout_ms`, and release resources. Libraries are never unloaded, so
    /// this is the plugin's only chance to flush state. Idempotent.
    #[sabi(last_prefix_field)]
    fn shutdown(&self, timeout_ms: u64) -> RString;
}

/// The plugin object as it crosses the boundary.
pub type PluginBox = Plugin_TO<'static, RBox<()>>;

/// The root module every plugin library exports (with `#[export_root_module]`).
#[repr(C)]
#[derive(StableAbi)]
#[sabi(kind(Prefix(prefix_ref = PluginModRef)))]
#[sabi(missing_field(panic))]
pub struct PluginMod {
    /// The plugin's name and version, as `name@version`.
    pub plugin_id: extern "C" fn() -> RString,

    /// Create a plugin instance. `config_json` is the plugin's config file
    /// content (a JSON object), `null` when it has none, or a JSON string
    /// naming the file and why the host could not use it (the plugin then
    /// runs with the features that need config off); `plugin_dir` is the
    /// directory of its `plugin.toml`.
    #[sabi(last_prefix_field)]
    pub instantiate: extern "C" fn(
        host: HostBox,
        plugin_dir: RStr<'_>,
        config_json: RStr<'_>,
    ) -> RResult<PluginBox, RString>,
}

impl RootModule for PluginModRef {
    declare_root_module_statics! {PluginModRef}
    const BASE_NAME: &'static str = "pi_ext_plugin";
    const NAME: &'static str = "pi-ext-plugin";
    const VERSION_STRINGS: VersionStrings = package_version_strings!();
}

/// Run `f`, turning a panic into an error message instead of letting it
/// unwind across the FFI boundary (which would abort the host process).
pub fn catch_panic<T>(what: &str, f: impl FnOnce() -> Result<T, String>) -> RResult<T, RString> {
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)) {
        Ok(Ok(value)) => RResult::ROk(value),
        Ok(Err(message)) => RResult::RErr(RString::from(message)),
        Err(payload) => RResult::RErr(RString::from(format!(
            "{what} panicked: {}",
            panic_message(&*payload)
        ))),
    }
}

/// The text of a panic payload, for one-line error messages.
pub fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "non-string panic payload".to_string()
    }
}
