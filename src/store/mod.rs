//! The search index: one SQLite file, `<agent dir>/sessions-index/index.sqlite`,
//! holding what the plugin knows about every session (the `sessions` table:
//! the catalog's fields) and the text of every message, for full-text search
//! (FTS5, `porter unicode61`): a few ranking rows per session (its meta,
//! chunks of its text), ranked with `bm25()`, and one row per message, for
//! the snippets of the sessions shown.
//!
//! Why SQLite: several pi processes and the CLI update and query the same
//! index at once. WAL lets readers go on while one writer commits; the busy
//! timeout queues writers; each session's update is one `BEGIN IMMEDIATE`
//! transaction that re-reads the stored state under the write lock, so two
//! processes never both append the same lines, and a crash (even SIGKILL)
//! leaves the last committed state. The index is a cache, never the source
//! of truth: a schema change (`PRAGMA user_version`) or a corrupt file
//! rebuilds it from the session and meta files, with one warning.
//!
//! Session files are append-only, so an update reads only the lines added
//! since the last one ([`crate::session::read_appended`]); a file that shrank,
//! changed inode or whose last read bytes changed is read again whole.
//! Text is redacted ([`crate::redact`]) before it is stored; image data never
//! reaches the reader's model, so it never reaches the index.

pub(crate) mod cache;
pub mod meta;
mod rank;
mod update;

use std::path::{Path, PathBuf};

use rusqlite::{Connection, ErrorCode};

pub use rank::{parse_since, Query, SessionHit, Snippet, MARK_END, MARK_START};
pub use update::UpdateReport;

/// Bump when the tables or what goes into them change: the index is rebuilt.
const SCHEMA_VERSION: i64 = 7;

/// Column order of the FTS table, and each column's `bm25()` weight: what a
/// session is about (name, tags, summaries, decisions) above what the user
/// said, above the assistant, above tool output; text on abandoned branches last.
const COLUMNS: [(&str, f64); 9] = [
    ("name", 10.0),
    ("tags", 8.0),
    ("summary", 5.0),
    ("decisions", 5.0),
    ("files", 3.0),
    ("user", 3.0),
    ("assistant", 1.5),
    ("tool", 1.0),
    ("abandoned", 0.5),
];

/// `sessions`: the catalog's fields, then how far the file was read (stat at
/// the last read, offset after the last complete line, the bytes before it).
/// `docs`: what queries rank and filter on, a few rows per session: its meta
/// row and its entries' text in chunks of about 16 KB (each row's rowid is
/// that of its first `fts` row), so a frequent word costs one `bm25()` per
/// chunk, not per message, and an append rewrites only the last chunk.
/// Contentless, written from `fts` in the update's transaction; prefix
/// indexes of 3 and 4 letters keep short last-word prefixes cheap.
/// `entries` and `fts`: every entry and its text, used only to pick the
/// snippets of the sessions shown. Session `sid` owns the rowids
/// [`rowids`]`(sid)`: its meta is the first, its entries follow in file order,
/// so one rowid range finds a session's rows in both tables.
const SCHEMA: &str = "
CREATE TABLE sessions(sid INTEGER PRIMARY KEY, path TEXT NOT NULL UNIQUE, id TEXT NOT NULL, cwd TEXT NOT NULL,
  created TEXT NOT NULL, modified_ms INTEGER NOT NULL, name TEXT, slug TEXT, description TEXT, summary TEXT,
  tags TEXT NOT NULL DEFAULT '[]', first_message TEXT, has_meta INTEGER NOT NULL DEFAULT 0, parent_session TEXT,
  message_count INTEGER NOT NULL DEFAULT 0, model TEXT, cost_usd REAL, session_name TEXT,
  last_activity_ms INTEGER NOT NULL DEFAULT 0,
  size INTEGER NOT NULL DEFAULT 0, mtime_ns INTEGER NOT NULL DEFAULT 0, inode INTEGER NOT NULL DEFAULT 0,
  read_to INTEGER NOT NULL DEFAULT 0, tail BLOB, version INTEGER NOT NULL, meta_mtime_ns INTEGER NOT NULL DEFAULT 0);
CREATE INDEX sessions_id ON sessions(id);
CREATE INDEX sessions_newest ON sessions(modified_ms, cwd);
CREATE INDEX sessions_rank ON sessions(sid, cwd, modified_ms);
CREATE TABLE entries(rowid INTEGER PRIMARY KEY, entry_id TEXT NOT NULL,
  role TEXT NOT NULL, active INTEGER NOT NULL, col TEXT);
CREATE VIRTUAL TABLE fts USING fts5(name, tags, summary, decisions, files, user, assistant, tool, abandoned,
  tokenize = 'porter unicode61');
CREATE VIRTUAL TABLE docs USING fts5(name, tags, summary, decisions, files, user, assistant, tool, abandoned,
  content = '', contentless_delete = 1, prefix = '3 4', tokenize = 'porter unicode61');
