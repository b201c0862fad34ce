//! The lexical arms: FTS5 trigram over episodes and memories (bm25), and the keyword (LIKE)
//! pass that stands in for the memories arm when the FTS query is empty or finds nothing
//! (reference 2.5 §5.4). User text only ever reaches SQLite as a bound parameter built by
//! `recall::fts_query` / `recall::keyword`; it must never become an SQL error.

use rusqlite::Connection;
use rusqlite::types::Value;

use crate::error::Result;
use crate::recall::fts_query::build_match;
use crate::recall::keyword::{self, KeywordRow};
use crate::recall::{Arm, ArmHit, ArmList, Ref};
use crate::scope::Scope;

/// What the lexical arms returned, with notes on what degraded.
#[derive(Clone, Debug)]
pub(crate) struct LexicalLists {
    pub(crate) episodes: ArmList,
    pub(crate) memories: ArmList,
    /// True when the memories list came from the keyword pass.
    pub(crate) keyword_fallback: bool,
    pub(crate) notes: Vec<String>,
}

/// Runs both lexical arms for `query` in `scope`, each cut to `depth`.
pub(crate) fn search(
    conn: &Connection,
    scope: &Scope,
    query: &str,
    depth: usize,
) -> Result<LexicalLists> {
    let mut notes = Vec::new();
    let fts = build_match(query);
    if let Some(m) = &fts
        && m.dropped_terms > 0
    {
        notes.push(format!(
            "fts query kept its first {} terms; {} dropped",
            m.terms.len(),
            m.dropped_terms
        ));
    }
    let (pred, params) = scope.predicate("t");
    let run_fts = |table: &str, expr: &str| -> std::result::Result<Vec<(i64, f64)>, String> {
        let sql = format!(
            "SELECT t.id, bm25({table}_fts) FROM {table}_fts f JOIN {table} t ON f.rowid = t.id \
             WHERE {table}_fts MATCH ? AND {pred} ORDER BY rank, t.id LIMIT ?"
        );
        let mut all = vec![Value::Text(expr.to_owned())];
        all.extend(params.iter().cloned());
        all.push(Value::Integer(depth as i64));
        let inner = || -> rusqlite::Result<Vec<(i64, f64)>> {
            let mut stmt = conn.prepare_cached(&sql)?;
            stmt.query_map(rusqlite::params_from_iter(all), |row| {
                Ok((row.get(0)?, row.get(1)?))
            })?
            .collect()
        };
        inner().map_err(|err| err.to_string())
    };
    let to_list = |arm: Arm, rows: Vec<(i64, f64)>, kind: fn(i64) -> Ref| ArmList {
        arm,
        hits: rows
            .into_iter()
            .enumerate()
            .map(|(rank, (id, bm25))| ArmHit::from_bm25(kind(id), rank, bm25))
            .collect(),
    };
    let empty = |arm: Arm| ArmList {
        arm,
        hits: Vec::new(),
    };
    let episodes = match &fts {
        Some(m) => match run_fts("episodes", &m.expression) {
            Ok(rows) => to_list(Arm::EpisodeFts, rows, Ref::ep),
            Err(err) => {
                notes.push(format!("episodes fts unavailable: {err}"));
                empty(Arm::EpisodeFts)
            }
        },
        None => empty(Arm::EpisodeFts),
    };
    let mut memories = match &fts {
        Some(m) => match run_fts("memories", &m.expression) {
            Ok(rows) => to_list(Arm::MemoryKeyword, rows, Ref::mem),
            Err(err) => {
                notes.push(format!("memories fts unavailable: {err}"));
                empty(Arm::MemoryKeyword)
            }
        },
        None => empty(Arm::MemoryKeyword),
    };
    let mut keyword_fallback = false;
    if memories.hits.is_empty()
        && let Some(plan) = keyword::plan(query)
    {
        keyword_fallback = true;
        if plan.dropped_patterns > 0 {
            notes.push(format!(
                "keyword pass left out {} patterns over its byte budget",
                plan.dropped_patterns
            ));
        }
        let likes = vec!["t.content LIKE ? ESCAPE '\\'"; plan.patterns.len()].join(" OR ");
        let sql = format!(
            "SELECT t.id, t.content, t.created_at_ms FROM memories t WHERE {pred} AND ({likes}) \
             ORDER BY t.created_at_ms DESC, t.id DESC LIMIT ?"
        );
        let mut all: Vec<Value> = params.clone();
        all.extend(plan.patterns.iter().map(|p| Value::Text(p.clone())));
        all.push(Value::Integer(depth as i64));
        let mut stmt = conn.prepare(&sql)?;
        let rows = stmt
            .query_map(rusqlite::params_from_iter(all), |row| {
                Ok((
                    row.get::<_, i64>(0)?,
                    row.get::<_, String>(1)?,
                    row.get::<_, i64>(2)?,
                ))
            })?
            .collect::<rusqlite::Result<Vec<_>>>()?;
        let rows: Vec<KeywordRow<'_>> = rows
            .iter()
            .map(|(id, content, created)| KeywordRow {
                r#ref: Ref::mem(*id),
                content,
                created_at_ms: *created,
            })
            .collect();
        memories = keyword::rank(&plan, &rows, depth);
    }
    Ok(LexicalLists {
        episodes,
        memories,
        keyword_fallback,
        notes,
    })
}
