//! Reading pi session files: header, entries, the tree and its active branch,
//! and context building exactly as pi's `SessionManager` does.
//!
//! CONTRACT (stubs until the reader lands; dependents code against these
//! signatures): [`open`], [`read_header`], [`Session`] methods, and
//! [`discovery`].

pub mod discovery;
pub mod model;

use std::path::{Path, PathBuf};

pub use model::*;

/// Why a session file could not be read at all. Recoverable problems inside a
/// file are not errors: they are counted in [`Warnings`].
#[derive(Debug, thiserror::Error)]
pub enum SessionError {
    #[error("{path}: cannot read: {source}")]
    Io { path: PathBuf, source: std::io::Error },
    #[error("{path}: not a pi session ({reason})")]
    NotASession { path: PathBuf, reason: String },
    #[error("{path}: reader not implemented yet")]
    Unimplemented { path: PathBuf },
}

/// A parsed session file.
#[derive(Debug, Clone)]
pub struct Session {
    pub path: PathBuf,
    pub header: SessionHeader,
    /// Entries in file order (v1 files migrated to linear ids, v2 `hookMessage` → `custom`).
    pub entries: Vec<Entry>,
    pub warnings: Warnings,
}

/// Open and parse a whole session file in bounded memory.
pub fn open(path: &Path) -> Result<Session, SessionError> {
    Err(SessionError::Unimplemented { path: path.to_path_buf() })
}

/// Read only the header line.
pub fn read_header(path: &Path) -> Result<SessionHeader, SessionError> {
    Err(SessionError::Unimplemented { path: path.to_path_buf() })
}

impl Session {
    /// The entry with this id.
    pub fn get(&self, _id: &str) -> Option<&Entry> {
        None
    }

    /// pi's default leaf: the last entry in file order.
    pub fn default_leaf_id(&self) -> Option<&str> {
        self.entries.last().map(|e| e.id.as_str())
    }

    /// The active branch from the root to `leaf` (or the default leaf), as pi's `getBranch`.
    pub fn branch(&self, _leaf: Option<&str>) -> Vec<&Entry> {
        Vec::new()
    }

    /// pi's `getSessionName`: the latest `session_info` name.
    pub fn session_name(&self, _branch: &[&Entry]) -> Option<String> {
        None
    }

    /// pi's `buildSessionContext` over a branch.
    pub fn build_context(&self, _branch: &[&Entry]) -> BuiltContext {
        BuiltContext::default()
    }

    /// Text of the first user message in the file (pi's session list preview).
    pub fn first_user_message(&self) -> Option<String> {
        None
    }
}
