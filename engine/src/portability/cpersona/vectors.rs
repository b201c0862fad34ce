//! What becomes of CPersona's vectors. CPersona stores little-endian f32 blobs with a label
//! (`embedding_model`, 2.6's schema v18; absent or empty before) that names what produced
//! them only as a declaration. Each `(table, label, width)` group is judged once: kept as
//! the configured embedder's vectors when the label names it (its model id or fingerprint)
//! or when re-embedding a sample of the group's own texts gives the same vectors; otherwise
//! kept under their own label, so this store's re-embedding replaces them and no query is
//! ever compared with them. A blob that is not a whole f32 vector is dropped and the row
//! queued. Never guessed: every group and its verdict are in the report.

use std::collections::HashMap;

use super::read::Source;
use super::report::VectorGroup;
use crate::embed::Embedder;
use crate::error::Result;
use crate::portability::record::Embedding;
use crate::recall::stages::propagation::cosine;
use crate::store::VectorTarget;
use crate::vector::{EmbeddingFormat, decode, encode};

/// Rows sampled to check an unlabelled (or differently labelled) group against the embedder.
const SAMPLE_ROWS: usize = 8;
/// The cosine every sampled row must reach for the group to count as the embedder's.
const SAME_VECTOR_COSINE: f64 = 0.99;
/// The label under which unlabelled vectors of another model are kept.
pub(super) const UNLABELLED: &str = "cpersona-unlabelled";

/// The verdicts, by `(table, label, byte length)`.
pub(super) struct Plan {
    pub(super) groups: Vec<VectorGroup>,
    by_key: HashMap<(&'static str, String, usize), usize>,
}

/// Judges every group of `source`'s vectors against `embedder` (the store's `target`).
pub(super) fn plan(
    source: &Source,
    embedder: &dyn Embedder,
    target: &VectorTarget,
) -> Result<Plan> {
    let identity = embedder.identity();
    let fingerprint = embedder.fingerprint();
    let mut groups = Vec::new();
    let mut by_key = HashMap::new();
    for (table, label, bytes, rows) in source.vector_groups()? {
        let bytes = usize::try_from(bytes).unwrap_or(0);
        let dim = bytes / 4;
        let mut group = VectorGroup {
            table,
            label: label.clone(),
            dim,
            rows,
            verdict: "queued",
            model_id: String::new(),
            reason: String::new(),
        };
        if bytes == 0 || bytes % 4 != 0 {
            group.reason = format!("{bytes} bytes is not a whole float32 vector");
        } else if dim == target.dim
            && (label == identity.model_id || Some(&label) == fingerprint.as_ref())
        {
            group.verdict = "kept";
            group.model_id = target.model_id.clone();
            group.reason = "the label names the configured embedder".into();
        } else {
            let checked = if dim == target.dim {
                same_vectors(source, embedder, table, &label, bytes)?
            } else {
                Err(format!(
                    "{dim} dimensions, the configured embedder has {}",
                    target.dim
                ))
            };
            match checked {
                Ok(min_cos) => {
                    group.verdict = "kept";
                    group.model_id = target.model_id.clone();
                    group.reason = format!(
                        "re-embedding {} sampled rows with the configured embedder gave the \
                         same vectors (lowest cosine {min_cos:.4})",
                        rows.min(SAMPLE_ROWS as i64)
                    );
                }
                Err(why) => {
                    group.verdict = "kept_for_reembedding";
                    group.model_id = if label.is_empty() {
                        UNLABELLED.to_owned()
                    } else {
                        label.clone()
                    };
                    group.reason = format!("not the configured embedder's vectors: {why}");
                }
            }
        }
        by_key.insert((table, label, bytes), groups.len());
        groups.push(group);
    }
    Ok(Plan { groups, by_key })
}

impl Plan {
    /// The embedding a row of `table` with this label and blob is written with.
    pub(super) fn embedding(
        &self,
        table: &'static str,
        label: &str,
        blob: Option<Vec<u8>>,
        target: &VectorTarget,
        format: EmbeddingFormat,
    ) -> Embedding {
        let Some(blob) = blob else {
            return Embedding::Queue("converted from CPersona without a vector".into());
        };
        let Some(group) = self
            .by_key
            .get(&(table, label.to_owned(), blob.len()))
            .and_then(|&i| self.groups.get(i))
        else {
            return Embedding::Queue("vector group not planned".into());
        };
        match group.verdict {
            "kept" => match decode(&blob, EmbeddingFormat::F32)
                .ok_or_else(|| "not float32".to_owned())
                .and_then(|v| encode(&v, target.dim, format).map_err(|e| e.to_string()))
            {
                Ok(blob) => Embedding::Blob(blob),
                Err(why) => Embedding::Queue(format!("CPersona vector refused: {why}")),
            },
            "kept_for_reembedding" => {
                match decode(&blob, EmbeddingFormat::F32)
                    .filter(|v| v.iter().all(|x| x.is_finite()))
                {
                    Some(_) => Embedding::Foreign {
                        blob,
                        model_id: group.model_id.clone(),
                        dim: group.dim,
                    },
                    None => Embedding::Queue("CPersona vector holds a non-finite value".into()),
                }
            }
            _ => Embedding::Queue(format!("CPersona vector unusable: {}", group.reason)),
        }
    }

    /// The largest group kept for re-embedding: `(model id, dim)`.
    pub(super) fn dominant_foreign(&self) -> Option<(String, usize)> {
        self.groups
            .iter()
            .filter(|g| g.verdict == "kept_for_reembedding")
            .max_by_key(|g| g.rows)
            .map(|g| (g.model_id.clone(), g.dim))
    }
}

/// Re-embeds up to [`SAMPLE_ROWS`] rows of the group; `Ok(lowest cosine)` when every one
/// matches its stored vector, `Err(why)` otherwise.
fn same_vectors(
    source: &Source,
    embedder: &dyn Embedder,
    table: &str,
    label: &str,
    bytes: usize,
) -> Result<std::result::Result<f64, String>> {
    let sample = source.vector_sample(table, label, bytes as i64, SAMPLE_ROWS)?;
    let texts: Vec<&str> = sample.iter().map(|(t, _)| t.as_str()).collect();
    if texts.is_empty() {
        return Ok(Err("no row to check".into()));
    }
    let fresh = match embedder.embed(&texts) {
        Ok(fresh) => fresh,
        Err(err) => {
            return Ok(Err(format!(
                "the embedder could not check a sample ({err})"
            )));
        }
    };
    let mut lowest = f64::INFINITY;
    for ((_, blob), now) in sample.iter().zip(&fresh) {
        let Some(stored) = decode(blob, EmbeddingFormat::F32) else {
            return Ok(Err("a stored vector is not float32".into()));
        };
        // A stored or new vector without length (or of another width) matches nothing.
        let cos = cosine(&stored, now).unwrap_or(0.0);
        lowest = lowest.min(cos);
    }
    if lowest >= SAME_VECTOR_COSINE {
        Ok(Ok(lowest))
    } else {
        Ok(Err(format!(
            "re-embedding a sample of its texts gives other vectors (lowest cosine {lowest:.3})"
        )))
    }
}
