//! Streaming a session file line by line into entries, as pi's
//! `loadEntriesFromFile` + `migrateToCurrentVersion` would see them.

use std::collections::HashMap;
use std::path::Path;

use super::elide::{Elision, Prepared};
use super::lines::LineReader;
use super::model::*;
use super::raw::RawLine;
use super::SessionError;

/// Entry types pi writes; a headerless file whose first record has one of
/// these is a damaged pi session, anything else is not a pi session.
pub(super) const PI_ENTRY_TYPES: &[&str] = &[
    "message",
    "thinking_level_change",
    "model_change",
    "compaction",
    "branch_summary",
    "custom",
    "custom_message",
    "label",
    "session_info",
];

/// Parse one line. pi decodes the file as UTF-8 with replacement characters,
/// so invalid bytes damage only the strings they are in: on a parse failure
/// caused by them, the line is repaired the same way and parsed again. (Bytes
/// in fields nobody reads, such as image data, are never validated.) The
/// second value tells whether invalid UTF-8 was repaired.
///
/// JavaScript also accepts lone surrogate escapes (`"\ud83d"`, e.g. from a
/// string cut inside an emoji), which serde rejects; they become `\ufffd`:
/// one UTF-16 unit like the surrogate, and the same bytes once pi writes the
/// text as UTF-8.
pub(crate) fn parse_line<'b, T: serde::Deserialize<'b>>(
    text: &'b [u8],
    repaired: &'b mut Option<String>,
) -> (Result<T, serde_json::Error>, bool) {
    let err = match serde_json::from_slice::<T>(text) {
        Ok(v) => return (Ok(v), false),
        Err(e) => e,
    };
    let (mut fixed, bad_utf8) = match std::str::from_utf8(text) {
        Ok(t) => (std::borrow::Cow::Borrowed(t), false),
        Err(_) => (String::from_utf8_lossy(text), true),
    };
    if let Some(f) = replace_lone_surrogates(&fixed) {
        fixed = std::borrow::Cow::Owned(f);
    } else if !bad_utf8 {
        return (Err(err), false);
    }
    let fixed = repaired.insert(fixed.into_owned());
    (serde_json::from_str::<T>(fixed), bad_utf8)
}

/// [`parse_line`] for an entry line, with two fast paths. Long lines are
/// parsed with their image data and tool output taken out and measured
/// ([`Prepared`]). Otherwise, tool results are parsed with their (often long)
/// text measured while parsing, never copied whole. Whenever a fast path
/// fails, the slower one decides.
pub(super) fn parse_entry<'b>(
    text: &'b [u8],
    prepared: &'b mut Prepared,
    repaired: &'b mut Option<String>,
) -> (Result<RawLine<'b>, serde_json::Error>, bool) {
    let tool_result = prepared.tool_result;
    match &mut prepared.elision {
        Elision::Malformed => return (Err(serde::de::Error::custom("raw control character in a string")), false),
        Elision::Elided { line, table } => {
            if let Some(line) = table.with(|| parse_guessed(line, tool_result)) {
                return (Ok(line), false);
            }
        }
        Elision::None => {}
    }
    parse_plain(text, tool_result, repaired)
}

/// [`parse_entry`] without elision.
fn parse_plain<'b>(
    text: &'b [u8],
    tool_result: bool,
    repaired: &'b mut Option<String>,
) -> (Result<RawLine<'b>, serde_json::Error>, bool) {
    if tool_result {
        if let Some(line) = parse_guessed(text, true) {
            return (Ok(line), false);
        }
    }
    parse_line::<RawLine<'_>>(text, repaired)
}

/// Parse `line`, with tool-result text bounding on when `tool_result`; such
/// a guess must be confirmed by the parsed role.
fn parse_guessed(line: &[u8], tool_result: bool) -> Option<RawLine<'_>> {
    if !tool_result {
        return serde_json::from_slice::<RawLine<'_>>(line).ok();
    }
    let parsed = super::raw::bounded_text_scope(|| serde_json::from_slice::<RawLine<'_>>(line)).ok()?;
    let role = parsed.message.as_ref().and_then(|m| m.0.as_ref()).and_then(|m| m.role.as_str());
    (role == Some("toolResult")).then_some(parsed)
}

fn hex4(b: &[u8]) -> Option<u16> {
    let s = std::str::from_utf8(b.get(..4)?).ok()?;
    u16::from_str_radix(s, 16).ok()
}

