//! `@@` references in text: finding them in a prompt ([`parse`]), and
//! removing them from session text that names or describes a session
//! ([`without_references`]), so that a session which only *mentions*
//! `@@cron-in-gitclaw` never matches `@@cron`. A leaf module: the catalog
//! (which strips) and `references` (which parses prompts) both use it.
//!
//! Forms: `@@<uuid>`, `@@<id prefix>`, `@@<name-slug>`, `@@"Quoted name"`,
//! each with an optional ancestor depth (`~2`) and an optional question
//! (`: question?`). Text inside inline code spans and fenced code blocks is
//! ignored, and so is `@@` glued to a preceding word (`a@@b`, e-mail-like).

use std::ops::Range;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reference {
    /// What names the session: an id, prefix, slug, name or path-like text.
    pub target: String,
    pub quoted: bool,
    /// Ancestor levels requested with `~N` (0 = just the session).
    pub depth: u32,
    pub question: Option<String>,
    /// The reference as written, from `@@` (for messages).
    pub raw: String,
}

/// Largest depth parsed; the config caps it further.
const MAX_PARSED_DEPTH: u32 = 99;
/// Characters that end an unquoted reference.
const STOP: &[char] = &[
    '"', '`', '<', '>', '(', ')', '[', ']', '{', '}', ',', ';', '|', ':', '*',
];
/// Sentence punctuation (and a closing single quote) trimmed from the end of
/// an unquoted reference; an apostrophe inside one (`bob's-notes`) stays.
const TRAILING: &[char] = &['.', '!', '?', '\''];

/// `@@` read in one prompt at most, references or not: past them the rest
/// of a prompt is not read. A person writes a handful; a pasted diff has one
/// per hunk (`@@ -1,3 +1,4 @@`); a hostile prompt has millions.
pub const MAX_AT_SIGNS_READ: usize = 10_000;

/// The references of `prompt`, deduplicated (case-insensitively on the
/// target and question; the largest depth wins), in first-seen order, at
/// most `max` of them: reading stops at the `max`-th distinct one, or after
/// [`MAX_AT_SIGNS_READ`] `@@`, so a prompt of a million `@@` costs what its
/// first ones cost. A caller that honours `n` asks for `n + 1` to learn
/// that there were more.
///
/// Linear in the prompt: code ranges are found in one pass, each `@@` looks
/// them up from where the previous one stopped, and each line's end is found
/// once ([`LineEnds`]).
pub fn parse(prompt: &str, max: usize) -> Vec<Reference> {
    let finder = memchr::memmem::Finder::new("@@");
    if finder.find(prompt.as_bytes()).is_none() {
        return Vec::new();
    }
    let mut code = InCode::new(code_ranges(prompt));
    let mut lines = LineEnds::new(prompt);
    let mut out: Vec<Reference> = Vec::new();
    let mut pos = 0;
    let mut read = 0;
    while out.len() < max && read < MAX_AT_SIGNS_READ {
        let Some(found) = finder.find(&prompt.as_bytes()[pos..]) else {
            break;
        };
        read += 1;
        let at = pos + found;
        pos = at + 2;
        if code.at(at).is_some() {
            continue;
        }
        let before = prompt[..at].chars().next_back();
        if before.is_some_and(|c| {
            c.is_alphanumeric() || matches!(c, '_' | '@' | '.' | '+' | '-' | '/' | '\\' | '=')
        }) {
            continue;
        }
        if prompt[pos..].starts_with('@') {
            pos += prompt[pos..].len() - prompt[pos..].trim_start_matches('@').len();
            continue;
        }
        if let Some((reference, end)) = parse_one(prompt, at, &mut lines) {
            pos = end;
            merge(&mut out, reference);
        }
    }
    out
}

/// Which code range, if any, holds an offset: ranges sorted by start, asked
/// about offsets that only grow (one pass over both).
struct InCode {
    ranges: Vec<Range<usize>>,
    next: usize,
}

impl InCode {
    fn new(mut ranges: Vec<Range<usize>>) -> InCode {
        ranges.sort_by_key(|r| r.start);
        InCode { ranges, next: 0 }
    }

