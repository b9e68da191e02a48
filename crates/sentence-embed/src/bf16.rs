//! The encoder's dense layers (`x · Wᵀ + b`) in bfloat16 on CPUs that
//! multiply it natively (AVX-512 BF16: `vdpbf16ps`, two products per f32
//! lane per instruction), for what was measured: after the GELU and softmax
//! work of [`crate::bert`], the f32 matrix products in the `gemm` crate were
//! three quarters of the backfill's CPU, and f32 cannot go faster than the
//! CPU's fused multiply-adds. In bfloat16 each instruction does twice the
//! products.
//!
//! The weights are rounded to bfloat16 once, at load, and laid out in the
//! order the kernel reads them; each call rounds its input rows (round to
//! nearest even). Products are summed in f32. Elsewhere (another CPU, or a
//! shape the kernel does not take) the layer runs in f32 as before.
//!
//! The kernel: 64 output columns (4 registers of 16 lanes) by up to 6 input
//! rows, 24 accumulators; per pair of inputs it loads the 4 weight registers
//! once and each row's pair once. Rows are independent: a text's vector does
//! not depend on the texts batched with it.

use rayon::prelude::*;

/// Output columns per block: 4 registers of 16 f32 lanes.
const COLUMNS: usize = 64;
/// Input rows per kernel call, at most.
const ROWS: usize = 6;

/// A dense layer's weights, ready for the bfloat16 kernel.
pub(crate) struct Bf16Dense {
    outputs: usize,
    inputs: usize,
    /// `[block][input pair][register][lane][2]` bfloat16 bits: for output
    /// `block × 64 + register × 16 + lane`, inputs `2p` and `2p + 1`.
    packed: Vec<u16>,
    bias: Vec<f32>,
}

impl Bf16Dense {
    /// `weight` is `outputs × inputs`, row-major (PyTorch's `Linear`).
    /// `None` where the CPU cannot multiply bfloat16 or the shape does not
    /// fit the kernel (outputs a multiple of 64, inputs of 2).
    pub fn new(weight: &[f32], bias: &[f32], outputs: usize, inputs: usize) -> Option<Self> {
        if !supported()
            || !outputs.is_multiple_of(COLUMNS)
            || !inputs.is_multiple_of(2)
            || inputs == 0
            || weight.len() != outputs * inputs
            || bias.len() != outputs
        {
            return None;
        }
        let pairs = inputs / 2;
        let mut packed = vec![0u16; outputs * inputs];
        for block in 0..outputs / COLUMNS {
            for pair in 0..pairs {
                for column in 0..COLUMNS {
                    let output = block * COLUMNS + column;
                    let at = ((block * pairs + pair) * COLUMNS + column) * 2;
                    for half in 0..2 {
                        packed[at + half] = to_bf16(weight[output * inputs + 2 * pair + half]);
                    }
                }
            }
        }
        Some(Self {
            outputs,
            inputs,
            packed,
            bias: bias.to_vec(),
        })
    }

    pub fn outputs(&self) -> usize {
        self.outputs
    }

    pub fn inputs(&self) -> usize {
        self.inputs
    }

