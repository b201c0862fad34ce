//! Converting a CPersona store: a CPersona 2.5/2.6 SQLite file (schema 13 to 21) read
//! read-only (`read`), its rows turned into the import's records and written through the
//! import's own apply path in batched transactions, each memory and episode keeping its id
//! (so `mem:<id>` / `ep:<id>` refs, and the associations naming them, stay true), every
//! counter, lock and timestamp kept; vectors judged per group (`vectors`); associations
//! copied (`assoc`). Nodes, blocks, FTS and indexes are derived and regenerated here.
//! The outcome lists what was carried per kind and what was not, with why: never silent.
//! It never writes the original, and refuses a target that already holds rows.

mod assoc;
pub(crate) mod read;
mod report;
mod vectors;

use crate::progress::Progress;
use std::path::Path;
use std::sync::Arc;

use self::read::{MemoryRow, Source};
use self::report::instant_or;
use super::record::{Axes, ImportOutcome, Record};
use crate::config::EngineConfig;
use crate::embed::Embedder;
use crate::embed::hash::HASH_MODEL_ID;
use crate::error::{Error, Result};
use crate::store::Store;
use crate::time::parse_iso8601_ms;
use rusqlite::{Transaction, params};

pub use read::StoreKind;
pub use report::{Carried, ConvertOutcome, ConvertRequest, NotCarried, SourceStamp, VectorGroup};

/// The `meta` key holding the stamp of the CPersona file a store was converted from.
pub const SOURCE_META_KEY: &str = "converted_from_cpersona";

/// Rows per committed batch.
const BATCH_ROWS: usize = 500;

/// What the file at `path` is, without changing it.
pub fn inspect(path: &Path) -> Result<StoreKind> {
    read::inspect(path)
}

/// The stamp of the CPersona file at `path` now (read-only).
pub fn stamp(path: &Path) -> Result<SourceStamp> {
    let source = Source::open(path)?;
    read::stamp(path, &source)
}

/// The stamp recorded in the store at `config.db_path` when it was converted, if it was.
pub(crate) fn recorded_stamp(store: &Store) -> Result<Option<SourceStamp>> {
    let text = store.read(|conn| read::meta(conn, SOURCE_META_KEY))?;
    Ok(text.and_then(|t| serde_json::from_str(&t).ok()))
}

