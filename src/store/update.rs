//! Bringing the store up to date with the session and meta files: new lines
//! of grown files, whole re-reads of replaced ones, dropped deleted ones.
//!
//! Each file is planned (read, parsed, redacted) without the write lock, then
//! written under it (`BEGIN IMMEDIATE`), after checking again that the
//! stored state it was planned from is still the stored state: several
//! processes can update at once and each session's state is always one
//! file's state. A pass over many files plans them on a second thread while
//! the first writes, and writes them in transactions of up to [`BATCH`]: the
//! first build of 3,000 sessions was 3,000 transactions, each flushing the
//! full-text index's pending terms into a segment of its own and paying for
//! merging them. The merging is not in them: after each, the merges due are
//! made in transactions of their own, each as short (`merge.rs`).

use std::collections::HashMap;
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use rusqlite::{
    params, Connection, OpenFlags, OptionalExtension, Transaction, TransactionBehavior,
};

use super::rows::{self, entry_text, passage_source, text_hash, EntryText, TextRow, CHUNK_BYTES};
use super::schema::{self, rowids, Column};
use super::{merge, past, Gate, Store, StoreError};
use crate::session::discovery::ListedFile;
use crate::session::{text_joined, AgentMessage, CompactString, Entry, EntryKind};
use crate::store::meta::SessionMeta;

mod quick;
use quick::QuickStamp;
pub use quick::{full_pass_every, FULL_PASS_EVERY, FULL_PASS_EVERY_ENV, SLICE, SLICE_ENV};
pub(crate) use quick::{DirTimes, HOT_FILES};

/// Bytes before the read offset remembered to notice a rewritten file.
const TAIL_BYTES: u64 = 64;
/// Longest first message kept in the `sessions` table.
const FIRST_MESSAGE_CHARS: usize = 500;
/// How long a write transaction of a pass over many files stays open before
/// it commits (checked after each file), and each of the merge transactions
/// after it (`merge.rs`, which says what the bound leaves out): other writers
/// (a pi process after its agent run) wait about this long for one. During
/// the first build of the 10,000-session bench corpus (load 5-6), write and
/// merge transactions held the lock p99 295-301 ms, max 297-328 ms; to their
/// commit's return, which includes the WAL checkpoint a commit past
/// [`PASS_CHECKPOINT_PAGES`] runs once the lock is free (what the search
/// bench prints), p99 550-600 ms, max 596-619 ms (load 7-12).
const BATCH: Duration = Duration::from_millis(250);
/// SQLite's page cache of the writing connection during a pass over many
/// files, in KiB (SQLite's default is 2,000): the full-text index's pages a
/// write transaction and its merges touch again stay in memory instead of
/// being read back from the OS. Put back to what it was after the pass,
/// which gives the memory back (a pi process keeps its store open). With
/// the store's 8 MB `hashsize` (`schema::ADDITIONS`), the search bench's
/// first build of 10,000 sessions (998 MB), quiet machine, 5 rounds
/// alternating with the binary before: median 33.6 s (30.1-37.7 s,
/// 26.8-33.5 MB/s) against 38.5 s (37.5-40.0 s, 25.2-26.9 MB/s), peak RSS
/// 50-54 MB against 32-33 MB; the write lock held (to the commit's return)
/// p99 525-542 ms against 455-539 ms, as a commit now writes up to 8 MB of
/// pending terms.
const PASS_CACHE_KIB: i64 = 16 * 1024;
/// Plans the planner thread may have ready ahead of the writer.
const PLANS_AHEAD: usize = 16;
/// WAL pages after which a commit of a pass over many files copies the WAL
/// into the store's file (SQLite's default is 1,000 pages, 4 MB): the
/// [`super::WAL_KEPT_BYTES`] that `journal_size_limit` keeps anyway, in
/// SQLite's default 4 KB pages (the store keeps them). A first build
/// writes ~2.5× the index's size in frames (merges rewrite segments, freed
/// pages are zeroed): at the default it checkpointed every ~16 transactions
/// (803 fsyncs at 10,000 sessions), copying pages that later frames replace.
const PASS_CHECKPOINT_PAGES: i64 = super::WAL_KEPT_BYTES / 4096;

/// What a pass over many files sets on its writing connection for its
/// length: [`PASS_CHECKPOINT_PAGES`] and [`PASS_CACHE_KIB`].
const PASS_PRAGMAS: [(&str, i64); 2] = [
    ("wal_autocheckpoint", PASS_CHECKPOINT_PAGES),
    ("cache_size", -PASS_CACHE_KIB),
];

/// What an update did.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct UpdateReport {
    /// Session files found.
    pub files: usize,
    /// Sessions (re)read or whose meta was picked up.
    pub updated: usize,
    /// Sessions dropped because their file is gone or `privacy.exclude` names them.
    pub removed: usize,
    /// Changed sessions left for later because the time budget ran out.
    pub stale: usize,
    /// Dropped rows held text that may be in no file any more: a scrub
    /// became owed (the whole full-text index written again, see
    /// `scrub.rs`). Not in the CLI's JSON.
    #[serde(skip)]
    pub forgot: bool,
    /// Where the scrub stands after this update, which continued it within
    /// its budget (a step at least). Not in the CLI's JSON.
    #[serde(skip)]
    pub scrub: super::ScrubState,
}

/// What a file looked like when it was stat'ed. The ctime is there for an
/// edit in place that kept the size and put the mtime back (issue 24): no
/// one can set a ctime, and every write or `utime` moves it.
#[derive(Debug, Clone, Copy, PartialEq, Hash)]
struct FileStat {
    size: u64,
    mtime_ns: i64,
    inode: u64,
    ctime_ns: i64,
}

fn stat(path: &Path) -> Option<FileStat> {
    file_stat_of(&std::fs::symlink_metadata(path).ok()?)
}

/// The [`FileStat`] of what `lstat` said, `None` when it is not a regular file.
fn file_stat_of(md: &std::fs::Metadata) -> Option<FileStat> {
    if !md.file_type().is_file() {
        return None;
    }
    let (mtime_ns, ctime_ns, inode) = times_of(md);
    Some(FileStat {
        size: md.len(),
        mtime_ns,
        inode,
        ctime_ns,
    })
}

/// A file's or directory's modification and change times (ns since the
/// epoch) and inode, as the freshness checks compare them (0 where the
/// platform has none).
fn times_of(md: &std::fs::Metadata) -> (i64, i64, u64) {
    let mtime_ns = md.modified().map_or(0, epoch_ns);
    #[cfg(unix)]
    let (ctime_ns, inode) = {
        use std::os::unix::fs::MetadataExt;
        let ctime = md.ctime().saturating_mul(1_000_000_000);
        (ctime.saturating_add(md.ctime_nsec()), md.ino())
    };
    #[cfg(not(unix))]
    let (ctime_ns, inode) = (0, 0);
    (mtime_ns, ctime_ns, inode)
}

/// Nanoseconds since the epoch (0 before it).
fn epoch_ns(t: std::time::SystemTime) -> i64 {
    t.duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos().min(i64::MAX as u128) as i64)
}

fn meta_mtime(meta_dir: &Path, id: &str) -> i64 {
    crate::store::meta::meta_path(meta_dir, id)
        .ok()
        .and_then(|p| stat(&p))
        .map_or(0, |s| s.mtime_ns)
}

