//! The gate's calibration: `calibrate_threshold` fits the gate's cosine threshold to one
//! agent's stored vectors and stores it in the `calibration` table, which recall's gate then
//! reads; it reads only that agent's rows.
//!
//! The per-agent recall precision (`set_recall_precision` / `get_recall_precision`,
//! reference 2.5 §2 tools 19–20, 2.6.14 §1.3) is the β of the calibration objective
//! `TPR + β·(1 − FPR)`, stored in the `meta` table under `recall_beta:<agent_id>`, so the
//! threshold the gate applies follows it. Setting it recalibrates the agent at once and is
//! rolled back when that calibration fails. It never touches another agent's β or rows.

use rusqlite::OptionalExtension;
use serde::Serialize;

/// Rows sampled per agent for a calibration, newest first.
pub const CALIBRATION_SAMPLE_ROWS: usize = 5_000;

use crate::config::EngineConfig;
use crate::error::{Error, Result};
use crate::recall::read::{SCORING_VERSION, parse_json};
use crate::recall::stages::calibrate::{CalibrationParams, calibrate};
use crate::recall::types::CalibrationOutcome;
use crate::store::Store;
use crate::vector::{decode, format_from_tag};

/// Calibrates the gate for `agent_id` from its stored vectors (newest
/// [`CALIBRATION_SAMPLE_ROWS`] memories, sessions = `source.id`, else `msg_id` prefix,
/// else channel) and stores it in the `calibration` table, which the gate then reads.
pub(crate) fn calibrate_threshold(
    store: &Store,
    config: &EngineConfig,
    agent_id: &str,
) -> Result<CalibrationOutcome> {
    let target = store.vector_target();
    let (vectors, sessions) = store.read(|conn| {
        let mut stmt = conn.prepare(
            "SELECT embedding, embedding_format, source, channel FROM memories \
             WHERE agent_id = ?1 AND embedding IS NOT NULL AND embedding_model = ?2 \
             AND embedding_dim = ?3 ORDER BY created_at_ms DESC, id ASC LIMIT ?4",
        )?;
        let mut rows = stmt.query(rusqlite::params![
            agent_id,
            target.model_id,
            target.dim as i64,
            CALIBRATION_SAMPLE_ROWS as i64
        ])?;
        let mut vectors = Vec::new();
        let mut sessions = Vec::new();
        while let Some(row) = rows.next()? {
            let blob: Vec<u8> = row.get(0)?;
            let Some(v) = format_from_tag(&row.get::<_, String>(1)?).and_then(|f| decode(&blob, f))
            else {
                continue;
            };
            let source = parse_json(&row.get::<_, String>(2)?);
            let session = source
                .as_ref()
                .and_then(|s| s.get("id")?.as_str().map(str::to_owned))
                .filter(|s| !s.is_empty())
                .unwrap_or_else(|| {
                    format!("channel:{}", row.get::<_, String>(3).unwrap_or_default())
                });
            vectors.push(v);
            sessions.push(session);
        }
        // Oldest first: positive pairs are consecutive members of a session in time order.
        vectors.reverse();
        sessions.reverse();
        Ok((vectors, sessions))
    })?;
    let refs: Vec<&[f32]> = vectors.iter().map(Vec::as_slice).collect();
    let params = CalibrationParams {
        beta: effective_recall_beta(store, config, agent_id)?,
        ..CalibrationParams::default()
    };
    let calibration = calibrate(&refs, &sessions, &params)?;
    let payload = serde_json::to_string(&calibration).map_err(|err| Error::InvalidInput {
        field: "calibration",
        reason: err.to_string(),
    })?;
    store.write(|tx| {
        tx.execute(
            "INSERT INTO calibration(agent_id, payload, embedding_model, embedding_dim, \
             scoring_version, calibrated_at_ms) VALUES (?1, ?2, ?3, ?4, ?5, ?6) \
             ON CONFLICT(agent_id) DO UPDATE SET payload = excluded.payload, \
             embedding_model = excluded.embedding_model, embedding_dim = excluded.embedding_dim, \
             scoring_version = excluded.scoring_version, calibrated_at_ms = excluded.calibrated_at_ms",
            rusqlite::params![
                agent_id,
                payload,
                target.model_id,
                target.dim as i64,
                SCORING_VERSION,
                chrono::Utc::now().timestamp_millis()
            ],
        )?;
        Ok(())
    })?;
    Ok(CalibrationOutcome {
        agent_id: agent_id.to_owned(),
        calibration,
    })
}

