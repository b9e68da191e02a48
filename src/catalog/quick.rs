//! First-use fast paths, for a lookup that comes before the catalog has been
//! built (no prewarm yet). Each answers only when the answer is certain to be
//! the one the full catalog would give; anything less clear-cut returns `None`
//! and the caller builds the catalog, which gives the authoritative answer.
//!
//! - Ids: pi names session files `<timestamp>_<id>.jsonl`, so an id or id
//!   prefix is matched against file names from directory listings alone and
//!   confirmed by reading that one file's header.
//! - Exact names: every session file and meta file is read (as the full
//!   build does, on a few threads), but only compared with the name, with
//!   none of the bookkeeping that keeps the catalog incremental.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

use super::index::{loose_slug, name_key, slug};
use super::light;
use super::matching::path_like;
use super::root::{parallel, session_item, MAX_DEPTH, META_SUFFIX};
use super::scan::{self, Listed};
use super::CatalogEntry;

/// Input that can only be an id or id prefix (the id fast path's domain).
pub(crate) fn id_like(reference: &str) -> bool {
    let r = reference.trim();
    r.chars().count() >= super::MIN_PREFIX && r.chars().all(|c| c.is_ascii_hexdigit() || c == '-')
}

/// Session files under the sessions directory, as the full build lists them.
fn session_files(sessions_dir: &Path) -> Option<Vec<PathBuf>> {
    let canon = std::fs::canonicalize(sessions_dir).ok()?;
    let mut files = Vec::new();
    let mut dirs = vec![(sessions_dir.to_path_buf(), 0usize)];
    while let Some((dir, depth)) = dirs.pop() {
        for l in scan::list_dir(&dir, &canon, ".jsonl").0 {
            match l {
                Listed::Dir(d) if depth < MAX_DEPTH => dirs.push((d, depth + 1)),
                Listed::Dir(_) => {}
                Listed::File(p, _) => files.push(p),
            }
        }
    }
    Some(files)
}

pub(crate) fn quick_id(sessions_dir: &Path, meta_dir: &Path, reference: &str) -> Option<CatalogEntry> {
    if !id_like(reference) {
        return None;
    }
    let r = reference.trim().to_lowercase();
    let mut matches: Vec<(PathBuf, String)> = Vec::new();
    for p in session_files(sessions_dir)? {
        let name = p.file_name().and_then(|n| n.to_str()).unwrap_or_default();
        // A file not named the pi way may hold any id: only a full scan can tell.
        let (_, id) = name.strip_suffix(".jsonl")?.rsplit_once('_')?;
        let id = id.to_lowercase();
        if id.starts_with(&r) {
            matches.push((p, id));
        }
    }
    let exact: Vec<&(PathBuf, String)> = matches.iter().filter(|(_, id)| *id == r).collect();
    let (path, id) = match (exact.as_slice(), matches.as_slice()) {
        ([one], _) => (*one).clone(),
        ([], [one]) => one.clone(),
        _ => return None,
    };
    let (stamp, light) = light::read_session(&path, None).ok()?;
    let light = light.filter(|l| l.id.to_lowercase() == id)?;
    let meta = crate::meta::meta_path(meta_dir, &light.id).ok().and_then(|p| meta_inside(meta_dir, &p));
    Some(session_item(&path, stamp, &light, meta.as_ref()).entry)
}

