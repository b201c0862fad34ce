//! AVX-512 kernels: int8 dot products with VNNI `vpdpbusd` (or AVX-512BW widening where VNNI is
//! missing) and Hamming distances with VPOPCNTDQ. Each function enables exactly the features it
//! uses, and only `x86_64/mod.rs` hands them out, after detection; they must never be called on
//! a CPU that was not checked.
//!
//! VNNI sign trick: `vpdpbusd` multiplies *unsigned* bytes by *signed* bytes. The row byte `r`
//! is flipped to `r ^ 0x80`, which read as unsigned is `r + 128` (so −128 becomes 0 and 127
//! becomes 255: no extreme is lost), and `sum((r + 128) * q) = dot(r, q) + 128 * sum(q)`. The
//! correction `128 * sum(q)` depends on the query only, so a batch computes it once (itself
//! with `vpdpbusd` against a splat of 0x80). Every step is an exact integer product; sums wrap
//! modulo 2^32, which is exact whenever the true dot fits in i32 (below 2^17 elements).
//! Masked tail loads read zero for bytes past `dim`; they become 128 after the flip but meet a
//! zero query byte, so they add nothing. `vpdpbusd` (unlike `vpdpbusds`) does not saturate.
//!
//! BW fallback: 32 row bytes are sign-extended to i16 (`vpmovsxbw`) and multiplied pairwise
//! with the widened query by `vpmaddwd`; the only pair it cannot represent is (−32768)², which
//! i8 inputs never reach. Hamming: XOR, `vpopcntq`, add, with a masked load for the last words.
//! Batches run one row per step (see `dot_drivers` in `x86_64/mod.rs` for why); the row
//! kernels take `R` rows so a caller can interleave rows where that measures faster.
// PERF: run cargo bench -p cpersona-benches --bench kernels before changing.

use core::arch::x86_64::*;

use crate::kernels::check_hamming_batch;

/// Bytes in one zmm register.
const ZMM_BYTES: usize = 64;
/// Bytes widened per zmm of i16 lanes.
const BW_BYTES: usize = 32;
/// u64 words in one zmm register.
const ZMM_WORDS: usize = 8;

/// Dot with VNNI. Exact; see the module doc for the sign trick.
// PERF: run cargo bench -p cpersona-benches --bench kernels before changing.
#[target_feature(enable = "avx512f,avx512bw,avx512vnni")]
pub(super) fn dot_i8_avx512vnni(a: &[i8], b: &[i8]) -> i32 {
    let n = a.len().min(b.len());
    let query = &a[..n];
    let correction = vnni_correction(query);
    // SAFETY: `b` holds at least `n` bytes, the length the kernel reads from each row.
    let [dot] = unsafe { dot_rows_avx512vnni::<1>(query, correction, [b.as_ptr()]) };
    dot
}

/// Dot with AVX-512BW widening (no VNNI). Exact.
// PERF: run cargo bench -p cpersona-benches --bench kernels before changing.
#[target_feature(enable = "avx512f,avx512bw,avx512vl")]
pub(super) fn dot_i8_avx512bw(a: &[i8], b: &[i8]) -> i32 {
    let n = a.len().min(b.len());
    // SAFETY: `b` holds at least `n` bytes, the length the kernel reads from each row.
    let [dot] = unsafe { dot_rows_avx512bw::<1>(&a[..n], (), [b.as_ptr()]) };
    dot
}

super::dot_drivers! {
    features: "avx512f,avx512bw,avx512vnni",
    batch: dot_i8_batch_avx512vnni,
    gather: dot_i8_gather_avx512vnni,
    prepare: vnni_correction,
    rows: dot_rows_avx512vnni,
}

super::dot_drivers! {
    features: "avx512f,avx512bw,avx512vl",
    batch: dot_i8_batch_avx512bw,
    gather: dot_i8_gather_avx512bw,
    prepare: super::no_preparation,
    rows: dot_rows_avx512bw,
}

/// Hamming with VPOPCNTDQ over the common length.
// PERF: run cargo bench -p cpersona-benches --bench kernels before changing.
#[target_feature(enable = "avx512f,avx512vpopcntdq")]
pub(super) fn hamming_avx512vpopcntdq(a: &[u64], b: &[u64]) -> u32 {
    let n = a.len().min(b.len());
    // SAFETY: `b` holds at least `n` words, the length the kernel reads from each row.
    let [count] = unsafe { hamming_rows_avx512vpopcntdq::<1>(&a[..n], [b.as_ptr()]) };
    count
}

