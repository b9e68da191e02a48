//! Where the resolver's rows come from today: one agent directory's session
//! and meta files, read once and then refreshed incrementally. (Once the
//! search index's `sessions` table holds the same rows, it replaces this.)
//!
//! A refresh re-stats the directories (a new, removed or atomically replaced
//! file changes its directory's mtime), re-lists the changed ones, stats
//! their files and the few most recently modified session files (the ones
//! being appended to), and re-reads only files whose (mtime, size) changed.
//! A lookup that misses re-stats everything (`Refresh::Full`). Files are read
//! on a few threads when there are many (the first build).
//!
//! Before the first build has finished, [`cold_lookup`] resolves ids from
//! pi's file names and exact names from meta files.

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

/// A directory as last listed.
struct Listing {
    mtime: SystemTime,
    files: Vec<PathBuf>,
    dirs: Vec<PathBuf>,
}

/// One tree of files (session files, or meta files): its listings and what
/// was read from each file.
struct Tree<T> {
    root: PathBuf,
    suffix: &'static str,
    depth: usize,
    /// Canonical root; `None` while it does not exist.
    canon: Option<PathBuf>,
    dirs: HashMap<PathBuf, Listing>,
    files: HashMap<PathBuf, (Stamp, Option<T>)>,
}

impl<T> Tree<T> {
    fn new(root: &Path, suffix: &'static str, depth: usize) -> Tree<T> {
        let root = root.to_path_buf();
        Tree { root, suffix, depth, canon: None, dirs: HashMap::new(), files: HashMap::new() }
    }

    /// The files to stat (in re-listed directories, plus all on a full
    /// refresh) and the files gone.
    fn list(&mut self, full: bool) -> (Vec<PathBuf>, Vec<PathBuf>) {
        if full || self.canon.is_none() {
            let canon = std::fs::canonicalize(&self.root).ok();
            if canon != self.canon {
                // Appeared, vanished or moved: start over.
                self.dirs.clear();
            }
            self.canon = canon;
        }
        let (mut check, mut gone) = (Vec::new(), Vec::new());
        match self.canon.clone() {
            Some(canon) => self.walk(&self.root.clone(), &canon, 0, &mut check, &mut gone),
            None => gone.extend(self.files.keys().cloned()),
        }
        if full {
            check.extend(self.files.keys().cloned());
        }
        (check, gone)
    }

    /// Unchanged directories are trusted for their file list (only their
    /// subdirectories are visited); changed ones are re-listed.
    fn walk(&mut self, dir: &Path, canon: &Path, depth: usize, check: &mut Vec<PathBuf>, gone: &mut Vec<PathBuf>) {
        let Ok(mtime) = std::fs::metadata(dir).and_then(|m| m.modified()) else {
            self.forget(dir, gone);
            return;
        };
        let subdirs = match self.dirs.get(dir) {
            Some(l) if l.mtime == mtime => l.dirs.clone(),
            _ => {
                let (listed, ok) = scan::list_dir(dir, canon, self.suffix);
                if !ok {
                    return; // Unreadable now: listed again next time.
                }
                let (mut files, mut dirs) = (Vec::new(), Vec::new());
                for l in listed {
                    match l {
                        Listed::File(p) => files.push(p),
                        Listed::Dir(p) if depth < self.depth => dirs.push(p),
                        Listed::Dir(_) => {}
                    }
                }
                if let Some(old) = self.dirs.remove(dir) {
                    gone.extend(old.files.into_iter().filter(|f| !files.contains(f)));
                    for d in old.dirs.iter().filter(|d| !dirs.contains(d)) {
                        self.forget(d, gone);
                    }
                }
                check.extend(files.iter().cloned());
                self.dirs.insert(dir.to_path_buf(), Listing { mtime, files, dirs: dirs.clone() });
                dirs
            }
        };
        for sub in subdirs {
            self.walk(&sub, canon, depth + 1, check, gone);
        }
    }

    fn forget(&mut self, dir: &Path, gone: &mut Vec<PathBuf>) {
        if let Some(old) = self.dirs.remove(dir) {
            gone.extend(old.files);
            for d in old.dirs {
                self.forget(&d, gone);
            }
        }
    }
}

pub(crate) struct Source {
    pub sessions_dir: PathBuf,
    sessions: Tree<Light>,
    metas: Tree<MetaLight>,
    hot: Vec<PathBuf>,
    pub rows: Rows,
    last_full: Option<Instant>,
}

