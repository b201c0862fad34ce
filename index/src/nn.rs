//! Fused f32 kernels for the engine's builtin BERT encoder: bias + GELU, bias + residual +
//! layer norm, per-text multi-head attention over packed `[Q | K | V]` rows, and the linear
//! layers' product for inputs of few rows (`linear.rs`).
//!
//! They live here, not in the engine, because this crate is optimised even in dev builds
//! (`cargo run`, the tests) and already dispatches through pulp: each body is plain Rust that
//! LLVM vectorises inside the `#[target_feature]` context pulp's `Arch::dispatch` opens (AVX2 +
//! FMA on x86_64), with branch-free polynomial `exp` and `erf` instead of libm's scalar calls.
//! Rows are split over the rayon global pool, the pool candle's matrix products (gemm) also
//! use, so no second pool spins beside it; small inputs run on the calling thread.
//! Accuracy: `exp` within ~2 ulp (Cephes), `erf` within 3.5e-7 absolute (series near 0,
//! Abramowitz & Stegun 7.1.26 beyond); the encoder's vectors stay within 1e-5 of PyTorch's (engine embed tests).
// PERF: run the embed bench (benches/benches/embed.rs) before changing.

use pulp::{Arch, Simd, WithSimd};
use rayon::prelude::*;

mod linear;

pub use linear::linear;

/// Elements one rayon task handles at least; below this the split costs more than it saves.
const MIN_TASK_ELEMENTS: usize = 16 * 1024;

/// Rows per rayon task for rows of `cols` elements.
fn rows_per_task(cols: usize) -> usize {
    MIN_TASK_ELEMENTS.div_ceil(cols.max(1)).max(1)
}

/// `x = gelu(x + bias)` row by row (`x` is rows of `bias.len()`), GELU by erf.
///
/// # Panics
/// If `x` is not whole rows of `bias.len()`.
pub fn bias_gelu(x: &mut [f32], bias: &[f32]) {
    let cols = bias.len();
    assert!(
        cols > 0 && x.len().is_multiple_of(cols),
        "bias_gelu: ragged rows"
    );
    let arch = Arch::new();
    x.par_chunks_mut(cols * rows_per_task(cols))
        .for_each(|chunk| arch.dispatch(BiasGelu { x: chunk, bias }));
}

/// `x = layer_norm(x + bias + residual) * gamma + beta` row by row (`residual` may be absent);
/// mean and variance in two passes over the row.
///
/// # Panics
/// If the lengths disagree.
pub fn add_norm(
    x: &mut [f32],
    residual: Option<&[f32]>,
    bias: &[f32],
    gamma: &[f32],
    beta: &[f32],
    eps: f32,
) {
    let cols = bias.len();
    assert!(
        cols > 0
            && x.len().is_multiple_of(cols)
            && gamma.len() == cols
            && beta.len() == cols
            && residual.is_none_or(|r| r.len() == x.len()),
        "add_norm: lengths disagree"
    );
    let arch = Arch::new();
    let chunk = cols * rows_per_task(cols);
    let norm = NormParams {
        bias,
        gamma,
        beta,
        eps,
    };
    match residual {
        Some(residual) => x
            .par_chunks_mut(chunk)
            .zip(residual.par_chunks(chunk))
            .for_each(|(x, residual)| {
                arch.dispatch(AddNorm {
                    x,
                    residual: Some(residual),
                    norm,
                })
            }),
        None => x.par_chunks_mut(chunk).for_each(|x| {
            arch.dispatch(AddNorm {
                x,
                residual: None,
                norm,
            })
        }),
    }
}

/// The shape of a packed attention input.
#[derive(Clone, Copy, Debug)]
pub struct AttentionShape {
    pub heads: usize,
    pub head_dim: usize,
}

