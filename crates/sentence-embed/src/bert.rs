//! BERT's encoder layers as all-MiniLM-L6-v2 runs them (post-norm, GELU
//! feed-forward, 12 heads) on candle's tensors, written here rather than
//! taken from `candle-transformers` for what was measured (`perf record` of
//! `session-index embed`, 1 thread): after the matrix products, candle's
//! scalar library calls were the backfill's largest cost, its erf for the
//! feed-forward's GELU (`erff`, `erfc2` and the `expf` they call: 18% of the
//! CPU) and the exponential of the attention softmax (4%).
//!
//! - GELU ([`Gelu`]): erf as a rational function the compiler vectorizes
//!   ([`erf`]: within 4.2e-7 of the exact erf over all of f32, the rounding
//!   of f32 itself near 1).
//! - The attention weights ([`AttentionWeights`]): scale, padding mask and
//!   softmax in one pass over the scores, with a vectorized exponential
//!   ([`exp`]: within 3e-7 of the exact one).
//! - The three attention projections are one matrix product (their weights
//!   stacked at load) instead of three.
//! - Additions ([`Add`]: biases, residuals) on the calling thread. candle's
//!   own add hands a tensor of 64k values or more to its global barrier
//!   pool: a thread of normal priority, outside the encoder's pool, that
//!   the caller waits for by spinning. `perf record` of the fused holdout
//!   test (2 threads, loaded machine): 31.5% of the embedding's samples
//!   were that spinning (the caller's wait 22.6%, the pool thread's 8.9%),
//!   for additions that took 0.9%. No op here calls that pool, so its
//!   thread is never started.
//!
//! The vectors are those of the model: the reference tests hold them to the
//! numpy float64 implementation (lowest cosine over its 40 texts 0.9999995,
//! as with candle's layers). What is left is the matrix products: three
//! quarters of the CPU, in the `gemm` crate.

use candle_core::{CpuStorage, CustomOp1, CustomOp2, Layout, Module, Shape, Tensor};
#[cfg(test)]
use candle_core::{DType, Device};
use candle_nn::{LayerNorm, VarBuilder};

use crate::bf16::Bf16Dense;
use crate::config::{BertConfig, HiddenAct};

/// The encoder: its layers in order.
pub(crate) struct Layers {
    layers: Vec<Layer>,
}

/// One transformer layer.
struct Layer {
    /// Query, key and value projections stacked: `hidden` → `3 × hidden`.
    qkv: Dense,
    attention_out: Dense,
    attention_norm: LayerNorm,
    up: Dense,
    down: Dense,
    output_norm: LayerNorm,
    heads: usize,
}

impl Layers {
    /// The layers under `encoder.layer.<i>` of `weights`. Only GELU (erf)
    /// models: that is the activation [`Gelu`] computes. `bf16`: the dense
    /// layers in bfloat16 where the CPU multiplies it ([`Dense`]).
    pub fn load(
        weights: VarBuilder<'_>,
        config: &BertConfig,
        bf16: bool,
    ) -> candle_core::Result<Self> {
        if !matches!(config.hidden_act, HiddenAct::Gelu) {
            candle_core::bail!("the model's activation is not GELU (erf)");
        }
        if !config
            .hidden_size
            .is_multiple_of(config.num_attention_heads)
        {
            candle_core::bail!("the hidden size is not a multiple of the heads");
        }
        let layers = (0..config.num_hidden_layers)
            .map(|i| Layer::load(weights.pp(format!("layer.{i}")), config, bf16))
            .collect::<candle_core::Result<_>>()?;
        Ok(Self { layers })
    }

    /// `hidden` `(batch, len, hidden)` through every layer; `blocked`
    /// `(batch, 1, 1, len)` is added to the attention scores (0 for a real
    /// piece, a large negative value for padding).
    pub fn forward(&self, hidden: &Tensor, blocked: &Tensor) -> candle_core::Result<Tensor> {
        let mut hidden = hidden.clone();
        for layer in &self.layers {
            hidden = layer.forward(&hidden, blocked)?;
        }
        Ok(hidden)
    }
}