/// The largest β accepted (the wire schema's bound).
pub(crate) const MAX_BETA: f64 = 100.0;

fn key(agent_id: &str) -> String {
    format!("recall_beta:{agent_id}")
}

/// The β presets and their labels: strict 2.0, balanced 1.0, lenient 0.5.
pub const PRESETS: [(&str, f64); 3] = [("strict", 2.0), ("balanced", 1.0), ("lenient", 0.5)];

/// The preset label of `beta`, or `custom`.
pub fn precision_label(beta: f64) -> &'static str {
    PRESETS
        .iter()
        .find(|(_, b)| (*b - beta).abs() < 1e-12)
        .map_or("custom", |(label, _)| label)
}

/// What `set_recall_precision` did.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct PrecisionOutcome {
    /// The agent.
    pub agent_id: String,
    /// The β now in force for the agent (its own, else the global one).
    pub beta: f64,
    /// True when the agent's override was removed.
    pub cleared: bool,
    /// The recalibration that applied it, or why it failed (the old β was then restored).
    pub calibration: std::result::Result<CalibrationOutcome, String>,
}

/// The agent's own β, if one is set.
pub(crate) fn recall_beta(store: &Store, agent_id: &str) -> Result<Option<f64>> {
    store.read(|conn| {
        let value: Option<String> = conn
            .prepare_cached("SELECT value FROM meta WHERE key = ?")?
            .query_row([key(agent_id)], |row| row.get(0))
            .optional()?;
        Ok(value.and_then(|v| v.parse::<f64>().ok()))
    })
}

/// The β calibration uses for `agent_id`: its own, else the configured global one.
pub(crate) fn effective_recall_beta(
    store: &Store,
    config: &EngineConfig,
    agent_id: &str,
) -> Result<f64> {
    Ok(recall_beta(store, agent_id)?.unwrap_or(config.recall.precision_beta))
}

fn store_recall_beta(store: &Store, agent_id: &str, beta: Option<f64>) -> Result<()> {
    store.write(|tx| {
        match beta {
            Some(beta) => tx.execute(
                "INSERT INTO meta(key, value) VALUES (?1, ?2) \
                 ON CONFLICT(key) DO UPDATE SET value = excluded.value",
                rusqlite::params![key(agent_id), beta.to_string()],
            )?,
            None => tx.execute("DELETE FROM meta WHERE key = ?", [key(agent_id)])?,
        };
        Ok(())
    })
}

/// Sets (`Some`) or clears (`None`) the agent's β, then recalibrates the agent with it.
/// When the calibration fails the previous β is restored and the failure reported.
pub(crate) fn set_recall_precision(
    store: &Store,
    config: &EngineConfig,
    agent_id: &str,
    beta: Option<f64>,
) -> Result<PrecisionOutcome> {
    crate::text::check_agent(agent_id)?;
    if let Some(b) = beta
        && !(b.is_finite() && b > 0.0 && b <= MAX_BETA)
    {
        return Err(Error::InvalidInput {
            field: "beta",
            reason: format!("must be > 0 and <= {MAX_BETA}, got {b}"),
        });
    }
    let previous = recall_beta(store, agent_id)?;
    store_recall_beta(store, agent_id, beta)?;
    let calibration = match calibrate_threshold(store, config, agent_id) {
        Ok(outcome) => Ok(outcome),
        Err(err) => {
            store_recall_beta(store, agent_id, previous)?;
            Err(err.to_string())
        }
    };
    Ok(PrecisionOutcome {
        agent_id: agent_id.to_owned(),
        beta: effective_recall_beta(store, config, agent_id)?,
        cleared: beta.is_none() && calibration.is_ok(),
        calibration,
    })
}
