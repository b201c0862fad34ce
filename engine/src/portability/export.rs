//! `export_memories`: one consistent snapshot written as JSONL to a temporary file, fsynced
//! and linked (or, with `overwrite`, renamed) into place inside the export folder
//! (`paths`). It never leaves a half-written file under the final name, never replaces a
//! file unasked and never lands on the store's own files.

use std::path::PathBuf;

use serde::Serialize;
use serde_json::{Value, json};

use crate::config::EngineConfig;
use crate::error::{Error, Result};
use crate::progress::Progress;
use crate::scope::Scope;
use crate::store::Store;
use crate::time::{format_ms, now_ms};
use crate::vector::{base64_encode, decode, encode, format_from_tag};

/// Lines between two progress reports (and cancellation checks).
const PROGRESS_EVERY: usize = 1_000;

/// `export_memories`' arguments.
#[derive(Clone, Debug, Default)]
pub struct ExportRequest {
    /// `""` = every agent.
    pub agent_id: String,
    /// Where to write.
    pub output_path: PathBuf,
    /// Add `embedding_b64` (little-endian f32, base64) to rows that have a vector.
    pub include_embeddings: bool,
    /// Replace an existing file (atomically, by rename); without it an existing file is
    /// refused and left as it was.
    pub overwrite: bool,
}

/// `export_memories`' response.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct ExportOutcome {
    /// True.
    pub ok: bool,
    /// The file written.
    pub path: String,
    /// Memories written.
    pub memories: usize,
    /// Episodes written.
    pub episodes: usize,
    /// Profiles written.
    pub profiles: usize,
    /// Association entities written (`_type: "entity"`; absent when none).
    #[serde(skip_serializing_if = "is_zero")]
    pub entities: usize,
    /// Association relations written (`_type: "relation"`; absent when none).
    #[serde(skip_serializing_if = "is_zero")]
    pub relations: usize,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

/// `export_memories`.
/// A cancel seen by `progress` stops the export before its file is put in place: the
/// temporary file is removed and the target name never appears.
pub(crate) fn export_memories(
    store: &Store,
    config: &EngineConfig,
    req: &ExportRequest,
    progress: &Progress<'_>,
) -> Result<ExportOutcome> {
    let target = super::paths::export_target(
        &config.export_dir,
        &config.db_path,
        &req.output_path,
        req.overwrite,
    )?;
    let agent = (!req.agent_id.is_empty()).then_some(req.agent_id.as_str());
    let (pred, values) = Scope::read(agent, None, None).predicate("");
    // The file carries recall counters: the credit still waiting in memory goes in first.
    store.flush_credits()?;
    let lines = store.read(|conn| {
        conn.execute_batch("BEGIN")?;
        let res = snapshot_lines(conn, &pred, &values, req.include_embeddings);
        conn.execute_batch("ROLLBACK")?;
        res
    })?;
    let (memories, episodes, profiles, entities, relations, body) = lines;
    let header = json!({
        "_type": "header",
        "version": super::EXPORT_VERSION,
        "agent_id": req.agent_id,
        "exported_at": format_ms(now_ms()),
        "memory_count": memories,
        "episode_count": episodes,
        "has_profile": profiles > 0,
        "profile_count": profiles,
    });
    // Only a file that holds associations names their counts: without any, the header
    // is CPersona's own, key for key.
    let mut header = header;
    if entities + relations > 0
        && let Value::Object(map) = &mut header
    {
        map.insert("entity_count".into(), json!(entities));
        map.insert("relation_count".into(), json!(relations));
    }
    progress.check("export_memories, while reading the store")?;
    let total = body.len() as u64;
    let mut cancelled = false;
    let written = target.write(&config.db_path, |out| {
        writeln!(out, "{header}")?;
        for (done, line) in body.iter().enumerate() {
            if done % PROGRESS_EVERY == 0 {
                progress.report(done as u64, Some(total), "writing the file");
                if progress.check("export_memories").is_err() {
                    cancelled = true;
                    return Err(std::io::Error::other("cancelled by the caller"));
                }
            }
            writeln!(out, "{line}")?;
        }
        Ok(())
    });
    if cancelled {
        return Err(Error::Cancelled {
            during: "export_memories, while writing the file",
        });
    }
    written?;
    progress.report(total, Some(total), "written");
    Ok(ExportOutcome {
        ok: true,
        path: target.path.display().to_string(),
        memories,
        episodes,
        profiles,
        entities,
        relations,
    })
}

/// Memories, episodes, profiles, entities, relations, and the lines.
type Snapshot = (usize, usize, usize, usize, usize, Vec<Value>);

