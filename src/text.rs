//! Small text helpers shared by every module that cuts or shows text: the
//! one `clip`, the UTF-8 boundary rules, and text on one line (`flat`,
//! `one_line`, `first_line`) or with the home directory as `~` (`home_relative`).

/// Which part of a text [`clip`] keeps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Keep {
    /// The beginning (a request, a name).
    Head,
    /// The end (a session's conclusion is at its end).
    Tail,
}

/// At most `max` UTF-16 units of `text` (JavaScript's length, the unit of
/// pi's token estimate), the cut marked with `…` (counted in `max`).
/// The reference form of a name (`@@auth-refactor`): lower-cased,
/// whitespace runs as one hyphen.
pub fn slug(name: &str) -> String {
    name.trim()
        .to_lowercase()
        .split_whitespace()
        .collect::<Vec<_>>()
        .join("-")
}

pub fn clip(text: &str, max: usize, keep: Keep) -> String {
    if text.encode_utf16().count() <= max {
        return text.to_string();
    }
    let mut used = 0;
    let mut fits = |c: &char| {
        used += c.len_utf16();
        used < max
    };
    match keep {
        Keep::Head => text.chars().take_while(&mut fits).chain(['…']).collect(),
        Keep::Tail => {
            let tail: Vec<char> = text.chars().rev().take_while(&mut fits).collect();
            ['…'].into_iter().chain(tail.into_iter().rev()).collect()
        }
    }
}

/// The name serde gives a unit variant (`Rule::Id` → `id`), for messages
/// that say what the JSON says.
pub fn variant_name(value: &impl serde::Serialize) -> String {
    serde_json::to_value(value)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_default()
}

