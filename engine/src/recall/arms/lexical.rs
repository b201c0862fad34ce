//! The lexical arms: FTS5 trigram over episodes and memories (bm25), and the keyword (LIKE)
//! pass that stands in for the memories arm when the FTS query is empty or finds nothing
//! (reference 2.5 §5.4). User text only ever reaches SQLite as a bound parameter built by
//! `recall::fts_query` / `recall::keyword`; it must never become an SQL error.
//!
//! # The lexical candidate cap
//! FTS5 computes bm25 for every row that matches before it can sort by rank, so on a
//! repetitive corpus (every OR term common) the arm's cost grows with the table, not with the
//! depth. With a cap `C` (`RecallConfig::lexical_cap`) each table first counts, without
//! bm25 and up to `C + 1`, the rows in scope that match the query. When they fit under `C`,
//! the ranked query is exactly the uncapped one (same SQL, same rows). When they do not, each
//! term's rows in the whole table are counted (up to `C + 1`, no scope join: a table count is
//! never below the count in scope, so the bound holds), and bm25 ranks at most `C` rows,
//! chosen in this order; a [`CapActed`] says which way and which terms it left out:
//! 1. `selective_terms`: the terms matching the fewest rows, rarest first, as long as their
//!    counts sum to at most `C`, OR-joined. bm25's idf makes rare terms dominate the ranking,
//!    so the rows that hold one are the rows an uncapped ranking puts on top; rows holding only
//!    common terms are the ones left unranked (the vector arm still sees them).
//! 2. `all_terms`: when every term is common, the rows holding all of them (AND), if there are
//!    at most `C`: bm25 of the AND expression is the full score of each such row.
//! 3. `newest`: otherwise the `C` newest (highest id) rows of the AND set, or of the OR set
//!    when no row holds every term. FTS5 walks a rowid range without scoring rows outside it.
//!
//! A query of more than [`MAX_COUNTED_TERMS`] terms is not counted term by term: one probe of
//! the whole expression decides, and `newest` applies. bm25's idf always counts the whole
//! table. It must never drop a row silently: every cut is reported.

use rusqlite::Connection;
use rusqlite::types::Value;
use serde::Serialize;

use crate::error::Result;
use crate::recall::stages::candidate::{Arm, ArmHit, ArmList};
use crate::recall::stages::fts_query::{FtsMatch, build_match, join_phrases};
use crate::recall::stages::keyword::{self, KeywordRow};
use crate::refs::Ref;
use crate::scope::Scope;

/// Terms a query may have for the cap to count them one by one.
pub(crate) const MAX_COUNTED_TERMS: usize = 32;

/// How the lexical cap chose the rows bm25 ranked (see the module doc).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum CapPolicy {
    /// The rarest terms, OR-joined, whose counts sum to at most the cap.
    SelectiveTerms,
    /// Every term (AND), at most the cap rows.
    AllTerms,
    /// The newest `cap` matching rows (of the AND set, else the OR set).
    Newest,
}

/// One table on which the lexical cap acted.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct CapActed {
    /// `memories` or `episodes`.
    pub table: &'static str,
    /// The cap: more rows in scope matched; bm25 ranked at most this many.
    pub cap: usize,
    /// How the ranked rows were chosen.
    pub policy: CapPolicy,
    /// Terms left out of the ranked expression (each matched too many rows).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub left_out: Vec<String>,
    /// For `newest`: the lowest id ranked.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub from_id: Option<i64>,
}

