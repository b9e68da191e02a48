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

// --- Minimal stand-in for the answer API that lands on wt/query; the
// `@@name: question?` form of session references calls it. Replace wholesale
// with the real implementation when merging. ---

/// A cited entry of the queried session.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Citation {
    pub entry_id: String,
    pub role: String,
    pub excerpt: String,
}

#[derive(Debug, Clone, PartialEq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct QueryAnswer {
    pub answer_markdown: String,
    pub confidence: String,
    pub citations: Vec<Citation>,
}

#[derive(Debug, thiserror::Error)]
pub enum QueryError {
    #[error("query_session answers are not available yet")]
    Unavailable,
}

/// Answer `question` about `entry`'s session (stub until wt/query lands).
pub fn answer(
    _app: &App,
    _ctx: &pi_ext_abi::protocol::SessionContext,
    _entry: &crate::catalog::CatalogEntry,
    _question: &str,
) -> Result<QueryAnswer, QueryError> {
    Err(QueryError::Unavailable)
}
