//! The `query_session` tool: a budgeted, cited answer about another session.

use std::sync::Arc;

use pi_ext_abi::protocol::{ToolCall, ToolResult, ToolSpec};
use serde_json::json;

use crate::app::App;

pub fn tool_spec() -> ToolSpec {
    ToolSpec {
        name: "query_session".into(),
        label: "Query session".into(),
        description: "Ask a question about another pi session and get a cited answer.".into(),
        parameters: json!({
            "type": "object",
            "properties": {
                "session": {"type": "string", "description": "Session id, id prefix (6+ chars) or name"},
                "question": {"type": "string", "description": "The question to answer from that session"}
            },
            "required": ["session", "question"],
            "additionalProperties": false
        }),
        prompt_snippet: Some("query_session: ask a question about another pi session (by id, prefix or name)".into()),
        prompt_guidelines: vec![
            "Use query_session to look up facts from an earlier session instead of guessing.".into()
        ],
    }
}

pub fn call_tool(_app: &Arc<App>, _call: &ToolCall) -> ToolResult {
    ToolResult::text("query_session is not implemented yet", json!({"code": "QUERY_MODEL_UNAVAILABLE"}), true)
}