impl Source {
    pub fn new(sessions_dir: &Path, meta_dir: &Path) -> Source {
        Source {
            sessions_dir: sessions_dir.to_path_buf(),
            sessions: Tree::new(sessions_dir, ".jsonl", MAX_DEPTH),
            metas: Tree::new(meta_dir, META_SUFFIX, 0),
            hot: Vec::new(),
            rows: Rows::default(),
            last_full: None,
        }
    }

    /// True when a full sweep ran less than `within` ago.
    pub fn swept_within(&self, within: Duration) -> bool {
        self.last_full.is_some_and(|t| t.elapsed() < within)
    }

    /// Bring the rows up to date (the first refresh reads everything).
    pub fn refresh(&mut self, mode: Refresh) {
        let full = mode == Refresh::Full || self.last_full.is_none();
        if full {
            self.last_full = Some(Instant::now());
        }
        // Session ids whose rows must be rebuilt.
        let mut changed: HashSet<String> = HashSet::new();
        let id = |l: &Light| l.id.clone();
        let (mut check, gone) = self.sessions.list(full);
        check.extend(self.hot.iter().filter(|p| self.sessions.files.contains_key(*p)).cloned());
        for p in &gone {
            self.rows.remove(&RowKey::Session(p.clone()));
        }
        let sessions = stale(&mut self.sessions, check, gone, &mut changed, id);
        let read = parallel(&sessions, |(p, prev)| light::read_session(p, prev.as_ref()).ok());
        let touched = !sessions.is_empty();
        for ((path, _), got) in sessions.into_iter().zip(read) {
            // Unreadable, or no longer a session: its row goes (a new one is built below).
            self.rows.remove(&RowKey::Session(path.clone()));
            if let Some((stamp, light)) = got.flatten() {
                changed.extend(light.as_ref().map(id));
                self.sessions.files.insert(path, (stamp, light));
            }
        }
        let (check, gone) = self.metas.list(full);
        let session_id = |m: &MetaLight| m.session_id.clone();
        let metas = stale(&mut self.metas, check, gone, &mut changed, session_id);
        let read = parallel(&metas, |(p, _)| scan::read_meta(p));
        for ((path, _), got) in metas.into_iter().zip(read) {
            if let Some((stamp, meta)) = got.flatten() {
                changed.extend(meta.as_ref().map(session_id));
                self.metas.files.insert(path, (stamp, meta));
            }
        }
        if !changed.is_empty() {
            self.reconcile(&changed);
        }
        if touched {
            let mut all: Vec<(SystemTime, &PathBuf)> =
                self.sessions.files.iter().map(|(p, (s, _))| (s.mtime, p)).collect();
            all.sort_unstable_by_key(|a| std::cmp::Reverse(a.0));
            self.hot = all.into_iter().take(HOT_FILES).map(|(_, p)| p.clone()).collect();
        }
    }

    /// Rebuild the rows of every session id whose session or meta changed.
    fn reconcile(&mut self, ids: &HashSet<String>) {
        let mut paths: HashMap<&str, Vec<(&PathBuf, Stamp, &Light)>> = HashMap::new();
        for (p, (stamp, light)) in &self.sessions.files {
            if let Some(l) = light.as_ref().filter(|l| ids.contains(&l.id)) {
                paths.entry(l.id.as_str()).or_default().push((p, *stamp, l));
            }
        }
        let metas: HashMap<&str, &MetaLight> =
            self.metas.files.values().filter_map(|(_, m)| m.as_ref()).map(|m| (m.session_id.as_str(), m)).collect();
        let mut rows = Vec::new();
        for id in ids {
            let meta = metas.get(id.as_str()).copied();
            let files = paths.remove(id.as_str()).unwrap_or_default();
            match meta {
                Some(m) if files.is_empty() => rows.push(orphan_row(&self.sessions_dir, m)),
                _ => self.rows.remove(&RowKey::Orphan(id.clone())),
            }
            rows.extend(files.into_iter().map(|(p, stamp, light)| session_row(p, stamp, light, meta)));
        }
        for row in rows {
            self.rows.upsert(row);
        }
    }

