//! Which entries a snippet can come from, told before SQLite tokenizes them.
//!
//! A search's snippets are cut by FTS5 in a scratch table holding the text
//! of each shown session's best ranking row, read again from its file (see
//! `snippets.rs`): ~16 KB per session, all of it tokenized and stemmed when
//! it is written, though the query's words are in a few of its entries.
//! An entry only goes in when it may hold one of the words: a token matches
//! a query word when both stem to the same word under the Porter stemmer as
//! FTS5's `porter` tokenizer applies it ([`stem`]), and a stem keeps all of
//! its token but the last two letters at most (it cuts a suffix and appends
//! at most two letters: `possibility` → `possibl`, `happy` → `happi`). The
//! letters a stem ends with that its token may not hold are only ever those
//! the rules put in place of the token's own ([`APPENDED`]). So every token
//! matching a word starts with the word's stem less those letters, its
//! *root*, and an entry whose text holds none of the roots matches none of
//! the words. The test below checks both facts against SQLite's own
//! tokenizer over a vocabulary.
//!
//! The check is only ever a superset: text that FTS5 would fold into other
//! letters (accents, combining marks, letter-like symbols) always goes in,
//! as does every entry when a word has no root of 2 letters or more.
//!
//! The same check runs on an entry's JSON line before the reader parses it
//! and redacts its text, which was most of a snippet's cost left: the text
//! is made of the line's strings, so a root in the text is in the line,
//! but for the few words the text is put together with ([`LABELS`]) and the
//! escapes of letters, which let the line in.

use aho_corasick::AhoCorasick;

/// Tokens longer than this (in bytes) are not stemmed (FTS5's `FTS5_PORTER_MAX_TOKEN`).
pub(super) const MAX_STEMMED: usize = 64;
/// Shortest root worth looking for: a shorter one lets every entry in.
const MIN_ROOT: usize = 2;

/// Letters a stem appends at most to what it keeps of its token.
const APPENDED_AT_MOST: usize = 2;

/// What a stem may end with that its token does not hold, longest first:
/// the rules' replacements add an `e` (`at` → `ate`, `bl` → `ble`, `iz` →
/// `ize`, a short stem's `e`, `enci` → `ence`, `iviti` → `ive`), turn a
/// last `y` into `i`, and `biliti` into `ble` (`l` once step 5 drops its
/// `e`); every other replacement begins the suffix it replaces (`ational` →
/// `ate` adds only the `e`). A stem ending otherwise ends with its token's
/// letters: `tera` is the root of `tera` (not `te`, which `terdusa` holds).
const APPENDED: [&str; 4] = ["le", "e", "i", "l"];

/// A suffix rule of steps 1b to 4: the suffix, the condition on what comes
/// before it, and its replacement.
struct Rule {
    suffix: &'static [u8],
    condition: fn(&[u8]) -> bool,
    replacement: &'static [u8],
}

const fn rule(
    suffix: &'static str,
    condition: fn(&[u8]) -> bool,
    replacement: &'static str,
) -> Rule {
    Rule {
        suffix: suffix.as_bytes(),
        condition,
        replacement: replacement.as_bytes(),
    }
}

fn always(_: &[u8]) -> bool {
    true
}