impl Layer {
    fn load(weights: VarBuilder<'_>, config: &BertConfig, bf16: bool) -> candle_core::Result<Self> {
        let hidden = config.hidden_size;
        let attention = weights.pp("attention");
        let projection = |name: &str| {
            let w = attention.pp("self").pp(name);
            Ok::<_, candle_core::Error>((
                w.get((hidden, hidden), "weight")?,
                w.get(hidden, "bias")?,
            ))
        };
        let (q, k, v) = (
            projection("query")?,
            projection("key")?,
            projection("value")?,
        );
        let qkv = Dense::new(
            Tensor::cat(&[&q.0, &k.0, &v.0], 0)?,
            Tensor::cat(&[&q.1, &k.1, &v.1], 0)?,
            bf16,
        )?;
        let dense = |w: VarBuilder<'_>, inputs: usize, outputs: usize| {
            Dense::new(
                w.get((outputs, inputs), "weight")?,
                w.get(outputs, "bias")?,
                bf16,
            )
        };
        let norm = |w: VarBuilder<'_>| candle_nn::layer_norm(hidden, config.layer_norm_eps, w);
        let inner = config.intermediate_size;
        Ok(Self {
            qkv,
            attention_out: dense(attention.pp("output").pp("dense"), hidden, hidden)?,
            attention_norm: norm(attention.pp("output").pp("LayerNorm"))?,
            up: dense(weights.pp("intermediate").pp("dense"), hidden, inner)?,
            down: dense(weights.pp("output").pp("dense"), inner, hidden)?,
            output_norm: norm(weights.pp("output").pp("LayerNorm"))?,
            heads: config.num_attention_heads,
        })
    }

    fn forward(&self, input: &Tensor, blocked: &Tensor) -> candle_core::Result<Tensor> {
        let (batch, len, hidden) = input.dims3()?;
        let head = hidden / self.heads;
        let input = input.reshape((batch * len, hidden))?;
        let qkv = self.qkv.forward(&input)?;
        // (batch, heads, len, head) for each of query, key and value.
        let split = |i: usize| {
            qkv.narrow(1, i * hidden, hidden)?
                .reshape((batch, len, self.heads, head))?
                .transpose(1, 2)?
                .contiguous()
        };
        let (query, key, value) = (split(0)?, split(1)?, split(2)?);
        let scores = query.matmul(&key.t()?)?;
        let weights = scores.apply_op2_no_bwd(
            blocked,
            &AttentionWeights {
                scale: 1.0 / (head as f32).sqrt(),
            },
        )?;
        let context = weights
            .matmul(&value)?
            .transpose(1, 2)?
            .reshape((batch * len, hidden))?;
        let attended = add_and_norm(&self.attention_out, &context, &input, &self.attention_norm)?;
        let inner = self.up.forward(&attended)?.apply_op1_no_bwd(&Gelu)?;
        let output = add_and_norm(&self.down, &inner, &attended, &self.output_norm)?;
        output.reshape((batch, len, hidden))
    }
}

/// BERT's sublayer output: `dense(x)` plus the sublayer's input
/// (`residual`), layer-normalized.
fn add_and_norm(
    dense: &Dense,
    x: &Tensor,
    residual: &Tensor,
    norm: &LayerNorm,
) -> candle_core::Result<Tensor> {
    norm.forward(&dense.forward(x)?.apply_op2_no_bwd(residual, &Add)?)
}

/// A dense layer, `x · Wᵀ + b` on `(rows, inputs)`: in bfloat16 where the
/// CPU multiplies it natively and the layer's shape fits ([`Bf16Dense`]:
/// twice the products per instruction), else candle's f32 matrix product
/// and the bias added by [`Add`].
enum Dense {
    Bf16(Bf16Dense),
    F32 { weight: Tensor, bias: Tensor },
}