/// Batch Hamming with VPOPCNTDQ, one row per step.
// PERF: run cargo bench -p cpersona-benches --bench kernels before changing.
#[target_feature(enable = "avx512f,avx512vpopcntdq")]
pub(super) fn hamming_batch_avx512vpopcntdq(query: &[u64], rows: &[u64], out: &mut [u32]) {
    let words = query.len();
    check_hamming_batch(words, rows.len(), out.len());
    let base = rows.as_ptr();
    for (row_idx, o) in out.iter_mut().enumerate() {
        // SAFETY: `row_idx < out.len()`, and the check above proved `out.len() * words <=
        // rows.len()`, so the pointer has `words` readable words behind it.
        let [count] =
            unsafe { hamming_rows_avx512vpopcntdq::<1>(query, [base.add(row_idx * words)]) };
        *o = count;
    }
}

/// `128 * sum(query)`, wrapping: what the VNNI flip adds to every row's dot.
#[target_feature(enable = "avx512f,avx512bw,avx512vnni")]
fn vnni_correction(query: &[i8]) -> i32 {
    let flip = _mm512_set1_epi8(i8::MIN);
    let mut sum = _mm512_setzero_si512();
    let full = query.len() / ZMM_BYTES;
    for c in 0..full {
        // SAFETY: bytes `c * 64 .. c * 64 + 64` lie inside `query`.
        let q = unsafe { _mm512_loadu_si512(query.as_ptr().add(c * ZMM_BYTES).cast()) };
        sum = _mm512_dpbusd_epi32(sum, flip, q);
    }
    let tail = query.len() % ZMM_BYTES;
    if tail != 0 {
        // SAFETY: the mask enables only the `tail` bytes left inside `query`; masked-off bytes
        // are neither read nor able to fault.
        let q = unsafe {
            _mm512_maskz_loadu_epi8(tail_mask_64(tail), query.as_ptr().add(full * ZMM_BYTES))
        };
        sum = _mm512_dpbusd_epi32(sum, flip, q);
    }
    _mm512_reduce_add_epi32(sum)
}

/// Dots of `query` against `R` rows with VNNI, minus `correction` (see the module doc).
///
/// # Safety
/// Every pointer in `rows` must be valid for reading `query.len()` bytes.
#[target_feature(enable = "avx512f,avx512bw,avx512vnni")]
#[inline]
unsafe fn dot_rows_avx512vnni<const R: usize>(
    query: &[i8],
    correction: i32,
    rows: [*const i8; R],
) -> [i32; R] {
    let flip = _mm512_set1_epi8(i8::MIN);
    let mut acc = [_mm512_setzero_si512(); R];
    let full = query.len() / ZMM_BYTES;
    for c in 0..full {
        let offset = c * ZMM_BYTES;
        // SAFETY: bytes `offset .. offset + 64` lie inside `query`.
        let q = unsafe { _mm512_loadu_si512(query.as_ptr().add(offset).cast()) };
        for r in 0..R {
            // SAFETY: the caller guarantees `query.len()` readable bytes behind each row, and
            // `offset + 64 <= query.len()`.
            let v = unsafe { _mm512_loadu_si512(rows[r].add(offset).cast()) };
            acc[r] = _mm512_dpbusd_epi32(acc[r], _mm512_xor_si512(v, flip), q);
        }
    }
    let tail = query.len() % ZMM_BYTES;
    if tail != 0 {
        let offset = full * ZMM_BYTES;
        let mask = tail_mask_64(tail);
        // SAFETY: the mask enables only the `tail` bytes left inside `query`.
        let q = unsafe { _mm512_maskz_loadu_epi8(mask, query.as_ptr().add(offset)) };
        for r in 0..R {
            // SAFETY: the mask enables only bytes below `query.len()`, which the caller
            // guarantees readable; masked-off bytes are neither read nor able to fault.
            let v = unsafe { _mm512_maskz_loadu_epi8(mask, rows[r].add(offset)) };
            acc[r] = _mm512_dpbusd_epi32(acc[r], _mm512_xor_si512(v, flip), q);
        }
    }
    let mut dots = [0_i32; R];
    for r in 0..R {
        dots[r] = _mm512_reduce_add_epi32(acc[r]).wrapping_sub(correction);
    }
    dots
}

