//! Taking the large strings out of a line before serde sees it.
//!
//! In sessions with screenshots and long tool outputs, nine bytes in ten are
//! base64 image data (only ever measured) and tool output (of which a head is
//! kept). serde_json would scan, unescape and copy all of them. This pass
//! walks the line's structure, measures each such string in place
//! ([`super::jsonstr`]), and gives serde a copy of the line in which each is
//! replaced by a placeholder, `[index]` into a side table (an array, because
//! that is what serde_json's byte-string mode accepts besides a string;
//! lines with an array at such a place are left alone); the `StrLen` and bounded
//! `TextField` visitors read their value from that table while the line is
//! parsed inside [`Table::with`].
//!
//! Only strings at the positions those visitors read are taken out: `data`,
//! and in tool results `text`, of the blocks of `content` (of the entry or of
//! its `message`). Anything the walk is not sure about leaves the line
//! untouched for the ordinary parse, which stays the reference behaviour.

use std::cell::RefCell;

use super::jsonstr::{self, StrError, StrScan};
use super::model::BoundedText;

/// Strings shorter than this are left to serde: taking them out would not pay.
pub(crate) const MIN_ELIDED: usize = 4096;

/// JSON nesting beyond this is left to serde (which has its own limit).
const MAX_DEPTH: usize = 64;

/// What an elided string stood for.
#[derive(Debug)]
pub(crate) enum Elided {
    /// Image data: its decoded length in bytes.
    Data(usize),
    /// Tool output, bounded as the bounded `TextField` keeps it.
    Text(BoundedText),
}

/// A line made ready for parsing: whether it looks like a tool result, and
/// what elision made of it.
pub(crate) struct Prepared {
    /// pi writes a tool result's role first: its block text is bounded.
    pub tool_result: bool,
    pub elision: Elision,
}

pub(crate) enum Elision {
    /// Nothing to take out (or the walk was unsure): parse the line as is.
    None,
    /// Parse this copy of the line inside [`Table::with`].
    Elided { line: Vec<u8>, table: Table },
    /// A string holds a raw control character: not JSON for pi either.
    Malformed,
}

/// What the walk found, reused from line to line.
pub(crate) struct Elider {
    spans: Vec<Span>,
    /// Scans of the line being read, made while its bytes were still in
    /// cache ([`Elider::progress`]), by opening quote.
    scans: Vec<Kept>,
    /// The line being read has too much besides its large strings to be
    /// walked again as it grows.
    walked_enough: bool,
    /// The number of the line `scans` belong to.
    line: u64,
    /// [`PROGRESS_MIN`], lowered by tests.
    progress_min: usize,
}

impl Default for Elider {
    fn default() -> Self {
        Elider { spans: Vec::new(), scans: Vec::new(), walked_enough: false, line: 0, progress_min: PROGRESS_MIN }
    }
}

/// A string scan made on part of a line: where the string opens, and
/// whether UTF-16 units are counted (a scan is only resumed the same way).
struct Kept {
    open: usize,
    utf16: bool,
    scan: Scanned,
}

enum Scanned {
    Done(StrScan),
    Partial(jsonstr::Partial),
}

/// A growing line is walked when it holds at least this much.
const PROGRESS_MIN: usize = 64 << 10;

/// Each walk of a growing line goes again over what is not a large string:
/// when that exceeds this, the line is left to its final walk.
const REWALK_MAX: usize = 64 << 10;

/// The elided strings of one line, by placeholder index.
#[derive(Default)]
pub(crate) struct Table(Vec<Option<Elided>>);

struct Span {
    /// Opening quote.
    open: usize,
    scan: StrScan,
    text: bool,
}

/// Where a value sits, as far as elision cares.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Place {
    Root,
    /// The value of the entry's `message`.
    Message,
    /// The value of `content` (of the entry when `in_message` is false).
    Content {
        in_message: bool,
    },
    /// An element of such a `content` array.
    Block {
        in_message: bool,
    },
    /// A block's `data`.
    Data,
    /// A block's `text`.
    Text {
        in_message: bool,
    },
    Elsewhere,
}

enum Stop {
    /// Let the ordinary parse decide.
    Unsure,
    Malformed,
}

impl From<StrError> for Stop {
    fn from(e: StrError) -> Stop {
        match e {
            StrError::ControlCharacter => Stop::Malformed,
            StrError::Unterminated | StrError::BadEscape => Stop::Unsure,
        }
    }
}

