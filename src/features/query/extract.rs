//! The offline answer (`local/extractive`): the passages of the assembled
//! context that best match the question, quoted with their entry ids.

use std::collections::{HashMap, HashSet};

use super::context::Assembled;
use super::tokenize::tokenize;
use super::windows::Item;
use super::{Citation, Confidence};

/// Longest excerpt of a citation, in chars.
pub const MAX_EXCERPT_CHARS: usize = 280;
/// Passages an offline answer picks by score...
const OFFLINE_CITATIONS: usize = 5;
/// ...plus, for a picked tool call, up to this many of its results...
const MAX_FOLLOWED_RESULTS: usize = 2;
/// ...within the citation limit of model answers.
const MAX_CITATIONS: usize = 8;

/// An extractive answer, before it becomes a [`super::QueryAnswer`].
pub struct Extracted {
    pub markdown: String,
    pub confidence: Confidence,
    pub citations: Vec<Citation>,
}

/// An extractive answer: the best-matching passages, quoted.
pub fn answer(name: &str, assembled: &Assembled) -> Extracted {
    let query = distinct_query_terms(assembled);
    let quotable = Quotable::of(assembled);
    let term_sets: Vec<HashSet<String>> = quotable
        .items
        .iter()
        .map(|q| tokenize(&q.item.text).into_iter().collect())
        .collect();
    let weights = term_weights(&query, &term_sets);
    let candidates = rank(&query, &quotable.items, &term_sets, &weights);
    let mut picked = pick(&candidates, &quotable, &weights);
    let found = !picked.citations.is_empty();
    if !found {
        // Nothing matches: show where the session ended up, so the caller can judge.
        picked
            .citations
            .extend(newest_exchange(assembled).map(|item| cite(item, &weights)));
    }
    let confidence = if found && picked.best_coverage >= 0.6 {
        Confidence::Medium
    } else {
        Confidence::Low
    };
    Extracted {
        markdown: markdown(name, found, &picked.citations),
        confidence,
        citations: picked.citations,
    }
}

/// The question's terms, each once, in order.
fn distinct_query_terms(assembled: &Assembled) -> Vec<&str> {
    let mut seen = HashSet::new();
    assembled
        .query_tokens
        .iter()
        .map(String::as_str)
        .filter(|q| seen.insert(*q))
        .collect()
}

/// An item that can be quoted, with where it came from.
struct Candidate<'a> {
    item: &'a Item,
    /// 0 for the session's summaries, k + 1 for the k-th chosen window
    /// (chronological: a later one wins a tie).
    position: usize,
    /// Its window's score (0 for summaries).
    window_score: f64,
}

/// Every quotable item of the context, and for each tool call the results
/// that follow it in its window.
struct Quotable<'a> {
    items: Vec<Candidate<'a>>,
    results_of: HashMap<*const Item, Vec<&'a Item>>,
}

impl<'a> Quotable<'a> {
    fn of(assembled: &'a Assembled) -> Quotable<'a> {
        let mut items: Vec<Candidate<'a>> = assembled
            .summaries
            .iter()
            .map(|item| Candidate {
                item,
                position: 0,
                window_score: 0.0,
            })
            .collect();
        let mut results_of = HashMap::new();
        for (k, chosen) in assembled.chosen.iter().enumerate() {
            let window = &chosen.window.items;
            for (j, item) in window.iter().enumerate() {
                items.push(Candidate {
                    item,
                    position: k + 1,
                    window_score: chosen.score,
                });
                if item.role.starts_with("assistant") && item.text.contains("→ ") {
                    let results: Vec<&Item> = window[j + 1..]
                        .iter()
                        .take_while(|i| i.role == "toolResult")
                        .take(MAX_FOLLOWED_RESULTS)
                        .collect();
                    results_of.insert(item as *const Item, results);
                }
            }
        }
        Quotable { items, results_of }
    }
}

/// A candidate that matches the question, scored.
struct Scored<'a> {
    score: f64,
    /// The rarity weight of the question's terms it holds.
    matched: f64,
    position: usize,
    item: &'a Item,
}

