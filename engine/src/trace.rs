//! The recall trace (`trace_version` 1 of cpersona-rs): one recall written down so that it
//! can be read, saved and **re-run offline** by [`crate::replay`] without the store, the
//! index or the embedder. It holds the query as normalised, the scope, the requested and
//! effective counts, every arm's list with ranks and raw scores, every fused candidate with
//! its per-arm contributions, the gate's input and decisions, the fate of every candidate
//! (returned, or why not), the bounds that acted, the index generations, the embedder's
//! identity, a configuration hash, per-stage latency, and the *pool*: the hydrated rows of
//! every fused candidate, so that any replay that keeps more rows can still shape them.
//!
//! It must never hold a raw embedding (only cosines and ranks). The pool carries the rows'
//! text: a trace is a local diagnostic file, not something to ship off the machine.
//!
//! Scores are JSON numbers: serde_json without `float_roundtrip` may parse a 17-digit raw
//! score back 1 ULP off, which can move a replayed row only when its cosine sits exactly on
//! the gate threshold; the response's 4- and 6-decimal figures parse back exactly.
//!
//! The trace is built after the pure pass from what [`crate::Engine::recall`] captured
//! ([`Capture`]); nothing here changes what recall returns.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use rusqlite::Connection;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::engine::Engine;
use crate::error::{Error, Result};
use crate::recall::candidate::ArmHit;
use crate::recall::config::RecallConfig;
use crate::recall::contents::StoredContent;
use crate::recall::fusion::{ArmWeights, FusionMode};
use crate::recall::gate::{GateConfig, GateInput};
use crate::recall::pipeline::RecallStages;
use crate::recall::select::RecallDepth;
use crate::recall::shape::{Hydrated, ShapeConfig};
use crate::recall::{Arm, ArmList, Ref, RefKind};
use crate::recall_engine::{RecallQuery, RecallResult, SCORING_VERSION};
use crate::scope::Scope;

/// The version of this trace's shape; a replay refuses any other.
pub const TRACE_VERSION: u32 = 1;
/// The `format` tag every trace carries, so a file is recognisable on its own.
pub const TRACE_FORMAT: &str = "cpersona-rs.recall-trace";
/// The recall process a trace describes (one pass, no cue loop yet).
pub const PROCESS_POLICY: &str = "single-pass-v0";

/// What [`crate::Engine::recall`] captures beside its result when a trace is asked: the
/// inputs the pure pass saw that the result does not carry.
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
    /// Every fused candidate's row as read in the caller's scope (`None`: vanished).
    pub pool: Vec<(Ref, Option<Hydrated>)>,
    /// Milliseconds spent reading the rows the pass itself did not hydrate.
    pub capture_ms: f64,
}

/// The policy versions a trace was produced under.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TracePolicy {
    /// The scoring a calibration applies to.
    pub scoring: String,
    /// The recall process.
    pub process: String,
    /// The engine crate's version.
    pub engine_version: String,
}

/// The query as given and as the stages read it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TraceQuery {
    /// As given (the pure pass takes it as is: FTS and excerpts read it).
    pub text: String,
    /// Trimmed, whitespace runs folded to one space, lower-cased: what a reader compares.
    pub normalised: String,
    /// True for a blank query (the recency listing).
    pub blank: bool,
}

/// The isolation scope every read went through.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TraceScope {
    /// The agent.
    pub agent_id: String,
    /// `None` = no project filter, `""` = global pool.
    pub project_id: Option<String>,
    /// `None` = no channel filter.
    pub channel: Option<String>,
}

/// What the caller asked.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TraceRequest {
    /// Rows asked for.
    pub limit: usize,
    /// Halved gate.
    pub deep: bool,
    /// Whole rows within the budget.
    pub full_content: bool,
}

