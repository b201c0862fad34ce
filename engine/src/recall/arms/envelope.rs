//! The envelope fetch of the Deliberative loop: the memories in the caller's scope whose event
//! time (`timestamp_ms`) lies in one period, newest first, cut at a row cap, each scored by
//! its cosine to the query vector when it has one of the store's model. This is the loop's
//! second and last fetch; the stages re-filter what it returns.
//!
//! It reads only through `Scope`, so it can never reach past the isolation boundary, and it
//! never ranks beyond a cosine: ordering is the loop's (`recall::deliberate`).

use rusqlite::Connection;
use rusqlite::types::Value;

use crate::error::Result;
use crate::recall::stages::cue::Period;
use crate::recall::stages::cue_plan::{Fetched, PoolContext};
use crate::recall::stages::cue_spread::RELATION_CAP;
use crate::recall::stages::deliberate::CueRow;
use crate::refs::Ref;
use crate::scope::Scope;
use crate::vector::{decode, format_from_tag};

/// The query vector and the store's vector identity it must match.
pub(crate) struct QueryVector<'a> {
    pub(crate) vector: &'a [f32],
    pub(crate) model_id: &'a str,
    pub(crate) dim: usize,
}

fn cosine(a: &[f32], b: &[f32]) -> Option<f64> {
    let (mut dot, mut na, mut nb) = (0.0f64, 0.0f64, 0.0f64);
    for (x, y) in a.iter().zip(b) {
        let (x, y) = (f64::from(*x), f64::from(*y));
        dot += x * y;
        na += x * x;
        nb += y * y;
    }
    (na > 0.0 && nb > 0.0).then(|| dot / (na.sqrt() * nb.sqrt()))
}

/// Reads the scope's memories with `timestamp_ms` in `period`, at most `cap`, and for cue
/// propagation their sources (not the default `{type: "Agent", name: ""}` one, which every
/// row an agent writes without a source shares), the episodes meeting the period and (when `relations`: the
/// associations are on) the declared record relations touching them.
pub(crate) fn fetch(
    conn: &Connection,
    scope: &Scope,
    period: Period,
    query: Option<&QueryVector<'_>>,
    cap: usize,
    relations: bool,
) -> Result<Fetched> {
    let (pred, mut params) = scope.predicate("");
    params.push(Value::Integer(period.start_ms));
    params.push(Value::Integer(period.end_ms));
    params.push(Value::Integer(cap.saturating_add(1) as i64));
    let mut stmt = conn.prepare_cached(&format!(
        "SELECT id, timestamp_ms, embedding, embedding_format, embedding_model, embedding_dim, \
         CASE WHEN json_valid(source) AND NOT (json_extract(source, '$.type') = 'Agent' \
         AND COALESCE(json_extract(source, '$.name'), '') = '') \
         THEN CAST(json_extract(source, '$.id') AS TEXT) END \
         FROM memories WHERE {pred} AND timestamp_ms >= ? AND timestamp_ms < ? \
         ORDER BY timestamp_ms DESC, id ASC LIMIT ?"
    ))?;
    let mut out = stmt.query(rusqlite::params_from_iter(params))?;
    let mut rows = Vec::new();
    let mut context = PoolContext::default();
    let mut cut = false;
    while let Some(row) = out.next()? {
        if rows.len() >= cap {
            cut = true;
            break;
        }
        let id: i64 = row.get(0)?;
        let at_ms: i64 = row.get(1)?;
        if let Some(source) = row.get::<_, Option<String>>(6)? {
            context.sources.insert(Ref::mem(id), source);
        }
        let score = match query {
            Some(q) => {
                let blob: Option<Vec<u8>> = row.get(2)?;
                let tag: Option<String> = row.get(3)?;
                let model: Option<String> = row.get(4)?;
                let dim: Option<i64> = row.get(5)?;
                match (blob, tag) {
                    (Some(blob), Some(tag))
                        if model.as_deref() == Some(q.model_id) && dim == Some(q.dim as i64) =>
                    {
                        format_from_tag(&tag)
                            .and_then(|f| decode(&blob, f))
                            .and_then(|v| cosine(q.vector, &v))
                    }
                    _ => None,
                }
            }
            None => None,
        };
        rows.push(CueRow {
            r#ref: Ref::mem(id),
            at_ms,
            cosine: score,
        });
    }
    drop(out);
    // The episodes whose span meets the period, in the same fetch (same scope, same cap).
    let (pred, mut params) = scope.predicate("");
    params.push(Value::Integer(period.end_ms));
    params.push(Value::Integer(period.start_ms));
    params.push(Value::Integer(cap as i64));
    let mut stmt = conn.prepare_cached(&format!(
        "SELECT id, start_ms, end_ms FROM episodes WHERE {pred} \
         AND start_ms IS NOT NULL AND end_ms IS NOT NULL AND start_ms < ? AND end_ms >= ? \
         ORDER BY start_ms DESC, id ASC LIMIT ?"
    ))?;
    let spans = stmt.query_map(rusqlite::params_from_iter(params), |row| {
        Ok((
            Ref::ep(row.get(0)?),
            Period {
                start_ms: row.get(1)?,
                end_ms: row.get(2)?,
            },
        ))
    })?;
    for span in spans {
        context.episodes.push(span?);
    }
    if relations {
        related(conn, scope, period, &mut context)?;
    }
    Ok(Fetched { rows, cut, context })
}

