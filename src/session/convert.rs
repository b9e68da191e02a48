//! From the lenient line shapes to the model, applying pi's v2→v3 role
//! migration and bounding every text kept: a tool result's text keeps the
//! head pi's serialization uses, a message's text a head no view needs more
//! of ([`MESSAGE_TEXT_HEAD_BYTES`]), each with its full length; any other
//! string (thinking, summaries, names, ids, tool-call arguments) keeps at
//! most [`STRING_HEAD_BYTES`]. So an entry costs what its heads cost, however
//! long the line it was read from.
//!
//! Every text an entry keeps is also cleaned here ([`Cleaning::text`]: `<private>`
//! spans and secrets, [`crate::redact::session_text`]), before it is cut: the
//! reader is where session text enters the program, so no view, store row,
//! model request or printed line can hold text that skipped the pass. The
//! one exception is asked for by name ([`Cleaning::AsWritten`]): a search's
//! snippets, which use such a text only when it is proven to be the cleaned
//! text the store kept, and read the entry again cleaned otherwise. What
//! is kept as is: ids, types, roles, tool names, timestamps, the header's
//! `cwd` and `parentSession` (paths the privacy and containment checks match;
//! what prints or sends them redacts them there).

use super::entries::*;
use super::raw::{RawBlock, RawContent, RawLine, RawMessage, Str};
use serde_json::Value;

/// Tool-result text kept per block: at most this many UTF-16 units, and at
/// most [`TOOL_TEXT_HEAD_BYTES`]. pi's serialization keeps the first 2000
/// units of the joined tool-result text (each block's head covers them) and
/// counts the rest from the full lengths kept beside the head; keeping no
/// more makes long tool outputs cost ~2 KB each however large they are.
pub const TOOL_TEXT_HEAD_UNITS: usize = 2048;
/// Byte cap of a kept tool-result head (2048 units are at most 6 KiB of UTF-8).
pub const TOOL_TEXT_HEAD_BYTES: usize = 8 * 1024;
/// Text kept of a user's, an assistant's or a custom message's text block:
/// far more than any view sends (indexing reads 50 KB of a whole session),
/// so only a text longer than any view would show loses its tail. Its full
/// length is kept beside the head, and views say what was not read. (In a
/// line longer than `LONG_LINE`, the line reader already cut it to its
/// first 64 KiB of JSON text.)
pub const MESSAGE_TEXT_HEAD_BYTES: usize = 1 << 20;
/// Bytes kept of any other string of an entry (thinking, summaries, names,
/// ids, bash output, each string of tool-call arguments: real sessions
/// `write` files of a few hundred KB, which pi's views show whole).
pub const STRING_HEAD_BYTES: usize = 1 << 20;
/// Values kept of a tool call's arguments or an entry's `details`: past
/// this, they are kept as a head of their JSON text.
const MAX_JSON_VALUES: usize = 10_000;

/// How much of a text block is kept.
#[derive(Debug, Clone, Copy)]
struct Head {
    units: usize,
    bytes: usize,
}

const TOOL_TEXT: Head = Head {
    units: TOOL_TEXT_HEAD_UNITS,
    bytes: TOOL_TEXT_HEAD_BYTES,
};
const MESSAGE_TEXT: Head = Head {
    units: MESSAGE_TEXT_HEAD_BYTES,
    bytes: MESSAGE_TEXT_HEAD_BYTES,
};

/// At most [`STRING_HEAD_BYTES`] of `s` (on a character boundary).
pub(crate) fn head_of<T: for<'s> From<&'s str>>(s: &str) -> T {
    T::from(&s[..crate::text::floor_char_boundary(s, STRING_HEAD_BYTES)])
}

/// What the reader does to the texts an entry keeps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cleaning {
    /// `<private>` spans and secrets replaced
    /// ([`crate::redact::session_text`]): every reader but one.
    Cleaned,
    /// Kept as written. Only for a search's snippets (`store::snippets`),
    /// which use a text read so only when its length and hash are those of
    /// the cleaned text the store kept, and read the entry again
    /// [`Cleaned`](Cleaning::Cleaned) otherwise: most entries hold no secret,
    /// and the rules were a third of a slow search's time.
    AsWritten,
}

impl Cleaning {
    /// `text` as this reader keeps it: what every text taken from a session becomes.
    fn text(self, text: &str) -> String {
        match self {
            Cleaning::Cleaned => crate::redact::session_text(text).into_owned(),
            Cleaning::AsWritten => text.to_string(),
        }
    }