impl Dense {
    /// `weight` `(outputs, inputs)`, `bias` `(outputs)`.
    fn new(weight: Tensor, bias: Tensor, bf16: bool) -> candle_core::Result<Self> {
        if bf16 && crate::bf16::supported() {
            let (outputs, inputs) = weight.dims2()?;
            let values = weight.flatten_all()?.to_vec1::<f32>()?;
            if let Some(dense) = Bf16Dense::new(&values, &bias.to_vec1()?, outputs, inputs) {
                return Ok(Self::Bf16(dense));
            }
        }
        Ok(Self::F32 { weight, bias })
    }

    fn forward(&self, x: &Tensor) -> candle_core::Result<Tensor> {
        match self {
            Self::Bf16(dense) => x.contiguous()?.apply_op1_no_bwd(dense),
            Self::F32 { weight, bias } => x.matmul(&weight.t()?)?.apply_op2_no_bwd(bias, &Add),
        }
    }
}

impl CustomOp1 for Bf16Dense {
    fn name(&self) -> &'static str {
        "dense-bf16"
    }

    fn cpu_fwd(
        &self,
        storage: &CpuStorage,
        layout: &Layout,
    ) -> candle_core::Result<(CpuStorage, Shape)> {
        let values = contiguous_f32(storage, layout, "dense layer")?;
        let (rows, inputs) = layout.shape().dims2()?;
        if inputs != self.inputs() {
            candle_core::bail!("dense layer: {inputs} inputs for {}", self.inputs());
        }
        let out = self.forward(values, rows);
        Ok((CpuStorage::F32(out), Shape::from((rows, self.outputs()))))
    }
}

/// Attention weights from the raw scores `(batch, heads, len, len)` and the
/// padding mask `(batch, 1, 1, len)`: the softmax over each row of
/// `scores × scale + blocked`, in one pass over the scores instead of
/// candle's three (scale, add, softmax), with an exponential the compiler
/// vectorizes ([`exp`]) instead of a library call per score.
struct AttentionWeights {
    scale: f32,
}

impl CustomOp2 for AttentionWeights {
    fn name(&self) -> &'static str {
        "attention-weights"
    }

    fn cpu_fwd(
        &self,
        scores: &CpuStorage,
        scores_layout: &Layout,
        blocked: &CpuStorage,
        blocked_layout: &Layout,
    ) -> candle_core::Result<(CpuStorage, Shape)> {
        let (
            CpuStorage::F32(scores),
            Some((scores_start, scores_end)),
            CpuStorage::F32(blocked),
            Some((blocked_start, blocked_end)),
        ) = (
            scores,
            scores_layout.contiguous_offsets(),
            blocked,
            blocked_layout.contiguous_offsets(),
        )
        else {
            candle_core::bail!("attention weights: contiguous f32 tensors are expected");
        };
        let (batch, heads, len, keys) = scores_layout.shape().dims4()?;
        if blocked_layout.shape().dims4()? != (batch, 1, 1, keys) || len == 0 || keys == 0 {
            candle_core::bail!("attention weights: the mask does not fit the scores");
        }
        let scores = &scores[scores_start..scores_end];
        let blocked = &blocked[blocked_start..blocked_end];
        let mut out = vec![0.0; scores.len()];
        let per_text = heads * len * keys;
        for ((scores, out), blocked) in scores
            .chunks_exact(per_text)
            .zip(out.chunks_exact_mut(per_text))
            .zip(blocked.chunks_exact(keys))
        {
            for (row, out) in scores.chunks_exact(keys).zip(out.chunks_exact_mut(keys)) {
                softmax_row(row, blocked, self.scale, out);
            }
        }
        Ok((CpuStorage::F32(out), scores_layout.shape().clone()))
    }
}