INSERT INTO fts(fts, rank) VALUES('automerge', 0); INSERT INTO docs(docs, rank) VALUES('automerge', 0);
";

/// Rowids per session in `entries` and `fts` (entries past it are not indexed).
const SPAN: i64 = 1 << 20;

/// The rowids of session `sid`: the meta row, then its entries.
fn rowids(sid: i64) -> (i64, i64) {
    (sid * SPAN, sid * SPAN + SPAN - 1)
}

#[derive(Debug, thiserror::Error)]
pub enum SearchError {
    #[error("search index {path}: {source}")]
    Sql {
        path: PathBuf,
        source: rusqlite::Error,
    },
    #[error("search index {path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("bad search query: {0}")]
    BadQuery(String),
}

/// What the index knows about one session (the catalog's fields).
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionRow {
    pub id: String,
    pub path: PathBuf,
    pub cwd: String,
    /// Header timestamp (ISO).
    pub created: String,
    /// File modification time, ms since the epoch.
    pub modified_ms: u64,
    /// The meta name, else the session's own (`session_info`) name.
    pub name: Option<String>,
    pub slug: Option<String>,
    pub description: Option<String>,
    pub summary: Option<String>,
    pub tags: Vec<String>,
    pub first_message: Option<String>,
    pub has_meta: bool,
    pub parent_session: Option<String>,
    pub message_count: u64,
    /// `provider/id` of the model that wrote the meta.
    pub model: Option<String>,
    pub cost_usd: Option<f64>,
    /// pi's own `session_info` name, when the file has one (the catalog
    /// prefers it to the meta name, and knows the session by both).
    #[serde(skip)]
    pub session_name: Option<String>,
    /// pi's list "modified": the latest user or assistant message time, else
    /// the header time, else the file time.
    pub last_activity_ms: u64,
}

const ROW_COLUMNS: &str = "s.id, s.path, s.cwd, s.created, s.modified_ms, s.name, s.slug, s.description, s.summary, \
     s.tags, s.first_message, s.has_meta, s.parent_session, s.message_count, s.model, s.cost_usd, s.last_activity_ms";

fn session_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<SessionRow> {
    let tags: String = r.get(9)?;
    let created: String = r.get(3)?;
    let modified_ms = r.get::<_, i64>(4)?.max(0) as u64;
    Ok(SessionRow {
        id: r.get(0)?,
        path: PathBuf::from(r.get::<_, String>(1)?),
        cwd: r.get(2)?,
        last_activity_ms: crate::session::last_activity(Some(r.get(16)?), &created, modified_ms),
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
        session_name: None,
    })
}

/// An open index. Cheap to open; not shared between threads (open one each).
pub struct Index {
    conn: Connection,
    path: PathBuf,
    /// Why the index was rebuilt when it was opened, if it was (already logged once).
    pub rebuilt: Option<String>,
    /// Sessions kept out (`privacy.exclude`): never stored, never returned.
    privacy: crate::config::PrivacyConfig,
}

/// `<agent dir>/sessions-index/index.sqlite`.
pub fn index_path(agent_dir: &Path) -> PathBuf {
    agent_dir.join("sessions-index").join("index.sqlite")
}

