//! The store's vector target: the embedder identity (model id, dimension) whose vectors recall
//! searches and writes produce, and whether the configured embedder produces them. Vectors of
//! two models are never compared: recall and the index read only rows carrying the target's
//! identity.
//!
//! # A new embedder
//! When the store holds vectors of another model, the configured embedder is *adopted*: it
//! becomes the target at once, `meta` records the change (`reembed_to_*`, `reembed_from_*`),
//! and the rows of the old model are re-embedded in the background (`crate::reembed`). The
//! store's recorded identity (`embedding_model`, `embedding_dim`) moves only when the last
//! row is done, so a restart in the middle resumes. Two cases keep the old target instead
//! (writes queue, the vector arm is skipped, `check_health` says why): the hashed fallback
//! over a real model's vectors (a missing model folder must never wipe them), and an operator
//! who turned adoption off (`EngineConfig::reembed_on_model_change`) and has not started a
//! re-embedding toward this embedder (`cpersona reembed` does).

use rusqlite::{Connection, OptionalExtension};

use crate::embed::Embedder;
use crate::embed::hash::HASH_MODEL_ID;
use crate::error::Result;

/// Which vectors the store accepts, and whether the embedder produces them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct VectorTarget {
    /// The model id whose vectors recall searches and writes produce.
    pub(crate) model_id: String,
    /// Its dimension.
    pub(crate) dim: usize,
    /// True when the embedder's identity equals the target: only then are its vectors
    /// written; otherwise writes land unembedded and are queued.
    pub(crate) embedder_matches: bool,
    /// The identity the store recorded before it adopted this target, while rows of it are
    /// being re-embedded; `None` when no model change is under way.
    pub(crate) reembed_from: Option<(String, usize)>,
}

/// `meta` keys of an adoption under way (removed when the store's identity moves).
pub(crate) const REEMBED_KEYS: [&str; 4] = [
    "reembed_to_model",
    "reembed_to_dim",
    "reembed_from_model",
    "reembed_from_dim",
];

fn meta(conn: &Connection, key: &str) -> Result<Option<String>> {
    Ok(conn
        .query_row("SELECT value FROM meta WHERE key = ?", [key], |row| {
            row.get(0)
        })
        .optional()?)
}

fn set_meta(conn: &Connection, pairs: &[(&str, String)]) -> Result<()> {
    for (key, value) in pairs {
        conn.execute(
            "INSERT INTO meta(key, value) VALUES (?1, ?2) \
             ON CONFLICT(key) DO UPDATE SET value = excluded.value",
            rusqlite::params![key, value],
        )?;
    }
    Ok(())
}

/// Forgets an adoption under way (its rows are done, or the old embedder is back).
pub(crate) fn clear_reembed(conn: &Connection) -> Result<()> {
    for key in REEMBED_KEYS {
        conn.execute("DELETE FROM meta WHERE key = ?", [key])?;
    }
    Ok(())
}

/// Records `model_id`/`dim` as the store's identity: every vector now carries it.
pub(crate) fn record_identity(conn: &Connection, model_id: &str, dim: usize) -> Result<()> {
    set_meta(
        conn,
        &[
            ("embedding_model", model_id.to_owned()),
            ("embedding_dim", dim.to_string()),
        ],
    )?;
    clear_reembed(conn)
}

/// When a store holding another model's vectors takes the configured embedder.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Adoption {
    /// Only when a re-embedding toward it was started before.
    Off,
    /// Unless it is the hashed fallback over a real model (`reembed_on_model_change`).
    Auto,
    /// Always: an operator's explicit `cpersona reembed`.
    Operator,
}

/// Reads the store's recorded identity and settles the target: the store's own when the
/// embedder matches it, the embedder's when it is adopted (see the module doc), else the
/// store's with `embedder_matches: false`.
pub(crate) fn settle_identity(
    conn: &Connection,
    embedder: &dyn Embedder,
    adoption: Adoption,
) -> Result<VectorTarget> {
    let identity = embedder.identity();
    let stored_model = meta(conn, "embedding_model")?;
    let stored_dim = meta(conn, "embedding_dim")?.and_then(|dim| dim.parse::<usize>().ok());
    let n_vectors: i64 = conn.query_row(
        "SELECT (SELECT COUNT(*) FROM memories WHERE embedding IS NOT NULL) + \
                (SELECT COUNT(*) FROM episodes WHERE embedding IS NOT NULL)",
        [],
        |row| row.get(0),
    )?;
    let embedder_target = |reembed_from| VectorTarget {
        model_id: identity.model_id.clone(),
        dim: identity.dim,
        embedder_matches: true,
        reembed_from,
    };
    let (model_id, dim) = match (stored_model, stored_dim) {
        (Some(model_id), Some(dim)) if n_vectors > 0 => (model_id, dim),
        _ => {
            // A store without vectors adopts the embedder it is opened with.
            record_identity(conn, &identity.model_id, identity.dim)?;
            return Ok(embedder_target(None));
        }
    };
    if model_id == identity.model_id && dim == identity.dim {
        // The recorded model is back (or never left): an adoption of another one is void;
        // rows it already re-embedded are re-embedded back by the same worker.
        clear_reembed(conn)?;
        return Ok(embedder_target(None));
    }
    let started_toward_this = meta(conn, "reembed_to_model")?.as_deref()
        == Some(identity.model_id.as_str())
        && meta(conn, "reembed_to_dim")?.and_then(|d| d.parse::<usize>().ok())
            == Some(identity.dim);
    let fallback_over_model = identity.model_id == HASH_MODEL_ID && model_id != HASH_MODEL_ID;
    let adopt = match adoption {
        Adoption::Off => started_toward_this,
        Adoption::Auto => started_toward_this || !fallback_over_model,
        Adoption::Operator => true,
    };
    if adopt {
        set_meta(
            conn,
            &[
                ("reembed_to_model", identity.model_id.clone()),
                ("reembed_to_dim", identity.dim.to_string()),
                ("reembed_from_model", model_id.clone()),
                ("reembed_from_dim", dim.to_string()),
            ],
        )?;
        return Ok(embedder_target(Some((model_id, dim))));
    }
    Ok(VectorTarget {
        model_id,
        dim,
        embedder_matches: false,
        reembed_from: None,
    })
}