    /// The row of a session file, looked up by the path as listed or, for
    /// paths spelled differently (symlinked agent dir), by canonical path.
    pub fn row_for_path(&self, path: &Path) -> Option<&Row> {
        if let Some(row) = self.rows.get(&RowKey::Session(path.to_path_buf())) {
            return Some(row);
        }
        let real = std::fs::canonicalize(path).ok()?;
        let rel = real.strip_prefix(self.sessions.canon.as_ref()?).ok()?;
        self.rows.get(&RowKey::Session(self.sessions_dir.join(rel)))
    }
}

/// Forget the files `gone` and those of `check` whose (mtime, size) changed
/// (noting their ids in `changed`); returns the files to read, each with
/// what was read of it before.
fn stale<T>(
    tree: &mut Tree<T>,
    check: Vec<PathBuf>,
    gone: Vec<PathBuf>,
    changed: &mut HashSet<String>,
    id: impl Fn(&T) -> String,
) -> Vec<(PathBuf, Option<T>)> {
    for p in gone {
        if let Some((_, Some(old))) = tree.files.remove(&p) {
            changed.insert(id(&old));
        }
    }
    let mut seen = HashSet::new();
    let mut out = Vec::new();
    for p in check {
        let known = tree.files.get(&p).map(|(s, _)| *s);
        let now = std::fs::metadata(&p).ok().map(|md| Stamp::of(&md));
        if !seen.insert(p.clone()) || (known.is_some() && known == now) {
            continue;
        }
        let old = tree.files.remove(&p).and_then(|(_, t)| t);
        changed.extend(old.as_ref().map(&id));
        out.push((p, old));
    }
    out
}

fn session_row(path: &Path, stamp: Stamp, light: &Light, meta: Option<&MetaLight>) -> Row {
    let from_meta = meta.map(|m| meta_entry(Path::new(""), m)).unwrap_or_default();
    let entry = CatalogEntry {
        id: light.id.clone(),
        path: path.to_path_buf(),
        name: light.name.clone().or_else(|| from_meta.name.clone()),
        cwd: light.cwd.clone(),
        created: light.created.clone(),
        modified_ms: stamp.modified_ms(),
        parent_session: light.parent_session.clone(),
        first_message: light.first_message.clone(),
        ..from_meta
    };
    Row::new(RowKey::Session(path.to_path_buf()), entry, meta.map(|m| m.name.as_str()))
}

/// A meta file whose session file is not in the sessions directory.
fn orphan_row(sessions_dir: &Path, m: &MetaLight) -> Row {
    Row::new(RowKey::Orphan(m.session_id.clone()), meta_entry(sessions_dir, m), None)
}

/// A session as its meta file describes it.
fn meta_entry(sessions_dir: &Path, m: &MetaLight) -> CatalogEntry {
    let path =
        if m.session_file.is_empty() { sessions_dir.join(&m.session_id) } else { PathBuf::from(&m.session_file) };
    let text = |s: &str| (!s.trim().is_empty()).then(|| s.to_string());
    CatalogEntry {
        id: m.session_id.clone(),
        path,
        name: text(&m.name),
        description: text(&m.description),
        summary: text(&m.summary),
        tags: m.tags.clone(),
        cwd: m.cwd.clone(),
        created: m.created_at.clone(),
        has_meta: true,
        ..CatalogEntry::default()
    }
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
                Listed::File(p) => {
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
            let mut entry = meta.map_or_else(CatalogEntry::default, |m| meta_entry(sessions_dir, m));
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
    let path = regular_files::inside(meta_dir, &crate::meta::meta_path(meta_dir, id).ok()?).ok()?;
    scan::read_meta(&path)?.1.filter(|m| m.session_id == id)
}

/// The valid meta files in the meta directory, by session id.
fn read_metas(meta_dir: &Path) -> HashMap<String, MetaLight> {
    let Ok(canon) = std::fs::canonicalize(meta_dir) else { return HashMap::new() };
    let files: Vec<PathBuf> = scan::list_dir(meta_dir, &canon, META_SUFFIX)
        .0
        .into_iter()
        .filter_map(|l| match l {
            Listed::File(p) => Some(p),
            Listed::Dir(_) => None,
        })
        .collect();
    let metas = parallel(&files, |p| scan::read_meta(p).and_then(|(_, m)| m));
    metas.into_iter().flatten().flatten().map(|m| (m.session_id.clone(), m)).collect()
}
