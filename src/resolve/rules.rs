//! The one resolver: a reference and a list of [`Row`]s in, an [`Outcome`]
//! out. The first rule that matches any session decides:
//! exact id → id prefix (≥ 6) → name → slug → fuzzy (nucleo). Id-like
//! references (hex with a digit, or UUID fragments) are looked up among ids
//! only. Each rule plainly scans the rows: at 10,000 sessions a scan is well
//! under the lookup target, so there is nothing to keep in step.
//!
//! Precision before recall: a fuzzy match resolves only when one session is
//! clearly ahead, otherwise it is an ambiguity; a miss suggests only names
//! that are genuinely close. The session the prompt is typed in counts only
//! when an exact rule names it and no other session.

use std::collections::HashSet;
use std::path::Path;

use nucleo_matcher::pattern::{Atom, AtomKind, CaseMatching, Normalization, Pattern};
use nucleo_matcher::{Config, Matcher, Utf32Str};
use serde::Serialize;

use super::keys::{char_mask, loose_slug, name_key, slug, Field, Row};

/// Shortest id prefix accepted as a reference.
pub const MIN_PREFIX: usize = 6;
/// A match in another project beats the current project's only by this much.
const LOCAL_MARGIN: f64 = 0.2;
/// A fuzzy match resolves only this far ahead of the next session; the
/// sessions within it of the best are the candidates of an ambiguity.
const CLEAR_LEAD: f64 = 0.05;
/// Candidates an ambiguity reports, best first.
pub(crate) const CANDIDATES: usize = 10;
/// Suggestions for a reference that matches nothing.
const SUGGESTIONS: usize = 3;
/// A name is suggested when it shares this much of its letter pairs with
/// the reference (Dice coefficient): `payment-gateway` ~ `Payment service` is 0.5.
const CLOSE: f64 = 0.5;
/// Fields longer than this (bytes) are matched greedily (linear time).
const LONG_FIELD: usize = 64;

/// The rule that resolved a reference (`details.resolved[].rule` in pi).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Rule {
    Id,
    Prefix,
    Name,
    Slug,
    /// The literal path of a session file in the sessions directory.
    Path,
    Fuzzy,
    /// The search index's ranking, the last resort (see `Catalog::with_search`).
    Search,
    /// Chosen by the user in pi's selector when the reference was ambiguous
    /// or matched nothing (not a rule of the resolver).
    Picked,
}

/// A reference as typed, and where.
pub(crate) struct Query<'a> {
    pub reference: &'a str,
    /// The project it is typed in.
    pub cwd: &'a str,
    /// The session it is typed in (lower-cased id).
    pub current: Option<&'a str>,
    /// Lowest fuzzy score that resolves.
    pub threshold: f64,
}

/// Where a fuzzy or search match was found. A word of a session's name or
/// tags outranks the same word in another session's description or first
/// message, whatever the project: the current project only breaks ties
/// between matches of the same kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum MatchKind {
    /// The description, the first message or the session's text, or a name
    /// that holds the reference's letters but not its words.
    Text,
    /// Every word of the reference is in the session's name or tags.
    Name,
}

/// A session a fuzzy or search rule found, and how well.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Scored {
    pub kind: MatchKind,
    /// In 0..=1.
    pub score: f64,
    /// Row index.
    pub row: usize,
}

