//! pi's `serializeConversation(convertToLlm(messages))`
//! (dist/core/compaction/utils.js and dist/core/messages.js).

use serde_json::Value;

use super::jsjson;
use crate::session::{text_joined, AgentMessage, BashExecution, Block, BoundedText};

/// pi's `TOOL_RESULT_MAX_CHARS`, in UTF-16 code units.
pub const TOOL_RESULT_MAX_CHARS: usize = 2000;

pub const COMPACTION_SUMMARY_PREFIX: &str =
    "The conversation history before this point was compacted into the following summary:\n\n<summary>\n";
pub const COMPACTION_SUMMARY_SUFFIX: &str = "\n</summary>";
pub const BRANCH_SUMMARY_PREFIX: &str =
    "The following is a summary of a branch that this conversation came back from:\n\n<summary>\n";
pub const BRANCH_SUMMARY_SUFFIX: &str = "</summary>";

/// pi's `bashExecutionToText`.
pub fn bash_execution_to_text(
    command: &str,
    output: &str,
    exit_code: Option<i64>,
    cancelled: bool,
    truncated: bool,
    full_output_path: Option<&str>,
) -> String {
    let mut text = format!("Ran `{command}`\n");
    if output.is_empty() {
        text.push_str("(no output)");
    } else {
        text.push_str(&format!("```\n{output}\n```"));
    }
    if cancelled {
        text.push_str("\n\n(command cancelled)");
    } else if let Some(code) = exit_code.filter(|c| *c != 0) {
        text.push_str(&format!("\n\nCommand exited with code {code}"));
    }
    if let (true, Some(path)) = (truncated, full_output_path.filter(|p| !p.is_empty())) {
        text.push_str(&format!("\n\n[Output truncated. Full output: {path}]"));
    }
    text
}

/// `${name}(${Object.entries(args).map(([k, v]) => `${k}=${JSON.stringify(v)}`).join(", ")})`
fn tool_call_text(name: &str, arguments: &Value) -> String {
    let args: Vec<String> = match arguments {
        Value::Object(map) => jsjson::js_entries(map)
            .into_iter()
            .map(|(k, v)| format!("{k}={}", jsjson::stringify(v)))
            .collect(),
        Value::Array(items) => items
            .iter()
            .enumerate()
            .map(|(i, v)| format!("{i}={}", jsjson::stringify(v)))
            .collect(),
        Value::String(s) => s
            .chars()
            .enumerate()
            .map(|(i, c)| format!("{i}={}", jsjson::stringify(&Value::String(c.to_string()))))
            .collect(),
        // Object.entries of a number or boolean is empty; pi throws on null.
        _ => Vec::new(),
    };
    format!("{name}({})", args.join(", "))
}

/// pi's `truncateForSummary` over the joined tool-result text, from the kept
/// heads and full lengths. A cut inside a surrogate pair leaves JavaScript a
/// lone surrogate, which becomes U+FFFD once written as UTF-8; so it does here.
fn tool_result_text(blocks: &[Block]) -> Option<String> {
    let texts: Vec<&BoundedText> = blocks
        .iter()
        .filter_map(|b| match b {
            Block::Text(t) => Some(t),
            _ => None,
        })
        .collect();
    let total: usize = texts.iter().map(|t| t.full_utf16_len).sum();
    if total == 0 {
        return None;
    }
    if total <= TOOL_RESULT_MAX_CHARS {
        return Some(texts.iter().map(|t| t.head.as_str()).collect());
    }
    let mut out = String::with_capacity(TOOL_RESULT_MAX_CHARS + 64);
    let mut units = 0usize;
    for t in &texts {
        let (cut, taken, split_pair) = cut_at_units(&t.head, TOOL_RESULT_MAX_CHARS - units);
        out.push_str(&t.head[..cut]);
        units += taken;
        if split_pair {
            out.push('\u{FFFD}');
        }
        if split_pair || units == TOOL_RESULT_MAX_CHARS {
            break;
        }
    }
    out.push_str(&format!(
        "\n\n[... {} more characters truncated]",
        total - TOOL_RESULT_MAX_CHARS
    ));
    Some(out)
}

