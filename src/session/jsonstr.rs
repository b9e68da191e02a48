//! Measuring a JSON string in place, 64 bytes at a time.
//!
//! The reader's large strings (base64 image data, tool output) are only
//! measured or cut, never kept whole. serde_json would unescape and copy
//! every byte of them; this scanner finds the closing quote and computes the
//! decoded lengths without decoding, as serde_json's byte-string mode
//! (`deserialize_bytes`) would decode them: lone surrogate escapes count as
//! 3-byte WTF-8 and invalid UTF-8 passes through. Unlike that mode, and like
//! pi's `JSON.parse`, a raw control character is an error.

/// What a string body decodes to, measured on the raw JSON bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct StrScan {
    /// Index of the closing quote in the scanned slice.
    pub end: usize,
    /// Bytes of the decoded string (lone surrogates count 3, as WTF-8).
    pub decoded_bytes: usize,
    /// UTF-16 code units of the decoded string (JavaScript's `length`), counted
    /// as [`super::utf16_len`] counts bytes, so invalid UTF-8 agrees with it.
    pub utf16_units: usize,
}

/// Why a string cannot be measured: serde_json would reject it too.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum StrError {
    Unterminated,
    ControlCharacter,
    BadEscape,
}

const LANES: usize = 64;

/// Per-lane flags of a 64-byte block, one bit per byte. `continuation` and
/// `four` are only filled when counting UTF-16 units.
#[derive(Default)]
struct BlockMasks {
    quote: u64,
    backslash: u64,
    control: u64,
    /// UTF-8 continuation bytes (0x80..=0xBF).
    continuation: u64,
    /// 4-byte UTF-8 leads (0xF0 and up).
    four: u64,
}

trait Masks {
    /// # Safety
    /// The instruction set of the implementation must be available.
    unsafe fn masks<const UTF16: bool>(block: &[u8; LANES]) -> BlockMasks;

    /// Per byte, for escape codes: (not one of `"\\/bfnrtu`; is `u`).
    ///
    /// # Safety
    /// As for [`Masks::masks`].
    #[inline(always)]
    unsafe fn codes(block: &[u8; LANES]) -> (u64, u64) {
        let (mut invalid, mut u) = (0u64, 0u64);
        for (k, &c) in block.iter().enumerate() {
            invalid |= u64::from(!SIMPLE_ESCAPE[usize::from(c)] && c != b'u') << k;
            u |= u64::from(c == b'u') << k;
        }
        (invalid, u)
    }

    /// Whether no byte of the block needs a look: no quote, backslash,
    /// control character or non-ASCII byte. Such blocks (all of base64 data,
    /// long runs of plain text) are skipped without building masks.
    ///
    /// # Safety
    /// As for [`Masks::masks`].
    #[inline(always)]
    unsafe fn plain(block: &[u8; LANES]) -> bool {
        block.iter().all(|&c| (0x20..0x80).contains(&c) && c != b'"' && c != b'\\')
    }
}

/// Plain loops, for targets without the vector forms below.
#[cfg_attr(target_arch = "x86_64", allow(dead_code))]
struct Portable;

impl Masks for Portable {
    #[inline(always)]
    unsafe fn masks<const UTF16: bool>(block: &[u8; LANES]) -> BlockMasks {
        let mut m = BlockMasks::default();
        for (k, &c) in block.iter().enumerate() {
            m.quote |= u64::from(c == b'"') << k;
            m.backslash |= u64::from(c == b'\\') << k;
            m.control |= u64::from(c < 0x20) << k;
            if UTF16 {
                m.continuation |= u64::from((c as i8) < -0x40) << k;
                m.four |= u64::from(c >= 0xF0) << k;
            }
        }
        m
    }
}

