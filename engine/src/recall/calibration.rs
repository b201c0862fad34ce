//! `Engine::calibrate_threshold`: fits the gate's cosine threshold to one agent's stored
//! vectors and stores it in the `calibration` table, which recall's gate then reads. It reads
//! only that agent's rows.

use crate::config::EngineConfig;
use crate::error::{Error, Result};
use crate::recall::stages::calibrate::{CalibrationParams, calibrate};
use crate::recall::{CALIBRATION_SAMPLE_ROWS, CalibrationOutcome, SCORING_VERSION, parse_json};
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
        beta: crate::recall::precision::effective_recall_beta(store, config, agent_id)?,
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
