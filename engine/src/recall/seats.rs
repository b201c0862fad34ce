//! The held places recall adds after its window: the association cue (rows mentioning an
//! entity the query names, [`crate::recall::stages::associations_cue`]) and the propagation seat
//! ([`crate::recall::stages::propagation`]). The store half: it reads the registry, the deeper
//! ranking and the vectors within the caller's scope, and prepends the held rows (messages
//! are in ascending relevance, so held rows come first). Each is off by default; when off, or
//! when the registry holds no term in scope, the response is left exactly as it was.

use std::collections::HashSet;

use rusqlite::Connection;
use rusqlite::types::Value;

use crate::associations::Node;
use crate::associations::normalize;
use crate::associations::traverse::{MentionSource, entity_name, mentions_of, relations_of};
use crate::config::EngineConfig;
use crate::error::Result;
use crate::recall::pass::Pass;
use crate::recall::read::hydrate;
use crate::recall::stages::associations_cue::{
    self, MAX_TERMS, held_message, matched_entities, pick,
};
use crate::recall::stages::pipeline::RecallResponse;
use crate::recall::stages::propagation::{self, DEPTH};
use crate::recall::stages::shape::{MatchReason, RecallMessage, Signal};
use crate::recall::types::RecallQuery;
use crate::refs::{Ref, RefKind};
use crate::scope::Scope;
use crate::store::Store;
use crate::vector::{decode, format_from_tag};

/// Declared terms (`(entity id, normalised name or alias)`) in `scope`, at most
/// [`MAX_TERMS`] + 1 so the caller can tell the bound cut.
fn terms(conn: &Connection, scope: &Scope) -> Result<Vec<(i64, String)>> {
    let (pred, params) = scope.predicate("e");
    let mut stmt = conn.prepare_cached(&format!(
        "SELECT e.id, e.normalized FROM entities e WHERE {pred} \
         UNION ALL SELECT a.entity_id, a.normalized FROM entity_aliases a \
         JOIN entities e ON e.id = a.entity_id WHERE {pred} LIMIT {}",
        MAX_TERMS + 1
    ))?;
    let rows = stmt
        .query_map(
            rusqlite::params_from_iter(params.iter().chain(params.iter())),
            |row| Ok((row.get::<_, i64>(0)?, row.get::<_, String>(1)?)),
        )?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    Ok(rows)
}

/// The unit vector of a stored row, when it has one of `dim` dimensions.
fn stored_vector(conn: &Connection, scope: &Scope, r: Ref, dim: usize) -> Result<Option<Vec<f32>>> {
    use rusqlite::OptionalExtension;
    let (pred, mut params) = scope.predicate("");
    params.push(Value::Integer(r.id));
    let table = match r.kind {
        RefKind::Mem => "memories",
        RefKind::Ep => "episodes",
    };
    let row: Option<(Option<Vec<u8>>, String)> = conn
        .prepare_cached(&format!(
            "SELECT embedding, embedding_format FROM {table} WHERE {pred} AND id = ?"
        ))?
        .query_row(rusqlite::params_from_iter(params), |row| {
            Ok((row.get(0)?, row.get(1)?))
        })
        .optional()?;
    Ok(row.and_then(|(blob, format)| {
        let v = decode(&blob?, format_from_tag(&format)?)?;
        (v.len() == dim).then_some(v)
    }))
}

/// The query of the propagation seat's deeper pass (Recall Depth 100 per arm, held within
/// the operator's maximum, at most that many rows), when the seat is on and the window has
/// a best row to anchor it; the entry runs that pass, reusing the window's cue plan.
pub(crate) fn deeper_query(
    config: &EngineConfig,
    q: &RecallQuery,
    window: &Pass,
) -> Option<RecallQuery> {
    let wanted = config.propagation_seat
        && !q.query.trim().is_empty()
        && !window.outcome.response.messages.is_empty();
    wanted.then(|| RecallQuery {
        limit: DEPTH.max(config.recall.depth.per_arm()),
        depth: Some(DEPTH),
        trace: false,
        full_content: false,
        ..q.clone()
    })
}

