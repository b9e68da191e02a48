//! The body of one session block: the meta file's fields when there is one,
//! else an extractive summary built now; plus the answer to a question.
//! Everything taken from a session or meta file is redacted and escaped here
//! (session text was cleaned before it was clipped, in [`extract`]).

use std::path::Path;

use crate::store::SessionRecord;

use super::extract;
use super::render::escape;
use crate::text::flat;

/// The answer to `@@name: question?`, already turned into text fields.
pub struct Answered {
    pub question: String,
    pub result: Result<(String, String, Vec<String>), String>,
}

/// The question and its answer (escaped), first in a block.
pub fn answer_text(a: &Answered) -> String {
    let mut lines = vec![format!("question: {}", flat(&a.question))];
    match &a.result {
        Ok((text, confidence, citations)) => {
            lines.push(format!("answer (confidence: {confidence}):"));
            lines.push(text.trim().to_string());
            if !citations.is_empty() {
                lines.push("citations:".into());
                lines.extend(citations.iter().map(|c| format!("- {}", flat(c))));
            }
        }
        Err(reason) => lines.push(format!("answer: not available ({})", flat(reason))),
    }
    escape(&crate::redact::redact(&lines.join("\n")))
}

pub fn body(
    sessions_dir: &Path,
    meta_dir: &Path,
    entry: &SessionRecord,
    answer: Option<&Answered>,
) -> String {
    let mut lines: Vec<String> = Vec::new();
    if let Some(a) = answer {
        lines.push(answer_text(a));
    }
    let date = match (entry.created.as_str(), entry.last_activity_ms) {
        ("", 0) => None,
        (c, 0) => Some(c.to_string()),
        ("", m) => Some(format!(
            "last active {}",
            crate::time::iso_from_millis(m as i64)
        )),
        (c, m) => Some(format!(
            "{c} (last active {})",
            crate::time::iso_from_millis(m as i64)
        )),
    };
    lines.extend(date.map(|d| format!("date: {d}")));
    if !entry.cwd.is_empty() {
        lines.push(format!("cwd: {}", entry.cwd));
    }
    let meta = if entry.has_meta {
        crate::store::meta::read(meta_dir, &entry.id).ok().flatten()
    } else {
        None
    };
    match meta {
        Some(m) => {
            let model = Some(m.model.as_str())
                .filter(|s| !s.is_empty())
                .unwrap_or("an unknown model");
            lines.push(format!(
                "source: meta file (indexed {} by {model})",
                m.updated_at
            ));
            push_field(&mut lines, "description", &m.description);
            if !m.tags.is_empty() {
                lines.push(format!("tags: {}", m.tags.join(", ")));
            }
            if !m.summary.trim().is_empty() {
                lines.push("summary:".into());
                lines.push(m.summary.trim().to_string());
            }
            if let Some(f) = &m.files {
                push_list(&mut lines, "files read", &f.read);
                push_list(&mut lines, "files modified", &f.modified);
            }
            push_bullets(&mut lines, "decisions", &m.decisions);
            push_bullets(&mut lines, "open tasks", &m.open_tasks);
        }
        None => describe_unindexed(sessions_dir, entry, &mut lines),
    }
    // The answer part is cleaned and escaped already; both are idempotent on it anyway.
    escape(&crate::redact::redact(&lines.join("\n")))
}

fn describe_unindexed(sessions_dir: &Path, entry: &SessionRecord, lines: &mut Vec<String>) {
    // A meta file may have vanished between listing and now: keep what the catalog had.
    if let Some(d) = entry.description.as_deref() {
        push_field(lines, "description", d);
    }
    match extract::extract(sessions_dir, entry) {
        Ok(x) => {
            lines.push(
                "source: the session file (not indexed; summarized offline, no model used)".into(),
            );
            lines.push(format!(
                "messages: {} from the user, {} from the assistant",
                x.user_messages, x.assistant_messages
            ));
            if let Some(t) = &x.first_request {
                lines.push(format!("first request: {t}"));
            }
            push_bullets(lines, "decisions", &x.decisions);
            push_bullets(lines, "open tasks", &x.open_tasks);
            push_list(lines, "files read", &x.files_read);
            push_list(lines, "files modified", &x.files_modified);
            if x.last_request.is_some() || x.last_reply.is_some() {
                lines.push("last exchange:".into());
                lines.extend(x.last_request.as_ref().map(|t| format!("user: {t}")));
                lines.extend(x.last_reply.as_ref().map(|t| format!("assistant: {t}")));
            }
        }
        Err(e) => lines.push(format!("source: session file could not be read ({e})")),
    }
}

fn push_field(lines: &mut Vec<String>, key: &str, value: &str) {
    if !value.trim().is_empty() {
        lines.push(format!("{key}: {}", value.trim()));
    }
}

fn push_list(lines: &mut Vec<String>, key: &str, values: &[String]) {
    if !values.is_empty() {
        lines.push(format!("{key}: {}", values.join(", ")));
    }
}

fn push_bullets(lines: &mut Vec<String>, key: &str, values: &[String]) {
    if !values.is_empty() {
        lines.push(format!("{key}:"));
        lines.extend(values.iter().map(|v| format!("- {}", flat(v))));
    }
}
