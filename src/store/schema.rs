//! The store's SQL, in one place: the tables, the column list a
//! [`SessionRecord`](super::SessionRecord) is read from, and every fixed
//! statement, as named constants. Statements whose shape depends on the query
//! (the ranking in `rank.rs`) are built there by named functions; user text
//! only ever reaches SQL as a bound parameter.

/// Bump when the tables or what goes into them change: the store is rebuilt.
pub(super) const SCHEMA_VERSION: i64 = 10;

/// Column order of the ranking table, and each column's `bm25()` weight: what
/// a session is about (name, tags, summaries, decisions) above what the user
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

/// Where each text column is in [`COLUMNS`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Column {
    Name = 0,
    Tags,
    Summary,
    Decisions,
    Files,
    User,
    Assistant,
    Tool,
    Abandoned,
}

#[cfg(test)]
impl Column {
    pub(super) fn name(self) -> &'static str {
        COLUMNS[self as usize].0
    }
}

/// Rowids per session in `entries`, `docs` and `embeddings` (entries past it
/// are not stored).
pub(super) const SPAN: i64 = 1 << 20;

/// The rowids of session `sid`: the meta row, then its entries.
pub(super) fn rowids(sid: i64) -> (i64, i64) {
    (sid * SPAN, sid * SPAN + SPAN - 1)
}

/// `sessions`: a [`SessionRecord`](super::SessionRecord)'s fields, then how
/// far the file was read (stat at the last read, offset after the last
/// complete line, the bytes before it). Session ids (`sid`) are never reused
/// (AUTOINCREMENT), so what a process keeps in memory by `sid` (vectors) never
/// lands on another session.
///
/// Session `sid` owns the rowids [`rowids`]`(sid)` of the other tables: its
/// meta is the first, its entries follow in file order, so one rowid range
/// finds a session's rows everywhere.
///
/// `entries`: every entry read: its id, role, branch, the column its text
/// ranks in, where its line starts in the session file and how many bytes of
/// text it has. The text itself is not stored: snippets and embeddings read
/// it again from the file at `line` (one copy of the words on disk is the
/// session file's).
///
/// `meta_text`: the text of the session's meta row (name, tags, summary,
/// decisions, files), for its snippets and its embedding.
///
/// `docs`: what queries rank and filter on, a few rows per session: its meta
/// row and its entries' text in chunks of about 16 KB (each row's rowid is
/// that of its first entry), so a frequent word costs one `bm25()` per chunk,
/// not per message, and an append rewrites only the last chunk. Contentless;
/// prefix indexes of 3 and 4 letters keep short last-word prefixes cheap.
///
/// `embeddings`: the rows whose text is embedded for semantic ranking (user
/// and assistant turns, summaries, the meta), keyed by their rowid: a hash
/// of the text, its size, and once embedded (`vectors` not NULL; pending
/// until then) the int8 vectors of its passages back to back, with `seq`,
/// the order in which vectors were written (a process that holds them in
/// memory loads only those past the last `seq` it saw).
///
/// `counters`: `vectors` (the last `seq` given), `dropped` (bumped whenever
/// embedded rows are deleted: a process holding vectors drops the sessions
/// that are gone), and (added by [`ADDITIONS`]): `writes` (bumped by every
/// transaction that writes the `sessions` table), `store_id` (random: a
/// rebuilt store has another; `writes` and `store_id` identify what a
/// freshness stamp beside the store was made from, see `update.rs`), how many `embeddings` rows
/// are `pending` and `embedded`, kept by the transactions that insert,
/// embed and delete them (counting 1,033,803 rows at 30,000 sessions took a
/// CLI search 0.21 s; a trigger would make every insert a statement
/// transaction, which flushes the full-text index's pending terms at every
/// row).
pub(super) const CREATE_TABLES: &str = "
CREATE TABLE sessions(sid INTEGER PRIMARY KEY AUTOINCREMENT, path TEXT NOT NULL UNIQUE,
  id TEXT NOT NULL, cwd TEXT NOT NULL, created TEXT NOT NULL, modified_ms INTEGER NOT NULL,
  name TEXT, slug TEXT, description TEXT, summary TEXT, tags TEXT NOT NULL DEFAULT '[]',
  first_message TEXT, has_meta INTEGER NOT NULL DEFAULT 0, parent_session TEXT,
  message_count INTEGER NOT NULL DEFAULT 0, model TEXT, cost_usd REAL, session_name TEXT,
  last_activity_ms INTEGER NOT NULL DEFAULT 0,
  size INTEGER NOT NULL DEFAULT 0, mtime_ns INTEGER NOT NULL DEFAULT 0,
  inode INTEGER NOT NULL DEFAULT 0, ctime_ns INTEGER NOT NULL DEFAULT 0,
  read_to INTEGER NOT NULL DEFAULT 0, tail BLOB,
  version INTEGER NOT NULL, meta_mtime_ns INTEGER NOT NULL DEFAULT 0);