/// One row of attention weights; vectorized with AVX2 where the CPU has it.
fn softmax_row(scores: &[f32], blocked: &[f32], scale: f32, out: &mut [f32]) {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") {
        // SAFETY: the CPU has AVX2 (checked just above).
        return unsafe { softmax_row_avx2(scores, blocked, scale, out) };
    }
    softmax_row_portable(scores, blocked, scale, out)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn softmax_row_avx2(scores: &[f32], blocked: &[f32], scale: f32, out: &mut [f32]) {
    softmax_row_portable(scores, blocked, scale, out)
}

#[inline(always)]
fn softmax_row_portable(scores: &[f32], blocked: &[f32], scale: f32, out: &mut [f32]) {
    for ((out, &score), &block) in out.iter_mut().zip(scores).zip(blocked) {
        *out = score * scale + block;
    }
    let max = out.iter().fold(f32::MIN, |max, &x| max.max(x));
    for out in out.iter_mut() {
        *out = exp(*out - max);
    }
    let sum: f32 = out.iter().sum();
    let inverse = 1.0 / sum;
    for out in out.iter_mut() {
        *out *= inverse;
    }
}

/// e^x for x ≤ 0 (a score minus its row's largest), 0 below -87 (where
/// e^x leaves f32's normal range; padded keys are far below). Cephes'
/// single-precision method: x = n·ln 2 + r with |r| ≤ ln 2 / 2, a degree-5
/// polynomial for e^r, and 2^n made from its exponent bits; within 2 ulp
/// of the exact value. No branches, no library call: it vectorizes.
#[inline(always)]
fn exp(x: f32) -> f32 {
    const LOG2E: f32 = std::f32::consts::LOG2_E;
    const LN2_HI: f32 = 0.693_359_4;
    const LN2_LO: f32 = -2.121_944_4e-4;
    // 1.5 × 2^23: adding and subtracting it rounds to the nearest integer.
    const ROUND: f32 = 12_582_912.0;
    let clamped = x.max(-87.0);
    let n = (clamped * LOG2E + ROUND) - ROUND;
    let r = clamped - n * LN2_HI - n * LN2_LO;
    let p = 1.987_569_1e-4;
    let p = p * r + 1.398_199_9e-3;
    let p = p * r + 8.333_452e-3;
    let p = p * r + 4.166_579_6e-2;
    let p = p * r + 1.666_666_5e-1;
    let p = p * r + 5e-1;
    let y = p * (r * r) + r + 1.0;
    let power = f32::from_bits(((n as i32 + 127) as u32) << 23);
    if x < -87.0 {
        0.0
    } else {
        y * power
    }
}

/// `a + b` on f32 CPU tensors, where `b` has `a`'s shape or the shape of
/// `a`'s last dimensions (a bias, a table of positions): it is added to each
/// block of `a` of its size. On the calling thread: see the module doc for
/// why not candle's add.
pub(crate) struct Add;

impl CustomOp2 for Add {
    fn name(&self) -> &'static str {
        "add"
    }

    fn cpu_fwd(
        &self,
        a: &CpuStorage,
        a_layout: &Layout,
        b: &CpuStorage,
        b_layout: &Layout,
    ) -> candle_core::Result<(CpuStorage, Shape)> {
        let (a_dims, b_dims) = (a_layout.shape().dims(), b_layout.shape().dims());
        if b_dims.len() > a_dims.len() || !a_dims.ends_with(b_dims) {
            candle_core::bail!("add: shape {b_dims:?} does not fit {a_dims:?}");
        }
        let a_values = contiguous_f32(a, a_layout, "add")?;
        let b_values = contiguous_f32(b, b_layout, "add")?;
        let mut out = a_values.to_vec();
        if !b_values.is_empty() {
            for block in out.chunks_exact_mut(b_values.len()) {
                for (x, y) in block.iter_mut().zip(b_values) {
                    *x += y;
                }
            }
        }
        Ok((CpuStorage::F32(out), a_layout.shape().clone()))
    }
}

