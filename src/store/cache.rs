//! Where the resolver's rows come from: the search index's `sessions` table,
//! the one store of what the plugin knows about sessions (resolution,
//! completion, `/sessions` and search all read it).
//!
//! The rows are kept in memory and reloaded only when the index changed
//! (`PRAGMA data_version` on a kept connection): reading 10,000 rows from
//! SQLite took 31-45 ms, more than a warm lookup may take. When a lookup
//! sees a file changed since the process first read the index (by the
//! directories' times, as the search's quick stamp compares them, see
//! `update/quick.rs`'s `DirTimes`, and by the modification times of the
//! few sessions being written), and on a miss (not more often than [`MISS_GAP`]), the index is
//! brought up to date for at most [`UPDATE_BUDGET`]; the background refresh
//! at `session_start` and after `agent_end` does the rest.
//!
//! What the store does not hold is looked up in the files by [`cold_lookup`]:
//! a session not stored yet (the first build is under way), one that
//! `privacy.exclude` keeps out of the store (found, then refused by the
//! [`Gate`], so the caller can say why), and a meta file whose session file
//! is gone.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime};

use super::{DirTimes, Gate, Refusal, SessionRecord, Store, HOT_FILES};
use crate::config::PrivacyConfig;
use crate::resolve::keys::Row;
use crate::resolve::rules::{id_like, resolve, Outcome, Query, Rule};
use crate::store::meta::SessionMeta;

/// A miss brings the index up to date, but not again within this window.
pub(crate) const MISS_GAP: Duration = Duration::from_secs(1);
/// The longest a lookup spends updating the index (then it answers with
/// what is there, and from the files).
const UPDATE_BUDGET: Duration = Duration::from_secs(1);

/// One agent directory's rows, as the index holds them.
#[derive(Default)]
pub(crate) struct Cache {
    sessions_dir: PathBuf,
    meta_dir: PathBuf,
    privacy: PrivacyConfig,
    /// What may leave: the store's records pass it, and so must what a
    /// lookup finds in the files.
    pub gate: Gate,
    /// Kept open: `data_version` tells whether another connection wrote.
    index: Option<Store>,
    /// `data_version` when the rows were loaded.
    version: Option<i64>,
    pub rows: Vec<Row>,
    /// When this store last updated the index.
    updated: Option<Instant>,
    /// True once an update found every session indexed.
    pub complete: bool,
    /// What a lookup compares, as of the last update ([`Cache::stamps`]).
    stamps: Option<Stamps>,
}

/// What a lookup compares to know that no session or meta file changed
/// since the last update: the directories' times (a new, removed or
/// replaced file: meta files are replaced whole) and the modification
/// times of the [`HOT_FILES`] newest sessions (an append: a `/name` shows
/// at once).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Stamps {
    dirs: DirTimes,
    hot: Vec<Option<SystemTime>>,
}

impl Cache {
    pub fn new(sessions_dir: &Path, meta_dir: &Path, privacy: &PrivacyConfig) -> Cache {
        let (sessions_dir, meta_dir) = (sessions_dir.to_path_buf(), meta_dir.to_path_buf());
        Cache {
            gate: Gate::new(&sessions_dir, privacy),
            sessions_dir,
            meta_dir,
            privacy: privacy.clone(),
            ..Cache::default()
        }
    }

    /// An index connection of the agent directory (the index lives beside
    /// the sessions directory), keeping `privacy`'s sessions out.
    pub fn open(&self) -> Option<Store> {
        match Store::open(self.sessions_dir.parent().unwrap_or(&self.sessions_dir)) {
            Ok(store) => Some(store.excluding(&self.privacy)),
            Err(e) => {
                tracing::warn!("session catalog: {e}");
                None
            }
        }
    }

    /// Update the index (within the budget) unless this store did so less
    /// than `within` ago, then reload the rows if the index changed.
    pub fn refresh(&mut self, within: Duration) {
        self.reload();
        if self.updated.is_none_or(|t| t.elapsed() >= within) {
            self.stamps = Some(self.stamps());
            let Some(index) = self.index.as_mut() else {
                return;
            };
            match index.update(&self.sessions_dir, &self.meta_dir, Some(UPDATE_BUDGET)) {
                Ok(report) => {
                    self.complete = report.stale == 0;
                    if report.updated + report.removed > 0 {
                        // Our own commits do not move our `data_version`.
                        self.version = None;
                    }
                }
                Err(e) => tracing::warn!("session catalog: {e}"),
            }
            self.updated = Some(Instant::now());
        }
        self.reload();
    }

    /// True when this store updated the index less than `within` ago.
    pub fn refreshed_within(&self, within: Duration) -> bool {
        self.updated.is_some_and(|t| t.elapsed() < within)
    }

