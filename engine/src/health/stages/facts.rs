//! The facts the checks read from the store, as plain values: what the stages judge. Nothing
//! here reads SQLite; `health/checks/` fills these.

use serde::Serialize;

/// Who embeds now, and what the store's vectors were written with.
#[derive(Clone, Debug, PartialEq)]
pub struct EmbedderFacts {
    /// The configured embedder's model id.
    pub model_id: String,
    /// Its dimension.
    pub dim: usize,
    /// True when it is the hashed n-gram fallback (no model installed).
    pub is_fallback: bool,
    /// The embedder's own health: `None` when healthy, else its reason and advice.
    pub degraded: Option<DegradedEmbedder>,
    /// The model id the store records as its vectors' (`meta.embedding_model`).
    pub store_model_id: String,
    /// The dimension the store records.
    pub store_dim: usize,
    /// True when the embedder's identity equals the store's: only then does recall search
    /// vectors at all.
    pub store_matches: bool,
    /// The model the store is being re-embedded away from, while that runs.
    pub reembed_from: Option<String>,
}

/// An embedder that says it is degraded.
#[derive(Clone, Debug, PartialEq)]
pub struct DegradedEmbedder {
    /// `hint` (weak by configuration) or `fault` (a configured backend failing).
    pub severity: &'static str,
    /// What is degraded.
    pub reason: String,
    /// What was observed, when anything was.
    pub evidence: Option<String>,
    /// What the user can do.
    pub advisory: String,
}

/// Vectors of one table, counted against the configured embedder.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct TableVectors {
    /// `memories` or `episodes`.
    pub table: &'static str,
    /// Rows in scope.
    pub rows: u64,
    /// Rows whose vector carries the configured embedder's model id and dimension.
    pub current: u64,
    /// Rows with no vector at all.
    pub missing: u64,
    /// Of `missing`, rows already in the embedding queue.
    pub missing_queued: u64,
    /// Rows whose vector carries another model or dimension, per identity, largest first.
    pub other: Vec<ModelRows>,
}

impl TableVectors {
    /// Rows whose vector carries another identity.
    pub fn other_rows(&self) -> u64 {
        self.other.iter().map(|m| m.rows).sum()
    }
}

/// Rows carrying one embedder identity.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ModelRows {
    /// The model id on the rows.
    pub model_id: String,
    /// The dimension on the rows.
    pub dim: u64,
    /// How many rows.
    pub rows: u64,
}

/// The embedding queue.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct QueueFacts {
    /// Rows waiting for a vector.
    pub pending: u64,
    /// Rows out of automatic attempts (`attempts >= max_attempts`).
    pub stuck: u64,
    /// The attempts after which a row stops being retried on its own.
    pub max_attempts: u32,
    /// Age in ms of the oldest queued row, when any.
    pub oldest_age_ms: Option<i64>,
    /// The last error of the most recently failed row, when one failed.
    pub last_error: Option<String>,
}

/// One FTS5 table against its content table.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct FtsFacts {
    /// The FTS table, e.g. `memories_fts`.
    pub table: &'static str,
    /// Rows of the content table.
    pub rows: u64,
    /// Rows the index holds (its `_docsize` entries).
    pub indexed: u64,
    /// `None` when FTS5's `integrity-check` (against the content) passed, else its error.
    pub integrity_error: Option<String>,
}

/// Text stored twice by one agent.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct DuplicateFacts {
    /// Groups of identical rows (same agent, project, channel, text, source and metadata).
    pub exact_groups: u64,
    /// Rows of those groups a repair may remove: not the oldest, not locked, not referenced
    /// by a declared mention or relation.
    pub exact_removable: u64,
    /// Rows of those groups kept because they are locked or referenced.
    pub exact_kept: u64,
    /// Groups with the same agent and text in the same scope whose source or metadata differ.
    pub near_groups: u64,
    /// Groups with the same agent and text spread over projects or channels.
    pub cross_scope_groups: u64,
    /// Rows in those cross-scope groups.
    pub cross_scope_rows: u64,
}

/// Rows longer than the content cap.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct OversizeFacts {
    /// `memories` or `episodes`.
    pub table: &'static str,
    /// Rows over the cap.
    pub rows: u64,
    /// The cap in characters.
    pub cap: u64,
    /// The longest text in characters, when a row is over.
    pub longest: Option<u64>,
}

/// Rows timestamped ahead of the clock.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct FutureFacts {
    /// `memories.created_at_ms`, `memories.timestamp_ms` or `episodes.created_at_ms`.
    pub column: &'static str,
    /// Rows beyond now plus the skew.
    pub rows: u64,
    /// The furthest instant, UTC ms, when a row is ahead.
    pub latest_ms: Option<i64>,
}

/// Rows whose JSON column does not parse.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct JsonFacts {
    /// `memories.source` or `memories.metadata`.
    pub column: &'static str,
    /// Rows that are not valid JSON.
    pub rows: u64,
    /// Some of their ids, for a person to look at.
    pub sample_ids: Vec<i64>,
}

/// One stored calibration row.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct CalibrationRow {
    /// The agent (`""` = global).
    pub agent_id: String,
    /// The model it was fitted on.
    pub model_id: String,
    /// The dimension it was fitted on.
    pub dim: u64,
    /// The scoring it applies to.
    pub scoring_version: String,
    /// When it was fitted, UTC ms.
    pub calibrated_at_ms: i64,
}

/// The calibration table against what the gate reads.
#[derive(Clone, Debug, PartialEq)]
pub struct CalibrationFacts {
    /// The rows in scope.
    pub rows: Vec<CalibrationRow>,
    /// The scoring version the gate reads.
    pub scoring_version: &'static str,
    /// Now, UTC ms.
    pub now_ms: i64,
}

/// One table's index generation, as `Engine::index_status` reports it.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct IndexFacts {
    /// `memories` or `episodes`.
    pub table: &'static str,
    /// Rows in the loaded generation (0 without one).
    pub rows: u64,
    /// Rows scored exactly because they changed since the generation (every row with a
    /// vector when there is none).
    pub live_tail: u64,
    /// `live_tail / rows`; `None` without a generation.
    pub stale_share: Option<f64>,
    /// Why no generation is in use, when none is.
    pub note: Option<String>,
}

/// The schema and SQLite's own integrity check.
#[derive(Clone, Debug, PartialEq)]
pub struct SchemaFacts {
    /// `PRAGMA user_version`.
    pub version: u32,
    /// The version this build writes.
    pub supported: u32,
    /// `["ok"]` or SQLite's first complaints.
    pub integrity: Vec<String>,
}

/// A configuration entry that is set but has no effect (the server lists them).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct UnusedSetting {
    /// Its name.
    pub name: String,
    /// `inert`, `unknown`, or a reason of the server's own (`converted_original_changed`).
    pub status: String,
    /// Why, in one line.
    pub note: String,
}
