//! What the catalog keeps of a session file: the reader's summary tier
//! ([`crate::session::summarize_file`]), resumed where the previous scan of
//! the same file stopped, with the first message trimmed and capped.

use std::path::Path;

use super::scan::Stamp;
use crate::session::{self, SessionError, SessionSummary};

/// Longest first message kept in memory (chars); enough to match and preview.
const FIRST_MESSAGE_CHARS: usize = 300;

/// What the catalog keeps of a session file.
pub(crate) type Light = SessionSummary;

/// Scan a session file, continuing from `prev` when the file only grew.
/// `Ok((stamp, None))`: not a pi session file (no session header). The stamp
/// is taken from the open file (one `fstat`).
pub(crate) fn read_session(path: &Path, prev: Option<&Light>) -> std::io::Result<(Stamp, Option<Light>)> {
    let file = session::open_file(path).map_err(io)?;
    let stamp = Stamp::of(&file.metadata()?);
    match session::summarize_file(path, file, prev) {
        Ok(mut light) => {
            light.parent_session = light.parent_session.filter(|p| !p.is_empty());
            light.clip_first_message(FIRST_MESSAGE_CHARS);
            Ok((stamp, Some(light)))
        }
        Err(SessionError::NotASession { .. }) => Ok((stamp, None)),
        Err(e) => Err(io(e)),
    }
}

fn io(e: SessionError) -> std::io::Error {
    match e {
        SessionError::Io { source, .. } => source,
        other => std::io::Error::other(other.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scans_header_name_and_first_message_incrementally() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("s.jsonl");
        let head = "{\"type\":\"session\",\"version\":3,\"id\":\"abc\",\"timestamp\":\"2026-01-01T00:00:00Z\",\"cwd\":\"/p\"}\n\
             {\"type\":\"message\",\"id\":\"1\",\"parentId\":null,\"message\":{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\" hello there \"}]}}\n";
        std::fs::write(&p, head).unwrap();
        let a = read_session(&p, None).unwrap().1.unwrap();
        assert_eq!((a.id.as_str(), a.first_message.as_deref(), a.name.as_deref()), ("abc", Some("hello there"), None));
        assert_eq!(a.scanned_to(), head.len() as u64);
        let more = "{\"type\":\"session_info\",\"id\":\"2\",\"parentId\":\"1\",\"name\":\"  Auth work \"}\n";
        std::fs::write(&p, format!("{head}{more}")).unwrap();
        let b = read_session(&p, Some(&a)).unwrap().1.unwrap();
        assert_eq!(b.name.as_deref(), Some("Auth work"));
        assert_eq!(b.first_message.as_deref(), Some("hello there"));
        let long = format!("{head}{}", "x".repeat(10)).replace("hello there", &"é".repeat(400));
        std::fs::write(&p, long).unwrap();
        let c = read_session(&p, None).unwrap().1.unwrap();
        assert_eq!(c.first_message.map(|m| m.chars().count()), Some(FIRST_MESSAGE_CHARS));
    }

    #[test]
    fn non_session_files_are_rejected() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("x.jsonl");
        std::fs::write(&p, "{\"createSurface\":{}}\n").unwrap();
        assert_eq!(read_session(&p, None).unwrap().1, None);
    }
}
