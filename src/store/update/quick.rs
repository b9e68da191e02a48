//! Knowing that the store is up to date without stat'ing every session file.
//!
//! A freshness pass ([`Store::update`]) lists every project directory and
//! `lstat`s every session file: one `statx` per session, 200-300 ms of a CLI
//! search at 30,000 sessions. A pass that leaves the store holding every
//! file as it found it (having written what changed, or nothing) keeps a
//! [`QuickStamp`] beside the store (`index.sqlite.quick`): when the pass
//! began, the store it wrote (`store_id`, `writes`), the privacy rules, the
//! times of the sessions directory, of each project directory and of the
//! meta directory, and the hot files: the [`HOT_FILES`] most recently
//! modified session files.
//!
//! **The guarantee.** A search ([`Store::catch_up`], the CLI's, `/sessions`
//! and `search_sessions`) trusts the last full pass instead of making its
//! own while the pass began less than [`FULL_PASS_EVERY`] (10 min) ago, the
//! privacy rules are the same, each watched directory has the modification
//! time, change time and inode it had, and nothing but the store's own
//! per-file writes moved the store since: a search's, and
//! [`Store::update_file`]'s (the file it wrote joins the hot files). Such a
//! search checks, as any pass checks a file, the hot files and a rotating
//! slice of [`SLICE`] (512) stored sessions, the next ones in the store's
//! order; a file found changed is read and joins the hot files. So a new,
//! deleted or renamed file (a session, a meta file, which is always
//! replaced whole) changes its directory's times and is seen by the next
//! search; an append to or a rewrite of a hot file (the sessions being
//! written, and any the store wrote or found changed since the pass) is
//! read by the next search; and a pass that wrote (the plugin's refresh
//! after each agent run, `--wait`), or [`Store::update_file`], leaves the
//! next search as quick as one after a pass that found nothing. A meta file
//! written (a summary after an agent run) moves the meta directory's times:
//! the next search makes the full pass, and keeps the stamp again (see
//! [`RACY`]).
//! **What a search may miss:** a change in place (an append,
//! or a rewrite that keeps the file) to a session file that is not hot,
//! made by something that does not update the store — pi without the
//! plugin resuming an old session; the plugin updates the store after each
//! agent run — or a meta file edited in place. It is read by the first
//! search whose slice reaches the file, within `ceil(sessions / SLICE)`
//! searches after the change (each search's slice follows the last one's;
//! 59 at 30,000 sessions, 6 at 3,000), and at the latest by every search
//! that starts [`FULL_PASS_EVERY`] after it (then the stamp is too old and
//! the search makes a full pass). A file that is not a stored session (not
//! a pi session yet when the pass read it) is checked only while hot. A
//! directory whose times are within [`RACY`] of the pass's start could
//! change again without its times moving (they come from a coarse clock;
//! some file systems keep seconds), so no stamp is kept then and the next
//! search makes a full pass. `--wait`, `session-index index`, `/index-all`
//! and the plugin's refresh after `agent_end` always make the full pass.
//!
//! Why these bounds: a full pass costs 200-300 ms at 30,000 sessions, a
//! slice of 512 sessions (two `lstat`s each: the file and its meta file) a
//! few milliseconds, so a search made minutes after the last one stays
//! quick, while the missed case (no plugin, an old session resumed) is read
//! within a few searches at a few thousand sessions and within 10 minutes
//! at any size. [`FULL_PASS_EVERY_ENV`] and [`SLICE_ENV`] set other bounds
//! (seconds, sessions): 0 seconds makes every search a full pass.

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use super::super::{schema, Gate, Store, StoreError};
use super::{epoch_ns, meta_mtime, stat, times_of, KnownFile, UpdateReport};
use crate::session::discovery::ListedFile;
use crate::store::meta::file::{replace_with, Durability};

/// The longest a search trusts the last full pass (see the module docs).
pub const FULL_PASS_EVERY: Duration = Duration::from_secs(600);
/// Another [`FULL_PASS_EVERY`], in seconds (tests; a user who wants another bound).
pub const FULL_PASS_EVERY_ENV: &str = "SESSION_INDEX_FULL_PASS_EVERY";
/// The most recently modified session files at a full pass, checked by
/// every search that trusts it (the sessions being written), and those the
/// store wrote or found changed since (most recent first, as many).
pub const HOT_FILES: usize = 16;
/// Stored sessions a search checks besides the hot files, the next ones
/// after the last search's (module docs).
pub const SLICE: usize = 512;
/// Another [`SLICE`], in sessions.
pub const SLICE_ENV: &str = "SESSION_INDEX_SLICE";
/// A directory modified this close before a full pass began may change
/// again within the same timestamp.
pub const RACY: Duration = Duration::from_secs(2);

