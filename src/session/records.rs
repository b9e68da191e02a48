//! From lines to entries: the per-line state of a read (header, v1 ids,
//! warnings), and reading a large file as two halves on two threads.
//!
//! Once a file's header says version 3 or later, a line's entry depends on
//! that line alone (before 3, ids are made up in order or old roles renamed), so the second half of a large file can be read on a
//! second thread while the first thread reads the first half (both halves
//! measured as two processes on the 2-vCPU bench machine: each ran at the
//! speed of one alone). When the first half does not end with such a header
//! known (a v1 or v2 file, a damaged start), its reading simply goes on into the
//! second half and the other thread's work is dropped: the result is always
//! that of one reader going through the file.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::Path;

use super::convert;
use super::elide::Elider;
use super::lines::LineReader;
use super::model::*;
use super::reader::{
    first_record, header_from, id_from_file_name, io_err, is_blank, not_a_session, parse_entry, FirstRecord,
    NOT_A_HEADER,
};
use super::SessionError;

/// What reading a whole file gives.
pub(crate) struct Parsed {
    pub header: SessionHeader,
    pub entries: Vec<Entry>,
    pub warnings: Warnings,
}

/// Files from this size on are read in two halves (when two threads are to
/// be had): below it a thread costs more than half the read saves.
const SPLIT_MIN: u64 = 8 << 20;

pub(crate) fn read(path: &Path) -> Result<Parsed, SessionError> {
    let file = regular_files::open_regular(path).map_err(|e| io_err(path, e))?;
    let len = file.metadata().map_err(|e| io_err(path, e))?.len();
    let cut = if len >= SPLIT_MIN && crate::threads::cpus() >= 2 {
        line_start_after(&file, len / 2).map_err(|e| io_err(path, e))?
    } else {
        None
    };
    read_parts(path, file, cut)
}

/// The offset just after the first newline at or after `from`, if a line
/// starts there (none when the rest of the file is one line). Leaves `file`
/// at its start again.
fn line_start_after(mut file: &File, from: u64) -> std::io::Result<Option<u64>> {
    file.seek(SeekFrom::Start(from))?;
    let mut buf = vec![0u8; 64 << 10];
    let mut at = from;
    let cut = loop {
        let n = match file.read(&mut buf) {
            Ok(0) => break None,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if let Some(i) = memchr::memchr(b'\n', &buf[..n]) {
            break Some(at + i as u64 + 1);
        }
        at += n as u64;
    };
    file.seek(SeekFrom::Start(0))?;
    Ok(cut)
}

/// Read the file, the part from `cut` on (a line start) on a second thread.
pub(crate) fn read_parts(path: &Path, file: File, cut: Option<u64>) -> Result<Parsed, SessionError> {
    let Some(cut) = cut else {
        let mut records = Records::new(path);
        records.take_all(LineReader::new(file))?;
        return records.finish();
    };
    let rest = |lines_before: u64| -> Result<LineReader<File>, SessionError> {
        let mut file = regular_files::open_regular(path).map_err(|e| io_err(path, e))?;
        file.seek(SeekFrom::Start(cut)).map_err(|e| io_err(path, e))?;
        Ok(LineReader::continuing(file, lines_before))
    };
    let (mut first, lines, second) = std::thread::scope(|s| {
        let second = std::thread::Builder::new()
            .spawn_scoped(s, || -> Result<Records<'_>, SessionError> {
                // Lines after a version 3+ header, numbered from 1 here and
                // renumbered when joined.
                let mut records = Records::after_header(path);
                records.take_all(rest(0)?)?;
                Ok(records)
            })
            .ok();
        let mut first = Records::new(path);
        let lines = first.take_all(LineReader::new(file.take(cut)));
        (first, lines, second.and_then(|h| h.join().ok()))
    });
    let lines = lines?;
    let header_fits = first.header.as_ref().is_some_and(|h| h.version >= 3);
    match second {
        Some(Ok(second)) if header_fits => first.join(second, lines),
        Some(Err(e)) if header_fits => return Err(e),
        // The second half was not read after the header this file has (or
        // its thread could not run): one reader goes on through it.
        _ => {
            first.take_all(rest(lines)?)?;
        }
    }
    first.finish()
}

