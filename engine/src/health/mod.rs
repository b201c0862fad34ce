//! `check_health`: whether recall works at full strength, and what to do when it does not.
//! The vector arm's state (the embedder, vectors of another model, the share the arm covers,
//! missing vectors, a stuck queue), index freshness, and the checks of CPersona's registry
//! that apply here (FTS integrity, duplicates, oversize rows, future timestamps, malformed
//! JSON, calibration staleness, the schema and SQLite's own check), plus the server's list
//! of settings without effect. `status` is `healthy` only when no finding degrades recall.
//!
//! `checks/` reads the facts, `stages/` judges them (pure), `repair.rs` writes the repairs
//! `fix` may make; with `fix` the verdict is the residual run's, each finding saying what
//! its repair did. A paused process bucket downgrades `fix` to a read (as CPersona does).

pub(crate) mod checks;
mod repair;
pub(crate) mod report;
pub mod stages;

use std::collections::HashMap;

use crate::config::EngineConfig;
use crate::error::{Error, Result};
use crate::health::report::{EmbedderSummary, HealthReport, HealthRequest};
use crate::health::stages::facts::TableVectors;
use crate::health::stages::{
    CHECKS, Finding, Repair, Severity, canonical, rows, store as judge, vectors,
};
use crate::progress::Progress;
use crate::store::Store;
use crate::time::now_ms;

/// Runs the checks of `req`, repairing first when it asks and the store is not paused.
/// With `fix`, `progress` hears of the three phases (checks, repairs, checks again); a cancel
/// is honoured up to the first repair, so a cancelled `fix` wrote nothing.
pub(crate) fn check_health(
    store: &Store,
    config: &EngineConfig,
    req: &HealthRequest,
    progress: &Progress<'_>,
) -> Result<HealthReport> {
    let selected = select(&req.checks)?;
    let paused = req.fix && store.pause_expiry(&req.session_key).is_some();
    let mut repairs: HashMap<&'static str, Repair> = HashMap::new();
    let mut fixed = 0u64;
    let phases = if req.fix && !paused { 3 } else { 1 };
    if req.fix && !paused {
        progress.report(0, Some(phases), "checking before repairs");
        let before = run(store, config, req, &selected)?;
        progress.check("check_health before its repairs")?;
        progress.report(1, Some(phases), "repairing");
        fixed = repair_all(store, req, &before, &mut repairs)?;
        progress.report(2, Some(phases), "checking after repairs");
    }
    let mut report = run(store, config, req, &selected)?.report;
    progress.report(phases, Some(phases), "done");
    if req.fix && !paused {
        for finding in &mut report.findings {
            finding.fixed = match repairs.remove(finding.check) {
                Some(repair) => Some(repair),
                None if finding.severity != Severity::Ok => Some(Repair::report_only(
                    "no safe automatic repair for this check: see the remedy",
                )),
                None => None,
            };
        }
    }
    report.fixed = fixed;
    if paused {
        report.repairs_skipped = Some(
            "persistence is paused (pause_persistence): fix ran as a read; \
             resume_persistence, then fix again"
                .into(),
        );
    }
    Ok(report)
}

/// `get_session_findings`: every check over the whole store without repair (whatever `req`
/// names), delivered by [`stages::findings::deliver`].
pub(crate) fn session_findings(
    store: &Store,
    config: &EngineConfig,
    req: &HealthRequest,
    per_kind_limit: usize,
    summary: bool,
) -> Result<stages::findings::SessionFindings> {
    if per_kind_limit < 1 {
        return Err(crate::error::Error::invalid(
            "per_kind_limit",
            format!("must be at least 1 (got {per_kind_limit})"),
        ));
    }
    let whole = HealthRequest {
        agent_id: String::new(),
        fix: false,
        checks: Vec::new(),
        ..req.clone()
    };
    let report = check_health(store, config, &whole, &Progress::none())?;
    Ok(stages::findings::deliver(
        &report.findings,
        per_kind_limit,
        summary,
    ))
}

/// The `calibration_staleness` finding of `agent` alone: its own read, without the stats
/// and index facts a whole run gathers (for `deep_check`).
pub(crate) fn calibration_finding(store: &Store, agent: &str) -> Result<Finding> {
    calibration_staleness(store, agent, &checks::vectors::embedder(store))
}

fn calibration_staleness(
    store: &Store,
    agent: &str,
    embedder: &stages::facts::EmbedderFacts,
) -> Result<Finding> {
    Ok(judge::calibration_staleness(
        &checks::calibration::calibration(store, agent)?,
        &embedder.store_model_id,
        embedder.store_dim,
    ))
}

/// The registry names of `checks` (every check when empty), in registry order.
fn select(checks: &[String]) -> Result<Vec<&'static str>> {
    let mut wanted = Vec::new();
    for name in checks {
        let Some(check) = canonical(name) else {
            return Err(Error::invalid(
                "checks",
                format!(
                    "unknown check {name:?}; this build runs {}",
                    CHECKS.join(", ")
                ),
            ));
        };
        wanted.push(check);
    }
    Ok(CHECKS
        .iter()
        .copied()
        .filter(|c| wanted.is_empty() || wanted.contains(c))
        .collect())
}

/// One pass of the selected checks, and the facts a repair needs.
struct Run {
    report: HealthReport,
    /// FTS tables that fail their check.
    broken_fts: Vec<&'static str>,
    /// True when the embedder matches the store's vectors (a drain can embed).
    store_matches: bool,
}

