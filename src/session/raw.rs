//! Borrowing, lenient serde shapes of one JSONL line.
//!
//! Every field is optional and every scalar accepts any JSON type (a wrong
//! type becomes `None`), because pi itself never validates entries: a line
//! that JSON-parses is an entry for pi, so it must be one for us too. Image
//! `data` is only measured, never copied; other strings borrow from the line
//! buffer when they contain no escapes.

use std::borrow::Cow;
use std::fmt;

use serde::de::{self, Deserialize, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::Value;

/// A string field; any non-string JSON value reads as `None`.
#[derive(Debug, Default)]
pub(crate) struct Str<'a>(pub Option<Cow<'a, str>>);

/// A numeric field (JS numbers are doubles); non-numbers read as `None`.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct Num(pub Option<f64>);

/// A field read with JavaScript truthiness, as pi's `if (msg.cancelled)` does.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct Truthy(pub bool);

/// The length of a string field (image `data`), without keeping it.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct StrLen(pub usize);

/// What a visitor saw, for the lenient scalar types.
enum Seen<'a> {
    Str(Cow<'a, str>),
    Num(f64),
    Bool(bool),
    Null,
    Compound,
}

struct SeenVisitor;

impl<'de> Visitor<'de> for SeenVisitor {
    type Value = Seen<'de>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_bool<E>(self, v: bool) -> Result<Self::Value, E> {
        Ok(Seen::Bool(v))
    }
    fn visit_i64<E>(self, v: i64) -> Result<Self::Value, E> {
        Ok(Seen::Num(v as f64))
    }
    fn visit_u64<E>(self, v: u64) -> Result<Self::Value, E> {
        Ok(Seen::Num(v as f64))
    }
    fn visit_f64<E>(self, v: f64) -> Result<Self::Value, E> {
        Ok(Seen::Num(v))
    }
    fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Self::Value, E> {
        Ok(Seen::Str(Cow::Borrowed(v)))
    }
    fn visit_str<E>(self, v: &str) -> Result<Self::Value, E> {
        Ok(Seen::Str(Cow::Owned(v.to_owned())))
    }
    fn visit_string<E>(self, v: String) -> Result<Self::Value, E> {
        Ok(Seen::Str(Cow::Owned(v)))
    }
    fn visit_unit<E>(self) -> Result<Self::Value, E> {
        Ok(Seen::Null)
    }
    fn visit_none<E>(self) -> Result<Self::Value, E> {
        Ok(Seen::Null)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(Seen::Compound)
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
        Ok(Seen::Compound)
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for Str<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Ok(match d.deserialize_any(SeenVisitor)? {
            Seen::Str(s) => Str(Some(s)),
            _ => Str(None),
        })
    }
}

impl<'de> Deserialize<'de> for Num {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Ok(match d.deserialize_any(SeenVisitor)? {
            Seen::Num(n) => Num(Some(n)),
            _ => Num(None),
        })
    }
}

impl<'de> Deserialize<'de> for Truthy {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Ok(Truthy(match d.deserialize_any(SeenVisitor)? {
            Seen::Str(s) => !s.is_empty(),
            Seen::Num(n) => n != 0.0 && !n.is_nan(),
            Seen::Bool(b) => b,
            Seen::Null => false,
            Seen::Compound => true,
        }))
    }
}

struct LenVisitor;

impl<'de> Visitor<'de> for LenVisitor {
    type Value = StrLen;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_borrowed_bytes<E>(self, v: &'de [u8]) -> Result<StrLen, E> {
        Ok(StrLen(v.len()))
    }
    fn visit_bytes<E>(self, v: &[u8]) -> Result<StrLen, E> {
        Ok(StrLen(v.len()))
    }
    fn visit_borrowed_str<E>(self, v: &'de str) -> Result<StrLen, E> {
        Ok(StrLen(v.len()))
    }
    fn visit_str<E>(self, v: &str) -> Result<StrLen, E> {
        Ok(StrLen(v.len()))
    }
    fn visit_bool<E>(self, _: bool) -> Result<StrLen, E> {
        Ok(StrLen(0))
    }
    fn visit_i64<E>(self, _: i64) -> Result<StrLen, E> {
        Ok(StrLen(0))
    }
    fn visit_u64<E>(self, _: u64) -> Result<StrLen, E> {
        Ok(StrLen(0))
    }
    fn visit_f64<E>(self, _: f64) -> Result<StrLen, E> {
        Ok(StrLen(0))
    }
    fn visit_unit<E>(self) -> Result<StrLen, E> {
        Ok(StrLen(0))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<StrLen, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(StrLen(0))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<StrLen, A::Error> {
        while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
        Ok(StrLen(0))
    }
}

impl<'de> Deserialize<'de> for StrLen {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        // As bytes: serde_json then skips UTF-8 validation of (large) base64 data.
        // A non-string, non-array `data` fails the line; pi never writes one.
        d.deserialize_bytes(LenVisitor)
    }
}

