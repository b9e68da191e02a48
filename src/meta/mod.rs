//! The meta store: `<agent dir>/sessions-meta/<id>.meta.json`, written atomically
//! under a lock file.
//!
//! CONTRACT: [`SessionMeta`] (schemaVersion 1, compatible with pi's existing
//! `session-index` extension) and the store functions below (stubs until the
//! store lands).

pub mod schema;
pub mod store;

use std::path::{Path, PathBuf};

pub use schema::*;
pub use store::{is_meta_file_name, read_or_missing, update, write, MetaLock};

#[derive(Debug, thiserror::Error)]
pub enum MetaError {
    #[error("{path}: {source}")]
    Io { path: PathBuf, source: std::io::Error },
    #[error("{path}: invalid meta file: {reason}")]
    Invalid { path: PathBuf, reason: String },
    #[error("session id {0:?} cannot name a meta file")]
    BadSessionId(String),
}

/// `<meta_dir>/<session_id>.meta.json`; rejects ids that could escape the directory.
pub fn meta_path(meta_dir: &Path, session_id: &str) -> Result<PathBuf, MetaError> {
    let safe = !session_id.is_empty()
        && session_id.len() <= 200
        && session_id.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
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

/// Read a meta file by path (see [`read`]).
pub fn read_path(path: &Path) -> Result<Option<SessionMeta>, MetaError> {
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(source) => return Err(MetaError::Io { path: path.to_path_buf(), source }),
    };
    let meta: SessionMeta = serde_json::from_str(&text)
        .map_err(|e| MetaError::Invalid { path: path.to_path_buf(), reason: e.to_string() })?;
    meta.check().map_err(|reason| MetaError::Invalid { path: path.to_path_buf(), reason })?;
    Ok(Some(meta))
}