/// The candidates holding a question term, best first: matched rarity, a
/// bare tool call discounted, plus a little of their window's score.
fn rank<'a>(
    query: &[&str],
    candidates: &[Candidate<'a>],
    term_sets: &[HashSet<String>],
    weights: &HashMap<&str, f64>,
) -> Vec<Scored<'a>> {
    let total_weight: f64 = weights.values().sum();
    let max_window = candidates
        .iter()
        .map(|c| c.window_score)
        .fold(0.0f64, f64::max)
        .max(1e-9);
    let mut scored: Vec<Scored<'a>> = Vec::new();
    for (candidate, terms) in candidates.iter().zip(term_sets) {
        let matched: f64 = query
            .iter()
            .filter(|q| terms.contains(**q))
            .filter_map(|q| weights.get(q))
            .sum();
        if matched <= 0.0 {
            continue;
        }
        // A bare tool call is rarely the answer itself; its result or the reply is.
        let kind = if candidate.item.text.starts_with("→ ") {
            0.6
        } else {
            1.0
        };
        let window = 0.1 * total_weight * candidate.window_score / max_window;
        scored.push(Scored {
            score: matched * kind + window,
            matched,
            position: candidate.position,
            item: candidate.item,
        });
    }
    scored.sort_by(|a, b| {
        b.score
            .total_cmp(&a.score)
            .then(b.position.cmp(&a.position))
    });
    scored
}

/// The citations picked, and how much of the question the best one covers.
struct Picked {
    citations: Vec<Citation>,
    best_coverage: f64,
}

/// The best [`OFFLINE_CITATIONS`] distinct entries, each matching tool call
/// followed by its results (the answer is usually in what it returned).
fn pick(scored: &[Scored<'_>], quotable: &Quotable<'_>, weights: &HashMap<&str, f64>) -> Picked {
    let total_weight: f64 = weights.values().sum();
    let mut citations: Vec<Citation> = Vec::new();
    let mut best_coverage = 0.0f64;
    let cited =
        |citations: &[Citation], item: &Item| citations.iter().any(|c| c.entry_id == item.entry_id);
    for candidate in scored {
        if citations.len() >= OFFLINE_CITATIONS {
            break;
        }
        if cited(&citations, candidate.item) {
            continue;
        }
        if total_weight > 0.0 {
            best_coverage = best_coverage.max(candidate.matched / total_weight);
        }
        citations.push(cite(candidate.item, weights));
        let results = quotable.results_of.get(&(candidate.item as *const Item));
        for result in results.into_iter().flatten() {
            if citations.len() < MAX_CITATIONS && !cited(&citations, result) {
                citations.push(cite(result, weights));
            }
        }
    }
    Picked {
        citations,
        best_coverage,
    }
}

/// The newest user or assistant item of the context (else its last summary).
fn newest_exchange(assembled: &Assembled) -> Option<&Item> {
    assembled
        .chosen
        .iter()
        .rev()
        .flat_map(|c| c.window.items.iter().rev())
        .find(|i| i.role.starts_with("user") || i.role.starts_with("assistant"))
        .or_else(|| assembled.summaries.last())
}

fn cite(item: &Item, weights: &HashMap<&str, f64>) -> Citation {
    Citation {
        entry_id: item.entry_id.clone(),
        role: base_role(&item.role),
        excerpt: excerpt_weighted(quotable(item), weights),
    }
}

/// The answer's markdown: what it is, then one line per citation.
fn markdown(name: &str, found: bool, citations: &[Citation]) -> String {
    let mut md = String::from(
        "No model was used (offline extractive answer, `local/extractive`): below are the passages of the session \
         that best match the question, quoted verbatim.",
    );
    if !found {
        md.push_str(&format!(
            "\n\nNothing in session \"{name}\" matches the question's terms; the newest exchange is shown instead."
        ));
    }
    md.push('\n');
    for c in citations {
        md.push_str(&format!(
            "\n- [{}] {}: {}",
            c.entry_id,
            c.role,
            c.excerpt.replace('\n', " ")
        ));
    }
    md
}

/// The entry's own text: tool results lose the `(tool) ` label the context adds.
fn quotable(item: &Item) -> &str {
    if item.role == "toolResult" && item.text.starts_with('(') {
        if let Some((_, rest)) = item.text.split_once(") ") {
            return rest;
        }
    }
    &item.text
}

/// `assistant (part 2/3)` → `assistant`.
pub fn base_role(role: &str) -> String {
    role.split(" (part").next().unwrap_or(role).to_string()
}

/// BM25-style rarity of each query term among the quotable items.
fn term_weights<'a>(query: &[&'a str], items: &[HashSet<String>]) -> HashMap<&'a str, f64> {
    let n = items.len() as f64;
    query
        .iter()
        .map(|q| {
            let df = items.iter().filter(|t| t.contains(*q)).count() as f64;
            (*q, (1.0 + (n - df + 0.5) / (df + 0.5)).ln())
        })
        .collect()
}

