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

/// Every reference in `prompt`, deduplicated (case-insensitively on the
/// target and question; the largest depth wins), in first-seen order.
pub fn parse(prompt: &str) -> Vec<Reference> {
    let code = code_ranges(prompt);
    let mut out: Vec<Reference> = Vec::new();
    let mut pos = 0;
    while let Some(found) = prompt[pos..].find("@@") {
        let at = pos + found;
        pos = at + 2;
        if code.iter().any(|r| r.contains(&at)) {
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
        if let Some((reference, end)) = parse_one(prompt, at) {
            pos = end;
            merge(&mut out, reference);
        }
    }
    out
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
    let mut cut: Vec<Range<usize>> = code_ranges(text)
        .into_iter()
        .filter(|r| text[r.clone()].contains("@@"))
        .collect();
    let mut pos = 0;
    while let Some(found) = text[pos..].find("@@") {
        let at = pos + found;
        if let Some(r) = cut.iter().find(|r| r.contains(&at)) {
            pos = r.end;
            continue;
        }
        // Unparsable (`@@` alone, `@@""`): up to the next space.
        let token = || {
            text[at..]
                .find(char::is_whitespace)
                .map_or(text.len(), |i| at + i)
        };
        let end = parse_one(text, at)
            .map_or_else(token, |(_, end)| end)
            .max(at + 2);
        let before = text[..at].trim_end_matches([' ', '\t']);
        let word = before.rfind(char::is_whitespace).map_or(0, |i| i + 1);
        let lead = LEADS.contains(&before[word..].to_lowercase().as_str());
        cut.push(if lead { word } else { at }..end);
        pos = end;
    }
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
fn parse_one(text: &str, at: usize) -> Option<(Reference, usize)> {
    let start = at + 2;
    let rest = &text[start..];
    let line_end = rest.find('\n').map_or(text.len(), |i| start + i);
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

fn inline_spans(paragraph: &str, base: usize, out: &mut Vec<Range<usize>>) {
    let bytes = paragraph.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] != b'`' {
            i += 1;
            continue;
        }
        let n = bytes[i..].iter().take_while(|&&b| b == b'`').count();
        let mut j = i + n;
        let mut closed = None;
        while j < bytes.len() {
            if bytes[j] == b'`' {
                let m = bytes[j..].iter().take_while(|&&b| b == b'`').count();
                if m == n {
                    closed = Some(j + m);
                    break;
                }
                j += m;
            } else {
                j += 1;
            }
        }
        match closed {
            Some(end) => {
                out.push(base + i..base + end);
                i = end;
            }
            None => i += n,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn targets(p: &str) -> Vec<(String, u32, Option<String>)> {
        parse(p)
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
        assert!(parse("mail me at bob@@example.com").is_empty());
        assert!(parse("`@@auth` and ``x @@y``").is_empty());
        assert!(parse("```\n@@auth\n```\n").is_empty());
        assert!(parse("~~~md\n@@auth\n~~~").is_empty());
        assert!(parse("@@ alone, @@\"\" and @@@triple").is_empty());
        // A code span may run over lines within a paragraph.
        assert!(parse("see ``a\n@@auth b`` done").is_empty());
        assert!(parse("code:\n\n    @@auth x\n\tfoo(@@y)\n").is_empty());
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
                let _ = parse(&text[a..b]);
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

    #[test]
    fn dedup_keeps_first_and_largest_depth() {
        let t = targets("@@Auth @@auth~2 @@other @@AUTH");
        assert_eq!(t, vec![("Auth".into(), 2, None), ("other".into(), 0, None)]);
    }
}
