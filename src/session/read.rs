//! Reading a session file line by line into entries, as pi's
//! `loadEntriesFromFile` + `migrateToCurrentVersion` would see them: the one
//! place that opens session files and parses their lines, for every tier
//! (header, summary, full tree, entries appended after an offset).

use std::collections::VecDeque;
use std::fs::File;
use std::path::Path;

use super::convert::{self, Cleaning};
use super::entries::*;
use super::lines::{Cut, Line, LineReader, Skipped};
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
        id: convert::string(&raw.id),
        timestamp: convert::string(&raw.timestamp),
        cwd: convert::string(&raw.cwd),
        parent_session: raw.parent_session.as_str().map(convert::head_of),
    }
}

/// The header tier: only the first JSON record is read. `Ok(None)` when the
/// file has no header but looks like a damaged pi session.
pub(crate) fn header_only(path: &Path) -> Result<Option<SessionHeader>, SessionError> {
    let mut lines = lines_from(path, open_file(path)?, 0)?;
    while let Some(line) = lines.next_line().map_err(|e| io_err(path, e))? {
        if line.skipped.is_some() || is_blank(line.text) {
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
    /// Where each entry's line starts in the file.
    pub lines: Vec<u64>,
    pub warnings: Warnings,
    /// The offset after the last complete line read.
    pub offset: u64,
}

/// The full tier: every line of the file from `offset` (0: the whole file,
/// header first; a later line start: lines appended after a version 3+
/// header, each standing alone). With `complete_only`, an unterminated last
/// line (pi may still be writing it) is left for the next read. Lines that
/// start at or after `until` are not read.
pub(crate) fn read(
    path: &Path,
    file: File,
    offset: u64,
    until: Option<u64>,
    complete_only: bool,
) -> Result<Parsed, SessionError> {
    let records = Records::new(path, MAX_ENTRIES, Cleaning::Cleaned);
    read_into(records, file, offset, until, complete_only, None)
}

/// What [`read_where`] does with a line after the header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pick {
    Parse,
    /// No parse, no entry.
    Skip,
    /// This line and the rest are not read.
    Stop,
}

/// Which lines [`read_where`] reads and parses, told from each line's start
/// and JSON text (as the line reader holds it: long strings cut), and what
/// is made of them: a search's snippets decide what to read next from what
/// they have read.
pub trait LinePicker {
    /// Where the next line worth reading starts, at or after `offset` (where
    /// the last line read ended); `None`: no more. The lines before it are
    /// passed over unread.
    fn next_start(&mut self, offset: u64) -> Option<u64>;
    fn pick(&mut self, start: u64, line: &[u8]) -> Pick;
    /// The entry that the line starting at `start` gave.
    fn taken(&mut self, start: u64, entry: &Entry);
}

/// Bytes read at a time by [`read_where`]: it reads a few lines picked out
/// of a file (a search's snippets: the texts of a shown session's ~16 KB
/// chunk, amid tool output), so a smaller read passes over less of what lies
/// past the last one than the full tier's 256 KiB.
const PICKED_READ_SIZE: usize = 32 << 10;

/// [`read`] from `offset` > 0 (a line after the header) up to `until`,
/// complete lines only, reading only from where `keep` says the next line
/// worth it starts, parsing only the lines it picks: the others give no
/// entry and cost no parse.
pub(crate) fn read_where(
    path: &Path,
    file: File,
    offset: u64,
    until: u64,
    keep: &mut dyn LinePicker,
    cleaning: Cleaning,
) -> Result<Parsed, SessionError> {
    let keep = (offset > 0).then_some(keep);
    let records = Records::new(path, MAX_ENTRIES, cleaning);
    read_into(records, file, offset, Some(until), true, keep)
}

/// [`read`] into `records` (which holds at most so many entries, the
/// newest, and cleans their texts or not), and of the lines after the
/// header only those `keep` picks, when given.
fn read_into(
    mut records: Records<'_>,
    file: File,
    offset: u64,
    until: Option<u64>,
    complete_only: bool,
    mut keep: Option<&mut dyn LinePicker>,
) -> Result<Parsed, SessionError> {
    let path = records.path;
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
    if keep.is_some() {
        lines = lines.with_read_size(PICKED_READ_SIZE);
    }
    let mut starts = VecDeque::new();
    while until.is_none_or(|until| lines.offset() < until) {
        if let Some(keep) = keep.as_mut() {
            let Some(next) = keep.next_start(lines.offset()) else {
                break;
            };
            let next = next.max(lines.offset());
            if until.is_some_and(|until| next >= until) {
                break;
            }
            lines.skip_to(next).map_err(|e| io_err(path, e))?;
        }
        // This line starts where the last ended, or where `keep` skipped to.
        let start = lines.offset();
        let Some(line) = lines.next_line().map_err(|e| io_err(path, e))? else {
            break;
        };
        if complete_only && !line.terminated {
            break;
        }
        let pick = match keep.as_mut() {
            Some(keep) if line.skipped.is_none() => keep.pick(start, line.text),
            _ => Pick::Parse,
        };
        match pick {
            Pick::Stop => break,
            Pick::Skip if records.header.is_some() => continue,
            _ => {}
        }
        let (held, not_kept) = (records.entries.len(), records.warnings.entries_not_kept);
        records.take(&line)?;
        // An entry taken: its line's start, in step with the entries held.
        let dropped = records.warnings.entries_not_kept > not_kept;
        if dropped {
            starts.pop_front();
        }
        if dropped || records.entries.len() > held {
            starts.push_back(start);
            if let (Some(keep), Some(entry)) = (keep.as_mut(), records.entries.back()) {
                keep.taken(start, entry);
            }
        }
    }
    Ok(Parsed {
        header: records.header,
        entries: Vec::from(records.entries),
        lines: Vec::from(starts),
        warnings: records.warnings,
        offset: lines.offset(),
    })
}

/// Entries held of one session at most: of a longer one, the newest (its
/// default branch ends there) and a count of the others
/// ([`Warnings::entries_not_kept`]). Each entry is at most 128 bytes plus its
/// texts' heads, so a session of millions of entries is read in bounded
/// memory; pi sessions in real use hold thousands.
pub const MAX_ENTRIES: usize = 200_000;

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
    entries: VecDeque<Entry>,
    /// Entries held at most ([`MAX_ENTRIES`]).
    max_entries: usize,
    v1: V1Ids,
    /// Index of the next parsed record in pi's `entries` array (header = 0).
    record_index: usize,
    /// What is done to the texts of the entries.
    cleaning: Cleaning,
}

