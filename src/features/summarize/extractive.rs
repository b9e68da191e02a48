//! `local/extractive`: the offline model. It builds the same document a model
//! would (name, description, sectioned summary, tags, decisions, open tasks)
//! from the session itself, deterministically and without any network: the
//! first request, the session_info name, stated decisions, files touched,
//! ticket-like entities and salient terms.

use std::collections::{BTreeMap, HashSet};

mod entities;

use entities::entities;

use crate::features::summarize::summary::{
    normalize_tags, IndexSummary, MAX_DESCRIPTION_CHARS, MAX_ITEM_CHARS, MAX_LIST_ITEMS,
    MAX_NAME_CHARS, MAX_SUMMARY_CHARS, MAX_TAGS, MIN_TAGS,
};
use crate::session::views::FilesTouched;
use crate::session::{Entry, EntryKind};
use crate::text::{clip, flat, Keep};

/// `provider/model` key of the offline model.
pub const MODEL_KEY: &str = "local/extractive";

/// What the offline model reads.
pub struct ExtractiveInput<'a> {
    /// The active branch, root first.
    pub branch: &'a [&'a Entry],
    /// The name the user gave the session, if any: it is kept as is.
    pub session_name: Option<&'a str>,
    pub cwd: &'a str,
    pub files: &'a FilesTouched,
}

/// Tags of a session with too few of its own: they distinguish nothing.
pub const FALLBACK_TAGS: [&str; 3] = ["pi-session", "coding", "session"];

/// How people state a decision, whoever says it.
const DECISION_MARKERS: &str =
    "decided|decision:|we'll use|we will use|let's go with|lets go with|let's use|going with|\
    we'll go with|we chose|chose to|settled on|opted for";
/// A decision when the user says it; in an assistant's explanation, usually not.
const USER_DECISION_MARKERS: &str = "instead of|rather than|switch to|go with|use ";
/// An assistant's proposal, a decision once the user's next message accepts it.
const PROPOSAL_MARKERS: &str = "i'll use|i will use|i'll go with|i recommend|i suggest|i'd use";
/// How a user turns a proposal down.
const REJECTIONS: &str = "no|nope|don't|do not|not|instead|rather|stop|wait";

const TASK_MARKERS: &str =
    "todo|to do:|next step|next:|still need|remaining|follow up|follow-up|not yet|left to do|later:";
/// An assistant's closing offer ("Want me to add tests?") is work still open.
const OFFERS: &str = "would you like me to|want me to|shall i|should i|do you want me to";
/// An assistant narrating its own next tool call is not an open item.
const NARRATION: &str = "let me|now let me|i'll|i will|now i'll|first,|next, i'll";

const FILLERS: &str = "please|what is|what are|what's|how to i|how do i|how can i|how to|can we really|can we|can you|\
    could you|would you|i want to|i'd like to|i would like to|i need to|we need to|help me|let's|lets|\
    hey|hi|hello|hail|ok|okay|now|so";

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
    yours https http www left back else what's can't ahead hello here's i'll i'm you'll into also ";

/// The texts of one role's messages, in order.
fn said_by(messages: &[(Role, String)], role: Role) -> Vec<&str> {
    messages
        .iter()
        .filter(|(r, _)| *r == role)
        .map(|(_, t)| t.as_str())
        .collect()
}

/// The project: the last directory of the cwd.
fn project_name(cwd: &str) -> String {
    let cwd = cwd.trim_end_matches(['/', '\\']);
    cwd.rsplit(['/', '\\'])
        .next()
        .unwrap_or_default()
        .to_string()
}

/// The opening request: the first user message that asks for something
/// ("Hello?" does not), else the first one.
fn opening_request(user: &[&str]) -> String {
    let requests: Vec<String> = user.iter().map(|t| request_text(t)).collect();
    let asks = |r: &&String| strip_fillers(r).split_whitespace().count() >= 3;
    let request = requests.iter().find(asks).or(requests.first());
    request.cloned().unwrap_or_default()
}

