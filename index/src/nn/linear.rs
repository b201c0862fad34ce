//! A linear layer's product for inputs of few rows: `y = x · Wᵀ`, with `W` in the checkpoint's
//! own `out × in` layout, so every output is the dot product of two contiguous rows.
//!
//! A general matrix product (gemm) packs the whole weight matrix into panels on every call,
//! which pays off when many input rows reuse each panel, but one short text has only ~16 rows:
//! packing then costs as much as the product and reads the weights twice. Here each weight row
//! is read once from memory and, while its group of [`COLS`] rows sits in L1, dotted with every
//! input row, [`ROWS`] input rows at a time: [`ROWS`] × [`COLS`] vector accumulators, so each
//! pass loads `ROWS + COLS` vectors for `ROWS · COLS` fused multiply-adds. Groups of output
//! columns are split over the rayon pool. Above a few dozen rows gemm's cache blocking wins;
//! the caller picks (the embed bench's `linear` table measures both).
//! Summation order: lane-wise partial sums over the row, then across the lanes (pulp's
//! `reduce_sum`), then the tail, so results differ from a sequential sum by rounding only.
// PERF: run the embed bench (`embed linear`, then the embedder rows) before changing.

use std::array;

use pulp::{Arch, Simd, WithSimd};
use rayon::prelude::*;

/// Weight rows dotted together: each loaded input vector serves this many products.
const COLS: usize = 4;
/// Input rows dotted together: each loaded weight vector serves this many products.
const ROWS: usize = 2;
/// Multiply-adds one rayon task does at least; below this the split costs more than it saves.
const MIN_TASK_MACS: usize = 128 * 1024;

/// `x · Wᵀ` for `x` of rows of `input` floats and `weight` of rows of `input` floats (one per
/// output): returns one row of `weight.len() / input` floats per row of `x`. No bias.
///
/// # Panics
/// If `input` is 0 or either slice is not whole rows of `input`.
pub fn linear(x: &[f32], weight: &[f32], input: usize) -> Vec<f32> {
    assert!(
        input > 0 && x.len().is_multiple_of(input) && weight.len().is_multiple_of(input),
        "linear: rows of the wrong width"
    );
    let rows = x.len() / input;
    let outputs = weight.len() / input;
    if rows == 0 || outputs == 0 {
        return vec![0f32; rows * outputs];
    }
    // Output columns per task: whole groups, enough work to be worth a task.
    let per_task = MIN_TASK_MACS
        .div_ceil(rows * input)
        .next_multiple_of(COLS)
        .min(outputs.next_multiple_of(COLS));
    // Each task writes its columns contiguously (column-major), transposed once at the end.
    let mut columns = vec![0f32; outputs * rows];
    let arch = Arch::new();
    columns
        .par_chunks_mut(per_task * rows)
        .zip(weight.par_chunks(per_task * input))
        .for_each(|(out, weight)| {
            arch.dispatch(Linear {
                x,
                weight,
                input,
                out,
            })
        });
    let mut y = vec![0f32; rows * outputs];
    for (j, column) in columns.chunks_exact(rows).enumerate() {
        for (i, &v) in column.iter().enumerate() {
            y[i * outputs + j] = v;
        }
    }
    y
}

/// One task: the columns of `weight`'s rows, written to `out` column by column.
struct Linear<'a> {
    x: &'a [f32],
    weight: &'a [f32],
    input: usize,
    out: &'a mut [f32],
}

impl WithSimd for Linear<'_> {
    type Output = ();

    #[inline(always)]
    fn with_simd<S: Simd>(self, simd: S) {
        let k = self.input;
        let rows = self.x.len() / k;
        let groups = self.weight.chunks_exact(COLS * k);
        let tail = groups.remainder();
        let mut outs = self.out.chunks_exact_mut(COLS * rows);
        for (group, out) in groups.zip(outs.by_ref()) {
            let w: [&[f32]; COLS] = array::from_fn(|c| &group[c * k..(c + 1) * k]);
            columns(simd, self.x, k, w, out);
        }
        let out = outs.into_remainder();
        for (w, out) in tail.chunks_exact(k).zip(out.chunks_exact_mut(rows)) {
            columns(simd, self.x, k, [w], out);
        }
    }
}

/// The `C` output columns of weight rows `w` for every row of `x`, column-major into `out`.
#[inline(always)]
fn columns<S: Simd, const C: usize>(simd: S, x: &[f32], k: usize, w: [&[f32]; C], out: &mut [f32]) {
    let rows = x.len() / k;
    let blocks = x.chunks_exact(ROWS * k);
    let tail = blocks.remainder();
    for (b, block) in blocks.enumerate() {
        let xs: [&[f32]; ROWS] = array::from_fn(|r| &block[r * k..(r + 1) * k]);
        let d = dots(simd, xs, w);
        for (r, d) in d.iter().enumerate() {
            for (c, &v) in d.iter().enumerate() {
                out[c * rows + b * ROWS + r] = v;
            }
        }
    }
    let done = rows - tail.len() / k;
    for (r, xr) in tail.chunks_exact(k).enumerate() {
        let [d] = dots(simd, [xr], w);
        for (c, &v) in d.iter().enumerate() {
            out[c * rows + done + r] = v;
        }
    }
}