/// The declared record relations (mem/ep subject → object) in `scope` with an end among the
/// scope's memories in `period`, at most [`RELATION_CAP`] (a cut is flagged), for cue
/// propagation. No relations declared: nothing read, nothing changes.
fn related(
    conn: &Connection,
    scope: &Scope,
    period: Period,
    context: &mut PoolContext,
) -> Result<()> {
    let (pred, mut params) = scope.predicate("r");
    let (inner, inner_params) = scope.predicate("m");
    for _ in 0..2 {
        params.extend(inner_params.iter().cloned());
        params.push(Value::Integer(period.start_ms));
        params.push(Value::Integer(period.end_ms));
    }
    params.push(Value::Integer(RELATION_CAP as i64 + 1));
    let in_period = format!(
        "(SELECT m.id FROM memories m WHERE {inner} AND m.timestamp_ms >= ? \
         AND m.timestamp_ms < ?)"
    );
    let mut stmt = conn.prepare_cached(&format!(
        "SELECT r.subject_kind, r.subject_id, r.object_kind, r.object_id FROM relations r \
         WHERE {pred} AND r.subject_kind IN ('mem', 'ep') AND r.object_kind IN ('mem', 'ep') \
         AND ((r.subject_kind = 'mem' AND r.subject_id IN {in_period}) \
           OR (r.object_kind = 'mem' AND r.object_id IN {in_period})) \
         ORDER BY r.id LIMIT ?"
    ))?;
    let pairs = stmt.query_map(rusqlite::params_from_iter(params), |row| {
        let kind = |k: String, id: i64| if k == "ep" { Ref::ep(id) } else { Ref::mem(id) };
        Ok((
            kind(row.get(0)?, row.get(1)?),
            kind(row.get(2)?, row.get(3)?),
        ))
    })?;
    for pair in pairs {
        if context.relations.len() >= RELATION_CAP {
            context.relations_cut = true;
            break;
        }
        context.relations.push(pair?);
    }
    Ok(())
}

/// The oldest and newest event time of the scope's memories; `None` when it holds none.
pub(crate) fn span(conn: &Connection, scope: &Scope) -> Result<Option<(i64, i64)>> {
    let (pred, params) = scope.predicate("");
    let (lo, hi): (Option<i64>, Option<i64>) = conn.query_row(
        &format!("SELECT MIN(timestamp_ms), MAX(timestamp_ms) FROM memories WHERE {pred}"),
        rusqlite::params_from_iter(params),
        |row| Ok((row.get(0)?, row.get(1)?)),
    )?;
    Ok(lo.zip(hi))
}
