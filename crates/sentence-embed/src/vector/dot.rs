//! The integer dot products of brute-force scoring, on the widest code the CPU
//! runs.
//!
//! Scoring a query is one `i8 · i8 → i32` dot product per stored vector, and at
//! hundreds of thousands of vectors those products are most of a semantic query's
//! CPU. The portable loop compiles to the target's baseline (SSE2 on x86-64, where
//! the compiler has no instruction that multiplies bytes and sums the products), so
//! on x86-64 an AVX2 kernel is chosen at run time when the CPU has it: each 16 stored
//! bytes are sign-extended to 16-bit lanes and multiplied with the query (widened once)
//! by `vpmaddwd`, which sums adjacent products into 32-bit lanes. The result is exact:
//! a product is at most 128 · 128 = 16,384 in magnitude, a pair 32,768, so nothing
//! saturates or wraps, and every kernel returns the portable loop's integers.
//!
//! AVX-512 VNNI (`vpdpbusd`, 64 bytes per instruction) was measured too and left
//! out: it scored no faster than this kernel (the vectors stream from memory faster
//! than either multiplies them only while they fit in cache), and it needs an
//! unsigned operand (an offset and a correction per vector). Other targets (aarch64,
//! …) use the portable loop, which the compiler vectorizes for their baseline.

/// The query in the forms the kernels read: its int8 values, and (for AVX2)
/// the same values widened to 16 bits, so the widening is done once per query.
pub(super) struct DotQuery {
    values: Vec<i8>,
    widened: Vec<i16>,
}

impl DotQuery {
    pub(super) fn new(values: Vec<i8>) -> Self {
        let widened = values.iter().map(|&v| i16::from(v)).collect();
        Self { values, widened }
    }
}

/// The code that computes the dot products. Private to the crate and made only
/// by [`Kernel::best`] and [`Kernel::available`], which check the CPU: a kernel
/// value is the proof that the CPU runs its instructions.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Kernel {
    /// Plain Rust; every target.
    Portable,
    /// x86-64 with AVX2 (checked at run time).
    #[cfg(target_arch = "x86_64")]
    Avx2,
}

impl Kernel {
    /// The fastest kernel this CPU runs. (The standard library caches the
    /// CPU's features after the first check, so this is cheap to call per query.)
    pub(super) fn best() -> Kernel {
        #[cfg(target_arch = "x86_64")]
        if std::arch::is_x86_feature_detected!("avx2") {
            return Kernel::Avx2;
        }
        Kernel::Portable
    }

    /// Every kernel this CPU runs (the tests compare them).
    #[cfg(test)]
    pub(super) fn available() -> Vec<Kernel> {
        let mut kernels = vec![Kernel::Portable];
        if Kernel::best() != Kernel::Portable {
            kernels.push(Kernel::best());
        }
        kernels
    }

    /// The dot product of `query` with each row of `rows` (rows of the
    /// query's width, back to back) into `out`, one per row: `out` must hold
    /// exactly one value per row.
    pub(super) fn dots(self, query: &DotQuery, rows: &[i8], out: &mut [i32]) {
        let dims = query.values.len();
        assert_eq!(
            rows.len(),
            dims * out.len(),
            "the rows do not match the query's width and the output's length"
        );
        if dims == 0 {
            out.fill(0);
            return;
        }
        match self {
            Kernel::Portable => {
                for (row, out) in rows.chunks_exact(dims).zip(out) {
                    *out = dot_portable(&query.values, row);
                }
            }
            #[cfg(target_arch = "x86_64")]
            // SAFETY: a `Kernel::Avx2` is only made by `Kernel::best` after
            // `is_x86_feature_detected!("avx2")` said this CPU has AVX2, which is
            // all `dots_avx2` requires of its caller.
            Kernel::Avx2 => unsafe { avx2::dots(&query.widened, rows, out) },
        }
    }
}

/// The reference every kernel must equal.
fn dot_portable(a: &[i8], b: &[i8]) -> i32 {
    a.iter()
        .zip(b)
        .map(|(&x, &y)| i32::from(x) * i32::from(y))
        .sum()
}

#[cfg(target_arch = "x86_64")]
mod avx2 {
    use std::arch::x86_64::{
        __m128i, __m256i, _mm256_add_epi32, _mm256_castsi256_si128, _mm256_cvtepi8_epi16,
        _mm256_extracti128_si256, _mm256_loadu_si256, _mm256_madd_epi16, _mm256_setzero_si256,
        _mm_add_epi32, _mm_cvtsi128_si32, _mm_loadu_si128, _mm_shuffle_epi32,
    };

    /// Bytes of a stored row taken per step: 16 bytes widen to one 256-bit
    /// register of 16-bit lanes.
    const STEP: usize = 16;