    /// [`head_of`] `s`, as this reader keeps it.
    fn head<T: From<String>>(self, s: &str) -> T {
        T::from(self.text(&s[..crate::text::floor_char_boundary(s, STRING_HEAD_BYTES)]))
    }

    /// [`bounded`] of `text` as this reader keeps it: cleaned first, so a cut
    /// never keeps the body of a secret whose start it dropped.
    fn bounded(self, text: &str, head: Head) -> BoundedText {
        bounded(&self.text(text), head.units, head.bytes)
    }

    /// The JSON value of `json` ([`bounded_value`]), each of its strings as
    /// this reader keeps it.
    fn value(self, json: &str) -> Value {
        let mut value = bounded_value(json);
        if self == Cleaning::Cleaned {
            crate::redact::strings_in(&mut value, crate::redact::session_text);
        }
        value
    }
}

/// Keep a head of `text` of at most `max_units` UTF-16 units and `max_bytes`
/// bytes (on a char boundary), plus its full lengths.
pub fn bounded(text: &str, max_units: usize, max_bytes: usize) -> BoundedText {
    // Units never exceed bytes, so a text this short is within both limits.
    if text.len() <= max_units.min(max_bytes) {
        return BoundedText::whole(text.to_string());
    }
    let limit = max_units.min(max_bytes);
    let mut cut = 0;
    if text.as_bytes()[..limit].is_ascii() {
        // One unit and one byte per character: the first limit reached is here.
        cut = limit;
    } else {
        // Walk lead bytes (the text is valid UTF-8): cheaper than decoding chars.
        let bytes = text.as_bytes();
        let mut units = 0;
        while cut < bytes.len() {
            let (len, width) = crate::text::char_size(bytes[cut]);
            if units >= max_units || cut + len > max_bytes {
                break;
            }
            units += width;
            cut += len;
        }
    }
    if cut == text.len() {
        return BoundedText::whole(text.to_string());
    }
    BoundedText {
        head: text[..cut].into(),
        full_utf16_len: utf16_len(text),
        full_bytes: text.len(),
    }
}

/// The string a JSON string literal stands for (lone surrogate escapes
/// become U+FFFD, as when pi writes them as UTF-8).
fn decode(json: &str) -> String {
    serde_json::from_str::<String>(json)
        .or_else(|_| {
            serde_json::from_str(&super::repair::replace_lone_surrogates(json).unwrap_or_default())
        })
        .unwrap_or_default()
}

/// [`bounded`] of the string the JSON literal `json` stands for, cleaned, to `head`;
/// a long one is measured on its JSON text (each escape is one UTF-16 unit)
/// and only its head decoded, so a huge text is never copied. JSON text
/// beyond 6 bytes per kept byte is not decoded: its head decodes to at least
/// the kept head (an escape is at most 6 bytes for 1 unit and 1 byte), so the
/// cut is the one the whole text gives.
fn bounded_json(json: &str, head: Head, cleaning: Cleaning) -> BoundedText {
    let head_json_bytes = 6 * head.bytes;
    let body = &json[1..json.len() - 1];
    if body.len() <= head_json_bytes {
        return cleaning.bounded(&decode(json), head);
    }
    let b = body.as_bytes();
    let (mut units, mut bytes) = (utf16_len(body), body.len());
    let mut cut = crate::text::floor_char_boundary(body, head_json_bytes);
    let mut i = 0;
    while let Some(at) = memchr::memchr(b'\\', &b[i..]).map(|k| i + k) {
        let (len, unit, decoded) = escape(&b[at..]).unwrap_or((2, 1, 1));
        units -= len - unit;
        bytes -= len - decoded;
        // Never cut inside an escape or between the two halves of a pair.
        let high_surrogate = len == 6
            && matches!(
                b.get(at + 2..at + 4),
                Some([b'd' | b'D', b'8'..=b'9' | b'a'..=b'b' | b'A'..=b'B'])
            );
        if at < cut && (cut < at + len || (high_surrogate && cut == at + len)) {
            cut = at;
        }
        i = at + len;
    }
    let decoded = decode(&format!("\"{}\"", &body[..cut]));
    BoundedText {
        full_utf16_len: units,
        full_bytes: bytes,
        ..cleaning.bounded(&decoded, head)
    }
}

