//! Listing sessions without parsing whole files: the header plus a light scan.
//!
//! Only `message` and `session_info` lines are deserialized, and only into
//! shapes that skip everything unneeded (image data and tool output are
//! scanned past, never copied). Once the first user message is known, message
//! lines are parsed for their role and timestamp only.

use std::path::{Path, PathBuf};

use super::lines::LineReader;
use super::raw::{Num, RawContent, Str};
use super::reader::{is_blank, not_a_session, parse_line};
use super::{iso_to_ms, SessionError};

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

/// pi's directory name for a cwd (`getDefaultSessionDir`): one leading `/` or
/// `\` dropped, then every `/`, `\` and `:` replaced by `-`, wrapped in `--`.
pub fn encode_cwd(cwd: &str) -> String {
    let trimmed = cwd.strip_prefix(['/', '\\']).unwrap_or(cwd);
    format!("--{}--", trimmed.replace(['/', '\\', ':'], "-"))
}

#[derive(serde::Deserialize)]
struct LightHeader<'a> {
    #[serde(rename = "type", borrow, default)]
    ty: Str<'a>,
    #[serde(borrow, default)]
    id: Str<'a>,
    #[serde(borrow, default)]
    timestamp: Str<'a>,
    #[serde(borrow, default)]
    cwd: Str<'a>,
    #[serde(rename = "parentSession", borrow, default)]
    parent_session: Str<'a>,
}

#[derive(serde::Deserialize)]
struct LightLine<'a> {
    #[serde(rename = "type", borrow, default)]
    ty: Str<'a>,
    #[serde(borrow, default)]
    name: Str<'a>,
}

/// A message line when its text is still needed (no user text seen yet).
#[derive(serde::Deserialize)]
struct WithText<'a> {
    #[serde(borrow, default)]
    message: Option<TextMessage<'a>>,
    #[serde(borrow, default)]
    timestamp: Str<'a>,
}

#[derive(serde::Deserialize)]
struct TextMessage<'a> {
    #[serde(borrow, default)]
    role: Str<'a>,
    #[serde(borrow, default)]
    content: Option<RawContent<'a>>,
    #[serde(default)]
    timestamp: Num,
}

/// A message line once only role and time matter.
#[derive(serde::Deserialize)]
struct RoleOnly<'a> {
    #[serde(borrow, default)]
    message: Option<RoleMessage<'a>>,
    #[serde(borrow, default)]
    timestamp: Str<'a>,
}

#[derive(serde::Deserialize)]
struct RoleMessage<'a> {
    #[serde(borrow, default)]
    role: Str<'a>,
    #[serde(default)]
    timestamp: Num,
}

/// The entry type from pi's own serialization (`{"type":"…"` first), without parsing.
fn fast_type(line: &[u8]) -> Option<&[u8]> {
    let rest = line.strip_prefix(b"{\"type\":\"")?;
    let end = rest.iter().position(|&b| b == b'"')?;
    Some(&rest[..end])
}

fn text_of(content: &Option<RawContent<'_>>) -> String {
    match content {
        Some(RawContent::Text(t)) => t.to_string(),
        Some(RawContent::Blocks(blocks)) => blocks
            .iter()
            .filter(|b| b.ty.as_str() == Some("text"))
            .map(|b| b.text.as_str().unwrap_or_default())
            .collect::<Vec<_>>()
            .join(" "),
        _ => String::new(),
    }
}

fn mtime_ms(path: &Path) -> u64 {
    std::fs::metadata(path)
        .and_then(|m| m.modified())
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map_or(0, |d| d.as_millis() as u64)
}