/// Scaled dot-product attention of packed texts: `qkv` holds one row `[Q | K | V]` (each
/// `heads × head_dim`, before `bias` is added) per token, text `i` owns rows
/// `spans[i].0 .. spans[i].0 + spans[i].1` and sees only those. Returns the context rows
/// (`heads × head_dim` per token) in the same order. Texts and heads run in parallel.
///
/// # Panics
/// If `bias` is not one row, or a span runs past `qkv`.
pub fn attention(
    qkv: &[f32],
    bias: &[f32],
    spans: &[(usize, usize)],
    shape: AttentionShape,
) -> Vec<f32> {
    let h = shape.heads * shape.head_dim;
    let stride = 3 * h;
    assert!(
        h > 0 && bias.len() == stride && qkv.len().is_multiple_of(stride),
        "attention: bias or rows of the wrong width"
    );
    let tokens = qkv.len() / stride;
    assert!(
        spans.iter().all(|&(offset, len)| offset + len <= tokens),
        "attention: a span runs past the rows"
    );
    let arch = Arch::new();
    let tasks: Vec<(usize, usize)> = (0..spans.len())
        .flat_map(|text| (0..shape.heads).map(move |head| (text, head)))
        .collect();
    let outputs: Vec<Vec<f32>> = tasks
        .par_iter()
        .map(|&(text, head)| {
            let (offset, len) = spans[text];
            arch.dispatch(HeadAttention {
                rows: &qkv[offset * stride..(offset + len) * stride],
                bias,
                head,
                shape,
            })
        })
        .collect();
    let mut context = vec![0f32; tokens * h];
    for (&(text, head), out) in tasks.iter().zip(&outputs) {
        let (offset, len) = spans[text];
        let d = shape.head_dim;
        for (i, row) in out.chunks_exact(d).enumerate().take(len) {
            let at = (offset + i) * h + head * d;
            context[at..at + d].copy_from_slice(row);
        }
    }
    context
}

struct BiasGelu<'a> {
    x: &'a mut [f32],
    bias: &'a [f32],
}

impl WithSimd for BiasGelu<'_> {
    type Output = ();

    #[inline(always)]
    fn with_simd<S: Simd>(self, _simd: S) {
        for row in self.x.chunks_exact_mut(self.bias.len()) {
            for (v, b) in row.iter_mut().zip(self.bias) {
                *v = gelu_erf(*v + b);
            }
        }
    }
}

#[derive(Clone, Copy)]
struct NormParams<'a> {
    bias: &'a [f32],
    gamma: &'a [f32],
    beta: &'a [f32],
    eps: f32,
}

struct AddNorm<'a> {
    x: &'a mut [f32],
    residual: Option<&'a [f32]>,
    norm: NormParams<'a>,
}

impl WithSimd for AddNorm<'_> {
    type Output = ();

    #[inline(always)]
    fn with_simd<S: Simd>(self, _simd: S) {
        let NormParams {
            bias,
            gamma,
            beta,
            eps,
        } = self.norm;
        let cols = bias.len();
        for (r, row) in self.x.chunks_exact_mut(cols).enumerate() {
            for (v, b) in row.iter_mut().zip(bias) {
                *v += b;
            }
            if let Some(residual) = self.residual {
                for (v, s) in row.iter_mut().zip(&residual[r * cols..(r + 1) * cols]) {
                    *v += s;
                }
            }
            let mean = sum(row) / cols as f32;
            for v in row.iter_mut() {
                *v -= mean;
            }
            let var = sum_squares(row) / cols as f32;
            let inv_std = 1.0 / (var + eps).sqrt();
            for ((v, g), b) in row.iter_mut().zip(gamma).zip(beta) {
                *v = *v * inv_std * g + b;
            }
        }
    }
}

struct HeadAttention<'a> {
    /// The text's `[Q | K | V]` rows.
    rows: &'a [f32],
    bias: &'a [f32],
    head: usize,
    shape: AttentionShape,
}

