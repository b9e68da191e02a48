//! The context a question is answered from, assembled under a token budget
//! (chars/4, as pi estimates): session header, the meta file's index, the
//! summaries on the branch, the windows most relevant to the question and
//! the most recent turns. Only the active branch is ever eligible.

use crate::text::{clip, Keep};
use std::collections::BTreeSet;

use super::bm25;
use super::tokenize::tokenize;
use super::windows::{BranchDoc, Item, Window};
use crate::session::utf16_len;
use crate::store::meta::SessionMeta;

/// Share of the budget the meta index may take.
const META_SHARE: f64 = 0.15;
/// Share of the budget the branch summaries may take.
const SUMMARY_SHARE: f64 = 0.20;
/// Share of the budget kept for the newest turns.
const RECENT_SHARE: f64 = 0.20;
/// Summaries shorter than this after cutting are not worth including.
const MIN_SUMMARY_CHARS: usize = 200;

/// pi's token estimate: UTF-16 length / 4, rounded up.
pub fn estimate_tokens(text: &str) -> usize {
    utf16_len(text).div_ceil(4)
}

/// Who the session is, for the header.
#[derive(Debug, Clone, Default)]
pub struct SessionHead {
    pub id: String,
    pub name: String,
    pub cwd: String,
    pub created: String,
}

/// A window chosen for the context, with why.
#[derive(Debug, Clone)]
pub struct Chosen {
    pub window: Window,
    pub score: f64,
    /// Chosen as one of the newest turns rather than for relevance.
    pub recent: bool,
}

/// The assembled context.
#[derive(Debug, Clone)]
pub struct Assembled {
    pub text: String,
    /// [`estimate_tokens`] of `text`.
    pub tokens: usize,
    /// Every entry id that appears in `text`.
    pub entry_ids: BTreeSet<String>,
    /// Chosen windows, chronological.
    pub chosen: Vec<Chosen>,
    /// Summaries included (possibly cut).
    pub summaries: Vec<Item>,
    /// The question's tokens, for extractive answers.
    pub query_tokens: Vec<String>,
    pub total_windows: usize,
}

/// Assemble the context for `question` within `max_tokens`.
pub fn assemble(
    head: &SessionHead,
    meta: Option<&SessionMeta>,
    doc: &BranchDoc,
    question: &str,
    max_tokens: usize,
) -> Assembled {
    let budget = max_tokens.saturating_mul(4);
    let mut entry_ids = BTreeSet::new();

    let mut header = format!("Session \"{}\" (id {})", head.name, head.id);
    if !head.cwd.is_empty() {
        header.push_str(&format!("\nProject: {}", head.cwd));
    }
    if !head.created.is_empty() {
        header.push_str(&format!("\nStarted: {}", head.created));
    }
    header.push_str(
        "\nOnly the session's active branch is shown. Lines start with [entryId] role.\n",
    );
    let header = clip(&header, budget / 10, Keep::Head);
    let mut used = utf16_len(&header);

    let meta_text = meta
        .map(|m| render_meta(m, ((budget as f64) * META_SHARE) as usize))
        .unwrap_or_default();
    used += utf16_len(&meta_text);

    // The newest summary first: compaction summaries are cumulative.
    let summary_budget = ((budget as f64) * SUMMARY_SHARE) as usize;
    let mut summaries: Vec<Item> = Vec::new();
    let mut summary_used = 0;
    for s in doc.summaries.iter().rev() {
        let room = summary_budget.saturating_sub(summary_used);
        let overhead = s.render_len() - utf16_len(&s.text) + 1;
        if room < MIN_SUMMARY_CHARS + overhead {
            break;
        }
        let text = clip(&s.text, room - overhead, Keep::Head);
        let it = Item {
            entry_id: s.entry_id.clone(),
            role: s.role.clone(),
            text,
        };
        summary_used += it.render_len() + 1;
        summaries.push(it);
    }
    summaries.reverse();
    used += summary_used;

    let query_tokens = tokenize(question);
    let docs: Vec<&[String]> = doc.windows.iter().map(|w| w.tokens.as_slice()).collect();
    let scores = with_turn_neighbours(&doc.windows, &bm25::scores(&docs, &query_tokens));

    let mut remaining = budget.saturating_sub(used + 200);
    let mut picked: Vec<Option<(f64, bool)>> = vec![None; doc.windows.len()];
    let recent_reserve = (((budget as f64) * RECENT_SHARE) as usize).min(remaining);

    // Relevant windows, best first, leaving the reserve for the newest turns.
    let mut ranked: Vec<usize> = (0..doc.windows.len())
        .filter(|&i| scores[i] > 0.0)
        .collect();
    ranked.sort_by(|&a, &b| scores[b].total_cmp(&scores[a]).then(b.cmp(&a)));
    let mut relevant_room = remaining.saturating_sub(recent_reserve);
    for &i in &ranked {
        let len = doc.windows[i].render_len() + 2;
        if len <= relevant_room {
            relevant_room -= len;
            remaining -= len;
            picked[i] = Some((scores[i], false));
        }
    }
    // Newest turns into the reserve and whatever relevance left over, then
    // any remaining room goes to the next-best windows.
    for i in (0..doc.windows.len()).rev() {
        if picked[i].is_some() {
            continue;
        }
        let len = doc.windows[i].render_len() + 2;
        if len > remaining {
            break;
        }
        remaining -= len;
        picked[i] = Some((scores[i], true));
    }
    // A single oversized newest window still shows its first items.
    let mut partial: Option<Window> = None;
    if picked.iter().all(Option::is_none) {
        if let Some(last) = doc.windows.last() {
            let mut items = Vec::new();
            let mut room = remaining;
            for it in &last.items {
                let len = it.render_len() + 1;
                if len > room {
                    let overhead = len - utf16_len(&it.text);
                    if room > overhead + 40 {
                        let text = clip(&it.text, room - overhead, Keep::Head);
                        items.push(Item { text, ..it.clone() });
                    }
                    break;
                }
                room -= len;
                items.push(it.clone());
            }
            if !items.is_empty() {
                partial = Some(Window {
                    index: last.index,
                    turn: last.turn,
                    items,
                    tokens: last.tokens.clone(),
                });
            }
        }
    }

    let mut chosen: Vec<Chosen> = picked
        .iter()
        .enumerate()
        .filter_map(|(i, p)| {
            p.map(|(score, recent)| Chosen {
                window: doc.windows[i].clone(),
                score,
                recent,
            })
        })
        .collect();
    if let Some(window) = partial {
        let score = scores.get(window.index).copied().unwrap_or(0.0);
        chosen.push(Chosen {
            window,
            score,
            recent: true,
        });
    }

    let mut text = header;
    if !meta_text.is_empty() {
        text.push_str("\n## Index of the session\n");
        text.push_str(&meta_text);
    }
    if !summaries.is_empty() {
        text.push_str("\n## Summaries on the branch\n");
        for s in &summaries {
            text.push_str(&s.render());
            text.push('\n');
            entry_ids.insert(s.entry_id.clone());
        }
    }
    if !chosen.is_empty() {
        let all = chosen.len() == doc.windows.len();
        text.push_str(if all {
            "\n## Conversation (whole branch)\n"
        } else {
            "\n## Conversation excerpts (chronological; … marks omitted turns)\n"
        });
        let mut next_index = 0;
        for c in &chosen {
            if c.window.index > next_index {
                text.push_str("…\n");
            }
            for it in &c.window.items {
                text.push_str(&it.render());
                text.push('\n');
                entry_ids.insert(it.entry_id.clone());
            }
            next_index = c.window.index + 1;
        }
        if next_index < doc.windows.len() {
            text.push_str("…\n");
        }
    }
    let tokens = estimate_tokens(&text);
    Assembled {
        text,
        tokens,
        entry_ids,
        chosen,
        summaries,
        query_tokens,
        total_windows: doc.windows.len(),
    }
}

