//! NEON kernels for aarch64: int8 dot products with `smull` + `sadalp` and Hamming distances
//! with `cnt`. Only `aarch64/mod.rs` hands them out, after detection. Written without an
//! aarch64 toolchain at hand: uncompiled until an aarch64 build runs the tests in `tests.rs`.
//!
//! Dot trick: `vmull_s8` multiplies eight i8 pairs into eight exact i16 products (|p| <= 16384,
//! so (−128)² fits), `vmull_high_s8` the upper eight, and `vpadalq_s16` adds adjacent i16
//! products into i32 lanes (a pair is at most 32768, no overflow). No `sdot`, which needs the
//! optional `dotprod` feature. The last `dim % 16` bytes are done in scalar code. Sums wrap
//! modulo 2^32, exact whenever the true dot fits in i32.
//!
//! Hamming: XOR, `vcntq_u8` per byte, then pairwise widening adds (`vpaddlq`) to u64 lanes.
// PERF: run cargo bench -p cpersona-benches --bench kernels before changing.

use core::arch::aarch64::*;

use crate::kernels::check_hamming_batch;

/// Bytes per q register.
const Q_BYTES: usize = 16;

/// Dot with NEON. Exact.
// PERF: run cargo bench -p cpersona-benches --bench kernels before changing.
#[target_feature(enable = "neon")]
pub(super) fn dot_i8_neon(a: &[i8], b: &[i8]) -> i32 {
    let n = a.len().min(b.len());
    // SAFETY: `b` holds at least `n` bytes, the length the kernel reads from each row.
    let [dot] = unsafe { dot_rows_neon::<1>(&a[..n], [b.as_ptr()]) };
    dot
}

/// Batch dot, one row per step; see `Kernels::dot_i8_batch`.
// PERF: run cargo bench -p cpersona-benches --bench kernels before changing.
#[target_feature(enable = "neon")]
pub(super) fn dot_i8_batch_neon(query: &[i8], rows: &[i8], stride: usize, out: &mut [i32]) {
    crate::kernels::check_dot_batch(query.len(), rows.len(), stride, out.len());
    let base = rows.as_ptr();
    for (row_idx, o) in out.iter_mut().enumerate() {
        // SAFETY: `row_idx < out.len()`, and the check above proved `stride >= query.len()` and
        // `out.len() * stride <= rows.len()`, so the pointer has `query.len()` readable bytes.
        let [dot] = unsafe { dot_rows_neon::<1>(query, [base.add(row_idx * stride)]) };
        *o = dot;
    }
}

/// Gathered dot; see `Kernels::dot_i8_gather`.
// PERF: run cargo bench -p cpersona-benches --bench kernels before changing.
#[target_feature(enable = "neon")]
pub(super) fn dot_i8_gather_neon(
    query: &[i8],
    rows: &[i8],
    stride: usize,
    row_indices: &[u32],
    out: &mut [i32],
) {
    crate::kernels::check_dot_gather(query.len(), rows.len(), stride, row_indices, out.len());
    let base = rows.as_ptr();
    for (o, &idx) in out.iter_mut().zip(row_indices) {
        // SAFETY: the check above proved `idx * stride + query.len() <= rows.len()` for every
        // listed row, so the pointer has `query.len()` readable bytes behind it.
        let [dot] = unsafe { dot_rows_neon::<1>(query, [base.add(idx as usize * stride)]) };
        *o = dot;
    }
}

/// Hamming with NEON over the common length.
// PERF: run cargo bench -p cpersona-benches --bench kernels before changing.
#[target_feature(enable = "neon")]
pub(super) fn hamming_neon(a: &[u64], b: &[u64]) -> u32 {
    let n = a.len().min(b.len());
    // SAFETY: `b` holds at least `n` words, the length the kernel reads.
    unsafe { hamming_row_neon(&a[..n], b.as_ptr()) }
}

/// Batch Hamming with NEON; rows of `query.len()` words.
// PERF: run cargo bench -p cpersona-benches --bench kernels before changing.
#[target_feature(enable = "neon")]
pub(super) fn hamming_batch_neon(query: &[u64], rows: &[u64], out: &mut [u32]) {
    let words = query.len();
    check_hamming_batch(words, rows.len(), out.len());
    let base = rows.as_ptr();
    for (row_idx, o) in out.iter_mut().enumerate() {
        // SAFETY: `row_idx < out.len()` and the check above proved `out.len() * words <=
        // rows.len()`, so the row has `words` readable words.
        *o = unsafe { hamming_row_neon(query, base.add(row_idx * words)) };
    }
}

/// Dots of `query` against `R` rows.
///
/// # Safety
/// Every pointer in `rows` must be valid for reading `query.len()` bytes.
#[target_feature(enable = "neon")]
#[inline]
unsafe fn dot_rows_neon<const R: usize>(query: &[i8], rows: [*const i8; R]) -> [i32; R] {
    let mut acc = [vdupq_n_s32(0); R];
    let full = query.len() / Q_BYTES;
    for c in 0..full {
        let offset = c * Q_BYTES;
        // SAFETY: bytes `offset .. offset + 16` lie inside `query`.
        let q = unsafe { vld1q_s8(query.as_ptr().add(offset)) };
        for r in 0..R {
            // SAFETY: the caller guarantees `query.len()` readable bytes behind each row, and
            // `offset + 16 <= query.len()`.
            let v = unsafe { vld1q_s8(rows[r].add(offset)) };
            acc[r] = vpadalq_s16(acc[r], vmull_s8(vget_low_s8(v), vget_low_s8(q)));
            acc[r] = vpadalq_s16(acc[r], vmull_high_s8(v, q));
        }
    }
    let tail_start = full * Q_BYTES;
    let mut dots = [0_i32; R];
    for r in 0..R {
        // Lane sums cannot overflow before the final wrap: each lane holds at most dim/4
        // products of magnitude <= 16384.
        let mut dot = vaddvq_s32(acc[r]);
        for (i, &q) in query[tail_start..].iter().enumerate() {
            // SAFETY: `tail_start + i < query.len()`, which the caller guarantees readable.
            let v = unsafe { *rows[r].add(tail_start + i) };
            dot = dot.wrapping_add(i32::from(q) * i32::from(v));
        }
        dots[r] = dot;
    }
    dots
}

/// Hamming distance of `query` against one row.
///
/// # Safety
/// `row` must be valid for reading `query.len()` words.
#[target_feature(enable = "neon")]
#[inline]
unsafe fn hamming_row_neon(query: &[u64], row: *const u64) -> u32 {
    let mut acc = vdupq_n_u64(0);
    let full = query.len() / 2;
    for c in 0..full {
        let offset = c * 2;
        // SAFETY: words `offset .. offset + 2` lie inside `query` and, by the caller's
        // guarantee, inside the row.
        let (q, v) = unsafe {
            (
                vld1q_u64(query.as_ptr().add(offset)),
                vld1q_u64(row.add(offset)),
            )
        };
        let bytes = vcntq_u8(vreinterpretq_u8_u64(veorq_u64(q, v)));
        acc = vpadalq_u32(acc, vpaddlq_u16(vpaddlq_u8(bytes)));
    }
    let mut count = vaddvq_u64(acc) as u32;
    if query.len() % 2 == 1 {
        let last = query.len() - 1;
        // SAFETY: word `last` lies inside the row by the caller's guarantee.
        let v = unsafe { *row.add(last) };
        count += (query[last] ^ v).count_ones();
    }
    count
}
