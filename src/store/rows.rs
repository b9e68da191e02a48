//! What a session's entries become in the store: each entry's text in the
//! column it ranks in (redacted), the ranking rows of `docs` cut from them
//! (a session's entries in chunks of about [`CHUNK_BYTES`]), and the text an
//! entry is embedded from. The update writes these from the lines it reads;
//! snippets and the embedding job make them again from the same lines, read
//! back from the session file (the store keeps no copy of the words).

use std::borrow::Cow;

use super::schema::{Column, COLUMNS};
use crate::resolve::syntax::without_references;
use crate::session::{text_joined, AgentMessage, Block, Entry, EntryKind};

/// Text per ranking row of `docs` (a session's entries are split in chunks of about this size).
pub(super) const CHUNK_BYTES: i64 = 16 * 1024;

/// An entry's role, and its text (redacted) with the column it ranks in.
pub(super) struct EntryText {
    pub role: &'static str,
    pub text: Option<String>,
    /// Where the text goes on the active branch (an abandoned entry's goes to
    /// [`Column::Abandoned`]).
    pub column: Column,
}

impl EntryText {
    /// The column of this entry's text, given whether it is on the active branch.
    pub fn column_on(&self, active: bool) -> Column {
        if active {
            self.column
        } else {
            Column::Abandoned
        }
    }

    pub fn bytes(&self) -> i64 {
        self.text.as_ref().map_or(0, |t| t.len() as i64)
    }
}

/// An entry's role, and the column its text goes to (on the active branch)
/// with the text, redacted: by the reader, which cleans every text an entry
/// keeps, and by [`message_items`](crate::features::query::windows::message_items),
/// which cleans again what it puts together (a tool's name with its output,
/// a call's argument names with their values, a message's blocks), but not
/// a text it shows as the reader gave it (one whole text block). The items
/// of one message are joined here with no further pass: they are one cleaned
/// text cut in parts (a long user or assistant text) or a single item. (A
/// search's snippets make these texts again for the sessions they show: each
/// pass over them was a part of a slow search's time. They read the entries
/// with their texts as written, and use one only when its hash and length
/// are those the update stored; see `snippets::read_texts`.)
pub(super) fn entry_text(entry: &Entry) -> EntryText {
    let (role, text) = match &entry.kind {
        // Custom messages are extensions' injections (e.g. `@@` context from other sessions).
        EntryKind::Message(m @ AgentMessage::Custom { .. }) => (m.role(), String::new()),
        EntryKind::Message(m) => {
            let items = crate::features::query::windows::message_items(&entry.id, m);
            let text = items
                .iter()
                .map(|i| i.text.as_str())
                .collect::<Vec<_>>()
                .join("\n");
            // `@@x` names another session: it must not make this one match
            // `x`. What its removal brings together is cleaned again.
            let text = match m {
                AgentMessage::User { .. } => match without_references(&text) {
                    Cow::Borrowed(_) => text,
                    Cow::Owned(joined) => crate::redact::redact(&joined).into_owned(),
                },
                _ => text,
            };
            (m.role(), text)
        }
        EntryKind::Compaction { summary, .. } => ("compaction", summary.clone()),
        EntryKind::BranchSummary { summary, .. } => ("branchSummary", summary.clone()),
        _ => ("other", String::new()),
    };
    let column = match role {
        "user" => Column::User,
        "toolResult" | "bashExecution" => Column::Tool,
        _ => Column::Assistant,
    };
    let text = (!text.trim().is_empty()).then_some(text);
    EntryText { role, text, column }
}

/// The text an entry is embedded from, before redaction (the embedding job
/// redacts it; the update only hashes it): what the user typed, what the
/// assistant wrote (not its thinking or tool calls), and compaction and
/// branch summaries. Tool output and extensions' messages are not embedded.
pub(super) fn passage_source(entry: &Entry) -> Option<String> {
    let text = match &entry.kind {
        EntryKind::Message(AgentMessage::User { content, .. }) => {
            without_references(&text_joined(content, "\n")).into_owned()
        }
        EntryKind::Message(AgentMessage::Assistant { content, .. }) => {
            let texts: Vec<&str> = content
                .iter()
                .filter_map(|b| match b {
                    Block::Text(t) => Some(t.head.trim()),
                    _ => None,
                })
                .filter(|t| !t.is_empty())
                .collect();
            texts.join("\n")
        }
        EntryKind::Compaction { summary, .. } | EntryKind::BranchSummary { summary, .. } => {
            summary.clone()
        }
        _ => return None,
    };
    (!text.trim().is_empty()).then_some(text)
}

/// A stable 64-bit hash of a text (FNV-1a): rows of the same text share
/// their vectors (forked sessions, a file read again after a branch change).
pub(super) fn text_hash(text: &str) -> i64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in text.bytes() {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
    }
    hash as i64
}

/// One row of `docs` (or of the snippets' scratch table): its rowid and the
/// text of each of the nine columns.
#[derive(Debug, Default, Clone, PartialEq)]
pub(super) struct TextRow {
    pub rowid: i64,
    pub columns: [String; COLUMNS.len()],
}

impl TextRow {
    pub fn new(rowid: i64) -> TextRow {
        TextRow {
            rowid,
            ..TextRow::default()
        }
    }

    /// Add `text` to `column`, on a line of its own (as SQLite's
    /// `group_concat(column, char(10))` joined the entries of a chunk).
    pub fn push(&mut self, column: Column, text: &str) {
        let cell = &mut self.columns[column as usize];
        if !cell.is_empty() {
            cell.push('\n');
        }
        cell.push_str(text);
    }