/// The values of a custom op's input, which must be a contiguous f32 CPU
/// tensor (`op` names the op in the error).
fn contiguous_f32<'a>(
    storage: &'a CpuStorage,
    layout: &Layout,
    op: &str,
) -> candle_core::Result<&'a [f32]> {
    match (storage, layout.contiguous_offsets()) {
        (CpuStorage::F32(values), Some((start, end))) => Ok(&values[start..end]),
        _ => candle_core::bail!("{op}: a contiguous f32 tensor is expected"),
    }
}

/// GELU with the exact (erf) form, `x/2 · (1 + erf(x/√2))`, on f32 CPU tensors.
struct Gelu;

impl CustomOp1 for Gelu {
    fn name(&self) -> &'static str {
        "gelu-erf"
    }

    fn cpu_fwd(
        &self,
        storage: &CpuStorage,
        layout: &Layout,
    ) -> candle_core::Result<(CpuStorage, Shape)> {
        let values = contiguous_f32(storage, layout, "gelu")?;
        Ok((CpuStorage::F32(gelu_all(values)), layout.shape().clone()))
    }
}

/// [`gelu`] of every value, 8 at a time where the CPU has AVX2 (the
/// portable build's SSE2 does 4). The same operations either way (no fused
/// multiply-add), so the same results.
fn gelu_all(values: &[f32]) -> Vec<f32> {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") {
        // SAFETY: the CPU has AVX2 (checked just above).
        return unsafe { gelu_all_avx2(values) };
    }
    gelu_all_portable(values)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn gelu_all_avx2(values: &[f32]) -> Vec<f32> {
    gelu_all_portable(values)
}

#[inline(always)]
fn gelu_all_portable(values: &[f32]) -> Vec<f32> {
    let mut out = vec![0.0; values.len()];
    for (out, &x) in out.iter_mut().zip(values) {
        *out = gelu(x);
    }
    out
}

#[inline(always)]
fn gelu(x: f32) -> f32 {
    0.5 * x * (1.0 + erf(x * std::f32::consts::FRAC_1_SQRT_2))
}

/// erf(x) = x · P(x²) / Q(x²) on [-3.92, 3.92], at most ±1, and ±1 beyond
/// (where erf is 1 in f32 to within 3e-8). The coefficients are a weighted
/// least-squares fit of the exact erf made for this function (degree 6 over
/// 5 in x²); its largest error, measured against the exact erf at 400,001
/// points of [-6, 6] in f32 arithmetic, is 4.2e-7, and GELU's over
/// [-40, 40] is 2.4e-7 of |x| (f32's own rounding). No branches, no library
/// call: the compiler vectorizes it.
#[inline(always)]
fn erf(x: f32) -> f32 {
    const LIMIT: f32 = 3.92;
    const P: [f32; 7] = [
        std::f32::consts::FRAC_2_SQRT_PI,
        0.184_650_91,
        0.054_260_53,
        0.003_828_943_4,
        3.798_430_4e-4,
        4.704_257_7e-6,
        -1.325_870_6e-8,
    ];
    const Q: [f32; 6] = [
        1.0,
        0.496_976_14,
        0.113_744_95,
        0.015_422_142,
        0.001_303_635,
        6.329_328e-5,
    ];
    let saturated = x.abs() >= LIMIT;
    let x = x.clamp(-LIMIT, LIMIT);
    let t = x * x;
    let p = P.iter().rev().fold(0.0, |acc, &c| acc * t + c);
    let q = Q.iter().rev().fold(0.0, |acc, &c| acc * t + c);
    if saturated {
        1.0f32.copysign(x)
    } else {
        (x * p / q).clamp(-1.0, 1.0)
    }
}