/// A reference that is an exact (case-insensitive) session name or slug,
/// resolved from a full read of the files but without building the catalog.
/// Mirrors the resolution order: no id may equal it (or, for a plain
/// reference of `MIN_PREFIX`+ characters, start with it); then the first
/// step that matches anything (name, slug, loose slug) must match exactly one
/// present session file (by its `session_info` name or its meta name).
pub(crate) fn quick_name(sessions_dir: &Path, meta_dir: &Path, reference: &str) -> Option<CatalogEntry> {
    let r = reference.trim();
    if r.is_empty() || path_like(r) {
        return None;
    }
    let q = Query::new(r);
    let canon = std::fs::canonicalize(sessions_dir).ok()?;
    // The meta directory is read alongside the session tree.
    let (metas, sessions) = std::thread::scope(|s| {
        let read = || read_metas(meta_dir, &q);
        let metas = std::thread::Builder::new().spawn_scoped(s, read);
        let sessions = scan_sessions(sessions_dir, &canon, &q);
        let metas = match metas {
            Ok(h) => h.join().ok().flatten(),
            Err(_) => read(),
        };
        (metas, sessions)
    });
    let (metas, sessions) = (metas?, sessions?);
    let mut metas_of: HashMap<&str, Vec<&MetaSeen>> = HashMap::new();
    for m in &metas {
        metas_of.entry(m.session_id.as_str()).or_default().push(m);
    }
    let ids: HashSet<&str> = sessions.iter().map(|s| s.id.as_str()).collect();
    // Each entry's first matching step; orphan meta files are entries too.
    let mut matched: Vec<(u8, Option<&SessionSeen>)> = Vec::new();
    for seen in &sessions {
        let metas = metas_of.get(seen.id.as_str()).map_or(&[][..], Vec::as_slice);
        if let Some(step) = metas.iter().filter_map(|m| m.step).chain(seen.step).min() {
            // Several meta files for one id: which one the catalog uses depends on read order.
            matched.push((step, (metas.len() < 2).then_some(seen)));
        }
    }
    matched.extend(metas.iter().filter(|m| !ids.contains(m.session_id.as_str())).filter_map(|m| Some((m.step?, None))));
    let first = matched.iter().map(|m| m.0).min()?;
    let mut at_first = matched.iter().filter(|m| m.0 == first);
    let (Some((_, Some(found))), None) = (at_first.next(), at_first.next()) else { return None };
    let meta_path = metas_of.get(found.id.as_str()).and_then(|m| m.first()).map(|m| m.path.as_path());
    // Read the two files again in full, as the catalog will hold them
    // (and to be sure they did not change meanwhile).
    let (stamp, light) = light::read_session(&found.path, None).ok()?;
    let light = light.filter(|l| l.id == found.id)?;
    let meta = match meta_path {
        Some(p) => Some(scan::read_meta(p)?.1.filter(|m| m.session_id == found.id)?),
        None => None,
    };
    let step = light
        .name
        .as_deref()
        .and_then(|n| q.step(n))
        .into_iter()
        .chain(meta.as_ref().and_then(|m| q.step(&m.name)))
        .min();
    if step != Some(first) || !found.path.is_file() {
        return None;
    }
    Some(session_item(&found.path, stamp, &light, meta.as_ref()).entry)
}

/// The reference, as each resolution step compares it.
struct Query {
    lower: String,
    /// How names are compared (see `index::name_key`).
    key: String,
    /// Also an id prefix candidate.
    plain: bool,
    /// Its slug and loose slug (the steps after names).
    slugs: [String; 2],
}

impl Query {
    fn new(r: &str) -> Query {
        let lower = r.to_lowercase();
        let key = lower.split_whitespace().collect::<Vec<_>>().join(" ");
        let plain = !lower.contains(char::is_whitespace) && lower.chars().count() >= super::MIN_PREFIX;
        Query { lower, key, plain, slugs: [slug(r), loose_slug(r)] }
    }

    /// The first resolution step at which an entry with this name matches:
    /// 0 by name, 1 by slug, 2 by loose slug (the index keeps an entry under
    /// its names and their slugs and loose slugs, and looks slugs up in both).
    fn step(&self, name: &str) -> Option<u8> {
        if self.names(name) {
            return Some(0);
        }
        let key = name_key(name);
        if key.is_empty() {
            return None;
        }
        let keys = [slug(&key), loose_slug(&key), key];
        (1..=2u8).find(|&i| {
            let s = &self.slugs[usize::from(i - 1)];
            !s.is_empty() && keys.iter().any(|k| k == s)
        })
    }

    /// The reference would resolve to this id before any name.
    fn clashes(&self, id: &str) -> bool {
        if id.is_ascii() && self.lower.is_ascii() {
            let (id, lower) = (id.as_bytes(), self.lower.as_bytes());
            let prefix = id.len() >= lower.len() && id[..lower.len()].eq_ignore_ascii_case(lower);
            return prefix && (self.plain || id.len() == lower.len());
        }
        let id = id.to_lowercase();
        id == self.lower || (self.plain && id.starts_with(&self.lower))
    }

    /// `name` is this reference as a name: `name_key(name) == key` (non-empty),
    /// without allocating for ASCII names.
    fn names(&self, name: &str) -> bool {
        if !(name.is_ascii() && self.key.is_ascii()) {
            let k = name_key(name);
            return !k.is_empty() && k == self.key;
        }
        let mut key = self.key.bytes();
        let mut words = 0;
        for w in name.split_whitespace() {
            if words > 0 && key.next() != Some(b' ') {
                return false;
            }
            words += 1;
            if !w.bytes().all(|b| key.next() == Some(b.to_ascii_lowercase())) {
                return false;
            }
        }
        words > 0 && key.next().is_none()
    }
}

/// A session file as the name lookup sees it.
struct SessionSeen {
    path: PathBuf,
    id: String,
    /// The step at which its `session_info` name matches (see `Query::step`).
    step: Option<u8>,
}

struct MetaSeen {
    path: PathBuf,
    session_id: String,
    /// The step at which its name matches.
    step: Option<u8>,
}

