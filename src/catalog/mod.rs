//! In-memory catalog of sessions and meta files, refreshed incrementally by
//! modification time; resolves `id | id prefix | name` references.
//!
//! One [`Catalog`] serves every agent directory it is asked about (tests and
//! hosts may switch); each has its own state behind one `RwLock`, so `&Catalog`
//! works from [`crate::app::App`]. Lookups only ever return sessions listed
//! inside the sessions directory: nothing a user types is used as a path.

mod bound;
mod fields;
mod fuzzy;
mod index;
mod light;
mod matching;
mod quick;
mod root;
mod scan;
mod table;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, PoisonError, RwLock};
use std::time::Duration;

use serde::Serialize;

use crate::error_code::ErrorCode;

pub use index::{loose_slug, slug};
pub use matching::{path_like, MIN_PREFIX};
pub(crate) use scan::content_text;

use matching::Outcome;
use root::{Refresh, Root};

/// A session as the catalog knows it (header, light scan and meta fields).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CatalogEntry {
    pub id: String,
    /// The session file under the sessions directory (for a meta file whose
    /// session is gone: the path the meta file recorded).
    pub path: PathBuf,
    /// pi's `session_info` name, else the meta name.
    pub name: Option<String>,
    pub description: Option<String>,
    pub summary: Option<String>,
    pub tags: Vec<String>,
    pub cwd: String,
    /// Header timestamp (ISO).
    pub created: String,
    /// File modification time, ms since the epoch (0 when the file is missing).
    pub modified_ms: u64,
    /// Header `parentSession`: the path of the session this one came from.
    pub parent_session: Option<String>,
    pub first_message: Option<String>,
    pub has_meta: bool,
}

/// A session offered to the user: for ambiguity errors and completion.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Candidate {
    pub id: String,
    pub name: Option<String>,
    /// Header timestamp (ISO).
    pub created: String,
    pub cwd: String,
    pub modified_ms: u64,
    /// The reference text, unquoted: a slug, an id prefix, or a name with
    /// spaces (which must be quoted when typed; see `insert`).
    pub reference: String,
    /// Exactly what to type after `@@`: `reference`, quoted when it has spaces.
    pub insert: String,
    /// Relevance (higher is better); for completion ordering.
    pub score: f64,
}

impl std::fmt::Display for Candidate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The full id: candidates often share a prefix (UUIDv7 ids start with the time).
        let date: String = self.created.chars().take(10).collect();
        match &self.name {
            Some(n) => write!(f, "{} \"{n}\" {date} {}", self.id, self.cwd),
            None => write!(f, "{} (unnamed) {date} {}", self.id, self.cwd),
        }
    }
}

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ResolveError {
    #[error("no session matches \"{reference}\"{}", did_you_mean(suggestions))]
    NotFound { reference: String, suggestions: Vec<String> },
    #[error("\"{reference}\" matches {} sessions: {}", candidates.len(), list(candidates))]
    Ambiguous { reference: String, candidates: Vec<Candidate> },
    #[error("session {id}: its file is missing ({})", path.display())]
    FileMissing { id: String, path: PathBuf },
    #[error("\"{reference}\" is not a session in the sessions directory")]
    Outside { reference: String },
}

impl ResolveError {
    pub fn code(&self) -> ErrorCode {
        match self {
            ResolveError::NotFound { .. } => ErrorCode::SessionNotFound,
            ResolveError::Ambiguous { .. } => ErrorCode::SessionAmbiguous,
            ResolveError::FileMissing { .. } => ErrorCode::SessionFileMissing,
            ResolveError::Outside { .. } => ErrorCode::SessionOutside,
        }
    }
}

/// Candidates listed in an ambiguity message.
const LISTED: usize = 5;

fn list(c: &[Candidate]) -> String {
    let mut s = c.iter().take(LISTED).map(|c| c.to_string()).collect::<Vec<_>>().join("; ");
    if c.len() > LISTED {
        s.push_str(&format!("; and {} more", c.len() - LISTED));
    }
    s
}

fn did_you_mean(s: &[String]) -> String {
    if s.is_empty() {
        String::new()
    } else {
        format!("; did you mean {}?", s.join(", "))
    }
}