const STEP_1B: [Rule; 3] = [
    rule("eed", measure_above_0, "ee"),
    rule("ed", has_vowel, ""),
    rule("ing", has_vowel, ""),
];
const STEP_1B2: [Rule; 3] = [
    rule("at", always, "ate"),
    rule("bl", always, "ble"),
    rule("iz", always, "ize"),
];
const STEP_2: [Rule; 21] = [
    rule("ational", measure_above_0, "ate"),
    rule("tional", measure_above_0, "tion"),
    rule("enci", measure_above_0, "ence"),
    rule("anci", measure_above_0, "ance"),
    rule("izer", measure_above_0, "ize"),
    rule("logi", measure_above_0, "log"),
    rule("bli", measure_above_0, "ble"),
    rule("alli", measure_above_0, "al"),
    rule("entli", measure_above_0, "ent"),
    rule("eli", measure_above_0, "e"),
    rule("ousli", measure_above_0, "ous"),
    rule("ization", measure_above_0, "ize"),
    rule("ation", measure_above_0, "ate"),
    rule("ator", measure_above_0, "ate"),
    rule("alism", measure_above_0, "al"),
    rule("iveness", measure_above_0, "ive"),
    rule("fulness", measure_above_0, "ful"),
    rule("ousness", measure_above_0, "ous"),
    rule("aliti", measure_above_0, "al"),
    rule("iviti", measure_above_0, "ive"),
    rule("biliti", measure_above_0, "ble"),
];
const STEP_3: [Rule; 7] = [
    rule("icate", measure_above_0, "ic"),
    rule("ative", measure_above_0, ""),
    rule("alize", measure_above_0, "al"),
    rule("iciti", measure_above_0, "ic"),
    rule("ical", measure_above_0, "ic"),
    rule("ful", measure_above_0, ""),
    rule("ness", measure_above_0, ""),
];
const STEP_4: [Rule; 19] = [
    rule("al", measure_above_1, ""),
    rule("ance", measure_above_1, ""),
    rule("ence", measure_above_1, ""),
    rule("er", measure_above_1, ""),
    rule("ic", measure_above_1, ""),
    rule("able", measure_above_1, ""),
    rule("ible", measure_above_1, ""),
    rule("ant", measure_above_1, ""),
    rule("ement", measure_above_1, ""),
    rule("ment", measure_above_1, ""),
    rule("ent", measure_above_1, ""),
    rule("ion", measure_above_1_after_s_or_t, ""),
    rule("ou", measure_above_1, ""),
    rule("ism", measure_above_1, ""),
    rule("ate", measure_above_1, ""),
    rule("iti", measure_above_1, ""),
    rule("ous", measure_above_1, ""),
    rule("ive", measure_above_1, ""),
    rule("ize", measure_above_1, ""),
];

/// Whether `c` is a vowel at its place: `y` is one after a consonant.
fn is_vowel(c: u8, after_consonant: bool) -> bool {
    matches!(c, b'a' | b'e' | b'i' | b'o' | b'u') || (after_consonant && c == b'y')
}

/// Consonant (true) or vowel at each place of `word`.
fn consonants(word: &[u8]) -> impl Iterator<Item = bool> + '_ {
    let mut consonant = false;
    word.iter().enumerate().map(move |(i, &c)| {
        consonant = !is_vowel(c, i > 0 && consonant);
        consonant
    })
}

/// Porter's *m*: how many vowel-consonant sequences `word` has.
fn measure(word: &[u8]) -> usize {
    let mut m = 0;
    let mut seen_vowel = false;
    for consonant in consonants(word) {
        if !consonant {
            seen_vowel = true;
        } else if seen_vowel {
            m += 1;
            seen_vowel = false;
        }
    }
    m
}

fn measure_above_0(stem: &[u8]) -> bool {
    measure(stem) > 0
}

fn measure_above_1(stem: &[u8]) -> bool {
    measure(stem) > 1
}

fn measure_is_1(stem: &[u8]) -> bool {
    measure(stem) == 1
}

fn measure_above_1_after_s_or_t(stem: &[u8]) -> bool {
    matches!(stem.last(), Some(b's' | b't')) && measure_above_1(stem)
}

/// Porter's `*v*`: a vowel somewhere (`y` is one anywhere but first).
fn has_vowel(stem: &[u8]) -> bool {
    stem.iter().enumerate().any(|(i, &c)| is_vowel(c, i > 0))
}

