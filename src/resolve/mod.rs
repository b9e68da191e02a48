//! `@@` references: their syntax ([`syntax`]: finding them in a prompt,
//! removing them from session text) and their resolution to one session.
//!
//! - [`rules`]: the resolver itself, a pure function of the store's records
//!   (with their lookup keys, [`keys`]) and a query: id → id prefix → name →
//!   slug → fuzzy, each rule plainly scanning the records;
//! - this module: the [`Catalog`], which asks the store ([`crate::store::cache`])
//!   for the records of an agent directory, falls back to a lookup in the
//!   files on a miss, adds the store's search ranking as the last rule, and
//!   turns the outcome into what callers show (candidates, suggestions,
//!   errors with codes).
//!
//! One [`Catalog`] serves every agent directory it is asked about (tests and
//! hosts may switch), each behind its own lock, so `&Catalog` works from
//! [`crate::plugin::state::Services`]. Every record it returns has passed the
//! store's gate ([`crate::store::Gate`]): nothing a user types is used as a
//! path, and nothing `privacy.exclude` names is returned.

pub(crate) mod keys;
pub(crate) mod rules;
pub mod syntax;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError, RwLock};

use serde::Serialize;

use crate::config::PrivacyConfig;
use crate::error_code::ErrorCode;
use crate::store::{Gate, SessionRecord};

pub use keys::slug;
pub use rules::Rule;

use crate::store::cache::{cold_lookup, Cache, MISS_GAP};
use keys::Row;
use rules::{id_like, path_like, MatchKind, Outcome, Query, Scored};

/// A session offered to the user: for ambiguity errors and completion.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Candidate {
    pub id: String,
    pub name: Option<String>,
    /// How the session is shown ([`SessionRecord::title`]).
    pub title: String,
    /// Header timestamp (ISO).
    pub created: String,
    /// The day it was last active ([`SessionRecord::active_day`]).
    pub active_day: String,
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
        write!(
            f,
            "{} \"{}\" {} {}",
            self.id, self.title, self.active_day, self.cwd
        )
    }
}

impl Candidate {
    /// `034d1cd7… "Cron in gitclaw"`: how a suggestion names a session.
    pub fn short(&self) -> String {
        format!("{} \"{}\"", short_id(&self.id), self.title)
    }
}

/// A resolved reference: the session and the rule that found it.
#[derive(Debug, Clone, PartialEq)]
pub struct Resolved {
    pub entry: SessionRecord,
    pub rule: Rule,
}

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ResolveError {
    #[error("no session matches \"{reference}\"{}", did_you_mean(suggestions))]
    NotFound {
        reference: String,
        /// Sessions whose names are close, best first.
        suggestions: Vec<Candidate>,
    },
    #[error("\"{reference}\" matches {} sessions: {}", candidates.len(), list(candidates))]
    Ambiguous {
        reference: String,
        candidates: Vec<Candidate>,
    },
    #[error("session {id}: its file is missing ({})", path.display())]
    FileMissing { id: String, path: PathBuf },
    #[error("\"{reference}\" is not a session in the sessions directory")]
    Outside { reference: String },
    #[error("session {id} is excluded by privacy.exclude")]
    Excluded { id: String },
}

impl ResolveError {
    pub fn code(&self) -> ErrorCode {
        match self {
            ResolveError::NotFound { .. } => ErrorCode::SessionNotFound,
            ResolveError::Ambiguous { .. } => ErrorCode::SessionAmbiguous,
            ResolveError::FileMissing { .. } => ErrorCode::SessionFileMissing,
            ResolveError::Outside { .. } => ErrorCode::SessionOutside,
            ResolveError::Excluded { .. } => ErrorCode::SessionExcluded,
        }
    }
}

/// Candidates listed in an ambiguity message.
const LISTED: usize = 5;

fn list(c: &[Candidate]) -> String {
    let mut s = c
        .iter()
        .take(LISTED)
        .map(|c| c.to_string())
        .collect::<Vec<_>>()
        .join("; ");
    if c.len() > LISTED {
        s.push_str(&format!("; and {} more", c.len() - LISTED));
    }
    s
}

fn did_you_mean(s: &[Candidate]) -> String {
    if s.is_empty() {
        String::new()
    } else {
        let names: Vec<String> = s.iter().map(Candidate::short).collect();
        format!("; did you mean {}?", names.join(", "))
    }
}