/// A content block as written by pi (`text`, `thinking`, `toolCall`, `image`).
#[derive(Debug, Default, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct RawBlock<'a> {
    #[serde(rename = "type", borrow, default)]
    pub ty: Str<'a>,
    #[serde(borrow, default)]
    pub text: TextField<'a>,
    #[serde(borrow, default)]
    pub thinking: Str<'a>,
    #[serde(borrow, default)]
    pub id: Str<'a>,
    #[serde(borrow, default)]
    pub name: Str<'a>,
    #[serde(default)]
    pub arguments: Option<Value>,
    #[serde(borrow, default)]
    pub mime_type: Str<'a>,
    #[serde(default)]
    pub data: Option<StrLen>,
}

/// A block slot of a content array; non-objects (which pi skips) are `None`.
pub(crate) struct MaybeBlock<'a>(pub Option<RawBlock<'a>>);

/// `content`: a plain string or an array of blocks (anything else: `Other`).
#[derive(Debug)]
pub(crate) enum RawContent<'a> {
    Text(Cow<'a, str>),
    Blocks(Vec<RawBlock<'a>>),
    Other,
}

/// Deserializes an object into `T`, anything else into `None`.
struct ObjectOr<T>(std::marker::PhantomData<T>);

impl<'de, T: Deserialize<'de>> Visitor<'de> for ObjectOr<T> {
    type Value = Option<T>;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
        T::deserialize(de::value::MapAccessDeserializer::new(map)).map(Some)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(None)
    }
    fn visit_bool<E>(self, _: bool) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_i64<E>(self, _: i64) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_u64<E>(self, _: u64) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_f64<E>(self, _: f64) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_str<E>(self, _: &str) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_unit<E>(self) -> Result<Self::Value, E> {
        Ok(None)
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for MaybeBlock<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(ObjectOr::<RawBlock<'a>>(Default::default())).map(MaybeBlock)
    }
}

struct ContentVisitor;

impl<'de> Visitor<'de> for ContentVisitor {
    type Value = RawContent<'de>;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a string or an array of content blocks")
    }
    fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Self::Value, E> {
        Ok(RawContent::Text(Cow::Borrowed(v)))
    }
    fn visit_str<E>(self, v: &str) -> Result<Self::Value, E> {
        Ok(RawContent::Text(Cow::Owned(v.to_owned())))
    }
    fn visit_string<E>(self, v: String) -> Result<Self::Value, E> {
        Ok(RawContent::Text(Cow::Owned(v)))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        let mut blocks = Vec::new();
        while let Some(MaybeBlock(block)) = seq.next_element::<MaybeBlock<'de>>()? {
            // A non-object slot has no `type`, so every pi filter drops it.
            blocks.push(block.unwrap_or_default());
        }
        Ok(RawContent::Blocks(blocks))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
        Ok(RawContent::Other)
    }
    fn visit_bool<E>(self, _: bool) -> Result<Self::Value, E> {
        Ok(RawContent::Other)
    }
    fn visit_i64<E>(self, _: i64) -> Result<Self::Value, E> {
        Ok(RawContent::Other)
    }
    fn visit_u64<E>(self, _: u64) -> Result<Self::Value, E> {
        Ok(RawContent::Other)
    }
    fn visit_f64<E>(self, _: f64) -> Result<Self::Value, E> {
        Ok(RawContent::Other)
    }
    fn visit_unit<E>(self) -> Result<Self::Value, E> {
        Ok(RawContent::Other)
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for RawContent<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        // Lifetimes: the visitor yields RawContent<'de>, which outlives 'a.
        d.deserialize_any(ContentVisitor)
    }
}