/// Every pi session file under the sessions directory (listed as the full
/// build lists them), read on a few threads, a directory at a time; `None`
/// when a session id clashes with the reference.
fn scan_sessions(sessions_dir: &Path, canon: &Path, q: &Query) -> Option<Vec<SessionSeen>> {
    let (top, ok) = scan::list_dir(sessions_dir, canon, ".jsonl");
    if !ok {
        return Some(Vec::new());
    }
    let mut units: Vec<(PathBuf, bool)> = Vec::new();
    let mut files = Vec::new();
    for l in top {
        match l {
            Listed::Dir(d) => units.push((d, true)),
            Listed::File(p, _) => files.push(p),
        }
    }
    units.extend(files.into_iter().map(|p| (p, false)));
    // Directories differ in size: threads take the next one as they go.
    let per_unit = crate::threads::map_each(&units, 4, |(path, is_dir)| {
        let mut out = Vec::new();
        let mut files = Vec::new();
        if *is_dir {
            let mut dirs = vec![(path.clone(), 1usize)];
            while let Some((dir, depth)) = dirs.pop() {
                for l in scan::list_dir(&dir, canon, ".jsonl").0 {
                    match l {
                        Listed::Dir(d) if depth < MAX_DEPTH => dirs.push((d, depth + 1)),
                        Listed::Dir(_) => {}
                        Listed::File(p, _) => files.push(p),
                    }
                }
            }
        } else {
            files.push(path.clone());
        }
        for p in files {
            let Ok((_, Some(light))) = light::read_session(&p, None) else { continue };
            if q.clashes(&light.id) {
                return None;
            }
            let step = light.name.as_deref().and_then(|n| q.step(n));
            out.push(SessionSeen { path: p, id: light.id, step });
        }
        Some(out)
    });
    let mut all = Vec::new();
    for unit in per_unit {
        all.extend(unit??);
    }
    Some(all)
}

/// Every valid meta file in the meta directory (symlinks only within it);
/// `None` when a session id clashes with the reference.
fn read_metas(meta_dir: &Path, q: &Query) -> Option<Vec<MetaSeen>> {
    let Ok(canon) = std::fs::canonicalize(meta_dir) else { return Some(Vec::new()) };
    let (listed, ok) = scan::list_dir(meta_dir, &canon, META_SUFFIX);
    if !ok {
        return Some(Vec::new());
    }
    let files: Vec<PathBuf> = listed
        .into_iter()
        .filter_map(|l| match l {
            Listed::File(p, _) => Some(p),
            Listed::Dir(_) => None,
        })
        .collect();
    let metas = parallel(&files, |p| {
        let m = scan::read_meta(p).and_then(|(_, m)| m)?;
        Some((m.session_id.clone(), q.step(&m.name)))
    });
    let mut out = Vec::with_capacity(files.len());
    for (path, m) in files.into_iter().zip(metas) {
        let Some(Some((session_id, step))) = m else { continue };
        if q.clashes(&session_id) {
            return None;
        }
        out.push(MetaSeen { path, session_id, step });
    }
    Some(out)
}

/// The meta file, unless it is a symlink leading out of the meta directory.
fn meta_inside(meta_dir: &Path, path: &Path) -> Option<scan::MetaLight> {
    scan::read_meta(&regular_files::inside(meta_dir, path).ok()?)?.1
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn query_compares_like_the_index() {
        let names = [
            "Auth work",
            " auth\t WORK ",
            "auth\u{b}work",
            "auth work 2",
            "",
            "  ",
            "Résumé Ω",
            "RÉSUMÉ ω",
            "authwork",
        ];
        let refs = ["auth work", "AUTH   WORK", "résumé ω", "auth", "authwork"];
        for r in refs {
            let q = Query::new(r);
            let key = r.to_lowercase().split_whitespace().collect::<Vec<_>>().join(" ");
            for n in names {
                let want = !name_key(n).is_empty() && name_key(n) == key;
                assert_eq!(q.names(n), want, "{n:?} vs {r:?}");
            }
        }
        let ids = ["abcdef12-0000", "ABCDEF12-0000", "abcdef", "abc", "Äbcdef"];
        for r in ["abcdef", "ABCDEF12-0000", "abc", "äbcdef", "ab cdef"] {
            let q = Query::new(r);
            let lower = r.to_lowercase();
            let plain = !lower.contains(char::is_whitespace) && lower.chars().count() >= crate::catalog::MIN_PREFIX;
            for id in ids {
                let l = id.to_lowercase();
                assert_eq!(q.clashes(id), l == lower || (plain && l.starts_with(&lower)), "{id:?} vs {r:?}");
            }
        }
    }
}
