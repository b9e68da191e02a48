//! One agent directory's catalog state and its incremental refresh.
//!
//! A refresh re-stats directories (a new, removed or atomically replaced file
//! changes its directory's mtime) plus the few most recently modified session
//! files (the ones being appended to), and re-reads only files whose
//! (mtime, size) changed. A full stat sweep of every file runs at most every
//! [`FULL_SWEEP_EVERY`] or when a lookup misses.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime};

use super::index::{Index, Item, ItemKey};
use super::scan::{self, Light, Listed, MetaLight, Stamp};
use super::CatalogEntry;

pub(crate) const FULL_SWEEP_EVERY: Duration = Duration::from_secs(15);
/// Session files re-stat'd on every refresh: the most recently modified ones.
const HOT_FILES: usize = 16;
/// Project directories nest one level in pi; a little slack, but bounded.
const MAX_DEPTH: usize = 3;
const META_SUFFIX: &str = ".meta.json";

struct DirState {
    mtime: SystemTime,
    files: Vec<PathBuf>,
    dirs: Vec<PathBuf>,
}

struct SessionRec {
    stamp: Stamp,
    light: Option<Light>,
}

struct MetaRec {
    stamp: Stamp,
    meta: Option<MetaLight>,
}

pub(crate) struct Root {
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
    pub index: Index,
    last_full: Option<Instant>,
}

impl Root {
    pub fn new(sessions_dir: &Path, meta_dir: &Path) -> Root {
        Root {
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
            index: Index::default(),
            last_full: None,
        }
    }

    /// True when a full sweep ran less than `within` ago.
    pub fn swept_within(&self, within: Duration) -> bool {
        self.last_full.is_some_and(|t| t.elapsed() < within)
    }

    /// Bring the catalog up to date. `full` re-stats every file.
    pub fn refresh(&mut self, full: bool) {
        let full = full || !self.swept_within(FULL_SWEEP_EVERY);
        if full {
            self.last_full = Some(Instant::now());
        }
        let mut changed_ids: HashSet<String> = HashSet::new();
        self.refresh_metas(full, &mut changed_ids);
        self.refresh_sessions(full, &mut changed_ids);
        if !changed_ids.is_empty() {
            self.reconcile(&changed_ids);
        }
    }

    fn refresh_sessions(&mut self, full: bool, changed: &mut HashSet<String>) {
        let root = self.sessions_dir.clone();
        let canon_now =
            if full || self.canon.is_none() { std::fs::canonicalize(&root).ok() } else { self.canon.clone() };
        if canon_now != self.canon {
            // The sessions directory appeared, vanished or moved: start over.
            self.canon = canon_now;
            self.dirs.clear();
            let paths: Vec<PathBuf> = self.sessions.keys().cloned().collect();
            for p in paths {
                self.drop_session(&p, changed);
            }
        }
        let Some(canon) = self.canon.clone() else { return };
        let mut seen_files: Vec<PathBuf> = Vec::new();
        let mut removed_files: Vec<PathBuf> = Vec::new();
        self.walk(&root, &canon, 0, full, &mut seen_files, &mut removed_files);
        for p in removed_files {
            self.drop_session(&p, changed);
        }
        // Files in changed (or, on a full sweep, all) directories, plus the hot ones.
        let mut to_check = seen_files;
        to_check.extend(self.hot.iter().cloned());
        to_check.sort();
        to_check.dedup();
        let mut touched = false;
        for p in to_check {
            touched |= self.check_session(&p, changed);
        }
        if touched || self.hot.is_empty() {
            self.recompute_hot();
        }
    }

