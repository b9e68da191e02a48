//! The active branch as scoreable units: conversation windows (one user turn
//! with the assistant's replies, tool calls and shortened tool results, split
//! when long) and the summaries (compaction, branch) found on the branch.
//!
//! Every rendered line carries the id of the entry it came from, so whatever
//! reaches the model can be cited. Session text is cleaned
//! ([`crate::redact::session_text`]) before it is shortened or split.
//!
//! The reader cleans every text an entry keeps, whole, before it cuts it
//! (`session::convert`). What this module puts together from those texts is
//! cleaned again as a whole: two text blocks, a label or a tool's name with
//! an output, a call's argument names with their values may hold a secret
//! that neither part holds alone. A text that is one of the reader's,
//! untouched, is not cleaned again: the same pass over the same text finds
//! nothing new, and it was a tenth of a slow search's time (the snippets
//! make these texts again for each session they show).

use crate::text::{clip, Keep};
use serde_json::Value;

use super::tokenize::tokenize;
use crate::redact::session_text;
use crate::session::{
    text_joined, utf16_len, AgentMessage, BashExecution, Block, BoundedText, Entry, EntryKind,
};

/// Largest window, in chars; a longer turn is split into several windows.
pub const MAX_WINDOW_CHARS: usize = 3_200;
/// Longest piece of one message inside a window; longer text is split into parts.
const MAX_PART_CHARS: usize = 2_400;
/// Tool results are evidence but mostly bulk: keep their head and a short tail.
const TOOL_RESULT_HEAD_CHARS: usize = 700;
const TOOL_RESULT_TAIL_CHARS: usize = 200;
const TOOL_ARGS_CHARS: usize = 300;
const THINKING_CHARS: usize = 600;

/// One rendered piece of one entry.
#[derive(Debug, Clone, PartialEq)]
pub struct Item {
    pub entry_id: String,
    /// pi's role (`user`, `assistant`, `toolResult`, `bashExecution`, `custom`,
    /// `compaction`, `branchSummary`).
    pub role: String,
    /// The text as shown to the model (shortened where noted).
    pub text: String,
}

impl Item {
    /// `[entryId] role: text`.
    pub fn render(&self) -> String {
        format!("[{}] {}: {}", self.entry_id, self.role, self.text)
    }

    /// Length of [`Item::render`] in UTF-16 units (what pi's estimate counts).
    pub fn render_len(&self) -> usize {
        utf16_len(&self.entry_id) + utf16_len(&self.role) + utf16_len(&self.text) + 4
    }
}

/// A run of items from one turn, scored as one document.
#[derive(Debug, Clone)]
pub struct Window {
    /// Position among the branch's windows (chronological).
    pub index: usize,
    /// The turn (user message and what followed) this window belongs to.
    pub turn: usize,
    pub items: Vec<Item>,
    pub tokens: Vec<String>,
}

impl Window {
    pub fn render_len(&self) -> usize {
        self.items.iter().map(|i| i.render_len() + 1).sum()
    }
}

/// The branch, ready for retrieval.
#[derive(Debug, Clone, Default)]
pub struct BranchDoc {
    pub windows: Vec<Window>,
    /// Compaction and branch summaries on the branch, oldest first.
    pub summaries: Vec<Item>,
}

impl BranchDoc {
    pub fn is_empty(&self) -> bool {
        self.windows.is_empty() && self.summaries.is_empty()
    }
}

/// Split a branch (root → leaf) into windows and summaries.
pub fn build(branch: &[&Entry]) -> BranchDoc {
    let mut doc = BranchDoc::default();
    let mut turns: Vec<Vec<Item>> = Vec::new();
    for entry in branch {
        let id = entry.id.as_str();
        match &entry.kind {
            EntryKind::Message(message) => match message {
                AgentMessage::BranchSummary { summary, .. } => {
                    doc.summaries.push(item(id, "branchSummary", summary))
                }
                AgentMessage::CompactionSummary { summary, .. } => {
                    doc.summaries.push(item(id, "compaction", summary))
                }
                AgentMessage::User { .. } => {
                    turns.push(message_items(id, message));
                }
                _ => {
                    let items = message_items(id, message);
                    match turns.last_mut() {
                        Some(turn) => turn.extend(items),
                        None => turns.push(items),
                    }
                }
            },
            EntryKind::CustomMessage {
                custom_type,
                content,
                ..
            } => {
                let text = blocks_text(content);
                if !text.trim().is_empty() {
                    let items = split_parts(id, &format!("custom:{custom_type}"), &text);
                    match turns.last_mut() {
                        Some(turn) => turn.extend(items),
                        None => turns.push(items),
                    }
                }
            }
            EntryKind::Compaction { summary, .. } => {
                doc.summaries.push(item(id, "compaction", summary))
            }
            EntryKind::BranchSummary { summary, .. } => {
                doc.summaries.push(item(id, "branchSummary", summary))
            }
            _ => {}
        }
    }
    for (turn_index, turn) in turns.into_iter().enumerate() {
        let mut current: Vec<Item> = Vec::new();
        let mut len = 0;
        for it in turn {
            let l = it.render_len() + 1;
            if !current.is_empty() && len + l > MAX_WINDOW_CHARS {
                push_window(&mut doc.windows, turn_index, std::mem::take(&mut current));
                len = 0;
            }
            len += l;
            current.push(it);
        }
        if !current.is_empty() {
            push_window(&mut doc.windows, turn_index, current);
        }
    }
    doc
}

