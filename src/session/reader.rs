//! Streaming a session file line by line into entries, as pi's
//! `loadEntriesFromFile` + `migrateToCurrentVersion` would see them.

use std::borrow::Cow;
use std::collections::HashMap;
use std::fs::File;
use std::io::{BufRead, BufReader};
use std::path::Path;

use super::convert;
use super::model::*;
use super::raw::RawLine;
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

/// One physical line of a file with its diagnostics.
pub(crate) struct Line<'b> {
    pub number: u64,
    /// The line, without its newline; lossily repaired when it was not UTF-8.
    pub text: Cow<'b, [u8]>,
    pub terminated: bool,
    pub invalid_utf8: bool,
}

/// Reads lines with one reusable buffer, so memory is bounded by the longest line.
pub(crate) struct LineReader<R> {
    inner: R,
    buf: Vec<u8>,
    number: u64,
}

impl<R: BufRead> LineReader<R> {
    pub fn new(inner: R) -> Self {
        LineReader { inner, buf: Vec::with_capacity(64 * 1024), number: 0 }
    }

    pub fn next_line(&mut self) -> std::io::Result<Option<Line<'_>>> {
        self.buf.clear();
        if self.inner.read_until(b'\n', &mut self.buf)? == 0 {
            return Ok(None);
        }
        self.number += 1;
        let terminated = self.buf.last() == Some(&b'\n');
        let mut bytes: &[u8] = &self.buf;
        if terminated {
            bytes = &bytes[..bytes.len() - 1];
        }
        if self.number == 1 {
            // JavaScript's trim() drops a leading BOM, so pi reads such files.
            bytes = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes);
        }
        // pi decodes the file as UTF-8 with replacement characters, so a bad
        // byte damages only the string it is in, never the line.
        let (text, invalid_utf8) = match std::str::from_utf8(bytes) {
            Ok(_) => (Cow::Borrowed(bytes), false),
            Err(_) => (Cow::Owned(String::from_utf8_lossy(bytes).into_owned().into_bytes()), true),
        };
        Ok(Some(Line { number: self.number, text, terminated, invalid_utf8 }))
    }
}

pub(crate) fn is_blank(bytes: &[u8]) -> bool {
    bytes.iter().all(|b| matches!(b, b' ' | b'\t' | b'\r' | b'\n'))
}

fn io_err(path: &Path, source: std::io::Error) -> SessionError {
    SessionError::Io { path: path.to_path_buf(), source }
}

/// The id pi's file naming (`<timestamp>_<id>.jsonl`) gives a headerless file.
fn id_from_file_name(path: &Path) -> String {
    let stem = path.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
    match stem.rsplit_once('_') {
        Some((_, id)) if !id.is_empty() => id.to_string(),
        _ => stem,
    }
}

fn header_from(raw: &RawLine<'_>) -> SessionHeader {
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

/// State of the v1 → v2 migration (linear ids, parent = previous entry).
#[derive(Default)]
struct V1Ids {
    /// Id given to each parsed record, by pi's `entries` index (`None` for the header).
    by_index: Vec<Option<String>>,
    prev: Option<String>,
}

pub(crate) struct Parsed {
    pub header: SessionHeader,
    pub entries: Vec<Entry>,
    pub warnings: Warnings,
}

/// Read only the header (the first JSON record); `Ok(None)` when the file has
/// no header but looks like a damaged pi session.
pub(crate) fn header_only(path: &Path) -> Result<Option<SessionHeader>, SessionError> {
    let file = File::open(path).map_err(|e| io_err(path, e))?;
    let mut lines = LineReader::new(BufReader::new(file));
    while let Some(line) = lines.next_line().map_err(|e| io_err(path, e))? {
        if is_blank(&line.text) {
            continue;
        }
        let Ok(raw) = serde_json::from_slice::<RawLine<'_>>(&line.text) else {
            continue;
        };
        return match raw.ty.as_str() {
            Some("session") if raw.id.0.is_some() => Ok(Some(header_from(&raw))),
            Some("session") => Ok(None),
            Some(t) if PI_ENTRY_TYPES.contains(&t) => Ok(None),
            _ => Err(not_a_session(path, "its first record is not a session header")),
        };
    }
    Err(not_a_session(path, "no JSON records"))
}

