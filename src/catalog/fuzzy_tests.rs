//! Tests of the fuzzy scoring: the shortcuts and pruned rankings against
//! the plain matcher.

use super::*;
use crate::catalog::index::{Item, ItemKey};
use nucleo_matcher::Utf32String;

/// The bound behind the early stop holds for the matcher's real scores,
/// optimal and greedy, and is reached by a match at a word start.
#[test]
fn atom_bound_holds_for_the_matcher() {
    let hays = [
        "auth refactor",
        "Auth-Refactor cache layer 17",
        "aaaa aaaa aaaa",
        "a/b/c:d;e,f  g",
        "xAuthRefactor_v2 Ünïcode résumé",
        "Please help with the cache layer in billing; it fails on retry",
        "A",
    ];
    let needles = ["a", "au", "auth", "aaaa", "arf", "cache layer", "résumé", "g", "v2", "zzz", "ab"];
    let mut m = Matcher::new(Config::DEFAULT);
    for n in needles {
        let p = Pattern::new(n, CaseMatching::Ignore, Normalization::Smart, AtomKind::Fuzzy);
        for atom in &p.atoms {
            let bound = MAX_PER_CHAR * atom.needle_text().len() as u32 + MAX_FIRST_EXTRA;
            for h in hays {
                let hay = Utf32String::from(h);
                for s in [atom.score(hay.slice(..), &mut m), m.fuzzy_match_greedy(hay.slice(..), atom.needle_text())]
                    .into_iter()
                    .flatten()
                {
                    assert!(u32::from(s) <= bound, "{n:?} in {h:?}: {s} > {bound}");
                }
            }
            let exact = Utf32String::from(atom.needle_text().to_string().as_str());
            assert_eq!(atom.score(exact.slice(..), &mut m).map(u32::from), Some(bound), "{n:?}");
        }
    }
}

/// The scoring before the shortcuts: every field (that has the query's
/// ASCII characters), every atom.
fn plain_score(q: &Fuzzy, item: &Item, m: &mut Matcher) -> f64 {
    let mut best = 0.0f64;
    for f in item.fields().iter().filter(|f| q.mask & !f.mask == 0) {
        let hay = f.text.slice(..);
        let score = if f.long {
            q.pattern
                .atoms
                .iter()
                .try_fold(0u32, |acc, atom| m.fuzzy_match_greedy(hay, atom.needle_text()).map(|s| acc + u32::from(s)))
        } else {
            q.pattern.score(hay, m)
        };
        if let Some(s) = score {
            best = best.max((s as f64 / q.perfect).min(1.0) * f.weight);
        }
    }
    best
}

fn index() -> Index {
    let mut index = Index::default();
    add(&mut index, 0..300, 0);
    index
}

fn add(index: &mut Index, range: std::ops::Range<usize>, shift: usize) {
    let words = [
        "auth",
        "refactor",
        "cache",
        "Layer",
        "billing",
        "résumé",
        "日本語",
        "avatar",
        "email",
        "v2",
        "AuthRefactor",
        "src/cache_v2.rs",
    ];
    for i in range {
        let w = |k: usize| words[(i * 7 + k * 3 + i / 10 + shift) % words.len()];
        let name = (i % 5 != 0).then(|| format!("{} {}-{} {i}", w(0), w(1), w(2)));
        let entry = crate::catalog::CatalogEntry {
            id: format!("{i:08x}-0000"),
            path: format!("/s/{i}.jsonl").into(),
            name,
            description: (i % 3 == 0)
                .then(|| format!("Work on the {} {} of {} and more text to make it long", w(3), w(4), w(5))),
            summary: None,
            tags: if i % 4 == 0 { vec![w(6).to_string(), w(7).to_string()] } else { Vec::new() },
            cwd: "/p".into(),
            created: String::new(),
            modified_ms: 0,
            parent_session: None,
            first_message: Some(format!("Please help with the {} {}; it fails on {} again", w(8), w(9), w(1))),
            has_meta: false,
        };
        let meta_name = (i % 7 == 0).then(|| format!("{} {}", w(2), w(5)));
        index.upsert(Item::new(ItemKey::Orphan(i.to_string()), entry, meta_name.as_deref()));
    }
}

/// Ranking with the shortcuts equals ranking without them: all scores with
/// floor 0, and exactly the items at or above any floor.
#[test]
fn shortcuts_change_no_score() {
    let mut index = index();
    check(&index);
    // The flat table follows changes: replaced, removed and new items.
    add(&mut index, 100..200, 3);
    for i in 200..260 {
        index.remove(&ItemKey::Orphan(i.to_string()));
    }
    add(&mut index, 300..340, 1);
    check(&index);
    // Enough churn to rebuild it.
    add(&mut index, 0..340, 2);
    check(&index);
}

