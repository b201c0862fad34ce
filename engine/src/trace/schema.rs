//! The saved form of a recall trace: every type a trace file holds, with serde both ways.
//! Building a trace from a recall lives in the parent module; reading it back never needs
//! the store.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::{arm_name, fusion_named, name_of, sha16};
use crate::error::{Error, Result};
use crate::recall::Arm;
use crate::recall::stages::confidence::{ConfidenceInput, ConfidenceParams};
use crate::recall::stages::config::RecallConfig;
use crate::recall::stages::fusion::ArmWeights;
use crate::recall::stages::gate::GateConfig;
use crate::recall::stages::select::RecallDepth;
use crate::recall::stages::shape::ShapeConfig;
use crate::recall::types::TraceEmbedder;
use crate::refs::Ref;
use crate::refs::ref_serde;

/// The policy versions a trace was produced under.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct TracePolicy {
    /// The scoring a calibration applies to.
    pub scoring: String,
    /// The recall process.
    pub process: String,
    /// The engine crate's version.
    pub engine_version: String,
}

/// The query as given and as the stages read it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct TraceQuery {
    /// As given (the pure pass takes it as is: FTS and excerpts read it).
    pub text: String,
    /// Trimmed, whitespace runs folded to one space, lower-cased: what a reader compares.
    pub normalised: String,
    /// True for a blank query (the recency listing).
    pub blank: bool,
}

/// The isolation scope every read went through.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct TraceScope {
    /// The agent.
    pub agent_id: String,
    /// `None` = no project filter, `""` = global pool.
    pub project_id: Option<String>,
    /// `None` = no channel filter.
    pub channel: Option<String>,
}

/// What the caller asked.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct TraceRequest {
    /// Rows asked for.
    pub limit: usize,
    /// Halved gate.
    pub deep: bool,
    /// Whole rows within the budget.
    pub full_content: bool,
}

/// Every stage setting the pure pass reads, plus their hash.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct TraceConfig {
    /// sha256 (first 16 hex digits) of this object's other fields as JSON.
    pub hash: String,
    /// `rrf` or `rsf`.
    pub fusion: String,
    /// RRF's k.
    pub rrf_k: f64,
    /// Per-arm weights, by arm name.
    pub weights: BTreeMap<String, f64>,
    /// Adaptive fusion's rule; absent with fixed weights, so such traces hash as before.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub adaptive: Option<crate::recall::stages::fusion_weights::AdaptiveFusion>,
    /// Recall Depth bounds and the per-arm depth used.
    pub depth: TraceDepth,
    /// The gate's settings.
    pub gate: TraceGateConfig,
    /// The preview tier.
    pub shape: TraceShape,
    /// The recency prior; absent when off (identity), so such traces hash as before.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recency: Option<crate::recall::stages::recency::RecencyConfig>,
}

/// Recall Depth.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct TraceDepth {
    /// Least depth.
    pub floor: usize,
    /// Configured depth.
    pub default: usize,
    /// Most depth.
    pub max: usize,
    /// The per-arm depth this recall used.
    pub per_arm: usize,
}

/// Gate settings.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct TraceGateConfig {
    /// Gate on.
    pub enabled: bool,
    /// Heuristic at an empty pool.
    pub heuristic_max: f64,
    /// Heuristic drop.
    pub heuristic_drop: f64,
    /// Pool at which the heuristic bottoms out.
    pub heuristic_pool: f64,
    /// Factor for `deep`.
    pub deep_factor: f64,
}

/// Preview-tier settings.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct TraceShape {
    /// Preview characters.
    pub preview_chars: usize,
    /// Excerpt characters.
    pub excerpt_chars: usize,
    /// `full_content` budget.
    pub full_content_budget_chars: usize,
}

/// How one table's vector search ran.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct TraceIndex {
    /// `memories` or `episodes`.
    pub table: String,
    /// The generation read, if any.
    pub generation: Option<u64>,
    /// Rows scored exactly from SQLite (the live tail).
    pub tail_rows: usize,
    /// True when the scan window cut rows to the far list.
    pub window_cut: bool,
    /// True when the sign-bit prefilter ran.
    pub prefiltered: bool,
}

/// Requested, effective and internal counts.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct TraceCounts {
    /// `limit` as asked.
    pub requested: usize,
    /// Rows returned.
    pub effective: usize,
    /// Hits per arm handed to fusion.
    pub per_arm: BTreeMap<String, usize>,
    /// Distinct fused candidates.
    pub fused: usize,
    /// Candidates the gate let through.
    pub gated: usize,
    /// Hits the depth cut removed (refs not kept).
    pub cut_by_depth: usize,
    /// Gated rows the count cut removed.
    pub cut_by_count: usize,
    /// Rows that vanished before hydration.
    pub vanished: usize,
    /// Rows in the pool.
    pub pool: usize,
}

