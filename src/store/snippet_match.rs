//! Whether an entry's text matches a snippet expression, told in Rust as
//! FTS5's `porter unicode61` tokenizer and its query would tell it, so that
//! a search reads again, redacts and tokenizes only the entries its
//! snippets can come from (`snippets.rs`).
//!
//! The expressions are those `rank::snippet_expressions` builds: quoted
//! terms of letters and digits (a phrase when a term holds several words,
//! `*` after a prefix), joined by ` AND ` or by ` OR `. A token matches a
//! word when both stem to the same word ([`stem`], checked against SQLite's
//! in `snippet_filter`), a prefix word when the token's stem begins with the
//! word's; a phrase's words are consecutive tokens. Text is split into
//! tokens at every byte that is not an ASCII letter or digit, as `unicode61`
//! does for ASCII and for the common punctuation, symbols and emoji of
//! [`splits_tokens`] (checked below against SQLite, one by one). A text
//! holding any other character (a letter FTS5 may fold, a symbol its tables
//! take for a letter) is not told: [`Verdict::Unsure`], and so is every text
//! when an expression is of another shape or a word is not ASCII
//! ([`Matcher::new`] gives `None`).

use super::snippet_filter::{root, stem, EntryFilter};

/// Characters not ASCII that FTS5's `unicode61` takes for separators, as
/// ASCII punctuation: Latin-1's punctuation, general punctuation (dashes,
/// quotes, `…`, zero-width joiners), currency, arrows, mathematical and
/// technical symbols, box drawing, geometric shapes, dingbats (`✓`, `❌`),
/// variation selectors and the older emoji blocks (its tables take later
/// ones, such as `🤔`, for letters).
fn splits_tokens(c: char) -> bool {
    matches!(c,
        '\u{80}'..='\u{a9}' | '\u{ab}'..='\u{b1}' | '\u{b4}' | '\u{b6}'..='\u{b8}' | '\u{bb}'
        | '\u{bf}' | '\u{d7}' | '\u{f7}' | '\u{2000}'..='\u{2064}' | '\u{206a}'..='\u{206f}'
        | '\u{20a0}'..='\u{20b9}' | '\u{2190}'..='\u{23f3}' | '\u{2500}'..='\u{26ff}'
        | '\u{2701}'..='\u{2775}' | '\u{2794}'..='\u{2b4c}' | '\u{2b50}'..='\u{2b59}'
        | '\u{fe00}'..='\u{fe0f}' | '\u{1f300}'..='\u{1f320}' | '\u{1f330}'..='\u{1f335}'
        | '\u{1f337}'..='\u{1f37c}' | '\u{1f380}'..='\u{1f393}' | '\u{1f3a0}'..='\u{1f3c4}'
        | '\u{1f3c6}'..='\u{1f3ca}' | '\u{1f3e0}'..='\u{1f3f0}' | '\u{1f400}'..='\u{1f43e}'
        | '\u{1f442}'..='\u{1f4f7}' | '\u{1f4f9}'..='\u{1f4fc}' | '\u{1f500}'..='\u{1f53d}'
        | '\u{1f540}'..='\u{1f543}' | '\u{1f550}'..='\u{1f567}' | '\u{1f5fb}'..='\u{1f640}'
        | '\u{1f645}'..='\u{1f64f}' | '\u{1f680}'..='\u{1f6c5}')
}

/// Whether FTS5 finds an expression in a text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Verdict {
    Yes,
    No,
    /// The text holds a character FTS5 may fold into a letter.
    Unsure,
}

/// One word of a term, lower case.
struct Word {
    /// Its stem, as FTS5's query stems it.
    stem: String,
    /// The last word of a `*` term: any token whose stem begins with `stem`.
    prefix: bool,
    /// What every token matching it starts with (`snippet_filter::root`).
    root: String,
}

/// A quoted term: its words (indices into [`Matcher::words`]), in order,
/// and which lines may hold it.
struct Term {
    words: Vec<usize>,
    lines: EntryFilter,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Join {
    And,
    Or,
}

struct Expr {
    join: Join,
    terms: Vec<Term>,
}

/// The snippet expressions of one query, told in Rust.
pub(super) struct Matcher {
    /// Every word of every term (at most 64: one bit each).
    words: Vec<Word>,
    exprs: Vec<Expr>,
}

impl Matcher {
    /// The matcher of `exprs`, or `None` when one of them is of a shape it
    /// does not tell (then FTS5 alone decides).
    pub fn new(exprs: &[String]) -> Option<Matcher> {
        let mut words = Vec::new();
        let exprs = exprs
            .iter()
            .map(|e| parse(e, &mut words))
            .collect::<Option<Vec<Expr>>>()?;
        (words.len() <= 64).then_some(Matcher { words, exprs })
    }

    /// How many expressions there are.
    pub fn expressions(&self) -> usize {
        self.exprs.len()
    }

