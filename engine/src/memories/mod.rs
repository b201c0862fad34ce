//! The memory write path: `store` (CPersona's dedup contract: skip, never upsert),
//! `update_memory`, `delete_memory`, `lock_memory` / `unlock_memory`. Every write validates
//! first and writes nothing on bad input; the change log is appended by triggers in the same
//! transaction.

mod dedup;
pub(crate) mod list;

use rusqlite::{OptionalExtension, params};
use serde::Serialize;
use serde_json::Value;

use crate::config::EngineConfig;
use crate::error::{Error, Result};
use crate::scope::Scope;
use crate::store::Store;
use crate::store::pauses::NoPersist;
use crate::text::{check_agent, check_key, sanitise};
use crate::time::{format_ms_python, now_ms, parse_iso8601_ms};

use self::dedup::{Bucket, Duplicate, probe_duplicate, unique_index_twin};

use crate::config::FutureTimestampMode;

/// `store`'s arguments (CPersona 2.6 top-level form; the server folds the legacy `message`
/// object into it).
#[derive(Clone, Debug, Default)]
pub struct StoreRequest {
    /// Owner (required).
    pub agent_id: String,
    /// The text.
    pub content: String,
    /// The caller's message id (`id`), used for dedup; `""` = none.
    pub msg_id: String,
    /// `source`; `None` = the default `{type: "Agent", id: agent_id, name: ""}`.
    pub source: Option<Value>,
    /// ISO-8601 with any offset; `None` = now.
    pub timestamp: Option<String>,
    /// Free JSON; `None` = `{}`.
    pub metadata: Option<Value>,
    /// Store already locked.
    pub lock: bool,
    /// `""` = channel-less.
    pub channel: String,
    /// `""` = global pool.
    pub project_id: String,
    /// Pause bucket (`""` = process).
    pub session_key: String,
}

/// `store`'s result word.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum StoreResult {
    /// A new row landed.
    Stored,
    /// A duplicate (or a pause): nothing written.
    Skipped,
    /// Bad input: nothing written.
    Rejected,
}

/// A row id, or CPersona's `"no-persist"` marker while paused.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(untagged)]
pub enum StoreId {
    /// The row id.
    Row(i64),
    /// `"no-persist"`.
    Marker(&'static str),
}

/// A timestamp ahead of the clock (2.6 `timestamp_ahead_of_clock`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct TimestampAhead {
    /// The caller's text.
    pub timestamp: String,
    /// How far ahead.
    pub ahead_by_seconds: i64,
    /// The allowance it exceeded.
    pub allowance_seconds: i64,
}

/// `store`'s response.
#[derive(Clone, Debug, PartialEq, Serialize, schemars::JsonSchema)]
pub struct StoreOutcome {
    /// False only for `rejected`.
    pub ok: bool,
    /// stored / skipped / rejected.
    pub result: StoreResult,
    /// The new row, the duplicate it matched, or `"no-persist"`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub id: Option<StoreId>,
    /// Whether the row got its vector now (false: queued).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub embedded: Option<bool>,
    /// Why skipped or rejected.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Present (true) when stored locked.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub locked: Option<bool>,
    /// Present when the timestamp is ahead of the clock.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timestamp_ahead_of_clock: Option<TimestampAhead>,
    /// `persisted: false`, `dry_run: true` while paused.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub persisted: Option<bool>,
    /// See `persisted`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dry_run: Option<bool>,
    /// The overflow nodes and blocks the text was divided into (see `derived/`).
    #[serde(flatten)]
    pub derived: crate::derived::DerivedReport,
}

/// `update_memory`'s arguments.
#[derive(Clone, Debug, Default)]
pub struct UpdateMemoryRequest {
    /// The row.
    pub memory_id: i64,
    /// New text.
    pub content: String,
    /// The owner (required); another agent's row reads as not found.
    pub agent_id: String,
    /// Pause bucket.
    pub session_key: String,
}