/// pi's `AgentMessage`, all roles folded into one lenient shape.
#[derive(Debug, Default, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct RawMessage<'a> {
    #[serde(borrow, default)]
    pub role: Str<'a>,
    #[serde(borrow, default)]
    pub content: Option<RawContent<'a>>,
    #[serde(default)]
    pub timestamp: Num,
    #[serde(borrow, default)]
    pub provider: Str<'a>,
    #[serde(borrow, default)]
    pub model: Str<'a>,
    #[serde(borrow, default)]
    pub stop_reason: Str<'a>,
    #[serde(borrow, default)]
    pub error_message: Str<'a>,
    #[serde(default)]
    pub usage: Option<Value>,
    #[serde(borrow, default)]
    pub tool_call_id: Str<'a>,
    #[serde(borrow, default)]
    pub tool_name: Str<'a>,
    #[serde(default)]
    pub is_error: Truthy,
    #[serde(borrow, default)]
    pub command: Str<'a>,
    #[serde(borrow, default)]
    pub output: Str<'a>,
    #[serde(default)]
    pub exit_code: Num,
    #[serde(default)]
    pub cancelled: Truthy,
    #[serde(default)]
    pub truncated: Truthy,
    #[serde(borrow, default)]
    pub full_output_path: Str<'a>,
    #[serde(default)]
    pub exclude_from_context: Truthy,
    #[serde(borrow, default)]
    pub custom_type: Str<'a>,
    #[serde(default)]
    pub display: Truthy,
    #[serde(borrow, default)]
    pub summary: Str<'a>,
    #[serde(borrow, default)]
    pub from_id: Str<'a>,
    #[serde(default)]
    pub tokens_before: Num,
}

pub(crate) struct MaybeMessage<'a>(pub Option<RawMessage<'a>>);

impl<'de: 'a, 'a> Deserialize<'de> for MaybeMessage<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(ObjectOr::<RawMessage<'a>>(Default::default())).map(MaybeMessage)
    }
}

/// One line: the header or any entry type, all fields optional.
#[derive(Default, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct RawLine<'a> {
    #[serde(rename = "type", borrow, default)]
    pub ty: Str<'a>,
    #[serde(borrow, default)]
    pub id: Str<'a>,
    #[serde(borrow, default)]
    pub parent_id: Str<'a>,
    #[serde(borrow, default)]
    pub timestamp: Str<'a>,
    #[serde(borrow, default)]
    pub message: Option<MaybeMessage<'a>>,
    #[serde(borrow, default)]
    pub thinking_level: Str<'a>,
    #[serde(borrow, default)]
    pub provider: Str<'a>,
    #[serde(borrow, default)]
    pub model_id: Str<'a>,
    #[serde(borrow, default)]
    pub summary: Str<'a>,
    #[serde(borrow, default)]
    pub first_kept_entry_id: Str<'a>,
    #[serde(default)]
    pub first_kept_entry_index: Num,
    #[serde(default)]
    pub tokens_before: Num,
    #[serde(default)]
    pub details: Option<Value>,
    #[serde(default)]
    pub from_hook: Truthy,
    #[serde(borrow, default)]
    pub from_id: Str<'a>,
    #[serde(borrow, default)]
    pub custom_type: Str<'a>,
    #[serde(default)]
    pub data: Option<Value>,
    #[serde(borrow, default)]
    pub content: Option<RawContent<'a>>,
    #[serde(default)]
    pub display: Truthy,
    #[serde(borrow, default)]
    pub target_id: Str<'a>,
    #[serde(borrow, default)]
    pub label: Str<'a>,
    #[serde(borrow, default)]
    pub name: Str<'a>,
    #[serde(default)]
    pub version: Num,
    #[serde(borrow, default)]
    pub cwd: Str<'a>,
    #[serde(borrow, default)]
    pub parent_session: Str<'a>,
}

impl Str<'_> {
    pub fn owned(&self) -> Option<String> {
        self.0.as_ref().map(|s| s.to_string())
    }
    pub fn string(&self) -> String {
        self.0.as_deref().unwrap_or_default().to_string()
    }
    pub fn as_str(&self) -> Option<&str> {
        self.0.as_deref()
    }
}

