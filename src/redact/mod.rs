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
//! Every text taken from a session goes through [`session_text`] before it is cut to a
//! budget: a cut first could keep the body of a key whose `BEGIN` line it dropped.
//! Recall wins over precision: a harmless token shown as `[REDACTED]` costs a little
//! summary quality, a leaked key costs much more.

use std::borrow::Cow;
use std::sync::{LazyLock, OnceLock};

use aho_corasick::{AhoCorasick, AhoCorasickKind};
use regex::bytes::{Captures, Match, Regex, RegexBuilder};
use serde::Deserialize;

/// What every secret is replaced with.
pub const REDACTED: &str = "[REDACTED]";
/// What a `<private>` … `</private>` span is replaced with.
pub const PRIVATE: &str = "[private]";

#[derive(Deserialize, Default)]
#[serde(default)]
struct RuleFile {
    allow: Vec<String>,
    stopwords: Vec<String>,
    rules: Vec<RuleData>,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase", default)]
#[cfg_attr(not(test), allow(dead_code))] // `id` and `examples` are for the tests
struct RuleData {
    id: String,
    regex: String,
    /// The rule runs only on texts holding one of these (any case).
    keywords: Vec<String>,
    entropy: f64,
    secret_group: usize,
    /// The secret is kept when one of these matches it, one of `allow_match` matches
    /// the whole match, or it contains one of `stopwords` (lowercase).
    allow: Vec<String>,
    allow_match: Vec<String>,
    stopwords: Vec<String>,
    /// Texts the rule must redact (checked by the tests).
    examples: Vec<String>,
}

struct Rule {
    data: RuleData,
    /// Index of its file in [`Engine::files`]: a file's allowlist is for its own rules.
    file: usize,
    /// The regex, `allow` and `allow_match`, compiled when a keyword first enables the rule
    /// (most texts need a handful of the rules; a CLI run must not compile them all).
    compiled: OnceLock<(Regex, Vec<Regex>, Vec<Regex>)>,
}

struct Engine {
    rules: Vec<Rule>,
    keywords: AhoCorasick,
    /// Per keyword pattern, the rule it enables.
    keyword_rule: Vec<usize>,
    /// Per file, the allowlist of all its rules.
    files: Vec<(Vec<Regex>, Vec<String>)>,
}

const FILES: [&str; 2] = [include_str!("rules.toml"), include_str!("gitleaks.toml")];

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

#[allow(clippy::expect_used)]
static ENGINE: LazyLock<Engine> = LazyLock::new(|| {
    let (mut rules, mut files, mut keywords, mut keyword_rule) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for (file, text) in FILES.iter().enumerate() {
        let data: RuleFile = toml::from_str(text).expect("redaction rules parse");
        files.push((
            data.allow.iter().map(|a| compile(a)).collect(),
            data.stopwords,
        ));
        for data in data.rules {
            keyword_rule.extend(data.keywords.iter().map(|_| rules.len()));
            keywords.extend(data.keywords.iter().map(|k| k.to_lowercase()));
            rules.push(Rule {
                data,
                file,
                compiled: OnceLock::new(),
            });
        }
    }
    // A DFA: the overlapping search steps through every byte of every text
    // (most texts hold some keyword, so no prefilter skips them), and the
    // default contiguous NFA's steps, with their failure transitions, made it
    // 40% of the redaction; the DFA costs ~0.75 MB.
    let keywords = AhoCorasick::builder()
        .ascii_case_insensitive(true)
        .kind(Some(AhoCorasickKind::DFA))
        .build(&keywords)
        .expect("keywords build");
    Engine {
        rules,
        keywords,
        keyword_rule,
        files,
    }
});

impl Rule {
    fn compiled(&self) -> &(Regex, Vec<Regex>, Vec<Regex>) {
        self.compiled.get_or_init(|| {
            let all = |v: &[String]| v.iter().map(|a| compile(a)).collect();
            (
                compile(&self.data.regex),
                all(&self.data.allow),
                all(&self.data.allow_match),
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
        let (file_allow, file_stopwords) = &engine.files[self.file];
        let (_, allow, allow_match) = self.compiled();
        s.contains(REDACTED)
            || (self.data.entropy > 0.0 && entropy(&s) <= self.data.entropy)
            || allow
                .iter()
                .chain(file_allow)
                .any(|a| a.is_match(secret.as_bytes()))
            || allow_match.iter().any(|a| a.is_match(whole.as_bytes()))
            || self
                .data
                .stopwords
                .iter()
                .chain(file_stopwords)
                .any(|w| lower.contains(w.as_str()))
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
    let mut enabled = vec![false; engine.rules.len()];
    for m in engine.keywords.find_overlapping_iter(text.as_bytes()) {
        enabled[engine.keyword_rule[m.pattern().as_usize()]] = true;
    }
    let mut spans = Vec::new();
    for (rule, _) in engine.rules.iter().zip(&enabled).filter(|(_, on)| **on) {
        let regex = &rule.compiled().0;
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
