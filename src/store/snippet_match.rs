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

use std::cell::RefCell;
use std::collections::HashMap;

use aho_corasick::AhoCorasick;

use super::snippet_filter::{has_char_escape, may_fold, root, stem, LABELS, MAX_STEMMED};

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

/// A quoted term: its words (indices into [`Matcher::words`]), in order.
struct Term {
    words: Vec<usize>,
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
    /// The words' roots, each once (any case), and per root the words it is the root of.
    roots: AhoCorasick,
    root_words: Vec<u64>,
    /// The words a line is not told of ([`Matcher::line_words`]): a root
    /// among the [`LABELS`] or starting with a digit.
    untold: u64,
    /// Longest run of a line worth stemming pieces of (see [`Matcher::piece_words`]).
    longest: usize,
    /// [`Matcher::piece_words`] of the runs met so far (a query meets the
    /// same words in many lines), by the run in lower case.
    pieces: RefCell<HashMap<Vec<u8>, u64>>,
    /// The run being looked up, in lower case (no allocation per lookup).
    lower: RefCell<Vec<u8>>,
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
        if words.len() > 64 {
            return None;
        }
        let (mut roots, mut root_words) = (Vec::<&str>::new(), Vec::<u64>::new());
        let (labels, mut untold) = (LABELS.to_ascii_lowercase(), 0u64);
        for (i, w) in words.iter().enumerate() {
            match roots.iter().position(|r| *r == w.root) {
                Some(k) => root_words[k] |= 1 << i,
                None => {
                    roots.push(&w.root);
                    root_words.push(1 << i);
                }
            }
            if w.root.starts_with(|c: char| c.is_ascii_digit()) || labels.contains(&w.root) {
                untold |= 1 << i;
            }
        }
        let roots = AhoCorasick::builder()
            .ascii_case_insensitive(true)
            .build(&roots)
            .ok()?;
        let longest = words
            .iter()
            .map(|w| w.stem.len())
            .max()
            .unwrap_or(0)
            .max(MAX_STEMMED);
        Some(Matcher {
            words,
            exprs,
            roots,
            root_words,
            untold,
            longest,
            pieces: RefCell::new(HashMap::new()),
            lower: RefCell::new(Vec::new()),
        })
    }

    /// How many expressions there are.
    pub fn expressions(&self) -> usize {
        self.exprs.len()
    }

    /// Whether an entry whose line may hold the words `words` (a bit each,
    /// [`Matcher::line_words`]) may have a text in which expression `expr`
    /// is found: a phrase when the line may hold each of its words.
    pub fn may_match_line(&self, expr: usize, words: u64) -> bool {
        let Expr { join, terms } = &self.exprs[expr];
        let term_may = |t: &Term| t.words.iter().all(|&w| words & (1 << w) != 0);
        match join {
            Join::And => terms.iter().all(term_may),
            Join::Or => terms.iter().any(term_may),
        }
    }

    /// The words (a bit each) that a token of the text of the entry of the
    /// session file's JSON line `line` may match, told before the line is
    /// parsed and its text redacted.
    ///
    /// Every token of that text is a piece of a run of letters and digits
    /// of the line (its strings decoded, cut to a head, with secrets and
    /// `<private>` spans replaced by `[REDACTED]` and `[private]`, put
    /// together with [`LABELS`] and numbers written again:
    /// `EntryFilter::may_match_line` tells why); a cut or a secret may end
    /// a token anywhere in a run (`ghp_…billing` becomes `[REDACTED]billing`,
    /// a thinking clipped after `bill` of `billings` ends in `bill…`). A
    /// token matching a word starts with its root. So the text may hold a
    /// word only when some piece of a run, from a place where the word's
    /// root starts to at most the run's end, matches it
    /// ([`Matcher::piece_words`]): `tokio` holds no piece matching `token`,
    /// though it holds its root `tok`. A word whose root is among the
    /// labels or starts with a digit is always let in; so is every word
    /// when the line is not UTF-8, holds an escape of a letter, or an `@@`
    /// reference (see `EntryFilter::may_match_line`). When the line holds a
    /// character FTS5 may take for a letter (an accent, `🤔`), a word is let
    /// in when its root is in the line, as `EntryFilter` does.
    pub fn line_words(&self, line: &[u8]) -> u64 {
        let every = u64::MAX;
        let Ok(text) = std::str::from_utf8(line) else {
            return every;
        };
        if has_char_escape(line) || memchr::memmem::find(line, b"@@").is_some() {
            return every;
        }
        let letters = !text.is_ascii() && text.chars().any(|c| !c.is_ascii() && !splits_tokens(c));
        if letters && text.chars().any(may_fold) {
            return every;
        }
        let mut found = self.untold;
        for m in self.roots.find_overlapping_iter(line) {
            let of_root = self.root_words[m.pattern().as_usize()];
            if found & of_root == of_root {
                continue;
            }
            if letters {
                found |= of_root;
                continue;
            }
            let run = &line[m.start()..];
            let end = run
                .iter()
                .position(|b| !b.is_ascii_alphanumeric())
                .unwrap_or(run.len());
            found |= self.piece_words(&run[..end.min(self.longest + 1)]);
        }
        found
    }

    /// The words some piece of `run` (letters and digits, any case) that
    /// starts at its start matches, as a token of FTS5: a piece of at most
    /// [`MAX_STEMMED`] bytes by its stem, a longer one as it is.
    fn piece_words(&self, run: &[u8]) -> u64 {
        let mut lower = self.lower.borrow_mut();
        lower.clear();
        lower.extend(run.iter().map(u8::to_ascii_lowercase));
        if let Some(&words) = self.pieces.borrow().get(lower.as_slice()) {
            return words;
        }
        let mut words = 0u64;
        for len in 1..=lower.len().min(MAX_STEMMED) {
            let stemmed = stem(&String::from_utf8_lossy(&lower[..len]));
            for (i, w) in self.words.iter().enumerate() {
                let matches = if w.prefix {
                    stemmed.starts_with(&w.stem)
                } else {
                    stemmed == w.stem
                };
                if matches {
                    words |= 1 << i;
                }
            }
        }
        // Longer pieces are not stemmed: a whole word's stem is one of
        // them, a prefix word's the beginning of one.
        for (i, w) in self.words.iter().enumerate() {
            if (w.prefix || w.stem.len() > MAX_STEMMED) && lower.starts_with(w.stem.as_bytes()) {
                words |= 1 << i;
            }
        }
        self.pieces.borrow_mut().insert(lower.clone(), words);
        words
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
        terms.push(term(phrase, prefix, words)?);
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

/// The term `"phrase"` (`*` after it when `prefix`).
fn term(phrase: &str, prefix: bool, words: &mut Vec<Word>) -> Option<Term> {
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
    Some(Term { words: indices })
}

#[cfg(test)]
mod tests {
    use super::super::snippet_filter::tests::{fts5_table, words_in};
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

    /// The rows FTS5 finds `expr` in (`find`: `SELECT rowid … MATCH ?1`).
    fn fts5_rows(find: &mut rusqlite::Statement<'_>, expr: &str) -> std::collections::HashSet<i64> {
        find.query_map([expr], |r| r.get(0))
            .unwrap()
            .map(Result::unwrap)
            .collect()
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
        let words = words_in(&lines, 2);
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
                let found = fts5_rows(&mut find, &expr);
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

    /// The lines of the shared fixtures' session files, of
    /// `snippet_filter`'s lines of every shape, and lines whose text a cut
    /// or a secret ends inside a word (`[REDACTED]billing`, a thinking
    /// clipped after `bill` of `billingsx`, a long tool output's head
    /// after `invoic` of `invoicesq`).
    fn lines_and_texts() -> Vec<(String, String)> {
        let dir = crate::shared_dir::shared_dir().join("fixtures/pi-sessions");
        // Its two sets, real and generated, sit where projects sit (sorted).
        let mut files = crate::session::discovery::session_files(&dir);
        let generated = tempfile::tempdir().unwrap();
        let mut lines = super::super::snippet_filter::tests::session_lines();
        let message = |id: usize, message: serde_json::Value| {
            serde_json::json!({"type": "message", "id": format!("g{id}"), "parentId": null,
                "timestamp": "2026-01-01T00:00:00.000Z", "message": message})
            .to_string()
        };
        for pad in 590..600 {
            let thinking = format!("{} billingsx tail", "a ".repeat(pad / 2));
            lines.push(message(
                pad,
                serde_json::json!({"role": "assistant", "content": [
                {"type": "thinking", "thinking": thinking}, {"type": "text", "text": "ok"}]}),
            ));
            let output = format!(
                "{}invoicesq after {}",
                "b".repeat(pad + 100),
                "c ".repeat(600)
            );
            lines.push(message(pad + 100, serde_json::json!({"role": "toolResult", "toolCallId": "c1",
                "toolName": "bash", "content": [{"type": "text", "text": output}], "isError": false})));
        }
        lines.push(message(
            1,
            serde_json::json!({"role": "user",
            "content": "see ghp_sOmuQ2GzWVPworJzUMbvwDW8I8m6dpGwYjpcbilling now"}),
        ));
        let path = generated.path().join("2026_generated.jsonl");
        std::fs::write(&path, lines.join("\n") + "\n").unwrap();
        files.push(path);
        let mut out = Vec::new();
        for path in &files {
            let file = crate::session::open_file(path).unwrap();
            let bytes = std::fs::read(path).unwrap();
            let Some(header) = bytes.iter().position(|&b| b == b'\n') else {
                continue;
            };
            let from = header as u64 + 1;
            let Ok(read) = crate::session::read_lines(path, file, from, u64::MAX) else {
                continue;
            };
            for (entry, start) in read.entries.iter().zip(&read.lines) {
                let start = *start as usize;
                let end = bytes[start..]
                    .iter()
                    .position(|&b| b == b'\n')
                    .map_or(bytes.len(), |k| start + k);
                if let Some(text) = super::super::rows::entry_text(entry).text {
                    out.push((
                        String::from_utf8_lossy(&bytes[start..end]).into_owned(),
                        text,
                    ));
                }
            }
        }
        out
    }

    /// Every entry text (as the reader parses and redacts it) in which
    /// SQLite's FTS5 finds an expression has a line that
    /// [`Matcher::line_words`] lets in, over real and generated session
    /// lines and expressions of their words (whole, prefixes, phrases,
    /// both); and most other lines are left out, more than the roots alone
    /// leave out.
    #[test]
    fn lines_left_out_hold_no_text_fts5_matches() {
        let pairs = lines_and_texts();
        assert!(pairs.len() > 300, "{}", pairs.len());
        let texts: Vec<&str> = pairs.iter().map(|(_, t)| t.as_str()).collect();
        let db = fts5_table(&texts);
        let mut words = words_in(&texts, 2);
        // The words the generated lines cut or redact inside a run.
        words.extend(["billing", "bill", "invoic", "invoice", "token", "read"].map(String::from));
        words.sort();
        words.dedup();
        let mut find = db.prepare("SELECT rowid FROM t WHERE t MATCH ?1").unwrap();
        let (mut found, mut left_out, mut roots_left_out) = (0, 0, 0);
        for (k, w) in words.iter().enumerate().step_by(19) {
            let other = &words[(k * 7919) % words.len()];
            let prefix = &w[..w.len().min(3 + k % 3)];
            for expr in [
                format!("\"{w}\""),
                format!("\"{prefix}\"*"),
                format!("\"{other} {w}\""),
                format!("\"{w}\" AND \"{other}\""),
            ] {
                let Some(matcher) = Matcher::new(std::slice::from_ref(&expr)) else {
                    continue;
                };
                let roots =
                    super::super::snippet_filter::EntryFilter::new(std::slice::from_ref(&expr));
                let rows = fts5_rows(&mut find, &expr);
                for (i, (line, text)) in pairs.iter().enumerate() {
                    let may = matcher.may_match_line(0, matcher.line_words(line.as_bytes()));
                    if rows.contains(&(i as i64)) {
                        found += 1;
                        assert!(may, "{expr} is in {text:?}; its line is left out: {line}");
                    } else if !may {
                        left_out += 1;
                    }
                    roots_left_out += usize::from(!roots.may_match_line(line.as_bytes()));
                }
            }
        }
        println!(
            "{} lines, {found} texts found, {left_out} lines left out ({roots_left_out} by roots)",
            pairs.len()
        );
        assert!(found > 1_000, "{found}");
        assert!(left_out > roots_left_out, "{left_out} {roots_left_out}");
        let m = Matcher::new(&["\"token\"".into()]).unwrap();
        assert_eq!(
            m.line_words(br#"{"text":"tokio and tokyo"}"#),
            0,
            "no piece of tokio is token"
        );
        assert_eq!(m.line_words(br#"{"text":"tokens"}"#), 1);
        assert_eq!(
            m.line_words(br#"{"text":"xghp_abctokens"}"#),
            1,
            "a piece of a run"
        );
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
