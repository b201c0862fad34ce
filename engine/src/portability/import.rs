//! `import_memories`: reads a CPersona JSONL export, validates the whole file first (a
//! malformed file or a header whose counts disagree writes nothing), then writes in batched
//! transactions. Re-importing a file skips every row (dedup on the exact bucket).
//! Pre-computed embeddings are kept when their width matches the store; others are queued.

use serde_json::{Map, Value};

use super::assoc::{self, Pending};
use super::fields::{axes, flag, json_text, note, optional_instant, string};
use super::record::{Embedding, ImportOutcome, ImportRequest, Record};
use crate::config::EngineConfig;
use crate::error::{Error, Result};
use crate::progress::Progress;
use crate::store::{Store, VectorTarget};
use crate::text::{Refusal, check_key, sanitise, sanitise_cut};
use crate::time::{now_ms, parse_iso8601_ms};
use crate::vector::{base64_decode, decode, encode};

/// `import_memories`.
/// A cancel seen by `progress` is honoured while the file is read and validated and until
/// the first batch commits: a cancelled import wrote nothing. Once a batch has landed the
/// import runs to its end (the file is already validated whole), so the store never holds
/// part of a file that was not asked to finish.
pub(crate) fn import_memories(
    store: &Store,
    config: &EngineConfig,
    req: &ImportRequest,
    progress: &Progress<'_>,
) -> Result<ImportOutcome> {
    if let Some(no_persist) = store.no_persist("import_memories", &req.session_key) {
        return Ok(ImportOutcome {
            ok: true,
            dry_run: true,
            no_persist: Some(no_persist),
            ..Default::default()
        });
    }
    if !req.target_agent_id.is_empty() {
        crate::text::check_agent(&req.target_agent_id)?;
    }
    let text = super::paths::read_import(
        &config.export_dir,
        &config.db_path,
        &req.input_path,
        config.max_import_bytes,
    )?;
    let mut outcome = ImportOutcome {
        ok: true,
        dry_run: req.dry_run,
        ..Default::default()
    };
    let mut pending = Pending::default();
    let records = parse(
        store,
        config,
        &text,
        &req.target_agent_id,
        &mut outcome,
        &mut pending,
    )?;
    let target = (store.vector_target(), store.settings.embedding_format);
    progress.check("import_memories, while validating the file")?;
    let total = records.len() as u64;
    progress.report(0, Some(total), "file validated; writing");
    if req.dry_run {
        store.write_dry(|tx| {
            super::apply::apply(tx, &records, &target, &mut outcome)?;
            assoc::apply(tx, &pending, &records, &mut outcome)
        })?;
    } else {
        let mut written = 0u64;
        for batch in records.chunks(config.import_batch_rows) {
            let bulk_min = config.import_bulk_min_rows;
            store.write(|tx| {
                super::apply::apply_batch(tx, batch, &target, bulk_min, &mut outcome)?;
                // Inside the first batch's transaction: a cancel now rolls it back.
                if written == 0 {
                    progress.check("import_memories, before its first commit")?;
                }
                Ok(())
            })?;
            written += batch.len() as u64;
            let message = if written < total {
                "writing (past the first commit a cancel no longer stops the import)"
            } else {
                "written"
            };
            progress.report(written, Some(total), message);
        }
        if !pending.is_empty() {
            store.write(|tx| assoc::apply(tx, &pending, &records, &mut outcome))?;
        }
    }
    Ok(outcome)
}

