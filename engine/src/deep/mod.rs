//! `deep_check`: CPersona's heuristic data-quality pass over one agent's rows (2.6.14's
//! `DEEP_CHECKS`): speakerless user rows a `[name] ` prefix can name (`anonymous_source`,
//! repairable), trivial rows (`short_content`, repairable: deleted unless locked), a profile
//! not updated for 30 days, episodes whose span holds no memory, calibration staleness (the
//! health check's judgment), near-duplicate pairs by cosine, text not in Unicode NFC, and
//! stored vectors that are not unit length. Only the two repairable checks write, each in
//! its own step; the others are reads. A paused session bucket turns `fix` into a read
//! (`repairs_skipped`). Unknown check names are refused, never skipped.

mod read;
pub mod stages;

use std::collections::BTreeMap;

use serde::Serialize;
use serde_json::{Value, json};

use crate::error::{Error, Result};
use crate::memories::{MemoryIdRequest, delete_memory};
use crate::store::Store;
use crate::text::check_agent;
use crate::time::{format_ms, now_ms};

/// Every deep check, in the order they run.
pub const DEEP_CHECKS: &[&str] = &[
    "anonymous_source",
    "short_content",
    "stale_profile",
    "orphaned_episodes",
    "calibration_staleness",
    "near_duplicate",
    "unnormalized_content",
    "embedding_norm",
];

/// A profile older than this many days is stale.
pub const STALE_PROFILE_DAYS: i64 = 30;
use crate::config::DeepConfig;
/// Vectors per table `embedding_norm` reads, newest first.
pub const NORM_SAMPLE_ROWS: usize = 2_000;

/// `deep_check`'s arguments.
#[derive(Clone, Debug, Default)]
pub struct DeepRequest {
    /// The agent (required).
    pub agent_id: String,
    /// Run the repairs of the repairable checks.
    pub fix: bool,
    /// Only these checks; empty = all.
    pub checks: Vec<String>,
    /// Pause bucket.
    pub session_key: String,
}

/// `deep_check`'s answer, in CPersona's shape.
#[derive(Clone, Debug, PartialEq, Serialize, schemars::JsonSchema)]
pub struct DeepOutcome {
    /// The agent checked.
    pub agent_id: String,
    /// The checks that ran, in order.
    pub checks_run: Vec<&'static str>,
    /// Each check's result by name.
    pub results: BTreeMap<String, Value>,
    /// Whether repairs ran (`fix` and not paused).
    pub fixed: bool,
    /// Present (true) when a pause turned `fix` into a read.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub repairs_skipped: Option<bool>,
}

/// Runs the selected deep checks over `req.agent_id`'s rows.
pub(crate) fn deep_check(
    store: &Store,
    caps: &DeepConfig,
    req: &DeepRequest,
) -> Result<DeepOutcome> {
    check_agent(&req.agent_id)?;
    let unknown: Vec<&str> = req
        .checks
        .iter()
        .map(String::as_str)
        .filter(|name| !DEEP_CHECKS.contains(name))
        .collect();
    if !unknown.is_empty() {
        return Err(Error::invalid(
            "checks",
            format!(
                "unknown check name(s): {}. Valid names: {}",
                unknown.join(", "),
                DEEP_CHECKS.join(", ")
            ),
        ));
    }
    let selected: Vec<&'static str> = DEEP_CHECKS
        .iter()
        .copied()
        .filter(|name| req.checks.is_empty() || req.checks.iter().any(|c| c == name))
        .collect();
    let paused = req.fix && store.pause_expiry(&req.session_key).is_some();
    let fix = req.fix && !paused;
    let agent = req.agent_id.as_str();
    let mut results = BTreeMap::new();
    for &name in &selected {
        let result = match name {
            "anonymous_source" => anonymous_source(store, agent, fix)?,
            "short_content" => short_content(store, agent, fix)?,
            "stale_profile" => stale_profile(store, agent)?,
            "orphaned_episodes" => orphaned_episodes(store, agent)?,
            "calibration_staleness" => calibration_staleness(store, agent)?,
            "near_duplicate" => near_duplicate(store, agent, caps.near_duplicate_row_cap)?,
            "unnormalized_content" => {
                unnormalized_content(store, agent, caps.normalization_scan_cap)?
            }
            _ => embedding_norm(store, agent)?,
        };
        results.insert(name.to_owned(), result);
    }
    Ok(DeepOutcome {
        agent_id: req.agent_id.clone(),
        checks_run: selected,
        results,
        fixed: fix,
        repairs_skipped: paused.then_some(true),
    })
}