    /// Whether the entry of the JSON line `line` may have a text in which
    /// expression `expr` is found (see `EntryFilter::may_match_line`).
    pub fn may_match_line(&self, expr: usize, line: &[u8]) -> bool {
        let Expr { join, terms } = &self.exprs[expr];
        let term_may = |t: &Term| t.lines.may_match_line(line);
        match join {
            Join::And => terms.iter().all(term_may),
            Join::Or => terms.iter().any(term_may),
        }
    }

    /// Whether FTS5 finds each expression in `text`.
    pub fn verdicts(&self, text: &str) -> Vec<Verdict> {
        if !text.is_ascii() && text.chars().any(|c| !c.is_ascii() && !splits_tokens(c)) {
            return vec![Verdict::Unsure; self.exprs.len()];
        }
        let found = self.tokens(text);
        self.exprs
            .iter()
            .map(|e| {
                let has = |t: &Term| has_phrase(&found, &t.words);
                let yes = match e.join {
                    Join::And => e.terms.iter().all(has),
                    Join::Or => e.terms.iter().any(has),
                };
                if yes {
                    Verdict::Yes
                } else {
                    Verdict::No
                }
            })
            .collect()
    }

    /// The tokens of `text` (split as `unicode61` splits text whose
    /// characters are ASCII or [`splits_tokens`]) that match a word: their position and a bit
    /// per word they match. A token that does not start with a word's root
    /// cannot match it and is not stemmed.
    fn tokens(&self, text: &str) -> Vec<(usize, u64)> {
        let mut found = Vec::new();
        let tokens = text
            .as_bytes()
            .split(|b| !b.is_ascii_alphanumeric())
            .filter(|t| !t.is_empty());
        let mut lower = String::new();
        for (position, token) in tokens.enumerate() {
            let starts = |w: &Word| {
                token.len() >= w.root.len()
                    && token[..w.root.len()].eq_ignore_ascii_case(w.root.as_bytes())
            };
            if !self.words.iter().any(starts) {
                continue;
            }
            lower.clear();
            lower.extend(token.iter().map(|b| b.to_ascii_lowercase() as char));
            let stemmed = stem(&lower);
            let mut bits = 0u64;
            for (i, w) in self.words.iter().enumerate() {
                let matches = if w.prefix {
                    stemmed.starts_with(&w.stem)
                } else {
                    stemmed == w.stem
                };
                if matches {
                    bits |= 1 << i;
                }
            }
            if bits != 0 {
                found.push((position, bits));
            }
        }
        found
    }
}

/// Whether the words `words` are at consecutive positions of `found`.
fn has_phrase(found: &[(usize, u64)], words: &[usize]) -> bool {
    (0..found.len()).any(|k| {
        words.iter().enumerate().all(|(j, &w)| {
            found
                .get(k + j)
                .is_some_and(|&(p, bits)| p == found[k].0 + j && bits & (1 << w) != 0)
        })
    })
}

/// One expression: quoted terms joined by one operator; its words added to
/// `words`. `None` for any other shape.
fn parse(expr: &str, words: &mut Vec<Word>) -> Option<Expr> {
    let mut terms = Vec::new();
    let mut join = None;
    let mut rest = expr;
    loop {
        let inner = rest.strip_prefix('"')?;
        let close = inner.find('"')?;
        let (phrase, after) = (&inner[..close], &inner[close + 1..]);
        let (prefix, after) = match after.strip_prefix('*') {
            Some(after) => (true, after),
            None => (false, after),
        };
        let source = &rest[..rest.len() - after.len()];
        terms.push(term(phrase, prefix, source, words)?);
        if after.is_empty() {
            break;
        }
        let (this, next) = if let Some(next) = after.strip_prefix(" AND ") {
            (Join::And, next)
        } else {
            (Join::Or, after.strip_prefix(" OR ")?)
        };
        if join.is_some_and(|j| j != this) {
            return None;
        }
        join = Some(this);
        rest = next;
    }
    Some(Expr {
        join: join.unwrap_or(Join::Or),
        terms,
    })
}

/// The term `"phrase"` (`*` after it when `prefix`), written `source`.
fn term(phrase: &str, prefix: bool, source: &str, words: &mut Vec<Word>) -> Option<Term> {
    let tokens: Vec<&str> = phrase.split(' ').collect();
    let mut indices = Vec::with_capacity(tokens.len());
    for (i, token) in tokens.iter().enumerate() {
        if token.is_empty() || !token.bytes().all(|b| b.is_ascii_alphanumeric()) {
            return None;
        }
        let lower = token.to_ascii_lowercase();
        let prefix = prefix && i == tokens.len() - 1;
        indices.push(words.len());
        words.push(Word {
            root: root(&lower, prefix)?,
            stem: stem(&lower),
            prefix,
        });
    }
    Some(Term {
        words: indices,
        lines: EntryFilter::new(&[source.to_string()]),
    })
}

#[cfg(test)]
mod tests {
    use super::super::snippet_filter::tests::fts5_table;
    use super::*;