/// The longest prefix of `text` within `room` UTF-16 units: (its byte length,
/// its units, whether the next character is a surrogate pair with only one
/// unit of room left). Walks UTF-8 lead bytes rather than decoding chars.
fn cut_at_units(text: &str, room: usize) -> (usize, usize, bool) {
    let bytes = text.as_bytes();
    if bytes.len() >= room && bytes[..room].is_ascii() {
        return (room, room, false);
    }
    let (mut cut, mut units) = (0, 0);
    while cut < bytes.len() && units < room {
        let (len, width) = crate::text::char_size(bytes[cut]);
        if units + width > room {
            return (cut, units, true);
        }
        cut += len;
        units += width;
    }
    (cut, units, false)
}

/// The output, written part by part into one string.
struct Out {
    text: String,
}

impl Out {
    fn push(&mut self, s: &str) {
        self.text.push_str(s);
    }

    /// Starts a new part (parts are joined with a blank line).
    fn part(&mut self, label: &str) {
        if !self.text.is_empty() {
            self.push("\n\n");
        }
        self.push(label);
    }

    fn user(&mut self, text: &str) {
        if !text.is_empty() {
            self.part("[User]: ");
            self.push(text);
        }
    }

    /// `label` + the items joined by `sep`, when there is any item.
    fn joined<'s>(&mut self, label: &str, sep: &str, items: impl Iterator<Item = &'s str>) {
        let mut items = items.peekable();
        if items.peek().is_none() {
            return;
        }
        self.part(label);
        for (i, item) in items.enumerate() {
            if i > 0 {
                self.push(sep);
            }
            self.push(item);
        }
    }
}

fn serialize_one(message: &AgentMessage, out: &mut Out) {
    match message {
        // Text blocks joined with `""`, as pi does.
        AgentMessage::User { content, .. } => out.user(&text_joined(content, "")),
        AgentMessage::Custom { content, .. } => out.user(&text_joined(content, "")),
        AgentMessage::BashExecution(bash) => {
            let BashExecution {
                command,
                output,
                exit_code,
                cancelled,
                truncated,
                full_output_path,
                ..
            } = &**bash;
            if !bash.exclude_from_context {
                let text = bash_execution_to_text(
                    command,
                    &output.shown(),
                    *exit_code,
                    *cancelled,
                    *truncated,
                    full_output_path.as_deref(),
                );
                out.user(&text);
            }
        }
        AgentMessage::BranchSummary { summary, .. } => {
            out.part("[User]: ");
            out.push(BRANCH_SUMMARY_PREFIX);
            out.push(summary);
            out.push(BRANCH_SUMMARY_SUFFIX);
        }
        AgentMessage::CompactionSummary { summary, .. } => {
            out.part("[User]: ");
            out.push(COMPACTION_SUMMARY_PREFIX);
            out.push(summary);
            out.push(COMPACTION_SUMMARY_SUFFIX);
        }
        AgentMessage::Assistant { content, .. } => {
            let thinking = content.iter().filter_map(|b| match b {
                Block::Thinking(t) => Some(t.as_str()),
                _ => None,
            });
            out.joined("[Assistant thinking]: ", "\n", thinking);
            let texts: Vec<_> = content
                .iter()
                .filter_map(|b| match b {
                    Block::Text(t) => Some(t.shown()),
                    _ => None,
                })
                .collect();
            out.joined("[Assistant]: ", "\n", texts.iter().map(|t| &**t));
            let calls: Vec<String> = content
                .iter()
                .filter_map(|b| match b {
                    Block::ToolCall {
                        name, arguments, ..
                    } => Some(tool_call_text(name, arguments)),
                    _ => None,
                })
                .collect();
            out.joined(
                "[Assistant tool calls]: ",
                "; ",
                calls.iter().map(String::as_str),
            );
        }
        AgentMessage::ToolResult { content, .. } => {
            if let Some(text) = tool_result_text(content) {
                out.part("[Tool result]: ");
                out.push(&text);
            }
        }
    }
}

