//! Reading a session file line by line into entries, as pi's
//! `loadEntriesFromFile` + `migrateToCurrentVersion` would see them: the one
//! place that opens session files and parses their lines, for every tier
//! (header, summary, full tree, entries appended after an offset).

use std::fs::File;
use std::path::Path;

use super::convert;
use super::entries::*;
use super::lines::{Cut, LineReader};
use super::raw::{RawBlock, RawContent, RawLine};
use super::repair::parse_line;
use super::SessionError;

/// Entry types pi writes; a headerless file whose first record has one of
/// these is a damaged pi session, anything else is not a pi session.
const PI_ENTRY_TYPES: &[&str] = &[
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

/// Open a session file for reading: the one place session files are opened
/// (regular files only, never blocking: see `regular_files`).
pub fn open_file(path: &Path) -> Result<File, SessionError> {
    regular_files::open_regular(path).map_err(|e| io_err(path, e))
}

/// Lines of an open session file from byte `offset` (a line start).
pub(crate) fn lines_from(
    path: &Path,
    file: File,
    offset: u64,
) -> Result<LineReader<File>, SessionError> {
    LineReader::from_offset(file, offset).map_err(|e| io_err(path, e))
}

pub(crate) fn is_blank(bytes: &[u8]) -> bool {
    bytes
        .iter()
        .all(|b| matches!(b, b' ' | b'\t' | b'\r' | b'\n'))
}

pub(crate) fn io_err(path: &Path, source: std::io::Error) -> SessionError {
    SessionError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// The id pi's file naming (`<timestamp>_<id>.jsonl`) gives a headerless file.
fn id_from_file_name(path: &Path) -> String {
    let stem = path
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    match stem.rsplit_once('_') {
        Some((_, id)) if !id.is_empty() => id.to_string(),
        _ => stem,
    }
}

fn header_from(raw: &RawLine<'_>) -> SessionHeader {
    let version = match raw.version.0 {
        Some(v) if v.is_finite() && v >= 1.0 => v.min(u32::MAX as f64) as u32,
        _ => 1,
    };
    SessionHeader {
        version,
        id: raw.id.string(),
        timestamp: raw.timestamp.string(),
        cwd: raw.cwd.string(),
        parent_session: raw.parent_session.owned(),
    }
}

/// The header tier: only the first JSON record is read. `Ok(None)` when the
/// file has no header but looks like a damaged pi session.
pub(crate) fn header_only(path: &Path) -> Result<Option<SessionHeader>, SessionError> {
    let mut lines = lines_from(path, open_file(path)?, 0)?;
    while let Some(line) = lines.next_line().map_err(|e| io_err(path, e))? {
        if !line.cuts.is_empty() {
            lines.read_whole().map_err(|e| io_err(path, e))?;
            continue;
        }
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
enum FirstRecord {
    /// A `session` record with an id: the header.
    Header,
    /// An id-less `session` record or a pi entry: a damaged pi session,
    /// read under a synthesized header.
    Damaged,
    /// Anything else: not a pi session file at all.
    NotASession,
}

fn first_record(raw: &RawLine<'_>) -> FirstRecord {
    match raw.ty.as_str() {
        Some("session") if raw.id.0.is_some() => FirstRecord::Header,
        Some("session") => FirstRecord::Damaged,
        Some(t) if PI_ENTRY_TYPES.contains(&t) => FirstRecord::Damaged,
        _ => FirstRecord::NotASession,
    }
}

pub(crate) const NOT_A_HEADER: &str = "its first record is not a session header";

pub(crate) fn not_a_session(path: &Path, reason: &str) -> SessionError {
    SessionError::NotASession {
        path: path.to_path_buf(),
        reason: reason.to_string(),
    }
}

/// What reading a file (or its lines after an offset) gives.
pub(crate) struct Parsed {
    /// `None` when no JSON record was read (an empty or half-written file).
    pub header: Option<SessionHeader>,
    pub entries: Vec<Entry>,
    pub warnings: Warnings,
    /// The offset after the last complete line read.
    pub offset: u64,
}

/// The full tier: every line of the file from `offset` (0: the whole file,
/// header first; a later line start: lines appended after a version 3+
/// header, each standing alone). With `complete_only`, an unterminated last
/// line (pi may still be writing it) is left for the next read.
pub(crate) fn read(
    path: &Path,
    file: File,
    offset: u64,
    complete_only: bool,
) -> Result<Parsed, SessionError> {
    let mut records = Records::new(path);
    if offset > 0 {
        records.header = Some(SessionHeader {
            version: 3,
            id: String::new(),
            timestamp: String::new(),
            cwd: String::new(),
            parent_session: None,
        });
    }
    let mut lines = lines_from(path, file, offset)?;
    while let Some(line) = lines.next_line().map_err(|e| io_err(path, e))? {
        if complete_only && !line.terminated {
            break;
        }
        if !records.take(line.text, line.terminated, line.cuts)? {
            lines.read_whole().map_err(|e| io_err(path, e))?;
        }
    }
    Ok(Parsed {
        header: records.header,
        entries: records.entries,
        warnings: records.warnings,
        offset: lines.offset(),
    })
}

/// State of the v1 → v2 migration (linear ids, parent = previous entry).
#[derive(Default)]
struct V1Ids {
    /// Id given to each parsed record, by pi's `entries` index (`None` for the header).
    by_index: Vec<Option<CompactString>>,
    prev: Option<CompactString>,
}

/// What the lines read so far made.
struct Records<'p> {
    path: &'p Path,
    warnings: Warnings,
    header: Option<SessionHeader>,
    entries: Vec<Entry>,
    v1: V1Ids,
    /// Index of the next parsed record in pi's `entries` array (header = 0).
    record_index: usize,
}

impl<'p> Records<'p> {
    fn new(path: &'p Path) -> Self {
        Records {
            path,
            warnings: Warnings::default(),
            header: None,
            entries: Vec::new(),
            v1: V1Ids::default(),
            record_index: 0,
        }
    }

    /// Take one line; `false` when it is to be read again whole (see [`cuts_bounded`]).
    fn take(&mut self, text: &[u8], terminated: bool, cuts: &[Cut]) -> Result<bool, SessionError> {
        let warnings = &mut self.warnings;
        if is_blank(text) {
            if terminated {
                warnings.blank_lines += 1;
            }
            return Ok(true);
        }
        let mut repaired = None;
        let (parsed, was_repaired) = parse_line::<RawLine<'_>>(text, &mut repaired);
        if parsed
            .as_ref()
            .is_ok_and(|raw| !cuts_bounded(raw, text, cuts))
        {
            return Ok(false);
        }
        if was_repaired {
            warnings.invalid_utf8_lines += 1;
        }
        let Ok(raw) = parsed else {
            if terminated {
                warnings.malformed_lines += 1;
            } else {
                warnings.truncated_final_line += 1;
            }
            return Ok(true);
        };
        let ty = raw.ty.as_str().unwrap_or_default();
        let v1 = &mut self.v1;
        if self.header.is_none() {
            match first_record(&raw) {
                FirstRecord::Header => {
                    self.header = Some(header_from(&raw));
                    v1.by_index.push(None);
                    self.record_index += 1;
                    return Ok(true);
                }
                FirstRecord::NotASession => return Err(not_a_session(self.path, NOT_A_HEADER)),
                FirstRecord::Damaged => {}
            }
            // A damaged pi session: keep its entries under a synthesized header.
            warnings.missing_header += 1;
            let mut synthesized = header_from(&raw);
            synthesized.id = id_from_file_name(self.path);
            synthesized.version = if ty != "session" && raw.id.0.is_none() {
                1
            } else {
                3
            };
            self.header = Some(synthesized);
            if ty == "session" {
                v1.by_index.push(None);
                self.record_index += 1;
                return Ok(true);
            }
        }
        let version = self.header.as_ref().map_or(3, |h| h.version);
        let this_index = self.record_index;
        self.record_index += 1;
        if ty == "session" {
            // pi skips further headers everywhere (`getEntries` filters them).
            if version < 2 {
                v1.by_index.push(None);
            }
            return Ok(true);
        }

        let (id, parent_id) = if version < 2 {
            let id = compact_str::format_compact!("{:08x}", this_index);
            let parent = v1.prev.replace(id.clone());
            v1.by_index.push(Some(id.clone()));
            (id, parent)
        } else {
            match raw.id.owned::<CompactString>() {
                // pi tests `parentId` for truthiness: an empty one means a root.
                Some(id) => (
                    id,
                    raw.parent_id
                        .owned()
                        .filter(|p: &CompactString| !p.is_empty()),
                ),
                None => {
                    // pi would index it under `undefined`; nothing can reference it.
                    warnings.malformed_lines += 1;
                    return Ok(true);
                }
            }
        };

        let mut kind = match convert::kind(&raw, ty, version) {
            Ok(kind @ EntryKind::Unknown { .. }) => {
                warnings.unknown_entry_types += 1;
                kind
            }
            Ok(kind) => kind,
            Err(()) => {
                // A message without a message object or with a role pi's context
                // code does not know: kept so the tree stays connected.
                warnings.unknown_entry_types += 1;
                EntryKind::Unknown {
                    entry_type: ty.to_string(),
                }
            }
        };
        if version < 2 {
            if let EntryKind::Compaction {
                first_kept_entry_id,
                ..
            } = &mut kind
            {
                if let Some(index) = raw.first_kept_entry_index.0 {
                    *first_kept_entry_id = v1_first_kept(v1, index, this_index, &id);
                }
            }
        }
        if let (EntryKind::Message(AgentMessage::ToolResult { content, .. }), false) =
            (&mut kind, cuts.is_empty())
        {
            // The kept heads of cut texts get the full lengths back.
            let texts = content.iter_mut().filter_map(|b| match b {
                Block::Text(t) => Some(t),
                _ => None,
            });
            for (t, raw) in texts.zip(tool_texts(&raw)) {
                if let Some(c) = cuts.iter().find(|c| {
                    raw.text
                        .is_some_and(|j| at(text, j.get().as_ptr()) + 1 == c.at)
                }) {
                    (t.full_utf16_len, t.full_bytes) =
                        (t.full_utf16_len + c.units, t.full_bytes + c.bytes);
                }
            }
        }
        let timestamp = convert::iso_to_ms(raw.timestamp.as_str().unwrap_or_default());
        self.entries.push(Entry {
            id,
            parent_id,
            timestamp,
            kind,
        });
        Ok(true)
    }
}

/// The offset of `p` in `line` (a huge value when it is not in it).
fn at(line: &[u8], p: *const u8) -> usize {
    (p as usize).wrapping_sub(line.as_ptr() as usize)
}

fn blocks<'r, 'a>(content: &'r Option<RawContent<'a>>) -> &'r [RawBlock<'a>] {
    match content {
        Some(RawContent::Blocks(b)) => b,
        _ => &[],
    }
}

/// The text blocks of a tool result (which `convert` keeps bounded), in order.
fn tool_texts<'r, 'a>(raw: &'r RawLine<'a>) -> impl Iterator<Item = &'r RawBlock<'a>> + Clone {
    let message = raw
        .message
        .as_ref()
        .and_then(|m| m.0.as_ref())
        .filter(|m| m.role.as_str() == Some("toolResult"));
    message
        .map_or(&[][..], |m| blocks(&m.content))
        .iter()
        .filter(|b| b.ty.as_str() == Some("text"))
}

/// Whether every string the line reader cut short is one this reader keeps
/// only a head of anyway: tool-result text or image data.
fn cuts_bounded(raw: &RawLine<'_>, line: &[u8], cuts: &[Cut]) -> bool {
    let message = raw.message.as_ref().and_then(|m| m.0.as_ref());
    let images = blocks(&raw.content)
        .iter()
        .chain(message.map_or(&[][..], |m| blocks(&m.content)));
    let bounded = images.filter_map(|b| Some(at(line, b.data.as_ref()?.0.as_ptr())));
    let texts = tool_texts(raw).filter_map(|b| Some(at(line, b.text?.get().as_ptr()) + 1));
    cuts.iter()
        .all(|c| bounded.clone().any(|a| a == c.at) || texts.clone().any(|a| a == c.at))
}

/// pi's `firstKeptEntryIndex` → `firstKeptEntryId`: an index into its parsed
/// records, resolved while ids are being assigned (later records have none yet).
fn v1_first_kept(v1: &V1Ids, index: f64, this_index: usize, own_id: &str) -> String {
    if index.fract() != 0.0 || index < 0.0 {
        return String::new();
    }
    let index = index as usize;
    if index == this_index {
        return own_id.to_string();
    }
    v1.by_index
        .get(index)
        .cloned()
        .flatten()
        .map(String::from)
        .unwrap_or_default()
}

/// Entry positions sorted by id (4 bytes an entry, where a map of cloned
/// ids took about 70): an id's entry is the last of its run, so a later
/// duplicate wins, as in pi's `byId` map.
#[derive(Debug, Clone, Default)]
pub(crate) struct IdIndex(Vec<u32>);

impl IdIndex {
    /// The position of the entry with this id.
    pub fn find(&self, entries: &[Entry], id: &str) -> Option<usize> {
        let end = self
            .0
            .partition_point(|&i| entries[i as usize].id.as_str() <= id);
        let i = *self.0.get(end.checked_sub(1)?)? as usize;
        (entries[i].id == id).then_some(i)
    }
}

/// Index by id and count the tree problems.
pub(crate) fn index_and_check(entries: &[Entry], warnings: &mut Warnings) -> IdIndex {
    let mut order: Vec<u32> = (0..entries.len() as u32).collect();
    order.sort_by(|&a, &b| {
        entries[a as usize]
            .id
            .cmp(&entries[b as usize].id)
            .then(a.cmp(&b))
    });
    warnings.duplicate_ids += order
        .windows(2)
        .filter(|w| entries[w[0] as usize].id == entries[w[1] as usize].id)
        .count() as u64;
    let by_id = IdIndex(order);
    let parent =
        |i: usize| -> Option<usize> { by_id.find(entries, entries[i].parent_id.as_deref()?) };
    for e in entries {
        if e.parent_id
            .as_deref()
            .is_some_and(|p| by_id.find(entries, p).is_none())
        {
            warnings.dangling_parents += 1;
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

    /// Lines longer than `LONG_LINE` read as whole ones do: a tool result's
    /// and an image's long strings are cut (the tool text keeps its head and
    /// full lengths), a user's text is read again whole, and a control
    /// character past the kept head still makes its line malformed.
    #[test]
    fn long_lines_read_as_whole_ones() {
        use crate::session::{bounded, Block, TOOL_TEXT_HEAD_BYTES, TOOL_TEXT_HEAD_UNITS};
        let piece = r#"plain é 日本 😀 \n \" \u00e9 \ud83d\ude00 \\u0041 "#;
        let body = piece.repeat((super::super::lines::LONG_LINE + (1 << 20)) / piece.len());
        let full: String = serde_json::from_str(&format!("\"{body}\"")).unwrap();
        let message = |id: &str, role: &str, content: String| {
            format!(
                r#"{{"type":"message","id":"{id}","parentId":null,"timestamp":"t","message":{{"role":"{role}","content":{content}}}}}"#
            )
        };
        let image = format!(
            r#"{{"type":"image","data":"{}","mimeType":"image/png"}}"#,
            "QUJD".repeat(1 << 19)
        );
        let text = [
            r#"{"type":"session","version":3,"id":"s","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/p"}"#.to_string(),
            message("t", "toolResult", format!(r#"[{{"type":"text","text":"{body}"}},{image}]"#)),
            message("u", "user", format!(r#"[{{"type":"text","text":"{body}"}}]"#)),
            message("bad", "toolResult", format!("[{{\"type\":\"text\",\"text\":\"{body}\u{1}\"}}]")),
        ]
        .join("\n")
            + "\n";
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("2026_s.jsonl");
        std::fs::write(&path, text).unwrap();
        let session = crate::session::open(&path).unwrap();
        assert_eq!(session.warnings.malformed_lines, 1);
        let kinds: Vec<&EntryKind> = session.entries.iter().map(|e| &e.kind).collect();
        let EntryKind::Message(AgentMessage::ToolResult { content, .. }) = kinds[0] else {
            panic!("{kinds:?}")
        };
        assert_eq!(
            content[0],
            Block::Text(bounded(&full, TOOL_TEXT_HEAD_UNITS, TOOL_TEXT_HEAD_BYTES))
        );
        assert_eq!(
            content[1],
            Block::Image {
                mime_type: "image/png".into()
            }
        );
        let EntryKind::Message(AgentMessage::User { content: user, .. }) = kinds[1] else {
            panic!()
        };
        assert_eq!(user[..], [Block::Text(BoundedText::whole(full.clone()))]);
        assert_eq!(kinds.len(), 2);
        let summary = crate::session::summarize(&path).unwrap();
        assert_eq!(summary.message_count, 2);
        assert_eq!(summary.first_message, Some(full));
    }

    #[test]
    fn invalid_utf8_is_repaired_like_javascript() {
        let line = b"{\"type\":\"x\",\"name\":\"a\xffb\"}";
        let mut repaired = None;
        let (parsed, was_repaired) = parse_line::<RawLine<'_>>(line, &mut repaired);
        assert!(was_repaired);
        assert_eq!(
            parsed
                .ok()
                .and_then(|l| l.name.owned::<String>())
                .as_deref(),
            Some("a\u{FFFD}b")
        );
    }
}