    /// The range holding `at` (offsets asked never decrease).
    fn at(&mut self, at: usize) -> Option<Range<usize>> {
        while self.ranges.get(self.next).is_some_and(|r| r.end <= at) {
            self.next += 1;
        }
        // Ranges may nest (a span inside a block): any holding `at` will do.
        self.ranges[self.next..]
            .iter()
            .take_while(|r| r.start <= at)
            .find(|r| r.contains(&at))
            .cloned()
    }
}

/// The end of the line holding an offset, each line's found once: offsets
/// asked about only grow, so the last answer is reused within its line.
struct LineEnds<'t> {
    text: &'t str,
    /// The line last asked about: from its start (inclusive) to its end.
    line: Range<usize>,
}

impl<'t> LineEnds<'t> {
    fn new(text: &'t str) -> Self {
        LineEnds { text, line: 0..0 }
    }

    /// Offset of the `\n` ending the line that holds `at` (the text's length on the last line).
    fn end(&mut self, at: usize) -> usize {
        if !(self.line.start <= at && at < self.line.end) {
            let end = memchr::memchr(b'\n', &self.text.as_bytes()[at..])
                .map_or(self.text.len(), |i| at + i);
            self.line = at..end;
        }
        self.line.end
    }
}

/// `text` with every `@@` reference (with its depth and question), the
/// word leading to it ("from @@x" says nothing once `@@x` is gone) and every
/// code span or block holding one removed, whitespace runs left as one
/// space in each line, empty lines dropped. Borrowed when there is nothing to remove.
pub fn without_references(text: &str) -> std::borrow::Cow<'_, str> {
    const LEADS: [&str; 10] = [
        "from", "in", "of", "on", "at", "to", "with", "like", "see", "and",
    ];
    if !text.contains("@@") {
        return std::borrow::Cow::Borrowed(text);
    }
    let mut code = InCode::new(
        code_ranges(text)
            .into_iter()
            .filter(|r| text[r.clone()].contains("@@"))
            .collect(),
    );
    let mut lines = LineEnds::new(text);
    let mut cut: Vec<Range<usize>> = Vec::new();
    let mut pos = 0;
    while let Some(found) = text[pos..].find("@@") {
        let at = pos + found;
        if let Some(r) = code.at(at) {
            pos = r.end;
            continue;
        }
        // Unparsable (`@@` alone, `@@""`): up to the next space.
        let token = || {
            text[at..]
                .find(char::is_whitespace)
                .map_or(text.len(), |i| at + i)
        };
        let end = parse_one(text, at, &mut lines)
            .map_or_else(token, |(_, end)| end)
            .max(at + 2);
        let before = text[..at].trim_end_matches([' ', '\t']);
        cut.push(lead_word(before, &LEADS).unwrap_or(at)..end);
        pos = end;
    }
    cut.extend(code.ranges);
    cut.sort_by_key(|r| r.start);
    let mut out = String::with_capacity(text.len());
    let mut from = 0;
    for r in cut {
        if r.start > from {
            out.push_str(&text[from..r.start]);
            out.push(' ');
        }
        from = from.max(r.end);
    }
    out.push_str(&text[from..]);
    let lines = out.lines().map(crate::text::flat).filter(|l| !l.is_empty());
    std::borrow::Cow::Owned(lines.collect::<Vec<_>>().join("\n"))
}

/// Where the last word of `before` starts, when it is one of `leads` (any
/// case) standing alone: looked up from the end, never scanning the text.
fn lead_word(before: &str, leads: &[&str]) -> Option<usize> {
    leads.iter().find_map(|lead| {
        let start = before.len().checked_sub(lead.len())?;
        let word = before.get(start..)?;
        let alone = before[..start]
            .chars()
            .next_back()
            .is_none_or(char::is_whitespace);
        (alone && word.eq_ignore_ascii_case(lead)).then_some(start)
    })
}