fn push_window(windows: &mut Vec<Window>, turn: usize, items: Vec<Item>) {
    let mut tokens = Vec::new();
    for it in &items {
        tokens.extend(tokenize(&it.text));
    }
    windows.push(Window {
        index: windows.len(),
        turn,
        items,
        tokens,
    });
}

fn item(id: &str, role: &str, text: &str) -> Item {
    Item {
        entry_id: id.to_string(),
        role: role.to_string(),
        text: session_text(text).trim().to_string(),
    }
}

/// The quotable items of one message: one per part of a long user or
/// assistant text, one for a tool result or a `!` command.
pub(crate) fn message_items(id: &str, message: &AgentMessage) -> Vec<Item> {
    match message {
        AgentMessage::User { content, .. } => split_parts(id, "user", &blocks_text(content)),
        AgentMessage::Assistant {
            content,
            error_message,
            ..
        } => split_parts(
            id,
            "assistant",
            &assistant_text(content, error_message.as_deref().map(|e| e.as_str())),
        ),
        AgentMessage::ToolResult {
            tool_name,
            content,
            is_error,
            ..
        } => {
            let flag = if *is_error { ", error" } else { "" };
            let text = tool_result_text(content);
            vec![item(
                id,
                "toolResult",
                &format!("({tool_name}{flag}) {}", text.trim()),
            )]
        }
        AgentMessage::BashExecution(bash) => bash_text(bash)
            .map(|text| item(id, "bashExecution", &text))
            .into_iter()
            .collect(),
        AgentMessage::Custom {
            custom_type,
            content,
            ..
        } => split_parts(id, &format!("custom:{custom_type}"), &blocks_text(content)),
        AgentMessage::BranchSummary { summary, .. } => vec![item(id, "branchSummary", summary)],
        AgentMessage::CompactionSummary { summary, .. } => vec![item(id, "compaction", summary)],
    }
}

/// The texts of `content` joined on lines, cleaned: one whole text block is
/// the reader's text as it is; several are cleaned again together (a secret
/// may run from one block into the next), and so is a head with the note of
/// what was not read after it.
fn blocks_text(content: &[Block]) -> String {
    let mut texts = content.iter().filter(|b| matches!(b, Block::Text(_)));
    match (texts.next(), texts.next()) {
        (Some(Block::Text(t)), None) if t.is_complete() => t.head.to_string(),
        (None, _) => String::new(),
        _ => session_text(&text_joined(content, "\n")).into_owned(),
    }
}

/// An assistant message as text, cleaned: its texts, its thinking and tool
/// calls clipped and labelled, one per line, then its error if it failed.
/// Only a message of one text block and nothing else is the reader's text
/// as it is; any other is cleaned again as a whole.
fn assistant_text(content: &[Block], error_message: Option<&str>) -> String {
    let error = error_message.filter(|e| !e.is_empty());
    if let ([Block::Text(t)], None) = (content, error) {
        if t.is_complete() {
            return t.head.trim().to_string();
        }
    }
    let pieces = content.iter().map(|block| match block {
        Block::Text(t) => t.shown().trim().to_string(),
        // The reader cleaned the whole thinking before this clip.
        Block::Thinking(t) => {
            let thinking = clip(t.trim(), THINKING_CHARS, Keep::Head);
            format!("(thinking) {thinking}")
        }
        Block::ToolCall {
            name, arguments, ..
        } => {
            let arguments = compact_args(arguments);
            let arguments = session_text(&arguments);
            format!(
                "→ {name}({})",
                clip(&arguments, TOOL_ARGS_CHARS, Keep::Head)
            )
        }
        Block::Image { mime_type, .. } => format!("[image {mime_type}]"),
    });
    let mut text = pieces
        .filter(|piece| !piece.is_empty())
        .collect::<Vec<_>>()
        .join("\n");
    if let Some(error) = error {
        // Cleaned whole by the reader, before this clip.
        let error = clip(error, 300, Keep::Head);
        text.push_str(&format!("\n(error: {error})"));
    }
    session_text(&text).into_owned()
}

