//! Reading what the catalog needs from disk (session files are read by the
//! session reader's summary tier, see `light`): the few meta fields used for resolution, directory
//! listings, and the one checked way to open a resolved session. Every path
//! read here was listed under the sessions (or meta) directory and, when it
//! is a symlink, checked to stay inside it.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use serde::Deserialize;

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
    let mut bytes = Vec::with_capacity(stamp.len.min(META_MAX) as usize + 1);
    (&mut file).take(META_MAX).read_to_end(&mut bytes).ok()?;
    let mut meta = match serde_json::from_slice::<MetaLight>(&bytes) {
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