/// The entries of the complete (newline-terminated) lines from byte `from`
/// on, and the offset just after the last of them: an unterminated last line
/// may still be being written, so it is left for the next call. `from` is 0
/// (the header is read too) or an offset this returned for a version 3+ file,
/// whose lines stand alone.
pub(crate) fn read_complete(path: &Path, from: u64) -> Result<(Parsed, u64), SessionError> {
    let mut file = regular_files::open_regular(path).map_err(|e| io_err(path, e))?;
    let mut end = from;
    if from == 0 {
        // The reader drops a leading BOM from the first line; count its bytes here.
        let mut bom = [0u8; 3];
        if file.read_exact(&mut bom).is_ok() && bom == *b"\xEF\xBB\xBF" {
            end = 3;
        }
    }
    file.seek(SeekFrom::Start(from)).map_err(|e| io_err(path, e))?;
    let (mut records, mut lines) = if from == 0 {
        (Records::new(path), LineReader::new(file))
    } else {
        (Records::after_header(path), LineReader::continuing(file, 0))
    };
    loop {
        let elider = &mut records.elider;
        let next = lines.next_line_observed(|number, partial| elider.progress(number, partial));
        match next.map_err(|e| io_err(path, e))? {
            Some(line) if line.terminated => {
                end += line.text.len() as u64 + 1;
                records.take(line.number, line.text, true)?;
            }
            _ => break,
        }
    }
    if records.header.is_none() {
        // Nothing complete yet (an empty or half-written file).
        return Ok((Parsed { header: dummy_header(), entries: Vec::new(), warnings: records.warnings }, from));
    }
    Ok((records.finish()?, end))
}

fn dummy_header() -> SessionHeader {
    SessionHeader { id: String::new(), version: 3, timestamp: String::new(), cwd: String::new(), parent_session: None }
}