#[derive(Debug, PartialEq)]
pub(crate) enum Outcome {
    /// Row index.
    Found(usize, Rule),
    /// Candidates, best first.
    Ambiguous(Vec<usize>),
    /// Suggestions, best first.
    NotFound(Vec<usize>),
    /// Path-like input that names no session in the sessions directory.
    Outside,
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

/// An id or a fragment of one: hex digits and hyphens, with a digit
/// (`cafe` and `deadbeef` stay words).
pub fn id_like(reference: &str) -> bool {
    let r = reference.trim();
    r.chars().all(|c| c.is_ascii_hexdigit() || c == '-') && r.chars().any(|c| c.is_ascii_digit())
}

pub(crate) fn in_project(row: &Row, cwd: &str) -> bool {
    let cwd = cwd.trim_end_matches('/');
    !cwd.is_empty() && row.entry.cwd.trim_end_matches('/') == cwd
}

/// Resolve `q` among `rows`; `fuzzy: false` stops after the exact rules.
pub(crate) fn resolve(rows: &[Row], q: &Query, fuzzy: bool) -> Outcome {
    let r = q.reference.trim();
    if r.is_empty() {
        return Outcome::NotFound(Vec::new());
    }
    if let Some((rule, hits)) = exact(rows, &[r]).pop().flatten() {
        return pick(rows, hits, rule, q);
    }
    if path_like(r) {
        // Never touch the file system for user-typed paths: only a literal
        // match with a listed session file counts.
        return match rows
            .iter()
            .position(|row| row.entry.path == Path::new(r) && !row.missing)
        {
            Some(i) => Outcome::Found(i, Rule::Path),
            None => Outcome::Outside,
        };
    }
    if id_like(r) {
        // Never text: the ids it is part of are the suggestions.
        let lower = r.to_lowercase();
        let mut near: Vec<usize> = (0..rows.len())
            .filter(|&i| rows[i].id_lower.starts_with(&lower))
            .collect();
        if near.is_empty() {
            near = (0..rows.len())
                .filter(|&i| rows[i].id_lower.contains(&lower))
                .collect();
        }
        let mut near = once_per_session(rows, near, q);
        near.truncate(SUGGESTIONS);
        return Outcome::NotFound(near);
    }
    if !fuzzy {
        return Outcome::NotFound(Vec::new());
    }
    let scored = match Fuzzy::new(r) {
        Some(f) => f.rank(rows, q),
        None => Vec::new(),
    };
    if scored.is_empty() {
        return Outcome::NotFound(suggest(rows, r, q));
    }
    decide(rows, scored, Rule::Fuzzy, q)
}

/// For each reference, the rows matching the first exact rule that
/// matches any: one scan for them all.
fn exact(rows: &[Row], refs: &[&str]) -> Vec<Option<(Rule, Vec<usize>)>> {
    struct Keys {
        lower: String,
        ids_only: bool,
        prefix: bool,
        name: String,
        slugs: Vec<String>,
    }
    let keys: Vec<Keys> = refs
        .iter()
        .map(|r| {
            let lower = r.to_lowercase();
            let prefix =
                !lower.contains(char::is_whitespace) && lower.chars().count() >= MIN_PREFIX;
            let slugs = [slug(r), loose_slug(r)]
                .into_iter()
                .filter(|s| !s.is_empty())
                .collect();
            Keys {
                ids_only: id_like(r),
                prefix,
                name: name_key(r),
                slugs,
                lower,
            }
        })
        .collect();
    let mut best: Vec<Option<(Rule, Vec<usize>)>> = refs.iter().map(|_| None).collect();
    for (i, row) in rows.iter().enumerate() {
        for (k, best) in keys.iter().zip(best.iter_mut()) {
            let rule = if row.id_lower == k.lower {
                Rule::Id
            } else if k.prefix && row.id_lower.starts_with(&k.lower) {
                Rule::Prefix
            } else if k.ids_only {
                continue;
            } else if row.names.contains(&k.name) {
                Rule::Name
            } else if k.slugs.iter().any(|s| row.slugs.contains(s)) {
                Rule::Slug
            } else {
                continue;
            };
            match best {
                Some((b, hits)) if *b == rule => hits.push(i),
                Some((b, _)) if *b < rule => {}
                _ => *best = Some((rule, vec![i])),
            }
        }
    }
    best
}

/// Which of `(row, reference)` pairs resolve back to their row when typed
/// in `cwd` (by an exact rule): one scan for them all.
pub(crate) fn resolve_back(rows: &[Row], cwd: &str, asks: &[(usize, String)]) -> Vec<bool> {
    let refs: Vec<&str> = asks.iter().map(|(_, r)| r.as_str()).collect();
    let found = exact(rows, &refs).into_iter().zip(asks);
    found
        .map(|(hit, (i, r))| {
            let q = Query {
                reference: r,
                cwd,
                current: None,
                threshold: 1.0,
            };
            let picked = hit.map(|(rule, hits)| pick(rows, hits, rule, &q));
            matches!(picked, Some(Outcome::Found(j, _)) if rows[j].id_lower == rows[*i].id_lower)
        })
        .collect()
}

/// Present files first, then the current project, then newest, then by id
/// (so the order never depends on the directory listing); one row per
/// session id (copies of a file share an id); not the current session when
/// there are others.
fn once_per_session(rows: &[Row], mut hits: Vec<usize>, q: &Query) -> Vec<usize> {
    hits.sort_by_key(|&i| {
        let row = &rows[i];
        (
            row.missing,
            !in_project(row, q.cwd),
            std::cmp::Reverse(row.entry.modified_ms),
            row.id_lower.as_str(),
        )
    });
    let mut seen = HashSet::new();
    hits.retain(|&i| seen.insert(rows[i].id_lower.as_str()));
    let is_current = |i: &usize| Some(rows[*i].id_lower.as_str()) == q.current;
    if hits.iter().any(|i| !is_current(i)) {
        hits.retain(|i| !is_current(i));
    }
    hits
}

/// The one session an exact rule names, or the ambiguity. Names and slugs
/// prefer the current project's single match; ids never guess.
fn pick(rows: &[Row], hits: Vec<usize>, rule: Rule, q: &Query) -> Outcome {
    let hits = once_per_session(rows, hits, q);
    if let [one] = hits[..] {
        return Outcome::Found(one, rule);
    }
    if matches!(rule, Rule::Name | Rule::Slug) {
        let local: Vec<usize> = hits
            .iter()
            .copied()
            .filter(|&i| in_project(&rows[i], q.cwd))
            .collect();
        if let [one] = local[..] {
            return Outcome::Found(one, rule);
        }
    }
    Outcome::Ambiguous(hits)
}

/// The outcome for scored rows (any order, not the current session): only
/// the best [`MatchKind`] counts; among its matches, the current project's
/// best when it is within [`LOCAL_MARGIN`] of the best overall; resolved
/// when clearly ahead of the next session, else the sessions not clearly
/// behind it.
pub(crate) fn decide(rows: &[Row], mut scored: Vec<Scored>, rule: Rule, q: &Query) -> Outcome {
    scored.sort_by(|a, b| {
        let (ra, rb) = (&rows[a.row], &rows[b.row]);
        b.kind
            .cmp(&a.kind)
            .then(b.score.total_cmp(&a.score))
            .then(rb.entry.modified_ms.cmp(&ra.entry.modified_ms))
            .then(ra.id_lower.cmp(&rb.id_lower))
    });
    let mut seen = HashSet::new();
    scored.retain(|m| {
        let id = rows[m.row].id_lower.as_str();
        seen.insert(id) && Some(id) != q.current
    });
    let Some(&first) = scored.first() else {
        return Outcome::NotFound(Vec::new());
    };
    scored.retain(|m| m.kind == first.kind);
    let local: Vec<Scored> = scored
        .iter()
        .copied()
        .filter(|m| in_project(&rows[m.row], q.cwd))
        .collect();
    let pool = match local.first() {
        Some(best_local) if first.score - best_local.score <= LOCAL_MARGIN => local,
        _ => scored,
    };
    let top = pool[0].score;
    let near: Vec<usize> = pool
        .iter()
        .filter(|m| m.score > top - CLEAR_LEAD)
        .map(|m| m.row)
        .collect();
    match near[..] {
        [one] => Outcome::Found(one, rule),
        _ => Outcome::Ambiguous(near.into_iter().take(CANDIDATES).collect()),
    }
}

/// Names genuinely close to a reference that matched nothing, closest first.
fn suggest(rows: &[Row], r: &str, q: &Query) -> Vec<usize> {
    // The reference's letter pairs as a 4096-bit set: a name is one pass
    // over its characters, with no allocation.
    let mut set = vec![0u64; 64];
    let mut len = 0usize;
    pairs(&loose_slug(r), |bit| {
        set[bit / 64] |= 1 << (bit % 64);
        len += 1;
    });
    let mut scored: Vec<(f64, usize)> = Vec::new();
    for (i, row) in rows
        .iter()
        .enumerate()
        .filter(|(_, row)| Some(row.id_lower.as_str()) != q.current)
    {
        let dice = |name: &String| {
            let (mut common, mut total) = (0usize, 0usize);
            pairs(name, |bit| {
                total += 1;
                common += usize::from(set[bit / 64] & (1 << (bit % 64)) != 0);
            });
            2.0 * common as f64 / (len + total).max(1) as f64
        };
        let best = row.names.iter().map(dice).fold(0.0, f64::max);
        if best >= CLOSE {
            scored.push((best, i));
        }
    }
    scored.sort_by(|a, b| b.0.total_cmp(&a.0));
    scored
        .into_iter()
        .take(SUGGESTIONS)
        .map(|(_, i)| i)
        .collect()
}

/// Each pair of adjacent characters of `text` as its loose slug spells it
/// (other characters as one `-`), as a number below 4096.
fn pairs(text: &str, mut f: impl FnMut(usize)) {
    let mut prev: Option<char> = None;
    for c in text
        .chars()
        .map(|c| if c.is_alphanumeric() { c } else { '-' })
    {
        match prev {
            Some('-') if c == '-' => continue,
            Some(p) => {
                f(((p as usize).wrapping_mul(0x9e37) ^ (c as usize).wrapping_mul(31)) & 4095)
            }
            None => {}
        }
        prev = Some(c);
    }
}

/// A compiled fuzzy query.
struct Fuzzy {
    pattern: Pattern,
    /// The query's score against itself: scores are divided by it.
    perfect: f64,
    /// Characters every matching field holds.
    mask: u64,
    /// The lower-cased text of each plain atom (for the quick checks), and
    /// a finder for it in prose.
    words: Vec<(String, memchr::memmem::Finder<'static>)>,
    matcher: Matcher,
}

impl Fuzzy {
    fn new(text: &str) -> Option<Fuzzy> {
        let needle: String = text
            .chars()
            .map(|c| if matches!(c, '-' | '_') { ' ' } else { c })
            .collect();
        let pattern = Pattern::new(
            &needle,
            CaseMatching::Ignore,
            Normalization::Smart,
            AtomKind::Fuzzy,
        );
        if pattern.atoms.is_empty() {
            return None;
        }
        let mut matcher = Matcher::new(Config::DEFAULT);
        let perfect = pattern.score(Utf32Str::new(&needle, &mut Vec::new()), &mut matcher)?;
        let plain = pattern
            .atoms
            .iter()
            .filter(|a| !a.negative && a.kind == AtomKind::Fuzzy);
        let words = plain
            .map(|a| {
                let w = a.needle_text().chars().collect::<String>().to_lowercase();
                let finder = memchr::memmem::Finder::new(w.as_bytes()).into_owned();
                (w, finder)
            })
            .collect();
        (perfect > 0).then(|| Fuzzy {
            mask: char_mask(&needle),
            pattern,
            perfect: perfect as f64,
            words,
            matcher,
        })
    }

