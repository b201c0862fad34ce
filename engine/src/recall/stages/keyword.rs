//! CPersona's keyword pass over memories, the fallback when FTS is off, the query has no
//! trigram-length term, or MATCH found nothing: the LIKE patterns to run and a pure matcher
//! and ranker that give the same rows the SQL would. It never ranks by relevance: CPersona's
//! keyword rows carry no score and come newest first.
//!
//! As CPersona 2.6 ships it: `content LIKE %query% OR %term% …` with `ESCAPE '\'`, ordered
//! `created_at DESC, id DESC`, the whole (trimmed) query first and then the FTS terms
//! ([`super::fts_query::fts_terms`]), the patterns bounded to 50,000 bytes in all.

use super::candidate::{Arm, ArmList};
use super::fts_query::fts_terms;
use crate::refs::Ref;

/// The most bytes all LIKE patterns of one query may hold together (CPersona 2.6's bound).
/// Patterns past it are left out and counted in [`KeywordPlan::dropped_patterns`].
pub const MAX_LIKE_PATTERN_BYTES: usize = 50_000;

/// The keyword pass for one query.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KeywordPlan {
    /// The needles, unescaped, in order: the trimmed query, then the FTS terms not equal to
    /// it. Matching is ASCII case-insensitive substring, as SQLite's LIKE.
    pub needles: Vec<String>,
    /// The same needles as LIKE patterns, `%…%` with `\`, `%` and `_` escaped for
    /// `ESCAPE '\'`; bind each to `content LIKE ? ESCAPE '\'`, OR-ed.
    pub patterns: Vec<String>,
    /// Needles left out by [`MAX_LIKE_PATTERN_BYTES`]; 0 when nothing was cut.
    pub dropped_patterns: usize,
}

/// One row the keyword pass may rank: the store hands these in (the LIKE prefilter's
/// output, or any candidate rows) and the ranker filters and orders them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KeywordRow<'a> {
    /// The memory.
    pub r#ref: Ref,
    /// Its stored content.
    pub content: &'a str,
    /// `created_at` in UTC milliseconds.
    pub created_at_ms: i64,
}

/// Plans the keyword pass, or `None` for a blank query (a blank query is a recency listing,
/// not a keyword search) or one whose every pattern exceeds the byte budget.
pub fn plan(query: &str) -> Option<KeywordPlan> {
    let whole = query.trim_matches(super::fts_query::is_query_whitespace);
    if whole.is_empty() {
        return None;
    }
    let mut needles: Vec<String> = vec![whole.to_owned()];
    needles.extend(fts_terms(query).into_iter().filter(|term| term != whole));
    // A pattern that would overflow the byte budget is left out (counted); later, shorter
    // ones may still fit.
    let mut kept = Vec::with_capacity(needles.len());
    let mut patterns = Vec::with_capacity(needles.len());
    let mut bytes = 0usize;
    let mut dropped_patterns = 0usize;
    for needle in needles {
        let pattern = format!("%{}%", escape_like(&needle));
        if bytes + pattern.len() > MAX_LIKE_PATTERN_BYTES {
            dropped_patterns += 1;
            continue;
        }
        bytes += pattern.len();
        patterns.push(pattern);
        kept.push(needle);
    }
    if patterns.is_empty() {
        return None;
    }
    let needles = kept;
    Some(KeywordPlan {
        needles,
        patterns,
        dropped_patterns,
    })
}

/// Escapes `\`, `%` and `_` so a needle is literal under `LIKE ? ESCAPE '\'`.
pub fn escape_like(needle: &str) -> String {
    let mut out = String::with_capacity(needle.len() + 2);
    for c in needle.chars() {
        if matches!(c, '\\' | '%' | '_') {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// The indices of the plan's needles that `content` holds, as SQLite's LIKE decides it:
/// substring match, case-insensitive for ASCII letters only.
pub fn matched_needles(plan: &KeywordPlan, content: &str) -> Vec<usize> {
    let haystack = content.to_ascii_lowercase();
    plan.needles
        .iter()
        .enumerate()
        .filter(|(_, needle)| haystack.contains(&needle.to_ascii_lowercase()))
        .map(|(i, _)| i)
        .collect()
}

/// Ranks rows as the keyword pass does: rows holding any needle, newest first
/// (`created_at` descending, then id descending: a total order), the first `depth` kept,
/// no raw score. The result is the memory keyword arm's list.
pub fn rank(plan: &KeywordPlan, rows: &[KeywordRow<'_>], depth: usize) -> ArmList {
    let mut hits: Vec<&KeywordRow<'_>> = rows
        .iter()
        .filter(|row| !matched_needles(plan, row.content).is_empty())
        .collect();
    hits.sort_by(|a, b| {
        b.created_at_ms
            .cmp(&a.created_at_ms)
            .then(b.r#ref.cmp(&a.r#ref))
    });
    hits.dedup_by_key(|row| row.r#ref);
    ArmList::ranked(
        Arm::MemoryKeyword,
        hits.into_iter().take(depth).map(|row| (row.r#ref, None)),
    )
}
