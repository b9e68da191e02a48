//! The meta store: `<agent dir>/sessions-meta/<id>.meta.json`, written atomically
//! under a lock file in `sessions-meta/.locks/`.
//!
//! [`SessionMeta`] is schemaVersion 1, compatible with pi's existing
//! `session-index` extension. Meta files are users' data: a file of a newer
//! schema is read as far as it is readable and never written.

pub mod file;
pub mod schema;

use std::path::{Path, PathBuf};

pub use file::{is_meta_file_name, read_or_missing, update, write, MetaLock, Replace};
pub use schema::*;

#[derive(Debug, thiserror::Error)]
pub enum MetaError {
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path}: invalid meta file: {reason}")]
    Invalid { path: PathBuf, reason: String },
    #[error("{path}: schemaVersion {version} is newer than this session-index understands ({SCHEMA_VERSION}); left untouched")]
    Newer { path: PathBuf, version: u64 },
    /// The offline model's document would replace one a model wrote (see [`Replace`]).
    #[error("{path}: its meta was written by {model}; kept (the offline model never replaces it)")]
    ModelWritten { path: PathBuf, model: String },
    #[error("session id {0:?} cannot name a meta file")]
    BadSessionId(String),
}

/// `<meta_dir>/<session_id>.meta.json`; rejects ids that could escape the directory.
pub fn meta_path(meta_dir: &Path, session_id: &str) -> Result<PathBuf, MetaError> {
    let safe = !session_id.is_empty()
        && session_id.len() <= 200
        && session_id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
        && !session_id.starts_with('.');
    if !safe {
        return Err(MetaError::BadSessionId(session_id.to_string()));
    }
    Ok(meta_dir.join(format!("{session_id}.meta.json")))
}

/// Read a meta file. `Ok(None)` when it does not exist; `Err(Invalid)` when it
/// is corrupt (callers treat that as missing and warn once).
pub fn read(meta_dir: &Path, session_id: &str) -> Result<Option<SessionMeta>, MetaError> {
    let path = meta_path(meta_dir, session_id)?;
    read_path(&path)
}

/// Read a meta file by path (see [`read`]): only a regular file that stays
/// inside its directory (a symlink may not lead out of it). A newer schema's
/// file is returned when it still parses as [`SessionMeta`], else `Err(Newer)`.
pub fn read_path(path: &Path) -> Result<Option<SessionMeta>, MetaError> {
    let bytes = match regular_files::read_inside(path.parent().unwrap_or(Path::new(".")), path) {
        Ok(bytes) => bytes,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(source) => {
            return Err(MetaError::Io {
                path: path.to_path_buf(),
                source,
            })
        }
    };
    let invalid = |reason: String| MetaError::Invalid {
        path: path.to_path_buf(),
        reason,
    };
    match serde_json::from_slice::<SessionMeta>(&bytes) {
        Ok(meta) => meta.check().map(|()| Some(meta)).map_err(invalid),
        Err(e) => match newer_version(&bytes) {
            Some(version) => Err(MetaError::Newer {
                path: path.to_path_buf(),
                version,
            }),
            None => Err(invalid(e.to_string())),
        },
    }
}

/// The meta files of `meta_dir` that read as valid (any other is left out).
pub fn read_all(meta_dir: &Path) -> Vec<SessionMeta> {
    let Ok(listing) = std::fs::read_dir(meta_dir) else {
        return Vec::new();
    };
    listing
        .flatten()
        .filter(|e| is_meta_file_name(&e.file_name().to_string_lossy()))
        .filter_map(|e| read_path(&e.path()).ok().flatten())
        .collect()
}

/// The `schemaVersion` of a document, when it is newer than this crate's.
fn newer_version(bytes: &[u8]) -> Option<u64> {
    let value: serde_json::Value = serde_json::from_slice(bytes).ok()?;
    value
        .get("schemaVersion")?
        .as_u64()
        .filter(|&v| v > u64::from(SCHEMA_VERSION))
}
