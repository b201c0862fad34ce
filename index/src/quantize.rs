//! Quantisation of normalised f32 vectors into int8 codes with a per-row scale, and into sign
//! bits; rows and queries go through the same function so their codes are comparable. Never
//! normalises: the caller hands unit vectors, so the int8 dot estimates cosine.
//!
//! # Codes and the error bound
//! For a vector `v` of dimension `d`, `s = max_i |v_i| / 127` and `c_i = round(v_i / s)`, so
//! `c_i ∈ [-127, 127]` (−128 never occurs) and `v_i = s·c_i + e_i` with `|e_i| ≤ s/2`.
//! The score of a query `q` against a row `r` is `est = s_q·s_r·Σ c_q,i·c_r,i`. Writing
//! `q = q̂ + e_q` and `r = r̂ + e_r` (hats are the dequantised vectors):
//!
//! `⟨q,r⟩ − est = ⟨q,r⟩ − ⟨q − e_q, r − e_r⟩ = ⟨e_q, r⟩ + ⟨q, e_r⟩ − ⟨e_q, e_r⟩`,
//!
//! and by Cauchy–Schwarz with `‖e‖ ≤ √d·s/2`:
//!
//! `|⟨q,r⟩ − est| ≤ (√d/2)·(s_q·‖r‖ + s_r·‖q‖) + d·s_q·s_r/4`   ([`error_bound`]).
//!
//! For unit vectors `s ≤ 1/127`, so the worst case at d = 384 is about 0.16; embedding-like
//! vectors spread their mass (max |v_i| ≈ 0.15–0.25), giving `s ≈ 0.0016` and a bound near
//! 0.03, while the typical error (independent rounding errors) is about ten times smaller.
//!
//! # Sign bits
//! Bit `i % 64` of word `i / 64` (least significant bit first) is set iff `v_i > 0`; bits past
//! `d` are zero. The Hamming distance between sign words ranks rows for the prefilter.

use crate::error::{Error, Result};
use crate::format::Dim;

/// A query quantised for one dimension: int8 codes padded with zeros to the row stride, the
/// scale, and the sign words. Built once per search; the dimension check happens here so the
/// scan has none.
#[derive(Clone, Debug, PartialEq)]
pub struct QueryCodes {
    dim: Dim,
    codes: Vec<i8>,
    scale: f32,
    signs: Vec<u64>,
}

impl QueryCodes {
    /// Quantises `vector`, which must have `dim` finite components.
    pub fn new(vector: &[f32], dim: Dim) -> Result<Self> {
        check_vector(vector, dim, 0)?;
        let mut codes = vec![0i8; dim.code_stride()];
        let mut signs = vec![0u64; dim.sign_words()];
        let scale = quantize_into(vector, &mut codes, &mut signs);
        Ok(Self {
            dim,
            codes,
            scale,
            signs,
        })
    }

    /// The dimension the query was checked against.
    pub fn dim(&self) -> Dim {
        self.dim
    }

    /// Int8 codes, `dim.code_stride()` long (zero padded).
    pub fn codes(&self) -> &[i8] {
        &self.codes
    }

    /// The query's scale.
    pub fn scale(&self) -> f32 {
        self.scale
    }

    /// Sign words, `dim.sign_words()` long.
    pub fn signs(&self) -> &[u64] {
        &self.signs
    }
}

/// Checks a vector's length and that it is finite.
pub(crate) fn check_vector(vector: &[f32], dim: Dim, row: u64) -> Result<()> {
    if vector.len() != dim.get() {
        return Err(Error::Dim {
            expected: dim.get(),
            found: vector.len(),
        });
    }
    if vector.iter().any(|v| !v.is_finite()) {
        return Err(Error::NonFinite { row });
    }
    Ok(())
}

/// Quantises `vector` into `codes` (at least `vector.len()` long; the rest must be zero) and
/// `signs` (at least `ceil(len / 64)` words, zeroed by the caller); returns the scale.
pub fn quantize_into(vector: &[f32], codes: &mut [i8], signs: &mut [u64]) -> f32 {
    let max_abs = vector.iter().fold(0.0f32, |m, v| m.max(v.abs()));
    for (i, &v) in vector.iter().enumerate() {
        if v > 0.0 {
            signs[i / 64] |= 1u64 << (i % 64);
        }
    }
    if max_abs == 0.0 {
        return 0.0;
    }
    let scale = max_abs / 127.0;
    let inv = 127.0 / max_abs;
    for (c, &v) in codes.iter_mut().zip(vector) {
        *c = (v * inv).round().clamp(-127.0, 127.0) as i8;
    }
    scale
}

/// The cosine estimate of an int8 dot: `dot · s_q · s_r`. Every score in the crate is computed
/// by this one expression, so equal inputs give bit-equal scores on every path.
#[inline]
pub fn score(dot: i32, query_scale: f32, row_scale: f32) -> f32 {
    dot as f32 * query_scale * row_scale
}

/// The bound derived in the module doc: `|⟨q,r⟩ − est| ≤ (√d/2)(s_q‖r‖ + s_r‖q‖) + d s_q s_r/4`.
pub fn error_bound(
    dim: usize,
    query_scale: f32,
    row_scale: f32,
    query_norm: f32,
    row_norm: f32,
) -> f32 {
    let d = dim as f32;
    0.5 * d.sqrt() * (query_scale * row_norm + row_scale * query_norm)
        + d * query_scale * row_scale / 4.0
}

#[cfg(test)]
mod tests;
