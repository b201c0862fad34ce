//! The bodies the server composes itself, around or instead of an engine outcome: one serde +
//! schemars type each, so that what a tool serialises and the `outputSchema` it declares
//! (`mcp/output.rs`) come from the same type and cannot drift apart.

use cpersona_engine::trace::RecallTrace;
use cpersona_engine::{Calibration, RecallResponse};
use schemars::JsonSchema;
use serde::Serialize;
use serde_json::Value;

/// CPersona's degraded advisory, when the embedder reports itself degraded (hash fallback,
/// failing remote).
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct Advisory {
    /// Always true: the advisory is present only when something is degraded.
    pub degraded: bool,
    /// `hint` (a weak fallback by configuration) or `fault` (a configured backend failing).
    pub severity: &'static str,
    /// One line: what is degraded.
    pub reason: String,
    /// What was observed (last error), when there is one.
    pub evidence: Option<String>,
    /// What the user can do about it.
    pub runbook: String,
}

/// `recall`'s body: the engine's response plus what the server adds.
#[derive(Serialize, JsonSchema)]
pub struct RecallBody<'a> {
    /// The engine's response.
    #[serde(flatten)]
    pub response: &'a RecallResponse,
    /// Hits `exclude_contents` and `source_id` removed before the count cut.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub excluded: Option<usize>,
    /// The embedder's advisory.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub advisory: Option<Advisory>,
    /// The engine's notices.
    #[serde(skip_serializing_if = "<[String]>::is_empty")]
    pub notices: &'a [String],
    /// The replayable trace (`RecallTrace`, versioned by its `schema` field), when asked.
    /// An object in the output schema, not its full type: that type is two thirds of the
    /// recall schema, and a client that checks the schema on every call (the Python `mcp`
    /// 1.x SDK) paid 13 ms per recall for a field that is rarely there. `cpersona replay`
    /// reads it strictly.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Option<serde_json::Map<String, serde_json::Value>>")]
    pub trace: Option<RecallTrace>,
}

/// A conversation turn of `recall_with_context`'s `external_context`, merged into `messages`.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct ConversationTurn {
    /// The turn's text.
    pub content: String,
    /// Who said it.
    pub source: TurnSource,
    /// When, as given ("" when not).
    pub timestamp: String,
    /// Always `conversation`.
    pub context_type: &'static str,
}

/// The source of a conversation turn: `{type: Agent, id: self}` or `{type: User, id, name}`.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct TurnSource {
    /// `Agent` or `User`.
    #[serde(rename = "type")]
    pub kind: &'static str,
    /// `self` for the agent, `discord:<user_id or name>` for a user.
    pub id: String,
    /// The user's name.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
}

/// The roles of `external_context` entries that filtered the recall but are not shown.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct ContextFilterOnly {
    /// The roles, sorted.
    pub roles: Vec<String>,
    /// What that means.
    pub note: &'static str,
}

/// What `store` did with the associations it was given.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct StoreAssociations {
    /// Entities declared.
    pub entities: usize,
    /// Mentions recorded.
    pub mentions: usize,
    /// Relations declared.
    pub relations: usize,
    /// What was not declared, and why.
    pub dropped: Vec<DroppedItem>,
}

/// An association `store` did not declare.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct DroppedItem {
    /// The item as given.
    pub item: String,
    /// Why.
    pub reason: String,
}

/// `calibrate_threshold`'s body: CPersona's keys plus the whole calibration.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct CalibrateAnswer {
    /// True.
    pub ok: bool,
    /// `agent` or `global`.
    pub scope: &'static str,
    /// The agent calibrated ("" for the global threshold).
    pub agent_id: String,
    /// `separation`, `percentile` or `zscore`.
    pub method: &'static str,
    /// The z-score method's factor, as asked.
    pub z_factor: f64,
    /// The percentile method's percentile, as a fraction.
    pub percentile: f64,
    /// Row vectors sampled.
    pub sampled_embeddings: usize,
    /// Null pairs scored.
    pub num_pairs: usize,
    /// Share of null pairs the new threshold admits.
    pub null_admit_rate: f64,
    /// The threshold stored.
    pub new_threshold: f64,
    /// The whole calibration.
    pub calibration: Calibration,
    /// Present when persistence is paused for the session: computed, not stored.
    #[serde(flatten, skip_serializing_if = "Option::is_none")]
    pub no_persist: Option<cpersona_engine::NoPersist>,
}

