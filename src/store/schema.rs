//! The store's SQL, in one place: the tables, the column list a
//! [`SessionRecord`](super::SessionRecord) is read from, and every fixed
//! statement, as named constants. Statements whose shape depends on the query
//! (the ranking in `rank.rs`) are built there by named functions; user text
//! only ever reaches SQL as a bound parameter.

/// Bump when the tables or what goes into them change: the store is rebuilt.
pub(super) const SCHEMA_VERSION: i64 = 7;

/// Column order of the FTS tables, and each column's `bm25()` weight: what a
/// session is about (name, tags, summaries, decisions) above what the user
/// said, above the assistant, above tool output; text on abandoned branches last.
pub(super) const COLUMNS: [(&str, f64); 9] = [
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

/// Rowids per session in `entries` and `fts` (entries past it are not stored).
pub(super) const SPAN: i64 = 1 << 20;

/// The rowids of session `sid`: the meta row, then its entries.
pub(super) fn rowids(sid: i64) -> (i64, i64) {
    (sid * SPAN, sid * SPAN + SPAN - 1)
}

/// `sessions`: a [`SessionRecord`](super::SessionRecord)'s fields, then how
/// far the file was read (stat at the last read, offset after the last
/// complete line, the bytes before it).
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
pub(super) const CREATE_TABLES: &str = "
CREATE TABLE sessions(sid INTEGER PRIMARY KEY, path TEXT NOT NULL UNIQUE, id TEXT NOT NULL,
  cwd TEXT NOT NULL, created TEXT NOT NULL, modified_ms INTEGER NOT NULL, name TEXT, slug TEXT,
  description TEXT, summary TEXT, tags TEXT NOT NULL DEFAULT '[]', first_message TEXT,
  has_meta INTEGER NOT NULL DEFAULT 0, parent_session TEXT,
  message_count INTEGER NOT NULL DEFAULT 0, model TEXT, cost_usd REAL, session_name TEXT,
  last_activity_ms INTEGER NOT NULL DEFAULT 0,
  size INTEGER NOT NULL DEFAULT 0, mtime_ns INTEGER NOT NULL DEFAULT 0,
  inode INTEGER NOT NULL DEFAULT 0, read_to INTEGER NOT NULL DEFAULT 0, tail BLOB,
  version INTEGER NOT NULL, meta_mtime_ns INTEGER NOT NULL DEFAULT 0);
CREATE INDEX sessions_id ON sessions(id);
CREATE INDEX sessions_newest ON sessions(modified_ms, cwd);
CREATE INDEX sessions_rank ON sessions(sid, cwd, modified_ms);
CREATE TABLE entries(rowid INTEGER PRIMARY KEY, entry_id TEXT NOT NULL,
  role TEXT NOT NULL, active INTEGER NOT NULL, col TEXT);
CREATE VIRTUAL TABLE fts USING fts5(name, tags, summary, decisions, files, user, assistant, tool,
  abandoned, tokenize = 'porter unicode61');
CREATE VIRTUAL TABLE docs USING fts5(name, tags, summary, decisions, files, user, assistant, tool,
  abandoned, content = '', contentless_delete = 1, prefix = '3 4', tokenize = 'porter unicode61');
INSERT INTO fts(fts, rank) VALUES('automerge', 0);
INSERT INTO docs(docs, rank) VALUES('automerge', 0);
";

/// The tables to drop before a rebuild, virtual ones first (dropping one
/// drops its shadow tables).
pub(super) const LIST_TABLES: &str = "
SELECT name FROM sqlite_schema WHERE type = 'table' AND name NOT LIKE 'sqlite_%'
ORDER BY sql LIKE 'CREATE VIRTUAL%' DESC";

pub(super) const USER_VERSION: &str = "PRAGMA user_version";
pub(super) const DATA_VERSION: &str = "PRAGMA data_version";
pub(super) const INTEGRITY_CHECK: &str = "PRAGMA integrity_check";

/// The columns of the session `s` a record is read from, in the order of
/// [`SessionRecord::from_row`](super::SessionRecord::from_row).
macro_rules! record_columns {
    () => {
        "s.id, s.path, s.cwd, s.created, s.modified_ms, s.name, s.slug, s.description, s.summary,
         s.tags, s.first_message, s.has_meta, s.parent_session, s.message_count, s.model,
         s.cost_usd, s.last_activity_ms, s.session_name"
    };
}
pub(super) use record_columns;

/// How many columns [`record_columns`] reads (a query's own columns follow).
pub(super) const RECORD_COLUMNS: usize = 18;

/// Every stored session, last modified first.
pub(super) const ALL_RECORDS: &str = concat!(
    "SELECT ",
    record_columns!(),
    " FROM sessions s ORDER BY s.modified_ms DESC"
);

// Updates (update.rs).

/// What the last update saw of every stored file.
pub(super) const KNOWN_FILES: &str =
    "SELECT path, size, mtime_ns, inode, meta_mtime_ns, id FROM sessions";
/// How far one file was read ([`super::update`]'s `StoredFile`).
pub(super) const STORED_FILE: &str = "
SELECT sid, id, size, mtime_ns, inode, read_to, tail, version, meta_mtime_ns
FROM sessions WHERE path = ?1";
pub(super) const INSERT_SESSION: &str = "
INSERT INTO sessions(path, id, cwd, created, modified_ms, parent_session, version)
VALUES (?1, ?2, ?3, ?4, 0, ?5, ?6)";
pub(super) const SET_READ_STATE: &str = "
UPDATE sessions SET size = ?2, mtime_ns = ?3, inode = ?4, read_to = ?5, tail = ?6, modified_ms = ?7
WHERE sid = ?1";
pub(super) const SET_SESSION_NAME: &str = "UPDATE sessions SET session_name = ?2 WHERE sid = ?1";
pub(super) const ADD_MESSAGES: &str = "
UPDATE sessions SET message_count = message_count + ?2,
  first_message = COALESCE(first_message, ?3), last_activity_ms = max(last_activity_ms, ?4)
WHERE sid = ?1";
pub(super) const SESSION_NAME: &str = "SELECT session_name FROM sessions WHERE sid = ?1";
pub(super) const SET_META: &str = "
UPDATE sessions SET name = ?2, slug = ?3, description = ?4, summary = ?5, tags = ?6,
  has_meta = ?7, model = ?8, cost_usd = ?9, meta_mtime_ns = ?10
WHERE sid = ?1";
pub(super) const DELETE_SESSION: &str = "DELETE FROM sessions WHERE sid = ?1";

pub(super) const LAST_ENTRY_ROWID: &str =
    "SELECT max(rowid) FROM entries WHERE rowid BETWEEN ?1 AND ?2";
pub(super) const LAST_ENTRY_ID: &str = "
SELECT entry_id FROM entries WHERE rowid BETWEEN ?1 AND ?2 ORDER BY rowid DESC LIMIT 1";
pub(super) const INSERT_ENTRY: &str =
    "INSERT INTO entries(rowid, entry_id, role, active, col) VALUES (?1, ?2, ?3, ?4, ?5)";
pub(super) const DELETE_ENTRIES: &str = "DELETE FROM entries WHERE rowid BETWEEN ?1 AND ?2";

/// An entry's text, into the FTS column of its role (or `abandoned`).
pub(super) fn insert_entry_text(column: &str) -> &'static str {
    match column {
        "user" => "INSERT INTO fts(rowid, user) VALUES (?1, ?2)",
        "tool" => "INSERT INTO fts(rowid, tool) VALUES (?1, ?2)",
        "abandoned" => "INSERT INTO fts(rowid, abandoned) VALUES (?1, ?2)",
        _ => "INSERT INTO fts(rowid, assistant) VALUES (?1, ?2)",
    }
}
pub(super) const INSERT_META_TEXT: &str =
    "INSERT INTO fts(rowid, name, tags, summary, decisions, files) VALUES (?1, ?2, ?3, ?4, ?5, ?6)";