/// `R × C` dot products of rows of equal length, with one vector accumulator each.
///
/// Plain loops, no closures: a closure does not inherit the `#[target_feature]` context pulp's
/// dispatch opens, so SIMD operations inside one become calls (and the accumulators spill).
#[inline(always)]
fn dots<S: Simd, const R: usize, const C: usize>(
    simd: S,
    x: [&[f32]; R],
    w: [&[f32]; C],
) -> [[f32; C]; R] {
    let n = x[0].len() / S::F32_LANES;
    let xv = x.map(|row| &S::as_simd_f32s(row).0[..n]);
    let wv = w.map(|row| &S::as_simd_f32s(row).0[..n]);
    let mut acc = [[simd.splat_f32s(0.0); C]; R];
    for i in 0..n {
        let mut wi = [simd.splat_f32s(0.0); C];
        for (wi, wv) in wi.iter_mut().zip(&wv) {
            *wi = wv[i];
        }
        for (acc, xv) in acc.iter_mut().zip(&xv) {
            let xi = xv[i];
            for (a, &wc) in acc.iter_mut().zip(&wi) {
                *a = simd.mul_add_f32s(xi, wc, *a);
            }
        }
    }
    let mut out = [[0f32; C]; R];
    for ((out, acc), xr) in out.iter_mut().zip(&acc).zip(&x) {
        for ((out, &acc), wr) in out.iter_mut().zip(acc).zip(&w) {
            let mut total = simd.reduce_sum_f32s(acc);
            for (a, b) in xr[n * S::F32_LANES..].iter().zip(&wr[n * S::F32_LANES..]) {
                total += a * b;
            }
            *out = total;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    /// The reference: each output a sequential sum in f64, with the sum of the products'
    /// magnitudes (what bounds the f32 rounding).
    fn reference(x: &[f32], weight: &[f32], input: usize) -> Vec<(f64, f64)> {
        x.chunks_exact(input)
            .flat_map(|xr| {
                weight.chunks_exact(input).map(move |wr| {
                    xr.iter().zip(wr).fold((0.0, 0.0), |(sum, size), (&a, &b)| {
                        let p = f64::from(a) * f64::from(b);
                        (sum + p, size + p.abs())
                    })
                })
            })
            .collect()
    }

    /// |got − want| within the classic bound for a sum of `input` rounded products.
    fn close(got: f32, (want, size): (f64, f64), input: usize) -> bool {
        (f64::from(got) - want).abs() <= (input as f64 + 2.0) * f64::from(f32::EPSILON) * size
    }

    /// Rows, outputs and width (covering the vector tails and the odd row and column groups),
    /// with values in [-2, 2].
    fn case() -> impl Strategy<Value = (Vec<f32>, Vec<f32>, usize)> {
        (1usize..12, 1usize..23, 1usize..70).prop_flat_map(|(rows, outputs, input)| {
            (
                proptest::collection::vec(-2f32..2.0, rows * input),
                proptest::collection::vec(-2f32..2.0, outputs * input),
                Just(input),
            )
        })
    }

    proptest! {
        #[test]
        fn linear_matches_the_scalar_reference((x, weight, input) in case()) {
            let got = linear(&x, &weight, input);
            let want = reference(&x, &weight, input);
            prop_assert_eq!(got.len(), want.len());
            for (&g, &w) in got.iter().zip(&want) {
                prop_assert!(close(g, w, input), "{} vs {:?}", g, w);
            }
        }
    }

    #[test]
    fn linear_splits_over_tasks_as_one_product() {
        // Large enough for several tasks, with a ragged last group.
        let (rows, outputs, input) = (17, 1538, 384);
        let x: Vec<f32> = (0..rows * input)
            .map(|i| ((i * 37) % 101) as f32 * 0.02 - 1.0)
            .collect();
        let weight: Vec<f32> = (0..outputs * input)
            .map(|i| ((i * 53) % 97) as f32 * 0.02 - 0.97)
            .collect();
        let got = linear(&x, &weight, input);
        let want = reference(&x, &weight, input);
        assert_eq!(got.len(), want.len());
        for (&g, &w) in got.iter().zip(&want) {
            assert!(close(g, w, input), "{g} vs {w:?}");
        }
    }

    #[test]
    fn linear_of_no_rows_is_empty() {
        assert!(linear(&[], &[1.0, 2.0], 2).is_empty());
    }
}
