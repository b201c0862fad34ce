//! x86_64 feature detection and the kernel tables it unlocks: AVX-512 (with and without VNNI
//! and VPOPCNTDQ) and AVX2. A table is handed out only after `is_x86_feature_detected!` said
//! yes to every feature its functions enable; this is the one fact the `unsafe` calls in
//! `kernels/mod.rs` rely on, and nothing here may hand out a table without that check.

mod avx2;
mod avx512;

use super::NativeTable;

/// AVX-512 needs F+BW+VL for every sub-variant, plus AVX2+POPCNT for the Hamming fallback.
pub(super) fn avx512_available() -> bool {
    is_x86_feature_detected!("avx512f")
        && is_x86_feature_detected!("avx512bw")
        && is_x86_feature_detected!("avx512vl")
        && avx2_available()
}

/// AVX2 needs POPCNT too (its Hamming kernel is the POPCNT unit).
pub(super) fn avx2_available() -> bool {
    is_x86_feature_detected!("avx2") && is_x86_feature_detected!("popcnt")
}

/// The AVX-512 tables this CPU runs, best first.
pub(super) fn avx512_tables() -> Vec<&'static NativeTable> {
    if !avx512_available() {
        return Vec::new();
    }
    let vnni = is_x86_feature_detected!("avx512vnni");
    let vpopcntdq = is_x86_feature_detected!("avx512vpopcntdq");
    let mut tables = Vec::new();
    if vnni && vpopcntdq {
        tables.push(&AVX512_VNNI_VPOPCNTDQ);
    }
    if vnni {
        tables.push(&AVX512_VNNI);
    }
    if vpopcntdq {
        tables.push(&AVX512_VPOPCNTDQ);
    }
    tables.push(&AVX512_BW);
    tables
}

/// The AVX2 table, when this CPU runs it.
pub(super) fn avx2_tables() -> Vec<&'static NativeTable> {
    if avx2_available() {
        vec![&AVX2]
    } else {
        Vec::new()
    }
}

static AVX512_VNNI_VPOPCNTDQ: NativeTable = NativeTable {
    name: "avx512-vnni-vpopcntdq",
    dot_i8: avx512::dot_i8_avx512vnni,
    hamming: avx512::hamming_avx512vpopcntdq,
    dot_i8_batch: avx512::dot_i8_batch_avx512vnni,
    hamming_batch: avx512::hamming_batch_avx512vpopcntdq,
    dot_i8_gather: avx512::dot_i8_gather_avx512vnni,
};

static AVX512_VNNI: NativeTable = NativeTable {
    name: "avx512-vnni-popcnt",
    dot_i8: avx512::dot_i8_avx512vnni,
    hamming: avx2::hamming_avx2,
    dot_i8_batch: avx512::dot_i8_batch_avx512vnni,
    hamming_batch: avx2::hamming_batch_avx2,
    dot_i8_gather: avx512::dot_i8_gather_avx512vnni,
};

static AVX512_VPOPCNTDQ: NativeTable = NativeTable {
    name: "avx512-bw-vpopcntdq",
    dot_i8: avx512::dot_i8_avx512bw,
    hamming: avx512::hamming_avx512vpopcntdq,
    dot_i8_batch: avx512::dot_i8_batch_avx512bw,
    hamming_batch: avx512::hamming_batch_avx512vpopcntdq,
    dot_i8_gather: avx512::dot_i8_gather_avx512bw,
};

static AVX512_BW: NativeTable = NativeTable {
    name: "avx512-bw-popcnt",
    dot_i8: avx512::dot_i8_avx512bw,
    hamming: avx2::hamming_avx2,
    dot_i8_batch: avx512::dot_i8_batch_avx512bw,
    hamming_batch: avx2::hamming_batch_avx2,
    dot_i8_gather: avx512::dot_i8_gather_avx512bw,
};

static AVX2: NativeTable = NativeTable {
    name: "avx2",
    dot_i8: avx2::dot_i8_avx2,
    hamming: avx2::hamming_avx2,
    dot_i8_batch: avx2::dot_i8_batch_avx2,
    hamming_batch: avx2::hamming_batch_avx2,
    dot_i8_gather: avx2::dot_i8_gather_avx2,
};

/// The query-side preparation of a kernel that needs none.
#[inline(always)]
fn no_preparation(_query: &[i8]) {}

/// Defines the batch and gather dot entries of one ISA variant around its row kernel
/// `unsafe fn rows<const R: usize>(query, prepared, [*const i8; R]) -> [i32; R]` (which may read
/// `query.len()` bytes behind each pointer) and its query preparation `fn(&[i8]) -> P`, run
/// once per call. Both entries check their slice preconditions once, then run one row per step
/// with no per-row checks. One row per step is deliberate: four rows interleaved per step (so
/// each query chunk is loaded once per four rows) measured 20-40% slower on Zen 4 at 384 dims,
/// as the interleaved loads stop looking like one sequential stream to the prefetcher.
macro_rules! dot_drivers {
    (
        features: $features:literal,
        batch: $batch:ident,
        gather: $gather:ident,
        prepare: $prepare:path,
        rows: $rows:ident $(,)?
    ) => {
        /// Batch dot, one row per step; see `Kernels::dot_i8_batch`.
        // PERF: run cargo bench -p cpersona-benches --bench kernels before changing.
        #[target_feature(enable = $features)]
        pub(super) fn $batch(query: &[i8], rows: &[i8], stride: usize, out: &mut [i32]) {
            $crate::kernels::check_dot_batch(query.len(), rows.len(), stride, out.len());
            let prepared = $prepare(query);
            let base = rows.as_ptr();
            for (row_idx, o) in out.iter_mut().enumerate() {
                // SAFETY: `row_idx < out.len()`, and the check above proved
                // `stride >= query.len()` and `out.len() * stride <= rows.len()`, so the pointer
                // has `query.len()` readable bytes behind it.
                let [dot] = unsafe { $rows::<1>(query, prepared, [base.add(row_idx * stride)]) };
                *o = dot;
            }
        }

        /// Gathered dot, one listed row per step; see `Kernels::dot_i8_gather`.
        // PERF: run cargo bench -p cpersona-benches --bench kernels before changing.
        #[target_feature(enable = $features)]
        pub(super) fn $gather(
            query: &[i8],
            rows: &[i8],
            stride: usize,
            row_indices: &[u32],
            out: &mut [i32],
        ) {
            $crate::kernels::check_dot_gather(
                query.len(),
                rows.len(),
                stride,
                row_indices,
                out.len(),
            );
            let prepared = $prepare(query);
            let base = rows.as_ptr();
            for (o, &idx) in out.iter_mut().zip(row_indices) {
                let row = idx as usize * stride;
                // SAFETY: the check above proved `idx * stride + query.len() <= rows.len()` for
                // every listed row, so the pointer has `query.len()` readable bytes behind it.
                let [dot] = unsafe { $rows::<1>(query, prepared, [base.add(row)]) };
                *o = dot;
            }
        }
    };
}
pub(crate) use dot_drivers;
