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

/// Assemble the context for `question` within `max_tokens`: the header, the
/// meta's index and the branch's summaries each within their share, then the
/// windows chosen for relevance and recency in what is left, rendered in
/// order.
pub fn assemble(
    head: &SessionHead,
    meta: Option<&SessionMeta>,
    doc: &BranchDoc,
    question: &str,
    max_tokens: usize,
) -> Assembled {
    let budget = max_tokens.saturating_mul(4);
    let header = header(head, budget);
    let meta_text = meta
        .map(|m| render_meta(m, share(budget, META_SHARE)))
        .unwrap_or_default();
    let (summaries, summaries_len) = fit_summaries(doc, share(budget, SUMMARY_SHARE));
    let used = utf16_len(&header) + utf16_len(&meta_text) + summaries_len;
    let query_tokens = tokenize(question);
    let docs: Vec<&[String]> = doc.windows.iter().map(|w| w.tokens.as_slice()).collect();
    let scores = with_turn_neighbours(&doc.windows, &bm25::scores(&docs, &query_tokens));
    let room = budget.saturating_sub(used + 200);
    let chosen = choose_windows(doc, &scores, room, share(budget, RECENT_SHARE));
    let (text, entry_ids) = render(header, &meta_text, &summaries, &chosen, doc.windows.len());
    Assembled {
        tokens: estimate_tokens(&text),
        text,
        entry_ids,
        chosen,
        summaries,
        query_tokens,
        total_windows: doc.windows.len(),
    }
}

/// `fraction` of `budget`.
fn share(budget: usize, fraction: f64) -> usize {
    ((budget as f64) * fraction) as usize
}

/// Who the session is, within a tenth of the budget.
fn header(head: &SessionHead, budget: usize) -> String {
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
    clip(&header, budget / 10, Keep::Head)
}

/// The branch's summaries that fit `room`, newest first (compaction summaries
/// are cumulative), each cut to what is left; in branch order, with the room
/// they take.
fn fit_summaries(doc: &BranchDoc, room: usize) -> (Vec<Item>, usize) {
    let mut summaries: Vec<Item> = Vec::new();
    let mut used = 0;
    for s in doc.summaries.iter().rev() {
        let left = room.saturating_sub(used);
        let overhead = s.render_len() - utf16_len(&s.text) + 1;
        if left < MIN_SUMMARY_CHARS + overhead {
            break;
        }
        let item = Item {
            entry_id: s.entry_id.clone(),
            role: s.role.clone(),
            text: clip(&s.text, left - overhead, Keep::Head),
        };
        used += item.render_len() + 1;
        summaries.push(item);
    }
    summaries.reverse();
    (summaries, used)
}

/// The windows to show, in branch order: the relevant ones, best first,
/// leaving `recent` of `room` for the newest turns; then the newest turns in
/// the reserve and whatever relevance left over. When nothing fits, the
/// newest window's first items.
fn choose_windows(doc: &BranchDoc, scores: &[f64], room: usize, recent: usize) -> Vec<Chosen> {
    let windows = &doc.windows;
    let mut remaining = room;
    let mut picked: Vec<Option<(f64, bool)>> = vec![None; windows.len()];
    let recent_reserve = recent.min(remaining);
    let mut ranked: Vec<usize> = (0..windows.len()).filter(|&i| scores[i] > 0.0).collect();
    ranked.sort_by(|&a, &b| scores[b].total_cmp(&scores[a]).then(b.cmp(&a)));
    let mut relevant_room = remaining.saturating_sub(recent_reserve);
    for &i in &ranked {
        let len = windows[i].render_len() + 2;
        if len <= relevant_room {
            relevant_room -= len;
            remaining -= len;
            picked[i] = Some((scores[i], false));
        }
    }
    for i in (0..windows.len()).rev() {
        if picked[i].is_some() {
            continue;
        }
        let len = windows[i].render_len() + 2;
        if len > remaining {
            break;
        }
        remaining -= len;
        picked[i] = Some((scores[i], true));
    }
    let nothing_fits = picked.iter().all(Option::is_none);
    let partial = windows
        .last()
        .filter(|_| nothing_fits)
        .and_then(|last| first_items(last, remaining));
    let mut chosen: Vec<Chosen> = picked
        .iter()
        .enumerate()
        .filter_map(|(i, p)| {
            p.map(|(score, recent)| Chosen {
                window: windows[i].clone(),
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
    chosen
}

/// The first items of an oversized `window` that fit `room` (the last one
/// cut, when enough of it fits), if any.
fn first_items(window: &Window, room: usize) -> Option<Window> {
    let mut items = Vec::new();
    let mut room = room;
    for it in &window.items {
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
    (!items.is_empty()).then(|| Window {
        index: window.index,
        turn: window.turn,
        items,
        tokens: window.tokens.clone(),
    })
}

/// The context text, and every entry id it shows.
fn render(
    header: String,
    meta_text: &str,
    summaries: &[Item],
    chosen: &[Chosen],
    total_windows: usize,
) -> (String, BTreeSet<String>) {
    let mut entry_ids = BTreeSet::new();
    let mut text = header;
    if !meta_text.is_empty() {
        text.push_str("\n## Index of the session\n");
        text.push_str(meta_text);
    }
    if !summaries.is_empty() {
        text.push_str("\n## Summaries on the branch\n");
        for s in summaries {
            text.push_str(&s.render());
            text.push('\n');
            entry_ids.insert(s.entry_id.clone());
        }
    }
    if !chosen.is_empty() {
        text.push_str(if chosen.len() == total_windows {
            "\n## Conversation (whole branch)\n"
        } else {
            "\n## Conversation excerpts (chronological; … marks omitted turns)\n"
        });
        let mut next_index = 0;
        for c in chosen {
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
        if next_index < total_windows {
            text.push_str("…\n");
        }
    }
    (text, entry_ids)
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