/// `text` with every unpaired `\uD800`–`\uDFFF` escape replaced by `\ufffd`;
/// `None` when there is none.
pub(crate) fn replace_lone_surrogates(text: &str) -> Option<String> {
    let b = text.as_bytes();
    memchr::memmem::find(b, b"\\u")?;
    let mut out: Option<String> = None;
    let mut copied = 0;
    let mut i = 0;
    while let Some(off) = memchr::memchr(b'\\', &b[i..]) {
        let at = i + off;
        if b.get(at + 1) != Some(&b'u') {
            i = at + 2;
            continue;
        }
        let Some(n) = hex4(&b[(at + 2).min(b.len())..]) else {
            i = at + 2;
            continue;
        };
        let paired = (0xD800..0xDC00).contains(&n)
            && b.get(at + 6) == Some(&b'\\')
            && b.get(at + 7) == Some(&b'u')
            && hex4(&b[(at + 8).min(b.len())..]).is_some_and(|m| (0xDC00..0xE000).contains(&m));
        if paired {
            i = at + 12;
        } else if (0xD800..0xE000).contains(&n) {
            let o = out.get_or_insert_with(|| String::with_capacity(text.len()));
            o.push_str(&text[copied..at]);
            o.push_str("\\ufffd");
            copied = at + 6;
            i = at + 6;
        } else {
            i = at + 6;
        }
        if i >= b.len() {
            break;
        }
    }
    let mut o = out?;
    o.push_str(&text[copied..]);
    Some(o)
}

pub(crate) fn is_blank(bytes: &[u8]) -> bool {
    bytes.iter().all(|b| matches!(b, b' ' | b'\t' | b'\r' | b'\n'))
}

pub(super) fn io_err(path: &Path, source: std::io::Error) -> SessionError {
    SessionError::Io { path: path.to_path_buf(), source }
}

/// The id pi's file naming (`<timestamp>_<id>.jsonl`) gives a headerless file.
pub(super) fn id_from_file_name(path: &Path) -> String {
    let stem = path.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
    match stem.rsplit_once('_') {
        Some((_, id)) if !id.is_empty() => id.to_string(),
        _ => stem,
    }
}

pub(super) fn header_from(raw: &RawLine<'_>) -> SessionHeader {
    let version = match raw.version.0 {
        Some(v) if v.is_finite() && v >= 1.0 => v.min(u32::MAX as f64) as u32,
        Some(_) => 1,
        None => 1,
    };
    SessionHeader {
        version,
        id: raw.id.string(),
        timestamp: raw.timestamp.string(),
        cwd: raw.cwd.string(),
        parent_session: raw.parent_session.owned(),
    }
}

/// Read only the header (the first JSON record); `Ok(None)` when the file has
/// no header but looks like a damaged pi session.
pub(crate) fn header_only(path: &Path) -> Result<Option<SessionHeader>, SessionError> {
    let file = regular_files::open_regular(path).map_err(|e| io_err(path, e))?;
    let mut lines = LineReader::new(file);
    while let Some(line) = lines.next_line().map_err(|e| io_err(path, e))? {
        if is_blank(line.text) {
            continue;
        }
        let mut repaired = None;
        let Ok(raw) = parse_line::<RawLine<'_>>(line.text, &mut repaired).0 else {
            continue;
        };
        return match first_record(&raw) {
            FirstRecord::Header => Ok(Some(header_from(&raw))),
            FirstRecord::Damaged => Ok(None),
            FirstRecord::NotASession => Err(not_a_session(path, NOT_A_HEADER)),
        };
    }
    Err(not_a_session(path, "no JSON records"))
}

/// What a file's first JSON record makes of it.
pub(crate) enum FirstRecord {
    /// A `session` record with an id: the header.
    Header,
    /// An id-less `session` record or a pi entry: a damaged pi session,
    /// read under a synthesized header.
    Damaged,
    /// Anything else: not a pi session file at all.
    NotASession,
}

pub(crate) fn first_record(raw: &RawLine<'_>) -> FirstRecord {
    match raw.ty.as_str() {
        Some("session") if raw.id.0.is_some() => FirstRecord::Header,
        Some("session") => FirstRecord::Damaged,
        Some(t) if PI_ENTRY_TYPES.contains(&t) => FirstRecord::Damaged,
        _ => FirstRecord::NotASession,
    }
}

pub(crate) const NOT_A_HEADER: &str = "its first record is not a session header";

pub(crate) fn not_a_session(path: &Path, reason: &str) -> SessionError {
    SessionError::NotASession { path: path.to_path_buf(), reason: reason.to_string() }
}