/// One arm's list as fused.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct TraceArm {
    /// Arm name (`vector_near`, `vector_far`, `episode_fts`, `memory_keyword`).
    pub arm: String,
    /// True when the arm returned fewer hits than the depth: a deeper depth adds nothing.
    pub exhausted: bool,
    /// Hits in rank order.
    pub hits: Vec<TraceHit>,
}

/// One hit.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct TraceHit {
    /// The row.
    #[schemars(with = "String")]
    #[serde(rename = "ref", with = "ref_serde")]
    pub r#ref: Ref,
    /// 0-based rank in the arm.
    pub rank: usize,
    /// The arm's raw score (cosine, `-bm25`, none for keyword rows).
    pub raw: Option<f64>,
}

/// One fused candidate.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct TraceFused {
    /// The row.
    #[schemars(with = "String")]
    #[serde(rename = "ref", with = "ref_serde")]
    pub r#ref: Ref,
    /// 0-based position after fusion.
    pub fused_rank: usize,
    /// Fused score.
    pub score: f64,
    /// Cosine the gate judged, if any.
    pub cosine: Option<f64>,
    /// Each arm's vote.
    pub votes: Vec<TraceVote>,
}

/// One arm's vote and what it added.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct TraceVote {
    /// Arm name.
    pub arm: String,
    /// Rank there.
    pub rank: usize,
    /// Raw score there.
    pub raw: Option<f64>,
    /// Contribution to the fused score.
    pub contribution: f64,
}

/// The gate: its input and verdicts.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct TraceGate {
    /// The calibrated threshold read, if any.
    pub calibrated: Option<f64>,
    /// Rows in scope (capped), for the heuristic.
    pub pool: u64,
    /// `deep`.
    pub deep: bool,
    /// Threshold applied.
    pub threshold: f64,
    /// `calibrated`, `heuristic` or `disabled`.
    pub origin: String,
    /// The heuristic for this pool.
    pub heuristic_min: f64,
    /// Nothing passed; lexical rows returned.
    pub gate_fallback: bool,
    /// One verdict per candidate, in fused order.
    pub decisions: Vec<TraceDecision>,
}

/// One gate verdict.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct TraceDecision {
    /// The row.
    #[schemars(with = "String")]
    #[serde(rename = "ref", with = "ref_serde")]
    pub r#ref: Ref,
    /// Cosine judged.
    pub cosine: Option<f64>,
    /// Passed.
    pub passed: bool,
    /// Why (`cosine_above`, `below_gate`, `lexical_no_cosine`, `gate_disabled`, `fallback`).
    pub reason: String,
}

/// Why a candidate is not in the answer.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ExclusionReason {
    /// Cut by Recall Depth (the trace keeps the count only: see `counts.cut_by_depth`).
    DepthCut,
    /// The gate refused its cosine.
    Gate,
    /// Below the count cut.
    CountCut,
    /// Deleted between the arms and hydration.
    Vanished,
    /// Dropped after the engine by the server's `exclude_contents` / `source_id` filter.
    Filtered,
}

/// One excluded candidate.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct TraceExclusion {
    /// The row.
    #[schemars(with = "String")]
    #[serde(rename = "ref", with = "ref_serde")]
    pub r#ref: Ref,
    /// Its fused position.
    pub fused_rank: usize,
    /// Why.
    pub reason: ExclusionReason,
}

/// One pool row: what hydration read (no vector).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct PoolRow {
    /// The row.
    #[schemars(with = "String")]
    #[serde(rename = "ref", with = "ref_serde")]
    pub r#ref: Ref,
    /// `None` when the row had vanished.
    pub row: Option<PoolContent>,
    /// The row's confidence input (its cosine comes from the candidate), when the recall
    /// reported confidence.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub confidence_input: Option<ConfidenceInput>,
}

/// What a replay needs of a hydrated row, never its text: the length of the content the
/// agent sees (the preview tier and the full-content budget cut by length), the source's
/// identity (`type`, `id`, `name`: cue propagation follows shared sources), the timestamp as
/// stored and `msg_id`. The text itself is fetched with `get_contents`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct PoolContent {
    /// Characters of the content as the agent sees it (`[Episode] ` prefix included).
    pub chars: usize,
    /// `source`'s `type`, `id` and `name`.
    pub source: Option<serde_json::Value>,
    /// Timestamp as stored.
    pub timestamp: Option<String>,
    /// `msg_id`.
    pub msg_id: Option<String>,
}

