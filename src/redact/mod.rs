//! Redaction of secrets from session text before it reaches a model, an index or a log.
//!
//! Session transcripts routinely hold pasted keys, `.env` files, curl commands with
//! tokens and connection strings. The rules are data: gitleaks' rule set
//! (`gitleaks.toml`, ported by `tools/port-gitleaks.py`) plus our own (`rules.toml`:
//! assignments, URL credentials, command-line passwords, key blocks, …). The engine is
//! gitleaks' own: a keyword pre-filter (one Aho-Corasick pass) picks the rules worth
//! running, a rule's secret is its first non-empty capture group, and a secret is kept
//! when its entropy is at or below the rule's threshold or an allowlist names it.
//!
//! A CLI search is a process of its own that redacts a few snippets, so the
//! engine's start-up is its cost: build.rs turns the TOML files into Rust
//! statics (no parse at start), and a rule's regex is compiled when a keyword
//! first enables it, its allowlists (and its file's) when it first finds a
//! secret to check.
//!
//! Every text taken from a session goes through [`session_text`] before it is cut to a
//! budget: a cut first could keep the body of a key whose `BEGIN` line it dropped.
//! Recall wins over precision: a harmless token shown as `[REDACTED]` costs a little
//! summary quality, a leaked key costs much more.

use std::borrow::Cow;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{LazyLock, OnceLock};

use aho_corasick::{AhoCorasick, AhoCorasickKind};
use regex::bytes::{Captures, Match, Regex, RegexBuilder};

/// What every secret is replaced with.
pub const REDACTED: &str = "[REDACTED]";
/// What a `<private>` … `</private>` span is replaced with.
pub const PRIVATE: &str = "[private]";

/// One rule file, as build.rs turns it into Rust (`$OUT_DIR/redact_rules.rs`).
struct RuleFile {
    allow: &'static [&'static str],
    stopwords: &'static [&'static str],
    rules: &'static [RuleData],
}

#[cfg_attr(not(test), allow(dead_code))] // `id` and `examples` are for the tests
struct RuleData {
    id: &'static str,
    regex: &'static str,
    /// The rule runs only on texts holding one of these (any case; lowercased by build.rs).
    keywords: &'static [&'static str],
    entropy: f64,
    secret_group: usize,
    /// The secret is kept when one of these matches it, one of `allow_match` matches
    /// the whole match, or it contains one of `stopwords` (lowercase).
    allow: &'static [&'static str],
    allow_match: &'static [&'static str],
    stopwords: &'static [&'static str],
    /// Texts the rule must redact (checked by the tests).
    examples: &'static [&'static str],
}

// `FILES`: rules.toml, then gitleaks.toml.
include!(concat!(env!("OUT_DIR"), "/redact_rules.rs"));

struct Rule {
    data: &'static RuleData,
    /// Index of its file in [`FILES`] and [`Engine::file_allow`]: a file's allowlist is for its own rules.
    file: usize,
    /// The regex, compiled when a keyword first enables the rule (most texts
    /// need a handful of the rules; a CLI run must not compile them all).
    regex: OnceLock<Regex>,
    /// `allow` and `allow_match`, compiled when the regex first finds a
    /// secret to check (most enabled rules find none).
    allows: OnceLock<(Vec<Regex>, Vec<Regex>)>,
}

struct Engine {
    rules: Vec<Rule>,
    keywords: Keywords,
    /// Per file, the allowlist of all its rules, compiled when the first secret is checked.
    file_allow: [OnceLock<Vec<Regex>>; 2],
}

// The rule files are constants compiled into the crate and covered by the tests
// (every rule compiles and redacts its examples), so a failure here is a
// programming error caught by `cargo test`, never input-driven.
#[allow(clippy::expect_used)]
fn compile(pattern: &str) -> Regex {
    // Bytes with ASCII classes (`\w`, `\s`, `\b`), as in gitleaks' RE2.
    RegexBuilder::new(pattern)
        .unicode(false)
        .size_limit(50 << 20)
        .build()
        .expect("redaction pattern compiles")
}

fn compile_all(patterns: &[&str]) -> Vec<Regex> {
    patterns.iter().map(|p| compile(p)).collect()
}

static ENGINE: LazyLock<Engine> = LazyLock::new(|| {
    let mut rules = Vec::new();
    for (file, data) in FILES.iter().enumerate() {
        rules.extend(data.rules.iter().map(|data| Rule {
            data,
            file,
            regex: OnceLock::new(),
            allows: OnceLock::new(),
        }));
    }
    Engine {
        keywords: Keywords::new(&rules),
        rules,
        file_allow: Default::default(),
    }
});