/// How long a search trusts the last full pass: [`FULL_PASS_EVERY`], or
/// [`FULL_PASS_EVERY_ENV`]'s seconds.
pub fn full_pass_every() -> Duration {
    from_env(FULL_PASS_EVERY_ENV).map_or(FULL_PASS_EVERY, Duration::from_secs)
}

/// How many stored sessions a search checks besides the hot files.
fn slice() -> usize {
    from_env(SLICE_ENV).map_or(SLICE, |n| n as usize)
}

fn from_env(name: &str) -> Option<u64> {
    std::env::var(name).ok()?.trim().parse().ok()
}

/// What a search compares instead of stat'ing every file (module docs).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub(super) struct QuickStamp {
    /// The store the pass compared against (its `store_id`) and its
    /// `writes` counter then.
    store: i64,
    writes: i64,
    /// When the pass began, in ms since the epoch (wall clock).
    began_ms: i64,
    /// The gate's rules ([`Gate::hash_rules`]).
    rules: u64,
    /// Session files the pass found (a search's `index.files`).
    files: usize,
    sessions_dir: PathBuf,
    meta_dir: PathBuf,
    /// The watched directories' times.
    dirs: DirTimes,
    /// The hot files, most recent first: the [`HOT_FILES`] most recently
    /// modified session files at the pass, each file the store wrote or a
    /// search found changed since put first (at most twice [`HOT_FILES`],
    /// the least recent dropped).
    hot: Vec<PathBuf>,
    /// The `sid` of the last stored session the searches' slices checked
    /// (0: none; the next slice starts after it, from the first again past
    /// the last).
    #[serde(default)]
    checked: i64,
}

/// The times of directories, as a check that no file was created, deleted
/// or renamed in them since (each such change moves its directory's
/// times): the quick stamp's, and the resolver's catalog's between two
/// updates (`store/cache.rs`).
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(transparent)]
pub(crate) struct DirTimes(Vec<(PathBuf, Option<DirStat>)>);

impl DirTimes {
    /// The times of `dirs` now (`None` for one that is not a directory).
    pub(crate) fn of<'a>(dirs: impl IntoIterator<Item = &'a Path>) -> DirTimes {
        DirTimes(
            dirs.into_iter()
                .map(|d| (d.to_path_buf(), dir_stat(d)))
                .collect(),
        )
    }

    /// Every directory has the times it had.
    pub(crate) fn hold(&self) -> bool {
        self.0.iter().all(|(dir, was)| dir_stat(dir) == *was)
    }

    /// A directory was modified at or after `ns` (since the epoch).
    fn changed_since(&self, ns: i64) -> bool {
        self.0
            .iter()
            .filter_map(|(_, stat)| stat.as_ref())
            .any(|s| s.mtime_ns >= ns || s.ctime_ns >= ns)
    }
}

/// A directory's times as `stat` (following a symlink) gives them. The
/// change time and inode are there for a time set back (`touch -d`) and a
/// directory replaced by another.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
struct DirStat {
    mtime_ns: i64,
    ctime_ns: i64,
    inode: u64,
}

fn dir_stat(path: &Path) -> Option<DirStat> {
    let md = std::fs::metadata(path).ok()?;
    if !md.is_dir() {
        return None;
    }
    let (mtime_ns, ctime_ns, inode) = times_of(&md);
    Some(DirStat {
        mtime_ns,
        ctime_ns,
        inode,
    })
}

/// The gate's rules in one number.
fn rules(gate: &Gate) -> u64 {
    use std::hash::Hasher;
    let mut state = std::hash::DefaultHasher::new();
    gate.hash_rules(&mut state);
    state.finish()
}

/// The sessions directory, the meta directory and the project directories listed.
type Watched<'a> = (&'a Path, &'a Path, &'a [PathBuf]);

impl QuickStamp {
    fn path(store: &Path) -> PathBuf {
        let mut name = store.as_os_str().to_owned();
        name.push(".quick");
        PathBuf::from(name)
    }