    /// [`super::Kernel::dots`] with AVX2: `query` is the query widened to 16
    /// bits; `rows` holds `out.len()` rows of `query.len()` bytes (checked by
    /// the caller).
    #[target_feature(enable = "avx2")]
    pub(super) fn dots(query: &[i16], rows: &[i8], out: &mut [i32]) {
        let dims = query.len();
        let body = dims - dims % STEP;
        for (row, out) in rows.chunks_exact(dims).zip(out) {
            let mut sums = _mm256_setzero_si256();
            for at in (0..body).step_by(STEP) {
                // SAFETY: `at + STEP <= body <= dims == row.len() == query.len()`,
                // so both unaligned loads read inside their slices: 16 bytes of
                // `row` and 16 `i16` (32 bytes) of `query`.
                let (stored, wide_query) = unsafe {
                    (
                        _mm_loadu_si128(row.as_ptr().add(at).cast::<__m128i>()),
                        _mm256_loadu_si256(query.as_ptr().add(at).cast::<__m256i>()),
                    )
                };
                let products = _mm256_madd_epi16(_mm256_cvtepi8_epi16(stored), wide_query);
                sums = _mm256_add_epi32(sums, products);
            }
            let tail: i32 = query[body..]
                .iter()
                .zip(&row[body..])
                .map(|(&q, &v)| i32::from(q) * i32::from(v))
                .sum();
            *out = horizontal_sum(sums) + tail;
        }
    }

    /// The sum of a register's eight 32-bit lanes.
    #[target_feature(enable = "avx2")]
    fn horizontal_sum(lanes: __m256i) -> i32 {
        let halves = _mm_add_epi32(
            _mm256_castsi256_si128(lanes),
            _mm256_extracti128_si256::<1>(lanes),
        );
        let pairs = _mm_add_epi32(halves, _mm_shuffle_epi32::<0b01_00_11_10>(halves));
        let all = _mm_add_epi32(pairs, _mm_shuffle_epi32::<0b10_11_00_01>(pairs));
        _mm_cvtsi128_si32(all)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Deterministic pseudo-random bytes (xorshift64), every value of `i8`.
    fn random_bytes(state: &mut u64, n: usize) -> Vec<i8> {
        (0..n)
            .map(|_| {
                *state ^= *state << 13;
                *state ^= *state >> 7;
                *state ^= *state << 17;
                (*state >> 56) as u8 as i8
            })
            .collect()
    }

    fn all_kernels(query: &[i8], rows: &[i8]) -> Vec<(Kernel, Vec<i32>)> {
        let dims = query.len().max(1);
        let query = DotQuery::new(query.to_vec());
        Kernel::available()
            .into_iter()
            .map(|kernel| {
                let mut out = vec![i32::MIN; rows.len() / dims];
                kernel.dots(&query, rows, &mut out);
                (kernel, out)
            })
            .collect()
    }

    fn assert_all_equal_portable(query: &[i8], rows: &[i8], what: &str) {
        let expected: Vec<i32> = rows
            .chunks_exact(query.len())
            .map(|row| dot_portable(query, row))
            .collect();
        for (kernel, got) in all_kernels(query, rows) {
            assert_eq!(got, expected, "{kernel:?}, {what}, width {}", query.len());
        }
    }

    #[test]
    fn every_kernel_equals_the_portable_loop_on_random_vectors() {
        eprintln!("kernels on this CPU: {:?}", Kernel::available());
        let mut state = 0x9e37_79b9_7f4a_7c15;
        for dims in [1, 2, 7, 15, 16, 17, 31, 32, 33, 100, 383, 384, 385, 1000] {
            let query = random_bytes(&mut state, dims);
            let rows = random_bytes(&mut state, dims * 37);
            assert_all_equal_portable(&query, &rows, "random");
        }
    }

    #[test]
    fn every_kernel_is_exact_at_the_extremes() {
        for dims in [1, 16, 17, 384, 385] {
            for (q, v) in [
                (-128, -128),
                (-128, 127),
                (127, 127),
                (127, -128),
                (-127, 127),
            ] {
                let query = vec![q; dims];
                let mut rows = vec![v; dims];
                // A row alternating the extremes, and one of zeros.
                rows.extend((0..dims).map(|i| if i % 2 == 0 { -128 } else { 127 }));
                rows.extend(std::iter::repeat_n(0, dims));
                assert_all_equal_portable(&query, &rows, &format!("query {q}, row {v}"));
            }
        }
        let dims = 384;
        let (_, all_min) = all_kernels(&vec![-128; dims], &vec![-128; dims])
            .pop()
            .expect("the portable kernel at least");
        assert_eq!(all_min, [128 * 128 * dims as i32]);
    }

    #[test]
    fn no_rows_and_zero_width_give_nothing_or_zeros() {
        for (kernel, got) in all_kernels(&[1, 2, 3], &[]) {
            assert!(got.is_empty(), "{kernel:?}");
        }
        for kernel in Kernel::available() {
            let mut out = [7; 3];
            kernel.dots(&DotQuery::new(Vec::new()), &[], &mut out);
            assert_eq!(out, [0; 3], "{kernel:?}");
        }
    }
}