/// An ancestor of a session through `parentSession`.
#[derive(Debug, Clone, PartialEq)]
pub enum Ancestor {
    Found(Box<SessionRecord>),
    /// The parent is a session `privacy.exclude` names.
    Excluded,
    /// The parent is not (or no longer) a session in the sessions directory.
    Missing {
        path: String,
        reason: String,
    },
}

/// One store per (sessions dir, meta dir).
type Caches = RwLock<HashMap<(PathBuf, PathBuf), Arc<Mutex<Cache>>>>;

pub struct Catalog {
    dirs: Caches,
    /// Lowest fuzzy score that resolves (`references.fuzzyThreshold`).
    fuzzy_threshold: f64,
    /// Sessions the index keeps out (`privacy.exclude`).
    privacy: PrivacyConfig,
    /// The search index's ranking as the last rule (`search.enabled`).
    search: bool,
    /// A miss also offers the sessions nearest in meaning (`search.semantic`).
    semantic: bool,
}

impl Default for Catalog {
    fn default() -> Self {
        Catalog::new()
    }
}

impl Catalog {
    pub fn new() -> Self {
        Catalog::with_fuzzy_threshold(crate::config::ReferencesConfig::default().fuzzy_threshold)
    }

    pub fn with_fuzzy_threshold(threshold: f64) -> Self {
        Catalog {
            dirs: RwLock::new(HashMap::new()),
            fuzzy_threshold: threshold.clamp(0.0, 1.0),
            privacy: PrivacyConfig::default(),
            search: false,
            semantic: false,
        }
    }

    /// Keep the sessions `privacy` excludes out of the index this catalog
    /// updates (they still resolve from their files, so callers can say why
    /// they are refused).
    pub fn excluding(mut self, privacy: &PrivacyConfig) -> Self {
        self.privacy = privacy.clone();
        self
    }

    /// Make the search index's ranking the last resolution rule: a reference
    /// no other rule resolves names the session whose text holds it, when
    /// that session is clearly ahead (the fuzzy rule's lead).
    pub fn with_search(mut self, enabled: bool) -> Self {
        self.search = enabled;
        self
    }

    /// With the search rule on, a reference nothing resolves also offers the
    /// sessions nearest to its words in meaning (after the names close to
    /// it), when the sentence model is installed and passages are embedded.
    /// Offered, never resolved.
    pub fn with_semantic(mut self, enabled: bool) -> Self {
        self.semantic = enabled;
        self
    }

    /// The store of an agent directory (made on first use).
    fn store(&self, sessions_dir: &Path, meta_dir: &Path) -> Arc<Mutex<Cache>> {
        let key = (sessions_dir.to_path_buf(), meta_dir.to_path_buf());
        if let Some(d) = self
            .dirs
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .get(&key)
        {
            return Arc::clone(d);
        }
        let mut all = self.dirs.write().unwrap_or_else(PoisonError::into_inner);
        let new = || {
            Arc::new(Mutex::new(Cache::new(
                sessions_dir,
                meta_dir,
                &self.privacy,
            )))
        };
        Arc::clone(all.entry(key).or_insert_with(new))
    }

    /// Run `f` on the directory's rows, brought up to date if stale.
    fn with_rows<T>(&self, sessions_dir: &Path, meta_dir: &Path, f: impl FnOnce(&Cache) -> T) -> T {
        let store = self.store(sessions_dir, meta_dir);
        let mut store = store.lock().unwrap_or_else(PoisonError::into_inner);
        store.fresh();
        f(&store)
    }

    /// True once an update of the index found every session in it.
    pub fn is_warm(&self, sessions_dir: &Path, meta_dir: &Path) -> bool {
        self.store(sessions_dir, meta_dir)
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .complete
    }