/// A tool result's texts (long ones shortened) and images, back to back.
fn tool_result_text(content: &[Block]) -> String {
    let mut text = String::new();
    for block in content {
        match block {
            Block::Text(t) => text.push_str(&shorten_bounded(t)),
            Block::Image { mime_type, .. } => text.push_str(&format!("[image {mime_type}]")),
            _ => {}
        }
    }
    text
}

/// A `!` command with its exit code and (shortened) output; `None` for a
/// `!!` command, kept out of the model's context on purpose.
fn bash_text(bash: &BashExecution) -> Option<String> {
    let BashExecution {
        command,
        output,
        exit_code,
        exclude_from_context,
        ..
    } = bash;
    if *exclude_from_context {
        return None;
    }
    let exit = exit_code
        .map(|c| format!(" (exit {c})"))
        .unwrap_or_default();
    Some(format!("$ {command}{exit}\n{}", shorten_bounded(output)))
}

/// Long messages become several parts with the same entry id, so a fact deep
/// inside a long answer is still scored and shown with its neighbourhood.
/// `text` is cleaned already ([`blocks_text`], [`assistant_text`]).
fn split_parts(id: &str, role: &str, text: &str) -> Vec<Item> {
    let text = text.trim();
    if text.is_empty() {
        return Vec::new();
    }
    let mut parts = Vec::new();
    let mut rest = text;
    while !rest.is_empty() {
        if rest.len() <= MAX_PART_CHARS {
            parts.push(rest);
            break;
        }
        let cut = split_point(rest, MAX_PART_CHARS);
        parts.push(&rest[..cut]);
        rest = rest[cut..].trim_start();
    }
    let n = parts.len();
    parts
        .into_iter()
        .enumerate()
        .map(|(k, p)| {
            let role = if n > 1 {
                format!("{role} (part {}/{n})", k + 1)
            } else {
                role.to_string()
            };
            Item {
                entry_id: id.to_string(),
                role,
                text: p.trim().to_string(),
            } // cleaned above
        })
        .collect()
}

/// A byte index ≤ `max` at a char boundary, preferring a line break, then a space.
fn split_point(text: &str, max: usize) -> usize {
    let end = crate::text::floor_char_boundary(text, max);
    let window = &text[..end];
    let floor = end / 2;
    if let Some(pos) = window.rfind('\n').filter(|&p| p > floor) {
        return pos + 1;
    }
    if let Some(pos) = window.rfind(' ').filter(|&p| p > floor) {
        return pos + 1;
    }
    if end == 0 {
        text.chars()
            .next()
            .map(char::len_utf8)
            .unwrap_or(text.len())
    } else {
        end
    }
}

fn compact_args(arguments: &Value) -> String {
    match arguments {
        Value::Object(map) => map
            .iter()
            .map(|(k, v)| match v {
                Value::String(s) => format!("{k}: {s}"),
                other => format!("{k}: {other}"),
            })
            .collect::<Vec<_>>()
            .join(", "),
        other => other.to_string(),
    }
}

/// Head and tail of a tool output (cleaned whole by the reader before it
/// kept its head), with the size of what was left out.
fn shorten_bounded(text: &BoundedText) -> String {
    let head = text.head.trim_end();
    let total_chars = head.chars().count();
    let missing_bytes = text.full_bytes.saturating_sub(text.head.len());
    if total_chars <= TOOL_RESULT_HEAD_CHARS + TOOL_RESULT_TAIL_CHARS && missing_bytes == 0 {
        return head.to_string();
    }
    let start: String = head.chars().take(TOOL_RESULT_HEAD_CHARS).collect();
    let tail: String = if missing_bytes == 0 {
        let skip = total_chars
            .saturating_sub(TOOL_RESULT_TAIL_CHARS)
            .max(TOOL_RESULT_HEAD_CHARS);
        head.chars().skip(skip).collect()
    } else {
        String::new()
    };
    let omitted = text.full_bytes.saturating_sub(start.len() + tail.len());
    format!("{start}\n… [{omitted} bytes omitted] …\n{tail}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn split_parts_respects_limits_and_boundaries() {
        let text = "日本語 ".repeat(2000);
        let parts = split_parts("e1", "user", &text);
        assert!(parts.len() > 1);
        for p in &parts {
            assert!(p.text.len() <= MAX_PART_CHARS, "{}", p.text.len());
            assert_eq!(p.entry_id, "e1");
        }
        let joined: usize = parts
            .iter()
            .map(|p| p.text.split_whitespace().count())
            .sum();
        assert_eq!(joined, 2000);
    }

    #[test]
    fn tool_results_keep_head_tail_and_size() {
        let body = format!("HEAD {} TAIL", "x".repeat(10_000));
        let short = shorten_bounded(&BoundedText::whole(body));
        assert!(short.starts_with("HEAD"));
        assert!(short.ends_with("TAIL"));
        assert!(short.contains("bytes omitted"));
        assert!(short.len() < 1200);
    }
}