fn merge(out: &mut Vec<Reference>, r: Reference) {
    let same = |o: &Reference| {
        o.target.to_lowercase() == r.target.to_lowercase()
            && o.question.as_deref().map(str::to_lowercase)
                == r.question.as_deref().map(str::to_lowercase)
    };
    match out.iter_mut().find(|o| same(o)) {
        Some(o) => o.depth = o.depth.max(r.depth),
        None => out.push(r),
    }
}

/// Parse the reference starting at `at` (the first `@`). Returns it and the
/// byte offset where scanning resumes.
fn parse_one(text: &str, at: usize, lines: &mut LineEnds<'_>) -> Option<(Reference, usize)> {
    let start = at + 2;
    let rest = &text[start..];
    let line_end = lines.end(start);
    let (target, quoted, mut end, mut depth) = if let Some(inner) = rest.strip_prefix('"') {
        let close = inner[..line_end - start - 1].find('"')?;
        let target = inner[..close].trim();
        let mut end = start + 1 + close + 1;
        let mut depth = 0;
        if let Some((d, len)) = depth_suffix(&text[end..line_end]) {
            depth = d;
            end += len;
        }
        (target.to_string(), true, end, depth)
    } else {
        let len = rest
            .find(|c: char| c.is_whitespace() || STOP.contains(&c))
            .unwrap_or(rest.len());
        let token = rest[..len].trim_end_matches(TRAILING);
        let end = start + token.len();
        let (target, depth) = match token.rfind('~') {
            Some(i) if i > 0 => match depth_suffix(&token[i..]) {
                Some((d, n)) if n == token.len() - i => (&token[..i], d),
                _ => (token, 0),
            },
            _ => (token, 0),
        };
        (target.to_string(), false, end, depth)
    };
    if target.is_empty() {
        return None;
    }
    depth = depth.min(MAX_PARSED_DEPTH);
    let mut question = None;
    if let Some(after) = text[end..line_end].strip_prefix(':') {
        let q_start = end + 1 + (after.len() - after.trim_start().len());
        let q_text = &text[q_start..line_end];
        let q_len = q_text.find('?').map_or(q_text.len(), |i| i + 1);
        let q = q_text[..q_len].trim();
        if !q.is_empty() {
            question = Some(q.to_string());
            end = q_start + q_len;
        }
    }
    let raw = text[at..end].trim_end().to_string();
    Some((
        Reference {
            target,
            quoted,
            depth,
            question,
            raw,
        },
        end,
    ))
}

/// `~N` at the start of `s`: (N, bytes consumed).
fn depth_suffix(s: &str) -> Option<(u32, usize)> {
    let digits = s.strip_prefix('~')?;
    let n = digits
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(digits.len());
    if n == 0 {
        return None;
    }
    let d = digits[..n]
        .parse::<u32>()
        .unwrap_or(MAX_PARSED_DEPTH)
        .min(MAX_PARSED_DEPTH);
    Some((d, n + 1))
}

/// Byte ranges of code, CommonMark-style: fenced blocks (``` or ~~~),
/// indented blocks (4 spaces or a tab, not continuing a paragraph) and
/// inline code spans (matched backtick runs within a paragraph: they may
/// span lines, but not a blank line or a fence).
fn code_ranges(text: &str) -> Vec<Range<usize>> {
    let mut out = Vec::new();
    let mut fence: Option<(char, usize, usize)> = None; // (char, length, block start)
    let mut paragraph: Option<usize> = None; // start of the current paragraph
    let mut offset = 0;
    for line in text.split_inclusive('\n') {
        let start = offset;
        offset += line.len();
        let trimmed = line.trim_start_matches(' ');
        let indent_ok = line.len() - trimmed.len() <= 3;
        let run = |c: char| trimmed.chars().take_while(|&x| x == c).count();
        if let Some((c, len, block_start)) = fence {
            let n = run(c);
            if indent_ok && n >= len && trimmed[n..].trim().is_empty() {
                out.push(block_start..offset);
                fence = None;
            }
            continue;
        }
        let opens = indent_ok
            .then(|| {
                let (bt, tl) = (run('`'), run('~'));
                if bt >= 3 && !trimmed[bt..].contains('`') {
                    Some(('`', bt))
                } else {
                    (tl >= 3).then_some(('~', tl))
                }
            })
            .flatten();
        if opens.is_some() || line.trim().is_empty() {
            // A fence or a blank line ends the paragraph before it.
            if let Some(p) = paragraph.take() {
                inline_spans(&text[p..start], p, &mut out);
            }
            fence = opens.map(|(c, n)| (c, n, start));
            continue;
        }
        if paragraph.is_none() && (!indent_ok || line.starts_with('\t')) {
            out.push(start..offset);
            continue;
        }
        paragraph.get_or_insert(start);
    }
    if let Some(p) = paragraph {
        inline_spans(&text[p..], p, &mut out);
    }
    if let Some((_, _, block_start)) = fence {
        // An unclosed fence runs to the end, as in CommonMark.
        out.push(block_start..text.len());
    }
    out
}

