//! Where the resolver's rows come from today: one agent directory's session
//! and meta files, read once and then refreshed incrementally. (Once the
//! search index's `sessions` table holds the same rows, it replaces this.)
//!
//! A refresh re-stats directories (a new, removed or atomically replaced file
//! changes its directory's mtime) plus the few most recently modified session
//! files (the ones being appended to), and re-reads only files whose
//! (mtime, size) changed; a re-listed directory compares inodes, so atomic
//! replacements are found without a `stat` per file. A lookup that misses
//! re-stats everything (`Refresh::Full`). Files are read on a few threads
//! when there are many (the first build).
//!
//! Before the first build has finished, [`listed_rows`] gives the rows that
//! cost no session read: ids from pi's file names, names from meta files.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime};

use super::light::{self, Light};
use super::resolve::{id_like, resolve, Outcome, Query, Rule};
use super::rows::{Row, RowKey, Rows};
use super::scan::{self, Listed, MetaLight, Stamp};
use super::CatalogEntry;

/// Known session files re-stat'd on every refresh: the most recently modified.
const HOT_FILES: usize = 16;
/// Project directories nest one level in pi; a little slack, but bounded.
const MAX_DEPTH: usize = 3;
const META_SUFFIX: &str = ".meta.json";
/// Below this many files a refresh reads on the calling thread.
const PARALLEL_MIN: usize = 128;

/// How hard a refresh looks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Refresh {
    /// Directories and hot files.
    Incremental,
    /// Re-stat every known file too.
    Full,
}

struct DirState {
    mtime: SystemTime,
    files: Vec<PathBuf>,
    dirs: Vec<PathBuf>,
}

struct SessionRec {
    stamp: Stamp,
    ino: u64,
    light: Option<Light>,
}

struct MetaRec {
    stamp: Stamp,
    ino: u64,
    meta: Option<MetaLight>,
}

pub(crate) struct Source {
    pub sessions_dir: PathBuf,
    pub meta_dir: PathBuf,
    /// Canonical sessions directory; `None` while it does not exist.
    pub canon: Option<PathBuf>,
    canon_meta: Option<PathBuf>,
    dirs: HashMap<PathBuf, DirState>,
    sessions: HashMap<PathBuf, SessionRec>,
    meta_dir_mtime: Option<SystemTime>,
    metas: HashMap<PathBuf, MetaRec>,
    /// Session id (as written) → meta file path.
    meta_by_id: HashMap<String, PathBuf>,
    hot: Vec<PathBuf>,
    pub rows: Rows,
    last_full: Option<Instant>,
}

/// A file to (re-)read, with what is known about it.
struct Job {
    path: PathBuf,
    ino: u64,
    prev: Option<Light>,
}

impl Source {
    pub fn new(sessions_dir: &Path, meta_dir: &Path) -> Source {
        Source {
            sessions_dir: sessions_dir.to_path_buf(),
            meta_dir: meta_dir.to_path_buf(),
            canon: None,
            canon_meta: None,
            dirs: HashMap::new(),
            sessions: HashMap::new(),
            meta_dir_mtime: None,
            metas: HashMap::new(),
            meta_by_id: HashMap::new(),
            hot: Vec::new(),
            rows: Rows::default(),
            last_full: None,
        }
    }

    /// True when a full sweep ran less than `within` ago.
    pub fn swept_within(&self, within: Duration) -> bool {
        self.last_full.is_some_and(|t| t.elapsed() < within)
    }

    /// Bring the catalog up to date (the first refresh reads everything).
    pub fn refresh(&mut self, mode: Refresh) {
        let full = mode == Refresh::Full || self.last_full.is_none();
        if full {
            self.last_full = Some(Instant::now());
        }
        let mut changed: HashSet<String> = HashSet::new();
        let meta_jobs = self.plan_metas(full, &mut changed);
        let (session_jobs, listing_changed) = self.plan_sessions(full, &mut changed);
        let metas = parallel(&meta_jobs, |j| scan::read_meta(&j.path));
        for (job, read) in meta_jobs.into_iter().zip(metas) {
            self.drop_meta(&job.path, &mut changed);
            let Some((stamp, meta)) = read.flatten() else { continue };
            if let Some(m) = meta.as_ref() {
                changed.insert(m.session_id.clone());
                self.meta_by_id.insert(m.session_id.clone(), job.path.clone());
            }
            self.metas.insert(job.path, MetaRec { stamp, ino: job.ino, meta });
        }
        let sessions = parallel(&session_jobs, |j| light::read_session(&j.path, j.prev.as_ref()).ok());
        let touched = !session_jobs.is_empty();
        for (job, read) in session_jobs.into_iter().zip(sessions) {
            self.apply_session(job, read.flatten(), &mut changed);
        }
        if !changed.is_empty() {
            self.reconcile(&changed);
        }
        if touched || listing_changed {
            self.recompute_hot();
        }
    }