/// The keyword pre-filter: one Aho-Corasick pass over a text finds the rules
/// worth running on it.
///
/// Two kinds of automaton over the same keywords, chosen by how much text the
/// process has scanned. The overlapping search steps through every byte of
/// every text (most texts hold some keyword, so no prefilter skips them): a
/// DFA steps fastest, a contiguous NFA builds fastest. Measured on the 434
/// keywords (callgrind instructions; wall time at load 3): the NFA builds in
/// 4.5M (1.4 ms) and scans at 55 a byte (8.6 ms a MB), the DFA builds in
/// 18.4M (3.8 ms, 0.87 MB) and scans at 24 (3.1 ms a MB). A CLI search
/// redacts its snippets' entries, kilobytes (scanning them took 0.5M at 30k
/// sessions), and its process ends; the plugin and `session-index index`
/// redact whole sessions, megabytes. So a process
/// scans with the NFA until [`DFA_AFTER`] bytes (where the DFA's extra build
/// would have paid for itself), then builds the DFA and scans with it: never
/// more than about twice the cheaper choice's cost, whatever the process.
/// Both find the same keywords, so the same rules run.
struct Keywords {
    nfa: OnceLock<AhoCorasick>,
    dfa: OnceLock<AhoCorasick>,
    /// Bytes scanned by this process so far.
    scanned: AtomicUsize,
    /// Per keyword pattern, the rule it enables.
    rule: Vec<usize>,
    patterns: Vec<&'static str>,
}

/// Bytes scanned with the NFA before the DFA is built: the DFA's extra build
/// (14M instructions) over what it saves a byte (31 instructions), ~450 KB.
const DFA_AFTER: usize = 448 << 10;

impl Keywords {
    fn new(rules: &[Rule]) -> Self {
        let (rule, patterns) = rules
            .iter()
            .enumerate()
            .flat_map(|(i, r)| r.data.keywords.iter().map(move |k| (i, *k)))
            .unzip();
        Keywords {
            nfa: OnceLock::new(),
            dfa: OnceLock::new(),
            scanned: AtomicUsize::new(0),
            rule,
            patterns,
        }
    }

    #[allow(clippy::expect_used)] // constant patterns, see `compile`
    fn automaton(&self, kind: AhoCorasickKind) -> AhoCorasick {
        AhoCorasick::builder()
            .ascii_case_insensitive(true)
            .kind(Some(kind))
            .build(&self.patterns)
            .expect("keywords build")
    }

    /// Per rule (of `rules`), whether one of its keywords is in `text`.
    fn enabled(&self, text: &str, rules: usize) -> Vec<bool> {
        let before = self.scanned.fetch_add(text.len(), Ordering::Relaxed);
        let automaton = if before.saturating_add(text.len()) > DFA_AFTER {
            self.dfa
                .get_or_init(|| self.automaton(AhoCorasickKind::DFA))
        } else {
            self.nfa
                .get_or_init(|| self.automaton(AhoCorasickKind::ContiguousNFA))
        };
        let mut enabled = vec![false; rules];
        for m in automaton.find_overlapping_iter(text.as_bytes()) {
            enabled[self.rule[m.pattern().as_usize()]] = true;
        }
        enabled
    }
}

impl Rule {
    fn regex(&self) -> &Regex {
        self.regex.get_or_init(|| compile(self.data.regex))
    }

    fn allows(&self) -> &(Vec<Regex>, Vec<Regex>) {
        self.allows.get_or_init(|| {
            (
                compile_all(self.data.allow),
                compile_all(self.data.allow_match),
            )
        })
    }

    /// The secret of one match: gitleaks' rule (the `secretGroup`, else the first
    /// non-empty group, else the match) and its checks; and where the next search
    /// starts. That is the secret's start, not the match's end: what one match took
    /// for a value may be the name of the next one, as in
    /// `secret: aws_secret_access_key = <key>`, where the label's match consumes
    /// `aws_secret_access_key` and a search from its end would never see the key.
    fn secret<'t>(&self, caps: &Captures<'t>, engine: &Engine) -> (Option<Match<'t>>, usize) {
        let Some(whole) = caps.get(0) else {
            return (None, usize::MAX);
        };
        let candidate = match self.data.secret_group {
            0 => caps
                .iter()
                .skip(1)
                .flatten()
                .find(|m| !m.is_empty())
                .or(Some(whole)),
            n => caps.get(n),
        };
        let resume = candidate
            .map(|c| c.start())
            .filter(|&at| at > whole.start())
            .unwrap_or(whole.end().max(whole.start() + 1));
        let secret = candidate.filter(|secret| !self.kept(secret, &whole, engine));
        (secret, resume)
    }

    /// Whether the secret `secret` of the match `whole` is kept by the rule's checks
    /// (entropy, allowlists, stopwords).
    fn kept(&self, secret: &Match<'_>, whole: &Match<'_>, engine: &Engine) -> bool {
        let s = String::from_utf8_lossy(secret.as_bytes());
        let lower = s.to_lowercase();
        let file_allow =
            || engine.file_allow[self.file].get_or_init(|| compile_all(FILES[self.file].allow));
        s.contains(REDACTED)
            || (self.data.entropy > 0.0 && entropy(&s) <= self.data.entropy)
            || self
                .allows()
                .0
                .iter()
                .chain(file_allow())
                .any(|a| a.is_match(secret.as_bytes()))
            || self.allows().1.iter().any(|a| a.is_match(whole.as_bytes()))
            || self
                .data
                .stopwords
                .iter()
                .chain(FILES[self.file].stopwords)
                .any(|w| lower.contains(w))
    }
}