/// Build the index document for a session.
pub fn summarize(input: &ExtractiveInput<'_>) -> IndexSummary {
    let messages = texts(input.branch);
    let user = said_by(&messages, Role::User);
    let assistant = said_by(&messages, Role::Assistant);
    let project = project_name(input.cwd);
    let first_request = opening_request(&user);
    let terms = terms(&messages, &project);
    let entities: Vec<String> = messages.iter().flat_map(|(_, t)| entities(t)).collect();

    let decisions = decisions(&messages);
    let open_tasks = open_tasks(&messages);
    let outcome = outcome(&assistant);

    let name = match input.session_name.map(flat).filter(|n| !n.is_empty()) {
        Some(name) => clip(&name, MAX_NAME_CHARS, Keep::Head),
        None => make_name(
            &first_request,
            &terms,
            &entities,
            &main_file(&messages, input.files),
            &project,
        ),
    };
    let description = make_description(
        &first_request,
        &outcome,
        user.len(),
        input.files,
        &project,
        &terms,
    );
    let summary = make_summary(
        &first_request,
        &user,
        &decisions,
        &outcome,
        &open_tasks,
        input.files,
    );
    let tags = make_tags(&entities, &terms, input.files, &project);
    IndexSummary {
        name,
        description,
        summary,
        tags,
        decisions,
        open_tasks,
    }
}

/// `name` made distinct from the `taken` names (compared by [`words_key`]):
/// the first of the session's `topics` it does not contain yet, else `date`.
pub fn distinct_name(name: &str, taken: &[String], topics: &[String], date: &str) -> String {
    let taken: HashSet<String> = taken.iter().map(|n| words_key(n)).collect();
    let lower = name.to_lowercase();
    let topics = topics
        .iter()
        .filter(|t| !lower.contains(&t.to_lowercase()))
        .map(|t| format!("{name}, {t}"));
    let dated = [
        format!("{name} ({date})"),
        format!("{name} ({date}, {})", taken.len() + 1),
    ];
    std::iter::once(name.to_string())
        .chain(topics)
        .chain(dated)
        .map(|candidate| clip(&candidate, MAX_NAME_CHARS, Keep::Head))
        .find(|candidate| !taken.contains(&words_key(candidate)))
        .unwrap_or_else(|| name.to_string())
}

