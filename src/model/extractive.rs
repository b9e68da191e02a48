//! `local/extractive`: the offline model. It builds the same document a model
//! would (name, description, sectioned summary, tags, decisions, open tasks)
//! from the session itself, deterministically and without any network: the
//! first request, the session_info name, stated decisions, files touched,
//! ticket-like entities and salient terms.

use std::collections::{BTreeMap, HashSet};

mod entities;

use entities::entities;

use crate::indexing::summary::{
    IndexSummary, MAX_DESCRIPTION_CHARS, MAX_ITEM_CHARS, MAX_LIST_ITEMS, MAX_NAME_CHARS, MAX_SUMMARY_CHARS, MAX_TAGS,
    MAX_TAG_CHARS, MIN_TAGS,
};
use crate::session::{AgentMessage, Block, Entry, EntryKind};
use crate::views::FilesTouched;

/// `provider/model` key of the offline model.
pub const MODEL_KEY: &str = "local/extractive";

/// What the offline model reads.
pub struct ExtractiveInput<'a> {
    /// The active branch, root first.
    pub branch: &'a [&'a Entry],
    /// The latest `session_info` name, if the user named the session.
    pub session_name: Option<&'a str>,
    pub cwd: &'a str,
    pub files: &'a FilesTouched,
}

const DECISION_MARKERS: &[&str] = &[
    "decided",
    "decision:",
    "we'll use",
    "we will use",
    "i'll use",
    "let's go with",
    "lets go with",
    "let's use",
    "going with",
    "we chose",
    "chose to",
    "settled on",
    "opted for",
];

const TASK_MARKERS: &[&str] = &[
    "todo",
    "to do:",
    "next step",
    "next:",
    "still need",
    "remaining",
    "follow up",
    "follow-up",
    "not yet",
    "left to do",
];

const FILLERS: &[&str] = &[
    "please",
    "can you",
    "could you",
    "would you",
    "i want to",
    "i'd like to",
    "i would like to",
    "i need to",
    "we need to",
    "help me",
    "let's",
    "lets",
    "hey",
    "hi",
    "ok",
    "okay",
    "now",
];

/// Words too common to say what a session is about.
const STOPWORDS: &str = "\
    about above after again also always another anything around because been before being below best \
    better between both call called came cannot change changes check code come could didn't does doesn't \
    doing done don't down each else even every example explain file files first fine from full get gets \
    give going good great have having here it's just keep know last least lets let's like line lines \
    look looked looks made make makes many maybe more most much must need needs never next nothing okay \
    once only other ours over please really reply request right same see seems should show since some \
    something still such sure take than thank thanks that that's their them then there these they thing \
    things think this those through time under until upon used uses using very want wants well we'll \
    were what when where which while will with within without work works would write yeah your you're \
    yours https http www left back else what's can't ahead ";