    #[test]
    fn the_separators_told_split_tokens_in_fts5() {
        let chars: Vec<char> = ('\u{80}'..='\u{1faff}')
            .filter(|c| splits_tokens(*c))
            .collect();
        let rows: Vec<String> = chars.iter().map(|c| format!("xq{c}zq")).collect();
        let db = fts5_table(&rows);
        let split: i64 = db
            .query_row(
                "SELECT count(*) FROM t WHERE t MATCH '\"xq zq\"'",
                [],
                |r| r.get(0),
            )
            .unwrap();
        assert!(chars.len() > 3_000, "{}", chars.len());
        assert_eq!(
            split as usize,
            chars.len(),
            "each of them splits two tokens"
        );
        let glued: i64 = db
            .query_row("SELECT count(*) FROM t WHERE t MATCH 'xq OR zq'", [], |r| {
                r.get(0)
            })
            .unwrap();
        assert_eq!(glued, split);
    }

    /// Lines of text (prose, code, rules, some of it not ASCII) as rows, and
    /// the expressions of one word, of two (both, any), with a prefix, and
    /// phrases: where the matcher tells, FTS5 agrees.
    #[test]
    fn verdicts_are_fts5s() {
        let texts = [
            include_str!("../../README.md"),
            include_str!("../redact/rules.toml"),
            include_str!("../session/convert.rs"),
            include_str!("rank.rs"),
        ];
        let lines: Vec<&str> = texts
            .iter()
            .flat_map(|t| t.lines())
            .filter(|l| !l.trim().is_empty())
            .collect();
        let db = fts5_table(&lines);
        let mut words: Vec<String> = lines
            .iter()
            .flat_map(|l| l.split(|c: char| !c.is_ascii_alphanumeric()))
            .filter(|w| w.len() >= 2)
            .map(str::to_lowercase)
            .collect();
        words.sort();
        words.dedup();
        let mut find = db.prepare("SELECT rowid FROM t WHERE t MATCH ?1").unwrap();
        let (mut yes, mut no, mut unsure, mut exprs) = (0, 0, 0, 0);
        for (k, w) in words.iter().enumerate().step_by(23) {
            let other = &words[(k * 7919) % words.len()];
            let next = &words[(k + 1) % words.len()];
            let prefix = &w[..w.len().min(3 + k % 3)];
            for expr in [
                format!("\"{w}\""),
                format!("\"{w}\" AND \"{other}\""),
                format!("\"{w}\" OR \"{other}\""),
                format!("\"{w}\" OR \"{next}\" OR \"{prefix}\"*"),
                format!("\"{prefix}\"*"),
                format!("\"{w} {next}\""),
                format!("\"{other} {prefix}\"*"),
            ] {
                let Some(matcher) = Matcher::new(std::slice::from_ref(&expr)) else {
                    continue;
                };
                exprs += 1;
                let found: std::collections::HashSet<i64> = find
                    .query_map([&expr], |r| r.get(0))
                    .unwrap()
                    .map(Result::unwrap)
                    .collect();
                for (i, line) in lines.iter().enumerate() {
                    let fts5 = found.contains(&(i as i64));
                    match matcher.verdicts(line)[0] {
                        Verdict::Yes => {
                            assert!(fts5, "{expr} is not in {line:?}");
                            yes += 1;
                        }
                        Verdict::No => {
                            assert!(!fts5, "{expr} is in {line:?}");
                            no += 1;
                        }
                        Verdict::Unsure => unsure += 1,
                    }
                }
            }
        }
        println!(
            "{} lines, {exprs} expressions: {yes} yes, {no} no, {unsure} unsure",
            lines.len()
        );
        assert!(yes > 2_000, "{yes}");
        assert!(unsure * 20 < yes + no, "{unsure}");
    }

    #[test]
    fn expressions_of_other_shapes_are_not_told() {
        assert!(Matcher::new(&["\"a\" AND \"b\" OR \"c\"".into()]).is_none());
        assert!(Matcher::new(&["\"caf\u{e9}\"".into()]).is_none());
        assert!(Matcher::new(&["NEAR(\"ab\" \"cd\")".into()]).is_none());
        assert!(
            Matcher::new(&["\"x\"".into()]).is_none(),
            "no root: every token"
        );
        let m = Matcher::new(&["\"throttled\" AND \"retry\"".into()]).unwrap();
        assert_eq!(
            m.verdicts("Throttling, then a RETRIES loop")[0],
            Verdict::Yes
        );
        assert_eq!(m.verdicts("throttling only")[0], Verdict::No);
        assert_eq!(m.verdicts("thróttling, retry")[0], Verdict::Unsure);
        assert_eq!(m.verdicts("throttling → retry")[0], Verdict::Yes);
        assert_eq!(m.verdicts("throttling 🤔 retry")[0], Verdict::Unsure);
    }
}
