//! Resolution and completion over the index: exact id → unique id prefix →
//! exact name → unique slug → fuzzy (nucleo) with a confidence threshold.
//! At every step the current project's sessions win over other projects'.

use std::collections::HashSet;
use std::path::Path;

use super::fuzzy::{Fuzzy, MATCHER};
use super::index::{loose_slug, slug, Index, Item};
use super::table::project_key;

/// Shortest id prefix accepted as a reference.
pub const MIN_PREFIX: usize = 6;
/// Fuzzy scores this close to the best one make the match ambiguous.
const TIE_MARGIN: f64 = 0.03;
/// A match in another project beats the current project's only by this much.
const LOCAL_MARGIN: f64 = 0.2;
/// Candidates an ambiguity reports, best first.
pub(crate) const CANDIDATES: usize = 10;
/// Suggestions for a reference that matches nothing.
const SUGGESTIONS: usize = 3;
/// Fields weighing this much are names (1.0) and tags (0.95).
const NAME_WEIGHT: f64 = 0.95;
/// Suggestions are the nearest names only: a long first message or a row of
/// tags shares scattered letters with almost anything.
const ONLY_NAMES: f64 = 1.0;

pub(crate) enum Outcome {
    Found(usize),
    /// Candidates, best first.
    Ambiguous(Vec<usize>),
    /// Nearest items, best first.
    NotFound(Vec<usize>),
    /// Path-like input that names no session in the sessions directory.
    Outside,
}

/// Whether the item in `slot` is one of the current project's sessions.
fn slot_in_project(index: &Index, cwd: &str, slot: usize) -> bool {
    index.get(slot).is_some_and(|it| in_project(it, cwd))
}

pub(crate) fn in_project(item: &Item, cwd: &str) -> bool {
    let cwd = project_key(cwd);
    !cwd.is_empty() && project_key(&item.entry.cwd) == cwd
}

/// Input that looks like a file path rather than an id or a name.
pub fn path_like(reference: &str) -> bool {
    let r = reference.trim();
    r.starts_with('/')
        || r.starts_with('~')
        || r.starts_with('.')
        || r.contains('/')
        || r.contains('\\')
        || r.contains('\0')
        || r.ends_with(".jsonl")
        || r.as_bytes().get(1) == Some(&b':')
}

/// Resolve `reference` typed in project `cwd`, in session `current` (its
/// lower-cased id, when known).
pub(crate) fn resolve(index: &Index, cwd: &str, current: Option<&str>, reference: &str, threshold: f64) -> Outcome {
    let r = reference.trim();
    if r.is_empty() {
        return Outcome::NotFound(Vec::new());
    }
    let lower = r.to_lowercase();
    if let Some(slots) = index.by_id.get(&lower) {
        if let Some(o) = pick(index, slots.clone(), cwd, current) {
            return o;
        }
    }
    let plain = !lower.contains(char::is_whitespace);
    if plain && lower.chars().count() >= MIN_PREFIX {
        if let Some(o) = pick(index, index.id_prefix(&lower), cwd, current) {
            return o;
        }
    }
    if let Some(slots) = index.by_name.get(&collapse_ws(&lower)) {
        if let Some(o) = pick(index, slots.clone(), cwd, current) {
            return o;
        }
    }
    for s in [slug(r), loose_slug(r)] {
        let slots = index.by_slug.get(&s).into_iter().chain(index.by_name.get(&s)).flatten().copied();
        if let Some(o) = pick(index, slots.collect(), cwd, current) {
            return o;
        }
    }
    if path_like(r) {
        // Never touch the file system for user-typed paths: only a literal
        // match with a listed session file counts.
        let as_path = Path::new(r);
        return match index.iter().find(|(_, it)| it.entry.path == as_path && !it.missing()) {
            Some((slot, _)) => Outcome::Found(slot),
            None => Outcome::Outside,
        };
    }
    fuzzy_resolve(index, cwd, current, r, threshold)
}

