//! Reading what the catalog needs from disk: session headers plus a light
//! scan (latest `session_info` name, first user message), and the few meta
//! fields used for resolution. Every path read here was listed under the
//! sessions (or meta) directory and, when it is a symlink, checked to stay
//! inside it.

use std::fs::File;
use std::io::{BufRead, BufReader, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use serde::Deserialize;
use serde_json::Value;

/// Longest first message kept in memory (chars); enough to match and preview.
const FIRST_MESSAGE_CHARS: usize = 300;
/// Longest meta summary kept in memory (bytes); the injector rereads the file.
const SUMMARY_BYTES: usize = 4096;

/// What the catalog keeps of a session file.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Light {
    pub id: String,
    pub cwd: String,
    pub created: String,
    pub parent_session: Option<String>,
    /// Latest `session_info` name; an empty name clears it, as in pi.
    pub name: Option<String>,
    pub first_message: Option<String>,
    /// Bytes consumed up to the end of the last complete line, so appends
    /// (pi only ever appends) are scanned from there.
    pub scanned_to: u64,
}

/// File identity used to decide whether to re-read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Stamp {
    pub mtime: SystemTime,
    pub len: u64,
}

impl Stamp {
    pub fn of(md: &std::fs::Metadata) -> Stamp {
        Stamp { mtime: md.modified().unwrap_or(SystemTime::UNIX_EPOCH), len: md.len() }
    }

    pub fn modified_ms(&self) -> u64 {
        self.mtime.duration_since(SystemTime::UNIX_EPOCH).map(|d| d.as_millis() as u64).unwrap_or(0)
    }
}

/// Scan a session file, continuing from `prev` when the file only grew.
/// `Ok(None)`: not a pi session file (no session header).
/// Also returns the file's stamp, taken from the open file (one `fstat`).
pub(crate) fn read_session(path: &Path, prev: Option<&Light>) -> std::io::Result<(Stamp, Option<Light>)> {
    let mut file = File::open(path)?;
    let stamp = Stamp::of(&file.metadata()?);
    let light = scan_session(file_with_prev(&mut file, prev, stamp.len)?, prev, stamp.len)?;
    Ok((stamp, light))
}

fn file_with_prev<'a>(file: &'a mut File, prev: Option<&Light>, len: u64) -> std::io::Result<&'a mut File> {
    if let Some(p) = prev.filter(|p| len >= p.scanned_to && p.scanned_to > 0) {
        file.seek(SeekFrom::Start(p.scanned_to))?;
    }
    Ok(file)
}

fn scan_session(file: &mut File, prev: Option<&Light>, len: u64) -> std::io::Result<Option<Light>> {
    let light = match prev {
        Some(p) if len >= p.scanned_to && p.scanned_to > 0 => p.clone(),
        _ => Light::default(),
    };
    let mut light = light;
    let mut reader = BufReader::with_capacity(16 * 1024, file);
    let mut line = Vec::new();
    loop {
        line.clear();
        let n = reader.read_until(b'\n', &mut line)?;
        if n == 0 {
            break;
        }
        let complete = line.last() == Some(&b'\n');
        let first = light.scanned_to == 0 && light.id.is_empty();
        if first {
            match parse_header(&line) {
                Some(h) => {
                    light.id = h.id;
                    light.cwd = h.cwd;
                    light.created = h.created;
                    light.parent_session = h.parent_session;
                }
                None => return Ok(None),
            }
        } else {
            scan_line(&line, &mut light);
        }
        // A final line without its newline may still be being written: it is
        // looked at now (idempotently) but scanned again after the next append.
        if complete {
            light.scanned_to += n as u64;
        } else {
            break;
        }
    }
    if light.id.is_empty() {
        return Ok(None);
    }
    Ok(Some(light))
}

struct Header {
    id: String,
    cwd: String,
    created: String,
    parent_session: Option<String>,
}