/// What two names are compared by for distinctness: their lower-case words
/// (punctuation aside; the resolver's `name_key` keeps it, as a name is typed).
pub fn words_key(name: &str) -> String {
    name.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .collect::<Vec<_>>()
        .join(" ")
        .to_lowercase()
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Role {
    User,
    Assistant,
}

/// User and assistant text on the branch, in order, redacted, without `@@` references.
fn texts(branch: &[&Entry]) -> Vec<(Role, String)> {
    let mut out = Vec::new();
    for entry in branch {
        let EntryKind::Message(message) = &entry.kind else {
            continue;
        };
        let Some((who, text)) = crate::session::views::message_text(message) else {
            continue;
        };
        let role = if who == "User" {
            Role::User
        } else {
            Role::Assistant
        };
        // Meta files are shown to users and injected into prompts: no pasted secret may land there.
        let text = crate::resolve::syntax::without_references(&crate::redact::session_text(&text))
            .into_owned();
        if !text.trim().is_empty() {
            out.push((role, text));
        }
    }
    out
}

/// The request in a user message: its sentences after any greeting, whitespace collapsed.
fn request_text(text: &str) -> String {
    let all = sentences(text);
    let greeting = |s: &&String| strip_fillers(s).split_whitespace().count() <= 1 && all.len() > 1;
    let ended = |s: &String| {
        if s.ends_with(['.', '!', '?']) {
            s.clone()
        } else {
            format!("{s}.")
        }
    };
    all.iter()
        .skip_while(greeting)
        .map(ended)
        .collect::<Vec<_>>()
        .join(" ")
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
    let text = flat(
        &text
            .trim_start_matches(['-', '*', '#', '>', ' '])
            .replace("**", ""),
    );
    if text.chars().any(char::is_alphanumeric) && !text.ends_with(':') {
        out.push(text);
    }
}

/// `markers` are `|`-separated.
fn has_any(lower: &str, markers: &str) -> bool {
    markers.split('|').any(|m| lower.contains(m))
}

/// The first of the `|`-separated `words` that `lower` starts with, as whole words.
fn leading(lower: &str, words: &'static str) -> Option<&'static str> {
    words
        .split('|')
        .find(|w| lower.starts_with(w) && !lower[w.len()..].starts_with(char::is_alphanumeric))
}

/// The newest assistant statement that is not a to-do (those go to Next Steps).
fn outcome(assistant: &[&str]) -> String {
    for text in assistant.iter().rev() {
        let done: Vec<String> = sentences(text)
            .into_iter()
            .filter(|s| {
                let lower = s.to_lowercase();
                // "Done." or a list number says nothing about the outcome.
                s.split_whitespace().count() >= 4
                    && !has_any(&lower, TASK_MARKERS)
                    && !has_any(&lower, OFFERS)
            })
            .take(2)
            .collect();
        if !done.is_empty() {
            return done.join(" ");
        }
    }
    String::new()
}

/// Decisions as people state them, and assistant proposals the user went
/// along with; a sentence echoing one already found is skipped. Newest last.
fn decisions(messages: &[(Role, String)]) -> Vec<String> {
    let mut found: Vec<String> = Vec::new();
    for (i, (role, text)) in messages.iter().enumerate() {
        let accepted = *role == Role::Assistant
            && messages[i + 1..]
                .iter()
                .find(|(r, _)| *r == Role::User)
                .is_some_and(|(_, reply)| {
                    leading(&reply.trim_start().to_lowercase(), REJECTIONS).is_none()
                });
        for sentence in sentences(text) {
            let lower = sentence.to_lowercase();
            let stated = has_any(&lower, DECISION_MARKERS)
                || (*role == Role::User
                    && USER_DECISION_MARKERS
                        .split('|')
                        .any(|m| lower.starts_with(m) || lower.contains(&format!(" {m}")))
                    && !lower.contains("how"))
                || (accepted && has_any(&lower, PROPOSAL_MARKERS));
            let words = sentence.split_whitespace().count();
            if stated
                && !sentence.ends_with('?')
                && (3..=80).contains(&words)
                && !found
                    .iter()
                    .any(|f| lower.contains(f.to_lowercase().trim_end_matches(['.', '…'])))
            {
                found.push(clip(&sentence, MAX_ITEM_CHARS, Keep::Head));
            }
        }
    }
    found.split_off(found.len().saturating_sub(8.min(MAX_LIST_ITEMS)))
}

/// Open items near the end: to-dos and "still need"s, the assistant's closing
/// offers, and user requests nobody answered. An assistant announcing its
/// own next tool call ("Let me check the next file") is not one.
fn open_tasks(messages: &[(Role, String)]) -> Vec<String> {
    let mut seen = HashSet::new();
    let mut found = Vec::new();
    let last_answer = messages
        .iter()
        .rposition(|(role, _)| *role == Role::Assistant);
    for (i, (role, text)) in messages
        .iter()
        .enumerate()
        .skip(messages.len().saturating_sub(8))
    {
        let unanswered = *role == Role::User && last_answer.is_none_or(|a| a < i);
        let closing = *role == Role::Assistant && Some(i) == last_answer;
        for sentence in sentences(text) {
            let lower = sentence.to_lowercase();
            let narration = *role == Role::Assistant && leading(&lower, NARRATION).is_some();
            let open = unanswered
                || (closing && has_any(&lower, OFFERS))
                || (!narration && has_any(&lower, TASK_MARKERS) && !sentence.ends_with('?'));
            if open && seen.insert(lower) {
                found.push(clip(&sentence, MAX_ITEM_CHARS, Keep::Head));
            }
        }
    }
    found.split_off(found.len().saturating_sub(6.min(MAX_LIST_ITEMS)))
}

/// `text` without leading fillers ("Please", "can you", "Hi,").
fn strip_fillers(text: &str) -> &str {
    let mut rest = text.trim();
    loop {
        let Some(filler) = leading(&rest.to_lowercase(), FILLERS) else {
            return rest;
        };
        rest = rest[filler.len()..].trim_start_matches([',', ' ', ':', '!', '.']);
    }
}

/// A content word of the session, as it is most often written.
struct Term {
    key: String,
    shown: String,
    score: usize,
    /// Times the user wrote it.
    by_user: usize,
    /// Where it first appears (word count from the start).
    first: usize,
}

/// The session's content words, best first: user words count three times,
/// assistant words once; a term must score 3. A plural counts with its
/// singular; the project's own name is left out (every session has it).
fn terms(messages: &[(Role, String)], project: &str) -> Vec<Term> {
    let stop: HashSet<&str> = STOPWORDS.split_whitespace().collect();
    let mut counts: BTreeMap<String, (usize, usize, usize, BTreeMap<String, usize>)> =
        BTreeMap::new();
    let mut position = 0;
    for (role, text) in messages {
        let weight = if *role == Role::User { 3 } else { 1 };
        for raw in words(text) {
            position += 1;
            let word = raw.trim_matches(|c: char| c == '-' || c == '\'' || c == '_');
            let key = word.to_lowercase();
            let chars = key.chars().count();
            if !(4..=30).contains(&chars)
                || !key.starts_with(char::is_alphabetic)
                || stop.contains(key.as_str())
            {
                continue;
            }
            let key = match key.strip_suffix('s') {
                Some(singular) if chars > 4 && counts.contains_key(singular) => {
                    singular.to_string()
                }
                _ => key,
            };
            let entry = counts
                .entry(key)
                .or_insert((0, 0, position, BTreeMap::new()));
            entry.0 += weight;
            entry.1 += usize::from(*role == Role::User);
            *entry.3.entry(word.to_string()).or_default() += 1;
        }
    }
    let project = project.to_lowercase();
    let mut ranked: Vec<Term> = counts
        .into_iter()
        .filter(|(key, (score, ..))| *score >= 3 && *key != project)
        .map(|(key, (score, by_user, first, forms))| {
            let shown = forms
                .into_iter()
                .max_by(|a, b| a.1.cmp(&b.1).then_with(|| b.0.cmp(&a.0)))
                .map(|f| f.0);
            // "GitHub" and "JWT" keep their case, a capitalised plain word does not.
            let shown = shown
                .filter(|s| s.chars().skip(1).any(char::is_uppercase) && s.to_lowercase() == key);
            Term {
                shown: shown.unwrap_or_else(|| key.clone()),
                key,
                score,
                by_user,
                first,
            }
        })
        .collect();
    ranked.sort_by(|a, b| b.score.cmp(&a.score).then_with(|| a.key.cmp(&b.key)));
    ranked
}

/// Words as terms are counted: letters, digits, `-`, `_` and `'`.
fn words(text: &str) -> impl Iterator<Item = &str> {
    text.split(|c: char| !(c.is_alphanumeric() || c == '-' || c == '_' || c == '\''))
        .filter(|w| !w.is_empty())
}

/// The modified file the conversation names most (its file name), if any.
fn main_file(messages: &[(Role, String)], files: &FilesTouched) -> String {
    let base = |path: &str| path.rsplit(['/', '\\']).next().unwrap_or(path).to_string();
    let weight = |role: &Role| if *role == Role::User { 3 } else { 1 };
    let mentions = |name: &str| {
        messages
            .iter()
            .map(|(r, t)| weight(r) * t.matches(name).count())
            .sum::<usize>()
    };
    let names: Vec<String> = files.modified.iter().map(|p| base(p)).collect();
    names
        .iter()
        .max_by_key(|n| (mentions(n), std::cmp::Reverse(*n)))
        .cloned()
        .unwrap_or_default()
}

/// A title of at most 8 words: the opening request when the session stayed
/// on it (it shares one of the eight dominant terms, used again later), else the three terms the
/// user used most; then the ticket or the file the session is about, if any.
fn make_name(
    first_request: &str,
    terms: &[Term],
    entities: &[String],
    file: &str,
    project: &str,
) -> String {
    let ticket = entities
        .iter()
        .find_map(|e| e.strip_prefix("ticket:"))
        .unwrap_or_default();
    let tail = if ticket.is_empty() { file } else { ticket };
    let budget = if tail.is_empty() { 8 } else { 7 };
    let request = Some(strip_fillers(first_request))
        .filter(|r| !r.is_empty())
        .unwrap_or(first_request);
    let request_words: Vec<String> = words(request)
        .map(str::to_lowercase)
        .filter(|w| w.len() >= 4)
        .collect();
    // A term of the opening request only (score 3) does not make it the topic.
    let on_topic = terms
        .iter()
        .take(8)
        .any(|t| t.score > 3 && request_words.iter().any(|w| w.starts_with(&t.key)));
    let top: Vec<&Term> = terms.iter().filter(|t| t.by_user > 0).take(3).collect();
    let repeated = top.iter().any(|t| t.score > 3);
    let mut words: Vec<String> =
        if on_topic || !repeated || top.len() < 2 || request_words.is_empty() {
            phrase(request, budget)
        } else {
            let mut top = top;
            top.sort_by_key(|t| t.first);
            let shown: Vec<&str> = top.iter().map(|t| t.shown.as_str()).collect();
            shown.join(", ").split(' ').map(str::to_string).collect()
        };
    if words.is_empty() {
        words.push("Session".into());
    }
    if !tail.is_empty() && !words.iter().any(|w| w.contains(tail)) {
        if let Some(last) = words.last_mut() {
            last.push(':');
        }
        words.push(tail.to_string());
    } else if words.len() < 4 && !project.is_empty() {
        words.extend(["in".to_string(), project.to_string()]);
    }
    let name = words.join(" ");
    let cased: String = name
        .chars()
        .take(1)
        .flat_map(char::to_uppercase)
        .chain(name.chars().skip(1))
        .collect();
    clip(&cased, MAX_NAME_CHARS, Keep::Head)
}

/// Up to `budget` words of `text`, ending at a clause when one ends late
/// enough, never on a dangling "of"/"the"; paths shown by their file name.
/// Cut mid-clause, the half phrase at the end goes ("… about openclaw in
/// relation" ends at "openclaw").
fn phrase(text: &str, budget: usize) -> Vec<String> {
    const DANGLING: &str = "a|an|the|in|of|to|for|and|or|with|on|at|by|from|my|is|that|it's";
    let dangling = |w: &String| DANGLING.split('|').any(|d| d == w.to_lowercase());
    let mut words: Vec<String> = Vec::new();
    let mut raws = text.split_whitespace().peekable();
    while let Some(raw) = raws.next() {
        let word = raw.trim_matches(|c: char| {
            matches!(
                c,
                ',' | ';' | ':' | '.' | '!' | '?' | '"' | '\'' | '(' | ')' | '`'
            )
        });
        let file = word
            .rsplit('/')
            .next()
            .filter(|f| word.contains('/') && f.contains('.'));
        let word = file.unwrap_or(word);
        if raw.starts_with('(') && words.len() >= 4 {
            break;
        }
        if !word.is_empty() {
            words.push(word.to_string());
        }
        let clause_end = raw.ends_with([',', ';', ':', '.', '!', '?']);
        if words.len() >= budget || (words.len() >= 4 && clause_end) {
            if !clause_end && raws.peek().is_some() {
                let half = words
                    .iter()
                    .rposition(dangling)
                    .filter(|&i| i + 3 >= words.len() && i >= 2);
                words.truncate(half.unwrap_or(words.len()));
            }
            break;
        }
    }
    while words.len() > 2 && words.last().is_some_and(dangling) {
        words.pop();
    }
    words
}

fn make_description(
    first_request: &str,
    outcome: &str,
    user_messages: usize,
    files: &FilesTouched,
    project: &str,
    terms: &[Term],
) -> String {
    let project = if project.is_empty() {
        "an unknown project"
    } else {
        project
    };
    let asked = format!(
        "Asked: {}",
        end_sentence(&clip(first_request, 240, Keep::Head))
    );
    let mut out = if first_request.is_empty() {
        format!("A session in {project} with no user request yet.")
    } else {
        asked
    };
    let plural = if user_messages == 1 { "" } else { "s" };
    out.push_str(&format!(" {user_messages} user message{plural}"));
    if !files.modified.is_empty() {
        out.push_str(&format!(
            ", {} file(s) modified ({})",
            files.modified.len(),
            list_preview(&files.modified, 3)
        ));
    } else if !files.read.is_empty() {
        out.push_str(&format!(", {} file(s) read", files.read.len()));
    }
    out.push('.');
    if terms.len() >= 2 {
        let shown: Vec<&str> = terms.iter().take(5).map(|t| t.shown.as_str()).collect();
        out.push_str(&format!(" Topics: {}.", shown.join(", ")));
    }
    if !outcome.is_empty() {
        out.push_str(&format!(
            " Latest: {}",
            end_sentence(&clip(outcome, 300, Keep::Head))
        ));
    }
    clip(&out, MAX_DESCRIPTION_CHARS, Keep::Head)
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
    let bullets = |items: &[String], empty: &str| -> String {
        if items.is_empty() {
            format!("- {empty}\n")
        } else {
            items.iter().map(|i| format!("- {i}\n")).collect()
        }
    };
    let or = |text: &str, empty: &str| {
        if text.is_empty() {
            empty.to_string()
        } else {
            clip(text, 600, Keep::Head)
        }
    };
    let later: Vec<String> = user
        .iter()
        .skip(1)
        .map(|t| clip(&request_text(t), 160, Keep::Head))
        .filter(|t| !t.is_empty())
        .collect();
    let later = &later[later.len().saturating_sub(5)..];
    let mut out = format!("## Goal\n{}\n", or(first_request, "No request yet."));
    if !later.is_empty() {
        out.push_str(&format!("\nLater requests:\n{}", bullets(later, "")));
    }
    let decisions = bullets(decisions, "None stated.");
    out.push_str(&format!(
        "\n## Key Decisions\n{decisions}\n## Outcome\n{}\n",
        or(outcome, "No answer yet.")
    ));
    for (label, list) in [("modified", &files.modified), ("read", &files.read)] {
        if !list.is_empty() {
            out.push_str(&format!("- Files {label}: {}\n", list_preview(list, 12)));
        }
    }
    out.push_str(&format!(
        "\n## Next Steps\n{}",
        bullets(open_tasks, "None stated.")
    ));
    clip(out.trim_end(), MAX_SUMMARY_CHARS, Keep::Head)
}

/// Entity tags (tickets, issues, project, files changed), then the dominant terms.
fn make_tags(
    entities: &[String],
    terms: &[Term],
    files: &FilesTouched,
    project: &str,
) -> Vec<String> {
    let mut tags: Vec<String> = normalize_tags(entities.to_vec())
        .into_iter()
        .take(6)
        .collect();
    if !project.is_empty() {
        tags.push(format!("project:{project}"));
    }
    for path in files.modified.iter().take(3) {
        let shown = if path.chars().count() <= 70 {
            path.as_str()
        } else {
            path.rsplit('/').next().unwrap_or(path)
        };
        tags.push(format!("file:{shown}"));
    }
    // `gw-142` next to `ticket:GW-142` says nothing new.
    let said = |term: &str| {
        entities
            .iter()
            .any(|e| e.to_lowercase().ends_with(&format!(":{term}")))
    };
    tags.extend(
        terms
            .iter()
            .filter(|t| !said(&t.key))
            .take(MAX_TAGS)
            .map(|t| t.key.clone()),
    );
    let mut tags = normalize_tags(tags);
    for fallback in FALLBACK_TAGS {
        if tags.len() < MIN_TAGS && !tags.iter().any(|t| t == fallback) {
            tags.push(fallback.to_string());
        }
    }
    tags
}

#[cfg(test)]
#[path = "extractive_tests.rs"]
mod tests;
