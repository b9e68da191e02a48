//! A cheap upper bound on nucleo's score for each atom of a query in one
//! ASCII field, from a single pass over the field's bytes. Fuzzy lookups
//! call the matcher only where this bound says the field could still matter:
//! a field whose letters are merely scattered through it is ruled out
//! without running the matcher at all.
//!
//! nucleo (default config, case ignored) scores a match of needle chars at
//! positions `p0 < p1 < …` as 16 per char, plus a bonus per char that depends
//! only on the haystack around `p` (word starts score up to 10), doubled for
//! the first char; a char right after the previous one gets at least 4 and
//! carries the bonus of the word start its run began at; a gap costs at
//! least 3. So a char can only score high where it occurs at a word start,
//! or right after the needle's previous char. The bound keeps, for each
//! needle char, the best bonus at any of its occurrences, and whether it
//! ever follows the previous needle char; the tests check it against the
//! matcher's real scores.

/// nucleo's score per matched char, gap penalty and run bonus.
const SCORE_MATCH: i32 = 16;
const PENALTY_GAP_START: i32 = 3;
const BONUS_CONSECUTIVE: i32 = 4;
/// A bonus from which a run takes over a char's bonus (nucleo's `BONUS_BOUNDARY`).
const BONUS_BOUNDARY: u8 = 8;
/// The bonuses nucleo gives (default config) are 5 (camelCase, a digit after
/// a non-digit), 8, 9 and 10 (a word start after punctuation, a delimiter or
/// whitespace; whitespace itself). The scan tells two levels apart: at least
/// 5 (counted as 5) and at least 8 (counted as the largest, 10).
const BONUS_CAMEL: u8 = 5;
const BONUS_MAX: u8 = 10;
/// Bits of a byte's mark: its bonus is at least 5, at least 8.
const MARK_CAMEL: u8 = 1;
const MARK_BOUNDARY: u8 = 2;

/// Character classes of ASCII bytes, as nucleo's `CharClass` for its
/// default config (delimiters `/,:;|`).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Class {
    Whitespace,
    NonWord,
    Delimiter,
    Lower,
    Upper,
    Number,
}

fn class(b: u8) -> Class {
    match b {
        b'a'..=b'z' => Class::Lower,
        b'A'..=b'Z' => Class::Upper,
        b'0'..=b'9' => Class::Number,
        _ if b.is_ascii_whitespace() => Class::Whitespace,
        b'/' | b',' | b':' | b';' | b'|' => Class::Delimiter,
        _ => Class::NonWord,
    }
}

/// nucleo's `Config::bonus_for` with the default config.
fn bonus_for(prev: Class, class: Class) -> u8 {
    let word = matches!(class, Class::Lower | Class::Upper | Class::Number);
    if word {
        match prev {
            Class::Whitespace => return 10,
            Class::Delimiter => return 9,
            Class::NonWord => return 8,
            _ => {}
        }
    }
    if (prev == Class::Lower && class == Class::Upper) || (prev != Class::Number && class == Class::Number) {
        5
    } else if class == Class::Whitespace {
        10
    } else if class == Class::NonWord {
        8
    } else {
        0
    }
}

/// The bonus nucleo gives a match at each byte of an ASCII text, as marks
/// (`MARK_*` bits) for [`Needles::scan`].
pub(crate) fn marks(text: &[u8]) -> impl Iterator<Item = u8> + '_ {
    // nucleo treats the text's start as following whitespace.
    let mut prev = Class::Whitespace;
    text.iter().map(move |&b| {
        let c = class(b);
        let bonus = bonus_for(prev, c);
        prev = c;
        match bonus {
            0..BONUS_CAMEL => 0,
            BONUS_CAMEL..BONUS_BOUNDARY => MARK_CAMEL,
            _ => MARK_CAMEL | MARK_BOUNDARY,
        }
    })
}

/// The ASCII atoms of a query, laid end to end as bit positions.
pub(crate) struct Needles {
    /// Per lower-case ASCII byte, the positions holding it.
    at: [u64; 128],
    /// The first and the last position of each atom.
    starts: u64,
    ends: u64,
    /// Per atom of the pattern, its position range (`None`: not bounded here).
    atoms: Vec<Option<(u8, u8)>>,
}

/// What one pass over a field found.
pub(crate) struct Scan {
    /// Positions whose char occurs right after the previous position's char.
    pairs: u64,
    /// Positions whose char occurs with a bonus of at least 5, at least 8.
    camel: u64,
    boundary: u64,
}