impl<'p> Records<'p> {
    fn new(path: &'p Path, max_entries: usize, cleaning: Cleaning) -> Self {
        Records {
            path,
            cleaning,
            warnings: Warnings::default(),
            header: None,
            entries: VecDeque::new(),
            max_entries,
            v1: V1Ids::default(),
            record_index: 0,
        }
    }

    /// Take one line: skip what cannot be read, settle the header with the
    /// first record, and keep every other record as an entry.
    fn take(&mut self, line: &Line<'_>) -> Result<(), SessionError> {
        if !self.readable(line) {
            return Ok(());
        }
        let mut repaired = None;
        let Some(raw) = self.parse(line, &mut repaired) else {
            return Ok(());
        };
        if self.header.is_none() && self.take_first_record(&raw)? == Consumed::Yes {
            return Ok(());
        }
        let this_index = self.record_index;
        self.record_index += 1;
        if raw.ty.as_str() == Some("session") {
            // pi skips further headers everywhere (`getEntries` filters them).
            if self.version() < 2 {
                self.v1.by_index.push(None);
            }
            return Ok(());
        }
        let Some((id, parent_id)) = self.ids(&raw, this_index) else {
            // pi would index it under `undefined`; nothing can reference it.
            self.warnings.malformed_lines += 1;
            return Ok(());
        };
        let kind = self.kind(&raw, line, this_index, &id);
        let timestamp = convert::iso_to_ms(raw.timestamp.as_str().unwrap_or_default());
        self.push(Entry {
            id,
            parent_id,
            timestamp,
            kind,
        });
        Ok(())
    }

    /// Whether the line reader gave a line to parse; the others are counted.
    fn readable(&mut self, line: &Line<'_>) -> bool {
        let warnings = &mut self.warnings;
        match line.skipped {
            Some(Skipped::Oversized) => warnings.oversized_lines += 1,
            Some(Skipped::Invalid) if line.terminated => warnings.malformed_lines += 1,
            Some(Skipped::Invalid) => warnings.truncated_final_line += 1,
            None if is_blank(line.text) => {
                if line.terminated {
                    warnings.blank_lines += 1;
                }
            }
            None => return true,
        }
        false
    }