CREATE INDEX sessions_id ON sessions(id);
CREATE INDEX sessions_newest ON sessions(modified_ms, cwd);
CREATE INDEX sessions_rank ON sessions(sid, cwd, modified_ms);
CREATE TABLE entries(rowid INTEGER PRIMARY KEY, entry_id TEXT NOT NULL, role TEXT NOT NULL,
  active INTEGER NOT NULL, col INTEGER, line INTEGER NOT NULL, bytes INTEGER NOT NULL);
CREATE TABLE meta_text(sid INTEGER PRIMARY KEY, name TEXT, tags TEXT, summary TEXT,
  decisions TEXT, files TEXT);
CREATE VIRTUAL TABLE docs USING fts5(name, tags, summary, decisions, files, user, assistant, tool,
  abandoned, content = '', contentless_delete = 1, prefix = '3 4', tokenize = 'porter unicode61');
INSERT INTO docs(docs, rank) VALUES('automerge', 0);
CREATE TABLE embeddings(rowid INTEGER PRIMARY KEY, hash INTEGER NOT NULL, bytes INTEGER NOT NULL,
  seq INTEGER, vectors BLOB);
CREATE INDEX embeddings_pending ON embeddings(rowid) WHERE vectors IS NULL;
CREATE INDEX embeddings_seq ON embeddings(seq) WHERE seq IS NOT NULL;
CREATE INDEX embeddings_hash ON embeddings(hash) WHERE vectors IS NOT NULL;
CREATE TABLE counters(name TEXT PRIMARY KEY, value INTEGER NOT NULL) WITHOUT ROWID;
INSERT INTO counters VALUES('vectors', 0), ('dropped', 0);
";

/// FTS5's settings the store keeps in `docs_config` (see [`ADDITIONS`]), as
/// SQL literals: [`ADDITIONS`] writes them and [`ADDITIONS_PRESENT`] checks
/// them, so the two cannot disagree (a store that never matched would take
/// the write lock at every open to add them again).
macro_rules! fts5_crisismerge {
    () => {
        "64"
    };
}
macro_rules! fts5_hashsize {
    () => {
        "8388608"
    };
}

