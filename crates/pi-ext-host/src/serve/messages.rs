//! The serve protocol's own messages from the host to the bridge (SERVE.md), typed: the plugin's
//! effects as notifications, its blocking calls as requests, and the replies the host reads.
//!
//! Their TypeScript twins are generated into `bridge/serve-protocol.ts` (this crate's tests check
//! the file; `npm run protocol` writes it), beside `bridge/protocol.ts` for the pi-ext-abi
//! documents they carry.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// A fire-and-forget line `{"method", "params"}`, applied by the bridge through pi's API.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(tag = "method", content = "params", rename_all = "camelCase")]
#[cfg_attr(test, derive(ts_rs::TS))]
pub enum Notification {
    /// pi's `ctx.ui.setStatus(key, text)`; no text clears the key.
    SetStatus { key: String, text: Option<String> },
    /// pi's `ctx.ui.notify(text, level)`; `level` is `info`, `warning` or `error`.
    Notify { text: String, level: String },
    /// pi's `pi.appendEntry(customType, data)`.
    #[serde(rename_all = "camelCase")]
    AppendEntry { custom_type: String, data: Value },
    /// pi's `pi.setSessionName(name)`.
    SetSessionName { name: String },
    /// One of the plugin's log records (`trace` … `error`), for the bridge's log.
    Log {
        level: String,
        target: String,
        message: String,
    },
}

/// A blocking call of the plugin, `{"id", "method", "params"}`; the bridge answers it by `id`.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(tag = "method", content = "params", rename_all = "camelCase")]
#[cfg_attr(test, derive(ts_rs::TS))]
pub enum HostRequest {
    /// pi's current context: the reply is a `SessionContext`.
    Context {},
    /// The API key pi has for `provider`: the reply is an [`ApiKeyReply`].
    ApiKey { provider: String },
    /// A model completion, as the plugin wrote it (a `CompletionRequest`, passed on unchanged):
    /// the reply is a `CompletionResponse`.
    Complete(#[cfg_attr(test, ts(type = "CompletionRequest"))] Value),
    /// Wait until pi is idle, at most `timeoutMs`: the reply is an [`IdleReply`].
    #[serde(rename_all = "camelCase")]
    WaitForIdle {
        #[cfg_attr(test, ts(type = "number"))]
        timeout_ms: u64,
    },
}

impl HostRequest {
    /// The method name, for error messages.
    pub fn method(&self) -> &'static str {
        match self {
            HostRequest::Context {} => "context",
            HostRequest::ApiKey { .. } => "apiKey",
            HostRequest::Complete(_) => "complete",
            HostRequest::WaitForIdle { .. } => "waitForIdle",
        }
    }
}

/// The reply to [`HostRequest::ApiKey`]: no key when pi has none.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct ApiKeyReply {
    #[serde(default)]
    pub key: Option<String>,
}

/// The reply to [`HostRequest::WaitForIdle`]: whether pi became idle in time.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct IdleReply {
    #[serde(default)]
    pub idle: bool,
}

#[cfg(test)]
mod typescript {
    use std::path::PathBuf;

    use ts_rs::TS;

    use super::*;

    /// `export type Name = …;` with the Rust doc comment as JSDoc.
    fn declaration<T: TS>() -> String {
        let docs = T::docs().unwrap_or_default();
        format!("{docs}export {}\n", T::decl())
    }

    fn generated() -> String {
        let header = "// Generated from crates/pi-ext-host/src/serve/messages.rs by `npm run protocol`: do not edit.\n\
                      \n\
                      import type { CompletionRequest, JsonValue } from \"./protocol.js\";\n";
        let types = [
            declaration::<Notification>(),
            declaration::<HostRequest>(),
            declaration::<ApiKeyReply>(),
            declaration::<IdleReply>(),
        ];
        format!("{header}\n{}", types.join("\n"))
    }

    #[test]
    fn typescript_serve_messages_match_the_rust_ones() {
        let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../bridge/serve-protocol.ts");
        let fresh = generated();
        if std::env::var_os("UPDATE_PROTOCOL_TS").is_some() {
            std::fs::write(&path, &fresh).expect("write bridge/serve-protocol.ts");
            return;
        }
        let current = std::fs::read_to_string(&path).unwrap_or_default();
        assert!(
            current == fresh,
            "{} is not what crates/pi-ext-host/src/serve/messages.rs generates: run `npm run protocol`",
            path.display()
        );
    }
}
