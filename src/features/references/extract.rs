//! An offline description of a session that has no meta file, from the
//! session reader and the views (the same branch, message texts and file
//! lists as every other view): what its active branch started with, the
//! decisions and open tasks the offline model (`local/extractive`) finds in
//! it, the files it touched, and its last exchange. Texts are cleaned
//! ([`crate::redact::session_text`]) before they are clipped.

use std::path::Path;

use crate::features::summarize::extractive::{self, ExtractiveInput};
use crate::session::{self, EntryKind};
use crate::store::SessionRecord;
use crate::text::{clip, Keep};

const FIRST_REQUEST_CHARS: usize = 800;
/// Each side of the last exchange, from its beginning.
const LAST_EXCHANGE_CHARS: usize = 700;
const MAX_FILES: usize = 25;

#[derive(Debug, Default, Clone, PartialEq)]
pub struct Extract {
    pub first_request: Option<String>,
    pub decisions: Vec<String>,
    pub open_tasks: Vec<String>,
    /// The last user message (when it is not the first) and the reply after it.
    pub last_request: Option<String>,
    pub last_reply: Option<String>,
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
                out.last_request = Some(clip(text, LAST_EXCHANGE_CHARS, Keep::Head));
                out.last_reply = None;
                if out.first_request.is_none() {
                    out.first_request = Some(clip(text, FIRST_REQUEST_CHARS, Keep::Head));
                }
            }
        } else {
            out.assistant_messages += 1;
            if !text.is_empty() {
                out.last_reply = Some(clip(text, LAST_EXCHANGE_CHARS, Keep::Head));
            }
        }
    }
    if out.user_messages <= 1 {
        // The first request is the last one: said once.
        out.last_request = None;
    }
    let files = crate::session::views::files_touched(&branch);
    let offline = extractive::summarize(&ExtractiveInput {
        branch: &branch,
        session_name: None,
        cwd: &entry.cwd,
        files: &files,
    });
    out.decisions = offline.decisions;
    out.open_tasks = offline.open_tasks;
    out.files_read = files.read.into_iter().take(MAX_FILES).collect();
    out.files_modified = files.modified.into_iter().take(MAX_FILES).collect();
    Ok(out)
}
