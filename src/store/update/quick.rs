//! Knowing that the store is up to date without stat'ing every session file.
//!
//! A freshness pass ([`Store::update`]) lists every project directory and
//! `lstat`s every session file: one `statx` per session, most of a CLI
//! search's time at 30,000 sessions. A pass that finds the store holding
//! every file as it is keeps a [`QuickStamp`] beside the store
//! (`index.sqlite.quick`): when the pass began, the store it compared
//! against, the times of the sessions directory, of each project directory
//! and of the meta directory, and the [`HOT_FILES`] most recently modified
//! session files.
//!
//! **The guarantee.** A search ([`Store::catch_up`]) trusts that pass
//! instead of making its own when the pass began less than
//! [`FULL_PASS_EVERY`] ago, no session was written to the store since (but
//! by such searches), the privacy rules and directories are the same, and
//! each of those directories has the modification time, change time and
//! inode it had. A file created, deleted or renamed (a new session, a meta
//! file, which is always replaced whole, a file replaced by a rename)
//! changes its directory's times, so the next search makes a full pass and
//! sees it. The hot files are checked against their stored state as any
//! pass checks a file, so an append to or a rewrite of a session being
//! written now is read by the next search. What a search may miss: a change
//! in place (an append, or a rewrite that keeps the file) to a session file
//! that was not among the [`HOT_FILES`] newest at the last full pass, made
//! by something that does not update the store (pi without the plugin; the
//! plugin updates the store after each agent run, and that write makes the
//! next search pass over every file), and a meta file edited in place. Every
//! search that starts [`FULL_PASS_EVERY`] (10 s) or more after such a change
//! sees it: a full pass that began after the change saw it, and one that
//! began before it is too old to trust. A directory whose times are within
//! [`RACY`] of the pass's start could change again without its times moving
//! (they come from a coarse clock; some file systems keep seconds), so no
//! stamp is kept then and the next search makes a full pass. `--wait`,
//! `session-index index` and the plugin's updates always make the full pass.

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use super::super::{Gate, Store, StoreError};
use super::{epoch_ns, times_of, UpdateReport};
use crate::session::discovery::ListedFile;
use crate::store::meta::file::{replace_with, Durability};

/// The longest a search trusts the last full pass (see the module docs).
pub const FULL_PASS_EVERY: Duration = Duration::from_secs(10);
/// The most recently modified session files at a full pass, checked by
/// every search that trusts it (the sessions being written).
pub const HOT_FILES: usize = 16;
/// A directory modified this close before a full pass began may change
/// again within the same timestamp.
pub const RACY: Duration = Duration::from_secs(2);

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
    /// Each watched directory and its times (`None`: it was not there).
    dirs: Vec<(PathBuf, Option<DirStat>)>,
    /// The [`HOT_FILES`] most recently modified session files.
    hot: Vec<PathBuf>,
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
        let dirs: Vec<(PathBuf, Option<DirStat>)> =
            watched.map(|d| (d.to_path_buf(), dir_stat(d))).collect();
        let settled = epoch_ns(began).saturating_sub(RACY.as_nanos() as i64);
        let racy = dirs
            .iter()
            .filter_map(|(_, stat)| stat.as_ref())
            .any(|s| s.mtime_ns >= settled || s.ctime_ns >= settled);
        if racy {
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
    /// trust the pass this stamp was taken of (but for the hot files).
    fn holds(&self, sessions_dir: &Path, meta_dir: &Path, gate: &Gate, now: SystemTime) -> bool {
        let age_ms = epoch_ns(now) / 1_000_000 - self.began_ms;
        (0..FULL_PASS_EVERY.as_millis() as i64).contains(&age_ms)
            && self.sessions_dir == sessions_dir
            && self.meta_dir == meta_dir
            && self.rules == rules(gate)
            && self.dirs.iter().all(|(dir, was)| dir_stat(dir) == *was)
    }
}

impl Store {
    /// Bring the store up to date for a search: trusting the last full pass
    /// when the [`QuickStamp`] kept beside the store holds (then only the
    /// hot files are checked), else a full [`Store::update`] within
    /// `budget`. What this may miss, and for how long: the module docs.
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

    /// The hot files brought up to date, if the kept stamp holds, and an
    /// owed scrub continued within `budget`.
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
        if self.store_writes()? != (kept.store, kept.writes) {
            return Ok(None);
        }
        let written = self.write(&kept.hot, meta_dir, None)?;
        let report = UpdateReport {
            files: kept.files,
            updated: written.changed,
            // A hot file rewritten owes a scrub (the text it held may be in
            // no file now); an earlier one may be owed too.
            forgot: written.forgot,
            scrub: self.scrub_until(deadline)?,
            ..UpdateReport::default()
        };
        if written.bumps > 0 {
            // If only this search wrote since, the stamp holds with the new count.
            let writes = kept.writes + written.bumps;
            let ours = self.store_writes()? == (kept.store, writes);
            QuickStamp::keep(ours.then_some(QuickStamp { writes, ..kept }), &self.path);
        }
        Ok(Some(report))
    }
}