/// `set_recall_precision`'s body.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct SetPrecisionAnswer {
    /// False when the agent could not be recalibrated (its previous precision was kept).
    pub ok: bool,
    /// The agent.
    pub agent_id: String,
    /// `strict`, `balanced`, `lenient` or `custom`.
    pub precision: &'static str,
    /// The precision β now in force.
    pub beta: f64,
    /// True when the agent's own precision was removed.
    pub cleared: bool,
    /// Whether the fused gate is on.
    pub fused_gate: bool,
    /// The recalibration that followed.
    pub calibrate: Recalibration,
    /// Why the previous precision was kept.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Present when persistence is paused for the session: nothing was written.
    #[serde(flatten, skip_serializing_if = "Option::is_none")]
    pub no_persist: Option<cpersona_engine::NoPersist>,
}

/// The recalibration `set_recall_precision` runs.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct Recalibration {
    /// Whether it succeeded.
    pub ok: bool,
    /// Always `agent`.
    pub scope: &'static str,
    /// The new threshold, when it succeeded.
    pub new_threshold: Option<f64>,
    /// Why not.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// `get_recall_precision`'s body.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct PrecisionAnswer {
    /// True.
    pub ok: bool,
    /// The agent.
    pub agent_id: String,
    /// The agent's precision word.
    pub precision: &'static str,
    /// The agent's β.
    pub beta: f64,
    /// True when the agent has its own β.
    pub overridden: bool,
    /// The server's precision word.
    pub global_precision: &'static str,
    /// The server's β.
    pub global_beta: f64,
}

/// `check_update`'s body, in CPersona's shape.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct UpdateAnswer {
    /// Always false: this server does not check for updates.
    pub enabled: bool,
    /// Always `disabled`.
    pub state: &'static str,
    /// Always null.
    pub kind: Option<String>,
    /// The running version.
    pub running: &'static str,
    /// Always null.
    pub available: Option<String>,
    /// Why there is no check.
    pub reason: &'static str,
    /// Always null.
    pub checked_at: Option<String>,
    /// Always false.
    pub refreshed: bool,
    /// How to update.
    pub install: UpdateInstall,
    /// One line for a person.
    pub message: String,
    /// `{server_version}`.
    #[serde(rename = "_meta")]
    pub meta: Value,
}

/// How to update this binary.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct UpdateInstall {
    /// Always `unknown`.
    pub method: &'static str,
    /// Always null.
    pub command: Option<String>,
    /// What to do.
    pub note: &'static str,
    /// Always true.
    pub restart_required: bool,
}

/// `store`'s body: the engine's outcome, the embedder's advisory, and what became of the
/// associations given with it.
#[derive(Serialize, JsonSchema)]
pub struct StoreBody<'a> {
    /// The engine's outcome.
    #[serde(flatten)]
    pub outcome: &'a cpersona_engine::StoreOutcome,
    /// The embedder's advisory.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub advisory: Option<Advisory>,
    /// The associations declared with a stored row.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub associations: Option<StoreAssociations>,
}

/// `get_session_findings`' body: the SuperAuditor v1.1 delivery of `check_health`'s findings.
#[derive(Serialize, JsonSchema)]
pub struct FindingsAnswer {
    /// The delivered findings.
    #[serde(flatten)]
    pub delivered: cpersona_engine::SessionFindings,
    /// Present (true) over a shared transport (HTTP) when no `session_key` declared the caller.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub identity_shared: Option<bool>,
    /// `{server_version, superauditor}`.
    #[serde(rename = "_meta")]
    pub meta: FindingsMeta,
}

/// The `_meta` of `get_session_findings`.
#[derive(Serialize, JsonSchema)]
pub struct FindingsMeta {
    /// This build's version.
    pub server_version: &'static str,
    /// The SuperAuditor version of the shape.
    pub superauditor: &'static str,
}
