//! Fuzzy scoring of catalog items (nucleo), with exact shortcuts: a field is
//! only handed to the matcher when every atom can match it (character set,
//! then an in-order scan for ASCII text) and when an upper bound on its score
//! (per atom, from the field's text: [`super::bound`]) still reaches the score
//! the caller needs; scoring stops as soon as the field can no longer reach
//! it. Scores are the matcher's own, so ranking is unchanged; the shortcuts
//! only skip work whose result could not be used.

use std::cell::RefCell;
use std::sync::atomic::{AtomicU64, Ordering};

use nucleo_matcher::pattern::{AtomKind, CaseMatching, Normalization, Pattern};
use nucleo_matcher::{Config, Matcher, Utf32Str};

use super::bound::Needles;
use super::index::{char_mask, Field, Index};

thread_local! {
    pub(crate) static MATCHER: RefCell<Matcher> = RefCell::new(Matcher::new(Config::DEFAULT));
}

/// nucleo's per-character maximum: a match (16) plus the largest bonus it
/// gives (a word start after whitespace, 10); the first character's bonus
/// counts twice. So one atom of `n` characters scores at most `26 n + 10`
/// (checked against the matcher in the tests below).
const MAX_PER_CHAR: u32 = 16 + 10;
const MAX_FIRST_EXTRA: u32 = 10;
/// Atoms whose scores are remembered for repeats and whose bounds are
/// tightened per field (more are simply rescored, with the general bound).
const MAX_ATOMS: usize = 16;
/// Each atom's highest possible score in one field (the first `MAX_ATOMS`).
type Bounds = [u32; MAX_ATOMS];

/// One pattern atom as the shortcuts see it.
struct AtomInfo {
    /// Lower-cased ASCII needle when the atom is a plain fuzzy ASCII atom: a
    /// field can only match it if these bytes occur in order (ASCII case folded).
    ascii: Option<Vec<u8>>,
    /// Highest score the matcher can give this atom.
    bound: u32,
    /// An earlier identical atom: same score, computed once.
    same_as: Option<usize>,
}

/// A compiled fuzzy query: the pattern, its self-score for normalization and
/// the characters every matching field must contain.
pub(crate) struct Fuzzy {
    pattern: Pattern,
    perfect: f64,
    mask: u64,
    atoms: Vec<AtomInfo>,
    /// Atom indexes, highest bound first: a poor score for a long atom rules
    /// a field out soonest. (A repeated atom keeps its place after the first.)
    order: Vec<usize>,
    /// The ASCII atoms for per-field bounds (`None`: too long a query).
    needles: Option<Needles>,
    /// The sum of the atoms' general bounds: the most any field can score.
    total_bound: u32,
}

impl Fuzzy {
    pub fn new(text: &str) -> Option<Fuzzy> {
        let needle: String = text.chars().map(|c| if matches!(c, '-' | '_') { ' ' } else { c }).collect();
        let pattern = Pattern::new(&needle, CaseMatching::Ignore, Normalization::Smart, AtomKind::Fuzzy);
        if pattern.atoms.is_empty() {
            return None;
        }
        let mut buf = Vec::new();
        let perfect = MATCHER.with(|m| pattern.score(Utf32Str::new(&needle, &mut buf), &mut m.borrow_mut()))?;
        let mut atoms: Vec<AtomInfo> = Vec::with_capacity(pattern.atoms.len());
        for (i, atom) in pattern.atoms.iter().enumerate() {
            let text = atom.needle_text();
            let plain = !atom.negative && atom.kind == AtomKind::Fuzzy;
            let ascii = match text {
                Utf32Str::Ascii(b) if plain => Some(b.to_ascii_lowercase()),
                _ => None,
            };
            let bound = if plain { MAX_PER_CHAR * text.len() as u32 + MAX_FIRST_EXTRA } else { u32::MAX / 4 };
            let same_as = pattern.atoms[..i].iter().position(|a| a == atom);
            atoms.push(AtomInfo { ascii, bound, same_as });
        }
        let mut order: Vec<usize> = (0..atoms.len()).collect();
        order.sort_by_key(|&i| std::cmp::Reverse(atoms[i].bound));
        let needles = Needles::new(atoms.iter().map(|a| a.ascii.as_deref()));
        let total_bound = atoms.iter().map(|a| a.bound).sum();
        (perfect > 0).then(|| Fuzzy {
            mask: char_mask(&needle),
            pattern,
            perfect: perfect as f64,
            atoms,
            order,
            needles,
            total_bound,
        })
    }

