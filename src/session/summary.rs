//! The summary tier: what pi's `buildSessionInfo` reads from a session file
//! (header, latest name, first user message, message count, last activity)
//! without building entries. (Reading only what was appended since a
//! previous read is the full tier's [`super::read_appended`], which the
//! search index uses.)
//!
//! Only `message` and `session_info` lines are deserialized, into shapes that
//! skip everything else; once the first user message is known, message lines
//! are parsed for their role and timestamp only.

use std::path::{Path, PathBuf};

use super::convert::{content, iso_to_ms, Cleaning};
use super::entries::{text_joined, Blocks};
use super::raw::{Num, RawContent, RawLine, Str};
use super::read::{io_err, is_blank, lines_from, not_a_session, open_file, NOT_A_HEADER};
use super::repair::parse_line;
use super::SessionError;
use serde::de::IgnoredAny;

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
    /// pi's list "modified": the latest user/assistant message time, else the
    /// header time, else the file time (ms since the epoch). Lists sort by it.
    pub last_activity_ms: u64,
    pub message_count: u64,
    pub parent_session: Option<String>,
}

/// What the lines read so far gave.
#[derive(Debug, Clone, Default, PartialEq)]
struct Scanned {
    name: Option<String>,
    first_message: Option<String>,
    last_activity: Option<i64>,
    message_count: u64,
}

/// A message line, its content read as `C`: [`RawContent`] while its text
/// is still needed (no user text seen yet), then [`IgnoredAny`] (only role
/// and time matter).
#[derive(serde::Deserialize)]
#[serde(bound = "C: serde::Deserialize<'de>")]
struct MessageLine<'a, C> {
    #[serde(borrow, default)]
    message: Option<LineMessage<'a, C>>,
    #[serde(borrow, default)]
    timestamp: Str<'a>,
}

#[derive(serde::Deserialize)]
#[serde(bound = "C: serde::Deserialize<'de>")]
struct LineMessage<'a, C> {
    #[serde(borrow, default)]
    role: Str<'a>,
    #[serde(default)]
    content: Option<C>,
    #[serde(default)]
    timestamp: Num,
}

#[derive(serde::Deserialize)]
struct TypeAndName<'a> {
    #[serde(rename = "type", borrow, default)]
    ty: Str<'a>,
    #[serde(borrow, default)]
    name: Str<'a>,
}

/// The entry type from pi's own serialization (`{"type":"…"` first), without parsing.
fn fast_type(line: &[u8]) -> Option<&[u8]> {
    let rest = line.strip_prefix(b"{\"type\":\"")?;
    let end = memchr::memchr(b'"', rest)?;
    Some(&rest[..end])
}

/// Summarize one session file, as pi's `buildSessionInfo`.
pub fn summarize(path: &Path) -> Result<SessionSummary, SessionError> {
    let file = open_file(path)?;
    let md = file.metadata().map_err(|e| io_err(path, e))?;
    let modified_ms = md
        .modified()
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map_or(0, |d| d.as_millis() as u64);
    let (mut summary, mut state) = (None, Scanned::default());
    let mut lines = lines_from(path, file, 0)?;
    while let Some(line) = lines.next_line().map_err(|e| io_err(path, e))? {
        // A long line's strings are cut to their heads (the first message
        // is a head then); a line the reader skipped is one pi could not parse.
        let text = line.text;
        if line.skipped.is_some() || is_blank(text) {
            continue;
        }
        let mut repaired = None;
        if summary.is_none() {
            let Ok(h) = parse_line::<RawLine<'_>>(text, &mut repaired).0 else {
                continue;
            };
            if h.ty.as_str() != Some("session") || h.id.0.is_none() {
                return Err(not_a_session(path, NOT_A_HEADER));
            }
            summary = Some(SessionSummary {
                path: path.to_path_buf(),
                id: h.id.string(),
                name: None,
                first_message: None,
                cwd: h.cwd.string(),
                created: h.timestamp.string(),
                modified_ms,
                last_activity_ms: 0,
                message_count: 0,
                parent_session: h.parent_session.owned(),
            });
            continue;
        }
        state.take(text);
    }
    let mut s = summary.ok_or_else(|| not_a_session(path, "no JSON records"))?;
    s.name = state.name;
    s.first_message = state.first_message;
    s.message_count = state.message_count;
    s.modified_ms = modified_ms;
    s.last_activity_ms = last_activity(state.last_activity, &s.created, modified_ms);
    Ok(s)
}