impl std::fmt::Debug for RawLine<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RawLine").field("type", &self.ty).field("id", &self.id).finish()
    }
}

thread_local! {
    /// Set while parsing a line known to be a tool result (see
    /// [`bounded_text_scope`]): its text blocks are then measured and cut while
    /// parsing instead of being copied whole.
    static BOUNDED_TEXT: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Runs `f` with tool-result text bounding on (restored afterwards).
pub(crate) fn bounded_text_scope<R>(f: impl FnOnce() -> R) -> R {
    struct Reset(bool);
    impl Drop for Reset {
        fn drop(&mut self) {
            BOUNDED_TEXT.with(|b| b.set(self.0));
        }
    }
    let _reset = Reset(BOUNDED_TEXT.with(|b| b.replace(true)));
    f()
}

/// A block's `text`: whole, or (in a bounded scope) only its head and lengths.
#[derive(Debug, Default)]
pub(crate) enum TextField<'a> {
    #[default]
    Missing,
    Whole(Cow<'a, str>),
    Bounded(crate::session::model::BoundedText),
}

impl TextField<'_> {
    pub fn as_str(&self) -> Option<&str> {
        match self {
            TextField::Whole(s) => Some(s),
            TextField::Bounded(b) => Some(&b.head),
            TextField::Missing => None,
        }
    }
}

/// The bounded form of a (possibly long) tool output from its raw JSON string
/// (quotes included; `None` for any other JSON value). Only the kept head is
/// unescaped; the full lengths are counted on the escaped form, as serde_json
/// would decode it: a lone surrogate escape is one UTF-16 unit and three bytes
/// (U+FFFD in the head, as pi writes a lone surrogate in UTF-8).
fn bounded_raw(raw: &str) -> Option<crate::session::model::BoundedText> {
    use crate::session::convert::{utf16_len_bytes, TOOL_TEXT_HEAD_BYTES, TOOL_TEXT_HEAD_UNITS};
    let s = raw.trim_matches(|c| matches!(c, ' ' | '\t' | '\r' | '\n'));
    let s = s.strip_prefix('"')?.strip_suffix('"')?;
    let b = s.as_bytes();

    let mut head = String::new();
    let (mut units, mut i) = (0usize, 0usize);
    while i < b.len() {
        let (c, raw_len) = if b[i] == b'\\' {
            let e = escape_at(b, i);
            (e.ch, e.raw_len)
        } else {
            let Some(c) = s[i..].chars().next() else { break };
            (c, c.len_utf8())
        };
        if units >= TOOL_TEXT_HEAD_UNITS || head.len() + c.len_utf8() > TOOL_TEXT_HEAD_BYTES {
            break;
        }
        head.push(c);
        units += c.len_utf16();
        i += raw_len;
    }
    if i >= b.len() {
        let full_bytes = head.len();
        return Some(crate::session::model::BoundedText { head, full_utf16_len: units, full_bytes });
    }

    // Escapes are ASCII: count the escaped bytes, then take off what each
    // escape loses in decoding.
    let (mut full_bytes, mut full_units) = (b.len(), utf16_len_bytes(b));
    let mut at = 0;
    while let Some(off) = memchr::memchr(b'\\', &b[at..]) {
        let e = escape_at(b, at + off);
        full_bytes -= e.raw_len - e.bytes;
        full_units -= e.raw_len - e.units;
        at += off + e.raw_len;
    }
    Some(crate::session::model::BoundedText { head, full_utf16_len: full_units, full_bytes })
}

/// One escape sequence as serde_json decodes it.
struct Escape {
    ch: char,
    /// Length of the escape in the JSON text.
    raw_len: usize,
    /// Decoded length in (WTF-8) bytes and in UTF-16 units.
    bytes: usize,
    units: usize,
}