struct Walk<'l, 's> {
    s: &'l [u8],
    i: usize,
    tool_text: bool,
    spans: &'s mut Vec<Span>,
    scans: &'s mut Vec<Kept>,
    /// More of the line may follow `s`.
    growing: bool,
    /// Bytes of strings taken from `scans` rather than scanned now.
    reused: usize,
}

impl Walk<'_, '_> {
    fn ws(&mut self) {
        while matches!(self.s.get(self.i), Some(b' ' | b'\t' | b'\r' | b'\n')) {
            self.i += 1;
        }
    }

    /// The string whose opening quote is at `self.i`; leaves `self.i` after it.
    /// `utf16`: count its UTF-16 units too.
    fn string(&mut self, utf16: bool) -> Result<(usize, StrScan), Stop> {
        let open = self.i;
        let body = &self.s[open + 1..];
        let earlier = self.scans.iter().position(|k| k.open == open && k.utf16 == utf16);
        let mut partial = match earlier.map(|k| &self.scans[k].scan) {
            Some(Scanned::Done(scan)) => {
                self.reused += scan.end;
                self.i = open + 1 + scan.end + 1;
                return Ok((open, *scan));
            }
            Some(Scanned::Partial(partial)) => partial.clone(),
            None => jsonstr::Partial::default(),
        };
        self.reused += partial.scanned();
        let complete = !self.growing;
        let progress = if utf16 {
            jsonstr::scan_more::<true>(&mut partial, body, complete)
        } else {
            jsonstr::scan_more::<false>(&mut partial, body, complete)
        }?;
        let (scan, result) = match progress {
            jsonstr::Progress::Done(scan) => (Scanned::Done(scan), Ok((open, scan))),
            // Only a growing line stops here: it is walked again when longer.
            jsonstr::Progress::More => (Scanned::Partial(partial), Err(Stop::Unsure)),
        };
        let worth_keeping = match &scan {
            Scanned::Done(scan) => scan.end >= MIN_ELIDED,
            Scanned::Partial(_) => true,
        };
        if self.growing && worth_keeping {
            match earlier {
                Some(k) => self.scans[k].scan = scan,
                None => self.scans.push(Kept { open, utf16, scan }),
            }
        }
        let (open, scan) = result?;
        self.i = open + 1 + scan.end + 1;
        Ok((open, scan))
    }

    fn value(&mut self, place: Place, depth: usize) -> Result<(), Stop> {
        if depth > MAX_DEPTH {
            return Err(Stop::Unsure);
        }
        self.ws();
        match self.s.get(self.i) {
            // An array where a placeholder could go would be read as one.
            Some(b'[') if matches!(place, Place::Data | Place::Text { .. }) => Err(Stop::Unsure),
            Some(b'{') => self.object(place, depth),
            Some(b'[') => self.array(place, depth),
            Some(b'"') => {
                let text = matches!(place, Place::Text { in_message: true }) && self.tool_text;
                let (open, scan) = self.string(text)?;
                if !text && place != Place::Data {
                    return Ok(());
                }
                if scan.end >= MIN_ELIDED {
                    self.spans.push(Span { open, scan, text });
                }
                Ok(())
            }
            Some(_) => {
                // true / false / null / a number: serde checks it later.
                while !matches!(self.s.get(self.i), None | Some(b',' | b'}' | b']' | b' ' | b'\t' | b'\r' | b'\n')) {
                    self.i += 1;
                }
                Ok(())
            }
            None => Err(Stop::Unsure),
        }
    }

    fn object(&mut self, place: Place, depth: usize) -> Result<(), Stop> {
        self.i += 1;
        self.ws();
        if self.s.get(self.i) == Some(&b'}') {
            self.i += 1;
            return Ok(());
        }
        loop {
            self.ws();
            if self.s.get(self.i) != Some(&b'"') {
                return Err(Stop::Unsure);
            }
            let (open, scan) = self.string(false)?;
            let key = &self.s[open + 1..open + 1 + scan.end];
            if place != Place::Elsewhere && key.contains(&b'\\') {
                // An escaped key could spell one the walk looks for.
                return Err(Stop::Unsure);
            }
            let child = match (place, key) {
                (Place::Root, b"message") => Place::Message,
                (Place::Root, b"content") => Place::Content { in_message: false },
                (Place::Message, b"content") => Place::Content { in_message: true },
                (Place::Block { .. }, b"data") => Place::Data,
                (Place::Block { in_message }, b"text") => Place::Text { in_message },
                _ => Place::Elsewhere,
            };
            self.ws();
            if self.s.get(self.i) != Some(&b':') {
                return Err(Stop::Unsure);
            }
            self.i += 1;
            self.value(child, depth + 1)?;
            self.ws();
            match self.s.get(self.i) {
                Some(b',') => self.i += 1,
                Some(b'}') => {
                    self.i += 1;
                    return Ok(());
                }
                _ => return Err(Stop::Unsure),
            }
        }
    }

