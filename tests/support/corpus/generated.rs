//! The first distractor corpus: short sessions of developer vocabulary drawn
//! by Zipf's law, a third of their messages carrying one sentence of the
//! shared real sessions. They talk about what the real sessions talk about,
//! in passing, which makes them hard for a lexical ranking (the words are
//! there) and easy for a semantic one (the sentences are nonsense around
//! the quoted one). Deterministic: the same seed gives the same files.

use std::path::Path;

use serde_json::Value;

use crate::support::rng::Rng;
use crate::support::search::Writer;

/// The seed of the corpus the store's recall test has always used.
const SEED: u64 = 0x00c0_ffee_5eed_0017;

/// Developer vocabulary, including the words the first 27 queries use.
#[rustfmt::skip]
const VOCABULARY: &[&str] = &[
    "agent", "assistant", "name", "called", "folder", "directory", "size", "disk", "space", "email", "send",
    "notification", "channel", "doc", "docs", "report", "status", "fork", "upstream", "original", "parent", "commit",
    "commits", "log", "issue", "answer", "license", "copyright", "roadmap", "project", "github", "word", "term",
    "app", "action", "retry", "rate", "limit", "error", "api", "provider", "model", "config", "timeout", "seconds",
    "task", "plan", "check", "repo", "rename", "compare", "memory", "conversation", "question", "setup", "identity",
    "bot", "persona", "file", "test", "build", "fix", "bug", "function", "module", "cache", "database", "query",
    "schema", "migration", "deploy", "release", "version", "branch", "merge", "review", "pull", "request", "token",
    "auth", "login", "session", "server", "client", "request", "response", "header", "json", "parse", "string",
    "value", "type", "struct", "field", "method", "class", "import", "package", "dependency", "install", "script",
    "workflow", "job", "runner", "ci", "pipeline", "artifact", "node", "npm", "rust", "cargo", "python", "docker",
    "container", "image", "volume", "network", "port", "host", "path", "read", "write", "edit", "delete", "update",
    "create", "list", "show", "explain", "why", "how", "what", "where", "the", "a", "and", "to", "of", "in", "for",
    "it", "is", "we", "this", "that", "with", "on", "not", "be", "should", "now", "then", "again", "still", "new",
];

/// Sentences of the shared real sessions' messages.
fn real_sentences() -> Vec<String> {
    let real = crate::support::shared_dir::pi_sessions_dir().join("real");
    let mut files: Vec<_> = std::fs::read_dir(real)
        .expect("the real sessions")
        .flatten()
        .map(|e| e.path())
        .collect();
    // In a fixed order, so the corpus is the same on every machine.
    files.sort();
    let mut out = Vec::new();
    for path in files {
        let text = std::fs::read_to_string(path).unwrap_or_default();
        for line in text.lines() {
            let Ok(v) = serde_json::from_str::<Value>(line) else {
                continue;
            };
            let content = &v["message"]["content"];
            let parts = content
                .as_array()
                .cloned()
                .unwrap_or_else(|| vec![content.clone()]);
            for part in parts {
                let text = part.as_str().or(part["text"].as_str()).unwrap_or_default();
                out.extend(
                    text.split(['.', '\n', '?', '!'])
                        .map(str::trim)
                        .filter(|s| s.split_whitespace().count() >= 4)
                        .map(str::to_string),
                );
            }
        }
    }
    out
}

fn message(rng: &mut Rng, sentences: &[String]) -> String {
    let n = 15 + (rng.next() % 60) as usize;
    // Zipf's law, as in real text: the word of rank r (in the order of a
    // seeded shuffle) with probability ∝ 1/r, so a few words are everywhere
    // and most are in some sessions only.
    let ranked = |rng: &mut Rng| {
        let u = (rng.next() % 1_000_000) as f64 / 1e6;
        let rank = ((VOCABULARY.len() as f64).powf(u) as usize).saturating_sub(1);
        VOCABULARY[(rank * 7919 + 13) % VOCABULARY.len()]
    };
    let mut words: Vec<&str> = (0..n).map(|_| ranked(rng)).collect();
    if rng.next() % 3 == 0 {
        words.push(&sentences[(rng.next() % sentences.len() as u64) as usize]);
    }
    words.join(" ")
}

/// Writes `count` distractor sessions (`distractor-00000`…) under
/// `<agent>/sessions`; a smaller count writes the first sessions of a larger one.
pub fn write(agent: &Path, count: usize) {
    let sentences = real_sentences();
    assert!(sentences.len() > 500, "real sentences: {}", sentences.len());
    let mut rng = Rng(SEED);
    for i in 0..count {
        let cwd = if i % 3 == 0 {
            "/home/runner/work/gitclaw/gitclaw".to_string()
        } else {
            format!("/p/{}", i % 40)
        };
        let mut w = Writer::new(agent, &cwd, &format!("distractor-{i:05}"));
        for _ in 0..2 + rng.next() % 4 {
            w.user(&message(&mut rng, &sentences));
            w.assistant(&message(&mut rng, &sentences));
        }
    }
}