/// An ancestor of a session through `parentSession`.
#[derive(Debug, Clone, PartialEq)]
pub enum Ancestor {
    Found(Box<CatalogEntry>),
    /// The parent is not (or no longer) a session in the sessions directory.
    Missing {
        path: String,
        reason: String,
    },
}

type RootKey = (PathBuf, PathBuf);

type Roots = Arc<RwLock<HashMap<RootKey, Root>>>;

pub struct Catalog {
    roots: Roots,
    fuzzy_threshold: AtomicU64,
}

impl Default for Catalog {
    fn default() -> Self {
        Catalog::new()
    }
}

/// A miss triggers a full sweep (a file may have changed without its
/// directory), but not again within this window.
const MISS_SWEEP_GAP: Duration = Duration::from_secs(5);

impl Catalog {
    pub fn new() -> Self {
        Catalog::with_fuzzy_threshold(crate::config::ReferencesConfig::default().fuzzy_threshold)
    }

    pub fn with_fuzzy_threshold(threshold: f64) -> Self {
        Catalog { roots: Arc::new(RwLock::new(HashMap::new())), fuzzy_threshold: AtomicU64::new(threshold.to_bits()) }
    }

    pub fn fuzzy_threshold(&self) -> f64 {
        f64::from_bits(self.fuzzy_threshold.load(Ordering::Relaxed))
    }

    pub fn set_fuzzy_threshold(&self, threshold: f64) {
        self.fuzzy_threshold.store(threshold.clamp(0.0, 1.0).to_bits(), Ordering::Relaxed);
    }

    /// Run `f` on an up-to-date root. Refreshing needs the write lock; it is
    /// held only as long as the (usually tiny) incremental refresh plus `f`.
    fn with_root<T>(&self, sessions_dir: &Path, meta_dir: &Path, mode: Refresh, f: impl FnOnce(&Root) -> T) -> T {
        with_root(&self.roots, sessions_dir, meta_dir, mode, f)
    }

    fn root_state(&self, sessions_dir: &Path, meta_dir: &Path, check: impl FnOnce(&Root) -> bool) -> bool {
        let roots = self.roots.read().unwrap_or_else(PoisonError::into_inner);
        roots.get(&(sessions_dir.to_path_buf(), meta_dir.to_path_buf())).is_some_and(check)
    }

    /// Add an (unread) root; true when it was not known before.
    fn register(&self, sessions_dir: &Path, meta_dir: &Path) -> bool {
        let key = (sessions_dir.to_path_buf(), meta_dir.to_path_buf());
        if self.roots.read().unwrap_or_else(PoisonError::into_inner).contains_key(&key) {
            return false;
        }
        let mut roots = self.roots.write().unwrap_or_else(PoisonError::into_inner);
        if roots.contains_key(&key) {
            return false;
        }
        roots.insert(key, Root::new(sessions_dir, meta_dir));
        true
    }

    /// True once the agent directory has been fully read.
    pub fn is_warm(&self, sessions_dir: &Path, meta_dir: &Path) -> bool {
        self.root_state(sessions_dir, meta_dir, Root::scanned)
    }