/// Summarize one session file (header + light scan), as pi's `buildSessionInfo`.
pub fn summarize(path: &Path) -> Result<SessionSummary, SessionError> {
    let file =
        regular_files::open_regular(path).map_err(|source| SessionError::Io { path: path.to_path_buf(), source })?;
    let mut lines = LineReader::new(file);
    let mut summary: Option<SessionSummary> = None;
    let mut name: Option<String> = None;
    let mut first_message: Option<String> = None;
    let mut last_activity: Option<i64> = None;
    let mut message_count = 0u64;

    while let Some(line) = lines.next_line().map_err(|source| SessionError::Io { path: path.to_path_buf(), source })? {
        let text: &[u8] = line.text;
        let mut repaired = None;
        if is_blank(text) {
            continue;
        }
        if summary.is_none() {
            let Ok(h) = parse_line::<LightHeader<'_>>(text, &mut repaired).0 else { continue };
            if h.ty.as_str() != Some("session") || h.id.0.is_none() {
                return Err(not_a_session(path, "its first record is not a session header"));
            }
            summary = Some(SessionSummary {
                path: path.to_path_buf(),
                id: h.id.string(),
                name: None,
                first_message: None,
                cwd: h.cwd.string(),
                created: h.timestamp.string(),
                modified_ms: mtime_ms(path),
                last_activity_ms: 0,
                message_count: 0,
                parent_session: h.parent_session.owned(),
            });
            continue;
        }
        let is_message = match fast_type(text) {
            Some(b"message") => true,
            Some(b"session_info") => false,
            Some(_) => continue,
            None => match parse_line::<LightLine<'_>>(text, &mut repaired).0 {
                Ok(l) if l.ty.as_str() == Some("message") => true,
                Ok(l) if l.ty.as_str() == Some("session_info") => false,
                _ => continue,
            },
        };
        if !is_message {
            if let Ok(l) = parse_line::<LightLine<'_>>(text, &mut repaired).0 {
                name = l.name.as_str().map(str::trim).filter(|n| !n.is_empty()).map(str::to_string);
            }
            continue;
        }
        // Parsed (even partly) messages count; pi counts every parsed message entry.
        let (role, msg_ts, entry_ts) = if first_message.is_none() {
            let Ok(m) = parse_line::<WithText<'_>>(text, &mut repaired).0 else { continue };
            message_count += 1;
            let Some(msg) = m.message else { continue };
            let role = msg.role.string();
            if role == "user" {
                let t = text_of(&msg.content);
                if !t.is_empty() {
                    first_message = Some(t);
                }
            }
            (role, msg.timestamp.0, m.timestamp.owned())
        } else {
            let Ok(m) = parse_line::<RoleOnly<'_>>(text, &mut repaired).0 else { continue };
            message_count += 1;
            let Some(msg) = m.message else { continue };
            (msg.role.string(), msg.timestamp.0, m.timestamp.owned())
        };
        if role == "user" || role == "assistant" {
            let t = match msg_ts {
                Some(t) => Some(t as i64),
                None => entry_ts.map(|ts| iso_to_ms(&ts)).filter(|&t| t != 0),
            };
            if let Some(t) = t {
                last_activity = Some(last_activity.map_or(t, |a| a.max(t)));
            }
        }
    }
    let mut s = summary.ok_or_else(|| not_a_session(path, "no JSON records"))?;
    s.name = name;
    s.first_message = first_message;
    s.message_count = message_count;
    s.last_activity_ms = match last_activity.filter(|&t| t > 0) {
        Some(t) => t as u64,
        None => match iso_to_ms(&s.created) {
            0 => s.modified_ms,
            t => t.max(0) as u64,
        },
    };
    Ok(s)
}

/// The `.jsonl` files directly in `dir`, sorted: only regular files whose
/// canonical path lies inside the canonical `sessions_dir` (the containment
/// rule every reader follows; others are skipped with a note).
pub(crate) fn jsonl_files(sessions_dir: &Path, dir: &Path) -> Vec<PathBuf> {
    let (Ok(root), Ok(read)) = (std::fs::canonicalize(sessions_dir), std::fs::read_dir(dir)) else { return Vec::new() };
    let mut files: Vec<PathBuf> = read
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "jsonl"))
        .filter(|p| {
            let keep = regular_files::listed_inside(&root, p);
            if !keep {
                tracing::warn!("skipping {}: not a regular file inside {}", p.display(), sessions_dir.display());
            }
            keep
        })
        .collect();
    files.sort();
    files
}

/// Every session file under `sessions_dir` (`<project dir>/*.jsonl`, pi's
/// layout), sorted; see [`jsonl_files`] for which files count.
pub fn session_files(sessions_dir: &Path) -> Vec<PathBuf> {
    let Ok(read) = std::fs::read_dir(sessions_dir) else { return Vec::new() };
    let mut dirs: Vec<PathBuf> = read.filter_map(|e| e.ok()).map(|e| e.path()).filter(|p| p.is_dir()).collect();
    dirs.sort();
    dirs.iter().flat_map(|d| jsonl_files(sessions_dir, d)).collect()
}

fn summarize_all(files: impl IntoIterator<Item = PathBuf>) -> Vec<SessionSummary> {
    let mut out: Vec<SessionSummary> = files.into_iter().filter_map(|p| summarize(&p).ok()).collect();
    // Newest first, as pi's list (ties by path for a stable order).
    out.sort_by(|a, b| b.last_activity_ms.cmp(&a.last_activity_ms).then_with(|| a.path.cmp(&b.path)));
    out
}

/// Sessions of one project: `<sessions_dir>/--<cwd>--/*.jsonl`, newest first.
/// Files that are not pi sessions are skipped, as pi skips them.
pub fn list_project(sessions_dir: &Path, cwd: &str) -> Vec<SessionSummary> {
    summarize_all(jsonl_files(sessions_dir, &sessions_dir.join(encode_cwd(cwd))))
}

/// Sessions of every project under `sessions_dir`, newest first.
pub fn list_all(sessions_dir: &Path) -> Vec<SessionSummary> {
    summarize_all(session_files(sessions_dir))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encode_cwd_as_pi() {
        assert_eq!(encode_cwd("/home/u/proj"), "--home-u-proj--");
        assert_eq!(encode_cwd("//srv/x"), "---srv-x--");
        assert_eq!(encode_cwd("C:\\Users\\me"), "--C--Users-me--");
        assert_eq!(encode_cwd("\\\\server\\share"), "---server-share--");
    }
}