    /// The highest score the whole query can reach in a field.
    fn sum(&self, bounds: &Bounds) -> u32 {
        let (first, rest) = self.atoms.split_at(self.atoms.len().min(MAX_ATOMS));
        bounds[..first.len()].iter().sum::<u32>() + rest.iter().map(|a| a.bound).sum::<u32>()
    }

    /// A field's weighted confidence for a raw matcher score.
    fn value(&self, raw: u32, weight: f64) -> f64 {
        (raw as f64 / self.perfect).min(1.0) * weight
    }

    /// Confidence in 0..=1 that the item in `slot` is what the query names,
    /// over fields weighing at least `min_weight`. Results below `floor` are
    /// reported as 0 (the work to score them exactly is skipped); with
    /// `floor` 0 every score is exact.
    pub fn score_slot(&self, index: &Index, slot: usize, matcher: &mut Matcher, min_weight: f64, floor: f64) -> f64 {
        self.score_fields(index, slot, matcher, min_weight..f64::INFINITY, floor, 0.0)
    }

    /// As [`Fuzzy::score_slot`], over the fields whose weight is in
    /// `weights`, for an item already known to score `known` on others.
    fn score_fields(
        &self,
        index: &Index,
        slot: usize,
        matcher: &mut Matcher,
        weights: std::ops::Range<f64>,
        floor: f64,
        known: f64,
    ) -> f64 {
        let table = index.table();
        let mut best = known;
        for (mask, row) in table.rows(slot) {
            if self.mask & !mask != 0 || row.weight <= best || !weights.contains(&row.weight) {
                continue;
            }
            // Below this a field changes nothing: not above `best`, not up to `floor`.
            let useless = |v: f64| v <= best || v < floor;
            if useless(self.value(self.total_bound, row.weight)) {
                continue;
            }
            let Some(bounds) = self.field_bounds(table.ascii(row)) else { continue };
            if useless(self.value(self.sum(&bounds), row.weight)) {
                continue;
            }
            let Some(f) = index.get(slot).and_then(|it| it.fields().get(usize::from(row.field))) else { continue };
            if let Some(s) = self.field_score(f, matcher, &bounds, |raw| useless(self.value(raw, f.weight))) {
                best = best.max(self.value(s, f.weight));
            }
        }
        if best < floor {
            0.0
        } else {
            best
        }
    }

    /// The highest score each atom can reach in a field, from its ASCII text
    /// and marks (the general bounds for other text), or `None` when some
    /// atom cannot match it.
    fn field_bounds(&self, ascii: Option<(&[u8], &[u8])>) -> Option<Bounds> {
        let mut bounds: Bounds = [0; MAX_ATOMS];
        for (b, a) in bounds.iter_mut().zip(&self.atoms) {
            *b = a.bound;
        }
        match (ascii, &self.needles) {
            (Some((text, marks)), Some(needles)) => {
                if !needles.in_order(text) {
                    return None;
                }
                let scan = needles.scan(text, marks);
                for (i, b) in bounds.iter_mut().enumerate() {
                    if let Some(tight) = needles.atom_bound(i, &scan) {
                        *b = tight;
                    }
                }
            }
            (Some((text, _)), None) if !self.may_match(text) => return None,
            _ => {}
        }
        Some(bounds)
    }

    /// Every atom occurs in order in the field's lower-cased ASCII text. Only
    /// a necessary condition.
    fn may_match(&self, text: &[u8]) -> bool {
        self.atoms.iter().all(|a| a.ascii.as_deref().is_none_or(|n| subsequence(n, text)))
    }

