//! The recall trace (`trace_version` 2 of cpersona-rs): one recall written down so that it
//! can be read, saved and **re-run offline** by [`crate::trace::replay`] without the store, the
//! index or the embedder. It holds the query as normalised, the scope, the requested and
//! effective counts, every arm's list with ranks and raw scores, every fused candidate with
//! its per-arm contributions, the gate's input and decisions, the fate of every candidate
//! (returned, or why not), the bounds that acted, the index generations, the embedder's
//! identity, a configuration hash, per-stage latency, the rows held after the window, and the
//! *pool*: what a replay needs of every fused candidate's row (its length, source identity,
//! timestamp), so that any replay that keeps more rows can still shape them.
//!
//! It never holds a raw embedding (only cosines and ranks) and never the rows' text: refs,
//! ranks, scores and reasons; the text is fetched with `get_contents`.
//!
//! Scores are JSON numbers: serde_json without `float_roundtrip` may parse a 17-digit raw
//! score back 1 ULP off, which can move a replayed row only when its cosine sits exactly on
//! the gate threshold; the response's 4- and 6-decimal figures parse back exactly.
//!
//! The trace is built after the pure pass from what [`crate::Engine::recall`] captured
//! ([`Capture`]); nothing here changes what recall returns.

use std::fmt::Write as _;

use serde::Serialize;
use sha2::{Digest, Sha256};

use crate::error::{Error, Result};
use crate::recall::stages::candidate::ArmHit;
use crate::recall::stages::confidence::{Confidence, ConfidenceInput, confidence};
use crate::recall::stages::fusion::FusionMode;
use crate::recall::stages::gate::GateInput;
use crate::recall::stages::pipeline::RecallStages;
use crate::recall::stages::shape::Hydrated;
use crate::recall::{Arm, ArmList};
use crate::recall::{RecallResult, SCORING_VERSION};
use crate::refs::Ref;

/// The version of this trace's shape; a replay refuses any other.
pub const TRACE_VERSION: u32 = 2;
/// The `format` tag every trace carries, so a file is recognisable on its own.
pub const TRACE_FORMAT: &str = "cpersona-rs.recall-trace";
/// The recall process a trace describes: the pure pass plus the time cue's plan (re-order,
/// propagation, held seats), which replay re-applies; the loop's stages and its envelope
/// fetch are recorded, not re-run.
pub const PROCESS_POLICY: &str = "cued-pass-v1";

mod cue;
pub mod replay;
mod schema;
pub mod taxonomy;
pub use cue::*;
pub use schema::*;

pub use crate::recall::types::{Capture, TraceCueRequest, TraceEmbedder};

/// The wire name of a serde enum value (`"vector_near"`, `"rrf"`, ...).
pub(crate) fn name_of<T: Serialize>(value: &T) -> String {
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

pub(crate) fn sha16(bytes: &[u8]) -> String {
    let digest = Sha256::digest(bytes);
    let mut out = String::with_capacity(16);
    for byte in &digest[..8] {
        let _ = write!(out, "{byte:02x}");
    }
    out
}

/// A response body without the rows' text: each message loses `content`, `excerpt` and
/// `excerpt_basis`
/// (fetch them with `get_contents`); refs, scores, reasons, lengths and cut flags stay.
pub fn without_text(mut response: serde_json::Value) -> serde_json::Value {
    if let Some(rows) = response.get_mut("messages").and_then(|m| m.as_array_mut()) {
        for row in rows.iter_mut() {
            *row = without_message_text(std::mem::take(row));
        }
    }
    response
}

fn without_message_text(mut message: serde_json::Value) -> serde_json::Value {
    if let Some(object) = message.as_object_mut() {
        object.remove("content");
        object.remove("excerpt");
        object.remove("excerpt_basis");
    }
    message
}

/// The identity fields of a stored `source` (`type`, `id`, `name`); any other field the
/// caller wrote stays out of the trace.
fn source_identity(source: &serde_json::Value) -> serde_json::Value {
    let mut out = serde_json::Map::new();
    for key in ["type", "id", "name", "System"] {
        if let Some(value) = source.get(key) {
            out.insert(key.to_owned(), value.clone());
        }
    }
    serde_json::Value::Object(out)
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
            fusion_weights: stages.weights.clone(),
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
                    confidence_input: capture
                        .confidence
                        .as_ref()
                        .and_then(|(_, inputs)| inputs.get(r).copied()),
                    row: row.as_ref().map(|h| PoolContent {
                        chars: h.content.chars().count(),
                        source: h.source.as_ref().map(source_identity),
                        timestamp: h.timestamp.clone(),
                        msg_id: h.msg_id.clone(),
                    }),
                })
                .collect(),
            confidence_params: capture.confidence.as_ref().map(|(params, _)| *params),
            cue: capture.cue.as_ref().map(TraceCue::of),
            cue_request: capture.cue_request,
            response: without_text(serde_json::to_value(&result.response).unwrap_or_default()),
            held: capture
                .held
                .iter()
                .map(|m| without_message_text(serde_json::to_value(m).unwrap_or_default()))
                .collect(),
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

    /// The confidence a returned row reports in a replay: its saved input with the
    /// replayed candidate's cosine (`None` when the recall reported none).
    pub fn confidence_of(
        &self,
        inputs: &std::collections::HashMap<Ref, ConfidenceInput>,
        candidate: &crate::recall::FusedCandidate,
    ) -> Option<Confidence> {
        let params = self.confidence_params.as_ref()?;
        let input = inputs.get(&candidate.r#ref)?;
        Some(confidence(
            params,
            &ConfidenceInput {
                cosine: candidate.cosine,
                ..*input
            },
        ))
    }

    /// Each pool row's saved confidence input.
    pub fn confidence_inputs(&self) -> std::collections::HashMap<Ref, ConfidenceInput> {
        self.pool
            .iter()
            .filter_map(|p| Some((p.r#ref, p.confidence_input?)))
            .collect()
    }

    /// The pool as hydration answers: `Some(None)` = vanished, `None` = not captured. The
    /// trace holds no text, so each row's content is a placeholder of its length: what the
    /// pass decides by length (the preview tier, the full-content budget) replays exactly,
    /// and a replay's response carries no text ([`without_text`]).
    pub fn pool_map(&self) -> std::collections::HashMap<Ref, Option<Hydrated>> {
        self.pool
            .iter()
            .map(|p| {
                (
                    p.r#ref,
                    p.row.as_ref().map(|c| Hydrated {
                        content: "x".repeat(c.chars),
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
