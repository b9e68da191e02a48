//! Listing sessions without parsing whole files: the header plus a light scan.

use std::path::{Path, PathBuf};

/// One session as listed by pi's `/resume` (`SessionManager.list`).
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionSummary {
    pub path: PathBuf,
    pub id: String,
    /// Latest `session_info` name in the file, if any.
    pub name: Option<String>,
    pub first_message: Option<String>,
    pub cwd: String,
    /// Header timestamp (ISO).
    pub created: String,
    /// File modification time, ms since the epoch.
    pub modified_ms: u64,
    pub message_count: u64,
    pub parent_session: Option<String>,
}

/// pi's directory name for a cwd: `--<cwd with separators replaced>--`.
pub fn encode_cwd(cwd: &str) -> String {
    format!("--{}--", cwd.trim_start_matches('/').replace(['/', '\\', ':'], "-"))
}

/// Summarize one session file (header + light scan).
pub fn summarize(path: &Path) -> Result<SessionSummary, super::SessionError> {
    Err(super::SessionError::Unimplemented { path: path.to_path_buf() })
}

/// Sessions of one project: `<sessions_dir>/--<cwd>--/*.jsonl`.
pub fn list_project(_sessions_dir: &Path, _cwd: &str) -> Vec<SessionSummary> {
    Vec::new()
}

/// Sessions of every project under `sessions_dir`.
pub fn list_all(_sessions_dir: &Path) -> Vec<SessionSummary> {
    Vec::new()
}
