//! The write half of `import_memories`: one validated batch of records into the store inside
//! the caller's transaction (the bulk FTS path for large batches, `super::bulk`). It never
//! parses or validates input; `import.rs` has done that before anything is written.

use rusqlite::{OptionalExtension, Transaction, params};

use super::record::{Axes, Embedding, ImportOutcome, Record};
use crate::error::Result;
use crate::store::VectorTarget;

/// The store's vector target and the format rows are written in.
pub(crate) type Target = (VectorTarget, crate::vector::EmbeddingFormat);

/// One committed batch: large ones take the bulk FTS path (`super::bulk`), all within `tx`.
pub(crate) fn apply_batch(
    tx: &Transaction<'_>,
    records: &[Record],
    target: &Target,
    bulk_min_rows: usize,
    outcome: &mut ImportOutcome,
) -> Result<()> {
    let memories = records
        .iter()
        .filter(|r| matches!(r, Record::Memory { .. }))
        .count();
    let deferred = if memories >= bulk_min_rows {
        super::bulk::DeferredFts::begin(tx)?
    } else {
        None
    };
    apply(tx, records, target, outcome)?;
    if let Some(deferred) = deferred {
        deferred.finish(tx)?;
    }
    Ok(())
}

pub(crate) fn apply(
    tx: &Transaction<'_>,
    records: &[Record],
    target: &Target,
    outcome: &mut ImportOutcome,
) -> Result<()> {
    for record in records {
        match record {
            Record::Memory {
                id,
                axes,
                msg_id,
                content,
                source,
                metadata,
                timestamp,
                timestamp_ms,
                created_at_ms,
                locked,
                recall_count,
                last_recalled_at_ms,
                embedding,
            } => {
                let (blob, model, dim, tag) = embedding_columns(embedding, target);
                let n = tx
                    .prepare_cached(
                        "INSERT OR IGNORE INTO memories(id, agent_id, project_id, channel, msg_id, \
                         content, source, metadata, timestamp, timestamp_ms, created_at_ms, locked, \
                         recall_count, last_recalled_at_ms, embedding, embedding_model, \
                         embedding_dim, embedding_format) \
                         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    )?
                    .execute(params![
                        id, axes.agent_id, axes.project_id, axes.channel, msg_id, content, source,
                        metadata, timestamp, timestamp_ms, created_at_ms, locked, recall_count,
                        last_recalled_at_ms, blob, model, dim, tag,
                    ])?;
                if n == 0 {
                    outcome.skipped_memories += 1;
                    continue;
                }
                outcome.imported_memories += 1;
                crate::derived::write_offsets(
                    tx,
                    crate::refs::Ref::mem(tx.last_insert_rowid()),
                    content,
                    [&axes.agent_id, &axes.project_id, &axes.channel],
                )?;
                finish_embedding(tx, "memories", &axes.agent_id, embedding, outcome)?;
            }
            Record::Episode {
                id,
                axes,
                summary,
                keywords,
                start,
                end,
                created_at_ms,
                resolved,
                embedding,
            } => {
                // A row keeping its source's id is that row, not a copy of another.
                let exists: bool = id.is_none() && tx
                    .prepare_cached(
                        "SELECT EXISTS(SELECT 1 FROM episodes WHERE agent_id = ? AND project_id = ? \
                         AND channel = ? AND summary = ?)",
                    )?
                    .query_row(params![axes.agent_id, axes.project_id, axes.channel, summary], |row| row.get(0))?;
                if exists {
                    outcome.skipped_episodes += 1;
                    continue;
                }
                let (blob, model, dim, tag) = embedding_columns(embedding, target);
                tx.prepare_cached(
                    "INSERT INTO episodes(id, agent_id, project_id, channel, summary, keywords, \
                     start_time, end_time, start_ms, end_ms, resolved, created_at_ms, embedding, \
                     embedding_model, embedding_dim, embedding_format) \
                     VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                )?
                .execute(params![
                    id,
                    axes.agent_id,
                    axes.project_id,
                    axes.channel,
                    summary,
                    keywords,
                    start.as_ref().map(|s| &s.0),
                    end.as_ref().map(|s| &s.0),
                    start.as_ref().map(|s| s.1),
                    end.as_ref().map(|s| s.1),
                    resolved,
                    created_at_ms,
                    blob,
                    model,
                    dim,
                    tag,
                ])?;
                outcome.imported_episodes += 1;
                crate::derived::write_offsets(
                    tx,
                    crate::refs::Ref::ep(tx.last_insert_rowid()),
                    summary,
                    [&axes.agent_id, &axes.project_id, &axes.channel],
                )?;
                finish_embedding(tx, "episodes", &axes.agent_id, embedding, outcome)?;
            }
            Record::Profile {
                agent_id,
                project_id,
                user_id,
                content,
                updated_at_ms,
            } => {
                tx.prepare_cached(
                    "INSERT INTO profiles(agent_id, project_id, user_id, content, updated_at_ms) \
                     VALUES (?, ?, ?, ?, ?) ON CONFLICT(agent_id, user_id) DO UPDATE SET \
                     content = excluded.content, project_id = excluded.project_id, \
                     updated_at_ms = excluded.updated_at_ms WHERE content != excluded.content",
                )?
                .execute(params![
                    agent_id,
                    project_id,
                    user_id,
                    content,
                    updated_at_ms
                ])?;
                outcome.profile_updated = true;
            }
        }
    }
    Ok(())
}

type EmbeddingColumns<'a> = (Option<&'a [u8]>, &'a str, i64, &'static str);

fn embedding_columns<'a>(embedding: &'a Embedding, target: &'a Target) -> EmbeddingColumns<'a> {
    match embedding {
        Embedding::Blob(blob) => (
            Some(blob.as_slice()),
            &target.0.model_id,
            target.0.dim as i64,
            target.1.tag(),
        ),
        Embedding::Foreign {
            blob,
            model_id,
            dim,
        } => (
            Some(blob.as_slice()),
            model_id,
            *dim as i64,
            crate::vector::EmbeddingFormat::F32.tag(),
        ),
        Embedding::Queue(_) => (None, "", 0, ""),
    }
}

fn finish_embedding(
    tx: &Transaction<'_>,
    table: &str,
    agent_id: &str,
    embedding: &Embedding,
    outcome: &mut ImportOutcome,
) -> Result<()> {
    match embedding {
        Embedding::Blob(_) | Embedding::Foreign { .. } => outcome.embedded_rows += 1,
        Embedding::Queue(reason) => {
            crate::store::queue::enqueue(tx, table, tx.last_insert_rowid(), agent_id, reason)?;
            outcome.queued_embeddings += 1;
        }
    }
    Ok(())
}

/// The memory a row with these axes, `content` and `msg_id` would duplicate (the dedup
/// buckets: the same content in its channel, or the same non-empty msg_id), the oldest first.
pub(super) fn memory_twin(
    tx: &Transaction<'_>,
    axes: &Axes,
    content: &str,
    msg_id: &str,
) -> Result<Option<i64>> {
    Ok(tx
        .prepare_cached(
            "SELECT id FROM memories WHERE agent_id = ?1 AND project_id = ?2 AND \
             ((channel = ?3 AND content = ?4) OR (?5 != '' AND msg_id = ?5)) \
             ORDER BY id LIMIT 1",
        )?
        .query_row(
            params![
                axes.agent_id,
                axes.project_id,
                axes.channel,
                content,
                msg_id
            ],
            |r| r.get(0),
        )
        .optional()?)
}
