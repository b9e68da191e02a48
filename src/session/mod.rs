//! Reading pi session files, exactly as pi's `SessionManager` reads them.
//!
//! One reader, three tiers, every consumer uses one of them:
//! - header only: [`read_header`];
//! - summary (name, first message, message count, last activity):
//!   [`summarize`];
//! - the full tree ([`open`], [`read_file`]) with its active branch and
//!   context, and the entries appended after an offset ([`read_appended`]).
//!
//! Every file is opened by [`open_file`]. Recoverable damage is counted in
//! [`Warnings`], never fatal.

mod context;
mod convert;
pub mod discovery;
mod entries;
mod lines;
mod raw;
mod read;
mod repair;
mod summary;
pub mod views;

use std::path::{Path, PathBuf};

pub use convert::{
    bounded, cut_note, iso_to_ms, utf16_len, Cleaning, MESSAGE_TEXT_HEAD_BYTES, STRING_HEAD_BYTES,
    TOOL_TEXT_HEAD_BYTES, TOOL_TEXT_HEAD_UNITS,
};

pub use entries::*;
pub use lines::LONG_LINE;
pub use read::{open_file, LinePicker, Pick, MAX_ENTRIES};
pub use summary::{last_activity, summarize, SessionSummary};

/// Why a session file could not be read at all. Recoverable problems inside a
/// file are not errors: they are counted in [`Warnings`].
#[derive(Debug, thiserror::Error)]
pub enum SessionError {
    #[error("{path}: cannot read: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path}: not a pi session ({reason})")]
    NotASession { path: PathBuf, reason: String },
}

/// A parsed session file.
#[derive(Debug, Clone)]
pub struct Session {
    pub path: PathBuf,
    pub header: SessionHeader,
    /// Entries in file order (v1 files migrated to linear ids, v2 `hookMessage` → `custom`).
    pub entries: Vec<Entry>,
    pub warnings: Warnings,
    /// Entry index by id; a later duplicate wins, as in pi's `byId` map.
    by_id: read::IdIndex,
}

/// Open and parse a whole session file in bounded memory: one line is held
/// at a time, image data is skipped and tool-result text keeps a head.
pub fn open(path: &Path) -> Result<Session, SessionError> {
    read_file(path, open_file(path)?)
}

/// [`open`] of a file already opened (after a containment check, say).
pub fn read_file(path: &Path, file: std::fs::File) -> Result<Session, SessionError> {
    let read::Parsed {
        header,
        entries,
        mut warnings,
        ..
    } = read::read(path, file, 0, None, false)?;
    let header = header.ok_or_else(|| read::not_a_session(path, "no JSON records"))?;
    let by_id = read::index_and_check(&entries, &mut warnings);
    Ok(Session {
        path: path.to_path_buf(),
        header,
        entries,
        warnings,
        by_id,
    })
}

/// Read only the header line (the first JSON record).
pub fn read_header(path: &Path) -> Result<SessionHeader, SessionError> {
    match read::header_only(path)? {
        Some(header) => Ok(header),
        // Headerless but pi-like: the full reader synthesizes the header.
        None => read_file(path, open_file(path)?).map(|s| s.header),
    }
}

/// What [`read_appended`] read.
#[derive(Debug, Clone)]
pub struct Appended {
    /// The file's header when reading from 0 (`None` for a file with no complete line yet).
    pub header: Option<SessionHeader>,
    pub entries: Vec<Entry>,
    /// Where each entry's line starts in the file (what [`read_lines`] takes).
    pub lines: Vec<u64>,
    /// Offset just after the last complete line read: where the next call starts.
    pub end: u64,
}

/// For readers that follow a file as it grows (the search index): the
/// entries of the complete lines from byte `from` on. `from` is 0 or an
/// [`Appended::end`] of a version 3+ file (older versions number their
/// entries by position, so they are read from 0). A half-written last line is
/// left for the next call.
pub fn read_appended(path: &Path, from: u64) -> Result<Appended, SessionError> {
    read_range(path, open_file(path)?, from, None)
}