impl WithSimd for HeadAttention<'_> {
    type Output = Vec<f32>;

    #[inline(always)]
    fn with_simd<S: Simd>(self, _simd: S) -> Vec<f32> {
        let d = self.shape.head_dim;
        let h = self.shape.heads * d;
        let len = self.rows.len() / (3 * h);
        if len == 0 {
            return Vec::new();
        }
        let (q_at, k_at, v_at) = (self.head * d, h + self.head * d, 2 * h + self.head * d);
        // Q and V as len × d, K transposed (d × len) so scores fill along a contiguous row.
        let mut q = vec![0f32; len * d];
        let mut kt = vec![0f32; d * len];
        let mut v = vec![0f32; len * d];
        for (i, row) in self.rows.chunks_exact(3 * h).enumerate() {
            for c in 0..d {
                q[i * d + c] = row[q_at + c] + self.bias[q_at + c];
                kt[c * len + i] = row[k_at + c] + self.bias[k_at + c];
                v[i * d + c] = row[v_at + c] + self.bias[v_at + c];
            }
        }
        let scale = 1.0 / (d as f32).sqrt();
        let mut scores = vec![0f32; len];
        let mut out = vec![0f32; len * d];
        for (q_row, out_row) in q.chunks_exact(d).zip(out.chunks_exact_mut(d)) {
            // Both products take four terms of their sum per pass, so a pass stores once per
            // four multiply-adds instead of once per one.
            scores.fill(0.0);
            let q_blocks = q_row.chunks_exact(4);
            let k_blocks = kt.chunks_exact(4 * len);
            for (&qc, k_row) in q_blocks
                .remainder()
                .iter()
                .zip(k_blocks.remainder().chunks_exact(len))
            {
                for (s, k) in scores.iter_mut().zip(k_row) {
                    *s += qc * k;
                }
            }
            for (qs, ks) in q_blocks.zip(k_blocks) {
                let (k0, rest) = ks.split_at(len);
                let (k1, rest) = rest.split_at(len);
                let (k2, k3) = rest.split_at(len);
                for ((((s, a), b), c), e) in scores.iter_mut().zip(k0).zip(k1).zip(k2).zip(k3) {
                    *s += qs[0] * a + qs[1] * b + qs[2] * c + qs[3] * e;
                }
            }
            let top = max(&scores);
            for s in scores.iter_mut() {
                *s = exp((*s - top) * scale);
            }
            let inv_total = 1.0 / sum(&scores);
            let p_blocks = scores.chunks_exact(4);
            let v_blocks = v.chunks_exact(4 * d);
            for (&p, v_row) in p_blocks
                .remainder()
                .iter()
                .zip(v_blocks.remainder().chunks_exact(d))
            {
                for (o, x) in out_row.iter_mut().zip(v_row) {
                    *o += p * x;
                }
            }
            for (ps, vs) in p_blocks.zip(v_blocks) {
                let (v0, rest) = vs.split_at(d);
                let (v1, rest) = rest.split_at(d);
                let (v2, v3) = rest.split_at(d);
                for ((((o, a), b), c), e) in out_row.iter_mut().zip(v0).zip(v1).zip(v2).zip(v3) {
                    *o += ps[0] * a + ps[1] * b + ps[2] * c + ps[3] * e;
                }
            }
            for o in out_row.iter_mut() {
                *o *= inv_total;
            }
        }
        out
    }
}

/// Lanes of the reductions below: eight independent partial results let LLVM vectorise a
/// float reduction it may not reorder.
const LANES: usize = 8;

#[inline(always)]
fn sum(xs: &[f32]) -> f32 {
    let mut acc = [0f32; LANES];
    let chunks = xs.chunks_exact(LANES);
    let tail: f32 = chunks.remainder().iter().sum();
    for chunk in chunks {
        for (a, x) in acc.iter_mut().zip(chunk) {
            *a += x;
        }
    }
    acc.iter().sum::<f32>() + tail
}

#[inline(always)]
fn sum_squares(xs: &[f32]) -> f32 {
    let mut acc = [0f32; LANES];
    let chunks = xs.chunks_exact(LANES);
    let tail: f32 = chunks.remainder().iter().map(|x| x * x).sum();
    for chunk in chunks {
        for (a, x) in acc.iter_mut().zip(chunk) {
            *a += x * x;
        }
    }
    acc.iter().sum::<f32>() + tail
}