/// `update_memory`'s response.
#[derive(Clone, Debug, PartialEq, Serialize, schemars::JsonSchema)]
pub struct UpdateMemoryOutcome {
    /// True.
    pub ok: bool,
    /// The row (`null` while paused).
    pub updated_id: Option<i64>,
    /// Whether the new text got its vector now (false: queued).
    pub embedded: bool,
    /// The paused shape.
    #[serde(flatten, skip_serializing_if = "Option::is_none")]
    pub no_persist: Option<NoPersist>,
    /// The overflow nodes and blocks the new text was divided into.
    #[serde(flatten)]
    pub derived: crate::derived::DerivedReport,
}

/// Arguments of `delete_memory`, `lock_memory` and `unlock_memory`.
#[derive(Clone, Debug, Default)]
pub struct MemoryIdRequest {
    /// The row.
    pub memory_id: i64,
    /// The owner (required); another agent's row reads as not found.
    pub agent_id: String,
    /// Pause bucket.
    pub session_key: String,
}

/// `delete_memory`'s response.
#[derive(Clone, Debug, PartialEq, Serialize, schemars::JsonSchema)]
pub struct DeleteMemoryOutcome {
    /// True.
    pub ok: bool,
    /// The row (`null` while paused).
    pub deleted_id: Option<i64>,
    /// The paused shape.
    #[serde(flatten, skip_serializing_if = "Option::is_none")]
    pub no_persist: Option<NoPersist>,
}

/// `lock_memory`'s response.
#[derive(Clone, Debug, PartialEq, Serialize, schemars::JsonSchema)]
pub struct LockMemoryOutcome {
    /// True.
    pub ok: bool,
    /// The row (`null` while paused).
    pub locked_id: Option<i64>,
    /// The paused shape.
    #[serde(flatten, skip_serializing_if = "Option::is_none")]
    pub no_persist: Option<NoPersist>,
}

/// `unlock_memory`'s response.
#[derive(Clone, Debug, PartialEq, Serialize, schemars::JsonSchema)]
pub struct UnlockMemoryOutcome {
    /// True.
    pub ok: bool,
    /// The row (`null` while paused).
    pub unlocked_id: Option<i64>,
    /// The paused shape.
    #[serde(flatten, skip_serializing_if = "Option::is_none")]
    pub no_persist: Option<NoPersist>,
}

/// A store request after validation: exactly what will be written.
struct ValidStore {
    content: String,
    source: String,
    metadata: String,
    timestamp: String,
    timestamp_ms: i64,
    ahead: Option<TimestampAhead>,
}