/// Generates a [`Masks`] implementation over `$width`-byte vectors.
#[cfg(target_arch = "x86_64")]
macro_rules! vector_masks {
    ($name:ident, $width:expr, $load:ident, $set1:ident, $cmpeq:ident, $max:ident, $movemask:ident, $mask_ty:ty, $below:expr $(, $codes:item)*) => {
        impl Masks for $name {
            $($codes)*
            #[inline(always)]
            unsafe fn masks<const UTF16: bool>(block: &[u8; LANES]) -> BlockMasks {
                use std::arch::x86_64::*;
                let mut m = BlockMasks::default();
                let quote = $set1(b'"' as i8);
                let backslash = $set1(b'\\' as i8);
                let max_control = $set1(0x1F);
                let four_lead = $set1(0xF0u8 as i8);
                for lane in 0..LANES / $width {
                    // Unaligned loads inside `block`.
                    let v = $load(block.as_ptr().add(lane * $width).cast());
                    let bits = |x| u64::from($movemask(x) as $mask_ty) << (lane * $width);
                    m.quote |= bits($cmpeq(v, quote));
                    m.backslash |= bits($cmpeq(v, backslash));
                    m.control |= bits($cmpeq($max(v, max_control), max_control));
                    // ASCII-only lanes (no high bit) have neither kind of byte.
                    if UTF16 && $movemask(v) != 0 {
                        m.continuation |= bits($below(v));
                        m.four |= bits($cmpeq($max(v, four_lead), v));
                    }
                }
                m
            }
        }
    };
}

/// 16 lanes at a time; SSE2 is part of the x86_64 baseline.
#[cfg(target_arch = "x86_64")]
struct Sse2;

#[cfg(target_arch = "x86_64")]
vector_masks!(
    Sse2,
    16,
    _mm_loadu_si128,
    _mm_set1_epi8,
    _mm_cmpeq_epi8,
    _mm_max_epu8,
    _mm_movemask_epi8,
    u16,
    |v| {
        // Continuation bytes are below -0x40 as signed bytes.
        _mm_cmplt_epi8(v, _mm_set1_epi8(-0x40))
    },
    #[inline(always)]
    unsafe fn plain(block: &[u8; LANES]) -> bool {
        use std::arch::x86_64::*;
        let (quote, backslash, space) = (_mm_set1_epi8(b'"' as i8), _mm_set1_epi8(b'\\' as i8), _mm_set1_epi8(0x20));
        let mut special = _mm_setzero_si128();
        for lane in 0..4 {
            let v = _mm_loadu_si128(block.as_ptr().add(lane * 16).cast());
            // Signed, bytes from 0x80 up are below 0x20 too.
            let odd = _mm_or_si128(_mm_cmplt_epi8(v, space), _mm_cmpeq_epi8(v, quote));
            special = _mm_or_si128(special, _mm_or_si128(odd, _mm_cmpeq_epi8(v, backslash)));
        }
        _mm_movemask_epi8(special) == 0
    }
);

/// 32 lanes at a time, when the CPU has AVX2 (checked at run time).
#[cfg(target_arch = "x86_64")]
struct Avx2;

#[cfg(target_arch = "x86_64")]
vector_masks!(
    Avx2,
    32,
    _mm256_loadu_si256,
    _mm256_set1_epi8,
    _mm256_cmpeq_epi8,
    _mm256_max_epu8,
    _mm256_movemask_epi8,
    u32,
    |v| { _mm256_cmpgt_epi8(_mm256_set1_epi8(-0x40), v) },
    #[inline(always)]
    unsafe fn codes(block: &[u8; LANES]) -> (u64, u64) {
        use std::arch::x86_64::*;
        // Valid codes by nibbles (simdjson-style lookup): a bit per high nibble
        // (2, 5, 6, 7), set in the low-nibble table for each valid pair.
        let low_table = _mm256_setr_epi8(
            0, 0, 13, 0, 8, 8, 4, 0, 0, 0, 0, 0, 2, 0, 4, 1, 0, 0, 13, 0, 8, 8, 4, 0, 0, 0, 0, 0, 2, 0, 4, 1,
        );
        let high_table = _mm256_setr_epi8(
            0, 0, 1, 0, 0, 2, 4, 8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 2, 4, 8, 0, 0, 0, 0, 0, 0, 0, 0,
        );
        let nibble = _mm256_set1_epi8(0x0F);
        let zero = _mm256_setzero_si256();
        let u = _mm256_set1_epi8(b'u' as i8);
        let (mut invalid, mut us) = (0u64, 0u64);
        for lane in 0..2 {
            let v = _mm256_loadu_si256(block.as_ptr().add(lane * 32).cast());
            let lo = _mm256_shuffle_epi8(low_table, _mm256_and_si256(v, nibble));
            let hi = _mm256_shuffle_epi8(high_table, _mm256_and_si256(_mm256_srli_epi16(v, 4), nibble));
            let bad = _mm256_cmpeq_epi8(_mm256_and_si256(lo, hi), zero);
            invalid |= u64::from(_mm256_movemask_epi8(bad) as u32) << (lane * 32);
            us |= u64::from(_mm256_movemask_epi8(_mm256_cmpeq_epi8(v, u)) as u32) << (lane * 32);
        }
        (invalid, us)
    },
    #[inline(always)]
    unsafe fn plain(block: &[u8; LANES]) -> bool {
        use std::arch::x86_64::*;
        let (quote, backslash, space) =
            (_mm256_set1_epi8(b'"' as i8), _mm256_set1_epi8(b'\\' as i8), _mm256_set1_epi8(0x20));
        let mut special = _mm256_setzero_si256();
        for lane in 0..2 {
            let v = _mm256_loadu_si256(block.as_ptr().add(lane * 32).cast());
            // Signed, bytes from 0x80 up are below 0x20 too.
            let odd = _mm256_or_si256(_mm256_cmpgt_epi8(space, v), _mm256_cmpeq_epi8(v, quote));
            special = _mm256_or_si256(special, _mm256_or_si256(odd, _mm256_cmpeq_epi8(v, backslash)));
        }
        _mm256_testz_si256(special, special) == 1
    }
);

