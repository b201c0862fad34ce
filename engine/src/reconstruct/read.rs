//! What `Engine::reconstruct` reads from SQLite, always within the caller's `Scope`: each
//! candidate's context (its blocks ranked against recall's query vector), the declared
//! record relations among the pool, the declared entity graph (bounded by
//! [`GRAPH_ROW_CAP`]), and the rows of pro's extra held places.
//!
//! Must never read a row outside the scope or write anything.

use std::collections::BTreeSet;

use rusqlite::types::Value;
use rusqlite::{Connection, OptionalExtension};

use crate::error::Result;
use crate::reconstruct::stages::bundle::{Candidate, DeclaredLink, EntityGraph};
use crate::reconstruct::stages::places;
use crate::refs::{Ref, RefKind};
use crate::scope::Scope;

/// Entity relations and mentions read per call at most: the walk's own bound on a large
/// declared graph (the walk reports `max_hops` when it stopped an edge, and this cap is
/// reported as an advisory when it cut).
pub const GRAPH_ROW_CAP: usize = 10_000;

/// `(type, id)` of a stored source object, when both are strings.
fn source_key(text: &str) -> Option<(String, String)> {
    let v: serde_json::Value = serde_json::from_str(text).ok()?;
    let kind = v.get("type")?.as_str()?;
    let id = v.get("id")?.as_str()?;
    Some((kind.to_owned(), id.to_owned()))
}

/// Reads one candidate's context within `scope`; `None` when outside it or gone. With a
/// query vector, its stored blocks are ranked for the quotes.
pub(crate) fn read_candidate(
    conn: &Connection,
    scope: &Scope,
    r: Ref,
    query: Option<&[f32]>,
) -> Result<Option<Candidate>> {
    let (pred, mut params) = scope.predicate("");
    params.push(Value::Integer(r.id));
    let row = match r.kind {
        RefKind::Mem => conn
            .prepare_cached(&format!(
                "SELECT project_id, channel, msg_id, content, source, timestamp, timestamp_ms \
                 FROM memories WHERE {pred} AND id = ?"
            ))?
            .query_row(rusqlite::params_from_iter(params), |row| {
                Ok(Candidate {
                    r#ref: Some(r),
                    project: row.get(0)?,
                    channel: row.get(1)?,
                    msg_id: row.get(2)?,
                    text: row.get(3)?,
                    source: source_key(&row.get::<_, String>(4)?),
                    as_of: Some(row.get(5)?),
                    ts_ms: Some(row.get(6)?),
                    span: None,
                    blocks: None,
                    reserved: false,
                })
            })
            .optional()?,
        RefKind::Ep => conn
            .prepare_cached(&format!(
                "SELECT project_id, channel, summary, start_time, start_ms, end_ms \
                 FROM episodes WHERE {pred} AND id = ?"
            ))?
            .query_row(rusqlite::params_from_iter(params), |row| {
                let start: Option<i64> = row.get(4)?;
                let end: Option<i64> = row.get(5)?;
                Ok(Candidate {
                    r#ref: Some(r),
                    project: row.get(0)?,
                    channel: row.get(1)?,
                    msg_id: String::new(),
                    text: row.get(2)?,
                    source: None,
                    as_of: row.get(3)?,
                    ts_ms: start,
                    span: start.map(|s| (s, end.unwrap_or(s))),
                    blocks: None,
                    reserved: false,
                })
            })
            .optional()?,
    };
    let Some(mut row) = row else {
        return Ok(None);
    };
    if let Some(query) = query {
        row.blocks = crate::derived::block_choice(conn, r, &row.text, query)?;
    }
    Ok(Some(row))
}

/// Recall's held places: association and propagation seats (`reservation`) and time-cue
/// seats; a gate-fallback row is ranked, not held.
pub(crate) fn is_held_place(admission: Option<&str>) -> bool {
    matches!(admission, Some("reservation" | "time_cue_seat"))
}

fn kind_of(text: &str) -> Option<RefKind> {
    match text {
        "mem" => Some(RefKind::Mem),
        "ep" => Some(RefKind::Ep),
        _ => None,
    }
}

/// Declared record→record relations with both ends in `pool`, within `scope`.
pub(crate) fn read_links(
    conn: &Connection,
    scope: &Scope,
    pool: &BTreeSet<Ref>,
) -> Result<Vec<DeclaredLink>> {
    let (pred, mut params) = scope.predicate("");
    params.push(Value::Integer(GRAPH_ROW_CAP as i64));
    let mut stmt = conn.prepare_cached(&format!(
        "SELECT subject_kind, subject_id, predicate, object_kind, object_id FROM relations \
         WHERE {pred} AND subject_kind IN ('mem', 'ep') AND object_kind IN ('mem', 'ep') \
         ORDER BY declared_at_ms DESC, id DESC LIMIT ?"
    ))?;
    let rows = stmt.query_map(rusqlite::params_from_iter(params), |row| {
        Ok((
            row.get::<_, String>(0)?,
            row.get::<_, i64>(1)?,
            row.get::<_, String>(2)?,
            row.get::<_, String>(3)?,
            row.get::<_, i64>(4)?,
        ))
    })?;
    let mut links = Vec::new();
    for row in rows {
        let (sk, sid, predicate, ok, oid) = row?;
        let (Some(sk), Some(ok)) = (kind_of(&sk), kind_of(&ok)) else {
            continue;
        };
        let (from, to) = (Ref { kind: sk, id: sid }, Ref { kind: ok, id: oid });
        if pool.contains(&from) && pool.contains(&to) {
            links.push(DeclaredLink {
                from,
                to,
                predicate,
            });
        }
    }
    Ok(links)
}