    /// Walk one directory. Unchanged directories are trusted for their file
    /// list (only their subdirectories are visited); changed ones are re-listed.
    fn walk(
        &mut self,
        dir: &Path,
        canon: &Path,
        depth: usize,
        full: bool,
        check: &mut Vec<PathBuf>,
        removed: &mut Vec<PathBuf>,
    ) {
        let mtime = std::fs::metadata(dir).and_then(|m| m.modified()).ok();
        let Some(mtime) = mtime else {
            self.forget_dir(dir, removed);
            return;
        };
        let unchanged = self.dirs.get(dir).is_some_and(|d| d.mtime == mtime);
        if unchanged {
            let (files, dirs) = match self.dirs.get(dir) {
                Some(d) => (if full { d.files.clone() } else { Vec::new() }, d.dirs.clone()),
                None => (Vec::new(), Vec::new()),
            };
            check.extend(files);
            if depth < MAX_DEPTH {
                for sub in dirs {
                    self.walk(&sub, canon, depth + 1, full, check, removed);
                }
            }
            return;
        }
        let (listed, _) = scan::list_dir(dir, canon, ".jsonl");
        let mut files = Vec::new();
        let mut dirs = Vec::new();
        for l in listed {
            match l {
                Listed::File(p) => files.push(p),
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
        check.extend(files.iter().cloned());
        self.dirs.insert(dir.to_path_buf(), DirState { mtime, files, dirs: dirs.clone() });
        if depth < MAX_DEPTH {
            for sub in dirs {
                self.walk(&sub, canon, depth + 1, full, check, removed);
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

    /// Re-read one session file if its stamp changed. Returns true when it did.
    fn check_session(&mut self, path: &Path, changed: &mut HashSet<String>) -> bool {
        let md = match std::fs::metadata(path) {
            Ok(md) if md.is_file() => md,
            _ => {
                let existed = self.sessions.contains_key(path);
                self.drop_session(path, changed);
                return existed;
            }
        };
        let stamp = Stamp::of(&md);
        let prev = self.sessions.get(path);
        if prev.is_some_and(|r| r.stamp == stamp) {
            return false;
        }
        let prev_light = prev.and_then(|r| r.light.clone());
        let light = match scan::read_session(path, prev_light.as_ref(), stamp.len) {
            Ok(l) => l,
            Err(e) => {
                tracing::debug!("cannot read session {}: {e}", path.display());
                None
            }
        };
        if let Some(old) = prev_light.as_ref() {
            changed.insert(old.id.clone());
        }
        match light.as_ref() {
            Some(l) => {
                changed.insert(l.id.clone());
            }
            None => {
                self.index.remove(&ItemKey::Session(path.to_path_buf()));
            }
        }
        self.sessions.insert(path.to_path_buf(), SessionRec { stamp, light });
        true
    }

    fn drop_session(&mut self, path: &Path, changed: &mut HashSet<String>) {
        if let Some(rec) = self.sessions.remove(path) {
            if let Some(l) = rec.light {
                changed.insert(l.id);
            }
        }
        self.index.remove(&ItemKey::Session(path.to_path_buf()));
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

    fn refresh_metas(&mut self, full: bool, changed: &mut HashSet<String>) {
        let dir = self.meta_dir.clone();
        let mtime = std::fs::metadata(&dir).and_then(|m| m.modified()).ok();
        if mtime.is_none() {
            if !self.metas.is_empty() {
                let paths: Vec<PathBuf> = self.metas.keys().cloned().collect();
                for p in paths {
                    self.drop_meta(&p, changed);
                }
            }
            self.meta_dir_mtime = None;
            self.canon_meta = None;
            return;
        }
        if !full && mtime == self.meta_dir_mtime {
            return;
        }
        self.meta_dir_mtime = mtime;
        if full || self.canon_meta.is_none() {
            self.canon_meta = std::fs::canonicalize(&dir).ok();
        }
        let Some(canon) = self.canon_meta.clone() else { return };
        let (listed, ok) = scan::list_dir(&dir, &canon, META_SUFFIX);
        if !ok {
            return;
        }
        let files: HashSet<PathBuf> = listed
            .into_iter()
            .filter_map(|l| match l {
                Listed::File(p) => Some(p),
                Listed::Dir(_) => None,
            })
            .collect();
        let gone: Vec<PathBuf> = self.metas.keys().filter(|p| !files.contains(*p)).cloned().collect();
        for p in gone {
            self.drop_meta(&p, changed);
        }
        for p in files {
            let Ok(md) = std::fs::metadata(&p) else { continue };
            let stamp = Stamp::of(&md);
            if self.metas.get(&p).is_some_and(|r| r.stamp == stamp) {
                continue;
            }
            self.drop_meta(&p, changed);
            let meta = scan::read_meta(&p);
            if let Some(m) = meta.as_ref() {
                changed.insert(m.session_id.clone());
                self.meta_by_id.insert(m.session_id.clone(), p.clone());
            }
            self.metas.insert(p, MetaRec { stamp, meta });
        }
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
                items.push(session_item(p, rec.stamp, light, meta));
            }
            match meta {
                Some(m) if paths.is_empty() => items.push(orphan_item(&self.sessions_dir, m)),
                _ => orphans_gone.push(ItemKey::Orphan(id.clone())),
            }
        }
        for key in orphans_gone {
            self.index.remove(&key);
        }
        for item in items {
            self.index.upsert(item);
        }
    }

    /// The item of a session file, looked up by the path as listed or, for
    /// paths spelled differently (symlinked agent dir), by canonical path.
    pub fn slot_for_path(&self, path: &Path) -> Option<usize> {
        if let Some(s) = self.index.slot_of(&ItemKey::Session(path.to_path_buf())) {
            return Some(s);
        }
        let canon = self.canon.as_ref()?;
        let real = std::fs::canonicalize(path).ok()?;
        let rel = real.strip_prefix(canon).ok()?;
        self.index.slot_of(&ItemKey::Session(self.sessions_dir.join(rel)))
    }
}

fn session_item(path: &Path, stamp: Stamp, light: &Light, meta: Option<&MetaLight>) -> Item {
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
    Item::new(ItemKey::Session(path.to_path_buf()), entry, meta.map(|m| m.name.as_str()))
}

fn orphan_item(sessions_dir: &Path, m: &MetaLight) -> Item {
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
    Item::new(ItemKey::Orphan(m.session_id.clone()), entry, None)
}