fn check(index: &Index) {
    let queries = [
        "auth",
        "ath rfactor",
        "cche lyer",
        "avatar avatar",
        "resume",
        "日本",
        "pls hlp",
        "v2 e",
        "zz",
        "a",
        "emal avtar bllng",
        "arf",
        "cache.rs",
        "src/cche",
        "athrf v2",
    ];
    let mut m = Matcher::new(Config::DEFAULT);
    for q in queries {
        let Some(f) = Fuzzy::new(q) else { continue };
        let mut want: Vec<(f64, usize)> =
            index.iter().map(|(slot, it)| (plain_score(&f, it, &mut m), slot)).filter(|(s, _)| *s > 0.0).collect();
        want.sort_by(|a, b| b.0.total_cmp(&a.0));
        assert_eq!(f.rank(index, 0.0), want, "{q}");
        assert_eq!(f.rank_top(index, 0.0, 3, 0.0), top(&want, 3), "{q}: top 3");
        for floor in [0.3, 0.6, 0.8] {
            let above: Vec<(f64, usize)> = want.iter().copied().filter(|(s, _)| *s >= floor).collect();
            assert_eq!(f.rank(index, floor), above, "{q} at {floor}");
            for (margin, local_margin) in [(0.0, 0.0), (0.1, 0.1), (0.23, 0.23), (0.03, 0.23), (0.0, 0.5)] {
                let local = |slot: usize| slot % 3 == 0;
                // The items of a ranking near its best one.
                let near = |ranked: &[(f64, usize)]| -> Vec<(f64, usize)> {
                    let top = ranked.first().map_or(0.0, |x| x.0);
                    let near =
                        |&(s, slot): &(f64, usize)| s >= top - margin || (local(slot) && s >= top - local_margin);
                    ranked.iter().copied().filter(near).collect()
                };
                let got = f.rank_near_best(index, floor, margin, local_margin, local, |_| false);
                assert_eq!(got, near(&above), "{q} at {floor}, margins {margin} {local_margin}");
                // Skipped items neither appear nor raise the floors.
                let skip = |slot: usize| slot % 5 == 1;
                let kept: Vec<(f64, usize)> = above.iter().copied().filter(|&(_, slot)| !skip(slot)).collect();
                assert_eq!(f.rank_near_best(index, floor, margin, local_margin, local, skip), near(&kept), "{q}: skip");
            }
            for k in [1, 3, 10, 40] {
                assert_eq!(f.rank_top(index, floor, k, 0.0), top(&above, k), "{q} at {floor}, top {k}");
            }
        }
    }
}

/// The first `k` of a ranking, with the items tied with the last one.
fn top(ranked: &[(f64, usize)], k: usize) -> Vec<(f64, usize)> {
    let kth = ranked.get(k - 1).map_or(0.0, |x| x.0);
    ranked.iter().copied().filter(|&(s, _)| s >= kth).collect()
}

/// Scores falling with the slot: the floor must not rise past the
/// `k`-th score before `k` items are found, in any block.
#[test]
fn top_k_keeps_exactly_the_best() {
    let mut index = Index::default();
    for i in 0..120usize {
        let name = format!("a{}uth", "x".repeat(i));
        let entry = crate::catalog::CatalogEntry {
            id: format!("{i:08x}-0001"),
            path: format!("/s/{i}.jsonl").into(),
            name: Some(name),
            description: None,
            summary: None,
            tags: Vec::new(),
            cwd: "/p".into(),
            created: String::new(),
            modified_ms: 0,
            parent_session: None,
            first_message: None,
            has_meta: false,
        };
        index.upsert(Item::new(ItemKey::Orphan(i.to_string()), entry, None));
    }
    let f = Fuzzy::new("auth").expect("a query");
    let ranked = f.rank(&index, 0.0);
    assert!(ranked.windows(2).any(|w| w[0].0 > w[1].0), "scores must differ for this test");
    for k in [2, 3, 5, 17] {
        assert_eq!(f.rank_top(&index, 0.0, k, 0.0), top(&ranked, k), "top {k}");
    }
}

#[test]
fn subsequence_in_order() {
    assert!(subsequence(b"arf", b"auth refactor"));
    assert!(!subsequence(b"fra", b"auth refactor"));
    assert!(subsequence(b"", b""));
    assert!(!subsequence(b"a", b""));
}