/// The escaping backslashes and the characters they escape, for one block:
/// simdjson's branch-free method (`json_escape_scanner.h`). `carry` says the
/// block's first byte is escaped by the previous block's last backslash, and
/// is updated for the next block. Returns (escaped, escape).
#[inline(always)]
fn escapes(backslash: u64, carry: &mut u64) -> (u64, u64) {
    const ODD_BITS: u64 = 0xAAAA_AAAA_AAAA_AAAA;
    let potential_escape = backslash & !*carry;
    // Backslash runs starting on an odd bit come out inverted; bringing in all
    // odd bits and subtracting the run starts fixes that parity.
    let maybe_escaped = potential_escape << 1;
    let even_series_codes_and_odd_bits = (maybe_escaped | ODD_BITS).wrapping_sub(potential_escape);
    let escape_and_terminal_code = even_series_codes_and_odd_bits ^ ODD_BITS;
    let escaped = escape_and_terminal_code ^ (backslash | *carry);
    let escape = escape_and_terminal_code & backslash;
    *carry = escape >> 63;
    (escaped, escape)
}

fn hex4(b: &[u8]) -> Option<u32> {
    let digits = b.get(..4)?;
    let mut n = 0u32;
    for &d in digits {
        n = n * 16 + (d as char).to_digit(16)?;
    }
    Some(n)
}

/// The characters after a backslash that decode to one byte: `"\\/bfnrt`.
const SIMPLE_ESCAPE: [bool; 256] = {
    let mut table = [false; 256];
    let mut i = 0;
    let codes = b"\"\\/bfnrt";
    while i < codes.len() {
        table[codes[i] as usize] = true;
        i += 1;
    }
    table
};

/// A `\\u` escape whose `u` is at `at`: (raw length from its backslash,
/// decoded bytes, UTF-16 units), as serde_json's `parse_unicode_escape` reads
/// it in byte-string mode. A high surrogate followed by a low one is one
/// 12-byte escape; a lone one decodes to 3 bytes of WTF-8.
fn unicode_escape(s: &[u8], at: usize) -> Result<(usize, usize, usize), StrError> {
    let n = hex4(s.get(at + 1..).unwrap_or_default()).ok_or(StrError::BadEscape)?;
    if (0xD800..0xDC00).contains(&n) && s.get(at + 5) == Some(&b'\\') && s.get(at + 6) == Some(&b'u') {
        let low = hex4(s.get(at + 7..).unwrap_or_default()).ok_or(StrError::BadEscape)?;
        if (0xDC00..0xE000).contains(&low) {
            return Ok((12, 4, 2));
        }
    }
    let bytes = match n {
        0..0x80 => 1,
        0x80..0x800 => 2,
        _ => 3,
    };
    Ok((6, bytes, 1))
}