    fn array(&mut self, place: Place, depth: usize) -> Result<(), Stop> {
        self.i += 1;
        let child = match place {
            Place::Content { in_message } => Place::Block { in_message },
            _ => Place::Elsewhere,
        };
        self.ws();
        if self.s.get(self.i) == Some(&b']') {
            self.i += 1;
            return Ok(());
        }
        loop {
            self.value(child, depth + 1)?;
            self.ws();
            match self.s.get(self.i) {
                Some(b',') => self.i += 1,
                Some(b']') => {
                    self.i += 1;
                    return Ok(());
                }
                _ => return Err(Stop::Unsure),
            }
        }
    }
}

impl Elider {
    /// Walk the part of a line read so far (at least [`PROGRESS_MIN`] bytes),
    /// keeping the scans of its strings for [`Elider::prepare`]: called after
    /// each read, it measures a long string while the read's bytes are still
    /// in cache, instead of once the whole line is in.
    pub fn progress(&mut self, number: u64, partial: &[u8]) {
        self.start_line(number);
        if self.walked_enough || partial.len() < self.progress_min {
            return;
        }
        self.spans.clear();
        let tool_text = looks_like_tool_result(partial);
        let mut walk = self.walk(partial, tool_text, true);
        // Stopping where the bytes run out is the expected outcome.
        let _ = walk.value(Place::Root, 0);
        if walk.i.saturating_sub(walk.reused) > REWALK_MAX {
            self.walked_enough = true;
        }
    }

    /// An elider that walks growing lines from `progress_min` bytes on.
    #[cfg(test)]
    pub fn walking_from(progress_min: usize) -> Self {
        Elider { progress_min, ..Elider::default() }
    }

    /// Prepare line `number` of a session file.
    pub fn prepare(&mut self, number: u64, line: &[u8]) -> Prepared {
        self.start_line(number);
        let tool_result = looks_like_tool_result(line);
        let elision = self.elide(line, tool_result);
        Prepared { tool_result, elision }
    }

    /// Forget the scans of another line.
    fn start_line(&mut self, number: u64) {
        if self.line != number {
            self.line = number;
            self.scans.clear();
            self.walked_enough = false;
        }
    }

    fn walk<'l, 's>(&'s mut self, s: &'l [u8], tool_text: bool, growing: bool) -> Walk<'l, 's> {
        Walk { s, i: 0, tool_text, spans: &mut self.spans, scans: &mut self.scans, growing, reused: 0 }
    }

    /// Take the large strings out of `line`. `tool_text`: the line is
    /// expected to be a tool result, whose block text is bounded.
    fn elide(&mut self, line: &[u8], tool_text: bool) -> Elision {
        if line.len() < MIN_ELIDED {
            return Elision::None;
        }
        self.spans.clear();
        let mut walk = self.walk(line, tool_text, false);
        let walked = walk.value(Place::Root, 0).and_then(|()| {
            walk.ws();
            if walk.i == line.len() {
                Ok(())
            } else {
                Err(Stop::Unsure)
            }
        });
        match walked {
            Err(Stop::Malformed) => return Elision::Malformed,
            Err(Stop::Unsure) => return Elision::None,
            Ok(()) if self.spans.is_empty() => return Elision::None,
            Ok(()) => {}
        }
        let taken: usize = self.spans.iter().map(|s| s.scan.end + 2).sum();
        let mut out = Vec::with_capacity(line.len() - taken + self.spans.len() * 8);
        let mut table = Vec::with_capacity(self.spans.len());
        let mut copied = 0;
        for (index, span) in self.spans.iter().enumerate() {
            let body = &line[span.open + 1..span.open + 1 + span.scan.end];
            let elided = if span.text {
                Elided::Text(text_head(body, span.scan))
            } else {
                Elided::Data(span.scan.decoded_bytes)
            };
            table.push(Some(elided));
            out.extend_from_slice(&line[copied..span.open]);
            out.push(b'[');
            out.extend_from_slice(index.to_string().as_bytes());
            out.push(b']');
            copied = span.open + 1 + span.scan.end + 1;
        }
        out.extend_from_slice(&line[copied..]);
        Elision::Elided { line: out, table: Table(table) }
    }
}

