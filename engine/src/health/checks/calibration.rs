//! Reads for `calibration_staleness`: the stored calibrations the gate could read for an
//! agent (its own and the global one), and the scoring version the gate reads.

use crate::error::Result;
use crate::health::stages::facts::{CalibrationFacts, CalibrationRow};
use crate::recall::SCORING_VERSION;
use crate::store::Store;
use crate::time::now_ms;

/// The calibrations in scope: every row for `""`, else the agent's and the global one.
pub(crate) fn calibration(store: &Store, agent: &str) -> Result<CalibrationFacts> {
    let rows = store.read(|conn| {
        let mut stmt = conn.prepare(
            "SELECT agent_id, embedding_model, embedding_dim, scoring_version, calibrated_at_ms \
             FROM calibration WHERE ?1 = '' OR agent_id IN (?1, '') ORDER BY agent_id",
        )?;
        let rows = stmt
            .query_map([agent], |row| {
                Ok(CalibrationRow {
                    agent_id: row.get(0)?,
                    model_id: row.get(1)?,
                    dim: row.get::<_, i64>(2)?.max(0) as u64,
                    scoring_version: row.get(3)?,
                    calibrated_at_ms: row.get(4)?,
                })
            })?
            .collect::<rusqlite::Result<Vec<_>>>()?;
        Ok(rows)
    })?;
    Ok(CalibrationFacts {
        rows,
        scoring_version: SCORING_VERSION,
        now_ms: now_ms(),
    })
}