/// Every stage setting the pure pass reads, plus their hash.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TraceConfig {
    /// sha256 (first 16 hex digits) of this object's other fields as JSON.
    pub hash: String,
    /// `rrf` or `rsf`.
    pub fusion: String,
    /// RRF's k.
    pub rrf_k: f64,
    /// Per-arm weights, by arm name.
    pub weights: BTreeMap<String, f64>,
    /// Recall Depth bounds and the per-arm depth used.
    pub depth: TraceDepth,
    /// The gate's settings.
    pub gate: TraceGateConfig,
    /// The preview tier.
    pub shape: TraceShape,
}

/// Recall Depth.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
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
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
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
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TraceShape {
    /// Preview characters.
    pub preview_chars: usize,
    /// Excerpt characters.
    pub excerpt_chars: usize,
    /// `full_content` budget.
    pub full_content_budget_chars: usize,
}

/// The embedder's identity (never a vector).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
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

/// How one table's vector search ran.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
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
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
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
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TraceArm {
    /// Arm name (`vector_near`, `vector_far`, `episode_fts`, `memory_keyword`).
    pub arm: String,
    /// True when the arm returned fewer hits than the depth: a deeper depth adds nothing.
    pub exhausted: bool,
    /// Hits in rank order.
    pub hits: Vec<TraceHit>,
}

/// One hit.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct TraceHit {
    /// The row.
    #[serde(rename = "ref", with = "ref_serde")]
    pub r#ref: Ref,
    /// 0-based rank in the arm.
    pub rank: usize,
    /// The arm's raw score (cosine, `-bm25`, none for keyword rows).
    pub raw: Option<f64>,
}

/// One fused candidate.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TraceFused {
    /// The row.
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
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
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
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
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
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TraceDecision {
    /// The row.
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
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
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
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TraceExclusion {
    /// The row.
    #[serde(rename = "ref", with = "ref_serde")]
    pub r#ref: Ref,
    /// Its fused position.
    pub fused_rank: usize,
    /// Why.
    pub reason: ExclusionReason,
}

/// One pool row: what hydration read (no vector).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PoolRow {
    /// The row.
    #[serde(rename = "ref", with = "ref_serde")]
    pub r#ref: Ref,
    /// `None` when the row had vanished.
    pub row: Option<PoolContent>,
}

/// A hydrated row's fields.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PoolContent {
    /// Content as the agent sees it.
    pub content: String,
    /// `source`.
    pub source: Option<serde_json::Value>,
    /// Timestamp as stored.
    pub timestamp: Option<String>,
    /// `msg_id`.
    pub msg_id: Option<String>,
}

/// A saved recall, enough to replay the pure pass offline.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
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
    /// The response body the engine returned (before any server filter).
    pub response: serde_json::Value,
}

/// Serde for [`Ref`] as `mem:<id>` / `ep:<id>`.
pub(crate) mod ref_serde {
    use serde::{Deserialize, Deserializer, Serializer};

    use crate::recall::Ref;

    pub(crate) fn serialize<S: Serializer>(r: &Ref, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(r)
    }

    pub(crate) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Ref, D::Error> {
        let text = String::deserialize(d)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

/// The wire name of a serde enum value (`"vector_near"`, `"rrf"`, ...).
fn name_of<T: Serialize>(value: &T) -> String {
    serde_json::to_value(value)
        .ok()
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_default()
}

/// The arm of a wire name.
pub fn arm_named(name: &str) -> Option<Arm> {
    Arm::ALL.into_iter().find(|arm| name_of(arm) == name)
}

/// The wire name of an arm.
pub fn arm_name(arm: Arm) -> String {
    name_of(&arm)
}

/// The fusion mode of a wire name.
pub fn fusion_named(name: &str) -> Option<FusionMode> {
    [FusionMode::Rrf, FusionMode::Rsf]
        .into_iter()
        .find(|mode| name_of(mode) == name)
}

fn normalise(query: &str) -> String {
    query
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .to_lowercase()
}

fn sha16(bytes: &[u8]) -> String {
    let digest = Sha256::digest(bytes);
    let mut out = String::with_capacity(16);
    for byte in &digest[..8] {
        let _ = write!(out, "{byte:02x}");
    }
    out
}

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
            ..RecallConfig::default()
        };
        config.validate().map_err(|err| invalid(err.to_string()))?;
        Ok(config)
    }
}