#[inline(always)]
fn max(xs: &[f32]) -> f32 {
    let mut acc = [f32::NEG_INFINITY; LANES];
    let chunks = xs.chunks_exact(LANES);
    let tail = chunks
        .remainder()
        .iter()
        .fold(f32::NEG_INFINITY, |m, &x| m.max(x));
    for chunk in chunks {
        for (a, &x) in acc.iter_mut().zip(chunk) {
            *a = if x > *a { x } else { *a };
        }
    }
    acc.iter().fold(tail, |m, &x| m.max(x))
}

/// `e^x`, Cephes' single-precision method: `x = n·ln 2 + r`, a degree-5 polynomial in `r`,
/// then `2^n` built in the exponent bits. Inputs are clamped to the normal range.
#[inline(always)]
pub fn exp(x: f32) -> f32 {
    const LOG2E: f32 = std::f32::consts::LOG2_E;
    // ln 2 split in two so that n·C1 is exact.
    const C1: f32 = 0.693_359_4;
    const C2: f32 = -2.121_944_4e-4;
    // min/max and the exponent built by adding a magic number (no float-to-int cast, whose
    // NaN and saturation checks kept LLVM from vectorising the loops that call this).
    #[allow(clippy::manual_clamp)] // max/min, whose NaN rule LLVM maps onto vector min/max
    let x = x.max(-87.3).min(88.3);
    let n = (x * LOG2E + 0.5).floor();
    let r = x - n * C1 - n * C2;
    let p = ((((1.987_569_1e-4 * r + 1.398_199_9e-3) * r + 8.333_452e-3) * r + 4.166_579_6e-2) * r
        + 1.666_666_5e-1)
        * r
        + 0.5;
    let y = p * r * r + r + 1.0;
    // n + 127 lies in [1, 255) after the clamp; added to 2^23 it sits in the low mantissa bits,
    // and shifting those into the exponent field (the rest shifts out) gives 2^n.
    let biased = n + (127.0 + 8_388_608.0);
    y * f32::from_bits(biased.to_bits() << 23)
}

/// `erf(x)`: its Maclaurin series below |x| = 0.5 (where the formula below would lose digits
/// to cancellation), Abramowitz & Stegun 7.1.26 (1.5e-7 absolute, 3e-7 with f32 rounding)
/// above. Both halves are
/// computed and one is selected, so the loop stays branch-free.
#[inline(always)]
pub fn erf(x: f32) -> f32 {
    const P: f32 = 0.327_591_1;
    const A: [f32; 5] = [
        0.254_829_6,
        -0.284_496_74,
        1.421_413_8,
        -1.453_152_1,
        1.061_405_4,
    ];
    // 2/√π · (x − x³/3 + x⁵/10 − x⁷/42 + x⁹/216 − x¹¹/1320).
    const TWO_OVER_SQRT_PI: f32 = std::f32::consts::FRAC_2_SQRT_PI;
    let a = x.abs();
    let z = x * x;
    let series = TWO_OVER_SQRT_PI
        * x
        * (1.0 + z * (-1.0 / 3.0 + z * (0.1 + z * (-1.0 / 42.0 + z * (1.0 / 216.0 - z / 1320.0)))));
    let t = 1.0 / (1.0 + P * a);
    let poly = ((((A[4] * t + A[3]) * t + A[2]) * t + A[1]) * t + A[0]) * t;
    let tail = (1.0 - poly * exp(-z)).copysign(x);
    if a < 0.5 { series } else { tail }
}