    fn apply_session(&mut self, job: Job, read: Option<(Stamp, Option<Light>)>, changed: &mut HashSet<String>) {
        let Some((stamp, light)) = read else {
            self.drop_session(&job.path, changed);
            return;
        };
        if let Some(old) = job.prev.as_ref() {
            changed.insert(old.id.clone());
        }
        if let Some(old) = self.sessions.get(&job.path).and_then(|r| r.light.as_ref()) {
            changed.insert(old.id.clone());
        }
        match light.as_ref() {
            Some(l) => {
                changed.insert(l.id.clone());
            }
            None => {
                self.rows.remove(&RowKey::Session(job.path.clone()));
            }
        }
        self.sessions.insert(job.path, SessionRec { stamp, ino: job.ino, light });
    }

    /// True when a known file's (mtime, size) differs from what was read.
    fn stale(stamp: Option<Stamp>, path: &Path) -> bool {
        match (stamp, std::fs::metadata(path)) {
            (Some(s), Ok(md)) => Stamp::of(&md) != s,
            _ => true,
        }
    }

    fn plan_sessions(&mut self, full: bool, changed: &mut HashSet<String>) -> (Vec<Job>, bool) {
        let root = self.sessions_dir.clone();
        let canon_now =
            if full || self.canon.is_none() { std::fs::canonicalize(&root).ok() } else { self.canon.clone() };
        let mut listing_changed = false;
        if canon_now != self.canon {
            // The sessions directory appeared, vanished or moved: start over.
            self.canon = canon_now;
            self.dirs.clear();
            let paths: Vec<PathBuf> = self.sessions.keys().cloned().collect();
            for p in paths {
                self.drop_session(&p, changed);
            }
            listing_changed = true;
        }
        let Some(canon) = self.canon.clone() else { return (Vec::new(), listing_changed) };
        let mut listed: Vec<(PathBuf, u64)> = Vec::new();
        let mut removed: Vec<PathBuf> = Vec::new();
        self.walk(&root, &canon, 0, &mut listed, &mut removed);
        listing_changed |= !listed.is_empty() || !removed.is_empty();
        for p in removed {
            self.drop_session(&p, changed);
        }
        let mut jobs = Vec::new();
        let mut queued: HashSet<PathBuf> = HashSet::new();
        for (path, ino) in listed {
            let rec = self.sessions.get(&path);
            let needs = match rec {
                None => true,
                Some(r) if ino == 0 || full => r.ino != ino || Self::stale(Some(r.stamp), &path),
                Some(r) => r.ino != ino,
            };
            if needs && queued.insert(path.clone()) {
                jobs.push(Job { prev: rec.and_then(|r| r.light.clone()), path, ino });
            }
        }
        let known: Vec<PathBuf> = if full {
            self.sessions.keys().cloned().collect()
        } else {
            self.hot.iter().filter(|p| self.sessions.contains_key(*p)).cloned().collect()
        };
        for path in known {
            if queued.contains(&path) {
                continue;
            }
            let Some(r) = self.sessions.get(&path) else { continue };
            if Self::stale(Some(r.stamp), &path) {
                queued.insert(path.clone());
                jobs.push(Job { prev: r.light.clone(), ino: r.ino, path });
            }
        }
        (jobs, listing_changed)
    }