/// The row the pass shows for one stored row (episodes are prefixed `[Episode] `).
pub(crate) fn hydrated(r: Ref, stored: StoredContent) -> Hydrated {
    Hydrated {
        content: match r.kind {
            RefKind::Mem => stored.text,
            RefKind::Ep => format!("[Episode] {}", stored.text),
        },
        source: stored.source,
        timestamp: stored.timestamp,
        msg_id: stored.msg_id,
    }
}

/// Completes a capture inside the recall's read: the rows the pass hydrated (`seen`, as it
/// saw them) plus every other fused candidate, read in `scope` now.
#[allow(clippy::too_many_arguments)]
pub(crate) fn capture(
    engine: &Engine,
    conn: &Connection,
    scope: &Scope,
    query: &RecallQuery,
    config: &RecallConfig,
    gate_input: GateInput,
    stages: &RecallStages,
    seen: Vec<(Ref, Option<Hydrated>)>,
) -> Result<Capture> {
    let started = std::time::Instant::now();
    let known: std::collections::HashMap<Ref, Option<Hydrated>> = seen.into_iter().collect();
    let mut pool = Vec::with_capacity(stages.fusion.len());
    for candidate in &stages.fusion {
        let r = candidate.r#ref;
        let row = match known.get(&r) {
            Some(row) => row.clone(),
            None => crate::recall_engine::read_scoped(conn, scope, r)?.map(|s| hydrated(r, s)),
        };
        pool.push((r, row));
    }
    let target = engine.vector_target();
    Ok(Capture {
        query: query.clone(),
        config: *config,
        gate_input,
        embedder: TraceEmbedder {
            model_id: target.model_id,
            dim: target.dim,
            matches_store: target.embedder_matches,
            vector_arm_ran: stages.arms.iter().any(|l| l.arm.is_vector()),
        },
        pool,
        capture_ms: started.elapsed().as_secs_f64() * 1000.0,
    })
}

/// The trace form of arm lists.
pub fn trace_arms(arms: &[ArmList], depth: usize) -> Vec<TraceArm> {
    arms.iter()
        .map(|list| TraceArm {
            arm: arm_name(list.arm),
            exhausted: list.hits.len() < depth,
            hits: list
                .hits
                .iter()
                .map(|h| TraceHit {
                    r#ref: h.r#ref,
                    rank: h.rank,
                    raw: h.raw,
                })
                .collect(),
        })
        .collect()
}

/// The arm lists back from their trace form.
pub fn arm_lists(arms: &[TraceArm]) -> Result<Vec<ArmList>> {
    arms.iter()
        .map(|a| {
            let arm = arm_named(&a.arm).ok_or_else(|| Error::InvalidInput {
                field: "trace.arms",
                reason: format!("unknown arm {:?}", a.arm),
            })?;
            Ok(ArmList {
                arm,
                hits: a
                    .hits
                    .iter()
                    .map(|h| ArmHit {
                        r#ref: h.r#ref,
                        rank: h.rank,
                        raw: h.raw,
                    })
                    .collect(),
            })
        })
        .collect()
}

