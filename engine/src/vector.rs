//! Embedding blobs: vectors checked against the store's dimension and encoded as little-endian
//! f32 or f16, plus the base64 of CPersona's export format. A vector of the wrong width or
//! with a non-finite value must never reach the database.

use crate::error::{Error, Result};

/// How stored embeddings are encoded. Recorded per row, so a store may hold both.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum EmbeddingFormat {
    /// Little-endian f32, 4 bytes per dimension (CPersona's blob format).
    #[default]
    F32,
    /// Little-endian IEEE half, 2 bytes per dimension: half the file for a cosine error
    /// below 1e-3 on unit vectors.
    F16,
}

impl EmbeddingFormat {
    /// The tag stored in the `embedding_format` column.
    pub fn tag(self) -> &'static str {
        match self {
            EmbeddingFormat::F32 => "f32",
            EmbeddingFormat::F16 => "f16",
        }
    }
}

/// Checks `vector` against `dim` and encodes it.
pub fn encode(vector: &[f32], dim: usize, format: EmbeddingFormat) -> Result<Vec<u8>> {
    if vector.len() != dim {
        return Err(Error::WrongDimension {
            expected: dim,
            received: vector.len(),
        });
    }
    if let Some(position) = vector.iter().position(|x| !x.is_finite()) {
        return Err(Error::NonFiniteEmbedding { position });
    }
    Ok(match format {
        EmbeddingFormat::F32 => vector.iter().flat_map(|x| x.to_le_bytes()).collect(),
        EmbeddingFormat::F16 => vector
            .iter()
            .flat_map(|x| half::f16::from_f32(*x).to_le_bytes())
            .collect(),
    })
}

/// Decodes a blob written by [`encode`]; `None` when its length is not a whole vector.
pub fn decode(blob: &[u8], format: EmbeddingFormat) -> Option<Vec<f32>> {
    match format {
        EmbeddingFormat::F32 => {
            let chunks = blob.chunks_exact(4);
            if !chunks.remainder().is_empty() {
                return None;
            }
            Some(
                chunks
                    .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
                    .collect(),
            )
        }
        EmbeddingFormat::F16 => {
            let chunks = blob.chunks_exact(2);
            if !chunks.remainder().is_empty() {
                return None;
            }
            Some(
                chunks
                    .map(|c| half::f16::from_le_bytes([c[0], c[1]]).to_f32())
                    .collect(),
            )
        }
    }
}

/// The format named by a stored tag.
pub fn format_from_tag(tag: &str) -> Option<EmbeddingFormat> {
    match tag {
        "f32" => Some(EmbeddingFormat::F32),
        "f16" => Some(EmbeddingFormat::F16),
        _ => None,
    }
}

const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/// Standard base64 with padding (Python's `base64.b64encode`).
pub fn base64_encode(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            *chunk.get(1).unwrap_or(&0),
            *chunk.get(2).unwrap_or(&0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for (i, shift) in [18u32, 12, 6, 0].into_iter().enumerate() {
            if i <= chunk.len() {
                out.push(char::from(ALPHABET[((n >> shift) & 63) as usize]));
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// A byte's sextet in [`ALPHABET`], or [`NOT_BASE64`].
const SEXTET: [u8; 256] = {
    let mut table = [NOT_BASE64; 256];
    let mut i = 0;
    while i < 64 {
        table[ALPHABET[i] as usize] = i as u8;
        i += 1;
    }
    table
};
const NOT_BASE64: u8 = 0xFF;

/// Decodes standard base64 (padding optional, whitespace refused); `None` when malformed.
/// Four characters at a time through a lookup table: imports decode one 2 KB vector per row,
/// and the bit-at-a-time loop this replaces was 8% of a bulk import's profile.
pub fn base64_decode(text: &str) -> Option<Vec<u8>> {
    let text = text.trim_end_matches('=').as_bytes();
    let mut out = Vec::with_capacity(text.len() / 4 * 3 + 2);
    let sextets = |chunk: &[u8]| -> Option<u32> {
        chunk.iter().try_fold(0u32, |acc, &byte| {
            let value = SEXTET[usize::from(byte)];
            (value != NOT_BASE64).then_some((acc << 6) | u32::from(value))
        })
    };
    let mut quads = text.chunks_exact(4);
    for quad in &mut quads {
        let n = sextets(quad)?;
        out.extend_from_slice(&[(n >> 16) as u8, (n >> 8) as u8, n as u8]);
    }
    let rest = quads.remainder();
    match rest.len() {
        0 => {}
        // A lone trailing sextet cannot encode a byte.
        1 => return None,
        len => {
            // Two sextets carry one byte, three carry two; the left-over bits are dropped.
            let n = sextets(rest)? << (6 * (4 - len));
            out.push((n >> 16) as u8);
            if len == 3 {
                out.push((n >> 8) as u8);
            }
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests;