    /// Work that builds (or refreshes) the catalog of an agent directory, for
    /// a background job at session start so the first `@@` finds it warm.
    /// Lookups running meanwhile wait for it rather than scanning twice.
    pub fn prewarm_task(&self, sessions_dir: &Path, meta_dir: &Path) -> impl Fn() + Send + Sync + 'static {
        let roots = Arc::clone(&self.roots);
        let (s, m) = (sessions_dir.to_path_buf(), meta_dir.to_path_buf());
        // The fuzzy table too, so the first fuzzy lookup finds it ready.
        move || {
            with_root(&roots, &s, &m, Refresh::Incremental, |r| {
                let _ = r.index.table();
            })
        }
    }

    /// Number of sessions (and orphan meta files) indexed.
    pub fn len(&self, sessions_dir: &Path, meta_dir: &Path) -> usize {
        self.with_root(sessions_dir, meta_dir, Refresh::Incremental, |r| r.index.len())
    }

    pub fn is_empty(&self, sessions_dir: &Path, meta_dir: &Path) -> bool {
        self.len(sessions_dir, meta_dir) == 0
    }

    /// Resolve a reference (id, id prefix ≥ 6, name, slug or fuzzy text)
    /// typed in project `current_cwd`.
    pub fn resolve(
        &self,
        sessions_dir: &Path,
        meta_dir: &Path,
        current_cwd: &str,
        reference: &str,
    ) -> Result<CatalogEntry, ResolveError> {
        self.resolve_in_session(sessions_dir, meta_dir, current_cwd, None, reference)
    }

    /// As [`Catalog::resolve`], typed in session `current_session` (an id):
    /// a reference that fits it among other sessions means one of the others.
    pub fn resolve_in_session(
        &self,
        sessions_dir: &Path,
        meta_dir: &Path,
        current_cwd: &str,
        current_session: Option<&str>,
        reference: &str,
    ) -> Result<CatalogEntry, ResolveError> {
        let current = current_session.map(str::to_lowercase);
        let threshold = self.fuzzy_threshold();
        // Only for the very first lookup of an agent dir: it registers the
        // root, so the next lookup builds the catalog (if no prewarm did).
        if self.register(sessions_dir, meta_dir) {
            let quick = if quick::id_like(reference) {
                quick::quick_id(sessions_dir, meta_dir, reference)
            } else {
                quick::quick_name(sessions_dir, meta_dir, reference)
            };
            if let Some(entry) = quick {
                return Ok(entry);
            }
        }
        let attempt = |root: &Root| to_result(root, current_cwd, current.as_deref(), reference, threshold);
        let first = self.with_root(sessions_dir, meta_dir, Refresh::Incremental, attempt);
        if first.is_ok() {
            return first;
        }
        // A miss may be a file changed in place, not seen yet: re-stat
        // everything (not more often than MISS_SWEEP_GAP).
        if self.root_state(sessions_dir, meta_dir, |r| r.swept_within(MISS_SWEEP_GAP)) {
            return first;
        }
        self.with_root(sessions_dir, meta_dir, Refresh::Full, attempt)
    }

    /// Candidates for a `@@` prefix, for editor completion.
    pub fn complete(
        &self,
        sessions_dir: &Path,
        meta_dir: &Path,
        current_cwd: &str,
        prefix: &str,
        limit: usize,
    ) -> Vec<Candidate> {
        self.with_root(sessions_dir, meta_dir, Refresh::Incremental, |root| {
            matching::complete(&root.index, current_cwd, prefix, limit)
                .into_iter()
                .filter_map(|(score, slot)| candidate(root, slot, score))
                .collect()
        })
    }

    /// The session whose file is `path` (as listed, or the same file through symlinks).
    pub fn get_by_path(&self, sessions_dir: &Path, meta_dir: &Path, path: &Path) -> Option<CatalogEntry> {
        self.with_root(sessions_dir, meta_dir, Refresh::Incremental, |root| {
            root.slot_for_path(path).and_then(|s| root.index.get(s)).map(|it| it.entry.clone())
        })
    }

    /// Up to `depth` ancestors of `entry` through `parentSession`, nearest
    /// first. A parent that is missing or outside the sessions directory ends
    /// the chain with [`Ancestor::Missing`]; a cycle ends it silently.
    pub fn ancestors(&self, sessions_dir: &Path, meta_dir: &Path, entry: &CatalogEntry, depth: u32) -> Vec<Ancestor> {
        self.with_root(sessions_dir, meta_dir, Refresh::Incremental, |root| {
            let mut out = Vec::new();
            let mut seen = vec![entry.id.clone()];
            let mut next = entry.parent_session.clone();
            while let Some(parent) = next.take() {
                if out.len() >= depth as usize {
                    break;
                }
                let found = root.slot_for_path(Path::new(&parent)).and_then(|s| root.index.get(s));
                match found {
                    Some(it) if seen.contains(&it.entry.id) => break,
                    Some(it) => {
                        seen.push(it.entry.id.clone());
                        next = it.entry.parent_session.clone();
                        out.push(Ancestor::Found(Box::new(it.entry.clone())));
                    }
                    None => {
                        let reason = if Path::new(&parent).exists() {
                            "not a session in the sessions directory"
                        } else {
                            "parent session file not found"
                        };
                        out.push(Ancestor::Missing { path: parent, reason: reason.into() });
                    }
                }
            }
            out
        })
    }
}