/// The code spans of a paragraph: a run of n backticks opens one that the
/// next run of exactly n backticks closes; a run with no closer is text.
/// Linear: the runs are listed once, and the closer of each is found from a
/// cursor per run length that only moves forward.
fn inline_spans(paragraph: &str, base: usize, out: &mut Vec<Range<usize>>) {
    let bytes = paragraph.as_bytes();
    // Every maximal run of backticks: (start, length).
    let mut runs: Vec<(usize, usize)> = Vec::new();
    let mut i = 0;
    while let Some(k) = memchr::memchr(b'`', &bytes[i..]) {
        let start = i + k;
        let n = bytes[start..].iter().take_while(|&&b| b == b'`').count();
        runs.push((start, n));
        i = start + n;
    }
    // Per run length, the indexes of its runs in order, and how far each was read.
    let mut by_len: std::collections::HashMap<usize, (Vec<usize>, usize)> =
        std::collections::HashMap::new();
    for (index, &(_, n)) in runs.iter().enumerate() {
        by_len.entry(n).or_default().0.push(index);
    }
    let mut r = 0;
    while r < runs.len() {
        let (start, n) = runs[r];
        let closer = by_len.get_mut(&n).and_then(|(same, read)| {
            while same.get(*read).is_some_and(|&other| other <= r) {
                *read += 1;
            }
            same.get(*read).copied()
        });
        match closer {
            Some(c) => {
                let (close, m) = runs[c];
                out.push(base + start..base + close + m);
                r = c + 1;
            }
            None => r += 1,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn targets(p: &str) -> Vec<(String, u32, Option<String>)> {
        parse(p, usize::MAX)
            .into_iter()
            .map(|r| (r.target, r.depth, r.question))
            .collect()
    }

    #[test]
    fn forms() {
        assert_eq!(
            targets("see @@auth-refactor."),
            vec![("auth-refactor".into(), 0, None)]
        );
        assert_eq!(
            targets("@@\"Auth refactor\"~2 x"),
            vec![("Auth refactor".into(), 2, None)]
        );
        assert_eq!(targets("(@@abc123~1)"), vec![("abc123".into(), 1, None)]);
        assert_eq!(
            targets("@@auth: which TTL? and more"),
            vec![("auth".into(), 0, Some("which TTL?".into()))]
        );
        assert_eq!(
            targets("@@\"A b\": why\n"),
            vec![("A b".into(), 0, Some("why".into()))]
        );
        assert_eq!(
            targets("@@../../etc/passwd"),
            vec![("../../etc/passwd".into(), 0, None)]
        );
        assert_eq!(targets("@@~/x"), vec![("~/x".into(), 0, None)]);
        assert_eq!(
            targets("'@@bob's-notes'?"),
            vec![("bob's-notes".into(), 0, None)]
        );
        assert_eq!(targets("**@@auth~3**"), vec![("auth".into(), 3, None)]);
    }

    #[test]
    fn not_references() {
        assert!(parse("mail me at bob@@example.com", usize::MAX).is_empty());
        assert!(parse("`@@auth` and ``x @@y``", usize::MAX).is_empty());
        assert!(parse("```\n@@auth\n```\n", usize::MAX).is_empty());
        assert!(parse("~~~md\n@@auth\n~~~", usize::MAX).is_empty());
        assert!(parse("@@ alone, @@\"\" and @@@triple", usize::MAX).is_empty());
        // A code span may run over lines within a paragraph.
        assert!(parse("see ``a\n@@auth b`` done", usize::MAX).is_empty());
        assert!(parse("code:\n\n    @@auth x\n\tfoo(@@y)\n", usize::MAX).is_empty());
    }

    #[test]
    fn code_spans_end_with_their_paragraph() {
        // A blank line ends the paragraph: the backtick stays literal.
        assert_eq!(targets("`a\n\n@@auth`"), vec![("auth".into(), 0, None)]);
        // A fence interrupts the paragraph (CommonMark): the opening run on
        // the first line has no closer before it, so `@@b` is not in code.
        assert_eq!(
            targets("see ``` and\n@@b\n```\n@@c\n```"),
            vec![("b".into(), 0, None)]
        );
        // Indented text continuing a paragraph is not code.
        assert_eq!(
            targets("compare\n    @@auth"),
            vec![("auth".into(), 0, None)]
        );
    }

    #[test]
    fn never_panics_on_any_slice_of_tricky_text() {
        let text = "x @@\"é\"~2: q? `@@a` ```\n@@b\n``` @@ü~ @@\" @@~9 @@a:  \n@@日本~x: ? a@@b @@@c @@'d' \"@@";
        let bounds: Vec<usize> = text
            .char_indices()
            .map(|(i, _)| i)
            .chain([text.len()])
            .collect();
        for &a in &bounds {
            for &b in bounds.iter().filter(|&&b| b >= a) {
                let _ = parse(&text[a..b], usize::MAX);
            }
        }
    }

    #[test]
    fn references_are_removed_from_session_text() {
        let strip = |t: &str| without_references(t).into_owned();
        assert_eq!(strip("check @@cron-in-gitclaw please"), "check please");
        assert_eq!(
            strip("look at @@034d1cd7~2: what changed? then go"),
            "look then go"
        );
        assert_eq!(
            strip("see `@@cron` and\n```\n@@x\n```\ndone"),
            "see and\ndone"
        );
        assert_eq!(
            strip("continue from @@\"Cron in gitclaw\" now"),
            "continue now"
        );
        assert_eq!(strip("@@\"Cron in gitclaw\" vs cron"), "vs cron");
        assert_eq!(strip("no refs, `code` kept"), "no refs, `code` kept");
        assert_eq!(strip("mail bob@@example.com @@ x"), "mail bob x");
    }

    /// Reading stops at the limit: after `max` distinct references, and after
    /// [`MAX_AT_SIGNS_READ`] `@@` of any kind (what makes a hostile prompt cost
    /// what its head costs: the hostile bench times 10 MB prompts).
    #[test]
    fn reading_stops_at_the_limits() {
        let names =
            |refs: Vec<Reference>| -> Vec<String> { refs.into_iter().map(|r| r.target).collect() };
        assert_eq!(names(parse("@@a @@b @@a~2 @@c @@d", 2)), ["a", "b"]);
        assert_eq!(names(parse("@@a @@b @@a~2 @@c @@d", 3)), ["a", "b", "c"]);
        let under = format!("{}@@late", "@@ ".repeat(MAX_AT_SIGNS_READ - 1));
        assert_eq!(names(parse(&under, 4)), ["late"]);
        let over = format!("{}@@late", "@@ ".repeat(MAX_AT_SIGNS_READ));
        assert!(parse(&over, 4).is_empty());
    }

    #[test]
    fn code_spans_pair_runs_of_equal_length() {
        assert!(parse("``a ` @@x ` b``", 4).is_empty());
        assert_eq!(targets("``` @@x ``"), vec![("x".into(), 0, None)]);
        assert_eq!(
            targets("`a` @@x `b`` c` `` @@y"),
            vec![("x".into(), 0, None), ("y".into(), 0, None)]
        );
    }

    #[test]
    fn dedup_keeps_first_and_largest_depth() {
        let t = targets("@@Auth @@auth~2 @@other @@AUTH");
        assert_eq!(t, vec![("Auth".into(), 2, None), ("other".into(), 0, None)]);
    }
}