    /// `x` (`rows × inputs`, row-major) times the weights, plus the bias:
    /// `rows × outputs`. On the current rayon pool: its threads share the
    /// column blocks.
    pub fn forward(&self, x: &[f32], rows: usize) -> Vec<f32> {
        assert_eq!(x.len(), rows * self.inputs, "input of the wrong size");
        let pairs = self.inputs / 2;
        // Each row's inputs as bfloat16 pairs, one u32 a pair (what the
        // kernel broadcasts).
        let input: Vec<u32> = x
            .chunks_exact(2)
            .map(|p| u32::from(to_bf16(p[0])) | (u32::from(to_bf16(p[1])) << 16))
            .collect();
        let mut out = vec![0.0f32; rows * self.outputs];
        let blocks = self.outputs / COLUMNS;
        let output = Output(out.as_mut_ptr());
        let run = |block: usize| {
            let weights = &self.packed[block * pairs * COLUMNS * 2..][..pairs * COLUMNS * 2];
            let bias = &self.bias[block * COLUMNS..][..COLUMNS];
            let mut row = 0;
            while row < rows {
                let take = (rows - row).min(ROWS);
                let input = &input[row * pairs..(row + take) * pairs];
                let output = &output;
                // SAFETY: the CPU has AVX-512 BF16 (`supported`, checked
                // when `self` was made); `input` holds `take` rows of
                // `pairs` pairs, `weights` this block's `pairs × 64` pairs,
                // `bias` its 64 values; the output rows `row..row + take`,
                // columns `block × 64..+64` are inside `out` (rows ×
                // outputs) and written by this block's task alone.
                unsafe {
                    let at = output.0.add(row * self.outputs + block * COLUMNS);
                    match take {
                        6 => kernel::<6>(input, weights, bias, pairs, at, self.outputs),
                        5 => kernel::<5>(input, weights, bias, pairs, at, self.outputs),
                        4 => kernel::<4>(input, weights, bias, pairs, at, self.outputs),
                        3 => kernel::<3>(input, weights, bias, pairs, at, self.outputs),
                        2 => kernel::<2>(input, weights, bias, pairs, at, self.outputs),
                        _ => kernel::<1>(input, weights, bias, pairs, at, self.outputs),
                    }
                }
                row += take;
            }
        };
        if rayon::current_num_threads() > 1 && rows > 1 {
            (0..blocks).into_par_iter().for_each(run);
        } else {
            (0..blocks).for_each(run);
        }
        out
    }
}

/// The output's start, shared by the column blocks' tasks (each writes
/// columns of its own).
struct Output(*mut f32);
// SAFETY: the tasks write disjoint elements (see `Bf16Dense::forward`).
unsafe impl Sync for Output {}

/// Whether this CPU multiplies bfloat16 (AVX-512 F and BF16).
pub(crate) fn supported() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        std::arch::is_x86_feature_detected!("avx512f")
            && std::arch::is_x86_feature_detected!("avx512bf16")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// f32 to bfloat16 bits, rounded to nearest even (as `vcvtne2ps2bf16`).
/// The model's values are finite.
fn to_bf16(x: f32) -> u16 {
    let bits = x.to_bits();
    let rounding = 0x7fff + ((bits >> 16) & 1);
    (bits.wrapping_add(rounding) >> 16) as u16
}

/// `R` rows of input pairs times one 64-column block of weights, plus the
/// bias, stored at `out` (row stride `stride`).
///
/// # Safety
/// The CPU has AVX-512 F and BF16; `input` holds `R × pairs` pairs, `weights`
/// `pairs × 64` pairs, `bias` 64 values; `out + r × stride + c` for `r < R`,
/// `c < 64` is writable.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bf16")]
unsafe fn kernel<const R: usize>(
    input: &[u32],
    weights: &[u16],
    bias: &[f32],
    pairs: usize,
    out: *mut f32,
    stride: usize,
) {
    use std::arch::x86_64::*;
    debug_assert!(input.len() >= R * pairs && weights.len() >= pairs * COLUMNS * 2);
    let mut sums = [[_mm512_setzero_ps(); 4]; R];
    let w = weights.as_ptr();
    let x = input.as_ptr();
    for pair in 0..pairs {
        let at = w.add(pair * COLUMNS * 2);
        let w: [__m512bh; 4] = [
            std::mem::transmute::<__m512i, __m512bh>(_mm512_loadu_si512(at.cast())),
            std::mem::transmute::<__m512i, __m512bh>(_mm512_loadu_si512(at.add(32).cast())),
            std::mem::transmute::<__m512i, __m512bh>(_mm512_loadu_si512(at.add(64).cast())),
            std::mem::transmute::<__m512i, __m512bh>(_mm512_loadu_si512(at.add(96).cast())),
        ];
        for (r, sums) in sums.iter_mut().enumerate() {
            let a = std::mem::transmute::<__m512i, __m512bh>(_mm512_set1_epi32(
                *x.add(r * pairs + pair) as i32,
            ));
            for (sum, w) in sums.iter_mut().zip(w) {
                *sum = _mm512_dpbf16_ps(*sum, a, w);
            }
        }
    }
    let bias = [
        _mm512_loadu_ps(bias.as_ptr()),
        _mm512_loadu_ps(bias.as_ptr().add(16)),
        _mm512_loadu_ps(bias.as_ptr().add(32)),
        _mm512_loadu_ps(bias.as_ptr().add(48)),
    ];
    for (r, sums) in sums.iter().enumerate() {
        for (j, (sum, bias)) in sums.iter().zip(bias).enumerate() {
            _mm512_storeu_ps(out.add(r * stride + j * 16), _mm512_add_ps(*sum, bias));
        }
    }
}