    /// Walk one directory. Unchanged directories are trusted for their file
    /// list (only their subdirectories are visited); changed ones are
    /// re-listed and their files returned with inodes.
    fn walk(
        &mut self,
        dir: &Path,
        canon: &Path,
        depth: usize,
        listed: &mut Vec<(PathBuf, u64)>,
        removed: &mut Vec<PathBuf>,
    ) {
        let mtime = std::fs::metadata(dir).and_then(|m| m.modified()).ok();
        let Some(mtime) = mtime else {
            self.forget_dir(dir, removed);
            return;
        };
        let unchanged = self.dirs.get(dir).is_some_and(|d| d.mtime == mtime);
        if unchanged {
            let dirs = self.dirs.get(dir).map(|d| d.dirs.clone()).unwrap_or_default();
            if depth < MAX_DEPTH {
                for sub in dirs {
                    self.walk(&sub, canon, depth + 1, listed, removed);
                }
            }
            return;
        }
        let (entries, _) = scan::list_dir(dir, canon, ".jsonl");
        let mut files = Vec::new();
        let mut dirs = Vec::new();
        for l in entries {
            match l {
                Listed::File(p, ino) => {
                    files.push(p.clone());
                    listed.push((p, ino));
                }
                Listed::Dir(p) => dirs.push(p),
            }
        }
        if let Some(old) = self.dirs.get(dir) {
            let keep_files: HashSet<&PathBuf> = files.iter().collect();
            removed.extend(old.files.iter().filter(|f| !keep_files.contains(f)).cloned());
            let keep_dirs: HashSet<&PathBuf> = dirs.iter().collect();
            let gone: Vec<PathBuf> = old.dirs.iter().filter(|d| !keep_dirs.contains(d)).cloned().collect();
            for g in gone {
                self.forget_dir(&g, removed);
            }
        }
        self.dirs.insert(dir.to_path_buf(), DirState { mtime, files, dirs: dirs.clone() });
        if depth < MAX_DEPTH {
            for sub in dirs {
                self.walk(&sub, canon, depth + 1, listed, removed);
            }
        }
    }

    fn forget_dir(&mut self, dir: &Path, removed: &mut Vec<PathBuf>) {
        if let Some(old) = self.dirs.remove(dir) {
            removed.extend(old.files);
            for d in old.dirs {
                self.forget_dir(&d, removed);
            }
        }
    }

    fn drop_session(&mut self, path: &Path, changed: &mut HashSet<String>) {
        if let Some(rec) = self.sessions.remove(path) {
            if let Some(l) = rec.light {
                changed.insert(l.id);
            }
        }
        self.rows.remove(&RowKey::Session(path.to_path_buf()));
    }

    fn recompute_hot(&mut self) {
        let mut all: Vec<(SystemTime, &PathBuf)> = self.sessions.iter().map(|(p, r)| (r.stamp.mtime, p)).collect();
        let n = all.len().min(HOT_FILES);
        if n == 0 {
            self.hot.clear();
            return;
        }
        if all.len() > n {
            all.select_nth_unstable_by(n - 1, |a, b| b.0.cmp(&a.0));
            all.truncate(n);
        }
        self.hot = all.into_iter().map(|(_, p)| p.clone()).collect();
    }

    fn plan_metas(&mut self, full: bool, changed: &mut HashSet<String>) -> Vec<Job> {
        let dir = self.meta_dir.clone();
        let mtime = std::fs::metadata(&dir).and_then(|m| m.modified()).ok();
        if mtime.is_none() {
            let paths: Vec<PathBuf> = self.metas.keys().cloned().collect();
            for p in paths {
                self.drop_meta(&p, changed);
            }
            self.meta_dir_mtime = None;
            self.canon_meta = None;
            return Vec::new();
        }
        let mut jobs = Vec::new();
        if !full && mtime == self.meta_dir_mtime {
            // Meta files are replaced atomically, which touches the directory.
            return jobs;
        }
        self.meta_dir_mtime = mtime;
        if full || self.canon_meta.is_none() {
            self.canon_meta = std::fs::canonicalize(&dir).ok();
        }
        let Some(canon) = self.canon_meta.clone() else { return jobs };
        let (listed, ok) = scan::list_dir(&dir, &canon, META_SUFFIX);
        if !ok {
            return jobs;
        }
        let files: HashMap<PathBuf, u64> = listed
            .into_iter()
            .filter_map(|l| match l {
                Listed::File(p, ino) => Some((p, ino)),
                Listed::Dir(_) => None,
            })
            .collect();
        let gone: Vec<PathBuf> = self.metas.keys().filter(|p| !files.contains_key(*p)).cloned().collect();
        for p in gone {
            self.drop_meta(&p, changed);
        }
        for (path, ino) in files {
            let needs = match self.metas.get(&path) {
                None => true,
                Some(r) if ino == 0 || full => r.ino != ino || Self::stale(Some(r.stamp), &path),
                Some(r) => r.ino != ino,
            };
            if needs {
                jobs.push(Job { path, ino, prev: None });
            }
        }
        jobs
    }