fn collapse_ws(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// One candidate per session id (copies of a file share an id), not the
/// current session if there are others, then the current project's single
/// match if there is exactly one.
fn pick(index: &Index, slots: Vec<usize>, cwd: &str, current: Option<&str>) -> Option<Outcome> {
    let mut slots: Vec<usize> = slots.into_iter().filter(|&s| index.get(s).is_some()).collect();
    if slots.is_empty() {
        return None;
    }
    sort_candidates(index, &mut slots, cwd);
    let mut seen = HashSet::new();
    slots.retain(|&s| index.get(s).is_some_and(|it| seen.insert(it.id_lower.clone())));
    drop_current(index, &mut slots, |&s| s, current);
    if slots.len() == 1 {
        return Some(Outcome::Found(slots[0]));
    }
    let local: Vec<usize> = slots.iter().copied().filter(|&s| slot_in_project(index, cwd, s)).collect();
    if local.len() == 1 {
        return Some(Outcome::Found(local[0]));
    }
    Some(Outcome::Ambiguous(slots))
}

/// A reference that fits several sessions, one of them the session it is
/// typed in, means one of the others: that one is already in the
/// conversation. (Copies of the current session go too.)
fn drop_current<T>(index: &Index, items: &mut Vec<T>, slot: impl Fn(&T) -> usize, current: Option<&str>) {
    let Some(current) = current else { return };
    let is_current = |t: &T| index.get(slot(t)).is_some_and(|it| it.id_lower == current);
    if items.iter().any(|t| !is_current(t)) {
        items.retain(|t| !is_current(t));
    }
}

/// Present files first, then the current project, then newest.
fn sort_candidates(index: &Index, slots: &mut [usize], cwd: &str) {
    slots.sort_by_key(|&s| {
        let it = index.get(s);
        let missing = it.is_none_or(|it| it.missing());
        let local = it.is_some_and(|it| in_project(it, cwd));
        let modified = it.map(|it| it.entry.modified_ms).unwrap_or(0);
        (missing, !local, std::cmp::Reverse(modified))
    });
}

fn fuzzy_resolve(index: &Index, cwd: &str, current: Option<&str>, r: &str, threshold: f64) -> Outcome {
    let Some(fuzzy) = Fuzzy::new(r) else { return Outcome::NotFound(suggest(index, r, &[])) };
    // The outcome depends only on the scores near the best one: other
    // projects' items within TIE_MARGIN of it, and the current project's
    // within LOCAL_MARGIN (+ TIE_MARGIN), which win over a better match
    // elsewhere. Far fewer fields need scoring for those. An ambiguity lists
    // these near matches; a miss suggests the best few scores of all.
    // The current session is ranked apart: it must not raise the floor over
    // the others, since it is only the answer when nothing else matches.
    let current_slots: &[usize] = current.and_then(|c| index.by_id.get(c)).map_or(&[], Vec::as_slice);
    let local = index.table().in_project(cwd);
    let (margin, local_margin) = (TIE_MARGIN + 1e-9, LOCAL_MARGIN + TIE_MARGIN + 1e-9);
    let mut near = fuzzy.rank_near_best(index, threshold, margin, local_margin, &local, |s| current_slots.contains(&s));
    if near.is_empty() {
        near = MATCHER.with(|m| {
            let mut m = m.borrow_mut();
            let scored = current_slots.iter().map(|&s| (fuzzy.score_slot(index, s, &mut m, 0.0, threshold), s));
            let mut scored: Vec<(f64, usize)> = scored.filter(|&(score, _)| score > 0.0).collect();
            scored.sort_by(|a, b| b.0.total_cmp(&a.0));
            scored
        });
    }
    if near.is_empty() {
        return Outcome::NotFound(suggest(index, r, &fuzzy.rank_top(index, 0.0, SUGGESTIONS, ONLY_NAMES)));
    }
    decide(index, cwd, current, near)
}

/// The outcome for the near matches (best first): the one session they
/// name, or the ties first and then the rest of the pool as candidates.
fn decide(index: &Index, cwd: &str, current: Option<&str>, mut near: Vec<(f64, usize)>) -> Outcome {
    drop_current(index, &mut near, |&(_, s)| s, current);
    let Some(&(best_all, _)) = near.first() else { return Outcome::NotFound(Vec::new()) };
    let local: Vec<(f64, usize)> = near.iter().copied().filter(|&(_, s)| slot_in_project(index, cwd, s)).collect();
    let pool = match local.first() {
        Some((best_local, _)) if best_all - best_local <= LOCAL_MARGIN => local,
        _ => near,
    };
    let top = pool[0].0;
    let mut tied: Vec<usize> = pool.iter().filter(|(s, _)| *s >= top - TIE_MARGIN).map(|(_, slot)| *slot).collect();
    let mut seen = HashSet::new();
    tied.retain(|&s| index.get(s).is_some_and(|it| seen.insert(it.id_lower.clone())));
    if tied.len() == 1 {
        return Outcome::Found(tied[0]);
    }
    // The rest of the pool, once per session.
    let mut rest: Vec<usize> = pool.iter().map(|(_, s)| *s).filter(|s| !tied.contains(s)).collect();
    rest.retain(|&s| index.get(s).is_some_and(|it| seen.insert(it.id_lower.clone())));
    tied.append(&mut rest);
    Outcome::Ambiguous(tied)
}

/// Nearest names for a miss: the best fuzzy scores, else names sharing the
/// most character bigrams with the reference.
fn suggest(index: &Index, r: &str, ranked: &[(f64, usize)]) -> Vec<usize> {
    let mut out: Vec<usize> = ranked.iter().take(SUGGESTIONS).map(|(_, s)| *s).collect();
    if out.len() >= SUGGESTIONS {
        return out;
    }
    let target = bigrams(&loose_slug(r));
    if target.is_empty() {
        return out;
    }
    let mut scored: Vec<(f64, usize)> = index
        .iter()
        .filter(|(slot, _)| !out.contains(slot))
        .filter_map(|(slot, it)| {
            let best = it.names.iter().map(|n| dice(&target, &bigrams(&loose_slug(n)))).fold(0.0, f64::max);
            (best >= 0.3).then_some((best, slot))
        })
        .collect();
    scored.sort_by(|a, b| b.0.total_cmp(&a.0));
    out.extend(scored.into_iter().take(SUGGESTIONS - out.len()).map(|(_, s)| s));
    out
}

fn bigrams(s: &str) -> Vec<(char, char)> {
    let chars: Vec<char> = s.chars().collect();
    let mut v: Vec<(char, char)> = chars.windows(2).map(|w| (w[0], w[1])).collect();
    v.sort_unstable();
    v
}

fn dice(a: &[(char, char)], b: &[(char, char)]) -> f64 {
    if a.is_empty() || b.is_empty() {
        return 0.0;
    }
    let (mut i, mut j, mut common) = (0, 0, 0usize);
    while i < a.len() && j < b.len() {
        match a[i].cmp(&b[j]) {
            std::cmp::Ordering::Equal => {
                common += 1;
                i += 1;
                j += 1;
            }
            std::cmp::Ordering::Less => i += 1,
            std::cmp::Ordering::Greater => j += 1,
        }
    }
    2.0 * common as f64 / (a.len() + b.len()) as f64
}

/// Fuzzy completion candidates score at least this.
const COMPLETE_FUZZY_MIN: f64 = 0.3;

/// Completion: id and name prefixes first, then (for 3+ characters, when
/// prefixes do not fill `limit`) fuzzy matches on names and tags; the current
/// project ahead of others; newest first on equal scores.
pub(crate) fn complete(index: &Index, cwd: &str, prefix: &str, limit: usize) -> Vec<(f64, usize)> {
    let p = prefix.trim().trim_start_matches('@').trim_start_matches('"').to_lowercase();
    let p_slug = slug(&p);
    let word = format!(" {p}");
    let local_bonus = |it: &Item| if in_project(it, cwd) { 0.25 } else { 0.0 };
    let mut scored: Vec<(f64, u64, usize)> = index
        .iter()
        .filter(|(_, it)| !it.missing())
        .filter_map(|(slot, it)| {
            let base = if p.is_empty() {
                0.5
            } else if it.id_lower.starts_with(&p) {
                3.0
            } else if it.names.iter().any(|n| n.starts_with(&p)) || it.slugs.iter().any(|s| s.starts_with(&p_slug)) {
                2.5
            } else if it.names.iter().any(|n| n.contains(&word)) {
                2.0
            } else {
                return None;
            };
            Some((base + local_bonus(it), it.entry.modified_ms, slot))
        })
        .collect();
    if scored.len() < limit && p.chars().count() >= 3 {
        if let Some(fuzzy) = Fuzzy::new(&p) {
            let have: HashSet<usize> = scored.iter().map(|x| x.2).collect();
            MATCHER.with(|m| {
                let mut m = m.borrow_mut();
                for (slot, it) in index.iter().filter(|(slot, it)| !it.missing() && !have.contains(slot)) {
                    let s = fuzzy.score_slot(index, slot, &mut m, NAME_WEIGHT, COMPLETE_FUZZY_MIN);
                    if s >= COMPLETE_FUZZY_MIN {
                        scored.push((s + local_bonus(it), it.entry.modified_ms, slot));
                    }
                }
            });
        }
    }
    let by_rank = |a: &(f64, u64, usize), b: &(f64, u64, usize)| b.0.total_cmp(&a.0).then(b.1.cmp(&a.1));
    if scored.len() > limit && limit > 0 {
        scored.select_nth_unstable_by(limit - 1, by_rank);
        scored.truncate(limit);
    }
    scored.sort_by(by_rank);
    scored.truncate(limit);
    scored.into_iter().map(|(s, _, slot)| (s, slot)).collect()
}
