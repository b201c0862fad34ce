//! The lexical arms: FTS5 trigram over episodes and memories (bm25), and the keyword (LIKE)
//! pass that stands in for the memories arm when the FTS query is empty or finds nothing
//! (reference 2.5 §5.4). User text only ever reaches SQLite as a bound parameter built by
//! `recall::fts_query` / `recall::keyword`; it must never become an SQL error.
//!
//! # The lexical candidate cap
//! FTS5 computes bm25 for every row that matches before it can sort by rank, so on a
//! repetitive corpus (every OR term common) the arm's cost grows with the table, not with the
//! depth. With a cap `C` (`RecallConfig::lexical_cap`), each table first probes, without
//! bm25, for a `C + 1`-th matching row in scope (newest id first). When there is none the
//! ranked query is exactly the uncapped one (same SQL, same rows). When there is, bm25 ranks
//! only the `C` newest matching rows in scope (ids above the probe's), and a [`CapActed`]
//! says so. Why the newest: ids grow with writes, FTS5 walks a rowid range without scoring
//! the rows outside it, the vector arm's scan window also prefers the newest rows, and older
//! rows stay reachable through the vector arm. bm25's idf still counts the whole table, so
//! the subset's order is the uncapped order restricted to the subset. It must never drop a
//! row silently: every cut is reported.

use rusqlite::Connection;
use rusqlite::types::Value;
use serde::Serialize;

use crate::error::Result;
use crate::recall::fts_query::build_match;
use crate::recall::keyword::{self, KeywordRow};
use crate::recall::{Arm, ArmHit, ArmList, Ref};
use crate::scope::Scope;

/// One table on which the lexical cap acted.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct CapActed {
    /// `memories` or `episodes`.
    pub table: &'static str,
    /// The cap: more than this many rows in scope matched; bm25 ranked this many.
    pub cap: usize,
    /// The lowest id ranked (the subset is every matching row in scope at or above it).
    pub from_id: i64,
}

impl CapActed {
    /// The advisory line, for the response's notices and the trace.
    pub fn note(&self) -> String {
        format!(
            "lexical cap acted on {}: more than {} rows in scope match; bm25 ranked only the {} newest matches (ids >= {})",
            self.table, self.cap, self.cap, self.from_id
        )
    }
}

/// What the lexical arms returned, with notes on what degraded.
#[derive(Clone, Debug)]
pub(crate) struct LexicalLists {
    pub(crate) episodes: ArmList,
    pub(crate) memories: ArmList,
    /// True when the memories list came from the keyword pass.
    pub(crate) keyword_fallback: bool,
    /// The tables the lexical cap cut (also among `notes`).
    pub(crate) capped: Vec<CapActed>,
    pub(crate) notes: Vec<String>,
}

/// One FTS table's ranked rows and whether the cap acted.
type Ranked = (Vec<(i64, f64)>, Option<CapActed>);

/// Runs one table's FTS5 query for `expr` in `scope`: the cap's probe, then bm25 over the
/// whole match set (under the cap) or over the newest `cap` matches.
fn run_fts(
    conn: &Connection,
    scope: &Scope,
    table: &'static str,
    expr: &str,
    depth: usize,
    cap: Option<usize>,
) -> rusqlite::Result<Ranked> {
    let (pred, params) = scope.predicate("t");
    let from = format!(
        "FROM {table}_fts f JOIN {table} t ON f.rowid = t.id WHERE {table}_fts MATCH ? AND {pred}"
    );
    let mut acted = None;
    if let Some(cap) = cap {
        // The (cap+1)-th newest match in scope, read in rowid order without bm25.
        let probe = format!("SELECT f.rowid {from} ORDER BY f.rowid DESC LIMIT 1 OFFSET ?");
        let mut all = vec![Value::Text(expr.to_owned())];
        all.extend(params.iter().cloned());
        all.push(Value::Integer(i64::try_from(cap).unwrap_or(i64::MAX)));
        let mut stmt = conn.prepare_cached(&probe)?;
        let beyond: Option<i64> = stmt
            .query_map(rusqlite::params_from_iter(all), |row| row.get(0))?
            .next()
            .transpose()?;
        if let Some(beyond) = beyond {
            acted = Some(CapActed {
                table,
                cap,
                from_id: beyond.saturating_add(1),
            });
        }
    }
    let mut all = vec![Value::Text(expr.to_owned())];
    all.extend(params.iter().cloned());
    let range = match &acted {
        Some(a) => {
            all.push(Value::Integer(a.from_id));
            " AND f.rowid >= ?"
        }
        None => "",
    };
    all.push(Value::Integer(depth as i64));
    let sql = format!("SELECT t.id, bm25({table}_fts) {from}{range} ORDER BY rank, t.id LIMIT ?");
    let mut stmt = conn.prepare_cached(&sql)?;
    let rows = stmt
        .query_map(rusqlite::params_from_iter(all), |row| {
            Ok((row.get(0)?, row.get(1)?))
        })?
        .collect::<rusqlite::Result<Vec<(i64, f64)>>>()?;
    Ok((rows, acted))
}

