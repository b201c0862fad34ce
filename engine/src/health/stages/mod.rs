//! The pure half of `check_health`: the registry of checks, the judging of each check's facts
//! into a [`Finding`], and the verdict over all of them. No SQLite and no store here (tidy
//! checks it): `health/checks/` reads the facts, `health/repair.rs` writes the repairs.

pub mod facts;
pub mod finding;
pub mod findings;
pub mod rows;
pub mod store;
pub mod vectors;

#[cfg(test)]
mod tests;

use serde::Serialize;

pub use finding::{Finding, Repair, Severity};

/// Every check this build runs, in the order it runs them: the vector arm's first, then
/// CPersona's row checks, the store-wide ones, and the server's `settings`.
pub const CHECKS: &[&str] = &[
    "embedder",
    "embedding_model",
    "vector_coverage",
    "null_embedding",
    "null_episode_embedding",
    "stale_pending_tasks",
    "index_freshness",
    "fts_integrity",
    "duplicate_content",
    "oversized_content",
    "future_timestamp",
    "invalid_json",
    "calibration_staleness",
    "schema_version",
    "sqlite_integrity",
    "settings",
];

/// Names earlier builds (or CPersona) used for a check here: `integrity` and
/// `embedding_queue` were this server's, `embedding_dimension` and `vector_fallback_config`
/// are CPersona's.
const ALIASES: &[(&str, &str)] = &[
    ("integrity", "sqlite_integrity"),
    ("embedding_queue", "stale_pending_tasks"),
    ("embedding_dimension", "embedding_model"),
    ("vector_fallback_config", "embedder"),
];

/// The registry name of `name` (itself or what its alias stands for), `None` if unknown.
pub fn canonical(name: &str) -> Option<&'static str> {
    CHECKS
        .iter()
        .copied()
        .find(|c| *c == name)
        .or_else(|| ALIASES.iter().find(|(a, _)| *a == name).map(|(_, c)| *c))
}

/// How many findings have each severity, in CPersona's words (`ok` findings are not counted).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct SeveritySummary {
    /// Errors.
    pub critical: usize,
    /// Warnings.
    pub warn: usize,
    /// Notes.
    pub info: usize,
}

/// The counts of `findings`.
pub fn summary(findings: &[Finding]) -> SeveritySummary {
    let count = |s: Severity| findings.iter().filter(|f| f.severity == s).count();
    SeveritySummary {
        critical: count(Severity::Error),
        warn: count(Severity::Warning),
        info: count(Severity::Info),
    }
}

/// CPersona's verdict: any error → `unhealthy`; else any warning → `degraded`; else
/// `healthy` (notes never degrade). `healthy` therefore means no finding degrades recall.
pub fn status(findings: &[Finding]) -> &'static str {
    match findings.iter().map(|f| f.severity).max() {
        Some(Severity::Error) => "unhealthy",
        Some(Severity::Warning) => "degraded",
        _ => "healthy",
    }
}