/// Converts `req.source` into a new store at `config.db_path`, opened (and migrated) here
/// with `embedder`. The store must hold no rows.
pub(crate) fn convert(
    config: &EngineConfig,
    embedder: Arc<dyn Embedder>,
    req: &ConvertRequest,
    progress: &Progress<'_>,
) -> Result<ConvertOutcome> {
    let source = Source::open(&req.source)?;
    let stamp = read::stamp(&req.source, &source)?;
    let store = Store::open(config, Arc::clone(&embedder))?;
    refuse_non_empty(&store, config)?;
    let target = store.vector_target();
    let plan = vectors::plan(&source, embedder.as_ref(), &target)?;
    let mut outcome = ConvertOutcome {
        ok: true,
        dry_run: req.dry_run,
        target: config.db_path.display().to_string(),
        vectors: plan.groups.clone(),
        ..ConvertOutcome::default()
    };
    let total =
        (source.rows("memories") + source.rows("episodes") + source.rows("profiles")).max(0) as u64;
    let mut done = 0u64;
    progress.report(done, Some(total), "rows read");
    let format = store.settings.embedding_format;
    let apply_target = (target.clone(), format);
    let bulk_min = config.import_bulk_min_rows;
    let mut counts = ImportOutcome::default();
    let mut write_all = |tx_for: &mut RunInTx<'_>, outcome: &mut ConvertOutcome| -> Result<()> {
        let mut after = 0i64;
        loop {
            let rows = source.memories(after, BATCH_ROWS)?;
            let Some(last) = rows.last() else { break };
            after = last.id;
            let n_rows = rows.len() as u64;
            let records: Vec<Record> = rows
                .into_iter()
                .map(|row| memory_record(row, &plan, &target, format, outcome))
                .collect();
            tx_for(&mut |tx| {
                super::apply::apply_batch(tx, &records, &apply_target, bulk_min, &mut counts)?;
                explain_skipped(tx, &records, outcome)
            })?;
            done += n_rows;
            progress.report(done, Some(total), "rows read");
        }
        let mut after = 0i64;
        loop {
            let rows = source.episodes(after, BATCH_ROWS)?;
            let Some(last) = rows.last() else { break };
            after = last.id;
            let n_rows = rows.len() as u64;
            let records: Vec<Record> = rows
                .into_iter()
                .map(|row| Record::Episode {
                    id: Some(row.id),
                    axes: Axes {
                        agent_id: row.agent_id,
                        project_id: row.project_id,
                        channel: row.channel,
                    },
                    start: row
                        .start_time
                        .filter(|t| !t.is_empty())
                        .and_then(|t| optional_instant(t, outcome, row.id, "start_time")),
                    end: row
                        .end_time
                        .filter(|t| !t.is_empty())
                        .and_then(|t| optional_instant(t, outcome, row.id, "end_time")),
                    created_at_ms: instant_or(
                        row.created_at.as_deref(),
                        outcome,
                        "episode created_at",
                    ),
                    resolved: row.resolved,
                    embedding: plan.embedding(
                        "episodes",
                        &row.embedding_model,
                        row.embedding,
                        &target,
                        format,
                    ),
                    summary: row.summary,
                    keywords: row.keywords,
                })
                .collect();
            tx_for(&mut |tx| {
                super::apply::apply_batch(tx, &records, &apply_target, bulk_min, &mut counts)
            })?;
            done += n_rows;
            progress.report(done, Some(total), "rows read");
        }
        let profiles: Vec<Record> = source
            .profiles()?
            .into_iter()
            .map(
                |(agent_id, project_id, user_id, content, updated_at)| Record::Profile {
                    agent_id,
                    project_id,
                    user_id,
                    content,
                    updated_at_ms: instant_or(updated_at.as_deref(), outcome, "profile updated_at"),
                },
            )
            .collect();
        let n_profiles = profiles.len();
        tx_for(&mut |tx| {
            super::apply::apply(tx, &profiles, &apply_target, &mut counts)?;
            assoc::copy(&source, tx, outcome)?;
            carry_sequences(&source, tx)?;
            record_meta(tx, &stamp, &plan, embedder.as_ref())
        })?;
        done += n_profiles as u64;
        progress.report(done, Some(total), "rows read");
        Ok(())
    };
    if req.dry_run {
        store.write_dry(|tx| {
            write_all(&mut |f| f(tx), &mut outcome)?;
            finish_counts(tx, &mut outcome)
        })?;
    } else {
        write_all(&mut |f| store.write(|tx| f(tx)), &mut outcome)?;
        store.write(|tx| finish_counts(tx, &mut outcome))?;
    }
    outcome.carried.vectors = counts.embedded_rows;
    outcome.carried.queued_for_embedding = counts.queued_embeddings;
    if let Some((model, dim)) = plan.dominant_foreign() {
        let then = if embedder.identity().model_id == HASH_MODEL_ID {
            "the configured embedder is the hashed fallback, which never replaces a real \
             model's vectors: configure the model that wrote them, or a real one and run \
             `cpersona reembed`"
        } else {
            "they are re-embedded with the configured embedder in the background (serve) or by \
             `cpersona reembed`; until then recall covers the rows already done"
        };
        outcome.note(format!(
            "vectors of another model kept (largest group {model}/{dim}): {then}"
        ));
    }
    list_tables(&source, &req.source, &mut outcome);
    outcome.source = Some(stamp);
    Ok(outcome)
}

/// One batch's writes, run by the caller in a transaction it owns.
type BatchWrites<'a> = dyn FnMut(&Transaction<'_>) -> Result<()> + 'a;
/// Runs one batch's writes in a committed (or, for a dry run, the one rolled-back) transaction.
type RunInTx<'a> = dyn FnMut(&mut BatchWrites<'_>) -> Result<()> + 'a;

/// The store must be new: a conversion never mixes with rows already there.
fn refuse_non_empty(store: &Store, config: &EngineConfig) -> Result<()> {
    let rows: i64 = store.read(|conn| {
        Ok(conn.query_row(
            "SELECT (SELECT COUNT(*) FROM memories) + (SELECT COUNT(*) FROM episodes) + \
             (SELECT COUNT(*) FROM profiles) + (SELECT COUNT(*) FROM entities)",
            [],
            |r| r.get(0),
        )?)
    })?;
    if rows > 0 {
        return Err(Error::TargetNotEmpty {
            path: config.db_path.display().to_string(),
        });
    }
    Ok(())
}