/// How far a scan of a string whose end has not been read yet got: resumed
/// with more of the same body by [`scan_more`], so each byte is looked at
/// once, while it is still in cache after the read that brought it.
#[derive(Debug, Clone, Default)]
pub(crate) struct Partial {
    /// Start of the next block to look at (a multiple of 64).
    base: usize,
    /// The escape carried into that block.
    carry: u64,
    continuation: usize,
    four: usize,
    /// Simple escapes (`\\n`): 2 raw bytes for 1 byte and 1 unit.
    simple: usize,
    /// `\\u` escapes: their raw bytes, decoded bytes and units.
    raw_unicode: usize,
    unicode_bytes: usize,
    unicode_units: usize,
    /// The `u` of the low half of a surrogate pair already counted with its
    /// high half (offset + 1, 0 for none).
    pair_low_u: usize,
}

impl Partial {
    /// Bytes of the body already looked at.
    pub(crate) fn scanned(&self) -> usize {
        self.base
    }
}

/// A scan's outcome on a body that may go on beyond the bytes at hand.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Progress {
    Done(StrScan),
    /// The closing quote is not in the bytes seen so far.
    More,
}

/// Scan the body of a string that starts at `s[0]` (just after its opening
/// quote) up to its closing quote. Without `UTF16`, `utf16_units` is not
/// counted (left 0), which is faster on non-ASCII text.
#[cfg(test)]
pub(crate) fn scan<const UTF16: bool>(s: &[u8]) -> Result<StrScan, StrError> {
    match scan_more::<UTF16>(&mut Partial::default(), s, true)? {
        Progress::Done(scan) => Ok(scan),
        Progress::More => Err(StrError::Unterminated),
    }
}

/// Go on with `partial` over `s`, the body read so far (it only grows
/// between calls). `complete`: nothing follows `s`, so a missing closing
/// quote is [`StrError::Unterminated`] rather than [`Progress::More`]. The
/// same `UTF16` must be used on every call for one body.
pub(crate) fn scan_more<const UTF16: bool>(
    partial: &mut Partial,
    s: &[u8],
    complete: bool,
) -> Result<Progress, StrError> {
    #[cfg(target_arch = "x86_64")]
    {
        if avx2_available() {
            // SAFETY: AVX2 and the bit instructions are available, as just checked.
            return unsafe { scan_avx2::<UTF16>(partial, s, complete) };
        }
        // SAFETY: SSE2 is part of the x86_64 baseline.
        unsafe { scan_with::<UTF16, Sse2>(partial, s, complete) }
    }
    #[cfg(not(target_arch = "x86_64"))]
    // SAFETY: plain Rust.
    unsafe {
        scan_with::<UTF16, Portable>(partial, s, complete)
    }
}

/// Whether [`scan_avx2`] can run: every AVX2 CPU also has the bit
/// instructions, which matter (a software `count_ones` costs more than the
/// vector work of a block), but each is checked all the same.
#[cfg(target_arch = "x86_64")]
fn avx2_available() -> bool {
    std::arch::is_x86_feature_detected!("avx2")
        && std::arch::is_x86_feature_detected!("popcnt")
        && std::arch::is_x86_feature_detected!("bmi1")
}

/// [`scan_with`] compiled for AVX2 (with POPCNT and BMI1 for the mask bits).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,popcnt,bmi1")]
unsafe fn scan_avx2<const UTF16: bool>(partial: &mut Partial, s: &[u8], complete: bool) -> Result<Progress, StrError> {
    scan_with::<UTF16, Avx2>(partial, s, complete)
}

/// Bytes a block's escapes may look at past its end: a `\\u` escape pair.
const LOOKAHEAD: usize = 12;