    /// Every session but the current one scoring at least the threshold.
    fn rank(mut self, rows: &[Row], q: &Query) -> Vec<Scored> {
        let mut out = Vec::new();
        for (i, row) in rows.iter().enumerate() {
            if Some(row.id_lower.as_str()) == q.current {
                continue;
            }
            let (kind, score) = self.score(row, 0.0);
            if score >= q.threshold && score > 0.0 {
                out.push(Scored {
                    kind,
                    score,
                    row: i,
                });
            }
        }
        out
    }

    /// Confidence in 0..=1 that `row` is what the query names, and where it
    /// was found: its best field weighing at least `min_weight`, a field that
    /// holds the reference's words as a name (a [`MatchKind::Name`]) first.
    fn score(&mut self, row: &Row, min_weight: f64) -> (MatchKind, f64) {
        let mut best = (MatchKind::Text, 0.0f64);
        for f in row.fields().iter().filter(|f| f.weight >= min_weight) {
            let kind = self.kind(f);
            // A field scores at most its weight.
            let cannot_win = kind < best.0 || (kind == best.0 && f.weight <= best.1);
            if cannot_win || self.mask & !f.mask != 0 {
                continue;
            }
            if let Some(raw) = self.field_score(f) {
                best = (kind, (raw as f64 / self.perfect).min(1.0) * f.weight);
            }
        }
        best
    }

