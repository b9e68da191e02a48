//! Small UTF-8 helpers shared by every module that cuts text to a byte budget.

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
    use super::floor_char_boundary;

    #[test]
    fn never_splits_a_character() {
        let s = "aé😀";
        assert_eq!(floor_char_boundary(s, 0), 0);
        assert_eq!(floor_char_boundary(s, 2), 1);
        assert_eq!(floor_char_boundary(s, 4), 3);
        assert_eq!(floor_char_boundary(s, 99), s.len());
    }
}