/// The escape starting at `b[i]` (a backslash) of a string serde_json has
/// already validated: a surrogate pair is one character, a lone surrogate
/// U+FFFD (three bytes, one unit, as its WTF-8 form).
fn escape_at(b: &[u8], i: usize) -> Escape {
    let simple = |ch: char| Escape { ch, raw_len: 2, bytes: 1, units: 1 };
    match b.get(i + 1) {
        Some(b'u') => {}
        Some(b'b') => return simple('\u{8}'),
        Some(b'f') => return simple('\u{c}'),
        Some(b'n') => return simple('\n'),
        Some(b'r') => return simple('\r'),
        Some(b't') => return simple('\t'),
        Some(&c) => return simple(char::from(c)),
        None => return Escape { ch: '\\', raw_len: 1, bytes: 1, units: 1 },
    }
    let hex = |at: usize| -> Option<u32> {
        let h = b.get(at..at + 4)?;
        u32::from_str_radix(std::str::from_utf8(h).ok()?, 16).ok()
    };
    let Some(n) = hex(i + 2) else {
        return Escape { ch: '\u{FFFD}', raw_len: 2, bytes: 3, units: 1 };
    };
    if (0xD800..0xDC00).contains(&n) && b.get(i + 6) == Some(&b'\\') && b.get(i + 7) == Some(&b'u') {
        if let Some(lo) = hex(i + 8).filter(|lo| (0xDC00..0xE000).contains(lo)) {
            let c = char::from_u32(0x10000 + ((n - 0xD800) << 10) + (lo - 0xDC00)).unwrap_or('\u{FFFD}');
            return Escape { ch: c, raw_len: 12, bytes: 4, units: 2 };
        }
    }
    match char::from_u32(n) {
        Some(c) => Escape { ch: c, raw_len: 6, bytes: c.len_utf8(), units: 1 },
        None => Escape { ch: '\u{FFFD}', raw_len: 6, bytes: 3, units: 1 },
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for TextField<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        if BOUNDED_TEXT.with(|b| b.get()) {
            // Raw: serde_json only validates the string; nothing beyond the
            // head is unescaped or copied.
            let raw = <&'de serde_json::value::RawValue>::deserialize(d)?;
            return Ok(bounded_raw(raw.get()).map_or(TextField::Missing, TextField::Bounded));
        }
        Ok(match d.deserialize_any(SeenVisitor)? {
            Seen::Str(s) => TextField::Whole(s),
            _ => TextField::Missing,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::session::{bounded, utf16_len, TOOL_TEXT_HEAD_BYTES, TOOL_TEXT_HEAD_UNITS};

    /// What decoding the whole string and then bounding it gives.
    fn decoded(text: &str) -> crate::session::BoundedText {
        bounded(text, TOOL_TEXT_HEAD_UNITS, TOOL_TEXT_HEAD_BYTES)
    }

    #[test]
    fn raw_heads_match_decoding_the_whole_text() {
        let long = "é\n\"x\\ 😀\t".repeat(3000);
        for text in ["", "plain", "a\u{1}b/c", &long, &"z".repeat(9000), &"€".repeat(4000)] {
            let raw = serde_json::to_string(text).unwrap();
            let got = bounded_raw(&raw).unwrap();
            assert_eq!(got, decoded(text), "{raw:.40}");
            assert_eq!(got.full_utf16_len, utf16_len(text));
        }
        // Escaped non-ASCII, pairs split across the head limit, \/ escapes.
        let raw = format!("\"{}{}\\/\"", "a".repeat(2047), "\\ud83d\\ude00".repeat(3));
        let text = format!("{}{}/", "a".repeat(2047), "😀".repeat(3));
        assert_eq!(bounded_raw(&raw).unwrap(), decoded(&text));
        assert_eq!(bounded_raw("12"), None);
    }

    #[test]
    fn raw_lone_surrogates_are_one_unit_each() {
        // Lone high, lone low, high before a non-low escape, a pair.
        let raw = format!("\"{}\\ud83d|\\ude00|\\ud83d\\u0041|\\ud83d\\ude00\"", "q".repeat(3000));
        let got = bounded_raw(&raw).unwrap();
        let text = format!("{}\u{FFFD}|\u{FFFD}|\u{FFFD}A|😀", "q".repeat(3000));
        assert_eq!(got, decoded(&text));
        let short = bounded_raw(r#""\ud800x\udfff""#).unwrap();
        assert_eq!((short.head.as_str(), short.full_utf16_len, short.full_bytes), ("\u{FFFD}x\u{FFFD}", 3, 7));
    }
}
