//! The store's vector target: the embedder identity (model id, dimension) the store's vectors
//! were written with, and whether the configured embedder produces them. Vectors of two
//! models are never mixed: a mismatch leaves writes unembedded and queued.

use rusqlite::{Connection, OptionalExtension};

use crate::embed::Embedder;
use crate::error::Result;

/// Which vectors the store accepts, and whether the embedder produces them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct VectorTarget {
    /// The model id recorded in the store.
    pub(crate) model_id: String,
    /// The dimension recorded in the store.
    pub(crate) dim: usize,
    /// True when the embedder's identity equals the store's: only then are its vectors
    /// written; otherwise writes land unembedded and are queued.
    pub(crate) embedder_matches: bool,
}

/// Reads the store's recorded identity and decides whether the embedder matches it.
pub(crate) fn settle_identity(conn: &Connection, embedder: &dyn Embedder) -> Result<VectorTarget> {
    let identity = embedder.identity();
    let get = |key: &str| -> Result<Option<String>> {
        Ok(conn
            .query_row("SELECT value FROM meta WHERE key = ?", [key], |row| {
                row.get(0)
            })
            .optional()?)
    };
    let stored_model = get("embedding_model")?;
    let stored_dim = get("embedding_dim")?.and_then(|dim| dim.parse::<usize>().ok());
    let n_vectors: i64 = conn.query_row(
        "SELECT (SELECT COUNT(*) FROM memories WHERE embedding IS NOT NULL) + \
                (SELECT COUNT(*) FROM episodes WHERE embedding IS NOT NULL)",
        [],
        |row| row.get(0),
    )?;
    match (stored_model, stored_dim) {
        (Some(model_id), Some(dim)) if n_vectors > 0 => Ok(VectorTarget {
            embedder_matches: model_id == identity.model_id && dim == identity.dim,
            model_id,
            dim,
        }),
        _ => {
            // A store without vectors adopts the embedder it is opened with.
            conn.execute(
                "INSERT INTO meta(key, value) VALUES ('embedding_model', ?1), ('embedding_dim', ?2) \
                 ON CONFLICT(key) DO UPDATE SET value = excluded.value",
                rusqlite::params![identity.model_id, identity.dim.to_string()],
            )?;
            Ok(VectorTarget {
                model_id: identity.model_id.clone(),
                dim: identity.dim,
                embedder_matches: true,
            })
        }
    }
}
