//! Text views of a parsed branch: pi's `convertToLlm` + `serializeConversation`,
//! `truncateTail`, the indexing view and the files touched.
//!
//! CONTRACT (stubs until the reader lands).

use crate::session::{ContextMessage, Entry};

/// pi's `truncateTail` defaults.
pub const DEFAULT_MAX_BYTES: usize = 51_200;
pub const DEFAULT_MAX_LINES: usize = 2000;

/// pi's `serializeConversation(convertToLlm(messages))` of a built context.
pub fn serialize_context(_messages: &[ContextMessage]) -> String {
    String::new()
}

/// Result of [`truncate_tail`].
#[derive(Debug, Clone, PartialEq)]
pub struct Truncated {
    pub text: String,
    pub truncated: bool,
    pub total_lines: usize,
    pub total_bytes: usize,
}

/// pi's `truncateTail`: keep the newest part within `max_bytes` and `max_lines`, UTF-8 safe.
pub fn truncate_tail(text: &str, _max_bytes: usize, _max_lines: usize) -> Truncated {
    Truncated { text: text.to_string(), truncated: false, total_lines: 0, total_bytes: text.len() }
}

/// The indexing view: user and assistant text only, one block per message,
/// optionally prefixed with `[entryId]`.
pub fn index_text(_branch: &[&Entry], _with_ids: bool) -> String {
    String::new()
}

/// Files read and modified on a branch (read/write/edit tool calls plus
/// compaction and branch-summary `details`), as pi tracks them.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct FilesTouched {
    pub read: Vec<String>,
    pub modified: Vec<String>,
}

pub fn files_touched(_branch: &[&Entry]) -> FilesTouched {
    FilesTouched::default()
}
