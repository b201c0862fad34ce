//! What recall reads from SQLite besides its arms, always within the caller's `Scope`: one
//! row by ref (hydration, held seats, the trace's pool), its node and block ranges for
//! `get_contents`, the gate's inputs (the pool in scope, a stored calibration) and the
//! blank-query recency listing. A row of another agent is never read.

use rusqlite::types::Value;
use rusqlite::{Connection, OptionalExtension};

use crate::error::Result;
use crate::recall::stages::candidate::{Arm, ArmList};
use crate::recall::stages::contents::StoredContent;
use crate::recall::stages::gate::{GateConfig, GateInput};
use crate::recall::stages::shape::Hydrated;
use crate::refs::{Ref, RefKind};
use crate::scope::Scope;
use crate::store::VectorTarget;

/// The version of the scoring a stored calibration applies to; a row with another value is
/// ignored (int8 cosine of the vector arm, gate on cosine only).
pub const SCORING_VERSION: &str = "cosine-int8-v1";

/// The pool (rows in scope) is counted up to this many rows per table: the gate's heuristic
/// saturates at 499 rows (`ln(pool+1)/ln 500` reaches 1), so a larger count changes nothing
/// but costs a scan (10 ms at 100K rows). The trace's `gate.pool` shows the capped count.
pub const POOL_COUNT_CAP: usize = 1_000;

/// JSON text as a value; `None` when it does not parse.
pub(crate) fn parse_json(text: &str) -> Option<serde_json::Value> {
    serde_json::from_str(text).ok()
}

/// Reads one row by ref within `scope`; `None` when absent or outside it.
pub(crate) fn read_scoped(
    conn: &Connection,
    scope: &Scope,
    r: Ref,
) -> Result<Option<StoredContent>> {
    let (pred, mut params) = scope.predicate("");
    params.push(Value::Integer(r.id));
    let row = match r.kind {
        RefKind::Mem => conn
            .prepare_cached(&format!(
                "SELECT content, source, timestamp, msg_id FROM memories WHERE {pred} AND id = ?"
            ))?
            .query_row(rusqlite::params_from_iter(params), |row| {
                let msg_id: String = row.get(3)?;
                Ok(StoredContent {
                    text: row.get(0)?,
                    source: parse_json(&row.get::<_, String>(1)?),
                    timestamp: Some(row.get(2)?),
                    msg_id: (!msg_id.is_empty()).then_some(msg_id),
                    resolved: None,
                    ..StoredContent::default()
                })
            })
            .optional()?,
        RefKind::Ep => conn
            .prepare_cached(&format!(
                "SELECT summary, start_time, resolved FROM episodes WHERE {pred} AND id = ?"
            ))?
            .query_row(rusqlite::params_from_iter(params), |row| {
                Ok(StoredContent {
                    text: row.get(0)?,
                    source: Some(serde_json::json!({"System": "episode"})),
                    timestamp: row.get(1)?,
                    msg_id: None,
                    resolved: Some(row.get::<_, i64>(2)? != 0),
                    ..StoredContent::default()
                })
            })
            .optional()?,
    };
    Ok(row)
}

/// The row the pass shows for one stored row (episodes are prefixed `[Episode] `).
pub(crate) fn hydrated(r: Ref, stored: StoredContent) -> Hydrated {
    Hydrated {
        content: match r.kind {
            RefKind::Mem => stored.text,
            RefKind::Ep => format!("[Episode] {}", stored.text),
        },
        source: stored.source,
        timestamp: stored.timestamp,
        msg_id: stored.msg_id,
    }
}

/// One row read within `scope` as the pass shows it; `None` when absent or outside it.
pub(crate) fn hydrate(conn: &Connection, scope: &Scope, r: Ref) -> Result<Option<Hydrated>> {
    Ok(read_scoped(conn, scope, r)?.map(|stored| hydrated(r, stored)))
}