impl Index {
    /// Open (creating or rebuilding when needed) the index of `agent_dir`.
    pub fn open(agent_dir: &Path) -> Result<Index, SearchError> {
        let path = index_path(agent_dir);
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).map_err(|source| SearchError::Io {
                path: dir.to_path_buf(),
                source,
            })?;
        }
        match Index::open_at(&path) {
            Err(SearchError::Sql { source, .. }) if is_corrupt(&source) => {
                let reason = format!("it was not a readable database ({source})");
                tracing::warn!("search index {}: {reason}; rebuilding it", path.display());
                for suffix in ["", "-wal", "-shm"] {
                    let mut file = path.clone().into_os_string();
                    file.push(suffix);
                    let _ = std::fs::remove_file(file);
                }
                let mut index = Index::open_at(&path)?;
                index.rebuilt = Some(reason);
                Ok(index)
            }
            other => other,
        }
    }

    /// Keep the sessions `privacy` excludes out of the index and its results.
    pub fn excluding(mut self, privacy: &crate::config::PrivacyConfig) -> Index {
        self.privacy = privacy.clone();
        self
    }

    fn open_at(path: &Path) -> Result<Index, SearchError> {
        let sql = |source| SearchError::Sql {
            path: path.to_path_buf(),
            source,
        };
        let conn = Connection::open(path).map_err(sql)?;
        conn.busy_timeout(std::time::Duration::from_secs(10))
            .map_err(sql)?;
        // Two processes switching a new file to WAL at once deadlock on their
        // shared locks, and SQLite answers one of them "busy" at once, without
        // the busy handler: that one retries (within the same 10 s).
        let started = std::time::Instant::now();
        while let Err(e) = conn.pragma_update(None, "journal_mode", "WAL") {
            if e.sqlite_error_code() != Some(ErrorCode::DatabaseBusy)
                || started.elapsed().as_secs() >= 10
            {
                return Err(sql(e));
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        conn.pragma_update(None, "synchronous", "NORMAL")
            .map_err(sql)?;
        // Readers that never pause (several pi processes) keep the WAL from
        // restarting: it grew to 0.9-1.8 GB in the bench's 30 s of 4 updaters
        // and 4 queriers, and a WAL keeps its largest size on disk while any
        // connection is open (the catalog keeps one) unless cut when it restarts.
        conn.pragma_update(None, "journal_size_limit", 64 << 20)
            .map_err(sql)?;
        let mut index = Index {
            conn,
            path: path.to_path_buf(),
            rebuilt: None,
            privacy: Default::default(),
        };
        index.rebuilt = index.ensure_schema().map_err(sql)?;
        Ok(index)
    }

    /// Create the tables, or rebuild them when they are of another schema
    /// version: under the write lock, so one process rebuilds.
    fn ensure_schema(&mut self) -> rusqlite::Result<Option<String>> {
        let version =
            |c: &Connection| c.query_row("PRAGMA user_version", [], |r| r.get::<_, i64>(0));
        if version(&self.conn)? == SCHEMA_VERSION {
            return Ok(None);
        }
        let tx = self
            .conn
            .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
        let found = version(&tx)?;
        if found == SCHEMA_VERSION {
            return Ok(None);
        }
        let tables: Vec<String> = tx
            .prepare(
                "SELECT name FROM sqlite_schema WHERE type = 'table' AND name NOT LIKE 'sqlite_%' \
                 ORDER BY sql LIKE 'CREATE VIRTUAL%' DESC",
            )?
            .query_map([], |r| r.get(0))?
            .collect::<rusqlite::Result<_>>()?;
        let rebuilt = (!tables.is_empty())
            .then(|| format!("schema version {found}, expected {SCHEMA_VERSION}"));
        for table in &tables {
            tx.execute_batch(&format!(
                "DROP TABLE IF EXISTS \"{}\"",
                table.replace('"', "\"\"")
            ))?;
        }
        tx.execute_batch(SCHEMA)?;
        tx.pragma_update(None, "user_version", SCHEMA_VERSION)?;
        tx.commit()?;
        if let Some(reason) = &rebuilt {
            tracing::warn!(
                "search index {}: {reason}; rebuilding it",
                self.path.display()
            );
        }
        Ok(rebuilt)
    }

    fn sql(&self, source: rusqlite::Error) -> SearchError {
        SearchError::Sql {
            path: self.path.clone(),
            source,
        }
    }

    /// Every indexed session, last modified first, with its `session_info` name and last activity.
    pub fn sessions(&self) -> Result<Vec<SessionRow>, SearchError> {
        let sql = format!(
            "SELECT {ROW_COLUMNS}, s.session_name FROM sessions s ORDER BY s.modified_ms DESC"
        );
        let row = |r: &rusqlite::Row<'_>| {
            Ok(SessionRow {
                session_name: r.get(17)?,
                ..session_row(r)?
            })
        };
        let run = || -> rusqlite::Result<Vec<SessionRow>> {
            self.conn
                .prepare_cached(&sql)?
                .query_map([], row)?
                .collect()
        };
        run().map_err(|e| self.sql(e))
    }

    /// Changes when another connection commits (`PRAGMA data_version`): the
    /// catalog reloads its rows only then.
    pub fn data_version(&self) -> Result<i64, SearchError> {
        self.conn
            .query_row("PRAGMA data_version", [], |r| r.get(0))
            .map_err(|e| self.sql(e))
    }

    /// `PRAGMA integrity_check` (tests and the bench): `ok` when sound.
    pub fn integrity_check(&self) -> Result<String, SearchError> {
        self.conn
            .query_row("PRAGMA integrity_check", [], |r| r.get(0))
            .map_err(|e| self.sql(e))
    }
}

fn is_corrupt(e: &rusqlite::Error) -> bool {
    matches!(
        e.sqlite_error_code(),
        Some(ErrorCode::DatabaseCorrupt | ErrorCode::NotADatabase)
    )
}

impl Index {
    /// The `@@` search rule: sessions holding the words of a reference that
    /// matched no id, name or slug, together and in order (one phrase:
    /// `@@nothing-like-this` is not a search for any of its words), best
    /// first, with scores (the resolver resolves when the first is clearly
    /// ahead, else lists them).
    pub fn rank_reference(
        &self,
        words: &str,
        cwd: &str,
        limit: usize,
    ) -> Result<Vec<SessionHit>, SearchError> {
        let words: String = words
            .chars()
            .map(|c| if c.is_alphanumeric() { c } else { ' ' })
            .collect();
        let words = format!("\"{}\"", words.trim());
        self.search(&Query {
            current_cwd: Some(cwd.to_string()),
            limit,
            ..Query::parse(&words)?
        })
    }
}
