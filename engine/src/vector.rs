//! Embedding blobs: vectors checked against the store's dimension and encoded as little-endian
//! f32 or f16, plus the base64 of CPersona's export format. A vector of the wrong width or
//! with a non-finite value must never reach the database.

use crate::config::EmbeddingFormat;
use crate::error::{Error, Result};

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

/// Decodes standard base64 (padding optional, whitespace refused); `None` when malformed.
pub fn base64_decode(text: &str) -> Option<Vec<u8>> {
    let text = text.trim_end_matches('=');
    let mut out = Vec::with_capacity(text.len() * 3 / 4);
    let mut acc = 0u32;
    let mut n_bits = 0u32;
    for byte in text.bytes() {
        let value = match byte {
            b'A'..=b'Z' => byte - b'A',
            b'a'..=b'z' => byte - b'a' + 26,
            b'0'..=b'9' => byte - b'0' + 52,
            b'+' => 62,
            b'/' => 63,
            _ => return None,
        };
        acc = (acc << 6) | u32::from(value);
        n_bits += 6;
        if n_bits >= 8 {
            n_bits -= 8;
            out.push((acc >> n_bits) as u8);
            acc &= (1 << n_bits) - 1;
        }
    }
    // A lone trailing sextet cannot encode a byte.
    if n_bits >= 6 {
        return None;
    }
    Some(out)
}

#[cfg(test)]
mod tests;