/// Up to [`MAX_EXCERPT_CHARS`] chars of `text`: the span holding the most
/// (rarity-weighted) distinct query terms.
pub fn excerpt_weighted(text: &str, weights: &HashMap<&str, f64>) -> String {
    let text = text.trim();
    let chars: Vec<(usize, char)> = text.char_indices().collect();
    if chars.len() <= MAX_EXCERPT_CHARS {
        return text.to_string();
    }
    // ASCII lower-casing keeps byte offsets, so positions map back to `text`.
    let lower = text.to_ascii_lowercase();
    let mut hits: Vec<(usize, &str)> = Vec::new();
    for q in weights
        .keys()
        .filter(|q| q.chars().count() > 1 || !q.is_ascii())
    {
        hits.extend(lower.match_indices(*q).take(200).map(|(pos, _)| (pos, *q)));
    }
    hits.sort_unstable();
    let char_at = |byte: usize| chars.partition_point(|&(b, _)| b < byte);
    let budget = MAX_EXCERPT_CHARS - 2;
    let mut best = (0.0f64, 0usize);
    for (k, &(pos, _)) in hits.iter().enumerate() {
        let anchor = char_at(pos);
        let end_char = anchor + budget - 40;
        let mut seen: HashSet<&str> = HashSet::new();
        for &(p, q) in &hits[k..] {
            if char_at(p) > end_char {
                break;
            }
            seen.insert(q);
        }
        let score: f64 = seen
            .iter()
            .map(|q| weights.get(q).copied().unwrap_or(0.0))
            .sum();
        if score > best.0 {
            best = (score, anchor);
        }
    }
    let start = best
        .1
        .saturating_sub(40)
        .min(chars.len().saturating_sub(budget));
    let end = (start + budget).min(chars.len());
    let mut out = String::new();
    if start > 0 {
        out.push('…');
    }
    out.extend(chars[start..end].iter().map(|&(_, c)| c));
    if end < chars.len() {
        out.push('…');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn excerpts_are_bounded_and_centred_on_the_hit() {
        let text = format!(
            "{} the token bucket lives in src/limiter.rs {}",
            "a ".repeat(400),
            "b ".repeat(400)
        );
        let q: HashMap<&str, f64> = [("limiter", 1.0)].into_iter().collect();
        let e = excerpt_weighted(&text, &q);
        assert!(
            e.chars().count() <= MAX_EXCERPT_CHARS,
            "{}",
            e.chars().count()
        );
        assert!(e.contains("src/limiter.rs"), "{e}");
        let unicode = "日本語".repeat(200);
        assert!(excerpt_weighted(&unicode, &q).chars().count() <= MAX_EXCERPT_CHARS);
    }
}
