//! Small text helpers shared by every module that cuts text to a budget:
//! the one `clip` and the UTF-8 boundary rules.

/// Which part of a text [`clip`] keeps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Keep {
    /// The beginning (a request, a name).
    Head,
    /// The end (a session's conclusion is at its end).
    Tail,
}

/// At most `max` chars of `text`, the cut marked with `…` (counted in `max`).
pub fn clip(text: &str, max: usize, keep: Keep) -> String {
    let n = text.chars().count();
    if n <= max {
        return text.to_string();
    }
    let kept = max.saturating_sub(1);
    match keep {
        Keep::Head => text.chars().take(kept).chain(['…']).collect(),
        Keep::Tail => ['…'].into_iter().chain(text.chars().skip(n - kept)).collect(),
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
    fn never_splits_a_character() {
        let s = "aé😀";
        assert_eq!(floor_char_boundary(s, 0), 0);
        assert_eq!(floor_char_boundary(s, 2), 1);
        assert_eq!(floor_char_boundary(s, 4), 3);
        assert_eq!(floor_char_boundary(s, 99), s.len());
    }

    #[test]
    fn clip_counts_chars_and_the_ellipsis() {
        assert_eq!(clip("héllo", 5, Keep::Head), "héllo");
        assert_eq!(clip("héllo", 4, Keep::Head), "hél…");
        assert_eq!(clip("héllo", 4, Keep::Tail), "…llo");
        assert_eq!(clip("😀😀😀", 2, Keep::Head), "😀…");
        assert_eq!(clip("abc", 0, Keep::Head), "…");
    }
}