/// `stored` with its overflow node ranges and block ranges (for `get_contents`).
pub(crate) fn with_ranges(
    conn: &Connection,
    r: Ref,
    stored: Option<StoredContent>,
) -> Result<Option<StoredContent>> {
    let Some(mut stored) = stored else {
        return Ok(None);
    };
    let mut stmt = conn.prepare_cached(
        "SELECT start_char, end_char FROM record_nodes WHERE parent_kind = ? AND parent_id = ? \
         ORDER BY node_index",
    )?;
    let rows = stmt.query_map(rusqlite::params![r.kind.prefix(), r.id], |row| {
        Ok((
            row.get::<_, i64>(0)? as usize,
            row.get::<_, i64>(1)? as usize,
        ))
    })?;
    stored.nodes = rows.collect::<rusqlite::Result<_>>()?;
    stored.blocks = crate::derived::read_blocks(conn, r)?
        .into_iter()
        .map(|b| b.span)
        .collect();
    Ok(Some(stored))
}

/// The gate's input: the pool in scope (counted up to a cap the heuristic cannot tell from
/// more) and the calibrated threshold for the agent that matches the store's embedder.
pub(crate) fn gate_input(
    conn: &Connection,
    scope: &Scope,
    target: &VectorTarget,
    gate: &GateConfig,
    agent_id: &str,
    deep: bool,
) -> Result<GateInput> {
    let (pred, params) = scope.predicate("");
    // Never below the pool size at which a configured heuristic saturates.
    let cap = POOL_COUNT_CAP.max(gate.heuristic_pool.ceil().max(0.0) as usize + 1);
    let pool: i64 = conn.query_row(
        &format!(
            "SELECT (SELECT COUNT(*) FROM (SELECT 1 FROM memories WHERE {pred} LIMIT {cap})) + \
             (SELECT COUNT(*) FROM (SELECT 1 FROM episodes WHERE {pred} LIMIT {cap}))"
        ),
        rusqlite::params_from_iter(params.iter().chain(params.iter())),
        |row| row.get(0),
    )?;
    Ok(GateInput {
        calibrated: calibrated_threshold(conn, target, agent_id)?,
        pool: pool.max(0) as u64,
        deep,
    })
}

/// The calibrated cosine threshold for `agent_id` (else the global one) that matches the
/// store's embedder and scoring, if any.
fn calibrated_threshold(
    conn: &Connection,
    target: &VectorTarget,
    agent_id: &str,
) -> Result<Option<f64>> {
    let mut stmt = conn.prepare_cached(
        "SELECT payload FROM calibration WHERE agent_id IN (?1, '') AND embedding_model = ?2 \
         AND embedding_dim = ?3 AND scoring_version = ?4 ORDER BY agent_id = '' LIMIT 1",
    )?;
    let payload: Option<String> = stmt
        .query_row(
            rusqlite::params![
                agent_id,
                target.model_id,
                target.dim as i64,
                SCORING_VERSION
            ],
            |row| row.get(0),
        )
        .optional()?;
    Ok(payload
        .and_then(|p| parse_json(&p))
        .and_then(|v| v.get("threshold")?.as_f64()))
}

/// The blank-query recency listing: the newest memories in scope, as the memories arm.
pub(crate) fn recency(conn: &Connection, scope: &Scope, depth: usize) -> Result<ArmList> {
    let (pred, mut params) = scope.predicate("");
    params.push(Value::Integer(depth as i64));
    let mut stmt = conn.prepare_cached(&format!(
        "SELECT id FROM memories WHERE {pred} ORDER BY created_at_ms DESC, id DESC LIMIT ?"
    ))?;
    let ids = stmt
        .query_map(rusqlite::params_from_iter(params), |row| {
            row.get::<_, i64>(0)
        })?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    Ok(ArmList::ranked(
        Arm::MemoryKeyword,
        ids.into_iter().map(|id| (Ref::mem(id), None)),
    ))
}
