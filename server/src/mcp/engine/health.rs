//! `check_health` over the engine, and the store statistics `cpersona check` prints: schema
//! version, SQLite integrity, row counts, the embedding queue, the index generations, the
//! embedder's identity and health, and the set `CPERSONA_*` settings without effect, in
//! CPersona's `{issues, severity_summary, status, stats}` shape. It reads through its own
//! read-only connection and repairs only by draining the embedding queue.

use serde_json::{Value, json};

use crate::mcp::backend::{ToolError, ToolResult};
use crate::mcp::engine::backend::EngineBackend;
use crate::mcp::engine::convert::embedder_advisory;
use crate::mcp::wire;

/// The checks this build runs, in order.
pub(crate) const CHECKS: &[&str] = &[
    "schema_version",
    "integrity",
    "embedding_queue",
    "embedder",
    "index_freshness",
    "settings",
];
/// Queued rows one `fix=true` run embeds at most (CPersona re-embeds ≤500 rows per run).
const FIX_MAX_ROWS: usize = 500;

fn issue(check: &str, severity: &str, hint: String, extra: Value) -> Value {
    let mut issue = json!({"type": check, "check": check, "severity": severity, "hint": hint});
    if let (Some(object), Value::Object(extra)) = (issue.as_object_mut(), extra) {
        object.extend(extra);
    }
    issue
}

/// `check_health`.
pub(crate) fn check_health(backend: &EngineBackend, args: wire::CheckHealthArgs) -> ToolResult {
    if let Some(unknown) = args.checks.iter().find(|c| !CHECKS.contains(&c.as_str())) {
        return Err(ToolError::user(format!(
            "unknown check {unknown:?}; this build runs {}",
            CHECKS.join(", ")
        )));
    }
    let selected = |name: &str| args.checks.is_empty() || args.checks.iter().any(|c| c == name);
    let engine = backend.engine();
    let mut fixed = 0usize;
    if args.fix && selected("embedding_queue") {
        let drained = engine
            .drain_embedding_queue_now(FIX_MAX_ROWS)
            .map_err(|e| ToolError::internal(e.to_string()))?;
        fixed = drained.embedded;
    }
    let stats = engine
        .store_stats(&args.agent_id)
        .map_err(|e| ToolError::internal(format!("cannot read the store: {e}")))?;
    let queue = engine
        .get_queue_status()
        .map_err(|e| ToolError::internal(e.to_string()))?;
    let index = engine
        .index_status()
        .map_err(|e| ToolError::internal(e.to_string()))?;
    let mut issues = Vec::new();
    if selected("schema_version") && stats.schema_version != stats.supported_schema_version {
        issues.push(issue(
            "schema_version",
            "critical",
            format!(
                "schema version {} differs from this build's {}",
                stats.schema_version, stats.supported_schema_version
            ),
            json!({}),
        ));
    }
    if selected("integrity") && stats.integrity != ["ok"] {
        issues.push(issue(
            "integrity",
            "critical",
            "SQLite reports corruption: restore from a backup or export what still reads".into(),
            json!({"details": stats.integrity}),
        ));
    }
    if selected("embedding_queue") && queue.pending > 0 {
        issues.push(issue(
            "embedding_queue",
            if queue.exhausted > 0 { "warn" } else { "info" },
            "rows wait for their embedding; they fill in the background while the embedder \
             answers (check_health with fix=true embeds up to 500 now)"
                .into(),
            json!({"count": queue.pending, "exhausted": queue.exhausted, "repairable": true}),
        ));
    }
    let identity = backend.embedder().identity().clone();
    let advisory = embedder_advisory(backend.embedder());
    if let Some(advisory) = advisory.as_ref().filter(|_| selected("embedder")) {
        let severity = if advisory["severity"] == "fault" {
            "warn"
        } else {
            "info"
        };
        issues.push(issue(
            "embedder",
            severity,
            advisory["reason"].as_str().unwrap_or_default().to_owned(),
            json!({"advisory": advisory}),
        ));
    }
    if selected("index_freshness") {
        let limit = backend.recall_settings().index_stale_warn_share;
        for table in &index.tables {
            if let Some(share) = table
                .stale_share
                .filter(|&s| s > limit && table.live_tail > 0)
            {
                issues.push(issue(
                    "index_freshness",
                    "warn",
                    format!(
                        "{} rows of {} changed since its index generation ({:.0}% > the {:.0}% \
                         CPERSONA_INDEX_STALE_WARN_SHARE): recall scores them exactly, which \
                         is slower; run `cpersona index rebuild`",
                        table.live_tail,
                        table.table.name(),
                        share * 100.0,
                        limit * 100.0
                    ),
                    json!({"table": table.table.name(), "live_tail": table.live_tail,
                           "rows": table.rows, "stale_share": share, "warn_share": limit}),
                ));
            }
        }
    }
    let unhonoured = backend.unhonoured_settings();
    if selected("settings") && !unhonoured.is_empty() {
        let names: Vec<&str> = unhonoured.iter().map(|s| s.name.as_str()).collect();
        issues.push(issue(
            "settings",
            "warn",
            format!(
                "set but without effect on this server: {}; unset them or see each note",
                names.join(", ")
            ),
            json!({"settings": unhonoured}),
        ));
    }
    let count = |severity: &str| issues.iter().filter(|i| i["severity"] == severity).count();
    let (critical, warn, info) = (count("critical"), count("warn"), count("info"));
    let status = if critical > 0 {
        "unhealthy"
    } else if warn > 0 {
        "degraded"
    } else {
        "healthy"
    };
    let checks_run: Vec<&str> = CHECKS.iter().copied().filter(|c| selected(c)).collect();
    Ok(json!({
        "ok": true,
        "total_memories": stats.memories,
        "issues": issues,
        "severity_summary": {"critical": critical, "warn": warn, "info": info},
        "status": status,
        "fixed": fixed,
        "checks_run": checks_run,
        "stats": {
            "db_size_bytes": stats.db_size_bytes,
            "schema_version": stats.schema_version,
            "memories": stats.memories,
            "episodes": stats.episodes,
            "profiles": stats.profiles,
            "pending_tasks": stats.pending_tasks,
            "memories_without_vector": stats.memories_without_vector,
        },
        "index": serde_json::to_value(&index)
            .map_err(|e| ToolError::internal(e.to_string()))?,
        "embedder": {
            "model_id": identity.model_id,
            "dim": identity.dim,
            "window_tokens": identity.window_tokens,
            "healthy": advisory.is_none(),
        },
    }))
}