pub(super) const DELETE_TEXT_ROW: &str = "DELETE FROM fts WHERE rowid = ?1";
pub(super) const DELETE_TEXT: &str = "DELETE FROM fts WHERE rowid BETWEEN ?1 AND ?2";
/// The text size of each `fts` row of a range (what a ranking chunk holds).
pub(super) const TEXT_SIZES: &str = "
SELECT rowid, ifnull(length(name), 0) + ifnull(length(tags), 0) + ifnull(length(summary), 0)
  + ifnull(length(decisions), 0) + ifnull(length(files), 0) + ifnull(length(user), 0)
  + ifnull(length(assistant), 0) + ifnull(length(tool), 0) + ifnull(length(abandoned), 0)
FROM fts WHERE rowid BETWEEN ?1 AND ?2";

/// One ranking row of `docs` (rowid ?1) from the `fts` rows ?1..=?2.
pub(super) const INSERT_RANKING_ROW: &str = "
INSERT INTO docs(rowid, name, tags, summary, decisions, files, user, assistant, tool, abandoned)
SELECT ?1, group_concat(name, char(10)), group_concat(tags, char(10)),
  group_concat(summary, char(10)), group_concat(decisions, char(10)),
  group_concat(files, char(10)), group_concat(user, char(10)),
  group_concat(assistant, char(10)), group_concat(tool, char(10)),
  group_concat(abandoned, char(10))
