//! The store-side reads behind two reported-or-filtering recall steps: the row facts the
//! caller's filters judge (`recall::filters`), and the inputs of each returned row's
//! confidence (`recall::confidence`). Rows are read by the refs the arms produced in the
//! caller's scope; the span is read through `Scope`. Nothing here orders or gates a row.

use std::sync::Arc;

use rusqlite::{Connection, OptionalExtension};

use crate::error::Result;
use crate::recall::stages::candidate::FusedCandidate;
use crate::recall::stages::confidence::{
    Confidence, ConfidenceInput, ConfidenceParams, confidence,
};
use crate::recall::stages::filters::RowFacts;
use crate::refs::{Ref, RefKind};
use crate::scope::Scope;
use crate::store::credits::{Credit, PendingCredits};

/// A row recalled this recently gets CPersona's recent-recall penalty.
pub(crate) const RECENT_RECALL_MS: i64 = 5 * 60 * 1000;

const MS_PER_HOUR: f64 = 3_600_000.0;

/// What a filter needs of one row: its text and, for a memory, `source.id`.
pub(crate) fn row_facts(conn: &Connection, r: Ref) -> Result<Option<RowFacts>> {
    let row = match r.kind {
        RefKind::Mem => conn
            .prepare_cached(
                "SELECT content, json_extract(CASE WHEN json_valid(source) THEN source END, \
                 '$.id') FROM memories WHERE id = ?",
            )?
            .query_row([r.id], |row| {
                Ok(RowFacts {
                    content: row.get(0)?,
                    source_id: row.get::<_, Option<rusqlite::types::Value>>(1)?.and_then(
                        |v| match v {
                            rusqlite::types::Value::Text(s) => Some(s),
                            rusqlite::types::Value::Integer(i) => Some(i.to_string()),
                            _ => None,
                        },
                    ),
                })
            })
            .optional()?,
        RefKind::Ep => conn
            .prepare_cached("SELECT summary FROM episodes WHERE id = ?")?
            .query_row([r.id], |row| {
                Ok(RowFacts {
                    content: row.get(0)?,
                    source_id: None,
                })
            })
            .optional()?,
    };
    Ok(row)
}

/// The scope-wide inputs of confidence, read once per recall.
#[derive(Clone, Debug)]
pub(crate) struct ConfidenceContext {
    now_ms: i64,
    /// Oldest and newest memory timestamp in scope.
    span: Option<(i64, i64)>,
    deep: bool,
    params: ConfidenceParams,
    /// Recall credit recorded but not yet written (`store/credits.rs`), as of this recall.
    pending: Arc<PendingCredits>,
}

impl ConfidenceContext {
    /// Reads the scope's memory timestamp span (CPersona's confidence span).
    pub(crate) fn read(
        conn: &Connection,
        scope: &Scope,
        now_ms: i64,
        deep: bool,
        params: ConfidenceParams,
    ) -> Result<ConfidenceContext> {
        let (pred, params_sql) = scope.predicate("");
        let end = |order: &str| -> Result<Option<i64>> {
            Ok(conn
                .prepare_cached(&format!(
                    "SELECT timestamp_ms FROM memories WHERE {pred} ORDER BY timestamp_ms {order} \
                     LIMIT 1"
                ))?
                .query_row(rusqlite::params_from_iter(params_sql.iter()), |row| {
                    row.get(0)
                })
                .optional()?)
        };
        let span = match (end("ASC")?, end("DESC")?) {
            (Some(oldest), Some(newest)) => Some((oldest, newest)),
            _ => None,
        };
        Ok(ConfidenceContext {
            now_ms,
            span,
            deep,
            params,
            pending: Arc::default(),
        })
    }

    /// The same context counting `pending` credit as written.
    pub(crate) fn with_pending_credits(self, pending: Arc<PendingCredits>) -> ConfidenceContext {
        ConfidenceContext { pending, ..self }
    }

    fn pending(&self, id: i64, owner: &str) -> Option<Credit> {
        self.pending.get(&(id, owner.to_owned())).copied()
    }

    /// The constants confidence is computed with.
    pub(crate) fn params(&self) -> ConfidenceParams {
        self.params
    }

    /// The confidence of one returned row, from its stored timestamp and recall history.
    pub(crate) fn of(
        &self,
        conn: &Connection,
        candidate: &FusedCandidate,
    ) -> Result<Option<Confidence>> {
        Ok(self.input_of(conn, candidate.r#ref)?.map(|input| {
            confidence(
                &self.params,
                &ConfidenceInput {
                    cosine: candidate.cosine,
                    ..input
                },
            )
        }))
    }

    /// One row's confidence input without its cosine (the fused candidate supplies that).
    pub(crate) fn input_of(&self, conn: &Connection, r: Ref) -> Result<Option<ConfidenceInput>> {
        let hours = |ms: i64| ms as f64 / MS_PER_HOUR;
        // (timestamp, recall count, last recalled, resolved)
        type Facts = (Option<i64>, i64, Option<i64>, Option<bool>);
        let facts: Option<Facts> = match r.kind {
            RefKind::Mem => conn
                .prepare_cached(
                    "SELECT timestamp_ms, recall_count, last_recalled_at_ms, agent_id \
                     FROM memories WHERE id = ?",
                )?
                .query_row([r.id], |row| {
                    Ok((
                        row.get(0)?,
                        row.get(1)?,
                        row.get(2)?,
                        row.get::<_, String>(3)?,
                    ))
                })
                .optional()?
                .map(|(timestamp, count, last, owner)| {
                    // Credit recorded but not yet written counts as written.
                    match self.pending(r.id, &owner) {
                        Some(credit) => (
                            timestamp,
                            count + credit.recalls as i64,
                            Some(credit.last_recalled_ms),
                            None,
                        ),
                        None => (timestamp, count, last, None),
                    }
                }),
            RefKind::Ep => conn
                .prepare_cached("SELECT start_ms, resolved FROM episodes WHERE id = ?")?
                .query_row([r.id], |row| {
                    Ok((row.get(0)?, 0, None, Some(row.get::<_, i64>(1)? != 0)))
                })
                .optional()?,
        };
        let Some((timestamp_ms, recall_count, last_recalled_ms, resolved)) = facts else {
            return Ok(None);
        };
        let input = ConfidenceInput {
            cosine: None,
            age_hours: timestamp_ms.map(|t| hours(self.now_ms - t)),
            time_range_hours: self.span.map_or(0.0, |(old, new)| hours(new - old)),
            newest_age_hours: self.span.map(|(_, new)| hours(self.now_ms - new)),
            recall_count: recall_count.max(0) as u64,
            hours_since_last_recall: last_recalled_ms.map(|t| hours(self.now_ms - t)),
            resolved,
            recently_recalled: last_recalled_ms.is_some_and(|t| self.now_ms - t < RECENT_RECALL_MS),
            deep: self.deep,
        };
        Ok(Some(input))
    }
}