/// [`meta_mtime`] of every session that has a meta file, by id, from one
/// listing of `meta_dir`: a pass asks for every stored session's, and a
/// lookup by path per session (most of them finding no file) was a fifth
/// of a CLI search's CPU at 30,000 sessions.
fn meta_mtimes(meta_dir: &Path) -> HashMap<String, i64> {
    let Ok(listing) = std::fs::read_dir(meta_dir) else {
        return HashMap::new();
    };
    listing
        .filter_map(|e| e.ok())
        .filter_map(|e| {
            let name = e.file_name();
            let id = name.to_str()?.strip_suffix(".meta.json")?;
            // The ids `meta_mtime` would look up (meta_path refuses the others).
            crate::store::meta::meta_path(meta_dir, id).ok()?;
            let stat = file_stat_of(&e.metadata().ok()?)?;
            Some((id.to_string(), stat.mtime_ns))
        })
        .collect()
}

/// A stored session's file as the store holds it: what a pass compares
/// with the file and its meta file as they are now.
#[derive(Debug)]
struct KnownFile {
    stat: FileStat,
    /// Its meta file's mtime when it was read (0: none).
    meta_mtime_ns: i64,
    id: String,
}

impl KnownFile {
    /// From a row's `size, mtime_ns, inode, ctime_ns, meta_mtime_ns, id` at `at`.
    fn from_row(r: &rusqlite::Row<'_>, at: usize) -> rusqlite::Result<KnownFile> {
        Ok(KnownFile {
            stat: file_stat(r, at)?,
            meta_mtime_ns: r.get(at + 4)?,
            id: r.get(at + 5)?,
        })
    }

    /// Whether the store holds the file as it is (`now`: its stat, `None`
    /// when it is not a regular file) with its meta file (`meta_now`: its
    /// mtime, 0 when there is none); else a pass reads it again.
    fn is_current(&self, now: Option<FileStat>, meta_now: i64) -> bool {
        now == Some(self.stat) && meta_now == self.meta_mtime_ns
    }
}

/// The files' states as one pass saw them, in one number: every session
/// file's path and stat, every meta file's id and mtime, and the gate's
/// rules, each hashed and summed (the order does not matter). Equal digests:
/// the files are as they were (a write moves a file's ctime, which no one
/// can set back).
fn files_digest(files: &[ListedFile], metas: &HashMap<String, i64>, gate: &Gate) -> i64 {
    use std::hash::{DefaultHasher, Hash, Hasher};
    let one = |item: &dyn Fn(&mut DefaultHasher)| {
        let mut state = DefaultHasher::new();
        item(&mut state);
        state.finish()
    };
    let files_sum = files.iter().fold(0u64, |sum, file| {
        sum.wrapping_add(one(&|state| {
            file.path.as_os_str().as_encoded_bytes().hash(state);
            file.metadata.as_ref().and_then(file_stat_of).hash(state);
        }))
    });
    let metas_sum = metas.iter().fold(0u64, |sum, (id, mtime_ns)| {
        sum.wrapping_add(one(&|state| (id, mtime_ns).hash(state)))
    });
    let mut state = DefaultHasher::new();
    (files.len(), files_sum, metas.len(), metas_sum).hash(&mut state);
    gate.hash_rules(&mut state);
    state.finish() as i64
}

/// What a pass that left the store holding every file as listed keeps
/// beside the store (`index.sqlite.fresh`): the store it looked at (its
/// `store_id`), its `writes` counter when the pass read the stored states
/// (moved by the pass's own writes, when no other writer moved it), and the
/// [`files_digest`] of the files. A later pass that finds the same three
/// reads no stored state (reading and comparing 30,000 sessions' rows): no
/// session was written since, and the files are as they were. Kept in a
/// file, not in the store: a write to the store's file makes the next
/// command run the quick check of the whole file (1.5-2 s at 30,000
/// sessions), and this is written by passes that wrote nothing.
#[derive(Debug, PartialEq, Eq)]
struct FreshStamp {
    store: i64,
    writes: i64,
    digest: i64,
}

impl FreshStamp {
    fn path(store: &Path) -> PathBuf {
        let mut name = store.as_os_str().to_owned();
        name.push(".fresh");
        PathBuf::from(name)
    }

    /// The stamp kept beside `store`, if any (read without blocking: anything
    /// but a regular file there is none).
    fn kept(store: &Path) -> Option<FreshStamp> {
        let bytes = regular_files::read_regular(&Self::path(store)).ok()?;
        let text = std::str::from_utf8(&bytes).ok()?;
        let mut fields = text.strip_prefix("v1 ")?.trim_end().split(' ');
        let mut next = || fields.next()?.parse().ok();
        Some(FreshStamp {
            store: next()?,
            writes: next()?,
            digest: next()?,
        })
    }

    /// Keep it beside `store`; a failure only means the next pass compares again.
    fn keep(&self, store: &Path) {
        let target = Self::path(store);
        let temp = target.with_extension(format!("fresh.{}.tmp", std::process::id()));
        let text = format!("v1 {} {} {}\n", self.store, self.writes, self.digest);
        if let Err(e) = crate::store::meta::file::replace(&temp, &target, text.as_bytes()) {
            tracing::debug!("{}: {e}", target.display());
        }
    }
}

/// How many files a write went through, how many of them changed, and
/// whether stored text was dropped that the files may no longer hold
/// ([`Plan::forget`]); how many of its transactions moved the `writes` counter.
#[derive(Debug, Default)]
struct Written {
    seen: usize,
    changed: usize,
    forgot: bool,
    bumps: i64,
}

impl Store {
    /// Bring every session under `sessions_dir` up to date, newest first,
    /// until `budget` runs out (the rest is counted as stale). A store found
    /// damaged on the way is set aside and this update builds a new one.
    pub fn update(
        &mut self,
        sessions_dir: &Path,
        meta_dir: &Path,
        budget: Option<Duration>,
    ) -> Result<UpdateReport, StoreError> {
        match self.update_once(sessions_dir, meta_dir, budget) {
            Err(StoreError::Sql { source, .. }) if super::is_corrupt(&source) => {
                self.reopen(&source)?;
                self.update_once(sessions_dir, meta_dir, budget)
            }
            other => other,
        }
    }

