//! [`SessionRecord`]: what is known about one session, the one shape in which
//! a session leaves the store, whoever asks (the list, search hits, `@@`
//! resolution and completion, the overview).

use std::path::PathBuf;

use super::schema::RECORD_COLUMNS;

/// One session: its header, what the reader's summary found and what its
/// meta file says.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionRecord {
    pub id: String,
    /// The session file under the sessions directory (for a meta file whose
    /// session is gone: the path the meta file recorded).
    pub path: PathBuf,
    pub cwd: String,
    /// Header timestamp (ISO).
    pub created: String,
    /// File modification time, ms since the epoch (0 when the file is missing).
    pub modified_ms: u64,
    /// The meta name, else the session's own (`session_info`) name.
    pub name: Option<String>,
    pub slug: Option<String>,
    pub description: Option<String>,
    pub summary: Option<String>,
    pub tags: Vec<String>,
    pub first_message: Option<String>,
    pub has_meta: bool,
    /// Header `parentSession`: the path of the session this one came from.
    pub parent_session: Option<String>,
    pub message_count: u64,
    /// `provider/id` of the model that wrote the meta.
    pub model: Option<String>,
    pub cost_usd: Option<f64>,
    /// pi's own `session_info` name, when the file has one.
    #[serde(skip)]
    pub session_name: Option<String>,
    /// pi's list "modified": the latest user or assistant message time, else
    /// the header time, else the file time.
    pub last_activity_ms: u64,
}

impl SessionRecord {
    /// The name `@@` shows and looks a session up by first: pi's own
    /// (`session_info`) name, which pi's session list shows, else the meta's.
    pub fn pi_name(&self) -> Option<&str> {
        self.session_name.as_deref().or(self.name.as_deref())
    }

    /// How a session is shown to a person, everywhere (confirmations,
    /// completion, selectors, ambiguity lists, `/continue`, `list`, search):
    /// its meta name, else pi's own (`session_info`) name, else a title made
    /// from its first message ([`crate::text::title_from_message`]), else its
    /// short id.
    pub fn title(&self) -> String {
        let named = [self.name.as_deref(), self.session_name.as_deref()]
            .into_iter()
            .flatten()
            .map(crate::text::flat)
            .find(|n| !n.is_empty());
        named
            .or_else(|| {
                let message = self.first_message.as_deref().unwrap_or_default();
                Some(crate::text::title_from_message(message)).filter(|t| !t.is_empty())
            })
            .unwrap_or_else(|| self.id.chars().take(8).collect())
    }

    /// The day (`YYYY-MM-DD`, UTC) the session was last active (its last
    /// message, as pi's session list sorts them), else the day it was created.
    pub fn active_day(&self) -> String {
        let iso = match self.last_activity_ms {
            0 => self.created.clone(),
            ms => crate::time::iso_from_millis(ms as i64),
        };
        iso.chars().take(10).collect()
    }

    /// A record from the columns [`super::schema::record_columns`] lists.
    pub(super) fn from_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<SessionRecord> {
        let tags: String = r.get(9)?;
        let created: String = r.get(3)?;
        let modified_ms = r.get::<_, i64>(4)?.max(0) as u64;
        let last_message_ms = r.get(16)?;
        Ok(SessionRecord {
            id: r.get(0)?,
            path: PathBuf::from(r.get::<_, String>(1)?),
            cwd: r.get(2)?,
            last_activity_ms: crate::session::last_activity(
                Some(last_message_ms),
                &created,
                modified_ms,
            ),
            created,
            modified_ms,
            name: r.get(5)?,
            slug: r.get(6)?,
            description: r.get(7)?,
            summary: r.get(8)?,
            tags: serde_json::from_str(&tags).unwrap_or_default(),
            first_message: r.get(10)?,
            has_meta: r.get(11)?,
            parent_session: r.get(12)?,
            message_count: r.get::<_, i64>(13)?.max(0) as u64,
            model: r.get(14)?,
            cost_usd: r.get(15)?,
            session_name: r.get(RECORD_COLUMNS - 1)?,
        })
    }
}