/// pi writes `"message":{"role":"toolResult"` right after the scalar
/// entry fields; such lines are parsed with tool-result text bounding on.
fn looks_like_tool_result(text: &[u8]) -> bool {
    const KEY: &[u8] = b"\"message\":{\"role\":\"";
    let window = &text[..text.len().min(1024)];
    memchr::memmem::find(window, KEY).is_some_and(|i| window[i + KEY.len()..].starts_with(b"toolResult\""))
}

impl Table {
    /// Run `parse` with this table readable by [`take`] (swapped into a
    /// thread-local and back, so its allocation is reused line after line).
    pub fn with<R>(&mut self, parse: impl FnOnce() -> R) -> R {
        struct Restore<'t>(&'t mut Vec<Option<Elided>>);
        impl Drop for Restore<'_> {
            fn drop(&mut self) {
                TABLE.with(|t| std::mem::swap(&mut *t.borrow_mut(), self.0));
            }
        }
        TABLE.with(|t| std::mem::swap(&mut *t.borrow_mut(), &mut self.0));
        let _restore = Restore(&mut self.0);
        parse()
    }
}

thread_local! {
    static TABLE: RefCell<Vec<Option<Elided>>> = const { RefCell::new(Vec::new()) };
}

/// The elided string a placeholder stands for, when a line is being parsed
/// inside [`Table::with`] (taken: each is read once). `seq` is what serde
/// offers for an array; the array is consumed either way.
pub(crate) fn take<'de, A: serde::de::SeqAccess<'de>>(mut seq: A) -> Result<Option<Elided>, A::Error> {
    let first = seq.next_element::<serde_json::Value>()?;
    while seq.next_element::<serde::de::IgnoredAny>()?.is_some() {}
    let Some(index) = first.as_ref().and_then(serde_json::Value::as_u64).and_then(|i| usize::try_from(i).ok()) else {
        return Ok(None);
    };
    Ok(TABLE.with(|t| t.borrow_mut().get_mut(index).and_then(Option::take)))
}

/// The bounded form of a long tool output from its raw JSON body: only a
/// prefix is decoded (by serde, so the head is exactly what a full parse
/// keeps); the full lengths come from the scan.
fn text_head(body: &[u8], scan: StrScan) -> BoundedText {
    // Decode a prefix, doubling it until the head ends clear of its last few
    // bytes (which a cut between two halves of a surrogate pair can damage):
    // the head is then the one the whole text gives.
    const CLEAR: usize = 8;
    let mut want = 2304;
    loop {
        if want >= scan.end {
            return super::raw::bounded_bytes(&decode_prefix(body, scan.end));
        }
        let decoded = decode_prefix(body, want);
        let mut b = super::raw::bounded_bytes(&decoded);
        if b.head.len() + CLEAR <= decoded.len() {
            b.full_utf16_len = scan.utf16_units;
            b.full_bytes = scan.decoded_bytes;
            return b;
        }
        want *= 2;
    }
}

/// serde_json's byte-string decoding of `body[..cut]`, the cut moved back
/// (at most a few bytes) off a UTF-8 sequence or an escape it would split.
fn decode_prefix(body: &[u8], cut: usize) -> Vec<u8> {
    let mut cut = cut.min(body.len());
    let mut quoted = Vec::with_capacity(cut + 2);
    while cut > 0 {
        while cut > 0 && cut < body.len() && (body[cut] as i8) < -0x40 {
            cut -= 1;
        }
        quoted.clear();
        quoted.push(b'"');
        quoted.extend_from_slice(&body[..cut]);
        quoted.push(b'"');
        if let Ok(RawBytes(bytes)) = serde_json::from_slice::<RawBytes>(&quoted) {
            return bytes;
        }
        cut -= 1;
    }
    Vec::new()
}

/// A JSON string's bytes as serde_json's byte-string mode decodes them.
pub(crate) struct RawBytes(pub Vec<u8>);

impl<'de> serde::Deserialize<'de> for RawBytes {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Visit;
        impl serde::de::Visitor<'_> for Visit {
            type Value = RawBytes;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a string")
            }
            fn visit_bytes<E>(self, v: &[u8]) -> Result<RawBytes, E> {
                Ok(RawBytes(v.to_vec()))
            }
        }
        d.deserialize_bytes(Visit)
    }
}