fn memory_record(
    row: MemoryRow,
    plan: &vectors::Plan,
    target: &crate::store::VectorTarget,
    format: crate::vector::EmbeddingFormat,
    outcome: &mut ConvertOutcome,
) -> Record {
    let created_at_ms = instant_or(row.created_at.as_deref(), outcome, "memory created_at");
    let timestamp_ms = match parse_iso8601_ms(&row.timestamp) {
        Ok(ms) => ms,
        Err(_) => {
            outcome.note(format!(
                "mem:{}: timestamp {:?} is not ISO-8601; its instant is created_at's",
                row.id, row.timestamp
            ));
            created_at_ms
        }
    };
    let last_recalled_at_ms = row
        .last_recalled_at
        .as_deref()
        .filter(|t| !t.is_empty())
        .map(|t| instant_or(Some(t), outcome, "last_recalled_at"));
    if row.locked {
        outcome.carried.locked += 1;
    }
    if row.recall_count > 0 {
        outcome.carried.recall_counters += 1;
    }
    Record::Memory {
        id: Some(row.id),
        embedding: plan.embedding(
            "memories",
            &row.embedding_model,
            row.embedding,
            target,
            format,
        ),
        axes: Axes {
            agent_id: row.agent_id,
            project_id: row.project_id,
            channel: row.channel,
        },
        msg_id: row.msg_id,
        content: row.content,
        source: row.source,
        metadata: row.metadata,
        timestamp: row.timestamp,
        timestamp_ms,
        created_at_ms,
        locked: row.locked,
        recall_count: row.recall_count,
        last_recalled_at_ms,
    }
}

/// Lists each memory of `records` the apply skipped, with the row it duplicates; the
/// counters of a skipped row are not counted as carried.
fn explain_skipped(
    tx: &Transaction<'_>,
    records: &[Record],
    outcome: &mut ConvertOutcome,
) -> Result<()> {
    for record in records {
        let Record::Memory {
            id: Some(id),
            axes,
            msg_id,
            content,
            locked,
            recall_count,
            ..
        } = record
        else {
            continue;
        };
        let present: bool = tx
            .prepare_cached("SELECT EXISTS(SELECT 1 FROM memories WHERE id = ?)")?
            .query_row([id], |r| r.get(0))?;
        if present {
            continue;
        }
        let twin = crate::portability::apply::memory_twin(tx, axes, content, msg_id)?;
        outcome.carried.locked -= usize::from(*locked);
        outcome.carried.recall_counters -= usize::from(*recall_count > 0);
        outcome.refuse(match twin {
            Some(twin) => format!(
                "mem:{id} not carried: it repeats mem:{twin} (same agent, project and channel \
                 with the same content or msg_id), which this store keeps once"
            ),
            None => format!("mem:{id} not carried: the store refused it"),
        });
    }
    Ok(())
}

/// Final counts, read from what the transaction holds.
fn finish_counts(tx: &Transaction<'_>, outcome: &mut ConvertOutcome) -> Result<()> {
    let count = |table: &str| -> Result<usize> {
        let n: i64 = tx.query_row(&format!("SELECT COUNT(*) FROM {table}"), [], |r| r.get(0))?;
        Ok(n.max(0) as usize)
    };
    outcome.carried.memories = count("memories")?;
    outcome.carried.episodes = count("episodes")?;
    outcome.carried.profiles = count("profiles")?;
    Ok(())
}

/// Each AUTOINCREMENT high-water mark at least the original's, so no id a CPersona row once
/// had (and an agent may still name) is handed to another row.
fn carry_sequences(source: &Source, tx: &Transaction<'_>) -> Result<()> {
    for (name, seq) in source.sequences()? {
        if !matches!(
            name.as_str(),
            "memories" | "episodes" | "profiles" | "entities" | "relations"
        ) {
            continue;
        }
        let n = tx.execute(
            "UPDATE sqlite_sequence SET seq = MAX(seq, ?2) WHERE name = ?1",
            params![name, seq],
        )?;
        if n == 0 {
            tx.execute(
                "INSERT INTO sqlite_sequence(name, seq) VALUES (?1, ?2)",
                params![name, seq],
            )?;
        }
    }
    Ok(())
}