/// Never called: `supported` is false off x86-64.
#[cfg(not(target_arch = "x86_64"))]
unsafe fn kernel<const R: usize>(
    _input: &[u32],
    _weights: &[u16],
    _bias: &[f32],
    _pairs: usize,
    _out: *mut f32,
    _stride: usize,
) {
    unreachable!("bfloat16 kernel without AVX-512 BF16")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn values(n: usize, seed: u64) -> Vec<f32> {
        let mut s = seed;
        (0..n)
            .map(|_| {
                s ^= s << 13;
                s ^= s >> 7;
                s ^= s << 17;
                (s >> 40) as f32 / (1u64 << 24) as f32 - 0.5
            })
            .collect()
    }

    #[test]
    fn rounding_is_to_nearest_even() {
        assert_eq!(to_bf16(1.0), 0x3f80);
        // 1 + 2^-8 is halfway between two bfloat16 values: to the even one.
        assert_eq!(to_bf16(1.0 + 1.0 / 256.0), 0x3f80);
        assert_eq!(to_bf16(1.0 + 3.0 / 256.0), 0x3f82);
        assert_eq!(to_bf16(-2.5), 0xc020);
    }

    #[test]
    fn matches_the_f32_product_within_bfloat16_rounding() {
        let (outputs, inputs) = (128, 96);
        let weight = values(outputs * inputs, 1);
        let bias = values(outputs, 2);
        let Some(dense) = Bf16Dense::new(&weight, &bias, outputs, inputs) else {
            eprintln!("skipping: this CPU has no AVX-512 BF16");
            return;
        };
        for rows in [1, 2, 5, 6, 7, 13] {
            let x = values(rows * inputs, 3 + rows as u64);
            let ours = dense.forward(&x, rows);
            for r in 0..rows {
                for o in 0..outputs {
                    let products = (0..inputs).map(|i| x[r * inputs + i] * weight[o * inputs + i]);
                    let exact: f32 = products.clone().sum::<f32>() + bias[o];
                    let scale: f32 = products.map(f32::abs).sum();
                    let error = (ours[r * outputs + o] - exact).abs();
                    // Each factor within 2^-9 of itself: each product within ~2^-8.
                    assert!(
                        error <= scale / 256.0 + 1e-6,
                        "rows {rows}, [{r}][{o}]: {} vs {exact}",
                        ours[r * outputs + o]
                    );
                }
            }
            // A row's result does not depend on the rows beside it.
            let alone = dense.forward(&x[..inputs], 1);
            assert_eq!(alone[..], ours[..outputs]);
        }
    }

    #[test]
    fn shapes_the_kernel_cannot_take_are_refused() {
        assert!(Bf16Dense::new(&[0.0; 96 * 3], &[0.0; 96], 96, 3).is_none());
        assert!(Bf16Dense::new(&[0.0; 32 * 4], &[0.0; 32], 32, 4).is_none());
    }
}
