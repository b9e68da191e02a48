//! The store: one SQLite file, `<agent dir>/sessions-index/index.sqlite`,
//! holding what the plugin knows about every session (the `sessions` table,
//! read as [`SessionRecord`]s), its text in a full-text index (FTS5, `porter
//! unicode61`): a few ranking rows per session (its meta, chunks of its
//! text), ranked with `bm25()` ([`rank`]), and where each entry's line
//! starts in its session file: the words themselves are not stored twice,
//! snippets read them again from the file ([`snippets`]). With the sentence
//! encoder installed, the int8 vectors of the passages of what was said
//! ([`embed`]) rank sessions by meaning too ([`vectors`]), fused with the
//! lexical ranking. Beside it: the meta files ([`meta`]), which the store
//! reads in, and the records kept in memory for lookups ([`cache`]).
//!
//! Why SQLite: several pi processes and the CLI update and query the same
//! store at once. WAL lets readers go on while one writer commits; the busy
//! timeout queues writers; an update ([`update`]) writes in `BEGIN
//! IMMEDIATE` transactions (a few sessions each, committing once open 250
//! ms; the full-text index's merges in transactions of their own, as short:
//! [`merge`] says what the bound leaves out) that
//! re-read each session's stored state under the write lock, so two processes never both append the same lines, and a crash
//! (even SIGKILL) leaves the last committed state. The store is a cache of
//! the session and meta files, never the source of truth: a schema change
//! (`PRAGMA user_version`) or a damaged file rebuilds it from them, with one
//! warning (a damaged file, found by any statement or by the quick check a
//! command runs when the file changed since a session-index process last
//! knew it sound ([`check`]), is moved aside to `index.sqlite.corrupt`).
//! Its SQL is in [`schema`].
//!
//! It keeps no deleted text: freed pages are zeroed (`secure_delete`), and
//! after a session's rows are dropped (its file deleted, rewritten, or
//! named by `privacy.exclude`) its text is unfindable at once and a scrub
//! is owed ([`scrub`]): the full-text index is written again and the WAL
//! cut, in steps of at most 200 ms that any later writer continues (the
//! command that dropped it, the next ones, pi's refresh; `search --wait`
//! finishes it), so none of its bytes stay in the files once the scrub is
//! done. A file read again whole that still holds every text stored of it
//! (each entry's text hash is kept) forgets nothing and costs no scrub.
//!
//! Session files are append-only, so an update reads only the lines added
//! since the last one ([`crate::session::read_appended`]); a file that shrank,
//! changed inode, was written without growing (its ctime moved, even with
//! the mtime put back) or whose last read bytes changed is read again whole.
//! Text is redacted ([`crate::redact`]) before it is stored; image data never
//! reaches the reader's model, so it never reaches the store.

pub(crate) mod cache;
mod check;
mod embed;
mod gate;
mod kept_counts;
mod merge;
pub mod meta;
mod rank;
mod record;
mod rows;
mod schema;
mod scrub;
mod session_scores;
mod snippet_filter;
mod snippet_line;
mod snippet_match;
mod snippets;
mod update;
mod vectors;

use std::path::{Path, PathBuf};

use rusqlite::{Connection, ErrorCode};

pub use embed::{EmbedReport, EmbedStatus, PASSAGE_PIECES};
pub use gate::{Gate, Refusal};
pub use merge::HOLD_TARGET;
pub use rank::{parse_since, Query, SessionHit, Snippet, MARK_END, MARK_START};
pub use record::SessionRecord;
pub use scrub::ScrubState;
pub use update::{
    full_pass_every, UpdateReport, FULL_PASS_EVERY, FULL_PASS_EVERY_ENV, SLICE, SLICE_ENV,
};
use update::{DirTimes, HOT_FILES};
pub use vectors::{model_dir, F32Vectors, VectorMemory, MODEL};

use schema::{SCHEMA_VERSION, USER_VERSION};

/// The WAL's size kept on disk (`journal_size_limit`): readers that never
/// pause keep it from restarting (see `Store::open_at`'s pragmas), and a
/// pass over many files lets it grow to this before it checkpoints.
const WAL_KEPT_BYTES: i64 = 64 << 20;

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
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
    #[error("semantic search: {0}")]
    Embed(String),
}

