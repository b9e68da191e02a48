//! An offline, extractive description of a session that has no meta file:
//! what its active branch started with, what it ended with and which files
//! it touched, from the session reader and the views (the same branch,
//! message texts and file lists as every other view). Texts are cleaned
//! ([`crate::redact::session_text`]) before they are clipped.

use std::path::Path;

use crate::session::{self, EntryKind};
use crate::store::SessionRecord;
use crate::text::{clip, Keep};

const FIRST_REQUEST_CHARS: usize = 800;
const LAST_TEXT_CHARS: usize = 1500;
const MAX_FILES: usize = 25;

#[derive(Debug, Default, Clone, PartialEq)]
pub struct Extract {
    pub first_request: Option<String>,
    pub last_request: Option<String>,
    pub last_assistant: Option<String>,
    pub files_read: Vec<String>,
    pub files_modified: Vec<String>,
    pub user_messages: u64,
    pub assistant_messages: u64,
}

/// Read `entry`'s file (only if it lies inside `sessions_dir`).
pub fn extract(sessions_dir: &Path, entry: &SessionRecord) -> std::io::Result<Extract> {
    let file = regular_files::open_inside(sessions_dir, &entry.path)?;
    let session =
        session::read_file(&entry.path, file).map_err(|e| std::io::Error::other(e.to_string()))?;
    let branch = session.branch(None);
    let mut out = Extract::default();
    for entry in &branch {
        let EntryKind::Message(message) = &entry.kind else {
            continue;
        };
        let Some((who, text)) = crate::session::views::message_text(message) else {
            continue;
        };
        let text = crate::redact::session_text(&text);
        let text = text.trim();
        if who == "User" {
            out.user_messages += 1;
            if !text.is_empty() {
                out.last_request = Some(clip(text, FIRST_REQUEST_CHARS, Keep::Head));
                out.first_request = out.first_request.take().or(out.last_request.clone());
            }
        } else {
            out.assistant_messages += 1;
            if !text.is_empty() {
                out.last_assistant = Some(clip(text, LAST_TEXT_CHARS, Keep::Tail));
            }
        }
    }
    if out.last_request == out.first_request {
        out.last_request = None;
    }
    let files = crate::session::views::files_touched(&branch);
    out.files_read = files.read.into_iter().take(MAX_FILES).collect();
    out.files_modified = files.modified.into_iter().take(MAX_FILES).collect();
    Ok(out)
}
