//! The offline answer (`local/extractive`): the passages of the assembled
//! context that best match the question, quoted with their entry ids.

use std::collections::HashSet;

use super::context::Assembled;
use super::tokenize::tokenize;
use super::windows::Item;
use super::{Citation, Confidence};

/// Longest excerpt of a citation, in chars.
pub const MAX_EXCERPT_CHARS: usize = 280;
/// Citations an offline answer gives.
const OFFLINE_CITATIONS: usize = 5;

/// An extractive answer: markdown, confidence and citations.
pub fn answer(name: &str, assembled: &Assembled) -> (String, Confidence, Vec<Citation>) {
    let query: HashSet<&str> = assembled.query_tokens.iter().map(String::as_str).collect();
    // (window score, matched terms, chronological position, item)
    let mut candidates: Vec<(f64, usize, usize, &Item)> = Vec::new();
    let mut position = 0;
    for chosen in &assembled.chosen {
        for item in &chosen.window.items {
            position += 1;
            let terms: HashSet<String> = tokenize(&item.text).into_iter().collect();
            let matched = query.iter().filter(|q| terms.contains(**q)).count();
            if matched > 0 {
                candidates.push((chosen.score, matched, position, item));
            }
        }
    }
    for summary in &assembled.summaries {
        let terms: HashSet<String> = tokenize(&summary.text).into_iter().collect();
        let matched = query.iter().filter(|q| terms.contains(**q)).count();
        if matched > 0 {
            candidates.push((0.0, matched, 0, summary));
        }
    }
    candidates.sort_by(|a, b| b.1.cmp(&a.1).then(b.0.total_cmp(&a.0)).then(b.2.cmp(&a.2)));

    let mut citations: Vec<Citation> = Vec::new();
    let mut best_coverage = 0.0f64;
    for (_, matched, _, item) in &candidates {
        if citations.len() >= OFFLINE_CITATIONS {
            break;
        }
        if citations.iter().any(|c| c.entry_id == item.entry_id && c.excerpt == excerpt(&item.text, &query)) {
            continue;
        }
        if !query.is_empty() {
            best_coverage = best_coverage.max(*matched as f64 / query.len() as f64);
        }
        citations.push(Citation {
            entry_id: item.entry_id.clone(),
            role: base_role(&item.role),
            excerpt: excerpt(&item.text, &query),
        });
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
        if let Some(item) = fallback {
            citations.push(Citation {
                entry_id: item.entry_id.clone(),
                role: base_role(&item.role),
                excerpt: excerpt(&item.text, &query),
            });
        }
    }
    let confidence = if found && best_coverage >= 0.6 { Confidence::Medium } else { Confidence::Low };
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
        md.push_str(&format!("\n- [{}] {}: {}", c.entry_id, c.role, c.excerpt.replace('\n', " ")));
    }
    (md, confidence, citations)
}

/// `assistant (part 2/3)` → `assistant`.
pub fn base_role(role: &str) -> String {
    role.split(" (part").next().unwrap_or(role).to_string()
}

/// Up to [`MAX_EXCERPT_CHARS`] chars of `text` around its first query term.
pub fn excerpt(text: &str, query: &HashSet<&str>) -> String {
    let text = text.trim();
    if text.chars().count() <= MAX_EXCERPT_CHARS {
        return text.to_string();
    }
    // ASCII lower-casing keeps byte offsets, so positions map back to `text`.
    let lower = text.to_ascii_lowercase();
    let hit = query.iter().filter(|q| q.chars().count() > 1).filter_map(|q| lower.find(*q)).min().unwrap_or(0);
    let chars: Vec<(usize, char)> = text.char_indices().collect();
    let hit_char = chars.iter().position(|&(b, _)| b >= hit).unwrap_or(0);
    let budget = MAX_EXCERPT_CHARS - 2;
    let start = hit_char.saturating_sub(80).min(chars.len().saturating_sub(budget));
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
        let text = format!("{} the token bucket lives in src/limiter.rs {}", "a ".repeat(400), "b ".repeat(400));
        let q: HashSet<&str> = ["limiter"].into_iter().collect();
        let e = excerpt(&text, &q);
        assert!(e.chars().count() <= MAX_EXCERPT_CHARS, "{}", e.chars().count());
        assert!(e.contains("src/limiter.rs"), "{e}");
        let unicode = "日本語".repeat(200);
        assert!(excerpt(&unicode, &q).chars().count() <= MAX_EXCERPT_CHARS);
    }
}