/// Porter's `*o`: ends consonant, vowel, consonant, the last not `w`, `x` or `y`.
fn ends_cvc(stem: &[u8]) -> bool {
    if matches!(stem.last(), None | Some(b'w' | b'x' | b'y')) || stem.len() < 3 {
        return false;
    }
    let last: Vec<bool> = consonants(stem).skip(stem.len() - 3).collect();
    last == [true, false, true]
}

/// Apply the first rule whose suffix `word` ends with (and which leaves
/// something before it), if its condition holds; whether one did.
fn apply(word: &mut Vec<u8>, rules: &[Rule]) -> bool {
    let Some(rule) = rules
        .iter()
        .find(|r| word.len() > r.suffix.len() && word.ends_with(r.suffix))
    else {
        return false;
    };
    let stem = word.len() - rule.suffix.len();
    if !(rule.condition)(&word[..stem]) {
        return false;
    }
    word.truncate(stem);
    word.extend_from_slice(rule.replacement);
    true
}

/// The stem FTS5's `porter` tokenizer gives `token` (already folded to lower
/// case by `unicode61`): tokens under 3 or over 64 bytes are kept as they are.
pub(super) fn stem(token: &str) -> String {
    if token.len() < 3 || token.len() > MAX_STEMMED {
        return token.to_string();
    }
    let mut word = token.as_bytes().to_vec();
    // Step 1a: sses -> ss, ies -> i (only after something), ss kept, s cut.
    let n = word.len();
    if word[n - 1] == b's' {
        if word[n - 2] == b'e' {
            let two = (n > 4 && &word[n - 4..n - 2] == b"ss") || (n > 3 && word[n - 3] == b'i');
            word.truncate(if two { n - 2 } else { n - 1 });
        } else if word[n - 2] != b's' {
            word.truncate(n - 1);
        }
    }
    // Step 1b.
    let one_b = STEP_1B
        .iter()
        .find(|r| word.len() > r.suffix.len() && word.ends_with(r.suffix))
        .is_some_and(|r| r.suffix != b"eed");
    if apply(&mut word, &STEP_1B) && one_b && !apply(&mut word, &STEP_1B2) {
        let n = word.len();
        let last = word[n - 1];
        if !is_vowel(last, false)
            && !matches!(last, b'l' | b's' | b'z')
            && n >= 2
            && word[n - 2] == last
        {
            word.truncate(n - 1);
        } else if measure_is_1(&word) && ends_cvc(&word) {
            word.push(b'e');
        }
    }
    // Step 1c.
    if word.last() == Some(&b'y') && has_vowel(&word[..word.len() - 1]) {
        let n = word.len();
        word[n - 1] = b'i';
    }
    apply(&mut word, &STEP_2);
    apply(&mut word, &STEP_3);
    apply(&mut word, &STEP_4);
    // Step 5a.
    if word.last() == Some(&b'e') {
        let rest = &word[..word.len() - 1];
        if measure_above_1(rest) || (measure_is_1(rest) && !ends_cvc(rest)) {
            word.pop();
        }
    }
    // Step 5b.
    let n = word.len();
    if n > 1 && word[n - 1] == b'l' && word[n - 2] == b'l' && measure_above_1(&word[..n - 1]) {
        word.pop();
    }
    String::from_utf8_lossy(&word).into_owned()
}

/// What every token matching `token` (lower case) starts with: its stem
/// less the letters a stem may append (for stems of 3 letters or more). For a `prefix` token (`"auth"*`)
/// also no longer than the token less those letters. `None` when that is
/// shorter than [`MIN_ROOT`] or the token is not ASCII (FTS5 folds accents).
pub(super) fn root(token: &str, prefix: bool) -> Option<String> {
    if !token.is_ascii() {
        return None;
    }
    let stem = stem(token);
    // A whole word: a stem of 2 letters or fewer appends none (no rule that
    // appends leaves so little), one of 3 at most one (`say` -> `sai`);
    // a longer one only the letters it ends with of [`APPENDED`].
    let appended = APPENDED
        .iter()
        .find(|a| stem.ends_with(*a))
        .map_or(0, |a| a.len());
    let mut keep = stem.len().saturating_sub(appended).max(stem.len().min(2));
    if prefix {
        // Any longer stem may begin with it.
        keep = stem.len().min(token.len()).saturating_sub(APPENDED_AT_MOST);
    }
    let root = common_prefix(&stem[..keep], token);
    (root.len() >= MIN_ROOT).then(|| root.to_string())
}