    fn update_once(
        &mut self,
        sessions_dir: &Path,
        meta_dir: &Path,
        budget: Option<Duration>,
    ) -> Result<UpdateReport, StoreError> {
        // Before the listing: a directory changed after this is not trusted (quick.rs).
        let began = std::time::SystemTime::now();
        let listing = crate::session::discovery::session_files_with_metadata(sessions_dir);
        let files = &listing.files;
        let metas = meta_mtimes(meta_dir);
        // The budget is for reading and writing what changed, from when it is
        // known: under load, listing and stat'ing 30,000 files can take most of
        // a second, and a session appended just before was then left stale.
        let deadline = budget.map(|b| Instant::now() + b);
        // Read before the stored states: any session written after this read moves `writes`.
        let now = self.fresh_stamp(files_digest(files, &metas, &self.gate))?;
        // The files are as stored: stamped so, for passes and for searches.
        let keep = |store: &Store, fresh: &FreshStamp| {
            fresh.keep(&store.path);
            let dirs = (sessions_dir, meta_dir, listing.dirs.as_slice());
            let stored = (fresh.store, fresh.writes);
            let quick = QuickStamp::taken(began, dirs, files, &store.gate, stored);
            QuickStamp::keep(quick, &store.path);
        };
        if FreshStamp::kept(&self.path).is_some_and(|kept| kept == now) {
            keep(self, &now);
            return Ok(UpdateReport {
                files: files.len(),
                scrub: self.scrub_until(deadline)?,
                ..UpdateReport::default()
            });
        }
        let mut known: HashMap<String, KnownFile> = HashMap::with_capacity(files.len());
        self.conn
            .prepare(schema::KNOWN_FILES)
            .and_then(|mut s| {
                for row in s.query_map([], |r| Ok((r.get(0)?, KnownFile::from_row(r, 1)?)))? {
                    let (path, state) = row?;
                    known.insert(path, state);
                }
                Ok(())
            })
            .map_err(|e| self.sql(e))?;
        // Each file present is taken out of `known`: what is left there is gone.
        let mut changed: Vec<(PathBuf, FileStat)> = Vec::new();
        for file in files {
            let stored = known.remove(&*file.path.to_string_lossy());
            let Some(now) = file.metadata.as_ref().and_then(file_stat_of) else {
                continue;
            };
            let meta_now = |id: &str| metas.get(id).copied().unwrap_or(0);
            if stored.is_none_or(|known| !known.is_current(Some(now), meta_now(&known.id))) {
                changed.push((file.path.clone(), now));
            }
        }
        changed.sort_by_key(|(_, st)| std::cmp::Reverse(st.mtime_ns));
        let changed: Vec<PathBuf> = changed.into_iter().map(|(p, _)| p).collect();
        let written = self.write(&changed, meta_dir, deadline)?;
        let gone: Vec<PathBuf> = known.into_keys().map(PathBuf::from).collect();
        let removed = self.write(&gone, meta_dir, None)?;
        let excluded = self.drop_excluded()?;
        // Rewritten, deleted or excluded: the text they held leaves the
        // files, in steps, as far as the budget goes (owed since their drop).
        let forgot = written.forgot || removed.forgot || excluded > 0;
        let scrub = self.scrub_until(deadline)?;
        // Every file as stored now (files that are not sessions yet, or
        // excluded, are planned and found so at every pass until they
        // change): stamped if no other writer moved the store meanwhile (a
        // pass that wrote, such as the plugin's after an agent run, leaves
        // the next search quick). The stamps hold the files as listed; a
        // file written since its listing was stored as it is now, and its
        // change time, which no one sets back, keeps it from matching them.
        let stale = changed.len() - written.seen;
        if excluded == 0 && stale == 0 {
            let writes = now.writes + written.bumps + removed.bumps;
            if self.store_writes()? == (now.store, writes) {
                keep(self, &FreshStamp { writes, ..now });
            }
        }
        Ok(UpdateReport {
            files: files.len(),
            updated: written.changed,
            removed: removed.changed + excluded,
            stale,
            forgot,
            scrub,
        })
    }

    /// The stamp of files whose [`files_digest`] is `digest`, against the
    /// store as it is now.
    fn fresh_stamp(&self, digest: i64) -> Result<FreshStamp, StoreError> {
        let (store, writes) = self.store_writes()?;
        Ok(FreshStamp {
            store,
            writes,
            digest,
        })
    }

    /// The store's `store_id` and `writes` counters.
    fn store_writes(&self) -> Result<(i64, i64), StoreError> {
        self.conn
            .query_row(schema::STORE_WRITES, [], |r| Ok((r.get(0)?, r.get(1)?)))
            .map_err(|e| self.sql(e))
    }

    /// Bring one session file up to date (what `agent_end` needs): `Ok(true)`
    /// when something changed. A file that is gone or not a pi session drops out.
    /// A search's stamp of the last full pass still holds after it, with
    /// this file among the ones it checks (`update/quick.rs`).
    pub fn update_file(&mut self, path: &Path, meta_dir: &Path) -> Result<bool, StoreError> {
        let before = self.store_writes()?;
        let paths = [path.to_path_buf()];
        let written = self.write(&paths, meta_dir, None)?;
        self.note_own_write(before, &paths, written.bumps)?;
        // One step of an owed scrub (this drop's or an earlier one's).
        self.scrub_until(Some(Instant::now()))?;
        Ok(written.changed > 0)
    }

    /// Drop the stored sessions `privacy.exclude` names now (it may have
    /// changed since they were stored): their rows and text go, not only
    /// their records from the results. How many went.
    fn drop_excluded(&mut self) -> Result<usize, StoreError> {
        if self.gate.excludes_none() {
            return Ok(0);
        }
        let gate = &self.gate;
        let drop_all = |conn: &mut Connection| -> rusqlite::Result<usize> {
            if excluded_sessions(conn, gate)?.is_empty() {
                return Ok(0);
            }
            let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
            let sids = excluded_sessions(&tx, gate)?;
            let mut counters = Counters::read(&tx)?;
            for &sid in &sids {
                drop_session(&tx, sid, &mut counters)?;
            }
            if !sids.is_empty() {
                super::scrub::owe(&tx)?;
            }
            counters.write(&tx)?;
            tx.commit().map(|_| sids.len())
        };
        drop_all(&mut self.conn).map_err(|e| self.sql(e))
    }

    /// Plan and write `paths` until `deadline`: one file in the calling
    /// thread, many through a planner thread of its own connection.
    fn write(
        &mut self,
        paths: &[PathBuf],
        meta_dir: &Path,
        deadline: Option<Instant>,
    ) -> Result<Written, StoreError> {
        let gate = self.gate.clone();
        let written = if paths.len() <= 1 {
            let plans = paths.iter().map(|path| {
                let planned = plan(&self.conn, path, meta_dir, &gate);
                (path.clone(), planned)
            });
            let plans: Vec<_> = plans.collect();
            write_plans(&mut self.conn, plans, meta_dir, &gate, deadline)
        } else {
            let reader = open_reader(&self.path).map_err(|e| self.sql(e))?;
            let before_pass = self.set_pragmas(&PASS_PRAGMAS)?;
            let written = std::thread::scope(|scope| {
                let (send, receive) = mpsc::sync_channel(PLANS_AHEAD);
                let gate = &gate;
                scope.spawn(move || {
                    for path in paths {
                        if past(deadline) {
                            break;
                        }
                        let planned = plan(&reader, path, meta_dir, gate);
                        if send.send((path.clone(), planned)).is_err() {
                            break;
                        }
                    }
                });
                write_plans(&mut self.conn, receive, meta_dir, gate, deadline)
            });
            // The WAL left is copied at the next commit past the bound put back.
            self.set_pragmas(&before_pass)?;
            written
        };
        written.map_err(|e| self.sql(e))
    }