/// Reads and validates every line; structural problems fail the whole import, row
/// problems skip the row and are listed.
fn parse(
    store: &Store,
    config: &EngineConfig,
    text: &str,
    target_agent: &str,
    outcome: &mut ImportOutcome,
    pending: &mut Pending,
) -> Result<Vec<Record>> {
    let target = store.vector_target();
    let mut records = Vec::new();
    let mut header: Option<Map<String, Value>> = None;
    let (mut n_memories, mut n_episodes, mut n_profiles) = (0usize, 0usize, 0usize);
    let (mut n_entities, mut n_relations) = (0usize, 0usize);
    let mut dim_note: Option<(String, usize)> = None;
    for (idx, line) in text.lines().enumerate() {
        let line_no = idx + 1;
        if line.trim().is_empty() {
            continue;
        }
        let malformed = |reason: String| Error::ImportMalformed {
            line: line_no,
            reason,
        };
        let Value::Object(obj) =
            serde_json::from_str::<Value>(line).map_err(|e| malformed(e.to_string()))?
        else {
            return Err(malformed("not a JSON object".into()));
        };
        let kind = obj
            .get("_type")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned();
        if header.is_none() {
            let version = obj.get("version").and_then(Value::as_str).unwrap_or("");
            if kind != "header" || !version.starts_with("cpersona-export/1.") {
                return Err(malformed(
                    "the first line must be a cpersona-export/1.x header".into(),
                ));
            }
            header = Some(obj);
            continue;
        }
        let row = match kind.as_str() {
            "memory" => {
                n_memories += 1;
                memory_record(store, config, &obj, target_agent, &target, &mut dim_note)
            }
            "episode" => {
                n_episodes += 1;
                episode_record(store, config, &obj, target_agent, &target, &mut dim_note)
            }
            "profile" => {
                n_profiles += 1;
                profile_record(config, &obj, target_agent)
            }
            "entity" | "relation" => {
                let parsed = if kind == "entity" {
                    n_entities += 1;
                    assoc::entity_line(&obj, line_no, target_agent)
                        .map(|e| pending.entities.push(e))
                } else {
                    n_relations += 1;
                    assoc::relation_line(&obj, line_no, target_agent)
                        .map(|r| pending.relations.push(r))
                };
                match parsed {
                    Ok(()) => {}
                    Err(err) if err.is_user_error() => {
                        outcome.dropped_associations += 1;
                        note(outcome, format!("line {line_no}: {err}"));
                    }
                    Err(err) => return Err(err),
                }
                continue;
            }
            "header" => return Err(malformed("a second header".into())),
            other => return Err(malformed(format!("unknown _type {other:?}"))),
        };
        match row {
            Ok(record) => {
                // The exported id, so association lines can name this row.
                if let Some(old) = obj.get("id").and_then(Value::as_i64) {
                    match record {
                        Record::Memory { .. } => pending.memory_records.insert(old, records.len()),
                        Record::Episode { .. } => {
                            pending.episode_records.insert(old, records.len())
                        }
                        Record::Profile { .. } => None,
                    };
                }
                records.push(record);
            }
            Err(err) if err.is_user_error() => {
                match kind.as_str() {
                    "memory" => outcome.skipped_memories += 1,
                    "episode" => outcome.skipped_episodes += 1,
                    _ => {}
                }
                note(outcome, format!("line {line_no}: {err}"));
            }
            Err(err) => return Err(err),
        }
    }
    let Some(header) = header else {
        return Err(Error::ImportMalformed {
            line: 1,
            reason: "empty file".into(),
        });
    };
    let count = |key: &str| header.get(key).and_then(Value::as_u64).map(|n| n as usize);
    let declared = [
        ("memory_count", count("memory_count"), n_memories),
        ("episode_count", count("episode_count"), n_episodes),
        ("profile_count", count("profile_count"), n_profiles),
        ("entity_count", count("entity_count"), n_entities),
        ("relation_count", count("relation_count"), n_relations),
    ];
    for (key, declared, found) in declared {
        if let Some(declared) = declared.filter(|d| *d != found) {
            return Err(Error::ImportMalformed {
                line: 1,
                reason: format!("header {key} is {declared} but the file holds {found}"),
            });
        }
    }
    if let Some((reason, n_rows)) = dim_note {
        note(
            outcome,
            format!("{n_rows} pre-computed embeddings not kept, queued for re-embedding: {reason}"),
        );
    }
    Ok(records)
}

