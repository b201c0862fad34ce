//! Portable kernels through pulp: one generic body per operation, run under the widest vector
//! set pulp's `Arch` detected (V3 = AVX2 on x86_64 with the workspace's pulp features, NEON on
//! aarch64, scalar elsewhere). It must never use `unsafe` or an ISA intrinsic.
//!
//! Trick: pulp's portable `Simd` trait has no widening i8 multiply and no popcount, so the dot
//! body is a plain widening reduction (`i32::from(a) * i32::from(b)`, wrapping adds) that LLVM
//! vectorises (to `vpmaddwd` on V3) inside the `#[target_feature]` context pulp's dispatch
//! opens, and Hamming XORs whole pulp registers (`xor_u64s`) before counting bits per lane.
//! Contract: equal to `scalar` exactly; the dispatch happens once per call, so batch bodies
//! loop over all rows inside one `with_simd`.
// PERF: run cargo bench -p cpersona-benches --bench kernels before changing.

use pulp::{Arch, Simd, WithSimd};

/// Portable single dot.
pub(crate) fn dot_i8_portable(arch: Arch, a: &[i8], b: &[i8]) -> i32 {
    arch.dispatch(DotI8 { a, b })
}

/// Portable single Hamming.
pub(crate) fn hamming_portable(arch: Arch, a: &[u64], b: &[u64]) -> u32 {
    arch.dispatch(Hamming { a, b })
}

/// Portable batch dot (rows `stride` bytes apart).
pub(crate) fn dot_i8_batch_portable(
    arch: Arch,
    query: &[i8],
    rows: &[i8],
    stride: usize,
    out: &mut [i32],
) {
    super::check_dot_batch(query.len(), rows.len(), stride, out.len());
    arch.dispatch(DotI8Batch {
        query,
        rows,
        stride,
        out,
    });
}

/// Portable gathered dot.
pub(crate) fn dot_i8_gather_portable(
    arch: Arch,
    query: &[i8],
    rows: &[i8],
    stride: usize,
    row_indices: &[u32],
    out: &mut [i32],
) {
    super::check_dot_gather(query.len(), rows.len(), stride, row_indices, out.len());
    arch.dispatch(DotI8Gather {
        query,
        rows,
        stride,
        row_indices,
        out,
    });
}

/// Portable batch Hamming (rows of `query.len()` words).
pub(crate) fn hamming_batch_portable(arch: Arch, query: &[u64], rows: &[u64], out: &mut [u32]) {
    super::check_hamming_batch(query.len(), rows.len(), out.len());
    arch.dispatch(HammingBatch { query, rows, out });
}

struct DotI8<'a> {
    a: &'a [i8],
    b: &'a [i8],
}

impl WithSimd for DotI8<'_> {
    type Output = i32;

    #[inline(always)]
    fn with_simd<S: Simd>(self, _simd: S) -> i32 {
        dot_body(self.a, self.b)
    }
}

struct DotI8Batch<'a> {
    query: &'a [i8],
    rows: &'a [i8],
    stride: usize,
    out: &'a mut [i32],
}

impl WithSimd for DotI8Batch<'_> {
    type Output = ();

    #[inline(always)]
    fn with_simd<S: Simd>(self, _simd: S) {
        let Self {
            query,
            rows,
            stride,
            out,
        } = self;
        if stride == 0 {
            // Only a zero-length query has stride 0: every dot is empty.
            out.fill(0);
            return;
        }
        // `zip` stops at the query's length, so a row's padding is never read.
        for (row, o) in rows.chunks_exact(stride).zip(out.iter_mut()) {
            *o = dot_body(query, row);
        }
    }
}

struct DotI8Gather<'a> {
    query: &'a [i8],
    rows: &'a [i8],
    stride: usize,
    row_indices: &'a [u32],
    out: &'a mut [i32],
}

impl WithSimd for DotI8Gather<'_> {
    type Output = ();

    #[inline(always)]
    fn with_simd<S: Simd>(self, _simd: S) {
        let Self {
            query,
            rows,
            stride,
            row_indices,
            out,
        } = self;
        let dim = query.len();
        for (&row_idx, o) in row_indices.iter().zip(out.iter_mut()) {
            let start = row_idx as usize * stride;
            *o = dot_body(query, &rows[start..start + dim]);
        }
    }
}

struct Hamming<'a> {
    a: &'a [u64],
    b: &'a [u64],
}

impl WithSimd for Hamming<'_> {
    type Output = u32;

    #[inline(always)]
    fn with_simd<S: Simd>(self, simd: S) -> u32 {
        let n = self.a.len().min(self.b.len());
        hamming_body(simd, &self.a[..n], &self.b[..n])
    }
}

struct HammingBatch<'a> {
    query: &'a [u64],
    rows: &'a [u64],
    out: &'a mut [u32],
}

impl WithSimd for HammingBatch<'_> {
    type Output = ();

    #[inline(always)]
    fn with_simd<S: Simd>(self, simd: S) {
        let Self { query, rows, out } = self;
        if query.is_empty() {
            out.fill(0);
            return;
        }
        for (row, o) in rows.chunks_exact(query.len()).zip(out.iter_mut()) {
            *o = hamming_body(simd, query, row);
        }
    }
}

/// The widening dot over the common length, as one reduction LLVM can vectorise.
#[inline(always)]
fn dot_body(a: &[i8], b: &[i8]) -> i32 {
    a.iter()
        .zip(b)
        .map(|(&x, &y)| i32::from(x) * i32::from(y))
        .fold(0_i32, i32::wrapping_add)
}

/// Hamming over two slices of equal length: whole pulp registers first, then the tail.
#[inline(always)]
fn hamming_body<S: Simd>(simd: S, a: &[u64], b: &[u64]) -> u32 {
    let (a_head, a_tail) = S::as_simd_u64s(a);
    let (b_head, b_tail) = S::as_simd_u64s(b);
    let mut count = 0_u32;
    for (&x, &y) in a_head.iter().zip(b_head) {
        let diff = simd.xor_u64s(x, y);
        let lanes: &[u64] = bytemuck::cast_slice(core::slice::from_ref(&diff));
        count += lanes.iter().map(|lane| lane.count_ones()).sum::<u32>();
    }
    count
        + a_tail
            .iter()
            .zip(b_tail)
            .map(|(x, y)| (x ^ y).count_ones())
            .sum::<u32>()
}