    /// The stamp of a full pass that began at `began`, listed the `dirs`
    /// and `files` and found them as the store (`store_id`, `writes`) holds
    /// them; `None` when a directory changed within [`RACY`] before `began`
    /// (or since).
    pub fn taken(
        began: SystemTime,
        dirs: Watched<'_>,
        files: &[ListedFile],
        gate: &Gate,
        (store, writes): (i64, i64),
    ) -> Option<QuickStamp> {
        let (sessions_dir, meta_dir, project_dirs) = dirs;
        let watched = [sessions_dir, meta_dir]
            .into_iter()
            .chain(project_dirs.iter().map(PathBuf::as_path));
        let dirs = DirTimes::of(watched);
        if dirs.changed_since(epoch_ns(began).saturating_sub(RACY.as_nanos() as i64)) {
            return None;
        }
        let mut newest: Vec<(i64, &Path)> = files
            .iter()
            .filter_map(|f| {
                let mtime = f.metadata.as_ref()?.modified().ok()?;
                Some((epoch_ns(mtime), f.path.as_path()))
            })
            .collect();
        newest.sort_unstable_by(|a, b| b.cmp(a));
        newest.truncate(HOT_FILES);
        Some(QuickStamp {
            store,
            writes,
            began_ms: epoch_ns(began) / 1_000_000,
            rules: rules(gate),
            files: files.len(),
            sessions_dir: sessions_dir.to_path_buf(),
            meta_dir: meta_dir.to_path_buf(),
            dirs,
            hot: newest.into_iter().map(|(_, p)| p.to_path_buf()).collect(),
            checked: 0,
        })
    }

    /// Keep `stamp` beside `store`, or remove the one there (`None`): a
    /// failure only means the next search makes a full pass. Not synced: a
    /// stamp lost or torn in a crash is one that does not parse or does not
    /// hold (the store's `writes` moved past it), and the syncs took
    /// milliseconds.
    pub fn keep(stamp: Option<QuickStamp>, store: &Path) {
        let target = Self::path(store);
        let Some(stamp) = stamp else {
            let _ = std::fs::remove_file(&target);
            return;
        };
        let temp = target.with_extension(format!("quick.{}.tmp", std::process::id()));
        let kept = serde_json::to_vec(&stamp)
            .map_err(std::io::Error::other)
            .and_then(|bytes| {
                // A temp file left by a process of the same id is replaced, never followed.
                let _ = std::fs::remove_file(&temp);
                replace_with(&temp, &target, &bytes, Durability::Unsynced)
            });
        if let Err(e) = kept {
            tracing::debug!("{}: {e}", target.display());
        }
    }

    /// The stamp kept beside `store`, if any (read without blocking:
    /// anything but a regular file there is none).
    fn kept(store: &Path) -> Option<QuickStamp> {
        let bytes = regular_files::read_regular(&Self::path(store)).ok()?;
        serde_json::from_slice(&bytes).ok()
    }

    /// Whether a search at `now` in these directories, under `gate`, may
    /// trust the pass this stamp was taken of (but for the files it checks).
    fn holds(&self, sessions_dir: &Path, meta_dir: &Path, gate: &Gate, now: SystemTime) -> bool {
        let age_ms = epoch_ns(now) / 1_000_000 - self.began_ms;
        (0..full_pass_every().as_millis() as i64).contains(&age_ms)
            && self.sessions_dir == sessions_dir
            && self.meta_dir == meta_dir
            && self.rules == rules(gate)
            && self.dirs.hold()
    }

    /// The stamp with `paths` first among the hot files (past twice
    /// [`HOT_FILES`] of them, the least recent are dropped).
    fn with_hot(mut self, paths: &[PathBuf]) -> QuickStamp {
        let mut hot: Vec<PathBuf> = paths.to_vec();
        hot.extend(self.hot.drain(..).filter(|p| !paths.contains(p)));
        hot.truncate(HOT_FILES * 2);
        self.hot = hot;
        self
    }
}

impl Store {
    /// Bring the store up to date for a search: trusting the last full pass
    /// when the [`QuickStamp`] kept beside the store holds (then only the
    /// hot files and a slice of the stored sessions are checked), else a
    /// full [`Store::update`] within `budget`. What this may miss, and for
    /// how long: the module docs.
    pub fn catch_up(
        &mut self,
        sessions_dir: &Path,
        meta_dir: &Path,
        budget: Option<Duration>,
    ) -> Result<UpdateReport, StoreError> {
        match self.quick_pass(sessions_dir, meta_dir, budget)? {
            Some(report) => Ok(report),
            None => self.update(sessions_dir, meta_dir, budget),
        }
    }