/// Build the index document for a session.
pub fn summarize(input: &ExtractiveInput<'_>) -> IndexSummary {
    let messages = texts(input.branch);
    let user: Vec<&str> = messages.iter().filter(|(role, _)| *role == Role::User).map(|(_, t)| t.as_str()).collect();
    let assistant: Vec<&str> =
        messages.iter().filter(|(role, _)| *role == Role::Assistant).map(|(_, t)| t.as_str()).collect();
    let project = project_name(input.cwd);
    let first_request = user.first().map(|t| first_line(t)).unwrap_or_default();

    let decisions = collect_sentences(messages.iter().map(|(_, t)| t.as_str()), DECISION_MARKERS, 8);
    let recent_start = messages.len().saturating_sub(8);
    let open_tasks = collect_sentences(messages[recent_start..].iter().map(|(_, t)| t.as_str()), TASK_MARKERS, 6);
    let outcome = outcome(&assistant);

    let name = make_name(input.session_name, &first_request, &project);
    let description = make_description(&first_request, &outcome, user.len(), input.files, &project);
    let summary = make_summary(&first_request, &user, &decisions, &outcome, &open_tasks, input.files);
    let tags = make_tags(&messages, input.files, &project);
    IndexSummary { name, description, summary, tags, decisions, open_tasks }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Role {
    User,
    Assistant,
}

/// User and assistant text on the branch, in order.
fn texts(branch: &[&Entry]) -> Vec<(Role, String)> {
    let mut out = Vec::new();
    for entry in branch {
        let EntryKind::Message(message) = &entry.kind else { continue };
        let (role, text) = match message {
            AgentMessage::User { content, .. } => (Role::User, content.text_joined("\n")),
            AgentMessage::Assistant { content, .. } => (Role::Assistant, blocks_text(content)),
            _ => continue,
        };
        if !text.trim().is_empty() {
            // Meta files are shown to users and injected into prompts: no pasted secret may land there.
            out.push((role, crate::redact::session_text(&text).into_owned()));
        }
    }
    out
}

fn blocks_text(blocks: &[Block]) -> String {
    let parts: Vec<&str> = blocks
        .iter()
        .filter_map(|b| match b {
            Block::Text(t) => Some(t.head.as_str()),
            _ => None,
        })
        .collect();
    parts.join("\n")
}

fn project_name(cwd: &str) -> String {
    cwd.trim_end_matches(['/', '\\']).rsplit(['/', '\\']).next().unwrap_or_default().to_string()
}

/// First non-empty line, whitespace collapsed.
fn first_line(text: &str) -> String {
    text.lines().map(collapse).find(|l| !l.is_empty()).unwrap_or_default()
}

fn collapse(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Cut to `max` chars, ending with `…` when cut.
pub(crate) fn clip(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_string();
    }
    let mut out: String = text.chars().take(max.saturating_sub(1)).collect();
    out.push('…');
    out
}

/// Sentences of `text` (split at line ends and at `. `, `! `, `? `).
fn sentences(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for line in text.lines() {
        let mut current = String::new();
        let mut chars = line.chars().peekable();
        while let Some(c) = chars.next() {
            current.push(c);
            if matches!(c, '.' | '!' | '?') && chars.peek().is_none_or(|n| n.is_whitespace()) {
                push_sentence(&mut out, &current);
                current.clear();
            }
        }
        push_sentence(&mut out, &current);
    }
    out
}

/// Keeps real sentences: a fragment ending in `:` only introduces a list.
fn push_sentence(out: &mut Vec<String>, text: &str) {
    let text = collapse(text.trim_start_matches(['-', '*', '#', '>', ' ']));
    if text.chars().any(char::is_alphanumeric) && !text.ends_with(':') {
        out.push(text);
    }
}

/// The newest assistant statement that is not a to-do (those go to Next Steps).
fn outcome(assistant: &[&str]) -> String {
    for text in assistant.iter().rev() {
        let done: Vec<String> = sentences(text)
            .into_iter()
            .filter(|s| {
                let lower = s.to_lowercase();
                // "Done." or a list number says nothing about the outcome.
                s.split_whitespace().count() >= 4 && !TASK_MARKERS.iter().any(|m| lower.contains(m))
            })
            .take(2)
            .collect();
        if !done.is_empty() {
            return done.join(" ");
        }
    }
    String::new()
}

/// Sentences containing one of `markers`, deduplicated, newest last, at most `max`.
fn collect_sentences<'a>(texts: impl Iterator<Item = &'a str>, markers: &[&str], max: usize) -> Vec<String> {
    let mut seen = HashSet::new();
    let mut found = Vec::new();
    for text in texts {
        for sentence in sentences(text) {
            let lower = sentence.to_lowercase();
            if markers.iter().any(|m| lower.contains(m)) && seen.insert(lower) {
                found.push(clip(&sentence, MAX_ITEM_CHARS));
            }
        }
    }
    let skip = found.len().saturating_sub(max.min(MAX_LIST_ITEMS));
    found.split_off(skip)
}

fn make_name(session_name: Option<&str>, first_request: &str, project: &str) -> String {
    if let Some(name) = session_name.map(collapse).filter(|n| !n.is_empty()) {
        return clip(&name, MAX_NAME_CHARS);
    }
    let mut rest = first_request.trim();
    loop {
        let lower = rest.to_lowercase();
        let Some(filler) = FILLERS
            .iter()
            .find(|f| lower.starts_with(**f) && lower[f.len()..].chars().next().is_none_or(|c| !c.is_alphanumeric()))
        else {
            break;
        };
        rest = rest[filler.len()..].trim_start_matches([',', ' ', ':']);
    }
    let mut words: Vec<String> = Vec::new();
    for raw in rest.split_whitespace() {
        let word = raw.trim_matches(|c: char| matches!(c, ',' | ';' | ':' | '.' | '!' | '?' | '"' | '\'' | '(' | ')'));
        if raw.starts_with('(') && words.len() >= 5 {
            break;
        }
        if !word.is_empty() {
            words.push(word.to_string());
        }
        // A clause ends here: stop if the name is already long enough.
        if words.len() >= 8 || (words.len() >= 5 && raw.ends_with([',', ';', ':', '.', '!', '?'])) {
            break;
        }
    }
    const DANGLING: &[&str] =
        &["a", "an", "the", "in", "of", "to", "for", "and", "or", "with", "on", "at", "by", "from"];
    while words.len() > 3 && words.last().is_some_and(|w| DANGLING.contains(&w.to_lowercase().as_str())) {
        words.pop();
    }
    if words.is_empty() {
        words = vec!["Session".into()];
    }
    if words.len() < 5 && !project.is_empty() {
        words.push("in".into());
        words.push(project.to_string());
    }
    let name = words.join(" ");
    let mut chars = name.chars();
    let cased = match chars.next() {
        Some(first) => first.to_uppercase().collect::<String>() + chars.as_str(),
        None => name,
    };
    clip(&cased, MAX_NAME_CHARS)
}