/// The JSON value `json` (a tool call's arguments, an entry's `details`)
/// with every string longer than [`STRING_HEAD_BYTES`] cut to its head and
/// marked; one of more than [`MAX_JSON_VALUES`] values is kept as the head
/// of its JSON text, marked. An unparsable one is `null`.
fn bounded_value(json: &str) -> Value {
    // What `JSON.parse` accepts (`1e400`, lone surrogates) is read as pi reads it.
    let mut repaired = None;
    let Ok(mut value) = super::repair::parse_line::<Value>(json.as_bytes(), &mut repaired).0 else {
        return Value::Null;
    };
    if json.len() <= STRING_HEAD_BYTES {
        return value;
    }
    let mut values = 0;
    let mut stack = vec![&mut value];
    while let Some(v) = stack.pop() {
        values += 1;
        if values > MAX_JSON_VALUES {
            return Value::String(with_cut_note(head_of(json), json.len()));
        }
        match v {
            Value::String(s) if s.len() > STRING_HEAD_BYTES => {
                *s = with_cut_note(head_of(s), s.len());
            }
            Value::Array(items) => stack.extend(items.iter_mut()),
            Value::Object(map) => stack.extend(map.values_mut()),
            _ => {}
        }
    }
    value
}

/// `head` and a note of what was not read of the `full_bytes` it came from.
fn with_cut_note(mut head: String, full_bytes: usize) -> String {
    head.push_str(&cut_note(full_bytes - head.len()));
    head
}

/// What a view appends to a text of which `bytes` were not read.
pub fn cut_note(bytes: usize) -> String {
    format!("\n[... {bytes} more bytes not read]")
}

/// The JSON escape `b` starts with: its length, and the UTF-16 units and
/// UTF-8 bytes it stands for (each half of a surrogate pair counts 2 bytes);
/// `None` when it is not a valid escape.
pub(crate) fn escape(b: &[u8]) -> Option<(usize, usize, usize)> {
    match b.get(1)? {
        b'u' => {
            let hex = b
                .get(2..6)
                .filter(|h| h.iter().all(u8::is_ascii_hexdigit))?;
            let hex = std::str::from_utf8(hex)
                .ok()
                .and_then(|h| u32::from_str_radix(h, 16).ok())?;
            Some((
                6,
                1,
                match hex {
                    0..0x80 => 1,
                    0x80..0x800 | 0xD800..0xE000 => 2,
                    _ => 3,
                },
            ))
        }
        b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' => Some((2, 1, 1)),
        _ => None,
    }
}

/// Length in UTF-16 code units (JavaScript's `string.length`).
pub fn utf16_len(text: &str) -> usize {
    let bytes = text.as_bytes();
    // Units = chars + one more per 4-byte sequence = bytes − continuation
    // bytes + 4-byte leads. Small per-chunk counters let this vectorize.
    let (mut continuation, mut four) = (0usize, 0usize);
    for chunk in bytes.chunks(128) {
        let (mut c, mut f) = (0u8, 0u8);
        for &b in chunk {
            c += u8::from((b as i8) < -0x40);
            f += u8::from(b >= 0xF0);
        }
        continuation += usize::from(c);
        four += usize::from(f);
    }
    bytes.len() - continuation + four
}

fn to_i64(n: Option<f64>) -> i64 {
    match n {
        Some(v) if v.is_finite() => v as i64,
        _ => 0,
    }
}

fn to_u64(n: Option<f64>) -> u64 {
    match n {
        Some(v) if v.is_finite() && v > 0.0 => v as u64,
        _ => 0,
    }
}

fn block(raw: &RawBlock<'_>, head: Head, cleaning: Cleaning) -> Option<Block> {
    match raw.ty.as_str()? {
        "text" => {
            let json = raw
                .text
                .map(|t| t.get())
                .filter(|t| t.starts_with('"'))
                .unwrap_or("\"\"");
            Some(Block::Text(bounded_json(json, head, cleaning)))
        }
        "thinking" => Some(Block::Thinking(
            cleaning.head(raw.thinking.as_str().unwrap_or_default()),
        )),
        "toolCall" => Some(Block::ToolCall {
            name: head_of(raw.name.as_str().unwrap_or_default()),
            arguments: Box::new(
                raw.arguments
                    .map_or(Value::Null, |a| cleaning.value(a.get())),
            ),
        }),
        "image" => Some(Block::Image {
            mime_type: head_of(raw.mime_type.as_str().unwrap_or_default()),
        }),
        // Unknown block types are dropped: no pi filter would keep them.
        _ => None,
    }
}