/// Records the source's stamp and, when vectors of another model were kept, the identity
/// that makes this store re-embed them (unless the embedder is the hashed fallback).
fn record_meta(
    tx: &Transaction<'_>,
    stamp: &SourceStamp,
    plan: &vectors::Plan,
    embedder: &dyn Embedder,
) -> Result<()> {
    let set = |key: &str, value: String| -> Result<()> {
        tx.execute(
            "INSERT INTO meta(key, value) VALUES (?1, ?2) \
             ON CONFLICT(key) DO UPDATE SET value = excluded.value",
            params![key, value],
        )?;
        Ok(())
    };
    set(
        SOURCE_META_KEY,
        serde_json::to_string(stamp).map_err(|e| Error::invalid("source", e.to_string()))?,
    )?;
    if let Some((model, dim)) = plan.dominant_foreign() {
        set("embedding_model", model.clone())?;
        set("embedding_dim", dim.to_string())?;
        let identity = embedder.identity();
        if identity.model_id != HASH_MODEL_ID {
            set("reembed_to_model", identity.model_id.clone())?;
            set("reembed_to_dim", identity.dim.to_string())?;
            set("reembed_from_model", model)?;
            set("reembed_from_dim", dim.to_string())?;
        }
    }
    Ok(())
}

/// Sorts the original's tables into carried, regenerated and not carried, and lists the
/// files beside it that are not read.
fn list_tables(source: &Source, path: &Path, outcome: &mut ConvertOutcome) {
    for (name, &rows) in &source.tables {
        let (regenerated, reason) = match name.as_str() {
            "memories" | "episodes" | "profiles" | "entities" | "entity_aliases"
            | "entity_mentions" | "relations" => continue,
            "sqlite_sequence" => continue,
            "record_nodes" | "record_blocks" | "record_block_vectors" => (
                true,
                "derived from each record's text: rewritten by this store's own divider on \
                 write, their vectors filled by the embedder (serve, or `cpersona reembed`)",
            ),
            "schema_version" => (false, "CPersona's schema steps; this store keeps its own"),
            "pending_memory_tasks" => (
                false,
                "CPersona's background task queue; rows without a vector are queued here instead",
            ),
            "block_log_clock"
            | "record_block_changes"
            | "vector_log_clock"
            | "record_vector_changes" => (
                false,
                "CPersona's index change logs; this store keeps its own change_log",
            ),
            "folders" | "folder_members" => (
                false,
                "declared folders (CPersona 2.6's organize tools) have no place in cpersona-rs yet",
            ),
            _ => (false, "a table this converter does not know"),
        };
        if rows == 0 {
            continue;
        }
        let entry = NotCarried {
            what: format!("table {name}"),
            rows,
            reason: reason.into(),
        };
        if regenerated {
            outcome.regenerated.push(entry);
        } else {
            outcome.not_carried.push(entry);
        }
    }
    outcome.regenerated.push(NotCarried {
        what: "FTS5 tables memories_fts, episodes_fts".into(),
        rows: source.rows("memories") + source.rows("episodes"),
        reason: "indexed by this store's triggers as rows are written".into(),
    });
    // Files beside the database: `<name>.calibration.json`, index files.
    let Some(name) = path.file_name().map(|n| n.to_string_lossy().into_owned()) else {
        return;
    };
    let folder = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let Ok(entries) = std::fs::read_dir(folder) else {
        return;
    };
    let mut beside: Vec<String> = entries
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|f| f.starts_with(&format!("{name}.")) || f == &format!("{name}-wal"))
        .collect();
    beside.sort();
    for file in beside {
        let reason = if file.ends_with("-wal") {
            "its committed rows were read through SQLite (read-only); the log itself is not copied"
        } else if file.ends_with(".calibration.json") {
            "CPersona's calibrated thresholds: derived, recomputed here by calibrate_threshold"
        } else {
            "a file beside the database (an index or sidecar of CPersona's): derived or \
             CPersona-specific, not read"
        };
        outcome.not_carried.push(NotCarried {
            what: format!("file {file}"),
            rows: 0,
            reason: reason.into(),
        });
    }
}

fn optional_instant(
    text: String,
    outcome: &mut ConvertOutcome,
    id: i64,
    field: &str,
) -> Option<(String, i64)> {
    match parse_iso8601_ms(&text) {
        Ok(ms) => Some((text, ms)),
        Err(_) => {
            outcome.note(format!(
                "ep:{id}: {field} {text:?} is not a timestamp; left empty"
            ));
            None
        }
    }
}
