//! The store-wide checks, judged from facts: the schema step (`schema_version`), SQLite's own
//! check (`sqlite_integrity`), index freshness per table (`index_freshness`), the gate's
//! calibration (`calibration_staleness`) and settings without effect (`settings`).

use crate::health::stages::facts::{CalibrationFacts, IndexFacts, SchemaFacts, UnusedSetting};
use crate::health::stages::finding::{Finding, Severity};
use crate::health::stages::vectors::human_age;

/// A calibration older than this is reported stale (CPersona's `CALIBRATION_STALE_DAYS`).
pub const CALIBRATION_STALE_MS: i64 = 90 * 86_400_000;
/// Rows with vectors from which a table without a usable generation is worth a note
/// (CPersona's `vector_index_absent` threshold, `INDEX_MATTERS_ROWS`).
pub const INDEX_MATTERS_ROWS: u64 = 1_000;

/// `schema_version`: the file's schema step against this build's.
pub fn schema_version(facts: &SchemaFacts) -> Finding {
    if facts.version == facts.supported {
        return Finding::ok(
            "schema_version",
            format!("schema version {}", facts.version),
        );
    }
    Finding::new(
        "schema_version",
        Severity::Error,
        format!(
            "schema version {} differs from this build's {}",
            facts.version, facts.supported
        ),
    )
    .remedy("run the build that matches the file, or restore a backup")
    .review()
}

/// `sqlite_integrity`: `PRAGMA quick_check`.
pub fn sqlite_integrity(facts: &SchemaFacts) -> Finding {
    if facts.integrity == ["ok"] {
        return Finding::ok("sqlite_integrity", "PRAGMA quick_check: ok");
    }
    Finding::new(
        "sqlite_integrity",
        Severity::Error,
        format!("SQLite reports corruption: {}", facts.integrity.join("; ")),
    )
    .remedy("restore from a backup, or export what still reads and import it into a new store")
    .review()
    .with("details", &facts.integrity)
}

/// `index_freshness`: rows changed since a table's generation are scored exactly, which is
/// correct but slower; past `warn_share` of the generation it is a warning.
pub fn index_freshness(tables: &[IndexFacts], warn_share: f64) -> Finding {
    let stale: Vec<&IndexFacts> = tables
        .iter()
        .filter(|t| t.live_tail > 0 && t.stale_share.is_some_and(|s| s > warn_share))
        .collect();
    let absent: Vec<&IndexFacts> = tables
        .iter()
        .filter(|t| t.stale_share.is_none() && t.live_tail >= INDEX_MATTERS_ROWS)
        .collect();
    let base = Finding::ok("index_freshness", "")
        .with("tables", tables)
        .with("warn_share", warn_share);
    if !stale.is_empty() {
        let parts: Vec<String> = stale
            .iter()
            .map(|t| {
                format!(
                    "{}: {} rows changed since its generation of {} ({:.0}%)",
                    t.table,
                    t.live_tail,
                    t.rows,
                    t.stale_share.unwrap_or(0.0) * 100.0
                )
            })
            .collect();
        let table = stale.first().map_or("", |t| t.table);
        let rows: u64 = stale.iter().map(|t| t.live_tail).sum();
        return Finding {
            severity: Severity::Warning,
            reason: format!(
                "{} (> the {:.0}% CPERSONA_INDEX_STALE_WARN_SHARE): recall scores them exactly, \
                 which is slower",
                parts.join("; "),
                warn_share * 100.0
            ),
            remedy: "run `cpersona index rebuild`".into(),
            count: Some(rows),
            ..base
        }
        .with("table", table);
    }
    if !absent.is_empty() {
        let parts: Vec<String> = absent
            .iter()
            .map(|t| {
                format!(
                    "{}: {} rows scored exactly ({})",
                    t.table,
                    t.live_tail,
                    t.note.as_deref().unwrap_or("no generation")
                )
            })
            .collect();
        return Finding {
            severity: Severity::Info,
            reason: format!("no usable index generation: {}", parts.join("; ")),
            remedy: "run `cpersona index rebuild`".into(),
            ..base
        };
    }
    Finding {
        reason: "every index generation is fresh enough".into(),
        ..base
    }
}

/// `calibration_staleness`: the gate reads a calibration only when it was fitted on the
/// store's model and dimension with the current scoring; another one is ignored (the gate
/// falls back to its default). Old ones are noted.
pub fn calibration_staleness(
    facts: &CalibrationFacts,
    store_model_id: &str,
    store_dim: usize,
) -> Finding {
    let mut ignored = Vec::new();
    let mut old = Vec::new();
    for row in &facts.rows {
        let who = if row.agent_id.is_empty() {
            "global".to_owned()
        } else {
            format!("agent {:?}", row.agent_id)
        };
        if row.model_id != store_model_id || row.dim != store_dim as u64 {
            ignored.push(format!(
                "{who}: fitted on {} ({} dims), the store's vectors are {store_model_id} \
                 ({store_dim} dims)",
                row.model_id, row.dim
            ));
        } else if row.scoring_version != facts.scoring_version {
            ignored.push(format!(
                "{who}: scoring {:?}, the gate reads {:?}",
                row.scoring_version, facts.scoring_version
            ));
        } else if facts.now_ms - row.calibrated_at_ms > CALIBRATION_STALE_MS {
            old.push(format!(
                "{who}: fitted {} ago",
                human_age(facts.now_ms - row.calibrated_at_ms)
            ));
        }
    }
    let base = Finding::ok("calibration_staleness", "").with("calibrations", &facts.rows);
    if !ignored.is_empty() {
        return Finding {
            severity: Severity::Warning,
            reason: format!(
                "stale calibration, ignored by the gate (it uses its default threshold): {}",
                ignored.join("; ")
            ),
            remedy: "run calibrate_threshold for each agent named".into(),
            count: Some(ignored.len() as u64),
            ..base
        }
        .with("state", "stale");
    }
    if !old.is_empty() {
        return Finding {
            severity: Severity::Info,
            reason: format!("calibrations older than 90 days: {}", old.join("; ")),
            remedy: "run calibrate_threshold again when the stored rows have changed".into(),
            count: Some(old.len() as u64),
            ..base
        }
        .with("state", "old");
    }
    if facts.rows.is_empty() {
        return Finding {
            severity: Severity::Info,
            reason: "never calibrated: the gate uses its default threshold".into(),
            remedy: "run calibrate_threshold once the agent has a few sessions of memories".into(),
            ..base
        }
        .with("state", "never_calibrated");
    }
    Finding {
        reason: format!("{} calibrations match the store", facts.rows.len()),
        ..base
    }
    .with("state", "ok")
}

/// `settings`: entries set but without effect (the server lists them). Inert ones (a tuning
/// of a mechanism that changes no answer here) are information; an unknown name (a typo?)
/// or anything else the server lists is a warning.
pub fn settings(unused: &[UnusedSetting]) -> Finding {
    if unused.is_empty() {
        return Finding::ok("settings", "every set setting takes effect");
    }
    let names: Vec<&str> = unused.iter().map(|s| s.name.as_str()).collect();
    let severity = if unused.iter().all(|s| s.status == "inert") {
        Severity::Info
    } else {
        Severity::Warning
    };
    Finding::new(
        "settings",
        severity,
        format!(
            "set but without effect on this server: {}",
            names.join(", ")
        ),
    )
    .remedy("unset them or see each note")
    .count(unused.len() as u64)
    .with("settings", unused)
}
