//! The vector kernels: int8 dot products and Hamming distances over sign bits, one module per
//! ISA behind one safe entry per operation, chosen once by [`Kernels::detect`].
//!
//! Contract: every ISA returns exactly what [`scalar`] returns, for every input (integer
//! results, no tolerance). Unsafe code may appear in this module tree and in `mmap.rs` only;
//! here it is confined to the ISA files and to the one call through a native kernel table.
//!
//! Dispatch: a [`Kernels`] value is built only after the CPU has been checked for the features
//! its table needs, so a native table's `unsafe fn` pointers are sound to call from it. No
//! global state is kept and nothing is detected per call.

pub mod scalar;

mod portable;

#[cfg(target_arch = "aarch64")]
mod aarch64;
#[cfg(target_arch = "x86_64")]
mod x86_64;

#[cfg(test)]
mod tests;

/// An instruction set a kernel is written for, in order of preference.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Isa {
    /// AVX-512 F+BW+VL, with VNNI `vpdpbusd` for dot products and VPOPCNTDQ for Hamming where
    /// the CPU has them (and AVX-512BW widening / POPCNT fallbacks inside where it does not).
    Avx512,
    /// AVX2 with POPCNT.
    Avx2,
    /// aarch64 NEON.
    Neon,
    /// Portable SIMD through pulp (its runtime `Arch` picks the widest vector set it knows).
    Portable,
    /// The naive scalar reference.
    Scalar,
}

impl Isa {
    /// Every ISA, in order of preference.
    pub const ALL: [Isa; 5] = [
        Isa::Avx512,
        Isa::Avx2,
        Isa::Neon,
        Isa::Portable,
        Isa::Scalar,
    ];

    /// Whether this CPU can run this ISA's kernels (runtime detection; cheap but not free, so
    /// call it when building a [`Kernels`], never per scan).
    pub fn is_available(self) -> bool {
        match self {
            #[cfg(target_arch = "x86_64")]
            Isa::Avx512 => x86_64::avx512_available(),
            #[cfg(target_arch = "x86_64")]
            Isa::Avx2 => x86_64::avx2_available(),
            #[cfg(target_arch = "aarch64")]
            Isa::Neon => aarch64::neon_available(),
            Isa::Portable | Isa::Scalar => true,
            #[allow(unreachable_patterns)]
            _ => false,
        }
    }

    /// The ISAs this CPU can run, in order of preference; always ends with `Portable, Scalar`.
    pub fn available() -> Vec<Isa> {
        Isa::ALL
            .into_iter()
            .filter(|isa| isa.is_available())
            .collect()
    }
}

/// The kernel set a generation scans with; a `Copy` value filled once, never global state.
#[derive(Clone, Copy, Debug)]
pub struct Kernels {
    isa: Isa,
    backend: Backend,
}

/// How a [`Kernels`] value runs its operations.
#[derive(Clone, Copy, Debug)]
enum Backend {
    Scalar,
    Portable(pulp::Arch),
    /// A table of `#[target_feature]` kernels; only built after its features were detected.
    #[cfg_attr(
        not(any(target_arch = "x86_64", target_arch = "aarch64")),
        allow(dead_code)
    )]
    Native(&'static NativeTable),
}

/// One ISA variant's kernels. The pointers are `unsafe fn` because they are
/// `#[target_feature]` functions: calling one is sound only on a CPU with those features,
/// which [`Kernels`] guarantees by construction. Each function checks its own slice
/// preconditions, so nothing else is required of the caller.
#[derive(Debug)]
#[cfg_attr(
    not(any(target_arch = "x86_64", target_arch = "aarch64")),
    allow(dead_code)
)]
pub(crate) struct NativeTable {
    pub(crate) name: &'static str,
    pub(crate) dot_i8: unsafe fn(&[i8], &[i8]) -> i32,
    pub(crate) hamming: unsafe fn(&[u64], &[u64]) -> u32,
    pub(crate) dot_i8_batch: unsafe fn(&[i8], &[i8], usize, &mut [i32]),
    pub(crate) hamming_batch: unsafe fn(&[u64], &[u64], &mut [u32]),
    pub(crate) dot_i8_gather: GatherFn,
}

/// The signature of a native gathered dot (query, rows, stride, row indices, out).
type GatherFn = unsafe fn(&[i8], &[i8], usize, &[u32], &mut [i32]);