    /// The hot files and the next slice brought up to date, if the kept
    /// stamp holds, and an owed scrub continued within `budget`.
    fn quick_pass(
        &mut self,
        sessions_dir: &Path,
        meta_dir: &Path,
        budget: Option<Duration>,
    ) -> Result<Option<UpdateReport>, StoreError> {
        let deadline = budget.map(|b| std::time::Instant::now() + b);
        let Some(kept) = QuickStamp::kept(&self.path) else {
            return Ok(None);
        };
        if !kept.holds(sessions_dir, meta_dir, &self.gate, SystemTime::now()) {
            return Ok(None);
        }
        let before = self.store_writes()?;
        if before != (kept.store, kept.writes) {
            return Ok(None);
        }
        let (found, checked) = self.changed_in_slice(kept.checked, meta_dir)?;
        let mut paths = found.clone();
        paths.extend(kept.hot.iter().filter(|p| !found.contains(p)).cloned());
        let written = self.write(&paths, meta_dir, None)?;
        let report = UpdateReport {
            files: kept.files,
            updated: written.changed,
            // A hot file rewritten owes a scrub (the text it held may be in
            // no file now); an earlier one may be owed too.
            forgot: written.forgot,
            scrub: self.scrub_until(deadline)?,
            ..UpdateReport::default()
        };
        let stamp = QuickStamp {
            checked,
            ..kept.clone()
        }
        .with_hot(&found);
        if stamp != kept || written.bumps > 0 {
            self.keep_after_own_write(stamp, before, written.bumps)?;
        }
        Ok(Some(report))
    }

    /// The stored sessions after `sid` `after` in the store's order (the
    /// slice, [`slice`] of them; from the first when none are left) whose
    /// file or meta file is not as stored, and the last `sid` checked.
    fn changed_in_slice(
        &self,
        after: i64,
        meta_dir: &Path,
    ) -> Result<(Vec<PathBuf>, i64), StoreError> {
        let limit = slice() as i64;
        if limit == 0 {
            return Ok((Vec::new(), after));
        }
        let mut rows: Vec<(i64, PathBuf, KnownFile)> = Vec::new();
        self.conn
            .prepare_cached(schema::FILES_AFTER)
            .and_then(|mut s| {
                for row in s.query_map([after, limit], |r| {
                    Ok((
                        r.get(0)?,
                        PathBuf::from(r.get::<_, String>(1)?),
                        KnownFile::from_row(r, 2)?,
                    ))
                })? {
                    rows.push(row?);
                }
                Ok(())
            })
            .map_err(|e| self.sql(e))?;
        // Past the last stored session: the next slice starts from the first.
        let checked = match rows.last() {
            Some((sid, _, _)) if rows.len() as i64 == limit => *sid,
            _ => 0,
        };
        let changed = rows
            .into_iter()
            .filter(|(_, path, known)| {
                !known.is_current(stat(path), meta_mtime(meta_dir, &known.id))
            })
            .map(|(_, path, _)| path)
            .collect();
        Ok((changed, checked))
    }

    /// After this store wrote `paths` (each file as it is now, `bumps`
    /// moves of the `writes` counter) to a store whose counters were
    /// `before`: the kept stamp, if it was of `before` and this write alone
    /// moved the store, still holds with `paths` among its hot files
    /// ([`Store::update_file`]: the plugin's write of its session leaves
    /// the next search quick).
    pub(super) fn note_own_write(
        &self,
        before: (i64, i64),
        paths: &[PathBuf],
        bumps: i64,
    ) -> Result<(), StoreError> {
        if bumps == 0 {
            return Ok(());
        }
        let Some(kept) = QuickStamp::kept(&self.path) else {
            return Ok(());
        };
        if (kept.store, kept.writes) != before {
            return Ok(());
        }
        self.keep_after_own_write(kept.with_hot(paths), before, bumps)
    }

    /// Keep `stamp`, taken when the store's counters were `before`, with
    /// the `writes` counter moved by `bumps` of this store's own, if no
    /// other writer moved it since (else remove it: it holds no more).
    fn keep_after_own_write(
        &self,
        stamp: QuickStamp,
        before: (i64, i64),
        bumps: i64,
    ) -> Result<(), StoreError> {
        let writes = before.1 + bumps;
        let ours = self.store_writes()? == (before.0, writes);
        QuickStamp::keep(ours.then_some(QuickStamp { writes, ..stamp }), &self.path);
        Ok(())
    }
}