    /// [`MatchKind::Name`] when `f` is a name or tags holding every word of the query.
    fn kind(&self, f: &Field) -> MatchKind {
        let named = !f.prose
            && !self.words.is_empty()
            && self
                .words
                .iter()
                .all(|(_, finder)| finder.find(f.lower.as_bytes()).is_some());
        match named {
            true => MatchKind::Name,
            false => MatchKind::Text,
        }
    }

    /// The sum of the atoms' scores, as `Pattern::score`; `None` when one does not match.
    fn field_score(&mut self, f: &Field) -> Option<u32> {
        let fits = |(w, finder): &(String, memchr::memmem::Finder)| match f.prose {
            true => finder.find(f.lower.as_bytes()).is_some(),
            false => subsequence(w, &f.lower),
        };
        if !self.words.iter().all(fits) {
            return None;
        }
        let hay = f.text.slice(..);
        let long = f.text.len() > LONG_FIELD;
        let mut sum = 0u32;
        for atom in &self.pattern.atoms {
            sum += atom_score(atom, hay, long, &mut self.matcher)?;
        }
        Some(sum)
    }
}

fn atom_score(atom: &Atom, hay: Utf32Str<'_>, long: bool, matcher: &mut Matcher) -> Option<u32> {
    if long && !atom.negative && atom.kind == AtomKind::Fuzzy {
        matcher
            .fuzzy_match_greedy(hay, atom.needle_text())
            .map(u32::from)
    } else {
        atom.score(hay, matcher).map(u32::from)
    }
}

/// The characters of `needle` occur in order in `hay`.
fn subsequence(needle: &str, hay: &str) -> bool {
    let mut want = needle.chars().peekable();
    for c in hay.chars() {
        if want.peek() == Some(&c) {
            want.next();
        }
    }
    want.peek().is_none()
}

/// Fuzzy completion candidates score at least this.
const COMPLETE_FUZZY_MIN: f64 = 0.3;

/// Completion: id and name (or first-message title) prefixes first, then
/// words of names and titles, then (for 3+ characters, when these do not
/// fill `limit`) fuzzy matches on names and tags; the current project ahead
/// of others; newest first on equal scores; the session it is typed in
/// (`current`, a lower-cased id) last, never first.
pub(crate) fn complete(
    rows: &[Row],
    cwd: &str,
    current: Option<&str>,
    prefix: &str,
    limit: usize,
) -> Vec<(f64, usize)> {
    let p = prefix
        .trim()
        .trim_start_matches('@')
        .trim_start_matches('"')
        .to_lowercase();
    let p_slug = slug(&p);
    let word = format!(" {p}");
    let local_bonus = |row: &Row| if in_project(row, cwd) { 0.25 } else { 0.0 };
    let mut scored: Vec<(f64, u64, usize)> = Vec::new();
    let mut rest = Vec::new();
    for (i, row) in rows.iter().enumerate().filter(|(_, row)| !row.missing) {
        let base = if p.is_empty() {
            0.5
        } else if row.id_lower.starts_with(&p) {
            3.0
        } else if row.names.iter().any(|n| n.starts_with(&p))
            || row.title.starts_with(&p)
            || row.slugs.iter().any(|s| s.starts_with(&p_slug))
        {
            2.5
        } else if row.names.iter().any(|n| n.contains(&word)) || row.title.contains(&word) {
            2.0
        } else {
            rest.push(i);
            continue;
        };
        scored.push((base + local_bonus(row), row.entry.modified_ms, i));
    }
    if scored.len() < limit && p.chars().count() >= 3 {
        if let Some(mut fuzzy) = Fuzzy::new(&p) {
            for i in rest {
                // Names and tags only: a description holds the letters of almost anything.
                let (_, s) = fuzzy.score(&rows[i], 0.95);
                if s >= COMPLETE_FUZZY_MIN {
                    scored.push((s + local_bonus(&rows[i]), rows[i].entry.modified_ms, i));
                }
            }
        }
    }
    let is_current = |i: usize| Some(rows[i].id_lower.as_str()) == current;
    scored.sort_by(|a, b| {
        is_current(a.2)
            .cmp(&is_current(b.2))
            .then(b.0.total_cmp(&a.0))
            .then(b.1.cmp(&a.1))
    });
    scored.truncate(limit);
    scored.into_iter().map(|(s, _, i)| (s, i)).collect()
}