/// Runs both lexical arms for `query` in `scope`, each cut to `depth`; bm25 ranks at most
/// `cap` matching rows per table (`None`: every match, CPersona's behaviour).
pub(crate) fn search(
    conn: &Connection,
    scope: &Scope,
    query: &str,
    depth: usize,
    cap: Option<usize>,
) -> Result<LexicalLists> {
    let mut notes = Vec::new();
    let mut capped = Vec::new();
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
    let mut arm = |table: &'static str, arm: Arm, kind: fn(i64) -> Ref| {
        let Some(m) = &fts else {
            return ArmList {
                arm,
                hits: Vec::new(),
            };
        };
        match run_fts(conn, scope, table, &m.expression, depth, cap) {
            Ok((rows, acted)) => {
                if let Some(acted) = acted {
                    notes.push(acted.note());
                    capped.push(acted);
                }
                ArmList {
                    arm,
                    hits: rows
                        .into_iter()
                        .enumerate()
                        .map(|(rank, (id, bm25))| ArmHit::from_bm25(kind(id), rank, bm25))
                        .collect(),
                }
            }
            Err(err) => {
                notes.push(format!("{table} fts unavailable: {err}"));
                ArmList {
                    arm,
                    hits: Vec::new(),
                }
            }
        }
    };
    let episodes = arm("episodes", Arm::EpisodeFts, Ref::ep);
    let mut memories = arm("memories", Arm::MemoryKeyword, Ref::mem);
    let mut keyword_fallback = false;
    if memories.hits.is_empty()
        && let Some(list) = keyword_pass(conn, scope, query, depth, &mut notes)?
    {
        keyword_fallback = true;
        memories = list;
    }
    Ok(LexicalLists {
        episodes,
        memories,
        keyword_fallback,
        capped,
        notes,
    })
}

/// The keyword (LIKE) pass over memories, newest first, ranked by `keyword::rank`; `None`
/// when the query holds no pattern. Reads at most `depth` rows.
pub(crate) fn keyword_pass(
    conn: &Connection,
    scope: &Scope,
    query: &str,
    depth: usize,
    notes: &mut Vec<String>,
) -> Result<Option<ArmList>> {
    let Some(plan) = keyword::plan(query) else {
        return Ok(None);
    };
    if plan.dropped_patterns > 0 {
        notes.push(format!(
            "keyword pass left out {} patterns over its byte budget",
            plan.dropped_patterns
        ));
    }
    let (pred, params) = scope.predicate("t");
    let likes = vec!["t.content LIKE ? ESCAPE '\\'"; plan.patterns.len()].join(" OR ");
    let sql = format!(
        "SELECT t.id, t.content, t.created_at_ms FROM memories t WHERE {pred} AND ({likes}) \
         ORDER BY t.created_at_ms DESC, t.id DESC LIMIT ?"
    );
    let mut all: Vec<Value> = params;
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
    Ok(Some(keyword::rank(&plan, &rows, depth)))
}