fn with_root<T>(roots: &Roots, sessions_dir: &Path, meta_dir: &Path, mode: Refresh, f: impl FnOnce(&Root) -> T) -> T {
    let mut roots = roots.write().unwrap_or_else(PoisonError::into_inner);
    let root = roots
        .entry((sessions_dir.to_path_buf(), meta_dir.to_path_buf()))
        .or_insert_with(|| Root::new(sessions_dir, meta_dir));
    root.refresh(mode);
    f(root)
}

fn to_result(
    root: &Root,
    cwd: &str,
    current: Option<&str>,
    reference: &str,
    threshold: f64,
) -> Result<CatalogEntry, ResolveError> {
    let reference_owned = || reference.trim().to_string();
    match matching::resolve(&root.index, cwd, current, reference, threshold) {
        Outcome::Found(slot) => {
            let Some(it) = root.index.get(slot) else {
                return Err(ResolveError::NotFound { reference: reference_owned(), suggestions: Vec::new() });
            };
            // The file may have gone since the last refresh.
            if it.missing() || !it.entry.path.is_file() {
                return Err(ResolveError::FileMissing { id: it.entry.id.clone(), path: it.entry.path.clone() });
            }
            Ok(it.entry.clone())
        }
        Outcome::Ambiguous(slots) => Err(ResolveError::Ambiguous {
            reference: reference_owned(),
            candidates: slots.into_iter().take(matching::CANDIDATES).filter_map(|s| candidate(root, s, 0.0)).collect(),
        }),
        Outcome::NotFound(slots) => Err(ResolveError::NotFound {
            reference: reference_owned(),
            suggestions: slots.into_iter().filter_map(|s| root.index.get(s)).map(|it| suggestion(&it.entry)).collect(),
        }),
        Outcome::Outside => Err(ResolveError::Outside { reference: reference_owned() }),
    }
}

fn suggestion(e: &CatalogEntry) -> String {
    let short: String = e.id.chars().take(8).collect();
    match &e.name {
        Some(n) => format!("\"{n}\" ({short})"),
        None => short,
    }
}

fn candidate(root: &Root, slot: usize, score: f64) -> Option<Candidate> {
    let it = root.index.get(slot)?;
    let e = &it.entry;
    let reference = reference_for(root, slot);
    Some(Candidate {
        id: e.id.clone(),
        name: e.name.clone(),
        created: e.created.clone(),
        cwd: e.cwd.clone(),
        modified_ms: e.modified_ms,
        insert: quote_if_needed(&reference),
        reference,
        score,
    })
}

fn collapse_ws(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

fn quote_if_needed(reference: &str) -> String {
    if reference.contains(char::is_whitespace) {
        format!("\"{reference}\"")
    } else {
        reference.to_string()
    }
}

/// The shortest unambiguous way to type a session: its slug when that
/// resolves back to it alone, a quoted name, else an id prefix.
fn reference_for(root: &Root, slot: usize) -> String {
    let Some(it) = root.index.get(slot) else { return String::new() };
    let unique = |slots: Option<&Vec<usize>>| slots.is_some_and(|v| v.len() == 1 && v[0] == slot);
    if let Some(name) = it.entry.name.as_deref() {
        let s = slug(name);
        let plain = !s.is_empty()
            && !s.ends_with('.')
            && s.chars().all(|c| c.is_alphanumeric() || matches!(c, '-' | '_' | '.'));
        // A slug that reads as an id or id prefix would resolve to that id first.
        let clash = root.index.by_id.contains_key(&s)
            || (s.chars().count() >= MIN_PREFIX && !root.index.id_prefix(&s).is_empty());
        if plain && !clash && (unique(root.index.by_slug.get(&s)) || unique(root.index.by_name.get(&s))) {
            return s;
        }
        // Quoting is only needed (and only offered) for names with spaces;
        // other punctuation in an unquoted name would end the reference early.
        let quotable = !name.contains('"') && name.trim().contains(char::is_whitespace);
        if quotable && unique(root.index.by_name.get(&collapse_ws(&name.to_lowercase()))) {
            return collapse_ws(name);
        }
    }
    let id = &it.id_lower;
    for n in [8, 12, 16] {
        let p: String = id.chars().take(n).collect();
        if p.chars().count() >= MIN_PREFIX && p.len() < id.len() && root.index.id_prefix(&p).len() == 1 {
            return p;
        }
    }
    it.entry.id.clone()
}