fn common_prefix<'a>(a: &'a str, b: &str) -> &'a str {
    let n = a.bytes().zip(b.bytes()).take_while(|(x, y)| x == y).count();
    &a[..n]
}

/// Words an entry's text is put together with that its line need not hold
/// (`rows::entry_text`, `message_items`: a thinking block's and an image's
/// labels, an error, a command's exit code, a long output's omitted bytes, a
/// cut string's note, the marks of redacted secrets and `<private>` spans),
/// with the counts they give (digits): a word whose root is among them, or
/// starts with a digit, is not looked for in the lines.
pub(super) const LABELS: &str =
    "(thinking) [image] (error: (tool, error) (exit 1) [2 bytes omitted] \
                      [... 3 more bytes not read] [REDACTED] [private]";

/// The entries worth writing to the scratch table for snippets of the
/// `MATCH` expressions `exprs` (as `rank::snippet_expressions` builds them:
/// quoted tokens, `*` after a prefix).
pub(super) enum EntryFilter {
    /// Every entry (a word with no root).
    All,
    /// Entries holding one of these roots (any case); `lines`: also told
    /// from their lines before they are parsed (see [`EntryFilter::may_match_line`]).
    Roots { roots: AhoCorasick, lines: bool },
}

impl EntryFilter {
    pub fn new(exprs: &[String]) -> EntryFilter {
        let mut roots = Vec::new();
        for expr in exprs {
            let mut rest = expr.as_str();
            while let Some(open) = rest.find('"') {
                let after = &rest[open + 1..];
                let Some(close) = after.find('"') else {
                    return EntryFilter::All;
                };
                let prefix = after[close + 1..].starts_with('*');
                for token in after[..close].split(|c: char| !c.is_alphanumeric()) {
                    if token.is_empty() {
                        continue;
                    }
                    match root(&token.to_lowercase(), prefix) {
                        Some(root) => roots.push(root),
                        None => return EntryFilter::All,
                    }
                }
                rest = &after[close + 1..];
            }
        }
        if roots.is_empty() {
            return EntryFilter::All;
        }
        let numbers = roots
            .iter()
            .any(|r| r.starts_with(|c: char| c.is_ascii_digit()));
        match AhoCorasick::builder()
            .ascii_case_insensitive(true)
            .build(&roots)
        {
            Ok(roots) => {
                let lines = !numbers && !roots.is_match(LABELS);
                EntryFilter::Roots { roots, lines }
            }
            Err(_) => EntryFilter::All,
        }
    }

    /// Whether FTS5 may find one of the words in `text`.
    pub fn may_match(&self, text: &str) -> bool {
        match self {
            EntryFilter::All => true,
            EntryFilter::Roots { roots, .. } => {
                roots.is_match(text) || (!text.is_ascii() && text.chars().any(may_fold))
            }
        }
    }

    /// Whether the entry of the session file's JSON line `line` may have a
    /// text in which FTS5 finds one of the words, told before the line is
    /// parsed (and its text redacted). Its text is made of the line's
    /// strings (decoded, cut, with secrets replaced), its tool calls'
    /// arguments (numbers written again) and [`LABELS`]: so every token of it
    /// that matches a word is in the line as a whole, or starts at a place of
    /// the line and runs into an escape, or is a label or a number (the
    /// filter is then off for lines). A line goes in whole when it holds an
    /// escape of a character that is not a control (`\u0041` is an `A`), an
    /// `@@` reference (whose removal joins the text on either side), or is
    /// not UTF-8.
    pub fn may_match_line(&self, line: &[u8]) -> bool {
        let EntryFilter::Roots { lines: true, .. } = self else {
            return true;
        };
        let Ok(text) = std::str::from_utf8(line) else {
            return true;
        };
        self.may_match(text) || has_char_escape(line) || text.contains("@@")
    }
}

