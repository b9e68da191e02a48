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

/// An extractive answer: markdown, confidence and citations.
pub fn answer(name: &str, assembled: &Assembled) -> (String, Confidence, Vec<Citation>) {
    let query: Vec<&str> = {
        let mut seen = HashSet::new();
        assembled
            .query_tokens
            .iter()
            .map(String::as_str)
            .filter(|q| seen.insert(*q))
            .collect()
    };
    // Every quotable item, with its chronological position and window score,
    // and for tool calls the results that follow them.
    let mut items: Vec<(&Item, usize, f64)> =
        assembled.summaries.iter().map(|s| (s, 0, 0.0)).collect();
    let mut results_of: HashMap<*const Item, Vec<&Item>> = HashMap::new();
    for (k, chosen) in assembled.chosen.iter().enumerate() {
        let window = &chosen.window.items;
        for (j, item) in window.iter().enumerate() {
            items.push((item, k + 1, chosen.score));
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
    let term_sets: Vec<HashSet<String>> = items
        .iter()
        .map(|(i, _, _)| tokenize(&i.text).into_iter().collect())
        .collect();
    let weights = term_weights(&query, &term_sets);
    let total_weight: f64 = weights.values().sum();
    let max_window = items.iter().map(|i| i.2).fold(0.0f64, f64::max).max(1e-9);

    // (score, matched weight, position, item)
    let mut candidates: Vec<(f64, f64, usize, &Item)> = Vec::new();
    for ((item, position, window_score), terms) in items.iter().zip(&term_sets) {
        let matched: f64 = query
            .iter()
            .filter(|q| terms.contains(**q))
            .filter_map(|q| weights.get(q))
            .sum();
        if matched <= 0.0 {
            continue;
        }
        // A bare tool call is rarely the answer itself; its result or the reply is.
        let kind = if item.text.starts_with("→ ") {
            0.6
        } else {
            1.0
        };
        let score = matched * kind + 0.1 * total_weight * window_score / max_window;
        candidates.push((score, matched, *position, item));
    }
    candidates.sort_by(|a, b| b.0.total_cmp(&a.0).then(b.2.cmp(&a.2)));

    let cite = |item: &Item| Citation {
        entry_id: item.entry_id.clone(),
        role: base_role(&item.role),
        excerpt: excerpt_weighted(quotable(item), &weights),
    };
    let mut citations: Vec<Citation> = Vec::new();
    let mut best_coverage = 0.0f64;
    for (_, matched, _, item) in &candidates {
        if citations.len() >= OFFLINE_CITATIONS {
            break;
        }
        if citations.iter().any(|c| c.entry_id == item.entry_id) {
            continue;
        }
        if total_weight > 0.0 {
            best_coverage = best_coverage.max(matched / total_weight);
        }
        citations.push(cite(item));
        // A matching tool call usually means the answer is in what it returned.
        for result in results_of
            .get(&(*item as *const Item))
            .into_iter()
            .flatten()
        {
            if citations.len() < MAX_CITATIONS
                && !citations.iter().any(|c| c.entry_id == result.entry_id)
            {
                citations.push(cite(result));
            }
        }
    }
    let found = !citations.is_empty();
    if !found {
        // Nothing matches: show where the session ended up, so the caller can judge.
        let fallback = assembled
            .chosen
            .iter()
            .rev()
            .flat_map(|c| c.window.items.iter().rev())
            .find(|i| i.role.starts_with("user") || i.role.starts_with("assistant"))
            .or_else(|| assembled.summaries.last());
        citations.extend(fallback.map(cite));
    }
    let confidence = if found && best_coverage >= 0.6 {
        Confidence::Medium
    } else {
        Confidence::Low
    };
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
    for c in &citations {
        md.push_str(&format!(
            "\n- [{}] {}: {}",
            c.entry_id,
            c.role,
            c.excerpt.replace('\n', " ")
        ));
    }
    (md, confidence, citations)
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