/// The entries of the complete lines of `file` (the session file `path`,
/// already opened) that start in `from..until`: what the search index reads
/// back of entries it found earlier at [`Appended::lines`] offsets (their
/// text is not stored twice). `from` is a line start of a version 3+ file.
pub fn read_lines(
    path: &Path,
    file: std::fs::File,
    from: u64,
    until: u64,
) -> Result<Appended, SessionError> {
    read_range(path, file, from, Some(until))
}

/// [`read_lines`], parsing only the lines `keep` picks, told from their
/// JSON text (`from` > 0: lines after the header; the others give no
/// entry), and stopping where it says: a search's snippets leave out the
/// entries that cannot hold the query's words, and stop once they have
/// their snippets, before the rest cost a parse and the redaction of their
/// text. The texts are cleaned as `cleaning` says ([`Cleaning::AsWritten`]
/// is for the snippets alone: see its docs).
pub fn read_lines_where(
    path: &Path,
    file: std::fs::File,
    from: u64,
    until: u64,
    keep: &mut dyn LinePicker,
    cleaning: Cleaning,
) -> Result<Appended, SessionError> {
    let read::Parsed {
        entries,
        lines,
        offset,
        ..
    } = read::read_where(path, file, from, until, keep, cleaning)?;
    Ok(Appended {
        header: None,
        entries,
        lines,
        end: offset,
    })
}

fn read_range(
    path: &Path,
    file: std::fs::File,
    from: u64,
    until: Option<u64>,
) -> Result<Appended, SessionError> {
    let read::Parsed {
        header,
        entries,
        lines,
        offset,
        ..
    } = read::read(path, file, from, until, true)?;
    let header = header.filter(|_| from == 0);
    Ok(Appended {
        header,
        entries,
        lines,
        end: offset,
    })
}

impl Session {
    /// The entry with this id.
    pub fn get(&self, id: &str) -> Option<&Entry> {
        self.by_id.find(&self.entries, id).map(|i| &self.entries[i])
    }

    /// pi's default leaf: the last entry in file order.
    pub fn default_leaf_id(&self) -> Option<&str> {
        self.entries.last().map(|e| e.id.as_str())
    }

    /// The active branch from the root to `leaf` (or the default leaf), as pi's
    /// `getBranch`: empty for an unknown leaf. Unlike pi, a parent cycle ends
    /// the walk at the first repeated entry instead of looping forever.
    pub fn branch(&self, leaf: Option<&str>) -> Vec<&Entry> {
        let Some(start) = leaf.or_else(|| self.default_leaf_id()) else {
            return Vec::new();
        };
        let mut seen = vec![false; self.entries.len()];
        let mut path = Vec::new();
        let mut cur = self.by_id.find(&self.entries, start);
        while let Some(i) = cur {
            if std::mem::replace(&mut seen[i], true) {
                break;
            }
            let entry = &self.entries[i];
            path.push(entry);
            cur = entry
                .parent_id
                .as_deref()
                .and_then(|p| self.by_id.find(&self.entries, p));
        }
        path.reverse();
        path
    }

    /// pi's `getSessionName`: the latest `session_info` name in FILE order (pi
    /// scans all entries, not the branch; the branch argument is accepted for
    /// callers but does not change the result, for parity). Blank → `None`.
    pub fn session_name(&self, _branch: &[&Entry]) -> Option<String> {
        self.entries
            .iter()
            .rev()
            .find_map(|e| match &e.kind {
                EntryKind::SessionInfo { name } => {
                    Some(name.as_deref().map(str::trim).filter(|n| !n.is_empty()))
                }
                _ => None,
            })?
            .map(str::to_string)
    }

    /// The messages of pi's `buildSessionContext` over a branch, borrowed from
    /// the session: what serializing needs, without copying every message.
    pub fn context_refs<'a>(
        &self,
        branch: &'a [&'a Entry],
    ) -> impl Iterator<Item = MessageRef<'a>> + 'a {
        context::refs(branch)
    }

    /// Text of the first user message in the file (pi's session list preview:
    /// text blocks joined with spaces; messages without text are skipped).
    pub fn first_user_message(&self) -> Option<String> {
        self.entries.iter().find_map(|e| match &e.kind {
            EntryKind::Message(AgentMessage::User { content, .. }) => {
                Some(text_joined(content, " ")).filter(|t| !t.is_empty())
            }
            _ => None,
        })
    }
}