fn make_description(
    first_request: &str,
    outcome: &str,
    user_messages: usize,
    files: &FilesTouched,
    project: &str,
) -> String {
    let mut out = if first_request.is_empty() {
        format!(
            "A session in {} with no user request yet.",
            if project.is_empty() { "an unknown project" } else { project }
        )
    } else {
        format!("Asked: {}", end_sentence(&clip(first_request, 240)))
    };
    let plural = if user_messages == 1 { "" } else { "s" };
    out.push_str(&format!(" {user_messages} user message{plural}"));
    if !files.modified.is_empty() {
        out.push_str(&format!(", {} file(s) modified ({})", files.modified.len(), list_preview(&files.modified, 3)));
    } else if !files.read.is_empty() {
        out.push_str(&format!(", {} file(s) read", files.read.len()));
    }
    out.push('.');
    if !outcome.is_empty() {
        out.push_str(&format!(" Latest: {}", end_sentence(&clip(outcome, 300))));
    }
    clip(&out, MAX_DESCRIPTION_CHARS)
}

fn end_sentence(text: &str) -> String {
    if text.ends_with(['.', '!', '?', '…']) {
        text.to_string()
    } else {
        format!("{text}.")
    }
}

fn list_preview(items: &[String], n: usize) -> String {
    let mut shown: Vec<&str> = items.iter().take(n).map(String::as_str).collect();
    if items.len() > n {
        shown.push("…");
    }
    shown.join(", ")
}

fn make_summary(
    first_request: &str,
    user: &[&str],
    decisions: &[String],
    outcome: &str,
    open_tasks: &[String],
    files: &FilesTouched,
) -> String {
    let bullets = |items: &[String], empty: &str| {
        if items.is_empty() {
            format!("- {empty}\n")
        } else {
            items.iter().map(|i| format!("- {i}\n")).collect()
        }
    };
    let mut out = String::from("## Goal\n");
    out.push_str(&if first_request.is_empty() { "No request yet.".to_string() } else { clip(first_request, 600) });
    out.push('\n');
    let later: Vec<String> = user.iter().skip(1).map(|t| clip(&first_line(t), 160)).filter(|t| !t.is_empty()).collect();
    if !later.is_empty() {
        let skip = later.len().saturating_sub(5);
        out.push_str("\nLater requests:\n");
        out.push_str(&bullets(&later[skip..], ""));
    }
    out.push_str("\n## Key Decisions\n");
    out.push_str(&bullets(decisions, "None stated."));
    out.push_str("\n## Outcome\n");
    out.push_str(&if outcome.is_empty() { "No answer yet.".to_string() } else { clip(outcome, 600) });
    out.push('\n');
    if !files.modified.is_empty() {
        out.push_str(&format!("- Files modified: {}\n", list_preview(&files.modified, 12)));
    }
    if !files.read.is_empty() {
        out.push_str(&format!("- Files read: {}\n", list_preview(&files.read, 12)));
    }
    out.push_str("\n## Next Steps\n");
    out.push_str(&bullets(open_tasks, "None stated."));
    clip(out.trim_end(), MAX_SUMMARY_CHARS)
}

fn make_tags(messages: &[(Role, String)], files: &FilesTouched, project: &str) -> Vec<String> {
    let mut tags = Tags::default();
    for (_, text) in messages {
        for entity in entities(text) {
            if tags.len() < 6 {
                tags.push(entity);
            }
        }
    }
    if !project.is_empty() {
        tags.push(format!("project:{}", project.to_lowercase()));
    }
    for path in files.modified.iter().take(3) {
        let shown = if path.chars().count() <= 70 { path.as_str() } else { path.rsplit('/').next().unwrap_or(path) };
        tags.push(format!("file:{shown}"));
    }
    for term in salient_terms(messages) {
        if tags.len() >= MAX_TAGS {
            break;
        }
        // `gw-142` next to `ticket:GW-142` says nothing new.
        if !tags.seen.iter().any(|t| t.ends_with(&format!(":{term}")) || t.ends_with(&format!("#{term}"))) {
            tags.push(term);
        }
    }
    for fallback in ["pi-session", "coding", "session"] {
        if tags.len() >= MIN_TAGS {
            break;
        }
        tags.push(fallback.to_string());
    }
    tags.items.truncate(MAX_TAGS);
    tags.items
}