fn parse_header(line: &[u8]) -> Option<Header> {
    let v: Value = serde_json::from_slice(trim_line(line)).ok()?;
    if v.get("type")?.as_str()? != "session" {
        return None;
    }
    let id = v.get("id")?.as_str()?.to_string();
    if id.is_empty() {
        return None;
    }
    let s = |k: &str| v.get(k).and_then(Value::as_str).unwrap_or_default().to_string();
    let parent = v.get("parentSession").and_then(Value::as_str).filter(|p| !p.is_empty()).map(str::to_string);
    Some(Header { id, cwd: s("cwd"), created: s("timestamp"), parent_session: parent })
}

fn trim_line(line: &[u8]) -> &[u8] {
    let mut end = line.len();
    while end > 0 && matches!(line[end - 1], b'\n' | b'\r') {
        end -= 1;
    }
    &line[..end]
}

/// Parse only lines that can matter: cheap substring tests first, because a
/// cold catalog scans thousands of files.
fn scan_line(line: &[u8], light: &mut Light) {
    let Ok(text) = std::str::from_utf8(trim_line(line)) else { return };
    let info = text.contains("\"session_info\"");
    let user = light.first_message.is_none() && text.contains("\"user\"");
    if !info && !user {
        return;
    }
    let Ok(v) = serde_json::from_str::<Value>(text) else { return };
    match v.get("type").and_then(Value::as_str) {
        Some("session_info") => {
            let name = v.get("name").and_then(Value::as_str).map(str::trim).unwrap_or_default();
            light.name = (!name.is_empty()).then(|| name.to_string());
        }
        Some("message") if light.first_message.is_none() => {
            let Some(msg) = v.get("message") else { return };
            if msg.get("role").and_then(Value::as_str) != Some("user") {
                return;
            }
            let text = content_text(msg.get("content"));
            let text = text.trim();
            if !text.is_empty() {
                light.first_message = Some(text.chars().take(FIRST_MESSAGE_CHARS).collect());
            }
        }
        _ => {}
    }
}

/// pi's `extractTextContent`: a string, or the text blocks joined by spaces.
pub(crate) fn content_text(content: Option<&Value>) -> String {
    match content {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(blocks)) => blocks
            .iter()
            .filter(|b| b.get("type").and_then(Value::as_str) == Some("text"))
            .filter_map(|b| b.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join(" "),
        _ => String::new(),
    }
}

/// The meta fields used for resolution and listing.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct MetaLight {
    pub schema_version: u32,
    pub session_id: String,
    #[serde(default)]
    pub session_file: String,
    #[serde(default)]
    pub name: String,
    #[serde(default)]
    pub description: String,
    #[serde(default)]
    pub summary: String,
    #[serde(default)]
    pub tags: Vec<String>,
    #[serde(default)]
    pub cwd: String,
    #[serde(default)]
    pub created_at: String,
}

/// Read a meta file's light fields. `None` when it is corrupt or not schemaVersion 1.
/// `None` when the file cannot be opened; `(stamp, None)` when it is corrupt.
pub(crate) fn read_meta(path: &Path) -> Option<(Stamp, Option<MetaLight>)> {
    let file = File::open(path).ok()?;
    let stamp = Stamp::of(&file.metadata().ok()?);
    let mut bytes = Vec::with_capacity(stamp.len as usize + 1);
    file.take(8 * 1024 * 1024).read_to_end(&mut bytes).ok()?;
    let mut meta: MetaLight = match serde_json::from_slice(&bytes) {
        Ok(m) => m,
        Err(e) => {
            tracing::warn!("ignoring corrupt meta file {}: {e}", path.display());
            return Some((stamp, None));
        }
    };
    if meta.schema_version != crate::meta::SCHEMA_VERSION || meta.session_id.trim().is_empty() {
        tracing::warn!("ignoring meta file {} (unsupported schema or empty sessionId)", path.display());
        return Some((stamp, None));
    }
    if meta.summary.len() > SUMMARY_BYTES {
        let cut = crate::text::floor_char_boundary(&meta.summary, SUMMARY_BYTES);
        meta.summary.truncate(cut);
    }
    Some((stamp, Some(meta)))
}

