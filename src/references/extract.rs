//! An offline, extractive description of a session that has no meta file:
//! what its active branch started with, what it ended with and which files
//! it touched, from the session reader (the same branch and file lists as
//! every other view). Texts are cleaned
//! ([`crate::redact::session_text`]) before they are clipped.

use std::path::Path;

use crate::catalog::CatalogEntry;
use crate::session::{self, AgentMessage, Block, EntryKind};
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
pub fn extract(sessions_dir: &Path, entry: &CatalogEntry) -> std::io::Result<Extract> {
    let file = regular_files::open_inside(sessions_dir, &entry.path)?;
    let session = session::read_file(&entry.path, file).map_err(|e| std::io::Error::other(e.to_string()))?;
    let branch = session.branch(None);
    let mut out = Extract::default();
    for entry in &branch {
        match &entry.kind {
            EntryKind::Message(AgentMessage::User { content, .. }) => {
                out.user_messages += 1;
                let text = content.text_joined(" ");
                let text = crate::redact::session_text(&text);
                let text = text.trim();
                if !text.is_empty() {
                    let clipped = Some(clip(text, FIRST_REQUEST_CHARS, Keep::Head));
                    out.first_request.get_or_insert_with(|| clipped.clone().unwrap_or_default());
                    out.last_request = clipped;
                }
            }
            EntryKind::Message(AgentMessage::Assistant { content, .. }) => {
                out.assistant_messages += 1;
                let text: Vec<&str> = content
                    .iter()
                    .filter_map(|b| match b {
                        Block::Text(t) => Some(t.head.as_str()),
                        _ => None,
                    })
                    .collect();
                let text = crate::redact::session_text(&text.join("\n")).into_owned();
                if !text.trim().is_empty() {
                    out.last_assistant = Some(clip(text.trim(), LAST_TEXT_CHARS, Keep::Tail));
                }
            }
            _ => {}
        }
    }
    if out.last_request == out.first_request {
        out.last_request = None;
    }
    let files = crate::views::files_touched(&branch);
    out.files_read = files.read.into_iter().take(MAX_FILES).collect();
    out.files_modified = files.modified.into_iter().take(MAX_FILES).collect();
    Ok(out)
}
