//! `@@session` references in prompts: parsing, resolution and injection.

use std::sync::Arc;

use pi_ext_abi::protocol::{CustomMessage, SessionContext};
use serde_json::Value;

use crate::app::App;

/// `before_agent_start`: the `session-reference` message to inject, if the prompt has references.
pub fn before_agent_start(_app: &Arc<App>, _ctx: &SessionContext, _prompt: &str) -> Option<CustomMessage> {
    None
}

/// Completion candidates for a `@@` prefix (`{"prefix": "..."}` → `{"candidates": [...]}`).
pub fn complete(_app: &Arc<App>, _payload: &Value) -> Value {
    serde_json::json!({"candidates": []})
}
