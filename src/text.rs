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