/// Shannon entropy of `s` in bits per char, as gitleaks computes it.
fn entropy(s: &str) -> f64 {
    let mut counts = std::collections::HashMap::new();
    for c in s.chars() {
        *counts.entry(c).or_insert(0usize) += 1;
    }
    let n = s.chars().count() as f64;
    counts
        .values()
        .map(|&c| c as f64 / n)
        .map(|p| -p * p.log2())
        .sum()
}

/// Byte ranges of the secrets in `text`, sorted and merged.
fn secrets(text: &str) -> Vec<(usize, usize)> {
    let engine = &*ENGINE;
    let enabled = engine.keywords.enabled(text, engine.rules.len());
    let mut spans = Vec::new();
    for (rule, _) in engine.rules.iter().zip(&enabled).filter(|(_, on)| **on) {
        let regex = rule.regex();
        let mut from = 0;
        while let Some(caps) = regex.captures_at(text.as_bytes(), from) {
            let (secret, resume) = rule.secret(&caps, engine);
            if let Some(s) = secret {
                // A byte class may end a match inside a character: widen it to whole ones.
                let end = (s.end()..=text.len())
                    .find(|&i| text.is_char_boundary(i))
                    .unwrap_or(text.len());
                spans.push((crate::text::floor_char_boundary(text, s.start()), end));
            }
            if resume > text.len() {
                break;
            }
            from = resume;
        }
    }
    spans.sort_unstable();
    let mut merged: Vec<(usize, usize)> = Vec::with_capacity(spans.len());
    for (start, end) in spans {
        match merged.last_mut() {
            Some(last) if start <= last.1 => last.1 = last.1.max(end),
            _ => merged.push((start, end)),
        }
    }
    merged
}

/// `text` with every secret replaced by [`REDACTED`]. Borrows when nothing matched.
pub fn redact(text: &str) -> Cow<'_, str> {
    replace_spans(text, &secrets(text), REDACTED)
}

#[allow(clippy::expect_used)]
static PRIVATE_TAGS: LazyLock<AhoCorasick> = LazyLock::new(|| {
    AhoCorasick::builder()
        .ascii_case_insensitive(true)
        .build(["<private>", "</private>"])
        .expect("private tags build")
});

/// Byte ranges of the `<private>` spans of `text`, outermost only: a span
/// runs from an opening tag to the closing tag that balances it, so a nested
/// `<private>a <private>b</private> c</private>` is one span (`c` is as
/// private as `a`); an unclosed one runs to the end. A closing tag with no
/// opening one is text.
fn private_spans(text: &str) -> Vec<(usize, usize)> {
    let mut spans = Vec::new();
    let (mut depth, mut start) = (0usize, 0);
    for tag in PRIVATE_TAGS.find_iter(text) {
        match (tag.pattern().as_usize(), depth) {
            (0, 0) => (depth, start) = (1, tag.start()),
            (0, _) => depth += 1,
            (_, 0) => {}
            (_, 1) => {
                depth = 0;
                spans.push((start, tag.end()));
            }
            (_, _) => depth -= 1,
        }
    }
    if depth > 0 {
        spans.push((start, text.len()));
    }
    spans
}

/// `text` with the byte ranges `spans` (sorted, disjoint) replaced by `with`.
fn replace_spans<'t>(text: &'t str, spans: &[(usize, usize)], with: &str) -> Cow<'t, str> {
    if spans.is_empty() {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len());
    let mut at = 0;
    for &(start, end) in spans {
        out.push_str(&text[at..start]);
        out.push_str(with);
        at = end;
    }
    out.push_str(&text[at..]);
    Cow::Owned(out)
}

/// Text taken from a session, made fit for a model or an index: `<private>` …
/// `</private>` spans (nested ones count as one; an unclosed one runs to the
/// end) become [`PRIVATE`], secrets become [`REDACTED`]. Call it on whole
/// texts before any cut to a budget.
pub fn session_text(text: &str) -> Cow<'_, str> {
    match replace_spans(text, &private_spans(text), PRIVATE) {
        Cow::Borrowed(_) => redact(text),
        Cow::Owned(s) => Cow::Owned(redact(&s).into_owned()),
    }
}

/// Every string of `value` (not its keys) passed through `pass`
/// ([`redact`] or [`session_text`]).
pub fn strings_in(value: &mut serde_json::Value, pass: fn(&str) -> Cow<'_, str>) {
    use serde_json::Value;
    let mut stack = vec![value];
    while let Some(v) = stack.pop() {
        match v {
            Value::String(s) => {
                if let Cow::Owned(passed) = pass(s) {
                    *s = passed;
                }
            }
            Value::Array(items) => stack.extend(items.iter_mut()),
            Value::Object(map) => stack.extend(map.values_mut()),
            _ => {}
        }
    }
}

#[cfg(test)]
#[path = "redact_tests.rs"]
mod tests;