    /// The row's bound parameters: rowid, then the columns (empty ones NULL).
    pub fn params(&self) -> Vec<rusqlite::types::Value> {
        use rusqlite::types::Value;
        std::iter::once(Value::Integer(self.rowid))
            .chain(self.columns.iter().map(|c| {
                if c.is_empty() {
                    Value::Null
                } else {
                    Value::Text(c.clone())
                }
            }))
            .collect()
    }

    /// The row as a JSON array: rowid, then the columns (empty ones null).
    pub fn to_json(&self) -> serde_json::Value {
        let columns = self.columns.iter().map(|c| {
            if c.is_empty() {
                serde_json::Value::Null
            } else {
                serde_json::Value::from(c.as_str())
            }
        });
        std::iter::once(serde_json::Value::from(self.rowid))
            .chain(columns)
            .collect()
    }
}

/// Cuts the text of a session's entries (rowid, column, text; in file order,
/// starting at a chunk boundary) into ranking rows: a row takes entries while
/// it holds less than [`CHUNK_BYTES`], and is keyed by its first entry's
/// rowid. Starting at any earlier row's first entry gives the same rows from
/// there on, so an append rewrites only the last row and the rows are the
/// ones a full build writes.
pub(super) fn chunks<'t>(texts: impl IntoIterator<Item = (i64, Column, &'t str)>) -> Vec<TextRow> {
    let mut rows: Vec<TextRow> = Vec::new();
    let mut bytes = 0;
    for (rowid, column, text) in texts {
        if rows.is_empty() || bytes >= CHUNK_BYTES {
            rows.push(TextRow::new(rowid));
            bytes = 0;
        }
        if let Some(row) = rows.last_mut() {
            row.push(column, text);
        }
        bytes += text.len() as i64;
    }
    rows
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunks_restart_at_any_boundary_with_the_same_rows() {
        let texts: Vec<(i64, Column, String)> = (0..40)
            .map(|i| {
                let column = if i % 3 == 0 {
                    Column::User
                } else {
                    Column::Tool
                };
                (100 + i, column, "x".repeat(1000 + 97 * i as usize))
            })
            .collect();
        let all = chunks(texts.iter().map(|(r, c, t)| (*r, *c, t.as_str())));
        assert!(all.len() > 3, "{}", all.len());
        for (k, row) in all.iter().enumerate() {
            let from = texts.iter().position(|t| t.0 == row.rowid).unwrap();
            let again = chunks(texts[from..].iter().map(|(r, c, t)| (*r, *c, t.as_str())));
            assert_eq!(again, all[k..].to_vec());
        }
        let first = &all[0];
        assert!(first.columns[Column::User as usize].contains('\n') || all.len() == 40);
    }

    /// A secret written across two blocks of a message: neither block
    /// holds it alone (the reader cleans each block and keeps both halves),
    /// so the text made of them is cleaned again as a whole. The stored text
    /// of a user message and of a tool result loses it. (A message of one
    /// block is the reader's text as it is: `windows::message_items`.)
    #[test]
    fn a_secret_split_over_two_blocks_is_not_stored() {
        let real = crate::shared_dir::shared_dir().join(
            "fixtures/pi-sessions/real/2026-02-20T12-31-00-428Z_0a39b144-e4da-4be0-b944-06a011ad6ab4.jsonl",
        );
        let real = std::fs::read_to_string(real).unwrap();
        let mut lines = real.lines();
        let header = lines.next().unwrap();
        let mut user: serde_json::Value = lines
            .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
            .find(|v| v["message"]["role"] == "user")
            .unwrap();
        let asked = user["message"]["content"][0]["text"]
            .as_str()
            .unwrap()
            .to_string();
        let opening: String = asked.chars().take(20).collect();
        let (name, value) = ("export DB_PASSWORD", "=Zx81kQm2Lp and restart it");
        user["message"]["content"] = serde_json::json!([
            {"type": "text", "text": format!("{asked}\n\nOn the box: {name}")},
            {"type": "text", "text": value},
        ]);
        let mut result = user.clone();
        result["id"] = "r1".into();
        result["message"] = serde_json::json!({"role": "toolResult", "toolCallId": "c1",
            "toolName": "bash", "isError": false, "content": [
            {"type": "text", "text": format!("{asked}\n{name}")},
            {"type": "text", "text": value}]});
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("2026_split.jsonl");
        std::fs::write(&path, format!("{header}\n{user}\n{result}\n")).unwrap();
        let file = crate::session::open_file(&path).unwrap();
        let from = header.len() as u64 + 1;
        let read = crate::session::read_lines(&path, file, from, u64::MAX).unwrap();
        assert_eq!(read.entries.len(), 2);
        for entry in &read.entries {
            let content: &[Block] = match &entry.kind {
                EntryKind::Message(AgentMessage::User { content, .. }) => content,
                EntryKind::Message(AgentMessage::ToolResult { content, .. }) => content,
                other => panic!("{other:?}"),
            };
            assert!(
                text_joined(content, "").contains("Zx81kQm2Lp"),
                "the reader keeps each half: {content:?}"
            );
            let text = entry_text(entry).text.unwrap();
            assert!(!text.contains("Zx81kQm2Lp"), "{text}");
            assert!(
                text.contains("[REDACTED]") && text.contains(&opening),
                "{text}"
            );
        }
    }

    #[test]
    fn text_hash_is_stable() {
        assert_eq!(text_hash(""), 0xcbf2_9ce4_8422_2325_u64 as i64);
        assert_eq!(text_hash("a"), 0xaf63_dc4c_8601_ec8c_u64 as i64);
        assert_ne!(text_hash("ab"), text_hash("ba"));
    }
}
