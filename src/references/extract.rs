//! An offline, extractive description of a session that has no meta file:
//! what it started with, what it ended with and which files it touched,
//! read in one streaming pass (lines are parsed one at a time). Texts are
//! cleaned ([`crate::redact::session_text`]) before they are clipped.

use std::io::{BufRead, BufReader};
use std::path::Path;

use serde_json::Value;

use crate::catalog::CatalogEntry;

const FIRST_REQUEST_CHARS: usize = 800;
const LAST_TEXT_CHARS: usize = 1500;
const MAX_FILES: usize = 25;
/// Lines longer than this (huge tool results, images) are skipped unparsed.
const MAX_LINE_BYTES: usize = 4 * 1024 * 1024;

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
    let mut reader = BufReader::with_capacity(64 * 1024, file);
    let mut out = Extract::default();
    let mut line = Vec::new();
    loop {
        line.clear();
        if reader.read_until(b'\n', &mut line)? == 0 {
            break;
        }
        if line.len() > MAX_LINE_BYTES {
            continue;
        }
        let Ok(v) = serde_json::from_slice::<Value>(&line) else { continue };
        if v.get("type").and_then(Value::as_str) != Some("message") {
            continue;
        }
        let Some(msg) = v.get("message") else { continue };
        match msg.get("role").and_then(Value::as_str) {
            Some("user") => {
                out.user_messages += 1;
                let text = crate::catalog::content_text(msg.get("content"));
                let text = crate::redact::session_text(&text);
                let text = text.trim();
                if !text.is_empty() {
                    if out.first_request.is_none() {
                        out.first_request = Some(clip(text, FIRST_REQUEST_CHARS));
                    }
                    out.last_request = Some(clip(text, FIRST_REQUEST_CHARS));
                }
            }
            Some("assistant") => {
                out.assistant_messages += 1;
                let blocks = msg.get("content").and_then(Value::as_array).cloned().unwrap_or_default();
                let mut text = Vec::new();
                for b in &blocks {
                    match b.get("type").and_then(Value::as_str) {
                        Some("text") => text.extend(b.get("text").and_then(Value::as_str)),
                        Some("toolCall") => note_file(&mut out, b),
                        _ => {}
                    }
                }
                let text = crate::redact::session_text(&text.join("\n")).into_owned();
                if !text.trim().is_empty() {
                    out.last_assistant = Some(clip_tail(text.trim(), LAST_TEXT_CHARS));
                }
            }
            _ => {}
        }
    }
    if out.last_request == out.first_request {
        out.last_request = None;
    }
    Ok(out)
}

/// pi's built-in file tools: `read` reads, `edit` and `write` modify.
fn note_file(out: &mut Extract, call: &Value) {
    let name = call.get("name").and_then(Value::as_str).unwrap_or_default();
    let Some(path) = call.get("arguments").and_then(|a| a.get("path")).and_then(Value::as_str) else { return };
    let list = match name {
        "read" => &mut out.files_read,
        "edit" | "write" => &mut out.files_modified,
        _ => return,
    };
    if list.len() < MAX_FILES && !list.iter().any(|p| p == path) {
        list.push(path.to_string());
    }
}

fn clip(s: &str, chars: usize) -> String {
    let mut it = s.char_indices();
    match it.nth(chars) {
        Some((i, _)) => format!("{}…", &s[..i]),
        None => s.to_string(),
    }
}

/// The last `chars` characters: a session's conclusion is at its end.
fn clip_tail(s: &str, chars: usize) -> String {
    let n = s.chars().count();
    if n <= chars {
        return s.to_string();
    }
    let skip = s.char_indices().nth(n - chars).map_or(0, |(i, _)| i);
    format!("…{}", &s[skip..])
}
