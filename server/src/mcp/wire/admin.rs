//! Wire types of the portability, quality, health and session tools (export, import, merge,
//! calibration, precision, health, persistence). Types only; no logic.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Drops the `default: null` an optional argument would advertise: its default is the
/// operator's setting, named in the description, not a value of the schema.
fn no_default(schema: &mut schemars::Schema) {
    schema.remove("default");
}

fn default_ttl() -> u32 {
    1800
}

/// `export_memories`.
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ExportArgs {
    /// The agent; "" exports every agent.
    #[serde(default)]
    #[schemars(length(max = 256))]
    pub agent_id: String,
    /// Where to write the JSONL file: inside the export folder (`CPERSONA_EXPORT_DIR`, else
    /// `exports/` beside the database), relative paths against it; no `..`.
    #[schemars(length(min = 1, max = 4096))]
    pub output_path: String,
    /// Include embeddings (base64), so an import needs no re-embedding.
    #[serde(default)]
    pub include_embeddings: bool,
    /// Replace the file when it exists (atomically); without it an existing file is refused.
    #[serde(default)]
    pub overwrite: bool,
}

/// `import_memories`.
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ImportArgs {
    /// A JSONL file written by `export_memories`, inside the export folder (relative paths
    /// against it).
    #[schemars(length(min = 1, max = 4096))]
    pub input_path: String,
    /// Import every row under this agent instead of the one in the file.
    #[serde(default)]
    #[schemars(length(max = 256))]
    pub target_agent_id: String,
    /// Count what would be imported, write nothing.
    #[serde(default)]
    pub dry_run: bool,
    /// Opaque per-session partition hint: a pause of this bucket forces a dry run.
    #[serde(default)]
    #[schemars(length(max = 256))]
    pub session_key: String,
}

/// Conflict strategy of `merge_memories` (only `skip`).
#[derive(Clone, Copy, Debug, Default, Deserialize, Serialize, JsonSchema, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum MergeStrategy {
    #[default]
    Skip,
}

/// `copy` keeps the source rows; `move` deletes the merged ones.
#[derive(Clone, Copy, Debug, Default, Deserialize, Serialize, JsonSchema, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum MergeMode {
    #[default]
    Copy,
    Move,
}

/// `merge_memories`.
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MergeArgs {
    #[schemars(length(min = 1, max = 256))]
    pub source_agent_id: String,
    /// Must differ from the source.
    #[schemars(length(min = 1, max = 256))]
    pub target_agent_id: String,
    /// What to do with a duplicate (only `skip`).
    #[serde(default)]
    pub strategy: MergeStrategy,
    /// `copy` keeps the source rows; `move` deletes those merged.
    #[serde(default)]
    pub mode: MergeMode,
    /// Count what would change, write nothing.
    #[serde(default)]
    pub dry_run: bool,
    /// Opaque per-session partition hint: a pause of this bucket forces a dry run.
    #[serde(default)]
    #[schemars(length(max = 256))]
    pub session_key: String,
}

/// How `calibrate_threshold` picks the threshold.
#[derive(Clone, Copy, Debug, Default, Deserialize, Serialize, JsonSchema, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum CalibrationMethod {
    #[default]
    Separation,
    Percentile,
    Zscore,
}

/// `calibrate_threshold`.
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CalibrateArgs {
    /// The agent; "" calibrates the global threshold.
    #[schemars(length(max = 256))]
    pub agent_id: String,
    /// Rows sampled; left out, `CPERSONA_CALIBRATE_SAMPLE_SIZE` (200).
    #[serde(default)]
    #[schemars(with = "u32", range(min = 1, max = 2000), transform = no_default)]
    pub sample_size: Option<u32>,
    /// Left out, `CPERSONA_CALIBRATE_Z_FACTOR` (1.0).
    #[serde(default)]
    #[schemars(with = "f64", range(min = -10.0, max = 10.0), transform = no_default)]
    pub z_factor: Option<f64>,
    /// How the threshold is picked; left out, `CPERSONA_CALIBRATE_METHOD` (separation).
    #[serde(default)]
    #[schemars(with = "CalibrationMethod", transform = no_default)]
    pub method: Option<CalibrationMethod>,
    /// A fraction (0.95) or a percent (95); left out, `CPERSONA_CALIBRATE_PERCENTILE` (0.95).
    #[serde(default)]
    #[schemars(with = "f64", range(min = 0.0, max = 100.0), transform = no_default)]
    pub percentile: Option<f64>,
    /// Opaque per-session partition hint: a pause of this bucket computes and answers the calibration without storing it.
    #[serde(default)]
    #[schemars(length(max = 256))]
    pub session_key: String,
}

/// A recall precision preset; "" with `beta` ≤ 0 clears the override.
#[derive(Clone, Copy, Debug, Default, Deserialize, Serialize, JsonSchema, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum PrecisionArg {
    Strict,
    Balanced,
    Lenient,
    #[default]
    #[serde(rename = "")]
    Unset,
}