    /// The line's JSON record (invalid UTF-8 repaired into `repaired`), or
    /// `None`, counted, when it is not JSON.
    fn parse<'l>(
        &mut self,
        line: &'l Line<'_>,
        repaired: &'l mut Option<String>,
    ) -> Option<RawLine<'l>> {
        let (parsed, was_repaired) = parse_line::<RawLine<'_>>(line.text, repaired);
        if was_repaired {
            self.warnings.invalid_utf8_lines += 1;
        }
        match parsed {
            Ok(raw) => Some(raw),
            Err(_) if line.terminated => {
                self.warnings.malformed_lines += 1;
                None
            }
            Err(_) => {
                self.warnings.truncated_final_line += 1;
                None
            }
        }
    }

    /// The first record settles the header: it is the header, or the file
    /// is a damaged pi session read under a synthesized one (the record
    /// itself is then an entry, unless it is an id-less `session` record),
    /// or it is not a pi session at all.
    fn take_first_record(&mut self, raw: &RawLine<'_>) -> Result<Consumed, SessionError> {
        let ty = raw.ty.as_str().unwrap_or_default();
        match first_record(raw) {
            FirstRecord::Header => {
                self.header = Some(header_from(raw));
            }
            FirstRecord::NotASession => return Err(not_a_session(self.path, NOT_A_HEADER)),
            FirstRecord::Damaged => {
                self.warnings.missing_header += 1;
                let mut synthesized = header_from(raw);
                synthesized.id = id_from_file_name(self.path);
                synthesized.version = if ty != "session" && raw.id.0.is_none() {
                    1
                } else {
                    3
                };
                self.header = Some(synthesized);
                if ty != "session" {
                    return Ok(Consumed::No);
                }
            }
        }
        self.v1.by_index.push(None);
        self.record_index += 1;
        Ok(Consumed::Yes)
    }

    /// The session's format version (3 until a header says otherwise).
    fn version(&self) -> u32 {
        self.header.as_ref().map_or(3, |h| h.version)
    }

    /// The entry's id and parent: given in the record (version 2 and later),
    /// or made linear by the v1 migration. `None` for a record without an id.
    fn ids(
        &mut self,
        raw: &RawLine<'_>,
        this_index: usize,
    ) -> Option<(CompactString, Option<CompactString>)> {
        if self.version() < 2 {
            let id = compact_str::format_compact!("{:08x}", this_index);
            let parent = self.v1.prev.replace(id.clone());
            self.v1.by_index.push(Some(id.clone()));
            return Some((id, parent));
        }
        let id = raw.id.as_str().map(convert::head_of::<CompactString>)?;
        // pi tests `parentId` for truthiness: an empty one means a root.
        let parent = raw
            .parent_id
            .as_str()
            .map(convert::head_of)
            .filter(|p: &CompactString| !p.is_empty());
        Some((id, parent))
    }

    /// What the entry is, with the v1 compaction's kept entry resolved and
    /// the full lengths of texts the line reader cut recorded.
    fn kind(
        &mut self,
        raw: &RawLine<'_>,
        line: &Line<'_>,
        this_index: usize,
        id: &str,
    ) -> EntryKind {
        let ty = raw.ty.as_str().unwrap_or_default();
        let mut kind = match convert::kind(raw, ty, self.version(), self.cleaning) {
            Ok(kind @ EntryKind::Unknown { .. }) => {
                self.warnings.unknown_entry_types += 1;
                kind
            }
            Ok(kind) => kind,
            Err(()) => {
                // A message without a message object or with a role pi's context
                // code does not know: kept so the tree stays connected.
                self.warnings.unknown_entry_types += 1;
                EntryKind::Unknown {
                    entry_type: ty.to_string(),
                }
            }
        };
        if self.version() < 2 {
            if let EntryKind::Compaction {
                first_kept_entry_id,
                ..
            } = &mut kind
            {
                if let Some(index) = raw.first_kept_entry_index.0 {
                    *first_kept_entry_id = v1_first_kept(&self.v1, index, this_index, id);
                }
            }
        }
        if !line.cuts.is_empty() {
            self.warnings.cut_texts += record_cuts(&mut kind, raw, line.text, line.cuts);
        }
        kind
    }

    /// Hold the entry; past [`MAX_ENTRIES`] the oldest goes (a branch is
    /// read from its newest entries back) and is counted.
    fn push(&mut self, entry: Entry) {
        if self.entries.len() == self.max_entries {
            self.entries.pop_front();
            self.warnings.entries_not_kept += 1;
        }
        self.entries.push_back(entry);
    }
}