impl Kernels {
    /// The best kernel set this CPU supports (the first of [`Isa::available`]).
    pub fn detect() -> Self {
        Isa::ALL
            .into_iter()
            .find_map(Kernels::for_isa)
            .unwrap_or_else(Kernels::scalar)
    }

    /// The naive scalar reference.
    pub fn scalar() -> Self {
        Self {
            isa: Isa::Scalar,
            backend: Backend::Scalar,
        }
    }

    /// The kernel set for `isa`, with the best sub-variant this CPU runs (for AVX-512: VNNI and
    /// VPOPCNTDQ where present), or `None` when the CPU lacks it.
    pub fn for_isa(isa: Isa) -> Option<Self> {
        Self::variants_of(isa).into_iter().next()
    }

    /// The ISAs this CPU can run, in order of preference (same as [`Isa::available`]).
    pub fn available() -> Vec<Isa> {
        Isa::available()
    }

    /// Every kernel set this CPU can run, best first, including the fallback sub-variants
    /// inside an ISA (AVX-512 without VNNI or without VPOPCNTDQ): for tests and benches.
    pub fn variants() -> Vec<Self> {
        Isa::ALL.into_iter().flat_map(Self::variants_of).collect()
    }

    /// The ISA this kernel set runs.
    pub fn isa(&self) -> Isa {
        self.isa
    }

    /// A short name of the exact variant, e.g. `avx512-vnni-vpopcntdq` or `portable-V3`.
    pub fn variant(&self) -> String {
        match self.backend {
            Backend::Scalar => "scalar".to_owned(),
            Backend::Portable(arch) => {
                // pulp's `Arch` prints its feature tokens too; keep the level's name only.
                let level = format!("{arch:?}");
                format!("portable-{}", level.split('(').next().unwrap_or("unknown"))
            }
            Backend::Native(table) => table.name.to_owned(),
        }
    }

    /// `sum(a[i] * b[i])` over `min(a.len(), b.len())` elements (callers pass equal lengths).
    /// Exact below 2^17 elements (the true sum cannot leave i32 there).
    pub fn dot_i8(&self, a: &[i8], b: &[i8]) -> i32 {
        match self.backend {
            Backend::Scalar => scalar::dot_i8_scalar(a, b),
            Backend::Portable(arch) => portable::dot_i8_portable(arch, a, b),
            // SAFETY: a `Native` table is only built after its CPU features were detected.
            Backend::Native(table) => unsafe { (table.dot_i8)(a, b) },
        }
    }

    /// Number of differing bits between two equal-length bit vectors (over the shorter one).
    pub fn hamming(&self, a: &[u64], b: &[u64]) -> u32 {
        match self.backend {
            Backend::Scalar => scalar::hamming_scalar(a, b),
            Backend::Portable(arch) => portable::hamming_portable(arch, a, b),
            // SAFETY: a `Native` table is only built after its CPU features were detected.
            Backend::Native(table) => unsafe { (table.hamming)(a, b) },
        }
    }

    /// Batch dot: `out[r] = dot_i8(query, rows[r * stride .. r * stride + query.len()])`
    /// for `r in 0..out.len()`. Rows are laid out contiguously, `stride` bytes apart (the
    /// generation uses `stride >= dim`, a multiple of 64, zero padding after `dim`; the kernels
    /// need only `stride >= query.len()` and never read a row past `query.len()`).
    ///
    /// # Panics
    /// When `stride < query.len()` or `rows.len() < out.len() * stride` (checked once per
    /// call, not per row).
    pub fn dot_i8_batch(&self, query: &[i8], rows: &[i8], stride: usize, out: &mut [i32]) {
        match self.backend {
            Backend::Scalar => scalar::dot_i8_batch_scalar(query, rows, stride, out),
            Backend::Portable(arch) => {
                portable::dot_i8_batch_portable(arch, query, rows, stride, out)
            }
            // SAFETY: a `Native` table is only built after its CPU features were detected.
            Backend::Native(table) => unsafe { (table.dot_i8_batch)(query, rows, stride, out) },
        }
    }

