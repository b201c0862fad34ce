//! AVX2 kernels: int8 dot products by widening to i16 and `vpmaddwd`, and Hamming distances on
//! the POPCNT unit. Each function enables exactly the features it uses, and only
//! `x86_64/mod.rs` hands them out, after detection; they must never run on an unchecked CPU.
//!
//! Dot trick: 16 bytes are sign-extended to sixteen i16 lanes (`vpmovsxbw`, folded into the
//! load) and `vpmaddwd` multiplies them pairwise with the widened query, adding adjacent
//! products into i32 lanes. Products of i8 values are at most 16384 in magnitude and a pair at
//! most 32768, so nothing saturates or overflows; `vpmaddubsw` is avoided on purpose because
//! its i16 pair sums saturate (255 * 127 * 2 > 32767), and the `vpsignb` trick it needs breaks
//! on −128. Sums wrap modulo 2^32, exact whenever the true dot fits in i32. The last
//! `dim % 16` bytes are done in scalar code. Batches run one row per step.
//!
//! Hamming: the sign rows the prefilter scans are 6 to 16 words long, where XOR + POPCNT per
//! word keeps up with memory (see the bench) and a `vpshufb` nibble table would add a
//! horizontal sum per row; so this kernel is the POPCNT unit, compiled with POPCNT enabled.
// PERF: run cargo bench -p cpersona-benches --bench kernels before changing.

use core::arch::x86_64::*;

use crate::kernels::check_hamming_batch;

/// Bytes widened per ymm of i16 lanes.
const WIDEN_BYTES: usize = 16;

/// Dot with AVX2 widening. Exact.
// PERF: run cargo bench -p cpersona-benches --bench kernels before changing.
#[target_feature(enable = "avx2")]
pub(super) fn dot_i8_avx2(a: &[i8], b: &[i8]) -> i32 {
    let n = a.len().min(b.len());
    // SAFETY: `b` holds at least `n` bytes, the length the kernel reads from each row.
    let [dot] = unsafe { dot_rows_avx2::<1>(&a[..n], (), [b.as_ptr()]) };
    dot
}

super::dot_drivers! {
    features: "avx2",
    batch: dot_i8_batch_avx2,
    gather: dot_i8_gather_avx2,
    prepare: super::no_preparation,
    rows: dot_rows_avx2,
}

/// Hamming with POPCNT over the common length.
// PERF: run cargo bench -p cpersona-benches --bench kernels before changing.
#[target_feature(enable = "popcnt")]
pub(super) fn hamming_avx2(a: &[u64], b: &[u64]) -> u32 {
    hamming_words(a, b)
}

/// Batch Hamming with POPCNT; rows of `query.len()` words.
// PERF: run cargo bench -p cpersona-benches --bench kernels before changing.
#[target_feature(enable = "popcnt")]
pub(super) fn hamming_batch_avx2(query: &[u64], rows: &[u64], out: &mut [u32]) {
    let words = query.len();
    check_hamming_batch(words, rows.len(), out.len());
    if words == 0 {
        out.fill(0);
        return;
    }
    for (row, o) in rows.chunks_exact(words).zip(out.iter_mut()) {
        *o = hamming_words(query, row);
    }
}

/// XOR + POPCNT over the common length (inlined into a POPCNT-enabled caller).
#[target_feature(enable = "popcnt")]
#[inline]
fn hamming_words(a: &[u64], b: &[u64]) -> u32 {
    a.iter().zip(b).map(|(x, y)| (x ^ y).count_ones()).sum()
}

/// Dots of `query` against `R` rows: `vpmaddwd` on 16-byte chunks, scalar for the last bytes.
///
/// # Safety
/// Every pointer in `rows` must be valid for reading `query.len()` bytes.
#[target_feature(enable = "avx2")]
#[inline]
unsafe fn dot_rows_avx2<const R: usize>(
    query: &[i8],
    _prepared: (),
    rows: [*const i8; R],
) -> [i32; R] {
    let mut acc = [_mm256_setzero_si256(); R];
    let full = query.len() / WIDEN_BYTES;
    for c in 0..full {
        let offset = c * WIDEN_BYTES;
        // SAFETY: bytes `offset .. offset + 16` lie inside `query`.
        let q = unsafe { widen(query.as_ptr().add(offset)) };
        for r in 0..R {
            // SAFETY: the caller guarantees `query.len()` readable bytes behind each row, and
            // `offset + 16 <= query.len()`.
            let v = unsafe { widen(rows[r].add(offset)) };
            acc[r] = _mm256_add_epi32(acc[r], _mm256_madd_epi16(v, q));
        }
    }
    let tail_start = full * WIDEN_BYTES;
    let mut dots = [0_i32; R];
    for r in 0..R {
        let mut dot = sum_i32x8(acc[r]);
        for (i, &q) in query[tail_start..].iter().enumerate() {
            // SAFETY: `tail_start + i < query.len()`, which the caller guarantees readable.
            let v = unsafe { *rows[r].add(tail_start + i) };
            dot = dot.wrapping_add(i32::from(q) * i32::from(v));
        }
        dots[r] = dot;
    }
    dots
}

/// Loads 16 bytes and sign-extends them to sixteen i16 lanes.
///
/// # Safety
/// `ptr` must be valid for reading 16 bytes.
#[target_feature(enable = "avx2")]
#[inline]
unsafe fn widen(ptr: *const i8) -> __m256i {
    // SAFETY: the caller guarantees 16 readable bytes; `loadu` has no alignment requirement.
    _mm256_cvtepi8_epi16(unsafe { _mm_loadu_si128(ptr.cast()) })
}

/// Wrapping sum of eight i32 lanes.
#[target_feature(enable = "avx2")]
#[inline]
fn sum_i32x8(v: __m256i) -> i32 {
    let halves = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256::<1>(v));
    let pairs = _mm_add_epi32(halves, _mm_shuffle_epi32::<0b01_00_11_10>(halves));
    let total = _mm_add_epi32(pairs, _mm_shuffle_epi32::<0b10_11_00_01>(pairs));
    _mm_cvtsi128_si32(total)
}