FROM fts WHERE rowid BETWEEN ?1 AND ?2";
/// The ranking row an append continues: the last one before rowid ?2.
pub(super) const LAST_RANKING_ROW: &str =
    "SELECT max(rowid) FROM docs WHERE rowid > ?1 AND rowid < ?2";
pub(super) const DELETE_RANKING_ROW: &str = "DELETE FROM docs WHERE rowid = ?1";
pub(super) const DELETE_RANKING_ROWS: &str = "DELETE FROM docs WHERE rowid BETWEEN ?1 AND ?2";

/// Merge work done by each update, in pages per table (enough to keep the
/// number of segments steady under appends; see `Store::update_file`).
pub(super) const MERGE: &str = "
INSERT INTO fts(fts, rank) VALUES('merge', 64);
INSERT INTO docs(docs, rank) VALUES('merge', 64);";

// Queries (rank.rs).

pub(super) const COUNT_RANKING_ROWS: &str = "SELECT count(*) FROM docs_docsize";
/// How many ranking rows match ?1, counting no further than ?2.
pub(super) const COUNT_MATCHES: &str =
    "SELECT count(*) FROM (SELECT 1 FROM docs WHERE docs MATCH ?1 LIMIT ?2)";
/// Up to two snippets of the rows ?2..=?3 matching ?1.
pub(super) const SNIPPETS: &str = "
SELECT rowid, snippet(fts, -1, char(2), char(3), '…', 14) FROM fts
WHERE fts MATCH ?1 AND rowid BETWEEN ?2 AND ?3 LIMIT 2";
pub(super) const ENTRY_OF_ROW: &str = "SELECT entry_id, role, active FROM entries WHERE rowid = ?1";

#[cfg(test)]
mod tests {
    use super::*;

    /// The statements that list every text column spell them in [`COLUMNS`]' order.
    #[test]
    fn statements_list_the_text_columns_in_order() {
        let names: Vec<&str> = COLUMNS.iter().map(|c| c.0).collect();
        let listed = names.join(", ");
        assert!(CREATE_TABLES.contains(&format!("fts5({}", names[..8].join(", "))));
        assert!(INSERT_RANKING_ROW.contains(&format!("docs(rowid, {listed})")));
        let concat: Vec<String> = names
            .iter()
            .map(|c| format!("group_concat({c}, char(10))"))
            .collect();
        let flat = INSERT_RANKING_ROW
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ");
        assert!(flat.contains(&concat.join(", ")), "{flat}");
        let sizes: Vec<String> = names
            .iter()
            .map(|c| format!("ifnull(length({c}), 0)"))
            .collect();
        let flat = TEXT_SIZES.split_whitespace().collect::<Vec<_>>().join(" ");
        assert!(flat.contains(&sizes.join(" + ")), "{flat}");
    }
}