    /// Work that brings the index of an agent directory fully up to date
    /// (the first time: builds it), for a background job at `session_start`
    /// and after `agent_end`. It writes through its own connection, so
    /// lookups meanwhile answer from what is committed (and from the files).
    pub fn refresh_task(
        &self,
        sessions_dir: &Path,
        meta_dir: &Path,
    ) -> impl Fn() + Send + Sync + 'static {
        let store = self.store(sessions_dir, meta_dir);
        let (s, m) = (sessions_dir.to_path_buf(), meta_dir.to_path_buf());
        move || {
            let (index, stamps) = {
                let store = store.lock().unwrap_or_else(PoisonError::into_inner);
                (store.open(), store.stamps())
            };
            let Some(mut index) = index else { return };
            match index.update(&s, &m, None) {
                Ok(report) => {
                    tracing::debug!(?report, "search index refreshed");
                    store
                        .lock()
                        .unwrap_or_else(PoisonError::into_inner)
                        .built(stamps);
                }
                Err(e) => tracing::warn!("search index refresh failed: {e}"),
            }
        }
    }

    /// Number of sessions indexed.
    pub fn len(&self, sessions_dir: &Path, meta_dir: &Path) -> usize {
        self.with_rows(sessions_dir, meta_dir, |s| s.rows.len())
    }

    /// Resolve a reference (id, id prefix ≥ 6, name, slug or fuzzy text)
    /// typed in project `current_cwd`.
    pub fn resolve(
        &self,
        sessions_dir: &Path,
        meta_dir: &Path,
        current_cwd: &str,
        reference: &str,
    ) -> Result<Resolved, ResolveError> {
        self.resolve_in_session(sessions_dir, meta_dir, current_cwd, None, reference)
    }

    /// As [`Catalog::resolve`], typed in session `current_session` (an id),
    /// which is never a fuzzy candidate and, for exact rules, only when no
    /// other session fits.
    pub fn resolve_in_session(
        &self,
        sessions_dir: &Path,
        meta_dir: &Path,
        current_cwd: &str,
        current_session: Option<&str>,
        reference: &str,
    ) -> Result<Resolved, ResolveError> {
        let current = current_session.map(str::to_lowercase);
        let q = Query {
            reference,
            cwd: current_cwd,
            current: current.as_deref(),
            threshold: self.fuzzy_threshold,
        };
        let store = self.store(sessions_dir, meta_dir);
        let mut store = store.lock().unwrap_or_else(PoisonError::into_inner);
        // What the index does not hold (not yet: the first build; or never:
        // privacy.exclude, meta files whose session is gone) may be in the
        // files: an id-like reference costs a directory listing, others read
        // every meta file, only on a miss.
        let in_files = |gate: &Gate| cold_lookup(sessions_dir, meta_dir, gate, &q);
        store.reload();
        if store.rows.is_empty() {
            // The index is not built yet: the files answer ids and exact names at once.
            if let Some((row, rule)) = in_files(&store.gate) {
                return found(&row, rule);
            }
        }
        store.fresh();
        let first = self.outcome(&store, &q);
        if !matches!(first, Err(ResolveError::NotFound { .. })) {
            return first;
        }
        if let Some((row, rule)) = in_files(&store.gate) {
            return found(&row, rule);
        }
        let missed = if store.refreshed_within(MISS_GAP) {
            first
        } else {
            store.refresh(MISS_GAP);
            self.outcome(&store, &q)
        };
        self.with_meaning(missed, &store, &q)
    }

    /// A miss of a reference in words, its suggestions followed by the
    /// sessions nearest to it in meaning (see [`Catalog::with_semantic`]);
    /// any other result as it is.
    fn with_meaning(
        &self,
        result: Result<Resolved, ResolveError>,
        store: &Cache,
        q: &Query,
    ) -> Result<Resolved, ResolveError> {
        let Err(ResolveError::NotFound {
            reference,
            mut suggestions,
        }) = result
        else {
            return result;
        };
        if self.search && self.semantic && in_words(q.reference) {
            let rows = &store.rows;
            let offered = |i: &usize| {
                let id = &rows[*i].entry.id;
                Some(rows[*i].id_lower.as_str()) != q.current
                    && !suggestions.iter().any(|c| &c.id == id)
            };
            let near: Vec<(f64, usize)> = store
                .near_in_meaning(q.reference, rules::CANDIDATES)
                .iter()
                .filter_map(|id| rows.iter().position(|r| &r.entry.id == id))
                .filter(offered)
                .map(|i| (0.0, i))
                .collect();
            suggestions.extend(candidates(rows, &near, None));
            suggestions.truncate(rules::CANDIDATES);
        }
        Err(ResolveError::NotFound {
            reference,
            suggestions,
        })
    }

    fn outcome(&self, store: &Cache, q: &Query) -> Result<Resolved, ResolveError> {
        let rows = &store.rows;
        let mut outcome = rules::resolve(rows, q, true);
        if matches!(outcome, Outcome::NotFound(_)) && self.search && in_words(q.reference) {
            let ranked = store.rank(q.reference.trim(), q.cwd);
            let at = |id: &str| rows.iter().position(|r| r.entry.id == id);
            let scored: Vec<Scored> = ranked
                .iter()
                .filter_map(|(id, score)| {
                    Some(Scored {
                        kind: MatchKind::Text,
                        score: *score,
                        row: at(id)?,
                    })
                })
                .collect();
            if !scored.is_empty() {
                outcome = rules::decide(rows, scored, Rule::Search, q);
            }
        }
        let reference = || q.reference.trim().to_string();
        match outcome {
            Outcome::Found(i, rule) => found(&rows[i], rule),
            Outcome::Ambiguous(hits) => Err(ResolveError::Ambiguous {
                reference: reference(),
                candidates: candidates(
                    rows,
                    &hits
                        .into_iter()
                        .take(rules::CANDIDATES)
                        .map(|i| (0.0, i))
                        .collect::<Vec<_>>(),
                    None,
                ),
            }),
            Outcome::NotFound(near) => Err(ResolveError::NotFound {
                reference: reference(),
                suggestions: candidates(
                    rows,
                    &near.into_iter().map(|i| (0.0, i)).collect::<Vec<_>>(),
                    None,
                ),
            }),
            Outcome::Outside => Err(ResolveError::Outside {
                reference: reference(),
            }),
        }
    }

    /// Candidates for a `@@` prefix, for editor completion, typed in project
    /// `current_cwd` and session `current_session` (offered last).
    pub fn complete(
        &self,
        sessions_dir: &Path,
        meta_dir: &Path,
        current_cwd: &str,
        current_session: Option<&str>,
        prefix: &str,
        limit: usize,
    ) -> Vec<Candidate> {
        let current = current_session.map(str::to_lowercase);
        self.with_rows(sessions_dir, meta_dir, |s| {
            let rows = &s.rows;
            let ranked = rules::complete(rows, current_cwd, current.as_deref(), prefix, limit);
            candidates(rows, &ranked, Some(current_cwd))
        })
    }

    /// Up to `depth` ancestors of `entry` through `parentSession`, nearest
    /// first. A parent that is missing or outside the sessions directory ends
    /// the chain with [`Ancestor::Missing`]; a cycle ends it silently.
    pub fn ancestors(
        &self,
        sessions_dir: &Path,
        meta_dir: &Path,
        entry: &SessionRecord,
        depth: u32,
    ) -> Vec<Ancestor> {
        self.with_rows(sessions_dir, meta_dir, |s| {
            let mut out = Vec::new();
            let mut seen = vec![entry.id.clone()];
            let mut next = entry.parent_session.clone();
            while let Some(parent) = next.take() {
                if out.len() >= depth as usize {
                    break;
                }
                match s
                    .row_for_path(Path::new(&parent))
                    .map(|row| &row.entry)
                    .filter(|e| e.path.is_file())
                {
                    Some(e) if seen.contains(&e.id) => break,
                    Some(e) => {
                        seen.push(e.id.clone());
                        next = e.parent_session.clone();
                        out.push(Ancestor::Found(Box::new(e.clone())));
                    }
                    None if s.excluded_file(Path::new(&parent)) => {
                        out.push(Ancestor::Excluded);
                        break;
                    }
                    None => {
                        let reason = if Path::new(&parent).exists() {
                            "not a session in the sessions directory"
                        } else {
                            "parent session file not found"
                        };
                        out.push(Ancestor::Missing {
                            path: parent,
                            reason: reason.into(),
                        });
                    }
                }
            }
            out
        })
    }
}

