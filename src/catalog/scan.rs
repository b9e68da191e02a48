//! Reading what the catalog needs from disk (the light scan of session files
//! is in `light`): the few meta fields used for resolution, directory
//! listings, and the one checked way to open a resolved session. Every path
//! read here was listed under the sessions (or meta) directory and, when it
//! is a symlink, checked to stay inside it.

use std::fs::File;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use serde::Deserialize;
use serde_json::Value;

/// Longest meta summary kept in memory (bytes); the injector rereads the file.
const SUMMARY_BYTES: usize = 4096;

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
    let mut file = regular_files::open_regular(path).ok()?;
    let stamp = Stamp::of(&file.metadata().ok()?);
    let mut bytes = META_BUF.with(|b| b.take());
    let read = read_all(&mut file, stamp.len, META_MAX, &mut bytes);
    let parsed = read.ok().map(|()| serde_json::from_slice::<MetaLight>(&bytes));
    if bytes.capacity() <= 4 * KEEP_META_BUF {
        META_BUF.with(|b| b.set(bytes));
    }
    let mut meta = match parsed? {
        Ok(m) => m,
        Err(e) => {
            tracing::warn!("ignoring corrupt meta file {}: {e}", path.display());
            return Some((stamp, None));
        }
    };
    if meta.schema_version < crate::meta::SCHEMA_VERSION || meta.session_id.trim().is_empty() {
        tracing::warn!("ignoring meta file {} (unsupported schema or empty sessionId)", path.display());
        return Some((stamp, None));
    }
    if meta.summary.len() > SUMMARY_BYTES {
        let cut = crate::text::floor_char_boundary(&meta.summary, SUMMARY_BYTES);
        meta.summary.truncate(cut);
    }
    Some((stamp, Some(meta)))
}

/// Meta files are read up to this size (a larger one does not parse).
const META_MAX: u64 = 8 * 1024 * 1024;
/// Meta buffers up to this size are kept for the next file.
const KEEP_META_BUF: usize = 64 * 1024;

thread_local! {
    static META_BUF: std::cell::Cell<Vec<u8>> = const { std::cell::Cell::new(Vec::new()) };
}

/// Read the rest of `file` (at most `cap` bytes) into `buf` (cleared first).
/// `size` is its length from `fstat`: a short read once that much is in
/// counts as the end, saving the extra `read` that would return 0. (Bytes
/// appended meanwhile change the file's stamp, so they are read next time.)
pub(crate) fn read_all(file: &mut File, size: u64, cap: u64, buf: &mut Vec<u8>) -> std::io::Result<()> {
    buf.clear();
    let cap = usize::try_from(cap).unwrap_or(usize::MAX);
    let size = usize::try_from(size).unwrap_or(usize::MAX);
    // The first read asks for one byte more than the file has, to see the end.
    let mut ask = size.saturating_add(1);
    while buf.len() < cap {
        let old = buf.len();
        buf.resize(old + ask.min(cap - old), 0);
        let asked = buf.len() - old;
        let n = read_retrying(file, &mut buf[old..]);
        buf.truncate(old + *n.as_ref().unwrap_or(&0));
        let n = n?;
        if n == 0 || (n < asked && buf.len() >= size) {
            break;
        }
        ask = 64 * 1024;
    }
    Ok(())
}

/// `read`, retried when interrupted by a signal.
pub(crate) fn read_retrying(file: &mut File, into: &mut [u8]) -> std::io::Result<usize> {
    loop {
        match file.read(into) {
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            r => return r,
        }
    }
}

/// One directory entry worth looking at.
pub(crate) enum Listed {
    Dir(PathBuf),
    File(PathBuf),
}

/// List a directory, following symlinks only when their target stays inside
/// `root` (canonical). Only directories and regular files are listed;
/// entries that cannot be checked are skipped.
pub(crate) fn list_dir(dir: &Path, root: &Path, suffix: &str) -> (Vec<Listed>, bool) {
    let Ok(rd) = std::fs::read_dir(dir) else { return (Vec::new(), false) };
    let mut out = Vec::new();
    for de in rd.flatten() {
        let Ok(ft) = de.file_type() else { continue };
        let path = de.path();
        let (is_dir, is_file) = if ft.is_symlink() {
            match std::fs::canonicalize(&path) {
                Ok(target) if target.starts_with(root) => (target.is_dir(), target.is_file()),
                _ => continue,
            }
        } else {
            (ft.is_dir(), ft.is_file())
        };
        if is_dir {
            out.push(Listed::Dir(path));
        } else if is_file && path.file_name().and_then(|n| n.to_str()).is_some_and(|n| n.ends_with(suffix)) {
            out.push(Listed::File(path));
        }
    }
    (out, true)
}
