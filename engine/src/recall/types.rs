//! The public shapes of a recall: what the agent asks (`RecallQuery`), what comes back
//! (`RecallResult`, `RecallTimings`), what a traced recall captures (`Capture`) and a stored
//! calibration. Data only; no store access.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

use crate::recall::arms::lexical;
use crate::recall::stages::confidence::{ConfidenceInput, ConfidenceParams};
use crate::recall::stages::config::RecallConfig;
use crate::recall::stages::cue::TimeCue;
use crate::recall::stages::cue_plan::CuePlan;
use crate::recall::stages::filters::FilterReport;
use crate::recall::stages::gate::GateInput;
use crate::recall::stages::pipeline::RecallResponse;
use crate::recall::stages::pipeline::RecallStages;
use crate::recall::stages::shape::{Hydrated, RecallMessage};
use crate::refs::Ref;

use crate::recall::arms::vector::VectorReport;

/// A recall as an agent asks it (CPersona's `recall` arguments this engine serves).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RecallQuery {
    /// The agent (required; `""` matches nothing).
    pub agent_id: String,
    /// `None` = no project filter, `""` = global pool, `X` = X plus the global pool.
    pub project_id: Option<String>,
    /// `None`/`""` = no channel filter, `X` = X plus channel-less rows.
    pub channel: Option<String>,
    /// The query; blank = the recency listing.
    pub query: String,
    /// Rows returned at most.
    pub limit: usize,
    /// Halves the gate.
    pub deep: bool,
    /// Whole rows within the full-content budget.
    pub full_content: bool,
    /// Return what each stage saw.
    pub trace: bool,
    /// Contents to leave out (CPersona's `exclude_contents`), applied before the count cut.
    pub exclude_contents: Vec<String>,
    /// Prefix of `source.id` a memory must carry; `""` = any (episodes are then skipped
    /// unless a channel is named).
    pub source_id: String,
    /// Vector hits below this cosine are dropped before fusion; `None` = no floor.
    pub min_similarity: Option<f64>,
    /// The caller's time cue: a prior on the answer's order plus held places, never a
    /// filter. `None` = free recall, byte for byte.
    pub time_cue: Option<TimeCue>,
    /// The clock a relative cue is resolved against and confidence measures ages against
    /// (UTC ms); `None` = the system clock.
    /// Injected by tests and the TMD harness, whose "now" is the corpus's last day.
    pub now_ms: Option<i64>,
    /// This pass's Recall Depth per arm (the propagation seat's deeper ranking asks 100);
    /// `None` = the configured one. Held within the configured floor and maximum.
    pub depth: Option<usize>,
    /// The caller's session (CPersona's `session_key`): a paused session gives no recall
    /// credit (`recall/credit.rs`).
    pub session_key: String,
}

/// Milliseconds spent per stage.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct RecallTimings {
    /// Embedding the query.
    pub embed_ms: f64,
    /// The vector arm (generation + live tail).
    pub vector_ms: f64,
    /// The lexical arms.
    pub lexical_ms: f64,
    /// Depth, fusion, gate, count cut and shaping (hydration excluded).
    pub fusion_ms: f64,
    /// Reading the kept rows.
    pub hydrate_ms: f64,
    /// Counting the pool in scope and reading the calibration (the gate's inputs).
    pub gate_input_ms: f64,
}

/// A recall's answer: the response body plus what degraded, and the trace when asked.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct RecallResult {
    /// The response body.
    pub response: RecallResponse,
    /// What the agent should know (embedder down, bounds that cut, etc.).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub advisories: Vec<String>,
    /// How the vector arm ran (generation used, tail size, window cut).
    pub vector: VectorReport,
    /// True when the memories arm came from the keyword pass.
    pub keyword_fallback: bool,
    /// The FTS tables on which the lexical candidate cap acted (each also in `advisories`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub lexical_capped: Vec<lexical::CapActed>,
    /// The stages, when `trace`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stages: Option<RecallStages>,
    /// Time per stage.
    pub timings: RecallTimings,
    /// Hits the caller's filters removed before fusion.
    pub filtered: FilterReport,
    /// What the trace needs beyond the stages (`crate::trace`), when `trace`.
    #[serde(skip)]
    pub capture: Option<Box<Capture>>,
    /// The query's vector, when the vector arm ran (reconstruct ranks blocks with it).
    #[serde(skip)]
    pub query_vector: Option<Vec<f32>>,
    /// Fetches this recall made from the index and the store: the arms of each pass (the
    /// window's, and the propagation seat's deeper pass when it ran) and the time cue's
    /// envelope (once; the deeper pass reuses the window's plan).
    pub fetches: usize,
    /// The agent's profile row, when the answer left a place under `limit` and the scope
    /// holds at least 50 rows (CPersona's `[Profile]` row; `recall/profile.rs`). Not in
    /// `response.messages`: the server places it first there, the least relevant place.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub profile: Option<crate::recall::profile::ProfileRow>,
}

/// A stored calibration and where it came from.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct CalibrationOutcome {
    /// The agent calibrated.
    pub agent_id: String,
    /// The calibration.
    pub calibration: crate::recall::stages::calibrate::Calibration,
    /// Set when persistence was paused for the session: computed, not stored.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub no_persist: Option<crate::store::pauses::NoPersist>,
}

/// The embedder's identity (never a vector).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct TraceEmbedder {
    /// The store's vector model id.
    pub model_id: String,
    /// The store's vector dimension.
    pub dim: usize,
    /// True when the configured embedder matches the store's vectors.
    pub matches_store: bool,
    /// True when the vector arm ran for this recall.
    pub vector_arm_ran: bool,
}

/// The cue as the caller gave it and what it was resolved against: what the failure
/// taxonomy re-normalises (another anchor) or replaces (an intended cue) in a replay.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct TraceCueRequest {
    /// The cue as parsed.
    pub given: TimeCue,
    /// The clock it was resolved against, UTC ms.
    pub now_ms: i64,
    /// The scope's dated span (oldest, newest), UTC ms; `None` when it held none.
    pub span: Option<(i64, i64)>,
}

/// What [`crate::recall::recall`] captures beside its result when a trace is asked.
#[derive(Clone, Debug, PartialEq)]
pub struct Capture {
    /// The query as asked.
    pub query: RecallQuery,
    /// The stage settings used.
    pub config: RecallConfig,
    /// The gate's input.
    pub gate_input: GateInput,
    /// The embedder's model id and dimension, and whether it matched the store.
    pub embedder: TraceEmbedder,
    /// Every fused candidate's row as read in the caller's scope (`None`: vanished), then
    /// the cue's seated rows and the held places' rows.
    pub pool: Vec<(Ref, Option<Hydrated>)>,
    /// Every fused candidate's confidence input without its cosine, and the constants
    /// (`None` when confidence is not reported), so a replay reports confidence for the rows
    /// it admits, from its own candidates' cosines.
    pub confidence: Option<(ConfidenceParams, HashMap<Ref, ConfidenceInput>)>,
    /// Milliseconds spent reading the rows the pass itself did not hydrate.
    pub capture_ms: f64,
    /// The time cue's plan the pass applied, when it had one.
    pub cue: Option<CuePlan>,
    /// The time cue as given and what it was resolved against, when the recall had one.
    pub cue_request: Option<TraceCueRequest>,
    /// The rows held after the window (association cue, propagation seat), best first, as
    /// they were returned: recorded, not re-run, by a replay.
    pub held: Vec<RecallMessage>,
}