    /// The field's score (the sum over atoms, as `Pattern::score`), or `None`
    /// when an atom does not match or `hopeless(best still possible)` says the
    /// rest is not worth computing. `bounds`: each atom's highest score here.
    fn field_score(
        &self,
        f: &Field,
        matcher: &mut Matcher,
        bounds: &Bounds,
        hopeless: impl Fn(u32) -> bool,
    ) -> Option<u32> {
        let hay = f.text.slice(..);
        // Atoms are few: keep their scores on the stack.
        let mut scores = [0u32; MAX_ATOMS];
        let mut possible = self.sum(bounds);
        let mut sum = 0u32;
        for &i in &self.order {
            let (atom, info) = (&self.pattern.atoms[i], &self.atoms[i]);
            let s = match info.same_as.filter(|&j| j < MAX_ATOMS) {
                Some(j) => scores[j],
                // Long fields: every atom must match, as in Pattern::score; greedy keeps them linear.
                None if f.long => u32::from(matcher.fuzzy_match_greedy(hay, atom.needle_text())?),
                None => u32::from(atom.score(hay, matcher)?),
            };
            if let Some(slot) = scores.get_mut(i) {
                *slot = s;
            }
            sum += s;
            // (`possible` includes this atom's bound, which the score never exceeds.)
            possible = (possible + s).saturating_sub(bounds.get(i).copied().unwrap_or(info.bound));
            if hopeless(possible) {
                return None;
            }
        }
        Some(sum)
    }

    /// Items scoring at least `floor` (every item with a non-zero score when
    /// `floor` is 0), best first; equal scores keep index order. The
    /// reference the pruned rankings are checked against.
    #[cfg(test)]
    pub fn rank(&self, index: &Index, floor: f64) -> Vec<(f64, usize)> {
        MATCHER.with(|m| {
            let mut m = m.borrow_mut();
            let mut out: Vec<(f64, usize)> = index
                .iter()
                .filter_map(|(slot, _)| {
                    let s = self.score_slot(index, slot, &mut m, 0.0, floor);
                    (s > 0.0).then_some((s, slot))
                })
                .collect();
            out.sort_by(|a, b| b.0.total_cmp(&a.0));
            out
        })
    }
}

impl Fuzzy {
    /// Exactly the items scoring at least `threshold` and within `margin` of
    /// the best score (`local_margin` for the items `local` says are in the
    /// current project), leaving out those `skip` says, best first; equal
    /// scores keep index order. The floors rise as better items are found,
    /// so most fields are never scored.
    pub fn rank_near_best(
        &self,
        index: &Index,
        threshold: f64,
        margin: f64,
        local_margin: f64,
        local: impl Fn(usize) -> bool + Sync,
        skip: impl Fn(usize) -> bool + Sync,
    ) -> Vec<(f64, usize)> {
        let table = index.table();
        let candidates: Vec<usize> = table.slots_with_chars(self.mask).into_iter().filter(|&s| !skip(s)).collect();
        // The best score so far, shared by all threads (scores are
        // non-negative, so their bits order like their values).
        let shared_best = AtomicU64::new(0.0f64.to_bits());
        // Names first: a reference usually means a name, and a good name
        // score early lets the floor rule out most other fields unread.
        // Then the other fields, each item starting from its name score.
        let names: Vec<(f64, usize)> = self.near_pass(
            index,
            &candidates,
            1.0..f64::INFINITY,
            &[],
            threshold,
            (margin, local_margin),
            &local,
            &shared_best,
        );
        let parts = self.near_pass(
            index,
            &candidates,
            0.0..1.0,
            &names,
            threshold,
            (margin, local_margin),
            &local,
            &shared_best,
        );
        let best = parts.iter().map(|p| p.0).fold(0.0, f64::max);
        // Items kept while a floor was lower may be below the final floors.
        let (floor, local_floor) = (threshold.max(best - margin), threshold.max(best - local_margin));
        let mut out: Vec<(f64, usize)> =
            parts.into_iter().filter(|&(s, slot)| s >= floor || (s >= local_floor && local(slot))).collect();
        out.sort_by(|a, b| b.0.total_cmp(&a.0));
        out
    }

    /// One pass of [`Fuzzy::rank_near_best`] over the fields weighing
    /// `weights`: each candidate's score (at least its score in `known`,
    /// sorted by slot), where it can still be near the best, in slot order.
    #[allow(clippy::too_many_arguments)]
    fn near_pass(
        &self,
        index: &Index,
        candidates: &[usize],
        weights: std::ops::Range<f64>,
        known: &[(f64, usize)],
        threshold: f64,
        (margin, local_margin): (f64, f64),
        local: impl Fn(usize) -> bool + Sync,
        shared_best: &AtomicU64,
    ) -> Vec<(f64, usize)> {
        let parts = split_scan(candidates, |block| {
            MATCHER.with(|m| {
                let mut m = m.borrow_mut();
                let mut best = 0.0f64;
                let mut out: Vec<(f64, usize)> = Vec::new();
                for &slot in block {
                    let before = known.binary_search_by_key(&slot, |&(_, s)| s).map_or(0.0, |i| known[i].0);
                    let seen = best.max(f64::from_bits(shared_best.load(Ordering::Relaxed)));
                    let below = if local(slot) { local_margin } else { margin };
                    let floor = threshold.max(seen - below);
                    let s = self.score_fields(index, slot, &mut m, weights.clone(), floor, before);
                    if s > 0.0 {
                        best = best.max(s);
                        shared_best.fetch_max(s.to_bits(), Ordering::Relaxed);
                        out.push((s, slot));
                    }
                }
                out
            })
        });
        parts.into_iter().flatten().collect()
    }