/// # Safety
/// `M`'s instruction set must be available.
#[inline(always)]
unsafe fn scan_with<const UTF16: bool, M: Masks>(
    partial: &mut Partial,
    s: &[u8],
    complete: bool,
) -> Result<Progress, StrError> {
    // Raw counts over every byte up to the quote, then each escape's raw
    // bytes (all ASCII, so counted once each) are swapped for what they decode to.
    let Partial {
        mut base,
        mut carry,
        mut continuation,
        mut four,
        mut simple,
        mut raw_unicode,
        mut unicode_bytes,
        mut unicode_units,
        mut pair_low_u,
    } = *partial;
    let mut padded = [0u8; LANES];
    loop {
        // Plain blocks change no count: every byte is one byte and one unit.
        if carry == 0 {
            while let Some(block) = s.get(base..base + LANES) {
                let block: &[u8; LANES] = block.try_into().map_err(|_| StrError::Unterminated)?;
                if !M::plain(block) {
                    break;
                }
                base += LANES;
            }
        }
        if !complete && s.len() < base + LANES + LOOKAHEAD {
            // Blocks are only looked at with their escapes' bytes at hand.
            *partial = Partial {
                base,
                carry,
                continuation,
                four,
                simple,
                raw_unicode,
                unicode_bytes,
                unicode_units,
                pair_low_u,
            };
            return Ok(Progress::More);
        }
        let avail = s.len().saturating_sub(base);
        let block: &[u8; LANES] = match s.get(base..base + LANES) {
            Some(b) => b.try_into().map_err(|_| StrError::Unterminated)?,
            None => {
                padded.fill(b' ');
                padded[..avail].copy_from_slice(&s[base..]);
                &padded
            }
        };
        let valid = if avail >= LANES { u64::MAX } else { (1u64 << avail) - 1 };
        let m = M::masks::<UTF16>(block);
        // Most blocks (all of base64 data) have no escapes at all.
        let escaped = if (m.backslash & valid) | carry == 0 { 0 } else { escapes(m.backslash & valid, &mut carry).0 };
        let closing = m.quote & !escaped & valid;
        // The bytes of this block that belong to the string.
        let inside = if closing != 0 { (1u64 << closing.trailing_zeros()) - 1 } else { valid };
        if m.control & inside != 0 {
            return Err(StrError::ControlCharacter);
        }
        let mut codes = escaped & inside;
        if codes != 0 {
            // All codes classified at once: only `\\u` escapes are looked at one by one.
            let (invalid, u) = M::codes(block);
            if codes & invalid != 0 {
                return Err(StrError::BadEscape);
            }
            simple += (codes & !u).count_ones() as usize;
            codes &= u;
        }
        while codes != 0 {
            let at = base + codes.trailing_zeros() as usize;
            codes &= codes - 1;
            match s[at] {
                b'u' if at + 1 == pair_low_u => {}
                b'u' => {
                    let (raw, bytes, units) = unicode_escape(s, at)?;
                    if raw == 12 {
                        pair_low_u = at + 7;
                    }
                    raw_unicode += raw;
                    unicode_bytes += bytes;
                    unicode_units += units;
                }
                _ => return Err(StrError::BadEscape),
            }
        }
        if UTF16 {
            continuation += (m.continuation & inside).count_ones() as usize;
            four += (m.four & inside).count_ones() as usize;
        }
        if closing != 0 {
            let end = base + closing.trailing_zeros() as usize;
            let removed_bytes = simple + raw_unicode - unicode_bytes;
            return Ok(Progress::Done(StrScan {
                end,
                decoded_bytes: end - removed_bytes,
                utf16_units: if UTF16 { end - continuation + four - simple - raw_unicode + unicode_units } else { 0 },
            }));
        }
        if avail <= LANES {
            return Err(StrError::Unterminated);
        }
        base += LANES;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What serde_json's byte-string mode decodes, measured the slow way
    /// (raw control characters rejected, as JSON.parse does).
    fn reference(body: &[u8]) -> Result<StrScan, ()> {
        let end = (0..body.len())
            .find(|&i| body[i] == b'"' && body[..i].iter().rev().take_while(|&&b| b == b'\\').count() % 2 == 0);
        let end = end.ok_or(())?;
        if body[..end].iter().any(|&b| b < 0x20) {
            return Err(());
        }
        let mut quoted = vec![b'"'];
        quoted.extend_from_slice(&body[..=end]);
        let decoded = serde_json::from_slice::<crate::session::elide::RawBytes>(&quoted).map_err(|_| ())?.0;
        Ok(StrScan {
            end,
            decoded_bytes: decoded.len(),
            utf16_units: crate::session::convert::utf16_len_bytes(&decoded),
        })
    }

    fn check(body: &[u8]) {
        let ours = scan::<true>(body).ok();
        let want = reference(body).ok();
        assert_eq!(ours, want, "{:?}", String::from_utf8_lossy(body));
        let uncounted = scan::<false>(body).ok();
        assert_eq!(uncounted, want.map(|w| StrScan { utf16_units: 0, ..w }));
        // The forms `scan` does not pick on this machine.
        // SAFETY: plain Rust, and SSE2 is part of the x86_64 baseline.
        assert_eq!(unsafe { whole::<Portable>(body) }, want);
        #[cfg(target_arch = "x86_64")]
        assert_eq!(unsafe { whole::<Sse2>(body) }, want);
        // Resumed as the body arrives in pieces of a few sizes.
        for step in [1, 13, 64, 100] {
            assert_eq!(resumed(body, step), want, "step {step}: {:?}", String::from_utf8_lossy(body));
        }
    }

    /// # Safety
    /// `M`'s instruction set must be available.
    unsafe fn whole<M: Masks>(body: &[u8]) -> Option<StrScan> {
        match unsafe { scan_with::<true, M>(&mut Partial::default(), body, true) } {
            Ok(Progress::Done(scan)) => Some(scan),
            _ => None,
        }
    }

    fn resumed(body: &[u8], step: usize) -> Option<StrScan> {
        let mut partial = Partial::default();
        let mut seen = 0;
        while seen < body.len() {
            seen = (seen + step).min(body.len());
            match scan_more::<true>(&mut partial, &body[..seen], false) {
                Ok(Progress::Done(scan)) => return Some(scan),
                Ok(Progress::More) => {}
                Err(_) => return None,
            }
        }
        match scan_more::<true>(&mut partial, body, true) {
            Ok(Progress::Done(scan)) => Some(scan),
            _ => None,
        }
    }

    #[test]
    fn measures_like_serde_json_decodes() {
        let cases: &[&[u8]] = &[
            b"\"",
            b"abc\"",
            b"abc\" trailing",
            b"a\\nb\\\"c\\\\\"",
            b"\\u00e9\\u0041\\u20ac\"",
            b"\\ud83d\\ude00 pair\"",
            b"\\ud83d lone high\"",
            b"\\ude00 lone low\"",
            b"\\ud83d\\ud83d\\ude00 high then pair\"",
            b"\\ud83d\\n high then simple\"",
            "caf\u{e9} \u{65e5}\u{672c} \u{1F600}\"".as_bytes(),
            b"bad \xff utf8\"",
            b"control \x01 char\"",
            b"tab \t raw\"",
            b"bad escape \\x\"",
            b"short hex \\u12\"",
            b"unterminated",
            b"ends in escape \\",
            b"",
        ];
        for c in cases {
            check(c);
        }
    }

    #[test]
    fn escapes_across_block_boundaries() {
        // Put every kind of escape at every offset around the 64-byte lanes.
        let escapes: &[&str] = &["\\n", "\\\\", "\\\"", "\\u00e9", "\\ud83d\\ude00", "\\ud83d", "\u{1F600}", "é"];
        for esc in escapes {
            for pad in 0..140 {
                let mut body = "x".repeat(pad);
                body.push_str(esc);
                body.push_str(&"y".repeat(70));
                body.push_str("\" after");
                check(body.as_bytes());
            }
        }
        // Pieces that make escapes, surrogates and quotes collide at random.
        let pieces: &[&[u8]] = &[
            b"a",
            b"\\",
            b"\\\\",
            b"\\\"",
            b"\"",
            b"\\n",
            b"\\u",
            b"d83d",
            b"D83D",
            b"\\ude00",
            b"\\uDC00",
            b"00e9",
            b"0041",
            b"u",
            "\u{e9}".as_bytes(),
            "\u{1F600}".as_bytes(),
            b"\xff",
            b"\x01",
            b"\\x",
        ];
        let mut next = crate::text::xorshift(0x2545_F491_4F6C_DD1D);
        for _ in 0..20_000 {
            let mut body = Vec::new();
            let pad = (next() % 70) as usize;
            body.extend(std::iter::repeat_n(b'x', pad));
            for _ in 0..next() % 12 {
                body.extend_from_slice(pieces[(next() % pieces.len() as u64) as usize]);
            }
            body.extend_from_slice(b"\" tail \"");
            check(&body);
        }
        let long: String = (0..5000).map(|i| if i % 37 == 0 { "\\n" } else { "é" }).collect::<String>() + "\"";
        check(long.as_bytes());
    }
}