/// Unused outside tests: candle's own GELU (erf), the reference.
#[cfg(test)]
fn candle_gelu(values: &[f32]) -> Vec<f32> {
    Tensor::from_slice(values, values.len(), &Device::Cpu)
        .and_then(|t| t.gelu_erf())
        .and_then(|t| t.to_dtype(DType::F32))
        .and_then(|t| t.to_vec1())
        .expect("candle's gelu on a vector")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gelu_matches_candles_exact_gelu() {
        let xs: Vec<f32> = (-400_000..=400_000).map(|i| i as f32 * 5e-5).collect();
        let expected = candle_gelu(&xs);
        let worst = xs
            .iter()
            .zip(&expected)
            .map(|(&x, &e)| (gelu(x) - e).abs() / x.abs().max(1.0))
            .fold(0.0f32, f32::max);
        assert!(worst < 1e-6, "largest difference {worst} of |x|");
        let tensor = Tensor::from_slice(&xs, xs.len(), &Device::Cpu).unwrap();
        let ours: Vec<f32> = tensor.apply_op1_no_bwd(&Gelu).unwrap().to_vec1().unwrap();
        assert_eq!(ours, xs.iter().map(|&x| gelu(x)).collect::<Vec<_>>());
        assert_eq!(gelu(f32::INFINITY), f32::INFINITY);
        assert_eq!(gelu(-100.0), 0.0);
        assert_eq!(gelu(100.0), 100.0);
    }

    #[test]
    fn exp_matches_the_library_exp() {
        for i in 0..=1_740_000 {
            let x = -(i as f32) * 5e-5;
            let (ours, exact) = (exp(x), (x as f64).exp());
            let error = (ours as f64 - exact).abs() / exact;
            assert!(error < 3e-7, "exp({x}) = {ours}, exact {exact}");
        }
        assert_eq!(exp(0.0), 1.0);
        assert!(exp(-87.0) > 0.0);
        assert_eq!(exp(-87.001), 0.0);
        assert_eq!(exp(f32::MIN), 0.0);
        assert_eq!(exp(f32::NEG_INFINITY), 0.0);
    }

    #[test]
    fn attention_weights_match_candles_masked_softmax() {
        let (batch, heads, len) = (3, 2, 5);
        let scores: Vec<f32> = (0..batch * heads * len * len)
            .map(|i| ((i * 37 % 101) as f32 - 50.0) * 0.3)
            .collect();
        let scores = Tensor::from_vec(scores, (batch, heads, len, len), &Device::Cpu).unwrap();
        // Text 0 has 5 real pieces, text 1 three, text 2 one.
        let blocked: Vec<f32> = [5, 3, 1]
            .iter()
            .flat_map(|&real| (0..len).map(move |j| if j < real { 0.0 } else { f32::MIN }))
            .collect();
        let blocked = Tensor::from_vec(blocked, (batch, 1, 1, len), &Device::Cpu).unwrap();
        let scale = 0.125;
        let expected = scores
            .affine(scale as f64, 0.0)
            .and_then(|s| s.broadcast_add(&blocked))
            .and_then(|s| candle_nn::ops::softmax_last_dim(&s))
            .and_then(|s| s.flatten_all())
            .and_then(|s| s.to_vec1::<f32>())
            .unwrap();
        let ours: Vec<f32> = scores
            .apply_op2_no_bwd(&blocked, &AttentionWeights { scale })
            .and_then(|s| s.flatten_all())
            .and_then(|s| s.to_vec1())
            .unwrap();
        for (ours, expected) in ours.iter().zip(&expected) {
            assert!((ours - expected).abs() < 1e-6, "{ours} vs {expected}");
            // Padded keys get no weight at all.
            assert_eq!(*ours == 0.0, *expected == 0.0);
        }
    }

    #[test]
    fn erf_is_odd_and_saturates() {
        for x in [0.1f32, 0.7, 1.3, 2.9, 3.9, 10.0] {
            assert_eq!(erf(-x), -erf(x));
        }
        assert!((erf(10.0) - 1.0).abs() < 5e-7);
        assert_eq!(erf(0.0), 0.0);
    }
}