    /// The [`Stamps`] of the sessions directory, its project directories,
    /// the meta directory and the [`HOT_FILES`] newest sessions, now.
    pub fn stamps(&self) -> Stamps {
        let mut dirs = vec![self.sessions_dir.clone(), self.meta_dir.clone()];
        if let Ok(listing) = std::fs::read_dir(&self.sessions_dir) {
            dirs.extend(listing.flatten().map(|e| e.path()));
        }
        dirs.sort();
        let mtime = |p: &Path| std::fs::metadata(p).and_then(|m| m.modified()).ok();
        let hot = self.rows.iter().take(HOT_FILES);
        Stamps {
            dirs: DirTimes::of(dirs.iter().map(PathBuf::as_path)),
            hot: hot.map(|r| mtime(&r.entry.path)).collect(),
        }
    }

    /// After a full update through another connection (the background
    /// refresh) that started when the files had `stamps`: every session is
    /// indexed, and the rows are reloaded.
    pub fn built(&mut self, stamps: Stamps) {
        self.complete = true;
        self.updated = Some(Instant::now());
        self.reload();
        self.stamps = Some(stamps);
    }

    /// Before answering from the rows: bring them up to date if a file
    /// changed since the last update. A process's first lookup trusts an
    /// index that holds sessions (every pi process updates it at
    /// `session_start` and after `agent_end`): updating it first took ~150
    /// ms of a 300 ms cold lookup at 10,000 sessions. A miss still updates it.
    pub fn fresh(&mut self) {
        self.reload();
        let now = self.stamps();
        match &self.stamps {
            None if !self.rows.is_empty() => self.stamps = Some(now),
            Some(was) if *was == now => {}
            _ => self.refresh(Duration::ZERO),
        }
    }

    /// Reload the rows if another connection (or this store) changed the
    /// index (the first time: open it).
    pub fn reload(&mut self) {
        if self.index.is_none() {
            self.index = self.open();
        }
        let Some(index) = &self.index else { return };
        let version = index.data_version().ok();
        if version.is_some() && version == self.version {
            return;
        }
        match index.records() {
            Ok(rows) => {
                self.rows = rows.into_iter().map(row).collect();
                self.version = version;
            }
            Err(e) => tracing::warn!("session catalog: {e}"),
        }
    }

    /// The search rule's ranking: `(session id, relevance in 0..=1)`, best
    /// first, on the index as it is (a reference must resolve fast).
    /// Relevance is `(score / best)^(1/8)`: the resolver's "clearly ahead"
    /// lead of 0.05 then means the best session scores about 1.5 times the next.
    pub fn rank(&self, reference: &str, cwd: &str) -> Vec<(String, f64)> {
        let Some(index) = &self.index else {
            return Vec::new();
        };
        let hits = index.rank_reference(reference, cwd, 5).unwrap_or_default();
        let best = hits.first().map_or(0.0, |h| h.score);
        if best <= 0.0 {
            return Vec::new();
        }
        hits.into_iter()
            .map(|h| (h.session.id, (h.score / best).powf(0.125)))
            .collect()
    }

    /// The ids of the sessions nearest in meaning to a reference's words
    /// ([`Store::near_in_meaning`]), at most `limit`; none without the
    /// index, the model or vectors (a failure is logged: suggestions are
    /// not worth an error).
    pub fn near_in_meaning(&self, reference: &str, limit: usize) -> Vec<String> {
        let Some(index) = &self.index else {
            return Vec::new();
        };
        match index.near_in_meaning(reference, limit) {
            Ok(hits) => hits.into_iter().map(|h| h.session.id).collect(),
            Err(e) => {
                tracing::warn!("suggestions by meaning: {e}");
                Vec::new()
            }
        }
    }

    /// Whether the gate keeps in the session file `path`, which the store
    /// does not hold: inside the sessions directory, of a project (or file)
    /// `privacy.exclude` names.
    pub fn excluded_file(&self, path: &Path) -> bool {
        self.gate.inside(path)
            && crate::session::read_header(path).is_ok_and(|h| self.gate.excludes(&h.cwd, path))
    }

    /// The row of a session file, looked up by the path as listed or, for
    /// paths spelled differently (symlinked agent dir), by canonical path.
    pub fn row_for_path(&self, path: &Path) -> Option<&Row> {
        if let Some(row) = self.rows.iter().find(|r| r.entry.path == path) {
            return Some(row);
        }
        let real = std::fs::canonicalize(path).ok()?;
        let rel = real
            .strip_prefix(std::fs::canonicalize(&self.sessions_dir).ok()?)
            .ok()?;
        let listed = self.sessions_dir.join(rel);
        self.rows.iter().find(|r| r.entry.path == listed)
    }
}