/// A reference made of words, not an id or a path: the search rule's (and
/// the suggestions by meaning's) kind.
fn in_words(reference: &str) -> bool {
    !id_like(reference) && !path_like(reference)
}

/// A session found, unless the store's gate keeps it in or its file has
/// gone since the store saw it.
fn found(row: &Row, rule: Rule) -> Result<Resolved, ResolveError> {
    if row.refused.is_some() {
        return Err(ResolveError::Excluded {
            id: row.entry.id.clone(),
        });
    }
    if row.missing || !row.entry.path.is_file() {
        return Err(ResolveError::FileMissing {
            id: row.entry.id.clone(),
            path: row.entry.path.clone(),
        });
    }
    Ok(Resolved {
        entry: row.entry.clone(),
        rule,
    })
}

/// The shortest prefix (8 characters or more) of each id that no other of
/// `ids` shares: what tells them apart in a list, and what to type after `@@`
/// (pi's ids start with the time, so sessions of one day share 8).
pub fn unique_prefixes(ids: &[&str]) -> Vec<String> {
    let mut sorted = ids.to_vec();
    sorted.sort_unstable();
    let common = |a: &str, b: &str| a.chars().zip(b.chars()).take_while(|(x, y)| x == y).count();
    let shortest = |id: &str| {
        let i = sorted.binary_search(&id).unwrap_or(0);
        let near = [i.checked_sub(1), Some(i + 1)]
            .into_iter()
            .flatten()
            .filter_map(|j| sorted.get(j));
        near.map(|other| common(id, other) + 1)
            .max()
            .unwrap_or(0)
            .max(8)
    };
    ids.iter()
        .map(|id| id.chars().take(shortest(id)).collect())
        .collect()
}