impl CapActed {
    /// The advisory line, for the response's notices and the trace.
    pub fn note(&self) -> String {
        let how = match self.policy {
            CapPolicy::SelectiveTerms => format!(
                "bm25 ranked the rows holding its rarer terms; left out {:?}",
                self.left_out
            ),
            CapPolicy::AllTerms => "bm25 ranked the rows holding every term".to_owned(),
            CapPolicy::Newest => format!(
                "bm25 ranked only the {} newest matches (ids >= {})",
                self.cap,
                self.from_id.unwrap_or_default()
            ),
        };
        format!(
            "lexical cap acted on {}: more than {} rows in scope match; {how}",
            self.table, self.cap
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

/// Row ids with their bm25 (lower is better), in rank order.
type ScoredIds = Vec<(i64, f64)>;

/// One FTS table's ranked rows and whether the cap acted.
type Ranked = (ScoredIds, Option<CapActed>);

/// One FTS table's queries in one scope.
struct Table<'a> {
    conn: &'a Connection,
    table: &'static str,
    /// `FROM … WHERE <table>_fts MATCH ? AND <scope>`.
    from: String,
    params: Vec<Value>,
}

impl Table<'_> {
    fn bind(&self, expr: &str, tail: &[i64]) -> Vec<Value> {
        let mut all = vec![Value::Text(expr.to_owned())];
        all.extend(self.params.iter().cloned());
        all.extend(tail.iter().map(|v| Value::Integer(*v)));
        all
    }

    /// Rows in scope matching `expr`, counted up to `upto` (no bm25).
    fn count(&self, expr: &str, upto: usize) -> rusqlite::Result<usize> {
        let sql = format!("SELECT count(*) FROM (SELECT 1 {} LIMIT ?)", self.from);
        let mut stmt = self.conn.prepare_cached(&sql)?;
        let n: i64 = stmt.query_row(
            rusqlite::params_from_iter(self.bind(expr, &[as_i64(upto)])),
            |row| row.get(0),
        )?;
        Ok(usize::try_from(n).unwrap_or(0))
    }

    /// Rows of the whole table (any scope) matching `expr`, counted up to `upto`.
    fn count_table(&self, expr: &str, upto: usize) -> rusqlite::Result<usize> {
        let table = self.table;
        let sql = format!(
            "SELECT count(*) FROM (SELECT 1 FROM {table}_fts WHERE {table}_fts MATCH ? LIMIT ?)"
        );
        let mut stmt = self.conn.prepare_cached(&sql)?;
        let n: i64 = stmt.query_row(rusqlite::params![expr, as_i64(upto)], |row| row.get(0))?;
        Ok(usize::try_from(n).unwrap_or(0))
    }

    /// The `cap` newest rows in scope matching `expr`, in bm25 order cut to `depth`, and the
    /// lowest id among them when more rows match (the cap acted; `None`: every match is
    /// there). One FTS evaluation that scores at most `cap + 1` rows, newest first, then
    /// sorts them here by (bm25, id) as [`Table::rank`]'s `ORDER BY rank, t.id` does: the
    /// same rows and scores as finding the cut with one query and ranking above it with a
    /// second, which evaluated the expression twice (a phrase AND over the trigram index is
    /// the arm's dearest step).
    fn newest_ranked(
        &self,
        expr: &str,
        cap: usize,
        depth: usize,
    ) -> rusqlite::Result<(ScoredIds, Option<i64>)> {
        let table = self.table;
        let sql = format!(
            "SELECT t.id, bm25({table}_fts) {} ORDER BY f.rowid DESC LIMIT ?",
            self.from
        );
        let mut stmt = self.conn.prepare_cached(&sql)?;
        let mut rows: ScoredIds = stmt
            .query_map(
                rusqlite::params_from_iter(self.bind(expr, &[as_i64(cap.saturating_add(1))])),
                |row| Ok((row.get(0)?, row.get(1)?)),
            )?
            .collect::<rusqlite::Result<_>>()?;
        // Newest first: a row past the cap is the newest one left out.
        let from = (rows.len() > cap)
            .then(|| rows.pop())
            .flatten()
            .map(|(beyond, _)| beyond.saturating_add(1));
        rows.sort_by(|a, b| a.1.total_cmp(&b.1).then(a.0.cmp(&b.0)));
        rows.truncate(depth);
        Ok((rows, from))
    }

    /// bm25 order of the rows in scope matching `expr`, cut to `depth`.
    fn rank(&self, expr: &str, depth: usize) -> rusqlite::Result<ScoredIds> {
        let table = self.table;
        let sql = format!(
            "SELECT t.id, bm25({table}_fts) {} ORDER BY rank, t.id LIMIT ?",
            self.from
        );
        let mut stmt = self.conn.prepare_cached(&sql)?;
        stmt.query_map(
            rusqlite::params_from_iter(self.bind(expr, &[as_i64(depth)])),
            |row| Ok((row.get(0)?, row.get(1)?)),
        )?
        .collect()
    }
}

fn as_i64(n: usize) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

/// Runs one table's FTS5 query for `m` in `scope`, under the lexical cap when one is set.
fn run_fts(
    conn: &Connection,
    scope: &Scope,
    table: &'static str,
    m: &FtsMatch,
    depth: usize,
    cap: Option<usize>,
) -> rusqlite::Result<Ranked> {
    let (pred, params) = scope.predicate("t");
    let t = Table {
        conn,
        table,
        from: format!(
            "FROM {table}_fts f JOIN {table} t ON f.rowid = t.id WHERE {table}_fts MATCH ? AND {pred}"
        ),
        params,
    };
    let Some(cap) = cap else {
        return Ok((t.rank(&m.expression, depth)?, None));
    };
    let acted = |policy, left_out: Vec<String>, from_id| CapActed {
        table,
        cap,
        policy,
        left_out,
        from_id,
    };
    if m.terms.len() > MAX_COUNTED_TERMS {
        let (rows, from) = t.newest_ranked(&m.expression, cap, depth)?;
        let acted = from.map(|from| acted(CapPolicy::Newest, Vec::new(), Some(from)));
        return Ok((rows, acted));
    }
    // Under the cap in scope: the uncapped query, exactly.
    if t.count(&m.expression, cap + 1)? <= cap {
        return Ok((t.rank(&m.expression, depth)?, None));
    }
    // Each term's rows in the whole table (no scope join: cheaper, and never below the
    // count in scope, so the chosen terms still match at most `cap` rows in scope).
    let mut counts: Vec<(usize, &String)> = Vec::with_capacity(m.terms.len());
    for term in &m.terms {
        counts.push((
            t.count_table(&join_phrases(&[term], " OR "), cap + 1)?,
            term,
        ));
    }
    counts.retain(|c| c.0 > 0);
    counts.sort_by_key(|c| c.0);
    let (mut budget, mut selected, mut left_out) = (0usize, Vec::new(), Vec::new());
    for (n, term) in &counts {
        if budget + n <= cap {
            budget += n;
            selected.push(term.as_str());
        } else {
            left_out.push((*term).clone());
        }
    }
    if !selected.is_empty() {
        let expr = join_phrases(&selected, " OR ");
        return Ok((
            t.rank(&expr, depth)?,
            Some(acted(CapPolicy::SelectiveTerms, left_out, None)),
        ));
    }
    let all: Vec<&str> = counts.iter().map(|c| c.1.as_str()).collect();
    let and = join_phrases(&all, " AND ");
    match t.newest_ranked(&and, cap, depth)? {
        (rows, Some(from)) => {
            return Ok((rows, Some(acted(CapPolicy::Newest, Vec::new(), Some(from)))));
        }
        (rows, None) if !rows.is_empty() => {
            return Ok((rows, Some(acted(CapPolicy::AllTerms, Vec::new(), None))));
        }
        (_, None) => {}
    }
    let (rows, from) = t.newest_ranked(&m.expression, cap, depth)?;
    Ok((rows, Some(acted(CapPolicy::Newest, Vec::new(), from))))
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
        match run_fts(conn, scope, table, m, depth, cap) {
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