fn run(
    store: &Store,
    config: &EngineConfig,
    req: &HealthRequest,
    selected: &[&'static str],
) -> Result<Run> {
    let agent = req.agent_id.as_str();
    let stats = store.store_stats(agent)?;
    let (index_facts, index) = checks::store::index(store)?;
    let embedder = checks::vectors::embedder(store);
    let needs_tables = selected.iter().any(|c| {
        matches!(
            *c,
            "embedding_model" | "vector_coverage" | "null_embedding" | "null_episode_embedding"
        )
    });
    let tables: Vec<TableVectors> = if needs_tables {
        checks::vectors::tables(store, agent)?
    } else {
        Vec::new()
    };
    let table = |name: &str| tables.iter().find(|t| t.table == name);
    let mut broken_fts = Vec::new();
    let mut findings = Vec::new();
    for &check in selected {
        let finding = match check {
            "embedder" => vectors::embedder(&embedder),
            "embedding_model" => vectors::embedding_model(&embedder, &tables),
            "vector_coverage" => vectors::vector_coverage(&embedder, &tables),
            "null_embedding" | "null_episode_embedding" => {
                let name = if check == "null_embedding" {
                    "memories"
                } else {
                    "episodes"
                };
                match table(name) {
                    Some(t) => vectors::null_embedding(&embedder, t),
                    None => continue,
                }
            }
            "stale_pending_tasks" => {
                vectors::stale_pending_tasks(&checks::vectors::queue(store, agent)?)
            }
            "index_freshness" => judge::index_freshness(&index_facts, req.index_stale_warn_share),
            "fts_integrity" => {
                let facts = checks::fts::fts(store)?;
                broken_fts = facts
                    .iter()
                    .filter(|t| t.rows != t.indexed || t.integrity_error.is_some())
                    .map(|t| t.table)
                    .collect();
                rows::fts_integrity(&facts)
            }
            "duplicate_content" => {
                rows::duplicate_content(&checks::rows::duplicates(store, agent)?)
            }
            "oversized_content" => rows::oversized_content(&checks::rows::oversize(
                store,
                agent,
                config.max_content_chars,
            )?),
            "future_timestamp" => {
                let now = now_ms();
                let ahead = checks::rows::future(store, agent, now + rows::FUTURE_SKEW_MS)?;
                rows::future_timestamp(&ahead, now)
            }
            "invalid_json" => rows::invalid_json(&checks::rows::json(store, agent)?),
            "calibration_staleness" => calibration_staleness(store, agent, &embedder)?,
            "schema_version" => judge::schema_version(&checks::store::schema(&stats)),
            "sqlite_integrity" => judge::sqlite_integrity(&checks::store::schema(&stats)),
            "settings" => judge::settings(&req.unused_settings),
            _ => continue,
        };
        findings.push(finding);
    }
    let identity = store.embedder.identity();
    let embedder_summary = EmbedderSummary {
        model_id: identity.model_id.clone(),
        dim: identity.dim,
        window_tokens: identity.window_tokens,
        healthy: !vectors::embedder(&embedder).severity.degrades(),
        fallback: embedder.is_fallback,
    };
    Ok(Run {
        report: HealthReport {
            total_memories: stats.memories,
            findings,
            fixed: 0,
            checks_run: selected.to_vec(),
            stats,
            index,
            embedder: embedder_summary,
            repairs_skipped: None,
        },
        broken_fts,
        store_matches: embedder.store_matches,
    })
}

/// Runs the repair of every finding of `before` that has one; returns the rows written.
fn repair_all(
    store: &Store,
    req: &HealthRequest,
    before: &Run,
    repairs: &mut HashMap<&'static str, Repair>,
) -> Result<u64> {
    let agent = req.agent_id.as_str();
    let needs = |check: &str| {
        before
            .report
            .finding(check)
            .is_some_and(|f: &Finding| f.severity != Severity::Ok)
    };
    let mut fixed = 0u64;
    let mut record = |check: &'static str, repair: Repair| {
        fixed += repair.rows;
        repairs.insert(check, repair);
    };
    if needs("fts_integrity") && !before.broken_fts.is_empty() {
        record(
            "fts_integrity",
            repair::rebuild_fts(store, &before.broken_fts)?,
        );
    }
    if needs("duplicate_content")
        && before
            .report
            .finding("duplicate_content")
            .and_then(|f| f.repairable)
            .unwrap_or(0)
            > 0
    {
        record("duplicate_content", repair::remove_copies(store, agent)?);
    }
    let mut drain = false;
    for (check, table) in [
        ("null_embedding", "memories"),
        ("null_episode_embedding", "episodes"),
    ] {
        if needs(check) {
            record(check, repair::queue_missing(store, table, agent)?);
            drain = true;
        }
    }
    if needs("stale_pending_tasks")
        && before
            .report
            .finding("stale_pending_tasks")
            .and_then(|f| f.repairable)
            .unwrap_or(0)
            > 0
    {
        record("stale_pending_tasks", repair::reset_stuck(store, agent)?);
        drain = true;
    }
    if drain && before.store_matches {
        let (embedded, note) = repair::drain_now(store)?;
        fixed += embedded;
        for check in [
            "null_embedding",
            "null_episode_embedding",
            "stale_pending_tasks",
        ] {
            if let Some(repair) = repairs.get_mut(check) {
                repair.note.push_str(&format!("; {note}"));
            }
        }
    }
    Ok(fixed)
}