/// pi's `serializeConversation(convertToLlm(messages))` of messages in order,
/// such as a built context ([`crate::session::Session::context_refs`]).
pub fn serialize<M: std::ops::Deref<Target = AgentMessage>>(
    messages: impl IntoIterator<Item = M>,
) -> String {
    let mut out = Out {
        text: String::new(),
    };
    for m in messages {
        serialize_one(&m, &mut out);
    }
    out.text
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::session::{bounded, TOOL_TEXT_HEAD_BYTES, TOOL_TEXT_HEAD_UNITS};

    /// The cut the char-by-char loop made, for random heads around the limit.
    #[test]
    fn cut_at_units_matches_a_char_walk() {
        let walk = |text: &str, room: usize| {
            let (mut out, mut units) = (String::new(), 0);
            for c in text.chars() {
                let w = c.len_utf16();
                if units + w > room {
                    return (out.len(), units, units < room);
                }
                out.push(c);
                units += w;
                if units == room {
                    break;
                }
            }
            (out.len(), units, false)
        };
        let pieces = ["a", "\u{e9}", "\u{65e5}", "\u{1F600}"];
        let mut next = crate::text::xorshift(0x0DDB_1A5E_5BAD_5EED);
        for _ in 0..5000 {
            let text: String = (0..next() % 40)
                .map(|_| pieces[(next() % 4) as usize])
                .collect();
            let room = 1 + (next() % 50) as usize;
            assert_eq!(
                cut_at_units(&text, room),
                walk(&text, room),
                "{text:?} {room}"
            );
        }
    }

    fn tool_result(text: &str) -> String {
        let b = bounded(text, TOOL_TEXT_HEAD_UNITS, TOOL_TEXT_HEAD_BYTES);
        tool_result_text(&[Block::Text(b)]).unwrap_or_default()
    }

    #[test]
    fn tool_result_spanning_blocks_uses_each_head() {
        let blocks = [
            Block::Text(bounded(
                "short ",
                TOOL_TEXT_HEAD_UNITS,
                TOOL_TEXT_HEAD_BYTES,
            )),
            Block::Image {
                mime_type: "image/png".into(),
            },
            Block::Text(bounded(
                &"z".repeat(50_000),
                TOOL_TEXT_HEAD_UNITS,
                TOOL_TEXT_HEAD_BYTES,
            )),
        ];
        let out = tool_result_text(&blocks).unwrap_or_default();
        assert_eq!(
            out,
            format!(
                "short {}\n\n[... 48006 more characters truncated]",
                "z".repeat(1994)
            )
        );
    }

    #[test]
    fn tool_result_marker_counts_utf16_units() {
        let text = "😀".repeat(1500); // 3000 UTF-16 units
        let out = tool_result(&text);
        assert_eq!(
            out,
            format!(
                "{}\n\n[... 1000 more characters truncated]",
                "😀".repeat(1000)
            )
        );
    }

    #[test]
    fn tool_result_cut_inside_a_surrogate_pair_gives_replacement() {
        let text = format!("{}{}", "a".repeat(1999), "😀".repeat(10));
        let out = tool_result(&text);
        assert_eq!(
            out,
            format!(
                "{}\u{FFFD}\n\n[... 19 more characters truncated]",
                "a".repeat(1999)
            )
        );
    }

    #[test]
    fn tool_result_at_limit_is_whole() {
        let text = "x".repeat(2000);
        assert_eq!(tool_result(&text), text);
        let long = "y".repeat(100_000);
        assert_eq!(
            tool_result(&long),
            format!(
                "{}\n\n[... 98000 more characters truncated]",
                "y".repeat(2000)
            )
        );
    }

    #[test]
    fn bash_text_as_pi() {
        assert_eq!(
            bash_execution_to_text("ls", "", Some(0), false, false, None),
            "Ran `ls`\n(no output)"
        );
        assert_eq!(
            bash_execution_to_text("x", "o", Some(2), false, true, Some("/tmp/f")),
            "Ran `x`\n```\no\n```\n\nCommand exited with code 2\n\n[Output truncated. Full output: /tmp/f]"
        );
    }
}
