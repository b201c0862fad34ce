//! aarch64 feature detection and the NEON kernel table. NEON is part of the aarch64 baseline,
//! but the table is still handed out only after `is_aarch64_feature_detected!("neon")`, the
//! fact the `unsafe` calls in `kernels/mod.rs` rely on. Not compiled on the x86_64 machines
//! this crate is developed on; CI on aarch64 is what proves it.

mod neon;

use super::NativeTable;

/// Whether this CPU runs the NEON kernels.
pub(super) fn neon_available() -> bool {
    std::arch::is_aarch64_feature_detected!("neon")
}

/// The NEON table, when this CPU runs it.
pub(super) fn neon_tables() -> Vec<&'static NativeTable> {
    if neon_available() {
        vec![&NEON]
    } else {
        Vec::new()
    }
}

static NEON: NativeTable = NativeTable {
    name: "neon",
    dot_i8: neon::dot_i8_neon,
    hamming: neon::hamming_neon,
    dot_i8_batch: neon::dot_i8_batch_neon,
    hamming_batch: neon::hamming_batch_neon,
    dot_i8_gather: neon::dot_i8_gather_neon,
};