/// A content's blocks, as a [`Blocks`] or a `Box<[Block]>`.
fn blocks<B: From<Vec<Block>>>(raw: &Option<RawContent<'_>>, head: Head, cleaning: Cleaning) -> B {
    B::from(match raw {
        Some(RawContent::Blocks(b)) => {
            // Sized up front: collecting a filter would reserve 4 blocks for one.
            let mut blocks = Vec::with_capacity(b.len());
            blocks.extend(b.iter().filter_map(|b| block(b, head, cleaning)));
            blocks
        }
        _ => Vec::new(),
    })
}

/// A tool result's content: a string where pi expects blocks would make pi
/// throw; it is kept as text so nothing is silently lost.
fn tool_result_content(raw: &Option<RawContent<'_>>, cleaning: Cleaning) -> Box<[Block]> {
    match raw {
        Some(RawContent::Text(t)) => Box::new([Block::Text(cleaning.bounded(t, TOOL_TEXT))]),
        _ => blocks(raw, TOOL_TEXT, cleaning),
    }
}

/// A user's or a custom message's content: a string is kept as the one text
/// block pi's views read it as.
pub fn content<B: From<Vec<Block>>>(raw: &Option<RawContent<'_>>, cleaning: Cleaning) -> B {
    match raw {
        Some(RawContent::Text(t)) => B::from(vec![Block::Text(cleaning.bounded(t, MESSAGE_TEXT))]),
        _ => blocks(raw, MESSAGE_TEXT, cleaning),
    }
}

/// A message of a `message` entry; `None` for a role pi's context code does not know.
pub fn message(m: &RawMessage<'_>, version: u32, cleaning: Cleaning) -> Option<AgentMessage> {
    let timestamp = to_i64(m.timestamp.0);
    let role = m.role.as_str()?;
    Some(match role {
        "user" => AgentMessage::User {
            content: content(&m.content, cleaning),
            timestamp,
        },
        "assistant" => AgentMessage::Assistant {
            content: blocks(&m.content, MESSAGE_TEXT, cleaning),
            error_message: m.error_message.as_str().map(|e| Box::new(cleaning.head(e))),
            timestamp,
        },
        "toolResult" => AgentMessage::ToolResult {
            tool_name: head_of(m.tool_name.as_str().unwrap_or_default()),
            content: tool_result_content(&m.content, cleaning),
            is_error: m.is_error.0,
            timestamp,
        },
        "bashExecution" => AgentMessage::BashExecution(Box::new(BashExecution {
            command: cleaning.head(m.command.as_str().unwrap_or_default()),
            // pi stores bash output already cut to 50 KB and sends it whole.
            output: cleaning.bounded(m.output.as_str().unwrap_or_default(), MESSAGE_TEXT),
            exit_code: m.exit_code.0.filter(|v| v.is_finite()).map(|v| v as i64),
            cancelled: m.cancelled.0,
            truncated: m.truncated.0,
            full_output_path: m.full_output_path.as_str().map(|p| cleaning.head(p)),
            exclude_from_context: m.exclude_from_context.0,
            timestamp,
        })),
        "custom" => custom(m, timestamp, cleaning),
        "hookMessage" if version < 3 => custom(m, timestamp, cleaning),
        "branchSummary" => AgentMessage::BranchSummary {
            summary: cleaning.head(m.summary.as_str().unwrap_or_default()),
            from_id: head_of(m.from_id.as_str().unwrap_or_default()),
            timestamp,
        },
        "compactionSummary" => AgentMessage::CompactionSummary {
            summary: cleaning.head(m.summary.as_str().unwrap_or_default()),
            tokens_before: to_u64(m.tokens_before.0),
            timestamp,
        },
        _ => return None,
    })
}

fn custom(m: &RawMessage<'_>, timestamp: i64, cleaning: Cleaning) -> AgentMessage {
    AgentMessage::Custom {
        custom_type: head_of(m.custom_type.as_str().unwrap_or_default()),
        content: content(&m.content, cleaning),
        display: m.display.0,
        timestamp,
    }
}

/// A string field, at most [`STRING_HEAD_BYTES`] of it (absent: empty).
pub(crate) fn string<T: for<'s> From<&'s str>>(s: &Str<'_>) -> T {
    head_of(s.as_str().unwrap_or_default())
}

