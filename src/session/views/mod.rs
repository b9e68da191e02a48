//! Text views of a parsed branch: pi's `convertToLlm` + `serializeConversation`,
//! `truncateTail`, the indexing view and the files touched.

mod jsjson;
mod serialize;
mod truncate;

use std::collections::BTreeSet;

use serde_json::Value;

use crate::session::{text_joined, AgentMessage, Block, Entry, EntryKind};

pub use serialize::serialize as serialize_context_refs;
pub use truncate::truncate_tail;

/// pi's `truncateTail` defaults.
pub const DEFAULT_MAX_BYTES: usize = 51_200;
pub const DEFAULT_MAX_LINES: usize = 2000;

/// Result of [`truncate_tail`].
#[derive(Debug, Clone, PartialEq)]
pub struct Truncated {
    pub text: String,
    pub truncated: bool,
    pub total_lines: usize,
    pub total_bytes: usize,
}

/// The indexing view: user and assistant text only, one block per message,
/// optionally prefixed with `[entryId]`. Every message entry of the branch is
/// used (also those a compaction hides from the LLM context): the index is
/// about what happened in the session. Blocks are separated by a blank line;
/// each reads `User: …` or `Assistant: …` (assistant text blocks joined by
/// newlines; thinking, tool calls and images are left out). Each message is
/// cleaned ([`crate::redact::session_text`]) before anyone cuts the result.
pub fn index_text(branch: &[&Entry], with_ids: bool) -> String {
    let mut blocks = Vec::new();
    for entry in branch {
        let EntryKind::Message(message) = &entry.kind else {
            continue;
        };
        let Some((who, text)) = message_text(message) else {
            continue;
        };
        let text = crate::redact::session_text(&text);
        if !text.trim().is_empty() {
            let id = if with_ids {
                format!("[{}] ", entry.id)
            } else {
                String::new()
            };
            blocks.push(format!("{id}{who}: {text}"));
        }
    }
    blocks.join("\n\n")
}

/// Who speaks (`User`, `Assistant`) and the text of a user or assistant
/// message (assistant text blocks joined by newlines; thinking, tool calls
/// and images left out); `None` for other messages.
pub fn message_text(message: &AgentMessage) -> Option<(&'static str, String)> {
    match message {
        AgentMessage::User { content, .. } => Some(("User", text_joined(content, "\n"))),
        AgentMessage::Assistant { content, .. } => {
            let texts = content.iter().filter_map(|b| match b {
                Block::Text(t) if !t.head.trim().is_empty() => Some(t.shown()),
                _ => None,
            });
            Some(("Assistant", texts.collect::<Vec<_>>().join("\n")))
        }
        _ => None,
    }
}

/// Files read and modified on a branch (read/write/edit tool calls plus
/// compaction and branch-summary `details`), as pi tracks them.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct FilesTouched {
    pub read: Vec<String>,
    pub modified: Vec<String>,
}

/// pi's file tracking (`extractFileOpsFromMessage` + the `details` of
/// pi-written compactions and branch summaries + `computeFileLists`):
/// modified = written ∪ edited, read = read − modified, each sorted as
/// JavaScript sorts strings (by UTF-16 code units).
pub fn files_touched(branch: &[&Entry]) -> FilesTouched {
    let mut read = BTreeSet::new();
    let mut modified = BTreeSet::new();
    for entry in branch {
        match &entry.kind {
            EntryKind::Message(AgentMessage::Assistant { content, .. }) => {
                for block in content {
                    let Block::ToolCall {
                        name, arguments, ..
                    } = block
                    else {
                        continue;
                    };
                    let Some(path) = arguments.get("path").and_then(Value::as_str) else {
                        continue;
                    };
                    if path.is_empty() {
                        continue;
                    }
                    match name.as_str() {
                        "read" => {
                            read.insert(path.to_string());
                        }
                        "write" | "edit" => {
                            modified.insert(path.to_string());
                        }
                        _ => {}
                    }
                }
            }
            EntryKind::Compaction {
                details: Some(d), ..
            }
            | EntryKind::BranchSummary {
                details: Some(d), ..
            } => {
                let list = |key: &str| -> Vec<String> {
                    d.get(key)
                        .and_then(Value::as_array)
                        .map(|a| {
                            a.iter()
                                .filter_map(Value::as_str)
                                .map(str::to_string)
                                .collect()
                        })
                        .unwrap_or_default()
                };
                read.extend(list("readFiles"));
                modified.extend(list("modifiedFiles"));
            }
            _ => {}
        }
    }
    let mut read: Vec<String> = read.difference(&modified).cloned().collect();
    let mut modified: Vec<String> = modified.into_iter().collect();
    let js_order = |a: &String, b: &String| a.encode_utf16().cmp(b.encode_utf16());
    read.sort_by(js_order);
    modified.sort_by(js_order);
    FilesTouched { read, modified }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::session::{BoundedText, Entry};
    use serde_json::json;

    fn assistant(id: &str, calls: &[(&str, &str)]) -> Entry {
        let content = calls
            .iter()
            .map(|(name, path)| Block::ToolCall {
                name: (*name).into(),
                arguments: Box::new(json!({ "path": path })),
            })
            .chain([Block::Text(BoundedText::whole("t"))])
            .collect();
        Entry {
            id: id.into(),
            parent_id: None,
            timestamp: 0,
            kind: EntryKind::Message(AgentMessage::Assistant {
                content,
                error_message: None,
                timestamp: 0,
            }),
        }
    }

    #[test]
    fn files_sort_by_utf16_units_as_javascript() {
        // U+FF5E sorts after U+1F600 in UTF-16 (0xFF5E > 0xD83D), before it in UTF-8.
        let e = assistant(
            "a",
            &[
                ("read", "\u{FF5E}"),
                ("read", "😀"),
                ("read", "b"),
                ("edit", "b"),
                ("grep", "x"),
            ],
        );
        let files = files_touched(&[&e]);
        assert_eq!(files.read, ["😀", "\u{FF5E}"]);
        assert_eq!(files.modified, ["b"]);
    }
}