    /// Sets this connection's numeric `pragmas` (name, value); returns the
    /// values they had, to put back with the same call. When one cannot be
    /// set, those set before it are put back: a failed call changes nothing.
    fn set_pragmas(
        &self,
        pragmas: &[(&'static str, i64)],
    ) -> Result<Vec<(&'static str, i64)>, StoreError> {
        let mut had = Vec::with_capacity(pragmas.len());
        for &(name, value) in pragmas {
            match self.swap_pragma(name, value) {
                Ok(was) => had.push((name, was)),
                Err(e) => {
                    for &(name, was) in had.iter().rev() {
                        if let Err(back) = self.conn.pragma_update(None, name, was) {
                            tracing::debug!("search index: {name} not put back: {back}");
                        }
                    }
                    return Err(self.sql(e));
                }
            }
        }
        Ok(had)
    }

    /// Sets the numeric pragma `name` to `value`; returns the value it had.
    fn swap_pragma(&self, name: &str, value: i64) -> rusqlite::Result<i64> {
        let was = self.conn.pragma_query_value(None, name, |row| row.get(0))?;
        self.conn.pragma_update(None, name, value)?;
        Ok(was)
    }
}

/// The stored sessions `gate`'s `privacy.exclude` names.
fn excluded_sessions(conn: &Connection, gate: &Gate) -> rusqlite::Result<Vec<i64>> {
    let mut rows = conn.prepare(schema::SESSION_PLACES)?;
    let places = rows.query_map([], |r| {
        Ok((
            r.get::<_, i64>(0)?,
            r.get::<_, String>(1)?,
            r.get::<_, String>(2)?,
        ))
    })?;
    let mut sids = Vec::new();
    for place in places {
        let (sid, path, cwd) = place?;
        if gate.excludes(&cwd, Path::new(&path)) {
            sids.push(sid);
        }
    }
    Ok(sids)
}

/// A read-only connection to the store at `path`, for planning.
fn open_reader(path: &Path) -> rusqlite::Result<Connection> {
    let conn = Connection::open_with_flags(
        path,
        OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )?;
    conn.busy_timeout(Duration::from_secs(10))?;
    Ok(conn)
}

/// Write planned files in transactions of up to [`BATCH`], each plan checked
/// against the stored state under the write lock (planned again if another
/// process moved it), until `deadline`; after each, the merges its segments
/// made due, in transactions of their own (`merge.rs`).
fn write_plans(
    conn: &mut Connection,
    plans: impl IntoIterator<Item = (PathBuf, rusqlite::Result<Plan>)>,
    meta_dir: &Path,
    gate: &Gate,
    deadline: Option<Instant>,
) -> rusqlite::Result<Written> {
    let mut written = Written::default();
    let mut plans = plans.into_iter().peekable();
    while plans.peek().is_some() && !past(deadline) {
        // Files with nothing to write take no lock.
        if let Some((_, Ok(plan))) = plans.peek() {
            if plan.is_empty() {
                plans.next();
                written.seen += 1;
                continue;
            }
        }
        write_batch(conn, &mut plans, meta_dir, gate, deadline, &mut written)?;
        merge::merge_due(conn, BATCH, deadline)?;
    }
    Ok(written)
}

/// One write transaction: planned files from `plans` until it has been open
/// [`BATCH`] (checked after each file) or `deadline` passed. It merges no
/// segments: its commit writes the terms still pending (at most FTS5's
/// `hashsize`) as one more.
fn write_batch(
    conn: &mut Connection,
    plans: &mut impl Iterator<Item = (PathBuf, rusqlite::Result<Plan>)>,
    meta_dir: &Path,
    gate: &Gate,
    deadline: Option<Instant>,
    written: &mut Written,
) -> rusqlite::Result<()> {
    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
    let began = Instant::now();
    let mut counters = Counters::read(&tx)?;
    let mut forgot = false;
    for (path, planned) in plans.by_ref() {
        let mut todo = planned?;
        written.seen += 1;
        let key = path.to_string_lossy();
        if stored_file(&tx, &key)? != todo.stored {
            todo = plan(&tx, &path, meta_dir, gate)?;
        }
        forgot |= todo.forget;
        written.changed += usize::from(apply(&tx, &key, todo, &mut counters)?);
        if began.elapsed() >= BATCH || past(deadline) {
            break;
        }
    }
    if forgot {
        // Recorded with the drop: a process killed before the scrub leaves it owed.
        super::scrub::owe(&tx)?;
    }
    written.forgot |= forgot;
    written.bumps += i64::from(counters.write(&tx)?);
    tx.commit()?;
    merge::held(began);
    Ok(())
}

fn file_stat(r: &rusqlite::Row<'_>, at: usize) -> rusqlite::Result<FileStat> {
    Ok(FileStat {
        size: r.get::<_, i64>(at)? as u64,
        mtime_ns: r.get(at + 1)?,
        inode: r.get::<_, i64>(at + 2)? as u64,
        ctime_ns: r.get(at + 3)?,
    })
}

/// How far a session file was read, as stored.
#[derive(Debug, Clone, PartialEq)]
struct StoredFile {
    sid: i64,
    id: String,
    stat: FileStat,
    /// The offset after the last complete line read.
    read_to: u64,
    /// A digest of the [`TAIL_BYTES`] before `read_to`, to notice a rewritten file.
    tail: Vec<u8>,
    /// The session format version (appends are read only from version 3).
    version: u32,
    /// The meta file's mtime when it was read (0: none).
    meta_mtime_ns: i64,
}

fn stored_file(conn: &Connection, key: &str) -> rusqlite::Result<Option<StoredFile>> {
    conn.query_row(schema::STORED_FILE, [key], |r| {
        let (read_to, tail): (i64, Option<Vec<u8>>) = (r.get(6)?, r.get(7)?);
        Ok(StoredFile {
            sid: r.get(0)?,
            id: r.get(1)?,
            stat: file_stat(r, 2)?,
            read_to: read_to as u64,
            tail: tail.unwrap_or_default(),
            version: r.get(8)?,
            meta_mtime_ns: r.get(9)?,
        })
    })
    .optional()
}

/// A stored entry, as the update reads it back.
#[derive(Debug, Clone, PartialEq)]
struct StoredEntry {
    rowid: i64,
    entry_id: String,
    line: u64,
    active: bool,
    column: Option<Column>,
}

/// Lines read from a session file, ready to store.
struct Lines {
    read: crate::session::Appended,
    /// The first entries of `read` are stored already: those of the last
    /// ranking row, read again for its text (an append rewrites that row).
    again: Vec<StoredEntry>,
    texts: Vec<EntryText>,
    stat: FileStat,
    tail: Option<Vec<u8>>,
}

impl Lines {
    /// The entries read that are not stored yet.
    fn new_entries(&self) -> &[Entry] {
        &self.read.entries[self.again.len()..]
    }
}

/// One file's update, prepared without the write lock: the state it was
/// prepared from, and what to write.
struct Plan {
    stored: Option<StoredFile>,
    /// Drop the stored session first (its file was rewritten or is gone,
    /// or another branch was taken and it is read again whole).
    drop: bool,
    /// What is dropped may be in no file any more (the file was rewritten,
    /// is gone or is excluded now; not a branch change: its file still
    /// holds every entry), so the store is scrubbed after it.
    forget: bool,
    lines: Option<Lines>,
    /// The meta to store and its file's mtime (`None`: unchanged).
    meta: Option<(Option<SessionMeta>, i64)>,
}

impl Plan {
    fn is_empty(&self) -> bool {
        !self.drop && self.lines.is_none() && self.meta.is_none()
    }
}

fn plan(conn: &Connection, path: &Path, meta_dir: &Path, gate: &Gate) -> rusqlite::Result<Plan> {
    let stored = stored_file(conn, &path.to_string_lossy())?;
    let st = stat(path);
    let mut plan = Plan {
        stored: stored.clone(),
        drop: false,
        forget: false,
        lines: None,
        meta: None,
    };
    // Where to read from (`None`: the file is as read, only the meta may have changed).
    let mut from = Some(0);
    if let Some(old) = &stored {
        if st == Some(old.stat) && ends_as_read(path, old) {
            from = None;
        } else if st.is_some_and(|st| is_append(path, old, st)) {
            from = Some(old.read_to);
        } else {
            plan.drop = true;
            plan.forget = true;
        }
    }
    let Some(st) = st else {
        plan.drop = stored.is_some();
        plan.forget = plan.drop;
        return Ok(plan);
    };
    let mut id = stored.as_ref().filter(|_| !plan.drop).map(|s| s.id.clone());
    let mut named = false;
    if let Some(from) = from {
        let appended_to = stored.as_ref().filter(|_| from > 0);
        let again = match appended_to {
            Some(old) => last_row_entries(conn, old.sid)?,
            None => Vec::new(),
        };
        let mut read = read_from(path, from, &again);
        if let (Ok((appended, again)), Some(old)) = (&read, appended_to) {
            let fresh = &appended.entries[again.len()..];
            if !continues(conn, old.sid, fresh)? {
                // Another branch was taken: read whole, so the active branch is found anew.
                plan.drop = true;
                read = read_from(path, 0, &[]);
            }
        }
        match read {
            // Nothing complete to read yet in a new file.
            Ok((read, _)) if read.header.is_none() && (stored.is_none() || plan.drop) => {
                return Ok(plan)
            }
            // Kept out by privacy.exclude: what was stored of it goes.
            Ok((read, _))
                if read
                    .header
                    .as_ref()
                    .is_some_and(|h| gate.excludes(&h.cwd, path)) =>
            {
                plan.drop = stored.is_some();
                plan.forget = plan.drop;
                return Ok(plan);
            }
            Ok((read, again)) => {
                id = id.or_else(|| read.header.as_ref().map(|h| h.id.clone()));
                named = read.entries[again.len()..]
                    .iter()
                    .any(|e| matches!(e.kind, EntryKind::SessionInfo { .. }));
                let texts: Vec<EntryText> = read.entries.iter().map(entry_text).collect();
                if let Some(old) = stored.as_ref().filter(|_| plan.forget) {
                    plan.forget = !holds_every_stored_text(conn, old.sid, &texts)?;
                }
                let tail = tail_at(path, read.end);
                plan.lines = Some(Lines {
                    texts,
                    stat: st,
                    tail,
                    read,
                    again,
                });
            }
            // Unreadable or not a pi session (any more): it stays out.
            Err(e) => {
                tracing::debug!("search index: skipping {e}");
                return Ok(plan);
            }
        }
    }
    let Some(id) = id else { return Ok(plan) };
    let mtime = meta_mtime(meta_dir, &id);
    let fresh = stored.is_none() || plan.drop;
    if fresh || named || stored.is_some_and(|s| s.meta_mtime_ns != mtime) {
        plan.meta = Some((
            crate::store::meta::read(meta_dir, &id).ok().flatten(),
            mtime,
        ));
    }
    Ok(plan)
}

/// Whether the texts of a file read again whole hold every text stored of
/// session `sid` (each entry's, by [`text_hash`]): then dropping its rows
/// forgets nothing, and the store needs no scrub (a rewrite that kept the
/// text: pi migrating an old session file, a sync tool or an editor
/// replacing the file, `touch`). An entry stored without its hash counts
/// as forgotten. A 64-bit hash that collides would keep the old text's
/// words in the full-text index until the next scrub.
fn holds_every_stored_text(
    conn: &Connection,
    sid: i64,
    texts: &[EntryText],
) -> rusqlite::Result<bool> {
    let (first, last) = rowids(sid);
    let now: std::collections::HashSet<i64> = texts
        .iter()
        .filter_map(|t| t.text.as_deref().map(text_hash))
        .collect();
    let mut stored = conn.prepare_cached(schema::TEXT_HASHES)?;
    let mut hashes = stored.query([first + 1, last])?;
    while let Some(row) = hashes.next()? {
        match row.get::<_, Option<i64>>(0)? {
            Some(hash) if now.contains(&hash) => {}
            _ => return Ok(false),
        }
    }
    Ok(true)
}

/// The stored entries of session `sid`'s last ranking row when that row is
/// not full (an append adds to it, so its text is read again), else none.
fn last_row_entries(conn: &Connection, sid: i64) -> rusqlite::Result<Vec<StoredEntry>> {
    let (first, last) = rowids(sid);
    let start: Option<i64> =
        conn.query_row(schema::LAST_RANKING_ROW, [first + 1, last], |r| r.get(0))?;
    let Some(start) = start else {
        return Ok(Vec::new());
    };
    let bytes: i64 = conn.query_row(schema::TEXT_BYTES, [start, last], |r| r.get(0))?;
    if bytes >= CHUNK_BYTES {
        return Ok(Vec::new());
    }
    let mut stmt = conn.prepare_cached(schema::ENTRY_LINES)?;
    let rows = stmt.query_map([start, last], |r| {
        Ok(StoredEntry {
            rowid: r.get(0)?,
            entry_id: r.get(1)?,
            line: r.get::<_, i64>(2)? as u64,
            active: r.get(3)?,
            column: r.get::<_, Option<i64>>(4)?.and_then(column_of),
        })
    })?;
    rows.collect()
}

fn column_of(index: i64) -> Option<Column> {
    use Column::*;
    [
        Name, Tags, Summary, Decisions, Files, User, Assistant, Tool, Abandoned,
    ]
    .get(usize::try_from(index).ok()?)
    .copied()
}

/// The entries from `from` on, or from the first of `again` (stored entries
/// read again) when there are some, checked to be those entries: the
/// appended entries follow them. A file whose stored entries are not where
/// the store says reads as an error (the caller reads it whole).
fn read_from(
    path: &Path,
    from: u64,
    again: &[StoredEntry],
) -> Result<(crate::session::Appended, Vec<StoredEntry>), crate::session::SessionError> {
    let start = again.first().map_or(from, |e| e.line);
    let read = crate::session::read_appended(path, start)?;
    let same = again.len() <= read.entries.len()
        && again
            .iter()
            .zip(&read.entries)
            .all(|(stored, entry)| stored.entry_id == entry.id.as_str());
    if !same {
        return read_from(path, 0, &[]).map(|(read, _)| (read, Vec::new()));
    }
    Ok((read, again.to_vec()))
}

/// Whether the bytes before the offset the file was read to are still those
/// read (their digest): a file whose stat did not move may still have been
/// written in place within the filesystem's clock tick.
fn ends_as_read(path: &Path, old: &StoredFile) -> bool {
    tail_at(path, old.read_to).is_some_and(|t| t == old.tail)
}

/// Whether the file grew by appends since it was read as `old`: same inode,
/// larger, and the bytes before the old read offset unchanged (a file that
/// did not grow, or whose last read bytes changed, was rewritten).
fn is_append(path: &Path, old: &StoredFile, now: FileStat) -> bool {
    old.version >= 3
        && now.inode == old.stat.inode
        && now.size > old.stat.size
        && old.read_to > 0
        && ends_as_read(path, old)
}

/// The counters a write transaction moves (see `schema::CREATE_TABLES`).
struct Counters {
    /// The last `seq` given to vectors written.
    vectors: i64,
    /// Bumped when embedded rows are deleted.
    dropped: i64,
    /// Rows to embed inserted, less those deleted.
    pending: i64,
    /// Rows inserted with their vectors (known text), less those deleted.
    embedded: i64,
    /// The `sessions` table was written.
    sessions: bool,
    changed: bool,
}

impl Counters {
    fn read(tx: &Transaction<'_>) -> rusqlite::Result<Counters> {
        let get = |name: &str| tx.query_row(schema::COUNTER, [name], |r| r.get(0));
        Ok(Counters {
            vectors: get("vectors")?,
            dropped: get("dropped")?,
            pending: 0,
            embedded: 0,
            sessions: false,
            changed: false,
        })
    }

    /// A row to embed was inserted, with its vectors or pending.
    fn inserted(&mut self, embedded: bool) {
        self.changed = true;
        match embedded {
            true => self.embedded += 1,
            false => self.pending += 1,
        }
    }

    /// `rows` rows to embed were deleted, `embedded` of them with their vectors.
    fn deleted(&mut self, rows: i64, embedded: i64) {
        self.changed = true;
        self.embedded -= embedded;
        self.pending -= rows - embedded;
        if embedded > 0 {
            self.dropped();
        }
    }

    fn next_seq(&mut self) -> i64 {
        self.changed = true;
        self.vectors += 1;
        self.vectors
    }

    fn dropped(&mut self) {
        self.changed = true;
        self.dropped += 1;
    }

    /// A session's row was written or deleted.
    fn session_written(&mut self) {
        self.sessions = true;
    }

    /// Write the counters; `true` when the `writes` counter moved.
    fn write(&self, tx: &Transaction<'_>) -> rusqlite::Result<bool> {
        if self.sessions {
            tx.execute(schema::ADD_TO_COUNTER, params!["writes", 1])?;
        }
        if self.changed {
            tx.execute(schema::SET_COUNTER, params!["vectors", self.vectors])?;
            tx.execute(schema::SET_COUNTER, params!["dropped", self.dropped])?;
            tx.execute(schema::ADD_TO_COUNTER, params!["pending", self.pending])?;
            tx.execute(schema::ADD_TO_COUNTER, params!["embedded", self.embedded])?;
        }
        Ok(self.sessions)
    }
}

/// Vectors of a dropped session by the hash of their text, for the same
/// text read again (a file read whole after a branch change).
type Carried = HashMap<i64, Vec<u8>>;

/// Write a prepared update, inside the caller's write transaction.
fn apply(
    tx: &Transaction<'_>,
    path: &str,
    plan: Plan,
    counters: &mut Counters,
) -> rusqlite::Result<bool> {
    let changed = !plan.is_empty();
    if changed {
        counters.session_written();
    }
    let mut sid = plan.stored.as_ref().map(|s| s.sid);
    let mut carried = Carried::new();
    if plan.drop {
        if let Some(sid) = sid.take() {
            carried = drop_session(tx, sid, counters)?;
        }
    }
    // The session was stored before (its meta row and last ranking row are replaced).
    let existed = sid.is_some();
    let mut ranking = None;
    if let Some(lines) = &plan.lines {
        if let (None, Some(h)) = (sid, &lines.read.header) {
            tx.execute(
                schema::INSERT_SESSION,
                params![path, h.id, h.cwd, h.timestamp, h.parent_session, h.version],
            )?;
            sid = Some(tx.last_insert_rowid());
        }
        let Some(sid) = sid else { return Ok(changed) };
        let rows = add_entries(tx, sid, lines, &carried, counters)?;
        ranking = Some((rows, !lines.again.is_empty()));
        let st = lines.stat;
        tx.execute(
            schema::SET_READ_STATE,
            params![
                sid,
                st.size as i64,
                st.mtime_ns,
                st.inode as i64,
                st.ctime_ns,
                lines.read.end as i64,
                lines.tail,
                st.mtime_ns / 1_000_000
            ],
        )?;
    }
    let Some(sid) = sid else { return Ok(changed) };
    if let Some((meta, mtime)) = &plan.meta {
        let meta = NewMeta {
            meta: meta.as_ref(),
            mtime_ns: *mtime,
            replaces: existed,
        };
        set_meta(tx, sid, &meta, &carried, counters)?;
    }
    if let Some((rows, continued)) = ranking {
        write_ranking_rows(tx, &rows, continued)?;
    }
    Ok(changed)
}

/// The ranking rows after an update: the session's last row rewritten with
/// the appended entries when the update `continued` it, then new rows.
fn write_ranking_rows(
    tx: &Transaction<'_>,
    rows: &[TextRow],
    continued: bool,
) -> rusqlite::Result<()> {
    let mut insert = tx.prepare_cached(schema::INSERT_RANKING_ROW)?;
    if let Some(first) = rows.first().filter(|_| continued) {
        tx.prepare_cached(schema::DELETE_RANKING_ROW)?
            .execute([first.rowid])?;
    }
    for row in rows {
        insert.execute(rusqlite::params_from_iter(row.params()))?;
    }
    Ok(())
}

/// A digest of the `TAIL_BYTES` bytes before `offset`: what is stored and
/// compared, never the bytes, which are session text the store keeps only
/// redacted (issue 24: the raw tail put the last line's secret into
/// `index.sqlite`).
fn tail_at(path: &Path, offset: u64) -> Option<Vec<u8>> {
    let start = offset.saturating_sub(TAIL_BYTES);
    let mut file = regular_files::open_regular(path).ok()?;
    file.seek(SeekFrom::Start(start)).ok()?;
    let mut buf = vec![0; (offset - start) as usize];
    file.read_exact(&mut buf).ok()?;
    Some(digest(&buf))
}

/// 128 bits of two FNV-1a hashes (distinct offsets) of `bytes`: stable
/// across builds, so every process compares alike; a mismatch only means a
/// file is read again.
fn digest(bytes: &[u8]) -> Vec<u8> {
    let fnv = |basis: u64| {
        bytes.iter().fold(basis, |h, &b| {
            (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
        })
    };
    [fnv(0xcbf2_9ce4_8422_2325), fnv(0x6c62_272e_07bb_0142)]
        .iter()
        .flat_map(|h| h.to_le_bytes())
        .collect()
}

/// Drop a session: its row, entries, text and vectors. Returns the vectors,
/// by the hash of their text, for the same text read again in this write.
fn drop_session(
    tx: &Transaction<'_>,
    sid: i64,
    counters: &mut Counters,
) -> rusqlite::Result<Carried> {
    let (first, last) = rowids(sid);
    let carried: Carried = tx
        .prepare_cached(schema::VECTORS_IN)?
        .query_map([first, last], |r| Ok((r.get(0)?, r.get(1)?)))?
        .collect::<rusqlite::Result<_>>()?;
    let embedded: i64 = tx.query_row(schema::EMBEDDED_IN, [first, last], |r| r.get(0))?;
    tx.execute(schema::DELETE_ENTRIES, [first, last])?;
    tx.execute(schema::DELETE_RANKING_ROWS, [first, last])?;
    let rows = tx.execute(schema::DELETE_EMBEDDINGS, [first, last])?;
    tx.execute(schema::DELETE_META_TEXT, [sid])?;
    tx.execute(schema::DELETE_SESSION, [sid])?;
    counters.deleted(rows as i64, embedded);
    counters.session_written();
    Ok(carried)
}

/// Which of `links` (id, parent id, in file order) are on the branch ending
/// at the last one (pi's default leaf); a later duplicate id wins.
fn on_branch(links: &[(CompactString, Option<CompactString>)]) -> Vec<bool> {
    let by_id: HashMap<&str, usize> = links
        .iter()
        .enumerate()
        .map(|(i, (id, _))| (id.as_str(), i))
        .collect();
    let mut on = vec![false; links.len()];
    let mut cur = links.len().checked_sub(1);
    while let Some(i) = cur.filter(|&i| !on[i]) {
        on[i] = true;
        cur = links[i].1.as_deref().and_then(|p| by_id.get(p).copied());
    }
    on
}

/// Store the entries read from the file that are not stored yet (each with
/// its line, and a row to embed when it has text to), and return the
/// session's ranking rows to write: its last row and what follows, cut from
/// the entries read again and the new ones. Entries past the session's
/// rowid range ([`schema::SPAN`]) are not stored.
fn add_entries(
    tx: &Transaction<'_>,
    sid: i64,
    lines: &Lines,
    carried: &Carried,
    counters: &mut Counters,
) -> rusqlite::Result<Vec<TextRow>> {
    let (first, last) = rowids(sid);
    let top: i64 = tx
        .query_row(schema::LAST_ENTRY_ROWID, [first, last], |r| {
            r.get::<_, Option<i64>>(0)
        })?
        .unwrap_or(first);
    let fresh = lines.new_entries();
    let offsets = &lines.read.lines[lines.again.len()..];
    let texts = &lines.texts[lines.again.len()..];
    // Appended entries continue the branch (see `continues`), so they are all active.
    let active = if lines.again.is_empty() && top == first {
        let links: Vec<_> = fresh
            .iter()
            .map(|e| (e.id.clone(), e.parent_id.clone()))
            .collect();
        on_branch(&links)
    } else {
        vec![true; fresh.len()]
    };
    let room = usize::try_from(last - top).unwrap_or(0);
    let mut counts = MessageCounts::default();
    let mut ranked: Vec<(i64, Column, &str)> = lines
        .again
        .iter()
        .zip(&lines.texts)
        .filter_map(|(stored, text)| Some((stored.rowid, stored.column?, text.text.as_deref()?)))
        .collect();
    for (i, entry) in fresh.iter().enumerate().take(room) {
        counts.count(entry);
        let rowid = top + 1 + i as i64;
        let text = &texts[i];
        let row = NewEntry {
            rowid,
            entry,
            line: offsets[i],
            active: active[i],
            text,
        };
        add_entry(tx, sid, &row)?;
        add_embedding(tx, rowid, entry, text, carried, counters)?;
        if let Some(words) = text.text.as_deref() {
            ranked.push((rowid, text.column_on(active[i]), words));
        }
    }
    tx.execute(
        schema::ADD_MESSAGES,
        params![
            sid,
            counts.messages,
            counts.first_message,
            counts.last_activity_ms
        ],
    )?;
    Ok(rows::chunks(ranked))
}

/// An entry about to be stored.
struct NewEntry<'e> {
    rowid: i64,
    entry: &'e Entry,
    line: u64,
    active: bool,
    text: &'e EntryText,
}

/// One entry's row in `entries` (and pi's name, when it is a `session_info` entry).
fn add_entry(tx: &Transaction<'_>, sid: i64, new: &NewEntry<'_>) -> rusqlite::Result<()> {
    if let EntryKind::SessionInfo { name } = &new.entry.kind {
        let name = name.as_deref().map(str::trim).filter(|n| !n.is_empty());
        tx.execute(schema::SET_SESSION_NAME, params![sid, name])?;
    }
    let column = new
        .text
        .text
        .as_ref()
        .map(|_| new.text.column_on(new.active) as i64);
    tx.prepare_cached(schema::INSERT_ENTRY)?.execute(params![
        new.rowid,
        new.entry.id.as_str(),
        new.text.role,
        new.active,
        column,
        new.line as i64,
        new.text.bytes(),
        new.text.text.as_deref().map(text_hash)
    ])?;
    Ok(())
}

/// The row to embed of an entry that has text to embed: with the vectors of
/// the same text when they exist (in this session before it was read again,
/// or in another session), else pending.
fn add_embedding(
    tx: &Transaction<'_>,
    rowid: i64,
    entry: &Entry,
    text: &EntryText,
    carried: &Carried,
    counters: &mut Counters,
) -> rusqlite::Result<()> {
    let Some(source) = passage_source(entry) else {
        return Ok(());
    };
    insert_embedding(
        tx,
        rowid,
        text_hash(&source),
        text.bytes(),
        carried,
        counters,
    )
}

fn insert_embedding(
    tx: &Transaction<'_>,
    rowid: i64,
    hash: i64,
    bytes: i64,
    carried: &Carried,
    counters: &mut Counters,
) -> rusqlite::Result<()> {
    let vectors: Option<Vec<u8>> = match carried.get(&hash) {
        Some(v) => Some(v.clone()),
        None => tx
            .prepare_cached(schema::VECTORS_OF_HASH)?
            .query_row([hash], |r| r.get(0))
            .optional()?,
    };
    let seq = vectors.as_ref().map(|_| counters.next_seq());
    tx.prepare_cached(schema::INSERT_EMBEDDING)?
        .execute(params![rowid, hash, bytes, seq, vectors])?;
    counters.inserted(seq.is_some());
    Ok(())
}

/// What the `sessions` row sums up of the messages read.
#[derive(Default)]
struct MessageCounts {
    messages: i64,
    /// pi's preview of the first user message, redacted, then clipped.
    first_message: Option<String>,
    /// pi's last activity: the latest user or assistant message time.
    last_activity_ms: i64,
}

impl MessageCounts {
    fn count(&mut self, entry: &Entry) {
        let EntryKind::Message(m) = &entry.kind else {
            return;
        };
        self.messages += 1;
        if let AgentMessage::User { timestamp, .. } | AgentMessage::Assistant { timestamp, .. } = m
        {
            // The message's own time, else the entry's.
            let t = if *timestamp != 0 {
                *timestamp
            } else {
                entry.timestamp
            };
            self.last_activity_ms = self.last_activity_ms.max(t);
        }
        if let (None, AgentMessage::User { content, .. }) = (&self.first_message, m) {
            // pi's preview: the text blocks joined with spaces, redacted before the clip.
            let text = crate::redact::redact(&text_joined(content, " ")).into_owned();
            self.first_message = (!text.trim().is_empty())
                .then(|| crate::text::clip(&text, FIRST_MESSAGE_CHARS, crate::text::Keep::Head));
        }
    }
}

/// Whether entries appended to session `sid` continue its last stored entry
/// (an agent run does; a jump to another branch does not).
fn continues(conn: &Connection, sid: i64, entries: &[Entry]) -> rusqlite::Result<bool> {
    let (first, last) = rowids(sid);
    let leaf: Option<String> = conn
        .query_row(schema::LAST_ENTRY_ID, [first, last], |r| r.get(0))
        .optional()?;
    Ok(entries.iter().enumerate().all(|(i, e)| match i {
        0 => e.parent_id.as_deref() == leaf.as_deref(),
        _ => e.parent_id.as_deref() == Some(entries[i - 1].id.as_str()),
    }))
}

/// The meta's text as the meta row holds it (redacted): name (with its
/// slug), tags, description and summary, decisions and open tasks, files.
struct MetaText {
    name: String,
    tags: String,
    summary: String,
    decisions: String,
    files: String,
}

impl MetaText {
    fn row(&self, rowid: i64) -> TextRow {
        let mut row = TextRow::new(rowid);
        for (column, text) in [
            (Column::Name, &self.name),
            (Column::Tags, &self.tags),
            (Column::Summary, &self.summary),
            (Column::Decisions, &self.decisions),
            (Column::Files, &self.files),
        ] {
            row.push(column, text);
        }
        row
    }
}

/// The text the meta row is embedded from: its name, summary and tags.
pub(super) fn meta_passage(name: &str, summary: &str, tags: &str) -> String {
    [name, summary, tags]
        .iter()
        .map(|t| t.trim())
        .filter(|t| !t.is_empty())
        .collect::<Vec<_>>()
        .join("\n")
}

/// A meta to store.
struct NewMeta<'m> {
    meta: Option<&'m SessionMeta>,
    /// Its file's mtime (0: none).
    mtime_ns: i64,
    /// The session has a meta row already (it was stored before).
    replaces: bool,
}

/// The meta fields: the `sessions` columns, the meta row's text (its
/// `meta_text`, its ranking row at the session's first rowid and its row to
/// embed), with the file's own name when there is no meta.
fn set_meta(
    tx: &Transaction<'_>,
    sid: i64,
    new: &NewMeta<'_>,
    carried: &Carried,
    counters: &mut Counters,
) -> rusqlite::Result<()> {
    let (meta, mtime_ns) = (new.meta, new.mtime_ns);
    let session_name: Option<String> = tx.query_row(schema::SESSION_NAME, [sid], |r| r.get(0))?;
    let name = meta
        .map(|m| m.name.trim().to_string())
        .filter(|n| !n.is_empty())
        .or(session_name);
    let slug = name.as_deref().map(crate::text::slug);
    let red = |s: &str| crate::redact::redact(s).into_owned();
    let text = |s: &str| Some(red(s)).filter(|s| !s.trim().is_empty());
    let tags = meta.map(|m| m.tags.clone()).unwrap_or_default();
    tx.execute(
        schema::SET_META,
        params![
            sid,
            name.as_deref().map(red),
            slug,
            meta.and_then(|m| text(&m.description)),
            meta.and_then(|m| text(&m.summary)),
            serde_json::to_string(&tags).unwrap_or_else(|_| "[]".into()),
            meta.is_some(),
            meta.map(|m| m.model.clone()).filter(|m| !m.is_empty()),
            meta.and_then(|m| m.usage.as_ref()).map(|u| u.cost_usd),
            mtime_ns,
        ],
    )?;
    let join = |parts: &[&[String]]| {
        red(&parts
            .iter()
            .flat_map(|p| p.iter().map(String::as_str))
            .collect::<Vec<_>>()
            .join("\n"))
    };
    let (summary, decisions, files) = match meta {
        Some(m) => {
            let files = m
                .files
                .as_ref()
                .map(|f| join(&[&f.read, &f.modified]))
                .unwrap_or_default();
            (
                red(&format!("{}\n{}", m.description, m.summary)),
                join(&[&m.decisions, &m.open_tasks]),
                files,
            )
        }
        None => Default::default(),
    };
    let name_text = [name.as_deref(), slug.as_deref()]
        .into_iter()
        .flatten()
        .collect::<Vec<_>>()
        .join(" ");
    let meta_text = MetaText {
        name: red(&name_text),
        tags: red(&tags.join(" ")),
        summary,
        decisions,
        files,
    };
    tx.execute(
        schema::SET_META_TEXT,
        params![
            sid,
            meta_text.name,
            meta_text.tags,
            meta_text.summary,
            meta_text.decisions,
            meta_text.files
        ],
    )?;
    let first = rowids(sid).0;
    if new.replaces {
        // Known gap: the old meta row's words (an earlier name or summary)
        // stay in the full-text index's pages, unfindable, until the next
        // scrub or merge writes its segment again; no scrub is owed for them.
        // Metas are made from redacted text, and one changes after each
        // summarized agent run: a scrub each time would write the whole
        // index again (tens of seconds of CPU at 30,000 sessions) per change.
        tx.execute(schema::DELETE_RANKING_ROW, [first])?;
    }
    tx.prepare_cached(schema::INSERT_RANKING_ROW)?
        .execute(rusqlite::params_from_iter(meta_text.row(first).params()))?;
    let passage = meta_passage(&meta_text.name, &meta_text.summary, &meta_text.tags);
    let hash = text_hash(&passage);
    let stored: Option<(i64, bool)> = tx
        .query_row(schema::EMBEDDING_HASH, [first], |r| {
            Ok((r.get(0)?, r.get(1)?))
        })
        .optional()?;
    if let Some((stored_hash, embedded)) = stored {
        if stored_hash == hash {
            return Ok(());
        }
        tx.execute(schema::DELETE_EMBEDDING, [first])?;
        counters.deleted(1, i64::from(embedded));
    }
    if !passage.is_empty() {
        insert_embedding(tx, first, hash, passage.len() as i64, carried, counters)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::scrub::Structure;

    /// A session of `entries` user messages of ~16 KB each, every one with
    /// the word `word996`: a ranking row for every one or two.
    fn long_session(path: &Path, entries: usize) {
        let mut lines = vec![
            serde_json::json!({"type": "session", "version": 3, "id": "long",
            "timestamp": "2026-03-01T10:00:00.000Z", "cwd": "/home/dev/proj"})
            .to_string(),
        ];
        for k in 0..entries {
            let text: String = (0..2_000)
                .map(|w| format!("word{} ", (k * 7 + w) % 997))
                .collect();
            let parent = (k > 0).then(|| format!("e{}", k - 1));
            lines.push(
                serde_json::json!({"type": "message", "id": format!("e{k}"), "parentId": parent,
                    "timestamp": "2026-03-01T10:00:02.000Z",
                    "message": {"role": "user", "content": text, "timestamp": 1772359201000_i64}})
                .to_string(),
            );
        }
        std::fs::write(path, lines.join("\n") + "\n").unwrap();
    }

    /// The page cache of `store`'s connection (`PRAGMA cache_size`).
    fn cache_size(store: &Store) -> i64 {
        store
            .conn
            .pragma_query_value(None, "cache_size", |r| r.get(0))
            .unwrap()
    }

    /// A pass over many files raises its connection's page cache
    /// ([`PASS_CACHE_KIB`]) and puts it back after, which gives the pages
    /// back: a pi process keeps its store open between passes.
    #[test]
    fn a_pass_over_many_files_puts_the_page_cache_back() {
        let agent = tempfile::tempdir().unwrap();
        let dir = agent.path().join("sessions").join("--home-dev-proj--");
        std::fs::create_dir_all(&dir).unwrap();
        for k in 0..3 {
            long_session(
                &dir.join(format!("2026-03-01T10-00-0{k}-000Z_long.jsonl")),
                2,
            );
        }
        let mut store = Store::open(agent.path()).unwrap();
        let before = cache_size(&store);
        assert_ne!(before, -PASS_CACHE_KIB);
        let sessions = agent.path().join("sessions");
        let report = store
            .update(&sessions, &agent.path().join("sessions-meta"), None)
            .unwrap();
        assert_eq!(report.updated, 3);
        assert_eq!(cache_size(&store), before);
    }

    /// Pragmas set for a pass are set all or none: one that cannot be set
    /// (here, one SQLite does not have) puts back those set before it.
    #[test]
    fn pragmas_a_pass_cannot_all_set_are_all_put_back() {
        let agent = tempfile::tempdir().unwrap();
        let store = Store::open(agent.path()).unwrap();
        let cache = || cache_size(&store);
        let before = cache();
        let pragmas = [("cache_size", before - 1234), ("no_such_pragma", 1)];
        assert!(store.set_pragmas(&pragmas).is_err());
        assert_eq!(cache(), before);
        let had = store.set_pragmas(&pragmas[..1]).unwrap();
        assert_eq!(cache(), before - 1234);
        store.set_pragmas(&had).unwrap();
        assert_eq!(cache(), before);
    }

    /// A write transaction leaves every segment its flushes made where FTS5
    /// wrote it (level 0): no merge inside it, where FTS5's crisis merge of
    /// 16 segments was (`merge.rs`); the merges after it leave no level of
    /// 16. Counted in segments, not time: with `hashsize` 1, FTS5 flushes
    /// each ranking row as a segment of its own.
    #[test]
    fn write_transactions_merge_nothing_and_merges_after_them_do() {
        let agent = tempfile::tempdir().unwrap();
        let dir = agent.path().join("sessions").join("--home-dev-proj--");
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("2026-03-01T10-00-00-000Z_long.jsonl");
        long_session(&path, 60);
        let meta_dir = agent.path().join("sessions-meta");
        let mut store = Store::open(agent.path()).unwrap();
        store
            .conn
            .execute("INSERT INTO docs(docs, rank) VALUES('hashsize', 1)", [])
            .unwrap();
        let gate = store.gate.clone();
        let planned = plan(&store.conn, &path, &meta_dir, &gate);
        let mut plans = vec![(path.clone(), planned)].into_iter();
        let mut written = Written::default();
        write_batch(
            &mut store.conn,
            &mut plans,
            &meta_dir,
            &gate,
            None,
            &mut written,
        )
        .unwrap();
        assert_eq!(written.changed, 1);
        let found = |conn: &Connection| -> i64 {
            let sql = "SELECT count(*) FROM docs WHERE docs MATCH 'word996'";
            conn.query_row(sql, [], |r| r.get(0)).unwrap()
        };
        let rows = found(&store.conn);
        let level_0 = Structure::read(&store.conn).unwrap().fullest_level();
        assert!(
            level_0 > 16,
            "the write transaction merged: {level_0} segments left"
        );

        merge::merge_due(&mut store.conn, BATCH, None).unwrap();
        let fullest = Structure::read(&store.conn).unwrap().fullest_level();
        assert!(fullest < 16, "a level of {fullest} segments left unmerged");
        assert_eq!(
            found(&store.conn),
            rows,
            "the same rows found after the merges"
        );
    }
}
