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

use super::lenient::{not_an_object, scalars};

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
    scalars!(StrLen(0));
    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<StrLen, A::Error> {
        // Inside an elided parse, an array here is a placeholder (see super::elide).
        Ok(match super::elide::take(seq)? {
            Some(super::elide::Elided::Data(len)) => StrLen(len),
            _ => StrLen(0),
        })
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
    not_an_object!(None);
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
    scalars!(RawContent::Other);
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
    pub usage: Option<super::usage::RawUsage>,
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

struct BoundedVisitor;

impl<'de> Visitor<'de> for BoundedVisitor {
    type Value = TextField<'static>;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_bytes<E>(self, v: &[u8]) -> Result<Self::Value, E> {
        Ok(TextField::Bounded(bounded_bytes(v)))
    }
    fn visit_borrowed_bytes<E>(self, v: &'de [u8]) -> Result<Self::Value, E> {
        Ok(TextField::Bounded(bounded_bytes(v)))
    }
    fn visit_str<E>(self, v: &str) -> Result<Self::Value, E> {
        Ok(TextField::Bounded(bounded_bytes(v.as_bytes())))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Self::Value, A::Error> {
        // Inside an elided parse, an array here is a placeholder (see super::elide).
        Ok(match super::elide::take(seq)? {
            Some(super::elide::Elided::Text(b)) => TextField::Bounded(b),
            _ => TextField::Missing,
        })
    }
    fn visit_unit<E>(self) -> Result<Self::Value, E> {
        Ok(TextField::Missing)
    }
}

/// The bounded form of a (possibly long) tool output given as raw bytes:
/// only the kept head is validated and copied; the lengths are counted on
/// the bytes (exact for valid UTF-8, which is what pi writes).
pub(crate) fn bounded_bytes(bytes: &[u8]) -> crate::session::model::BoundedText {
    use crate::session::convert::{bounded, utf16_len_bytes, TOOL_TEXT_HEAD_BYTES, TOOL_TEXT_HEAD_UNITS};
    let mut limit = bytes.len().min(TOOL_TEXT_HEAD_BYTES);
    if limit < bytes.len() {
        // Do not cut inside a character.
        while limit > 0 && (bytes[limit] as i8) < -0x40 {
            limit -= 1;
        }
    }
    let head = wtf8_lossy(&bytes[..limit]);
    let mut b = bounded(&head, TOOL_TEXT_HEAD_UNITS, TOOL_TEXT_HEAD_BYTES);
    if limit < bytes.len() || b.head.len() < head.len() {
        b.full_utf16_len = utf16_len_bytes(bytes);
        b.full_bytes = bytes.len();
    }
    b
}

/// UTF-8 from serde_json's raw string bytes, which encode lone surrogate
/// escapes as 3-byte WTF-8 sequences: each becomes one U+FFFD (one UTF-16
/// unit, like the surrogate in JavaScript); other invalid bytes are replaced
/// as `String::from_utf8_lossy` (and JavaScript's decoder) do.
fn wtf8_lossy(bytes: &[u8]) -> Cow<'_, str> {
    if let Ok(s) = std::str::from_utf8(bytes) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(bytes.len());
    let mut rest = bytes;
    loop {
        match std::str::from_utf8(rest) {
            Ok(s) => {
                out.push_str(s);
                break;
            }
            Err(e) => {
                let (valid, after) = rest.split_at(e.valid_up_to());
                out.push_str(std::str::from_utf8(valid).unwrap_or_default());
                out.push('\u{FFFD}');
                let surrogate = after.len() >= 3
                    && after[0] == 0xED
                    && (0xA0..=0xBF).contains(&after[1])
                    && (0x80..=0xBF).contains(&after[2]);
                let skip = if surrogate { 3 } else { e.error_len().unwrap_or(after.len()) };
                rest = &after[skip..];
            }
        }
    }
    Cow::Owned(out)
}

impl<'de: 'a, 'a> Deserialize<'de> for TextField<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        if BOUNDED_TEXT.with(|b| b.get()) {
            // As bytes: serde_json then scans with memchr and skips UTF-8
            // validation, and nothing beyond the head is copied.
            return d.deserialize_bytes(BoundedVisitor);
        }
        Ok(match d.deserialize_any(SeenVisitor)? {
            Seen::Str(s) => TextField::Whole(s),
            _ => TextField::Missing,
        })
    }
}
