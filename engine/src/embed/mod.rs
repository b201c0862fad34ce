//! The embedders behind one trait: builtin (candle), hash (zero set-up fallback), http
//! (CPersona's embedding contract) and openai (`/v1/embeddings`). An embedder only embeds;
//! it never generates text.

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
}

/// One embedding model. Vectors come back L2-normalised, one per input text, in order.
pub trait Embedder: Send + Sync {
    /// The model's identity.
    fn identity(&self) -> &EmbedderIdentity;
    /// Embed a batch of texts.
    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError>;
}