/// Added to a store of this version in place, once, by the first process
/// that finds it missing (a rebuild would throw away its vectors: hours of
/// embedding at 30,000 sessions), and to every new store: `sessions_files`,
/// what a freshness pass reads of every session ([`KNOWN_FILES`]), a fifth
/// of the `sessions` table's pages.
/// Also the `pending` and `embedded` counters, counted once from the rows;
/// with [`ADD_TEXT_HASH`], `entries.hash`: the [`text_hash`](super::rows::text_hash) of each
/// entry's stored text (NULL: stored before it was kept), so a file read
/// again whole that still holds every stored text needs no scrub (see
/// `update.rs`, `Plan::forget`), and a snippet uses an entry's text read
/// as written only when it is the stored one (`snippets.rs`). And FTS5's `crisismerge` at 64 (a
/// safety net: `merge.rs` merges in transactions of its own, so that
/// flushes, in write transactions, do not), and its `hashsize` at 8 MB
/// (FTS5's default is 1 MB): the terms a write transaction adds are kept in
/// memory up to that size before FTS5 writes them as a segment, so a first
/// build writes fewer, larger segments and merges less (see `update.rs`'
/// `PASS_CACHE_KIB` for what the two measured together).
pub(super) const ADDITIONS: &str = concat!(
    "
CREATE INDEX IF NOT EXISTS sessions_files
  ON sessions(path, size, mtime_ns, inode, ctime_ns, meta_mtime_ns, id);
INSERT OR IGNORE INTO counters
  SELECT 'pending', count(*) FROM embeddings WHERE vectors IS NULL;
INSERT OR IGNORE INTO counters
  SELECT 'embedded', count(*) FROM embeddings WHERE vectors IS NOT NULL;
INSERT OR IGNORE INTO counters VALUES('writes', 0), ('store_id', random());
INSERT INTO docs(docs, rank) VALUES('crisismerge', ",
    fts5_crisismerge!(),
    ");
INSERT INTO docs(docs, rank) VALUES('hashsize', ",
    fts5_hashsize!(),
    ")"
);
/// The one addition that cannot be made twice: run when [`TEXT_HASH_PRESENT`] is 0.
pub(super) const ADD_TEXT_HASH: &str = "ALTER TABLE entries ADD COLUMN hash INTEGER";
pub(super) const TEXT_HASH_PRESENT: &str =
    "SELECT count(*) FROM pragma_table_info('entries') WHERE name = 'hash'";
/// How many of [`ADDITIONS`]' objects and [`ADD_TEXT_HASH`]'s column the
/// store has (all: [`ADDITIONS_COUNT`]).
pub(super) const ADDITIONS_PRESENT: &str = concat!(
    "
SELECT (SELECT count(*) FROM sqlite_schema WHERE name = 'sessions_files')
  + (SELECT count(*) FROM counters
     WHERE name IN ('pending', 'embedded', 'writes', 'store_id'))
  + (SELECT count(*) FROM pragma_table_info('entries') WHERE name = 'hash')
  + (SELECT count(*) FROM docs_config WHERE k = 'crisismerge' AND v = ",
    fts5_crisismerge!(),
    ")
  + (SELECT count(*) FROM docs_config WHERE k = 'hashsize' AND v = ",
    fts5_hashsize!(),
    ")"
);
pub(super) const ADDITIONS_COUNT: i64 = 8;

/// The tables to drop before a rebuild, virtual ones first (dropping one
/// drops its shadow tables).
pub(super) const LIST_TABLES: &str = "
SELECT name FROM sqlite_schema WHERE type = 'table' AND name NOT LIKE 'sqlite_%'
ORDER BY sql LIKE 'CREATE VIRTUAL%' DESC";

pub(super) const USER_VERSION: &str = "PRAGMA user_version";
pub(super) const DATA_VERSION: &str = "PRAGMA data_version";
pub(super) const INTEGRITY_CHECK: &str = "PRAGMA integrity_check";
/// What opening checks: the b-trees of every table (the full-text index's
/// shadow tables included) and their indexes, a table at a time. Not one
/// `PRAGMA quick_check` of the file: that runs FTS5's own integrity check
/// of the whole index too, which reads and compares every term.
pub(super) const QUICK_CHECKS: &[&str] = &[
    "PRAGMA quick_check(sqlite_schema)",
    "PRAGMA quick_check(sessions)",
    "PRAGMA quick_check(entries)",
    "PRAGMA quick_check(meta_text)",
    "PRAGMA quick_check(docs_data)",
    "PRAGMA quick_check(docs_idx)",
    "PRAGMA quick_check(docs_docsize)",
    "PRAGMA quick_check(docs_config)",
    "PRAGMA quick_check(embeddings)",
    "PRAGMA quick_check(counters)",
];

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

/// The records of the sessions `?1` (a JSON array of sids) that pass the
/// filters appended to it (`rank.rs`).
pub(super) const RECORDS_OF: &str = concat!(
    "SELECT ",
    record_columns!(),
    ", s.sid FROM sessions s WHERE s.sid IN (SELECT value FROM json_each(?1))"
);

/// The sessions `?1` (a JSON array of sids) that pass the filters appended
/// to it (`rank.rs`): whether each is in the project `?2`, and its time.
/// From the index `sessions_rank`, which holds all it reads (the filters'
/// columns too) in few pages: a ranking looks up to ~200 sessions, whose
/// rows are spread over the table's pages (on the search bench, 2.8 ms of
/// thread CPU for one query read from the table, 0.5 ms from the index).
pub(super) const PLACES_OF: &str = "
SELECT s.sid, s.cwd IS ?2, s.modified_ms FROM sessions s INDEXED BY sessions_rank
WHERE s.sid IN (SELECT value FROM json_each(?1))";

/// A session's file, for reading its text again.
pub(super) const SESSION_PATH: &str = "SELECT path, cwd FROM sessions WHERE sid = ?1";

// Updates (update.rs).

/// What the last update saw of every stored file.
pub(super) const KNOWN_FILES: &str =
    "SELECT path, size, mtime_ns, inode, ctime_ns, meta_mtime_ns, id FROM sessions";
/// The stored sessions after sid ?1, in sid order, at most ?2, with what
/// [`KNOWN_FILES`] reads of each (a search's slice: `update/quick.rs`).
pub(super) const FILES_AFTER: &str = "
SELECT sid, path, size, mtime_ns, inode, ctime_ns, meta_mtime_ns, id FROM sessions
WHERE sid > ?1 ORDER BY sid LIMIT ?2";
/// How far one file was read ([`super::update`]'s `StoredFile`).
pub(super) const STORED_FILE: &str = "
SELECT sid, id, size, mtime_ns, inode, ctime_ns, read_to, tail, version, meta_mtime_ns
FROM sessions WHERE path = ?1";
pub(super) const INSERT_SESSION: &str = "
INSERT INTO sessions(path, id, cwd, created, modified_ms, parent_session, version)
VALUES (?1, ?2, ?3, ?4, 0, ?5, ?6)";
pub(super) const SET_READ_STATE: &str = "
UPDATE sessions SET size = ?2, mtime_ns = ?3, inode = ?4, ctime_ns = ?5, read_to = ?6, tail = ?7,
  modified_ms = ?8
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
pub(super) const INSERT_ENTRY: &str = "
INSERT INTO entries(rowid, entry_id, role, active, col, line, bytes, hash)
VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)";
/// The hashes of the stored texts of the entries ?1..=?2 (NULL: not known).
pub(super) const TEXT_HASHES: &str =
    "SELECT hash FROM entries WHERE rowid BETWEEN ?1 AND ?2 AND bytes > 0";
pub(super) const DELETE_ENTRIES: &str = "DELETE FROM entries WHERE rowid BETWEEN ?1 AND ?2";
/// The entries of the rowids ?1..=?2 that have text, in file order, with
/// the hash of their stored text (NULL: not known).
pub(super) const ENTRIES_WITH_TEXT: &str = "
SELECT rowid, entry_id, role, active, col, line, bytes, hash FROM entries
WHERE rowid BETWEEN ?1 AND ?2 AND bytes > 0 ORDER BY rowid";
/// Every entry of the rowids ?1..=?2: its id, line, branch and column, in file order.
pub(super) const ENTRY_LINES: &str = "
SELECT rowid, entry_id, line, active, col FROM entries WHERE rowid BETWEEN ?1 AND ?2
ORDER BY rowid";

pub(super) const SET_META_TEXT: &str = "
INSERT OR REPLACE INTO meta_text(sid, name, tags, summary, decisions, files)
VALUES (?1, ?2, ?3, ?4, ?5, ?6)";
pub(super) const META_TEXT: &str =
    "SELECT name, tags, summary, decisions, files FROM meta_text WHERE sid = ?1";
pub(super) const DELETE_META_TEXT: &str = "DELETE FROM meta_text WHERE sid = ?1";

/// One ranking row: its rowid, then the nine columns' text.
pub(super) const INSERT_RANKING_ROW: &str = "
INSERT INTO docs(rowid, name, tags, summary, decisions, files, user, assistant, tool, abandoned)
VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)";
/// The last ranking row of the entries ?1..=?2.
pub(super) const LAST_RANKING_ROW: &str =
    "SELECT max(rowid) FROM docs WHERE rowid BETWEEN ?1 AND ?2";
pub(super) const DELETE_RANKING_ROW: &str = "DELETE FROM docs WHERE rowid = ?1";
pub(super) const DELETE_RANKING_ROWS: &str = "DELETE FROM docs WHERE rowid BETWEEN ?1 AND ?2";
/// Text bytes of the entries ?1..=?2 (what one ranking chunk holds).
pub(super) const TEXT_BYTES: &str =
    "SELECT ifnull(sum(bytes), 0) FROM entries WHERE rowid BETWEEN ?1 AND ?2";

/// Merge work of up to ?1 leaf pages (`merge.rs`; negative: of every
/// segment, as `optimize` does, `scrub.rs`).
pub(super) const MERGE: &str = "INSERT INTO docs(docs, rank) VALUES('merge', ?1)";

/// A row to embed: pending (`vectors` NULL) unless the vectors of the same
/// text are known (a forked session, a file read again), with their `seq`.
pub(super) const INSERT_EMBEDDING: &str =
    "INSERT INTO embeddings(rowid, hash, bytes, seq, vectors) VALUES (?1, ?2, ?3, ?4, ?5)";
pub(super) const DELETE_EMBEDDINGS: &str = "DELETE FROM embeddings WHERE rowid BETWEEN ?1 AND ?2";
pub(super) const DELETE_EMBEDDING: &str = "DELETE FROM embeddings WHERE rowid = ?1";
/// The vectors of the rows ?1..=?2 and the hashes of their text.
pub(super) const VECTORS_IN: &str = "
SELECT hash, vectors FROM embeddings WHERE rowid BETWEEN ?1 AND ?2 AND vectors IS NOT NULL";
/// A row's hash and whether it has its vectors.
pub(super) const EMBEDDING_HASH: &str =
    "SELECT hash, vectors IS NOT NULL FROM embeddings WHERE rowid = ?1";
pub(super) const EMBEDDED_IN: &str =
    "SELECT count(*) FROM embeddings WHERE rowid BETWEEN ?1 AND ?2 AND vectors IS NOT NULL";
pub(super) const COUNTER: &str = "SELECT value FROM counters WHERE name = ?1";
pub(super) const SET_COUNTER: &str = "UPDATE counters SET value = ?2 WHERE name = ?1";
/// The store's `store_id` and `writes` counters.
pub(super) const STORE_WRITES: &str = "
SELECT ifnull((SELECT value FROM counters WHERE name = 'store_id'), 0),
  ifnull((SELECT value FROM counters WHERE name = 'writes'), -1)";
/// Add ?2 to counter ?1.
pub(super) const ADD_TO_COUNTER: &str = "UPDATE counters SET value = value + ?2 WHERE name = ?1";

// Vectors (vectors.rs, embed.rs).

/// Rows embedded after `seq` ?1, in `seq` order.
pub(super) const VECTORS_AFTER: &str = "
SELECT rowid, seq, vectors FROM embeddings WHERE seq > ?1 ORDER BY seq";
/// An entry's id and where its line starts.
pub(super) const ENTRY_AT: &str = "SELECT entry_id, line FROM entries WHERE rowid = ?1";
/// The next pending rows from rowid ?1 on, at most ?2.
pub(super) const NEXT_PENDING: &str = "
SELECT rowid, hash FROM embeddings WHERE vectors IS NULL AND rowid >= ?1 ORDER BY rowid LIMIT ?2";
/// The vectors of a row of the same text, embedded already.
pub(super) const VECTORS_OF_HASH: &str =
    "SELECT vectors FROM embeddings WHERE hash = ?1 AND vectors IS NOT NULL LIMIT 1";
/// A pending row's vectors (only if it still has hash ?2: not replaced meanwhile).
pub(super) const SET_VECTORS: &str = "
UPDATE embeddings SET vectors = ?3, seq = ?4 WHERE rowid = ?1 AND hash = ?2 AND vectors IS NULL";

// Queries (rank.rs, snippets.rs).

pub(super) const COUNT_RANKING_ROWS: &str = "SELECT count(*) FROM docs_docsize";
/// How many ranking rows match ?1, counting no further than ?2.
pub(super) const COUNT_MATCHES: &str =
    "SELECT count(*) FROM (SELECT 1 FROM docs WHERE docs MATCH ?1 LIMIT ?2)";

/// The scratch table snippets are cut in: the few rows of the sessions shown,
/// read again from their files (the store keeps no copy of their text).
pub(super) const CREATE_SNIPPET_TABLE: &str = "
PRAGMA temp_store = MEMORY;
CREATE VIRTUAL TABLE IF NOT EXISTS temp.snips USING fts5(name, tags, summary, decisions, files,
  user, assistant, tool, abandoned, tokenize = 'porter unicode61');";
/// The savepoint the scratch rows of one query are written in, and its
/// rollback (see `snippets::Scratch`).
pub(super) const OPEN_SCRATCH: &str = "SAVEPOINT snippet_scratch";
pub(super) const DISCARD_SCRATCH: &str = "ROLLBACK TO snippet_scratch; RELEASE snippet_scratch";
/// Scratch rows, from a JSON array of `[rowid, the nine columns' text]`.
pub(super) const INSERT_SNIPPET_ROWS: &str = "
INSERT INTO temp.snips(rowid, name, tags, summary, decisions, files, user, assistant, tool, abandoned)
SELECT value ->> 0, value ->> 1, value ->> 2, value ->> 3, value ->> 4, value ->> 5, value ->> 6,
  value ->> 7, value ->> 8, value ->> 9
FROM json_each(?1)";
/// Up to two snippets of the rows ?2..=?3 matching ?1.
pub(super) const SNIPPETS: &str = "
SELECT rowid, snippet(snips, -1, char(2), char(3), '…', 14) FROM temp.snips
WHERE snips MATCH ?1 AND rowid BETWEEN ?2 AND ?3 ORDER BY rowid LIMIT 2";

// Deleted text (issue 24: a deleted, rewritten or excluded session leaves no
// bytes behind).

/// Where every stored session is (the gate's question, before its rows go).
pub(super) const SESSION_PLACES: &str = "SELECT sid, path, cwd FROM sessions";
/// The structure record of the full-text index (FTS5's
/// `FTS5_STRUCTURE_ROWID`): its segments by level (`scrub.rs`).
pub(super) const FTS_STRUCTURE: &str = "SELECT block FROM docs_data WHERE id = 10";
/// Set counter ?1 to ?2, adding it when a store made before it lacks it.
pub(super) const UPSERT_COUNTER: &str = "
INSERT INTO counters(name, value) VALUES (?1, ?2)
ON CONFLICT(name) DO UPDATE SET value = excluded.value";
/// The scrub is done, unless rows were dropped again since its merge.
pub(super) const CLEAR_CUT_SCRUB: &str =
    "UPDATE counters SET value = 0 WHERE name = 'scrub' AND value = 3";
/// Copy what the WAL holds into the file, as far as readers let it, without the write lock.
pub(super) const PASSIVE_CHECKPOINT: &str = "PRAGMA wal_checkpoint(PASSIVE)";
/// Copy the WAL into the file and cut it to nothing, so the frames that held
/// deleted text go too (a checkpoint alone leaves them until overwritten).
pub(super) const TRUNCATE_WAL: &str = "PRAGMA wal_checkpoint(TRUNCATE)";

#[cfg(test)]
mod tests {
    use super::*;

    /// Once [`ADDITIONS`] (and [`ADD_TEXT_HASH`]) ran, [`ADDITIONS_PRESENT`]
    /// finds all [`ADDITIONS_COUNT`] of them: else every open of the store
    /// would take the write lock to make them again.
    #[test]
    fn the_additions_made_are_all_found_present() {
        let conn = rusqlite::Connection::open_in_memory().unwrap();
        conn.execute_batch(CREATE_TABLES).unwrap();
        conn.execute_batch(ADDITIONS).unwrap();
        conn.execute_batch(ADD_TEXT_HASH).unwrap();
        let present: i64 = conn.query_row(ADDITIONS_PRESENT, [], |r| r.get(0)).unwrap();
        assert_eq!(present, ADDITIONS_COUNT);
    }

    /// The statements that list every text column spell them in [`COLUMNS`]' order.
    #[test]
    fn statements_list_the_text_columns_in_order() {
        let names: Vec<&str> = COLUMNS.iter().map(|c| c.0).collect();
        let listed = names.join(", ");
        let flat = |s: &str| s.split_whitespace().collect::<Vec<_>>().join(" ");
        assert!(flat(CREATE_TABLES).contains(&format!("fts5({listed},")));
        assert!(flat(CREATE_SNIPPET_TABLE).contains(&format!("fts5({listed},")));
        assert!(flat(INSERT_RANKING_ROW).contains(&format!("docs(rowid, {listed})")));
        assert!(flat(INSERT_SNIPPET_ROWS).contains(&format!("snips(rowid, {listed})")));
        for (i, (name, _)) in COLUMNS.iter().enumerate() {
            let column = [
                Column::Name,
                Column::Tags,
                Column::Summary,
                Column::Decisions,
                Column::Files,
                Column::User,
                Column::Assistant,
                Column::Tool,
                Column::Abandoned,
            ][i];
            assert_eq!(column.name(), *name);
            assert_eq!(column as usize, i);
        }
    }
}
