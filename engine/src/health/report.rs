//! `check_health`'s request and report. The report serialises to CPersona's response body:
//! `total_memories`, `issues` (the findings that are not `ok`, in CPersona's severity words),
//! `severity_summary`, `status`, `fixed`, `checks_run`, `stats`, and `repairs_skipped` with
//! its reason when a pause stopped `fix`; plus ours: `checks` (every finding, `ok` ones
//! included, with reason and remedy), `index` and `embedder`.

use serde::ser::{Serialize, Serializer};

use crate::health::stages::facts::UnusedSetting;
use crate::health::stages::{Finding, Severity, SeveritySummary, status, summary};
use crate::store::generations::IndexStatus;
use crate::store::stats::StoreStats;

/// `index_freshness`'s default warning share (CPersona's `INDEX_TAIL_RATIO`, the server's
/// `CPERSONA_INDEX_STALE_WARN_SHARE` default).
pub const DEFAULT_INDEX_STALE_WARN_SHARE: f64 = 0.2;

/// What `check_health` is asked.
#[derive(Clone, Debug, PartialEq)]
pub struct HealthRequest {
    /// The agent whose rows are checked; `""` checks every agent. FTS, schema, integrity
    /// and the index are whole-store checks either way.
    pub agent_id: String,
    /// Repair what can be repaired safely, then judge again.
    pub fix: bool,
    /// Run only these checks (registry names or their aliases); empty = every check.
    pub checks: Vec<String>,
    /// `index_freshness` warns past this share of rows changed since a generation.
    pub index_stale_warn_share: f64,
    /// Settings that are set but without effect (the server's list), for `settings`.
    pub unused_settings: Vec<UnusedSetting>,
    /// Pause bucket: while it is paused `fix` is downgraded to a report (CPersona's rule).
    pub session_key: String,
}

impl Default for HealthRequest {
    /// Every check, every agent, no repair, the default stale share, no settings listed.
    fn default() -> HealthRequest {
        HealthRequest {
            agent_id: String::new(),
            fix: false,
            checks: Vec::new(),
            index_stale_warn_share: DEFAULT_INDEX_STALE_WARN_SHARE,
            unused_settings: Vec::new(),
            session_key: String::new(),
        }
    }
}

/// The configured embedder, as `check_health` reports it.
#[derive(Clone, Debug, PartialEq, serde::Serialize, schemars::JsonSchema)]
pub struct EmbedderSummary {
    /// Its model id.
    pub model_id: String,
    /// Its dimension.
    pub dim: usize,
    /// Its window in tokens.
    pub window_tokens: usize,
    /// False when the `embedder` finding degrades recall.
    pub healthy: bool,
    /// True when it is the hashed n-gram fallback.
    pub fallback: bool,
}

/// What `check_health` found (and, with `fix`, repaired).
#[derive(Clone, Debug)]
pub struct HealthReport {
    /// Memories of the agent (every memory for `""`).
    pub total_memories: i64,
    /// Every check's finding, in registry order (after `fix`: the residual run's).
    pub findings: Vec<Finding>,
    /// Rows (or tables) the repairs wrote, summed over checks.
    pub fixed: u64,
    /// The checks that ran.
    pub checks_run: Vec<&'static str>,
    /// Row counts and file facts.
    pub stats: StoreStats,
    /// The index generations.
    pub index: IndexStatus,
    /// The configured embedder.
    pub embedder: EmbedderSummary,
    /// Why `fix` did not run, when it was asked and could not.
    pub repairs_skipped: Option<String>,
}

impl HealthReport {
    /// `healthy`, `degraded` or `unhealthy` (see [`crate::health::stages::status`]).
    pub fn status(&self) -> &'static str {
        status(&self.findings)
    }

    /// The finding of `check`, if it ran.
    pub fn finding(&self, check: &str) -> Option<&Finding> {
        self.findings.iter().find(|f| f.check == check)
    }
}

/// The body `HealthReport` serialises to, one derived type so that its JSON Schema (the
/// `check_health` tool's output schema) and its bytes cannot drift apart.
#[derive(serde::Serialize, schemars::JsonSchema)]
struct HealthBody<'a> {
    ok: bool,
    total_memories: i64,
    /// The findings that are not `ok`, in CPersona's issue shape.
    issues: Vec<serde_json::Value>,
    severity_summary: SeveritySummary,
    /// `healthy`, `degraded` or `unhealthy`.
    status: &'static str,
    fixed: u64,
    checks_run: &'a [&'static str],
    #[serde(skip_serializing_if = "Option::is_none")]
    repairs_skipped: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    repairs_skip_reason: Option<&'a str>,
    checks: &'a [Finding],
    stats: &'a StoreStats,
    index: &'a IndexStatus,
    embedder: &'a EmbedderSummary,
}

impl HealthReport {
    fn body(&self) -> HealthBody<'_> {
        HealthBody {
            ok: true,
            total_memories: self.total_memories,
            issues: self
                .findings
                .iter()
                .filter(|f| f.severity != Severity::Ok)
                .map(Finding::issue)
                .collect(),
            severity_summary: summary(&self.findings),
            status: self.status(),
            fixed: self.fixed,
            checks_run: &self.checks_run,
            repairs_skipped: self.repairs_skipped.as_ref().map(|_| true),
            repairs_skip_reason: self.repairs_skipped.as_deref(),
            checks: &self.findings,
            stats: &self.stats,
            index: &self.index,
            embedder: &self.embedder,
        }
    }
}

impl Serialize for HealthReport {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.body().serialize(serializer)
    }
}

impl schemars::JsonSchema for HealthReport {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "HealthReport".into()
    }

    fn json_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
        HealthBody::json_schema(generator)
    }
}