/// A turn split into several windows often asks in one and answers in the
/// next: a window inherits part of its same-turn neighbours' relevance.
fn with_turn_neighbours(windows: &[Window], scores: &[f64]) -> Vec<f64> {
    let same_turn = |a: usize, b: usize| windows[a].turn == windows[b].turn;
    (0..scores.len())
        .map(|i| {
            let mut s = scores[i];
            if i > 0 && same_turn(i - 1, i) {
                s = s.max(0.5 * scores[i - 1]);
            }
            if i + 1 < scores.len() && same_turn(i, i + 1) {
                s = s.max(0.3 * scores[i + 1]);
            }
            s
        })
        .collect()
}

fn render_meta(meta: &SessionMeta, max: usize) -> String {
    let mut out = String::new();
    let mut line = |label: &str, value: &str| {
        if !value.trim().is_empty() {
            out.push_str(&format!("{label}: {}\n", value.trim()));
        }
    };
    line("Name", &meta.name);
    line("Description", &meta.description);
    line("Summary", &meta.summary);
    line("Tags", &meta.tags.join(", "));
    line("Decisions", &meta.decisions.join("; "));
    line("Open tasks", &meta.open_tasks.join("; "));
    if let Some(files) = &meta.files {
        line("Files modified", &files.modified.join(", "));
    }
    line("Indexed at", &meta.updated_at);
    clip(&crate::redact::redact(&out), max, Keep::Head)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn doc(n: usize) -> BranchDoc {
        let windows = (0..n)
            .map(|i| {
                let text = format!("turn {i} filler {}", "lorem ipsum dolor ".repeat(50));
                let text = if i == 3 {
                    format!("{text} the zeppelin hangar is in Friedrichshafen")
                } else {
                    text
                };
                let items = vec![Item {
                    entry_id: format!("e{i:04}"),
                    role: "user".into(),
                    text: text.clone(),
                }];
                Window {
                    index: i,
                    turn: i,
                    items,
                    tokens: tokenize(&text),
                }
            })
            .collect();
        let summaries = vec![Item {
            entry_id: "c0".into(),
            role: "compaction".into(),
            text: "Summary text".into(),
        }];
        BranchDoc { windows, summaries }
    }

    #[test]
    fn relevant_and_newest_windows_fit_the_budget_in_order() {
        let head = SessionHead {
            id: "s1".into(),
            name: "Zeppelins".into(),
            ..Default::default()
        };
        let a = assemble(&head, None, &doc(50), "Where is the zeppelin hangar?", 1000);
        assert!(a.tokens <= 1000, "{}", a.tokens);
        assert!(
            a.entry_ids.contains("e0003")
                && a.entry_ids.contains("e0049")
                && a.entry_ids.contains("c0")
        );
        let (p3, p49) = (
            a.text.find("[e0003]").unwrap(),
            a.text.find("[e0049]").unwrap(),
        );
        assert!(p3 < p49, "not chronological");
        assert!(a.text.contains("…\n"), "omissions are not marked");
        assert!(!a.entry_ids.contains("e0010"));
    }

    #[test]
    fn split_turns_pass_relevance_to_their_neighbours() {
        let mut d = doc(3);
        for w in &mut d.windows {
            w.turn = 0;
        }
        let s = with_turn_neighbours(&d.windows, &[0.0, 10.0, 0.0]);
        assert_eq!(s, vec![3.0, 10.0, 5.0]);
    }
}