    /// The `k` best items scoring at least `threshold` (and above 0) over
    /// fields weighing at least `min_weight`, with every item tied with the
    /// `k`-th: exactly the first entries of [`Fuzzy::rank`]'s list (for
    /// `min_weight` 0). The floor rises to the `k`-th score found, so most
    /// fields are never scored.
    pub fn rank_top(&self, index: &Index, threshold: f64, k: usize, min_weight: f64) -> Vec<(f64, usize)> {
        if k == 0 {
            return Vec::new();
        }
        let table = index.table();
        // The highest `k`-th score any part has seen: a part's `k`-th is
        // never above the whole index's.
        let shared = AtomicU64::new(0.0f64.to_bits());
        let parts = split_scan(&table.slots_with_chars(self.mask), |block| {
            MATCHER.with(|m| {
                let mut m = m.borrow_mut();
                // This part's `k` best scores, ascending.
                let mut top: Vec<f64> = Vec::with_capacity(k + 1);
                let mut out: Vec<(f64, usize)> = Vec::new();
                for &slot in block {
                    let own = if top.len() == k { top[0] } else { 0.0 };
                    let floor = own.max(f64::from_bits(shared.load(Ordering::Relaxed)));
                    let s = self.score_slot(index, slot, &mut m, min_weight, threshold.max(floor));
                    if s <= 0.0 {
                        continue;
                    }
                    out.push((s, slot));
                    let at = top.partition_point(|&x| x < s);
                    top.insert(at, s);
                    if top.len() > k {
                        top.remove(0);
                    }
                    if top.len() == k {
                        shared.fetch_max(top[0].to_bits(), Ordering::Relaxed);
                    }
                }
                out
            })
        });
        let mut all: Vec<(f64, usize)> = parts.into_iter().flatten().filter(|(s, _)| *s >= threshold).collect();
        all.sort_by(|a, b| b.0.total_cmp(&a.0));
        // The `k`-th score; ties with it stay.
        let kth = all.get(k - 1).map_or(0.0, |x| x.0);
        all.retain(|(s, _)| *s >= kth);
        all
    }
}

/// Run `part` over `slots`, split in blocks over up to four threads when
/// there are many; the parts' results come back in slot order.
fn split_scan<P: Send>(slots: &[usize], part: impl Fn(&[usize]) -> P + Sync) -> Vec<P> {
    if slots.len() < PARALLEL_SLOTS {
        return vec![part(slots)];
    }
    let blocks: Vec<&[usize]> = slots.chunks(BLOCK).collect();
    let parts = crate::threads::map_each(&blocks, 4, |b| part(b));
    // A block whose scoring panicked is scored again here.
    parts.into_iter().zip(&blocks).map(|(p, b)| p.unwrap_or_else(|| part(b))).collect()
}

/// From this many candidate items (with every character of the query) a
/// fuzzy lookup is split over a few threads; below it, starting a thread
/// costs more than it saves. (In tests sooner, so the split is checked.)
const PARALLEL_SLOTS: usize = if cfg!(test) { 64 } else { 2048 };
/// Items per unit of work when split.
const BLOCK: usize = if cfg!(test) { 16 } else { 128 };

/// `needle` occurs in order in `hay` (both lower-case ASCII). A plain byte
/// loop: fields are short, and a `memchr` call per needle byte cost more.
fn subsequence(needle: &[u8], hay: &[u8]) -> bool {
    let mut want = needle.iter();
    let Some(mut next) = want.next() else { return true };
    for b in hay {
        if b == next {
            match want.next() {
                Some(n) => next = n,
                None => return true,
            }
        }
    }
    false
}

#[cfg(test)]
#[path = "fuzzy_tests.rs"]
mod tests;