/// A saved recall, enough to replay the pure pass offline.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct RecallTrace {
    /// Always [`TRACE_FORMAT`].
    pub format: String,
    /// Always [`TRACE_VERSION`].
    pub trace_version: u32,
    /// Policy versions.
    pub policy: TracePolicy,
    /// The query.
    pub query: TraceQuery,
    /// The scope.
    pub scope: TraceScope,
    /// The request.
    pub request: TraceRequest,
    /// The stage settings.
    pub config: TraceConfig,
    /// The embedder.
    pub embedder: TraceEmbedder,
    /// The vector search per table.
    pub index: Vec<TraceIndex>,
    /// Counts.
    pub counts: TraceCounts,
    /// Every arm's list as fused, in fusion order.
    pub arms: Vec<TraceArm>,
    /// Every fused candidate, in fused order.
    pub fusion: Vec<TraceFused>,
    /// The weights adaptive fusion chose for this query and why (absent with fixed
    /// weights); a replay re-chooses them from the saved lists unless told `adaptive=off`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fusion_weights: Option<crate::recall::stages::fusion_weights::ChosenWeights>,
    /// The gate.
    pub gate: TraceGate,
    /// Every candidate not returned, with why.
    pub exclusions: Vec<TraceExclusion>,
    /// Bounds that acted, in words (empty when none did).
    pub bounds: Vec<String>,
    /// Milliseconds per stage.
    pub timing_ms: BTreeMap<String, f64>,
    /// The engine's advisories.
    pub advisories: Vec<String>,
    /// True when the memories arm came from the keyword pass.
    pub keyword_fallback: bool,
    /// Every fused candidate's hydrated row.
    pub pool: Vec<PoolRow>,
    /// The confidence constants, when the recall reported confidence.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub confidence_params: Option<ConfidenceParams>,
    /// The time cue's plan the pass applied (absent without a used cue).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cue: Option<super::TraceCue>,
    /// The time cue as given, its clock and the scope's span (absent without a cue).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cue_request: Option<super::TraceCueRequest>,
    /// The response body the engine returned (before any server filter), without the rows'
    /// text (`content`, `excerpt`; see [`super::without_text`]).
    pub response: serde_json::Value,
    /// The rows held after the window (association cue, propagation seat) as returned,
    /// without text, leading the response: recorded, not re-run, by a replay.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub held: Vec<serde_json::Value>,
}

/// Serde for [`Ref`] as `mem:<id>` / `ep:<id>`.
impl TraceConfig {
    /// The trace form of `config`, hashed.
    pub fn of(config: &RecallConfig) -> TraceConfig {
        let w = config.weights;
        let mut out = TraceConfig {
            hash: String::new(),
            fusion: name_of(&config.fusion),
            rrf_k: config.rrf_k,
            weights: Arm::ALL
                .into_iter()
                .map(|arm| (arm_name(arm), w.of(arm)))
                .collect(),
            adaptive: config.adaptive,
            depth: TraceDepth {
                floor: config.depth.floor,
                default: config.depth.default,
                max: config.depth.max,
                per_arm: config.depth.per_arm(),
            },
            gate: TraceGateConfig {
                enabled: config.gate.enabled,
                heuristic_max: config.gate.heuristic_max,
                heuristic_drop: config.gate.heuristic_drop,
                heuristic_pool: config.gate.heuristic_pool,
                deep_factor: config.gate.deep_factor,
            },
            shape: TraceShape {
                preview_chars: config.shape.preview_chars,
                excerpt_chars: config.shape.excerpt_chars,
                full_content_budget_chars: config.shape.full_content_budget_chars,
            },
            recency: (!config.recency.is_identity()).then_some(config.recency),
        };
        out.hash = out.compute_hash();
        out
    }

    /// sha256[:16] of the settings (the `hash` field excluded).
    pub fn compute_hash(&self) -> String {
        let mut unhashed = self.clone();
        unhashed.hash = String::new();
        sha16(&serde_json::to_vec(&unhashed).unwrap_or_default())
    }

    /// The stage settings back (constants the trace does not hold take their defaults,
    /// which the pure pass does not read).
    pub fn to_config(&self) -> Result<RecallConfig> {
        let invalid = |reason: String| Error::InvalidInput {
            field: "trace.config",
            reason,
        };
        let fusion = fusion_named(&self.fusion)
            .ok_or_else(|| invalid(format!("unknown fusion {:?}", self.fusion)))?;
        let weight = |arm: Arm| self.weights.get(&arm_name(arm)).copied().unwrap_or(1.0);
        let config = RecallConfig {
            fusion,
            rrf_k: self.rrf_k,
            weights: ArmWeights {
                vector_near: weight(Arm::VectorNear),
                vector_far: weight(Arm::VectorFar),
                episode_fts: weight(Arm::EpisodeFts),
                memory_keyword: weight(Arm::MemoryKeyword),
            },
            adaptive: self.adaptive,
            depth: RecallDepth {
                floor: self.depth.floor,
                default: self.depth.default,
                max: self.depth.max,
            },
            gate: GateConfig {
                enabled: self.gate.enabled,
                heuristic_max: self.gate.heuristic_max,
                heuristic_drop: self.gate.heuristic_drop,
                heuristic_pool: self.gate.heuristic_pool,
                deep_factor: self.gate.deep_factor,
            },
            shape: ShapeConfig {
                preview_chars: self.shape.preview_chars,
                excerpt_chars: self.shape.excerpt_chars,
                full_content_budget_chars: self.shape.full_content_budget_chars,
            },
            recency: self.recency.unwrap_or_default(),
            ..RecallConfig::default()
        };
        config.validate().map_err(|err| invalid(err.to_string()))?;
        Ok(config)
    }
}