/// Dots of `query` against `R` rows by widening to i16 and `vpmaddwd`.
///
/// # Safety
/// Every pointer in `rows` must be valid for reading `query.len()` bytes.
#[target_feature(enable = "avx512f,avx512bw,avx512vl")]
#[inline]
unsafe fn dot_rows_avx512bw<const R: usize>(
    query: &[i8],
    _prepared: (),
    rows: [*const i8; R],
) -> [i32; R] {
    let mut acc = [_mm512_setzero_si512(); R];
    let full = query.len() / BW_BYTES;
    for c in 0..full {
        let offset = c * BW_BYTES;
        // SAFETY: bytes `offset .. offset + 32` lie inside `query`.
        let q =
            _mm512_cvtepi8_epi16(unsafe { _mm256_loadu_si256(query.as_ptr().add(offset).cast()) });
        for r in 0..R {
            // SAFETY: the caller guarantees `query.len()` readable bytes behind each row, and
            // `offset + 32 <= query.len()`.
            let v = _mm512_cvtepi8_epi16(unsafe { _mm256_loadu_si256(rows[r].add(offset).cast()) });
            acc[r] = _mm512_add_epi32(acc[r], _mm512_madd_epi16(v, q));
        }
    }
    let tail = query.len() % BW_BYTES;
    if tail != 0 {
        let offset = full * BW_BYTES;
        let mask = tail_mask_32(tail);
        // SAFETY: the mask enables only the `tail` bytes left inside `query`.
        let q = _mm512_cvtepi8_epi16(unsafe {
            _mm256_maskz_loadu_epi8(mask, query.as_ptr().add(offset))
        });
        for r in 0..R {
            // SAFETY: the mask enables only bytes below `query.len()`, which the caller
            // guarantees readable; masked-off bytes are neither read nor able to fault.
            let v =
                _mm512_cvtepi8_epi16(unsafe { _mm256_maskz_loadu_epi8(mask, rows[r].add(offset)) });
            acc[r] = _mm512_add_epi32(acc[r], _mm512_madd_epi16(v, q));
        }
    }
    let mut dots = [0_i32; R];
    for r in 0..R {
        dots[r] = _mm512_reduce_add_epi32(acc[r]);
    }
    dots
}

/// Hamming distances of `query` against `R` rows with `vpopcntq`.
///
/// # Safety
/// Every pointer in `rows` must be valid for reading `query.len()` words.
#[target_feature(enable = "avx512f,avx512vpopcntdq")]
#[inline]
unsafe fn hamming_rows_avx512vpopcntdq<const R: usize>(
    query: &[u64],
    rows: [*const u64; R],
) -> [u32; R] {
    let mut acc = [_mm512_setzero_si512(); R];
    let full = query.len() / ZMM_WORDS;
    for c in 0..full {
        let offset = c * ZMM_WORDS;
        // SAFETY: words `offset .. offset + 8` lie inside `query`.
        let q = unsafe { _mm512_loadu_si512(query.as_ptr().add(offset).cast()) };
        for r in 0..R {
            // SAFETY: the caller guarantees `query.len()` readable words behind each row, and
            // `offset + 8 <= query.len()`.
            let v = unsafe { _mm512_loadu_si512(rows[r].add(offset).cast()) };
            acc[r] = _mm512_add_epi64(acc[r], _mm512_popcnt_epi64(_mm512_xor_si512(v, q)));
        }
    }
    let tail = query.len() % ZMM_WORDS;
    if tail != 0 {
        let offset = full * ZMM_WORDS;
        // Fewer than 8 words remain, so the mask fits in 8 bits.
        let mask = ((1_u32 << tail) - 1) as __mmask8;
        // SAFETY: the mask enables only the `tail` words left inside `query`.
        let q = unsafe { _mm512_maskz_loadu_epi64(mask, query.as_ptr().add(offset).cast()) };
        for r in 0..R {
            // SAFETY: the mask enables only words below `query.len()`, which the caller
            // guarantees readable; masked-off words are neither read nor able to fault.
            let v = unsafe { _mm512_maskz_loadu_epi64(mask, rows[r].add(offset).cast()) };
            acc[r] = _mm512_add_epi64(acc[r], _mm512_popcnt_epi64(_mm512_xor_si512(v, q)));
        }
    }
    let mut counts = [0_u32; R];
    for r in 0..R {
        // A row of `n` words differs in at most 64 * n bits; callers pass far fewer than
        // 2^26 words per row, so the count fits in u32.
        counts[r] = _mm512_reduce_add_epi64(acc[r]) as u32;
    }
    counts
}

/// A mask of the low `tail` bits, `0 < tail < 64`.
#[inline(always)]
fn tail_mask_64(tail: usize) -> __mmask64 {
    (1_u64 << tail) - 1
}

/// A mask of the low `tail` bits, `0 < tail < 32`.
#[inline(always)]
fn tail_mask_32(tail: usize) -> __mmask32 {
    (1_u32 << tail) - 1
}