    fn drop_meta(&mut self, path: &Path, changed: &mut HashSet<String>) {
        if let Some(MetaRec { meta: Some(m), .. }) = self.metas.remove(path) {
            if self.meta_by_id.get(&m.session_id).is_some_and(|p| p == path) {
                self.meta_by_id.remove(&m.session_id);
            }
            changed.insert(m.session_id);
        }
    }

    fn meta_for(&self, id: &str) -> Option<&MetaLight> {
        self.meta_by_id.get(id).and_then(|p| self.metas.get(p)).and_then(|r| r.meta.as_ref())
    }

    /// Rebuild the items of every session id whose session or meta changed.
    fn reconcile(&mut self, ids: &HashSet<String>) {
        let mut by_id: HashMap<&str, Vec<&PathBuf>> = HashMap::new();
        for (p, rec) in &self.sessions {
            if let Some(l) = rec.light.as_ref().filter(|l| ids.contains(&l.id)) {
                by_id.entry(l.id.as_str()).or_default().push(p);
            }
        }
        let mut items = Vec::new();
        let mut orphans_gone = Vec::new();
        for id in ids {
            let meta = self.meta_for(id);
            let paths = by_id.get(id.as_str()).cloned().unwrap_or_default();
            for p in &paths {
                let Some(rec) = self.sessions.get(*p) else { continue };
                let Some(light) = rec.light.as_ref() else { continue };
                items.push(session_row(p, rec.stamp, light, meta));
            }
            match meta {
                Some(m) if paths.is_empty() => items.push(orphan_row(&self.sessions_dir, m)),
                _ => orphans_gone.push(RowKey::Orphan(id.clone())),
            }
        }
        for key in orphans_gone {
            self.rows.remove(&key);
        }
        for item in items {
            self.rows.upsert(item);
        }
    }

    /// The row of a session file, looked up by the path as listed or, for
    /// paths spelled differently (symlinked agent dir), by canonical path.
    pub fn row_for_path(&self, path: &Path) -> Option<&Row> {
        if let Some(row) = self.rows.get(&RowKey::Session(path.to_path_buf())) {
            return Some(row);
        }
        let canon = self.canon.as_ref()?;
        let real = std::fs::canonicalize(path).ok()?;
        let rel = real.strip_prefix(canon).ok()?;
        self.rows.get(&RowKey::Session(self.sessions_dir.join(rel)))
    }
}

fn session_row(path: &Path, stamp: Stamp, light: &Light, meta: Option<&MetaLight>) -> Row {
    let non_empty = |s: &str| (!s.trim().is_empty()).then(|| s.to_string());
    let entry = CatalogEntry {
        id: light.id.clone(),
        path: path.to_path_buf(),
        name: light.name.clone().or_else(|| meta.and_then(|m| non_empty(&m.name))),
        description: meta.and_then(|m| non_empty(&m.description)),
        summary: meta.and_then(|m| non_empty(&m.summary)),
        tags: meta.map(|m| m.tags.clone()).unwrap_or_default(),
        cwd: light.cwd.clone(),
        created: light.created.clone(),
        modified_ms: stamp.modified_ms(),
        parent_session: light.parent_session.clone(),
        first_message: light.first_message.clone(),
        has_meta: meta.is_some(),
    };
    Row::new(RowKey::Session(path.to_path_buf()), entry, meta.map(|m| m.name.as_str()))
}

fn orphan_row(sessions_dir: &Path, m: &MetaLight) -> Row {
    let path =
        if m.session_file.is_empty() { sessions_dir.join(&m.session_id) } else { PathBuf::from(&m.session_file) };
    let entry = CatalogEntry {
        id: m.session_id.clone(),
        path,
        name: (!m.name.trim().is_empty()).then(|| m.name.clone()),
        description: (!m.description.is_empty()).then(|| m.description.clone()),
        summary: (!m.summary.is_empty()).then(|| m.summary.clone()),
        tags: m.tags.clone(),
        cwd: m.cwd.clone(),
        created: m.created_at.clone(),
        modified_ms: 0,
        parent_session: None,
        first_message: None,
        has_meta: true,
    };
    Row::new(RowKey::Orphan(m.session_id.clone()), entry, None)
}

