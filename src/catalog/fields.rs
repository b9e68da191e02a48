//! The few fields the light scan reads from a session line, taken straight
//! from the JSON text. Reads exactly what looking them up in a parsed
//! `serde_json::Value` would give (a later duplicate key wins, a value of
//! the wrong type counts as absent, a line that is not one valid JSON object
//! yields nothing) without building the tree: other values are skipped.

use std::borrow::Cow;

use serde::de::{Deserialize, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};

use crate::session::lenient::{not_an_object, scalars};

/// Top-level fields of an entry line (strings only, except `message`).
#[derive(Default)]
pub(crate) struct TopFields<'a> {
    pub ty: Option<Cow<'a, str>>,
    pub id: Option<Cow<'a, str>>,
    pub cwd: Option<Cow<'a, str>>,
    pub timestamp: Option<Cow<'a, str>>,
    pub parent_session: Option<Cow<'a, str>>,
    pub name: Option<Cow<'a, str>>,
    /// `message`, when it is an object.
    pub message: Option<Message<'a>>,
}

#[derive(Default)]
pub(crate) struct Message<'a> {
    pub role: Option<Cow<'a, str>>,
    pub content: Content<'a>,
}

/// A message's `content`: a string, or blocks of which the text ones count.
#[derive(Default)]
pub(crate) enum Content<'a> {
    #[default]
    Other,
    Text(Cow<'a, str>),
    /// (type, text) of each block that is an object.
    Blocks(Vec<Block<'a>>),
}

impl Content<'_> {
    /// pi's `extractTextContent`, as `catalog::content_text` computes it from a `Value`.
    pub fn text(&self) -> String {
        match self {
            Content::Other => String::new(),
            Content::Text(s) => s.to_string(),
            Content::Blocks(blocks) => blocks
                .iter()
                .filter(|(ty, _)| ty.as_deref() == Some("text"))
                .filter_map(|(_, text)| text.as_deref())
                .collect::<Vec<_>>()
                .join(" "),
        }
    }
}

/// The fields of one JSON object line; `None` unless the whole line is
/// valid UTF-8 holding exactly one JSON object.
pub(crate) fn top_fields(line: &[u8]) -> Option<TopFields<'_>> {
    let mut end = line.len();
    while end > 0 && matches!(line[end - 1], b'\n' | b'\r') {
        end -= 1;
    }
    // Invalid UTF-8 anywhere fails, as parsing the line into a Value would.
    let text = std::str::from_utf8(&line[..end]).ok()?;
    let mut de = serde_json::Deserializer::from_str(text);
    let fields = (&mut de).deserialize_map(TopVisitor).ok()?;
    de.end().ok()?;
    Some(fields)
}

struct TopVisitor;

impl<'de> Visitor<'de> for TopVisitor {
    type Value = TopFields<'de>;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a JSON object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut out = TopFields::default();
        while let Some(key) = map.next_key::<Cow<'de, str>>()? {
            let slot = match key.as_ref() {
                "type" => &mut out.ty,
                "id" => &mut out.id,
                "cwd" => &mut out.cwd,
                "timestamp" => &mut out.timestamp,
                "parentSession" => &mut out.parent_session,
                "name" => &mut out.name,
                "message" => {
                    out.message = map.next_value::<MaybeMessage<'de>>()?.0;
                    continue;
                }
                _ => {
                    map.next_value::<IgnoredAny>()?;
                    continue;
                }
            };
            *slot = map.next_value::<Str<'de>>()?.0;
        }
        Ok(out)
    }
}

/// Any JSON value; read only when it is an object.
struct MaybeMessage<'a>(Option<Message<'a>>);

impl<'de> Deserialize<'de> for MaybeMessage<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(MessageVisitor)
    }
}

struct MessageVisitor;

impl<'de> Visitor<'de> for MessageVisitor {
    type Value = MaybeMessage<'de>;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a message object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut out = Message::default();
        while let Some(key) = map.next_key::<Cow<'de, str>>()? {
            match key.as_ref() {
                "role" => out.role = map.next_value::<Str<'de>>()?.0,
                "content" => out.content = map.next_value::<Content<'de>>()?,
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(MaybeMessage(Some(out)))
    }
    not_an_object!(MaybeMessage(None));
}

type Block<'a> = (Option<Cow<'a, str>>, Option<Cow<'a, str>>);

/// Any JSON value; read only when it is an object.
struct MaybeBlock<'a>(Option<Block<'a>>);

impl<'de> Deserialize<'de> for MaybeBlock<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(BlockVisitor)
    }
}

struct BlockVisitor;

impl<'de> Visitor<'de> for BlockVisitor {
    type Value = MaybeBlock<'de>;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a content block")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let (mut ty, mut text) = (None, None);
        while let Some(key) = map.next_key::<Cow<'de, str>>()? {
            match key.as_ref() {
                "type" => ty = map.next_value::<Str<'de>>()?.0,
                "text" => text = map.next_value::<Str<'de>>()?.0,
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(MaybeBlock(Some((ty, text))))
    }
    not_an_object!(MaybeBlock(None));
}

impl<'de> Deserialize<'de> for Content<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(ContentVisitor)
    }
}

struct ContentVisitor;

impl<'de> Visitor<'de> for ContentVisitor {
    type Value = Content<'de>;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("message content")
    }
    fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Self::Value, E> {
        Ok(Content::Text(Cow::Borrowed(v)))
    }
    fn visit_str<E>(self, v: &str) -> Result<Self::Value, E> {
        Ok(Content::Text(Cow::Owned(v.to_string())))
    }
    fn visit_string<E>(self, v: String) -> Result<Self::Value, E> {
        Ok(Content::Text(Cow::Owned(v)))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        let mut blocks = Vec::new();
        while let Some(block) = seq.next_element::<MaybeBlock<'de>>()? {
            blocks.extend(block.0);
        }
        Ok(Content::Blocks(blocks))
    }
    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
        drain_map(map).map(|()| Content::Other)
    }
    scalars!(Content::Other);
}

fn drain_map<'de, A: MapAccess<'de>>(mut map: A) -> Result<(), A::Error> {
    while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
    Ok(())
}

fn drain_seq<'de, A: SeqAccess<'de>>(mut seq: A) -> Result<(), A::Error> {
    while seq.next_element::<IgnoredAny>()?.is_some() {}
    Ok(())
}

/// Any JSON value; kept only when it is a string.
struct Str<'a>(Option<Cow<'a, str>>);

impl<'de> Deserialize<'de> for Str<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(StrVisitor)
    }
}

struct StrVisitor;

impl<'de> Visitor<'de> for StrVisitor {
    type Value = Str<'de>;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Self::Value, E> {
        Ok(Str(Some(Cow::Borrowed(v))))
    }
    fn visit_str<E>(self, v: &str) -> Result<Self::Value, E> {
        Ok(Str(Some(Cow::Owned(v.to_string()))))
    }
    fn visit_string<E>(self, v: String) -> Result<Self::Value, E> {
        Ok(Str(Some(Cow::Owned(v))))
    }
    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
        drain_map(map).map(|()| Str(None))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Self::Value, A::Error> {
        drain_seq(seq).map(|()| Str(None))
    }
    scalars!(Str(None));
}