/// Whether taking the first record consumed it (as the header) or left it
/// to be taken as an entry.
#[derive(PartialEq, Eq)]
enum Consumed {
    Yes,
    No,
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

/// Where the text of each text block of a line's content (a message's, or
/// a custom message entry's) starts in `line`, in the order `convert` keeps
/// them as [`Block::Text`] (a content that is one string is one block).
fn text_starts(raw: &RawLine<'_>, line: &[u8], cuts: &[Cut]) -> Vec<usize> {
    let message = raw.message.as_ref().and_then(|m| m.0.as_ref());
    let content = message.map_or(&raw.content, |m| &m.content);
    match content {
        Some(RawContent::Blocks(blocks)) => blocks
            .iter()
            .filter(|b| b.ty.as_str() == Some("text"))
            .map(|b| {
                b.text
                    .map_or(usize::MAX, |j| at(line, j.get().as_ptr()) + 1)
            })
            .collect(),
        // A string content, borrowed or (with escapes) decoded: the cut string it is.
        Some(RawContent::Text(text)) => cuts
            .iter()
            .find(|c| string_at(line, c.at).as_deref() == Some(&**text))
            .map(|c| c.at)
            .into_iter()
            .collect(),
        _ => Vec::new(),
    }
}

/// The JSON string whose text starts at `at` in `line`, decoded.
fn string_at(line: &[u8], at: usize) -> Option<String> {
    let mut strings = serde_json::Deserializer::from_slice(line.get(at.checked_sub(1)?..)?);
    serde::Deserialize::deserialize(&mut strings).ok()
}

/// The kept text blocks of an entry, in the order of [`text_starts`].
fn kept_texts(kind: &mut EntryKind) -> Vec<&mut BoundedText> {
    let content: &mut [Block] = match kind {
        EntryKind::Message(
            AgentMessage::User { content, .. } | AgentMessage::Assistant { content, .. },
        ) => content,
        EntryKind::Message(
            AgentMessage::ToolResult { content, .. } | AgentMessage::Custom { content, .. },
        )
        | EntryKind::CustomMessage { content, .. } => content,
        _ => &mut [],
    };
    content
        .iter_mut()
        .filter_map(|b| match b {
            Block::Text(t) => Some(t),
            _ => None,
        })
        .collect()
}

/// Give the text blocks the line reader cut their full lengths back (each
/// keeps its head: see `convert`), and count the texts cut (image data,
/// never kept, is not counted).
fn record_cuts(kind: &mut EntryKind, raw: &RawLine<'_>, line: &[u8], cuts: &[Cut]) -> u64 {
    let message = raw.message.as_ref().and_then(|m| m.0.as_ref());
    let images: Vec<usize> = blocks(&raw.content)
        .iter()
        .chain(message.map_or(&[][..], |m| blocks(&m.content)))
        .filter_map(|b| Some(at(line, b.data.as_ref()?.0.as_ptr())))
        .collect();
    let starts = text_starts(raw, line, cuts);
    for (t, start) in kept_texts(kind).into_iter().zip(starts) {
        if let Some(c) = cuts.iter().find(|c| c.at == start) {
            (t.full_utf16_len, t.full_bytes) = (t.full_utf16_len + c.units, t.full_bytes + c.bytes);
        }
    }
    cuts.iter().filter(|c| !images.contains(&c.at)).count() as u64
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

    /// Lines longer than `LONG_LINE` are cut as they are read, never held
    /// whole: a tool result's, a user's and an image's long strings keep a
    /// head (the texts their full lengths), and a control character past the
    /// kept head still makes its line malformed.
    #[test]
    fn long_lines_are_cut_and_texts_keep_their_full_lengths() {
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
        let [Block::Text(user)] = &user[..] else {
            panic!("one text block")
        };
        assert!(full.starts_with(user.head.as_str()));
        let head = user.head.len();
        assert!(
            head > 32_000 && head <= crate::session::MESSAGE_TEXT_HEAD_BYTES,
            "{head}"
        );
        assert_eq!(
            (user.full_bytes, user.full_utf16_len),
            (full.len(), crate::session::utf16_len(&full))
        );
        assert!(user
            .shown()
            .ends_with(&format!("[... {} more bytes not read]", full.len() - head)));
        assert_eq!(kinds.len(), 2);
        assert_eq!(session.warnings.cut_texts, 2, "the tool and user texts");
        let summary = crate::session::summarize(&path).unwrap();
        assert_eq!(summary.message_count, 2);
        let first = summary.first_message.unwrap();
        assert!(first.len() <= crate::session::MESSAGE_TEXT_HEAD_BYTES && full.starts_with(&first));
    }

    /// Of a session longer than the reader holds, the newest entries are
    /// kept (the default branch is read back from the last one), the others counted.
    #[test]
    fn the_newest_entries_are_held() {
        let mut lines = vec![
            r#"{"type":"session","version":3,"id":"s","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/p"}"#.to_string(),
        ];
        for i in 0..25 {
            let parent = if i == 0 {
                "null".to_string()
            } else {
                format!("\"e{}\"", i - 1)
            };
            lines.push(format!(r#"{{"type":"message","id":"e{i}","parentId":{parent},"timestamp":"t","message":{{"role":"user","content":"m{i}"}}}}"#));
        }
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("2026_s.jsonl");
        std::fs::write(&path, lines.join("\n") + "\n").unwrap();
        let records = Records::new(&path, 10, Cleaning::Cleaned);
        let parsed = read_into(records, open_file(&path).unwrap(), 0, None, false, None).unwrap();
        let ids: Vec<&str> = parsed.entries.iter().map(|e| e.id.as_str()).collect();
        assert_eq!(ids, (15..25).map(|i| format!("e{i}")).collect::<Vec<_>>());
        assert_eq!(parsed.warnings.entries_not_kept, 15);
    }

    /// A text on a line short enough to be read whole keeps a head too, and
    /// every other string of an entry is bounded, however long its line.
    #[test]
    fn every_kept_string_is_bounded() {
        use crate::session::{MESSAGE_TEXT_HEAD_BYTES, STRING_HEAD_BYTES};
        // Each line stays under `LONG_LINE`, so it is read whole and cut by `convert`.
        let long = "x".repeat(MESSAGE_TEXT_HEAD_BYTES + MESSAGE_TEXT_HEAD_BYTES / 2);
        let lines = [
            r#"{"type":"session","version":3,"id":"s","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/p"}"#.to_string(),
            format!(r#"{{"type":"message","id":"u","parentId":null,"timestamp":"t","message":{{"role":"user","content":"{long}"}}}}"#),
            format!(r#"{{"type":"message","id":"a","parentId":"u","timestamp":"t","message":{{"role":"assistant","content":[{{"type":"thinking","thinking":"{long}"}},{{"type":"toolCall","name":"write","arguments":{{"path":"p","content":"{long}"}}}}]}}}}"#),
            format!(r#"{{"type":"session_info","id":"n","parentId":"a","timestamp":"t","name":"{long}"}}"#),
        ];
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("2026_s.jsonl");
        std::fs::write(&path, lines.join("\n") + "\n").unwrap();
        let session = crate::session::open(&path).unwrap();
        let EntryKind::Message(AgentMessage::User { content, .. }) = &session.entries[0].kind
        else {
            panic!()
        };
        let Block::Text(text) = &content[0] else {
            panic!()
        };
        assert_eq!(
            (text.head.len(), text.full_bytes),
            (MESSAGE_TEXT_HEAD_BYTES, long.len())
        );
        let EntryKind::Message(AgentMessage::Assistant { content, .. }) = &session.entries[1].kind
        else {
            panic!()
        };
        let Block::Thinking(thinking) = &content[0] else {
            panic!()
        };
        assert_eq!(thinking.len(), STRING_HEAD_BYTES);
        let Block::ToolCall { arguments, .. } = &content[1] else {
            panic!()
        };
        let written = arguments["content"].as_str().unwrap();
        assert!(
            written.starts_with(&long[..STRING_HEAD_BYTES])
                && written.ends_with("more bytes not read]")
        );
        assert_eq!(arguments["path"], "p");
        let name = session.session_name(&[]).unwrap();
        assert_eq!(name.len(), STRING_HEAD_BYTES);
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