/// The first 8 characters of an id, with `…` when there are more.
pub fn short_id(id: &str) -> String {
    match id.char_indices().nth(8) {
        Some((i, _)) => format!("{}…", &id[..i]),
        None => id.to_string(),
    }
}

/// Candidates to offer, in `hits` order; `cwd`: the project they are
/// offered in, for the shortest reference that resolves back to each, else
/// the full id (ambiguities list sessions that share names and prefixes).
fn candidates(rows: &[Row], hits: &[(f64, usize)], cwd: Option<&str>) -> Vec<Candidate> {
    let mut refs: Vec<Option<String>> = hits.iter().map(|_| None).collect();
    if let Some(cwd) = cwd {
        for attempt in 0..5 {
            let asks: Vec<(usize, usize, String)> = hits
                .iter()
                .zip(&refs)
                .enumerate()
                .filter(|(_, (_, done))| done.is_none())
                .filter_map(|(k, ((_, i), _))| Some((k, *i, shortest(&rows[*i].entry, attempt)?)))
                .collect();
            let pairs: Vec<(usize, String)> =
                asks.iter().map(|(_, i, r)| (*i, r.clone())).collect();
            for ((k, _, r), ok) in asks.into_iter().zip(rules::resolve_back(rows, cwd, &pairs)) {
                if ok {
                    refs[k] = Some(r);
                }
            }
        }
    }
    hits.iter()
        .zip(refs)
        .map(|(&(score, i), reference)| {
            let e = &rows[i].entry;
            let reference = reference.unwrap_or_else(|| e.id.clone());
            Candidate {
                id: e.id.clone(),
                name: e.pi_name().map(String::from),
                title: e.title(),
                active_day: e.active_day(),
                created: e.created.clone(),
                cwd: e.cwd.clone(),
                modified_ms: e.modified_ms,
                insert: if reference.contains(' ') {
                    format!("\"{reference}\"")
                } else {
                    reference.clone()
                },
                reference,
                score,
            }
        })
        .collect()
}

/// The `attempt`-th way to type a session, shortest first: its slug, its
/// name quoted (only names with spaces need quotes, and other punctuation
/// would end an unquoted reference early), id prefixes of 8, 12, 16.
fn shortest(e: &SessionRecord, attempt: usize) -> Option<String> {
    match (attempt, e.pi_name()) {
        (0, Some(name)) => {
            let s = slug(name);
            let plain = !s.ends_with('.')
                && s.chars()
                    .all(|c| c.is_alphanumeric() || matches!(c, '-' | '_' | '.'));
            (!s.is_empty() && plain).then_some(s)
        }
        (1, Some(name)) => {
            let name = name.split_whitespace().collect::<Vec<_>>().join(" ");
            (!name.contains('"') && name.contains(' ')).then_some(name)
        }
        (2..=4, _) => {
            let p: String =
                e.id.to_lowercase()
                    .chars()
                    .take(8 + 4 * (attempt - 2))
                    .collect();
            (p.len() < e.id.len()).then_some(p)
        }
        _ => None,
    }
}