/// Ordered, case-insensitively unique tags.
#[derive(Default)]
struct Tags {
    items: Vec<String>,
    seen: HashSet<String>,
}

impl Tags {
    fn len(&self) -> usize {
        self.items.len()
    }

    fn push(&mut self, tag: String) {
        let tag = clip(&collapse(&tag), MAX_TAG_CHARS);
        if !tag.is_empty() && self.seen.insert(tag.to_lowercase()) {
            self.items.push(tag);
        }
    }
}

/// Frequent content words, user text counting double; ties broken alphabetically.
fn salient_terms(messages: &[(Role, String)]) -> Vec<String> {
    let stop: HashSet<&str> = STOPWORDS.split_whitespace().collect();
    let mut counts: BTreeMap<String, usize> = BTreeMap::new();
    for (role, text) in messages {
        let weight = if *role == Role::User { 2 } else { 1 };
        for word in text.split(|c: char| !(c.is_alphanumeric() || c == '-' || c == '_' || c == '\'')) {
            let word = word.trim_matches(|c: char| c == '-' || c == '\'' || c == '_').to_lowercase();
            if word.chars().count() < 4
                || word.chars().count() > 30
                || !word.starts_with(|c: char| c.is_alphabetic())
                || stop.contains(word.as_str())
            {
                continue;
            }
            *counts.entry(word).or_default() += weight;
        }
    }
    // Count a plural with its singular when both occur.
    let plurals: Vec<String> = counts
        .keys()
        .filter(|w| w.len() > 4 && w.ends_with('s') && counts.contains_key(&w[..w.len() - 1]))
        .cloned()
        .collect();
    for plural in plurals {
        if let Some(n) = counts.remove(&plural) {
            *counts.entry(plural[..plural.len() - 1].to_string()).or_default() += n;
        }
    }
    let mut ranked: Vec<(String, usize)> = counts.into_iter().filter(|(_, n)| *n >= 2).collect();
    ranked.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    ranked.into_iter().take(MAX_TAGS).map(|(w, _)| w).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::session::Content;

    #[test]
    fn names_drop_fillers_and_use_sentence_case() {
        assert_eq!(
            make_name(None, "Please add a token bucket rate limiter to the API gateway now", "gw"),
            "Add a token bucket rate limiter"
        );
        assert_eq!(make_name(None, "can you fix login", "shop"), "Fix login in shop");
        assert_eq!(make_name(Some("My  name"), "x", "p"), "My name");
    }

    #[test]
    fn sentences_split_on_terminators_only_before_space() {
        assert_eq!(sentences("We decided. Use v1.2 now! ok"), vec!["We decided.", "Use v1.2 now!", "ok"]);
    }

    #[test]
    fn secrets_in_the_session_never_reach_the_index() {
        let key = "sk-proj-abcdefghijklmnopqrstuvwxyz0123456789";
        let entries = [Entry {
            id: "u1".into(),
            parent_id: None,
            timestamp: String::new(),
            line: 2,
            kind: EntryKind::Message(AgentMessage::User {
                content: Content::Text(format!(
                    "Use the key {key} for the deploy script. We decided to use Bearer abcdefgh12345678."
                )),
                timestamp: 0,
            }),
        }];
        let branch: Vec<&Entry> = entries.iter().collect();
        let files = FilesTouched::default();
        let out = summarize(&ExtractiveInput { branch: &branch, session_name: None, cwd: "/p/demo", files: &files });
        let all =
            serde_json::to_string(&(&out.name, &out.description, &out.summary, &out.tags, &out.decisions)).unwrap();
        assert!(!all.contains("abcdefghijklmnop") && !all.contains("abcdefgh1234"), "{all}");
        assert!(all.contains("[REDACTED]"), "{all}");
    }

    #[test]
    fn clip_counts_chars() {
        assert_eq!(clip("ééé", 3), "ééé");
        assert_eq!(clip("éééé", 3), "éé…");
    }
}
