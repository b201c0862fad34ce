//! The query "embedder" of the measurement harnesses: a table from query text to the vector
//! the harness already holds, so a recall embeds nothing and its vector matches the stored
//! ones exactly (CPersona's `LookupEmbeddingClient`). A text outside the table is an error,
//! never a made-up vector.

use std::collections::HashMap;

use cpersona_engine::embed::{EmbedError, Embedder, EmbedderIdentity};

/// Answers `embed` from `table`.
pub struct LookupEmbedder {
    /// The identity the store records for these vectors.
    pub identity: EmbedderIdentity,
    /// Query text → its vector.
    pub table: HashMap<String, Vec<f32>>,
}

impl Embedder for LookupEmbedder {
    fn identity(&self) -> &EmbedderIdentity {
        &self.identity
    }

    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        texts
            .iter()
            .map(|t| {
                self.table
                    .get(*t)
                    .cloned()
                    .ok_or_else(|| EmbedError::Unavailable {
                        reason: format!("not a query of this run: {t}"),
                    })
            })
            .collect()
    }
}