/// Whether the JSON text `line` holds a `\uXXXX` escape of a character
/// other than a control (`\u0000` to `\u001f`), or one that may be; or of
/// a control JSON also writes as a letter escape (`\u0009` is `\t`): a
/// tool call's arguments are written again into the text, and the `t` of
/// a `\t` then starts a token the line does not hold.
pub(super) fn has_char_escape(line: &[u8]) -> bool {
    memchr::memmem::find_iter(line, b"\\u").any(|at| match line.get(at + 2..at + 6) {
        Some([b'0', b'0', b'0', c]) => {
            matches!(c.to_ascii_lowercase(), b'8' | b'9' | b'a' | b'c' | b'd')
        }
        Some([b'0', b'0', b'1', _]) => false,
        _ => true,
    })
}

/// Whether FTS5's `unicode61` tokenizer may fold `c` into the letters of an
/// ASCII token or drop it from one (an accented letter, a combining mark, a
/// letter-like symbol): anything but punctuation, arrows, symbols and emoji.
pub(super) fn may_fold(c: char) -> bool {
    if c.is_ascii() {
        return false;
    }
    let symbols = matches!(c,
        '\u{a0}'..='\u{bf}' | '\u{2000}'..='\u{2bff}' | '\u{3000}'..='\u{303f}' | '\u{1f000}'..='\u{1faff}');
    c.is_alphanumeric() || !symbols
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use std::collections::HashMap;

    /// An in-memory FTS5 table `t` tokenized as the store's tables
    /// (`porter unicode61`), holding `rows` as rows 0, 1, 2, ….
    pub(in crate::store) fn fts5_table<S: AsRef<str>>(rows: &[S]) -> rusqlite::Connection {
        let db = rusqlite::Connection::open_in_memory().unwrap();
        db.execute_batch("CREATE VIRTUAL TABLE t USING fts5(x, tokenize = 'porter unicode61');")
            .unwrap();
        let tx = db.unchecked_transaction().unwrap();
        for (i, row) in rows.iter().enumerate() {
            tx.execute(
                "INSERT INTO t(rowid, x) VALUES (?1, ?2)",
                rusqlite::params![i as i64, row.as_ref()],
            )
            .unwrap();
        }
        tx.commit().unwrap();
        db
    }

    /// The distinct ASCII words of `texts` (runs of letters and digits) of
    /// at least `shortest` characters, lowercased and sorted.
    pub(in crate::store) fn words_in<S: AsRef<str>>(texts: &[S], shortest: usize) -> Vec<String> {
        let mut words: Vec<String> = texts
            .iter()
            .flat_map(|t| t.as_ref().split(|c: char| !c.is_ascii_alphanumeric()))
            .filter(|w| w.len() >= shortest.max(1))
            .map(str::to_lowercase)
            .collect();
        words.sort();
        words.dedup();
        words
    }

    /// Words of every shape: this crate's own text (English, identifiers)
    /// and each of them with the suffixes the stemmer cuts.
    fn vocabulary() -> Vec<String> {
        let texts = [
            include_str!("../../README.md"),
            include_str!("rank.rs"),
            include_str!("update.rs"),
            include_str!("../redact/rules.toml"),
            include_str!("../session/convert.rs"),
        ];
        let mut words = words_in(&texts, 1);
        const SUFFIXES: &[&str] = &[
            "s", "es", "ies", "ed", "ing", "y", "ly", "er", "ers", "ness", "ation", "ations",
            "ational", "ize", "izing", "ization", "izer", "able", "ably", "ible", "ibility", "ity",
            "iveness", "ive", "ful", "fulness", "ence", "ency", "ance", "ancy", "ment", "ments",
            "ism", "ist", "al", "ally", "ical", "icate", "iciti", "ous", "ously", "ousness", "ent",
            "ently", "ion", "ions", "ate", "ated", "ating", "bling", "bly", "logy", "e", "ee",
            "eed", "ll", "lled", "sses", "ss",
        ];
        let stems: Vec<String> = words.iter().filter(|w| w.len() <= 12).cloned().collect();
        for w in stems {
            for s in SUFFIXES {
                words.push(format!("{w}{s}"));
            }
        }
        words.sort();
        words.dedup();
        words
    }

    /// SQLite's stem of each word: each one a row of a `porter unicode61`
    /// table, its term read back through `fts5vocab`.
    fn sqlite_stems(words: &[String]) -> HashMap<String, String> {
        let db = fts5_table(words);
        db.execute_batch("CREATE VIRTUAL TABLE v USING fts5vocab(t, instance);")
            .unwrap();
        let mut stmt = db.prepare("SELECT doc, term FROM v").unwrap();
        let rows = stmt
            .query_map([], |r| Ok((r.get::<_, i64>(0)?, r.get::<_, String>(1)?)))
            .unwrap();
        rows.map(|r| {
            let (doc, term) = r.unwrap();
            (words[doc as usize].clone(), term)
        })
        .collect()
    }

    #[test]
    fn stems_are_sqlites_and_every_token_starts_with_its_root() {
        let words = vocabulary();
        assert!(words.len() > 20_000, "{}", words.len());
        let sqlite = sqlite_stems(&words);
        println!("{} words", words.len());
        let mut by_stem: HashMap<&str, Vec<&str>> = HashMap::new();
        for w in &words {
            let theirs = &sqlite[w];
            assert_eq!(&stem(w), theirs, "the stem of {w:?}");
            by_stem.entry(theirs).or_default().push(w);
        }
        for w in &words {
            let Some(root) = root(w, false) else { continue };
            for t in &by_stem[sqlite[w].as_str()] {
                assert!(
                    t.starts_with(&root),
                    "{t:?} (a match of {w:?}) starts with {root:?}"
                );
            }
        }
    }

    #[test]
    fn prefix_tokens_find_every_token_whose_stem_they_begin() {
        let words = vocabulary();
        let sqlite = sqlite_stems(&words);
        assert_eq!(root("gen", true), None, "too short to tell entries apart");
        for prefix in [
            "auth",
            "sche",
            "conf",
            "buil",
            "runn",
            "happ",
            "poss",
            "relat",
            "generaliz",
        ] {
            let root = root(prefix, true).expect("a root");
            for (w, s) in &sqlite {
                if s.starts_with(prefix) || s.starts_with(&stem(prefix)) {
                    assert!(w.starts_with(&root), "{w:?} ({s:?}) starts with {root:?}");
                }
            }
        }
    }

    #[test]
    fn every_text_fts5_matches_is_let_in() {
        // Lines of text (prose, code, rules, some of it not ASCII) as rows,
        // and queries of one word, of two (any and both), and of prefixes.
        let texts = [
            include_str!("../../README.md"),
            include_str!("../redact/rules.toml"),
            include_str!("../session/convert.rs"),
            include_str!("rank.rs"),
        ];
        let lines: Vec<&str> = texts.iter().flat_map(|t| t.lines()).collect();
        let db = fts5_table(&lines);
        let words = vocabulary();
        let mut find = db.prepare("SELECT rowid FROM t WHERE t MATCH ?1").unwrap();
        let (mut checked, mut left_out) = (0, 0);
        for (k, w) in words.iter().enumerate().step_by(37) {
            let other = &words[(k * 7919) % words.len()];
            let prefix = &w[..w.len().min(3 + k % 3)];
            for expr in [
                format!("\"{w}\""),
                format!("\"{w}\" OR \"{other}\""),
                format!("\"{prefix}\"*"),
                format!("\"{w} {other}\""),
            ] {
                let filter = EntryFilter::new(std::slice::from_ref(&expr));
                let found: Vec<i64> = find
                    .query_map([&expr], |r| r.get(0))
                    .unwrap()
                    .map(Result::unwrap)
                    .collect();
                for rowid in &found {
                    let line = lines[*rowid as usize];
                    assert!(filter.may_match(line), "{expr} finds {line:?}");
                }
                checked += found.len();
                left_out += lines
                    .iter()
                    .step_by(50)
                    .filter(|l| !filter.may_match(l))
                    .count();
            }
        }
        let sampled = (words.len() / 37) * 4 * lines.len() / 50;
        let queries = words.len().div_ceil(37) * 4;
        println!(
            "{} lines, {queries} queries, {checked} matches let in",
            lines.len()
        );
        assert!(checked > 2_000, "{checked}");
        assert!(
            left_out * 2 > sampled,
            "the filter leaves most lines out: {left_out} of {sampled}"
        );
    }

    /// Session lines of every shape an entry's text is made from, each
    /// with something of it that its text does not take as written: JSON
    /// escapes, a letter written as `\u` escape, an `@@` reference between
    /// two words, secrets and a `<private>` span, labels (thinking, image,
    /// error, exit code, omitted output), numbers written again.
    pub(in crate::store) fn session_lines() -> Vec<String> {
        let long_output = (0..3_000)
            .map(|i| format!("line{i} tokio"))
            .collect::<Vec<_>>()
            .join(" ");
        let message = |id: usize, message: serde_json::Value| {
            serde_json::json!({"type": "message", "id": format!("e{id}"), "parentId": null,
                "timestamp": "2026-01-01T00:00:00.000Z", "message": message})
            .to_string()
        };
        let mut lines = vec![
            message(1, serde_json::json!({"role": "user",
                "content": "tabs\tand\nnewlines, \"quoted\" and back\\slashed\\nwords, caf\u{e9} 日本語"})),
            r#"{"type":"message","id":"e2","parentId":null,"timestamp":"t","message":{"role":"user","content":"an \u0041pple \u001b[31mred\u001b[0m"}}"#.to_string(),
            message(3, serde_json::json!({"role": "user",
                "content": "joined left@@\"other session\"right and see @@abc123 there"})),
            message(4, serde_json::json!({"role": "user", "content":
                "key sk-ant-api03-abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789abcdefghijklmnopqrstuvwx-yzABCDEAA and AKIAIOSFODNN7EXAMPLE <private>hidden words</private> shown"})),
            message(5, serde_json::json!({"role": "assistant", "content": [
                {"type": "thinking", "thinking": "pondering the lexer"},
                {"type": "text", "text": "Answer about parsers"},
                {"type": "toolCall", "id": "c1", "name": "bash",
                 "arguments": {"command": "ls -la", "timeout": 1e3, "ratio": 1.50, "deep": {"k": "v\nw"}, "on": true}},
                {"type": "image", "data": "aGVsbG8=", "mimeType": "image/png"}],
                "errorMessage": "overloaded upstream"})),
            message(6, serde_json::json!({"role": "toolResult", "toolCallId": "c1", "toolName": "bash",
                "content": [{"type": "text", "text": long_output}, {"type": "image", "data": "aGk=", "mimeType": "image/jpeg"}],
                "isError": true})),
            message(7, serde_json::json!({"role": "bashExecution", "command": "cargo test",
                "output": "test result: ok", "exitCode": 101, "cancelled": false, "truncated": false})),
            serde_json::json!({"type": "compaction", "id": "e8", "parentId": null, "timestamp": "t",
                "summary": "compacted the migration", "firstKeptEntryId": "e1", "tokensBefore": 100})
            .to_string(),
            serde_json::json!({"type": "branch_summary", "id": "e9", "parentId": null, "timestamp": "t",
                "fromId": "e1", "summary": "abandoned the retry"})
            .to_string(),
        ];
        lines.insert(
            0,
            r#"{"type":"session","version":3,"id":"s","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/p"}"#
                .to_string(),
        );
        lines
    }

    #[test]
    fn lines_let_in_hold_every_entry_whose_text_is_let_in() {
        let lines = session_lines();
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("2026_s.jsonl");
        std::fs::write(&path, lines.join("\n") + "\n").unwrap();
        let from = lines[0].len() as u64 + 1;
        let file = crate::session::open_file(&path).unwrap();
        let read = crate::session::read_lines(&path, file, from, u64::MAX).unwrap();
        assert_eq!(read.entries.len(), lines.len() - 1);
        let texts: Vec<(String, &str)> = read
            .entries
            .iter()
            .zip(&lines[1..])
            .map(|(e, line)| {
                (
                    super::super::rows::entry_text(e).text.unwrap(),
                    line.as_str(),
                )
            })
            .collect();
        // Every word of the texts, the lines and the labels, whole and as prefixes.
        let mut words: Vec<String> = texts
            .iter()
            .flat_map(|(text, line)| [text.as_str(), *line])
            .chain([LABELS])
            .flat_map(|t| t.split(|c: char| !c.is_alphanumeric()))
            .filter(|w| !w.is_empty())
            .map(str::to_lowercase)
            .collect();
        words.sort();
        words.dedup();
        let (mut checked, mut refused) = (0, 0);
        for w in &words {
            let prefix: String = w.chars().take(3).collect();
            for expr in [format!("\"{w}\""), format!("\"{prefix}\"*")] {
                let filter = EntryFilter::new(std::slice::from_ref(&expr));
                for (text, line) in &texts {
                    if filter.may_match(text) {
                        checked += 1;
                        assert!(
                            filter.may_match_line(line.as_bytes()),
                            "{expr} is in {text:?}, its line is left out: {line}"
                        );
                    } else if !filter.may_match_line(line.as_bytes()) {
                        refused += 1;
                    }
                }
            }
        }
        println!(
            "{} words, {checked} texts let in, {refused} lines refused",
            words.len()
        );
        assert!(checked > 500 && refused > 500, "{checked} {refused}");
        // What the lines hold as written stands for them; labels and numbers do not.
        assert!(!EntryFilter::new(&["\"pondering\"".into()]).may_match_line(b"{\"x\":\"nothing\"}"));
        for label in ["\"thinking\"", "\"omitted\"", "\"redacted\"", "\"101\""] {
            let filter = EntryFilter::new(&[label.to_string()]);
            assert!(filter.may_match_line(b"{\"x\":\"nothing\"}"), "{label}");
        }
    }

    #[test]
    fn entries_without_a_root_of_the_words_are_left_out() {
        let filter = EntryFilter::new(&[
            "\"ripellolo\" AND \"throttling\"".to_string(),
            "\"ripellolo\" OR \"throttling\"".to_string(),
        ]);
        assert!(filter.may_match("the RIPELLOLO queue"));
        assert_eq!(root("we", false).as_deref(), Some("we"));
        assert_eq!(root("say", false).as_deref(), Some("sa"));
        assert!(filter.may_match("requests were throttled"));
        assert!(!filter.may_match("nothing to see → here"));
        assert!(
            filter.may_match("accents fold: thróttled"),
            "text FTS5 folds goes in"
        );
        let short = EntryFilter::new(&["\"x\" OR \"ripellolo\"".to_string()]);
        assert!(
            short.may_match("nothing to see here"),
            "a word with no root lets all in"
        );
    }
}