impl Needles {
    /// `atoms`: each atom's lower-cased ASCII needle, if it is one. `None`
    /// when the needles do not fit in 64 positions.
    pub fn new<'a>(atoms: impl Iterator<Item = Option<&'a [u8]>>) -> Option<Needles> {
        let mut n = Needles { at: [0; 128], starts: 0, ends: 0, atoms: Vec::new() };
        let mut next = 0usize;
        for atom in atoms {
            let range = match atom {
                Some(bytes) if !bytes.is_empty() && bytes.is_ascii() && next + bytes.len() <= 64 => {
                    let start = next;
                    for (i, &b) in bytes.iter().enumerate() {
                        n.at[usize::from(b)] |= 1 << (start + i);
                    }
                    next += bytes.len();
                    n.starts |= 1 << start;
                    n.ends |= 1 << (next - 1);
                    Some((start as u8, bytes.len() as u8))
                }
                Some(bytes) if !bytes.is_empty() && bytes.is_ascii() => return None,
                _ => None,
            };
            n.atoms.push(range);
        }
        Some(n)
    }

    /// Every atom occurs in order in the field's lower-cased ASCII text
    /// (nucleo finds no match otherwise). Most fields that have the query's
    /// letters fail here, so this runs alone before [`Needles::scan`].
    pub fn in_order(&self, text: &[u8]) -> bool {
        let mut seen = 0u64;
        for &b in text {
            let here = self.at[usize::from(b & 0x7f)];
            // Shift-and: a position is reached once its predecessor in the
            // atom was (before this byte); an atom's start any time. (A carry
            // into a start bit is harmless: start bits are set anyway.)
            seen |= ((seen << 1) & here) | (self.starts & here);
        }
        seen & self.ends == self.ends
    }

    /// What the bound needs from a field that passed [`Needles::in_order`]:
    /// one pass over its lower-cased ASCII text and its marks.
    pub fn scan(&self, text: &[u8], marks: &[u8]) -> Scan {
        let (mut prev, mut pairs) = (0u64, 0u64);
        let (mut camel, mut boundary) = (0u64, 0u64);
        for (&b, &mark) in text.iter().zip(marks) {
            let here = self.at[usize::from(b & 0x7f)];
            pairs |= here & (prev << 1);
            prev = here;
            camel |= here & 0u64.wrapping_sub(u64::from(mark & MARK_CAMEL));
            boundary |= here & 0u64.wrapping_sub(u64::from((mark & MARK_BOUNDARY) >> 1));
        }
        Scan { pairs: pairs & !self.starts, camel, boundary }
    }

    /// The highest score nucleo can give pattern atom `i` in the scanned
    /// field, or `None` when this bound does not cover the atom.
    pub fn atom_bound(&self, i: usize, scan: &Scan) -> Option<u32> {
        let (start, len) = (*self.atoms.get(i)?)?;
        let best_bonus = |pos: u32| -> u8 {
            let bit = 1u64 << pos;
            if scan.boundary & bit != 0 {
                BONUS_MAX
            } else if scan.camel & bit != 0 {
                BONUS_CAMEL
            } else {
                0
            }
        };
        // Best total so far by the bonus the current run carries (0..=10).
        const NONE: i32 = i32::MIN / 2;
        let mut by_run = [NONE; 11];
        let first = best_bonus(u32::from(start));
        by_run[usize::from(first)] = SCORE_MATCH + 2 * i32::from(first);
        for pos in u32::from(start) + 1..u32::from(start) + u32::from(len) {
            let bonus = best_bonus(pos);
            let mut next = [NONE; 11];
            // After a gap: a new run, carrying this char's bonus.
            let best = by_run.iter().copied().max().unwrap_or(NONE);
            next[usize::from(bonus)] = best + SCORE_MATCH + i32::from(bonus) - PENALTY_GAP_START;
            if scan.pairs & (1 << pos) != 0 {
                for (run, &total) in by_run.iter().enumerate().filter(|(_, &t)| t > NONE) {
                    let mut carried = (run as u8).max(BONUS_CONSECUTIVE as u8);
                    if bonus >= BONUS_BOUNDARY && bonus > carried {
                        carried = bonus;
                    }
                    let score = total + SCORE_MATCH + i32::from(carried.max(bonus));
                    let slot = &mut next[usize::from(carried)];
                    *slot = (*slot).max(score);
                }
            }
            by_run = next;
        }
        let best = by_run.iter().copied().max().unwrap_or(NONE);
        u32::try_from(best).ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use nucleo_matcher::pattern::{AtomKind, CaseMatching, Normalization, Pattern};
    use nucleo_matcher::{Config, Matcher, Utf32String};

    /// Checks the bound of every atom of `query` in `hay` against the
    /// matcher (optimal and greedy); returns how many atoms matched.
    fn check(query: &str, hay: &str, m: &mut Matcher) -> usize {
        let p = Pattern::new(query, CaseMatching::Ignore, Normalization::Smart, AtomKind::Fuzzy);
        let lower: Vec<Vec<u8>> = p
            .atoms
            .iter()
            .map(|a| match a.needle_text() {
                nucleo_matcher::Utf32Str::Ascii(b) => b.to_ascii_lowercase(),
                _ => Vec::new(),
            })
            .collect();
        let needles = Needles::new(lower.iter().map(|b| Some(b.as_slice()))).expect("fits");
        let text = hay.to_ascii_lowercase();
        let bonus: Vec<u8> = marks(hay.as_bytes()).collect();
        let h = Utf32String::from(hay);
        let scores: Vec<Option<u16>> = p.atoms.iter().map(|a| a.score(h.slice(..), m)).collect();
        if !needles.in_order(text.as_bytes()) {
            assert!(scores.iter().any(Option::is_none), "{query:?} matches {hay:?}, the scan says not");
            return 0;
        }
        let scan = needles.scan(text.as_bytes(), &bonus);
        let mut matched = 0;
        for (i, atom) in p.atoms.iter().enumerate() {
            let bound = needles.atom_bound(i, &scan).expect("an ASCII atom");
            for s in [scores[i], m.fuzzy_match_greedy(h.slice(..), atom.needle_text())].into_iter().flatten() {
                assert!(u32::from(s) <= bound, "{query:?} atom {i} in {hay:?}: score {s} > bound {bound}");
                matched += 1;
            }
        }
        matched
    }

    #[test]
    fn bound_holds_for_the_matcher_on_chosen_fields() {
        let mut m = Matcher::new(Config::DEFAULT);
        let cases = [
            ("eport", "Please help with the report in billing; it fails on retry"),
            ("eport", "export report"),
            ("cche lyer", "Cache layer billing 12"),
            ("arf", "AuthRefactor_v2"),
            ("v2", "auth v2 and V22"),
            ("a.b", "a.b a-b a/b"),
            ("ab", "a b ab"),
            ("auth", "auth"),
            ("aaa", "aaaa aaaa"),
            ("x", "ax xa"),
            ("lgin", "login: fix it|login"),
            ("12", "a12 b1 2"),
        ];
        for (q, h) in cases {
            assert!(check(q, h, &mut m) > 0, "{q:?} should match {h:?}");
        }
    }

    /// Random fields from a small alphabet (case, digits, delimiters,
    /// punctuation, spaces) and needles drawn from them, so most match.
    #[test]
    fn bound_holds_for_the_matcher_on_random_fields() {
        let alphabet = b"abcAB1 2/,-._:xyzXY";
        let mut next = crate::text::xorshift(0x2545_f491_4f6c_dd1d);
        let mut below = |n: usize| (next() % n as u64) as usize;
        let mut m = Matcher::new(Config::DEFAULT);
        let mut matched = 0;
        for _ in 0..20_000 {
            let len = 1 + below(40);
            let hay: String = (0..len).map(|_| alphabet[below(alphabet.len())] as char).collect();
            let mut query = String::new();
            for _ in 0..1 + below(3) {
                let want = 1 + below(5);
                let word: String = hay
                    .chars()
                    .filter(|c| c.is_ascii_alphanumeric() || ".-_".contains(*c))
                    .filter(|_| below(len) < want + 1)
                    .take(want)
                    .collect();
                if !word.is_empty() {
                    query.push_str(&word);
                    query.push(' ');
                }
            }
            if query.trim().is_empty() {
                continue;
            }
            matched += check(query.trim(), &hay, &mut m);
        }
        assert!(matched > 10_000, "only {matched} atom matches checked");
    }

    #[test]
    fn exact_word_reaches_the_bound() {
        let mut m = Matcher::new(Config::DEFAULT);
        let p = Pattern::new("cache", CaseMatching::Ignore, Normalization::Smart, AtomKind::Fuzzy);
        let needles = Needles::new([Some(&b"cache"[..])].into_iter()).expect("fits");
        let hay = "fix the cache layer";
        let bonus: Vec<u8> = marks(hay.as_bytes()).collect();
        assert!(needles.in_order(hay.as_bytes()));
        let scan = needles.scan(hay.as_bytes(), &bonus);
        let h = Utf32String::from(hay);
        assert_eq!(needles.atom_bound(0, &scan).map(|b| b as u16), p.atoms[0].score(h.slice(..), &mut m));
        // Scattered letters are bounded well below an exact word.
        let scattered = "peach tea reach the lover";
        let bonus: Vec<u8> = marks(scattered.as_bytes()).collect();
        assert!(needles.in_order(scattered.as_bytes()));
        let scan = needles.scan(scattered.as_bytes(), &bonus);
        assert!(needles.atom_bound(0, &scan).unwrap_or(0) < 100, "{:?}", needles.atom_bound(0, &scan));
        assert!(!needles.in_order(b"no such letters"));
        assert!(!needles.in_order(b"eh cache"[..6].as_ref()));
    }
}