/// `text` on one line: every whitespace run (newlines too) as one space, trimmed.
pub fn flat(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// [`flat`], then at most `max` UTF-16 units ([`clip`]): error texts end up
/// in one-line status messages and log lines.
pub fn one_line(text: &str, max: usize) -> String {
    clip(&flat(text), max, Keep::Head)
}

/// The first line of `text`, trimmed, at most `max` UTF-16 units ([`clip`]):
/// what an error says before its details (tool results quote it).
pub fn first_line(text: &str, max: usize) -> String {
    clip(
        text.lines().next().unwrap_or_default().trim(),
        max,
        Keep::Head,
    )
}

/// Longest title made from a first message, in UTF-16 units (pi's session
/// list cuts its preview about there).
pub const TITLE_UNITS: usize = 60;

/// A title for a session that has no name, from its first message: the
/// first line that says something (code fences, markdown markers, quotes
/// and emphasis dropped), on one line, cut at a word boundary with `…` to
/// at most [`TITLE_UNITS`]. Empty when the message holds no words.
pub fn title_from_message(message: &str) -> String {
    let mut in_fence = false;
    let line = message
        .lines()
        .filter(|line| {
            let fence = line.trim_start().starts_with("```");
            in_fence ^= fence;
            !fence && !in_fence
        })
        .map(strip_markdown)
        .find(|line| line.chars().any(char::is_alphanumeric))
        .unwrap_or_default();
    clip_words(&line, TITLE_UNITS)
}

/// A line without its markdown: leading `#`, `>`, list markers and quote
/// marks, and `*`, `_`, `` ` `` emphasis, whitespace collapsed.
fn strip_markdown(line: &str) -> String {
    let mut rest = line.trim();
    loop {
        let trimmed = rest
            .trim_start_matches(['#', '>', '-', '*', '+', ' ', '\t'])
            .trim_start();
        let numbered = trimmed
            .split_once(['.', ')'])
            .filter(|(n, _)| !n.is_empty() && n.len() <= 3 && n.chars().all(|c| c.is_ascii_digit()))
            .map(|(_, after)| after.trim_start());
        let next = numbered.unwrap_or(trimmed);
        if next.len() == rest.len() {
            break;
        }
        rest = next;
    }
    let plain: String = rest.chars().filter(|c| !matches!(c, '*' | '`')).collect();
    flat(&plain)
}

/// At most `max` UTF-16 units of `text`, cut after a whole word when one
/// ends in the last third (else mid-word), with `…`.
pub fn clip_words(text: &str, max: usize) -> String {
    let clipped = clip(text, max, Keep::Head);
    let Some(head) = clipped.strip_suffix('…') else {
        return clipped;
    };
    match head.rfind(char::is_whitespace) {
        Some(at) if at >= head.len() * 2 / 3 => {
            format!(
                "{}…",
                head[..at].trim_end_matches([',', ';', ':', '-', ' '])
            )
        }
        _ => clipped,
    }
}

/// `/home/me/work/x` as `~/work/x` for the user whose home it is.
pub fn home_relative(path: &str) -> String {
    let home = std::env::var("HOME").unwrap_or_default();
    match path.strip_prefix(home.trim_end_matches('/')) {
        Some(rest)
            if !home.trim_end_matches('/').is_empty()
                && (rest.is_empty() || rest.starts_with('/')) =>
        {
            format!("~{rest}")
        }
        _ => path.to_string(),
    }
}

/// The largest char boundary ≤ `at` (the whole length when `at` is past the end).
pub fn floor_char_boundary(s: &str, at: usize) -> usize {
    if at >= s.len() {
        return s.len();
    }
    let mut i = at;
    while i > 0 && !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

/// The longest start of `text` of at most `max` bytes, cut at a char boundary.
pub fn byte_head(text: &str, max: usize) -> &str {
    &text[..floor_char_boundary(text, max)]
}

/// The UTF-8 length and UTF-16 units of the character whose lead byte is
/// `lead` (valid UTF-8): walking lead bytes is cheaper than decoding chars.
pub fn char_size(lead: u8) -> (usize, usize) {
    match lead {
        0..0x80 => (1, 1),
        0x80..0xE0 => (2, 1),
        0xE0..0xF0 => (3, 1),
        _ => (4, 2),
    }
}

/// A small deterministic PRNG (xorshift64) for randomized tests.
#[cfg(test)]
pub(crate) fn xorshift(mut state: u64) -> impl FnMut() -> u64 {
    move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_line_collapses_and_cuts() {
        assert_eq!(one_line("a\n  b\tc", 10), "a b c");
        assert_eq!(one_line("abcdef", 3), "ab…");
    }

    #[test]
    fn never_splits_a_character() {
        let s = "aé😀";
        assert_eq!(floor_char_boundary(s, 0), 0);
        assert_eq!(floor_char_boundary(s, 2), 1);
        assert_eq!(floor_char_boundary(s, 4), 3);
        assert_eq!(floor_char_boundary(s, 99), s.len());
        assert_eq!(byte_head("aé", 2), "a");
        assert_eq!(byte_head("abc", 8), "abc");
    }

    #[test]
    fn a_first_message_becomes_a_one_line_title() {
        assert_eq!(
            title_from_message("## Fix the **cron** job\n\nIt fails at night."),
            "Fix the cron job"
        );
        assert_eq!(
            title_from_message("```\nerror: boom\n```\n> why does `cargo` fail?"),
            "why does cargo fail?"
        );
        assert_eq!(
            title_from_message("1. Explore how the AI agent can get access"),
            "Explore how the AI agent can get access"
        );
        assert_eq!(title_from_message("  \n```\n```"), "");
        let long = "Explore how the AI agent can get the credentials it needs without the user pasting them";
        let title = title_from_message(long);
        assert_eq!(
            title,
            "Explore how the AI agent can get the credentials it needs…"
        );
        assert!(title.encode_utf16().count() <= TITLE_UNITS);
    }

    #[test]
    fn clip_counts_utf16_units_and_the_ellipsis() {
        assert_eq!(clip("héllo", 5, Keep::Head), "héllo");
        assert_eq!(clip("héllo", 4, Keep::Head), "hél…");
        assert_eq!(clip("héllo", 4, Keep::Tail), "…llo");
        assert_eq!(clip("😀😀😀", 3, Keep::Head), "😀…");
        assert_eq!(clip("😀😀😀", 2, Keep::Head), "…");
        assert_eq!(clip("abc", 0, Keep::Head), "…");
    }
}