/// Index by id (later duplicates win, as in pi's `byId` map) and the tree problems.
pub(crate) fn index_and_check(entries: &[Entry], warnings: &mut Warnings) -> HashMap<String, usize> {
    let mut by_id: HashMap<String, usize> = HashMap::with_capacity(entries.len());
    for (i, e) in entries.iter().enumerate() {
        if by_id.insert(e.id.clone(), i).is_some() {
            warnings.duplicate_ids += 1;
        }
    }
    let parent = |i: usize| -> Option<usize> { entries[i].parent_id.as_ref().and_then(|p| by_id.get(p).copied()) };
    for e in entries {
        if let Some(p) = &e.parent_id {
            if !by_id.contains_key(p) {
                warnings.dangling_parents += 1;
            }
        }
    }
    // 0 = unvisited, 1 = on the current walk, 2 = done.
    let mut state = vec![0u8; entries.len()];
    let mut walk = Vec::new();
    for start in 0..entries.len() {
        walk.clear();
        let mut cur = Some(start);
        while let Some(i) = cur {
            match state[i] {
                0 => {
                    state[i] = 1;
                    walk.push(i);
                    cur = parent(i);
                }
                1 => {
                    warnings.cyclic_parents += 1;
                    break;
                }
                _ => break,
            }
        }
        for &i in &walk {
            state[i] = 2;
        }
    }
    by_id
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::session::convert;
    use crate::session::elide::Elider;

    #[test]
    fn lone_surrogate_escapes_become_replacement_characters() {
        let line = r#"{"type":"x","name":"a\ud83d|\ud83d\ude00|\ude00|\\ud83d|\u0041"}"#;
        let mut repaired = None;
        let (parsed, bad_utf8) = parse_line::<RawLine<'_>>(line.as_bytes(), &mut repaired);
        assert!(!bad_utf8);
        let name = parsed.ok().and_then(|l| l.name.owned());
        assert_eq!(name.as_deref(), Some("a\u{FFFD}|😀|\u{FFFD}|\\ud83d|A"));
        assert_eq!(replace_lone_surrogates(r#""ok \u00e9""#), None);
        assert_eq!(replace_lone_surrogates(r#""\ud800""#).as_deref(), Some(r#""\ufffd""#));
    }

    fn kind_of(raw: RawLine<'_>) -> Option<EntryKind> {
        let ty = raw.ty.as_str().unwrap_or_default().to_string();
        convert::kind(&raw, &ty, 3).ok()
    }

    /// Entry kinds from the fast (elided) parse and the plain one.
    fn both_parses(line: &[u8]) -> (Option<EntryKind>, Option<EntryKind>) {
        let mut prepared = Elider::default().prepare(1, line);
        let tool_result = prepared.tool_result;
        let (mut r1, mut r2) = (None, None);
        let fast = parse_entry(line, &mut prepared, &mut r1).0.ok().and_then(kind_of);
        let plain = parse_plain(line, tool_result, &mut r2).0.ok().and_then(kind_of);
        (fast, plain)
    }

    /// The entry kind from the fast parse of a line walked as it grew by
    /// `step` bytes at a time (with the same elider reused from line to line).
    fn grown_parse(elider: &mut Elider, number: u64, line: &[u8], step: usize) -> Option<EntryKind> {
        let mut seen = 0;
        while seen < line.len() {
            elider.progress(number, &line[..seen]);
            seen += step;
        }
        let mut prepared = elider.prepare(number, line);
        let mut repaired = None;
        parse_entry(line, &mut prepared, &mut repaired).0.ok().and_then(kind_of)
    }

    /// Random JSON string bodies from pieces that stress the scanner and the head cut.
    fn bodies() -> Vec<Vec<u8>> {
        let pieces: &[&[u8]] = &[
            b"abc ",
            b"\\n",
            b"\\\"",
            b"\\\\",
            "\u{e9}".as_bytes(),
            "\u{65e5}\u{672c}".as_bytes(),
            "\u{1F600}".as_bytes(),
            b"\\ud83d\\ude00",
            b"\\ud83d",
            b"\\u00e9",
            b"\\u0001",
            b"\xff",
            b"\\/",
        ];
        let mut next = crate::text::xorshift(0x9E37_79B9_7F4A_7C15);
        let mut out = Vec::new();
        for target in [4095, 4096, 5000, 8191, 8192, 8200, 9000, 16_500, 70_000] {
            for _ in 0..6 {
                let mut body = Vec::new();
                while body.len() < target {
                    body.extend_from_slice(pieces[(next() % pieces.len() as u64) as usize]);
                }
                out.push(body);
            }
        }
        // Plain ASCII, where the head is cut by its UTF-16 unit limit.
        out.push(b"x".repeat(9000));
        out
    }

    #[test]
    fn elided_and_plain_parses_agree() {
        let head = r#"{"type":"message","id":"e1","parentId":null,"timestamp":"2026-01-01T00:00:00.000Z","message":"#;
        let base64 = "QUJD".repeat(2000);
        let mut lines: Vec<Vec<u8>> = Vec::new();
        for body in bodies() {
            let body = String::from_utf8_lossy(&body).into_owned();
            // Tool results: one or two text blocks and an image, pretty-printed or not.
            lines.push(format!(r#"{head}{{"role":"toolResult","toolCallId":"t","toolName":"bash","content":[{{"type":"text","text":"{body}"}}],"isError":false,"timestamp":1}}}}"#).into_bytes());
            lines.push(format!(r#"{head}{{"role":"toolResult","toolCallId":"t","toolName":"read","content":[{{"type":"text","text":"{body}"}}, {{ "type" : "image" , "data" : "{base64}", "mimeType":"image/png"}},{{"type":"text","text":"short"}}],"details":{{"message":{{"content":[{{"text":"{body}"}}]}}}},"timestamp":1}}}}"#).into_bytes());
            // A user message: its text stays whole, its image is measured.
            lines.push(format!(r#"{head}{{"role":"user","content":[{{"type":"text","text":"{body}"}},{{"type":"image","data":"{base64}","mimeType":"image/png"}}],"timestamp":1}}}}"#).into_bytes());
        }
        // The invalid bytes `bodies` may hold, raw.
        lines.push(
            [
                head.as_bytes(),
                br#"{"role":"toolResult","content":[{"type":"text","text":"a"#,
                &b"\xff".repeat(5000),
                br#""}]}}"#,
            ]
            .concat(),
        );
        // An entry's own content (custom_message) with an image.
        lines.push(format!(r#"{{"type":"custom_message","id":"c","parentId":null,"timestamp":"t","customType":"x","content":[{{"type":"image","data":"{base64}","mimeType":"image/png"}}],"display":true}}"#).into_bytes());
        // Places the walk must leave to serde: an array as data, an escaped key, a number as text.
        lines.push(format!(r#"{head}{{"role":"user","content":[{{"type":"image","data":[1],"mimeType":"image/png","pad":"{base64}"}}]}}}}"#).into_bytes());
        lines.push(
            format!(
                r#"{head}{{"role":"user","content":[{{"type":"image","data":"{base64}","mimeType":"image/png"}}]}}}}"#
            )
            .into_bytes(),
        );
        lines.push(
            format!(r#"{head}{{"role":"toolResult","content":[{{"type":"text","text":7,"pad":"{base64}"}}]}}}}"#)
                .into_bytes(),
        );
        // Not a tool result after all, though it starts like one.
        lines.push(
            format!(r#"{head}{{"role":"toolResult","role":"user","content":[{{"type":"text","text":"{base64}"}}]}}}}"#)
                .into_bytes(),
        );
        // Damage: a truncated line and trailing garbage.
        lines.push(format!(r#"{head}{{"role":"toolResult","content":[{{"type":"text","text":"{base64}"#).into_bytes());
        lines.push(
            format!(r#"{head}{{"role":"toolResult","content":[{{"type":"text","text":"{base64}"}}]}}}} x"#)
                .into_bytes(),
        );

        // Much besides the large string: walked only until that is too much to walk again.
        let many = format!(r#"{{"k":"{}"}},"#, "v".repeat(40)).repeat(3000);
        lines.push(format!(r#"{head}{{"role":"toolResult","details":[{many}{{}}],"content":[{{"type":"text","text":"{base64}"}}]}}}}"#).into_bytes());

        let mut fast_paths = 0;
        let mut grown = Elider::walking_from(1);
        for (number, line) in (1u64..).zip(&lines) {
            if matches!(Elider::default().prepare(1, line).elision, Elision::Elided { .. }) {
                fast_paths += 1;
            }
            let (fast, plain) = both_parses(line);
            let shown = String::from_utf8_lossy(&line[..line.len().min(200)]);
            assert_eq!(fast, plain, "{shown}");
            // Walked as it is read, in steps that cut escapes and blocks anywhere.
            for (k, step) in (0..).zip([257, 4096]) {
                assert_eq!(grown_parse(&mut grown, number * 4 + k, line, step), plain, "step {step}: {shown}");
            }
        }
        assert!(fast_paths >= 150, "only {fast_paths} of {} lines took the fast path", lines.len());
    }

    #[test]
    fn raw_control_characters_make_a_line_malformed_as_in_javascript() {
        let text = format!("{}\t{}", "a".repeat(3000), "b".repeat(3000)).replace("\\t", "\t");
        let line = format!(
            r#"{{"type":"message","id":"e1","parentId":null,"message":{{"role":"toolResult","content":[{{"type":"text","text":"{text}"}}]}}}}"#
        );
        assert!(line.contains('\t'));
        let (fast, _) = both_parses(line.as_bytes());
        assert_eq!(fast, None);
    }

    #[test]
    fn invalid_utf8_is_repaired_like_javascript() {
        let line = b"{\"type\":\"x\",\"name\":\"a\xffb\"}";
        let mut repaired = None;
        let (parsed, was_repaired) = parse_line::<RawLine<'_>>(line, &mut repaired);
        assert!(was_repaired);
        assert_eq!(parsed.ok().and_then(|l| l.name.owned()).as_deref(), Some("a\u{FFFD}b"));
    }
}