pub(crate) fn not_a_session(path: &Path, reason: &str) -> SessionError {
    SessionError::NotASession { path: path.to_path_buf(), reason: reason.to_string() }
}

pub(crate) fn read(path: &Path) -> Result<Parsed, SessionError> {
    let file = File::open(path).map_err(|e| io_err(path, e))?;
    let mut lines = LineReader::new(BufReader::with_capacity(256 * 1024, file));
    let mut warnings = Warnings::default();
    let mut header: Option<SessionHeader> = None;
    let mut entries: Vec<Entry> = Vec::new();
    let mut v1 = V1Ids::default();
    // Index of the next parsed record in pi's `entries` array (header = 0).
    let mut record_index = 0usize;

    while let Some(line) = lines.next_line().map_err(|e| io_err(path, e))? {
        if line.invalid_utf8 {
            warnings.invalid_utf8_lines += 1;
        }
        if is_blank(&line.text) {
            if line.terminated {
                warnings.blank_lines += 1;
            }
            continue;
        }
        let raw = match serde_json::from_slice::<RawLine<'_>>(&line.text) {
            Ok(raw) => raw,
            Err(_) => {
                if line.terminated {
                    warnings.malformed_lines += 1;
                } else {
                    warnings.truncated_final_line += 1;
                }
                continue;
            }
        };
        let ty = raw.ty.as_str().unwrap_or_default();
        if header.is_none() {
            if ty == "session" && raw.id.0.is_some() {
                header = Some(header_from(&raw));
                v1.by_index.push(None);
                record_index += 1;
                continue;
            }
            if ty != "session" && !PI_ENTRY_TYPES.contains(&ty) {
                return Err(not_a_session(path, "its first record is not a session header"));
            }
            // A damaged pi session: keep its entries under a synthesized header.
            warnings.missing_header += 1;
            let mut synthesized = header_from(&raw);
            synthesized.id = id_from_file_name(path);
            synthesized.version = if ty != "session" && raw.id.0.is_none() { 1 } else { 3 };
            header = Some(synthesized);
            if ty == "session" {
                v1.by_index.push(None);
                record_index += 1;
                continue;
            }
        }
        let version = header.as_ref().map_or(3, |h| h.version);
        let this_index = record_index;
        record_index += 1;
        if ty == "session" {
            // pi skips further headers everywhere (`getEntries` filters them).
            if version < 2 {
                v1.by_index.push(None);
            }
            continue;
        }

        let (id, parent_id) = if version < 2 {
            let id = format!("{:08x}", this_index);
            let parent = v1.prev.replace(id.clone());
            v1.by_index.push(Some(id.clone()));
            (id, parent)
        } else {
            match raw.id.owned() {
                Some(id) => (id, raw.parent_id.owned()),
                None => {
                    // pi would index it under `undefined`; nothing can reference it.
                    warnings.malformed_lines += 1;
                    continue;
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
                EntryKind::Unknown { entry_type: ty.to_string() }
            }
        };
        if version < 2 {
            if let EntryKind::Compaction { first_kept_entry_id, .. } = &mut kind {
                if let Some(index) = raw.first_kept_entry_index.0 {
                    *first_kept_entry_id = v1_first_kept(&v1, index, this_index, &id);
                }
            }
        }
        entries.push(Entry { id, parent_id, timestamp: raw.timestamp.string(), line: line.number, kind });
    }

    let header = header.ok_or_else(|| not_a_session(path, "no JSON records"))?;
    Ok(Parsed { header, entries, warnings })
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
    v1.by_index.get(index).cloned().flatten().unwrap_or_default()
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