/// pi's list "modified": the `latest` user or assistant message time, else
/// the header time `created`, else the file time (ms since the epoch).
pub fn last_activity(latest: Option<i64>, created: &str, file_ms: u64) -> u64 {
    [latest.unwrap_or(0), iso_to_ms(created)]
        .into_iter()
        .find(|&t| t > 0)
        .map_or(file_ms, |t| t as u64)
}

impl Scanned {
    /// A message line's message and entry timestamp. Parsed (even partly)
    /// messages count; pi counts every parsed message entry.
    fn message<'a, C: serde::Deserialize<'a>>(
        &mut self,
        text: &'a [u8],
        repaired: &'a mut Option<String>,
    ) -> Option<(LineMessage<'a, C>, Option<String>)> {
        let line = parse_line::<MessageLine<'a, C>>(text, repaired).0.ok()?;
        self.message_count += 1;
        Some((line.message?, line.timestamp.owned()))
    }

    /// Take one non-blank line after the header.
    fn take(&mut self, text: &[u8]) {
        let mut repaired = None;
        let is_message = match fast_type(text) {
            Some(b"message") => true,
            Some(b"session_info") => false,
            Some(_) => return,
            None => match parse_line::<TypeAndName<'_>>(text, &mut repaired).0 {
                Ok(l) if l.ty.as_str() == Some("message") => true,
                Ok(l) if l.ty.as_str() == Some("session_info") => false,
                _ => return,
            },
        };
        let mut repaired = None;
        if !is_message {
            if let Ok(l) = parse_line::<TypeAndName<'_>>(text, &mut repaired).0 {
                self.name = l
                    .name
                    .as_str()
                    .map(str::trim)
                    .filter(|n| !n.is_empty())
                    .map(|n| crate::redact::session_text(n).into_owned());
            }
            return;
        }
        let (role, msg_ts, entry_ts): (String, _, _) = if self.first_message.is_none() {
            let Some((msg, entry_ts)) = self.message::<RawContent<'_>>(text, &mut repaired) else {
                return;
            };
            if msg.role.as_str() == Some("user") {
                let t = text_joined(&content::<Blocks>(&msg.content, Cleaning::Cleaned), " ");
                if !t.is_empty() {
                    self.first_message = Some(t);
                }
            }
            (msg.role.string(), msg.timestamp.0, entry_ts)
        } else {
            let Some((msg, entry_ts)) = self.message::<IgnoredAny>(text, &mut repaired) else {
                return;
            };
            (msg.role.string(), msg.timestamp.0, entry_ts)
        };
        if role == "user" || role == "assistant" {
            let t = match msg_ts {
                Some(t) => Some(t as i64),
                None => entry_ts.map(|ts| iso_to_ms(&ts)).filter(|&t| t != 0),
            };
            if let Some(t) = t {
                self.last_activity = Some(self.last_activity.map_or(t, |a| a.max(t)));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Name, first message, count and last activity as pi's `buildSessionInfo`
    /// gives them; a blank `session_info` name clears the name.
    #[test]
    fn summary_reads_name_first_message_count_and_activity() {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let path = dir.path().join("2026_s1.jsonl");
        let lines = [
            r#"{"type":"session","version":3,"id":"s1","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/p"}"#,
            r#"{"type":"message","id":"a","parentId":null,"timestamp":"t","message":{"role":"assistant","content":[],"timestamp":5}}"#,
            r#"{"type":"message","id":"b","parentId":"a","timestamp":"t","message":{"role":"user","content":[{"type":"text","text":"first"},{"type":"text","text":"words"}],"timestamp":7}}"#,
            r#"{"type":"session_info","id":"c","parentId":"b","timestamp":"t","name":" named "}"#,
            r#"{"type":"message","id":"d","parentId":"c","timestamp":"t","message":{"role":"user","content":"later","timestamp":9}}"#,
            r#"{"type":"session_info","id":"e","parentId":"d","timestamp":"t","name":"  "}"#,
        ];
        std::fs::write(&path, lines.join("\n") + "\n").expect("write");
        let s = summarize(&path).expect("a summary");
        assert_eq!((s.message_count, s.last_activity_ms), (3, 9));
        assert_eq!(s.first_message.as_deref(), Some("first words"));
        assert_eq!(s.name, None);
    }
}