fn snapshot_lines(
    conn: &rusqlite::Connection,
    pred: &str,
    values: &[rusqlite::types::Value],
    include_embeddings: bool,
) -> Result<Snapshot> {
    let mut body = Vec::new();
    let params = || rusqlite::params_from_iter(values.iter());
    let mut stmt = conn.prepare(&format!(
        "SELECT id, agent_id, msg_id, content, source, timestamp, metadata, created_at_ms, \
         project_id, channel, locked, recall_count, last_recalled_at_ms, embedding, \
         embedding_format, embedding_model FROM memories WHERE {pred} ORDER BY id"
    ))?;
    let mut rows = stmt.query(params())?;
    let mut n_memories = 0;
    while let Some(row) = rows.next()? {
        let source: String = row.get(4)?;
        let metadata: String = row.get(6)?;
        let mut line = json!({
            "_type": "memory",
            "id": row.get::<_, i64>(0)?,
            "agent_id": row.get::<_, String>(1)?,
            "msg_id": row.get::<_, String>(2)?,
            "content": row.get::<_, String>(3)?,
            "source": serde_json::from_str::<Value>(&source).unwrap_or(Value::String(source)),
            "timestamp": row.get::<_, String>(5)?,
            "metadata": serde_json::from_str::<Value>(&metadata).unwrap_or(Value::String(metadata)),
            "created_at": format_ms(row.get(7)?),
            "project_id": row.get::<_, String>(8)?,
            "channel": row.get::<_, String>(9)?,
            "locked": row.get::<_, bool>(10)?,
            "recall_count": row.get::<_, i64>(11)?,
            "last_recalled_at": row.get::<_, Option<i64>>(12)?.map(format_ms),
        });
        if include_embeddings {
            add_embedding(
                &mut line,
                row.get(13)?,
                &row.get::<_, String>(14)?,
                row.get(15)?,
            );
        }
        body.push(line);
        n_memories += 1;
    }
    let mut stmt = conn.prepare(&format!(
        "SELECT id, agent_id, summary, keywords, start_time, end_time, created_at_ms, resolved, \
         project_id, channel, embedding, embedding_format, embedding_model FROM episodes \
         WHERE {pred} ORDER BY id"
    ))?;
    let mut rows = stmt.query(params())?;
    let mut n_episodes = 0;
    while let Some(row) = rows.next()? {
        let mut line = json!({
            "_type": "episode",
            "id": row.get::<_, i64>(0)?,
            "agent_id": row.get::<_, String>(1)?,
            "summary": row.get::<_, String>(2)?,
            "keywords": row.get::<_, String>(3)?,
            "start_time": row.get::<_, Option<String>>(4)?,
            "end_time": row.get::<_, Option<String>>(5)?,
            "created_at": format_ms(row.get(6)?),
            "resolved": row.get::<_, bool>(7)?,
            "project_id": row.get::<_, String>(8)?,
            "channel": row.get::<_, String>(9)?,
        });
        if include_embeddings {
            add_embedding(
                &mut line,
                row.get(10)?,
                &row.get::<_, String>(11)?,
                row.get(12)?,
            );
        }
        body.push(line);
        n_episodes += 1;
    }
    let (agent_pred, agent_values) = (pred, values);
    let mut stmt = conn.prepare(&format!(
        "SELECT agent_id, user_id, content, updated_at_ms, project_id FROM profiles \
         WHERE {agent_pred} ORDER BY id"
    ))?;
    let mut rows = stmt.query(rusqlite::params_from_iter(agent_values.iter()))?;
    let mut n_profiles = 0;
    while let Some(row) = rows.next()? {
        body.push(json!({
            "_type": "profile",
            "agent_id": row.get::<_, String>(0)?,
            "user_id": row.get::<_, String>(1)?,
            "content": row.get::<_, String>(2)?,
            "updated_at": format_ms(row.get(3)?),
            "project_id": row.get::<_, String>(4)?,
        }));
        n_profiles += 1;
    }
    let (n_entities, n_relations, assoc_lines) = super::assoc::export_lines(conn, pred, values)?;
    body.extend(assoc_lines);
    Ok((
        n_memories,
        n_episodes,
        n_profiles,
        n_entities,
        n_relations,
        body,
    ))
}

/// Adds `embedding_b64` (always little-endian f32, CPersona's format) and `embedding_model`.
fn add_embedding(line: &mut Value, blob: Option<Vec<u8>>, tag: &str, model: String) {
    let (Some(blob), Some(format)) = (blob, format_from_tag(tag)) else {
        return;
    };
    let Some(vector) = decode(&blob, format) else {
        return;
    };
    let Ok(f32_blob) = encode(&vector, vector.len(), crate::vector::EmbeddingFormat::F32) else {
        return;
    };
    if let Value::Object(map) = line {
        map.insert(
            "embedding_b64".into(),
            Value::String(base64_encode(&f32_blob)),
        );
        map.insert("embedding_model".into(), Value::String(model));
    }
}