    /// Gathered dot, for re-ranking prefilter candidates:
    /// `out[i] = dot_i8(query, row row_indices[i])` with the row layout of
    /// [`Kernels::dot_i8_batch`].
    ///
    /// # Panics
    /// When `out.len() != row_indices.len()`, `stride < query.len()`, or a listed row does not
    /// lie inside `rows` (checked once per call, not per row).
    pub fn dot_i8_gather(
        &self,
        query: &[i8],
        rows: &[i8],
        stride: usize,
        row_indices: &[u32],
        out: &mut [i32],
    ) {
        match self.backend {
            Backend::Scalar => scalar::dot_i8_gather_scalar(query, rows, stride, row_indices, out),
            Backend::Portable(arch) => {
                portable::dot_i8_gather_portable(arch, query, rows, stride, row_indices, out);
            }
            // SAFETY: a `Native` table is only built after its CPU features were detected.
            Backend::Native(table) => unsafe {
                (table.dot_i8_gather)(query, rows, stride, row_indices, out);
            },
        }
    }

    /// Batch Hamming: `out[r] = hamming(query, rows[r * words .. (r + 1) * words])` with
    /// `words = query.len()`.
    ///
    /// # Panics
    /// When `rows.len() < out.len() * words` (checked once per call, not per row).
    pub fn hamming_batch(&self, query: &[u64], rows: &[u64], out: &mut [u32]) {
        match self.backend {
            Backend::Scalar => scalar::hamming_batch_scalar(query, rows, out),
            Backend::Portable(arch) => portable::hamming_batch_portable(arch, query, rows, out),
            // SAFETY: a `Native` table is only built after its CPU features were detected.
            Backend::Native(table) => unsafe { (table.hamming_batch)(query, rows, out) },
        }
    }

    /// Every variant of `isa` this CPU runs, best first (empty when it runs none).
    fn variants_of(isa: Isa) -> Vec<Self> {
        let native = |tables: Vec<&'static NativeTable>| {
            tables
                .into_iter()
                .map(|table| Self {
                    isa,
                    backend: Backend::Native(table),
                })
                .collect()
        };
        match isa {
            Isa::Scalar => vec![Self::scalar()],
            Isa::Portable => vec![Self {
                isa,
                backend: Backend::Portable(pulp::Arch::new()),
            }],
            #[cfg(target_arch = "x86_64")]
            Isa::Avx512 => native(x86_64::avx512_tables()),
            #[cfg(target_arch = "x86_64")]
            Isa::Avx2 => native(x86_64::avx2_tables()),
            #[cfg(target_arch = "aarch64")]
            Isa::Neon => native(aarch64::neon_tables()),
            #[allow(unreachable_patterns)]
            _ => native(Vec::new()),
        }
    }
}

/// Panics unless a batch dot over `n_out` rows of `stride` bytes fits in `rows_len` bytes.
#[track_caller]
pub(crate) fn check_dot_batch(dim: usize, rows_len: usize, stride: usize, n_out: usize) {
    assert!(
        stride >= dim,
        "dot batch: stride {stride} is shorter than the query ({dim})"
    );
    let needed = n_out.checked_mul(stride);
    assert!(
        needed.is_some_and(|needed| needed <= rows_len),
        "dot batch: {n_out} rows of stride {stride} do not fit in {rows_len} bytes"
    );
}

/// Panics unless every listed row (of `dim` bytes, `stride` apart) lies inside `rows_len`.
#[track_caller]
pub(crate) fn check_dot_gather(
    dim: usize,
    rows_len: usize,
    stride: usize,
    row_indices: &[u32],
    n_out: usize,
) {
    assert_eq!(
        row_indices.len(),
        n_out,
        "dot gather: one output per listed row"
    );
    assert!(
        stride >= dim,
        "dot gather: stride {stride} is shorter than the query ({dim})"
    );
    if let Some(max_row) = row_indices.iter().copied().max() {
        let end = (max_row as usize)
            .checked_mul(stride)
            .and_then(|start| start.checked_add(dim));
        assert!(
            end.is_some_and(|end| end <= rows_len),
            "dot gather: row {max_row} of stride {stride} lies outside {rows_len} bytes"
        );
    }
}

/// Panics unless `n_out` rows of `words` words fit in `rows_len` words.
#[track_caller]
pub(crate) fn check_hamming_batch(words: usize, rows_len: usize, n_out: usize) {
    let needed = n_out.checked_mul(words);
    assert!(
        needed.is_some_and(|needed| needed <= rows_len),
        "hamming batch: {n_out} rows of {words} words do not fit in {rows_len} words"
    );
}