/// Map `f` over `items`, on up to four threads when there are many. A
/// panicking reader loses only its item (`None`: treated as unreadable).
fn parallel<I: Sync, O: Send>(items: &[I], f: impl Fn(&I) -> O + Sync) -> Vec<Option<O>> {
    if items.len() < PARALLEL_MIN {
        return items.iter().map(|i| Some(f(i))).collect();
    }
    crate::threads::map_each(items, 4, f)
}

/// A lookup before the first build: the exact rules over the rows to be had
/// without reading session files, one per session file named the pi way
/// (`<timestamp>_<id>.jsonl`) with its meta file's name, tags and cwd (meta
/// files are read only for references that are not id-like). Answers only
/// with a session found (then read in full); anything else, or a session
/// file not named the pi way (only its header can tell its id), is left to
/// the build.
pub(crate) fn cold_lookup(sessions_dir: &Path, meta_dir: &Path, q: &Query) -> Option<(CatalogEntry, Rule)> {
    let canon = std::fs::canonicalize(sessions_dir).ok()?;
    let mut files = Vec::new();
    let mut dirs = vec![(sessions_dir.to_path_buf(), 0usize)];
    while let Some((dir, depth)) = dirs.pop() {
        for l in scan::list_dir(&dir, &canon, ".jsonl").0 {
            match l {
                Listed::Dir(d) if depth < MAX_DEPTH => dirs.push((d, depth + 1)),
                Listed::Dir(_) => {}
                Listed::File(p, _) => {
                    let name = p.file_name().and_then(|n| n.to_str()).unwrap_or_default();
                    let id = name.strip_suffix(".jsonl")?.rsplit_once('_')?.1.to_string();
                    files.push((p, id));
                }
            }
        }
    }
    let metas: HashMap<String, MetaLight> = if id_like(q.reference) { HashMap::new() } else { read_metas(meta_dir) };
    let mut rows: Vec<Row> = files
        .iter()
        .map(|(path, id)| {
            let meta = metas.get(id);
            let mut entry = meta.map_or_else(CatalogEntry::default, |m| orphan_row(sessions_dir, m).entry);
            (entry.id, entry.path, entry.has_meta) = (id.clone(), path.clone(), meta.is_some());
            Row::new(RowKey::Session(path.clone()), entry, None)
        })
        .collect();
    let listed: HashSet<&str> = files.iter().map(|(_, id)| id.as_str()).collect();
    rows.extend(
        metas.values().filter(|m| !listed.contains(m.session_id.as_str())).map(|m| orphan_row(sessions_dir, m)),
    );
    let Outcome::Found(i, rule) = resolve(&rows, q, false) else { return None };
    let RowKey::Session(path) = &rows.get(i)?.key else { return None };
    let (stamp, light) = light::read_session(path, None).ok()?;
    let light = light.filter(|l| l.id == rows[i].entry.id)?;
    let meta = metas.get(&light.id).cloned().or_else(|| one_meta(meta_dir, &light.id));
    Some((session_row(path, stamp, &light, meta.as_ref()).entry, rule))
}

/// The meta file of session `id`, unless it leads out of the meta directory.
fn one_meta(meta_dir: &Path, id: &str) -> Option<MetaLight> {
    let path = crate::meta::meta_path(meta_dir, id).ok()?;
    let inside = std::fs::canonicalize(&path).ok()?.starts_with(std::fs::canonicalize(meta_dir).ok()?);
    scan::read_meta(&path).filter(|_| inside)?.1.filter(|m| m.session_id == id)
}

/// The valid meta files in the meta directory, by session id.
fn read_metas(meta_dir: &Path) -> HashMap<String, MetaLight> {
    let Ok(canon) = std::fs::canonicalize(meta_dir) else { return HashMap::new() };
    let files: Vec<PathBuf> = scan::list_dir(meta_dir, &canon, META_SUFFIX)
        .0
        .into_iter()
        .filter_map(|l| match l {
            Listed::File(p, _) => Some(p),
            Listed::Dir(_) => None,
        })
        .collect();
    let metas = parallel(&files, |p| scan::read_meta(p).and_then(|(_, m)| m));
    metas.into_iter().flatten().flatten().map(|m| (m.session_id.clone(), m)).collect()
}
