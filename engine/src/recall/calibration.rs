//! The gate's calibration: `calibrate_threshold` fits the gate's cosine threshold to one
//! agent's stored vectors (reading only that agent's rows) or, for `agent_id: ""`, to every
//! agent's (the global threshold, which the gate falls back to for an agent without its own),
//! and stores it in the `calibration` table, which recall's gate then reads. CPersona's
//! `method` (`separation`, `percentile`, `zscore`), `sample_size`, `z_factor` and
//! `percentile` choose how.
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
use crate::recall::stages::calibrate::{CalibrationParams, ThresholdMethod, calibrate};
use crate::recall::types::CalibrationOutcome;
use crate::store::Store;
use crate::vector::{decode, format_from_tag};

/// The most rows `sample_size` may ask for: the null is every pair among them, so its cost
/// grows with the square (CPersona clamps for the same reason, its bug-053).
pub const MAX_SAMPLE_SIZE: usize = 2_000;

/// `calibrate_threshold` as the engine takes it.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct CalibrateRequest<'a> {
    /// The agent; `""` calibrates the global threshold from every agent's rows.
    pub agent_id: &'a str,
    /// How the threshold is placed; `separation` by default.
    pub method: ThresholdMethod,
    /// Rows sampled for the null distribution (1..=[`MAX_SAMPLE_SIZE`]); `None`, 200.
    pub sample_size: Option<usize>,
    /// Pause bucket: while it is paused the calibration is computed and answered, not stored.
    pub session_key: &'a str,
}

impl CalibrateRequest<'_> {
    fn check(&self) -> Result<()> {
        if let Some(n) = self.sample_size
            && !(1..=MAX_SAMPLE_SIZE).contains(&n)
        {
            return Err(Error::invalid(
                "sample_size",
                format!("must be in 1..={MAX_SAMPLE_SIZE}, got {n}"),
            ));
        }
        match self.method {
            ThresholdMethod::Percentile(q) if !(q.is_finite() && q > 0.0 && q <= 1.0) => Err(
                Error::invalid("percentile", format!("must be in (0, 1], got {q}")),
            ),
            ThresholdMethod::ZScore(z) if !(z.is_finite() && (-10.0..=10.0).contains(&z)) => Err(
                Error::invalid("z_factor", format!("must be in -10..=10, got {z}")),
            ),
            _ => Ok(()),
        }
    }
}

/// Calibrates the gate for `req.agent_id` (every agent for `""`) from its stored vectors
/// (newest [`CALIBRATION_SAMPLE_ROWS`] memories, sessions = `source.id`, else channel, per
/// agent) and stores it in the `calibration` table, which the gate then reads.
pub(crate) fn calibrate_threshold(
    store: &Store,
    config: &EngineConfig,
    req: &CalibrateRequest<'_>,
) -> Result<CalibrationOutcome> {
    req.check()?;
    let agent_id = req.agent_id;
    let target = store.vector_target();
    let (vectors, sessions) = store.read(|conn| {
        let mut stmt = conn.prepare(
            "SELECT embedding, embedding_format, source, channel, agent_id FROM memories \
             WHERE (?1 = '' OR agent_id = ?1) AND embedding IS NOT NULL \
             AND embedding_model = ?2 AND embedding_dim = ?3 \
             ORDER BY created_at_ms DESC, id ASC LIMIT ?4",
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
            // Two agents' rows never share a session, whatever their sources say.
            let owner: String = row.get(4)?;
            vectors.push(v);
            sessions.push((owner, session));
        }
        // Oldest first: positive pairs are consecutive members of a session in time order.
        vectors.reverse();
        sessions.reverse();
        Ok((vectors, sessions))
    })?;
    let refs: Vec<&[f32]> = vectors.iter().map(Vec::as_slice).collect();
    let defaults = CalibrationParams::default();
    let params = CalibrationParams {
        method: req.method,
        null_rows: req.sample_size.unwrap_or(defaults.null_rows),
        beta: effective_recall_beta(store, config, agent_id)?,
        ..defaults
    };
    let calibration = calibrate(&refs, &sessions, &params)?;
    if let Some(no_persist) = store.no_persist("calibrate_threshold", req.session_key) {
        return Ok(CalibrationOutcome {
            agent_id: agent_id.to_owned(),
            calibration,
            no_persist: Some(no_persist),
        });
    }
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
        no_persist: None,
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
    /// Set when persistence was paused for the session: nothing was written.
    pub no_persist: Option<crate::store::pauses::NoPersist>,
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
    session_key: &str,
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
    // Paused: nothing is written and nothing recalibrated; the β in force stays.
    if let Some(no_persist) = store.no_persist("set_recall_precision", session_key) {
        return Ok(PrecisionOutcome {
            agent_id: agent_id.to_owned(),
            beta: effective_recall_beta(store, config, agent_id)?,
            cleared: false,
            calibration: Err("not run: persistence is paused for this session".to_owned()),
            no_persist: Some(no_persist),
        });
    }
    let previous = recall_beta(store, agent_id)?;
    store_recall_beta(store, agent_id, beta)?;
    let request = CalibrateRequest {
        agent_id,
        ..CalibrateRequest::default()
    };
    let calibration = match calibrate_threshold(store, config, &request) {
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
        no_persist: None,
    })
}
