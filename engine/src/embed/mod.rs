//! The embedders behind one trait: builtin (candle), hash (zero set-up fallback), http
//! (CPersona's embedding contract) and openai (`/v1/embeddings`). An embedder only embeds;
//! it never generates text, and nothing here reads the environment.

mod bert;
pub mod builtin;
mod config;
pub mod hash;
pub mod http;
pub mod openai;
mod remote;

use std::path::PathBuf;

pub use builtin::{BuiltinEmbedder, install_model};
pub use config::{EmbedderConfig, RemoteOptions, from_config};
pub use hash::{HASH_ADVISORY, HashEmbedder};
pub use http::HttpEmbedder;
pub use openai::OpenAiEmbedder;

/// Who produced a vector: stored beside every embedding so vectors are never silently mixed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EmbedderIdentity {
    /// Model id, e.g. `sentence-transformers/all-MiniLM-L6-v2` or `hash-ngram-v1`.
    pub model_id: String,
    /// Vector dimension.
    pub dim: usize,
    /// Input window in tokens; longer texts are truncated by the model.
    pub window_tokens: usize,
}

/// What an embedder can fail with.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum EmbedError {
    /// The embedder returned a vector of the wrong dimension.
    #[error("embedder returned dimension {received}, expected {expected}")]
    WrongDimension { expected: usize, received: usize },
    /// The embedder is unreachable or failed.
    #[error("embedder unavailable: {reason}")]
    Unavailable { reason: String },
    /// A file the model folder needs is missing or unreadable.
    #[error("model file {} is missing or unreadable: {reason}", path.display())]
    ModelFile { path: PathBuf, reason: String },
    /// The model files are present but could not be loaded or run.
    #[error("model {model}: {reason}")]
    Model { model: String, reason: String },
    /// A remote embedder answered with something that breaks its contract.
    #[error("embedder response invalid: {reason}")]
    InvalidResponse { reason: String },
    /// A vector contained NaN or an infinity.
    #[error("embedder returned a non-finite value in vector {index}")]
    NonFinite { index: usize },
    /// The embedder configuration cannot work.
    #[error("embedder configuration invalid: {reason}")]
    Config { reason: String },
}

/// How a text fits the embedder's window (CPersona 2.6 `/count_tokens` entry).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TokenInfo {
    /// Tokens the whole text takes, special tokens included.
    pub count: usize,
    /// The window in tokens.
    pub window: usize,
    /// `count > window`: the vector sees only a prefix.
    pub truncated: bool,
    /// Character (Unicode scalar) offset where the embedded prefix ends.
    pub window_end_char: usize,
}

/// Whether semantic recall is working at full strength; surfaced as CPersona's advisory.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum EmbedHealth {
    /// Vectors come from a real model that answers.
    Healthy,
    /// Recall still runs but its semantic arm is degraded.
    Degraded {
        /// `hint` (a weak fallback by configuration) or `fault` (a configured backend failing).
        severity: Severity,
        /// One line: what is degraded.
        reason: String,
        /// What was observed (last error), when there is one.
        evidence: Option<String>,
        /// What the user can do about it.
        advisory: String,
    },
}

/// Severity of a degraded embedder, as CPersona's advisory names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, schemars::JsonSchema)]
pub enum Severity {
    /// Configured that way (no model installed): works, recall is weaker.
    Hint,
    /// A configured backend fails repeatedly.
    Fault,
}

impl Severity {
    /// CPersona's word for it.
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Hint => "hint",
            Severity::Fault => "fault",
        }
    }
}

/// One embedding model. Vectors come back L2-normalised, one per input text, in order.
pub trait Embedder: Send + Sync {
    /// The model's identity.
    fn identity(&self) -> &EmbedderIdentity;
    /// Embed a batch of texts.
    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError>;
    /// How each text fits the window; `None` when this embedder cannot count its tokens.
    fn count_tokens(&self, texts: &[&str]) -> Result<Option<Vec<TokenInfo>>, EmbedError> {
        let _ = texts;
        Ok(None)
    }
    /// Current health; a remote embedder turns `Degraded` after repeated failures.
    fn health(&self) -> EmbedHealth {
        EmbedHealth::Healthy
    }
    /// A digest that changes whenever the vectors would (CPersona's `/capabilities`
    /// fingerprint), when the embedder knows one.
    fn fingerprint(&self) -> Option<String> {
        None
    }
}

/// L2-normalises `vector` in place; a zero or non-finite vector is an error, never NaN.
pub(crate) fn l2_normalize(vector: &mut [f32], index: usize) -> Result<(), EmbedError> {
    let norm_sq: f64 = vector.iter().map(|&x| f64::from(x) * f64::from(x)).sum();
    if !norm_sq.is_finite() {
        return Err(EmbedError::NonFinite { index });
    }
    let norm = norm_sq.sqrt();
    if norm <= 1e-9 {
        return Err(EmbedError::InvalidResponse {
            reason: format!("vector {index} has norm {norm:e}, too small to normalise"),
        });
    }
    for x in vector.iter_mut() {
        *x = (f64::from(*x) / norm) as f32;
    }
    Ok(())
}

#[cfg(test)]
mod tests;