/// GELU by erf, as BERT's `gelu`: `x · (1 + erf(x / √2)) / 2`.
#[inline(always)]
pub fn gelu_erf(x: f32) -> f32 {
    0.5 * x * (1.0 + erf(x * std::f32::consts::FRAC_1_SQRT_2))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The reference erf: its Maclaurin series in f64, good to 1e-15 for |x| < 3.
    fn erf_series(x: f64) -> f64 {
        let (mut term, mut total, mut n) = (x, x, 0.0);
        while term.abs() > 1e-17 {
            n += 1.0;
            term *= -x * x / n;
            total += term / (2.0 * n + 1.0);
        }
        total * 2.0 / std::f64::consts::PI.sqrt()
    }

    #[test]
    fn exp_is_within_a_few_ulp() {
        let mut worst = 0f64;
        for i in -8000..=8000 {
            let x = i as f32 * 0.01;
            let want = f64::from(x).exp();
            let rel = ((f64::from(exp(x)) - want) / want).abs();
            worst = worst.max(rel);
        }
        assert!(worst < 5e-7, "exp's worst relative error {worst:e}");
    }

    #[test]
    fn erf_is_within_a_third_of_a_millionth() {
        let mut worst = 0f64;
        for i in -3000..=3000 {
            let x = i as f32 * 0.001;
            worst = worst.max((f64::from(erf(x)) - erf_series(f64::from(x))).abs());
        }
        assert!(worst < 3.5e-7, "erf's worst error {worst:e}");
        assert_eq!(erf(-10.0), -1.0);
        assert_eq!(erf(10.0), 1.0);
    }

    #[test]
    fn add_norm_centres_and_scales_each_row() {
        let cols = 384;
        let rows = 50;
        let x0: Vec<f32> = (0..rows * cols)
            .map(|i| ((i * 37) % 101) as f32 * 0.1)
            .collect();
        let residual: Vec<f32> = (0..rows * cols).map(|i| (i % 7) as f32).collect();
        let bias: Vec<f32> = (0..cols).map(|i| i as f32 * 0.01).collect();
        let gamma = vec![2.0f32; cols];
        let beta = vec![1.0f32; cols];
        let mut x = x0.clone();
        add_norm(&mut x, Some(&residual), &bias, &gamma, &beta, 1e-12);
        for (r, row) in x.chunks_exact(cols).enumerate() {
            // Reference in f64.
            let v: Vec<f64> = (0..cols)
                .map(|c| f64::from(x0[r * cols + c] + bias[c] + residual[r * cols + c]))
                .collect();
            let mean = v.iter().sum::<f64>() / cols as f64;
            let var = v.iter().map(|a| (a - mean).powi(2)).sum::<f64>() / cols as f64;
            for (got, want) in row.iter().zip(&v) {
                let want = (want - mean) / var.sqrt() * 2.0 + 1.0;
                assert!((f64::from(*got) - want).abs() < 1e-5, "{got} vs {want}");
            }
        }
    }

    #[test]
    fn attention_matches_a_direct_softmax_and_keeps_texts_apart() {
        let shape = AttentionShape {
            heads: 2,
            head_dim: 4,
        };
        let stride = 3 * 8;
        let spans = [(0, 3), (3, 5)];
        let qkv: Vec<f32> = (0..8 * stride)
            .map(|i| ((i * 13) % 17) as f32 * 0.1 - 0.8)
            .collect();
        let bias: Vec<f32> = (0..stride).map(|i| i as f32 * 0.01).collect();
        let got = attention(&qkv, &bias, &spans, shape);
        let at = |t: usize, c: usize| f64::from(qkv[t * stride + c] + bias[c]);
        for &(offset, len) in &spans {
            for head in 0..2 {
                for i in offset..offset + len {
                    let scores: Vec<f64> = (offset..offset + len)
                        .map(|j| {
                            (0..4)
                                .map(|c| at(i, head * 4 + c) * at(j, 8 + head * 4 + c))
                                .sum::<f64>()
                                / 2.0
                        })
                        .collect();
                    let top = scores.iter().cloned().fold(f64::MIN, f64::max);
                    let weights: Vec<f64> = scores.iter().map(|s| (s - top).exp()).collect();
                    let total: f64 = weights.iter().sum();
                    for c in 0..4 {
                        let want: f64 = (offset..offset + len)
                            .zip(&weights)
                            .map(|(j, w)| w / total * at(j, 16 + head * 4 + c))
                            .sum();
                        let got = f64::from(got[i * 8 + head * 4 + c]);
                        assert!((got - want).abs() < 1e-6, "{got} vs {want}");
                    }
                }
            }
        }
    }
}