/// `set_recall_precision`.
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SetPrecisionArgs {
    /// The agent whose memory this is; agents never share rows.
    #[schemars(length(min = 1, max = 256))]
    pub agent_id: String,
    /// `strict`, `balanced`, `lenient`, or "" to clear.
    #[serde(default)]
    pub precision: PrecisionArg,
    /// A raw β (> 0 overrides the preset).
    #[serde(default)]
    #[schemars(range(min = 0.0, max = 100.0))]
    pub beta: f64,
    /// Opaque per-session partition hint: a pause of this bucket leaves the precision in force, writing nothing.
    #[serde(default)]
    #[schemars(length(max = 256))]
    pub session_key: String,
}

/// `check_health`.
#[derive(Clone, Debug, Default, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CheckHealthArgs {
    /// The agent; "" checks every agent.
    #[serde(default)]
    #[schemars(length(max = 256))]
    pub agent_id: String,
    /// Repair what can be repaired.
    #[serde(default)]
    pub fix: bool,
    /// Run only these checks (unknown names are refused).
    #[serde(default)]
    #[schemars(length(max = 64))]
    pub checks: Vec<String>,
    /// Opaque per-session partition hint: a pause of this bucket turns `fix` into a read.
    #[serde(default)]
    #[schemars(length(max = 256))]
    pub session_key: String,
}

/// `check_update`.
#[derive(Clone, Debug, Default, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CheckUpdateArgs {
    /// Fetch the package index now instead of reading the cached verdict.
    #[serde(default)]
    pub refresh: bool,
    /// Run the detected update command (a restart is required afterwards).
    #[serde(default)]
    pub apply: bool,
}

/// `get_operating_context`.
#[derive(Clone, Debug, Default, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct OperatingContextArgs {
    /// One `[[doctrine]]` section's name; "" = the preview.
    #[serde(default)]
    #[schemars(length(max = 256))]
    pub section: String,
}

/// `migrate_channel_axis`.
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ChannelAxisArgs {
    /// The agent; "" = every agent.
    #[serde(default)]
    #[schemars(length(max = 256))]
    pub agent_id: String,
    /// Report only (the default); false re-channels.
    #[serde(default = "default_true")]
    pub dry_run: bool,
    /// Move the rows that cannot be recovered to the global channel "".
    #[serde(default)]
    pub globalize_unrecoverable: bool,
    /// Opaque per-session partition hint: a pause of this bucket forces a dry run.
    #[serde(default)]
    #[schemars(length(max = 256))]
    pub session_key: String,
}

/// `deep_check`.
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DeepCheckArgs {
    /// The agent whose rows are checked.
    #[schemars(length(min = 1, max = 256))]
    pub agent_id: String,
    /// Repair what the repairable checks find (`anonymous_source`, `short_content`).
    #[serde(default)]
    pub fix: bool,
    /// Run only these checks (unknown names are refused); empty = all.
    #[serde(default)]
    #[schemars(length(max = 16))]
    pub checks: Vec<String>,
    /// Opaque per-session partition hint: a pause of this bucket turns `fix` into a read.
    #[serde(default)]
    #[schemars(length(max = 256))]
    pub session_key: String,
}

/// `get_session_findings`.
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FindingsArgs {
    /// Opaque per-session partition hint: it declares the caller and scopes nothing.
    #[serde(default)]
    #[schemars(length(max = 256))]
    pub session_key: String,
    /// At most this many findings per kind (`capped_kinds` names the kinds that had more).
    #[serde(default = "default_per_kind_limit")]
    #[schemars(range(min = 1, max = 1000))]
    pub per_kind_limit: u32,
    /// Add `summary`, the findings in one sentence.
    #[serde(default = "default_true")]
    pub include_summary: bool,
}

fn default_per_kind_limit() -> u32 {
    cpersona_engine::health::stages::findings::DEFAULT_PER_KIND_LIMIT as u32
}

/// Tools with no arguments (`get_queue_status`).
#[derive(Clone, Debug, Default, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NoArgs {}

/// `pause_persistence`.
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PauseArgs {
    /// How long writes are skipped, in seconds.
    #[serde(default = "default_ttl")]
    #[schemars(range(min = 1, max = 86_400))]
    pub ttl_seconds: u32,
    /// Opaque per-session partition hint (not auth, not a filter).
    #[serde(default)]
    #[schemars(length(max = 256))]
    pub session_key: String,
}

/// `resume_persistence`, `persistence_status`.
#[derive(Clone, Debug, Default, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SessionArgs {
    /// Opaque per-session partition hint (not auth, not a filter).
    #[serde(default)]
    #[schemars(length(max = 256))]
    pub session_key: String,
}

fn default_true() -> bool {
    true
}