/// A compaction's or branch summary's `details`, unless an extension wrote
/// it (`fromHook`): then they are not pi's file lists.
fn pi_details(l: &RawLine<'_>, cleaning: Cleaning) -> Option<Box<Value>> {
    let details = l.details.filter(|_| !l.from_hook.0)?;
    Some(Box::new(cleaning.value(details.get())))
}

/// The entry kind of a non-header line. `Err(())` for a `message` entry pi's
/// context code could not use (no message object, or an unknown role): the
/// caller keeps it as `Unknown` so the tree stays connected.
pub fn kind(l: &RawLine<'_>, ty: &str, version: u32, cleaning: Cleaning) -> Result<EntryKind, ()> {
    Ok(match ty {
        "message" => {
            let m = l.message.as_ref().and_then(|m| m.0.as_ref()).ok_or(())?;
            EntryKind::Message(message(m, version, cleaning).ok_or(())?)
        }
        "thinking_level_change" => EntryKind::ThinkingLevelChange {
            thinking_level: string(&l.thinking_level),
        },
        "model_change" => EntryKind::ModelChange {
            provider: string(&l.provider),
            model_id: string(&l.model_id),
        },
        "compaction" => EntryKind::Compaction {
            summary: cleaning.head(l.summary.as_str().unwrap_or_default()),
            first_kept_entry_id: string(&l.first_kept_entry_id),
            tokens_before: to_u64(l.tokens_before.0),
            details: pi_details(l, cleaning),
        },
        "branch_summary" => EntryKind::BranchSummary {
            from_id: string(&l.from_id),
            summary: cleaning.head(l.summary.as_str().unwrap_or_default()),
            details: pi_details(l, cleaning),
        },
        "custom" => EntryKind::Custom {
            custom_type: string(&l.custom_type),
        },
        "custom_message" => EntryKind::CustomMessage {
            custom_type: string(&l.custom_type),
            content: content(&l.content, cleaning),
            display: l.display.0,
        },
        "label" => EntryKind::Label {
            target_id: string(&l.target_id),
            label: l.label.as_str().map(|l| cleaning.head(l)),
        },
        "session_info" => EntryKind::SessionInfo {
            name: l.name.as_str().map(|n| cleaning.head(n)),
        },
        other => EntryKind::Unknown {
            entry_type: head_of(other),
        },
    })
}

/// Milliseconds since the epoch of an ISO-8601 timestamp (`new Date(s).getTime()`
/// for the forms pi writes); 0 when unparsable.
pub fn iso_to_ms(s: &str) -> i64 {
    parse_iso(s).unwrap_or(0)
}