/// An open store. Cheap to open; not shared between threads (open one each).
pub struct Store {
    conn: Connection,
    path: PathBuf,
    /// Why the store was rebuilt when it was opened, if it was (already logged once).
    pub rebuilt: Option<String>,
    /// What may leave it: sessions `privacy.exclude` names are never stored
    /// or returned, nor files outside the sessions directory.
    gate: Gate,
    /// The connection's scratch table for snippets exists.
    scratch: std::cell::Cell<bool>,
    /// Term counts kept from one search to the next while the store is unchanged.
    counts: std::cell::RefCell<kept_counts::KeptCounts>,
    /// Eval only: the f32 vectors this store's semantic queries score
    /// instead of the stored int8 ones (`Store::score_f32`).
    scored_f32: std::cell::RefCell<Option<std::sync::Arc<vectors::F32Vectors>>>,
    /// Where the sentence encoder is installed (`None`: lexical ranking only).
    model: Option<PathBuf>,
    /// Stamps the file as sound when the store closes, if it opened sound
    /// and met no damage. After `conn`: fields drop in order, and the stamp
    /// must see the file as the connection's close left it.
    vouch: check::Vouch,
}

/// `<agent dir>/sessions-index/index.sqlite`.
pub fn store_path(agent_dir: &Path) -> PathBuf {
    agent_dir.join("sessions-index").join("index.sqlite")
}

/// Whether the next process to open the store of `agent_dir` will serve
/// from it without its quick check: the file is as a session-index process
/// last knew it sound (see `check.rs`).
pub fn opens_without_check(agent_dir: &Path) -> bool {
    check::stamp_matches(&store_path(agent_dir))
}