fn memory_record(
    store: &Store,
    config: &EngineConfig,
    obj: &Map<String, Value>,
    target_agent: &str,
    target: &VectorTarget,
    dim_note: &mut Option<(String, usize)>,
) -> Result<Record> {
    let axes = axes(obj, target_agent)?;
    let msg_id = string(obj, "msg_id");
    check_key("msg_id", &msg_id)?;
    let content = sanitise(&string(obj, "content"), config.max_content_chars)
        .map_err(|refusal| Error::invalid("content", refusal.reason()))?;
    let timestamp = string(obj, "timestamp");
    let timestamp_ms = parse_iso8601_ms(&timestamp)?;
    let created_at_ms = optional_instant(obj, "created_at")?.unwrap_or(timestamp_ms);
    Ok(Record::Memory {
        id: None,
        msg_id,
        content,
        source: json_text(obj.get("source"), "{}"),
        metadata: json_text(obj.get("metadata"), "{}"),
        timestamp,
        timestamp_ms,
        created_at_ms,
        locked: flag(obj.get("locked")),
        recall_count: obj.get("recall_count").and_then(Value::as_i64).unwrap_or(0),
        last_recalled_at_ms: None,
        embedding: imported_embedding(store, obj, target, dim_note),
        axes,
    })
}

fn episode_record(
    store: &Store,
    config: &EngineConfig,
    obj: &Map<String, Value>,
    target_agent: &str,
    target: &VectorTarget,
    dim_note: &mut Option<(String, usize)>,
) -> Result<Record> {
    let axes = axes(obj, target_agent)?;
    let summary = sanitise(&string(obj, "summary"), config.max_content_chars)
        .map_err(|refusal| Error::invalid("summary", refusal.reason()))?;
    let keywords = match sanitise(&string(obj, "keywords"), config.max_content_chars) {
        Ok(keywords) => keywords,
        Err(refusal @ Refusal::TooLong { .. }) => {
            return Err(Error::invalid("keywords", refusal.reason()));
        }
        Err(_) => String::new(),
    };
    let instant = |key: &str| -> Result<Option<(String, i64)>> {
        match obj.get(key).and_then(Value::as_str) {
            Some(text) if !text.is_empty() => Ok(Some((text.to_owned(), parse_iso8601_ms(text)?))),
            _ => Ok(None),
        }
    };
    Ok(Record::Episode {
        id: None,
        summary,
        keywords,
        start: instant("start_time")?,
        end: instant("end_time")?,
        created_at_ms: optional_instant(obj, "created_at")?.unwrap_or_else(now_ms),
        resolved: flag(obj.get("resolved")),
        embedding: imported_embedding(store, obj, target, dim_note),
        axes,
    })
}

fn profile_record(
    config: &EngineConfig,
    obj: &Map<String, Value>,
    target_agent: &str,
) -> Result<Record> {
    let agent_id = if target_agent.is_empty() {
        string(obj, "agent_id")
    } else {
        target_agent.to_owned()
    };
    crate::text::check_agent(&agent_id)?;
    let content = sanitise_cut(&string(obj, "content"), config.max_profile_chars)
        .map_err(|refusal| Error::invalid("profile", refusal.reason()))?;
    Ok(Record::Profile {
        agent_id,
        project_id: string(obj, "project_id"),
        user_id: String::new(),
        content: content.text,
        updated_at_ms: optional_instant(obj, "updated_at")?.unwrap_or_else(now_ms),
    })
}

/// Keeps `embedding_b64` when it decodes to the store's width (and, when the line names
/// its model, the store's model); otherwise the row is queued.
fn imported_embedding(
    store: &Store,
    obj: &Map<String, Value>,
    target: &VectorTarget,
    dim_note: &mut Option<(String, usize)>,
) -> Embedding {
    let Some(b64) = obj.get("embedding_b64").and_then(Value::as_str) else {
        return Embedding::Queue("imported without an embedding".into());
    };
    let mut refuse = |reason: String| {
        let entry = dim_note.get_or_insert_with(|| (reason.clone(), 0));
        entry.1 += 1;
        Embedding::Queue(reason)
    };
    let model = obj
        .get("embedding_model")
        .and_then(Value::as_str)
        .unwrap_or("");
    if !model.is_empty() && model != target.model_id {
        return refuse(format!(
            "embedding model {model} is not the store's {}",
            target.model_id
        ));
    }
    let Some(vector) =
        base64_decode(b64).and_then(|bytes| decode(&bytes, crate::vector::EmbeddingFormat::F32))
    else {
        return refuse("embedding_b64 is not base64 of little-endian f32".into());
    };
    match encode(&vector, target.dim, store.settings.embedding_format) {
        Ok(blob) => Embedding::Blob(blob),
        Err(err) => refuse(err.to_string()),
    }
}