/// A stored record as lookups read it: the parent link and the first
/// message only when they say something.
fn row(s: SessionRecord) -> Row {
    let record = SessionRecord {
        parent_session: s.parent_session.filter(|p| !p.is_empty()),
        first_message: s
            .first_message
            .map(|m| m.trim().to_string())
            .filter(|m| !m.is_empty()),
        ..s
    };
    Row::new(record, false)
}

/// A lookup in the files, for what the index does not hold: the exact rules
/// over one row per session file named the pi way (`<timestamp>_<id>.jsonl`)
/// with its meta file's name, tags and cwd, and one per meta file whose
/// session file is not there (meta files are read only for references that
/// are not id-like; a file not named the pi way, only by its header, tells
/// its id). Answers only with a session found (then read in full and
/// passed through the `gate`: refused ones say why) or a meta file whose
/// session is missing.
pub(crate) fn cold_lookup(
    sessions_dir: &Path,
    meta_dir: &Path,
    gate: &Gate,
    q: &Query,
) -> Option<(Row, Rule)> {
    let id = |path: &Path| -> Option<String> {
        let name = path.file_name()?.to_str()?.strip_suffix(".jsonl")?;
        match name.rsplit_once('_') {
            Some((_, id)) => Some(id.to_string()),
            None => crate::session::read_header(path).ok().map(|h| h.id),
        }
    };
    let files: Vec<(String, PathBuf)> = crate::session::discovery::session_files(sessions_dir)
        .into_iter()
        .filter_map(|p| Some((id(&p)?, p)))
        .collect();
    let all = if id_like(q.reference) {
        Vec::new()
    } else {
        crate::store::meta::read_all(meta_dir)
    };
    let mut metas: HashMap<String, SessionMeta> =
        all.into_iter().map(|m| (m.session_id.clone(), m)).collect();
    let mut rows: Vec<Row> = files
        .iter()
        .map(|(id, path)| {
            let meta = metas.get(id);
            let mut record =
                meta.map_or_else(SessionRecord::default, |m| meta_record(sessions_dir, m));
            (record.id, record.path, record.has_meta) = (id.clone(), path.clone(), meta.is_some());
            Row::new(record, false)
        })
        .collect();
    let listed: std::collections::HashSet<&str> = files.iter().map(|(id, _)| id.as_str()).collect();
    let orphans = metas
        .values()
        .filter(|m| !listed.contains(&m.session_id.as_str()));
    rows.extend(orphans.map(|m| Row::new(meta_record(sessions_dir, m), true)));
    let Outcome::Found(i, rule) = resolve(&rows, q, false) else {
        return None;
    };
    let found = rows.swap_remove(i);
    if found.missing {
        return Some((found, rule));
    }
    let s = crate::session::summarize(&found.entry.path)
        .ok()
        .filter(|s| s.id == found.entry.id)?;
    let meta = metas
        .remove(&s.id)
        .or_else(|| crate::store::meta::read(meta_dir, &s.id).ok().flatten());
    let from_meta = meta
        .as_ref()
        .map(|m| meta_record(sessions_dir, m))
        .unwrap_or_default();
    let record = SessionRecord {
        id: s.id,
        path: found.entry.path,
        name: from_meta.name.clone().or_else(|| s.name.clone()),
        session_name: s.name,
        cwd: s.cwd,
        created: s.created,
        modified_ms: s.modified_ms,
        parent_session: s.parent_session.filter(|p| !p.is_empty()),
        // Shown as the session's title when it has no name: redacted, as the store's.
        first_message: s
            .first_message
            .map(|m| crate::redact::session_text(&m).into_owned()),
        ..from_meta
    };
    let mut row = Row::new(record, false);
    match gate.check(&row.entry) {
        Err(Refusal::Outside) => return None,
        checked => row.refused = checked.err(),
    }
    Some((row, rule))
}

/// A session as its meta file describes it.
fn meta_record(sessions_dir: &Path, m: &SessionMeta) -> SessionRecord {
    let path = if m.session_file.is_empty() {
        sessions_dir.join(&m.session_id)
    } else {
        PathBuf::from(&m.session_file)
    };
    let text = |s: &str| (!s.trim().is_empty()).then(|| s.to_string());
    SessionRecord {
        id: m.session_id.clone(),
        path,
        name: text(&m.name),
        description: text(&m.description),
        tags: m.tags.clone(),
        cwd: m.cwd.clone(),
        created: m.created_at.clone(),
        has_meta: true,
        ..SessionRecord::default()
    }
}