fn parse_iso(s: &str) -> Option<i64> {
    let b = s.as_bytes();
    let num = |from: usize, len: usize| -> Option<i64> {
        let part = s.get(from..from + len)?;
        if !part.bytes().all(|c| c.is_ascii_digit()) {
            return None;
        }
        part.parse().ok()
    };
    let (y, mo, d) = (num(0, 4)?, num(5, 2)?, num(8, 2)?);
    if b.get(4) != Some(&b'-') || b.get(7) != Some(&b'-') {
        return None;
    }
    let (mut h, mut mi, mut sec, mut ms) = (0, 0, 0, 0);
    let mut rest = 10;
    if b.get(10) == Some(&b'T') || b.get(10) == Some(&b' ') {
        h = num(11, 2)?;
        mi = num(14, 2)?;
        rest = 16;
        if b.get(16) == Some(&b':') {
            sec = num(17, 2)?;
            rest = 19;
            if b.get(19) == Some(&b'.') {
                let mut end = 20;
                while end < b.len() && b[end].is_ascii_digit() {
                    end += 1;
                }
                let frac = s.get(20..end)?;
                let padded: String = frac.chars().chain("000".chars()).take(3).collect();
                ms = padded.parse().ok()?;
                rest = end;
            }
        }
    }
    let offset_min = match s.get(rest..) {
        Some("") | Some("Z") | Some("z") => 0,
        Some(tz) if tz.len() == 6 && (tz.starts_with('+') || tz.starts_with('-')) => {
            let oh: i64 = tz.get(1..3)?.parse().ok()?;
            let om: i64 = tz.get(4..6)?.parse().ok()?;
            let sign = if tz.starts_with('-') { -1 } else { 1 };
            sign * (oh * 60 + om)
        }
        _ => return None,
    };
    // Days from civil (Howard Hinnant's algorithm).
    let yy = if mo <= 2 { y - 1 } else { y };
    let era = yy.div_euclid(400);
    let yoe = yy - era * 400;
    let mp = (mo + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    let secs = days * 86_400 + h * 3600 + mi * 60 + sec - offset_min * 60;
    Some(secs * 1000 + ms)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn iso_parses_pi_timestamps() {
        assert_eq!(iso_to_ms("1970-01-01T00:00:00.000Z"), 0);
        assert_eq!(iso_to_ms("2024-12-03T14:00:01.500Z"), 1_733_234_401_500);
        assert_eq!(iso_to_ms("garbage"), 0);
    }

    #[test]
    fn utf16_len_counts_surrogate_pairs() {
        assert_eq!(utf16_len("aé€😀"), 5);
        assert_eq!(utf16_len(""), 0);
        let mixed = "aé€😀ß日本\u{10FFFF}z".repeat(300);
        assert_eq!(utf16_len(&mixed), mixed.encode_utf16().count());
    }

    #[test]
    fn bounded_cuts_where_a_char_walk_does() {
        let walk = |text: &str, max_units: usize, max_bytes: usize| {
            let (mut cut, mut units) = (0, 0);
            for (i, c) in text.char_indices() {
                if units >= max_units || i + c.len_utf8() > max_bytes {
                    break;
                }
                units += c.len_utf16();
                cut = i + c.len_utf8();
            }
            cut
        };
        let pieces = ["a", "\u{e9}", "\u{65e5}", "\u{1F600}", "\n"];
        let mut next = crate::text::xorshift(0x1234_5678_9ABC_DEF1);
        for _ in 0..3000 {
            let text: String = (0..next() % 300)
                .map(|_| pieces[(next() % 5) as usize])
                .collect();
            let (max_units, max_bytes) = ((next() % 200) as usize, (next() % 400) as usize);
            let b = bounded(&text, max_units, max_bytes);
            assert_eq!(
                b.head.len(),
                walk(&text, max_units, max_bytes).min(text.len()),
                "{text:?} {max_units} {max_bytes}"
            );
        }
    }

    /// A long tool output measured on its JSON text keeps what decoding it whole keeps.
    #[test]
    fn bounded_json_equals_bounded_decoded_text() {
        let pieces = [
            "abc ",
            "\\n",
            "\\\"",
            "\\\\",
            "\u{e9}",
            "\u{65e5}\u{672c}",
            "\u{1F600}",
            "\\ud83d\\ude00",
            "\\u00e9",
            "\\u0001",
            "\\/",
        ];
        let mut next = crate::text::xorshift(0x9E37_79B9_7F4A_7C15);
        for target in [
            100,
            8_000,
            6 * TOOL_TEXT_HEAD_BYTES - 3,
            6 * TOOL_TEXT_HEAD_BYTES + 1,
            6 * TOOL_TEXT_HEAD_BYTES + 7,
            70_000,
            200_000,
        ] {
            for _ in 0..8 {
                let mut body = String::new();
                while body.len() < target {
                    body.push_str(pieces[(next() % pieces.len() as u64) as usize]);
                }
                let json = format!("\"{body}\"");
                let text: String = serde_json::from_str(&json).unwrap();
                assert_eq!(
                    bounded_json(&json, TOOL_TEXT, Cleaning::Cleaned),
                    bounded(&text, TOOL_TEXT_HEAD_UNITS, TOOL_TEXT_HEAD_BYTES),
                    "{target}"
                );
            }
        }
        // A lone surrogate reads as U+FFFD, as pi writes it.
        assert_eq!(
            bounded_json("\"a\\ud83d\"", TOOL_TEXT, Cleaning::Cleaned).head,
            "a\u{FFFD}"
        );
    }

    #[test]
    fn bounded_cuts_on_char_boundary_and_keeps_lengths() {
        let text = "é".repeat(10);
        let b = bounded(&text, 100, 5);
        assert_eq!(b.head, "éé");
        assert_eq!(b.full_bytes, 20);
        assert_eq!(b.full_utf16_len, 10);
        assert!(!b.is_complete());
        assert!(bounded("abc", 5, 5).is_complete());
        // The unit limit: an emoji is two units and is never split.
        let b = bounded(&"😀".repeat(10), 5, 1000);
        assert_eq!(b.head, "😀".repeat(3));
        assert_eq!(b.full_utf16_len, 20);
        assert!(bounded(&"é".repeat(4), 4, 1000).is_complete());
    }
}