fn anonymous_source(store: &Store, agent: &str, fix: bool) -> Result<Value> {
    let rows = store.read(|conn| read::anonymous_user_rows(conn, agent))?;
    let mut recoverable = Vec::new();
    let mut unrecoverable = Vec::new();
    for row in &rows {
        match stages::speaker_from_prefix(&row.text) {
            Some(name) => recoverable.push((row.id, name, row.locked)),
            None => unrecoverable.push(json!({
                "id": row.id, "content_preview": row.text.chars().take(60).collect::<String>()})),
        }
    }
    let locked = recoverable.iter().filter(|(_, _, locked)| *locked).count();
    let mut fixed = 0usize;
    if fix {
        fixed = store.write(|tx| {
            let mut n = 0;
            for (id, name, locked) in &recoverable {
                if !locked && read::set_speaker(tx, *id, name)? {
                    n += 1;
                }
            }
            Ok(n)
        })?;
    }
    let mut result =
        json!({"recoverable": recoverable.len(), "unrecoverable": unrecoverable.len()});
    if fix {
        result["fixed"] = json!(fixed);
    }
    let unfixable_locked = if fix {
        recoverable.len() - fixed
    } else {
        locked
    };
    if unfixable_locked > 0 {
        result["unfixable_locked"] = json!(unfixable_locked);
    }
    if !recoverable.is_empty() {
        result["samples"] = recoverable
            .iter()
            .take(5)
            .map(|(id, name, _)| json!({"id": id, "recovered_name": name}))
            .collect();
    }
    if !unrecoverable.is_empty() {
        result["unrecoverable_samples"] = Value::Array(unrecoverable.into_iter().take(5).collect());
    }
    Ok(result)
}

fn short_content(store: &Store, agent: &str, fix: bool) -> Result<Value> {
    let candidates =
        store.read(|conn| read::short_rows(conn, agent, stages::SHORT_CONTENT_THRESHOLD))?;
    let rows: Vec<_> = candidates
        .into_iter()
        .filter(|r| stages::short_content_length(&r.text) <= stages::SHORT_CONTENT_THRESHOLD)
        .collect();
    let mut result = json!({"count": rows.len()});
    if fix {
        // Through the delete every tool uses (derived rows, change log, index tombstones);
        // a locked row is never deleted.
        let mut fixed = 0usize;
        for row in rows.iter().filter(|r| !r.locked) {
            let req = MemoryIdRequest {
                memory_id: row.id,
                agent_id: agent.to_owned(),
                session_key: String::new(),
            };
            if delete_memory(store, &req).is_ok() {
                fixed += 1;
            }
        }
        result["fixed"] = json!(fixed);
    }
    if !rows.is_empty() {
        result["samples"] = rows
            .iter()
            .take(10)
            .map(|r| json!({"id": r.id, "content": r.text}))
            .collect();
    }
    Ok(result)
}

fn stale_profile(store: &Store, agent: &str) -> Result<Value> {
    let before = now_ms() - STALE_PROFILE_DAYS * 86_400_000;
    let rows = store.read(|conn| read::stale_profile(conn, agent, before))?;
    let mut result = json!({"count": rows.len(), "threshold_days": STALE_PROFILE_DAYS});
    if let Some(ms) = rows.first() {
        result["last_updated"] = json!(format_ms(*ms));
    }
    Ok(result)
}

fn orphaned_episodes(store: &Store, agent: &str) -> Result<Value> {
    let (times, spans) = store.read(|conn| {
        Ok((
            read::memory_times(conn, agent)?,
            read::episode_spans(conn, agent)?,
        ))
    })?;
    let orphans: Vec<_> = spans
        .iter()
        .filter(|s| match (s.start_ms, s.end_ms) {
            (Some(start), Some(end)) => !stages::span_holds_a_memory(&times, start, end),
            _ => true,
        })
        .collect();
    let mut result = json!({"count": orphans.len()});
    if !orphans.is_empty() {
        result["samples"] = orphans
            .iter()
            .take(5)
            .map(|s| {
                json!({"id": s.id, "summary": s.summary.chars().take(80).collect::<String>(),
                       "start": s.start, "end": s.end})
            })
            .collect();
    }
    Ok(result)
}