impl Store {
    /// Open (creating or rebuilding when needed) the store of `agent_dir`.
    pub fn open(agent_dir: &Path) -> Result<Store, StoreError> {
        let path = store_path(agent_dir);
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).map_err(|source| StoreError::Io {
                path: dir.to_path_buf(),
                source,
            })?;
        }
        let gate = Gate::new(&agent_dir.join("sessions"), &Default::default());
        let model = Some(vectors::model_dir(agent_dir));
        let reason = match Store::open_at(&path) {
            Ok(mut store) => match check::check_once(&store.conn, &path) {
                check::Verdict::Sound => {
                    store.vouch.trust_file();
                    return Ok(Store {
                        gate,
                        model,
                        ..store
                    });
                }
                check::Verdict::Unchecked => {
                    return Ok(Store {
                        gate,
                        model,
                        ..store
                    })
                }
                check::Verdict::Damaged(damage) => {
                    store.vouch.damaged();
                    damage
                }
            },
            Err(StoreError::Sql { source, .. }) if is_corrupt(&source) => {
                format!("it was not a readable database ({source})")
            }
            Err(e) => return Err(e),
        };
        set_aside(&path, &reason);
        let mut store = Store::open_at(&path)?;
        // Made by this process from the session files.
        store.vouch.trust_file();
        Ok(Store {
            rebuilt: Some(reason),
            gate,
            model,
            ..store
        })
    }

    /// The store of `agent_dir` as the user's config asks for it: the
    /// sessions `privacy.exclude` names kept out, and ranking by meaning
    /// only when `search.semantic` is on (every surface opens it this way).
    pub fn open_configured(
        agent_dir: &Path,
        config: &crate::config::Config,
    ) -> Result<Store, StoreError> {
        let store = Store::open(agent_dir)?.excluding(&config.privacy);
        Ok(if config.search.semantic {
            store
        } else {
            store.with_model(None)
        })
    }

    /// Keep the sessions `privacy` excludes out of the store and its results.
    pub fn excluding(mut self, privacy: &crate::config::PrivacyConfig) -> Store {
        self.gate = self.gate.with_privacy(privacy);
        self
    }

    /// Rank with the sentence encoder installed in `dir` too, when it is
    /// there (`None`: lexically only). [`Store::open`] looks in the agent
    /// directory's [`model_dir`].
    pub fn with_model(mut self, dir: Option<PathBuf>) -> Store {
        self.model = dir;
        self
    }

    /// The sentence encoder this store ranks with, loaded once per process
    /// (on `threads` threads); `None` when it is not installed.
    pub fn encoder(&self, threads: usize) -> Option<std::sync::Arc<sentence_embed::Encoder>> {
        vectors::encoder(self.model.as_deref()?, threads)
    }

    /// The encoder a backfill in the background embeds with: the weights of
    /// [`Store::encoder`]`(1)` on a pool of its own at the lowest CPU
    /// priority, so queries never wait for it; `None` when the model is not
    /// installed.
    pub fn background_encoder(&self) -> Option<std::sync::Arc<sentence_embed::Encoder>> {
        vectors::background_encoder(self.model.as_deref()?)
    }

    /// The vectors of this store the process holds in memory, as its last
    /// semantic query read them.
    pub fn vectors_in_memory(&self) -> VectorMemory {
        vectors::in_memory(&self.path)
    }

    fn open_at(path: &Path) -> Result<Store, StoreError> {
        let sql = |source| StoreError::Sql {
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
        conn.pragma_update(None, "journal_size_limit", WAL_KEPT_BYTES)
            .map_err(sql)?;
        // Deleted rows' pages are zeroed, not left as free pages holding their
        // text (an excluded or rewritten session must leave no bytes behind).
        conn.pragma_update(None, "secure_delete", "ON")
            .map_err(sql)?;
        let mut store = Store {
            conn,
            path: path.to_path_buf(),
            rebuilt: None,
            gate: Gate::default(),
            scratch: Default::default(),
            counts: Default::default(),
            scored_f32: Default::default(),
            model: None,
            vouch: check::Vouch::new(path),
        };
        store.rebuilt = store.ensure_schema().map_err(sql)?;
        Ok(store)
    }

    /// Open the store's file again after a statement found it damaged and
    /// [`Store::sql`] set it aside: a new, empty one the caller fills.
    fn reopen(&mut self, damage: &rusqlite::Error) -> Result<(), StoreError> {
        let mut fresh = Store::open_at(&self.path)?;
        // Made by this process from the session files; the damaged one's vouch goes.
        fresh.vouch.trust_file();
        self.conn = fresh.conn;
        self.vouch = fresh.vouch;
        self.scratch = Default::default();
        self.counts = Default::default();
        self.rebuilt = fresh
            .rebuilt
            .or_else(|| Some(format!("it was damaged ({damage})")));
        Ok(())
    }

    /// Create the tables, or rebuild them when they are of another schema
    /// version (under the write lock, so one process rebuilds), then add
    /// what [`schema::ADDITIONS`] adds in place. Why the store was rebuilt, if it was.
    fn ensure_schema(&mut self) -> rusqlite::Result<Option<String>> {
        let rebuilt = self.ensure_tables()?;
        self.ensure_additions()?;
        Ok(rebuilt)
    }

    /// [`schema::ADDITIONS`], made under the write lock by the one process
    /// that finds them missing.
    fn ensure_additions(&mut self) -> rusqlite::Result<()> {
        let present = |c: &Connection| {
            c.query_row(schema::ADDITIONS_PRESENT, [], |r| r.get::<_, i64>(0))
                .map(|n| n == schema::ADDITIONS_COUNT)
        };
        if present(&self.conn)? {
            return Ok(());
        }
        let tx = self
            .conn
            .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
        if !present(&tx)? {
            tx.execute_batch(schema::ADDITIONS)?;
            if tx.query_row(schema::TEXT_HASH_PRESENT, [], |r| r.get::<_, i64>(0))? == 0 {
                tx.execute_batch(schema::ADD_TEXT_HASH)?;
            }
        }
        tx.commit()
    }

    /// The tables of [`SCHEMA_VERSION`], rebuilt when they are of another.
    fn ensure_tables(&mut self) -> rusqlite::Result<Option<String>> {
        let version = |c: &Connection| c.query_row(USER_VERSION, [], |r| r.get::<_, i64>(0));
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
            .prepare(schema::LIST_TABLES)?
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
        tx.execute_batch(schema::CREATE_TABLES)?;
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

    /// The error of a statement. A corrupt file found by any statement is
    /// set aside here, so the next open rebuilds it ([`Store::update`] does
    /// at once): a damaged store fails once, never for good.
    fn sql(&self, source: rusqlite::Error) -> StoreError {
        if is_corrupt(&source) {
            self.vouch.damaged();
            set_aside(&self.path, &format!("it is damaged ({source})"));
        }
        StoreError::Sql {
            path: self.path.clone(),
            source,
        }
    }

    /// Every stored session the gate lets out, last modified first.
    pub fn records(&self) -> Result<Vec<SessionRecord>, StoreError> {
        let run = || -> rusqlite::Result<Vec<SessionRecord>> {
            self.conn
                .prepare_cached(schema::ALL_RECORDS)?
                .query_map([], SessionRecord::from_row)?
                .filter(|read| match read {
                    Ok(record) => self.gate.check(record).is_ok(),
                    Err(_) => true,
                })
                .collect()
        };
        run().map_err(|e| self.sql(e))
    }

    /// Changes when another connection commits (`PRAGMA data_version`): the
    /// catalog reloads its rows only then.
    pub fn data_version(&self) -> Result<i64, StoreError> {
        self.conn
            .query_row(schema::DATA_VERSION, [], |r| r.get(0))
            .map_err(|e| self.sql(e))
    }

    /// `PRAGMA integrity_check` (tests and the bench): `ok` when sound.
    pub fn integrity_check(&self) -> Result<String, StoreError> {
        self.conn
            .query_row(schema::INTEGRITY_CHECK, [], |r| r.get(0))
            .map_err(|e| self.sql(e))
    }
}

/// Whether a time budget's `deadline` (none: no budget) has passed: every
/// bounded step of the store (a pass's planning and writing, the merges,
/// the scrub, the semantic backfill) checks it the same way.
fn past(deadline: Option<std::time::Instant>) -> bool {
    deadline.is_some_and(|d| std::time::Instant::now() >= d)
}

/// Move a damaged store file to `<file>.corrupt` (replacing an older one;
/// its WAL and shared memory go) so that the next open builds a new one from
/// the session files, with one warning. Another process may have done it
/// first: then there is nothing to move.
fn set_aside(path: &Path, reason: &str) {
    let mut aside = path.to_path_buf().into_os_string();
    aside.push(".corrupt");
    if std::fs::rename(path, &aside).is_err() {
        return;
    }
    for suffix in ["-wal", "-shm"] {
        let mut file = path.to_path_buf().into_os_string();
        file.push(suffix);
        let _ = std::fs::remove_file(file);
    }
    tracing::warn!(
        "search index {}: {reason}; moved aside to {}, rebuilding it from the session files",
        path.display(),
        Path::new(&aside).display()
    );
}

/// Whether `e` says the store's file is damaged: SQLite found it so, or a
/// value does not read back as the store wrote it (text that is not UTF-8,
/// a number where a string was: flipped bytes inside a record, which SQLite
/// does not check).
fn is_corrupt(e: &rusqlite::Error) -> bool {
    use rusqlite::Error::*;
    matches!(
        e,
        FromSqlConversionFailure(..)
            | Utf8Error(..)
            | InvalidColumnType(..)
            | IntegralValueOutOfRange(..)
    ) || matches!(
        e.sqlite_error_code(),
        Some(ErrorCode::DatabaseCorrupt | ErrorCode::NotADatabase)
    )
}

impl Store {
    /// The `@@` search rule: sessions holding the words of a reference that
    /// matched no id, name or slug, together and in order (one phrase:
    /// `@@nothing-like-this` is not a search for any of its words), best
    /// first, with scores (the resolver resolves when the first is clearly
    /// ahead, else lists them). Lexical: the phrase must be in the session,
    /// and the lead is measured on `bm25()` scores.
    pub fn rank_reference(
        &self,
        words: &str,
        cwd: &str,
        limit: usize,
    ) -> Result<Vec<SessionHit>, StoreError> {
        let words = format!("\"{}\"", reference_words(words));
        self.search_lexical(&Query {
            current_cwd: Some(cwd.to_string()),
            limit,
            ..Query::parse(&words)?
        })
    }

    /// What a `@@` reference that nothing resolved may have meant: the
    /// sessions whose best embedded passage is nearest to its words, at
    /// least [`MEANING_FLOOR`] close, nearest first, at most `limit`. Offered
    /// to the user, never resolved: a sentence model's nearest session is a
    /// guess, not a match. Empty without the model or before any passage
    /// is embedded.
    pub fn near_in_meaning(
        &self,
        words: &str,
        limit: usize,
    ) -> Result<Vec<SessionHit>, StoreError> {
        let words = reference_words(words);
        if words.is_empty() {
            return Ok(Vec::new());
        }
        let hits = self.search_dense(&Query {
            limit,
            ..Query::parse(&words)?
        })?;
        Ok(hits
            .into_iter()
            .filter(|hit| hit.score >= MEANING_FLOOR)
            .collect())
    }
}

/// The lowest cosine between a reference's words and a session's best
/// passage for that session to be offered as what the reference meant.
pub const MEANING_FLOOR: f64 = 0.35;

/// A reference's words: every character that is not a letter or a digit
/// (a slug's dashes, quotes, `:` of a filter) is a space.
fn reference_words(reference: &str) -> String {
    let words: String = reference
        .chars()
        .map(|c| if c.is_alphanumeric() { c } else { ' ' })
        .collect();
    words.trim().to_string()
}