/// State of the v1 → v2 migration (linear ids, parent = previous entry).
#[derive(Default)]
struct V1Ids {
    /// Id given to each parsed record, by pi's `entries` index (`None` for the header).
    by_index: Vec<Option<String>>,
    prev: Option<String>,
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
    elider: Elider,
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
            elider: Elider::default(),
        }
    }

    /// For lines that follow a version 3+ header (the second half of a file).
    fn after_header(path: &'p Path) -> Self {
        Records { header: Some(dummy_header()), ..Records::new(path) }
    }

    /// Take every line of `lines`; returns the number of the last one.
    fn take_all<R: Read>(&mut self, mut lines: LineReader<R>) -> Result<u64, SessionError> {
        let path = self.path;
        loop {
            let elider = &mut self.elider;
            let next = lines.next_line_observed(|number, partial| elider.progress(number, partial));
            match next.map_err(|e| io_err(path, e))? {
                Some(line) => self.take(line.number, line.text, line.terminated)?,
                None => return Ok(lines.last_number()),
            }
        }
    }

    /// Append what a second reader made of the lines after the `lines` first ones.
    fn join(&mut self, second: Records<'_>, lines: u64) {
        self.warnings.add(&second.warnings);
        self.entries.reserve_exact(second.entries.len());
        self.entries.extend(second.entries.into_iter().map(|e| Entry { line: e.line + lines, ..e }));
    }

    fn finish(self) -> Result<Parsed, SessionError> {
        let header = self.header.ok_or_else(|| not_a_session(self.path, "no JSON records"))?;
        Ok(Parsed { header, entries: self.entries, warnings: self.warnings })
    }

    fn take(&mut self, number: u64, text: &[u8], terminated: bool) -> Result<(), SessionError> {
        let warnings = &mut self.warnings;
        if is_blank(text) {
            if terminated {
                warnings.blank_lines += 1;
            }
            return Ok(());
        }
        let mut repaired = None;
        let mut prepared = self.elider.prepare(number, text);
        let (parsed, was_repaired) = parse_entry(text, &mut prepared, &mut repaired);
        if was_repaired {
            warnings.invalid_utf8_lines += 1;
        }
        let raw = match parsed {
            Ok(raw) => raw,
            Err(_) => {
                if terminated {
                    warnings.malformed_lines += 1;
                } else {
                    warnings.truncated_final_line += 1;
                }
                return Ok(());
            }
        };
        let ty = raw.ty.as_str().unwrap_or_default();
        let v1 = &mut self.v1;
        if self.header.is_none() {
            match first_record(&raw) {
                FirstRecord::Header => {
                    self.header = Some(header_from(&raw));
                    v1.by_index.push(None);
                    self.record_index += 1;
                    return Ok(());
                }
                FirstRecord::NotASession => return Err(not_a_session(self.path, NOT_A_HEADER)),
                FirstRecord::Damaged => {}
            }
            // A damaged pi session: keep its entries under a synthesized header.
            warnings.missing_header += 1;
            let mut synthesized = header_from(&raw);
            synthesized.id = id_from_file_name(self.path);
            synthesized.version = if ty != "session" && raw.id.0.is_none() { 1 } else { 3 };
            self.header = Some(synthesized);
            if ty == "session" {
                v1.by_index.push(None);
                self.record_index += 1;
                return Ok(());
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
            return Ok(());
        }

        let (id, parent_id) = if version < 2 {
            let id = format!("{:08x}", this_index);
            let parent = v1.prev.replace(id.clone());
            v1.by_index.push(Some(id.clone()));
            (id, parent)
        } else {
            match raw.id.owned() {
                // pi tests `parentId` for truthiness: an empty one means a root.
                Some(id) => (id, raw.parent_id.owned().filter(|p| !p.is_empty())),
                None => {
                    // pi would index it under `undefined`; nothing can reference it.
                    warnings.malformed_lines += 1;
                    return Ok(());
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
                    *first_kept_entry_id = v1_first_kept(v1, index, this_index, &id);
                }
            }
        }
        self.entries.push(Entry { id, parent_id, timestamp: raw.timestamp.string(), line: number, kind });
        Ok(())
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    type Outcome = Result<(SessionHeader, Vec<Entry>, Warnings), String>;

    fn outcome(path: &Path, cut: Option<u64>) -> Outcome {
        let file = File::open(path).map_err(|e| e.to_string())?;
        read_parts(path, file, cut).map(|p| (p.header, p.entries, p.warnings)).map_err(|e| e.to_string())
    }

    /// Files the split must not change: every kind of damage and version.
    fn written(dir: &Path) -> Vec<std::path::PathBuf> {
        let head = r#"{"type":"session","version":3,"id":"s1","timestamp":"t","cwd":"/p"}"#;
        let message = |id: &str, parent: &str, role: &str, text: &str| {
            format!(
                r#"{{"type":"message","id":"{id}","parentId":"{parent}","timestamp":"t","message":{{"role":"{role}","content":[{{"type":"text","text":"{text}"}}],"toolCallId":"c","toolName":"bash","timestamp":1}}}}"#
            )
        };
        let long = "line of output\\n".repeat(6000);
        let v3 = [
            format!("\u{feff}{head}"),
            message("a", "", "user", "hello"),
            String::new(),
            message("b", "a", "toolResult", &long),
            "{not json".to_string(),
            format!("\u{feff}{}", message("c", "b", "assistant", "a BOM mid-file: malformed, as in pi")),
            message("d", "b", "toolResult", &long),
            r#"{"type":"mystery","id":"e","parentId":"d","timestamp":"t"}"#.to_string(),
            head.to_string(),
            message("f", "e", "assistant", "after a second header"),
            message("g", "f", "toolResult", &long),
            message("h", "g", "user", "last"),
            r#"{"type":"message","id":"i","parentId":"h","message":{"role":"user","content":"cut sh"#.to_string(),
        ];
        let v1 = [
            r#"{"type":"session","id":"v1","timestamp":"t","cwd":"/p"}"#.to_string(),
            r#"{"type":"message","timestamp":"t","message":{"role":"user","content":"one"}}"#.to_string(),
            r#"{"type":"message","timestamp":"t","message":{"role":"assistant","content":[{"type":"text","text":"two"}]}}"#.to_string(),
            r#"{"type":"compaction","timestamp":"t","summary":"s","firstKeptEntryIndex":2,"tokensBefore":1}"#.to_string(),
            r#"{"type":"message","timestamp":"t","message":{"role":"user","content":"three"}}"#.to_string(),
            r#"{"type":"message","timestamp":"t","message":{"role":"user","content":"four"}}"#.to_string(),
        ];
        let headerless_v1: Vec<String> = v1[1..].to_vec();
        let headerless_v3: Vec<String> = v3[1..].to_vec();
        let not_pi = ["{\"a\":1}".to_string(), "{\"b\":2}".to_string()];
        let garbage_first = ["nonsense".to_string(), head.to_string(), message("a", "", "user", "x")];
        let files: [(&str, &[String]); 6] = [
            ("v3.jsonl", &v3),
            ("v1.jsonl", &v1),
            ("headerless-v1.jsonl", &headerless_v1),
            ("headerless-v3.jsonl", &headerless_v3),
            ("not-pi.jsonl", &not_pi),
            ("garbage-first.jsonl", &garbage_first),
        ];
        files
            .iter()
            .map(|(name, lines)| {
                let path = dir.join(name);
                std::fs::write(&path, lines.join("\n")).expect("write a test file");
                path
            })
            .collect()
    }

    /// Reading from any line start on a second thread gives what one reader
    /// gives: entries, line numbers, header, warnings and errors.
    #[test]
    fn two_halves_read_as_one() {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let mut files = written(dir.path());
        let bundled = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/sessions");
        files.extend(crate::session::discovery::jsonl_files(&bundled, &bundled));
        if let Some(shared) = crate::shared_dir::find_shared_dir() {
            for set in ["real", "generated"] {
                let dir = shared.join("fixtures/pi-sessions").join(set);
                files.extend(crate::session::discovery::jsonl_files(&dir, &dir));
            }
        }
        let mut split_reads = 0;
        for path in &files {
            let bytes = std::fs::read(path).expect("read a test file");
            let starts: Vec<u64> = (0..bytes.len()).filter(|&i| bytes[i] == b'\n').map(|i| i as u64 + 1).collect();
            // Every line start of small files, 30 spread over bigger ones.
            let step = starts.len().div_ceil(30).max(1);
            let whole = outcome(path, None);
            for &cut in starts.iter().step_by(step) {
                assert_eq!(outcome(path, Some(cut)), whole, "{} cut at byte {cut}", path.display());
                split_reads += 1;
            }
        }
        assert!(split_reads > 200, "only {split_reads} split reads");
    }

    /// A file large enough to be split: the cut is found on the open file,
    /// which is then read from its start (the same result as one reader).
    #[test]
    fn a_large_file_reads_as_one_reader_reads_it() {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let path = dir.path().join("large.jsonl");
        let mut text = String::from(r#"{"type":"session","version":3,"id":"big","timestamp":"t","cwd":"/p"}"#);
        let mut parent = String::new();
        let mut i = 0;
        while text.len() < SPLIT_MIN as usize + (1 << 20) {
            let body = "x".repeat(900);
            text.push_str(&format!(
                "\n{{\"type\":\"message\",\"id\":\"m{i}\",\"parentId\":\"{parent}\",\"timestamp\":\"t\",\"message\":{{\"role\":\"user\",\"content\":\"{body} {i}\"}}}}"
            ));
            parent = format!("m{i}");
            i += 1;
        }
        std::fs::write(&path, text).expect("write the large file");
        let read = |p: Parsed| (p.header, p.entries, p.warnings);
        let split = read(super::read(&path).expect("a split read"));
        assert_eq!(Ok(split.clone()), outcome(&path, None));
        assert_eq!(split.1.len(), i);
    }
}