/// The declared entity graph within `scope`: entity↔entity relations (newest first, the
/// index being the recency) and every mention of an entity in scope. Returns whether the
/// row cap cut it.
pub(crate) fn read_graph(conn: &Connection, scope: &Scope) -> Result<(EntityGraph, bool)> {
    let mut graph = EntityGraph::default();
    let (pred, mut params) = scope.predicate("");
    params.push(Value::Integer(GRAPH_ROW_CAP as i64 + 1));
    let mut stmt = conn.prepare_cached(&format!(
        "SELECT subject_id, object_id, predicate FROM relations WHERE {pred} \
         AND subject_kind = 'entity' AND object_kind = 'entity' \
         ORDER BY declared_at_ms DESC, id DESC LIMIT ?"
    ))?;
    let edges = stmt
        .query_map(rusqlite::params_from_iter(params), |row| {
            Ok((
                row.get::<_, i64>(0)?,
                row.get::<_, i64>(1)?,
                row.get::<_, String>(2)?,
            ))
        })?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    let mut cut = edges.len() > GRAPH_ROW_CAP;
    graph.edges = edges
        .into_iter()
        .take(GRAPH_ROW_CAP)
        .enumerate()
        .map(|(n, (a, b, p))| (a, b, p, n))
        .collect();
    let (pred, mut params) = scope.predicate("e");
    params.push(Value::Integer(GRAPH_ROW_CAP as i64 + 1));
    let mut stmt = conn.prepare_cached(&format!(
        "SELECT m.entity_id, m.ref FROM entity_mentions m JOIN entities e ON e.id = m.entity_id \
         WHERE {pred} ORDER BY m.entity_id, m.ref LIMIT ?"
    ))?;
    let mentions = stmt
        .query_map(rusqlite::params_from_iter(params), |row| {
            Ok((row.get::<_, i64>(0)?, row.get::<_, String>(1)?))
        })?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    cut |= mentions.len() > GRAPH_ROW_CAP;
    for (entity, text) in mentions.into_iter().take(GRAPH_ROW_CAP) {
        let Ok(r) = text.parse::<Ref>() else {
            continue;
        };
        graph.mentions.entry(r).or_default().push(entity);
        graph.mentioned_by.entry(entity).or_default().push(r);
    }
    Ok((graph, cut))
}

/// Pro's keyword then depth places (`reconstruct/stages/places.rs`): rows of `deeper` (the same
/// recall at depth 100, with its stages) outside the pool, read within `scope`, marked held.
pub(crate) fn pro_place_rows(
    conn: &Connection,
    scope: &Scope,
    question: &str,
    deeper: &crate::recall::RecallResult,
    pool: &[Candidate],
    query: Option<&[f32]>,
) -> Result<(Vec<Candidate>, places::ProPlaces)> {
    let mut held: BTreeSet<Ref> = pool.iter().filter_map(|c| c.r#ref).collect();
    let parts = places::question_parts(question);
    let texts =
        |refs: &mut dyn Iterator<Item = Ref>, held: &BTreeSet<Ref>| -> Result<Vec<(Ref, String)>> {
            let mut out = Vec::new();
            for r in refs {
                if held.contains(&r) {
                    continue;
                }
                if let Some(row) = read_candidate(conn, scope, r, None)? {
                    out.push((r, row.text));
                }
            }
            Ok(out)
        };
    // Keyword places: rows only a lexical arm ranked, in fused order (module doc of
    // `reconstruct/stages/places.rs`: passed or refused).
    let mut lexical = deeper
        .stages
        .iter()
        .flat_map(|s| &s.fusion)
        .filter(|c| c.lexical_only())
        .map(|c| c.r#ref);
    let (keyword, keyword_report) = places::pick(
        &texts(&mut lexical, &held)?,
        &held,
        &parts,
        places::KEYWORD_PLACES,
    );
    held.extend(keyword.iter().copied());
    // Depth places: the deeper answer, best first.
    let mut answer = deeper.response.messages.iter().rev().map(|m| m.r#ref);
    let (depth, depth_report) = places::pick(
        &texts(&mut answer, &held)?,
        &held,
        &parts,
        places::DEPTH_PLACES,
    );
    let mut rows = Vec::with_capacity(keyword.len() + depth.len());
    for r in keyword.into_iter().chain(depth) {
        if let Some(mut row) = read_candidate(conn, scope, r, query)? {
            row.reserved = true;
            rows.push(row);
        }
    }
    Ok((
        rows,
        places::ProPlaces {
            keyword: keyword_report,
            depth: depth_report,
        },
    ))
}