/// The `calibration_staleness` health check's judgment for this agent (its own read only).
fn calibration_staleness(store: &Store, agent: &str) -> Result<Value> {
    let finding = crate::health::calibration_finding(store, agent)?;
    let status = match finding.severity {
        crate::health::stages::Severity::Ok => "ok",
        _ => "stale",
    };
    let mut result = finding.issue();
    result["status"] = json!(status);
    Ok(result)
}

fn near_duplicate(store: &Store, agent: &str, row_cap: usize) -> Result<Value> {
    let target = store.vector_target();
    let (rows, complete) =
        store.read(|conn| read::newest_vectors(conn, agent, "memories", &target, row_cap))?;
    if rows.len() < 2 {
        return Ok(json!({"pairs": 0, "rows_scanned": rows.len()}));
    }
    let vectors: Vec<&[f32]> = rows.iter().map(|r| r.vector.as_slice()).collect();
    let texts: Vec<&str> = rows.iter().map(|r| r.text.as_str()).collect();
    let (count, pairs) =
        stages::near_duplicate_pairs(&vectors, &texts, stages::NEAR_DUPLICATE_SAMPLES);
    let mut result = json!({"pairs": count, "rows_scanned": rows.len(),
                            "threshold": stages::NEAR_DUPLICATE_COSINE, "complete": complete});
    if !pairs.is_empty() {
        result["samples"] = pairs
            .iter()
            .map(|p| {
                let preview = |i: usize| rows[i].text.chars().take(60).collect::<String>();
                json!({"id_a": rows[p.a].id, "id_b": rows[p.b].id,
                       "cosine": (f64::from(p.cosine) * 10_000.0).round() / 10_000.0,
                       "preview_a": preview(p.a), "preview_b": preview(p.b)})
            })
            .collect();
        result["hint"] = json!("review with merge_memories / delete_memory (agent judgment)");
    }
    Ok(result)
}

fn unnormalized_content(store: &Store, agent: &str, scan_cap: usize) -> Result<Value> {
    let mut counts = BTreeMap::new();
    let mut scanned = BTreeMap::new();
    let mut complete = true;
    let mut samples = Vec::new();
    for table in ["memories", "episodes"] {
        let mut rows = store.read(|conn| read::newest_texts(conn, agent, table, scan_cap + 1))?;
        complete &= rows.len() <= scan_cap;
        rows.truncate(scan_cap);
        let mut offenders = 0usize;
        for row in rows.iter().filter(|r| !stages::is_nfc(&r.text)) {
            offenders += 1;
            if samples.len() < 10 {
                samples.push(json!({"table": table, "id": row.id,
                    "excerpt": row.text.chars().take(80).collect::<String>(),
                    "decomposed_codepoints": stages::decomposed_codepoints(&row.text)}));
            }
        }
        counts.insert(table, offenders);
        scanned.insert(table, rows.len());
    }
    let mut result = json!({"count": counts.values().sum::<usize>(), "by_table": counts,
                            "rows_scanned": scanned, "complete": complete});
    if !samples.is_empty() {
        result["samples"] = Value::Array(samples);
    }
    Ok(result)
}

fn embedding_norm(store: &Store, agent: &str) -> Result<Value> {
    let target = store.vector_target();
    let mut counts = BTreeMap::new();
    let mut scanned = BTreeMap::new();
    let mut complete = true;
    let mut samples = Vec::new();
    for table in ["memories", "episodes"] {
        let (rows, whole) = store
            .read(|conn| read::newest_vectors(conn, agent, table, &target, NORM_SAMPLE_ROWS))?;
        complete &= whole;
        let off: Vec<_> = rows
            .iter()
            .filter(|r| !stages::is_unit(&r.vector))
            .collect();
        for row in off.iter().take(10usize.saturating_sub(samples.len())) {
            let norm = row
                .vector
                .iter()
                .map(|x| f64::from(*x).powi(2))
                .sum::<f64>()
                .sqrt();
            samples.push(json!({"table": table, "id": row.id, "norm": norm}));
        }
        counts.insert(table, off.len());
        scanned.insert(table, rows.len());
    }
    let mut result = json!({"count": counts.values().sum::<usize>(), "by_table": counts,
                            "rows_scanned": scanned, "tolerance": stages::NORM_TOLERANCE,
                            "complete": complete});
    if !samples.is_empty() {
        result["samples"] = Value::Array(samples);
    }
    Ok(result)
}
