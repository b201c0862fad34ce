//! The vector kernels: int8 dot products and Hamming distances over sign bits, one module per
//! ISA behind one safe entry per operation, chosen once by [`Kernels::detect`].
//!
//! Contract: every ISA returns exactly what [`scalar`] returns, for every input (integer
//! results, no tolerance). Unsafe code may appear in this module tree and in `mmap.rs` only.

pub mod scalar;

/// An instruction set a kernel is written for, in order of preference.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Isa {
    /// AVX-512 (BW, VNNI where present, VPOPCNTDQ for Hamming).
    Avx512,
    /// AVX2 + FMA.
    Avx2,
    /// aarch64 NEON.
    Neon,
    /// Portable SIMD through pulp.
    Portable,
    /// The naive scalar reference.
    Scalar,
}

/// The kernel set a generation scans with; a `Copy` value filled once, never global state.
#[derive(Clone, Copy, Debug)]
pub struct Kernels {
    isa: Isa,
}

impl Kernels {
    /// The best kernel set this CPU supports.
    pub fn detect() -> Self {
        Self::scalar()
    }

    /// The naive scalar reference.
    pub fn scalar() -> Self {
        Self { isa: Isa::Scalar }
    }

    /// The ISA this kernel set runs.
    pub fn isa(&self) -> Isa {
        self.isa
    }

    /// `sum(a[i] * b[i])` over `min(a.len(), b.len())` elements (callers pass equal lengths).
    pub fn dot_i8(&self, a: &[i8], b: &[i8]) -> i32 {
        scalar::dot_i8_scalar(a, b)
    }

    /// Number of differing bits between two equal-length bit vectors.
    pub fn hamming(&self, a: &[u64], b: &[u64]) -> u32 {
        scalar::hamming_scalar(a, b)
    }

    /// Batch dot: `out[r] = dot_i8(query, rows[r * stride .. r * stride + query.len()])`
    /// for `r in 0..out.len()`. Precondition: `stride >= query.len()` and
    /// `rows.len() >= out.len() * stride` (checked by an assertion once per call, not per row).
    pub fn dot_i8_batch(&self, query: &[i8], rows: &[i8], stride: usize, out: &mut [i32]) {
        assert!(stride >= query.len() && rows.len() >= out.len() * stride);
        for (r, o) in out.iter_mut().enumerate() {
            let start = r * stride;
            *o = scalar::dot_i8_scalar(query, &rows[start..start + query.len()]);
        }
    }

    /// Batch Hamming: `out[r] = hamming(query, rows[r * words .. (r + 1) * words])` with
    /// `words = query.len()`. Precondition: `rows.len() >= out.len() * words`.
    pub fn hamming_batch(&self, query: &[u64], rows: &[u64], out: &mut [u32]) {
        let words = query.len();
        assert!(rows.len() >= out.len() * words);
        for (r, o) in out.iter_mut().enumerate() {
            let start = r * words;
            *o = scalar::hamming_scalar(query, &rows[start..start + words]);
        }
    }
}