/// Adds the held places of the association cue and the propagation seat (picked from
/// `deeper`, the deeper pass) to the window's response, in that order (CPersona's order of
/// held places), and says in its advisories when a bound cut. Returns the held rows as they
/// now lead the response.
pub(crate) fn hold(
    store: &Store,
    config: &EngineConfig,
    q: &RecallQuery,
    window: &mut Pass,
    deeper: Option<&Pass>,
) -> Result<Vec<RecallMessage>> {
    if q.query.trim().is_empty() {
        return Ok(Vec::new());
    }
    let before = window.outcome.response.messages.len();
    // The best row of the window, before any held row is added.
    let anchor = window.outcome.response.messages.last().map(|m| m.r#ref);
    let scope = window.scope.clone();
    if config.associations_enabled {
        association_seats(
            store,
            config,
            q,
            &scope,
            &mut window.outcome.response,
            &mut window.advisories,
        )?;
    }
    if let (Some(anchor), Some(deeper)) = (anchor, deeper) {
        propagation_seat(store, &scope, anchor, deeper, &mut window.outcome.response)?;
    }
    let held = window.outcome.response.messages.len() - before;
    Ok(window.outcome.response.messages[..held].to_vec())
}

fn association_seats(
    store: &Store,
    config: &EngineConfig,
    q: &RecallQuery,
    scope: &Scope,
    response: &mut RecallResponse,
    advisories: &mut Vec<String>,
) -> Result<()> {
    let shape = config.recall.shape;
    let held: HashSet<Ref> = response.messages.iter().map(|m| m.r#ref).collect();
    let added = store.read(|conn| {
        let terms = terms(conn, scope)?;
        if terms.is_empty() {
            return Ok(Vec::new());
        }
        if terms.len() > MAX_TERMS {
            advisories.push(format!(
                "association cue read the first {MAX_TERMS} declared terms only"
            ));
        }
        let matched = matched_entities(&normalize(&q.query), &terms);
        // (entity id, name, hops): the matched ones, then one relation away.
        let mut entities: Vec<(i64, String, usize)> = Vec::new();
        for id in &matched {
            if let Some(name) = entity_name(conn, scope, *id)? {
                entities.push((*id, name, 0));
            }
        }
        let mut seen: HashSet<i64> = matched.iter().copied().collect();
        let mut mentions: Vec<(Ref, String, usize)> = Vec::new();
        for (id, name, _) in entities.clone() {
            for rel in relations_of(conn, scope, id)? {
                let other = if rel.subject == Node::Entity(id) {
                    rel.object
                } else {
                    rel.subject
                };
                match other {
                    Node::Record(r) => mentions.push((r, name.clone(), 0)),
                    Node::Entity(other) if seen.insert(other) => {
                        if let Some(other_name) = entity_name(conn, scope, other)? {
                            entities.push((other, other_name, 1));
                        }
                    }
                    Node::Entity(_) => {}
                }
            }
        }
        let mut ordered: Vec<(Ref, String, usize)> = Vec::new();
        for (id, name, hops) in &entities {
            for text in mentions_of(conn, scope, MentionSource::ANY, *id)? {
                if let Ok(r) = text.parse() {
                    ordered.push((r, name.clone(), *hops));
                }
            }
            if *hops == 0 {
                ordered.extend(mentions.iter().filter(|m| m.1 == *name).cloned());
            }
        }
        ordered.sort_by_key(|m| m.2);
        let (picked, passed) = pick(&ordered, |r| held.contains(&r));
        if passed > 0 {
            advisories.push(format!(
                "association cue held {} places; {passed} more rows mention the entities named",
                associations_cue::SEATS
            ));
        }
        let mut rows = Vec::new();
        for (r, name, hops) in picked {
            if let Some(row) = hydrate(conn, scope, r)? {
                rows.push(held_message(
                    &shape,
                    &q.query,
                    r,
                    row,
                    associations_cue::reason(name, hops),
                ));
            }
        }
        Ok(rows)
    })?;
    if !added.is_empty() {
        // Least relevant first: the best held row sits nearest the window.
        let mut front: Vec<_> = added.into_iter().rev().collect();
        front.append(&mut response.messages);
        response.messages = front;
    }
    Ok(())
}

fn propagation_seat(
    store: &Store,
    scope: &Scope,
    anchor: Ref,
    deeper: &Pass,
    response: &mut RecallResponse,
) -> Result<()> {
    let deeper_depth = deeper
        .outcome
        .response
        .depth
        .unwrap_or(deeper.outcome.stages.order.limit);
    let mut deeper: Vec<RecallMessage> = deeper.outcome.response.messages.clone();
    deeper.reverse(); // best first
    let dim = store.vector_target().dim;
    let held: HashSet<Ref> = response.messages.iter().map(|m| m.r#ref).collect();
    let ranked = store.read(|conn| {
        let anchor_vec = stored_vector(conn, scope, anchor, dim)?;
        let mut out = Vec::with_capacity(deeper.len());
        for m in &deeper {
            let cos = match (&anchor_vec, held.contains(&m.r#ref)) {
                (Some(a), false) => stored_vector(conn, scope, m.r#ref, dim)?
                    .and_then(|v| propagation::cosine(&v, a)),
                _ => None,
            };
            out.push((m.r#ref, cos));
        }
        Ok(out)
    })?;
    let Some(seat) = propagation::seat(&ranked, |r| held.contains(&r)) else {
        return Ok(());
    };
    let mut row = deeper.swap_remove(seat.index);
    row.score = crate::recall::stages::shape::round6(seat.score);
    row.confidence = None;
    row.match_reason = MatchReason {
        signal: Signal::Propagation,
        score: crate::recall::stages::shape::round6(seat.score),
        cosine: None,
        rrf: None,
        rsf: None,
        arms: Vec::new(),
        admission: Some("reservation"),
        fused_rank: Some(seat.fused_rank),
        cosine_rank: Some(seat.cosine_rank),
        depth: Some(deeper_depth),
        cue_rank: None,
        entity: None,
        hops: None,
    };
    response.messages.insert(0, row);
    Ok(())
}