/// One directory entry worth looking at.
pub(crate) enum Listed {
    Dir(PathBuf),
    /// A file and its inode: an atomic replace (write + rename) changes it,
    /// so a re-listed directory needs no `stat` for files that kept theirs.
    File(PathBuf, u64),
}

/// List a directory, following symlinks only when their target stays inside
/// `root` (canonical). Entries that cannot be checked are skipped.
pub(crate) fn list_dir(dir: &Path, root: &Path, suffix: &str) -> (Vec<Listed>, bool) {
    let Ok(rd) = std::fs::read_dir(dir) else { return (Vec::new(), false) };
    let mut out = Vec::new();
    for de in rd.flatten() {
        let Ok(ft) = de.file_type() else { continue };
        let path = de.path();
        let is_dir = if ft.is_symlink() {
            match std::fs::canonicalize(&path) {
                Ok(target) if target.starts_with(root) => target.is_dir(),
                _ => continue,
            }
        } else {
            ft.is_dir()
        };
        if is_dir {
            out.push(Listed::Dir(path));
        } else if path.file_name().and_then(|n| n.to_str()).is_some_and(|n| n.ends_with(suffix)) {
            out.push(Listed::File(path, inode(&de)));
        }
    }
    (out, true)
}

#[cfg(unix)]
fn inode(de: &std::fs::DirEntry) -> u64 {
    std::os::unix::fs::DirEntryExt::ino(de)
}

/// 0 means unknown: such files are compared by `stat` instead.
#[cfg(not(unix))]
fn inode(_de: &std::fs::DirEntry) -> u64 {
    0
}

/// Open a session file for reading only if it really lies inside the
/// sessions directory (symlinks resolved). The one way features read a
/// resolved session.
pub fn open_inside(sessions_dir: &Path, path: &Path) -> std::io::Result<File> {
    let root = std::fs::canonicalize(sessions_dir)?;
    let real = std::fs::canonicalize(path)?;
    if !real.starts_with(&root) || real == root {
        return Err(std::io::Error::new(
            std::io::ErrorKind::PermissionDenied,
            format!("{} is outside the sessions directory", path.display()),
        ));
    }
    File::open(real)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scans_header_name_and_first_message_incrementally() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("s.jsonl");
        let head = "{\"type\":\"session\",\"version\":3,\"id\":\"abc\",\"timestamp\":\"2026-01-01T00:00:00Z\",\"cwd\":\"/p\"}\n\
             {\"type\":\"message\",\"id\":\"1\",\"parentId\":null,\"message\":{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"hello there\"}]}}\n";
        std::fs::write(&p, head).unwrap();
        let a = read_session(&p, None).unwrap().1.unwrap();
        assert_eq!((a.id.as_str(), a.first_message.as_deref(), a.name.as_deref()), ("abc", Some("hello there"), None));
        assert_eq!(a.scanned_to, head.len() as u64);
        let more = "{\"type\":\"session_info\",\"id\":\"2\",\"parentId\":\"1\",\"name\":\"  Auth work \"}\n";
        std::fs::write(&p, format!("{head}{more}")).unwrap();
        let b = read_session(&p, Some(&a)).unwrap().1.unwrap();
        assert_eq!(b.name.as_deref(), Some("Auth work"));
        assert_eq!(b.first_message.as_deref(), Some("hello there"));
    }

    #[test]
    fn non_session_files_are_rejected() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("x.jsonl");
        std::fs::write(&p, "{\"createSurface\":{}}\n").unwrap();
        assert_eq!(read_session(&p, None).unwrap().1, None);
    }
}