/// The fate of every fused candidate under `stages` (excluded ones only).
pub fn exclusions_of(stages: &RecallStages) -> Vec<TraceExclusion> {
    let count_cut: std::collections::HashSet<Ref> =
        stages.order.cut_by_count.iter().copied().collect();
    let vanished: std::collections::HashSet<Ref> = stages.vanished.iter().copied().collect();
    stages
        .fusion
        .iter()
        .enumerate()
        .filter_map(|(fused_rank, candidate)| {
            let r = candidate.r#ref;
            let passed = stages
                .gate
                .decisions
                .iter()
                .find(|d| d.r#ref == r)
                .is_some_and(|d| d.passed);
            let reason = if !passed {
                ExclusionReason::Gate
            } else if count_cut.contains(&r) {
                ExclusionReason::CountCut
            } else if vanished.contains(&r) {
                ExclusionReason::Vanished
            } else {
                return None;
            };
            Some(TraceExclusion {
                r#ref: r,
                fused_rank,
                reason,
            })
        })
        .collect()
}

/// The bounds that acted, in words.
pub fn bounds_of(stages: &RecallStages, index: &[TraceIndex]) -> Vec<String> {
    let mut bounds = Vec::new();
    if stages.cut_by_depth > 0 {
        bounds.push(format!(
            "depth {} cut {} hits",
            stages.depth, stages.cut_by_depth
        ));
    }
    for list in &stages.arms {
        if list.hits.len() >= stages.depth {
            bounds.push(format!(
                "{} filled the depth ({}): deeper lists may hold more",
                arm_name(list.arm),
                stages.depth
            ));
        }
    }
    if !stages.order.cut_by_count.is_empty() {
        bounds.push(format!(
            "limit {} cut {} gated rows",
            stages.order.limit,
            stages.order.cut_by_count.len()
        ));
    }
    for table in index.iter().filter(|t| t.window_cut) {
        bounds.push(format!(
            "scan window cut {} rows to the far list",
            table.table
        ));
    }
    bounds
}

impl RecallResult {
    /// The trace of this recall, when it was run with `trace` (else `None`).
    pub fn trace(&self) -> Option<RecallTrace> {
        let stages = self.stages.as_ref()?;
        let capture = self.capture.as_deref()?;
        Some(RecallTrace::build(self, stages, capture))
    }
}

impl RecallTrace {
    fn build(result: &RecallResult, stages: &RecallStages, capture: &Capture) -> RecallTrace {
        let q = &capture.query;
        let index: Vec<TraceIndex> = result
            .vector
            .tables
            .iter()
            .map(|t| TraceIndex {
                table: name_of(&t.table),
                generation: t.generation,
                tail_rows: t.tail_rows,
                window_cut: t.window_cut,
                prefiltered: t.prefiltered,
            })
            .collect();
        let gated = stages.gate.decisions.iter().filter(|d| d.passed).count();
        let t = result.timings;
        let timing_ms = [
            ("embed", t.embed_ms),
            ("vector", t.vector_ms),
            ("lexical", t.lexical_ms),
            ("gate_input", t.gate_input_ms),
            ("fusion_gate_shape", t.fusion_ms),
            ("hydrate", t.hydrate_ms),
            ("trace_capture", capture.capture_ms),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v))
        .collect();
        RecallTrace {
            format: TRACE_FORMAT.to_owned(),
            trace_version: TRACE_VERSION,
            policy: TracePolicy {
                scoring: SCORING_VERSION.to_owned(),
                process: PROCESS_POLICY.to_owned(),
                engine_version: env!("CARGO_PKG_VERSION").to_owned(),
            },
            query: TraceQuery {
                text: q.query.clone(),
                normalised: normalise(&q.query),
                blank: q.query.trim().is_empty(),
            },
            scope: TraceScope {
                agent_id: q.agent_id.clone(),
                project_id: q.project_id.clone(),
                channel: q.channel.clone(),
            },
            request: TraceRequest {
                limit: q.limit,
                deep: q.deep,
                full_content: q.full_content,
            },
            config: TraceConfig::of(&capture.config),
            embedder: capture.embedder.clone(),
            counts: TraceCounts {
                requested: q.limit,
                effective: result.response.messages.len(),
                per_arm: stages
                    .arms
                    .iter()
                    .map(|l| (arm_name(l.arm), l.hits.len()))
                    .collect(),
                fused: stages.fusion.len(),
                gated,
                cut_by_depth: stages.cut_by_depth,
                cut_by_count: stages.order.cut_by_count.len(),
                vanished: stages.vanished.len(),
                pool: capture.pool.len(),
            },
            arms: trace_arms(&stages.arms, stages.depth),
            fusion: stages
                .fusion
                .iter()
                .enumerate()
                .map(|(fused_rank, c)| TraceFused {
                    r#ref: c.r#ref,
                    fused_rank,
                    score: c.score,
                    cosine: c.cosine,
                    votes: c
                        .votes
                        .iter()
                        .map(|v| TraceVote {
                            arm: arm_name(v.arm),
                            rank: v.rank,
                            raw: v.raw,
                            contribution: v.contribution,
                        })
                        .collect(),
                })
                .collect(),
            gate: TraceGate {
                calibrated: capture.gate_input.calibrated,
                pool: capture.gate_input.pool,
                deep: capture.gate_input.deep,
                threshold: stages.gate.threshold,
                origin: name_of(&stages.gate.origin),
                heuristic_min: stages.gate.heuristic_min,
                gate_fallback: stages.gate.gate_fallback,
                decisions: stages
                    .gate
                    .decisions
                    .iter()
                    .map(|d| TraceDecision {
                        r#ref: d.r#ref,
                        cosine: d.cosine,
                        passed: d.passed,
                        reason: name_of(&d.reason),
                    })
                    .collect(),
            },
            exclusions: exclusions_of(stages),
            bounds: bounds_of(stages, &index),
            index,
            timing_ms,
            advisories: result.advisories.clone(),
            keyword_fallback: result.keyword_fallback,
            pool: capture
                .pool
                .iter()
                .map(|(r, row)| PoolRow {
                    r#ref: *r,
                    row: row.as_ref().map(|h| PoolContent {
                        content: h.content.clone(),
                        source: h.source.clone(),
                        timestamp: h.timestamp.clone(),
                        msg_id: h.msg_id.clone(),
                    }),
                })
                .collect(),
            response: serde_json::to_value(&result.response).unwrap_or_default(),
        }
    }

    /// The gate's input as the pass saw it.
    pub fn gate_input(&self) -> GateInput {
        GateInput {
            calibrated: self.gate.calibrated,
            pool: self.gate.pool,
            deep: self.gate.deep,
        }
    }

    /// The pool as hydration answers: `Some(None)` = vanished, `None` = not captured.
    pub fn pool_map(&self) -> std::collections::HashMap<Ref, Option<Hydrated>> {
        self.pool
            .iter()
            .map(|p| {
                (
                    p.r#ref,
                    p.row.as_ref().map(|c| Hydrated {
                        content: c.content.clone(),
                        source: c.source.clone(),
                        timestamp: c.timestamp.clone(),
                        msg_id: c.msg_id.clone(),
                    }),
                )
            })
            .collect()
    }

    /// Marks rows the server dropped after the engine (`exclude_contents`, `source_id`).
    pub fn mark_filtered(&mut self, refs: &[Ref]) {
        for r in refs {
            let fused_rank = self
                .fusion
                .iter()
                .position(|c| c.r#ref == *r)
                .unwrap_or(usize::MAX);
            self.exclusions.push(TraceExclusion {
                r#ref: *r,
                fused_rank,
                reason: ExclusionReason::Filtered,
            });
        }
        if !refs.is_empty() {
            self.bounds
                .push(format!("server filter dropped {} rows", refs.len()));
        }
    }

    /// Parses a saved trace, refusing another format or version.
    pub fn from_json(text: &str) -> Result<RecallTrace> {
        let trace: RecallTrace = serde_json::from_str(text).map_err(|err| Error::InvalidInput {
            field: "trace",
            reason: err.to_string(),
        })?;
        if trace.format != TRACE_FORMAT || trace.trace_version != TRACE_VERSION {
            return Err(Error::InvalidInput {
                field: "trace",
                reason: format!(
                    "expected {TRACE_FORMAT} version {TRACE_VERSION}, found {:?} version {}",
                    trace.format, trace.trace_version
                ),
            });
        }
        Ok(trace)
    }
}
