//! Borrowing, lenient serde shapes of one JSONL line.
//!
//! Every field is optional and every scalar accepts any JSON type (a wrong
//! type becomes `None`), because pi itself never validates entries: a line
//! that JSON-parses is an entry for pi, so it must be one for us too. Image
//! `data` is skipped unread; strings borrow from the line buffer when they
//! contain no escapes.
//!
//! Block text stays JSON text here; `convert` keeps a bounded head of tool results.

use std::borrow::Cow;
use std::fmt;

use serde::de::{self, Deserialize, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};

// Visitor methods shared by the lenient shapes: a field of the wrong JSON
// type reads as "absent", as looking it up in a parsed `serde_json::Value` would.

/// The scalar visitor methods (bool, numbers, null), each yielding `$none`.
macro_rules! scalars {
    ($none:expr) => {
        fn visit_bool<E>(self, _: bool) -> Result<Self::Value, E> {
            Ok($none)
        }
        fn visit_i64<E>(self, _: i64) -> Result<Self::Value, E> {
            Ok($none)
        }
        fn visit_u64<E>(self, _: u64) -> Result<Self::Value, E> {
            Ok($none)
        }
        fn visit_f64<E>(self, _: f64) -> Result<Self::Value, E> {
            Ok($none)
        }
        fn visit_unit<E>(self) -> Result<Self::Value, E> {
            Ok($none)
        }
    };
}

/// For visitors of objects: every other JSON value (string, array, scalar)
/// yields `$none`; an array is consumed.
macro_rules! not_an_object {
    ($none:expr) => {
        fn visit_str<E>(self, _: &str) -> Result<Self::Value, E> {
            Ok($none)
        }
        fn visit_seq<A: serde::de::SeqAccess<'de>>(
            self,
            mut seq: A,
        ) -> Result<Self::Value, A::Error> {
            while seq.next_element::<serde::de::IgnoredAny>()?.is_some() {}
            Ok($none)
        }
        scalars!($none);
    };
}

/// A string field; any non-string JSON value reads as `None`.
#[derive(Debug, Default)]
pub(crate) struct Str<'a>(pub Option<Cow<'a, str>>);

/// A numeric field (JS numbers are doubles); non-numbers read as `None`.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct Num(pub Option<f64>);

/// A field read with JavaScript truthiness, as pi's `if (msg.cancelled)` does.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct Truthy(pub bool);

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

/// A content block as written by pi (`text`, `thinking`, `toolCall`, `image`).
#[derive(Debug, Default, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct RawBlock<'a> {
    #[serde(rename = "type", borrow, default)]
    pub ty: Str<'a>,
    /// Kept as its JSON text: `convert` decodes it whole, or for a long
    /// tool output only a head (measuring the rest without decoding it).
    #[serde(borrow, default)]
    pub text: Option<&'a serde_json::value::RawValue>,
    #[serde(borrow, default)]
    pub thinking: Str<'a>,
    #[serde(borrow, default)]
    pub name: Str<'a>,
    /// Kept as its JSON text: `convert` parses it with its strings bounded.
    #[serde(borrow, default)]
    pub arguments: Option<&'a serde_json::value::RawValue>,
    #[serde(borrow, default)]
    pub mime_type: Str<'a>,
    /// Image data, skipped as bytes: serde_json then finds its end with
    /// `memchr` and validates nothing (pi only writes base64 strings here; a
    /// number or an object would fail the line).
    #[serde(borrow, default)]
    pub data: Option<Skipped<'a>>,
}

/// A string (or array) read past without keeping it: where the string's
/// text lies in the line (empty when it was not borrowed), to recognize one
/// cut short by the line reader.
#[derive(Debug, Default)]
pub(crate) struct Skipped<'a>(pub &'a [u8]);

impl<'de: 'a, 'a> Deserialize<'de> for Skipped<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct SkipVisitor;
        impl<'de> Visitor<'de> for SkipVisitor {
            type Value = Skipped<'de>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a string")
            }
            fn visit_borrowed_bytes<E>(self, v: &'de [u8]) -> Result<Self::Value, E> {
                Ok(Skipped(v))
            }
            fn visit_bytes<E>(self, _: &[u8]) -> Result<Self::Value, E> {
                Ok(Skipped(&[]))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
                while seq.next_element::<IgnoredAny>()?.is_some() {}
                Ok(Skipped(&[]))
            }
        }
        d.deserialize_bytes(SkipVisitor)
    }
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
        d.deserialize_any(ObjectOr::<RawBlock<'a>>(Default::default()))
            .map(MaybeBlock)
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
    pub error_message: Str<'a>,
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
        d.deserialize_any(ObjectOr::<RawMessage<'a>>(Default::default()))
            .map(MaybeMessage)
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
    #[serde(borrow, default)]
    pub details: Option<&'a serde_json::value::RawValue>,
    #[serde(default)]
    pub from_hook: Truthy,
    #[serde(borrow, default)]
    pub from_id: Str<'a>,
    #[serde(borrow, default)]
    pub custom_type: Str<'a>,
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
    /// The string as a `String` or a `CompactString` (whichever the field is).
    pub fn owned<T: for<'s> From<&'s str>>(&self) -> Option<T> {
        self.0.as_deref().map(T::from)
    }
    pub fn string<T: for<'s> From<&'s str>>(&self) -> T {
        T::from(self.0.as_deref().unwrap_or_default())
    }
    pub fn as_str(&self) -> Option<&str> {
        self.0.as_deref()
    }
}

impl std::fmt::Debug for RawLine<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RawLine")
            .field("type", &self.ty)
            .field("id", &self.id)
            .finish()
    }
}