/// `store`: writes one memory unless a duplicate is visible (same msg_id in the agent's
/// project or the global pool; or identical content there, in the same channel or a
/// channel-less row). Skips, never upserts. Bad input answers `rejected` and writes
/// nothing; only internal failures are `Err`.
pub(crate) fn store(
    store: &Store,
    config: &EngineConfig,
    req: &StoreRequest,
) -> Result<StoreOutcome> {
    if let Some(no_persist) = store.no_persist("store", &req.session_key) {
        return Ok(StoreOutcome {
            ok: true,
            result: StoreResult::Skipped,
            id: Some(StoreId::Marker("no-persist")),
            embedded: Some(false),
            reason: Some(no_persist.reason),
            locked: None,
            timestamp_ahead_of_clock: None,
            persisted: Some(false),
            dry_run: Some(true),
            derived: Default::default(),
        });
    }
    let valid = match validate_store(config, req) {
        Ok(valid) => valid,
        Err(err) if err.is_user_error() => return Ok(rejected(err.to_string())),
        Err(err) => return Err(err),
    };
    let scope = Scope::write_visible(&req.agent_id, &req.project_id, &req.channel);
    if let Some(duplicate) =
        store.read(|conn| probe_duplicate(conn, &scope, &req.msg_id, &valid.content))?
    {
        return Ok(skipped(Some(duplicate)));
    }
    // Embed before taking the writer lock (no model call inside a transaction).
    let embedding = store.embed_for_store(&[valid.content.as_str()]);
    let target = store.vector_target();
    let format = store.settings.embedding_format;
    let mut outcome =
        store.write(|tx| {
            if let Some(duplicate) = probe_duplicate(tx, &scope, &req.msg_id, &valid.content)? {
                return Ok(skipped(Some(duplicate)));
            }
            let (blob, model, dim, format_tag) = match &embedding {
                Ok(blobs) => (
                    blobs.first().cloned(),
                    target.model_id.as_str(),
                    target.dim,
                    format.tag(),
                ),
                Err(_) => (None, "", 0, ""),
            };
            let n_inserted = tx.prepare_cached(
            "INSERT OR IGNORE INTO memories(agent_id, project_id, channel, msg_id, content, \
             source, metadata, timestamp, timestamp_ms, created_at_ms, locked, embedding, \
             embedding_model, embedding_dim, embedding_format) \
             VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        )?
        .execute(params![
            req.agent_id, req.project_id, req.channel, req.msg_id, valid.content,
            valid.source, valid.metadata, valid.timestamp, valid.timestamp_ms, now_ms(),
            req.lock, blob, model, dim as i64, format_tag,
        ])?;
            if n_inserted == 0 {
                let bucket = Bucket {
                    agent_id: &req.agent_id,
                    project_id: &req.project_id,
                    channel: &req.channel,
                    msg_id: &req.msg_id,
                };
                return Ok(skipped(unique_index_twin(tx, &bucket, &valid.content)?));
            }
            let id = tx.last_insert_rowid();
            let embedded = blob.is_some();
            if let Err(reason) = &embedding {
                crate::store::queue::enqueue(tx, "memories", id, &req.agent_id, reason)?;
            }
            Ok(StoreOutcome {
                ok: true,
                result: StoreResult::Stored,
                id: Some(StoreId::Row(id)),
                embedded: Some(embedded),
                reason: None,
                locked: req.lock.then_some(true),
                timestamp_ahead_of_clock: valid.ahead.clone(),
                persisted: None,
                dry_run: None,
                derived: Default::default(),
            })
        })?;
    if let (StoreResult::Stored, Some(StoreId::Row(id))) = (outcome.result, &outcome.id) {
        outcome.derived = crate::derived::derived_after_write(store, crate::refs::Ref::mem(*id));
    }
    Ok(outcome)
}

/// `update_memory`: replaces the text of an unlocked memory and re-embeds it (queued when
/// the embedder fails). Refuses text another memory of the same bucket already holds.
pub(crate) fn update_memory(
    store: &Store,
    config: &EngineConfig,
    req: &UpdateMemoryRequest,
) -> Result<UpdateMemoryOutcome> {
    crate::text::require_owner(&req.agent_id)?;
    if let Some(no_persist) = store.no_persist("update_memory", &req.session_key) {
        return Ok(UpdateMemoryOutcome {
            ok: true,
            updated_id: None,
            embedded: false,
            no_persist: Some(no_persist),
            derived: Default::default(),
        });
    }
    let content = sanitise(&req.content, config.max_content_chars)
        .map_err(|refusal| Error::invalid("content", refusal.reason()))?;
    store.read(|conn| check_memory(conn, req.memory_id, &req.agent_id, Some("edited")))?;
    let embedding = store.embed_for_store(&[content.as_str()]);
    let target = store.vector_target();
    let format = store.settings.embedding_format;
    let mut outcome = store.write(|tx| {
        let owner = check_memory(tx, req.memory_id, &req.agent_id, Some("edited"))?;
        let twin: Option<i64> = tx
            .query_row(
                "SELECT m.id FROM memories m JOIN memories o ON o.id = ?1 \
                 WHERE m.agent_id = o.agent_id AND m.project_id = o.project_id \
                 AND m.channel = o.channel AND m.content = ?2 AND m.id != ?1",
                params![req.memory_id, content],
                |row| row.get(0),
            )
            .optional()?;
        if let Some(twin) = twin {
            return Err(Error::invalid(
                "content",
                format!("memory {twin} already holds this content in the same scope"),
            ));
        }
        let (blob, model, dim, format_tag) = match &embedding {
            Ok(blobs) => (
                blobs.first().cloned(),
                target.model_id.as_str(),
                target.dim,
                format.tag(),
            ),
            Err(_) => (None, "", 0, ""),
        };
        tx.execute(
            "UPDATE memories SET content = ?, embedding = ?, embedding_model = ?, \
             embedding_dim = ?, embedding_format = ? WHERE id = ? AND locked = 0",
            params![content, blob, model, dim as i64, format_tag, req.memory_id],
        )?;
        match &embedding {
            Ok(_) => crate::store::queue::dequeue(tx, "memories", req.memory_id)?,
            Err(reason) => {
                crate::store::queue::enqueue(tx, "memories", req.memory_id, &owner, reason)?
            }
        }
        Ok(UpdateMemoryOutcome {
            ok: true,
            updated_id: Some(req.memory_id),
            embedded: embedding.is_ok(),
            no_persist: None,
            derived: Default::default(),
        })
    })?;
    outcome.derived =
        crate::derived::derived_after_write(store, crate::refs::Ref::mem(req.memory_id));
    Ok(outcome)
}

/// `delete_memory`: deletes an unlocked memory (its FTS postings, queue entry, nodes,
/// blocks and associations go with it, by trigger).
pub(crate) fn delete_memory(store: &Store, req: &MemoryIdRequest) -> Result<DeleteMemoryOutcome> {
    crate::text::require_owner(&req.agent_id)?;
    if let Some(no_persist) = store.no_persist("delete_memory", &req.session_key) {
        return Ok(DeleteMemoryOutcome {
            ok: true,
            deleted_id: None,
            no_persist: Some(no_persist),
        });
    }
    store.write(|tx| {
        check_memory(tx, req.memory_id, &req.agent_id, Some("deleted"))?;
        tx.execute(
            "DELETE FROM memories WHERE id = ? AND locked = 0",
            [req.memory_id],
        )?;
        Ok(DeleteMemoryOutcome {
            ok: true,
            deleted_id: Some(req.memory_id),
            no_persist: None,
        })
    })
}

/// `lock_memory`: protects a memory from update, delete and merge moves. Not a ranking
/// boost. Locking a locked memory succeeds.
pub(crate) fn lock_memory(store: &Store, req: &MemoryIdRequest) -> Result<LockMemoryOutcome> {
    crate::text::require_owner(&req.agent_id)?;
    if let Some(no_persist) = store.no_persist("lock_memory", &req.session_key) {
        return Ok(LockMemoryOutcome {
            ok: true,
            locked_id: None,
            no_persist: Some(no_persist),
        });
    }
    set_locked(store, req, true)?;
    Ok(LockMemoryOutcome {
        ok: true,
        locked_id: Some(req.memory_id),
        no_persist: None,
    })
}

/// `unlock_memory`: lifts the protection.
pub(crate) fn unlock_memory(store: &Store, req: &MemoryIdRequest) -> Result<UnlockMemoryOutcome> {
    crate::text::require_owner(&req.agent_id)?;
    if let Some(no_persist) = store.no_persist("unlock_memory", &req.session_key) {
        return Ok(UnlockMemoryOutcome {
            ok: true,
            unlocked_id: None,
            no_persist: Some(no_persist),
        });
    }
    set_locked(store, req, false)?;
    Ok(UnlockMemoryOutcome {
        ok: true,
        unlocked_id: Some(req.memory_id),
        no_persist: None,
    })
}

fn set_locked(store: &Store, req: &MemoryIdRequest, locked: bool) -> Result<()> {
    store.write(|tx| {
        check_memory(tx, req.memory_id, &req.agent_id, None)?;
        tx.execute(
            "UPDATE memories SET locked = ? WHERE id = ? AND locked != ?",
            params![locked, req.memory_id, locked],
        )?;
        Ok(())
    })
}

fn validate_store(config: &EngineConfig, req: &StoreRequest) -> Result<ValidStore> {
    check_agent(&req.agent_id)?;
    check_key("project_id", &req.project_id)?;
    check_key("channel", &req.channel)?;
    check_key("id", &req.msg_id)?;
    check_key("session_key", &req.session_key)?;
    let now = now_ms();
    let (timestamp, timestamp_ms) = match &req.timestamp {
        Some(text) => {
            if text.chars().count() > crate::text::MAX_TIMESTAMP_CHARS {
                return Err(Error::invalid("timestamp", "longer than 64 chars"));
            }
            (text.clone(), parse_iso8601_ms(text)?)
        }
        None => (format_ms_python(now), now),
    };
    let ahead_secs = (timestamp_ms - now) / 1000;
    let future = config.future_timestamps;
    let ahead = match future.mode {
        _ if ahead_secs <= future.allowance_secs => None,
        FutureTimestampMode::Off => None,
        FutureTimestampMode::Reject => {
            return Err(Error::invalid(
                "timestamp",
                format!(
                    "{timestamp:?} is {ahead_secs}s ahead of this clock (allowance {}s; \
                     CPERSONA_FUTURE_TIMESTAMP_MODE=reject)",
                    future.allowance_secs
                ),
            ));
        }
        FutureTimestampMode::Warn => Some(TimestampAhead {
            timestamp: timestamp.clone(),
            ahead_by_seconds: ahead_secs,
            allowance_seconds: future.allowance_secs,
        }),
    };
    let source = crate::source::normalise(req.source.as_ref(), &req.agent_id).to_string();
    let metadata = match &req.metadata {
        None | Some(Value::Null) => "{}".to_owned(),
        Some(value) => value.to_string(),
    };
    for (field, json) in [("source", &source), ("metadata", &metadata)] {
        let n_chars = json.chars().count();
        if n_chars > config.max_metadata_chars {
            return Err(Error::invalid(
                field,
                format!(
                    "too large ({n_chars} chars, max {})",
                    config.max_metadata_chars
                ),
            ));
        }
        if json.contains("\\u0000") {
            return Err(Error::invalid(field, "holds a NUL character"));
        }
    }
    let content = sanitise(&req.content, config.max_content_chars)
        .map_err(|refusal| Error::invalid("content", refusal.reason()))?;
    Ok(ValidStore {
        content,
        source,
        metadata,
        timestamp,
        timestamp_ms,
        ahead,
    })
}

fn rejected(reason: String) -> StoreOutcome {
    StoreOutcome {
        ok: false,
        result: StoreResult::Rejected,
        id: None,
        embedded: None,
        reason: Some(reason),
        locked: None,
        timestamp_ahead_of_clock: None,
        persisted: None,
        dry_run: None,
        derived: Default::default(),
    }
}

/// `skipped` as a duplicate: `id` and `reason` name the stored memory it matched (a unique
/// index collision with no row found names none).
fn skipped(duplicate: Option<Duplicate>) -> StoreOutcome {
    StoreOutcome {
        ok: true,
        result: StoreResult::Skipped,
        id: duplicate.map(|d| StoreId::Row(d.id)),
        embedded: None,
        reason: Some(
            duplicate.map_or_else(|| "duplicate (unique index)".to_owned(), Duplicate::reason),
        ),
        locked: None,
        timestamp_ahead_of_clock: None,
        persisted: None,
        dry_run: None,
        derived: Default::default(),
    }
}

/// Checks that memory `id` exists, belongs to `agent_id` (required) and, when `action` is
/// given, is not locked against it; another agent's row reads as missing, its lock untold.
pub(crate) fn check_memory(
    conn: &rusqlite::Connection,
    id: i64,
    agent_id: &str,
    action: Option<&'static str>,
) -> Result<String> {
    crate::text::require_owner(agent_id)?;
    let row: Option<(String, bool)> = conn
        .query_row(
            "SELECT agent_id, locked FROM memories WHERE id = ?",
            [id],
            |row| Ok((row.get(0)?, row.get(1)?)),
        )
        .optional()?;
    let Some((owner, locked)) = row.filter(|(owner, _)| owner == agent_id) else {
        return Err(Error::MemoryNotFound { id });
    };
    if let (Some(action), true) = (action, locked) {
        return Err(Error::MemoryLocked { id, action });
    }
    Ok(owner)
}
